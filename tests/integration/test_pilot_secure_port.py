"""istiod's secure gRPC port (--secureGRPCAddr, pilot_secure.h): the CA's CreateCertificate and
the xDS methods over TLS, with a serving certificate weft-pilot issues itself from the mesh CA
(SANs DNS istiod.istio-system.svc, istio-pilot.istio-system.svc and the bound IP). Real clients:
Python grpcio with TLS credentials trusting only the mesh root, and `openssl s_client`
(chain, SANs, ALPN h2). A plaintext client gets nothing; a client that does not trust the mesh
root fails the handshake; a new plug-in CA gives the port a new certificate without a restart.
"""
import subprocess

import pytest

from procs import start_process
from proxyfix import proxy_factory  # noqa: F401 (fixture)
from test_pilot import get_json, pilot_exe, poll  # noqa: F401 (pilot_exe: fixture)
from test_pilot_ca import CSR_PATH, Req, Resp, make_csr, openssl, stop, token, x509_text
from proxyfix import bootstrap, cluster, listener, simple_routes
from test_mesh_reports_mtls import plugin_root
from test_proxy_sds import GENERATED, inbound_tls, secrets_dump

grpc = pytest.importorskip("grpc")


def start_secure(pilot_exe, tmp_path, cfg=None):  # noqa: F811
    cfg = cfg or tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 "--secureGRPCAddr", "127.0.0.1:0"], count=3)
    proc.xds, proc.mon, proc.secure = addrs[0][1], addrs[1][1], addrs[2][1]
    return proc


def mesh_root(proc):
    return get_json(proc.mon, "/debug/istio-ca-root-cert?namespace=default")["data"][
        "root-cert.pem"]


def secure_csr(port, root, csr, tok, target="127.0.0.1"):
    creds = grpc.ssl_channel_credentials(root_certificates=root.encode())
    with grpc.secure_channel("%s:%d" % (target, port), creds,
                             options=[("grpc.enable_http_proxy", 0)]) as ch:
        call = ch.unary_unary(CSR_PATH, request_serializer=Req.SerializeToString,
                              response_deserializer=Resp.FromString)
        return list(call(Req(csr=csr), metadata=[("authorization", "Bearer " + tok)],
                         timeout=20).cert_chain)


def s_client(port, root_file, *extra):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-alpn", "h2",
                        "-CAfile", str(root_file), "-showcerts"] + list(extra), input="",
                       capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def test_csr_over_tls_with_the_mesh_root(pilot_exe, tmp_path):  # noqa: F811
    proc = start_secure(pilot_exe, tmp_path)
    try:
        root = mesh_root(proc)
        root_file = tmp_path / "root.pem"
        root_file.write_text(root)
        tok = token(pilot_exe, tmp_path / "ca", "shop", "web")
        chain = secure_csr(proc.secure, root, make_csr(tmp_path, "ecdsa"), tok)
        leaf = tmp_path / "leaf.pem"
        leaf.write_text(chain[0])
        assert "URI:spiffe://cluster.local/ns/shop/sa/web" in x509_text(leaf)
        # the serving certificate: chained to the mesh root, istiod's names, ALPN h2
        out = s_client(proc.secure, root_file)
        assert "Verify return code: 0 (ok)" in out, out
        assert "ALPN protocol: h2" in out, out
        begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
        srv = tmp_path / "srv.pem"
        srv.write_text(begin + out.split(begin)[1].split(end)[0] + end + "\n")
        text = x509_text(srv)
        assert "DNS:istiod.istio-system.svc" in text and "IP Address:127.0.0.1" in text, text
        # a client that does not trust the mesh root fails the handshake
        other = tmp_path / "other.pem"
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", str(tmp_path / "other.key"), "-out", str(other), "-days",
                "1", "-subj", "/CN=other")
        with pytest.raises(grpc.RpcError) as e:
            secure_csr(proc.secure, other.read_text(), make_csr(tmp_path, "ecdsa"), tok)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        # plaintext HTTP/2 to the TLS port gets no answer
        with grpc.insecure_channel("127.0.0.1:%d" % proc.secure) as ch:
            call = ch.unary_unary(CSR_PATH, request_serializer=Req.SerializeToString,
                                  response_deserializer=Resp.FromString)
            with pytest.raises(grpc.RpcError):
                call(Req(csr=make_csr(tmp_path, "ecdsa")), timeout=5)
    finally:
        stop(proc)


def test_new_ca_new_serving_certificate(pilot_exe, tmp_path):  # noqa: F811
    """A plug-in cacerts Secret replaces the CA at runtime: the secure port serves a certificate
    of the new CA to the next connection, without a restart."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    proc = start_secure(pilot_exe, tmp_path, cfg)
    try:
        d = tmp_path / "plugin"
        d.mkdir()
        (cfg / "cacerts.json").write_text(plugin_root(str(d)))
        new_root = (d / "root-cert.pem").read_text()
        poll(lambda: mesh_root(proc).strip() == new_root.strip(), timeout=20)
        root_file = tmp_path / "new-root.pem"
        root_file.write_text(new_root)
        poll(lambda: "Verify return code: 0 (ok)" in s_client(proc.secure, root_file),
             timeout=20)
        tok = token(pilot_exe, tmp_path / "ca", "shop", "web")
        chain = secure_csr(proc.secure, new_root, make_csr(tmp_path, "ecdsa"), tok)
        assert chain[-1].strip() == new_root.strip()
    finally:
        stop(proc)


def test_proxy_gets_its_certificate_over_tls(pilot_exe, tmp_path, proxy_factory,  # noqa: F811
                                             monkeypatch):
    """weft-proxy's certificate provider reaches the CA on the secure port (pilot-agent's
    CA_ROOT_CA: the root it must chain to; the CA_ADDR IP checked in its certificate): the
    workload certificate arrives; with a root that is not the mesh's, the handshake fails, the
    proxy logs it and holds no certificate."""
    proc = start_secure(pilot_exe, tmp_path)
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        tok = tmp_path / "web.token"
        tok.write_text(token(pilot_exe, tmp_path / "ca", "default", "web") + "\n")
        monkeypatch.setenv("CA_ADDR", "127.0.0.1:%d" % proc.secure)
        monkeypatch.setenv("ECC_SIGNATURE_ALGORITHM", "ECDSA")

        def proxy():
            lst = listener(simple_routes("backend"))
            lst["filter_chains"][0]["transport_socket"] = inbound_tls()
            return proxy_factory(bootstrap([lst], [cluster("backend", [1])]),
                                 args=["--token-path", tok])
        monkeypatch.setenv("CA_ROOT_CA", str(root))
        good = proxy()
        poll(lambda: GENERATED in good.stderr_text(), timeout=20)
        sec, _ = secrets_dump(good)
        assert [s["name"] for s in sec["dynamic_active_secrets"]] == ["default", "ROOTCA"]
        other = tmp_path / "other.pem"
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", str(tmp_path / "other.key"), "-out", str(other), "-days",
                "1", "-subj", "/CN=other")
        monkeypatch.setenv("CA_ROOT_CA", str(other))
        bad = proxy()
        poll(lambda: "failed to sign CSR" in bad.stderr_text(), timeout=20)
        assert GENERATED not in bad.stderr_text()
    finally:
        stop(proc)


def xds_bootstrap(port, root_file, san):
    """A proxy whose ADS connection goes to pilot's secure port with a static
    UpstreamTlsContext (the root, istiod's DNS SAN, SNI and ALPN h2, as Istio's bootstrap)."""
    ads = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
    tls = {"name": "envoy.transport_sockets.tls", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3."
                 "UpstreamTlsContext",
        "sni": "istiod.istio-system.svc",
        "common_tls_context": {
            "alpn_protocols": ["h2"],
            "validation_context": {
                "trusted_ca": {"filename": str(root_file)},
                "match_typed_subject_alt_names": [{"san_type": "DNS",
                                                   "matcher": {"exact": san}}]}}}}
    bs = bootstrap([], [], node_id="sidecar~127.0.0.1~web-1.default~default.svc.cluster.local")
    bs["node"]["metadata"] = {"NAMESPACE": "default", "NAME": "web-1"}
    bs["dynamic_resources"] = {
        "ads_config": {"api_type": "GRPC", "transport_api_version": "V3",
                       "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
        "cds_config": ads, "lds_config": ads}
    bs["static_resources"]["clusters"] = [{
        "name": "xds-grpc", "type": "STATIC", "connect_timeout": "1s",
        "load_assignment": {"cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [
            {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1",
                                                         "port_value": port}}}}]}]},
        "transport_socket": tls}]
    return bs


def test_proxy_xds_over_tls(pilot_exe, tmp_path, proxy_factory):  # noqa: F811
    """The ADS stream over istiod's secure port: the proxy verifies pilot's serving certificate
    (root, DNS SAN istiod.istio-system.svc), gets its configuration and is SYNCED; expecting
    another SAN, the handshake fails and the proxy never gets a configuration."""
    proc = start_secure(pilot_exe, tmp_path)
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        good = proxy_factory(xds_bootstrap(proc.secure, root, "istiod.istio-system.svc"))
        poll(lambda: any(e.get("connected") and e.get("cluster_status") == "SYNCED"
                         for e in get_json(proc.mon, "/debug/syncz")), timeout=20)
        assert good.stats().get("control_plane.connected_state") == 1
        with pytest.raises(RuntimeError):  # never ready: no configuration arrives
            proxy_factory(xds_bootstrap(proc.secure, root, "other.istio-system.svc"),
                          timeout=3)
    finally:
        stop(proc)
