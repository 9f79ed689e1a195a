/*
 * test_listener_filter.c - the listener filter runner (src/proxy/net/listener_filter.c), as
 * Envoy's ActiveTcpSocket: filters run in order and annotate the socket, a filter that stops
 * resumes the rest through continue_filter_chain, a failed filter ends the chain, and the
 * transport protocol defaults to "raw_buffer"; the annotations feed the filter chain match.
 * Reading filters (on_data, Envoy's ListenerFilterBuffer): a filter waits for bytes, is given
 * all of them from the first each time, a later reading filter gets what an earlier one read
 * at once, and a filter's failure ends the run with done(false).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "proxy/net/listener_filter.h"

typedef struct {
    int calls;
    int done_calls;
    bool done_ok;
    wp_lf_callbacks *parked; /* a stopped filter's callbacks */
} rec;

static wp_lf_status fake_tls(const void *self, wp_lf_callbacks *cb)
{
    (void)self;
    ((rec *)cb->owner)->calls++;
    const char *alpn[] = {"h2", "http/1.1"};
    assert_int_equal(wp_lf_set_transport_protocol(cb->socket, "tls"), 0);
    assert_int_equal(wp_lf_set_server_name(cb->socket, "WWW.Example.COM"), 0);
    assert_int_equal(wp_lf_set_application_protocols(cb->socket, alpn, 2), 0);
    return WP_LF_CONTINUE;
}

static wp_lf_status fake_wait(const void *self, wp_lf_callbacks *cb)
{
    (void)self;
    rec *r = cb->owner;
    r->calls++;
    r->parked = cb;
    return WP_LF_STOP_ITERATION;
}

static void on_done(wp_lf_callbacks *cb, bool ok)
{
    rec *r = cb->owner;
    r->done_calls++;
    r->done_ok = ok;
}

static const wp_listener_filter_ops TLS = {"fake.tls", fake_tls, NULL, NULL};
static const wp_listener_filter_ops WAIT = {"fake.wait", fake_wait, NULL, NULL};

static void init_socket(wp_lf_socket *s)
{
    struct sockaddr_in l = {.sin_family = AF_INET, .sin_port = htons(15006)};
    struct sockaddr_in p = {.sin_family = AF_INET, .sin_port = htons(40000)};
    inet_pton(AF_INET, "127.0.0.1", &l.sin_addr);
    inet_pton(AF_INET, "127.0.0.2", &p.sin_addr);
    wp_lf_socket_init(s, (struct sockaddr *)&l, (struct sockaddr *)&p);
}

static void test_no_filters(void **state)
{
    (void)state;
    wp_lf_socket s;
    wp_lf_callbacks cb;
    rec r = {0};
    init_socket(&s);
    wp_lf_callbacks_init(&cb, &s, NULL, 0, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_CONTINUE);
    assert_null(s.det); /* nothing detected, nothing allocated */
    assert_string_equal(wp_lf_transport_protocol(&s), "raw_buffer");
    assert_string_equal(wp_lf_server_name(&s), "");
    assert_int_equal(r.done_calls, 0);
    wp_fcm_input in;
    wp_lf_match_input(&s, &in);
    assert_string_equal(in.transport_protocol, "raw_buffer");
    assert_int_equal(in.napplication_protocols, 0);
    assert_int_equal(((const struct sockaddr_in *)(const void *)in.local)->sin_port, htons(15006));
}

static void test_annotations_reach_the_match(void **state)
{
    (void)state;
    wp_lf_socket s;
    wp_lf_callbacks cb;
    rec r = {0};
    wp_listener_filter f[1] = {{&TLS, NULL, NULL}};
    init_socket(&s);
    wp_lf_callbacks_init(&cb, &s, f, 1, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_CONTINUE);
    assert_string_equal(wp_lf_transport_protocol(&s), "tls");
    assert_string_equal(wp_lf_server_name(&s), "www.example.com"); /* lower-cased */
    const char *names[] = {"www.example.com"};
    wp_fcm m[2] = {{.server_names = names, .nserver_names = 1, .transport_protocol = "tls"}, {0}};
    const wp_fcm *p[2] = {&m[0], &m[1]};
    wp_fcm_input in;
    wp_lf_match_input(&s, &in);
    assert_int_equal(in.napplication_protocols, 2);
    assert_string_equal(in.application_protocols[1], "http/1.1");
    assert_int_equal(wp_fcm_select(p, 2, &in), 0);
    wp_lf_socket_release(&s);
    assert_null(s.det);
}

static void test_stop_and_continue(void **state)
{
    (void)state;
    wp_lf_socket s;
    wp_lf_callbacks cb;
    rec r = {0};
    wp_listener_filter f[2] = {{&WAIT, NULL, NULL}, {&TLS, NULL, NULL}};
    init_socket(&s);
    wp_lf_callbacks_init(&cb, &s, f, 2, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_STOP_ITERATION);
    assert_int_equal(r.calls, 1); /* the second filter waits */
    assert_null(s.det);
    r.parked->continue_filter_chain(r.parked, true);
    assert_int_equal(r.calls, 2);
    assert_int_equal(r.done_calls, 1);
    assert_true(r.done_ok);
    assert_string_equal(wp_lf_transport_protocol(&s), "tls");
    wp_lf_socket_release(&s);
    /* a failed filter ends the chain: the rest never runs */
    rec r2 = {0};
    init_socket(&s);
    wp_lf_callbacks_init(&cb, &s, f, 2, on_done, &r2);
    assert_int_equal(wp_lf_run(&cb), WP_LF_STOP_ITERATION);
    r2.parked->continue_filter_chain(r2.parked, false);
    assert_int_equal(r2.calls, 1);
    assert_int_equal(r2.done_calls, 1);
    assert_false(r2.done_ok);
}

static void test_restore_and_truncate(void **state)
{
    (void)state;
    wp_lf_socket s;
    init_socket(&s);
    struct sockaddr_in o = {.sin_family = AF_INET, .sin_port = htons(8080)};
    inet_pton(AF_INET, "10.10.0.5", &o.sin_addr);
    wp_lf_restore_local_address(&s, (struct sockaddr *)&o);
    assert_true(s.local_restored);
    assert_int_equal(s.local.in.sin_port, htons(8080));
    assert_int_equal(s.direct_remote.in.sin_port, htons(40000));
    const char *many[12];
    for (int i = 0; i < 12; i++)
        many[i] = "http/1.1";
    wp_lf_set_application_protocols(&s, many, 12);
    assert_int_equal(s.det->nalpn, WP_LF_MAX_ALPN);
    char longname[400];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    wp_lf_set_server_name(&s, longname);
    assert_int_equal(strlen(wp_lf_server_name(&s)), WP_LF_SNI_MAX - 1);
    wp_lf_socket_release(&s);
}

/* A reading filter: done once it has seen `need` bytes; fails on a byte 'X'. */
static wp_lf_status reader_accept(const void *self, wp_lf_callbacks *cb)
{
    (void)self;
    ((rec *)cb->owner)->calls++;
    return WP_LF_STOP_ITERATION;
}

/* A reading filter's config: the bytes it needs, and how many it saw last. */
typedef struct {
    size_t need, seen;
} reader_cfg;

static wp_lf_status reader_data(const void *self, wp_lf_callbacks *cb, const unsigned char *d,
                                size_t len)
{
    reader_cfg *r = (reader_cfg *)(uintptr_t)self;
    (void)cb;
    r->seen = len;
    if (memchr(d, 'X', len))
        return WP_LF_FAILED;
    return len >= r->need ? WP_LF_CONTINUE : WP_LF_STOP_ITERATION;
}

static size_t reader_max(const void *self)
{
    (void)self;
    return 64;
}

static const wp_listener_filter_ops READER = {"fake.reader", reader_accept, reader_data,
                                              reader_max};

static void test_reading_filters(void **state)
{
    (void)state;
    reader_cfg three = {3, 0}, two = {2, 0};
    const wp_listener_filter f[] = {
        {&READER, &three, NULL}, {&READER, &two, NULL}, {&TLS, NULL, NULL}};
    wp_lf_socket s;
    init_socket(&s);
    rec r = {0};
    wp_lf_callbacks cb;
    wp_lf_callbacks_init(&cb, &s, f, 3, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_STOP_ITERATION);
    assert_true(wp_lf_wants_data(&cb));
    assert_int_equal(wp_lf_max_read_bytes(&cb), 64);
    const unsigned char bytes[] = "abcdef";
    wp_lf_on_data(&cb, bytes, 2); /* not enough for the first */
    assert_int_equal(r.done_calls, 0);
    assert_int_equal(three.seen, 2);
    wp_lf_on_data(&cb, bytes, 4); /* the first continues; the second has its 2 at once */
    assert_int_equal(three.seen, 4);
    assert_int_equal(two.seen, 4);
    assert_int_equal(r.done_calls, 1); /* then the TLS fake ran and the chain ended */
    assert_true(r.done_ok);
    assert_int_equal(r.calls, 3);
    assert_string_equal(wp_lf_transport_protocol(&s), "tls");
    wp_lf_socket_release(&s);
}

static void test_reading_filter_fails(void **state)
{
    (void)state;
    reader_cfg three = {3, 0};
    const wp_listener_filter f[] = {{&READER, &three, NULL}, {&TLS, NULL, NULL}};
    wp_lf_socket s;
    init_socket(&s);
    rec r = {0};
    wp_lf_callbacks cb;
    wp_lf_callbacks_init(&cb, &s, f, 2, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_STOP_ITERATION);
    wp_lf_on_data(&cb, (const unsigned char *)"aX", 2);
    assert_int_equal(r.done_calls, 1);
    assert_false(r.done_ok);
    assert_int_equal(r.calls, 1); /* the filter after it never ran */
    wp_lf_socket_release(&s);
}

/* filter_disabled: the filter is skipped when the predicate matches the (restored) local
 * port; Istio's virtualInbound shape: tls_inspector disabled on 15006, http_inspector on
 * or([80,81), [15006,15007)), a not_match, any_match. */
static void test_filter_disabled(void **state)
{
    (void)state;
    const wp_lf_pred r15006 = {.kind = WP_LF_PRED_PORT_RANGE, .start = 15006, .end = 15007};
    const wp_lf_pred ranges[2] = {{.kind = WP_LF_PRED_PORT_RANGE, .start = 80, .end = 81}, r15006};
    const wp_lf_pred or = {.kind = WP_LF_PRED_OR, .kids = ranges, .nkids = 2};
    const wp_lf_pred and = {.kind = WP_LF_PRED_AND, .kids = ranges, .nkids = 2};
    const wp_lf_pred not = {.kind = WP_LF_PRED_NOT, .kids = &r15006, .nkids = 1};
    const wp_lf_pred any = {.kind = WP_LF_PRED_ANY};
    wp_lf_socket s;
    init_socket(&s); /* local port 15006 */
    assert_true(wp_lf_pred_match(&r15006, &s));
    assert_true(wp_lf_pred_match(& or, &s));
    assert_false(wp_lf_pred_match(&and, &s));
    assert_false(wp_lf_pred_match(&not, &s));
    assert_true(wp_lf_pred_match(&any, &s));
    /* original_dst restored port 80: the range matches the restored port */
    struct sockaddr_in od = {.sin_family = AF_INET, .sin_port = htons(80)};
    inet_pton(AF_INET, "10.1.2.3", &od.sin_addr);
    wp_lf_restore_local_address(&s, (struct sockaddr *)&od);
    assert_false(wp_lf_pred_match(&r15006, &s));
    assert_true(wp_lf_pred_match(& or, &s));
    assert_true(wp_lf_pred_match(&not, &s));
    /* the run skips a disabled filter and runs the others */
    rec r = {0};
    wp_lf_callbacks cb;
    wp_listener_filter f[2] = {{&WAIT, NULL, & or }, {&TLS, NULL, &r15006}};
    wp_lf_callbacks_init(&cb, &s, f, 2, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_CONTINUE);
    assert_int_equal(r.calls, 1); /* WAIT skipped (port 80), TLS ran */
    assert_string_equal(wp_lf_transport_protocol(&s), "tls");
    wp_lf_socket_release(&s);
    /* port 8080: WAIT runs and stops */
    od.sin_port = htons(8080);
    init_socket(&s);
    wp_lf_restore_local_address(&s, (struct sockaddr *)&od);
    r = (rec){0};
    wp_lf_callbacks_init(&cb, &s, f, 2, on_done, &r);
    assert_int_equal(wp_lf_run(&cb), WP_LF_STOP_ITERATION);
    assert_int_equal(r.calls, 1);
    wp_lf_socket_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_filters),
        cmocka_unit_test(test_filter_disabled),
        cmocka_unit_test(test_annotations_reach_the_match),
        cmocka_unit_test(test_stop_and_continue),
        cmocka_unit_test(test_restore_and_truncate),
        cmocka_unit_test(test_reading_filters),
        cmocka_unit_test(test_reading_filter_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
