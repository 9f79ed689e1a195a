"""Route retries in weft-proxy (reference §3-§4; operator reports B005, B007 with retries,
B008, B009, B011, B012's retry variant, B013): retry conditions, URX / UO, per-try and
route timeouts, previous hosts, x-envoy-attempt-count, and the retry buffer with its 507."""
import json
import socket
import time

import pytest

from procs import free_port, start_app, stop_process
from proxyfix import (ISTIO_JSON_FORMAT, access_log, bootstrap, cluster, listener, proxy_factory,
                      route, route_config, vhost)
from scripted_upstream import upstreams  # noqa: F401 (fixture)

ISTIO_DEFAULT_RETRY_ON = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"


def _proxy(proxy_factory, ports, policy=None, timeout=None, lb_policy=None,
           circuit_breakers=None, vhost_extra=None, listener_extra=None, route_extra=None):
    rt = route(prefix="/", cluster="backend", timeout=timeout, retry_policy=policy)
    rt.update(route_extra or {})
    vh = vhost("all", ["*"], [rt])
    vh.update(vhost_extra or {})
    lst = listener(route_config([vh]), access_logs=[access_log(json_format=ISTIO_JSON_FORMAT)])
    lst.update(listener_extra or {})
    bs = bootstrap(listeners=[lst], clusters=[cluster("backend", list(ports), lb_policy=lb_policy,
                                                      circuit_breakers=circuit_breakers)])
    return proxy_factory(bs)


def _log(proxy, n=1):
    return [json.loads(l) for l in proxy.access_log_lines(n)]


def _stat(proxy, name):
    return proxy.stats().get("cluster.backend." + name, 0)


def test_5xx_retried_until_success(proxy_factory, upstreams):
    up = upstreams([("status", 503), ("status", 503), "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx", "num_retries": 2})
    status, _, body = p.request("GET", "/x")
    assert (status, body) == (200, b"received=0")
    assert up.count() == 3
    line = _log(p)[0]
    assert line["response_flags"] == "-" and line["response_code_details"] == "via_upstream"
    assert _stat(p, "upstream_rq_retry") == 2
    assert _stat(p, "upstream_rq_retry_success") == 1
    assert _stat(p, "upstream_rq_503") == 0 and _stat(p, "upstream_rq_200") == 1
    assert _stat(p, "retry.upstream_rq_503") == 2 and _stat(p, "retry.upstream_rq_5xx") == 2


def test_default_istio_policy_replays_post_503_then_urx(proxy_factory, upstreams):
    """B011: Istio's default policy (as before 1.24: retriable_status_codes [503]) sends the
    POST three times; the last 503 goes downstream with URX and via_upstream."""
    up = upstreams([("status", 503)])
    policy = {"retry_on": ISTIO_DEFAULT_RETRY_ON, "num_retries": 2,
              "retriable_status_codes": [503], "host_selection_retry_max_attempts": "5",
              "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts"}]}
    p = _proxy(proxy_factory, [up.port], policy)
    status, _, _ = p.request("POST", "/orders", body=b'{"sku":"A1"}',
                             headers={"content-type": "application/json"})
    assert status == 503
    assert up.count() == 3
    assert all(r[3] == b'{"sku":"A1"}' for r in up.requests)  # the body was replayed
    line = _log(p)[0]
    assert line["response_flags"] == "URX"
    assert line["response_code_details"] == "via_upstream"
    assert _stat(p, "upstream_rq_retry_limit_exceeded") == 1


def test_default_policy_does_not_retry_500(proxy_factory, upstreams):
    up = upstreams([("status", 500)])
    p = _proxy(proxy_factory, [up.port], {"retry_on": ISTIO_DEFAULT_RETRY_ON, "num_retries": 2,
                                          "retriable_status_codes": [503]})
    status, _, _ = p.request("POST", "/orders", body=b"x")
    assert status == 500 and up.count() == 1
    assert _log(p)[0]["response_flags"] == "-"


def test_connect_failure_retries_then_uf_urx(proxy_factory):
    """B013: nothing listens; connect-failure retries run out: 503 UF,URX."""
    dead = free_port()
    p = _proxy(proxy_factory, [dead], {"retry_on": "connect-failure", "num_retries": 2})
    status, _, body = p.request("GET", "/")
    assert status == 503
    assert body.startswith(b"upstream connect error or disconnect/reset before headers. "
                           b"reset reason:")
    line = _log(p)[0]
    assert line["response_flags"] == "UF,URX"
    assert line["response_code_details"].startswith("upstream_reset_before_response_started{")
    assert "connection_failure" in line["response_code_details"]
    assert _stat(p, "upstream_cx_connect_fail") == 3
    assert _stat(p, "upstream_rq_retry") == 2


def test_connect_failure_without_policy_is_uf_only(proxy_factory):
    dead = free_port()
    p = _proxy(proxy_factory, [dead])
    status, _, _ = p.request("GET", "/")
    assert status == 503
    assert _log(p)[0]["response_flags"] == "UF"
    assert _stat(p, "upstream_cx_connect_fail") == 1


def test_reset_retried_b012_variant(proxy_factory):
    """B012's retry variant: the backend hangs up on the first request only."""
    proc, port = start_app("--hangup-first", "1")
    try:
        p = _proxy(proxy_factory, [port], {"retry_on": "reset", "num_retries": 1})
        status, _, _ = p.request("GET", "/healthz")
        assert status == 200
        assert _log(p)[0]["response_flags"] == "-"
        assert _stat(p, "upstream_rq_retry") == 1
        assert _stat(p, "upstream_rq_total") == 2
    finally:
        stop_process(proc)


def test_reset_before_request_does_not_retry_after_the_request_went_out(proxy_factory,
                                                                        upstreams):
    up = upstreams(["reset", "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "reset-before-request", "num_retries": 2})
    status, _, _ = p.request("GET", "/")
    assert status == 503 and up.count() == 1
    assert _log(p)[0]["response_flags"] == "UC"


@pytest.mark.parametrize("retry_on,status,retried", [
    ("gateway-error", 502, True), ("gateway-error", 504, True), ("gateway-error", 500, False),
    ("retriable-4xx", 409, True), ("retriable-4xx", 404, False), ("5xx", 500, True),
    ("retriable-status-codes", 418, True), ("retriable-status-codes", 503, False),
    ("connect-failure", 503, False), ("reset", 503, False),
])
def test_retry_on_status_conditions(proxy_factory, upstreams, retry_on, status, retried):
    up = upstreams([("status", status), "200"])
    policy = {"retry_on": retry_on, "num_retries": 1}
    if retry_on == "retriable-status-codes":
        policy["retriable_status_codes"] = [418]
    p = _proxy(proxy_factory, [up.port], policy)
    got, _, _ = p.request("GET", "/")
    assert got == (200 if retried else status)
    assert up.count() == (2 if retried else 1)


@pytest.mark.parametrize("retry_on,headers,retried", [
    ("unavailable", {"grpc-status": "14"}, True),
    ("cancelled", {"grpc-status": "1"}, True),
    ("deadline-exceeded", {"grpc-status": "4"}, True),
    ("internal", {"grpc-status": "13"}, True),
    ("resource-exhausted", {"grpc-status": "8"}, True),
    ("unavailable", {"grpc-status": "13"}, False),
    ("unavailable", {}, False),
    ("envoy-ratelimited", {"x-envoy-ratelimited": "true"}, True),
    ("envoy-ratelimited", {}, False),
    ("retriable-headers", {"x-upstream-retry": "yes"}, True),
    ("retriable-headers", {"x-upstream-retry": "no"}, False),
])
def test_retry_on_response_headers(proxy_factory, upstreams, retry_on, headers, retried):
    """gRPC tokens act on a grpc-status in the response head (trailers-only responses);
    envoy-ratelimited on x-envoy-ratelimited; retriable-headers on a configured matcher."""
    up = upstreams([("headers", 200 if "grpc-status" in headers or not headers else 429,
                     headers), "200"])
    policy = {"retry_on": retry_on, "num_retries": 1}
    if retry_on == "retriable-headers":
        policy["retriable_headers"] = [{"name": "x-upstream-retry",
                                        "string_match": {"exact": "yes"}}]
    p = _proxy(proxy_factory, [up.port], policy)
    p.request("GET", "/")
    assert up.count() == (2 if retried else 1)


@pytest.mark.parametrize("retry_on", ["refused-stream", "http3-post-connect-failure"])
def test_http2_and_http3_conditions_never_match_on_http1(proxy_factory, upstreams, retry_on):
    up = upstreams(["reset", "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": retry_on, "num_retries": 1})
    assert p.request("GET", "/")[0] == 503 and up.count() == 1


def test_per_try_timeout_without_route_timeout(proxy_factory, upstreams):
    """B009: per-try 0.2 s, retry on 5xx, no route timeout: two tries, then 504 UT,URX
    upstream_per_try_timeout after about 0.4 s."""
    up = upstreams([("delay", 500, 500)])
    p = _proxy(proxy_factory, [up.port],
               {"retry_on": "5xx", "num_retries": 1, "per_try_timeout": "0.2s"}, timeout=0)
    t0 = time.monotonic()
    status, _, body = p.request("GET", "/delay")
    took = time.monotonic() - t0
    assert status == 504 and body == b"upstream request timeout"
    assert 0.38 <= took < 0.7, took
    line = _log(p)[0]
    assert line["response_flags"] == "UT,URX"
    assert line["response_code_details"] == "upstream_per_try_timeout"
    assert up.count() == 2
    assert _stat(p, "upstream_rq_per_try_timeout") == 2
    assert _stat(p, "upstream_rq_retry") == 1


def test_per_try_idle_timeout_before_the_response(proxy_factory, upstreams):
    up = upstreams([("delay", 600, 200), "200"])
    p = _proxy(proxy_factory, [up.port],
               {"retry_on": "reset", "num_retries": 1, "per_try_idle_timeout": "0.2s"})
    t0 = time.monotonic()
    status, _, body = p.request("GET", "/")
    assert (status, body) == (200, b"received=0")  # the idle first try was retried
    assert 0.18 <= time.monotonic() - t0 < 0.6
    assert _stat(p, "upstream_rq_per_try_idle_timeout") == 1 and up.count() == 2


def test_per_try_idle_timeout_not_retried_is_504(proxy_factory, upstreams):
    up = upstreams([("delay", 600, 200)])
    p = _proxy(proxy_factory, [up.port],
               {"retry_on": "connect-failure", "per_try_idle_timeout": "0.2s"})
    status, _, body = p.request("GET", "/")
    assert (status, body) == (504, b"upstream request timeout")
    line = _log(p)[0]
    assert line["response_flags"] == "UT"
    assert line["response_code_details"] == "upstream_per_try_idle_timeout"


def test_per_try_idle_timeout_goes_on_while_the_response_streams(proxy_factory, upstreams):
    """Unlike per_try_timeout, the idle timer keeps running after the response started: a
    response that stalls for longer resets the client's connection."""
    up = upstreams([("stall", 800)])
    p = _proxy(proxy_factory, [up.port],
               {"retry_on": "5xx", "per_try_timeout": "0.1s", "per_try_idle_timeout": "0.3s"})
    s = p.connect()
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    t0 = time.monotonic()
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"hello")
    assert time.monotonic() - t0 < 0.75
    line = _log(p)[0]
    assert line["response_flags"] == "UT"
    assert line["response_code_details"] == "upstream_per_try_idle_timeout"


def test_route_timeout_bounds_all_retries(proxy_factory, upstreams):
    """B008: the route timeout (1 s here) ends the request; no retry starts after it."""
    up = upstreams([("delay", 3000, 200)])
    p = _proxy(proxy_factory, [up.port], {"retry_on": ISTIO_DEFAULT_RETRY_ON, "num_retries": 3},
               timeout="1s")
    t0 = time.monotonic()
    status, _, body = p.request("GET", "/delay")
    took = time.monotonic() - t0
    assert status == 504 and body == b"upstream request timeout"
    assert 0.9 <= took < 1.5, took
    line = _log(p)[0]
    assert line["response_flags"] == "UT"
    assert line["response_code_details"] == "response_timeout"
    assert up.count() == 1


def test_previous_hosts_predicate_moves_retries_to_another_host(proxy_factory, upstreams):
    bad = upstreams(["reset"])
    good = upstreams(["200"])
    policy = {"retry_on": "reset", "num_retries": 1, "host_selection_retry_max_attempts": 60,
              "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts"}]}
    p = _proxy(proxy_factory, [bad.port, good.port], policy, lb_policy="RANDOM")
    for _ in range(20):
        assert p.request("GET", "/")[0] == 200
    assert good.count() == 20


def test_max_retries_breaker_overflow_is_uo(proxy_factory, upstreams):
    up = upstreams([("status", 503)])
    cb = {"max_retries": 0}
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx", "num_retries": 2},
               circuit_breakers=cb)
    status, _, _ = p.request("GET", "/")
    assert status == 503 and up.count() == 1
    assert _log(p)[0]["response_flags"] == "UO"
    assert _stat(p, "upstream_rq_retry_overflow") == 1


def test_attempt_count_header(proxy_factory, upstreams):
    up = upstreams([("status", 503), "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx", "num_retries": 1},
               vhost_extra={"include_request_attempt_count": True})
    assert p.request("GET", "/", headers={"x-envoy-attempt-count": "7"})[0] == 200
    assert [r[2].get("x-envoy-attempt-count") for r in up.requests] == ["1", "2"]


def test_retry_headers_are_not_forwarded(proxy_factory, upstreams):
    up = upstreams(["200"])
    p = _proxy(proxy_factory, [up.port])
    p.request("GET", "/", headers={"x-envoy-retry-on": "5xx", "x-envoy-max-retries": "3"})
    assert "x-envoy-retry-on" not in up.requests[0][2]
    assert "x-envoy-max-retries" not in up.requests[0][2]


# ---------- the retry buffer (B005, B007) ----------

def _raw_post(port, size, first, wait=None, timeout=20):
    """POST /upload with Content-Length size: send the head and `first` body bytes, call
    wait() (if given), send the rest, then read the whole response."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(b"POST /upload?early=503 HTTP/1.1\r\nHost: catalog\r\n"
                  b"Content-Length: %d\r\n\r\n" % size + b"a" * first)
        if wait:
            wait()
        left = size - first
        chunk = b"b" * 65536
        try:
            while left > 0:
                n = min(left, len(chunk))
                s.sendall(chunk[:n])
                left -= n
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
        head, _, rest = data.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(rest) < n:
            d = s.recv(65536)
            if not d:
                break
            rest += d
        return int(head.split(b" ")[1]), rest
    finally:
        s.close()


RETRY_507 = {"retry_on": "5xx,reset", "num_retries": 3,
             "retry_back_off": {"base_interval": "10s"}}


def test_507_when_the_body_overflows_during_back_off(proxy_factory, upstreams, monkeypatch):
    """B005: the first attempt is answered 503 early; during the (10 s, deterministic) back-off
    the rest of a 4 MiB body arrives, crosses the 1 MiB retry buffer and the proxy answers 507
    at once: no flag, one upstream attempt, retry_or_shadow_abandoned +1."""
    monkeypatch.setenv("WEFT_PROXY_TEST_BACKOFF_JITTER", "max")
    up = upstreams(["503-early", "200"])
    p = _proxy(proxy_factory, [up.port], RETRY_507)
    t0 = time.monotonic()
    status, body = _raw_post(p.port, 4194304, 262144, wait=lambda: up.early.wait(10))
    assert status == 507
    assert body == b"exceeded request buffer limit while retrying upstream"
    assert time.monotonic() - t0 < 5  # sent when the limit was crossed, not after the back-off
    line = _log(p)[0]
    assert line["response_flags"] == "-"
    assert line["response_code_details"] == "request_payload_exceeded_retry_buffer_limit"
    assert up.count() == 1
    assert _stat(p, "retry_or_shadow_abandoned") == 1


def test_256k_body_is_replayed_after_back_off(proxy_factory, upstreams):
    """B005's control: 256 KiB fits the buffer; the retry replays it and answers 200."""
    up = upstreams(["503-early", "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx,reset", "num_retries": 3})
    status, body = _raw_post(p.port, 262144, 262144)
    assert (status, body) == (200, b"received=262144")
    assert up.count() == 2
    assert up.requests[1][3] == b"a" * 262144
    assert _stat(p, "retry_or_shadow_abandoned") == 0


def test_route_buffer_limit_lowers_the_listener_limit(proxy_factory, upstreams, monkeypatch):
    monkeypatch.setenv("WEFT_PROXY_TEST_BACKOFF_JITTER", "max")
    up = upstreams(["503-early", "200"])
    p = _proxy(proxy_factory, [up.port], RETRY_507,
               route_extra={"per_request_buffer_limit_bytes": 65536})
    status, _ = _raw_post(p.port, 262144, 1024, wait=lambda: up.early.wait(10))
    assert status == 507


def test_large_upload_with_retries_streams_without_failure(proxy_factory, upstreams):
    """B007 with retries active: an 8 MiB upload that needs no retry streams through (200);
    the retry buffer is given up past 1 MiB (counted), never a 413."""
    up = upstreams(["200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx,reset", "num_retries": 2})
    status, body = _raw_post(p.port, 8388608, 0)
    assert (status, body) == (200, b"received=8388608")
    assert _log(p)[0]["response_flags"] == "-"
    assert _stat(p, "retry_or_shadow_abandoned") == 1


def test_failure_after_overflow_is_not_retried(proxy_factory, upstreams):
    """Once the buffer was given up, a failing attempt is final (no URX: no retry state)."""
    up = upstreams([("status", 503), "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx", "num_retries": 2},
               listener_extra={"per_connection_buffer_limit_bytes": 32768})
    status, _ = _raw_post(p.port, 262144, 0)
    assert status == 503 and up.count() == 1
    assert _log(p)[0]["response_flags"] == "-"


def test_unknown_retry_on_token_is_refused(tmp_path):
    import subprocess
    from proxyfix import proxy_path, write_bootstrap
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend",
                                                  retry_policy={"retry_on": "5xx,bogus"})])])
    bs = bootstrap(listeners=[listener(rc, port=free_port())], clusters=[cluster("b", [1])],
                   admin_port=free_port())
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "-c", path, "--mode", "validate"], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 1
    assert "retry_policy.retry_on" in r.stderr and "bogus" in r.stderr


def test_50mb_upload_with_retries_keeps_rss_bounded(proxy_factory):
    """A 50 MB upload through a route with retries and no failure streams through; the proxy's
    RSS grows less than 4 MB beyond the 1 MiB retry buffer while it runs."""
    import threading

    from procs import rss_kb
    proc, port = start_app()
    try:
        p = _proxy(proxy_factory, [port], {"retry_on": "5xx,reset", "num_retries": 2})
        status, body = _raw_post(p.port, 4 << 20, 0)  # warm-up: buffers and pools settle
        assert status == 200
        base = rss_kb(p.proc.pid)
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kb(p.proc.pid))
                done.wait(0.005)
        t = threading.Thread(target=sample, daemon=True)
        t.start()
        try:
            status, body = _raw_post(p.port, 50 << 20, 0, timeout=60)
        finally:
            done.set()
            t.join(5)
        assert (status, body) == (200, b"received=%d\n" % (50 << 20))
        growth = peak[0] - base
        assert growth < 1024 + 4096, "RSS grew %d KiB" % growth
    finally:
        stop_process(proc)


# ---------- regressions found by trying the feature as a new user ----------

def test_huge_host_selection_max_attempts_does_not_spin(proxy_factory, upstreams):
    """host_selection_retry_max_attempts of 10^15 with one host: the retry goes to the only
    host at once (re-picks are bounded), it never freezes the worker."""
    up = upstreams([("status", 503), "200"])
    policy = {"retry_on": "5xx", "num_retries": 3,
              "host_selection_retry_max_attempts": "1000000000000000",
              "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts"}]}
    p = _proxy(proxy_factory, [up.port], policy)
    t0 = time.monotonic()
    assert p.request("GET", "/", timeout=5)[0] == 200
    assert time.monotonic() - t0 < 1.0


def test_attempt_count_in_response(proxy_factory, upstreams):
    up = upstreams([("status", 503), ("status", 503), "200"])
    p = _proxy(proxy_factory, [up.port], {"retry_on": "5xx", "num_retries": 2},
               vhost_extra={"include_attempt_count_in_response": True})
    status, headers, _ = p.request("GET", "/")
    assert status == 200 and headers.get("x-envoy-attempt-count") == "3"


def test_attempt_count_on_router_local_replies(proxy_factory):
    """Envoy's router adds x-envoy-attempt-count to its own local replies too: 503 UF after
    the retries ran out, and 1 when no upstream was tried (a route to a missing cluster)."""
    dead = free_port()
    p = _proxy(proxy_factory, [dead], {"retry_on": "connect-failure", "num_retries": 2},
               vhost_extra={"include_attempt_count_in_response": True})
    status, headers, _ = p.request("GET", "/")
    assert status == 503 and headers.get("x-envoy-attempt-count") == "3"
    p2 = _proxy(proxy_factory, [dead], vhost_extra={"include_attempt_count_in_response": True},
                route_extra={"route": {"cluster": "missing"}})
    status, headers, _ = p2.request("GET", "/")
    assert status == 503 and headers.get("x-envoy-attempt-count") == "1"


def test_connect_failure_logs_host_and_attempts(proxy_factory):
    dead = free_port()
    rt = route(prefix="/", cluster="backend", retry_policy={"retry_on": "connect-failure",
                                                            "num_retries": 2})
    fmt = {"host": "%UPSTREAM_HOST%", "attempts": "%UPSTREAM_REQUEST_ATTEMPT_COUNT%"}
    bs = bootstrap(listeners=[listener(route_config([vhost("all", ["*"], [rt])]),
                                       access_logs=[access_log(json_format=fmt)])],
                   clusters=[cluster("backend", [dead])])
    p = proxy_factory(bs)
    assert p.request("GET", "/")[0] == 503
    assert _log(p)[0] == {"host": "127.0.0.1:%d" % dead, "attempts": 3}


def test_no_retry_after_a_1xx(proxy_factory):
    """Envoy's router drops the retry state once a 1xx arrives."""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    count = [0]

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            count[0] += 1
            c.recv(65536)
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 X\r\ncontent-length: 0\r\n\r\n")
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    try:
        p = _proxy(proxy_factory, [port], {"retry_on": "5xx", "num_retries": 2})
        assert p.request("GET", "/")[0] == 503
        assert count[0] == 1
    finally:
        srv.close()


def test_request_timeout_is_the_connection_managers_not_the_routes(proxy_factory, upstreams):
    """HCM request_timeout covers receiving the request: an incomplete body gets 408
    request_overall_timeout (no UT); once the request is complete it no longer applies."""
    up = upstreams([("delay", 1500, 200)])
    rt = route(prefix="/", cluster="backend", timeout=0)
    lst = listener(route_config([vhost("all", ["*"], [rt])]),
                   access_logs=[access_log(json_format=ISTIO_JSON_FORMAT)])
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["request_timeout"] = "1s"
    p = proxy_factory(bootstrap(listeners=[lst], clusters=[cluster("backend", [up.port])]))
    assert p.request("GET", "/slow", timeout=5)[0] == 200  # complete: 1.5 s is fine
    s = p.connect()
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
    data = s.recv(4096)
    s.close()
    assert data.startswith(b"HTTP/1.1 408")
    line = _log(p, 2)[1]
    assert line["response_code_details"] == "request_overall_timeout"
    assert line["response_flags"] == "-"


# ---------- the retry headers of internal requests (RetryStateImpl, retry_state_impl.cc) ----------

def _proxy_hcm(proxy_factory, ports, policy=None, use_remote_address=True):
    """use_remote_address true: the test client (loopback, no x-forwarded-for) is internal;
    false with no x-forwarded-for: external, its x-envoy-retry-* headers are dropped."""
    rt = route(prefix="/", cluster="backend", retry_policy=policy)
    lst = listener(route_config([vhost("all", ["*"], [rt])]),
                   access_logs=[access_log(json_format=ISTIO_JSON_FORMAT)],
                   use_remote_address=use_remote_address)
    return proxy_factory(bootstrap(listeners=[lst], clusters=[cluster("backend", list(ports))]))


RETRY_HEADERS = {"x-envoy-retry-on": "5xx", "x-envoy-max-retries": "2"}


def test_internal_request_retry_headers_without_route_policy(proxy_factory, upstreams):
    up = upstreams([("status", 503), ("status", 503), "200"])
    p = _proxy_hcm(proxy_factory, [up.port])
    status, _, body = p.request("GET", "/x", headers=RETRY_HEADERS)
    assert (status, body) == (200, b"received=0")
    assert up.count() == 3
    assert _stat(p, "upstream_rq_retry") == 2
    for r in up.requests:  # consumed by the router
        assert r[2].get("x-envoy-internal") == "true"
        assert "x-envoy-retry-on" not in r[2] and "x-envoy-max-retries" not in r[2]


def test_external_request_retry_headers_change_nothing(proxy_factory, upstreams):
    up = upstreams([("status", 503), ("status", 503), "200"])
    p = _proxy_hcm(proxy_factory, [up.port], use_remote_address=False)
    assert p.request("GET", "/x", headers=RETRY_HEADERS)[0] == 503
    assert up.count() == 1
    assert _stat(p, "upstream_rq_retry") == 0
    assert "x-envoy-retry-on" not in up.requests[0][2]


def test_internal_request_retriable_status_codes_header(proxy_factory, upstreams):
    up = upstreams([("status", 418), "200"])
    p = _proxy_hcm(proxy_factory, [up.port])
    status, _, _ = p.request("GET", "/", headers={
        "x-envoy-retry-on": "retriable-status-codes",
        "x-envoy-retriable-status-codes": "409, 418"})
    assert status == 200 and up.count() == 2  # the route's default: one retry
    assert "x-envoy-retriable-status-codes" not in up.requests[0][2]


def test_internal_request_status_codes_add_to_the_routes(proxy_factory, upstreams):
    up = upstreams([("status", 418), ("status", 503), "200"])
    p = _proxy_hcm(proxy_factory, [up.port], {"retry_on": "retriable-status-codes",
                                              "num_retries": 3, "retriable_status_codes": [503]})
    assert p.request("GET", "/", headers={"x-envoy-retriable-status-codes": "418"})[0] == 200
    assert up.count() == 3


def test_internal_request_retry_on_is_ored_with_the_route_policy(proxy_factory, upstreams):
    up = upstreams([("status", 503), "200", ("status", 503)])
    p = _proxy_hcm(proxy_factory, [up.port], {"retry_on": "connect-failure", "num_retries": 1})
    assert p.request("GET", "/", headers={"x-envoy-retry-on": "bogus, gateway-error"})[0] == 200
    assert up.count() == 2
    # the shared route policy is untouched: the next request, without headers, is not retried
    assert p.request("GET", "/")[0] == 503
    assert up.count() == 3


def test_internal_request_max_retries_zero_overrides_the_route(proxy_factory, upstreams):
    up = upstreams([("status", 503), "200"])
    p = _proxy_hcm(proxy_factory, [up.port], {"retry_on": "5xx", "num_retries": 3})
    assert p.request("GET", "/", headers={"x-envoy-max-retries": "0"})[0] == 503
    assert up.count() == 1
    assert _log(p)[0]["response_flags"] == "URX"


def test_internal_request_retry_grpc_on_header(proxy_factory, upstreams):
    up = upstreams([("headers", 200, {"grpc-status": "14"}), "200"])
    p = _proxy_hcm(proxy_factory, [up.port])
    p.request("GET", "/", headers={"x-envoy-retry-grpc-on": "cancelled,unavailable"})
    assert up.count() == 2
    up2 = upstreams([("status", 503), "200"])
    p2 = _proxy_hcm(proxy_factory, [up2.port])  # HTTP tokens in x-envoy-retry-grpc-on: ignored
    assert p2.request("GET", "/", headers={"x-envoy-retry-grpc-on": "5xx"})[0] == 503
    assert up2.count() == 1
