"""weft-proxy's envoy.filters.network.tcp_proxy (reference protocols.md §4) against a real
line-based TCP server (Python socketserver, in this process): bytes both ways, half-close, a
100 MB transfer with the proxy's RSS bounded, weighted clusters, Istio's TCP access-log line
with UH, UF,URX and UO, idle_timeout, network RBAC ahead of the TCP proxy, and the
tcp.<stat_prefix>.* and cluster stats, mTLS between two proxies for TCP (an UpstreamTlsContext
to a chain that requires a client certificate), and the loader's errors.
"""
import os
import re
import socket
import socketserver
import struct
import threading
import time

import pytest

from procs import free_port
from test_proxy_tls import CLIENT_SAN, SNI, certs, downstream_tls, upstream_tls  # noqa: F401
from proxyfix import (ISTIO_TEXT_FORMAT, ISTIO_TEXT_RE, access_log, bootstrap, cluster,  # noqa: F401
                      proxy_factory)

TCP_PROXY = "envoy.filters.network.tcp_proxy"
TCP_PROXY_TYPE = "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
NET_RBAC = "envoy.filters.network.rbac"
NET_RBAC_TYPE = "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"


class _Handler(socketserver.BaseRequestHandler):
    """Line server: "ECHO" mode answers each chunk as read; at the client's end of stream it
    writes "EOF <n>\\n" (n: bytes read) and closes. "SINK" mode only counts. "NAME" mode
    answers the server's name first."""

    def handle(self):
        srv = self.server
        conn = self.request
        conn.settimeout(30)
        if srv.mode == "NAME":
            conn.sendall(srv.name.encode() + b"\n")
        if srv.mode == "RESET":  # answers one chunk, then resets the connection
            conn.recv(65536)
            conn.sendall(b"partial\n")
            time.sleep(0.1)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return
        if srv.mode == "FINFIRST":  # says bye and half-closes at once, then keeps reading
            conn.sendall(b"bye\n")
            conn.shutdown(socket.SHUT_WR)
            n = 0
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                n += len(data)
            srv.received.append(n)
            return
        n = 0
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                break
            n += len(data)
            if srv.mode != "SINK":
                conn.sendall(data)
        try:
            conn.sendall(b"EOF %d\n" % n)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def tcp_server():
    servers = []

    def start(mode="ECHO", name="s"):
        srv = _Server(("127.0.0.1", 0), _Handler)
        srv.mode, srv.name, srv.received = mode, name, []
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv.server_address[1]

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def tcp_filter(stat_prefix="tcp_in", cluster_name="backend", weighted=None, **extra):
    tc = {"@type": TCP_PROXY_TYPE, "stat_prefix": stat_prefix}
    if weighted:
        tc["weighted_clusters"] = {"clusters": [{"name": n, "weight": w} for n, w in weighted]}
    else:
        tc["cluster"] = cluster_name
    tc.update(extra)
    return {"name": TCP_PROXY, "typed_config": tc}


def tcp_bootstrap(clusters, filters=None, **tcp_extra):
    flt = tcp_filter(access_log=[access_log(fmt=ISTIO_TEXT_FORMAT)], **tcp_extra)
    lst = {"name": "tcp", "_weft_auto_port": True,
           "address": {"socket_address": {"address": "127.0.0.1", "port_value": 0}},
           "filter_chains": [{"filters": list(filters or []) + [flt]}]}
    return bootstrap([lst], clusters)


def connect(p):
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s.settimeout(10)
    return s


def recv_until(s, marker, limit=1 << 20):
    buf = b""
    while marker not in buf and len(buf) < limit:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    return buf


def log_line(p, i=0, n=1):
    line = p.access_log_lines(n)[i]
    m = ISTIO_TEXT_RE.match(line)
    assert m, line
    return m


def test_bytes_both_ways_and_half_close(tcp_server, proxy_factory):
    port = tcp_server()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])]))
    s = connect(p)
    s.sendall(b"hello\n")
    assert recv_until(s, b"hello\n") == b"hello\n"
    s.sendall(b"world\n")
    assert recv_until(s, b"world\n") == b"world\n"
    # half-close: our end of stream reaches the server; its answer still comes back
    s.shutdown(socket.SHUT_WR)
    assert recv_until(s, b"\n") == b"EOF 12\n"
    assert s.recv(10) == b""  # then the server's end of stream
    s.close()
    m = log_line(p)
    assert (m["method"], m["path"], m["protocol"]) == ("-", "-", "-")
    assert (m["response_code"], m["response_flags"]) == ("0", "-")
    assert (m["bytes_received"], m["bytes_sent"]) == ("12", "19")
    assert m["upstream_host"] == "127.0.0.1:%d" % port
    assert m["upstream_cluster"] == "backend"
    assert m["downstream_local_address"] == "127.0.0.1:%d" % p.port
    assert m["upstream_local_address"].startswith("127.0.0.1:")
    st = p.wait_stat("tcp.tcp_in.downstream_cx_total", 1)
    assert st["tcp.tcp_in.downstream_cx_rx_bytes_total"] == 12
    assert st["tcp.tcp_in.downstream_cx_tx_bytes_total"] == 19
    assert st["cluster.backend.upstream_cx_total"] == 1
    assert st["listener.127.0.0.1_%d.downstream_cx_total" % p.port] == 1
    status, _, body = p.admin("/config_dump")
    assert status == 200 and b"envoy.filters.network.tcp_proxy" in body
    # on /stats/prometheus with Envoy's default tag (envoy.tcp_prefix)
    status, _, body = p.admin("/stats/prometheus")
    assert 'envoy_tcp_downstream_cx_total{envoy_tcp_prefix="tcp_in"} 1' in body.decode()


def test_upstream_half_close_keeps_the_other_direction(tcp_server, proxy_factory):
    """The server half-closes first: its end of stream reaches the client, and the client's
    bytes sent after it still reach the server."""
    srv_port = tcp_server(mode="FINFIRST")
    p = proxy_factory(tcp_bootstrap([cluster("backend", [srv_port])]))
    s = connect(p)
    assert recv_until(s, b"\n") == b"bye\n"
    assert s.recv(10) == b""  # the server's FIN, passed on
    time.sleep(0.2)
    s.sendall(b"a" * 100000)  # the other direction is still open
    s.shutdown(socket.SHUT_WR)
    s.close()
    st = p.wait_stat("cluster.backend.upstream_cx_tx_bytes_total", 100000)
    assert st["cluster.backend.upstream_cx_tx_bytes_total"] == 100000
    m = log_line(p)
    assert (m["bytes_received"], m["bytes_sent"], m["response_flags"]) == ("100000", "4", "-")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_large_transfer_bounded_memory(tcp_server, proxy_factory):
    port = tcp_server(mode="ECHO")
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])]))
    total = 100 * 1024 * 1024
    chunk = os.urandom(1 << 16)
    s = connect(p)
    got = [0]
    peak = [rss_kb(p.proc.pid)]

    def reader():
        while True:
            d = s.recv(1 << 16)
            if not d:
                return
            got[0] += len(d)

    t = threading.Thread(target=reader)
    t.start()
    sent = 0
    while sent < total:
        s.sendall(chunk)
        sent += len(chunk)
        if sent % (8 << 20) == 0:
            peak[0] = max(peak[0], rss_kb(p.proc.pid))
    s.shutdown(socket.SHUT_WR)
    t.join(60)
    s.close()
    assert got[0] == total + len(b"EOF %d\n" % total)
    # the proxy holds at most a buffer per direction: its RSS stays far below the transfer
    # (not checked under ASan, whose quarantine keeps freed buffers resident)
    from test_proxy_tls import _under_asan
    from proxyfix import proxy_path
    if not _under_asan(proxy_path()):
        assert peak[0] < 64 * 1024, peak
    st = p.wait_stat("tcp.tcp_in.downstream_cx_rx_bytes_total", total)
    assert st["cluster.backend.upstream_cx_tx_bytes_total"] == total


def test_idle_connections_hold_no_buffers(tcp_server, proxy_factory):
    """A bulk transfer reads into 64 KiB buffers; after a short exchange they go back to the
    worker: 200 idle connections cost far less than two 64 KiB buffers each (25 MiB). Not
    under ASan, whose quarantine keeps freed memory resident."""
    from test_proxy_tls import _under_asan
    from proxyfix import proxy_path
    if _under_asan(proxy_path()):
        pytest.skip("RSS is meaningless under ASan (freed memory stays in its quarantine)")
    port = tcp_server()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])]))
    base = rss_kb(p.proc.pid)
    socks = []
    try:
        bulk = b"b" * 200000
        for i in range(200):
            s = connect(p)
            s.sendall(bulk)
            assert len(recv_until(s, bulk, limit=len(bulk))) == len(bulk)
            s.sendall(b"x%d\n" % i)
            assert recv_until(s, b"\n") == b"x%d\n" % i
            socks.append(s)
        grown = rss_kb(p.proc.pid) - base
        assert grown < 12 * 1024, grown
    finally:
        for s in socks:
            s.close()


def test_weighted_clusters_split(tcp_server, proxy_factory):
    a, b = tcp_server(mode="NAME", name="a"), tcp_server(mode="NAME", name="b")
    p = proxy_factory(tcp_bootstrap([cluster("ca", [a]), cluster("cb", [b])],
                                    weighted=[("ca", 3), ("cb", 1)]))
    seen = {"a": 0, "b": 0}
    for _ in range(200):
        s = connect(p)
        seen[recv_until(s, b"\n").strip().decode()] += 1
        s.close()
    assert 110 < seen["a"] < 190, seen
    assert seen["a"] + seen["b"] == 200


def test_no_healthy_upstream_uh(proxy_factory):
    p = proxy_factory(tcp_bootstrap([cluster("backend", [])]))
    s = connect(p)
    assert s.recv(10) == b""
    s.close()
    m = log_line(p)
    assert (m["response_code"], m["response_flags"]) == ("0", "UH")
    assert (m["bytes_received"], m["bytes_sent"], m["upstream_host"]) == ("0", "0", "-")
    assert m["upstream_cluster"] == "backend"
    assert p.stats()["cluster.backend.upstream_cx_none_healthy"] == 1


def test_connect_refused_uf_urx_and_retries(proxy_factory):
    dead = free_port()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [dead])], max_connect_attempts=3))
    s = connect(p)
    assert s.recv(10) == b""
    s.close()
    m = log_line(p)
    assert m["response_flags"] == "UF,URX"
    assert m["upstream_host"] == "127.0.0.1:%d" % dead
    assert "refused" in m["upstream_transport_failure_reason"].lower()
    st = p.stats()
    assert st["cluster.backend.upstream_cx_connect_fail"] == 3
    assert st["cluster.backend.upstream_cx_connect_attempts_exceeded"] == 1


def test_upstream_reset_closes_the_downstream(tcp_server, proxy_factory):
    port = tcp_server(mode="RESET")
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])]))
    s = connect(p)
    s.sendall(b"hello\n")
    assert recv_until(s, b"partial\n") == b"partial\n"
    try:
        rest = s.recv(10)
    except ConnectionResetError:
        rest = b""
    assert rest == b""
    s.close()
    m = log_line(p)
    assert (m["bytes_received"], m["bytes_sent"]) == ("6", "8")
    st = p.stats()
    assert st["cluster.backend.upstream_cx_destroy_remote"] == 1


def test_connect_timeout_uf(proxy_factory):
    """A listening socket whose accept queue is full leaves the SYN unanswered: the cluster's
    connect_timeout fires (UF, upstream_cx_connect_timeout), then the attempts are used up."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(0)
    fillers = []
    try:
        for _ in range(8):  # fill the backlog (nobody accepts)
            f = socket.socket()
            f.setblocking(False)
            f.connect_ex(lsock.getsockname())
            fillers.append(f)
        time.sleep(0.2)
        port = lsock.getsockname()[1]
        p = proxy_factory(tcp_bootstrap([cluster("backend", [port], connect_timeout="0.25s")]))
        s = connect(p)
        t0 = time.monotonic()
        assert s.recv(10) == b""
        assert time.monotonic() - t0 >= 0.2
        s.close()
        m = log_line(p)
        assert m["response_flags"] == "UF,URX"
        assert p.stats()["cluster.backend.upstream_cx_connect_timeout"] == 1
    finally:
        for f in fillers:
            f.close()
        lsock.close()


def test_missing_cluster_nc(proxy_factory):
    p = proxy_factory(tcp_bootstrap([cluster("other", [free_port()])]))
    s = connect(p)
    assert s.recv(10) == b""
    s.close()
    assert log_line(p)["response_flags"] == "NC"
    assert p.stats()["tcp.tcp_in.downstream_cx_no_route"] == 1


def test_circuit_breaker_uo(tcp_server, proxy_factory):
    port = tcp_server()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port],
                                             circuit_breakers={"max_connections": 1})]))
    first = connect(p)
    first.sendall(b"x\n")
    assert recv_until(first, b"x\n") == b"x\n"
    second = connect(p)
    assert second.recv(10) == b""
    second.close()
    m = log_line(p)
    assert m["response_flags"] == "UO"
    first.close()
    assert p.stats()["cluster.backend.upstream_cx_overflow"] == 1


def test_idle_timeout(tcp_server, proxy_factory):
    port = tcp_server()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])], idle_timeout="0.3s"))
    s = connect(p)
    s.sendall(b"ping\n")
    assert recv_until(s, b"ping\n") == b"ping\n"
    t0 = time.monotonic()
    assert s.recv(10) == b""  # closed by the proxy, no flag (Envoy's onIdleTimeout)
    assert 0.2 < time.monotonic() - t0 < 5
    s.close()
    m = log_line(p)
    assert m["response_flags"] == "-"
    assert p.stats()["tcp.tcp_in.idle_timeout"] == 1


def test_max_downstream_connection_duration_dt(tcp_server, proxy_factory):
    port = tcp_server()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])],
                                    max_downstream_connection_duration="0.3s"))
    s = connect(p)
    s.sendall(b"ping\n")
    assert recv_until(s, b"ping\n") == b"ping\n"
    assert s.recv(10) == b""
    s.close()
    assert log_line(p)["response_flags"] == "DT"
    assert p.stats()["tcp.tcp_in.max_downstream_connection_duration"] == 1


def test_network_rbac_denies_before_tcp_proxy(tcp_server, proxy_factory):
    port = tcp_server()
    rbac = {"name": NET_RBAC, "typed_config": {
        "@type": NET_RBAC_TYPE, "stat_prefix": "tcp.",
        "rules": {"action": "DENY", "policies": {"ns[x]-policy[deny-local]-rule[0]": {
            "permissions": [{"any": True}],
            "principals": [{"directRemoteIp": {"addressPrefix": "127.0.0.1", "prefixLen": 32}}]}}}}}
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])], filters=[rbac]))
    s = connect(p)
    s.sendall(b"secret\n")
    assert recv_until(s, b"\n") == b""
    s.close()
    m = log_line(p)
    assert m["connection_termination_details"] == \
        "rbac_access_denied_matched_policy[ns[x]-policy[deny-local]-rule[0]]"
    assert m["bytes_received"] == "7"
    st = p.stats()
    assert st["tcp.rbac.denied"] == 1
    assert st["cluster.backend.upstream_cx_tx_bytes_total"] == 0  # nothing reached the server


def test_loader_errors_name_the_field(proxy_factory, tmp_path):
    import subprocess

    from proxyfix import proxy_path, write_bootstrap
    cases = [
        ({"hash_policy": [{"source_ip": {}}]}, "hash_policy: not supported by weft-proxy"),
        ({"bogus": 1}, "bogus"),
        ({"max_connect_attempts": 0}, "max_connect_attempts: value must be greater"),
    ]
    for extra, want in cases:
        bs = tcp_bootstrap([cluster("backend", [free_port()])], **extra)
        bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = \
            free_port()
        bs["admin"]["address"]["socket_address"]["port_value"] = free_port()
        path = write_bootstrap(bs, str(tmp_path))
        r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode != 0
        assert "typed_config." in r.stderr and want in r.stderr, r.stderr


def test_mtls_between_two_proxies_for_tcp(certs, tcp_server, proxy_factory):  # noqa: F811
    """A client-side proxy's cluster with an UpstreamTlsContext (client certificate, SAN check,
    SNI) to a server-side proxy whose chain requires a client certificate; both chains are
    tcp_proxy. The server side logs the client's SPIFFE URI SAN and the SNI."""
    port = tcp_server()
    fmt = "%RESPONSE_FLAGS% %DOWNSTREAM_PEER_URI_SAN% %REQUESTED_SERVER_NAME% %BYTES_RECEIVED%\n"
    server_bs = tcp_bootstrap([cluster("app", [port])], cluster_name="app")
    lst = server_bs["static_resources"]["listeners"][0]
    lst["filter_chains"][0]["transport_socket"] = downstream_tls(certs, require=True,
                                                                 alpn=("istio",))
    lst["filter_chains"][0]["filters"][-1]["typed_config"]["access_log"] = [
        access_log(path="@LOG:srv@", fmt=fmt)]
    server = proxy_factory(server_bs)
    client = proxy_factory(tcp_bootstrap([cluster("backend", [server.port],
                                                  transport_socket=upstream_tls(certs))]))
    s = connect(client)
    s.sendall(b"over mtls\n")
    assert recv_until(s, b"over mtls\n") == b"over mtls\n"
    s.shutdown(socket.SHUT_WR)
    assert recv_until(s, b"\n") == b"EOF 10\n"
    s.close()
    assert server.access_log_lines(1, name="srv")[0] == "- %s %s 10" % (CLIENT_SAN, SNI)
    assert log_line(client)["response_flags"] == "-"
    assert client.wait_stat("cluster.backend.ssl.handshake", 1)["cluster.backend.ssl.handshake"] == 1
    # an upstream TLS context that does not trust the server's CA: UF with the TLS error
    bad = proxy_factory(tcp_bootstrap([cluster("backend", [server.port],
                                               transport_socket=upstream_tls(certs,
                                                                             ca="other_ca.crt"))]))
    s = connect(bad)
    assert s.recv(10) == b""
    s.close()
    m = log_line(bad)
    assert m["response_flags"] == "UF,URX"
    assert m["upstream_transport_failure_reason"].startswith("TLS_error:"), m.group(0)


def _istio_tcp_bs(cluster_obj, node_obj, inbound, tls=None):
    from test_proxy_istio_metrics import stats_filter
    bs = tcp_bootstrap([cluster_obj], filters=[stats_filter()], cluster_name=cluster_obj["name"],
                       stat_prefix=cluster_obj["name"])
    lst = bs["static_resources"]["listeners"][0]
    lst["traffic_direction"] = "INBOUND" if inbound else "OUTBOUND"
    if tls:
        lst["filter_chains"][0]["transport_socket"] = tls
    bs["node"] = node_obj
    return bs


def test_istio_tcp_metrics_over_mtls(certs, tcp_server, proxy_factory):  # noqa: F811
    """istio.stats as a network filter before tcp_proxy on both sidecars: the four
    istio_tcp_* counters with Istio's labels (no response_code / grpc_response_status,
    request_protocol tcp), principals from the certificates, unknown peer workloads (no
    istio.metadata_exchange on these chains; ALPN "istio"), mutual_tls at the destination,
    unknown at the source."""
    from test_proxy_istio_metrics import LABELS, SVC_HOST, node, prom, series, svc_cluster
    port = tcp_server()
    server = proxy_factory(_istio_tcp_bs(
        svc_cluster("inbound|9080||", port), node("catalog-v1", "catalog", "v1"), True,
        tls=downstream_tls(certs, require=True, alpn=("istio",))))
    cl = svc_cluster("outbound|9080||" + SVC_HOST, server.port)
    cl["transport_socket"] = upstream_tls(certs, sni="outbound_.9080_._." + SVC_HOST)
    client = proxy_factory(_istio_tcp_bs(cl, node("frontend-v1", "frontend", "v2"), False))
    for _ in range(2):
        s = connect(client)
        s.sendall(b"0123456789")
        assert recv_until(s, b"9") == b"0123456789"
        s.shutdown(socket.SHUT_WR)
        assert recv_until(s, b"\n") == b"EOF 10\n"
        s.close()
    client.wait_stat("tcp.outbound|9080||%s.downstream_cx_total" % SVC_HOST, 2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text_s, text_c = prom(server), prom(client)
        if "istio_tcp_connections_closed_total{" in text_s + text_c and \
                len(series(text_s, "istio_tcp_connections_closed_total")) and \
                len(series(text_c, "istio_tcp_connections_closed_total")) and \
                series(text_c, "istio_tcp_connections_closed_total")[0][1] == 2 and \
                series(text_s, "istio_tcp_connections_closed_total")[0][1] == 2:
            break
        time.sleep(0.05)
    tcp_labels = [lab for lab in LABELS if lab not in ("response_code", "grpc_response_status")]
    dst = {f: series(text_s, f) for f in ("istio_tcp_connections_opened_total",
                                          "istio_tcp_connections_closed_total",
                                          "istio_tcp_sent_bytes_total",
                                          "istio_tcp_received_bytes_total")}
    for fam, rows in dst.items():
        assert len(rows) == 1, (fam, rows)
        lab, value, order = rows[0]
        assert order == tcp_labels
        assert lab["reporter"] == "destination"
        assert lab["request_protocol"] == "tcp"
        assert lab["connection_security_policy"] == "mutual_tls"
        assert lab["source_principal"] == CLIENT_SAN
        assert lab["source_workload"] == "unknown"  # no exchange configured (test_proxy_tcp_mx.py)
        assert lab["source_workload_namespace"] == "default"  # from the client's SAN
        assert lab["destination_workload"] == "catalog-v1"
        assert lab["response_flags"] == "-"
    assert dst["istio_tcp_connections_opened_total"][0][1] == 2
    assert dst["istio_tcp_received_bytes_total"][0][1] == 20
    assert dst["istio_tcp_sent_bytes_total"][0][1] == 2 * len(b"0123456789EOF 10\n")
    (lab, value, _), = series(text_c, "istio_tcp_sent_bytes_total")
    assert lab["reporter"] == "source" and lab["connection_security_policy"] == "unknown"
    assert lab["destination_principal"] != "unknown"
    assert lab["destination_service"] == SVC_HOST and lab["destination_service_name"] == "catalog"
    assert lab["source_workload"] == "frontend-v1"
    assert value == 2 * len(b"0123456789EOF 10\n")
    assert "istio_build{component=\"proxy\",tag=\"1.24.0\"} 1" in text_c


def test_istio_tcp_metrics_flags_at_the_source(proxy_factory):
    from test_proxy_istio_metrics import node, prom, series
    bs = _istio_tcp_bs(cluster("BlackHoleCluster", []), node("frontend-v1", "frontend", "v2"),
                       False)
    p = proxy_factory(bs)
    s = connect(p)
    assert s.recv(10) == b""
    s.close()
    deadline = time.monotonic() + 5
    rows = []
    while not rows and time.monotonic() < deadline:
        rows = series(prom(p), "istio_tcp_connections_closed_total")
        time.sleep(0.05)
    (lab, value, _), = rows
    assert (lab["response_flags"], lab["destination_service_name"], value) == \
        ("UH", "BlackHoleCluster", 1.0)


def test_istio_tcp_metrics_reported_while_open(tcp_server, proxy_factory):
    """tcp_reporting_duration: an open connection is reported periodically (opened and the
    bytes so far), its close at the end."""
    from test_proxy_istio_metrics import node, prom, series, svc_cluster, stats_filter
    port = tcp_server()
    bs = _istio_tcp_bs(svc_cluster("inbound|9080||", port), node("catalog-v1", "catalog", "v1"),
                       True)
    flt = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"]
    flt[0] = stats_filter(tcp_reporting_duration="0.2s")
    p = proxy_factory(bs)
    s = connect(p)
    s.sendall(b"abcdef")
    assert recv_until(s, b"f") == b"abcdef"

    def value(text, fam):
        return sum(v for _, v, _ in series(text, fam))

    deadline = time.monotonic() + 5
    text = prom(p)
    while value(text, "istio_tcp_received_bytes_total") < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
        text = prom(p)
    assert value(text, "istio_tcp_connections_opened_total") == 1
    assert value(text, "istio_tcp_received_bytes_total") == 6
    assert value(text, "istio_tcp_connections_closed_total") == 0  # still open
    s.sendall(b"gh")
    assert recv_until(s, b"h") == b"gh"
    s.close()
    deadline = time.monotonic() + 5
    while value(text, "istio_tcp_connections_closed_total") < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        text = prom(p)
    assert value(text, "istio_tcp_connections_closed_total") == 1
    assert value(text, "istio_tcp_connections_opened_total") == 1
    assert value(text, "istio_tcp_received_bytes_total") == 8


def test_sigterm_drain_lets_tcp_sessions_finish(tcp_server, proxy_factory):
    """On SIGTERM the listener stops accepting, an open TCP session goes on (it has no request
    boundary to close at) and the proxy exits once it ended, before the drain time."""
    import signal
    port = tcp_server()
    p = proxy_factory(tcp_bootstrap([cluster("backend", [port])]), args=("--drain-time-s", "30"))
    s = connect(p)
    s.sendall(b"one\n")
    assert recv_until(s, b"one\n") == b"one\n"
    p.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    s.sendall(b"two\n")  # the session still works while the proxy drains
    assert recv_until(s, b"two\n") == b"two\n"
    assert p.proc.poll() is None
    t0 = time.monotonic()
    s.shutdown(socket.SHUT_WR)
    assert recv_until(s, b"\n") == b"EOF 8\n"
    s.close()
    assert p.proc.wait(timeout=10) == 0
    assert time.monotonic() - t0 < 5
    m = log_line(p)
    assert (m["bytes_received"], m["response_flags"]) == ("8", "-")


def test_inbound_drain_keeps_tcp_sessions(tcp_server, proxy_factory):
    """POST /drain_listeners?inboundonly (pilot-agent's exit sequence): an INBOUND listener
    stops accepting; its open TCP session goes on."""
    port = tcp_server()
    bs = tcp_bootstrap([cluster("backend", [port])])
    bs["static_resources"]["listeners"][0]["traffic_direction"] = "INBOUND"
    p = proxy_factory(bs)
    s = connect(p)
    s.sendall(b"one\n")
    assert recv_until(s, b"one\n") == b"one\n"
    status, _, _ = p.admin("/drain_listeners?inboundonly", method="POST")
    assert status == 200
    time.sleep(0.3)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", p.port), timeout=2).recv(1)
    s.sendall(b"two\n")
    assert recv_until(s, b"two\n") == b"two\n"
    s.close()


def test_connect_failures_eject_the_host(tcp_server, proxy_factory):
    """Connect failures are local-origin failures for outlier detection (503 without
    split_external_local_origin_errors, Envoy's LocalOriginConnectFailed): two in a row eject
    the dead host, and the next connections all reach the live one."""
    live = tcp_server(mode="NAME", name="live")
    dead = free_port()
    od = {"interval": "0.2s", "base_ejection_time": "30s", "consecutive_5xx": 2,
          "max_ejection_percent": 50}
    p = proxy_factory(tcp_bootstrap([cluster("backend", [dead, live], outlier_detection=od)]))
    answers = []
    for _ in range(10):
        s = connect(p)
        answers.append(recv_until(s, b"\n"))
        s.close()
    assert answers.count(b"") == 2, answers  # the dead host twice, then ejected
    assert answers[-6:] == [b"live\n"] * 6
    st = p.stats()
    assert st["cluster.backend.outlier_detection.ejections_enforced_consecutive_5xx"] == 1
