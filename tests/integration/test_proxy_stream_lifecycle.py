"""weft-proxy: when a stream's timers run, when it is counted and when its connection is kept,
as Envoy's connection manager and router do it (shared/reference/envoy-istio-behaviour.md
§2 and §4.4; HCM docs for request_timeout; Envoy's ConnectionManagerImpl::chargeStats and
Router::Filter::chargeUpstreamCode for the counters).

- The route timeout runs until the response is complete: a response that started and then
  stalls is cut (the client's connection is reset), logged `200 UT response_timeout`.
- request_timeout starts with the request's first byte, so a client that sends its head
  slowly gets 408 `request_overall_timeout` at request_timeout, not at stream_idle_timeout.
- A local reply to a request without a body keeps the connection (pipelined requests after
  it are answered); a local reply to a request whose body was not read closes it.
- A request is counted (downstream_rq_total) when it begins, a response
  (downstream_rq_completed, downstream_rq_<N>xx; upstream_rq_completed with upstream_rq_<N>)
  when its head is sent, so a request refused by the codec and a response cut short are
  counted like the others.
- Request trailers do not hide the generated x-request-id from the access log.
- Access logs see the request as the router sends it (rewritten path and Host, added fields).
- An upstream that closes with a request on the connection is a remote destroy
  (upstream_cx_destroy_remote_with_active_rq), as Envoy's pool counts a RemoteClose.
"""
import re
import socket
import time

from proxyfix import (ISTIO_TEXT_FORMAT, access_log, bootstrap, cluster,
                      listener, proxy_factory, route, route_config, vhost)
from scripted_upstream import upstreams

assert proxy_factory and upstreams  # fixtures, imported for pytest

PREFIX = "http.ingress_http."


def make_proxy(proxy_factory, up, timeout=None, **hcm):
    """A proxy with /missing routed to an undefined cluster and everything else to `up`."""
    rc = route_config([vhost("all", ["*"], [
        route(prefix="/missing", cluster="nowhere"),
        route(prefix="/", cluster="backend", timeout=timeout)])])
    logs = [access_log("@LOG:istio@", fmt=ISTIO_TEXT_FORMAT)]
    bs = bootstrap([listener(rc, access_logs=logs, **hcm)], [cluster("backend", [up.port])])
    return proxy_factory(bs)


def read_all(s, limit=5.0):
    """Everything until the proxy closes (a reset counts as a close) or `limit` seconds."""
    s.settimeout(limit)
    data = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            return data, True
        except socket.timeout:
            return data, False
        if not d:
            return data, True
        data += d
    return data, False


def test_route_timeout_cuts_a_response_that_started(proxy_factory, upstreams):
    # the upstream sends its head and 5 of 10 body bytes, then waits 2 s
    up = upstreams([("stall", 2000)])
    p = make_proxy(proxy_factory, up, timeout="0.4s")
    s = p.connect()
    t0 = time.monotonic()
    s.sendall(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")
    data, closed = read_all(s, limit=1.6)
    elapsed = time.monotonic() - t0
    s.close()
    assert closed, "the connection was not reset at the route timeout: %r" % data
    assert elapsed < 1.5, elapsed
    assert data.startswith(b"HTTP/1.1 200"), data
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"content-length: 10" in head.lower() and len(body) < 10, data
    line = p.istio_log(1)[0]
    assert (line["response_code"], line["response_flags"], line["response_code_details"]) == (
        "200", "UT", "response_timeout")
    st = p.stats()
    assert st["cluster.backend.upstream_rq_timeout"] == 1
    assert st[PREFIX + "rq_reset_after_downstream_response_started"] == 1
    # counted when the head went out, though the body was cut
    assert st[PREFIX + "downstream_rq_2xx"] == 1
    assert st[PREFIX + "downstream_rq_completed"] == 1
    assert st["cluster.backend.upstream_rq_200"] == 1
    assert st["cluster.backend.upstream_rq_completed"] == 1


def test_request_timeout_covers_a_slow_head(proxy_factory, upstreams):
    up = upstreams(["200"])
    p = make_proxy(proxy_factory, up, request_timeout="0.5s", stream_idle_timeout="5s")
    s = p.connect()
    t0 = time.monotonic()
    s.sendall(b"GET /ok HTTP/1.1\r\nhost: x\r\n")  # the head never ends
    data, closed = read_all(s, limit=3.0)
    elapsed = time.monotonic() - t0
    s.close()
    assert data.startswith(b"HTTP/1.1 408"), data
    assert data.endswith(b"request timeout"), data
    assert closed and elapsed < 2.5, elapsed
    assert up.count() == 0
    st = p.stats()
    assert st[PREFIX + "downstream_rq_timeout"] == 1
    assert st[PREFIX + "downstream_rq_total"] == 1
    assert st[PREFIX + "downstream_rq_4xx"] == 1


def test_local_reply_to_a_complete_request_keeps_the_connection(proxy_factory, upstreams):
    up = upstreams(["200"])
    p = make_proxy(proxy_factory, up)
    s = p.connect()
    s.sendall(b"GET /missing HTTP/1.1\r\nhost: x\r\n\r\n"
              b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n"
              b"GET /missing HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
    data, closed = read_all(s, limit=5.0)
    s.close()
    assert closed, data
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", data)
    assert statuses == [b"503", b"200", b"503"], data
    heads = [h.lower() for h in data.split(b"HTTP/1.1 ")[1:]]
    assert b"connection: close" not in heads[0], data
    assert up.count() == 1
    st = p.stats()
    assert st[PREFIX + "downstream_cx_total"] == 1
    assert st[PREFIX + "downstream_rq_total"] == 3


def test_local_reply_before_the_body_closes_the_connection(proxy_factory, upstreams):
    up = upstreams(["200"])
    p = make_proxy(proxy_factory, up)
    s = p.connect()
    s.sendall(b"POST /missing HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\nabc")
    data, closed = read_all(s, limit=5.0)
    s.close()
    assert data.startswith(b"HTTP/1.1 503"), data
    assert b"connection: close" in data.lower() and closed, data


def test_codec_error_is_counted_as_a_request(proxy_factory, upstreams):
    up = upstreams(["200"])
    p = make_proxy(proxy_factory, up)
    s = p.connect()
    s.sendall(b"GET /ok HTTP/1.1\r\nhost: x\r\nbad\x00name: 1\r\n\r\n")
    data, closed = read_all(s, limit=5.0)
    s.close()
    assert data.startswith(b"HTTP/1.1 400") and closed, data
    st = p.stats()
    assert st[PREFIX + "downstream_rq_total"] == 1
    assert st[PREFIX + "downstream_rq_4xx"] == 1
    assert st[PREFIX + "downstream_rq_completed"] == 1
    assert st[PREFIX + "downstream_rq_active"] == 0


def test_request_trailers_keep_the_generated_request_id(proxy_factory, upstreams):
    up = upstreams(["200"])
    p = make_proxy(proxy_factory, up)
    s = p.connect()
    s.sendall(b"POST /ok HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n"
              b"connection: close\r\n\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n")
    data, _ = read_all(s, limit=5.0)
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data
    sent = up.requests[0][2].get("x-request-id")
    assert sent and re.match(r"^[0-9a-f-]{36}$", sent), up.requests[0][2]
    assert p.istio_log(1)[0]["request_id"] == sent


def test_upstream_close_mid_request_is_a_remote_destroy(proxy_factory, upstreams):
    """The upstream closes with the request on the connection: 503 UC, and the connection is
    counted as Envoy's pool counts a RemoteClose with an active request (B012's stats)."""
    up = upstreams(["reset"])
    p = make_proxy(proxy_factory, up)
    status, _, _ = p.request("GET", "/x")
    assert status == 503
    assert p.istio_log(1)[0]["response_flags"] == "UC"
    st = p.wait_stat("cluster.backend.upstream_cx_destroy", 1)
    assert st["cluster.backend.upstream_cx_destroy_remote"] == 1, st
    assert st["cluster.backend.upstream_cx_destroy_remote_with_active_rq"] == 1, st
    assert st.get("cluster.backend.upstream_cx_destroy_local", 0) == 0, st
    assert st.get("cluster.backend.upstream_cx_destroy_local_with_active_rq", 0) == 0, st


def test_access_log_sees_the_request_the_router_sends(proxy_factory, upstreams):
    """Envoy's router rewrites the path and Host and adds fields in the header map the access
    log reads: %REQ()% shows the request as it went upstream (Istio's format logs the
    original path through X-ENVOY-ORIGINAL-PATH?:PATH)."""
    up = upstreams(["200"])
    rc = route_config([vhost("all", ["*"], [
        route(prefix="/rw/", cluster="backend", prefix_rewrite="/status/",
              host_rewrite="rewritten.example", req_add={"x-added": "yes"},
              req_remove=["x-drop"]),
        route(prefix="/", cluster="backend")])])
    fmt = ("%REQ(:PATH)% %REQ(:AUTHORITY)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% "
           "%REQ(X-ADDED)% %REQ(X-FORWARDED-PROTO)% %REQ(X-DROP)% %REQ(X-KEEP)%\n")
    bs = bootstrap([listener(rc, access_logs=[access_log(fmt=fmt)])],
                   [cluster("backend", [up.port])])
    p = proxy_factory(bs)
    hdrs = {"host": "svc", "x-drop": "1", "x-keep": "2"}
    assert p.request("GET", "/rw/200", headers=hdrs)[0] == 200
    assert p.request("GET", "/plain", headers=hdrs)[0] == 200
    assert up.requests[0][1] == "/status/200"
    assert p.access_log_lines(2) == [
        "/status/200 rewritten.example /rw/200 yes http - 2",
        "/plain svc /plain - http 1 2"]


def test_request_duration_of_a_local_reply_to_a_get(proxy_factory, upstreams):
    """A GET ends with its head: %REQUEST_DURATION% is 0 ms for a 503 NC as for a proxied
    request (Envoy records the last downstream byte when the head ends the stream), and
    %START_TIME(%6f)% has no made-up digits below the millisecond."""
    up = upstreams(["200"])
    rc = route_config([vhost("all", ["*"], [route(prefix="/missing", cluster="nowhere"),
                                            route(prefix="/", cluster="backend")])])
    fmt = "%RESPONSE_CODE% %REQUEST_DURATION% %START_TIME(%6f)%\n"
    bs = bootstrap([listener(rc, access_logs=[access_log(fmt=fmt)])],
                   [cluster("backend", [up.port])])
    p = proxy_factory(bs)
    assert p.request("GET", "/missing")[0] == 503
    assert p.request("GET", "/ok")[0] == 200
    lines = [l.split() for l in p.access_log_lines(2)]
    assert [(l[0], l[1]) for l in lines] == [("503", "0"), ("200", "0")], lines
    assert all(l[2].endswith("000") for l in lines), lines
