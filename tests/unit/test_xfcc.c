/*
 * test_xfcc.c - x-forwarded-client-cert (proxy/http/xfcc.h) as Envoy's
 * mutateXfccRequestHeader: the element (By, Hash, Cert, Chain, Subject, URI, DNS in Envoy's
 * order) over a fake mutual TLS socket, and each forward_client_cert_details mode on a
 * request's fields (repeats joined, the first field's place kept, created when absent).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/xfcc.h"

/* A socket whose peer certificate facts are fixed strings. */
static int fake_peer_cert(const wp_tsock *t, wp_peer_fact what, const char *sep, wf_strbuf *out)
{
    (void)t;
    switch (what) {
    case WP_PEER_SHA256:
        wf_strbuf_puts(out, "ab12");
        return 0;
    case WP_PEER_DNS_SANS:
        wf_strbuf_printf(out, "a.local%sb.local", sep);
        return 0;
    case WP_PEER_PEM:
        wf_strbuf_puts(out, "-----BEGIN%20CERTIFICATE-----%0Aleaf");
        return 0;
    case WP_PEER_CHAIN_PEM:
        wf_strbuf_puts(out, "leaf-and-ca");
        return 0;
    }
    return -1;
}

static const wp_tsock_ops fake_ops = {.peer_cert = fake_peer_cert};
static const wp_tsock fake = {.ops = &fake_ops};

static wp_tsock_ssl ssl_of(const char *local, const char *peer, const char *subject)
{
    return (wp_tsock_ssl){.local_uri_sans = local,
                          .peer_uri_sans = peer,
                          .peer_subject = subject,
                          .peer_certificate = true};
}

static void expect_element(const wp_tsock_ssl *ssl, unsigned details, const char *want)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, "stale"); /* reset first */
    assert_int_equal(wp_xfcc_element(&fake, ssl, details, &b), 0);
    assert_string_equal(wf_strbuf_cstr(&b), want);
    wf_strbuf_free(&b);
}

static void test_element(void **state)
{
    (void)state;
    wp_tsock_ssl s = ssl_of("spiffe://cluster.local/ns/shop/sa/catalog",
                            "spiffe://cluster.local/ns/web/sa/frontend", "CN=client,O=weft-test");
    expect_element(&s, 0, "By=spiffe://cluster.local/ns/shop/sa/catalog;Hash=ab12");
    /* Istio's inbound sidecar: subject, dns, uri */
    expect_element(
        &s, WP_CCD_SUBJECT | WP_CCD_DNS | WP_CCD_URI,
        "By=spiffe://cluster.local/ns/shop/sa/catalog;Hash=ab12;"
        "Subject=\"CN=client,O=weft-test\";URI=spiffe://cluster.local/ns/web/sa/frontend;"
        "DNS=a.local;DNS=b.local");
    /* Envoy's order whatever the order asked: Cert, Chain, Subject, URI, DNS */
    expect_element(&s, WP_CCD_URI | WP_CCD_CHAIN | WP_CCD_CERT,
                   "By=spiffe://cluster.local/ns/shop/sa/catalog;Hash=ab12;"
                   "Cert=\"-----BEGIN%20CERTIFICATE-----%0Aleaf\";Chain=\"leaf-and-ca\";"
                   "URI=spiffe://cluster.local/ns/web/sa/frontend");
    /* several URI SANs: one By= / URI= each; none: no By, an empty URI= and Subject="" */
    wp_tsock_ssl m = ssl_of("spiffe://a,spiffe://b", "spiffe://c,spiffe://d", "");
    expect_element(&m, WP_CCD_URI,
                   "By=spiffe://a;By=spiffe://b;Hash=ab12;URI=spiffe://c;URI=spiffe://d");
    wp_tsock_ssl none = ssl_of("", "", "");
    expect_element(&none, WP_CCD_SUBJECT | WP_CCD_URI, "Hash=ab12;Subject=\"\";URI=");
}

#define XFCC "x-forwarded-client-cert"

static size_t fields(h1_header *h, const char *const *spec)
{
    size_t n = 0;
    for (; spec[n]; n += 1) {
        const char *colon = strchr(spec[n], ':');
        h[n] = (h1_header){{spec[n], (size_t)(colon - spec[n])}, {colon + 1, strlen(colon + 1)}};
    }
    return n;
}

static void expect_fields(const h1_header *h, size_t n, const char *const *want)
{
    size_t i = 0;
    for (; want[i]; i++) {
        char got[512];
        assert_true(i < n);
        snprintf(got, sizeof got, "%.*s:%.*s", (int)h[i].name.len, h[i].name.p, (int)h[i].value.len,
                 h[i].value.p);
        assert_string_equal(got, want[i]);
    }
    assert_int_equal(n, i);
}

static void run(wp_fcc_mode mode, bool mtls, const char *const *in, size_t max,
                const char *const *want)
{
    static const char el[] = "By=spiffe://me;Hash=ab12";
    h1_header h[8];
    wf_strbuf buf = WF_STRBUF_INIT;
    size_t n = fields(h, in);
    assert_int_equal(wp_xfcc_mutate(mode, mtls, h, &n, max, el, sizeof el - 1, &buf), 0);
    expect_fields(h, n, want);
    wf_strbuf_free(&buf);
}

static void test_modes(void **state)
{
    (void)state;
    static const char *const two[] = {"host:a", XFCC ":By=x;Hash=1", "accept:*/*",
                                      "X-Forwarded-Client-Cert:By=y;Hash=2", NULL};
    static const char *const none[] = {"host:a", NULL};
    static const char *const removed[] = {"host:a", "accept:*/*", NULL};
    /* SANITIZE (default) removes, even on mutual TLS */
    run(WP_FCC_SANITIZE, true, two, 8, removed);
    /* not mutual TLS: removed, except with ALWAYS_FORWARD_ONLY */
    run(WP_FCC_APPEND_FORWARD, false, two, 8, removed);
    run(WP_FCC_FORWARD_ONLY, false, two, 8, removed);
    run(WP_FCC_ALWAYS_FORWARD_ONLY, false, two, 8, two);
    run(WP_FCC_FORWARD_ONLY, true, two, 8, two);
    /* APPEND_FORWARD: the fields joined, then this element; the first field's place */
    static const char *const appended[] = {
        "host:a", XFCC ":By=x;Hash=1,By=y;Hash=2,By=spiffe://me;Hash=ab12", "accept:*/*", NULL};
    run(WP_FCC_APPEND_FORWARD, true, two, 8, appended);
    static const char *const created[] = {"host:a", XFCC ":By=spiffe://me;Hash=ab12", NULL};
    run(WP_FCC_APPEND_FORWARD, true, none, 8, created);
    /* an empty field takes no "," */
    static const char *const empty[] = {XFCC ":", NULL};
    static const char *const empty_app[] = {XFCC ":By=spiffe://me;Hash=ab12", NULL};
    run(WP_FCC_APPEND_FORWARD, true, empty, 8, empty_app);
    /* SANITIZE_SET: this element only */
    static const char *const set[] = {"host:a", XFCC ":By=spiffe://me;Hash=ab12", "accept:*/*",
                                      NULL};
    run(WP_FCC_SANITIZE_SET, true, two, 8, set);
    run(WP_FCC_SANITIZE_SET, true, none, 8, created);
    /* no room for a new field: left as is (the connection manager keeps a slot) */
    run(WP_FCC_SANITIZE_SET, true, none, 1, none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_element),
        cmocka_unit_test(test_modes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
