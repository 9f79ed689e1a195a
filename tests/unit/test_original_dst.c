/*
 * test_original_dst.c - transparent capture in the proxy: the original_dst listener filter
 * (filters/listener/original_dst.h), use_original_dst / bind_to_port / upstream_bind_config in
 * the bootstrap, and the hand-off lookup (config.h wp_listener_find_by_address, Envoy's
 * getBalancedHandlerByAddress). SO_ORIGINAL_DST itself needs iptables: the integration test
 * test_proxy_original_dst.py covers it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#include "proxy/bootstrap/bootstrap.h"
#include "proxy/filters/listener/original_dst.h"
#include "proxy/net/listener_filter.h"

#define TCP_T  "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
#define ODST_T "type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst"
#define CHAIN(cluster)                                                                             \
    "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.tcp_proxy\","              \
    "\"typed_config\":{\"@type\":\"" TCP_T "\",\"stat_prefix\":\"s\",\"cluster\":\"" cluster       \
    "\"}}]}]"
#define LST(name, ip, port, extra)                                                                 \
    "{\"name\":\"" name "\",\"address\":{\"socket_address\":{\"address\":\"" ip                    \
    "\",\"port_value\":" #port "}}," extra CHAIN("PassthroughCluster") "}"
#define ODST_CLUSTER(name, extra)                                                                  \
    "{\"name\":\"" name "\",\"type\":\"ORIGINAL_DST\",\"lb_policy\":\"CLUSTER_PROVIDED\","         \
    "\"connect_timeout\":\"10s\"" extra "}"
#define BOOT(listeners, clusters)                                                                  \
    "{\"static_resources\":{\"listeners\":[" listeners "],\"clusters\":[" clusters "]}}"
#define PASSTHROUGH ODST_CLUSTER("PassthroughCluster", "")

/* Istio's capture layout: virtualOutbound, two unbound outbound listeners, virtualInbound. */
static const char *capture = BOOT(
    LST("virtualOutbound", "0.0.0.0", 15001, "\"use_original_dst\":true,") "," LST(
        "0.0.0.0_80", "0.0.0.0", 80,
        "\"bind_to_port\":false,") "," LST("10.96.0.10_53", "10.96.0.10", 53,
                                           "\"bindToPort\":false,") "," LST("[::]_80", "::", 80,
                                                                            "\"bind_to_port\":"
                                                                            "false,") "," LST("virt"
                                                                                              "ualI"
                                                                                              "nbou"
                                                                                              "nd",
                                                                                              "0.0."
                                                                                              "0.0",
                                                                                              15006,
                                                                                              "\"li"
                                                                                              "sten"
                                                                                              "er_"
                                                                                              "filt"
                                                                                              "ers"
                                                                                              "\":["
                                                                                              "{\"n"
                                                                                              "ame"
                                                                                              "\":"
                                                                                              "\"en"
                                                                                              "voy."
                                                                                              "filt"
                                                                                              "ers."
                                                                                              "list"
                                                                                              "ener"
                                                                                              ".ori"
                                                                                              "gina"
                                                                                              "l_"
                                                                                              "dst"
                                                                                              "\","
                                                                                              "\"ty"
                                                                                              "ped_"
                                                                                              "conf"
                                                                                              "ig\""
                                                                                              ":{"
                                                                                              "\"@"
                                                                                              "type"
                                                                                              "\":"
                                                                                              "\"" ODST_T
                                                                                              "\"}}"
                                                                                              "],"),
    PASSTHROUGH
    "," ODST_CLUSTER("InboundPassthroughCluster", ",\"upstream_bind_config\":{\"source_address\":{"
                                                  "\"address\":\"127.0.0.6\",\"port_value\":0}}"));

static wp_config *load_ok(const char *text)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (!c)
        fail_msg("%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

static void test_bootstrap_capture_layout(void **state)
{
    (void)state;
    wp_config *c = load_ok(capture);
    assert_int_equal(c->nlisteners, 5);
    const wp_listener *vo = &c->listeners[0], *l80 = &c->listeners[1], *vi = &c->listeners[4];
    /* use_original_dst appends Envoy's original_dst listener filter */
    assert_true(vo->use_original_dst);
    assert_true(vo->bind_to_port);
    assert_int_equal(vo->nlistener_filters, 1);
    assert_ptr_equal(vo->listener_filters[0].ops, &wp_original_dst_ops);
    assert_false(l80->bind_to_port);
    assert_false(l80->use_original_dst);
    assert_int_equal(l80->nlistener_filters, 0);
    assert_false(c->listeners[2].bind_to_port); /* camelCase too */
    /* an explicit original_dst filter (virtualInbound) */
    assert_false(vi->use_original_dst);
    assert_int_equal(vi->nlistener_filters, 1);
    assert_ptr_equal(vi->listener_filters[0].ops, &wp_original_dst_ops);
    /* ORIGINAL_DST clusters: no endpoints; InboundPassthroughCluster's source 127.0.0.6 */
    assert_true(c->clusters[0].original_dst);
    assert_int_equal(c->clusters[0].nendpoints, 0);
    assert_null(c->clusters[0].bind_source);
    assert_non_null(c->clusters[1].bind_source);
    assert_string_equal(c->clusters[1].bind_source->text, "127.0.0.6:0");
    wp_config_unref(c);
}

static void test_bootstrap_capture_errors(void **state)
{
    (void)state;
    wf_test_expect_bootstrap_error(
        BOOT(LST("t", "0.0.0.0", 15001, "\"transparent\":true,"), PASSTHROUGH),
        "t.json: static_resources.listeners[0].transparent: transparent listeners (TPROXY "
        "interception) are not supported by weft-proxy; use REDIRECT");
    wf_test_expect_bootstrap_error(
        BOOT(LST("t", "0.0.0.0", 15001,
                 "\"listener_filters\":[{\"name\":\"envoy.filters.listener.original_dst\","
                 "\"typed_config\":{\"@type\":\"" ODST_T "\",\"x\":1}}],"),
             PASSTHROUGH),
        "t.json: static_resources.listeners[0].listener_filters[0].typed_config.x: unknown "
        "field");
    wf_test_expect_bootstrap_error(
        BOOT(LST("t", "0.0.0.0", 15001, ""),
             ODST_CLUSTER("PassthroughCluster",
                          ",\"upstream_bind_config\":{\"source_address\":{\"address\":"
                          "\"nowhere\",\"port_value\":0}}")),
        "t.json: static_resources.clusters[0].upstream_bind_config.source_address.address: "
        "malformed IP "
        "address: nowhere");
    wf_test_expect_bootstrap_error(
        BOOT(LST("t", "0.0.0.0", 15001, ""),
             ODST_CLUSTER("PassthroughCluster", ",\"upstream_bind_config\":{\"freebind\":true}")),
        "t.json: static_resources.clusters[0].upstream_bind_config: only source_address is "
        "supported by weft-proxy");
}

static struct sockaddr_storage sa(const char *ip, int port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
    }
    return ss;
}

static int find(const wp_config *c, const char *ip, int port)
{
    struct sockaddr_storage ss = sa(ip, port);
    return wp_listener_find_by_address(c, (const struct sockaddr *)&ss);
}

static void test_find_by_address(void **state)
{
    (void)state;
    wp_config *c = load_ok(capture);
    for (size_t i = 0; i < c->nlisteners; i++)
        c->listeners[i].bound = true; /* as the server marks listeners in service */
    /* a VIP with its own listener: exact; another address on port 80: the 0.0.0.0 one */
    assert_int_equal(find(c, "10.96.0.10", 53), 2);
    assert_int_equal(find(c, "10.1.2.3", 80), 1);
    assert_int_equal(find(c, "10.96.0.11", 53), -1); /* no wildcard listener on 53 */
    assert_int_equal(find(c, "10.1.2.3", 9090), -1); /* virtualOutbound keeps it */
    /* IPv6: the [::] listener on the port, never the IPv4 one */
    assert_int_equal(find(c, "fd00::5", 80), 3);
    assert_int_equal(find(c, "fd00::5", 53), -1);
    /* a listener not in service (it could not be added) is not a target */
    c->listeners[2].bound = false;
    assert_int_equal(find(c, "10.96.0.10", 53), -1);
    assert_int_equal(wp_listener_find_by_address(c, NULL), -1);
    wp_config_unref(c);
}

/* A loopback connection nobody redirected: SO_ORIGINAL_DST fails and the filter keeps the
 * local address (Envoy's getOriginalDst returning nullptr). */
static void test_filter_not_redirected(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM, 0), cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l >= 0 && cfd >= 0);
    struct sockaddr_storage a = sa("127.0.0.1", 0);
    socklen_t len = sizeof(struct sockaddr_in);
    assert_int_equal(bind(l, (struct sockaddr *)&a, len), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, len), 0);
    int s = accept(l, NULL, NULL);
    assert_true(s >= 0);
    wp_lf_addr out;
    memset(&out, 0xab, sizeof out);
    assert_false(wp_original_dst_get(s, AF_INET, &out));
    assert_int_equal(((unsigned char *)&out)[0], 0xab); /* untouched */
    assert_false(wp_original_dst_get(-1, AF_INET, &out));
    assert_false(wp_original_dst_get(s, AF_UNIX, &out));

    wp_lf_socket sock;
    wp_lf_socket_init(&sock, (struct sockaddr *)&a, (struct sockaddr *)&a);
    assert_int_equal(sock.fd, -1);
    sock.fd = s;
    wp_listener_filter f = {&wp_original_dst_ops, NULL, NULL};
    wp_lf_callbacks cb;
    wp_lf_callbacks_init(&cb, &sock, &f, 1, NULL, NULL);
    assert_int_equal(wp_lf_run(&cb), WP_LF_CONTINUE);
    assert_false(sock.local_restored);
    wp_lf_conn conn = {.sock = sock};
    assert_null(wp_lf_conn_original_dst(&conn));
    assert_null(wp_lf_conn_original_dst(NULL));
    /* what a redirected socket gives: the restored address is the ORIGINAL_DST host */
    struct sockaddr_storage vip = sa("10.1.2.3", 80);
    wp_lf_restore_local_address(&conn.sock, (struct sockaddr *)&vip);
    const struct sockaddr *d = wp_lf_conn_original_dst(&conn);
    assert_non_null(d);
    assert_memory_equal(d, &vip, sizeof(struct sockaddr_in));
    wp_lf_socket_release(&sock);
    close(s);
    close(cfd);
    close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bootstrap_capture_layout),
        cmocka_unit_test(test_bootstrap_capture_errors),
        cmocka_unit_test(test_find_by_address),
        cmocka_unit_test(test_filter_not_redirected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
