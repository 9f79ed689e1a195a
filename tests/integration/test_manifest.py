"""`weftctl manifest generate` (src/cli/cmd_manifest.c): the install manifests checked by
clients nobody on the project wrote, against the test API server (tests/kubeapi): `kubectl
create --dry-run=client` (kubectl's own decoding and client-side validation against the
built-in kinds' OpenAPI schemas the server serves), `kubectl apply --dry-run=server` (stores
nothing), then a real `kubectl apply` whose objects all exist; and weft-pilot --kubeconfig after
the apply takes its MeshConfig from the applied istio ConfigMap. Every kubectl found is used
(Debian's 1.20 on CI, fixture.kubectls()); each test starts its own server over TLS with a
bearer token and stops it."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, run_weftctl
from procs import crash_report, start_process, stop_process

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

TOKEN = "manifest-token"
KUBECTLS = fixture.kubectls()
needs_kubectl = pytest.mark.skipif(not KUBECTLS, reason="no kubectl (run scripts/setup)")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return fixture.make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def api(certs, tmp_path):
    srv = fixture.KubeApi(["--token", TOKEN, "--tls-cert", certs["server.crt"], "--tls-key",
                           certs["server.key"], "--bookmark-interval", "0.5"],
                          log=str(tmp_path / "kubeapi.log"))
    srv.start()
    srv.kubeconfig = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), srv.url,
                                              token=TOKEN, ca=certs["ca.crt"])
    yield srv
    srv.stop()


def kubectl(path, api, tmp_path, *args, stdin=None, check=True):
    cmd = [path, "--kubeconfig", api.kubeconfig, "--cache-dir", str(tmp_path / "cache")]
    r = subprocess.run(cmd + list(args), input=stdin, capture_output=True, text=True, timeout=90)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def generate(*args):
    r = run_weftctl("manifest", "generate", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def docs_of(text):
    return [d for d in yaml.safe_load_all(text) if d]


def ids(docs):
    return [(d["kind"], d["metadata"]["name"]) for d in docs]


def json_stream(text):
    """The JSON objects kubectl -o json prints one after another."""
    dec, out, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def test_help_and_errors(tmp_path):
    r = run_weftctl("manifest", "generate", "--help")
    assert r.returncode == 0 and "--set" in r.stdout and "--filename" in r.stdout
    r = run_weftctl("manifest", "generate", "--set", "values.global.bogus=1")
    assert r.returncode == 64 and 'unknown key "values.global.bogus"' in r.stderr, r.stderr
    r = run_weftctl("manifest", "generate", "--set", "revision=Bad_Rev")
    assert r.returncode == 64 and "revision" in r.stderr, r.stderr
    r = run_weftctl("manifest", "generate", "--set", "hub")
    assert r.returncode == 64 and "key=value" in r.stderr, r.stderr
    r = run_weftctl("manifest", "bogus")
    assert r.returncode == 64, r.stderr
    missing = tmp_path / "missing.yaml"
    r = run_weftctl("manifest", "generate", "-f", missing)
    assert r.returncode == 1 and str(missing) in r.stderr, r.stderr
    assert "Error: %s: No such file or directory" % missing in r.stderr, r.stderr  # no ":0:"
    assert r.stdout.count("Flags:") == 0
    assert run_weftctl("manifest", "generate", "--help").stdout.count("Flags:") == 1
    bad = tmp_path / "iop.yaml"
    bad.write_text("apiVersion: install.istio.io/v1alpha1\nkind: IstioOperator\nspec:\n"
                   "  tag: 1.2.3\n  values:\n    global:\n      nope: 1\n")
    r = run_weftctl("manifest", "generate", "-f", bad)
    assert r.returncode == 1 and "%s:7: spec.values.global.nope: unknown key" % bad in r.stderr


def test_stdout_in_apply_order_and_output_dir(tmp_path):
    docs = docs_of(generate())
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace"
    last_crd = max(i for i, k in enumerate(kinds) if k == "CustomResourceDefinition")
    assert all(k == "CustomResourceDefinition" for k in kinds[1:last_crd + 1])
    # what a Deployment uses exists before it
    assert ids(docs).index(("ServiceAccount", "istiod")) < ids(docs).index(("Deployment", "istiod"))
    assert ids(docs).index(("ConfigMap", "istio-sidecar-injector")) < \
        ids(docs).index(("Deployment", "istiod"))
    pilot = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "istiod"][0]
    c = pilot["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == ["weft-pilot"] and "--webhookAddr=0.0.0.0:15017" in c["args"]
    assert c["image"] == "localhost/weft/weft:0.1.0"
    assert {p["containerPort"] for p in c["ports"]} == {15010, 15012, 15014, 15017}
    gw = [d for d in docs if d["kind"] == "Deployment" and
          d["metadata"]["name"] == "istio-ingressgateway"][0]
    gc = gw["spec"]["template"]["spec"]["containers"][0]
    assert gc["command"] == ["weft-proxy"] and gc["args"][:2] == ["proxy", "router"]
    assert gc["securityContext"]["runAsUser"] == 1337
    out = tmp_path / "out"
    generate("-o", out)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml"))
    assert files == ["Base/Base.yaml", "Base/Pilot/IngressGateways/IngressGateways.yaml",
                     "Base/Pilot/Pilot.yaml"]
    from_dir = [d for f in files for d in docs_of((out / f).read_text())]
    assert sorted(ids(from_dir)) == sorted(ids(docs))
    # --set hub/tag reach both images
    docs = docs_of(generate("--set", "hub=registry.example/w", "--set", "tag=9.9"))
    images = {c["image"] for d in docs if d["kind"] == "Deployment"
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.example/w/weft:9.9"}


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=[label for label, _ in KUBECTLS])
def test_kubectl_create_dry_run_client(kc, api, tmp_path):
    _, k = kc
    for sets in ((), ("--set", "revision=canary", "--set", "namespace=mesh")):
        text = generate(*sets)
        r = kubectl(k, api, tmp_path, "create", "--dry-run=client", "-f", "-", "-o", "json",
                    stdin=text)
        assert r.stderr == "", r.stderr
        assert ids(json_stream(r.stdout)) == ids(docs_of(text))
    # the check is real: kubectl validates against the schemas the server serves
    bad = generate().replace("containerPort: 15010", "containerPortt: 15010")
    r = kubectl(k, api, tmp_path, "create", "--dry-run=client", "-f", "-", "-o", "name",
                stdin=bad, check=False)
    assert r.returncode != 0 and 'unknown field "containerPortt"' in r.stderr, r.stderr


@needs_kubectl
@pytest.mark.parametrize("kc", KUBECTLS, ids=[label for label, _ in KUBECTLS])
def test_kubectl_apply_dry_run_server_then_apply(kc, api, tmp_path):
    _, k = kc
    text = generate()
    n = len(docs_of(text))
    # as against kube-apiserver, a dry run creates nothing, not even the namespace the other
    # objects go into: without it they are refused
    r = kubectl(k, api, tmp_path, "apply", "--dry-run=server", "-f", "-", stdin=text,
                check=False)
    assert r.returncode != 0 and 'namespaces "istio-system" not found' in r.stderr, r.stderr
    kubectl(k, api, tmp_path, "create", "namespace", "istio-system")
    for t in (text, generate("--set", "revision=canary")):
        r = kubectl(k, api, tmp_path, "apply", "--dry-run=server", "-f", "-", stdin=t)
        lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
        assert len(lines) == len(docs_of(t)) and \
            all(ln.endswith("(server dry run)") for ln in lines), r.stdout
    for what in ("deployments", "configmaps", "serviceaccounts"):
        out = kubectl(k, api, tmp_path, "get", what, "-n", "istio-system", "-o", "name").stdout
        assert out.strip() == "", out  # nothing stored
    assert kubectl(k, api, tmp_path, "get", "crd", "-o", "name").stdout.strip() == ""
    # the real apply, then every object is there
    f = tmp_path / "weft.yaml"
    f.write_text(text)
    r = kubectl(k, api, tmp_path, "apply", "-f", str(f))
    assert len([ln for ln in r.stdout.splitlines() if ln.strip()]) == n, r.stdout
    got = kubectl(k, api, tmp_path, "get", "-f", str(f), "-o", "json").stdout
    items = json.loads(got)
    items = items["items"] if items.get("kind") == "List" else [items]
    assert sorted((i["kind"], i["metadata"]["name"]) for i in items) == sorted(ids(docs_of(text)))
    cm = json.loads(kubectl(k, api, tmp_path, "get", "configmap", "istio", "-n", "istio-system",
                            "-o", "json").stdout)
    assert "trustDomain: cluster.local" in cm["data"]["mesh"]
    # applying again changes nothing
    r = kubectl(k, api, tmp_path, "apply", "-f", str(f))
    assert all(ln.endswith("unchanged") for ln in r.stdout.splitlines() if ln.strip()), r.stdout


@needs_kubectl
def test_pilot_uses_the_applied_mesh_config(api, tmp_path):
    _, k = KUBECTLS[0]
    text = generate("--set", "meshConfig.trustDomain=td.example", "--set",
                    "meshConfig.outboundTrafficPolicy.mode=REGISTRY_ONLY")
    kubectl(k, api, tmp_path, "create", "namespace", "istio-system")
    kubectl(k, api, tmp_path, "apply", "-f", "-", stdin=text)
    pilot = os.environ.get("WEFT_PILOT") or os.path.join(ROOT, "build", "weft-pilot")
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc, addrs = start_process(
        [os.path.abspath(pilot), "--kubeconfig", api.kubeconfig, "--grpcAddr", "127.0.0.1:0",
         "--monitoringAddr", "127.0.0.1:0"], count=2, env=env, timeout=40)
    try:
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d/debug/mesh" % addrs[1][1],
                                    timeout=5) as resp:
            mesh = json.loads(resp.read())
        assert mesh["trustDomain"] == "td.example", mesh
        assert mesh["outboundTrafficPolicy"]["mode"] == "REGISTRY_ONLY", mesh
        assert mesh["defaultConfig"]["discoveryAddress"] == "istiod.istio-system.svc:15012"
    finally:
        rc = stop_process(proc)
        assert crash_report(proc) is None, proc.stderr_text()
        assert rc == 0, proc.stderr_text()
