"""Istio's standard metrics in weft-proxy (envoy-istio-behaviour.md §7): the istio.stats and
istio.metadata_exchange HTTP filters as Istio generates them, the x-envoy-peer-metadata
exchange between a client-side (reporter=source) and a server-side (reporter=destination)
proxy, istio_requests_total & co. in /stats and /stats/prometheus, and the book's timeout
scenario (504 UT at the source, 0 DC at the destination, §7.3).
"""
import json
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from procs import start_app, stop_process
from proxyfix import (ISTIO_TEXT_FORMAT, access_log, bootstrap, cluster, listener, proxy_factory,
                      proxy_path, route, route_config, vhost, write_bootstrap)

TYPED_STRUCT = "type.googleapis.com/udpa.type.v1.TypedStruct"
SVC_HOST = "catalog.shop.svc.cluster.local"
LABELS = ["reporter", "source_workload", "source_canonical_service", "source_canonical_revision",
          "source_workload_namespace", "source_principal", "source_app", "source_version",
          "source_cluster", "destination_workload", "destination_workload_namespace",
          "destination_principal", "destination_app", "destination_version",
          "destination_service", "destination_canonical_service",
          "destination_canonical_revision", "destination_service_name",
          "destination_service_namespace", "destination_cluster", "request_protocol",
          "response_code", "grpc_response_status", "response_flags",
          "connection_security_policy"]


def node(workload, app, version, ns="shop", pod=None):
    """A bootstrap node as Istio's pilot-agent writes its metadata."""
    return {"id": "sidecar~10.0.0.1~%s.%s~%s.svc.cluster.local" % (pod or workload + "-abc", ns,
                                                                   ns),
            "cluster": "%s.%s" % (app, ns),
            "metadata": {"NAME": pod or workload + "-abc", "NAMESPACE": ns,
                         "WORKLOAD_NAME": workload, "CLUSTER_ID": "Kubernetes",
                         "MESH_ID": "cluster.local", "ISTIO_VERSION": "1.24.0",
                         "OWNER": "kubernetes://apis/apps/v1/namespaces/%s/deployments/%s"
                                  % (ns, workload),
                         "LABELS": {"app": app, "version": version,
                                    "service.istio.io/canonical-name": app,
                                    "service.istio.io/canonical-revision": version}}}


def mx_filter(inbound):
    """istio.metadata_exchange as pilot/pkg/xds/filters/filters.go writes it."""
    if inbound:
        value = {"downstream_discovery": [{"istio_headers": {}}, {"workload_discovery": {}}],
                 "downstream_propagation": [{"istio_headers": {}}]}
    else:
        value = {"upstream_discovery": [{"istio_headers": {}}, {"workload_discovery": {}}],
                 "upstream_propagation": [{"istio_headers": {}}]}
    return {"name": "istio.metadata_exchange",
            "typed_config": {"@type": TYPED_STRUCT,
                             "type_url": "type.googleapis.com/io.istio.http.peer_metadata.Config",
                             "value": value}}


def stats_filter(**value):
    return {"name": "istio.stats",
            "typed_config": {"@type": TYPED_STRUCT,
                             "type_url": "type.googleapis.com/stats.PluginConfig",
                             "value": value}}


def istio_listener(rc, inbound, filters=None, **kw):
    lst = listener(rc, access_logs=[access_log(fmt=ISTIO_TEXT_FORMAT)], **kw)
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    if filters is None:
        filters = [mx_filter(inbound), stats_filter(disable_host_header_fallback=inbound)]
    hcm["http_filters"] = list(filters) + hcm["http_filters"]
    lst["traffic_direction"] = "INBOUND" if inbound else "OUTBOUND"
    return lst


def svc_cluster(name, port):
    return cluster(name, [port], metadata={"filter_metadata": {"istio": {
        "services": [{"host": SVC_HOST, "name": "catalog", "namespace": "shop"}]}}})


def server_bs(app_port, timeout=None):
    rc = route_config([vhost("inbound|http|9080", ["*"], [route(
        prefix="/", cluster="inbound|9080||", timeout=timeout or "0s", name="default")])])
    bs = bootstrap([istio_listener(rc, True, name="virtualInbound")],
                   [svc_cluster("inbound|9080||", app_port)])
    bs["node"] = node("catalog-v1", "catalog", "v1")
    return bs


def client_bs(upstream_port, timeout=None):
    cname = "outbound|9080||" + SVC_HOST
    rc = route_config([vhost(SVC_HOST + ":9080", ["*"], [route(
        prefix="/", cluster=cname, timeout=timeout or "0s", name="default")])], name="9080")
    bs = bootstrap([istio_listener(rc, False, name="0.0.0.0_9080")],
                   [svc_cluster(cname, upstream_port)])
    bs["node"] = node("frontend-v1", "frontend", "v2")
    return bs


# ---------------------------------------------------------------- reading the metrics

PROM_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$')
PROM_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def prom(p, query=""):
    status, _, body = p.admin("/stats/prometheus" + query)
    assert status == 200
    return body.decode()


def series(text, family):
    """[(labels dict, value, label order)] of the samples of one Prometheus family."""
    out = []
    for line in text.splitlines():
        m = PROM_LINE.match(line)
        if not m or m.group(1) != family:
            continue
        pairs = PROM_LABEL.findall(m.group(2))
        out.append((dict(pairs), float(m.group(3)), [k for k, _ in pairs]))
    return out


def requests_total(p):
    return series(prom(p), "istio_requests_total")


def count(rows, **want):
    return sum(v for lab, v, _ in rows if all(lab.get(k) == str(x) for k, x in want.items()))


def wait_total(p, n, timeout=10):
    deadline = time.monotonic() + timeout
    rows = requests_total(p)
    while sum(v for _, v, _ in rows) < n and time.monotonic() < deadline:
        time.sleep(0.05)
        rows = requests_total(p)
    return rows


@pytest.fixture
def app():
    proc, port = start_app("--name", "catalog")
    yield port
    stop_process(proc)


@pytest.fixture
def mesh(app, proxy_factory):
    server = proxy_factory(server_bs(app))
    client = proxy_factory(client_bs(server.port), concurrency=2)
    return client, server


HOST = {"Host": SVC_HOST + ":9080"}


# ---------------------------------------------------------------- exchange and labels

def test_exchange_headers_reach_neither_app_nor_client(mesh):
    client, server = mesh
    status, headers, body = client.request("GET", "/echo", headers=HOST)
    assert status == 200
    seen = {k.lower() for k, _ in json.loads(body.split(b"\n")[0] if body.startswith(b"{")
                                            else body)["headers"]}
    assert "x-envoy-peer-metadata" not in seen and "x-envoy-peer-metadata-id" not in seen
    assert "x-envoy-peer-metadata" not in headers and "x-envoy-peer-metadata-id" not in headers


def test_destination_answers_with_its_metadata_only_to_a_peer(mesh):
    client, server = mesh
    # a request without exchange headers gets none back
    _, headers, _ = server.request("GET", "/status/200")
    assert "x-envoy-peer-metadata" not in headers
    # the client proxy's own headers, captured by sending them through the server proxy
    md, mid = _client_exchange_headers(client)
    _, headers, _ = server.request("GET", "/status/200", headers={
        "x-envoy-peer-metadata": md, "x-envoy-peer-metadata-id": mid})
    assert headers["x-envoy-peer-metadata-id"].startswith("sidecar~10.0.0.1~catalog-v1-abc")
    assert headers["x-envoy-peer-metadata"] and headers["x-envoy-peer-metadata"] != md


def _client_exchange_headers(client):
    """The exchange headers the client proxy sends upstream (read from a plain echo app)."""
    proc, port = start_app("--name", "echo")
    try:
        bs = client_bs(port)
        from proxyfix import start_proxy
        p = start_proxy(bs)
        try:
            _, _, body = p.request("GET", "/echo", headers=HOST)
            hdrs = dict((k.lower(), v) for k, v in json.loads(body)["headers"])
        finally:
            p.stop()
            shutil.rmtree(p.tmpdir, ignore_errors=True)
    finally:
        stop_process(proc)
    assert hdrs["x-envoy-peer-metadata-id"].startswith("sidecar~10.0.0.1~frontend-v1-abc")
    return hdrs["x-envoy-peer-metadata"], hdrs["x-envoy-peer-metadata-id"]


def test_client_replaces_exchange_headers_sent_by_the_app(app, proxy_factory):
    proc, port = start_app("--name", "echo")
    try:
        p = proxy_factory(client_bs(port))
        _, _, body = p.request("GET", "/echo", headers=dict(
            HOST, **{"x-envoy-peer-metadata": "Zm9v", "x-envoy-peer-metadata-id": "forged"}))
        hdrs = [(k.lower(), v) for k, v in json.loads(body)["headers"]]
        ids = [v for k, v in hdrs if k == "x-envoy-peer-metadata-id"]
        assert len(ids) == 1 and ids[0].startswith("sidecar~"), hdrs
        assert [v for k, v in hdrs if k == "x-envoy-peer-metadata"] != ["Zm9v"]
    finally:
        stop_process(proc)


def test_labels_on_both_sides(mesh):
    client, server = mesh
    for path in ("/status/200", "/status/200", "/status/503"):
        client.request("GET", path, headers=HOST)
    src = wait_total(client, 3)
    dst = wait_total(server, 3)
    for rows in (src, dst):
        for _, _, order in rows:
            assert order == LABELS
    ok = [lab for lab, v, _ in src if lab["response_code"] == "200"]
    assert len(ok) == 1 and count(src, response_code=200) == 2
    assert ok[0] == {
        "reporter": "source", "source_workload": "frontend-v1",
        "source_canonical_service": "frontend", "source_canonical_revision": "v2",
        "source_workload_namespace": "shop", "source_principal": "unknown",
        "source_app": "frontend", "source_version": "v2", "source_cluster": "Kubernetes",
        "destination_workload": "catalog-v1", "destination_workload_namespace": "shop",
        "destination_principal": "unknown", "destination_app": "catalog",
        "destination_version": "v1", "destination_service": SVC_HOST,
        "destination_canonical_service": "catalog", "destination_canonical_revision": "v1",
        "destination_service_name": "catalog", "destination_service_namespace": "shop",
        "destination_cluster": "Kubernetes", "request_protocol": "http", "response_code": "200",
        "grpc_response_status": "", "response_flags": "-",
        "connection_security_policy": "unknown"}
    dok = [lab for lab, v, _ in dst if lab["response_code"] == "200"]
    assert len(dok) == 1 and count(dst, response_code=200) == 2
    d = dok[0]
    assert d["reporter"] == "destination" and d["source_workload"] == "frontend-v1"
    assert d["source_app"] == "frontend" and d["source_canonical_revision"] == "v2"
    assert d["destination_workload"] == "catalog-v1" and d["destination_service"] == SVC_HOST
    assert d["connection_security_policy"] == "none"
    assert count(src, response_code=503) == 1 and count(dst, response_code=503) == 1


def test_stats_names_histograms_and_build(mesh):
    client, _ = mesh
    client.request("GET", "/status/200", headers=HOST)
    wait_total(client, 1)
    stats = client.stats()
    names = [n for n in stats if n.startswith("istiocustom.istio_requests_total.")]
    assert len(names) == 1
    assert names[0].startswith("istiocustom.istio_requests_total.reporter.source."
                               "source_workload.frontend-v1.")
    assert ".grpc_response_status.response_flags.-." in names[0]
    assert stats["istiocustom.istio_build.component.proxy.tag.1.24.0"] == 1
    text = prom(client)
    assert 'istio_build{component="proxy",tag="1.24.0"} 1' in text
    assert "# TYPE istio_requests_total counter" in text
    for h in ("istio_request_duration_milliseconds", "istio_request_bytes",
              "istio_response_bytes"):
        assert "# TYPE %s histogram" % h in text
        buckets = [ln for ln in text.splitlines() if ln.startswith(h + "_bucket{")]
        les = [re.search(r'le="([^"]+)"', ln).group(1) for ln in buckets]
        assert les[:3] == ["0.5", "1", "5"] and les[-2:] == ["3600000", "+Inf"]
    rq = [ln for ln in text.splitlines() if ln.startswith("istio_request_bytes_sum{")]
    assert len(rq) == 1 and int(rq[0].rsplit(" ", 1)[1]) > 50  # wire bytes, headers included
    _, _, body = client.admin("/stats?filter=istio_request_duration")
    assert b"P50(" in body or b"No recorded values" not in body


def test_prometheus_output_passes_promtool(mesh):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed")
    client, _ = mesh
    client.request("GET", "/status/200", headers=HOST)
    client.request("GET", "/status/404", headers=HOST)
    wait_total(client, 2)
    body = prom(client)
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                       text=True, timeout=30)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode in (0, 3), out
    lints = ("no help text", 'counter metrics should have "_total" suffix',
             'non-counter metrics should not have "_total" suffix',
             "metric names should not contain abbreviated units",
             'use base unit "seconds" instead of "milliseconds"')
    bad = [ln for ln in out.splitlines() if ln and not ln.endswith(lints)]
    assert not bad, "\n".join(bad)


def test_stats_matcher_applies_to_istio_names(app, proxy_factory):
    bs = client_bs(app)
    bs["stats_config"] = {"stats_matcher": {"exclusion_list": {"patterns": [
        {"safe_regex": {"regex": "istiocustom\\.istio_request_bytes\\..*"}},
        {"prefix": "istiocustom.istio_build"}]}}}
    p = proxy_factory(bs)
    p.request("GET", "/status/200", headers=HOST)
    wait_total(p, 1)
    text = prom(p)
    assert "istio_requests_total{" in text and "istio_response_bytes_count{" in text
    assert "istio_request_bytes" not in text and "istio_build" not in text


def test_host_header_fallback_without_cluster_metadata(app, proxy_factory):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="plain")])])
    bs = bootstrap([istio_listener(rc, False, filters=[stats_filter()])],
                   [cluster("plain", [app])])
    bs["node"] = node("frontend-v1", "frontend", "v2")
    p = proxy_factory(bs)
    p.request("GET", "/status/200", headers={"Host": "reviews:9080"})
    rows = wait_total(p, 1)
    lab = rows[0][0]
    assert lab["destination_service"] == "reviews:9080"
    assert lab["destination_service_name"] == "reviews:9080"
    assert lab["destination_workload"] == "unknown"
    assert lab["destination_canonical_revision"] == "latest"


# ---------------------------------------------------------------- configuration errors

@pytest.mark.parametrize("value, where", [
    ({"reporter": "SERVER_GATEWAY"}, "value.reporter"),
    ({"metrics": [{"name": "requests_total", "drop": True}]}, "value.metrics"),
    ({"rotation_interval": "60s"}, "value.rotation_interval"),
    ({"unknown_field": 1}, "value.unknown_field"),
])
def test_unsupported_stats_config_is_rejected(value, where):
    bs = client_bs(1)
    hcm = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"][1] = stats_filter(**value)
    _validate_fails(bs, "http_filters[1].typed_config." + where)


@pytest.mark.parametrize("value, where", [
    ({"upstream_discovery": [{"baggage": {}}]}, "value.upstream_discovery[0].baggage"),
    ({"upstream_propagation": [{"istio_headers": {"skip_external_clusters": True}}]},
     "value.upstream_propagation[0].istio_headers.skip_external_clusters"),
    ({"additional_labels": ["role"]}, "value.additional_labels"),
])
def test_unsupported_mx_config_is_rejected(value, where):
    bs = client_bs(1)
    hcm = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"][0]["typed_config"]["value"] = value
    _validate_fails(bs, "http_filters[0].typed_config." + where)


def _validate_fails(bs, where):
    d = tempfile.mkdtemp(prefix="istio-bs-")
    try:
        bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = 1
        bs["admin"]["address"]["socket_address"]["port_value"] = 2
        path = write_bootstrap(bs, d)
        r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0, r.stdout
        assert where in r.stderr, r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_direct_plugin_config_and_cluster_metadata_are_accepted():
    bs = client_bs(1)
    hcm = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"][1] = {"name": "istio.stats", "typed_config": {
        "@type": "type.googleapis.com/stats.PluginConfig", "disable_host_header_fallback": True,
        "tcp_reporting_duration": "5s"}}
    d = tempfile.mkdtemp(prefix="istio-bs-")
    try:
        bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = 1
        bs["admin"]["address"]["socket_address"]["port_value"] = 2
        path = write_bootstrap(bs, d)
        r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- the book's timeout scenario

N_REQUESTS = 80


def test_timeout_scenario_source_504_ut_destination_0_dc(proxy_factory):
    """Client proxy (route timeout 0.5 s) -> server proxy -> backend with latency uniform in
    0..1000 ms: about half the requests end 504 UT at the source; the destination records the
    same requests as response code 0 with DC; the 200s agree (§7.3)."""
    proc, app_port = start_app("--name", "catalog", "--latency-ms", "0-1000", "--seed", "42")
    try:
        server = proxy_factory(server_bs(app_port))
        client = proxy_factory(client_bs(server.port, timeout="0.5s"), concurrency=2)
        codes = []
        lock = threading.Lock()

        def worker(n):
            for _ in range(n):
                status, _, _ = client.request("GET", "/status/200", headers=HOST, timeout=10)
                with lock:
                    codes.append(status)

        threads = [threading.Thread(target=worker, args=(N_REQUESTS // 10,)) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(codes) == N_REQUESTS and set(codes) <= {200, 504}, codes
        n504 = codes.count(504)
        assert 0.2 * N_REQUESTS <= n504 <= 0.8 * N_REQUESTS, n504

        # the client-side access log: the 504s end UT
        lines = client.access_log_lines(N_REQUESTS)
        assert sum(1 for ln in lines if '" 504 UT ' in ln) == n504
        src = wait_total(client, N_REQUESTS)
        assert count(src, reporter="source", response_code=504, response_flags="UT") == n504
        assert count(src, reporter="source", response_code=200, response_flags="-") == \
            N_REQUESTS - n504
        assert sum(v for _, v, _ in src) == N_REQUESTS

        # the destination saw every request; those the source timed out end 0 DC there
        dst = wait_total(server, N_REQUESTS, timeout=15)
        assert sum(v for _, v, _ in dst) == N_REQUESTS
        d0 = count(dst, reporter="destination", response_code=0, response_flags="DC")
        d200 = count(dst, reporter="destination", response_code=200)
        assert d0 + d200 == N_REQUESTS
        assert abs(d0 - n504) <= 2, (d0, n504)  # a reply racing the reset may still go out
        dlines = server.access_log_lines(N_REQUESTS)
        assert sum(1 for ln in dlines if '" 0 DC ' in ln) == d0
        # a success-rate query of the form response_code!~"5.." sees only 200s and 0s at the
        # destination, 504s at the source: the views disagree exactly as §7.3 explains
        assert count(dst, response_code=504) == 0
        timed_out = [lab for lab, v, _ in src if lab["response_code"] == "504"]
        assert all(lab["destination_workload"] == "unknown" for lab in timed_out)
        dc = [lab for lab, v, _ in dst if lab["response_code"] == "0"]
        assert all(lab["source_workload"] == "frontend-v1" for lab in dc)
    finally:
        stop_process(proc)
