"""A rejected (NACKed) LDS update in the proxy's /config_dump, as Envoy shows it
(envoy/admin/v3/config_dump_shared.proto ListenersConfigDump.DynamicListener.error_state,
filled by Envoy's ListenerManagerImpl): while the rejection stands, the rejected listener's
dynamic_listeners entry carries error_state {failed_configuration (the rejected Listener as an
Any), last_update_attempt, details (the error)} next to the active_state that keeps serving;
the next accepted LDS update clears it.

The catalog mesh of test_mesh_control_plane, with each proxy's admin on a free port (not 15000).
A MeshConfig accessLogFormat with an unknown command (%BOGUS%) makes every listener with an
access log fail in the proxy, so LDS is NACKed; the original MeshConfig fixes it.
"""
import json
import os
import socket

import pytest

from meshfix import ACCESS_LOG_MESH, Mesh, wait_for
from test_mesh_control_plane import serving_mesh
from test_mesh_catalog import gateway_get

LISTENER_T = "type.googleapis.com/envoy.config.listener.v3.Listener"
BAD_MESH = 'accessLogFile: /dev/stdout\naccessLogFormat: "%BOGUS% %RESPONSE_CODE%\\n"\n'


class FreeAdminMesh(Mesh):
    """The local mesh with every proxy's admin on a free port of its pod IP."""

    def bootstrap(self, pod):
        s = socket.socket()
        try:
            s.bind((pod.ip, 0))
            pod.admin_port = s.getsockname()[1]
        finally:
            s.close()
        return super().bootstrap(pod)


@pytest.fixture
def free_mesh(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the local mesh binds port 80 on pod loopback addresses: needs root")
    m = FreeAdminMesh(tmp_path)
    try:
        yield m
    finally:
        m.stop()


def write_mesh_config(mesh, text):
    path = os.path.join(mesh.dir, "mesh.yaml")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def dynamic_listeners(pod):
    status, _, body = pod.admin("/config_dump")
    assert status == 200, body
    for c in json.loads(body)["configs"]:
        if c["@type"].endswith("ListenersConfigDump"):
            return c.get("dynamic_listeners", [])
    return []


def test_rejected_listener_has_error_state_until_a_good_update(free_mesh):
    mesh = free_mesh
    gw, pods = serving_mesh(mesh)
    # a sidecar on the delta protocol (DeltaAggregatedResources) shows it the same way
    dp = mesh.add_pod("catalog-6cf4b97d-delta", "istioinaction",
                      {"app": "catalog", "version": "v1"}, app_port=3000, delta=True)
    mesh.wait_ready(dp)
    mesh.wait_synced()
    before = dynamic_listeners(gw)
    assert before and not [d for d in before if "error_state" in d], before
    active = {d["name"]: d["active_state"] for d in before if "active_state" in d}
    assert active, before

    write_mesh_config(mesh, BAD_MESH)
    wait_for(lambda: gw.stats().get("listener_manager.lds.update_rejected", 0) >= 1,
             what="the gateway rejecting LDS")

    def errored():
        dl = dynamic_listeners(gw)
        return [d for d in dl if d.get("name") and "error_state" in d] and dl
    dl = wait_for(errored, timeout=10, what="error_state in the gateway's dynamic_listeners")
    named = [d for d in dl if d.get("name") and "error_state" in d]
    for d in named:
        es = d["error_state"]
        assert "BOGUS" in es["details"], es
        fc = es["failed_configuration"]
        assert fc["@type"] == LISTENER_T, fc
        assert fc["name"] == d["name"], (fc.get("name"), d["name"])
        assert "BOGUS" in json.dumps(fc), fc  # the rejected version, not the serving one
        assert es["last_update_attempt"].endswith("Z"), es
        # the listener that was serving is still there, unchanged, and serves
        assert d["active_state"] == active[d["name"]], d
    # Envoy also lists each failure of the update on its own (no name, no time)
    unnamed = [d for d in dl if "name" not in d]
    assert unnamed and all("BOGUS" in d["error_state"]["details"] for d in unnamed), unnamed
    assert all(set(d) == {"error_state"} for d in unnamed), unnamed
    assert gateway_get(gw, "/healthz")[0] == 200
    for p in (pods[0], dp):
        dl = wait_for(lambda: [d for d in dynamic_listeners(p) if d.get("name")
                               and "error_state" in d], what="error_state in " + p.name)
        assert "BOGUS" in dl[0]["error_state"]["details"], dl
    # ?resource= and a mask see it too
    status, _, body = gw.admin("/config_dump?resource=dynamic_listeners&mask=name,error_state")
    assert status == 200, body
    assert [c for c in json.loads(body)["configs"] if "error_state" in c], body

    # a good update clears it
    write_mesh_config(mesh, ACCESS_LOG_MESH)

    def cleared():
        dl = dynamic_listeners(gw)
        return dl and not [d for d in dl if "error_state" in d] and dl
    dl = wait_for(cleared, timeout=15, what="error_state gone after an accepted update")
    assert all("name" in d for d in dl), dl
    wait_for(lambda: not [d for d in dynamic_listeners(dp) if "error_state" in d],
             what="error_state gone at the delta sidecar")
    assert gateway_get(gw, "/healthz")[0] == 200
