"""`weftctl up` gives every proxy the service-account token Kubernetes would project into its
pod (localmesh_tokens.h; security.md §1.6): STATE/tokens/<pod>.<ns>/istio-token, mode 0600,
passed as --token-path (CA_ADDR istiod's secure port 15012, CA_ROOT_CA the namespace's root
that the supervisor keeps in sync from pilot), for the identity namespace + the Deployment's service account
("default" when unset). A CSR with a pod's token is accepted by the mesh's pilot, which issues
that pod's SPIFFE ID and no other (the SAN a CSR asks for is ignored; impersonation is
refused). Injected pods carry security.istio.io/tlsMode: istio in the Pod objects pilot reads,
and pilot's EDS tags their endpoints with it. `weftctl down` removes the tokens.

Runs the local mesh: only inside a network namespace of its own (unshare -n), like the other
test_weftctl_up* suites.
"""
import json
import os
import re
import stat
import urllib.request

import pytest

from test_weftctl_up import (book_folder, kill_leftovers, need_fixed_ports, supervisor_log,
                             wait_for, weftctl)

grpc = pytest.importorskip("grpc")
from test_pilot_ca import create_certificate, make_csr, openssl  # noqa: E402

XDS_PORT = 15010


def spiffe_of(tmp_path, chain, name):
    leaf = tmp_path / (name + ".pem")
    leaf.write_text(chain[0])
    text = openssl("x509", "-noout", "-text", "-in", leaf).stdout
    return re.findall(r"URI:(spiffe://[^\s,]+)", text)


def test_up_mints_a_token_per_pod(tmp_path):
    need_fixed_ports()
    d = book_folder(tmp_path)
    # catalog v2 without its serviceAccountName: its pods run as `default`
    v2 = d / "catalog-deployment-v2.yaml"
    text = v2.read_text()
    assert "serviceAccountName: catalog" in text
    v2.write_text(re.sub(r"\n *serviceAccountName: catalog", "", text))
    state = str(tmp_path / "state")
    rt = tmp_path / "run"
    rt.mkdir()
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", runtime_dir=rt)
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        with open(os.path.join(state, "mesh.json")) as f:
            mesh = json.load(f)
        pods = mesh["pods"]
        assert len(pods) == 4
        # the book's catalog v1 runs as `catalog`; catalog-v2 now sets none: `default`
        want_sa = {}
        for p in pods:
            if p["gateway"]:
                want_sa[p["name"]] = "istio-ingressgateway-service-account"
            elif p["labels"].get("version") == "v1":
                want_sa[p["name"]] = "catalog"
            else:
                want_sa[p["name"]] = "default"
        assert oct(os.stat(os.path.join(state, "tokens")).st_mode & 0o777) == "0o700"
        tokens = {}
        for p in pods:
            path = os.path.join(state, "tokens", "%s.%s" % (p["name"], p["namespace"]),
                                "istio-token")
            st = os.stat(path)
            assert stat.S_ISREG(st.st_mode) and st.st_mode & 0o777 == 0o600, oct(st.st_mode)
            tokens[p["name"]] = open(path).read().strip()
            proxy = next(x for x in mesh["processes"] if x["name"] == p["name"] + ".proxy")
            argv = proxy["argv"]
            assert argv[argv.index("--token-path") + 1] == path, argv
            # pilot-agent's CA settings: istiod's secure port, verified against the root the
            # pod's namespace gets (the istio-ca-root-cert ConfigMap, kept in sync)
            with open("/proc/%d/environ" % proxy["pid"], "rb") as f:
                env = dict(kv.split("=", 1) for kv in f.read().decode().split("\0") if "=" in kv)
            root_file = os.path.join(state, "roots", p["namespace"], "root-cert.pem")
            assert env.get("CA_ADDR") == "127.0.0.1:15012", env
            assert env.get("CA_ROOT_CA") == root_file, env
            with urllib.request.urlopen("http://127.0.0.1:15014/debug/istio-ca-root-cert?"
                                        "namespace=" + p["namespace"], timeout=5) as r:
                published = json.load(r)["data"]["root-cert.pem"]
            assert open(root_file).read() == published
            # what pilot reads: the injector's tlsMode label on sidecar pods only
            pod_file = os.path.join(state, "pods", "%s.%s.json" % (p["namespace"], p["name"]))
            with open(pod_file) as f:
                labels = json.load(f)["metadata"]["labels"]
            if p["gateway"]:
                assert "security.istio.io/tlsMode" not in labels
            else:
                assert labels["security.istio.io/tlsMode"] == "istio", labels

        # each token obtains its pod's SPIFFE ID from the mesh's CA (pilot on 15010)
        for name, tok in tokens.items():
            ns = next(p["namespace"] for p in pods if p["name"] == name)
            chain = create_certificate(XDS_PORT, make_csr(tmp_path, "ecdsa"), tok, ttl=3600)
            assert chain[-1] == open(os.path.join(state, "ca", "root-cert.pem")).read()
            assert spiffe_of(tmp_path, chain, name) == [
                "spiffe://cluster.local/ns/%s/sa/%s" % (ns, want_sa[name])]

        # a pod's token cannot obtain another pod's identity: the CSR's own SAN (make_csr asks
        # for spiffe://evil.example/...) is ignored, and impersonation is refused
        gw = next(p["name"] for p in pods if p["gateway"])
        v1 = next(n for n, sa in want_sa.items() if sa == "catalog")
        chain = create_certificate(XDS_PORT, make_csr(tmp_path, "rsa"), tokens[v1])
        assert spiffe_of(tmp_path, chain, "v1-again") == [
            "spiffe://cluster.local/ns/istioinaction/sa/catalog"]
        with pytest.raises(grpc.RpcError) as e:
            create_certificate(XDS_PORT, make_csr(tmp_path, "ecdsa"), tokens[v1],
                               impersonate="spiffe://cluster.local/ns/istio-system/sa/"
                                           "istio-ingressgateway-service-account")
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, e.value.details()
        assert gw in tokens

        # pilot's EDS tags the sidecar endpoints with tlsMode istio (auto mTLS reads it):
        # the gateway's live config dump holds what pilot sent
        gw_ip = next(p["ip"] for p in pods if p["gateway"])

        def tagged():
            url = "http://%s:15000/config_dump?include_eds" % gw_ip
            with urllib.request.urlopen(url, timeout=5) as r:
                dump = json.load(r)
            modes = []
            for c in dump["configs"]:
                for e in c.get("dynamic_endpoint_configs", []):
                    cla = e["endpoint_config"]
                    if cla["cluster_name"] != "outbound|80||catalog.istioinaction.svc.cluster.local":
                        continue
                    for loc in cla.get("endpoints", []):
                        for lb in loc.get("lb_endpoints", []):
                            fm = lb.get("metadata", {}).get("filter_metadata", {})
                            modes.append(fm.get("envoy.transport_socket_match", {}).get("tlsMode"))
            return modes if len(modes) == 3 and set(modes) == {"istio"} else None
        wait_for(tagged, 20, "tlsMode istio on the gateway's catalog endpoints")
    finally:
        down = weftctl("down", "--state", state, runtime_dir=rt)
        left = kill_leftovers(state)
    assert down.returncode == 0, down.stderr
    assert not left, left
    assert not os.path.exists(os.path.join(state, "tokens"))
    # the CA (and its token key) stays with the state folder, as the mesh's root does
    assert os.path.exists(os.path.join(state, "ca", "token-signing-key"))


def test_supervisor_refreshes_the_tokens(tmp_path, monkeypatch):
    """As the kubelet refreshes a projected token at 80 % of its life (9.6 h of 12 h), the
    supervisor of `weftctl up` writes fresh tokens (WEFT_LM_TOKEN_REFRESH_MS shortens the
    period for this test): each file changes, stays 0600, and the new token still gets the
    pod its certificate; the supervisor log says so."""
    need_fixed_ports()
    d = book_folder(tmp_path)
    state = str(tmp_path / "state")
    rt = tmp_path / "run"
    rt.mkdir()
    monkeypatch.setenv("WEFT_LM_TOKEN_REFRESH_MS", "1000")
    try:
        up = weftctl("up", d, "--detach", "--state", state, "--timeout", "60", runtime_dir=rt)
        assert up.returncode == 0, "up failed:\n%s\n%s\n%s" % (up.stdout, up.stderr,
                                                                supervisor_log(state))
        with open(os.path.join(state, "mesh.json")) as f:
            pod = next(p for p in json.load(f)["pods"] if not p["gateway"])
        path = os.path.join(state, "tokens", "%s.%s" % (pod["name"], pod["namespace"]),
                            "istio-token")
        first = open(path).read()
        wait_for(lambda: open(path).read() != first, 10, "a refreshed token")
        wait_for(lambda: "refreshed the pods' service-account tokens" in supervisor_log(state),
                 10, "the supervisor's line")
        assert os.stat(path).st_mode & 0o777 == 0o600
        chain = create_certificate(XDS_PORT, make_csr(tmp_path, "ecdsa"),
                                   open(path).read().strip(), ttl=600)
        assert spiffe_of(tmp_path, chain, "refreshed") == [
            "spiffe://cluster.local/ns/%s/sa/catalog" % pod["namespace"]]
    finally:
        weftctl("down", "--state", state, timeout=60, runtime_dir=rt)
        kill_leftovers(state)
