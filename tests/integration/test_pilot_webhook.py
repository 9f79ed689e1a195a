"""weft-pilot's admission webhook port (--webhookAddr, istiod's 15017: src/pilot/webhook.h)
called the way kube-apiserver calls it: by the test API server (tests/kubeapi/admission.py)
when kubectl creates or updates objects through it.

 * the port's certificate (openssl s_client): chained to the mesh root of --ca-dir, DNS
   istiod.istio-system.svc and the bound IP; /httpsReady answers 200;
 * a ValidatingWebhookConfiguration as Istio installs it (service istio-system/istiod:443, path
   /validate, caBundle the mesh root), the service reached through the API server's
   --service-proxy: `kubectl apply` of an invalid VirtualService is refused with istiod's
   message, a valid one is stored, a server-side dry run is refused the same way; the counters
   galley_validation_* move on pilot's /metrics;
 * pilot down: failurePolicy Fail refuses with kube-apiserver's "Internal error occurred:
   failed calling webhook", Ignore lets the object in;
 * /inject: a POSTed AdmissionReview gets the injector's patch (kube/inject.h), and a Pod
   CREATE through the API server with Istio's MutatingWebhookConfiguration is stored with
   Istio's sidecar (istio-proxy, istio-init, labels, status annotation) when the namespace
   selector matches; not for a namespace without istio-injection=enabled, nor for a pod
   labelled sidecar.istio.io/inject=false.
"""
import base64
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from procs import start_process, stop_process
from test_pilot import get, pilot_exe  # noqa: F401 (pilot_exe: fixture)
from proxyfix import free_port

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "kubeapi"))
import fixture  # noqa: E402

KUBECTLS = fixture.kubectls()
needs_kubectl = pytest.mark.skipif(not KUBECTLS, reason="no kubectl (run scripts/setup)")

VS_BAD = """apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: default
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews}
      weight: -15
"""

VS_OK = VS_BAD.replace("      weight: -15\n", "")


def start_pilot(exe, tmp_path, webhook="127.0.0.1:0"):
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    proc, addrs = start_process([exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--webhookAddr", webhook], count=3, timeout=30)
    proc.mon, proc.webhook = addrs[1][1], addrs[2][1]
    return proc


def stop(proc):
    assert stop_process(proc) == 0, proc.stderr_text()


@pytest.fixture
def pilot(pilot_exe, tmp_path):  # noqa: F811
    proc = start_pilot(pilot_exe, tmp_path)
    yield proc
    if proc.poll() is None:
        stop(proc)


def root_pem(tmp_path):
    return (tmp_path / "ca" / "root-cert.pem").read_text()


def https(port, path, body=None, ctype="application/json", root=None):
    """(status, text) of a request to the webhook port, verifying istiod's name."""
    ctx = ssl.create_default_context(cadata=root) if root else ssl._create_unverified_context()
    import http.client
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    if root:
        ctx.check_hostname = False  # the IP SAN is checked by s_client below
    headers = {"Content-Type": ctype} if ctype else {}
    c.request("POST" if body is not None else "GET", path, body=body, headers=headers)
    r = c.getresponse()
    out = r.status, r.read().decode()
    c.close()
    return out


def sum_metric(mon, name, must_contain=""):
    _, text = get(mon, "/metrics")
    return sum(float(ln.split()[-1]) for ln in text.splitlines()
               if ln.startswith(name) and not ln.startswith("#") and must_contain in ln)


# ---- the port itself ---------------------------------------------------------------------------

def test_certificate_and_ready(pilot, tmp_path):
    root = tmp_path / "ca" / "root-cert.pem"
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % pilot.webhook,
                        "-CAfile", str(root), "-servername", "istiod.istio-system.svc",
                        "-verify_hostname", "istiod.istio-system.svc", "-showcerts"],
                       input="", capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    assert "Verify return code: 0 (ok)" in out, out
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    leaf = tmp_path / "leaf.pem"
    leaf.write_text(begin + out.split(begin)[1].split(end)[0] + end + "\n")
    text = subprocess.run(["openssl", "x509", "-in", str(leaf), "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    assert "DNS:istiod.istio-system.svc" in text, text
    assert "IP Address:127.0.0.1" in text, text
    assert https(pilot.webhook, "/httpsReady", root=root.read_text()) == (200, "")
    assert https(pilot.webhook, "/nothing")[0] == 404
    # plain HTTP on the TLS port gets no answer
    with pytest.raises(Exception):
        urllib.request.urlopen("http://127.0.0.1:%d/httpsReady" % pilot.webhook, timeout=5)


def test_validate_over_https(pilot, tmp_path):
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "abc", "operation": "CREATE", "namespace": "default",
                          "resource": {"group": "networking.istio.io", "version": "v1",
                                       "resource": "virtualservices"},
                          "kind": {"group": "networking.istio.io", "version": "v1",
                                   "kind": "VirtualService"},
                          "object": yaml_json(VS_BAD)}}
    st, text = https(pilot.webhook, "/validate", json.dumps(review), root=root_pem(tmp_path))
    assert st == 200, text
    resp = json.loads(text)["response"]
    assert resp["uid"] == "abc" and resp["allowed"] is False
    assert resp["status"]["message"] == "configuration is invalid: weight -15 < 0"
    assert https(pilot.webhook, "/validate", json.dumps(review), ctype="text/plain") == \
        (415, "invalid Content-Type, want `application/json`\n")
    assert https(pilot.webhook, "/validate", "") == (400, "no body found\n")
    assert sum_metric(pilot.mon, "galley_validation_failed", 'reason="invalid_resource"') == 1
    assert sum_metric(pilot.mon, "galley_validation_http_error") == 2


def test_keepalive_pipelining_and_large_bodies(pilot, tmp_path):
    """HTTPS on the shared HTTP/1 server: two requests on one connection, two requests sent in
    one TLS write (the second waits decrypted in the TLS engine), and a 2 MiB AdmissionReview
    (many TLS records, beyond the request-head buffer)."""
    import http.client
    import socket
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "big", "operation": "CREATE", "namespace": "default",
                          "object": yaml_json(VS_OK)}}
    review["request"]["object"]["metadata"]["annotations"] = {"pad": "x" * (2 << 20)}
    body = json.dumps(review)
    ctx = ssl._create_unverified_context()
    c = http.client.HTTPSConnection("127.0.0.1", pilot.webhook, context=ctx, timeout=20)
    for _ in range(2):
        c.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out = json.loads(r.read())
        assert r.status == 200 and out["response"] == {"uid": "big", "allowed": True}
    c.close()
    raw = ctx.wrap_socket(socket.create_connection(("127.0.0.1", pilot.webhook), timeout=20))
    small = json.dumps(dict(review, request=dict(review["request"], uid="s",
                                                 object=yaml_json(VS_BAD))))
    one = ("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n\r\n%s" % (len(small), small))
    raw.sendall((one + one.replace("Host: x", "Host: y")).encode())
    got = b""
    while got.count(b"HTTP/1.1 200 OK") < 2 or not got.endswith(b"}}"):
        chunk = raw.recv(65536)
        assert chunk, got
        got += chunk
    assert got.count(b"weight -15 < 0") == 2, got
    raw.close()


def test_new_ca_new_certificate(pilot_exe, tmp_path):  # noqa: F811
    """A plug-in cacerts Secret replaces the CA at runtime: the webhook port serves a
    certificate of the new CA to the next connection, without a restart."""
    from test_mesh_reports_mtls import plugin_root
    from test_pilot import poll
    proc = start_pilot(pilot_exe, tmp_path)
    try:
        d = tmp_path / "plugin"
        d.mkdir()
        (tmp_path / "cfg" / "cacerts.json").write_text(plugin_root(str(d)))
        new_root = (d / "root-cert.pem").read_text()

        def verifies():
            try:
                return https(proc.webhook, "/httpsReady", root=new_root)[0] == 200
            except ssl.SSLError:
                return False
        poll(verifies, timeout=20)
        with pytest.raises(ssl.SSLError):
            https(proc.webhook, "/httpsReady", root=root_pem(tmp_path))
    finally:
        stop(proc)


def yaml_json(text):
    import yaml
    return yaml.safe_load(text)


# ---- through the test API server -----------------------------------------------------------------

def kubectl(api, tmp_path, *args, stdin=None, check=True):
    cmd = [KUBECTLS[0][1], "--kubeconfig", api.kubeconfig, "--cache-dir",
           str(tmp_path / "cache")]
    r = subprocess.run(cmd + list(args), input=stdin, capture_output=True, text=True, timeout=90)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def start_api(tmp_path, webhook_port):
    api = fixture.KubeApi(["--service-proxy", "istio-system/istiod:443=127.0.0.1:%d"
                           % webhook_port], log=str(tmp_path / "kubeapi.log"))
    api.start()
    api.kubeconfig = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url)
    return api


@pytest.fixture
def api(pilot, tmp_path):
    a = start_api(tmp_path, pilot.webhook)
    yield a
    a.stop()


def vwc(ca_pem, policy="Fail"):
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "istio-validator-istio-system"},
            "webhooks": [{
                "name": "rev.validation.istio.io",
                "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system",
                                             "path": "/validate", "port": 443},
                                 "caBundle": base64.b64encode(ca_pem.encode()).decode()},
                "rules": [{"operations": ["CREATE", "UPDATE"],
                           "apiGroups": ["security.istio.io", "networking.istio.io",
                                         "telemetry.istio.io", "extensions.istio.io"],
                           "apiVersions": ["*"], "resources": ["*"]}],
                "failurePolicy": policy, "sideEffects": "None", "timeoutSeconds": 10,
                "admissionReviewVersions": ["v1"]}]}


def apply(api, tmp_path, obj_or_text, *extra, check=True):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    return kubectl(api, tmp_path, "apply", "--validate=false", "-f", "-", *extra, stdin=text,
                   check=check)


def post(api, path, obj):
    req = urllib.request.Request(api.url + path, data=json.dumps(obj).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def calls(api):
    with urllib.request.urlopen(api.url + "/_test/admission-calls", timeout=10) as r:
        return json.loads(r.read())["calls"]


@needs_kubectl
def test_kubectl_apply_validated(pilot, api, tmp_path):
    apply(api, tmp_path, vwc(root_pem(tmp_path)))
    r = apply(api, tmp_path, VS_BAD, check=False)
    assert r.returncode != 0
    assert ('admission webhook "rev.validation.istio.io" denied the request: '
            'configuration is invalid: weight -15 < 0') in r.stderr, r.stderr
    # a server-side dry run (POST ?dryRun=All: kubectl's --dry-run=server)
    st, body = post(api, "/apis/networking.istio.io/v1/namespaces/default/virtualservices"
                    "?dryRun=All", yaml_json(VS_BAD))
    assert st == 400, body
    assert body["message"] == ('admission webhook "rev.validation.istio.io" denied the request: '
                               'configuration is invalid: weight -15 < 0'), body
    assert calls(api)[-1]["dryRun"] is True
    apply(api, tmp_path, VS_OK)
    got = json.loads(kubectl(api, tmp_path, "get", "virtualservices.networking.istio.io",
                             "reviews", "-n", "default", "-o", "json").stdout)
    assert got["spec"]["hosts"] == ["reviews"]
    # an update of the stored one goes through the webhook too (a PATCH: operation UPDATE)
    r = apply(api, tmp_path, VS_BAD, check=False)
    assert r.returncode != 0 and "weight -15 < 0" in r.stderr, r.stderr
    ops = [(c["operation"], c.get("allowed")) for c in calls(api)]
    assert ("CREATE", False) in ops and ("CREATE", True) in ops and ("UPDATE", False) in ops
    assert sum_metric(pilot.mon, "galley_validation_passed", 'resource="virtualservices"') == 1
    assert sum_metric(pilot.mon, "galley_validation_failed", 'reason="invalid_resource"') == 3
    # objects of other groups are not sent
    kubectl(api, tmp_path, "create", "configmap", "c1", "-n", "default")
    assert all(c["kind"] != "ConfigMap" for c in calls(api))


@needs_kubectl
def test_failure_policy_when_pilot_is_down(pilot, api, tmp_path):
    apply(api, tmp_path, vwc(root_pem(tmp_path)))
    stop(pilot)
    r = apply(api, tmp_path, VS_OK, check=False)
    assert r.returncode != 0
    assert ('Internal error occurred: failed calling webhook "rev.validation.istio.io": failed '
            'to call webhook: Post "https://istiod.istio-system.svc:443/validate?timeout=10s": '
            'dial tcp 127.0.0.1:%d: connect: connection refused' % pilot.webhook) in r.stderr, \
        r.stderr
    apply(api, tmp_path, vwc(root_pem(tmp_path), policy="Ignore"))
    apply(api, tmp_path, VS_OK)
    kubectl(api, tmp_path, "get", "virtualservices.networking.istio.io", "reviews", "-n",
            "default")
    last = calls(api)[-1]
    assert last["failurePolicy"] == "Ignore" and "connection refused" in last["error"]


@needs_kubectl
def test_untrusted_certificate_fails_the_call(pilot, api, tmp_path):
    other = fixture.make_certs(str(tmp_path))  # another CA
    with open(other["ca.crt"]) as f:
        apply(api, tmp_path, vwc(f.read()))
    r = apply(api, tmp_path, VS_OK, check=False)
    assert r.returncode != 0
    assert "failed calling webhook" in r.stderr and "certificate" in r.stderr, r.stderr


# ---- /inject ------------------------------------------------------------------------------------

POD_REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "p-1", "operation": "CREATE", "namespace": "shop",
                          "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "resource": {"group": "", "version": "v1", "resource": "pods"},
                          "object": {"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "web", "namespace": "shop"},
                                     "spec": {"containers": [{"name": "app",
                                                              "image": "example/app:1"}]}}}}


def injector_answer_ok(status, text, uid):
    """The injector's answer: an AdmissionReview for the request, allowed, with a JSON patch
    adding Istio's containers."""
    if status != 200:
        return False
    resp = json.loads(text)["response"]
    patch = json.loads(base64.b64decode(resp.get("patch", "")).decode() or "[]")
    added = json.dumps(patch)
    return (resp["uid"] == uid and resp["allowed"] is True and resp.get("patchType") == "JSONPatch"
            and "istio-proxy" in added and "istio-init" in added)


def test_inject_reaches_the_injector(pilot, tmp_path):
    for path in ("/inject", "/inject/cluster/c1/net/n1"):
        st, text = https(pilot.webhook, path, json.dumps(POD_REVIEW), root=root_pem(tmp_path))
        assert injector_answer_ok(st, text, "p-1"), (st, text)
    assert sum_metric(pilot.mon, "sidecar_injection_requests_total") == 2
    assert https(pilot.webhook, "/injectx", json.dumps(POD_REVIEW))[0] == 404


def mwc(ca_pem, policy):
    sel = {"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn",
                                 "values": ["false"]}]}
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "istio-sidecar-injector",
                         "labels": {"istio.io/rev": "default"}},
            "webhooks": [{
                "name": "namespace.sidecar-injector.istio.io",
                "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system",
                                             "path": "/inject", "port": 443},
                                 "caBundle": base64.b64encode(ca_pem.encode()).decode()},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"]}],
                "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}},
                "objectSelector": sel,
                "failurePolicy": policy, "sideEffects": "None", "reinvocationPolicy": "Never",
                "admissionReviewVersions": ["v1"]}]}


POD = """apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: %s
spec:
  containers:
  - name: app
    image: example/app:1
"""


@needs_kubectl
def test_pod_create_calls_inject(pilot, api, tmp_path):
    # (failurePolicy matters only when pilot does not answer: test_failure_policy_when_pilot_is_down)
    root = root_pem(tmp_path)
    apply(api, tmp_path, mwc(root, "Fail"))
    kubectl(api, tmp_path, "create", "namespace", "shop")
    kubectl(api, tmp_path, "label", "namespace", "shop", "istio-injection=enabled")
    kubectl(api, tmp_path, "create", "namespace", "plain")
    # not selected: no call
    apply(api, tmp_path, POD % ("a", "plain", "{}"))
    apply(api, tmp_path, POD % ("b", "shop", "{sidecar.istio.io/inject: 'false'}"))
    assert calls(api) == []
    r = apply(api, tmp_path, POD % ("web", "shop", "{app: web}"), check=False)
    got = calls(api)
    assert len(got) == 1, got
    c = got[0]
    assert c["webhook"] == "namespace.sidecar-injector.istio.io"
    assert (c["operation"], c["kind"], c["namespace"], c["name"]) == ("CREATE", "Pod", "shop",
                                                                      "web")
    assert sum_metric(pilot.mon, "sidecar_injection_requests_total") == 1
    assert "error" not in c, c
    assert r.returncode == 0, r.stderr
    # the API server stored the pod as the injector patched it (Istio's sidecar, init
    # container, labels and status annotation)
    pod = json.loads(kubectl(api, tmp_path, "get", "pod", "web", "-n", "shop", "-o",
                             "json").stdout)
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == ["app", "istio-proxy"], names
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["istio-init"]
    proxy = pod["spec"]["containers"][1]
    assert proxy["args"][:2] == ["proxy", "sidecar"], proxy["args"]
    assert pod["metadata"]["labels"]["security.istio.io/tlsMode"] == "istio"
    assert pod["metadata"]["labels"]["service.istio.io/canonical-name"] == "web"
    assert "sidecar.istio.io/status" in pod["metadata"]["annotations"]
    assert sum_metric(pilot.mon, "sidecar_injection_success_total") == 1
    # the opted-out pod and the pod of an unlabelled namespace were left alone
    for name, ns in (("a", "plain"), ("b", "shop")):
        other = json.loads(kubectl(api, tmp_path, "get", "pod", name, "-n", ns, "-o",
                                   "json").stdout)
        assert [c["name"] for c in other["spec"]["containers"]] == ["app"], other


def test_default_port_taken_is_skipped(pilot_exe, tmp_path):  # noqa: F811
    """The default address in use: a warning, pilot runs without the webhooks; an address given
    that cannot be bound is a start failure (exit 1)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        cfg = tmp_path / "cfg"
        cfg.mkdir()
        r = subprocess.run([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                            "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                            "--webhookAddr", "127.0.0.1:%d" % port],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, r.stderr
        assert "cannot listen for the webhooks on 127.0.0.1:%d" % port in r.stderr, r.stderr
        r = subprocess.run([pilot_exe, "--webhookAddr", "nope", "--config-dir", cfg],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and "--webhookAddr" in r.stderr, r.stderr
    finally:
        s.close()


def test_off_and_inject_config_dir(pilot_exe, tmp_path):  # noqa: F811
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--webhookAddr", "off"], count=2, timeout=30)
    try:
        _, text = get(addrs[1][1], "/metrics")
        assert "galley_validation_passed" not in text
        assert not any("webhook" in ln for ln in proc.stdout_lines)
    finally:
        stop(proc)
    # an injector folder that cannot be read is a start failure naming it
    bad = tmp_path / "inject"
    bad.mkdir()
    (bad / "config").write_text("policy: [\n")
    r = subprocess.run([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                        "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                        "--webhookAddr", "127.0.0.1:%d" % free_port(),
                        "--injectConfigDir", bad], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert "--injectConfigDir %s" % bad in r.stderr, r.stderr


def test_unimplemented_injector_config_is_logged(pilot_exe, tmp_path):  # noqa: F811
    """Istio's injector ConfigMap may carry custom Go templates weft does not run: pilot says
    so at start (never silently injects something else), and an injector folder that is absent
    still takes the mesh file."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    inj = tmp_path / "inject"
    inj.mkdir()
    (inj / "config").write_text('policy: enabled\ntemplates:\n  sidecar: "{{ .Values }}"\n')
    proc, _ = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                             "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                             "--webhookAddr", "127.0.0.1:0", "--injectConfigDir", inj],
                            count=3, timeout=30)
    try:
        pass
    finally:
        stop(proc)
    err = proc.stderr_text()
    assert "injector config: %s/config:2: templates: custom injection templates" % inj in err, err


def leaf_text(port, root, host, tmp_path):
    """(verified, `openssl x509 -text` of the leaf) of the TLS port, checking host."""
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-CAfile",
                        str(root), "-servername", host, "-verify_hostname", host, "-showcerts"],
                       input="", capture_output=True, text=True, timeout=30)
    out = r.stdout + r.stderr
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    leaf = tmp_path / ("leaf-%d.pem" % port)
    leaf.write_text(begin + out.split(begin)[1].split(end)[0] + end + "\n")
    text = subprocess.run(["openssl", "x509", "-in", str(leaf), "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    return "Verify return code: 0 (ok)" in out, text


@pytest.mark.parametrize("ns,rev", [("istio-system", None), ("istio-system", "canary"),
                                    ("mesh-cp", None), ("mesh-cp", "1-20")])
def test_certificate_names_follow_namespace_and_revision(pilot_exe, tmp_path, ns, rev):  # noqa: F811
    """istiod's DNS names (getDNSNames) on both TLS ports: istiod, istiod-remote and istio-pilot
    in istiod's namespace (POD_NAMESPACE) and istiod-REV for a revision (REVISION), so a
    revision install's Service istiod-REV.NS.svc verifies."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    env = dict(os.environ, POD_NAMESPACE=ns)
    env.pop("REVISION", None)
    args = [pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca", "--grpcAddr",
            "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0", "--secureGRPCAddr",
            "127.0.0.1:0", "--webhookAddr", "127.0.0.1:0"]
    if rev:
        env["REVISION"] = rev
    proc, addrs = start_process(args, count=4, timeout=30, env=env)
    try:
        root = tmp_path / "ca" / "root-cert.pem"
        want = ["istiod.%s.svc" % ns, "istiod-remote.%s.svc" % ns, "istio-pilot.%s.svc" % ns]
        if rev:
            want.append("istiod-%s.%s.svc" % (rev, ns))
        for port in (addrs[2][1], addrs[3][1]):  # the secure gRPC port, the webhook port
            for host in want:
                ok, text = leaf_text(port, root, host, tmp_path)
                assert ok, (host, text)
            sans = sorted(s.strip()[4:] for s in text.split("Subject Alternative Name:")[1]
                          .splitlines()[1].split(",") if s.strip().startswith("DNS:"))
            assert sans == sorted(want), text
            if ns != "istio-system":
                bad, _ = leaf_text(port, root, "istiod.istio-system.svc", tmp_path)
                assert not bad
    finally:
        stop(proc)


def test_bad_revision_from_the_environment_names_it(pilot_exe, tmp_path):  # noqa: F811
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    env = dict(os.environ, REVISION="Bad_Rev")
    r = subprocess.run([pilot_exe, "--config-dir", cfg], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 2, r.stderr
    assert 'invalid value "Bad_Rev" for REVISION (environment)' in r.stderr, r.stderr
    r = subprocess.run([pilot_exe, "--config-dir", cfg, "--revision", "Bad_Rev"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and 'for --revision:' in r.stderr, r.stderr
    env = dict(os.environ, POD_NAMESPACE="Istio_System")
    r = subprocess.run([pilot_exe, "--config-dir", cfg], capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 2, r.stderr
    assert 'invalid value "Istio_System" for POD_NAMESPACE (environment)' in r.stderr, r.stderr


def test_inject_config_dir_not_a_folder_or_missing(pilot_exe, tmp_path):  # noqa: F811
    """--injectConfigDir naming a file is a start failure naming it; a folder given and absent
    is a warning (the chart's defaults), the default folder absent is not."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    f = tmp_path / "inject.yaml"
    f.write_text("policy: enabled\n")
    base = [pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca", "--grpcAddr",
            "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0", "--webhookAddr", "127.0.0.1:0"]
    r = subprocess.run(base + ["--injectConfigDir", f], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1, r.stderr
    assert "--injectConfigDir %s: not a folder" % f in r.stderr, r.stderr
    for given in (True, False):
        missing = tmp_path / "nowhere"
        proc, _ = start_process(base + (["--injectConfigDir", missing] if given else []),
                                count=3, timeout=30, cwd=str(tmp_path))
        stop(proc)
        err = proc.stderr_text()
        line = [ln for ln in err.splitlines() if "injector config" in ln and "absent" in ln]
        if given:
            assert line and "warn" in line[0].lower() and str(missing) in line[0], err
        else:
            assert not any("warn" in ln.lower() for ln in line), err
