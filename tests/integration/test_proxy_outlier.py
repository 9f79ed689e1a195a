"""weft-proxy outlier detection (passive health checking), as Envoy's
(intro/arch_overview/upstream/outlier, config.cluster.v3.OutlierDetection, src/proxy/upstream/outlier.h):
consecutive 5xx and local-origin failures eject a host, /clusters shows
health_flags::/failed_outlier_check, the outlier_detection.* stats count it, traffic goes to
the other hosts, the host comes back after base_ejection_time; max_ejection_percent (Envoy
>= 1.31 rule) and the panic threshold (healthy_panic_threshold, default 50 %).

One backend that fails on demand is a small Python server (`Flaky`): its status can be
switched from 500 to 200, so that the same host is seen coming back healthy. The others are
weft-app processes. Short times: interval 0.2 s, base_ejection_time 1-2 s.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from procs import running_apps, start_app, stop_process
from proxyfix import (bootstrap, cluster, listener, proxy_factory, route, route_config,
                      simple_routes, vhost)

assert proxy_factory  # fixture, imported for pytest


class Flaky:
    """An HTTP/1.1 keep-alive server on 127.0.0.1 answering `status` to every request."""

    def __init__(self, status=500):
        self.status = status
        self.count = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with outer.lock:
                    outer.count += 1
                    status = outer.status
                body = b"flaky %d\n" % status
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.send_header("x-weft-app", "flaky")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def requests(self):
        with self.lock:
            return self.count

    def set_status(self, status):
        with self.lock:
            self.status = status

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def apps():
    """Two weft-app backends: {"a": port, "b": port}."""
    with running_apps("a", "b") as ports:
        yield ports


@pytest.fixture
def flaky():
    f = Flaky()
    yield f
    f.close()


def od(**kw):
    """outlier_detection with the test's short times."""
    d = {"interval": "0.2s", "base_ejection_time": "1s"}
    d.update(kw)
    return d


def od_stats(proxy, cluster_name="backend"):
    pre = "cluster.%s.outlier_detection." % cluster_name
    return {k[len(pre):]: v for k, v in proxy.stats().items() if k.startswith(pre)}


def health_flags(proxy, port, cluster_name="backend"):
    _, _, text = proxy.admin("/clusters")
    key = "%s::127.0.0.1:%d::health_flags::" % (cluster_name, port)
    for line in text.decode().splitlines():
        if line.startswith(key):
            return line[len(key):]
    raise AssertionError("no %s in /clusters:\n%s" % (key, text.decode()))


def json_health(proxy, port):
    _, _, body = proxy.admin("/clusters?format=json")
    for c in json.loads(body)["cluster_statuses"]:
        for h in c.get("host_statuses", []):
            if h["address"]["socket_address"]["port_value"] == port:
                return h["health_status"]
    raise AssertionError("no host %d" % port)


def wait_for(pred, timeout=8, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("condition not met in %.1fs" % timeout)


def request_until(proxy, flaky, n, limit=30):
    """Requests until the flaky backend has seen n requests; returns the statuses."""
    statuses = []
    while flaky.requests() < n:
        assert len(statuses) < limit, statuses
        statuses.append(proxy.request("GET", "/healthz")[0])
    return statuses


def test_consecutive_5xx_ejects_then_returns(apps, flaky, proxy_factory):
    bs = bootstrap([listener(simple_routes())],
                   [cluster("backend", [apps["a"], apps["b"], flaky.port],
                            outlier_detection=od(consecutive_5xx=3, base_ejection_time="2s",
                                                 max_ejection_percent=50))])
    proxy = proxy_factory(bs)
    statuses = request_until(proxy, flaky, 3)
    assert statuses.count(500) == 3 and statuses.count(200) == len(statuses) - 3, statuses
    t_ejected = time.monotonic()
    st = od_stats(proxy)
    assert st["ejections_active"] == 1, st
    assert st["ejections_enforced_consecutive_5xx"] == 1
    assert st["ejections_detected_consecutive_5xx"] == 1
    assert st["ejections_enforced_total"] == 1
    assert st["ejections_total"] == 1
    assert st["ejections_overflow"] == 0
    assert st["ejections_detected_consecutive_gateway_failure"] == 0
    assert proxy.stats()["cluster.backend.membership_healthy"] == 2
    assert health_flags(proxy, flaky.port) == "/failed_outlier_check"
    assert health_flags(proxy, apps["a"]) == "healthy"
    assert json_health(proxy, flaky.port)["failed_outlier_check"] is True
    assert "failed_outlier_check" not in json_health(proxy, apps["a"])
    _, _, text = proxy.admin("/clusters")
    assert "backend::outlier::success_rate_average::-1" in text.decode().splitlines()

    # while ejected, traffic goes to the two others only
    before = flaky.requests()
    names = [proxy.request("GET", "/healthz")[1].get("x-weft-app") for _ in range(10)]
    if time.monotonic() - t_ejected < 1.8:  # still inside base_ejection_time
        assert flaky.requests() == before
        assert sorted(set(names)) == ["a", "b"], names

    # back after base_ejection_time (checked on the 0.2 s interval)
    flaky.set_status(200)
    wait_for(lambda: od_stats(proxy)["ejections_active"] == 0)
    assert time.monotonic() - t_ejected >= 1.9
    assert health_flags(proxy, flaky.port) == "healthy"
    assert proxy.stats()["cluster.backend.membership_healthy"] == 3
    before = flaky.requests()
    for _ in range(6):
        assert proxy.request("GET", "/healthz")[0] == 200
    assert flaky.requests() == before + 2  # round robin over three hosts again


def test_reset_counts_as_5xx_and_gateway_failure(apps, proxy_factory):
    """Local-origin failures (here the backend closes without answering: 503 UC) count as
    503 without split_external_local_origin_errors: 5xx and gateway failure."""
    p, port = start_app("--name", "hangup", "--hangup-first", "3")
    try:
        bs = bootstrap([listener(simple_routes())],
                       [cluster("backend", [apps["a"], port],
                                outlier_detection=od(consecutive_5xx=3,
                                                     consecutive_gateway_failure=3,
                                                     max_ejection_percent=50))])
        proxy = proxy_factory(bs)
        statuses = [proxy.request("GET", "/healthz")[0] for _ in range(6)]
        assert statuses.count(503) == 3, statuses
        st = od_stats(proxy)
        assert st["ejections_detected_consecutive_gateway_failure"] == 1, st
        assert st["ejections_enforced_consecutive_gateway_failure"] == 0  # Envoy's default 0 %
        assert st["ejections_enforced_consecutive_5xx"] == 1
        assert health_flags(proxy, port) == "/failed_outlier_check"
        wait_for(lambda: health_flags(proxy, port) == "healthy")
        names = [proxy.request("GET", "/healthz")[1].get("x-weft-app") for _ in range(4)]
        assert names.count("hangup") == 2, names  # serving again
    finally:
        stop_process(p)


def test_max_ejection_percent_below_one_host(apps, proxy_factory):
    """Envoy >= 1.31: 100 * (ejected + 1) / hosts must stay <= max_ejection_percent, so the
    default 10 % ejects nothing in a 2-host cluster unless always_eject_one_host."""
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend")])])
    bs = bootstrap([listener(rc)],
                   [cluster("backend", [apps["a"], apps["b"]],
                            outlier_detection=od(consecutive_5xx=2))])
    proxy = proxy_factory(bs)
    for _ in range(4):
        assert proxy.request("GET", "/status/500")[0] == 500
    st = od_stats(proxy)
    assert (st["ejections_detected_consecutive_5xx"], st["ejections_overflow"],
            st["ejections_active"], st["ejections_total"]) == (2, 2, 0, 0), st

    bs = bootstrap([listener(rc)],
                   [cluster("backend", [apps["a"], apps["b"]],
                            outlier_detection=od(consecutive_5xx=2,
                                                 always_eject_one_host=True))])
    proxy = proxy_factory(bs)
    for _ in range(6):
        assert proxy.request("GET", "/status/500")[0] == 500
    st = od_stats(proxy)
    assert st["ejections_active"] == 1, st
    assert st["ejections_overflow"] >= 1, st


def test_all_ejected_panic_then_uh(apps, proxy_factory):
    """Every host ejected: with Envoy's default healthy_panic_threshold (50 %) the cluster is
    in panic and all hosts still get traffic; with 0 (Istio's default) the answer is
    503 UH no_healthy_upstream."""
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend")])])
    spec = od(consecutive_5xx=2, max_ejection_percent=100, base_ejection_time="30s")
    bs = bootstrap([listener(rc)],
                   [cluster("backend", [apps["a"], apps["b"]], outlier_detection=spec)])
    proxy = proxy_factory(bs)
    for _ in range(4):
        proxy.request("GET", "/status/500")
    assert od_stats(proxy)["ejections_active"] == 2
    assert proxy.stats()["cluster.backend.membership_healthy"] == 0
    status, headers, _ = proxy.request("GET", "/status/200")
    assert status == 200 and headers.get("x-weft-app") in ("a", "b")
    assert proxy.stats()["cluster.backend.lb_healthy_panic"] >= 1

    bs = bootstrap([listener(rc)],
                   [cluster("backend", [apps["a"], apps["b"]], outlier_detection=spec,
                            common_lb_config={"healthy_panic_threshold": {"value": 0}})])
    proxy = proxy_factory(bs)
    for _ in range(4):
        proxy.request("GET", "/status/500")
    status, _, body = proxy.request("GET", "/status/200")
    assert (status, body) == (503, b"no healthy upstream")
    st = proxy.stats()
    assert st["cluster.backend.upstream_cx_none_healthy"] == 1
    assert st["cluster.backend.lb_healthy_panic"] == 0


def test_one_of_two_ejected_is_not_panic(apps, flaky, proxy_factory):
    """1 healthy host of 2 is 50 %: not below the 50 % threshold, so the ejected host gets
    no traffic."""
    bs = bootstrap([listener(simple_routes())],
                   [cluster("backend", [apps["a"], flaky.port],
                            outlier_detection=od(consecutive_5xx=2, max_ejection_percent=50,
                                                 base_ejection_time="30s"))])
    proxy = proxy_factory(bs)
    request_until(proxy, flaky, 2)
    assert od_stats(proxy)["ejections_active"] == 1
    before = flaky.requests()
    for _ in range(5):
        assert proxy.request("GET", "/healthz")[0] == 200
    assert flaky.requests() == before
    assert proxy.stats()["cluster.backend.lb_healthy_panic"] == 0


def test_bootstrap_rejects_success_rate(apps, tmp_path):
    """Unsupported detectors are rejected naming the JSON path (weft-proxy --mode validate)."""
    import subprocess

    from proxyfix import proxy_path, write_bootstrap
    bs = bootstrap([listener(simple_routes(), port=1)],
                   [cluster("backend", [apps["a"]],
                            outlier_detection={"success_rate_stdev_factor": 1900})],
                   admin_port=2)
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "-c", path, "--mode", "validate"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode != 0
    assert ("static_resources.clusters[0].outlier_detection.success_rate_stdev_factor: "
            "unsupported field") in r.stderr, r.stderr
