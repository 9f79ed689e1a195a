"""weft-proxy's fault injection filter (envoy.filters.http.fault), as Istio configures it from a
VirtualService `fault`: aborts (status, body "fault filter abort", details fault_filter_abort,
flag FI), fixed delays (flag DI), percentages with the WEFT_PROXY_TEST_SEED hook, per-route and
per-virtual-host overrides (typed_per_filter_config), header-matched faults, max_active_faults,
and a client that disconnects during a delay (no leak under ASan: the fixture checks stderr).
"""
import http.client
import subprocess
import time

import pytest

from procs import backend_app, start_app, stop_process
from proxyfix import (ISTIO_TEXT_FORMAT, ROUTER_TYPE, access_log, bootstrap,
                      cluster, listener, proxy_factory, proxy_path, route, route_config, vhost,
                      write_bootstrap)

FAULT = "envoy.filters.http.fault"
FAULT_TYPE = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
PREFIX = "http.ingress_http.fault."
TIMEOUT = 10


@pytest.fixture
def app(backend_app):
    return backend_app


def http_fault(delay_ms=None, delay_pct=None, abort=None, abort_pct=None, headers=None,
               max_active=None, denominator="HUNDRED"):
    """An HTTPFault typed_config; percentages are numerators over `denominator`."""
    tc = {"@type": FAULT_TYPE}
    if delay_ms is not None:
        tc["delay"] = {"fixed_delay": "%.3fs" % (delay_ms / 1000.0)}
        if delay_pct is not None:
            tc["delay"]["percentage"] = {"numerator": delay_pct, "denominator": denominator}
    if abort is not None:
        tc["abort"] = {"http_status": abort}
        if abort_pct is not None:
            tc["abort"]["percentage"] = {"numerator": abort_pct, "denominator": denominator}
    if headers is not None:
        tc["headers"] = headers
    if max_active is not None:
        tc["max_active_faults"] = max_active
    return tc


def fault_bootstrap(app_port, fault_tc=None, rc=None, **hcm):
    """A listener whose http_filters are [fault (fault_tc), router], Istio text access log."""
    rc = rc or route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend",
                                                        name="default")])])
    lst = listener(rc, access_logs=[access_log(path="@LOG:istio@", fmt=ISTIO_TEXT_FORMAT)], **hcm)
    hcm_cfg = lst["filter_chains"][0]["filters"][0]["typed_config"]
    hcm_cfg["http_filters"] = [
        {"name": FAULT, "typed_config": fault_tc or {"@type": FAULT_TYPE}},
        {"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER_TYPE}},
    ]
    return bootstrap([lst], [cluster("backend", [app_port])])


def per_route(tc):
    return {"typed_per_filter_config": {FAULT: tc}}


def test_abort_100_percent(app, proxy_factory):
    p = proxy_factory(fault_bootstrap(app, http_fault(abort=503, abort_pct=100)))
    status, hdrs, body = p.request("GET", "/echo")
    assert status == 503
    assert body == b"fault filter abort"
    assert hdrs["content-type"] == "text/plain"
    log = p.istio_log(1)[0]
    assert log["response_code"] == "503"
    assert log["response_flags"] == "FI"
    assert log["response_code_details"] == "fault_filter_abort"
    assert log["upstream_host"] == "-"
    # the connection manager chose the route before the filter ran: both are logged (Envoy)
    assert (log["upstream_cluster"], log["route_name"]) == ("backend", "default")
    st = p.stats()
    assert st[PREFIX + "aborts_injected"] == 1
    assert st[PREFIX + "delays_injected"] == 0
    assert st[PREFIX + "active_faults"] == 0
    assert st["cluster.backend.upstream_rq_total"] == 0  # the backend was never called


def test_abort_0_percent_passes(app, proxy_factory):
    p = proxy_factory(fault_bootstrap(app, http_fault(abort=503, abort_pct=0)))
    for _ in range(20):
        status, _, _ = p.request("GET", "/healthz")
        assert status == 200
    assert p.istio_log(20)[0]["response_flags"] == "-"
    st = p.stats()
    assert st[PREFIX + "aborts_injected"] == 0
    assert st["cluster.backend.upstream_rq_total"] == 20


def test_fixed_delay_100_percent(app, proxy_factory):
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=300, delay_pct=100)))
    t0 = time.monotonic()
    status, _, _ = p.request("GET", "/healthz")
    elapsed = time.monotonic() - t0
    assert status == 200
    assert elapsed >= 0.3, elapsed
    log = p.istio_log(1)[0]
    assert log["response_flags"] == "DI"
    assert log["response_code_details"] == "via_upstream"
    assert int(log["duration"]) >= 300
    st = p.wait_stat(PREFIX + "active_faults", 0)
    assert st[PREFIX + "delays_injected"] == 1
    assert st[PREFIX + "active_faults"] == 0
    assert st["cluster.backend.upstream_rq_total"] == 1


def test_delay_then_abort(app, proxy_factory):
    """Both faults apply: the abort happens when the delay ends (flags in set order)."""
    tc = http_fault(delay_ms=200, delay_pct=1000000, abort=429, abort_pct=1000000,
                    denominator="MILLION")
    p = proxy_factory(fault_bootstrap(app, tc))
    t0 = time.monotonic()
    status, _, body = p.request("GET", "/healthz")
    assert time.monotonic() - t0 >= 0.19  # the loop clock may lag real time a little
    assert (status, body) == (429, b"fault filter abort")
    log = p.istio_log(1)[0]
    assert log["response_flags"] == "DI,FI"
    st = p.stats()
    assert st[PREFIX + "delays_injected"] == 1
    assert st[PREFIX + "aborts_injected"] == 1
    assert st["cluster.backend.upstream_rq_total"] == 0


def test_delay_with_request_body(app, proxy_factory):
    """A body that arrives during the delay is forwarded when the router starts."""
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=200, delay_pct=100)))
    payload = b"x" * 50000
    status, _, body = p.request("POST", "/upload", body=payload,
                                headers={"content-type": "application/octet-stream"})
    assert status == 200, body
    assert body == b"received=%d\n" % len(payload)
    assert p.istio_log(1)[0]["response_flags"] == "DI"


def _abort_count(app, proxy_factory, monkeypatch, seed, n=400):
    monkeypatch.setenv("WEFT_PROXY_TEST_SEED", str(seed))
    tc = http_fault(abort=503, abort_pct=500000, denominator="MILLION")  # Istio's 50 %
    p = proxy_factory(fault_bootstrap(app, tc))
    conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=TIMEOUT)
    codes = []
    try:
        for _ in range(n):
            conn.request("GET", "/healthz")
            r = conn.getresponse()
            r.read()
            codes.append(r.status)
    finally:
        conn.close()
    aborted = codes.count(503)
    assert aborted + codes.count(200) == n
    st = p.stats()
    assert st[PREFIX + "aborts_injected"] == aborted
    assert st["cluster.backend.upstream_rq_total"] == n - aborted
    p.stop()
    return codes


def test_abort_50_percent_with_fixed_seed(app, proxy_factory, monkeypatch):
    codes = _abort_count(app, proxy_factory, monkeypatch, seed=42)
    aborted = codes.count(503)
    assert 140 <= aborted <= 260, aborted  # 50 % of 400, sd 10: a wide tolerance
    # the test hook makes the draws reproducible
    assert _abort_count(app, proxy_factory, monkeypatch, seed=42) == codes


def test_per_route_and_vhost_override(app, proxy_factory):
    """Istio's shape: an empty HTTPFault in http_filters and the settings per route; the
    route's override wins over its virtual host's."""
    routes = [
        route(prefix="/fault", cluster="backend", name="faulty"),
        route(prefix="/", cluster="backend", name="default"),
    ]
    routes[0].update(per_route(http_fault(abort=418, abort_pct=100)))
    vh_plain = vhost("plain", ["plain.example"], [route(prefix="/", cluster="backend")])
    vh_fault = vhost("vfault", ["v.example"],
                     [route(prefix="/own", cluster="backend"), route(prefix="/", cluster="backend")])
    vh_fault.update(per_route(http_fault(abort=429, abort_pct=100)))
    vh_fault["routes"][0].update(per_route(http_fault(abort=451, abort_pct=100)))
    rc = route_config([vhost("all", ["*"], routes), vh_plain, vh_fault])
    p = proxy_factory(fault_bootstrap(app, None, rc=rc))
    status, _, body = p.request("GET", "/fault/x")
    assert (status, body) == (418, b"fault filter abort")
    assert p.request("GET", "/healthz")[0] == 200
    assert p.request("GET", "/healthz", headers={"host": "plain.example"})[0] == 200
    assert p.request("GET", "/healthz", headers={"host": "v.example"})[0] == 429
    assert p.request("GET", "/own", headers={"host": "v.example"})[0] == 451
    logs = p.istio_log(5)
    assert [l["response_flags"] for l in logs] == ["FI", "-", "-", "FI", "FI"]
    # the route was chosen before the filter aborted: logged, as Envoy's cached route
    assert logs[0]["route_name"] == "faulty"
    assert p.stats()[PREFIX + "aborts_injected"] == 3


def test_header_matched_fault(app, proxy_factory):
    headers = [{"name": "x-fault", "string_match": {"exact": "on"}}]
    p = proxy_factory(fault_bootstrap(app, http_fault(abort=503, abort_pct=100,
                                                      headers=headers)))
    assert p.request("GET", "/healthz")[0] == 200
    assert p.request("GET", "/healthz", headers={"x-fault": "off"})[0] == 200
    assert p.request("GET", "/healthz", headers={"X-Fault": "on"})[0] == 503
    flags = [l["response_flags"] for l in p.istio_log(3)]
    assert flags == ["-", "-", "FI"]


def _send_get(p, path="/healthz"):
    s = p.connect()
    s.settimeout(TIMEOUT)
    s.sendall(("GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % path).encode())
    return s


def test_max_active_faults_overflow(app, proxy_factory):
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=1500, delay_pct=100,
                                                      max_active=1)))
    s = _send_get(p)  # takes the only active fault
    st = p.wait_stat(PREFIX + "active_faults", 1)
    assert st[PREFIX + "active_faults"] == 1
    t0 = time.monotonic()
    assert p.request("GET", "/healthz")[0] == 200  # overflow: no delay
    assert time.monotonic() - t0 < 1.0
    data = s.recv(4096)
    s.close()
    assert data.startswith(b"HTTP/1.1 200 ")
    st = p.wait_stat(PREFIX + "active_faults", 0)
    assert st[PREFIX + "faults_overflow"] == 1
    assert st[PREFIX + "delays_injected"] == 1
    flags = sorted(l["response_flags"] for l in p.istio_log(2))
    assert flags == ["-", "DI"]


def test_client_disconnect_during_delay(app, proxy_factory):
    """The delay timer is cancelled with the stream: DC is logged, nothing reaches the
    backend, the gauge goes back to 0 and the process exits cleanly (ASan)."""
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=2000, delay_pct=100)))
    for _ in range(3):
        s = _send_get(p)
        p.wait_stat(PREFIX + "active_faults", 1)
        s.close()
        p.wait_stat(PREFIX + "active_faults", 0)
    logs = p.istio_log(3)
    for l in logs:
        assert l["response_flags"] == "DI,DC"
        assert l["response_code"] == "0"
        assert l["response_code_details"] == "downstream_remote_disconnect"
    time.sleep(2.3)  # past the delay: a stale timer would fire now
    st = p.stats()
    assert st[PREFIX + "active_faults"] == 0
    assert st[PREFIX + "delays_injected"] == 3
    assert st["cluster.backend.upstream_rq_total"] == 0


def test_request_timeout_applies_during_delay(app, proxy_factory):
    """The connection manager's request_timeout still runs while the fault delays."""
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=1500, delay_pct=100),
                                      request_timeout="0.2s"))
    t0 = time.monotonic()
    status, _, body = p.request("GET", "/healthz")
    assert time.monotonic() - t0 < 1.2
    assert status in (408, 504) and body == b"request timeout"
    log = p.istio_log(1)[0]
    assert log["response_code_details"] == "request_overall_timeout"
    assert log["response_flags"].startswith("DI")
    st = p.wait_stat(PREFIX + "active_faults", 0)
    assert st["cluster.backend.upstream_rq_total"] == 0
    time.sleep(1.5)  # the delay's end finds the stream gone
    assert p.stats()["cluster.backend.upstream_rq_total"] == 0


def test_bad_fault_config_names_path(tmp_path):
    bs = fault_bootstrap(1, {"@type": FAULT_TYPE, "abort": {"header_abort": {}}})
    bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = 1
    bs["admin"]["address"]["socket_address"]["port_value"] = 2
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1, r.stdout
    assert ("http_filters[0].typed_config.abort.header_abort: not supported by weft-proxy's "
            "fault filter") in r.stderr


def test_stream_idle_timeout_during_delay(app, proxy_factory):
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=1500, delay_pct=100),
                                      stream_idle_timeout="0.2s"))
    status, _, body = p.request("GET", "/healthz")
    assert (status, body) == (504, b"stream timeout")
    log = p.istio_log(1)[0]
    assert log["response_flags"] == "DI,SI"
    assert log["response_code_details"] == "stream_idle_timeout"
    p.wait_stat(PREFIX + "active_faults", 0)
    time.sleep(1.5)
    assert p.stats()["cluster.backend.upstream_rq_total"] == 0


def test_pipelined_requests_each_delayed(app, proxy_factory):
    """Two pipelined requests on one connection: each waits for its own delay, in order (the
    connection's timer is reused)."""
    p = proxy_factory(fault_bootstrap(app, http_fault(delay_ms=150, delay_pct=100)))
    s = p.connect()
    s.settimeout(TIMEOUT)
    t0 = time.monotonic()
    s.sendall(b"GET /status/201 HTTP/1.1\r\nHost: a\r\n\r\n"
              b"GET /status/202 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    # one delay after the other (not overlapping: 0.15 s); timers run on the loop's cached clock,
    # which may lag real time by a fraction of a millisecond at each start
    assert time.monotonic() - t0 >= 0.29
    assert data.startswith(b"HTTP/1.1 201 ")
    assert b"HTTP/1.1 202 " in data
    assert [l["response_flags"] for l in p.istio_log(2)] == ["DI", "DI"]
    assert p.wait_stat(PREFIX + "active_faults", 0)[PREFIX + "delays_injected"] == 2
