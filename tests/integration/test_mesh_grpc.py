"""gRPC through the local mesh (issue 19 part 4; operator reports B032 and B034 in
../shared/cases/operator-reports.md; reference protocols.md §1, §3): Python grpcio (nobody on
the project wrote it) calls weft-app's gRPC service (shop.Echo, src/app/app_grpc.h) through the
client's sidecar, auto mTLS between the sidecars, and the server's sidecar in front of the app.

- A Service port named `grpc`: the call succeeds over HTTP/2 on both hops (the clusters carry
  HTTP/2 protocol options, the server's sidecar reads HTTP/2), server streaming works, and the
  destination's istio_requests_total says request_protocol="grpc", grpc_response_status="0",
  and both sidecars count the messages (istio_request_messages_total /
  istio_response_messages_total, from the envoy.filters.http.grpc_stats pilot configures).
- B032, the port named `http`: the server's sidecar speaks HTTP/1.1 to an HTTP/2-only server,
  which answers with a GOAWAY: the client gets UNAVAILABLE (14), never success, never a hang;
  the server's sidecar logs UPE upstream_reset_before_response_started{protocol_error} as a gRPC
  local reply (response code 200).
- B034: a VirtualService timeout of 1 s answers DEADLINE_EXCEEDED (4) "upstream request timeout"
  after about 1 s; a client deadline shorter than that applies; no endpoints answer UNAVAILABLE
  "no healthy upstream".

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
import json
import time

import pytest

from meshfix import mesh, wait_for  # noqa: F401

grpc = pytest.importorskip("grpc", reason="python3-grpcio (scripts/setup installs it)")
from grpcmsg import EchoRequest, EchoResponse  # noqa: E402

assert mesh

SVC = """apiVersion: v1
kind: Service
metadata: {name: catalog-grpc, namespace: shop}
spec:
  selector: {app: catalog-grpc}
  ports: [{name: %s, port: 80, targetPort: 9090}]
"""

VS_TIMEOUT = """apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: catalog-grpc, namespace: shop}
spec:
  hosts: [catalog-grpc]
  http:
  - timeout: 1s
    route: [{destination: {host: catalog-grpc}}]
"""

LOG_MESH = """\
accessLogFile: /dev/stdout
accessLogEncoding: JSON
accessLogFormat: '{"code":"%RESPONSE_CODE%","flags":"%RESPONSE_FLAGS%",\
"details":"%RESPONSE_CODE_DETAILS%","grpc":"%GRPC_STATUS(SNAKE_STRING)%","proto":"%PROTOCOL%",\
"cluster":"%UPSTREAM_CLUSTER_RAW%","peer":"%DOWNSTREAM_PEER_URI_SAN%","path":"%REQ(:PATH)%"}'
"""

DENY_ECHO = """apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-echo, namespace: shop}
spec:
  selector: {matchLabels: {app: catalog-grpc}}
  action: DENY
  rules: [{to: [{operation: {paths: ["/shop.Echo/Echo"]}}]}]
"""

FQDN = "catalog-grpc.shop.svc.cluster.local"
OUT_CLUSTER = "outbound|80||" + FQDN
CLIENT_ID = "spiffe://cluster.local/ns/shop/sa/client"


def start(mesh, port_name="grpc", vs=None):  # noqa: F811
    mesh.write_config("svc.yaml", SVC % port_name)
    if vs:
        mesh.write_config("vs.yaml", vs)
    mesh.start_pilot(default_ns="shop", mesh_config=LOG_MESH)
    server = mesh.add_pod("catalog-grpc-1", "shop", {"app": "catalog-grpc"}, sa="catalog",
                          app_port=9090, app_args=("--grpc-port", "9090"))
    client = mesh.add_pod("client-1", "shop", {"app": "client"}, sa="client")
    for p in (server, client):
        mesh.wait_ready(p)
    mesh.wait_synced()
    return server, client


def channel(client):
    """A channel to the client's sidecar outbound listener for port 80, naming the service as
    the app would (the local mesh's explicit mode: no capture, the authority routes)."""
    return grpc.insecure_channel("%s:80" % client.localhost,
                                 options=[("grpc.default_authority", "catalog-grpc.shop:80")])


def echo(ch, timeout=10, **fields):
    call = ch.unary_unary("/shop.Echo/Echo", request_serializer=EchoRequest.SerializeToString,
                          response_deserializer=EchoResponse.FromString)
    t0 = time.monotonic()
    try:
        r = call(EchoRequest(**fields), timeout=timeout)
        return grpc.StatusCode.OK, "", r, time.monotonic() - t0
    except grpc.RpcError as e:
        return e.code(), e.details(), None, time.monotonic() - t0


def until_served(ch):
    """The first call that reaches the app (pushes may still be landing)."""
    return wait_for(lambda: (lambda r: r if r[0] == grpc.StatusCode.OK else None)(
        echo(ch, timeout=3, message="hi")), what="a gRPC call through the sidecars")


def cluster_of(pod, name):
    status, _, body = pod.admin("/config_dump")
    assert status == 200
    for c in json.loads(body)["configs"]:
        for dc in c.get("dynamic_active_clusters", []):
            if dc.get("cluster", {}).get("name") == name:
                return dc["cluster"]
    return None


def h2_options(cluster):
    hpo = (cluster.get("typed_extension_protocol_options") or {}).get(
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions") or {}
    return (hpo.get("explicit_http_config") or {}).get("http2_protocol_options")


def prom(pod, family):
    status, _, body = pod.admin("/stats/prometheus")
    assert status == 200
    text = body.decode() if isinstance(body, bytes) else body
    return [ln for ln in text.splitlines() if ln.startswith(family + "{")]


def test_grpc_port_is_http2_end_to_end(mesh):  # noqa: F811
    server, client = start(mesh)
    with channel(client) as ch:
        _, _, r, _ = until_served(ch)
        assert (r.message, r.hostname) == ("hi", "catalog-grpc-1")
        # server streaming through both sidecars
        stream = ch.unary_stream("/shop.Echo/EchoStream",
                                 request_serializer=EchoRequest.SerializeToString,
                                 response_deserializer=EchoResponse.FromString)
        got = [m.index for m in stream(EchoRequest(message="s", count=5), timeout=10)]
        assert got == [0, 1, 2, 3, 4]
        # a status the server sends passes through untouched
        code, details, _, _ = echo(ch, status=5, status_message="no such item")
        assert (code, details) == (grpc.StatusCode.NOT_FOUND, "no such item")
    # the clusters of both hops carry HTTP/2 (istiod's explicit http2_protocol_options)
    assert h2_options(cluster_of(client, OUT_CLUSTER)) is not None
    assert h2_options(cluster_of(server, "inbound|9090||")) is not None
    # the server's sidecar read HTTP/2 over mTLS from the client's
    inbound = server.wait_log(lambda e: e.get("cluster") == "inbound|9090||"
                              and e.get("path") == "/shop.Echo/Echo" and e.get("grpc") == "OK")
    assert (inbound["proto"], inbound["peer"], inbound["code"]) == ("HTTP/2", CLIENT_ID, 200)
    series = wait_for(lambda: [ln for ln in prom(server, "istio_requests_total")
                               if 'reporter="destination"' in ln
                               and 'request_protocol="grpc"' in ln
                               and 'grpc_response_status="0"' in ln] or None,
                      what="istio_requests_total for gRPC on the server's sidecar")
    assert any('destination_service="%s"' % FQDN in ln for ln in series), series
    assert wait_for(lambda: [ln for ln in prom(server, "istio_requests_total")
                             if 'grpc_response_status="5"' in ln] or None,
                    what="the NOT_FOUND call's grpc_response_status")
    # pilot put envoy.filters.http.grpc_stats on both gRPC HCMs: Istio's message counters.
    # Answers: the one served echo, five streamed, none for NOT_FOUND (earlier attempts that
    # did not reach the app got trailers-only replies: no message)
    def messages(pod, family, reporter):
        return sum(float(ln.rsplit(" ", 1)[1]) for ln in prom(pod, family)
                   if 'reporter="%s"' % reporter in ln)
    assert wait_for(lambda: messages(server, "istio_response_messages_total",
                                     "destination") == 6 or None,
                    what="istio_response_messages_total on the server's sidecar")
    assert messages(server, "istio_request_messages_total", "destination") >= 3
    assert wait_for(lambda: messages(client, "istio_response_messages_total", "source") == 6
                    or None, what="istio_response_messages_total on the client's sidecar")
    assert messages(client, "istio_request_messages_total", "source") >= 3


def test_b032_grpc_behind_a_port_named_http(mesh):  # noqa: F811
    server, client = start(mesh, port_name="http")
    assert h2_options(cluster_of(client, OUT_CLUSTER)) is None
    with channel(client) as ch:
        code, details, _, took = echo(ch, timeout=10, message="hi")
    assert code == grpc.StatusCode.UNAVAILABLE, (code, details)
    assert took < 5
    # the server's sidecar spoke HTTP/1.1 to the app, which answered with HTTP/2 frames
    bad = server.wait_log(lambda e: e.get("cluster") == "inbound|9090||")
    assert bad["code"] == 200, bad  # a gRPC local reply
    assert (bad["flags"], bad["details"]) in (
        ("UPE", "upstream_reset_before_response_started{protocol_error}"),
        ("UC", "upstream_reset_before_response_started{connection_termination}")), bad
    assert bad["grpc"] == "UNAVAILABLE", bad


def test_b034_timeouts_and_no_endpoints(mesh):  # noqa: F811
    server, client = start(mesh, vs=VS_TIMEOUT)
    with channel(client) as ch:
        until_served(ch)
        # (1) the route timeout fires: DEADLINE_EXCEEDED, not UNAVAILABLE
        code, details, _, took = echo(ch, timeout=10, delay_ms=3000)
        assert (code, details) == (grpc.StatusCode.DEADLINE_EXCEEDED, "upstream request timeout")
        assert 0.8 < took < 2.5, took
        line = client.wait_log(lambda e: e.get("flags") == "UT")
        assert (line["code"], line["details"], line["grpc"]) == \
            (200, "response_timeout", "DEADLINE_EXCEEDED"), line
        # (3) a longer client deadline is capped by the route's 1 s
        code, _, _, took = echo(ch, timeout=5, delay_ms=3000)
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED and took < 2.5, (code, took)
        # the route carries max_grpc_timeout equal to the VirtualService timeout
        status, _, body = client.admin("/config_dump")
        routes = [r for c in json.loads(body)["configs"]
                  for d in c.get("dynamic_route_configs", [])
                  for vh in d["route_config"].get("virtual_hosts", [])
                  for r in vh.get("routes", [])
                  if (r.get("route") or {}).get("cluster") == OUT_CLUSTER]
        assert routes and routes[0]["route"]["max_grpc_timeout"] == "1s", routes
        # (4) scaled to 0: no healthy upstream, as UNAVAILABLE
        mesh.remove_pod(server)
        # (until the endpoint push lands the pod's address refuses connections: UNAVAILABLE too,
        # with the connect failure as its message)
        wait_for(lambda: echo(ch, timeout=3)[:2] == (grpc.StatusCode.UNAVAILABLE,
                                                     "no healthy upstream"),
                 what="UNAVAILABLE 'no healthy upstream' once the endpoints are gone")
        line = client.wait_log(lambda e: e.get("flags") == "UH")
        assert (line["code"], line["details"], line["grpc"]) == \
            (200, "no_healthy_upstream", "UNAVAILABLE"), line


def test_config_reaches_open_http2_connections(mesh):  # noqa: F811
    """A policy pushed while the client's HTTP/2 connections stay open (grpcio to its sidecar in
    plaintext, sidecar to sidecar over mTLS) applies to the next call on them, as Envoy applies
    RDS/CDS/EDS and listener updates to open connections: a DENY AuthorizationPolicy turns the
    next call into PERMISSION_DENIED "RBAC: access denied" at the server's sidecar."""
    server, client = start(mesh)
    with channel(client) as ch:
        until_served(ch)
        mesh.write_config("deny.yaml", DENY_ECHO)
        wait_for(lambda: echo(ch, timeout=3)[:2] == (grpc.StatusCode.PERMISSION_DENIED,
                                                     "RBAC: access denied"),
                 what="the DENY policy on the open connections")
        # the stream method the policy does not name still works on the same connections
        stream = ch.unary_stream("/shop.Echo/EchoStream",
                                 request_serializer=EchoRequest.SerializeToString,
                                 response_deserializer=EchoResponse.FromString)
        assert len(list(stream(EchoRequest(message="s", count=2), timeout=10))) == 2
    denied = server.wait_log(lambda e: e.get("grpc") == "PERMISSION_DENIED")
    assert denied["details"] == \
        "rbac_access_denied_matched_policy[ns[shop]-policy[deny-echo]-rule[0]]", denied
