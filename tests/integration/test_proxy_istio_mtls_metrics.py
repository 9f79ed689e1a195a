"""Istio's standard metrics over mTLS (security.md §3.5, istio/proxy istio_stats.cc
populatePeerInfo): on the destination side connection_security_policy="mutual_tls" when the
downstream connection has a peer and a local URI SAN, else "none"; source_principal /
destination_principal are the peer's / our first URI SAN there, and the upstream connection's
local / peer SAN on the source side (whose policy is always "unknown"); the peer's namespace
comes from its SAN. %DOWNSTREAM_LOCAL_URI_SAN% and %UPSTREAM_LOCAL_URI_SAN% are filled.

Real processes: a server-side proxy (INBOUND, a DownstreamTlsContext requiring a client
certificate) before a weft-app, reached by a client-side proxy (OUTBOUND, an
UpstreamTlsContext with a client certificate) and by curl --cert. Certificates come from
test_proxy_tls's fixture (the openssl CLI).
"""
import json

from procs import start_app, stop_process
from proxyfix import access_log, proxy_factory
from test_proxy_istio_metrics import (HOST, SVC_HOST, client_bs, count, server_bs,
                                      wait_total)
from test_proxy_tls import (CLIENT_SAN, SERVER_SAN, certs, curl, downstream_tls, port_of,
                            upstream_tls)

import pytest

assert proxy_factory and certs  # fixtures, imported for pytest

SAN_LOG = {"d_peer": "%DOWNSTREAM_PEER_URI_SAN%", "d_local": "%DOWNSTREAM_LOCAL_URI_SAN%",
           "u_peer": "%UPSTREAM_PEER_URI_SAN%", "u_local": "%UPSTREAM_LOCAL_URI_SAN%"}


@pytest.fixture
def app():
    proc, port = start_app("--name", "catalog")
    yield port
    stop_process(proc)


def _hcm(bs):
    return bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]


def tls_server_bs(certs, app_port, require=True):
    bs = server_bs(app_port)
    bs["static_resources"]["listeners"][0]["filter_chains"][0]["transport_socket"] = \
        downstream_tls(certs, require=require, alpn=("istio-peer-exchange", "istio", "http/1.1"))
    _hcm(bs)["access_log"].append(access_log("@LOG:san@", json_format=SAN_LOG))
    return bs


def tls_client_bs(certs, server_port):
    bs = client_bs(server_port)
    bs["static_resources"]["clusters"][0]["transport_socket"] = upstream_tls(
        certs, sni="outbound_.9080_._." + SVC_HOST)
    _hcm(bs)["access_log"].append(access_log("@LOG:san@", json_format=SAN_LOG))
    return bs


def san_log(p, n):
    return [json.loads(line) for line in p.access_log_lines(n, name="san")]


def test_mutual_tls_between_two_sidecars(certs, app, proxy_factory):
    server = proxy_factory(tls_server_bs(certs, app))
    client = proxy_factory(tls_client_bs(certs, port_of(server)))
    for _ in range(3):
        status, _, body = client.request("GET", "/status/200", headers=HOST)
        assert status == 200, body
    dst = wait_total(server, 3)
    assert count(dst, reporter="destination", connection_security_policy="mutual_tls",
                 source_principal=CLIENT_SAN, destination_principal=SERVER_SAN,
                 source_workload="frontend-v1", destination_workload="catalog-v1",
                 # the peer's namespace from its SAN (.../ns/default/...), not its metadata
                 source_workload_namespace="default", response_code=200) == 3, dst
    src = wait_total(client, 3)
    assert count(src, reporter="source", connection_security_policy="unknown",
                 source_principal=CLIENT_SAN, destination_principal=SERVER_SAN,
                 destination_workload="catalog-v1", destination_workload_namespace="default",
                 destination_service_namespace="default", response_code=200) == 3, src
    s = san_log(server, 1)[0]
    assert s["d_peer"] == CLIENT_SAN and s["d_local"] == SERVER_SAN, s
    c = san_log(client, 1)[0]
    assert c["u_peer"] == SERVER_SAN and c["u_local"] == CLIENT_SAN, c
    assert c["d_local"] is None  # the client's listener is plaintext


def test_curl_with_and_without_client_certificate(certs, app, proxy_factory):
    strict = proxy_factory(tls_server_bs(certs, app))
    rc, code, _, err = curl(port_of(strict), "/status/200", "--cacert", certs["ca.crt"],
                            "--cert", certs["client.crt"], "--key", certs["client.key"])
    assert rc == 0 and code == 200, err
    rows = wait_total(strict, 1)
    assert count(rows, connection_security_policy="mutual_tls", source_principal=CLIENT_SAN,
                 destination_principal=SERVER_SAN, source_workload="unknown") == 1, rows
    # TLS without a client certificate: no peer SAN, so no mutual TLS
    simple = proxy_factory(tls_server_bs(certs, app, require=False))
    rc, code, _, err = curl(port_of(simple), "/status/200", "--cacert", certs["ca.crt"])
    assert rc == 0 and code == 200, err
    rows = wait_total(simple, 1)
    assert count(rows, connection_security_policy="none", source_principal="unknown",
                 destination_principal=SERVER_SAN, source_workload_namespace="unknown") == 1, rows
    e = san_log(simple, 1)[0]
    assert e["d_peer"] is None and e["d_local"] == SERVER_SAN, e
