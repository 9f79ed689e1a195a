"""Istio's TCP metadata exchange between two weft-proxies (istio.metadata_exchange, reference:
istio/proxy source/extensions/filters/network/metadata_exchange; protocols.md §4.5,
envoy-istio-behaviour.md §7.2, security.md §3.1 ALPN): a client sidecar (OUTBOUND listener,
istio.stats + tcp_proxy, cluster with mTLS, ALPN istio-peer-exchange/istio and the upstream
istio.metadata_exchange in its `filters`) and a server sidecar (INBOUND chain requiring a
client certificate, ALPN istio-peer-exchange/h2/http/1.1, network filters
istio.metadata_exchange, istio.stats, tcp_proxy) in front of a line-based TCP server.

The application sees exactly the client's bytes (no preamble leaks either way), both for a
client-first and a server-first protocol; the server sidecar's istio_tcp_* series carry the
client pod's source_workload / source_app / source_version / source_canonical_* and the
client's carry the server's destination_*; with ALPN "istio" only, or plaintext, the exchange
stays off, the bytes still pass and the peer labels are `unknown` as before.
"""
import socket
import time

from test_proxy_tls import certs, downstream_tls, upstream_tls  # noqa: F401
from test_proxy_tcp import connect, recv_until, tcp_bootstrap, tcp_server  # noqa: F401
from proxyfix import proxy_factory  # noqa: F401
from test_proxy_istio_metrics import SVC_HOST, node, prom, series, stats_filter, svc_cluster

MX_TYPE = "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange"
TYPED_STRUCT = "type.googleapis.com/udpa.type.v1.TypedStruct"


def mx_filter():
    """istiod's TCPListenerMx / TCPClusterMx element."""
    return {"name": "istio.metadata_exchange",
            "typed_config": {"@type": TYPED_STRUCT, "type_url": MX_TYPE,
                             "value": {"protocol": "istio-peer-exchange",
                                       "enable_discovery": True}}}


def sidecars(proxy_factory, certs, app_port, client_alpn=("istio-peer-exchange", "istio"),  # noqa: F811
             tls=True):
    srv_cl = svc_cluster("inbound|9080||", app_port)
    bs = tcp_bootstrap([srv_cl], filters=[mx_filter(), stats_filter()],
                       cluster_name=srv_cl["name"], stat_prefix=srv_cl["name"])
    lst = bs["static_resources"]["listeners"][0]
    lst["traffic_direction"] = "INBOUND"
    if tls:
        lst["filter_chains"][0]["transport_socket"] = downstream_tls(
            certs, require=True, alpn=("istio-peer-exchange", "h2", "http/1.1"))
    bs["node"] = node("catalog-v1", "catalog", "v1")
    server = proxy_factory(bs)
    cl = svc_cluster("outbound|9080||" + SVC_HOST, server.port)
    if tls:
        cl["transport_socket"] = upstream_tls(certs, sni="outbound_.9080_._." + SVC_HOST)
        cl["transport_socket"]["typed_config"]["common_tls_context"]["alpn_protocols"] = \
            list(client_alpn)
    cl["filters"] = [mx_filter()]
    bs = tcp_bootstrap([cl], filters=[stats_filter()], cluster_name=cl["name"],
                       stat_prefix=cl["name"])
    bs["static_resources"]["listeners"][0]["traffic_direction"] = "OUTBOUND"
    bs["node"] = node("frontend-v1", "frontend", "v2")
    client = proxy_factory(bs)
    return server, client


def wait_closed(p, n):
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        rows = series(prom(p), "istio_tcp_connections_closed_total")
        if sum(v for _, v, _ in rows) >= n:
            return
        time.sleep(0.05)
    raise AssertionError("istio_tcp_connections_closed_total < %d" % n)


def one(p, family):
    rows = series(prom(p), family)
    assert len(rows) == 1, (family, rows)
    return rows[0][0], rows[0][1]


def echo(client, payload):
    s = connect(client)
    s.sendall(payload)
    assert recv_until(s, payload[-1:]) == payload
    s.shutdown(socket.SHUT_WR)
    assert recv_until(s, b"\n") == b"EOF %d\n" % len(payload)
    s.close()


def test_peer_labels_both_sides_bytes_unchanged(certs, tcp_server, proxy_factory):  # noqa: F811
    port = tcp_server()
    server, client = sidecars(proxy_factory, certs, port)
    for _ in range(2):
        echo(client, b"SELECT 1;\nSELECT 2;\n")  # EOF <n> proves the app read exactly these
    wait_closed(server, 2)
    wait_closed(client, 2)
    lab, value = one(server, "istio_tcp_connections_opened_total")
    assert value == 2
    assert lab["reporter"] == "destination"
    assert (lab["source_workload"], lab["source_workload_namespace"], lab["source_app"],
            lab["source_version"], lab["source_canonical_service"],
            lab["source_canonical_revision"], lab["source_cluster"]) == \
        ("frontend-v1", "default", "frontend", "v2", "frontend", "v2", "Kubernetes")
    # (the namespace is the client SAN's /ns/default/, ahead of the metadata's, as istio.stats)
    assert lab["destination_workload"] == "catalog-v1"
    assert lab["connection_security_policy"] == "mutual_tls"
    lab, value = one(server, "istio_tcp_received_bytes_total")
    assert value == 2 * len(b"SELECT 1;\nSELECT 2;\n")  # the preamble is not the app's
    lab, value = one(client, "istio_tcp_connections_opened_total")
    assert value == 2
    assert lab["reporter"] == "source"
    assert (lab["destination_workload"], lab["destination_workload_namespace"],
            lab["destination_app"], lab["destination_version"],
            lab["destination_canonical_service"], lab["destination_canonical_revision"],
            lab["destination_cluster"]) == \
        ("catalog-v1", "default", "catalog", "v1", "catalog", "v1", "Kubernetes")
    assert lab["source_workload"] == "frontend-v1"
    lab, value = one(client, "istio_tcp_sent_bytes_total")
    assert value == 2 * len(b"SELECT 1;\nSELECT 2;\nEOF 20\n")
    # the exchange's wire preamble never reaches the client application: checked by echo()


def test_server_first_protocol(certs, tcp_server, proxy_factory):  # noqa: F811
    """The server speaks first (a database greeting): the server sidecar's preamble goes out
    ahead of it and the client sidecar drains it; the client reads only the greeting. The
    greeting may reach the server sidecar before its downstream TLS handshake is done: it waits
    for the handshake (Envoy buffers it) instead of failing the write."""
    port = tcp_server(mode="NAME", name="pg-greeting")
    server, client = sidecars(proxy_factory, certs, port)
    for _ in range(5):  # the greeting often comes before the server sidecar's TLS handshake
        s = connect(client)
        assert recv_until(s, b"\n") == b"pg-greeting\n"
        s.sendall(b"hello\n")
        assert recv_until(s, b"hello\n") == b"hello\n"
        s.shutdown(socket.SHUT_WR)
        assert recv_until(s, b"\n") == b"EOF 6\n"
        s.close()
    wait_closed(server, 5)
    wait_closed(client, 5)
    assert one(server, "istio_tcp_connections_closed_total")[0]["source_workload"] == \
        "frontend-v1"
    assert one(client, "istio_tcp_connections_closed_total")[0]["destination_workload"] == \
        "catalog-v1"


def test_alpn_istio_only_leaves_labels_unknown(certs, tcp_server, proxy_factory):  # noqa: F811
    """The client does not offer istio-peer-exchange (PILOT_DISABLE_MX_ALPN): no exchange,
    bytes intact, the peer's workload labels unknown (the principals still from the SANs)."""
    port = tcp_server()
    server, client = sidecars(proxy_factory, certs, port, client_alpn=("istio",))
    echo(client, b"plain bytes\n")
    wait_closed(server, 1)
    wait_closed(client, 1)
    lab, _ = one(server, "istio_tcp_connections_closed_total")
    assert lab["source_workload"] == "unknown" and lab["source_app"] == "unknown"
    assert lab["source_canonical_revision"] == "latest"
    assert lab["source_principal"] != "unknown"
    lab, _ = one(client, "istio_tcp_connections_closed_total")
    assert lab["destination_workload"] == "unknown"


def test_plaintext_leaves_labels_unknown(certs, tcp_server, proxy_factory):  # noqa: F811
    port = tcp_server()
    server, client = sidecars(proxy_factory, certs, port, tls=False)
    echo(client, b"no tls here\n")
    wait_closed(server, 1)
    lab, _ = one(server, "istio_tcp_connections_closed_total")
    assert lab["source_workload"] == "unknown"
    assert lab["connection_security_policy"] == "none"
