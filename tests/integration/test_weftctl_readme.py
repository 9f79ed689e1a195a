"""The README's "What runs today" block runs as written, top to bottom (issue 15 item 9).

The block is read from README.md itself (so the test follows the README, not a copy): the
`make` lines are left out (the build is this test's input; fuzz and benchmarks have their own
targets), `build/` becomes the directory of the programs under test and `../shared` the shared
data. Every command must exit as its comment says (analyze of the broken subsets 79, the rest
0) and print what the comments promise: 200 then 503 through the standalone proxy, the
no_cluster counter, pilot's registry, the local mesh answering 503 on the node port, and
`down` stopping it. Needs root (the local mesh binds port 80 on pod loopback addresses) and the
fixed ports free: it runs in a network namespace of its own (`unshare -n`, loopback up), so
the fixed ports of other tests running at the same time do not matter; without one, it needs
them free. Cleans up every process it starts.
"""
import os
import re
import subprocess

import pytest

from conftest import ROOT, shared_path, weftctl_path
from test_weftctl_up import port_taken

PORTS = (8081, 10000, 15000, 15010, 15012, 15014, 30000)


def readme_commands():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("What runs today:")
    block = text[text.index("```sh\n", start) + 6:]
    block = block[:block.index("```")]
    lines, cur = [], ""
    for raw in block.splitlines():
        cur += raw
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        lines.append(cur)
        cur = ""
    out = []
    for l in lines:
        l = re.sub(r"\s+#\s.*$", "", l).strip()
        if not l or l.startswith("#") or l.startswith("make"):
            continue
        out.append(l)
    return out


def test_readme_block_runs_as_written(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the local mesh binds port 80 on pod loopback addresses: needs root")
    private = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"],
                             capture_output=True).returncode == 0
    taken = [p for p in PORTS if port_taken(p)]
    if taken and not private:
        pytest.skip("ports %s are in use (another mesh or proxy is running?)" % taken)
    bindir = os.path.dirname(weftctl_path())
    cmds = readme_commands()
    assert any(c.startswith("build/weftctl up") for c in cmds), cmds
    script = ["set -u",
              "trap 'kill $(jobs -p) 2>/dev/null; %s/weftctl down examples/catalog "
              ">/dev/null 2>&1' EXIT" % bindir]
    for i, c in enumerate(cmds):
        c = re.sub(r"(?<![\w/.])build/", bindir + "/", c)
        c = c.replace("../shared", shared_path())
        if c.endswith("&"):
            script.append(c)
        else:
            script.append('%s; echo "@@rc $? %d"' % (c, i))
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_RUNTIME_DIR=str(tmp_path / "run"))
    os.makedirs(env["XDG_RUNTIME_DIR"])
    # after the block: nothing may still listen on its ports
    script.append("for p in %s; do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && "
                  "echo \"@@listening $p\"; done; true" % " ".join(map(str, PORTS)))
    argv = ["bash", "-c", "\n".join(script)]
    if private:
        argv = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"] + argv
    p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout
    rcs = {int(i): int(rc) for rc, i in re.findall(r"^@@rc (\d+) (\d+)$", out, re.M)}
    assert len(rcs) == sum(1 for c in cmds if not c.endswith("&")), (out, p.stderr)
    for i, c in enumerate(cmds):
        if c.endswith("&"):
            continue
        want = 79 if c.startswith("build/weftctl analyze") else 0
        assert rcs[i] == want, "%r exited %d, want %d\nstdout:\n%s\nstderr:\n%s" % (
            c, rcs[i], want, out, p.stderr)
    assert "command not found" not in p.stderr and "No such file" not in p.stderr, p.stderr
    assert out.count("Referenced host+subset in destinationrule not found") >= 2, out
    assert re.search(r"^200\n@@rc 0 \d+\n503\n", out, re.M), out
    assert re.search(r"http\.ingress_http\.no_cluster: 1$", out, re.M), out
    assert "catalog.istioinaction.svc.cluster.local" in out
    # the local mesh's gateway: 503 NC until a DestinationRule defines the subsets
    after_up = out[out.index("http://127.0.0.1:30000"):]
    assert re.search(r"^503$", after_up, re.M), after_up
    assert "stopped" in after_up, after_up
    # (the trap's `down` runs after this check: up's processes must be gone after the README's)
    assert "@@listening" not in out, "a process outlived the README block:\n" + out
