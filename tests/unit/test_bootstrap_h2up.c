/*
 * test_bootstrap_h2up.c - a cluster's upstream protocol (bootstrap_cluster.c, protocols.md
 * §1.5, §2.2, §2.6): typed_extension_protocol_options HttpProtocolOptions with
 * explicit_http_config http2_protocol_options (Envoy >= 1.36 defaults, the SETTINGS fields),
 * use_downstream_protocol_config, the legacy cluster-level http2_protocol_options, and errors
 * naming the field (unimplemented fields refused by name).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "proxy/config/config.h"

#define HPO  "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define CPFX "t.json: static_resources.clusters[0]"

/* A bootstrap with one STATIC cluster "c" carrying the extra fields. */
static char *bs_text(const char *extra)
{
    char *out = NULL;
    int n = asprintf(&out,
                     "{\"static_resources\": {\"clusters\": [{\"name\": \"c\", \"type\": "
                     "\"STATIC\", \"load_assignment\": {\"cluster_name\": \"c\"}%s%s}]}}",
                     *extra ? ", " : "", extra);
    assert_true(n > 0);
    return out;
}

static char *tepo(const char *body)
{
    char *out = NULL;
    int n = asprintf(&out,
                     "\"typed_extension_protocol_options\": {\"" HPO "\": {\"@type\": "
                     "\"type.googleapis.com/" HPO "\", %s}}",
                     body);
    assert_true(n > 0);
    return out;
}

static wp_config *load(const char *extra)
{
    char *text = bs_text(extra);
    wf_strbuf err = {0};
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    free(text);
    return c;
}

static void expect_error(const char *extra, const char *want)
{
    char *text = bs_text(extra);
    wf_test_expect_bootstrap_error(text, want);
    free(text);
}

static void test_default_is_http1(void **state)
{
    (void)state;
    wp_config *c = load("");
    assert_int_equal(c->clusters[0].proto, WP_UP_HTTP1);
    wp_config_unref(c);
    char *t = tepo("\"explicit_http_config\": {\"http_protocol_options\": {}}");
    c = load(t);
    assert_int_equal(c->clusters[0].proto, WP_UP_HTTP1);
    wp_config_unref(c);
    free(t);
}

static void test_explicit_http2(void **state)
{
    (void)state;
    char *t = tepo("\"explicit_http_config\": {\"http2_protocol_options\": {}}, "
                   "\"common_http_protocol_options\": {\"max_requests_per_connection\": 3}");
    wp_config *c = load(t);
    const wp_cluster *cl = &c->clusters[0];
    assert_int_equal(cl->proto, WP_UP_HTTP2);
    assert_int_equal(cl->h2.max_concurrent_streams, 1024); /* Envoy >= 1.36 */
    assert_int_equal(cl->h2.initial_stream_window_size, 16777216);
    assert_int_equal(cl->h2.initial_connection_window_size, 25165824);
    assert_int_equal(cl->h2.hpack_table_size, 4096);
    assert_int_equal(cl->max_requests_per_connection, 3);
    wp_config_unref(c);
    free(t);
    t = tepo("\"explicit_http_config\": {\"http2_protocol_options\": {\"max_concurrent_streams\": "
             "7, \"initial_stream_window_size\": 65535, \"initial_connection_window_size\": "
             "1048576, \"hpack_table_size\": 0}}");
    c = load(t);
    cl = &c->clusters[0];
    assert_int_equal(cl->h2.max_concurrent_streams, 7);
    assert_int_equal(cl->h2.initial_stream_window_size, 65535);
    assert_int_equal(cl->h2.initial_connection_window_size, 1048576);
    assert_int_equal(cl->h2.hpack_table_size, 0);
    wp_config_unref(c);
    free(t);
}

static void test_use_downstream(void **state)
{
    (void)state;
    char *t = tepo("\"use_downstream_protocol_config\": {\"http_protocol_options\": {}, "
                   "\"http2_protocol_options\": {\"max_concurrent_streams\": 9}}");
    wp_config *c = load(t);
    assert_int_equal(c->clusters[0].proto, WP_UP_DOWNSTREAM);
    assert_true(c->clusters[0].h2_allowed);
    assert_int_equal(c->clusters[0].h2.max_concurrent_streams, 9);
    wp_config_unref(c);
    free(t);
    t = tepo("\"use_downstream_protocol_config\": {\"http_protocol_options\": {}}");
    c = load(t);
    assert_int_equal(c->clusters[0].proto, WP_UP_DOWNSTREAM);
    assert_false(c->clusters[0].h2_allowed); /* HTTP/1.1 whatever the downstream */
    wp_config_unref(c);
    free(t);
}

static void test_legacy_field(void **state)
{
    (void)state;
    wp_config *c = load("\"http2_protocol_options\": {\"max_concurrent_streams\": 5}");
    assert_int_equal(c->clusters[0].proto, WP_UP_HTTP2);
    assert_int_equal(c->clusters[0].h2.max_concurrent_streams, 5);
    wp_config_unref(c);
}

static void test_errors(void **state)
{
    (void)state;
    char *t = tepo("\"explicit_http_config\": {\"http2_protocol_options\": {\"allow_connect\": "
                   "true}}");
    expect_error(t, CPFX ".typed_extension_protocol_options[" HPO "].explicit_http_config."
                         "http2_protocol_options.allow_connect: not supported by weft-proxy "
                         "(Envoy's envoy.config.core.v3.Http2ProtocolOptions.allow_connect)");
    free(t);
    t = tepo("\"explicit_http_config\": {\"http2_protocol_options\": {\"max_concurrent_streams\": "
             "0}}");
    expect_error(t, CPFX ".typed_extension_protocol_options[" HPO "].explicit_http_config."
                         "http2_protocol_options.max_concurrent_streams: value must be inside "
                         "range [1, 2147483647]");
    free(t);
    t = tepo("\"explicit_http_config\": {\"http_protocol_options\": {}, "
             "\"http2_protocol_options\": {}}");
    expect_error(t, CPFX ".typed_extension_protocol_options[" HPO "].explicit_http_config: "
                         "only one of http_protocol_options, http2_protocol_options");
    free(t);
    t = tepo("\"explicit_http_config\": {\"http3_protocol_options\": {}}");
    expect_error(t, CPFX ".typed_extension_protocol_options[" HPO "].explicit_http_config."
                         "http3_protocol_options: not supported by weft-proxy (Envoy's "
                         "envoy.extensions.upstreams.http.v3.HttpProtocolOptions."
                         "ExplicitHttpConfig.http3_protocol_options)");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_http1), cmocka_unit_test(test_explicit_http2),
        cmocka_unit_test(test_use_downstream),   cmocka_unit_test(test_legacy_field),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
