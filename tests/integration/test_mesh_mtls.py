"""PeerAuthentication on a sidecar's inbound listener (issue 17 item 4; reference security.md
§3.3, §4.1), with real processes: weft-pilot with its CA (--ca-dir), a weft-app behind a
weft-proxy sidecar that gets its certificate with a token (--token-path, CA_ADDR), and a test
client holding a certificate pilot's CA issued to another identity.

- default (no PeerAuthentication = PERMISSIVE): the listener has the mTLS chain (tls + Istio's
  ALPNs) and the plaintext chain, the sidecar ACKs it (SYNCED); a plaintext request is served and
  so is an mTLS one offering Istio's client ALPNs (istio-http/1.1, istio, http/1.1);
- a namespace PeerAuthentication STRICT: one chain (tls); a plaintext request is refused (the
  connection is closed, listener.<addr>.no_filter_chain_match counts it), a TLS client without a
  certificate gets no answer, the mTLS client is served;
- DISABLE (workload policy over the namespace's STRICT): only the plaintext chain, no listener
  filter; plaintext is served.

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
import json
import os
import socket
import ssl
import subprocess

import pytest

from meshfix import mesh, wait_for  # noqa: F401
from test_pilot_ca import create_certificate, make_csr, token

assert mesh

SERVICE = """apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
"""

PA = """apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: %s, namespace: shop}
spec:
%s
"""

LISTENERS_T = "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
ISTIO_CLIENT_ALPN = ["istio-http/1.1", "istio", "http/1.1"]


def inbound_listener(pod):
    """The sidecar's inbound listener for port 8080 from its /config_dump (None if absent)."""
    status, _, body = pod.admin("/config_dump")
    assert status == 200, body
    for c in json.loads(body)["configs"]:
        if c.get("@type") != LISTENERS_T:
            continue
        for dl in c.get("dynamic_listeners", []):
            lst = (dl.get("active_state") or {}).get("listener") or {}
            if lst.get("name") == "%s_8080" % pod.ip:
                return lst
    return None


def chain_matches(pod):
    lst = inbound_listener(pod)
    return None if lst is None else [fc.get("filter_chain_match") for fc in lst["filter_chains"]]


def get_echo(sock):
    """Sends GET /echo on sock and reads the answer until the server closes."""
    sock.sendall(b"GET /echo HTTP/1.1\r\nHost: web.shop\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


def plaintext(pod):
    """The status of a plaintext GET to the inbound listener, or the error that ended it."""
    try:
        with socket.create_connection((pod.ip, 8080), timeout=5) as s:
            data = get_echo(s)
    except OSError as e:
        return type(e).__name__
    if not data:
        return "closed"
    return int(data.split(b" ", 2)[1])


def tls_get(pod, root, cert=None, key=None):
    """A GET over TLS offering Istio's client ALPNs: (status or error, negotiated ALPN)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False  # SPIFFE identities carry no DNS name
    ctx.load_verify_locations(cafile=str(root))
    if cert:
        ctx.load_cert_chain(str(cert), str(key))
    ctx.set_alpn_protocols(ISTIO_CLIENT_ALPN)
    try:
        with socket.create_connection((pod.ip, 8080), timeout=5) as raw:
            with ctx.wrap_socket(raw) as t:
                data = get_echo(t)
                alpn = t.selected_alpn_protocol()
    except (OSError, ssl.SSLError) as e:
        return type(e).__name__, None
    return (int(data.split(b" ", 2)[1]) if data else "closed"), alpn


def s_client(pod, root, *args):
    """`openssl s_client` sending a GET with Istio's client ALPNs: its output (stdout+stderr)."""
    r = subprocess.run(["openssl", "s_client", "-connect", "%s:8080" % pod.ip, "-alpn",
                        ",".join(ISTIO_CLIENT_ALPN), "-CAfile", str(root), "-ign_eof", *args],
                       input=b"GET /echo HTTP/1.1\r\nHost: web.shop\r\nConnection: close\r\n\r\n",
                       capture_output=True, timeout=30)
    return r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")


@pytest.fixture
def setup(mesh, tmp_path):  # noqa: F811
    ca_dir = tmp_path / "ca"
    mesh.write_config("web.yaml", SERVICE)
    mesh.start_pilot(default_ns="shop", extra=["--ca-dir", str(ca_dir)])
    pilot = os.environ.get("WEFT_PILOT", "build/weft-pilot")
    tok = tmp_path / "web.token"
    tok.write_text(token(pilot, ca_dir, "shop", "web") + "\n")
    pod = mesh.add_pod("web-1", "shop", {"app": "web"}, app_port=8080,
                       proxy_args=["--token-path", str(tok)],
                       env={"CA_ADDR": "127.0.0.1:%d" % mesh.grpc_port})
    mesh.wait_ready(pod)
    # the test client: a certificate of pilot's CA for shop/client
    status, root = mesh.pilot_get("/debug/istio-ca-root-cert?namespace=shop")
    assert status == 200, root
    (tmp_path / "root.pem").write_text(root["data"]["root-cert.pem"])
    chain = create_certificate(mesh.grpc_port, make_csr(tmp_path, "ecdsa"),
                               token(pilot, ca_dir, "shop", "client"), ttl=600)
    (tmp_path / "client.crt").write_text("".join(chain[:-1]))
    return pod, {"root": tmp_path / "root.pem", "cert": tmp_path / "client.crt",
                 "key": tmp_path / "ecdsa.key"}


def test_permissive_strict_disable(mesh, setup):  # noqa: F811
    pod, creds = setup
    # ---- default: PERMISSIVE ----
    wait_for(lambda: chain_matches(pod), what="the inbound listener")
    matches = chain_matches(pod)
    assert matches == [{"transport_protocol": "tls", "application_protocols": [
        "istio", "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1", "istio-h2"]},
        {"transport_protocol": "raw_buffer"}], matches
    lst = inbound_listener(pod)
    assert [f["name"] for f in lst["listener_filters"]] == ["envoy.filters.listener.tls_inspector"]
    mesh.wait_synced()  # ACKed: no NACK of the TLS chain
    assert plaintext(pod) == 200
    # the sidecar's certificate arrives over SDS; then mTLS works on the same port
    wait_for(lambda: tls_get(pod, creds["root"], creds["cert"], creds["key"])[0] == 200,
             what="mTLS served under PERMISSIVE")
    assert tls_get(pod, creds["root"], creds["cert"], creds["key"]) == (200, "http/1.1")

    # ---- namespace STRICT ----
    mesh.write_config("pa.yaml", PA % ("default", "  mtls: {mode: STRICT}"))
    wait_for(lambda: chain_matches(pod) == [{"transport_protocol": "tls"}],
             what="the STRICT chain")
    mesh.wait_synced()
    before = pod.stats().get("listener.%s_8080.no_filter_chain_match" % pod.ip, 0)
    assert plaintext(pod) in ("closed", "ConnectionResetError")
    wait_for(lambda: pod.stats().get("listener.%s_8080.no_filter_chain_match" % pod.ip, 0)
             == before + 1, what="no_filter_chain_match counted")
    status, _ = tls_get(pod, creds["root"])  # no client certificate
    assert status != 200, status
    out = s_client(pod, creds["root"])  # the server refuses the handshake: an alert, no answer
    assert "HTTP/1.1 200" not in out and "alert certificate required" in out, out
    out = s_client(pod, creds["root"], "-cert", str(creds["cert"]), "-key", str(creds["key"]))
    assert "HTTP/1.1 200" in out and "ALPN protocol: http/1.1" in out, out
    # the app learns its caller: Istio's inbound APPEND_FORWARD with subject, uri and dns
    assert "x-forwarded-client-cert" in out, out
    assert "By=spiffe://cluster.local/ns/shop/sa/web;Hash=" in out, out
    assert "URI=spiffe://cluster.local/ns/shop/sa/client" in out, out
    assert tls_get(pod, creds["root"], creds["cert"], creds["key"]) == (200, "http/1.1")

    # ---- a workload policy DISABLE over the namespace's STRICT ----
    mesh.write_config("pa-web.yaml", PA % ("web", "  selector: {matchLabels: {app: web}}\n"
                                                  "  mtls: {mode: DISABLE}"))
    wait_for(lambda: chain_matches(pod) == [None], what="the plaintext-only chain")
    mesh.wait_synced()
    assert "listener_filters" not in inbound_listener(pod)
    assert plaintext(pod) == 200
    status, _ = tls_get(pod, creds["root"], creds["cert"], creds["key"])
    assert status != 200, status
