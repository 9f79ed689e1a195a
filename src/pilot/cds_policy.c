/*
 * cds_policy.c - DestinationRule lookup and trafficPolicy translation for cds.c (see cds.h
 * for the Istio behaviour followed).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/gofmt.h"
#include "pilot/cds.h"
#include "pilot/cds_internal.h"

#define HPO_NAME "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define HPO_TYPE "type.googleapis.com/" HPO_NAME

/* ---------- DestinationRule lookup ---------- */

/* How well DR host h (resolved in namespace ns) matches fqdn: 0 none, else higher is more
 * specific (an exact match beats every wildcard; longer wildcards beat shorter). */
static size_t host_score(const char *h, const char *ns, const char *fqdn, const char *suffix)
{
    char buf[512];
    if (!h || !*h)
        return 0;
    if (strcmp(h, "*") != 0 && !strchr(h, '.')) {
        int n = snprintf(buf, sizeof buf, "%s.%s.svc.%s", h, ns, suffix);
        if (n < 0 || (size_t)n >= sizeof buf)
            return 0;
        h = buf;
    }
    if (strcmp(h, fqdn) == 0)
        return SIZE_MAX;
    if (h[0] != '*')
        return 0;
    size_t hl = strlen(h + 1), fl = strlen(fqdn);
    return fl >= hl && strcmp(fqdn + fl - hl, h + 1) == 0 ? hl + 1 : 0;
}

static bool exported_to(const wf_resource *r, const char *proxy_ns)
{
    const wf_strs *e = &r->t.dr->export_to;
    if (e->n == 0)
        return true;
    for (size_t i = 0; i < e->n; i++) {
        const char *v = e->v[i];
        if (strcmp(v, "*") == 0 || (proxy_ns && strcmp(v, proxy_ns) == 0) ||
            (proxy_ns && strcmp(v, ".") == 0 && strcmp(r->ns, proxy_ns) == 0))
            return true;
    }
    return false;
}

/* The best-matching rule in namespace ns; when check_export, only rules exported to
 * proxy_ns. */
static const wf_resource *best_in_ns(const wf_store *s, const char *ns, const char *fqdn,
                                     const char *proxy_ns, bool check_export, const char *suffix)
{
    size_t n = 0, best_score = 0;
    const wf_resource *const *rs = wf_store_kind_ns(s, WF_KIND_DESTINATIONRULE, ns, &n);
    const wf_resource *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const wf_resource *r = rs[i];
        if (!r->t.dr || r->t.dr->has_workload_selector)
            continue;
        if (check_export && !exported_to(r, proxy_ns))
            continue;
        size_t sc = host_score(r->t.dr->host, r->ns, fqdn, suffix);
        if (sc > best_score) {
            best = r;
            best_score = sc;
        }
    }
    return best;
}

const wf_resource *wf_cds_find_destinationrule(const wf_store *store, const char *fqdn,
                                               const char *svc_ns, const char *proxy_ns,
                                               const char *root_ns, const char *domain_suffix)
{
    if (!store || !fqdn)
        return NULL;
    const char *suffix = domain_suffix ? domain_suffix : wf_store_domain_suffix(store);
    const char *root = root_ns ? root_ns : WF_CDS_ROOT_NAMESPACE;
    if (proxy_ns && !*proxy_ns)
        proxy_ns = NULL;
    const wf_resource *r = NULL;
    if (proxy_ns)
        r = best_in_ns(store, proxy_ns, fqdn, proxy_ns, false, suffix);
    if (!r && svc_ns && *svc_ns)
        r = best_in_ns(store, svc_ns, fqdn, proxy_ns, true, suffix);
    if (!r)
        r = best_in_ns(store, root, fqdn, proxy_ns, true, suffix);
    return r;
}

/* ---------- merge ---------- */

static void port_override(cds_policy *p, const wf_node *tp, int32_t port)
{
    const wf_node *pls = wf_map_get(tp, "portLevelSettings");
    for (size_t i = 0; i < wf_seq_len(pls); i++) {
        const wf_node *e = wf_seq_at(pls, i);
        int64_t num = 0;
        if (wf_node_int(wf_node_path(e, "port.number"), &num) && num == port) {
            p->pool = wf_map_get(e, "connectionPool");
            p->lb = wf_map_get(e, "loadBalancer");
            p->outlier = wf_map_get(e, "outlierDetection");
            p->tls = wf_map_get(e, "tls");
            return;
        }
    }
}

cds_policy cds_policy_resolve(const wf_node *top, const wf_node *subset_tp, int32_t port)
{
    cds_policy p = {wf_map_get(top, "connectionPool"), wf_map_get(top, "loadBalancer"),
                    wf_map_get(top, "outlierDetection"), wf_map_get(top, "tls")};
    port_override(&p, top, port);
    if (!subset_tp)
        return p;
    const wf_node *v;
    if ((v = wf_map_get(subset_tp, "connectionPool")))
        p.pool = v;
    if ((v = wf_map_get(subset_tp, "loadBalancer")))
        p.lb = v;
    if ((v = wf_map_get(subset_tp, "outlierDetection")))
        p.outlier = v;
    if ((v = wf_map_get(subset_tp, "tls")))
        p.tls = v;
    port_override(&p, subset_tp, port);
    return p;
}

/* ---------- values ---------- */

json_t *cds_duration(int64_t ns)
{
    char buf[48];
    int64_t sec = ns / 1000000000, frac = ns % 1000000000;
    if (frac == 0)
        snprintf(buf, sizeof buf, "%" PRId64 "s", sec);
    else if (frac % 1000000 == 0)
        snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64 "s", sec, frac / 1000000);
    else if (frac % 1000 == 0)
        snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64 "s", sec, frac / 1000);
    else
        snprintf(buf, sizeof buf, "%" PRId64 ".%09" PRId64 "s", sec, frac);
    return json_string(buf);
}

/* Integer at key in [lo, 4294967295]; false when absent, not an integer or out of range. */
static bool get_u32(const wf_node *m, const char *key, int64_t lo, int64_t *out)
{
    return wf_node_int(wf_map_get(m, key), out) && *out >= lo && *out <= (int64_t)UINT32_MAX;
}

/* Set key to the duration at src_key, when it parses and is not negative. */
static int put_duration(json_t *dst, const char *key, const wf_node *m, const char *src_key)
{
    const char *s = wf_map_str(m, src_key);
    int64_t ns = 0;
    if (!s || wf_go_duration(s, &ns, NULL) != 0 || ns < 0)
        return 0;
    return json_object_set_new(dst, key, cds_duration(ns));
}

/* Set dst[key] to the integer at src_key when it is > 0 (Istio's `if x > 0`). */
static int put_positive(json_t *dst, const char *key, const wf_node *m, const char *src_key)
{
    int64_t v = 0;
    if (!get_u32(m, src_key, 1, &v))
        return 0;
    return json_object_set_new(dst, key, json_integer(v));
}

/* ---------- loadBalancer ---------- */

static int apply_lb(json_t *c, const wf_node *lb)
{
    const char *simple = wf_map_str(lb, "simple");
    if (simple && strcmp(simple, "ROUND_ROBIN") == 0) {
        json_object_del(c, "lb_policy"); /* Envoy's default enum value */
        return 0;
    }
    if (simple && strcmp(simple, "RANDOM") == 0)
        return json_object_set_new(c, "lb_policy", json_string("RANDOM"));
    return 0; /* LEAST_REQUEST, LEAST_CONN, unset: the default already written */
}

/* ---------- connectionPool ---------- */

/* The cluster's envoy.extensions.upstreams.http.v3.HttpProtocolOptions, created on first use. */
static json_t *hpo_of(json_t *c)
{
    json_t *teo = json_object_get(c, "typed_extension_protocol_options");
    if (!teo && json_object_set_new(c, "typed_extension_protocol_options", json_object()) != 0)
        return NULL;
    teo = json_object_get(c, "typed_extension_protocol_options");
    json_t *hpo = json_object_get(teo, HPO_NAME);
    if (!hpo) {
        if (json_object_set_new(teo, HPO_NAME, json_object()) != 0)
            return NULL;
        hpo = json_object_get(teo, HPO_NAME);
        if (json_object_set_new(hpo, "@type", json_string(HPO_TYPE)) != 0)
            return NULL;
    }
    return hpo;
}

/* The HttpProtocolOptions' common_http_protocol_options, created on first use. */
static json_t *common_http(json_t *c)
{
    json_t *hpo = hpo_of(c);
    if (!hpo)
        return NULL;
    json_t *chpo = json_object_get(hpo, "common_http_protocol_options");
    if (chpo)
        return chpo;
    if (json_object_set_new(hpo, "common_http_protocol_options", json_object()) != 0)
        return NULL;
    return json_object_get(hpo, "common_http_protocol_options");
}

/* The explicit HTTP/2 options when the cluster has them (Istio's isHttp2Cluster), else NULL. */
static json_t *explicit_h2(json_t *c)
{
    json_t *hpo = json_object_get(json_object_get(c, "typed_extension_protocol_options"), HPO_NAME);
    return json_object_get(json_object_get(hpo, "explicit_http_config"), "http2_protocol_options");
}

bool cds_is_h2(const json_t *c)
{
    return explicit_h2((json_t *)c) != NULL;
}

int cds_set_h2(json_t *c)
{
    json_t *hpo = hpo_of(c);
    if (!hpo)
        return -1;
    json_object_del(hpo, "use_downstream_protocol_config");
    return json_object_set_new(hpo, "explicit_http_config",
                               json_pack("{s:{}}", "http2_protocol_options"));
}

int cds_set_use_downstream(json_t *c)
{
    json_t *hpo = hpo_of(c);
    if (!hpo)
        return -1;
    /* the explicit HTTP/1 options are inherited (Istio's setUseDownstreamProtocol) */
    json_t *h1 =
        json_object_get(json_object_get(hpo, "explicit_http_config"), "http_protocol_options");
    json_t *udp = json_pack("{s:o,s:{}}", "http_protocol_options",
                            h1 ? json_deep_copy(h1) : json_object(), "http2_protocol_options");
    if (!udp)
        return -1;
    json_object_del(hpo, "explicit_http_config");
    return json_object_set_new(hpo, "use_downstream_protocol_config", udp);
}

int cds_finish_protocol(json_t *c)
{
    json_t *hpo = json_object_get(json_object_get(c, "typed_extension_protocol_options"), HPO_NAME);
    if (!hpo)
        return 0;
    if (!json_object_get(hpo, "explicit_http_config") &&
        !json_object_get(hpo, "use_downstream_protocol_config") &&
        json_object_set_new(hpo, "explicit_http_config",
                            json_pack("{s:{}}", "http_protocol_options")) != 0)
        return -1;
    /* Envoy's field order: @type, common_http_protocol_options, then the protocol choice */
    static const char *const order[] = {"@type", "common_http_protocol_options",
                                        "explicit_http_config", "use_downstream_protocol_config"};
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof order / sizeof order[0]; i++) {
        json_t *v = json_object_get(hpo, order[i]);
        if (v && json_object_set(o, order[i], v) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    if (!o)
        return -1;
    return json_object_set_new(json_object_get(c, "typed_extension_protocol_options"), HPO_NAME, o);
}

bool cds_should_h2_upgrade(const wf_node *pool, bool http_port, bool mesh_upgrade)
{
    const wf_node *http = wf_map_get(pool, "http");
    bool client = false;
    if (wf_node_bool(wf_map_get(http, "useClientProtocol"), &client) && client)
        return false;
    const char *policy = wf_map_str(http, "h2UpgradePolicy");
    if (policy && strcmp(policy, "UPGRADE") == 0)
        return true; /* even on a port that is not HTTP (a sniffed one) */
    if (policy && strcmp(policy, "DO_NOT_UPGRADE") == 0)
        return false;
    return http_port && mesh_upgrade;
}

static int apply_http_options(json_t *c, const wf_node *http)
{
    int64_t v = 0, streams = 0;
    bool mrpc = get_u32(http, "maxRequestsPerConnection", 1, &v);
    bool mcs = get_u32(http, "maxConcurrentStreams", 1, &streams);
    const char *idle = wf_map_str(http, "idleTimeout");
    bool client = false;
    int rc = 0;
    if (mrpc || idle || mcs) {
        json_t *chpo = common_http(c);
        if (!chpo)
            return -1;
        if (mrpc && json_object_set_new(chpo, "max_requests_per_connection", json_integer(v)) != 0)
            return -1;
        rc = put_duration(chpo, "idle_timeout", http, "idleTimeout");
        json_t *h2 = explicit_h2(c);
        if (rc == 0 && mcs && h2)
            rc = json_object_set_new(h2, "max_concurrent_streams", json_integer(streams));
    }
    if (rc == 0 && wf_node_bool(wf_map_get(http, "useClientProtocol"), &client) && client)
        rc = cds_set_use_downstream(c);
    return rc;
}

static int apply_pool(json_t *c, const wf_node *pool)
{
    json_t *th =
        json_array_get(json_object_get(json_object_get(c, "circuit_breakers"), "thresholds"), 0);
    const wf_node *tcp = wf_map_get(pool, "tcp"), *http = wf_map_get(pool, "http");
    if (!th)
        return -1;
    if (put_positive(th, "max_connections", tcp, "maxConnections") != 0 ||
        put_duration(c, "connect_timeout", tcp, "connectTimeout") != 0 ||
        put_positive(th, "max_pending_requests", http, "http1MaxPendingRequests") != 0 ||
        put_positive(th, "max_requests", http, "http2MaxRequests") != 0 ||
        put_positive(th, "max_retries", http, "maxRetries") != 0)
        return -1;
    return apply_http_options(c, http);
}

/* ---------- outlierDetection ---------- */

/* consecutive_<x> from src_key with its enforcing_ field (100 when > 0, else 0). */
static int put_consecutive(json_t *od, const char *key, const char *enforcing, const wf_node *o,
                           const char *src_key)
{
    int64_t v = 0;
    if (!get_u32(o, src_key, 0, &v))
        return 0;
    if (json_object_set_new(od, key, json_integer(v)) != 0)
        return -1;
    return json_object_set_new(od, enforcing, json_integer(v > 0 ? 100 : 0));
}

static int apply_panic_threshold(json_t *c, const wf_node *o)
{
    int64_t v = 0;
    json_t *pct = json_object();
    if (!pct)
        return -1;
    if (wf_node_int(wf_map_get(o, "minHealthPercent"), &v) && v > 0 && v <= 100 &&
        json_object_set_new(pct, "value", json_integer(v)) != 0) {
        json_decref(pct);
        return -1;
    }
    json_t *lbc = json_object(); /* set_new below releases pct on any failure */
    if (json_object_set_new(lbc, "healthy_panic_threshold", pct) != 0) {
        json_decref(lbc);
        return -1;
    }
    return json_object_set_new(c, "common_lb_config", lbc);
}

static int apply_outlier(json_t *c, const wf_node *o)
{
    json_t *od = json_object();
    if (!od || json_object_set_new(c, "outlier_detection", od) != 0)
        return -1;
    if (json_object_set_new(od, "enforcing_success_rate", json_integer(0)) != 0 ||
        put_consecutive(od, "consecutive_5xx", "enforcing_consecutive_5xx", o,
                        "consecutive5xxErrors") != 0 ||
        put_consecutive(od, "consecutive_gateway_failure", "enforcing_consecutive_gateway_failure",
                        o, "consecutiveGatewayErrors") != 0 ||
        put_duration(od, "interval", o, "interval") != 0 ||
        put_duration(od, "base_ejection_time", o, "baseEjectionTime") != 0 ||
        put_positive(od, "max_ejection_percent", o, "maxEjectionPercent") != 0)
        return -1;
    return apply_panic_threshold(c, o);
}

int cds_policy_apply(json_t *c, const cds_policy *p)
{
    if (p->lb && apply_lb(c, p->lb) != 0)
        return -1;
    if (p->pool && apply_pool(c, p->pool) != 0)
        return -1;
    if (p->outlier && apply_outlier(c, p->outlier) != 0)
        return -1;
    return 0;
}
