#!/usr/bin/env python3
"""A web application that knows nothing of weft, for the capture tests (test_localmesh_capture.py).

It uses plain urllib with no proxy settings: GET /fetch?URL fetches URL and answers with the
status and body it got (599 and the error text when the fetch itself failed: refused, reset,
no such name); GET /api/catalog fetches http://catalog.istioinaction/items. Whether the request
went through a sidecar is for the mesh to decide: capture redirects it, the DNS proxy answers
the names. `weftctl up` appends --listen ADDR:PORT --pod NAME (the image map's contract).
"""
import argparse
import http.server
import json
import socketserver
import urllib.error
import urllib.parse
import urllib.request

CATALOG = "http://catalog.istioinaction/items"


def fetch(url):
    req = urllib.request.Request(url)
    try:
        # no proxy settings, whatever the environment says: the app is "unmodified"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # refused, reset, timeout, unknown name
        return 599, ("error: %s" % e).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", action="append", required=True)
    ap.add_argument("--pod", default="")
    a = ap.parse_args()
    host, port = a.listen[0].rsplit(":", 1)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/api/catalog":
                code, body = fetch(CATALOG)
            elif self.path.startswith("/fetch?"):
                code, body = fetch(urllib.parse.unquote(self.path[len("/fetch?"):]))
            else:
                code, body = 200, json.dumps({"pod": a.pod}).encode()
            self.send_response(code)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    print("listening on %s:%s" % (host, port), flush=True)
    Server((host, int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main()
