"""Istio's protocol sniffing on a weft-proxy listener (reference protocols.md §1.2–§1.4): a
static bootstrap with the listener istiod builds for an unnamed Service port — the
envoy.filters.listener.http_inspector listener filter, the HTTP connection manager under
{transport_protocol: raw_buffer, application_protocols: [http/1.1, h2c]}, the TCP proxy as
default_filter_chain, continue_on_listener_filters_timeout — driven by real clients: curl over
HTTP/1.1 and with --http2-prior-knowledge (the HTTP chain, seen in the access log's route and
protocol), a line-based TCP client (the TCP chain), a server-first protocol (the server speaks
first: the inspector waits for the detection timeout, then the TCP chain proxies it), and the
http_inspector.* stats.
"""
import socket
import socketserver
import subprocess
import threading
import time

import pytest

from procs import running_apps
from proxyfix import (LOG, access_log, bootstrap, cluster, listener, proxy_factory,  # noqa: F401
                      proxy_path, simple_routes)

HTTP_LOG = "HTTP %ROUTE_NAME% %PROTOCOL% %RESPONSE_CODE% %UPSTREAM_CLUSTER%\n"
TCP_LOG = "TCP %UPSTREAM_CLUSTER% %BYTES_RECEIVED% %BYTES_SENT% %RESPONSE_FLAGS%\n"
HI_TYPE = "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector"
TCP_TYPE = "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
FILE_LOG_TYPE = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"


class _Line(socketserver.BaseRequestHandler):
    """A line server: answers "PONG <line>" to each line; in "greet" mode it speaks first
    ("220 ready", as SMTP or MySQL servers do)."""

    def handle(self):
        conn = self.request
        conn.settimeout(10)
        if self.server.greet:
            conn.sendall(b"220 ready\r\n")
        buf = b""
        while True:
            try:
                data = conn.recv(4096)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                conn.sendall(b"PONG " + line.rstrip(b"\r") + b"\r\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture(scope="module")
def line_servers():
    servers = {}
    for greet in (False, True):
        srv = _Server(("127.0.0.1", 0), _Line)
        srv.greet = greet
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers["greet" if greet else "line"] = srv
    yield {k: s.server_address[1] for k, s in servers.items()}
    for s in servers.values():
        s.shutdown()
        s.server_close()


@pytest.fixture(scope="module")
def app():
    with running_apps("web") as ports:
        yield ports["web"]


def sniffing_listener(timeout="0s"):
    """The listener istiod generates for a sniffed port (pilot/sniff.h)."""
    lst = listener(simple_routes("web", name="sniffed-route"), stat_prefix="outbound_sniffed",
                   access_logs=[access_log(fmt=HTTP_LOG)])
    lst["filter_chains"][0]["filter_chain_match"] = {
        "transport_protocol": "raw_buffer", "application_protocols": ["http/1.1", "h2c"]}
    lst["default_filter_chain"] = {"filters": [{
        "name": "envoy.filters.network.tcp_proxy",
        "typed_config": {"@type": TCP_TYPE, "stat_prefix": "sniffed_tcp", "cluster": "tcpsrv",
                         "access_log": [access_log(fmt=TCP_LOG)]}}]}
    lst["listener_filters"] = [{"name": "envoy.filters.listener.http_inspector",
                                "typed_config": {"@type": HI_TYPE}}]
    lst["listener_filters_timeout"] = timeout
    lst["continue_on_listener_filters_timeout"] = True
    return lst


def start(proxy_factory, app, tcp_port, timeout="0s"):
    return proxy_factory(bootstrap([sniffing_listener(timeout)],
                                   [cluster("web", [app]), cluster("tcpsrv", [tcp_port])]))


def curl(port, *extra):
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                        "-m", "5", "-H", "Host: web"] + list(extra) +
                       ["http://127.0.0.1:%d/healthz" % port],
                       capture_output=True, text=True, timeout=10)
    return r.stdout


def test_http11_takes_the_http_chain(app, line_servers, proxy_factory):
    p = start(proxy_factory, app, line_servers["line"])
    assert curl(p.port, "--http1.1") == "200 1.1"
    assert p.access_log_lines(1)[0] == "HTTP sniffed-route HTTP/1.1 200 web"
    st = p.wait_stat("http_inspector.http11_found", 1)
    assert st["http_inspector.http2_found"] == 0
    assert st["http_inspector.http_not_found"] == 0
    assert st["tcp.sniffed_tcp.downstream_cx_total"] == 0


def test_h2_prior_knowledge_takes_the_http_chain(app, line_servers, proxy_factory):
    p = start(proxy_factory, app, line_servers["line"])
    assert curl(p.port, "--http2-prior-knowledge") == "200 2"
    assert p.access_log_lines(1)[0] == "HTTP sniffed-route HTTP/2 200 web"
    st = p.wait_stat("http_inspector.http2_found", 1)
    assert st["http_inspector.http11_found"] == 0


def test_line_protocol_takes_the_tcp_chain(app, line_servers, proxy_factory):
    p = start(proxy_factory, app, line_servers["line"])
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"PING\r\n")
    assert s.recv(100) == b"PONG PING\r\n"
    s.sendall(b"GET / HTTP/1.1\r\n")  # later bytes are opaque: the chain is chosen
    assert s.recv(100) == b"PONG GET / HTTP/1.1\r\n"
    s.close()
    st = p.wait_stat("http_inspector.http_not_found", 1)
    assert st["http_inspector.http11_found"] == 0
    assert st["tcp.sniffed_tcp.downstream_cx_total"] == 1
    line = p.access_log_lines(1)[0]
    assert line.startswith("TCP tcpsrv "), line


def test_http10_is_not_matched_and_goes_to_tcp(app, line_servers, proxy_factory):
    # Istio matches only http/1.1 and h2c (without PILOT_HTTP10): HTTP/1.0 is proxied as TCP
    p = start(proxy_factory, app, line_servers["line"])
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    s.sendall(b"GET / HTTP/1.0\r\n")
    assert s.recv(100) == b"PONG GET / HTTP/1.0\r\n"
    s.close()
    st = p.wait_stat("http_inspector.http10_found", 1)
    assert st["tcp.sniffed_tcp.downstream_cx_total"] == 1


def test_server_first_waits_for_the_detection_timeout(app, line_servers, proxy_factory):
    p = start(proxy_factory, app, line_servers["greet"], timeout="0.5s")
    lis = "listener.127.0.0.1_%d." % p.port
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
    greeting = s.recv(100)  # the client waits for the server to speak first
    waited = time.monotonic() - t0
    assert greeting == b"220 ready\r\n"
    assert waited >= 0.45, waited  # nothing reached the server before the timeout
    s.sendall(b"HELO x\r\n")
    assert s.recv(100) == b"PONG HELO x\r\n"
    s.close()
    st = p.wait_stat(lis + "downstream_pre_cx_timeout", 1)
    assert st["tcp.sniffed_tcp.downstream_cx_total"] == 1
    assert st["http_inspector.http_not_found"] == 0


def test_server_first_without_timeout_hangs(app, line_servers, proxy_factory):
    # Istio's default protocolDetectionTimeout 0s: the inspector waits for client bytes forever
    p = start(proxy_factory, app, line_servers["greet"], timeout="0s")
    s = socket.create_connection(("127.0.0.1", p.port), timeout=1.5)
    with pytest.raises(socket.timeout):
        s.recv(100)
    s.close()
    st = p.stats()
    assert st["tcp.sniffed_tcp.downstream_cx_total"] == 0
