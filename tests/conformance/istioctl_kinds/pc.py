"""Runner for the `proxy-config` cases of the istioctl golden corpus (run_istioctl_cases.py).

Kinds:
  envoy-config-dump, envoy-admin-clusters-json: the input file is passed with the case's
      input_flag (-f), as `istioctl proxy-config ... -f FILE` reads it.
  envoy-admin-logging-response: `pc log POD` needs a live proxy. run() starts a mock on
      127.0.0.1 that plays both weft-pilot (GET /debug/syncz lists the pod, its admin address
      pointing back at the mock) and the proxy's admin API (GET/POST /logging answer the
      case's live_admin_responses file), then points weftctl at it with --pilot.

Time-dependent cases get the runner's fixed clock through $WEFTCTL_NOW.
"""
import http.server
import json
import os
import subprocess
import threading

KINDS = ["envoy-config-dump", "envoy-admin-clusters-json", "envoy-admin-logging-response"]


class _MockHandler(http.server.BaseHTTPRequestHandler):
    """Answers from self.server.routes: {(METHOD, path-without-query): (status, body)}."""

    def _answer(self):
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        status, body = self.server.routes.get((self.command, path), (404, b"not found\n"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *args):  # keep the runner's output clean
        pass


def _start_mock(case, ctx):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MockHandler)
    addr = "127.0.0.1:%d" % srv.server_address[1]
    pod = case["args"][0]
    ns = "default"
    srv.routes = {
        ("GET", "/debug/syncz"): (200, json.dumps([{
            "proxy": "%s.%s" % (pod, ns), "proxy_type": "sidecar", "connected": True,
            "admin": addr}]).encode()),
    }
    for key, rel in case.get("live_admin_responses", {}).items():
        methods, _, name = key.partition(" ")
        with open(ctx.path(rel), "rb") as f:
            body = f.read()
        for m in methods.split("/"):
            srv.routes[(m, "/" + name)] = (200, body)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, addr


def run(case, ctx):
    argv = [ctx.weftctl] + case["command"].split() + list(case.get("args", [])) + \
        list(case.get("flags", []))
    env = dict(os.environ)
    env["WEFTCTL_NOW"] = ctx.now
    srv = None
    if case.get("input_flag"):
        argv += [case["input_flag"], ctx.path(case["input"])]
    if case.get("live_admin_responses"):
        srv, addr = _start_mock(case, ctx)
        argv += ["--pilot", addr]
    try:
        p = subprocess.run(argv, capture_output=True, timeout=60, env=env, check=False)
    finally:
        if srv:
            srv.shutdown()
            srv.server_close()
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))
