"""GET /failed_requests on weft-proxy's admin port (stream_info/failed_ring.h,
server/admin/failed_requests.c): the workers' bounded rings of recent failed requests,
newest first, with flags, details, route, cluster and upstream host; no query string; 200s
absent; ?limit=N; the ring is fixed size."""
import json
import time

import pytest

from procs import free_port
from proxyfix import (bootstrap, cluster, http_request, listener, proxy_factory,  # noqa: F401
                      route, route_config, vhost)


def _bs():
    dead = free_port()  # nothing listens there: 503 UF
    rc = route_config([vhost("all", ["*"], [
        route(prefix="/dead", cluster="deadend", name="to-dead"),
        route(prefix="/ok", direct=(200, "fine"), name="ok-route"),
    ])])
    return bootstrap([listener(rc, name="main")], [cluster("deadend", [dead])])


def _failed(p, query=""):
    status, hdrs, body = p.admin("/failed_requests" + query)
    assert status == 200, body
    assert hdrs["content-type"].startswith("application/json")
    doc = json.loads(body)
    assert list(doc) == ["failed_requests"]
    return doc["failed_requests"]


@pytest.fixture
def p(proxy_factory):  # noqa: F811
    return proxy_factory(_bs())


def test_failures_newest_first_without_query(p):
    assert _failed(p) == []
    st, _, _ = p.request("GET", "/dead/a?token=hunter2", headers={"x-request-id": "rid-uf"})
    assert st == 503
    st, _, _ = p.request("GET", "/ok?secret=1")
    assert st == 200
    st, _, _ = p.request("POST", "/missing?password=x", headers={"x-request-id": "rid-nr"},
                         body=b"body-must-not-show")
    assert st == 404
    got = _failed(p)
    assert len(got) == 2, got
    nr, uf = got
    assert nr["method"] == "POST" and nr["path"] == "/missing"
    assert nr["response_code"] == 404 and nr["response_flags"] == "NR"
    assert nr["response_code_details"] == "route_not_found"
    assert nr["route_name"] is None and nr["upstream_cluster"] is None
    assert nr["x_request_id"] == "rid-nr"
    assert uf["path"] == "/dead/a" and uf["path_truncated"] is False
    assert uf["response_code"] == 503 and "UF" in uf["response_flags"].split(",")
    assert uf["response_code_details"].startswith("upstream_reset_before_response_started")
    assert uf["route_name"] == "to-dead" and uf["upstream_cluster"] == "deadend"
    assert uf["upstream_host"].startswith("127.0.0.1:")
    assert uf["authority"] == f"127.0.0.1:{p.port}"
    assert uf["downstream_remote_address"].startswith("127.0.0.1:")
    assert uf["x_request_id"] == "rid-uf"
    assert uf["start_time"].endswith("Z") and len(uf["start_time"]) == 24
    assert isinstance(uf["duration"], int)
    text = json.dumps(got)
    for secret in ("hunter2", "password", "secret", "body-must-not-show", "/ok"):
        assert secret not in text
    # ?limit=N keeps the newest N; a bad limit is refused
    one = _failed(p, "?limit=1")
    assert [e["x_request_id"] for e in one] == ["rid-nr"]
    assert _failed(p, "?limit=0") == []
    assert p.admin("/failed_requests?limit=x")[0] == 400


def test_listed_in_help(p):
    status, _, body = p.admin("/help")
    assert status == 200
    assert b"/failed_requests" in body


def test_long_path_truncated(p):
    path = "/missing/" + "a" * 600
    assert p.request("GET", path + "?q=1")[0] == 404
    e = _failed(p)[0]
    assert e["path_truncated"] is True
    assert e["path"] == path[:256]


def test_ring_is_bounded(proxy_factory):  # noqa: F811
    p = proxy_factory(_bs(), concurrency=2)
    n = 150
    for i in range(n):
        assert p.request("GET", f"/missing/{i}")[0] == 404
    got = _failed(p)
    # each worker keeps its last 64; the merge is newest first
    assert 64 <= len(got) <= 128, len(got)
    idx = [int(e["path"].rsplit("/", 1)[1]) for e in got]
    assert idx[0] == n - 1
    # newest first across workers (by the time each was recorded, at the stream's end): each
    # request was answered before the next was sent, so an entry can only be out of place when
    # its worker recorded it after the client's next requests were recorded by the other
    # worker (the worker thread descheduled between writing the answer and recording it: a
    # loaded machine, the sanitizer build). Such an entry is a few places off; a merge that
    # did not interleave the workers' rings puts entries up to 64 places off.
    rank = {v: k for k, v in enumerate(sorted(idx, reverse=True))}
    assert max(abs(rank[v] - k) for k, v in enumerate(idx)) <= 8, idx
    for w in {e["worker"] for e in got}:
        mine = [i for i, e in zip(idx, got) if e["worker"] == w]
        assert mine == sorted(mine, reverse=True) and len(mine) <= 64


def test_relayed_on_the_status_port(proxy_factory):  # noqa: F811
    """The status port (pilot-agent's 15020) relays the admin's /failed_requests: in Istio the
    admin binds loopback only, so that is where weft-pilot's web view reads them."""
    sport = free_port()
    p = proxy_factory(_bs(), args=["--status-address", "127.0.0.1:%d" % sport])
    st, _, _ = p.request("GET", "/dead/x", headers={"x-request-id": "rid-relay"})
    assert st == 503
    # the worker records the request when its stream ends, which may follow the answer
    deadline = time.monotonic() + 5
    while not _failed(p) and time.monotonic() < deadline:
        time.sleep(0.02)
    status, hdrs, body = http_request("127.0.0.1", sport, "GET", "/failed_requests?limit=5")
    assert status == 200, body
    assert hdrs["content-type"].startswith("application/json")
    relayed = json.loads(body)
    assert relayed == {"failed_requests": _failed(p, "?limit=5")}
    assert relayed["failed_requests"][0]["x_request_id"] == "rid-relay"
    assert http_request("127.0.0.1", sport, "GET", "/failed_requests?limit=x")[0] == 400
