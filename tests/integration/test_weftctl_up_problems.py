"""`weftctl up` and `weftctl status` tell the truth (docs/local-mesh.md "What up and status
report"): a VirtualService pilot rejects, an app whose command does not exist, an app that
crash-loops, an app whose launcher execs another program, a supervisor that died, and a
gateway workload without a Service behind the node port.

Each test starts a real local mesh (fixed ports: skipped when taken) from a folder built from
the book's catalog manifests, and always runs `weftctl down` and then kills, by PID, anything
mesh.json still lists. The state folder is left to its default under a temporary
$XDG_STATE_HOME, so these tests also cover where `up` puts it and how `status`/`down DIR` find
it.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import time

from test_weftctl_up import (LOCAL_IMAGES, WEFTCTL, book_folder, kill_leftovers, need_fixed_ports,
                             supervisor_log, wait_for, weftctl)

BAD_VS = """\
apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata:
  name: catalog-bad-weight
  namespace: istioinaction
spec:
  hosts:
  - "other.istioinaction.io"
  gateways:
  - "catalog-gateway"
  http:
  - route:
    - destination:
        host: catalog.istioinaction.svc.cluster.local
      weight: twenty
"""

IMAGES = LOCAL_IMAGES + """\
  weft/missing: {command: ["weft-no-such-command"]}
  weft/crasher: {command: ["sh", "-c", "echo crashing; exit 3"]}
  weft/launcher: {command: ["sh", "-c", "exec sleep 300"]}
"""


def deployment(name, image):
    return """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: istioinaction
spec:
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
      - name: %s
        image: %s
        ports:
        - containerPort: 3000
""" % (name, name, name, name, image)


def env_for(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir(exist_ok=True)
    rt = tmp_path / "run"
    rt.mkdir(exist_ok=True)
    return xdg, rt


def run(tmp_path, *args, **kw):
    """weftctl with XDG_STATE_HOME and XDG_RUNTIME_DIR under tmp_path."""
    xdg, rt = env_for(tmp_path)
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(xdg)
    try:
        return weftctl(*args, runtime_dir=rt, **kw)
    finally:
        if old is None:
            del os.environ["XDG_STATE_HOME"]
        else:
            os.environ["XDG_STATE_HOME"] = old


def state_of(tmp_path):
    found = glob.glob(str(tmp_path / "xdg" / "weft" / "*" / "mesh.json"))
    return os.path.dirname(found[0]) if found else None


def cleanup(tmp_path, d):
    down = run(tmp_path, "down", d, timeout=60)
    state = state_of(tmp_path)
    left = kill_leftovers(state) if state else []
    return down, left


def test_up_and_status_name_a_rejected_resource_and_an_app_that_cannot_start(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    (d / "bad-vs.yaml").write_text(BAD_VS)
    (d / "weft-local.yaml").write_text(IMAGES)
    (d / "missing.yaml").write_text(deployment("missing", "weft/missing"))
    try:
        t0 = time.monotonic()
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        took = time.monotonic() - t0
        state = state_of(tmp_path)
        out = up.stdout + up.stderr
        assert up.returncode == 3, "up:\n%s\n%s" % (out, supervisor_log(state or "."))
        # the state folder is outside the manifests, under $XDG_STATE_HOME/weft/<name>-<hash>
        assert state and os.path.basename(state).startswith("catalog-"), state
        assert not os.path.exists(d / ".weft")
        assert took < 35, "up waited for the app that cannot start: %.0fs" % took
        # the rejected VirtualService, as the validation webhook would refuse it
        assert "pilot rejected 1 resource" in up.stderr, out
        assert "%s:15:15: VirtualService istioinaction/catalog-bad-weight: " \
               "spec.http[0].route[0].weight: " % (d / "bad-vs.yaml") in up.stderr, out
        # the app whose command does not exist, with the supervisor's reason
        assert "app missing-" in up.stderr and \
               "cannot start: command not found: weft-no-such-command" in up.stderr, out
        assert "waiting for 5 pods:" in up.stderr, out  # the progress line
        # everything else is fine: no other problem is reported
        problems = up.stderr.split("problems:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert len(problems) == 1, problems

        st = run(tmp_path, "status", d)
        assert st.returncode == 3, st.stdout + st.stderr
        assert "VirtualService istioinaction/catalog-bad-weight" in st.stdout, st.stdout
        assert "command not found: weft-no-such-command" in st.stdout, st.stdout
        sj = run(tmp_path, "status", "-o", "json")  # no DIR: the last mesh up started
        assert sj.returncode == 3, sj.stderr
        doc = json.loads(sj.stdout)
        assert doc["state"] == state
        assert [e["resource"] for e in doc["configErrors"]] == \
            ["VirtualService istioinaction/catalog-bad-weight"]
        missing = [p for p in doc["processes"] if p["name"].startswith("missing-")]
        assert missing and missing[0]["state"] in ("restarting", "crash-looping"), missing
        assert missing[0]["lastExit"] == "command not found: weft-no-such-command"
        assert any("weft-no-such-command" in p for p in doc["problems"]), doc["problems"]

        # fixed in the folder: pilot takes the edit, status no longer names it
        (d / "bad-vs.yaml").unlink()
        wait_for(lambda: not json.loads(run(tmp_path, "status", d, "-o", "json").stdout)
                 ["configErrors"], 20, "the config error to go")
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not left, left


def test_status_shows_crash_loops_exec_launchers_and_a_dead_supervisor(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    (d / "weft-local.yaml").write_text(IMAGES)
    (d / "crasher.yaml").write_text(deployment("crasher", "weft/crasher"))
    (d / "launcher.yaml").write_text(deployment("launcher", "weft/launcher"))
    # Istio's injector refuses this pod: up does not start it, and counts it
    (d / "badcfg.yaml").write_text(deployment("badcfg", "istioinaction/catalog").replace(
        "      labels: {app: badcfg}\n",
        "      labels: {app: badcfg}\n      annotations:\n"
        "        proxy.istio.io/config: \"a: [\"\n"))
    try:
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        state = state_of(tmp_path)
        assert up.returncode == 3, up.stdout + up.stderr + supervisor_log(state or ".")
        assert "exited with status 3" in up.stderr, up.stderr
        assert "  pod badcfg-" in up.stderr and ": not started: " in up.stderr and \
            "Deployment istioinaction/badcfg: spec.template.metadata.annotations" \
            "[proxy.istio.io/config]: does not parse" in up.stderr, up.stderr
        assert "launcher-" not in up.stderr.split("problems:", 1)[1], up.stderr

        def crash_looping():
            doc = json.loads(run(tmp_path, "status", d, "-o", "json").stdout)
            procs = {p["name"].split("-")[0]: p for p in doc["processes"] if p["kind"] == "app"}
            c = procs["crasher"]
            return (c["state"] == "crash-looping" and c["restarts"] >= 1 and procs) or None
        procs = wait_for(crash_looping, 20, "the crasher to crash-loop")
        assert procs["crasher"]["lastExit"] == "exited with status 3"
        # sh execs sleep: same process, another program; still running
        assert procs["launcher"]["state"] == "running", procs["launcher"]
        assert "lastExit" not in procs["launcher"] or procs["launcher"]["lastExit"] is None
        st = run(tmp_path, "status", d)
        row = [l for l in st.stdout.splitlines() if l.startswith("crasher-")][0]
        assert "crash-looping" in row and "exited with status 3" in row, st.stdout
        row = [l for l in st.stdout.splitlines() if l.startswith("launcher-")][0]
        assert " running " in row, st.stdout

        # the supervisor dies: status says so plainly, exits non-zero
        with open(os.path.join(state, "supervisor.pid")) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        time.sleep(0.5)
        st = run(tmp_path, "status", d)
        assert st.returncode == 3, st.stdout + st.stderr
        first = st.stdout.splitlines()[0]
        assert first.startswith("supervisor not running: ") and \
            first.endswith(" processes left; run `weftctl down`"), st.stdout
        assert int(first.split()[3]) >= 7, first  # pilot, gateway, 3 proxies, launcher, catalogs
        row = [l for l in st.stdout.splitlines() if l.startswith("launcher-")][0]
        assert "left running" in row, st.stdout
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "left behind" in down.stdout, down.stdout
    assert not left, left


GATEWAY_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-ingressgateway
  namespace: istio-system
spec:
  selector:
    matchLabels: {istio: ingressgateway}
  template:
    metadata:
      labels: {istio: ingressgateway, app: istio-ingressgateway}
    spec:
      containers:
      - name: istio-proxy
        image: docker.io/istio/proxyv2:1.17.0
"""


def test_up_names_a_node_port_with_no_gateway_listener(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    (d / "gateway-deployment.yaml").write_text(GATEWAY_DEPLOYMENT)
    try:
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        state = state_of(tmp_path)
        assert up.returncode == 3, up.stdout + up.stderr + supervisor_log(state or ".")
        assert "node port: 127.0.0.1:30000 forwards to the gateway pod my-ingressgateway-" \
            in up.stderr, up.stderr
        assert "needs a Service" in up.stderr
        st = run(tmp_path, "status", d)
        assert st.returncode == 3, st.stdout + st.stderr
        assert "node port: 127.0.0.1:30000 forwards to the gateway pod my-ingressgateway-" \
            in st.stdout, st.stdout
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0 and not left, (down.stdout, left)


def test_down_and_status_on_a_folder_that_does_not_exist(tmp_path):
    for cmd in ("down", "status"):
        p = weftctl(cmd, tmp_path / "missing")
        assert p.returncode == 1, (cmd, p.stdout, p.stderr)
        assert "%s: no such folder" % (tmp_path / "missing") in p.stderr, p.stderr
    (tmp_path / "file").write_text("x")
    p = weftctl("down", tmp_path / "file")
    assert p.returncode == 1 and "not a folder" in p.stderr, p.stderr


CLASH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: clash
  namespace: istioinaction
spec:
  selector:
    matchLabels: {app: clash}
  template:
    metadata:
      labels: {app: clash}
    spec:
      containers:
      - name: clash
        image: istioinaction/catalog
        ports:
        - containerPort: 80
"""


def test_up_names_a_proxy_that_refuses_its_config(tmp_path):
    """The app listens on its pod localhost:80, where the sidecar's outbound listener for the
    Service port 80 must bind too (docs/local-mesh.md "Limits"): up names the clash from the
    manifests, and what it did: whichever binds first, the other fails (the proxy NACKs LDS and
    is not SYNCED, or the app cannot start), and up says so without waiting for --timeout."""
    need_fixed_ports()
    d = book_folder(tmp_path)
    (d / "clash.yaml").write_text(CLASH)
    try:
        t0 = time.monotonic()
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        took = time.monotonic() - t0
        state = state_of(tmp_path)
        assert up.returncode == 3, up.stdout + up.stderr + supervisor_log(state or ".")
        problems = up.stderr.split("problems:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert len(problems) == 2, up.stderr
        assert problems[0].startswith("  pod clash-") and ": port clash: containerPort 80 of " \
            "clash is also port 80 of Service istioinaction/catalog" in problems[0], up.stderr
        assert (problems[1].startswith("  proxy clash-") and ": not SYNCED: " in problems[1]
                and "LDS ERROR" in problems[1]) or \
            (problems[1].startswith("  app clash-") and "cannot start" in problems[1]), up.stderr
        assert took < 30, "up waited for a proxy that refuses its config: %.0fs" % took
        # status says the same (it used to exit 0 with no problem listed)
        st = run(tmp_path, "status", d, "-o", "json")
        assert st.returncode == 3, st.stdout + st.stderr
        got = json.loads(st.stdout)["problems"]
        assert any(p.startswith("pod clash-") and "port clash" in p for p in got), st.stdout
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0 and not left, (down.stdout, left)


def test_foreground_up_prints_later_edits_pilot_rejects(tmp_path):
    """In the foreground, a later edit pilot rejects is printed as it happens (what `kubectl
    apply` would have said), and its fix too; Ctrl-C stops everything."""
    need_fixed_ports()
    d = book_folder(tmp_path)
    xdg, rt = env_for(tmp_path)
    env = dict(os.environ, XDG_STATE_HOME=str(xdg), XDG_RUNTIME_DIR=str(rt))
    out, err = open(tmp_path / "up.out", "w+"), open(tmp_path / "up.err", "w+")
    proc = subprocess.Popen([os.path.abspath(os.environ.get("WEFTCTL", "build/weftctl")), "up",
                             str(d), "--timeout", "40"], stdout=out, stderr=err, env=env)
    try:
        def text(f):
            f.seek(0)
            return f.read()
        wait_for(lambda: "Press Ctrl-C" in text(out), 45, "up in the foreground")
        assert "problems:" not in text(err), text(err)
        (d / "bad-vs.yaml").write_text(BAD_VS)
        line = "pilot rejected: %s:15:15: VirtualService istioinaction/catalog-bad-weight: " \
               "spec.http[0].route[0].weight: " % (d / "bad-vs.yaml")
        wait_for(lambda: line in text(err), 20, "the rejected edit on stderr")
        (d / "bad-vs.yaml").unlink()
        wait_for(lambda: "no longer reported: %s" % line[len("pilot rejected: "):] in text(err),
                 20, "the fix on stderr")
        assert text(err).count(line) == 1, text(err)  # printed once, not at every poll
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert "stopped" in text(out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        down, left = cleanup(tmp_path, d)
        out.close()
        err.close()
    assert not left, left


def test_up_timeout_names_proxies_whose_process_cannot_start(tmp_path):
    """weft-proxy cannot be found: nothing to wait for is known, so up waits --timeout, says
    it did not settle, and names every proxy with why (never connected) and its process's.
    weftctl runs from a copy alone in a folder, so that $WEFT_PROXY is where it looks."""
    need_fixed_ports()
    d = book_folder(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    weftctl_copy = str(bindir / "weftctl")
    shutil.copy(WEFTCTL, weftctl_copy)
    root = os.path.dirname(WEFTCTL)
    missing = str(tmp_path / "no-such-weft-proxy")
    xdg, rt = env_for(tmp_path)
    env = dict(os.environ, XDG_STATE_HOME=str(xdg), XDG_RUNTIME_DIR=str(rt), WEFT_PROXY=missing,
               WEFT_PILOT=os.path.abspath(os.environ.get("WEFT_PILOT") or
                                          os.path.join(root, "weft-pilot")),
               WEFT_APP=os.path.abspath(os.environ.get("WEFT_APP") or
                                        os.path.join(root, "weft-app")))
    try:
        t0 = time.monotonic()
        up = subprocess.run([weftctl_copy, "up", str(d), "--detach", "--timeout", "4"],
                            capture_output=True, text=True, timeout=60, env=env)
        took = time.monotonic() - t0
        state = state_of(tmp_path)
        assert up.returncode == 3, up.stdout + up.stderr + supervisor_log(state or ".")
        assert 4 <= took < 20, took
        assert "not settled after 4s (--timeout)" in up.stderr, up.stderr
        assert "weft local mesh is starting" in up.stdout, up.stdout
        problems = up.stderr.split("problems:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert len(problems) == 4, up.stderr  # the gateway and 3 sidecars
        for line in problems:
            assert line.startswith("  proxy ") and ": not SYNCED: never connected to pilot; " \
                "its process: cannot start: command not found: %s" % missing in line, line
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0 and not left, (down.stdout, left)


def test_a_large_upload_through_the_node_port_leaves_the_supervisor_running(tmp_path):
    """The gateway answers an 8 MB upload early (503: no DestinationRule for the subsets) and
    closes; the node-port forwarder's write then fails with EPIPE, which used to kill the
    supervisor (SIGPIPE): the node port was gone and the mesh unsupervised."""
    import http.client
    need_fixed_ports()
    d = book_folder(tmp_path)
    try:
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        assert up.returncode in (0, 3), up.stdout + up.stderr
        body = b"x" * (8 << 20)
        for _ in range(3):
            c = http.client.HTTPConnection("127.0.0.1", 30000, timeout=20)
            try:
                c.request("POST", "/items", body=body,
                          headers={"Host": "catalog.istioinaction.io"})
                c.getresponse().read()
            except OSError:
                pass  # the gateway may close before reading it all: that is fine
            finally:
                c.close()
        st = run(tmp_path, "status", d, "-o", "json")
        assert "supervisor not running" not in st.stdout, st.stdout
        c = http.client.HTTPConnection("127.0.0.1", 30000, timeout=10)
        c.request("GET", "/items", headers={"Host": "catalog.istioinaction.io"})
        assert c.getresponse().status == 503  # the node port still answers
        c.close()
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0 and not left, (down.stdout, left)


WASM_AUTHN = """\
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata:
  name: default
  namespace: istioinaction
spec:
  url: oci://example.com/authn:1
  phase: AUTHN
"""


def test_an_unenforced_security_control_fails_up_and_status(tmp_path):
    """A WasmPlugin in the AUTHN phase weft does not run (WFT0002): up and status exit 3 and
    say why, though every pod runs and every proxy is SYNCED."""
    need_fixed_ports()
    d = book_folder(tmp_path)
    (d / "wasm.yaml").write_text(WASM_AUTHN)
    try:
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        assert up.returncode == 3, up.stdout + up.stderr
        assert "WasmPlugin istioinaction/default: spec.phase is not enforced by " \
            "weft" in up.stderr and "[WFT0002]" in up.stderr, up.stderr
        st = run(tmp_path, "status", d)
        assert st.returncode == 3, st.stdout + st.stderr
        assert "1 security control weft does not enforce (WFT0002, above)" in st.stdout, st.stdout
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0 and not left, (down.stdout, left)


MESH_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: istio
  namespace: istio-system
data:
  mesh: |-
    accessLogFile: /dev/stdout
    enableTracing: true
"""


def test_meshconfig_warnings_name_the_users_file(tmp_path):
    """A MeshConfig field weft does not implement, in the istio ConfigMap of DIR: up and status
    name that file and line (pilot reads the text from the state folder's copy)."""
    need_fixed_ports()
    d = book_folder(tmp_path)
    (d / "mesh-config.yaml").write_text(MESH_CONFIGMAP)  # replaces the book folder's
    try:
        up = run(tmp_path, "up", d, "--detach", "--timeout", "40")
        assert up.returncode == 0, up.stdout + up.stderr  # a warning is not a problem
        want = "%s:9:5: MeshConfig: enableTracing has no effect in weft" % (d / "mesh-config.yaml")
        assert want in up.stderr, up.stderr
        st = run(tmp_path, "status", d)
        assert st.returncode == 0 and want in st.stdout, st.stdout + st.stderr
    finally:
        down, left = cleanup(tmp_path, d)
    assert down.returncode == 0 and not left, (down.stdout, left)
