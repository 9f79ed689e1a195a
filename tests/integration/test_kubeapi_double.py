"""The test API server (tests/kubeapi/kubeapi.py) checked with clients nobody on the project
wrote: Debian's kubectl (package kubernetes-client; also any other kubectl on PATH) and Debian's
python3-kubernetes. Every test starts its own server on a free loopback port, over TLS with a
test CA (kubeconfig certificate-authority-data) and a bearer token, and stops it."""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "kubeapi"))
import fixture  # noqa: E402

TOKEN = "weft-test-token"
KUBECTLS = fixture.kubectls()


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="weft-kubeapi-certs-")
    yield fixture.make_certs(d)
    subprocess.run(["rm", "-rf", d])


@pytest.fixture
def api(certs, tmp_path):
    srv = fixture.KubeApi(["--token", TOKEN, "--tls-cert", certs["server.crt"], "--tls-key",
                           certs["server.key"], "--client-ca", certs["ca.crt"],
                           "--bookmark-interval", "0.5"], log=str(tmp_path / "kubeapi.log"))
    srv.start()
    srv.kubeconfig = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), srv.url,
                                              token=TOKEN, ca=certs["ca.crt"])
    yield srv
    srv.stop()


def kubectl(path, api, tmp_path, *args, stdin=None, check=True):
    cmd = [path, "--kubeconfig", api.kubeconfig, "--cache-dir", str(tmp_path / "cache")]
    r = subprocess.run(cmd + list(args), input=stdin, capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


POD = """apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
spec:
  containers:
  - name: app
    image: example/app:1
"""

VS = """apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews}
"""


def kube_ids():
    return [label for label, _ in KUBECTLS]


needs_kubectl = pytest.mark.skipif(not KUBECTLS, reason="no kubectl (run scripts/setup)")


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=kube_ids())
def test_kubectl_version_discovery_and_crud(kc, api, tmp_path):
    _, k = kc
    v = json.loads(kubectl(k, api, tmp_path, "version", "-o", "json").stdout)
    assert v["serverVersion"]["gitVersion"].startswith("v1.")
    out = kubectl(k, api, tmp_path, "get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/default" in out and "namespace/kube-system" in out
    kubectl(k, api, tmp_path, "apply", "--validate=false", "-f", "-", stdin=POD % ("web-1", "web"))
    kubectl(k, api, tmp_path, "create", "--validate=false", "-f", "-", stdin=POD % ("db-1", "db"))
    # create again: 409 AlreadyExists with the Status message
    r = kubectl(k, api, tmp_path, "create", "--validate=false", "-f", "-",
                stdin=POD % ("db-1", "db"), check=False)
    assert r.returncode != 0 and 'pods "db-1" already exists' in r.stderr
    got = json.loads(kubectl(k, api, tmp_path, "get", "pod", "web-1", "-o", "json").stdout)
    assert got["kind"] == "Pod" and got["metadata"]["labels"] == {"app": "web"}
    rv1 = int(got["metadata"]["resourceVersion"])
    # apply a change: strategic merge patch, a new (greater) resourceVersion
    kubectl(k, api, tmp_path, "apply", "--validate=false", "-f", "-",
            stdin=(POD % ("web-1", "web")).replace("example/app:1", "example/app:2"))
    got = json.loads(kubectl(k, api, tmp_path, "get", "pod", "web-1", "-o", "json").stdout)
    assert got["spec"]["containers"][0]["image"] == "example/app:2"
    assert int(got["metadata"]["resourceVersion"]) > rv1
    # label and field selectors
    names = kubectl(k, api, tmp_path, "get", "pods", "-l", "app in (web,x)", "-o",
                    "name").stdout.split()
    assert names == ["pod/web-1"]
    names = kubectl(k, api, tmp_path, "get", "pods", "--field-selector", "metadata.name!=web-1",
                    "-o", "name").stdout.split()
    assert names == ["pod/db-1"]
    r = kubectl(k, api, tmp_path, "get", "pods", "--field-selector", "spec.bogus=1", check=False)
    assert r.returncode != 0 and "field label not supported: spec.bogus" in r.stderr
    # an Istio kind through its group and an alias version
    kubectl(k, api, tmp_path, "apply", "--validate=false", "-f", "-", stdin=VS)
    vs = json.loads(kubectl(k, api, tmp_path, "get", "virtualservices.v1beta1.networking.istio.io",
                            "reviews", "-o", "json").stdout)
    assert vs["apiVersion"] == "networking.istio.io/v1beta1" and vs["spec"]["hosts"] == ["reviews"]
    # server-side apply (apply-patch+yaml with a fieldManager) creates, then updates
    dr = ("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: dr}\n"
          "spec: {host: reviews}\n")
    for _ in range(2):
        out = kubectl(k, api, tmp_path, "apply", "--server-side", "--validate=false", "-f", "-",
                      stdin=dr).stdout
        assert "destinationrule.networking.istio.io/dr serverside-applied" in out
    dr2 = dr.replace("reviews", "ratings")
    # kubectl 1.20 checks /openapi/v2 (protobuf) for the kind's dryRun parameter first
    out = kubectl(k, api, tmp_path, "apply", "--server-side", "--dry-run=server",
                  "--validate=false", "-f", "-", stdin=dr2).stdout
    assert "serverside-applied (server dry run)" in out, out
    assert kubectl(k, api, tmp_path, "get", "dr", "dr", "-o",
                   "jsonpath={.spec.host}").stdout == "reviews"  # a dry run stores nothing
    kubectl(k, api, tmp_path, "delete", "pod", "web-1")
    r = kubectl(k, api, tmp_path, "get", "pod", "web-1", check=False)
    assert r.returncode != 0 and 'pods "web-1" not found' in r.stderr


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=kube_ids())
def test_kubectl_auth(kc, api, certs, tmp_path):
    _, k = kc
    bad = fixture.write_kubeconfig(str(tmp_path / "bad"), api.url, token="wrong",
                                   ca=certs["ca.crt"])
    r = subprocess.run([k, "--kubeconfig", bad, "--cache-dir", str(tmp_path / "c2"), "get",
                        "pods", "-o", "name"], capture_output=True, text=True, timeout=60)
    # kubectl 1.20 prints the Status message, newer ones their own text for a 401
    assert r.returncode != 0 and ("Unauthorized" in r.stderr or
                                  "must be logged in to the server" in r.stderr), r.stderr
    cert = fixture.write_kubeconfig(str(tmp_path / "cert"), api.url, ca=certs["ca.crt"],
                                    client=(certs["client.crt"], certs["client.key"]))
    r = subprocess.run([k, "--kubeconfig", cert, "--cache-dir", str(tmp_path / "c3"), "get",
                        "ns", "default", "-o", "name"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "namespace/default", r.stderr


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=kube_ids())
def test_kubectl_paging(kc, api, tmp_path):
    _, k = kc
    for i in range(5):
        kubectl(k, api, tmp_path, "create", "configmap", "cm-%d" % i, "--from-literal=k=%d" % i)
    r = kubectl(k, api, tmp_path, "get", "configmaps", "--chunk-size=2", "-o", "name", "-v=6")
    assert r.stdout.split() == ["configmap/cm-%d" % i for i in range(5)]
    pages = [ln for ln in r.stderr.splitlines() if "/configmaps?" in ln and " 200 OK" in ln]
    assert len(pages) == 3, r.stderr
    assert sum("continue=" in ln for ln in pages) == 2
    # 410: a continue token and a watch from before a compaction
    first = json.loads(kubectl(k, api, tmp_path, "get", "--raw",
                               "/api/v1/namespaces/default/configmaps?limit=2").stdout)
    token, rv = first["metadata"]["continue"], first["metadata"]["resourceVersion"]
    kubectl(k, api, tmp_path, "create", "configmap", "later")  # history moves past rv
    api.control("compact")
    r = kubectl(k, api, tmp_path, "get", "--raw",
                "/api/v1/namespaces/default/configmaps?limit=2&continue=" + token, check=False)
    assert r.returncode != 0 and "Error from server (Expired)" in r.stderr, r.stderr
    r = kubectl(k, api, tmp_path, "get", "--raw",
                "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv)
    ev = json.loads(r.stdout)
    assert ev["type"] == "ERROR" and ev["object"]["code"] == 410
    assert ev["object"]["reason"] == "Expired"


def reader(proc, q):
    for line in proc.stdout:
        q.put(line)
    q.put(None)


def read_json_objects(q, n, timeout):
    """n JSON documents from kubectl -o json output lines (pretty-printed, concatenated)."""
    docs, buf, deadline = [], "", time.monotonic() + timeout
    dec = json.JSONDecoder()
    while len(docs) < n and time.monotonic() < deadline:
        try:
            line = q.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        buf += line
        while True:
            s = buf.lstrip()
            if not s:
                break
            try:
                obj, end = dec.raw_decode(s)
            except ValueError:
                break
            docs.append(obj)
            buf = s[end:]
    return docs


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=kube_ids())
def test_kubectl_watch(kc, api, tmp_path):
    _, k = kc
    kubectl(k, api, tmp_path, "create", "--validate=false", "-f", "-", stdin=POD % ("a", "w"))
    cmd = [k, "--kubeconfig", api.kubeconfig, "--cache-dir", str(tmp_path / "cache"), "get",
           "pods", "-w", "-o", "json", "--output-watch-events"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    q = queue.Queue()
    threading.Thread(target=reader, args=(proc, q), daemon=True).start()
    try:
        first = read_json_objects(q, 1, 20)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in first] == [("ADDED", "a")]
        kubectl(k, api, tmp_path, "create", "--validate=false", "-f", "-", stdin=POD % ("b", "w"))
        kubectl(k, api, tmp_path, "label", "pod", "b", "extra=1")
        kubectl(k, api, tmp_path, "delete", "pod", "a")
        evs = read_json_objects(q, 3, 20)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
            ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]
        assert evs[1]["object"]["metadata"]["labels"]["extra"] == "1"
        # a clean end of the stream (the server's timeout) ends `kubectl get -w`, which does
        # not re-watch (watchtools.UntilWithoutRetry): the chunked body was terminated properly
        api.control("close-watches")
        assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait(10)
        proc.stderr.close()


# ---- python3-kubernetes -----------------------------------------------------------------------

try:
    from kubernetes import client as kclient, config as kconfig, watch as kwatch
    from kubernetes.client.rest import ApiException
except ImportError:  # the kubectl tests above still run
    kclient = None

    class ApiException(Exception):
        pass

needs_python_client = pytest.mark.skipif(kclient is None,
                                         reason="no python3-kubernetes (run scripts/setup)")


def core_api(api):
    cfg = kclient.Configuration()
    kconfig.load_kube_config(config_file=api.kubeconfig, client_configuration=cfg)
    return kclient.CoreV1Api(kclient.ApiClient(cfg)), kclient.ApiClient(cfg)


def cm(name, labels=None):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels or {}}, "data": {"k": name}}


@needs_python_client
def test_python_client_crud_list_watch(api):
    core, _ = core_api(api)
    core.create_namespaced_config_map("default", cm("one", {"tier": "a"}))
    core.create_namespaced_config_map("default", cm("two", {"tier": "b"}))
    lst = core.list_namespaced_config_map("default", label_selector="tier=a")
    assert [i.metadata.name for i in lst.items] == ["one"]
    rv = lst.metadata.resource_version
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("nope", "default")
    assert e.value.status == 404
    assert json.loads(e.value.body)["reason"] == "NotFound"
    w = kwatch.Watch()
    events = []
    def changes():
        time.sleep(0.5)
        core.patch_namespaced_config_map("one", "default", {"data": {"k": "changed"}})
        core.delete_namespaced_config_map("two", "default")
    t = threading.Thread(target=changes)
    t.start()
    for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=rv,
                       timeout_seconds=3):
        events.append((ev["type"], ev["object"].metadata.name))
        if len(events) == 2:
            w.stop()
    t.join()
    assert events == [("MODIFIED", "one"), ("DELETED", "two")]


@needs_python_client
def test_python_client_paging_and_410(api):
    core, _ = core_api(api)
    for i in range(5):
        core.create_namespaced_config_map("default", cm("p%d" % i))
    page = core.list_namespaced_config_map("default", limit=2)
    names = [i.metadata.name for i in page.items]
    token = page.metadata._continue
    assert names == ["p0", "p1"] and token
    rv = page.metadata.resource_version
    core.create_namespaced_config_map("default", cm("p9"))  # not in the snapshot
    page2 = core.list_namespaced_config_map("default", limit=2, _continue=token)
    assert [i.metadata.name for i in page2.items] == ["p2", "p3"]
    assert page2.metadata.resource_version == rv
    page3 = core.list_namespaced_config_map("default", limit=2, _continue=page2.metadata._continue)
    assert [i.metadata.name for i in page3.items] == ["p4"] and not page3.metadata._continue
    # compaction: the continue token and a watch from the old RV both answer 410 Expired
    api.control("compact")
    with pytest.raises(ApiException) as e:
        core.list_namespaced_config_map("default", limit=2, _continue=token)
    assert e.value.status == 410 and json.loads(e.value.body)["reason"] == "Expired"
    w = kwatch.Watch()
    with pytest.raises(ApiException) as e:
        for _ in w.stream(core.list_namespaced_config_map, "default", resource_version=rv,
                          timeout_seconds=3):
            pass
    assert e.value.status == 410 and "too old resource version" in str(e.value.reason)


@needs_python_client
def test_python_client_incluster_and_bad_token(api, certs, tmp_path):
    root = tmp_path / "sa"
    root.mkdir()
    (root / "token").write_text(TOKEN)
    (root / "ca.crt").write_text(open(certs["ca.crt"]).read())
    host, port = api.url[len("https://"):].rsplit(":", 1)
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"] = host, port
    try:
        from kubernetes.config import incluster_config
        cfg = kclient.Configuration()
        incluster_config.InClusterConfigLoader(token_filename=str(root / "token"),
                                               cert_filename=str(root / "ca.crt")).load_and_set(cfg)
    finally:
        del os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    core = kclient.CoreV1Api(kclient.ApiClient(cfg))
    assert "default" in [n.metadata.name for n in core.list_namespace().items]
    bad = kclient.Configuration()
    bad.host, bad.ssl_ca_cert = cfg.host, cfg.ssl_ca_cert
    bad.api_key = {"authorization": "Bearer wrong"}
    core = kclient.CoreV1Api(kclient.ApiClient(bad))
    with pytest.raises(ApiException) as e:
        core.list_namespace()
    assert e.value.status == 401 and json.loads(e.value.body)["reason"] == "Unauthorized"


@needs_python_client
def test_python_client_custom_objects(api):
    _, ac = core_api(api)
    co = kclient.CustomObjectsApi(ac)
    body = {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
            "metadata": {"name": "deny-all"}, "spec": {}}
    co.create_namespaced_custom_object("security.istio.io", "v1", "default",
                                       "authorizationpolicies", body)
    got = co.list_namespaced_custom_object("security.istio.io", "v1beta1", "default",
                                           "authorizationpolicies")
    assert [(i["apiVersion"], i["metadata"]["name"]) for i in got["items"]] == [
        ("security.istio.io/v1beta1", "deny-all")]


# ---- wire details no client above exercises ----------------------------------------------------

def raw_watch(api, certs, path, timeout=10):
    """The event lines of one watch request (until the server ends it)."""
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=certs["ca.crt"])
    req = urllib.request.Request(api.url + path, headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
        assert r.headers["Transfer-Encoding"] == "chunked"
        assert r.headers["Content-Type"] == "application/json"
        return [json.loads(ln) for ln in r.read().decode().splitlines()]


@needs_python_client
def test_watch_list_selector_transitions_and_in_stream_410(api, certs):
    core, _ = core_api(api)
    core.create_namespaced_config_map("default", cm("w1", {"app": "x"}))
    # watch-list: initial ADDED events, then the bookmark marking their end, then changes
    evs = raw_watch(api, certs, "/api/v1/namespaces/default/configmaps?watch=true&"
                    "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
                    "allowWatchBookmarks=true&timeoutSeconds=1")
    assert evs[0]["type"] == "ADDED" and evs[0]["object"]["metadata"]["name"] == "w1"
    assert evs[1]["type"] == "BOOKMARK"
    assert evs[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    with pytest.raises(Exception) as e:
        raw_watch(api, certs, "/api/v1/configmaps?watch=true&sendInitialEvents=true")
    assert getattr(e.value, "code", None) == 422
    # an object that stops matching the selector arrives as DELETED, one that starts as ADDED
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("w1", "default", {"metadata": {"labels": {"app": "y"}}})
    core.patch_namespaced_config_map("w1", "default", {"metadata": {"labels": {"app": "x"}}})
    evs = raw_watch(api, certs, "/api/v1/namespaces/default/configmaps?watch=1&"
                    "labelSelector=app%%3Dx&resourceVersion=%s&timeoutSeconds=1" % rv)
    assert [e["type"] for e in evs] == ["DELETED", "ADDED"]
    assert int(evs[0]["object"]["metadata"]["resourceVersion"]) > int(rv)
    # a resourceVersion older than the history: 200, one ERROR event, end of stream
    api.control("compact")
    evs = raw_watch(api, certs, "/api/v1/configmaps?watch=1&resourceVersion=%s" % rv)
    assert evs == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": evs[0]["object"]["message"], "reason": "Expired", "code": 410}}]
    assert evs[0]["object"]["message"].startswith("too old resource version: %s (" % rv)


WIDGET_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList,
          shortNames: [wdg]}
  scope: Namespaced
  versions:
  - {name: v1beta1, served: true, storage: false,
     schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1, served: true, storage: true,
     schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
"""


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=kube_ids())
def test_crd_makes_its_kind_servable(kc, api, tmp_path):
    """A CRD for a kind the server lacks: a dry run leaves it unknown, the real create serves
    it (discovery with its short name, objects stored at the storage version)."""
    _, k = kc
    kubectl(k, api, tmp_path, "apply", "--dry-run=server", "-f", "-", stdin=WIDGET_CRD)
    r = kubectl(k, api, tmp_path, "get", "widgets", check=False)
    assert r.returncode != 0  # a dry run registers nothing
    kubectl(k, api, tmp_path, "apply", "-f", "-", stdin=WIDGET_CRD)
    w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n"
    kubectl(k, api, tmp_path, "apply", "-f", "-", stdin=w)
    got = json.loads(kubectl(k, api, tmp_path, "get", "wdg", "w1", "-o", "json").stdout)
    assert got["apiVersion"] == "example.com/v1" and got["spec"] == {"size": 3}
    old = json.loads(kubectl(k, api, tmp_path, "get", "widgets.v1beta1.example.com", "w1", "-o",
                             "json").stdout)
    assert old["apiVersion"] == "example.com/v1beta1"
