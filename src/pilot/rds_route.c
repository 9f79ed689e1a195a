/*
 * rds_route.c - the Envoy routes of one VirtualService's HTTP routes for a sidecar (see
 * rds.h): matches (TranslateRouteMatch), destinations (applyHTTPRouteDestination,
 * GetDestinationCluster), rewrite, redirect, directResponse, and the per-route policies of
 * rds_policy.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gofmt.h"
#include "pilot/cds_internal.h"
#include "pilot/naming.h"
#include "pilot/rds_internal.h"

#define VS_CONFIG_PATH "/apis/networking.istio.io/v1/namespaces/%s/virtual-service/%s"

typedef struct vs_in {
    const rds_ctx *x;
    const wf_resource *vs;
    int32_t port; /* listener port */
} vs_in;

/* ---------- matches ---------- */

/* Does the match's gateway entry g name what the routes are built for ("mesh", or the
 * Gateway "ns/name"; a name without '/' is in the VirtualService's namespace)? */
static bool gateway_is(const vs_in *in, const char *g)
{
    const char *want = in->x->gateway;
    if (!g || !want)
        return g && !want && !strcmp(g, "mesh");
    if (strchr(g, '/'))
        return !strcmp(g, want);
    size_t nl = strlen(in->vs->ns);
    return !strncmp(want, in->vs->ns, nl) && want[nl] == '/' && !strcmp(want + nl + 1, g);
}

/* sourceMatchHTTP and the match's port, for this proxy and listener port. */
static bool match_applies(const vs_in *in, const wf_node *m)
{
    int64_t port = 0;
    if (wf_node_int(wf_map_get(m, "port"), &port) && port != 0 && port != in->port)
        return false;
    const wf_node *gws = wf_map_get(m, "gateways");
    bool mesh = wf_seq_len(gws) == 0;
    for (size_t i = 0; i < wf_seq_len(gws) && !mesh; i++)
        mesh = gateway_is(in, wf_node_str(wf_seq_at(gws, i)));
    const char *sns = wf_map_str(m, "sourceNamespace");
    if (!mesh || (sns && (!in->x->proxy_ns || strcmp(sns, in->x->proxy_ns) != 0)))
        return false;
    const wf_node *sl = wf_map_get(m, "sourceLabels");
    for (size_t i = 0; sl && sl->type == WF_NODE_MAP && i < sl->len; i++) {
        const char *want = wf_node_str(sl->u.entries[i].value);
        const char *have =
            in->x->proxy_labels ? wf_kvs_get(in->x->proxy_labels, sl->u.entries[i].key) : NULL;
        if (!want || !have || strcmp(want, have) != 0)
            return false;
    }
    return true;
}

/* util.ConvertToEnvoyMatch of a StringMatch; NULL when it has no known type (or OOM). */
static json_t *string_match(const wf_node *sm)
{
    const char *v;
    if ((v = wf_map_str(sm, "exact")))
        return json_pack("{s:s}", "exact", v);
    if ((v = wf_map_str(sm, "prefix")))
        return json_pack("{s:s}", "prefix", v);
    if ((v = wf_map_str(sm, "regex")))
        return json_pack("{s:{s:s}}", "safe_regex", "regex", v);
    return NULL;
}

/* isCatchAllStringMatch */
static bool catch_all_sm(const wf_node *sm)
{
    const char *p = wf_map_str(sm, "prefix"), *r = wf_map_str(sm, "regex");
    return !sm || sm->type != WF_NODE_MAP || (p && !*p) || (r && !strcmp(r, "*"));
}

/* translateHeaderMatch / translateQueryParamMatch. */
static json_t *kv_matcher(const char *name, const wf_node *sm, bool invert)
{
    json_t *o = json_pack("{s:s}", "name", name);
    json_t *em = catch_all_sm(sm) ? NULL : string_match(sm);
    int rc = !o   ? -1
             : em ? json_object_set_new(o, "string_match", em)
                  : json_object_set_new(o, "present_match", json_true());
    if (rc == 0 && invert)
        rc = json_object_set_new(o, "invert_match", json_true());
    /* withoutHeaders with a value: a request without the header matches (istiod sets
     * treat_missing_header_as_empty, so the absent header is "" and "" != the value) */
    if (rc == 0 && invert && em)
        rc = json_object_set_new(o, "treat_missing_header_as_empty", json_true());
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int cmp_name(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "name"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "name"));
    return strcmp(x ? x : "", y ? y : "");
}

/* Append one matcher per entry of map (may be NULL), then sort arr by name. */
static int add_kv_matchers(json_t *arr, const wf_node *map, bool invert)
{
    for (size_t i = 0; map && map->type == WF_NODE_MAP && i < map->len; i++)
        if (json_array_append_new(
                arr, kv_matcher(map->u.entries[i].key, map->u.entries[i].value, invert)) != 0)
            return -1;
    size_t n = json_array_size(arr);
    if (n < 2)
        return 0;
    json_t **v = calloc(n, sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof *v, cmp_name);
    json_array_clear(arr);
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(arr, v[i]) != 0)
            rc = -1;
    free(v);
    return rc;
}

static int path_spec(json_t *out, const wf_node *uri)
{
    const char *v;
    if ((v = wf_map_str(uri, "exact")))
        return json_object_set_new(out, "path", json_string(v));
    if ((v = wf_map_str(uri, "regex")))
        return json_object_set_new(out, "safe_regex", json_pack("{s:s}", "regex", v));
    v = wf_map_str(uri, "prefix");
    return json_object_set_new(out, "prefix", json_string(v ? v : "/"));
}

static int pseudo_header(json_t *hdrs, const wf_node *m, const char *key, const char *name)
{
    const wf_node *sm = wf_map_get(m, key);
    return sm ? json_array_append_new(hdrs, kv_matcher(name, sm, false)) : 0;
}

/* TranslateRouteMatch (m NULL: prefix "/" only). */
static json_t *route_match(const wf_node *m)
{
    json_t *out = json_object(), *hdrs = json_array(), *qps = json_array();
    bool ignore_case = false;
    int rc = out && hdrs && qps ? path_spec(out, wf_map_get(m, "uri")) : -1;
    if (rc == 0 && m) {
        wf_node_bool(wf_map_get(m, "ignoreUriCase"), &ignore_case);
        if (json_object_set_new(out, "case_sensitive", json_boolean(!ignore_case)) != 0 ||
            add_kv_matchers(hdrs, wf_map_get(m, "headers"), false) != 0 ||
            add_kv_matchers(hdrs, wf_map_get(m, "withoutHeaders"), true) != 0 ||
            pseudo_header(hdrs, m, "method", ":method") != 0 ||
            pseudo_header(hdrs, m, "authority", ":authority") != 0 ||
            pseudo_header(hdrs, m, "scheme", ":scheme") != 0 ||
            add_kv_matchers(qps, wf_map_get(m, "queryParams"), false) != 0)
            rc = -1;
    }
    if (rc == 0 && json_array_size(hdrs) && json_object_set(out, "headers", hdrs) != 0)
        rc = -1;
    if (rc == 0 && json_array_size(qps) && json_object_set(out, "query_parameters", qps) != 0)
        rc = -1;
    json_decref(hdrs);
    json_decref(qps);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* isCatchAllRoute (rds_internal.h) */
bool rds_catch_all_route(json_t *r)
{
    json_t *m = json_object_get(r, "match");
    const char *p = json_string_value(json_object_get(m, "prefix"));
    const char *re = json_string_value(json_object_get(json_object_get(m, "safe_regex"), "regex"));
    bool all = (p && !strcmp(p, "/")) || (re && !strcmp(re, "*"));
    return all && !json_object_get(m, "headers") && !json_object_get(m, "query_parameters");
}

/* ---------- destinations and actions ---------- */

/* GetDestinationCluster: the destination's port, else the only port of its Service (or of
 * the first ServiceEntry with that host), else the listener port. Returns a new heap string, NULL
 * on OOM. */
static char *dest_cluster(const vs_in *in, const wf_destination *d)
{
    char *host = rds_resolve_host(d->host ? d->host : "", in->vs->ns, in->x->suffix);
    if (!host)
        return NULL;
    int32_t port = in->port;
    if (d->port > 0) {
        port = d->port;
    } else {
        size_t n = 0;
        const wf_resource *const *svcs = wf_store_by_host(in->x->s, host, &n);
        for (size_t i = 0; i < n; i++) {
            if (svcs[i]->kind == WF_KIND_SERVICE && svcs[i]->t.service &&
                svcs[i]->t.service->nports == 1) {
                port = svcs[i]->t.service->ports[0].port;
                break;
            }
            if (svcs[i]->kind == WF_KIND_SERVICEENTRY && svcs[i]->t.se &&
                svcs[i]->t.se->nports == 1) { /* a ServiceEntry host: its only port */
                port = svcs[i]->t.se->ports[0].number;
                break;
            }
        }
    }
    char *name =
        wf_cluster_name("outbound", port, d->subset && *d->subset ? d->subset : NULL, host);
    free(host);
    return name;
}

static int set_cluster(json_t *a, const vs_in *in, const wf_destination *d)
{
    char *c = dest_cluster(in, d);
    int rc = c ? json_object_set_new(a, "cluster", json_string(c)) : -1;
    free(c);
    return rc;
}

/* cluster, or weighted_clusters without the zero-weight destinations. */
static int destinations(json_t *a, const vs_in *in, const wf_route *r)
{
    if (r->ndest == 0)
        return 0;
    if (r->ndest == 1)
        return set_cluster(a, in, &r->dests[0].dest);
    json_t *cl = json_array();
    const wf_route_destination *only = &r->dests[0];
    for (size_t i = 0; cl && i < r->ndest; i++) {
        if (r->dests[i].weight <= 0)
            continue;
        char *c = dest_cluster(in, &r->dests[i].dest);
        json_t *w = c ? json_pack("{s:s,s:i}", "name", c, "weight", (int)r->dests[i].weight) : NULL;
        free(c);
        if (json_array_append_new(cl, w) != 0) {
            json_decref(cl);
            return -1;
        }
        only = &r->dests[i];
    }
    if (!cl)
        return -1;
    if (json_array_size(cl) <= 1) { /* one weighted cluster becomes a plain cluster */
        json_decref(cl);
        return set_cluster(a, in, &only->dest);
    }
    return json_object_set_new(a, "weighted_clusters", json_pack("{s:o}", "clusters", cl));
}

static int rewrite(json_t *a, const wf_node *rw)
{
    const char *uri = wf_map_str(rw, "uri"), *auth = wf_map_str(rw, "authority");
    if (uri && *uri && json_object_set_new(a, "prefix_rewrite", json_string(uri)) != 0)
        return -1;
    if (auth && *auth && json_object_set_new(a, "host_rewrite_literal", json_string(auth)) != 0)
        return -1;
    return 0;
}

static int regex_rewrite(json_t *a, const wf_node *rw)
{
    const wf_node *rr = wf_map_get(rw, "uriRegexRewrite");
    const char *m = wf_map_str(rr, "match"), *sub = wf_map_str(rr, "rewrite");
    if (!m)
        return 0;
    return json_object_set_new(
        a, "regex_rewrite",
        json_pack("{s:{s:s},s:s}", "pattern", "regex", m, "substitution", sub ? sub : ""));
}

static int mirror(json_t *a, const vs_in *in, const wf_route *r)
{
    if (!r->mirror.host)
        return 0;
    char *c = dest_cluster(in, &r->mirror);
    json_t *mp = NULL;
    int rc = c ? rds_mirror_policies(r->node, c, &mp) : -1;
    free(c);
    if (rc == 0 && mp)
        rc = json_object_set_new(a, "request_mirror_policies", mp);
    return rc;
}

/* applyHTTPRouteDestination + setTimeout: timeout and max_grpc_timeout both the
 * VirtualService timeout, "0s" when it has none (route.go: "Use deprecated value for now as the
 * replacement MaxStreamDuration has some regressions"). */
static json_t *route_action(const vs_in *in, const wf_route *r)
{
    json_t *a = json_object(), *retry = NULL;
    const wf_node *rw = wf_map_get(r->node, "rewrite");
    const wf_node *retries = wf_map_get(r->node, "retries");
    int64_t ns = 0;
    json_t *to = r->timeout && wf_go_duration(r->timeout, &ns, NULL) == 0 && ns >= 0
                     ? cds_duration(ns)
                     : json_string("0s");
    if (!a || !to || destinations(a, in, r) != 0 || rewrite(a, rw) != 0 ||
        json_object_set(a, "timeout", to) != 0 || json_object_set(a, "max_grpc_timeout", to) != 0 ||
        rds_retry_policy(retries ? retries : in->x->default_retries, &retry) != 0 ||
        (retry && json_object_set_new(a, "retry_policy", retry) != 0) || mirror(a, in, r) != 0 ||
        regex_rewrite(a, rw) != 0) {
        json_decref(a);
        a = NULL;
    }
    json_decref(to);
    return a;
}

static const char *redirect_code(int64_t code)
{
    switch (code) {
    case 302:
        return "FOUND";
    case 303:
        return "SEE_OTHER";
    case 307:
        return "TEMPORARY_REDIRECT";
    case 308:
        return "PERMANENT_REDIRECT";
    default:
        return NULL; /* 0, 301: MOVED_PERMANENTLY, the proto default */
    }
}

static int put_str(json_t *o, const char *key, const char *v)
{
    return v && *v ? json_object_set_new(o, key, json_string(v)) : 0;
}

/* applyRedirect */
static json_t *redirect(const vs_in *in, const wf_node *rd)
{
    json_t *o = json_object();
    int64_t code = 0, port = 0;
    wf_node_int(wf_map_get(rd, "redirectCode"), &code);
    const char *derive = wf_map_str(rd, "derivePort");
    if (derive && !strcmp(derive, "FROM_REQUEST_PORT"))
        port = in->port;
    else
        wf_node_int(wf_map_get(rd, "port"), &port);
    if (!o || put_str(o, "host_redirect", wf_map_str(rd, "authority")) != 0 ||
        put_str(o, "path_redirect", wf_map_str(rd, "uri")) != 0 ||
        put_str(o, "response_code", redirect_code(code)) != 0 ||
        put_str(o, "scheme_redirect", wf_map_str(rd, "scheme")) != 0 ||
        (port > 0 && json_object_set_new(o, "port_redirect", json_integer(port)) != 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* applyDirectResponse (a string body only). */
static json_t *direct_response(const wf_node *dr)
{
    int64_t status = 0;
    wf_node_int(wf_map_get(dr, "status"), &status);
    json_t *o = json_pack("{s:I}", "status", (json_int_t)status);
    const char *body = wf_map_str(wf_map_get(dr, "body"), "string");
    if (o && body && json_object_set_new(o, "body", json_pack("{s:s}", "inline_string", body))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int set_action(json_t *out, const vs_in *in, const wf_route *r)
{
    const wf_node *rd = wf_map_get(r->node, "redirect");
    const wf_node *dr = wf_map_get(r->node, "directResponse");
    if (rd)
        return json_object_set_new(out, "redirect", redirect(in, rd));
    if (dr)
        return json_object_set_new(out, "direct_response", direct_response(dr));
    return json_object_set_new(out, "route", route_action(in, r));
}

static int set_name(json_t *out, const wf_route *r, const wf_node *m)
{
    const char *rn = r->name ? r->name : "", *mn = wf_map_str(m, "name");
    if (mn && *mn)
        return json_object_set_new(out, "name", json_sprintf("%s.%s", rn, mn));
    return put_str(out, "name", rn);
}

/* translateRoute for one match (m NULL: the route has no match). */
static json_t *translate(const vs_in *in, const wf_route *r, const wf_node *m)
{
    json_t *out = json_object(), *fault = NULL;
    json_t *md = json_pack("{s:{s:{s:o}}}", "filter_metadata", "istio", "config",
                           json_sprintf(VS_CONFIG_PATH, in->vs->ns, in->vs->name));
    if (!out || json_object_set_new(out, "match", route_match(m)) != 0 ||
        set_action(out, in, r) != 0 || json_object_set_new(out, "metadata", md) != 0 ||
        rds_header_ops(out, wf_map_get(r->node, "headers")) != 0 ||
        rds_fault(wf_map_get(r->node, "fault"), &fault) != 0 ||
        (fault && json_object_set_new(out, "typed_per_filter_config", fault) != 0) ||
        set_name(out, r, m) != 0) {
        if (!out)
            json_decref(md);
        json_decref(out);
        return NULL;
    }
    return out;
}

int rds_vs_routes(const rds_ctx *x, const wf_resource *vs, int32_t port, json_t *routes)
{
    const vs_in in = {.x = x, .vs = vs, .port = port};
    bool catch_all = false;
    for (size_t i = 0; i < vs->t.vs->nhttp && !catch_all; i++) {
        const wf_route *r = &vs->t.vs->http[i];
        size_t nm = wf_seq_len(r->match);
        if (nm == 0) {
            catch_all = true;
            if (json_array_append_new(routes, translate(&in, r, NULL)) != 0)
                return -1;
        }
        for (size_t j = 0; j < nm && !catch_all; j++) {
            const wf_node *m = wf_seq_at(r->match, j);
            if (!match_applies(&in, m))
                continue;
            json_t *rt = translate(&in, r, m);
            if (json_array_append_new(routes, rt) != 0)
                return -1;
            catch_all = rds_catch_all_route(rt);
        }
    }
    return 0;
}
