/*
 * kube_expand.c - Kubernetes' $(VAR_NAME) expansion (kube_expand.h).
 */
#include "model/kube_expand.h"

#include <string.h>

#include "core/strbuf.h"

/* The value of NAME (len bytes) in vars, the last setting winning; NULL when unset. */
static const char *lookup(const char *name, size_t len, const char *const *vars, size_t nvars)
{
    for (size_t i = nvars; i-- > 0;)
        if (strncmp(vars[i], name, len) == 0 && vars[i][len] == '=')
            return vars[i] + len + 1;
    return NULL;
}

const char *wf_kube_expand(wf_arena *a, const char *in, const char *const *vars, size_t nvars)
{
    if (!strchr(in, '$'))
        return in;
    wf_strbuf b = WF_STRBUF_INIT;
    const char *p = in;
    while (*p) {
        const char *dollar = strchr(p, '$');
        if (!dollar || !dollar[1]) { /* no operator left, or one that ends the input */
            wf_strbuf_puts(&b, p);
            break;
        }
        wf_strbuf_append(&b, p, (size_t)(dollar - p));
        const char *close = dollar[1] == '(' ? strchr(dollar + 2, ')') : NULL;
        if (dollar[1] == '$') { /* escaped operator */
            wf_strbuf_putc(&b, '$');
            p = dollar + 2;
        } else if (close) { /* a reference: its value, or itself when unresolved */
            const char *v = lookup(dollar + 2, (size_t)(close - dollar - 2), vars, nvars);
            if (v)
                wf_strbuf_puts(&b, v);
            else
                wf_strbuf_append(&b, dollar, (size_t)(close + 1 - dollar));
            p = close + 1;
        } else { /* "$(" without its closer, or "$x": kept, the scan goes on after them */
            wf_strbuf_append(&b, dollar, 2);
            p = dollar + 2;
        }
    }
    const char *out = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(a, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return out;
}
