#!/usr/bin/python3
"""make soak: weft under steady load while faults fire every second or two (issue 16 item 5).

    bench/soak/soak.py [--bin DIR] [--minutes M] [--seed N] [--rate RPS] [--results DIR]
                       [--keep] [--skip KIND[,KIND]] [--inject unexplained|crash]

DIR holds weftctl, weft-pilot, weft-proxy and weft-app (default build/; build-asan/ for the
sanitizer run). M defaults to $SOAK_MINUTES, else 10; N to $SOAK_SEED, else 1.

What runs (all inside a private network namespace: the local mesh binds the fixed ports
15010/15012/15014/30000 and pod addresses 127.10.x.y; as root the script re-executes itself under
`unshare -n` with lo up; without root it prints "soak skipped: ..." and exits 0):

- the local mesh (`weftctl up`) of examples/catalog plus examples/catalog-steps'
  DestinationRule: pilot, the ingress gateway, catalog v1 and two v2 pods with sidecars,
  access logs in Istio's JSON;
- a standalone weft-proxy (bench/proxy/weft_bootstrap.py's bootstrap plus a JSON access log)
  in front of a weft-app on 127.0.0.1:18080;
- paced load (wrk2-like: every connection sends on a fixed schedule, RATE requests per second
  per target, 8 keep-alive connections per target) of GET /items through the gateway
  (127.0.0.1:30000, Host catalog.istioinaction.io) and GET /bytes/2048 through the
  standalone proxy;
- one fault every 1-2 s (seeded RNG; each round of faults is a shuffled rotation of the kinds,
  every fault logged with its time):
    kill_mesh_backend     kill -9 of a catalog app; weftctl up's supervisor restarts it
    kill_backend          kill -9 of the standalone backend, restarted by the soak
    reset                 a request to weft-app's /reset/<n>: n body bytes, then a TCP RST
    slow_reader           a large /bytes download read 8 KiB per 100 ms (read whole, or left
                          after 2 s)
    vanishing_client      half a request head; a request abandoned before its answer; half an
                          answer read; connect and close
    vs_weights            the VirtualService's v1/v2 weights rewritten in the mesh folder
    pod                   a catalog Pod added (a weft-app on 127.10.1.N:3000, its Pod object
                          written where pilot reads pods) or removed (Pod object deleted, the
                          app stopped once the gateway dropped the endpoint)
    kill_pilot            kill -9 of weft-pilot; the supervisor restarts it (at most every
                          12 s: the supervisor's back-off doubles for a process that ran < 10 s)

Checks (each printed PASS/FAIL with its figures; exit 0 all pass, 1 a check failed, 2 setup or
usage error; a JSON summary goes to RESULTS/soak-<UTC time>.json, RESULTS = bench/results):

  processes    no weft process exited except the ones the soak killed (supervisor.log, mesh.json,
               the standalone proxy), pilot restarts == pilot kills
  fds          open fds (/proc/PID/fd) of every proxy and of the supervisor: the fds that are
               not ESTABLISHED TCP sockets, quiescent (5 s after the load stopped) at the end vs
               the most seen in the first 7 s after warm-up: at most +4; and no socket left in
               CLOSE_WAIT. ESTABLISHED sockets (idle keep-alive connections of the pools, whose
               number follows the traffic split of the moment) are reported, not compared
  rss          RSS at the end (median of the last 3 samples, under load) within 10 % of the RSS
               after warm-up (median of 3 samples); reported, not enforced, on a sanitizer build
               (ASan's quarantine grows by design)
  access_log   every failed access-log entry (response code 0 or >= 500, or any response flag)
               of every proxy is explained by a fault: a request the fault client sent
               (path tagged ?soak=<kind>-<id>) with the flags that fault gives, a backend kill
               whose window (kill .. back + 2 s) overlaps the entry and whose pod is the entry's
               upstream host (or whose proxy is the entry's), with flags UF/UC/URX/UH/UR; an
               upstream's 5xx passed on (flags "-", via_upstream) is explained when the same
               x-request-id is explained at the next hop. Unexplained entries are listed.
  client       every failed load request (non-2xx, reset, timeout) falls inside a backend kill
               window of its target
  synced       `weftctl proxy-status` shows every proxy SYNCED within 30 s of the end
  sanitizer    no "AddressSanitizer", "LeakSanitizer" or "runtime error:" in any process's log
               (after `weftctl down`, so leak reports at exit are included)
  load         each target sent at least 80 % of its scheduled requests

--skip leaves fault kinds out (without kill_pilot, pilot joins the fd and RSS checks);
--inject makes a failure that is not a logged fault halfway (a catalog app answers 500 for
1 s, or a sidecar proxy gets SIGSEGV) to show that the checks catch it: the run must FAIL.

Standard library only.
"""
import argparse
import collections
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "proxy"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import weft_bootstrap  # noqa: E402
from loadgen import Load, Target  # noqa: E402
from procfs import alive, cmdline, proc_fds, proc_stat, tcp_sockets  # noqa: E402

HOST = "catalog.istioinaction.io"
GW = ("127.0.0.1", 30000)
SA_BACKEND = ("127.0.0.1", 18080)
SA_PROXY = ("127.0.0.1", 18000)
SA_ADMIN = 18001
FD_SLACK = 4
RSS_TOLERANCE = 0.10
KILL_FLAGS = {"UF", "UC", "URX", "UH", "UR"}
# flags a tagged fault request may carry: resets are UC at every hop (the upstream ended the
# connection after the answer started), abandoned clients DC
TAG_FLAGS = {"reset": {"UC", "UR"}, "slow": {"DC"}, "vanish": {"DC"}}
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
FAULT_KINDS = ("kill_mesh_backend", "kill_backend", "reset", "slow_reader", "vanishing_client",
               "vs_weights", "pod", "kill_pilot")
PILOT_KILL_SPACING = 12.0
# Istio's JSON access-log keys (proxyfix.ISTIO_JSON_FORMAT) for the standalone proxy
JSON_FORMAT = {
    "start_time": "%START_TIME%", "method": "%REQ(:METHOD)%",
    "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%", "protocol": "%PROTOCOL%",
    "response_code": "%RESPONSE_CODE%", "response_flags": "%RESPONSE_FLAGS%",
    "response_code_details": "%RESPONSE_CODE_DETAILS%", "duration": "%DURATION%",
    "upstream_host": "%UPSTREAM_HOST%", "request_id": "%REQ(X-REQUEST-ID)%",
    "bytes_sent": "%BYTES_SENT%", "user_agent": "%REQ(USER-AGENT)%",
}
VS_TEMPLATE = """apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata:
  name: catalog-v1-v2
  namespace: istioinaction
spec:
  hosts:
  - "catalog.istioinaction.io"
  gateways:
  - "catalog-gateway"
  http:
  - route:
    - destination:
        host: catalog.istioinaction.svc.cluster.local
        subset: version-v1
        port:
          number: 80
      weight: %d
    - destination:
        host: catalog.istioinaction.svc.cluster.local
        subset: version-v2
        port:
          number: 80
      weight: %d
"""


class SetupError(Exception):
    pass


def now():
    return time.time()


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def parse_start(s):
    """Envoy's %START_TIME% (2026-12-05T13:05:45.927Z) as epoch seconds."""
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def can_connect(addr, timeout=0.5):
    try:
        socket.create_connection(addr, timeout=timeout).close()
        return True
    except OSError:
        return False


def wait_until(pred, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return True
        except OSError:
            pass
        time.sleep(step)
    return False


def http_get(addr, path, host=None, timeout=3.0):
    """(status, body) of one GET on a fresh connection (Connection: close)."""
    s = socket.create_connection(addr, timeout=timeout)
    try:
        s.settimeout(timeout)
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                   % (path, host or "%s:%d" % addr)).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else None


# ---------------------------------------------------------------- the soak


class Soak:
    def __init__(self, args):
        self.args = args
        self.bindir = os.path.abspath(args.bin)
        self.sanitizer = self._sanitizer_build()
        self.rng = random.Random(args.seed)
        self.tmp = tempfile.mkdtemp(prefix="weft-soak-")
        self.dir = os.path.join(self.tmp, "catalog")
        self.state = os.path.join(self.tmp, "state")
        self.env = dict(os.environ)
        self.env["PATH"] = self.bindir + os.pathsep + self.env.get("PATH", "")
        for var, prog in (("WEFT_PILOT", "weft-pilot"), ("WEFT_PROXY", "weft-proxy"),
                          ("WEFT_APP", "weft-app")):
            self.env[var] = os.path.join(self.bindir, prog)
        if self.sanitizer:
            self.env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
            self.env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
        self.up = False
        self.lock = threading.Lock()
        self.faults = []          # fault records (dicts), in firing order
        self.killed_pids = set()  # pids the soak killed on purpose
        self.busy = set()         # kinds with a fault still running
        self.threads = []
        self.samples = collections.defaultdict(list)  # name -> [(t, fds, rss KiB, fds not
        #                                                 ESTABLISHED sockets)]
        self.figures = {}         # what the checks measured, for the JSON summary
        self.sampling = False
        self.sa_app = self.sa_proxy = None
        self.extra_pods = []      # [(name, ip, proc)] pods the soak added
        self.own_exits = []       # (name, exit status) of the processes the soak stopped
        self.extra_seq = 0
        self.mesh_kills = 0
        self.last_pilot_kill = 0.0
        self.t_start = now()

    # ---- output ----
    def log(self, msg):
        line = "[%7.1fs %s] %s" % (now() - self.t_start, iso(now()), msg)
        print(line, flush=True)

    def _sanitizer_build(self):
        try:
            with open(os.path.join(self.bindir, "CMakeCache.txt")) as f:
                return "WEFT_SANITIZE:BOOL=ON" in f.read()
        except OSError:
            return False

    # ---- setup ----
    def setup(self):
        shutil.copytree(os.path.join(ROOT, "examples", "catalog"), self.dir,
                        ignore=shutil.ignore_patterns(".weft"))
        shutil.copy(os.path.join(ROOT, "examples", "catalog-steps", "fix-destinationrule.yaml"),
                    os.path.join(self.dir, "destinationrule.yaml"))
        self.up = True
        p = subprocess.run(["weftctl", "up", self.dir, "--detach", "--state", self.state,
                            "--timeout", "90"], env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=150)
        if p.returncode != 0:
            raise SetupError("weftctl up exited with %d:\n%s" % (p.returncode,
                                                                 p.stdout.decode()))
        self.mesh = self.read_mesh()
        self.sup_pid = int(self.mesh["supervisor"]["pid"])
        self.gw = next(p for p in self.mesh["pods"] if p.get("gateway"))
        if not wait_until(lambda: http_get(GW, "/items", HOST)[0] == 200, 30, 0.2):
            raise SetupError("the gateway does not answer 200 for /items")
        self.start_sa_backend()
        bs = weft_bootstrap.bootstrap(SA_PROXY[1], SA_ADMIN, SA_BACKEND[1])
        hcm = bs["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
        hcm["typed_config"]["generate_request_id"] = True
        hcm["typed_config"]["access_log"] = [{
            "name": "envoy.access_loggers.file",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3."
                         "FileAccessLog",
                "path": os.path.join(self.tmp, "standalone.access.log"),
                "log_format": {"json_format": JSON_FORMAT}}}]
        bsfile = os.path.join(self.tmp, "standalone.bootstrap.json")
        with open(bsfile, "w") as f:
            json.dump(bs, f)
        self.sa_proxy_log = open(os.path.join(self.tmp, "standalone.proxy.log"), "ab")
        self.sa_proxy = subprocess.Popen(
            [os.path.join(self.bindir, "weft-proxy"), "-c", bsfile, "--concurrency", "1",
             "--file-flush-interval-msec", "500", "--drain-time-s", "1"],
            env=self.env, stdout=self.sa_proxy_log, stderr=subprocess.STDOUT,
            start_new_session=True)
        if not wait_until(lambda: http_get(SA_PROXY, "/healthz")[0] == 200, 15, 0.1):
            raise SetupError("the standalone weft-proxy does not answer on %s:%d" % SA_PROXY)
        self.log("mesh up (state %s), standalone proxy %s:%d -> weft-app %s:%d"
                 % ((self.state,) + SA_PROXY + SA_BACKEND))

    def read_mesh(self):
        with open(os.path.join(self.state, "mesh.json")) as f:
            return json.load(f)

    def start_sa_backend(self):
        if not hasattr(self, "sa_app_log"):
            self.sa_app_log = open(os.path.join(self.tmp, "standalone.app.log"), "ab")
        self.sa_app = subprocess.Popen(
            [os.path.join(self.bindir, "weft-app"), "--listen", "%s:%d" % SA_BACKEND,
             "--name", "soak-backend"], env=self.env, stdout=self.sa_app_log,
            stderr=subprocess.STDOUT, start_new_session=True)
        if not wait_until(lambda: can_connect(SA_BACKEND), 10):
            raise SetupError("the standalone weft-app does not listen on %s:%d" % SA_BACKEND)

    def watched(self):
        """(name, pid) of the long-lived weft processes whose fds and RSS are checked."""
        out = [("supervisor", self.sup_pid), ("standalone-proxy", self.sa_proxy.pid)]
        for pr in self.mesh["processes"]:
            if pr["kind"] in ("proxy", "gateway") or (
                    pr["kind"] == "pilot" and "kill_pilot" in self.args.skip):
                out.append((pr["name"], int(pr["pid"])))
        return out

    # ---- sampling ----
    def sampler(self):
        while self.sampling:
            t = now()
            socks = tcp_sockets()
            for name, pid in self.watch:
                st = proc_stat(pid, socks)
                if st:
                    self.samples[name].append((t, st[0], st[1], st[2]))
            mesh = self.read_mesh_quiet()
            pilot = next((pr for pr in (mesh or {}).get("processes", [])
                          if pr["kind"] == "pilot"), None)
            if pilot and pilot.get("pid") and "kill_pilot" not in self.args.skip:
                st = proc_stat(int(pilot["pid"]), socks)
                if st:
                    self.samples["pilot (restarted by the faults)"].append((t,) + st)
            time.sleep(2)

    def read_mesh_quiet(self):
        try:
            return self.read_mesh()
        except (OSError, ValueError):
            return None

    # ---- faults ----
    def fire(self, kind):
        with self.lock:
            if kind in self.busy:
                return None
            if kind == "kill_pilot" and now() - self.last_pilot_kill < PILOT_KILL_SPACING:
                return None
            self.busy.add(kind)
            rec = {"id": len(self.faults), "kind": kind, "t0": now(), "t1": None}
            self.faults.append(rec)
        th = threading.Thread(target=self._run_fault, args=(rec,), daemon=True)
        th.start()
        self.threads.append(th)
        return rec

    def _run_fault(self, rec):
        try:
            getattr(self, "f_" + rec["kind"])(rec)
        except Exception as e:  # a fault that could not be applied is a soak error
            rec["error"] = "%s: %s" % (type(e).__name__, e)
            self.log("fault #%d %s: ERROR %s" % (rec["id"], rec["kind"], rec["error"]))
        finally:
            if rec["t1"] is None:
                rec["t1"] = now()
            with self.lock:
                self.busy.discard(rec["kind"])

    def f_kill_mesh_backend(self, rec):
        mesh = self.read_mesh()
        apps = [pr for pr in mesh["processes"] if pr["kind"] == "app" and pr.get("pid")
                and pr["state"] == "running"]
        if not apps:
            raise RuntimeError("no running catalog app in mesh.json")
        self.mesh_kills += 1
        pr = sorted(apps, key=lambda a: a["name"])[self.mesh_kills % len(apps)]
        pid = int(pr["pid"])
        if "weft-app" not in cmdline(pid):
            raise RuntimeError("pid %d is not a weft-app (%r)" % (pid, cmdline(pid)))
        pod = next(p for p in mesh["pods"] if p["name"] == pr["pod"])
        rec.update(target=pr["name"], pid=pid, ip=pod["ip"], localhost=pod["localhost"])
        with self.lock:
            self.killed_pids.add(pid)
        os.kill(pid, signal.SIGKILL)
        self.log("fault #%d kill_mesh_backend: kill -9 %s pid %d" % (rec["id"], pr["name"], pid))
        if not wait_until(lambda: not alive(pid), 10):
            raise RuntimeError("pid %d still there 10 s after kill -9" % pid)
        if not wait_until(lambda: can_connect((pod["localhost"], 3000), 0.2), 60):
            raise RuntimeError("%s did not come back within 60 s" % pr["name"])
        rec["t1"] = now()
        self.log("   #%d: %s back after %.1f s" % (rec["id"], pr["name"], rec["t1"] - rec["t0"]))

    def f_kill_backend(self, rec):
        pid = self.sa_app.pid
        rec.update(target="standalone backend", pid=pid)
        with self.lock:
            self.killed_pids.add(pid)
        self.sa_app.kill()
        self.sa_app.wait()
        pause = self.rng.uniform(0.2, 1.0)
        self.log("fault #%d kill_backend: kill -9 standalone weft-app pid %d, restart in %.1f s"
                 % (rec["id"], pid, pause))
        time.sleep(pause)
        self.start_sa_backend()
        rec["t1"] = now()

    def _target(self, rec):
        """A client's way in, chosen at random: the node port (through weftctl up's
        forwarder), the gateway pod's own address, or the standalone proxy."""
        rec["target"] = self.rng.choice(("gateway", "gateway-pod", "standalone"))
        if rec["target"] == "gateway":
            return GW, HOST
        if rec["target"] == "gateway-pod":
            return (self.gw["ip"], 8080), HOST
        return SA_PROXY, "soak"

    @staticmethod
    def _connect(addr, rcvbuf=None):
        """A client socket; rcvbuf set before connect (so the window it announces is small)."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(10)
        s.connect(addr)
        return s

    def f_reset(self, rec):
        addr, host = self._target(rec)
        n = self.rng.randint(100, 20000)
        path = "/reset/%d?soak=reset-%d" % (n, rec["id"])
        s = socket.create_connection(addr, timeout=5)
        got, how = 0, "eof"
        try:
            s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: weft-soak-fault\r\n\r\n"
                       % (path, host)).encode())
            while True:
                try:
                    d = s.recv(65536)
                except ConnectionResetError:
                    how = "reset"
                    break
                if not d:
                    break
                got += len(d)
        finally:
            s.close()
        self.log("fault #%d reset via %s: GET %s -> %d bytes, then %s"
                 % (rec["id"], rec["target"], path, got, how))

    def f_slow_reader(self, rec):
        addr, host = self._target(rec)
        whole = self.rng.random() < 0.5
        # the abandoned download is larger than what the kernel's socket buffers and the
        # forwarder hold, so that the proxies still stream it when the reader leaves
        size = 262144 if whole else 64 << 20
        path = "/bytes/%d?soak=slow-%d" % (size, rec["id"])
        s = self._connect(addr, 16384)
        got, t_stop = 0, time.monotonic() + (20 if whole else 2)
        try:
            s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: weft-soak-fault\r\n"
                       "Connection: close\r\n\r\n" % (path, host)).encode())
            while time.monotonic() < t_stop:
                d = s.recv(8192)
                if not d:
                    break
                got += len(d)
                time.sleep(0.1)
        except OSError:
            pass
        finally:
            s.close()
        self.log("fault #%d slow_reader via %s: GET %s read %d bytes at 80 KiB/s%s"
                 % (rec["id"], rec["target"], path, got, "" if whole else ", then left"))

    def f_vanishing_client(self, rec):
        addr, host = self._target(rec)
        variant = self.rng.choice(("half-head", "before-answer", "half-answer", "connect"))
        rec["variant"] = variant
        s = self._connect(addr, 16384)
        try:
            if variant == "half-head":
                s.sendall(b"GET /items?soak=vanish-%d HTTP/1.1\r\nHost: %s\r\nUser-Ag"
                          % (rec["id"], host.encode()))
                time.sleep(0.2)
            elif variant == "before-answer":
                s.sendall(("GET /delay/400?soak=vanish-%d HTTP/1.1\r\nHost: %s\r\n\r\n"
                           % (rec["id"], host)).encode())
                time.sleep(0.1)
            elif variant == "half-answer":
                s.sendall(("GET /bytes/33554432?soak=vanish-%d HTTP/1.1\r\nHost: %s\r\n\r\n"
                           % (rec["id"], host)).encode())
                got = 0
                while got < 65536:
                    d = s.recv(65536)
                    if not d:
                        break
                    got += len(d)
        finally:
            s.close()
        self.log("fault #%d vanishing_client via %s: %s" % (rec["id"], rec["target"], variant))

    def f_vs_weights(self, rec):
        w = self.rng.choice(range(0, 101, 10))
        rec["weights"] = [w, 100 - w]
        path = os.path.join(self.dir, "virtualservice.yaml")
        tmp = os.path.join(self.dir, ".virtualservice.soak-tmp")
        with open(tmp, "w") as f:
            f.write(VS_TEMPLATE % (w, 100 - w))
        os.rename(tmp, path)
        self.log("fault #%d vs_weights: v1 %d / v2 %d" % (rec["id"], w, 100 - w))

    def f_pod(self, rec):
        podsdir = os.path.join(self.state, "pods")
        if self.extra_pods and (len(self.extra_pods) >= 2 or self.rng.random() < 0.5):
            name, ip, proc = self.extra_pods.pop(0)
            rec.update(action="remove", target=name, ip=ip)
            os.unlink(os.path.join(podsdir, "istioinaction.%s.json" % name))
            self.log("fault #%d pod: removed Pod %s (%s)" % (rec["id"], name, ip))
            gone = wait_until(lambda: ("%s:3000" % ip).encode() not in self.gw_clusters(), 30,
                              0.2)
            rec["gateway_dropped_after_s"] = round(now() - rec["t0"], 2) if gone else None
            proc.terminate()
            proc.wait(10)
            self.own_exits.append((name + " weft-app", proc.returncode))
            self.log("   #%d: gateway dropped %s after %s s; its app stopped"
                     % (rec["id"], ip, rec["gateway_dropped_after_s"]))
            rec["t1"] = now()
            return
        self.extra_seq += 1
        n = self.extra_seq
        name = "catalog-soak-%d" % n
        ip = "127.10.1.%d" % (2 + n % 250)
        version = self.rng.choice(("v1", "v2"))
        rec.update(action="add", target=name, ip=ip, version=version)
        log = open(os.path.join(self.tmp, "%s.app.log" % name), "ab")
        proc = subprocess.Popen(
            [os.path.join(self.bindir, "weft-app"), "--catalog", "--name", "catalog",
             "--listen", "%s:3000" % ip, "--pod", name, "--version-label", version],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        if not wait_until(lambda: can_connect((ip, 3000)), 10):
            proc.kill()
            raise RuntimeError("the app of %s does not listen on %s:3000" % (name, ip))
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "istioinaction",
                            "labels": {"app": "catalog", "version": version}},
               "spec": {"serviceAccountName": "catalog", "containers": [{
                   "name": "catalog", "image": "istioinaction/catalog:latest",
                   "ports": [{"containerPort": 3000, "protocol": "TCP", "name": "http"}]}]},
               "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                          "conditions": [{"type": "Ready", "status": "True"}]}}
        tmp = os.path.join(podsdir, ".%s.soak-tmp" % name)
        with open(tmp, "w") as f:
            json.dump(pod, f)
        os.rename(tmp, os.path.join(podsdir, "istioinaction.%s.json" % name))
        self.extra_pods.append((name, ip, proc))
        self.log("fault #%d pod: added Pod %s (%s, version %s, no sidecar)"
                 % (rec["id"], name, ip, version))

    def gw_clusters(self):
        ip, port = self.gw["admin"].rsplit(":", 1)
        return http_get((ip, int(port)), "/clusters")[1]

    def f_kill_pilot(self, rec):
        with self.lock:
            self.last_pilot_kill = now()
        pilot = next(pr for pr in self.read_mesh()["processes"] if pr["kind"] == "pilot")
        pid = int(pilot["pid"])
        if "weft-pilot" not in cmdline(pid):
            raise RuntimeError("pid %d is not weft-pilot" % pid)
        rec.update(target="pilot", pid=pid)
        with self.lock:
            self.killed_pids.add(pid)
        os.kill(pid, signal.SIGKILL)
        self.log("fault #%d kill_pilot: kill -9 weft-pilot pid %d" % (rec["id"], pid))
        if not wait_until(lambda: not alive(pid), 10):
            raise RuntimeError("pid %d still there 10 s after kill -9" % pid)
        if not wait_until(lambda: http_get(("127.0.0.1", 15014), "/ready")[0] == 200, 60, 0.1):
            raise RuntimeError("pilot did not come back within 60 s")
        rec["t1"] = now()
        with self.lock:
            self.last_pilot_kill = now()
        self.log("   #%d: pilot ready again after %.1f s" % (rec["id"], rec["t1"] - rec["t0"]))

    def inject(self, what):
        """--inject: a failure the soak does not cause as a logged fault, to show that the
        checks catch it (the run must FAIL)."""
        mesh = self.read_mesh()
        pod = sorted((p for p in mesh["pods"] if not p.get("gateway")),
                     key=lambda p: p["name"])[0]
        if what == "unexplained":
            addr = (pod["localhost"], 3000)
            body = b'{"active":true,"type":"500","percentage":100}'
            for b in (body, b'{"active":false}'):
                s = socket.create_connection(addr, timeout=5)
                s.sendall(b"POST /blowup HTTP/1.1\r\nHost: x\r\nContent-Type: application/"
                          b"json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                          % (len(b), b))
                s.recv(4096)
                s.close()
                if b is body:
                    time.sleep(1)
            self.log("INJECTED (not a logged fault): %s answered 500 for 1 s" % pod["name"])
        else:
            pr = next(p for p in mesh["processes"] if p["kind"] == "proxy"
                      and p["pod"] == pod["name"])
            os.kill(int(pr["pid"]), signal.SIGSEGV)
            self.log("INJECTED: SIGSEGV to %s pid %s" % (pr["name"], pr["pid"]))

    # ---- run ----
    def run(self):
        dur = self.args.minutes * 60.0
        warm = min(120.0, max(15.0, dur * 0.2))
        self.watch = self.watched()
        self.targets = [Target("gateway", GW, HOST, "/items", self.args.rate),
                        Target("standalone", SA_PROXY, "soak", "/bytes/2048", self.args.rate)]
        self.load = Load(self.targets)
        self.load.start()
        self.sampling = True
        samp = threading.Thread(target=self.sampler, daemon=True)
        samp.start()
        t0 = now()
        self.t_run = t0
        self.warm_end = t0 + warm
        self.log("soak: %.1f min, warm-up %.0f s, seed %d, %d req/s per target, %s build"
                 % (self.args.minutes, warm, self.args.seed, self.args.rate,
                    "sanitizer" if self.sanitizer else "release"))
        rotation = []
        injected = not self.args.inject
        while now() - t0 < dur:
            if not injected and now() - t0 >= dur / 2:
                injected = True
                self.inject(self.args.inject)
            time.sleep(self.rng.uniform(1.0, 2.0))
            if now() - t0 >= dur:
                break
            if not rotation:
                rotation = [k for k in FAULT_KINDS if k not in self.args.skip]
                self.rng.shuffle(rotation)
            kind = rotation.pop()
            if self.fire(kind) is None:
                self.log("(%s skipped: the previous one still runs or pilot was killed < %.0f s"
                         " ago)" % (kind, PILOT_KILL_SPACING))
        self.log("faults stop; waiting for running faults to finish")
        for th in self.threads:
            th.join(90)
        # end of the run: everything back, 6 s more of load without faults, then samples
        time.sleep(6)
        self.end_loaded = now()
        self.load.stop()
        self.log("load stopped; waiting 5 s for quiescence")
        time.sleep(5)
        socks = tcp_sockets()
        self.quiet = {name: proc_fds(pid, socks) for name, pid in self.watch}
        self.sampling = False
        samp.join(5)

    # ---- checks ----
    def check_synced(self):
        def synced():
            p = subprocess.run(["weftctl", "proxy-status", "--hide-disconnected"],
                               env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=20)
            rows = p.stdout.decode().splitlines()[1:]
            self.ps_out = p.stdout.decode()
            return p.returncode == 0 and len(rows) == len(self.mesh["pods"]) and all(
                len(re.findall(r"\bSYNCED\b", r)) == 4 for r in rows)
        t = now()
        ok = wait_until(synced, 30, 0.5)
        return ok, ("%d proxies SYNCED after %.1f s" % (len(self.mesh["pods"]), now() - t)
                    if ok else "not all SYNCED after 30 s:\n" + self.ps_out)

    def check_processes(self):
        problems = []
        with open(os.path.join(self.state, "logs", "supervisor.log")) as f:
            sup = f.read()
        exits = re.findall(r"^\S+ (\S+): pid (\d+) (killed by signal \d+[^\n]*|exited[^\n]*)$",
                           sup, re.M)
        for name, pid, what in exits:
            if int(pid) not in self.killed_pids:
                problems.append("%s pid %s %s (not killed by the soak)" % (name, pid, what))
        mesh = self.read_mesh()
        for pr in mesh["processes"]:
            if pr["state"] != "running":
                problems.append("%s is %s (%s)" % (pr["name"], pr["state"], pr.get("lastExit")))
        for name, pid in self.watch:
            if name == "standalone-proxy":
                if self.sa_proxy.poll() is not None:
                    problems.append("standalone weft-proxy exited: %s" % self.sa_proxy.returncode)
            elif name != "supervisor" and not any(int(pr.get("pid") or 0) == pid
                                                  for pr in mesh["processes"]):
                problems.append("%s: pid %d is gone (restarted?)" % (name, pid))
            elif not proc_stat(pid):
                problems.append("%s pid %d is gone" % (name, pid))
        pilot_kills = sum(1 for f in self.faults if f["kind"] == "kill_pilot" and "pid" in f)
        pilot_restarts = next(pr["restarts"] for pr in mesh["processes"] if pr["kind"] == "pilot")
        if pilot_restarts != pilot_kills:
            problems.append("pilot restarted %d times, killed %d times"
                            % (pilot_restarts, pilot_kills))
        app_kills = collections.Counter(f["target"] for f in self.faults
                                        if f["kind"] == "kill_mesh_backend" and "pid" in f)
        for pr in mesh["processes"]:
            if pr["kind"] == "app" and pr["restarts"] != app_kills.get(pr["name"], 0):
                problems.append("%s restarted %d times, killed %d times"
                                % (pr["name"], pr["restarts"], app_kills.get(pr["name"], 0)))
        figures = ("%d weft processes watched, %d kills by the soak (pilot %d), %d exits in "
                   "supervisor.log" % (len(self.watch), len(self.killed_pids), pilot_kills,
                                       len(exits)))
        return not problems, figures + ("" if not problems else ":\n    " +
                                        "\n    ".join(problems))

    def baseline(self, name):
        xs = [s for s in self.samples[name] if self.warm_end <= s[0] <= self.warm_end + 7]
        return xs

    def check_fds(self):
        """Idle keep-alive connections (ESTABLISHED sockets: the pools, the load's clients)
        follow the traffic split of the moment, so they are reported, not compared; every
        other fd (listeners, sockets closing, files, pipes, event fds) is compared, and a
        socket still in CLOSE_WAIT 5 s after the load stopped (the peer closed, the process
        never did) is a leak."""
        rows, bad = [], []
        for name, pid in self.watch:
            base = self.baseline(name)
            end = self.quiet.get(name)
            if not base or not end:
                bad.append("%s: %s" % (name, "gone at the end (see processes)" if base
                                       else "no samples after warm-up"))
                continue
            b = max(s[3] for s in base)
            peak = max(s[1] for s in self.samples[name])
            rows.append("%s %d -> %d (+%d established; peak total %d)"
                        % (short(name), b, end["other"], end["established"], peak))
            self.figures.setdefault("fds", {})[name] = {
                "not_established_after_warmup_max": b, "not_established_end": end["other"],
                "established_end": end["established"], "peak_total": peak,
                "end_kinds": dict(end["kinds"]), "close_wait_end": end["close_wait"]}
            if end["other"] > b + FD_SLACK:
                bad.append("%s: %d fds (not ESTABLISHED) after warm-up, %d at the end: %s"
                           % (name, b, end["other"], dict(end["kinds"])))
            if end["close_wait"]:
                bad.append("%s: %d sockets in CLOSE_WAIT 5 s after the load stopped: %s"
                           % (name, len(end["close_wait"]), end["close_wait"][:8]))
        return not bad, ("fds other than ESTABLISHED sockets, after warm-up (max) -> end "
                         "(quiescent), slack +%d; no CLOSE_WAIT at the end: " % FD_SLACK +
                         ", ".join(rows) + ("" if not bad else "\n    " + "\n    ".join(bad)))

    def check_rss(self):
        rows, bad = [], []
        for name, pid in self.watch:
            base = self.baseline(name)[:3]
            end = [s for s in self.samples[name] if s[0] <= self.end_loaded][-3:]
            if not base or not end or not alive(pid):
                bad.append("%s: %s" % (name, "gone at the end (see processes)" if base
                                       else "no samples after warm-up"))
                continue
            b, e = median([s[2] for s in base]), median([s[2] for s in end])
            peak = max(s[2] for s in self.samples[name])
            change = (e - b) / b
            rows.append("%s %.1f -> %.1f MiB (%+.1f %%, peak %.1f)"
                        % (short(name), b / 1024, e / 1024, 100 * change, peak / 1024))
            self.figures.setdefault("rss_kib", {})[name] = {"after_warmup": b, "end": e,
                                                            "peak": peak}
            if abs(change) > RSS_TOLERANCE and change > 0:
                bad.append("%s: RSS %+.1f %% (%d -> %d KiB)" % (name, 100 * change, b, e))
        pilot = self.samples.get("pilot (restarted by the faults)")
        if pilot:
            rows.append("pilot (restarted, not checked) last %.1f MiB" % (pilot[-1][2] / 1024))
        text = ("within %d %% of after warm-up: " % (100 * RSS_TOLERANCE) + ", ".join(rows) +
                ("" if not bad else "\n    " + "\n    ".join(bad)))
        if self.sanitizer and bad:
            return None, text + "\n    (sanitizer build: reported, not enforced)"
        return not bad, text

    def access_entries(self):
        """[(proxy, entry)] from every proxy's access log."""
        files = []
        logs = os.path.join(self.state, "logs")
        for name in sorted(os.listdir(logs)):
            if name.endswith(".proxy.log"):
                files.append((name[:-len(".proxy.log")], os.path.join(logs, name)))
        files.append(("standalone", os.path.join(self.tmp, "standalone.access.log")))
        out = []
        for proxy, path in files:
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("{"):
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if "response_code" in e:
                        e["_t0"] = parse_start(e["start_time"])
                        e["_t1"] = e["_t0"] + (e.get("duration") or 0) / 1000.0
                        out.append((proxy, e))
        return out

    def explain(self, proxy, e, by_id, memo, depth=0):
        """The fault id that explains a failed entry, or None."""
        key = (proxy, e.get("request_id"), e["_t0"], e.get("path"))
        if key in memo:
            return memo[key]
        memo[key] = None
        flags = set() if e.get("response_flags") in (None, "-") else set(
            e["response_flags"].split(","))
        path = e.get("path") or ""
        m = re.search(r"soak=(reset|slow|vanish)-(\d+)", path)
        res = None
        if m and flags and flags <= TAG_FLAGS[m.group(1)]:
            res = int(m.group(2))
        elif flags and flags <= KILL_FLAGS:
            host = e.get("upstream_host") or ""
            for f in self.faults:
                if f["kind"] not in ("kill_mesh_backend", "kill_backend") or "pid" not in f:
                    continue
                if e["_t1"] < f["t0"] - 0.2 or e["_t0"] > f["t1"] + 2.0:
                    continue
                if f["kind"] == "kill_backend" and proxy == "standalone":
                    res = f["id"]
                elif f["kind"] == "kill_mesh_backend" and proxy != "standalone" and (
                        host in ("%s:3000" % f["ip"], "%s:3000" % f["localhost"])):
                    res = f["id"]
                if res is not None:
                    break
        elif not flags and e.get("response_code_details") == "via_upstream" and depth < 4:
            for p2, e2 in by_id.get(e.get("request_id"), ()):
                if p2 != proxy and failed(e2):
                    res = self.explain(p2, e2, by_id, memo, depth + 1)
                    if res is not None:
                        break
        memo[key] = res
        return res

    def check_access_log(self):
        entries = self.access_entries()
        by_id = collections.defaultdict(list)
        for proxy, e in entries:
            if e.get("request_id"):
                by_id[e["request_id"]].append((proxy, e))
        memo = {}
        unexplained, probes, n_failed = [], 0, 0
        by_kind = collections.Counter()
        flags_seen = collections.Counter()
        for proxy, e in entries:
            if not failed(e):
                continue
            if e.get("user_agent") == "weftctl" and e.get("response_flags") == "NR":
                probes += 1  # weftctl up's node-port check: 404 NR by design
                continue
            n_failed += 1
            flags_seen["%s %s" % (e.get("response_code"), e.get("response_flags"))] += 1
            fid = self.explain(proxy, e, by_id, memo)
            if fid is None:
                unexplained.append((proxy, e))
            else:
                by_kind[self.faults[fid]["kind"]] += 1
        self.figures["access_log"] = {
            "entries": len(entries), "failed": n_failed, "unexplained": len(unexplained),
            "explained_by_kind": dict(by_kind), "code_flags": dict(flags_seen),
            "weftctl_probes": probes}
        kinds = ", ".join("%s %d" % kv for kv in sorted(by_kind.items()))
        text = ("%d entries, %d failed, all explained (%s); code+flags: %s"
                % (len(entries), n_failed, kinds,
                   ", ".join("%s x%d" % kv for kv in sorted(flags_seen.items()))))
        if unexplained:
            text = ("%d entries, %d failed, %d UNEXPLAINED:\n    " % (
                len(entries), n_failed, len(unexplained)) + "\n    ".join(
                "%s %s %s %s %s %s %s %s" % (iso(e["_t0"]), proxy, e.get("path"),
                                             e.get("response_code"), e.get("response_flags"),
                                             e.get("response_code_details"),
                                             e.get("upstream_host"), e.get("request_id"))
                for proxy, e in unexplained[:40]))
            self.figures["access_log"]["unexplained_entries"] = [
                dict(proxy=p, **{k: v for k, v in e.items() if not k.startswith("_")})
                for p, e in unexplained[:200]]
        return not unexplained, text

    def check_client(self):
        rows, bad = [], []
        for tg in self.targets:
            kind = "kill_mesh_backend" if tg.name == "gateway" else "kill_backend"
            wins = [(f["t0"] - 0.2, f["t1"] + 2.0) for f in self.faults
                    if f["kind"] == kind and "pid" in f]
            unexp = [fl for fl in tg.failures
                     if not any(fl[1] >= a and fl[0] <= b for a, b in wins)]
            lat = tg.latencies
            rows.append("%s: %d sent, %d ok, %d failed (%d outside a kill window); latency "
                        "p50 %.1f ms p99 %.1f ms max %.1f ms"
                        % (tg.name, tg.sent, tg.ok, len(tg.failures), len(unexp),
                           1000 * (median(lat) or 0), 1000 * (pct(lat, 0.99) or 0),
                           1000 * (max(lat) if lat else 0)))
            self.figures.setdefault("load", {})[tg.name] = {
                "sent": tg.sent, "ok": tg.ok, "failed": len(tg.failures),
                "failed_outside_kill_windows": len(unexp),
                "p50_ms": round(1000 * (median(lat) or 0), 2),
                "p99_ms": round(1000 * (pct(lat, 0.99) or 0), 2),
                "max_ms": round(1000 * (max(lat) if lat else 0), 2),
                "failures": [[iso(a), iso(b), w] for a, b, w in tg.failures[:100]]}
            for a, b, w in unexp[:20]:
                bad.append("%s %s..%s %s" % (tg.name, iso(a), iso(b), w))
        return not bad, "; ".join(rows) + ("" if not bad else "\n    " + "\n    ".join(bad))

    def check_load(self):
        rows, bad = [], []
        secs = self.load.t1 - self.load.t0
        for tg in self.targets:
            want = tg.rate * secs
            rows.append("%s %.0f req/s (%d of %.0f scheduled)" % (tg.name, tg.sent / secs,
                                                                  tg.sent, want))
            if tg.sent < 0.8 * want:
                bad.append(tg.name)
        return not bad, ", ".join(rows)

    def check_sanitizer(self):
        hits = []
        paths = [os.path.join(self.state, "logs", n)
                 for n in sorted(os.listdir(os.path.join(self.state, "logs")))]
        paths += [os.path.join(self.tmp, n) for n in sorted(os.listdir(self.tmp))
                  if n.endswith(".log")]
        for path in paths:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            for mk in SANITIZER_MARKERS:
                i = text.find(mk)
                if i >= 0:
                    hits.append("%s: %s" % (os.path.basename(path),
                                            text[i:i + 300].replace("\n", " | ")))
                    break
        self.sanitizer_logs = paths
        # how every process ended at `weftctl down` and at the soak's own SIGTERM: status 0,
        # so the exit-time leak check ran (a sanitizer's report exits 1 or 23)
        ends = []
        try:
            with open(os.path.join(self.state, "logs", "supervisor.log")) as f:
                sup = f.read()
            tail = sup[sup.rfind("stopping everything"):] if "stopping everything" in sup else ""
            ends = re.findall(r"^\S+ (\S+): pid \d+ (exited with status \d+|killed[^\n]*)$",
                              tail, re.M)
        except OSError:
            pass
        ends += [(n, "exited with status %s" % rc) for n, rc in self.own_exits]
        clean = sum(1 for _, how in ends if how == "exited with status 0")
        for name, how in ends:
            if how != "exited with status 0":
                hits.append("%s %s at shutdown" % (name, how))
        if not ends:
            hits.append("supervisor.log does not say how the processes ended")
        what = "%d logs scanned, %d of %d processes exited with status 0 at shutdown (%s)" % (
            len(paths), clean, len(ends), "ASan+UBSan build: leak checks ran at exit"
            if self.sanitizer else "release build: no sanitizer in it, make soak-asan")
        return not hits, what + ("" if not hits else ":\n    " + "\n    ".join(hits))

    # ---- teardown ----
    def down(self):
        for name, ip, proc in self.extra_pods:
            proc.terminate()
        for name, ip, proc in self.extra_pods:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.own_exits.append((name + " weft-app", proc.returncode))
        for p in (self.sa_proxy, self.sa_app):
            if p and p.poll() is None:
                p.terminate()
        for name, p in (("standalone weft-proxy", self.sa_proxy),
                        ("standalone weft-app", self.sa_app)):
            if p:
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                self.own_exits.append((name, p.returncode))
        if self.up:
            subprocess.run(["weftctl", "down", "--state", self.state], env=self.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            self.up = False


def failed(e):
    code = e.get("response_code") or 0
    return code == 0 or code >= 500 or e.get("response_flags") not in (None, "-")


def short(name):
    return re.sub(r"-[a-z0-9]{10}-[a-z0-9]{5}\.proxy$", "", name)


def run_soak(args):
    soak = Soak(args)
    results = []
    rc = 0
    interrupted = False
    try:
        soak.setup()
        soak.run()
        checks = [("synced", soak.check_synced), ("processes", soak.check_processes),
                  ("fds", soak.check_fds), ("rss", soak.check_rss),
                  ("access_log", soak.check_access_log), ("client", soak.check_client),
                  ("load", soak.check_load)]
        for name, fn in checks:
            ok, text = fn()
            results.append((name, ok, text))
    except SetupError as e:
        print("soak: setup failed: %s" % e, file=sys.stderr, flush=True)
        rc = 2
    except Exception:  # a soak bug or an unexpected answer: say where, clean up, exit 2
        traceback.print_exc()
        rc = 2
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: clean up, say where the logs are
        interrupted = True
    finally:
        soak.down()
    if interrupted:
        print("soak: interrupted; the mesh and the soak's processes are stopped; logs: %s"
              % soak.tmp, file=sys.stderr, flush=True)
        return 2
    if rc == 0:
        ok, text = soak.check_sanitizer()
        results.append(("sanitizer", ok, text))
    print("\n" + "=" * 100)
    print("soak summary: %.1f min, seed %d, %d faults (%s), %s build"
          % (args.minutes, args.seed, len(soak.faults), ", ".join(
              "%s %d" % kv for kv in sorted(collections.Counter(
                  f["kind"] for f in soak.faults).items())),
             "sanitizer" if soak.sanitizer else "release"))
    for name, ok, text in results:
        mark = "PASS" if ok else ("INFO" if ok is None else "FAIL")
        print("%s %-11s %s" % (mark, name, text))
    errors = [f for f in soak.faults if f.get("error")]
    if errors:
        print("FAIL faults      %d faults could not be applied: %s" % (len(errors), "; ".join(
            "#%d %s: %s" % (f["id"], f["kind"], f["error"]) for f in errors)))
    if rc == 0 and (errors or any(ok is False for _, ok, _ in results)):
        rc = 1
    summary = {
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "bin": soak.bindir, "sanitizer": soak.sanitizer, "minutes": args.minutes,
        "seed": args.seed, "rate_per_target": args.rate, "exit": rc,
        "checks": {n: {"pass": ok, "text": t} for n, ok, t in results},
        "figures": soak.figures,
        "faults": [{k: (iso(v) if k in ("t0", "t1") and v else v) for k, v in f.items()}
                   for f in soak.faults],
        "samples": {n: [[round(t - soak.t_start, 1), fd, rss, other]
                        for t, fd, rss, other in xs]
                    for n, xs in soak.samples.items()},
    }
    os.makedirs(args.results, exist_ok=True)
    out = os.path.join(args.results, "soak-%s.json" % time.strftime("%Y%m%dT%H%M%SZ",
                                                                  time.gmtime()))
    with open(out, "w") as f:
        json.dump(summary, f, indent=1)
    print("summary: %s" % out)
    if rc != 0 and not args.keep:
        print("(logs kept for a failed run: %s)" % soak.tmp)
    elif not args.keep:
        shutil.rmtree(soak.tmp, ignore_errors=True)
    else:
        print("logs kept: %s" % soak.tmp)
    print("soak: %s" % ("PASS" if rc == 0 else "FAIL (exit %d)" % rc))
    return rc


def private_net_problem():
    """Why no private network namespace can be made here, or None."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("unshare", "ip"):
        if not shutil.which(tool):
            return "%s is not installed" % tool
    try:
        p = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return "unshare -n failed: %s" % e
    if p.returncode != 0:
        return "unshare -n failed: %s" % p.stderr.decode("utf-8", "replace").strip()
    return None


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Exit status: 0 every check passed (or the soak was skipped: not root, no "
               "private network namespace), 1 a check failed, 2 a setup or usage error. "
               "bench/README.md describes the faults and checks.")
    env_defaults = {}
    for var, conv, default in (("SOAK_MINUTES", float, 10.0), ("SOAK_SEED", int, 1),
                               ("SOAK_RATE", int, 100)):
        try:
            env_defaults[var] = conv(os.environ.get(var) or default)
        except ValueError:
            print("soak: $%s=%r is not a number" % (var, os.environ[var]), file=sys.stderr)
            return 2
    ap.add_argument("--bin", default=os.path.join(ROOT, "build"),
                    help="folder with weftctl, weft-pilot, weft-proxy, weft-app (default build/)")
    ap.add_argument("--minutes", type=float, default=env_defaults["SOAK_MINUTES"],
                    help="how long the faults fire ($SOAK_MINUTES, default 10)")
    ap.add_argument("--seed", type=int, default=env_defaults["SOAK_SEED"],
                    help="seed of the fault schedule ($SOAK_SEED, default 1)")
    ap.add_argument("--rate", type=int, default=env_defaults["SOAK_RATE"],
                    help="requests per second per target ($SOAK_RATE, default 100)")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"),
                    help="where the JSON summary goes (default bench/results)")
    ap.add_argument("--keep", action="store_true", help="keep the logs of a passing run")
    ap.add_argument("--skip", default="", metavar="KIND[,KIND]",
                    type=lambda v: [k for k in v.split(",") if k],
                    help="fault kinds left out (%s); without kill_pilot, pilot's fds and RSS "
                         "are checked too" % ", ".join(FAULT_KINDS))
    ap.add_argument("--inject", choices=("unexplained", "crash"),
                    help="check the checks: halfway through, a failure that is not a logged "
                         "fault (a catalog app answers 500 for 1 s) or a SIGSEGV to a sidecar "
                         "proxy; the run must then FAIL (access_log and client, or processes)")
    args = ap.parse_args()
    unknown = [k for k in args.skip if k not in FAULT_KINDS]
    if unknown or len(args.skip) == len(FAULT_KINDS):
        print("soak: --skip: %s" % ("unknown fault kind %s (kinds: %s)" % (
            unknown[0], ", ".join(FAULT_KINDS)) if unknown else "no fault kind left"),
            file=sys.stderr)
        return 2
    if args.minutes <= 0 or args.rate <= 0:
        print("soak: --minutes and --rate must be positive", file=sys.stderr)
        return 2
    for prog in ("weftctl", "weft-pilot", "weft-proxy", "weft-app"):
        if not os.access(os.path.join(args.bin, prog), os.X_OK):
            print("soak: %s/%s is missing: build first (make)" % (args.bin, prog),
                  file=sys.stderr)
            return 2
    if os.environ.get("WEFT_SOAK_NETNS") != "1":
        why = private_net_problem()
        if why:
            print("soak skipped: %s; the soak runs the local mesh in a private network "
                  "namespace (fixed ports 15010/15012/15014/30000, pod addresses 127.10.x.y)" % why)
            return 0
        env = dict(os.environ, WEFT_SOAK_NETNS="1")
        script = "ip link set lo up && exec /usr/bin/python3 \"$0\" \"$@\""
        # exec, not a child: the soak keeps this process id, so a signal sent to it (Ctrl-C,
        # kill, a CI timeout) reaches the soak itself, which then takes the mesh down
        sys.stdout.flush()
        sys.stderr.flush()
        os.execvpe("unshare", ["unshare", "-n", "/bin/sh", "-c", script,
                               os.path.abspath(__file__)] + sys.argv[1:], env)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(2))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in the background
    try:
        return run_soak(args)
    except KeyboardInterrupt:
        return 2


if __name__ == "__main__":
    sys.exit(main())
