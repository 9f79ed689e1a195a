#!/usr/bin/python3
"""make demo: the book's catalog example on weft's local mesh, broken and fixed with weft's
own tools (issue 7; docs/getting-started.md walks through the same story).

    scripts/demo.py [--bin DIR]        DIR holds weftctl, weft-pilot, weft-proxy, weft-app
                                       (default: build/)
    DEMO_PAUSE=1 scripts/demo.py       wait for Enter between steps

The demo copies examples/catalog into a scratch folder ($DEMO, so the repository is never
edited), starts `weftctl up $DEMO/catalog --detach --state $DEMO/state` and runs, printing
every command and its real output and checking each result:

The URL of weft-pilot's web view (http://127.0.0.1:15014/ui/, checked with `weftctl dashboard
weft`) is printed after the mesh starts, and each step says what the view shows then.

  1. a request through the gateway: 503, the gateway's access log says NC cluster_not_found
  2. weftctl proxy-status: every proxy SYNCED (so it is not a delivery problem)
  3. weftctl analyze: IST0101 for both subsets
  4. the DestinationRule: analyzed together with the running config (clean), applied,
     then 200s split about 20/80 between v1 and v2
  5. weftctl describe pod (a v2 pod), weftctl proxy-config cluster|route (the gateway)
  6. a 1 s latency blow-up on v2 and a 0.5 s route timeout: 504 UT in the JSON access log,
     weftctl log explain, and istio_requests_total at the gateway (source) vs v2 (destination)
  7. debug logging on the gateway (weftctl proxy-config log) and one request traced by its
     connection id
  8. a 2 MB upload on a route with retries whose first attempt fails: 507
     request_payload_exceeded_retry_buffer_limit, explained
  9. pilot stopped: the gateway keeps serving, control_plane.connected_state 0, its opt-in
     readiness turns 503 and stays so through a reconnect loop; pilot back: SYNCED, ready
 10. mutual TLS: the gateway already reaches catalog over mTLS (SPIFFE identities in the
     metrics); PeerAuthentication STRICT in istioinaction; a plaintext client without a
     sidecar is refused while the gateway keeps getting 200; why, in three commands:
     describe pod, the sidecar's NR filter_chain_not_found line through log explain, and
     proxy-config listener

The local mesh needs 127.0.0.1:15010, :15012, :15014 and :30000. When another mesh holds them, the
demo runs in a private network namespace of its own (`unshare -n`, as root); where that is
not possible it prints "demo skipped: ports 15010/15012/15014/30000 in use" and exits 0.

Exit status: 0 when every step showed what it should within two minutes (or skipped), 1
otherwise. `weftctl down` always runs at the end. Standard library only.
"""
import argparse
import collections
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "catalog.istioinaction.io"
GATEWAY = ("127.0.0.1", 30000)
FIXED_PORTS = (15010, 15012, 15014, 30000)
STEPS = 10
CURL_GW = "curl -s -H 'Host: %s' http://127.0.0.1:30000" % HOST


class StepFailed(Exception):
    pass


def ports_in_use():
    """The fixed ports of the local mesh that something already holds."""
    busy = []
    for port in FIXED_PORTS:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            busy.append(port)
        finally:
            s.close()
    return busy


def netns_possible():
    """Pods in network namespaces with capture: root, iproute2, nsenter and iptables, unless
    WEFT_DEMO_POD_NETWORK=explicit asks for the loopback mode."""
    if os.environ.get("WEFT_DEMO_POD_NETWORK") == "explicit" or os.geteuid() != 0:
        return False
    return all(shutil.which(t) for t in ("ip", "nsenter", "iptables", "iptables-restore"))


def private_net_possible():
    """True when a private network namespace can be made here (root, unshare and ip)."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    try:
        return subprocess.call(["unshare", "-n", "true"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=10) == 0
    except (OSError, subprocess.SubprocessError):
        return False


def http_request(ip, port, path, host=None, method="GET", body=None, headers=None, timeout=5):
    """(status, {lower-case header: value}, body) on a fresh connection."""
    conn = http.client.HTTPConnection(ip, port, timeout=timeout)
    try:
        h = dict(headers or {})
        h.setdefault("Host", host or "%s:%d" % (ip, port))
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def gw_request(path="/items", **kw):
    return http_request(GATEWAY[0], GATEWAY[1], path, host=HOST, **kw)


def wait_for(pred, timeout, what):
    """Polls pred() until it returns a true value (returned); StepFailed on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except (OSError, http.client.HTTPException, ValueError) as e:
            last = e
        time.sleep(0.1)
    raise StepFailed("timed out after %ds waiting for %s (last: %r)" % (timeout, what, last))


class FakePilot:
    """A 'control plane' on 127.0.0.1:15012 (pilot's secure port, where the local mesh's
    proxies stream xDS) that accepts every connection and closes it at once: the reconnect
    loop of a crashing or overloaded istiod, as proxies see it."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 15012))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            c.close()

    def stop(self):
        self.stopping = True
        self.thread.join(2)
        self.sock.close()


class Demo:
    def __init__(self, bindir, pause):
        self.bindir = os.path.abspath(bindir)
        self.pause = pause
        self.tmp = tempfile.mkdtemp(prefix="weft-demo-")
        self.work = os.path.join(self.tmp, "catalog")
        self.state = os.path.join(self.tmp, "state")
        self.env = dict(os.environ)
        self.env["PATH"] = self.bindir + os.pathsep + self.env.get("PATH", "")
        self.env["DEMO"] = self.tmp
        for var, prog in (("WEFT_PILOT", "weft-pilot"), ("WEFT_PROXY", "weft-proxy"),
                          ("WEFT_APP", "weft-app")):
            self.env[var] = os.path.join(self.bindir, prog)
        self.up = False
        self.netns = netns_possible()
        self.passed = []
        self.mesh = None
        self.t0 = time.monotonic()

    # ---- output ----
    def say(self, text=""):
        print(text, flush=True)

    def step(self, n, title):
        if self.pause and n > 1 and sys.stdin.isatty():
            input("\n[DEMO_PAUSE] press Enter for step %d ... " % n)
        self.say("\n" + "=" * 100)
        self.say("Step %d/%d: %s   (t=%.1fs)" % (n, STEPS, title, time.monotonic() - self.t0))
        self.say("=" * 100)
        self.say("in the web view: %s" % VIEW[n - 1])

    def ok(self, what):
        self.say("   ok: " + what)

    def check(self, cond, what, detail=""):
        if not cond:
            raise StepFailed(what + (": " + detail if detail else ""))
        self.ok(what)

    def sh(self, cmd, rc=0, timeout=60, quiet=False):
        """Runs cmd with /bin/sh (cwd: the repository; $DEMO set), prints it and its output
        (stdout, then stderr). rc: the exit status wanted (None: any). Returns (status,
        output)."""
        self.say("\n$ " + cmd)
        p = subprocess.run(["/bin/sh", "-c", cmd], cwd=ROOT, env=self.env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        if not quiet:
            self.say(out.rstrip("\n"))
        if rc is not None and p.returncode != rc:
            raise StepFailed("`%s` exited with %d, expected %d" % (cmd, p.returncode, rc))
        return p.returncode, out

    # ---- the mesh ----
    def load_mesh(self):
        with open(os.path.join(self.state, "mesh.json")) as f:
            self.mesh = json.load(f)
        pods = self.mesh["pods"]
        self.gw = next(p for p in pods if p.get("gateway"))
        self.v1 = [p for p in pods if p["labels"].get("version") == "v1"]
        self.v2 = [p for p in pods if p["labels"].get("version") == "v2"]
        self.gw_log = next(pr["log"] for pr in self.mesh["processes"]
                           if pr.get("kind") == "gateway")
        self.gw_admin = self.gw["admin"]
        if len(self.v1) != 1 or len(self.v2) != 2:
            raise StepFailed("expected 1 v1 and 2 v2 catalog pods, mesh.json has %d and %d"
                             % (len(self.v1), len(self.v2)))

    def access_log(self, pred):
        """The gateway's JSON access log entries pred accepts."""
        out = []
        with open(self.gw_log, "rb") as f:
            for line in f.read().decode("utf-8", "replace").splitlines():
                if line.startswith("{"):
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if pred(e):
                        out.append(e)
        return out

    def rel(self, path):
        return path.replace(self.tmp, "$DEMO")

    def copy(self, src, dst_name):
        """Applies a file: cp into the folder the mesh runs (pilot watches it)."""
        self.sh("cp examples/catalog-steps/%s $DEMO/catalog/%s" % (src, dst_name))

    def blowup(self, pods, body):
        for p in pods:
            self.sh("curl -s -X POST -H 'Content-Type: application/json' -d '%s' "
                    "http://%s:3000/blowup" % (json.dumps(body, separators=(",", ":")),
                                              self.app_ip(p)))

    def app_ip(self, pod):
        """Where the host reaches a pod's app: its pod IP when pods have their own network
        namespaces (captured, through its sidecar's virtualInbound), else the pod localhost."""
        return pod["ip"] if self.netns else pod["localhost"]

    def admin_get(self, pod, path):
        ip, port = pod["admin"].rsplit(":", 1)
        return http_request(ip, int(port), path)

    def stat(self, pod, name):
        status, _, body = self.admin_get(pod, "/stats?filter=^%s$" % re.escape(name))
        m = re.search(r"^%s: (\d+)" % re.escape(name), body.decode(), re.M)
        return int(m.group(1)) if m else None

    def ready(self, pod):
        return http_request(pod["ip"], pod.get("healthPort", 15021), "/healthz/ready",
                            timeout=2)

    def pilot_proc(self):
        with open(os.path.join(self.state, "mesh.json")) as f:
            mesh = json.load(f)
        return next(pr for pr in mesh["processes"] if pr.get("kind") == "pilot")

    # ---- steps ----
    def start(self):
        self.say("DEMO=%s   (a scratch folder: the demo runs a copy of examples/catalog there,"
                 % self.tmp)
        self.say("        so the repository is never edited; weftctl and friends come from %s)"
                 % self.rel(self.bindir))
        shutil.copytree(os.path.join(ROOT, "examples", "catalog"), self.work,
                        ignore=shutil.ignore_patterns(".weft"))
        self.sh("ls $DEMO/catalog")
        self.up = True
        if self.netns:
            # pods as Kubernetes runs them: a network namespace each, Istio's capture rules;
            # the proxies run as uid 1337 and read their files in $DEMO
            os.chmod(self.tmp, 0o711)
            self.say("(root: pods in network namespaces with transparent capture; "
                     "WEFT_DEMO_POD_NETWORK=explicit runs them on loopback addresses)")
            self.sh("weftctl up $DEMO/catalog --detach --state $DEMO/state "
                    "--pod-network netns --capture", timeout=90)
        else:
            self.sh("weftctl up $DEMO/catalog --detach --state $DEMO/state", timeout=90)
        self.load_mesh()
        self.sh("weftctl status --state $DEMO/state")
        self.web_view()

    def web_view(self):
        """weft-pilot's web view (docs/web-view.md): its URL, checked by weftctl dashboard. A
        view that is not installed (503: run scripts/setup) is said, not a failure: the story
        is told by the commands."""
        rc, out = self.sh("weftctl dashboard weft --browser=false --state $DEMO/state", rc=None)
        url = out.splitlines()[0] if rc == 0 and out.startswith("http") else VIEW_URL
        self.say("\nweb view: %s   (each step below says what it shows there)" % url)
        if os.environ.get("WEFT_DEMO_NETNS") == "1":
            self.say("   (this demo runs in a private network namespace: the URL is not "
                     "reachable from this host's browser)")
        if rc == 0:
            self.ok("the web view answers at %s" % url)
        else:
            self.say("   (not available now: see weftctl dashboard's message above and "
                     "docs/web-view.md, Troubleshooting)")

    def step1(self):
        self.step(1, "a request through the ingress gateway fails")
        # the gateway serves its routes once its first config arrived; wait for that answer
        wait_for(lambda: gw_request()[0] == 503, 20, "the gateway to answer 503")
        _, out = self.sh(CURL_GW + "/items -o /dev/null -w '%{http_code}\\n'")
        self.check(out.strip() == "503", "the gateway answers 503")
        entry = wait_for(lambda: self.access_log(lambda e: e.get("response_code") == 503),
                         15, "the 503 in the gateway's access log")[-1]
        self.sh("grep '\"response_code\":503' %s | tail -n 1" % self.rel(self.gw_log))
        self.check(entry.get("response_flags") == "NC" and
                   entry.get("response_code_details") == "cluster_not_found",
                   "the gateway's access log says 503 NC cluster_not_found",
                   json.dumps(entry))

    def step2(self):
        self.step(2, "is it a delivery problem? weftctl proxy-status")

        def all_synced():
            p = subprocess.run(["weftctl", "proxy-status"], env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20)
            rows = p.stdout.decode().splitlines()[1:]
            return len(rows) == len(self.mesh["pods"]) and all(
                "SYNCED" in r and not re.search(r"STALE|ERROR|NOT SENT|DISCONNECTED", r)
                for r in rows)
        wait_for(all_synced, 20, "every proxy SYNCED")
        _, out = self.sh("weftctl proxy-status")
        rows = out.strip().splitlines()[1:]
        self.check(len(rows) == len(self.mesh["pods"]),
                   "%d proxies (gateway + 3 sidecars) listed" % len(self.mesh["pods"]))
        self.check(all("SYNCED" in r and not re.search(r"STALE|ERROR|NOT SENT", r)
                       for r in rows),
                   "every proxy is SYNCED: the config reached them, the config itself is wrong")

    def step3(self):
        self.step(3, "what is wrong with the config? weftctl analyze")
        _, out = self.sh("weftctl analyze -n istioinaction $DEMO/catalog", rc=79)
        for subset in ("version-v1", "version-v2"):
            self.check(re.search(r"Error \[IST0101\].*%s" % subset, out) is not None,
                       "IST0101 for subset %s: no DestinationRule defines it" % subset)

    def step4(self):
        self.step(4, "the fix: a DestinationRule with the subsets")
        self.sh("cat examples/catalog-steps/fix-destinationrule.yaml")
        _, out = self.sh("weftctl analyze -n istioinaction $DEMO/catalog "
                         "examples/catalog-steps/fix-destinationrule.yaml")
        self.check("No validation issues found" in out,
                   "the running config plus the DestinationRule analyzes clean")
        self.copy("fix-destinationrule.yaml", "destinationrule.yaml")
        t0 = time.monotonic()
        wait_for(lambda: gw_request()[0] == 200, 20, "the gateway to answer 200")
        self.say("   (the gateway answered 200 %.1f s after the copy)" % (time.monotonic() - t0))
        self.sh(CURL_GW + "/items/1 -i")
        counts, pods, other = collections.Counter(), collections.Counter(), collections.Counter()
        n = 500
        for _ in range(n):
            status, h, _ = gw_request("/items")
            if status == 200:
                counts[h.get("x-weft-version")] += 1
                pods[h.get("x-weft-pod")] += 1
            else:
                other[status] += 1
        self.say("\n%d requests through the gateway, counted by the x-weft-version and "
                 "x-weft-pod headers the app sends:" % n)
        for pod, c in sorted(pods.items()):
            self.say("   %-40s %4d" % (pod, c))
        for v, c in sorted(counts.items()):
            self.say("   version %-32s %4d  (%.0f %%)" % (v, c, 100.0 * c / n))
        self.check(not other, "every request answered 200", str(dict(other)))
        share = counts["v1"] / n
        self.check(abs(share - 0.20) <= 0.07 and counts["v1"] + counts["v2"] == n,
                   "split about 20/80 (v1 %.0f %%, v2 %.0f %%)" % (100 * share,
                                                                 100 * counts["v2"] / n))
        self.check(all(pods[p["name"]] > 0 for p in self.v2),
                   "both v2 replicas take traffic")

    def step5(self):
        self.step(5, "what the proxies were told: describe and proxy-config")
        v2 = self.v2[0]["name"]
        gw = "%s.%s" % (self.gw["name"], self.gw["namespace"])
        _, out = self.sh("weftctl describe pod %s -n istioinaction" % v2)
        self.check("Matching subsets: version-v2" in out, "the v2 pod matches subset version-v2")
        self.check("weight 80%" in out, "and gets 80 % of the VirtualService's traffic")
        _, out = self.sh("weftctl proxy-config cluster %s --fqdn catalog" % gw)
        self.check("version-v1" in out and "version-v2" in out,
                   "the gateway has the subset clusters now")
        _, out = self.sh("weftctl proxy-config route %s" % gw)
        self.check(HOST in out and "catalog-v1-v2" in out,
                   "the gateway routes %s with the VirtualService catalog-v1-v2" % HOST)

    def step6(self):
        self.step(6, "slow v2: a latency blow-up, a 0.5 s timeout, logs and metrics")
        self.blowup(self.v2, {"active": True, "type": "latency", "latencyMs": 1000,
                              "volatile": True})
        self.sh("grep -n 'timeout:' examples/catalog-steps/virtualservice-timeout.yaml")
        self.copy("virtualservice-timeout.yaml", "virtualservice.yaml")

        def timeouts_seen():
            return gw_request(timeout=5)[0] == 504
        wait_for(timeouts_seen, 20, "a 504 from the gateway (the timeout applied)")
        codes = collections.Counter(gw_request(timeout=5)[0] for _ in range(20))
        self.say("\n20 requests through the gateway: %s" % dict(sorted(codes.items())))
        self.check(set(codes) <= {200, 504} and codes[504] >= 8 and codes[200] >= 1,
                   "v2's answers time out (504), v1's still come back (200)")
        self.sh(CURL_GW + "/items -o /dev/null -w '%{http_code} after %{time_total}s\\n'")
        wait_for(lambda: self.access_log(lambda e: e.get("response_code") == 504), 15,
                 "a 504 in the gateway's access log")
        line = "grep '\"response_flags\":\"UT\"' %s | tail -n 1" % self.rel(self.gw_log)
        _, out = self.sh(line)
        entry = json.loads(out.strip().splitlines()[-1])
        self.check(entry.get("response_code") == 504 and
                   entry.get("response_code_details") == "response_timeout" and
                   "version-v2" in (entry.get("upstream_cluster") or ""),
                   "504 UT response_timeout on the version-v2 cluster in the JSON access log")
        _, out = self.sh(line + " | weftctl log explain")
        self.check("UT (UpstreamRequestTimeout)" in out, "weftctl log explain names UT")
        _, src = self.sh("curl -s http://%s/stats/prometheus | grep '^istio_requests_total' | "
                         "grep 'response_code=\"504\"'" % self.gw_admin)
        v2a = self.v2[0]["admin"]
        _, dst = self.sh("curl -s http://%s/stats/prometheus | grep '^istio_requests_total'"
                         % v2a)
        self.check(re.search(r'reporter="source".*response_code="504".*response_flags="UT"',
                             src) is not None,
                   "the gateway (reporter=source) counts 504s with flag UT")
        self.check(dst.strip() != "" and 'response_code="504"' not in dst,
                   "the v2 sidecar (reporter=destination) never saw a 504: it was the "
                   "caller's timeout, not v2's answer")
        self.blowup(self.v2, {"active": False})

    def step7(self):
        self.step(7, "one request, traced through the gateway's debug log")
        gw = "%s.%s" % (self.gw["name"], self.gw["namespace"])
        _, out = self.sh("weftctl proxy-config log %s --level "
                         "http:debug,router:debug,connection:debug,pool:debug" % gw)
        self.check(re.search(r"http: debug", out) and re.search(r"router: debug", out),
                   "http, router, connection and pool log at debug")
        tag = "trace-%d" % os.getpid()
        self.sh(CURL_GW + "'/items/2?%s' -o /dev/null -w '%%{http_code}\\n'" % tag)

        def conn_id():
            with open(self.gw_log, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            m = re.search(r'"ConnectionId":"(\d+)".*request headers complete: GET '
                          r'/items/2\?%s' % tag, text)
            return m.group(1) if m else None
        cid = wait_for(conn_id, 15, "the request's debug lines in the gateway log")
        self.say("\nthe request's downstream connection is ConnectionId %s:" % cid)
        _, out = self.sh("grep -F '\"ConnectionId\":\"%s\"' %s" % (cid, self.rel(self.gw_log)))
        self.check("request headers complete" in out and "ConnectionId" in out,
                   "the connection's lines show the request from accept to close")
        self.sh("weftctl proxy-config log %s --reset | head -n 3" % gw)

    def step8(self):
        self.step(8, "a large upload on a route with retries: 507")
        self.blowup(self.v1, {"active": True, "type": "500"})
        self.sh("grep -n -A 12 'name: upload' "
                "examples/catalog-steps/virtualservice-upload-retries.yaml")
        self.copy("virtualservice-upload-retries.yaml", "virtualservice.yaml")

        def upload_route():
            status, _, body = self.admin_get(self.gw, "/config_dump")
            return status == 200 and b"retry_back_off" in body
        wait_for(upload_route, 20, "the upload route with retries at the gateway")
        big = os.path.join(self.tmp, "upload-2mb.bin")
        with open(big, "wb") as f:
            f.write(os.urandom(2 * 1024 * 1024))
        # --limit-rate: the body arrives over about a second, as a real client's does; the
        # first attempt has failed by then and the retry waits for its back-off
        _, out = self.sh("curl -s -H 'Host: %s' -H 'Expect:' --limit-rate 2M --data-binary "
                         "@$DEMO/upload-2mb.bin http://127.0.0.1:30000/upload "
                         "-w '\\n%%{http_code}\\n'" % HOST, timeout=30)
        self.check(out.strip().endswith("507") and
                   "exceeded request buffer limit while retrying upstream" in out,
                   "507 exceeded request buffer limit while retrying upstream")
        line = "grep '\"response_code\":507' %s | tail -n 1" % self.rel(self.gw_log)
        wait_for(lambda: self.access_log(lambda e: e.get("response_code") == 507), 15,
                 "the 507 in the gateway's access log")
        _, out = self.sh(line + " | weftctl log explain")
        self.check("request_payload_exceeded_retry_buffer_limit" in out,
                   "weftctl log explain explains request_payload_exceeded_retry_buffer_limit")
        self.blowup(self.v1, {"active": False})
        status, _, body = gw_request("/upload", method="POST", body=b"x" * 1000)
        self.check(status == 200, "a small upload passes once v1 is healthy again (%d)" % status)

    def step9(self):
        self.step(9, "the control plane goes away")
        gwready = "curl -s -w ' %%{http_code}\\n' http://%s:15021/healthz/ready" % self.gw["ip"]
        cstate = ("curl -s http://%s/stats | grep -E "
                  "'^control_plane.connected_state|control_plane.weft'" % self.gw_admin)
        self.sh(gwready)
        self.stop_pilot()
        gwip = self.gw["ip"]
        curl_pod = ("curl -s -H 'Host: %s' http://%s:8080/items -o /dev/null -w '%%{http_code}\\n'"
                    % (HOST, gwip))
        wait_for(lambda: self.stat(self.gw, "control_plane.connected_state") == 0, 10,
                 "control_plane.connected_state 0 at the gateway")
        _, out = self.sh(cstate)
        self.check("control_plane.connected_state: 0" in out,
                   "the gateway knows: control_plane.connected_state 0")
        _, out = self.sh(curl_pod)
        self.check(out.strip() == "200" and
                   http_request(gwip, 8080, "/items", host=HOST)[0] == 200,
                   "and keeps serving its last config (200)")
        self.sh("weftctl proxy-status", rc=1)
        wait_for(lambda: self.ready(self.gw)[0] == 503, 15, "the gateway not ready")
        _, out = self.sh(gwready)
        self.check(out.strip().endswith("503"),
                   "after the 3 s grace period the gateway is not ready (opt-in policy)")
        self.say("\na 'control plane' that accepts connections and drops them at once "
                 "(a reconnect loop), for 4 s:")
        fake = FakePilot()
        try:
            time.sleep(4)
        finally:
            fake.stop()
        self.say("   the gateway connected %d times" % fake.accepted)
        _, out = self.sh(gwready)
        self.check(out.strip().endswith("503"), "still not ready through the reconnect loop")
        self.start_pilot()
        wait_for(lambda: self.stat(self.gw, "control_plane.connected_state") == 1, 30,
                 "the gateway reconnected")
        _, out = self.sh(gwready)
        self.check(out.strip().endswith("503"),
                   "reconnected, but ready only after 5 s without interruption")
        wait_for(lambda: self.ready(self.gw)[0] == 200, 20, "the gateway ready again")
        _, out = self.sh(gwready)
        self.check(out.strip().endswith("200"), "ready again")

        def synced():
            p = subprocess.run(["weftctl", "proxy-status"], env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20)
            rows = p.stdout.decode().splitlines()[1:]
            return p.returncode == 0 and len(rows) == len(self.mesh["pods"]) and all(
                "SYNCED" in r and not re.search(r"STALE|ERROR|NOT SENT|DISCONN", r)
                for r in rows)
        wait_for(synced, 20, "every proxy SYNCED again")
        self.sh("weftctl proxy-status")
        self.ok("every proxy SYNCED again")
        self.sh(cstate)

    def step10(self):
        self.step(10, "mutual TLS: STRICT refuses a plaintext client, and why")
        v1 = self.v1[0]
        v1_log = next(pr["log"] for pr in self.mesh["processes"]
                      if pr.get("kind") == "proxy" and pr.get("pod") == v1["name"])
        gw = "%s.%s" % (self.gw["name"], self.gw["namespace"])
        _, out = self.sh("weftctl proxy-config secret %s" % gw)
        self.check(re.search(r"^default +Cert Chain +ACTIVE +true", out, re.M) and
                   re.search(r"^ROOTCA +CA +ACTIVE +true", out, re.M),
                   "the gateway holds its workload certificate and the mesh root (SDS)")
        wait_for(lambda: gw_request()[0] == 200, 20, "the gateway answering 200")
        _, out = self.sh("curl -s http://%s/stats/prometheus | grep '^istio_requests_total' | "
                         "grep -o 'connection_security_policy=\"[a-z_]*\"\\|"
                         "source_principal=\"[^\"]*\"' | sort -u" % v1["admin"])
        self.check('connection_security_policy="mutual_tls"' in out and
                   "spiffe://cluster.local/ns/istio-system/sa/" in out,
                   "catalog counts the gateway's requests as mutual_tls from its SPIFFE identity")
        plain = ("curl -s -o /dev/null -w '%%{http_code}\\n' http://%s:3000/items"
                 % v1["ip"])
        _, out = self.sh(plain, rc=None)
        self.check(out.strip().endswith("200"),
                   "PERMISSIVE (the default): a plaintext client without a sidecar gets 200")
        self.sh("cat examples/catalog-steps/peerauthentication-strict.yaml")
        self.copy("peerauthentication-strict.yaml", "peerauthentication.yaml")

        def refused():
            p = subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "3",
                                "http://%s:3000/items" % v1["ip"]], timeout=10)
            return p.returncode not in (0, 28)
        wait_for(refused, 20, "the plaintext client refused")
        status, out = self.sh(plain, rc=None)
        self.check(status != 0 and not out.strip().endswith("200"),
                   "STRICT: the plaintext client is closed without any HTTP answer (curl %d)"
                   % status)
        codes = collections.Counter(gw_request()[0] for _ in range(10))
        self.check(codes == {200: 10}, "the gateway, talking mTLS, still gets 200 (%s)"
                   % dict(codes))
        self.say("\nwhy? three commands:")
        _, out = self.sh("weftctl describe pod %s -n istioinaction 2>&1 | "
                         "grep -A4 'Effective PeerAuthentication'" % v1["name"])
        self.check("Workload mTLS mode: STRICT" in out and "default.istioinaction" in out,
                   "(1) describe: the workload is STRICT, set by PeerAuthentication "
                   "default.istioinaction")
        wait_for(lambda: "filter_chain_not_found" in open(v1_log, "rb").read().decode(
            "utf-8", "replace"), 15, "the refusal in the catalog sidecar's access log")
        _, out = self.sh("grep filter_chain_not_found %s | tail -n 1 | weftctl log explain"
                         % self.rel(v1_log))
        self.check("NR" in out and "filter_chain_not_found" in out,
                   "(2) the sidecar logged NR filter_chain_not_found, and log explain says why")
        if self.netns:  # captured: port 3000's chains are virtualInbound's (15006)
            _, out = self.sh("weftctl proxy-config listener %s.istioinaction --port 15006 | "
                             "grep -E '^ADDRESSES|[*]:3000 '" % v1["name"])
        else:
            _, out = self.sh("weftctl proxy-config listener %s.istioinaction --port 3000"
                             % v1["name"])
        self.check("Trans: tls" in out and "raw_buffer" not in out,
                   "(3) its inbound listener on 3000 has only the TLS chain")
        self.sh("rm $DEMO/catalog/peerauthentication.yaml")

    # ---- pilot control ----
    # weftctl up's supervisor restarts a process that exits (after 1 s), so to keep pilot
    # down the demo pauses the supervisor first (SIGSTOP) and lets it go on (SIGCONT) to
    # bring pilot back. While it is paused, so is its 127.0.0.1:30000 forwarder: step 9
    # talks to the gateway pod at its own address.
    def stop_pilot(self):
        self.sup_pid = int(self.mesh["supervisor"]["pid"])
        pilot = self.pilot_proc()
        self.say("\n(pausing weftctl up's supervisor, which would restart pilot at once, "
                 "then stopping pilot)")
        self.sh("kill -STOP %d && kill %d" % (self.sup_pid, int(pilot["pid"])))
        self.sup_paused = True

        def refused():
            try:
                socket.create_connection(("127.0.0.1", 15012), timeout=1).close()
                return False
            except ConnectionRefusedError:
                return True
        wait_for(refused, 10, "pilot's xDS port to close")

    def start_pilot(self):
        self.say("\n(letting the supervisor go on: it restarts pilot after its 1 s back-off)")
        self.sh("kill -CONT %d" % self.sup_pid)
        self.sup_paused = False

    def down(self):
        if getattr(self, "sup_paused", False):
            os.kill(self.sup_pid, signal.SIGCONT)
        if self.up:
            try:
                self.sh("weftctl down --state $DEMO/state", rc=None, timeout=60)
            except subprocess.TimeoutExpired:
                self.say("weftctl down did not finish in 60 s")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self):
        failed = None
        steps = [self.step1, self.step2, self.step3, self.step4, self.step5, self.step6,
                 self.step7, self.step8, self.step9, self.step10]
        try:
            self.start()
            for i, fn in enumerate(steps, 1):
                fn()
                self.passed.append(i)
        except StepFailed as e:
            failed = "step %d: %s" % (len(self.passed) + 1, e)
        except (OSError, subprocess.SubprocessError, KeyError, StopIteration, ValueError) as e:
            failed = "step %d: %s: %s" % (len(self.passed) + 1, type(e).__name__, e)
        finally:
            if failed:
                self.say("\nFAILED %s" % failed)
                self.dump_logs()
            self.down()
        took = time.monotonic() - self.t0
        self.say("\n" + "=" * 100)
        self.say("demo summary: %d/%d steps showed what they should, in %.1f s"
                 % (len(self.passed), STEPS, took))
        for i, fn in enumerate(steps, 1):
            doc = fn.__name__
            mark = "ok  " if i in self.passed else ("FAIL" if failed and
                                                   i == len(self.passed) + 1 else "--  ")
            self.say("  %s %d. %s" % (mark, i, SUMMARY[i - 1]))
        if failed:
            self.say("FAILED " + failed)
        return 0 if not failed and took < 120 else 1

    def dump_logs(self):
        logs = os.path.join(self.state, "logs")
        if not os.path.isdir(logs):
            return
        for name in sorted(os.listdir(logs)):
            if name.endswith(".log") and ("pilot" in name or "supervisor" in name or
                                          (self.mesh and self.gw["name"] in name)):
                with open(os.path.join(logs, name), "rb") as f:
                    tail = f.read()[-3000:].decode("utf-8", "replace")
                self.say("\n--- tail of %s ---\n%s" % (name, tail))


# weft-pilot's web view (docs/web-view.md) in the local mesh, and what each step shows there
VIEW_URL = "http://127.0.0.1:15014/ui/"
VIEW = [
    "Graph: a red edge istio-ingressgateway -> unknown (503 NC: no cluster took the requests, so "
    "Istio's metrics name no service, destination_service=\"unknown\"; its panel says so); Failed "
    "requests: the gateway's 503 NC cluster_not_found with log explain's explanation",
    "Proxies: every proxy SYNCED for CDS, LDS, EDS and RDS",
    "Validations: IST0101 on VirtualService catalog-v1-v2, its destination line marked; on the "
    "graph the same code on the catalog service node and the edges into it once they carry "
    "traffic (none yet: every request is a 503 NC on the gateway -> unknown edge)",
    "Graph: gateway -> catalog v1 and v2 (grouped under app catalog) green, about 20/80 of the "
    "requests, within a scrape (5 s here); Validations: no error for istioinaction, one warning "
    "stays: IST0162 on Gateway catalog-gateway (from the gateway Service weftctl up writes)",
    "Proxies: the gateway's clusters (version-v1, version-v2) and routes, istioctl's columns",
    "Graph: the gateway -> catalog (service) edge shows the gateway's (source) success rate "
    "below catalog's own (destination), side by side; catalog -> v2 may disagree in rate only "
    "(src N rps | dst M rps); Failed requests: 504 UT explained",
    "Failed requests: the gateway's recent failures, each with its explanation",
    "Failed requests: 507 request_payload_exceeded_retry_buffer_limit explained",
    "Proxies: every proxy connected again and SYNCED; the history (kept in pilot's memory) "
    "begins at the restarted pilot's start, so the outage is not in it",
    "Graph: a lock on the gateway -> catalog edges (mutual TLS); Proxies: the certificates "
    "pilot's CA issued since its restart (older ones show after the proxy's next rotation; "
    "meanwhile CERT EXPIRES is Envoy's whole days, 0 d = under a day)",
]

SUMMARY = [
    "503 at the gateway; its access log says NC cluster_not_found",
    "weftctl proxy-status: every proxy SYNCED",
    "weftctl analyze: IST0101 for version-v1 and version-v2",
    "DestinationRule analyzed clean, applied: 200s split about 20/80",
    "describe pod (v2), proxy-config cluster|route (gateway)",
    "latency blow-up + 0.5 s timeout: 504 UT, log explain, source vs destination metrics",
    "debug log levels and one request traced by connection id",
    "2 MB upload with retries: 507 request_payload_exceeded_retry_buffer_limit, explained",
    "pilot stopped: gateway serves, connected_state 0, not ready through a reconnect loop; "
    "pilot back: SYNCED, ready",
    "mTLS: PeerAuthentication STRICT refuses a plaintext client, the gateway's mTLS gets 200; "
    "why in three commands",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build"),
                    help="folder with weftctl, weft-pilot, weft-proxy, weft-app")
    args = ap.parse_args()
    for prog in ("weftctl", "weft-pilot", "weft-proxy", "weft-app"):
        if not os.access(os.path.join(args.bin, prog), os.X_OK):
            print("demo: %s/%s is missing: build first (make)" % (args.bin, prog),
                  file=sys.stderr)
            return 1
    busy = ports_in_use()
    if busy and os.environ.get("WEFT_DEMO_NETNS") != "1" and private_net_possible():
        # another local mesh holds the ports: run in a network namespace of our own, where
        # 127.0.0.0/8 is ours alone (root only; the demo's mesh is gone at its end anyway)
        print("demo: ports %s in use on this host: running in a private network namespace "
              "(unshare -n)" % ", ".join(map(str, busy)), flush=True)
        env = dict(os.environ, WEFT_DEMO_NETNS="1")
        script = "ip link set lo up && exec /usr/bin/python3 \"$0\" \"$@\""
        return subprocess.call(["unshare", "-n", "/bin/sh", "-c", script, __file__] +
                               sys.argv[1:], env=env)
    if busy:
        print("demo skipped: ports 15010/15012/15014/30000 in use (%s taken): the local mesh needs "
              "them" % ", ".join(map(str, busy)))
        return 0
    demo = Demo(args.bin, os.environ.get("DEMO_PAUSE") == "1")
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    return demo.run()


if __name__ == "__main__":
    sys.exit(main())
