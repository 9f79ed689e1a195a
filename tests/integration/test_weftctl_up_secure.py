"""The local mesh's proxies reach istiod's secure port for xDS, as Istio's sidecars do
(docs/local-mesh.md): each proxy's bootstrap has the xds-grpc cluster on 127.0.0.1:15012 with
an UpstreamTlsContext (trusted_ca = the root the supervisor syncs for its namespace,
STATE/roots/<ns>/root-cert.pem; SAN and SNI istiod.istio-system.svc; ALPN h2), its stream
carries the pod's token and pilot authenticates it (XDS_AUTH): every proxy SYNCED, pilot logs no
authentication failure, and the plaintext 15010 still serves (a tool's ADS stream).

When the mesh root changes (a plug-in cacerts Secret added to the folder) the proxies stay
SYNCED on their open streams, the root files follow pilot's new root, and after pilot restarts
(killed; the supervisor starts it again, now serving a certificate of the new CA) every proxy
reads its new root file and is SYNCED again.

Runs the local mesh: only inside a network namespace of its own (unshare -n), like the other
test_weftctl_up* suites.
"""
import json
import os
import signal

import pytest

from test_weftctl_up import (book_folder, kill_leftovers, need_fixed_ports, proxy_status_synced,
                             supervisor_log, wait_for, weftctl)
from procs import CRASH_MARKERS
from test_mesh_reports_mtls import plugin_root

grpc = pytest.importorskip("grpc")


def ads_over_plaintext(node_id):
    """One SotW request for clusters on 127.0.0.1:15010, the unauthenticated port: the
    response's resources (a tool's view, as istioctl's plaintext xDS clients get)."""
    with grpc.insecure_channel("127.0.0.1:15010", options=[("grpc.enable_http_proxy", 0)]) as ch:
        call = ch.stream_stream(
            "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
            request_serializer=lambda m: m, response_deserializer=lambda b: b)
        req = json.dumps({"node": {"id": node_id},
                          "type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster"})
        it = call(iter([req.encode()]), timeout=10)
        return json.loads(next(it))


def mesh_json(state):
    with open(os.path.join(state, "mesh.json")) as f:
        return json.load(f)


def test_proxies_use_the_secure_port_and_follow_the_root(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    state = str(tmp_path / "state")
    rt = tmp_path / "run"
    rt.mkdir()
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", runtime_dir=rt)
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        assert "xDS 127.0.0.1:15012 (TLS" in up.stdout, up.stdout
        mesh = mesh_json(state)
        pods = mesh["pods"]
        assert len(pods) == 4
        for p in pods:
            proxy = next(x for x in mesh["processes"] if x["name"] == p["name"] + ".proxy")
            argv = proxy["argv"]
            with open(argv[argv.index("-c") + 1]) as f:
                bs = json.load(f)
            xds = next(c for c in bs["static_resources"]["clusters"] if c["name"] == "xds-grpc")
            sa = xds["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"][
                "address"]["socket_address"]
            assert (sa["address"], sa["port_value"]) == ("127.0.0.1", 15012), xds
            tc = xds["transport_socket"]["typed_config"]
            assert tc["sni"] == "istiod.istio-system.svc"
            ctx = tc["common_tls_context"]
            assert ctx["alpn_protocols"] == ["h2"]
            assert ctx["validation_context"]["trusted_ca"]["filename"] == os.path.join(
                state, "roots", p["namespace"], "root-cert.pem")
            assert ctx["validation_context"]["match_typed_subject_alt_names"] == [
                {"san_type": "DNS", "matcher": {"exact": "istiod.istio-system.svc"}}]
        wait_for(lambda: proxy_status_synced(4), 30, "every proxy SYNCED over 15012")
        pilot = next(x for x in mesh["processes"] if x["kind"] == "pilot")
        with open(pilot["log"]) as f:
            log = f.read()
        assert "Failed to authenticate" not in log and "Unauthorized XDS" not in log, log[-3000:]

        # a plug-in CA: the open streams stay SYNCED, the root files follow pilot's root
        plug = tmp_path / "plugin"
        plug.mkdir()
        (d / "cacerts.json").write_text(plugin_root(str(plug)))
        new_root = (plug / "root-cert.pem").read_text()
        namespaces = {p["namespace"] for p in pods}

        def roots_follow():
            for ns in namespaces:
                with open(os.path.join(state, "roots", ns, "root-cert.pem")) as f:
                    if f.read().strip() != new_root.strip():
                        return False
            return True
        wait_for(roots_follow, 30, "the root files to hold the plug-in root")
        # the Secret is a config change: its push is acknowledged on the streams already open
        wait_for(lambda: proxy_status_synced(4), 20, "every proxy SYNCED after the new root")

        # pilot restarts with the new CA: every proxy reconnects with its new root file
        pid = int(next(x for x in mesh_json(state)["processes"] if x["kind"] == "pilot")["pid"])
        os.kill(pid, signal.SIGKILL)

        def restarted():
            now = next(x for x in mesh_json(state)["processes"] if x["kind"] == "pilot")
            return now.get("pid") and int(now["pid"]) != pid and now.get("state") == "running"
        wait_for(restarted, 30, "the supervisor to restart pilot")
        wait_for(lambda: proxy_status_synced(4), 60, "every proxy SYNCED again after the restart")
        pilot = next(x for x in mesh_json(state)["processes"] if x["kind"] == "pilot")
        with open(pilot["log"]) as f:
            log = f.read()
        assert "Failed to authenticate" not in log, log[-3000:]
        # istiod's plaintext port still serves, unauthenticated (last: pilot then lists this
        # tool's stream among the proxies)
        gw = next(p for p in pods if p["gateway"])
        resp = ads_over_plaintext("router~%s~%s.%s~%s.svc.cluster.local" % (
            gw["ip"], "tool", gw["namespace"], gw["namespace"]))
        assert resp["resources"], resp
    finally:
        down = weftctl("down", "--state", state, timeout=60, runtime_dir=rt)
        left = kill_leftovers(state)
    assert down.returncode == 0, down.stderr
    assert not left, left
    logs = os.path.join(state, "logs")
    for name in os.listdir(logs):
        with open(os.path.join(logs, name), errors="replace") as f:
            text = f.read()
        assert not any(m in text for m in CRASH_MARKERS), (name, text[-3000:])
