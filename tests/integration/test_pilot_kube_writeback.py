"""weft-pilot writes back to the Kubernetes API as istiod does (src/pilot/kube_writer*.c) against
the test API server (tests/kubeapi): the istio-ca-root-cert ConfigMap appears in every namespace
with the root of pilot's --ca-dir (compared with `openssl x509`), kube-public is skipped, a new
namespace gets one, deleting it (kubectl) or editing it (python3-kubernetes) restores it,
PILOT_CA_CERT_CONFIGMAP renames it, discoverySelectors leave a namespace out until it is
labelled; the revision's webhook configurations get the root as caBundle (the injector webhooks
of the mutating one only; the validating ones also failurePolicy Fail) and are patched again
when someone changes them, other revisions are left alone; /debug/kubez and /metrics show the
writer; an API server restart (with objects lost while it was away) converges again, and pilot
serves xDS while the API server is down.
"""
import base64
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from test_pilot_kube import TOKEN, Api, Pilot, XdsClient, catalog, get, get_json, poll

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

CM = "istio-ca-root-cert"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
KUBECTLS = fixture.kubectls()

try:
    from kubernetes import client as kclient, config as kconfig
except ImportError:
    kclient = None


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return fixture.make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def api(certs, tmp_path):
    a = Api(certs, tmp_path)
    yield a
    a.stop()


def ns(api, name, labels=None):
    api.req("POST", "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": name, "labels": labels or {}}})


def cm_path(namespace, name=CM):
    return "/api/v1/namespaces/%s/configmaps/%s" % (namespace, name)


def get_cm(api, namespace, name=CM):
    try:
        return api.req("GET", cm_path(namespace, name))
    except Exception:  # urllib's HTTPError 404
        return None


def root_of(ca_dir):
    with open(os.path.join(ca_dir, "root-cert.pem")) as f:
        return f.read()


def fingerprint(pem):
    r = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256"], input=pem,
                       capture_output=True, text=True, timeout=10, check=True)
    return r.stdout.strip()


def webhook(name, ca=None, policy=None):
    w = {"name": name, "clientConfig": {"service": {"name": "istiod", "namespace":
                                                    "istio-system", "path": "/inject"}},
         "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    if ca:
        w["clientConfig"]["caBundle"] = ca
    if policy:
        w["failurePolicy"] = policy
    return w


def install_webhooks(api):
    """Istio's install: the injector of revision default (plus a foreign webhook in it), one of
    revision canary, the validator of default and the base chart's default validator."""
    api.req("POST", MWC, {"apiVersion": "admissionregistration.k8s.io/v1",
                          "kind": "MutatingWebhookConfiguration",
                          "metadata": {"name": "istio-sidecar-injector",
                                       "labels": {"istio.io/rev": "default",
                                                  "app": "sidecar-injector"}},
                          "webhooks": [webhook("rev.namespace.sidecar-injector.istio.io"),
                                       webhook("other.example.com", ca="b3RoZXI="),
                                       webhook("namespace.sidecar-injector.istio.io")]})
    api.req("POST", MWC, {"apiVersion": "admissionregistration.k8s.io/v1",
                          "kind": "MutatingWebhookConfiguration",
                          "metadata": {"name": "istio-sidecar-injector-canary",
                                       "labels": {"istio.io/rev": "canary"}},
                          "webhooks": [webhook("rev.namespace.sidecar-injector.istio.io")]})
    for name in ("istio-validator-default-istio-system", "istiod-default-validator"):
        api.req("POST", VWC, {"apiVersion": "admissionregistration.k8s.io/v1",
                              "kind": "ValidatingWebhookConfiguration",
                              "metadata": {"name": name, "labels": {"istio.io/rev": "default"}},
                              "webhooks": [webhook("rev.validation.istio.io",
                                                   policy="Ignore")]})


def start_pilot(api, tmp_path, env=None, extra=()):
    """A pilot with its CA in tmp_path/ca (the root compared with the ConfigMaps)."""
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        # its webhook port served (on a free port): only then are the validating webhooks
        # switched to failurePolicy Fail
        p = Pilot(api, tmp_path, extra=["--ca-dir", str(tmp_path / "ca"), "--webhookAddr",
                                        "127.0.0.1:0"] + list(extra))
        poll(lambda: get(p.mon, "/ready")[0] == 200, timeout=40, what="pilot ready")
        return p
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def writer(pilot):
    return pilot.kubez()["writer"]


def test_root_configmaps_and_webhooks(api, tmp_path):
    for n in ("istio-system", "team-a"):  # default and the kube-* ones exist already
        ns(api, n)
    install_webhooks(api)
    pilot = start_pilot(api, tmp_path)
    try:
        root = root_of(str(tmp_path / "ca"))
        fp = fingerprint(root)
        for n in ("istio-system", "default", "kube-system", "team-a"):
            cm = poll(lambda: get_cm(api, n), what="the ConfigMap in " + n)
            assert cm["metadata"]["labels"] == {"istio.io/config": "true"}, cm
            assert fingerprint(cm["data"]["root-cert.pem"]) == fp
            assert cm["data"] == {"root-cert.pem": root}
        assert get_cm(api, "kube-public") is None and get_cm(api, "kube-node-lease") is None

        # a new namespace gets one
        ns(api, "team-b")
        cm = poll(lambda: get_cm(api, "team-b"), what="the new namespace's ConfigMap")
        assert fingerprint(cm["data"]["root-cert.pem"]) == fp

        # deleted (kubectl when installed): recreated
        if KUBECTLS:
            kc = fixture.write_kubeconfig(str(tmp_path / "kc-user"), api.srv.url, token=TOKEN,
                                          ca=api.certs["ca.crt"])
            r = subprocess.run([KUBECTLS[0][1], "--kubeconfig", kc, "--cache-dir",
                                str(tmp_path / "cache"), "-n", "team-a", "delete", "configmap",
                                CM], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
        else:
            api.req("DELETE", cm_path("team-a"))
        cm = poll(lambda: get_cm(api, "team-a"), what="the deleted ConfigMap back")
        assert cm["data"]["root-cert.pem"] == root
        uid = get_cm(api, "team-b")["metadata"]["uid"]

        # edited (python3-kubernetes when installed): restored, its other keys kept
        if kclient:
            cfg = kclient.Configuration()
            kc = fixture.write_kubeconfig(str(tmp_path / "kc-py"), api.srv.url, token=TOKEN,
                                          ca=api.certs["ca.crt"])
            kconfig.load_kube_config(config_file=kc, client_configuration=cfg)
            core = kclient.CoreV1Api(kclient.ApiClient(cfg))
            core.patch_namespaced_config_map(CM, "team-b", {"data": {"root-cert.pem": "x",
                                                                     "extra": "kept"}})
        else:
            api.req("PUT", cm_path("team-b"), dict(
                get_cm(api, "team-b"), data={"root-cert.pem": "x", "extra": "kept"}))
        poll(lambda: (get_cm(api, "team-b") or {}).get("data") ==
             {"root-cert.pem": root, "extra": "kept"}, what="the edited ConfigMap restored")
        assert get_cm(api, "team-b")["metadata"]["uid"] == uid  # updated, not recreated

        # webhooks: the root as caBundle where istiod puts it, failurePolicy Fail (ready)
        ca = base64.b64encode(root.encode()).decode()

        def mwc_ok():
            m = api.req("GET", MWC + "/istio-sidecar-injector")
            return [w["clientConfig"].get("caBundle") for w in m["webhooks"]] == \
                [ca, "b3RoZXI=", ca]
        poll(mwc_ok, what="the injector's caBundle")
        canary = api.req("GET", MWC + "/istio-sidecar-injector-canary")
        assert "caBundle" not in canary["webhooks"][0]["clientConfig"]
        for name in ("istio-validator-default-istio-system", "istiod-default-validator"):
            poll(lambda: [(w["clientConfig"].get("caBundle"), w["failurePolicy"]) for w in
                          api.req("GET", VWC + "/" + name)["webhooks"]] == [(ca, "Fail")],
                 what=name + " patched")

        # someone changes the injector: patched again
        m = api.req("GET", MWC + "/istio-sidecar-injector")
        m["webhooks"][0]["clientConfig"]["caBundle"] = "Ym9ndXM="
        api.req("PUT", MWC + "/istio-sidecar-injector", m)
        poll(mwc_ok, what="the injector's caBundle restored")

        w = writer(pilot)
        assert w["configmap_name"] == CM and w["revision"] == "default" and w["webhook_ready"]
        assert w["configmaps"]["team-a"]["state"] in ("in sync", "created", "waiting"), w
        assert "kube-public" not in w["configmaps"], w
            # the writer counts a write once its answer is back, which may be just after the API
        # server shows the change the poll above saw
        poll(lambda: (lambda c: c["creates"] >= 6 and c["patches"] >= 4)(
            writer(pilot)["counters"]), what="the writer's counters")
        w = writer(pilot)
        assert w["mutatingwebhookconfigurations"]["istio-sidecar-injector"]["writes"] >= 2, w
        assert "istio-sidecar-injector-canary" not in w["mutatingwebhookconfigurations"], w
        assert {x["resource"] for x in w["watches"]} == {
            "configmaps", "mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
        st, metrics = get(pilot.mon, "/metrics")
        assert st == 200
        assert 'webhook_patch_attempts_total{name="istio-sidecar-injector"}' in metrics
        assert 'weft_pilot_kube_writes_total{op="create"}' in metrics
    finally:
        pilot.stop()


def test_discovery_selectors_and_configmap_name(api, tmp_path):
    for n in ("istio-system", "mesh-a", "outside"):
        ns(api, n, {"mesh": "weft"} if n != "outside" else {})
    api.req("POST", "/api/v1/namespaces/istio-system/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "istio", "namespace": "istio-system"},
             "data": {"mesh": "discoverySelectors:\n- matchLabels: {mesh: weft}\n"}})
    pilot = start_pilot(api, tmp_path, env={"PILOT_CA_CERT_CONFIGMAP": "weft-root"})
    try:
        poll(lambda: get_cm(api, "mesh-a", "weft-root"), what="the renamed ConfigMap")
        poll(lambda: get_cm(api, "istio-system", "weft-root"), what="istio-system's")
        time.sleep(1)
        assert get_cm(api, "outside", "weft-root") is None
        assert get_cm(api, "mesh-a") is None  # the default name is not written
        assert "outside" not in writer(pilot)["configmaps"]
        api.update({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "outside", "labels": {"mesh": "weft"}}})
        poll(lambda: get_cm(api, "outside", "weft-root"), what="the labelled namespace's")
    finally:
        pilot.stop()


def test_api_server_restart_converges_and_xds_keeps_serving(api, tmp_path):
    catalog(api)  # istio-system, istioinaction and the catalog (an xDS client's config)
    ns(api, "team-a")
    pilot = start_pilot(api, tmp_path)
    try:
        root = root_of(str(tmp_path / "ca"))
        for n in ("istio-system", "istioinaction", "team-a"):
            poll(lambda: get_cm(api, n), what="the ConfigMap in " + n)
        port = api.srv.port
        api.srv.stop()
        poll(lambda: all(x["state"] == "backing-off" for x in writer(pilot)["watches"]),
             what="the writer's watches backing off")
        # xDS is served while the API server is away: a new client gets its whole config
        assert get(pilot.mon, "/ready")[0] == 200
        x = XdsClient(pilot, tmp_path)
        try:
            assert x.ready, x.ready
        finally:
            x.close()
        # while away, team-a's ConfigMap was deleted and istioinaction's edited
        state = json.load(open(api.state))
        state["rv"] += 2
        objs = []
        for o in state["objs"]:
            md = o[2]["metadata"]
            if o[1] == "configmaps" and md["name"] == CM and md["namespace"] == "team-a":
                continue
            if o[1] == "configmaps" and md["name"] == CM and md["namespace"] == "istioinaction":
                o[2]["data"]["root-cert.pem"] = "edited"
                md["resourceVersion"] = str(state["rv"])
            objs.append(o)
        state["objs"] = objs
        json.dump(state, open(api.state, "w"))
        api.srv = fixture.KubeApi(api.args, port=port, log=api.srv.log).start()
        poll(lambda: get_cm(api, "team-a"), timeout=60, what="team-a's ConfigMap recreated")
        poll(lambda: get_cm(api, "istioinaction")["data"]["root-cert.pem"] == root, timeout=60,
             what="istioinaction's ConfigMap restored")
        w = writer(pilot)
        assert w["configmaps"]["team-a"]["writes"] >= 2, w
    finally:
        pilot.stop()


def test_revision_flag(tmp_path):
    from test_pilot_kube import exe
    pilot = exe("WEFT_PILOT", "weft-pilot")
    r = subprocess.run([pilot, "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and "--revision REV" in r.stdout
    r = subprocess.run([pilot, "--config-dir", str(tmp_path), "--revision", "Bad_Rev"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and 'invalid value "Bad_Rev" for --revision' in r.stderr


VSP = "/apis/networking.istio.io/v1/namespaces/team-a/virtualservices"


def messages(api, name):
    return api.req("GET", VSP + "/" + name).get("status", {}).get("validationMessages")


def test_analysis_status(api, tmp_path):
    """PILOT_ENABLE_ANALYSIS=true: the analyzers' findings become status.validationMessages of
    the Istio resources (through /status), and go away when fixed."""
    ns(api, "istio-system")
    ns(api, "team-a")
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": "reviews", "namespace": "team-a"},
          "spec": {"hosts": ["reviews"], "gateways": ["no-such-gateway"],
                   "http": [{"route": [{"destination": {"host": "reviews"}}]}]}}
    api.req("POST", VSP, vs)
    api.req("POST", "/api/v1/namespaces/team-a/services",
            {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "reviews", "namespace": "team-a"},
             "spec": {"selector": {"app": "reviews"}, "ports": [{"name": "http", "port": 9080}]}})
    pilot = start_pilot(api, tmp_path, env={"PILOT_ENABLE_ANALYSIS": "true"})
    try:
        msgs = poll(lambda: messages(api, "reviews"), what="validationMessages")
        want = {"documentationUrl":
                "https://istio.io/latest/docs/reference/config/analysis/ist0101/",
                "level": "ERROR",
                "type": {"code": "IST0101", "name": "ReferencedResourceNotFound"}}
        assert want in msgs, msgs
        assert writer(pilot)["status"]["VirtualService/team-a/reviews"]["writes"] == 1
        # fixed (the status sent back as read): pilot removes the messages
        cur = api.req("GET", VSP + "/reviews")
        del cur["spec"]["gateways"]
        api.req("PUT", VSP + "/reviews", cur)
        poll(lambda: messages(api, "reviews") is None, what="the messages removed")
        assert writer(pilot)["status"]["VirtualService/team-a/reviews"]["writes"] == 2
    finally:
        pilot.stop()
