"""AuthorizationPolicy end to end in the local mesh (issue 18; operator reports B036 and B038;
reference security.md §6): weft-pilot translates the policies into the inbound RBAC filter of
the selected workload's sidecar, the sidecar enforces them on requests that arrive over mutual
TLS from other sidecars, and weftctl explains the denials.

Workloads in namespace shop: catalog (weft-app --catalog, service account catalog, Service
catalog port 80 -> 8080), frontend (service account frontend) and reports (service account
reports). Clients call catalog through their own sidecar's outbound listener (auto mTLS), so the
caller's identity is its certificate's SPIFFE ID.

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
import json
import socket

import pytest

from conftest import run_weftctl
from meshfix import ACCESS_LOG_MESH, mesh, wait_for  # noqa: F401

assert mesh

CATALOG_SVC = """apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: shop}
spec:
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 8080}]
"""

READERS = """apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: catalog-readers
  namespace: shop
%s
spec:
  selector: {matchLabels: {app: catalog}}
  action: ALLOW
  rules:
  - from: [{source: {principals: ["cluster.local/ns/shop/sa/frontend"]}}]
    to: [{operation: {methods: ["GET"], paths: ["/items*"]}}]
"""

NO_ADMIN = """apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: no-admin, namespace: shop}
spec:
  selector: {matchLabels: {app: catalog}}
  action: DENY
  rules: [{to: [{operation: {paths: ["/admin/*"]}}]}]
"""

HOST = "catalog.shop.svc.cluster.local"


def raw_get(pod, path, method="GET", body=None):
    """(status, body) of a request written as is (path bytes unchanged) from pod's application
    through its sidecar's outbound listener to catalog; ("closed", b"") when no answer."""
    head = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n" % (method, path, HOST)
    if body is not None:
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    data = head.encode("latin-1") + b"\r\n" + (body or b"")
    with socket.create_connection((pod.localhost, 80), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    if not out:
        return "closed", b""
    head, _, rest = out.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), rest


def start(mesh, mesh_config=ACCESS_LOG_MESH):  # noqa: F811
    mesh.write_config("catalog-svc.yaml", CATALOG_SVC)
    mesh.start_pilot(default_ns="shop", mesh_config=mesh_config)
    catalog = mesh.add_pod("catalog-1", "shop", {"app": "catalog", "version": "v1"},
                           app_port=8080, app_args=["--catalog"], sa="catalog")
    frontend = mesh.add_pod("frontend-1", "shop", {"app": "frontend"}, sa="frontend")
    reports = mesh.add_pod("reports-1", "shop", {"app": "reports"}, sa="reports")
    for p in (catalog, frontend, reports):
        mesh.wait_ready(p)
    mesh.wait_synced()
    wait_for(lambda: raw_get(frontend, "/items")[0] == 200, what="frontend -> catalog")
    return catalog, frontend, reports


def rbac_filters(pod):
    """The RBAC filters (typed_config) of the pod's inbound listener for port 8080."""
    status, _, body = pod.admin("/config_dump")
    assert status == 200
    out = []
    for c in json.loads(body)["configs"]:
        for dl in c.get("dynamic_listeners", []):
            lst = (dl.get("active_state") or {}).get("listener") or {}
            if not lst.get("name", "").endswith("_8080"):
                continue
            for fc in lst.get("filter_chains", []):
                for f in fc.get("filters", []):
                    for hf in f.get("typed_config", {}).get("http_filters", []):
                        if hf.get("name") == "envoy.filters.http.rbac":
                            out.append(hf["typed_config"])
    return out


def rbac_count(pod):
    return sum(v for k, v in pod.stats().items() if ".rbac." in k)


def settle(catalog, *clients):
    """Waits until each client's requests reach the filters of catalog's new listener: the
    connections a client's sidecar opened before a listener update are drained (as Envoy
    drains them), and the request that finds one still goes through the old filter chain."""
    for c in clients:
        def counted():
            n = rbac_count(catalog)
            raw_get(c, "/status/200")
            return wait_for(lambda: rbac_count(catalog) > n or None, timeout=2,
                            what="the RBAC counters")
        wait_for(lambda: _try(counted), timeout=20, what="%s on the new listener" % c.name)


def _try(f):
    try:
        return f()
    except AssertionError:
        return None


def app_count(pod):
    return json.loads(pod.app_request("/count")[2])["requests"]


def four_calls(frontend, reports):
    return (raw_get(frontend, "/items")[0],
            raw_get(frontend, "/items", "POST", b"{}")[0],
            raw_get(frontend, "/status/200")[0],
            raw_get(reports, "/items")[0])


def test_one_allow_policy_denies_everything_else(mesh):  # noqa: F811
    """B036: an ALLOW policy for frontend's GET /items* denies frontend's other calls and every
    call of reports with 403 RBAC: access denied, [none] in catalog's inbound log; the app
    sees none of them; catalog stays ready; weftctl names the policy."""
    catalog, frontend, reports = start(mesh)
    assert four_calls(frontend, reports) == (200, 201, 200, 200)  # no policy: all pass
    mesh.write_config("readers.yaml", READERS % "")
    wait_for(lambda: rbac_filters(catalog), what="the RBAC filter on catalog")
    mesh.wait_synced()
    settle(catalog, frontend, reports)
    catalog.app_request("/count/reset")
    assert four_calls(frontend, reports) == (200, 403, 403, 403)
    assert raw_get(reports, "/items")[1] == b"RBAC: access denied"
    assert app_count(catalog) == 1
    assert catalog.ready_status() == 200
    denied = wait_for(lambda: [e for e in catalog.access_log() if e.get("response_code") == 403]
                      if len([e for e in catalog.access_log()
                              if e.get("response_code") == 403]) >= 4 else None,
                      what="the 403s in catalog's log")
    assert {e["response_code_details"] for e in denied} == {
        "rbac_access_denied_matched_policy[none]"}
    stats = catalog.stats()
    assert any(k.endswith(".rbac.denied") and v >= 4 for k, v in stats.items()), stats
    assert any(k.endswith(".rbac.allowed") and v >= 1 for k, v in stats.items())

    # the three commands of the diagnosis
    r = run_weftctl("log", "explain", catalog.log_path, "--pod", "catalog-1", "-n", "shop",
                    "--pilot", "127.0.0.1:%d" % mesh.mon_port)
    assert r.returncode == 0, r.stderr
    assert "ALLOW policies apply to this workload" in r.stdout
    assert "ALLOW policies on catalog-1.shop: shop/catalog-readers (1 rule)" in r.stdout
    r = run_weftctl("x", "authz", "check", "catalog-1", "-n", "shop",
                    "--pilot", "127.0.0.1:%d" % mesh.mon_port)
    assert r.returncode == 0, r.stderr
    assert "ALLOW    catalog-readers.shop" in r.stdout, r.stdout


def test_dry_run_only_counts(mesh):  # noqa: F811
    """B036, dry run: the annotated policy becomes shadow rules; nothing is denied and the
    shadow counters under istio_dry_run_allow_ count the would-be results."""
    catalog, frontend, reports = start(mesh)
    mesh.write_config("readers.yaml", READERS % "  annotations: {istio.io/dry-run: \"true\"}")
    wait_for(lambda: rbac_filters(catalog), what="the shadow RBAC filter")
    mesh.wait_synced()
    settle(catalog, frontend, reports)
    before = {k: v for k, v in catalog.stats().items() if ".shadow_" in k}
    f = rbac_filters(catalog)
    assert all("rules" not in x for x in f) and any("shadow_rules" in x for x in f), f
    assert four_calls(frontend, reports) == (200, 201, 200, 200)
    stats = catalog.stats()
    allowed = [v - before.get(k, 0) for k, v in stats.items()
               if k.endswith("rbac.istio_dry_run_allow_.shadow_allowed")]
    denied = [v - before.get(k, 0) for k, v in stats.items()
              if k.endswith("rbac.istio_dry_run_allow_.shadow_denied")]
    assert sum(allowed) == 1 and sum(denied) == 3, stats


# B038: path sent -> 403 or the status the app answers, per pathNormalization mode
PATHS = [
    ("/admin/users", 403, 403, 403),
    ("/public/../admin/users", 403, 403, 403),
    ("/%61dmin/users", 403, 403, 403),
    ("/admin\\users", 403, 403, 403),
    ("//admin/users", 404, 403, 403),
    ("/admin%2Fusers", 404, 404, 403),
    ("/ADMIN/users", 404, 404, 404),
    ("/admin/users?page=2", 403, 403, 403),
    ("/public/../items", 200, 200, 200),
    ("/items%00", 400, 400, 400),
]
MODES = ["BASE", "MERGE_SLASHES", "DECODE_AND_MERGE_SLASHES"]


@pytest.mark.parametrize("mode", MODES)
def test_deny_path_and_normalization(mesh, mode):  # noqa: F811
    """B038: a DENY on /admin/* sees the path as normalized under the mesh's mode."""
    catalog, frontend, _ = start(
        mesh, ACCESS_LOG_MESH + "pathNormalization: {normalization: %s}\n" % mode)
    mesh.write_config("no-admin.yaml", NO_ADMIN)
    wait_for(lambda: rbac_filters(catalog), what="the DENY filter")
    mesh.wait_synced()
    settle(catalog, frontend)
    col = 1 + MODES.index(mode)
    got = {p[0]: raw_get(frontend, p[0])[0] for p in PATHS}
    assert got == {p[0]: p[col] for p in PATHS}, mode
    assert raw_get(frontend, "/admin/users")[1] == b"RBAC: access denied"
    e = catalog.wait_log(lambda e: e.get("response_code") == 403)
    assert e["response_code_details"] == (
        "rbac_access_denied_matched_policy[ns[shop]-policy[no-admin]-rule[0]]")
    r = run_weftctl("log", "explain", catalog.log_path)
    assert "AuthorizationPolicy no-admin in namespace shop, rule 0" in r.stdout, r.stdout
