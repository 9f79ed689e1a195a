"""`weftctl describe` against a live local mesh running the book's catalog example (issue 6
part 4): objects come from the files weft-pilot serves (/debug/configz), each pod's
/config_dump from its proxy's admin API found through pilot.

Before the DestinationRule: a catalog v2 pod shows its Service and, through the ingress
gateway, the VirtualService catalog-v1-v2 with istioctl's warning about routes to subsets no
DestinationRule defines. After it: the DestinationRule with the subset this pod matches
(version-v2) and the gateway VirtualService's route to that subset. Plus the offline form
(`-f` and `--config-dump`) and the errors users meet.
"""
import json
import os

from conftest import run_weftctl, shared_path
from meshfix import mesh, wait_for  # noqa: F401 (fixture)
from test_mesh_catalog import DR, catalog_mesh, gateway_get


def describe(mesh, *args):
    return run_weftctl("describe", *args, "--pilot", "127.0.0.1:%d" % mesh.mon_port, timeout=60)


def test_describe_pod_before_and_after_the_destinationrule(mesh):
    gw, pods = catalog_mesh(mesh)
    assert gateway_get(gw)[0] == 503
    mesh.wait_synced()
    v2 = pods[1]
    # pilot reads the pod objects of the state folder a debounce after they are written
    r = wait_for(lambda: (lambda r: r if r.returncode == 0 else None)(
        describe(mesh, "pod", v2.name, "-n", "istioinaction")), timeout=15,
        what="pilot to serve the catalog pods")
    out = r.stdout
    print(out)
    assert out.startswith("Pod: %s\n   Pod Revision: \n   Pod Ports: 3000 (app)\n" % v2.name)
    assert "\n--------------------\nService: catalog\n" in out
    assert "   Port: http 80/HTTP targets pod port 3000\n" in out
    assert "DestinationRule:" not in out
    assert "Effective PeerAuthentication:\n   Workload mTLS mode: PERMISSIVE\n" in out
    # the fixture's gateway Service has no nodePort: the pod IP and the port the gateway
    # listens on (targetPort 8080) are what a user on this host reaches
    assert "Exposed on Ingress Gateway http://%s:8080\n" % gw.ip in out
    assert ("VirtualService: catalog-v1-v2\n"
            "   WARNING: No destinations match pod subsets (checked 1 HTTP routes)\n"
            "      Warning: Route to subset version-v1 but NO DESTINATION RULE defining subsets!\n"
            "      Warning: Route to subset version-v2 but NO DESTINATION RULE defining subsets!\n"
            ) in out

    mesh.add_config(DR)
    wait_for(lambda: gateway_get(gw, "/healthz")[0] == 200, timeout=15,
             what="the DestinationRule to reach the gateway")
    mesh.wait_synced()

    def with_dr():
        r = describe(mesh, "pod", v2.name, "-n", "istioinaction")
        return r if r.returncode == 0 and "DestinationRule: catalog" in r.stdout else None
    r = wait_for(with_dr, timeout=15, what="describe to show the DestinationRule")
    out = r.stdout
    print(out)
    assert ('DestinationRule: catalog for "catalog.istioinaction.svc.cluster.local"\n'
            "   Matching subsets: version-v2\n"
            "      (Non-matching subsets version-v1)\n"
            "   No Traffic Policy\n") in out
    assert ("VirtualService: catalog-v1-v2\n"
            '   Route to host "catalog.istioinaction.svc.cluster.local" subset "version-v2" '
            "with weight 80%\n") in out
    assert "NO DESTINATION RULE" not in out

    # the v1 pod matches the other subset
    r = describe(mesh, "po", "%s.istioinaction" % pods[0].name)
    assert r.returncode == 0, r.stderr
    assert "   Matching subsets: version-v1\n      (Non-matching subsets version-v2)\n" in r.stdout

    # describe service: every catalog pod's labels count for subset matching
    r = describe(mesh, "svc", "catalog", "-n", "istioinaction")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Service: catalog\n   Port: http 80/HTTP targets pod port 3000\n")
    assert "   Matching subsets: version-v1,version-v2\n" in r.stdout
    assert "Pod:" not in r.stdout and "PeerAuthentication" not in r.stdout


def test_describe_errors_name_what_went_wrong(mesh, tmp_path):
    gw, pods = catalog_mesh(mesh)
    r = describe(mesh, "pod", "nope-123", "-n", "istioinaction")
    assert r.returncode == 1 and 'pods "nope-123" not found' in r.stderr
    r = describe(mesh, "service", "nope", "-n", "istioinaction")
    assert r.returncode == 1 and 'services "nope" not found' in r.stderr
    r = describe(mesh, "deployment", "catalog")
    assert r.returncode == 64 and 'unknown resource type "deployment"' in r.stderr
    r = run_weftctl("describe", "pod", "x", "--pilot", "127.0.0.1:1")
    assert r.returncode == 1 and "127.0.0.1:1" in r.stderr


def golden_describe_inputs():
    """(cluster state, proxy dump) of istioctl's describe golden case dr-traffic-policy."""
    golden = os.path.join(shared_path(), "corpus", "istioctl-golden")
    state = os.path.join(golden, "derived", "describe", "dr-traffic-policy", "cluster-state.json")
    dump = os.path.join(golden, "upstream", "istioctl", "pkg", "describe", "testdata", "describe",
                        "http_config.json")
    return state, dump


def test_describe_offline_from_files(tmp_path):
    """No mesh: objects from -f, the dump from --config-dump; a pod without a dump fails."""
    state, dump = golden_describe_inputs()
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    r = run_weftctl("x", "describe", "pod", "productpage-v1-1234567890", "-f", state,
                    "--config-dump", "productpage-v1-1234567890=%s" % dump,
                    "--config-dump", "ingress.default=%s" % empty)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Pod: productpage-v1-1234567890\n   Pod Revision: \n")
    assert "Service: productpage\nDestinationRule: productpage for \"productpage\"\n" in r.stdout
    assert "Effective PeerAuthentication:\n   Workload mTLS mode: PERMISSIVE\n" in r.stdout
    r = run_weftctl("describe", "pod", "productpage-v1-1234567890", "-f", state)
    assert r.returncode == 1
    assert "failed to execute command on sidecar: no config dump for pod" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run_weftctl("describe", "svc", "productpage", "-f", state,
                    "--config-dump", "productpage-v1-1234567890=%s" % bad)
    assert r.returncode == 1 and str(bad) in r.stderr
    json.loads(dump and open(dump).read())  # the fixture itself is fine

    # a pod as `weftctl up` writes it: an istio-proxy container, no container statuses; with
    # its dump (or pilot knowing its proxy) it is a ready sidecar, not "no container"
    with open(state) as f:
        objs = json.load(f)
    for o in objs["items"]:
        if o.get("kind") == "Pod":
            o["status"].pop("containerStatuses", None)
    local = tmp_path / "local-state.json"
    local.write_text(json.dumps(objs))
    r = run_weftctl("describe", "svc", "productpage", "-f", str(local),
                    "--config-dump", "productpage-v1-1234567890=%s" % dump,
                    "--config-dump", "ingress.default=%s" % empty)
    assert r.returncode == 0, r.stderr
    assert "no container" not in r.stdout and "has no Istio pods" not in r.stdout, r.stdout
    assert r.stdout.startswith("Service: productpage\nDestinationRule: productpage"), r.stdout
    # injected with no revision named (weft's local mesh writes the status without one):
    # the default revision, as Istio's injector would have written it
    for o in objs["items"]:
        if o.get("kind") == "Pod":
            o["metadata"].setdefault("annotations", {})["sidecar.istio.io/status"] = \
                '{"containers":["istio-proxy"]}'
    local.write_text(json.dumps(objs))
    r = run_weftctl("describe", "pod", "productpage-v1-1234567890", "-f", str(local),
                    "--config-dump", "productpage-v1-1234567890=%s" % dump,
                    "--config-dump", "ingress.default=%s" % empty)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Pod: productpage-v1-1234567890\n   Pod Revision: default\n")


def test_describe_pod_names_what_weft_does_not_implement(tmp_path):
    """describe pod lists (on stderr: stdout stays istioctl's) the fields weft ignores in the
    config that applies to the pod: its Service's mongo- port (plain TCP in weft), an AuthorizationPolicy under an API
    version Istio does not serve (an error: not enforced); not a policy for other workloads,
    nor its PeerAuthentication STRICT (enforced on the inbound chains), which describe shows as
    the effective mode."""
    state, dump = golden_describe_inputs()
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    with open(state) as f:
        objs = json.load(f)
    pod = [o for o in objs["items"] if o.get("kind") == "Pod" and
           o["metadata"]["name"] == "productpage-v1-1234567890"][0]
    ns = pod["metadata"].get("namespace", "default")
    app = pod["metadata"]["labels"]["app"]
    for o in objs["items"]:
        if o.get("kind") == "Service" and o["metadata"]["name"] == "productpage":
            o["spec"]["ports"].append({"name": "mongo-admin", "port": 9999})
    objs["items"] += [
        {"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
         "metadata": {"name": "strict", "namespace": ns},
         "spec": {"selector": {"matchLabels": {"app": app}}, "mtls": {"mode": "STRICT"}}},
        {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
         "metadata": {"name": "allow-get", "namespace": ns},
         "spec": {"selector": {"matchLabels": {"app": app}},
                  "rules": [{"to": [{"operation": {"methods": ["GET"]}}]}]}},
        {"apiVersion": "security.istio.io/v1", "kind": "RequestAuthentication",
         "metadata": {"name": "jwt", "namespace": ns},
         "spec": {"jwtRules": [{"issuer": "https://auth.example",
                                "jwks": '{"keys": []}'}]}},
        {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
         "metadata": {"name": "try-deny", "namespace": ns,
                      "annotations": {"istio.io/dry-run": "true"}},
         "spec": {"action": "DENY", "rules": [{"to": [{"operation": {"paths": ["/x"]}}]}]}},
        {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
         "metadata": {"name": "other", "namespace": ns},
         "spec": {"selector": {"matchLabels": {"app": "someone-else"}}}},
        {"apiVersion": "security.istio.io/v1beta2", "kind": "AuthorizationPolicy",
         "metadata": {"name": "badver", "namespace": ns}, "spec": {}}]
    f2 = tmp_path / "state.json"
    f2.write_text(json.dumps(objs))
    base = run_weftctl("x", "describe", "pod", "productpage-v1-1234567890", "-f", state,
                       "--config-dump", "productpage-v1-1234567890=%s" % dump,
                       "--config-dump", "ingress.default=%s" % empty)
    r = run_weftctl("x", "describe", "pod", "productpage-v1-1234567890", "-f", str(f2),
                    "--config-dump", "productpage-v1-1234567890=%s" % dump,
                    "--config-dump", "ingress.default=%s" % empty)
    assert r.returncode == 0, r.stderr
    # its tls modes ISTIO_MUTUAL and (port 8080) DISABLE are implemented: nothing to report
    # as not implemented, only weft's note that port 8080's DISABLE overrides auto mTLS
    assert [ln for ln in base.stderr.splitlines() if "DestinationRule default/productpage" in ln] \
        == ['weft: DestinationRule default/productpage sets tls mode DISABLE for "productpage" '
            "port 8080: it overrides auto mTLS, clients send plaintext, which a STRICT workload "
            "closes (503 UC)"], base.stderr
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("weft: ")]  # mTLS notes
    assert lines[0] == "Not implemented by weft in the config of this pod (accepted, no effect):"
    # the RBAC filters enforce it: nothing to report as not implemented
    assert not any("AuthorizationPolicy %s/allow-get" % ns in l for l in lines), r.stderr
    assert "PeerAuthentication" not in r.stderr, r.stderr
    assert any(l.startswith("   Warning [WFT0001] (Service %s/productpage" % ns) and
               "(mongo-admin) has no effect in weft: Istio's Mongo filter" in l for l in lines), r.stderr
    assert "AuthorizationPolicy %s/other" % ns not in r.stderr
    # a policy under an API version Istio does not serve, in the pod's namespace
    assert "Error [WFT0002] (AuthorizationPolicy %s/badver" % ns in r.stderr, r.stderr
    assert "Workload mTLS mode: STRICT" in r.stdout
    # the policies that apply, as weft-pilot selects them, with action, rules and mode
    weft = [ln for ln in r.stderr.splitlines() if ln.startswith("weft: AuthorizationPolicy")]
    assert weft == [
        "weft: AuthorizationPolicy %s/allow-get: ALLOW, 1 rule, enforced" % ns,
        "weft: AuthorizationPolicy %s/try-deny: DENY, 1 rule, dry run (istio.io/dry-run: only "
        "counted in rbac.istio_dry_run_deny_.shadow_allowed/shadow_denied, never denies)" % ns,
    ], weft
    assert ("weft: an ALLOW policy applies: a request no ALLOW rule matches is denied (403, "
            "rbac_access_denied_matched_policy[none])") in r.stderr
    assert ("weft: RequestAuthentication %s/jwt: issuers https://auth.example (a request with "
            "an invalid token gets 401; one without a token passes unless an "
            "AuthorizationPolicy requires requestPrincipals)" % ns) in r.stderr, r.stderr
    assert "weft: AuthorizationPolicy" not in base.stderr


def test_version_against_pilot_and_completion(mesh):
    """`weftctl version` (istioctl's layout) and `weftctl completion bash` (issue 6 part 6)."""
    gw, pods = catalog_mesh(mesh)
    mesh.wait_synced()
    r = run_weftctl("version", "--pilot", "127.0.0.1:%d" % mesh.mon_port)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "client version: 0.1.0"
    assert lines[1] == "control plane version: 0.1.0"  # weft-pilot's istio_build gauge
    assert lines[2] == "data plane version: weft (4 proxies)"
    r = run_weftctl("version", "--remote=false")
    assert r.returncode == 0 and r.stdout == "0.1.0\n"
    r = run_weftctl("version", "-o", "json", "--pilot", "127.0.0.1:%d" % mesh.mon_port)
    d = json.loads(r.stdout)
    assert d["clientVersion"]["version"] == "0.1.0"
    assert len(d["dataPlaneVersion"]) == 4 and d["meshVersion"][0]["Component"] == "pilot"
    r = run_weftctl("version", "--pilot", "127.0.0.1:1")
    assert r.returncode == 0 and r.stdout == "0.1.0\n" and "127.0.0.1:1" in r.stderr
    r = run_weftctl("completion", "bash")
    assert r.returncode == 0 and "complete -o default -F _weftctl weftctl" in r.stdout
    for word in ("proxy-config", "describe", "--summary", "short", "--config-dump"):
        assert word in r.stdout
    assert run_weftctl("completion", "fish").returncode == 64
