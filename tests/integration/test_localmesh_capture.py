"""Transparent capture in the local mesh (`weftctl up --pod-network netns --capture`), issue 20's
acceptance: applications that know nothing of weft reach services by name through their
captured sidecars.

The mesh is examples/catalog with its DestinationRule fix, plus `webapp`: a Python
http.server app using plain urllib with no proxy settings (urllib_webapp.py), and a
ServiceEntry `api.partner.internal` (no addresses: its VIP comes from Istio's DNS
auto-allocation, ISTIO_META_DNS_AUTO_ALLOCATE in proxyMetadata). Servers outside the registry
run in the test's own network namespace on the host link's address 10.10.255.254.

Checked: the app calls http://catalog.istioinaction/items by name (the DNS proxy answers the
Service's clusterIP, iptables hands the connection to the sidecar, which routes it to a catalog
pod whose own capture hands it to the app); the gateway reaches the catalog through the
catalog's virtualInbound; ALLOW_ANY passes an unknown destination through PassthroughCluster
(HTTP port: route allow_any; other port: virtualOutbound's catch-all); a ServiceEntry host
resolves through the DNS proxy to its auto-allocated address; an excluded outbound port
(traffic.sidecar.istio.io/excludeOutboundPorts) bypasses the sidecar; REGISTRY_ONLY answers 502
from block_all for HTTP and drops other TCP into BlackHoleCluster, while the ServiceEntry host
and the excluded port still work; `down` leaves no namespace, link or rule.

Run as root inside a network namespace of your own, like the other local-mesh tests. Skipped,
with the reason, when not root or when `ip`, `nsenter` or `iptables` is missing.
"""
import http.server
import json
import os
import pathlib
import shutil
import socketserver
import tempfile
import threading
import time
import urllib.parse

import pytest

from test_localmesh_netns import (EXAMPLE, FIX, assert_clean, mesh_json, netns_list, sh, up)
from test_weftctl_up import (ROOT, kill_leftovers, need_fixed_ports, request, supervisor_log,
                             wait_for, weftctl)

HOST_IP = "10.10.255.254"  # the host's end of the host link (localmesh_netns.h)
WEBAPP = os.path.join(ROOT, "tests", "integration", "urllib_webapp.py")

WEBAPP_YAML = """\
apiVersion: v1
kind: Service
metadata: {name: webapp, namespace: istioinaction, labels: {app: webapp}}
spec:
  selector: {app: webapp}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: webapp, namespace: istioinaction}
spec:
  replicas: 1
  selector: {matchLabels: {app: webapp}}
  template:
    metadata:
      labels: {app: webapp}
      annotations:
        traffic.sidecar.istio.io/excludeOutboundPorts: "18083"
    spec:
      containers:
      - name: webapp
        image: test/urllib-webapp
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: istioinaction, labels: {app: echo}}
spec:
  selector: {app: echo}
  ports: [{name: grpc, port: 9090, targetPort: 9090}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo, namespace: istioinaction}
spec:
  replicas: 1
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers:
      - name: echo
        image: test/grpc-echo
        ports: [{containerPort: 9090}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: partner-api, namespace: istioinaction}
spec:
  hosts: [api.partner.internal]
  location: MESH_EXTERNAL
  ports: [{number: 18082, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: %s}]
""" % HOST_IP

MESH_YAML = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |-
    accessLogFile: /dev/stdout
    accessLogEncoding: JSON
    defaultConfig:
      proxyMetadata:
        ISTIO_META_DNS_AUTO_ALLOCATE: "true"
%s"""


def need_capture():
    if os.geteuid() != 0:
        pytest.skip("--capture creates network namespaces and iptables rules: needs root")
    for tool in ("ip", "nsenter", "iptables", "iptables-restore"):
        if not shutil.which(tool):
            pytest.skip("--capture needs `%s` (iproute2, util-linux, iptables)" % tool)
    need_fixed_ports()


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_server(port, name, hits):
    """An HTTP server outside the mesh on HOST_IP:port answering its name; hits[name] counts."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits[name] = hits.get(name, 0) + 1
            body = name.encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = _Server((HOST_IP, port), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def write_mesh(d, policy):
    extra = "    outboundTrafficPolicy: {mode: %s}\n" % policy if policy else ""
    (d / "mesh.yaml").write_text(MESH_YAML % extra)


NS_IP = "127.0.0.99"  # the host's nameserver as the test's resolv.conf names it
NS_ANSWER = "192.0.2.7"


def start_nameserver():
    """A nameserver on the host's NS_IP:53 answering every A question with NS_ANSWER (a name
    no mesh knows): what pods could not reach before the supervisor's DNS relay. None when
    port 53 there cannot be bound."""
    import socket
    import struct
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((NS_IP, 53))
    except OSError:
        return None
    asked = []

    def serve():
        while True:
            try:
                q, addr = sock.recvfrom(4096)
            except OSError:
                return
            if len(q) < 12:
                continue
            end = 12
            while end < len(q) and q[end]:
                end += 1 + q[end]
            question = q[12:end + 5]
            asked.append(addr)
            ans = (q[:2] + b"\x81\x80" + struct.pack(">HHHH", 1, 1, 0, 0) + question +
                   b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 30, 4) + socket.inet_aton(NS_ANSWER))
            sock.sendto(ans, addr)

    threading.Thread(target=serve, daemon=True).start()
    return sock, asked


@pytest.fixture(scope="module")
def mesh():
    need_capture()
    # the proxies run as uid 1337 and read their bootstrap and token from the state folder
    base = tempfile.mkdtemp(prefix="weft-capture-", dir="/tmp")
    os.chmod(base, 0o711)
    nameserver = start_nameserver()
    if nameserver:
        rc = os.path.join(base, "resolv.conf")
        with open(rc, "w") as f:
            f.write("nameserver %s\n" % NS_IP)
        os.chmod(rc, 0o644)
        os.environ["WEFT_DNS_RESOLV_CONF"] = rc
    d = pathlib.Path(base) / "mesh"
    shutil.copytree(EXAMPLE, d)
    shutil.copy(FIX, d)
    (d / "webapp.yaml").write_text(WEBAPP_YAML)
    write_mesh(d, None)
    with open(d / "weft-local.yaml", "a") as f:
        f.write('  test/urllib-webapp: {command: ["/usr/bin/python3", "%s"]}\n' % WEBAPP)
        f.write('  test/grpc-echo: {command: ["weft-app", "--grpc-port", "9090"]}\n')
    state = os.path.join(base, "state")
    servers = []
    try:
        p = up(d, state, "--capture")
        assert p.returncode == 0, "up failed:\n%s\n%s\n%s" % (p.stdout, p.stderr,
                                                              supervisor_log(state))
        m = mesh_json(state)
        hits = {}
        for port, name in ((80, "ext-80"), (18080, "ext-18080"), (18082, "partner"),
                           (18083, "excluded")):
            servers.append(start_server(port, name, hits))
        yield {"dir": d, "state": state, "mesh": m, "hits": hits, "nameserver": nameserver}
    finally:
        os.environ.pop("WEFT_DNS_RESOLV_CONF", None)
        if nameserver:
            nameserver[0].close()
        for s in servers:
            s.shutdown()
            s.server_close()
        try:
            net = mesh_json(state).get("podNetwork")
        except (OSError, ValueError):
            net = None
        dn = weftctl("down", "--state", state, timeout=60)
        kill_leftovers(state)
        if net:
            for n in netns_list():
                if n.startswith(net["prefix"]):
                    sh("ip", "netns", "del", n, check=False)
        shutil.rmtree(base, ignore_errors=True)
        if net:  # nothing of the mesh is left behind by `down`
            assert dn.returncode == 0, dn.stdout + dn.stderr
            assert_clean(net)
            assert "ISTIO" not in sh("iptables-save", "-t", "nat").stdout


def pod(m, prefix):
    return next(p for p in m["mesh"]["pods"] if p["name"].startswith(prefix + "-"))


def webapp_get(m, path, timeout=10):
    """GET path on the webapp from inside its pod, as the app's own client would be asked."""
    w = pod(m, "webapp")
    r = sh("ip", "netns", "exec", w["netns"], "curl", "-s", "-m", str(timeout), "-o", "-",
           "-w", "\n%{http_code}", "http://127.0.0.1:8080" + path, check=False)
    body, _, code = r.stdout.rpartition("\n")
    return int(code or 0), body


def fetch(m, url):
    return webapp_get(m, "/fetch?" + urllib.parse.quote(url, safe=""))


def log_lines(m, prefix):
    path = os.path.join(m["state"], "logs", pod(m, prefix)["name"] + ".proxy.log")
    out = []
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def wait_log(m, prefix, pred, what):
    return wait_for(lambda: next((e for e in log_lines(m, prefix) if pred(e)), None), 15, what)


def test_unmodified_app_calls_catalog_by_name(mesh):
    code, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(
        webapp_get(mesh, "/api/catalog")), 30, "the webapp reaching catalog.istioinaction")
    items = json.loads(body)
    assert items[0]["id"] == 1, body
    # through the webapp's sidecar: the outbound cluster of the Service, found by the
    # original destination (the Service's clusterIP) and the Host header
    e = wait_log(mesh, "webapp", lambda e: e.get("path") == "/items",
                 "the webapp sidecar's line for /items")
    assert e["upstream_cluster"] == "outbound|80||catalog.istioinaction.svc.cluster.local", e
    assert e["response_code"] == 200
    # ... and into a catalog pod through its own capture (virtualInbound, inbound cluster)
    cat = [p for p in mesh["mesh"]["pods"] if p["name"].startswith("catalog")]
    ips = {p["ip"] for p in cat}
    assert e["upstream_host"].rsplit(":", 1)[0] in ips, e
    assert e["upstream_host"].endswith(":3000"), e

    def inbound():
        for p in cat:
            path = os.path.join(mesh["state"], "logs", p["name"] + ".proxy.log")
            with open(path) as f:
                for line in f:
                    if '"inbound|3000||"' in line and '"/items"' in line:
                        return json.loads(line)
        return None

    e = wait_for(inbound, 15, "a catalog sidecar's inbound line for /items")
    assert e["response_code"] == 200
    # the short name of the same namespace, as Kubernetes' search path gives it
    code, body = fetch(mesh, "http://catalog/items/1")
    assert code == 200 and json.loads(body)["id"] == 1, (code, body)


GRPC_CALL = r"""
import sys
sys.path.insert(0, sys.argv[1])
import grpc
from grpcmsg import EchoRequest, EchoResponse
with grpc.insecure_channel("echo.istioinaction:9090") as ch:
    call = ch.unary_unary("/shop.Echo/Echo", request_serializer=EchoRequest.SerializeToString,
                          response_deserializer=EchoResponse.FromString)
    r = call(EchoRequest(message="hi"), timeout=10)
    stream = ch.unary_stream("/shop.Echo/EchoStream",
                             request_serializer=EchoRequest.SerializeToString,
                             response_deserializer=EchoResponse.FromString)
    n = len(list(stream(EchoRequest(message="s", count=3), timeout=10)))
print(r.message, n)
"""


def test_grpc_by_name_through_capture(mesh):
    """grpcio, unmodified, calls echo.istioinaction:9090 (a port named grpc): HTTP/2 from the
    client's sidecar, and from the server's sidecar to the app through its ORIGINAL_DST inbound
    cluster (a stream of a shared HTTP/2 connection to the pod's address)."""
    pytest.importorskip("grpc", reason="python3-grpcio (scripts/setup installs it)")
    w = pod(mesh, "webapp")
    here = os.path.dirname(os.path.abspath(__file__))

    def call():
        r = sh("ip", "netns", "exec", w["netns"], "/usr/bin/python3", "-c", GRPC_CALL, here,
               check=False)
        return r.stdout.split() if r.returncode == 0 else None

    assert wait_for(call, 30, "the gRPC call through capture") == ["hi", "3"]
    e = wait_log(mesh, "echo", lambda e: e.get("path") == "/shop.Echo/Echo" and
                 (e.get("upstream_cluster") or "").startswith("inbound|9090|"),
                 "the echo sidecar's inbound line")
    assert e["protocol"] == "HTTP/2" and e["response_code"] == 200, e
    assert e.get("grpc_status", "0") in ("0", 0, None, "OK"), e


def test_dns_proxy_answers_the_cluster_ip(mesh):
    w = pod(mesh, "webapp")
    # the app's resolver (port 53 of /etc/resolv.conf's nameserver) is captured to 15053
    r = sh("ip", "netns", "exec", w["netns"], "/usr/bin/python3", "-c",
           "import socket; print(socket.gethostbyname('catalog.istioinaction'))")
    ip = r.stdout.strip()
    assert ip.startswith("10.") and not ip.startswith("10.10."), ip  # 10.96.0.0/12
    # the same address pilot gives in the sidecar's listeners: a TCP Service port's listener
    # is named after the clusterIP (here the gateway Service's https port)
    ls = sh("ip", "netns", "exec", w["netns"], "curl", "-s", "-m", "5",
            "http://%s:15000/listeners" % w["ip"]).stdout
    assert "virtualOutbound::0.0.0.0:15001" in ls and "virtualInbound::0.0.0.0:15006" in ls, ls


def test_gateway_reaches_catalog_through_its_capture(mesh):
    status, _, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(
        request("/items/1")), 30, "200 through the gateway")
    assert json.loads(body)["id"] == 1


def test_allow_any_passes_through(mesh):
    hits = mesh["hits"]
    # an HTTP port the mesh has a listener for (80): Istio's allow_any route
    code, body = fetch(mesh, "http://%s/" % HOST_IP)
    assert (code, body) == (200, "ext-80"), (code, body)
    e = wait_log(mesh, "webapp", lambda e: e.get("authority") == HOST_IP,
                 "the webapp sidecar's line for %s" % HOST_IP)
    assert e["upstream_cluster"] == "PassthroughCluster" and e["route_name"] == "allow_any", e
    assert e["upstream_host"] == HOST_IP + ":80", e
    # a port no Service has: virtualOutbound's catch-all chain, a TCP line
    code, body = fetch(mesh, "http://%s:18080/" % HOST_IP)
    assert (code, body) == (200, "ext-18080"), (code, body)
    e = wait_log(mesh, "webapp", lambda e: e.get("upstream_host") == HOST_IP + ":18080",
                 "the webapp sidecar's TCP line for :18080")
    assert e["upstream_cluster"] == "PassthroughCluster", e
    assert hits.get("ext-80") and hits.get("ext-18080")


def test_service_entry_host_resolves_through_dns_proxy(mesh):
    code, body = fetch(mesh, "http://api.partner.internal:18082/")
    assert (code, body) == (200, "partner"), (code, body)
    e = wait_log(mesh, "webapp", lambda e: e.get("authority") == "api.partner.internal:18082",
                 "the webapp sidecar's line for the ServiceEntry host")
    assert e["upstream_cluster"] == "outbound|18082||api.partner.internal", e
    # its address is Istio's auto-allocated one (240.240.0.0/16), answered by the DNS proxy
    w = pod(mesh, "webapp")
    r = sh("ip", "netns", "exec", w["netns"], "/usr/bin/python3", "-c",
           "import socket; print(socket.gethostbyname('api.partner.internal'))")
    assert r.stdout.strip().startswith("240.240."), r.stdout


def test_excluded_port_bypasses_the_sidecar(mesh):
    before = len(log_lines(mesh, "webapp"))
    code, body = fetch(mesh, "http://%s:18083/" % HOST_IP)
    assert (code, body) == (200, "excluded"), (code, body)
    time.sleep(1.5)  # the access log flushes every second
    lines = log_lines(mesh, "webapp")[before:]
    assert not [e for e in lines if "18083" in json.dumps(e)], lines
    w = pod(mesh, "webapp")
    rules = sh("ip", "netns", "exec", w["netns"], "iptables-save", "-t", "nat").stdout
    assert "-A ISTIO_OUTPUT -p tcp -m tcp --dport 18083 -j RETURN" in rules, rules
    # describe pod names the exclusion (the Pod carries its template's annotations)
    d = weftctl("describe", "pod", w["name"], "-n", "istioinaction")
    assert d.returncode == 0, d.stdout + d.stderr
    assert "capture: on" in d.stderr and "18083 (excludeOutboundPorts" in d.stderr, d.stderr


PASSTHROUGH_SERVER = r"""
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("undeclared " + self.path).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
srv = S(("0.0.0.0", int(sys.argv[1])), H)
print("ready", flush=True)
srv.serve_forever()
"""

UNDECLARED = 9999  # a port of the catalog pod no Service declares

DENY_POLICY = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-passthrough, namespace: istioinaction}
spec:
  selector: {matchLabels: {app: catalog}}
  action: DENY
  rules:
  - to:
    - operation: {paths: [/denied]}
"""

STRICT_POLICY = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: catalog-strict, namespace: istioinaction}
spec:
  selector: {matchLabels: {app: catalog}}
  mtls: {mode: STRICT}
"""


def host_get(url, timeout=5):
    """GET url from the test's own namespace (outside the mesh, plaintext): (code, body), 599
    when the connection itself failed."""
    import urllib.error
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except Exception as e:  # reset, refused, timeout
        return 599, str(e)


def pod_stats(p):
    return sh("ip", "netns", "exec", p["netns"], "curl", "-s", "-m", "5",
              "http://%s:15000/stats/prometheus" % p["ip"]).stdout


def test_inbound_passthrough_to_an_undeclared_port(mesh):
    """virtualInbound's passthrough chains (pilot/capture.h): HTTP to a pod port no Service
    declares goes through virtualInbound-catchall-http (route default, InboundPassthroughCluster,
    Istio metrics); an AuthorizationPolicy of the workload applies to it; under STRICT a
    plaintext client is refused (NR filter_chain_not_found)."""
    import subprocess
    cat = pod(mesh, "catalog")
    srv = subprocess.Popen(["ip", "netns", "exec", cat["netns"], "/usr/bin/python3", "-c",
                            PASSTHROUGH_SERVER, str(UNDECLARED)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    policy = mesh["dir"] / "passthrough-policy.yaml"
    url = "http://%s:%d" % (cat["ip"], UNDECLARED)
    try:
        assert srv.stdout.readline().strip() == "ready"
        code, body = host_get(url + "/hello")
        assert (code, body) == (200, "undeclared /hello"), (code, body)
        e = wait_log(mesh, "catalog", lambda e: e.get("path") == "/hello",
                     "the catalog sidecar's line for /hello")
        assert e["upstream_cluster"] == "InboundPassthroughCluster", e
        assert e["route_name"] == "default" and e["response_code"] == 200, e
        assert e["upstream_host"] == "%s:%d" % (cat["ip"], UNDECLARED), e
        m = wait_for(lambda: next((l for l in pod_stats(cat).splitlines()
                                   if l.startswith("istio_requests_total{")
                                   and 'destination_service_name="InboundPassthroughCluster"' in l
                                   and 'response_code="200"' in l), None),
                     15, "istio_requests_total for the passthrough request")
        assert 'reporter="destination"' in m, m
        # an AuthorizationPolicy DENY of the workload applies to passthrough HTTP
        policy.write_text(DENY_POLICY)
        code, body = wait_for(lambda: (lambda r: r if r[0] == 403 else None)(
            host_get(url + "/denied")), 30, "403 from the DENY policy on the undeclared port")
        assert body == "RBAC: access denied", body
        e = wait_log(mesh, "catalog",
                     lambda e: e.get("path") == "/denied" and e.get("response_code") == 403,
                     "the catalog sidecar's 403 line for /denied")
        assert e["response_code_details"] == (
            "rbac_access_denied_matched_policy[ns[istioinaction]-policy[deny-passthrough]"
            "-rule[0]]"), e
        assert e["upstream_cluster"] in (None, "InboundPassthroughCluster"), e
        assert host_get(url + "/allowed") == (200, "undeclared /allowed")
        # STRICT: a plaintext client gets no filter chain
        policy.write_text(STRICT_POLICY)
        code, body = wait_for(lambda: (lambda r: r if r[0] == 599 else None)(
            host_get(url + "/strict")), 30, "the plaintext connection refused under STRICT")
        e = wait_log(mesh, "catalog",
                     lambda e: e.get("response_code_details") == "filter_chain_not_found"
                     and e.get("downstream_local_address") == "%s:%d" % (cat["ip"], UNDECLARED),
                     "the catalog sidecar's NR line")
        assert e["response_flags"] == "NR" and e["response_code"] == 0, e
    finally:
        srv.kill()
        srv.wait()
        if policy.exists():
            policy.unlink()


def test_registry_only_blocks_unknown_destinations(mesh):
    write_mesh(mesh["dir"], "REGISTRY_ONLY")
    # HTTP to an unknown host: 502 from Istio's block_all virtual host
    code, body = wait_for(lambda: (lambda r: r if r[0] == 502 else None)(
        fetch(mesh, "http://%s/" % HOST_IP)), 30, "502 under REGISTRY_ONLY")
    e = wait_log(mesh, "webapp", lambda e: e.get("route_name") == "block_all",
                 "the webapp sidecar's block_all line")
    assert e["response_code"] == 502 and e["response_code_details"] == "direct_response", e
    # other TCP: BlackHoleCluster, the connection closed without a reply
    hits_before = mesh["hits"].get("ext-18080", 0)
    code, body = fetch(mesh, "http://%s:18080/" % HOST_IP)
    assert code == 599, (code, body)
    e = wait_log(mesh, "webapp", lambda e: e.get("upstream_cluster") == "BlackHoleCluster",
                 "the webapp sidecar's BlackHoleCluster line")
    assert "UH" in (e.get("response_flags") or ""), e
    assert mesh["hits"].get("ext-18080", 0) == hits_before
    # the ServiceEntry host is in the registry; the excluded port never meets the sidecar
    assert fetch(mesh, "http://api.partner.internal:18082/") == (200, "partner")
    assert fetch(mesh, "http://%s:18083/" % HOST_IP) == (200, "excluded")


def test_status_says_capture_is_on_and_where_each_process_runs(mesh):
    st = weftctl("status", "--state", mesh["state"], timeout=30)
    assert "transparent capture on (REDIRECT)" in st.stdout, st.stdout
    js = weftctl("status", "--state", mesh["state"], "-o", "json", timeout=30)
    doc = json.loads(js.stdout)
    assert doc["podNetwork"]["capture"] is True
    for p in mesh["mesh"]["pods"]:
        procs = [q for q in doc["processes"] if q.get("pod") == p["name"]]
        assert procs and all(q.get("netns") == p["netns"] for q in procs), (p, procs)


def test_names_outside_the_mesh_resolve_through_the_hosts_nameserver(mesh):
    """The host's nameserver is out of a pod's reach (here a loopback address, as
    systemd-resolved's 127.0.0.53): the pod's DNS proxy asks the supervisor's relay on the host
    link, which asks the host's nameserver, so an outside name resolves at once instead of
    failing after the resolver's timeouts."""
    if not mesh["nameserver"]:
        pytest.skip("cannot bind %s:53 for the test's nameserver" % NS_IP)
    w = pod(mesh, "webapp")
    t0 = time.monotonic()
    r = sh("ip", "netns", "exec", w["netns"], "/usr/bin/python3", "-c",
           "import socket; print(socket.gethostbyname('outside.weft-test.example'))",
           check=False)
    took = time.monotonic() - t0
    assert r.returncode == 0 and r.stdout.strip() == NS_ANSWER, r.stdout + r.stderr
    assert took < 5, took  # no resolver timeout on the way
    assert mesh["nameserver"][1], "the test's nameserver was never asked"
    log = supervisor_log(mesh["state"])
    assert "relaying DNS %s:53" % HOST_IP in log, log
