"""Istio's listener access log in the local mesh (operator report B027; reference security.md
§3.3, §4.3): with MeshConfig accessLogFile set (meshfix: JSON to each proxy's stdout), weft-pilot
puts on the sidecar's inbound listener the file log filtered to NR (accesslog.go
buildListenerFileAccessLog), and under a namespace PeerAuthentication STRICT a plaintext request
straight to the sidecar's inbound port (pod IP, target port) is closed and logged by the server's
sidecar: response code 0, response_flags NR, response_code_details filter_chain_not_found.
`weftctl log explain` reads that line. A request a chain serves is logged once, by the
connection manager, not by the listener log.

The local mesh binds pod loopback addresses: run inside `unshare -n` (tests/README, common.md).
"""
from conftest import run_weftctl
from meshfix import mesh, wait_for  # noqa: F401
from test_mesh_mtls import PA, SERVICE, chain_matches, inbound_listener, plaintext

assert mesh


def test_strict_plaintext_logged_by_server_sidecar(mesh):  # noqa: F811
    mesh.write_config("web.yaml", SERVICE)
    mesh.start_pilot(default_ns="shop")
    pod = mesh.add_pod("web-1", "shop", {"app": "web"}, app_port=8080)
    mesh.wait_ready(pod)
    wait_for(lambda: chain_matches(pod), what="the inbound listener")
    # Istio's listener log: the HCM's file log plus the NR filter
    lst = inbound_listener(pod)
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    assert len(lst["access_log"]) == 1, lst.get("access_log")
    lal = lst["access_log"][0]
    assert lal["filter"] == {"response_flag_filter": {"flags": ["NR"]}}
    assert lal["name"] == "envoy.access_loggers.file"
    assert lal["typed_config"] == hcm["access_log"][0]["typed_config"]

    # PERMISSIVE (default): plaintext is served and logged by the connection manager only
    mesh.wait_synced()
    assert plaintext(pod) == 200
    e = pod.wait_log(lambda e: e.get("response_code") == 200 and e.get("path") == "/echo")
    assert e["response_flags"] is None or e["response_flags"] == "-"

    mesh.write_config("pa.yaml", PA % ("default", "  mtls: {mode: STRICT}"))
    wait_for(lambda: chain_matches(pod) == [{"transport_protocol": "tls"}],
             what="the STRICT chain")
    mesh.wait_synced()
    assert plaintext(pod) in ("closed", "ConnectionResetError")
    e = pod.wait_log(lambda e: e.get("response_flags") == "NR")
    assert e["response_code"] == 0
    assert e["response_code_details"] == "filter_chain_not_found"
    assert e["downstream_local_address"] == "%s:8080" % pod.ip
    assert e["downstream_remote_address"].rsplit(":", 1)[0]  # the client's address
    assert e["bytes_received"] == 0 and e["bytes_sent"] == 0
    for k in ("method", "path", "protocol", "upstream_cluster", "upstream_host", "route_name",
              "requested_server_name"):
        assert e[k] is None, (k, e)
    assert sum(1 for x in pod.access_log() if x.get("response_flags") == "NR") == 1
    # the operator's next step reads the sidecar's log as it is
    r = run_weftctl("log", "explain", pod.log_path)
    assert r.returncode == 0, r.stderr
    assert "0 NR filter_chain_not_found" in r.stdout, r.stdout
    assert "No filter chain of the listener matched the connection" in r.stdout
    assert "STRICT PeerAuthentication" in r.stdout
