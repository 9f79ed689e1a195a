"""weft's Kubernetes client (src/kube) against the test API server (tests/kubeapi): the
reflector, run by the weft-kube-watch test program, lists (paged) and watches over TLS with a
kubeconfig, applies events, renews watches, relists after 410 Expired and after an API server
restart (keeping its cache while the server is down), backs off on errors, re-reads its token
file, verifies the server's CA, and works in cluster and with a client certificate."""

import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.request
import ssl

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "kubeapi"))
import fixture  # noqa: E402

WATCH = os.environ.get("WEFT_KUBE_WATCH", os.path.join(ROOT, "build", "weft-kube-watch"))
TOKEN = "reflector-token"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return fixture.make_certs(str(tmp_path_factory.mktemp("certs")))


class Api:
    def __init__(self, certs, tmp_path, extra=()):
        self.certs = certs
        self.state = str(tmp_path / "state.json")
        self.args = ["--token", TOKEN, "--tls-cert", certs["server.crt"], "--tls-key",
                     certs["server.key"], "--bookmark-interval", "0.5", "--state", self.state]
        self.args += list(extra)
        self.srv = fixture.KubeApi(self.args, log=str(tmp_path / "kubeapi.log")).start()
        self.ctx = ssl.create_default_context(cafile=certs["ca.crt"])

    @property
    def url(self):
        return self.srv.url

    def req(self, method, path, body=None):
        r = urllib.request.Request(self.url + path, method=method,
                                   data=json.dumps(body).encode() if body is not None else None,
                                   headers={"Authorization": "Bearer " + TOKEN,
                                            "Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=10, context=self.ctx) as resp:
            return json.loads(resp.read())

    def cm(self, name, ns="default", labels=None):
        return self.req("POST", "/api/v1/namespaces/%s/configmaps" % ns,
                        {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": name}})

    def restart(self):
        port = self.srv.port
        self.srv.stop()
        self.srv = fixture.KubeApi(self.args, port=port, log=self.srv.log)

    def stop(self):
        self.srv.stop()


@pytest.fixture
def api(certs, tmp_path):
    a = Api(certs, tmp_path)
    yield a
    a.stop()


class Watcher:
    """weft-kube-watch in the background; its JSON state lines in a queue."""

    def __init__(self, args, env=None):
        assert os.access(WATCH, os.X_OK), "build weft-kube-watch first (make)"
        self.proc = subprocess.Popen([WATCH] + args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.q = queue.Queue()
        self.last = None
        self.waited = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            doc = json.loads(line)
            if list(doc) == ["synced"]:
                self.waited = doc["synced"]
            else:
                self.q.put(doc)
        self.q.put(None)

    def until(self, pred, timeout=20, what=""):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                st = self.q.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            if st is None:
                break
            self.last = st
            if pred(st):
                return st
        raise AssertionError("no state with %s; last: %s; stderr: %s"
                             % (what, self.last, self.stderr_now()))

    def stderr_now(self):
        try:
            self.proc.wait(2)  # stdout closed: the process is ending
        except subprocess.TimeoutExpired:
            return "(running)"
        return "exit %s: %s" % (self.proc.returncode, self.proc.stderr.read()[-4000:])

    def stop(self):
        """SIGTERM; returns the exit code (0 by design; a sanitizer report or leak makes it
        non-zero)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        rc = self.proc.returncode
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc


@pytest.fixture
def watchers():
    started = []

    def start(args, env=None):
        w = Watcher(args, env)
        started.append(w)
        return w
    yield start
    codes = [w.stop() for w in started]
    assert codes == [0] * len(codes), "weft-kube-watch exit codes %s" % codes


def kubeconfig(tmp_path, api, **kw):
    return fixture.write_kubeconfig(str(tmp_path / ("kc-%d" % time.monotonic_ns())), api.url,
                                    **kw)


def test_list_pages_watch_events_and_renewal(api, watchers, tmp_path):
    for i in range(5):
        api.cm("cm-%d" % i)
    api.cm("other", ns="kube-system")
    kc = kubeconfig(tmp_path, api, token=TOKEN, ca=api.certs["ca.crt"])
    w = watchers(["--kubeconfig", kc, "--page-size", "2", "--watch-timeout", "2",
                  "--wait-synced", "10000", "configmaps"])
    st = w.until(lambda s: s["phase"] == "watching", what="watching")
    assert w.waited is True
    assert st["synced"] and st["lists"] == 1 and st["pages"] == 3  # 6 objects, 2 a page
    assert sorted(st["objects"]) == ["default/cm-%d" % i for i in range(5)] + \
        ["kube-system/other"]
    list_rv = st["rv"]
    created = api.cm("new")
    api.req("DELETE", "/api/v1/namespaces/default/configmaps/cm-0")
    st = w.until(lambda s: "default/new" in s["objects"] and "default/cm-0" not in s["objects"],
                 what="ADDED new and DELETED cm-0")
    assert st["objects"]["default/new"] == created["metadata"]["resourceVersion"]
    assert int(st["rv"]) > int(list_rv)
    # MODIFIED: the cached object's resourceVersion follows
    mod = api.req("PUT", "/api/v1/namespaces/default/configmaps/cm-1",
                  {"metadata": {"name": "cm-1"}, "data": {"k": "changed"}})
    w.until(lambda s: s["objects"].get("default/cm-1") == mod["metadata"]["resourceVersion"],
            what="MODIFIED cm-1")
    # the 2 s server-side timeout ends each watch; it is renewed without a list, and bookmarks
    # arrive on idle streams
    st = w.until(lambda s: s["watches"] >= 3 and s["bookmarks"] >= 1, what="renewed watches")
    assert st["lists"] == 1 and st["errors"] == 0 and st["relists_expired"] == 0
    assert w.stop() == 0


def test_selectors_and_namespace(api, watchers, tmp_path):
    api.cm("a", labels={"app": "x"})
    api.cm("b", labels={"app": "y"})
    api.cm("c", ns="kube-system", labels={"app": "x"})
    kc = kubeconfig(tmp_path, api, token=TOKEN, ca=api.certs["ca.crt"])
    w = watchers(["--kubeconfig", kc, "-n", "default", "-l", "app in (x)", "configmaps"])
    st = w.until(lambda s: s["phase"] == "watching", what="watching")
    assert list(st["objects"]) == ["default/a"]
    # b starts matching: ADDED; a stops matching: DELETED (§1.4)
    b = api.req("GET", "/api/v1/namespaces/default/configmaps/b")
    b["metadata"]["labels"] = {"app": "x"}
    api.req("PUT", "/api/v1/namespaces/default/configmaps/b", b)
    a = api.req("GET", "/api/v1/namespaces/default/configmaps/a")
    a["metadata"]["labels"] = {"app": "z"}
    api.req("PUT", "/api/v1/namespaces/default/configmaps/a", a)
    w.until(lambda s: list(s["objects"]) == ["default/b"], what="only b")
    w2 = watchers(["--kubeconfig", kc, "--field-selector", "metadata.namespace!=default",
                   "configmaps"])
    st = w2.until(lambda s: s["synced"], what="synced")
    assert list(st["objects"]) == ["kube-system/c"]


def test_expired_relists(api, watchers, tmp_path):
    for i in range(3):
        api.cm("e-%d" % i)
    kc = kubeconfig(tmp_path, api, token=TOKEN, ca=api.certs["ca.crt"])
    w = watchers(["--kubeconfig", kc, "--seed", "7", "configmaps"])
    w.until(lambda s: s["phase"] == "watching", what="watching")
    # history compacted under an open watch: ERROR 410 Expired in the stream (or at the next
    # watch), then a relist that brings the state back
    api.srv.control("expire")
    st = w.until(lambda s: s["relists_expired"] >= 1, what="a 410")
    assert "410 Expired: too old resource version" in st["last_error"]
    st = w.until(lambda s: s["lists"] == 2 and s["phase"] == "watching", what="relisted")
    assert sorted(st["objects"]) == ["default/e-0", "default/e-1", "default/e-2"]
    api.cm("after")
    w.until(lambda s: "default/after" in s["objects"], what="events after the relist")


def test_server_restart_keeps_cache_then_relists(api, watchers, tmp_path):
    api.cm("keep")
    api.cm("gone")
    kc = kubeconfig(tmp_path, api, token=TOKEN, ca=api.certs["ca.crt"])
    w = watchers(["--kubeconfig", kc, "--seed", "3", "configmaps"])
    w.until(lambda s: s["phase"] == "watching", what="watching")
    port = api.srv.port
    api.srv.stop()
    # down: connection refused, back-off, and the last good state is kept
    st = w.until(lambda s: s["phase"] == "backing-off" and "Connection refused" in s["last_error"],
                 what="backing off")
    assert st["backoff_ms"] >= 800
    assert sorted(st["objects"]) == ["default/gone", "default/keep"]
    # while it was down, the cluster changed (another API server wrote to etcd)
    state = json.load(open(api.state))
    state["objs"] = [o for o in state["objs"] if o[2]["metadata"]["name"] != "gone"]
    state["rv"] += 5
    new = {"kind": "ConfigMap", "metadata": {"name": "born", "namespace": "default",
                                             "resourceVersion": str(state["rv"])}}
    state["objs"].append(["", "configmaps", new])
    json.dump(state, open(api.state, "w"))
    api.srv = fixture.KubeApi(api.args, port=port, log=api.srv.log).start()
    # the watch from the old resourceVersion gets 410: relist, deletions synthesised
    st = w.until(lambda s: s["lists"] >= 2 and s["phase"] == "watching", timeout=40,
                 what="relisted after the restart")
    assert sorted(st["objects"]) == ["default/born", "default/keep"]
    assert st["rv"] == str(state["rv"])


def test_token_file_reread_and_unauthorized_backoff(api, watchers, tmp_path):
    tok = tmp_path / "token"
    tok.write_text("wrong\n")
    kc = str(tmp_path / "kc-tokfile")
    with open(kc, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "t",
                   "clusters": [{"name": "c", "cluster": {
                       "server": api.url,
                       "certificate-authority-data": fixture.b64file(api.certs["ca.crt"])}}],
                   "users": [{"name": "u", "user": {"tokenFile": "token"}}],
                   "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}]}, f)
    api.cm("visible")
    w = watchers(["--kubeconfig", kc, "--seed", "5", "--wait-synced", "300", "configmaps"])
    st = w.until(lambda s: s["phase"] == "backing-off", what="backing off on 401")
    assert w.waited is False  # the wait timed out: never synced
    assert st["last_error"].startswith("list: GET /api/v1/configmaps?limit=500: ")
    assert st["last_error"].endswith("401 Unauthorized: Unauthorized")
    assert not st["synced"]
    tok.write_text(TOKEN + "\n")  # rotated: read again at the next request
    st = w.until(lambda s: s["synced"] and s["phase"] == "watching", what="synced")
    assert list(st["objects"]) == ["default/visible"]


def test_tls_verification_and_client_certificate(certs, watchers, tmp_path):
    a = Api(certs, tmp_path, extra=["--client-ca", certs["ca.crt"]])
    try:
        other = fixture.make_certs(str(tmp_path))  # another CA
        kc = kubeconfig(tmp_path, a, token=TOKEN, ca=other["ca.crt"])
        w = watchers(["--kubeconfig", kc, "configmaps"])
        st = w.until(lambda s: s["errors"] >= 1, what="a TLS error")
        assert "TLS handshake with 127.0.0.1:%d: certificate verify failed: " % a.srv.port \
            in st["last_error"] and not st["synced"]
        # a client certificate signed by the server's client CA, no token
        kc = kubeconfig(tmp_path, a, ca=certs["ca.crt"],
                        client=(certs["client.crt"], certs["client.key"]))
        w = watchers(["--kubeconfig", kc, "namespaces"])
        st = w.until(lambda s: s["synced"], what="synced")
        assert "default" in st["objects"] and "kube-system" in st["objects"]
    finally:
        a.stop()


def test_in_cluster(certs, watchers, tmp_path):
    root = tmp_path / "root"
    # the test API server writes the service-account files a pod would have
    api = Api(certs, tmp_path, extra=["--incluster-root", str(root), "--incluster-ca",
                                      certs["ca.crt"]])
    try:
        in_cluster(api, root, watchers)
    finally:
        api.stop()


def in_cluster(api, root, watchers):
    sa = root / "var/run/secrets/kubernetes.io/serviceaccount"
    assert (sa / "token").read_text() == TOKEN and (sa / "namespace").read_text() == "default"
    host, port = api.url[len("https://"):].rsplit(":", 1)
    env = dict(os.environ, KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
    w = watchers(["--in-cluster", str(root), "nodes"], env=env)
    st = w.until(lambda s: s["phase"] == "watching", what="watching")
    assert st["objects"] == {} and st["synced"]
    api.req("POST", "/api/v1/nodes", {"metadata": {"name": "node-1", "labels": {
        "topology.kubernetes.io/region": "r1"}}})
    w.until(lambda s: "node-1" in s["objects"], what="node-1")


def test_config_errors_exit_1(tmp_path):
    bad = tmp_path / "kc"
    bad.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\nusers:\n- name: u\n"
                   "  user:\n    client-key-data: '%%%'\n")
    r = subprocess.run([WATCH, "--kubeconfig", str(bad), "pods"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 1
    assert r.stderr.strip() == ("weft-kube-watch: kubeconfig %s: --context: context \"x\" not "
                                "found" % bad).replace("--context", "current-context")
    r = subprocess.run([WATCH, "--in-cluster", str(tmp_path), "pods"], capture_output=True,
                       text=True, timeout=20,
                       env={k: v for k, v in os.environ.items()
                            if not k.startswith("KUBERNETES_SERVICE")})
    assert r.returncode == 1 and "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be " \
        "defined" in r.stderr
    r = subprocess.run([WATCH, "nosuchkind"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "unknown kind nosuchkind" in r.stderr


def test_expired_continue_token_restarts_the_list(certs, watchers, tmp_path):
    a = Api(certs, tmp_path, extra=["--expire-continue", "1"])
    try:
        for i in range(5):
            a.cm("p-%d" % i)
        kc = kubeconfig(tmp_path, a, token=TOKEN, ca=certs["ca.crt"])
        w = watchers(["--kubeconfig", kc, "--page-size", "2", "configmaps"])
        st = w.until(lambda s: s["synced"], what="synced")
        # page 2's token answered 410: the list started again without it (client-go's pager)
        assert a.req("GET", "/_test/stats")["continue_expired"] == 1
        assert st["lists"] == 1 and st["pages"] == 3 and st["errors"] == 0
        assert sorted(st["objects"]) == ["default/p-%d" % i for i in range(5)]
    finally:
        a.stop()


def write_kc(path, server, cluster_extra, token=TOKEN):
    cluster = dict({"server": server}, **cluster_extra)
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "t",
                   "clusters": [{"name": "c", "cluster": cluster}],
                   "users": [{"name": "u", "user": {"token": token}}],
                   "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}]}, f)
    return path


def test_tls_server_name_and_plain_http(api, watchers, tmp_path):
    ca = {"certificate-authority": api.certs["ca.crt"]}  # the file form this time
    # the certificate names kubernetes.default.svc (a DNS SAN) besides 127.0.0.1
    kc = write_kc(str(tmp_path / "sni-ok"), api.url,
                  dict(ca, **{"tls-server-name": "kubernetes.default.svc"}))
    w = watchers(["--kubeconfig", kc, "namespaces"])
    w.until(lambda s: s["synced"], what="synced with tls-server-name")
    kc = write_kc(str(tmp_path / "sni-bad"), api.url,
                  dict(ca, **{"tls-server-name": "other.example"}))
    w = watchers(["--kubeconfig", kc, "namespaces"])
    st = w.until(lambda s: s["errors"] >= 1, what="a name mismatch")
    assert "certificate verify failed: hostname mismatch" in st["last_error"]
    # insecure-skip-tls-verify: no CA needed
    kc = write_kc(str(tmp_path / "insecure"), api.url, {"insecure-skip-tls-verify": True})
    w = watchers(["--kubeconfig", kc, "namespaces"])
    w.until(lambda s: s["synced"], what="synced without verification")
    # plain HTTP
    plain = fixture.KubeApi(["--token", TOKEN], log=str(tmp_path / "plain.log")).start()
    try:
        kc = write_kc(str(tmp_path / "plain"), plain.url, {})
        w = watchers(["--kubeconfig", kc, "namespaces"])
        st = w.until(lambda s: s["phase"] == "watching", what="watching over http")
        assert "kube-system" in st["objects"]
    finally:
        plain.stop()
