"""Regressions found by trying weft-proxy as a new user would (each failed before its fix):
large request trailers, header mutations that could inject lines, an upstream failing after
the response started, an unsolicited 101, stats_config checks, /stats?format=text."""
import json
import socket
import subprocess
import threading

import pytest

from procs import backend_app, start_app, stop_process
from proxyfix import (ISTIO_JSON_FORMAT, access_log, bootstrap, cluster, listener, proxy_factory,
                      proxy_path, route, route_config, simple_routes, vhost, write_bootstrap)

TIMEOUT = 10


@pytest.fixture
def app(backend_app):
    return backend_app


def _read_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def _json_log(proxy, n):
    return [json.loads(l) for l in proxy.access_log_lines(n)]


def test_large_request_trailers(app, proxy_factory):
    """Trailers larger than one read buffer are read (the buffer grows to the header limit);
    over max_request_headers_kb they get 431 and a close, never a stalled connection."""
    p = proxy_factory(bootstrap([listener(simple_routes())], [cluster("backend", [app])]))
    head = (b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n5\r\nhello\r\n0\r\n")
    for size, want in ((20000, b"HTTP/1.1 200 "), (70000, b"HTTP/1.1 431 ")):
        s = p.connect()
        s.settimeout(TIMEOUT)
        s.sendall(head + b"X-Trailer: " + b"a" * size + b"\r\n\r\n")
        data = _read_all(s)
        s.close()
        assert data.startswith(want), (size, data[:200])
    assert p.request("GET", "/healthz")[0] == 200


@pytest.mark.parametrize("where,header", [
    ("value", {"key": "x-a", "value": "v\r\nInjected: yes"}),
    ("key", {"key": "x-b\r\nEvil", "value": "1"}),
    ("key", {"key": "bad name", "value": "1"}),
])
def test_header_mutation_cannot_inject_lines(tmp_path, where, header):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend")])])
    rc["virtual_hosts"][0]["routes"][0]["request_headers_to_add"] = [{"header": header}]
    bs = bootstrap([listener(rc, port=1)], [cluster("backend", [2])], admin_port=3)
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1, r.stdout
    assert ("virtual_hosts[0].routes[0].request_headers_to_add[0].header.%s" % where) in r.stderr


def _fake_upstream(answer):
    """A one-shot upstream: reads a request head, sends `answer`, closes."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(TIMEOUT)

    def serve():
        try:
            while True:
                c, _ = srv.accept()
                c.settimeout(TIMEOUT)
                buf = b""
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                c.sendall(answer)
                c.close()
        except OSError:
            pass
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv


def _logged_proxy(proxy_factory, port):
    return proxy_factory(bootstrap(
        [listener(simple_routes(), access_logs=[access_log(json_format=ISTIO_JSON_FORMAT)])],
        [cluster("backend", [port])]))


@pytest.mark.parametrize("answer,flag,details", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello", "UC",
     "upstream_reset_after_response_started{connection_termination}"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n", "UPE",
     "upstream_reset_after_response_started{protocol_error}"),
])
def test_upstream_failure_after_response_started(proxy_factory, answer, flag, details):
    """The client sees a cut response; the log blames the upstream (UC/UPE), not the client."""
    srv = _fake_upstream(answer)
    try:
        p = _logged_proxy(proxy_factory, srv.getsockname()[1])
        s = p.connect()
        s.settimeout(TIMEOUT)
        s.sendall(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        data = _read_all(s)
        s.close()
        assert data.startswith(b"HTTP/1.1 200 "), data
        e = _json_log(p, 1)[0]
        assert e["response_code"] == 200
        assert e["response_flags"] == flag, e
        assert e["response_code_details"] == details, e
    finally:
        srv.close()


def test_unsolicited_101_is_a_protocol_error(proxy_factory):
    srv = _fake_upstream(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\n"
                         b"Connection: upgrade\r\n\r\nraw bytes")
    try:
        p = _logged_proxy(proxy_factory, srv.getsockname()[1])
        status, _, body = p.request("GET", "/x")
        assert status == 502
        assert body.startswith(b"upstream connect error or disconnect/reset before headers. "
                               b"reset reason: protocol error")
        e = _json_log(p, 1)[0]
        assert e["response_flags"] == "UPE"
        assert e["response_code_details"] == \
            "upstream_reset_before_response_started{protocol_error}"
    finally:
        srv.close()


@pytest.mark.parametrize("stats_config,message", [
    ({"stats_matcher": {"inclusion_list": {"patterns": []}}},
     "stats_config.stats_matcher.inclusion_list.patterns: value must contain at least 1 item(s)"),
    ({"stats_tags": [{"tag_name": "x", "regex": "(("}]}, "stats_config"),
])
def test_stats_config_is_checked_not_ignored(tmp_path, stats_config, message):
    bs = bootstrap([listener(simple_routes(), port=1)], [cluster("backend", [2])], admin_port=3)
    bs["stats_config"] = stats_config
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1
    assert message in r.stderr, r.stderr


def test_stats_format_text(app, proxy_factory):
    p = proxy_factory(bootstrap([listener(simple_routes())], [cluster("backend", [app])]))
    status, _, body = p.admin("/stats?format=text")
    assert status == 200
    assert b"server.live: 1\n" in body


def test_absolute_form_target_routes_on_its_authority(app, proxy_factory):
    """HTTP_PROXY-style requests: routed by the URI's authority, forwarded in origin-form
    with that authority as Host (RFC 9112 §3.2.2, as Envoy)."""
    rc = route_config([vhost("catalog", ["catalog"], [route(prefix="/", cluster="backend")])])
    p = proxy_factory(bootstrap([listener(rc)], [cluster("backend", [app])]))
    s = p.connect()
    s.settimeout(TIMEOUT)
    s.sendall(b"GET http://catalog/echo?x=1 HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n")
    data = _read_all(s)
    s.close()
    assert data.startswith(b"HTTP/1.1 200 "), data[:300]
    echo = json.loads(data.split(b"\r\n\r\n", 1)[1])
    assert echo["path"] == "/echo?x=1"
    assert ["Host", "catalog"] in echo["headers"], echo["headers"]
    for bad in (b"GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n",
                b"GET status/200 HTTP/1.1\r\nHost: a\r\n\r\n"):
        s = p.connect()
        s.settimeout(TIMEOUT)
        s.sendall(bad)
        data = _read_all(s)
        s.close()
        assert data.startswith(b"HTTP/1.1 400 "), (bad, data[:200])


def test_admin_answers_malformed_requests(app, proxy_factory):
    """The admin port answers a request it cannot parse with 400 (then closes) and keeps
    serving."""
    p = proxy_factory(bootstrap([listener(simple_routes())], [cluster("backend", [app])]))
    for raw in (b"GARBAGE\r\n\r\n", b"GET /stats HTTP/1.1\nHost: a\n\n",
                b"POST /logging HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"):
        s = socket.create_connection(("127.0.0.1", p.admin_port), timeout=TIMEOUT)
        s.sendall(raw)
        data = _read_all(s)
        s.close()
        assert data.startswith(b"HTTP/1.1 400 "), (raw, data[:200])
    assert p.admin("/ready")[0] == 200
