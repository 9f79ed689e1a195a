"""Operator report B022, the proxy's part: with Istio's default JSON access-log format every
line is one valid JSON object with typed values (numbers as numbers, missing values null);
a custom JSON object format gives exactly its own keys. (The control plane's fallback from an
unparsable accessLogFormat to this default belongs to weft-pilot.)"""
import json

from procs import start_app, stop_process
from proxyfix import (ISTIO_JSON_FORMAT, access_log, bootstrap, cluster, listener, proxy_factory,
                      route, route_config, vhost)

B022_KEYS = ["start_time", "method", "path", "protocol", "response_code", "response_flags",
             "response_code_details", "connection_termination_details", "upstream_cluster",
             "upstream_host", "route_name", "authority", "request_id", "duration",
             "bytes_received", "bytes_sent"]


def _bs(port, fmt):
    rc = route_config([vhost("catalog", ["catalog"], [route(prefix="/", cluster="backend",
                                                            name="default")])])
    return bootstrap(listeners=[listener(rc, access_logs=[access_log(json_format=fmt)])],
                     clusters=[cluster("backend", [port])])


def test_istio_default_json_lines(proxy_factory):
    proc, port = start_app()
    try:
        p = proxy_factory(_bs(port, ISTIO_JSON_FORMAT))
        assert p.request("GET", "/healthz", headers={"host": "catalog"})[0] == 200
        assert p.request("GET", "/", headers={"host": "nosuch.example.internal"})[0] == 404
        ok, nr = [json.loads(l) for l in p.access_log_lines(2)]
        for line in (ok, nr):
            assert all(k in line for k in B022_KEYS), sorted(set(B022_KEYS) - set(line))
            assert isinstance(line["response_code"], int)
            assert isinstance(line["duration"], int) and isinstance(line["bytes_sent"], int)
        assert ok["response_code"] == 200 and ok["response_flags"] == "-"
        assert ok["upstream_cluster"] == "backend" and ok["route_name"] == "default"
        assert nr["response_code"] == 404
        assert nr["response_flags"] == "NR"
        assert nr["response_code_details"] == "route_not_found"
        assert nr["upstream_cluster"] is None and nr["upstream_host"] is None
        assert nr["route_name"] is None
    finally:
        stop_process(proc)


def test_custom_json_object_has_exactly_its_keys(proxy_factory):
    proc, port = start_app()
    try:
        fmt = {"code": "%RESPONSE_CODE%", "flags": "%RESPONSE_FLAGS%",
               "details": "%RESPONSE_CODE_DETAILS%"}
        p = proxy_factory(_bs(port, fmt))
        p.request("GET", "/", headers={"host": "nosuch"})
        line = json.loads(p.access_log_lines(1)[0])
        assert line == {"code": 404, "flags": "NR", "details": "route_not_found"}
    finally:
        stop_process(proc)


def test_route_metadata_is_accepted_and_dumped(proxy_factory, tmp_path):
    """Istio writes filter_metadata.istio.config on every route it generates: weft-proxy loads
    it (informational), shows it in /config_dump, and refuses a malformed one by path."""
    import subprocess
    from procs import free_port
    from proxyfix import proxy_path, write_bootstrap
    cfg = "/apis/networking.istio.io/v1/namespaces/shop/virtual-service/catalog"
    rt = route(prefix="/", cluster="backend")
    rt["metadata"] = {"filter_metadata": {"istio": {"config": cfg}}}
    rc = route_config([vhost("catalog", ["*"], [rt])])
    bs = bootstrap(listeners=[listener(rc)], clusters=[cluster("backend", [1])])
    p = proxy_factory(bs)
    status, _, body = p.admin("/config_dump")
    assert status == 200 and cfg.encode() in body
    rt["metadata"] = {"filter_metadata": "nope"}
    bad = bootstrap(listeners=[listener(rc, port=free_port())], clusters=[cluster("backend", [1])],
                    admin_port=free_port())
    path = write_bootstrap(bad, str(tmp_path))
    r = subprocess.run([proxy_path(), "-c", path, "--mode", "validate"], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 1
    assert "routes[0].metadata.filter_metadata" in r.stderr
