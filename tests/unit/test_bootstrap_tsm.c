/*
 * test_bootstrap_tsm.c - Cluster.transport_socket_matches (bootstrap_cluster.c): Istio's auto
 * mTLS shape (tlsMode-istio / tlsMode-disabled) is accepted, and each host gets the first
 * match whose `match` is a subset of its filter_metadata["envoy.transport_socket_match"]
 * (empty match: every host), else the cluster's transport_socket; resolved once at load
 * (wp_endpoint.tsm), as Envoy's TransportSocketMatcherImpl::resolve.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "harness.h"
#include "proxy/config/config.h"

#define UTC "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
#define SDS_CONFIG                                                                                 \
    "{\"api_config_source\": {\"api_type\": \"GRPC\", \"grpc_services\": [{\"envoy_grpc\": "       \
    "{\"cluster_name\": \"sds-grpc\"}}], \"set_node_on_first_message_only\": true, "               \
    "\"transport_api_version\": \"V3\"}, \"initial_fetch_timeout\": \"0s\", "                      \
    "\"resource_api_version\": \"V3\"}"

/* Istio's outbound cluster transport_socket_matches, as pilot writes them for auto mTLS
 * (security.md §3.2), verbatim. */
#define ISTIO_TSMS                                                                                 \
    "\"transport_socket_matches\": [{\"name\": \"tlsMode-istio\", \"match\": {\"tlsMode\": "       \
    "\"istio\"}, \"transport_socket\": {\"name\": \"envoy.transport_sockets.tls\", "               \
    "\"typed_config\": {\"@type\": \"" UTC "\", \"common_tls_context\": {\"tls_params\": "         \
    "{\"tls_minimum_protocol_version\": \"TLSv1_2\", \"tls_maximum_protocol_version\": "           \
    "\"TLSv1_3\"}, \"alpn_protocols\": [\"istio-peer-exchange\", \"istio\"], "                     \
    "\"tls_certificate_sds_secret_configs\": [{\"name\": \"default\", \"sds_config\": " SDS_CONFIG \
    "}], \"combined_validation_context\": {\"default_validation_context\": "                       \
    "{\"match_subject_alt_names\": [{\"exact\": "                                                  \
    "\"spiffe://cluster.local/ns/default/sa/reviews\"}]}, "                                        \
    "\"validation_context_sds_secret_config\": {\"name\": \"ROOTCA\", \"sds_config\": " SDS_CONFIG \
    "}}}, \"sni\": \"outbound_.9080_._.reviews.default.svc.cluster.local\"}}}, "                   \
    "{\"name\": \"tlsMode-disabled\", \"match\": {}, \"transport_socket\": {\"name\": "            \
    "\"envoy.transport_sockets.raw_buffer\", \"typed_config\": {\"@type\": "                       \
    "\"type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer\"}}}]"

#define EP(ip, md)                                                                                 \
    "{\"endpoint\": {\"address\": {\"socket_address\": {\"address\": \"" ip                        \
    "\", \"port_value\": 9080}}}" md "}"
/* pilot's endpoint metadata (src/pilot/eds.c endpoint_metadata) */
#define MD_ISTIO                                                                                   \
    ", \"metadata\": {\"filter_metadata\": {\"envoy.transport_socket_match\": {\"tlsMode\": "      \
    "\"istio\"}, \"istio\": {\"workload\": \"reviews-v1;default;reviews;v1;Kubernetes\"}}}"
#define MD_OTHER                                                                                   \
    ", \"metadata\": {\"filter_metadata\": {\"istio\": {\"workload\": \"x;default;x;;\"}}}"

static char *cluster_text(const char *tsms, const char *extra, const char *eps)
{
    char *out = NULL;
    int n = asprintf(&out,
                     "{\"static_resources\": {\"clusters\": [{\"name\": "
                     "\"outbound|9080||reviews.default.svc.cluster.local\", %s%s"
                     "\"load_assignment\": {\"endpoints\": [{\"lb_endpoints\": [%s]}]}}]}}",
                     tsms, extra, eps);
    assert_true(n > 0);
    return out;
}

static wp_config *load_ok(char *text)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    free(text);
    wf_strbuf_free(&err);
    return c;
}

static void test_istio_auto_mtls(void **state)
{
    (void)state;
    wp_config *c = load_ok(cluster_text(
        ISTIO_TSMS, ",",
        EP("127.0.0.1", MD_ISTIO) "," EP("127.0.0.2", MD_OTHER) "," EP("127.0.0.3", "")));
    const wp_cluster *cl = &c->clusters[0];
    assert_int_equal(cl->ntsms, 2);
    assert_string_equal(cl->tsms[0].name, "tlsMode-istio");
    assert_string_equal(cl->tsms[1].name, "tlsMode-disabled");
    assert_non_null(cl->tsms[0].tls);
    assert_non_null(cl->tsms[0].tls->sds);
    assert_string_equal(cl->tsms[0].tls->sni,
                        "outbound_.9080_._.reviews.default.svc.cluster.local");
    assert_null(cl->tsms[1].tls); /* raw_buffer */
    assert_null(cl->tls);
    assert_true(cl->has_tls);
    assert_int_equal(cl->nendpoints, 3);
    /* tagged: tlsMode-istio; untagged (other metadata, none): the empty match */
    assert_int_equal(cl->endpoints[0].tsm, 1);
    assert_ptr_equal(wp_endpoint_tls(cl, &cl->endpoints[0]), cl->tsms[0].tls);
    assert_int_equal(cl->endpoints[1].tsm, 2);
    assert_null(wp_endpoint_tls(cl, &cl->endpoints[1]));
    assert_int_equal(cl->endpoints[2].tsm, 2);
    /* only the transport_socket_match part of the metadata is kept */
    assert_non_null(cl->endpoints[0].tsm_metadata);
    assert_string_equal(
        json_string_value(json_object_get(cl->endpoints[0].tsm_metadata, "tlsMode")), "istio");
    assert_null(cl->endpoints[1].tsm_metadata);
    /* the match Struct keeps its keys as written in the kept configuration (config dump) */
    json_t *m = json_object_get(
        json_array_get(
            json_object_get(
                json_array_get(
                    json_object_get(json_object_get(c->bootstrap, "static_resources"), "clusters"),
                    0),
                "transport_socket_matches"),
            0),
        "match");
    assert_non_null(json_object_get(m, "tlsMode"));
    wp_config_unref(c);
}

/* No entry matches: the cluster's own transport_socket (or raw_buffer). */
static void test_no_match_uses_cluster_socket(void **state)
{
    (void)state;
    const char *only_istio =
        "\"transport_socket_matches\": [{\"name\": \"m\", \"match\": {\"tlsMode\": \"istio\", "
        "\"v\": 1}, \"transport_socket\": {\"name\": \"envoy.transport_sockets.raw_buffer\"}}]";
    /* lowerCamelCase JSON names, a number compared as protobuf's double, a subset match */
    wp_config *c = load_ok(cluster_text(
        only_istio, ",",
        EP("127.0.0.1", ", \"metadata\": {\"filterMetadata\": "
                        "{\"envoy.transport_socket_match\": "
                        "{\"tlsMode\": \"istio\", \"v\": 1.0, \"extra\": "
                        "true}}}") "," EP("127.0.0.2", ", \"metadata\": "
                                                       "{\"filter_metadata\": "
                                                       "{\"envoy.transport_socket_match\": "
                                                       "{\"tlsMode\": \"istio\", \"v\": "
                                                       "2}}}") "," EP("127.0.0.3", "")));
    const wp_cluster *cl = &c->clusters[0];
    assert_int_equal(cl->endpoints[0].tsm, 1);
    assert_int_equal(cl->endpoints[1].tsm, 0);
    assert_int_equal(cl->endpoints[2].tsm, 0);
    assert_null(wp_endpoint_tls(cl, &cl->endpoints[1]));
    assert_false(cl->has_tls);
    wp_config_unref(c);
}

/* camelCase bootstrap: transportSocketMatches; the match keys stay as written. */
static void test_camel_case(void **state)
{
    (void)state;
    wp_config *c = load_ok(cluster_text(
        "\"transportSocketMatches\": [{\"name\": \"a\", \"match\": {\"tlsMode\": \"istio\"}, "
        "\"transportSocket\": {\"name\": \"envoy.transport_sockets.raw_buffer\"}}]",
        ",", EP("127.0.0.1", MD_ISTIO)));
    assert_int_equal(c->clusters[0].ntsms, 1);
    assert_int_equal(c->clusters[0].endpoints[0].tsm, 1);
    wp_config_unref(c);
}

static void test_errors(void **state)
{
    (void)state;
    char *t =
        cluster_text("\"transport_socket_matches\": [{\"name\": \"m\", \"match\": 3, "
                     "\"transport_socket\": {\"name\": \"envoy.transport_sockets.raw_buffer\"}}]",
                     ",", EP("127.0.0.1", ""));
    wf_test_expect_bootstrap_error(
        t, "t.json: static_resources.clusters[0].transport_socket_matches[0].match: wrong type: "
           "expected an object");
    free(t);
    t = cluster_text("\"transport_socket_matches\": [{\"name\": \"m\", \"transport_socket\": "
                     "{\"name\": \"envoy.transport_sockets.quic\"}}]",
                     ",", EP("127.0.0.1", ""));
    wf_test_expect_bootstrap_error(
        t,
        "t.json: static_resources.clusters[0].transport_socket_matches[0].transport_socket.name: "
        "transport socket \"envoy.transport_sockets.quic\" is not supported by weft-proxy "
        "(envoy.transport_sockets.raw_buffer and envoy.transport_sockets.tls are)");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_istio_auto_mtls),
        cmocka_unit_test(test_no_match_uses_cluster_socket),
        cmocka_unit_test(test_camel_case),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
