"""weft-proxy resolves the names of STRICT_DNS and LOGICAL_DNS clusters again every
dns_refresh_rate, as Envoy does (intro/arch_overview/upstream/service_discovery "Strict DNS" and
"Logical DNS", upstream/strict_dns_cluster.cc): when a name's address changes, new requests go
to the new address; when a later resolution fails, the cluster keeps the hosts of the last one
that succeeded; a name that did not resolve at start gets its host once it does
(src/proxy/server/dns_refresh.c).

The proxy runs in a mount namespace of its own whose /etc/hosts is a file of the test's
(bind-mounted; glibc reads it at every lookup), rewritten in place to change the answer. Two
HTTP backends listen on one port at 127.0.0.2 and 127.0.0.3 and answer their own name. Needs
root for the mount namespace (skipped otherwise).
"""
import http.server
import os
import shutil
import socket
import threading
import time

import pytest

from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory,
                      simple_routes)

assert proxy_factory  # fixture, imported for pytest

NAME = "backend.weft-dns.test"
LOG_FMT = "%RESPONSE_CODE% %RESPONSE_FLAGS% %UPSTREAM_HOST%\n"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"),
    reason="needs root and unshare(1) for a mount namespace with its own /etc/hosts")


class Named(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = self.server.name.encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def backends():
    """{"A": server on 127.0.0.2:P, "B": server on 127.0.0.3:P}, one port P."""
    for _ in range(20):
        a = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Named)
        port = a.server_address[1]
        try:
            b = http.server.ThreadingHTTPServer(("127.0.0.3", port), Named)
            break
        except OSError:
            a.server_close()
    else:
        pytest.fail("no port free on both 127.0.0.2 and 127.0.0.3")
    a.name, b.name = "A", "B"
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (a, b)]
    for t in threads:
        t.start()
    yield {"A": a, "B": b, "port": port}
    for s in (a, b):
        s.shutdown()
        s.server_close()


def write_hosts(path, ip):
    """Rewrites the file in place (the bind mount follows the inode). ip: an address, a list
    of them (in this order) or None."""
    ips = [] if ip is None else [ip] if isinstance(ip, str) else ip
    with open(path, "r+") as f:
        f.seek(0)
        f.truncate()
        f.write("127.0.0.1 localhost\n" + "".join("%s %s\n" % (a, NAME) for a in ips))


def start(proxy_factory, tmp_path, port, ip, kind="STRICT_DNS", rate="0.2s", family=None):
    hosts = tmp_path / "hosts"
    hosts.write_text("")
    write_hosts(str(hosts), ip)
    extra = {"dns_lookup_family": family} if family else {}
    c = cluster("backend", [(NAME, port)], type=kind, connect_timeout=1,
                dns_refresh_rate=rate, **extra)
    bs = bootstrap(listeners=[listener(simple_routes("backend"),
                                       access_logs=[access_log(fmt=LOG_FMT)])],
                   clusters=[c])
    wrap = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
            str(hosts)]
    return proxy_factory(bs, wrap=wrap), str(hosts)


def answer(p):
    status, _, body = p.request("GET", "/")
    return status, body


def wait_answer(p, want, timeout=5.0):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = answer(p)
        if got == want:
            return
        time.sleep(0.05)
    pytest.fail("the proxy answered %r, not %r, %.0f s after the change" % (got, want, timeout))


@pytest.mark.parametrize("kind", ["STRICT_DNS", "LOGICAL_DNS"])
def test_changed_address_is_followed_and_kept_on_failure(proxy_factory, tmp_path, backends,
                                                         kind):
    p, hosts = start(proxy_factory, tmp_path, backends["port"], "127.0.0.2", kind)
    assert answer(p) == (200, b"A")
    write_hosts(hosts, "127.0.0.3")
    wait_answer(p, (200, b"B"))
    # /clusters shows the new host, as Envoy's does after the refresh
    status, _, text = p.admin("/clusters")
    assert status == 200
    hosts_now = {l.split("::")[1] for l in text.decode().splitlines()
                 if l.startswith("backend::") and "::health_flags::" in l}
    assert hosts_now == {"127.0.0.3:%d" % backends["port"]}, text
    # the name stops resolving: the last answer's host stays (several refreshes later)
    write_hosts(hosts, None)
    time.sleep(1.0)
    for _ in range(5):
        assert answer(p) == (200, b"B")
    assert "now resolves to 127.0.0.3:%d" % backends["port"] in p.stderr_text()


def test_name_unresolved_at_start_gets_its_host(proxy_factory, tmp_path, backends):
    """No address at start: 503 UH (no host); once the name resolves, requests reach it."""
    p, hosts = start(proxy_factory, tmp_path, backends["port"], None)
    assert answer(p)[0] == 503
    write_hosts(hosts, "127.0.0.2")
    wait_answer(p, (200, b"A"))


def test_no_refresh_before_the_rate(proxy_factory, tmp_path, backends):
    """dns_refresh_rate is honoured: with 30 s the change is not seen within 2 s (a proxy
    that looked up the name per request, or on a fixed short timer, would see it)."""
    p, hosts = start(proxy_factory, tmp_path, backends["port"], "127.0.0.2", rate="30s")
    assert answer(p) == (200, b"A")
    write_hosts(hosts, "127.0.0.3")
    time.sleep(2.0)
    assert answer(p) == (200, b"A")


@pytest.fixture
def backend_v6(backends):
    """A third server, "C", on [::1] at the backends' port (skipped without IPv6 loopback)."""
    class V6(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6
    try:
        c = V6(("::1", backends["port"]), Named)
    except OSError as e:
        pytest.skip("no IPv6 loopback to listen on: %s" % e)
    c.name = "C"
    t = threading.Thread(target=c.serve_forever, daemon=True)
    t.start()
    yield c
    c.shutdown()
    c.server_close()


@pytest.mark.parametrize("family,want", [(None, b"C"), ("AUTO", b"C"), ("V4_PREFERRED", b"A"),
                                         ("V4_ONLY", b"A")])
def test_dns_lookup_family(proxy_factory, tmp_path, backends, backend_v6, family, want):
    """The name has an IPv4 and an IPv6 address (in either order): Envoy's AUTO (the default)
    takes the IPv6 one, V4_PREFERRED and V4_ONLY the IPv4 one."""
    for order in (["127.0.0.2", "::1"], ["::1", "127.0.0.2"]):
        p, _ = start(proxy_factory, tmp_path, backends["port"], order, family=family)
        assert answer(p) == (200, want), order
        p.stop(expect=0)


def test_strict_dns_makes_a_host_of_every_address(proxy_factory, tmp_path, backends):
    """A name with two addresses: STRICT_DNS has two hosts (round robin reaches both, the
    membership gauge says 2); when the name loses one, the refresh leaves one host."""
    p, hosts = start(proxy_factory, tmp_path, backends["port"], ["127.0.0.2", "127.0.0.3"])
    seen = {answer(p) for _ in range(6)}
    assert seen == {(200, b"A"), (200, b"B")}, seen
    assert p.stats()["cluster.backend.membership_total"] == 2
    write_hosts(hosts, "127.0.0.3")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and p.stats()["cluster.backend.membership_total"] != 1:
        time.sleep(0.05)
    assert {answer(p) for _ in range(6)} == {(200, b"B")}


def test_logical_dns_takes_the_first_address(proxy_factory, tmp_path, backends):
    """LOGICAL_DNS: one host, the first address of the answer."""
    p, _ = start(proxy_factory, tmp_path, backends["port"], ["127.0.0.2", "127.0.0.3"],
                 kind="LOGICAL_DNS")
    assert {answer(p) for _ in range(6)} == {(200, b"A")}
    assert p.stats()["cluster.backend.membership_total"] == 1


def test_several_names_each_make_their_hosts(proxy_factory, tmp_path, backends):
    """Endpoints [a name of two addresses, a name that does not resolve, a name of one]: the
    cluster's hosts are the three addresses (the first name's second address was written over
    the endpoints after it, so the third name's host was lost)."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n127.0.0.2 %s\n127.0.0.4 %s\n"
                     "127.0.0.3 other.weft-dns.test\n" % (NAME, NAME))
    port = backends["port"]
    c = cluster("backend", [(NAME, port), ("no-such-host.invalid", port),
                            ("other.weft-dns.test", port)], type="STRICT_DNS", connect_timeout=1)
    bs = bootstrap(listeners=[listener(simple_routes("backend"),
                                       access_logs=[access_log(fmt=LOG_FMT)])],
                   clusters=[c])
    wrap = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts)]
    p = proxy_factory(bs, wrap=wrap)
    status, _, text = p.admin("/clusters")
    assert status == 200
    got = {l.split("::")[1] for l in text.decode().splitlines()
           if l.startswith("backend::") and "::health_flags::" in l}
    assert got == {"127.0.0.%d:%d" % (i, port) for i in (2, 3, 4)}, text
    assert p.stats()["cluster.backend.membership_total"] == 3
