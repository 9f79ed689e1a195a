/*
 * test_dns_table.c - proxy/agent/dns_table: the agent's lookup table and answers (Istio's
 * pkg/dns/client): the FQDN, name.ns, name.ns.svc and (same namespace) short names of a
 * Kubernetes entry, the first search domain's CNAME, A/AAAA with TTL 30 and AA, NOERROR with no
 * answer for a known host without the asked type, wildcard entries, forwarding of unknown names
 * and other types, SERVFAIL before a table, malformed messages, truncation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ldns/ldns.h>

#include "proxy/agent/dns_table.h"

static const char NT[] =
    "{\"@type\": \"type.googleapis.com/istio.networking.nds.v1.NameTable\", \"table\": {"
    "\"catalog.istioinaction.svc.cluster.local\": {\"ips\": [\"10.96.0.20\"], "
    "  \"registry\": \"Kubernetes\", \"shortname\": \"catalog\", \"namespace\": \"istioinaction\"},"
    "\"forum.forum-services.svc.cluster.local\": {\"ips\": [\"10.96.0.30\", \"fd00::30\"], "
    "  \"registry\": \"Kubernetes\", \"shortname\": \"forum\", \"namespace\": \"forum-services\"},"
    "\"db.internal.test\": {\"ips\": [\"240.240.26.17\"], \"registry\": \"External\"},"
    "\"*.wild.test\": {\"ips\": [\"192.0.2.7\"], \"registry\": \"External\"},"
    "\"bad.test\": {\"ips\": [\"not-an-ip\"], \"registry\": \"External\"}}}";

static wp_dns_table *table(void)
{
    json_error_t je;
    json_t *nt = json_loads(NT, 0, &je);
    assert_non_null(nt);
    static const char *const search[] = {"istioinaction.svc.cluster.local", "svc.cluster.local"};
    wp_dns_scope sc = {.ns = "istioinaction",
                       .domain = "istioinaction.svc.cluster.local",
                       .search = search,
                       .nsearch = 2};
    wp_dns_table *t = wp_dns_table_new(nt, &sc);
    json_decref(nt);
    assert_non_null(t);
    return t;
}

static uint8_t *query(const char *name, ldns_rr_type type, size_t *len)
{
    ldns_pkt *q = NULL;
    assert_int_equal(ldns_pkt_query_new_frm_str(&q, name, type, LDNS_RR_CLASS_IN, LDNS_RD),
                     LDNS_STATUS_OK);
    ldns_pkt_set_id(q, 4242);
    uint8_t *w = NULL;
    assert_int_equal(ldns_pkt2wire(&w, q, len), LDNS_STATUS_OK);
    ldns_pkt_free(q);
    return w;
}

/* The reply to name/type, parsed; NULL when not answered (rc says why). */
static ldns_pkt *ask(const wp_dns_table *t, const char *name, ldns_rr_type type, int *rc)
{
    size_t len = 0, out_len = 0;
    uint8_t *q = query(name, type, &len), *out = NULL;
    char qname[256];
    *rc = wp_dns_answer(t, q, len, false, &out, &out_len, qname, sizeof qname);
    free(q);
    if (*rc != WP_DNS_ANSWER)
        return NULL;
    ldns_pkt *p = NULL;
    assert_int_equal(ldns_wire2pkt(&p, out, out_len), LDNS_STATUS_OK);
    free(out);
    assert_int_equal(ldns_pkt_id(p), 4242);
    assert_true(ldns_pkt_qr(p));
    return p;
}

/* "owner TYPE data" of answer i. */
static char *answer(const ldns_pkt *p, size_t i)
{
    const ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_answer(p), i);
    assert_non_null(rr);
    assert_int_equal(ldns_rr_ttl(rr), 30);
    char *owner = ldns_rdf2str(ldns_rr_owner(rr)), *data = ldns_rdf2str(ldns_rr_rdf(rr, 0));
    char *type = ldns_rr_type2str(ldns_rr_get_type(rr)), *out = NULL;
    assert_true(asprintf(&out, "%s %s %s", owner, type, data) > 0);
    free(owner);
    free(data);
    free(type);
    return out;
}

static void expect_a(const wp_dns_table *t, const char *name, ldns_rr_type type, const char *want)
{
    int rc;
    ldns_pkt *p = ask(t, name, type, &rc);
    if (!p)
        fail_msg("%s: not answered (%d)", name, rc);
    assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
    assert_true(ldns_pkt_aa(p));
    char got[1024] = "";
    for (size_t i = 0; i < ldns_pkt_ancount(p); i++) {
        char *a = answer(p, i);
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "; " : "", a);
        free(a);
    }
    if (strcmp(got, want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", name, got, want);
    ldns_pkt_free(p);
}

static void test_kubernetes_names(void **state)
{
    (void)state;
    wp_dns_table *t = table();
    const char *ip = "catalog.istioinaction.svc.cluster.local. A 10.96.0.20";
    expect_a(t, "catalog.istioinaction.svc.cluster.local.", LDNS_RR_TYPE_A, ip);
    /* matched case-insensitively (ldns compresses the owner onto the question's name) */
    expect_a(t, "Catalog.IstioInAction.svc.cluster.local.", LDNS_RR_TYPE_A,
             "Catalog.IstioInAction.svc.cluster.local. A 10.96.0.20");
    expect_a(t, "catalog.", LDNS_RR_TYPE_A, "catalog. A 10.96.0.20");
    expect_a(t, "catalog.istioinaction.", LDNS_RR_TYPE_A, "catalog.istioinaction. A 10.96.0.20");
    expect_a(t, "catalog.istioinaction.svc.", LDNS_RR_TYPE_A,
             "catalog.istioinaction.svc. A 10.96.0.20");
    /* another namespace: name.ns, not the short name */
    expect_a(t, "forum.forum-services.", LDNS_RR_TYPE_A, "forum.forum-services. A 10.96.0.30");
    expect_a(t, "forum.forum-services.", LDNS_RR_TYPE_AAAA, "forum.forum-services. AAAA fd00::30");
    int rc;
    assert_null(ask(t, "forum.", LDNS_RR_TYPE_A, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    /* Istio does not generate name.ns.svc.cluster */
    assert_null(ask(t, "catalog.istioinaction.svc.cluster.", LDNS_RR_TYPE_A, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    wp_dns_table_free(t);
}

static void test_search_domain_cname(void **state)
{
    (void)state;
    wp_dns_table *t = table();
    expect_a(t, "catalog.istioinaction.istioinaction.svc.cluster.local.", LDNS_RR_TYPE_A,
             "catalog.istioinaction.istioinaction.svc.cluster.local. CNAME "
             "catalog.istioinaction.; catalog.istioinaction. A 10.96.0.20");
    expect_a(t, "db.internal.test.istioinaction.svc.cluster.local.", LDNS_RR_TYPE_A,
             "db.internal.test.istioinaction.svc.cluster.local. CNAME db.internal.test.; "
             "db.internal.test. A 240.240.26.17");
    /* "catalog." + the search domain is a real name: A, no CNAME */
    expect_a(t, "catalog.istioinaction.svc.cluster.local.", LDNS_RR_TYPE_A,
             "catalog.istioinaction.svc.cluster.local. A 10.96.0.20");
    /* only the first search domain */
    int rc;
    assert_null(ask(t, "db.internal.test.svc.cluster.local.", LDNS_RR_TYPE_A, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    wp_dns_table_free(t);
}

static void test_types_and_unknown(void **state)
{
    (void)state;
    wp_dns_table *t = table();
    int rc;
    /* known host, no AAAA: NOERROR, no answer, authoritative (Istio issue 31250) */
    ldns_pkt *p = ask(t, "db.internal.test.", LDNS_RR_TYPE_AAAA, &rc);
    assert_non_null(p);
    assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
    assert_int_equal(ldns_pkt_ancount(p), 0);
    assert_true(ldns_pkt_aa(p));
    ldns_pkt_free(p);
    /* other types of a known host, and unknown names: upstream */
    assert_null(ask(t, "db.internal.test.", LDNS_RR_TYPE_MX, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    assert_null(ask(t, "example.org.", LDNS_RR_TYPE_A, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    /* an entry whose ips do not parse answers nothing */
    assert_null(ask(t, "bad.test.", LDNS_RR_TYPE_A, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    /* wildcard: the records carry the queried name */
    expect_a(t, "a.b.wild.test.", LDNS_RR_TYPE_A, "a.b.wild.test. A 192.0.2.7");
    assert_null(ask(t, "wild.test.", LDNS_RR_TYPE_A, &rc));
    assert_int_equal(rc, WP_DNS_FORWARD);
    wp_dns_table_free(t);
}

static void test_no_table_and_malformed(void **state)
{
    (void)state;
    int rc;
    ldns_pkt *p = ask(NULL, "catalog.", LDNS_RR_TYPE_A, &rc);
    assert_non_null(p);
    assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
    ldns_pkt_free(p);
    wp_dns_table *t = table();
    uint8_t *out = NULL;
    size_t n = 0;
    /* too short, or a response: dropped */
    static const uint8_t shortq[5] = {1, 2, 3, 4, 5};
    assert_int_equal(wp_dns_answer(t, shortq, sizeof shortq, false, &out, &n, NULL, 0),
                     WP_DNS_DROP);
    size_t len = 0;
    uint8_t *q = query("catalog.", LDNS_RR_TYPE_A, &len);
    q[2] |= 0x80;
    assert_int_equal(wp_dns_answer(t, q, len, false, &out, &n, NULL, 0), WP_DNS_DROP);
    q[2] &= 0x7f;
    /* cut in the middle of the question: FORMERR with the id */
    assert_int_equal(wp_dns_answer(t, q, len - 3, false, &out, &n, NULL, 0), WP_DNS_ANSWER);
    assert_int_equal(n, 12);
    assert_int_equal(out[0] << 8 | out[1], 4242);
    assert_int_equal(out[3] & 0x0f, LDNS_RCODE_FORMERR);
    assert_true(out[2] & 0x80);
    free(out);
    /* no question: SERVFAIL */
    uint8_t hdr[12] = {0x10, 0x92, 0x01, 0};
    assert_int_equal(wp_dns_answer(t, hdr, sizeof hdr, false, &out, &n, NULL, 0), WP_DNS_ANSWER);
    assert_int_equal(out[3] & 0x0f, LDNS_RCODE_SERVFAIL);
    free(out);
    /* SERVFAIL for an upstream failure keeps the question */
    assert_int_equal(wp_dns_servfail(q, len, &out, &n), WP_DNS_ANSWER);
    ldns_pkt *sf = NULL;
    assert_int_equal(ldns_wire2pkt(&sf, out, n), LDNS_STATUS_OK);
    assert_int_equal(ldns_pkt_get_rcode(sf), LDNS_RCODE_SERVFAIL);
    assert_int_equal(ldns_pkt_qdcount(sf), 1);
    ldns_pkt_free(sf);
    free(out);
    free(q);
    wp_dns_table_free(t);
}

static void test_truncation(void **state)
{
    (void)state;
    /* 60 addresses do not fit 512 bytes over UDP: TC, question only; over TCP they do */
    json_t *ips = json_array();
    char ip[32];
    for (int i = 1; i <= 60; i++) {
        snprintf(ip, sizeof ip, "10.0.0.%d", i);
        json_array_append_new(ips, json_string(ip));
    }
    json_t *nt =
        json_pack("{s:{s:{s:o, s:s}}}", "table", "big.test", "ips", ips, "registry", "External");
    wp_dns_table *t = wp_dns_table_new(nt, NULL);
    json_decref(nt);
    size_t len = 0, n = 0;
    uint8_t *q = query("big.test.", LDNS_RR_TYPE_A, &len), *out = NULL;
    assert_int_equal(wp_dns_answer(t, q, len, false, &out, &n, NULL, 0), WP_DNS_ANSWER);
    assert_true(n <= 512);
    ldns_pkt *p = NULL;
    assert_int_equal(ldns_wire2pkt(&p, out, n), LDNS_STATUS_OK);
    assert_true(ldns_pkt_tc(p));
    assert_int_equal(ldns_pkt_ancount(p), 0);
    assert_int_equal(ldns_pkt_qdcount(p), 1);
    ldns_pkt_free(p);
    free(out);
    assert_int_equal(wp_dns_answer(t, q, len, true, &out, &n, NULL, 0), WP_DNS_ANSWER);
    assert_int_equal(ldns_wire2pkt(&p, out, n), LDNS_STATUS_OK);
    assert_false(ldns_pkt_tc(p));
    assert_int_equal(ldns_pkt_ancount(p), 60);
    ldns_pkt_free(p);
    free(out);
    free(q);
    assert_int_equal(wp_dns_table_size(t), 1);
    wp_dns_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubernetes_names),  cmocka_unit_test(test_search_domain_cname),
        cmocka_unit_test(test_types_and_unknown), cmocka_unit_test(test_no_table_and_malformed),
        cmocka_unit_test(test_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
