"""x-forwarded-client-cert from the HTTP connection manager (Envoy's mutateXfccRequestHeader;
security.md §3.3: Istio's inbound HCM uses APPEND_FORWARD with subject/uri/dns, gateways
SANITIZE_SET): curl --cert through a TLS listener that requires a client certificate, to a
weft-app that echoes the headers it got. Also: the default (SANITIZE) removes a client's forged
header on plaintext and TLS listeners alike; a connection without a client certificate never
gets one; ALWAYS_FORWARD_ONLY passes it through. The Hash is compared with openssl's SHA-256
of the client certificate's DER.

Certificates come from test_proxy_tls's fixture (the openssl CLI); every process binds
loopback on free ports and is stopped at teardown.
"""
import hashlib
import http.client
import json
import ssl
import subprocess

from proxyfix import bootstrap, cluster, listener, proxy_factory, simple_routes
from test_proxy_tls import CLIENT_SAN, SERVER_SAN, app, certs, curl, downstream_tls, port_of

assert proxy_factory and app and certs  # fixtures, imported for pytest

XFCC = "x-forwarded-client-cert"


def der_sha256(path):
    der = subprocess.run(["openssl", "x509", "-in", path, "-outform", "DER"], check=True,
                         capture_output=True, timeout=30).stdout
    return hashlib.sha256(der).hexdigest()


def xfcc_bootstrap(certs, app_port, tls=True, require=True, **hcm):
    lst = listener(simple_routes("backend"), **hcm)
    if tls:
        lst["filter_chains"][0]["transport_socket"] = downstream_tls(certs, require=require)
    return bootstrap([lst], [cluster("backend", [app_port])])


def echoed(body):
    return [v for k, v in json.loads(body)["headers"] if k.lower() == XFCC]


def auth(certs, cert=True):
    args = ["--cacert", certs["ca.crt"]]
    if cert:
        args += ["--cert", certs["client.crt"], "--key", certs["client.key"]]
    return args


def test_append_forward_istio_inbound(certs, app, proxy_factory):
    p = proxy_factory(xfcc_bootstrap(
        certs, app, forward_client_cert_details="APPEND_FORWARD",
        set_current_client_cert_details={"subject": True, "dns": True, "uri": True}))
    want = ('By=%s;Hash=%s;Subject="CN=client,O=weft-test";URI=%s'
            % (SERVER_SAN, der_sha256(certs["client.crt"]), CLIENT_SAN))
    rc, code, body, err = curl(port_of(p), "/echo", *auth(certs))
    assert rc == 0 and code == 200, err
    assert echoed(body) == [want]
    # a header the client sent is kept, this hop appended after a ","
    rc, code, body, err = curl(port_of(p), "/echo", *auth(certs), "-H", XFCC + ": By=spiffe://a")
    assert rc == 0 and code == 200, err
    assert echoed(body) == ["By=spiffe://a," + want]
    # several requests on one kept-alive connection (its element is built once)
    ctx = ssl.create_default_context(cafile=certs["ca.crt"])
    ctx.load_cert_chain(certs["client.crt"], certs["client.key"])
    conn = http.client.HTTPSConnection("localhost", port_of(p), context=ctx, timeout=10)
    try:
        for sent in (None, "By=spiffe://b", None):
            conn.request("GET", "/echo", headers={XFCC: sent} if sent else {})
            r = conn.getresponse()
            assert r.status == 200
            assert echoed(r.read()) == [sent + "," + want if sent else want]
    finally:
        conn.close()
    assert p.stats()["listener.127.0.0.1_%d.ssl.handshake" % port_of(p)] == 3


def test_sanitize_set_with_cert_and_chain(certs, app, proxy_factory):
    p = proxy_factory(xfcc_bootstrap(
        certs, app, forward_client_cert_details="SANITIZE_SET",
        set_current_client_cert_details={"cert": True, "uri": True}))
    rc, code, body, err = curl(port_of(p), "/echo", *auth(certs), "-H", XFCC + ": By=forged")
    assert rc == 0 and code == 200, err
    [v] = echoed(body)
    parts = v.split(";")
    assert parts[0] == "By=" + SERVER_SAN and parts[1] == "Hash=" + der_sha256(certs["client.crt"])
    assert parts[2].startswith('Cert="-----BEGIN%20CERTIFICATE-----%0A') and parts[2].endswith('"')
    with open(certs["client.crt"]) as f:
        pem = f.read()
    enc = (pem.replace("\n", "%0A").replace(" ", "%20").replace("+", "%2B").replace("/", "%2F")
           .replace("=", "%3D"))
    assert parts[2] == 'Cert="%s"' % enc
    assert parts[3] == "URI=" + CLIENT_SAN and len(parts) == 4


def test_default_sanitize_and_no_client_cert(certs, app, proxy_factory):
    forged = ("-H", XFCC + ": By=spiffe://forged;URI=spiffe://admin")
    # the default removes it on a TLS listener with a client certificate
    p = proxy_factory(xfcc_bootstrap(certs, app))
    rc, code, body, err = curl(port_of(p), "/echo", *auth(certs), *forged)
    assert rc == 0 and code == 200, err
    assert echoed(body) == []
    # and on a plaintext listener
    plain = proxy_factory(xfcc_bootstrap(certs, app, tls=False))
    status, _, body = plain.request("GET", "/echo", headers={XFCC: "By=spiffe://forged"})
    assert status == 200 and echoed(body) == []
    # APPEND_FORWARD, but TLS without a client certificate: not mutual TLS, removed
    q = proxy_factory(xfcc_bootstrap(certs, app, require=False,
                                     forward_client_cert_details="APPEND_FORWARD"))
    rc, code, body, err = curl(port_of(q), "/echo", *auth(certs, cert=False), *forged)
    assert rc == 0 and code == 200, err
    assert echoed(body) == []
    # ALWAYS_FORWARD_ONLY: passed through even in plaintext
    a = proxy_factory(xfcc_bootstrap(certs, app, tls=False,
                                     forward_client_cert_details="ALWAYS_FORWARD_ONLY"))
    status, _, body = a.request("GET", "/echo", headers={XFCC: "By=spiffe://forged"})
    assert status == 200 and echoed(body) == ["By=spiffe://forged"]
