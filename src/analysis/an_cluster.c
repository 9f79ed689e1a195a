/*
 * an_cluster.c - analyzers of cluster-level state: status conditions, injection webhooks,
 * external control planes and MeshNetworks.
 *
 * Follows istio/istio pkg/config/analysis/analyzers:
 * - conditions/conditions.go (ConditionAnalyzer): IST0171 for each status condition whose
 *   status is the "negative" one for its type and kind (istio.io/WaypointBound=False on
 *   Service, ServiceEntry and WorkloadEntry; ZtunnelAccepted / WaypointAccepted=False on
 *   AuthorizationPolicy; Accepted / Programmed / ResolvedRefs=False on Gateway API
 *   Gateways, and on the parents of HTTPRoutes and GRPCRoutes), and for an
 *   AuthorizationPolicy's WaypointAccepted condition with reason PartiallyInvalid. As
 *   upstream compares against a Go map's zero value, a condition of an unlisted type with
 *   an empty status is reported too. A status that would not decode (a condition field that
 *   is not a string) yields no conditions.
 * - webhook/webhook.go (Analyzer): over Istio's MutatingWebhookConfigurations (those with a
 *   revision or a webhook named *istio.io), IST0139 when several webhooks match the same
 *   namespace/object label permutation (double injection), and when a webhook's
 *   clientConfig.service names a Service that does not exist.
 * - externalcontrolplane/externalcontrolplane.go (ExternalControlPlaneAnalyzer): for the
 *   webhooks of istiod-default-validator / istio-validator* ValidatingWebhookConfigurations
 *   and istio-sidecar-injector* MutatingWebhookConfigurations, IST0163 when a webhook has
 *   neither a URL nor a service, or a URL Go's url.Parse rejects or whose host cannot be
 *   resolved, and IST0164 when the URL's host is an IP address. weft does no network I/O
 *   while analyzing: a host is "resolvable" when it is a syntactically valid domain name
 *   (Go's resolver rejects other names without a lookup).
 * - multicluster/meshnetworks.go (MeshNetworksAnalyzer, "meshnetworks.MeshNetworksAnalyzer"):
 *   IST0126 for a MeshNetworks endpoint fromRegistry that is neither a built-in registry
 *   (Mock, Kubernetes, External) nor a cluster of an istio/multiCluster=true Secret, reported
 *   on the resource "MeshNetworks <istio namespace>/meshnetworks" (no file reference, as
 *   upstream).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"
#include "core/hex.h"

/* ======================================================================================
 * conditions.ConditionAnalyzer
 * ====================================================================================== */

typedef struct cond_kind {
    wf_kind kind;
    bool parents;            /* conditions under status.parents[] (routes) */
    const char *negative[3]; /* condition types whose "False" status is negative */
} cond_kind;

static const cond_kind cond_kinds[] = {
    {WF_KIND_SERVICE, false, {"istio.io/WaypointBound"}},
    {WF_KIND_SERVICEENTRY, false, {"istio.io/WaypointBound"}},
    {WF_KIND_WORKLOADENTRY, false, {"istio.io/WaypointBound"}},
    {WF_KIND_AUTHORIZATIONPOLICY, false, {"ZtunnelAccepted", "WaypointAccepted"}},
    {WF_KIND_K8S_GATEWAY, false, {"Accepted", "Programmed", "ResolvedRefs"}},
    {WF_KIND_HTTPROUTE, true, {"Accepted", "Programmed", "ResolvedRefs"}},
    {WF_KIND_GRPCROUTE, true, {"Accepted", "Programmed", "ResolvedRefs"}},
};

/* A condition field: "" when absent; false when present but not a string. */
static bool cond_field(const wf_node *c, const char *key, const char **out)
{
    const wf_node *n = wf_map_get(c, key);
    *out = "";
    if (!n || n->type == WF_NODE_NULL)
        return true;
    if (!wf_node_is_string(n))
        return false;
    *out = n->u.str;
    return true;
}

static bool conditions_decode(const wf_node *conds)
{
    static const char *const keys[] = {"type", "status", "reason", "message"};
    if (conds && conds->type != WF_NODE_SEQ && conds->type != WF_NODE_NULL)
        return false;
    for (size_t i = 0; i < wf_seq_len(conds); i++) {
        const wf_node *c = wf_seq_at(conds, i);
        if (c->type != WF_NODE_MAP)
            return false;
        for (size_t k = 0; k < 4; k++) {
            const char *s;
            if (!cond_field(c, keys[k], &s))
                return false;
        }
    }
    return true;
}

/* The negative status of a condition type for the kind: "False" when listed, else the Go
 * map's zero value "". */
static const char *negative_status(const cond_kind *ck, const char *type)
{
    for (size_t i = 0; i < 3 && ck->negative[i]; i++)
        if (strcmp(ck->negative[i], type) == 0)
            return "False";
    return "";
}

static void check_conditions(wf_analysis_ctx *ctx, const cond_kind *ck, const wf_resource *r,
                             const wf_node *conds)
{
    for (size_t i = 0; i < wf_seq_len(conds); i++) {
        const wf_node *c = wf_seq_at(conds, i);
        const char *type, *status, *reason, *message;
        cond_field(c, "type", &type);
        cond_field(c, "status", &status);
        cond_field(c, "reason", &reason);
        cond_field(c, "message", &message);
        if (strcmp(negative_status(ck, type), status) == 0)
            WF_REPORT(ctx, WF_IST0171, r, NULL, type, reason, message);
        if (ck->kind == WF_KIND_AUTHORIZATIONPOLICY && strcmp(type, "WaypointAccepted") == 0 &&
            strcmp(reason, "PartiallyInvalid") == 0)
            WF_REPORT(ctx, WF_IST0171, r, NULL, type, reason, message);
    }
}

static void conditions_of(wf_analysis_ctx *ctx, const cond_kind *ck, const wf_resource *r)
{
    const wf_node *st = r->status;
    if (!st || st->type != WF_NODE_MAP)
        return;
    if (!ck->parents) {
        const wf_node *conds = wf_map_get(st, "conditions");
        if (conditions_decode(conds))
            check_conditions(ctx, ck, r, conds);
        return;
    }
    const wf_node *parents = wf_map_get(st, "parents");
    for (size_t i = 0; i < wf_seq_len(parents); i++)
        if (!conditions_decode(wf_map_get(wf_seq_at(parents, i), "conditions")))
            return;
    for (size_t i = 0; i < wf_seq_len(parents); i++)
        check_conditions(ctx, ck, r, wf_map_get(wf_seq_at(parents, i), "conditions"));
}

static void run_conditions(wf_analysis_ctx *ctx)
{
    for (size_t k = 0; k < sizeof(cond_kinds) / sizeof(cond_kinds[0]); k++) {
        size_t n;
        const wf_resource *const *rs = wf_store_kind(wf_ctx_store(ctx), cond_kinds[k].kind, &n);
        for (size_t i = 0; i < n; i++)
            conditions_of(ctx, &cond_kinds[k], rs[i]);
    }
}

const wf_analyzer wf_an_conditions_ConditionAnalyzer = {
    .name = "conditions.ConditionAnalyzer",
    .description = "Checks for negative status conditions on resources",
    .inputs = {WF_KIND_SERVICE, WF_KIND_SERVICEENTRY, WF_KIND_WORKLOADENTRY,
               WF_KIND_AUTHORIZATIONPOLICY, WF_KIND_K8S_GATEWAY, WF_KIND_HTTPROUTE,
               WF_KIND_GRPCROUTE, WF_KIND_OTHER},
    .codes = {WF_IST0171, WF_MSG_COUNT},
    .default_on = true,
    .run = run_conditions,
};

/* ======================================================================================
 * webhook.Analyzer
 * ====================================================================================== */

/* ---- Kubernetes label selectors (metav1.LabelSelectorAsSelector) ---- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 bytes; empty when allow_empty. */
static bool valid_label_value(const char *s, size_t len, bool allow_empty)
{
    if (len == 0)
        return allow_empty;
    if (len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* RFC 1123 subdomain: lower-case alphanumeric labels with inner '-', joined by '.'. */
static bool valid_dns1123_subdomain(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            char c = s[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                return false;
            continue;
        }
        if (i == start || s[start] == '-' || s[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

/* validation.IsQualifiedName: [prefix/]name. */
static bool valid_label_key(const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash)
        return valid_label_value(key, strlen(key), false);
    if (strchr(slash + 1, '/'))
        return false;
    return valid_dns1123_subdomain(key, (size_t)(slash - key)) &&
           valid_label_value(slash + 1, strlen(slash + 1), false);
}

typedef struct label_set {
    const char *key[2], *value[2];
    size_t n;
} label_set;

static const char *set_get(const label_set *ls, const char *key)
{
    for (size_t i = 0; i < ls->n; i++)
        if (strcmp(ls->key[i], key) == 0)
            return ls->value[i];
    return NULL;
}

static bool values_contain(const wf_node *values, const char *v)
{
    for (size_t i = 0; i < wf_seq_len(values); i++) {
        const char *s = wf_node_str(wf_seq_at(values, i));
        if (v && strcmp(s ? s : "", v) == 0)
            return true;
    }
    return false;
}

static bool values_valid(const wf_node *values)
{
    for (size_t i = 0; i < wf_seq_len(values); i++) {
        const char *s = wf_node_str(wf_seq_at(values, i));
        if (!valid_label_value(s ? s : "", s ? strlen(s) : 0, true))
            return false;
    }
    return true;
}

/* One matchExpressions requirement; *ok = false when it would not build (selector error). */
static bool expression_matches(const wf_node *e, const label_set *ls, bool *ok)
{
    const char *key = wf_map_str(e, "key"), *op = wf_map_str(e, "operator");
    const wf_node *values = wf_map_get(e, "values");
    size_t nv = wf_seq_len(values);
    const char *have = set_get(ls, key ? key : "");
    *ok = false;
    if (!key || !op || !valid_label_key(key) || !values_valid(values))
        return false;
    bool in = strcmp(op, "In") == 0, not_in = strcmp(op, "NotIn") == 0;
    bool exists = strcmp(op, "Exists") == 0, not_exists = strcmp(op, "DoesNotExist") == 0;
    if (((in || not_in) && nv == 0) || ((exists || not_exists) && nv != 0))
        return false;
    if (!in && !not_in && !exists && !not_exists)
        return false;
    *ok = true;
    if (in)
        return values_contain(values, have);
    if (not_in)
        return !have || !values_contain(values, have);
    return exists ? have != NULL : have == NULL;
}

/* selectorMatches: a missing selector matches everything; one that does not build matches
 * nothing. */
static bool selector_matches(const wf_node *sel, const label_set *ls)
{
    if (!sel || sel->type == WF_NODE_NULL)
        return true;
    const wf_node *ml = wf_map_get(sel, "matchLabels");
    const wf_node *exprs = wf_map_get(sel, "matchExpressions");
    bool matches = true;
    for (size_t i = 0; ml && ml->type == WF_NODE_MAP && i < ml->len; i++) {
        const char *k = ml->u.entries[i].key, *v = wf_node_str(ml->u.entries[i].value);
        if (!v)
            v = "";
        if (!valid_label_key(k) || !valid_label_value(v, strlen(v), true))
            return false;
        const char *have = set_get(ls, k);
        if (!have || strcmp(have, v) != 0)
            matches = false;
    }
    for (size_t i = 0; i < wf_seq_len(exprs); i++) {
        bool ok;
        if (!expression_matches(wf_seq_at(exprs, i), ls, &ok))
            matches = false;
        if (!ok)
            return false;
    }
    return matches;
}

/* ---- webhook configurations ---- */

typedef struct wh_config {
    const wf_resource *r;
    const char *full_name;
    const wf_node *hooks; /* webhooks[] */
} wh_config;

typedef struct wh_state {
    wf_analysis_ctx *ctx;
    wh_config *cfg;
    size_t ncfg;
    const char **revs;
    size_t nrevs, caprevs;
} wh_state;

static void add_rev(wh_state *st, const char *rev)
{
    for (size_t i = 0; i < st->nrevs; i++)
        if (strcmp(st->revs[i], rev) == 0)
            return;
    if (st->nrevs == st->caprevs) {
        size_t cap = st->caprevs ? st->caprevs * 2 : 8;
        const char **v = wf_arena_alloc(wf_ctx_arena(st->ctx), cap * sizeof(*v));
        if (!v)
            return;
        if (st->nrevs)
            memcpy(v, st->revs, st->nrevs * sizeof(*v));
        st->revs = v;
        st->caprevs = cap;
    }
    st->revs[st->nrevs++] = rev;
}

/* Revisions named by a selector (matchLabels / matchExpressions on istio.io/rev). */
static size_t selector_revs(wh_state *st, const wf_node *sel)
{
    size_t n = 0;
    if (!sel || sel->type != WF_NODE_MAP)
        return 0;
    const wf_node *ml = wf_map_get(sel, "matchLabels");
    const char *r = wf_map_str(ml, "istio.io/rev");
    if (wf_map_get(ml, "istio.io/rev")) {
        add_rev(st, r ? r : "");
        n++;
    }
    const wf_node *exprs = wf_map_get(sel, "matchExpressions");
    for (size_t i = 0; i < wf_seq_len(exprs); i++) {
        const wf_node *e = wf_seq_at(exprs, i);
        const char *key = wf_map_str(e, "key");
        if (!key || strcmp(key, "istio.io/rev") != 0)
            continue;
        const wf_node *values = wf_map_get(e, "values");
        for (size_t j = 0; j < wf_seq_len(values); j++) {
            const char *v = wf_node_str(wf_seq_at(values, j));
            add_rev(st, v ? v : "");
            n++;
        }
    }
    return n;
}

/* extractRevisions, adding to the state's set; returns how many revisions it named. */
static size_t config_revs(wh_state *st, const wf_resource *r, const wf_node *hooks)
{
    size_t n = 0;
    const char *rev = wf_kvs_get(&r->labels, "istio.io/rev");
    if (rev) {
        add_rev(st, rev);
        n++;
    }
    for (size_t i = 0; i < wf_seq_len(hooks); i++) {
        const wf_node *h = wf_seq_at(hooks, i);
        n += selector_revs(st, wf_map_get(h, "namespaceSelector"));
        n += selector_revs(st, wf_map_get(h, "objectSelector"));
    }
    return n;
}

static bool is_istio_webhook(const wf_node *hooks)
{
    for (size_t i = 0; i < wf_seq_len(hooks); i++) {
        const char *name = wf_map_str(wf_seq_at(hooks, i), "name");
        size_t l = name ? strlen(name) : 0;
        if (l >= 8 && strcmp(name + l - 8, "istio.io") == 0)
            return true;
    }
    return false;
}

static bool collect_webhooks(wh_state *st)
{
    size_t n;
    const wf_resource *const *rs =
        wf_store_kind(wf_ctx_store(st->ctx), WF_KIND_MUTATINGWEBHOOK, &n);
    st->cfg = wf_arena_alloc(wf_ctx_arena(st->ctx), (n ? n : 1) * sizeof(*st->cfg));
    if (!st->cfg)
        return false;
    for (size_t i = 0; i < n; i++) {
        const wf_node *hooks = wf_map_get(rs[i]->root, "webhooks");
        size_t before = st->nrevs;
        size_t nrev = config_revs(st, rs[i], hooks);
        if (nrev == 0 && !is_istio_webhook(hooks)) {
            st->nrevs = before;
            continue;
        }
        const char *full = wf_full_name(st->ctx, rs[i]);
        size_t j = 0; /* a later configuration with the same name replaces an earlier one */
        while (j < st->ncfg && strcmp(st->cfg[j].full_name, full) != 0)
            j++;
        st->cfg[j] = (wh_config){rs[i], full, hooks};
        if (j == st->ncfg)
            st->ncfg++;
    }
    return true;
}

/* "<config>/<webhook>" keys matching one permutation, deduplicated. */
typedef struct wh_match {
    const char *key;
    const wf_resource *r;
} wh_match;

static size_t permutation_matches(wh_state *st, const label_set *nl, const label_set *ol,
                                  wh_match *out)
{
    size_t m = 0;
    for (size_t c = 0; c < st->ncfg; c++) {
        for (size_t i = 0; i < wf_seq_len(st->cfg[c].hooks); i++) {
            const wf_node *h = wf_seq_at(st->cfg[c].hooks, i);
            if (!selector_matches(wf_map_get(h, "namespaceSelector"), nl) ||
                !selector_matches(wf_map_get(h, "objectSelector"), ol))
                continue;
            const char *hn = wf_map_str(h, "name");
            const char *key =
                wf_arena_printf(wf_ctx_arena(st->ctx), "%s/%s", st->cfg[c].full_name, hn ? hn : "");
            if (!key)
                return 0;
            size_t k = 0;
            while (k < m && strcmp(out[k].key, key) != 0)
                k++;
            if (k == m)
                out[m++] = (wh_match){key, st->cfg[c].r};
        }
    }
    return m;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void report_overlaps(wh_state *st, const wh_match *ms, size_t m, const char **buf)
{
    for (size_t i = 0; i < m; i++) {
        size_t k = 0;
        for (size_t j = 0; j < m; j++)
            if (j != i)
                buf[k++] = ms[j].key;
        qsort(buf, k, sizeof(*buf), cmp_str);
        const char *text = wf_arena_printf(
            wf_ctx_arena(st->ctx),
            "Webhook overlaps with others: %s. This may cause injection to occur twice.",
            wf_go_slice(st->ctx, buf, k));
        if (text)
            WF_REPORT(st->ctx, WF_IST0139, ms[i].r, NULL, text);
    }
}

/* The permutation sets: the three base sets, then each with istio.io/rev=<rev>. */
static size_t build_sets(wh_state *st, const char *key, label_set *out)
{
    static const char *const base[3] = {NULL, "enabled", "disabled"};
    static const char *const obj[3] = {NULL, "true", "false"};
    bool ns = strcmp(key, "istio-injection") == 0;
    size_t n = 0;
    for (size_t r = 0; r <= st->nrevs; r++) {
        for (size_t b = 0; b < 3; b++) {
            label_set ls = {.n = 0};
            const char *v = ns ? base[b] : obj[b];
            if (v) {
                ls.key[ls.n] = key;
                ls.value[ls.n++] = v;
            }
            if (r > 0) {
                ls.key[ls.n] = "istio.io/rev";
                ls.value[ls.n++] = st->revs[r - 1];
            }
            out[n++] = ls;
        }
    }
    return n;
}

static void check_overlaps(wh_state *st)
{
    size_t nsets = 3 * (st->nrevs + 1), nhooks = 0;
    for (size_t c = 0; c < st->ncfg; c++)
        nhooks += wf_seq_len(st->cfg[c].hooks);
    wf_arena *a = wf_ctx_arena(st->ctx);
    label_set *nls = wf_arena_alloc(a, nsets * sizeof(*nls));
    label_set *ols = wf_arena_alloc(a, nsets * sizeof(*ols));
    wh_match *ms = wf_arena_alloc(a, (nhooks ? nhooks : 1) * sizeof(*ms));
    const char **buf = wf_arena_alloc(a, (nhooks ? nhooks : 1) * sizeof(*buf));
    if (!nls || !ols || !ms || !buf)
        return;
    build_sets(st, "istio-injection", nls);
    build_sets(st, "sidecar.istio.io/inject", ols);
    for (size_t i = 0; i < nsets; i++) {
        for (size_t j = 0; j < nsets; j++) {
            size_t m = permutation_matches(st, &nls[i], &ols[j], ms);
            if (m > 1)
                report_overlaps(st, ms, m, buf);
        }
    }
}

static void check_services(wh_state *st)
{
    for (size_t c = 0; c < st->ncfg; c++) {
        for (size_t i = 0; i < wf_seq_len(st->cfg[c].hooks); i++) {
            const wf_node *svc =
                wf_node_path(wf_seq_at(st->cfg[c].hooks, i), "clientConfig.service");
            if (!svc || svc->type == WF_NODE_NULL)
                continue;
            const char *ns = wf_map_str(svc, "namespace"), *name = wf_map_str(svc, "name");
            ns = ns ? ns : "";
            name = name ? name : "";
            if (wf_store_find(wf_ctx_store(st->ctx), WF_KIND_SERVICE, ns, name))
                continue;
            const char *text = wf_arena_printf(
                wf_ctx_arena(st->ctx),
                "Injector refers to a control plane service that does not exist: %s%s%s.", ns,
                ns[0] ? "/" : "", name);
            if (text)
                WF_REPORT(st->ctx, WF_IST0139, st->cfg[c].r, NULL, text);
        }
    }
}

static void run_webhook(wf_analysis_ctx *ctx)
{
    wh_state st = {.ctx = ctx};
    if (!collect_webhooks(&st))
        return;
    check_overlaps(&st);
    check_services(&st);
}

const wf_analyzer wf_an_webhook_Analyzer = {
    .name = "webhook.Analyzer",
    .description = "Checks the validity of Istio webhooks",
    .inputs = {WF_KIND_MUTATINGWEBHOOK, WF_KIND_SERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0139, WF_MSG_COUNT},
    .default_on = true,
    .run = run_webhook,
};

/* ======================================================================================
 * externalcontrolplane.ExternalControlPlaneAnalyzer
 * ====================================================================================== */

/* ---- Go net/url parsing, as far as Hostname() and parse errors go ---- */

enum url_mode { URL_HOST, URL_ZONE, URL_OTHER };

/* shouldEscape(c, encodeHost): characters a host may not contain unescaped. */
static bool host_should_escape(unsigned char c)
{
    if (is_alnum((char)c))
        return false;
    return !strchr("!$&'()*+,;=:[]<>\"-_.~", c) || c == '\0';
}

/* url.unescape(s[0:len], mode) validity; the unescaped text goes to out when non-NULL. */
static bool url_unescape(const char *s, size_t len, enum url_mode mode, wf_strbuf *out)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= len)
                return false;
            int hi = wf_hex_value(s[i + 1]), lo = wf_hex_value(s[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            bool is25 = s[i + 1] == '2' && s[i + 2] == '5';
            if (mode == URL_HOST && hi < 8 && !is25)
                return false;
            unsigned char v = (unsigned char)(hi << 4 | lo);
            if (mode == URL_ZONE && !is25 && v != ' ' && host_should_escape(v))
                return false;
            if (out)
                wf_strbuf_putc(out, (char)v);
            i += 2;
            continue;
        }
        if ((mode == URL_HOST || mode == URL_ZONE) && c < 0x80 && host_should_escape(c))
            return false;
        if (out)
            wf_strbuf_putc(out, (char)c);
    }
    return true;
}

/* validOptionalPort: "" or ":" followed by digits. */
static bool valid_optional_port(const char *p, size_t len)
{
    if (len == 0)
        return true;
    if (p[0] != ':')
        return false;
    for (size_t i = 1; i < len; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

/* url.parseHost: validate and unescape the host[:port] part into out. */
static bool url_parse_host(const char *h, size_t len, wf_strbuf *out)
{
    if (len && h[0] == '[') {
        size_t i = len;
        while (i > 0 && h[i - 1] != ']')
            i--;
        if (i == 0)
            return false;
        size_t close = i - 1;
        if (!valid_optional_port(h + close + 1, len - close - 1))
            return false;
        const char *zone = NULL;
        for (size_t k = 0; k + 2 < close; k++)
            if (h[k] == '%' && h[k + 1] == '2' && h[k + 2] == '5') {
                zone = h + k;
                break;
            }
        if (zone)
            return url_unescape(h, (size_t)(zone - h), URL_HOST, out) &&
                   url_unescape(zone, (size_t)(h + close - zone), URL_ZONE, out) &&
                   url_unescape(h + close, len - close, URL_HOST, out);
        return url_unescape(h, len, URL_HOST, out);
    }
    for (size_t i = len; i-- > 0;)
        if (h[i] == ':') {
            if (!valid_optional_port(h + i, len - i))
                return false;
            break;
        }
    return url_unescape(h, len, URL_HOST, out);
}

static bool valid_userinfo(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && !strchr("-._:~!$&'()*+,;=%@", s[i]))
            return false;
    return true;
}

/* Go's url.Parse(raw): false on a parse error; else the unescaped Host in host_out. */
static bool url_parse(const char *raw, wf_strbuf *host_out)
{
    const char *hash = strchr(raw, '#');
    if (hash && !url_unescape(hash + 1, strlen(hash + 1), URL_OTHER, NULL))
        return false;
    size_t end = hash ? (size_t)(hash - raw) : strlen(raw);
    for (size_t i = 0; i < end; i++)
        if ((unsigned char)raw[i] < 0x20 || raw[i] == 0x7f)
            return false; /* invalid control character in URL */
    if (end == 1 && raw[0] == '*')
        return true;
    size_t rest = 0; /* getScheme */
    bool scheme = false;
    for (size_t i = 0; i < end; i++) {
        char c = raw[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            continue;
        if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
            if (i == 0)
                break;
            continue;
        }
        if (c == ':') {
            if (i == 0)
                return false; /* missing protocol scheme */
            scheme = true;
            rest = i + 1;
        }
        break;
    }
    size_t q = rest; /* cut the query */
    while (q < end && raw[q] != '?')
        q++;
    const char *r = raw + rest;
    size_t rl = q - rest;
    if (rl == 0 || r[0] != '/') {
        if (scheme)
            return true; /* opaque */
        size_t k = 0;
        while (k < rl && r[k] != '/')
            k++;
        if (memchr(r, ':', k))
            return false; /* first path segment in URL cannot contain colon */
    }
    if ((scheme || rl < 3 || strncmp(r, "///", 3) != 0) && rl >= 2 && strncmp(r, "//", 2) == 0) {
        const char *auth = r + 2;
        size_t al = 0;
        while (al < rl - 2 && auth[al] != '/')
            al++;
        size_t at = al;
        while (at > 0 && auth[at - 1] != '@')
            at--;
        if (at > 0 &&
            !(valid_userinfo(auth, at - 1) && url_unescape(auth, at - 1, URL_OTHER, NULL)))
            return false;
        if (!url_parse_host(auth + at, al - at, host_out))
            return false;
        r = auth + al;
        rl = rl - 2 - al;
    }
    return url_unescape(r, rl, URL_OTHER, NULL);
}

/* URL.Hostname(): the host without the port and the IPv6 brackets. */
static void url_hostname(char *host)
{
    char *colon = strrchr(host, ':');
    if (colon && valid_optional_port(colon, strlen(colon)))
        *colon = '\0';
    size_t l = strlen(host);
    if (l >= 2 && host[0] == '[' && host[l - 1] == ']') {
        memmove(host, host + 1, l - 2);
        host[l - 2] = '\0';
    }
}

/* Go's net isDomainName: what the pure-Go resolver accepts before any lookup. */
static bool is_domain_name(const char *s)
{
    size_t l = strlen(s);
    if (strcmp(s, ".") == 0)
        return true;
    if (l == 0 || l > 254 || (l == 254 && s[l - 1] != '.'))
        return false;
    char last = '.';
    bool non_numeric = false;
    size_t part = 0;
    for (size_t i = 0; i < l; i++) {
        char c = s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            non_numeric = true;
            part++;
        } else if (c >= '0' && c <= '9') {
            part++;
        } else if (c == '-') {
            if (last == '.')
                return false;
            part++;
            non_numeric = true;
        } else if (c == '.') {
            if (last == '.' || last == '-' || part > 63 || part == 0)
                return false;
            part = 0;
        } else {
            return false;
        }
        last = c;
    }
    return last != '-' && part <= 63 && non_numeric;
}

static bool is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* lintWebhookURL: NULL when fine, else the error text; *is_ip when the host is an IP. */
static const char *lint_webhook_url(const char *url, bool *ip)
{
    wf_strbuf host = WF_STRBUF_INIT;
    *ip = false;
    bool ok = url_parse(url, &host);
    if (wf_strbuf_failed(&host)) {
        wf_strbuf_free(&host);
        return NULL;
    }
    if (!ok) {
        wf_strbuf_free(&host);
        return "was provided in an invalid format";
    }
    char *h = wf_strbuf_take(&host);
    const char *err = NULL;
    if (!h)
        h = strdup("");
    if (!h)
        return NULL;
    url_hostname(h);
    if (is_ip(h))
        *ip = true;
    else if (!is_domain_name(h))
        err = "cannot be resolved via a DNS lookup";
    free(h);
    return err;
}

static void report_webhook_url(wf_analysis_ctx *ctx, const wf_resource *r, const wf_node *hook)
{
    const char *hname = wf_map_str(hook, "name");
    const wf_node *cc = wf_map_get(hook, "clientConfig");
    const wf_node *url = wf_map_get(cc, "url"), *svc = wf_map_get(cc, "service");
    hname = hname ? hname : "";
    if (url && url->type != WF_NODE_NULL) {
        const char *u = wf_node_str(url);
        bool ip;
        const char *err = lint_webhook_url(u ? u : "", &ip);
        if (err)
            WF_REPORT(ctx, WF_IST0163, r, NULL, u ? u : "", hname, err);
        else if (ip)
            WF_REPORT(ctx, WF_IST0164, r, NULL, u ? u : "", hname);
    } else if (!svc || svc->type == WF_NODE_NULL) {
        WF_REPORT(ctx, WF_IST0163, r, NULL, "", hname, "is blank");
    }
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static void run_external_control_plane(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    size_t n;
    const wf_resource *const *vs = wf_store_kind(s, WF_KIND_VALIDATINGWEBHOOK, &n);
    for (size_t i = 0; i < n; i++) {
        const char *name = vs[i]->name;
        if (!name[0] ||
            (strcmp(name, "istiod-default-validator") != 0 && !has_prefix(name, "istio-validator")))
            continue;
        const wf_node *hooks = wf_map_get(vs[i]->root, "webhooks");
        for (size_t j = 0; j < wf_seq_len(hooks); j++)
            report_webhook_url(ctx, vs[i], wf_seq_at(hooks, j));
    }
    const wf_resource *const *ms = wf_store_kind(s, WF_KIND_MUTATINGWEBHOOK, &n);
    for (size_t i = 0; i < n; i++) {
        if (!has_prefix(ms[i]->name, "istio-sidecar-injector"))
            continue;
        const wf_node *hooks = wf_map_get(ms[i]->root, "webhooks");
        for (size_t j = 0; j < wf_seq_len(hooks); j++)
            report_webhook_url(ctx, ms[i], wf_seq_at(hooks, j));
    }
}

const wf_analyzer wf_an_externalcontrolplane_ExternalControlPlaneAnalyzer = {
    .name = "externalcontrolplane.ExternalControlPlaneAnalyzer",
    .description = "Checks that the remote IstioOperator resources reference an external "
                   "control plane",
    .inputs = {WF_KIND_VALIDATINGWEBHOOK, WF_KIND_MUTATINGWEBHOOK, WF_KIND_OTHER},
    .codes = {WF_IST0163, WF_IST0164, WF_MSG_COUNT},
    .default_on = true,
    .run = run_external_control_plane,
};

/* ======================================================================================
 * meshnetworks.MeshNetworksAnalyzer
 * ====================================================================================== */

/* Is reg a known service registry: built in, or a key of a multi-cluster Secret's data? */
static bool known_registry(const wf_store *s, const char *reg)
{
    static const char *const builtin[] = {"Mock", "Kubernetes", "External"};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(builtin[i], reg) == 0)
            return true;
    size_t n;
    const wf_resource *const *secrets = wf_store_kind(s, WF_KIND_SECRET, &n);
    for (size_t i = 0; i < n; i++) {
        const char *mc = wf_kvs_get(&secrets[i]->labels, "istio/multiCluster");
        if (!mc || strcmp(mc, "true") != 0)
            continue;
        const wf_node *data = wf_map_get(secrets[i]->root, "data");
        if (wf_map_get(data, reg))
            return true;
    }
    return false;
}

/* The MeshNetworks resource istioctl analyzes: "<istio namespace>/meshnetworks". */
static const wf_resource *mesh_networks_resource(wf_analysis_ctx *ctx, const wf_node *root)
{
    wf_resource *r = wf_arena_alloc(wf_ctx_arena(ctx), sizeof(*r));
    if (!r)
        return NULL;
    r->kind = WF_KIND_OTHER;
    r->api_version = "";
    r->kind_name = "MeshNetworks";
    r->name = "meshnetworks";
    r->ns = wf_meshcfg_root_ns(wf_ctx_mesh(ctx));
    r->root = root;
    r->spec = root;
    r->file = NULL;
    return r;
}

static void run_mesh_networks(wf_analysis_ctx *ctx)
{
    const wf_node *root = wf_meshcfg_networks(wf_ctx_mesh(ctx));
    const wf_node *nets = wf_map_get(root, "networks");
    if (!nets || nets->type != WF_NODE_MAP)
        return;
    const wf_resource *r = NULL;
    for (size_t i = 0; i < nets->len; i++) {
        const wf_map_entry *net = &nets->u.entries[i];
        if (wf_map_entry_get(nets, net->key) != net)
            continue; /* a repeated network name: the last one wins */
        const wf_node *eps = wf_map_get(net->value, "endpoints");
        for (size_t j = 0; j < wf_seq_len(eps); j++) {
            const wf_node *fr = wf_map_get(wf_seq_at(eps, j), "fromRegistry");
            const char *reg = wf_node_str(fr);
            if (!fr || fr->type == WF_NODE_NULL ||
                known_registry(wf_ctx_store(ctx), reg ? reg : ""))
                continue;
            if (!r && !(r = mesh_networks_resource(ctx, root)))
                return;
            WF_REPORT(ctx, WF_IST0126, r, NULL, reg ? reg : "", net->key);
        }
    }
}

const wf_analyzer wf_an_meshnetworks_MeshNetworksAnalyzer = {
    .name = "meshnetworks.MeshNetworksAnalyzer",
    .description = "Check the validity of MeshNetworks in the cluster",
    .inputs = {WF_KIND_SECRET, WF_KIND_OTHER},
    .codes = {WF_IST0126, WF_MSG_COUNT},
    .default_on = true,
    .run = run_mesh_networks,
};
