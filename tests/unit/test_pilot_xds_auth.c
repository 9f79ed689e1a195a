/*
 * test_pilot_xds_auth.c - istiod's xDS authenticators and authorization as decisions
 * (src/pilot/xds_auth.h): a verified client certificate's URI SANs first, then the Bearer token
 * (weft's tokens, ca_token.h); istiod's failure texts; checkConnectionIdentity's namespace and
 * service-account match and its error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pilot/xds_auth.h"

static const wf_ca_token_key KEY = {{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6,
                                     7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2}};
static const wf_ca_token_key OTHER = {{1}};
#define NOW 1800000000

/* "Bearer <token for ns/sa minted with key>" (heap). */
static char *bearer(const wf_ca_token_key *key, const char *ns, const char *sa, int64_t ttl)
{
    char err[200];
    char *tok = wf_ca_token_mint(key, ns, sa, NOW - 10, ttl, err, sizeof err);
    assert_non_null(tok);
    char *out = malloc(strlen(tok) + 8);
    assert_non_null(out);
    sprintf(out, "Bearer %s", tok);
    free(tok);
    return out;
}

static int authn(const char *sans, const char *auth, const char *td, wf_xds_caller *c, char *fail,
                 size_t cap)
{
    wf_xds_authn_in in = {.peer_uri_sans = sans,
                          .authorization = auth,
                          .key = &KEY,
                          .trust_domain = td,
                          .now_s = NOW};
    return wf_xds_authn(&in, c, fail, cap);
}

static void test_client_certificate_first(void **state)
{
    (void)state;
    wf_xds_caller c;
    char fail[1024] = "";
    char *tok = bearer(&KEY, "other", "web", 3600);
    /* the certificate wins over a token naming someone else */
    assert_int_equal(authn("spiffe://cluster.local/ns/shop/sa/web,spiffe://x/y", tok, NULL, &c,
                           fail, sizeof fail),
                     0);
    assert_string_equal(c.source, WF_XDS_CERT_AUTHENTICATOR);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.ids[0], "spiffe://cluster.local/ns/shop/sa/web");
    assert_string_equal(c.ids[1], "spiffe://x/y");
    char ids[256];
    wf_xds_caller_ids_text(&c, ids, sizeof ids);
    assert_string_equal(ids, "[spiffe://cluster.local/ns/shop/sa/web spiffe://x/y]");
    wf_xds_caller_free(&c);
    free(tok);
}

static void test_token(void **state)
{
    (void)state;
    wf_xds_caller c;
    char fail[1024] = "";
    char *tok = bearer(&KEY, "shop", "web", 3600);
    assert_int_equal(authn("", tok, "example.org", &c, fail, sizeof fail), 0);
    assert_string_equal(c.source, WF_XDS_JWT_AUTHENTICATOR);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.ids[0], "spiffe://example.org/ns/shop/sa/web");
    wf_xds_caller_free(&c);
    assert_int_equal(authn(NULL, tok, NULL, &c, fail, sizeof fail), 0);
    assert_string_equal(c.ids[0], "spiffe://cluster.local/ns/shop/sa/web");
    wf_xds_caller_free(&c);
    free(tok);
}

static void test_failures(void **state)
{
    (void)state;
    wf_xds_caller c;
    char fail[1024];
    assert_int_equal(authn(NULL, NULL, NULL, &c, fail, sizeof fail), -1);
    assert_string_equal(fail, "Authenticator ClientCertAuthenticator: no verified chain is found; "
                              "Authenticator WeftTokenAuthenticator: target JWT extraction error: "
                              "no HTTP authorization header exists");
    assert_int_equal(c.n, 0);
    assert_int_equal(authn("", "Basic dXNlcjpwdw==", NULL, &c, fail, sizeof fail), -1);
    assert_non_null(strstr(fail, "WeftTokenAuthenticator: target JWT extraction error: no bearer "
                                 "token exists in HTTP authorization header"));
    /* a token of another key, and an expired one */
    char *other = bearer(&OTHER, "shop", "web", 3600);
    assert_int_equal(authn("", other, NULL, &c, fail, sizeof fail), -1);
    assert_non_null(strstr(fail, "WeftTokenAuthenticator: failed to validate the JWT: "));
    free(other);
    char *old = bearer(&KEY, "shop", "web", 5);
    assert_int_equal(authn("", old, NULL, &c, fail, sizeof fail), -1);
    assert_non_null(strstr(fail, "failed to validate the JWT: "));
    free(old);
    assert_int_equal(authn("", "Bearer not-a-jwt", NULL, &c, fail, sizeof fail), -1);
    assert_int_equal(c.n, 0);
}

static void test_authz(void **state)
{
    (void)state;
    wf_xds_caller c;
    char fail[1024], err[1024];
    char *tok = bearer(&KEY, "shop", "web", 3600);
    assert_int_equal(authn(NULL, tok, NULL, &c, fail, sizeof fail), 0);
    assert_int_equal(wf_xds_authz(&c, "shop", NULL, err, sizeof err), 0);
    assert_int_equal(wf_xds_authz(&c, "shop", "web", err, sizeof err), 0);
    assert_int_equal(wf_xds_authz(&c, "shop", "", err, sizeof err), 0);
    assert_int_equal(wf_xds_authz(&c, NULL, NULL, err, sizeof err), 0);
    /* another namespace: istiod's checkConnectionIdentity error */
    assert_int_equal(wf_xds_authz(&c, "default", NULL, err, sizeof err), -1);
    assert_string_equal(err, "no identities ([spiffe://cluster.local/ns/shop/sa/web]) matched "
                             "default/");
    /* the node's SERVICE_ACCOUNT must match too */
    assert_int_equal(wf_xds_authz(&c, "shop", "db", err, sizeof err), -1);
    assert_string_equal(err, "no identities ([spiffe://cluster.local/ns/shop/sa/web]) matched "
                             "shop/db");
    wf_xds_caller_free(&c);
    free(tok);
    /* identities that are not SPIFFE IDs of five segments never match */
    assert_int_equal(authn("spiffe://td/ns/shop/sa/web/extra,https://shop/ns/shop/sa/web,"
                           "spiffe://td/ns/shop/sb/web",
                           NULL, NULL, &c, fail, sizeof fail),
                     0);
    assert_int_equal(c.n, 3);
    assert_int_equal(wf_xds_authz(&c, "shop", NULL, err, sizeof err), -1);
    wf_xds_caller_free(&c);
    assert_int_equal(authn("spiffe://td/ns/shop/sa/web", NULL, NULL, &c, fail, sizeof fail), 0);
    assert_int_equal(wf_xds_authz(&c, "shop", "web", err, sizeof err), 0);
    wf_xds_caller_free(&c);
}

/* The TokenReview's caller (ads_auth.c): replaces what was there, then authorizes as any. */
static void test_caller_set_sa(void **state)
{
    (void)state;
    wf_xds_caller c = {0};
    assert_int_equal(wf_xds_caller_set_sa(&c, "example.org", "old", "x", "A"), 0);
    assert_int_equal(wf_xds_caller_set_sa(&c, NULL, "shop", "catalog", "KubeJWTAuthenticator"), 0);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.ids[0], "spiffe://cluster.local/ns/shop/sa/catalog");
    assert_string_equal(c.source, "KubeJWTAuthenticator");
    char err[512];
    assert_int_equal(wf_xds_authz(&c, "shop", "catalog", err, sizeof err), 0);
    assert_int_equal(wf_xds_authz(&c, "shop", "webapp", err, sizeof err), -1);
    assert_string_equal(err, "no identities ([spiffe://cluster.local/ns/shop/sa/catalog]) "
                             "matched shop/webapp");
    wf_xds_caller_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_certificate_first),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_authz),
        cmocka_unit_test(test_caller_set_sa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
