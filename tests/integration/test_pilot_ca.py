"""weft-pilot's CA as a process (reference security.md §1): Istio's CSR service
istio.v1.auth.IstioCertificateService/CreateCertificate called with a real gRPC client (grpcio,
Debian's python3-grpcio; the messages are built from a descriptor with python3-protobuf, so the
wire encoding is checked independently of weft's), the certificate checked with `openssl verify`
and `openssl x509 -text`; Bearer tokens from `weft-pilot create-token`; Istio's errors and
citadel_server_* metrics; the root kept across a restart on the same --ca-dir; a plug-in CA from
a cacerts Secret with its intermediate; MeshConfig trustDomain; the istio-ca-root-cert
ConfigMaps on /debug/istio-ca-root-cert.
"""
import base64
import datetime
import os
import re
import subprocess

import pytest

from procs import crash_report, start_process, stop_process
from test_pilot import get, get_json, pilot_exe, poll  # noqa: F401

grpc = pytest.importorskip("grpc")
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2  # noqa: E402

CSR_PATH = "/istio.v1.auth.IstioCertificateService/CreateCertificate"


def _messages():
    """IstioCertificateRequest / IstioCertificateResponse (istio/api security/v1alpha1/ca.proto)
    from a descriptor, in a pool of their own."""
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="weft_test_ca.proto", package="istio.v1.auth",
                                             syntax="proto3",
                                             dependency=["google/protobuf/struct.proto"])
    req = fdp.message_type.add(name="IstioCertificateRequest")
    req.field.add(name="csr", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    req.field.add(name="validity_duration", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    req.field.add(name="metadata", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".google.protobuf.Struct")
    resp = fdp.message_type.add(name="IstioCertificateResponse")
    resp.field.add(name="cert_chain", number=1, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(fdp.SerializeToString())
    factory = message_factory.MessageFactory(pool)
    return (factory.GetPrototype(pool.FindMessageTypeByName("istio.v1.auth.IstioCertificateRequest")),
            factory.GetPrototype(pool.FindMessageTypeByName("istio.v1.auth.IstioCertificateResponse")))


Req, Resp = _messages()


def openssl(*args, check=True):
    r = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def make_csr(tmp_path, kind):
    """A CSR (PEM text) for a new key; its own subject and SAN must be ignored by the CA."""
    key, csr = tmp_path / ("%s.key" % kind), tmp_path / ("%s.csr" % kind)
    newkey = ["-newkey", "rsa:2048"] if kind == "rsa" else \
        ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    openssl("req", "-new", *newkey, "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=evil",
            "-addext", "subjectAltName=URI:spiffe://evil.example/ns/x/sa/y")
    return csr.read_text()


def start(pilot_exe, tmp_path, ca_dir, extra=(), cfg=None, env=None):  # noqa: F811
    cfg = cfg or tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    proc, addrs = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir", ca_dir,
                                 "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0",
                                 *extra], count=2,
                                env=dict(os.environ, **env) if env else None)
    proc.xds, proc.mon = addrs[0][1], addrs[1][1]
    try:  # the CA is set up with the first snapshot, after the listeners
        poll(lambda: get(proc.mon, "/ready")[0] == 200, timeout=20)
    except BaseException:
        stop_process(proc)
        raise
    return proc


def stop(proc):
    rc = stop_process(proc)
    assert crash_report(proc) is None, proc.stderr_text()
    assert rc == 0, proc.stderr_text()


@pytest.fixture
def pilot(pilot_exe, tmp_path):  # noqa: F811
    proc = start(pilot_exe, tmp_path, tmp_path / "ca")
    yield proc
    stop(proc)


def token(pilot_exe, ca_dir, ns, sa, *extra):  # noqa: F811
    r = subprocess.run([pilot_exe, "create-token", sa, "-n", ns, "--ca-dir", str(ca_dir),
                        *extra], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def create_certificate(port, csr, tok=None, ttl=0, impersonate=None):
    req = Req(csr=csr, validity_duration=ttl)
    if impersonate:
        req.metadata.fields["ImpersonatedIdentity"].string_value = impersonate
    md = [("authorization", "Bearer " + tok)] if tok else []
    with grpc.insecure_channel("127.0.0.1:%d" % port,
                               options=[("grpc.enable_http_proxy", 0)]) as ch:
        call = ch.unary_unary(CSR_PATH, request_serializer=Req.SerializeToString,
                              response_deserializer=Resp.FromString)
        return list(call(req, metadata=md, timeout=20).cert_chain)


def rpc_error(*args, **kw):
    with pytest.raises(grpc.RpcError) as e:
        create_certificate(*args, **kw)
    return e.value.code(), e.value.details()


def metric(port, name):
    _, body = get(port, "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
    return float(m.group(1)) if m else None


def x509_text(path):
    return openssl("x509", "-noout", "-text", "-in", path).stdout


def not_before_after(path):
    out = openssl("x509", "-noout", "-startdate", "-enddate", "-in", path).stdout
    fmt = "%b %d %H:%M:%S %Y %Z"
    nb = re.search(r"notBefore=(.*)", out).group(1).replace("  ", " ")
    na = re.search(r"notAfter=(.*)", out).group(1).replace("  ", " ")
    return (datetime.datetime.strptime(nb, fmt).replace(tzinfo=datetime.timezone.utc),
            datetime.datetime.strptime(na, fmt).replace(tzinfo=datetime.timezone.utc))


def write_chain(tmp_path, chain, name):
    leaf, root = tmp_path / (name + "-leaf.pem"), tmp_path / (name + "-root.pem")
    leaf.write_text(chain[0])
    root.write_text(chain[-1])
    inter = None
    if len(chain) == 3:
        inter = tmp_path / (name + "-chain.pem")
        inter.write_text(chain[1])
    return leaf, inter, root


def verify(leaf, inter, root):
    args = ["verify", "-purpose", "sslclient", "-CAfile", root]
    if inter:
        args += ["-untrusted", inter]
    r = openssl(*args, leaf, check=False)
    assert r.returncode == 0 and ": OK" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("kind", ["rsa", "ecdsa"])
def test_csr_issues_workload_certificate(pilot, pilot_exe, tmp_path, kind):  # noqa: F811
    ca = tmp_path / "ca"
    assert oct(os.stat(ca / "ca-key.pem").st_mode & 0o777) == "0o600"
    tok = token(pilot_exe, ca, "foo", "bar")
    chain = create_certificate(pilot.xds, make_csr(tmp_path, kind), tok, ttl=3600)
    assert len(chain) == 2  # self-signed root: leaf, root (empty cert-chain.pem left out)
    assert chain[-1] == (ca / "root-cert.pem").read_text()
    leaf, inter, root = write_chain(tmp_path, chain, kind)
    verify(leaf, inter, root)
    text = x509_text(leaf)
    assert re.search(r"X509v3 Subject Alternative Name: critical\s+"
                     r"URI:spiffe://cluster.local/ns/foo/sa/bar\s", text), text
    assert "evil" not in text
    assert re.search(r"Subject: *\n", text), text  # empty subject
    assert re.search(r"X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment\s", text)
    assert re.search(r"X509v3 Extended Key Usage: *\n\s+TLS Web Server Authentication, "
                     r"TLS Web Client Authentication", text), text
    assert re.search(r"X509v3 Basic Constraints: critical\s+CA:FALSE", text), text
    assert ("id-ecPublicKey" if kind == "ecdsa" else "rsaEncryption") in text
    nb, na = not_before_after(leaf)
    assert (na - nb).total_seconds() == 3600 + 120  # NotBefore = now - 2 min
    assert abs((nb - datetime.datetime.now(datetime.timezone.utc)).total_seconds() + 120) < 30
    assert metric(pilot.mon, "citadel_server_csr_count") == 1
    assert metric(pilot.mon, "citadel_server_success_cert_issuance_count") == 1


def test_default_ttl_and_max_ttl(pilot, pilot_exe, tmp_path):  # noqa: F811
    tok = token(pilot_exe, tmp_path / "ca", "default", "sleep")
    chain = create_certificate(pilot.xds, make_csr(tmp_path, "ecdsa"), tok)  # ttl 0: default
    leaf, _, _ = write_chain(tmp_path, chain, "d")
    nb, na = not_before_after(leaf)
    assert (na - nb).total_seconds() == 24 * 3600 + 120
    code, details = rpc_error(pilot.xds, make_csr(tmp_path, "ecdsa"), tok, ttl=91 * 86400)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details == ("CSR signing error (requested TTL 2184h0m0s is greater than the max "
                       "allowed TTL 2160h0m0s)")
    code, details = rpc_error(pilot.xds, "not a csr", tok)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details == "CSR signing error (certificate signing request is not properly encoded)"
    _, body = get(pilot.mon, "/metrics")
    assert 'citadel_server_csr_sign_err_count{error="TTL_ERROR"} 1' in body
    assert 'citadel_server_csr_sign_err_count{error="CSR_ERROR"} 1' in body


def test_bad_token_is_unauthenticated(pilot, pilot_exe, tmp_path):  # noqa: F811
    csr = make_csr(tmp_path, "ecdsa")
    tok = token(pilot_exe, tmp_path / "ca", "foo", "bar")
    head, body, sig = tok.split(".")
    other = token(pilot_exe, tmp_path / "other-ca", "foo", "bar")  # another key
    claims = base64.urlsafe_b64encode(b'{"aud":["istio-ca"],"exp":9999999999,'
                                      b'"sub":"system:serviceaccount:kube-system:admin"}')
    forged = "%s.%s.%s" % (head, claims.decode().rstrip("="), sig)
    for bad in (None, "garbage", other, forged, token(pilot_exe, tmp_path / "ca", "foo", "bar",
                                                      "--duration", "1") + "x"):
        code, details = rpc_error(pilot.xds, csr, bad)
        assert code == grpc.StatusCode.UNAUTHENTICATED
        assert details == "request authenticate failure"
    code, details = rpc_error(pilot.xds, csr, tok, impersonate="spiffe://cluster.local/ns/a/sa/b")
    assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED,
                               "request impersonation authentication failure")
    assert metric(pilot.mon, "citadel_server_authentication_failure_count") == 6
    assert metric(pilot.mon, "citadel_server_csr_count") == 6
    assert metric(pilot.mon, "citadel_server_success_cert_issuance_count") == 0
    assert "Failed to authenticate client from 127.0.0.1:" in pilot.stderr_text()


def test_restart_keeps_the_root(pilot_exe, tmp_path):  # noqa: F811
    ca = tmp_path / "ca"
    first = start(pilot_exe, tmp_path, ca)
    try:
        tok = token(pilot_exe, ca, "foo", "bar")
        chain = create_certificate(first.xds, make_csr(tmp_path, "rsa"), tok)
        expiry = metric(first.mon, "citadel_server_root_cert_expiry_timestamp")
    finally:
        stop(first)
    assert "CASecret istio-ca-secret not found, will create one" in first.stderr_text()
    root_file = (ca / "root-cert.pem").read_text()
    second = start(pilot_exe, tmp_path, ca)
    try:
        assert metric(second.mon, "citadel_server_root_cert_expiry_timestamp") == expiry
        left = metric(second.mon, "citadel_server_root_cert_expiry_seconds")
        assert abs(left - (expiry - datetime.datetime.now().timestamp())) < 30
        cm = get_json(second.mon, "/debug/istio-ca-root-cert?namespace=default")
        assert cm["data"]["root-cert.pem"] == root_file == chain[-1]
        chain2 = create_certificate(second.xds, make_csr(tmp_path, "ecdsa"), tok)
        assert chain2[-1] == chain[-1]
    finally:
        stop(second)
    assert "will create one" not in second.stderr_text()
    assert "Using istiod file format for signing ca files" in second.stderr_text()
    leaf, inter, root = write_chain(tmp_path, chain, "old")
    verify(leaf, inter, root)  # the old leaf still verifies with the kept root
    years = (expiry - datetime.datetime.now().timestamp()) / (365.25 * 86400)
    assert 9.9 < years < 10.1  # 3650 days


def make_plugin_ca(tmp_path):
    """root -> intermediate (the signing CA), as Istio's plug-in certificates tooling makes them."""
    d = tmp_path / "plugin"
    d.mkdir()
    ext = d / "ext.cnf"
    ext.write_text("[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,"
                   "cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\n"
                   "authorityKeyIdentifier=keyid:always\n")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d / "root-key.pem",
            "-out", d / "root-cert.pem", "-days", "30", "-subj", "/O=Istio/CN=Root CA")
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", d / "ca-key.pem",
            "-out", d / "ca.csr", "-subj", "/O=Istio/CN=Intermediate CA/L=cluster1")
    openssl("x509", "-req", "-in", d / "ca.csr", "-CA", d / "root-cert.pem", "-CAkey",
            d / "root-key.pem", "-CAcreateserial", "-days", "20", "-out", d / "ca-cert.pem",
            "-extfile", ext, "-extensions", "ca")
    (d / "cert-chain.pem").write_text((d / "ca-cert.pem").read_text() +
                                      (d / "root-cert.pem").read_text())
    return d


def secret_yaml(d, keys):
    data = "".join("  %s: %s\n" % (k, base64.b64encode((d / f).read_bytes()).decode())
                   for k, f in keys)
    return ("apiVersion: v1\nkind: Secret\nmetadata: {name: cacerts, namespace: istio-system}\n"
            "type: Opaque\ndata:\n" + data)


def test_plugin_cacerts_secret(pilot_exe, tmp_path):  # noqa: F811
    d = make_plugin_ca(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "cacerts.yaml").write_text(secret_yaml(d, [(k, k) for k in (
        "ca-cert.pem", "ca-key.pem", "root-cert.pem", "cert-chain.pem")]))
    (cfg / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    proc = start(pilot_exe, tmp_path, tmp_path / "ca", cfg=cfg)
    try:
        tok = token(pilot_exe, tmp_path / "ca", "shop", "cart")
        chain = create_certificate(proc.xds, make_csr(tmp_path, "ecdsa"), tok)
        lst = get_json(proc.mon, "/debug/istio-ca-root-cert")
        assert get(proc.mon, "/debug/istio-ca-root-cert?namespace=nope")[0] == 404
    finally:
        stop(proc)
    assert "Using istiod file format for signing ca files" in proc.stderr_text()
    assert not (tmp_path / "ca" / "root-cert.pem").exists()  # no self-signed root made
    root = (d / "root-cert.pem").read_text()
    assert len(chain) == 3 and chain[1] == (d / "cert-chain.pem").read_text() and chain[2] == root
    leaf, inter, rootf = write_chain(tmp_path, chain, "plug")
    verify(leaf, inter, rootf)
    assert "Issuer: O = Istio, CN = Intermediate CA" in x509_text(leaf)
    assert [i["metadata"]["namespace"] for i in lst["items"]] == ["default", "istio-system",
                                                                  "shop"]
    for item in lst["items"]:
        assert item["kind"] == "ConfigMap" and item["metadata"]["name"] == "istio-ca-root-cert"
        assert item["data"] == {"root-cert.pem": root}


def test_plugin_cacerts_secret_in_pilots_namespace(pilot_exe, tmp_path):  # noqa: F811
    """istiod reads the plug-in cacerts Secret from its own namespace (POD_NAMESPACE): installed
    in `mesh`, the Secret there is the CA and one in istio-system is not; the root ConfigMaps
    cover that namespace."""
    d = make_plugin_ca(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    keys = [(k, k) for k in ("ca-cert.pem", "ca-key.pem", "root-cert.pem", "cert-chain.pem")]
    (cfg / "cacerts.yaml").write_text(secret_yaml(d, keys).replace("namespace: istio-system",
                                                                   "namespace: mesh"))
    other = tmp_path / "other"
    other.mkdir()
    (cfg / "ignored.yaml").write_text(secret_yaml(make_plugin_ca(other), keys))
    proc = start(pilot_exe, tmp_path, tmp_path / "ca", cfg=cfg, env={"POD_NAMESPACE": "mesh"})
    try:
        tok = token(pilot_exe, tmp_path / "ca", "shop", "cart")
        chain = create_certificate(proc.xds, make_csr(tmp_path, "ecdsa"), tok)
        lst = get_json(proc.mon, "/debug/istio-ca-root-cert")
    finally:
        stop(proc)
    assert chain[-1] == (d / "root-cert.pem").read_text()
    assert "mesh" in [i["metadata"]["namespace"] for i in lst["items"]]


def test_incomplete_plugin_bundle_refuses_to_start(pilot_exe, tmp_path):  # noqa: F811
    d = make_plugin_ca(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "cacerts.yaml").write_text(secret_yaml(d, [("ca-cert.pem", "ca-cert.pem"),
                                                      ("ca-key.pem", "ca-key.pem")]))
    r = subprocess.run([pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca",
                        "--grpcAddr", "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "incomplete signing CA bundle detected at Secret istio-system/cacerts" in r.stderr


def test_kubernetes_tls_layout_and_trust_domain(pilot_exe, tmp_path):  # noqa: F811
    d = make_plugin_ca(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (d / "tls.crt").write_text((d / "ca-cert.pem").read_text())
    (cfg / "cacerts.yaml").write_text(secret_yaml(d, [("tls.crt", "tls.crt"),
                                                      ("tls.key", "ca-key.pem"),
                                                      ("ca.crt", "root-cert.pem")]))
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text("trustDomain: example.org\n")
    proc = start(pilot_exe, tmp_path, tmp_path / "ca", cfg=cfg, extra=("--meshConfig", mesh))
    try:
        tok = token(pilot_exe, tmp_path / "ca", "foo", "bar")
        chain = create_certificate(proc.xds, make_csr(tmp_path, "rsa"), tok)
    finally:
        stop(proc)
    assert "Using kubernetes.io/tls secret type for signing ca files" in proc.stderr_text()
    assert len(chain) == 3 and chain[1] == (d / "tls.crt").read_text()
    leaf, inter, root = write_chain(tmp_path, chain, "tls")
    verify(leaf, inter, root)
    assert "URI:spiffe://example.org/ns/foo/sa/bar" in x509_text(leaf)


def test_self_signed_root_subject_is_the_trust_domain(pilot_exe, tmp_path):  # noqa: F811
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text("trustDomain: corp.example\n")
    proc = start(pilot_exe, tmp_path, tmp_path / "ca", extra=("--meshConfig", mesh))
    stop(proc)
    text = x509_text(tmp_path / "ca" / "root-cert.pem")
    assert "Subject: O = corp.example" in text
    assert re.search(r"X509v3 Basic Constraints: critical\s+CA:TRUE", text)
    assert "Public-Key: (2048 bit)" in text and "rsaEncryption" in text


def test_create_token_command(pilot_exe, tmp_path):  # noqa: F811
    tok = token(pilot_exe, tmp_path / "ca", "ns1", "sa1")
    head, claims, _ = tok.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    import json
    assert json.loads(base64.urlsafe_b64decode(pad(head))) == {"alg": "HS256", "typ": "JWT"}
    c = json.loads(base64.urlsafe_b64decode(pad(claims)))
    assert c["sub"] == "system:serviceaccount:ns1:sa1" and c["aud"] == ["istio-ca"]
    assert c["kubernetes.io"] == {"namespace": "ns1", "serviceaccount": {"name": "sa1"}}
    assert c["exp"] - c["iat"] == 43200
    assert oct(os.stat(tmp_path / "ca" / "token-signing-key").st_mode & 0o777) == "0o600"
    r = subprocess.run([pilot_exe, "create-token", "Bad_Name", "--ca-dir", tmp_path / "ca"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "Bad_Name" in r.stderr
    r = subprocess.run([pilot_exe, "create-token", "sa1", "-o", "json", "--ca-dir",
                        tmp_path / "ca"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and json.loads(r.stdout)["kind"] == "TokenRequest"


def test_cacerts_secret_followed_at_runtime(pilot_exe, tmp_path):  # noqa: F811
    """Adding the Secret switches to the plug-in CA, a bad new bundle keeps the CA in use,
    removing the Secret goes back to the directory's root (kept, not a new one)."""
    d = make_plugin_ca(tmp_path)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    proc = start(pilot_exe, tmp_path, tmp_path / "ca", cfg=cfg,
                 extra=("--debounce-after-ms", "50"))
    root_of = lambda: get_json(proc.mon, "/debug/istio-ca-root-cert?namespace=default")[  # noqa
        "data"]["root-cert.pem"]
    try:
        dir_root = (tmp_path / "ca" / "root-cert.pem").read_text()
        assert root_of() == dir_root
        secret = cfg / "cacerts.yaml"
        secret.write_text(secret_yaml(d, [(k, k) for k in (
            "ca-cert.pem", "ca-key.pem", "root-cert.pem", "cert-chain.pem")]))
        plug_root = (d / "root-cert.pem").read_text()
        poll(lambda: root_of() == plug_root, timeout=15)
        tok = token(pilot_exe, tmp_path / "ca", "foo", "bar")
        assert len(create_certificate(proc.xds, make_csr(tmp_path, "ecdsa"), tok)) == 3
        # a key that does not match the signing cert: refused, the plug-in CA stays
        secret.write_text(secret_yaml(d, [("ca-cert.pem", "ca-cert.pem"),
                                          ("ca-key.pem", "root-key.pem"),
                                          ("root-cert.pem", "root-cert.pem"),
                                          ("cert-chain.pem", "cert-chain.pem")]))
        poll(lambda: "keeping the CA in use" in proc.stderr_text(), timeout=15)
        assert root_of() == plug_root
        secret.unlink()
        poll(lambda: root_of() == dir_root, timeout=15)
        assert len(create_certificate(proc.xds, make_csr(tmp_path, "ecdsa"), tok)) == 2
    finally:
        stop(proc)
    assert "does not match the signing certificate" in proc.stderr_text()


def test_sigterm_while_the_root_is_made_exits_cleanly(pilot_exe, tmp_path):  # noqa: F811
    """Pilot prints its ports before its first snapshot, which makes a new CA root (RSA key
    generation): a SIGTERM sent as soon as the ports are known ends it with exit 0 (it was
    killed by the signal, -15, before the handler was installed)."""
    for i in range(3):
        cfg = tmp_path / ("cfg%d" % i)
        cfg.mkdir()
        proc, _ = start_process([pilot_exe, "--config-dir", cfg, "--ca-dir",
                                 tmp_path / ("ca%d" % i), "--grpcAddr", "127.0.0.1:0",
                                 "--monitoringAddr", "127.0.0.1:0"], count=2)
        stop(proc)
