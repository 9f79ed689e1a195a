"""Certificates about to expire are visible before they break (issue 17 item 6): weft-pilot warns
(log, once, and /debug/config_errors at level warning with the days left and the NotAfter) when
the CA's root or signing certificate has less than 20 % of its lifetime left (Istio's
CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE; weft applies it to a plug-in CA too), and
when a gateway credential Secret's certificate is expired (IST0161) or expires within 30 days
(WFT0003). Certificates are made in the test (python3-cryptography) with chosen validity.
"""
import base64
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from test_pilot import get_json, pilot_exe  # noqa: F401
from test_pilot_ca import start, stop

NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
DAY = datetime.timedelta(days=1)


def cert(cn, nb, na, issuer=None, ca=False, san=None):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "weft-test"),
                         x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    b = (x509.CertificateBuilder().subject_name(subject)
         .issuer_name(issuer[0].subject if issuer else subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(nb).not_valid_after(na))
    if ca:
        b = b.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                          False), critical=True)
    if san:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
    c = b.sign(issuer[1] if issuer else key, hashes.SHA256())
    return c, key


def pem(c):
    return c.public_bytes(serialization.Encoding.PEM)


def key_pem(k):
    return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                           serialization.NoEncryption())


def b64(data):
    return base64.b64encode(data).decode()


def utc(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public-gw, namespace: edge}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: https-admin, protocol: HTTPS}
    hosts: [admin.example.internal]
    tls: {mode: SIMPLE, credentialName: admin-cert}
  - port: {number: 443, name: https-shop, protocol: HTTPS}
    hosts: [shop.example.internal]
    tls: {mode: SIMPLE, credentialName: shop-cert}
  - port: {number: 443, name: https-ok, protocol: HTTPS}
    hosts: [ok.example.internal]
    tls: {mode: SIMPLE, credentialName: ok-cert}
---
apiVersion: v1
kind: Pod
metadata: {name: ingress-1, namespace: edge, labels: {istio: ingressgateway}}
spec: {containers: [{name: istio-proxy}]}
"""


def tls_secret(name, c, k):
    return ("---\napiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: edge}\n"
            "type: kubernetes.io/tls\ndata: {tls.crt: %s, tls.key: %s}\n"
            % (name, b64(pem(c)), b64(key_pem(k))))


def test_ca_and_gateway_certificates_near_their_end(pilot_exe, tmp_path):  # noqa: F811
    # plug-in CA: root 100 days long, 10 left (10 % < 20 %); intermediate 55 days, 5 left
    root = cert("Root CA", NOW - 90 * DAY, NOW + 10 * DAY, ca=True)
    inter = cert("Intermediate CA", NOW - 50 * DAY, NOW + 5 * DAY, issuer=root, ca=True)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "cacerts.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: cacerts, namespace: istio-system}\n"
        "data:\n  ca-cert.pem: %s\n  ca-key.pem: %s\n  root-cert.pem: %s\n  cert-chain.pem: %s\n"
        % (b64(pem(inter[0])), b64(key_pem(inter[1])), b64(pem(root[0])),
           b64(pem(inter[0]) + pem(root[0]))))
    admin = cert("admin", NOW - 30 * DAY, NOW - 2 * DAY, issuer=root, san="admin.example.internal")
    shop = cert("shop", NOW - DAY, NOW + 10 * DAY, issuer=root, san="shop.example.internal")
    ok = cert("ok", NOW - DAY, NOW + 60 * DAY, issuer=root, san="ok.example.internal")
    (cfg / "gw.yaml").write_text(GATEWAY + tls_secret("admin-cert", *admin)
                                 + tls_secret("shop-cert", *shop) + tls_secret("ok-cert", *ok))
    proc = start(pilot_exe, tmp_path, tmp_path / "ca", cfg=cfg)
    try:
        errs = get_json(proc.mon, "/debug/config_errors")
        # a change elsewhere makes another snapshot: nothing is logged twice
        (cfg / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
        import time
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cz = get_json(proc.mon, "/debug/configz")
            if any(r["kind"] == "Namespace" for r in cz["resources"]):
                break
            time.sleep(0.1)
        again = get_json(proc.mon, "/debug/config_errors")
    finally:
        stop(proc)
    log = proc.stderr_text()
    ca = {e["resource"]: e for e in errs if e.get("kind") == "CA"}
    assert set(ca) == {"CA root certificate", "CA signing certificate"}, errs
    r, s = ca["CA root certificate"], ca["CA signing certificate"]
    assert r["level"] == "warning" and r["code"] == "WFT0003", r
    assert r["not_after"] == utc(NOW + 10 * DAY) and r["days_left"] in (9, 10), r
    assert s["not_after"] == utc(NOW + 5 * DAY) and s["days_left"] in (4, 5), s
    assert ("expires in %d days (NotAfter %s): less than 20%% of its lifetime of 100 days is left "
            "(weft applies Istio's self-signed root rule to a plug-in CA)"
            % (r["days_left"], r["not_after"])) in r["message"], r
    assert "plug-in CA" in s["message"] and "lifetime of 55 days" in s["message"], s
    for e in (r, s):
        assert log.count(e["message"]) == 1, log
    gw = {e["field"]: e for e in errs if e.get("resource") == "Gateway edge/public-gw"}
    assert set(gw) == {"spec.servers[0].tls.credentialName",
                       "spec.servers[1].tls.credentialName"}, errs  # ok-cert: 60 days, quiet
    expired, soon = gw["spec.servers[0].tls.credentialName"], gw["spec.servers[1].tls.credentialName"]
    assert expired["code"] == "IST0161" and expired["level"] == "warning", expired
    assert ("the certificate of credentialName secret edge/admin-cert expired 2 days ago "
            "(NotAfter %s)" % utc(NOW - 2 * DAY)) in expired["message"], expired
    assert soon["code"] == "WFT0003", soon
    assert ("the certificate of credentialName secret edge/shop-cert expires in " in soon["message"]
            and "(NotAfter %s; weft warns 30 days ahead)" % utc(NOW + 10 * DAY)
            in soon["message"]), soon
    for e in (expired, soon):
        assert log.count(e["message"]) == 1, log
    assert len(again) == len(errs), again  # still listed after the other change

