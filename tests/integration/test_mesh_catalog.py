"""The book's catalog example through weft-pilot, an ingress gateway and sidecars (issue 5
acceptance): a VirtualService routing to subsets no DestinationRule defines answers 503 NC
cluster_not_found at the gateway; adding the DestinationRule gives 200s split 20/80; every
proxy is SYNCED; a weight change reaches every proxy; an invalid file leaves traffic alone and
is reported; a resource the proxy rejects shows ERROR with its message.
"""
import collections
import json
import os
import time

from meshfix import BOOK, GATEWAY_SERVICE, mesh, wait_for  # noqa: F401 (fixture)

CATALOG_HOST = "catalog.istioinaction.io"
DR = os.path.join(BOOK, "ch10", "catalog-destinationrule-v1-v2.yaml")
VS = os.path.join(BOOK, "ch10", "catalog-virtualservice-subsets-v1-v2.yaml")


def catalog_mesh(mesh, gw_env=None, gw_args=()):
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
              "ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml"):
        mesh.add_config(os.path.join(BOOK, f))
    mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns="istioinaction")
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"},
                      kind="router", env=gw_env, proxy_args=gw_args)
    pods = [mesh.add_pod("catalog-6cf4b97d-abcde", "istioinaction",
                         {"app": "catalog", "version": "v1"}, app_port=3000)]
    for suffix in ("x7k2p", "q9m4z"):
        pods.append(mesh.add_pod("catalog-v2-7b9c8d-" + suffix, "istioinaction",
                                 {"app": "catalog", "version": "v2"}, app_port=3000))
    for p in [gw] + pods:
        mesh.wait_ready(p)
    return gw, pods


def gateway_get(gw, path="/items"):
    return gw.request(8080, path, host=CATALOG_HOST)


def split(gw, n):
    """n requests through the gateway: Counter of x-weft-pod per 200, and other statuses."""
    pods, other = collections.Counter(), collections.Counter()
    for _ in range(n):
        status, headers, _ = gateway_get(gw, "/healthz")
        if status == 200:
            pods[headers.get("x-weft-pod")] += 1
        else:
            other[status] += 1
    return pods, other


def test_undefined_subsets_are_nc_then_destinationrule_splits_20_80(mesh):
    gw, pods = catalog_mesh(mesh)
    status, headers, body = gateway_get(gw)
    assert status == 503, body
    assert body == b"", body  # Envoy's NC local reply has no body
    mesh.wait_synced()
    t0 = time.monotonic()
    mesh.add_config(DR)
    wait_for(lambda: gateway_get(gw, "/healthz")[0] == 200, timeout=15,
             what="the DestinationRule to reach the gateway")
    print("DestinationRule applied -> gateway serving in %.0f ms" % ((time.monotonic() - t0) * 1000))
    counts, other = split(gw, 2000)
    assert not other, other
    v1 = counts[pods[0].name]
    v2 = counts[pods[1].name] + counts[pods[2].name]
    assert v1 + v2 == 2000
    assert abs(v1 / 2000 - 0.20) <= 0.05, counts
    assert abs(v2 / 2000 - 0.80) <= 0.05, counts
    assert counts[pods[1].name] > 0 and counts[pods[2].name] > 0, counts
    sync = mesh.wait_synced()
    assert {e["proxy"] for e in sync} >= {p.node_id for p in [gw] + pods}


def test_delta_xds_gateway_and_sidecar_next_to_sotw(mesh):
    """api_type DELTA_GRPC (Istio's default): the gateway and the v1 sidecar speak
    DeltaAggregatedResources on pilot's one xDS port, next to a v2 sidecar on SotW. NC first;
    the DestinationRule's subset clusters arrive per resource and traffic splits over both
    pods; removing the DestinationRule removes them (removed_resources): NC again; every proxy
    SYNCED throughout, the delta ones listed as delta."""
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
              "ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml"):
        mesh.add_config(os.path.join(BOOK, f))
    mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns="istioinaction")
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"},
                      kind="router", delta=True)
    v1 = mesh.add_pod("catalog-6cf4b97d-abcde", "istioinaction",
                      {"app": "catalog", "version": "v1"}, app_port=3000, delta=True)
    v2 = mesh.add_pod("catalog-v2-7b9c8d-x7k2p", "istioinaction",
                      {"app": "catalog", "version": "v2"}, app_port=3000)
    for p in (gw, v1, v2):
        mesh.wait_ready(p)
    assert gateway_get(gw)[0] == 503
    sync = {e["proxy"]: e for e in mesh.wait_synced()}
    assert sync[gw.node_id]["delta"] and sync[v1.node_id]["delta"], sync
    assert not sync[v2.node_id]["delta"], sync
    status, ads = mesh.pilot_get("/debug/adsz")
    assert status == 200
    assert all(c["address"] for c in ads["clients"]), ads

    mesh.add_config(DR)
    wait_for(lambda: gateway_get(gw, "/healthz")[0] == 200, timeout=15,
             what="the DestinationRule to reach the delta gateway")
    counts, other = split(gw, 200)
    assert not other, other
    assert counts[v1.name] > 0 and counts[v2.name] > 0, counts
    mesh.wait_synced()
    stats = gw.stats()
    assert stats.get("control_plane.connected_state") == 1, stats
    assert stats.get("cluster_manager.cds.update_rejected", 0) == 0, stats

    mesh.remove_config(os.path.basename(DR))
    wait_for(lambda: gateway_get(gw, "/healthz")[0] == 503, timeout=15,
             what="the subset clusters to be removed from the delta gateway")
    mesh.wait_synced()
