"""Shared helpers for weft-proxy integration tests: an Envoy v3 bootstrap builder and a
running-proxy handle.

Building a bootstrap (plain dicts in Envoy v3 JSON shape, so a test can still edit them):

    from proxyfix import (bootstrap, listener, route_config, vhost, route, cluster,
                          endpoint, access_log, start_proxy)

    rc = route_config([vhost("all", ["*"], [route(prefix="/", cluster="backend")])])
    bs = bootstrap(listeners=[listener(rc, access_logs=[access_log()])],
                   clusters=[cluster("backend", [app_port])])
    proxy = start_proxy(bs)            # or use the `proxy_factory` fixture (stops for you)
    status, headers, body = proxy.request("GET", "/echo")
    proxy.stop()

- `listener(route_config, port=None, stat_prefix="ingress_http", ...)`: port None means
  "pick a free port at start" (see `Proxy.port` / `Proxy.ports`). The HTTP connection
  manager has the router filter and the inline route configuration.
- `route(...)`: match on `prefix` / `path` / `regex` (safe_regex) / `headers` (list of
  HeaderMatcher dicts, see `header_match`); action `cluster` / `weighted` ([(name, weight)])
  with `timeout`, `prefix_rewrite`, `host_rewrite`, or `direct=(status, body)`, or
  `redirect={...}` (Envoy RedirectAction fields).
- header operations on route, vhost and route_config: `req_add` / `resp_add` (dict name ->
  value, or list of (name, value[, append_action])), `req_remove` / `resp_remove` (names).
- `access_log(path=LOG, fmt=None, json_format=None)`: a file access log. fmt None = Envoy's
  default text format (no log_format at all); `ISTIO_TEXT_FORMAT` is Istio's default text
  format (reference §5.2); `json_format=ISTIO_JSON_FORMAT` is Istio's JSON map (§5.3).
  The path `LOG` ("@LOG@") is replaced at start by `<proxy tmpdir>/access.log`; "@LOG:x@"
  by `<tmpdir>/x.log` (read with `proxy.access_log_lines(n, name="x")`).
- `cluster(name, endpoints, lb_policy=None, connect_timeout=None, circuit_breakers=None,
  idle_timeout=None, max_requests_per_connection=None, typed_options=False)`: a STATIC
  cluster; an endpoint is a port (on 127.0.0.1), (host, port), or
  `endpoint(port, health=..., weight=...)`.
- `bootstrap(listeners, clusters, admin_port=None)`: admin port None = free port at start.
- `simple_routes(cluster_name="backend", timeout=None, name="default")`: vhost "*" with one
  route "/" to one cluster. `write_bootstrap(bs, dir)` writes a bootstrap for CLI tests
  (fixed ports must then be given: `listener(..., port=P)`, `bootstrap(..., admin_port=Q)`).
- `ENVOY_TEXT_RE` / `ISTIO_TEXT_RE`: regexes for one line of the Envoy default / Istio text
  format, with groups named after Istio's JSON keys (`response_flags`, `upstream_host`...).

Running: `start_proxy(bs, args=(), concurrency=1, flush_ms=50)` writes the bootstrap to a
temporary directory, starts $WEFT_PROXY (default build/weft-proxy) with
`-c FILE --concurrency 1 --file-flush-interval-msec 50` plus `args`, and waits until admin
`/ready` answers 200 (a start that fails because a picked port was taken meanwhile is
retried with new ports). The returned `Proxy` gives:
    proxy.port / proxy.ports[name]      listener ports; proxy.admin_port
    proxy.url(path)                     "http://127.0.0.1:PORT/path"
    proxy.request(method, path, headers=None, body=None, port=None, timeout=10)
        -> (status, headers dict with lower-case names, body bytes), on a fresh connection
           (repeated headers joined with ","); Host is 127.0.0.1:PORT unless given
    proxy.stats() -> {name: value} from /stats?format=json (counters and gauges)
    proxy.admin(path, method="GET") -> (status, headers, body bytes)
    proxy.access_log_lines(n, timeout=5, name=None) -> first n lines (str, no newline),
        waiting until the file has n lines; AssertionError with what was there otherwise
    proxy.stop(expect=0) -> exit status: SIGTERM, wait, assert the status (unless expect is
        None) and that stderr holds no sanitizer report
    proxy.wait_stat(name, value, timeout=5) -> stats dict once stats()[name] == value
    proxy.connect() -> a raw socket to the listener (timeout set; the caller closes it)
    proxy.stderr_text()
The `proxy_factory` fixture (import it into a test module: `from proxyfix import
proxy_factory`) starts proxies and stops every one at teardown, asserting a clean exit.

Standard library plus pytest; every socket operation and wait has a timeout.
"""
import copy
import http.client
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from procs import CRASH_MARKERS, ROOT, free_port

LOG = "@LOG@"

HCM_TYPE = ("type.googleapis.com/"
            "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
ROUTER_TYPE = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
FILE_LOG_TYPE = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
HPO_NAME = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

# Reference §5.1: Envoy's default text format (used when a logger has no format).
ENVOY_DEFAULT_FORMAT = (
    '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" '
    '%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% '
    '%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" '
    '"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"\n')

# Reference §5.2: Istio's default text format.
ISTIO_TEXT_FORMAT = (
    '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" '
    '%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% '
    '"%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% '
    '%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" '
    '"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER_RAW% '
    '%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% '
    '%REQUESTED_SERVER_NAME% %ROUTE_NAME%\n')

# Regex for one line of ISTIO_TEXT_FORMAT; groups named after Istio's JSON keys.
ISTIO_TEXT_RE = re.compile(
    r'^\[(?P<start_time>[^\]]+)\] "(?P<method>\S+) (?P<path>\S+) (?P<protocol>[^"]+)" '
    r'(?P<response_code>\d+) (?P<response_flags>\S+) (?P<response_code_details>\S+) '
    r'(?P<connection_termination_details>\S+) "(?P<upstream_transport_failure_reason>[^"]*)" '
    r'(?P<bytes_received>\d+) (?P<bytes_sent>\d+) (?P<duration>\d+) '
    r'(?P<upstream_service_time>\S+) "(?P<x_forwarded_for>[^"]*)" "(?P<user_agent>[^"]*)" '
    r'"(?P<request_id>[^"]*)" "(?P<authority>[^"]*)" "(?P<upstream_host>[^"]*)" '
    r'(?P<upstream_cluster>\S+) (?P<upstream_local_address>\S+) '
    r'(?P<downstream_local_address>\S+) (?P<downstream_remote_address>\S+) '
    r'(?P<requested_server_name>\S+) (?P<route_name>\S+)$')

# Regex for one line of ENVOY_DEFAULT_FORMAT.
ENVOY_TEXT_RE = re.compile(
    r'^\[(?P<start_time>[^\]]+)\] "(?P<method>\S+) (?P<path>\S+) (?P<protocol>[^"]+)" '
    r'(?P<response_code>\d+) (?P<response_flags>\S+) (?P<bytes_received>\d+) '
    r'(?P<bytes_sent>\d+) (?P<duration>\d+) (?P<upstream_service_time>\S+) '
    r'"(?P<x_forwarded_for>[^"]*)" "(?P<user_agent>[^"]*)" "(?P<request_id>[^"]*)" '
    r'"(?P<authority>[^"]*)" "(?P<upstream_host>[^"]*)"$')

# Reference §5.3: Istio's JSON access-log map.
ISTIO_JSON_FORMAT = {
    "start_time": "%START_TIME%",
    "route_name": "%ROUTE_NAME%",
    "method": "%REQ(:METHOD)%",
    "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
    "protocol": "%PROTOCOL%",
    "response_code": "%RESPONSE_CODE%",
    "response_flags": "%RESPONSE_FLAGS%",
    "response_code_details": "%RESPONSE_CODE_DETAILS%",
    "connection_termination_details": "%CONNECTION_TERMINATION_DETAILS%",
    "bytes_received": "%BYTES_RECEIVED%",
    "bytes_sent": "%BYTES_SENT%",
    "duration": "%DURATION%",
    "upstream_service_time": "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
    "x_forwarded_for": "%REQ(X-FORWARDED-FOR)%",
    "user_agent": "%REQ(USER-AGENT)%",
    "request_id": "%REQ(X-REQUEST-ID)%",
    "authority": "%REQ(:AUTHORITY)%",
    "upstream_host": "%UPSTREAM_HOST%",
    "upstream_cluster": "%UPSTREAM_CLUSTER_RAW%",
    "upstream_local_address": "%UPSTREAM_LOCAL_ADDRESS%",
    "downstream_local_address": "%DOWNSTREAM_LOCAL_ADDRESS%",
    "downstream_remote_address": "%DOWNSTREAM_REMOTE_ADDRESS%",
    "requested_server_name": "%REQUESTED_SERVER_NAME%",
    "upstream_transport_failure_reason": "%UPSTREAM_TRANSPORT_FAILURE_REASON%",
}


def proxy_path():
    """Absolute path of the weft-proxy under test ($WEFT_PROXY, else build/weft-proxy)."""
    return os.path.abspath(os.environ.get("WEFT_PROXY")
                           or os.path.join(ROOT, "build", "weft-proxy"))


def _dur(v):
    """Seconds (number) or an Envoy duration string ("0.2s") -> duration string."""
    if v is None or isinstance(v, str):
        return v
    return "%.3fs" % v


# ---------- header operations ----------

def _adds(spec):
    """dict or list of (key, value[, append_action]) -> [HeaderValueOption]."""
    if spec is None:
        return None
    items = spec.items() if isinstance(spec, dict) else spec
    out = []
    for it in items:
        k, v = it[0], it[1]
        o = {"header": {"key": k, "value": v}}
        if len(it) > 2 and it[2] is not None:
            o["append_action"] = it[2]
        out.append(o)
    return out


def _header_ops(d, req_add=None, req_remove=None, resp_add=None, resp_remove=None):
    if req_add is not None:
        d["request_headers_to_add"] = _adds(req_add)
    if req_remove is not None:
        d["request_headers_to_remove"] = list(req_remove)
    if resp_add is not None:
        d["response_headers_to_add"] = _adds(resp_add)
    if resp_remove is not None:
        d["response_headers_to_remove"] = list(resp_remove)
    return d


# ---------- routes ----------

def header_match(name, exact=None, prefix=None, suffix=None, contains=None, regex=None,
                 present=None, invert=False):
    """A route HeaderMatcher (string_match form; present=True/False for presence)."""
    m = {"name": name}
    sm = None
    if exact is not None:
        sm = {"exact": exact}
    elif prefix is not None:
        sm = {"prefix": prefix}
    elif suffix is not None:
        sm = {"suffix": suffix}
    elif contains is not None:
        sm = {"contains": contains}
    elif regex is not None:
        sm = {"safe_regex": {"regex": regex}}
    if sm is not None:
        m["string_match"] = sm
    elif present is not None:
        m["present_match"] = present
    if invert:
        m["invert_match"] = True
    return m


def route(prefix=None, path=None, regex=None, headers=None, cluster=None, weighted=None,
          timeout=None, prefix_rewrite=None, host_rewrite=None, direct=None, redirect=None,
          name=None, case_sensitive=None, retry_policy=None, **header_ops):
    """One Route. Exactly one of cluster / weighted / direct / redirect.

    weighted: [(cluster_name, weight), ...]; timeout: seconds or "0.2s" (0 = none);
    direct: (status, body or None); redirect: RedirectAction dict.
    header_ops: req_add, req_remove, resp_add, resp_remove.
    """
    match = {}
    if path is not None:
        match["path"] = path
    elif regex is not None:
        match["safe_regex"] = {"regex": regex}
    else:
        match["prefix"] = "/" if prefix is None else prefix
    if headers:
        match["headers"] = list(headers)
    if case_sensitive is not None:
        match["case_sensitive"] = case_sensitive
    r = {"match": match}
    if name is not None:
        r["name"] = name
    if direct is not None:
        status, body = direct
        r["direct_response"] = {"status": status}
        if body is not None:
            r["direct_response"]["body"] = {"inline_string": body}
    elif redirect is not None:
        r["redirect"] = dict(redirect)
    else:
        act = {}
        if weighted is not None:
            act["weighted_clusters"] = {"clusters": [{"name": n, "weight": w}
                                                     for n, w in weighted]}
        else:
            act["cluster"] = cluster
        if timeout is not None:
            act["timeout"] = _dur(timeout)
        if prefix_rewrite is not None:
            act["prefix_rewrite"] = prefix_rewrite
        if host_rewrite is not None:
            act["host_rewrite_literal"] = host_rewrite
        if retry_policy is not None:
            act["retry_policy"] = retry_policy
        r["route"] = act
    return _header_ops(r, **header_ops)


def vhost(name, domains, routes, **header_ops):
    """One VirtualHost; header_ops as for route()."""
    return _header_ops({"name": name, "domains": list(domains), "routes": list(routes)},
                       **header_ops)


def route_config(vhosts, name="local_route", ignore_port_in_host_matching=None, **header_ops):
    """An inline RouteConfiguration; header_ops as for route()."""
    rc = {"name": name, "virtual_hosts": list(vhosts)}
    if ignore_port_in_host_matching is not None:
        rc["ignore_port_in_host_matching"] = ignore_port_in_host_matching
    return _header_ops(rc, **header_ops)


def simple_routes(cluster_name="backend", timeout=None, name="default"):
    """A route configuration sending everything to one cluster (vhost "*")."""
    return route_config([vhost("all", ["*"], [route(prefix="/", cluster=cluster_name,
                                                    timeout=timeout, name=name)])])


# ---------- access logs, listeners ----------

def access_log(path=LOG, fmt=None, json_format=None):
    """A file access log. fmt None and json_format None: Envoy's default text format."""
    tc = {"@type": FILE_LOG_TYPE, "path": path}
    if json_format is not None:
        tc["log_format"] = {"json_format": json_format}
    elif fmt is not None:
        tc["log_format"] = {"text_format_source": {"inline_string": fmt}}
    return {"name": "envoy.access_loggers.file", "typed_config": tc}


_listener_ids = itertools.count()


def listener(rc, port=None, stat_prefix="ingress_http", name=None, access_logs=None,
             address="127.0.0.1", **hcm_extra):
    """A listener with one HTTP connection manager. port None: a free port at start."""
    hcm = {"@type": HCM_TYPE, "stat_prefix": stat_prefix, "route_config": rc,
           "http_filters": [{"name": "envoy.filters.http.router",
                             "typed_config": {"@type": ROUTER_TYPE}}]}
    if access_logs:
        hcm["access_log"] = list(access_logs)
    hcm.update(hcm_extra)
    lst = {"address": {"socket_address": {"address": address,
                                          "port_value": 0 if port is None else port}},
           "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
                                           "typed_config": hcm}]}]}
    lst["name"] = name or "listener_%d" % next(_listener_ids)
    lst["_weft_auto_port"] = port is None
    return lst


# ---------- clusters ----------

def endpoint(port, host="127.0.0.1", health=None, weight=None):
    """One LbEndpoint; health e.g. "UNHEALTHY"; weight = load_balancing_weight."""
    e = {"endpoint": {"address": {"socket_address": {"address": host, "port_value": port}}}}
    if health is not None:
        e["health_status"] = health
    if weight is not None:
        e["load_balancing_weight"] = weight
    return e


def cluster(name, endpoints, lb_policy=None, connect_timeout=None, circuit_breakers=None,
            idle_timeout=None, max_requests_per_connection=None, typed_options=False, **extra):
    """A STATIC cluster. endpoints: ports, (host, port) pairs or endpoint() dicts.

    circuit_breakers: a thresholds dict, e.g. {"max_requests": 1}. idle_timeout and
    max_requests_per_connection go to the cluster's common_http_protocol_options, or with
    typed_options=True to typed_extension_protocol_options
    ["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"] (Envoy v3's current place).
    extra: any other Cluster field, as is.
    """
    lbe = []
    for e in endpoints:
        if isinstance(e, dict):
            lbe.append(e)
        elif isinstance(e, tuple):
            lbe.append(endpoint(e[1], host=e[0]))
        else:
            lbe.append(endpoint(e))
    c = {"name": name, "type": "STATIC",
         "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": lbe}]}}
    if lb_policy is not None:
        c["lb_policy"] = lb_policy
    if connect_timeout is not None:
        c["connect_timeout"] = _dur(connect_timeout)
    if circuit_breakers is not None:
        c["circuit_breakers"] = {"thresholds": [dict(circuit_breakers)]}
    common = {}
    if idle_timeout is not None:
        common["idle_timeout"] = _dur(idle_timeout)
    if max_requests_per_connection is not None:
        common["max_requests_per_connection"] = max_requests_per_connection
    if common and not typed_options:
        c["common_http_protocol_options"] = common
    elif common:
        c["typed_extension_protocol_options"] = {
            HPO_NAME: {"@type": "type.googleapis.com/" + HPO_NAME,
                       "common_http_protocol_options": common,
                       "explicit_http_config": {"http_protocol_options": {}}}}
    c.update(extra)
    return c


def bootstrap(listeners, clusters, admin_port=None, node_id="weft-test", node_cluster="test"):
    """A bootstrap dict; admin_port None: a free port at start."""
    return {"node": {"id": node_id, "cluster": node_cluster},
            "admin": {"address": {"socket_address": {"address": "127.0.0.1",
                                                     "port_value": admin_port or 0}}},
            "_weft_auto_admin": admin_port is None,
            "static_resources": {"listeners": list(listeners), "clusters": list(clusters)}}


def clean(bs):
    """The bootstrap without the helper's private keys (what the proxy is given)."""
    bs = copy.deepcopy(bs)
    bs.pop("_weft_auto_admin", None)
    for lst in bs.get("static_resources", {}).get("listeners", []):
        lst.pop("_weft_auto_port", None)
    return bs


def write_bootstrap(bs, directory, name="bootstrap.json"):
    """Write clean(bs) as JSON into directory, access-log placeholders (@LOG@, @LOG:name@)
    replaced by files in directory; returns the path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(_subst_logs(clean(bs), directory), f, indent=1)
    return path


# ---------- the running proxy ----------

def _subst_logs(obj, tmpdir):
    if isinstance(obj, dict):
        return {k: _subst_logs(v, tmpdir) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_subst_logs(v, tmpdir) for v in obj]
    if isinstance(obj, str):
        if obj == LOG:
            return os.path.join(tmpdir, "access.log")
        m = re.fullmatch(r"@LOG:([A-Za-z0-9_-]+)@", obj)
        if m:
            return os.path.join(tmpdir, m.group(1) + ".log")
    return obj


def http_request(host, port, method, path, headers=None, body=None, timeout=10):
    """One request on a fresh connection -> (status, {lower-case name: value}, body bytes)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        hdrs = {}
        for k, v in resp.getheaders():
            k = k.lower()
            hdrs[k] = hdrs[k] + "," + v if k in hdrs else v
        return resp.status, hdrs, data
    finally:
        conn.close()


class Proxy:
    """A running weft-proxy (see the module docstring)."""

    def __init__(self, proc, bs, tmpdir, path, ports, admin_port):
        self.proc = proc
        self.bootstrap = bs
        self.tmpdir = tmpdir
        self.config_path = path
        self.ports = ports            # listener name -> port
        self.port = next(iter(ports.values())) if ports else None
        self.admin_port = admin_port
        self.host = "127.0.0.1"
        self.returncode = None
        self.checked = False  # stop() ran its checks (the fixture does not repeat them)

    # --- data plane ---
    def url(self, path="/", port=None):
        return "http://%s:%d%s" % (self.host, port or self.port, path)

    def request(self, method, path, headers=None, body=None, port=None, timeout=10):
        return http_request(self.host, port or self.port, method, path, headers, body, timeout)

    def connect(self, port=None, timeout=10):
        """A raw TCP socket to a listener (caller closes it)."""
        return socket.create_connection((self.host, port or self.port), timeout=timeout)

    # --- admin ---
    def admin(self, path, method="GET", body=None, timeout=10):
        return http_request(self.host, self.admin_port, method, path, None, body, timeout)

    def stats(self):
        """{name: value} for every counter and gauge in /stats?format=json."""
        status, _, body = self.admin("/stats?format=json")
        assert status == 200, (status, body)
        out = {}
        for s in json.loads(body)["stats"]:
            if "name" in s and "value" in s:
                out[s["name"]] = s["value"]
        return out

    def wait_stat(self, name, value, timeout=5):
        """Wait until stats()[name] == value; returns the last stats dict."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.stats()
            if st.get(name) == value or time.monotonic() > deadline:
                return st
            time.sleep(0.05)

    # --- access log ---
    def access_log_path(self, name=None):
        return os.path.join(self.tmpdir, (name or "access") + ".log")

    def access_log_lines(self, n, timeout=5, name=None):
        """The first n lines of the access log, waiting up to timeout s for them."""
        path = self.access_log_path(name)
        deadline = time.monotonic() + timeout
        lines = []
        while True:
            try:
                with open(path, "rb") as f:
                    data = f.read().decode("utf-8", "replace")
                lines = data.split("\n")[:-1]  # complete lines only
            except FileNotFoundError:
                lines = []
            if len(lines) >= n:
                return lines[:n]
            if time.monotonic() > deadline:
                raise AssertionError("access log %s has %d line(s), want %d:\n%s"
                                     % (path, len(lines), n, "\n".join(lines)))
            time.sleep(0.03)

    def istio_log(self, n, name="istio"):
        """The first n lines of an access log in Istio's text format (an access_log with
        path "@LOG:istio@" and fmt=ISTIO_TEXT_FORMAT), each as ISTIO_TEXT_RE's fields."""
        out = []
        for line in self.access_log_lines(n, name=name):
            m = ISTIO_TEXT_RE.match(line)
            assert m, "not an Istio text access-log line: %r" % line
            out.append(m.groupdict())
        return out

    # --- process ---
    def stderr_text(self):
        try:
            with open(os.path.join(self.tmpdir, "stderr.txt"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def stdout_text(self):
        try:
            with open(os.path.join(self.tmpdir, "stdout.txt"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def stop(self, expect=0, timeout=20):
        """SIGTERM, wait; asserts the exit status (expect=None: any) and no sanitizer report."""
        if self.returncode is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
                    self.returncode = self.proc.returncode
                    raise AssertionError("weft-proxy did not exit within %ss of SIGTERM:\n%s"
                                         % (timeout, self.stderr_text()[-4000:]))
            self.returncode = self.proc.returncode
        self.checked = True
        err = self.stderr_text()
        bad = [m for m in CRASH_MARKERS if m in err]
        assert not bad, "sanitizer report in weft-proxy stderr:\n" + err[-8000:]
        if expect is not None:
            assert self.returncode == expect, ("weft-proxy exited with %s, want %s:\n%s"
                                               % (self.returncode, expect, err[-4000:]))
        return self.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.returncode is None:
            self.returncode = self.proc.returncode


def _wait_ready(proc, admin_port, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            status, _, _ = http_request("127.0.0.1", admin_port, "GET", "/ready", timeout=1)
            if status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.03)
    return False


def start_proxy(bs, args=(), concurrency=1, flush_ms=50, timeout=20, attempts=3, wrap=()):
    """Start weft-proxy on bootstrap bs (see the module docstring); returns a Proxy. wrap: a
    command line the proxy's runs under (it must exec it, keeping the PID: e.g. unshare)."""
    exe = proxy_path()
    if not os.access(exe, os.X_OK):
        pytest.fail("%s is missing or not executable: build it or set WEFT_PROXY" % exe)
    last_err = ""
    for _ in range(attempts):
        tmpdir = tempfile.mkdtemp(prefix="h7-proxy-")
        cfg = _subst_logs(copy.deepcopy(bs), tmpdir)
        ports = {}
        for lst in cfg["static_resources"]["listeners"]:
            sa = lst["address"]["socket_address"]
            if lst.get("_weft_auto_port"):
                sa["port_value"] = free_port()
            ports[lst["name"]] = sa["port_value"]
        asa = cfg["admin"]["address"]["socket_address"]
        if cfg.get("_weft_auto_admin"):
            asa["port_value"] = free_port()
        admin_port = asa["port_value"]
        path = write_bootstrap(cfg, tmpdir)
        argv = [str(a) for a in wrap] + [exe, "-c", path]
        if concurrency is not None:
            argv += ["--concurrency", str(concurrency)]
        if flush_ms is not None:
            argv += ["--file-flush-interval-msec", str(flush_ms)]
        argv += [str(a) for a in args]
        with open(os.path.join(tmpdir, "stdout.txt"), "wb") as out, \
                open(os.path.join(tmpdir, "stderr.txt"), "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        p = Proxy(proc, cfg, tmpdir, path, ports, admin_port)
        if _wait_ready(proc, admin_port, timeout):
            return p
        p.kill()
        last_err = p.stderr_text()
        shutil.rmtree(tmpdir, ignore_errors=True)
        if "in use" not in last_err.lower():
            break
    raise RuntimeError("weft-proxy did not become ready (exit %s):\n%s"
                       % (p.returncode, last_err[-4000:]))


@pytest.fixture
def proxy_factory():
    """start(bs, **kw) -> Proxy; every proxy started is stopped at teardown (exit 0 and no
    sanitizer report asserted unless the test already stopped it)."""
    started = []

    def start(bs, **kw):
        p = start_proxy(bs, **kw)
        started.append(p)
        return p

    yield start
    errors = []
    for p in started:
        try:
            if not p.checked:
                p.stop(expect=0 if p.returncode is None else None)
        except AssertionError as e:
            errors.append(str(e))
        finally:
            p.kill()
            shutil.rmtree(p.tmpdir, ignore_errors=True)
    if errors:
        pytest.fail("\n".join(errors))
