"""weft-proxy path normalization before routing, as Envoy's HTTP connection manager does it
(ConnectionManagerUtility::maybeNormalizePath; src/http/path_norm.h): normalize_path,
merge_slashes and every path_with_escaped_slashes_action.

Two routes, prefix /admin -> cluster "admin" and prefix /api -> cluster "api", each a
scripted upstream that records the request-target it received. The normalized path is
what the routes match, what goes upstream and what the access log shows; an invalid path
is answered 400 with details path_normalization_failed (empty body, no response flag) and
counted in downstream_rq_failed_path_normalization; a redirect in
downstream_rq_redirected_with_normalized_path.
"""
import socket
import subprocess

import pytest

from proxyfix import (ISTIO_TEXT_FORMAT, access_log, bootstrap, cluster,
                      listener, proxy_factory, proxy_path, route, route_config, vhost,
                      write_bootstrap)
from scripted_upstream import upstreams

assert proxy_factory and upstreams  # fixtures, imported for pytest


def make_proxy(proxy_factory, upstreams, **hcm):
    """A proxy with the two routes; returns (proxy, admin upstream, api upstream)."""
    admin, api = upstreams(["200"]), upstreams(["200"])
    rc = route_config([vhost("all", ["*"], [route(prefix="/admin", cluster="admin"),
                                            route(prefix="/api", cluster="api")])])
    logs = [access_log("@LOG:istio@", fmt=ISTIO_TEXT_FORMAT)]
    bs = bootstrap([listener(rc, access_logs=logs, **hcm)],
                   [cluster("admin", [admin.port]), cluster("api", [api.port])])
    return proxy_factory(bs), admin, api


def raw(proxy, target, extra=""):
    """Sends "GET target" as is on a fresh connection -> (status, head text, body bytes)."""
    s = proxy.connect()
    try:
        s.sendall(("GET %s HTTP/1.1\r\nhost: x\r\nconnection: close\r\n%s\r\n"
                   % (target, extra)).encode("latin-1"))
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    head = head.decode("latin-1")
    return int(head.split(" ", 2)[1]), head, body


def targets(up):
    return [r[1] for r in up.requests]


def test_dot_segments_route_and_forward_normalized(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=True)
    assert raw(p, "/api/../admin")[0] == 200
    assert raw(p, "/api/%2e%2E/admin/x")[0] == 200
    assert raw(p, "/api/./v1/../v2?q=/../z")[0] == 200
    assert raw(p, "/api\\..\\admin/%41%7e")[0] == 200
    assert targets(admin) == ["/admin", "/admin/x", "/admin/A~"]
    assert targets(api) == ["/api/v2?q=/../z"]
    logs = p.istio_log(4)
    assert [l["path"] for l in logs] == ["/admin", "/admin/x", "/api/v2?q=/../z", "/admin/A~"]
    assert [l["upstream_cluster"] for l in logs] == ["admin", "admin", "api", "admin"]


def test_invalid_path_is_rejected(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=True)
    status, head, body = raw(p, "/api/%00/x")
    assert (status, body) == (400, b"")
    status, _, body = raw(p, "/api/x#frag")
    assert (status, body) == (400, b"")
    assert targets(admin) == [] and targets(api) == []
    logs = p.istio_log(2)
    for l, path in zip(logs, ["/api/%00/x", "/api/x#frag"]):
        assert l["response_code"] == "400"
        assert l["response_code_details"] == "path_normalization_failed"
        assert l["response_flags"] == "-"
        assert l["path"] == path
    st = p.stats()
    assert st["http.ingress_http.downstream_rq_failed_path_normalization"] == 2
    assert st["http.ingress_http.downstream_rq_redirected_with_normalized_path"] == 0


def test_normalize_path_false_leaves_the_path(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=False)
    assert raw(p, "/api/../admin")[0] == 200
    assert raw(p, "/api/%2e%2e/admin")[0] == 200
    assert targets(api) == ["/api/../admin", "/api/%2e%2e/admin"]
    assert targets(admin) == []
    # a fragment is rejected whatever normalize_path says (Envoy: maybeNormalizePath)
    assert raw(p, "/api#x")[0] == 400
    assert p.istio_log(3)[2]["response_code_details"] == "path_normalization_failed"


def test_merge_slashes(proxy_factory, upstreams):
    p, admin, _ = make_proxy(proxy_factory, upstreams, normalize_path=True, merge_slashes=True)
    assert raw(p, "//admin//x///y/?a=//b")[0] == 200
    assert raw(p, "/api/..//admin")[0] == 200
    assert targets(admin) == ["/admin/x/y/?a=//b", "/admin"]
    q, admin2, _ = make_proxy(proxy_factory, upstreams, normalize_path=True)
    assert raw(q, "//admin//x")[0] == 404  # kept as is: no route matches "//admin"
    assert targets(admin2) == []


def test_escaped_slashes_keep_unchanged(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=True,
                               path_with_escaped_slashes_action="KEEP_UNCHANGED")
    assert raw(p, "/api%2F..%2Fadmin")[0] == 200
    assert targets(api) == ["/api%2F..%2Fadmin"] and targets(admin) == []


def test_escaped_slashes_unescape_and_forward(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=True,
                               path_with_escaped_slashes_action="UNESCAPE_AND_FORWARD")
    assert raw(p, "/api%2F..%2fadmin%5Cx?q=%2F")[0] == 200
    assert targets(admin) == ["/admin/x?q=%2F"] and targets(api) == []
    assert p.istio_log(1)[0]["path"] == "/admin/x?q=%2F"


def test_escaped_slashes_reject_request(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=True,
                               path_with_escaped_slashes_action="REJECT_REQUEST")
    status, _, body = raw(p, "/api%2Fadmin")
    assert (status, body) == (400, b"")
    assert raw(p, "/api/%2Bx")[0] == 200  # no escaped slash: routed
    assert targets(api) == ["/api/%2Bx"] and targets(admin) == []
    logs = p.istio_log(2)
    assert (logs[0]["response_code_details"], logs[0]["path"]) == (
        "path_normalization_failed", "/api/admin")


def test_escaped_slashes_unescape_and_redirect(proxy_factory, upstreams):
    p, admin, api = make_proxy(proxy_factory, upstreams, normalize_path=True,
                               path_with_escaped_slashes_action="UNESCAPE_AND_REDIRECT")
    status, head, body = raw(p, "/api%2F..%2Fadmin?x=1")
    assert (status, body) == (307, b"")
    assert "\r\nlocation: /admin?x=1" in head.lower()
    # gRPC clients do not follow redirects: Envoy rejects instead (a 400, sent as gRPC:
    # :status 200, grpc-status 13 INTERNAL)
    status, head, _ = raw(p, "/api%2Fx", "content-type: application/grpc\r\n")
    assert status == 200
    assert "\r\ngrpc-status: 13\r\n" in head.lower()
    assert raw(p, "/api/../admin")[0] == 200  # nothing escaped: normalized and routed
    assert targets(admin) == ["/admin"] and targets(api) == []
    logs = p.istio_log(3)
    assert [l["response_code_details"] for l in logs[:2]] == ["path_normalization_failed"] * 2
    st = p.stats()  # the 307 and the gRPC 400 are counted apart, as in Envoy
    assert st["http.ingress_http.downstream_rq_redirected_with_normalized_path"] == 1
    assert st["http.ingress_http.downstream_rq_failed_path_normalization"] == 1


def test_bad_escaped_slashes_action_names_the_field(tmp_path):
    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="c")])])
    bs = bootstrap([listener(rc, port=1, path_with_escaped_slashes_action="UNESCAPE")],
                   [cluster("c", [1])], admin_port=2)
    path = write_bootstrap(bs, str(tmp_path))
    r = subprocess.run([proxy_path(), "--mode", "validate", "-c", path], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1, r.stdout
    assert "path_with_escaped_slashes_action" in r.stderr
    assert '"UNESCAPE"' in r.stderr
