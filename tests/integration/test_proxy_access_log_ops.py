"""weft-proxy: access-log operators and admin details checked against Envoy's source.

- %GRPC_STATUS% / %GRPC_STATUS_NUMBER% (http_specific_formatter.cc GrpcStatusFormatter,
  grpc/common.cc getGrpcStatus, grpc/status.cc httpToGrpcStatus): "-" unless the request is
  gRPC (content-type application/grpc or application/grpc+...); then grpc-status from the
  response, else mapped from the response code (503 -> Unavailable, 404 -> Unimplemented,
  200 -> Unknown).
- %FILTER_STATE(KEY:TYPE)%: only PLAIN, TYPED and FIELD (with a field name) are accepted
  (FilterStateFormatter::create); format errors use Envoy's wording.
- the admin address log line names the port bound when port 0 is configured.
- /stats/prometheus checks type= and format= as /stats does (StatsParams::parse): 400.
"""
import os
import re
import subprocess
import time

import pytest

from procs import free_port, running_apps
from proxyfix import (access_log, bootstrap, cluster, http_request, listener, proxy_factory,
                      proxy_path, route, route_config, simple_routes, vhost, write_bootstrap)
from scripted_upstream import upstreams

assert proxy_factory and upstreams  # fixtures, imported for pytest

GRPC_FMT = "%GRPC_STATUS% %GRPC_STATUS(SNAKE_STRING)% %GRPC_STATUS_NUMBER% %RESPONSE_CODE%\n"
GRPC = {"content-type": "application/grpc"}


@pytest.fixture(scope="module")
def app():
    with running_apps("a") as ports:
        yield ports["a"]


def _log_bs(app, rc=None, fmt=GRPC_FMT, json_format=None):
    logs = [access_log("@LOG:ops@", fmt=None if json_format else fmt, json_format=json_format)]
    return bootstrap([listener(rc or simple_routes("backend"), access_logs=logs)],
                     [cluster("backend", [app])])


def _lines(proxy, n):
    return proxy.access_log_lines(n, name="ops")


def test_grpc_request_to_missing_cluster_logs_unavailable(app, proxy_factory):
    """A gRPC request answered 503 NC gets Envoy's gRPC local reply: :status 200 (logged),
    grpc-status 14 UNAVAILABLE. A plain request to the same route logs '-' and 503."""
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="missing")])])
    proxy = proxy_factory(_log_bs(app, rc=rc))
    status, hdrs, _ = proxy.request("POST", "/pkg.Svc/Call", headers=GRPC, body=b"")
    assert (status, hdrs["grpc-status"]) == (200, "14")
    status, _, _ = proxy.request("GET", "/plain")
    assert status == 503
    assert _lines(proxy, 2) == ["Unavailable UNAVAILABLE 14 200", "- - - 503"]


def test_grpc_status_from_the_response_code(app, proxy_factory):
    """No grpc-status: 200 -> Unknown, 404 -> Unimplemented; grpc-web is not gRPC."""
    proxy = proxy_factory(_log_bs(app))
    plus = {"content-type": "application/grpc+proto"}
    web = {"content-type": "application/grpc-web"}
    assert proxy.request("POST", "/status/200", headers=GRPC, body=b"")[0] == 200
    assert proxy.request("POST", "/status/404", headers=plus, body=b"")[0] == 404
    assert proxy.request("POST", "/status/503", headers=web, body=b"")[0] == 503
    assert _lines(proxy, 3) == ["Unknown UNKNOWN 2 200", "Unimplemented UNIMPLEMENTED 12 404",
                                "- - - 503"]


def test_grpc_status_header_of_the_upstream(upstreams, proxy_factory):
    """An upstream grpc-status header wins over the code, for gRPC requests only."""
    up = upstreams([("headers", 200, {"grpc-status": "7"})])
    proxy = proxy_factory(_log_bs(up.port))
    assert proxy.request("POST", "/pkg.Svc/Call", headers=GRPC, body=b"")[0] == 200
    assert proxy.request("POST", "/pkg.Svc/Call", body=b"")[0] == 200
    assert _lines(proxy, 2) == ["PermissionDenied PERMISSION_DENIED 7 200", "- - - 200"]


def test_grpc_status_from_the_trailers(upstreams, proxy_factory):
    """gRPC puts grpc-status in the trailers: they win over the headers and the code, and
    %TRAILER()% shows them."""
    up = upstreams([("trailers", 200, {"grpc-status": "14", "grpc-message": "down"})])
    fmt = "%GRPC_STATUS% %TRAILER(GRPC-MESSAGE)% %RESPONSE_CODE%\n"
    proxy = proxy_factory(_log_bs(up.port, fmt=fmt))
    assert proxy.request("POST", "/pkg.Svc/Call", headers=GRPC, body=b"")[0] == 200
    assert _lines(proxy, 1) == ["Unavailable down 200"]


def test_format_error_names_the_json_path(tmp_path, app):
    r = _validate(tmp_path, app, "%GRPC_STATUS(CAMEL)%\n")
    assert r.returncode == 1, r
    assert (b"access_log[0].typed_config.log_format.text_format_source.inline_string: "
            b"GrpcStatusFormatter" in r.stderr), r.stderr


def test_grpc_status_typed_json(app, proxy_factory):
    """JSON: the names are strings, GRPC_STATUS_NUMBER a number, null for plain requests."""
    jf = {"c": "%GRPC_STATUS%", "n": "%GRPC_STATUS_NUMBER%", "s": "%GRPC_STATUS(SNAKE_STRING)%"}
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="missing")])])
    proxy = proxy_factory(_log_bs(app, rc=rc, json_format=jf))
    proxy.request("POST", "/pkg.Svc/Call", headers=GRPC, body=b"")
    proxy.request("GET", "/plain")
    assert _lines(proxy, 2) == ['{"c":"Unavailable","n":14,"s":"UNAVAILABLE"}',
                                '{"c":null,"n":null,"s":null}']


def _validate(tmp_path, app, fmt):
    bs = _log_bs(app, fmt=fmt)
    lst = bs["static_resources"]["listeners"][0]
    lst["address"]["socket_address"]["port_value"] = free_port()
    bs["admin"]["address"]["socket_address"]["port_value"] = free_port()
    path = write_bootstrap(bs, str(tmp_path))
    return subprocess.run([proxy_path(), "--mode", "validate", "-c", path],
                          capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("fmt,msg", [
    ("%FILTER_STATE(istio.peer:BOGUS)%\n",
     "Invalid filter state serialize type, only support PLAIN/TYPED/FIELD."),
    ("%UPSTREAM_FILTER_STATE(k:FIELD)%\n",
     "Invalid filter state serialize type, FIELD should be used with the field name."),
    ("%FILTER_STATE%\n", "Invalid filter state configuration, key cannot be empty."),
    ("%GRPC_STATUS(CAMEL)%\n",
     "GrpcStatusFormatter only supports CAMEL_STRING, SNAKE_STRING or NUMBER."),
])
def test_format_errors_use_envoys_words(tmp_path, app, fmt, msg):
    r = _validate(tmp_path, app, fmt)
    assert r.returncode == 1, r
    assert msg.encode() in r.stderr, r.stderr


@pytest.mark.parametrize("fmt", ["%FILTER_STATE(k)%", "%FILTER_STATE(k:PLAIN):10%",
                                 "%FILTER_STATE(k:TYPED)%", "%UPSTREAM_FILTER_STATE(k:FIELD:f)%"])
def test_valid_filter_state_formats(tmp_path, app, fmt):
    r = _validate(tmp_path, app, fmt + "\n")
    assert r.returncode == 0, r.stderr


def test_admin_port_zero_logs_the_bound_port(tmp_path, app):
    """admin port_value 0: the 'admin address' line names the port the kernel picked, and
    the admin interface answers there."""
    bs = _log_bs(app)
    bs["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] = \
        free_port()
    bs["admin"]["address"]["socket_address"]["port_value"] = 0
    path = write_bootstrap(bs, str(tmp_path))
    err_path = os.path.join(str(tmp_path), "stderr.txt")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([proxy_path(), "-c", path, "--concurrency", "1"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        port, deadline = None, time.monotonic() + 15
        while port is None and time.monotonic() < deadline and proc.poll() is None:
            with open(err_path, "rb") as f:
                m = re.search(rb"admin address: 127\.0\.0\.1:(\d+)", f.read())
            if m:
                port = int(m.group(1))
            else:
                time.sleep(0.05)
        assert port, open(err_path, "rb").read()
        assert port != 0
        status, _, body = http_request("127.0.0.1", port, "GET", "/ready", timeout=5)
        assert status == 200, body
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


@pytest.mark.parametrize("query,status,body", [
    ("?type=bogus", 400, b"invalid &type= param"),
    ("?format=bogus", 400, b"usage: /stats?format="),
    ("?type=Counters", 200, b""),
    ("?format=json", 200, b""),
])
def test_prometheus_checks_params_as_stats(app, proxy_factory, query, status, body):
    """Envoy's /stats/prometheus runs StatsParams::parse first, as /stats does."""
    proxy = proxy_factory(_log_bs(app))
    got, hdrs, text = proxy.admin("/stats/prometheus" + query)
    assert got == status, text
    assert text.startswith(body), text
    if status == 200:
        assert hdrs["content-type"].startswith("text/plain; version=0.0.4")
    assert proxy.admin("/stats" + query)[0] == (400 if status == 400 else 200)
