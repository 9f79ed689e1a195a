"""weft-proxy's JWT filter (envoy.filters.http.jwt_authn) in the shape istiod writes from a
RequestAuthentication (providers origins-<i> with inline JWKS, requires_any [provider,
allow_missing], payload_in_metadata "payload"), with real tokens minted here by Python's
`cryptography` (RS256 and ES256): a valid token passes (its payload forwarded in
outputPayloadToHeader's header, a claim copied to a header, the Authorization header removed);
an expired token, a token of another issuer, a token signed by an unknown key get Envoy's 401
with `www-authenticate` and `jwt_authn_access_denied{...}` details in the access log; a wrong
audience gets 403; no token passes (allow_missing); forged output headers are stripped; the
`jwt_authn.allowed` / `jwt_authn.denied` counters under the HCM's prefix count it all.
"""
import base64
import json
import time

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from procs import backend_app  # noqa: F401 (fixture)
from proxyfix import (ISTIO_TEXT_FORMAT, ROUTER_TYPE, access_log, bootstrap, cluster, listener,
                      proxy_factory, route, route_config, vhost)  # noqa: F401

JWT = "envoy.filters.http.jwt_authn"
JWT_TYPE = "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication"
PREFIX = "http.ingress_http.jwt_authn."
ISS1 = "https://issuer-1.example.com"
ISS2 = "issuer-2@example.com"


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def int_b64u(n, size=None):
    size = size or (n.bit_length() + 7) // 8
    return b64u(n.to_bytes(size, "big"))


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def rsa_jwk(key, kid):
    pub = key.public_key().public_numbers()
    return {"kty": "RSA", "kid": kid, "alg": "RS256", "n": int_b64u(pub.n), "e": int_b64u(pub.e)}


def ec_jwk(key, kid):
    pub = key.public_key().public_numbers()
    return {"kty": "EC", "kid": kid, "crv": "P-256", "x": int_b64u(pub.x, 32),
            "y": int_b64u(pub.y, 32)}


def mint(key, claims, kid, alg="RS256"):
    header = {"alg": alg, "typ": "JWT", "kid": kid}
    signing = (b64u(json.dumps(header).encode()) + "." +
               b64u(json.dumps(claims).encode())).encode()
    if alg == "RS256":
        sig = key.sign(signing, padding.PKCS1v15(), hashes.SHA256())
    else:
        r, s = decode_dss_signature(key.sign(signing, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return signing.decode() + "." + b64u(sig)


def claims(iss=ISS1, sub="alice", exp_in=3600, **extra):
    now = int(time.time())
    c = {"iss": iss, "sub": sub, "iat": now, "exp": now + exp_in}
    c.update(extra)
    return c


def provider(iss, jwks, **kw):
    """A provider as istiod's convertToEnvoyJwtConfig writes it (inline JWKS)."""
    p = {"issuer": iss, "local_jwks": {"inline_string": json.dumps(jwks)},
         "payload_in_metadata": "payload",
         "normalize_payload_in_metadata": {"space_delimited_claims": ["permission", "scope"]}}
    p.update(kw)
    return p


def jwt_bootstrap(app_port):
    """Two providers, istiod's multi-provider requirement, Istio text access log."""
    p0 = provider(ISS1, {"keys": [rsa_jwk(RSA_KEY, "rsa-1")]},
                  audiences=["weft.example"], forward_payload_header="x-jwt-payload",
                  claim_to_headers=[{"header_name": "x-jwt-sub", "claim_name": "sub"}])
    p1 = provider(ISS2, {"keys": [ec_jwk(EC_KEY, "ec-1")]})
    any_missing = [{"requires_any": {"requirements": [{"provider_name": n},
                                                      {"allow_missing": {}}]}}
                   for n in ("origins-0", "origins-1")]
    requires = {"requires_any": {"requirements": [
        {"provider_name": "origins-0"}, {"provider_name": "origins-1"},
        {"requires_all": {"requirements": any_missing}}]}}
    tc = {"@type": JWT_TYPE, "providers": {"origins-0": p0, "origins-1": p1},
          "rules": [{"match": {"prefix": "/"}, "requires": requires}],
          "bypass_cors_preflight": True}
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend",
                                                  name="default")])])
    lst = listener(rc, access_logs=[access_log(path="@LOG:istio@", fmt=ISTIO_TEXT_FORMAT)])
    lst["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"] = [
        {"name": JWT, "typed_config": tc},
        {"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER_TYPE}},
    ]
    return bootstrap([lst], [cluster("backend", [app_port])])


def echoed(body):
    """The request headers the backend saw, {lower-case name: value}."""
    return {k.lower(): v for k, v in json.loads(body)["headers"]}


@pytest.fixture
def proxy(backend_app, proxy_factory):  # noqa: F811
    return proxy_factory(jwt_bootstrap(backend_app))


def test_valid_token_passes_with_payload_header(proxy):
    tok = mint(RSA_KEY, claims(aud="weft.example", scope="read write"), "rsa-1")
    status, _, body = proxy.request("GET", "/echo", {"Authorization": "Bearer " + tok,
                                                     "x-jwt-sub": "forged"})
    assert status == 200, body
    seen = echoed(body)
    assert "authorization" not in seen  # forward is false: the token is removed
    assert seen["x-jwt-payload"] == tok.split(".")[1]
    assert seen["x-jwt-sub"] == "alice"  # the claim, not the forged value
    # ES256 token of the second issuer
    tok2 = mint(EC_KEY, claims(iss=ISS2, sub="bob"), "ec-1", alg="ES256")
    status, _, body = proxy.request("GET", "/echo", {"Authorization": "Bearer " + tok2})
    assert status == 200, body
    assert "x-jwt-payload" not in echoed(body)
    assert proxy.wait_stat(PREFIX + "allowed", 2)


def test_no_token_passes_and_forged_headers_are_stripped(proxy):
    status, _, body = proxy.request("GET", "/echo", {"x-jwt-payload": "eyJzdWIiOiJyb290In0"})
    assert status == 200
    assert "x-jwt-payload" not in echoed(body)
    log = proxy.istio_log(1)[0]
    assert log["response_code"] == "200"


def reject(proxy, tok, want_status, want_body, path="/echo?x=1"):
    status, hdrs, body = proxy.request("GET", path, {"Authorization": "Bearer " + tok,
                                                     "Host": "svc.example"})
    assert status == want_status, body
    assert body.decode() == want_body
    assert hdrs["content-type"] == "text/plain"
    return hdrs


def test_expired_token_gets_401_with_details(proxy):
    tok = mint(RSA_KEY, claims(aud="weft.example", exp_in=-120), "rsa-1")
    hdrs = reject(proxy, tok, 401, "Jwt is expired")
    assert hdrs["www-authenticate"] == \
        'Bearer realm="http://svc.example/echo?x=1", error="invalid_token"'
    log = proxy.istio_log(1)[0]
    assert log["response_code"] == "401"
    assert log["response_code_details"] == "jwt_authn_access_denied{Jwt_is_expired}"
    assert log["upstream_host"] == "-"
    assert proxy.wait_stat(PREFIX + "denied", 1)
    # expired by less than Envoy's 60 s clock skew: accepted
    tok = mint(RSA_KEY, claims(aud="weft.example", exp_in=-30), "rsa-1")
    status, _, _ = proxy.request("GET", "/echo", {"Authorization": "Bearer " + tok})
    assert status == 200


def test_wrong_issuer_unknown_key_bad_audience(proxy):
    reject(proxy, mint(RSA_KEY, claims(iss="https://evil.example"), "rsa-1"), 401,
           "Jwt issuer is not configured")
    # right issuer and kid, another key's signature
    reject(proxy, mint(OTHER_RSA, claims(aud="weft.example"), "rsa-1"), 401,
           "Jwt verification fails")
    # a kid the issuer's JWKS does not have
    reject(proxy, mint(RSA_KEY, claims(aud="weft.example"), "rsa-9"), 401,
           "Jwks doesn't have key to match kid or alg from Jwt")
    hdrs = reject(proxy, mint(RSA_KEY, claims(aud="other.example"), "rsa-1"), 403,
                  "Audiences in Jwt are not allowed")
    assert 'error="invalid_token"' in hdrs["www-authenticate"]
    reject(proxy, "not-a-jwt", 401,
           "Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections")
    details = [e["response_code_details"] for e in proxy.istio_log(5)]
    assert details == ["jwt_authn_access_denied{Jwt_issuer_is_not_configured}",
                       "jwt_authn_access_denied{Jwt_verification_fails}",
                       "jwt_authn_access_denied{Jwks_doesn't_have_key_to_match_kid_or_alg_from_Jwt}",
                       "jwt_authn_access_denied{Audiences_in_Jwt_are_not_allowed}",
                       "jwt_authn_access_denied{Jwt_is_not_in_the_form_of_Header.Payload."
                       "Signature_with_two_dots_and_3_sections}"]
    assert proxy.wait_stat(PREFIX + "denied", 5)


def test_cors_preflight_bypasses(proxy):
    status, _, _ = proxy.request("OPTIONS", "/echo", {"Origin": "https://a.example",
                                                      "Access-Control-Request-Method": "GET",
                                                      "Authorization": "Bearer bad"})
    assert status == 200
    assert proxy.wait_stat(PREFIX + "cors_preflight_bypassed", 1)
