/*
 * authz.c - which AuthorizationPolicies apply to a proxy and the RBAC filters Istio's authz
 * builder makes of them (see authz.h; one rule's translation is authz_model.c).
 */
#include "pilot/authz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/node_json.h"
#include "pilot/authz_internal.h"
#include "pilot/policy_select.h"

#define ROOT_NS_DEFAULT   "istio-system"
#define TD_DEFAULT        "cluster.local"
#define HTTP_RBAC         "envoy.filters.http.rbac"
#define HTTP_RBAC_TYPE    "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
#define NET_RBAC          "envoy.filters.network.rbac"
#define NET_RBAC_TYPE     "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
#define TCP_STAT_PREFIX   "tcp."
#define DRY_ALLOW         "istio_dry_run_allow_"
#define DRY_DENY          "istio_dry_run_deny_"
#define BAD_CUSTOM_SUFFIX "-deny-due-to-bad-CUSTOM-action"
#define MAX_TDS           64

wf_ap_action wf_ap_action_of(const wf_resource *policy)
{
    const char *a = wf_map_str(policy->spec, "action");
    if (!a || strcmp(a, "ALLOW") == 0)
        return WF_AP_ALLOW;
    if (strcmp(a, "DENY") == 0)
        return WF_AP_DENY;
    if (strcmp(a, "AUDIT") == 0)
        return WF_AP_AUDIT;
    if (strcmp(a, "CUSTOM") == 0)
        return WF_AP_CUSTOM;
    return WF_AP_UNSUPPORTED;
}

const char *wf_ap_action_name(wf_ap_action a)
{
    static const char *const names[] = {"ALLOW", "DENY", "AUDIT", "CUSTOM", "UNSUPPORTED"};
    return a <= WF_AP_UNSUPPORTED ? names[a] : "UNSUPPORTED";
}

bool wf_authz_dry_run(const wf_resource *policy, bool *bad)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    const char *v = wf_kvs_get(&policy->annotations, "istio.io/dry-run");
    *bad = false;
    if (!v)
        return false;
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(v, yes[i]) == 0)
            return true;
        if (strcmp(v, no[i]) == 0)
            return false;
    }
    *bad = true;
    return false;
}

static const char *root_ns(const wf_meshcfg *mesh)
{
    const char *r = mesh ? wf_meshcfg_root_ns(mesh) : NULL;
    return r && *r ? r : ROOT_NS_DEFAULT;
}

static void note(const wf_authz_options *o, wf_authz_level lvl, const wf_resource *p,
                 const char *field, const wf_node *at, const char *fmt, const char *a,
                 const char *b)
{
    char msg[2560];
    if (!o->note)
        return;
    snprintf(msg, sizeof msg, fmt, a, b ? b : "");
    const wf_authz_note n = {lvl, p, field, at, msg};
    o->note(o->arg, &n);
}

/* The field and node of spec.rules[i]. */
static const wf_node *rule_field(const wf_resource *p, size_t i, char *field, size_t cap)
{
    snprintf(field, cap, "spec.rules[%zu]", i);
    const wf_node *r = wf_seq_at(wf_map_get(p->spec, "rules"), i);
    return r ? r : wf_map_get(p->spec, "rules");
}

static const char *target_field(const wf_resource *p)
{
    return wf_map_get(p->spec, "targetRefs") ? "spec.targetRefs" : "spec.targetRef";
}

/* ---------- selection ---------- */

long wf_authz_select(const wf_store *store, const wf_authz_options *o, const wf_resource ***out)
{
    *out = NULL;
    if (!store || !o)
        return -1;
    const char *root = o->root_ns && *o->root_ns ? o->root_ns : root_ns(o->mesh);
    size_t n = 0;
    if (wf_policy_select(store, WF_KIND_AUTHORIZATIONPOLICY, o->ns, o->labels, root, true, out,
                         &n) != 0)
        return -1;
    return (long)n;
}

/* ---------- the builder ---------- */

typedef struct tds {
    const char *v[MAX_TDS];
    size_t n;
} tds;

/* Istio's trust domain bundle: the mesh's trust domain, then its aliases. */
static void bundle(const wf_meshcfg *mesh, tds *t)
{
    const char *td = mesh ? wf_meshcfg_str(mesh, "trustDomain") : NULL;
    t->v[0] = td && *td ? td : TD_DEFAULT;
    t->n = 1;
    const wf_node *al = mesh ? wf_meshcfg_get(mesh, "trustDomainAliases") : NULL;
    for (size_t i = 0; i < wf_seq_len(al) && t->n < MAX_TDS; i++) {
        const char *s = wf_node_str(wf_seq_at(al, i));
        if (s)
            t->v[t->n++] = s;
    }
}

typedef struct drop_ctx {
    const wf_authz_options *o;
    const wf_resource *policy;
    const char *name;
    bool for_tcp;
    size_t rule;
} drop_ctx;

static void on_drop(void *arg, const char *msg)
{
    drop_ctx *d = arg;
    /* HTTP-only fields on a TCP chain are Istio's design for DENY/AUDIT (debug there); other
     * values that do not translate are a warning. */
    bool http_only = strstr(msg, "is HTTP only") != NULL;
    char field[48];
    const wf_node *at = rule_field(d->policy, d->rule, field, sizeof field);
    note(d->o, d->for_tcp && http_only ? WF_AUTHZ_NOTE_DEBUG : WF_AUTHZ_NOTE_WARNING, d->policy,
         field, at, "%s: value left out of the rule (it matches more): %s", d->name, msg);
}

typedef struct build {
    const wf_authz_options *o;
    const tds *t;
    bool for_tcp;
    wf_rbac_action action;
    const char *provider; /* CUSTOM: the provider of the filter being built */
} build;

static int policy_name(char *buf, size_t cap, const build *b, const wf_resource *p, size_t i)
{
    int n;
    if (b->provider)
        n = snprintf(buf, cap, "istio-ext-authz-%s-ns[%s]-policy[%s]-rule[%zu]%s", b->provider,
                     p->ns, p->name, i, BAD_CUSTOM_SUFFIX);
    else
        n = snprintf(buf, cap, "ns[%s]-policy[%s]-rule[%zu]", p->ns, p->name, i);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The rules of one policy into policies (an RBAC "policies" map). */
static int add_policy(const build *b, const wf_resource *p, json_t *policies)
{
    char name[1024], msg[512], field[48];
    const wf_node *rules = wf_map_get(p->spec, "rules");
    const wf_authz_options *o = b->o;
    size_t n = wf_seq_len(rules);
    for (size_t i = 0; i < n; i++) {
        const wf_node *rule = wf_seq_at(rules, i);
        if (policy_name(name, sizeof name, b, p, i) != 0)
            return -1;
        const wf_node *at = rule_field(p, i, field, sizeof field);
        if (!rule || rule->type == WF_NODE_NULL) {
            note(o, WF_AUTHZ_NOTE_ERROR, p, field, at, "skipped nil rule %s%s", name, NULL);
            continue;
        }
        drop_ctx d = {o, p, name, b->for_tcp, i};
        wf_authz_gen g = {.policy_ns = p->ns,
                          .for_tcp = b->for_tcp,
                          .action = b->action,
                          .tds = b->t->v,
                          .ntds = b->t->n,
                          .drop = on_drop,
                          .arg = &d};
        json_t *pol;
        int rc = wf_authz_rule_policy(rule, &g, &pol, msg, sizeof msg);
        if (rc == WF_AUTHZ_RULE_OOM)
            return -1;
        if (rc == WF_AUTHZ_RULE_INVALID) {
            note(o, WF_AUTHZ_NOTE_ERROR, p, field, at, "skipped invalid rule %s: %s", name, msg);
            continue;
        }
        if (rc == WF_AUTHZ_RULE_SKIPPED) {
            /* HTTP-only fields on a TCP chain are Istio's design (debug); anything else is an
             * error wherever it happens */
            bool tcp_only = b->for_tcp && strstr(msg, "is HTTP only");
            note(o, tcp_only ? WF_AUTHZ_NOTE_DEBUG : WF_AUTHZ_NOTE_ERROR, p, field, at,
                 tcp_only ? "skipped rule %s on TCP filter chain: %s"
                          : "skipped rule %s (it can never match): %s",
                 name, msg);
            continue;
        }
        if (json_object_set_new(policies, name, pol) != 0)
            return -1;
    }
    if (n == 0) {
        if (policy_name(name, sizeof name, b, p, 0) != 0 ||
            json_object_set_new(policies, name, wf_authz_policy_never()) != 0)
            return -1;
    }
    return 0;
}

static const char *action_str(wf_rbac_action a)
{
    return a == WF_RBAC_DENY ? "DENY" : a == WF_RBAC_LOG ? "LOG" : "ALLOW";
}

/* {"action": A, "policies": {...}} over the policies (dry_run selects which). */
static json_t *rbac_rules(const build *b, const wf_resource *const *ps, size_t n, bool dry_run,
                          bool *any)
{
    json_t *pol = json_object();
    *any = false;
    for (size_t i = 0; pol && i < n; i++) {
        bool bad, dr = wf_authz_dry_run(ps[i], &bad);
        if (dr != dry_run)
            continue;
        *any = true;
        if (add_policy(b, ps[i], pol) != 0) {
            json_decref(pol);
            return NULL;
        }
    }
    return pol ? json_pack("{s:s,s:o}", "action", action_str(b->action), "policies", pol) : NULL;
}

/* One RBAC filter for the policies of one action (Istio's build + buildHTTP/buildTCP). */
static json_t *rbac_filter(const build *b, const wf_resource *const *ps, size_t n)
{
    bool has_rules, has_shadow;
    json_t *rules = rbac_rules(b, ps, n, false, &has_rules);
    json_t *shadow = rbac_rules(b, ps, n, true, &has_shadow);
    json_t *tc = json_pack("{s:s}", "@type", b->for_tcp ? NET_RBAC_TYPE : HTTP_RBAC_TYPE);
    int err = !rules || !shadow || !tc;
    if (!err && has_rules)
        err |= json_object_set(tc, "rules", rules);
    if (!err && b->for_tcp)
        err |= json_object_set_new(tc, "stat_prefix", json_string(TCP_STAT_PREFIX));
    if (!err && has_shadow)
        err |= json_object_set(tc, "shadow_rules", shadow);
    if (!err && !b->provider) {
        const char *sp = !has_shadow                 ? DRY_ALLOW
                         : b->action == WF_RBAC_DENY ? DRY_DENY
                         : b->action == WF_RBAC_LOG  ? NULL
                                                     : DRY_ALLOW;
        if (sp)
            err |= json_object_set_new(tc, "shadow_rules_stat_prefix", json_string(sp));
    } else if (!err && has_shadow) {
        err |= json_object_set_new(tc, "shadow_rules_stat_prefix", json_string(DRY_DENY));
    }
    json_decref(rules);
    json_decref(shadow);
    json_t *f =
        err ? NULL
            : json_pack("{s:s,s:o}", "name", b->for_tcp ? NET_RBAC : HTTP_RBAC, "typed_config", tc);
    if (err)
        json_decref(tc);
    return f;
}

static int cmp_provider(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *provider_of(const wf_resource *p)
{
    const char *s = wf_node_str(wf_node_path(p->spec, "provider.name"));
    return s ? s : "";
}

/* CUSTOM: one fail-closed DENY filter per provider, providers sorted by name. */
static int custom_filters(const wf_authz_options *o, const tds *t, bool for_tcp,
                          const wf_resource *const *ps, size_t n, json_t *out)
{
    const char **prov = calloc(n ? n : 1, sizeof *prov);
    const wf_resource **mine = calloc(n ? n : 1, sizeof *mine);
    size_t np = 0;
    int rc = prov && mine ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *pv = provider_of(ps[i]);
        bool seen = false;
        for (size_t k = 0; k < np; k++)
            seen |= strcmp(prov[k], pv) == 0;
        if (!seen)
            prov[np++] = pv;
        note(o, WF_AUTHZ_NOTE_WARNING, ps[i], "spec.action", wf_map_get(ps[i]->spec, "action"),
             "%s: action CUSTOM (provider \"%s\") is not supported by weft (no ext_authz "
             "filter): requests its rules match are denied (fail closed, as Istio does for an "
             "unusable provider)",
             ps[i]->name, pv);
    }
    if (rc == 0)
        qsort(prov, np, sizeof *prov, cmp_provider);
    for (size_t k = 0; rc == 0 && k < np; k++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(provider_of(ps[i]), prov[k]) == 0)
                mine[m++] = ps[i];
        build b = {o, t, for_tcp, WF_RBAC_DENY, prov[k]};
        rc = json_array_append_new(out, rbac_filter(&b, mine, m));
    }
    free(prov);
    free(mine);
    return rc;
}

static json_t *filters(const wf_store *store, const wf_authz_options *o, bool for_tcp)
{
    if (!store || !o)
        return NULL;
    const wf_resource **sel;
    long n = wf_authz_select(store, o, &sel);
    if (n < 0)
        return NULL;
    json_t *out = json_array();
    const wf_resource **by[WF_AP_UNSUPPORTED];
    size_t cnt[WF_AP_UNSUPPORTED] = {0};
    tds t;
    bundle(o->mesh, &t);
    int rc = out ? 0 : -1;
    for (int a = 0; a < WF_AP_UNSUPPORTED; a++) {
        by[a] = calloc(n ? (size_t)n : 1, sizeof *by[a]);
        if (!by[a])
            rc = -1;
    }
    for (long i = 0; rc == 0 && i < n; i++) {
        wf_ap_action a = wf_ap_action_of(sel[i]);
        if (a == WF_AP_UNSUPPORTED) {
            note(o, WF_AUTHZ_NOTE_ERROR, sel[i], "spec.action", wf_map_get(sel[i]->spec, "action"),
                 "ignored authorization policy %s with unsupported action: %s", sel[i]->name,
                 wf_map_str(sel[i]->spec, "action"));
            continue;
        }
        by[a][cnt[a]++] = sel[i];
    }
    if (rc == 0 && cnt[WF_AP_CUSTOM])
        rc = custom_filters(o, &t, for_tcp, by[WF_AP_CUSTOM], cnt[WF_AP_CUSTOM], out);
    static const struct {
        wf_ap_action a;
        wf_rbac_action r;
    } order[] = {
        {WF_AP_AUDIT, WF_RBAC_LOG}, {WF_AP_DENY, WF_RBAC_DENY}, {WF_AP_ALLOW, WF_RBAC_ALLOW}};
    for (size_t k = 0; rc == 0 && k < 3; k++) {
        if (!cnt[order[k].a])
            continue;
        build b = {o, &t, for_tcp, order[k].r, NULL};
        rc = json_array_append_new(out, rbac_filter(&b, by[order[k].a], cnt[order[k].a]));
    }
    for (int a = 0; a < WF_AP_UNSUPPORTED; a++)
        free(by[a]);
    free(sel);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *wf_authz_http_filters(const wf_store *store, const wf_authz_options *o)
{
    return filters(store, o, false);
}

json_t *wf_authz_tcp_filters(const wf_store *store, const wf_authz_options *o)
{
    return filters(store, o, true);
}

/* ---------- problems independent of the proxy ---------- */

typedef struct counting {
    wf_authz_note_cb cb;
    void *arg;
    long n;
} counting;

static void count_note(void *arg, const wf_authz_note *n)
{
    counting *c = arg;
    if (n->level == WF_AUTHZ_NOTE_DEBUG)
        return;
    c->n++;
    if (c->cb)
        c->cb(c->arg, n);
}

long wf_authz_policy_problems(const wf_resource *policy, const wf_meshcfg *mesh,
                              wf_authz_note_cb cb, void *arg)
{
    counting c = {cb, arg, 0};
    wf_authz_options o = {.mesh = mesh, .note = count_note, .arg = &c};
    bool bad;
    wf_authz_dry_run(policy, &bad);
    if (bad)
        note(&o, WF_AUTHZ_NOTE_ERROR, policy, "metadata.annotations[istio.io/dry-run]",
             wf_map_get(wf_map_get(policy->metadata, "annotations"), "istio.io/dry-run"),
             "failed to parse the value of istio.io/dry-run: %s%s (the policy is enforced)",
             wf_kvs_get(&policy->annotations, "istio.io/dry-run"), NULL);
    if (policy->t.policy && policy->t.policy->target_refs)
        note(&o, WF_AUTHZ_NOTE_WARNING, policy, target_field(policy), policy->t.policy->target_refs,
             "%s: targetRef(s) select Gateway API gateways and waypoints, which weft does not "
             "run: the policy applies to no proxy%s",
             policy->name, NULL);
    wf_ap_action a = wf_ap_action_of(policy);
    if (a == WF_AP_UNSUPPORTED) {
        note(&o, WF_AUTHZ_NOTE_ERROR, policy, "spec.action", wf_map_get(policy->spec, "action"),
             "ignored authorization policy %s with unsupported action: %s", policy->name,
             wf_map_str(policy->spec, "action"));
        return c.n;
    }
    tds t;
    bundle(mesh, &t);
    json_t *out = json_array();
    if (!out)
        return -1;
    int rc;
    if (a == WF_AP_CUSTOM) {
        const wf_resource *one[1] = {policy};
        rc = custom_filters(&o, &t, false, one, 1, out);
    } else {
        wf_rbac_action r = a == WF_AP_DENY    ? WF_RBAC_DENY
                           : a == WF_AP_AUDIT ? WF_RBAC_LOG
                                              : WF_RBAC_ALLOW;
        build b = {&o, &t, false, r, NULL};
        json_t *pol = json_object();
        rc = pol ? add_policy(&b, policy, pol) : -1;
        json_decref(pol);
    }
    json_decref(out);
    return rc == 0 ? c.n : -1;
}

/* ---------- /debug/authorizationz ---------- */

static json_t *kvs_json(const wf_kvs *kv)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < kv->n; i++)
        if (json_object_set_new(o, kv->items[i].key, json_string(kv->items[i].value)) != 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

json_t *wf_authz_debug(const wf_store *store, const wf_meshcfg *mesh)
{
    if (!store)
        return NULL;
    size_t n;
    const wf_resource *const *v = wf_store_kind(store, WF_KIND_AUTHORIZATIONPOLICY, &n);
    json_t *by_ns = json_object();
    for (size_t i = 0; by_ns && i < n; i++) {
        json_t *list = json_object_get(by_ns, v[i]->ns);
        if (!list && json_object_set_new(by_ns, v[i]->ns, list = json_array()) != 0)
            list = NULL;
        json_t *spec = v[i]->spec ? wf_node_to_json(v[i]->spec) : json_object();
        json_t *e = list && spec
                        ? json_pack("{s:s,s:s,s:o,s:o}", "name", v[i]->name, "namespace", v[i]->ns,
                                    "annotations", kvs_json(&v[i]->annotations), "spec", spec)
                        : (json_decref(spec), NULL);
        if (!e || json_array_append_new(list, e) != 0) {
            json_decref(by_ns);
            by_ns = NULL;
        }
    }
    return by_ns ? json_pack("{s:{s:o,s:s}}", "authorization_policies", "namespace_to_policies",
                             by_ns, "root_namespace", root_ns(mesh))
                 : NULL;
}
