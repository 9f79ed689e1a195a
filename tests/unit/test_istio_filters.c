/*
 * test_istio_filters.c - istio.metadata_exchange and istio.stats as filters of the HTTP
 * filter chain (filters/http/istio_filters.c, istio_filter.c): the exchange's request and
 * response header operations as the chain collects them (by which exchange headers the request
 * carried), a local reply's head, and upstream discovery (wp_istio_upstream_peer) with and
 * without the exchange. The metrics record itself needs a live stream: the pytest suites
 * (test_proxy_istio_metrics.py) cover it.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#include "proxy/config/config.h"
#include "proxy/filters/http/filters.h"
#include "proxy/http/filter.h"
#include "proxy/filters/http/istio_stats.h"

struct wp_stream {
    wp_fchain_state st;
    alignas(max_align_t) unsigned char slots[WP_FCHAIN_SLOTS_MAX];
    wp_stream_info si;
    h1_message req;
    h1_header hdrs[4];
};

static wp_stream_info *stream_info(struct wp_stream *s)
{
    return &s->si;
}

static const wp_filter_callbacks cbs = {.stream_info = stream_info};

#define HCM_T                                                                                      \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

/* An outbound sidecar's HCM: the exchange (upstream discovery and propagation, downstream
 * propagation when `down` is set), istio.stats, the router. */
static wp_config *load(bool down)
{
    char *text = NULL;
    int n = asprintf(
        &text,
        "{\"node\":{\"id\":\"sidecar~1\",\"metadata\":{\"NAMESPACE\":\"shop\",\"NAME\":\"a-1\","
        "\"LABELS\":{\"app\":\"a\"}}},\"static_resources\":{\"listeners\":[{\"address\":{"
        "\"socket_address\":{\"address\":\"127.0.0.1\",\"port_value\":8080}},\"filter_chains\":[{"
        "\"filters\":[{\"name\":\"envoy.filters.network.http_connection_manager\","
        "\"typed_config\":{\"@type\":\"" HCM_T "\",\"stat_prefix\":\"in\",\"http_filters\":[{"
        "\"name\":\"istio.metadata_exchange\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
        "io.istio.http.peer_metadata.Config\",\"upstream_discovery\":[{\"istio_headers\":{}}],"
        "\"upstream_propagation\":[{\"istio_headers\":{}}]%s}},{\"name\":\"istio.stats\"},{"
        "\"name\":\"envoy.filters.http.router\"}],\"route_config\":{\"virtual_hosts\":[{\"name\":"
        "\"a\",\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{"
        "\"cluster\":\"c\"}}]}]}}}]}]}],\"clusters\":[{\"name\":\"c\",\"load_assignment\":{"
        "\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{"
        "\"address\":\"127.0.0.1\",\"port_value\":9000}}}}]}]}}]}}",
        down ? ",\"downstream_propagation\":[{\"istio_headers\":{}}]" : "");
    assert_true(n > 0);
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    free(text);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

/* A stream on c's chain whose request carries the first nh of the exchange's headers. */
static struct wp_stream *start(const wp_config *c, size_t nh)
{
    struct wp_stream *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->hdrs[0] = (h1_header){{"x-envoy-peer-metadata-id", 24}, {"sidecar~2", 9}};
    s->hdrs[1] = (h1_header){{"x-envoy-peer-metadata", 21}, {"AAAA", 4}};
    s->req.headers = s->hdrs;
    s->req.nheaders = nh;
    s->si.request = &s->req;
    wp_fchain_start(&s->st, c->listeners[0].chains[0].hcm->filter_chain, s->slots, s, &cbs);
    return s;
}

static const wp_istio_mx_filter *mx_of(const wp_config *c)
{
    return wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_ISTIO_MX_NAME);
}

static void test_mx_header_ops(void **state)
{
    (void)state;
    wp_config *c = load(true);
    const wp_istio_mx_filter *mx = mx_of(c);
    assert_non_null(mx);
    for (size_t nh = 0; nh <= 2; nh++) {
        struct wp_stream *s = start(c, nh);
        wp_filter_headers h = {s->hdrs, nh, 0};
        /* the real router is the last filter: stop before it by decoding with a copy of the
         * chain without it */
        wp_fchain fc = *c->listeners[0].chains[0].hcm->filter_chain;
        fc.n--;
        s->st.fc = &fc;
        assert_int_equal(wp_fchain_decode_headers(&s->st, s, &cbs, &h, true), WP_FCHAIN_DONE);
        size_t n;
        const wp_header_ops *const *ops = wp_fchain_request_ops(&s->st, &n);
        assert_int_equal(n, 1);
        assert_ptr_equal(ops[0], &mx->req);
        wp_filter_headers r = {NULL, 0, 200};
        assert_int_equal(wp_fchain_encode_headers(&s->st, s, &cbs, &r, false), WP_FCHAIN_DONE);
        ops = wp_fchain_response_ops(&s->st, &n);
        assert_int_equal(n, 1);
        /* bit 0: the request had the id, bit 1: the metadata */
        size_t want = nh == 0 ? 0 : nh == 1 ? 1 : 3;
        assert_ptr_equal(ops[0], &mx->resp[want]);
        free(s);
    }
    /* a reply to a request that never parsed: the first level */
    struct wp_stream *s = start(c, 0);
    s->si.request = NULL;
    wp_filter_headers r = {NULL, 0, 400};
    assert_int_equal(wp_fchain_local_reply(&s->st, s, &cbs, &r, true), WP_FCHAIN_DONE);
    size_t n;
    const wp_header_ops *const *ops = wp_fchain_response_ops(&s->st, &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(ops[0], &mx->resp[0]);
    free(s);
    wp_config_unref(c);

    /* without downstream_propagation the request's headers do not matter */
    c = load(false);
    mx = mx_of(c);
    s = start(c, 2);
    r = (wp_filter_headers){NULL, 0, 200};
    wp_fchain_encode_headers(&s->st, s, &cbs, &r, false);
    ops = wp_fchain_response_ops(&s->st, &n);
    assert_ptr_equal(ops[0], &mx->resp[0]);
    free(s);
    wp_config_unref(c);
}

static void test_upstream_discovery(void **state)
{
    (void)state;
    wp_config *c = load(false);
    const wp_istio_stats_filter *f =
        wp_fchain_find(c->listeners[0].chains[0].hcm->filter_chain, WP_ISTIO_STATS_NAME);
    assert_non_null(f);
    assert_ptr_equal(f->mx, mx_of(c));
    wp_istio_workload w = {0};
    w.f[WP_WL_WORKLOAD] = (wp_istio_str){"catalog-v1", 10};
    w.f[WP_WL_NAMESPACE] = (wp_istio_str){"shop", 4};
    wf_strbuf v = WF_STRBUF_INIT;
    wp_istio_peer_value(&w, &v);
    assert_false(wf_strbuf_failed(&v));
    h1_header resp[2] = {{{"content-type", 12}, {"text/plain", 10}},
                         {{"x-envoy-peer-metadata", 21}, {v.data, v.len}}};
    wp_istio_stream out;
    assert_true(wp_istio_upstream_peer(f, resp, 2, &out));
    assert_int_equal(out.peer.f[WP_WL_WORKLOAD].len, 10);
    assert_memory_equal(out.peer.f[WP_WL_WORKLOAD].p, "catalog-v1", 10);
    assert_memory_equal(out.peer.f[WP_WL_NAMESPACE].p, "shop", 4);
    assert_true(out.peer.f[WP_WL_WORKLOAD].p >= out.buf &&
                out.peer.f[WP_WL_WORKLOAD].p < out.buf + sizeof out.buf); /* copied */
    /* no header, a bad one, or no exchange: no peer */
    assert_false(wp_istio_upstream_peer(f, resp, 1, &out));
    resp[1].value = (h1_str){"%%%", 3};
    assert_false(wp_istio_upstream_peer(f, resp, 2, &out));
    resp[1].value = (h1_str){v.data, v.len};
    wp_istio_stats_filter alone = *f;
    alone.mx = NULL;
    assert_false(wp_istio_upstream_peer(&alone, resp, 2, &out));
    wf_strbuf_free(&v);
    wp_config_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mx_header_ops),
        cmocka_unit_test(test_upstream_discovery),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
