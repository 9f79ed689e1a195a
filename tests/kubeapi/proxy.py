"""proxy.py - the `proxy` subresource of Pods and Services for the test API server
(../shared/reference/kubernetes.md §1.1, §4, §5.2): kube-apiserver's
`/api/v1/namespaces/<ns>/pods/<name>[:<port>]/proxy/<path>` and
`/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>` forward the request (method,
the path after `proxy`, the query, the body and its Content-Type) over plain HTTP and send back
the answer's status, headers (less hop-by-hop ones) and body unchanged.

Where the request goes, as kube-apiserver's proxy REST handlers resolve it:
  - pods: `status.podIP` and the port (a number, or the name of a container port; the first
    container port when none is given). A pod without an IP is 503 ServiceUnavailable.
  - services: the service port (number or name; the first when none) gives its targetPort
    (a number, or a container port name looked up on the chosen pod); the address is a ready
    endpoint of the Service's EndpointSlices (label kubernetes.io/service-name), else a Running
    pod the selector matches with an IP ("no endpoints available for service" 503 when none).
A connection that fails is 503 "error trying to reach service: <why>", as kube-apiserver says.
An optional scheme prefix (`http:name:port`) is accepted; `https` is refused (not needed here).

kubeapi.py calls handle() from its dispatch (after authentication) for every request; it returns
False when the path is not a proxy request."""

import http.client
import urllib.parse

import labelsel as ksel
import resources
from store import ApiError

TIMEOUT_S = 30
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade",
              "proxy-connection", "te", "trailer", "date", "server"}


def _not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def _split_name(s):
    """'name', 'name:port' or 'scheme:name:port' -> (scheme, name, port)."""
    parts = s.split(":")
    if len(parts) == 1:
        return "", parts[0], ""
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise ApiError(400, "BadRequest", "invalid service request %s" % s)


def _container_port(pod, port):
    """The numeric port of pod for `port` (number or container port name), or None."""
    if port.isdigit():
        return int(port)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if not port or p.get("name") == port:
                return p.get("containerPort")
    return None


def _pod_target(store, ns, name, port):
    pod = store.get(resources.find("", "v1", "pods"), ns, name)
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise ApiError(503, "ServiceUnavailable", "address not allowed")
    num = _container_port(pod, port)
    if num is None:
        raise ApiError(503, "ServiceUnavailable",
                       "no port %s on pod %s" % (port or "(none)", name))
    return ip, num


def _service_port(svc, port):
    ports = (svc.get("spec") or {}).get("ports") or []
    for p in ports:
        if not port or str(p.get("port")) == port or p.get("name") == port:
            return p
    raise ApiError(503, "ServiceUnavailable",
                   "no service port %r found for service %q" % (port, svc["metadata"]["name"]))


def _slice_address(store, ns, svc_name, sport):
    """(ip, port) of a ready EndpointSlice endpoint for service port sport, or None."""
    slices = resources.find("discovery.k8s.io", "v1", "endpointslices")
    sel = ksel.parse_labels("kubernetes.io/service-name=%s" % svc_name)
    items, _, _, _ = store.list(slices, ns,
                                lambda o: sel((o.get("metadata") or {}).get("labels")))
    for s in items:
        port = None
        for p in s.get("ports") or []:
            if (p.get("name") or "") == (sport.get("name") or ""):
                port = p.get("port")
        for e in s.get("endpoints") or []:
            if (e.get("conditions") or {}).get("ready", True) is False:
                continue
            if port and e.get("addresses"):
                return e["addresses"][0], port
    return None


def _service_target(store, ns, name, port):
    svc = store.get(resources.find("", "v1", "services"), ns, name)
    sport = _service_port(svc, port)
    got = _slice_address(store, ns, name, sport)
    if got:
        return got
    selector = (svc.get("spec") or {}).get("selector") or {}
    pods, _, _, _ = store.list(resources.find("", "v1", "pods"), ns, lambda o: True)
    target = str(sport.get("targetPort", sport.get("port")))
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        st = pod.get("status") or {}
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            continue
        if st.get("phase") != "Running" or not st.get("podIP"):
            continue
        num = _container_port(pod, target)
        if num:
            return st["podIP"], num
    raise ApiError(503, "ServiceUnavailable", 'no endpoints available for service "%s"' % name)


def handle(h, parts, query):
    """Serves a proxy request on handler h; False when parts is not one."""
    if len(parts) < 7 or parts[:3] != ["api", "v1", "namespaces"] or \
            parts[4] not in ("pods", "services") or parts[6] != "proxy":
        return False
    ns, kind = parts[3], parts[4]
    scheme, name, port = _split_name(urllib.parse.unquote(parts[5]))
    if scheme not in ("", "http"):
        raise ApiError(400, "BadRequest", "scheme %s is not supported by the test API server"
                       % scheme)
    store = h.server.store
    if kind == "pods":
        ip, num = _pod_target(store, ns, name, port)
    else:
        ip, num = _service_target(store, ns, name, port)
    rest = "/" + "/".join(parts[7:])
    if h.path.split("?", 1)[0].endswith("/") and not rest.endswith("/"):
        rest += "/"
    if query:
        rest += "?" + query
    body = h.read_body()
    h._body_read = True
    headers = {}
    if h.headers.get("Content-Type"):
        headers["Content-Type"] = h.headers["Content-Type"]
    try:
        conn = http.client.HTTPConnection(ip, num, timeout=TIMEOUT_S)
        conn.request(h.command, rest, body=body or None, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        hdrs = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
        status = resp.status
        conn.close()
    except OSError as e:
        raise ApiError(503, "ServiceUnavailable", "error trying to reach service: dial tcp "
                       "%s:%d: %s" % (ip, num, e.strerror or e))
    h.send_response(status)
    for k, v in hdrs:
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(data)
    return True
