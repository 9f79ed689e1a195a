#!/usr/bin/python3
"""Write the weft-proxy bootstrap for bench/run_proxy.sh (Envoy v3 JSON).

usage: weft_bootstrap.py OUT.json LISTEN_PORT ADMIN_PORT BACKEND_PORT [--retry-route]

One listener on 127.0.0.1:LISTEN_PORT with an HTTP connection manager (stat_prefix "bench",
inline route_config: one virtual host "*", route prefix "/" to cluster "backend") and the
router filter; one STATIC cluster "backend" (127.0.0.1:BACKEND_PORT, connect_timeout 1s);
admin on 127.0.0.1:ADMIN_PORT. Field names and nesting are Envoy v3's
(envoy.config.bootstrap.v3.Bootstrap). Following Envoy's "how to benchmark Envoy" FAQ, the
connection manager has generate_request_id off, the router has dynamic_stats off and the
cluster's circuit breakers are raised so that they never trip. --retry-route adds, before
"/", a route on prefix "/retry" to the same cluster with Istio's default retry policy
(reference §4.5), for bench/run_retry.sh.
"""
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


def bootstrap(listen_port, admin_port, backend_port, retry_route=False):
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
    if retry_route:
        hcm["route_config"]["virtual_hosts"][0]["routes"].insert(0, {
            "match": {"prefix": "/retry"},
            "route": {"cluster": "backend", "retry_policy": ISTIO_RETRY},
        })
    listener = {
        "name": "bench",
        "address": sockaddr(listen_port),
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": hcm,
        }]}],
    }
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
    return {
        "node": {"id": "bench", "cluster": "bench"},
        "admin": {"address": sockaddr(admin_port)},
        "static_resources": {"listeners": [listener], "clusters": [cluster]},
    }


def main(argv):
    retry = argv[5:] == ["--retry-route"]
    if len(argv) != 5 and not retry:
        sys.stderr.write("usage: weft_bootstrap.py OUT.json LISTEN_PORT ADMIN_PORT BACKEND_PORT"
                         " [--retry-route]\n")
        return 2
    ports = [int(p) for p in argv[2:5]]
    with open(argv[1], "w", encoding="utf-8") as f:
        json.dump(bootstrap(*ports, retry_route=retry), f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
