"""`weftctl up`, `status` and `down` (docs/local-mesh.md) on the book's own manifests.

The main test copies services/catalog/kubernetes/catalog.yaml and the ch10 Deployment v2,
Gateway and VirtualService (subsets v1/v2, no DestinationRule) from the shared corpus into a
temporary folder, with the istioinaction Namespace labelled for injection, a weft-local.yaml
that runs weft-app for the catalog image and Istio's `istio` ConfigMap turning JSON access
logs on. It then reproduces the story's first steps:

1. through the gateway on 127.0.0.1:30000 (Host catalog.istioinaction.io): 503, and the
   gateway's access log says NC (cluster_not_found);
2. `weftctl proxy-status`: every proxy SYNCED;
3. ch10/catalog-destinationrule-v1-v2.yaml copied in: 200s from both versions;
4. `weftctl down`: every process gone.

The local mesh uses fixed ports (pilot 15010/15014, the gateway's node port 30000): the tests
that start it skip when one is taken (another mesh runs), and always run `down` and then
kill, by PID, anything mesh.json still lists.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEFTCTL = os.path.abspath(os.environ.get("WEFTCTL") or os.path.join(ROOT, "build", "weftctl"))
SHARED = os.path.abspath(os.environ.get("WEFT_SHARED") or os.path.join(ROOT, "..", "shared"))
BOOK = os.path.join(SHARED, "corpus", "istioinaction")
FIXED_PORTS = (15010, 15012, 15014, 30000)
HOST = "catalog.istioinaction.io"

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: istioinaction
  labels:
    istio-injection: enabled
"""

LOCAL_IMAGES = """\
apiVersion: weft.dev/v1
kind: LocalImages
images:
  istioinaction/catalog: {command: ["weft-app", "--name", "catalog"]}
"""

MESH_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: istio
  namespace: istio-system
data:
  mesh: |-
    accessLogFile: /dev/stdout
    accessLogEncoding: JSON
"""


def weftctl(*args, timeout=90, cwd=None, runtime_dir=None):
    """runtime_dir: XDG_RUNTIME_DIR for the call (where `up` records the last mesh)."""
    env = dict(os.environ)
    if runtime_dir is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime_dir)
    p = subprocess.run([WEFTCTL] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=cwd)
    return p


def port_taken(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return False
    except OSError:
        return True
    finally:
        s.close()


def need_fixed_ports():
    if os.geteuid() != 0:
        pytest.skip("the local mesh binds port 80 on pod loopback addresses: needs root")
    taken = [p for p in FIXED_PORTS if port_taken(p)]
    if taken:
        pytest.skip("ports %s are in use (another local mesh is running?)" % taken)


def request(path="/", host=HOST, timeout=5):
    conn = http.client.HTTPConnection("127.0.0.1", 30000, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Host": host})
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except (OSError, http.client.HTTPException) as e:
            last = e
        else:
            if last:
                return last
        time.sleep(0.2)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def book_folder(tmp_path):
    d = tmp_path / "catalog"
    d.mkdir()
    shutil.copy(os.path.join(BOOK, "services", "catalog", "kubernetes", "catalog.yaml"), d)
    for name in ("catalog-deployment-v2.yaml", "catalog-gateway.yaml",
                 "catalog-virtualservice-subsets-v1-v2.yaml"):
        shutil.copy(os.path.join(BOOK, "ch10", name), d)
    (d / "namespace.yaml").write_text(NAMESPACE)
    (d / "weft-local.yaml").write_text(LOCAL_IMAGES)
    (d / "mesh-config.yaml").write_text(MESH_CONFIGMAP)
    return d


def kill_leftovers(state):
    """Kills (by PID) whatever the last mesh.json lists and still runs; returns their names.
    A process is the one listed when its /proc start time is the listed startTicks (it
    survives a launcher's exec), else (an older record) when its command line names argv[0]."""
    left = []
    try:
        with open(os.path.join(state, "mesh.json")) as f:
            mesh = json.load(f)
    except (OSError, ValueError):
        return left
    pids = [(p.get("name"), p.get("pid"), (p.get("argv") or [""])[0], p.get("startTicks"))
            for p in mesh.get("processes", [])]
    pids.append(("supervisor", mesh.get("supervisor", {}).get("pid"), "weftctl", None))
    for name, pid, prog, ticks in pids:
        if not pid:
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().decode("utf-8", "replace")
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] in ("Z", "X"):
            continue
        if ticks and int(fields[19]) != ticks:  # field 22 of /proc/PID/stat
            continue
        if not ticks and os.path.basename(prog) not in cmd:
            continue
        left.append(name)
        os.kill(pid, signal.SIGKILL)
    return left


def supervisor_log(state):
    try:
        with open(os.path.join(state, "logs", "supervisor.log")) as f:
            return f.read()[-4000:]
    except OSError:
        return "(no supervisor.log)"


def gateway_log_entries(state, mesh):
    path = os.path.join(state, "logs", mesh["gateway"]["pod"] + ".proxy.log")
    out = []
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def proxy_status_synced(nproxies):
    p = weftctl("proxy-status", timeout=20)
    rows = [l for l in p.stdout.splitlines()[1:] if l.strip()]
    if p.returncode != 0 or len(rows) != nproxies:
        return None
    for row in rows:  # CDS LDS EDS RDS: "SYNCED (2s)"; ECDS IGNORED
        if row.count("SYNCED") != 4:
            return None
    return p.stdout


def test_up_catalog_story(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    state = str(tmp_path / "state")
    rt, elsewhere = tmp_path / "run", tmp_path / "elsewhere"  # runtime dir, another folder
    rt.mkdir()
    elsewhere.mkdir()
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", runtime_dir=rt)
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        assert "http://127.0.0.1:30000" in up.stdout
        with open(os.path.join(state, "mesh.json")) as f:
            mesh = json.load(f)
        assert mesh["kind"] == "LocalMesh"
        assert len(mesh["pods"]) == 4  # gateway, catalog v1, catalog-v2 x2
        pods = {p["name"]: p for p in mesh["pods"]}
        versions = {n: p["labels"].get("version") for n, p in pods.items()}
        assert sorted(v for v in versions.values() if v) == ["v1", "v2", "v2"]
        for p in mesh["pods"]:
            assert p["ip"].startswith("127.10.") and p["localhost"].startswith("127.11.")
            assert p["namespace"] == ("istio-system" if p["gateway"] else "istioinaction")

        # 1. no DestinationRule: the subsets have no cluster, the gateway answers 503 NC
        status, _, _ = request()
        assert status == 503
        entry = wait_for(lambda: next((e for e in gateway_log_entries(state, mesh)
                                       if e.get("response_code") == 503), None),
                         5, "the 503 in the gateway's access log")
        assert entry["response_flags"] == "NC", entry
        assert entry["response_code_details"] == "cluster_not_found", entry

        # 2. not a sync problem: every proxy SYNCED
        wait_for(lambda: proxy_status_synced(4), 20, "every proxy SYNCED")

        st = weftctl("status", "--state", state, "-o", "json")
        assert st.returncode == 0, st.stderr
        doc = json.loads(st.stdout)
        assert doc["running"] is True
        kinds = sorted(p["kind"] for p in doc["processes"])
        assert kinds == ["app"] * 3 + ["gateway", "pilot"] + ["proxy"] * 3
        assert all(p["state"] == "running" and p["pid"] > 0 for p in doc["processes"])

        # Istio's Prometheus ports answer on every proxy, as `describe` lists them: 15090
        # (Envoy's prometheus_stats listener) and the agent's merged scrape on 15020
        import urllib.request
        for p in mesh["pods"]:
            for port in (15090, 15020):
                url = "http://%s:%d/stats/prometheus" % (p["ip"], port)
                with urllib.request.urlopen(url, timeout=5) as r:
                    body = r.read().decode()
                assert r.status == 200 and "envoy_server_live" in body, (url, body[:300])

        # 3. apply the DestinationRule: edit the folder, pilot picks it up
        shutil.copy(os.path.join(BOOK, "ch10", "catalog-destinationrule-v1-v2.yaml"), d)
        wait_for(lambda: request("/status/200")[0] == 200, 20, "200 after the DestinationRule")
        seen = {}
        for _ in range(60):
            status, headers, _ = request("/status/200")
            assert status == 200
            assert headers.get("x-weft-app") == "catalog"
            v = versions[headers["x-weft-pod"]]
            seen[v] = seen.get(v, 0) + 1
        assert set(seen) == {"v1", "v2"}, seen
        assert seen["v2"] > seen["v1"], seen  # 20/80

        # 4. status and down without a folder, from elsewhere, find the mesh `up` started
        st = weftctl("status", "-o", "json", cwd=elsewhere, runtime_dir=rt)
        assert st.returncode == 0 and json.loads(st.stdout)["running"] is True, st.stderr
        down = weftctl("down", timeout=60, cwd=elsewhere, runtime_dir=rt)
    finally:
        if "down" not in locals() or down.returncode != 0:
            down = weftctl("down", "--state", state, timeout=60)
        left = kill_leftovers(state)
    # 5. down stops everything
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stdout
    assert not left, "processes left running after down: %s" % left
    again = weftctl("down", "--state", state)
    assert again.returncode == 0 and "no local mesh is running" in again.stdout


def test_up_refuses_a_taken_port(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind(("127.0.0.1", 15014))
        holder.listen(1)
        p = weftctl("up", d, "--detach", "--state", tmp_path / "state")
    finally:
        holder.close()
        kill_leftovers(str(tmp_path / "state"))
    assert p.returncode == 1
    assert "127.0.0.1:15014 is in use by pid %d" % os.getpid() in p.stderr, p.stderr
    assert "weftctl down" in p.stderr
    assert not os.path.exists(tmp_path / "state" / "supervisor.pid")


def test_up_errors_name_file_line_field(tmp_path):
    d = book_folder(tmp_path)
    (d / "weft-local.yaml").write_text(LOCAL_IMAGES.replace(
        '{command: ["weft-app", "--name", "catalog"]}', "{command: weft-app}"))
    p = weftctl("up", d, "--state", tmp_path / "state")
    assert p.returncode == 1
    assert ("weft-local.yaml:4:36: LocalImages (unnamed): images.istioinaction/catalog.command: "
            "want a non-empty list of strings") in p.stderr, p.stderr
    (d / "weft-local.yaml").write_text(LOCAL_IMAGES.replace("istioinaction/catalog", "other"))
    p = weftctl("up", d, "--state", tmp_path / "state")
    assert p.returncode == 1
    assert "catalog-deployment-v2.yaml:27:16: Deployment istioinaction/catalog-v2: container " \
           "catalog: image \"istioinaction/catalog\" has no entry in the image map" in p.stderr, \
        p.stderr
    p = weftctl("up", tmp_path / "missing")
    assert p.returncode == 1 and "missing" in p.stderr
    p = weftctl("up")
    assert p.returncode == 64


def test_down_and_status_without_a_mesh(tmp_path):
    p = weftctl("down", "--state", tmp_path)
    assert p.returncode == 0
    assert "no local mesh is running from %s" % tmp_path in p.stdout
    p = weftctl("status", tmp_path)
    assert p.returncode == 0 and "no local mesh is running" in p.stdout
    p = weftctl("status", "--state", tmp_path, "-o", "json")
    assert p.returncode == 0 and json.loads(p.stdout)["running"] is False
    p = weftctl("status", "-o", "yaml", "--state", tmp_path)
    assert p.returncode == 64
