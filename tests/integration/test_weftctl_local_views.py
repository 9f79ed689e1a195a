"""What weftctl shows about a mesh `weftctl up` runs (issue 15 items 7 and 9), on the book's
catalog example (examples/catalog):

- `describe pod` / `describe svc` name the URL a user reaches, the gateway's node port
  http://127.0.0.1:30000 (not the gateway pod's IP with the Service port), and `describe pod`
  the pod revision `default` as istioctl prints it for an injected pod;
- `pc bootstrap -o short` gives the proxy's version in Envoy's format
  (<x.y.z>/<Clean|Modified>/<RELEASE|DEBUG>[/<ssl>]), not `0.0.0`;
- `pc secret`: a sidecar (its PERMISSIVE inbound chain, its auto-mTLS clusters) and the gateway
  (auto mTLS to the sidecars) hold `default` and `ROOTCA`, ACTIVE once the pod's token got its
  certificate from pilot's CA (-o json: Envoy's SecretsConfigDump);
- `ps --hide-disconnected` and `ps -o json` with the per-type sync fields.

The local mesh binds fixed ports (15010, 15012, 15014, 30000): the test skips when one is taken, and
always runs `down` and then kills, by PID, anything mesh.json still lists.
"""
import json
import os
import re
import shutil

from test_weftctl_up import ROOT, kill_leftovers, need_fixed_ports, proxy_status_synced, \
    supervisor_log, wait_for, weftctl


def test_views_of_a_local_mesh(tmp_path):
    need_fixed_ports()
    d = tmp_path / "catalog"
    shutil.copytree(os.path.join(ROOT, "examples", "catalog"), d)
    state, rt = str(tmp_path / "state"), tmp_path / "run"
    rt.mkdir()
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", runtime_dir=rt)
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        with open(os.path.join(state, "mesh.json")) as f:
            mesh = json.load(f)
        wait_for(lambda: proxy_status_synced(len(mesh["pods"])), 20, "every proxy SYNCED")
        gw = "%s.%s" % (mesh["gateway"]["pod"], mesh["gateway"]["namespace"])
        pod = next(p for p in mesh["pods"] if not p["gateway"])

        r = weftctl("describe", "pod", pod["name"], "-n", pod["namespace"])
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("Pod: %s\n   Pod Revision: default\n" % pod["name"]), r.stdout
        assert "Exposed on Ingress Gateway http://127.0.0.1:30000\n" in r.stdout, r.stdout
        r = weftctl("describe", "svc", "catalog", "-n", "istioinaction")
        assert r.returncode == 0, r.stderr
        assert "Exposed on Ingress Gateway http://127.0.0.1:30000\n" in r.stdout, r.stdout

        r = weftctl("pc", "bootstrap", gw, "-o", "short")
        assert r.returncode == 0, r.stderr
        assert re.search(r"^Envoy Version: +\d+\.\d+\.\d+/(Clean|Modified)/(RELEASE|DEBUG)"
                         r"(/\S+)?$", r.stdout, re.M), r.stdout

        # every proxy's token gets its certificate from pilot's CA: default and ROOTCA turn
        # ACTIVE on the sidecars and on the gateway (it talks mTLS to the sidecars)
        for who in (gw, "%s.%s" % (pod["name"], pod["namespace"])):
            wait_for(lambda: secrets_active(who), 30, "ACTIVE secrets on " + who)
        r = weftctl("pc", "secret", gw, "-o", "json")
        assert r.returncode == 0, r.stderr
        names = sorted(s["name"] for s in json.loads(r.stdout)["dynamicActiveSecrets"])
        assert names == ["ROOTCA", "default"], r.stdout

        r = weftctl("ps", "--hide-disconnected")
        assert r.returncode == 0 and len(r.stdout.splitlines()) == 1 + len(mesh["pods"])
        r = weftctl("ps", "-o", "json")
        for cc in json.loads(r.stdout)["resources"]:
            for g in cc["genericXdsConfigs"]:
                assert g["configStatus"] == "SYNCED", g
                assert g["sent"] == g["acked"] and g["versionInfo"] == g["versionSent"], g
    finally:
        weftctl("down", "--state", state, timeout=60)
        left = kill_leftovers(state)
    assert not left, "processes left running after down: %s" % left


def secrets_active(who):
    """True when `pc secret WHO` lists default and ROOTCA, both ACTIVE with a valid cert."""
    r = weftctl("pc", "secret", who)
    assert r.returncode == 0, r.stderr
    rows = {ln.split()[0]: ln.split() for ln in r.stdout.splitlines()[1:] if ln.strip()}
    if sorted(rows) != ["ROOTCA", "default"]:
        return False
    return rows["default"][3:5] == ["ACTIVE", "true"] and rows["ROOTCA"][2:4] == ["ACTIVE",
                                                                                  "true"]
