"""Istio's DNS proxy end to end (issue 20 item 3): weft-pilot serves NDS (the NameTable of
pilot/nds.h) to a weft-proxy whose bootstrap node metadata has DNS_CAPTURE "true" (Istio's
ISTIO_META_DNS_CAPTURE) and DNS_AUTO_ALLOCATE "true"; the proxy's agent answers DNS on its
address (DNS_PROXY_ADDR, a free loopback port here instead of 15053) over UDP and TCP.

Clients nobody on the project wrote: `dig` (bind9-dnsutils) and dnspython. An upstream resolver
(dnspython, UDP and TCP, in this process) answers what the mesh does not know. Checked:
the FQDN and Istio's alternate names (name, name.ns, name.ns.svc), the first search domain's
CNAME, AAAA of a v4-only host (NOERROR, no answer), a ServiceEntry with an address and one with
Istio's auto-allocated 240.240.x.y (computed here from Istio's algorithm), TTL 30 and AA,
forwarding over UDP and TCP (and on to the next upstream when one refuses), a pushed Service
answerable without a restart, pilot's /debug/ndsz?proxyID= and the agent's /debug/ndsz.

Port 53 of a pod reaches this address through `weft-proxy istio-iptables --redirect-dns`
(test_capture_iptables.py); here clients query the address directly. Every process binds
loopback and is stopped at teardown.
"""
import json
import os
import shutil
import socket
import socketserver
import subprocess
import threading
import time
import urllib.error
import urllib.request

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from procs import crash_report, free_port, start_process, stop_process
from proxyfix import bootstrap, proxy_factory
from test_pilot import pilot_exe  # noqa: F401 (fixture)

assert proxy_factory  # fixture, imported for pytest

CONFIG = """\
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: istioinaction}
spec:
  clusterIP: 10.96.0.20
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 3000}]
---
apiVersion: v1
kind: Service
metadata: {name: forum, namespace: forum-services}
spec:
  clusterIP: 10.96.0.30
  ports: [{name: http, port: 80}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: istioinaction}
spec:
  hosts: [api.example.test]
  addresses: [192.0.2.10]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 192.0.2.10}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: auto, namespace: istioinaction}
spec:
  hosts: [db.internal.test]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{number: 5432, name: tcp, protocol: TCP}]
"""

WEBAPP = """\
apiVersion: v1
kind: Service
metadata: {name: webapp, namespace: istioinaction}
spec:
  clusterIP: 10.96.0.40
  ports: [{name: http, port: 80}]
"""

SEARCH = "istioinaction.svc.cluster.local svc.cluster.local cluster.local"
UPSTREAM_IP = "203.0.113.5"


def istio_auto_ip(key):
    """Istio's autoAllocateIPs for one ServiceEntry host alone: FNV-32a of "ns/host" modulo
    255*255 is the slot, x = slot + 1 (skipping x % 255 == 0), 240.240.x/255.x%255."""
    h = 2166136261
    for c in key.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    x = h % 65025 + 1
    if x % 255 == 0:
        x += 1
    return "240.240.%d.%d" % (x // 255, x % 255)


class Upstream:
    """A resolver on UDP and TCP: example.org A -> UPSTREAM_IP, anything else NXDOMAIN. It
    records the names it was asked (name, transport)."""

    def __init__(self):
        self.asked = []
        outer = self

        def answer(wire):
            q = dns.message.from_wire(wire)
            r = dns.message.make_response(q)
            name = q.question[0].name.to_text()
            if name == "example.org." and q.question[0].rdtype == dns.rdatatype.A:
                r.answer.append(dns.rrset.from_text(name, 300, "IN", "A", UPSTREAM_IP))
            else:
                r.set_rcode(dns.rcode.NXDOMAIN)
            return name, r.to_wire()

        class U(socketserver.BaseRequestHandler):
            def handle(self):
                data, sock = self.request
                name, wire = answer(data)
                outer.asked.append((name, "udp"))
                sock.sendto(wire, self.client_address)

        class T(socketserver.BaseRequestHandler):
            def handle(self):
                n = int.from_bytes(self.request.recv(2), "big")
                data = b""
                while len(data) < n:
                    chunk = self.request.recv(n - len(data))
                    if not chunk:
                        return
                    data += chunk
                name, wire = answer(data)
                outer.asked.append((name, "tcp"))
                self.request.sendall(len(wire).to_bytes(2, "big") + wire)

        class TCP(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        # one port for both protocols: the UDP one the kernel picks may be taken for TCP by a
        # test running beside this one, so try again with another
        for attempt in range(20):
            self.udp = socketserver.ThreadingUDPServer(("127.0.0.1", 0), U)
            port = self.udp.server_address[1]
            try:
                self.tcp = TCP(("127.0.0.1", port), T)
                break
            except OSError:
                self.udp.server_close()
                if attempt == 19:
                    raise
        self.port = port
        for s in (self.udp, self.tcp):
            threading.Thread(target=s.serve_forever, daemon=True).start()

    def close(self):
        for s in (self.udp, self.tcp):
            s.shutdown()
            s.server_close()


@pytest.fixture
def upstream():
    u = Upstream()
    yield u
    u.close()


@pytest.fixture
def pilot(pilot_exe, tmp_path):  # noqa: F811
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "mesh.yaml").write_text(CONFIG)
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--debounce-after-ms", "50"], count=2)
    proc.xds, proc.mon, proc.cfg = addrs[0][1], addrs[1][1], cfg
    yield proc
    rc = stop_process(proc)
    assert crash_report(proc) is None, proc.stderr_text()
    assert rc == 0, proc.stderr_text()


def sidecar_bootstrap(xds_port, capture=True):
    bs = bootstrap([], [{
        "name": "xds-grpc", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [{
            "endpoint": {"address": {"socket_address": {"address": "127.0.0.1",
                                                        "port_value": xds_port}}}}]}]}}],
        node_id="sleep-1.istioinaction", node_cluster="sleep.istioinaction")
    md = {"NAME": "sleep-1", "NAMESPACE": "istioinaction", "PROXY_TYPE": "sidecar",
          "WEFT_LOCALHOST": "127.0.0.1", "INSTANCE_IPS": "127.0.0.1"}
    if capture:
        md.update({"DNS_CAPTURE": "true", "DNS_AUTO_ALLOCATE": "true"})
    bs["node"]["metadata"] = md
    ads = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
    bs["dynamic_resources"] = {
        "ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                       "set_node_on_first_message_only": True,
                       "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
        "cds_config": ads, "lds_config": dict(ads)}
    return bs


def start_agent(proxy_factory, pilot, monkeypatch, tmp_path, upstreams):  # noqa: F811
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\nsearch %s\noptions ndots:5\n" % SEARCH)
    port, status = free_port(), free_port()
    monkeypatch.setenv("DNS_PROXY_ADDR", "127.0.0.1:%d" % port)
    monkeypatch.setenv("WEFT_DNS_RESOLV_CONF", str(resolv))
    monkeypatch.setenv("WEFT_DNS_UPSTREAMS", upstreams)
    p = proxy_factory(sidecar_bootstrap(pilot.xds),
                      args=["--status-address", "127.0.0.1:%d" % status])
    p.dns, p.status = port, status
    # the name table arrives over NDS after the stream starts
    poll(lambda: udp(p, "catalog.istioinaction.svc.cluster.local.").answer, timeout=10)
    return p


@pytest.fixture
def agent(proxy_factory, pilot, upstream, monkeypatch, tmp_path):  # noqa: F811
    return start_agent(proxy_factory, pilot, monkeypatch, tmp_path,
                       "127.0.0.1:%d" % upstream.port)


def poll(fn, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %.1fs" % timeout)
        time.sleep(0.1)


def udp(p, name, rdtype="A"):
    return dns.query.udp(dns.message.make_query(name, rdtype), "127.0.0.1", port=p.dns,
                         timeout=8)


def tcp(p, name, rdtype="A"):
    return dns.query.tcp(dns.message.make_query(name, rdtype), "127.0.0.1", port=p.dns,
                         timeout=8)


def dig(p, *args):
    out = subprocess.run(["dig", "@127.0.0.1", "-p", str(p.dns), "+time=8", "+tries=1"]
                         + list(args), capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def records(resp):
    """[(name, type, ttl, data)] of the answer section."""
    return [(rr.name.to_text(), dns.rdatatype.to_text(rr.rdtype), rr.ttl, d.to_text())
            for rr in resp.answer for d in rr]


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_dig_mesh_names(agent):
    out = dig(agent, "catalog.istioinaction.svc.cluster.local", "+noall", "+answer",
              "+comments")
    assert "status: NOERROR" in out and " aa " in out.split("flags:")[1].split(";")[0], out
    ans = [ln.split() for ln in out.splitlines() if ln and not ln.startswith(";")]
    assert ans == [["catalog.istioinaction.svc.cluster.local.", "30", "IN", "A",
                    "10.96.0.20"]], out
    # Istio's alternate names for a client in istioinaction, over UDP and TCP
    for name in ("catalog", "catalog.istioinaction", "catalog.istioinaction.svc"):
        assert dig(agent, name, "+short").split() == ["10.96.0.20"], name
        assert dig(agent, name, "+short", "+tcp").split() == ["10.96.0.20"], name
    # another namespace: name.ns, but not the short name (forwarded: the upstream says no)
    assert dig(agent, "forum.forum-services", "+short").split() == ["10.96.0.30"]
    assert "status: NXDOMAIN" in dig(agent, "forum")


def test_dnspython_search_aaaa_serviceentries(agent, pilot, upstream):
    # the first search domain's expansion: CNAME to the name, then its A record
    r = udp(agent, "catalog.istioinaction.svc.cluster.local.istioinaction.svc.cluster.local.")
    assert records(r) == [
        ("catalog.istioinaction.svc.cluster.local.istioinaction.svc.cluster.local.", "CNAME", 30,
         "catalog.istioinaction.svc.cluster.local."),
        ("catalog.istioinaction.svc.cluster.local.", "A", 30, "10.96.0.20")]
    r = udp(agent, "catalog.istioinaction.istioinaction.svc.cluster.local.")
    assert records(r)[-1] == ("catalog.istioinaction.", "A", 30, "10.96.0.20")
    # a known host has no AAAA: NOERROR, empty, authoritative; not asked upstream
    r = udp(agent, "catalog.istioinaction.svc.cluster.local.", "AAAA")
    assert r.rcode() == dns.rcode.NOERROR and r.answer == [] and r.flags & dns.flags.AA
    assert not any(n.startswith("catalog") for n, _ in upstream.asked)
    # ServiceEntry with an address, and Istio's auto-allocated one
    assert records(tcp(agent, "api.example.test.")) == [("api.example.test.", "A", 30,
                                                          "192.0.2.10")]
    want = istio_auto_ip("istioinaction/db.internal.test")
    assert records(udp(agent, "db.internal.test.")) == [("db.internal.test.", "A", 30, want)]
    nt = json.loads(http_get(pilot.mon, "/debug/ndsz?proxyID=sleep-1.istioinaction")[1])
    assert nt["resource"]["table"]["db.internal.test"] == {"ips": [want],
                                                           "registry": "External"}
    # istiod's registryz shows the allocation on the service
    reg = json.loads(http_get(pilot.mon, "/debug/registryz")[1])
    db = [s for s in reg if s["hostname"] == "db.internal.test"][0]
    assert db["autoAllocatedIPv4Address"] == want
    assert db["autoAllocatedIPv6Address"].startswith("2001:2::f0f0:")
    api = [s for s in reg if s["hostname"] == "api.example.test"][0]
    assert "autoAllocatedIPv4Address" not in api


def test_forwarding_udp_tcp(agent, upstream):
    r = udp(agent, "example.org.")
    assert records(r) == [("example.org.", "A", 300, UPSTREAM_IP)]
    assert not r.flags & dns.flags.AA
    assert records(tcp(agent, "example.org.")) == [("example.org.", "A", 300, UPSTREAM_IP)]
    assert ("example.org.", "udp") in upstream.asked and ("example.org.", "tcp") in upstream.asked
    # the upstream's NXDOMAIN comes back as it is
    assert udp(agent, "nowhere.example.").rcode() == dns.rcode.NXDOMAIN
    # other types of a mesh host are the upstream's too (Istio answers A/AAAA only)
    assert udp(agent, "catalog.istioinaction.svc.cluster.local.", "MX").rcode() == \
        dns.rcode.NXDOMAIN
    assert ("catalog.istioinaction.svc.cluster.local.", "udp") in upstream.asked


def test_next_upstream_and_servfail(proxy_factory, pilot, upstream, monkeypatch,  # noqa: F811
                                    tmp_path):
    dead = free_port()  # nothing listens: TCP is refused at once, the next upstream answers
    p = start_agent(proxy_factory, pilot, monkeypatch, tmp_path,
                    "127.0.0.1:%d,127.0.0.1:%d" % (dead, upstream.port))
    assert records(tcp(p, "example.org.")) == [("example.org.", "A", 300, UPSTREAM_IP)]
    assert "upstream failure: connection refused" in p.stderr_text()
    # over UDP nothing refuses: the first upstream times out (Istio's 5 s), then the next
    t0 = time.monotonic()
    assert records(udp(p, "example.org.")) == [("example.org.", "A", 300, UPSTREAM_IP)]
    assert 4.5 < time.monotonic() - t0 < 8
    assert "upstream failure: i/o timeout" in p.stderr_text()
    upstream.close()  # now none answers over TCP: SERVFAIL
    upstream.udp = upstream.tcp = _Closed()
    assert tcp(p, "example.org.").rcode() == dns.rcode.SERVFAIL


class _Closed:
    def shutdown(self):
        pass

    def server_close(self):
        pass


def test_tcp_several_queries_one_connection(agent, upstream):
    """A TCP client may send queries back to back on one connection; each is answered (a mesh
    name at once, a forwarded one when the upstream answers), matched by id."""
    names = ["catalog.", "example.org.", "api.example.test.", "nowhere.example."]
    msgs = [dns.message.make_query(n, "A") for n in names]
    with socket.create_connection(("127.0.0.1", agent.dns), timeout=8) as s:
        s.sendall(b"".join(len(w).to_bytes(2, "big") + w for w in (m.to_wire() for m in msgs)))
        got = {}
        buf = b""
        while len(got) < len(msgs):
            chunk = s.recv(65536)
            assert chunk, "connection closed after %d answers" % len(got)
            buf += chunk
            while len(buf) >= 2 and len(buf) >= 2 + int.from_bytes(buf[:2], "big"):
                n = int.from_bytes(buf[:2], "big")
                r = dns.message.from_wire(buf[2:2 + n])
                got[r.id] = r
                buf = buf[2 + n:]
    want = {"catalog.": ["10.96.0.20"], "example.org.": [UPSTREAM_IP],
            "api.example.test.": ["192.0.2.10"], "nowhere.example.": []}
    for m in msgs:
        r = got[m.id]
        name = m.question[0].name.to_text()
        assert [d for _, _, _, d in records(r)] == want[name], name


def test_push_updates_table(agent, pilot, upstream):
    assert "status: NXDOMAIN" in dig(agent, "webapp.istioinaction.svc.cluster.local")
    (pilot.cfg / "webapp.yaml").write_text(WEBAPP)
    poll(lambda: dig(agent, "webapp", "+short").split() == ["10.96.0.40"], timeout=10)
    assert dig(agent, "webapp.istioinaction.svc.cluster.local", "+short", "+tcp").split() == \
        ["10.96.0.40"]


def test_debug_ndsz(agent, pilot):
    status, body = http_get(pilot.mon, "/debug/ndsz?proxyID=sleep-1.istioinaction")
    assert status == 200, body
    res = json.loads(body)["resource"]
    assert res["@type"] == "type.googleapis.com/istio.networking.nds.v1.NameTable"
    assert res["table"]["catalog.istioinaction.svc.cluster.local"] == {
        "ips": ["10.96.0.20"], "registry": "Kubernetes", "shortname": "catalog",
        "namespace": "istioinaction"}
    assert res["table"]["api.example.test"] == {"ips": ["192.0.2.10"], "registry": "External"}
    assert http_get(pilot.mon, "/debug/ndsz")[0] == 400
    assert http_get(pilot.mon, "/debug/ndsz?proxyID=nobody.nowhere")[0] == 404
    assert "/debug/ndsz" in http_get(pilot.mon, "/debug")[1]
    # the agent's view (pilot-agent's status port): the same table, without @type
    status, body = http_get(agent.status, "/debug/ndsz")
    assert status == 200, body
    assert json.loads(body) == {"table": res["table"]}
    # pilot counts NDS pushes like the other types
    line = [ln for ln in http_get(pilot.mon, "/metrics")[1].splitlines()
            if ln.startswith('pilot_xds_pushes{type="nds"} ')]
    assert line and int(line[0].split()[1]) >= 1, line


def test_no_capture_no_dns(proxy_factory, pilot, monkeypatch):  # noqa: F811
    """Without DNS_CAPTURE the proxy neither serves DNS nor asks for NDS, and pilot says so."""
    port = free_port()
    monkeypatch.setenv("DNS_PROXY_ADDR", "127.0.0.1:%d" % port)
    status = free_port()
    p = proxy_factory(sidecar_bootstrap(pilot.xds, capture=False),
                      args=["--status-address", "127.0.0.1:%d" % status])
    poll(lambda: http_get(pilot.mon, "/debug/ndsz?proxyID=sleep-1.istioinaction")[0] == 400)
    assert "DNS capture is not enabled" in \
        http_get(pilot.mon, "/debug/ndsz?proxyID=sleep-1.istioinaction")[1]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    assert http_get(status, "/debug/ndsz")[0] == 404
    assert p.proc.poll() is None


def test_dns_address_taken_exits_1(pilot, tmp_path):
    """The DNS proxy's address is taken (another pod's agent on a shared loopback): the proxy
    logs it as critical and exits 1, a start failure a supervisor can tell from a clean stop
    (it exited 0 before)."""
    from proxyfix import proxy_path
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        resolv = tmp_path / "resolv.conf"
        resolv.write_text("nameserver 192.0.2.53\n")
        bs = sidecar_bootstrap(pilot.xds)
        bs.pop("_weft_auto_admin", None)
        bs["admin"]["address"]["socket_address"]["port_value"] = free_port()
        cfg = tmp_path / "bootstrap.json"
        cfg.write_text(json.dumps(bs))
        env = dict(os.environ, DNS_PROXY_ADDR="127.0.0.1:%d" % port,
                   WEFT_DNS_RESOLV_CONF=str(resolv))
        p = subprocess.run([proxy_path(), "-c", str(cfg), "--concurrency", "1"],
                           capture_output=True, text=True, timeout=30, env=env)
    finally:
        taken.close()
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    assert "failed to start local DNS server" in p.stderr, p.stderr[-2000:]
