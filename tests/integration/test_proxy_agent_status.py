"""weft-proxy's status port as pilot-agent's (Istio pilot/cmd/pilot-agent/status/server.go,
reference istioctl-troubleshooting.md §6.2): the rewritten application probes
/app-health/<c>/livez|readyz|startupz from ISTIO_KUBE_APP_PROBERS, POST /quitquitquit and
/drain, and /stats/prometheus and /metrics merging the app's metrics from
ISTIO_PROMETHEUS_ANNOTATIONS. The probes run against a real weft-app, a closed port and a small
HTTP server of the test's own (redirects, app metrics)."""
import http.client
import http.server
import json
import subprocess
import threading
import time

import pytest

from procs import free_port, start_app, stop_process
from proxyfix import (bootstrap, cluster, listener, proxy_factory, proxy_path, route,
                      route_config, vhost, write_bootstrap)

assert proxy_factory  # fixture, imported for pytest


def _bs():
    rc = route_config([vhost("all", ["*"], [route(prefix="/", direct=(200, "x"))])])
    return bootstrap([listener(rc)], [cluster("unused", [free_port()])])


def status_get(port, path, method="GET", headers=None, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode()
    finally:
        c.close()


class Side(http.server.BaseHTTPRequestHandler):
    """The test's own app: redirects and metrics."""
    metrics = "# TYPE my_app_requests_total counter\nmy_app_requests_total 42\n"
    ctype = "text/plain; version=0.0.4"

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path == "/redirect-same":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:%d/fail" % port)
        elif self.path == "/redirect-away":
            self.send_response(301)
            self.send_header("Location", "http://example.invalid/x")
        elif self.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
        elif self.path == "/fail":
            self.send_response(500)
        elif self.path == "/metrics":
            body = self.metrics.encode()
            self.send_response(200)
            self.send_header("Content-Type", self.ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def side():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Side)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def app():
    proc, port = start_app()
    yield port
    stop_process(proc)


def start(proxy_factory, monkeypatch, probers=None, annotations=None):
    sport = free_port()
    monkeypatch.setenv("INSTANCE_IP", "127.0.0.1")
    if probers is not None:
        monkeypatch.setenv("ISTIO_KUBE_APP_PROBERS", json.dumps(probers))
    if annotations is not None:
        monkeypatch.setenv("ISTIO_PROMETHEUS_ANNOTATIONS", json.dumps(annotations))
    p = proxy_factory(_bs(), args=["--status-address", "127.0.0.1:%d" % sport])
    p.status_port = sport
    return p


def test_app_health_probes(proxy_factory, monkeypatch, app, side):
    closed = free_port()
    sp = side.server_address[1]
    probers = {
        "/app-health/web/livez": {"httpGet": {"path": "/healthz", "port": app}},
        "/app-health/web/readyz": {"httpGet": {"path": "status/503", "port": app,
                                               "scheme": "HTTP"}, "timeoutSeconds": 2},
        "/app-health/web/startupz": {"tcpSocket": {"port": app}},
        "/app-health/down/livez": {"tcpSocket": {"port": closed}},
        "/app-health/down/readyz": {"httpGet": {"path": "/healthz", "port": closed}},
        "/app-health/slow/livez": {"httpGet": {"path": "/delay/3000", "port": app},
                                   "timeoutSeconds": 1},
        "/app-health/redir/livez": {"httpGet": {"path": "/redirect-same", "port": sp}},
        "/app-health/redir/readyz": {"httpGet": {"path": "/redirect-away", "port": sp}},
        "/app-health/redir/startupz": {"httpGet": {"path": "/loop", "port": sp}},
        "/app-health/g/livez": {"grpc": {"port": app}},
    }
    p = start(proxy_factory, monkeypatch, probers)
    sport = p.status_port
    assert status_get(sport, "/app-health/web/livez")[0] == 200
    s, _, body = status_get(sport, "/app-health/web/readyz")
    assert s == 503  # the app's status (and body) come back
    assert status_get(sport, "/app-health/web/startupz")[0] == 200
    assert status_get(sport, "/app-health/down/livez")[0] == 500
    assert status_get(sport, "/app-health/down/readyz")[:3:2] == (500, "")
    # a redirect to the same host is followed (its 500 counts), one elsewhere is a success,
    # more than 10 fail
    assert status_get(sport, "/app-health/redir/livez")[0] == 500
    assert status_get(sport, "/app-health/redir/readyz")[0] == 200
    assert status_get(sport, "/app-health/redir/startupz")[0] == 500
    s, _, body = status_get(sport, "/app-health/g/livez")
    assert s == 500 and "grpc probes are not implemented" in body and "/app-health/g/livez" in body
    s, _, body = status_get(sport, "/app-health/nobody/livez")
    assert (s, body) == (400, "app prober config does not exists for /app-health/nobody/livez")

    # a probe that waits on the app does not block the loop: readiness answers meanwhile
    result = {}
    t = threading.Thread(target=lambda: result.update(
        slow=status_get(sport, "/app-health/slow/livez")))
    t0 = time.monotonic()
    t.start()
    time.sleep(0.2)
    assert status_get(sport, "/healthz/ready", timeout=2)[0] in (200, 503)
    assert time.monotonic() - t0 < 0.9
    t.join(10)
    assert result["slow"][0] == 500  # timeoutSeconds: 1 against a 3 s answer
    assert time.monotonic() - t0 < 2.5


def test_bad_probers_stop_the_proxy(tmp_path):
    bs = write_bootstrap(_bs(), str(tmp_path))
    for env, want in ((json.dumps({"/app-health/x/alive": {"tcpSocket": {"port": 1}}}),
                       "invalid path, must be in form of regex pattern"),
                      (json.dumps({"/app-health/x/livez": {"tcpSocket": {"port": "http"}}}),
                       "the port must be int type"),
                      (json.dumps({"/app-health/x/livez": {}}), "invalid prober type")):
        r = subprocess.run([proxy_path(), "-c", bs], capture_output=True, text=True, timeout=10,
                           env={"ISTIO_KUBE_APP_PROBERS": env})
        assert r.returncode == 2, r.stderr
        assert "ISTIO_KUBE_APP_PROBERS" in r.stderr and want in r.stderr, r.stderr
    r = subprocess.run([proxy_path(), "-c", bs, "--status-address", "127.0.0.1:15555"],
                       capture_output=True, text=True, timeout=10,
                       env={"ISTIO_PROMETHEUS_ANNOTATIONS": '{"scrape":"true","port":"15555"}'})
    assert r.returncode == 2 and "application port is the same as agent port" in r.stderr


def test_quitquitquit_and_drain(proxy_factory, monkeypatch):
    p = start(proxy_factory, monkeypatch)
    assert status_get(p.status_port, "/quitquitquit")[:3:2] == (405, "Method Not Allowed\n")
    assert status_get(p.status_port, "/drain")[0] == 405
    assert status_get(p.status_port, "/drain", method="POST")[:3:2] == (200, "OK")
    # the drain started: not ready any more, the process stays up
    deadline = time.monotonic() + 5
    while status_get(p.status_port, "/healthz/ready")[0] != 503:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert p.proc.poll() is None
    assert status_get(p.status_port, "/quitquitquit", method="POST")[:3:2] == (200, "OK")
    assert p.proc.wait(timeout=10) == 0


def _value(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def test_merged_metrics(proxy_factory, monkeypatch, side):
    sp = side.server_address[1]
    p = start(proxy_factory, monkeypatch,
              annotations={"scrape": "true", "path": "/metrics", "port": str(sp)})
    for path in ("/stats/prometheus", "/metrics"):
        s, h, body = status_get(p.status_port, path)
        assert s == 200
        assert h["content-type"].startswith("text/plain; version=0.0.4")
        assert "my_app_requests_total 42" in body  # the app's own
        assert "envoy_server_live" in body or "server_live" in body  # Envoy's
        assert body.index("istio_agent_scrapes_total") < body.index("my_app_requests_total")
    assert _value(body, "istio_agent_scrapes_total") == 2
    assert "istio_agent_scrape_failures_total" not in body

    Side.ctype = "application/openmetrics-text; version=1.0.0; charset=utf-8"
    try:
        s, h, body = status_get(p.status_port, "/stats/prometheus")
        assert h["content-type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
    finally:
        Side.ctype = "text/plain; version=0.0.4"

    side.shutdown()
    side.server_close()
    s, h, body = status_get(p.status_port, "/stats/prometheus")
    assert s == 200  # Envoy's part still answers
    assert "my_app_requests_total" not in body
    assert "server_live" in body
    assert 'istio_agent_scrape_failures_total{type="application"} 1' in body
    assert "failed scraping application metrics" in p.stderr_text()


def test_metrics_without_annotations_and_gateway_port(proxy_factory, monkeypatch):
    p = start(proxy_factory, monkeypatch)
    s, _, body = status_get(p.status_port, "/metrics")
    assert s == 200 and "istio_agent_scrapes_total 1" in body and "server_live" in body


def test_prometheus_listener_15090_shape(proxy_factory):
    """Istio's bootstrap (envoy_bootstrap.json) gives Envoy a static listener on
    0.0.0.0:15090 (here a free port on loopback) whose one route, prefix /stats/prometheus,
    goes to the STATIC cluster prometheus_stats = the admin address. weft-proxy serves that
    shape as written: Envoy's Prometheus text through the listener, 404 for anything else."""
    admin = free_port()
    rc = route_config([vhost("backend", ["*"], [route(prefix="/stats/prometheus",
                                                      cluster="prometheus_stats")])])
    lst = listener(rc, stat_prefix="stats")
    bs = bootstrap([lst], [cluster("prometheus_stats", [admin], connect_timeout="0.250s")],
                   admin_port=admin)
    p = proxy_factory(bs)
    s, h, body = p.request("GET", "/stats/prometheus")
    assert s == 200, body
    assert b"# TYPE envoy_server_live gauge" in body or b"server_live" in body
    assert p.request("GET", "/config_dump")[0] == 404  # only the metrics path is routed


def test_app_address_follows_weft_localhost(proxy_factory, monkeypatch, app):
    """In the local mesh without namespaces a sidecar's app listens on the pod's own loopback
    address (node metadata WEFT_LOCALHOST), not on INSTANCE_IP: probes go there."""
    probers = {"/app-health/web/livez": {"httpGet": {"path": "/healthz", "port": app}}}
    monkeypatch.setenv("ISTIO_KUBE_APP_PROBERS", json.dumps(probers))
    monkeypatch.setenv("INSTANCE_IP", "127.0.0.2")  # nothing listens there
    for meta, want in (({}, 500), ({"WEFT_LOCALHOST": "127.0.0.1"}, 200)):
        bs = _bs()
        bs["node"]["metadata"] = meta
        sport = free_port()
        p = proxy_factory(bs, args=["--status-address", "127.0.0.1:%d" % sport])
        assert status_get(sport, "/app-health/web/livez")[0] == want, meta
        p.stop()


def test_lifecycle_hook_commands_wait_and_request(proxy_factory, monkeypatch):
    """The injected istio-proxy container's hooks, as pilot-agent's: `weft-proxy wait` (the
    postStart of holdApplicationUntilProxyStarts) until /healthz/ready answers 200, and
    `weft-proxy request --debug-port=<status> POST drain` (the native sidecar's preStop), which
    starts the drain."""
    p = start(proxy_factory, monkeypatch)
    ready = "http://127.0.0.1:%d/healthz/ready" % p.status_port
    w = subprocess.run([proxy_path(), "wait", "--url", ready, "--timeoutSeconds", "20",
                        "--periodMillis", "100"], capture_output=True, text=True, timeout=30)
    assert w.returncode == 0, w.stdout + w.stderr
    assert w.stdout == ("Waiting for Envoy proxy to be ready (timeout: 20 seconds)...\n"
                        "Envoy is ready!\n"), w.stdout
    r = subprocess.run([proxy_path(), "request", "--debug-port=%d" % p.status_port, "POST",
                        "drain"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "OK", (r.stdout, r.stderr)
    deadline = time.monotonic() + 5
    while status_get(p.status_port, "/healthz/ready")[0] != 503:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # draining: wait now times out with the last error; a GET of /drain is refused (405)
    w = subprocess.run([proxy_path(), "wait", "--url", ready, "--timeoutSeconds", "1",
                        "--periodMillis", "200"], capture_output=True, text=True, timeout=30)
    assert w.returncode == 1
    assert "timeout waiting for Envoy proxy to become ready. Last error: HTTP status code 503" \
        in w.stderr, w.stderr
    r = subprocess.run([proxy_path(), "request", "--debug-port", str(p.status_port), "GET",
                        "/drain"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "received unsuccessful status code 405" in r.stderr, r.stderr
    # nothing listening; bad command lines
    port = free_port()
    w = subprocess.run([proxy_path(), "wait", "--url", "http://127.0.0.1:%d/" % port,
                        "--timeoutSeconds", "1"], capture_output=True, text=True, timeout=30)
    assert w.returncode == 1 and "Connection refused" in w.stderr, w.stderr
    for bad in (["wait", "--timeoutSeconds", "soon"], ["wait", "--url", "ftp://x/"],
                ["request", "POST"], ["request", "--debug-port", "0", "GET", "x"]):
        assert subprocess.run([proxy_path()] + bad, capture_output=True, text=True,
                              timeout=10).returncode == 2, bad
