"""istiod's incremental EDS push (pilot/eds_update.h, ads.h), with real processes: weft-pilot on
a config folder, weft-app backends of two Services behind weft-proxy sidecars, and a client
sidecar whose xDS stream goes through a relay that decodes every DiscoveryResponse pilot sends
it (xds_relay.py).

- A backend of Service b moves (a new Pod, then the old one deleted): the client's stream gets
  EDS responses only, carrying b's ClusterLoadAssignment only (never a's, never CDS, LDS or
  RDS), /debug/push_status shows the push as incremental with b as the updated service,
  pilot_xds_pushes{type="cds"|"lds"|"rds"} do not move, /debug/syncz stays SYNCED, and the
  client's requests to b reach the new backend (the proxy's config_dump has its address) while
  a keeps answering.
- A DestinationRule change is still a full push: the client gets a CDS response.
Both with a SotW (ADS) and a delta (DELTA_GRPC) client sidecar.

Runs the local mesh on loopback addresses: like the other mesh tests, run it in its own network
namespace when other workers share the machine (`unshare -n sh -c 'ip link set lo up && ...'`).
"""
import json
import re

import pytest

from meshfix import mesh, wait_for  # noqa: F401 (fixture)
from xds_relay import XdsRelay

NS = "shop"
HOST = {s: "%s.%s.svc.cluster.local" % (s, NS) for s in ("a", "b")}
CLA = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

SERVICES = """\
apiVersion: v1
kind: Service
metadata: {name: a, namespace: shop}
spec:
  selector: {app: a}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: shop}
spec:
  selector: {app: b}
  ports: [{name: http, port: 80, targetPort: 8080}]
"""

DR_B = """\
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: b, namespace: shop}
spec:
  host: b.shop.svc.cluster.local
  trafficPolicy:
    connectionPool:
      tcp: {maxConnections: %d}
"""


def metric(mesh, name):
    status, text = mesh.pilot_get("/metrics")
    assert status == 200, text
    m = re.search(r"^%s (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else 0


def pushes(mesh):
    return {t: metric(mesh, 'pilot_xds_pushes{type="%s"}' % t) for t in ("cds", "lds", "rds")}


def wait_connected_synced(mesh):
    """Every connected proxy SYNCED (or not watching) for every type: the deleted Pod's proxy,
    listed a while as disconnected, may have gone with a push unanswered."""
    def synced():
        status, sync = mesh.pilot_get("/debug/syncz")
        live = [e for e in sync if e.get("connected")] if status == 200 else []
        ids = {p.node_id for p in mesh.pods if p.proxy}
        return ids <= {e.get("proxy") for e in live} and all(
            e.get(t + "_status") in ("SYNCED", "IGNORED", None)
            for e in live for t in ("cluster", "listener", "route", "endpoint"))
    wait_for(synced, timeout=20, what="every connected proxy SYNCED")


def request_delta(responses):
    """Whether these are DeltaDiscoveryResponses (system_version_info, resources wrapped)."""
    return any("system_version_info" in m for m in responses)


def answering_pod(client, svc):
    status, headers, _ = client.request_local(80, "/healthz", host=svc)
    return headers.get("x-weft-pod") if status == 200 else status


def cla_hosts(responses):
    """The hosts of the ClusterLoadAssignments in responses (cluster outbound|port|subset|host)."""
    return {r.get("resource", r)["cluster_name"].split("|")[3] for m in responses
            for r in m.get("resources", []) if m.get("type_url") == CLA}


@pytest.fixture(params=["sotw", "delta"])
def relay_mesh(mesh, request):
    mesh.write_config("services.yaml", SERVICES)
    mesh.start_pilot(default_ns=NS)
    a1 = mesh.add_pod("a-1", NS, {"app": "a"}, app_port=8080)
    b1 = mesh.add_pod("b-1", NS, {"app": "b"}, app_port=8080)
    relay = XdsRelay(mesh.grpc_port)
    real = mesh.grpc_port
    mesh.grpc_port = relay.port  # the client's bootstrap points at the relay
    try:
        client = mesh.add_pod("client-1", NS, {"app": "client"}, delta=request.param == "delta")
    finally:
        mesh.grpc_port = real
    for p in (a1, b1, client):
        mesh.wait_ready(p)
    wait_for(lambda: answering_pod(client, "a") == "a-1", what="a-1 through the client sidecar")
    wait_for(lambda: answering_pod(client, "b") == "b-1", what="b-1 through the client sidecar")
    mesh.wait_synced()
    yield mesh, client, relay, b1
    relay.close()


def test_endpoint_move_is_an_eds_only_push_of_the_changed_cluster(relay_mesh):
    mesh, client, relay, b1 = relay_mesh
    before = pushes(mesh)
    n = len(relay.responses())
    assert cla_hosts(relay.responses()) == {HOST["a"], HOST["b"]}  # the initial EDS: both

    b2 = mesh.add_pod("b-2", NS, {"app": "b"}, app_port=8080)
    mesh.wait_ready(b2)
    wait_for(lambda: answering_pod(client, "b") == "b-2", timeout=20,
             what="b-2 as an endpoint of b at the client")
    mesh.wait_synced()
    # b-2's own proxy is connected and synced: from here on, only the deletion of b-1
    before = pushes(mesh)
    mesh.remove_pod(b1)
    wait_for(lambda: all(answering_pod(client, "b") == "b-2" for _ in range(10)), timeout=20,
             what="b served by b-2 only")
    assert answering_pod(client, "a") == "a-1"
    wait_connected_synced(mesh)

    new = relay.responses()[n:]
    types = [m.get("type_url") for m in new]
    assert new and set(types) == {CLA}, types  # EDS only: no CDS, LDS, RDS re-send
    assert cla_hosts(new) == {HOST["b"]}, [m.get("resources") for m in new]
    assert pushes(mesh) == before  # no CDS, LDS or RDS sent to anyone for the deletion
    # the client sidecar's EDS has the new backend's address, no longer the old one's
    status, _, body = client.admin("/config_dump?include_eds")
    text = body.decode()
    assert status == 200 and '"%s"' % b2.ip in text, text[:2000]
    assert '"%s"' % b1.ip not in text

    status, ps = mesh.pilot_get("/debug/push_status")
    assert status == 200, ps
    assert ps["change"] == "ENDPOINTS" and ps["full"] is False, ps
    assert ps["updated_services"] == [HOST["b"]], ps
    assert ps["changed"] == ["Pod/shop/b-1"], ps
    assert ps["pushed_proxies"] >= 1, ps
    log = mesh.pilot.stderr_text()
    assert "XDS: Incremental Pushing" in log
    assert re.search(r"Push debounce stable\[\d+\] 1 for config Pod/shop/b-1: .*full=false", log), \
        log[-3000:]
    if request_delta(new):  # a delta stream: nothing removed, b's assignment only
        assert not any(m.get("removed_resources") for m in new), new


def test_destination_rule_change_is_still_a_full_push(relay_mesh):
    mesh, client, relay, _ = relay_mesh
    n = len(relay.responses())
    before = pushes(mesh)
    mesh.write_config("dr-b.yaml", DR_B % 10)
    wait_for(lambda: CDS in [m.get("type_url") for m in relay.responses()[n:]], timeout=20,
             what="a CDS response after the DestinationRule")
    status, ps = mesh.pilot_get("/debug/push_status")
    assert ps["full"] is True and ps["change"] == "FULL" and ps["updated_services"] == [], ps
    assert pushes(mesh)["cds"] > before["cds"]
    mesh.wait_synced()
    assert answering_pod(client, "b") == "b-1"
