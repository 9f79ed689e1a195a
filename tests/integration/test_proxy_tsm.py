"""Cluster transport_socket_matches with real processes (Istio's auto mTLS, security.md §3.2):
one cluster with two endpoints, one tagged `envoy.transport_socket_match: {tlsMode: istio}`
behind a weft-proxy whose listener requires a client certificate, one untagged plaintext
upstream. Both are served (round robin); the access log shows %UPSTREAM_PEER_URI_SAN% only for
the tagged host; cluster.<name>.<match>.total_match_count count the hosts; /config_dump shows
the matches as given and each host's match metadata (?include_eds); the debug log names the
socket chosen per host, as Envoy's does.

Certificates come from test_proxy_tls's fixture (the openssl CLI); every process binds
loopback on free ports and is stopped at teardown.
"""
import json

from proxyfix import access_log, bootstrap, cluster, endpoint, listener, proxy_factory, simple_routes
from test_proxy_tls import (CLIENT_SAN, SERVER_SAN, app, certs, port_of, tls_listener,
                            upstream_tls)

assert proxy_factory and app and certs  # fixtures, imported for pytest

LOG = {"host": "%UPSTREAM_HOST%", "code": "%RESPONSE_CODE%",
       "u_peer_san": "%UPSTREAM_PEER_URI_SAN%", "u_version": "%UPSTREAM_TLS_VERSION%"}
RAW = {"name": "envoy.transport_sockets.raw_buffer",
       "typed_config": {"@type": "type.googleapis.com/"
                                 "envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"}}


def tagged(port):
    e = endpoint(port)
    e["metadata"] = {"filter_metadata": {
        "envoy.transport_socket_match": {"tlsMode": "istio"},
        "istio": {"workload": "reviews-v1;default;reviews;v1;Kubernetes"}}}
    return e


def client_bootstrap(certs, b_port, app_port, default_match=True):
    matches = [{"name": "tlsMode-istio", "match": {"tlsMode": "istio"},
                "transport_socket": upstream_tls(certs)}]
    if default_match:
        matches.append({"name": "tlsMode-disabled", "match": {}, "transport_socket": RAW})
    lst = listener(simple_routes("reviews"), access_logs=[access_log("@LOG:tsm@", json_format=LOG)])
    return bootstrap([lst], [cluster("reviews", [tagged(b_port), endpoint(app_port)],
                                     transport_socket_matches=matches)])


def test_tagged_host_mtls_untagged_plaintext(certs, app, proxy_factory):
    b = proxy_factory(tls_listener(certs, app, require=True, san_prefix="spiffe://cluster.local/"))
    b_port = port_of(b)
    a = proxy_factory(client_bootstrap(certs, b_port, app),
                      args=("--component-log-level", "upstream:debug"))
    for _ in range(4):
        status, _, body = a.request("GET", "/echo")
        assert status == 200, body
    entries = [json.loads(line) for line in a.access_log_lines(4, name="tsm")]
    by_host = {}
    for e in entries:
        by_host.setdefault(e["host"], []).append(e)
    tls_host, plain_host = "127.0.0.1:%d" % b_port, "127.0.0.1:%d" % app
    assert set(by_host) == {tls_host, plain_host}, entries
    for e in by_host[tls_host]:
        assert e["u_peer_san"] == SERVER_SAN and e["u_version"] == "TLSv1.3", e
    for e in by_host[plain_host]:
        assert e["u_peer_san"] is None and e["u_version"] is None, e
    # B saw A's client certificate
    eb = [json.loads(line) for line in b.access_log_lines(len(by_host[tls_host]), name="tls")]
    assert all(x["d_peer_san"] == CLIENT_SAN for x in eb), eb
    st = a.stats()
    assert st["cluster.reviews.ssl.handshake"] == 1  # one kept-alive TLS connection
    assert st["cluster.reviews.upstream_cx_total"] == 2
    # Envoy's TransportSocketMatchStats: one host resolved to each match, none to the default
    assert st["cluster.reviews.tlsMode-istio.total_match_count"] == 1
    assert st["cluster.reviews.tlsMode-disabled.total_match_count"] == 1
    assert st["cluster.reviews.default.total_match_count"] == 0
    # the matches as given, the hosts' match metadata
    doc = json.loads(a.admin("/config_dump?include_eds")[2])
    clusters = [c for d in doc["configs"] if "static_clusters" in d
                for c in d["static_clusters"]]
    rc = next(c["cluster"] for c in clusters if c["cluster"]["name"] == "reviews")
    assert [m["name"] for m in rc["transport_socket_matches"]] == ["tlsMode-istio",
                                                                 "tlsMode-disabled"]
    assert rc["transport_socket_matches"][0]["match"] == {"tlsMode": "istio"}
    eds = [c for d in doc["configs"] if "static_endpoint_configs" in d
           for c in d["static_endpoint_configs"]]
    cla = next(c["endpoint_config"] for c in eds
               if c["endpoint_config"]["cluster_name"] == "reviews")
    lbe = cla["endpoints"][0]["lb_endpoints"]
    assert lbe[0]["metadata"] == {"filter_metadata": {
        "envoy.transport_socket_match": {"tlsMode": "istio"}}}
    assert "metadata" not in lbe[1]
    log = a.stderr_text()
    assert ("transport socket match, socket tlsMode-istio selected for host with address %s"
            % tls_host) in log, log[-2000:]
    assert ("transport socket match, socket tlsMode-disabled selected for host with address %s"
            % plain_host) in log


def test_no_match_falls_back_to_cluster_socket(certs, app, proxy_factory):
    """Without the empty match the untagged host takes the cluster's transport_socket: raw
    here, so it is served in plaintext; a cluster-level TLS socket would apply instead."""
    b = proxy_factory(tls_listener(certs, app, require=True))
    b_port = port_of(b)
    a = proxy_factory(client_bootstrap(certs, b_port, app, default_match=False),
                      args=("--component-log-level", "upstream:debug"))
    for _ in range(2):
        status, _, body = a.request("GET", "/echo")
        assert status == 200, body
    entries = [json.loads(line) for line in a.access_log_lines(2, name="tsm")]
    sans = {e["host"]: e["u_peer_san"] for e in entries}
    assert sans == {"127.0.0.1:%d" % b_port: SERVER_SAN, "127.0.0.1:%d" % app: None}, entries
    assert ("socket default selected for host with address 127.0.0.1:%d" % app) in a.stderr_text()
    st = a.stats()
    assert st["cluster.reviews.tlsMode-istio.total_match_count"] == 1
    assert st["cluster.reviews.default.total_match_count"] == 1
