"""Transparent capture through weft-proxy (protocols.md §5.3-5.4, issue 20 item 1): the
original_dst listener filter, use_original_dst hand-off, ORIGINAL_DST clusters, Istio's
virtualOutbound (15001) / virtualInbound (15006) listeners, PassthroughCluster,
InboundPassthroughCluster (source 127.0.0.6) and BlackHoleCluster, under Istio's real iptables
rules (`weft-proxy istio-iptables`) with the proxy running as uid 1337.

Two network namespaces joined by a veth pair: "pod" (v0, 10.1.2.1/24) where the rules are
installed, the proxy runs as uid 1337 and the app's servers and clients run as root; "ext"
(v1, 10.1.2.50/24) with servers standing for a mesh backend (10.1.2.50:8080) and for hosts
outside the registry (10.1.2.50:80 HTTP, 10.1.2.50:9090 TCP). 10.1.2.3 is a Service VIP that
exists nowhere: only the proxy's listener for it can answer. Needs root, iproute2, Debian's
iptables and util-linux's setpriv; skipped with the reason otherwise.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from proxyfix import proxy_path as proxy_bin, HCM_TYPE, ROUTER_TYPE, FILE_LOG_TYPE

INJECTOR_ARGS = ["-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*",
                 "-x", "", "-b", "*", "-d", "15090,15021,15020"]
TCP_PROXY_TYPE = "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
ODST_TYPE = "type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst"
LOG_FMT = ("%UPSTREAM_CLUSTER% %UPSTREAM_HOST% %RESPONSE_FLAGS% %RESPONSE_CODE% "
           "%RESPONSE_CODE_DETAILS% %DOWNSTREAM_LOCAL_ADDRESS%\n")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: iptables and network namespaces"),
    pytest.mark.skipif(
        not (shutil.which("iptables-restore") and shutil.which("ip")
             and shutil.which("setpriv")),
        reason="needs Debian's iptables package, iproute2 and util-linux's setpriv"),
]

# Servers ("http6"/"tcp6": on [::]): "http NAME PORT" answers any request with JSON {server, peer, host, path};
# "tcp NAME PORT" writes "NAME PEER\n" and closes. Prints "ready" once all listen.
SERVER = r"""
import json, socket, sys, threading
def http(name, s):
    while True:
        c, a = s.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            d = c.recv(4096)
            if not d: break
            data += d
        lines = data.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1] if lines and " " in lines[0] else ""
        host = next((l.split(":", 1)[1].strip() for l in lines[1:]
                     if l.lower().startswith("host:")), "")
        body = json.dumps({"server": name, "peer": a[0], "host": host, "path": path}).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d"
                  b"\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        c.close()
def tcp(name, s):
    while True:
        c, a = s.accept()
        c.sendall(("%s %s\n" % (name, a[0])).encode()); c.close()
args = sys.argv[1:]
for i in range(0, len(args), 3):
    kind, name, port = args[i], args[i + 1], int(args[i + 2])
    v6 = kind.endswith("6")
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::" if v6 else "0.0.0.0", port)); s.listen(16)
    threading.Thread(target=http if kind.startswith("http") else tcp, args=(name, s),
                     daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def run(args, timeout=30, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def tcp_proxy(stat, cluster):
    return {"name": "envoy.filters.network.tcp_proxy",
            "typed_config": {"@type": TCP_PROXY_TYPE, "stat_prefix": stat, "cluster": cluster,
                             "access_log": [alog()]}}


def alog():
    return {"name": "envoy.access_loggers.file",
            "typed_config": {"@type": FILE_LOG_TYPE, "path": "@LOG@",
                             "log_format": {"text_format_source": {"inline_string": LOG_FMT}}}}


def odst_cluster(name, bind=None):
    """Istio's PassthroughCluster / InboundPassthroughCluster / inbound|port|| shape."""
    c = {"name": name, "type": "ORIGINAL_DST", "lb_policy": "CLUSTER_PROVIDED",
         "connect_timeout": "10s"}
    if bind:
        c["upstream_bind_config"] = {"source_address": {"address": bind, "port_value": 0}}
    return c


def capture_bootstrap(mode, logpath):
    """Istio's sidecar capture layout (istiod's virtualOutbound, 0.0.0.0_80 with
    bind_to_port false, virtualInbound), outboundTrafficPolicy mode ALLOW_ANY/REGISTRY_ONLY."""
    passthrough = "PassthroughCluster" if mode == "ALLOW_ANY" else "BlackHoleCluster"
    if mode == "ALLOW_ANY":
        fallback = {"name": "allow_any", "domains": ["*"],
                    "routes": [{"name": "allow_any", "match": {"prefix": "/"},
                                "route": {"cluster": "PassthroughCluster", "timeout": "0s"}}]}
    else:
        fallback = {"name": "block_all", "domains": ["*"],
                    "routes": [{"name": "block_all", "match": {"prefix": "/"},
                                "direct_response": {"status": 502}}]}
    rc = {"name": "80", "validate_clusters": False, "virtual_hosts": [
        {"name": "catalog.default.svc.cluster.local:80",
         "domains": ["catalog", "catalog.default.svc.cluster.local", "10.1.2.3"],
         "routes": [{"match": {"prefix": "/"},
                     "route": {"cluster": "outbound|80||catalog.default.svc.cluster.local"}}]},
        fallback]}
    hcm = {"@type": HCM_TYPE, "stat_prefix": "outbound_0.0.0.0_80", "route_config": rc,
           "http_filters": [{"name": "envoy.filters.http.router",
                             "typed_config": {"@type": ROUTER_TYPE}}],
           "access_log": [alog()]}
    listeners = [
        {"name": "virtualOutbound", "traffic_direction": "OUTBOUND", "use_original_dst": True,
         "address": {"socket_address": {"address": "0.0.0.0", "port_value": 15001}},
         "filter_chains": [
             {"name": "virtualOutbound-blackhole",
              "filter_chain_match": {"destination_port": 15001},
              "filters": [tcp_proxy("BlackHoleCluster", "BlackHoleCluster")]},
             {"name": "virtualOutbound-catchall-tcp",
              "filter_chain_match": {"prefix_ranges": [{"address_prefix": "0.0.0.0",
                                                        "prefix_len": 0}]},
              "filters": [tcp_proxy(passthrough, passthrough)]}]},
        {"name": "0.0.0.0_80", "traffic_direction": "OUTBOUND", "bind_to_port": False,
         "address": {"socket_address": {"address": "0.0.0.0", "port_value": 80}},
         "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
                                         "typed_config": hcm}]}]},
        {"name": "virtualInbound", "traffic_direction": "INBOUND",
         "address": {"socket_address": {"address": "0.0.0.0", "port_value": 15006}},
         "listener_filters": [{"name": "envoy.filters.listener.original_dst",
                               "typed_config": {"@type": ODST_TYPE}}],
         "filter_chains": [
             {"name": "virtualInbound-blackhole",
              "filter_chain_match": {"destination_port": 15006},
              "filters": [tcp_proxy("BlackHoleCluster", "BlackHoleCluster")]},
             {"name": "virtualInbound",
              "filter_chain_match": {"prefix_ranges": [{"address_prefix": "0.0.0.0",
                                                        "prefix_len": 0}]},
              "filters": [tcp_proxy("InboundPassthroughCluster", "InboundPassthroughCluster")]},
             {"name": "0.0.0.0_8080",
              "filter_chain_match": {"destination_port": 8080},
              "filters": [tcp_proxy("inbound|8080||", "inbound|8080||")]}]},
    ]
    clusters = [
        odst_cluster("PassthroughCluster"),
        odst_cluster("InboundPassthroughCluster", bind="127.0.0.6"),
        odst_cluster("inbound|8080||", bind="127.0.0.6"),
        {"name": "BlackHoleCluster", "type": "STATIC", "connect_timeout": "10s"},
        {"name": "outbound|80||catalog.default.svc.cluster.local", "type": "STATIC",
         "connect_timeout": "10s",
         "load_assignment": {"cluster_name": "outbound|80||catalog.default.svc.cluster.local",
                             "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {
                                 "socket_address": {"address": "10.1.2.50",
                                                    "port_value": 8080}}}}]}]}},
    ]
    bs = {"node": {"id": "sidecar~10.1.2.1~app.default~default.svc.cluster.local",
                   "cluster": "app.default"},
          "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 15000}}},
          "static_resources": {"listeners": listeners, "clusters": clusters}}
    text = json.dumps(bs).replace("@LOG@", logpath)
    return json.loads(text)


class Env:
    def __init__(self):
        tag = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:6])
        self.pod, self.ext = "wodp-" + tag, "wode-" + tag
        self.procs = []
        self.err_text = ""
        self.dir = tempfile.mkdtemp(prefix="weft-odst-")
        os.chmod(self.dir, 0o777)  # the proxy (uid 1337) writes its access log here

    def ns(self, ns, args, **kw):
        return run(["ip", "netns", "exec", ns] + args, **kw)

    def setup(self):
        for n in (self.pod, self.ext):
            r = run(["ip", "netns", "add", n])
            if r.returncode != 0:
                pytest.skip("cannot create a network namespace: " + r.stderr.strip())
        cmds = [(self.pod, ["link", "set", "lo", "up"]),
                (self.ext, ["link", "set", "lo", "up"]),
                (self.pod, ["link", "add", "v0", "type", "veth", "peer", "name", "v1",
                            "netns", self.ext]),
                (self.pod, ["addr", "add", "10.1.2.1/24", "dev", "v0"]),
                (self.ext, ["addr", "add", "10.1.2.50/24", "dev", "v1"]),
                (self.pod, ["link", "set", "v0", "up"]), (self.ext, ["link", "set", "v1", "up"])]
        for n, cmd in cmds:
            r = run(["ip", "-n", n] + cmd)
            assert r.returncode == 0, "ip %s: %s" % (" ".join(cmd), r.stderr)

    def spawn(self, argv, ns, ready=None):
        p = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        if ready:
            line = p.stdout.readline()
            assert line.strip() == ready, p.stderr.read()
        return p

    def servers(self, ns, *specs):
        argv = [sys.executable or "/usr/bin/python3", "-c", SERVER]
        for s in specs:
            argv += list(s)
        self.spawn(argv, ns, ready="ready")

    def start_proxy(self, mode, bootstrap=None):
        self.log = os.path.join(self.dir, "access.log")
        path = os.path.join(self.dir, "bootstrap.json")
        with open(path, "w") as f:
            json.dump((bootstrap or capture_bootstrap)(mode, self.log), f)
        os.chmod(path, 0o644)
        self.err = open(os.path.join(self.dir, "proxy.err"), "w")
        p = subprocess.Popen(["ip", "netns", "exec", self.pod, "setpriv", "--reuid", "1337",
                              "--regid", "1337", "--clear-groups", proxy_bin(), "-c", path,
                              "--concurrency", "1", "--file-flush-interval-msec", "50"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=self.err)
        self.procs.append(p)
        self.proxy = p
        deadline = time.time() + 15
        while time.time() < deadline:
            r = self.ns(self.pod, ["/usr/bin/python3", "-c",
                                   "import urllib.request as u;"
                                   "print(u.urlopen('http://127.0.0.1:15000/ready').status)"])
            if r.stdout.strip() == "200":
                return
            assert p.poll() is None, open(self.err.name).read()
            time.sleep(0.1)
        pytest.fail("weft-proxy did not become ready: " + open(self.err.name).read())

    def client(self, ns, code):
        """Runs python code in ns (as root: captured); returns its stdout stripped."""
        r = self.ns(ns, ["/usr/bin/python3", "-c", "import socket, json\n" + code], timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def log_lines(self, n, timeout=5):
        deadline = time.time() + timeout
        lines = []
        while time.time() < deadline:
            if os.path.exists(self.log):
                lines = open(self.log).read().splitlines()
                if len(lines) >= n:
                    return lines
            time.sleep(0.05)
        raise AssertionError("access log has %r" % lines)

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for n in (self.pod, self.ext):
            run(["ip", "netns", "del", n])
        errf = os.path.join(self.dir, "proxy.err")
        self.err_text = open(errf).read() if os.path.exists(errf) else ""
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def env():
    e = Env()
    try:
        e.setup()
        yield e
    finally:
        e.close()
    assert "Sanitizer" not in e.err_text, e.err_text  # the proxy stopped cleanly


HTTP_GET = """
s = socket.create_connection(({ip!r}, {port}), timeout=10)
s.sendall(b"GET /items HTTP/1.1\\r\\nHost: {host}\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    d = s.recv(65536)
    if not d: break
    data += d
head, _, body = data.partition(b"\\r\\n\\r\\n")
print(json.dumps({{"status": int(head.split()[1]) if head else 0, "body": body.decode()}}))
"""

TCP_READ = """
s = socket.create_connection(({ip!r}, {port}), timeout=10)
try:
    data = s.recv(4096).decode()
except ConnectionResetError:
    data = "reset"
print(json.dumps(data))
"""


def http_get(env, ip, port, host):
    return json.loads(env.client(env.pod, HTTP_GET.format(ip=ip, port=port, host=host)))


def start(env, mode):
    env.servers(env.ext, ("http", "catalog", "8080"), ("http", "partner", "80"),
                ("tcp", "ext9090", "9090"))
    env.servers(env.pod, ("tcp", "app8080", "8080"), ("tcp", "app9999", "9999"))
    r = env.ns(env.pod, [proxy_bin(), "istio-iptables"] + INJECTOR_ARGS)
    assert r.returncode == 0, r.stderr
    env.start_proxy(mode)


def test_allow_any_vip_passthrough_and_inbound(env):
    start(env, "ALLOW_ANY")
    # a Service VIP no host owns: virtualOutbound hands it to 0.0.0.0_80, routed by Host
    r = http_get(env, "10.1.2.3", 80, "catalog")
    assert r["status"] == 200, r
    body = json.loads(r["body"])
    assert body["server"] == "catalog" and body["path"] == "/items"
    assert body["peer"] == "10.1.2.1"  # the proxy (uid 1337) dialled it, not captured again
    # an HTTP port, a host outside the registry: allow_any -> PassthroughCluster
    r = http_get(env, "10.1.2.50", 80, "plain.partner.example.internal")
    assert r["status"] == 200 and json.loads(r["body"])["server"] == "partner", r
    # a port without a listener: virtualOutbound-catchall-tcp -> PassthroughCluster
    assert env.client(env.pod, TCP_READ.format(ip="10.1.2.50", port=9090)) == \
        '"ext9090 10.1.2.1\\n"'
    # inbound: pod IP:8080 from outside -> 15006, chain destination_port 8080, source 127.0.0.6
    assert env.client(env.ext, TCP_READ.format(ip="10.1.2.1", port=8080)) == \
        '"app8080 127.0.0.6\\n"'
    # a port no inbound chain names: InboundPassthroughCluster, also from 127.0.0.6
    assert env.client(env.ext, TCP_READ.format(ip="10.1.2.1", port=9999)) == \
        '"app9999 127.0.0.6\\n"'
    lines = env.log_lines(5)
    assert lines[0].split() == ["outbound|80||catalog.default.svc.cluster.local",
                                "10.1.2.50:8080", "-", "200", "via_upstream", "10.1.2.3:80"]
    assert lines[1].split() == ["PassthroughCluster", "10.1.2.50:80", "-", "200",
                                "via_upstream", "10.1.2.50:80"]
    assert lines[2].split()[:3] == ["PassthroughCluster", "10.1.2.50:9090", "-"]
    assert lines[2].split()[-1] == "10.1.2.50:9090"
    assert lines[3].split()[:3] == ["inbound|8080||", "10.1.2.1:8080", "-"]
    assert lines[4].split()[:3] == ["InboundPassthroughCluster", "10.1.2.1:9999", "-"]


def test_registry_only_blackhole(env):
    start(env, "REGISTRY_ONLY")
    # the registered Service still works
    r = http_get(env, "10.1.2.3", 80, "catalog")
    assert r["status"] == 200 and json.loads(r["body"])["server"] == "catalog", r
    # B039: an HTTP port with an unknown host: 502, empty body, details direct_response
    r = http_get(env, "10.1.2.50", 80, "plain.partner.example.internal")
    assert r == {"status": 502, "body": ""}
    # a port without a listener: BlackHoleCluster, the connection is closed (UH)
    assert env.client(env.pod, TCP_READ.format(ip="10.1.2.50", port=9090)) in ('""', '"reset"')
    lines = env.log_lines(3)
    assert lines[1].split()[2:5] == ["-", "502", "direct_response"]
    assert lines[2].split()[:3] == ["BlackHoleCluster", "-", "UH"]


def ipv6_bootstrap(mode, logpath):
    """The IPv6 half of the layout: virtualOutbound on [::]:15001 (catch-all without a prefix
    range) and virtualInbound on [::]:15006 (a chain for port 8080, else
    InboundPassthroughCluster from ::6)."""
    bs = capture_bootstrap(mode, logpath)
    ls = bs["static_resources"]["listeners"]
    vo, vi = ls[0], ls[2]
    for l in (vo, vi):
        l["address"]["socket_address"]["address"] = "::"
        for fc in l["filter_chains"]:
            fc.get("filter_chain_match", {}).pop("prefix_ranges", None)
            if fc.get("filter_chain_match") == {}:
                del fc["filter_chain_match"]
    cl = bs["static_resources"]["clusters"]
    for c in cl:
        if "upstream_bind_config" in c:
            c["upstream_bind_config"]["source_address"]["address"] = "::6"
    bs["static_resources"]["listeners"] = [vo, vi]
    return bs


def test_ipv6_original_dst(env):
    """IP6T_SO_ORIGINAL_DST: outbound passthrough to an IPv6 address and inbound to the pod's
    IPv6 address, with istio-iptables --dual-stack."""
    if not shutil.which("ip6tables-restore"):
        pytest.skip("needs ip6tables-restore")
    for ns, addr in ((env.pod, "2001:db8::1/64"), (env.ext, "2001:db8::50/64")):
        r = run(["ip", "-n", ns, "addr", "add", addr, "dev", "v0" if ns == env.pod else "v1",
                 "nodad"])
        assert r.returncode == 0, r.stderr
    env.servers(env.ext, ("tcp6", "ext9090", "9090"))
    env.servers(env.pod, ("tcp6", "app8080", "8080"), ("tcp6", "app9999", "9999"))
    r = env.ns(env.pod, [proxy_bin(), "istio-iptables", "--dual-stack"] + INJECTOR_ARGS)
    assert r.returncode == 0, r.stderr
    env.start_proxy("ALLOW_ANY", bootstrap=ipv6_bootstrap)
    read6 = TCP_READ
    assert env.client(env.pod, read6.format(ip="2001:db8::50", port=9090)) == \
        '"ext9090 2001:db8::1\\n"'
    assert env.client(env.ext, read6.format(ip="2001:db8::1", port=8080)) == '"app8080 ::6\\n"'
    assert env.client(env.ext, read6.format(ip="2001:db8::1", port=9999)) == '"app9999 ::6\\n"'
    lines = env.log_lines(3)
    assert lines[0].split()[:2] == ["PassthroughCluster", "[2001:db8::50]:9090"]
    assert lines[0].split()[-1] == "[2001:db8::50]:9090"
    assert lines[1].split()[:2] == ["inbound|8080||", "[2001:db8::1]:8080"]
    assert lines[2].split()[:2] == ["InboundPassthroughCluster", "[2001:db8::1]:9999"]


H2_SERVER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import h2server
s = h2server.H2Server(host=sys.argv[2], port=int(sys.argv[3]))
print("ready", flush=True)
time.sleep(3600)
"""

HPO = {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
    "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
    "use_downstream_protocol_config": {"http_protocol_options": {},
                                       "http2_protocol_options": {}}}}


def h2_bootstrap(mode, logpath):
    """capture_bootstrap with istiod's PassthroughCluster protocol options: the upstream speaks
    the downstream's protocol (buildDefaultPassthroughCluster)."""
    bs = capture_bootstrap(mode, logpath)
    for c in bs["static_resources"]["clusters"]:
        if c["name"] == "PassthroughCluster":
            c["typed_extension_protocol_options"] = HPO
    return bs


def test_original_dst_http2_upstream(env):
    """ALLOW_ANY to an HTTP/2-only server outside the registry: an h2c client's requests go
    through PassthroughCluster as HTTP/2 (use-downstream protocol), streams of one shared
    connection to the original destination; an HTTP/1.1 client to the same place stays
    HTTP/1.1. Before, ORIGINAL_DST clusters spoke HTTP/1.1 only (the server answered a GOAWAY:
    503 UPE)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env.spawn(["/usr/bin/python3", "-c", H2_SERVER, here, "10.1.2.50", "80"], env.ext,
              ready="ready")
    r = env.ns(env.pod, [proxy_bin(), "istio-iptables"] + INJECTOR_ARGS)
    assert r.returncode == 0, r.stderr
    env.start_proxy("ALLOW_ANY", h2_bootstrap)
    for _ in range(2):
        r = env.ns(env.pod, ["curl", "-s", "--http2-prior-knowledge", "-m", "10",
                             "http://10.1.2.50/echo"])
        assert r.returncode == 0, r.stderr
        body = json.loads(r.stdout)
        assert body["method"] == "GET" and body["path"] == "/echo", body
        assert body["authority"] == "10.1.2.50", body
    lines = env.log_lines(2)
    assert lines[0].split()[:5] == ["PassthroughCluster", "10.1.2.50:80", "-", "200",
                                    "via_upstream"], lines
    # both requests on one upstream HTTP/2 connection of the pool (keyed by the destination)
    assert body["conn"] == 1, body
    r = env.ns(env.pod, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10",
                         "http://10.1.2.50/echo"])
    assert r.stdout == "502" or r.stdout == "503", r.stdout  # HTTP/1.1 to an h2-only server
