/*
 * test_failed_ring.c - the per-worker ring of failed requests (stream_info/failed_ring.c):
 * the failure rule (log explain's), the fields kept, the query string dropped, path
 * truncation, non-ASCII escaping, wrap-around newest first, and a concurrent writer and
 * reader that never yields a torn entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>

#include "proxy/stream_info/failed_ring.h"
#include "proxy/stream_info/stream_info.h"

#define START_US 1795987800123456LL /* 2026-11-29T21:30:00.123456Z */
#define START_NS 1000000000ULL

typedef struct {
    h1_header req_h[8];
    h1_message req;
    h1_header resp_h[2];
    wp_stream_info si;
} fixture;

static h1_str S(const char *s)
{
    return (h1_str){s, strlen(s)};
}

static void add_req(fixture *fx, const char *name, const char *value)
{
    fx->req_h[fx->req.nheaders++] = (h1_header){S(name), S(value)};
}

static void make(fixture *fx, const char *target, int code)
{
    memset(fx, 0, sizeof *fx);
    fx->req.method = S("GET");
    fx->req.target = S(target);
    fx->req.version_minor = 1;
    fx->req.headers = fx->req_h;
    add_req(fx, "Host", "reviews:9080");
    add_req(fx, "Authorization", "Bearer secret-token");
    add_req(fx, "X-Request-Id", "rid-1");
    fx->si.request = &fx->req;
    fx->si.protocol = "HTTP/1.1";
    fx->si.start_time_us = START_US;
    fx->si.start_ns = START_NS;
    fx->si.end_ns = START_NS + 42 * 1000000ULL + 5;
    fx->si.response_code = code;
}

static wp_failed_ring *new_ring(void)
{
    wp_failed_ring *r = calloc(1, sizeof *r);
    assert_non_null(r);
    wp_fring_init(r);
    return r;
}

static void test_failure_rule(void **state)
{
    (void)state;
    fixture fx;
    make(&fx, "/", 200);
    assert_false(wp_fring_failed(&fx.si));
    make(&fx, "/", 302);
    assert_false(wp_fring_failed(&fx.si));
    make(&fx, "/", 404);
    assert_true(wp_fring_failed(&fx.si));
    make(&fx, "/", 503);
    assert_true(wp_fring_failed(&fx.si));
    make(&fx, "/", 0);
    assert_true(wp_fring_failed(&fx.si));
    make(&fx, "/", 200);
    wp_si_set_flag(&fx.si, WP_RF_DC);
    assert_true(wp_fring_failed(&fx.si));
    make(&fx, "/", 200);
    fx.si.details = "rbac_access_denied_matched_policy[none]";
    assert_true(wp_fring_failed(&fx.si));
    /* gRPC (HTTP/2): a grpc-status other than 0 is a failure */
    make(&fx, "/", 200);
    fx.si.protocol = "HTTP/2";
    fx.resp_h[0] = (h1_header){S("grpc-status"), S("14")};
    fx.si.response_headers = fx.resp_h;
    fx.si.nresponse_headers = 1;
    assert_true(wp_fring_failed(&fx.si));
    fx.resp_h[0] = (h1_header){S("grpc-status"), S("0")};
    assert_false(wp_fring_failed(&fx.si));
    /* over HTTP/1 there is no gRPC: a success is not looked into (no header lookup) */
    fx.resp_h[0] = (h1_header){S("grpc-status"), S("14")};
    fx.si.protocol = "HTTP/1.1";
    assert_false(wp_fring_failed(&fx.si));
}

static void test_record_fields(void **state)
{
    (void)state;
    wp_failed_ring *r = new_ring();
    fixture fx;
    make(&fx, "/ok", 200);
    assert_false(wp_fring_record(r, &fx.si, START_US + 1));
    make(&fx, "/reviews/1?token=hunter2&x=1", 503);
    wp_si_set_flag(&fx.si, WP_RF_UF);
    wp_si_set_flag(&fx.si, WP_RF_URX);
    fx.si.details = "upstream_reset_before_response_started{connection_failure}";
    fx.si.route_name = "default";
    fx.si.upstream_cluster = "outbound|9080||reviews.default.svc.cluster.local";
    fx.si.upstream_host = "10.0.0.7:9080";
    fx.si.downstream_remote = "127.0.0.1:5555";
    assert_true(wp_fring_record(r, &fx.si, START_US + 43000));
    wp_failed_entry out[4];
    assert_int_equal(wp_fring_read(r, out, 4), 1);
    const wp_failed_entry *e = &out[0];
    assert_string_equal(e->method, "GET");
    assert_string_equal(e->authority, "reviews:9080");
    assert_string_equal(e->path, "/reviews/1");
    assert_false(e->path_truncated);
    assert_int_equal(e->response_code, 503);
    assert_string_equal(e->response_flags, "UF,URX");
    assert_string_equal(e->details, "upstream_reset_before_response_started{connection_failure}");
    assert_string_equal(e->route_name, "default");
    assert_string_equal(e->upstream_cluster, "outbound|9080||reviews.default.svc.cluster.local");
    assert_string_equal(e->upstream_host, "10.0.0.7:9080");
    assert_string_equal(e->downstream_remote, "127.0.0.1:5555");
    assert_string_equal(e->request_id, "rid-1");
    assert_int_equal(e->duration_ms, 42);
    assert_int_equal(e->start_time_us, START_US);
    /* nothing of the query string or of other headers anywhere in the entry */
    assert_null(memmem(e, sizeof *e, "hunter2", 7));
    assert_null(memmem(e, sizeof *e, "secret-token", 12));
    char t[40];
    wp_fring_time(e->start_time_us, t, sizeof t);
    assert_string_equal(t, "2026-11-29T21:30:00.123Z");
    free(r);
}

static void test_truncation_and_escaping(void **state)
{
    (void)state;
    wp_failed_ring *r = new_ring();
    char big[1024];
    big[0] = '/';
    memset(big + 1, 'a', sizeof big - 2);
    big[sizeof big - 1] = '\0';
    fixture fx;
    make(&fx, big, 500);
    assert_true(wp_fring_record(r, &fx.si, 1));
    make(&fx, "/caf\xc3\xa9?q=1", 500);
    assert_true(wp_fring_record(r, &fx.si, 2));
    make(&fx, "/short", 500);
    fx.si.request = NULL; /* no request head: empty texts */
    fx.si.nflags = 0;
    assert_true(wp_fring_record(r, &fx.si, 3));
    wp_failed_entry out[3];
    assert_int_equal(wp_fring_read(r, out, 3), 3);
    assert_string_equal(out[0].path, "");
    assert_string_equal(out[0].method, "");
    assert_string_equal(out[0].response_flags, "-");
    assert_string_equal(out[1].path, "/caf%C3%A9");
    assert_true(out[2].path_truncated);
    assert_int_equal(strlen(out[2].path), WP_FRING_PATH_MAX);
    assert_int_equal(strspn(out[2].path + 1, "a"), WP_FRING_PATH_MAX - 1);
    free(r);
}

static void test_wrap_around_newest_first(void **state)
{
    (void)state;
    wp_failed_ring *r = new_ring();
    fixture fx;
    char path[32];
    const int total = WP_FRING_SLOTS * 2 + 5;
    for (int i = 0; i < total; i++) {
        snprintf(path, sizeof path, "/r%d", i);
        make(&fx, path, 502);
        assert_true(wp_fring_record(r, &fx.si, i));
    }
    static wp_failed_entry out[WP_FRING_SLOTS * 2];
    size_t n = wp_fring_read(r, out, WP_FRING_SLOTS * 2);
    assert_int_equal(n, WP_FRING_SLOTS); /* bounded */
    for (size_t k = 0; k < n; k++) {
        snprintf(path, sizeof path, "/r%d", total - 1 - (int)k);
        assert_string_equal(out[k].path, path);
        assert_int_equal(out[k].seq, (uint64_t)(total - k));
    }
    assert_int_equal(wp_fring_read(r, out, 3), 3); /* max respected */
    assert_string_equal(out[2].path, "/r130");
    free(r);
}

/* ---- one writer thread, this thread reading: every entry read is whole ---- */

typedef struct {
    wp_failed_ring *r;
    int n;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *a = p;
    fixture fx;
    char path[64], rid[64];
    for (int i = 1; i <= a->n; i++) {
        snprintf(path, sizeof path, "/w%d", i);
        snprintf(rid, sizeof rid, "id-%d", i);
        make(&fx, path, 500);
        fx.req_h[2].value = S(rid);
        fx.si.start_time_us = i;
        wp_fring_record(a->r, &fx.si, i);
    }
    return NULL;
}

static void test_concurrent_reader(void **state)
{
    (void)state;
    wp_failed_ring *r = new_ring();
    writer_arg a = {r, 200000};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer, &a), 0);
    static wp_failed_entry out[WP_FRING_SLOTS];
    size_t seen = 0;
    for (int round = 0; round < 2000; round++) {
        size_t n = wp_fring_read(r, out, WP_FRING_SLOTS);
        for (size_t k = 0; k < n; k++) {
            char want[64];
            long i = (long)out[k].start_time_us;
            assert_int_equal(out[k].seq, (uint64_t)i);
            snprintf(want, sizeof want, "/w%ld", i);
            assert_string_equal(out[k].path, want);
            snprintf(want, sizeof want, "id-%ld", i);
            assert_string_equal(out[k].request_id, want);
            if (k)
                assert_true(out[k].seq < out[k - 1].seq);
        }
        seen += n;
    }
    pthread_join(t, NULL);
    assert_int_equal(wp_fring_read(r, out, WP_FRING_SLOTS), WP_FRING_SLOTS);
    assert_int_equal(out[0].seq, 200000);
    (void)seen;
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failure_rule),
        cmocka_unit_test(test_record_fields),
        cmocka_unit_test(test_truncation_and_escaping),
        cmocka_unit_test(test_wrap_around_newest_first),
        cmocka_unit_test(test_concurrent_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
