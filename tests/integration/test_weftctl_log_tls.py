"""`weftctl log explain` names the cause and the fix of every TLS failure signature of
security.md §3.5 and §8.2, from access log lines as Envoy writes them: Istio's TEXT format
(the failure reason in %RESPONSE_CODE_DETAILS% with spaces as '_' and again in
"%UPSTREAM_TRANSPORT_FAILURE_REASON%") and Istio's JSON keys; the server-side signatures
through %DOWNSTREAM_TRANSPORT_FAILURE_REASON% (a --format, and the JSON key); the handshake
timeouts; and the §4.3 pair (client 503 UC connection_termination, server NR
filter_chain_not_found) named together when both ends' logs are read at once.
"""
import json

import pytest

from conftest import run_weftctl

CLUSTER = "outbound|80||reviews.default.svc.cluster.local"


def text_line(code, flags, details, tfr, host="10.244.0.7:9080"):
    """Istio's default TEXT format (envoy-istio-behaviour.md §5.1)."""
    return ('[2026-12-05T18:00:00.000Z] "GET /reviews HTTP/1.1" %d %s %s - "%s" 0 91 4 - "-" '
            '"curl/8.5.0" "4a6f-rid" "reviews:9080" "%s" %s - 10.96.0.12:9080 '
            '10.244.0.5:41234 - default\n' % (code, flags, details, tfr, host, CLUSTER))


def json_line(code, flags, details, tfr):
    return json.dumps({
        "start_time": "2026-12-05T18:00:00.000Z", "method": "GET", "path": "/reviews",
        "protocol": "HTTP/1.1", "response_code": code, "response_flags": flags,
        "response_code_details": details, "connection_termination_details": None,
        "upstream_transport_failure_reason": tfr, "bytes_received": 0, "bytes_sent": 91,
        "duration": 4, "upstream_host": "10.244.0.7:9080", "upstream_cluster": CLUSTER,
        "authority": "reviews:9080", "request_id": "4a6f-rid", "route_name": "default"}) + "\n"


def details_of(tfr):
    return "upstream_reset_before_response_started{remote_connection_failure|%s}" % tfr


VF = "TLS_error:|268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"
DEPTH0 = ":verify_cert_failed:_X509_verify_cert:_certificate_verification_error_at_depth_0:_"

# (id, failure reason as logged, words of the cause, words of the fix)
UPSTREAM = [
    ("verify-failed", VF + ":TLS_error_end",
     "rejected the certificate the peer presented", "weftctl proxy-config rootca-compare"),
    ("unknown-ca", VF + DEPTH0 + "unable_to_get_local_issuer_certificate:TLS_error_end",
     "signed by a CA this proxy does not trust", "weftctl proxy-config rootca-compare"),
    ("san-mismatch", VF + ":verify_cert_failed:_SAN_matcher,_certificate_SANs_are_[spiffe://"
     "cluster.local/ns/default/sa/ratings]:TLS_error_end",
     "names another identity than the one expected", "DestinationRule `subjectAltNames`"),
    ("expired", VF + DEPTH0 + "certificate_has_expired:TLS_error_end",
     "because it (or a CA above it) has expired", "NOT AFTER and VALID CERT"),
    ("not-yet-valid", VF + DEPTH0 + "certificate_is_not_yet_valid:TLS_error_end",
     "NOT BEFORE is in the future", "clocks (NTP)"),
    ("tls-to-plaintext",
     "TLS_error:|268435703:SSL_routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end",
     "TLS to a plaintext port", "`trafficPolicy.tls`"),
    ("peer-unknown-ca",
     "TLS_error:|268436504:SSL_routines:OPENSSL_internal:TLSV1_ALERT_UNKNOWN_CA:TLS_error_end",
     "does not trust the CA that signed our certificate", "weftctl proxy-config rootca-compare"),
    ("peer-says-expired", "TLS_error:|268436501:SSL_routines:OPENSSL_internal:"
     "SSLV3_ALERT_CERTIFICATE_EXPIRED:TLS_error_end",
     "rejected our certificate as expired", "failed to sign CSR"),
    ("sds-not-ready", "TLS_error:_Secret_is_not_supplied_by_SDS",
     "no certificate for this TLS context yet", "WARMING"),
    ("client-cert-required", "TLS_error:|268436572:SSL_routines:OPENSSL_internal:"
     "TLSV1_ALERT_CERTIFICATE_REQUIRED:TLS_error_end",
     "requires a client certificate and this proxy sent none", "`ISTIO_MUTUAL`"),
]


def explain(text, *args):
    r = run_weftctl("log", "explain", *args, stdin=text)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("sid,tfr,cause,fix", UPSTREAM, ids=[u[0] for u in UPSTREAM])
def test_upstream_signature_text(sid, tfr, cause, fix):
    out = explain(text_line(503, "URX,UF", details_of(tfr), tfr))
    assert "UF (UpstreamConnectionFailure)" in out
    assert "transport failure reason: " + tfr + "\n" in out, out
    assert cause in out, out
    assert fix in out, out
    assert "weft's table does not describe it" not in out, out


@pytest.mark.parametrize("sid,tfr,cause,fix", UPSTREAM, ids=[u[0] for u in UPSTREAM])
def test_upstream_signature_json(sid, tfr, cause, fix):
    doc = json.loads(explain(json_line(503, "UF,URX", details_of(tfr), tfr), "-o", "json"))
    (f,) = doc["failures"]
    (t,) = [e for e in f["explanations"] if e["kind"] == "transport_failure"]
    assert t["value"] == tfr and t["known"] is True
    assert cause in t["meaning"] + " " + t["causes"], t
    assert fix in t["next"], t


def test_failure_reason_only_in_details_and_older_forms():
    # the 503 line without the TLS operator: the reason inside the details is explained
    tfr = VF + DEPTH0 + "unable_to_get_local_issuer_certificate:TLS_error_end"
    out = explain(text_line(503, "UF", details_of(tfr), "-"))
    assert "signed by a CA this proxy does not trust" in out
    # pre-2023 Envoy: {connection_failure,TLS_error:_268435581:...}
    old = ("upstream_reset_before_response_started{connection_failure,TLS_error:_268435581:"
           "SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED}")
    out = explain(text_line(503, "UF,URX", old, "-"))
    assert "reset reason connection_failure:" in out, out
    assert "rejected the certificate the peer presented" in out, out


# server side: %DOWNSTREAM_TRANSPORT_FAILURE_REASON% (a listener's access log)
DOWN_FORMAT = ('[%START_TIME%] %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% '
               '"%DOWNSTREAM_TRANSPORT_FAILURE_REASON%" %UPSTREAM_CLUSTER%')
DOWNSTREAM = [
    ("no-client-cert", "TLS_error:|268435648:SSL_routines:OPENSSL_internal:PEER_DID_NOT_"
     "RETURN_A_CERTIFICATE:peer_did_not_provide_required_client_certificate:TLS_error_end",
     "the client's TLS handshake carried none", "PERMISSIVE while clients migrate"),
    ("plaintext-http-to-tls",
     "TLS_error:|268435612:SSL_routines:OPENSSL_internal:HTTP_REQUEST:TLS_error_end",
     "plaintext HTTP request to this TLS port", "Send TLS"),
]


@pytest.mark.parametrize("sid,tfr,cause,fix", DOWNSTREAM, ids=[d[0] for d in DOWNSTREAM])
def test_downstream_signature(sid, tfr, cause, fix):
    line = '[2026-12-05T18:00:00.000Z] 0 - - "%s" -\n' % tfr
    out = explain(line, "--format", DOWN_FORMAT)
    assert "downstream transport failure reason: " + tfr in out, out
    assert cause in out and fix in out, out
    doc = json.loads(explain(json.dumps({"response_code": 0,
                                         "downstream_transport_failure_reason": tfr}) + "\n",
                             "-o", "json"))
    (t,) = doc["failures"][0]["explanations"]
    assert t["kind"] == "downstream_transport_failure" and cause in t["meaning"] + t["causes"]
    assert fix in t["next"]


def test_handshake_timeouts():
    # upstream: the connect timeout covers the TLS handshake
    out = explain(text_line(503, "UF,URX",
                            "upstream_reset_before_response_started{connection_timeout}", "-"))
    assert "for a TLS cluster the timeout includes the TLS handshake" in out, out
    assert "the DestinationRule `tls.mode` matches it" in out
    # downstream: the listener's transport_socket_connect_timeout (JSON: the value has spaces)
    doc = json.loads(explain(json.dumps({"response_code": 0, "connection_termination_details":
                                         "transport socket timeout"}) + "\n", "-o", "json"))
    (d,) = doc["failures"][0]["explanations"]
    assert d["value"] == "transport socket timeout" and d["known"] is True
    assert "TLS handshake did not finish" in d["meaning"]
    assert "openssl s_client" in d["next"]


CLIENT_UC = text_line(503, "UC", "upstream_reset_before_response_started{connection_"
                      "termination}", "-")
SERVER_NR = ('[2026-12-05T18:00:00.010Z] "- - -" 0 NR filter_chain_not_found - "-" 0 0 0 - '
             '"-" "-" "-" "-" "-" - - 10.244.0.7:9080 10.244.0.5:41236 - -\n')


def test_plaintext_to_strict_pair():
    out = explain(CLIENT_UC + SERVER_NR)
    assert ("Together, line 1 (connection_termination) and line 2 (filter_chain_not_found): "
            "Plaintext sent to a STRICT mTLS port") in out, out
    assert "Remove `tls.mode: DISABLE` from the client's DestinationRule" in out
    # each end alone: explained, without the pair's verdict, but pointing at the other end
    alone = explain(CLIENT_UC)
    assert "Together" not in alone
    assert "server's proxy logs NR filter_chain_not_found" in alone
    server = explain(SERVER_NR)
    assert "Together" not in server and "under a STRICT PeerAuthentication" in server
    doc = json.loads(explain(CLIENT_UC + SERVER_NR, "-o", "json"))
    (t,) = doc["together"]
    assert t["signatures"] == ["connection_termination", "filter_chain_not_found"]
    assert t["lines"] == [1, 2] and "STRICT" in t["meaning"]
    doc = json.loads(explain(CLIENT_UC, "-o", "json"))
    assert doc["together"] == []
    summ = explain(SERVER_NR + CLIENT_UC, "--summary")
    assert "Together, line 2 (connection_termination) and line 1 (filter_chain_not_found)" in summ
