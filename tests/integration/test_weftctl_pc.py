"""`weftctl proxy-config` against a live local mesh (issue 6 acceptance): the book's catalog
example with a real weft-pilot, an ingress gateway and catalog sidecars. weftctl finds the
pods through pilot (--pilot 127.0.0.1:<monitoring port>) and reads their admin APIs.

- pc cluster on the gateway lists outbound|80||catalog... and, before the DestinationRule
  exists, no outbound|80|version-v1|... cluster; the subset clusters appear after it.
- pc route on the gateway shows the http.8080 route config with the catalog host.
- pc listener / pc endpoint / pc bootstrap on a sidecar.
- pc log --level http:debug,... then a request through that proxy writes debug lines that
  carry connection ids; --reset restores the startup level.
- errors: unknown pod, pilot unreachable (the address tried), a dump that is not JSON.
"""
import json
import os
import re

from conftest import run_weftctl
from meshfix import wait_for
from test_mesh_catalog import CATALOG_HOST, DR, catalog_mesh, gateway_get
from meshfix import mesh  # noqa: F401 (fixture)

V1 = "outbound|80|version-v1|catalog.istioinaction.svc.cluster.local"
PLAIN = "outbound|80||catalog.istioinaction.svc.cluster.local"


def pc(mesh, *args):
    return run_weftctl("pc", *args, "--pilot", "127.0.0.1:%d" % mesh.mon_port)


def ok(p):
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_clusters_routes_listeners_endpoints_live(mesh):
    gw, pods = catalog_mesh(mesh)
    mesh.wait_synced()

    out = ok(pc(mesh, "cluster", gw.name, "-n", "istio-system"))
    assert out.startswith("SERVICE FQDN")
    rows = [line.split() for line in out.splitlines()[1:]]
    assert ["catalog.istioinaction.svc.cluster.local", "80", "-", "outbound", "EDS"] in rows
    assert not any(r[2] == "version-v1" for r in rows), out
    js = json.loads(ok(pc(mesh, "cluster", gw.name + ".istio-system", "-o", "json")))
    assert PLAIN in [c["name"] for c in js]
    assert V1 not in [c["name"] for c in js]

    mesh.add_config(DR)
    mesh.wait_synced()

    def has_v1():
        p = pc(mesh, "c", gw.name, "-n", "istio-system", "--fqdn", "catalog", "-o", "json")
        return p.returncode == 0 and V1 in [c["name"] for c in json.loads(p.stdout)]
    wait_for(has_v1, timeout=20, what="the version-v1 subset cluster on the gateway")
    out = ok(pc(mesh, "clusters", gw.name, "-n", "istio-system", "--subset", "version-v1"))
    assert "version-v1" in out and "version-v2" not in out

    out = ok(pc(mesh, "route", gw.name, "-n", "istio-system"))
    assert out.startswith("NAME")
    assert any(line.startswith("http.8080") and CATALOG_HOST in line
               for line in out.splitlines()), out
    out = ok(pc(mesh, "r", gw.name, "-n", "istio-system", "--name", "http.8080", "-o", "yaml"))
    assert "name: http.8080" in out and CATALOG_HOST in out

    side = pods[0]
    out = ok(pc(mesh, "listener", side.name, "-n", "istioinaction"))
    assert out.splitlines()[0].split() == ["ADDRESSES", "PORT", "MATCH", "DESTINATION"]
    rows = [line.split() for line in out.splitlines()[1:]]
    # the inbound port under the default PERMISSIVE: the mTLS chain (tls + Istio's ALPNs) and
    # the plaintext one, as istioctl prints virtualInbound's chains
    assert [side.ip, "3000", "Trans:", "tls;", "App:",
            "istio,istio-peer-exchange,istio-http/1.0,istio-http/1.1,istio-h2",
            "Cluster:", "inbound|3000||"] in rows, out
    assert [side.ip, "3000", "Trans:", "raw_buffer", "Cluster:", "inbound|3000||"] in rows, out
    # the outbound port 80 (an HTTP port, so sniffed as istiod builds it: the HTTP chain for
    # what the HTTP inspector recognises, the passthrough chain for the rest)
    assert [side.localhost, "80", "Trans:", "raw_buffer;", "App:", "http/1.1,h2c",
            "Route:", "80"] in rows, out
    assert [side.localhost, "80", "ALL", "PassthroughCluster"] in rows, out
    out = ok(pc(mesh, "listeners", "deploy/catalog", "-n", "istioinaction", "--verbose=false"))
    assert out.splitlines()[0].split() == ["ADDRESSES", "PORT", "TYPE"]

    out = ok(pc(mesh, "endpoint", side.name + ".istioinaction"))
    assert out.startswith("ENDPOINT")
    catalog_rows = [line for line in out.splitlines() if PLAIN in line]
    assert len(catalog_rows) == 3, out  # catalog v1 and two v2 pods
    assert all("HEALTHY" in r and " OK " in r for r in catalog_rows), out
    ips = {p.ip for p in pods}
    out = ok(pc(mesh, "ep", side.name, "-n", "istioinaction", "--cluster", PLAIN))
    assert {line.split()[0].rsplit(":", 1)[0] for line in out.splitlines()[1:]} == ips

    out = ok(pc(mesh, "bootstrap", side.name, "-n", "istioinaction", "-o", "short"))
    assert "Envoy Version:" in out
    out = ok(pc(mesh, "all", gw.name, "-n", "istio-system"))
    assert "cluster/" + PLAIN in out and "route/http.8080" in out


def test_log_levels_live(mesh):
    gw, pods = catalog_mesh(mesh)
    mesh.wait_synced()
    out = ok(pc(mesh, "log", gw.name, "-n", "istio-system"))
    assert out.startswith(gw.name + ".istio-system:\nactive loggers:\n"), out
    startup = re.search(r"^  http: (\w+)$", out, re.M).group(1)

    out = ok(pc(mesh, "log", gw.name, "-n", "istio-system", "--level",
                "http:debug,router:debug,connection:debug,pool:debug"))
    for logger in ("http", "router", "connection", "pool"):
        assert re.search(r"^  %s: debug$" % logger, out, re.M), out
    assert re.search(r"^  admin: %s$" % startup, out, re.M), out

    before = len(gw.proxy.stderr_text())
    gateway_get(gw, "/items")

    def debug_with_conn_id():
        text = gw.proxy.stderr_text()[before:]
        return [line for line in text.splitlines()
                if "\tdebug\t" in line and re.search(r'"ConnectionId":"\d+"', line)]
    lines = wait_for(debug_with_conn_id, timeout=10, what="debug lines with connection ids")
    assert any("envoy router" in line or "envoy http" in line for line in lines), lines

    out = ok(pc(mesh, "o", gw.name, "-n", "istio-system", "--reset"))
    assert re.search(r"^  http: %s$" % startup, out, re.M), out
    assert not re.search(r"^  \w+: debug$", out, re.M) or startup == "debug", out

    p = pc(mesh, "log", gw.name, "-n", "istio-system", "--level", "nosuchlogger:debug")
    assert p.returncode == 64 and "unrecognized logger name: nosuchlogger" in p.stderr
    p = pc(mesh, "log", gw.name, "-n", "istio-system", "--level", "http:loud")
    assert p.returncode == 64 and "unrecognized logging level: loud" in p.stderr


def test_errors_live(mesh, tmp_path):
    gw, _ = catalog_mesh(mesh)
    p = pc(mesh, "cluster", "no-such-pod", "-n", "istio-system")
    assert p.returncode == 1 and "no-such-pod" in p.stderr, p.stderr
    p = run_weftctl("pc", "cluster", gw.name, "-n", "istio-system", "--pilot", "127.0.0.1:1")
    assert p.returncode == 1 and "127.0.0.1:1" in p.stderr, p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"configs": [')
    p = run_weftctl("pc", "cluster", "-f", str(bad))
    assert p.returncode == 1 and str(bad) in p.stderr, p.stderr
    p = run_weftctl("pc", "cluster", "-f", str(bad), "-o", "toml")
    assert p.returncode == 64 and 'output format "toml" not supported' in p.stderr


def test_live_dump_reads_the_same_as_a_file(mesh, tmp_path):
    """The live path and -f read one document the same way (weft-proxy's /config_dump)."""
    gw, _ = catalog_mesh(mesh)
    mesh.wait_synced()
    status, _, body = gw.admin("/config_dump")
    assert status == 200
    f = tmp_path / "dump.json"
    f.write_bytes(body)
    from_file = ok(run_weftctl("pc", "cluster", "-f", str(f)))
    live = ok(pc(mesh, "cluster", gw.name, "-n", "istio-system"))
    assert from_file == live
    assert os.path.getsize(f) > 0


def test_secret_of_a_dump_without_secrets(tmp_path):
    """istioctl's answer for a proxy that holds no secret: "No active or warming secrets
    found." (-o json: {}), exit 0."""
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"configs": [{
        "@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump",
        "bootstrap": {"node": {"id": "sidecar~10.0.0.1~a.b~b.svc.cluster.local"}}}]}))
    p = run_weftctl("pc", "secret", "-f", str(dump))
    assert (p.returncode, p.stdout) == (0, "No active or warming secrets found.\n"), p.stderr
    p = run_weftctl("pc", "secret", "-f", str(dump), "-o", "json")
    assert p.returncode == 0 and json.loads(p.stdout) == {}, (p.stdout, p.stderr)
