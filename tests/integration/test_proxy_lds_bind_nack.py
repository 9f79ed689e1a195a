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
addresses)."""
import os
import socket

from meshfix import GATEWAY_SERVICE, mesh, wait_for  # noqa: F401 (fixture)
from test_mesh_control_plane import serving_mesh

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
        # not charged to the other types
        for t in ("route", "cluster", "endpoint"):
            assert e.get(t + "_status") in ("SYNCED", "IGNORED", None), e
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

