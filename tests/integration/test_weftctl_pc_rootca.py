"""`weftctl proxy-config rootca-compare POD1 POD2` (alias rc), istioctl's (security.md §2.5;
istioctl/pkg/proxyconfig/proxyconfig.go): the ROOTCA secrets of two config dumps are compared;
any shared certificate prints istioctl's "identical" sentence (exit 0), else istioctl's
"non identical" error (exit 1). The rule table of the istioctl golden corpus
(unit/rootca-compare.json, TestMatchRootCACerts) is run over dumps built from real
certificates; real Envoy dumps of the corpus, and live weft-proxies whose ROOTCA came from a
weft-pilot CA over SDS (two proxies of one pilot: identical; a proxy of another pilot's CA: not).
"""
import base64
import json
import os
import subprocess

import pytest

from conftest import run_weftctl

SHARED = os.path.abspath(os.environ.get("WEFT_SHARED") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared"))
GOLDEN = os.path.join(SHARED, "corpus", "istioctl-golden")
SECRET_DUMPS = os.path.join(GOLDEN, "upstream", "istioctl", "pkg", "writer", "envoy",
                            "configdump", "testdata", "secret")
SECRETS_T = "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"
SECRET_T = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"


def make_cert(tmp_path, name):
    key, crt = tmp_path / (name + ".key"), tmp_path / (name + ".pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out", str(crt),
                    "-days", "30", "-subj", "/O=cluster.local/CN=" + name],
                   check=True, capture_output=True, timeout=60)
    return crt.read_text()


def dump(tmp_path, name, pod, ns, rootca=None, warming=False, secrets=True):
    """A config dump of pod.ns (Istio's node id) whose ROOTCA holds rootca (text)."""
    configs = [{"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
                "bootstrap": {"node": {"id": "sidecar~10.0.0.1~%s.%s~%s.svc.cluster.local"
                                             % (pod, ns, ns)}}}]
    if secrets:
        sec = {"@type": SECRETS_T}
        if rootca is not None:
            entry = {"name": "ROOTCA", "version_info": "1", "secret": {
                "@type": SECRET_T, "name": "ROOTCA", "validation_context": {"trusted_ca": {
                    "inline_bytes": base64.b64encode(rootca.encode()).decode()}}}}
            if warming:
                del entry["secret"]["validation_context"]
            sec["dynamic_warming_secrets" if warming else "dynamic_active_secrets"] = [entry]
        configs.append(sec)
    path = tmp_path / (name + ".json")
    path.write_text(json.dumps({"configs": configs}))
    return str(path)


def rc(*args):
    return run_weftctl("pc", "rootca-compare", *args)


def identical(a, b):
    return ("Both [%s] and [%s] have the identical ROOTCA, theoretically the connectivity "
            "between them is available\n" % (a, b))


def non_identical(a, b):
    return ("Error: Both [%s] and [%s] have the non identical ROOTCA, theoretically the "
            "connectivity between them is unavailable\n" % (a, b))


def test_golden_rule_table(tmp_path):
    with open(os.path.join(GOLDEN, "unit", "rootca-compare.json")) as f:
        table = json.load(f)
    certs = {n: make_cert(tmp_path, n) for n in ("A", "B")}
    msgs = table["messages"]
    for i, case in enumerate(table["cases"]):
        def bundle(v):
            return v if isinstance(v, str) else "".join(certs[n] for n in v)
        d1 = dump(tmp_path, "c%d-1" % i, "p1", "ns1", bundle(case["pod1"]))
        d2 = dump(tmp_path, "c%d-2" % i, "p2", "ns2", bundle(case["pod2"]))
        for alias in ("rootca-compare", "rc"):
            r = run_weftctl("pc", alias, "-f", d1, "-f", d2)
            if case.get("error"):
                assert r.returncode == 1 and r.stdout == "", (case, r.stdout, r.stderr)
                assert r.stderr == "Error: %s\n" % case["error"], (case, r.stderr)
            elif case["match"]:
                assert r.returncode == 0, (case, r.stderr)
                want = msgs["match"].replace("<pod1>.<ns1>", "p1.ns1").replace(
                    "<pod2>.<ns2>", "p2.ns2")
                assert r.stdout == want + "\n" == identical("p1.ns1", "p2.ns2")
            else:
                assert r.returncode == 1 and r.stdout == "", (case, r.stdout)
                want = msgs["mismatch_error"].replace("<pod1>.<ns1>", "p1.ns1").replace(
                    "<pod2>.<ns2>", "p2.ns2")
                assert r.stderr == "Error: " + want + "\n" == non_identical("p1.ns1", "p2.ns2")


def test_json_output(tmp_path):
    a, b = make_cert(tmp_path, "A"), make_cert(tmp_path, "B")
    d1 = dump(tmp_path, "j1", "p1", "ns1", a + b)
    d2 = dump(tmp_path, "j2", "p2", "ns2", b)
    d3 = dump(tmp_path, "j3", "p3", "ns3", a)
    r = rc("-f", d1, "-f", d2, "-o", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["pods"] == ["p1.ns1", "p2.ns2"] and doc["identical"] is True
    assert len(doc["rootCA"][0]["serialNumbers"]) == 2
    assert doc["sharedSerialNumbers"] == doc["rootCA"][1]["serialNumbers"]
    r = rc("-f", d2, "-f", d3, "-o", "json")
    assert r.returncode == 1 and r.stderr == non_identical("p2.ns2", "p3.ns3")
    doc = json.loads(r.stdout)
    assert doc["identical"] is False and doc["sharedSerialNumbers"] == []


def test_real_envoy_dumps():
    istio = os.path.join(SECRET_DUMPS, "istio", "config_dump.json")
    spire = os.path.join(SECRET_DUMPS, "spire", "config_dump.json")
    r = rc("-f", istio, "-f", istio)  # no bootstrap section: the file names the proxy
    assert r.returncode == 0 and r.stdout == identical(istio, istio), r.stderr
    # SPIRE's ROOTCA carries trust domains, not trusted_ca: istioctl cannot read it either
    r = rc("-f", istio, "-f", spire)
    assert r.returncode == 1
    assert r.stderr == ("Error: %s: can not dump ROOTCA from secret: can not retrieve trusted "
                        "CA from secret ROOTCA\n" % spire)


def test_errors(tmp_path):
    a = make_cert(tmp_path, "A")
    ok = dump(tmp_path, "ok", "p1", "ns1", a)
    none = dump(tmp_path, "none", "p2", "ns2", None)
    warm = dump(tmp_path, "warm", "p3", "ns3", a, warming=True)
    nosec = dump(tmp_path, "nosec", "p4", "ns4", secrets=False)
    r = rc("-f", ok, "-f", none)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("Error: p2.ns2: cannot find ROOTCA from secret"), r.stderr
    r = rc("-f", warm, "-f", ok)
    assert r.returncode == 1
    assert r.stderr.startswith("Error: p3.ns3: cannot find ROOTCA from secret: it is still "
                               "WARMING"), r.stderr
    r = rc("-f", ok, "-f", nosec)  # no SecretsConfigDump (weft-proxy without secrets)
    assert r.returncode == 1
    assert r.stderr.startswith("Error: p4.ns4: cannot find ROOTCA from secret"), r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"configs": [{"@type": SECRETS_T, "dynamic_active_secrets": 3}]}))
    r = rc("-f", ok, "-f", str(bad))
    assert r.returncode == 1
    assert "bad.json: configs[0].dynamic_active_secrets: expected an array" in r.stderr
    # exactly two pods (istioctl's text); usage errors exit 64
    for args in ([], ["a"], ["a", "b", "c"], ["-f", ok], ["a", "-f", ok, "-f", ok]):
        r = rc(*args)
        assert r.returncode == 64, (args, r.stderr)
        assert r.stderr == "Error: rootca-compare requires 2 pods as an argument\n", r.stderr
    # other subcommands still take one dump
    r = run_weftctl("pc", "secret", "-f", ok, "-f", ok)
    assert r.returncode == 64 and "secret takes one --file" in r.stderr
    h = rc("--help")
    assert h.returncode == 0
    assert "Compare ROOTCA values for given 2 pods" in h.stdout and "rc" in h.stdout
    # a pod that pilot does not know: the lookup's error, exit 1
    r = rc("nope-1.default", "nope-2.default", "--pilot", "127.0.0.1:1")
    assert r.returncode == 1 and "127.0.0.1:1" in r.stderr, r.stderr


# ---- live weft-proxies: ROOTCA from a weft-pilot CA over SDS --------------------------------

grpc = pytest.importorskip("grpc")
from proxyfix import proxy_factory  # noqa: E402,F401
from test_pilot import pilot_exe  # noqa: E402,F401
from test_pilot_ca import start, stop, token  # noqa: E402
from test_proxy_sds import app, client_proxy, mesh, secrets_dump, wait_generated  # noqa: E402,F401


def test_live_proxies(proxy_factory, mesh, app, monkeypatch, tmp_path, pilot_exe):  # noqa: F811
    # two proxies with certificates from one pilot's CA
    a = client_proxy(proxy_factory, mesh, app, monkeypatch)
    b = client_proxy(proxy_factory, mesh, app, monkeypatch,
                     tok=mesh.tokens["server"])
    # a third from another pilot (its own CA directory: another self-signed root)
    (tmp_path / "other").mkdir()
    other = start(pilot_exe, tmp_path / "other", tmp_path / "other-ca")
    try:
        (tmp_path / "other.token").write_text(
            token(pilot_exe, tmp_path / "other-ca", "default", "client") + "\n")
        monkeypatch.setenv("CA_ADDR", "127.0.0.1:%d" % other.xds)
        c = client_proxy(proxy_factory, mesh, app, monkeypatch, tok=tmp_path / "other.token")
        for p in (a, b, c):
            wait_generated(p)
        files = []
        for n, p in (("a", a), ("b", b), ("c", c)):
            _, body = secrets_dump(p)
            f = tmp_path / ("live-%s.json" % n)
            f.write_bytes(body)
            files.append(str(f))
        r = rc("-f", files[0], "-f", files[1])
        assert r.returncode == 0, r.stderr
        assert r.stdout.endswith("have the identical ROOTCA, theoretically the connectivity "
                                 "between them is available\n"), r.stdout
        r = rc("-f", files[0], "-f", files[2])
        assert r.returncode == 1
        assert "have the non identical ROOTCA, theoretically the connectivity between them is " \
               "unavailable" in r.stderr, r.stderr
    finally:
        stop(other)


# ---- live proxies found by name through weft-pilot ------------------------------------------

from meshfix import mesh as catalog_fixture_mesh  # noqa: E402,F401
from test_mesh_catalog import catalog_mesh  # noqa: E402


def test_live_pods_by_name(catalog_fixture_mesh):  # noqa: F811
    """POD.NS names are found through pilot and their live /config_dump is read: two sidecars
    of one mesh (each with its certificate from pilot's CA) share the mesh root."""
    live_mesh = catalog_fixture_mesh
    gw, pods = catalog_mesh(live_mesh)
    live_mesh.wait_synced()
    a, b = "%s.istioinaction" % pods[0].name, "%s.istioinaction" % pods[1].name
    r = run_weftctl("pc", "rc", a, b, "--pilot", "127.0.0.1:%d" % live_mesh.mon_port)
    assert (r.returncode, r.stdout) == (0, identical(a, b)), (r.stdout, r.stderr)
    r = run_weftctl("pc", "rc", "nope-1.istioinaction", b, "--pilot",
                    "127.0.0.1:%d" % live_mesh.mon_port)
    assert r.returncode == 1 and "nope-1" in r.stderr, r.stderr
