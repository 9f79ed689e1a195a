/*
 * fuzz_xds_compose.c - libFuzzer target for the xDS resource path of weft-proxy: resources
 * as a DiscoveryResponse delivers them, composed into an effective bootstrap
 * (proxy/bootstrap/xds_compose.h) and decoded by the bootstrap loader (proxy/bootstrap/bootstrap.h), as
 * the xDS client does on every update (xds_client_sotw.c).
 *
 * Input: a JSON object {"CDS": [Cluster...], "LDS": [Listener...], "RDS":
 * [RouteConfiguration...], "EDS": [ClusterLoadAssignment...], "placeholder_routes": bool}
 * (every member optional). Resources are kept by wp_xds_resource_name, the first of a name
 * wins, nameless ones are dropped (the client NACKs those before composing). The base
 * bootstrap is fixed: a node, the xds-grpc cluster and ADS dynamic_resources.
 *
 * Checks besides crashes and leaks: a compose or load failure always has a message; a
 * loader error is traced back with wp_xds_locate_error and the NACK text built from it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/bootstrap/bootstrap.h"
#include "proxy/config/config.h"
#include "proxy/bootstrap/xds_compose.h"
#include "xds/discovery.h"

static const char base_text[] =
    "{\"node\":{\"id\":\"p.ns\"},\"static_resources\":{\"clusters\":[{\"name\":\"xds-grpc\","
    "\"type\":\"STATIC\",\"connect_timeout\":\"1s\",\"load_assignment\":{\"cluster_name\":"
    "\"xds-grpc\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
    "\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":15010}}}}]}]}}]},"
    "\"dynamic_resources\":{\"ads_config\":{\"api_type\":\"GRPC\",\"transport_api_version\":"
    "\"V3\",\"grpc_services\":[{\"envoy_grpc\":{\"cluster_name\":\"xds-grpc\"}}]},"
    "\"cds_config\":{\"ads\":{},\"resource_api_version\":\"V3\"},\"lds_config\":{\"ads\":{},"
    "\"resource_api_version\":\"V3\"}}}";

static const char *const type_keys[WF_XDS_NTYPES] = {
    [WF_XDS_CDS] = "CDS", [WF_XDS_LDS] = "LDS", [WF_XDS_RDS] = "RDS", [WF_XDS_EDS] = "EDS"};

/* The accepted set of type t from the array arr (name -> entry), NULL when none. */
static json_t *make_set(int t, const json_t *arr)
{
    if (!json_is_array(arr))
        return NULL;
    json_t *set = json_object();
    if (!set)
        return NULL;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *r = json_array_get(arr, i);
        const char *name = wp_xds_resource_name(t, r);
        if (!name || json_object_get(set, name))
            continue;
        json_t *e = json_pack("{s:O,s:s,s:s}", "resource", r, "version_info", "v1", "last_updated",
                              "2024-05-01T10:00:00.000Z");
        if (!e || json_object_set_new(set, name, e) != 0)
            break;
    }
    return set;
}

static void load_effective(const wp_xds_dynamic *dyn, json_t *eff)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wp_bootstrap_load(eff, "xds", &err);
    if (c) {
        wp_config_unref(c);
    } else {
        if (err.len == 0)
            abort();
        char name[256];
        wf_strbuf reason = WF_STRBUF_INIT, nack = WF_STRBUF_INIT;
        int t =
            wp_xds_locate_error(dyn, eff, "xds", wf_strbuf_cstr(&err), name, sizeof name, &reason);
        if (memchr(name, '\0', sizeof name) == NULL)
            abort();
        wp_xds_nack_text(t, t >= 0 ? name : "", wf_strbuf_cstr(&reason), &nack);
        wf_strbuf_free(&reason);
        wf_strbuf_free(&nack);
    }
    wf_strbuf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!in)
        return 0;
    json_t *base_root = json_loads(base_text, 0, &je);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *base = base_root ? wp_bootstrap_load(base_root, "base", &err) : NULL;
    json_decref(base_root);
    if (!base)
        abort(); /* the fixed base must load */
    wp_xds_resources res = {0};
    res.placeholder_routes = json_is_true(json_object_get(in, "placeholder_routes"));
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        if (type_keys[t]) {
            res.set[t] = make_set(t, json_object_get(in, type_keys[t]));
            res.version[t] = res.set[t] ? "v1" : NULL;
        }
    }
    json_t *eff = NULL;
    wp_xds_dynamic dyn;
    int bad_type = -1;
    char bad_name[256];
    if (wp_xds_compose(base->bootstrap, &res, &eff, &dyn, &err, &bad_type, bad_name) == 0) {
        if (!eff)
            abort();
        load_effective(&dyn, eff);
        json_decref(eff);
        wp_xds_dynamic_free(&dyn);
    } else if (eff || err.len == 0 || memchr(bad_name, '\0', sizeof bad_name) == NULL) {
        abort();
    }
    for (int t = 0; t < WF_XDS_NTYPES; t++)
        json_decref(res.set[t]);
    wf_strbuf_free(&err);
    wp_config_unref(base);
    json_decref(in);
    return 0;
}
