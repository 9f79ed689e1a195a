"""istiod's secure gRPC port (--secureGRPCAddr, pilot_secure.h): the CA's CreateCertificate and
the xDS methods over TLS, with a serving certificate weft-pilot issues itself from the mesh CA
(SANs DNS istiod.istio-system.svc, istio-pilot.istio-system.svc and the bound IP). Real clients:
Python grpcio with TLS credentials trusting only the mesh root, and `openssl s_client`
(chain, SANs, ALPN h2). A plaintext client gets nothing; a client that does not trust the mesh
root fails the handshake; a new plug-in CA gives the port a new certificate without a restart.

XDS_AUTH (xds_auth.h): weft-proxy's ADS stream over the port carries its token (as pilot-agent
does) and syncs; without a token it is refused with UNAUTHENTICATED "authentication failure"
(pilot logs istiod's "Failed to authenticate client from ..." line, the proxy its stream's
close); a token of another namespace than the node's is refused with PERMISSION_DENIED
"authorization failed: ..."; a client certificate of the mesh CA authenticates without a token;
--xds-auth false (istiod's XDS_AUTH=false) lets an unauthenticated proxy in.
"""
import json
import os
import re
import subprocess

import pytest

from procs import CRASH_MARKERS, start_process
from proxyfix import proxy_factory  # noqa: F401 (fixture)
from test_pilot import get_json, pilot_exe, poll  # noqa: F401 (pilot_exe: fixture)
from test_pilot_ca import CSR_PATH, Req, Resp, make_csr, openssl, stop, token, x509_text
from proxyfix import (bootstrap, cluster, free_port, http_request, listener, proxy_path,
                      simple_routes, write_bootstrap)
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


def xds_bootstrap(port, root_file, san, cert=None, ns="default", sa=None):
    """A proxy whose ADS connection goes to pilot's secure port with a static
    UpstreamTlsContext (the root, istiod's DNS SAN, SNI and ALPN h2, as Istio's bootstrap);
    cert: (chain file, key file) presented as its client certificate; ns / sa: the node's
    NAMESPACE and SERVICE_ACCOUNT metadata."""
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
    if cert:
        tls["typed_config"]["common_tls_context"]["tls_certificates"] = [{
            "certificate_chain": {"filename": str(cert[0])},
            "private_key": {"filename": str(cert[1])}}]
    bs = bootstrap([], [], node_id="sidecar~127.0.0.1~web-1.%s~%s.svc.cluster.local" % (ns, ns))
    bs["node"]["metadata"] = {"NAMESPACE": ns, "NAME": "web-1"}
    if sa:
        bs["node"]["metadata"]["SERVICE_ACCOUNT"] = sa
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


def synced_nodes(proc):
    return [e["proxy"] for e in get_json(proc.mon, "/debug/syncz")
            if e.get("connected") and e.get("cluster_status") == "SYNCED"]


def token_file(pilot_exe, tmp_path, ns, sa):
    f = tmp_path / ("%s.%s.token" % (ns, sa))
    f.write_text(token(pilot_exe, tmp_path / "ca", ns, sa) + "\n")
    return f


def test_proxy_xds_over_tls(pilot_exe, tmp_path, proxy_factory):  # noqa: F811
    """The ADS stream over istiod's secure port: the proxy verifies pilot's serving certificate
    (root, DNS SAN istiod.istio-system.svc), sends its token, gets its configuration and is
    SYNCED; expecting another SAN, the handshake fails and the proxy never gets a
    configuration."""
    proc = start_secure(pilot_exe, tmp_path)
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        tok = token_file(pilot_exe, tmp_path, "default", "web")
        good = proxy_factory(xds_bootstrap(proc.secure, root, "istiod.istio-system.svc"),
                             args=["--token-path", tok])
        poll(lambda: synced_nodes(proc), timeout=20)
        assert good.stats().get("control_plane.connected_state") == 1
        with pytest.raises(RuntimeError):  # never ready: no configuration arrives
            proxy_factory(xds_bootstrap(proc.secure, root, "other.istio-system.svc"),
                          args=["--token-path", tok], timeout=3)
    finally:
        stop(proc)


def retrying_proxy_state(tmp_path, bs):
    """Runs weft-proxy on bs without a token until its xDS client has failed twice; its
    control-plane stats and log."""
    port = free_port()
    bs["admin"]["address"]["socket_address"]["port_value"] = port
    d = tmp_path / "retrying"
    d.mkdir()
    path = write_bootstrap(bs, str(d))
    with open(d / "stderr.txt", "wb") as err:
        p = subprocess.Popen([proxy_path(), "-c", path, "--token-path", str(tmp_path / "missing")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        def stats():
            status, _, body = http_request("127.0.0.1", port, "GET", "/stats?format=json",
                                           timeout=2)
            out = {s["name"]: s["value"] for s in json.loads(body)["stats"] if "value" in s}
            return out if out.get("cluster.xds-grpc.upstream_cx_connect_fail", 0) >= 2 else None
        out = poll(lambda: _quiet(stats), timeout=20)
        out["log"] = (d / "stderr.txt").read_text()
        return out
    finally:
        p.terminate()
        rc = p.wait(timeout=20)
        log = (d / "stderr.txt").read_text()
        assert rc == 0 and not any(m in log for m in CRASH_MARKERS), log[-3000:]


def _quiet(fn):
    try:
        return fn()
    except OSError:
        return None


NO_AUTH = re.compile(re.escape("Failed to authenticate client from 127.0.0.1:") + r"\d+" +
                     re.escape(": Authenticator ClientCertAuthenticator: no verified chain is "
                               "found; Authenticator WeftTokenAuthenticator: target JWT "
                               "extraction error: no HTTP authorization header exists"))


def test_xds_auth_refuses_what_istiod_refuses(pilot_exe, tmp_path, proxy_factory):  # noqa: F811
    """XDS_AUTH (on by default): without a token the stream ends UNAUTHENTICATED
    "authentication failure" (pilot logs istiod's line, the proxy logs the close, counts the
    failed connections and never gets ready); a token of namespace `other` for a node of
    `default` ends PERMISSION_DENIED with istiod's message, as does a node whose
    SERVICE_ACCOUNT is not the token's; the same token with a node of its own namespace and
    service account syncs. The plaintext port serves the unauthenticated proxy."""
    proc = start_secure(pilot_exe, tmp_path)
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        san = "istiod.istio-system.svc"
        with pytest.raises(RuntimeError) as e:
            proxy_factory(xds_bootstrap(proc.secure, root, san),
                          args=["--token-path", tmp_path / "missing"], timeout=4)
        assert ("StreamAggregatedResources gRPC config stream to xds-grpc closed: 16, "
                "authentication failure") in str(e.value), str(e.value)
        assert NO_AUTH.search(proc.stderr_text()), proc.stderr_text()
        rej = get_json(proc.mon, "/debug/adsz")["rejected"]
        assert rej and rej[0]["reason"] == "authentication failure", rej
        assert not synced_nodes(proc)

        # a proxy still retrying (not ready, so started by hand): the control plane state
        state = retrying_proxy_state(tmp_path, xds_bootstrap(proc.secure, root, san))
        assert state["control_plane.weft.connected_seconds"] == 0, state
        assert state["cluster.xds-grpc.upstream_cx_active"] == 0, state
        assert state["cluster.xds-grpc.upstream_cx_connect_fail"] >= 2, state
        assert "closed: 16, authentication failure" in state["log"]

        other = token_file(pilot_exe, tmp_path, "other", "web")
        with pytest.raises(RuntimeError) as e:
            proxy_factory(xds_bootstrap(proc.secure, root, san), args=["--token-path", other],
                          timeout=4)
        want = ("authorization failed: no identities ([spiffe://cluster.local/ns/other/sa/web])"
                " matched default/")
        assert "config stream to xds-grpc closed: 7, " + want in str(e.value), str(e.value)
        poll(lambda: "Unauthorized XDS: 127.0.0.1:" in proc.stderr_text(), timeout=5)
        assert "with identity [spiffe://cluster.local/ns/other/sa/web]: no identities" in \
            proc.stderr_text()
        assert get_json(proc.mon, "/debug/adsz")["rejected"][0]["reason"] == want

        # the node's SERVICE_ACCOUNT must be the token's service account
        with pytest.raises(RuntimeError) as e:
            proxy_factory(xds_bootstrap(proc.secure, root, san, ns="other", sa="db"),
                          args=["--token-path", other], timeout=4)
        assert "matched other/db" in str(e.value), str(e.value)
        proxy_factory(xds_bootstrap(proc.secure, root, san, ns="other", sa="web"),
                      args=["--token-path", other])
        poll(lambda: synced_nodes(proc), timeout=20)

        # istiod's 15010: no authentication
        bs = xds_bootstrap(proc.xds, root, san)
        del bs["static_resources"]["clusters"][0]["transport_socket"]
        proxy_factory(bs, args=["--token-path", tmp_path / "missing"])
        poll(lambda: len(synced_nodes(proc)) == 2, timeout=20)
    finally:
        stop(proc)


def workload_cert(proc, pilot_exe, tmp_path, ns, sa):
    """A workload certificate of the mesh CA for ns/sa (a CSR with that pod's token): the
    chain and key files."""
    csr = make_csr(tmp_path, "ecdsa")
    chain = secure_csr(proc.secure, mesh_root(proc), csr,
                       token(pilot_exe, tmp_path / "ca", ns, sa))
    f = tmp_path / ("%s.%s.chain.pem" % (ns, sa))
    f.write_text("".join(chain[:-1]))
    return f, tmp_path / "ecdsa.key"


def test_client_certificate_authenticates(pilot_exe, tmp_path, proxy_factory):  # noqa: F811
    """istiod's ClientCertAuthenticator: a proxy presenting a workload certificate of the mesh
    CA (SPIFFE ID of its namespace) syncs without any token; one whose certificate names
    another namespace is refused (PERMISSION_DENIED); a certificate of a foreign CA fails the
    handshake."""
    proc = start_secure(pilot_exe, tmp_path)
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        san = "istiod.istio-system.svc"
        cert = workload_cert(proc, pilot_exe, tmp_path, "default", "web")
        proxy_factory(xds_bootstrap(proc.secure, root, san, cert=cert),
                      args=["--token-path", tmp_path / "missing"])
        poll(lambda: synced_nodes(proc), timeout=20)
        assert "Failed to authenticate" not in proc.stderr_text()

        cert = workload_cert(proc, pilot_exe, tmp_path, "shop", "web")
        with pytest.raises(RuntimeError) as e:
            proxy_factory(xds_bootstrap(proc.secure, root, san, cert=cert),
                          args=["--token-path", tmp_path / "missing"], timeout=4)
        assert "closed: 7, authorization failed: no identities " \
               "([spiffe://cluster.local/ns/shop/sa/web]) matched default/" in str(e.value)

        key = tmp_path / "foreign.key"
        crt = tmp_path / "foreign.pem"
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", str(key), "-out", str(crt), "-days", "1", "-subj",
                "/CN=foreign", "-addext", "subjectAltName=URI:spiffe://cluster.local/ns/default"
                "/sa/web")
        with pytest.raises(RuntimeError):
            proxy_factory(xds_bootstrap(proc.secure, root, san, cert=(crt, key)),
                          args=["--token-path", tmp_path / "missing"], timeout=4)
        assert len(synced_nodes(proc)) == 1
    finally:
        stop(proc)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_xds_auth_false(pilot_exe, tmp_path, proxy_factory, how):  # noqa: F811
    """istiod's XDS_AUTH=false (or weft-pilot --xds-auth false): the secure port's streams are
    not authenticated, a proxy without a token syncs; --help documents the flag."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    argv = [pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca", "--grpcAddr",
            "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0", "--secureGRPCAddr", "127.0.0.1:0"]
    env = dict(os.environ)
    if how == "flag":
        argv += ["--xds-auth", "false"]
        env["XDS_AUTH"] = "true"  # the flag wins
    else:
        env["XDS_AUTH"] = "false"
    proc, addrs = start_process(argv, count=3, env=env)
    proc.xds, proc.mon, proc.secure = addrs[0][1], addrs[1][1], addrs[2][1]
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        proxy_factory(xds_bootstrap(proc.secure, root, "istiod.istio-system.svc"),
                      args=["--token-path", tmp_path / "missing"])
        poll(lambda: synced_nodes(proc), timeout=20)
    finally:
        stop(proc)
    out = subprocess.run([str(pilot_exe), "--help"], capture_output=True, text=True).stdout
    assert "--xds-auth BOOL" in out and "XDS_AUTH" in out, out
    bad = subprocess.run([str(pilot_exe), "--config-dir", str(cfg), "--xds-auth", "maybe"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and 'invalid value "maybe" for --xds-auth' in bad.stderr


def test_proxy_follows_a_new_root(pilot_exe, tmp_path, proxy_factory):  # noqa: F811
    """The mesh root changes (a plug-in cacerts Secret) and pilot restarts with it: the proxy's
    xds-grpc trusted_ca file still holds the old root, so its reconnections fail the handshake;
    once the file holds the new root (the kubelet's sync of istio-ca-root-cert) the proxy reads
    it again before its next connection and is SYNCED again, without a restart."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    ports = [free_port() for _ in range(3)]

    def run():
        proc, addrs = start_process(
            [pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca", "--grpcAddr",
             "127.0.0.1:%d" % ports[0], "--monitoringAddr", "127.0.0.1:%d" % ports[1],
             "--secureGRPCAddr", "127.0.0.1:%d" % ports[2]], count=3)
        proc.xds, proc.mon, proc.secure = ports
        return proc
    proc = run()
    try:
        root = tmp_path / "root.pem"
        root.write_text(mesh_root(proc))
        tok = token_file(pilot_exe, tmp_path, "default", "web")
        px = proxy_factory(xds_bootstrap(proc.secure, root, "istiod.istio-system.svc"),
                           args=["--token-path", tok])
        poll(lambda: synced_nodes(proc), timeout=20)
        d = tmp_path / "plugin"
        d.mkdir()
        (cfg / "cacerts.json").write_text(plugin_root(str(d)))
        new_root = (d / "root-cert.pem").read_text()
        poll(lambda: mesh_root(proc).strip() == new_root.strip(), timeout=20)
        fails = px.stats().get("cluster.xds-grpc.upstream_cx_connect_fail", 0)
        stop(proc)
        proc = run()
        # the old root: every new connection fails verification
        poll(lambda: px.stats().get("cluster.xds-grpc.upstream_cx_connect_fail", 0) >=
             fails + 3, timeout=30)
        assert not synced_nodes(proc)
        assert px.stats().get("cluster.xds-grpc.upstream_cx_active") == 0
        root.write_text(new_root)
        poll(lambda: synced_nodes(proc), timeout=40)
        assert "xDS cluster xds-grpc: TLS files changed" in px.stderr_text()
        assert px.stats().get("control_plane.connected_state") == 1
    finally:
        stop(proc)
