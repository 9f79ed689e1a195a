"""Istio's gRPC message counters through weft-proxy (../shared/reference/protocols.md §3.5):
envoy.filters.http.grpc_stats as Istio configures it ({emit_filter_state: true,
stats_for_all_methods: false}, Istio's xdsfilters.GrpcStats) ahead of istio.stats, with a real
gRPC client and server nobody on the project wrote (Python grpcio): grpcio client -> weft-proxy
(h2c) -> HTTP/2 cluster -> grpcio server.

After unary, server-streaming, client-streaming and a failing unary call, /stats says Envoy's
cluster.<cluster>.grpc.{request_message_count, response_message_count, success, failure,
total, <status>} (docs configuration/http/http_filters/grpc_stats_filter, no per-method
prefix) and /stats/prometheus has them as envoy_cluster_grpc_*{envoy_cluster_name=...}, plus
Istio's istio_request_messages_total / istio_response_messages_total with the labels
reporter ... destination_cluster (istio_stats.cc records them before the protocol, code, gRPC
status, flags and security policy labels). Exact values: the calls are counted message by
message, whatever the DATA frames they travel in.
"""
import subprocess
import time

import pytest

from proxyfix import (bootstrap, proxy_factory, proxy_path, route, route_config, vhost,
                      write_bootstrap)
from test_proxy_h2_upstream import grpc_server, h2_cluster
from test_proxy_istio_metrics import (LABELS, SVC_HOST, istio_listener, node, prom, series,
                                      stats_filter)

assert proxy_factory and grpc_server  # fixtures, imported for pytest

grpc = pytest.importorskip("grpc", reason="python3-grpcio (scripts/setup installs it)")

GRPC_STATS = {"name": "envoy.filters.http.grpc_stats",
              "typed_config": {
                  "@type": "type.googleapis.com/"
                           "envoy.extensions.filters.http.grpc_stats.v3.FilterConfig",
                  "emit_filter_state": True, "stats_for_all_methods": False}}
MSG_LABELS = LABELS[:LABELS.index("destination_cluster") + 1]


def boot(port, filters):
    """A source-side sidecar HCM (traffic_direction OUTBOUND) routing to cluster "backend"
    (HTTP/2, istio.services metadata for destination_service)."""
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend", timeout="20s",
                                                  name="default")])])
    cl = h2_cluster("backend", port)
    cl["metadata"] = {"filter_metadata": {"istio": {
        "services": [{"host": SVC_HOST, "name": "catalog", "namespace": "shop"}]}}}
    bs = bootstrap([istio_listener(rc, False, filters=filters, name="0.0.0.0_9080")], [cl])
    bs["node"] = node("frontend-v1", "frontend", "v2")
    return bs


def calls(p):
    """Unary, server streaming (5 answers), client streaming (4 requests) and a unary call the
    server fails (NOT_FOUND, trailers-only): 7 request and 7 response messages."""
    ch = grpc.insecure_channel("127.0.0.1:%d" % p.port, options=[("grpc.enable_http_proxy", 0)])
    try:
        assert ch.unary_unary("/weft.Test/Unary")(b"hello", timeout=10) == b"echo:hello"
        got = list(ch.unary_stream("/weft.Test/Stream")(b"5", timeout=10))
        assert got == [b"msg%d" % i for i in range(5)]
        reqs = iter([b"a", b"", b"c" * 70000, b"d"])  # an empty one; one over many DATA frames
        assert ch.stream_unary("/weft.Test/Collect")(reqs, timeout=10) == b"a,," + b"c" * 70000 \
            + b",d"
        with pytest.raises(grpc.RpcError) as ei:
            ch.unary_unary("/weft.Test/Unary")(b"fail", timeout=10)
        assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        ch.close()


def wait_requests(p, n, timeout=10):
    """The Prometheus text once istio_requests_total adds up to n (recorded at stream end)."""
    deadline = time.monotonic() + timeout
    while True:
        text = prom(p)
        if sum(v for _, v, _ in series(text, "istio_requests_total")) >= n or \
                time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def test_grpc_stats_and_istio_message_counters(grpc_server, proxy_factory):
    p = proxy_factory(boot(grpc_server, [GRPC_STATS, stats_filter()]))
    calls(p)
    text = wait_requests(p, 4)
    st = p.stats()
    want = {"request_message_count": 7, "response_message_count": 7, "success": 3,
            "failure": 1, "total": 4, "0": 3, "5": 1}
    for k, v in want.items():
        assert st["cluster.backend.grpc." + k] == v, k
    assert sorted(k for k in st if k.startswith("cluster.backend.grpc.")) == \
        sorted("cluster.backend.grpc." + k for k in want)
    lines = [ln for ln in text.splitlines() if ln.startswith("envoy_cluster_grpc_")]
    assert sorted(lines) == sorted('envoy_cluster_grpc_%s{envoy_cluster_name="backend"} %d'
                                   % (k, v) for k, v in want.items())
    assert "# TYPE envoy_cluster_grpc_request_message_count counter" in text

    reqs = series(text, "istio_request_messages_total")
    resps = series(text, "istio_response_messages_total")
    assert len(reqs) == 1 and len(resps) == 1
    assert reqs[0][1] == 7 and resps[0][1] == 7
    for labels, _, order in reqs + resps:
        assert order == MSG_LABELS
        assert labels["reporter"] == "source"
        assert labels["source_workload"] == "frontend-v1"
        assert labels["destination_service"] == SVC_HOST
        assert labels["destination_service_name"] == "catalog"
    assert "# TYPE istio_request_messages_total counter" in text
    assert "# TYPE istio_response_messages_total counter" in text
    # the calls themselves, as before: request_protocol grpc, the gRPC statuses
    rt = series(text, "istio_requests_total")
    by_status = {}
    for labels, v, _ in rt:
        assert labels["request_protocol"] == "grpc"
        by_status[labels["grpc_response_status"]] = by_status.get(
            labels["grpc_response_status"], 0) + v
    assert by_status == {"0": 3, "5": 1}


def test_without_grpc_stats_no_message_counters(grpc_server, proxy_factory):
    """Without envoy.filters.http.grpc_stats there is no filter state: istio.stats records no
    message counters (as Istio's plugin), and no cluster grpc.* stat exists."""
    p = proxy_factory(boot(grpc_server, [stats_filter()]))
    calls(p)
    text = wait_requests(p, 4)
    assert "istio_request_messages_total" not in text
    assert "istio_response_messages_total" not in text
    assert not [k for k in p.stats() if k.startswith("cluster.backend.grpc.")]


def test_filter_state_off_keeps_envoy_stats_only(grpc_server, proxy_factory):
    """emit_filter_state false: Envoy's cluster stats still count, Istio's message counters
    have nothing to read."""
    gs = {"name": GRPC_STATS["name"], "typed_config": dict(GRPC_STATS["typed_config"])}
    gs["typed_config"]["emit_filter_state"] = False
    p = proxy_factory(boot(grpc_server, [gs, stats_filter()]))
    calls(p)
    text = wait_requests(p, 4)
    assert p.stats()["cluster.backend.grpc.request_message_count"] == 7
    assert "istio_request_messages_total" not in text


@pytest.mark.parametrize("field,value,msg", [
    ("stats_for_all_methods", True, "per-method stats (true) is not supported"),
    ("enable_upstream_stats", True, "upstream_rq_time (true) is not supported"),
    ("individual_method_stats_allowlist", {"services": [{"name": "weft.Test"}]},
     "per-method stats are not supported"),
])
def test_unsupported_config_is_rejected(field, value, msg, tmp_path):
    gs = {"name": GRPC_STATS["name"], "typed_config": dict(GRPC_STATS["typed_config"])}
    gs["typed_config"][field] = value
    bs = boot(1, [gs, stats_filter()])
    bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = 1
    bs["admin"]["address"]["socket_address"]["port_value"] = 2
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode != 0, r.stdout
    assert ("http_filters[0].typed_config.%s: %s" % (field, msg)) in r.stderr, r.stderr
