"""`weftctl dashboard weft` (issue 22 item 1; istioctl's `dashboard`): prints the URL of
weft-pilot's web view (http://<monitoring addr>/ui/) after checking that GET /ui/ answers,
opens it with $BROWSER or xdg-open (when a display is set) unless --browser=false or -o json,
reports a pilot that is not reachable (exit 1) or answers without the view (503: files missing,
run scripts/setup; 404; exit 3), finds pilot through --pilot, a local mesh's mesh.json
(--state) or a cluster's istiod pod (through the API server), and in a cluster prints the
exact `kubectl port-forward` command instead of pretending to forward.

Most tests run against a small HTTP server standing in for weft-pilot's monitoring port (it
answers GET /ui/ as ui_static does: 200 with the page, or 503 with a text naming what is
missing); test_against_weft_pilot runs a real weft-pilot with a temporary --uiDir and is
skipped while weft-pilot lacks that flag."""
import http.server
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import ROOT, run_weftctl

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

EXIT_ERROR, EXIT_MESH, EXIT_USAGE = 1, 3, 64
PAGE = b"<!doctype html><title>weft</title>"
MISSING = b"web view not installed: /opt/weft/ui/node_modules is missing; run scripts/setup\n"


class StandIn:
    """An HTTP server answering GET /ui/ with `status` (200: PAGE, 503: MISSING, else empty),
    recording the paths asked."""

    def __init__(self, status=200):
        self.status = status
        self.paths = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.paths.append(self.path)
                body = PAGE if outer.status == 200 else MISSING if outer.status == 503 else b""
                self.send_response(outer.status)
                self.send_header("Content-Type", "text/html" if outer.status == 200 else
                                 "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.addr = "127.0.0.1:%d" % self.srv.server_address[1]
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def pilot():
    s = StandIn()
    yield s
    s.close()


def env_without_display(**extra):
    e = {k: v for k, v in os.environ.items()
         if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "KUBECONFIG")}
    e.update(extra)
    return e


def recorder(tmp_path, name):
    """An executable that writes its arguments to tmp_path/<name>.args."""
    out = tmp_path / (name + ".args")
    exe = tmp_path / name
    exe.write_text("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\n" % out)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe, out


def wait_file(path, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    return None


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "127.0.0.1:%d" % port


def test_prints_the_checked_url_without_a_browser(pilot):
    r = run_weftctl("dashboard", "weft", "--pilot", pilot.addr, "--browser=false",
                    env=env_without_display())
    assert r.returncode == 0, r.stderr
    assert r.stdout == "http://%s/ui/\n" % pilot.addr
    assert "skipping opening a browser" in r.stderr
    assert pilot.paths == ["/ui/"]  # checked before printing


def test_json_output_and_aliases(pilot, tmp_path):
    exe, out = recorder(tmp_path, "browser")
    for argv in (["dashboard", "weft"], ["dash", "weft"], ["d", "kiali"]):
        r = run_weftctl(*argv, "--pilot", pilot.addr, "-o", "json",
                        env=env_without_display(BROWSER=str(exe)))
        assert r.returncode == 0, (argv, r.stderr)
        assert json.loads(r.stdout) == {"url": "http://%s/ui/" % pilot.addr}
    assert "weft has no Kiali" in r.stderr
    time.sleep(0.3)
    assert not out.exists()  # -o json never opens a browser


def test_opens_browser_from_env(pilot, tmp_path):
    exe, out = recorder(tmp_path, "browser")
    r = run_weftctl("dashboard", "weft", "--pilot", pilot.addr,
                    env=env_without_display(BROWSER="%s --new-window %%s" % exe))
    assert r.returncode == 0, r.stderr
    assert wait_file(out) == "--new-window\nhttp://%s/ui/\n" % pilot.addr


def test_xdg_open_only_with_a_display(pilot, tmp_path):
    exe, out = recorder(tmp_path, "xdg-open")
    path = "%s:%s" % (tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))
    r = run_weftctl("dashboard", "weft", "--pilot", pilot.addr, env=env_without_display(PATH=path))
    assert r.returncode == 0, r.stderr
    assert "Not opening a browser (no display" in r.stderr
    assert "open http://%s/ui/ in your browser" % pilot.addr in r.stderr
    time.sleep(0.3)
    assert not out.exists()
    r = run_weftctl("dashboard", "weft", "--pilot", pilot.addr,
                    env=env_without_display(PATH=path, DISPLAY=":99"))
    assert r.returncode == 0, r.stderr
    assert wait_file(out) == "http://%s/ui/\n" % pilot.addr


def test_view_files_missing_is_exit_3():
    s = StandIn(503)
    try:
        r = run_weftctl("dashboard", "weft", "--pilot", s.addr, "--browser=false",
                        env=env_without_display())
        assert r.returncode == EXIT_MESH, r.stderr
        assert r.stdout == ""
        assert "503" in r.stderr and "run scripts/setup" in r.stderr
        assert MISSING.decode().strip() in r.stderr  # pilot's own words are shown
        s.status = 404
        r = run_weftctl("dashboard", "weft", "--pilot", s.addr, "-o", "json",
                        env=env_without_display())
        assert r.returncode == EXIT_MESH and r.stdout == ""
        assert "404" in r.stderr and "not weft-pilot's monitoring port" in r.stderr
    finally:
        s.close()


def test_pilot_not_reachable_is_exit_1():
    addr = closed_port()
    r = run_weftctl("dashboard", "weft", "--pilot", addr, env=env_without_display())
    assert r.returncode == EXIT_ERROR
    assert r.stdout == ""
    assert "weft-pilot is not reachable (%s)" % addr in r.stderr
    assert "weftctl up" in r.stderr


@pytest.mark.parametrize("addr", ["127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:http",
                                  "127.0.0.1:"])
def test_pilot_address_with_no_port_number_is_refused(addr):
    r = run_weftctl("dashboard", "weft", "--pilot", addr, "--browser=false",
                    env=env_without_display())
    assert r.returncode == EXIT_ERROR and r.stdout == ""
    assert "invalid address (want host:port, port 1-65535)" in r.stderr, r.stderr


def test_state_without_a_mesh_is_an_error(tmp_path):
    r = run_weftctl("dashboard", "weft", "--state", tmp_path / "nothing", "--browser=false",
                    env=env_without_display())
    assert r.returncode == EXIT_ERROR and r.stdout == ""
    assert "no local mesh there" in r.stderr and "mesh.json" in r.stderr, r.stderr


def test_local_mesh_state_names_pilot(pilot, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "mesh.json").write_text(json.dumps({
        "apiVersion": "weft.dev/v1", "kind": "LocalMesh",
        "pilot": {"xds": "127.0.0.1:15010", "monitoring": pilot.addr}}))
    r = run_weftctl("dashboard", "weft", "--state", state, "-o", "json",
                    env=env_without_display())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["url"] == "http://%s/ui/" % pilot.addr


@pytest.mark.parametrize("args,want", [
    (["dashboard", "grafana"], "no grafana dashboard in weft"),
    (["dashboard", "envoy"], "weftctl proxy-config"),
    (["dashboard", "nope"], 'unknown dashboard "nope"'),
    (["dashboard", "weft", "extra"], "takes no argument"),
    (["dashboard", "weft", "-o", "yaml"], 'output format "yaml"'),
    (["dashboard", "weft", "--port", "http"], "invalid --port"),
    (["dashboard", "weft", "--browser=maybe"], "browser"),
])
def test_usage_errors(args, want):
    r = run_weftctl(*args, "--pilot", closed_port(), env=env_without_display())
    assert r.returncode == EXIT_USAGE, r.stderr
    assert want in r.stderr and r.stdout == ""


def test_help_and_completion():
    for argv in (["dashboard"], ["dashboard", "--help"], ["help", "dashboard"]):
        r = run_weftctl(*argv)
        assert r.returncode == 0 and "weftctl dashboard weft" in r.stdout
        assert "--browser" in r.stdout and "Exit codes" in r.stdout
    script = run_weftctl("completion", "bash").stdout
    assert "dashboard|dash|d)" in script and 'subs="weft kiali"' in script


@pytest.fixture
def cluster(pilot, tmp_path):
    """A test API server holding a running istiod pod whose monitoring port (annotation
    prometheus.io/port) is the stand-in's, on 127.0.0.1."""
    api = fixture.KubeApi(log=str(tmp_path / "kubeapi.log")).start()

    def create(path, obj):
        req = urllib.request.Request(api.url + path, data=json.dumps(obj).encode(),
                                     method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()

    create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "istio-system"}})
    create("/api/v1/namespaces/istio-system/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "istiod-7d9f8c6b5-kq2xw", "namespace": "istio-system",
                     "labels": {"app": "istiod"},
                     "annotations": {"prometheus.io/port": str(pilot.port)}},
        "spec": {"containers": [{"name": "discovery", "image": "weft-pilot"}]},
        "status": {"phase": "Running", "podIP": "127.0.0.1"}})
    kubeconfig = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url)
    yield kubeconfig
    api.stop()


def test_cluster_prints_the_port_forward(cluster, pilot, tmp_path):
    exe, out = recorder(tmp_path, "browser")
    r = run_weftctl("dashboard", "weft", "--kubeconfig", cluster,
                    env=env_without_display(BROWSER=str(exe)))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "http://localhost:%d/ui/\n" % pilot.port
    want = ("kubectl --kubeconfig %s -n istio-system port-forward pod/istiod-7d9f8c6b5-kq2xw "
            "%d:%d" % (cluster, pilot.port, pilot.port))
    assert "\n  %s\n" % want in r.stderr
    assert "weftctl does not port-forward" in r.stderr
    assert pilot.paths == ["/ui/"]  # checked through the API server's pod proxy
    time.sleep(0.3)
    assert not out.exists()  # the URL answers only once the port-forward runs
    r = run_weftctl("dashboard", "weft", "-p", "18080", "--address", "0.0.0.0", "-o", "json",
                    env=env_without_display(KUBECONFIG=cluster))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "url": "http://localhost:18080/ui/",
        "port_forward": "kubectl -n istio-system port-forward pod/istiod-7d9f8c6b5-kq2xw "
                        "18080:%d --address 0.0.0.0" % pilot.port}


def test_cluster_view_missing_and_no_istiod(cluster, pilot):
    pilot.status = 503
    r = run_weftctl("dashboard", "weft", "--kubeconfig", cluster, env=env_without_display())
    assert r.returncode == EXIT_MESH, r.stderr
    assert "istiod pod istiod-7d9f8c6b5-kq2xw.istio-system" in r.stderr
    assert "run scripts/setup" in r.stderr
    r = run_weftctl("dashboard", "weft", "--kubeconfig", cluster, "-n", "other",
                    env=env_without_display())
    assert r.returncode == EXIT_ERROR
    assert 'no running Istio pods in "other"' in r.stderr


def pilot_has_ui_dir():
    exe = os.environ.get("WEFT_PILOT") or os.path.join(ROOT, "build", "weft-pilot")
    if not os.access(exe, os.X_OK):
        return None
    h = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    return exe if "--uiDir" in h.stdout + h.stderr else None


def free_addr():
    return closed_port()


@pytest.mark.skipif(not pilot_has_ui_dir(), reason="weft-pilot has no --uiDir yet")
def test_against_weft_pilot(tmp_path):
    """A real weft-pilot with --uiDir: 200 once the folder holds the view, 503 naming what is
    missing otherwise (ui_static's contract)."""
    exe = pilot_has_ui_dir()
    ui = tmp_path / "ui"
    ui.mkdir()
    (ui / "index.html").write_text("<!doctype html><title>weft</title>")
    (tmp_path / "config").mkdir()
    mon, grpc = free_addr(), free_addr()
    for with_modules in (False, True):
        if with_modules:
            (ui / "node_modules").mkdir()
        p = subprocess.Popen([exe, "--config-dir", str(tmp_path / "config"), "--grpcAddr", grpc,
                              "--monitoringAddr", mon, "--uiDir", str(ui)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", int(mon.rsplit(":", 1)[1])),
                                             timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.1)
            r = run_weftctl("dashboard", "weft", "--pilot", mon, "--browser=false",
                            env=env_without_display())
            if with_modules:
                assert r.returncode == 0, r.stderr
                assert r.stdout == "http://%s/ui/\n" % mon
            else:
                assert r.returncode == EXIT_MESH, r.stderr
                assert "run scripts/setup" in r.stderr
        finally:
            p.terminate()
            p.wait(10)
