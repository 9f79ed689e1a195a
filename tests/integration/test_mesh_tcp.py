"""TCP through the local mesh (issue 19 parts 3 and 5; reference protocols.md §4, security.md
§4, §6.3): a line-based TCP server (Python's socketserver, nobody on the project wrote its
protocol handling) behind a `tcp-` Service port, reached from another pod's application through
its sidecar's outbound TCP listener (weft-pilot's pilot/tcp.h listeners, weft-proxy's tcp_proxy),
with auto mTLS between the sidecars: the server's sidecar logs the client's SPIFFE ID; a STRICT
PeerAuthentication refuses plaintext at the server sidecar while the mesh client still gets
through; a DENY AuthorizationPolicy on the port closes the client's connection and the server's
sidecar logs rbac_access_denied_matched_policy[...] as the connection termination details;
a Gateway TCP server with a tcp route; TLS passthrough at the ingress gateway by SNI (Gateway
tls.mode PASSTHROUGH and a VirtualService tls route) to a TLS line server whose certificate the
client checks end to end; Istio's TCP metadata exchange between the sidecars fills the peer
workload labels of the istio_tcp_* metrics on both sides.

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
import json
import os
import socket
import socketserver
import ssl
import subprocess
import threading

import pytest

from meshfix import GATEWAY_SERVICE, mesh, wait_for  # noqa: F401

assert mesh

DB_SVC = """apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  selector: {app: db}
  ports: [{name: tcp-db, port: 5432, targetPort: 15432}]
"""

STRICT = """apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: shop}
spec: {mtls: {mode: STRICT}}
"""

DENY_CLIENT = """apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-client, namespace: shop}
spec:
  selector: {matchLabels: {app: db}}
  action: DENY
  rules:
  - from: [{source: {principals: ["cluster.local/ns/shop/sa/client"]}}]
    to: [{operation: {ports: ["15432"]}}]
"""

# Istio's JSON access log with the fields this test reads (MeshConfig accessLogFormat;
# UPSTREAM_CLUSTER_RAW as Istio's default format: UPSTREAM_CLUSTER prints the alt_stat_name).
LOG_MESH = """\
accessLogFile: /dev/stdout
accessLogEncoding: JSON
accessLogFormat: '{"upstream_cluster":"%UPSTREAM_CLUSTER_RAW%","peer":"%DOWNSTREAM_PEER_URI_SAN%",\
"details":"%CONNECTION_TERMINATION_DETAILS%","response_flags":"%RESPONSE_FLAGS%",\
"bytes_received":"%BYTES_RECEIVED%","bytes_sent":"%BYTES_SENT%"}'
"""

DB_CLUSTER = "outbound|5432||db.shop.svc.cluster.local"
CLIENT_ID = "spiffe://cluster.local/ns/shop/sa/client"


class LineHandler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(b"echo: " + line)


class LineServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def talk(addr, port, line=b"hello\n", timeout=5):
    """The server's answer to one line over a new connection: b"" when the connection is
    closed without an answer (or reset)."""
    try:
        with socket.create_connection((addr, port), timeout=timeout) as s:
            s.sendall(line)
            out = b""
            while not out.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                out += chunk
            return out
    except (ConnectionResetError, BrokenPipeError):
        return b""


@pytest.fixture
def line_server():
    servers = []

    def start(addr, port):
        srv = LineServer((addr, port), LineHandler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv
    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def start(mesh, line_server):  # noqa: F811
    mesh.write_config("db-svc.yaml", DB_SVC)
    mesh.start_pilot(default_ns="shop", mesh_config=LOG_MESH)
    db = mesh.add_pod("db-1", "shop", {"app": "db"}, sa="db")
    client = mesh.add_pod("client-1", "shop", {"app": "client"}, sa="client")
    line_server(db.localhost, 15432)
    for p in (db, client):
        mesh.wait_ready(p)
    mesh.wait_synced()
    wait_for(lambda: talk(client.localhost, 5432) == b"echo: hello\n",
             what="client -> db over the sidecars")
    return db, client


def listener(pod, name):
    status, _, body = pod.admin("/config_dump")
    assert status == 200
    for c in json.loads(body)["configs"]:
        for dl in c.get("dynamic_listeners", []):
            lst = (dl.get("active_state") or {}).get("listener") or {}
            if lst.get("name") == name:
                return lst
    return None


def tcp_series(pod, family):
    """The Prometheus lines of one metric family on the pod's sidecar."""
    status, _, body = pod.admin("/stats/prometheus")
    assert status == 200
    text = body.decode() if isinstance(body, bytes) else body
    return [ln for ln in text.splitlines() if ln.startswith(family + "{")]


def test_tcp_through_sidecars_with_mtls(mesh, line_server):  # noqa: F811
    """The client's sidecar takes the connection on its outbound TCP listener and sends it
    over mTLS to db's sidecar, which logs the client's SPIFFE ID on inbound|15432||."""
    db, client = start(mesh, line_server)
    out = client.wait_log(lambda e: e.get("upstream_cluster") == DB_CLUSTER)
    assert out["response_flags"] == "-", out
    inbound = db.wait_log(lambda e: e.get("upstream_cluster") == "inbound|15432||")
    assert inbound["peer"] == CLIENT_ID, inbound
    assert (inbound["bytes_received"], inbound["bytes_sent"]) == (6, 12), inbound
    # the shapes pilot sent, as the proxies hold them
    ol = listener(client, "0.0.0.0_5432")
    assert ol and ol["traffic_direction"] == "OUTBOUND", ol
    names = [f["name"] for f in ol["filter_chains"][0]["filters"]]
    assert names[-1] == "envoy.filters.network.tcp_proxy", names
    il = listener(db, "%s_15432" % db.ip)
    assert il and [fc["filter_chain_match"]["transport_protocol"]
                   for fc in il["filter_chains"]] == ["tls", "tls", "raw_buffer"], il
    # istio.stats on the inbound chain: the destination's TCP metrics name the client
    opened = wait_for(lambda: tcp_series(db, "istio_tcp_connections_opened_total"),
                      what="istio_tcp_connections_opened_total on db")
    assert any('reporter="destination"' in ln and 'source_principal="%s"' % CLIENT_ID in ln
               and 'connection_security_policy="mutual_tls"' in ln
               and 'destination_service="db.shop.svc.cluster.local"' in ln
               for ln in opened), opened
    # PERMISSIVE: plaintext straight to the server's sidecar is served too
    assert talk(db.ip, 15432) == b"echo: hello\n"


def test_tcp_peer_labels_via_metadata_exchange(mesh, line_server):  # noqa: F811
    """Istio's TCP metadata exchange (ALPN istio-peer-exchange between the sidecars: pilot's
    TCPListenerMx on the inbound chains, TCPClusterMx on the outbound cluster): db's sidecar
    names the client pod's workload in its istio_tcp_* labels and the client's sidecar names
    db's; the line server still reads only the client's line."""
    db, client = start(mesh, line_server)
    assert talk(client.localhost, 5432, b"peer labels\n") == b"echo: peer labels\n"
    il = listener(db, "%s_15432" % db.ip)
    assert il["filter_chains"][0]["filters"][0]["name"] == "istio.metadata_exchange", il

    def has(pod, family, *want):
        rows = tcp_series(pod, family)
        return [ln for ln in rows if all(w in ln for w in want)]
    # the local mesh's sidecars send the pod's LABELS (app) but no WORKLOAD_NAME or canonical
    # labels in their node metadata, so source_app / destination_app are what the exchange
    # carries here (without it they are "unknown")
    got = wait_for(lambda: has(db, "istio_tcp_connections_closed_total",
                               'reporter="destination"', 'source_app="client"'),
                   what="db's TCP series naming the client's app")
    assert 'source_principal="%s"' % CLIENT_ID in got[0], got
    wait_for(lambda: has(client, "istio_tcp_connections_closed_total",
                         'reporter="source"', 'destination_app="db"'),
             what="client's TCP series naming db's app")


def test_strict_refuses_plaintext(mesh, line_server):  # noqa: F811
    """STRICT leaves db's sidecar one TLS chain: a plaintext client gets no answer (the
    listener log names NR filter_chain_not_found), the mesh client still gets through."""
    db, client = start(mesh, line_server)
    mesh.write_config("strict.yaml", STRICT)
    wait_for(lambda: (listener(db, "%s_15432" % db.ip) or {}).get("filter_chains", [None, None])
             and len(listener(db, "%s_15432" % db.ip)["filter_chains"]) == 1,
             what="db's STRICT chain")
    mesh.wait_synced()
    wait_for(lambda: talk(db.ip, 15432) == b"", what="plaintext refused")
    db.wait_log(lambda e: e.get("response_flags") == "NR")
    wait_for(lambda: talk(client.localhost, 5432) == b"echo: hello\n", what="mTLS client served")


def test_deny_policy_closes_the_connection(mesh, line_server):  # noqa: F811
    """A DENY AuthorizationPolicy for the client's principal on port 15432: db's sidecar closes
    the connection (the client reads nothing) and logs the matched policy."""
    db, client = start(mesh, line_server)
    mesh.write_config("deny.yaml", DENY_CLIENT)
    wait_for(lambda: any(f["name"] == "envoy.filters.network.rbac"
                         for fc in (listener(db, "%s_15432" % db.ip) or {}).get(
                             "filter_chains", [])
                         for f in fc["filters"]), what="the network RBAC filter on db")
    mesh.wait_synced()
    wait_for(lambda: talk(client.localhost, 5432) == b"", what="the connection denied")
    want = "rbac_access_denied_matched_policy[ns[shop]-policy[deny-client]-rule[0]]"
    denied = db.wait_log(lambda e: e.get("details") == want)
    assert denied["peer"] == CLIENT_ID, denied
    # plaintext from outside the mesh has no principal: the DENY rule does not match it
    assert talk(db.ip, 15432) == b"echo: hello\n"


# ---------- TLS passthrough at the gateway ----------

PASS_CONFIG = GATEWAY_SERVICE + """  - {name: tls, port: 443, targetPort: 8443}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: pass, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: tls, protocol: TLS}
    hosts: [nginx.example.com]
    tls: {mode: PASSTHROUGH}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: nginx, namespace: shop}
spec:
  hosts: [nginx.example.com]
  gateways: [istio-system/pass]
  tls:
  - match: [{sniHosts: [nginx.example.com], port: 443}]
    route: [{destination: {host: nginx, port: {number: 443}}}]
---
apiVersion: v1
kind: Service
metadata: {name: nginx, namespace: shop}
spec:
  selector: {app: nginx}
  ports: [{name: https, port: 443, targetPort: 18443}]
"""


class TLSLineServer(LineServer):
    def __init__(self, addr, ctx):
        self.ctx = ctx
        super().__init__(addr, LineHandler)

    def get_request(self):
        sock, addr = super().get_request()
        return self.ctx.wrap_socket(sock, server_side=True), addr


def make_cert(d):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", "nginx.key", "-out",
                    "nginx.crt", "-days", "2", "-subj", "/CN=nginx.example.com", "-addext",
                    "subjectAltName=DNS:nginx.example.com"],
                   cwd=d, check=True, capture_output=True, timeout=30)
    return os.path.join(d, "nginx.crt"), os.path.join(d, "nginx.key")


def tls_talk(addr, port, sni, cafile, line=b"hello\n"):
    """The TLS server's answer to one line (its certificate verified for sni); b"" when the
    connection is closed before the handshake or the answer."""
    ctx = ssl.create_default_context(cafile=cafile)
    try:
        with socket.create_connection((addr, port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=sni) as s:
                s.sendall(line)
                out = b""
                while not out.endswith(b"\n"):
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    out += chunk
                return out
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return b""


def test_gateway_tls_passthrough_by_sni(mesh, tmp_path):  # noqa: F811
    """The ingress gateway picks the chain by SNI without terminating TLS: the client's own
    handshake reaches nginx's TLS server (through nginx's sidecar, inside auto mTLS) and the
    server certificate verifies for nginx.example.com; another SNI matches no chain."""
    crt, key = make_cert(str(tmp_path))
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(crt, key)
    mesh.write_config("pass.yaml", PASS_CONFIG)
    mesh.start_pilot(default_ns="shop", mesh_config=LOG_MESH)
    gw = mesh.add_pod("istio-ingressgateway-1", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router")
    nginx = mesh.add_pod("nginx-1", "shop", {"app": "nginx"}, sa="nginx")
    srv = TLSLineServer((nginx.localhost, 18443), sctx)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        for p in (gw, nginx):
            mesh.wait_ready(p)
        mesh.wait_synced()
        wait_for(lambda: tls_talk(gw.ip, 8443, "nginx.example.com", crt) == b"echo: hello\n",
                 what="TLS through the gateway by SNI")
        e = gw.wait_log(lambda e: e.get("upstream_cluster") ==
                        "outbound|443||nginx.shop.svc.cluster.local")
        assert e["response_flags"] == "-", e
        # nginx's sidecar got it over mTLS from the gateway's identity
        inbound = nginx.wait_log(lambda e: e.get("upstream_cluster") == "inbound|18443||")
        assert inbound["peer"] == "spiffe://cluster.local/ns/istio-system/sa/default", inbound
        assert tls_talk(gw.ip, 8443, "other.example.com", crt) == b""
    finally:
        srv.shutdown()
        srv.server_close()


TCP_GATEWAY = GATEWAY_SERVICE + """  - {name: tcp, port: 31400}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: tcp, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 31400, name: tcp, protocol: TCP}
    hosts: ['*']
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: db-gw, namespace: shop}
spec:
  hosts: ['*']
  gateways: [istio-system/tcp]
  tcp:
  - match: [{port: 31400}]
    route: [{destination: {host: db.shop.svc.cluster.local, port: {number: 5432}}}]
"""


def test_gateway_tcp_server(mesh, line_server):  # noqa: F811
    """A Gateway TCP server on 31400 and a VirtualService tcp route bound to it: a client
    outside the mesh reaches db's line server through the gateway and db's sidecar (mTLS)."""
    mesh.write_config("db-svc.yaml", DB_SVC)
    mesh.write_config("tcp-gw.yaml", TCP_GATEWAY)
    mesh.start_pilot(default_ns="shop", mesh_config=LOG_MESH)
    gw = mesh.add_pod("istio-ingressgateway-1", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router")
    db = mesh.add_pod("db-1", "shop", {"app": "db"}, sa="db")
    line_server(db.localhost, 15432)
    for p in (gw, db):
        mesh.wait_ready(p)
    mesh.wait_synced()
    wait_for(lambda: talk(gw.ip, 31400) == b"echo: hello\n", what="TCP through the gateway")
    gw.wait_log(lambda e: e.get("upstream_cluster") == DB_CLUSTER)
    inbound = db.wait_log(lambda e: e.get("upstream_cluster") == "inbound|15432||")
    assert inbound["peer"] == "spiffe://cluster.local/ns/istio-system/sa/default", inbound
