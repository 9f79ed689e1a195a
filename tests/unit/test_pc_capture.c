/*
 * test_pc_capture.c - weft's note for `proxy-config listener --port N` on a captured sidecar
 * (cmd_pc.h pc_capture_port_note; operator report B039), over the listeners weft-pilot builds
 * for capture (pilot/capture.h): REGISTRY_ONLY's catch-all to BlackHoleCluster, ALLOW_ANY's to
 * PassthroughCluster, the hand-off to an unbound 0.0.0.0_<port> listener (a TLS ServiceEntry's
 * SNI chain), virtualInbound's catch-all, and no note without capture.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/cmd_pc.h"
#include "pilot/capture.h"

static json_t *tls_listener_443(void)
{
    return json_pack("{s:s,s:{s:{s:s,s:i}},s:[{s:{s:[s]},s:[{s:s,s:{s:s,s:s}}]}]}", "name",
                     "0.0.0.0_443", "address", "socket_address", "address", "0.0.0.0", "port_value",
                     443, "filter_chains", "filter_chain_match", "server_names",
                     "api.partner.example.internal", "filters", "name",
                     "envoy.filters.network.tcp_proxy", "typed_config", "stat_prefix", "x",
                     "cluster", "outbound|443||api.partner.example.internal");
}

/* virtualOutbound, the outbound listeners made unbound, virtualInbound (pilot's functions). */
static json_t *captured(bool registry_only, bool with_443)
{
    json_t *outbound = json_array();
    /* pilot/inbound.h's passthrough listener (folded into virtualInbound): the TCP catch-all */
    json_t *inbound = json_pack(
        "[{s:s,s:[{s:s,s:{s:s},s:[{s:s,s:{s:s,s:s}}]}]}]", "name", "virtualInbound",
        "filter_chains", "name", "virtualInbound", "filter_chain_match", "transport_protocol",
        "raw_buffer", "filters", "name", "envoy.filters.network.tcp_proxy", "typed_config",
        "stat_prefix", "InboundPassthroughCluster", "cluster", "InboundPassthroughCluster");
    if (with_443)
        json_array_append_new(outbound, tls_listener_443());
    json_t *rest = wf_capture_listeners(outbound, inbound);
    assert_non_null(rest);
    json_t *all = json_array();
    json_array_append_new(all, wf_capture_virtual_outbound(registry_only));
    json_array_extend(all, rest);
    json_decref(rest);
    json_decref(outbound);
    json_decref(inbound);
    return all;
}

static char *note(json_t *ls, long port)
{
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(pc_capture_port_note(ls, port, &b), 0);
    char *s = wf_strbuf_take(&b);
    assert_non_null(s);
    return s;
}

static void test_registry_only_blackhole_chain(void **state)
{
    (void)state;
    json_t *ls = captured(true, false);
    char *s = note(ls, 443);
    assert_non_null(strstr(s, "weft: transparent capture: an outbound connection to port 443 "
                              "reaches virtualOutbound (0.0.0.0:15001, use_original_dst)"));
    assert_non_null(strstr(s, "no listener owns port 443, so it stays in virtualOutbound: chain "
                              "virtualOutbound-catchall-tcp (MATCH ALL) -> BlackHoleCluster: "
                              "outboundTrafficPolicy REGISTRY_ONLY"));
    assert_non_null(strstr(s, "ServiceEntry"));
    /* inbound: no Service port 443, the catch-all */
    assert_non_null(strstr(s, "weft: an inbound connection to this pod's port 443 reaches "
                              "virtualInbound (0.0.0.0:15006)"));
    assert_non_null(strstr(s, "-> InboundPassthroughCluster: no Service declares port 443"));
    free(s);
    json_decref(ls);
}

static void test_allow_any_passthrough_chain(void **state)
{
    (void)state;
    json_t *ls = captured(false, false);
    char *s = note(ls, 9090);
    assert_non_null(strstr(s, "chain virtualOutbound-catchall-tcp (MATCH ALL) -> "
                              "PassthroughCluster: outboundTrafficPolicy ALLOW_ANY"));
    assert_null(strstr(s, "REGISTRY_ONLY"));
    free(s);
    json_decref(ls);
}

static void test_sni_listener_takes_it(void **state)
{
    (void)state;
    json_t *ls = captured(true, true);
    char *s = note(ls, 443);
    assert_non_null(strstr(s, "which hands it to the listener for its original destination: "
                              "0.0.0.0_443 (0.0.0.0:443, bind_to_port false)"));
    assert_null(strstr(s, "stays in"));
    assert_null(strstr(s, "BlackHoleCluster"));
    free(s);
    json_decref(ls);
}

static void test_loop_guard_and_no_capture(void **state)
{
    (void)state;
    json_t *ls = captured(true, false);
    char *s = note(ls, 15001);
    assert_string_equal(s, ""); /* the table itself shows virtualOutbound's chains */
    free(s);
    json_decref(ls);
    json_t *plain = json_array();
    json_array_append_new(plain, tls_listener_443());
    s = note(plain, 443);
    assert_string_equal(s, "");
    free(s);
    json_decref(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_only_blackhole_chain),
        cmocka_unit_test(test_allow_any_passthrough_chain),
        cmocka_unit_test(test_sni_listener_takes_it),
        cmocka_unit_test(test_loop_guard_and_no_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
