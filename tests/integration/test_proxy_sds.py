"""Certificates over SDS in weft-proxy (issue 17 item 2; reference security.md §1.3, §1.6, §2,
§3.2, §3.3): a real weft-pilot CA (`--ca-dir`, tokens from `weft-pilot create-token`), and
weft-proxies whose bootstraps use Istio's SDS shapes (tls_certificate_sds_secret_configs
`default`, combined_validation_context with SAN matchers and `ROOTCA`, sds_config to
`sds-grpc`) on an inbound listener and an outbound cluster. The proxies make their own keys and
CSRs and call CreateCertificate with their tokens (--token-path, CA_ADDR).

- two proxies doing mTLS with the SPIFFE identities pilot's CA issued; `openssl s_client` and
  `curl --cacert <root from /debug/istio-ca-root-cert>` see the SPIFFE certificate;
- a proxy whose token is refused: Istio's `failed to sign CSR` line, handshakes fail as
  Envoy's NotReadySslSocket (`TLS error: Secret is not supplied by SDS`, ssl.connection_error,
  the socket factories' *_context_secrets_not_ready);
- rotation with SECRET_TTL of a few seconds: a kept-alive upstream connection keeps serving
  while new handshakes see a new serial.

Every process binds loopback on free ports and is stopped at teardown.
"""
import base64
import json
import os
import re
import subprocess
import time

import pytest

from procs import free_port, running_apps
from proxyfix import access_log, bootstrap, cluster, listener, proxy_factory, simple_routes
from test_pilot import get_json, pilot_exe  # noqa: F401
from test_pilot_ca import create_certificate, make_csr, start, stop, token
from test_proxy_agent_status import status_get
from test_proxy_tls import DTC, TLS, TLS_LOG, UTC, port_of, s_client, tls_log

assert proxy_factory  # fixture, imported for pytest

SERVER_ID = "spiffe://cluster.local/ns/default/sa/server"
CLIENT_ID = "spiffe://cluster.local/ns/default/sa/client"
SNI = "outbound_.80_._.server.default.svc.cluster.local"
GENERATED = "generated new workload certificate"
SECRETS_T = "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"


def secrets_dump(proxy):
    status, _, body = proxy.admin("/config_dump")
    assert status == 200, body
    assert b"PRIVATE KEY" not in body  # keys never leave the proxy, not even in the dump
    configs = json.loads(body)["configs"]
    assert configs[-1]["@type"] == SECRETS_T  # last, as Envoy's
    return configs[-1], body


def pc_secret(dump_body):
    """`weftctl pc secret -f -` on a live proxy's /config_dump: the table's rows."""
    exe = os.environ.get("WEFTCTL", "build/weftctl")
    r = subprocess.run([exe, "pc", "secret", "-f", "-"], input=dump_body, capture_output=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines[0].split() == ["RESOURCE", "NAME", "TYPE", "STATUS", "VALID", "CERT", "SERIAL",
                                "NUMBER", "NOT", "AFTER", "NOT", "BEFORE"], lines
    return [ln.split() for ln in lines[1:]]


def sds(name):
    """Istio's SdsSecretConfig (pilot/pkg/model/authentication.go)."""
    return {"name": name, "sds_config": {
        "api_config_source": {"api_type": "GRPC", "set_node_on_first_message_only": True,
                              "transport_api_version": "V3",
                              "grpc_services": [{"envoy_grpc": {"cluster_name": "sds-grpc"}}]},
        "initial_fetch_timeout": "0s", "resource_api_version": "V3"}}


def inbound_tls():
    """Istio's inbound mTLS DownstreamTlsContext (security.md §3.3)."""
    return {"name": TLS, "typed_config": {
        "@type": DTC, "require_client_certificate": True,
        "common_tls_context": {
            "tls_params": {"tls_minimum_protocol_version": "TLSv1_2",
                           "tls_maximum_protocol_version": "TLSv1_3"},
            "alpn_protocols": ["h2", "http/1.1"],
            "tls_certificate_sds_secret_configs": [sds("default")],
            "combined_validation_context": {
                "default_validation_context": {"match_subject_alt_names": [
                    {"prefix": "spiffe://cluster.local/"}]},
                "validation_context_sds_secret_config": sds("ROOTCA")}}}}


def outbound_tls(san=SERVER_ID):
    """Istio's ISTIO_MUTUAL UpstreamTlsContext (security.md §3.2)."""
    return {"name": TLS, "typed_config": {
        "@type": UTC, "sni": SNI,
        "common_tls_context": {
            "tls_params": {"tls_minimum_protocol_version": "TLSv1_2",
                           "tls_maximum_protocol_version": "TLSv1_3"},
            "alpn_protocols": ["istio-peer-exchange", "istio"],
            "tls_certificate_sds_secret_configs": [sds("default")],
            "combined_validation_context": {
                "default_validation_context": {"match_subject_alt_names": [{"exact": san}]},
                "validation_context_sds_secret_config": sds("ROOTCA")}}}}


@pytest.fixture
def mesh(pilot_exe, tmp_path, monkeypatch):  # noqa: F811
    """A pilot (its CA) and token files for default/server and default/client."""
    ca_dir = tmp_path / "ca"
    proc = start(pilot_exe, tmp_path, ca_dir)
    toks = {}
    for sa in ("server", "client"):
        toks[sa] = tmp_path / (sa + ".token")
        toks[sa].write_text(token(pilot_exe, ca_dir, "default", sa) + "\n")
    monkeypatch.setenv("CA_ADDR", "127.0.0.1:%d" % proc.xds)
    for k in ("SECRET_TTL", "ECC_SIGNATURE_ALGORITHM", "SECRET_GRACE_PERIOD_RATIO"):
        monkeypatch.delenv(k, raising=False)
    proc.tokens = toks
    proc.ca_dir = ca_dir
    proc.root = get_json(proc.mon, "/debug/istio-ca-root-cert?namespace=default")["data"][
        "root-cert.pem"]
    (tmp_path / "root.pem").write_text(proc.root)
    proc.root_path = tmp_path / "root.pem"
    try:
        yield proc
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def app():
    with running_apps("backend") as ports:
        yield ports["backend"]


def wait_generated(proxy, n=1, timeout=20):
    deadline = time.monotonic() + timeout
    while proxy.stderr_text().count(GENERATED) < n:
        assert time.monotonic() < deadline, proxy.stderr_text()[-3000:]
        time.sleep(0.05)


def server_proxy(proxy_factory, mesh, app, monkeypatch, ecdsa=True):  # noqa: F811
    monkeypatch.setenv("ECC_SIGNATURE_ALGORITHM", "ECDSA" if ecdsa else "")
    lst = listener(simple_routes("backend"),
                   access_logs=[access_log("@LOG:tls@", json_format=TLS_LOG)])
    lst["filter_chains"][0]["transport_socket"] = inbound_tls()
    return proxy_factory(bootstrap([lst], [cluster("backend", [app])]),
                         args=["--token-path", mesh.tokens["server"]])


def client_proxy(proxy_factory, mesh, target_port, monkeypatch, tok=None):  # noqa: F811
    monkeypatch.setenv("ECC_SIGNATURE_ALGORITHM", "")  # RSA 2048, Istio's default
    if "SECRET_TTL" not in os.environ:
        monkeypatch.setenv("SECRET_TTL", "72h")
    lst = listener(simple_routes("to_server"),
                   access_logs=[access_log("@LOG:tls@", json_format=TLS_LOG)])
    return proxy_factory(
        bootstrap([lst], [cluster("to_server", [target_port], transport_socket=outbound_tls())]),
        args=["--token-path", tok or mesh.tokens["client"]])


def peer_cert(port, *args):
    """The server certificate s_client saw (PEM) and s_client's output."""
    rc, out = s_client(port, "-showcerts", *args, stdin=b"")
    m = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", out, re.S)
    assert m, out
    return m.group(0), out


def x509(pem, *args):
    r = subprocess.run(["openssl", "x509", "-noout", *args], input=pem, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_mtls_with_pilot_issued_identities(proxy_factory, mesh, app, monkeypatch, tmp_path,
                                           pilot_exe):  # noqa: F811
    b = server_proxy(proxy_factory, mesh, app, monkeypatch)
    b_port = port_of(b)
    a = client_proxy(proxy_factory, mesh, b_port, monkeypatch)
    wait_generated(b)
    wait_generated(a)
    assert "failed to sign CSR" not in a.stderr_text() + b.stderr_text()

    status, _, body = a.request("GET", "/echo")
    assert status == 200, (body, a.stderr_text()[-3000:])
    e = tls_log(a, 1)[0]
    assert e["u_peer_san"] == SERVER_ID and e["u_version"] == "TLSv1.3"
    eb = tls_log(b, 1)[0]
    assert eb["d_peer_san"] == CLIENT_ID and eb["sni"] == SNI
    assert eb["d_local_san"] == SERVER_ID

    # openssl s_client verifies B's chain against pilot's root: a SPIFFE-only ECDSA leaf
    pem, out = peer_cert(b_port, "-CAfile", mesh.root_path)
    assert "Verify return code: 0 (ok)" in out, out
    text = x509(pem, "-text")
    assert "URI:" + SERVER_ID in text and "id-ecPublicKey" in text
    # curl with a client certificate pilot issued to a third identity, trusting pilot's root
    tok = token(pilot_exe, mesh.ca_dir, "default", "curl")
    chain = create_certificate(mesh.xds, make_csr(tmp_path, "ecdsa"), tok, ttl=600)
    (tmp_path / "curl.crt").write_text("".join(chain[:-1]))
    r = subprocess.run(["curl", "-sS", "--http1.1", "--max-time", "10", "--cacert",
                        str(mesh.root_path), "--cert", str(tmp_path / "curl.crt"), "--key",
                        str(tmp_path / "ecdsa.key"), "--resolve",
                        "server.default.svc:%d:127.0.0.1" % b_port,
                        "https://server.default.svc:%d/echo" % b_port, "-o", "/dev/null", "-w",
                        "%{http_code}"], capture_output=True, text=True, timeout=30)
    # the leaf has only a URI SAN (no subject): the chain verifies against pilot's root, then
    # curl's host name check fails
    assert r.returncode == 60 and "issuer" not in r.stderr, r.stderr
    assert "common name" in r.stderr or "subject name" in r.stderr, r.stderr
    r = subprocess.run(["curl", "-sS", "--http1.1", "--max-time", "10", "--cacert",
                        str(mesh.root_path), "--cert", str(tmp_path / "curl.crt"), "--key",
                        str(tmp_path / "ecdsa.key"), "--resolve",
                        "server.default.svc:%d:127.0.0.1" % b_port, "--insecure",
                        "https://server.default.svc:%d/echo" % b_port, "-o", "/dev/null", "-w",
                        "%{http_code}"], capture_output=True, text=True, timeout=30)
    assert r.stdout == "200", r.stderr
    assert tls_log(b, 2)[1]["d_peer_san"] == "spiffe://cluster.local/ns/default/sa/curl"
    st = a.stats()
    assert st["cluster.to_server.ssl.handshake"] == 1

    # what operators see: SecretsConfigDump, `weftctl pc secret`, /certs, the expiry gauge
    serial = x509(pem, "-serial").strip().split("=")[1].lower()
    sec, body = secrets_dump(b)
    active = sec["dynamic_active_secrets"]
    assert [e["name"] for e in active] == ["default", "ROOTCA"]
    assert "dynamic_warming_secrets" not in sec
    d, r = active[0], active[1]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/1$", d["version_info"]), d
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", d["last_updated"]), d
    tc = d["secret"]["tls_certificate"]
    assert d["secret"]["name"] == "default"
    assert base64.b64decode(tc["private_key"]["inline_bytes"]) == b"[redacted]"
    chain = base64.b64decode(tc["certificate_chain"]["inline_bytes"]).decode()
    assert chain.startswith(pem) and chain.endswith(mesh.root)
    assert base64.b64decode(r["secret"]["validation_context"]["trusted_ca"]["inline_bytes"]) \
        .decode() == mesh.root
    rows = pc_secret(body)
    root_serial = x509(mesh.root, "-serial").strip().split("=")[1].lower()
    assert [row[:6] for row in rows] == [["default", "Cert", "Chain", "ACTIVE", "true", serial],
                                         ["ROOTCA", "CA", "ACTIVE", "true", root_serial,
                                          rows[1][5]]], rows
    status, _, body = b.admin("/certs")
    certs = json.loads(body)["certificates"]
    assert len(certs) == 1  # one TLS context (the listener's)
    leaf = certs[0]["cert_chain"][0]
    assert leaf["serial_number"] == serial and leaf["path"] == "<inline>"
    assert leaf["subject_alt_names"] == [{"uri": SERVER_ID}]
    assert leaf["days_until_expiration"] in ("0", "1")  # 24 h (uint64: a JSON string)
    assert certs[0]["ca_cert"][0]["subject_alt_names"] == []
    assert int(certs[0]["ca_cert"][0]["days_until_expiration"]) > 3000
    # A asked for SECRET_TTL 72h: the first certificate to expire is its leaf, in 2 days
    st = a.wait_stat("server.days_until_first_cert_expiring", 2)
    assert st["server.days_until_first_cert_expiring"] == 2


def test_secret_not_supplied(proxy_factory, mesh, app, monkeypatch, tmp_path):
    b = server_proxy(proxy_factory, mesh, app, monkeypatch)
    b_port = port_of(b)
    bad = tmp_path / "bad.token"
    bad.write_text("not-a-token\n")
    c = client_proxy(proxy_factory, mesh, b_port, monkeypatch, tok=bad)
    lst = listener(simple_routes("backend"))
    lst["filter_chains"][0]["transport_socket"] = inbound_tls()
    d_status = free_port()
    d = proxy_factory(bootstrap([lst], [cluster("backend", [app])]),
                      args=["--token-path", tmp_path / "missing.token", "--status-address",
                            "127.0.0.1:%d" % d_status])
    wait_generated(b)
    deadline = time.monotonic() + 20
    while "failed to sign CSR" not in c.stderr_text() + "" or \
            "failed to sign CSR" not in d.stderr_text():
        assert time.monotonic() < deadline, c.stderr_text() + d.stderr_text()
        time.sleep(0.05)
    assert ("failed to sign CSR: create certificate: rpc error: code = Unauthenticated desc = "
            "request authenticate failure") in c.stderr_text()
    assert "failed to sign CSR: failed to read token file" in d.stderr_text()
    # upstream: the cluster's secret is not ready
    status, _, body = c.request("GET", "/echo")
    assert status == 503
    assert body.decode().endswith("transport failure reason: TLS error: Secret is not supplied "
                                  "by SDS"), body
    e = tls_log(c, 1)[0]
    assert e["tfr"] == "TLS_error:_Secret_is_not_supplied_by_SDS" and e["flags"] == "UF", e
    st = c.stats()
    assert st["cluster.to_server.ssl.connection_error"] == 1
    assert st["cluster.to_server.client_ssl_socket_factory.upstream_context_secrets_not_ready"] \
        == 1
    # downstream: the listener's secret is not ready, the handshake fails
    d_port = port_of(d)
    rc, out = s_client(d_port, "-CAfile", mesh.root_path)
    assert rc != 0 and "BEGIN CERTIFICATE" not in out
    pre = "listener.127.0.0.1_%d." % d_port
    st = d.wait_stat(pre + "ssl.connection_error", 1)
    assert st[pre + "ssl.connection_error"] == 1
    assert st[pre + "server_ssl_socket_factory.downstream_context_secrets_not_ready"] == 1
    # the dump shows both secrets warming; `pc secret` prints istioctl's WARMING rows
    sec, body = secrets_dump(d)
    assert "dynamic_active_secrets" not in sec
    assert [(e["name"], e["secret"]["name"]) for e in sec["dynamic_warming_secrets"]] == \
        [("default", "default"), ("ROOTCA", "ROOTCA")]
    assert pc_secret(body) == [["default", "WARMING", "false"], ["ROOTCA", "WARMING", "false"]]
    # Envoy lists contexts that exist: a context waiting for its secrets has none yet
    assert json.loads(d.admin("/certs")[2]) == {"certificates": []}
    # Envoy stays INITIALIZING while its secrets (initial_fetch_timeout 0s) have not come:
    # pilot-agent's probe says so, and the proxy gets no traffic from its Service
    status, _, body = status_get(d_status, "/healthz/ready")
    assert status == 503 and "server is not live, current state is: INITIALIZING" in body, body
    assert "server.days_until_first_cert_expiring" not in d.stats()


def test_rotation_keeps_connections(proxy_factory, mesh, app, monkeypatch):
    monkeypatch.setenv("SECRET_TTL", "6s")
    b = server_proxy(proxy_factory, mesh, app, monkeypatch)
    b_port = port_of(b)
    monkeypatch.setenv("SECRET_TTL", "24h")
    a = client_proxy(proxy_factory, mesh, b_port, monkeypatch)
    wait_generated(b)
    t_first = time.monotonic()
    wait_generated(a)
    status, _, body = a.request("GET", "/echo")
    assert status == 200, body
    pem1, _ = peer_cert(b_port, "-CAfile", mesh.root_path)
    serial1 = x509(pem1, "-serial")
    # Istio's grace ratio: about 3 s into the 6 s life, a new certificate
    t0 = time.monotonic()
    wait_generated(b, 2, timeout=15)
    assert 1.5 <= time.monotonic() - t0 <= 8
    pem2, out = peer_cert(b_port, "-CAfile", mesh.root_path)
    assert "Verify return code: 0 (ok)" in out
    assert x509(pem2, "-serial") != serial1
    assert "URI:" + SERVER_ID in x509(pem2, "-text")
    # the kept-alive upstream connection made with the old certificate still serves
    for _ in range(3):
        status, _, body = a.request("GET", "/echo")
        assert status == 200, body
    st = a.stats()
    assert st["cluster.to_server.upstream_cx_total"] == 1
    assert st["cluster.to_server.ssl.handshake"] == 1
    # after the first certificate's NotAfter, the old connection still serves
    wait_generated(b, 3, timeout=15)
    time.sleep(max(0, 7 - (time.monotonic() - t_first)))
    status, _, body = a.request("GET", "/echo")
    assert status == 200, body
    assert a.stats()["cluster.to_server.upstream_cx_total"] == 1
    assert json.dumps(tls_log(b, 5)[4]["d_peer_san"]) == json.dumps(CLIENT_ID)
