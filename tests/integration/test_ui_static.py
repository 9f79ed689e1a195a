"""weft's web view (ui/, issue 22) in a real browser, without the mesh.

tests/browser/static_server.py serves ui/ as weft-pilot serves it under /ui/, the JSON fixtures
of tests/browser/fixtures under /ui/api/* (the contract weft-pilot's endpoints answer), and a
real Envoy config dump from Istio's istioctl tests (the shared corpus) under
/debug/config_dump. tests/browser/view_check.mjs drives Debian's headless Chromium with
puppeteer-core (ui/node_modules) and reports what the page shows; the expectations here are
computed from the fixtures:

- the graph has every fixture node and edge (ids, source, target, compound parent), read
  through window.weftView; an edge into a service whose VirtualService has an IST0101 Error is
  red and carries the code; other edges have their health colour; disagreeing views are both on
  the label and side by side in the edge's panel; a lock on exactly the edges with mTLS;
- the Validations view marks the line each message names, links the code to its
  documentation, lists what pilot rejected and what weft does not implement;
- the Proxies view has proxy-status's columns per proxy joined with the scrape state; a click
  loads /debug/config_dump?proxyID=<id>&include_eds and shows the same cluster, listener,
  route and EDS tables as `weftctl proxy-config ... -f` prints from that dump (three real
  dumps), and the DOMAINS column follows istioctl's own unit cases;
- the Failed requests view lists the requests with their explanation;
- an endpoint answering an error shows its message in its view; the URL hash opens a tab;
  auto refresh re-fetches every 5 s and can be paused; the page fetches nothing from outside.

Screenshots go to $WEFT_TEST_ARTIFACTS (default build/test-artifacts/ui/). Skipped, with the
reason, when /usr/bin/chromium (Debian package chromium) or ui/node_modules (npm ci) is missing:
run scripts/setup.
"""
import json
import os
import shutil
import subprocess
import sys
import urllib.request

import pytest

from conftest import ROOT, run_weftctl, shared_path

UI = os.path.join(ROOT, "ui")
BROWSER = os.path.join(ROOT, "tests", "browser")
FIXTURES = os.path.join(BROWSER, "fixtures")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Real Envoy config dumps from Istio's istioctl tests: one with every section (the default), one
# sidecar's 50 listener chains (YAML), one gateway's routes with VirtualService metadata.
GOLDEN = "corpus/istioctl-golden/upstream/istioctl/pkg/"
DUMP_REL = GOLDEN + "proxyconfig/testdata/config_dump.json"
DUMPS_FOR = {  # proxy_id of the fixtures -> dump
    "webapp-5c6d7-fghij.istioinaction": GOLDEN + "authz/testdata/configdump.yaml",
    "istio-ingressgateway-7d9f8-abcde.istio-system":
        GOLDEN + "writer/envoy/configdump/testdata/routes/istio-gateway-http-route-prefix/configdump.json"}
# Kiali's default health colours as graph.js draws them (Cytoscape reports rgb()).
COLOURS = {"healthy": "rgb(62,134,53)", "degraded": "rgb(236,122,8)",
           "failure": "rgb(201,25,11)", "idle": "rgb(138,141,144)"}


def artifacts():
    d = os.environ.get("WEFT_TEST_ARTIFACTS") or os.path.join(ROOT, "build", "test-artifacts", "ui")
    os.makedirs(d, exist_ok=True)
    return d


def need_browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("no headless browser: %s is missing (Debian package chromium; run scripts/setup)"
                    % CHROMIUM)
    if not os.path.isdir(os.path.join(UI, "node_modules", "puppeteer-core")):
        pytest.skip("ui/node_modules is missing (npm ci of ui/package-lock.json; run scripts/setup)")
    if not shutil.which("node"):
        pytest.skip("node is not installed (run scripts/setup)")


def fixture(name):
    with open(os.path.join(FIXTURES, name + ".json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def server():
    need_browser()
    dump = os.path.join(shared_path(), DUMP_REL)
    if not os.path.isfile(dump):
        pytest.skip("the shared corpus's Envoy config dump is missing: %s" % dump)
    dumps = {pid: os.path.join(shared_path(), rel) for pid, rel in DUMPS_FOR.items()}
    p = subprocess.Popen([sys.executable, os.path.join(BROWSER, "static_server.py"), "--ui", UI,
                          "--fixtures", FIXTURES, "--config-dump", dump] +
                         ["--config-dump-for=%s=%s" % kv for kv in dumps.items()],
                         stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("listening "), "static_server.py did not start: %r" % line
        base = "http://127.0.0.1:%d" % int(line.split()[1])
        yield {"base": base, "ui": base + "/ui/", "dump": dump, "dumps": dumps}
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def control(server, path):
    with urllib.request.urlopen(server["base"] + path, timeout=10) as r:
        return r.read()


def served(server):
    return json.loads(control(server, "/__test/requests"))


def run_plan(server, plan, sub, timeout=120):
    """Runs view_check.mjs with plan; returns its report (asserting it completed)."""
    out = os.path.join(artifacts(), sub)
    p = subprocess.run(["node", os.path.join(BROWSER, "view_check.mjs"), server["ui"], out],
                       input=json.dumps(plan), capture_output=True, text=True, timeout=timeout)
    assert p.returncode in (0, 1), "view_check.mjs failed (%d): %s" % (p.returncode, p.stderr)
    report = json.loads(p.stdout)
    assert "error" not in report, "%s\nstderr: %s\nscreenshots: %s" % (
        report["error"], p.stderr[-2000:], report["screenshots"])
    return report


def assert_clean(report):
    assert report["external_requests"] == [], "the page fetched from outside"
    assert report["page_errors"] == []
    assert report["console_errors"] == []


GRAPH_READY = "window.weftView && window.weftView.cy && window.weftView.cy.edges().length > 0"
EDGES_JS = """window.weftView.cy.edges().map(e => ({id: e.id(), source: e.data('source'),
  target: e.data('target'), label: e.data('label'), colour: e.style('line-color')}))"""
NODES_JS = """window.weftView.cy.nodes().map(n => ({id: n.id(),
  parent: n.parent().nonempty() ? n.parent().id() : null, label: n.data('label'),
  colour: n.style('border-color')}))"""
LOCKS_JS = """[...document.querySelectorAll('#lock-layer .mtls-lock')].map(l => {
  const r = l.getBoundingClientRect(), s = document.querySelector('#graph-canvas').getBoundingClientRect();
  return {edge: l.dataset.edge, inside: r.left >= s.left && r.right <= s.right && r.top >= s.top
    && r.bottom <= s.bottom && r.width > 0};})"""
ROWS_JS = """[...document.querySelectorAll('%s tbody tr')].map(tr => [...tr.cells].map(td => td.textContent))"""


# the fixture's gateway -> unknown edge (503 NC: destination_service="unknown", a service node)
# and its catalog -> catalog v2 edge whose views disagree in request rate only
UNKNOWN_EDGE = "e:wl:istio-system/istio-ingressgateway->svc:unknown"
RATE_EDGE = "e:svc:catalog.istioinaction.svc.cluster.local->wl:istioinaction/catalog-v2"


@pytest.fixture(scope="module")
def graph_report(server):
    catalog_edge = "e:wl:istioinaction/webapp->svc:catalog.istioinaction.svc.cluster.local"
    return run_plan(server, [
        {"goto": "#graph"}, {"wait": GRAPH_READY},
        {"wait": "document.querySelectorAll('#lock-layer .mtls-lock').length > 0"},
        {"eval": "nodes", "js": NODES_JS}, {"eval": "edges", "js": EDGES_JS},
        {"eval": "locks", "js": LOCKS_JS},
        {"eval": "lastGraph", "js": "window.weftView.lastGraph"},
        {"eval": "tab", "js": "document.querySelector('nav.tabs a.active').getAttribute('href')"},
        {"screenshot": "graph.png"},
        {"click_edge": catalog_edge}, {"wait": "!document.querySelector('#side-panel').hidden"},
        {"eval": "panel_views", "js": ROWS_JS % "#edge-views"},
        {"eval": "panel_text", "js": "document.querySelector('#side-panel').textContent"},
        {"screenshot": "graph-edge-panel.png"},
        {"click": "#side-panel a.jump"},
        {"wait": "document.querySelector('article.resource.focused')"},
        {"eval": "focused", "js": "(a => [a.dataset.kind, a.dataset.namespace, a.dataset.name, "
                                  "location.hash])(document.querySelector('article.resource.focused'))"},
        # an edge into the unknown node (the gateway's 503 NC): its panel says why, links Failed
        {"goto": "#graph"}, {"wait": GRAPH_READY},
        {"click_edge": UNKNOWN_EDGE}, {"wait": "!document.querySelector('#side-panel').hidden"},
        {"eval": "unknown_panel", "js": "document.querySelector('#side-panel').textContent"},
        {"eval": "unknown_hint", "js": "(p => p && [p.textContent, p.querySelector('a').getAttribute('href')])"
                                       "(document.querySelector('#edge-unknown-hint'))"},
        {"screenshot": "graph-unknown-edge.png"},
        {"click": "#edge-unknown-hint a"},
        {"wait": "document.querySelector('#failed-body table')"},
        {"eval": "after_unknown", "js": "document.querySelector('nav.tabs a.active').getAttribute('href')"},
        # an edge with a service as target shows no such line
        {"goto": "#graph"}, {"wait": GRAPH_READY},
        {"click_edge": RATE_EDGE}, {"wait": "!document.querySelector('#side-panel').hidden"},
        {"eval": "rate_edge_hint", "js": "!!document.querySelector('#edge-unknown-hint')"},
    ], "static")


def test_graph_renders_the_fixture(server, graph_report):
    g = fixture("graph")
    assert_clean(graph_report)
    r = graph_report["results"]
    assert r["tab"] == "#graph"
    assert r["lastGraph"] == g
    want_nodes = {n["id"]: n.get("parent") for n in g["nodes"]}
    assert {n["id"]: n["parent"] for n in r["nodes"]} == want_nodes
    assert sorted((e["id"], e["source"], e["target"]) for e in r["edges"]) == \
        sorted((e["id"], e["source"], e["target"]) for e in g["edges"])
    # the view asked pilot's graph for the default window, and the validations
    reqs = served(server)
    assert any(u.startswith("/ui/api/graph?") and "window=60" in u for u in reqs), reqs
    assert any(u.startswith("/ui/api/validations") for u in reqs), reqs
    assert os.path.getsize(os.path.join(artifacts(), "static", "graph.png")) > 10000


def pct(rate):
    p = rate * 100
    return "%d%%" % round(p) if abs(p - round(p)) < 0.05 else "%.1f%%" % p


def rate(rps):
    """util.js's fmtRate for the rates of the fixtures (0.01 .. 1000 rps)."""
    return "%.2f" % rps if rps < 10 else "%.1f" % rps


def test_validation_errors_and_health_colour_the_edges(graph_report):
    g, v = fixture("graph"), fixture("validations")
    nodes = {n["id"]: n for n in g["nodes"]}
    got = {e["id"]: e for e in graph_report["results"]["edges"]}
    red_with_code = 0
    for e in g["edges"]:
        # an edge's service: the service node it enters or leaves, else its target's service
        src, dst = nodes[e["source"]], nodes[e["target"]]
        svc = dst["service"] if dst["kind"] == "service" else \
            src["service"] if src["kind"] == "service" else dst.get("service", "")
        codes = sorted({m["code"] for res in v["resources"] if svc in res["services"]
                        for m in res["messages"] if m["level"] == "Error"})
        label, colour = got[e["id"]]["label"], got[e["id"]]["colour"]
        if codes:
            red_with_code += 1
            assert colour == COLOURS["failure"], e["id"]
            assert label.startswith(" ".join(codes) + " · "), label
        else:
            assert colour == COLOURS[e["health"]], e["id"]
            assert "IST" not in label, label
    assert red_with_code >= 1, "the fixture must put IST0101 on an edge"
    # service nodes carry their configuration's Error codes too; other nodes their health
    shown = {n["id"]: n for n in graph_report["results"]["nodes"]}
    for n in g["nodes"]:
        codes = sorted({m["code"] for res in v["resources"] if n["kind"] == "service"
                        and n["service"] in res["services"] for m in res["messages"]
                        if m["level"] == "Error"})
        if n["kind"] == "app":
            continue  # the app box is drawn grey, its workloads carry the colours
        if codes:
            assert shown[n["id"]]["label"].startswith(" ".join(codes) + " ")
            assert shown[n["id"]]["colour"] == COLOURS["failure"], n["id"]
        else:
            assert "IST" not in shown[n["id"]]["label"]
            assert shown[n["id"]]["colour"] == COLOURS[n["health"]], n["id"]
    gw = got["e:wl:istio-system/istio-ingressgateway->svc:webapp.istioinaction.svc.cluster.local"]
    assert gw["label"] == "IST0101 · 12.5 rps 100%"


def test_disagreeing_views_are_both_shown(graph_report):
    g = fixture("graph")
    got = {e["id"]: e["label"] for e in graph_report["results"]["edges"]}
    disagreeing = [e for e in g["edges"] if e["disagree"]]
    by_rate = 0
    for e in disagreeing:
        sv, dv = e["source_view"], e["destination_view"]
        if pct(sv["success_rate"]) == pct(dv["success_rate"]):
            # they disagree in request rate: the label shows the two rates
            by_rate += 1
            assert got[e["id"]].endswith("src %s rps | dst %s rps" % (rate(sv["rps"]), rate(dv["rps"]))), \
                got[e["id"]]
        else:
            assert "%s rps src %s | dst %s" % (rate(sv["rps"]), pct(sv["success_rate"]),
                                               pct(dv["success_rate"])) in got[e["id"]], got[e["id"]]
    assert by_rate >= 1 and len(disagreeing) > by_rate, "the fixture needs both kinds"
    assert got[RATE_EDGE] == "src 0.82 rps | dst 1.50 rps"
    for e in g["edges"]:
        if not e["disagree"]:
            assert "src " not in got[e["id"]]
    # the clicked edge's panel: both views side by side, the catalog DestinationRule's warning
    rows = {r[0]: r[1:] for r in graph_report["results"]["panel_views"]}
    assert rows["success"] == ["70%", "100%"]
    assert rows["p99"] == ["510 ms", "1.48 s"]
    assert rows["flags"] == ["UT: 3.00/s", "-"]
    text = graph_report["results"]["panel_text"]
    assert "the two views disagree" in text
    assert "IST0160" in text and "DestinationRule istioinaction/catalog:11" in text
    # "show YAML" opens the Validations tab at that resource
    assert graph_report["results"]["focused"] == ["DestinationRule", "istioinaction", "catalog",
                                                  "#validations"]


def test_edge_into_unknown_explained(graph_report):
    """A gateway's 503 NC has destination_service="unknown" in Istio's metrics: the edge into the
    unknown node says so in its panel and links the Failed requests tab; other edges do not."""
    r = graph_report["results"]
    hint, href = r["unknown_hint"]
    assert hint == ("requests no cluster took (e.g. 503 NC): Istio's metrics cannot name their "
                    "service; see Failed requests"), hint
    assert href == "#failed"
    assert "istio-ingressgateway → unknown" in r["unknown_panel"]
    assert "NC: 2.00/s" in r["unknown_panel"]
    assert r["after_unknown"] == "#failed"
    assert r["rate_edge_hint"] is False


def test_locks_on_mtls_edges(graph_report):
    g = fixture("graph")
    locks = graph_report["results"]["locks"]
    assert sorted(l["edge"] for l in locks) == sorted(e["id"] for e in g["edges"] if (e["mtls_percent"] or 0) > 0)
    assert all(l["inside"] for l in locks), locks


def test_validations_mark_the_line(server):
    v = fixture("validations")
    rep = run_plan(server, [
        {"goto": "#validations"}, {"wait": "document.querySelector('#validations-body article')"},
        {"eval": "articles", "js": """[...document.querySelectorAll('article.resource')].map(a => ({
            name: a.dataset.kind + '/' + a.dataset.namespace + '/' + a.dataset.name,
            faults: [...a.querySelectorAll('.line.fault')].map(l => [Number(l.dataset.line),
              l.querySelector('.src').textContent]),
            lines: a.querySelectorAll('.line').length,
            links: [...a.querySelectorAll('a.code')].map(x => [x.textContent, x.href])}))"""},
        {"eval": "rejected", "js": "document.querySelector('#rejected').textContent"},
        {"eval": "notimpl", "js": "document.querySelector('#not-implemented').textContent"},
        {"eval": "summary", "js": "document.querySelector('#validations-summary').textContent"},
        {"eval": "tab", "js": "document.querySelector('nav.tabs a.active').getAttribute('href')"},
        {"screenshot": "validations.png"},
    ], "static")
    assert_clean(rep)
    r = rep["results"]
    assert r["tab"] == "#validations"
    got = {a["name"]: a for a in r["articles"]}
    assert len(got) == len(v["resources"])
    for res in v["resources"]:
        a = got["%s/%s/%s" % (res["kind"], res["namespace"], res["name"])]
        lines = res["yaml"].rstrip("\n").split("\n")
        assert a["lines"] == len(lines)
        want = sorted({m["line"] for m in res["messages"] if m["line"] > 0})
        assert [f[0] for f in a["faults"]] == want
        for n, text in a["faults"]:
            assert text == lines[n - 1]
        assert a["links"] == [[m["code"], m["documentation_url"]] for m in res["messages"]]
    assert "last good version kept" in r["rejected"] and "broken.yaml:7" in r["rejected"]
    assert "WFT0001" in r["notimpl"] and "mirrorPercentage" in r["notimpl"]
    # singular for one (the fixture has one Error and one Warning)
    assert "1 error " in r["summary"] and "1 warning " in r["summary"], r["summary"]
    assert "errors" not in r["summary"] and "warnings" not in r["summary"], r["summary"]


def parse_table(text, names):
    """Rows of a text/tabwriter table whose header is the column names `names` (asserted), cut
    at the header's column starts (cells are left-aligned and padded, so a cell starts where
    its column's name starts)."""
    lines = [l for l in text.splitlines() if l.strip()]
    head = lines[0]
    assert head.split() == " ".join(names).split(), head
    starts, at = [], 0
    for h in names:
        at = head.index(h, at)
        starts.append(at)
        at += len(h)
    return [[l[s:(starts[i + 1] if i + 1 < len(starts) else len(l))].strip()
             for i, s in enumerate(starts)] for l in lines[1:]]


NOTE_PROXY = "catalog-v2-7a1b2-uvwxy.istioinaction"


def test_proxies_table_and_config_dump_tables(server):
    p, s = fixture("proxies"), fixture("scrape")
    first = sorted(x["proxy_id"] for x in p["proxies"])[0]
    rep = run_plan(server, [
        {"goto": "#proxies"}, {"wait": "document.querySelector('#proxies-table tr[data-proxy]')"},
        {"eval": "head", "js": "[...document.querySelectorAll('#proxies-table thead th')].map(t => t.textContent)"},
        {"eval": "rows", "js": ROWS_JS % "#proxies-table"},
        {"click": "#proxies-table tr[data-proxy='%s'] a" % first},
        {"wait": "document.querySelector('#pc-endpoints table')"},
        {"eval": "clusters", "js": ROWS_JS % "#pc-clusters"},
        {"eval": "listeners", "js": ROWS_JS % "#pc-listeners"},
        {"eval": "routes", "js": ROWS_JS % "#pc-routes"},
        {"eval": "endpoints", "js": ROWS_JS % "#pc-endpoints"},
        {"eval": "heads", "js": """Object.fromEntries([...document.querySelectorAll('.pc-table')].map(t =>
            [t.dataset.table, [...t.querySelectorAll('thead th')].map(x => x.textContent)]))"""},
        {"eval": "cert", "js": "document.querySelector('#proxy-cert').textContent"},
        {"eval": "history", "js": ROWS_JS % "#proxy-history"},
        {"eval": "history_text", "js": "document.querySelector('#proxy-history').textContent"},
        {"eval": "now_ms", "js": "Date.now()"},
        {"screenshot": "proxies.png"},
        # a proxy pilot cannot tell its certificate of (certificate null, certificate_note)
        {"click": "#proxies-table tr[data-proxy='%s'] a" % NOTE_PROXY},
        {"wait": "document.querySelector('#proxy-detail h2').textContent === %s" % json.dumps(NOTE_PROXY)},
        {"eval": "note_cert", "js": "document.querySelector('#proxy-cert').textContent"},
        {"screenshot": "proxies-certificate-note.png"},
    ], "static")
    assert_clean(rep)
    r = rep["results"]
    assert r["head"][:9] == ["NAME", "CLUSTER", "CDS", "LDS", "EDS", "RDS", "ECDS", "ISTIOD", "VERSION"]
    scrape = {t["proxy_id"]: t for t in s["targets"]}
    want = sorted(p["proxies"], key=lambda x: x["proxy_id"])
    assert [row[0] for row in r["rows"]] == [x["proxy_id"] for x in want]
    for row, x in zip(r["rows"], want):
        assert row[2:7] == [x["sync"][k] for k in ("CDS", "LDS", "EDS", "RDS", "ECDS")]
        assert row[8] == x["istio_version"]
        t = scrape[x["proxy_id"]]
        assert row[9] == ("ok" if t["ok"] else "failed: " + t["error"])
        assert row[10] == (t["server_state"] or "-")
    # the click fetched the proxy's config dump from pilot's debug endpoint, with EDS
    assert any(u.startswith("/debug/config_dump?") and "proxyID=" + first.replace("/", "%2F") in u
               and "include_eds" in u for u in served(server))
    sel = next(x for x in p["proxies"] if x["proxy_id"] == first)
    assert sel["certificate"]["serial"] in r["cert"]
    hist = [h[2] for h in r["history"]]
    assert "connected" in hist and "scrape ok" in hist
    assert "begins when pilot started" in r["history_text"]
    assert r["clusters"] and r["endpoints"]
    # CERT EXPIRES: the time left on the certificate pilot's CA issued, in hours under two days;
    # else the proxy's own figure, Envoy's whole days (0: less than a day)
    assert r["head"][11] == "CERT EXPIRES"
    for row, x in zip(r["rows"], want):
        cert, days = x["certificate"], scrape[x["proxy_id"]]["days_until_first_cert_expiring"]
        if cert:
            left = (cert["not_after_ms"] - r["now_ms"]) / 3600000.0
            if left <= 0:
                assert row[11] == "expired", row
            elif left < 48:
                assert row[11].endswith(" h") and abs(float(row[11][:-2]) - left) < 0.2, (row[11], left)
            else:
                assert row[11].endswith(" d") and abs(float(row[11][:-2]) - left / 24) < 0.1, row
        elif days is None:
            assert row[11] == "-", row
        else:
            assert row[11] == ("0 d (agent, < 1 day)" if days < 1 else "%d d (agent, whole days)" % days), row
    assert any(x["certificate"] is None and scrape[x["proxy_id"]]["days_until_first_cert_expiring"] == 0
               for x in want), "the fixture needs a proxy with only the agent's 0 days"
    # pilot's note replaces "no certificate" when it cannot tell which certificate a proxy holds
    note = next(x for x in p["proxies"] if x["proxy_id"] == NOTE_PROXY)
    assert note["certificate"] is None and note["certificate_note"]
    assert note["certificate_note"] in r["note_cert"]
    assert "has issued no certificate" not in r["note_cert"]


PC_TABLES = (("cluster", "clusters"), ("listener", "listeners"), ("route", "routes"),
             ("eds", "endpoints"))


@pytest.mark.parametrize("proxy", ["catalog-v1-6b8c9-klmno.istioinaction"] + sorted(DUMPS_FOR))
def test_config_dump_tables_match_weftctl(server, proxy):
    """The view's proxy-config tables are the ones weftctl proxy-config prints from the same dump
    (istioctl's columns, cells and row order); a section the dump lacks is said, not drawn."""
    js = {key: ROWS_JS % ("#pc-" + key) for _, key in PC_TABLES}
    rep = run_plan(server, [
        {"goto": "#proxies"}, {"wait": "document.querySelector('#proxies-table tr[data-proxy]')"},
        {"click": "#proxies-table tr[data-proxy='%s'] a" % proxy},
        {"wait": "document.querySelector('#pc-endpoints')"},
        {"eval": "heads", "js": """Object.fromEntries([...document.querySelectorAll('.pc-table')].map(t =>
            [t.dataset.table, [...t.querySelectorAll('thead th')].map(x => x.textContent)]))"""},
        {"eval": "texts", "js": """Object.fromEntries([...document.querySelectorAll('.pc-table')].map(t =>
            [t.dataset.table, t.textContent]))"""},
    ] + [{"eval": key, "js": j} for key, j in js.items()] + [{"screenshot": "config-%s.png" % proxy}],
        "static")
    assert_clean(rep)
    r = rep["results"]
    dump = server["dumps"].get(proxy, server["dump"])
    if dump.endswith(".yaml"):  # weftctl -f reads JSON: the server's conversion, done here too
        import yaml
        conv = os.path.join(artifacts(), "static", os.path.basename(dump) + ".json")
        with open(dump) as f, open(conv, "w") as o:
            json.dump(yaml.safe_load(f), o)
        dump = conv
    compared = 0
    for sub, key in PC_TABLES:
        out = run_weftctl("proxy-config", sub, "-f", dump)
        if out.returncode != 0:
            assert "has no configuration type" in out.stderr, out.stderr
            assert r[key] == [] and key not in r["heads"] or r["heads"][key] == [], key
            assert "no " in r["texts"][key] or "has no" in r["texts"][key], r["texts"][key]
            continue
        if len([l for l in out.stdout.splitlines() if l.strip()]) <= 1:  # the header alone
            assert r[key] == [], key
            continue
        compared += len(r[key])
        # (a text table cannot show a cell's trailing blanks: istioctl's "Inline Route: ")
        assert [[c.strip() for c in row] for row in r[key]] == \
            parse_table(out.stdout, r["heads"][key]), sub
    assert compared > 0


def test_failed_requests_with_explanations(server):
    f = fixture("failed")
    rep = run_plan(server, [
        {"goto": "#failed"}, {"wait": "document.querySelector('#failed-body table')"},
        {"eval": "sections", "js": """[...document.querySelectorAll('.failed-workload')].map(s => ({
            w: s.dataset.namespace + '/' + s.dataset.workload,
            rows: [...s.querySelectorAll('tbody tr')].map(tr => [...tr.cells].map(td => td.textContent)),
            notices: [...s.querySelectorAll('.notice')].map(n => n.textContent)}))"""},
        {"click": ".failed-workload details summary"},
        {"eval": "open", "js": "document.querySelector('.failed-workload details[open]').textContent"},
        {"screenshot": "failed.png"},
    ], "static")
    assert_clean(rep)
    got = {s["w"]: s for s in rep["results"]["sections"]}
    assert sorted(got) == sorted("%s/%s" % (w["namespace"], w["workload"]) for w in f["workloads"])
    for w in f["workloads"]:
        s = got["%s/%s" % (w["namespace"], w["workload"])]
        reqs = sorted(w["requests"], key=lambda x: -x["start_time_ms"])
        assert len(s["rows"]) == len(reqs)
        for row, q in zip(s["rows"], reqs):
            assert row[1] == q["method"]
            assert row[2] == q["authority"] + q["path"]
            assert row[3] == str(q["response_code"])
            assert row[4] == q["response_flags"]
            assert row[5] == q["details"]
            assert row[7] == q["upstream_cluster"]
            assert row[8] == q["upstream_host"]
            assert row[9].startswith(q["explanation"]["summary"])
        for px in w["proxies"]:
            if not px["ok"]:
                assert any(px["error"] in n for n in s["notices"])
    first = sorted(f["workloads"][0]["requests"], key=lambda x: -x["start_time_ms"])[0]
    assert first["explanation"]["meaning"] in rep["results"]["open"]
    assert first["explanation"]["next"] in rep["results"]["open"]


def test_endpoint_errors_are_shown_not_blank(server):
    control(server, "/__test/fail?path=/ui/api/graph&status=503&body=metrics+collection+is+off")
    control(server, "/__test/fail?path=/ui/api/failed&status=503&body=metrics+collection+is+off")
    control(server, "/__test/fail?path=/ui/api/validations&status=500&body=boom")
    control(server, "/__test/fail?path=/ui/api/scrape&status=404&body=404+page+not+found")
    try:
        rep = run_plan(server, [
            {"goto": "#graph"}, {"wait": "document.querySelector('#graph-status .notice-error')"},
            {"eval": "graph", "js": "document.querySelector('#graph-status').textContent"},
            {"screenshot": "graph-error.png"},
            {"goto": "#failed"}, {"wait": "document.querySelector('#failed-status .notice-error')"},
            {"eval": "failed", "js": "document.querySelector('#failed-status').textContent"},
            {"goto": "#validations"}, {"wait": "document.querySelector('#validations-status .notice-error')"},
            {"eval": "validations", "js": "document.querySelector('#validations-status').textContent"},
            {"goto": "#proxies"}, {"wait": "document.querySelector('#proxies-table tr[data-proxy]')"},
            {"eval": "proxies", "js": "document.querySelector('#proxies-status').textContent"},
        ], "static-errors")
    finally:
        control(server, "/__test/reset")
    r = rep["results"]
    assert "503" in r["graph"] and "metrics collection is off" in r["graph"]
    assert "metrics collection is off" in r["failed"]
    assert "500" in r["validations"] and "boom" in r["validations"]
    assert "Scrape state unavailable" in r["proxies"] and "404" in r["proxies"]
    assert rep["external_requests"] == [] and rep["page_errors"] == []


def test_auto_refresh_and_pause(server):
    rep = run_plan(server, [
        {"goto": "?namespace=istioinaction&window=300#graph"}, {"wait": GRAPH_READY},
        {"wait": "window.weftView.refreshes >= 2", "timeout": 12000},
        {"eval": "ns", "js": "document.querySelector('#namespace').value"},
        {"eval": "win", "js": "document.querySelector('#window').value"},
        {"click": "#auto-refresh"},
        {"sleep": 500},  # a refresh already under way when paused ends first
        {"eval": "paused_at", "js": "window.weftView.refreshes"},
        {"sleep": 6500},
        {"eval": "after", "js": "window.weftView.refreshes"},
    ], "static-refresh")
    r = rep["results"]
    assert r["ns"] == "istioinaction" and r["win"] == "300"
    assert r["after"] == r["paused_at"], "refreshed while paused"
    graph_reqs = [u for u in served(server) if u.startswith("/ui/api/graph?")]
    assert any("namespace=istioinaction" in u and "window=300" in u for u in graph_reqs), graph_reqs


def test_route_domains_column_cases():
    """configdump.js's DOMAINS column on istioctl's own unit cases (TestDescribeRouteDomains)."""
    if not shutil.which("node"):
        pytest.skip("node is not installed (run scripts/setup)")
    with open(os.path.join(shared_path(), "corpus/istioctl-golden/unit/route-domains.json")) as f:
        cases = json.load(f)["cases"]
    js = ("import(process.argv[1]).then(m => process.stdout.write(JSON.stringify("
          "JSON.parse(process.argv[2]).map(d => m.routeDomains(d)))))")
    p = subprocess.run(["node", "-e", js, "file://" + os.path.join(UI, "configdump.js"),
                        json.dumps([c["domains"] for c in cases])],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [c["expected"] for c in cases]


def test_proxy_certificate_note(server):
    """A proxy whose certificate pilot cannot tell apart shows the answer's note, not "no
    certificate issued"."""
    x = next(x for x in fixture("proxies")["proxies"] if x.get("certificate_note"))
    rep = run_plan(server, [
        {"goto": "#proxies"}, {"wait": "document.querySelector('#proxies-table tr[data-proxy]')"},
        {"click": "#proxies-table tr[data-proxy='%s'] a" % x["proxy_id"]},
        {"wait": "document.querySelector('#proxy-cert')"},
        {"eval": "cert", "js": "document.querySelector('#proxy-cert').textContent"},
    ], "static")
    assert_clean(rep)
    assert x["certificate_note"] in rep["results"]["cert"], rep["results"]["cert"]
    assert "has issued no certificate" not in rep["results"]["cert"]
