/*
 * analyze_scope.c - what `weftctl analyze`'s namespace filter leaves out (analyze_scope.h).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/analyze_scope.h"

/* The namespace a resource outside ns is in (a Namespace object is in itself). */
static const char *home_ns(const wf_resource *r)
{
    return r->kind == WF_KIND_NAMESPACE ? r->name : r->ns;
}

static int add_ns(wf_analyze_scope *sc, const char *ns, size_t *cap)
{
    for (size_t i = 0; i < sc->nskipped_ns; i++) {
        if (strcmp(sc->skipped_ns[i].ns, ns) == 0) {
            sc->skipped_ns[i].n++;
            return 0;
        }
    }
    if (sc->nskipped_ns == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        wf_ns_count *n = realloc(sc->skipped_ns, ncap * sizeof *n);
        if (!n)
            return -1;
        sc->skipped_ns = n;
        *cap = ncap;
    }
    sc->skipped_ns[sc->nskipped_ns++] = (wf_ns_count){ns, 1};
    return 0;
}

static int cmp_ns(const void *a, const void *b)
{
    return strcmp(((const wf_ns_count *)a)->ns, ((const wf_ns_count *)b)->ns);
}

int wf_analyze_scope_count(const wf_store *s, const char *ns, wf_analyze_scope *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    for (size_t i = 0; i < wf_store_count(s); i++) {
        const wf_resource *r = wf_store_at(s, i);
        if (r->kind == WF_KIND_OTHER || r->synthetic ||
            strcmp(r->file, WF_ANALYZE_DEFAULTS_NAME) == 0)
            continue;
        if (wf_resource_in_namespace(r, ns)) {
            out->in_scope++;
            continue;
        }
        out->skipped++;
        if (add_ns(out, home_ns(r), &cap) != 0) {
            wf_analyze_scope_free(out);
            return -1;
        }
    }
    if (out->nskipped_ns > 1)
        qsort(out->skipped_ns, out->nskipped_ns, sizeof *out->skipped_ns, cmp_ns);
    return 0;
}

void wf_analyze_scope_free(wf_analyze_scope *sc)
{
    free(sc->skipped_ns);
    memset(sc, 0, sizeof *sc);
}
