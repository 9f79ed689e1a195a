"""Admin endpoints Envoy has and operators/istioctl use (admin_ops.c), mutations via GET,
/stats?type=, /config_dump?name_regex=, and the listener/cluster manager stats of a static
configuration. xDS subscription stats (version, update_time, init_fetch_timeout) are covered
by tests/unit/test_pstats.c and test_xds_client.c."""
import json
import os
import time

import pytest

from proxyfix import bootstrap, cluster, endpoint, listener, proxy_factory, simple_routes  # noqa: F401


@pytest.fixture
def p(proxy_factory):  # noqa: F811
    bs = bootstrap([listener(simple_routes(), name="main")],
                   [cluster("backend", [endpoint(1)]), cluster("other", [endpoint(2)])])
    return proxy_factory(bs)


def test_memory_shape(p):
    status, hdrs, body = p.admin("/memory")
    assert status == 200
    doc = json.loads(body)
    assert list(doc) == ["allocated", "heap_size", "pageheap_unmapped", "pageheap_free",
                         "total_thread_cache", "total_physical_bytes"]
    assert all(isinstance(v, str) and v.isdigit() for v in doc.values()), doc
    assert int(doc["total_physical_bytes"]) > 0


def test_certs_runtime_hot_restart(p):
    status, _, body = p.admin("/certs")
    assert status == 200 and json.loads(body) == {"certificates": []}
    status, _, body = p.admin("/runtime")
    assert status == 200 and json.loads(body) == {"entries": {}, "layers": []}
    assert p.admin("/hot_restart_version")[:3:2] == (200, b"disabled")


def test_init_dump_initialized(p):
    status, hdrs, body = p.admin("/init_dump")
    assert status == 200 and json.loads(body) == {}
    assert json.loads(p.admin("/init_dump?mask=listener")[2]) == {}


def test_recent_lookups_disabled(p):
    status, _, body = p.admin("/stats/recentlookups")
    assert status == 200
    assert body == (b"Lookup tracking is not enabled. Use /stats/recentlookups/enable to "
                    b"enable.\n\ntotal: 0\n")


def test_healthcheck_fail_ok(p):
    assert p.admin("/healthcheck/fail")[0] == 405  # GET: refused, no effect
    assert p.admin("/ready")[0] == 200
    status, _, body = p.admin("/healthcheck/fail", method="POST")
    assert (status, body) == (200, b"OK\n")
    assert p.admin("/ready")[:3:2] == (503, b"DRAINING\n")
    assert json.loads(p.admin("/server_info")[2])["state"] == "DRAINING"
    st = p.stats()
    # server.state follows /ready (Envoy's serverState: DRAINING while health checks fail),
    # which pilot-agent's readiness reads
    assert (st["server.live"], st["server.state"]) == (0, 1)
    assert p.admin("/healthcheck/ok", method="POST")[:3:2] == (200, b"OK\n")
    assert p.admin("/ready")[:3:2] == (200, b"LIVE\n")
    st = p.stats()
    assert (st["server.live"], st["server.state"]) == (1, 0)


def test_memory_gauges_follow_the_allocator(p):
    """server.memory_allocated and _heap_size are the allocator's figures /memory shows."""
    if int(json.loads(p.admin("/memory")[2])["allocated"]) == 0:
        pytest.skip("the allocator reports no figures here (a sanitizer's malloc)")
    deadline = time.monotonic() + 5
    while p.stats().get("server.memory_allocated", 0) == 0:
        assert time.monotonic() < deadline, "server.memory_allocated stays 0"
        time.sleep(0.2)
    st = p.stats()
    mem = json.loads(p.admin("/memory")[2])
    assert st["server.memory_heap_size"] >= st["server.memory_allocated"] > 0
    assert abs(st["server.memory_allocated"] - int(mem["allocated"])) < 4 * 1024 * 1024


def test_reopen_logs(p):
    assert p.admin("/reopen_logs")[0] == 405
    assert p.admin("/reopen_logs", method="POST")[:3:2] == (200, b"OK\n")
    assert p.alive()


def test_mutations_need_post(p):
    status, _, body = p.admin("/logging?level=debug")
    assert (status, body) == (405, b"Method GET not allowed, POST required.")
    status, _, body = p.admin("/logging", method="POST")
    assert status == 200 and b"debug" not in body.split(b"\n")[1], body
    for path in ("/quitquitquit", "/reset_counters", "/drain_listeners"):
        assert p.admin(path)[0] == 405, path
    assert p.alive() and p.admin("/ready")[0] == 200


def test_help_lists_new_endpoints(p):
    body = p.admin("/help")[2].decode()
    for path in ("/memory", "/certs", "/runtime", "/init_dump", "/hot_restart_version",
                 "/stats/recentlookups", "POST /healthcheck/fail", "POST /healthcheck/ok",
                 "POST /reopen_logs", "POST /logging"):
        assert path + ":" in body, path


def test_stats_type(p):
    text = p.admin("/stats?type=Counters")[2].decode()
    assert "cluster_manager.cluster_added: 2" in text
    assert "server.live" not in text and "No recorded values" not in text
    gauges = json.loads(p.admin("/stats?type=Gauges&format=json")[2])["stats"]
    names = {s["name"] for s in gauges}
    assert "server.live" in names and "cluster_manager.cluster_added" not in names
    hist = p.admin("/stats?type=Histograms")[2].decode()
    assert hist and all("P0(" in l or "No recorded values" in l for l in hist.splitlines())
    assert p.admin("/stats?type=TextReadouts")[:3:2] == (200, b"")
    assert p.admin("/stats?type=bogus")[:3:2] == (400, b"invalid &type= param")


def test_config_dump_name_regex(p):
    doc = json.loads(p.admin("/config_dump?name_regex=back.*")[2])
    clusters = [c for c in doc["configs"] if c["@type"].endswith("ClustersConfigDump")][0]
    assert [c["cluster"]["name"] for c in clusters["static_clusters"]] == ["backend"]
    assert any(c["@type"].endswith("BootstrapConfigDump") for c in doc["configs"])
    listeners = [c for c in doc["configs"] if c["@type"].endswith("ListenersConfigDump")]
    assert not listeners or "static_listeners" not in listeners[0]
    doc = json.loads(p.admin("/config_dump?resource=static_clusters&name_regex=oth.*")[2])
    assert [c["cluster"]["name"] for c in doc["configs"]] == ["other"]
    doc = json.loads(p.admin("/config_dump?resource=static_clusters&mask=cluster.connect_timeout"
                             "&name_regex=other")[2])
    assert len(doc["configs"]) == 1 and "name" not in doc["configs"][0]["cluster"]
    doc = json.loads(p.admin("/config_dump?name_regex=back")[2])  # full match: none
    clusters = [c for c in doc["configs"] if c["@type"].endswith("ClustersConfigDump")][0]
    assert "static_clusters" not in clusters
    status, _, body = p.admin("/config_dump?name_regex=(")
    assert status == 400 and body.startswith(b"Error while parsing name_regex from (")


def test_manager_stats_static(p):
    st = p.stats()
    assert st["cluster_manager.cluster_added"] == 2
    assert st["listener_manager.listener_added"] == 1
    assert st["listener_manager.listener_create_success"] == 1  # one worker
    for name in ("cluster_manager.cluster_modified", "cluster_manager.cluster_removed",
                 "cluster_manager.warming_clusters", "listener_manager.listener_modified",
                 "listener_manager.listener_removed", "listener_manager.listener_create_failure",
                 "listener_manager.total_listeners_warming",
                 "listener_manager.total_listeners_draining"):
        assert st[name] == 0, name


def test_logging_errors_as_envoy(p):
    """One parameter per call; an error gives Envoy's usage text and changes nothing."""
    before = p.admin("/logging", method="POST")[2]
    for q in ("http=debug&router=info", "level=debug&x=1"):
        status, _, body = p.admin("/logging?" + q, method="POST")
        assert status == 404, (q, body)
        assert body.startswith(b"error: invalid number of parameters\n\nusage: /logging?"), body
    status, _, body = p.admin("/logging?level=bogus", method="POST")
    assert status == 404 and body.startswith(b"error: unknown logger level\n\n"), body
    assert b"levels: trace debug info warning error critical off \n" in body
    assert b"active loggers:" in body
    assert p.admin("/logging", method="POST")[2] == before  # nothing changed


def _raw_admin(p, data):
    """Sends raw bytes to the admin port; returns everything until the admin closes."""
    import socket
    with socket.create_connection(("127.0.0.1", p.admin_port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


def test_unreadable_requests_answered_then_closed(p):
    """A malformed request gets the codec's status and details with the admin's headers; a
    request body beyond 64 KiB gets 413; every answer closes its connection."""
    out = _raw_admin(p, b"GET /ready HTTP/1.1\r\nHost : x\r\n\r\n")
    head, _, body = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n"), out
    assert b"content-type: text/plain; charset=UTF-8\r\n" in head + b"\r\n"
    assert b"x-content-type-options: nosniff" in head and b"connection: close" in head
    assert body == b"http1.codec_error\n"
    big = b"x" * (64 * 1024 + 1)
    out = _raw_admin(p, b"POST /logging HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(big), big))
    assert out.startswith(b"HTTP/1.1 413 Payload Too Large\r\n"), out[:200]
    assert out.endswith(b"\r\n\r\nrequest body too large\n")
    # a body within the limit is read and the request answered as usual
    status, _, body = p.admin("/ready", method="POST", body=b"y" * 1000)
    assert (status, body) == (200, b"LIVE\n")
