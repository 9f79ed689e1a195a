"""TLS in weft-proxy with real clients (issue 17, first step): a DownstreamTlsContext on a
listener's filter chain and an UpstreamTlsContext on a cluster.

- `openssl s_client`: ALPN, protocol versions (and a version the listener refuses), the
  certificate chain the listener sends, a client certificate required;
- `curl --cacert/--cert/--key` through a TLS listener: x-forwarded-proto https upstream and the
  TLS access-log operators; plaintext to the TLS port refused;
- two weft-proxies doing mTLS between them with SAN checks: the request passes; a wrong SAN, an
  unknown CA and TLS to a plaintext port give 503 with Envoy's TLS_error text in the body and
  (spaces as '_') in %UPSTREAM_TRANSPORT_FAILURE_REASON%, and the ssl.* stats count them
  (security.md §3.5).

Certificates are made with the `openssl` CLI in a temporary directory; everything binds
loopback on free ports and every process is stopped at teardown.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from procs import free_port, running_apps
from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory, route,
                      route_config, simple_routes, vhost)

assert proxy_factory  # fixture, imported for pytest

TLS = "envoy.transport_sockets.tls"
DTC = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
UTC = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
SERVER_SAN = "spiffe://cluster.local/ns/default/sa/server"
CLIENT_SAN = "spiffe://cluster.local/ns/default/sa/client"
SNI = "outbound_.80_._.b.default.svc.cluster.local"

TLS_LOG = {
    "code": "%RESPONSE_CODE%",
    "flags": "%RESPONSE_FLAGS%",
    "details": "%RESPONSE_CODE_DETAILS%",
    "tfr": "%UPSTREAM_TRANSPORT_FAILURE_REASON%",
    "d_peer_san": "%DOWNSTREAM_PEER_URI_SAN%",
    "d_local_san": "%DOWNSTREAM_LOCAL_URI_SAN%",
    "d_version": "%DOWNSTREAM_TLS_VERSION%",
    "d_cipher": "%DOWNSTREAM_TLS_CIPHER%",
    "d_subject": "%DOWNSTREAM_PEER_SUBJECT%",
    "sni": "%REQUESTED_SERVER_NAME%",
    "u_peer_san": "%UPSTREAM_PEER_URI_SAN%",
    "u_version": "%UPSTREAM_TLS_VERSION%",
}


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def _leaf(d, name, ca, subj, san):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth,clientAuth\n"
                "subjectAltName=%s\n" % san)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj, cwd=d)
    _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
             "-CAcreateserial", "-days", "2", "-out", name + ".crt", "-extfile", name + ".ext",
             cwd=d)


@pytest.fixture(scope="module")
def certs():
    """{name: path}: ca, other_ca (roots), server / client leaves of ca (key and crt)."""
    if not shutil.which("openssl"):
        pytest.fail("the openssl CLI is needed (Debian package openssl)")
    d = tempfile.mkdtemp(prefix="weft-tls-")
    try:
        for ca in ("ca", "other_ca"):
            _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-nodes", "-keyout", ca + ".key", "-out", ca + ".crt", "-days", "2",
                     "-subj", "/O=weft-test/CN=" + ca, cwd=d)
        _leaf(d, "server", "ca", "/O=weft-test/CN=server",
              "URI:%s,DNS:localhost,IP:127.0.0.1" % SERVER_SAN)
        _leaf(d, "client", "ca", "/O=weft-test/CN=client", "URI:%s" % CLIENT_SAN)
        yield {n: os.path.join(d, n) for n in
               ("ca.crt", "other_ca.crt", "server.crt", "server.key", "client.crt",
                "client.key")}
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def app():
    with running_apps("backend") as ports:
        yield ports["backend"]


def _read(path):
    with open(path) as f:
        return f.read()


def downstream_tls(certs, require=False, alpn=("h2", "http/1.1"), min_v=None, max_v=None,
                   san_prefix=None):
    common = {"tls_certificates": [{"certificate_chain": {"filename": certs["server.crt"]},
                                    "private_key": {"filename": certs["server.key"]}}],
              "alpn_protocols": list(alpn)}
    params = {}
    if min_v:
        params["tls_minimum_protocol_version"] = min_v
    if max_v:
        params["tls_maximum_protocol_version"] = max_v
    if params:
        common["tls_params"] = params
    if require or san_prefix:
        vc = {"trusted_ca": {"inline_string": _read(certs["ca.crt"])}}
        if san_prefix:
            vc["match_typed_subject_alt_names"] = [{"san_type": "URI",
                                                    "matcher": {"prefix": san_prefix}}]
        common["validation_context"] = vc
    tc = {"@type": DTC, "common_tls_context": common}
    if require:
        tc["require_client_certificate"] = True
    return {"name": TLS, "typed_config": tc}


def upstream_tls(certs, ca="ca.crt", san=SERVER_SAN, sni=SNI, cert=True):
    vc = {"trusted_ca": {"filename": certs[ca]}}
    if san:
        vc["match_typed_subject_alt_names"] = [{"san_type": "URI", "matcher": {"exact": san}}]
    common = {"tls_certificates": [{"certificate_chain": {"filename": certs["client.crt"]},
                                    "private_key": {"inline_string": _read(certs["client.key"])}}],
              "validation_context": vc, "alpn_protocols": ["istio-http/1.1", "istio"]}
    if not cert:
        del common["tls_certificates"]
    return {"name": TLS, "typed_config": {"@type": UTC, "sni": sni, "common_tls_context": common}}


def tls_listener(certs, app_port, logs=True, **kw):
    lst = listener(simple_routes("backend"),
                   access_logs=[access_log("@LOG:tls@", json_format=TLS_LOG)] if logs else None)
    lst["filter_chains"][0]["transport_socket"] = downstream_tls(certs, **kw)
    return bootstrap([lst], [cluster("backend", [app_port])])


def expect_stat(proxy, name, value):
    """Waits (5 s) for stat name to reach value exactly."""
    got = proxy.wait_stat(name, value).get(name)
    assert got == value, "%s = %r, want %r" % (name, got, value)


def tls_log(proxy, n):
    return [json.loads(line) for line in proxy.access_log_lines(n, name="tls")]


def port_of(proxy):
    return next(iter(proxy.ports.values()))


def s_client(port, *args, stdin=b"", timeout=20):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + list(args),
                       input=stdin, capture_output=True, timeout=timeout)
    return r.returncode, r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")


def curl(port, path, *args, host="localhost"):
    # HTTP/1.1: the listener offers h2 (Istio's server ALPN) but weft has no HTTP/2 codec yet
    argv = ["curl", "-sS", "--http1.1", "--max-time", "10", "--resolve", "%s:%d:127.0.0.1" % (host, port),
            "-o", "-", "-w", "\n%{http_code}", "https://%s:%d%s" % (host, port, path)]
    r = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=30)
    body, _, code = r.stdout.rpartition("\n")
    return r.returncode, int(code or 0), body, r.stderr


# ---------- openssl s_client ----------

def test_s_client_alpn_versions_and_chain(certs, app, proxy_factory):
    proxy = proxy_factory(tls_listener(certs, app, logs=False, min_v="TLSv1_2", max_v="TLSv1_3"))
    port = port_of(proxy)
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-alpn", "http/1.1",
                       "-servername", "reviews.local", "-verify_return_error", "-showcerts")
    assert rc == 0, out
    assert "ALPN protocol: http/1.1" in out
    assert "Verify return code: 0 (ok)" in out
    assert "New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256" in out  # the server's order
    assert "s:O = weft-test, CN = server" in out and "i:O = weft-test, CN = ca" in out
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-alpn", "h2,http/1.1", "-tls1_2")
    assert rc == 0, out
    assert "ALPN protocol: h2" in out
    assert "Protocol  : TLSv1.2" in out
    # a client whose ALPN the listener does not have: no ALPN, no failure (Envoy's NOACK)
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-alpn", "istio")
    assert rc == 0 and "No ALPN negotiated" in out, out
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.handshake" % port, 3)
    st = proxy.stats()
    assert st["listener.127.0.0.1_%d.ssl.no_certificate" % port] == 3
    # Envoy's per-handshake counters, created on first use
    assert st["listener.127.0.0.1_%d.ssl.versions.TLSv1.3" % port] == 2
    assert st["listener.127.0.0.1_%d.ssl.versions.TLSv1.2" % port] == 1
    assert st["listener.127.0.0.1_%d.ssl.curves.X25519" % port] == 3
    ciphers = {k: v for k, v in st.items() if ".ssl.ciphers." in k}
    assert sum(ciphers.values()) == 3 and any(k.endswith("ciphers.ECDHE-ECDSA-AES128-GCM-SHA256")
                                              for k in ciphers), ciphers


def test_s_client_version_refused(certs, app, proxy_factory):
    proxy = proxy_factory(tls_listener(certs, app, logs=False, min_v="TLSv1_3"))
    port = port_of(proxy)
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-tls1_2")
    assert rc != 0, out
    assert "alert protocol version" in out
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.connection_error" % port, 1)
    assert proxy.stats()["listener.127.0.0.1_%d.ssl.handshake" % port] == 0


def test_s_client_client_certificate_required(certs, app, proxy_factory):
    proxy = proxy_factory(tls_listener(certs, app, logs=False, require=True))
    port = port_of(proxy)
    req = b"GET /echo HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-ign_eof", stdin=req)
    assert "certificate required" in out, out
    assert "HTTP/1.1 200" not in out
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.fail_verify_no_cert" % port, 1)
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-cert", certs["client.crt"],
                       "-key", certs["client.key"], "-ign_eof", stdin=req)
    assert "HTTP/1.1 200" in out, out
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.handshake" % port, 1)


def test_s_client_renegotiation_refused(certs, app, proxy_factory):
    """A TLS 1.2 client asking to renegotiate gets the no_renegotiation alert (BoringSSL under
    Envoy never renegotiates)."""
    proxy = proxy_factory(tls_listener(certs, app, logs=False))
    port = port_of(proxy)
    pr = subprocess.Popen(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-tls1_2",
                           "-CAfile", certs["ca.crt"]],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        expect_stat(proxy, "listener.127.0.0.1_%d.ssl.handshake" % port, 1)
        pr.stdin.write(b"R\n")  # s_client's renegotiate command
        pr.stdin.flush()
        time.sleep(0.5)
        pr.stdin.close()
        pr.wait(timeout=10)
        out = pr.stdout.read().decode("utf-8", "replace")
    finally:
        if pr.poll() is None:
            pr.kill()
            pr.wait()
    assert "RENEGOTIATING" in out and "no renegotiation" in out, out[-800:]


def test_s_client_session_resumption(certs, app, proxy_factory, tmp_path):
    """A client that kept its session (a TLS 1.3 ticket) resumes it: ssl.session_reused."""
    proxy = proxy_factory(tls_listener(certs, app, logs=False))
    port = port_of(proxy)
    sess = str(tmp_path / "sess.pem")
    req = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-sess_out", sess, "-ign_eof",
                       stdin=req)
    assert rc == 0 and "New, TLSv1.3" in out, out
    rc, out = s_client(port, "-CAfile", certs["ca.crt"], "-sess_in", sess, "-ign_eof", stdin=req)
    assert rc == 0 and "Reused, TLSv1.3" in out, out
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.handshake" % port, 2)
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.session_reused" % port, 1)


def test_upstream_session_resumption(certs, app, proxy_factory):
    """An upstream TLS cluster keeps the last session its server gave (Envoy's
    max_session_keys, default 1) and offers it on its next connection: with one request per
    connection, later connections resume (ssl.session_reused on both sides) and still carry the
    server's identity to the access log."""
    b = proxy_factory(tls_listener(certs, app, require=True,
                                   san_prefix="spiffe://cluster.local/"))
    b_port = port_of(b)
    a = proxy_factory(bootstrap(
        [listener(simple_routes("to_b"),
                  access_logs=[access_log("@LOG:tls@", json_format=TLS_LOG)])],
        [cluster("to_b", [b_port], transport_socket=upstream_tls(certs),
                 max_requests_per_connection=1)]))
    for _ in range(4):
        status, _, body = a.request("GET", "/echo")
        assert status == 200, body
    expect_stat(a, "cluster.to_b.ssl.handshake", 4)
    reused = a.wait_stat("cluster.to_b.ssl.session_reused", 3).get(
        "cluster.to_b.ssl.session_reused")
    assert reused == 3, reused  # the first connection had nothing to offer
    pre = "listener.127.0.0.1_%d." % b_port
    assert b.wait_stat(pre + "ssl.session_reused", 3).get(pre + "ssl.session_reused") == 3
    assert all(e["u_peer_san"] == SERVER_SAN for e in tls_log(a, 4))


# ---------- curl through a TLS listener ----------

def test_curl_mtls_listener(certs, app, proxy_factory):
    proxy = proxy_factory(tls_listener(certs, app, require=True,
                                       san_prefix="spiffe://cluster.local/"))
    port = port_of(proxy)
    rc, code, body, err = curl(port, "/echo", "--cacert", certs["ca.crt"],
                               "--cert", certs["client.crt"], "--key", certs["client.key"])
    assert rc == 0 and code == 200, err
    doc = json.loads(body)
    xfp = [v for k, v in doc["headers"] if k.lower() == "x-forwarded-proto"]
    assert xfp == ["https"], doc["headers"]
    e = tls_log(proxy, 1)[0]
    assert e["code"] == 200
    assert e["d_peer_san"] == CLIENT_SAN
    assert e["d_local_san"] == SERVER_SAN
    assert e["d_version"] == "TLSv1.3"
    assert e["d_cipher"].startswith("TLS_")
    assert e["d_subject"] == "CN=client,O=weft-test"
    assert e["sni"] == "localhost"
    assert e["u_peer_san"] is None and e["u_version"] is None  # a plaintext upstream
    # large bodies both ways through the TLS listener
    auth = ("--cacert", certs["ca.crt"], "--cert", certs["client.crt"], "--key",
            certs["client.key"])
    rc, code, body, err = curl(port, "/bytes/5000000", *auth)
    assert rc == 0 and code == 200 and len(body) == 5000000, err
    upload = os.path.join(os.path.dirname(certs["ca.crt"]), "upload.bin")
    with open(upload, "wb") as f:
        f.write(os.urandom(3000000))
    rc, code, body, err = curl(port, "/upload", "--data-binary", "@" + upload, *auth)
    assert rc == 0 and code == 200 and body == "received=3000000\n", (err, body)
    # no client certificate: refused, counted
    rc, code, _, err = curl(port, "/echo", "--cacert", certs["ca.crt"])
    assert rc != 0 and code != 200, err
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.fail_verify_no_cert" % port, 1)
    # the server's certificate does not verify against another root
    rc, _, _, err = curl(port, "/echo", "--cacert", certs["other_ca.crt"],
                         "--cert", certs["client.crt"], "--key", certs["client.key"])
    assert rc == 60, err  # CURLE_PEER_FAILED_VERIFICATION
    # plaintext HTTP to the TLS port: no answer, a connection error (HTTP_REQUEST)
    r = subprocess.run(["curl", "-sS", "--max-time", "5", "http://127.0.0.1:%d/" % port],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode != 0
    expect_stat(proxy, "listener.127.0.0.1_%d.ssl.connection_error" % port, 2)


# ---------- two proxies: mTLS between them ----------

def test_mtls_between_two_proxies(certs, app, proxy_factory):
    inbound = tls_listener(certs, app, require=True, san_prefix="spiffe://cluster.local/")
    b = proxy_factory(inbound)
    b_port = port_of(b)
    plain = listener(simple_routes("backend"))  # a plaintext port on B's side
    p = proxy_factory(bootstrap([plain], [cluster("backend", [app])]))
    plain_port = port_of(p)
    routes = route_config([vhost("all", ["*"], [
        route(prefix="/wrong-san", cluster="wrong_san"),
        route(prefix="/unknown-ca", cluster="unknown_ca"),
        route(prefix="/plaintext", cluster="plaintext"),
        route(prefix="/no-cert", cluster="no_cert"),
        route(prefix="/", cluster="to_b")])])
    a = proxy_factory(bootstrap(
        [listener(routes, access_logs=[access_log("@LOG:tls@", json_format=TLS_LOG)])],
        [cluster("to_b", [b_port], transport_socket=upstream_tls(certs)),
         cluster("wrong_san", [b_port],
                 transport_socket=upstream_tls(certs, san=SERVER_SAN.replace("server", "other"))),
         cluster("unknown_ca", [b_port], transport_socket=upstream_tls(certs, ca="other_ca.crt")),
         cluster("plaintext", [plain_port], transport_socket=upstream_tls(certs, san=None)),
         cluster("no_cert", [b_port], transport_socket=upstream_tls(certs, cert=False))]))

    status, _, body = a.request("GET", "/echo")
    assert status == 200, body
    e = tls_log(a, 1)[0]
    assert e["u_peer_san"] == SERVER_SAN and e["u_version"] == "TLSv1.3"
    assert e["d_version"] is None  # A's listener is plaintext
    eb = tls_log(b, 1)[0]
    assert eb["d_peer_san"] == CLIENT_SAN and eb["sni"] == SNI
    # large bodies both ways over the same kept-alive TLS connection (many records, writes
    # left pending in the kernel's queue, back-pressure)
    status, _, body = a.request("GET", "/bytes/3000000", timeout=30)
    assert status == 200 and len(body) == 3000000
    status, _, body = a.request("POST", "/upload", body=b"x" * 2000000, timeout=30)
    assert status == 200 and body == b"received=2000000\n"
    st = a.stats()
    assert st["cluster.to_b.upstream_cx_total"] == 1 and st["cluster.to_b.ssl.handshake"] == 1

    status, _, body = a.request("GET", "/wrong-san")
    assert status == 503
    want = ("TLS_error:|268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:"
            "verify cert failed: SAN matcher, certificate SANs are [%s, localhost, 127.0.0.1]:"
            "TLS_error_end" % SERVER_SAN)
    assert body.decode() == ("upstream connect error or disconnect/reset before headers. reset "
                             "reason: remote connection failure, transport failure reason: "
                             + want)
    e = tls_log(a, 4)[3]
    assert e["code"] == 503 and e["flags"] == "UF"
    assert e["tfr"] == want.replace(" ", "_")
    assert e["details"] == ("upstream_reset_before_response_started{remote_connection_failure|"
                            + want.replace(" ", "_") + "}")

    status, _, body = a.request("GET", "/unknown-ca")
    assert status == 503
    e = tls_log(a, 5)[4]
    assert e["tfr"] == ("TLS_error:|268435581:SSL_routines:OPENSSL_internal:"
                        "CERTIFICATE_VERIFY_FAILED:verify_cert_failed:_X509_verify_cert:_"
                        "certificate_verification_error_at_depth_0:_unable_to_get_local_issuer_"
                        "certificate:TLS_error_end")

    status, _, body = a.request("GET", "/plaintext")
    assert status == 503
    e = tls_log(a, 6)[5]
    assert e["tfr"] == ("TLS_error:|268435703:SSL_routines:OPENSSL_internal:"
                        "WRONG_VERSION_NUMBER:TLS_error_end"), e

    # no client certificate for a server that requires one: with TLS 1.3 the client is done
    # with its handshake when the server's alert comes, so the request fails as a connection
    # termination whose transport failure reason is that alert
    status, _, body = a.request("GET", "/no-cert")
    assert status == 503
    want = ("TLS_error:|268436572:SSL routines:OPENSSL_internal:"
            "TLSV1_ALERT_CERTIFICATE_REQUIRED:TLS_error_end")
    assert body.decode() == ("upstream connect error or disconnect/reset before headers. reset "
                             "reason: connection termination, transport failure reason: " + want)
    e = tls_log(a, 7)[6]
    assert e["flags"] == "UC" and e["tfr"] == want.replace(" ", "_"), e

    st = a.stats()
    assert st["cluster.no_cert.ssl.handshake"] == 1
    assert st["cluster.to_b.ssl.handshake"] == 1
    assert st["cluster.wrong_san.ssl.fail_verify_san"] == 1
    assert st["cluster.unknown_ca.ssl.fail_verify_error"] == 1
    assert st["cluster.plaintext.ssl.connection_error"] == 1
    assert st["cluster.wrong_san.upstream_cx_connect_fail"] == 1
    sb = b.stats()
    assert sb["listener.127.0.0.1_%d.ssl.handshake" % b_port] == 1  # one connection
    assert sb["listener.127.0.0.1_%d.ssl.fail_verify_no_cert" % b_port] == 1
    # B read the clients' alerts (bad certificate / unknown CA): connection errors
    expect_stat(b, "listener.127.0.0.1_%d.ssl.connection_error" % b_port, 2)
    assert "ssl.handshake" not in " ".join(k for k in p.stats() if k.startswith("listener."))


# ---------- memory ----------

def _under_asan(exe):
    out = subprocess.run(["ldd", exe], capture_output=True, timeout=10, check=False).stdout
    return b"libasan" in out


def test_idle_tls_connections_memory(certs, app, proxy_factory):
    """300 TLS connections idle after a 20 KB answer each: RSS growth per connection < 18 KiB
    (about 15.5: OpenSSL's connection with its buffers released; no ciphertext buffer, room
    or copy of the answer's records is kept while idle: 20.1 KiB with the memory BIOs)."""
    import ssl
    from proxyfix import proxy_path
    from procs import rss_kb
    if _under_asan(proxy_path()):
        pytest.skip("ASan's shadow memory and quarantine dominate RSS")
    proxy = proxy_factory(tls_listener(certs, app, logs=False, alpn=("http/1.1",)))
    port = port_of(proxy)
    ctx = ssl.create_default_context(cafile=certs["ca.crt"])
    socks = []

    def one(n):
        for _ in range(n):
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                server_hostname="localhost")
            s.sendall(b"GET /bytes/20000 HTTP/1.1\r\nhost: x\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < 20000:
                chunk = s.recv(65536)
                assert chunk, data[:200]
                data += chunk
            socks.append(s)
    try:
        one(30)  # warm-up: allocator and pools reach their steady state
        time.sleep(0.3)
        base = rss_kb(proxy.proc.pid)
        n = 300
        one(n)
        time.sleep(0.5)
        grown = rss_kb(proxy.proc.pid) - base
        assert grown < 18 * n, "RSS grew %d KiB for %d idle TLS connections (%.1f KiB each)" % (
            grown, n, grown / n)
    finally:
        for s in socks:
            s.close()


# ---------- TLS and plaintext on one port (Istio's PERMISSIVE), chosen by tls_inspector ----------

def test_tls_inspector_permissive_port(certs, app, proxy_factory):
    """A listener with envoy.filters.listener.tls_inspector and two chains, as Istio builds a
    PERMISSIVE inbound port: transport_protocol "tls" terminates TLS (mTLS here), "raw_buffer"
    serves plaintext; the bytes the inspector read reach either chain whole."""
    lst = listener(simple_routes("backend"), stat_prefix="tls_chain",
                   access_logs=[access_log("@LOG:tls@", json_format=TLS_LOG)])
    tls_chain = lst["filter_chains"][0]
    tls_chain["filter_chain_match"] = {"transport_protocol": "tls"}
    tls_chain["transport_socket"] = downstream_tls(certs, require=True,
                                                   san_prefix="spiffe://cluster.local/")
    plain = listener(simple_routes("backend"), stat_prefix="plain_chain")["filter_chains"][0]
    plain["filter_chain_match"] = {"transport_protocol": "raw_buffer"}
    lst["filter_chains"] = [tls_chain, plain]
    lst["listener_filters"] = [{"name": "envoy.filters.listener.tls_inspector",
                                "typed_config": {"@type": "type.googleapis.com/envoy.extensions."
                                                 "filters.listener.tls_inspector.v3.TlsInspector"}}]
    proxy = proxy_factory(bootstrap([lst], [cluster("backend", [app])]))
    port = port_of(proxy)
    rc, code, body, err = curl(port, "/echo", "--cacert", certs["ca.crt"],
                               "--cert", certs["client.crt"], "--key", certs["client.key"])
    assert rc == 0 and code == 200, err
    e = tls_log(proxy, 1)[0]
    assert e["d_peer_san"] == CLIENT_SAN and e["sni"] == "localhost"
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                        "http://127.0.0.1:%d/echo" % port], capture_output=True, text=True,
                       timeout=20)
    assert r.stdout == "200", r
    st = proxy.wait_stat("http.plain_chain.downstream_rq_completed", 1)
    assert st["http.tls_chain.downstream_rq_completed"] == 1
    assert st["tls_inspector.tls_found"] == 1
    assert st["tls_inspector.tls_not_found"] == 1
    assert st["listener.127.0.0.1_%d.ssl.handshake" % port] == 1
