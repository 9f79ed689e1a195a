/*
 * bootstrap_dynamic.c - decode the bootstrap's dynamic_resources (Envoy v3
 * envoy.config.bootstrap.v3.Bootstrap.DynamicResources) into wp_config.ads.
 *
 * Supported subset (anything else is an error naming its JSON path):
 *   dynamic_resources {
 *     ads_config {api_type GRPC | DELTA_GRPC, transport_api_version V3,
 *                 set_node_on_first_message_only,
 *                 grpc_services [exactly one {envoy_grpc {cluster_name}}]},
 *     cds_config {ads {}, initial_fetch_timeout, resource_api_version V3},
 *     lds_config {ads {}, initial_fetch_timeout, resource_api_version V3}}
 * This is what Istio's bootstrap writes (tools/packaging/common/envoy_bootstrap.json). The
 * named cluster must be a STATIC cluster of static_resources (Envoy: "must have a statically
 * defined non-EDS cluster") with at least one endpoint; the xDS client connects to its first
 * endpoint, which may be a socket_address (IP) or a `pipe` (Unix socket, Istio's
 * ./etc/istio/proxy/XDS). A pipe endpoint in any other cluster is refused: the data plane
 * connects over TCP only.
 *
 * api_type GRPC makes the xDS client speak StreamAggregatedResources (state of the world),
 * DELTA_GRPC (Istio's default since 1.22) DeltaAggregatedResources (xds_client.h).
 */
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"

#define ADS_SERVICE "envoy.service.discovery.v3.AggregatedDiscoveryService"

/* V3 only (Envoy removed V2; AUTO is V2's alias in old versions). */
static bool v3_only(bs *b, json_t *o, const char *k)
{
    static const char *const versions[] = {"V3", NULL};
    int v = 0;
    json_t *x = bs_get(o, k);
    if (json_is_string(x) && strcmp(json_string_value(x), "V3") != 0) {
        bs_fail_atf(b, k, "unsupported value \"%s\" (only V3 is supported)", json_string_value(x));
        return false;
    }
    return bs_enum(b, o, k, versions, &v);
}

static bool empty_object(bs *b, json_t *o, const char *k)
{
    json_t *v = bs_get(o, k);
    if (v && (!json_is_object(v) || json_object_size(v) != 0))
        return bs_fail_at(b, k, "only an empty object is supported");
    return true;
}

/* cds_config / lds_config: a ConfigSource that must say "ads". */
static bool dec_config_source(bs *b, json_t *o, void *arg)
{
    uint64_t *fetch_ms = arg;
    if (!bs_fields(b, o, "ads initial_fetch_timeout resource_api_version") ||
        !empty_object(b, o, "ads") || !bs_dur(b, o, "initial_fetch_timeout", fetch_ms, NULL) ||
        !v3_only(b, o, "resource_api_version"))
        return false;
    if (!bs_get(o, "ads"))
        return bs_fail_at(b, "ads",
                          "missing required field (weft takes CDS and LDS from ads_config only)");
    return true;
}

static bool dec_envoy_grpc(bs *b, json_t *o, void *arg)
{
    wp_ads_config *ads = arg;
    return bs_fields(b, o, "cluster_name") && bs_req_str(b, o, "cluster_name", &ads->cluster_name);
}

static bool dec_grpc_service(bs *b, json_t *o, void *arg)
{
    if (!bs_fields(b, o, "envoy_grpc google_grpc"))
        return false;
    if (bs_get(o, "google_grpc"))
        return bs_fail_at(b, "google_grpc", "unsupported (only envoy_grpc is supported)");
    if (!bs_get(o, "envoy_grpc"))
        return bs_fail_at(b, "envoy_grpc", "missing required field");
    return bs_sub(b, o, "envoy_grpc", dec_envoy_grpc, arg);
}

/* The ADS cluster: static, with an endpoint; its address is copied into ads. */
static bool resolve_cluster(bs *b, wp_ads_config *ads)
{
    int i = wp_config_find_cluster(b->c, ads->cluster_name);
    const wp_cluster *cl = i >= 0 ? &b->c->clusters[i] : NULL;
    if (!cl || cl->type != WP_CLUSTER_STATIC || cl->original_dst)
        return bs_fail(b,
                       ADS_SERVICE " must have a statically defined non-EDS cluster: '%s' does "
                                   "not exist, was added via api, or is an EDS cluster",
                       ads->cluster_name);
    if (cl->nendpoints == 0)
        return bs_fail(b, "cluster '%s' has no endpoints: the xDS client needs one",
                       ads->cluster_name);
    ads->cluster = i;
    ads->addr = cl->endpoints[0].addr;
    ads->connect_timeout_ms = cl->connect_timeout_ms;
    if (ads->addr.sa.ss_family == AF_UNIX)
        ads->pipe_path = cl->endpoints[0].hostname;
    return true;
}

static bool dec_ads_config(bs *b, json_t *o, void *arg)
{
    static const char *const apis[] = {"GRPC", "DELTA_GRPC", NULL};
    wp_ads_config *ads = arg;
    int api = 0;
    json_t *svcs = bs_get(o, "grpc_services");
    if (!bs_fields(b, o,
                   "api_type transport_api_version set_node_on_first_message_only "
                   "grpc_services") ||
        !bs_enum(b, o, "api_type", apis, &api) || !v3_only(b, o, "transport_api_version") ||
        !bs_bool(b, o, "set_node_on_first_message_only", &ads->set_node_on_first_message_only))
        return false;
    if (!bs_get(o, "api_type"))
        return bs_fail_at(b, "api_type", "missing required field");
    ads->api_type = (wp_ads_api)api;
    if (svcs && !json_is_array(svcs))
        return bs_fail_at(b, "grpc_services", "wrong type: expected an array");
    if (json_array_size(svcs) != 1)
        return bs_fail_at(b, "grpc_services",
                          "API configs must have a single gRPC service specified");
    json_t *svc = json_array_get(svcs, 0);
    size_t m = bs_push(b, "grpc_services");
    bs_push_i(b, 0);
    bool ok = json_is_object(svc) ? dec_grpc_service(b, svc, ads)
                                  : bs_fail(b, "wrong type: expected an object");
    bs_push(b, "envoy_grpc");
    bs_push(b, "cluster_name");
    ok = ok && resolve_cluster(b, ads);
    bs_pop(b, m);
    return ok;
}

/* A pipe endpoint outside the ADS cluster fails at the pipe's own path. */
static bool check_pipe(bs *b, const wp_ads_config *ads)
{
    if (!b->pipe_cluster || (ads && b->pipe_cluster == &b->c->clusters[ads->cluster]))
        return true;
    size_t m = b->plen;
    size_t n = strlen(b->pipe_at);
    if (n >= sizeof(b->path))
        n = sizeof(b->path) - 1;
    memcpy(b->path, b->pipe_at, n);
    b->path[n] = '\0';
    b->plen = n;
    bs_fail(b, "pipe addresses are only supported for the cluster named by "
               "dynamic_resources.ads_config (the xDS connection)");
    bs_pop(b, m);
    return false;
}

static bool dec_dynamic(bs *b, json_t *o, void *arg)
{
    wp_ads_config *ads = arg;
    ads->cds_initial_fetch_timeout_ms = ads->lds_initial_fetch_timeout_ms = 15000;
    ads->cluster = -1;
    if (!bs_fields(b, o, "ads_config cds_config lds_config") ||
        !bs_sub(b, o, "cds_config", dec_config_source, &ads->cds_initial_fetch_timeout_ms) ||
        !bs_sub(b, o, "lds_config", dec_config_source, &ads->lds_initial_fetch_timeout_ms))
        return false;
    ads->cds = bs_get(o, "cds_config") != NULL;
    ads->lds = bs_get(o, "lds_config") != NULL;
    if (!bs_get(o, "ads_config"))
        return (!ads->cds && !ads->lds) ||
               bs_fail_at(b, "ads_config",
                          "missing required field (cds_config / lds_config name ads)");
    return bs_sub(b, o, "ads_config", dec_ads_config, ads);
}

bool bs_dynamic_resources(bs *b, json_t *o)
{
    json_t *d = bs_get(o, "dynamic_resources");
    wp_ads_config *ads = NULL;
    if (d && (!json_is_object(d) || json_object_size(d) != 0)) {
        if (!(ads = bs_alloc(b, sizeof(*ads))) ||
            !bs_sub(b, o, "dynamic_resources", dec_dynamic, ads))
            return false;
        if (ads->cluster < 0)
            ads = NULL; /* no ads_config and no cds/lds: nothing dynamic */
    }
    b->c->ads = ads;
    return check_pipe(b, ads);
}
