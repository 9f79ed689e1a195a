"""MeshConfig pathNormalization in the local mesh (operator report B038; Istio's listener
builder, pilot/pkg/networking/core/listener_builder.go): weft-pilot sets normalize_path,
merge_slashes and path_with_escaped_slashes_action on every HTTP connection manager from
`pathNormalization.normalization`, and the sidecar forwards the path so normalized. curl sends
each path as written (--path-as-is) to the sidecar's inbound port; weft-app's /echo answers the
path it received.

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
import json
import subprocess

import pytest

from meshfix import ACCESS_LOG_MESH, mesh, wait_for  # noqa: F401
from test_mesh_mtls import SERVICE, inbound_listener

assert mesh

# path sent -> path the app sees, per mode (Istio's normalization reference)
CASES = {
    "BASE": {
        "/echo/a/../b": "/echo/b",
        "/echo/%61": "/echo/a",
        "/echo//a//b": "/echo//a//b",
        "/echo/a%2Fb": "/echo/a%2Fb",
    },
    "MERGE_SLASHES": {
        "/echo/a/../b": "/echo/b",
        "/echo//a//b": "/echo/a/b",
        "/echo/a%2Fb": "/echo/a%2Fb",
    },
    "DECODE_AND_MERGE_SLASHES": {
        "/echo/a/../b": "/echo/b",
        "/echo//a//b": "/echo/a/b",
        "/echo/a%2Fb": "/echo/a/b",
    },
    "NONE": {
        "/echo/a/../b": "/echo/a/../b",
        "/echo//a//b": "/echo//a//b",
    },
}

HCM_FIELDS = {
    "BASE": (True, None, "KEEP_UNCHANGED"),
    "MERGE_SLASHES": (True, True, "KEEP_UNCHANGED"),
    "DECODE_AND_MERGE_SLASHES": (True, True, "UNESCAPE_AND_FORWARD"),
    "NONE": (False, None, "KEEP_UNCHANGED"),
}


def seen_path(pod, path):
    r = subprocess.run(["curl", "-s", "--path-as-is", "--max-time", "10", "-H", "Host: web.shop",
                        "http://%s:8080%s" % (pod.ip, path)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["path"]


@pytest.mark.parametrize("mode", sorted(CASES))
def test_mesh_path_normalization(mesh, mode):  # noqa: F811
    mesh.write_config("web.yaml", SERVICE)
    mesh.start_pilot(default_ns="shop", mesh_config=ACCESS_LOG_MESH +
                     "pathNormalization: {normalization: %s}\n" % mode)
    pod = mesh.add_pod("web-1", "shop", {"app": "web"}, app_port=8080)
    mesh.wait_ready(pod)
    wait_for(lambda: inbound_listener(pod) is not None, what="the inbound listener")
    mesh.wait_synced()
    hcm = inbound_listener(pod)["filter_chains"][0]["filters"][0]["typed_config"]
    normalize, merge, action = HCM_FIELDS[mode]
    assert hcm.get("normalize_path", False) is normalize
    assert hcm.get("merge_slashes") is merge
    assert hcm["path_with_escaped_slashes_action"] == action
    for sent, want in CASES[mode].items():
        assert seen_path(pod, sent) == want, (mode, sent)
