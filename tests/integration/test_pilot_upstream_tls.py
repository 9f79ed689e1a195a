"""DestinationRule trafficPolicy.tls end to end (issue 17 item 4; security.md §4.2, §4.3):
weft-pilot generates the clusters of MESH_EXTERNAL ServiceEntries from the rules, a weft-proxy
takes them over ADS (outbound listener, routes, clusters, endpoints all from pilot) and real
TLS servers answer:

- SIMPLE (caCertificates, subjectAltNames, sni) to a weft-proxy TLS listener and to
  `openssl s_server`: 200 through the proxy, the server saw the SNI;
- MUTUAL (clientCertificate / privateKey files) to a listener that requires client
  certificates: 200, the server saw the client's SAN; SIMPLE to the same server fails;
- DISABLE to a TLS server: 503 UC with Envoy's details
  (upstream_reset_before_response_started{connection_termination}) and body.

Then sidecar to sidecar with the identities pilot's CA issues (test_proxy_sds's `mesh`, server
sidecar and tokens): auto mTLS (a Service whose pod carries security.istio.io/tlsMode: istio is
reached over mTLS with Istio's SNI and SAN, an unlabelled one in plaintext) and a
DestinationRule ISTIO_MUTUAL.

Certificates come from test_proxy_tls's `certs`; every process binds loopback on free ports
and is stopped at teardown.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from procs import crash_report, free_port, running_apps, start_process, stop_process
from proxyfix import (ISTIO_TEXT_RE, bootstrap, proxy_factory)
from test_pilot import pilot_exe  # noqa: F401 (fixture)
from test_proxy_tls import CLIENT_SAN, SERVER_SAN, certs, tls_listener, tls_log  # noqa: F401
import test_proxy_sds as sds_t
from test_proxy_sds import mesh  # noqa: F401 (fixture)

assert proxy_factory  # fixture, imported for pytest

SE = """apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: %(name)s, namespace: default}
spec:
  hosts: [%(name)s.test]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{number: %(sp)d, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.1, ports: {http: %(target)d}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: %(name)s, namespace: default}
spec:
  host: %(name)s.test
  trafficPolicy:
    tls: %(tls)s
---
"""


@pytest.fixture(scope="module")
def app():
    with running_apps("backend") as ports:
        yield ports["backend"]


@pytest.fixture
def s_server(certs, tmp_path):  # noqa: F811
    """`openssl s_server -www` with the server certificate; yields its port."""
    port = free_port()
    log = open(tmp_path / "s_server.log", "wb")
    proc = subprocess.Popen(["openssl", "s_server", "-accept", str(port), "-cert",
                             certs["server.crt"], "-key", certs["server.key"], "-www"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert proc.poll() is None, (tmp_path / "s_server.log").read_text()
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def start_pilot(exe, cfg_dir, mesh_file, tmp_path):
    proc, addrs = start_process([exe, "--config-dir", cfg_dir, "--meshConfig", mesh_file,
                                 "--ca-dir", tmp_path / "ca", "--grpcAddr", "127.0.0.1:0",
                                 "--monitoringAddr", "127.0.0.1:0",
                                 "--debounce-after-ms", "50"], count=2)
    proc.xds = addrs[0][1]
    return proc


def client_bootstrap(xds_port):
    """A sidecar of pod client.default taking everything from pilot over ADS (the local mesh's
    bootstrap shape: WEFT_LOCALHOST 127.0.0.1, so outbound listeners bind 127.0.0.1)."""
    bs = bootstrap([], [{
        "name": "xds-grpc", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [{
            "endpoint": {"address": {"socket_address": {"address": "127.0.0.1",
                                                        "port_value": xds_port}}}}]}]}}],
        node_id="client.default", node_cluster="client.default")
    bs["node"]["metadata"] = {"NAME": "client", "NAMESPACE": "default",
                              "PROXY_TYPE": "sidecar", "WEFT_LOCALHOST": "127.0.0.1",
                              "INSTANCE_IPS": "127.0.0.1"}
    ads = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
    bs["dynamic_resources"] = {
        "ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                       "set_node_on_first_message_only": True,
                       "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
        "cds_config": ads, "lds_config": dict(ads)}
    return bs


def get(port, host, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", "/echo", headers={"Host": host})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_served(port, host, timeout=20):
    """GETs until the outbound listener exists and routes host (not 404 NR): (status, body)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, body = get(port, host)
            if status != 404:
                return status, body
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("no route for %s on port %d within %ds" % (host, port, timeout))
        time.sleep(0.1)


def log_entries(path, n, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        if len(lines) >= n or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(lines) >= n, lines
    out = []
    for line in lines:
        m = ISTIO_TEXT_RE.match(line)
        assert m, line
        out.append(m.groupdict())
    return out


def test_destination_rule_tls_modes(certs, app, s_server, proxy_factory, pilot_exe,  # noqa: F811
                                    tmp_path):
    if not shutil.which("openssl"):
        pytest.fail("the openssl CLI is needed (Debian package openssl)")
    simple_srv = proxy_factory(tls_listener(certs, app))
    mutual_srv = proxy_factory(tls_listener(certs, app, require=True))
    a_port = next(iter(simple_srv.ports.values()))
    b_port = next(iter(mutual_srv.ports.values()))
    ca, crt, key = certs["ca.crt"], certs["client.crt"], certs["client.key"]
    sp = free_port()
    rules = [
        ("simple", a_port, "{mode: SIMPLE, caCertificates: %s, subjectAltNames: ['%s'], "
                           "sni: localhost}" % (ca, SERVER_SAN)),
        ("sserver", s_server, "{mode: SIMPLE, caCertificates: %s, sni: sserver.test}" % ca),
        ("mutual", b_port, "{mode: MUTUAL, clientCertificate: %s, privateKey: %s, "
                           "caCertificates: %s, subjectAltNames: ['%s']}"
         % (crt, key, ca, SERVER_SAN)),
        ("nocert", b_port, "{mode: SIMPLE, caCertificates: %s}" % ca),
        ("plain", a_port, "{mode: DISABLE}"),
    ]
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "tls.yaml").write_text("".join(SE % {"name": n, "sp": sp, "target": t, "tls": tls}
                                          for n, t, tls in rules))
    access = tmp_path / "client-access.log"
    mesh_file = tmp_path / "mesh.yaml"
    mesh_file.write_text("accessLogFile: %s\n" % access)
    pilot = start_pilot(pilot_exe, cfg, mesh_file, tmp_path)
    try:
        client = proxy_factory(client_bootstrap(pilot.xds))

        # SIMPLE to weft-proxy's TLS listener: the CA file, the SAN and the SNI are used
        status, body = wait_served(sp, "simple.test")
        assert status == 200, body
        e = tls_log(simple_srv, 1)[0]
        assert e["sni"] == "localhost" and e["d_version"] in ("TLSv1.2", "TLSv1.3"), e
        assert e["d_peer_san"] is None  # no client certificate in SIMPLE

        # SIMPLE to openssl s_server (-www answers with its status page)
        status, body = wait_served(sp, "sserver.test")
        assert status == 200 and b"s_server" in body, body

        # MUTUAL: the client certificate from the files reaches the server
        status, body = wait_served(sp, "mutual.test")
        assert status == 200, body
        e = tls_log(mutual_srv, 1)[0]
        assert e["d_peer_san"] == CLIENT_SAN, e

        # the same server without a client certificate (SIMPLE) refuses the handshake
        status, body = wait_served(sp, "nocert.test")
        assert status == 503, body

        # DISABLE to a TLS port: plaintext meets the handshake, Envoy's 503 UC
        status, body = wait_served(sp, "plain.test")
        assert status == 503, body
        assert body == (b"upstream connect error or disconnect/reset before headers. "
                        b"reset reason: connection termination"), body
        plain = [x for x in log_entries(access, 5) if x["authority"] == "plain.test"]
        assert plain, open(access).read()
        assert plain[-1]["response_flags"] == "UC", plain[-1]
        assert plain[-1]["response_code_details"] == \
            "upstream_reset_before_response_started{connection_termination}", plain[-1]
        assert plain[-1]["upstream_cluster"] == "outbound|%d||plain.test" % sp

        # pilot's clusters, as the proxy holds them
        status, _, dump = client.admin("/config_dump")
        assert status == 200
        clusters = {c["cluster"]["name"]: c["cluster"] for cfgd in json.loads(dump)["configs"]
                    if cfgd["@type"].endswith("ClustersConfigDump")
                    for c in cfgd.get("dynamic_active_clusters", [])}
        ts = clusters["outbound|%d||mutual.test" % sp]["transport_socket"]
        common = ts["typed_config"]["common_tls_context"]
        assert common["tls_certificates"][0]["certificate_chain"] == {"filename": crt}
        assert common["validation_context"]["trusted_ca"] == {"filename": ca}
        assert "transport_socket" not in clusters["outbound|%d||plain.test" % sp]
    finally:
        rc = stop_process(pilot)
        assert crash_report(pilot) is None, pilot.stderr_text()
        assert rc == 0, pilot.stderr_text()


AUTO = """apiVersion: v1
kind: Service
metadata: {name: %(name)s, namespace: default}
spec:
  selector: {app: %(name)s}
  ports: [{name: http, port: %(sp)d, targetPort: %(target)d}]
---
apiVersion: v1
kind: Pod
metadata:
  name: %(name)s-1
  namespace: default
  labels: {app: %(name)s%(labels)s}
spec:
  serviceAccountName: %(name)s
  containers: [{name: app, image: app, ports: [{containerPort: %(target)d}]}]
status: {podIP: 127.0.0.1, phase: Running}
---
"""

NOT_SUPPORTED = "transport_socket_matches: not supported"
HOST = "server.default.svc.cluster.local"


def sidecars(proxy_factory, mesh, app, monkeypatch, tmp_path, extra=""):  # noqa: F811
    """The server sidecar (inbound mTLS with its pilot-issued identity, test_proxy_sds), the
    Service `server` (its pod labelled tlsMode istio) and `legacy` (the app itself, no label)
    on one port, extra config, and a client sidecar on ADS: (server, client, service port)."""
    server = sds_t.server_proxy(proxy_factory, mesh, app, monkeypatch)
    sds_t.wait_generated(server)
    sp = free_port()
    (tmp_path / "cfg" / "auto.yaml").write_text(
        AUTO % {"name": "server", "sp": sp, "target": next(iter(server.ports.values())),
                "labels": ", security.istio.io/tlsMode: istio"} +
        AUTO % {"name": "legacy", "sp": sp, "target": app, "labels": ""} + extra)
    monkeypatch.setenv("ECC_SIGNATURE_ALGORITHM", "")
    client = proxy_factory(client_bootstrap(mesh.xds),
                           args=["--token-path", mesh.tokens["client"]])
    return server, client, sp


def wait_ok(client, sp, host, timeout=20):
    """GETs host until 200 (the client proxy must never refuse pilot's clusters)."""
    deadline = time.monotonic() + timeout
    while True:
        assert NOT_SUPPORTED not in client.stderr_text(), client.stderr_text()[-3000:]
        try:
            status, body = get(sp, host)
            if status == 200:
                return body
        except OSError:
            pass
        assert time.monotonic() < deadline, client.stderr_text()[-3000:]
        time.sleep(0.1)


def test_auto_mtls_between_proxies(proxy_factory, mesh, app, monkeypatch, tmp_path):  # noqa: F811
    """Auto mTLS (security.md §3.2): the client's cluster for a Service carries
    transport_socket_matches; the endpoint labelled security.istio.io/tlsMode: istio is
    reached over mTLS with the identities pilot's CA issued (SAN = the pod's service account,
    Istio's SNI), the unlabelled one in plaintext (tlsMode-disabled)."""
    server, client, sp = sidecars(proxy_factory, mesh, app, monkeypatch, tmp_path)
    wait_ok(client, sp, HOST)
    e = tls_log(server, 1)[0]
    assert e["d_peer_san"] == sds_t.CLIENT_ID, e
    assert e["sni"] == "outbound_.%d_._.%s" % (sp, HOST), e
    wait_ok(client, sp, "legacy.default.svc.cluster.local")


def test_istio_mutual_destination_rule(proxy_factory, mesh, app, monkeypatch,  # noqa: F811
                                       tmp_path):
    """DestinationRule ISTIO_MUTUAL on both Services: the mTLS socket is the clusters'
    transport_socket (no matches, so this runs whatever weft-proxy reads); the labelled pod
    answers over mTLS, the plaintext app behind `legacy` does not (503)."""
    dr = ("apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
          "metadata: {name: all, namespace: default}\n"
          "spec: {host: '*.default.svc.cluster.local', trafficPolicy: {tls: {mode: "
          "ISTIO_MUTUAL}}}\n")
    server, client, sp = sidecars(proxy_factory, mesh, app, monkeypatch, tmp_path, dr)
    wait_ok(client, sp, HOST)
    e = tls_log(server, 1)[0]
    assert e["d_peer_san"] == sds_t.CLIENT_ID, e
    assert e["sni"] == "outbound_.%d_._.%s" % (sp, HOST), e
    status, body = get(sp, "legacy.default.svc.cluster.local")
    assert status == 503, body
    assert NOT_SUPPORTED not in client.stderr_text()
