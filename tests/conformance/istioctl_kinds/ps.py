"""Runner for the proxy-status and remote-clusters golden cases (run_istioctl_cases.py).

istiod-syncz-xds / istiod-debug-syncz-http: the case input (a map of istiod name -> that
istiod's answer) is given to `weftctl proxy-status --from-file` (weftctl's documented offline
flag). The era picks the table layout: istioctl >= 1.27 prints the SUBSCRIBED TYPES table
(`--table-format types`), older eras the classic nine columns (weftctl's default).

istiod-debug-clusterz-http: `weftctl remote-clusters --from-file` with the case input.

config-dump-pair: a mock weft-pilot (tiny HTTP server) answers /debug/syncz and
/debug/config_dump?proxyID=... with the istiod-side dump; the Envoy side is `--file`, as
istioctl's `ps <pod> --file`.
"""
import http.server
import json
import os
import re
import subprocess
import threading

KINDS = ["istiod-syncz-xds", "istiod-debug-syncz-http", "istiod-debug-clusterz-http",
         "config-dump-pair"]

POD = "productpage-v1-7d4b8c9f5-abcde.default"


def _run(ctx, argv):
    env = dict(os.environ, WEFTCTL_NOW=ctx.now)
    p = subprocess.run([ctx.weftctl] + argv, capture_output=True, text=True, timeout=60,
                       env=env)
    return p.returncode, p.stdout, p.stderr


def _era_flags(case):
    m = re.search(r">=\s*1\.(\d+)", case.get("era", ""))
    return ["--table-format", "types"] if m and int(m.group(1)) >= 27 else []


class _Pilot(http.server.BaseHTTPRequestHandler):
    dump = b"{}"

    def do_GET(self):
        if self.path == "/debug/syncz":
            body = json.dumps([{"proxy": POD, "connected": True, "proxy_type": "sidecar",
                                "admin": "127.0.0.1:1"}]).encode()
        elif self.path.startswith("/debug/config_dump?proxyID=" + POD):
            body = self.dump
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def _run_pair(case, ctx):
    handler = type("Pilot", (_Pilot,), {})
    with open(ctx.path(case["inputs"]["istiod_config_dump"]), "rb") as f:
        handler.dump = f.read()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        args = [POD if a == "<pod>" else a for a in case.get("args", [])]
        return _run(ctx, ["proxy-status"] + args + case.get("flags", []) +
                    ["--pilot", "127.0.0.1:%d" % srv.server_address[1],
                     "--file", ctx.path(case["inputs"]["envoy_config_dump"])])
    finally:
        srv.shutdown()
        srv.server_close()


def run(case, ctx):
    kind = case["input_kind"]
    if kind == "config-dump-pair":
        return _run_pair(case, ctx)
    if kind == "istiod-debug-clusterz-http":
        return _run(ctx, ["remote-clusters", "--from-file", ctx.path(case["input"])] +
                    case.get("args", []) + case.get("flags", []))
    return _run(ctx, ["proxy-status"] + case.get("args", []) + case.get("flags", []) +
                _era_flags(case) + ["--from-file", ctx.path(case["input"])])
