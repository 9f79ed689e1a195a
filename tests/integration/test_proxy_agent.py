"""`weft-proxy proxy sidecar|router` (pilot-agent's command, src/proxy/agent/agent_config.h) in
a pod as Kubernetes runs it, without Kubernetes: network namespaces stand for the pod and the
node, and the processes get exactly what Istio's injector gives the istio-proxy container.

- the pod (network and mount namespace): eth0 10.10.0.5/24 (a veth), default route through it;
  /etc/hosts maps istiod.istio-system.svc to istiod's address (cluster DNS's answer); Istio's
  capture rules from `weft-proxy istio-iptables` (istio-init's arguments); the app (weft-app)
  on 0.0.0.0:8080; the sidecar as uid 1337 in the pod's root folder (pilot-agent runs in /:
  ./var/run/secrets/istio/root-cert.pem, ./var/run/secrets/tokens/istio-token,
  ./etc/istio/pod/labels and annotations) with Istio's injected environment and arguments,
  PROXY_CONFIG without a discoveryAddress (the default istiod.istio-system.svc:15012).
- istiod's namespace (the peer of the veth, 10.10.0.2): weft-pilot on the fixed secure port
  15012 (--ca-dir; folder source with the Service, Deployment and Pod), and the ingress
  gateway (`proxy router`) whose PROXY_CONFIG names istiod by IP with ISTIOD_SAN.

Fixed ports (15000, 15012, 15020, 15021, 15090) are Istio's: the namespaces keep them free.
Needs root (unshare, nsenter, iptables); skipped otherwise.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from procs import CRASH_MARKERS, app_path, start_process, stop_process
from proxyfix import proxy_path
from test_pilot import pilot_exe  # noqa: F401 (fixture)
from test_pilot_ca import token

POD_IP, ISTIOD_IP, SVC_IP = "10.10.0.5", "10.10.0.2", "10.96.1.1"
SAN = "istiod.istio-system.svc"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nsenter"),
                                reason="needs root and util-linux nsenter/unshare")

CONFIG = """
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: %(svc)s
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, version: v1}}
    spec:
      serviceAccountName: web
      containers: [{name: web, image: weft-app, ports: [{containerPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web, version: v1, security.istio.io/tlsMode: istio}
spec:
  serviceAccountName: web
  containers:
  - {name: web, image: weft-app, ports: [{containerPort: 8080}]}
  - {name: istio-proxy, image: proxyv2, ports: [{containerPort: 15090, name: http-envoy-prom}]}
status: {phase: Running, podIP: %(pod)s, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Service
metadata: {name: istio-ingressgateway, namespace: istio-system,
           labels: {istio: ingressgateway}}
spec:
  selector: {istio: ingressgateway}
  ports: [{name: http2, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: istio-ingressgateway-1
  namespace: istio-system
  labels: {istio: ingressgateway, app: istio-ingressgateway}
spec:
  serviceAccountName: istio-ingressgateway
  containers: [{name: istio-proxy, image: proxyv2}]
status: {phase: Running, podIP: %(istiod)s, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: web, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: ["*"]
  gateways: [web]
  http: [{route: [{destination: {host: web.shop.svc.cluster.local, port: {number: 80}}}]}]
""" % {"svc": SVC_IP, "pod": POD_IP, "istiod": ISTIOD_IP}


def sh(*argv, **kw):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=30, **kw)
    assert r.returncode == 0, "%s: %s%s" % (argv, r.stdout, r.stderr)
    return r.stdout


def holder(*unshare_flags):
    """A process holding new namespaces (sleep); its PID names them for nsenter."""
    p = subprocess.Popen(["unshare", *unshare_flags, "sleep", "600"])
    for _ in range(100):
        if os.readlink("/proc/%d/ns/net" % p.pid) != os.readlink("/proc/self/ns/net"):
            return p
        time.sleep(0.05)
    p.kill()
    raise RuntimeError("unshare did not start")


def ns(h, mount=False, uid=None, wd=None):
    """The nsenter prefix that runs a command in holder h's namespaces."""
    v = ["nsenter", "-t", str(h.pid), "-n"] + (["-m"] if mount else [])
    if uid is not None:
        v += ["--setuid", str(uid), "--setgid", str(uid)]
    if wd:
        v += ["--wd=%s" % wd]
    return v + ["--"]


def curl(h, url, *extra):
    """(status, headers+body text) of a request made inside h's network namespace."""
    out = subprocess.run(ns(h) + ["curl", "-s", "-i", "-m", "5", *extra, url],
                         capture_output=True, text=True, timeout=20).stdout
    status = int(out.split(" ", 2)[1]) if out.startswith("HTTP/") else 0
    return status, out


def poll(pred, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


class Proxy:
    """weft-proxy in the agent mode, stderr in a file."""

    def __init__(self, argv, env, cwd):
        self.err_path = os.path.join(cwd, "proxy.stderr")
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.err)

    def text(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        rc = stop_process(self.proc)
        self.err.close()
        assert not any(m in self.text() for m in CRASH_MARKERS), self.text()
        return rc


def pod_root(base, root_pem, tok, labels):
    """A pod's filesystem as pilot-agent sees it from /, readable by uid 1337."""
    os.makedirs(os.path.join(base, "var/run/secrets/istio"))
    os.makedirs(os.path.join(base, "var/run/secrets/tokens"))
    os.makedirs(os.path.join(base, "etc/istio/pod"))
    files = {"var/run/secrets/istio/root-cert.pem": root_pem,
             "var/run/secrets/tokens/istio-token": tok + "\n",
             "etc/istio/pod/labels": "".join('%s="%s"\n' % kv for kv in labels.items()),
             "etc/istio/pod/annotations": 'sidecar.istio.io/status="{}"\n'}
    for rel, text in files.items():
        with open(os.path.join(base, rel), "w") as f:
            f.write(text)
    for d, _, fs in os.walk(base):
        os.chmod(d, 0o755)
        for f in fs:
            os.chmod(os.path.join(d, f), 0o644)


@pytest.fixture
def cluster(pilot_exe, tmp_path):  # noqa: F811
    """istiod's and the pod's namespaces, linked; pilot on 10.10.0.2:15012; the pod's app and
    capture rules. Yields a dict; everything is stopped and removed afterwards."""
    base = tempfile.mkdtemp(prefix="weft-agent-", dir="/tmp")
    os.chmod(base, 0o755)
    hosts = os.path.join(base, "hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 localhost\n%s %s\n" % (ISTIOD_IP, SAN))
    procs, holders = [], []
    try:
        pod = holder("-n", "-m", "--propagation", "private")
        holders.append(pod)
        node = holder("-n")
        holders.append(node)
        sh(*ns(pod), "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "peer0")
        sh(*ns(pod), "ip", "link", "set", "peer0", "netns", str(node.pid))
        for h, dev, ip in ((pod, "eth0", POD_IP), (node, "peer0", ISTIOD_IP)):
            sh(*ns(h), "ip", "link", "set", "lo", "up")
            sh(*ns(h), "ip", "addr", "add", ip + "/24", "dev", dev)
            sh(*ns(h), "ip", "link", "set", dev, "up")
        sh(*ns(pod), "ip", "route", "add", "default", "dev", "eth0")
        sh(*ns(node), "ip", "route", "add", "10.96.0.0/16", "dev", "peer0")
        sh(*ns(pod, mount=True), "mount", "--bind", hosts, "/etc/hosts")
        cfg = tmp_path / "cfg"
        cfg.mkdir()
        (cfg / "shop.yaml").write_text(CONFIG)
        pilot, addrs = start_process(ns(node) + [
            pilot_exe, "--config-dir", cfg, "--ca-dir", tmp_path / "ca", "--grpcAddr",
            "127.0.0.1:0", "--monitoringAddr", "127.0.0.1:0", "--secureGRPCAddr",
            "%s:15012" % ISTIOD_IP], count=3, timeout=20)
        procs.append(pilot)
        mon = addrs[1][1]
        root_pem = json.loads(subprocess.run(
            ns(node) + ["curl", "-s", "http://127.0.0.1:%d/debug/istio-ca-root-cert?namespace="
                        "shop" % mon], capture_output=True, text=True, timeout=20).stdout)[
            "data"]["root-cert.pem"]
        app, _ = start_process(ns(pod) + [app_path(), "--listen", "0.0.0.0:8080", "--name",
                                          "web-1"])
        procs.append(app)
        # istio-init (the injector's arguments)
        sh(*ns(pod), proxy_path(), "istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337",
           "-m", "REDIRECT", "-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020")
        yield {"base": base, "pod": pod, "node": node, "root": root_pem, "mon": mon,
               "ca": tmp_path / "ca", "pilot_exe": pilot_exe}
    finally:
        for p in reversed(procs):
            stop_process(p)
        for h in holders:
            h.kill()
            h.wait(timeout=10)
        shutil.rmtree(base, ignore_errors=True)


def injected_env(name, ns_, ip, sa, **extra):
    """What Istio's injector puts in istio-proxy's environment (kubernetes.md §3.4)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "PILOT_CERT_PROVIDER": "istiod", "CA_ADDR": "%s:15012" % SAN,
           "POD_NAME": name, "POD_NAMESPACE": ns_, "INSTANCE_IP": ip, "SERVICE_ACCOUNT": sa,
           "HOST_IP": "192.168.0.1", "ISTIO_CPU_LIMIT": "0",
           "PROXY_CONFIG": json.dumps({"proxyMetadata": {}, "drainDuration": "2s"}),
           "ISTIO_META_POD_PORTS": '[{"containerPort":8080,"protocol":"TCP"}]',
           "ISTIO_META_APP_CONTAINERS": "web", "ISTIO_META_CLUSTER_ID": "Kubernetes",
           "ISTIO_META_NODE_NAME": "node-1", "ISTIO_META_INTERCEPTION_MODE": "REDIRECT",
           "ISTIO_META_WORKLOAD_NAME": "web",
           "ISTIO_META_OWNER": "kubernetes://apis/apps/v1/namespaces/%s/deployments/web" % ns_,
           "ISTIO_META_MESH_ID": "cluster.local", "TRUST_DOMAIN": "cluster.local"}
    env.update(extra)
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def sidecar_argv(c):
    """The injected istio-proxy's command (kubelet expanded $(POD_NAMESPACE)), its folder and
    environment."""
    root = os.path.join(c["base"], "web-1")
    if not os.path.isdir(root):
        pod_root(root, c["root"], token(c["pilot_exe"], c["ca"], "shop", "web"),
                 {"app": "web", "version": "v1", "security.istio.io/tlsMode": "istio"})
    argv = ns(c["pod"], mount=True, uid=1337, wd=root) + [
        proxy_path(), "proxy", "sidecar", "--domain", "shop.svc.cluster.local",
        "--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error",
        "--log_output_level=default:info"]
    return argv, root, injected_env("web-1", "shop", POD_IP, "web")


def start_sidecar(c):
    """The sidecar, running, once ready on 15021."""
    argv, root, env = sidecar_argv(c)
    proxy = Proxy(argv, env, root)
    try:
        poll(lambda: curl(c["pod"], "http://127.0.0.1:15021/healthz/ready")[0] == 200,
             what="readiness on 15021:\n" + proxy.text())
    except BaseException:
        proxy.stop()
        raise
    return proxy


def test_sidecar_in_a_pod(cluster):
    """The injected sidecar, run as Istio runs it: resolves istiod by name, connects over TLS
    (the mounted root, istiod's SAN, its token), gets its workload certificate over SDS from
    the CA at CA_ADDR (a name too), is ready on 15020 and 15021, and serves captured traffic:
    the pod's own request to the Service's ClusterIP goes out through the outbound listener
    and comes back in over mTLS to the app. --print-bootstrap shows the bootstrap."""
    c = cluster
    argv, root, env = sidecar_argv(c)
    dry = subprocess.run(argv + ["--print-bootstrap"], env=env, cwd=root, capture_output=True,
                         text=True, timeout=30)
    assert dry.returncode == 0, dry.stderr
    bs = json.loads(dry.stdout)
    assert bs["node"]["id"] == "sidecar~%s~web-1.shop~shop.svc.cluster.local" % POD_IP
    assert bs["node"]["cluster"] == "web.shop"
    md = bs["node"]["metadata"]
    assert md["LABELS"]["version"] == "v1" and md["NODE_NAME"] == "node-1"
    xds = bs["static_resources"]["clusters"][0]
    ep = xds["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    assert ep["address"]["socket_address"] == {"address": ISTIOD_IP, "port_value": 15012}
    assert xds["transport_socket"]["typed_config"]["sni"] == SAN

    proxy = start_sidecar(c)
    try:
        assert curl(c["pod"], "http://%s:15020/healthz/ready" % POD_IP)[0] == 200
        # synced with pilot over TLS, under its Istio node id
        syncz = json.loads(subprocess.run(
            ns(c["node"]) + ["curl", "-s", "http://127.0.0.1:%d/debug/syncz" % c["mon"]],
            capture_output=True, text=True, timeout=20).stdout)
        assert [(e["proxy"], e.get("cluster_status")) for e in syncz] == [
            ("sidecar~%s~web-1.shop~shop.svc.cluster.local" % POD_IP, "SYNCED")], syncz
        # the workload certificate over SDS, from the CA at CA_ADDR (a name)
        poll(lambda: "generated new workload certificate" in proxy.text(),
             what="a workload certificate:\n" + proxy.text())
        _, certs = curl(c["pod"], "http://127.0.0.1:15000/certs")
        assert "spiffe://cluster.local/ns/shop/sa/web" in certs
        # captured traffic: outbound 15001 -> mTLS -> inbound 15006 -> app
        st, resp = poll(lambda: (lambda r: r if r[0] == 200 else None)(
            curl(c["pod"], "http://%s/healthz" % SVC_IP, "-H",
                 "Host: web.shop.svc.cluster.local")), what="traffic:\n" + proxy.text())
        assert "x-weft-app: web-1" in resp.lower()
        _, prom = curl(c["pod"], "http://%s:15020/stats/prometheus" % POD_IP)
        assert 'reporter="destination"' in prom and 'mutual_tls' in prom, prom[-3000:]
    finally:
        assert proxy.stop() == 0, proxy.text()


def test_router_readiness_on_15021(cluster):
    """The gateway (`proxy router`): discoveryAddress by IP with ISTIOD_SAN (and no CA_ADDR: the
    CA is the discovery address, verified by that name), readiness on 15021 once its
    configuration and its certificate arrived, the unimplemented flag and ProxyConfig field
    named in warnings, and the Gateway's route to the app in the pod (through its captured
    inbound listener)."""
    c = cluster
    root = os.path.join(c["base"], "gw")
    pod_root(root, c["root"], token(c["pilot_exe"], c["ca"], "istio-system",
                                    "istio-ingressgateway"),
             {"istio": "ingressgateway", "app": "istio-ingressgateway"})
    env = injected_env("istio-ingressgateway-1", "istio-system", ISTIOD_IP,
                       "istio-ingressgateway", ISTIOD_SAN=SAN,
                       PROXY_CONFIG=json.dumps({"discoveryAddress": "%s:15012" % ISTIOD_IP,
                                                "tracing": {"zipkin": {"address": "z:9411"}}}))
    del env["ISTIO_META_INTERCEPTION_MODE"]
    del env["CA_ADDR"]  # pilot-agent: the CA is then the discovery address, ISTIOD_SAN its name
    argv = ns(c["node"], wd=root) + [proxy_path(), "proxy", "router", "--domain",
                                     "istio-system.svc.cluster.local", "--proxyLogLevel=info",
                                     "--stsPort=15463"]
    assert curl(c["node"], "http://%s:15021/healthz/ready" % ISTIOD_IP)[0] == 0  # not yet
    side = start_sidecar(c)  # the app's pod, whose inbound traffic its sidecar captures
    proxy = Proxy(argv, env, root)
    try:
        poll(lambda: curl(c["node"], "http://%s:15021/healthz/ready" % ISTIOD_IP)[0] == 200,
             what="router readiness:\n" + proxy.text())
        text = proxy.text()
        assert "router~%s~istio-ingressgateway-1.istio-system~" % ISTIOD_IP in text
        # what weft does not implement is named, not silently ignored
        assert "--stsPort=15463: not implemented" in text
        assert "PROXY_CONFIG: tracing: not implemented" in text
        st, resp = poll(lambda: (lambda r: r if r[0] == 200 else None)(
            curl(c["node"], "http://%s:8080/healthz" % ISTIOD_IP)),
            what="gateway traffic:\n" + proxy.text())
        assert "x-weft-app: web-1" in resp.lower()
    finally:
        assert proxy.stop() == 0, proxy.text()
        assert side.stop() == 0, side.text()


def test_missing_environment_exits_1(tmp_path):
    """A missing or invalid variable stops the agent with exit 1 naming it; a bad command line
    is exit 2; --help documents the mode."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    r = subprocess.run([proxy_path(), "proxy", "sidecar"], env=dict(base, POD_NAME="a"),
                       cwd=tmp_path, capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "POD_NAMESPACE: not set" in r.stderr, r.stderr
    r = subprocess.run([proxy_path(), "proxy", "sidecar"],
                       env=dict(base, POD_NAME="a", POD_NAMESPACE="b", INSTANCE_IP="10.0.0.1",
                                PROXY_CONFIG="{"), cwd=tmp_path, capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 1 and "PROXY_CONFIG: invalid JSON" in r.stderr, r.stderr
    r = subprocess.run([proxy_path(), "proxy", "sidecar"],
                       env=dict(base, POD_NAME="a", POD_NAMESPACE="b", INSTANCE_IP="10.0.0.1",
                                PROXY_CONFIG='{"discoveryAddress":"10.0.0.2:15012"}',
                                ISTIOD_SAN=SAN), cwd=tmp_path, capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 1, r.stderr
    assert "root CA file for XDS does not exist ./var/run/secrets/istio/root-cert.pem" in r.stderr
    r = subprocess.run([proxy_path(), "proxy", "gateway"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 2 and "sidecar or router" in r.stderr
    r = subprocess.run([proxy_path(), "proxy", "--help"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0 and "--proxyComponentLogLevel" in r.stdout
    assert "--print-bootstrap" in r.stdout
