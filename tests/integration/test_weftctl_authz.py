"""`weftctl x authz check` (istioctl x authz check, reference security.md §6.5).

- From a dump file (-f, also "-" for stdin) the test writes: the HTTP and network RBAC filters of
  the dynamic listeners' active state become istioctl's table (DENY, ALLOW, LOG, CUSTOM; names
  sorted; distinct rule indexes counted; `_anonymous_match_nothing_` for a filter without
  policies; dry-run shadow rules, static listeners and warming listeners not read); the same
  dump in protobuf JSON's camelCase prints the same; `-o json` (weft's addition).
- Errors: a missing file ("failed to get config dump from file ...", exit 1), a dump that is
  not JSON, a dump without listeners; usage errors exit 64 (bad flag, no pod and no -f, two
  pods, bad -o).
- A pod: weftctl finds it through pilot's /debug/syncz (a stand-in pilot on a free loopback
  port, the way tests/conformance/istioctl_kinds/pc.py does) and reads its admin
  /config_dump: from a stand-in admin serving the dump, and from a real weft-proxy whose
  listeners are all static (istioctl prints nothing then: it reads dynamic listeners only).
- In a local mesh (run inside `unshare -n`): the catalog mesh has no AuthorizationPolicy, so
  the listeners carry no RBAC filter and the header alone is printed.
"""
import http.server
import json
import re
import subprocess
import threading

import pytest

from conftest import run_weftctl
from proxyfix import bootstrap, cluster, listener, proxy_factory, simple_routes  # noqa: F401
from meshfix import mesh  # noqa: F401 (fixture)

T_LISTENERS = "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
T_HCM = ("type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."
         "HttpConnectionManager")
T_HTTP_RBAC = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
T_TCP_RBAC = "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
ANY = {"permissions": [{"any": True}], "principals": [{"any": True}]}


def http_rbac(**cfg):
    return {"name": "envoy.filters.http.rbac", "typed_config": {"@type": T_HTTP_RBAC, **cfg}}


def hcm(*filters):
    return {"name": "envoy.filters.network.http_connection_manager",
            "typed_config": {"@type": T_HCM, "stat_prefix": "inbound_0.0.0.0_80",
                             "http_filters": list(filters) + [
                                 {"name": "envoy.filters.http.router"}]}}


def tcp_rbac(**cfg):
    return {"name": "envoy.filters.network.rbac",
            "typed_config": {"@type": T_TCP_RBAC, "stat_prefix": "tcp.", **cfg}}


def policies(*ids):
    return {i: ANY for i in ids}


def chain(*filters):
    return {"filters": list(filters)}


def active(name, *chains):
    return {"name": name, "active_state": {"version_info": "1", "listener": {
        "name": name, "filter_chains": list(chains)}}}


def small_dump():
    """An inbound listener as Istio builds it for CUSTOM + DENY + ALLOW + AUDIT policies, a
    TCP chain with an "allow nothing" RBAC, and listeners weftctl must not read."""
    inbound = active(
        "virtualInbound",
        chain(hcm(
            http_rbac(shadow_rules={"action": "DENY", "policies": policies(
                "istio-ext-authz-ns[foo]-policy[ext-authz]-rule[0]")},
                shadow_rules_stat_prefix="istio_ext_authz_"),
            http_rbac(rules={"action": "LOG", "policies": policies(
                "ns[foo]-policy[audit]-rule[0]")}),
            http_rbac(rules={"action": "DENY", "policies": policies(
                "ns[foo]-policy[deny-path]-rule[0]", "ns[foo]-policy[deny-path]-rule[1]")}),
            http_rbac(rules={"policies": policies(
                "ns[foo]-policy[httpbin]-rule[0]", "ns[istio-system]-policy[mesh-wide]-rule[0]")},
                shadow_rules={"policies": policies("ns[foo]-policy[dry]-rule[0]")},
                shadow_rules_stat_prefix="istio_dry_run_allow_"))),
        chain(tcp_rbac(rules={}, shadow_rules_stat_prefix="istio_dry_run_allow_")))
    # the same ALLOW rule again on another chain, and a new rule of it: 2 distinct rules
    inbound["active_state"]["listener"]["filter_chains"].append(chain(hcm(http_rbac(
        rules={"policies": policies("ns[foo]-policy[httpbin]-rule[0]",
                                    "ns[foo]-policy[httpbin]-rule[1]")}))))
    warming = {"name": "warming", "warming_state": {"listener": {
        "name": "warming", "filter_chains": [chain(tcp_rbac(rules={"action": "DENY", "policies":
                                                                   policies("ns[w]-policy[warm]-rule[0]")}))]}}}
    static = {"listener": {"name": "static", "filter_chains": [chain(tcp_rbac(rules={
        "action": "DENY", "policies": policies("ns[s]-policy[static]-rule[0]")}))]}}
    return {"configs": [
        {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump", "bootstrap": {}},
        {"@type": T_LISTENERS, "static_listeners": [static],
         "dynamic_listeners": [inbound, warming]}]}


WANT = ("ACTION   AuthorizationPolicy         RULES\n"
        "DENY     deny-path.foo               2\n"
        "ALLOW    _anonymous_match_nothing_   1\n"
        "ALLOW    httpbin.foo                 2\n"
        "ALLOW    mesh-wide.istio-system      1\n"
        "LOG      audit.foo                   1\n"
        "CUSTOM   ext-authz.foo               1\n")


def camel(v):
    """Protobuf JSON spelling: message field names in lowerCamelCase (map keys kept)."""
    if isinstance(v, list):
        return [camel(x) for x in v]
    if not isinstance(v, dict):
        return v
    out = {}
    for k, x in v.items():
        if k in ("policies",):  # a map: ids verbatim
            out["policies"] = {i: camel(p) for i, p in x.items()}
            continue
        out[re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), k)] = camel(x)
    return out


def write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return str(p)


def test_table_from_file(tmp_path):
    path = write(tmp_path, "dump.json", small_dump())
    p = run_weftctl("x", "authz", "check", "-f", path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == WANT
    assert p.stderr == ""
    # the long name, --file=, and stdin
    p = run_weftctl("experimental", "authz", "check", "--file=" + path)
    assert (p.returncode, p.stdout) == (0, WANT), p.stderr
    p = run_weftctl("x", "authz", "check", "-f", "-", stdin=json.dumps(small_dump()))
    assert (p.returncode, p.stdout) == (0, WANT), p.stderr


def test_camel_case_dump_prints_the_same(tmp_path):
    path = write(tmp_path, "camel.json", camel(small_dump()))
    assert "filterChains" in open(path).read()
    p = run_weftctl("x", "authz", "check", "-f", path)
    assert (p.returncode, p.stdout) == (0, WANT), p.stderr


def test_json_output(tmp_path):
    path = write(tmp_path, "dump.json", small_dump())
    p = run_weftctl("x", "authz", "check", "-f", path, "-o", "json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(r["action"], r["authorizationPolicy"], r["rules"]) for r in rows] == [
        tuple(line.split()[:2]) + (int(line.split()[2]),) for line in WANT.splitlines()[1:]]


def test_unparsable_policy_id_is_a_warning(tmp_path):
    d = small_dump()
    d["configs"][1]["dynamic_listeners"] = [active("l", chain(tcp_rbac(rules={
        "action": "DENY", "policies": policies("hand-written")})))]
    p = run_weftctl("x", "authz", "check", "-f", write(tmp_path, "d.json", d))
    assert p.returncode == 0, p.stderr
    # the name is "" (istioctl's row for an id it cannot parse), padded like any cell
    assert p.stdout == ("ACTION   AuthorizationPolicy   RULES\n"
                        "DENY     " + " " * len("AuthorizationPolicy   ") + "1\n")
    assert "listener l: failed to parse policy name: hand-written" in p.stderr


def test_errors(tmp_path):
    missing = str(tmp_path / "does-not-exist.json")
    p = run_weftctl("x", "authz", "check", "-f", missing)
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.startswith("Error: failed to get config dump from file %s: " % missing)
    assert "No such file or directory" in p.stderr

    p = run_weftctl("x", "authz", "check", "-f", write(tmp_path, "bad.json", '{"configs": ['))
    assert p.returncode == 1
    assert "failed to get config dump from file" in p.stderr and "bad.json" in p.stderr

    no_listeners = {"configs": [{"@type": "type.googleapis.com/envoy.admin.v3."
                                 "BootstrapConfigDump", "bootstrap": {}}]}
    p = run_weftctl("x", "authz", "check", "-f", write(tmp_path, "nl.json", no_listeners))
    assert p.returncode == 1
    assert p.stderr == ("Error: failed to get dynamic listener dump: config dump has no "
                        "configuration type %s\n" % T_LISTENERS)


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown flag: --bogus"),
    ([], "expecting pod name or config dump, found: 0"),
    (["a", "b"], "check requires only <pod-name>[.<pod-namespace>]"),
    (["-f", "x.json", "-o", "yaml"], 'output format "yaml" not supported'),
])
def test_usage_errors_exit_64(args, message):
    p = run_weftctl("x", "authz", "check", *args)
    assert p.returncode == 64, (p.stdout, p.stderr)
    assert p.stderr.startswith("Error: " + message + "\n")
    assert "Run 'weftctl x authz check --help' for usage." in p.stderr
    p = run_weftctl("x", "authz", "nope")
    assert p.returncode == 64 and 'unknown command "nope"' in p.stderr


def test_help():
    p = run_weftctl("x", "authz", "check", "--help")
    assert p.returncode == 0
    assert "weftctl x authz check [<type>/]<name>[.<namespace>]" in p.stdout
    assert "--file" in p.stdout and "--proxy-admin-port" in p.stdout
    p = run_weftctl("x", "authz", "--help")
    assert p.returncode == 0 and "check" in p.stdout


# ---- pods, through a stand-in pilot ----------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        status, body = self.server.routes.get(self.path, (404, b"not found\n"))
        self.server.seen.append(self.path)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def standin():
    """A loopback HTTP server on a free port: srv.routes {path: (status, bytes)}."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.routes, srv.seen = {}, []
    srv.addr = "127.0.0.1:%d" % srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    t.join(timeout=10)


def syncz(pod, ns, admin):
    return (200, json.dumps([{"proxy": "%s.%s" % (pod, ns), "proxy_type": "sidecar",
                              "connected": True, "admin": admin}]).encode())


def test_pod_through_pilot(standin, tmp_path):
    standin.routes["/debug/syncz"] = syncz("httpbin-1", "foo", standin.addr)
    standin.routes["/config_dump"] = (200, json.dumps(small_dump()).encode())
    for args in (["httpbin-1", "-n", "foo"], ["httpbin-1.foo"]):
        p = run_weftctl("x", "authz", "check", *args, "--pilot", standin.addr)
        assert (p.returncode, p.stdout) == (0, WANT), p.stderr
    assert "/config_dump" in standin.seen

    # -f wins over the pod, as in istioctl (the admin API is not asked)
    standin.seen.clear()
    p = run_weftctl("x", "authz", "check", "httpbin-1.foo", "--pilot", standin.addr, "-f",
                    write(tmp_path, "dump.json", small_dump()))
    assert (p.returncode, p.stdout) == (0, WANT), p.stderr
    assert standin.seen == []

    p = run_weftctl("x", "authz", "check", "ghost.foo", "--pilot", standin.addr)
    assert p.returncode == 1 and "ghost" in p.stderr

    standin.routes["/config_dump"] = (503, b"no\n")
    p = run_weftctl("x", "authz", "check", "httpbin-1.foo", "--pilot", standin.addr)
    assert p.returncode == 1
    assert p.stderr == ("Error: failed to get config dump from pod httpbin-1 in foo: "
                        "unexpected status code: 503\n")


def test_real_weft_proxy_with_static_listeners(standin, proxy_factory):  # noqa: F811
    """weft-proxy's own /config_dump: its bootstrap listeners are static, and istioctl reads
    dynamic listeners only: nothing is printed, exit 0."""
    bs = bootstrap([listener(simple_routes())], [cluster("backend", [1])])
    proxy = proxy_factory(bs)
    admin = "127.0.0.1:%d" % proxy.admin_port
    standin.routes["/debug/syncz"] = syncz("plain-1", "default", admin)
    p = run_weftctl("x", "authz", "check", "plain-1", "--pilot", standin.addr)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    st, _, body = proxy.admin("/config_dump")
    assert st == 200 and T_LISTENERS in body.decode()


def test_local_mesh_gateway_header_only(mesh):  # noqa: F811
    from test_mesh_catalog import catalog_mesh
    gw, pods = catalog_mesh(mesh)
    mesh.wait_synced()
    for name, ns in ((gw.name, "istio-system"), (pods[0].name, "istioinaction")):
        p = run_weftctl("x", "authz", "check", name, "-n", ns,
                        "--pilot", "127.0.0.1:%d" % mesh.mon_port)
        assert p.returncode == 0, p.stderr
        assert p.stdout == "ACTION   AuthorizationPolicy   RULES\n"



@pytest.mark.parametrize("words, want", [
    (["x", "a"], ["authz"]),
    (["experimental", "authz", "c"], ["check"]),
    (["x", "authz", "check", "--pro"], ["--proxy-admin-port"]),
    (["x", "authz", "check", "-o", ""], ["short", "json"]),
])
def test_bash_completion(tmp_path, words, want):
    script = write(tmp_path, "comp.sh", run_weftctl("completion", "bash").stdout)
    words = ["weftctl"] + words
    prog = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _weftctl; printf "%%s\\n" '
            '"${COMPREPLY[@]}"' % (script, " ".join("'%s'" % w for w in words), len(words) - 1))
    p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30,
                       check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == want
