"""Operator report B030 (../shared/cases/operator-reports.md): a Gateway HTTPS server whose
credentialName Secret was created in the wrong namespace, on a meshfix mesh with the ingress
gateway workload in namespace `edge` (the report's layout). $GWS_PORT is the gateway pod's 8443.

- `admin.example.internal` serves HTTPS (its Secret in `edge`); the `https-shop` server is then
  added while that listener is serving, its Secret `shop-cert` existing only in `shop`. During
  the listener update (Envoy's 15 s SDS initial-fetch warming, the default kept here) and after
  it: HTTPS for shop.example.internal never completes a handshake and never presents a
  certificate, admin.example.internal keeps answering 200 and port 80 is unaffected.
- `weftctl proxy-config secret`: kubernetes://shop-cert WARMING, kubernetes://admin-cert ACTIVE.
- weft-pilot keeps Istio's "failed to fetch key and certificate" line and adds ONE warning (per
  change, not per push) naming Gateway edge/public-gw, server https-shop, secret shop-cert and
  namespace edge; /debug/config_errors lists it (IST0101, level warning).
- `weftctl analyze -n edge`: istioctl's IST0101 line, exit 79; `weftctl describe pod` says
  where the Secret was looked for (stderr).
- the fix, shop-cert created in `edge`: within one push HTTPS for shop.example.internal answers
  200 with that certificate (SAN shop.example.internal), the secret turns ACTIVE, the gateway
  process is the same one.

Runs inside its own network namespace like every test_mesh_* (see the common brief).
"""
import base64
import json
import os
import re
import subprocess
import time

from conftest import run_weftctl
from meshfix import mesh, wait_for  # noqa: F401 (fixture)

GWS_PORT = 8443

NAMESPACES = """\
apiVersion: v1
kind: Namespace
metadata: {name: edge}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Service
metadata: {name: catalog, namespace: shop}
spec:
  selector: {app: catalog}
  ports: [{name: http, port: 80, targetPort: 3000}]
---
apiVersion: v1
kind: Service
metadata: {name: ingress, namespace: edge, labels: {istio: ingressgateway}}
spec:
  selector: {istio: ingressgateway}
  ports:
  - {name: http2, port: 80, targetPort: 8080}
  - {name: https, port: 443, targetPort: 8443}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog, namespace: edge}
spec:
  hosts: [shop.example.internal, admin.example.internal]
  gateways: [public-gw]
  http:
  - route: [{destination: {host: catalog.shop.svc.cluster.local}}]
"""

GATEWAY_HEAD = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public-gw, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["shop.example.internal"]
  - port: {number: 443, name: https-admin, protocol: HTTPS}
    hosts: ["admin.example.internal"]
    tls: {mode: SIMPLE, credentialName: admin-cert}     # Secret exists in edge
"""
SHOP_SERVER = """\
  - port: {number: 443, name: https-shop, protocol: HTTPS}
    hosts: ["shop.example.internal"]
    tls: {mode: SIMPLE, credentialName: shop-cert}      # Secret created in shop only
"""

WEFT_LINE = ('Gateway edge/public-gw: spec.servers[2].tls.credentialName: server https-shop '
             '(port 443): credentialName secret "shop-cert" not found in namespace edge')


def openssl(d, *args):
    subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True, timeout=30)


def make_certs(d):
    """ca.pem signs both server certificates (as the report has it)."""
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/O=weft-test/CN=ca")
    for name in ("admin", "shop"):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=DNS:%s.example.internal\n" % name)
        openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
        openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "90", "-extfile",
                name + ".ext")


def secret(d, name, ns, cert):
    def b64(ext):
        with open(os.path.join(d, cert + ext), "rb") as f:
            return base64.b64encode(f.read()).decode()
    return json.dumps({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                       "metadata": {"name": name, "namespace": ns},
                       "data": {"tls.crt": b64(".crt"), "tls.key": b64(".key")}})


def curl(gw, host, d):
    """The report's curl: (exit code, HTTP status, stderr)."""
    r = subprocess.run(["curl", "-sv", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                        "--cacert", os.path.join(d, "ca.pem"), "--resolve",
                        "%s:%d:%s" % (host, GWS_PORT, gw.ip),
                        "https://%s:%d/healthz" % (host, GWS_PORT)],
                       capture_output=True, text=True, timeout=20)
    return r.returncode, r.stdout, r.stderr


def s_client(gw, host):
    r = subprocess.run(["openssl", "s_client", "-connect", "%s:%d" % (gw.ip, GWS_PORT),
                        "-servername", host, "-showcerts"], input="", capture_output=True,
                       text=True, timeout=20)
    return r.stdout + r.stderr


def leaf_san(out):
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    if begin not in out:
        return ""
    pem = begin + out.split(begin)[1].split(end)[0] + end + "\n"
    return subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName"], input=pem,
                          capture_output=True, text=True, timeout=10).stdout


def assert_shop_refused(gw, d):
    rc, status, err = curl(gw, "shop.example.internal", d)
    assert rc != 0 and status == "000", (rc, status, err)
    assert "Server certificate" not in err, err
    out = s_client(gw, "shop.example.internal")
    assert "BEGIN CERTIFICATE" not in out and "no peer certificate available" in out, out


def pc_secret_rows(mesh, gw):
    r = run_weftctl("pc", "secret", gw.node_id, "--pilot", "127.0.0.1:%d" % mesh.mon_port,
                    timeout=20)
    assert r.returncode == 0, r.stdout + r.stderr
    return {ln.split()[0]: ln for ln in r.stdout.splitlines()[1:] if ln.strip()}, r.stdout


def weft_lines(mesh):
    return [ln for ln in mesh.pilot.stderr_text().splitlines() if WEFT_LINE in ln]


def start(mesh, d):
    make_certs(d)
    mesh.write_config("b030.yaml", NAMESPACES)
    mesh.write_config("gateway.yaml", GATEWAY_HEAD)
    mesh.write_config("admin-cert.json", secret(d, "admin-cert", "edge", "admin"))
    mesh.write_config("shop-cert-wrong-ns.json", secret(d, "shop-cert", "shop", "shop"))
    mesh.start_pilot(default_ns="edge")
    gw = mesh.add_pod("ingress-7c9d8-x2k4q", "edge", {"istio": "ingressgateway",
                                                      "app": "ingress"}, kind="router")
    pod = mesh.add_pod("catalog-6cf4b-abcde", "shop", {"app": "catalog", "version": "v1"},
                       app_port=3000)
    for p in (gw, pod):
        mesh.wait_ready(p)
    wait_for(lambda: curl(gw, "admin.example.internal", d)[1] == "200", timeout=20,
             what="https://admin.example.internal to be served")
    return gw


def test_b030_secret_in_wrong_namespace(mesh, tmp_path):
    d = str(tmp_path / "certs")
    os.makedirs(d)
    gw = start(mesh, d)
    pid = gw.proxy.pid
    assert weft_lines(mesh) == []  # nothing to say before the broken server exists

    # the broken server is added while admin.example.internal is serving: the listener update
    # warms for up to 15 s (the secret never comes); the old listener keeps serving meanwhile
    mesh.write_config("gateway.yaml", GATEWAY_HEAD + SHOP_SERVER)
    wait_for(lambda: len(weft_lines(mesh)) == 1, timeout=10, what="weft-pilot's warning")
    t0 = time.monotonic()
    rounds = 0
    while time.monotonic() - t0 < 17:  # the whole warming period and past it
        rc, status, err = curl(gw, "admin.example.internal", d)
        assert (rc, status) == (0, "200"), ("admin during the update", rc, status, err)
        st, _, _ = gw.request(8080, "/healthz", host="shop.example.internal")
        assert st == 200, ("port 80 during the update", st)
        assert_shop_refused(gw, d)
        rounds += 1
    assert rounds >= 5, rounds
    # after the warming: the new listener serves, shop's chain fails for want of its secret
    stats = gw.stats()
    assert any(k.endswith("downstream_context_secrets_not_ready") and v >= 1
               for k, v in stats.items()), {k: v for k, v in stats.items() if "ssl" in k}
    assert curl(gw, "admin.example.internal", d)[:2] == (0, "200")

    rows, out = pc_secret_rows(mesh, gw)
    assert "WARMING" in rows.get("kubernetes://shop-cert", ""), out
    assert "ACTIVE" in rows.get("kubernetes://admin-cert", ""), out
    print(out)

    logs = mesh.pilot.stderr_text()
    assert ("failed to fetch key and certificate for kubernetes://shop-cert: secret "
            "edge/shop-cert not found") in logs, logs
    line = weft_lines(mesh)
    assert len(line) == 1, line
    assert "a Secret shop-cert exists in namespace shop" in line[0], line
    assert "[IST0101]" in line[0], line
    # another change (not to the Gateway) pushes again: weft's line is not repeated
    mesh.write_config("other.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: other, "
                      "namespace: shop}\nspec:\n  selector: {app: other}\n  ports: "
                      "[{name: http, port: 80}]\n")
    wait_for(lambda: "other.shop" in json.dumps(mesh.pilot_get("/debug/registryz")[1]),
             timeout=10, what="the unrelated change to be loaded")
    assert len(weft_lines(mesh)) == 1, weft_lines(mesh)

    status, errs = mesh.pilot_get("/debug/config_errors")
    assert status == 200
    mine = [e for e in errs if e.get("code") == "IST0101"]
    assert len(mine) == 1, errs
    e = mine[0]
    assert e["level"] == "warning" and e["resource"] == "Gateway edge/public-gw", e
    assert e["field"] == "spec.servers[2].tls.credentialName", e
    assert (e["line"], e["column"]) == (14, 41) and e["file"].endswith("gateway.yaml"), e
    assert 'secret "shop-cert" not found in namespace edge' in e["message"], e

    r = run_weftctl("analyze", "-n", "edge", mesh.config_dir, mesh.pods_dir)
    assert r.returncode == 79, (r.returncode, r.stdout, r.stderr)
    # istioctl's line; analyzing files it names the origin after the resource
    ist = [ln for ln in r.stdout.splitlines() if "[IST0101]" in ln]
    assert len(ist) == 1, r.stdout  # admin-cert is in edge: not reported
    assert re.fullmatch(r'Error \[IST0101\] \(Gateway edge/public-gw( \S+gateway\.yaml:14)?\) '
                        r'Referenced credentialName not found: "shop-cert"', ist[0]), ist

    r = run_weftctl("describe", "pod", "ingress-7c9d8-x2k4q", "-n", "edge", "--pilot",
                    "127.0.0.1:%d" % mesh.mon_port)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Secrets are read from the gateway workload's namespace, edge" in r.stderr, r.stderr
    assert ('Gateway edge/public-gw: server https-shop (port 443): credentialName secret '
            '"shop-cert" not found in namespace edge') in r.stderr, r.stderr
    assert "weft:" not in r.stdout, r.stdout  # stdout stays istioctl's
    print(r.stderr)
    print("\n".join(weft_lines(mesh)))

    # the fix: the Secret in the gateway workload's namespace
    pushes = mesh.pilot_get("/debug/push_status")[1]["full_pushes"]
    mesh.write_config("shop-cert.json", secret(d, "shop-cert", "edge", "shop"))
    wait_for(lambda: curl(gw, "shop.example.internal", d)[:2] == (0, "200"), timeout=10,
             what="https://shop.example.internal to answer 200")
    assert mesh.pilot_get("/debug/push_status")[1]["full_pushes"] == pushes + 1
    assert "DNS:shop.example.internal" in leaf_san(s_client(gw, "shop.example.internal"))
    rows, out = pc_secret_rows(mesh, gw)
    assert "ACTIVE" in rows.get("kubernetes://shop-cert", ""), out
    assert gw.proxy.pid == pid and gw.proxy.poll() is None  # not restarted
    status, errs = mesh.pilot_get("/debug/config_errors")
    assert not [e for e in errs if e.get("code") == "IST0101"], errs
    assert curl(gw, "admin.example.internal", d)[:2] == (0, "200")
