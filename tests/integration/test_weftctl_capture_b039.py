"""Operator report B039 (../shared/cases/operator-reports.md) diagnosed in three commands on a
real captured sidecar (issue 20 item 5): weft-pilot and weft-proxy in a pod network namespace
with Istio's iptables rules (`weft-proxy istio-iptables`), the proxy as uid 1337 with node
metadata INTERCEPTION_MODE=REDIRECT and no WEFT_LOCALHOST, so pilot sends Istio's capture
layout (virtualOutbound, virtualInbound, unbound 0.0.0.0_<port> listeners). The partner
servers run in a second namespace ("ext", 10.1.2.50): a TLS server for
api.partner.example.internal on 443 and an HTTP server for plain.partner.example.internal on 80.
The application's clients (root in the pod namespace) know nothing of the proxy.

REGISTRY_ONLY: HTTPS is dropped into BlackHoleCluster, HTTP gets 502 from block_all; then
  (1) `weftctl log explain` on the proxy's real access log names the original destination,
      BlackHoleCluster, outboundTrafficPolicy REGISTRY_ONLY and the ServiceEntry to add;
  (2) `weftctl proxy-config listener <pod> --port 443` shows the chain that sent it to
      BlackHoleCluster, and after a TLS ServiceEntry the SNI chain;
  (3) `weftctl proxy-config cluster <pod> --fqdn api.partner.example.internal` shows the new
      cluster, through which HTTPS then succeeds.
`weftctl describe pod` says capture is on, which ports are excluded and the policy.
ALLOW_ANY: both go through PassthroughCluster (HTTP via allow_any), and log explain says so.
Inbound to a port no Service declares: InboundPassthroughCluster.

Needs root, iproute2, Debian's iptables, util-linux's setpriv and openssl; skipped otherwise.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import weftctl_path
from meshfix import PILOT
from procs import start_process
from proxyfix import proxy_path
from test_proxy_original_dst import INJECTOR_ARGS, env, run  # noqa: F401 (env: fixture)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: iptables and network namespaces"),
    pytest.mark.skipif(
        not (shutil.which("iptables-restore") and shutil.which("ip")
             and shutil.which("setpriv") and shutil.which("openssl")),
        reason="needs Debian's iptables package, iproute2, util-linux's setpriv and openssl"),
]

POD, NS = "frontend-1", "shop"
API = "api.partner.example.internal"
PLAIN = "plain.partner.example.internal"
SE_CLUSTER = "outbound|443||" + API
SERVICE_ENTRY = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partner-api, namespace: shop}
spec:
  hosts: [api.partner.example.internal]
  location: MESH_EXTERNAL
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: STATIC
  endpoints: [{address: 10.1.2.50}]
"""

# A mesh Service with an HTTP port 80, as every mesh has one: the port's listener routes
# unknown hosts to Istio's allow_any / block_all virtual host.
CATALOG = """\
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: shop}
spec:
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 3000}]
"""

# A TLS server answering any request with "partner-tls"; prints "ready".
TLS_SERVER = r"""
import socket, ssl, sys, threading
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 443)); s.listen(16)
def serve(c):
    try:
        t = ctx.wrap_socket(c, server_side=True)
        t.recv(4096)
        t.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\npartner-tls")
        t.close()
    except Exception:
        c.close()
print("ready", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

TLS_CLIENT = """
import socket, ssl
ctx = ssl.create_default_context(cafile={ca!r})
try:
    s = socket.create_connection(("10.1.2.50", 443), timeout=10)
    t = ctx.wrap_socket(s, server_hostname={host!r})
    t.sendall(b"GET / HTTP/1.1\\r\\nHost: {host}\\r\\nConnection: close\\r\\n\\r\\n")
    data = b""
    while True:
        d = t.recv(4096)
        if not d: break
        data += d
    print(json.dumps("ok " + data.decode().split("\\r\\n\\r\\n", 1)[-1]))
except (OSError, ssl.SSLError) as e:
    print(json.dumps("error " + type(e).__name__))
"""

HTTP_GET = """
s = socket.create_connection(("10.1.2.50", 80), timeout=10)
s.sendall(b"GET / HTTP/1.1\\r\\nHost: {host}\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    d = s.recv(65536)
    if not d: break
    data += d
print(json.dumps(int(data.split()[1]) if data else 0))
"""


def make_cert(d):
    key, crt = os.path.join(d, "partner.key"), os.path.join(d, "partner.pem")
    r = run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", key, "-out", crt, "-subj", "/CN=" + API,
             "-addext", "subjectAltName=DNS:" + API])
    assert r.returncode == 0, r.stderr
    os.chmod(key, 0o644)
    return crt, key


def captured_bootstrap(grpc_port):
    def build(mode, logpath):
        meta = {"NAME": POD, "NAMESPACE": NS, "LABELS": {"app": "frontend"},
                "INSTANCE_IPS": "10.1.2.1", "PROXY_TYPE": "sidecar",
                "WEFT_ADMIN": "127.0.0.1:15000", "ISTIO_VERSION": "weft",
                "INTERCEPTION_MODE": "REDIRECT"}
        xds = {"name": "xds-grpc", "type": "STATIC", "connect_timeout": "1s",
               "load_assignment": {"cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [
                   {"endpoint": {"address": {"socket_address": {
                       "address": "127.0.0.1", "port_value": grpc_port}}}}]}]}}
        ads = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
        return {"node": {"id": "%s.%s" % (POD, NS), "cluster": "frontend." + NS,
                         "metadata": meta},
                "admin": {"address": {"socket_address": {"address": "127.0.0.1",
                                                         "port_value": 15000}}},
                "dynamic_resources": {
                    "ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                                   "set_node_on_first_message_only": True,
                                   "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
                    "cds_config": ads, "lds_config": ads},
                "static_resources": {"clusters": [xds]}}
    return build


class Captured:
    """The pod namespace with pilot, the captured frontend sidecar and the partner servers."""

    def __init__(self, env, mode):
        self.env = env
        d = env.dir
        self.cfg = os.path.join(d, "config")
        os.makedirs(self.cfg)
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": POD, "namespace": NS, "labels": {"app": "frontend"},
                            "annotations": {
                                "traffic.sidecar.istio.io/excludeOutboundPorts": "3306"}},
               "spec": {"containers": [{"name": "app", "image": "frontend"}]},
               "status": {"phase": "Running", "podIP": "10.1.2.1"}}
        with open(os.path.join(self.cfg, "pod.json"), "w") as f:
            json.dump(pod, f)
        with open(os.path.join(self.cfg, "catalog.yaml"), "w") as f:
            f.write(CATALOG)  # an HTTP Service on port 80: pilot builds 0.0.0.0_80
        env.log = os.path.join(d, "access.log")
        mesh = os.path.join(d, "mesh.yaml")
        with open(mesh, "w") as f:
            f.write("accessLogFile: %s\noutboundTrafficPolicy: {mode: %s}\n" % (env.log, mode))
        self.pilot, addrs = start_process(
            ["ip", "netns", "exec", env.pod, PILOT, "--grpcAddr", "127.0.0.1:0",
             "--monitoringAddr", "127.0.0.1:0", "--config-dir", self.cfg,
             "--default-namespace", NS, "--debounce-after-ms", "50",
             "--ca-dir", os.path.join(d, "ca"), "--meshConfig", mesh], count=2, timeout=20)
        env.procs.append(self.pilot)
        self.grpc, self.mon = addrs[0][1], addrs[1][1]
        self.ca, key = make_cert(d)
        env.spawn([sys.executable or "/usr/bin/python3", "-c", TLS_SERVER, self.ca, key],
                  env.ext, ready="ready")
        env.servers(env.ext, ("http", "partner", "80"))
        env.servers(env.pod, ("tcp", "app9999", "9999"))
        r = env.ns(env.pod, [proxy_path(), "istio-iptables"] + INJECTOR_ARGS)
        assert r.returncode == 0, r.stderr
        env.start_proxy(mode, bootstrap=captured_bootstrap(self.grpc))
        self.wait(lambda: "15001" in self.weftctl("pc", "listener", POD, "-n", NS).stdout,
                  "virtualOutbound from pilot")

    def weftctl(self, *args, stdin=None):
        argv = [weftctl_path()] + list(args)
        if args[0] in ("pc", "proxy-config", "describe"):
            argv += ["--pilot", "127.0.0.1:%d" % self.mon]
        return subprocess.run(["ip", "netns", "exec", self.env.pod] + argv, input=stdin,
                              capture_output=True, text=True, timeout=60)

    def describe(self):
        p = self.weftctl("describe", "pod", POD, "-n", NS)
        assert p.returncode == 0 and "Sanitizer" not in p.stderr, p.stderr
        return p

    def ok(self, *args):
        p = self.weftctl(*args)
        assert p.returncode == 0, p.stderr
        return p

    def wait(self, pred, what, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pred():
                return
            assert self.env.proxy.poll() is None, open(self.env.err.name).read()
            time.sleep(0.2)
        pytest.fail("timed out waiting for %s; pilot's stderr:\n%s" % (
            what() if callable(what) else what, self.pilot.stderr_text()[-3000:]))

    def https(self):
        return json.loads(self.env.client(self.env.pod, TLS_CLIENT.format(ca=self.ca, host=API)))

    def http(self):
        return json.loads(self.env.client(self.env.pod, HTTP_GET.format(host=PLAIN)))

    def log_text(self, n):
        return "\n".join(self.env.log_lines(n)) + "\n"


def rows(out):
    return [line.split() for line in out.splitlines()[1:]]


def test_b039_registry_only_three_commands(env):
    c = Captured(env, "REGISTRY_ONLY")
    # HTTPS: closed before the handshake completes; HTTP: the proxy's own 502
    assert c.https().startswith("error "), "HTTPS got through under REGISTRY_ONLY"
    assert c.http() == 502
    log = c.log_text(2)

    # (1) log explain on the real lines
    p = subprocess.run([weftctl_path(), "log", "explain", env.log], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "upstream cluster: BlackHoleCluster" in out, out + log
    assert "BlackHoleCluster: the connection to 10.1.2.50:443" in out, out + log
    assert "outboundTrafficPolicy is REGISTRY_ONLY" in out, out
    assert "add a ServiceEntry for" in out, out
    assert "proxy-config listener <pod> --port 443" in out, out
    assert "REGISTRY_ONLY blocked an unknown host: the request for Host %s" % PLAIN in out, out
    assert "(original destination 10.1.2.50:80)" in out, out
    assert "block_all" in out, out
    js = json.loads(subprocess.run([weftctl_path(), "log", "explain", env.log, "-o", "json"],
                                   capture_output=True, text=True, timeout=30).stdout)
    caps = {f["capture"]: f for f in js["failures"]}
    assert caps["blackhole"]["original_destination"] == "10.1.2.50:443", js
    assert caps["blackhole"]["response_flags"] == "UH", js
    assert caps["registry_only_blocked"]["response_code"] == 502, js
    assert caps["registry_only_blocked"]["route_name"] == "block_all", js
    # the proxy read the refused connection's ClientHello: the SNI of the blocked host
    sni = caps["blackhole"]["requested_server_name"]
    assert sni == API and "(SNI %s)" % API in out, (out, log)

    # (2) pc listener --port 443: istioctl's table (no listener owns 443 yet) and weft's note
    p = c.ok("pc", "listener", POD, "-n", NS, "--port", "443")
    assert p.stdout.splitlines()[0].split() == ["ADDRESSES", "PORT", "MATCH", "DESTINATION"]
    assert rows(p.stdout) == [], p.stdout
    assert ("no listener owns port 443, so it stays in virtualOutbound: chain "
            "virtualOutbound-catchall-tcp (MATCH ALL) -> BlackHoleCluster: outboundTrafficPolicy "
            "REGISTRY_ONLY") in p.stderr, p.stderr
    # the whole table as istioctl prints a captured sidecar's listeners
    full = rows(c.ok("pc", "listener", POD, "-n", NS).stdout)
    assert ["0.0.0.0", "15001", "ALL", "Non-HTTP/Non-TCP"] in full, full
    assert ["0.0.0.0", "15001", "Addr:", "*:15001", "Non-HTTP/Non-TCP"] in full, full
    assert ["0.0.0.0", "15006", "Addr:", "*:15006", "Non-HTTP/Non-TCP"] in full, full
    assert any(r[:2] == ["0.0.0.0", "15006"] and r[-1] == "InboundPassthroughCluster"
               for r in full), full
    # (3) before the fix no cluster for the partner; BlackHole/Passthrough always listed
    names = [x["name"] for x in json.loads(c.ok("pc", "cluster", POD, "-n", NS, "-o",
                                                "json").stdout)]
    assert "BlackHoleCluster" in names and "PassthroughCluster" in names, names
    assert SE_CLUSTER not in names

    # describe pod: capture on, the excluded ports, the policy
    p = c.describe()
    assert "weft: capture: on (virtualOutbound 0.0.0.0:15001 with use_original_dst, " \
           "virtualInbound 0.0.0.0:15006; node metadata INTERCEPTION_MODE REDIRECT)" \
           in p.stderr, p.stdout + p.stderr
    assert "outbound ports excluded 3306 (excludeOutboundPorts" in p.stderr, p.stderr
    assert "excluded 15090,15021,15020 (the agent's" in p.stderr, p.stderr
    assert "weft: outboundTrafficPolicy: REGISTRY_ONLY" in p.stderr, p.stderr

    # the fix: a TLS ServiceEntry
    tmp = os.path.join(c.cfg, ".se.yaml.tmp")
    with open(tmp, "w") as f:
        f.write(SERVICE_ENTRY)
    os.replace(tmp, os.path.join(c.cfg, "se.yaml"))  # atomic: pilot never reads half of it
    c.wait(lambda: API in c.weftctl("pc", "cluster", POD, "-n", NS, "--fqdn", API).stdout,
           lambda: "the ServiceEntry's cluster; clusters:\n" + c.weftctl(
               "pc", "cluster", POD, "-n", NS).stdout)
    out = c.ok("pc", "cluster", POD, "-n", NS, "--fqdn", API).stdout
    assert [API, "443", "-", "outbound", "EDS"] in rows(out) or \
        any(r[:4] == [API, "443", "-", "outbound"] for r in rows(out)), out
    p = c.ok("pc", "listener", POD, "-n", NS, "--port", "443")
    assert ["0.0.0.0", "443", "SNI:", API, "Cluster:", SE_CLUSTER] in rows(p.stdout), p.stdout
    assert "hands it to the listener for its original destination: 0.0.0.0_443 " \
           "(0.0.0.0:443, bind_to_port false)" in p.stderr, p.stderr
    assert c.https() == "ok partner-tls"
    assert c.http() == 502  # plain.partner... is still unknown
    lines = env.log_lines(4)
    assert any(SE_CLUSTER in line for line in lines[2:]), lines


def test_b039_allow_any_passthrough_and_inbound(env):
    c = Captured(env, "ALLOW_ANY")
    assert c.https() == "ok partner-tls"
    assert c.http() == 200
    # inbound to a port no Service declares (from the ext namespace: captured to 15006). The
    # client speaks first: virtualInbound's passthrough chains sniff the protocol (Istio's
    # http_inspector), so a server-first protocol on an undeclared port waits, as in Istio
    assert env.client(env.ext, "s = socket.create_connection(('10.1.2.1', 9999), timeout=10)\n"
                               "s.sendall(b'hello\\n')\n"
                               "print(json.dumps(s.recv(100).decode()))") == '"app9999 127.0.0.6\\n"'
    env.log_lines(3)
    p = subprocess.run([weftctl_path(), "log", "explain", env.log], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "No failed requests" in out, out
    assert "PassthroughCluster: outboundTrafficPolicy ALLOW_ANY let this connection through to "\
           "its original destination 10.1.2.50:443" in out, out
    assert "ALLOW_ANY let this request through to its original destination 10.1.2.50:80, Host " \
           "%s matching no virtual host but Istio's `allow_any` route" % PLAIN in out, out
    assert "InboundPassthroughCluster: inbound traffic to port 9999 of this pod (10.1.2.1:9999)" \
        in out, out
    js = json.loads(subprocess.run([weftctl_path(), "log", "explain", env.log, "-o", "json"],
                                   capture_output=True, text=True, timeout=30).stdout)
    assert sorted(x["capture"] for x in js["passthrough"]) == \
        ["inbound_passthrough", "passthrough", "passthrough"], js
    p = c.ok("pc", "listener", POD, "-n", NS, "--port", "443")
    assert "virtualOutbound-catchall-tcp (MATCH ALL) -> PassthroughCluster: " \
           "outboundTrafficPolicy ALLOW_ANY" in p.stderr, p.stderr
    full = rows(c.ok("pc", "listener", POD, "-n", NS).stdout)
    assert ["0.0.0.0", "15001", "ALL", "PassthroughCluster"] in full, full
    p = c.describe()
    assert "weft: outboundTrafficPolicy: ALLOW_ANY (virtualOutbound's catch-all chain goes to " \
           "PassthroughCluster)" in p.stderr, p.stderr
