#!/usr/bin/python3
"""kubeapi.py - a test double of kube-apiserver for weft's tests (../shared/reference/
kubernetes.md §5.2 items 1-7): discovery, list/get/create/update/patch/delete for the kinds in
resources.py, a global strictly increasing resourceVersion, paging with 410 for stale continue
tokens, watch (§1.4: chunked newline-delimited events, synthetic ADDED, bookmarks,
timeoutSeconds, a bounded history and the in-stream ERROR 410 Expired, watch-list), label and
field selectors, Status bodies for every error, bearer-token and client-certificate auth, TLS,
the in-cluster files, the pods/services `proxy` subresource (proxy.py); /openapi/v2 for
kubectl (openapi.py), dryRun=All (Store.create's dry_run), CRDs that make their kind servable (crd.py) and
the admission webhooks called as kube-apiserver calls them (admission.py), TokenRequest and
TokenReview (tokens.py).

Usage: kubeapi.py [--port N] [--bind ADDR] [--token T]... [--tls-cert F --tls-key F]
                  [--client-ca F] [--history N] [--state FILE] [--incluster-root DIR]
Prints "kubeapi listening on http[s]://ADDR:PORT" on stdout once it serves. SIGTERM/SIGINT end
it (saving --state when given, reloaded at the next start: a restarted server keeps its objects
and resourceVersion but has no watch history). Test-only endpoints (no auth): POST
/_test/compact (forget all history: older watches and continue tokens get 410), POST
/_test/close-watches (end every open watch stream cleanly), POST /_test/expire (the
resourceVersion moves on, history is compacted and open watches end: watching again from an
older resourceVersion gets the in-stream ERROR 410 Expired), GET /_test/stats (continue tokens
refused as expired, the resourceVersion).
"""

import argparse
import copy
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import admission  # noqa: E402
import crd  # noqa: E402
import openapi  # noqa: E402
import patch  # noqa: E402
import proxy  # noqa: E402
import resources  # noqa: E402
import tokens  # noqa: E402
import labelsel as ksel  # noqa: E402
from store import ApiError, Store  # noqa: E402

GIT_VERSION = "v1.30.0-weft-test"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        if self.opts.verbose:
            super().handle_error(request, client_address)

    def __init__(self, addr, opts):
        self.opts = opts
        self.store = Store(history=opts.history)
        self.bookmark_s = opts.bookmark_interval
        self.admission = admission.Admission(self.store,
                                             admission.parse_proxies(opts.service_proxy))
        super().__init__(addr, Handler)


def _versioned(obj, res, version):
    o = obj
    o["apiVersion"] = resources.api_version(res.group, version)
    o["kind"] = res.kind
    return o


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "weft-kubeapi"
    # TCP_NODELAY, as Go's net package sets on every connection kube-apiserver accepts: headers
    # and body go out in two writes, and Nagle held the body for the client's delayed ACK (40 ms
    # a request on a kept-alive connection; watch events waited likewise)
    disable_nagle_algorithm = True

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def log_message(self, fmt, *args):
        if self.server.opts.verbose:
            sys.stderr.write("kubeapi: %s\n" % (fmt % args))

    # ---- responses ---------------------------------------------------------------------------
    def send_json(self, code, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error_status(self, e):
        self.send_json(e.code, e.status(), e.headers)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        return self.rfile.read(n) if n else b""

    # ---- auth --------------------------------------------------------------------------------
    def authenticated(self):
        opts = self.server.opts
        if not opts.token and not opts.client_ca:
            return True
        auth = self.headers.get("Authorization", "")
        # the scheme is case-insensitive, as kube-apiserver's bearer token authenticator reads
        # it (python3-kubernetes' in-cluster loader sends "bearer")
        scheme, _, cred = auth.partition(" ")
        if opts.token and scheme.lower() == "bearer" and cred.strip() in self.server.tokens():
            return True
        if opts.client_ca and hasattr(self.connection, "getpeercert"):
            if self.connection.getpeercert():
                return True
        return False

    # ---- dispatch ----------------------------------------------------------------------------
    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_PATCH(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def dispatch(self):
        u = urllib.parse.urlsplit(self.path)
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        parts = [p for p in u.path.split("/") if p]
        try:
            if parts[:1] == ["_test"]:
                if tokens.test_control(self, parts[1:], q):
                    return
                return self.test_control(parts[1:])
            if not self.authenticated():
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if self.command == "GET" and self.discovery(parts):
                return
            if proxy.handle(self, parts, u.query):  # pods|services/NAME[:PORT]/proxy/...
                return
            if tokens.handle(self, parts):  # serviceaccounts/SA/token, tokenreviews
                return
            self.resource_request(parts, q)
        except ApiError as e:
            self.read_body_quietly()
            self.send_error_status(e)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def read_body_quietly(self):
        try:
            if not getattr(self, "_body_read", False):
                self._body_read = True
                self.read_body()
        except Exception:
            self.close_connection = True

    def test_control(self, parts):
        st = self.server.store
        if self.command == "POST" and parts == ["compact"]:
            st.compact()
        elif self.command == "POST" and parts == ["close-watches"]:
            st.close_watches()
        elif self.command == "POST" and parts == ["expire"]:
            st.expire()
        elif self.command == "GET" and parts == ["stats"]:
            self.read_body_quietly()
            return self.send_json(200, dict(st.stats, resourceVersion=str(st.rv)))
        elif self.command == "GET" and parts == ["admission-calls"]:
            self.read_body_quietly()
            with self.server.admission.lock:
                return self.send_json(200, {"calls": list(self.server.admission.calls)})
        elif self.command == "GET" and parts == ["rv"]:
            pass
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        self.read_body_quietly()
        self.send_json(200, {"resourceVersion": str(st.rv)})

    # ---- discovery (§5.2 item 1) -------------------------------------------------------------
    def discovery(self, parts):
        # Aggregated-discovery Accept headers get plain JSON: clients check Content-Type and
        # fall back to per-group discovery.
        if tokens.discovery(self, parts):
            return True
        if parts == ["version"]:
            self.send_json(200, {"major": "1", "minor": "30", "gitVersion": GIT_VERSION,
                                 "gitCommit": "0", "gitTreeState": "clean",
                                 "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.22",
                                 "compiler": "gc", "platform": "linux/amd64"})
        elif parts == ["api"]:
            self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                 "serverAddressByClientCIDRs": [
                                     {"clientCIDR": "0.0.0.0/0",
                                      "serverAddress": self.server.opts.advertise}]})
        elif parts == ["apis"]:
            groups = []
            for g, vs in list(resources.groups().items()) + list(tokens.groups().items()):
                gvs = [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in vs]
                groups.append({"name": g, "versions": gvs, "preferredVersion": gvs[0]})
            self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        elif len(parts) == 2 and parts[0] == "api" and parts[1] == "v1":
            self.send_json(200, self.resource_list("", "v1"))
        elif len(parts) == 2 and parts[0] == "apis" and parts[1] in resources.groups():
            g = parts[1]
            gvs = [{"groupVersion": "%s/%s" % (g, v), "version": v}
                   for v in resources.groups()[g]]
            self.send_json(200, {"kind": "APIGroup", "apiVersion": "v1", "name": g,
                                 "versions": gvs, "preferredVersion": gvs[0]})
        elif len(parts) == 3 and parts[0] == "apis" and \
                parts[2] in resources.groups().get(parts[1], []):
            self.send_json(200, self.resource_list(parts[1], parts[2]))
        elif openapi.serve(self, parts, GIT_VERSION):
            pass
        elif parts[:1] in (["openapi"], ["swagger.json"]):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        else:
            return False
        return True

    @staticmethod
    def resource_list(group, version):
        out = []
        for r in resources.RESOURCES:
            if r.group != group or version not in r.versions:
                continue
            verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                     "watch"]
            out.append({"name": r.resource, "singularName": r.kind.lower(),
                        "namespaced": r.namespaced, "kind": r.kind, "verbs": verbs,
                        "shortNames": list(r.short)})
            if r.resource in ("pods", "services", "namespaces", "nodes") or \
                    group not in resources.BUILTIN_GROUPS:
                out.append({"name": r.resource + "/status", "singularName": "",
                            "namespaced": r.namespaced, "kind": r.kind,
                            "verbs": ["get", "patch", "update"]})
        out += tokens.resource_list(group, version)
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": resources.api_version(group, version), "resources": out}

    # ---- resources (§5.2 items 2-6) ----------------------------------------------------------
    def parse_path(self, parts):
        """(res, version, namespace or None, name or None, subresource or None)."""
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        res = resources.find(group, version, rest[0])
        if res is None or (ns is not None and not res.namespaced):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub not in (None, "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return res, version, ns, name, sub

    def resource_request(self, parts, q):
        res, version, ns, name, sub = self.parse_path(parts)
        st = self.server.store
        m = self.command
        if m == "GET" and name is None:
            if q.get("watch") in ("1", "true", "True"):
                return self.watch(res, version, ns, q)
            return self.list(res, version, ns, q)
        if m == "GET":
            return self.send_json(200, _versioned(st.get(res, ns, name), res, version))
        dry = q.get("dryRun") == "All"  # validated and answered, never stored
        if m == "POST" and name is None:
            obj, warn = self.admit("CREATE", res, version, ns, self.body_json(), None, None, dry)
            created = st.create(res, ns, obj, dry_run=dry)
            if not dry and res.resource == "customresourcedefinitions":
                crd.register(created)
            return self.send_json(201, _versioned(created, res, version), warn)
        if m == "PUT" and name:
            obj = self.body_json()
            obj, warn = self.admit("UPDATE", res, version, ns, obj, st.get(res, ns, name), sub,
                                   dry)
            if dry:
                return self.send_json(200, _versioned(obj, res, version), warn)
            return self.send_json(200, _versioned(st.update(res, ns, name, obj, sub), res,
                                                  version), warn)
        if m == "PATCH" and name:
            return self.patch(res, version, ns, name, sub, q)
        if m == "DELETE" and name:
            self.read_body_quietly()
            if dry:
                return self.send_json(200, _versioned(st.get(res, ns, name), res, version))
            return self.send_json(200, _versioned(st.delete(res, ns, name), res, version))
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the "
                       "requested resource")

    def admit(self, op, res, version, ns, obj, old, sub, dry):
        """The admission webhooks (admission.py): (object to store, Warning headers)."""
        if res.namespaced and ns:
            obj.setdefault("metadata", {}).setdefault("namespace", ns)
        obj, warnings = self.server.admission.admit(op, res, version, ns, obj, old, sub, dry)
        return obj, admission.warning_header(warnings)

    def body_json(self):
        raw = self.read_body()
        self._body_read = True
        try:
            obj = json.loads(raw or b"{}")
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the object provided is unrecognized: %s" % e)
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the object provided is unrecognized")
        return obj

    def predicate(self, res, q):
        try:
            lab = ksel.parse_labels(q.get("labelSelector", ""))
            fld = ksel.parse_fields(q.get("fieldSelector", ""), res)
        except ksel.SelectorError as e:
            raise ApiError(400, "BadRequest", str(e))
        return lambda o: lab(o.get("metadata", {}).get("labels")) and fld(o)

    def list(self, res, version, ns, q):
        pred = self.predicate(res, q)
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise ApiError(400, "BadRequest", "limit: invalid value")
        cont = q.get("continue") or None
        if cont and q.get("resourceVersion") not in (None, "", "0"):
            raise ApiError(400, "BadRequest", "specifying resource version is not allowed when "
                           "using continue")
        items, rv, token, remaining = self.server.store.list(res, ns, pred, limit, cont)
        for o in items:  # built-in list items come without kind/apiVersion (§1.1)
            if res.group in resources.BUILTIN_GROUPS:
                o.pop("kind", None)
                o.pop("apiVersion", None)
            else:
                _versioned(o, res, version)
        md = {"resourceVersion": rv}
        if token:
            md["continue"] = token
            md["remainingItemCount"] = remaining
        self.send_json(200, {"kind": res.kind + "List",
                             "apiVersion": resources.api_version(res.group, version),
                             "metadata": md, "items": items})

    def patch(self, res, version, ns, name, sub, q):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        raw = self.read_body()
        self._body_read = True
        st = self.server.store
        try:
            cur = st.get(res, ns, name)
            exists = True
        except ApiError as e:
            if e.code != 404 or ctype != "application/apply-patch+yaml":
                raise
            cur, exists = {}, False
        if ctype == "application/apply-patch+yaml" and not q.get("fieldManager"):
            raise ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: '
                           'fieldManager: Required value: is required for apply patch')
        new = patch.apply(ctype, cur, raw, res)
        new.setdefault("metadata", {}).setdefault("name", name)
        new, warn = self.admit("UPDATE" if exists else "CREATE", res, version, ns, new,
                               cur if exists else None, sub, q.get("dryRun") == "All")
        if q.get("dryRun") == "All":
            new.setdefault("metadata", {}).setdefault("name", name)
            return self.send_json(200 if exists else 201, _versioned(new, res, version), warn)
        if not exists:
            new.setdefault("metadata", {})["name"] = name
            created = st.create(res, ns, new)
            if res.resource == "customresourcedefinitions":
                crd.register(created)
            return self.send_json(201, _versioned(created, res, version), warn)
        new.setdefault("metadata", {}).pop("resourceVersion", None)
        if sub == "status":
            new = {"metadata": {}, "status": new.get("status")}
        self.send_json(200, _versioned(st.update(res, ns, name, new, sub), res, version), warn)

    # ---- watch (§1.4) ------------------------------------------------------------------------
    def watch(self, res, version, ns, q):
        st = self.server.store
        pred_obj = self.predicate(res, q)

        def pred(o):
            return o is not None and (ns is None or o["metadata"].get("namespace") == ns) and \
                pred_obj(o)

        rv_s = q.get("resourceVersion", "")
        initial = q.get("sendInitialEvents") in ("true", "1")
        if initial and q.get("resourceVersionMatch") != "NotOlderThan":
            raise ApiError(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                           "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for "
                           "watch unless resourceVersionMatch is set to NotOlderThan")
        try:
            rv = int(rv_s) if rv_s not in ("", "0") else None
        except ValueError:
            raise ApiError(400, "BadRequest", 'invalid resource version "%s"' % rv_s)
        timeout = float(q.get("timeoutSeconds") or self.server.opts.max_watch_seconds)
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        deadline = time.monotonic() + timeout
        gen = st.closed_gen

        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

        def emit(typ, obj):
            line = json.dumps({"type": typ, "object": obj}).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()

        def bookmark(rv_now, initial_end=False):
            md = {"resourceVersion": str(rv_now)}
            if initial_end:
                md["annotations"] = {"k8s.io/initial-events-end": "true"}
            emit("BOOKMARK", {"kind": res.kind,
                              "apiVersion": resources.api_version(res.group, version),
                              "metadata": md})

        try:
            if rv is None or initial:
                items, lrv, _, _ = st.list(res, ns, pred_obj, 0, None)
                if rv is None or initial:
                    for o in items:
                        emit("ADDED", _versioned(o, res, version))
                rv = int(lrv)
                if initial:
                    bookmark(rv, True)
            last_bm = time.monotonic()
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    evs, now_rv, closed = st.events_after((res.group, res.resource), rv,
                                                          min(left, 0.5), gen)
                except ApiError as e:
                    emit("ERROR", e.status())
                    break
                for e in evs:
                    was, now = pred(e.prev), pred(e.obj)
                    typ = e.type
                    if typ == "MODIFIED" and was and not now:
                        typ = "DELETED"
                    elif typ == "MODIFIED" and not was and now:
                        typ = "ADDED"
                    elif typ == "DELETED":
                        now = was
                    if now or (typ == "DELETED" and was):
                        emit(typ, _versioned(copy.deepcopy(e.obj), res, version))
                    rv = e.rv
                if closed:
                    break
                if bookmarks and time.monotonic() - last_bm >= self.server.bookmark_s:
                    rv = max(rv, now_rv)  # every event of this kind up to now_rv was seen
                    bookmark(rv)
                    last_bm = time.monotonic()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        self.close_connection = True


def write_incluster(root, token, ca_file, namespace):
    d = os.path.join(root, "var/run/secrets/kubernetes.io/serviceaccount")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "token"), "w") as f:
        f.write(token)
    with open(os.path.join(d, "namespace"), "w") as f:
        f.write(namespace)
    if ca_file:
        with open(ca_file) as src, open(os.path.join(d, "ca.crt"), "w") as f:
            f.write(src.read())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--token", action="append", default=[],
                    help="accepted bearer token (repeatable); none = no auth")
    ap.add_argument("--token-file", help="file of accepted tokens, one a line, re-read per "
                    "request (token rotation tests)")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA")
    ap.add_argument("--history", type=int, default=1000, help="watch events kept")
    ap.add_argument("--bookmark-interval", type=float, default=1.0,
                    help="seconds between bookmarks of an idle watch")
    ap.add_argument("--max-watch-seconds", type=float, default=1800.0,
                    help="a watch's length when the client sets no timeoutSeconds")
    ap.add_argument("--expire-continue", type=int, default=0,
                    help="the first N continue tokens used answer 410 Expired (as after an etcd "
                    "compaction between two pages)")
    ap.add_argument("--state", help="JSON file: loaded at start when present, saved at exit")
    ap.add_argument("--incluster-root", help="write the service-account token, ca.crt and "
                    "namespace files under DIR/var/run/secrets/kubernetes.io/serviceaccount")
    ap.add_argument("--incluster-ca", help="the CA file written as ca.crt there")
    ap.add_argument("--service-proxy", action="append", default=[], metavar="NS/NAME:PORT=IP:PORT",
                    help="where a webhook's clientConfig.service is reached (repeatable), e.g. "
                    "istio-system/istiod:443=127.0.0.1:15017")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args(argv)
    if opts.token_file:
        opts.token = opts.token or ["-"]
    tls = bool(opts.tls_cert)
    opts.advertise = "%s:%d" % (opts.bind, opts.port)
    srv = Server((opts.bind, opts.port), opts)

    def tokens():
        toks = set(opts.token)
        if opts.token_file and os.path.exists(opts.token_file):
            with open(opts.token_file) as f:
                toks |= {ln.strip() for ln in f if ln.strip()}
        return toks

    srv.tokens = tokens
    srv.store.expire_continues = opts.expire_continue
    if opts.state and os.path.exists(opts.state):
        with open(opts.state) as f:
            srv.store.load(json.load(f))
        for o in srv.store.objs.get(("apiextensions.k8s.io", "customresourcedefinitions"),
                                    {}).values():
            crd.register(o)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opts.tls_cert, opts.tls_key)
        if opts.client_ca:
            ctx.load_verify_locations(opts.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        # The handshake runs in the request's thread (Handler.setup), not in the accept loop.
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True,
                                     do_handshake_on_connect=False)
    port = srv.server_address[1]
    opts.advertise = "%s:%d" % (opts.bind, port)
    if opts.incluster_root:
        write_incluster(opts.incluster_root, (opts.token or ["none"])[0], opts.incluster_ca,
                        "default")

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("kubeapi listening on %s://%s:%d" % ("https" if tls else "http", opts.bind, port),
          flush=True)
    srv.serve_forever(poll_interval=0.2)
    srv.store.close_watches()
    if opts.state:
        tmp = opts.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(srv.store.dump(), f)
        os.replace(tmp, opts.state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
