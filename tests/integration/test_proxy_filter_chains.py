"""weft-proxy listeners with several filter chains (Envoy's filter chain match): each
connection takes the chain its addresses select (direct source range, destination port in
Envoy's order of precedence), else the default_filter_chain, else it is closed and counted in
listener.<address>.no_filter_chain_match; every chain's connection manager counts under its
own http.<stat_prefix>.*; equal or overlapping matchers and listener filters are refused with
Envoy's messages; /config_dump shows the chains as configured.

Sources other than 127.0.0.1 are loopback aliases (127.0.0.2, 127.0.0.9): a client socket
bound to one of them before it connects.
"""
import copy
import json
import socket
import subprocess

import pytest

from procs import free_port, running_apps
from proxyfix import (bootstrap, cluster, listener, proxy_factory, proxy_path,  # noqa: F401
                      simple_routes, write_bootstrap)


@pytest.fixture(scope="module")
def apps():
    with running_apps("a", "b") as ports:
        yield ports


def chain(cluster_name, stat_prefix, match=None, name=None):
    """A filter chain whose connection manager routes everything to cluster_name."""
    lst = listener(simple_routes(cluster_name), stat_prefix=stat_prefix)
    fc = copy.deepcopy(lst["filter_chains"][0])
    if match is not None:
        fc["filter_chain_match"] = match
    if name is not None:
        fc["name"] = name
    return fc


def multi_listener(chains, default=None, port=None, name="multi"):
    lst = listener(simple_routes("a"), port=port, name=name)
    lst["filter_chains"] = chains
    if default is not None:
        lst["default_filter_chain"] = default
    return lst


def from_source(src):
    return {"direct_source_prefix_ranges": [{"address_prefix": src, "prefix_len": 32}]}


def get(proxy, source="127.0.0.1", timeout=5):
    """GET /healthz from the given source address; (status, x-weft-app) or None when the proxy
    closed the connection without an answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.bind((source, 0))
        s.connect(("127.0.0.1", proxy.port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    if not data:
        return None
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    app = None
    for line in head[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "x-weft-app":
            app = v.strip()
    return int(head[0].split()[1]), app


def test_direct_source_chain_and_default_chain(apps, proxy_factory):
    lst = multi_listener([chain("a", "from_2", from_source("127.0.0.2"), name="from-2")],
                         default=chain("b", "fallback", name="default"))
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]]),
                                            cluster("b", [apps["b"]])]))
    assert get(proxy, "127.0.0.2") == (200, "a")
    assert get(proxy, "127.0.0.1") == (200, "b")
    assert get(proxy, "127.0.0.3") == (200, "b")
    st = proxy.wait_stat("http.fallback.downstream_rq_completed", 2)
    assert st["http.from_2.downstream_rq_completed"] == 1
    assert st["http.from_2.downstream_cx_total"] == 1
    assert st["http.fallback.downstream_cx_total"] == 2
    lis = "listener.127.0.0.1_%d." % proxy.port
    assert st[lis + "downstream_cx_total"] == 3
    assert st[lis + "no_filter_chain_match"] == 0


def test_destination_port_outranks_source(apps, proxy_factory):
    port = free_port()
    lst = multi_listener([chain("b", "by_source", from_source("127.0.0.2")),
                          chain("a", "by_port", {"destination_port": port})], port=port)
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]]),
                                            cluster("b", [apps["b"]])]))
    # the port is decided first: the source chain never sees a connection to this port
    assert get(proxy, "127.0.0.2") == (200, "a")
    assert get(proxy, "127.0.0.1") == (200, "a")
    st = proxy.wait_stat("http.by_port.downstream_rq_completed", 2)
    assert st["http.by_source.downstream_cx_total"] == 0


def test_no_matching_chain_closes_and_counts(apps, proxy_factory):
    lst = multi_listener([chain("a", "only_9", from_source("127.0.0.9"))])
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    lis = "listener.127.0.0.1_%d." % proxy.port
    assert get(proxy, "127.0.0.1") is None
    proxy.wait_stat(lis + "no_filter_chain_match", 1)
    assert get(proxy, "127.0.0.2") is None
    st = proxy.wait_stat(lis + "no_filter_chain_match", 2)
    assert st[lis + "downstream_cx_total"] == 0
    assert st["http.only_9.downstream_cx_total"] == 0
    assert get(proxy, "127.0.0.9") == (200, "a")
    st = proxy.wait_stat(lis + "downstream_cx_total", 1)
    assert st[lis + "no_filter_chain_match"] == 2


def test_config_dump_shows_chains(apps, proxy_factory):
    lst = multi_listener([chain("a", "from_2", from_source("127.0.0.2"), name="from-2")],
                         default=chain("b", "fallback", name="default"))
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]]),
                                            cluster("b", [apps["b"]])]))
    status, _, body = proxy.admin("/config_dump")
    assert status == 200
    dump = json.loads(body)
    lsec = [c for c in dump["configs"] if c["@type"].endswith("ListenersConfigDump")][0]
    got = lsec["static_listeners"][0]["listener"]
    assert got["filter_chains"][0]["name"] == "from-2"
    assert got["filter_chains"][0]["filter_chain_match"] == {
        "direct_source_prefix_ranges": [{"address_prefix": "127.0.0.2", "prefix_len": 32}]}
    assert got["default_filter_chain"]["name"] == "default"
    rsec = [c for c in dump["configs"] if c["@type"].endswith("RoutesConfigDump")][0]
    clusters = [r["route_config"]["virtual_hosts"][0]["routes"][0]["route"]["cluster"]
                for r in rsec["static_route_configs"]]
    assert clusters == ["a", "b"]  # both chains' connection managers, default last


# ---------- refused configurations ----------

def validate(tmp_path, lst):
    path = write_bootstrap(bootstrap([lst], [cluster("a", [1])]), str(tmp_path))
    return path, subprocess.run([proxy_path(), "--mode", "validate", "-c", path],
                                capture_output=True, text=True, timeout=30)


def test_equal_matchers_refused(tmp_path):
    m = from_source("127.0.0.2")
    lst = multi_listener([chain("a", "x", m, name="first"), chain("a", "y", m, name="second")],
                         port=18123)
    path, r = validate(tmp_path, lst)
    assert r.returncode == 1, r
    want = ("%s: static_resources.listeners[0].filter_chains[1]: error adding listener "
            "'127.0.0.1:18123': filter chain 'second' has the same matching rules defined as "
            "'first'. duplicate matcher is: {\"direct_source_prefix_ranges\":"
            "[{\"address_prefix\":\"127.0.0.2\",\"prefix_len\":32}]}" % path)
    assert want in r.stderr, r.stderr


def test_overlapping_matchers_refused(tmp_path):
    one = {"server_names": ["a.example.com", "b.example.com"]}
    two = {"server_names": ["b.example.com"]}
    lst = multi_listener([chain("a", "x", one), chain("a", "y", two)], port=18124)
    path, r = validate(tmp_path, lst)
    assert r.returncode == 1, r
    assert ("%s: static_resources.listeners[0].filter_chains[1]: error adding listener "
            "'127.0.0.1:18124': multiple filter chains with overlapping matching rules are "
            "defined" % path) in r.stderr, r.stderr


def test_two_chains_without_match_are_duplicates(tmp_path):
    lst = multi_listener([chain("a", "x"), chain("a", "y")], port=18125)
    _, r = validate(tmp_path, lst)
    assert r.returncode == 1, r
    assert "filter chain '' has the same matching rules defined as ''" in r.stderr, r.stderr


@pytest.mark.parametrize("name,feature", [
    ("envoy.filters.listener.proxy_protocol", "it comes with the PROXY protocol"),
])
def test_listener_filters_refused_by_name(tmp_path, name, feature):
    lst = multi_listener([chain("a", "x")], port=18126)
    lst["listener_filters"] = [{"name": name}]
    path, r = validate(tmp_path, lst)
    assert r.returncode == 1, r
    assert ("%s: static_resources.listeners[0].listener_filters[0].name: listener filter "
            "\"%s\" is not supported yet: %s" % (path, name, feature)) in r.stderr, r.stderr


def test_original_dst_listener_filter_accepted(tmp_path):
    """original_dst (transparent capture, test_proxy_original_dst.py) validates."""
    lst = multi_listener([chain("a", "x")], port=18126)
    lst["listener_filters"] = [{"name": "envoy.filters.listener.original_dst"}]
    lst["use_original_dst"] = True
    _, r = validate(tmp_path, lst)
    assert r.returncode == 0, r.stderr


def test_partial_wildcard_and_no_chain_refused(tmp_path):
    lst = multi_listener([chain("a", "x", {"server_names": ["www.*.com"]})], port=18127)
    _, r = validate(tmp_path, lst)
    assert r.returncode == 1, r
    assert ("filter_chains[0].filter_chain_match.server_names: partial wildcards are not "
            "supported in \"server_names\"") in r.stderr, r.stderr
    lst = multi_listener([], port=18127)
    _, r = validate(tmp_path, lst)
    assert r.returncode == 1, r
    assert ("static_resources.listeners[0]: error adding listener '127.0.0.1:18127': no filter "
            "chains specified") in r.stderr, r.stderr


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback (::1) on this host")
def test_ipv6_any_listener_is_ipv6_only(apps, proxy_factory):
    """A listener on "::" without ipv4_compat is IPv6-only, as Envoy binds it (IPV6_V6ONLY):
    IPv6 clients are served, an IPv4 client is refused (before: the IPv4 client was accepted
    and seen as [::ffff:127.0.0.1], outside every IPv4 source range)."""
    lst = listener(simple_routes("a"), address="::", name="v6")
    proxy = proxy_factory(bootstrap([lst], [cluster("a", [apps["a"]])]))
    with socket.create_connection(("::1", proxy.port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head = s.recv(64)
    assert head.startswith(b"HTTP/1.1 200"), head
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5).close()
