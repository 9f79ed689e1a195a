/*
 * test_localmesh_dns_relay.c - the pod network's DNS relay (cli/localmesh_dns_relay.h): the
 * host's first IPv4 nameserver read from resolv.conf; a query relayed to the upstream and its
 * answer back to the querier; an answer from anyone but the upstream ignored; a query the
 * upstream never answers forgotten without an answer; close with queries in flight.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "cli/localmesh_dns_relay.h"

static void resolv_conf(void **state)
{
    (void)state;
    char path[] = "/tmp/weft-resolv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "# generated\nsearch example.test\nnameserver fe80::1\n"
                       "nameserver  10.255.255.53 # comment\nnameserver 8.8.8.8\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char ip[64];
    assert_int_equal(wf_lm_resolv_first_ipv4(path, ip, sizeof ip), 0);
    assert_string_equal(ip, "10.255.255.53");
    FILE *f = fopen(path, "w");
    fputs("search only.test\nnameserver ::1\n", f);
    fclose(f);
    assert_int_equal(wf_lm_resolv_first_ipv4(path, ip, sizeof ip), -1);
    unlink(path);
    assert_int_equal(wf_lm_resolv_first_ipv4("/nonexistent/resolv.conf", ip, sizeof ip), -1);
}

/* A UDP socket bound to 127.0.0.1:0; its port in *port. */
static int udp_socket(int *port)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return s;
}

/* Runs the loop until fd is readable or ms passed; 1 when readable. */
static int run_until_readable(uv_loop_t *loop, int fd, int ms)
{
    for (int i = 0; i < ms / 5; i++) {
        uv_run(loop, UV_RUN_NOWAIT);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 5) == 1)
            return 1;
    }
    return 0;
}

static void send_to(int s, int port, const char *msg, size_t len)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(sendto(s, msg, len, 0, (struct sockaddr *)&a, sizeof a), (ssize_t)len);
}

static void relays_and_answers(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    int up_port, cl_port, relay_port, other_port;
    int up = udp_socket(&up_port), client = udp_socket(&cl_port), other = udp_socket(&other_port);
    assert_true(up >= 0 && client >= 0 && other >= 0);
    /* a free port for the relay */
    int tmp = udp_socket(&relay_port);
    close(tmp);
    wf_lm_dns_relay *r = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(
        wf_lm_dns_relay_start(&loop, "127.0.0.1", relay_port, "127.0.0.1", up_port, &r, &err), 0);
    const char q[] = "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00question";
    send_to(client, relay_port, q, sizeof q - 1);
    assert_true(run_until_readable(&loop, up, 2000));
    char buf[512];
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(up, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    assert_int_equal(n, (ssize_t)(sizeof q - 1));
    assert_memory_equal(buf, q, sizeof q - 1);
    /* someone else answering the relay's upstream socket is ignored */
    sendto(other, "\x12\x34spoofed-answer", 16, 0, (struct sockaddr *)&from, fl);
    assert_false(run_until_readable(&loop, client, 100));
    /* the upstream's answer reaches the querier */
    sendto(up,
           "\x12\x34\x81\x80"
           "answer",
           10, 0, (struct sockaddr *)&from, fl);
    assert_true(run_until_readable(&loop, client, 2000));
    n = recv(client, buf, sizeof buf, 0);
    assert_int_equal(n, 10);
    assert_memory_equal(buf,
                        "\x12\x34\x81\x80"
                        "answer",
                        10);
    /* a query in flight when the relay closes: dropped, everything freed (ASan checks) */
    send_to(client, relay_port, q, sizeof q - 1);
    assert_true(run_until_readable(&loop, up, 2000));
    wf_lm_dns_relay_close(r);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    close(up);
    close(client);
    close(other);
    wf_strbuf_free(&err);
}

static void bad_address(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    wf_lm_dns_relay *r = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_lm_dns_relay_start(&loop, "not-an-ip", 53, "127.0.0.1", 53, &r, &err), -1);
    assert_null(r);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "bad DNS relay address"));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resolv_conf),
        cmocka_unit_test(relays_and_answers),
        cmocka_unit_test(bad_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
