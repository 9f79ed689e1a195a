"""weft-app's gRPC service (src/app/app_grpc.h) with clients nobody on the project wrote.

Python grpcio (Debian's python3-grpcio) calls shop.Echo/Echo, shop.Echo/EchoStream and
grpc.health.v1.Health/Check through generic stubs; the messages are built with Debian's
python3-protobuf (a dependency of python3-grpcio) from descriptors made here, so the
encoding is protobuf's own, not ours. curl --http2-prior-knowledge and Python's h2 check
what grpcio hides: Trailers-Only answers, the 405 and 415 answers, compressed flags, stream resets,
and the GOAWAY an HTTP/1.1 client gets.

Every app is started on 127.0.0.1 port 0 and stopped with SIGTERM by the fixture, which then
checks exit status 0 and a stderr free of sanitizer reports. Every call has a deadline.
"""
import concurrent.futures
import os
import socket
import struct
import subprocess
import time

import pytest

from procs import app_path, crash_report, free_port, start_process, stop_process

grpc = pytest.importorskip("grpc", reason="python3-grpcio (scripts/setup installs it)")
h2 = pytest.importorskip("h2", reason="python3-h2 (scripts/setup installs it)")
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402

TIMEOUT = 10
POD = "echo-pod-1"
NAME = "catalog-grpc"

CODES = {c.value[0]: c for c in grpc.StatusCode}


# ---- the messages, from the .proto in src/app/app_grpc.h (grpcmsg.py) ----

from grpcmsg import MSG, EchoRequest, EchoResponse  # noqa: E402
SERVING, NOT_FOUND = 1, grpc.StatusCode.NOT_FOUND


def framed(payload, flag=0):
    return struct.pack(">BI", flag, len(payload)) + payload


# ---- fixtures ----

@pytest.fixture
def app_factory():
    """app(*args) starts weft-app and returns (proc, [(host, port), ...]); stopped after."""
    if not os.access(app_path(), os.X_OK):
        pytest.fail("%s is missing: build weft-app or set WEFT_APP" % app_path())
    procs = []

    def start(*args, count=1):
        proc, addrs = start_process([app_path()] + [str(a) for a in args], count=count)
        procs.append(proc)
        return proc, addrs

    yield start
    for proc in procs:
        rc = stop_process(proc)
        assert crash_report(proc) is None, crash_report(proc)
        assert rc == 0, proc.stderr_text()


@pytest.fixture
def app(app_factory):
    """(proc, port) of a weft-app with one gRPC listener."""
    proc, addrs = app_factory("--grpc-listen", "127.0.0.1:0", "--name", NAME, "--pod", POD)
    return proc, addrs[0][1]


@pytest.fixture
def channel(app):
    ch = grpc.insecure_channel("127.0.0.1:%d" % app[1])
    yield ch
    ch.close()


def stubs(ch):
    echo = ch.unary_unary("/shop.Echo/Echo", request_serializer=EchoRequest.SerializeToString,
                          response_deserializer=EchoResponse.FromString)
    stream = ch.unary_stream("/shop.Echo/EchoStream",
                             request_serializer=EchoRequest.SerializeToString,
                             response_deserializer=EchoResponse.FromString)
    return echo, stream


def health(ch, service, timeout=TIMEOUT):
    check = ch.unary_unary("/grpc.health.v1.Health/Check",
                           request_serializer=MSG["HealthCheckRequest"].SerializeToString,
                           response_deserializer=MSG["HealthCheckResponse"].FromString)
    return check(MSG["HealthCheckRequest"](service=service), timeout=timeout)


# ---- a raw HTTP/2 client (h2) for what grpcio does not show ----

class Raw:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.events = []

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def call(self, path, body=b"", headers=(), end=True, ctype="application/grpc"):
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path),
                (":authority", "echo"), ("content-type", ctype), ("te", "trailers")]
        self.conn.send_headers(sid, hdrs + list(headers), end_stream=end and not body)
        if body:
            self.conn.send_data(sid, body, end_stream=end)
        self.flush()
        return sid

    def pump(self, done, timeout=TIMEOUT):
        """Reads until done(events) is true; returns the events of this connection so far."""
        deadline = time.monotonic() + timeout
        while not done(self.events):
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                if time.monotonic() >= deadline:
                    raise AssertionError("no answer in time: %r" % self.events)
                continue
            if not data:
                break
            for ev in self.conn.receive_data(data):
                self.events.append(ev)
                if isinstance(ev, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            self.flush()
        return self.events

    def finished(self, sid):
        return lambda evs: any(isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset))
                               and e.stream_id == sid for e in evs)

    def of(self, sid, cls):
        return [e for e in self.events if isinstance(e, cls) and getattr(e, "stream_id", 0) == sid]

    def close(self):
        self.sock.close()


@pytest.fixture
def raw(app):
    clients = []

    def make():
        r = Raw(app[1])
        clients.append(r)
        return r

    yield make
    for r in clients:
        r.close()


def curl(*args, timeout=20):
    return subprocess.run(["curl", "-sS", "--max-time", "10"] + list(args), capture_output=True,
                          timeout=timeout)


# ---- unary ----

def test_unary_echo_identifies_the_app(channel):
    echo, _ = stubs(channel)
    resp, call = echo.with_call(EchoRequest(message="hello ü"), timeout=TIMEOUT)
    assert resp.message == "hello ü"
    assert resp.hostname == POD  # --pod, as x-weft-pod on HTTP answers
    assert resp.index == 0
    meta = dict(call.initial_metadata())
    assert meta.get("x-weft-app") == NAME and meta.get("x-weft-pod") == POD
    assert call.code() == grpc.StatusCode.OK


def test_unary_ignores_count(channel):
    echo, _ = stubs(channel)
    assert echo(EchoRequest(message="one", count=5), timeout=TIMEOUT).message == "one"


def test_unary_delay(channel):
    echo, _ = stubs(channel)
    t0 = time.monotonic()
    assert echo(EchoRequest(message="late", delay_ms=400), timeout=TIMEOUT).message == "late"
    assert time.monotonic() - t0 >= 0.39
    # the x-delay-ms header stands in for a zero delay_ms
    t0 = time.monotonic()
    echo(EchoRequest(message="h"), metadata=[("x-delay-ms", "300")], timeout=TIMEOUT)
    assert time.monotonic() - t0 >= 0.29


def test_every_status_code_round_trips_with_its_message(channel):
    echo, _ = stubs(channel)
    resp, call = echo.with_call(EchoRequest(message="ok", status=0, status_message="fine"),
                                timeout=TIMEOUT)
    assert resp.message == "ok" and call.code() == grpc.StatusCode.OK
    assert call.details() == "fine"
    for code in range(1, 17):
        text = "status %d: 100%% ü\ttab" % code  # percent-encoding both ways
        with pytest.raises(grpc.RpcError) as ei:
            echo(EchoRequest(message="x", status=code, status_message=text), timeout=TIMEOUT)
        assert ei.value.code() == CODES[code], code
        assert ei.value.details() == text, code


def test_status_from_request_headers(channel):
    echo, _ = stubs(channel)
    with pytest.raises(grpc.RpcError) as ei:
        echo(EchoRequest(), metadata=[("x-grpc-status", "8"), ("x-grpc-message", "slow down")],
             timeout=TIMEOUT)
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert ei.value.details() == "slow down"


@pytest.mark.parametrize("req,field", [
    (dict(status=17), "status"), (dict(status=-1), "status"), (dict(delay_ms=-5), "delay_ms"),
    (dict(count=100001), "count")])
def test_out_of_range_is_invalid_argument(channel, req, field):
    echo, stream = stubs(channel)
    for call in (lambda: echo(EchoRequest(**req), timeout=TIMEOUT),
                 lambda: list(stream(EchoRequest(**req), timeout=TIMEOUT))):
        with pytest.raises(grpc.RpcError) as ei:
            call()
        assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert ei.value.details().startswith(field + ":")


# ---- server streaming ----

def test_server_streaming_count(channel):
    _, stream = stubs(channel)
    got = list(stream(EchoRequest(message="s", count=5), timeout=TIMEOUT))
    assert [r.index for r in got] == [0, 1, 2, 3, 4]
    assert all(r.message == "s" and r.hostname == POD for r in got)
    assert [r.index for r in stream(EchoRequest(message="one"), timeout=TIMEOUT)] == [0]


def test_server_streaming_large_follows_flow_control(channel):
    """5000 messages of 2 KiB (10 MB) pass the client's HTTP/2 windows in order."""
    _, stream = stubs(channel)
    body = "b" * 2048
    n = 0
    for r in stream(EchoRequest(message=body, count=5000), timeout=30):
        assert r.index == n and r.message == body
        n += 1
    assert n == 5000


def test_server_streaming_delay_between_messages(channel):
    _, stream = stubs(channel)
    t0 = time.monotonic()
    times = [time.monotonic() - t0
             for _ in stream(EchoRequest(message="t", count=3, delay_ms=200), timeout=TIMEOUT)]
    assert len(times) == 3
    assert times[0] >= 0.19 and times[2] >= 0.59
    assert times[1] - times[0] >= 0.1  # one at a time, not all at the end


def test_server_streaming_status_after_messages(channel):
    _, stream = stubs(channel)
    got = []
    with pytest.raises(grpc.RpcError) as ei:
        for r in stream(EchoRequest(message="m", count=3, status=10, status_message="abort"),
                        timeout=TIMEOUT):
            got.append(r.index)
    assert got == [0, 1, 2]
    assert ei.value.code() == grpc.StatusCode.ABORTED and ei.value.details() == "abort"


def test_trailers_only_and_trailers_on_the_wire(raw):
    r = raw()
    # unary error: one HEADERS frame with END_STREAM carrying grpc-status (Trailers-Only)
    sid = r.call("/shop.Echo/Echo", framed(EchoRequest(status=14, status_message="gone")
                                           .SerializeToString()))
    r.pump(r.finished(sid))
    (resp,) = r.of(sid, h2.events.ResponseReceived)
    h = dict(resp.headers)
    assert resp.stream_ended is not None
    assert h[":status"] == "200" and h["content-type"] == "application/grpc"
    assert h["grpc-status"] == "14" and h["grpc-message"] == "gone"
    assert not r.of(sid, h2.events.DataReceived) and not r.of(sid, h2.events.TrailersReceived)
    # a stream with an error: headers, messages, then trailers with the status
    sid = r.call("/shop.Echo/EchoStream", framed(EchoRequest(message="m", count=2, status=5)
                                                 .SerializeToString()))
    r.pump(r.finished(sid))
    (resp,) = r.of(sid, h2.events.ResponseReceived)
    assert resp.stream_ended is None and "grpc-status" not in dict(resp.headers)
    data = b"".join(e.data for e in r.of(sid, h2.events.DataReceived))
    msgs = []
    while data:
        flag, n = struct.unpack(">BI", data[:5])
        assert flag == 0
        msgs.append(EchoResponse.FromString(data[5:5 + n]))
        data = data[5 + n:]
    assert [m.index for m in msgs] == [0, 1]
    (tr,) = r.of(sid, h2.events.TrailersReceived)
    assert dict(tr.headers)["grpc-status"] == "5" and "grpc-message" not in dict(tr.headers)


# ---- deadlines and resets ----

def test_deadline_exceeded_and_the_server_survives(channel):
    echo, stream = stubs(channel)
    t0 = time.monotonic()
    with pytest.raises(grpc.RpcError) as ei:
        echo(EchoRequest(message="slow", delay_ms=3000), timeout=0.3)
    assert ei.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - t0 < 2
    with pytest.raises(grpc.RpcError) as ei:
        list(stream(EchoRequest(message="slow", count=10, delay_ms=100), timeout=0.35))
    assert ei.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert echo(EchoRequest(message="after"), timeout=TIMEOUT).message == "after"


def test_reset_stream_cancels_the_delay(raw):
    """The client resets a waiting call: nothing comes for it later, the connection lives."""
    r = raw()
    sid = r.call("/shop.Echo/Echo", framed(EchoRequest(message="x", delay_ms=300)
                                           .SerializeToString()))
    sid2 = r.call("/shop.Echo/EchoStream", framed(EchoRequest(message="y", delay_ms=100,
                                                              count=50).SerializeToString()))
    r.pump(lambda evs: r.of(sid2, h2.events.DataReceived))
    r.conn.reset_stream(sid)
    r.conn.reset_stream(sid2)
    r.flush()
    time.sleep(0.6)  # past the delay and several stream ticks
    r.conn.ping(b"12345678")
    r.flush()
    r.pump(lambda evs: any(isinstance(e, h2.events.PingAckReceived) for e in evs))
    assert not r.of(sid, h2.events.ResponseReceived)
    assert not r.of(sid, h2.events.DataReceived)
    n2 = len(r.of(sid2, h2.events.DataReceived))
    assert n2 <= 2
    sid3 = r.call("/shop.Echo/Echo", framed(EchoRequest(message="z").SerializeToString()))
    r.pump(r.finished(sid3))
    assert dict(r.of(sid3, h2.events.TrailersReceived)[0].headers)["grpc-status"] == "0"


def test_concurrent_calls(app, channel):
    """50 calls of 300 ms on one connection, at once: they overlap."""
    echo, _ = stubs(channel)
    t0 = time.monotonic()
    futs = [echo.future(EchoRequest(message="c%d" % i, delay_ms=300), timeout=TIMEOUT)
            for i in range(50)]
    assert sorted(f.result().message for f in futs) == sorted("c%d" % i for i in range(50))
    assert time.monotonic() - t0 < 5  # 15 s if one after the other
    with concurrent.futures.ThreadPoolExecutor(8) as ex:  # and over several channels
        def one(i):
            with grpc.insecure_channel("127.0.0.1:%d" % app[1]) as ch:
                return stubs(ch)[0](EchoRequest(message=str(i)), timeout=TIMEOUT).message
        assert sorted(ex.map(one, range(16))) == sorted(str(i) for i in range(16))


# ---- health, unknown methods, request checks ----

def test_health_check(channel):
    assert health(channel, "").status == SERVING
    assert health(channel, "shop.Echo").status == SERVING
    with pytest.raises(grpc.RpcError) as ei:
        health(channel, "shop.Nope")
    assert ei.value.code() == NOT_FOUND


def test_unknown_method_is_unimplemented(channel):
    for path, text in (("/shop.Echo/Nope", "unknown method Nope for service shop.Echo"),
                       ("/shop.Cart/Add", "unknown service shop.Cart"),
                       ("/grpc.health.v1.Health/Watch",
                        "unknown method Watch for service grpc.health.v1.Health")):
        with pytest.raises(grpc.RpcError) as ei:
            channel.unary_unary(path)(b"", timeout=TIMEOUT)
        assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert ei.value.details() == text


def test_compressed_request(channel, raw):
    echo, _ = stubs(channel)
    # grpcio compresses with gzip: we have no decompressor (grpc-go's answer)
    with pytest.raises(grpc.RpcError) as ei:
        echo(EchoRequest(message="z" * 100), compression=grpc.Compression.Gzip, timeout=TIMEOUT)
    assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "grpc-encoding" in ei.value.details()
    # a compressed flag without any grpc-encoding
    r = raw()
    sid = r.call("/shop.Echo/Echo", framed(b"\x0a\x01a", flag=1))
    r.pump(r.finished(sid))
    h = dict(r.of(sid, h2.events.ResponseReceived)[0].headers)
    assert h["grpc-status"] == "13"
    assert h["grpc-message"] == "grpc: compressed flag set with identity or empty encoding"


def test_request_checks(raw):
    r = raw()
    sid = r.call("/shop.Echo/Echo", b"{}", ctype="application/json")
    r.pump(r.finished(sid))
    h = dict(r.of(sid, h2.events.ResponseReceived)[0].headers)
    assert (h[":status"], h["grpc-status"]) == ("415", "3")
    assert h["grpc-message"] == 'invalid gRPC request content-type "application/json"'
    r.conn.send_headers(r.conn.get_next_available_stream_id(), [
        (":method", "GET"), (":scheme", "http"), (":path", "/shop.Echo/Echo"),
        (":authority", "echo"), ("content-type", "application/grpc")], end_stream=True)
    r.flush()
    sid = r.conn.highest_outbound_stream_id
    r.pump(r.finished(sid))
    h = dict(r.of(sid, h2.events.ResponseReceived)[0].headers)
    assert (h[":status"], h["grpc-status"]) == ("405", "13")
    assert h["grpc-message"] == \
        'Received a HEADERS frame with :method "GET" which should be POST'
    for body, text in ((b"", "grpc: no request message"),
                       (framed(b"") + framed(b""), "grpc: too many request messages"),
                       (framed(b"\x0a\x05a"), "grpc: error unmarshalling request"),
                       (framed(b"abc")[:6], "grpc: truncated request message")):
        sid = r.call("/shop.Echo/Echo", body)
        r.pump(r.finished(sid))
        h = dict(r.of(sid, h2.events.ResponseReceived)[0].headers)
        assert (h["grpc-status"], h.get("grpc-message")) == ("13", text)


# ---- curl ----

def test_curl_prior_knowledge(app, tmp_path):
    port = app[1]
    body = tmp_path / "req.bin"
    body.write_bytes(framed(EchoRequest(message="from curl").SerializeToString()))
    out = tmp_path / "out.bin"
    url = "http://127.0.0.1:%d/shop.Echo/Echo" % port
    p = curl("-v", "--http2-prior-knowledge", "-H", "content-type: application/grpc", "-H",
             "te: trailers", "--data-binary", "@%s" % body, "-o", str(out), url)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert "< HTTP/2 200" in err and "< grpc-status: 0" in err
    data = out.read_bytes()
    flag, n = struct.unpack(">BI", data[:5])
    assert flag == 0 and len(data) == 5 + n
    resp = EchoResponse.FromString(data[5:])
    assert resp.message == "from curl" and resp.hostname == POD
    # an empty request with the status in a header: Trailers-Only in the response headers
    body.write_bytes(framed(b""))
    p = curl("-sS", "-D", "-", "--http2-prior-knowledge", "-H", "content-type: application/grpc",
             "-H", "x-grpc-status: 7", "-H", "x-grpc-message: no way", "--data-binary",
             "@%s" % body, "-o", str(out), url)
    head = p.stdout.decode()
    assert p.returncode == 0, p.stderr
    assert "grpc-status: 7" in head and "grpc-message: no way" in head
    assert out.read_bytes() == b""


def test_http1_to_the_grpc_port_fails(app, channel):
    port = app[1]
    p = curl("--http1.1", "http://127.0.0.1:%d/shop.Echo/Echo" % port)
    assert p.returncode != 0
    # on the wire: the server's SETTINGS, GOAWAY(last stream 0, PROTOCOL_ERROR), then EOF
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.sendall(b"POST /shop.Echo/Echo HTTP/1.1\r\nHost: a\r\ncontent-type: application/grpc\r\n"
              b"content-length: 0\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    frames = []
    while data:
        n = int.from_bytes(data[:3], "big")
        frames.append((data[3], data[9:9 + n]))
        data = data[9 + n:]
    assert frames[0][0] == 4  # SETTINGS
    assert frames[-1] == (7, struct.pack(">II", 0, 1))  # GOAWAY PROTOCOL_ERROR
    echo, _ = stubs(channel)
    assert echo(EchoRequest(message="still"), timeout=TIMEOUT).message == "still"


# ---- command line ----

def test_grpc_port_turns_a_listen_address_to_grpc(app_factory):
    """The local mesh's way: weftctl up adds --listen ADDR:<containerPort>; --grpc-port picks
    which of them serve gRPC; the others stay HTTP/1.1."""
    gport = free_port()
    proc, addrs = app_factory("--listen", "127.0.0.1:0", "--listen", "127.0.0.1:%d" % gport,
                              "--grpc-port", gport, "--name", NAME, count=2)
    http_port = addrs[0][1]
    assert addrs[1][1] == gport
    p = curl("-i", "http://127.0.0.1:%d/healthz" % http_port)
    assert p.returncode == 0 and b"200" in p.stdout.split(b"\r\n")[0]
    with grpc.insecure_channel("127.0.0.1:%d" % gport) as ch:
        resp = stubs(ch)[0](EchoRequest(message="mesh"), timeout=TIMEOUT)
        assert resp.message == "mesh" and resp.hostname == NAME  # no --pod: --name
        assert health(ch, "").status == SERVING


def test_command_line_errors():
    def run(*args):
        return subprocess.run([app_path()] + list(args), capture_output=True, text=True,
                              timeout=TIMEOUT)
    p = run("--listen", "127.0.0.1:0", "--grpc-port", "9090")
    assert p.returncode == 2 and "--grpc-port 9090: no --listen address" in p.stderr
    p = run("--grpc-listen", "nope")
    assert p.returncode == 2 and "--grpc-listen" in p.stderr
    p = run("--grpc-listen", "127.0.0.1:0", "--grpc-port", "0")
    assert p.returncode == 2 and "--grpc-port" in p.stderr
    p = run("--help")
    assert p.returncode == 0 and "--grpc-listen" in p.stdout and "--grpc-port" in p.stdout


def test_stop_with_calls_in_flight(app_factory):
    """SIGTERM while calls wait on their timers and a stream is sending: exit 0, no leaks
    (the fixture checks the status and the sanitizer's report)."""
    proc, addrs = app_factory("--grpc-listen", "127.0.0.1:0")
    ch = grpc.insecure_channel("127.0.0.1:%d" % addrs[0][1])
    echo, stream = stubs(ch)
    futs = [echo.future(EchoRequest(message="w", delay_ms=5000), timeout=TIMEOUT)
            for _ in range(5)]
    it = stream(EchoRequest(message="s", count=1000, delay_ms=50), timeout=TIMEOUT)
    assert next(it).index == 0
    assert stop_process(proc) == 0
    for f in futs:
        with pytest.raises(grpc.RpcError) as ei:
            f.result()
        assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
    ch.close()


def test_http2_connection_error_gets_goaway(app, channel):
    """After the preface, a frame HTTP/2 forbids (DATA on stream 0): GOAWAY PROTOCOL_ERROR and
    the connection ends; other connections are unaffected."""
    s = socket.create_connection(("127.0.0.1", app[1]), timeout=TIMEOUT)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
              + b"\x00\x00\x02\x00\x00\x00\x00\x00\x00hi")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    frames = []
    while data:
        n = int.from_bytes(data[:3], "big")
        frames.append((data[3], data[9:9 + n]))
        data = data[9 + n:]
    goaway = [p for t, p in frames if t == 7]
    assert goaway and goaway[-1][4:8] == struct.pack(">I", 1)  # PROTOCOL_ERROR
    echo, _ = stubs(channel)
    assert echo(EchoRequest(message="fine"), timeout=TIMEOUT).message == "fine"
