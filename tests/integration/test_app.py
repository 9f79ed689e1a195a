"""weft-app, the test backend: every endpoint over real sockets (src/app/app.h lists them).

The binary is $WEFT_APP, else build/weft-app. Every app is started on 127.0.0.1:0 and
stopped with SIGTERM by the fixture, which then checks exit status 0 and a stderr free of
sanitizer reports. Every socket operation has a timeout.
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import struct
import subprocess
import time

import pytest

from procs import RawReader, app_path, crash_report, hwm_kb, rss_kb, start_app, stop_process

TIMEOUT = 10
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"
MB = 1024 * 1024


@pytest.fixture
def app():
    """Factory: app(*args) starts weft-app and returns (proc, port); all are stopped after."""
    if not os.access(app_path(), os.X_OK):
        pytest.fail("%s is missing: build weft-app or set WEFT_APP" % app_path())
    procs = []

    def start(*args):
        proc, port = start_app(*args)
        procs.append(proc)
        return proc, port

    yield start
    for proc in procs:
        rc = stop_process(proc)
        assert crash_report(proc) is None, crash_report(proc)
        assert rc == 0, proc.stderr_text()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


class Reader(RawReader):
    """Reads HTTP/1.1 responses from a raw socket (Content-Length, chunked or none)."""

    def response(self, head=False):
        """(status, [(name, value)], body, chunk_sizes)."""
        status = int(self.line().split(b" ")[1])
        headers = []
        while True:
            line = self.line()
            if not line:
                break
            name, _, value = line.partition(b":")
            headers.append((name.decode().lower(), value.strip().decode()))
        h = dict(headers)
        body, chunks = [], []
        if head or status < 200 or status in (204, 304):
            pass
        elif h.get("transfer-encoding") == "chunked":
            while True:
                size = int(self.line().split(b";")[0], 16)
                chunks.append(size)
                if size == 0:
                    while self.line():
                        pass
                    break
                body.append(self.exact(size))
                assert self.exact(2) == b"\r\n"
        else:
            body.append(self.exact(int(h["content-length"])))
        return status, headers, b"".join(body), chunks

    def eof(self):
        """True when the peer closed (clean EOF or reset) with nothing more to read."""
        if self.buf:
            return False
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def get(port, path, method="GET", body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.getheaders(), r.read()
    finally:
        c.close()


def hdr(headers, name):
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def expected_bytes(n):
    return (PATTERN * (n // 64 + 1))[:n]


# ---- plain endpoints ----


def test_healthz_names_the_app_and_pod(app):
    _, port = app("--name", "reviews-v1", "--pod", "reviews-v1-0")
    status, headers, body = get(port, "/healthz")
    assert (status, body) == (200, b"ok")
    assert hdr(headers, "content-length") == "2"
    assert hdr(headers, "x-weft-app") == "reviews-v1"
    assert hdr(headers, "x-weft-pod") == "reviews-v1-0"


def test_unnamed_app_sends_no_name_header_and_404s_unknown_paths(app):
    _, port = app()
    status, headers, body = get(port, "/nope")
    assert (status, body) == (404, b"not found\n")
    assert hdr(headers, "x-weft-app") is None


@pytest.mark.parametrize("code", [200, 201, 404, 418, 503, 599])
def test_status_with_body(app, code):
    _, port = app()
    status, headers, body = get(port, "/status/%d" % code)
    assert (status, body) == (code, b"status %d\n" % code)


@pytest.mark.parametrize("code", [204, 304])
def test_status_without_body_keeps_the_connection(app, code):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET /status/%d HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
              % code)
    status, headers, body, _ = r.response()
    assert status == code and body == b""
    assert "content-length" not in dict(headers)
    assert r.response()[2] == b"ok"
    s.close()


@pytest.mark.parametrize("path", ["/status/100", "/status/102", "/status/99", "/status/600",
                                  "/status/abc"])
def test_bad_status_code_is_400(app, path):
    _, port = app()
    status, _, body = get(port, path)
    assert (status, body) == (400, b"bad status code\n")


def test_head_gets_length_without_body(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"HEAD /bytes/1000 HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    status, headers, body, _ = r.response(head=True)
    assert status == 200 and dict(headers)["content-length"] == "1000"
    assert r.response()[2] == b"ok"  # no stray body bytes came before it
    s.close()


# ---- connections ----


def test_keep_alive_reuses_one_connection(app):
    _, port = app()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    c.connect()
    sock = c.sock
    for path in ("/healthz", "/status/201", "/echo"):
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        assert r.getheader("connection") is None
    assert c.sock is sock
    c.close()


def test_pipelined_requests_answered_in_order(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    reqs = (b"GET /delay/150 HTTP/1.1\r\nHost: a\r\n\r\n"
            b"GET /status/201 HTTP/1.1\r\nHost: a\r\n\r\n"
            b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
            b"GET /bytes/100000 HTTP/1.1\r\nHost: a\r\n\r\n"
            b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    s.sendall(reqs)
    got = [r.response() for _ in range(5)]
    assert [g[0] for g in got] == [200, 201, 200, 200, 200]
    assert got[0][2] == b"delayed 150\n"
    assert got[2][2] == b"received=5\n"
    assert got[3][2] == expected_bytes(100000)
    assert dict(got[4][1])["connection"] == "close"
    assert r.eof()
    s.close()


def test_absolute_form_target_is_routed_on_its_path(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET http://reviews:9080/status/202?x=1 HTTP/1.1\r\nHost: reviews\r\n\r\n"
              b"GET http://reviews HTTP/1.1\r\nHost: reviews\r\n\r\n")
    assert r.response()[:3:2] == (202, b"status 202\n")
    assert r.response()[0] == 404
    s.close()


def test_http10_closes_unless_keep_alive(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    status, headers, body, _ = r.response()
    assert (status, body, dict(headers)["connection"]) == (200, b"ok", "keep-alive")
    s.sendall(b"GET /chunked/20 HTTP/1.0\r\n\r\n")
    status, headers, body, chunks = r.response()
    h = dict(headers)
    assert (h["connection"], h["content-length"], chunks) == ("close", "20", [])
    assert body == expected_bytes(20)
    assert r.eof()
    s.close()


def test_bad_request_gets_400_and_close(app):
    _, port = app("--name", "n1")
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n")
    status, headers, body, _ = r.response()
    assert status == 400 and dict(headers)["connection"] == "close"
    assert dict(headers)["x-weft-app"] == "n1"
    assert body.startswith(b"http1.")
    assert r.eof()
    s.close()


def test_oversized_head_gets_431(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\nx-big: " + b"a" * 70000 + b"\r\n\r\n")
    status, headers, _, _ = r.response()
    assert status == 431 and dict(headers)["connection"] == "close"
    s.close()


def test_idle_timeout_closes_idle_keep_alive_connections(app):
    _, port = app("--idle-timeout-ms", "300")
    busy, idle = connect(port), connect(port)
    rb, ri = Reader(busy), Reader(idle)
    idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    assert ri.response()[0] == 200
    start = time.monotonic()
    for _ in range(6):  # 600 ms of activity, never idle for 300 ms
        busy.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        assert rb.response()[0] == 200
        time.sleep(0.1)
    assert ri.eof()  # closed by now
    assert 0.25 < time.monotonic() - start
    busy.sendall(b"GET /delay/500 HTTP/1.1\r\nHost: a\r\n\r\n")  # in progress is not idle
    assert rb.response()[2] == b"delayed 500\n"
    busy.close()
    idle.close()


def test_no_idle_timeout_by_default(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    time.sleep(0.5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    assert r.response()[0] == 200
    s.close()


# ---- delays, hang-ups, counts ----


def test_delay_uses_a_timer_not_a_sleep(app):
    _, port = app()
    socks = [connect(port) for _ in range(3)]
    start = time.monotonic()
    for s in socks:
        s.sendall(b"GET /delay/400 HTTP/1.1\r\nHost: a\r\n\r\n")
    for s in socks:
        assert Reader(s).response()[2] == b"delayed 400\n"
        s.close()
    elapsed = time.monotonic() - start
    assert 0.39 <= elapsed < 1.0  # concurrent, not 3 x 400 ms


def test_latency_range_delays_every_request(app):
    _, port = app("--latency-ms", "150-200", "--seed", "7")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    for _ in range(3):
        start = time.monotonic()
        c.request("GET", "/healthz")
        assert c.getresponse().read() == b"ok"
        assert 0.14 <= time.monotonic() - start < 0.6
    c.close()


def test_hangup_closes_without_answer(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"POST /hangup HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
    assert r.eof()
    s.close()
    assert get(port, "/healthz")[0] == 200


def _read_until_reset(s):
    """Reads until the peer ends the connection: (bytes read, True when it was a reset)."""
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, False
        data += chunk


@pytest.mark.parametrize("n", [1000, 200000])
def test_reset_sends_part_of_the_body_then_a_tcp_reset(app, n):
    _, port = app()
    s = connect(port)
    # a pipelined second request must not be answered: the connection is reset first
    s.sendall(b"GET /reset/%d HTTP/1.1\r\nHost: a\r\n\r\n"
              b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n" % n)
    data, reset = _read_until_reset(s)
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"Content-Length: %d" % (2 * n) in head
    assert reset, "the connection ended with a FIN, not a reset"
    # the bytes sent before the reset are the start of the /bytes pattern; on loopback they
    # arrive unless the reset overtakes them (never more than n)
    assert len(body) <= n and body == expected_bytes(len(body))
    assert b"/healthz" not in body and b"HTTP/1.1 200 OK\r\nContent-Length: 2" not in body
    assert get(port, "/healthz")[0] == 200


def test_reset_to_head_request_sends_the_head_then_resets(app):
    _, port = app()
    s = connect(port)
    s.sendall(b"HEAD /reset/10 HTTP/1.1\r\nHost: a\r\n\r\n")
    data, reset = _read_until_reset(s)
    s.close()
    assert data.startswith(b"HTTP/1.1 200 ") and b"Content-Length: 20" in data
    assert data.endswith(b"\r\n\r\n") and reset


def test_hangup_first_then_serves_and_counts(app):
    _, port = app("--hangup-first", "2")
    for _ in range(2):
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            get(port, "/healthz")
    assert get(port, "/healthz")[2] == b"ok"
    assert json.loads(get(port, "/count")[2]) == {"requests": 3}
    assert json.loads(get(port, "/count/reset")[2]) == {"requests": 3}
    assert json.loads(get(port, "/count")[2]) == {"requests": 0}
    get(port, "/nope")
    assert json.loads(get(port, "/count")[2]) == {"requests": 1}


# ---- bodies ----


def test_upload_content_length_and_chunked(app):
    _, port = app()
    assert get(port, "/upload", "PUT", body=b"x" * 100000)[2] == b"received=100000\n"
    s = connect(port)
    r = Reader(s)
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\n")
    assert r.response()[2] == b"received=8\n"
    s.close()


def test_expect_continue_gets_100_first(app):
    _, port = app()
    s = connect(port)
    r = Reader(s)
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
    assert r.response()[0] == 100
    s.sendall(b"abcd")
    assert r.response()[2] == b"received=4\n"
    s.close()


def test_echo_reports_request_as_received(app):
    _, port = app("--name", "echo")
    s = connect(port)
    r = Reader(s)
    s.sendall(b"PATCH /echo/x?q=1 HTTP/1.1\r\nHost: svc\r\nX-Forwarded-For: 10.0.0.1\r\n"
              b"x-request-id: abc\r\nX-Quote: a\"b\\c\r\nX-Forwarded-For: 10.0.0.2\r\n"
              b"Content-Length: 7\r\n\r\n1234567")
    status, headers, body, _ = r.response()
    assert status == 200 and dict(headers)["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc == {
        "method": "PATCH", "path": "/echo/x?q=1", "version": "HTTP/1.1",
        "headers": [["Host", "svc"], ["X-Forwarded-For", "10.0.0.1"], ["x-request-id", "abc"],
                    ["X-Quote", "a\"b\\c"], ["X-Forwarded-For", "10.0.0.2"],
                    ["Content-Length", "7"]],
        "body_bytes": 7}
    s.close()


def _measure(proc, fn):
    before = rss_kb(proc.pid)
    fn()
    return hwm_kb(proc.pid) - before


def test_large_upload_streams(app):
    proc, port = app()
    get(port, "/healthz")  # warm up
    size = 50 * MB
    piece = b"u" * MB

    def upload():
        s = connect(port)
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % size)
        for _ in range(size // MB):
            s.sendall(piece)
        assert Reader(s).response()[2] == b"received=%d\n" % size
        s.close()

    assert _measure(proc, upload) < 8 * 1024


def test_large_chunked_upload_streams(app):
    proc, port = app()
    get(port, "/healthz")
    chunk = b"%x\r\n%s\r\n" % (MB, b"c" * MB)

    def upload():
        s = connect(port)
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(50):
            s.sendall(chunk)
        s.sendall(b"0\r\n\r\n")
        assert Reader(s).response()[2] == b"received=%d\n" % (50 * MB)
        s.close()

    assert _measure(proc, upload) < 8 * 1024


def _download(port, path, slow=False):
    s = connect(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % path.encode())
    r = Reader(s)
    if slow:  # a stalled reader: the server must wait, not queue
        time.sleep(0.5)
    result = r.response()
    s.close()
    return result


def test_large_download_streams_with_back_pressure(app):
    proc, port = app()
    get(port, "/healthz")
    size = 50 * MB
    out = {}
    grew = _measure(proc, lambda: out.update(r=_download(port, "/bytes/%d" % size, slow=True)))
    status, headers, body, _ = out["r"]
    assert status == 200 and dict(headers)["content-length"] == str(size)
    assert len(body) == size and body == expected_bytes(size)
    assert grew < 8 * 1024


def test_chunked_download(app):
    proc, port = app()
    get(port, "/healthz")
    size = 50 * MB + 12345
    out = {}
    grew = _measure(proc, lambda: out.update(r=_download(port, "/chunked/%d" % size)))
    status, headers, body, chunks = out["r"]
    assert status == 200 and dict(headers)["transfer-encoding"] == "chunked"
    assert "content-length" not in dict(headers)
    assert max(chunks) <= 16384 and chunks[-1] == 0 and sum(chunks) == size
    assert body == expected_bytes(size)
    assert grew < 8 * 1024
    assert _download(port, "/chunked/0")[3] == [0]


# ---- WebSocket ----


def ws_frame(opcode, payload, fin=True, mask=b"\x01\x02\x03\x04"):
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def ws_read(r):
    b0, b1 = r.exact(2)
    assert not b1 & 0x80  # server frames are not masked
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", r.exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", r.exact(8))[0]
    return b0 & 0x80, b0 & 0x0F, r.exact(n)


def ws_connect(port, key=b"dGhlIHNhbXBsZSBub25jZQ=="):
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    return s, r


def test_websocket_echo(app):
    _, port = app("--name", "ws")
    s, r = ws_connect(port)
    status, headers, _, _ = r.response()
    h = dict(headers)
    assert status == 101 and h["upgrade"].lower() == "websocket"
    assert h["sec-websocket-accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455 §1.3 example
    expected = base64.b64encode(hashlib.sha1(b"dGhlIHNhbXBsZSBub25jZQ==" +
                                             b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    assert h["sec-websocket-accept"] == expected.decode()
    s.sendall(ws_frame(1, b"hello"))
    assert ws_read(r) == (0x80, 1, b"hello")
    big = os.urandom(200000)
    s.sendall(ws_frame(2, big[:100], fin=False) + ws_frame(0, big[100:]))
    assert ws_read(r) == (0, 2, big[:100])
    assert ws_read(r) == (0x80, 0, big[100:])
    s.sendall(ws_frame(1, b"x" * 300) + ws_frame(9, b"ping!"))  # 16-bit length, then ping
    assert ws_read(r) == (0x80, 1, b"x" * 300)
    assert ws_read(r) == (0x80, 0xA, b"ping!")
    s.sendall(ws_frame(8, struct.pack("!H", 1000) + b"bye"))
    assert ws_read(r) == (0x80, 8, struct.pack("!H", 1000) + b"bye")
    assert r.eof()
    s.close()


def test_websocket_unmasked_frame_is_a_protocol_error(app):
    _, port = app()
    s, r = ws_connect(port)
    assert r.response()[0] == 101
    s.sendall(b"\x81\x02hi")
    assert ws_read(r) == (0x80, 8, struct.pack("!H", 1002))
    assert r.eof()
    s.close()


def test_websocket_bad_handshake_is_400(app):
    _, port = app()
    assert get(port, "/ws")[0] == 400
    s = connect(port)
    r = Reader(s)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: abc\r\nSec-WebSocket-Version: 8\r\n\r\n")
    status, headers, _, _ = r.response()
    assert status == 400 and dict(headers)["connection"] == "close"
    assert r.eof()
    s.close()


# ---- process ----


def test_ipv6_and_two_listeners(app):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no ::1")
    proc, port = app("--listen", "127.0.0.1:0", "--listen", "[::1]:0")
    line = [x for x in proc.stdout_lines if x.startswith("listening on [::1]:")][0]
    port6 = int(line.rsplit(":", 1)[1])
    c = http.client.HTTPConnection("::1", port6, timeout=TIMEOUT)
    c.request("GET", "/healthz")
    assert c.getresponse().read() == b"ok"
    c.close()
    assert get(port, "/healthz")[2] == b"ok"


def run_app(*args):
    return subprocess.run([app_path(), *args], capture_output=True, timeout=TIMEOUT, text=True)


@pytest.mark.parametrize("args,needle", [
    ([], "--listen"),
    (["--listen", "nowhere"], "nowhere"),
    (["--listen", "127.0.0.1:70000"], "70000"),
    (["--listen", "127.0.0.1:0", "--bogus", "1"], "--bogus"),
    (["--listen", "127.0.0.1:0", "--idle-timeout-ms", "-5"], "--idle-timeout-ms"),
    (["--listen", "127.0.0.1:0", "--latency-ms", "9-3"], "--latency-ms"),
    (["--listen", "127.0.0.1:0", "--name"], "--name"),
])
def test_bad_flags_exit_2(args, needle):
    if not os.access(app_path(), os.X_OK):
        pytest.fail("%s is missing" % app_path())
    p = run_app(*args)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and "listening" not in p.stdout


def test_help_version_and_busy_port():
    if not os.access(app_path(), os.X_OK):
        pytest.fail("%s is missing" % app_path())
    p = run_app("--help")
    assert p.returncode == 0 and "--listen" in p.stdout
    p = run_app("--version")
    assert p.returncode == 0 and p.stdout.startswith("weft-app ")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        addr = "127.0.0.1:%d" % busy.getsockname()[1]
        p = run_app("--listen", addr)
    assert p.returncode == 1
    assert addr in p.stderr and "address already in use" in p.stderr
