/*
 * cds.c - a sidecar's clusters from the registry (Services, ServiceEntries) and
 * DestinationRules (see cds.h).
 */
#include "pilot/cds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/protocol.h"
#include "pilot/cds_internal.h"
#include "pilot/eds.h"
#include "pilot/naming.h"
#include "pilot/tcp.h"

#define CLUSTER_TYPE   "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define HPO_NAME       "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define HPO_TYPE       "type.googleapis.com/" HPO_NAME
#define CONNECT_TO     "10s"           /* MeshConfig.connectTimeout default */
#define DEFAULT_LB     "LEAST_REQUEST" /* Istio >= 1.14 */
#define CB_MAX         ((json_int_t)4294967295LL)
#define DR_CONFIG_PATH "/apis/networking.istio.io/v1/namespaces/%s/destination-rule/%s"

#define DNS_REFRESH "60s"     /* MeshConfig.dnsRefreshRate default */
#define DNS_FAMILY  "V4_ONLY" /* Istio for a proxy whose addresses are all IPv4 */

typedef struct cds_ctx {
    const wf_store *s;
    const char *proxy_ns, *suffix, *root_ns, *trust_domain;
    bool auto_mtls;
    bool router;          /* a gateway: no use_downstream_protocol_config for sniffed ports */
    bool mesh_h2_upgrade; /* MeshConfig h2UpgradePolicy UPGRADE */
    json_t *out;
} cds_ctx;

/* One cluster to build. */
typedef struct cl_in {
    const wf_svc *svc;
    const wf_service_port *sp;
    const wf_resource *dr;   /* NULL when no DestinationRule applies */
    const wf_subset *subset; /* NULL for the default cluster */
    json_t *sans;            /* the service's accounts (cds_service_accounts) */
    bool mtls_disabled;      /* cds_service_mtls_disabled for the service */
} cl_in;

/* Istio's getDefaultCircuitBreakerThresholds. */
json_t *cds_default_circuit_breakers(void)
{
    return json_pack("{s:[{s:I,s:I,s:I,s:I,s:b}]}", "thresholds", "max_connections", CB_MAX,
                     "max_pending_requests", CB_MAX, "max_requests", CB_MAX, "max_retries", CB_MAX,
                     "track_remaining", 1);
}

static json_t *eds_cluster_config(const char *name)
{
    return json_pack("{s:{s:{},s:s,s:s},s:s}", "eds_config", "ads", "initial_fetch_timeout", "0s",
                     "resource_api_version", "V3", "service_name", name);
}

/* filter_metadata.istio of an outbound cluster. */
static json_t *istio_metadata(const cl_in *in)
{
    json_t *m =
        json_pack("{s:i,s:[{s:s,s:s,s:s}]}", "default_original_port", (int)in->sp->port, "services",
                  "host", in->svc->host, "name", in->svc->name, "namespace", in->svc->ns);
    if (!m)
        return NULL;
    if (in->dr && json_object_set_new(m, "config",
                                      json_sprintf(DR_CONFIG_PATH, in->dr->ns, in->dr->name)) != 0)
        goto fail;
    if (in->subset && json_object_set_new(m, "subset", json_string(in->subset->name)) != 0)
        goto fail;
    return json_pack("{s:{s:o}}", "filter_metadata", "istio", m);
fail:
    json_decref(m);
    return NULL;
}

static const char *cluster_type(wf_svc_resolution r)
{
    switch (r) {
    case WF_SVC_DNS:
        return "STRICT_DNS";
    case WF_SVC_DNS_RR:
        return "LOGICAL_DNS";
    case WF_SVC_NONE:
        return "ORIGINAL_DST";
    default:
        return "EDS";
    }
}

static json_t *outbound_cluster_base(const char *name, const cl_in *in)
{
    char alt[1024];
    int n = snprintf(alt, sizeof alt, "%s;", name);
    if (n < 0 || (size_t)n >= sizeof alt)
        return NULL;
    json_t *c = json_pack("{s:s,s:s,s:s,s:s}", "@type", CLUSTER_TYPE, "name", name, "alt_stat_name",
                          alt, "type", cluster_type(in->svc->resolution));
    if (c && in->svc->resolution == WF_SVC_EDS &&
        json_object_set_new(c, "eds_cluster_config", eds_cluster_config(name)) != 0)
        goto fail;
    json_t *rest =
        c ? json_pack("{s:s,s:s,s:o,s:o}", "connect_timeout", CONNECT_TO, "lb_policy",
                      in->svc->resolution == WF_SVC_NONE ? "CLUSTER_PROVIDED" : DEFAULT_LB,
                      "circuit_breakers", cds_default_circuit_breakers(), "metadata",
                      istio_metadata(in))
          : NULL;
    if (!rest || json_object_update(c, rest) != 0) {
        json_decref(rest);
        goto fail;
    }
    json_decref(rest);
    return c;
fail:
    json_decref(c);
    return NULL;
}

/* Istio's STRICT_DNS / LOGICAL_DNS fields: the endpoints inline. Returns 1 done, 0 when there
 * is no endpoint (Istio builds no cluster then), -1 on OOM. */
static int add_dns(const cds_ctx *x, json_t *c, const cl_in *in, const char *name)
{
    json_t *eps =
        wf_eds_locality_endpoints(x->s, x->root_ns, in->svc, in->sp, in->dr, in->subset, true);
    if (!eps)
        return -1;
    if (json_array_size(eps) == 0) {
        json_decref(eps);
        return 0;
    }
    json_t *la = json_pack("{s:s,s:o}", "cluster_name", name, "endpoints", eps);
    if (!la || json_object_set_new(c, "load_assignment", la) != 0 ||
        json_object_set_new(c, "dns_refresh_rate", json_string(DNS_REFRESH)) != 0 ||
        json_object_set_new(c, "dns_lookup_family", json_string(DNS_FAMILY)) != 0)
        return -1;
    return 1;
}

/* The cluster's upstream TLS (cds_tls.c); the ISTIO_MUTUAL SNI is Istio's BuildDNSSrvSubsetKey
 * outbound_.<port>_.<subset>_.<host>. */
static int apply_tls(const cds_ctx *x, json_t *c, const cl_in *in, const char *name,
                     const wf_node *tls)
{
    char sni[1024];
    int n = snprintf(sni, sizeof sni, "outbound_.%d_.%s_.%s", (int)in->sp->port,
                     in->subset ? in->subset->name : "", in->svc->host);
    if (n < 0 || (size_t)n >= sizeof sni)
        return 0; /* no such long host in a valid config: no TLS rather than a cut name */
    const char *loc = in->svc->is_se ? in->svc->res->t.se->location : NULL;
    const cds_tls_in t = {
        .tls = tls,
        .name = name,
        .sni = sni,
        .sans = in->sans,
        .auto_mtls = x->auto_mtls,
        .mesh_external = in->svc->is_se && (!loc || strcmp(loc, "MESH_INTERNAL") != 0),
        .original_dst = in->svc->resolution == WF_SVC_NONE,
        .se_registry = in->svc->is_se,
        .mtls_disabled = in->mtls_disabled,
        .h2 = cds_is_h2(c),
    };
    return cds_tls_apply(c, &t);
}

static wf_protocol port_protocol(const wf_service_port *sp)
{
    return wf_protocol_of_kube_port(sp->port, sp->name, sp->protocol, sp->app_protocol);
}

/* Istio's IsHTTP2: HTTP2, GRPC, GRPC-Web. */
static bool http2_protocol(wf_protocol p)
{
    return p == WF_PROTO_HTTP2 || p == WF_PROTO_GRPC || p == WF_PROTO_GRPC_WEB;
}

/* setUpstreamProtocol (before the traffic policy): HTTP/2-class ports speak h2 to the upstream;
 * a sniffed port on a sidecar copies the downstream protocol (gateways stay HTTP/1.1). */
static int upstream_protocol(const cds_ctx *x, json_t *c, const wf_service_port *sp)
{
    wf_protocol p = port_protocol(sp);
    if (http2_protocol(p))
        return cds_set_h2(c);
    if (p == WF_PROTO_UNSUPPORTED && !x->router)
        return cds_set_use_downstream(c);
    return 0;
}

/* applyH2Upgrade (outbound clusters, after the connection pool). */
static int h2_upgrade(const cds_ctx *x, json_t *c, const wf_service_port *sp, const wf_node *pool)
{
    if (!cds_should_h2_upgrade(pool, wf_protocol_is_http(port_protocol(sp)), x->mesh_h2_upgrade))
        return 0;
    return cds_set_h2(c);
}

/* The cluster of in, NULL when it has none to build; *oom set on OOM. */
static json_t *outbound_cluster(const cds_ctx *x, const cl_in *in, bool *oom)
{
    const char *subset = in->subset ? in->subset->name : NULL;
    char *name = wf_cluster_name("outbound", in->sp->port, subset, in->svc->host);
    json_t *c = name ? outbound_cluster_base(name, in) : NULL;
    int rc = c ? 1 : -1;
    bool dns = in->svc->resolution == WF_SVC_DNS || in->svc->resolution == WF_SVC_DNS_RR;
    if (c && dns)
        rc = add_dns(x, c, in, name);
    if (rc > 0) {
        const wf_node *top = in->dr ? in->dr->t.dr->traffic_policy : NULL;
        const wf_node *sub = in->subset ? in->subset->traffic_policy : NULL;
        cds_policy p = cds_policy_resolve(top, sub, in->sp->port);
        rc = upstream_protocol(x, c, in->sp) == 0 && cds_policy_apply(c, &p) == 0 &&
                     h2_upgrade(x, c, in->sp, p.pool) == 0 && cds_finish_protocol(c) == 0 &&
                     apply_tls(x, c, in, name, p.tls) == 0
                 ? 1
                 : -1;
    }
    free(name);
    if (rc > 0 && in->svc->resolution == WF_SVC_NONE) /* applyLoadBalancer: ORIGINAL_DST */
        rc = json_object_set_new(c, "lb_policy", json_string("CLUSTER_PROVIDED")) == 0 ? 1 : -1;
    if (rc > 0) /* applyMetadataExchange: every outbound cluster and subset cluster */
        rc = json_object_set_new(c, "filters", wf_tcp_cluster_mx()) == 0 ? 1 : -1;
    if (rc > 0)
        return c;
    json_decref(c);
    *oom = rc < 0;
    return NULL;
}

static int append_cluster(const cds_ctx *x, const cl_in *in)
{
    bool oom = false;
    json_t *c = outbound_cluster(x, in, &oom);
    if (oom)
        return -1;
    return c ? json_array_append_new(x->out, c) : 0;
}

static int add_port(cds_ctx *x, cl_in *in)
{
    in->subset = NULL;
    if (append_cluster(x, in) != 0)
        return -1;
    size_t nsub = in->dr ? in->dr->t.dr->nsubsets : 0;
    for (size_t i = 0; i < nsub; i++) {
        in->subset = &in->dr->t.dr->subsets[i];
        if (!in->subset->name || !*in->subset->name)
            continue;
        if (append_cluster(x, in) != 0)
            return -1;
    }
    return 0;
}

static int add_service(cds_ctx *x, const wf_svc *svc)
{
    cl_in in = {.svc = svc, .sans = cds_service_accounts(x->s, svc, x->trust_domain)};
    if (!in.sans)
        return -1;
    in.mtls_disabled = cds_service_mtls_disabled(x->s, x->root_ns, svc->ns);
    in.dr =
        wf_cds_find_destinationrule(x->s, svc->host, svc->ns, x->proxy_ns, x->root_ns, x->suffix);
    int rc = 0;
    for (size_t i = 0; i < svc->nports && rc == 0; i++) {
        const wf_service_port *sp = &svc->ports[i];
        if (sp->port <= 0 || sp->port > 65535 || (sp->protocol && !strcmp(sp->protocol, "UDP")))
            continue;
        in.sp = sp;
        rc = add_port(x, &in);
    }
    json_decref(in.sans);
    return rc;
}

/* Istio's buildBlackHoleCluster. */
static json_t *blackhole_cluster(void)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "@type", CLUSTER_TYPE, "name", WF_CLUSTER_BLACKHOLE,
                     "type", "STATIC", "connect_timeout", CONNECT_TO);
}

/* Istio's buildDefaultPassthroughCluster (applyMetadataExchange included). */
static json_t *passthrough_cluster(void)
{
    json_t *hpo = json_pack("{s:{s:s,s:{s:{},s:{}}}}", HPO_NAME, "@type", HPO_TYPE,
                            "use_downstream_protocol_config", "http_protocol_options",
                            "http2_protocol_options");
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:o}", "@type", CLUSTER_TYPE, "name",
                     WF_CLUSTER_PASSTHROUGH, "type", "ORIGINAL_DST", "connect_timeout", CONNECT_TO,
                     "lb_policy", "CLUSTER_PROVIDED", "circuit_breakers",
                     cds_default_circuit_breakers(), "typed_extension_protocol_options", hpo,
                     "filters", wf_tcp_cluster_mx());
}

static int add_all(cds_ctx *x, const wf_scope *scope)
{
    const wf_svc_view v = {.proxy_ns = x->proxy_ns, .suffix = x->suffix, .scope = scope};
    wf_svcs svcs;
    if (wf_svcs_collect(x->s, &v, &svcs) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < svcs.n && rc == 0; i++)
        rc = add_service(x, &svcs.v[i]);
    wf_svcs_free(&svcs);
    if (rc != 0 || json_array_append_new(x->out, blackhole_cluster()) != 0 ||
        json_array_append_new(x->out, passthrough_cluster()) != 0)
        return -1;
    return 0;
}

json_t *wf_cds_sidecar_clusters(const wf_store *store, const wf_cds_options *opt)
{
    if (!store)
        return NULL;
    static const wf_cds_options none = {0};
    if (!opt)
        opt = &none;
    cds_ctx x = {.s = store,
                 .proxy_ns = opt->proxy_ns && *opt->proxy_ns ? opt->proxy_ns : NULL,
                 .suffix = opt->domain_suffix ? opt->domain_suffix : wf_store_domain_suffix(store),
                 .root_ns = opt->root_namespace ? opt->root_namespace : WF_CDS_ROOT_NAMESPACE,
                 .trust_domain = opt->trust_domain,
                 .auto_mtls = !opt->disable_auto_mtls,
                 .router = opt->router,
                 .mesh_h2_upgrade = opt->mesh_h2_upgrade,
                 .out = json_array()};
    if (!x.out)
        return NULL;
    if (add_all(&x, opt->scope) != 0) {
        json_decref(x.out);
        return NULL;
    }
    return x.out;
}
