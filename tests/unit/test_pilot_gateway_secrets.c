/*
 * test_pilot_gateway_secrets.c - pilot/gateway_secrets (operator report B030, issue 17 item 6):
 * a credentialName Secret looked for in the gateway workload's namespace (missing there, found
 * elsewhere), certificates made in the test expired or within 30 days of their end, and
 * pilot/ca_expiry: the CA's root at 20 % of its lifetime left (Istio's grace period).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/base64.h"
#include "harness.h"
#include "pilot/ca.h"
#include "pilot/ca_expiry.h"
#include "pilot/gateway_secrets.h"

#define NOW ((int64_t)1767225600) /* 2026-01-01T00:00:00Z */
#define DAY 86400

static char *cert_b64(int64_t nb, int64_t na)
{
    wf_ca *ca = NULL;
    char err[256];
    assert_int_equal(wf_ca_new_self_signed("cluster.local", nb, na, &ca, err, sizeof err), 0);
    const char *pem = wf_ca_root_pem(ca);
    size_t cap = 4 * ((strlen(pem) + 2) / 3) + 1;
    char *o = malloc(cap);
    assert_non_null(o);
    wf_base64_encode((const unsigned char *)pem, strlen(pem), o, cap);
    wf_ca_free(ca);
    return o;
}

static const char GATEWAY[] =
    "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: public-gw, namespace: "
    "edge}\nspec:\n  selector: {istio: ingressgateway}\n  servers:\n"
    "  - port: {number: 80, name: http, protocol: HTTP}\n    hosts: [shop.example.internal]\n"
    "  - port: {number: 443, name: https-admin, protocol: HTTPS}\n"
    "    hosts: [admin.example.internal]\n    tls: {mode: SIMPLE, credentialName: admin-cert}\n"
    "  - port: {number: 443, name: https-shop, protocol: HTTPS}\n"
    "    hosts: [shop.example.internal]\n    tls: {mode: SIMPLE, credentialName: shop-cert}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: ingress-1, namespace: edge, labels: "
    "{istio: ingressgateway}}\nspec: {containers: [{name: istio-proxy}]}\n";

typedef struct seen {
    size_t n;
    wf_gwsec_problem p[8];
    char msg[8][1536];
} seen;

static bool collect(const wf_gwsec_problem *p, void *ud)
{
    seen *s = ud;
    if (s->n < 8) {
        s->p[s->n] = *p;
        wf_gwsec_message(p, s->msg[s->n], sizeof s->msg[s->n]);
        s->n++;
    }
    return true;
}

static void run(const char *extra, seen *out)
{
    char *yaml = malloc(strlen(GATEWAY) + strlen(extra) + 8);
    assert_non_null(yaml);
    sprintf(yaml, "%s---\n%s", GATEWAY, extra);
    wf_store *s = wf_test_load_store(NULL, yaml, "default");
    assert_non_null(s);
    memset(out, 0, sizeof *out);
    assert_int_equal(wf_gw_secret_problems(s, NOW, collect, out), 0);
    /* strings of the problem point into the store: keep only the messages past here */
    for (size_t i = 0; i < out->n; i++)
        out->p[i].gateway = NULL, out->p[i].server = NULL, out->p[i].secret = NULL,
        out->p[i].ns = NULL, out->p[i].workload = NULL, out->p[i].elsewhere = NULL;
    wf_store_free(s);
    free(yaml);
}

static char *secret(const char *name, const char *ns, int64_t nb, int64_t na)
{
    char *c = cert_b64(nb, na);
    char *y = malloc(strlen(c) + 512);
    assert_non_null(y);
    sprintf(y,
            "apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\ntype: "
            "kubernetes.io/tls\ndata: {tls.crt: %s, tls.key: S0VZ}\n",
            name, ns, c);
    free(c);
    return y;
}

/* B030: shop-cert in shop, the gateway workload in edge */
static void test_wrong_namespace(void **state)
{
    (void)state;
    char *a = secret("admin-cert", "edge", NOW - DAY, NOW + 90 * DAY);
    char *b = secret("shop-cert", "shop", NOW - DAY, NOW + 90 * DAY);
    char *both = malloc(strlen(a) + strlen(b) + 8);
    assert_non_null(both);
    sprintf(both, "%s---\n%s", a, b);
    seen s;
    run(both, &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.p[0].kind, WF_GWSEC_NOT_FOUND);
    assert_string_equal(
        s.msg[0],
        "server https-shop (port 443): credentialName secret \"shop-cert\" not found in "
        "namespace edge (the namespace of the gateway workload edge/ingress-1, where Istio looks "
        "for it); a Secret shop-cert exists in namespace shop, but a gateway reads only the "
        "Secrets of its own namespace: create it in edge; HTTPS for this server fails its "
        "handshake (kubernetes://shop-cert stays WARMING at the gateway)");
    /* the fix: nothing left */
    char *fixed = secret("shop-cert", "edge", NOW - DAY, NOW + 90 * DAY);
    char *all = malloc(strlen(a) + strlen(fixed) + 8);
    assert_non_null(all);
    sprintf(all, "%s---\n%s", a, fixed);
    run(all, &s);
    assert_int_equal(s.n, 0);
    free(a), free(b), free(both), free(fixed), free(all);
}

/* certificates made with short lifetimes: expired, 10 days left, 31 days left */
static void test_expiry(void **state)
{
    (void)state;
    char *a = secret("admin-cert", "edge", NOW - 20 * DAY, NOW - 2 * DAY);
    char *b = secret("shop-cert", "edge", NOW - DAY, NOW + 10 * DAY);
    char *both = malloc(strlen(a) + strlen(b) + 8);
    assert_non_null(both);
    sprintf(both, "%s---\n%s", a, b);
    seen s;
    run(both, &s);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.p[0].kind, WF_GWSEC_INVALID);
    assert_int_equal(s.p[0].not_after_s, NOW - 2 * DAY);
    assert_string_equal(s.msg[0], "server https-admin (port 443): the certificate of "
                                  "credentialName secret edge/admin-cert expired 2 days ago "
                                  "(NotAfter 2025-12-30T00:00:00Z)");
    assert_int_equal(s.p[1].kind, WF_GWSEC_EXPIRING);
    assert_string_equal(s.msg[1], "server https-shop (port 443): the certificate of "
                                  "credentialName secret edge/shop-cert expires in 10 days "
                                  "(NotAfter 2026-01-11T00:00:00Z; weft warns 30 days ahead)");
    free(a), free(b), free(both);
    a = secret("admin-cert", "edge", NOW - DAY, NOW + 31 * DAY);
    b = secret("shop-cert", "edge", NOW - DAY, NOW + 29 * DAY);
    both = malloc(strlen(a) + strlen(b) + 8);
    assert_non_null(both);
    sprintf(both, "%s---\n%s", a, b);
    run(both, &s);
    assert_int_equal(s.n, 1); /* 31 days: quiet; 29: warned */
    assert_int_equal(s.p[0].kind, WF_GWSEC_EXPIRING);
    free(a), free(b), free(both);
}

/* a Secret without a certificate or a key (absent or empty) is one Istio cannot read: IST0161
 * with what is missing (it was not reported, and the gateway's secret stayed WARMING) */
static void test_no_certificate_or_key(void **state)
{
    (void)state;
    char *good = secret("shop-cert", "edge", NOW - DAY, NOW + 90 * DAY);
    const char *empty = "apiVersion: v1\nkind: Secret\nmetadata: {name: admin-cert, namespace: "
                        "edge}\ntype: kubernetes.io/tls\ndata: {tls.crt: \"\", tls.key: \"\"}\n";
    char *both = malloc(strlen(good) + strlen(empty) + 8);
    assert_non_null(both);
    sprintf(both, "%s---\n%s", good, empty);
    seen s;
    run(both, &s);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.p[0].kind, WF_GWSEC_INVALID);
    assert_true(s.p[0].no_material);
    assert_string_equal(s.msg[0], "server https-admin (port 443): credentialName secret "
                                  "edge/admin-cert has no certificate and key Istio can read "
                                  "(tls.crt and tls.key, or cert and key, absent or empty); "
                                  "HTTPS for this server fails its handshake "
                                  "(kubernetes://admin-cert stays WARMING at the gateway)");
    /* a certificate without its key */
    char *nokey = strdup(good);
    assert_non_null(nokey);
    char *k = strstr(nokey, "tls.key: S0VZ");
    assert_non_null(k);
    memcpy(k, "tls.kex", 7);
    run(nokey, &s);
    assert_int_equal(s.n, 2); /* admin-cert is missing, shop-cert has no key */
    assert_int_equal(s.p[1].kind, WF_GWSEC_INVALID);
    assert_true(s.p[1].no_material);
    free(good), free(both), free(nokey);
}

/* no pod selected: nothing (the analyzer's selector message covers it) */
static void test_no_workload(void **state)
{
    (void)state;
    const char *gw = "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, "
                     "namespace: edge}\nspec:\n  selector: {istio: nothing}\n  servers:\n"
                     "  - port: {number: 443, name: https, protocol: HTTPS}\n    hosts: [a]\n"
                     "    tls: {mode: SIMPLE, credentialName: missing}\n";
    wf_store *s = wf_test_load_store(NULL, gw, "default");
    assert_non_null(s);
    seen out = {0};
    assert_int_equal(wf_gw_secret_problems(s, NOW, collect, &out), 0);
    assert_int_equal(out.n, 0);
    wf_store_free(s);
}

/* Istio's grace period: 20 % of the lifetime */
static void test_ca_expiring_rule(void **state)
{
    (void)state;
    assert_false(wf_ca_cert_expiring(0, 100, 79, 20));
    assert_true(wf_ca_cert_expiring(0, 100, 80, 20));
    assert_true(wf_ca_cert_expiring(0, 100, 101, 20));
    assert_true(wf_ca_cert_expiring(100, 100, 0, 20)); /* no lifetime */
}

/* a self-signed root made with a 100 s lifetime, 90 s of it gone; and one freshly made */
static void test_ca_root_expiry(void **state)
{
    (void)state;
    wf_ca *ca = NULL;
    char err[256];
    assert_int_equal(
        wf_ca_new_self_signed("cluster.local", NOW - 90, NOW + 10, &ca, err, sizeof err), 0);
    wf_ca_expiry e[2];
    assert_int_equal(wf_ca_expiry_check(ca, NOW, e), 1);
    assert_string_equal(e[0].which, "root certificate");
    assert_int_equal(e[0].not_after_s, NOW + 10);
    assert_int_equal(e[0].left_s, 10);
    assert_non_null(strstr(e[0].message, "expires in 10 seconds (NotAfter 2026-01-01T00:00:10Z): "
                                         "less than 20% of its lifetime of 100 seconds is left "
                                         "(Istio's CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_"
                                         "PERCENTILE rule)"));
    assert_int_equal(wf_ca_expiry_check(ca, NOW + 20, e), 1);
    assert_non_null(strstr(e[0].message, "expired 10 seconds ago"));
    assert_int_equal(wf_ca_expiry_check(ca, NOW - 80, e), 0);
    wf_ca_free(ca);
    assert_int_equal(wf_ca_new_self_signed("cluster.local", NOW - 10 * DAY, NOW + 3640 * DAY, &ca,
                                           err, sizeof err),
                     0);
    assert_int_equal(wf_ca_expiry_check(ca, NOW, e), 0);
    wf_ca_free(ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrong_namespace), cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_no_workload),     cmocka_unit_test(test_ca_expiring_rule),
        cmocka_unit_test(test_ca_root_expiry),  cmocka_unit_test(test_no_certificate_or_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
