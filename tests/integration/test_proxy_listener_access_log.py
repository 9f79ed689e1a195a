"""Listener.access_log on a weft-proxy listener (Envoy's ActiveStreamListenerBase::emitLogs):
a connection that ends before a filter chain's network filters take it is logged with what the
stream info holds at that point. A plaintext client (curl) on a listener whose only chain wants
`transport_protocol: tls` (Istio's STRICT inbound chain) is closed and logged with response
code 0, %RESPONSE_FLAGS% NR and %RESPONSE_CODE_DETAILS% filter_chain_not_found; a
listener_filters_timeout is logged without a flag or details (ActiveTcpSocket::unlink). The
AccessLog filter response_flag_filter (Istio's {"flags": ["NR"]} on every listener log) decides
which entries are written, on listener and connection-manager logs alike.
"""
import copy
import json
import socket
import subprocess
import time

from conftest import run_weftctl
from procs import running_apps
from proxyfix import (ISTIO_JSON_FORMAT, ISTIO_TEXT_FORMAT, access_log, bootstrap,  # noqa: F401
                      cluster, listener, proxy_factory, proxy_path, route, route_config,
                      simple_routes, vhost, write_bootstrap)

import pytest

NR_FILTER = {"response_flag_filter": {"flags": ["NR"]}}


@pytest.fixture(scope="module")
def apps():
    with running_apps("a") as ports:
        yield ports


def tls_only_listener(logs, **extra):
    """tls_inspector and one chain for transport_protocol tls (STRICT's shape)."""
    lst = listener(simple_routes("a"), stat_prefix="tls_only")
    lst["listener_filters"] = [{
        "name": "envoy.filters.listener.tls_inspector",
        "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.listener."
                                  "tls_inspector.v3.TlsInspector"}}]
    lst["filter_chains"][0]["filter_chain_match"] = {"transport_protocol": "tls"}
    lst["access_log"] = logs
    lst.update(extra)
    return lst


def with_filter(log, flt):
    log = copy.deepcopy(log)
    log["filter"] = flt
    return log


def curl_plain(port):
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5",
                        "http://127.0.0.1:%d/healthz" % port],
                       capture_output=True, text=True, timeout=10)
    return r.returncode, r.stdout


def test_plaintext_on_tls_only_listener_logged_nr(apps, proxy_factory):
    logs = [with_filter(access_log("@LOG:istio@", ISTIO_TEXT_FORMAT), NR_FILTER),
            with_filter(access_log("@LOG:json@", json_format=ISTIO_JSON_FORMAT), NR_FILTER)]
    proxy = proxy_factory(bootstrap([tls_only_listener(logs)], [cluster("a", [apps["a"]])]))
    rc, code = curl_plain(proxy.port)
    assert rc != 0 and code == "000"  # closed without a response
    proxy.wait_stat("listener.127.0.0.1_%d.no_filter_chain_match" % proxy.port, 1)
    e = proxy.istio_log(1)[0]
    assert e["response_code"] == "0"
    assert e["response_flags"] == "NR"
    assert e["response_code_details"] == "filter_chain_not_found"
    assert (e["method"], e["path"], e["protocol"]) == ("-", "-", "-")
    assert e["bytes_received"] == "0" and e["bytes_sent"] == "0"
    assert e["downstream_local_address"] == "127.0.0.1:%d" % proxy.port
    assert e["downstream_remote_address"].startswith("127.0.0.1:")
    assert e["upstream_host"] == "-" and e["upstream_cluster"] == "-"
    assert e["requested_server_name"] == "-" and e["route_name"] == "-"
    assert e["start_time"].endswith("Z")
    j = json.loads(proxy.access_log_lines(1, name="json")[0])
    assert j["response_code"] == 0
    assert j["response_flags"] == "NR"
    assert j["response_code_details"] == "filter_chain_not_found"
    assert j["bytes_received"] == 0 and j["bytes_sent"] == 0
    assert j["upstream_host"] is None and j["method"] is None and j["protocol"] is None
    assert isinstance(j["duration"], int) and j["duration"] >= 0
    # `weftctl log explain` reads both real lines: code 0, NR as the listener's, no request
    for name in ("istio", "json"):
        r = run_weftctl("log", "explain", proxy.access_log_path(name))
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert out.startswith("line 1: 0 NR filter_chain_not_found\n"), out
        assert "request: none (the connection closed before any was read)" in out, out
        assert "NR (NoRouteFound): No filter chain of the listener matched the connection" in out
        assert "filter_chain_not_found: No filter chain of the listener matched" in out
        assert "STRICT PeerAuthentication" in out
        r = run_weftctl("log", "explain", "-o", "json", proxy.access_log_path(name))
        f = json.loads(r.stdout)["failures"][0]
        assert (f["response_code"], f["response_flags"]) == (0, "NR")
        assert f["response_code_details"] == "filter_chain_not_found"


def test_tls_without_matching_chain_logs_sni(apps, proxy_factory):
    # a raw_buffer-only listener: a ClientHello finds no chain, the inspector's SNI is logged
    lst = tls_only_listener([with_filter(access_log("@LOG:istio@", ISTIO_TEXT_FORMAT),
                                         NR_FILTER)])
    lst["filter_chains"][0]["filter_chain_match"] = {"transport_protocol": "raw_buffer"}
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % proxy.port, "-quiet",
                    "-servername", "a.example"], input=b"", capture_output=True, timeout=10)
    e = proxy.istio_log(1)[0]
    assert (e["response_code"], e["response_flags"]) == ("0", "NR")
    assert e["response_code_details"] == "filter_chain_not_found"
    assert e["requested_server_name"] == "a.example"


def test_listener_filters_timeout_logged_without_flag(apps, proxy_factory):
    # no filter: the timed-out connection is logged ("-" flags and details, code 0); the NR
    # filter (Istio's) leaves it out
    logs = [access_log("@LOG:all@", "%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n"),
            with_filter(access_log("@LOG:nr@", "%RESPONSE_FLAGS%\n"), NR_FILTER)]
    lst = tls_only_listener(logs, listener_filters_timeout="0.2s")
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    assert s.recv(100) == b""
    s.close()
    assert proxy.access_log_lines(1, name="all") == ["0 - -"]
    curl_plain(proxy.port)  # then one NR: the NR log has that one only
    assert proxy.access_log_lines(1, name="nr") == ["NR"]
    time.sleep(0.3)
    with open(proxy.access_log_path("nr")) as f:
        assert f.read() == "NR\n"


def test_matched_connection_not_logged_by_listener(apps, proxy_factory):
    # a connection a chain takes is the connection manager's to log, not the listener's
    rc = route_config([vhost("all", ["*"], [route(prefix="/healthz", cluster="a")])])
    lst = listener(rc,
                   access_logs=[with_filter(access_log("@LOG:hcm@", "%RESPONSE_CODE%\n"),
                                            {"response_flag_filter": {}})])
    lst["access_log"] = [access_log("@LOG:lis@", "%RESPONSE_FLAGS%\n")]
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    assert proxy.request("GET", "/healthz")[0] == 200
    assert proxy.request("GET", "/nowhere")[0] == 404
    # the HCM log's empty response_flag_filter passes entries with any flag: only the NR 404
    assert proxy.access_log_lines(1, name="hcm") == ["404"]
    time.sleep(0.3)
    with open(proxy.access_log_path("hcm")) as f:
        assert f.read() == "404\n"
    assert not _exists_nonempty(proxy.access_log_path("lis"))


def _exists_nonempty(path):
    try:
        with open(path) as f:
            return f.read() != ""
    except FileNotFoundError:
        return False


def validate(tmp_path, lst):
    path = write_bootstrap(bootstrap([lst], [cluster("a", [1])]), str(tmp_path))
    return subprocess.run([proxy_path(), "--mode", "validate", "-c", path],
                          capture_output=True, text=True, timeout=30)


def test_bad_filters_refused_with_path(tmp_path):
    lst = tls_only_listener([with_filter(access_log("/dev/null"),
                                         {"response_flag_filter": {"flags": ["XX"]}})])
    r = validate(tmp_path, lst)
    assert r.returncode != 0
    assert "access_log[0].filter.response_flag_filter.flags[0]" in r.stderr, r.stderr
    lst = tls_only_listener([with_filter(access_log("/dev/null"),
                                         {"status_code_filter": {}})])
    r = validate(tmp_path, lst)
    assert r.returncode != 0
    assert "unsupported access log filter" in r.stderr, r.stderr
