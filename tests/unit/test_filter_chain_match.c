/*
 * test_filter_chain_match.c - Envoy's filter chain match (src/proxy/net/filter_chain_match.c):
 * each criterion, their order of precedence, the most specific value winning (longest
 * prefix, exact before wildcard server names, exact port before any), no fallback to a less
 * specific branch once a more specific one was chosen, and the config-time checks (equal and
 * overlapping matchers, partial wildcards), as FilterChainManagerImpl.
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

#include "proxy/net/filter_chain_match.h"

/* A connection: "ip:port" strings for destination and source (direct source = source). */
typedef struct {
    struct sockaddr_storage local, remote, direct;
    wp_fcm_input in;
} conn;

static void sa_set(struct sockaddr_storage *ss, const char *ip, int port)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
    } else {
        assert_int_equal(inet_pton(AF_INET6, ip, &v6->sin6_addr), 1);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
    }
}

static conn *mk(conn *c, const char *dst, int dport, const char *src, int sport)
{
    memset(c, 0, sizeof(*c));
    sa_set(&c->local, dst, dport);
    sa_set(&c->remote, src, sport);
    sa_set(&c->direct, src, sport);
    c->in.local = (struct sockaddr *)&c->local;
    c->in.remote = (struct sockaddr *)&c->remote;
    c->in.direct_remote = (struct sockaddr *)&c->direct;
    c->in.server_name = "";
    c->in.transport_protocol = "raw_buffer";
    return c;
}

static wp_cidr cidr(const char *ip, uint32_t len)
{
    wp_cidr c;
    assert_int_equal(wp_cidr_parse(ip, len, &c), 0);
    return c;
}

static int sel(wp_fcm *ms, size_t n, const conn *c)
{
    const wp_fcm *p[16];
    for (size_t i = 0; i < n; i++)
        p[i] = &ms[i];
    return wp_fcm_select(p, n, &c->in);
}

static void test_cidr(void **state)
{
    (void)state;
    char t[64];
    wp_cidr c = cidr("10.1.2.3", 8);
    wp_cidr_text(&c, t, sizeof t);
    assert_string_equal(t, "10.0.0.0/8");
    c = cidr("2001:db8::1", 32);
    wp_cidr_text(&c, t, sizeof t);
    assert_string_equal(t, "2001:db8::/32");
    c = cidr("10.255.255.255", 12);
    wp_cidr_text(&c, t, sizeof t);
    assert_string_equal(t, "10.240.0.0/12");
    wp_cidr bad;
    assert_int_equal(wp_cidr_parse("10.0.0.0", 33, &bad), -1);
    assert_int_equal(wp_cidr_parse("::", 129, &bad), -1);
    assert_int_equal(wp_cidr_parse("example.com", 8, &bad), -1);
    conn k;
    mk(&k, "10.3.4.5", 80, "127.0.0.1", 1);
    c = cidr("10.0.0.0", 8);
    assert_true(wp_cidr_contains(&c, k.in.local));
    c = cidr("10.3.4.0", 23);
    assert_true(wp_cidr_contains(&c, k.in.local));
    c = cidr("10.3.6.0", 23);
    assert_false(wp_cidr_contains(&c, k.in.local));
    c = cidr("::", 0);
    assert_false(wp_cidr_contains(&c, k.in.local)); /* another family */
}

static void test_single_empty_chain(void **state)
{
    (void)state;
    wp_fcm m[1] = {{0}};
    conn c;
    assert_true(wp_fcm_is_empty(&m[0]));
    assert_int_equal(sel(m, 1, mk(&c, "127.0.0.1", 8080, "127.0.0.1", 5555)), 0);
    m[0].destination_port = 9090;
    assert_false(wp_fcm_is_empty(&m[0]));
    assert_int_equal(sel(m, 1, &c), -1); /* no chain: the listener's default, else closed */
    assert_int_equal(sel(m, 0, &c), -1); /* a listener with only a default_filter_chain */
}

static void test_destination_port(void **state)
{
    (void)state;
    wp_fcm m[2] = {{.destination_port = 8080}, {0}};
    conn c;
    assert_int_equal(sel(m, 2, mk(&c, "10.0.0.1", 8080, "10.0.0.2", 1000)), 0);
    assert_int_equal(sel(m, 2, mk(&c, "10.0.0.1", 9090, "10.0.0.2", 1000)), 1);
    /* the exact port is chosen first; when nothing under it matches there is no fallback to
     * the chains for any port */
    wp_cidr other = cidr("192.168.0.0", 16);
    m[0].prefix_ranges = &other;
    m[0].nprefix_ranges = 1;
    assert_int_equal(sel(m, 2, mk(&c, "10.0.0.1", 8080, "10.0.0.2", 1000)), -1);
    assert_int_equal(sel(m, 2, mk(&c, "192.168.1.1", 8080, "10.0.0.2", 1000)), 0);
}

static void test_prefix_ranges_longest_wins(void **state)
{
    (void)state;
    wp_cidr wide = cidr("10.0.0.0", 8), narrow = cidr("10.1.0.0", 16), host = cidr("10.1.2.3", 32);
    wp_fcm m[4] = {
        {.prefix_ranges = &wide, .nprefix_ranges = 1},
        {.prefix_ranges = &narrow, .nprefix_ranges = 1},
        {.prefix_ranges = &host, .nprefix_ranges = 1},
        {0},
    };
    conn c;
    assert_int_equal(sel(m, 4, mk(&c, "10.1.2.3", 80, "1.1.1.1", 1)), 2);
    assert_int_equal(sel(m, 4, mk(&c, "10.1.2.4", 80, "1.1.1.1", 1)), 1);
    assert_int_equal(sel(m, 4, mk(&c, "10.2.0.1", 80, "1.1.1.1", 1)), 0);
    assert_int_equal(sel(m, 4, mk(&c, "11.0.0.1", 80, "1.1.1.1", 1)), 3);
    assert_int_equal(sel(m, 4, mk(&c, "::1", 80, "::1", 1)), 3);
    assert_int_equal(sel(m, 3, mk(&c, "11.0.0.1", 80, "1.1.1.1", 1)), -1);
    /* a chain with several ranges matches any of them */
    wp_cidr two[2] = {cidr("192.168.0.0", 16), cidr("172.16.0.0", 12)};
    m[0].prefix_ranges = two;
    m[0].nprefix_ranges = 2;
    assert_int_equal(sel(m, 4, mk(&c, "172.17.0.1", 80, "1.1.1.1", 1)), 0);
}

static void test_server_names(void **state)
{
    (void)state;
    const char *exact[] = {"www.example.com"}, *wild[] = {"*.example.com"}, *com[] = {"*.com"};
    wp_fcm m[4] = {
        {.server_names = com, .nserver_names = 1},
        {.server_names = wild, .nserver_names = 1},
        {.server_names = exact, .nserver_names = 1},
        {0},
    };
    conn c;
    mk(&c, "10.0.0.1", 443, "10.0.0.2", 1);
    c.in.server_name = "www.example.com";
    assert_int_equal(sel(m, 4, &c), 2);
    c.in.server_name = "api.example.com";
    assert_int_equal(sel(m, 4, &c), 1);
    c.in.server_name = "a.b.example.com"; /* the longest wildcard suffix */
    assert_int_equal(sel(m, 4, &c), 1);
    c.in.server_name = "example.com"; /* "*.example.com" needs a label before it */
    assert_int_equal(sel(m, 4, &c), 0);
    c.in.server_name = "example.org";
    assert_int_equal(sel(m, 4, &c), 3);
    c.in.server_name = ""; /* no SNI: only chains without server_names */
    assert_int_equal(sel(m, 4, &c), 3);
    assert_int_equal(sel(m, 3, &c), -1);
}

static void test_transport_and_alpn(void **state)
{
    (void)state;
    const char *h2[] = {"h2"}, *h11[] = {"http/1.1", "http/1.0"};
    wp_fcm m[4] = {
        {.transport_protocol = "tls", .application_protocols = h2, .napplication_protocols = 1},
        {.transport_protocol = "tls", .application_protocols = h11, .napplication_protocols = 2},
        {.transport_protocol = "tls"},
        {0},
    };
    conn c;
    mk(&c, "10.0.0.1", 443, "10.0.0.2", 1);
    assert_int_equal(sel(m, 4, &c), 3); /* raw_buffer: the chain without a transport */
    c.in.transport_protocol = "tls";
    assert_int_equal(sel(m, 4, &c), 2); /* no ALPN */
    const char *offer[] = {"http/1.1", "h2"};
    c.in.application_protocols = offer;
    c.in.napplication_protocols = 2;
    assert_int_equal(sel(m, 4, &c), 1); /* the first offered protocol some chain names */
    offer[0] = "h2";
    assert_int_equal(sel(m, 4, &c), 0);
    offer[0] = offer[1] = "spdy/3";
    assert_int_equal(sel(m, 4, &c), 2);
    /* tls chosen, nothing under it: no fallback to the chain without a transport */
    assert_int_equal(sel(m, 2, &c), -1);
}

static void test_source_criteria(void **state)
{
    (void)state;
    wp_cidr lo2 = cidr("127.0.0.2", 32), lo8 = cidr("127.0.0.0", 8);
    const uint32_t ports[] = {4000};
    wp_fcm m[4] = {
        {.direct_source_prefix_ranges = &lo2, .ndirect_source_prefix_ranges = 1},
        {.source_prefix_ranges = &lo8,
         .nsource_prefix_ranges = 1,
         .source_ports = ports,
         .nsource_ports = 1},
        {.source_prefix_ranges = &lo8, .nsource_prefix_ranges = 1},
        {0},
    };
    conn c;
    assert_int_equal(sel(m, 4, mk(&c, "127.0.0.1", 80, "127.0.0.2", 3000)), 0);
    assert_int_equal(sel(m, 4, mk(&c, "127.0.0.1", 80, "127.0.0.3", 4000)), 1);
    assert_int_equal(sel(m, 4, mk(&c, "127.0.0.1", 80, "127.0.0.3", 4001)), 2);
    assert_int_equal(sel(m, 4, mk(&c, "10.0.0.1", 80, "10.0.0.9", 4000)), 3);
    /* direct source decided before the source: a restored (proxy protocol) source does not
     * move the connection off the direct source chain */
    mk(&c, "127.0.0.1", 80, "127.0.0.2", 3000);
    sa_set(&c.remote, "127.0.0.3", 4000);
    assert_int_equal(sel(m, 4, &c), 0);
}

static void test_source_type(void **state)
{
    (void)state;
    wp_fcm m[3] = {
        {.source_type = WP_FCM_SOURCE_SAME_IP_OR_LOOPBACK},
        {.source_type = WP_FCM_SOURCE_EXTERNAL},
        {0},
    };
    conn c;
    assert_int_equal(sel(m, 3, mk(&c, "10.0.0.1", 80, "127.0.0.5", 1)), 0);
    assert_int_equal(sel(m, 3, mk(&c, "10.0.0.1", 80, "10.0.0.1", 1)), 0); /* same IP */
    assert_int_equal(sel(m, 3, mk(&c, "10.0.0.1", 80, "::1", 1)), 0);
    assert_int_equal(sel(m, 3, mk(&c, "10.0.0.1", 80, "10.0.0.2", 1)), 1);
    /* without an EXTERNAL chain an external peer takes ANY */
    m[1].source_type = WP_FCM_SOURCE_ANY;
    m[1].destination_port = 0;
    assert_int_equal(sel(m, 2, mk(&c, "10.0.0.1", 80, "10.0.0.2", 1)), 1);
}

static void test_precedence(void **state)
{
    (void)state;
    /* destination port outranks a source range: the port chain wins although the source
     * chain is "more specific" on its own criterion */
    wp_cidr lo2 = cidr("127.0.0.2", 32), dst = cidr("127.0.0.1", 32);
    const char *tls_only[] = {"a.example.com"};
    wp_fcm m[3] = {
        {.source_prefix_ranges = &lo2, .nsource_prefix_ranges = 1},
        {.destination_port = 8080},
        {.prefix_ranges = &dst, .nprefix_ranges = 1},
    };
    conn c;
    assert_int_equal(sel(m, 3, mk(&c, "127.0.0.1", 8080, "127.0.0.2", 1)), 1);
    /* destination IP outranks the source: chain 2 (dst /32) beats chain 0 (any dst) */
    assert_int_equal(sel(m, 3, mk(&c, "127.0.0.1", 9090, "127.0.0.2", 1)), 2);
    /* under the chosen destination nothing names the source: the source chain is not
     * tried again */
    m[2].source_prefix_ranges = &lo2;
    m[2].nsource_prefix_ranges = 1;
    assert_int_equal(sel(m, 3, mk(&c, "127.0.0.1", 9090, "127.0.0.3", 1)), -1);
    /* server name outranks the transport protocol */
    wp_fcm n[2] = {{.server_names = tls_only, .nserver_names = 1}, {.transport_protocol = "tls"}};
    mk(&c, "10.0.0.1", 443, "10.0.0.2", 1);
    c.in.server_name = "a.example.com";
    c.in.transport_protocol = "tls";
    assert_int_equal(sel(n, 2, &c), 0);
}

static int check(wp_fcm *ms, size_t n, size_t *a, size_t *b)
{
    const wp_fcm *p[16];
    for (size_t i = 0; i < n; i++)
        p[i] = &ms[i];
    return wp_fcm_check(p, n, a, b);
}

static void test_check_duplicates(void **state)
{
    (void)state;
    size_t a = 99, b = 99;
    wp_cidr lo2 = cidr("127.0.0.2", 32), lo2b = cidr("127.0.0.2", 32), lo3 = cidr("127.0.0.3", 32);
    wp_cidr two[2] = {cidr("127.0.0.3", 32), cidr("127.0.0.2", 32)};
    wp_fcm m[3] = {{.destination_port = 80}, {0}, {.destination_port = 80}};
    assert_int_equal(check(m, 3, &a, &b), WP_FCM_SAME);
    assert_int_equal(a, 0);
    assert_int_equal(b, 2);
    assert_int_equal(check(m, 2, &a, &b), WP_FCM_OK);
    wp_fcm e[2] = {{0}, {0}}; /* two chains without a match */
    assert_int_equal(check(e, 2, &a, &b), WP_FCM_SAME);
    /* the same ranges, written twice */
    wp_fcm s[2] = {{.source_prefix_ranges = &lo2, .nsource_prefix_ranges = 1},
                   {.source_prefix_ranges = &lo2b, .nsource_prefix_ranges = 1}};
    assert_int_equal(check(s, 2, &a, &b), WP_FCM_SAME);
    s[1].source_prefix_ranges = &lo3;
    assert_int_equal(check(s, 2, &a, &b), WP_FCM_OK);
    /* different lists that share a value overlap */
    s[1].source_prefix_ranges = two;
    s[1].nsource_prefix_ranges = 2;
    assert_int_equal(check(s, 2, &a, &b), WP_FCM_OVERLAP);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    const char *x[] = {"a.com", "b.com"}, *y[] = {"b.com"};
    wp_fcm sn[2] = {{.server_names = x, .nserver_names = 2},
                    {.server_names = y, .nserver_names = 1}};
    assert_int_equal(check(sn, 2, &a, &b), WP_FCM_OVERLAP);
    sn[1].transport_protocol = "tls";
    assert_int_equal(check(sn, 2, &a, &b), WP_FCM_OK);
}

static void test_partial_wildcards(void **state)
{
    (void)state;
    assert_true(wp_fcm_server_name_ok("www.example.com"));
    assert_true(wp_fcm_server_name_ok("*.example.com"));
    assert_false(wp_fcm_server_name_ok("*example.com"));
    assert_false(wp_fcm_server_name_ok("www.*.com"));
    assert_false(wp_fcm_server_name_ok("*.*.com"));
    assert_false(wp_fcm_server_name_ok("*"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cidr),
        cmocka_unit_test(test_single_empty_chain),
        cmocka_unit_test(test_destination_port),
        cmocka_unit_test(test_prefix_ranges_longest_wins),
        cmocka_unit_test(test_server_names),
        cmocka_unit_test(test_transport_and_alpn),
        cmocka_unit_test(test_source_criteria),
        cmocka_unit_test(test_source_type),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_check_duplicates),
        cmocka_unit_test(test_partial_wildcards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
