"""weft-pilot in Kubernetes mode authenticates the CSR service's callers with their projected
service-account tokens through a TokenReview, as istiod's KubeJWTAuthenticator does
(pilot/ca_tokenreview.h): a token from the test API server's TokenRequest (audience istio-ca)
gets a certificate for its own ServiceAccount; the wrong audience, an expired token, a deleted
ServiceAccount, an impersonation and an API server that is away are refused; pilot's own
tokens still work."""
import os
import socket
import sys
import time

import pytest

from conftest import ROOT
from procs import crash_report, start_process, stop_process
from proxyfix import proxy_factory  # noqa: F401 (fixture)
from test_pilot import get, get_json, poll
from test_pilot_ca import (CSR_PATH, Req, Resp, create_certificate, make_csr, metric, rpc_error,
                          token, x509_text)
from test_pilot_kube import exe
from test_pilot_secure_port import mesh_root, secure_csr, synced_nodes, xds_bootstrap

sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

grpc = pytest.importorskip("grpc")
kubernetes = pytest.importorskip("kubernetes")

PILOT_TOKEN = "pilot-token"
CATALOG_ID = "URI:spiffe://cluster.local/ns/shop/sa/catalog"


class Cluster:
    """The test API server (a fixed token key, kept across a restart) and its client."""

    def __init__(self, tmp_path):
        self.args = ["--token", PILOT_TOKEN, "--state", str(tmp_path / "state.json")]
        self.log = str(tmp_path / "kubeapi.log")
        self.srv = fixture.KubeApi(self.args, log=self.log).start()
        cfg = kubernetes.client.Configuration()
        cfg.host = self.srv.url
        cfg.api_key = {"authorization": "Bearer " + PILOT_TOKEN}
        self.client = kubernetes.client.ApiClient(cfg)
        self.core = kubernetes.client.CoreV1Api(self.client)
        self.authn = kubernetes.client.AuthenticationV1Api(self.client)

    def restart(self, down=None):
        port = self.srv.port
        self.srv.stop()
        if down:
            down()
        self.srv = fixture.KubeApi(self.args, port=port, log=self.log).start()

    def token(self, sa, ns="shop", audiences=("istio-ca",), seconds=3600):
        tr = self.core.create_namespaced_service_account_token(
            sa, ns, {"spec": {"audiences": list(audiences), "expirationSeconds": seconds}})
        return tr.status.token

    def stop(self):
        self.client.close()
        self.srv.stop()


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBEAPI_TOKEN_KEY", os.urandom(32).hex())
    c = Cluster(tmp_path)
    c.core.create_namespace({"metadata": {"name": "shop"}})
    c.core.create_namespace({"metadata": {"name": "istio-system"}})
    for sa in ("catalog", "webapp"):
        c.core.create_namespaced_service_account("shop", {"metadata": {"name": sa}})
    yield c
    c.stop()


@pytest.fixture
def pilot(cluster, tmp_path):
    kc = fixture.write_kubeconfig(str(tmp_path / "kubeconfig"), cluster.srv.url,
                                  token=PILOT_TOKEN)
    env = dict(os.environ)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc, addrs = start_process(
        [exe("WEFT_PILOT", "weft-pilot"), "--kubeconfig", kc, "--context", "test",
         "--ca-dir", str(tmp_path / "ca"), "--grpcAddr", "127.0.0.1:0",
         "--monitoringAddr", "127.0.0.1:0", "--secureGRPCAddr", "127.0.0.1:0"],
        count=3, env=env, timeout=40)
    proc.xds, proc.mon, proc.secure = addrs[0][1], addrs[1][1], addrs[2][1]
    proc.ca_dir = tmp_path / "ca"
    try:
        poll(lambda: get(proc.mon, "/ready")[0] == 200, timeout=30)
    except BaseException:
        stop_process(proc)
        raise
    yield proc
    rc = stop_process(proc)
    assert crash_report(proc) is None, proc.stderr_text()
    assert rc == 0, proc.stderr_text()


def leaf_text(tmp_path, chain, name="leaf.pem"):
    p = tmp_path / name
    p.write_text(chain[0])
    return x509_text(p)


def test_test_api_server_tokens(cluster):
    """The TokenRequest / TokenReview pair as python3-kubernetes sees it."""
    tok = cluster.token("catalog")
    r = cluster.authn.create_token_review({"spec": {"token": tok, "audiences": ["istio-ca"]}})
    assert r.status.authenticated is True
    assert r.status.user.username == "system:serviceaccount:shop:catalog"
    assert "system:serviceaccounts" in r.status.user.groups
    assert r.status.audiences == ["istio-ca"]
    r = cluster.authn.create_token_review({"spec": {"token": tok, "audiences": ["other"]}})
    assert not r.status.authenticated
    assert "is invalid for the target audiences" in r.status.error
    with pytest.raises(kubernetes.client.ApiException) as e:
        cluster.token("nobody")
    assert e.value.status == 404
    with pytest.raises(kubernetes.client.ApiException) as e:
        cluster.token("catalog", seconds=60)
    assert e.value.status == 422
    groups = [g.name for g in kubernetes.client.ApisApi(cluster.client).get_api_versions().groups]
    assert "authentication.k8s.io" in groups


def test_service_account_token_gets_its_identity(cluster, pilot, tmp_path):
    tok = cluster.token("catalog")
    # over the secure port; the CSR's own SAN (another identity) is ignored, as istiod does
    chain = secure_csr(pilot.secure, mesh_root(pilot), make_csr(tmp_path, "ecdsa"), tok)
    text = leaf_text(tmp_path, chain)
    assert CATALOG_ID in text and "evil" not in text
    # the plaintext port too, the second time from the cache (no second review)
    assert metric(pilot.mon, "weft_pilot_tokenreview_requests_total") == 1
    chain = create_certificate(pilot.xds, make_csr(tmp_path, "rsa"), tok)
    assert CATALOG_ID in leaf_text(tmp_path, chain, "l2.pem")
    assert metric(pilot.mon, "weft_pilot_tokenreview_requests_total") == 1
    assert metric(pilot.mon, "weft_pilot_tokenreview_cache_hits_total") == 1
    assert metric(pilot.mon, "citadel_server_success_cert_issuance_count") == 2
    # the same token may not ask for another service account
    code, details = rpc_error(pilot.xds, make_csr(tmp_path, "rsa"), tok,
                              impersonate="spiffe://cluster.local/ns/shop/sa/webapp")
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert details == "request impersonation authentication failure"
    # pilot's own tokens still work
    own = token(exe("WEFT_PILOT", "weft-pilot"), pilot.ca_dir, "shop", "webapp")
    chain = create_certificate(pilot.xds, make_csr(tmp_path, "rsa"), own)
    assert "URI:spiffe://cluster.local/ns/shop/sa/webapp" in leaf_text(tmp_path, chain, "l3.pem")
    assert tok not in pilot.stderr_text()


def refused(pilot, tmp_path, tok, why):
    code, details = rpc_error(pilot.xds, make_csr(tmp_path, "rsa"), tok)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert details == "request authenticate failure"
    poll(lambda: why in pilot.stderr_text(), timeout=10)
    assert tok not in pilot.stderr_text()


def test_bad_service_account_tokens_are_refused(cluster, pilot, tmp_path):
    base = ('Authenticator KubeJWTAuthenticator: failed to validate the JWT from cluster '
            '"Kubernetes": the service account authentication returns an error: '
            '[invalid bearer token, ')
    refused(pilot, tmp_path, cluster.token("catalog", audiences=["https://kubernetes.default"]),
            base + 'token audiences ["https://kubernetes.default"] is invalid for the target '
            'audiences ["istio-ca"]]')
    # expired: the API server's clock moves two hours on
    old = cluster.token("catalog", seconds=600)
    cluster.srv.control("token-clock?offset=7200")
    refused(pilot, tmp_path, old, base + "service account token has expired]")
    cluster.srv.control("token-clock?offset=0")
    # the ServiceAccount went away
    gone = cluster.token("webapp")
    cluster.core.delete_namespaced_service_account("webapp", "shop")
    refused(pilot, tmp_path, gone, base + "service account shop/webapp has been deleted]")
    # not a JWT at all; pilot's own authenticator is named first
    refused(pilot, tmp_path, "not-a-token",
            "Authenticator WeftTokenAuthenticator: ")
    assert metric(pilot.mon, "citadel_server_authentication_failure_count") == 4
    assert metric(pilot.mon, "citadel_server_success_cert_issuance_count") == 0


def test_api_server_away_refuses_then_recovers(cluster, pilot, tmp_path):
    tok = cluster.token("catalog")

    def while_down():
        t0 = time.monotonic()
        code, details = rpc_error(pilot.xds, make_csr(tmp_path, "rsa"), tok)
        assert code == grpc.StatusCode.UNAUTHENTICATED
        assert details == "request authenticate failure"
        assert time.monotonic() - t0 < 15
        assert 'failed to validate the JWT from cluster "Kubernetes": POST ' \
               '/apis/authentication.k8s.io/v1/tokenreviews' in pilot.stderr_text()

    cluster.restart(down=while_down)
    # the failure was not cached: the same token works once the API server is back
    chain = create_certificate(pilot.xds, make_csr(tmp_path, "rsa"), tok)
    assert CATALOG_ID in leaf_text(tmp_path, chain)
    assert pilot.poll() is None


def test_xds_auth_with_a_service_account_token(cluster, pilot, tmp_path,
                                               proxy_factory):  # noqa: F811
    """XDS_AUTH on the secure port: weft-proxy's stream carries a TokenRequest token; the
    TokenReview authenticates it (its first request waits for the answer), the node of its own
    service account syncs, another service account's node is refused with istiod's message, a
    token for another audience is refused UNAUTHENTICATED."""
    root = tmp_path / "root.pem"
    root.write_text(mesh_root(pilot))
    san = "istiod.istio-system.svc"
    tok = tmp_path / "istio-token"
    tok.write_text(cluster.token("catalog") + "\n")
    with pytest.raises(RuntimeError) as e:
        proxy_factory(xds_bootstrap(pilot.secure, root, san, ns="shop", sa="webapp"),
                      args=["--token-path", tok], timeout=4)
    assert ("closed: 7, authorization failed: no identities "
            "([spiffe://cluster.local/ns/shop/sa/catalog]) matched shop/webapp") in str(e.value)
    bad = tmp_path / "bad-token"
    bad.write_text(cluster.token("catalog", audiences=["other"]) + "\n")
    with pytest.raises(RuntimeError) as e:
        proxy_factory(xds_bootstrap(pilot.secure, root, san, ns="shop", sa="catalog"),
                      args=["--token-path", bad], timeout=4)
    assert "closed: 16, authentication failure" in str(e.value), str(e.value)
    assert ("Authenticator WeftTokenAuthenticator: failed to validate the JWT: ") in \
        pilot.stderr_text()
    assert ('; Authenticator KubeJWTAuthenticator: failed to validate the JWT from cluster '
            '"Kubernetes": the service account authentication returns an error: [invalid '
            'bearer token, token audiences ["other"] is invalid') in pilot.stderr_text()
    proxy_factory(xds_bootstrap(pilot.secure, root, san, ns="shop", sa="catalog"),
                  args=["--token-path", tok])
    poll(lambda: get_json(pilot.mon, "/debug/syncz") and synced_nodes(pilot), timeout=20)
    # the good token was reviewed once (then cached); refusals are never cached
    assert metric(pilot.mon, "weft_pilot_tokenreview_authenticated_total") == 1
    assert metric(pilot.mon, "weft_pilot_tokenreview_cache_hits_total") >= 1


def test_call_gone_before_its_review(cluster, pilot, tmp_path):
    """A CSR call that ends (its deadline) while its TokenReview hangs: the late answer is
    dropped, pilot goes on and serves the token once the API server answers again."""
    tok = cluster.token("catalog")

    def hanging():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", cluster.srv.port))
        s.listen(8)  # connections wait in the backlog, never answered
        try:
            req = Req(csr=make_csr(tmp_path, "rsa"))
            with grpc.insecure_channel("127.0.0.1:%d" % pilot.xds,
                                       options=[("grpc.enable_http_proxy", 0)]) as ch:
                call = ch.unary_unary(CSR_PATH, request_serializer=Req.SerializeToString,
                                      response_deserializer=Resp.FromString)
                with pytest.raises(grpc.RpcError) as e:
                    call(req, metadata=[("authorization", "Bearer " + tok)], timeout=1)
            assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            poll(lambda: metric(pilot.mon, "weft_pilot_tokenreview_requests_total") == 1,
                 timeout=5)
            time.sleep(0.5)
        finally:
            s.close()  # the review in flight fails now: its answer has no call any more
        time.sleep(0.5)

    cluster.restart(down=hanging)
    chain = create_certificate(pilot.xds, make_csr(tmp_path, "rsa"), tok)
    assert CATALOG_ID in leaf_text(tmp_path, chain)
    assert metric(pilot.mon, "citadel_server_success_cert_issuance_count") == 1
    assert metric(pilot.mon, "citadel_server_authentication_failure_count") == 0
