"""The test API server's admission webhooks (tests/kubeapi/admission.py) against a webhook
server of the test's own (Python, HTTPS with a test CA, clientConfig.url + caBundle): the order
of mutating webhooks and their JSON patches, reinvocation (IfNeeded), validating webhooks seeing
the final object, kube-apiserver's messages for a denial (the webhook's status code kept) and
for a timeout with failurePolicy Fail / Ignore, rules (operations, resources, scope),
matchPolicy Exact / Equivalent, namespaceSelector (kubernetes.io/metadata.name) and
objectSelector (old or new object on UPDATE), dry runs and sideEffects, warnings as Warning
headers, and the AdmissionReview fields sent."""

import base64
import json
import os
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "kubeapi"))
import fixture  # noqa: E402


class Hook(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["request"]
        self.server.seen.append((self.path, req))
        path = self.path.split("?")[0]
        resp = {"uid": req["uid"], "allowed": True}
        labels = (req["object"] or {}).get("metadata", {}).get("labels")
        if path == "/deny":
            resp = {"uid": req["uid"], "allowed": False,
                    "status": {"code": 403, "message": "nope"}}
        elif path.startswith("/label-"):
            key = path[len("/label-"):]
            ops = [] if labels else [{"op": "add", "path": "/metadata/labels", "value": {}}]
            if not labels or key not in labels:
                ops.append({"op": "add", "path": "/metadata/labels/" + key, "value": "1"})
                resp.update(patchType="JSONPatch",
                            patch=base64.b64encode(json.dumps(ops).encode()).decode())
        elif path == "/slow":
            time.sleep(2.5)
        elif path == "/warn":
            resp["warnings"] = ["mind the gap"]
        data = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="weft-admission-")
    return fixture.make_certs(d)


@pytest.fixture
def hook(certs):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    srv.daemon_threads = True
    srv.seen = []
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs["server.crt"], certs["server.key"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    srv.url = "https://127.0.0.1:%d" % srv.server_address[1]
    srv.ca = fixture.b64file(certs["ca.crt"])
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def api(tmp_path):
    a = fixture.KubeApi([], log=str(tmp_path / "kubeapi.log"))
    a.start()
    yield a
    a.stop()


def call(api, method, path, obj=None, ctype="application/json"):
    """(status, body, headers)."""
    req = urllib.request.Request(api.url + path, method=method,
                                 data=json.dumps(obj).encode() if obj is not None else None,
                                 headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read()), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers


def webhook(hook, name, path, **kw):
    wh = {"name": name, "clientConfig": {"url": hook.url + path, "caBundle": hook.ca},
          "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                     "apiVersions": ["v1"], "resources": ["configmaps"]}],
          "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5}
    wh.update(kw)
    return wh


def install(api, kind, name, *webhooks):
    res = "mutatingwebhookconfigurations" if kind.startswith("M") else \
        "validatingwebhookconfigurations"
    st, body, _ = call(api, "POST", "/apis/admissionregistration.k8s.io/v1/" + res,
                       {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                        "metadata": {"name": name}, "webhooks": list(webhooks)})
    assert st == 201, body


def cm(name, labels=None, ns="default"):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"k": "v"}}


CMS = "/api/v1/namespaces/default/configmaps"


def test_mutating_in_order_then_validating(api, hook):
    # configurations run in name order: "a-..." patches first, "b-..." sees its label
    install(api, "MutatingWebhookConfiguration", "b-second", webhook(hook, "b.example.com",
                                                                     "/label-b"))
    install(api, "MutatingWebhookConfiguration", "a-first", webhook(hook, "a.example.com",
                                                                    "/label-a"))
    install(api, "ValidatingWebhookConfiguration", "v", webhook(hook, "v.example.com", "/ok"))
    st, body, _ = call(api, "POST", CMS, cm("c1"))
    assert st == 201, body
    assert body["metadata"]["labels"] == {"a": "1", "b": "1"}
    paths = [p.split("?")[0] for p, _ in hook.seen]
    assert paths == ["/label-a", "/label-b", "/ok"]
    assert hook.seen[0][0] == "/label-a?timeout=5s"  # kube-apiserver's timeout parameter
    assert hook.seen[1][1]["object"]["metadata"]["labels"] == {"a": "1"}
    assert hook.seen[2][1]["object"]["metadata"]["labels"] == {"a": "1", "b": "1"}
    req = hook.seen[0][1]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert (req["name"], req["namespace"], req["operation"], req["dryRun"]) == \
        ("c1", "default", "CREATE", False)
    assert req["oldObject"] is None and req["uid"] and req["userInfo"]["username"]
    # an UPDATE carries the old object
    st, body, _ = call(api, "PUT", CMS + "/c1", dict(cm("c1", {"a": "1", "b": "1"}),
                                                     data={"k": "w"}))
    assert st == 200, body
    upd = hook.seen[-1][1]
    assert upd["operation"] == "UPDATE" and upd["oldObject"]["data"] == {"k": "v"}


def test_reinvocation_if_needed(api, hook):
    install(api, "MutatingWebhookConfiguration", "a", webhook(hook, "a.example.com", "/label-a",
                                                              reinvocationPolicy="IfNeeded"))
    install(api, "MutatingWebhookConfiguration", "b", webhook(hook, "b.example.com", "/label-b"))
    assert call(api, "POST", CMS, cm("c1"))[0] == 201
    assert [p.split("?")[0] for p, _ in hook.seen] == ["/label-a", "/label-b", "/label-a"]
    # Never (the default): called once
    hook.seen.clear()
    install(api, "MutatingWebhookConfiguration", "c", webhook(hook, "c.example.com", "/label-c"))
    call(api, "POST", CMS, cm("c2"))
    assert [p.split("?")[0] for p, _ in hook.seen].count("/label-b") == 1


def test_denial_and_timeout_messages(api, hook):
    install(api, "ValidatingWebhookConfiguration", "v", webhook(hook, "deny.example.com",
                                                                "/deny"))
    st, body, _ = call(api, "POST", CMS, cm("c1"))
    assert st == 403
    assert body["message"] == 'admission webhook "deny.example.com" denied the request: nope'
    assert call(api, "DELETE", "/apis/admissionregistration.k8s.io/v1/"
                "validatingwebhookconfigurations/v")[0] == 200
    install(api, "ValidatingWebhookConfiguration", "slow",
            webhook(hook, "slow.example.com", "/slow", timeoutSeconds=1))
    st, body, _ = call(api, "POST", CMS, cm("c2"))
    assert st == 500 and body["reason"] == "InternalError", body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call '
        'webhook: Post "%s/slow?timeout=1s": context deadline exceeded' % hook.url), body
    call(api, "DELETE", "/apis/admissionregistration.k8s.io/v1/"
         "validatingwebhookconfigurations/slow")
    install(api, "ValidatingWebhookConfiguration", "slow2",
            webhook(hook, "slow.example.com", "/slow", timeoutSeconds=1, failurePolicy="Ignore"))
    assert call(api, "POST", CMS, cm("c3"))[0] == 201


def test_rules_and_selectors(api, hook):
    ns = "/api/v1/namespaces"
    call(api, "POST", ns, {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "blue", "labels": {"team": "b"}}})
    call(api, "POST", ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "red"}})
    sel = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                 "values": ["blue"]}]}
    install(api, "ValidatingWebhookConfiguration", "v",
            webhook(hook, "ns.example.com", "/ok", namespaceSelector=sel),
            webhook(hook, "obj.example.com", "/obj",
                    objectSelector={"matchLabels": {"pick": "me"}}),
            webhook(hook, "upd.example.com", "/upd",
                    rules=[{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                            "resources": ["configmaps"]}]),
            webhook(hook, "cluster.example.com", "/cluster",
                    rules=[{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                            "resources": ["*"], "scope": "Cluster"}]))
    call(api, "POST", "/api/v1/namespaces/blue/configmaps", cm("c1"))
    call(api, "POST", "/api/v1/namespaces/red/configmaps", cm("c1", {"pick": "me"}))
    seen = [(p.split("?")[0], r["namespace"]) for p, r in hook.seen]
    assert seen == [("/ok", "blue"), ("/obj", "red")], seen
    hook.seen.clear()
    # UPDATE: the objectSelector matches the old object too
    st, body, _ = call(api, "PUT", "/api/v1/namespaces/red/configmaps/c1", cm("c1"))
    assert st == 200, body
    assert sorted(p.split("?")[0] for p, _ in hook.seen) == ["/obj", "/upd"]
    hook.seen.clear()
    # scope Cluster: a Namespace is sent, namespaced objects are not
    call(api, "POST", ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "g"}})
    assert [p.split("?")[0] for p, _ in hook.seen] == ["/cluster"]


def test_match_policy(api, hook):
    rules = [{"operations": ["CREATE"], "apiGroups": ["networking.istio.io"],
              "apiVersions": ["v1beta1"], "resources": ["virtualservices"]}]
    install(api, "ValidatingWebhookConfiguration", "v",
            webhook(hook, "exact.example.com", "/exact", rules=rules, matchPolicy="Exact"),
            webhook(hook, "equiv.example.com", "/equiv", rules=rules))
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": "r"}, "spec": {"hosts": ["r"]}}
    st, body, _ = call(api, "POST", "/apis/networking.istio.io/v1/namespaces/default/"
                       "virtualservices", vs)
    assert st == 201, body
    assert [p.split("?")[0] for p, _ in hook.seen] == ["/equiv"]
    req = hook.seen[0][1]
    assert req["kind"]["version"] == "v1beta1" and req["requestKind"]["version"] == "v1"


def test_dry_run_side_effects_and_warnings(api, hook):
    install(api, "ValidatingWebhookConfiguration", "w", webhook(hook, "warn.example.com",
                                                                "/warn"))
    st, body, headers = call(api, "POST", CMS + "?dryRun=All", cm("c1"))
    assert st == 201, body
    assert headers["Warning"] == '299 - "mind the gap"'
    assert hook.seen[-1][1]["dryRun"] is True
    assert call(api, "GET", CMS + "/c1")[0] == 404  # nothing stored
    install(api, "ValidatingWebhookConfiguration", "x",
            webhook(hook, "unknown.example.com", "/ok", sideEffects="Unknown"))
    st, body, _ = call(api, "POST", CMS + "?dryRun=All", cm("c1"))
    assert st == 400
    assert body["message"] == 'admission webhook "unknown.example.com" does not support dry run'
    assert call(api, "POST", CMS, cm("c1"))[0] == 201  # not a dry run: called
