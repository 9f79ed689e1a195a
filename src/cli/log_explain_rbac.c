/*
 * log_explain_rbac.c - the AuthorizationPolicy behind an RBAC denial (log_explain_rbac.h).
 */
#include <string.h>

#include "cli/log_explain_rbac.h"

#define BAD_CUSTOM "-deny-due-to-bad-CUSTOM-action"

/* The actions under which the table lists name, "DENY" or "DENY, LOG"; "" when absent. */
static void actions_of(const wf_authz_table *t, const char *name, wf_strbuf *out)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (strcmp(t->rows[i].name, name) == 0)
            wf_strbuf_printf(out, "%s%s", out->len ? ", " : "",
                             wf_authz_action_name(t->rows[i].action));
}

static void describe_id(const char *id, size_t len, const wf_authz_table *t, const char *pod,
                        wf_strbuf *out)
{
    wf_strbuf name = WF_STRBUF_INIT, rule = WF_STRBUF_INIT, acts = WF_STRBUF_INIT;
    wf_strbuf idb = WF_STRBUF_INIT;
    wf_strbuf_append(&idb, id, len);
    const char *s = wf_strbuf_cstr(&idb);
    if (wf_authz_parse_policy_id(s, &name, &rule) != 0) {
        wf_strbuf_printf(out,
                         "policy id \"%s\" is not one Istio generates (an EnvoyFilter or a "
                         "hand-written RBAC filter?)",
                         s);
    } else {
        const char *n = wf_strbuf_cstr(&name), *dot = strrchr(n, '.');
        wf_strbuf_printf(out,
                         "AuthorizationPolicy %.*s in namespace %s, rule %s (its spec.rules[%s])",
                         (int)(dot - n), n, dot + 1, wf_strbuf_cstr(&rule), wf_strbuf_cstr(&rule));
        if (strstr(s, BAD_CUSTOM))
            wf_strbuf_puts(out, "\na CUSTOM policy whose extension provider cannot be used: the "
                                "rule denies (fail closed) instead of asking the external "
                                "authorizer; check the provider in MeshConfig extensionProviders");
        else if (strncmp(s, "istio-ext-authz-", 16) == 0)
            wf_strbuf_puts(out, "\na CUSTOM policy: the external authorizer denied the request");
        actions_of(t, n, &acts);
        if (t && acts.len)
            wf_strbuf_printf(out, "\n%s enforces it as %s", pod ? pod : "the proxy",
                             wf_strbuf_cstr(&acts));
        else if (t)
            wf_strbuf_printf(out, "\n%s no longer has this policy (changed since the request?)",
                             pod ? pod : "the proxy");
    }
    wf_strbuf_free(&name);
    wf_strbuf_free(&rule);
    wf_strbuf_free(&acts);
    wf_strbuf_free(&idb);
}

static void describe_none(const wf_authz_table *t, const char *pod, wf_strbuf *out)
{
    wf_strbuf_puts(out, "no policy denied it: ALLOW policies apply to this workload and no rule "
                        "of them matched the request, so it was denied by default (once any "
                        "ALLOW policy applies, everything it does not allow is denied)");
    if (!t) {
        wf_strbuf_puts(out, "\nlist the ALLOW policies with `weftctl x authz check <pod>` (or "
                            "pass --pod to log explain)");
        return;
    }
    size_t n = 0;
    wf_strbuf_printf(out, "\nALLOW policies on %s:", pod ? pod : "the proxy");
    for (size_t i = 0; i < t->n; i++) {
        const wf_authz_row *r = &t->rows[i];
        if (r->action != WF_AUTHZ_ALLOW || strcmp(r->name, WF_AUTHZ_ANONYMOUS) == 0)
            continue;
        const char *dot = strrchr(r->name, '.');
        if (dot)
            wf_strbuf_printf(out, "%s %s/%.*s (%zu rule%s)", n ? "," : "", dot + 1,
                             (int)(dot - r->name), r->name, r->rules, r->rules == 1 ? "" : "s");
        else
            wf_strbuf_printf(out, "%s \"%s\"", n ? "," : "", r->name);
        n++;
    }
    if (!n)
        wf_strbuf_puts(out, " none now (the policy was removed or changed since the request?)");
}

int wf_lx_rbac_describe(const char *details, const wf_authz_table *t, const char *pod,
                        wf_strbuf *out)
{
    size_t pl = strlen(WF_LX_RBAC_DETAILS);
    if (!details || strncmp(details, WF_LX_RBAC_DETAILS, pl) != 0)
        return 0;
    const char *id = details + pl;
    size_t len = strlen(id);
    if (len && id[len - 1] == ']')
        len--;
    if (len == 4 && strncmp(id, "none", 4) == 0)
        describe_none(t, pod, out);
    else
        describe_id(id, len, t, pod, out);
    return wf_strbuf_failed(out) ? -1 : 1;
}
