/*
 * test_describe_capture.c - weft's capture lines of `weftctl describe pod`
 * (describe.h dsc_capture_lines; issue 20 item 5): capture on from virtualOutbound and the node
 * metadata, the excluded ports and ranges from Istio's defaults and the pod's
 * traffic.sidecar.istio.io annotations, off in explicit mode, and the outboundTrafficPolicy in
 * effect from virtualOutbound's catch-all or the allow_any / block_all virtual hosts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/describe.h"
#include "pilot/capture.h"

static json_t *dump_with(json_t *metadata, json_t *listener, json_t *routes)
{
    json_t *configs = json_array();
    json_array_append_new(
        configs, json_pack("{s:s,s:{s:{s:s,s:o}}}", "@type",
                           "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump", "bootstrap",
                           "node", "id", "sidecar~10.1.2.1~frontend.shop", "metadata", metadata));
    json_t *dl = json_array();
    if (listener)
        json_array_append_new(dl, json_pack("{s:s,s:{s:o}}", "name", "virtualOutbound",
                                            "active_state", "listener", listener));
    json_array_append_new(configs, json_pack("{s:s,s:o}", "@type",
                                             "type.googleapis.com/envoy.admin.v3."
                                             "ListenersConfigDump",
                                             "dynamic_listeners", dl));
    if (routes)
        json_array_append_new(configs, routes);
    return json_pack("{s:o}", "configs", configs);
}

static char *lines(json_t *dump, const wf_kvs *ann)
{
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(dsc_capture_lines(dump, ann, &b), 0);
    json_decref(dump);
    char *s = wf_strbuf_take(&b);
    assert_non_null(s);
    return s;
}

static void test_captured_registry_only_with_annotations(void **state)
{
    (void)state;
    wf_kv kv[] = {{"traffic.sidecar.istio.io/excludeOutboundPorts", "3306", NULL},
                  {"traffic.sidecar.istio.io/excludeInboundPorts", "8443", NULL},
                  {"traffic.sidecar.istio.io/excludeOutboundIPRanges", "10.0.0.0/8", NULL}};
    wf_kvs ann = {3, kv};
    char *s = lines(dump_with(json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"),
                              wf_capture_virtual_outbound(true), NULL),
                    &ann);
    assert_non_null(strstr(s, "weft: capture: on (virtualOutbound 0.0.0.0:15001 with "
                              "use_original_dst; node metadata INTERCEPTION_MODE REDIRECT)\n"));
    assert_non_null(strstr(s, "outbound IP ranges * (all), excluded 10.0.0.0/8 "
                              "(excludeOutboundIPRanges)"));
    assert_non_null(strstr(s, "outbound ports excluded 3306 (excludeOutboundPorts"));
    assert_non_null(strstr(s, "inbound ports * (all); excluded 15090,15021,15020 (the agent's"));
    assert_non_null(strstr(s, "and 8443 (excludeInboundPorts)"));
    assert_non_null(strstr(s, "weft: outboundTrafficPolicy: REGISTRY_ONLY (virtualOutbound's "
                              "catch-all chain goes to BlackHoleCluster)"));
    free(s);
}

static void test_captured_allow_any_defaults(void **state)
{
    (void)state;
    wf_kvs none = {0, NULL};
    char *s = lines(dump_with(json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"),
                              wf_capture_virtual_outbound(false), NULL),
                    &none);
    assert_non_null(strstr(s, "outbound ports excluded none\n"));
    assert_non_null(strstr(s, "weft: outboundTrafficPolicy: ALLOW_ANY"));
    free(s);
}

static void test_no_inbound_capture(void **state)
{
    (void)state;
    wf_kv kv[] = {{"traffic.sidecar.istio.io/includeInboundPorts", "", NULL},
                  {"traffic.sidecar.istio.io/includeOutboundIPRanges", "10.96.0.0/12", NULL}};
    wf_kvs ann = {2, kv};
    char *s = lines(dump_with(json_object(), wf_capture_virtual_outbound(false), NULL), &ann);
    assert_non_null(strstr(s, "inbound: none (includeInboundPorts is empty)"));
    assert_non_null(strstr(s, "outbound IP ranges 10.96.0.0/12 (includeOutboundIPRanges)"));
    free(s);
}

static void test_explicit_mode_policy_from_routes(void **state)
{
    (void)state;
    json_t *routes = json_pack("{s:s,s:[{s:{s:s,s:[{s:s,s:[s]}]}}]}", "@type",
                               "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
                               "dynamic_route_configs", "route_config", "name", "80",
                               "virtual_hosts", "name", "block_all", "domains", "*");
    wf_kvs none = {0, NULL};
    char *s =
        lines(dump_with(json_pack("{s:s}", "WEFT_LOCALHOST", "127.11.0.2"), NULL, routes), &none);
    assert_non_null(strstr(s, "weft: capture: off (explicit mode: node metadata WEFT_LOCALHOST "
                              "127.11.0.2"));
    assert_null(strstr(s, "excluded"));
    assert_non_null(strstr(s, "REGISTRY_ONLY (the HTTP routes end in Istio's block_all"));
    free(s);
    s = lines(dump_with(json_object(), NULL, NULL), &none);
    assert_non_null(strstr(s, "capture: off (no virtualOutbound listener"));
    assert_non_null(strstr(s, "outboundTrafficPolicy: unknown"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_registry_only_with_annotations),
        cmocka_unit_test(test_captured_allow_any_defaults),
        cmocka_unit_test(test_no_inbound_capture),
        cmocka_unit_test(test_explicit_mode_policy_from_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
