"""A small local mesh for integration tests: weft-pilot, weft-proxy sidecars and gateways,
and weft-app workloads, on their own loopback addresses.

Layout (DESIGN.md "The local mesh"): every pod gets a pod IP 127.10.N.H (N claimed per mesh
with a lock file, /tmp/weft-meshfix-net-N.lock, held until the mesh stops, so that meshes of
test groups running side by side never share a network; the first N tried moves on with the
process id, the time and a per-process count, so two meshes in a row do not meet each other's
TIME_WAIT sockets) and a
"pod localhost" 127.11.N.H where its application listens. A sidecar binds its inbound
listeners on the pod IP and its outbound listeners on the pod localhost (pilot does this when
the node metadata carries WEFT_LOCALHOST); a gateway binds its listeners on its pod IP.

    mesh = Mesh(tmp_path)
    mesh.add_config(SHARED + "/corpus/istioinaction/ch10/catalog-gateway.yaml")
    mesh.add_yaml("gateway-svc.yaml", GATEWAY_SERVICE)
    mesh.start_pilot(default_ns="istioinaction")
    gw = mesh.add_pod("istio-ingressgateway-1", "istio-system",
                      {"istio": "ingressgateway"}, kind="router")
    pod = mesh.add_pod("catalog-1", "istioinaction", {"app": "catalog", "version": "v1"},
                       app_port=3000)
    mesh.wait_ready(gw)            # /healthz/ready 200 on the status port
    status, headers, body = mesh.request(gw, 8080, "/items", host="catalog.istioinaction.io")
    mesh.stop()                    # or use the `mesh` fixture, which stops at teardown

- `add_pod(name, ns, labels, kind="sidecar"|"router", app_port=None, app_args=(),
  proxy_args=(), env=None, mtls=True, sa="default")` writes a Pod object (labels,
  status.podIP, a container port when app_port is given, serviceAccountName sa) into the pods
  folder pilot watches, starts weft-app on the pod localhost (when app_port is given) and a
  weft-proxy whose bootstrap points at pilot; returns a Pod with .ip, .localhost, .admin (port
  15000 on the pod IP), .status_port (15020), .proxy (the process) and .app. As Istio's
  injector and Kubernetes do (mtls=True, the default), a sidecar pod carries the label
  security.istio.io/tlsMode: istio and every proxy gets a token of pilot's CA (`weft-pilot
  create-token`, CA in the mesh's directory unless start_pilot got --ca-dir) for ns/sa, so
  sidecars talk mutual TLS under the default PERMISSIVE; mtls=False is a pod without them.
- `pod.stats()`, `pod.admin(path)`: the proxy's admin API; `mesh.pilot_get(path)`: pilot's
  monitoring endpoints (JSON decoded when the answer is JSON).
- `mesh.write_config(name, text)` / `mesh.remove_config(name)`: edit the watched folder;
  `mesh.remove_pod(pod)` deletes a pod (scale-down).

Standard library plus pytest; every wait has a timeout; every process is stopped.
"""
import fcntl
import http.client
import itertools
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from procs import CRASH_MARKERS, ROOT, start_process, stop_process


def _bin(env_name, name):
    return os.path.abspath(os.environ.get(env_name) or os.path.join(ROOT, "build", name))


PILOT = _bin("WEFT_PILOT", "weft-pilot")
PROXY = _bin("WEFT_PROXY", "weft-proxy")
APP = _bin("WEFT_APP", "weft-app")
SHARED = os.path.abspath(os.environ.get("WEFT_SHARED") or os.path.join(ROOT, "..", "shared"))
BOOK = os.path.join(SHARED, "corpus", "istioinaction")

# Access logs on, in JSON, to each proxy's stdout (captured per pod: Pod.access_log()).
ACCESS_LOG_MESH = """\
accessLogFile: /dev/stdout
accessLogEncoding: JSON
"""

# The ingress gateway's Service as Istio's default profile installs it: port 80 -> 8080.
GATEWAY_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: istio-ingressgateway
  namespace: istio-system
  labels: {istio: ingressgateway, app: istio-ingressgateway}
spec:
  selector: {istio: ingressgateway}
  ports:
  - {name: http2, port: 80, targetPort: 8080}
"""


def http_request(ip, port, path, host=None, method="GET", body=None, headers=None, timeout=10):
    """One request on a fresh connection: (status, lower-case headers dict, body bytes)."""
    conn = http.client.HTTPConnection(ip, port, timeout=timeout)
    try:
        h = dict(headers or {})
        h.setdefault("Host", host or "%s:%d" % (ip, port))
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def _get_json(ip, port, path, timeout=5):
    status, headers, body = http_request(ip, port, path, timeout=timeout)
    if "json" in headers.get("content-type", "") or body[:1] in (b"{", b"["):
        try:
            return status, json.loads(body)
        except ValueError:
            pass
    return status, body.decode("utf-8", "replace")


def wait_for(pred, timeout=15, interval=0.05, what="condition"):
    """Polls pred() until it returns a true value (returned); AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except (OSError, http.client.HTTPException) as e:
            last = e
            last_ok = None
        else:
            last_ok = last
            if last_ok:
                return last_ok
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


class Pod:
    def __init__(self, mesh, name, ns, labels, kind, host_octet):
        self.mesh, self.name, self.ns, self.labels, self.kind = mesh, name, ns, labels, kind
        self.ip = "127.10.%d.%d" % (mesh.net, host_octet)
        self.localhost = "127.11.%d.%d" % (mesh.net, host_octet)
        self.admin_port, self.status_port = 15000, 15020
        self.proxy = self.app = None
        self.node_id = "%s.%s" % (name, ns)

    def admin(self, path, method="GET"):
        return http_request(self.ip, self.admin_port, path, method=method)

    def stats(self):
        status, _, body = self.admin("/stats?format=json")
        assert status == 200, body
        out = {}
        for s in json.loads(body).get("stats", []):
            if "name" in s and "value" in s:
                out[s["name"]] = s["value"]
        return out

    def access_log(self):
        """The JSON access log lines the proxy wrote so far (list of dicts)."""
        out = []
        with open(self.log_path, "rb") as f:
            for line in f.read().decode("utf-8", "replace").splitlines():
                line = line.strip()
                if line.startswith("{"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
        return out

    def wait_log(self, pred, timeout=10):
        """The first access log entry pred accepts (the proxy flushes every 50 ms)."""
        return wait_for(lambda: next((e for e in self.access_log() if pred(e)), None),
                        timeout=timeout, what="an access log line in " + self.name)

    def ready_status(self):
        return http_request(self.ip, self.status_port, "/healthz/ready", timeout=2)[0]

    def request(self, port, path, host, **kw):
        """A request to the pod IP (a gateway's or sidecar's inbound listener)."""
        return http_request(self.ip, port, path, host=host, **kw)

    def request_local(self, port, path, host, **kw):
        """A request from the pod's application: to its sidecar's outbound listener."""
        return http_request(self.localhost, port, path, host=host, **kw)

    def app_request(self, path, **kw):
        """A request straight to the pod's application (not through any proxy)."""
        return http_request(self.localhost, self.app_port, path, **kw)


_MESH_COUNT = itertools.count()


def _claim_net():
    """(N, open lock file): a 127.10.N.0/24 network no other live mesh of this machine uses."""
    start = os.getpid() + int(time.time()) + 37 * next(_MESH_COUNT)
    for i in range(250):
        n = 1 + (start + i) % 250
        f = open("/tmp/weft-meshfix-net-%d.lock" % n, "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return n, f
        except OSError:
            f.close()
    raise RuntimeError("meshfix: all 250 test networks are in use")


class Mesh:
    def __init__(self, tmp_path):
        self.dir = str(tmp_path)
        self.config_dir = os.path.join(self.dir, "config")
        self.pods_dir = os.path.join(self.dir, "pods")
        os.makedirs(self.config_dir)
        os.makedirs(self.pods_dir)
        self.net, self._net_lock = _claim_net()
        self.next_host = 2
        self.pods = []
        self.pilot = None
        self.pilot_args = None

    # ---- config ----
    def add_config(self, path):
        """Copies a manifest (e.g. from the shared corpus) into the watched folder."""
        shutil.copy(path, os.path.join(self.config_dir, os.path.basename(path)))

    def write_config(self, name, text):
        tmp = os.path.join(self.config_dir, "." + name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(self.config_dir, name))  # atomic: no half-read file

    def remove_config(self, name):
        os.remove(os.path.join(self.config_dir, name))

    # ---- pilot ----
    def start_pilot(self, default_ns="default", extra=(), mesh_config=ACCESS_LOG_MESH):
        self.pilot_args = ["--config-dir", self.config_dir, "--config-dir", self.pods_dir,
                           "--default-namespace", default_ns, "--debounce-after-ms", "50",
                           "--disconnected-retention-s", "60"] + list(extra)
        if "--ca-dir" in self.pilot_args:
            self.ca_dir = self.pilot_args[self.pilot_args.index("--ca-dir") + 1]
        else:
            self.ca_dir = os.path.join(self.dir, "ca")
            self.pilot_args += ["--ca-dir", self.ca_dir]
        if mesh_config:
            path = os.path.join(self.dir, "mesh.yaml")
            with open(path, "w") as f:
                f.write(mesh_config)
            self.pilot_args += ["--meshConfig", path]
        self._run_pilot("127.0.0.1:0", "127.0.0.1:0")

    def _run_pilot(self, grpc, mon):
        self.pilot, addrs = start_process(
            [PILOT, "--grpcAddr", grpc, "--monitoringAddr", mon] + self.pilot_args, count=2,
            timeout=20)
        self.grpc_port, self.mon_port = addrs[0][1], addrs[1][1]

    def stop_pilot(self):
        status = stop_process(self.pilot)
        self._check_clean(self.pilot, "weft-pilot")
        self.pilot = None
        return status

    def restart_pilot(self):
        """Starts pilot again on the same ports (the proxies reconnect to them)."""
        self._run_pilot("127.0.0.1:%d" % self.grpc_port, "127.0.0.1:%d" % self.mon_port)

    def pilot_get(self, path):
        return _get_json("127.0.0.1", self.mon_port, path)

    # ---- pods ----
    def _pod_object(self, pod, app_port):
        containers = [{"name": "app", "image": "weft/app"}]
        if app_port:
            containers[0]["ports"] = [{"containerPort": app_port, "name": "http",
                                       "protocol": "TCP"}]
        spec = {"containers": containers}
        if getattr(pod, "sa", "default") != "default":
            spec["serviceAccountName"] = pod.sa
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod.name, "namespace": pod.ns, "labels": pod.labels},
                "spec": spec,
                "status": {"phase": "Running", "podIP": pod.ip}}

    def bootstrap(self, pod):
        meta = {"NAME": pod.name, "NAMESPACE": pod.ns, "LABELS": pod.labels,
                "INSTANCE_IPS": pod.ip, "PROXY_TYPE": pod.kind,
                "WEFT_ADMIN": "%s:%d" % (pod.ip, pod.admin_port), "ISTIO_VERSION": "weft"}
        if pod.kind == "sidecar":
            meta["WEFT_LOCALHOST"] = pod.localhost
        xds = {"name": "xds-grpc", "type": "STATIC", "connect_timeout": "1s",
               "load_assignment": {"cluster_name": "xds-grpc", "endpoints": [{"lb_endpoints": [
                   {"endpoint": {"address": {"socket_address": {
                       "address": "127.0.0.1", "port_value": self.grpc_port}}}}]}]}}
        ads = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}
        return {"node": {"id": pod.node_id, "cluster": "%s.%s" % (
                    pod.labels.get("app", pod.name), pod.ns), "metadata": meta},
                "admin": {"address": {"socket_address": {"address": pod.ip,
                                                         "port_value": pod.admin_port}}},
                "dynamic_resources": {
                    "ads_config": {"api_type": "DELTA_GRPC" if getattr(pod, "delta", False)
                                   else "GRPC", "transport_api_version": "V3",
                                   "set_node_on_first_message_only": True,
                                   "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]},
                    "cds_config": ads, "lds_config": ads},
                "static_resources": {"clusters": [xds]}}

    def token(self, ns, sa):
        """A token of pilot's CA for ns/sa (`weft-pilot create-token`), written to a file
        (0600); returns its path. What Kubernetes projects into a pod for its service account."""
        r = subprocess.run([PILOT, "create-token", sa, "-n", ns, "--ca-dir", self.ca_dir],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        path = os.path.join(self.dir, "token-%s-%s-%d" % (ns, sa, len(self.pods)))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(r.stdout.strip() + "\n")
        return path

    def add_pod(self, name, ns, labels, kind="sidecar", app_port=None, app_args=(),
                proxy_args=(), env=None, write_pod=True, delta=False, mtls=True, sa="default"):
        labels = dict(labels)
        if mtls and kind == "sidecar":  # as Istio's injector labels a pod with a sidecar
            labels.setdefault("security.istio.io/tlsMode", "istio")
        if mtls and "--token-path" not in proxy_args:
            proxy_args = list(proxy_args) + ["--token-path", self.token(ns, sa)]
        pod = Pod(self, name, ns, labels, kind, self.next_host)
        pod.sa = sa
        pod.app_port = app_port
        pod.delta = delta  # bootstrap api_type DELTA_GRPC (DeltaAggregatedResources)
        self.next_host += 1
        self.pods.append(pod)
        if app_port:
            pod.app, _ = start_process([APP, "--listen", "%s:%d" % (pod.localhost, app_port),
                                        "--name", labels.get("app", name), "--pod", name]
                                       + list(app_args))
        if write_pod:
            self.write_pod(pod, app_port)
        bs_path = os.path.join(self.dir, name + ".bootstrap.json")
        with open(bs_path, "w") as f:
            json.dump(self.bootstrap(pod), f, indent=1)
        pod.log_path = os.path.join(self.dir, name + ".access.log")
        args = [PROXY, "-c", bs_path, "--concurrency", "1", "--file-flush-interval-msec", "50",
                "--status-address", "%s:%d" % (pod.ip, pod.status_port)]
        if kind == "router":
            args += ["--health-address", "%s:15021" % pod.ip]
        pod.proxy = _start_quiet(args + list(proxy_args), env, pod.log_path)
        return pod

    def remove_pod(self, pod):
        """Deletes the pod (its Pod object, its proxy and app), as a scale-down does."""
        os.remove(os.path.join(self.pods_dir, "%s.%s.json" % (pod.ns, pod.name)))
        for proc, what in ((pod.proxy, "weft-proxy " + pod.name),
                           (pod.app, "weft-app " + pod.name)):
            if proc is not None:
                status = stop_process(proc)
                self._check_clean(proc, what)
                assert status == 0, "%s exited with %s" % (what, status)
        pod.proxy = pod.app = None

    def write_pod(self, pod, app_port=None):
        path = os.path.join(self.pods_dir, "%s.%s.json" % (pod.ns, pod.name))
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self._pod_object(pod, app_port), f)
        os.replace(tmp, path)

    def wait_ready(self, pod, timeout=20):
        wait_for(lambda: pod.ready_status() == 200, timeout=timeout,
                 what="%s ready" % pod.name)

    def wait_synced(self, timeout=20):
        """Every connected proxy SYNCED for CDS, LDS (and EDS/RDS when watched)."""
        def synced():
            status, sync = self.pilot_get("/debug/syncz")
            if status != 200 or not isinstance(sync, list):
                return None
            ids = {p.node_id for p in self.pods if p.proxy}
            have = {e.get("proxy") for e in sync if e.get("connected")}
            if not ids <= have:
                return None
            for e in sync:
                for t in ("cluster", "listener", "route", "endpoint"):
                    st = e.get(t + "_status")
                    if st not in ("SYNCED", "IGNORED", None):
                        return None
            return sync
        return wait_for(synced, timeout=timeout, what="every proxy SYNCED")

    # ---- teardown ----
    def _check_clean(self, proc, what):
        text = proc.stderr_text() if hasattr(proc, "stderr_text") else ""
        for m in CRASH_MARKERS:
            assert m not in text, "%s stderr:\n%s" % (what, text[-4000:])

    def stop(self):
        errors = []
        for pod in self.pods:
            for proc, what in ((pod.proxy, "weft-proxy " + pod.name),
                               (pod.app, "weft-app " + pod.name)):
                if proc is None:
                    continue
                status = stop_process(proc)
                try:
                    self._check_clean(proc, what)
                    assert status == 0, "%s exited with %s" % (what, status)
                except AssertionError as e:
                    errors.append(str(e))
            pod.proxy = pod.app = None
        if self.pilot:
            status = self.stop_pilot()
            if status != 0:
                errors.append("weft-pilot exited with %s" % status)
        if self._net_lock:
            self._net_lock.close()  # the network is free for another mesh
            self._net_lock = None
        assert not errors, "\n".join(errors)


def _start_quiet(argv, env=None, stdout_path=None):
    """Starts a process that announces nothing on stdout (weft-proxy logs to stderr; its
    stdout, where the access log goes, is written to stdout_path)."""
    import subprocess
    import tempfile
    err = tempfile.TemporaryFile()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                            env=full_env)
    if stdout_path:
        out.close()

    def stderr_text():
        err.seek(0)
        return err.read().decode("utf-8", "replace")
    proc.stderr_text = stderr_text
    return proc


@pytest.fixture
def mesh(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the local mesh binds port 80 on pod loopback addresses: needs root")
    m = Mesh(tmp_path)
    try:
        yield m
    finally:
        m.stop()
