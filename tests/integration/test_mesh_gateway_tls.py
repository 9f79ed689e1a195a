"""Gateway TLS (issue 17 item 5; reference security.md §2.1, §2.4, §2.5, §5): weft-pilot serves
the credentialName Secrets of the gateway's namespace over ADS, the ingress gateway terminates
HTTPS for Gateway servers with tls.mode SIMPLE and MUTUAL, one filter chain per server chosen by
SNI, and routes to the catalog app. Real clients: curl --cacert / --cert, openssl s_client
(chain, SAN, ALPN). Certificates are made with openssl in the test's tmp dir.

- SIMPLE: curl with the CA answers 200 from the catalog pod; s_client shows the server's SAN
  and ALPN http/1.1 when asked for it, h2 when a client asks for h2 (Istio's h2, http/1.1);
- MUTUAL: a client without a certificate is refused, one with --cert/--key gets 200;
- a missing Secret: pilot logs Istio's line and counts pilot_sds_certificate_errors_total, the
  proxy's listener serves after the initial fetch timeout (shortened with
  WEFT_PROXY_SDS_INITIAL_FETCH_TIMEOUT_MS), that chain's handshake fails
  (downstream_context_secrets_not_ready) and `weftctl pc secret` shows it WARMING;
- a Secret whose certificate changes is pushed and served without restarting anything;
- testssl.sh against the SIMPLE and MUTUAL servers: no finding of severity HIGH or CRITICAL;
- ISTIO_MUTUAL (the gateway's own mesh identity, a mesh client certificate required) and
  OPTIONAL_MUTUAL (a certificate verified when presented, none accepted).

Runs inside its own network namespace like every test_mesh_* (see the common brief).
"""
import base64
import concurrent.futures
import json
import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest

from meshfix import BOOK, GATEWAY_SERVICE, _bin, http_request, mesh, wait_for  # noqa: F401
from test_pilot_ca import create_certificate, make_csr

WEFTCTL = _bin("WEFTCTL", "weftctl")

HTTPS_SERVICE = GATEWAY_SERVICE + "  - {name: https, port: 443, targetPort: 8443}\n"

GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: catalog-gateway, namespace: istioinaction}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [catalog.istioinaction.io]
    tls: {httpsRedirect: true}
  - port: {number: 443, name: https-catalog, protocol: HTTPS}
    hosts: [catalog.istioinaction.io]
    tls: {mode: SIMPLE, credentialName: catalog-credential}
  - port: {number: 443, name: https-mtls, protocol: HTTPS}
    hosts: [mtls.istioinaction.io]
    tls: {mode: MUTUAL, credentialName: mtls-credential}
  - port: {number: 443, name: https-missing, protocol: HTTPS}
    hosts: [missing.istioinaction.io]
    tls: {mode: SIMPLE, credentialName: missing-credential}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog-vs, namespace: istioinaction}
spec:
  hosts: [catalog.istioinaction.io, mtls.istioinaction.io, missing.istioinaction.io]
  gateways: [catalog-gateway]
  http:
  - route: [{destination: {host: catalog}}]
"""


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True,
                   timeout=30)


def make_certs(d):
    """A CA, server certificates for the three hosts and a client certificate it signs."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/O=weft-test/CN=test-ca",
            cwd=d)
    for name, ext in (("catalog", "subjectAltName=DNS:catalog.istioinaction.io"),
                      ("mtls", "subjectAltName=DNS:mtls.istioinaction.io"),
                      ("catalog2", "subjectAltName=DNS:catalog.istioinaction.io"),
                      ("client", "subjectAltName=DNS:client.istioinaction.io")):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj",
                "/O=weft-test/CN=" + name, cwd=d)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext",
                cwd=d)


def make_rogue_client(d):
    """A client certificate the gateway's CA did not sign."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "rogue.key", "-out", "rogue.crt", "-days", "2", "-subj",
            "/O=elsewhere/CN=rogue", cwd=d)


def read(d, name):
    with open(os.path.join(d, name), "rb") as f:
        return f.read()


def tls_secret(d, name, cert, with_ca=False):
    data = {"tls.crt": base64.b64encode(read(d, cert + ".crt")).decode(),
            "tls.key": base64.b64encode(read(d, cert + ".key")).decode()}
    if with_ca:
        data["ca.crt"] = base64.b64encode(read(d, "ca.crt")).decode()
    return json.dumps({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                       "metadata": {"name": name, "namespace": "istio-system"}, "data": data})


def curl(gw, host, d, *extra):
    """curl https://host:8443/healthz resolved to the gateway pod: (exit code, status, stderr)."""
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                        "--cacert", os.path.join(d, "ca.crt"), "--resolve",
                        "%s:8443:%s" % (host, gw.ip)] + list(extra)
                       + ["https://%s:8443/healthz" % host],
                       capture_output=True, text=True, timeout=20)
    return r.returncode, r.stdout, r.stderr


def s_client(gw, host, d):
    r = subprocess.run(["openssl", "s_client", "-connect", "%s:8443" % gw.ip, "-servername", host,
                        "-alpn", "http/1.1", "-CAfile", os.path.join(d, "ca.crt"), "-showcerts"],
                       input="", capture_output=True, text=True, timeout=20)
    return r.stdout + r.stderr


@pytest.fixture
def tls_mesh(mesh, tmp_path):
    return start_tls_mesh(mesh, tmp_path)


def start_tls_mesh(mesh, tmp_path, delta=False):
    d = str(tmp_path / "certs")
    os.makedirs(d)
    make_certs(d)
    mesh.add_config(os.path.join(BOOK, "services/catalog/kubernetes/catalog.yaml"))
    mesh.write_config("gateway-service.yaml", HTTPS_SERVICE)
    mesh.write_config("gateway.yaml", GATEWAY)
    mesh.write_config("catalog-credential.json", tls_secret(d, "catalog-credential", "catalog"))
    mesh.write_config("mtls-credential.json", tls_secret(d, "mtls-credential", "mtls",
                                                         with_ca=True))
    mesh.start_pilot(default_ns="istioinaction")
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router",
                      env={"WEFT_PROXY_SDS_INITIAL_FETCH_TIMEOUT_MS": "1500"}, delta=delta)
    pod = mesh.add_pod("catalog-6cf4b97d-abcde", "istioinaction",
                       {"app": "catalog", "version": "v1"}, app_port=3000)
    try:
        for p in (gw, pod):
            mesh.wait_ready(p)
    except AssertionError:
        with open("/tmp/gwtls-gw.log", "w") as f:
            f.write(gw.proxy.stderr_text())
        raise
    wait_for(lambda: curl(gw, "catalog.istioinaction.io", d)[1] == "200", timeout=20,
             what="the gateway to serve https://catalog.istioinaction.io")
    return mesh, gw, d


def test_simple_and_mutual_servers(tls_mesh):
    mesh, gw, d = tls_mesh
    rc, status, err = curl(gw, "catalog.istioinaction.io", d)
    assert (rc, status) == (0, "200"), err
    out = s_client(gw, "catalog.istioinaction.io", d)
    assert "ALPN protocol: http/1.1" in out, out
    assert "Verify return code: 0 (ok)" in out, out
    assert "CN = catalog" in out or "CN=catalog" in out, out
    # the gateway offers h2 too (Istio's ALPNHttp): a client asking for h2 gets it
    r = subprocess.run(["openssl", "s_client", "-connect", "%s:8443" % gw.ip, "-servername",
                        "catalog.istioinaction.io", "-alpn", "h2"], input="",
                       capture_output=True, text=True, timeout=20)
    assert "ALPN protocol: h2" in r.stdout
    # MUTUAL: refused without a client certificate, served with one
    rc, status, err = curl(gw, "mtls.istioinaction.io", d)
    assert rc != 0 or status != "200", (rc, status, err)
    rc, status, err = curl(gw, "mtls.istioinaction.io", d, "--cert",
                           os.path.join(d, "client.crt"), "--key", os.path.join(d, "client.key"))
    assert (rc, status) == (0, "200"), err
    make_rogue_client(d)  # signed by another CA: refused
    rc, status, err = curl(gw, "mtls.istioinaction.io", d, "--cert",
                           os.path.join(d, "rogue.crt"), "--key", os.path.join(d, "rogue.key"))
    assert rc != 0 or status != "200", (rc, status, err)
    # the SAN the server presents for mtls.istioinaction.io is its own
    assert "DNS:mtls.istioinaction.io" in leaf_san(s_client(gw, "mtls.istioinaction.io", d))
    # Envoy's /certs lists the credentials per TLS context, and the 2-day test certificates
    # are what expires first: server.days_until_first_cert_expiring
    status, _, body = gw.admin("/certs")
    assert status == 200, body
    sans = [s for e in json.loads(body)["certificates"] for c in e["cert_chain"]
            for s in c["subject_alt_names"]]
    assert {"dns": "catalog.istioinaction.io"} in sans and \
        {"dns": "mtls.istioinaction.io"} in sans, body
    assert gw.stats()["server.days_until_first_cert_expiring"] <= 2


def leaf_san(s_client_out):
    """The subjectAltName of the first certificate s_client -showcerts printed."""
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    pem = begin + s_client_out.split(begin)[1].split(end)[0] + end + "\n"
    return subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName"], input=pem,
                          capture_output=True, text=True, timeout=10).stdout


def test_https_redirect(tls_mesh):
    """httpsRedirect: plain HTTP on the server's port is answered 301 to https (Envoy's
    require_tls ALL: https://<Host><path>)."""
    mesh, gw, d = tls_mesh
    status, headers, _ = gw.request(8080, "/healthz?x=1", host="catalog.istioinaction.io")
    assert status == 301, (status, headers)
    assert headers.get("location") == "https://catalog.istioinaction.io/healthz?x=1", headers


def test_delta_xds_gateway_serves_https(mesh, tmp_path):
    """The same over DeltaAggregatedResources (Istio's default): Secrets subscribed by name."""
    mesh, gw, d = start_tls_mesh(mesh, tmp_path, delta=True)
    rc, status, err = curl(gw, "mtls.istioinaction.io", d, "--cert",
                           os.path.join(d, "client.crt"), "--key", os.path.join(d, "client.key"))
    assert (rc, status) == (0, "200"), err
    rc, status, err = curl(gw, "missing.istioinaction.io", d)
    assert rc == 35, (rc, status, err)


def test_missing_secret_fails_its_chain_and_shows_warming(tls_mesh):
    mesh, gw, d = tls_mesh
    rc, status, err = curl(gw, "missing.istioinaction.io", d)
    assert rc == 35 and status == "000", (rc, status, err)  # handshake aborted
    stats = gw.stats()
    assert stats.get("listener.%s_8443.server_ssl_socket_factory."
                     "downstream_context_secrets_not_ready" % gw.ip, 0) >= 1 or any(
        k.endswith("downstream_context_secrets_not_ready") and v >= 1 for k, v in stats.items()), \
        {k: v for k, v in stats.items() if "ssl" in k}
    logs = mesh.pilot.stderr_text()
    assert ("failed to fetch key and certificate for kubernetes://missing-credential: secret "
            "istio-system/missing-credential not found") in logs
    status, _, body = mesh_metrics(mesh)
    assert status == 200
    line = [x for x in body.decode().splitlines()
            if x.startswith("pilot_sds_certificate_errors_total ")]
    assert line and int(line[0].split()[1]) >= 1, line
    # weftctl pc secret on the live proxy: the missing one WARMING, the others ACTIVE
    r = subprocess.run([WEFTCTL, "pc", "secret", gw.node_id, "--pilot",
                        "127.0.0.1:%d" % mesh.mon_port], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {ln.split()[0]: ln for ln in r.stdout.splitlines()[1:] if ln.strip()}
    assert "WARMING" in rows.get("kubernetes://missing-credential", ""), r.stdout
    assert "ACTIVE" in rows.get("kubernetes://catalog-credential", ""), r.stdout
    assert "ACTIVE" in rows.get("kubernetes://mtls-credential-cacert", ""), r.stdout
    print(r.stdout)


def mesh_metrics(mesh):
    return http_request("127.0.0.1", mesh.mon_port, "/metrics")


def test_secret_change_is_pushed(tls_mesh):
    mesh, gw, d = tls_mesh
    before = s_client(gw, "catalog.istioinaction.io", d)
    mesh.write_config("catalog-credential.json", tls_secret(d, "catalog-credential", "catalog2"))

    def serial():
        out = s_client(gw, "catalog.istioinaction.io", d)
        return out.split("-----BEGIN CERTIFICATE-----")[1] if "BEGIN" in out else None

    first = before.split("-----BEGIN CERTIFICATE-----")[1]
    wait_for(lambda: serial() not in (None, first), timeout=15,
             what="the new certificate to be served")
    rc, status, err = curl(gw, "catalog.istioinaction.io", d)
    assert (rc, status) == (0, "200"), err


UP_GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: catalog-gateway, namespace: istioinaction}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [catalog.istioinaction.io]
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [catalog.istioinaction.io]
    tls: {mode: SIMPLE, credentialName: catalog-credential}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog-vs, namespace: istioinaction}
spec:
  hosts: [catalog.istioinaction.io]
  gateways: [catalog-gateway]
  http:
  - route: [{destination: {host: catalog}}]
"""


def test_weftctl_up_serves_https_on_node_port_30005(tmp_path):
    """`weftctl up`: the gateway's 443 (8443 in the pod) on 127.0.0.1:30005, as the book's kind
    cluster maps it."""
    import shutil
    from test_weftctl_up import (LOCAL_IMAGES, NAMESPACE, kill_leftovers, need_fixed_ports,
                                 supervisor_log, weftctl)
    need_fixed_ports()
    d = tmp_path / "catalog"
    d.mkdir()
    certs = str(tmp_path / "certs")
    os.makedirs(certs)
    make_certs(certs)
    shutil.copy(os.path.join(BOOK, "services", "catalog", "kubernetes", "catalog.yaml"), d)
    (d / "namespace.yaml").write_text(NAMESPACE)
    (d / "weft-local.yaml").write_text(LOCAL_IMAGES)
    (d / "gateway.yaml").write_text(UP_GATEWAY)
    (d / "secret.json").write_text(tls_secret(certs, "catalog-credential", "catalog"))
    state = str(tmp_path / "state")
    rt = tmp_path / "run"
    rt.mkdir()
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", runtime_dir=rt)
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        assert "https://127.0.0.1:30005" in up.stdout, up.stdout

        def get():
            r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                "--max-time", "5", "--cacert", os.path.join(certs, "ca.crt"),
                                "--resolve", "catalog.istioinaction.io:30005:127.0.0.1",
                                "https://catalog.istioinaction.io:30005/healthz"],
                               capture_output=True, text=True, timeout=20)
            return r.stdout == "200"

        wait_for(get, timeout=30, what="https://catalog.istioinaction.io:30005/healthz")
    finally:
        weftctl("down", "--state", state, timeout=60, runtime_dir=rt)
        assert kill_leftovers(state) == []


def long_lived_cert(d, name, host):
    """A server certificate issued as a public one is (90 days, serverAuth, a CRL distribution
    point), signed by the test CA, so that testssl.sh judges the gateway, not the test CA."""
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectAltName=DNS:%s\n"
                "crlDistributionPoints=URI:http://127.0.0.1/weft-test.crl\n" % host)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            name + ".key", "-out", name + ".csr", "-subj", "/O=weft-test/CN=" + host, cwd=d)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "90", "-sha256", "-extfile",
            name + ".ext", cwd=d)


def run_testssl(gw, host, d, name):
    out = os.path.join(d, name + ".testssl.json")
    subprocess.run(["testssl", "--quiet", "--color", "0", "--warnings", "off", "--fast",
                    "--nodns", "none", "--ip", gw.ip, "--add-ca", os.path.join(d, "ca.crt"),
                    "--jsonfile", out, "%s:8443" % host],
                   capture_output=True, text=True, timeout=400)
    assert os.path.exists(out), "testssl wrote no report for " + host
    with open(out) as f:
        data = json.load(f)
    return data if isinstance(data, list) else data.get("scanResult", [])


def test_testssl_finds_nothing_high_on_simple_and_mutual(tls_mesh):
    """testssl.sh (Debian's) against the gateway's SIMPLE and MUTUAL servers, chosen by SNI:
    no finding of severity HIGH or CRITICAL (issue 17 acceptance); TLS 1.3 offered, SSLv3 and
    TLS 1.0 not. The credentials are replaced by long-lived ones first (pushed live)."""
    if not shutil.which("testssl"):
        pytest.fail("testssl.sh is needed (Debian package testssl.sh; scripts/setup installs it)")
    mesh, gw, d = tls_mesh
    long_lived_cert(d, "catalog-90d", "catalog.istioinaction.io")
    long_lived_cert(d, "mtls-90d", "mtls.istioinaction.io")
    mesh.write_config("catalog-credential.json",
                      tls_secret(d, "catalog-credential", "catalog-90d"))
    mesh.write_config("mtls-credential.json",
                      tls_secret(d, "mtls-credential", "mtls-90d", with_ca=True))
    wait_for(lambda: "90" in served_days(gw, "catalog.istioinaction.io", d)
             and "90" in served_days(gw, "mtls.istioinaction.io", d), timeout=20,
             what="the long-lived certificates to be served")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = dict(zip(("simple", "mutual"), pool.map(
            lambda a: run_testssl(gw, a[0], d, a[1]),
            (("catalog.istioinaction.io", "simple"), ("mtls.istioinaction.io", "mutual")))))
    for name, found in results.items():
        ids = {f.get("id") for f in found}
        assert {"TLS1_2", "TLS1_3", "heartbleed"} <= ids, (name, sorted(ids))
        bad = [(f["id"], f["severity"], f["finding"]) for f in found
               if f.get("severity") in ("HIGH", "CRITICAL")]
        assert not bad, (name, bad)
        proto = {f["id"]: f["finding"] for f in found}
        assert proto["TLS1_3"].startswith("offered"), (name, proto["TLS1_3"])
        assert proto["TLS1"].startswith("not offered"), (name, proto["TLS1"])
        assert proto["SSLv3"].startswith("not offered"), (name, proto["SSLv3"])


def served_days(gw, host, d):
    """The validity in days of the certificate the gateway serves for host (as text)."""
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    out = s_client(gw, host, d)
    if begin not in out:
        return ""
    pem = begin + out.split(begin)[1].split(end)[0] + end + "\n"
    r = subprocess.run(["openssl", "x509", "-noout", "-startdate", "-enddate"], input=pem,
                       capture_output=True, text=True, timeout=10)
    lines = dict(ln.split("=", 1) for ln in r.stdout.splitlines() if "=" in ln)
    if not {"notBefore", "notAfter"} <= set(lines):
        return ""
    fmt = "%b %d %H:%M:%S %Y %Z"
    days = (time.mktime(time.strptime(lines["notAfter"], fmt))
            - time.mktime(time.strptime(lines["notBefore"], fmt))) / 86400
    return str(round(days))


MUTUAL_GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: catalog-gateway, namespace: istioinaction}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https-istio, protocol: HTTPS}
    hosts: [istio.istioinaction.io]
    tls: {mode: ISTIO_MUTUAL}
  - port: {number: 443, name: https-optional, protocol: HTTPS}
    hosts: [mtls.istioinaction.io]
    tls: {mode: OPTIONAL_MUTUAL, credentialName: mtls-credential}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog-vs, namespace: istioinaction}
spec:
  hosts: [istio.istioinaction.io, mtls.istioinaction.io]
  gateways: [catalog-gateway]
  http:
  - route: [{destination: {host: catalog}}]
"""


def test_istio_mutual_and_optional_mutual_servers(mesh, tmp_path):
    """ISTIO_MUTUAL: the gateway terminates with its own mesh identity and requires a client
    certificate of the mesh's CA; OPTIONAL_MUTUAL: a client without a certificate is served,
    one with a certificate the Secret's CA did not sign is refused, one it signed is served."""
    d = str(tmp_path / "certs")
    os.makedirs(d)
    make_certs(d)
    make_rogue_client(d)
    mesh.add_config(os.path.join(BOOK, "services/catalog/kubernetes/catalog.yaml"))
    mesh.write_config("gateway-service.yaml", HTTPS_SERVICE)
    mesh.write_config("gateway.yaml", MUTUAL_GATEWAY)
    mesh.write_config("mtls-credential.json", tls_secret(d, "mtls-credential", "mtls",
                                                         with_ca=True))
    mesh.start_pilot(default_ns="istioinaction")
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"}, kind="router")
    pod = mesh.add_pod("catalog-6cf4b97d-abcde", "istioinaction",
                       {"app": "catalog", "version": "v1"}, app_port=3000)
    for p in (gw, pod):
        mesh.wait_ready(p)
    # a client of the mesh: a certificate from pilot's CA, and the mesh root to trust
    status, cm = mesh.pilot_get("/debug/istio-ca-root-cert?namespace=istioinaction")
    assert status == 200, cm
    with open(os.path.join(d, "mesh-root.pem"), "w") as f:
        f.write(cm["data"]["root-cert.pem"])
    chain = create_certificate(mesh.grpc_port, make_csr(tmp_path, "ecdsa"),
                               open(mesh.token("istioinaction", "client")).read().strip(),
                               ttl=600)
    with open(os.path.join(d, "mesh-client.crt"), "w") as f:
        f.write("".join(chain[:-1]))
    key = str(tmp_path / "ecdsa.key")

    def istio(cert=None, key=None):
        """GET /healthz over TLS to the ISTIO_MUTUAL server (SNI istio.istioinaction.io): the
        chain is verified against the mesh root, not the host name (a mesh certificate has
        only a SPIFFE URI SAN; proxies check that, as curl cannot). Status or error name."""
        ctx = ssl.create_default_context(cafile=os.path.join(d, "mesh-root.pem"))
        ctx.check_hostname = False
        if cert:
            ctx.load_cert_chain(cert, key)
        try:
            with socket.create_connection((gw.ip, 8443), timeout=5) as raw:
                with ctx.wrap_socket(raw, server_hostname="istio.istioinaction.io") as t:
                    t.sendall(b"GET /healthz HTTP/1.1\r\nHost: istio.istioinaction.io\r\n"
                              b"Connection: close\r\n\r\n")
                    data = t.recv(4096)
                    peer = t.getpeercert()
        except (OSError, ssl.SSLError) as e:
            return type(e).__name__, None
        san = [v for k, v in peer.get("subjectAltName", ()) if k == "URI"]
        return (int(data.split(b" ", 2)[1]) if data else "closed"), san
    mesh_cert = (os.path.join(d, "mesh-client.crt"), key)
    wait_for(lambda: istio(*mesh_cert)[0] == 200, timeout=20,
             what="ISTIO_MUTUAL with a mesh certificate: 200")
    # the gateway presents its own mesh identity
    assert istio(*mesh_cert)[1] == [
        "spiffe://cluster.local/ns/istio-system/sa/default"], istio(*mesh_cert)
    assert istio()[0] != 200  # no client certificate: refused
    assert istio(os.path.join(d, "client.crt"), os.path.join(d, "client.key"))[0] != 200
    # OPTIONAL_MUTUAL
    wait_for(lambda: curl(gw, "mtls.istioinaction.io", d)[:2] == (0, "200"), timeout=20,
             what="OPTIONAL_MUTUAL without a client certificate: 200")
    rc, status, err = curl(gw, "mtls.istioinaction.io", d, "--cert",
                           os.path.join(d, "client.crt"), "--key", os.path.join(d, "client.key"))
    assert (rc, status) == (0, "200"), err
    rc, status, err = curl(gw, "mtls.istioinaction.io", d, "--cert",
                           os.path.join(d, "rogue.crt"), "--key", os.path.join(d, "rogue.key"))
    assert rc != 0 or status != "200", (rc, status, err)
