"""weft-pilot as a process on loopback: readiness, debug endpoints, metrics names, an invalid
file reported while its last good version keeps serving, a config dump for a pod written as a
Pod object, command-line errors and a clean SIGTERM exit.

The binary is $WEFT_PILOT, else weft-pilot next to $WEFT_PROXY, else build/weft-pilot. The
book's catalog files are copied from the shared corpus into tmp_path (never into the repo).
The xDS protocol itself is tested in C (tests/unit/test_pilot_ads.c): Python has no gRPC here.
"""
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, shared_path
from procs import crash_report, start_process, stop_process

BOOK = ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-deployment-v2.yaml",
        "ch10/catalog-gateway.yaml", "ch10/catalog-virtualservice-subsets-v1-v2.yaml")

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: catalog-v1-abc
  namespace: default
  labels: {app: catalog, version: v1}
spec:
  containers:
  - name: catalog
    ports: [{containerPort: 3000, name: http}]
status: {phase: Running, podIP: %s}
"""

VS = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog-split, namespace: default}
spec:
  hosts: [catalog]
  http:
  - route:
    - destination: {host: catalog}
      weight: %s
    - destination: {host: catalog}
      weight: 20
"""


def pilot_path():
    if os.environ.get("WEFT_PILOT"):
        return os.path.abspath(os.environ["WEFT_PILOT"])
    if os.environ.get("WEFT_PROXY"):
        return os.path.join(os.path.dirname(os.path.abspath(os.environ["WEFT_PROXY"])),
                            "weft-pilot")
    return os.path.join(ROOT, "build", "weft-pilot")


@pytest.fixture
def pilot_exe():
    exe = pilot_path()
    if not os.access(exe, os.X_OK):
        pytest.fail("%s is missing or not executable: build it or set WEFT_PILOT" % exe)
    return exe


@pytest.fixture
def dirs(tmp_path):
    book = os.path.join(shared_path(), "corpus", "istioinaction")
    if not os.path.isdir(book):
        pytest.skip("book corpus not found at %s" % book)
    cfg, pods = tmp_path / "cfg", tmp_path / "pods"
    cfg.mkdir()
    pods.mkdir()
    for rel in BOOK:
        shutil.copy(os.path.join(book, rel), cfg / os.path.basename(rel))
    return cfg, pods


@pytest.fixture
def pilot(pilot_exe, dirs):
    cfg, pods = dirs
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--config-dir", pods,
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--debounce-after-ms", "50"], count=2)
    proc.mon = addrs[1][1]
    proc.xds = addrs[0][1]
    yield proc
    rc = stop_process(proc)
    assert crash_report(proc) is None, proc.stderr_text()
    assert rc == 0, proc.stderr_text()


def get(port, path):
    """(status, body text)."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def get_json(port, path):
    status, body = get(port, path)
    assert status == 200, body
    return json.loads(body)


def poll(fn, timeout=5.0):
    """fn() until truthy (returned) or timeout (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %.1fs" % timeout)
        time.sleep(0.05)


def test_ready_syncz_metrics(pilot):
    assert get(pilot.mon, "/ready") == (200, "ready\n")
    assert get_json(pilot.mon, "/debug/syncz") == []
    assert get_json(pilot.mon, "/debug/adsz") == {"totalClients": 0, "clients": [], "rejected": []}
    status, text = get(pilot.mon, "/metrics")
    assert status == 200
    for name in ('pilot_xds_pushes{type="cds"}', 'pilot_xds_pushes{type="eds"}',
                 'pilot_xds_push_time_bucket{type="lds",le="0.01"}',
                 "pilot_proxy_convergence_time_count", "# TYPE pilot_xds gauge",
                 'pilot_total_xds_rejects{type="rds"}', "pilot_sds_certificate_errors_total 0"):
        assert name in text, name
    reg = get_json(pilot.mon, "/debug/registryz")
    assert [s["hostname"] for s in reg] == ["catalog.default.svc.cluster.local"]
    assert reg[0]["ports"][0]["port"] == 80
    logs = pilot.stderr_text()
    assert "xDS server listening on 127.0.0.1:%d" % pilot.xds in logs
    assert "monitoring server listening on 127.0.0.1:%d" % pilot.mon in logs
    assert get(pilot.mon, "/nope")[0] == 404


def test_invalid_file_keeps_last_good(pilot, dirs):
    cfg, _ = dirs
    vs = cfg / "split.yaml"
    vs.write_text(VS % "80")
    poll(lambda: any(r["name"] == "catalog-split"
                     for r in get_json(pilot.mon, "/debug/configz")["resources"]))
    vs.write_text(VS % '"eighty"')
    errs = poll(lambda: get_json(pilot.mon, "/debug/config_errors"))
    assert len(errs) == 1
    e = errs[0]
    assert e["level"] == "error" and "code" not in e
    assert e["file"].endswith("split.yaml")
    assert e["line"] == 9
    assert e["field"] == "spec.http[0].route[0].weight"
    assert e["resource"] == "VirtualService default/catalog-split"
    assert e["kept_last_good"] is True
    configz = get_json(pilot.mon, "/debug/configz")
    kept = [r for r in configz["resources"] if r["name"] == "catalog-split"]
    assert kept and kept[0]["last_good"] is True
    assert configz["errors"] == errs
    assert "config error: %s:9:" % e["file"] in pilot.stderr_text()
    # a message that names its field itself: the field is said once
    to = cfg / "timeout.yaml"
    to.write_text(VS.replace("catalog-split", "catalog-to").replace(
        "  - route:", "  - timeout: 5parsecs\n    route:") % "80")
    t = poll(lambda: [x for x in get_json(pilot.mon, "/debug/config_errors")
                      if x["file"].endswith("timeout.yaml")])[0]
    assert t["field"] == "spec.http[0].timeout" and t["message"].startswith("bad Duration"), t
    assert "spec.http[0].timeout: spec.http[0].timeout" not in pilot.stderr_text()
    to.unlink()
    # a file that does not parse at all: reported, its resources keep serving
    svc = cfg / "catalog.yaml"
    svc.write_text(svc.read_text() + "\n---\nkind: [\n")
    poll(lambda: any(x["file"].endswith("catalog.yaml")
                     for x in get_json(pilot.mon, "/debug/config_errors")))
    reg = get_json(pilot.mon, "/debug/registryz")
    assert [s["hostname"] for s in reg] == ["catalog.default.svc.cluster.local"]
    # fixed: errors gone
    vs.write_text(VS % "80")
    shutil.copy(os.path.join(shared_path(), "corpus", "istioinaction", BOOK[0]), svc)
    poll(lambda: get_json(pilot.mon, "/debug/config_errors") == [])
    assert get(pilot.mon, "/ready")[0] == 200


def test_parse_error_in_a_later_document_names_its_line(pilot, dirs):
    """A file is parsed chunk by chunk between "---" lines: an error in a later chunk is at
    its line in the file (a duplicate key on line 9 was reported at line 13, and in a 78-line
    file at line 146)."""
    cfg, _ = dirs
    (cfg / "d2.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                 "metadata: {name: x, namespace: y}\n---\n"
                                 "apiVersion: v1\nkind: Service\nmetadata:\n"
                                 "  name: a\n  name: b\n")
    errs = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                         if e["file"].endswith("d2.yaml")])
    assert len(errs) == 1, errs
    e = errs[0]
    assert (e["level"], e["line"], e["column"]) == ("error", 9, 3), e
    assert 'mapping key "name" already defined at line 8' in e["message"], e
    (cfg / "d2.yaml").unlink()
    poll(lambda: get_json(pilot.mon, "/debug/config_errors") == [])


def test_secret_the_api_server_would_refuse_is_rejected(pilot, dirs):
    """A Secret in a folder that `kubectl apply` would refuse (data values that are not base64,
    a data value that is a map) is rejected with the API server's message at its file, line
    and field, instead of being served as a Secret with no certificate (a gateway's
    credentialName then reads "not found", and the error names why)."""
    cfg, _ = dirs
    (cfg / "sec.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata:\n"
                                  "  name: cred\n  namespace: istio-system\n"
                                  "type: kubernetes.io/tls\ndata:\n"
                                  "  tls.crt: \"%%%notbase64\"\n  tls.key: {x: 1}\n")
    errs = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                         if e["file"].endswith("sec.yaml")])
    assert len(errs) == 2, errs
    by_field = {e["field"]: e for e in errs}
    e = by_field["data[tls.crt]"]
    assert (e["level"], e["line"]) == ("error", 8), e
    assert e["resource"] == "Secret istio-system/cred", e
    assert e["message"] == ('Secret in version "v1" cannot be handled as a Secret: illegal base64 '
                            'data at input byte 0'), e
    assert "cannot unmarshal object into Go struct field Secret.data of type []uint8" in \
        by_field["data[tls.key]"]["message"], errs
    (cfg / "sec.yaml").unlink()
    poll(lambda: get_json(pilot.mon, "/debug/config_errors") == [])


WASM_AUTHN = """apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata:
  name: default
  namespace: default
spec:
  url: oci://example.com/authn:1
  phase: AUTHN
"""


def test_not_implemented_fields_are_warnings(pilot, dirs):
    """Never accept silently: a security control weft does not enforce is listed on
    /debug/config_errors (level warning, WFT0002), counted in /metrics, logged, and served."""
    cfg, _ = dirs
    (cfg / "pa.yaml").write_text(WASM_AUTHN)
    errs = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                         if e["level"] == "warning"])
    assert len(errs) == 1, errs
    w = errs[0]
    assert w["code"] == "WFT0002"
    assert w["resource"] == "WasmPlugin default/default"
    assert w["kind"] == "WasmPlugin"
    assert w["field"] == "spec.phase"
    assert (w["file"].endswith("pa.yaml"), w["line"], w["column"]) == (True, 8, 3)
    assert "is not enforced by weft" in w["message"]
    assert w["kept_last_good"] is False
    # not an error: nothing is held back, the gauge of errors stays 0
    _, text = get(pilot.mon, "/metrics")
    assert "weft_pilot_config_errors 0" in text
    assert "weft_pilot_config_warnings 1" in text
    assert "not implemented: %s:8:3: WasmPlugin default/default: spec.phase" % \
        w["file"] in pilot.stderr_text()
    assert any(r["kind"] == "WasmPlugin"
               for r in get_json(pilot.mon, "/debug/configz")["resources"])
    # a misspelled field: served without it, said as the webhook's warning (kubectl would
    # print it), not silently dropped
    (cfg / "vs.yaml").write_text(VS.replace("catalog-split", "catalog-typo").replace(
        "  - route:", "  - timeoutt: 5s\n    route:") % "80")
    typo = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                         if e.get("code") == "IST0133"])
    assert typo[0]["resource"] == "VirtualService default/catalog-typo", typo
    assert "timeoutt" in typo[0]["message"] and typo[0]["level"] == "warning", typo
    (cfg / "vs.yaml").unlink()
    (cfg / "pa.yaml").unlink()
    poll(lambda: get_json(pilot.mon, "/debug/config_errors") == [])


GW_MISSING_CRED = """apiVersion: networking.istio.io/v1beta1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: ["a.example.com"]
    tls: {mode: SIMPLE, credentialName: no-such-cred}
---
apiVersion: v1
kind: Pod
metadata: {name: gw-1, namespace: istio-system, labels: {istio: ingressgateway}}
spec: {containers: [{name: istio-proxy}]}
"""


def test_warnings_keep_their_lines_while_a_resource_is_rejected(pilot, dirs):
    """A rejected resource (no last good version, or one) leaves the warnings about the served
    resources at their files, lines and columns: the served store was rebuilt from JSON text,
    so once anything was rejected the gateway credential warning read line 0 (new-user
    report)."""
    cfg, _ = dirs
    (cfg / "gw.yaml").write_text(GW_MISSING_CRED)

    def cred_warning():
        return [e for e in get_json(pilot.mon, "/debug/config_errors")
                if e.get("code") == "IST0101" and e["file"].endswith("gw.yaml")]
    w = poll(cred_warning)[0]
    assert (w["line"], w["column"]) == (9, 41), w
    # a VirtualService with no last good version, rejected
    (cfg / "bad.yaml").write_text(VS.replace("catalog-split", "catalog-bad").replace(
        "  - route:", "  - timeout: soon\n    route:") % "80")
    poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                  if e["level"] == "error" and e["file"].endswith("bad.yaml")])
    w = cred_warning()
    assert len(w) == 1 and (w[0]["line"], w[0]["column"]) == (9, 41), w
    # the rejected one is not served; the others are
    names = {r["name"] for r in get_json(pilot.mon, "/debug/configz")["resources"]}
    assert "catalog-bad" not in names and "gw" in names, names
    # the Gateway rejected in turn: its last good version is served (from its JSON text)
    (cfg / "gw.yaml").write_text(GW_MISSING_CRED.replace("mode: SIMPLE", "mode: SIMPLEST"))
    poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                  if e["level"] == "error" and e["file"].endswith("gw.yaml")])
    names = {r["name"] for r in get_json(pilot.mon, "/debug/configz")["resources"]}
    assert "gw" in names, names
    (cfg / "bad.yaml").unlink()
    (cfg / "gw.yaml").unlink()
    poll(lambda: get_json(pilot.mon, "/debug/config_errors") == [])


DB_WITH_STRICT = """apiVersion: v1
kind: Service
metadata: {name: db, namespace: default}
spec:
  selector: {app: db}
  ports: [{name: tcp-pg, port: 5432}, {name: http-admin, port: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: default, labels: {app: db}}
spec: {containers: [{name: db}]}
status: {podIP: 10.10.0.9}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: db, namespace: default}
spec:
  selector: {matchLabels: {app: db}}
  mtls: {mode: STRICT}
  portLevelMtls:
    9090: {mode: DISABLE}
"""


def test_peer_authentication_on_a_port_without_chain_is_reported(pilot, dirs):
    """A PeerAuthentication mode that no inbound chain carries is never accepted silently: a
    portLevelMtls key no Service port targets (WFT0001). The TCP target port 5432 under STRICT
    and the HTTP port 8080 have their chains (pilot/tcp.h, inbound.h) and are not reported."""
    cfg, _ = dirs
    (cfg / "db.yaml").write_text(DB_WITH_STRICT)
    poll(lambda: len([e for e in get_json(pilot.mon, "/debug/config_errors")
                      if e.get("resource") == "PeerAuthentication default/db"]) == 1)
    errs = [e for e in get_json(pilot.mon, "/debug/config_errors")
            if e.get("resource") == "PeerAuthentication default/db"]
    port = errs[0]
    assert (port["code"], port["field"]) == ("WFT0001", "spec.portLevelMtls[9090].mode"), port
    assert port["message"].startswith(
        "spec.portLevelMtls[9090].mode has no effect in weft on port 9090 of pod default/db-1: "
        "it is not a Service target port of the pod"), port
    assert "5432" not in port["message"] and "8080" not in port["message"]


TCP_PORT_CLASH = """apiVersion: v1
kind: Service
metadata: {name: pg, namespace: default}
spec:
  clusterIP: 10.96.0.7
  ports: [{name: tcp-pg, port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: pg-replica, namespace: default}
spec:
  ports:
  - {name: tcp-pg, port: 5432}
"""


def test_tcp_port_another_service_takes_is_reported(pilot, dirs):
    """Two TCP Services on one port: weft-proxy binds one outbound listener per port, so the
    second gets no listener; pilot says so (WFT0001 on its port) instead of misrouting
    silently."""
    cfg, _ = dirs
    (cfg / "pg.yaml").write_text(TCP_PORT_CLASH)
    errs = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                         if e.get("resource") == "Service default/pg-replica"])
    assert len(errs) == 1, errs
    e = errs[0]
    assert (e["code"], e["field"], e["line"]) == ("WFT0001", "spec.ports[0]", 13), e
    assert e["message"].startswith(
        "spec.ports[0] (tcp-pg) has no effect in weft's explicit mode: port 5432 is also "
        "pg.default.svc.cluster.local's (TCP)"), e
    assert not [e for e in get_json(pilot.mon, "/debug/config_errors")
                if e.get("resource") == "Service default/pg"]
    (cfg / "pg.yaml").unlink()
    poll(lambda: not [e for e in get_json(pilot.mon, "/debug/config_errors")
                      if e.get("resource") == "Service default/pg-replica"])


def test_config_dump_for_pod(pilot, dirs):
    _, pods = dirs
    status, body = get(pilot.mon, "/debug/config_dump")
    assert status == 400 and "proxyID" in body
    assert get(pilot.mon, "/debug/config_dump?proxyID=nobody.default")[0] == 404
    (pods / "catalog-v1-abc.yaml").write_text(POD % "127.10.0.5")

    def dump():
        s, b = get(pilot.mon, "/debug/config_dump?proxyID=catalog-v1-abc.default&include_eds")
        return json.loads(b) if s == 200 else None
    d = poll(dump)
    types = [c["@type"].rsplit(".", 1)[1] for c in d["configs"]]
    assert types == ["BootstrapConfigDump", "ClustersConfigDump", "EndpointsConfigDump",
                     "ListenersConfigDump", "ScopedRoutesConfigDump", "RoutesConfigDump",
                     "SecretsConfigDump"]
    clusters = [c["cluster"]["name"] for c in d["configs"][1]["dynamic_active_clusters"]]
    assert "outbound|80||catalog.default.svc.cluster.local" in clusters
    eps = {e["endpoint_config"]["cluster_name"]: e["endpoint_config"]
           for e in d["configs"][2]["dynamic_endpoint_configs"]}
    cla = eps["outbound|80||catalog.default.svc.cluster.local"]
    addr = cla["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    assert addr == {"address": "127.10.0.5", "port_value": 3000}
    for l in d["configs"][3]["dynamic_listeners"]:
        assert l["active_state"]["listener"]["name"] == l["name"]
    ez = get_json(pilot.mon, "/debug/endpointz")
    assert ez[0]["endpoints"][0]["address"] == "127.10.0.5"
    # a pod change is an endpoint-only push
    (pods / "catalog-v1-abc.yaml").write_text(POD % "127.10.0.6")
    ps = poll(lambda: (lambda j: j if j["change"] == "ENDPOINTS" else None)(
        get_json(pilot.mon, "/debug/push_status")))
    assert ps["changed"] == ["Pod/default/catalog-v1-abc"]


AUTHZ = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-admin, namespace: default}
spec:
  selector: {matchLabels: {app: catalog}}
  action: DENY
  rules:
  - to: [{operation: {paths: ["/admin"]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext, namespace: default}
spec:
  selector: {matchLabels: {app: catalog}}
  action: CUSTOM
  provider: {name: opa}
  rules:
  - to: [{operation: {paths: ["/ext"]}}]
"""

TARGETED = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: %s, namespace: default}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: web}]
  action: %s
  rules:
  - to: [{operation: {paths: ["/admin"]}}]
"""



def test_authorization_policy_filters_debug_and_errors(pilot, dirs):
    """The RBAC filters of the pod's AuthorizationPolicies sit in its inbound HTTP connection
    manager right after istio.metadata_exchange (CUSTOM's fail-closed DENY, then DENY);
    /debug/authorizationz lists the policies as istiod's; the CUSTOM policy is reported."""
    cfg, pods = dirs
    (cfg / "authz.yaml").write_text(AUTHZ)
    (pods / "catalog-v1-abc.yaml").write_text(POD % "127.10.0.5")

    def inbound():
        s, b = get(pilot.mon, "/debug/config_dump?proxyID=catalog-v1-abc.default")
        if s != 200:
            return None
        for c in json.loads(b)["configs"]:
            for l in c.get("dynamic_listeners", []):
                lst = l["active_state"]["listener"]
                if lst.get("traffic_direction") == "INBOUND":
                    return lst
        return None

    def with_rbac():  # the pod's listener may be built before pilot has read the policies
        lst = inbound()
        hcm = lst and lst["filter_chains"][0]["filters"][0]["typed_config"]
        names = [f["name"] for f in hcm["http_filters"]] if hcm else []
        return lst if "envoy.filters.http.rbac" in names else None
    lst = poll(with_rbac, timeout=15)
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    names = [f["name"] for f in hcm["http_filters"]]
    assert names[:4] == ["istio.metadata_exchange", "envoy.filters.http.rbac",
                         "envoy.filters.http.rbac", "envoy.filters.http.fault"], names
    custom, deny = (f["typed_config"] for f in hcm["http_filters"][1:3])
    assert list(custom["rules"]["policies"]) == [
        "istio-ext-authz-opa-ns[default]-policy[ext]-rule[0]-deny-due-to-bad-CUSTOM-action"]
    assert deny["rules"]["action"] == "DENY"
    assert list(deny["rules"]["policies"]) == ["ns[default]-policy[deny-admin]-rule[0]"]
    az = get_json(pilot.mon, "/debug/authorizationz")["authorization_policies"]
    assert az["root_namespace"] == "istio-system"
    assert sorted(p["name"] for p in az["namespace_to_policies"]["default"]) == [
        "deny-admin", "ext"]
    errs = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                         if e.get("resource") == "AuthorizationPolicy default/ext"
                         and e.get("field") == "spec.action"])
    assert (errs[0]["code"], errs[0]["line"]) == ("WFT0002", 15), errs[0]
    assert len(errs) == 1, errs  # once, from the table of what weft does not implement
    assert errs[0]["message"].startswith(
        "spec.action is not enforced by weft: CUSTOM authorization (the ext_authz filter) is not "
        "implemented"), errs[0]
    # targetRefs reach no proxy in weft: on a DENY policy less is denied than written (an
    # error, WFT0002), on an ALLOW policy nothing more is allowed (WFT0004)
    (cfg / "targeted.yaml").write_text(TARGETED % ("deny-gw", "DENY") + "---\n" +
                                       TARGETED % ("allow-gw", "ALLOW"))
    for name, code in (("deny-gw", "WFT0002"), ("allow-gw", "WFT0004")):
        errs = poll(lambda: [e for e in get_json(pilot.mon, "/debug/config_errors")
                             if e.get("resource") == "AuthorizationPolicy default/" + name
                             and e.get("field", "").startswith("spec.targetRef")])
        assert errs[0]["code"] == code, errs


def test_authz_filters_command(pilot_exe, tmp_path):
    """`weft-pilot authz-filters` prints the filters of a workload as JSON (the conformance
    runner's entry point; tests/conformance/run_authz_cases.py covers the translation), notes
    on stderr with file and line; exit 1 for manifests it cannot load, 2 for a bad command
    line."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "authz.yaml").write_text(AUTHZ)
    run = lambda *a: subprocess.run([pilot_exe, "authz-filters", *a], capture_output=True,
                                    text=True, timeout=30)
    p = run("--config-dir", str(cfg), "-n", "default", "-l", "app=catalog,version=v1")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert [f["typed_config"]["rules"]["action"] for f in out] == ["DENY", "DENY"]
    assert "authz.yaml:15: AuthorizationPolicy default/ext: spec.action:" in p.stderr
    p = run("--config-dir", str(cfg), "-n", "default", "-l", "app=other", "--chain", "tcp")
    assert (p.returncode, json.loads(p.stdout)) == (0, [])
    p = run("--config-dir", str(tmp_path / "missing"), "-n", "default")
    assert p.returncode == 1 and "missing" in p.stderr
    for bad in (["-n", "default"], ["--config-dir", str(cfg)],
                ["--config-dir", str(cfg), "-n", "x", "--chain", "udp"],
                ["--config-dir", str(cfg), "-n", "x", "-l", "novalue"]):
        p = run(*bad)
        assert p.returncode == 2, (bad, p.stderr)
    p = run("--help")
    assert p.returncode == 0 and "conformance" in p.stdout


def test_command_line(pilot_exe, tmp_path):
    def run(*args):
        return subprocess.run([pilot_exe, *map(str, args)], capture_output=True, text=True,
                              timeout=30)
    assert run("--help").returncode == 0
    assert run("--version").stdout.startswith("weft-pilot ")
    r = run("--bogus")
    assert r.returncode == 2 and "--bogus" in r.stderr
    assert run().returncode == 2
    assert run("--config-dir", tmp_path, "--debounce-after-ms", "x").returncode == 2
    missing = tmp_path / "missing"
    r = run("--config-dir", missing, "--grpcAddr", "127.0.0.1:0", "--monitoringAddr",
            "127.0.0.1:0")
    assert r.returncode == 1 and str(missing) in r.stderr


def test_bind_failure_names_address(pilot, pilot_exe, tmp_path):
    r = subprocess.run([pilot_exe, "--config-dir", tmp_path, "--grpcAddr",
                        "127.0.0.1:%d" % pilot.xds, "--monitoringAddr", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "127.0.0.1:%d" % pilot.xds in r.stderr


def test_monitoring_port_survives_a_flood_of_idle_connections(pilot):
    """Many connections that never finish their request head neither exhaust pilot nor keep
    new requests out: beyond 256 the oldest idle one is closed, and any idle one is closed
    after 10 s."""
    import socket
    socks = []
    try:
        for _ in range(400):
            s = socket.create_connection(("127.0.0.1", pilot.mon), timeout=5)
            s.sendall(b"GET /ready HTTP/1.1\r\nX: " + b"a" * 1000)
            socks.append(s)
        assert get(pilot.mon, "/ready")[0] == 200  # a new request is still served

        def closed(s):
            s.settimeout(0.01)
            try:
                return s.recv(1) == b""
            except socket.timeout:
                return False
            except OSError:
                return True
        assert sum(closed(s) for s in socks[:100]) >= 100  # the oldest were evicted
        s = socks[-1]
        s.settimeout(15)
        t0 = time.monotonic()
        assert s.recv(1) == b""  # the newest idle one goes at its deadline
        assert time.monotonic() - t0 <= 12
    finally:
        for s in socks:
            s.close()


def test_bad_command_line_values_exit_2(pilot_exe, dirs):
    cfg, _ = dirs
    for args, text in ((["--grpcAddr", "localhost:0"], "--grpcAddr"),
                       (["--grpcAddr", "127.0.0.1:99999"], "--grpcAddr"),
                       (["--monitoringAddr", "nope"], "--monitoringAddr"),
                       (["--default-namespace", "Bad_NS"], "--default-namespace"),
                       (["--service-cluster-ip-range", "10.96.0.1/12"], "host bits are set"),
                       (["--service-cluster-ip-range", "fd00::/108"], "want an IPv4 CIDR"),
                       (["--debounce-max-ms", "1", "--debounce-after-ms", "1000"],
                        "--debounce-max-ms")):
        r = subprocess.run([pilot_exe, "--config-dir", cfg] + args, capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 2, (args, r.stderr)
        assert text in r.stderr, (args, r.stderr)


def test_xds_port_in_use_names_the_reason(pilot_exe, dirs):
    import socket
    cfg, _ = dirs
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        port = s.getsockname()[1]
        r = subprocess.run([pilot_exe, "--config-dir", cfg, "--grpcAddr", "127.0.0.1:%d" % port,
                            "--monitoringAddr", "127.0.0.1:0"], capture_output=True, text=True,
                           timeout=10)
        assert r.returncode == 1
        assert "cannot listen for xDS on 127.0.0.1:%d: Address already in use" % port in r.stderr
    finally:
        s.close()


def start_pilot_with_mesh(pilot_exe, dirs, mesh):
    """weft-pilot on the book's files and a pods folder, with --meshConfig mesh -> proc."""
    cfg, pods = dirs
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--config-dir", pods,
                                 "--meshConfig", mesh, "--grpcAddr", "127.0.0.1:0",
                                 "--monitoringAddr", "127.0.0.1:0", "--debounce-after-ms", "50"],
                                count=2)
    proc.mon = addrs[1][1]
    return proc


def pod_hcms(mon, pods):
    """Writes the catalog-v1 Pod and returns the typed_config of every HTTP connection
    manager in its listeners, from pilot's /debug/config_dump."""
    (pods / "catalog-v1-abc.yaml").write_text(POD % "127.10.0.5")

    def dump():
        s, b = get(mon, "/debug/config_dump?proxyID=catalog-v1-abc.default")
        d = json.loads(b) if s == 200 else None
        lds = [c for c in d["configs"] if c["@type"].endswith("ListenersConfigDump")] if d else []
        return lds[0] if lds and lds[0].get("dynamic_listeners") else None
    lds = poll(dump)
    hcms = [f["typed_config"] for l in lds["dynamic_listeners"]
            for fc in l["active_state"]["listener"].get("filter_chains", [])
            for f in fc.get("filters", [])
            if f.get("name") == "envoy.filters.network.http_connection_manager"]
    assert hcms
    return hcms


@pytest.mark.parametrize("fmt,default", [("JSON", True), ('{"code":"%RESPONSE_CODE%"}', False)])
def test_b022_unparsable_json_log_format_falls_back(pilot_exe, dirs, tmp_path, fmt, default):
    """Operator report B022, the control plane's part: accessLogFormat "JSON" with
    accessLogEncoding JSON is not a JSON template: one error in pilot's log, Istio's default
    JSON map in every HCM, and pilot keeps pushing (a later change logs nothing again). A
    custom JSON object is used as it is, without an error."""
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text("accessLogFile: /dev/stdout\naccessLogEncoding: JSON\n"
                    "accessLogFormat: '%s'\n" % fmt)
    proc = start_pilot_with_mesh(pilot_exe, dirs, mesh)
    try:
        hcms = pod_hcms(proc.mon, dirs[1])
        (dirs[1] / "catalog-v1-abc.yaml").write_text(POD % "127.10.0.6")  # another rebuild
        poll(lambda: get_json(proc.mon, "/debug/push_status")["changed"]
             == ["Pod/default/catalog-v1-abc"])
        for h in hcms:
            jf = h["access_log"][0]["typed_config"]["log_format"]["json_format"]
            assert ("response_code_details" in jf) == default, jf
            if not default:
                assert jf == {"code": "%RESPONSE_CODE%"}
        msg = "error parsing provided json log format, default log format will be used"
        assert proc.stderr_text().count(msg) == (1 if default else 0), proc.stderr_text()
    finally:
        rc = stop_process(proc)
    assert rc == 0, proc.stderr_text()


def test_configmap_mesh_config_is_read(pilot_exe, dirs):
    """--meshConfig given the istio ConfigMap (examples/catalog/mesh.yaml, the file weftctl up
    takes too): pilot reads its data.mesh, as istiod reads the ConfigMap's mesh key, so every
    HCM carries the JSON access log to /dev/stdout. It was silently ignored."""
    proc = start_pilot_with_mesh(pilot_exe, dirs,
                                 os.path.join(ROOT, "examples", "catalog", "mesh.yaml"))
    try:
        for h in pod_hcms(proc.mon, dirs[1]):
            log = h["access_log"][0]["typed_config"]
            assert log["path"] == "/dev/stdout", log
            assert "json_format" in log["log_format"], log
        assert "config error" not in proc.stderr_text(), proc.stderr_text()
    finally:
        rc = stop_process(proc)
    assert rc == 0, proc.stderr_text()


@pytest.mark.parametrize("text,where,why", [
    ("accessLogFile: /dev/stdout\nacessLogEncoding: JSON\n", ":2:1:",
     "acessLogEncoding: unknown field"),
    ("apiVersion: apps/v1\nkind: Deployment\n", ":2:7:", "kind Deployment: want the MeshConfig"),
    ("defaultConfig:\n  proxyStatsMatcher:\n    inclusionPrefixes: [5]\n", ":3:25:",
     "defaultConfig.proxyStatsMatcher.inclusionPrefixes[0]: want a string"),
])
def test_mesh_config_refused_names_file_line(pilot_exe, dirs, tmp_path, text, where, why):
    """A MeshConfig protobuf JSON refuses (an unknown top-level field, another kind of
    resource, a number in a list of strings) is refused at start, naming file:line:col and the
    field, never ignored."""
    cfg, pods = dirs
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(text)
    r = subprocess.run([pilot_exe, "--config-dir", cfg, "--meshConfig", mesh, "--grpcAddr",
                        "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert str(mesh) + where + " MeshConfig: " + why in r.stderr, r.stderr
