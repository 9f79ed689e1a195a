"""RequestAuthentication in the local mesh: weft-pilot translates it into the sidecar's
envoy.filters.http.jwt_authn (after istio.metadata_exchange, providers origins-<i> with the
inline JWKS) and the sidecar enforces it: a valid RS256 token reaches the app (its payload in
outputPayloadToHeader's header), an expired one and one of another issuer get 401 with
Envoy's details in the access log, no token passes; removing the policy removes the filter.
Tokens are minted here with Python's `cryptography`.

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
import json

from meshfix import mesh, wait_for  # noqa: F401
from test_mesh_mtls import SERVICE, inbound_listener
from test_proxy_jwt import RSA_KEY, claims, mint, rsa_jwk

assert mesh

ISS = "https://issuer-1.example.com"

RA = """apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  jwtRules:
  - issuer: %s
    jwks: '%s'
    outputPayloadToHeader: x-jwt-payload
""" % (ISS, json.dumps({"keys": [rsa_jwk(RSA_KEY, "rsa-1")]}))


def http_filter_names(pod):
    lst = inbound_listener(pod)
    if lst is None:
        return None
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    return [f["name"] for f in hcm["http_filters"]]


def call(pod, token=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    return pod.request(8080, "/echo", "web.shop", headers=headers)


def test_mesh_request_authentication(mesh):  # noqa: F811
    mesh.write_config("web.yaml", SERVICE)
    mesh.write_config("ra.yaml", RA)
    mesh.start_pilot(default_ns="shop")
    pod = mesh.add_pod("web-1", "shop", {"app": "web"}, app_port=8080)
    mesh.wait_ready(pod)
    wait_for(lambda: http_filter_names(pod) is not None, what="the inbound listener")
    mesh.wait_synced()
    names = http_filter_names(pod)
    assert names[:2] == ["istio.metadata_exchange", "envoy.filters.http.jwt_authn"], names

    tok = mint(RSA_KEY, claims(iss=ISS), "rsa-1")
    status, _, body = call(pod, tok)
    assert status == 200, body
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert seen["x-jwt-payload"] == tok.split(".")[1]
    assert "authorization" not in seen

    status, hdrs, body = call(pod, mint(RSA_KEY, claims(iss=ISS, exp_in=-300), "rsa-1"))
    assert (status, body) == (401, b"Jwt is expired")
    assert hdrs["www-authenticate"].endswith(', error="invalid_token"')
    entry = pod.wait_log(lambda e: e.get("response_code") == 401)
    assert entry["response_code_details"] == "jwt_authn_access_denied{Jwt_is_expired}"

    status, _, body = call(pod, mint(RSA_KEY, claims(iss="https://other.example"), "rsa-1"))
    assert (status, body) == (401, b"Jwt issuer is not configured")

    status, _, _ = call(pod)
    assert status == 200  # no token: allowed (requestPrincipals in an ALLOW policy requires one)

    st = pod.stats()
    assert st.get("http.inbound_0.0.0.0_8080.jwt_authn.allowed", 0) >= 2
    assert st.get("http.inbound_0.0.0.0_8080.jwt_authn.denied", 0) == 2

    mesh.remove_config("ra.yaml")
    wait_for(lambda: "envoy.filters.http.jwt_authn" not in (http_filter_names(pod) or ["x"]),
             what="the jwt_authn filter to go")
    status, _, _ = call(pod, mint(RSA_KEY, claims(iss=ISS, exp_in=-300), "rsa-1"))
    assert status == 200


RA_URI = """apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt-uri, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  jwtRules:
  - issuer: %s
    jwksUri: http://127.0.0.1:%d/jwks.json
  - issuer: https://broken.example.com
    jwksUri: http://127.0.0.1:%d/missing.json
"""


def jwks_server(doc):
    """A loopback HTTP server answering /jwks.json with doc (404 otherwise)."""
    import http.server
    import threading

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = doc.encode() if self.path == "/jwks.json" else b"nope"
            self.send_response(200 if self.path == "/jwks.json" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_mesh_request_authentication_jwks_uri(mesh):  # noqa: F811
    """jwksUri: pilot fetches the key set and pushes it; a set it cannot fetch fails closed."""
    srv = jwks_server(json.dumps({"keys": [rsa_jwk(RSA_KEY, "rsa-1")]}))
    try:
        port = srv.server_address[1]
        mesh.write_config("web.yaml", SERVICE)
        mesh.write_config("ra.yaml", RA_URI % (ISS, port, port))
        mesh.start_pilot(default_ns="shop")
        pod = mesh.add_pod("web-1", "shop", {"app": "web"}, app_port=8080)
        mesh.wait_ready(pod)
        tok = mint(RSA_KEY, claims(iss=ISS), "rsa-1")
        # fetched by pilot on its own thread, then pushed: the token passes
        wait_for(lambda: call(pod, tok)[0] == 200, timeout=20, what="the fetched key set")
        broken = mint(RSA_KEY, claims(iss="https://broken.example.com"), "rsa-1")
        status, _, body = call(pod, broken)
        assert (status, body) == (401, b"Jwt verification fails")  # the stand-in key set
        assert call(pod)[0] == 200
        # istiod's resolver counters on the monitoring port
        def counters():
            status, metrics = mesh.pilot_get("/metrics")
            assert status == 200
            vals = dict(ln.rsplit(" ", 1) for ln in metrics.splitlines()
                        if ln.startswith("pilot_jwks_resolver_network_fetch_"))
            return {k: int(v) for k, v in vals.items()}
        wait_for(lambda: counters()["pilot_jwks_resolver_network_fetch_fail_total"] >= 1,
                 what="the failed fetch counted")
        assert counters()["pilot_jwks_resolver_network_fetch_success_total"] >= 1
    finally:
        srv.shutdown()


AUTHZ = """apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: require-jwt, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  action: ALLOW
  rules:
  - from: [{source: {requestPrincipals: ["%s/alice"]}}]
    when: [{key: "request.auth.claims[groups]", values: [admins]}]
""" % ISS


def test_mesh_jwt_required_by_request_principals(mesh):  # noqa: F811
    """Issue 18's acceptance: a JWT required by requestPrincipals (valid, expired, wrong issuer,
    missing), with a request.auth.claims condition, through pilot's RBAC and JWT filters."""
    mesh.write_config("web.yaml", SERVICE)
    mesh.write_config("ra.yaml", RA)
    mesh.write_config("authz.yaml", AUTHZ)
    mesh.start_pilot(default_ns="shop")
    pod = mesh.add_pod("web-1", "shop", {"app": "web"}, app_port=8080)
    mesh.wait_ready(pod)
    wait_for(lambda: "envoy.filters.http.rbac" in (http_filter_names(pod) or []),
             what="the RBAC filter")
    mesh.wait_synced()
    names = http_filter_names(pod)
    assert names.index("envoy.filters.http.jwt_authn") < names.index("envoy.filters.http.rbac")

    alice = mint(RSA_KEY, claims(iss=ISS, groups=["admins"]), "rsa-1")
    status, _, body = call(pod, alice)
    assert status == 200, body
    # the right principal without the claim, another principal with it
    for tok in (mint(RSA_KEY, claims(iss=ISS, groups=["users"]), "rsa-1"),
                mint(RSA_KEY, claims(iss=ISS, sub="bob", groups=["admins"]), "rsa-1")):
        status, _, body = call(pod, tok)
        assert (status, body) == (403, b"RBAC: access denied")
    # missing: the JWT filter lets it through, the ALLOW policy denies it
    status, _, body = call(pod)
    assert (status, body) == (403, b"RBAC: access denied")
    entry = pod.wait_log(lambda e: e.get("response_code") == 403 and
                         e.get("response_code_details", "").endswith("[none]"))
    assert entry["response_code_details"] == "rbac_access_denied_matched_policy[none]"
    # expired and wrong issuer: the JWT filter answers first
    status, _, body = call(pod, mint(RSA_KEY, claims(iss=ISS, exp_in=-300, groups=["admins"]),
                                     "rsa-1"))
    assert (status, body) == (401, b"Jwt is expired")
    status, _, body = call(pod, mint(RSA_KEY, claims(iss="https://evil.example", sub="alice"),
                                     "rsa-1"))
    assert (status, body) == (401, b"Jwt issuer is not configured")


GW_RA = """apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: ingress-jwt, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  jwtRules:
  - issuer: %s
    jwks: '%s'
""" % (ISS, json.dumps({"keys": [rsa_jwk(RSA_KEY, "rsa-1")]}))


def test_mesh_gateway_request_authentication(mesh):  # noqa: F811
    """A RequestAuthentication selecting the ingress gateway: its HTTP listener gets the JWT
    filter (Istio validates end-user tokens at the edge), the catalog sidecars do not."""
    import os
    from meshfix import BOOK, GATEWAY_SERVICE
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
              "ch10/catalog-gateway.yaml",
              "ch10/catalog-virtualservice-subsets-v1-v2.yaml",
              "ch10/catalog-destinationrule-v1-v2.yaml"):
        mesh.add_config(os.path.join(BOOK, f))
    mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.write_config("ra.yaml", GW_RA)
    mesh.start_pilot(default_ns="istioinaction")
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router")
    cat = mesh.add_pod("catalog-6cf4b97d-abcde", "istioinaction",
                       {"app": "catalog", "version": "v1"}, app_port=3000)
    cat2 = mesh.add_pod("catalog-v2-7b9c8d-x7k2p", "istioinaction",
                        {"app": "catalog", "version": "v2"}, app_port=3000)
    for p in (gw, cat, cat2):
        mesh.wait_ready(p)

    def get(token=None, path="/healthz"):
        h = {"Authorization": "Bearer " + token} if token else {}
        return gw.request(8080, path, host="catalog.istioinaction.io", headers=h)

    wait_for(lambda: get()[0] == 200, timeout=20, what="the gateway route")
    assert get(mint(RSA_KEY, claims(iss=ISS), "rsa-1"))[0] == 200
    status, hdrs, body = get(mint(RSA_KEY, claims(iss=ISS, exp_in=-300), "rsa-1"), "/items")
    assert (status, body) == (401, b"Jwt is expired")
    assert hdrs["www-authenticate"] == ('Bearer realm="http://catalog.istioinaction.io/items", '
                                       'error="invalid_token"')
    st = gw.stats()
    assert any(k.endswith(".jwt_authn.denied") and v == 1 for k, v in st.items()), st
    assert not any(".jwt_authn." in k for k in cat.stats())
