"""weft-proxy's upstream HTTP/2 (proxy/upstream/pool_h2.h, uconn_h2.h) against real servers
nobody on the project wrote: Python's h2 (prior knowledge, tests/integration/h2server.py) and
grpcio. Clusters set typed_extension_protocol_options explicit_http_config
http2_protocol_options (or use_downstream_protocol_config, or the legacy cluster field), per
../shared/reference/protocols.md §1.5, §2.2-2.8: streams multiplexed on one connection up to
max_concurrent_streams, max_requests_per_connection, GOAWAY and RST_STREAM mapped to Envoy's
reset reasons, flags and details, trailers through, flow control bounded.
"""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from proxyfix import (access_log, bootstrap, cluster, listener, proxy_factory, route,
                      route_config, vhost)

assert proxy_factory  # fixture, imported for pytest

pytest.importorskip("h2", reason="python3-h2 (scripts/setup installs it)")
from h2server import H2Server  # noqa: E402

HPO = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
LOG = {"code": "%RESPONSE_CODE%", "flags": "%RESPONSE_FLAGS%",
       "details": "%RESPONSE_CODE_DETAILS%", "path": "%REQ(:PATH)%",
       "attempts": "%UPSTREAM_REQUEST_ATTEMPT_COUNT%", "protocol": "%PROTOCOL%"}


def h2_cluster(name, port, h2opts=None, common=None, downstream=False, legacy=False, **kw):
    c = cluster(name, [port], **kw)
    if legacy:
        c["http2_protocol_options"] = dict(h2opts or {})
        return c
    opts = {"@type": "type.googleapis.com/" + HPO}
    if downstream:
        opts["use_downstream_protocol_config"] = {"http_protocol_options": {},
                                                  "http2_protocol_options": dict(h2opts or {})}
    else:
        opts["explicit_http_config"] = {"http2_protocol_options": dict(h2opts or {})}
    if common:
        opts["common_http_protocol_options"] = common
    c["typed_extension_protocol_options"] = {HPO: opts}
    return c


def boot(cl, retry=None, **hcm):
    r = route(prefix="/", cluster=cl["name"], timeout="20s")
    if retry:
        r["route"]["retry_policy"] = retry
    rc = route_config([vhost("all", ["*"], [r])])
    lst = listener(rc, access_logs=[access_log(json_format=LOG)], **hcm)
    return bootstrap([lst], [cl])


def curl(*args, timeout=30):
    return subprocess.run(["curl", "-sS", "--max-time", "20"] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def logs(proxy, n):
    return [json.loads(line) for line in proxy.access_log_lines(n)]


@pytest.fixture
def srv():
    s = H2Server()
    yield s
    s.close()


def test_h1_downstream_to_h2_upstream_with_trailers(srv, proxy_factory):
    p = proxy_factory(boot(h2_cluster("h2be", srv.port)))
    r = curl("-H", "te: trailers", "-H", "Expect:", "--data-binary", "x" * 70000,
             "-w", "\n%{http_code}", p.url("/echo?a=1"))
    body, _, code = r.stdout.rpartition("\n")
    assert code == "200", r.stdout + r.stderr
    echo = json.loads(body)
    assert echo["method"] == "POST" and echo["path"] == "/echo?a=1"
    assert echo["authority"] == "127.0.0.1:%d" % p.port  # Host -> :authority
    assert echo["body_bytes"] == 70000
    names = [h[0] for h in echo["headers"]]
    assert "host" not in names and "connection" not in names
    assert ("te", "trailers") in [tuple(h) for h in echo["headers"]]
    st = p.stats()
    assert st["cluster.h2be.upstream_cx_http2_total"] == 1
    assert logs(p, 1)[0]["code"] == 200
