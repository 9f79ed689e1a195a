"""envoy.filters.listener.tls_inspector on a weft-proxy listener, driven by real clients:
`openssl s_client` sends a real ClientHello (with -servername and -alpn) and `curl` plaintext
HTTP. The filter chain match then picks the chain by the detected transport protocol, SNI and
ALPN (Envoy's FilterChainMatch transport_protocol / server_names / application_protocols),
each chain's connection manager counting under its own http.<stat_prefix>.*; the bytes the
inspector read are not lost (a plaintext request is answered whole); the tls_inspector.* stats
and the listener's listener-filter stats are Envoy's; listener_filters_timeout closes a silent
connection (downstream_pre_cx_timeout), or with continue_on_listener_filters_timeout lets it
through to the plaintext chain.

TLS is not terminated here (a chain with a TLS transport socket is another test): a TLS
connection routed to a plaintext connection manager is answered with a codec error, which is
enough to see which chain took it.
"""
import copy
import socket
import subprocess
import time

import pytest

from procs import running_apps
from proxyfix import (bootstrap, cluster, listener, proxy_factory, proxy_path,  # noqa: F401
                      simple_routes)


@pytest.fixture(scope="module")
def apps():
    with running_apps("a", "b") as ports:
        yield ports


def chain(cluster_name, stat_prefix, match=None):
    lst = listener(simple_routes(cluster_name), stat_prefix=stat_prefix)
    fc = copy.deepcopy(lst["filter_chains"][0])
    if match is not None:
        fc["filter_chain_match"] = match
    return fc


def inspected_listener(chains, **extra):
    lst = listener(simple_routes("a"))
    lst["listener_filters"] = [{
        "name": "envoy.filters.listener.tls_inspector",
        "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.listener."
                                  "tls_inspector.v3.TlsInspector",
                         "initial_read_buffer_size": 512}}]
    lst["filter_chains"] = chains
    lst.update(extra)
    return lst


def s_client(port, servername=None, alpn=None):
    """A real TLS ClientHello from openssl s_client; returns once the proxy closed."""
    cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-quiet"]
    if servername:
        cmd += ["-servername", servername]
    if alpn:
        cmd += ["-alpn", alpn]
    return subprocess.run(cmd, input=b"", capture_output=True, timeout=10)


def curl(port, path="/healthz"):
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5",
                        "-H", "Host: x", "http://127.0.0.1:%d%s" % (port, path)],
                       capture_output=True, text=True, timeout=10)
    return r.stdout


@pytest.fixture
def routed(apps, proxy_factory):
    lst = inspected_listener([
        chain("a", "plain", {"transport_protocol": "raw_buffer"}),
        chain("b", "sni_a", {"transport_protocol": "tls", "server_names": ["a.example"]}),
        chain("b", "tls_h2", {"transport_protocol": "tls", "application_protocols": ["h2"]}),
        chain("b", "tls_any", {"transport_protocol": "tls"}),
    ])
    return proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]]),
                                           cluster("b", [apps["b"]])]))


def test_plaintext_goes_to_raw_buffer_chain_whole(routed):
    # the bytes the inspector read are replayed to the connection manager: answered whole
    assert curl(routed.port) == "200"
    assert curl(routed.port) == "200"
    st = routed.wait_stat("http.plain.downstream_rq_completed", 2)
    assert st["tls_inspector.tls_not_found"] == 2
    assert st["tls_inspector.tls_found"] == 0
    assert st["http.sni_a.downstream_cx_total"] == 0


def test_large_plaintext_request_survives_inspection(routed):
    # a head bigger than the inspector's first read (512 B) and a body: nothing is lost
    s = socket.create_connection(("127.0.0.1", routed.port), timeout=5)
    body = b"x" * 20000
    s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 3000 +
              b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    st = routed.wait_stat("http.plain.downstream_rq_completed", 1)
    assert st["http.plain.downstream_rq_2xx"] == 1


def test_client_hello_sni_selects_chain(routed):
    s_client(routed.port, servername="A.Example")
    st = routed.wait_stat("http.sni_a.downstream_cx_total", 1)
    assert st["tls_inspector.tls_found"] == 1
    assert st["tls_inspector.sni_found"] == 1
    assert st["http.tls_any.downstream_cx_total"] == 0


def test_client_hello_alpn_selects_chain(routed):
    s_client(routed.port, servername="other.example", alpn="h2,http/1.1")
    st = routed.wait_stat("http.tls_h2.downstream_cx_total", 1)
    assert st["tls_inspector.alpn_found"] == 1
    s_client(routed.port, servername="other.example")
    st = routed.wait_stat("http.tls_any.downstream_cx_total", 1)
    assert st["tls_inspector.alpn_not_found"] == 1
    assert st["tls_inspector.tls_found"] == 2


def test_no_chain_for_tls_closes(apps, proxy_factory):
    lst = inspected_listener([chain("a", "plain", {"transport_protocol": "raw_buffer"})])
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    s_client(proxy.port, servername="a.example")
    lis = "listener.127.0.0.1_%d." % proxy.port
    st = proxy.wait_stat(lis + "no_filter_chain_match", 1)
    assert st["tls_inspector.tls_found"] == 1
    assert curl(proxy.port) == "200"


def test_listener_filters_timeout_closes_silent_connection(apps, proxy_factory):
    lst = inspected_listener([chain("a", "plain")], listener_filters_timeout="0.2s")
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    lis = "listener.127.0.0.1_%d." % proxy.port
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    assert s.recv(100) == b""  # closed by the proxy after the timeout, nothing written
    s.close()
    st = proxy.wait_stat(lis + "downstream_pre_cx_timeout", 1)
    assert st[lis + "downstream_pre_cx_active"] == 0
    assert st[lis + "downstream_cx_total"] == 0


def test_continue_on_listener_filters_timeout(apps, proxy_factory):
    lst = inspected_listener([chain("a", "plain", {"transport_protocol": "raw_buffer"})],
                             listener_filters_timeout="0.2s",
                             continue_on_listener_filters_timeout=True)
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    lis = "listener.127.0.0.1_%d." % proxy.port
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    time.sleep(0.5)  # the timeout passes: the connection goes on as plaintext
    proxy.wait_stat(lis + "downstream_pre_cx_timeout", 1)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = s.recv(65536)
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data
    proxy.wait_stat("http.plain.downstream_rq_completed", 1)


def test_peer_closing_during_inspection_is_counted(apps, proxy_factory):
    lst = inspected_listener([chain("a", "plain")])
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    lis = "listener.127.0.0.1_%d." % proxy.port
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    s.sendall(b"\x16\x03\x01")  # the start of a TLS record, then gone
    s.close()
    st = proxy.wait_stat(lis + "downstream_listener_filter_remote_close", 1)
    assert st[lis + "downstream_pre_cx_active"] == 0


def test_drain_during_inspection_leaves_no_gauge(apps, proxy_factory):
    """A connection still being inspected when the listeners drain is closed, and the
    downstream_pre_cx_active gauge comes back to 0 (the close path, not only the inspector's
    own endings, gives the gauge back)."""
    lst = inspected_listener([chain("a", "plain")])
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    lis = "listener.127.0.0.1_%d." % proxy.port
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    proxy.wait_stat(lis + "downstream_pre_cx_active", 1)
    proxy.admin("/drain_listeners", method="POST")
    assert s.recv(100) == b""  # closed without an answer
    s.close()
    st = proxy.wait_stat(lis + "downstream_pre_cx_active", 0)
    assert st[lis + "downstream_pre_cx_active"] == 0
