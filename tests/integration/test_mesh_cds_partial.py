"""A CDS update with one cluster the proxy cannot load is applied as Envoy's CdsApiHelper
applies it (source/common/upstream/cds_api_helper.cc): every other cluster of the update is
added or updated, the failing one keeps its previous version (or, new, is not added), and the
update is rejected with "Error adding/updating cluster(s) NAME: reason" (the NACK pilot shows in
/debug/syncz). Before, one such cluster failed the whole update on every proxy that received
it: a single DestinationRule with a missing certificate file left the mesh without new
clusters.

The catalog mesh of test_mesh_control_plane with a Service "extra". A DestinationRule for extra
with tls MUTUAL and a client certificate file that does not exist makes extra's cluster fail in
every proxy; a Service "extra2" added at the same time must still get its cluster, extra must
keep its previous cluster and catalog must keep serving.
"""
from meshfix import mesh, wait_for  # noqa: F401 (fixture)
from test_mesh_catalog import gateway_get
from test_mesh_control_plane import serving_mesh

BAD_DR = """apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: catalog-bad-tls, namespace: istioinaction}
spec:
  host: extra.istioinaction.svc.cluster.local
  trafficPolicy:
    tls:
      mode: MUTUAL
      clientCertificate: /nonexistent/weft-test/client.crt
      privateKey: /nonexistent/weft-test/client.key
      caCertificates: /nonexistent/weft-test/ca.crt
"""

SERVICE = """apiVersion: v1
kind: Service
metadata: {name: NAME, namespace: istioinaction}
spec:
  selector: {app: NAME}
  ports:
  - {name: http, port: 80, targetPort: 8080}
"""

EXTRA = "outbound|80||extra.istioinaction.svc.cluster.local"
EXTRA2 = "outbound|80||extra2.istioinaction.svc.cluster.local"


def cluster_names(pod):
    status, _, body = pod.admin("/clusters")
    assert status == 200, body
    return {l.split("::")[0] for l in body.decode().splitlines() if "::" in l}


def test_failing_cluster_is_left_out_and_the_rest_applies(mesh):
    gw, pods = serving_mesh(mesh)
    # a sidecar on the delta protocol (DeltaAggregatedResources) applies it the same way
    dp = mesh.add_pod("catalog-6cf4b97d-delta", "istioinaction",
                      {"app": "catalog", "version": "v1"}, app_port=3000, delta=True)
    mesh.wait_ready(dp)
    mesh.write_config("extra.yaml", SERVICE.replace("NAME", "extra"))
    wait_for(lambda: EXTRA in cluster_names(gw), what="extra's cluster on the gateway")
    mesh.write_config("bad-dr.yaml", BAD_DR)
    mesh.write_config("extra2.yaml", SERVICE.replace("NAME", "extra2"))

    def nacked():
        status, sync = mesh.pilot_get("/debug/syncz")
        assert status == 200
        row = [e for e in sync if e.get("proxy") == gw.node_id][0]
        err = row.get("cluster_error") or ""
        return "Error adding/updating cluster(s) " + EXTRA in err and row

    row = wait_for(nacked, timeout=20, what="extra's cluster failure reported to pilot")
    assert ": unable to read file: /nonexistent/weft-test/" in row["cluster_error"], row
    # the rest of the update applied: extra2's cluster is there, on the gateway and a sidecar
    for p in (gw, pods[0], dp):
        wait_for(lambda: EXTRA2 in cluster_names(p), what="the new cluster on " + p.name)
        # extra keeps its previous (plaintext) cluster
        assert EXTRA in cluster_names(p)

    def delta_nacked():
        status, sync = mesh.pilot_get("/debug/syncz")
        row = [e for e in sync if e.get("proxy") == dp.node_id][0]
        return "Error adding/updating cluster(s) " + EXTRA in (row.get("cluster_error") or "")

    wait_for(delta_nacked, what="the delta sidecar's NACK")
    # catalog keeps serving
    status, _, body = gw.admin("/config_dump?resource=dynamic_active_clusters")
    assert status == 200
    assert b"/nonexistent/weft-test" not in body
    for _ in range(5):
        assert gateway_get(gw, "/healthz")[0] == 200
    # without the DestinationRule the next CDS update is accepted: no error left
    mesh.remove_config("bad-dr.yaml")

    def clean():
        status, sync = mesh.pilot_get("/debug/syncz")
        row = [e for e in sync if e.get("proxy") == gw.node_id][0]
        return not row.get("cluster_error") and row.get("cluster_status") == "SYNCED"

    wait_for(clean, timeout=20, what="the next CDS update accepted")
