"""weft-pilot's web view endpoints (issue 22) on a real weft-pilot process: the static files
from --uiDir (index at /ui/, /ui redirected there, content types, 404, traversal refused, 503 naming node_modules and
scripts/setup), /ui/api/validations on the book's catalog example whose VirtualService routes to
subsets no DestinationRule defines (IST0101 on the VirtualService at the line weftctl analyze
reports, every message weftctl analyze prints for the same config, the broken file pilot
rejects with the last good version it keeps serving), and /ui/api/proxies with a weft-proxy
connected (proxy-status columns, its control-plane history, the certificate pilot's CA issued
it); with the Kubernetes source (the test API server), the objects rendered as YAML with the
line at fault marked in the rendering.

The book's files are copied from the shared corpus into tmp_path (never into the repo); the UI
folder is a temporary one (the view's real files come with scripts/setup)."""
import http.client
import json
import os
import shutil
import subprocess

import pytest
import yaml

from conftest import shared_path
from procs import CRASH_MARKERS, crash_report, free_port, start_process, stop_process
from proxyfix import (bootstrap, cluster, http_request, listener, proxy_path, simple_routes,
                      write_bootstrap)
from test_pilot import BOOK, get, get_json, pilot_exe, poll  # noqa: F401 (pilot_exe: fixture)
from test_pilot_ca import token
from test_proxy_sds import GENERATED, inbound_tls
from test_pilot_kube import NS as KNS, Pilot as KubePilot, api, book_docs, certs  # noqa: F401
from test_pilot_kube import pod as kube_pod

VS_FILE = "catalog-virtualservice-subsets-v1-v2.yaml"


@pytest.fixture
def cfg(tmp_path):
    book = os.path.join(shared_path(), "corpus", "istioinaction")
    if not os.path.isdir(book):
        pytest.skip("book corpus not found at %s" % book)
    d = tmp_path / "cfg"
    d.mkdir()
    for rel in BOOK:  # catalog v1 and v2, the gateway, the VirtualService without its rule
        shutil.copy(os.path.join(book, rel), d / os.path.basename(rel))
    return d


@pytest.fixture
def ui_dir(tmp_path):
    d = tmp_path / "ui"
    (d / "node_modules" / "cytoscape" / "dist").mkdir(parents=True)
    (d / "index.html").write_text("<!DOCTYPE html>\n<title>weft</title>\n")
    (d / "app.js").write_text("export const view = 1;\n")
    (d / "node_modules" / "cytoscape" / "dist" / "cytoscape.esm.mjs").write_text("export {};\n")
    return d


@pytest.fixture
def pilot(pilot_exe, cfg, ui_dir, tmp_path):  # noqa: F811
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--uiDir", ui_dir, "--default-namespace", "istioinaction",
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--secureGRPCAddr", "127.0.0.1:0", "--webhookAddr", "off",
                                 "--debounce-after-ms", "50"], count=3)
    proc.xds, proc.mon, proc.secure = addrs[0][1], addrs[1][1], addrs[2][1]
    yield proc
    rc = stop_process(proc)
    assert crash_report(proc) is None, proc.stderr_text()
    assert rc == 0, proc.stderr_text()


def raw_get(port, path):
    """GET path exactly as written (no client-side normalisation): (status, type, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode("utf-8", "replace")
    finally:
        c.close()


def test_static_files(pilot, ui_dir):
    status, ctype, body = raw_get(pilot.mon, "/ui/")
    assert status == 200 and ctype == "text/html; charset=utf-8", body
    assert "<title>weft</title>" in body
    c = http.client.HTTPConnection("127.0.0.1", pilot.mon, timeout=5)
    c.request("GET", "/ui")  # to /ui/, where the page's relative links resolve
    r = c.getresponse()
    assert (r.status, r.getheader("Location")) == (301, "/ui/")
    c.close()
    assert get(pilot.mon, "/ui") == (200, "<!DOCTYPE html>\n<title>weft</title>\n")
    assert raw_get(pilot.mon, "/ui/app.js") == (200, "text/javascript; charset=utf-8",
                                                "export const view = 1;\n")
    status, ctype, _ = raw_get(pilot.mon, "/ui/node_modules/cytoscape/dist/cytoscape.esm.mjs")
    assert (status, ctype) == (200, "text/javascript; charset=utf-8")
    assert raw_get(pilot.mon, "/ui/nothing.js")[0] == 404
    assert raw_get(pilot.mon, "/ui/api/nothing")[0] == 404
    # traversal is refused, however it is spelled
    (ui_dir.parent / "secret.txt").write_text("not for the web\n")
    for path in ("/ui/../secret.txt", "/ui/%2e%2e/secret.txt", "/ui/%2E%2E%2Fsecret.txt",
                 "/ui//etc/passwd", "/ui/./app.js", "/ui/a/../../secret.txt"):
        status, _, body = raw_get(pilot.mon, path)
        assert status == 400, (path, status, body)
        assert "not for the web" not in body
    os.symlink(ui_dir.parent / "secret.txt", ui_dir / "link.txt")
    assert raw_get(pilot.mon, "/ui/link.txt")[0] == 403
    # the /debug index lists the /debug endpoints only
    assert not [r for r in get_json(pilot.mon, "/debug?format=json")
                if r["href"].startswith("/ui")]
    # without the view's libraries: 503 saying what is missing and what to run
    shutil.rmtree(ui_dir / "node_modules")
    status, ctype, body = raw_get(pilot.mon, "/ui/")
    assert status == 503 and ctype.startswith("text/plain"), body
    assert str(ui_dir / "node_modules") in body and "run scripts/setup" in body


def test_static_without_the_folder(pilot_exe, cfg, tmp_path):  # noqa: F811
    missing = tmp_path / "no-ui"
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--webhookAddr", "off"], count=2,
                                env=dict(os.environ, WEFT_UI_DIR=str(missing)))
    try:
        # a folder given explicitly is named with its variable, not "run scripts/setup"
        status, _, body = raw_get(addrs[1][1], "/ui/")
        assert status == 503, body
        assert "$WEFT_UI_DIR %s: no such folder" % missing in body, body
        assert "scripts/setup" not in body
    finally:
        assert stop_process(proc) == 0, proc.stderr_text()
    # pilot warned at start that the view will answer 503
    assert "no such folder" in proc.stderr_text() and "WARN" in proc.stderr_text().upper()


def test_ui_dir_is_a_file(pilot_exe, cfg, tmp_path):  # noqa: F811
    f = tmp_path / "ui-file"
    f.write_text("not a folder\n")
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--uiDir", f, "--grpcAddr", "127.0.0.1:0",
                                 "--monitoringAddr", "127.0.0.1:0", "--webhookAddr", "off"],
                                count=2)
    try:
        status, _, body = raw_get(addrs[1][1], "/ui/")
        assert status == 503, body
        assert "--uiDir %s: not a folder" % f in body, body
        assert "is missing" not in body
    finally:
        assert stop_process(proc) == 0, proc.stderr_text()
    assert "not a folder" in proc.stderr_text()


def test_fifo_refused_and_pilot_answers(pilot, ui_dir):
    os.mkfifo(ui_dir / "fifo.js")
    status, _, body = raw_get(pilot.mon, "/ui/fifo.js")  # 5 s timeout: open() must not block
    assert status == 403 and "not a regular file" in body, (status, body)
    assert raw_get(pilot.mon, "/ui/app.js")[0] == 200  # the loop still answers


def test_405_says_allow_and_query_values_decoded(pilot):
    c = http.client.HTTPConnection("127.0.0.1", pilot.mon, timeout=5)
    try:
        c.request("POST", "/ui/api/scrape", body=b"")
        r = c.getresponse()
        r.read()
        assert r.status == 405 and r.getheader("Allow") == "GET, HEAD", r.getheaders()
    finally:
        c.close()
    # %XX and '+' decoded as Go's url.ParseQuery; a malformed escape is an invalid value
    status, _, body = raw_get(pilot.mon, "/ui/api/graph?window=%36%30")
    assert status == 200 and json.loads(body)["window_s"] == 60, body
    assert raw_get(pilot.mon, "/ui/api/graph?window=%3")[0] == 400
    assert raw_get(pilot.mon, "/ui/api/graph?window=6%zz0")[0] == 400
    assert raw_get(pilot.mon, "/ui/api/failed?limit=%31%30")[0] == 200
    assert raw_get(pilot.mon, "/ui/api/failed?limit=%1")[0] == 400
    status, _, body = raw_get(pilot.mon, "/ui/api/validations?namespace=istio%69naction")
    assert status == 200, body
    assert json.loads(body) == get_json(pilot.mon, "/ui/api/validations?namespace=istioinaction")


@pytest.mark.parametrize("value", ["1ms", "0.001s", "0.5s", "1500ms", "abc", "25h"])
def test_ui_scrape_interval_refused(pilot_exe, value):  # noqa: F811
    r = subprocess.run([pilot_exe, "--uiScrapeInterval", value], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "--uiScrapeInterval" in r.stderr, r.stderr
    if value in ("1ms", "0.001s", "0.5s", "1500ms"):
        assert "at least 1s, whole seconds, e.g. 15s" in r.stderr, r.stderr


@pytest.mark.parametrize("value,seconds", [("1h", 3600), ("61m", 3660), ("2", 2), ("0", None)])
def test_ui_scrape_interval_accepted(pilot_exe, cfg, tmp_path, value, seconds):  # noqa: F811
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--uiScrapeInterval", value, "--grpcAddr", "127.0.0.1:0",
                                 "--monitoringAddr", "127.0.0.1:0", "--webhookAddr", "off"],
                                count=2)
    try:
        status, _, body = raw_get(addrs[1][1], "/ui/api/scrape")
        if seconds is None:
            assert status == 503, body  # 0 = off
        else:
            assert status == 200, body
            assert json.loads(body)["interval_s"] == seconds, body
    finally:
        assert stop_process(proc) == 0, proc.stderr_text()


def test_help_lists_the_view_endpoints(pilot_exe):  # noqa: F811
    r = subprocess.run([pilot_exe, "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0
    for ep in ("/ui/api/graph", "/ui/api/scrape", "/ui/api/failed", "/ui/api/validations",
               "/ui/api/proxies"):
        assert ep in r.stdout, ep


def analyze(cfg):
    """weftctl analyze -n istioinaction on the folder: {(code, origin, message, line)}."""
    exe = os.environ.get("WEFTCTL", "build/weftctl")
    r = subprocess.run([exe, "analyze", "-n", "istioinaction", str(cfg), "-o", "json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {(m["code"], m["origin"], m["message"], int(m.get("reference", ":0").rsplit(":", 1)[1]))
            for m in json.loads(r.stdout)}


def test_validations(pilot, cfg):
    v = get_json(pilot.mon, "/ui/api/validations?namespace=istioinaction")
    assert v["version"] and v["summary"]["error"] >= 2
    vs = [r for r in v["resources"]
          if r["kind"] == "VirtualService" and r["name"] == "catalog-v1-v2"]
    assert len(vs) == 1, v["resources"]
    vs = vs[0]
    assert vs["namespace"] == "istioinaction" and vs["origin"].endswith(VS_FILE)
    assert vs["yaml"] == (cfg / VS_FILE).read_text()
    assert vs["services"] == ["catalog.istioinaction.io", "catalog.istioinaction.svc.cluster.local"]
    codes = [(m["code"], m["level"]) for m in vs["messages"]]
    assert ("IST0101", "Error") in codes
    lines = vs["yaml"].split("\n")
    for m in vs["messages"]:
        if m["code"] == "IST0101":  # marked on the destination's host line
            assert "host: catalog.istioinaction.svc.cluster.local" in lines[m["line"] - 1], m
            assert m["documentation_url"].startswith(
                "https://istio.io/latest/docs/reference/config/analysis/ist0101/")
    # exactly what weftctl analyze prints for the same config (its file lines: the book's files
    # hold one document each, so a line in the file is the line in "yaml")
    got = {(m["code"], "%s %s/%s" % (r["kind"], r["namespace"], r["name"]), m["message"],
            m["line"]) for r in v["resources"] for m in r["messages"]}
    assert got == analyze(cfg)
    assert v["rejected"] == [] and v["not_implemented"] == []
    # the same answer again (cached per snapshot), and nothing for another namespace
    assert get_json(pilot.mon, "/ui/api/validations?namespace=istioinaction") == v
    other = get_json(pilot.mon, "/ui/api/validations?namespace=other")
    assert other["resources"] == [] and other["summary"] == {"error": 0, "warning": 0, "info": 0}

    # a broken VirtualService: rejected, the last good version keeps serving
    first_version = v["version"]
    (cfg / VS_FILE).write_text((cfg / VS_FILE).read_text().replace("weight: 20", 'weight: "x"'))
    v2 = poll(lambda: (lambda j: j if j["rejected"] else None)(
        get_json(pilot.mon, "/ui/api/validations")), timeout=10)
    rej = v2["rejected"][0]
    assert rej["origin"].endswith(VS_FILE) and rej["line"] == 18, rej
    assert "VirtualService istioinaction/catalog-v1-v2: spec.http[0].route[0].weight" in \
        rej["message"]
    assert rej["serving"] == "last good version kept: %s" % first_version
    configz = get_json(pilot.mon, "/debug/configz")
    kept = [r for r in configz["resources"] if r["name"] == "catalog-v1-v2"]
    assert kept and kept[0]["last_good"] is True


def proxy_bootstrap(xds_port):
    """A sidecar web-1.default (service account web) whose ADS stream goes to pilot's plaintext
    port (clusters only: it binds no listener of pilot's), with an inbound mTLS listener whose
    certificate comes from the CA (CA_ADDR)."""
    lst = listener(simple_routes("backend"))
    lst["filter_chains"][0]["transport_socket"] = inbound_tls()
    bs = bootstrap([lst], [cluster("backend", [1])],
                   node_id="sidecar~127.0.0.1~web-1.default~default.svc.cluster.local")
    bs["node"]["metadata"] = {"NAMESPACE": "default", "NAME": "web-1", "SERVICE_ACCOUNT": "web",
                              "WORKLOAD_NAME": "web", "ISTIO_VERSION": "1.24.0"}
    ads = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
    bs["dynamic_resources"] = {
        "ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                       "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
        "cds_config": ads}
    bs["static_resources"]["clusters"].append({
        "name": "xds-grpc", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1",
                                                         "port_value": xds_port}}}}]}]}})
    return bs


class Proxy:
    """weft-proxy on bs, started by hand: it stays INITIALIZING here (pilot's clusters only, no
    listeners), so the fixture that waits for /ready does not fit."""

    def __init__(self, tmp_path, bs, args):
        self.admin_port = free_port()
        bs.pop("_weft_auto_admin", None)
        bs["admin"]["address"]["socket_address"]["port_value"] = self.admin_port
        for lst in bs["static_resources"]["listeners"]:
            if lst.pop("_weft_auto_port", None):
                lst["address"]["socket_address"]["port_value"] = free_port()
        self.dir = tmp_path / "proxy"
        self.dir.mkdir()
        path = write_bootstrap(bs, str(self.dir))
        with open(self.dir / "stderr.txt", "wb") as err:
            self.proc = subprocess.Popen([proxy_path(), "-c", path, *map(str, args)],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=err)

    def log(self):
        return (self.dir / "stderr.txt").read_text()

    def admin(self, path):
        return http_request("127.0.0.1", self.admin_port, "GET", path, timeout=5)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        rc = self.proc.wait(timeout=20)
        assert rc == 0 and not any(m in self.log() for m in CRASH_MARKERS), self.log()[-3000:]


def test_proxies(pilot, pilot_exe, tmp_path, monkeypatch):  # noqa: F811
    assert get_json(pilot.mon, "/ui/api/proxies") == {"proxies": []}
    root = tmp_path / "root.pem"
    root.write_text(get_json(pilot.mon, "/debug/istio-ca-root-cert?namespace=default")["data"][
        "root-cert.pem"])
    tok = tmp_path / "web.token"
    tok.write_text(token(pilot_exe, tmp_path / "ca", "default", "web") + "\n")
    monkeypatch.setenv("CA_ADDR", "127.0.0.1:%d" % pilot.secure)
    monkeypatch.setenv("CA_ROOT_CA", str(root))
    proxy = Proxy(tmp_path, proxy_bootstrap(pilot.xds), ["--token-path", tok])
    try:
        check_proxy(pilot, proxy)
    finally:
        proxy.stop()
    gone = poll(lambda: (lambda ps: ps[0] if ps and not ps[0]["connected"] else None)(
        get_json(pilot.mon, "/ui/api/proxies")["proxies"]), timeout=10)
    assert gone["history"][-1]["event"] == "disconnected"
    assert gone["certificate"] and gone["history"][0]["event"] == "connected"


def check_proxy(pilot, proxy):
    poll(lambda: GENERATED in proxy.log(), timeout=20)

    def listed():
        ps = get_json(pilot.mon, "/ui/api/proxies")["proxies"]
        p = ps[0] if ps else None
        if p and p["certificate"] and [h for h in p["history"] if h["event"] == "ack"]:
            return p
        return None
    p = poll(listed, timeout=20)
    assert p["proxy_id"] == "web-1.default" and p["namespace"] == "default"
    assert p["node_id"] == "sidecar~127.0.0.1~web-1.default~default.svc.cluster.local"
    assert p["pod"] == "web-1" and p["workload"] == "web" and p["type"] == "sidecar"
    assert p["identity"] == "spiffe://cluster.local/ns/default/sa/web"
    assert p["connected"] is True and p["istio_version"] == "1.24.0"
    assert p["sync"]["CDS"] == "SYNCED" and p["sync"]["LDS"] == "IGNORED"
    assert set(p["sync"]) == {"CDS", "LDS", "EDS", "RDS", "ECDS"}
    # the same per-type state /debug/syncz computes
    syncz = get_json(pilot.mon, "/debug/syncz")[0]
    assert syncz["cluster_status"] == p["sync"]["CDS"]
    assert p["history"][0]["event"] == "connected"
    assert p["history"][0]["detail"].startswith(syncz["connection_id"])
    assert any(h["event"] == "ack" and h["detail"].startswith("CDS ") for h in p["history"])
    # the certificate the proxy holds is the one recorded
    cert = p["certificate"]
    assert cert["not_before_ms"] < cert["issued_ms"] < cert["not_after_ms"]
    status, _, body = proxy.admin("/certs")
    assert status == 200, body
    serials = [c["serial_number"] for e in json.loads(body)["certificates"]
               for c in e.get("cert_chain", [])]
    assert cert["serial"] in serials, (cert, serials)


def test_validations_kubernetes(api, tmp_path):  # noqa: F811
    """The Kubernetes source: the objects pilot serves, rendered as YAML, with the line at
    fault marked in the rendering."""
    for ns in (KNS, "istio-system"):
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for d in book_docs("services/catalog/kubernetes/catalog.yaml"):
        if d["kind"] == "Service":
            api.create(d)
    api.create(kube_pod("catalog-v1-a", "v1", "10.10.0.5"))
    for rel in ("ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml"):
        for d in book_docs(rel):
            api.create(d)
    p = KubePilot(api, tmp_path, extra=["--webhookAddr", "off"])
    try:
        def vs_entry():
            v = get_json(p.mon, "/ui/api/validations?namespace=%s" % KNS)
            return next((r for r in v["resources"] if r["kind"] == "VirtualService"), None)
        vs = poll(vs_entry, timeout=20)
        assert vs["origin"] == "kubernetes" and vs["name"] == "catalog-v1-v2"
        doc = yaml.safe_load(vs["yaml"])  # the object as pilot holds it, as YAML
        assert doc["kind"] == "VirtualService" and doc["metadata"]["name"] == "catalog-v1-v2"
        assert doc["spec"]["http"][0]["route"][1]["destination"]["subset"] == "version-v2"
        lines = vs["yaml"].split("\n")
        ist0101 = [m for m in vs["messages"] if m["code"] == "IST0101"]
        assert len(ist0101) == 2, vs["messages"]
        for m in ist0101:
            assert "host: catalog.istioinaction.svc.cluster.local" in lines[m["line"] - 1], m
    finally:
        p.stop()
