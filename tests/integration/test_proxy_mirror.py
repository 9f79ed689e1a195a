"""Request mirroring (request_mirror_policies): the shadow gets a copy with "-shadow" added to
the Host, fire and forget; its failures and slowness never touch the original request."""
import time

import pytest

from procs import free_port
from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory, route,
                      route_config, vhost)
from scripted_upstream import upstreams  # noqa: F401 (fixture)


def _proxy(proxy_factory, main_port, mirror_port, mirror=None, listener_extra=None, retry=None):
    policy = {"cluster": "mirror"}
    policy.update(mirror or {})
    rt = route(prefix="/", cluster="backend", retry_policy=retry)
    rt["route"]["request_mirror_policies"] = [policy]
    lst = listener(route_config([vhost("all", ["*"], [rt])]), access_logs=[access_log()])
    lst.update(listener_extra or {})
    bs = bootstrap(listeners=[lst], clusters=[cluster("backend", [main_port]),
                                             cluster("mirror", [mirror_port])])
    return proxy_factory(bs)


def _wait(cond, timeout=5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_get_is_mirrored_with_shadow_host(proxy_factory, upstreams):
    main, shadow = upstreams(["200"]), upstreams(["200"])
    p = _proxy(proxy_factory, main.port, shadow.port)
    status, _, body = p.request("GET", "/items?x=1", headers={"host": "catalog:8080"})
    assert (status, body) == (200, b"received=0")
    assert _wait(lambda: shadow.count() == 1)
    method, target, headers, _ = shadow.requests[0]
    assert (method, target) == ("GET", "/items?x=1")
    assert headers["host"] == "catalog-shadow:8080"
    assert main.requests[0][2]["host"] == "catalog:8080"
    assert _wait(lambda: p.stats().get("cluster.mirror.upstream_rq_200") == 1)


def test_post_body_is_mirrored(proxy_factory, upstreams):
    main, shadow = upstreams(["200"]), upstreams(["200"])
    p = _proxy(proxy_factory, main.port, shadow.port)
    body = b"x" * 100000
    assert p.request("POST", "/orders", body=body, headers={"host": "orders"})[0] == 200
    assert _wait(lambda: shadow.count() == 1 and shadow.requests[0][3] is not None)
    assert shadow.requests[0][3] == body
    assert shadow.requests[0][2]["host"] == "orders-shadow"


def test_chunked_body_is_mirrored(proxy_factory, upstreams):
    main, shadow = upstreams(["200"]), upstreams(["200"])
    p = _proxy(proxy_factory, main.port, shadow.port)
    s = p.connect()
    s.sendall(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    s.close()
    assert _wait(lambda: shadow.count() == 1 and shadow.requests[0][3] is not None)
    assert shadow.requests[0][3] == b"hello world"


def test_failing_and_slow_mirrors_do_not_touch_the_request(proxy_factory, upstreams):
    main = upstreams(["200"])
    p = _proxy(proxy_factory, main.port, free_port())  # nothing listens on the mirror
    assert p.request("GET", "/")[0] == 200
    assert _wait(lambda: p.stats().get("cluster.mirror.upstream_cx_connect_fail") == 1)
    slow = upstreams([("delay", 2000, 200)])
    p2 = _proxy(proxy_factory, main.port, slow.port)
    t0 = time.monotonic()
    assert p2.request("GET", "/")[0] == 200
    assert time.monotonic() - t0 < 1.0


def test_runtime_fraction(proxy_factory, upstreams, monkeypatch):
    monkeypatch.setenv("WEFT_PROXY_TEST_SEED", "7")
    main, shadow = upstreams(["200"]), upstreams(["200"])
    p = _proxy(proxy_factory, main.port, shadow.port,
               {"runtime_fraction": {"default_value": {"numerator": 50}}})
    for _ in range(200):
        assert p.request("GET", "/")[0] == 200
    time.sleep(0.3)
    assert 60 <= shadow.count() <= 140
    none = upstreams(["200"])
    p0 = _proxy(proxy_factory, main.port, none.port,
                {"runtime_fraction": {"default_value": {"numerator": 0}}})
    for _ in range(20):
        p0.request("GET", "/")
    time.sleep(0.2)
    assert none.count() == 0


def test_disable_shadow_host_suffix(proxy_factory, upstreams):
    main, shadow = upstreams(["200"]), upstreams(["200"])
    p = _proxy(proxy_factory, main.port, shadow.port, {"disable_shadow_host_suffix_append": True})
    p.request("GET", "/", headers={"host": "catalog"})
    assert _wait(lambda: shadow.count() == 1)
    assert shadow.requests[0][2]["host"] == "catalog"


def test_body_over_the_buffer_cancels_the_shadow(proxy_factory, upstreams):
    main, shadow = upstreams(["200"]), upstreams(["200"])
    p = _proxy(proxy_factory, main.port, shadow.port,
               listener_extra={"per_connection_buffer_limit_bytes": 65536})
    status, _, body = p.request("POST", "/", body=b"y" * 300000)
    assert (status, body) == (200, b"received=300000")
    time.sleep(0.3)
    assert shadow.count() == 0
    assert p.stats()["cluster.backend.retry_or_shadow_abandoned"] == 1


def test_unknown_shadow_cluster_is_skipped(proxy_factory, upstreams):
    main = upstreams(["200"])
    rt = route(prefix="/", cluster="backend")
    rt["route"]["request_mirror_policies"] = [{"cluster": "nosuch"}]
    bs = bootstrap(listeners=[listener(route_config([vhost("all", ["*"], [rt])]))],
                   clusters=[cluster("backend", [main.port])])
    p = proxy_factory(bs)
    assert p.request("GET", "/")[0] == 200


def test_head_request_shadow_completes(proxy_factory, upstreams):
    """A HEAD answer has no body: the shadow ends with the head (no timeout, no leak)."""
    main = upstreams(["200"])
    import socket
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 21\r\n\r\n")  # HEAD: no body
    threading.Thread(target=serve, daemon=True).start()
    try:
        p = _proxy(proxy_factory, main.port, srv.getsockname()[1])
        assert p.request("HEAD", "/")[0] == 200
        assert _wait(lambda: p.stats().get("cluster.mirror.upstream_rq_completed") == 1)
        assert p.stats().get("cluster.mirror.upstream_cx_active") == 0
    finally:
        srv.close()


def test_body_larger_than_one_mib_is_mirrored_whole(proxy_factory, upstreams):
    """With request_body_buffer_limit above 1 MiB the shadow gets the whole body (it was cut
    at 68 buffer blocks, about 1.1 MB, while its Content-Length said more)."""
    main, shadow = upstreams(["200"]), upstreams(["200"])
    rt_extra = {"request_body_buffer_limit": 4 << 20}
    rt = route(prefix="/", cluster="backend")
    rt.update(rt_extra)
    rt["route"]["request_mirror_policies"] = [{"cluster": "mirror"}]
    bs = bootstrap(listeners=[listener(route_config([vhost("all", ["*"], [rt])]))],
                   clusters=[cluster("backend", [main.port]), cluster("mirror", [shadow.port])])
    p = proxy_factory(bs)
    body = bytes(range(256)) * (2 << 20 >> 8)  # 2 MiB
    assert p.request("POST", "/", body=body, timeout=20)[0] == 200
    assert _wait(lambda: shadow.count() == 1 and shadow.requests[0][3] is not None, 10)
    assert shadow.requests[0][3] == body
