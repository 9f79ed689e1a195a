#!/usr/bin/python3
"""Write the weft-proxy bootstrap for bench/run_proxy.sh (Envoy v3 JSON).

usage: weft_bootstrap.py OUT.json LISTEN_PORT ADMIN_PORT BACKEND_PORT [--retry-route]
           [--tls CERT KEY [--client-ca CA]] [--upstream-tls CERT KEY CA SAN SNI]
           [--rbac-port PORT]

One listener on 127.0.0.1:LISTEN_PORT with an HTTP connection manager (stat_prefix "bench",
inline route_config: one virtual host "*", route prefix "/" to cluster "backend") and the
router filter; one STATIC cluster "backend" (127.0.0.1:BACKEND_PORT, connect_timeout 1s);
admin on 127.0.0.1:ADMIN_PORT. Field names and nesting are Envoy v3's
(envoy.config.bootstrap.v3.Bootstrap). Following Envoy's "how to benchmark Envoy" FAQ, the
connection manager has generate_request_id off, the router has dynamic_stats off and the
cluster's circuit breakers are raised so that they never trip. --retry-route adds, before
"/", a route on prefix "/retry" to the same cluster with Istio's default retry policy
(reference §4.5), for bench/run_retry.sh.

TLS (bench/run_proxy_tls.sh): --tls puts a DownstreamTlsContext with the certificate and key
files on the listener's filter chain (TLS 1.2 to 1.3); --client-ca adds
require_client_certificate and the CA that verifies clients (a sidecar's inbound side).
--upstream-tls gives the cluster an UpstreamTlsContext presenting CERT/KEY, trusting CA,
checking the exact URI SAN and sending SNI (a sidecar's ISTIO_MUTUAL cluster, security.md
§3.2, with files instead of SDS). With --tls the connection manager also accepts HTTP/1.0
(http_protocol_options.accept_http_10), as `openssl s_time -www` sends it.

--rbac-port PORT (bench/run_rbac.sh) adds a second listener "bench-rbac" on PORT, the same
connection manager with, before the router, an envoy.filters.http.rbac filter holding a
10-rule ALLOW policy as istiod translates one AuthorizationPolicy with ten rules (security.md
§6.3; policy ids ns[bench]-policy[api]-rule[i]): rule i allows methods GET/HEAD on paths
/api/v<i>/* and /api/v<i>/status, when header x-tenant is one of two values, from any
principal. Rules 0-8 do not match the benchmark's GET /bench/... (count_instr.sh's /bytes/...);
rule 9 ("/bench/*", "/bytes/*", any x-tenant) does: every request walks all ten, the worst case of a first-match engine.
"""
import argparse
import json
import sys

HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
ROUTER = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
BIG = 1000000000


def sockaddr(port):
    return {"socket_address": {"address": "127.0.0.1", "port_value": port}}


ISTIO_RETRY = {
    "retry_on": "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",
    "num_retries": 2,
    "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts"}],
    "host_selection_retry_max_attempts": "5",
}


TLS_NAME = "envoy.transport_sockets.tls"
TLS_PKG = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3."
TLS_PARAMS = {"tls_minimum_protocol_version": "TLSv1_2", "tls_maximum_protocol_version": "TLSv1_3"}


def cert_files(cert, key):
    return [{"certificate_chain": {"filename": cert}, "private_key": {"filename": key}}]


def downstream_tls(cert, key, client_ca=None):
    ctx = {"@type": TLS_PKG + "DownstreamTlsContext", "common_tls_context": {
        "tls_params": TLS_PARAMS, "tls_certificates": cert_files(cert, key),
        "alpn_protocols": ["http/1.1"]}}
    if client_ca:
        ctx["require_client_certificate"] = True
        ctx["common_tls_context"]["validation_context"] = {"trusted_ca": {"filename": client_ca}}
    return {"name": TLS_NAME, "typed_config": ctx}


def upstream_tls(cert, key, ca, san, sni):
    return {"name": TLS_NAME, "typed_config": {
        "@type": TLS_PKG + "UpstreamTlsContext", "sni": sni, "common_tls_context": {
            "tls_params": TLS_PARAMS, "tls_certificates": cert_files(cert, key),
            "alpn_protocols": ["istio-peer-exchange", "istio"],
            "validation_context": {"trusted_ca": {"filename": ca},
                                   "match_subject_alt_names": [{"exact": san}]}}}}


RBAC = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"


def or_rules(rules):
    return {"or_rules": {"rules": rules}}


def header_exact(name, value):
    return {"header": {"name": name, "string_match": {"exact": value}}}


def path_matcher(path):
    """Istio's path matcher: "/a/*" -> prefix "/a/", otherwise exact."""
    m = {"prefix": path[:-1]} if path.endswith("*") else {"exact": path}
    return {"url_path": {"path": m}}


def rbac_rule(i):
    paths = ["/bench/*", "/bytes/*"] if i == 9 else ["/api/v%d/*" % i, "/api/v%d/status" % i]
    rules = [or_rules([header_exact(":method", m) for m in ("GET", "HEAD")]),
             or_rules([path_matcher(p) for p in paths])]
    if i != 9:
        rules.append(or_rules([header_exact("x-tenant", t) for t in ("a%d" % i, "b%d" % i)]))
    return {"permissions": [{"and_rules": {"rules": rules}}],
            "principals": [{"and_ids": {"ids": [{"any": True}]}}]}


def rbac_filter():
    policies = {"ns[bench]-policy[api]-rule[%d]" % i: rbac_rule(i) for i in range(10)}
    return {"name": "envoy.filters.http.rbac",
            "typed_config": {"@type": RBAC, "rules": {"policies": policies}}}


def bootstrap(listen_port, admin_port, backend_port, retry_route=False, tls=None,
              upstream=None, rbac_port=None):
    hcm = {
        "@type": HCM,
        "stat_prefix": "bench",
        "generate_request_id": False,
        "route_config": {
            "name": "bench",
            "virtual_hosts": [{
                "name": "backend",
                "domains": ["*"],
                "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "backend"}}],
            }],
        },
        "http_filters": [{
            "name": "envoy.filters.http.router",
            "typed_config": {"@type": ROUTER, "dynamic_stats": False},
        }],
    }
    if tls:  # openssl s_time -www sends HTTP/1.0 requests
        hcm["http_protocol_options"] = {"accept_http_10": True}
    if retry_route:
        hcm["route_config"]["virtual_hosts"][0]["routes"].insert(0, {
            "match": {"prefix": "/retry"},
            "route": {"cluster": "backend", "retry_policy": ISTIO_RETRY},
        })
    chain = {"filters": [{
        "name": "envoy.filters.network.http_connection_manager",
        "typed_config": hcm,
    }]}
    if tls:
        chain["transport_socket"] = downstream_tls(*tls)
    listener = {"name": "bench", "address": sockaddr(listen_port), "filter_chains": [chain]}
    listeners = [listener]
    if rbac_port:
        rhcm = json.loads(json.dumps(hcm))
        rhcm["stat_prefix"] = "bench_rbac"
        rhcm["http_filters"].insert(0, rbac_filter())
        listeners.append({"name": "bench-rbac", "address": sockaddr(rbac_port), "filter_chains": [
            {"filters": [{"name": "envoy.filters.network.http_connection_manager",
                          "typed_config": rhcm}]}]})
    cluster = {
        "name": "backend",
        "type": "STATIC",
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "circuit_breakers": {"thresholds": [{
            "priority": "DEFAULT",
            "max_connections": BIG,
            "max_pending_requests": BIG,
            "max_requests": BIG,
            "max_retries": BIG,
        }]},
        "load_assignment": {
            "cluster_name": "backend",
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": sockaddr(backend_port)}}]}],
        },
    }
    if upstream:
        cluster["transport_socket"] = upstream_tls(*upstream)
    return {
        "node": {"id": "bench", "cluster": "bench"},
        "admin": {"address": sockaddr(admin_port)},
        "static_resources": {"listeners": listeners, "clusters": [cluster]},
    }


def main(argv):
    ap = argparse.ArgumentParser(prog="weft_bootstrap.py")
    ap.add_argument("out")
    ap.add_argument("ports", type=int, nargs=3, metavar="PORT")
    ap.add_argument("--retry-route", action="store_true")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--client-ca", metavar="CA")
    ap.add_argument("--upstream-tls", nargs=5, metavar=("CERT", "KEY", "CA", "SAN", "SNI"))
    ap.add_argument("--rbac-port", type=int, metavar="PORT")
    a = ap.parse_args(argv[1:])
    if a.client_ca and not a.tls:
        ap.error("--client-ca needs --tls")
    tls = (a.tls + [a.client_ca]) if a.tls else None
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(bootstrap(*a.ports, retry_route=a.retry_route, tls=tls,
                            upstream=a.upstream_tls, rbac_port=a.rbac_port), f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
