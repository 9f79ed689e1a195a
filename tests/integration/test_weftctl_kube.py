"""weftctl against a cluster (issue 21 item 5): the test API server (tests/kubeapi) holds the
book's catalog (Namespaces, Services, Deployments, the Gateway and VirtualService, one
VirtualService to a missing host), a Pod for istiod (app=istiod, podIP 127.0.0.1, its monitoring
port in the prometheus.io/port annotation) whose weft-pilot serves the mesh, and one Pod per
weft-proxy of a meshfix mesh (podIP = the proxy's loopback address, where its admin API answers on
15000, as Envoy's on a pod). Then, through the API server only:

  - `weftctl analyze --use-kube=true --kubeconfig K`: istioctl's messages for live resources (no
    file reference), exit 79; -f files laid over the cluster; KUBECONFIG alone turns --use-kube
    on; a namespace that does not exist; --use-kube=false without files is still a usage error;
  - `proxy-status`: the ISTIOD column names the istiod pod; `proxy-config cluster deploy/NAME`,
    `POD.NS`, `pod/NAME -n NS`; `proxy-config log -l app=catalog`; `describe pod`;
  - errors: API server unreachable, no istiod pod ("no running Istio pods in \\"x\\""), a pod
    that is not Running, a Deployment that does not exist, no pod matching;
  - the API server's proxy subresource itself with kubectl (`kubectl get --raw`).
"""
import json
import os
import ssl
import subprocess
import sys
import urllib.request

import pytest
import yaml

from conftest import ROOT
from meshfix import BOOK, GATEWAY_SERVICE, mesh  # noqa: F401 (fixture)

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

WEFTCTL = os.path.abspath(os.environ.get("WEFTCTL") or os.path.join(ROOT, "build", "weftctl"))
TOKEN = "weftctl-token"
NS = "istioinaction"
ISTIOD = "istiod-7d9f8c6b5-kq2xw"

PATHS = {"Namespace": "/api/v1/namespaces", "Service": "/api/v1/namespaces/%s/services",
         "Pod": "/api/v1/namespaces/%s/pods", "ServiceAccount": None,
         "Deployment": "/apis/apps/v1/namespaces/%s/deployments",
         "VirtualService": "/apis/networking.istio.io/v1/namespaces/%s/virtualservices",
         "DestinationRule": "/apis/networking.istio.io/v1/namespaces/%s/destinationrules",
         "Gateway": "/apis/networking.istio.io/v1/namespaces/%s/gateways"}

BROKEN_VS = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
             "metadata": {"name": "catalog-broken", "namespace": NS},
             "spec": {"hosts": ["catalog-broken.%s.svc.cluster.local" % NS],
                      "http": [{"route": [{"destination": {"host": "reviews"}}]}]}}


class Api:
    """The test API server over TLS with a bearer token; kubeconfig with the test CA."""

    def __init__(self, certs, tmp_path):
        self.srv = fixture.KubeApi(["--token", TOKEN, "--tls-cert", certs["server.crt"],
                                    "--tls-key", certs["server.key"]],
                                   log=str(tmp_path / "kubeapi.log")).start()
        self.kubeconfig = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), self.srv.url,
                                                   token=TOKEN, ca=certs["ca.crt"], namespace=NS)
        self.ctx = ssl.create_default_context(cafile=certs["ca.crt"])

    def req(self, method, path, body=None):
        r = urllib.request.Request(self.srv.url + path, method=method,
                                   data=json.dumps(body).encode() if body is not None else None,
                                   headers={"Authorization": "Bearer " + TOKEN,
                                            "Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=10, context=self.ctx) as resp:
            return json.loads(resp.read())

    def create(self, obj):
        p = PATHS[obj["kind"]]
        if p is None:
            return None
        if "%s" in p:
            obj["metadata"].setdefault("namespace", NS)
            p = p % obj["metadata"]["namespace"]
        return self.req("POST", p, obj)


def pod_object(pod, containers=("app", "istio-proxy"), phase="Running"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod.name, "namespace": pod.ns, "labels": pod.labels},
            "spec": {"nodeName": "node-1",
                     "containers": [{"name": c, "image": "weft",
                                     "ports": [{"containerPort": 3000, "name": "http",
                                                "protocol": "TCP"}]
                                     if c == "app" else []} for c in containers]},
            "status": {"phase": phase, "podIP": pod.ip,
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": c, "ready": True, "restartCount": 0}
                                             for c in containers]}}


def book(rel):
    with open(os.path.join(BOOK, rel)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return fixture.make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def cluster(mesh, certs, tmp_path):  # noqa: F811 (meshfix's fixture)
    """(api, mesh, pods): the catalog in the API server and in a running mesh."""
    if not os.path.isdir(BOOK):
        pytest.skip("book corpus not found")
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
              "ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml",
              "ch10/catalog-destinationrule-v1-v2.yaml"):
        mesh.add_config(os.path.join(BOOK, f))
    mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns=NS)
    gw = mesh.add_pod("istio-ingressgateway-5d8f9-gw1xx", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router")
    v1 = mesh.add_pod("catalog-6cf4b97d-abcde", NS, {"app": "catalog", "version": "v1"},
                      app_port=3000)
    v2 = mesh.add_pod("catalog-v2-7b9c8d-x7k2p", NS, {"app": "catalog", "version": "v2"},
                      app_port=3000)
    for p in (gw, v1, v2):
        mesh.wait_ready(p)
    mesh.wait_synced()
    api = Api(certs, tmp_path)
    api.create({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": NS, "labels": {"istio-injection": "enabled"}}})
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}})
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
              "ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml",
              "ch10/catalog-destinationrule-v1-v2.yaml"):
        for d in book(f):
            api.create(d)
    api.create(yaml.safe_load(GATEWAY_SERVICE))
    api.create(json.loads(json.dumps(BROKEN_VS)))
    api.create({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": ISTIOD, "namespace": "istio-system",
                             "labels": {"app": "istiod", "istio": "pilot"},
                             "annotations": {"prometheus.io/port": str(mesh.mon_port)}},
                "spec": {"containers": [{"name": "discovery", "image": "weft-pilot"}]},
                "status": {"phase": "Running", "podIP": "127.0.0.1"}})
    for p in (gw, v1, v2):
        api.create(pod_object(p))
    yield api, mesh, (gw, v1, v2)
    api.srv.stop()


def weftctl(*args, env=None, stdin=None):
    e = dict(os.environ)
    e.pop("KUBECONFIG", None)
    e.update(env or {})
    p = subprocess.run([WEFTCTL] + list(args), capture_output=True, text=True, timeout=60,
                       env=e, input=stdin)
    return p.returncode, p.stdout, p.stderr


def test_analyze_reads_the_live_cluster_and_lays_files_over_it(cluster, tmp_path):
    api, _, _ = cluster
    kc = api.kubeconfig
    rc, out, err = weftctl("analyze", "--use-kube=true", "--kubeconfig", kc)
    line = ('Error [IST0101] (VirtualService %s/catalog-broken) Referenced host not found: '
            '"reviews"' % NS)
    assert rc == 79, (out, err)
    assert line in out.splitlines(), out  # live resources carry no file reference
    assert "Analyzers found issues when analyzing namespace: %s." % NS in err  # the context's
    # KUBECONFIG alone turns --use-kube on (istioctl: a kubeconfig is found)
    rc2, out2, _ = weftctl("analyze", env={"KUBECONFIG": kc})
    assert rc2 == 79 and line in out2.splitlines(), out2
    # -o json: the same message without "reference"
    rc3, out3, _ = weftctl("analyze", "--kubeconfig", kc, "-o", "json")
    msgs = [m for m in json.loads(out3) if m["code"] == "IST0101"]
    assert rc3 == 0 and msgs and all("reference" not in m for m in msgs), out3
    # a file laid over the cluster: the missing Service now exists
    svc = tmp_path / "reviews.yaml"
    svc.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: reviews, namespace: %s}\n"
                   "spec:\n  selector: {app: reviews}\n  ports: [{name: http, port: 9080}]\n"
                   % NS)
    rc4, out4, err4 = weftctl("analyze", "--kubeconfig", kc, str(svc))
    assert "catalog-broken" not in out4, out4
    assert rc4 == 0, (out4, err4)
    # without the cluster the file alone is analyzed (the catalog is not there)
    rc5, out5, err5 = weftctl("analyze", "--use-kube=false", "--kubeconfig", kc, str(svc))
    assert rc5 == 0 and "catalog" not in out5, (out5, err5)
    rc6, _, err6 = weftctl("analyze", "--use-kube=false", "--kubeconfig", kc)
    assert rc6 == 64 and "nothing to analyze" in err6, err6
    # a namespace that does not exist: istioctl's line, exit 0
    rc7, out7, err7 = weftctl("analyze", "--kubeconfig", kc, "-n", "nowhere")
    assert rc7 == 0 and err7 == 'namespace "nowhere" not found\n', (out7, err7)


def test_proxy_status_through_the_api_server(cluster):
    api, _, (gw, v1, v2) = cluster
    rc, out, err = weftctl("proxy-status", "--kubeconfig", api.kubeconfig)
    assert rc == 0, err
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines()[1:]}
    assert out.split()[:9] == ["NAME", "CLUSTER", "CDS", "LDS", "EDS", "RDS", "ECDS", "ISTIOD",
                               "VERSION"], out
    for p in (gw, v1, v2):
        assert p.node_id in rows, out
        assert ISTIOD in rows[p.node_id], rows[p.node_id]  # the istiod pod that answered
    # ps POD: pilot's view against the proxy's dump, both through the API server
    rc, out, err = weftctl("ps", v1.node_id, "--kubeconfig", api.kubeconfig)
    assert rc == 0 and "Clusters Match" in out, (out, err)


def test_proxy_config_by_deployment_pod_and_selector(cluster):
    api, _, (gw, v1, v2) = cluster
    kc = api.kubeconfig
    want = "outbound|80||catalog.%s.svc.cluster.local" % NS
    for target, extra in (("deploy/catalog", ["-n", NS]), ("deployment/catalog-v2." + NS, []),
                          (v1.node_id, []), ("pod/" + v2.name, ["-n", NS]), (v1.name, [])):
        rc, out, err = weftctl("proxy-config", "cluster", target, "--kubeconfig", kc, "--fqdn",
                               "catalog", "-o", "json", *extra)
        assert rc == 0, (target, err)
        names = [c.get("name") for c in json.loads(out)]
        assert want in names, (target, names)
    # deploy/catalog is the v1 pod, deploy/catalog-v2 the v2 one (their selectors)
    rc, out, err = weftctl("pc", "bootstrap", "deploy/catalog-v2", "-n", NS, "--kubeconfig", kc)
    assert rc == 0 and v2.node_id in out and v1.node_id not in out, err
    # pc log -l: every pod the selector matches
    rc, out, err = weftctl("pc", "log", "-l", "app=catalog", "--kubeconfig", kc)
    assert rc == 0, err
    assert "%s:\n" % v1.node_id in out and "%s:\n" % v2.node_id in out, out
    # a level change is a POST through the proxy subresource
    rc, out, err = weftctl("pc", "log", "deploy/catalog", "-n", NS, "--level", "upstream:debug",
                           "--kubeconfig", kc)
    assert rc == 0 and out.startswith(v1.node_id + ":\n") and "upstream: debug" in out, (out, err)
    rc, out, err = weftctl("pc", "log", "-l", "app=nothing", "--kubeconfig", kc)
    assert rc == 1 and "Error: no pods found" in err, err


def test_describe_pod_through_the_api_server(cluster):
    api, _, (gw, v1, v2) = cluster
    rc, out, err = weftctl("describe", "pod", v1.name, "--kubeconfig", api.kubeconfig)
    assert rc == 0, err
    assert out.startswith("Pod: %s\n" % v1.name), out
    assert "   Pod Ports: 3000 (app)\n" in out, out
    assert "Service: catalog" in out and "Matching subsets: version-v1" in out, out
    assert "VirtualService: catalog-v1-v2" in out, out
    # a service: its pods' dumps through the API server
    rc, out, err = weftctl("describe", "svc", "catalog." + NS, "--kubeconfig", api.kubeconfig)
    assert rc == 0 and "Service: catalog" in out, (out, err)
    # describe needs no istiod (istioctl reads the pod and its proxy only)
    rc, out, err = weftctl("describe", "pod", v2.name, "--kubeconfig", api.kubeconfig, "-i",
                           "elsewhere")
    assert rc == 0 and "Matching subsets: version-v2" in out, err
    rc, out, err = weftctl("describe", "pod", "nope", "--kubeconfig", api.kubeconfig)
    assert rc == 1 and err == 'Error: pods "nope" not found\n', err


def test_errors_name_what_failed(cluster, tmp_path):
    api, mesh, (gw, v1, v2) = cluster
    kc = api.kubeconfig
    # no istiod in that namespace
    rc, _, err = weftctl("proxy-status", "--kubeconfig", kc, "-i", "elsewhere")
    assert rc == 1 and err == 'Error: no running Istio pods in "elsewhere"\n', err
    # a pod that is not running
    pending = type("P", (), {"name": "catalog-6cf4b97d-pend1", "ns": NS, "ip": "127.0.0.9",
                             "labels": {"app": "catalog", "version": "v1"}})
    api.create(pod_object(pending, phase="Pending"))
    rc, _, err = weftctl("pc", "cluster", pending.name, "--kubeconfig", kc)
    assert rc == 1 and "pod is not running. Status=Pending" in err, err
    # no such Deployment, no pod it selects
    rc, _, err = weftctl("pc", "cluster", "deploy/nothing", "--kubeconfig", kc)
    assert err == ('Error: failed retrieving: deployments.apps "nothing" not found in the "%s" '
                   'namespace\n' % NS) and rc == 1, err
    rc, _, err = weftctl("pc", "cluster", "nothing", "--kubeconfig", kc)
    assert rc == 1 and err == 'Error: pods "nothing" not found\n', err
    api.create({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "empty", "namespace": NS},
                "spec": {"selector": {"matchLabels": {"app": "empty"}},
                         "template": {"metadata": {"labels": {"app": "empty"}}}}})
    rc, _, err = weftctl("pc", "cluster", "deploy/empty", "--kubeconfig", kc)
    assert rc == 1 and 'no pods match "deploy/empty"' in err, err
    # the API server is unreachable
    dead = fixture.write_kubeconfig(str(tmp_path / "dead"), "https://127.0.0.1:1", token=TOKEN)
    for args in (("proxy-status",), ("pc", "cluster", v1.node_id), ("analyze",)):
        rc, _, err = weftctl(*args, "--kubeconfig", dead)
        assert rc == 1 and "127.0.0.1:1" in err and "refused" in err, (args, err)
    # --pilot keeps the local mesh even with a kubeconfig
    rc, out, err = weftctl("proxy-status", "--kubeconfig", dead, "--pilot",
                           "127.0.0.1:%d" % mesh.mon_port)
    assert rc == 0 and "weft-pilot" in out, err


def test_service_proxy_follows_endpointslices(cluster):
    api, _, (gw, v1, v2) = cluster
    path = "/api/v1/namespaces/%s/services/catalog:http/proxy/healthz" % NS

    def pod_answering():
        r = urllib.request.Request(api.srv.url + path,
                                   headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(r, timeout=10, context=api.ctx) as resp:
            assert resp.status == 200
            return resp.headers.get("x-weft-pod")
    assert pod_answering() == v1.name  # no slice: the first Running pod the selector matches
    api.req("POST", "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % NS,
            {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
             "metadata": {"name": "catalog-x1", "namespace": NS,
                          "labels": {"kubernetes.io/service-name": "catalog"}},
             "addressType": "IPv4", "ports": [{"name": "http", "port": 3000}],
             "endpoints": [{"addresses": [v1.ip], "conditions": {"ready": False}},
                           {"addresses": [v2.ip], "conditions": {"ready": True}}]})
    assert pod_answering() == v2.name  # the ready endpoint


def test_api_server_proxy_subresource_with_kubectl(cluster, tmp_path):
    api, _, (gw, v1, v2) = cluster
    kubectls = fixture.kubectls()
    if not kubectls:
        pytest.skip("no kubectl")
    for _, k in kubectls:
        def raw(path):
            return subprocess.run([k, "--kubeconfig", api.kubeconfig, "--cache-dir",
                                   str(tmp_path / "cache"), "get", "--raw", path],
                                  capture_output=True, text=True, timeout=30)
        r = raw("/api/v1/namespaces/%s/pods/%s:15000/proxy/server_info" % (NS, v1.name))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["state"] == "LIVE", r.stdout
        r = raw("/api/v1/namespaces/istio-system/pods/%s:%d/proxy/debug/syncz"
                % (ISTIOD, cluster[1].mon_port))
        assert r.returncode == 0 and v1.node_id in r.stdout, r.stderr
        # a service: a pod its selector matches (no EndpointSlice yet), its targetPort
        r = raw("/api/v1/namespaces/%s/services/catalog:80/proxy/healthz" % NS)
        assert r.returncode == 0, r.stderr
        # a pod that does not exist: the API server's 404
        r = raw("/api/v1/namespaces/%s/pods/nope:15000/proxy/server_info" % NS)
        assert r.returncode != 0 and ("NotFound" in r.stderr or "not found" in r.stderr), \
            r.stderr


def test_analyze_use_kube_honours_what_the_injector_implements(certs, tmp_path):
    """--use-kube: the pods are injected by Istio's template (weft's injector honours
    sidecar.istio.io/proxyCPU): no WFT0001 for it; one the injector ignores is still reported;
    files alone (the local mesh) report both."""
    api = Api(certs, tmp_path)
    try:
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        dep = tmp_path / "dep.yaml"
        dep.write_text(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: %s}\n"
            "spec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n"
            "      labels: {app: web}\n      annotations:\n"
            "        sidecar.istio.io/proxyCPU: 100m\n"
            "        sidecar.istio.io/bootstrapOverride: x\n"
            "    spec:\n      containers: [{name: web, image: web}]\n" % NS)
        rc, out, err = weftctl("analyze", "--kubeconfig", api.kubeconfig, str(dep))
        assert "sidecar.istio.io/bootstrapOverride] has no effect in weft" in out, (out, err)
        assert "proxyCPU" not in out, out
        rc, out, err = weftctl("analyze", "--use-kube=false", "-A", str(dep))
        assert "sidecar.istio.io/bootstrapOverride] has no effect in weft" in out, (out, err)
        assert "sidecar.istio.io/proxyCPU] has no effect in weft" in out, out
    finally:
        api.srv.stop()
