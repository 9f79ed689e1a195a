/*
 * cds.c - a sidecar's clusters from Services and DestinationRules (see cds.h).
 */
#include "pilot/cds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/cds_internal.h"
#include "pilot/naming.h"

#define CLUSTER_TYPE   "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define HPO_NAME       "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define HPO_TYPE       "type.googleapis.com/" HPO_NAME
#define CONNECT_TO     "10s"           /* MeshConfig.connectTimeout default */
#define DEFAULT_LB     "LEAST_REQUEST" /* Istio >= 1.14 */
#define CB_MAX         ((json_int_t)4294967295LL)
#define DR_CONFIG_PATH "/apis/networking.istio.io/v1/namespaces/%s/destination-rule/%s"

typedef struct cds_ctx {
    const wf_store *s;
    const char *proxy_ns, *suffix, *root_ns;
    json_t *out;
} cds_ctx;

/* One cluster to build. */
typedef struct cl_in {
    const wf_resource *svc;
    const char *fqdn;
    int32_t port;
    const wf_resource *dr;   /* NULL when no DestinationRule applies */
    const wf_subset *subset; /* NULL for the default cluster */
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
        json_pack("{s:i,s:[{s:s,s:s,s:s}]}", "default_original_port", (int)in->port, "services",
                  "host", in->fqdn, "name", in->svc->name, "namespace", in->svc->ns);
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

static json_t *outbound_cluster_base(const char *name, const cl_in *in)
{
    char alt[1024];
    int n = snprintf(alt, sizeof alt, "%s;", name);
    if (n < 0 || (size_t)n >= sizeof alt)
        return NULL;
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:s,s:o,s:o}", "@type", CLUSTER_TYPE, "name", name,
                     "alt_stat_name", alt, "type", "EDS", "eds_cluster_config",
                     eds_cluster_config(name), "connect_timeout", CONNECT_TO, "lb_policy",
                     DEFAULT_LB, "circuit_breakers", cds_default_circuit_breakers(), "metadata",
                     istio_metadata(in));
}

static json_t *outbound_cluster(const cl_in *in)
{
    const char *subset = in->subset ? in->subset->name : NULL;
    char *name = wf_cluster_name("outbound", in->port, subset, in->fqdn);
    if (!name)
        return NULL;
    json_t *c = outbound_cluster_base(name, in);
    free(name);
    if (!c)
        return NULL;
    const wf_node *top = in->dr ? in->dr->t.dr->traffic_policy : NULL;
    const wf_node *sub = in->subset ? in->subset->traffic_policy : NULL;
    cds_policy p = cds_policy_resolve(top, sub, in->port);
    if (cds_policy_apply(c, &p) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

static int add_port(cds_ctx *x, cl_in *in)
{
    in->subset = NULL;
    if (json_array_append_new(x->out, outbound_cluster(in)) != 0)
        return -1;
    size_t nsub = in->dr ? in->dr->t.dr->nsubsets : 0;
    for (size_t i = 0; i < nsub; i++) {
        in->subset = &in->dr->t.dr->subsets[i];
        if (!in->subset->name || !*in->subset->name)
            continue;
        if (json_array_append_new(x->out, outbound_cluster(in)) != 0)
            return -1;
    }
    return 0;
}

/* Headless and ExternalName Services get other cluster types in Istio: not built here. */
static bool eds_service(const wf_service *svc)
{
    if (svc->type && strcmp(svc->type, "ExternalName") == 0)
        return false;
    return !(svc->cluster_ip && strcmp(svc->cluster_ip, "None") == 0);
}

static int add_service(cds_ctx *x, const wf_resource *r)
{
    const wf_service *svc = r->t.service;
    if (!svc || !eds_service(svc) || !r->name || !*r->name)
        return 0;
    char *fqdn = NULL;
    if (asprintf(&fqdn, "%s.%s.svc.%s", r->name, r->ns, x->suffix) < 0)
        return -1;
    cl_in in = {.svc = r, .fqdn = fqdn};
    in.dr = wf_cds_find_destinationrule(x->s, fqdn, r->ns, x->proxy_ns, x->root_ns, x->suffix);
    int rc = 0;
    for (size_t i = 0; i < svc->nports && rc == 0; i++) {
        const wf_service_port *sp = &svc->ports[i];
        if (sp->port <= 0 || sp->port > 65535 || (sp->protocol && !strcmp(sp->protocol, "UDP")))
            continue;
        in.port = sp->port;
        rc = add_port(x, &in);
    }
    free(fqdn);
    return rc;
}

/* Istio's buildBlackHoleCluster. */
static json_t *blackhole_cluster(void)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "@type", CLUSTER_TYPE, "name", WF_CLUSTER_BLACKHOLE,
                     "type", "STATIC", "connect_timeout", CONNECT_TO);
}

/* Istio's buildDefaultPassthroughCluster (without the metadata-exchange filters). */
static json_t *passthrough_cluster(void)
{
    json_t *hpo = json_pack("{s:{s:s,s:{s:{},s:{}}}}", HPO_NAME, "@type", HPO_TYPE,
                            "use_downstream_protocol_config", "http_protocol_options",
                            "http2_protocol_options");
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "@type", CLUSTER_TYPE, "name",
                     WF_CLUSTER_PASSTHROUGH, "type", "ORIGINAL_DST", "connect_timeout", CONNECT_TO,
                     "lb_policy", "CLUSTER_PROVIDED", "circuit_breakers",
                     cds_default_circuit_breakers(), "typed_extension_protocol_options", hpo);
}

static int add_all(cds_ctx *x)
{
    size_t n = 0;
    const wf_resource *const *svcs = wf_store_kind(x->s, WF_KIND_SERVICE, &n);
    for (size_t i = 0; i < n; i++)
        if (add_service(x, svcs[i]) != 0)
            return -1;
    if (json_array_append_new(x->out, blackhole_cluster()) != 0 ||
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
                 .out = json_array()};
    if (!x.out)
        return NULL;
    if (add_all(&x) != 0) {
        json_decref(x.out);
        return NULL;
    }
    return x.out;
}
