"""weft-proxy's upstream HTTP/2 (proxy/upstream/pool_h2.h, uconn_h2.h) against real servers
nobody on the project wrote: Python's h2 (prior knowledge, tests/integration/h2server.py) and
grpcio. Clusters set typed_extension_protocol_options explicit_http_config
http2_protocol_options (or use_downstream_protocol_config, or the legacy cluster field), per
../shared/reference/protocols.md §1.5, §2.2-2.8: streams multiplexed on one connection up to
max_concurrent_streams, max_requests_per_connection, GOAWAY and RST_STREAM mapped to Envoy's
reset reasons, flags and details, trailers through, flow control bounded.
"""
import json
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory, route,
                      route_config, vhost)

assert proxy_factory  # fixture, imported for pytest

pytest.importorskip("h2", reason="python3-h2 (scripts/setup installs it)")
from h2server import H2Server  # noqa: E402

HPO = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
LOG = {"code": "%RESPONSE_CODE%", "flags": "%RESPONSE_FLAGS%",
       "details": "%RESPONSE_CODE_DETAILS%", "path": "%REQ(:PATH)%",
       "attempts": "%UPSTREAM_REQUEST_ATTEMPT_COUNT%", "protocol": "%PROTOCOL%",
       "up": "%UPSTREAM_PROTOCOL%"}


def h2_cluster(name, port, h2opts=None, common=None, downstream=False, legacy=False, **kw):
    c = cluster(name, [port], **kw)
    if legacy:
        c["http2_protocol_options"] = dict(h2opts or {})
        return c
    opts = {"@type": "type.googleapis.com/" + HPO}
    if downstream:
        opts["use_downstream_protocol_config"] = {"http_protocol_options": {},
                                                  "http2_protocol_options": dict(h2opts or {})}
    else:
        opts["explicit_http_config"] = {"http2_protocol_options": dict(h2opts or {})}
    if common:
        opts["common_http_protocol_options"] = common
    c["typed_extension_protocol_options"] = {HPO: opts}
    return c


def boot(cl, retry=None, **hcm):
    r = route(prefix="/", cluster=cl["name"], timeout="20s")
    if retry:
        r["route"]["retry_policy"] = retry
    rc = route_config([vhost("all", ["*"], [r])])
    lst = listener(rc, access_logs=[access_log(json_format=LOG)], **hcm)
    return bootstrap([lst], [cl])


def curl(*args, timeout=30):
    return subprocess.run(["curl", "-sS", "--max-time", "20"] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def logs(proxy, n):
    return [json.loads(line) for line in proxy.access_log_lines(n)]


@pytest.fixture
def srv():
    s = H2Server()
    yield s
    s.close()


def test_h1_downstream_to_h2_upstream_with_trailers(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    r = curl("-H", "te: trailers", "-H", "Expect:", "--data-binary", "x" * 70000,
             "-w", "\n%{http_code}", p.url("/echo?a=1"))
    body, _, code = r.stdout.rpartition("\n")
    assert code == "200", r.stdout + r.stderr
    echo = json.loads(body)
    assert echo["method"] == "POST" and echo["path"] == "/echo?a=1"
    assert echo["authority"] == "127.0.0.1:%d" % p.port  # Host -> :authority
    assert echo["body_bytes"] == 70000
    names = [h[0] for h in echo["headers"]]
    assert "host" not in names and "connection" not in names
    assert ("te", "trailers") in [tuple(h) for h in echo["headers"]]
    st = p.stats()
    assert st["cluster.h2be.upstream_cx_http2_total"] == 1
    assert logs(p, 1)[0]["code"] == 200


def parallel(fns):
    out = [None] * len(fns)

    def run(i):
        out[i] = fns[i]()
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(40)
    return out


def get(p, path, *extra):
    def f():
        r = curl("-w", "\n%{http_code}", *extra, p.url(path))
        body, _, code = r.stdout.rpartition("\n")
        return code, body
    return f


def test_streams_multiplexed_on_one_connection(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    res = parallel([get(p, "/slow?ms=700")] * 5)
    assert [r[0] for r in res] == ["200"] * 5
    assert len({json.loads(r[1])["conn"] for r in res}) == 1
    assert srv.max_active >= 2  # they ran concurrently
    st = p.stats()
    assert st["cluster.h2be.upstream_cx_total"] == 1
    assert st["cluster.h2be.upstream_rq_total"] == 5


def test_max_concurrent_streams_opens_another_connection(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port, {"max_concurrent_streams": 2})))
    res = parallel([get(p, "/slow?ms=800")] * 4)
    assert [r[0] for r in res] == ["200"] * 4
    st = p.stats()
    assert st["cluster.h2be.upstream_cx_total"] == 2
    assert st["cluster.h2be.upstream_cx_http2_total"] == 2


def test_peer_max_concurrent_streams_is_the_limit(proxy_factory):
    s = H2Server(max_streams=1)
    try:
        p = proxy_factory(boot(h2_cluster("h2be", s.port)))
        assert get(p, "/echo")()[0] == "200"  # the peer's SETTINGS are known now
        res = parallel([get(p, "/slow?ms=600")] * 3)
        assert [r[0] for r in res] == ["200"] * 3
        # the connection whose SETTINGS were known carried one stream at a time (a new
        # connection may carry more until the peer's SETTINGS arrive, as with Envoy)
        assert s.max_by_conn[1] == 1
        assert p.stats()["cluster.h2be.upstream_cx_total"] >= 2
    finally:
        s.close()


def test_max_requests_per_connection(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port,
                                      common={"max_requests_per_connection": 2})))
    conns = [json.loads(get(p, "/echo")()[1])["conn"] for _ in range(3)]
    assert conns[0] == conns[1] != conns[2]
    st = p.stats()
    assert st["cluster.h2be.upstream_cx_total"] == 2
    assert st["cluster.h2be.upstream_cx_max_requests"] >= 1


def test_goaway_refused_stream_retried(srv, proxy_factory):
    retry = {"retry_on": "refused-stream", "num_retries": 2}
    p = proxy_factory(boot(h2_cluster("h2be", srv.port), retry=retry))
    code, body = get(p, "/goaway-once")()
    assert code == "200", body
    assert json.loads(body)["conn"] == 2  # the retry went to a new connection
    st = p.stats()
    assert st["cluster.h2be.upstream_rq_retry"] == 1
    assert st["cluster.h2be.upstream_cx_close_notify"] == 1
    line = logs(p, 1)[0]
    assert line["code"] == 200 and line["attempts"] == 2


def test_goaway_without_retry_is_refused_stream_reset(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    code, body = get(p, "/goaway-once")()
    assert code == "503"
    assert body.endswith("reset reason: remote refused stream reset")
    line = logs(p, 1)[0]
    assert line["flags"] == "UR"
    assert line["details"] == \
        "upstream_reset_before_response_started{remote_refused_stream_reset}"


@pytest.mark.parametrize("path,reason", [("/rst", "remote_reset"),
                                         ("/refuse", "remote_refused_stream_reset")])
def test_rst_stream_mapped(srv, proxy_factory, path, reason):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    code, _ = get(p, path)()
    assert code == "503"
    line = logs(p, 1)[0]
    assert line["flags"] == "UR"
    assert line["details"] == "upstream_reset_before_response_started{%s}" % reason
    assert p.stats()["cluster.h2be.http2.rx_reset"] == 1


def test_http1_answer_on_http2_cluster_is_protocol_error(proxy_factory):
    s = H2Server(mode="h1")
    try:
        p = proxy_factory(boot(h2_cluster("h2be", s.port)))
        code, _ = get(p, "/x")()
        assert code == "502"
        line = logs(p, 1)[0]
        assert line["flags"] == "UPE"
        assert line["details"] == "upstream_reset_before_response_started{protocol_error}"
    finally:
        s.close()


def test_http2_answer_on_http1_cluster_is_protocol_error(srv, proxy_factory):
    p = proxy_factory(boot(cluster("h1be", [srv.port])))
    code, _ = get(p, "/x")()
    assert code == "502"
    line = logs(p, 1)[0]
    assert line["flags"] == "UPE"
    assert line["details"] == "upstream_reset_before_response_started{protocol_error}"


def test_use_downstream_protocol(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("auto", srv.port, downstream=True)))
    code, body = get(p, "/echo", "--http2-prior-knowledge")()
    assert code == "200", body
    assert p.stats()["cluster.auto.upstream_cx_http2_total"] == 1
    # an HTTP/1.1 request goes upstream as HTTP/1.1: the h2-only server answers with frames
    code, _ = get(p, "/echo")()
    assert code == "502"
    assert p.stats()["cluster.auto.upstream_cx_http2_total"] == 1
    # %UPSTREAM_PROTOCOL% is the upstream connection's (Envoy's upstream stream info)
    assert [(l["protocol"], l["up"]) for l in logs(p, 2)] == [("HTTP/2", "HTTP/2"),
                                                             ("HTTP/1.1", "HTTP/1.1")]


def test_legacy_cluster_http2_protocol_options(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port, legacy=True)))
    assert get(p, "/echo")()[0] == "200"
    assert p.stats()["cluster.h2be.upstream_cx_http2_total"] == 1


def test_trailers_reach_http2_client(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    r = curl("--http2-prior-knowledge", "-v", p.url("/echo"))
    assert "x-trl: yes" in r.stderr.lower(), r.stderr  # curl -v prints trailers
    r = curl("--http2-prior-knowledge", "-v", p.url("/trailers-only"))
    assert "grpc-status: 14" in r.stderr.lower()


def test_unsupported_h2_field_refused(srv, tmp_path):
    from proxyfix import proxy_path, write_bootstrap
    bs = boot(h2_cluster("h2be", srv.port, {"allow_connect": True}))
    bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = 1
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "-c", path, "--mode", "validate"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode != 0
    assert "http2_protocol_options" in r.stderr and "allow_connect" in r.stderr, r.stderr


def test_slow_reader_bounded(proxy_factory):
    s = H2Server()
    try:
        p = proxy_factory(boot(h2_cluster("h2be", s.port, {"initial_stream_window_size": 65535,
                                                           "initial_connection_window_size": 65535})))
        c = socket.create_connection(("127.0.0.1", p.port))
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.sendall(b"GET /big?n=200000000 HTTP/1.1\r\nhost: x\r\n\r\n")
        time.sleep(2)  # nobody reads
        # the proxy holds at most a window and its socket buffers of the 200 MB
        assert s.big_sent < 16 * 1024 * 1024, s.big_sent
        got = 0
        while got < 3 * 1024 * 1024:
            d = c.recv(1 << 20)
            assert d
            got += len(d)
        assert s.big_sent > 3 * 1024 * 1024 - 65535  # reading lets it flow again
        c.close()
    finally:
        s.close()


# ---------- gRPC (grpcio client -> weft-proxy h2c -> HTTP/2 cluster -> grpcio server) ----------

@pytest.fixture
def grpc_server():
    """weft.Test on a grpcio server: Unary (echo:REQ, "fail" aborts NOT_FOUND, trailer
    x-served), Stream (int(REQ or 3) messages), Collect (client streaming, joined by ",")."""
    grpc = pytest.importorskip("grpc", reason="python3-grpcio (scripts/setup installs it)")
    from concurrent import futures

    def unary(req, ctx):
        if req == b"fail":
            ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
        ctx.set_trailing_metadata((("x-served", "yes"),))
        return b"echo:" + req

    def stream(req, ctx):
        for i in range(int(req or b"3")):
            yield b"msg%d" % i

    def collect(it, ctx):  # client streaming (test_proxy_grpc_stats)
        return b",".join(it)

    handler = grpc.method_handlers_generic_handler("weft.Test", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
        "Collect": grpc.stream_unary_rpc_method_handler(collect)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port
    server.stop(0)


def test_grpc_unary_and_server_streaming(grpc_server, proxy_factory):
    import grpc
    p = proxy_factory(boot(h2_cluster("grpc", grpc_server)))
    ch = grpc.insecure_channel("127.0.0.1:%d" % p.port, options=[("grpc.enable_http_proxy", 0)])
    try:
        unary = ch.unary_unary("/weft.Test/Unary")
        resp, call = unary.with_call(b"hello", timeout=10)
        assert resp == b"echo:hello"
        assert call.code() == grpc.StatusCode.OK
        assert ("x-served", "yes") in call.trailing_metadata()  # trailers came through
        with pytest.raises(grpc.RpcError) as ei:
            unary(b"fail", timeout=10)
        assert ei.value.code() == grpc.StatusCode.NOT_FOUND
        assert ei.value.details() == "no such thing"
        msgs = list(ch.unary_stream("/weft.Test/Stream")(b"5", timeout=10))
        assert msgs == [b"msg%d" % i for i in range(5)]
    finally:
        ch.close()
    st = p.stats()
    assert st["cluster.grpc.upstream_cx_http2_total"] == 1
    assert st["cluster.grpc.upstream_rq_total"] == 3
    lines = logs(p, 3)
    assert [line["protocol"] for line in lines] == ["HTTP/2"] * 3


def test_idle_timeout_closes_http2_connection(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port, common={"idle_timeout": "0.3s"})))
    assert get(p, "/echo")()[0] == "200"
    p.wait_stat("cluster.h2be.upstream_cx_idle_timeout", 1, timeout=5)
    p.wait_stat("cluster.h2be.upstream_cx_active", 0, timeout=5)
    assert json.loads(get(p, "/echo")()[1])["conn"] == 2


@pytest.mark.skipif(not shutil.which("h2load"), reason="h2load (nghttp2-client)")
def test_h2load_many_streams_both_sides(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    r = subprocess.run(["h2load", "-n", "200", "-c", "2", "-m", "20", p.url("/slow?ms=50")],
                       capture_output=True, text=True, timeout=60)
    assert "200 succeeded" in r.stdout and "status codes: 200 2xx" in r.stdout, r.stdout
    st = p.stats()
    assert st["cluster.h2be.upstream_rq_total"] == 200
    assert st["cluster.h2be.upstream_cx_total"] == 1  # two clients' streams share it
    assert srv.max_active >= 2


def test_slow_upstream_reader_bounds_upload(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    c = socket.create_connection(("127.0.0.1", p.port))
    c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    total = 200 * 1024 * 1024
    c.sendall(b"POST /sink HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % total)
    c.settimeout(0.5)
    sent, chunk = 0, b"u" * 65536
    deadline = time.time() + 3
    while time.time() < deadline:
        try:
            sent += c.send(chunk)
        except socket.timeout:
            continue
    # the upstream's window (65535) and the proxy's per-stream queue hold it back
    assert srv.received <= 65535
    assert sent < 16 * 1024 * 1024, sent
    srv.drop()  # the upstream goes away: the request ends (503 UC), the proxy can drain
    c.settimeout(10)
    assert c.recv(100).startswith(b"HTTP/1.1 503")
    c.close()
    assert logs(p, 1)[0]["flags"] == "UC"


def test_tls_alpn_h2(proxy_factory):
    from test_proxy_tls import certs as _certs, upstream_tls  # noqa: F401 (fixture body)
    gen = _certs.__wrapped__() if hasattr(_certs, "__wrapped__") else None
    if gen is None:
        pytest.skip("certs fixture not reusable")
    c = next(gen)
    s = H2Server(tls=(c["server.crt"], c["server.key"]))
    try:
        cl = h2_cluster("h2tls", s.port)
        ts = upstream_tls(c)
        ts["typed_config"]["common_tls_context"]["alpn_protocols"] = ["istio-h2", "istio", "h2"]
        cl["transport_socket"] = ts
        p = proxy_factory(boot(cl))
        code, body = get(p, "/echo")()
        assert code == "200", body
        # :scheme stays the downstream's (x-forwarded-proto http), as Envoy keeps it
        assert json.loads(body)["scheme"] == "http"
        assert s.alpn == ["h2"]
        assert p.stats()["cluster.h2tls.upstream_cx_http2_total"] == 1
    finally:
        s.close()
        next(gen, None)


def test_goaway_mid_flight(srv, proxy_factory):
    """A stream below the GOAWAY's last_stream_id finishes on the old connection; the one
    above it is refused and retried on a new one (refused-stream)."""
    retry = {"retry_on": "refused-stream", "num_retries": 1}
    p = proxy_factory(boot(h2_cluster("h2be", srv.port), retry=retry))

    def later():
        time.sleep(0.25)
        return get(p, "/goaway-once")()
    slow, gone = parallel([get(p, "/slow?ms=900"), later])
    assert slow[0] == "200" and gone[0] == "200", (slow, gone)
    assert json.loads(slow[1])["conn"] == 1
    assert json.loads(gone[1])["conn"] == 2
    st = p.stats()
    assert st["cluster.h2be.upstream_rq_retry"] == 1
    assert st["cluster.h2be.upstream_cx_close_notify"] == 1
    assert st["cluster.h2be.upstream_cx_total"] == 2
