"""The web view's traffic graph (issue 22): weft-pilot scrapes its proxies' Istio metrics
(pilot/scrape.h, every --uiScrapeInterval) and answers GET /ui/api/graph with the edges the
traffic took, their rates, success rates, source and destination views, GET /ui/api/scrape with
each target, and GET /ui/api/failed with the proxies' failed requests, explained.

The book's catalog mesh (meshfix.py: pilot, an ingress gateway, catalog v1 and two v2 sidecars
with weft-app): first the VirtualService names subsets no DestinationRule defines (503 NC at
the gateway), then the DestinationRule makes them 200s.
"""
import json
import os
import time

from meshfix import BOOK, GATEWAY_SERVICE, http_request, mesh, wait_for  # noqa: F401 (fixture)

CATALOG_HOST = "catalog.istioinaction.io"
CATALOG_SVC = "svc:catalog.istioinaction.svc.cluster.local"
DR = os.path.join(BOOK, "ch10", "catalog-destinationrule-v1-v2.yaml")


def start(mesh, interval="1s"):
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
              "ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml"):
        mesh.add_config(os.path.join(BOOK, f))
    mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns="istioinaction", extra=("--uiScrapeInterval", interval))
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router")
    v1 = mesh.add_pod("catalog-6cf4b97d-abcde", "istioinaction",
                      {"app": "catalog", "version": "v1"}, app_port=3000)
    v2 = mesh.add_pod("catalog-v2-7b9c8d-x7k2p", "istioinaction",
                      {"app": "catalog", "version": "v2"}, app_port=3000)
    for p in (gw, v1, v2):
        mesh.wait_ready(p)
    return gw, v1, v2


def get_json(mesh, path):
    status, body = mesh.pilot_get(path)
    assert status == 200, (path, body)
    assert isinstance(body, dict), body
    return body


def edge(graph, source, target):
    for e in graph["edges"]:
        if e["source"] == source and e["target"] == target:
            return e
    return None


def test_graph_edges_rates_views_and_scrape_status(mesh):
    gw, v1, v2 = start(mesh)
    # every proxy becomes a target, scraped ok, with its server state
    def all_scraped():
        s = get_json(mesh, "/ui/api/scrape")
        ok = [t for t in s["targets"] if t["ok"] and t["server_state"] == "LIVE"]
        return s if len(ok) == 3 else None
    scrape = wait_for(all_scraped, timeout=20, what="three scraped targets, LIVE")
    t = {x["proxy_id"]: x for x in scrape["targets"]}[gw.node_id]
    assert t["url"] == "http://%s:15020/stats/prometheus" % gw.ip
    assert t["control_plane_connected"] is True
    # oldest first: the first scrape, then the states it told; a proxy scraped while it was
    # still starting (a slow machine, the sanitizer build) told INITIALIZING before LIVE
    events = [h["event"] for h in t["history"]]
    assert events[0] == "scrape ok", events
    states = [e for e in events if e.startswith("state ")]
    assert states and states[-1] == "state LIVE", events
    assert set(states) <= {"state PRE_INITIALIZING", "state INITIALIZING", "state LIVE"}, events

    mesh.add_config(DR)
    wait_for(lambda: gw.request(8080, "/healthz", host=CATALOG_HOST)[0] == 200, timeout=15,
             what="the DestinationRule to reach the gateway")
    t0 = time.monotonic()
    n = 0
    for _ in range(60):
        status, _, _ = gw.request(8080, "/healthz", host=CATALOG_HOST)
        assert status == 200
        n += 1

    gw_node = "wl:istio-system/istio-ingressgateway"
    v1_node = "wl:istioinaction/catalog-v1"

    def graph_with_traffic():
        g = get_json(mesh, "/ui/api/graph?namespace=istioinaction&window=60")
        e1, e2 = edge(g, gw_node, CATALOG_SVC), edge(g, CATALOG_SVC, v1_node)
        if e1 and e2 and e1["source_view"] and e2["destination_view"]:
            # all of the 60 requests counted by both sides
            src = e1["source_view"]["rps"] * g["covered_s"]
            dst = sum((edge(g, CATALOG_SVC, w) or {}).get("destination_view", {}).get("rps", 0)
                      for w in (v1_node, "wl:istioinaction/catalog-v2")) * g["covered_s"]
            if src >= n and dst >= n:
                return g
        return None
    g = wait_for(graph_with_traffic, timeout=20, interval=0.3, what="the gateway -> catalog edges")
    print("graph after %.1f s: %s" % (time.monotonic() - t0, json.dumps(g)[:2000]))
    nodes = {x["id"]: x for x in g["nodes"]}
    assert nodes[gw_node]["is_gateway"] is True
    assert nodes[v1_node]["parent"] == "app:istioinaction/catalog"
    assert nodes[v1_node]["app"] == "catalog" and nodes[v1_node]["version"] == "v1"
    assert nodes["app:istioinaction/catalog"]["kind"] == "app"
    assert nodes[CATALOG_SVC]["kind"] == "service"
    e1 = edge(g, gw_node, CATALOG_SVC)
    sv = e1["source_view"]
    assert sv["rps"] > 0
    assert sv["codes"].get("200", 0) > 0
    assert sv["p50_ms"] is not None and sv["p99_ms"] >= sv["p50_ms"]
    # the gateway's own reports say "unknown" for the security policy; the sidecars' say
    # mutual_tls: the edge's share comes from the destination reporter
    e2 = edge(g, CATALOG_SVC, v1_node)
    assert e2["destination_view"]["rps"] > 0
    assert e2["mtls_percent"] == 100.0
    assert e2["health"] in ("healthy", "degraded", "failure")
    # the same graph is answered from the cache until the next round
    assert get_json(mesh, "/ui/api/graph?namespace=istioinaction&window=60")["timestamp_ms"] >= \
        g["timestamp_ms"]
    # a namespace without traffic has no edges; a bad window is refused
    assert get_json(mesh, "/ui/api/graph?namespace=nothing")["edges"] == []
    status, body = mesh.pilot_get("/ui/api/graph?window=5")
    assert status == 400, body


def wait_scraped(mesh, pods):
    """Until every pod's proxy was scraped once (its baseline: a request made before the
    first scrape of its proxy is in the baseline, never in a rate)."""
    def scraped():
        s = get_json(mesh, "/ui/api/scrape")
        ok = {t["proxy_id"] for t in s["targets"] if t["ok"]}
        return all(p.node_id in ok for p in pods)
    wait_for(scraped, timeout=20, interval=0.2, what="the proxies scraped once")


def test_graph_shows_503_nc_failure_and_failed_requests_explained(mesh):
    gw, v1, v2 = start(mesh)
    wait_scraped(mesh, [gw])
    # no DestinationRule: the gateway answers 503 NC (cluster_not_found)
    for _ in range(5):
        status, _, _ = gw.request(8080, "/items", host=CATALOG_HOST)
        assert status == 503

    def failing_edge():
        g = get_json(mesh, "/ui/api/graph?window=60")
        for e in g["edges"]:
            sv = e["source_view"]
            if e["source"] == "wl:istio-system/istio-ingressgateway" and sv and \
                    sv["flags"].get("NC", 0) > 0:
                return e
        return None
    e = wait_for(failing_edge, timeout=20, interval=0.3, what="the NC edge")
    assert e["health"] == "failure"
    assert e["source_view"]["success_rate"] == 0.0
    assert e["source_view"]["codes"].get("503", 0) > 0
    assert e["destination_view"] is None  # no sidecar saw these requests

    # the failed requests, fetched from the gateway's status port and explained
    status, body = mesh.pilot_get("/ui/api/failed?namespace=istio-system&limit=10")
    assert status == 200, body
    wl = [w for w in body["workloads"] if w["namespace"] == "istio-system"]
    assert wl, body
    reqs = wl[0]["requests"]
    assert any(r["response_code"] == 503 and r["response_flags"] == "NC" for r in reqs), reqs
    r = next(r for r in reqs if r["response_flags"] == "NC")
    assert r["details"] == "cluster_not_found"
    assert r["proxy_id"] == gw.node_id
    assert "NC" in r["explanation"]["summary"] or "cluster" in r["explanation"]["summary"].lower()
    assert r["explanation"]["meaning"]
    assert all(p["ok"] for p in wl[0]["proxies"]), wl[0]["proxies"]
    # grouped by the proxy's workload as /ui/api/proxies lists it (known from its xDS node,
    # not from whatever the scraped series named it), and workload= filters on that name
    status, proxies = mesh.pilot_get("/ui/api/proxies?namespace=istio-system")
    assert status == 200, proxies
    gwp = next(p for p in proxies["proxies"] if p["proxy_id"] == gw.node_id)
    assert wl[0]["workload"] == gwp["workload"], (wl[0]["workload"], gwp)
    status, only = mesh.pilot_get("/ui/api/failed?namespace=istio-system&workload=" +
                                  gwp["workload"])
    assert status == 200 and [w["workload"] for w in only["workloads"]] == [gwp["workload"]], only
    # the relay itself: the status port answers what the admin does
    status, _, relay = http_request(gw.ip, 15020, "/failed_requests?limit=1")
    assert status == 200
    assert len(json.loads(relay)["failed_requests"]) == 1


def test_bench_serve_metrics_graph_at_small_scale(tmp_path):
    """The bench's path (bench/README.md "Pilot's web view at scale"): weft-xds-load's
    simulated proxies answer /stats/prometheus (--serve-metrics) for pilot run with
    --uiScrapeAddr; 30 generated services: every proxy scraped, the synthetic edges in the graph
    with their rates, every tenth proxy's 503 UF, mTLS from the destination reporter."""
    import subprocess
    import sys
    from procs import free_port, start_process, stop_process
    from test_pilot_kube import exe
    mesh_dir = tmp_path / "mesh"
    subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "..", "bench",
                                                 "gen_mesh.py"), "-n", "30", "-s", "2",
                    str(mesh_dir)], check=True, stdout=subprocess.DEVNULL)
    maddr = "127.0.0.1:%d" % free_port()
    pilot, addrs = start_process(
        [exe("WEFT_PILOT", "weft-pilot"), "--config-dir", str(mesh_dir / "config"),
         "--config-dir", str(mesh_dir / "pods"), "--grpcAddr", "127.0.0.1:0",
         "--monitoringAddr", "127.0.0.1:0", "--ca-dir", str(tmp_path / "ca"),
         "--uiScrapeInterval", "1s", "--uiScrapeAddr", maddr], count=2, timeout=20)
    xds, mon = addrs
    n = len((mesh_dir / "proxies.txt").read_text().splitlines())
    load = subprocess.Popen(
        [exe("WEFT_XDS_LOAD", "weft-xds-load"), "--addr", "%s:%d" % xds,
         "--proxies", str(mesh_dir / "proxies.txt"), "-n", str(n), "--serve-metrics", maddr,
         "--metrics-filler", "50"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def get(path):
            status, _, body = http_request(mon[0], mon[1], path)
            assert status == 200, body
            return json.loads(body)

        def graph_ready():
            s = get("/ui/api/scrape")
            if sum(1 for t in s["targets"] if t["ok"]) < n:
                return None
            g = get("/ui/api/graph?window=60")
            # the 5 % of 503s of the slowest erring proxy (1 request/s) take 20 s to count one
            uf = any((e["source_view"] or {}).get("flags", {}).get("UF", 0) > 0
                     for e in g["edges"])
            return g if g["covered_s"] > 0 and uf else None
        g = wait_for(graph_ready, timeout=90, interval=0.5, what="every proxy scraped, a UF")
        wl = [x for x in g["nodes"] if x["kind"] == "workload"]
        assert len(wl) == n, [x["id"] for x in wl]
        views = [e["source_view"] for e in g["edges"] if e["source_view"]]
        assert views and all(v["rps"] > 0 for v in views)
        assert any(v["flags"].get("UF", 0) > 0 for v in views)
        assert all(e["mtls_percent"] == 100.0 for e in g["edges"] if e["destination_view"])
    finally:
        load.stdin.write("quit\n")
        load.stdin.flush()
        err = load.communicate(timeout=30)[1]
        assert stop_process(pilot) == 0
    assert load.returncode == 0, err
    assert "Sanitizer" not in err and "runtime error" not in err, err
