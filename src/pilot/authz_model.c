/*
 * authz_model.c - one AuthorizationPolicy rule to one Envoy RBAC Policy, as Istio's
 * pilot/pkg/security/authz/model/model.go and trustdomain/bundle.go (see authz_internal.h;
 * the per-value generators are authz_gen.c).
 */
#include "model/node_json.h"
#include "pilot/authz_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLUSTER_LOCAL "cluster.local"

/* ---------- conditions to permissions / principals (model.go) ---------- */

static json_t *wrap_set(bool perm, json_t *list)
{
    return json_pack("{s:{s:o}}", perm ? "or_rules" : "or_ids", perm ? "rules" : "ids", list);
}

static json_t *wrap_not(bool perm, json_t *x)
{
    return x ? json_pack("{s:o}", perm ? "not_rule" : "not_id", x) : NULL;
}

/* A value could not be generated: the whole rule for ALLOW, else only the value (reported). */
static int on_error(const wf_authz_gen *g, char *msg)
{
    if (g->action == WF_RBAC_ALLOW)
        return WF_AZ_ERR;
    if (g->drop)
        g->drop(g->arg, msg);
    return WF_AZ_OK;
}

/* One side (values or notValues) of a condition, appended to and (NOT-wrapped for negative). */
static int cond_side(const wf_authz_cond *c, json_t *vals, bool negative, const wf_authz_gen *g,
                     json_t *and, char *msg, size_t cap)
{
    bool perm = wf_authz_kind_permission(c->g);
    if (!json_array_size(vals))
        return WF_AZ_OK;
    json_t *x = NULL;
    if (wf_authz_kind_extended(c->g)) {
        int rc = wf_authz_gen_ext(c, vals, g, &x, msg, cap);
        if (rc != WF_AZ_OK)
            return rc == WF_AZ_OOM ? WF_AZ_OOM : on_error(g, msg);
    } else {
        json_t * or = json_array();
        size_t i;
        json_t *v;
        if (! or)
            return WF_AZ_OOM;
        json_array_foreach(vals, i, v)
        {
            json_t *one = NULL;
            int rc = wf_authz_gen_one(c, json_string_value(v), g, &one, msg, cap);
            if (rc == WF_AZ_OK)
                rc = json_array_append_new(or, one) == 0 ? WF_AZ_OK : WF_AZ_OOM;
            else if (rc == WF_AZ_ERR)
                rc = on_error(g, msg);
            if (rc != WF_AZ_OK) {
                json_decref(or);
                return rc;
            }
        }
        if (!json_array_size(or)) {
            json_decref(or);
            return WF_AZ_OK;
        }
        x = wrap_set(perm, or);
    }
    if (negative)
        x = wrap_not(perm, x);
    return x && json_array_append_new(and, x) == 0 ? WF_AZ_OK : WF_AZ_OOM;
}

/* and_rules / and_ids over conds (any when empty). */
static int generate(wf_authz_cond *const *cs, size_t n, bool perm, const wf_authz_gen *g,
                    json_t **out, char *msg, size_t cap)
{
    json_t *and = json_array();
    if (!and)
        return WF_AZ_OOM;
    for (size_t i = 0; i < n; i++) {
        int rc = cond_side(cs[i], cs[i]->values, false, g, and, msg, cap);
        if (rc == WF_AZ_OK)
            rc = cond_side(cs[i], cs[i]->not_values, true, g, and, msg, cap);
        if (rc != WF_AZ_OK) {
            json_decref(and);
            return rc;
        }
    }
    if (!json_array_size(and) && json_array_append_new(and, json_pack("{s:b}", "any", 1)) != 0) {
        json_decref(and);
        return WF_AZ_OOM;
    }
    *out = json_pack("{s:{s:o}}", perm ? "and_rules" : "and_ids", perm ? "rules" : "ids", and);
    return *out ? WF_AZ_OK : WF_AZ_OOM;
}

/* ---------- trust domains (trustdomain/bundle.go) ---------- */

static bool suffix_match(const char *a, const char *pattern)
{
    if (pattern[0] != '*')
        return false;
    size_t an = strlen(a), pn = strlen(pattern + 1);
    return an >= pn && strcmp(a + an - pn, pattern + 1) == 0;
}

/* The principal's trust domain when it has Istio's 5-part form and is not "*". */
static bool enforced_td(const char *p, char *td, size_t cap)
{
    int slashes = 0;
    for (const char *c = p; *c; c++)
        slashes += *c == '/';
    const char *s = strchr(p, '/');
    if (slashes != 4 || !s || (size_t)(s - p) >= cap)
        return false;
    memcpy(td, p, (size_t)(s - p));
    td[s - p] = '\0';
    return strcmp(td, "*") != 0;
}

static bool has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

static int append_unique(json_t *arr, const char *s)
{
    return has_string(arr, s) ? 0 : json_array_append_new(arr, json_string(s));
}

/* ReplaceTrustDomainAliases. New array, NULL on out of memory. */
static json_t *replace_tds(json_t *in, const wf_authz_gen *g)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(in, i, v)
    {
        const char *p = json_string_value(v);
        char td[256];
        bool known = false;
        if (enforced_td(p, td, sizeof td)) {
            for (size_t k = 0; k < g->ntds; k++)
                known |= strcmp(td, g->tds[k]) == 0 || suffix_match(g->tds[k], td);
            known |= strcmp(td, CLUSTER_LOCAL) == 0;
        }
        if (!known) {
            if (!out || json_array_append(out, v) != 0)
                goto oom;
            continue;
        }
        json_t *mine = json_array();
        const char *rest = strchr(p, '/');
        for (size_t k = 0; mine && k < g->ntds; k++) {
            char *np = malloc(strlen(g->tds[k]) + strlen(rest) + 1);
            if (!np) {
                json_decref(mine);
                goto oom;
            }
            if (suffix_match(g->tds[k], td))
                strcpy(np, p);
            else
                sprintf(np, "%s%s", g->tds[k], rest);
            int rc = append_unique(mine, np);
            free(np);
            if (rc != 0) {
                json_decref(mine);
                goto oom;
            }
        }
        int rc = out && mine ? json_array_extend(out, mine) : -1;
        json_decref(mine);
        if (rc != 0)
            goto oom;
    }
    return out;
oom:
    json_decref(out);
    return NULL;
}

/* ExpandTrustDomainAliases. New array, NULL on out of memory. */
static json_t *expand_tds(json_t *in, const wf_authz_gen *g)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(in, i, v)
    {
        bool known = false;
        for (size_t k = 0; k < g->ntds; k++)
            known |= strcmp(json_string_value(v), g->tds[k]) == 0;
        for (size_t k = 0; out && k < (known ? g->ntds : 1); k++)
            if (append_unique(out, known ? g->tds[k] : json_string_value(v)) != 0) {
                json_decref(out);
                out = NULL;
            }
    }
    return out;
}

static int migrate(wf_authz_cond *c, const wf_authz_gen *g)
{
    if (c->g != WF_AZ_SRC_PRINCIPAL && c->g != WF_AZ_SRC_TD)
        return 0;
    json_t *(*f)(json_t *, const wf_authz_gen *) = c->g == WF_AZ_SRC_TD ? expand_tds : replace_tds;
    json_t *a = f(c->values, g), *b = f(c->not_values, g);
    if (!a || !b) {
        json_decref(a);
        json_decref(b);
        return -1;
    }
    json_decref(c->values);
    json_decref(c->not_values);
    c->values = a;
    c->not_values = b;
    return 0;
}

/* ---------- the rule (model.go New) ---------- */

typedef struct conds {
    wf_authz_cond *v;
    size_t n, cap;
} conds;

static void conds_free(conds *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        json_decref(cs->v[i].values);
        json_decref(cs->v[i].not_values);
    }
    free(cs->v);
}

/* Adds a condition when it has values or notValues (Istio's appendLast / insertFront skip empty
 * ones). Returns its index, -2 when empty, -1 on out of memory. */
static long add(conds *cs, wf_authz_kind g, const char *key, const wf_node *vals,
                const wf_node *nvals, const wf_authz_gen *ctx)
{
    if (!wf_seq_len(vals) && !wf_seq_len(nvals))
        return -2;
    if (cs->n == cs->cap) {
        size_t nc = cs->cap ? 2 * cs->cap : 16;
        wf_authz_cond *nv = realloc(cs->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        cs->v = nv;
        cs->cap = nc;
    }
    wf_authz_cond *c = &cs->v[cs->n];
    *c = (wf_authz_cond){.g = g,
                         .key = key,
                         .values = wf_node_json_strings(vals),
                         .not_values = wf_node_json_strings(nvals)};
    if (!c->values || !c->not_values || migrate(c, ctx) != 0) {
        json_decref(c->values);
        json_decref(c->not_values);
        return -1;
    }
    return (long)cs->n++;
}

static bool when_kind(const char *k, wf_authz_kind *g)
{
    static const struct {
        const char *key;
        wf_authz_kind g;
    } exact[] = {
        {"destination.ip", WF_AZ_DEST_IP},
        {"destination.port", WF_AZ_DEST_PORT},
        {"connection.sni", WF_AZ_SNI},
        {"source.ip", WF_AZ_SRC_IP},
        {"remote.ip", WF_AZ_REMOTE_IP},
        {"source.namespace", WF_AZ_SRC_NS},
        {"source.serviceAccount", WF_AZ_SRC_SA},
        {"source.principal", WF_AZ_SRC_PRINCIPAL},
        {"source.trustDomain", WF_AZ_SRC_TD},
        {"request.auth.principal", WF_AZ_REQ_PRINCIPAL},
        {"request.auth.audiences", WF_AZ_REQ_AUD},
        {"request.auth.presenter", WF_AZ_REQ_PRESENTER},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(k, exact[i].key) == 0) {
            *g = exact[i].g;
            return true;
        }
    if (strncmp(k, "experimental.envoy.filters.", 27) == 0)
        *g = WF_AZ_ENVOY_FILTER;
    else if (strncmp(k, "request.headers", 15) == 0)
        *g = WF_AZ_REQ_HEADER;
    else if (strncmp(k, "request.auth.claims", 19) == 0)
        *g = WF_AZ_REQ_CLAIMS;
    else
        return false;
    return true;
}

/* The source fields in Istio's final order (insertFront reversed). */
static const struct {
    const char *field, *not_field;
    wf_authz_kind g;
    const char *key;
} source_fields[] = {
    {"trustDomains", "notTrustDomains", WF_AZ_SRC_TD, "source.trustDomain"},
    {"principals", "notPrincipals", WF_AZ_SRC_PRINCIPAL, "source.principal"},
    {"requestPrincipals", "notRequestPrincipals", WF_AZ_REQ_PRINCIPAL, "request.auth.principal"},
    {"serviceAccounts", "notServiceAccounts", WF_AZ_SRC_SA, "source.serviceAccount"},
    {"namespaces", "notNamespaces", WF_AZ_SRC_NS, "source.namespace"},
    {"remoteIpBlocks", "notRemoteIpBlocks", WF_AZ_REMOTE_IP, "remote.ip"},
    {"ipBlocks", "notIpBlocks", WF_AZ_SRC_IP, "source.ip"},
};

static const struct {
    const char *field, *not_field;
    wf_authz_kind g;
    const char *key;
} op_fields[] = {
    {"hosts", "notHosts", WF_AZ_HOST, ":authority"},
    {"methods", "notMethods", WF_AZ_METHOD, ":method"},
    {"paths", "notPaths", WF_AZ_PATH, "path-matcher"},
    {"ports", "notPorts", WF_AZ_DEST_PORT, "destination.port"},
};

/* Builds one permission / principal from the indexes of its conditions. */
static int build_one(conds *pool, const long *idx, size_t n, bool perm, const wf_authz_gen *g,
                     json_t *into, char *msg, size_t cap)
{
    wf_authz_cond **cs = calloc(n ? n : 1, sizeof *cs);
    if (!cs)
        return WF_AZ_OOM;
    for (size_t i = 0; i < n; i++)
        cs[i] = &pool->v[idx[i]];
    json_t *x = NULL;
    int rc = generate(cs, n, perm, g, &x, msg, cap);
    free(cs);
    if (rc == WF_AZ_OK && json_array_append_new(into, x) != 0)
        rc = WF_AZ_OOM;
    return rc;
}

typedef struct rule_build {
    conds pool;
    long base_perm[32], base_princ[32]; /* when conditions by side */
    size_t nbp, nbq;
} rule_build;

static int parse_when(rule_build *b, const wf_node *when, const wf_authz_gen *g, char *msg,
                      size_t cap)
{
    for (size_t i = 0; i < wf_seq_len(when); i++) {
        const wf_node *w = wf_seq_at(when, i);
        const char *k = wf_map_str(w, "key");
        wf_authz_kind kind;
        if (!k || !when_kind(k, &kind)) {
            snprintf(msg, cap, "unknown attribute %s", k ? k : "");
            return WF_AZ_ERR;
        }
        long ix = add(&b->pool, kind, k, wf_map_get(w, "values"), wf_map_get(w, "notValues"), g);
        if (ix == -1)
            return WF_AZ_OOM;
        if (ix < 0)
            continue;
        bool perm = wf_authz_kind_permission(kind);
        size_t *n = perm ? &b->nbp : &b->nbq;
        if (*n >= 32) {
            snprintf(msg, cap, "more than 32 when conditions");
            return WF_AZ_ERR;
        }
        (perm ? b->base_perm : b->base_princ)[(*n)++] = ix;
    }
    return WF_AZ_OK;
}

/* Permissions (to) or principals (from) of the rule into arr. */
static int build_side(rule_build *b, const wf_node *list, bool perm, const wf_authz_gen *g,
                      json_t *arr, char *msg, size_t cap)
{
    const long *base = perm ? b->base_perm : b->base_princ;
    size_t nbase = perm ? b->nbp : b->nbq;
    size_t nitems = wf_seq_len(list);
    for (size_t i = 0; i < (nitems ? nitems : 1); i++) {
        long idx[48];
        size_t n = 0;
        const wf_node *sub =
            nitems ? wf_map_get(wf_seq_at(list, i), perm ? "operation" : "source") : NULL;
        size_t nf = perm ? sizeof op_fields / sizeof op_fields[0]
                         : sizeof source_fields / sizeof source_fields[0];
        for (size_t f = 0; sub && f < nf; f++) {
            const char *fld = perm ? op_fields[f].field : source_fields[f].field;
            const char *nfld = perm ? op_fields[f].not_field : source_fields[f].not_field;
            long ix = add(&b->pool, perm ? op_fields[f].g : source_fields[f].g,
                          perm ? op_fields[f].key : source_fields[f].key, wf_map_get(sub, fld),
                          wf_map_get(sub, nfld), g);
            if (ix == -1)
                return WF_AZ_OOM;
            if (ix >= 0)
                idx[n++] = ix;
        }
        for (size_t k = 0; k < nbase; k++)
            idx[n++] = base[k];
        int rc = build_one(&b->pool, idx, n, perm, g, arr, msg, cap);
        if (rc != WF_AZ_OK)
            return rc;
    }
    return WF_AZ_OK;
}

int wf_authz_rule_policy(const wf_node *rule, const wf_authz_gen *g, json_t **policy, char *msg,
                         size_t cap)
{
    *policy = NULL;
    if (!rule || rule->type == WF_NODE_SEQ || rule->type == WF_NODE_SCALAR) {
        snprintf(msg, cap, "the rule is not an object");
        return WF_AUTHZ_RULE_INVALID;
    }
    rule_build b = {0};
    json_t *perms = json_array(), *princs = json_array();
    int rc = perms && princs ? parse_when(&b, wf_map_get(rule, "when"), g, msg, cap) : WF_AZ_OOM;
    if (rc == WF_AZ_ERR) {
        conds_free(&b.pool);
        json_decref(perms);
        json_decref(princs);
        return WF_AUTHZ_RULE_INVALID;
    }
    if (rc == WF_AZ_OK)
        rc = build_side(&b, wf_map_get(rule, "to"), true, g, perms, msg, cap);
    if (rc == WF_AZ_OK)
        rc = build_side(&b, wf_map_get(rule, "from"), false, g, princs, msg, cap);
    conds_free(&b.pool);
    if (rc != WF_AZ_OK) {
        json_decref(perms);
        json_decref(princs);
        return rc == WF_AZ_ERR ? WF_AUTHZ_RULE_SKIPPED : WF_AUTHZ_RULE_OOM;
    }
    *policy = json_pack("{s:o,s:o}", "permissions", perms, "principals", princs);
    return *policy ? WF_AUTHZ_RULE_OK : WF_AUTHZ_RULE_OOM;
}

json_t *wf_authz_policy_never(void)
{
    return json_pack("{s:[{s:{s:b}}],s:[{s:{s:b}}]}", "permissions", "not_rule", "any", 1,
                     "principals", "not_id", "any", 1);
}
