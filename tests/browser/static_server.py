#!/usr/bin/env python3
"""A static stand-in for weft-pilot's web view routes, for the browser tests of ui/ that run
without the mesh (tests/integration/test_ui_static.py).

Serves, on 127.0.0.1 (port 0 = any free one, printed as "listening PORT" on stdout):
- /ui -> 301 /ui/; /ui/ -> ui/index.html; /ui/<path>: files under --ui (no traversal: a path
  leaving the folder is 404), with the content types weft-pilot's ui_static.c gives;
- /ui/api/<name>: --fixtures/<name>.json (graph, validations, proxies, scrape, failed), as the
  contract in docs describes them;
- /debug/config_dump?proxyID=ID[&include_eds]: the --config-dump-for ID=FILE file of that proxy,
  else the --config-dump file (a .yaml dump is answered as JSON; 400 without proxyID, as istiod
  answers);
- test controls: /__test/fail?path=P&status=N&body=TEXT makes path P answer N with TEXT (text/
  plain), /__test/reset undoes it, /__test/requests lists the requests served so far (JSON).
Exits on SIGTERM/SIGINT.
"""
import argparse
import json
import os
import signal
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".json": "application/json", ".map": "application/json", ".svg": "image/svg+xml",
         ".png": "image/png", ".ico": "image/x-icon"}


def load_dump(path):
    """The dump's JSON bytes (a YAML dump, as some of Istio's test data is, converted)."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith((".yaml", ".yml")):
        import yaml
        data = json.dumps(yaml.safe_load(data)).encode()
    return data


class State:
    def __init__(self, ui, fixtures, dump, dump_for):
        self.ui = os.path.realpath(ui)
        self.fixtures = os.path.realpath(fixtures)
        self.dump = load_dump(dump)
        self.dump_for = {k: load_dump(v) for k, v in dump_for.items()}
        self.fail = {}
        self.requests = []
        self.lock = threading.Lock()


def make_handler(st):
    class H(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet
            pass

        def send(self, code, body, ctype="text/plain; charset=utf-8", extra=None):
            data = body if isinstance(body, bytes) else body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            u = urllib.parse.urlsplit(self.path)
            q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
            path = urllib.parse.unquote(u.path)
            if path.startswith("/__test/"):
                return self.control(path, q)
            with st.lock:
                st.requests.append(self.path)
                fail = st.fail.get(path)
            if fail:
                return self.send(fail[0], fail[1])
            if path == "/ui":
                return self.send(301, "", extra={"Location": "/ui/"})
            if path.startswith("/ui/api/"):
                name = path[len("/ui/api/"):]
                f = os.path.join(st.fixtures, name + ".json")
                if "/" in name or not os.path.isfile(f):
                    return self.send(404, "404 page not found\n")
                with open(f, "rb") as fh:
                    return self.send(200, fh.read(), "application/json")
            if path == "/debug/config_dump":
                pid = q.get("proxyID", [""])[0]
                if not pid:
                    return self.send(400, "You must provide a proxyID in the query string\n")
                return self.send(200, st.dump_for.get(pid, st.dump), "application/json")
            if path.startswith("/ui/"):
                rel = path[len("/ui/"):] or "index.html"
                f = os.path.realpath(os.path.join(st.ui, rel))
                if not f.startswith(st.ui + os.sep) or not os.path.isfile(f):
                    return self.send(404, "404 page not found\n")
                with open(f, "rb") as fh:
                    ext = os.path.splitext(f)[1]
                    return self.send(200, fh.read(), TYPES.get(ext, "application/octet-stream"))
            return self.send(404, "404 page not found\n")

        def control(self, path, q):
            with st.lock:
                if path == "/__test/fail":
                    st.fail[q["path"][0]] = (int(q.get("status", ["503"])[0]), q.get("body", [""])[0])
                elif path == "/__test/reset":
                    st.fail.clear()
                elif path == "/__test/requests":
                    return self.send(200, json.dumps(st.requests), "application/json")
                else:
                    return self.send(404, "unknown control\n")
            return self.send(200, "ok\n")

    return H


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ui", required=True, help="the ui/ folder")
    ap.add_argument("--fixtures", required=True, help="folder of <name>.json for /ui/api/<name>")
    ap.add_argument("--config-dump", required=True, help="file answered on /debug/config_dump")
    ap.add_argument("--config-dump-for", action="append", default=[], metavar="ID=FILE",
                    help="the dump answered for proxyID ID (repeatable)")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    dump_for = dict(x.split("=", 1) for x in a.config_dump_for)
    st = State(a.ui, a.fixtures, a.config_dump, dump_for)
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(st))
    srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=srv.shutdown).start())
    print("listening %d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
