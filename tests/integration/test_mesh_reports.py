"""Operator reports B001, B002, B004 and B023 (../shared/cases/operator-reports.md) on a local
mesh: weft-pilot, a frontend sidecar, catalog pods and an ingress gateway.
"""
import collections
import json

from meshfix import GATEWAY_SERVICE, mesh, wait_for  # noqa: F401 (fixture)

SHOP = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: shop}
spec:
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 3000}]
"""

VS_SUBSET = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog, namespace: shop}
spec:
  hosts: [catalog]
  http:
  - route:
    - destination: {host: catalog, subset: %s}
"""

DR_V1 = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: catalog, namespace: shop}
spec:
  host: catalog
  subsets:
  - {name: v1, labels: {version: v1}}
"""

DR_V2_UNMATCHED = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: catalog, namespace: shop}
spec:
  host: catalog
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2, traffic: enabled}}
"""

PUBLIC_GW = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public-gw, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["shop.example.internal"]
"""

STOREFRONT = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: storefront, namespace: shop}
spec:
  hosts: ["shop.example.internal"]
  gateways: ["%s"]
  http:
  - route:
    - destination: {host: catalog, port: {number: 80}}
"""

CATALOG_FQDN = "catalog.shop.svc.cluster.local"


def shop_mesh(mesh, files, gateway=False):
    mesh.write_config("shop.yaml", SHOP)
    for name, text in files.items():
        mesh.write_config(name, text)
    if gateway:
        mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns="shop")
    pods = {
        "frontend": mesh.add_pod("frontend-1", "shop", {"app": "frontend"}),
        "v1": mesh.add_pod("catalog-v1-1", "shop", {"app": "catalog", "version": "v1"},
                           app_port=3000),
        "v2": mesh.add_pod("catalog-v2-1", "shop", {"app": "catalog", "version": "v2"},
                           app_port=3000),
    }
    if gateway:
        pods["gw"] = mesh.add_pod("istio-ingressgateway-1", "istio-system",
                                  {"istio": "ingressgateway"}, kind="router")
    for p in pods.values():
        mesh.wait_ready(p)
    return pods


def outbound(frontend, path="/healthz", host="catalog"):
    """A request from the frontend's application through its sidecar (outbound port 80)."""
    return frontend.request_local(80, path, host=host)


def dump_clusters(pod):
    status, _, body = pod.admin("/config_dump?resource=dynamic_active_clusters")
    assert status == 200, body
    return {c["cluster"]["name"] for c in json.loads(body)["configs"]}


def app_count(pod):
    status, _, body = pod.app_request("/count")
    return json.loads(body)["requests"]


def test_b001_undefined_subset_is_nc_until_the_destinationrule_arrives(mesh):
    pods = shop_mesh(mesh, {"vs.yaml": VS_SUBSET % "v1"})
    fe = pods["frontend"]
    status, _, body = outbound(fe, "/items")
    assert status == 503, body
    entry = fe.wait_log(lambda e: e.get("path") == "/items")
    assert entry["response_flags"] == "NC"
    assert entry["response_code_details"] == "cluster_not_found"
    clusters = dump_clusters(fe)
    assert "outbound|80||" + CATALOG_FQDN in clusters
    assert "outbound|80|v1|" + CATALOG_FQDN not in clusters
    status, _, body = fe.admin("/config_dump?resource=dynamic_route_configs")
    routes = json.dumps(json.loads(body))
    assert "outbound|80|v1|" + CATALOG_FQDN in routes  # the route names the missing cluster
    assert app_count(pods["v1"]) == 0 and app_count(pods["v2"]) == 0

    mesh.write_config("dr.yaml", DR_V1)
    wait_for(lambda: outbound(fe)[0] == 200, what="the DestinationRule to reach the frontend")
    seen = collections.Counter(outbound(fe)[1].get("x-weft-pod") for _ in range(50))
    assert seen == {"catalog-v1-1": 50}, seen
    assert "outbound|80|v1|" + CATALOG_FQDN in dump_clusters(fe)


def test_b023_subset_selecting_no_pod_is_uh_not_nc(mesh):
    pods = shop_mesh(mesh, {"vs.yaml": VS_SUBSET % "v2", "dr.yaml": DR_V2_UNMATCHED})
    fe = pods["frontend"]
    wait_for(lambda: "outbound|80|v2|" + CATALOG_FQDN in dump_clusters(fe),
             what="the v2 subset cluster")
    status, _, body = outbound(fe, "/items")
    assert status == 503 and body == b"no healthy upstream", (status, body)
    entry = fe.wait_log(lambda e: e.get("path") == "/items")
    assert entry["response_flags"] == "UH"
    assert entry["response_code_details"] == "no_healthy_upstream"
    assert entry["upstream_cluster"] == "outbound|80|v2|" + CATALOG_FQDN
    status, _, body = fe.admin("/config_dump?include_eds")
    eds = [e["endpoint_config"] for c in json.loads(body)["configs"]
           for e in c.get("dynamic_endpoint_configs", [])]
    v2 = [e for e in eds if e["cluster_name"] == "outbound|80|v2|" + CATALOG_FQDN]
    assert v2 and not v2[0].get("endpoints"), v2

    # relabel the v2 pod: an endpoint-only change reaches the frontend
    v2pod = pods["v2"]
    v2pod.labels["traffic"] = "enabled"
    mesh.write_pod(v2pod, 3000)
    wait_for(lambda: outbound(fe)[0] == 200, what="the relabelled pod as an endpoint")
    assert outbound(fe)[1].get("x-weft-pod") == "catalog-v2-1"


def test_b004_gateway_named_without_its_namespace_is_404_nr(mesh):
    pods = shop_mesh(mesh, {"gw.yaml": PUBLIC_GW, "vs.yaml": STOREFRONT % "public-gw"},
                     gateway=True)
    gw = pods["gw"]
    status, _, body = gw.request(8080, "/", host="shop.example.internal")
    assert status == 404, body
    entry = gw.wait_log(lambda e: e.get("authority") == "shop.example.internal")
    assert entry["response_flags"] == "NR"
    assert entry["response_code_details"] == "route_not_found"
    status, _, body = gw.admin("/config_dump?resource=dynamic_route_configs")
    assert "shop.example.internal" not in body.decode()

    mesh.write_config("vs.yaml", STOREFRONT % "edge/public-gw")
    wait_for(lambda: gw.request(8080, "/healthz", host="shop.example.internal")[0] == 200,
             what="the fixed VirtualService at the gateway")
    status, _, body = gw.admin("/config_dump?resource=dynamic_route_configs")
    assert "shop.example.internal" in body.decode()


def test_b002_host_with_a_port_matches_the_gateway_route(mesh):
    pods = shop_mesh(mesh, {"gw.yaml": PUBLIC_GW, "vs.yaml": STOREFRONT % "edge/public-gw"},
                     gateway=True)
    gw = pods["gw"]
    # the catalog pods reach pilot after the gateway connected: wait for their endpoints
    wait_for(lambda: gw.request(8080, "/healthz", host="shop.example.internal")[0] == 200,
             what="catalog endpoints at the gateway")
    for host in ("shop.example.internal", "shop.example.internal:80",
                 "shop.example.internal:31380"):
        status, _, body = gw.request(8080, "/echo", host=host)
        assert status == 200, (host, status, body)
        assert [host] == [v for k, v in json.loads(body)["headers"] if k.lower() == "host"]
    status, _, _ = gw.request(8080, "/", host="other.example.internal:80")
    assert status == 404
