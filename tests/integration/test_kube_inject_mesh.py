"""weft-pilot's injector follows the MeshConfig it watches (istiod's Webhook takes the mesh
watcher's config, pkg/kube/inject/webhook.go): with the Kubernetes source, a change of the
`istio` ConfigMap's data.mesh (trustDomain, defaultConfig.proxyMetadata) reaches pods created
afterwards through the admission webhook (TRUST_DOMAIN, PROXY_CONFIG, the proxyMetadata env),
not only the xDS side. The install is `weftctl manifest generate` applied to the test API server
(tests/kubeapi), which calls pilot's webhook port as kube-apiserver does (--service-proxy), as in
test_kube_b027.py.
"""
import json
import subprocess

from test_kube_b027 import WEFTCTL, Env, env, pod, pytestmark  # noqa: F401 (fixture, mark)
from test_pilot_kube import poll

MESH = """defaultConfig:
  discoveryAddress: istiod.istio-system.svc:15012
  proxyMetadata:
    FOO: bar
enablePrometheusMerge: true
rootNamespace: istio-system
trustDomain: td.example
"""


def proxy_env(p):
    c = [c for c in p["spec"]["containers"] if c["name"] == "istio-proxy"]
    assert c, p["spec"]
    return {e["name"]: e.get("value") for e in c[0].get("env", [])}


def test_injector_follows_the_istio_configmap(env):  # noqa: F811
    man = subprocess.run([WEFTCTL, "manifest", "generate"], capture_output=True, text=True,
                         timeout=60)
    assert man.returncode == 0, man.stderr
    env.kubectl("apply", "--validate=false", "-f", "-", stdin=man.stdout)
    env.start_pilot()

    def patched():
        mwc = env.get("mutatingwebhookconfigurations", "istio-sidecar-injector")
        return all(w["clientConfig"].get("caBundle") for w in mwc["webhooks"])
    poll(patched, timeout=30, what="pilot patching the injector's caBundle")
    env.kubectl("create", "namespace", "reports")
    env.kubectl("label", "namespace", "reports", "istio-injection=enabled")

    # before: the ConfigMap's mesh as installed
    env.create(pod("before"))
    e = proxy_env(env.get("pod", "before", "-n", "reports"))
    assert e["TRUST_DOMAIN"] == "cluster.local", e
    assert "FOO" not in e, e

    env.kubectl("patch", "configmap", "istio", "-n", "istio-system", "--type", "merge", "-p",
                json.dumps({"data": {"mesh": MESH}}))
    n = [0]

    def follows():
        n[0] += 1
        name = "after-%d" % n[0]
        env.create(pod(name))
        return proxy_env(env.get("pod", name, "-n", "reports"))["TRUST_DOMAIN"] == "td.example"
    poll(follows, timeout=30, what="pods injected with the new MeshConfig")
    e = proxy_env(env.get("pod", "after-%d" % n[0], "-n", "reports"))
    assert e["FOO"] == "bar", e
    pc = json.loads(e["PROXY_CONFIG"])
    assert pc["proxyMetadata"] == {"FOO": "bar"}, pc
    assert pc["discoveryAddress"] == "istiod.istio-system.svc:15012", pc
