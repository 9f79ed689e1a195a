/*
 * sniff.c - Istio's protocol sniffing on a sidecar's listeners (see sniff.h).
 */
#include "pilot/sniff.h"

#include <stdint.h>
#include <string.h>

#include "core/gofmt.h"
#include "pilot/cds_internal.h"
#include "pilot/naming.h"
#include "pilot/tcp.h"

#define HI_TYPE                                                                                    \
    "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector"

json_t *wf_sniff_http_inspector(void)
{
    return json_pack("{s:s,s:{s:s}}", "name", WF_SNIFF_HTTP_INSPECTOR, "typed_config", "@type",
                     HI_TYPE);
}

json_t *wf_sniff_http_match(void)
{
    return json_pack("{s:s,s:[s,s]}", "transport_protocol", "raw_buffer", "application_protocols",
                     "http/1.1", "h2c");
}

json_t *wf_sniff_timeout(const wf_meshcfg *mesh)
{
    const char *s = mesh ? wf_meshcfg_str(mesh, "protocolDetectionTimeout") : NULL;
    int64_t ns = 0;
    if (!s || wf_go_duration(s, &ns, NULL) != 0 || ns < 0)
        ns = 0;
    return cds_duration(ns);
}

/* Istio's PassthroughFilterChain (buildOutboundCatchAllNetworkFiltersOnly). */
static json_t *passthrough_chain(bool registry_only)
{
    const char *cl = registry_only ? WF_CLUSTER_BLACKHOLE : WF_CLUSTER_PASSTHROUGH;
    return json_pack("{s:{},s:s,s:[o,o]}", "filter_chain_match", "name", "PassthroughFilterChain",
                     "filters", wf_tcp_stats_filter(false), wf_tcp_proxy_filter(cl, cl));
}

int wf_sniff_order(json_t *l)
{
    static const char *const tail[] = {"default_filter_chain", "listener_filters",
                                       "listener_filters_timeout",
                                       "continue_on_listener_filters_timeout", "traffic_direction"};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) {
        json_t *v = json_incref(json_object_get(l, tail[i]));
        if (!v)
            continue;
        json_object_del(l, tail[i]);
        if (json_object_set_new(l, tail[i], v) != 0)
            return -1;
    }
    return 0;
}

/* The HCM chain under the sniffed match: {filter_chain_match, filters}. */
static json_t *http_chain(json_t *old)
{
    return json_pack("{s:o,s:O}", "filter_chain_match", wf_sniff_http_match(), "filters",
                     json_object_get(old, "filters"));
}

int wf_sniff_outbound(json_t *l, json_t *tcp_chains, bool has_sni, bool registry_only,
                      json_t *timeout)
{
    json_t *chains = json_array(), *def = NULL, *lf = json_array();
    json_t *hcm = http_chain(json_array_get(json_object_get(l, "filter_chains"), 0));
    int rc = chains && lf && hcm && timeout ? 0 : -1;
    size_t i;
    json_t *c;
    json_array_foreach(tcp_chains, i, c)
    {
        if (rc != 0)
            break;
        if (json_object_get(c, "filter_chain_match")) {
            rc = json_array_append(chains, c);
        } else if (!def) {
            def = json_deep_copy(c);
            rc = def ? 0 : -1;
        }
    }
    if (rc == 0) {
        rc = json_array_append_new(chains, hcm);
        hcm = NULL;
    }
    if (rc == 0 && !def && !(def = passthrough_chain(registry_only)))
        rc = -1;
    if (rc == 0 && has_sni) {
        json_t *ti = wf_tcp_tls_inspector();
        rc = ti && json_array_extend(lf, ti) == 0 ? 0 : -1;
        json_decref(ti);
    }
    if (rc == 0)
        rc = json_array_append_new(lf, wf_sniff_http_inspector());
    if (rc == 0) {
        rc = json_object_set_new(l, "filter_chains", chains);
        chains = NULL;
    }
    if (rc == 0) {
        rc = json_object_set_new(l, "default_filter_chain", def);
        def = NULL;
    }
    if (rc == 0) {
        rc = json_object_set_new(l, "listener_filters", lf);
        lf = NULL;
    }
    if (rc == 0) {
        rc = json_object_set_new(l, "listener_filters_timeout", timeout);
        timeout = NULL;
    }
    if (rc == 0)
        rc = json_object_set_new(l, "continue_on_listener_filters_timeout", json_true());
    if (rc == 0)
        rc = wf_sniff_order(l);
    json_decref(chains);
    json_decref(def);
    json_decref(lf);
    json_decref(hcm);
    json_decref(timeout);
    json_decref(tcp_chains);
    return rc;
}
