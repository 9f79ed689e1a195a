"""A listener that cannot bind is a NACK of the LDS update that brought it, naming the
listener, as Envoy's LdsApiImpl reports it ("Error adding/updating listener(s) 0.0.0.0_8081:
cannot bind '127.10.x.y:8081': Address already in use"), not of a later RDS or CDS response;
pilot's /debug/syncz shows the listener type ERROR with that text, and the ERROR clears as
soon as a later LDS update is accepted (the port free again). The proxy's readiness reason
names the type (LDS) while it has not been accepted.

Reproduction: the catalog mesh; a socket of the test's own holds the gateway pod's port 8081
(without SO_REUSEPORT, so the proxy's bind fails), then a Gateway server on port 81 (Service
port 81 -> targetPort 8081) gives the gateway a new listener 0.0.0.0_8081 with route
configuration http.8081. Needs root and its own network namespace (tests binding pod
addresses).

Several ports (test_several_listeners_one_lds_nack, SotW and delta xDS): Envoy binds a
listener's sockets when the LDS update adds it, before it warms, and holds them until its
route configuration arrives; so an application that starts binding the address while the
listener warms cannot have it, and the RDS response is never the one NACKed (weft used to
bind only once the RDS response came, and an application that bound in between, as the
local mesh's app on its containerPort, made the RDS response fail). A relay between the
gateway and pilot (xds_relay.py) holds the RDS response back while the test binds."""
import errno
import os
import socket

import pytest

from meshfix import BOOK, GATEWAY_SERVICE, Mesh, mesh, wait_for  # noqa: F401 (fixture)
from test_mesh_control_plane import serving_mesh
from xds_relay import XdsRelay

LISTENER_T = "type.googleapis.com/envoy.config.listener.v3.Listener"

GATEWAY_81 = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: extra-gateway, namespace: istioinaction}
spec:
  selector: {istio: ingressgateway}
  servers:
  - hosts: ["%s"]
    port: {number: 81, name: http-extra, protocol: HTTP}
"""
SERVICE_81 = GATEWAY_SERVICE + "  - {name: http-extra, port: 81, targetPort: 8081}\n"


def gw_entry(mesh, gw):
    status, sync = mesh.pilot_get("/debug/syncz")
    assert status == 200, sync
    for e in sync:
        if e.get("proxy") == gw.node_id and e.get("connected"):
            return e
    return None


def test_listener_bind_failure_is_an_lds_nack(mesh):
    gw, _ = serving_mesh(mesh)
    mesh.wait_synced()
    holder = socket.socket()
    holder.bind((gw.ip, 8081))
    holder.listen(1)
    try:
        mesh.write_config("gateway-service.yaml", SERVICE_81)
        mesh.write_config("extra-gateway.yaml", GATEWAY_81 % "extra.example.com")

        def errored():
            e = gw_entry(mesh, gw)
            return e if e and e.get("listener_status") == "ERROR" else None
        e = wait_for(errored, timeout=15, what="the gateway's LDS NACK at pilot")
        want = ("Error adding/updating listener(s) 0.0.0.0_8081: cannot bind '%s:8081': "
                "Address already in use" % gw.ip)
        assert e["listener_error"] == want, e
        assert e["resources"][LISTENER_T]["lastError"] == want, e
        # not charged to the other types: once their own pushes are ACKed (a push of them may
        # still be in flight, STALE, when the LDS NACK arrives) they are SYNCED, LDS stays ERROR
        def others_acked():
            e = gw_entry(mesh, gw)
            return e if e and all(e.get(t + "_status") in ("SYNCED", "IGNORED", None)
                                  for t in ("route", "cluster", "endpoint")) else None
        e = wait_for(others_acked, timeout=15, what="the other types ACKed")
        assert e["listener_status"] == "ERROR" and e["listener_error"] == want, e
        assert gw.stats().get("listener_manager.lds.update_rejected", 0) >= 1
    finally:
        holder.close()

    # a later LDS update (every listener's access log changed by the MeshConfig) is accepted:
    # the ERROR clears and the listener serves
    path = os.path.join(mesh.dir, "mesh.yaml")
    with open(path + ".tmp", "w") as f:
        f.write("accessLogFile: /dev/stdout\naccessLogEncoding: TEXT\n")
    os.replace(path + ".tmp", path)

    def cleared():
        e = gw_entry(mesh, gw)
        return e if e and e.get("listener_status") == "SYNCED" else None
    e = wait_for(cleared, timeout=15, what="the LDS ERROR cleared")
    assert not e.get("listener_error"), e
    assert "lastError" not in e["resources"][LISTENER_T], e
    wait_for(lambda: gw.request(8081, "/", host="extra.example.com")[0] in (404, 200),
             what="the new listener serving")



RDS_WORD = "envoy.config.route.v3.RouteConfiguration"
GATEWAY_3 = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: extra-gateway, namespace: istioinaction}
spec:
  selector: {istio: ingressgateway}
  servers:
  - hosts: ["extra.example.com"]
    port: {number: 81, name: http-81, protocol: HTTP}
  - hosts: ["extra.example.com"]
    port: {number: 82, name: http-82, protocol: HTTP}
  - hosts: ["extra.example.com"]
    port: {number: 83, name: http-83, protocol: HTTP}
"""
SERVICE_3 = GATEWAY_SERVICE + "".join(
    "  - {name: http-%d, port: %d, targetPort: %d}\n" % (p, p, 8000 + p) for p in (81, 82, 83))


class RelayMesh(Mesh):
    """The local mesh whose proxies reach pilot through an XdsRelay (relay_port)."""
    relay_port = None

    def bootstrap(self, pod):
        b = super().bootstrap(pod)
        if self.relay_port:
            ep = b["static_resources"]["clusters"][0]["load_assignment"]["endpoints"][0]
            ep["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]["port_value"] = \
                self.relay_port
        return b


@pytest.fixture
def relay_mesh(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the local mesh binds port 80 on pod loopback addresses: needs root")
    m = RelayMesh(tmp_path)
    m.relay = None
    try:
        yield m
    finally:
        try:
            m.stop()
        finally:
            if m.relay:
                m.relay.close()


def app_socket(ip, port):
    """An application's listening socket (SO_REUSEADDR only, as Python's http.server binds):
    the socket, or the errno when the address cannot be had."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((ip, port))
        s.listen(8)
        return s
    except OSError as e:
        s.close()
        return e.errno


def synced_or_error(mesh, gw, t):
    e = gw_entry(mesh, gw)
    return e if e and e.get(t + "_status") in ("SYNCED", "ERROR") else None


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
def test_several_listeners_one_lds_nack(relay_mesh, delta):
    mesh = relay_mesh
    for f in ("services/catalog/kubernetes/catalog.yaml", "ch10/catalog-gateway.yaml"):
        mesh.add_config(os.path.join(BOOK, f))
    mesh.write_config("gateway-service.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns="istioinaction")
    mesh.relay = XdsRelay(mesh.grpc_port)
    mesh.relay_port = mesh.relay.port
    gw = mesh.add_pod("istio-ingressgateway-5d8f9", "istio-system",
                      {"istio": "ingressgateway", "app": "istio-ingressgateway"},
                      kind="router", delta=delta)
    mesh.wait_ready(gw)
    mesh.wait_synced()

    # 8081 and 8083 are taken before the LDS update; the RDS response after it is held back
    holders = [app_socket(gw.ip, p) for p in (8081, 8083)]
    assert all(isinstance(h, socket.socket) for h in holders), holders
    mesh.relay.hold(RDS_WORD)
    try:
        mesh.write_config("gateway-service.yaml", SERVICE_3)
        mesh.write_config("extra-gateway.yaml", GATEWAY_3)

        def errored():
            e = gw_entry(mesh, gw)
            return e if e and e.get("listener_status") == "ERROR" else None
        e = wait_for(errored, timeout=15, what="the gateway's LDS NACK at pilot")
        want = ["Error adding/updating listener(s) 0.0.0.0_%d: cannot bind '%s:%d': "
                "Address already in use" % (p, gw.ip, p) for p in (8081, 8083)]
        lines = e["listener_error"].split("\n")
        assert lines[0] in want and len(lines) == 2, e
        assert sorted([lines[0], "Error adding/updating listener(s) " + lines[1]]) == want, e
        assert e["resources"][LISTENER_T]["lastError"] == e["listener_error"], e

        # 0.0.0.0_8082 warms (its route configuration held back): its address is the
        # proxy's since the LDS update, an application cannot bind it
        mesh.relay.wait_held()
        app = app_socket(gw.ip, 8082)
        if isinstance(app, socket.socket):
            holders.append(app)
        mesh.relay.release()
        e = wait_for(lambda: synced_or_error(mesh, gw, "route"), timeout=15,
                     what="the gateway's RDS answer")
        assert e["route_status"] == "SYNCED" and not e.get("route_error"), \
            (e["route_status"], e.get("route_error"))
        assert app == errno.EADDRINUSE, "an application bound the warming listener's address"
        assert e["listener_status"] == "ERROR", e  # until the next LDS update is accepted
        wait_for(lambda: gw.request(8082, "/", host="extra.example.com")[0] in (404, 200),
                 what="0.0.0.0_8082 serving")
    finally:
        mesh.relay.release()
        for h in holders:
            if isinstance(h, socket.socket):
                h.close()

    # the addresses free, a later LDS update is accepted: the ERROR clears, all three serve
    path = os.path.join(mesh.dir, "mesh.yaml")
    with open(path + ".tmp", "w") as f:
        f.write("accessLogFile: /dev/stdout\naccessLogEncoding: TEXT\n")
    os.replace(path + ".tmp", path)

    def cleared():
        e = gw_entry(mesh, gw)
        return e if e and e.get("listener_status") == "SYNCED" else None
    e = wait_for(cleared, timeout=15, what="the LDS ERROR cleared")
    assert not e.get("listener_error"), e
    for port in (8081, 8082, 8083):
        wait_for(lambda: gw.request(port, "/", host="extra.example.com")[0] in (404, 200),
                 what="0.0.0.0_%d serving" % port)
    assert gw.stats().get("listener_manager.lds.update_rejected", 0) >= 1
