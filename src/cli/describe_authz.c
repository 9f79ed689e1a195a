/*
 * describe_authz.c - weft's AuthorizationPolicy lines of `weftctl describe pod` (describe.h;
 * issue 18, operator report B036): the policies that apply to the pod, chosen as weft-pilot
 * chooses them (pilot/authz.h wf_authz_select: the root namespace and the pod's namespace,
 * selector a subset of its labels), with their action, rule count and mode. istioctl prints
 * only the RBAC policy ids of the dump (`RBAC policies: ...`, describe_print.c); these lines go
 * to stderr so that stdout stays istioctl's:
 *
 *   weft: AuthorizationPolicy shop/catalog-readers: ALLOW, 1 rule, enforced
 *   weft: AuthorizationPolicy shop/audit-all: ALLOW, 2 rules, dry run (istio.io/dry-run: only
 *         counted in rbac.istio_dry_run_allow_.shadow_allowed/shadow_denied, never denies)
 *   weft: an ALLOW policy applies: a request no ALLOW rule matches is denied (403,
 *         rbac_access_denied_matched_policy[none])
 *
 * CUSTOM (weft has no ext_authz) says it fails closed. Then the RequestAuthentications that
 * apply (pilot/jwt.h wf_reqauthn_applied), each with its issuers, and what a request without a
 * token meets (Istio: it passes the JWT filter; only an AuthorizationPolicy with
 * requestPrincipals makes a token required):
 *
 *   weft: RequestAuthentication shop/jwt: issuers https://auth.example (a request with an
 *         invalid token gets 401; one without a token passes unless an AuthorizationPolicy
 *         requires requestPrincipals)
 *
 * Nothing is printed when no policy applies.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/describe.h"
#include "model/node.h"
#include "pilot/authz.h"
#include "pilot/jwt.h"

static const char *mode_text(const wf_resource *p, wf_ap_action a)
{
    bool bad = false;
    bool dry = wf_authz_dry_run(p, &bad);
    if (bad)
        return "enforced (its istio.io/dry-run value is not a boolean)";
    if (dry)
        return a == WF_AP_DENY ? "dry run (istio.io/dry-run: only counted in "
                                 "rbac.istio_dry_run_deny_.shadow_allowed/shadow_denied, never "
                                 "denies)"
                               : "dry run (istio.io/dry-run: only counted in "
                                 "rbac.istio_dry_run_allow_.shadow_allowed/shadow_denied, never "
                                 "denies)";
    if (a == WF_AP_CUSTOM)
        return "not supported by weft (no ext_authz): what its rules match is denied";
    if (a == WF_AP_AUDIT)
        return "audit only (never denies)";
    return "enforced";
}

/* The issuers of a RequestAuthentication's jwtRules, ", "-joined into buf. */
static const char *issuers(const wf_resource *r, char *buf, size_t cap)
{
    const wf_node *rules = wf_map_get(r->spec, "jwtRules");
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < wf_seq_len(rules) && off < cap; i++) {
        const char *iss = wf_map_str(wf_seq_at(rules, i), "issuer");
        int k = snprintf(buf + off, cap - off, "%s%s", off ? ", " : "", iss ? iss : "(none)");
        off += k > 0 ? (size_t)k : 0;
    }
    return off ? buf : "(no jwtRules)";
}

static void print_reqauthn(const dsc_ctx *c, const char *ns, const wf_kvs *labels)
{
    const wf_resource **v = NULL;
    size_t n = 0;
    wf_reqauthn_options o = {.ns = ns, .labels = labels, .root_ns = c->istio_ns};
    if (wf_reqauthn_applied(c->store, &o, &v, &n) != 0) {
        fprintf(stderr, "Error: out of memory\n");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char buf[512];
        fprintf(stderr,
                "weft: RequestAuthentication %s/%s: issuers %s (a request with an invalid token "
                "gets 401; one without a token passes unless an AuthorizationPolicy requires "
                "requestPrincipals)\n",
                v[i]->ns, v[i]->name, issuers(v[i], buf, sizeof buf));
    }
    free(v);
}

void dsc_print_authz(const dsc_ctx *c, const char *ns, const wf_kvs *labels)
{
    const wf_resource **v = NULL;
    wf_authz_options o = {.ns = ns, .labels = labels, .root_ns = c->istio_ns};
    long n = wf_authz_select(c->store, &o, &v);
    if (n < 0) {
        fprintf(stderr, "Error: out of memory\n");
        return;
    }
    bool allow = false;
    fflush(c->out);
    for (long i = 0; i < n; i++) {
        wf_ap_action a = wf_ap_action_of(v[i]);
        size_t rules = wf_seq_len(wf_map_get(v[i]->spec, "rules"));
        bool dry = false, bad = false;
        dry = wf_authz_dry_run(v[i], &bad) && !bad;
        allow |= a == WF_AP_ALLOW && !dry;
        fprintf(stderr, "weft: AuthorizationPolicy %s/%s: %s, %zu rule%s, %s\n", v[i]->ns,
                v[i]->name, wf_ap_action_name(a), rules, rules == 1 ? "" : "s", mode_text(v[i], a));
    }
    if (allow)
        fputs("weft: an ALLOW policy applies: a request no ALLOW rule matches is denied (403, "
              "rbac_access_denied_matched_policy[none])\n",
              stderr);
    free(v);
    print_reqauthn(c, ns, labels);
}
