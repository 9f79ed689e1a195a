/*
 * policy_select.c - security policies that apply to a workload (policy_select.h).
 */
#include "pilot/policy_select.h"

#include <stdlib.h>
#include <string.h>

bool wf_policy_selects(const wf_resource *r, const wf_kvs *labels)
{
    static const wf_kvs none = {0};
    const wf_policy *p = r->t.policy;
    if (!p)
        return true;
    if (p->target_refs)
        return false; /* Gateway API gateways and waypoints only */
    if (!p->has_selector || p->selector.n == 0)
        return true;
    return wf_kvs_subset(&p->selector, labels ? labels : &none);
}

int wf_policy_select(const wf_store *s, wf_kind kind, const char *ns, const wf_kvs *labels,
                     const char *root_ns, bool root_first, const wf_resource ***out, size_t *n)
{
    const char *root = root_ns && *root_ns ? root_ns : "istio-system";
    const char *own = ns && *ns && strcmp(ns, root) != 0 ? ns : NULL;
    const char *nss[2] = {root_first ? root : own, root_first ? own : root};
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    for (int k = 0; k < 2; k++) {
        size_t m = 0;
        const wf_resource *const *v = nss[k] ? wf_store_kind_ns(s, kind, nss[k], &m) : NULL;
        for (size_t i = 0; i < m; i++) {
            if (!wf_policy_selects(v[i], labels))
                continue;
            if (*n == cap) {
                cap = cap ? 2 * cap : 8;
                const wf_resource **nv = realloc(*out, cap * sizeof *nv);
                if (!nv) {
                    free(*out);
                    *out = NULL;
                    *n = 0;
                    return -1;
                }
                *out = nv;
            }
            (*out)[(*n)++] = v[i];
        }
    }
    return 0;
}
