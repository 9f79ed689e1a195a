"""Protocol sniffing through the local mesh (issue 19 part 3; reference protocols.md §1.2): a
Service port without a name carries both HTTP and a line-based TCP protocol to one server (a
Python socketserver that answers HTTP requests and echoes other lines). The client's sidecar
holds Istio's sniffing listener for the port (http_inspector, the HTTP connection manager under
{raw_buffer, [http/1.1, h2c]}, the service's TCP proxy as default chain): an HTTP request is
routed (access log: route configuration "7000", HTTP/1.1, cluster outbound|7000||db) and a line
client is proxied as TCP to the same cluster; the server's sidecar serves plaintext clients on
its sniffed inbound listener by the same detection (HTTP through its connection manager, lines
through its TCP proxy). The cluster copies the downstream protocol (use_downstream_protocol_
config).

The local mesh binds pod loopback addresses: run inside `unshare -n` (common.md).
"""
import json
import socket
import socketserver
import threading

import pytest

from meshfix import http_request, mesh, wait_for  # noqa: F401

assert mesh

DB_SVC = """apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  selector: {app: db}
  ports: [{port: 7000, targetPort: 17000}]
"""

LOG_MESH = """\
accessLogFile: /dev/stdout
accessLogEncoding: JSON
accessLogFormat: '{"upstream_cluster":"%UPSTREAM_CLUSTER_RAW%","route":"%ROUTE_NAME%",\
"protocol":"%PROTOCOL%","code":"%RESPONSE_CODE%","bytes_received":"%BYTES_RECEIVED%"}'
"""

DB_CLUSTER = "outbound|7000||db.shop.svc.cluster.local"
DB_HOST = "db.shop.svc.cluster.local"


class BothHandler(socketserver.StreamRequestHandler):
    """HTTP/1.x requests get "200 ok"; any other line is echoed."""

    def handle(self):
        for line in self.rfile:
            parts = line.split()
            if len(parts) == 3 and parts[2].startswith(b"HTTP/1."):
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
                                 b"Connection: close\r\n\r\nok\n")
                return
            self.wfile.write(b"echo: " + line)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def talk(addr, port, line=b"hello\n", timeout=5):
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
    except (ConnectionResetError, BrokenPipeError, socket.timeout):
        return b""


def listener(pod, name):
    status, _, body = pod.admin("/config_dump")
    assert status == 200
    for c in json.loads(body)["configs"]:
        for dl in c.get("dynamic_listeners", []):
            lst = (dl.get("active_state") or {}).get("listener") or {}
            if lst.get("name") == name:
                return lst
    return None


@pytest.fixture
def sniffed(mesh):  # noqa: F811
    mesh.write_config("db-svc.yaml", DB_SVC)
    mesh.start_pilot(default_ns="shop", mesh_config=LOG_MESH)
    db = mesh.add_pod("db-1", "shop", {"app": "db"}, sa="db")
    client = mesh.add_pod("client-1", "shop", {"app": "client"}, sa="client")
    srv = Server((db.localhost, 17000), BothHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        for p in (db, client):
            mesh.wait_ready(p)
        mesh.wait_synced()
        wait_for(lambda: talk(client.localhost, 7000) == b"echo: hello\n",
                 what="a line from client to db over the sidecars")
        yield db, client
    finally:
        srv.shutdown()
        srv.server_close()


def test_unnamed_port_carries_http_and_tcp(sniffed):
    db, client = sniffed
    # the listener pilot sent, as the client's sidecar holds it
    ol = listener(client, "0.0.0.0_7000")
    assert [f["name"] for f in ol["listener_filters"]] == [
        "envoy.filters.listener.http_inspector"], ol
    assert ol["filter_chains"][0]["filter_chain_match"] == {
        "transport_protocol": "raw_buffer", "application_protocols": ["http/1.1", "h2c"]}, ol
    tcp = ol["default_filter_chain"]["filters"][-1]
    assert tcp["typed_config"]["cluster"] == DB_CLUSTER, ol
    # TCP: the line went to the TCP chain
    # (JSON logs print "-" as null)
    out = client.wait_log(lambda e: e.get("upstream_cluster") == DB_CLUSTER
                          and e.get("protocol") is None)
    assert out["route"] is None and out["bytes_received"] == 6, out
    # HTTP: the same port routes a request
    status, _, body = http_request(client.localhost, 7000, "/x", host=DB_HOST)
    assert (status, body) == (200, b"ok\n")
    out = client.wait_log(lambda e: e.get("upstream_cluster") == DB_CLUSTER
                          and e.get("protocol") == "HTTP/1.1")
    assert (out["code"], out["route"]) == (200, "default"), out  # Istio's route name
    st = client.stats()
    assert st["http_inspector.http11_found"] >= 1, st
    assert st["http_inspector.http_not_found"] >= 1, st


def test_inbound_sniffs_plaintext(sniffed):
    db, _ = sniffed
    il = listener(db, "%s_17000" % db.ip)
    assert [f["name"] for f in il["listener_filters"]] == [
        "envoy.filters.listener.tls_inspector", "envoy.filters.listener.http_inspector"], il
    assert len(il["filter_chains"]) == 5, il
    # a plaintext HTTP client: the inbound connection manager; a line: the inbound TCP proxy
    status, _, body = http_request(db.ip, 17000, "/y", host=DB_HOST)
    assert (status, body) == (200, b"ok\n")
    e = db.wait_log(lambda e: e.get("upstream_cluster") == "inbound|17000||"
                    and e.get("protocol") == "HTTP/1.1")
    assert e["code"] == 200, e
    assert talk(db.ip, 17000, b"plain\n") == b"echo: plain\n"
    db.wait_log(lambda e: e.get("upstream_cluster") == "inbound|17000||"
                and e.get("protocol") is None and e.get("bytes_received") == 6)
