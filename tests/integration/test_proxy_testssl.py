"""testssl.sh (Debian package testssl.sh) against weft-proxy's TLS listeners (issue 17
acceptance: no finding of severity HIGH or CRITICAL).

Two listeners as a gateway's servers are configured when the operator sets nothing but the
certificate (Envoy's defaults for tls_params, cipher_suites and ALPN http/1.1): one with an
ECDSA P-256 certificate, one with RSA 2048. testssl.sh runs its protocol, cipher, server
preference, forward secrecy and vulnerability checks (--fast) with the test root added as
trusted (--add-ca), and its JSON findings are read: none may be HIGH or CRITICAL. The
certificates are made with the openssl CLI the way a public one is issued (90 days, a CRL
distribution point, serverAuth), so that the certificate checks judge the proxy rather than a
throw-away test certificate.

testssl.sh takes about a minute per listener; both run in parallel.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from procs import running_apps
from proxyfix import bootstrap, cluster, listener, proxy_factory, simple_routes

assert proxy_factory  # fixture, imported for pytest

TLS = "envoy.transport_sockets.tls"
DTC = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def _make_certs(d):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.crt", "-days", "365", "-subj", "/O=weft-test/CN=weft-test-root", cwd=d)
    for name, keyargs in (("ecdsa", ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                          ("rsa", ["rsa:2048"])):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("basicConstraints=critical,CA:FALSE\n"
                    "keyUsage=critical,digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=serverAuth\n"
                    "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                    "crlDistributionPoints=URI:http://127.0.0.1/weft-test.crl\n")
        _openssl("req", "-newkey", *keyargs, "-nodes", "-keyout", name + ".key", "-out",
                 name + ".csr", "-subj", "/O=weft-test/CN=localhost", cwd=d)
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "90", "-sha256", "-out", name + ".crt",
                 "-extfile", name + ".ext", cwd=d)


def _tls_listener(d, name, app_port):
    lst = listener(simple_routes("backend"), name=name)
    lst["filter_chains"][0]["transport_socket"] = {"name": TLS, "typed_config": {
        "@type": DTC, "common_tls_context": {
            "tls_certificates": [{"certificate_chain": {"filename": os.path.join(d, name + ".crt")},
                                  "private_key": {"filename": os.path.join(d, name + ".key")}}],
            "alpn_protocols": ["http/1.1"]}}}
    return lst


def _testssl(port, ca, out):
    cmd = ["testssl", "--quiet", "--color", "0", "--warnings", "off", "--fast",
           "--add-ca", ca, "--jsonfile", out, "127.0.0.1:%d" % port]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    return r, out


def _findings(path):
    with open(path) as f:
        data = json.load(f)
    return data if isinstance(data, list) else data.get("scanResult", [])


def test_no_high_or_critical_finding(proxy_factory):
    if not shutil.which("testssl"):
        pytest.fail("testssl.sh is needed (Debian package testssl.sh; scripts/setup installs it)")
    d = tempfile.mkdtemp(prefix="weft-testssl-")
    try:
        _make_certs(d)
        with running_apps("backend") as ports:
            bs = bootstrap([_tls_listener(d, "ecdsa", ports["backend"]),
                            _tls_listener(d, "rsa", ports["backend"])],
                           [cluster("backend", [ports["backend"]])])
            proxy = proxy_factory(bs)
            listen = proxy.ports
            assert set(listen) == {"ecdsa", "rsa"}, listen
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                runs = list(pool.map(
                    lambda n: _testssl(listen[n], os.path.join(d, "ca.crt"),
                                       os.path.join(d, n + ".json")), ("ecdsa", "rsa")))
        for (r, out), name in zip(runs, ("ecdsa", "rsa")):
            assert os.path.exists(out), "testssl wrote nothing for %s: %s %s" % (
                name, r.stdout[-2000:], r.stderr[-2000:])
            found = _findings(out)
            ids = {f.get("id") for f in found}
            # the scan really ran: protocols, ciphers and vulnerability checks are in the report
            assert {"TLS1_2", "TLS1_3", "heartbleed", "cert_chain_of_trust"} <= ids, (name, ids)
            bad = [(f["id"], f["severity"], f["finding"]) for f in found
                   if f.get("severity") in ("HIGH", "CRITICAL")]
            assert not bad, (name, bad)
            proto = {f["id"]: f["finding"] for f in found if f["id"].startswith(("SSL", "TLS1"))}
            assert proto["TLS1_3"].startswith("offered"), proto
            assert proto["TLS1"].startswith("not offered") and proto["SSLv3"].startswith(
                "not offered"), proto
    finally:
        shutil.rmtree(d, ignore_errors=True)
