"""Operator report B027 on Kubernetes (../shared/cases/operator-reports.md; issue 21 acceptance
"a Pod CREATE through the API gets the injected sidecar" and "operator reports on Kubernetes
behaviour (injection labels)"): the install as `weftctl manifest generate` writes it, applied
with kubectl to the test API server (tests/kubeapi), weft-pilot watching that API server
(--kubeconfig) and serving the admission webhooks, the API server calling them as
kube-apiserver does:

  - pilot patches the generated MutatingWebhookConfiguration's caBundle (istiod's webhook
    controller), so the API server trusts its webhook port, and switches the validators to
    failurePolicy Fail: an invalid VirtualService without an istio.io/rev label is refused
    (istiod-default-validator);
  - a Pod created in a namespace without `istio-injection` gets no sidecar, and
    `weftctl analyze --use-kube -n reports` says IST0102 (namespace not enabled for injection);
  - labelling the namespace does not touch the running pod (injection happens at creation):
    analyze now says IST0103 (the pod is missing the Istio proxy);
  - a Pod created after the label gets Istio's sidecar (istio-init, istio-proxy, the tlsMode
    label), and one labelled sidecar.istio.io/inject=false does not.
"""
import base64
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from procs import start_process, stop_process
from proxyfix import free_port
from test_pilot_kube import poll

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

WEFTCTL = os.path.abspath(os.environ.get("WEFTCTL") or os.path.join(ROOT, "build", "weftctl"))
PILOT = os.path.abspath(os.environ.get("WEFT_PILOT") or os.path.join(ROOT, "build", "weft-pilot"))
KUBECTLS = fixture.kubectls()
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"

pytestmark = pytest.mark.skipif(not KUBECTLS, reason="no kubectl (run scripts/setup)")

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": None, "namespace": "reports", "labels": {"app": "report-job"}},
       "spec": {"containers": [{"name": "app", "image": "test/client"}]}}


def pod(name, **labels):
    p = json.loads(json.dumps(POD))
    p["metadata"]["name"] = name
    p["metadata"]["labels"].update(labels)
    return p


class Env:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.webhook_port = free_port()
        self.api = fixture.KubeApi(["--service-proxy", "istio-system/istiod:443=127.0.0.1:%d"
                                    % self.webhook_port], log=str(tmp_path / "kubeapi.log"))
        self.api.start()
        self.kc = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), self.api.url)
        self.pilot = None

    def kubectl(self, *args, stdin=None, check=True):
        r = subprocess.run([KUBECTLS[0][1], "--kubeconfig", self.kc, "--cache-dir",
                            str(self.tmp / "cache")] + list(args), input=stdin,
                           capture_output=True, text=True, timeout=90)
        if check:
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    def create(self, obj):
        return self.kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(obj))

    def get(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def analyze(self, ns):
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        return subprocess.run([WEFTCTL, "analyze", "--use-kube=true", "--kubeconfig", self.kc,
                               "-n", ns], capture_output=True, text=True, timeout=60, env=env)

    def start_pilot(self):
        env = dict(os.environ, XDG_STATE_HOME=str(self.tmp / "state"))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        self.pilot, _ = start_process(
            [PILOT, "--kubeconfig", self.kc, "--grpcAddr", "127.0.0.1:0", "--monitoringAddr",
             "127.0.0.1:0", "--webhookAddr", "127.0.0.1:%d" % self.webhook_port, "--ca-dir",
             self.tmp / "ca", "--debounce-after-ms", "50"], count=3, env=env, timeout=40)

    def close(self):
        if self.pilot:
            assert stop_process(self.pilot) == 0, self.pilot.stderr_text()
        self.api.stop()


@pytest.fixture
def env(tmp_path):
    e = Env(tmp_path)
    try:
        yield e
    finally:
        e.close()


def containers(p):
    return ([c["name"] for c in p["spec"].get("initContainers", [])],
            [c["name"] for c in p["spec"]["containers"]])


def test_b027_injection_labels_through_the_api_server(env):
    # the install, as generated, applied with kubectl (its webhooks without a caBundle yet)
    man = subprocess.run([WEFTCTL, "manifest", "generate"], capture_output=True, text=True,
                         timeout=60)
    assert man.returncode == 0, man.stderr
    env.kubectl("apply", "--validate=false", "-f", "-", stdin=man.stdout)
    env.start_pilot()
    root = (env.tmp / "ca" / "root-cert.pem").read_text()
    want = base64.b64encode(root.encode()).decode()

    def patched():
        mwc = env.get("mutatingwebhookconfigurations", "istio-sidecar-injector")
        return all(w["clientConfig"].get("caBundle") == want for w in mwc["webhooks"])
    poll(patched, timeout=30, what="pilot patching the injector's caBundle")

    # config validation of the same install: an invalid VirtualService without any istio.io/rev
    # label (istiod-default-validator) is refused with istiod's message once pilot made the
    # validators failurePolicy Fail
    def failing():
        vwc = env.get("validatingwebhookconfigurations", "istiod-default-validator")
        return all(w.get("failurePolicy") == "Fail" for w in vwc["webhooks"])
    poll(failing, timeout=30, what="the default validator switched to Fail")
    vs = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
          "metadata": {"name": "bad", "namespace": "default"},
          "spec": {"hosts": ["reviews"], "http": [{"route": [{"destination": {}}]}]}}
    r = env.kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(vs), check=False)
    assert r.returncode != 0, r.stdout
    assert 'admission webhook "validation.istio.io" denied the request: configuration is ' \
           'invalid:' in r.stderr, r.stderr

    # a namespace never labelled: the pod starts without a sidecar
    env.kubectl("create", "namespace", "reports")
    env.create(pod("report-job-1"))
    assert containers(env.get("pod", "report-job-1", "-n", "reports")) == ([], ["app"])
    a = env.analyze("reports")
    assert "Info [IST0102] (Namespace reports) The namespace is not enabled for Istio " \
           "injection. Run 'kubectl label namespace reports istio-injection=enabled' to " \
           "enable it, or 'kubectl label namespace reports istio-injection=disabled' to " \
           "explicitly mark it as not needing injection." in a.stdout, a.stdout + a.stderr

    # labelled: the running pod is not touched; analyze names it
    env.kubectl("label", "namespace", "reports", "istio-injection=enabled")
    assert containers(env.get("pod", "report-job-1", "-n", "reports")) == ([], ["app"])
    a = env.analyze("reports")
    assert "Warning [IST0103] (Pod reports/report-job-1) The pod reports/report-job-1 is " \
           "missing the Istio proxy. This can often be resolved by restarting or redeploying " \
           "the workload." in a.stdout, a.stdout + a.stderr
    assert "IST0102" not in a.stdout, a.stdout

    # recreated: Istio's sidecar; opted out by label: none
    env.create(pod("report-job-2"))
    p = env.get("pod", "report-job-2", "-n", "reports")
    assert containers(p) == (["istio-init"], ["app", "istio-proxy"]), containers(p)
    assert p["metadata"]["labels"]["security.istio.io/tlsMode"] == "istio"
    env.create(pod("report-job-3", **{"sidecar.istio.io/inject": "false"}))
    assert containers(env.get("pod", "report-job-3", "-n", "reports")) == ([], ["app"])
