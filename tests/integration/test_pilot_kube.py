"""weft-pilot's Kubernetes config source (src/pilot/source_kube.c) against the test API server
(tests/kubeapi): the book's catalog objects created through the API (Namespace, Service, Pods,
EndpointSlice, DestinationRule, VirtualService, Gateway) reach a proxy's clusters, endpoints and
routes; an EndpointSlice scaled and a VirtualService edited are pushed (a real ADS client,
weft-xds-load, sees the new EDS/RDS versions, and weftctl proxy-status shows it SYNCED); an
invalid VirtualService is reported with its last good version still served; the API server going
away keeps the last config serving (/debug/kubez shows the watches backing off, the client stays
SYNCED) and coming back resyncs; a 410 relist is survived; in cluster with discoverySelectors.
"""
import json
import os
import queue
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

from conftest import ROOT, shared_path
from procs import crash_report, start_process, stop_process

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

TOKEN = "pilot-token"
NS = "istioinaction"
BOOK = os.path.join("corpus", "istioinaction")
PROXY = "catalog-v1-a." + NS
CATALOG = "outbound|80||catalog.%s.svc.cluster.local" % NS

PATHS = {"Namespace": "/api/v1/namespaces", "Service": "/api/v1/namespaces/%s/services",
         "Pod": "/api/v1/namespaces/%s/pods", "ConfigMap": "/api/v1/namespaces/%s/configmaps",
         "EndpointSlice": "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices",
         "VirtualService": "/apis/networking.istio.io/v1/namespaces/%s/virtualservices",
         "DestinationRule": "/apis/networking.istio.io/v1/namespaces/%s/destinationrules",
         "Gateway": "/apis/networking.istio.io/v1/namespaces/%s/gateways"}


def exe(var, name):
    """$var, else name next to $WEFT_PILOT (ctest's build tree), else build/name."""
    pilot = os.environ.get("WEFT_PILOT")
    p = os.environ.get(var) or (os.path.join(os.path.dirname(os.path.abspath(pilot)), name)
                                if pilot else os.path.join(ROOT, "build", name))
    if not os.access(p, os.X_OK):
        pytest.fail("%s is missing: build it or set %s" % (p, var))
    return os.path.abspath(p)


class Api:
    def __init__(self, certs, tmp_path):
        self.certs = certs
        self.state = str(tmp_path / "state.json")
        self.args = ["--token", TOKEN, "--tls-cert", certs["server.crt"], "--tls-key",
                     certs["server.key"], "--bookmark-interval", "0.5", "--state", self.state]
        self.srv = fixture.KubeApi(self.args, log=str(tmp_path / "kubeapi.log")).start()
        self.ctx = ssl.create_default_context(cafile=certs["ca.crt"])

    def req(self, method, path, body=None):
        r = urllib.request.Request(self.srv.url + path, method=method,
                                   data=json.dumps(body).encode() if body is not None else None,
                                   headers={"Authorization": "Bearer " + TOKEN,
                                            "Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=10, context=self.ctx) as resp:
            return json.loads(resp.read())

    def path(self, obj):
        p = PATHS[obj["kind"]]
        return p % obj["metadata"].get("namespace", NS) if "%s" in p else p

    def create(self, obj):
        if obj["kind"] != "Namespace":
            obj["metadata"].setdefault("namespace", NS)
        return self.req("POST", self.path(obj), obj)

    def update(self, obj):
        cur = self.req("GET", self.path(obj) + "/" + obj["metadata"]["name"])
        obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        return self.req("PUT", self.path(obj) + "/" + obj["metadata"]["name"], obj)

    def stop(self):
        self.srv.stop()


def book_docs(rel):
    with open(os.path.join(shared_path(), BOOK, rel)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pod(name, version, ip, ready=True):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS,
                         "labels": {"app": "catalog", "version": version}},
            "spec": {"serviceAccountName": "catalog",
                     "containers": [{"name": "catalog", "image": "istioinaction/catalog:latest",
                                     "ports": [{"containerPort": 3000, "name": "http"}]}]},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def slice_(eps):
    """The EndpointSlice of catalog: eps = [(pod, ip, ready)]."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "catalog-abcde", "namespace": NS,
                         "labels": {"kubernetes.io/service-name": "catalog"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 3000, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": r, "serving": r,
                                                              "terminating": False},
                           "targetRef": {"kind": "Pod", "name": p, "namespace": NS}}
                          for p, ip, r in eps]}


def mesh_vs(w1, w2):
    """The sidecars' VirtualService for catalog: weights to the subsets v1 and v2."""
    host = "catalog.%s.svc.cluster.local" % NS
    return {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
            "metadata": {"name": "catalog-mesh", "namespace": NS},
            "spec": {"hosts": [host], "http": [{"route": [
                {"destination": {"host": host, "subset": "version-v1"}, "weight": w1},
                {"destination": {"host": host, "subset": "version-v2"}, "weight": w2}]}]}}


def subset(v):
    return "outbound|80|version-%s|catalog.%s.svc.cluster.local" % (v, NS)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return fixture.make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def api(certs, tmp_path):
    if not os.path.isdir(os.path.join(shared_path(), BOOK)):
        pytest.skip("book corpus not found")
    a = Api(certs, tmp_path)
    yield a
    a.stop()


def catalog(api):
    """The book's catalog (ch10: two versions, subsets, the gateway and a VirtualService)."""
    api.create({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": NS, "labels": {"istio-injection": "enabled"}}})
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}})
    api.create({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "istio", "namespace": "istio-system"},
                "data": {"mesh": "accessLogFile: /dev/stdout\n"
                                 "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n"}})
    for d in book_docs("services/catalog/kubernetes/catalog.yaml"):
        if d["kind"] == "Service":
            api.create(d)
    api.create(pod("catalog-v1-a", "v1", "10.10.0.5"))
    api.create(pod("catalog-v2-b", "v2", "10.10.0.6"))
    api.create(slice_([("catalog-v1-a", "10.10.0.5", True), ("catalog-v2-b", "10.10.0.6", True)]))
    for rel in ("ch10/catalog-gateway.yaml", "ch10/catalog-destinationrule-v1-v2.yaml",
                "ch10/catalog-virtualservice-subsets-v1-v2.yaml"):
        for d in book_docs(rel):
            api.create(d)
    api.create(mesh_vs(20, 80))


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def get_json(port, path):
    status, body = get(port, path)
    assert status == 200, body
    return json.loads(body)


def poll(fn, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("%s not met within %.1fs" % (what, timeout))
        time.sleep(0.1)


class Pilot:
    def __init__(self, api, tmp_path, extra=()):
        kc = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), api.srv.url, token=TOKEN,
                                      ca=api.certs["ca.crt"])
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        self.proc, addrs = start_process(
            [exe("WEFT_PILOT", "weft-pilot"), "--kubeconfig", kc, "--context", "test",
             "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
             "--debounce-after-ms", "50"] + list(extra), count=2, env=env, timeout=40)
        self.xds = addrs[0][1]
        self.mon = addrs[1][1]

    def dump(self):
        s, b = get(self.mon, "/debug/config_dump?proxyID=%s&include_eds" % PROXY)
        return json.loads(b) if s == 200 else None

    def endpoints(self, cluster=CATALOG):
        d = self.dump()
        if not d:
            return None
        for e in d["configs"][2]["dynamic_endpoint_configs"]:
            if e["endpoint_config"]["cluster_name"] == cluster:
                return sorted(lb["endpoint"]["address"]["socket_address"]["address"]
                              for g in e["endpoint_config"].get("endpoints", [])
                              for lb in g.get("lb_endpoints", []))
        return []

    def routes(self):
        """{virtual host name: [(cluster, weight)]} of the routes on port 80."""
        d = self.dump()
        out = {}
        for rc in d["configs"][5]["dynamic_route_configs"]:
            for vh in rc["route_config"].get("virtual_hosts", []):
                for r in vh.get("routes", []):
                    wc = r.get("route", {}).get("weighted_clusters")
                    if wc:
                        out[vh["name"]] = [(c["name"], c["weight"]) for c in wc["clusters"]]
        return out

    def kubez(self):
        return get_json(self.mon, "/debug/kubez")

    def stop(self):
        rc = stop_process(self.proc)
        assert crash_report(self.proc) is None, self.proc.stderr_text()
        assert rc == 0, self.proc.stderr_text()


@pytest.fixture
def pilot(api, tmp_path):
    catalog(api)
    p = Pilot(api, tmp_path)
    yield p
    p.stop()


class XdsClient:
    """weft-xds-load with one simulated sidecar (catalog-v1-a): an ADS stream as Envoy's, its
    READY/RESULT lines read in the background."""

    def __init__(self, pilot, tmp_path):
        proxies = tmp_path / "proxies.txt"
        proxies.write_text("catalog-v1-a %s 10.10.0.5 %s\n"
                           % (NS, json.dumps({"app": "catalog", "version": "v1"})))
        self.a, self.b = tmp_path / "poke-a", tmp_path / "poke-b"
        self.a.write_text("x")
        self.proc = subprocess.Popen(
            [exe("WEFT_XDS_LOAD", "weft-xds-load"), "--addr", "127.0.0.1:%d" % pilot.xds,
             "--proxies", str(proxies), "-n", "1", "--settle-ms", "1000", "--timeout-s", "30"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self.next("READY")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)

    def next(self, tag, timeout=40):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            if line.startswith(tag + " "):
                return json.loads(line[len(tag) + 1:])
        raise AssertionError("weft-xds-load: no %s line" % tag)

    def change(self, do):
        """t0, then do() (a change through the API), then what the sidecar received."""
        self.proc.stdin.write("change api %s %s\n" % (self.a, self.b))
        self.proc.stdin.flush()
        self.a, self.b = self.b, self.a
        time.sleep(0.2)
        do()
        return self.next("RESULT")

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(10)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(5)


def test_catalog_reaches_the_proxy_and_updates_are_pushed(api, pilot, tmp_path):
    assert get(pilot.mon, "/ready")[0] == 200
    assert poll(lambda: pilot.endpoints() == ["10.10.0.5", "10.10.0.6"], what="both endpoints")
    assert pilot.endpoints("outbound|80|version-v1|catalog.%s.svc.cluster.local" % NS) == \
        ["10.10.0.5"]
    d = pilot.dump()
    clusters = [c["cluster"]["name"] for c in d["configs"][1]["dynamic_active_clusters"]]
    assert CATALOG in clusters
    routes = pilot.routes()
    assert [(subset("v1"), 20), (subset("v2"), 80)] in routes.values(), routes
    # the istio ConfigMap is the MeshConfig
    mesh = get_json(pilot.mon, "/debug/mesh")
    assert mesh["outboundTrafficPolicy"]["mode"] == "REGISTRY_ONLY", mesh
    configz = get_json(pilot.mon, "/debug/configz")
    names = {(r["kind"], r["name"]) for r in configz["resources"]}
    assert ("Gateway", "catalog-gateway") in names and ("Service", "catalog") in names
    kz = pilot.kubez()
    assert kz["source"] == "kubernetes" and kz["server"] == api.srv.url
    w = {x["kind"]: x for x in kz["watches"]}
    assert w["Pod"]["fieldSelector"] == "status.phase!=Failed"
    assert w["ConfigMap"]["namespace"] == "istio-system"
    assert all(x["synced"] and x["resourceVersion"] for x in kz["watches"]), kz
    # an ADS client sees the scale-down of the slice (EDS only) and a VirtualService edit
    x = XdsClient(pilot, tmp_path)
    try:
        r = x.change(lambda: api.update(slice_([("catalog-v1-a", "10.10.0.5", True),
                                                ("catalog-v2-b", "10.10.0.6", False)])))
        assert r["converged"] == 1, r
        assert r["new_version"].get("eds", 0) == 1 and r["new_version"].get("lds", 0) == 0, r
        assert pilot.endpoints() == ["10.10.0.5"]
        why = pilot.kubez()["pods_not_endpoints"][NS + "/catalog-v2-b"]
        assert why.startswith("EndpointSlice %s/catalog-abcde: 10.10.0.6 ready=false" % NS), why
        r = x.change(lambda: api.update(mesh_vs(50, 50)))
        assert r["converged"] == 1 and r["new_version"].get("rds", 0) == 1, r
        assert [(subset("v1"), 50), (subset("v2"), 50)] in pilot.routes().values()
        # weftctl proxy-status sees the proxy SYNCED on what came from the API server
        ps = subprocess.run([exe("WEFTCTL", "weftctl"), "proxy-status", "--pilot",
                             "127.0.0.1:%d" % pilot.mon, "-o", "json"],
                            capture_output=True, text=True, timeout=20)
        assert ps.returncode == 0, ps.stderr
        res = json.loads(ps.stdout)["resources"]
        assert [c["node"]["id"] for c in res] == [PROXY], res
        for g in res[0]["genericXdsConfigs"]:
            assert g["configStatus"] == "SYNCED", g
    finally:
        x.close()


def test_invalid_object_keeps_last_good(api, pilot):
    poll(lambda: pilot.endpoints() == ["10.10.0.5", "10.10.0.6"], what="endpoints")
    before = pilot.routes()
    vs = mesh_vs("eighty", 80)
    api.update(vs)
    errs = poll(lambda: get_json(pilot.mon, "/debug/config_errors"), what="the error")
    assert len(errs) == 1, errs
    e = errs[0]
    name = vs["metadata"]["name"]
    assert e["file"] == "kube:VirtualService/%s/%s" % (NS, name), e
    assert e["resource"] == "VirtualService %s/%s" % (NS, name)
    assert e["field"] == "spec.http[0].route[0].weight" and e["kept_last_good"] is True
    assert "config error: kube:VirtualService/%s/%s: VirtualService %s/%s: spec.http[0]" % (
        NS, name, NS, name) in pilot.proc.stderr_text()  # no line: an object, not a file
    assert pilot.routes() == before
    kept = [r for r in get_json(pilot.mon, "/debug/configz")["resources"] if r["name"] == name]
    assert kept and kept[0]["last_good"] is True


def synced(pilot):
    sz = get_json(pilot.mon, "/debug/syncz")
    return len(sz) == 1 and all(sz[0][t + "_status"] == "SYNCED"
                                for t in ("cluster", "listener", "route", "endpoint"))


def test_api_server_away_keeps_serving_and_resyncs(api, pilot, tmp_path):
    poll(lambda: pilot.endpoints() == ["10.10.0.5", "10.10.0.6"], what="endpoints")
    routes = pilot.routes()
    x = XdsClient(pilot, tmp_path)
    try:
        poll(lambda: synced(pilot), what="the ADS client SYNCED")
        port = api.srv.port
        api.srv.stop()
        kz = poll(lambda: (lambda k: k if all(w["state"] == "backing-off" for w in k["watches"])
                           else None)(pilot.kubez()), what="every watch backing off")
        for w in kz["watches"]:  # refused, or cut during a TLS handshake at the stop
            assert w["errors"] >= 1 and w["last_error"], w
        assert get(pilot.mon, "/ready")[0] == 200
        assert pilot.endpoints() == ["10.10.0.5", "10.10.0.6"] and pilot.routes() == routes
        time.sleep(2)  # back-offs come and go: nothing is rebuilt, the proxy stays SYNCED
        assert synced(pilot)
        assert "snapshot 2:" not in pilot.proc.stderr_text()

        # while it was away the cluster changed: catalog-v2-b went not ready
        def restart():
            state = json.load(open(api.state))
            state["rv"] += 3
            for o in state["objs"]:
                if o[1] == "endpointslices":
                    o[2]["endpoints"][1]["conditions"]["ready"] = False
                    o[2]["metadata"]["resourceVersion"] = str(state["rv"])
            json.dump(state, open(api.state, "w"))
            api.srv = fixture.KubeApi(api.args, port=port, log=api.srv.log).start()
        r = x.change(restart)
        assert r["converged"] == 1 and r["new_version"]["eds"] == 1, r
        assert pilot.endpoints() == ["10.10.0.5"]
        kz = poll(lambda: (lambda k: k if all(w["state"] == "watching" for w in k["watches"])
                           else None)(pilot.kubez()), timeout=60, what="every watch watching")
        assert all(w["lists"] >= 2 for w in kz["watches"]), kz  # relisted after the restart
        assert pilot.routes() == routes
        assert get_json(pilot.mon, "/debug/config_errors") == []
        poll(lambda: synced(pilot), what="SYNCED again")
    finally:
        x.close()


def test_expired_relist_is_survived(api, pilot):
    poll(lambda: pilot.endpoints() == ["10.10.0.5", "10.10.0.6"], what="endpoints")
    poll(lambda: all(w["state"] == "watching" for w in pilot.kubez()["watches"]), what="watching")
    before = get_json(pilot.mon, "/debug/push_status")
    api.srv.control("expire")
    kz = poll(lambda: (lambda k: k if all(w["relists_expired"] >= 1 and w["state"] == "watching"
                                          for w in k["watches"]) else None)(pilot.kubez()),
              timeout=40, what="every watch relisted after 410")
    assert "410" in kz["watches"][0]["last_error"]
    assert pilot.endpoints() == ["10.10.0.5", "10.10.0.6"]
    assert get_json(pilot.mon, "/debug/config_errors") == []
    # the relist found what the caches held: nothing to push (a build, if any, is NONE)
    time.sleep(0.5)
    after = get_json(pilot.mon, "/debug/push_status")
    assert after["snapshot"] == before["snapshot"] or after["change"] == "NONE", (before, after)
    assert after["version"] == before["version"], (before, after)
    api.create(pod("catalog-v1-c", "v1", "10.10.0.7"))
    poll(lambda: pilot.endpoints() == ["10.10.0.5", "10.10.0.6", "10.10.0.7"],
         what="a Pod after the relist")


def test_command_line_and_unreachable_api(tmp_path):
    pilot = exe("WEFT_PILOT", "weft-pilot")
    env = dict(os.environ)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    r = subprocess.run([pilot, "--help"], capture_output=True, text=True, env=env, timeout=10)
    assert r.returncode == 0 and "--kubeconfig FILE" in r.stdout and "--context NAME" in r.stdout
    r = subprocess.run([pilot, "--kubeconfig", "x", "--meshConfig", "m"], capture_output=True,
                       text=True, env=env, timeout=10)
    assert r.returncode == 2 and "istio ConfigMap" in r.stderr
    r = subprocess.run([pilot, "--config-dir", str(tmp_path), "--context", "c"],
                       capture_output=True, text=True, env=env, timeout=10)
    assert r.returncode == 2 and "--context needs the Kubernetes API" in r.stderr
    kc = fixture.write_kubeconfig(str(tmp_path / "bad"), "https://127.0.0.1:1", token="t")
    r = subprocess.run([pilot, "--kubeconfig", kc, "--context", "nope", "--grpcAddr",
                        "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0"], capture_output=True,
                       text=True, timeout=10, env=dict(env, XDG_STATE_HOME=str(tmp_path / "st")))
    assert r.returncode == 1 and "nope" in r.stderr, r.stderr
    r = subprocess.run([pilot, "--config-dir", str(tmp_path), "--kubeconfig", "x"],
                       capture_output=True, text=True, env=env, timeout=10)
    assert r.returncode == 2 and "cannot be combined" in r.stderr
    r = subprocess.run([pilot], capture_output=True, text=True, env=env, timeout=10)
    assert r.returncode == 2 and "--kubeconfig" in r.stderr
    kc = fixture.write_kubeconfig(str(tmp_path / "kc"), "https://127.0.0.1:1", token="t")
    r = subprocess.run([pilot, "--kubeconfig", kc, "--kube-sync-timeout-s", "2",
                        "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30,
                       env=dict(env, XDG_STATE_HOME=str(tmp_path / "st")))
    assert r.returncode == 1, r.stderr
    assert "https://127.0.0.1:1: not synced after 2000 ms" in r.stderr
    assert "Connection refused" in r.stderr


def test_in_cluster_by_default(certs, tmp_path):
    """No --config-dir, no --kubeconfig, KUBERNETES_SERVICE_HOST set: in cluster, as istiod.
    MeshConfig discoverySelectors: only the Pods of selected namespaces are seen, and labelling
    a namespace brings its objects in."""
    root = tmp_path / "root"
    a = Api(certs, tmp_path)
    a.stop()
    a.args += ["--incluster-root", str(root), "--incluster-ca", certs["ca.crt"]]
    a.srv = fixture.KubeApi(a.args, log=str(tmp_path / "kubeapi.log")).start()
    try:
        a.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}})
        a.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        a.create({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "istio", "namespace": "istio-system"},
                  "data": {"mesh": "discoverySelectors:\n- matchLabels: {mesh: weft}\n"}})
        host, port = a.srv.url[len("https://"):].rsplit(":", 1)
        env = dict(os.environ, KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port,
                   XDG_STATE_HOME=str(tmp_path / "state"))
        proc, addrs = start_process(
            [exe("WEFT_PILOT", "weft-pilot"), "--in-cluster-root", str(root), "--grpcAddr",
             "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0"], count=2, env=env, timeout=40)
        try:
            mon = addrs[1][1]
            kz = get_json(mon, "/debug/kubez")
            assert kz["origin"] == "in-cluster" and kz["server"] == a.srv.url, kz
            assert kz["discovery_namespaces"] == [], kz
            ws = get_json(mon, "/debug/config_errors")
            assert not [w for w in ws if w["field"] == "discoverySelectors"], ws
            a.create(pod("catalog-v1-a", "v1", "10.10.0.5"))
            a.create(pod("other", "v1", "10.10.0.9"))

            def pods():
                return sorted(r["name"] for r in get_json(mon, "/debug/configz")["resources"]
                              if r["kind"] == "Pod")
            time.sleep(1)
            assert pods() == []  # istioinaction is not selected
            a.update({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": NS, "labels": {"mesh": "weft"}}})
            poll(lambda: pods() == ["catalog-v1-a", "other"], what="the labelled namespace")
            assert get_json(mon, "/debug/kubez")["discovery_namespaces"] == [NS]
        finally:
            rc = stop_process(proc)
            assert crash_report(proc) is None and rc == 0, proc.stderr_text()
    finally:
        a.stop()
