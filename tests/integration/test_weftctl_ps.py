"""`weftctl proxy-status` against a live local mesh (issue 6 part 2): the catalog example's
gateway and three sidecars SYNCED with ages, a stopped proxy DISCONNECTED, a proxy that rejects
LDS in ERROR, `ps <pod>` comparing pilot's view with the proxy's /config_dump, `-o json`, and
the errors (pilot unreachable names the address, unknown pod).
"""
import json
import os
import re
import socket
import subprocess
import urllib.request

from meshfix import mesh, wait_for  # noqa: F401 (fixture)
from procs import stop_process
from test_mesh_catalog import catalog_mesh

WEFTCTL = os.path.abspath(os.environ.get("WEFTCTL") or "build/weftctl")
HEADER = ["NAME", "CLUSTER", "CDS", "LDS", "EDS", "RDS", "ECDS", "ISTIOD", "VERSION"]


def weftctl(*args, env=None):
    p = subprocess.run([WEFTCTL] + list(args), capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def ps(mesh, *args):
    return weftctl("proxy-status", "--pilot", "127.0.0.1:%d" % mesh.mon_port, *args)


def table(out):
    """Rows as dicts keyed by the header (cells are separated by 2+ spaces)."""
    lines = out.rstrip("\n").split("\n")
    assert lines[0].split() == HEADER, out
    rows = {}
    for line in lines[1:]:
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(HEADER), line
        rows[cells[0]] = dict(zip(HEADER, cells))
    return rows


def test_proxy_status_synced_disconnected_and_error(mesh):
    gw, pods = catalog_mesh(mesh)
    mesh.wait_synced()
    rc, out, err = ps(mesh)
    assert rc == 0, err
    rows = table(out)
    for p in [gw] + pods:
        row = rows[p.node_id]
        assert re.fullmatch(r"SYNCED \(\d+s\)", row["CDS"]), row
        assert re.fullmatch(r"SYNCED \(\d+s\)", row["LDS"]), row
        assert row["ECDS"] == "IGNORED", row
        assert row["ISTIOD"] == "weft-pilot" and row["VERSION"] == "weft", row
    assert rows[pods[0].node_id]["CLUSTER"] == "Kubernetes"
    # -n keeps one namespace
    rc, out, _ = ps(mesh, "-n", "istio-system")
    assert rc == 0 and list(table(out)) == [gw.node_id], out

    # a proxy that rejects LDS shows ERROR
    bad = mesh.add_pod("catalog-v2-7b9c8d-rj3ct", "istioinaction",
                       {"app": "catalog", "version": "v2"},
                       env={"WEFT_PROXY_TEST_REJECT_TYPE": "LDS"})

    def error_row():
        rc, out, _ = ps(mesh)
        row = table(out).get(bad.node_id) if rc == 0 else None
        return row if row and row["LDS"].startswith("ERROR") else None
    row = wait_for(error_row, what="ERROR for the proxy that rejects LDS")
    assert re.fullmatch(r"ERROR \(\d+s\)", row["LDS"]), row
    assert row["CDS"].startswith("SYNCED"), row
    rc, out, _ = ps(mesh, "-o", "json")
    assert rc == 0
    doc = json.loads(out)
    cc = [c for c in doc["resources"] if c["node"]["id"] == bad.node_id][0]
    lds = [g for g in cc["genericXdsConfigs"] if g["typeUrl"].endswith("Listener")][0]
    assert lds["configStatus"] == "ERROR"
    assert "WEFT_PROXY_TEST_REJECT_TYPE" in lds["errorState"]["details"]
    # per type: the nonces and versions sent and acked, so a script can tell STALE from SYNCED
    # (the new pod's push reaches the gateway too: wait for its acknowledgement)
    def gateway_synced():
        rc, out, _ = ps(mesh, "-o", "json")
        d = json.loads(out) if rc == 0 else {"resources": []}
        c = [x for x in d["resources"] if x["node"]["id"] == gw.node_id]
        ok = c and all(g["configStatus"] == "SYNCED" for g in c[0]["genericXdsConfigs"])
        return c[0] if ok else None
    good = wait_for(gateway_synced, what="the gateway SYNCED after the new pod's push")
    for g in good["genericXdsConfigs"]:
        assert g["configStatus"] == "SYNCED", g
        assert g["sent"] == g["acked"] and g["versionInfo"] == g["versionSent"], g
        assert g["sentTime"] and g["lastUpdated"], g
    assert lds["sent"] != lds.get("acked"), lds  # the rejected push is not acknowledged

    # a stopped proxy shows DISCONNECTED with the time since
    gone = pods[2]
    stop_process(gone.proxy)
    gone.proxy = None

    def disconnected_row():
        rc, out, _ = ps(mesh)
        row = table(out).get(gone.node_id) if rc == 0 else None
        return row if row and row["CDS"].startswith("DISCONNECTED") else None
    row = wait_for(disconnected_row, what="DISCONNECTED row for the stopped proxy")
    print(ps(mesh)[1])  # shown with pytest -s
    assert re.fullmatch(r"DISCONNECTED \(\d+s\)", row["CDS"]), row
    # --hide-disconnected: istioctl's view, connected proxies only
    rc, out, _ = ps(mesh, "--hide-disconnected")
    assert rc == 0 and gone.node_id not in table(out) and gw.node_id in table(out), out
    rc, out, _ = ps(mesh, "--hide-disconnected", "-o", "json")
    ids = [c["node"]["id"] for c in json.loads(out)["resources"]]
    assert gone.node_id not in ids and gw.node_id in ids, ids
    bad.proxy.terminate()


def test_proxy_status_pod_compares_config(mesh):
    gw, pods = catalog_mesh(mesh)
    mesh.wait_synced()
    rc, out, err = ps(mesh, pods[0].node_id)
    assert rc == 0, err
    assert "Clusters Match" in out, out
    assert "Listeners Match" in out, out
    assert "Routes Match" in out, out
    # POD -n NS and deploy/NAME forms
    rc, out, err = ps(mesh, pods[0].name, "-n", "istioinaction")
    assert rc == 0 and "Clusters Match" in out, err
    rc, out, err = ps(mesh, "deploy/catalog", "-n", "istioinaction")
    assert rc == 0 and "Clusters Match" in out, err
    # --file: the Envoy side from a saved dump with a cluster removed
    with urllib.request.urlopen("http://%s:%d/config_dump" % (pods[0].ip, pods[0].admin_port),
                                timeout=5) as r:
        dump = json.loads(r.read())
    for c in dump["configs"]:
        if c.get("@type", "").endswith("ClustersConfigDump"):
            c["dynamic_active_clusters"] = c.get("dynamic_active_clusters", [])[1:]
    path = os.path.join(mesh.dir, "dump.json")
    with open(path, "w") as f:
        json.dump(dump, f)
    rc, out, err = ps(mesh, pods[0].node_id, "--file", path)
    assert rc == 0, err
    assert "Clusters Don't Match" in out and "--- Istiod Clusters" in out, out
    assert "+++ Envoy Clusters" in out and "Listeners Match" in out, out
    # unknown pod
    rc, out, err = ps(mesh, "nope.istioinaction")
    assert rc == 1 and "pod nope not found in namespace istioinaction" in err, err
    # a proxy that does not answer
    stop_process(pods[1].proxy)
    pods[1].proxy = None
    rc, out, err = ps(mesh, pods[1].node_id)
    assert rc == 1 and "does not answer" in err, err


def test_proxy_status_pilot_unreachable_names_the_address():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    addr = "127.0.0.1:%d" % port
    rc, out, err = weftctl("proxy-status", "--pilot", addr)
    assert rc == 1, (out, err)
    assert "cannot reach weft-pilot at %s" % addr in err, err
    rc, out, err = weftctl("ps", "x.default", "--pilot", addr)
    assert rc == 1 and addr in err, err
    rc, out, err = weftctl("proxy-status", "-o", "bogus")
    assert rc == 64 and 'output format "bogus" not supported' in err, err
