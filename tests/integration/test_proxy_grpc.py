"""gRPC semantics in weft-proxy (../shared/reference/protocols.md §3; operator reports B032 and
B034): the proxy's own replies to a gRPC request are trailers-only gRPC answers (:status 200,
content-type application/grpc, grpc-status mapped by Envoy's httpToGrpcStatus, grpc-message =
the reply body; the router's timeouts answer 4 DEADLINE_EXCEEDED), grpc-timeout capped by the
route's max_grpc_timeout, retry_on with gRPC codes, %GRPC_STATUS% and Istio's
request_protocol="grpc" / grpc_response_status.

Clients nobody on the project wrote: Python grpcio (Debian's python3-grpcio) and curl
--http2-prior-knowledge against an h2c listener (curl over HTTP/1.1 too). The upstreams are
HTTP/1.1 (scripted_upstream.py) answering gRPC-shaped responses (chunked with a grpc-status
trailer, or trailers-only): weft-proxy's upstream HTTP/2 client is not part of this.
"""
import json
import subprocess
import time

import pytest

from proxyfix import (access_log, bootstrap, cluster, listener,
                      proxy_factory, route, route_config, vhost)
from scripted_upstream import upstreams
from test_proxy_istio_metrics import (count, istio_listener, node, svc_cluster, SVC_HOST,
                                      wait_total)
from test_proxy_rbac import path_policy, rbac_filter

assert proxy_factory and upstreams  # fixtures, imported for pytest

grpc = pytest.importorskip("grpc", reason="python3-grpcio (scripts/setup installs it)")

LOG = {"code": "%RESPONSE_CODE%", "flags": "%RESPONSE_FLAGS%",
       "details": "%RESPONSE_CODE_DETAILS%", "grpc": "%GRPC_STATUS%",
       "grpc_number": "%GRPC_STATUS(NUMBER)%", "grpc_snake": "%GRPC_STATUS(SNAKE_STRING)%",
       "protocol": "%PROTOCOL%", "path": "%REQ(:PATH)%"}
METHOD = "/shop.Echo/Echo"


def bs_for(routes, clusters, **hcm):
    rc = route_config([vhost("all", ["*"], routes)])
    return bootstrap([listener(rc, access_logs=[access_log(json_format=LOG)], **hcm)], clusters)


def grpc_route(timeout=None, max_grpc_timeout=None, retry_policy=None, **kw):
    r = route(prefix="/", cluster="backend", timeout=timeout, retry_policy=retry_policy, **kw)
    if max_grpc_timeout is not None:
        r["route"]["max_grpc_timeout"] = max_grpc_timeout
    return r


def logs(proxy, n):
    return [json.loads(line) for line in proxy.access_log_lines(n)]


def call(proxy, payload=b"hi", timeout=10, metadata=None):
    """One unary call with grpcio; (code, details, response or None, seconds)."""
    ch = grpc.insecure_channel("127.0.0.1:%d" % proxy.port,
                               options=[("grpc.enable_http_proxy", 0)])
    try:
        fn = ch.unary_unary(METHOD)
        t0 = time.monotonic()
        try:
            resp = fn(payload, timeout=timeout, metadata=metadata)
            return grpc.StatusCode.OK, "", resp, time.monotonic() - t0
        except grpc.RpcError as e:
            return e.code(), e.details(), None, time.monotonic() - t0
    finally:
        ch.close()


def curl(proxy, *extra, h2=True, path=METHOD):
    """curl -i with a gRPC request (a POST without body: curl 7.88 hangs when a complete
    answer arrives while it still uploads): (status, headers dict, body bytes, seconds)."""
    args = ["curl", "-sS", "-i", "--max-time", "10", "-H", "content-type: application/grpc",
            "-H", "te: trailers", "-X", "POST"]
    args += ["--http2-prior-knowledge"] if h2 else ["--http1.1"]
    t0 = time.monotonic()
    r = subprocess.run(args + list(extra) + [proxy.url(path)], capture_output=True, timeout=20)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    head, _, body = r.stdout.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    hdrs = {}
    for l in lines[1:]:
        k, v = l.split(":", 1)
        hdrs[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), hdrs, body, took


# ---------- local replies as gRPC ----------

def test_no_healthy_upstream_is_unavailable(proxy_factory):
    p = proxy_factory(bs_for([grpc_route()], [cluster("backend", [])]))
    code, details, _, _ = call(p)
    assert (code, details) == (grpc.StatusCode.UNAVAILABLE, "no healthy upstream")
    # trailers-only over HTTP/2: one HEADERS frame, no body
    status, h, body, _ = curl(p)
    assert status == 200 and body == b""
    assert h["content-type"] == "application/grpc"
    assert (h["grpc-status"], h["grpc-message"]) == ("14", "no healthy upstream")
    # HTTP/1.1 downstream: the same head, content-length 0
    status, h, body, _ = curl(p, h2=False)
    assert (status, h["grpc-status"], h["grpc-message"], h["content-length"], body) == \
        (200, "14", "no healthy upstream", "0", b"")
    # not gRPC: Envoy's plain 503
    r = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", p.url("/x")],
                       capture_output=True, text=True, timeout=20)
    assert r.stdout == "no healthy upstream\n503"
    lines = logs(p, 4)
    want = {"code": 200, "flags": "UH", "details": "no_healthy_upstream", "grpc": "Unavailable",
            "grpc_number": 14, "grpc_snake": "UNAVAILABLE"}
    for l in lines[:3]:
        assert {k: l[k] for k in want} == want, l
    assert [l["protocol"] for l in lines[:3]] == ["HTTP/2", "HTTP/2", "HTTP/1.1"]
    assert (lines[3]["code"], lines[3]["flags"], lines[3]["grpc"]) == (503, "UH", None)


@pytest.mark.parametrize("http,grpc_code,body", [
    (400, 13, "bad"), (401, 16, "who"), (403, 7, "no"), (404, 12, None), (429, 14, "slow"),
    (502, 14, "x"), (503, 14, "y"), (504, 14, "z"), (418, 2, "tea 100% \u00e9\n"),
])
def test_http_status_mapping(proxy_factory, http, grpc_code, body):
    p = proxy_factory(bs_for([route(prefix="/", direct=(http, body))], []))
    status, h, out, _ = curl(p)
    assert (status, h["content-type"], h["grpc-status"], out) == \
        (200, "application/grpc", str(grpc_code), b"")
    if body is None:
        assert "grpc-message" not in h  # an empty body sends no grpc-message
    elif http == 418:  # percent-encoded (%, non-ASCII), the trailing newline dropped
        assert h["grpc-message"] == "tea 100%25 %C3%A9"
    else:
        assert h["grpc-message"] == body
    l = logs(p, 1)[0]
    assert (l["code"], l["details"], l["grpc_number"]) == (200, "direct_response", grpc_code)


def test_route_not_found_is_unimplemented(proxy_factory):
    p = proxy_factory(bs_for([route(path="/other", direct=(200, "x"))], []))
    code, details, _, _ = call(p)
    assert code == grpc.StatusCode.UNIMPLEMENTED
    l = logs(p, 1)[0]
    assert (l["code"], l["flags"], l["details"], l["grpc"]) == \
        (200, "NR", "route_not_found", "Unimplemented")


def test_upstream_reset_reason_in_grpc_message(proxy_factory, upstreams):
    up = upstreams(["reset"])
    p = proxy_factory(bs_for([grpc_route()], [cluster("backend", [up.port])]))
    code, details, _, _ = call(p)
    assert code == grpc.StatusCode.UNAVAILABLE
    assert details == ("upstream connect error or disconnect/reset before headers. "
                       "reset reason: connection termination")
    l = logs(p, 1)[0]
    assert (l["code"], l["flags"], l["grpc"]) == (200, "UC", "Unavailable")
    assert l["details"] == "upstream_reset_before_response_started{connection_termination}"


def test_rbac_denial_is_permission_denied(proxy_factory, upstreams):
    up = upstreams([("grpc", b"ok")])
    bs = bs_for([grpc_route()], [cluster("backend", [up.port])])
    hcm = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"][0:0] = [rbac_filter("DENY", {"ns[shop]-policy[deny-echo]-rule[0]":
                                                     path_policy("/shop.Echo/")})]
    p = proxy_factory(bs)
    code, details, _, _ = call(p)
    assert (code, details) == (grpc.StatusCode.PERMISSION_DENIED, "RBAC: access denied")
    assert up.count() == 0
    l = logs(p, 1)[0]
    assert (l["code"], l["grpc"]) == (200, "PermissionDenied")
    assert l["details"] == "rbac_access_denied_matched_policy[ns[shop]-policy[deny-echo]-rule[0]]"


def test_server_status_passes_through(proxy_factory, upstreams):
    up = upstreams([("grpc-only", 5, "no such item"), ("grpc", b"item")])
    p = proxy_factory(bs_for([grpc_route()], [cluster("backend", [up.port])]))
    assert call(p)[:2] == (grpc.StatusCode.NOT_FOUND, "no such item")
    code, _, resp, _ = call(p)
    assert (code, resp) == (grpc.StatusCode.OK, b"item")
    lines = logs(p, 2)
    assert [(l["code"], l["details"], l["grpc"]) for l in lines] == \
        [(200, "via_upstream", "NotFound"), (200, "via_upstream", "OK")]


# ---------- timeouts (B034) ----------

def test_route_timeout_is_deadline_exceeded(proxy_factory, upstreams):
    """B034 (1): route timeout 1 s (max_grpc_timeout 1 s, as istiod writes it), no
    grpc-timeout: DEADLINE_EXCEEDED after ~1 s, access log 200 UT response_timeout."""
    up = upstreams([("delay", 3000, 200)])
    p = proxy_factory(bs_for([grpc_route(timeout="1s", max_grpc_timeout="1s")],
                             [cluster("backend", [up.port])]))
    code, details, _, took = call(p, timeout=10)
    assert (code, details) == (grpc.StatusCode.DEADLINE_EXCEEDED, "upstream request timeout")
    assert 0.9 < took < 2.5
    status, h, body, took = curl(p)
    assert (status, h["grpc-status"], h["grpc-message"], body) == \
        (200, "4", "upstream request timeout", b"")
    assert 0.9 < took < 2.5
    lines = logs(p, 2)
    for l in lines:
        assert (l["code"], l["flags"], l["details"], l["grpc"]) == \
            (200, "UT", "response_timeout", "DeadlineExceeded")
    # the server was told the deadline the proxy enforces
    assert up.requests[0][2]["grpc-timeout"] == "1000m"
    assert p.stats()["cluster.backend.upstream_rq_timeout"] == 2


def test_grpc_timeout_uncapped_without_route_timeout(proxy_factory, upstreams):
    """B034 (2): no VirtualService timeout (timeout 0s, max_grpc_timeout 0s): the client's
    grpc-timeout 300m applies uncapped."""
    up = upstreams([("delay", 3000, 200)])
    p = proxy_factory(bs_for([grpc_route(timeout="0s", max_grpc_timeout="0s")],
                             [cluster("backend", [up.port])]))
    status, h, _, took = curl(p, "-H", "grpc-timeout: 300m")
    assert (status, h["grpc-status"], h["grpc-message"]) == (200, "4", "upstream request timeout")
    assert 0.25 < took < 1.5
    assert up.requests[0][2]["grpc-timeout"] == "300m"
    # grpcio's own deadline goes the same way: its grpc-timeout is what is left of its deadline
    # when it sends, so the proxy's timer ends about when the client gives up; whichever comes
    # first ends the stream (the proxy's answer: UT; the client's RST_STREAM, handled at once
    # as Envoy does: DR)
    code, _, _, took = call(p, timeout=0.5)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    l = logs(p, 2)
    assert (l[0]["flags"], l[0]["grpc"]) == ("UT", "DeadlineExceeded")
    assert (l[1]["flags"], l[1]["grpc"]) in [("UT", "DeadlineExceeded"), ("DR", None)]
    # no grpc-timeout and no cap: no timeout at all, the slow answer arrives
    up2 = upstreams([("grpc", b"late")])
    p2 = proxy_factory(bs_for([grpc_route(timeout="0s", max_grpc_timeout="0s")],
                              [cluster("backend", [up2.port])]))
    assert call(p2, timeout=None)[:3] == (grpc.StatusCode.OK, "", b"late")
    assert "grpc-timeout" not in up2.requests[0][2]


def test_route_timeout_caps_longer_grpc_timeout(proxy_factory, upstreams):
    """B034 (3): route timeout 1 s, grpc-timeout 5S: fires after ~1 s."""
    up = upstreams([("delay", 3000, 200)])
    p = proxy_factory(bs_for([grpc_route(timeout="1s", max_grpc_timeout="1s")],
                             [cluster("backend", [up.port])]))
    status, h, _, took = curl(p, "-H", "grpc-timeout: 5S")
    assert (status, h["grpc-status"]) == (200, "4")
    assert 0.9 < took < 2.5
    assert up.requests[0][2]["grpc-timeout"] == "1000m"


def test_grpc_timeout_ignored_without_max_grpc_timeout(proxy_factory, upstreams):
    """Envoy honours grpc-timeout only on a route with max_grpc_timeout: otherwise the route
    timeout (1 s) applies and the header goes upstream as sent."""
    up = upstreams([("delay", 3000, 200)])
    p = proxy_factory(bs_for([grpc_route(timeout="1s")], [cluster("backend", [up.port])]))
    status, h, _, took = curl(p, "-H", "grpc-timeout: 200m")
    assert (status, h["grpc-status"]) == (200, "4")
    assert took > 0.9
    assert up.requests[0][2]["grpc-timeout"] == "200m"


# ---------- retries ----------

def test_retry_on_unavailable(proxy_factory, upstreams):
    up = upstreams([("grpc-only", 14, "try again"), ("grpc", b"second")])
    rp = {"retry_on": "connect-failure,refused-stream,unavailable,cancelled,"
                      "retriable-status-codes", "num_retries": 2}
    p = proxy_factory(bs_for([grpc_route(retry_policy=rp)], [cluster("backend", [up.port])]))
    code, _, resp, _ = call(p)
    assert (code, resp) == (grpc.StatusCode.OK, b"second")
    assert up.count() == 2
    assert p.stats()["cluster.backend.upstream_rq_retry"] == 1
    assert logs(p, 1)[0]["grpc"] == "OK"


@pytest.mark.parametrize("token,status,retried", [
    ("cancelled", 1, True), ("deadline-exceeded", 4, True), ("internal", 13, True),
    ("resource-exhausted", 8, True), ("unavailable", 14, True), ("unavailable", 4, False),
])
def test_retry_on_grpc_codes(proxy_factory, upstreams, token, status, retried):
    up = upstreams([("grpc-only", status, "first"), ("grpc", b"second")])
    p = proxy_factory(bs_for([grpc_route(retry_policy={"retry_on": token, "num_retries": 1})],
                             [cluster("backend", [up.port])]))
    code, details, resp, _ = call(p)
    if retried:
        assert (code, resp, up.count()) == (grpc.StatusCode.OK, b"second", 2)
    else:
        assert (code.value[0], details, up.count()) == (status, "first", 1)


def test_grpc_status_in_trailers_is_not_retried(proxy_factory, upstreams):
    """Envoy's retry state looks at grpc-status in the response headers only."""
    up = upstreams([("trailers", 200, {"grpc-status": "14"}), ("grpc", b"second")])
    p = proxy_factory(bs_for([grpc_route(retry_policy={"retry_on": "unavailable",
                                                       "num_retries": 1})],
                             [cluster("backend", [up.port])]))
    subprocess.run(["curl", "-sS", "-o", "/dev/null", "--http2-prior-knowledge", "-H",
                    "content-type: application/grpc", p.url(METHOD)], timeout=20, check=True)
    assert up.count() == 1
    assert logs(p, 1)[0]["grpc"] == "Unavailable"  # from the trailers


# ---------- Istio metrics ----------

def test_istio_metrics_grpc_labels(proxy_factory, upstreams):
    up = upstreams([("grpc", b"ok"), ("grpc-only", 5, "missing"), ("delay", 3000, 200)])
    cname = "outbound|9080||" + SVC_HOST
    r = route(prefix="/", cluster=cname, timeout="1s", name="default")
    r["route"]["max_grpc_timeout"] = "1s"
    rc = route_config([vhost(SVC_HOST + ":9080", ["*"], [r])], name="9080")
    lst = istio_listener(rc, False, name="0.0.0.0_9080")
    bs = bootstrap([lst], [svc_cluster(cname, up.port)])
    bs["node"] = node("frontend-v1", "frontend", "v2")
    p = proxy_factory(bs)
    assert call(p)[0] == grpc.StatusCode.OK
    assert call(p)[0] == grpc.StatusCode.NOT_FOUND
    assert call(p)[0] == grpc.StatusCode.DEADLINE_EXCEEDED
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", p.url("/plain")], timeout=20)
    rows = wait_total(p, 4)
    assert count(rows, request_protocol="grpc", response_code=200, grpc_response_status=0) == 1
    assert count(rows, request_protocol="grpc", response_code=200, grpc_response_status=5) == 1
    assert count(rows, request_protocol="grpc", response_code=200, grpc_response_status=4,
                 response_flags="UT") == 1
    assert count(rows, request_protocol="http", grpc_response_status="") == 1


def test_fault_abort_grpc_status(proxy_factory, upstreams):
    """HTTPFault abort.grpc_status (Istio's fault.abort.grpcStatus): a gRPC request gets that
    status trailers-only; another request a plain 200 "fault filter abort" (Envoy's
    abortStatus: HTTP 200 with the gRPC status)."""
    up = upstreams([("grpc", b"ok")])
    bs = bs_for([grpc_route()], [cluster("backend", [up.port])])
    hcm = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"][0:0] = [{"name": "envoy.filters.http.fault", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
        "abort": {"grpc_status": 8, "percentage": {"numerator": 100}}}}]
    p = proxy_factory(bs)
    assert call(p)[:2] == (grpc.StatusCode.RESOURCE_EXHAUSTED, "fault filter abort")
    r = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", p.url("/plain")],
                       capture_output=True, text=True, timeout=20)
    assert r.stdout == "fault filter abort\n200"
    assert up.count() == 0
    lines = logs(p, 2)
    assert [(l["code"], l["flags"], l["details"], l["grpc"]) for l in lines] == \
        [(200, "FI", "fault_filter_abort", "ResourceExhausted"),
         (200, "FI", "fault_filter_abort", None)]


# ---------- max_stream_duration (Istio's inbound route) ----------

def msd_route(msd=None, header_max=None, timeout=None):
    r = route(prefix="/", cluster="backend", timeout=timeout)
    m = {}
    if msd is not None:
        m["max_stream_duration"] = msd
    if header_max is not None:
        m["grpc_timeout_header_max"] = header_max
    r["route"]["max_stream_duration"] = m
    return r


def test_inbound_grpc_timeout_header_max(proxy_factory, upstreams):
    """Istio's inbound default route (timeout 0s, max_stream_duration {0s,
    grpc_timeout_header_max 0s}): the client's grpc-timeout bounds the stream (Envoy's
    refreshDurationTimeout), answered 4 "downstream duration timeout", max_duration_timeout."""
    up = upstreams([("delay", 3000, 200)])
    p = proxy_factory(bs_for([msd_route("0s", "0s", timeout="0s")],
                             [cluster("backend", [up.port])]))
    status, h, _, took = curl(p, "-H", "grpc-timeout: 300m")
    assert (status, h["grpc-status"], h["grpc-message"]) == \
        (200, "4", "downstream duration timeout")
    assert 0.25 < took < 1.5
    assert up.requests[0][2]["grpc-timeout"] == "300m"  # forwarded as sent
    l = logs(p, 1)[0]
    assert (l["code"], l["flags"], l["details"], l["grpc"]) == \
        (200, "-", "max_duration_timeout", "DeadlineExceeded")
    assert p.stats()["http.ingress_http.downstream_rq_max_duration_reached"] == 1


def test_max_stream_duration_replaces_route_timeout(proxy_factory, upstreams):
    """With max_stream_duration on the route (Envoy's usingNewTimeouts) the router ignores
    the route timeout; the stream's max duration applies to any request."""
    up = upstreams([("delay", 500, 200)])
    p = proxy_factory(bs_for([msd_route(header_max="0s", timeout="0.1s")],
                             [cluster("backend", [up.port])]))
    r = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", p.url("/plain")],
                       capture_output=True, text=True, timeout=20)
    assert r.stdout == "status=200\n200"  # the 0.1 s route timeout did not fire
    up2 = upstreams([("delay", 2000, 200)])
    p2 = proxy_factory(bs_for([msd_route(msd="0.5s", timeout="10s")],
                              [cluster("backend", [up2.port])]))
    t0 = time.monotonic()
    r = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", p2.url("/plain")],
                       capture_output=True, text=True, timeout=20)
    assert r.stdout == "downstream duration timeout\n504"
    assert 0.4 < time.monotonic() - t0 < 1.8
    l = logs(p2, 1)[0]
    assert (l["code"], l["details"], l["grpc"]) == (504, "max_duration_timeout", None)
