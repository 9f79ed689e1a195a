"""weft-proxy's RBAC filters as Istio configures them from AuthorizationPolicies
(reference security.md §6.3-6.5): envoy.filters.http.rbac in the HCM (a DENY policy on a path:
403 "RBAC: access denied" with details rbac_access_denied_matched_policy[<policy>] in the
access log; an ALLOW policy by header: the rest denied with [none]; a dry-run policy as shadow
rules that only counts), envoy.filters.network.rbac ahead of the HCM (a refused source IP: the
connection is closed, counted, its termination details logged), and the loader accepting every
filter shape of Istio's own translation tests (../shared/corpus/istio-authz).
"""
import glob
import http.client
import json
import os
import subprocess

import pytest
import yaml

from procs import backend_app  # noqa: F401
from test_proxy_tls import CLIENT_SAN, certs, downstream_tls  # noqa: F401
from test_proxy_tls import curl as tls_curl
from proxyfix import (ROUTER_TYPE, access_log, bootstrap, cluster, listener, proxy_factory,  # noqa: F401
                      proxy_path, route, route_config, vhost, write_bootstrap)

RBAC = "envoy.filters.http.rbac"
RBAC_TYPE = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
NET_RBAC = "envoy.filters.network.rbac"
NET_RBAC_TYPE = "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
PREFIX = "http.inbound_0.0.0.0_80.rbac."
LOG_FMT = "%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n"
CORPUS = os.path.join(os.environ.get("WEFT_SHARED", "/work/shared"), "corpus", "istio-authz",
                      "cases")


@pytest.fixture
def app(backend_app):  # noqa: F811
    return backend_app


def curl(port, path, headers=()):
    """curl's status code and body (an empty code when the connection failed)."""
    args = ["curl", "-s", "--path-as-is", "-o", "-", "-w", "\n%{http_code}", "--max-time", "5"]
    for h in headers:
        args += ["-H", h]
    r = subprocess.run(args + ["http://127.0.0.1:%d%s" % (port, path)], capture_output=True,
                       text=True, timeout=10)
    body, _, code = r.stdout.rpartition("\n")
    return code, body, r.returncode


def policy(permissions, principals=None):
    return {"permissions": permissions, "principals": principals or [{"any": True}]}


def rbac_filter(action=None, policies=None, shadow=None, shadow_prefix="istio_dry_run_allow_"):
    """An HTTP RBAC filter in Istio's shape (camelCase, shadowRulesStatPrefix always set)."""
    tc = {"@type": RBAC_TYPE, "shadowRulesStatPrefix": shadow_prefix}
    if action is not None:
        tc["rules"] = {"action": action, "policies": policies or {}}
    if shadow is not None:
        tc["shadowRules"] = shadow
    return {"name": RBAC, "typedConfig": tc}


def rbac_bootstrap(app_port, filters, net_filters=(), listener_logs=None, extra_logs=()):
    """Istio's inbound HCM shape: stat_prefix inbound_0.0.0.0_80, normalize_path on."""
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend",
                                                  name="default")])])
    lst = listener(rc, stat_prefix="inbound_0.0.0.0_80", normalize_path=True,
                   access_logs=[access_log(path="@LOG:hcm@", fmt=LOG_FMT)] + list(extra_logs))
    hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
    hcm["http_filters"] = list(filters) + [
        {"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER_TYPE}}]
    lst["filter_chains"][0]["filters"][0:0] = list(net_filters)
    if listener_logs:
        lst["access_log"] = listener_logs
    return bootstrap([lst], [cluster("backend", [app_port])])


def path_policy(prefix):
    return policy([{"andRules": {"rules": [{"orRules": {"rules": [
        {"urlPath": {"path": {"prefix": prefix}}}]}}]}}])


def test_deny_policy_on_path(app, proxy_factory):
    name = "ns[foo]-policy[deny-admin]-rule[0]"
    p = proxy_factory(rbac_bootstrap(app, [rbac_filter("DENY", {name: path_policy("/admin")})]))
    code, body, _ = curl(p.port, "/admin/x?y=1")
    assert (code, body) == ("403", "RBAC: access denied")
    code, _, _ = curl(p.port, "/echo")
    assert code == "200"
    status, hdrs, body = p.request("GET", "/admin")
    assert (status, body, hdrs["content-type"]) == (403, b"RBAC: access denied", "text/plain")
    lines = p.access_log_lines(2, name="hcm")
    assert lines[0] == "403 - rbac_access_denied_matched_policy[%s]" % name
    assert lines[1] == "200 - via_upstream"
    st = p.stats()
    assert st[PREFIX + "denied"] == 2
    assert st[PREFIX + "allowed"] == 1
    assert st["cluster.backend.upstream_rq_total"] == 1  # the denied requests never left
    # the policy sees the normalized path: /public/../admin is /admin
    assert curl(p.port, "/public/../admin")[0] == "403"
    # an escaped slash stays inside a segment: not /admin (the backend answers 404)
    assert curl(p.port, "/public/..%2Fadmin")[0] == "404"


def test_allow_by_header_denies_the_rest(app, proxy_factory):
    pol = policy([{"any": True}], [{"andIds": {"ids": [{"header": {
        "name": "x-user", "stringMatch": {"exact": "alice"}}}]}}])
    p = proxy_factory(rbac_bootstrap(app, [rbac_filter("ALLOW",
                                                       {"ns[foo]-policy[a]-rule[0]": pol})]))
    assert curl(p.port, "/echo", ["x-user: alice"])[0] == "200"
    code, body, _ = curl(p.port, "/echo", ["x-user: bob"])
    assert (code, body) == ("403", "RBAC: access denied")
    assert curl(p.port, "/echo")[0] == "403"
    lines = p.access_log_lines(3, name="hcm")
    assert lines[1] == "403 - rbac_access_denied_matched_policy[none]"
    st = p.stats()
    assert (st[PREFIX + "allowed"], st[PREFIX + "denied"]) == (1, 2)


def test_dry_run_policy_only_counts(app, proxy_factory):
    shadow = {"action": "DENY", "policies": {"ns[foo]-policy[dry]-rule[0]": path_policy("/")}}
    md = ("%DYNAMIC_METADATA(envoy.filters.http.rbac:istio_dry_run_deny_shadow_engine_result)% "
          "%DYNAMIC_METADATA(envoy.filters.http.rbac:istio_dry_run_deny_shadow_effective_policy_id)%"
          "\n")
    bs = rbac_bootstrap(app, [rbac_filter(shadow=shadow, shadow_prefix="istio_dry_run_deny_")],
                        extra_logs=[access_log(path="@LOG:md@", fmt=md)])
    bs["stats_config"] = {"stats_tags": [  # Istio's bootstrap tags for dry-run stats
        {"tag_name": "authz_dry_run_action", "regex": "(\\.istio_dry_run_(allow|deny)_)"},
        {"tag_name": "authz_dry_run_result", "regex": "(\\.shadow_(allowed|denied))"}]}
    p = proxy_factory(bs)
    assert curl(p.port, "/echo")[0] == "200"
    assert curl(p.port, "/healthz")[0] == "200"
    st = p.stats()
    assert st[PREFIX + "istio_dry_run_deny_.shadow_denied"] == 2
    assert st[PREFIX + "istio_dry_run_deny_.shadow_allowed"] == 0
    assert st[PREFIX + "allowed"] == 0  # no rules: nothing enforced, nothing counted
    assert st["cluster.backend.upstream_rq_total"] == 2
    # the shadow result is the stream's dynamic metadata, as Envoy publishes it
    assert p.access_log_lines(1, name="md") == ["denied ns[foo]-policy[dry]-rule[0]"]
    status, _, body = p.admin("/stats/prometheus")
    assert status == 200
    rbac = [line for line in body.decode().splitlines()
            if "_rbac{" in line and 'authz_dry_run_result="denied"' in line]
    assert len(rbac) == 1 and 'authz_dry_run_action="deny"' in rbac[0], rbac
    assert rbac[0].endswith(" 2"), rbac


def test_network_rbac_refuses_source_ip(app, proxy_factory):
    net = {"name": NET_RBAC, "typed_config": {
        "@type": NET_RBAC_TYPE, "stat_prefix": "tcp.",
        "rules": {"action": "DENY", "policies": {"ns[foo]-policy[no-local]-rule[0]": {
            "permissions": [{"any": True}],
            "principals": [{"directRemoteIp": {"addressPrefix": "127.0.0.0", "prefixLen": 8}}]}}},
    }}
    logs = [access_log(path="@LOG:lis@", fmt="%CONNECTION_TERMINATION_DETAILS%\n")]
    p = proxy_factory(rbac_bootstrap(app, [], [net], listener_logs=logs))
    code, body, rc = curl(p.port, "/echo")
    assert code == "000" and rc != 0, (code, body, rc)
    assert p.access_log_lines(1, name="lis") == [
        "rbac_access_denied_matched_policy[ns[foo]-policy[no-local]-rule[0]]"]
    st = p.stats()
    assert st["tcp.rbac.denied"] == 1
    assert st["cluster.backend.upstream_rq_total"] == 0


def test_network_rbac_allows_other_sources(app, proxy_factory):
    net = {"name": NET_RBAC, "typed_config": {
        "@type": NET_RBAC_TYPE, "stat_prefix": "tcp.",
        "rules": {"action": "DENY", "policies": {"p": {
            "permissions": [{"any": True}],
            "principals": [{"directRemoteIp": {"addressPrefix": "10.0.0.0", "prefixLen": 8}}]}}},
    }}
    p = proxy_factory(rbac_bootstrap(app, [], [net]))
    assert curl(p.port, "/echo")[0] == "200"
    assert p.stats()["tcp.rbac.allowed"] == 1


def _validate(tmp_path, bs):
    path = write_bootstrap(bs, str(tmp_path))
    return subprocess.run([proxy_path(), "-c", path, "--mode", "validate"],
                          capture_output=True, text=True, timeout=30)


def _corpus_filters():
    out = []
    for f in sorted(glob.glob(os.path.join(CORPUS, "*", "*-out*.yaml"))):
        if os.path.basename(f).startswith("extended-"):
            continue
        with open(f) as fh:
            out.append((f, yaml.safe_load(fh)))
    return out


def test_istio_corpus_shapes_load(tmp_path):
    """Every RBAC filter of Istio's translation tests loads, in Istio's inbound order
    (istio.metadata_exchange, the RBAC filters, fault, cors, istio.stats, router); network ones
    ahead of the HCM."""
    cases = _corpus_filters()
    assert len(cases) >= 20
    seen = 0
    for path, flt in cases:
        if flt["name"] not in (RBAC, NET_RBAC):
            continue  # ext_authz of the CUSTOM cases
        seen += 1
        rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend")])])
        lst = listener(rc, stat_prefix="inbound_0.0.0.0_80")
        hcm = lst["filter_chains"][0]["filters"][0]["typed_config"]
        head = [{"name": "istio.metadata_exchange"}]
        tail = [{"name": "envoy.filters.http.fault"}, {"name": "envoy.filters.http.cors"},
                {"name": "istio.stats"},
                {"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER_TYPE}}]
        if flt["name"] == RBAC:
            hcm["http_filters"] = head + [flt] + tail
        else:
            lst["filter_chains"][0]["filters"].insert(0, flt)
        r = _validate(tmp_path, bootstrap([lst], [cluster("backend", [1])], admin_port=1))
        assert r.returncode == 0, (path, r.stderr)
    assert seen >= 20


def test_bad_config_names_the_field(tmp_path):
    flt = rbac_filter("ALLOW", {"p": policy([{"urlPath": {"path": {"safeRegex": {
        "regex": "(a)\\1"}}}}])})
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend")])])
    lst = listener(rc)
    lst["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"].insert(0, flt)
    r = _validate(tmp_path, bootstrap([lst], [cluster("backend", [1])], admin_port=1))
    assert r.returncode != 0
    assert ("http_filters[0].typed_config.rules.policies.p.permissions[0].url_path.path."
            "safe_regex.regex") in r.stderr, r.stderr
    flt = rbac_filter("ALLOW", {"p": {"permissions": [{"any": True}],
                                      "principals": [{"filterState": {"key": "x"}}]}})
    lst = listener(rc)
    lst["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"].insert(0, flt)
    r = _validate(tmp_path, bootstrap([lst], [cluster("backend", [1])], admin_port=1))
    assert r.returncode != 0
    assert "principals[0].filter_state: not supported by weft-proxy (Envoy's " \
        "envoy.config.rbac.v3.Principal.filter_state)" in r.stderr, r.stderr


def test_config_dump_shows_filters_as_received(app, proxy_factory):
    """/config_dump keeps the RBAC filters (policy names as written: a map's keys are names),
    and the route configuration of a chain whose connection manager follows a network RBAC
    filter."""
    name = "ns[Foo]-policy[denyAdmin]-rule[0]"
    net = {"name": NET_RBAC, "typed_config": {"@type": NET_RBAC_TYPE, "stat_prefix": "tcp."}}
    p = proxy_factory(rbac_bootstrap(app, [rbac_filter("DENY", {name: path_policy("/admin")})],
                                     [net]))
    status, _, body = p.admin("/config_dump")
    assert status == 200
    dump = json.loads(body)
    listeners = [c for c in dump["configs"]
                 if c["@type"].endswith("ListenersConfigDump")][0]
    lst = listeners["static_listeners"][0]["listener"]
    filters = lst["filter_chains"][0]["filters"]
    assert [f["name"] for f in filters] == [NET_RBAC, "envoy.filters.network.http_connection_manager"]
    http = filters[1]["typed_config"]["http_filters"][0]
    assert http["name"] == RBAC
    rules = http["typed_config"]["rules"]
    assert rules["action"] == "DENY"
    assert list(rules["policies"]) == [name]
    assert rules["policies"][name]["permissions"][0]["and_rules"]["rules"][0]["or_rules"]
    assert http["typed_config"]["shadow_rules_stat_prefix"] == "istio_dry_run_allow_"
    routes = [c for c in dump["configs"] if c["@type"].endswith("RoutesConfigDump")][0]
    assert routes["static_route_configs"], routes
    assert curl(p.port, "/admin")[0] == "403"  # the camelCase name still keys the policy
    assert p.access_log_lines(1, name="hcm") == [
        "403 - rbac_access_denied_matched_policy[%s]" % name]


def test_remote_ip_from_x_forwarded_for(app, proxy_factory):
    """remote_ip (Istio's remoteIpBlocks) is the downstream remote address, which
    x-forwarded-for gives when the connection manager does not use the peer's (Envoy's
    use_remote_address false); direct_remote_ip (ipBlocks) stays the peer."""
    allow = policy([{"any": True}], [{"orIds": {"ids": [
        {"remoteIp": {"addressPrefix": "203.0.113.0", "prefixLen": 24}}]}}])
    p = proxy_factory(rbac_bootstrap(app, [rbac_filter("ALLOW", {"remote": allow})]))
    assert curl(p.port, "/echo", ["x-forwarded-for: 203.0.113.9"])[0] == "200"
    assert curl(p.port, "/echo", ["x-forwarded-for: 198.51.100.1"])[0] == "403"
    assert curl(p.port, "/echo")[0] == "403"  # the peer, 127.0.0.1
    direct = policy([{"any": True}], [{"directRemoteIp": {"addressPrefix": "203.0.113.0",
                                                          "prefixLen": 24}}])
    p2 = proxy_factory(rbac_bootstrap(app, [rbac_filter("ALLOW", {"direct": direct})]))
    assert curl(p2.port, "/echo", ["x-forwarded-for: 203.0.113.9"])[0] == "403"


@pytest.mark.parametrize("enforcement,checks", [(None, 1), ("CONTINUOUS", 2)])
def test_network_rbac_enforcement_type(app, proxy_factory, enforcement, checks):
    """ONE_TIME_ON_FIRST_BYTE (the default) checks a connection once, on its first bytes;
    CONTINUOUS on every read: two requests on one keep-alive connection count once / twice."""
    tc = {"@type": NET_RBAC_TYPE, "stat_prefix": "tcp.",
          "rules": {"action": "DENY", "policies": {"p": {
              "permissions": [{"any": True}],
              "principals": [{"directRemoteIp": {"addressPrefix": "10.0.0.0",
                                                 "prefixLen": 8}}]}}}}
    if enforcement:
        tc["enforcement_type"] = enforcement
    p = proxy_factory(rbac_bootstrap(app, [], [{"name": NET_RBAC, "typed_config": tc}]))
    conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=10)
    try:
        for _ in range(2):
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
    finally:
        conn.close()
    assert p.stats()["tcp.rbac.allowed"] == checks


def test_allow_by_source_principal_over_mtls(certs, app, proxy_factory):  # noqa: F811
    """Istio's `principals` on an mTLS inbound chain: authenticated.principal_name against the
    client certificate's URI SAN (the SPIFFE identity); without a client certificate, or with
    another identity, the ALLOW policy denies ([none])."""
    def boot(regex):
        pol = policy([{"any": True}], [{"andIds": {"ids": [{"orIds": {"ids": [
            {"authenticated": {"principalName": {"safeRegex": {"regex": regex}}}}]}}]}}])
        bs = rbac_bootstrap(app, [rbac_filter("ALLOW", {"ns[default]-policy[p]-rule[0]": pol})])
        lst = bs["static_resources"]["listeners"][0]
        # a validation context without require_client_certificate: the certificate is asked
        # for, not required (Istio's PERMISSIVE chains differ; this isolates the RBAC check)
        ts = downstream_tls(certs, require=True)
        del ts["typed_config"]["require_client_certificate"]
        lst["filter_chains"][0]["transport_socket"] = ts
        return bs

    p = proxy_factory(boot("spiffe://.+/ns/default/(.+/|)sa/client(/.+)?"))
    port = next(iter(p.ports.values()))
    ca = ["--cacert", certs["ca.crt"]]
    client = ca + ["--cert", certs["client.crt"], "--key", certs["client.key"]]
    rc, code, _, err = tls_curl(port, "/echo", *client)
    assert (rc, code) == (0, 200), err
    rc, code, body, err = tls_curl(port, "/echo", *ca)  # TLS, no client certificate
    assert (rc, code, body) == (0, 403, "RBAC: access denied"), err
    assert p.access_log_lines(2, name="hcm")[1] == \
        "403 - rbac_access_denied_matched_policy[none]"
    p2 = proxy_factory(boot("spiffe://.+/ns/other/.+"))
    port2 = next(iter(p2.ports.values()))
    assert tls_curl(port2, "/echo", *client)[1] == 403
    assert CLIENT_SAN.startswith("spiffe://cluster.local/ns/default/")
