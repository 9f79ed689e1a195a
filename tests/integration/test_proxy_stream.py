"""weft-proxy: streaming bodies, memory bounds, WebSocket, request smuggling, resets.

Every test starts real processes on 127.0.0.1: weft-app backends ($WEFT_APP) and weft-proxy
($WEFT_PROXY, else build/weft-proxy) from an Envoy v3 bootstrap written by the test, with a
JSON access log (Istio's JSON keys, ../shared/reference/envoy-istio-behaviour.md §5.3) that
the tests read back. Names, statuses, flags and detail strings are the reference's (§1, §2,
§6); the HTTP/1 codec detail strings and statuses are those listed in src/http/h1_parser.h.

- Streaming (issue 3 acceptance, operator report B007): 200 MB up and 200 MB down through
  the proxy with its RSS (VmRSS, sampled in a thread while streaming) growing < 16 MB over
  its value after a warm-up; a client that stops reading a 500 MB download leaves the
  proxy's RSS bounded (back-pressure to the upstream), then is logged with DC.
- WebSocket echo through the proxy (101 in the access log).
- Smuggling battery (RFC 9112 §6.3, §11.2; CL.TE, TE.CL, TE.TE): one test per vector, each
  answered 400/431/501, the connection closed, nothing forwarded to the backend (its /count,
  asked on the backend's own port, is unchanged), access log flag DPE and the codec detail.
- B012: /hangup -> 503 UC with Envoy's details and body; the keep-alive idle race with and
  without the cluster's idle_timeout.
- Client disconnect before the response: code 0, DC, upstream connection closed.
- nginx (Debian's) as an upstream; idle keep-alive connection memory (skipped under ASan).

Bootstraps are built and proxies run with tests/integration/proxyfix.py. Every socket
operation has a timeout; every process is stopped by a fixture finalizer, which checks that
it exits 0 on SIGTERM without a sanitizer report (ASan leak reports included).
"""
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest

import proxyfix as pf
from procs import (RawReader, app_path, crash_report, free_port, rss_kb, start_app, stop_process,
                   wait_port)
from proxyfix import proxy_path

TIMEOUT = 10
MB = 1024 * 1024
KB = 1024
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"
CLUSTER = "backend"
STAT_PREFIX = "ingress_http"


# Istio's JSON access log map (reference §5.3): typed values, null when unset.
LOG_FORMAT = dict(pf.ISTIO_JSON_FORMAT)

UC_DETAILS = "upstream_reset_before_response_started{connection_termination}"
UC_BODY = (b"upstream connect error or disconnect/reset before headers. "
           b"reset reason: connection termination")


def under_asan(exe):
    """True when exe is linked against libasan (RSS figures then include ASan's shadow)."""
    try:
        out = subprocess.run(["ldd", exe], capture_output=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"libasan" in out


# ---------------------------------------------------------------- bootstrap and processes

def cluster_json(name, endpoints, idle_timeout=None, typed_options=False):
    """A STATIC cluster (proxyfix.cluster); endpoints is a list of (host, port). idle_timeout
    goes into the cluster's common_http_protocol_options, or with typed_options into
    typed_extension_protocol_options (HttpProtocolOptions, the form Istio generates)."""
    return pf.cluster(name, list(endpoints), connect_timeout="1s", idle_timeout=idle_timeout,
                      typed_options=typed_options)


def bootstrap_json(clusters, log_path=pf.LOG, route_timeout="0s"):
    """Envoy v3 bootstrap (proxyfix builders): one listener, every path to CLUSTER (route
    timeout off by default, as Istio sets it), Istio's JSON access log."""
    lst = pf.listener(pf.simple_routes(CLUSTER, timeout=route_timeout), stat_prefix=STAT_PREFIX,
                      name="ingress",
                      access_logs=[pf.access_log(log_path, json_format=LOG_FORMAT)])
    return pf.bootstrap([lst], clusters, node_id="h8-test", node_cluster="h8")


class Proxy:
    """A running weft-proxy (a proxyfix.Proxy) with the JSON access log read as records."""

    def __init__(self, p):
        self.p = p
        self.proc, self.port, self.admin_port = p.proc, p.port, p.admin_port

    @property
    def pid(self):
        return self.proc.pid

    def stats(self):
        """{name: value} from /stats?format=json (counters and gauges)."""
        return self.p.stats()

    def stat(self, name):
        return self.stats().get(name, 0)

    def log_entries(self):
        """Every complete access log record written so far (parsed JSON lines)."""
        try:
            with open(self.p.access_log_path(), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]

    def wait_entries(self, start, pred=lambda e: True, count=1, timeout=5):
        """Waits until at least `count` records after index `start` satisfy pred; returns them."""
        deadline = time.monotonic() + timeout
        while True:
            got = [e for e in self.log_entries()[start:] if pred(e)]
            if len(got) >= count or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def stop(self):
        """SIGTERM; asserts exit status 0 and no sanitizer report (leaks included)."""
        try:
            self.p.stop(expect=0)
        finally:
            self.p.kill()
            shutil.rmtree(self.p.tmpdir, ignore_errors=True)


def start_proxy(clusters, route_timeout="0s"):
    """Starts weft-proxy (one worker, log flushed every 20 ms, 1 s drain) once /ready."""
    return Proxy(pf.start_proxy(bootstrap_json(clusters, route_timeout=route_timeout), flush_ms=20,
                                args=("-l", "warning", "--drain-time-s", "1")))


def check_app_stopped(proc):
    rc = stop_process(proc)
    report = crash_report(proc)
    assert report is None, "weft-app: sanitizer report:\n%s" % report
    assert rc == 0, "weft-app exited with %s:\n%s" % (rc, proc.stderr_text()[-4000:])


def stop_all(started):
    """Stops (Proxy or weft-app process) objects, newest first; fails with every problem."""
    errors = []
    for obj in reversed(started):
        try:
            if isinstance(obj, Proxy):
                obj.stop()
            else:
                check_app_stopped(obj)
        except (AssertionError, OSError, subprocess.SubprocessError) as e:
            errors.append(str(e))
    assert not errors, "\n".join(errors)


def require_app():
    if not os.access(app_path(), os.X_OK):
        pytest.fail("%s is missing: build weft-app or set WEFT_APP" % app_path())


@pytest.fixture
def procs_factory():
    """Starts backends and proxies for one test; stops and checks them all afterwards."""
    require_app()
    started = []

    class F:
        @staticmethod
        def app(*args):
            proc, port = start_app(*args)
            started.append(proc)
            return proc, port

        @staticmethod
        def proxy(clusters, route_timeout="0s"):
            p = start_proxy(clusters, route_timeout)
            started.append(p)
            return p

    yield F
    stop_all(started)


@pytest.fixture(scope="module")
def env():
    """One backend (weft-app 'b1') and one proxy routing every path to it, for the module."""
    require_app()
    started = []
    try:
        app, app_port = start_app("--name", "b1")
        started.append(app)
        proxy = start_proxy([cluster_json(CLUSTER, [("127.0.0.1", app_port)])])
        started.append(proxy)
        yield Env(proxy, app, app_port)
    finally:
        stop_all(started)


class Env:
    def __init__(self, proxy, app, app_port):
        self.proxy, self.app, self.app_port = proxy, app, app_port

    def backend_count(self):
        """Requests the backend saw (its /count, asked directly on the backend's port)."""
        status, _, body = request(self.app_port, "GET", "/count")
        assert status == 200, body
        return json.loads(body)["requests"]


# ---------------------------------------------------------------- raw HTTP helpers

def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", port))
    return s


class Reader(RawReader):
    """HTTP/1.1 responses from a raw socket (Content-Length, chunked or until close)."""

    def head(self):
        """(status, {lower-case name: value}) of the next response head."""
        status_line = self.line()
        parts = status_line.split(b" ", 2)
        assert parts[0] in (b"HTTP/1.1", b"HTTP/1.0"), status_line
        headers = {}
        while True:
            ln = self.line()
            if not ln:
                break
            name, _, value = ln.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        return int(parts[1]), headers

    def body(self, headers, sink=None):
        """The body (or its length when sink is given: sink(bytes) gets every piece)."""
        out = bytearray()
        put = sink or out.extend
        if "content-length" in headers:
            left = int(headers["content-length"])
            while left:
                if not self.buf:
                    self._fill()
                take = min(left, len(self.buf))
                put(bytes(self.buf[:take]))
                del self.buf[:take]
                left -= take
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line():
                        pass
                    break
                put(self.exact(size))
                assert self.line() == b""
        else:
            put(bytes(self.buf))
            self.buf.clear()
            while True:
                data = self.sock.recv(262144)
                if not data:
                    break
                put(data)
        return bytes(out)

    def response(self):
        status, headers = self.head()
        return status, headers, self.body(headers)


def request(port, method, path, headers=None, body=b""):
    """One request on a new connection (http.client); returns (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def read_until_close(sock, timeout=5):
    """Everything the peer sends until it closes; fails when it does not close in time."""
    sock.settimeout(timeout)
    data = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            pytest.fail("the proxy did not close the connection within %ss; got %r"
                        % (timeout, bytes(data[:300])))
        except ConnectionResetError:
            # a reset after the answer still closes; a reset before it loses the answer
            return bytes(data), True
        if not chunk:
            return bytes(data), False
        data += chunk
        if time.monotonic() > deadline:
            pytest.fail("the proxy kept sending for %ss without closing" % timeout)


def parse_responses(data):
    """Splits bytes of HTTP/1.1 responses (Content-Length framed) into (status, headers, body)."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, "incomplete response head: %r" % data[:300]
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        headers = {}
        for ln in lines[1:]:
            n, _, v = ln.partition(b":")
            headers[n.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
        n = int(headers.get("content-length", "0"))
        out.append((status, headers, rest[:n]))
        data = rest[n:]
    return out


class RssSampler:
    """Samples VmRSS of pid every few ms in a thread; .peak is the largest value (KiB)."""

    def __init__(self, pid, interval=0.005):
        self.pid, self.interval = pid, interval
        self.peak = rss_kb(pid)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_kb(self.pid))
            except (OSError, KeyError):
                return
            self._stop.wait(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(timeout=TIMEOUT)
        try:
            self.peak = max(self.peak, rss_kb(self.pid))
        except (OSError, KeyError):
            pass


def flags_of(entry):
    v = entry.get("response_flags")
    return [] if v in (None, "-", "") else v.split(",")


def expected_bytes_sha256(n):
    h = hashlib.sha256()
    block = PATTERN * (MB // len(PATTERN))
    left = n
    while left:
        take = min(left, len(block))
        h.update(block[:take])
        left -= take
    return h.hexdigest()


def upload(port, path, nbytes, piece=MB):
    """POSTs nbytes (Content-Length) on a raw socket; returns (status, headers, body)."""
    s = connect(port)
    try:
        s.sendall(b"POST %s HTTP/1.1\r\nHost: stream.test\r\nContent-Length: %d\r\n"
                  b"Content-Type: application/octet-stream\r\n\r\n" % (path.encode(), nbytes))
        block = b"u" * piece
        left = nbytes
        while left:
            take = min(left, piece)
            s.sendall(block if take == piece else block[:take])
            left -= take
        return Reader(s).response()
    finally:
        s.close()


def download(port, path):
    """GETs path on a raw socket; returns (status, headers, total bytes, sha256 hex)."""
    s = connect(port)
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: stream.test\r\n\r\n" % path.encode())
        r = Reader(s)
        status, headers = r.head()
        h = hashlib.sha256()
        total = [0]

        def sink(b):
            total[0] += len(b)
            h.update(b)
        r.body(headers, sink=sink)
        return status, headers, total[0], h.hexdigest()
    finally:
        s.close()


def warm_up(env):
    """Streams a few MB each way so the proxy's buffers and pools reach their steady state."""
    for _ in range(2):
        status, _, body = upload(env.proxy.port, "/upload", 4 * MB)
        assert status == 200 and body == b"received=%d\n" % (4 * MB)
        status, _, n, _ = download(env.proxy.port, "/bytes/%d" % (4 * MB))
        assert status == 200 and n == 4 * MB


# ---------------------------------------------------------------- streaming and memory

BIG = 200 * MB  # 209715200


def test_upload_200mb_streams_with_bounded_rss(env):
    """A 200 MB upload is streamed to the backend whole; RSS grows < 16 MB while it runs."""
    warm_up(env)
    base = rss_kb(env.proxy.pid)
    start = len(env.proxy.log_entries())
    with RssSampler(env.proxy.pid) as rs:
        status, headers, body = upload(env.proxy.port, "/upload", BIG)
    assert status == 200, body[:200]
    assert body == b"received=209715200\n"
    assert headers.get("x-weft-app") == "b1"
    growth = rs.peak - base
    assert growth < 16 * 1024, "proxy RSS grew %d KiB (base %d KiB, peak %d KiB)" % (
        growth, base, rs.peak)
    e = env.proxy.wait_entries(start, lambda e: e["path"] == "/upload"
                               and e["bytes_received"] == BIG)
    assert e, env.proxy.log_entries()[start:]
    assert e[0]["response_code"] == 200
    assert e[0]["response_flags"] == "-"
    assert e[0]["response_code_details"] == "via_upstream"


def test_download_200mb_streams_with_bounded_rss(env):
    """A 200 MB download arrives intact (pattern sha256); RSS grows < 16 MB while it runs."""
    warm_up(env)
    base = rss_kb(env.proxy.pid)
    start = len(env.proxy.log_entries())
    with RssSampler(env.proxy.pid) as rs:
        status, headers, total, digest = download(env.proxy.port, "/bytes/%d" % BIG)
    assert status == 200
    assert headers.get("content-length") == str(BIG)
    assert total == BIG
    assert digest == expected_bytes_sha256(BIG)
    growth = rs.peak - base
    assert growth < 16 * 1024, "proxy RSS grew %d KiB (base %d KiB, peak %d KiB)" % (
        growth, base, rs.peak)
    e = env.proxy.wait_entries(start, lambda e: e["path"] == "/bytes/%d" % BIG)
    assert e, env.proxy.log_entries()[start:]
    assert e[0]["response_code"] == 200
    assert e[0]["bytes_sent"] == BIG
    assert e[0]["response_flags"] == "-"


def test_b007_8mb_upload_streams_and_upstream_413_passes_through(env):
    """B007: an 8 MiB upload gets 200 received=8388608 (never a local 413); an upstream 413
    is passed through with via_upstream."""
    start = len(env.proxy.log_entries())
    status, _, body = upload(env.proxy.port, "/upload", 8 * MB)
    assert status == 200
    assert body == b"received=8388608\n"
    status, headers, body = request(env.proxy.port, "GET", "/status/413",
                                    headers={"Host": "catalog"})
    assert status == 413
    assert body == b"status 413\n"
    assert headers.get("x-weft-app") == "b1"
    got = env.proxy.wait_entries(start, count=2)
    assert len(got) == 2, got
    up = [e for e in got if e["path"] == "/upload"][0]
    assert (up["response_code"], up["response_flags"], up["response_code_details"]) == (
        200, "-", "via_upstream")
    assert up["bytes_received"] == 8 * MB
    st = [e for e in got if e["path"] == "/status/413"][0]
    assert (st["response_code"], st["response_flags"], st["response_code_details"]) == (
        413, "-", "via_upstream")


def test_slow_reader_back_pressure_then_dc(env):
    """A client that stops reading a 500 MB download: the proxy stops reading the upstream
    (RSS growth < 16 MB, upstream rx bytes stop growing); when the client closes, the
    request is logged with DC and the upstream connection is closed."""
    warm_up(env)
    p = env.proxy
    path = "/bytes/500000000"
    before = p.stats()
    destroy_before = before.get("cluster.%s.upstream_cx_destroy" % CLUSTER, 0)
    rx0 = before.get("cluster.%s.upstream_cx_rx_bytes_total" % CLUSTER, 0)
    base = rss_kb(p.pid)
    start = len(p.log_entries())
    s = connect(p.port, rcvbuf=64 * KB)
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: stream.test\r\n\r\n" % path.encode())
        r = Reader(s)
        status, headers = r.head()
        assert status == 200
        assert headers.get("content-length") == "500000000"
        got = len(r.buf)
        while got < MB:
            piece = s.recv(65536)
            assert piece, "the proxy closed the download after %d bytes" % got
            got += len(piece)
        with RssSampler(p.pid) as rs:
            time.sleep(1.5)  # the client reads nothing: socket buffers fill up
            rx1 = p.stat("cluster.%s.upstream_cx_rx_bytes_total" % CLUSTER)
            time.sleep(1.5)
            rx2 = p.stat("cluster.%s.upstream_cx_rx_bytes_total" % CLUSTER)
        growth = rs.peak - base
        assert growth < 16 * 1024, "proxy RSS grew %d KiB while the client did not read" % growth
        assert rx1 - rx0 < 64 * MB, "the proxy read %d bytes from the upstream" % (rx1 - rx0)
        assert rx2 - rx1 < 2 * MB, (
            "the proxy kept reading the upstream while the client did not read "
            "(%d -> %d bytes)" % (rx1, rx2))
    finally:
        s.close()
    e = p.wait_entries(start, lambda e: e["path"] == path)
    assert e, p.log_entries()[start:]
    assert "DC" in flags_of(e[0]), e[0]
    assert e[0]["response_code"] == 200, e[0]
    assert e[0]["bytes_sent"] < 500000000
    deadline = time.monotonic() + 5
    while True:
        st = p.stats()
        if st.get("cluster.%s.upstream_cx_destroy" % CLUSTER, 0) > destroy_before:
            break
        assert time.monotonic() < deadline, "upstream connection not closed: %r" % {
            k: v for k, v in st.items() if k.startswith("cluster.%s.upstream_cx" % CLUSTER)}
        time.sleep(0.05)
    reset_keys = ["cluster.%s.upstream_cx_destroy_local_with_active_rq" % CLUSTER,
                  "cluster.%s.upstream_rq_tx_reset" % CLUSTER]
    assert any(st.get(k, 0) > before.get(k, 0) for k in reset_keys), {
        k: (before.get(k), st.get(k)) for k in reset_keys}


# ---------------------------------------------------------------- WebSocket

def ws_frame(opcode, payload, fin=True):
    """A masked client frame."""
    mask = os.urandom(4)
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", b0, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", b0, 0x80 | 127, n)
    masked = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
    return head + mask + masked


def ws_read_frame(r):
    """(fin, opcode, payload) of an unmasked server frame from a Reader."""
    b0, b1 = r.exact(2)
    assert not b1 & 0x80, "server frames must not be masked"
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", r.exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", r.exact(8))[0]
    return bool(b0 & 0x80), b0 & 0x0F, r.exact(n)


def test_websocket_echo_through_proxy(env):
    """Upgrade to WebSocket through the proxy, echo a masked text frame, close; log shows 101."""
    p = env.proxy
    start = len(p.log_entries())
    key = base64.b64encode(os.urandom(16)).decode()
    accept = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    s = connect(p.port)
    try:
        s.sendall(("GET /ws HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n" % key).encode())
        r = Reader(s)
        status, headers = r.head()
        assert status == 101
        assert headers.get("upgrade", "").lower() == "websocket"
        assert headers.get("connection", "").lower() == "upgrade"
        assert headers.get("sec-websocket-accept") == accept
        # text (7-bit length), text (16-bit length), binary (64-bit length)
        for opcode, msg in ((1, b"hello weft"), (1, b"x" * 300), (2, bytes(range(256)) * 300)):
            s.sendall(ws_frame(opcode, msg))
            fin, op, payload = ws_read_frame(r)
            assert (fin, op, payload) == (True, opcode, msg)
        s.sendall(ws_frame(8, struct.pack("!H", 1000) + b"bye"))
        fin, op, payload = ws_read_frame(r)
        assert (op, payload) == (8, struct.pack("!H", 1000) + b"bye")
        rest, _ = read_until_close(s)
        assert rest == b"" and not r.buf
    finally:
        s.close()
    e = p.wait_entries(start, lambda e: e["path"] == "/ws")
    assert e, p.log_entries()[start:]
    assert e[0]["response_code"] == 101, e[0]
    assert e[0]["method"] == "GET"


def test_websocket_outlives_the_route_timeout(procs_factory):
    """The route timeout bounds the upgrade request only: the tunnel after the 101 lives on
    (Envoy applies no route timeout to an upgraded stream)."""
    _, app_port = procs_factory.app("--name", "b1")
    p = procs_factory.proxy([cluster_json(CLUSTER, [("127.0.0.1", app_port)])],
                            route_timeout="0.3s")
    s = connect(p.port)
    try:
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n")
        r = Reader(s)
        assert r.head()[0] == 101
        time.sleep(0.8)
        s.sendall(ws_frame(1, b"still here"))
        assert ws_read_frame(r) == (True, 1, b"still here")
    finally:
        s.close()
    assert p.stat("cluster.%s.upstream_rq_timeout" % CLUSTER) == 0


# ---------------------------------------------------------------- smuggling battery

def req(head_lines, body=b"", start=b"POST /echo HTTP/1.1"):
    return start + b"\r\n" + b"".join(h + b"\r\n" for h in head_lines) + b"\r\n" + body


CHUNKED_BODY = b"5\r\nhello\r\n0\r\n\r\n"

SMUGGLED = b"GET /echo/smuggled HTTP/1.1\r\nHost: smuggle.test\r\n\r\n"

# (id, bytes, status, details): statuses and details as src/http/h1_parser.h maps them
# (Envoy's Http1ResponseCodeDetails; 501 for a request Transfer-Encoding that is not chunked).
VECTORS = [
    ("cl_te", req([b"Host: a", b"Content-Length: 6", b"Transfer-Encoding: chunked"],
                  b"0\r\n\r\n" + SMUGGLED),
     400, "http1.content_length_and_chunked_not_allowed"),
    ("te_cl", req([b"Host: a", b"Transfer-Encoding: chunked", b"Content-Length: 4"],
                  b"%x\r\n%s\r\n0\r\n\r\n" % (len(SMUGGLED), SMUGGLED)),
     400, "http1.content_length_and_chunked_not_allowed"),
    ("two_content_lengths", req([b"Host: a", b"Content-Length: 5", b"Content-Length: 6"],
                                b"hello!" + SMUGGLED),
     400, "http1.codec_error"),
    ("content_length_list", req([b"Host: a", b"Content-Length: 5, 6"], b"hello!" + SMUGGLED),
     400, "http1.codec_error"),
    ("chunk_size_zz", req([b"Host: a", b"Transfer-Encoding: chunked"],
                          b"zz\r\nhello\r\n0\r\n\r\n"),
     400, "http1.codec_error"),
    ("chunk_size_negative", req([b"Host: a", b"Transfer-Encoding: chunked"],
                                b"-5\r\nhello\r\n0\r\n\r\n"),
     400, "http1.codec_error"),
    ("chunk_size_overflow", req([b"Host: a", b"Transfer-Encoding: chunked"],
                                b"ffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
     400, "http1.codec_error"),
    ("te_chunked_identity", req([b"Host: a", b"Transfer-Encoding: chunked, identity"],
                                CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_two_lines", req([b"Host: a", b"Transfer-Encoding: chunked",
                          b"Transfer-Encoding: identity"], CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_xchunked", req([b"Host: a", b"Transfer-Encoding: xchunked"], CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    # a coding before chunked must not be dropped (forwarding the body as plain chunked
    # changes its meaning): Envoy takes only a Transfer-Encoding of exactly "chunked"
    ("te_gzip_chunked", req([b"Host: a", b"Transfer-Encoding: gzip, chunked"], CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_identity_chunked", req([b"Host: a", b"Transfer-Encoding: identity, chunked"],
                                CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_gzip_line_chunked_line", req([b"Host: a", b"Transfer-Encoding: gzip",
                                       b"Transfer-Encoding: chunked"], CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_chunked_chunked", req([b"Host: a", b"Transfer-Encoding: chunked, chunked"],
                               CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_chunked_line_twice", req([b"Host: a", b"Transfer-Encoding: chunked",
                                   b"Transfer-Encoding: chunked"], CHUNKED_BODY),
     501, "http1.invalid_transfer_encoding"),
    ("te_space_before_colon", req([b"Host: a", b"Transfer-Encoding : chunked"], CHUNKED_BODY),
     400, "http1.codec_error"),
    ("obs_fold", req([b"Host: a", b"Transfer-Encoding:", b" chunked"], CHUNKED_BODY),
     400, "http1.codec_error"),
    ("bare_cr_in_header", req([b"Host: a", b"X-Foo: a\rTransfer-Encoding: chunked"],
                              CHUNKED_BODY),
     400, "http1.codec_error"),
    ("bare_lf_line_endings", b"GET /echo HTTP/1.1\nHost: a\nX-Foo: bar\n\n",
     400, "http1.codec_error"),
    ("nul_in_header_value", req([b"Host: a", b"X-Foo: a\x00b"], start=b"GET /echo HTTP/1.1"),
     400, "http1.invalid_characters"),
    ("ctl_in_header_name", req([b"Host: a", b"X-F\x01oo: bar"], start=b"GET /echo HTTP/1.1"),
     400, "http1.codec_error"),
    ("te_in_http10", req([b"Host: a", b"Transfer-Encoding: chunked"], CHUNKED_BODY,
                         start=b"POST /echo HTTP/1.0"),
     400, "http1.invalid_transfer_encoding"),
    ("request_line_two_spaces", req([b"Host: a"], start=b"GET  /echo HTTP/1.1"),
     400, "http1.codec_error"),
    ("second_request_after_bad_one",
     req([b"Host: a", b"Content-Length: 0", b"Content-Length: 1"]) + SMUGGLED,
     400, "http1.codec_error"),
]


def _vector_params():
    for v in VECTORS:
        marks = []
        yield pytest.param(*v[1:], id=v[0], marks=marks)


@pytest.mark.parametrize("raw,status,details", list(_vector_params()))
def test_smuggling_vector_rejected(env, raw, status, details):
    """Answered with the codec's status, the connection closed, nothing reached the backend,
    and the access log records DPE with the codec's detail string. An idle pooled upstream
    connection exists beforehand (as on any busy proxy), so a request head forwarded too
    early would reach the backend at once."""
    p = env.proxy
    start0 = len(p.log_entries())
    status0, _, _ = request(p.port, "GET", "/echo/warm", headers={"Host": "a"})
    assert status0 == 200
    assert p.wait_entries(start0, lambda e: e["path"] == "/echo/warm")
    count = env.backend_count()
    start = len(p.log_entries())
    s = connect(p.port)
    try:
        s.sendall(raw)
        data, reset = read_until_close(s)
    finally:
        s.close()
    p.wait_entries(start)
    time.sleep(0.1)  # a late second record would show here
    e = p.log_entries()[start:]
    assert data, "no response (connection %s)" % ("reset" if reset else "closed")
    responses = parse_responses(data)
    assert len(responses) == 1, "more than one response: %r" % data
    got_status, headers, body = responses[0]
    assert got_status == status, data
    assert body == CODEC_ERROR_BODY[status], "Envoy answers a codec error with the status text"
    assert headers.get("connection", "").lower() == "close", headers
    assert len(e) == 1, e
    assert env.backend_count() == count, "the request reached the backend"
    assert e[0]["response_code"] == status, e[0]
    assert "DPE" in flags_of(e[0]), e[0]
    assert e[0]["response_code_details"] == details, e[0]


CODEC_ERROR_BODY = {400: b"Bad Request", 501: b"Not Implemented"}


def big_head(kib):
    """A GET /echo whose head is about kib KiB (1000-byte header values)."""
    return (b"GET /echo HTTP/1.1\r\nHost: a\r\n"
            + b"".join(b"X-Big-%02d: %s\r\n" % (i, b"v" * 1000) for i in range(kib)) + b"\r\n")



def test_headers_under_limit_pass(env):
    """A 32 KiB request head (under the 60 KiB default) is proxied: 200, headers intact."""
    start = len(env.proxy.log_entries())
    raw = big_head(32)
    s = connect(env.proxy.port)
    s.settimeout(2)
    try:
        s.sendall(raw)
        status, headers, body = Reader(s).response()
    except (socket.timeout, EOFError, ConnectionError) as e:
        pytest.fail("no response to a %d-byte head: %r" % (len(raw), e))
    finally:
        s.close()
    assert status == 200
    got = json.loads(body)
    names = [h[0] for h in got["headers"]]
    assert ["X-Big-%02d" % i for i in range(32)] == [n for n in names if n.startswith("X-Big-")]
    # its access-log line is flushed before the next test reads the log
    assert env.proxy.wait_entries(start)[0]["response_code"] == 200


def test_headers_too_large_431(env):
    """A request head over 60 KiB (max_request_headers_kb default) is answered 431, the
    connection closed, nothing forwarded; logged DPE http1.headers_too_large."""
    p = env.proxy
    count = env.backend_count()
    start = len(p.log_entries())
    raw = big_head(62)
    assert 61 * KB < len(raw) < 64 * KB
    s = connect(p.port)
    try:
        s.sendall(raw)
        data, reset = read_until_close(s, timeout=2)
    finally:
        s.close()
    e = p.wait_entries(start)
    assert data, "no response (connection %s)" % ("reset" if reset else "closed")
    responses = parse_responses(data)
    assert len(responses) == 1, data
    assert responses[0][0] == 431, data
    assert responses[0][2] == b"Request Header Fields Too Large", "Envoy's body: the status text"
    assert len(e) == 1, e
    assert e[0]["response_code"] == 431
    assert "DPE" in flags_of(e[0])
    assert e[0]["response_code_details"] == "http1.headers_too_large"
    assert env.backend_count() == count


# ---------------------------------------------------------------- B012 and resets

def test_b012_hangup_is_503_uc(env):
    """B012: the backend closes after reading the request: 503 UC with Envoy's details and
    body; the default policy does not retry (the backend saw one request)."""
    p = env.proxy
    count = env.backend_count()
    start = len(p.log_entries())
    status, headers, body = request(p.port, "GET", "/hangup", headers={"Host": "catalog"})
    assert status == 503
    assert body.startswith(UC_BODY), body
    assert headers.get("content-type", "").startswith("text/plain")
    e = p.wait_entries(start, lambda e: e["path"] == "/hangup")
    assert e, p.log_entries()[start:]
    assert e[0]["response_code"] == 503
    assert e[0]["response_flags"] == "UC"
    assert e[0]["response_code_details"] == UC_DETAILS
    assert env.backend_count() == count + 1


def idle_race(f, idle_timeout):
    """Backend closes idle keep-alive connections after 400 ms; one request every ~0.4 s."""
    _, app_port = f.app("--name", "race", "--idle-timeout-ms", "400")
    p = f.proxy([cluster_json(CLUSTER, [("127.0.0.1", app_port)], idle_timeout=idle_timeout)])
    results = []
    conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=TIMEOUT)
    try:
        for i in range(25):
            t0 = time.monotonic()
            conn.request("GET", "/echo/race-%d" % i, headers={"Host": "catalog"})
            r = conn.getresponse()
            results.append((r.status, r.read()))
            time.sleep(max(0.0, 0.4 - (time.monotonic() - t0)))
    finally:
        conn.close()
    entries = p.wait_entries(0, count=25)
    return p, results, entries


def test_b012_idle_race_with_cluster_idle_timeout_has_no_failures(procs_factory):
    """B012 with idle_timeout 0.2s (shorter than the backend's 0.4 s): 0 failures."""
    p, results, entries = idle_race(procs_factory, "0.2s")
    failures = [(s, b[:120]) for s, b in results if s != 200]
    assert failures == [], failures
    assert len(entries) == 25
    assert all(e["response_code"] == 200 and e["response_flags"] == "-" for e in entries), [
        e for e in entries if e["response_code"] != 200]
    assert p.stat("cluster.%s.upstream_cx_idle_timeout" % CLUSTER) >= 1


def test_b012_idle_race_without_idle_timeout_fails_only_with_uc(procs_factory):
    """B012 without the idle timeout: failures may happen, but only with the UC signature."""
    _, results, entries = idle_race(procs_factory, None)
    for status, body in results:
        if status != 200:
            assert status == 503, (status, body)
            assert body.startswith(UC_BODY), body
    assert len(entries) == 25
    for e in entries:
        if e["response_code"] != 200:
            assert (e["response_code"], e["response_flags"], e["response_code_details"]) == (
                503, "UC", UC_DETAILS), e


def test_b012_idle_timeout_as_istio_writes_it_loads(tmp_path):
    """The idle timeout in the form Istio generates (typed_extension_protocol_options ->
    HttpProtocolOptions.common_http_protocol_options.idle_timeout) is accepted promptly
    (an earlier build hung loading any typed_extension_protocol_options map)."""
    exe = proxy_path()
    if not os.access(exe, os.X_OK):
        pytest.fail("%s is missing: build weft-proxy or set WEFT_PROXY" % exe)
    bs = bootstrap_json([cluster_json(CLUSTER, [("127.0.0.1", 9)], idle_timeout="0.2s",
                                      typed_options=True)],
                        log_path=str(tmp_path / "access.log"))
    cfg = pf.write_bootstrap(bs, str(tmp_path))
    try:
        r = subprocess.run([exe, "-c", cfg, "--mode", "validate"], capture_output=True,
                           timeout=5, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("weft-proxy --mode validate did not finish within 5 s")
    assert r.returncode == 0, r.stderr
    assert b"OK" in r.stdout


def test_client_disconnect_before_response_is_dc(env):
    """The client closes 100 ms into /delay/1000: logged with code 0 and DC, and the
    upstream connection (with the request on it) is closed."""
    p = env.proxy
    keys = ["cluster.%s.upstream_cx_destroy_local_with_active_rq" % CLUSTER,
            "cluster.%s.upstream_rq_tx_reset" % CLUSTER]
    before = p.stats()
    start = len(p.log_entries())
    s = connect(p.port)
    try:
        s.sendall(b"GET /delay/1000 HTTP/1.1\r\nHost: catalog\r\n\r\n")
        time.sleep(0.1)
    finally:
        s.close()
    e = p.wait_entries(start, lambda e: e["path"] == "/delay/1000")
    assert e, p.log_entries()[start:]
    assert e[0]["response_code"] == 0, e[0]
    assert "DC" in flags_of(e[0]), e[0]
    assert e[0]["response_code_details"] == "downstream_remote_disconnect", e[0]
    deadline = time.monotonic() + 5
    while True:
        after = p.stats()
        if any(after.get(k, 0) > before.get(k, 0) for k in keys):
            break
        assert time.monotonic() < deadline, "upstream connection not reset: %r" % {
            k: (before.get(k), after.get(k)) for k in keys}
        time.sleep(0.05)


# ---------------------------------------------------------------- nginx upstream

NGINX = "/usr/sbin/nginx"


@pytest.fixture
def nginx(tmp_path):
    """Debian's nginx on a free loopback port: / returns "nginx-ok", /static/ serves files."""
    if not os.access(NGINX, os.X_OK):
        pytest.skip("%s is absent (Debian package nginx)" % NGINX)
    root = tmp_path / "nginx"
    (root / "static").mkdir(parents=True)
    (root / "logs").mkdir()
    big = os.urandom(20 * MB)
    (root / "static" / "big.bin").write_bytes(big)
    last = None
    for _ in range(3):
        port = free_port()
        conf = root / "nginx.conf"
        conf.write_text("""
daemon off;
master_process off;
worker_processes 1;
error_log stderr;
pid %(root)s/nginx.pid;
events { worker_connections 128; }
http {
    access_log off;
    client_body_temp_path %(root)s/client_body;
    proxy_temp_path %(root)s/proxy;
    fastcgi_temp_path %(root)s/fastcgi;
    uwsgi_temp_path %(root)s/uwsgi;
    scgi_temp_path %(root)s/scgi;
    keepalive_timeout 75s;
    keepalive_requests 1000;
    server {
        listen 127.0.0.1:%(port)d;
        location = / { default_type text/plain; return 200 "nginx-ok"; }
        location /static/ { root %(root)s; }
    }
}
""" % {"root": root, "port": port})
        err = tempfile.TemporaryFile()
        proc = subprocess.Popen([NGINX, "-p", str(root), "-c", str(conf)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_port("127.0.0.1", port, timeout=5)
        except TimeoutError as e:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
            err.seek(0)
            last = "%s: %s" % (e, err.read().decode("utf-8", "replace"))
            continue
        if proc.poll() is not None:
            err.seek(0)
            last = err.read().decode("utf-8", "replace")
            continue
        try:
            yield port, hashlib.sha256(big).hexdigest()
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=TIMEOUT)
            err.close()
        return
    pytest.fail("nginx did not start: %s" % last)


def test_nginx_upstream(procs_factory, nginx):
    """nginx behind the proxy: 200 "nginx-ok", upstream keep-alive reuse, and a 20 MB static
    file arrives intact (sha256)."""
    nport, digest = nginx
    p = procs_factory.proxy([cluster_json(CLUSTER, [("127.0.0.1", nport)])])
    s = connect(p.port)
    try:
        r = Reader(s)
        for _ in range(5):
            s.sendall(b"GET / HTTP/1.1\r\nHost: nginx.test\r\n\r\n")
            status, headers, body = r.response()
            assert status == 200
            assert body == b"nginx-ok"
    finally:
        s.close()
    st = p.stats()
    assert st.get("cluster.%s.upstream_rq_total" % CLUSTER) == 5
    assert st.get("cluster.%s.upstream_cx_total" % CLUSTER) == 1, "no upstream keep-alive"
    status, headers, total, got = download(p.port, "/static/big.bin")
    assert status == 200
    assert total == 20 * MB
    assert got == digest
    e = p.wait_entries(0, count=6)
    assert [x["response_code"] for x in e] == [200] * 6
    assert e[-1]["bytes_sent"] == 20 * MB
    assert all(x["upstream_host"] == "127.0.0.1:%d" % nport for x in e)


# ---------------------------------------------------------------- idle connection memory

def test_idle_keepalive_connections_memory(procs_factory):
    """500 keep-alive client connections, each idle after one request: RSS growth per
    connection < 4 KiB (the benchmark target is <= 1 KiB)."""
    if under_asan(proxy_path()):
        pytest.skip("weft-proxy is built with ASan: its RSS per connection is dominated by "
                    "shadow memory and quarantine, the figure would be meaningless")
    _, app_port = procs_factory.app("--name", "idle")
    p = procs_factory.proxy([cluster_json(CLUSTER, [("127.0.0.1", app_port)])])
    socks = []
    try:
        def one_request(sock):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: idle.test\r\n\r\n")
            status, _, body = Reader(sock).response()
            assert (status, body) == (200, b"ok")
        for _ in range(50):  # warm-up: allocator and pools reach their steady state
            w = connect(p.port)
            one_request(w)
            socks.append(w)
        time.sleep(0.3)
        base = rss_kb(p.pid)
        n = 500
        for _ in range(n):
            c = connect(p.port)
            socks.append(c)
            one_request(c)
        deadline = time.monotonic() + 5
        while p.stat("http.%s.downstream_cx_active" % STAT_PREFIX) != n + 50:
            assert time.monotonic() < deadline, "downstream_cx_active is not %d" % (n + 50)
            time.sleep(0.1)
        time.sleep(0.3)
        grown = rss_kb(p.pid) - base
        assert grown < 4 * n, "RSS grew %d KiB for %d idle connections (%.2f KiB each)" % (
            grown, n, grown / n)
    finally:
        for c in socks:
            c.close()


# ---------------------------------------------------------------- clean exit

def test_clean_exit_after_resets_streams_and_upgrades(procs_factory):
    """A proxy that served a stream, an upload, a 503 UC, a client disconnect, a codec error
    and a WebSocket exits 0 on SIGTERM without a sanitizer report (under ASan: no leak; an
    earlier build leaked the body of every 503 UC/UF/UO local reply)."""
    _, app_port = procs_factory.app("--name", "leak")
    p = start_proxy([cluster_json(CLUSTER, [("127.0.0.1", app_port)])])
    try:
        assert request(p.port, "GET", "/bytes/100000")[0] == 200
        assert upload(p.port, "/upload", 2 * MB)[0] == 200
        assert request(p.port, "GET", "/hangup")[0] == 503
        s = connect(p.port)
        s.sendall(b"GET /delay/300 HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.1)
        s.close()
        s = connect(p.port)
        s.sendall(VECTORS[0][1])
        read_until_close(s)
        s.close()
        key = base64.b64encode(os.urandom(16))
        s = connect(p.port)
        s.sendall(b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        r = Reader(s)
        assert r.head()[0] == 101
        s.sendall(ws_frame(1, b"leak?"))
        assert ws_read_frame(r)[2] == b"leak?"
        s.close()
        assert len(p.wait_entries(0, count=6)) == 6
    finally:
        p.stop()
