"""`weftctl log explain` on HTTP/2, gRPC and TCP lines (issue 19 item 6; protocols.md §2.5,
§3, §4.3, §4.4; operator reports B032 and B034): protocol errors name the port-naming cause,
gRPC requests get the status the client saw (the proxy's own replies mapped as Envoy maps
them, a router timeout as DEADLINE_EXCEEDED) and, for UT, which timeout fired (from a config
dump's route timeouts, or the logged grpc-timeout), refused streams read as GOAWAY/stream
limits, TCP proxy lines are read as connections; `-o json` carries the same readings.
"""
import json

from conftest import run_weftctl

CL = "outbound|80||catalog-grpc.shop.svc.cluster.local"


def istio_line(code, flags, details, duration=3, method="POST", path="/shop.Echo/Echo",
               proto="HTTP/2", ua="grpc-python/1.51.1", host="127.10.0.5:9090", route="default",
               cluster=CL, conn="-", tfr="-", rx=12, tx=0):
    return ('[2026-12-05T10:00:00.000Z] "%s %s %s" %s %s %s %s "%s" %d %d %d - "-" "%s" "id-1" '
            '"catalog-grpc:80" "%s" %s 127.10.0.4:40000 10.96.0.9:80 127.10.0.4:39000 - %s\n'
            % (method, path, proto, code, flags, details, conn, tfr, rx, tx, duration, ua, host,
               cluster, route))


def tcp_line(flags, conn="-", tfr="-", cluster="outbound|5432||db.shop.svc.cluster.local",
             host="127.10.0.7:5432", rx=0, tx=0, duration=1):
    return ('[2026-12-05T10:00:00.000Z] "- - -" 0 %s - %s "%s" %d %d %d - "-" "-" "-" "-" "%s" %s '
            '- 10.96.0.10:5432 127.10.0.4:41000 - -\n' % (flags, conn, tfr, rx, tx, duration,
                                                           host, cluster))


def explain(text, *args):
    r = run_weftctl("log", "explain", *args, stdin=text)
    assert r.returncode == 0, r.stderr
    return r.stdout


def items(doc, i=0):
    return {e["kind"]: e for e in doc["failures"][i]["explanations"]}


def test_b032_protocol_error_names_the_port_naming_cause():
    fix = ("the upstream may speak only HTTP/2 (gRPC): name the Service port grpc or http2 "
           "(or grpc-<suffix>), or set appProtocol: grpc")
    # the proxy in front of the app: UPE protocol_error, a gRPC local reply (code 200)
    out = explain(istio_line(200, "UPE", "upstream_reset_before_response_started{protocol_error}"))
    assert "protocol: Protocol error from the upstream" in out, out
    assert fix in out
    assert "gRPC status 14 UNAVAILABLE" in out
    assert "grpc-status: 14 (its HTTP 502 mapped" in out
    # UC connection_termination toward a gRPC app: the same cause, hedged against the idle race
    out = explain(istio_line(200, "UC",
                             "upstream_reset_before_response_started{connection_termination}"))
    assert "A gRPC request whose upstream closed the connection before answering" in out, out
    assert fix in out and "idle keep-alive race" in out
    # the same UC on a plain HTTP/1.1 request is not a port-naming story
    out = explain(istio_line(503, "UC",
                             "upstream_reset_before_response_started{connection_termination}",
                             method="GET", path="/", proto="HTTP/1.1", ua="curl/8"))
    assert fix not in out and "gRPC" not in out, out
    # -o json: the readings are items of their own kinds
    doc = json.loads(explain(istio_line(200, "UPE",
                                        "upstream_reset_before_response_started{protocol_error}"),
                             "-o", "json"))
    it = items(doc)
    assert fix in it["protocol"]["value"] and it["protocol"]["known"] is True
    assert it["grpc"]["value"].startswith("gRPC request (the user agent is a gRPC library's); "
                                          "gRPC status 14 UNAVAILABLE")
    assert doc["failures"][0]["protocol"] == "HTTP/2"


def route_dump(tmp_path, timeout, max_grpc):
    route = {"name": "default", "match": {"prefix": "/"},
             "route": {"cluster": CL, "timeout": timeout}}
    if max_grpc is not None:
        route["route"]["max_grpc_timeout"] = max_grpc
    d = {"configs": [
        {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"},
        {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
         "dynamic_route_configs": [{"route_config": {
             "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
             "name": "80", "virtual_hosts": [{"name": "catalog-grpc.shop.svc.cluster.local:80",
                                              "domains": ["*"], "routes": [route]}]}}]}]}
    p = tmp_path / ("dump-%s.json" % timeout)
    p.write_text(json.dumps(d))
    return p


def test_b034_timeout_is_deadline_exceeded_and_names_which_timeout_fired(tmp_path):
    ut = istio_line(200, "UT", "response_timeout", duration=1003)
    out = explain(ut)
    assert "gRPC status 4 DEADLINE_EXCEEDED" in out, out
    assert "grpc-status: 4, grpc-message: upstream request timeout" in out
    assert "Envoy PR #44479" in out
    # no dump: the duration and how to decide
    assert "this one fired after 1003 ms" in out and "--config-dump" in out
    # (1) VirtualService timeout 1s: the route's timeout fired
    out = explain(ut, "--config-dump", route_dump(tmp_path, "1s", "1s"))
    assert "Route default: timeout 1s, max_grpc_timeout 1s (caps the client's grpc-timeout)." \
        in out, out
    assert "The route's timeout fired: raise the VirtualService `timeout`" in out
    # (2) no VirtualService timeout (0s, max_grpc_timeout 0s): the client's grpc-timeout fired
    out = explain(istio_line(200, "UT", "response_timeout", duration=302), "--config-dump",
                  route_dump(tmp_path, "0s", "0s"))
    assert "max_grpc_timeout 0s (the client's grpc-timeout applies uncapped)" in out, out
    assert ("The client's grpc-timeout fired (after 302 ms, and the route has no timeout)"
            in out)
    # (3) route 1s, the client's longer deadline logged with %REQ(GRPC-TIMEOUT)%
    fmt = ('%REQ(:METHOD)% %REQ(:PATH)% %PROTOCOL% %RESPONSE_CODE% %RESPONSE_FLAGS% '
           '%RESPONSE_CODE_DETAILS% %DURATION% %REQ(GRPC-TIMEOUT)% %GRPC_STATUS(NUMBER)% '
           '%ROUTE_NAME%')
    line = "POST /shop.Echo/Echo HTTP/2 200 UT response_timeout 1001 5S 4 default\n"
    out = explain(line, "--format", fmt, "--config-dump", route_dump(tmp_path, "1s", "1s"))
    assert "The route's timeout fired (it caps the client's longer grpc-timeout: 5S)" in out, out
    assert "gRPC status 4 DEADLINE_EXCEEDED" in out
    # a shorter client deadline, no dump: the header and the duration decide
    line = "POST /shop.Echo/Echo HTTP/2 200 UT response_timeout 301 300m 4 default\n"
    out = explain(line, "--format", fmt)
    assert "the client's grpc-timeout fired" in out, out
    # (4) scaled to 0: UH -> 14 with Envoy's message
    out = explain(istio_line(200, "UH", "no_healthy_upstream", host="-"))
    assert "grpc-status: 14, grpc-message: no healthy upstream" in out, out


def test_grpc_status_codes_named_from_the_log_and_from_local_replies():
    fmt = ('%REQ(:METHOD)% %REQ(:PATH)% %PROTOCOL% %RESPONSE_CODE% %RESPONSE_FLAGS% '
           '%RESPONSE_CODE_DETAILS% %GRPC_STATUS% %REQ(CONTENT-TYPE)%')
    lines = ("POST /shop.Echo/Echo HTTP/2 200 - via_upstream NotFound application/grpc\n"
             "POST /shop.Echo/Echo HTTP/2 200 - via_upstream OK application/grpc\n"
             "POST /shop.Echo/Echo HTTP/2 200 - via_upstream PERMISSION_DENIED "
             "application/grpc+proto\n"
             "POST /x.Y/Z HTTP/2 200 - via_upstream Bogus application/grpc\n")
    doc = json.loads(explain(lines, "--format", fmt, "-o", "json"))
    assert doc["parsed"] == 4 and doc["failed"] == 3  # OK is no failure
    g = [items(doc, i)["grpc"]["value"] for i in range(3)]
    assert g[0].startswith("gRPC request (content-type application/grpc); gRPC status 5 "
                           "NOT_FOUND: the requested entity was not found.")
    assert "The status came from the application" in g[0]
    assert "gRPC status 7 PERMISSION_DENIED" in g[1]
    assert 'gRPC status "Bogus": not a gRPC status code.' in g[2]
    # local replies by HTTP status: 404 route miss -> 12, RBAC -> 7
    out = explain(istio_line(200, "NR", "route_not_found", host="-"))
    assert "gRPC status 12 UNIMPLEMENTED" in out, out
    out = explain(istio_line(200, "-", "rbac_access_denied_matched_policy[none]", host="-"))
    assert "grpc-status: 7, grpc-message: RBAC: access denied" in out, out
    # gRPC-Web is not gRPC
    line = "POST /x.Y/Z HTTP/1.1 503 UH no_healthy_upstream - application/grpc-web\n"
    assert "gRPC" not in explain(line, "--format", fmt)


def test_http2_resets_and_goaway():
    out = explain(istio_line(503, "UR",
                             "upstream_reset_before_response_started{remote_refused_stream_reset}",
                             method="GET", path="/", ua="curl/8"))
    assert "After a GOAWAY" in out and "refused-stream" in out, out
    out = explain(istio_line(503, "UR", "upstream_reset_before_response_started{remote_reset}",
                             method="GET", path="/", ua="curl/8"))
    assert "The upstream reset the HTTP/2 stream (RST_STREAM) before answering" in out, out
    # a client that cancels a gRPC call: DR http2.remote_reset, code 0
    out = explain(istio_line(0, "DR", "http2.remote_reset", duration=250))
    assert "that the client cancelled" in out and "CANCELLED (1)" in out, out
    # a reset after the response started is no local reply: no status was sent
    out = explain(istio_line(200, "UR", "upstream_reset_after_response_started{remote_reset}"))
    assert "whose stream was reset after the response had started" in out, out
    assert "grpc-status: 14" not in out and "truncated response" in out
    # downstream HTTP/2 protocol error
    out = explain(istio_line(400, "DPE", "http2.violation.of.messaging.rule", method="GET",
                             path="/", ua="nghttp2/1"))
    assert "Downstream HTTP/2 protocol error (http2.violation.of.messaging.rule)" in out, out


def test_tcp_lines_are_read_as_connections():
    out = explain(tcp_line("UF,URX", tfr="delayed connect error: 111"))
    assert "TCP: A TCP connection" in out and "outbound|5432||db.shop.svc.cluster.local" in out
    assert "UF: the TCP proxy could not connect" in out and "URX: the connect attempts" in out
    out = explain(tcp_line("UH", cluster="BlackHoleCluster", host="-"))
    assert "REGISTRY_ONLY" in out, out
    out = explain(tcp_line("UO"))
    assert "connectionPool.tcp.maxConnections" in out, out
    out = explain(tcp_line("-", conn="idle_timeout", rx=10, tx=20, duration=3600000))
    assert "Idle timeout (idle_timeout)" in out and "connectionPool.tcp.idleTimeout" in out, out
    # a session that ended normally is no failure
    out = explain(tcp_line("-", rx=10, tx=20, duration=3000))
    assert out.startswith("No failed requests in 1 access log lines."), out
    # JSON lines (Istio's keys, a TCP line has null method and protocol)
    line = json.dumps({"response_code": 0, "response_flags": "UF,URX", "method": None,
                       "protocol": None, "upstream_cluster": "outbound|5432||db",
                       "bytes_received": 0, "bytes_sent": 0, "duration": 2})
    doc = json.loads(explain(line + "\n", "-o", "json"))
    assert "UF: the TCP proxy" in items(doc)["tcp"]["value"]


def test_summary_keeps_the_protocol_reading_once_and_leaves_per_line_readings_out():
    bad = "upstream_reset_before_response_started{protocol_error}"
    text = (istio_line(200, "UPE", bad, duration=3) + istio_line(200, "UPE", bad, duration=5)
            + istio_line(200, "UT", "response_timeout", duration=1001))
    out = explain(text, "--summary")
    assert out.count("protocol: Protocol error from the upstream") == 1, out
    assert "gRPC:" not in out and "2       200    UPE" in out
    doc = json.loads(explain(text, "--summary", "-o", "json"))
    kinds = [e["kind"] for e in doc["explanations"]]
    assert kinds.count("protocol") == 1 and "grpc" not in kinds


def test_summary_of_block_all_names_registry_only_not_an_expected_direct_response():
    """A 502 from Istio's block_all virtual host (REGISTRY_ONLY) is a refused request, not the
    'expected' direct response of a configured route: --summary, which leaves out the per-line
    capture reading, must still say so (both modes use the same entry)."""
    text = "".join(istio_line(502, "-", "direct_response", method="GET", path="/",
                              proto="HTTP/1.1", ua="curl/7.88.1", host="-", cluster="-",
                              route="block_all") for _ in range(2))
    out = explain(text, "--summary")
    assert "2       502    -       direct_response" in out, out
    assert "block_all" in out and "REGISTRY_ONLY" in out and "ServiceEntry" in out, out
    assert "Expected" not in out, out
    # an ordinary route's direct response keeps the usual reading
    plain = explain(istio_line(503, "-", "direct_response", method="GET", path="/",
                               proto="HTTP/1.1", host="-", cluster="-", route="maint"),
                    "--summary")
    assert "Expected" in plain and "REGISTRY_ONLY" not in plain, plain
