"""weft-proxy STRICT_DNS clusters whose names do not resolve, as Envoy's
(intro/arch_overview/upstream/service_discovery "Strict DNS", upstream/strict_dns_cluster.cc):
the cluster's hosts are the addresses the last successful resolution of each endpoint
returned, so a name that never resolved contributes no host. A cluster with no host answers
503 "no healthy upstream" (flag UH, details no_healthy_upstream, upstream_cx_none_healthy);
in a cluster with a resolvable and an unresolvable endpoint every request goes to the
resolvable one (src/proxy/server/server.c drops the endpoint when its name does not resolve).

`.invalid` is reserved (RFC 6761 §6.4): it never resolves, without depending on the network.
"""
import socket

import pytest

from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory,
                      simple_routes)
from scripted_upstream import upstreams

assert proxy_factory and upstreams  # fixtures, imported for pytest

UNRESOLVABLE = "no-such-host.invalid"
LOG_FMT = "%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_HOST%\n"


def localhost_is_ipv4():
    """The backends listen on 127.0.0.1; the proxy takes the first address of "localhost"."""
    try:
        first = socket.getaddrinfo("localhost", 80, 0, socket.SOCK_STREAM)[0]
    except OSError:
        return False
    return first[4][0] == "127.0.0.1"


needs_localhost = pytest.mark.skipif(not localhost_is_ipv4(),
                                     reason="localhost does not resolve to 127.0.0.1 first")


def strict_dns(name, endpoints):
    """A STRICT_DNS cluster over (host, port) endpoints."""
    return cluster(name, endpoints, type="STRICT_DNS", connect_timeout=1,
                   dns_lookup_family="V4_ONLY")


def dns_bootstrap(endpoints):
    return bootstrap(listeners=[listener(simple_routes("backend"),
                                         access_logs=[access_log(fmt=LOG_FMT)])],
                     clusters=[strict_dns("backend", endpoints)])


def test_unresolvable_name_has_no_host(proxy_factory, upstreams):
    """Every request: 503 UH no_healthy_upstream, body "no healthy upstream", no upstream
    host in the log, upstream_cx_none_healthy counted, no connection attempted."""
    up = upstreams(["200"])  # the port exists, the name does not resolve
    p = proxy_factory(dns_bootstrap([(UNRESOLVABLE, up.port)]))
    n = 3
    for _ in range(n):
        status, _, body = p.request("GET", "/x")
        assert (status, body) == (503, b"no healthy upstream")
    lines = p.access_log_lines(n)
    assert lines == ["503 UH no_healthy_upstream -"] * n, lines
    stats = p.wait_stat("cluster.backend.upstream_cx_none_healthy", n)
    assert stats.get("cluster.backend.upstream_cx_total", 0) == 0, stats
    assert up.count() == 0


@needs_localhost
def test_mixed_cluster_uses_resolved_endpoint_only(proxy_factory, upstreams):
    """localhost between two unresolvable names: the unresolvable endpoints are no hosts, so
    localhost is the cluster's one host, 100 % healthy (no panic, which would route to a
    name without an address), and every request reaches its backend."""
    good = upstreams(["200"])
    eps = [("a." + UNRESOLVABLE, good.port), ("localhost", good.port),
           ("b." + UNRESOLVABLE, good.port)]
    p = proxy_factory(dns_bootstrap(eps))
    n = 6
    for _ in range(n):
        status, _, body = p.request("POST", "/x", body=b"abc")
        assert (status, body) == (200, b"received=3")
    lines = p.access_log_lines(n)
    assert all(l.startswith("200 - via_upstream 127.0.0.1:") for l in lines), lines
    assert good.count() == n
    stats = p.stats()
    assert stats.get("cluster.backend.upstream_cx_none_healthy", 0) == 0, stats
    assert stats.get("cluster.backend.lb_healthy_panic", 0) == 0, stats
    # the cluster's one host, in /clusters and the membership gauges as in Envoy
    assert stats["cluster.backend.membership_total"] == 1, stats
    assert stats["cluster.backend.membership_healthy"] == 1, stats
    status, _, text = p.admin("/clusters")
    assert status == 200
    hosts = {l.split("::")[1] for l in text.decode().splitlines()
             if l.startswith("backend::") and "::health_flags::" in l}
    assert hosts == {"127.0.0.1:%d" % good.port}, text
