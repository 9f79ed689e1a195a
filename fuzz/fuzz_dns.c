/*
 * fuzz_dns.c - libFuzzer target for the agent's DNS query path (proxy/agent/dns_table.h): a
 * query from the application, parsed by ldns and answered from a small NameTable, or a
 * reply from an upstream, truncated for the client.
 *
 * Input: byte 0 bit 0 TCP (else UDP), bit 1 no table yet, bit 2 the rest is an upstream reply
 * (truncated to byte 1 * 8 bytes: it then parses, with TC and no records), else the rest is a
 * query. Invariants: an answer
 * is never empty, is at least a 12-byte header carrying the query's id with QR set, fits the
 * client's size (wp_dns_max_size), and parses again with ldns; WP_DNS_FORWARD happens only
 * with a table. SERVFAIL of any query follows the same rules.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "proxy/agent/dns_table.h"

static wp_dns_table *the_table(void)
{
    static wp_dns_table *t;
    if (!t) {
        json_t *nt = json_loads(
            "{\"table\": {\"catalog.istioinaction.svc.cluster.local\": {\"ips\": [\"10.96.0.20\","
            "\"fd00::20\"], \"registry\": \"Kubernetes\", \"shortname\": \"catalog\","
            "\"namespace\": \"istioinaction\"}, \"*.wild.test\": {\"ips\": [\"192.0.2.7\"],"
            "\"registry\": \"External\"}, \"db.internal.test\": {\"ips\": [\"240.240.26.17\"],"
            "\"registry\": \"External\"}}}",
            0, NULL);
        static const char *const search[] = {"istioinaction.svc.cluster.local"};
        wp_dns_scope sc = {.ns = "istioinaction",
                           .domain = "istioinaction.svc.cluster.local",
                           .search = search,
                           .nsearch = 1};
        t = wp_dns_table_new(nt, &sc);
        json_decref(nt);
        if (!t)
            abort();
    }
    return t;
}

static void check_reply(const uint8_t *q, size_t qlen, const uint8_t *r, size_t n, size_t max)
{
    if (!r || n < 12 || n > max || r[0] != q[0] || r[1] != q[1] || !(r[2] & 0x80))
        abort();
    ldns_pkt *p = NULL;
    if (n > 12 && ldns_wire2pkt(&p, r, n) != LDNS_STATUS_OK)
        abort();
    ldns_pkt_free(p);
    (void)qlen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    bool tcp = data[0] & 1, none = data[0] & 2, reply = data[0] & 4;
    size_t lim = (size_t)data[1] * 8;
    const uint8_t *q = data + 2;
    size_t len = size - 2;
    if (reply) {
        uint8_t *m = malloc(len ? len : 1);
        if (!m)
            return 0;
        memcpy(m, q, len);
        size_t n = len;
        if (wp_dns_truncate(&m, &n, lim) == 0 && len > lim) {
            ldns_pkt *p = NULL; /* cut down: it parses, TC set, no records */
            if (ldns_wire2pkt(&p, m, n) != LDNS_STATUS_OK || !ldns_pkt_tc(p) ||
                ldns_pkt_ancount(p) || ldns_pkt_nscount(p))
                abort();
            ldns_pkt_free(p);
        }
        free(m);
        return 0;
    }
    uint8_t *out = NULL;
    size_t n = 0;
    char name[256];
    const wp_dns_table *t = none ? NULL : the_table();
    int rc = wp_dns_answer(t, q, len, tcp, &out, &n, name, sizeof name);
    if (rc == WP_DNS_ANSWER)
        check_reply(q, len, out, n, wp_dns_max_size(q, len, tcp));
    else if (rc == WP_DNS_FORWARD && !t)
        abort();
    else if (out)
        abort();
    free(out);
    out = NULL;
    if (wp_dns_servfail(q, len, &out, &n) == WP_DNS_ANSWER)
        check_reply(q, len, out, n, WP_DNS_TCP_MAX);
    free(out);
    return 0;
}
