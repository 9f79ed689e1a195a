"""weft-proxy as an HTTP/1.1 data plane: the behaviour operators rely on, checked against
../shared/reference/envoy-istio-behaviour.md (§1 flags, §2 details and bodies, §5 access
logs, §6 stats, §9 admin) and the operator reports B002, B003, B007, B012 in
../shared/cases/operator-reports.md.

Every test starts its own weft-proxy (proxyfix.start_proxy through the proxy_factory
fixture, which asserts a clean exit and no sanitizer report at teardown) in front of
weft-app backends started once per module.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter

import pytest

from procs import running_apps, free_port, start_app, stop_process
from proxyfix import (ENVOY_TEXT_RE, ISTIO_JSON_FORMAT, ISTIO_TEXT_FORMAT, ISTIO_TEXT_RE,
                      access_log, bootstrap, cluster, endpoint, header_match, listener,
                      proxy_factory, proxy_path, route, route_config, simple_routes, vhost,
                      write_bootstrap)

assert proxy_factory  # fixture, imported for pytest

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
START_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
RESET_BODY = "upstream connect error or disconnect/reset before headers. "
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"


def pattern_bytes(n):
    return (PATTERN * (n // 64 + 1))[:n]


# ---------- backends ----------

@pytest.fixture(scope="module")
def apps():
    """Three weft-app backends: {"a": port, "b": port, "c": port}."""
    with running_apps("a", "b", "c") as ports:
        yield ports


def json_logs(**kw):
    return [access_log("@LOG:json@", json_format=ISTIO_JSON_FORMAT)]


def istio_logs():
    return [access_log("@LOG:istio@", fmt=ISTIO_TEXT_FORMAT),
            access_log("@LOG:json@", json_format=ISTIO_JSON_FORMAT)]


def one_backend(apps, rc=None, logs=None, name="a", cname="backend", **ckw):
    """Bootstrap: one listener (stat_prefix ingress_http) -> cluster `cname` on app `name`."""
    return bootstrap([listener(rc or simple_routes(cname), access_logs=logs)],
                     [cluster(cname, [apps[name]], **ckw)])


def json_log(proxy, n):
    return [json.loads(line) for line in proxy.access_log_lines(n, name="json")]


def istio_line(proxy, n):
    lines = proxy.access_log_lines(n, name="istio")
    out = []
    for line in lines:
        m = ISTIO_TEXT_RE.match(line)
        assert m, "not an Istio text access-log line: %r" % line
        out.append((line, m.groupdict()))
    return out


def echo(body):
    """Parse a weft-app /echo answer: (doc, {lower-case header name: [values]})."""
    doc = json.loads(body)
    hdrs = {}
    for k, v in doc["headers"]:
        hdrs.setdefault(k.lower(), []).append(v)
    return doc, hdrs


class _KeepOpen:
    """A file whose close() does nothing (HTTPResponse closes its file after each body)."""

    def __init__(self, f):
        self._f = f

    def __getattr__(self, name):
        return getattr(self._f, name)

    def close(self):
        pass


class _OneFile:
    """Lets http.client.HTTPResponse read successive responses from one buffered file."""

    def __init__(self, f):
        self.f = f if isinstance(f, _KeepOpen) else _KeepOpen(f)

    def makefile(self, *a, **k):
        return self.f


def read_responses(sock, n, method="GET"):
    """Read n HTTP responses from sock -> [(status, headers dict, body)]."""
    f = _KeepOpen(sock.makefile("rb"))
    out = []
    for _ in range(n):
        r = http.client.HTTPResponse(_OneFile(f), method=method)
        r.begin()
        body = r.read()
        out.append((r.status, {k.lower(): v for k, v in r.getheaders()}, body))
    return out, f


def recv_closed(sock, timeout=5):
    """True when the peer closes sock (EOF) within timeout (any pending bytes are read)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True
    return False


# ---------- 200 through the proxy ----------

def test_200_through_proxy_headers_and_default_access_log(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, logs=[access_log()]))
    status, hdrs, body = proxy.request("GET", "/echo", headers={"User-Agent": "h7-test/1"})
    assert status == 200
    assert hdrs["server"] == "envoy"
    assert hdrs["x-weft-app"] == "a"
    assert re.fullmatch(r"\d+", hdrs["x-envoy-upstream-service-time"]), hdrs
    doc, up = echo(body)
    assert doc["path"] == "/echo"
    # x-request-id generated (a UUID) and forwarded; x-forwarded-proto set
    assert len(up["x-request-id"]) == 1 and UUID_RE.match(up["x-request-id"][0]), up
    generated = up["x-request-id"][0]
    assert up["x-forwarded-proto"] == ["http"]
    # a client x-request-id is kept
    status, _, body2 = proxy.request("GET", "/echo", headers={"x-request-id": "client-id-42"})
    assert status == 200
    assert echo(body2)[1]["x-request-id"] == ["client-id-42"]

    lines = proxy.access_log_lines(2)
    m = ENVOY_TEXT_RE.match(lines[0])
    assert m, "not Envoy's default format: %r" % lines[0]
    f = m.groupdict()
    assert START_TIME_RE.match(f["start_time"]), f
    assert (f["method"], f["path"], f["protocol"]) == ("GET", "/echo", "HTTP/1.1")
    assert f["response_code"] == "200" and f["response_flags"] == "-"
    assert f["bytes_received"] == "0" and int(f["bytes_sent"]) == len(body)
    assert f["upstream_service_time"] == hdrs["x-envoy-upstream-service-time"]
    assert f["user_agent"] == "h7-test/1"
    assert f["request_id"] == generated
    assert f["authority"] == "127.0.0.1:%d" % proxy.port
    assert f["upstream_host"] == "127.0.0.1:%d" % apps["a"]
    assert ENVOY_TEXT_RE.match(lines[1]).group("request_id") == "client-id-42"

    st = proxy.stats()
    assert st["cluster.backend.upstream_rq_200"] == 2
    assert st["cluster.backend.upstream_rq_2xx"] == 2
    assert st["cluster.backend.upstream_rq_total"] == 2
    assert st["http.ingress_http.downstream_rq_2xx"] == 2
    assert st["http.ingress_http.downstream_rq_total"] == 2


def test_router_rq_total_counts_routed_requests(apps, proxy_factory):
    # Reference §6.1: the router filter adds http.<prefix>.rq_total (every request it decodes).
    proxy = proxy_factory(one_backend(apps))
    for _ in range(2):
        assert proxy.request("GET", "/healthz")[0] == 200
    assert proxy.stats()["http.ingress_http.rq_total"] == 2


def test_json_access_log_typed_values(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    status, hdrs, body = proxy.request("POST", "/upload", body=b"x" * 1000,
                                       headers={"User-Agent": "h7"})
    assert status == 200 and body == b"received=1000\n"
    raw = proxy.access_log_lines(1, name="json")[0]
    keys = [k for k, _ in json.loads(raw, object_pairs_hook=lambda kv: kv)]
    assert keys == sorted(keys), "json_format keys are always sorted (§5.3): %s" % keys
    e = json.loads(raw)
    assert set(e) == set(ISTIO_JSON_FORMAT)
    assert e["response_code"] == 200
    assert e["bytes_received"] == 1000
    assert e["bytes_sent"] == len(body)
    assert isinstance(e["duration"], int) and not isinstance(e["duration"], bool)
    assert e["upstream_transport_failure_reason"] is None
    assert e["requested_server_name"] is None
    assert e["x_forwarded_for"] is None or isinstance(e["x_forwarded_for"], str)
    assert e["response_flags"] == "-"
    assert e["response_code_details"] == "via_upstream"
    assert e["method"] == "POST" and e["path"] == "/upload" and e["protocol"] == "HTTP/1.1"
    assert e["upstream_cluster"] == "backend"
    assert e["upstream_host"] == "127.0.0.1:%d" % apps["a"]
    assert e["route_name"] == "default"
    assert e["user_agent"] == "h7"
    assert UUID_RE.match(e["request_id"])
    assert e["authority"] == "127.0.0.1:%d" % proxy.port
    assert e["downstream_local_address"] == "127.0.0.1:%d" % proxy.port
    assert re.fullmatch(r"127\.0\.0\.1:\d+", e["downstream_remote_address"])
    assert re.fullmatch(r"127\.0\.0\.1:\d+", e["upstream_local_address"])
    assert START_TIME_RE.match(e["start_time"])
    assert e["upstream_service_time"] == hdrs["x-envoy-upstream-service-time"]


# ---------- local replies: NR, NC, UT, UF, UH, UO, UC ----------

def test_no_route_404_nr(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [route(prefix="/api", cluster="backend")])])
    proxy = proxy_factory(one_backend(apps, rc=rc, logs=istio_logs()))
    status, _, body = proxy.request("GET", "/other")
    assert status == 404
    assert body == b""
    line, f = istio_line(proxy, 1)[0]
    assert "404 NR route_not_found" in line
    assert f["upstream_cluster"] == "-" and f["upstream_host"] == "-"
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (404, "NR", "route_not_found")
    assert e["upstream_cluster"] is None
    st = proxy.stats()
    assert st["http.ingress_http.no_route"] == 1
    assert st["cluster.backend.upstream_rq_total"] == 0


def test_no_cluster_503_nc(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="missing")])])
    proxy = proxy_factory(one_backend(apps, rc=rc, logs=istio_logs()))
    status, _, body = proxy.request("GET", "/healthz")
    assert status == 503
    assert body == b""
    line, f = istio_line(proxy, 1)[0]
    assert "503 NC cluster_not_found" in line, line
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (503, "NC", "cluster_not_found")
    assert proxy.stats()["http.ingress_http.no_cluster"] == 1


def test_route_timeout_504_ut(apps, proxy_factory):
    rc = simple_routes("backend", timeout="0.2s")
    proxy = proxy_factory(one_backend(apps, rc=rc, logs=json_logs()))
    t0 = time.monotonic()
    status, hdrs, body = proxy.request("GET", "/delay/3000")
    took = time.monotonic() - t0
    assert status == 504
    assert body == b"upstream request timeout"
    assert hdrs.get("content-type", "").startswith("text/plain")
    assert took < 2.0, "the 0.2 s route timeout fired after %.2f s" % took
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (504, "UT", "response_timeout")
    st = proxy.stats()
    assert st["cluster.backend.upstream_rq_timeout"] == 1
    assert st["cluster.backend.upstream_rq_504"] == 1
    assert st["http.ingress_http.downstream_rq_5xx"] == 1


def test_connection_refused_503_uf(apps, proxy_factory):
    dead = free_port()  # nothing listens there
    bs = bootstrap([listener(simple_routes(), access_logs=json_logs())],
                   [cluster("backend", [dead])])
    proxy = proxy_factory(bs)
    status, _, body = proxy.request("GET", "/healthz")
    assert status == 503
    assert body.decode() == (
        "upstream connect error or disconnect/reset before headers. reset reason: remote "
        "connection failure, transport failure reason: delayed connect error: Connection refused")
    e = json_log(proxy, 1)[0]
    assert e["response_code"] == 503 and e["response_flags"] == "UF"
    assert e["response_code_details"] == ("upstream_reset_before_response_started{remote_"
                                          "connection_failure|delayed_connect_error:_Connection_"
                                          "refused}")
    # the operator prints spaces as '_' (Envoy's stream_info_formatter.cc; security.md §3.5)
    assert e["upstream_transport_failure_reason"] == "delayed_connect_error:_Connection_refused"
    st = proxy.stats()
    assert st["cluster.backend.upstream_cx_connect_fail"] >= 1
    assert st["cluster.backend.upstream_rq_503"] == 1
    proxy.stop()  # exit 0, no sanitizer report


def test_connect_timeout_503_uf(apps, proxy_factory):
    # A listener whose accept queue is full: Linux drops further SYNs, so connect() hangs.
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fillers = []
    try:
        ls.bind(("127.0.0.1", 0))
        ls.listen(0)
        port = ls.getsockname()[1]
        for _ in range(8):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", port))
            fillers.append(c)
        time.sleep(0.1)
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(0.3)
        try:
            probe.connect(("127.0.0.1", port))
            pytest.skip("this kernel does not drop SYNs on a full accept queue")
        except socket.timeout:
            pass
        finally:
            probe.close()
        bs = bootstrap([listener(simple_routes(), access_logs=json_logs())],
                       [cluster("backend", [port], connect_timeout="0.25s")])
        proxy = proxy_factory(bs)
        t0 = time.monotonic()
        status, _, body = proxy.request("GET", "/healthz")
        took = time.monotonic() - t0
        assert status == 503
        assert body.decode().startswith(RESET_BODY + "reset reason: connection timeout"), body
        assert took < 3.0
        e = json_log(proxy, 1)[0]
        assert e["response_flags"] == "UF"
        assert e["response_code_details"].startswith(
            "upstream_reset_before_response_started{connection_timeout"), e
        assert proxy.stats()["cluster.backend.upstream_cx_connect_timeout"] == 1
        proxy.stop()  # exit 0, no sanitizer report
    finally:
        for c in fillers:
            c.close()
        ls.close()


def test_no_healthy_upstream_503_uh(apps, proxy_factory):
    # healthy_panic_threshold 0: with Envoy's default 50 % a cluster with no healthy host is
    # in panic and uses every host (test_proxy_outlier.py); 0 is what Istio sets
    bs = bootstrap([listener(simple_routes(), access_logs=json_logs())],
                   [cluster("backend", [endpoint(apps["a"], health="UNHEALTHY"),
                                        endpoint(apps["b"], health="UNHEALTHY")],
                            common_lb_config={"healthy_panic_threshold": {"value": 0}})])
    proxy = proxy_factory(bs)
    status, _, body = proxy.request("GET", "/healthz")
    assert status == 503
    assert body == b"no healthy upstream"
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (503, "UH", "no_healthy_upstream")
    st = proxy.stats()
    assert st["cluster.backend.upstream_rq_503"] == 1
    assert st["cluster.backend.membership_healthy"] == 0
    assert st["cluster.backend.membership_total"] == 2
    _, _, text = proxy.admin("/clusters")
    assert ("backend::127.0.0.1:%d::health_flags::/failed_eds_health" % apps["a"]) \
        in text.decode().splitlines()


def test_circuit_breaker_overflow_503_uo(apps, proxy_factory):
    bs = bootstrap([listener(simple_routes(), access_logs=json_logs())],
                   [cluster("backend", [apps["a"]], circuit_breakers={"max_requests": 1})])
    proxy = proxy_factory(bs)
    results = {}

    def slow():
        results["slow"] = proxy.request("GET", "/delay/800")

    t = threading.Thread(target=slow)
    t.start()
    try:
        st = proxy.wait_stat("cluster.backend.upstream_rq_active", 1, timeout=5)
        assert st["cluster.backend.upstream_rq_active"] == 1
        status, hdrs, body = proxy.request("GET", "/healthz")
    finally:
        t.join(timeout=10)
    assert results["slow"][0] == 200
    assert status == 503
    assert hdrs.get("x-envoy-overloaded") == "true"
    assert body.decode().startswith(RESET_BODY + "reset reason: overflow"), body
    logs = json_log(proxy, 2)
    uo = [e for e in logs if e["response_code"] == 503]
    assert len(uo) == 1 and uo[0]["response_flags"] == "UO"
    st = proxy.stats()
    assert st["cluster.backend.upstream_rq_pending_overflow"] == 1
    assert st["cluster.backend.upstream_rq_503"] == 1
    proxy.stop()  # exit 0, no sanitizer report


def test_upstream_hangup_503_uc(apps, proxy_factory):
    # B012, deterministic part: the backend reads the request and closes without answering.
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    status, _, body = proxy.request("GET", "/hangup")
    assert status == 503
    assert body.decode().startswith(RESET_BODY + "reset reason: connection termination"), body
    e = json_log(proxy, 1)[0]
    assert e["response_flags"] == "UC"
    assert e["response_code_details"] == \
        "upstream_reset_before_response_started{connection_termination}"
    # not retried by default: one upstream request
    assert proxy.stats()["cluster.backend.upstream_rq_total"] == 1
    proxy.stop()  # exit 0, no sanitizer report


# ---------- load balancing and pools ----------

def _count_apps(proxy, n, path="/healthz", conns=4):
    """n requests over `conns` keep-alive client connections -> Counter of x-weft-app."""
    counts = Counter()
    errors = []
    lock = threading.Lock()

    def worker(k):
        try:
            c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            local = Counter()
            for _ in range(k):
                c.request("GET", path)
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    raise AssertionError("status %d" % r.status)
                local[r.getheader("x-weft-app")] += 1
            c.close()
            with lock:
                counts.update(local)
        except Exception as e:  # reported below
            errors.append(repr(e))

    per = [n // conns + (1 if i < n % conns else 0) for i in range(conns)]
    ts = [threading.Thread(target=worker, args=(k,)) for k in per]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert sum(counts.values()) == n
    return counts


def test_weighted_clusters_20_80(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", weighted=[("ca", 20),
                                                                       ("cb", 80)])])])
    bs = bootstrap([listener(rc)], [cluster("ca", [apps["a"]]), cluster("cb", [apps["b"]])])
    proxy = proxy_factory(bs)
    counts = _count_apps(proxy, 5000)
    share_a = counts["a"] / 5000.0
    assert 0.17 <= share_a <= 0.23, counts
    assert counts["a"] + counts["b"] == 5000
    # keep-alive client connections: 4 downstream connections carried the 5000 requests
    assert proxy.stats()["http.ingress_http.downstream_cx_total"] == 4


def test_upstream_keepalive_reuses_connections(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps))
    for _ in range(200):
        assert proxy.request("GET", "/healthz")[0] == 200
    st = proxy.stats()
    assert st["cluster.backend.upstream_rq_total"] == 200
    assert st["cluster.backend.upstream_cx_total"] <= 5, st["cluster.backend.upstream_cx_total"]


def test_max_requests_per_connection_one(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, max_requests_per_connection=1))
    for _ in range(50):
        assert proxy.request("GET", "/healthz")[0] == 200
    st = proxy.stats()
    assert st["cluster.backend.upstream_rq_total"] == 50
    assert st["cluster.backend.upstream_cx_total"] == 50


def test_round_robin_is_even(apps, proxy_factory):
    bs = bootstrap([listener(simple_routes())],
                   [cluster("backend", [apps["a"], apps["b"], apps["c"]],
                            lb_policy="ROUND_ROBIN")])
    proxy = proxy_factory(bs)
    counts = _count_apps(proxy, 300, conns=1)
    assert counts == Counter({"a": 100, "b": 100, "c": 100}), counts


@pytest.mark.parametrize("policy", ["LEAST_REQUEST", "RANDOM"])
def test_lb_policy_reaches_every_host(apps, proxy_factory, policy):
    bs = bootstrap([listener(simple_routes())],
                   [cluster("backend", [apps["a"], apps["b"], apps["c"]], lb_policy=policy)])
    proxy = proxy_factory(bs)
    counts = _count_apps(proxy, 150, conns=2)
    assert set(counts) == {"a", "b", "c"}, counts
    assert min(counts.values()) >= 10, counts


# ---------- HTTP/1.1 codec through the proxy ----------

def test_chunked_request_body_arrives_whole(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    chunks = [b"a" * 1000, b"b" * 70000, b"c" * 29000]
    with proxy.connect() as s:
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for c in chunks:
            s.sendall(b"%x\r\n" % len(c) + c + b"\r\n")
        s.sendall(b"0\r\n\r\n")
        (resp,), _ = read_responses(s, 1, "POST")
    assert resp[0] == 200
    assert resp[2] == b"received=100000\n"
    assert json_log(proxy, 1)[0]["bytes_received"] == 100000


def test_chunked_response_arrives_whole(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    n = 100000
    status, hdrs, body = proxy.request("GET", "/chunked/%d" % n)
    assert status == 200
    assert body == pattern_bytes(n)
    assert json_log(proxy, 1)[0]["bytes_sent"] == n


def http10_backend(apps, **h1):
    """one_backend with the listener's http_protocol_options set to h1."""
    return bootstrap([listener(simple_routes("backend"), http_protocol_options=h1)],
                     [cluster("backend", [apps["a"]])])


def test_http10_refused_by_default_426_low_version(apps, proxy_factory):
    """Envoy's HCM (and so Istio, which leaves accept_http_10 unset) answers an HTTP/1.0
    request 426 Upgrade Required, details low_version, and never forwards it."""
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    with proxy.connect() as s:
        s.sendall(b"GET /healthz HTTP/1.0\r\nHost: example\r\n\r\n")
        (resp,), f = read_responses(s, 1)
        assert resp[0] == 426
        assert resp[2] == b""
        s.settimeout(5)
        assert f.read() == b"", "the connection stays open after the 426"
    entry = json_log(proxy, 1)[0]
    assert entry["response_code"] == 426
    assert entry["response_code_details"] == "low_version"
    assert entry["upstream_host"] is None, "an HTTP/1.0 request was forwarded"


def test_http10_request_then_close(apps, proxy_factory):
    proxy = proxy_factory(http10_backend(apps, accept_http_10=True))
    with proxy.connect() as s:
        s.sendall(b"GET /healthz HTTP/1.0\r\nHost: example\r\n\r\n")
        (resp,), f = read_responses(s, 1)
        assert resp[0] == 200
        assert resp[2] == b"ok"
        s.settimeout(5)
        assert f.read() == b"", "the connection stays open after an HTTP/1.0 response"


def test_http10_default_host_routes_and_goes_upstream(apps, proxy_factory):
    """default_host_for_http_10: the Host of an HTTP/1.0 request without one, for routing
    (a virtual host for that domain only) and upstream."""
    rc = {"name": "local", "virtual_hosts": [{"name": "only", "domains": ["svc.example"],
          "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "backend"}}]}]}
    proxy = proxy_factory(bootstrap(
        [listener(rc, http_protocol_options={"accept_http_10": True,
                                             "default_host_for_http_10": "svc.example"})],
        [cluster("backend", [apps["a"]])]))
    with proxy.connect() as s:
        s.sendall(b"GET /echo HTTP/1.0\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
    assert resp[0] == 200
    headers = {k.lower(): v for k, v in json.loads(resp[2])["headers"]}
    assert headers["host"] == "svc.example"


def test_pipelined_requests_answered_in_order(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps))
    reqs = (b"GET /delay/150 HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /status/201 HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /bytes/10 HTTP/1.1\r\nHost: x\r\n\r\n")
    with proxy.connect() as s:
        s.sendall(reqs)
        resps, _ = read_responses(s, 3)
    assert [r[0] for r in resps] == [200, 201, 200]
    assert resps[0][2] == b"delayed 150\n"
    assert resps[1][2] == b"status 201\n"
    assert resps[2][2] == pattern_bytes(10)


def test_expect_100_continue(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps))
    with proxy.connect() as s:
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        s.settimeout(5)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = s.recv(4096)
            assert chunk, "connection closed before 100 Continue"
            got += chunk
        head, _, rest = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 100 "), head
        s.sendall(b"hello")
        f = s.makefile("rb")
        r = http.client.HTTPResponse(_OneFile(f), method="POST")
        if rest:
            # the final response may already be buffered only if the body was read: it was not
            raise AssertionError("bytes after 100 Continue before the body was sent: %r" % rest)
        r.begin()
        assert r.status == 200
        assert r.read() == b"received=5\n"


# ---------- routing (B002, B003) ----------

def _gateway_rc(ignore_port=True):
    return route_config([vhost("shop", ["shop.example.internal"],
                               [route(prefix="/", cluster="backend", name="storefront")])],
                        name="http.80", ignore_port_in_host_matching=ignore_port)


def test_b002_host_with_port_matches_gateway_route(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, rc=_gateway_rc(), logs=json_logs()))
    hosts = ["shop.example.internal", "shop.example.internal:80",
             "shop.example.internal:31380"]
    for h in hosts:
        status, _, body = proxy.request("GET", "/echo", headers={"Host": h})
        assert status == 200, h
        assert echo(body)[1]["host"] == [h], "the Host header reaches the backend unchanged"
    status, _, body = proxy.request("GET", "/echo", headers={"Host": "other.example.internal:80"})
    assert status == 404 and body == b""
    logs = json_log(proxy, 4)
    for e in logs[:3]:
        assert (e["response_flags"], e["response_code_details"]) == ("-", "via_upstream")
    assert (logs[3]["response_code"], logs[3]["response_flags"],
            logs[3]["response_code_details"]) == (404, "NR", "route_not_found")


def test_b003_undeclared_host_404_nr(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, rc=_gateway_rc(), logs=json_logs()))
    assert proxy.request("GET", "/healthz")[0] == 404  # Host = 127.0.0.1:PORT
    assert proxy.request("GET", "/healthz", headers={"Host": "admin.example.internal"})[0] == 404
    status, _, _ = proxy.request("GET", "/healthz", headers={"Host": "shop.example.internal"})
    assert status == 200
    logs = json_log(proxy, 3)
    for e in logs[:2]:
        assert (e["response_code"], e["response_flags"], e["response_code_details"],
                e["upstream_cluster"]) == (404, "NR", "route_not_found", None)
    assert logs[2]["response_code_details"] == "via_upstream"
    assert logs[2]["upstream_cluster"] == "backend"
    assert proxy.stats()["cluster.backend.upstream_rq_total"] == 1


def test_host_port_not_ignored_without_the_flag(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, rc=_gateway_rc(ignore_port=False)))
    ok = proxy.request("GET", "/healthz", headers={"Host": "shop.example.internal"})
    assert ok[0] == 200
    assert proxy.request("GET", "/healthz",
                         headers={"Host": "shop.example.internal:80"})[0] == 404


def test_domain_precedence(apps, proxy_factory):
    def vh(name, domains):
        return vhost(name, domains, [route(prefix="/", direct=(200, name))])

    rc = route_config([vh("any", ["*"]), vh("prefix", ["api.*"]),
                       vh("suffix", ["*.example.com"]), vh("longer", ["*.b.example.com"]),
                       vh("exact", ["www.example.com"])])
    proxy = proxy_factory(bootstrap([listener(rc)], [cluster("backend", [apps["a"]])]))
    cases = {
        "www.example.com": "exact",
        "WWW.Example.COM": "exact",        # host matching is case-insensitive
        "api.example.com": "suffix",       # *.suffix beats prefix*
        "a.b.example.com": "longer",       # longest suffix wins
        "api.other.org": "prefix",
        "example.com": "any",              # "*.example.com" needs a non-empty label part
        "nothing.org": "any",
    }
    for host, want in cases.items():
        status, _, body = proxy.request("GET", "/", headers={"Host": host})
        assert (status, body.decode()) == (200, want), host


def test_header_matchers(apps, proxy_factory):
    def r(name, hm):
        return route(prefix="/", headers=[hm], direct=(200, name))

    rc = route_config([vhost("all", ["*"], [
        r("exact", header_match("x-env", exact="canary")),
        r("prefix", header_match("x-env", prefix="blue-")),
        r("suffix", header_match("x-env", suffix="-green")),
        r("contains", header_match("x-env", contains="mid")),
        r("regex", header_match("x-env", regex="v[0-9]+")),
        r("present", header_match("x-debug", present=True)),
        r("inverted", header_match("x-user", exact="root", invert=True)),
        route(prefix="/", direct=(200, "default")),
    ])])
    proxy = proxy_factory(bootstrap([listener(rc)], [cluster("backend", [apps["a"]])]))
    root = {"x-user": "root"}
    cases = [
        ({"x-env": "canary", **root}, "exact"),
        ({"X-Env": "canary", **root}, "exact"),
        ({"x-env": "canaryx", **root}, "default"),
        ({"x-env": "blue-1", **root}, "prefix"),
        ({"x-env": "a-green", **root}, "suffix"),
        ({"x-env": "amidb", **root}, "contains"),
        ({"x-env": "v12", **root}, "regex"),
        ({"x-env": "v12a", **root}, "default"),   # safe_regex is a full match
        ({"x-debug": "", **root}, "present"),
        ({"x-user": "alice"}, "inverted"),
        ({}, "default"),     # absent header: the match fails even inverted (current Envoy)
        (root, "default"),
    ]
    for hdrs, want in cases:
        status, _, body = proxy.request("GET", "/", headers=hdrs)
        assert (status, body.decode()) == (200, want), hdrs


def test_prefix_rewrite_and_original_path(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [
        route(prefix="/api/", prefix_rewrite="/echo/", cluster="backend")])])
    proxy = proxy_factory(one_backend(apps, rc=rc, logs=json_logs()))
    status, _, body = proxy.request("GET", "/api/items?q=1")
    assert status == 200
    doc, up = echo(body)
    assert doc["path"] == "/echo/items?q=1"
    assert up["x-envoy-original-path"] == ["/api/items?q=1"]
    # %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% logs what the client asked for
    assert json_log(proxy, 1)[0]["path"] == "/api/items?q=1"


def test_host_rewrite_literal(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [
        route(prefix="/", host_rewrite="rewritten.internal", cluster="backend")])])
    proxy = proxy_factory(one_backend(apps, rc=rc))
    status, _, body = proxy.request("GET", "/echo", headers={"Host": "original.example"})
    assert status == 200
    assert echo(body)[1]["host"] == ["rewritten.internal"]


def test_direct_response(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", direct=(418, "I'm a teapot"),
                                                  name="tea")])])
    proxy = proxy_factory(one_backend(apps, rc=rc, logs=json_logs()))
    status, _, body = proxy.request("GET", "/anything")
    assert (status, body) == (418, b"I'm a teapot")
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (418, "-", "direct_response")
    assert e["upstream_cluster"] is None
    st = proxy.stats()
    assert st["http.ingress_http.rq_direct_response"] == 1
    assert st["cluster.backend.upstream_rq_total"] == 0


def test_redirect(apps, proxy_factory):
    rc = route_config([vhost("all", ["*"], [
        route(prefix="/old", redirect={"host_redirect": "new.example.com",
                                       "path_redirect": "/new", "response_code": "FOUND"}),
        route(prefix="/secure", redirect={"https_redirect": True}),
    ])])
    proxy = proxy_factory(one_backend(apps, rc=rc))
    status, hdrs, _ = proxy.request("GET", "/old", headers={"Host": "old.example.com"})
    assert status == 302
    assert hdrs["location"] == "http://new.example.com/new"
    status, hdrs, _ = proxy.request("GET", "/secure/x?y=1", headers={"Host": "old.example.com"})
    assert status == 301
    assert hdrs["location"] == "https://old.example.com/secure/x?y=1"
    assert proxy.stats()["http.ingress_http.rq_redirect"] == 2
    proxy.stop()  # exit 0, no sanitizer report


def test_header_add_remove_at_every_level(apps, proxy_factory):
    rt = route(prefix="/", cluster="backend",
               req_add={"x-from-route": "r"}, req_remove=["x-drop-route"],
               resp_add={"x-resp-route": "r"}, resp_remove=["x-weft-app"])
    vh = vhost("all", ["*"], [rt], req_add={"x-from-vhost": "v"}, req_remove=["x-drop-vhost"],
               resp_add={"x-resp-vhost": "v"}, resp_remove=["content-type"])
    rc = route_config([vh], req_add={"x-from-rc": "g"}, req_remove=["x-drop-rc"],
                      resp_add={"x-resp-rc": "g"})
    proxy = proxy_factory(one_backend(apps, rc=rc))
    status, hdrs, body = proxy.request("GET", "/echo", headers={
        "x-drop-route": "1", "x-drop-vhost": "1", "x-drop-rc": "1", "x-keep": "1"})
    assert status == 200
    _, up = echo(body)
    assert up["x-from-route"] == ["r"]
    assert up["x-from-vhost"] == ["v"]
    assert up["x-from-rc"] == ["g"]
    assert up["x-keep"] == ["1"]
    for h in ("x-drop-route", "x-drop-vhost", "x-drop-rc"):
        assert h not in up, h
    assert hdrs["x-resp-route"] == "r"
    assert hdrs["x-resp-vhost"] == "v"
    assert hdrs["x-resp-rc"] == "g"
    assert "x-weft-app" not in hdrs
    assert "content-type" not in hdrs


def test_header_add_append_actions(apps, proxy_factory):
    rt = route(prefix="/", cluster="backend",
               req_add=[("x-multi", "route", "APPEND_IF_EXISTS_OR_ADD"),
                        ("x-single", "route", "OVERWRITE_IF_EXISTS_OR_ADD"),
                        ("x-absent", "route", "ADD_IF_ABSENT"),
                        ("x-new", "route", "ADD_IF_ABSENT")],
               resp_add=[("x-weft-app", "route", "OVERWRITE_IF_EXISTS_OR_ADD"),
                         ("x-resp-multi", "route", "APPEND_IF_EXISTS_OR_ADD")])
    proxy = proxy_factory(one_backend(apps, rc=route_config([vhost("all", ["*"], [rt])])))
    status, hdrs, body = proxy.request("GET", "/echo", headers={
        "x-multi": "client", "x-single": "client", "x-absent": "client"})
    assert status == 200
    _, up = echo(body)
    assert up["x-multi"] == ["client", "route"]
    assert up["x-single"] == ["route"]
    assert up["x-absent"] == ["client"]
    assert up["x-new"] == ["route"]
    assert hdrs["x-weft-app"] == "route"
    assert hdrs["x-resp-multi"] == "route"


def test_header_overwrite_across_levels(apps, proxy_factory):
    # Envoy applies weighted-cluster, route, virtual-host, then route-configuration header
    # additions; with overwrite at every level the route-configuration value remains.
    ow = "OVERWRITE_IF_EXISTS_OR_ADD"
    rt = route(prefix="/", cluster="backend", req_add=[("x-level", "route", ow)],
               resp_add=[("x-level", "route", ow)])
    vh = vhost("all", ["*"], [rt], req_add=[("x-level", "vhost", ow)],
               resp_add=[("x-level", "vhost", ow)])
    rc = route_config([vh], req_add=[("x-level", "global", ow)],
                      resp_add=[("x-level", "global", ow)])
    proxy = proxy_factory(one_backend(apps, rc=rc))
    status, hdrs, body = proxy.request("GET", "/echo")
    assert status == 200
    assert echo(body)[1]["x-level"] == ["global"]
    assert hdrs["x-level"] == "global"


# ---------- B007: large uploads stream, 413 only from upstream ----------

def test_b007_8mib_upload_streams(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    data = os.urandom(8 * 1024 * 1024)
    status, _, body = proxy.request("POST", "/upload", body=data, timeout=30)
    assert status == 200
    assert body == b"received=8388608\n"
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (200, "-", "via_upstream")
    assert e["bytes_received"] == 8388608
    assert proxy.stats()["http.ingress_http.downstream_rq_too_large"] == 0


def test_b007_upstream_413_passes_through(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps, logs=json_logs()))
    status, hdrs, body = proxy.request("GET", "/status/413")
    assert status == 413
    assert body == b"status 413\n"
    assert hdrs["x-weft-app"] == "a"
    e = json_log(proxy, 1)[0]
    assert (e["response_code"], e["response_flags"], e["response_code_details"]) == \
        (413, "-", "via_upstream")


# ---------- admin API ----------

@pytest.fixture
def admin_proxy(apps, proxy_factory):
    """A proxy (listener "main", stat_prefix ingress_http, cluster backend -> app a) that has
    served three requests."""
    bs = bootstrap([listener(simple_routes(), name="main")], [cluster("backend", [apps["a"]])])
    p = proxy_factory(bs)
    for _ in range(3):
        assert p.request("GET", "/healthz")[0] == 200
    return p


def test_admin_ready(admin_proxy):
    status, _, body = admin_proxy.admin("/ready")
    assert (status, body) == (200, b"LIVE\n")


def test_admin_stats_text_sorted(admin_proxy):
    status, _, body = admin_proxy.admin("/stats")
    assert status == 200
    lines = body.decode().splitlines()
    values = {}
    for line in lines:
        m = re.fullmatch(r"(\S+): (.*)", line)
        assert m, "not a 'name: value' line: %r" % line
        values[m.group(1)] = m.group(2)
    names = [line.split(": ", 1)[0] for line in lines
             if re.fullmatch(r"\S+: -?\d+", line)]
    assert names == sorted(names)
    assert values["cluster.backend.upstream_rq_total"] == "3"
    assert values["http.ingress_http.downstream_rq_total"] == "3"
    assert values["listener.127.0.0.1_%d.downstream_cx_total" % admin_proxy.port] == "3"
    status, _, body = admin_proxy.admin("/stats?filter=upstream_rq_total")
    assert status == 200
    flines = body.decode().splitlines()
    assert flines and all("upstream_rq_total" in line for line in flines), flines
    assert "cluster.backend.upstream_rq_total: 3" in flines


def test_admin_stats_json_and_prometheus(admin_proxy):
    status, hdrs, body = admin_proxy.admin("/stats?format=json")
    assert status == 200
    doc = json.loads(body)
    entries = {s["name"]: s["value"] for s in doc["stats"] if "name" in s}
    assert entries["cluster.backend.upstream_rq_total"] == 3
    status, _, body = admin_proxy.admin("/stats/prometheus")
    assert status == 200
    text = body.decode()
    assert re.search(r"^# TYPE envoy_\w+ (counter|gauge|histogram|summary)$", text, re.M)
    assert re.search(r"^# TYPE envoy_cluster_upstream_rq_total counter$", text, re.M), text[:2000]
    assert re.search(r"^envoy_server_live\{\} 1$", text, re.M)


def test_admin_clusters(admin_proxy, apps):
    status, _, body = admin_proxy.admin("/clusters")
    assert status == 200
    lines = body.decode().splitlines()
    host = "backend::127.0.0.1:%d" % apps["a"]
    assert host + "::rq_total::3" in lines
    assert host + "::health_flags::healthy" in lines
    assert "backend::default_priority::max_connections::1024" in lines
    status, _, body = admin_proxy.admin("/clusters?format=json")
    assert status == 200
    doc = json.loads(body)
    (cl,) = [c for c in doc["cluster_statuses"] if c["name"] == "backend"]
    (hs,) = cl["host_statuses"]
    assert hs["address"]["socket_address"] == {"address": "127.0.0.1", "port_value": apps["a"]}
    rq_total = [s for s in hs["stats"] if s["name"] == "rq_total"]
    assert rq_total and str(rq_total[0].get("value")) == "3"


def test_admin_listeners(admin_proxy):
    status, _, body = admin_proxy.admin("/listeners")
    assert status == 200
    assert body.decode().splitlines() == ["main::127.0.0.1:%d" % admin_proxy.port]


def test_admin_config_dump(admin_proxy):
    status, _, body = admin_proxy.admin("/config_dump")
    assert status == 200
    types = [c["@type"] for c in json.loads(body)["configs"]]
    for t in ("BootstrapConfigDump", "ClustersConfigDump", "ListenersConfigDump",
              "RoutesConfigDump"):
        assert "type.googleapis.com/envoy.admin.v3." + t in types, types
    status, _, body = admin_proxy.admin("/config_dump?resource=static_clusters")
    assert status == 200
    configs = json.loads(body)["configs"]
    assert [c["cluster"]["name"] for c in configs] == ["backend"]
    assert all(c["@type"] == "type.googleapis.com/envoy.admin.v3.ClustersConfigDump.StaticCluster"
               for c in configs), configs


def test_admin_logging_level_change(admin_proxy):
    status, _, body = admin_proxy.admin("/logging?http=debug", method="POST")
    assert status == 200
    assert re.search(r"^\s*http: debug$", body.decode(), re.M), body
    status, _, body = admin_proxy.admin("/logging", method="POST")  # Envoy: POST lists too
    assert status == 200
    assert re.search(r"^\s*http: debug$", body.decode(), re.M), body
    assert re.search(r"^\s*router: info$", body.decode(), re.M), body


def test_admin_server_info(admin_proxy):
    status, hdrs, body = admin_proxy.admin("/server_info")
    assert status == 200
    doc = json.loads(body)
    assert doc["state"] == "LIVE"
    assert doc["command_line_options"]["concurrency"] == 1


def test_admin_get_quitquitquit_is_rejected(admin_proxy):
    status, _, body = admin_proxy.admin("/quitquitquit")
    assert status == 405  # Envoy's admin: a mutation needs POST
    assert body == b"Method GET not allowed, POST required."
    time.sleep(0.2)
    assert admin_proxy.alive()
    assert admin_proxy.admin("/ready")[0] == 200
    assert admin_proxy.request("GET", "/healthz")[0] == 200


def test_admin_post_quitquitquit_exits(admin_proxy):
    status, _, _ = admin_proxy.admin("/quitquitquit", method="POST")
    assert status == 200
    admin_proxy.proc.wait(timeout=10)
    assert admin_proxy.stop() == 0


def test_admin_reset_counters(admin_proxy):
    assert admin_proxy.admin("/reset_counters")[0] == 405  # GET: no effect
    assert admin_proxy.stats()["cluster.backend.upstream_rq_total"] == 3
    status, _, _ = admin_proxy.admin("/reset_counters", method="POST")
    assert status == 200
    st = admin_proxy.stats()
    assert st["cluster.backend.upstream_rq_total"] == 0
    assert st["http.ingress_http.downstream_rq_total"] == 0
    assert st["server.live"] == 1  # gauges are untouched
    assert st["cluster.backend.membership_total"] == 1


# ---------- command line ----------

def _run(*args, timeout=30):
    return subprocess.run([proxy_path(), *[str(a) for a in args]], capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _write(bs, directory):
    return write_bootstrap(bs, str(directory))


def _static_bs(apps, port=None, admin=None):
    bs = bootstrap([listener(simple_routes(), port=port or free_port())],
                   [cluster("backend", [apps["a"]])], admin_port=admin or free_port())
    return bs


def test_cli_help_and_bad_flag():
    r = _run("--help")
    assert r.returncode == 0
    assert b"-c" in r.stdout
    r = _run("--no-such-flag")
    assert r.returncode == 2
    assert b"--no-such-flag" in r.stderr


def test_cli_validate_good_config(apps, tmp_path):
    path = _write(_static_bs(apps), tmp_path)
    r = _run("--mode", "validate", "-c", path)
    assert r.returncode == 0, r.stderr
    assert ("configuration '%s' OK" % path) in r.stdout.decode()


def test_cli_validate_unknown_field(apps, tmp_path):
    bs = _static_bs(apps)
    bs["static_resources"]["clusters"][0]["bogus_field"] = 1
    path = _write(bs, tmp_path)
    r = _run("--mode", "validate", "-c", path)
    assert r.returncode == 1
    assert "static_resources.clusters[0].bogus_field" in r.stderr.decode(), r.stderr


def test_cli_validate_typed_extension_protocol_options(apps, tmp_path):
    bs = bootstrap([listener(simple_routes(), port=free_port())],
                   [cluster("backend", [apps["a"]], max_requests_per_connection=1,
                            idle_timeout=1, typed_options=True)], admin_port=free_port())
    path = _write(bs, tmp_path)
    try:
        r = _run("--mode", "validate", "-c", path, timeout=5)
    except subprocess.TimeoutExpired:
        raise AssertionError("weft-proxy --mode validate did not finish in 5 s")
    assert r.returncode == 0, r.stderr
    assert ("configuration '%s' OK" % path) in r.stdout.decode()


def test_cli_listener_port_in_use(apps, tmp_path):
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(8)
        port = busy.getsockname()[1]
        path = _write(_static_bs(apps, port=port), tmp_path)
        r = _run("-c", path, "--concurrency", "1")
        assert r.returncode == 1, r.stderr
        assert ("127.0.0.1:%d" % port) in r.stderr.decode(), r.stderr
    finally:
        busy.close()


# ---------- drain on SIGTERM ----------

def test_sigterm_finishes_inflight_request(apps, proxy_factory):
    proxy = proxy_factory(one_backend(apps), args=["--drain-time-s", "5"])
    result = {}

    def slow():
        try:
            result["r"] = proxy.request("GET", "/delay/500")
        except Exception as e:  # reported below
            result["e"] = repr(e)

    t = threading.Thread(target=slow)
    t.start()
    proxy.wait_stat("cluster.backend.upstream_rq_active", 1, timeout=5)
    proxy.proc.send_signal(signal.SIGTERM)
    t.join(timeout=10)
    assert "e" not in result, result
    status, _, body = result["r"]
    assert (status, body) == (200, b"delayed 500\n")
    proxy.proc.wait(timeout=10)
    assert proxy.stop() == 0


def test_cli_xds_bootstrap_needs_node_id_and_cluster(tmp_path):
    """As Envoy: with xDS configured, node id and cluster are required (from the bootstrap or
    --service-node / --service-cluster); otherwise the proxy would retry forever against a
    control plane that refuses it."""
    bs = {"dynamic_resources": {
              "ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                             "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
              "cds_config": {"ads": {}, "resource_api_version": "V3"},
              "lds_config": {"ads": {}, "resource_api_version": "V3"}},
          "static_resources": {"clusters": [{
              "name": "xds-grpc", "type": "STATIC", "load_assignment": {
                  "cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [{"endpoint": {
                      "address": {"socket_address": {"address": "127.0.0.1",
                                                     "port_value": 15010}}}}]}]}}]}}
    path = tmp_path / "xds.json"
    path.write_text(json.dumps(bs))
    r = _run("--mode", "validate", "-c", path)
    assert r.returncode == 1
    assert b"node 'id' and 'cluster' are required" in r.stderr, r.stderr
    r = _run("--mode", "validate", "-c", path, "--service-node", "a.ns", "--service-cluster", "a")
    assert r.returncode == 0, r.stderr


def test_upstream_operators_in_a_custom_format(apps, proxy_factory):
    """%UPSTREAM_PROTOCOL% and %UPSTREAM_WIRE_BYTES_*% count this stream's upstream bytes
    (head included); operators whose source weft never sets print '-' instead of making
    the format (and the listener) fail."""
    fmt = ("%UPSTREAM_PROTOCOL% %UPSTREAM_WIRE_BYTES_SENT% %UPSTREAM_WIRE_BYTES_RECEIVED% "
           "%BYTES_SENT% %VIRTUAL_CLUSTER_NAME% %DYNAMIC_METADATA(istio.mixer:status)% "
           "%GRPC_STATUS%\n")
    proxy = proxy_factory(one_backend(apps, logs=[access_log("@LOG:custom@", fmt=fmt)]))
    status, _, body = proxy.request("GET", "/bytes/1000")
    assert status == 200 and len(body) == 1000
    proto, sent, received, bytes_sent, *rest = proxy.access_log_lines(1, name="custom")[0].split()
    assert proto == "HTTP/1.1"
    assert int(bytes_sent) == 1000
    assert int(received) > 1000, "the response head is part of the upstream wire bytes"
    assert int(sent) > len("GET /bytes/1000 HTTP/1.1\r\n\r\n")
    assert rest == ["-", "-", "-"]


@pytest.mark.parametrize("timeout,per_try,want", [
    ("5s", "0.5s", "500"),    # the per-try timeout is what the upstream can expect
    ("0s", "0.5s", "500"),    # no route timeout: the per-try timeout still applies
    ("3s", None, "3000"),     # no per-try timeout: the route timeout
    ("1s", "2s", "1000"),     # a per-try timeout not below the route timeout is ignored
    ("0s", None, None),       # no timeout at all: no header
])
def test_expected_rq_timeout_header(apps, proxy_factory, timeout, per_try, want):
    """x-envoy-expected-rq-timeout-ms as Envoy's router sets it (setTimeoutHeaders)."""
    policy = {"retry_on": "connect-failure"}
    if per_try:
        policy["per_try_timeout"] = per_try
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend", timeout=timeout,
                                                  retry_policy=policy)])])
    proxy = proxy_factory(one_backend(apps, rc=rc))
    status, _, body = proxy.request("GET", "/echo")
    assert status == 200
    headers = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert headers.get("x-envoy-expected-rq-timeout-ms") == want


XFF_FMT = {"remote": "%DOWNSTREAM_REMOTE_ADDRESS%", "direct": "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS%",
           "xff": "%REQ(X-FORWARDED-FOR)%"}


@pytest.mark.parametrize("use_remote,hops,sent,want_up,want_remote", [
    # a sidecar (Istio: use_remote_address false): the header goes on as is, the remote
    # address is its last entry
    (False, 0, "1.2.3.4, 5.6.7.8", "1.2.3.4, 5.6.7.8", "5.6.7.8:0"),
    (False, 1, "1.2.3.4, 5.6.7.8", "1.2.3.4, 5.6.7.8", "1.2.3.4:0"),
    (False, 0, "not-an-ip", "not-an-ip", None),
    (False, 0, None, None, None),
    # a gateway (use_remote_address true): the peer is appended (or the header created)
    (True, 0, "1.2.3.4, 5.6.7.8", "1.2.3.4, 5.6.7.8,127.0.0.1", None),
    (True, 0, None, "127.0.0.1", None),
    (True, 1, "1.2.3.4, 5.6.7.8", "1.2.3.4, 5.6.7.8,127.0.0.1", "5.6.7.8:0"),
])
def test_x_forwarded_for_and_remote_address(apps, proxy_factory, use_remote, hops, sent,
                                            want_up, want_remote):
    """Envoy's connection manager: x-forwarded-for upstream and %DOWNSTREAM_REMOTE_ADDRESS%
    (None: the connection's peer); %REQ(X-FORWARDED-FOR)% logs the header as forwarded."""
    lst = listener(simple_routes("backend"), access_logs=[access_log("@LOG:json@",
                                                                     json_format=XFF_FMT)],
                   use_remote_address=use_remote, xff_num_trusted_hops=hops)
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    status, _, body = proxy.request("GET", "/echo",
                                    headers={"X-Forwarded-For": sent} if sent else {})
    assert status == 200
    got = [v for k, v in json.loads(body)["headers"] if k.lower() == "x-forwarded-for"]
    assert got == ([want_up] if want_up else [])
    entry = json_log(proxy, 1)[0]
    assert entry["direct"].startswith("127.0.0.1:")
    assert entry["remote"] == (want_remote or entry["direct"])
    assert entry["xff"] == want_up


def test_resp_server_logs_what_the_client_got(apps, proxy_factory):
    """%RESP(SERVER)% is the server header the client got: the connection manager's
    server_name, which replaces the upstream's (Envoy's default transformation), on proxied
    responses and local replies alike."""
    lst = listener(simple_routes("backend"), server_name="istio-envoy",
                   access_logs=[access_log("@LOG:custom@", fmt="%RESPONSE_CODE% %RESP(SERVER)%\n")])
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    status, headers, _ = proxy.request("GET", "/healthz")
    assert status == 200 and headers.get("server") == "istio-envoy"
    rc = route_config([vhost("none", ["nothing.example"], [route(prefix="/", cluster="x")])])
    lst2 = listener(rc, access_logs=[access_log("@LOG:nr@", fmt="%RESPONSE_CODE% %RESP(SERVER)%\n")])
    proxy2 = proxy_factory(bootstrap([lst2], [cluster("backend", [apps["a"]])]))
    assert proxy2.request("GET", "/")[0] == 404
    assert proxy.access_log_lines(1, name="custom") == ["200 istio-envoy"]
    assert proxy2.access_log_lines(1, name="nr") == ["404 envoy"]


# ---------- repeated x-forwarded-for, HTTP/1.0 Host, camelCase, internal requests ----------

def _raw_echo(proxy, head_lines):
    """GET /echo with the given raw header lines -> (status, {name: [values]}, body)."""
    req = "GET /echo HTTP/1.1\r\nHost: x\r\n" + "".join(h + "\r\n" for h in head_lines)
    with proxy.connect() as s:
        s.sendall((req + "\r\n").encode())
        (resp,), _ = read_responses(s, 1)
    hdrs = echo(resp[2])[1] if resp[0] == 200 else {}
    return resp[0], hdrs, resp[2]


@pytest.mark.parametrize("use_remote,hops,want_up,want_remote", [
    (False, 0, "1.1.1.1,2.2.2.2", "2.2.2.2:0"),
    (True, 0, "1.1.1.1,2.2.2.2,127.0.0.1", None),
    (True, 1, "1.1.1.1,2.2.2.2,127.0.0.1", "2.2.2.2:0"),
])
def test_repeated_x_forwarded_for_is_one_header(apps, proxy_factory, use_remote, hops, want_up,
                                                want_remote):
    """Envoy keeps x-forwarded-for as an inline header: repeated fields are joined with ","
    when the request is decoded, so the remote address is taken from the joined list and
    the upstream gets one header (no stale second field a backend could trust)."""
    lst = listener(simple_routes("backend"), access_logs=[access_log("@LOG:json@",
                                                                     json_format=XFF_FMT)],
                   use_remote_address=use_remote, xff_num_trusted_hops=hops)
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    status, hdrs, _ = _raw_echo(proxy, ["X-Forwarded-For: 1.1.1.1", "X-Forwarded-For: 2.2.2.2"])
    assert status == 200
    assert hdrs["x-forwarded-for"] == [want_up]
    entry = json_log(proxy, 1)[0]
    assert entry["remote"] == (want_remote or entry["direct"])
    assert entry["xff"] == want_up


def test_http10_without_host_or_default_is_400(apps, proxy_factory):
    """Envoy's decodeHeaders: an HTTP/1.0 request still without Host after the
    default_host_for_http_10 step is answered 400 (empty body, missing_host_header) and not
    forwarded."""
    lst = listener(simple_routes("backend"), access_logs=json_logs(),
                   http_protocol_options={"accept_http_10": True})
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    with proxy.connect() as s:
        s.sendall(b"GET /echo HTTP/1.0\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
    assert resp[0] == 400
    assert resp[2] == b""
    entry = json_log(proxy, 1)[0]
    assert entry["response_code_details"] == "missing_host_header"
    assert entry["upstream_host"] is None


def test_http10_options_in_lower_camel_case(apps, proxy_factory):
    """acceptHttp10 / defaultHostForHttp10 (the protobuf JSON names of accept_http_10 and
    default_host_for_http_10, no "_" before the digits) are accepted."""
    rc = {"name": "local", "virtual_hosts": [{"name": "only", "domains": ["svc.example"],
          "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "backend"}}]}]}
    proxy = proxy_factory(bootstrap(
        [listener(rc, http_protocol_options={"acceptHttp10": True,
                                             "defaultHostForHttp10": "svc.example"})],
        [cluster("backend", [apps["a"]])]))
    with proxy.connect() as s:
        s.sendall(b"GET /echo HTTP/1.0\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
    assert resp[0] == 200
    assert echo(resp[2])[1]["host"] == ["svc.example"]


ENVOY_RQ_HEADERS = ["x-envoy-upstream-rq-timeout-ms: 100",
                    "x-envoy-upstream-rq-timeout-alt-response: yes",
                    "x-envoy-upstream-alt-stat-name: other",
                    "x-envoy-force-trace: 1",
                    "x-envoy-internal: forged"]


@pytest.mark.parametrize("use_remote,xff,internal", [
    (True, None, True),                # a gateway, internal peer (127.0.0.1), no XFF
    (True, "10.0.0.1", False),         # XFF arrived: the peer cannot vouch for it
    (False, None, False),              # Istio's sidecars: no XFF, external
    (False, "10.0.0.1", True),         # one internal XFF entry
    (False, "8.8.8.8", False),
    (False, "10.0.0.1, 10.0.0.2", False),
])
def test_internal_request_decision_and_cleaning(apps, proxy_factory, use_remote, xff, internal):
    """ConnectionManagerUtility::mutateRequestHeaders: internal requests get
    x-envoy-internal: true; external ones lose the x-envoy-* headers only internal callers may
    set (cleanInternalHeaders), and a forged x-envoy-internal is always removed."""
    lst = listener(simple_routes("backend"), use_remote_address=use_remote)
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    lines = ENVOY_RQ_HEADERS[2:] + (["X-Forwarded-For: " + xff] if xff else [])
    status, hdrs, _ = _raw_echo(proxy, lines)
    assert status == 200
    assert hdrs.get("x-envoy-internal") == (["true"] if internal else None)
    kept = ["other"] if internal else None
    assert hdrs.get("x-envoy-upstream-alt-stat-name") == kept
    assert hdrs.get("x-envoy-force-trace") == (["1"] if internal else None)


@pytest.mark.parametrize("internal", [True, False])
def test_internal_request_timeout_headers(apps, proxy_factory, internal):
    """The router honours x-envoy-upstream-rq-timeout-ms (overrides the route timeout, sets
    x-envoy-expected-rq-timeout-ms) and x-envoy-upstream-rq-timeout-alt-response (204
    instead of 504) on internal requests; external requests keep the route's timeout."""
    lst = listener(simple_routes("backend"), use_remote_address=True,
                   access_logs=json_logs())
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    xff = [] if internal else ["X-Forwarded-For: 8.8.8.8"]
    status, hdrs, _ = _raw_echo(proxy, ["x-envoy-upstream-rq-timeout-ms: 3000"] + xff)
    assert status == 200
    assert hdrs["x-envoy-expected-rq-timeout-ms"] == (["3000"] if internal else ["15000"])
    assert "x-envoy-upstream-rq-timeout-ms" not in hdrs
    t0 = time.monotonic()
    with proxy.connect() as s:
        s.sendall(("GET /delay/1500 HTTP/1.1\r\nHost: x\r\n" + "".join(
            h + "\r\n" for h in ENVOY_RQ_HEADERS[:2] + xff) + "\r\n").encode())
        (resp,), _ = read_responses(s, 1)
    if internal:
        assert resp[0] == 204 and resp[2] == b""
        assert time.monotonic() - t0 < 1.2
        entry = json_log(proxy, 2)[1]
        assert entry["response_flags"] == "UT"
        assert entry["response_code_details"] == "response_timeout"
    else:
        assert resp[0] == 200


def test_internal_request_per_try_timeout_header(apps, proxy_factory):
    """x-envoy-upstream-rq-per-try-timeout-ms sets the per-try timeout of an internal
    request (FilterUtility::finalTimeout): 504 upstream_per_try_timeout without retries."""
    lst = listener(simple_routes("backend"), use_remote_address=True, access_logs=json_logs())
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    status, hdrs, _ = _raw_echo(proxy, ["x-envoy-upstream-rq-per-try-timeout-ms: 2500"])
    assert status == 200
    assert hdrs["x-envoy-expected-rq-timeout-ms"] == ["2500"]
    with proxy.connect() as s:
        s.sendall(b"GET /delay/1500 HTTP/1.1\r\nHost: x\r\n"
                  b"x-envoy-upstream-rq-per-try-timeout-ms: 100\r\n\r\n")
        (resp,), _ = read_responses(s, 1)
    assert resp[0] == 504
    assert json_log(proxy, 2)[1]["response_code_details"] == "upstream_per_try_timeout"


def test_resp_operator_sees_route_header_mutations(apps, proxy_factory):
    """%RESP()% logs the response as the client got it: the route's
    response_headers_to_add (upstream responses and local replies) and removals."""
    fmt = "%RESPONSE_CODE% %RESP(X-ADDED)% %RESP(CONTENT-TYPE)% %RESP(X-WEFT-APP)%\n"
    ok = route(prefix="/healthz", cluster="backend",
               resp_add=[("x-added", "yes")], resp_remove=["content-type"])
    nc = route(prefix="/", cluster="missing", resp_add=[("x-added", "local")])
    rc = route_config([vhost("all", ["*"], [ok, nc])])
    lst = listener(rc, access_logs=[access_log("@LOG:m@", fmt=fmt)])
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [apps["a"]])]))
    status, headers, _ = proxy.request("GET", "/healthz")
    assert status == 200 and headers.get("x-added") == "yes" and "content-type" not in headers
    assert proxy.request("GET", "/other")[0] == 503
    first, second = proxy.access_log_lines(2, name="m")
    assert first.split()[:3] == ["200", "yes", "-"], first
    assert first.split()[3] != "-", "an untouched upstream field is still logged"
    assert second == "503 local - -"
