"""Operator reports B025, B027, B028 and B029 (../shared/cases/operator-reports.md) on a local mesh
whose pods carry Istio's tlsMode label and a token of pilot's CA (meshfix's default), so
sidecars talk mutual TLS as in Istio: a frontend sidecar, catalog pods, weftctl against them.

- B027: PeerAuthentication STRICT in `shop`: a client without a sidecar (plaintext straight to
  the catalog pod) gets no HTTP answer at all; the frontend's sidecar reaches catalog over mTLS
  (200) and catalog's Istio metrics count it as mutual_tls from spiffe://.../sa/default;
  `describe pod` prints istioctl's block; PERMISSIVE lets the plaintext client in.
- B028: a DestinationRule `tls` block switches auto mTLS off: DISABLE gives 503 UC
  connection_termination, SIMPLE 503 UF,URX with the TLS failure reason, and the cluster the
  frontend holds shows which socket is used; `describe` names the rule and says it overrides
  auto mTLS; dropping `tls` brings 200 back.
- B025: a CA change (a plug-in cacerts root B) with pods holding certificates of both roots:
  503 UF,URX CERTIFICATE_VERIFY_FAILED, rootca-compare names the mismatch, a restart fixes it.
- B029: a workload-level PeerAuthentication DISABLE: weft follows Istio's current
  mtls_checker.go, which untags the workload's endpoints, so meshed clients send plaintext and
  get 200 (the report's 503 WRONG_VERSION_NUMBER is Istio before that check); `describe` says so.
"""
import base64
import collections
import json
import os
import socket
import subprocess
import time

from conftest import run_weftctl
from meshfix import mesh, wait_for  # noqa: F401 (fixture)

SHOP = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: shop}
spec:
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 3000}]
"""

PA = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: %s, namespace: shop}
spec:
%s
"""
STRICT = PA % ("default", "  mtls: {mode: STRICT}")
PERMISSIVE = PA % ("default", "  mtls: {mode: PERMISSIVE}")
CATALOG_PLAIN = PA % ("catalog-plain", "  selector: {matchLabels: {app: catalog}}\n"
                                       "  mtls: {mode: DISABLE}")

DR_TLS = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: catalog, namespace: shop}
spec:
  host: catalog
  trafficPolicy:
    connectionPool: {http: {http1MaxPendingRequests: 100}}
    tls: {mode: %s}
"""
DR_NO_TLS = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: catalog, namespace: shop}
spec:
  host: catalog
  trafficPolicy:
    connectionPool: {http: {http1MaxPendingRequests: 100}}
"""

CATALOG = "outbound|80||catalog.shop.svc.cluster.local"


def shop(mesh, files=None, env=None):
    mesh.write_config("shop.yaml", SHOP)
    for name, text in (files or {}).items():
        mesh.write_config(name, text)
    mesh.start_pilot(default_ns="shop")
    fe = mesh.add_pod("frontend-1", "shop", {"app": "frontend"}, env=env)
    cat = mesh.add_pod("catalog-v1-1", "shop", {"app": "catalog", "version": "v1"},
                       app_port=3000, env=env)
    for p in (fe, cat):
        mesh.wait_ready(p)
    return fe, cat


def call(fe, path="/healthz"):
    """A request from the frontend's app through its sidecar to catalog."""
    return fe.request_local(80, path, host="catalog")


def plaintext_direct(cat, path="/healthz"):
    """A client without a sidecar: plaintext HTTP straight to the catalog pod's port 3000.
    Returns the status code, or None when the connection closed without any answer."""
    with socket.create_connection((cat.ip, 3000), timeout=5) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: catalog\r\nConnection: close\r\n\r\n"
                   % path).encode())
        data = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None


def prom_line(pod, metric, **labels):
    status, _, body = pod.admin("/stats/prometheus")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(metric + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
            return line
    return None


def describe(mesh, pod):
    return run_weftctl("describe", "pod", "%s.%s" % (pod.name, pod.ns), "--pilot",
                       "127.0.0.1:%d" % mesh.mon_port)


def cluster_json(mesh, fe):
    """The frontend's catalog cluster from `pc cluster -o json` (istioctl's protojson names)."""
    r = run_weftctl("pc", "cluster", "%s.%s" % (fe.name, fe.ns), "--fqdn",
                    "catalog.shop.svc.cluster.local", "-o", "json", "--pilot",
                    "127.0.0.1:%d" % mesh.mon_port)
    assert r.returncode == 0, r.stderr
    return next(c for c in json.loads(r.stdout) if c["name"] == CATALOG)


def test_b027_strict_refuses_a_client_without_sidecar(mesh):
    fe, cat = shop(mesh, {"pa.yaml": STRICT})
    wait_for(lambda: plaintext_direct(cat) is None, timeout=20,
             what="catalog's STRICT inbound chain")
    # the frontend's sidecar: mutual TLS, 200, counted as such at catalog
    wait_for(lambda: call(fe)[0] == 200, timeout=20, what="frontend -> catalog over mTLS")
    line = wait_for(lambda: prom_line(
        cat, "istio_requests_total", reporter="destination",
        connection_security_policy="mutual_tls",
        source_principal="spiffe://cluster.local/ns/shop/sa/default"), timeout=10,
        what="catalog's istio_requests_total with mutual_tls")
    assert 'destination_principal="spiffe://cluster.local/ns/shop/sa/default"' in line, line
    # istioctl's describe block, and weft's line on what STRICT means
    r = describe(mesh, cat)
    assert r.returncode == 0, r.stderr
    assert ("Effective PeerAuthentication:\n   Workload mTLS mode: STRICT\n" in r.stdout), r.stdout
    assert "Applied PeerAuthentication:\n   default.shop\n" in r.stdout, r.stdout
    assert "only mutual TLS is accepted" in r.stderr, r.stderr  # weft's line
    # PERMISSIVE lets the plaintext client in again
    mesh.write_config("pa.yaml", PERMISSIVE)
    wait_for(lambda: plaintext_direct(cat) == 200, timeout=20, what="PERMISSIVE plaintext 200")


def test_b028_destinationrule_tls_turns_auto_mtls_off(mesh):
    fe, cat = shop(mesh, {"pa.yaml": STRICT})
    wait_for(lambda: call(fe)[0] == 200, timeout=20, what="frontend -> catalog over mTLS")
    c = cluster_json(mesh, fe)
    assert [m["name"] for m in c["transportSocketMatches"]] == ["tlsMode-istio",
                                                                  "tlsMode-disabled"], c
    # DISABLE: plaintext to a STRICT port, closed by the server: 503 UC
    mesh.write_config("dr.yaml", DR_TLS % "DISABLE")
    wait_for(lambda: call(fe)[0] == 503, timeout=20, what="503 under DISABLE")
    assert call(fe, "/dr-disable")[0] == 503
    e = fe.wait_log(lambda x: x.get("path") == "/dr-disable")
    assert e["response_flags"] == "UC", e
    assert e["response_code_details"] == \
        "upstream_reset_before_response_started{connection_termination}", e
    c = cluster_json(mesh, fe)
    assert "transportSocketMatches" not in c and "transportSocket" not in c, c
    r = describe(mesh, cat)
    assert r.returncode == 0, r.stderr
    assert 'DestinationRule: catalog.shop for "catalog"\n' in r.stdout, r.stdout
    assert "   Traffic Policy TLS Mode: DISABLE\n" in r.stdout, r.stdout
    assert ('weft: DestinationRule shop/catalog sets tls mode DISABLE for "catalog": it '
            "overrides auto mTLS") in r.stderr, r.stderr
    assert "Workload mTLS mode: STRICT\n" in r.stdout, r.stdout
    # SIMPLE: TLS without a client certificate, refused by the STRICT inbound: 503 UF,URX
    mesh.write_config("dr.yaml", DR_TLS % "SIMPLE")
    wait_for(lambda: "transportSocket" in cluster_json(mesh, fe), timeout=20,
             what="the SIMPLE socket at the frontend")
    assert call(fe, "/dr-simple")[0] == 503
    e = fe.wait_log(lambda x: x.get("path") == "/dr-simple")
    assert e["response_flags"] in ("UF,URX", "URX,UF"), e
    assert "TLS_error" in e["upstream_transport_failure_reason"], e
    c = cluster_json(mesh, fe)
    assert c["transportSocket"]["name"] == "envoy.transport_sockets.tls", c
    # the fix: no tls block, auto mTLS again
    mesh.write_config("dr.yaml", DR_NO_TLS)
    wait_for(lambda: call(fe)[0] == 200, timeout=20, what="200 without the tls block")


def test_b029_workload_disable_untags_its_endpoints(mesh):
    fe, cat = shop(mesh, {"pa-catalog.yaml": CATALOG_PLAIN})
    wait_for(lambda: plaintext_direct(cat) == 200, timeout=20, what="catalog plaintext only")
    # Istio's mtls_checker: the endpoint is untagged, the frontend sends plaintext: 200
    wait_for(lambda: call(fe)[0] == 200, timeout=20, what="frontend -> catalog 200")
    assert call(fe, "/healthz?t=b029")[0] == 200
    e = fe.wait_log(lambda x: x.get("path") == "/healthz?t=b029")
    assert e["response_flags"] == "-", e
    status, _, body = fe.admin("/config_dump?include_eds")
    assert status == 200
    eds = [c for c in json.loads(body)["configs"] if "EndpointsConfigDump" in c["@type"]]
    text = json.dumps(eds)
    assert cat.ip in text and '"tlsMode": "istio"' not in text.split(cat.ip)[1][:600], text
    r = describe(mesh, cat)
    assert r.returncode == 0, r.stderr
    assert "Workload mTLS mode: DISABLE\n" in r.stdout, r.stdout
    assert "catalog-plain.shop" in r.stdout, r.stdout
    assert "meshed clients send it plaintext" in r.stderr, r.stderr


def plugin_root(d, extra_roots=b""):
    """A plug-in CA as Istio's cacerts holds it: root B, an intermediate it signs (the
    signing CA), the chain. Returns the Secret (JSON text) for istio-system/cacerts;
    extra_roots (PEM) go first in root-cert.pem (a root transition: old and new trusted)."""
    def ossl(*args):
        r = subprocess.run(["openssl"] + list(args), cwd=d, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", "root-key.pem", "-out", "root-cert.pem", "-days", "30", "-subj",
         "/O=cluster.local/CN=Root B", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(os.path.join(d, "int.ext"), "w") as f:
        f.write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,"
                "digitalSignature\nsubjectAltName=URI:spiffe://cluster.local/ns/istio-system/"
                "sa/istiod\n")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         "ca-key.pem", "-out", "ca.csr", "-subj", "/O=cluster.local/CN=Intermediate B")
    ossl("x509", "-req", "-in", "ca.csr", "-CA", "root-cert.pem", "-CAkey", "root-key.pem",
         "-CAcreateserial", "-days", "20", "-extfile", "int.ext", "-out", "ca-cert.pem")

    def read(name):
        with open(os.path.join(d, name), "rb") as f:
            return f.read()
    data = {"ca-cert.pem": read("ca-cert.pem"), "ca-key.pem": read("ca-key.pem"),
            "root-cert.pem": extra_roots + read("root-cert.pem"),
            "cert-chain.pem": read("ca-cert.pem") + read("root-cert.pem")}
    return cacerts_secret(data)


def cacerts_secret(data):
    return json.dumps({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": "cacerts", "namespace": "istio-system"},
                       "data": {k: base64.b64encode(v).decode() for k, v in data.items()}})


def rootca_compare(mesh, a, b):
    return run_weftctl("pc", "rootca-compare", "%s.%s" % (a.name, a.ns), "%s.%s" % (b.name, b.ns),
                       "--pilot", "127.0.0.1:%d" % mesh.mon_port)


def test_b025_workloads_on_different_roots_fail_verification(mesh, tmp_path):
    """A CA change: catalog-v2 starts with a certificate and ROOTCA from the new root while the
    frontend still trusts only the old one: 503 UF,URX whose transport failure reason carries
    CERTIFICATE_VERIFY_FAILED, never a plaintext fallback; rootca-compare says the roots differ
    (non-zero exit); a restarted frontend (B material) gets 200 and identical roots."""
    fe, v1 = shop(mesh)
    wait_for(lambda: call(fe)[0] == 200, timeout=20, what="frontend -> catalog-v1 over mTLS")
    status, before = mesh.pilot_get("/debug/istio-ca-root-cert?namespace=shop")
    assert status == 200, before
    d = str(tmp_path / "plugin")
    os.makedirs(d)
    mesh.write_config("cacerts.json", plugin_root(d))
    with open(os.path.join(d, "root-cert.pem")) as f:
        root_b = f.read()
    wait_for(lambda: mesh.pilot_get("/debug/istio-ca-root-cert?namespace=shop")[1]
             ["data"]["root-cert.pem"].strip() == root_b.strip(), timeout=20,
             what="pilot signing with the plug-in root B")
    v2 = mesh.add_pod("catalog-v2-1", "shop", {"app": "catalog", "version": "v2"},
                      app_port=3000)
    mesh.wait_ready(v2)
    mesh.remove_pod(v1)  # every request must now reach the B-only pod
    wait_for(lambda: call(fe)[0] == 503, timeout=20, what="503 once only catalog-v2 is left")
    assert call(fe, "/healthz?t=b025")[0] == 503
    e = fe.wait_log(lambda x: x.get("path") == "/healthz?t=b025")
    assert e["response_flags"] in ("UF,URX", "URX,UF"), e
    assert "CERTIFICATE_VERIFY_FAILED" in e["upstream_transport_failure_reason"], e
    assert "CERTIFICATE_VERIFY_FAILED" in e["response_code_details"], e
    assert v2.app_request("/count")[0] == 200
    assert json.loads(v2.app_request("/count")[2])["requests"] == 0  # never in plaintext
    r = rootca_compare(mesh, fe, v2)
    assert r.returncode != 0, r.stdout
    assert ("Both [%s.shop] and [%s.shop] have the non identical ROOTCA, theoretically the "
            "connectivity between them is unavailable" % (fe.name, v2.name)) in r.stderr, r.stderr
    # the way out: restart the frontend, it gets B material
    mesh.remove_pod(fe)
    fe2 = mesh.add_pod("frontend-2", "shop", {"app": "frontend"})
    mesh.wait_ready(fe2)
    wait_for(lambda: call(fe2)[0] == 200, timeout=20, what="the new frontend -> catalog-v2")
    r = rootca_compare(mesh, fe2, v2)
    assert r.returncode == 0, r.stderr
    assert "have the identical ROOTCA, theoretically the connectivity between them is " \
        "available" in r.stdout, r.stdout


def rootca_certs(pod):
    """The PEM certificates of the pod's ROOTCA secret (its live config dump)."""
    status, _, body = pod.admin("/config_dump?resource=dynamic_active_secrets")
    assert status == 200, body
    for c in json.loads(body).get("configs", []):
        if c.get("name") == "ROOTCA":
            pem = base64.b64decode(c["secret"]["validation_context"]["trusted_ca"]
                                   ["inline_bytes"]).decode()
            return pem.count("BEGIN CERTIFICATE")
    return 0


def default_issuer(pod):
    """The issuer of the pod's workload certificate (`default`), as openssl prints it."""
    status, _, body = pod.admin("/config_dump?resource=dynamic_active_secrets")
    assert status == 200, body
    for c in json.loads(body).get("configs", []):
        if c.get("name") == "default":
            pem = base64.b64decode(c["secret"]["tls_certificate"]["certificate_chain"]
                                   ["inline_bytes"]).decode()
            r = subprocess.run(["openssl", "x509", "-noout", "-issuer"], input=pem,
                               capture_output=True, text=True, timeout=10)
            return r.stdout.strip()
    return ""


def test_b025_root_transition_with_overlap_fails_nothing(mesh, tmp_path):
    """Istio's root transition: first every proxy trusts a bundle of the old root A and the
    new root B (pilot still signing with A), then pilot signs with B's intermediate, then A
    leaves the bundle; workload certificates rotate every few seconds (SECRET_TTL) and
    requests flow the whole time: not one fails."""
    fe, cat = shop(mesh, env={"SECRET_TTL": "4s"})
    wait_for(lambda: call(fe)[0] == 200, timeout=20, what="frontend -> catalog over mTLS")
    ca = mesh.ca_dir

    def read(name):
        with open(os.path.join(ca, name), "rb") as f:
            return f.read()
    root_a, key_a = read("root-cert.pem"), read("ca-key.pem")
    d = str(tmp_path / "b")
    os.makedirs(d)
    plugin_root(d)  # root B and its intermediate
    with open(os.path.join(d, "root-cert.pem"), "rb") as f:
        root_b = f.read()
    codes = collections.Counter()

    def flowing(pred, what, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            codes[call(fe)[0]] += 1
            if pred():
                return
            assert time.monotonic() < deadline, "timed out waiting for " + what
            time.sleep(0.05)
    # 1. trust A and B, still sign with A
    mesh.write_config("cacerts.json", cacerts_secret({
        "ca-cert.pem": root_a, "ca-key.pem": key_a, "root-cert.pem": root_a + root_b,
        "cert-chain.pem": b""}))
    flowing(lambda: rootca_certs(fe) == 2 and rootca_certs(cat) == 2, "both roots everywhere")
    # 2. sign with B (its intermediate), still trust both
    with open(os.path.join(d, "ca-cert.pem"), "rb") as f:
        int_b = f.read()
    with open(os.path.join(d, "ca-key.pem"), "rb") as f:
        key_b = f.read()
    mesh.write_config("cacerts.json", cacerts_secret({
        "ca-cert.pem": int_b, "ca-key.pem": key_b, "root-cert.pem": root_a + root_b,
        "cert-chain.pem": int_b + root_b}))
    flowing(lambda: all("Intermediate B" in default_issuer(p) for p in (fe, cat)),
            "certificates from B on both sides")
    # 3. A leaves the bundle
    mesh.write_config("cacerts.json", cacerts_secret({
        "ca-cert.pem": int_b, "ca-key.pem": key_b, "root-cert.pem": root_b,
        "cert-chain.pem": int_b + root_b}))
    flowing(lambda: rootca_certs(fe) == 1 and rootca_certs(cat) == 1, "only B everywhere")
    for _ in range(20):
        codes[call(fe)[0]] += 1
    assert set(codes) == {200}, codes
