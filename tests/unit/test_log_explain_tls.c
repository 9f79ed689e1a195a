/*
 * test_log_explain_tls.c - the TLS failure signatures of `weftctl log explain`
 * (log_explain.h WF_LX_TLS, explain_table.c; ../shared/reference/security.md §3.5, §8.2):
 * every signature is found from a real failure reason as Envoy (and weft-proxy) log it (the
 * current "TLS_error:|...:TLS_error_end" form with spaces as '_', the 503 body's form with
 * spaces, the pre-2023 "TLS error: ..." form), the verify detail picks the specific cause
 * (unknown CA, SAN mismatch, expired), unknown reasons are not guessed, every TLS entry of
 * the table is covered here, and the STRICT pair of §4.3 is in the pair table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/log_explain.h"

typedef struct sig {
    const char *reason; /* as logged */
    const char *key;    /* the entry it must find */
    const char *cause;  /* in causes or meaning */
    const char *fix;    /* in next */
} sig;

#define VF "TLS_error:|268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"

static const sig sigs[] = {
    {VF ":TLS_error_end", "CERTIFICATE_VERIFY_FAILED", "Different roots", "rootca-compare"},
    {"TLS error: 268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED",
     "CERTIFICATE_VERIFY_FAILED", "SAN", "verify cert failed"},
    {VF ":verify_cert_failed:_X509_verify_cert:_certificate_verification_error_at_depth_0:_"
        "unable_to_get_local_issuer_certificate:TLS_error_end",
     "CERTIFICATE_VERIFY_FAILED*unable_to_get_local_issuer_certificate", "different roots",
     "weftctl proxy-config rootca-compare"},
    {VF ":verify_cert_failed:_X509_verify_cert:_certificate_verification_error_at_depth_1:_"
        "self-signed_certificate_in_certificate_chain:TLS_error_end",
     "CERTIFICATE_VERIFY_FAILED*self_signed_certificate_in_certificate_chain", "another root",
     "rootca-compare"},
    {VF ":verify_cert_failed:_X509_verify_cert:_certificate_verification_error_at_depth_0:_"
        "self_signed_certificate:TLS_error_end",
     "CERTIFICATE_VERIFY_FAILED*self_signed_certificate", "not a mesh workload",
     "`tls.mode: SIMPLE`"},
    {VF ":verify_cert_failed:_SAN_matcher,_certificate_SANs_are_[spiffe://cluster.local/ns/"
        "default/sa/other]:TLS_error_end",
     "CERTIFICATE_VERIFY_FAILED*SAN_matcher", "another service account", "`subjectAltNames`"},
    {"TLS_error:|268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:verify cert "
     "failed: X509_verify_cert: certificate verification error at depth 0: certificate has "
     "expired:TLS_error_end",
     "CERTIFICATE_VERIFY_FAILED*certificate_has_expired", "expired", "weftctl proxy-config secret"},
    {VF ":verify_cert_failed:_X509_verify_cert:_certificate_verification_error_at_depth_0:_"
        "certificate_is_not_yet_valid:TLS_error_end",
     "CERTIFICATE_VERIFY_FAILED*certificate_is_not_yet_valid", "Clock skew", "NTP"},
    {"TLS_error:|268435703:SSL_routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end",
     "WRONG_VERSION_NUMBER",
     "`tls.mode: ISTIO_MUTUAL` or `SIMPLE` towards a workload without a "
     "sidecar",
     "`mode: DISABLE`"},
    {"TLS_error:|268436504:SSL_routines:OPENSSL_internal:TLSV1_ALERT_UNKNOWN_CA:TLS_error_end",
     "TLSV1_ALERT_UNKNOWN_CA", "roots differ", "weftctl proxy-config rootca-compare"},
    {"TLS_error:|268436501:SSL_routines:OPENSSL_internal:SSLV3_ALERT_CERTIFICATE_EXPIRED:"
     "TLS_error_end",
     "SSLV3_ALERT_CERTIFICATE_EXPIRED", "not renewed", "failed to sign CSR"},
    {"TLS_error:|268436498:SSL_routines:OPENSSL_internal:SSLV3_ALERT_BAD_CERTIFICATE:"
     "TLS_error_end",
     "SSLV3_ALERT_BAD_CERTIFICATE", "client SANs", "weftctl proxy-config secret"},
    {"TLS_error:|268436496:SSL_routines:OPENSSL_internal:SSLV3_ALERT_HANDSHAKE_FAILURE:"
     "TLS_error_end",
     "SSLV3_ALERT_HANDSHAKE_FAILURE", "`SIMPLE` towards a STRICT", "`ISTIO_MUTUAL`"},
    {"TLS_error:|268436572:SSL_routines:OPENSSL_internal:TLSV1_ALERT_CERTIFICATE_REQUIRED:"
     "TLS_error_end",
     "TLSV1_ALERT_CERTIFICATE_REQUIRED", "`tls.mode: SIMPLE` towards a STRICT", "`ISTIO_MUTUAL`"},
    {"TLS_error:|268435648:SSL_routines:OPENSSL_internal:PEER_DID_NOT_RETURN_A_CERTIFICATE:"
     "TLS_error_end",
     "PEER_DID_NOT_RETURN_A_CERTIFICATE", "outside the mesh", "PERMISSIVE"},
    {"TLS_error:|268435648:SSL_routines:OPENSSL_internal:PEER_DID_NOT_RETURN_A_CERTIFICATE:"
     "peer_did_not_provide_required_client_certificate:TLS_error_end",
     "peer_did_not_provide_required_client_certificate", "outside the mesh", "sidecar"},
    {"TLS_error:_Secret_is_not_supplied_by_SDS", "Secret_is_not_supplied_by_SDS", "token refused",
     "WARMING"},
    {"TLS error: Secret is not supplied by SDS", "Secret_is_not_supplied_by_SDS", "credentialName",
     "IST0161"},
    {"TLS_error:|268435612:SSL_routines:OPENSSL_internal:HTTP_REQUEST:TLS_error_end",
     "HTTP_REQUEST", "Plaintext to a STRICT", "PERMISSIVE"},
    {"TLS_error:|268435640:SSL_routines:OPENSSL_internal:NO_SHARED_CIPHER:TLS_error_end",
     "NO_SHARED_CIPHER", "cipherSuites", "cipher"},
    {"TLS_error:|268436526:SSL_routines:OPENSSL_internal:TLSV1_ALERT_PROTOCOL_VERSION:"
     "TLS_error_end",
     "TLSV1_ALERT_PROTOCOL_VERSION", "minProtocolVersion", "versions"},
    {"TLS_error:|268435696:SSL_routines:OPENSSL_internal:UNSUPPORTED_PROTOCOL:TLS_error_end",
     "UNSUPPORTED_PROTOCOL", "minProtocolVersion", "versions"},
    {"TLS_error:|connection_error:TLS_error_end", "TLS_error:*connection_error", "not a TLS server",
     "filter_chain_not_found"},
};

static void contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("%s\n  does not contain: %s", hay, needle);
}

static void test_every_signature(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        const wf_lx_entry *e = wf_lx_find_tls(sigs[i].reason);
        if (!e)
            fail_msg("no entry for %s", sigs[i].reason);
        if (strcmp(e->key, sigs[i].key) != 0)
            fail_msg("%s: found %s, want %s", sigs[i].reason, e->key, sigs[i].key);
        assert_int_equal(e->kind, WF_LX_TLS);
        char both[4096];
        snprintf(both, sizeof both, "%s %s", e->meaning, e->causes);
        contains(both, sigs[i].cause);
        contains(e->next, sigs[i].fix);
        assert_true(*e->status);
    }
}

/* every TLS entry of the table has a signature above */
static void test_every_tls_entry_is_tested(void **state)
{
    (void)state;
    for (size_t i = 0; i < wf_lx_table_count(); i++) {
        const wf_lx_entry *t = wf_lx_table_at(i);
        if (t->kind != WF_LX_TLS)
            continue;
        bool seen = false;
        for (size_t j = 0; j < sizeof sigs / sizeof sigs[0]; j++)
            seen = seen || strcmp(sigs[j].key, t->key) == 0;
        if (!seen)
            fail_msg("TLS entry %s has no test", t->key);
    }
}

static void test_unknown_reasons_are_not_guessed(void **state)
{
    (void)state;
    assert_null(wf_lx_find_tls("delayed_connect_error:_Connection_refused"));
    assert_null(wf_lx_find_tls(
        "TLS_error:|268435612:SSL_routines:OPENSSL_internal:SOMETHING_NEW:TLS_error_end"));
    assert_null(wf_lx_find_tls(""));
    assert_null(wf_lx_find_tls(NULL));
}

static void test_strict_pair(void **state)
{
    (void)state;
    assert_true(wf_lx_pair_count() >= 1);
    const wf_lx_pair *p = wf_lx_pair_at(0);
    assert_int_equal(p->kind_a, WF_LX_RESET);
    assert_string_equal(p->key_a, "connection_termination");
    assert_int_equal(p->kind_b, WF_LX_DETAIL);
    assert_string_equal(p->key_b, "filter_chain_not_found");
    /* both halves are table entries */
    assert_non_null(wf_lx_find_reset(p->key_a));
    assert_non_null(wf_lx_find_detail(p->key_b));
    contains(p->meaning, "Plaintext sent to a STRICT mTLS port");
    contains(p->causes, "`trafficPolicy.tls.mode: DISABLE`");
    contains(p->next, "Remove `tls.mode: DISABLE`");
    assert_null(wf_lx_pair_at(wf_lx_pair_count()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_signature),
        cmocka_unit_test(test_every_tls_entry_is_tested),
        cmocka_unit_test(test_unknown_reasons_are_not_guessed),
        cmocka_unit_test(test_strict_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
