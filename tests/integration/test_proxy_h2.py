"""weft-proxy's downstream HTTP/2 (proxy/http/codec_h2.h, conn_h2.h) with real clients:
curl (--http2-prior-knowledge, --http2 over TLS with ALPN h2), nghttp, h2load and Python's h2
for the edge cases (a tiny flow-control window, RST_STREAM mid-body, GOAWAY on drain, a head
over the limits, malformed frames and connection-specific fields -> GOAWAY PROTOCOL_ERROR).
Requests reach a weft-app HTTP/1.1 backend translated per ../shared/reference/protocols.md
§2.8; each test checks what the client sees and the access log (%PROTOCOL% HTTP/2, flags,
details per §2.5) or the HCM's stats.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from procs import running_apps
from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory, route,
                      route_config, simple_routes, vhost)

assert proxy_factory  # fixture, imported for pytest

h2 = pytest.importorskip("h2", reason="python3-h2 (scripts/setup installs it)")
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.settings  # noqa: E402

LOG = {"protocol": "%PROTOCOL%", "up_protocol": "%UPSTREAM_PROTOCOL%", "code": "%RESPONSE_CODE%", "flags": "%RESPONSE_FLAGS%",
       "details": "%RESPONSE_CODE_DETAILS%", "authority": "%REQ(:AUTHORITY)%",
       "path": "%REQ(:PATH)%", "rx": "%BYTES_RECEIVED%", "tx": "%BYTES_SENT%"}
DTC = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"


@pytest.fixture(scope="module")
def app():
    with running_apps("a") as ports:
        yield ports["a"]


def h2_bootstrap(app_port, tls=None, **hcm):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend",
                                                  timeout="30s")])])
    lst = listener(rc, access_logs=[access_log(json_format=LOG)], **hcm)
    if tls:
        lst["filter_chains"][0]["transport_socket"] = tls
    return bootstrap([lst], [cluster("backend", [app_port])])


def logs(proxy, n):
    return [json.loads(line) for line in proxy.access_log_lines(n)]


def curl(*args, timeout=20):
    r = subprocess.run(["curl", "-sS", "--max-time", "10"] + list(args), capture_output=True,
                       text=True, timeout=timeout)
    return r


def h2_conn(proxy, window=None):
    """A Python h2 client connection (socket, H2Connection) with the preface sent."""
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                             header_encoding="utf-8"))
    c.initiate_connection()
    if window is not None:
        c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
    s.sendall(c.data_to_send())
    return s, c


def pump(s, c, until, timeout=10):
    """Reads and handles events until until(events_so_far) is true; returns the events."""
    events, deadline = [], time.time() + timeout
    while not until(events):
        assert time.time() < deadline, "timed out; events: %r" % events[-10:]
        s.settimeout(max(0.1, deadline - time.time()))
        data = s.recv(65536)
        if not data:
            events.append("EOF")
            break
        events.extend(c.receive_data(data))
        out = c.data_to_send()
        if out:
            s.sendall(out)
    return events


def req_headers(proxy, path, method="GET", extra=()):
    return [(":method", method), (":scheme", "http"),
            (":authority", "svc.example:%d" % proxy.port), (":path", path)] + list(extra)


def has(cls, stream_id=None):
    def f(events):
        return any(isinstance(e, cls) and (stream_id is None or
                                           getattr(e, "stream_id", None) == stream_id)
                   for e in events if e != "EOF") or "EOF" in events
    return f


# ---------- curl ----------

def test_curl_prior_knowledge(app, proxy_factory):
    p = proxy_factory(h2_bootstrap(app))
    r = curl("--http2-prior-knowledge", "-w", "\n%{http_version} %{http_code}",
             "-H", "cookie: a=1", "-H", "cookie: b=2", p.url("/echo"))
    body, _, tail = r.stdout.rpartition("\n")
    assert tail == "2 200", r.stderr
    echo = json.loads(body)
    assert echo["version"] == "HTTP/1.1"  # the upstream leg stays HTTP/1.1
    hdrs = dict(echo["headers"])
    assert hdrs["host"] == "127.0.0.1:%d" % p.port  # :authority -> Host
    assert hdrs["cookie"] == "a=1; b=2"  # joined (protocols.md §2.8)
    r = curl("--http2-prior-knowledge", "--data-binary", "x" * 100000, p.url("/echo"))
    assert json.loads(r.stdout)["body_bytes"] == 100000
    lines = logs(p, 2)
    assert [(l["protocol"], l["code"], l["flags"], l["details"]) for l in lines] == \
        [("HTTP/2", 200, "-", "via_upstream")] * 2
    assert lines[1]["rx"] == 100000
    assert {l["up_protocol"] for l in lines} == {"HTTP/1.1"}  # no HTTP/2 upstreams yet
    st = p.wait_stat("http.ingress_http.downstream_rq_http2_total", 2)
    assert st["http.ingress_http.downstream_cx_http2_total"] == 2
    assert st["http.ingress_http.downstream_rq_http1_total"] == 0
    assert st["http.ingress_http.downstream_cx_http1_total"] == 0
    st = p.wait_stat("http.ingress_http.downstream_cx_http2_active", 0)  # curl closed them
    assert st["http.ingress_http.downstream_cx_active"] == 0
    assert st["http.ingress_http.downstream_cx_http1_active"] == 0
    assert st["http.ingress_http.downstream_cx_destroy"] == 2
    # HTTP/1.1 on the same AUTO listener stays HTTP/1.1
    r = curl("-w", "\n%{http_version}", p.url("/status/204"))
    assert r.stdout.endswith("1.1")
    assert logs(p, 3)[2]["protocol"] == "HTTP/1.1"


def test_codec_type_http1_and_http2(app, proxy_factory):
    p = proxy_factory(h2_bootstrap(app, codec_type="HTTP2"))
    r = curl("--http2-prior-knowledge", "-w", "%{http_version}", "-o", "/dev/null",
             p.url("/status/200"))
    assert r.stdout == "2"
    r = curl("--http1.1", "-o", "/dev/null", "-w", "%{http_code}", p.url("/status/200"))
    assert r.stdout == "000"  # HTTP/1 bytes on an HTTP/2-only HCM: GOAWAY, closed
    assert goaway_code(p, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n") == 1  # PROTOCOL_ERROR
    p1 = proxy_factory(h2_bootstrap(app, codec_type="HTTP1"))
    r = curl("--http2-prior-knowledge", "-o", "/dev/null", p1.url("/status/200"))
    assert r.returncode != 0  # the preface is no HTTP/1 request
    line = logs(p1, 1)[0]
    assert (line["code"], line["flags"]) == (400, "DPE")


@pytest.fixture(scope="module")
def cert():
    d = tempfile.mkdtemp(prefix="weft-h2-")
    try:
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:P-256", "-nodes", "-keyout", "k.pem", "-out",
                            "c.pem", "-days", "2", "-subj", "/CN=localhost", "-addext",
                            "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                           cwd=d, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        yield os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_curl_tls_alpn(app, cert, proxy_factory):
    tls = {"name": "envoy.transport_sockets.tls", "typed_config": {
        "@type": DTC, "common_tls_context": {
            "tls_certificates": [{"certificate_chain": {"filename": cert[0]},
                                  "private_key": {"filename": cert[1]}}],
            "alpn_protocols": ["h2", "http/1.1"]}}}
    p = proxy_factory(h2_bootstrap(app, tls=tls))
    url = "https://localhost:%d/echo" % p.port
    res = ["--resolve", "localhost:%d:127.0.0.1" % p.port, "--cacert", cert[0]]
    r = curl("--http2", "-w", "\n%{http_version}", *res, url)
    body, _, ver = r.stdout.rpartition("\n")
    assert ver == "2", r.stderr
    assert dict(json.loads(body)["headers"])["x-forwarded-proto"] == "https"
    r = curl("--http1.1", "-w", "\n%{http_version}", *res, url)
    assert r.stdout.endswith("\n1.1"), r.stderr
    assert [l["protocol"] for l in logs(p, 2)] == ["HTTP/2", "HTTP/1.1"]


# ---------- nghttp, h2load ----------

def test_nghttp_concurrent_streams(app, proxy_factory):
    if not shutil.which("nghttp"):
        pytest.fail("nghttp is needed (Debian package nghttp2-client)")
    p = proxy_factory(h2_bootstrap(app))
    r = subprocess.run(["nghttp", "-n", "-s", "-m", "20", p.url("/delay/50")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = logs(p, 20)
    assert {(l["protocol"], l["code"]) for l in lines} == {("HTTP/2", 200)}
    st = p.stats()
    assert st["http.ingress_http.downstream_cx_http2_total"] == 1  # one connection
    assert st["http.ingress_http.downstream_rq_http2_total"] == 20


def test_h2load_smoke(app, proxy_factory):
    if not shutil.which("h2load"):
        pytest.fail("h2load is needed (Debian package nghttp2-client)")
    p = proxy_factory(h2_bootstrap(app))
    r = subprocess.run(["h2load", "-n", "400", "-c", "4", "-m", "32", p.url("/bytes/1024")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "400 succeeded, 0 failed, 0 errored" in r.stdout, r.stdout
    st = p.wait_stat("http.ingress_http.downstream_rq_2xx", 400)
    assert st["http.ingress_http.downstream_cx_http2_total"] == 4


# ---------- Python h2: edge cases ----------

def test_tiny_window_flow_control(app, proxy_factory):
    """The client's 1 KiB window: the proxy sends no more than the window allows (h2 would
    raise a flow-control error) and the whole 300 KiB body arrives as the client opens it."""
    p = proxy_factory(h2_bootstrap(app))
    s, c = h2_conn(p, window=1024)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, req_headers(p, "/bytes/307200"), end_stream=True)
    s.sendall(c.data_to_send())
    got = 0
    deadline = time.time() + 20
    done = False
    while not done:
        assert time.time() < deadline, "got %d bytes" % got
        for e in pump(s, c, lambda ev: len(ev) > 0):
            if isinstance(e, h2.events.DataReceived):
                assert e.flow_controlled_length <= 1024
                got += len(e.data)
                c.acknowledge_received_data(e.flow_controlled_length, sid)
            elif isinstance(e, h2.events.StreamEnded):
                done = True
            assert e != "EOF"
        s.sendall(c.data_to_send())
    assert got == 307200
    s.close()
    assert logs(p, 1)[0]["tx"] == 307200


def rss_kib(proxy):
    with open("/proc/%d/status" % proxy.proc.pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def test_slow_reader_bounded(app, proxy_factory):
    """A client that opens no window past the first 64 KiB of a 64 MiB answer: the proxy
    stops reading the upstream instead of buffering (its memory stays within a few MiB), and
    the answer completes once the client reads."""
    p = proxy_factory(h2_bootstrap(app))
    s, c = h2_conn(p)
    try:
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(p, "/status/200"), end_stream=True)
        s.sendall(c.data_to_send())
        pump(s, c, has(h2.events.StreamEnded, sid))
        before = rss_kib(p)
        size = 64 << 20
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(p, "/bytes/%d" % size), end_stream=True)
        s.sendall(c.data_to_send())
        time.sleep(1.5)  # the client reads nothing
        grown = rss_kib(p) - before
        assert grown < 8 * 1024, "the proxy grew by %d KiB for a stalled client" % grown
        got, deadline = 0, time.time() + 60
        while True:
            assert time.time() < deadline, "got %d bytes" % got
            ev = pump(s, c, lambda e: len(e) > 0)
            assert "EOF" not in ev
            for e in ev:
                if isinstance(e, h2.events.DataReceived):
                    got += len(e.data)
                    c.acknowledge_received_data(e.flow_controlled_length, sid)
            s.sendall(c.data_to_send())
            if any(isinstance(e, h2.events.StreamEnded) for e in ev):
                break
        assert got == size
    finally:
        s.close()


def test_slow_upstream_stops_client(proxy_factory):
    """An upstream that reads nothing: the request body's window stays closed once the kernel's
    and one stream's buffers are full, so the client cannot push its 64 MiB into the proxy."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    held = []
    threading.Thread(target=lambda: held.append(srv.accept()), daemon=True).start()
    p = proxy_factory(h2_bootstrap(srv.getsockname()[1],
                                   http2_protocol_options={"initial_stream_window_size": 65535}))
    s, c = h2_conn(p)
    try:
        before = rss_kib(p)
        size, sent = 64 << 20, 0
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(p, "/upload", "POST", [("content-length", str(size))]))
        s.sendall(c.data_to_send())
        idle_since = time.time()
        while time.time() - idle_since < 1.5 and sent < size:
            n = min(c.local_flow_control_window(sid), 16384, size - sent)
            if n > 0:
                c.send_data(sid, b"x" * n)
                s.sendall(c.data_to_send())
                sent += n
                idle_since = time.time()
                continue
            s.settimeout(0.2)
            try:
                data = s.recv(65536)
            except socket.timeout:
                continue
            assert data, "the proxy closed the connection"
            c.receive_data(data)
            s.sendall(c.data_to_send())
        assert sent < 32 << 20, "the client pushed %d bytes into a stalled upstream" % sent
        grown = rss_kib(p) - before
        assert grown < 8 * 1024, "the proxy grew by %d KiB" % grown
    finally:
        s.close()
        for conn, _ in held:
            conn.close()
        srv.close()


def test_rst_stream_mid_body(app, proxy_factory):
    """A client reset while the request body is arriving: flag DR, code 0, details
    http2.remote_reset (protocols.md §2.5)."""
    p = proxy_factory(h2_bootstrap(app))
    s, c = h2_conn(p)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, req_headers(p, "/upload", "POST", [("content-length", "100000")]))
    c.send_data(sid, b"x" * 1000)
    s.sendall(c.data_to_send())
    time.sleep(0.3)
    c.reset_stream(sid, error_code=8)  # CANCEL
    s.sendall(c.data_to_send())
    line = logs(p, 1)[0]
    assert (line["protocol"], line["code"], line["flags"], line["details"]) == \
        ("HTTP/2", 0, "DR", "http2.remote_reset")
    # the connection carries on
    sid2 = c.get_next_available_stream_id()
    c.send_headers(sid2, req_headers(p, "/status/200"), end_stream=True)
    s.sendall(c.data_to_send())
    ev = pump(s, c, has(h2.events.StreamEnded, sid2))
    assert any(isinstance(e, h2.events.ResponseReceived) and dict(e.headers)[":status"] == "200"
               for e in ev)
    s.close()
    st = p.wait_stat("http.ingress_http.downstream_rq_rx_reset", 1)
    assert st["http2.rx_reset"] == 1  # Envoy's codec stats, rooted at http2.
    # the gauge drops as the closed connection's streams go (a loop turn later)
    assert p.wait_stat("http2.streams_active", 0)["http2.streams_active"] == 0


def test_goaway_on_drain(app, proxy_factory):
    """POST /drain_listeners (the listeners stop; the end of a graceful drain and SIGTERM do the
    same): a GOAWAY (NO_ERROR) reaches the client, the stream in flight finishes with its
    response, then the connection closes."""
    p = proxy_factory(h2_bootstrap(app))
    s, c = h2_conn(p)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, req_headers(p, "/delay/800"), end_stream=True)
    s.sendall(c.data_to_send())
    time.sleep(0.2)
    status, _, _ = p.admin("/drain_listeners", method="POST")
    assert status == 200
    # Python's h2 stops at a GOAWAY: the frames are read as they come
    frames, data, deadline = [], b"", time.time() + 10
    while time.time() < deadline:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    while len(data) >= 9:
        n = int.from_bytes(data[:3], "big")
        ftype, flags, sid_ = data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7fffffff
        frames.append((ftype, flags, sid_, data[9:9 + n]))
        data = data[9 + n:]
    goaways = [(int.from_bytes(f[3][:4], "big"), int.from_bytes(f[3][4:8], "big"))
               for f in frames if f[0] == 7]
    # the shutdown notice (last stream 2^31-1), then the final one (last stream 1): NO_ERROR
    assert goaways == [(2147483647, 0), (sid, 0)], frames
    after = frames[[f[0] for f in frames].index(7):]
    assert any(f[0] == 1 and f[2] == sid for f in after)  # the response's HEADERS
    assert any(f[2] == sid and f[1] & 1 for f in after)  # and its END_STREAM
    line = logs(p, 1)[0]
    assert (line["protocol"], line["code"], line["flags"]) == ("HTTP/2", 200, "-")


def test_idle_timeout_goaway(app, proxy_factory):
    """common_http_protocol_options.idle_timeout on an HTTP/2 connection: GOAWAY NO_ERROR, then
    the close (downstream_cx_idle_timeout)."""
    p = proxy_factory(h2_bootstrap(app, common_http_protocol_options={"idle_timeout": "0.3s"}))
    s, c = h2_conn(p)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, req_headers(p, "/status/200"), end_stream=True)
    s.sendall(c.data_to_send())
    ev = pump(s, c, has(h2.events.ConnectionTerminated))
    codes = [e.error_code for e in ev if isinstance(e, h2.events.ConnectionTerminated)]
    assert codes and set(codes) == {0}  # the shutdown notice and the final GOAWAY
    assert pump(s, c, lambda e: "EOF" in e)[-1] == "EOF"
    s.close()
    p.wait_stat("http.ingress_http.downstream_cx_idle_timeout", 1)


def test_header_list_too_large(app, proxy_factory):
    """A head over max_request_headers_kb resets the stream (http2.too_many_headers); the
    connection stays."""
    p = proxy_factory(h2_bootstrap(app, max_request_headers_kb=2))
    s, c = h2_conn(p)
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, req_headers(p, "/", extra=[("x-big", "v" * 3000)]), end_stream=True)
    s.sendall(c.data_to_send())
    ev = pump(s, c, has(h2.events.StreamReset, sid))
    assert any(isinstance(e, h2.events.StreamReset) for e in ev)
    sid2 = c.get_next_available_stream_id()
    c.send_headers(sid2, req_headers(p, "/status/200"), end_stream=True)
    s.sendall(c.data_to_send())
    ev = pump(s, c, has(h2.events.StreamEnded, sid2))
    assert any(isinstance(e, h2.events.ResponseReceived) for e in ev)
    s.close()
    st = p.wait_stat("http2.header_overflow", 1)
    assert st["http2.tx_reset"] == 1


def raw_goaway(proxy, frames):
    """Sends the preface, SETTINGS and frames (bytes) and returns the GOAWAY error code."""
    return goaway_code(proxy, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
                       b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + frames)


def goaway_code(proxy, raw):
    """Sends raw and returns the error code of the GOAWAY the proxy answers with."""
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    s.sendall(raw)
    data, deadline = b"", time.time() + 10
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    s.close()
    i = 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        if data[i + 3] == 7:  # GOAWAY: last stream id, error code
            return int.from_bytes(data[i + 13:i + 17], "big")
        i += 9 + n
    raise AssertionError("no GOAWAY in %r" % data[:200])


def test_malformed_frames_goaway_protocol_error(app, proxy_factory):
    p = proxy_factory(h2_bootstrap(app))
    # DATA on stream 0
    assert raw_goaway(p, b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x") == 1
    # a connection-specific field: Envoy's default ends the connection (protocols.md §2.2)
    s, c = h2_conn(p)
    c.config.validate_outbound_headers = False
    c.config.normalize_outbound_headers = False
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, req_headers(p, "/", extra=[("connection", "keep-alive")]),
                   end_stream=True)
    s.sendall(c.data_to_send())
    ev = pump(s, c, has(h2.events.ConnectionTerminated))
    assert [e.error_code for e in ev if isinstance(e, h2.events.ConnectionTerminated)] == [1]
    s.close()
    st = p.wait_stat("http.ingress_http.downstream_cx_protocol_error", 2)
    assert st["http2.rx_messaging_error"] == 1
    assert st["http2.goaway_sent"] == 2


# ---------- Istio's metrics ----------

def test_istio_request_protocol_http(app, proxy_factory):
    """Istio labels an HTTP/2 request that is not gRPC request_protocol="http" (as HTTP/1.1);
    the access log says HTTP/2."""
    from test_proxy_istio_metrics import count, server_bs, wait_total
    p = proxy_factory(server_bs(app))
    r = curl("--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
             p.url("/status/201"))
    assert r.stdout == "2 201", r.stderr
    rows = wait_total(p, 1)
    assert count(rows, request_protocol="http", response_code=201, reporter="destination") == 1
    assert " HTTP/2\" 201 " in p.access_log_lines(1)[0]


# ---------- trailers both ways ----------

def test_trailers_both_ways(proxy_factory):
    """The upstream's chunked trailers reach the HTTP/2 client as a trailing HEADERS frame
    (END_STREAM on it); the client's request trailers do not reach the HTTP/1.1 upstream (Envoy's
    HTTP/1 codec sends trailers only with http_protocol_options.enable_trailers)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    seen = []

    def serve():
        conn, _ = srv.accept()
        conn.settimeout(10)
        data = b""
        while b"\r\n0\r\n" not in data or not data.endswith(b"\r\n\r\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        seen.append(data)
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                     b"transfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"
                     b"0\r\ngrpc-status: 0\r\nx-resp-trailer: t\r\n\r\n")
        time.sleep(0.5)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    p = proxy_factory(h2_bootstrap(srv.getsockname()[1]))
    s, c = h2_conn(p)
    try:
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, req_headers(p, "/t", "POST", [("te", "trailers")]))
        c.send_data(sid, b"abc")
        c.send_headers(sid, [("x-req-trailer", "r")], end_stream=True)
        s.sendall(c.data_to_send())
        ev = pump(s, c, has(h2.events.StreamEnded, sid))
    finally:
        s.close()
        srv.close()
    body = b"".join(e.data for e in ev if isinstance(e, h2.events.DataReceived))
    trailers = [dict(e.headers) for e in ev if isinstance(e, h2.events.TrailersReceived)]
    assert body == b"hello"
    assert trailers == [{"grpc-status": "0", "x-resp-trailer": "t"}]
    head, _, rest = seen[0].partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert rest == b"3\r\nabc\r\n0\r\n\r\n"


def grpc_miss_bootstrap(app_port):
    """Only host "other" has routes: a request for any other authority gets the 404 NR local
    reply, in its trailers-only gRPC form for a gRPC request."""
    rc = route_config([vhost("other", ["other"], [route(prefix="/", cluster="backend")])])
    lst = listener(rc, access_logs=[access_log(json_format=LOG)])
    return bootstrap([lst], [cluster("backend", [app_port])])


def test_grpc_local_reply_to_upload_resets_no_error(app, proxy_factory):
    """Envoy ends a stream whose response is complete while its request body still arrives with
    RST_STREAM(NO_ERROR) (its doEndStream; RFC 9113 §8.1), so the client stops sending: curl
    7.88, uploading 4 MiB, no longer waits for a window that never opens (it ends at once; it
    reports its cut upload as error 92, as it does behind Envoy). A request that ended before
    the reply gets no reset."""
    p = proxy_factory(grpc_miss_bootstrap(app))
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"x" * (4 << 20))
        f.flush()
        t0 = time.time()
        r = curl("--http2-prior-knowledge", "-H", "content-type: application/grpc",
                 "--data-binary", "@" + f.name, "-o", "/dev/null", p.url("/pkg.Svc/Call"))
    assert r.returncode in (0, 92), r.stderr  # 28 (timed out) before
    assert time.time() - t0 < 5
    # the frames (Python's h2): open is still sending when the trailers-only HEADERS (END_STREAM)
    # goes out, then RST_STREAM NO_ERROR; done sent its END_STREAM with its head (one write,
    # read before any reply is made): no reset
    s, c = h2_conn(p)
    head = req_headers(p, "/pkg.Svc/Call", "POST", [("content-type", "application/grpc")])
    try:
        done = c.get_next_available_stream_id()
        c.send_headers(done, head)
        c.send_data(done, b"\0\0\0\0\5hello", end_stream=True)
        s.sendall(c.data_to_send())
        ev = pump(s, c, has(h2.events.StreamEnded, done))
        open_ = c.get_next_available_stream_id()
        c.send_headers(open_, head)
        c.send_data(open_, b"\0\0\0\0\5hello")
        s.sendall(c.data_to_send())
        ev += pump(s, c, has(h2.events.StreamReset, open_))
        c.ping(b"12345678")  # anything more for done would come before the PING's answer
        s.sendall(c.data_to_send())
        ev += pump(s, c, has(h2.events.PingAckReceived))
    finally:
        s.close()
    resets = [(e.stream_id, e.error_code) for e in ev if isinstance(e, h2.events.StreamReset)]
    assert resets == [(open_, 0)]
    ended = [e.stream_id for e in ev if isinstance(e, h2.events.StreamEnded)]
    assert ended == [done, open_]
    assert [l["code"] for l in logs(p, 3)] == [200, 200, 200]


def test_grpc_trailers_only_has_no_content_length(app, proxy_factory):
    """A trailers-only gRPC reply over HTTP/2 is one HEADERS frame without content-length, as
    Envoy's (protocols.md §3.2; the child connection's HTTP/1.1 reply has content-length: 0,
    as Envoy's HTTP/1 codec adds it)."""
    p = proxy_factory(grpc_miss_bootstrap(app))
    s, c = h2_conn(p)
    try:
        grpc_sid = c.get_next_available_stream_id()
        c.send_headers(grpc_sid, req_headers(p, "/pkg.Svc/Call", "POST",
                                             [("content-type", "application/grpc")]),
                       end_stream=True)
        plain_sid = c.get_next_available_stream_id()
        c.send_headers(plain_sid, req_headers(p, "/x"), end_stream=True)
        s.sendall(c.data_to_send())
        ev = pump(s, c, lambda evs: has(h2.events.StreamEnded, grpc_sid)(evs) and
                  has(h2.events.StreamEnded, plain_sid)(evs))
    finally:
        s.close()
    heads = {e.stream_id: dict(e.headers) for e in ev if isinstance(e, h2.events.ResponseReceived)}
    assert heads[grpc_sid]["grpc-status"] == "12"
    assert "content-length" not in heads[grpc_sid]
    assert heads[plain_sid][":status"] == "404"
