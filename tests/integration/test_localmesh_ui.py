"""weft's web view (issue 22) in a real browser against the running local mesh: the book's
catalog example (examples/catalog) started with `weftctl up`, weft-pilot serving the view at
http://127.0.0.1:15014/ui/ from this checkout's ui/ (the build's <exe dir>/../ui), and headless
Chromium driven by tests/browser/view_check.mjs (puppeteer-core), as an operator would look:

1. the DestinationRule applied and requests flowing through the gateway: the graph shows the
   gateway -> catalog service -> catalog v1 and v2 edges with their request rates, each in its
   health colour, and a lock on the edges pilot saw mutual TLS on (the mesh's automatic mTLS);
   the Proxies view lists the four proxies SYNCED, and the gateway's clusters (from
   /debug/config_dump) have the catalog subsets;
2. the VirtualService broken (a subset no DestinationRule defines): the edges into catalog turn
   red and carry IST0101, the edge's panel and the Validations view show the message with the
   line at fault; the gateway's 503 NC (requests no cluster took) go to unknown
   (destination_service="unknown" in Istio's metrics), an edge whose panel says so;
3. the timeout step (v2 slowed to 1 s, a 0.5 s route timeout): the edge's panel shows the
   gateway's view (504 UT) beside catalog's own (no 504: its sidecar saw the caller go away),
   the gateway's success rate is lower than catalog's own and the edge's label shows both
   (pilot says they disagree; a request with no response code, catalog's "0"/DC, is no error as
   in Kiali); the Failed requests view has the gateway's 504 UT with its explanation;
4. mTLS turned off by a DestinationRule (tls DISABLE): the locks leave the edges into catalog
   (a 10 s window), and come back with the fix's DestinationRule (auto mTLS).

Screenshots go to $WEFT_TEST_ARTIFACTS (default build/test-artifacts/ui/), under localmesh/:
localmesh-graph.png, -proxies, -ist0101 (the graph with IST0101 on the edges, the locks and the
edge's panel), -validations, -timeout, -failed. The mesh binds fixed ports: run it, like the
other local-mesh tests, as root in a network namespace of your own
(`unshare -n sh -c 'ip link set lo up && ...'`). Skipped, with the reason, without Chromium or
ui/node_modules (scripts/setup), or when the ports are taken.
"""
import http.client
import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request

import pytest

from test_ui_static import COLOURS, artifacts, need_browser, run_plan as run_static_plan
from test_weftctl_up import (ROOT, kill_leftovers, need_fixed_ports, supervisor_log, wait_for,
                             weftctl)

HOST = "catalog.istioinaction.io"
PILOT = "http://127.0.0.1:15014"
SVC = "svc:catalog.istioinaction.svc.cluster.local"
STEPS = os.path.join(ROOT, "examples", "catalog-steps")


def api(path):
    """GET pilot's JSON (None unless 200)."""
    try:
        with urllib.request.urlopen(PILOT + path, timeout=10) as r:
            return json.loads(r.read()) if r.status == 200 else None
    except (OSError, ValueError, urllib.error.HTTPError):
        return None


def gw_get(path="/items", timeout=5):
    conn = http.client.HTTPConnection("127.0.0.1", 30000, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Host": HOST})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


class Traffic:
    """Requests through the gateway, at most 10 a second, until stopped; counts statuses."""

    def __init__(self):
        self.codes = {}
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                s = gw_get(timeout=3)
            except (OSError, http.client.HTTPException):
                s = 0
            self.codes[s] = self.codes.get(s, 0) + 1
            self.stop_ev.wait(0.1)

    def stop(self):
        self.stop_ev.set()
        self.thread.join(10)


def plan(steps, name):
    """view_check.mjs against pilot's own /ui/."""
    return run_static_plan({"ui": PILOT + "/ui/", "base": PILOT}, steps, name, timeout=180)


def catalog_nodes(g):
    nodes = {n["id"]: n for n in g["nodes"]}
    gw = next((n["id"] for n in g["nodes"] if n.get("is_gateway")), None)
    ver = {n.get("version"): n["id"] for n in g["nodes"]
           if n["kind"] == "workload" and n.get("app") == "catalog"}
    return nodes, gw, ver


def edge(g, s, t):
    return next((e for e in g["edges"] if e["source"] == s and e["target"] == t), None)


def rps(e):
    return max((v or {}).get("rps", 0) for v in (e["source_view"], e["destination_view"]))


def fmt_pct(rate):
    """graph.js's percentage: whole when within 0.05 of it, else one decimal."""
    p = rate * 100
    return "%d%%" % round(p) if abs(p - round(p)) < 0.05 else "%.1f%%" % p


def blowup(pods, body):
    for p in pods:
        req = urllib.request.Request("http://%s:3000/blowup" % p["localhost"],
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200


EDGES_JS = """window.weftView.cy.edges().map(e => ({id: e.id(), source: e.data('source'),
  target: e.data('target'), label: e.data('label'), colour: e.style('line-color')}))"""
LOCKS_JS = "[...document.querySelectorAll('#lock-layer .mtls-lock')].map(l => l.dataset.edge)"


def edge_label_is(eid, js_test):
    return ("window.weftView && window.weftView.cy && (() => { const e = window.weftView.cy"
            ".getElementById(%s); return e.nonempty() && (%s)(e.data('label')); })()"
            % (json.dumps(eid), js_test))


def test_web_view_on_the_catalog_mesh(tmp_path):
    need_browser()
    need_fixed_ports()
    d = tmp_path / "catalog"
    shutil.copytree(os.path.join(ROOT, "examples", "catalog"), d,
                    ignore=shutil.ignore_patterns(".weft"))
    state = str(tmp_path / "state")
    traffic = None
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60")
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        with open(os.path.join(state, "mesh.json")) as f:
            mesh = json.load(f)
        v2_pods = [p for p in mesh["pods"] if p["labels"].get("version") == "v2"]
        wait_for(lambda: gw_get() == 503, 30, "the gateway's 503 (no DestinationRule yet)")

        # 1. the fix, traffic, the graph with rates, colours and locks
        shutil.copy(os.path.join(STEPS, "fix-destinationrule.yaml"), d / "destinationrule.yaml")
        wait_for(lambda: gw_get() == 200, 30, "200 through the gateway")
        traffic = Traffic()

        def flowing():
            g = api("/ui/api/graph?namespace=istioinaction")
            if not g:
                return None
            _, gw, ver = catalog_nodes(g)
            es = [edge(g, gw, SVC)] + [edge(g, SVC, ver.get(v)) for v in ("v1", "v2")]
            return g if gw and all(e and rps(e) > 0 for e in es) else None
        g = wait_for(flowing, 90, "gateway -> catalog -> v1, v2 edges with rates in the graph")
        _, gw, ver = catalog_nodes(g)
        ids = {"gw": edge(g, gw, SVC)["id"], "v1": edge(g, SVC, ver["v1"])["id"],
               "v2": edge(g, SVC, ver["v2"])["id"]}
        mtls = sorted(e["id"] for e in g["edges"] if (e.get("mtls_percent") or 0) > 0)
        assert ids["v1"] in mtls and ids["v2"] in mtls, g["edges"]
        rep = plan([
            {"goto": "?namespace=istioinaction#graph"},
            {"wait": " && ".join(edge_label_is(ids[k], "l => /rps/.test(l)") for k in ids),
             "timeout": 30000},
            {"wait": "document.querySelectorAll('#lock-layer .mtls-lock').length >= %d" % len(mtls)},
            {"eval": "edges", "js": EDGES_JS}, {"eval": "locks", "js": LOCKS_JS},
            {"eval": "graph", "js": "window.weftView.lastGraph"},
            {"screenshot": "localmesh-graph.png"},
            {"goto": "#proxies"}, {"wait": "document.querySelectorAll('#proxies-table tr[data-proxy]').length >= 4"},
            {"eval": "proxies", "js": "[...document.querySelectorAll('#proxies-table tbody tr')].map("
                                      "tr => [...tr.cells].map(td => td.textContent))"},
            {"click": "#proxies-table tr[data-proxy^='istio-ingressgateway'] a"},
            {"wait": "document.querySelector('#pc-clusters table')"},
            {"eval": "clusters", "js": "[...document.querySelectorAll('#pc-clusters tbody tr')].map("
                                       "tr => [...tr.cells].map(td => td.textContent))"},
            {"screenshot": "localmesh-proxies.png"},
        ], "localmesh")
        r = rep["results"]
        assert rep["external_requests"] == [] and rep["page_errors"] == []
        got = {e["id"]: e for e in r["edges"]}
        shown = {e["id"]: e for e in r["graph"]["edges"]}
        for k, eid in ids.items():
            assert "rps" in got[eid]["label"] and "IST" not in got[eid]["label"], got[eid]
            assert got[eid]["colour"] == COLOURS[shown[eid]["health"]], (k, got[eid])
        assert sorted(r["locks"]) == sorted(e["id"] for e in r["graph"]["edges"]
                                            if (e.get("mtls_percent") or 0) > 0)
        assert ids["v1"] in r["locks"] and ids["v2"] in r["locks"]
        assert len(r["proxies"]) == 4
        for row in r["proxies"]:
            assert row[2:6] == ["SYNCED"] * 4 or all(c.startswith("SYNCED") for c in row[2:6]), row
        subsets = {(c[0], c[2]) for c in r["clusters"]}
        assert ("catalog.istioinaction.svc.cluster.local", "version-v1") in subsets, r["clusters"]
        assert ("catalog.istioinaction.svc.cluster.local", "version-v2") in subsets

        # 2. the VirtualService broken: IST0101 on the edges into catalog, red
        vs = (d / "virtualservice.yaml").read_text()
        (d / "virtualservice.yaml").write_text(vs.replace("subset: version-v2", "subset: version-v3"))

        def ist0101():
            v = api("/ui/api/validations?namespace=istioinaction")
            return v and next((res for res in v["resources"] if res["kind"] == "VirtualService"
                               and any(m["code"] == "IST0101" for m in res["messages"])), None)
        res = wait_for(ist0101, 30, "IST0101 in /ui/api/validations")
        assert "catalog.istioinaction.svc.cluster.local" in res["services"], res
        assert any(m["line"] > 0 for m in res["messages"] if m["code"] == "IST0101"), res
        fault = [m["line"] for m in res["messages"] if m["line"] > 0]
        rep = plan([
            {"goto": "?namespace=istioinaction#graph"},
            {"wait": edge_label_is(ids["gw"], "l => l.startsWith('IST0101')"), "timeout": 30000},
            {"eval": "edges", "js": EDGES_JS},
            {"click_edge": ids["gw"]}, {"wait": "!document.querySelector('#side-panel').hidden"},
            {"eval": "panel", "js": "document.querySelector('#side-panel').textContent"},
            {"screenshot": "localmesh-ist0101.png"},
            {"goto": "#validations"},
            {"wait": "document.querySelector('article.resource[data-kind=VirtualService] .line.fault')"},
            {"eval": "faults", "js": "[...document.querySelectorAll('article.resource[data-kind="
                                     "VirtualService] .line.fault')].map(l => [Number(l.dataset.line),"
                                     " l.querySelector('.src').textContent])"},
            {"eval": "article", "js": "document.querySelector('article.resource[data-kind="
                                      "VirtualService]').textContent"},
            {"screenshot": "localmesh-validations.png"},
        ], "localmesh")
        r = rep["results"]
        got = {e["id"]: e for e in r["edges"]}
        for k in ("gw", "v1", "v2"):
            assert got[ids[k]]["label"].startswith("IST0101 · "), got[ids[k]]
            assert got[ids[k]]["colour"] == COLOURS["failure"], got[ids[k]]
        assert "IST0101" in r["panel"] and "VirtualService istioinaction/catalog-v1-v2" in r["panel"]
        assert "IST0101" in r["article"] and "version-v3" in r["article"]
        assert [f[0] for f in r["faults"]] == sorted(set(fault)), (r["faults"], fault)

        # the requests the broken subset sends nowhere (503 NC) name no service in Istio's
        # metrics (destination_service="unknown"): a red edge from the gateway into unknown,
        # whose panel says so and links Failed requests
        def nc_edge():
            g = api("/ui/api/graph")
            nodes = {n["id"]: n for n in (g or {}).get("nodes", [])}
            return next((e for e in (g or {}).get("edges", []) if e["source"] == gw
                         and "unknown" in (nodes[e["target"]]["kind"], nodes[e["target"]].get("service"))
                         and (e["source_view"] or {}).get("flags", {}).get("NC", 0) > 0), None)
        nc = wait_for(nc_edge, 60, "the gateway's 503 NC on an edge into unknown")
        r = plan([
            {"goto": "#graph"},
            {"wait": "window.weftView && window.weftView.cy && window.weftView.cy.getElementById(%s)"
                     ".nonempty()" % json.dumps(nc["id"]), "timeout": 30000},
            {"eval": "edges", "js": EDGES_JS},
            {"click_edge": nc["id"]}, {"wait": "document.querySelector('#edge-unknown-hint')"},
            {"eval": "hint", "js": "document.querySelector('#edge-unknown-hint').textContent"},
            {"eval": "href", "js": "document.querySelector('#edge-unknown-hint a').getAttribute('href')"},
            {"screenshot": "localmesh-nc-unknown.png"},
        ], "localmesh")["results"]
        got = {e["id"]: e for e in r["edges"]}
        assert got[nc["id"]]["colour"] == COLOURS["failure"], got[nc["id"]]
        assert "503 NC" in r["hint"] and "Failed requests" in r["hint"] and r["href"] == "#failed"

        # 3. the timeout step: the gateway sees 504s catalog never answered
        blowup(v2_pods, {"active": True, "type": "latency", "latencyMs": 1000, "volatile": True})
        shutil.copy(os.path.join(STEPS, "virtualservice-timeout.yaml"), d / "virtualservice.yaml")
        wait_for(lambda: not ist0101(), 30, "IST0101 gone with the timeout VirtualService")

        last = {}

        def timeouts():
            g = api("/ui/api/graph?namespace=istioinaction")
            e = g and edge(g, gw, SVC)
            last["edge"] = e
            if not e or not e["source_view"] or not e["destination_view"]:
                return None
            sv, dv = e["source_view"], e["destination_view"]
            # the gateway counts 504 UT; catalog never answered a 504 (its sidecar saw the
            # caller go away)
            if sv["flags"].get("UT", 0) > 0 and sv["codes"].get("504", 0) > 0 \
                    and "504" not in dv["codes"] and "UT" not in dv["flags"] \
                    and sv["success_rate"] < dv["success_rate"] and e["disagree"]:
                return e
            return None
        try:
            wait_for(timeouts, 150, "the gateway's 504 UT in the source view only, its success "
                     "rate below catalog's")
        except AssertionError as ex:
            raise AssertionError("%s; the edge: %s" % (ex, json.dumps(last.get("edge"))))
        rep = plan([
            {"goto": "?namespace=istioinaction#graph"},
            {"wait": "window.weftView && window.weftView.lastGraph && window.weftView.lastGraph.edges"
                     ".some(e => e.id === %s && e.source_view && (e.source_view.flags || {}).UT > 0)"
                     % json.dumps(ids["gw"]), "timeout": 30000},
            {"wait": edge_label_is(ids["gw"], "l => !l.startsWith('IST')"), "timeout": 30000},
            {"click_edge": ids["gw"]}, {"wait": "!document.querySelector('#side-panel').hidden"},
            {"eval": "views", "js": "[...document.querySelectorAll('#edge-views tbody tr')].map("
                                    "tr => [...tr.cells].map(td => td.textContent))"},
            {"eval": "label", "js": "window.weftView.cy.getElementById(%s).data('label')"
                                    % json.dumps(ids["gw"])},
            {"eval": "graph", "js": "window.weftView.lastGraph"},
            {"screenshot": "localmesh-timeout.png"},
            {"goto": "#failed"},
            {"wait": "document.querySelector('.failed-workload tr[data-flags=UT]')", "timeout": 30000},
            {"eval": "ut", "js": "[...document.querySelector('.failed-workload tr[data-flags=UT]')"
                                 ".cells].map(td => td.textContent)"},
            {"screenshot": "localmesh-failed.png"},
        ], "localmesh")
        r = rep["results"]
        shown = edge(r["graph"], gw, SVC)
        sv, dv = shown["source_view"], shown["destination_view"]
        views = {row[0]: row[1:] for row in r["views"]}
        # the two views side by side: the gateway's 504 UT, catalog's own answers
        assert "504" in views["codes"][0] and "504" not in views["codes"][1], views
        assert "UT" in views["flags"][0] and "UT" not in views["flags"][1], views
        assert views["success"] == [fmt_pct(sv["success_rate"]), fmt_pct(dv["success_rate"])]
        # the gateway's success rate below catalog's own, both on the edge's label
        assert shown["disagree"] and sv["success_rate"] < dv["success_rate"], shown
        assert " src %s | dst %s" % (fmt_pct(sv["success_rate"]),
                                     fmt_pct(dv["success_rate"])) in r["label"], r["label"]
        ut = r["ut"]
        assert ut[3] == "504" and ut[4] == "UT" and HOST in ut[2], ut
        assert ut[9].strip(), "no explanation: %s" % ut
        blowup(v2_pods, {"active": False})

        # 4. mTLS off and on again: a DestinationRule tls DISABLE (plaintext under PERMISSIVE)
        # takes the locks away, the fix's DestinationRule (auto mTLS) brings them back; a 10 s
        # window so that the old traffic leaves it soon
        fix = open(os.path.join(STEPS, "fix-destinationrule.yaml")).read()
        (d / "destinationrule.yaml").write_text(
            fix.replace("spec:\n", "spec:\n  trafficPolicy:\n    tls:\n      mode: DISABLE\n", 1))
        into = (ids["v1"], ids["v2"])

        def shares():
            g = api("/ui/api/graph?namespace=istioinaction&window=10")
            es = [e for e in (g or {}).get("edges", []) if e["id"] in into]
            return [e.get("mtls_percent") for e in es] if len(es) == 2 else None
        wait_for(lambda: shares() == [0, 0], 90, "plaintext edges into catalog (mtls_percent 0)")
        # the page must have drawn both edges, as plaintext, before the locks are read (an
        # empty graph has no locks either)
        drawn = ("window.weftView && window.weftView.cy && window.weftView.lastGraph && "
                 "window.weftView.lastGraph.window_s === 10 && %s.every(id => "
                 "window.weftView.cy.getElementById(id).nonempty() && window.weftView.lastGraph"
                 ".edges.some(e => e.id === id && e.mtls_percent === 0))" % json.dumps(list(into)))
        r = plan([{"goto": "?namespace=istioinaction&window=10#graph"},
                  {"wait": drawn, "timeout": 30000},
                  {"eval": "edges", "js": EDGES_JS},
                  {"eval": "locks", "js": LOCKS_JS},
                  {"screenshot": "localmesh-mtls-off.png"}], "localmesh")["results"]
        assert set(into) <= {e["id"] for e in r["edges"]}, r["edges"]
        assert not set(into) & set(r["locks"]), r["locks"]
        shutil.copy(os.path.join(STEPS, "fix-destinationrule.yaml"), d / "destinationrule.yaml")
        wait_for(lambda: shares() == [100, 100], 90, "mutual TLS again on the edges into catalog")
        r = plan([{"goto": "?namespace=istioinaction&window=10#graph"},
                  {"wait": "document.querySelectorAll('#lock-layer .mtls-lock').length >= 2",
                   "timeout": 30000},
                  {"eval": "locks", "js": LOCKS_JS},
                  {"screenshot": "localmesh-mtls-on.png"}], "localmesh")["results"]
        assert set(into) <= set(r["locks"]), r["locks"]
    finally:
        if traffic:
            traffic.stop()
        down = weftctl("down", "--state", state, timeout=60)
        left = kill_leftovers(state)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not left, "processes left running after down: %s" % left
