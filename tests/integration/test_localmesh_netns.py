"""`weftctl up --pod-network netns` (docs/local-mesh.md "Pods in network namespaces"): each pod
in its own network namespace on 10.10.0.0/16, behind a bridge in the mesh's private node
namespace, the host reaching them over one veth link.

The example is examples/catalog with its DestinationRule fix (the gateway and three catalog
pods). The tests check that every pod has its namespace and IP, that an app answers on its
pod IP from another pod's namespace and not on the host's loopback, that the gateway answers
on 127.0.0.1:30000, that proxy-status/proxy-config/status work from the host, that `down`
leaves no namespace, link or route, that `down` also cleans after the supervisor was killed
with SIGKILL, and that a second `up` then works. With --capture, Istio's rules are in each
sidecar pod and its proxy runs as uid 1337.

Like the other local-mesh tests, run as root inside a network namespace of your own
(`unshare -n sh -c 'ip link set lo up && ...'`): the mesh binds fixed ports. Skipped, with the
reason, when not root or when iproute2's `ip` or `nsenter` is missing.
"""
import json
import os
import shutil
import signal
import tempfile
import subprocess
import time
import urllib.request

import pytest

from test_weftctl_up import (ROOT, WEFTCTL, kill_leftovers, need_fixed_ports, port_taken,
                             proxy_status_synced, request, supervisor_log, wait_for, weftctl)

EXAMPLE = os.path.join(ROOT, "examples", "catalog")
FIX = os.path.join(ROOT, "examples", "catalog-steps", "fix-destinationrule.yaml")


def need_netns():
    if os.geteuid() != 0:
        pytest.skip("--pod-network netns creates network namespaces: needs root")
    for tool in ("ip", "nsenter"):
        if not shutil.which(tool):
            pytest.skip("--pod-network netns needs `%s` (iproute2 / util-linux)" % tool)
    need_fixed_ports()


def sh(*args, check=True):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=30)
    if check:
        assert p.returncode == 0, "%s: %s%s" % (" ".join(map(str, args)), p.stdout, p.stderr)
    return p


def netns_list():
    return [l.split()[0] for l in sh("ip", "netns", "list").stdout.splitlines() if l.strip()]


def mesh_json(state):
    with open(os.path.join(state, "mesh.json")) as f:
        return json.load(f)


def catalog_folder(tmp_path):
    d = tmp_path / "catalog"
    shutil.copytree(EXAMPLE, d)
    shutil.copy(FIX, d)
    return d


def up(d, state, *extra):
    p = weftctl("up", d, "--detach", "--state", state, "--timeout", "60",
                "--pod-network", "netns", *extra)
    return p


def assert_clean(net):
    """Nothing of the mesh is left: namespaces, the host link, the route to the pod network."""
    left = [n for n in netns_list() if n.startswith(net["prefix"])]
    assert left == [], left
    assert sh("ip", "link", "show", net["hostLink"], check=False).returncode != 0
    assert "10.10.0.0/16" not in sh("ip", "route").stdout


@pytest.fixture
def mesh_state(tmp_path):
    state = str(tmp_path / "state")
    yield state
    weftctl("down", "--state", state, timeout=60)
    kill_leftovers(state)
    try:  # whatever a failed test left: namespaces by the recorded prefix
        prefix = mesh_json(state).get("podNetwork", {}).get("prefix")
    except (OSError, ValueError):
        prefix = None
    if prefix:
        for n in netns_list():
            if n.startswith(prefix):
                sh("ip", "netns", "del", n, check=False)


def test_netns_catalog(tmp_path, mesh_state):
    need_netns()
    d = catalog_folder(tmp_path)
    state = mesh_state
    p = up(d, state)
    assert p.returncode == 0, "up failed:\n%s\n%s\n%s" % (p.stdout, p.stderr,
                                                          supervisor_log(state))
    assert "pod network: 10.10.0.0/16" in p.stdout
    mesh = mesh_json(state)
    net = mesh["podNetwork"]
    assert net["mode"] == "netns" and net["cidr"] == "10.10.0.0/16"
    assert net["node"] == net["prefix"] + "node"

    # every pod: its namespace, eth0 with its IP from 10.10.0.0/16, the default route
    names = netns_list()
    assert net["node"] in names
    pods = mesh["pods"]
    assert len(pods) == 4
    for pod in pods:
        assert pod["ip"].startswith("10.10.0."), pod
        assert pod["netns"] == "%s%s.%s" % (net["prefix"], pod["name"], pod["namespace"])
        assert pod["netns"] in names
        addr = sh("ip", "-n", pod["netns"], "-4", "addr", "show", "eth0").stdout
        assert "inet %s/16" % pod["ip"] in addr, addr
        assert "default via 10.10.0.1" in sh("ip", "-n", pod["netns"], "route").stdout
    # the host: its link with 10.10.255.254 and the connected route, nothing else
    assert "inet 10.10.255.254/16" in sh("ip", "-4", "addr", "show", net["hostLink"]).stdout
    routes = [l for l in sh("ip", "route").stdout.splitlines() if "10.10." in l]
    assert routes == [l for l in routes if "dev %s" % net["hostLink"] in l] and len(routes) == 1
    # processes run inside their pod's namespace
    own = os.readlink("/proc/self/ns/net")
    for proc in mesh["processes"]:
        if proc["kind"] == "pilot":
            assert os.readlink("/proc/%d/ns/net" % proc["pid"]) == own
            continue
        pod = next(x for x in pods if x["name"] == proc["pod"])
        inode = os.stat("/run/netns/" + pod["netns"]).st_ino
        assert os.readlink("/proc/%d/ns/net" % proc["pid"]) == "net:[%d]" % inode, proc

    # an app answers on its pod IP (its sidecar's inbound listener) from another pod
    gw = next(x for x in pods if x["gateway"])
    catalogs = [x for x in pods if not x["gateway"]]
    other, target = catalogs[0], catalogs[-1]
    out = sh("ip", "netns", "exec", other["netns"], "curl", "-s", "-m", "5",
             "http://%s:3000/items/1" % target["ip"]).stdout
    assert json.loads(out)["id"] == 1, out
    # ... and its own loopback is its pod's: the host's 127.11.x.y has no app
    r = sh("curl", "-s", "-m", "3", "http://%s:3000/items" % target["localhost"], check=False)
    assert r.returncode != 0, r.stdout
    out = sh("ip", "netns", "exec", target["netns"], "curl", "-s", "-m", "5",
             "http://%s:3000/items/1" % target["localhost"]).stdout
    assert json.loads(out)["id"] == 1

    # the gateway on the host's node port, through the sidecars
    status, _, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(
        request("/items/1")), 20, "200 through the gateway")
    assert json.loads(body)["id"] == 1

    # weftctl from the host: proxy-status, proxy-config, status (with the pod IPs)
    wait_for(lambda: proxy_status_synced(4), 20, "every proxy SYNCED")
    pc = weftctl("proxy-config", "cluster", "%s.%s" % (gw["name"], gw["namespace"]))
    assert pc.returncode == 0 and "catalog.istioinaction.svc.cluster.local" in pc.stdout, \
        pc.stdout + pc.stderr
    with urllib.request.urlopen("http://%s:15000/ready" % target["ip"], timeout=5) as r:
        assert r.status == 200
    st = weftctl("status", "--state", state, "-o", "json")
    assert st.returncode == 0, st.stdout + st.stderr
    doc = json.loads(st.stdout)
    assert doc["podNetwork"]["prefix"] == net["prefix"]
    ips = {p["podIP"] for p in doc["processes"] if p["kind"] != "pilot"}
    assert ips == {p["ip"] for p in pods}
    table = weftctl("status", "--state", state).stdout
    assert target["ip"] in table and net["prefix"] in table

    # down: no namespace, link or route left
    dn = weftctl("down", "--state", state, timeout=60)
    assert dn.returncode == 0, dn.stdout + dn.stderr
    assert_clean(net)
    assert not os.path.exists(os.path.join(state, "netns"))


def test_netns_down_after_supervisor_killed(tmp_path, mesh_state):
    need_netns()
    d = catalog_folder(tmp_path)
    state = mesh_state
    p = up(d, state)
    assert p.returncode == 0, "up failed:\n%s\n%s\n%s" % (p.stdout, p.stderr,
                                                          supervisor_log(state))
    mesh = mesh_json(state)
    net = mesh["podNetwork"]
    os.kill(mesh["supervisor"]["pid"], signal.SIGKILL)
    time.sleep(0.5)
    # the pods keep running in their namespaces without their supervisor
    assert len([n for n in netns_list() if n.startswith(net["prefix"])]) == 5
    st = weftctl("status", "--state", state)
    assert st.returncode == 3 and "supervisor not running" in st.stdout, st.stdout
    # a second up refuses while the first mesh's processes hold the ports
    again = up(d, state)
    assert again.returncode == 1, again.stdout + again.stderr
    # ... and, with pilot gone too, while processes still run in the pods' namespaces (their
    # pods would be cut off), changing nothing
    pilot = next(x for x in mesh["processes"] if x["kind"] == "pilot")
    os.kill(pilot["pid"], signal.SIGKILL)
    # gone with all its threads: a zombie leader may still have threads closing its sockets
    wait_for(lambda: (not os.path.exists("/proc/%d/status" % pilot["pid"]) or
                      "State:\tZ" in open("/proc/%d/status" % pilot["pid"]).read()) and
             not port_taken(15010) and not port_taken(15014), 5, "pilot gone")
    mesh = mesh_json(state)
    again = up(d, state)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "of an earlier run still has processes" in again.stderr, again.stderr
    assert "weftctl down --state %s" % state in again.stderr
    assert len([n for n in netns_list() if n.startswith(net["prefix"])]) == 5
    assert mesh_json(state)["processes"] == mesh["processes"]  # down still finds them
    dn = weftctl("down", "--state", state, timeout=60)
    assert dn.returncode == 0, dn.stdout + dn.stderr
    assert "removed the pod network the supervisor left behind" in dn.stdout, dn.stdout
    assert_clean(net)
    assert kill_leftovers(state) == []
    # and the mesh comes up again
    p = up(d, state)
    assert p.returncode == 0, "second up failed:\n%s\n%s\n%s" % (p.stdout, p.stderr,
                                                                 supervisor_log(state))
    wait_for(lambda: request("/items/1")[0] == 200, 20, "200 through the gateway")
    dn = weftctl("down", "--state", state, timeout=60)
    assert dn.returncode == 0
    assert_clean(net)


def test_netns_supervisor_killed_while_up_waits(tmp_path, mesh_state):
    """The supervisor dies while `up --detach` waits for the pods: up exits 1 and leaves
    nothing behind (no process of the run, no namespace, link or token)."""
    need_netns()
    d = catalog_folder(tmp_path)
    state = mesh_state
    cmd = [os.environ.get("WEFTCTL", os.path.join(ROOT, "build", "weftctl")), "up", str(d),
           "--detach", "--state", state, "--timeout", "60", "--pod-network", "netns"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def supervisor():
            try:
                m = mesh_json(state)
            except (OSError, ValueError):
                return None
            pid = m.get("supervisor", {}).get("pid")
            started = [x for x in m.get("processes", []) if x.get("pid")]
            return (pid, m) if pid and len(started) > 2 else None
        pid, _ = wait_for(supervisor, 20, "the supervisor's pid in mesh.json")
        os.kill(pid, signal.SIGKILL)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, out + err
    assert "the supervisor exited while starting" in err, err
    assert "cleaning up what this run started" in err, err
    mesh = mesh_json(state)
    assert len([x for x in mesh["processes"] if x.get("pid")]) > 2
    for proc in [x for x in mesh["processes"] if x.get("pid")]:
        assert not os.path.exists("/proc/%d" % proc["pid"]) or \
            "State:\tZ" in open("/proc/%d/status" % proc["pid"]).read(), proc
    assert [n for n in netns_list() if n.startswith(mesh["podNetwork"]["prefix"])] == []
    # nor a process the supervisor started without recording it (it dies with its namespace)
    def of_this_mesh():
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read().decode("utf-8", "replace")
                with open("/proc/%s/status" % pid) as f:
                    zombie = "State:\tZ" in f.read()
            except OSError:
                continue
            if state in cmd and not zombie and int(pid) != os.getpid():
                left.append(cmd.replace("\0", " ")[:200])
        return left
    wait_for(lambda: not of_this_mesh(), 5, "no process of this mesh")
    tokens = os.path.join(state, "tokens")
    assert not os.path.isdir(tokens) or not os.listdir(tokens), os.listdir(tokens)


def test_netns_status_names_a_leftover_pod_network(tmp_path, mesh_state):
    """Everything of a mesh killed with SIGKILL: nothing runs, but the namespaces stay;
    `status` says so (exit 3) and `down` removes them."""
    need_netns()
    d = catalog_folder(tmp_path)
    state = mesh_state
    p = up(d, state)
    assert p.returncode == 0, p.stdout + p.stderr
    mesh = mesh_json(state)
    os.kill(mesh["supervisor"]["pid"], signal.SIGKILL)
    for proc in mesh["processes"]:
        os.kill(proc["pid"], signal.SIGKILL)
    wait_for(lambda: all(not os.path.exists("/proc/%d/status" % x["pid"]) or
                         "State:\tZ" in open("/proc/%d/status" % x["pid"]).read()
                         for x in mesh["processes"]), 10, "every process gone")
    st = weftctl("status", "--state", state)
    assert st.returncode == 3, st.stdout + st.stderr
    assert "its pod network is still there (5 network namespaces)" in st.stdout, st.stdout
    js = json.loads(weftctl("status", "--state", state, "-o", "json").stdout)
    assert js["running"] is False and js["podNetworkLeft"] == 5, js
    dn = weftctl("down", "--state", state, timeout=60)
    assert dn.returncode == 0, dn.stdout + dn.stderr
    assert_clean(mesh["podNetwork"])
    assert weftctl("status", "--state", state).returncode == 0


def test_netns_capture_rules_and_proxy_uid(tmp_path):
    need_netns()
    if not shutil.which("iptables-save"):
        pytest.skip("--capture needs Debian's iptables package")
    d = catalog_folder(tmp_path)
    # the sidecars run as uid 1337: a state folder it cannot reach is refused, naming the file
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    p = up(d, str(closed / "state"), "--capture")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "uid 1337 (the proxy with --capture) cannot read %s/state/bootstrap/" % closed \
        in p.stderr, p.stderr
    net = mesh_json(str(closed / "state"))["podNetwork"]
    assert_clean(net)  # what up had made is gone again
    # one it can pass through (pytest's own folder is 0700)
    base = tempfile.mkdtemp(prefix="weft-netns-capture-", dir="/tmp")
    os.chmod(base, 0o711)
    try:
        capture_mesh(d, os.path.join(base, "state"))
    finally:
        weftctl("down", "--state", os.path.join(base, "state"), timeout=60)
        kill_leftovers(os.path.join(base, "state"))
        shutil.rmtree(base, ignore_errors=True)


def test_netns_capture_default_state_is_passable(tmp_path):
    """As root, `up --capture` without --state must not pick a state folder under root's home,
    which uid 1337 (the proxies) cannot pass through: it goes to /run/weft/<name>-<hash>, and
    `status DIR` / `down DIR` find it there."""
    need_netns()
    if not shutil.which("iptables-save"):
        pytest.skip("--capture needs Debian's iptables package")
    d = catalog_folder(tmp_path)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "XDG_STATE_HOME"}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(tmp_path / "rt"))

    def run(*args):
        return subprocess.run([WEFTCTL] + [str(a) for a in args], capture_output=True, text=True,
                              timeout=120, env=env)

    state = None
    try:
        p = run("up", d, "--detach", "--timeout", "60", "--pod-network", "netns", "--capture")
        st = run("status", d, "-o", "json")
        state = json.loads(st.stdout).get("state") if st.stdout.startswith("{") else None
        assert p.returncode == 0, "up failed:\n%s\n%s" % (p.stdout, p.stderr)
        assert state and state.startswith("/run/weft/catalog-"), st.stdout
        assert json.loads(st.stdout)["running"] is True
        assert (os.stat("/run/weft").st_mode & 0o777) == 0o711
        dn = run("down", d)
        assert dn.returncode == 0, dn.stdout + dn.stderr
        assert json.loads(run("status", d, "-o", "json").stdout)["running"] is False
    finally:
        if state:
            weftctl("down", "--state", state, timeout=60)
            kill_leftovers(state)
            shutil.rmtree(state, ignore_errors=True)


def capture_mesh(d, state):
    p = up(d, state, "--capture")
    assert p.returncode == 0, "up failed:\n%s\n%s\n%s" % (p.stdout, p.stderr,
                                                          supervisor_log(state))
    mesh = mesh_json(state)
    assert mesh["podNetwork"]["capture"] is True
    for proc in mesh["processes"]:
        if proc["kind"] not in ("proxy", "gateway"):
            continue
        pod = next(x for x in mesh["pods"] if x["name"] == proc["pod"])
        rules = sh("ip", "netns", "exec", pod["netns"], "iptables-save", "-t", "nat").stdout
        with open("/proc/%d/status" % proc["pid"]) as f:
            uid = next(l.split()[1] for l in f if l.startswith("Uid:"))
        if proc["kind"] == "proxy":  # a sidecar: Istio's rules, the proxy as 1337
            assert "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN" in rules, rules
            assert "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001" in rules, rules
            assert uid == "1337", proc
        else:  # the gateway has no istio-init
            assert "ISTIO_OUTPUT" not in rules
            assert uid == "0"
    # the host's own rules are untouched
    assert "ISTIO" not in sh("iptables-save", "-t", "nat").stdout
    net = mesh["podNetwork"]
    dn = weftctl("down", "--state", state, timeout=60)
    assert dn.returncode == 0, dn.stdout + dn.stderr
    assert_clean(net)


def test_netns_flags(tmp_path):
    p = weftctl("up", tmp_path, "--pod-network", "bridge")
    assert p.returncode == 64 and "want explicit, netns or auto" in p.stderr, p.stderr
    p = weftctl("up", tmp_path, "--capture")
    assert p.returncode == 64 and "--capture needs --pod-network netns" in p.stderr, p.stderr


def test_netns_refused_without_root(tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("runs weftctl as another user: needs root and setpriv")
    os.chmod(tmp_path, 0o755)
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
           os.environ.get("WEFTCTL") or os.path.join(ROOT, "build", "weftctl"),
           "up", str(tmp_path), "--pod-network", "netns"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "needs root (CAP_NET_ADMIN" in p.stderr and "--pod-network explicit" in p.stderr
    assert "no such" not in p.stderr.lower()  # refused before reading the folder
    # auto falls back to explicit with the reason (here it then fails on a folder that is
    # not there, before starting anything)
    cmd[-4:] = ["up", str(tmp_path / "missing"), "--pod-network", "auto"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    assert "note: pods run on loopback addresses (--pod-network explicit): --pod-network " \
        "netns needs root" in p.stderr, p.stderr
    assert "missing" in p.stderr and p.returncode == 1, p.stderr


def test_netns_refused_when_host_routes_pod_network(tmp_path):
    need_netns()
    link = "weftt%d" % (os.getpid() % 100000)
    sh("ip", "link", "add", link, "type", "veth", "peer", "name", link + "p")
    try:
        sh("ip", "addr", "add", "10.10.5.1/24", "dev", link)
        sh("ip", "link", "set", link + "p", "up")
        sh("ip", "link", "set", link, "up")
        d = catalog_folder(tmp_path)
        state = str(tmp_path / "state")
        p = up(d, state)
        assert p.returncode == 1, p.stdout + p.stderr
        assert "this host already routes into the pod network 10.10.0.0/16" in p.stderr, p.stderr
        assert "10.10.5.0/24 dev %s" % link in p.stderr, p.stderr
        assert_clean(mesh_json(state)["podNetwork"])
    finally:
        sh("ip", "link", "del", link, check=False)
