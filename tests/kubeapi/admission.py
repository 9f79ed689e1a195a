"""admission.py - the test API server's admission webhooks, called as kube-apiserver calls them
(../shared/reference/kubernetes.md §3.1-§3.2 and §5.2 item 8; Kubernetes' "Dynamic Admission
Control" and the apiserver's plugin/webhook packages):

 * on a create or an update (dry runs included) of any object, the MutatingWebhookConfigurations'
   webhooks run first, in order (configurations sorted by name, webhooks in their order), each
   answer's JSONPatch applied to the object the next one sees; reinvocationPolicy IfNeeded
   webhooks run once more when a later webhook changed the object; then every matching
   ValidatingWebhookConfiguration webhook sees the final object (their patches are ignored);
 * a webhook is called when one of its rules matches (operations, apiGroups, apiVersions,
   resources with "*", "*/*", "<res>/*" and "<res>/<sub>", scope) - matchPolicy Equivalent
   (the default) also matches a rule naming another version of the same resource - and its
   namespaceSelector matches the labels of the object's Namespace (with
   kubernetes.io/metadata.name; a Namespace object its own labels; cluster-scoped objects always
   match) and its objectSelector the object's labels (an update: the old or the new object's);
 * the call: POST of an AdmissionReview v1 (uid, kind, resource, requestKind, requestResource,
   subResource, name, namespace, operation, userInfo, object, oldObject, dryRun, options) to
   clientConfig.url, or to https://<service>.<namespace>.svc:<port><path> reached through the
   server's --service-proxy map ("<ns>/<name>:<port>=<ip>:<port>"), with "?timeout=<N>s"
   appended as kube-apiserver does, over TLS verified against clientConfig.caBundle (the
   server name <service>.<namespace>.svc, or the URL's host), within timeoutSeconds (default 10);
 * the outcome: allowed false -> 400 (or the answer's status.code when >= 400) with
   `admission webhook "<name>" denied the request: <message>` (apiserver's ToStatusErr); a
   webhook that cannot be called, times out or answers badly -> with failurePolicy Fail (the
   default) 500 InternalError `Internal error occurred: failed calling webhook "<name>": failed
   to call webhook: <why>`, with Ignore the webhook is skipped; a dry run with a webhook whose
   sideEffects is neither None nor NoneOnDryRun -> 400 `admission webhook "<name>" does not
   support dry run`; answers' warnings become Warning headers (`299 - "<text>"`).

Every call is recorded in Admission.calls (webhook name, URL, operation, allowed/error), for
GET /_test/admission-calls.
"""

import base64
import copy
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
import uuid

import patch
import resources
from store import ApiError

NAME_LABEL = "kubernetes.io/metadata.name"
USER = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}


class CallError(Exception):
    """A webhook that could not be called or answered badly (failurePolicy decides)."""


def parse_proxies(specs):
    """["istio-system/istiod:443=127.0.0.1:15017"] -> {("istio-system", "istiod", 443):
    ("127.0.0.1", 15017)}."""
    out = {}
    for s in specs or []:
        try:
            svc, target = s.split("=", 1)
            nsname, port = svc.rsplit(":", 1)
            ns, name = nsname.split("/", 1)
            host, tport = target.rsplit(":", 1)
            out[(ns, name, int(port))] = (host.strip("[]"), int(tport))
        except ValueError:
            raise SystemExit("kubeapi: bad --service-proxy %r: want NS/NAME:PORT=IP:PORT" % s)
    return out


def selector_matches(sel, labels):
    """A metav1.LabelSelector against labels (None/{} selects everything)."""
    labels = labels or {}
    if not sel:
        return True
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _resource_matches(patterns, resource, sub):
    sub = sub or ""
    for p in patterns:
        r, _, s = p.partition("/")
        if p == "*/*" or (p == "*" and not sub):
            return True
        if r == "*" and s == sub and sub:
            return True
        if r == resource and ((s == "*" and sub) or s == sub):
            return True
    return False


def _in(vals, v):
    return "*" in (vals or []) or v in (vals or [])


def rule_version(wh, op, res, version, sub):
    """The version a webhook's rules match the request at (None: no match)."""
    exact = wh.get("matchPolicy", "Equivalent") == "Exact"
    for r in wh.get("rules") or []:
        scope = r.get("scope", "*")
        if scope == "Cluster" and res.namespaced or scope == "Namespaced" and not res.namespaced:
            continue
        if not _in(r.get("operations"), op) or not _in(r.get("apiGroups"), res.group):
            continue
        if not _resource_matches(r.get("resources") or [], res.resource, sub):
            continue
        if _in(r.get("apiVersions"), version):
            return version
        if not exact:  # Equivalent: another served version of the same resource
            for v in res.versions:
                if v in (r.get("apiVersions") or []):
                    return v
    return None


class Admission:
    def __init__(self, store, proxies, verbose=False):
        self.store = store
        self.proxies = proxies
        self.verbose = verbose
        self.calls = []
        self.lock = threading.Lock()

    # ---- what to call ----------------------------------------------------------------------
    def _configs(self, kind):
        res = resources.find("admissionregistration.k8s.io", "v1", kind)
        items = self.store.list(res, None, lambda o: True, 0, None)[0]
        return sorted(items, key=lambda o: o["metadata"]["name"])

    def _ns_labels(self, res, ns, obj):
        if res.resource == "namespaces":
            labels = dict((obj or {}).get("metadata", {}).get("labels") or {})
            labels[NAME_LABEL] = (obj or {}).get("metadata", {}).get("name", "")
            return labels
        if not res.namespaced:
            return None
        try:
            nso = self.store.get(resources.find("", "v1", "namespaces"), None, ns)
            labels = dict(nso.get("metadata", {}).get("labels") or {})
        except ApiError:
            labels = {}
        labels[NAME_LABEL] = ns
        return labels

    def _matches(self, wh, ctx):
        v = rule_version(wh, ctx["op"], ctx["res"], ctx["version"], ctx["sub"])
        if v is None:
            return None
        nsl = ctx["ns_labels"]
        if nsl is not None and not selector_matches(wh.get("namespaceSelector"), nsl):
            return None
        osel = wh.get("objectSelector")
        objs = [o for o in (ctx["obj"], ctx["old"]) if o is not None]
        if osel and not any(selector_matches(osel, o.get("metadata", {}).get("labels"))
                            for o in objs):
            return None
        return v

    # ---- the call ----------------------------------------------------------------------------
    def _target(self, wh):
        """(connect (host, port), server name, URL as kube-apiserver writes it)."""
        cc = wh.get("clientConfig") or {}
        timeout = int(wh.get("timeoutSeconds") or 10)
        if cc.get("url"):
            u = urllib.parse.urlsplit(cc["url"])
            port = u.port or 443
            path = u.path or "/"
            url = "%s%s%s" % (cc["url"], "&" if u.query else "?", "timeout=%ds" % timeout)
            return (u.hostname, port), u.hostname, path + ("?" + u.query if u.query else ""), \
                url, timeout
        svc = cc.get("service") or {}
        ns, name, port = svc.get("namespace", ""), svc.get("name", ""), int(svc.get("port", 443))
        host = "%s.%s.svc" % (name, ns)
        path = svc.get("path") or "/"
        url = "https://%s:%d%s?timeout=%ds" % (host, port, path, timeout)
        addr = self.proxies.get((ns, name, port))
        if addr is None:
            raise CallError('Post "%s": service "%s" not found' % (url, name)) from None
        return addr, host, path, url, timeout

    def _post(self, wh, review):
        addr, server_name, path, url, timeout = self._target(wh)
        ctx = ssl.create_default_context()
        ca = (wh.get("clientConfig") or {}).get("caBundle")
        if ca:
            ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
        body = json.dumps(review).encode()
        sep = "&" if "?" in path else "?"
        try:
            sock = socket.create_connection(addr, timeout=timeout)
        except socket.timeout:
            raise CallError('Post "%s": context deadline exceeded' % url)
        except OSError as e:
            raise CallError('Post "%s": dial tcp %s:%d: connect: %s' %
                            (url, addr[0], addr[1], _errtext(e)))
        deadline = time.monotonic() + timeout
        try:
            tls = ctx.wrap_socket(sock, server_hostname=server_name)
            conn = http.client.HTTPConnection(server_name, addr[1], timeout=timeout)
            conn.sock = tls
            conn.request("POST", "%s%stimeout=%ds" % (path, sep, timeout), body=body,
                         headers={"Content-Type": "application/json",
                                  "Accept": "application/json, */*"})
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
        except ssl.SSLCertVerificationError as e:
            sock.close()
            raise CallError('Post "%s": tls: failed to verify certificate: %s' %
                            (url, e.verify_message))
        except (socket.timeout, TimeoutError):
            sock.close()
            raise CallError('Post "%s": context deadline exceeded' % url)
        except (OSError, http.client.HTTPException) as e:
            sock.close()
            raise CallError('Post "%s": %s' % (url, e))
        if time.monotonic() > deadline:
            raise CallError('Post "%s": context deadline exceeded' % url)
        if resp.status != 200:
            text = data.decode(errors="replace").strip()
            if resp.status >= 500:
                raise CallError('an error on the server ("%s") has prevented the request from '
                                'succeeding' % text)
            raise CallError("the server responded with the status code %d but did not return "
                            "more information" % resp.status)
        try:
            out = json.loads(data)
            r = out["response"]
        except (ValueError, KeyError, TypeError) as e:
            raise CallError("received invalid webhook response: %s" % e)
        if not isinstance(r, dict):
            raise CallError("received invalid webhook response: no response")
        if r.get("uid") != review["request"]["uid"]:
            raise CallError("expected response.uid=%r, got %r" %
                            (review["request"]["uid"], r.get("uid")))
        return r

    def _review(self, wh, ctx, version, obj):
        res = ctx["res"]
        md = (obj or ctx["old"] or {}).get("metadata", {})
        req = {
            "uid": str(uuid.uuid4()),
            "kind": {"group": res.group, "version": version, "kind": res.kind},
            "resource": {"group": res.group, "version": version, "resource": res.resource},
            "requestKind": {"group": res.group, "version": ctx["version"], "kind": res.kind},
            "requestResource": {"group": res.group, "version": ctx["version"],
                                "resource": res.resource},
            "name": md.get("name", ""),
            "namespace": ctx["ns"] or "",
            "operation": ctx["op"],
            "userInfo": USER,
            "object": obj,
            "oldObject": ctx["old"],
            "dryRun": ctx["dry"],
            "options": {"apiVersion": "meta.k8s.io/v1",
                        "kind": "CreateOptions" if ctx["op"] == "CREATE" else "UpdateOptions"},
        }
        if ctx["sub"]:
            req["subResource"] = ctx["sub"]
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

    def _call(self, wh, ctx, version, obj, mutating):
        """The webhook's response dict, or None when it failed and is ignored."""
        name = wh.get("name", "")
        side = wh.get("sideEffects")
        if ctx["dry"] and side not in ("None", "NoneOnDryRun"):
            raise ApiError(400, "BadRequest",
                           'admission webhook "%s" does not support dry run' % name)
        review = self._review(wh, ctx, version, obj)
        rec = {"webhook": name, "operation": ctx["op"], "kind": ctx["res"].kind,
               "name": review["request"]["name"], "namespace": ctx["ns"] or "",
               "mutating": mutating, "dryRun": ctx["dry"]}
        try:
            r = self._post(wh, review)
        except CallError as e:
            why = 'failed calling webhook "%s": failed to call webhook: %s' % (name, e)
            rec["error"] = why
            policy = wh.get("failurePolicy", "Fail")
            rec["failurePolicy"] = policy
            self._record(rec)
            if policy == "Ignore":
                return None
            raise ApiError(500, "InternalError", "Internal error occurred: %s" % why,
                           {"causes": [{"message": why}]})
        rec["allowed"] = bool(r.get("allowed"))
        self._record(rec)
        ctx["warnings"].extend(r.get("warnings") or [])
        if not r.get("allowed"):
            st = r.get("status") or {}
            denied = 'admission webhook "%s" denied the request' % name
            if st.get("message"):
                msg = "%s: %s" % (denied, st["message"])
            elif st.get("reason"):
                msg = "%s: %s" % (denied, st["reason"])
            else:
                msg = "%s without explanation" % denied
            code = st.get("code") or 400
            raise ApiError(code if code >= 400 else 400, st.get("reason", ""), msg,
                           st.get("details"))
        return r

    def _record(self, rec):
        with self.lock:
            self.calls.append(rec)

    # ---- the hook ----------------------------------------------------------------------------
    def admit(self, op, res, version, ns, obj, old=None, sub=None, dry=False):
        """Runs the webhooks for a CREATE or UPDATE of obj (old: the stored object) and returns
        (the object to store, warnings). Raises ApiError when refused or a Fail webhook
        failed."""
        if res.group == "admissionregistration.k8s.io":
            return obj, []  # webhook configurations are never admitted by webhooks
        ctx = {"op": op, "res": res, "version": version, "ns": ns if res.namespaced else None,
               "sub": sub, "obj": obj, "old": old, "dry": bool(dry), "warnings": []}
        ctx["ns_labels"] = self._ns_labels(res, ns, obj)
        mutating = [(c, wh) for c in self._configs("mutatingwebhookconfigurations")
                    for wh in c.get("webhooks") or []]
        again = []
        for i, (_, wh) in enumerate(mutating):
            obj = self._mutate(wh, ctx, obj)
            if wh.get("reinvocationPolicy") == "IfNeeded":
                again.append((i, wh, copy.deepcopy(obj)))
        for i, wh, seen in again:  # reinvoked once when a later webhook changed the object
            if obj != seen:
                obj = self._mutate(wh, ctx, obj)
        for c in self._configs("validatingwebhookconfigurations"):
            for wh in c.get("webhooks") or []:
                ctx["obj"] = obj
                v = self._matches(wh, ctx)
                if v is not None:
                    self._call(wh, ctx, v, obj, False)
        return obj, ctx["warnings"]

    def _mutate(self, wh, ctx, obj):
        ctx["obj"] = obj
        v = self._matches(wh, ctx)
        if v is None:
            return obj
        r = self._call(wh, ctx, v, obj, True)
        if not r or not r.get("patch"):
            return obj
        if r.get("patchType") != "JSONPatch":
            raise ApiError(500, "InternalError", 'Internal error occurred: failed calling '
                           'webhook "%s": unsupported patch type %r' %
                           (wh.get("name"), r.get("patchType")))
        try:
            ops = json.loads(base64.b64decode(r["patch"]))
        except ValueError as e:
            raise ApiError(500, "InternalError", 'Internal error occurred: failed calling '
                           'webhook "%s": %s' % (wh.get("name"), e))
        return patch.json_patch(obj, ops)


def warning_header(warnings):
    """Warning headers as kube-apiserver writes them (RFC 7234 code 299), joined."""
    if not warnings:
        return {}
    return {"Warning": ", ".join('299 - "%s"' % w.replace('"', '\\"') for w in warnings)}


def _errtext(e):
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    return e.strerror or str(e)
