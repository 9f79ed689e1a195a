"""The object store of the test API server: JSON objects in memory with one global, strictly
increasing resourceVersion (decimal string) stamped on every write, a bounded event history for
watches, and list snapshots for paging (../shared/reference/kubernetes.md §1.2-1.4, §5.2).

An object is stored once per (group, resource), whatever version it was written through; its
apiVersion is rewritten to the version a request names."""

import copy
import datetime
import json
import threading
import uuid

import resources


class ApiError(Exception):
    """A Status failure (§1.7)."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details
        self.headers = headers or {}

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            st["details"] = self.details
        return st


def expired(requested, oldest):
    return ApiError(410, "Expired", "too old resource version: %s (%s)" % (requested, oldest))


def now_ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Event:
    __slots__ = ("rv", "gr", "type", "obj", "prev")

    def __init__(self, rv, gr, typ, obj, prev):
        self.rv, self.gr, self.type, self.obj, self.prev = rv, gr, typ, obj, prev


class Store:
    def __init__(self, history=1000, snapshots=64):
        self.cond = threading.Condition()
        self.rv = 1
        self.objs = {}  # (group, resource) -> {(ns, name): obj}
        self.history = []  # Events, oldest first, at most `history`
        self.max_history = history
        self.compacted = 1  # watches from an RV below this get 410 Expired
        self.snaps = {}  # (list RV, group, resource, ns or "") -> sorted [(key, obj)]
        self.max_snaps = snapshots
        self.closed_gen = 0  # bumped to end every open watch (tests: /_test/close-watches)
        self.expire_continues = 0  # the next N continue tokens answer 410 (--expire-continue)
        self.stats = {"continue_expired": 0}
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(resources.find("", "v1", "namespaces"), None,
                        {"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes"]},
                         "status": {"phase": "Active"}})

    # ---- persistence (restart tests) -------------------------------------------------------
    def dump(self):
        with self.cond:
            return {"rv": self.rv,
                    "objs": [[g, r, o] for (g, r), m in self.objs.items() for o in m.values()]}

    def load(self, state):
        with self.cond:
            self.objs = {}
            for g, r, o in state["objs"]:
                md = o["metadata"]
                self.objs.setdefault((g, r), {})[(md.get("namespace", ""), md["name"])] = o
            self.rv = state["rv"]
            self.history = []
            self.compacted = self.rv  # a restarted server has no watch history
            self.snaps = {}

    # ---- helpers ----------------------------------------------------------------------------
    def _bump(self):
        self.rv += 1
        return str(self.rv)

    def _record(self, gr, typ, obj, prev):
        self.history.append(Event(int(obj["metadata"]["resourceVersion"]), gr, typ, obj, prev))
        while len(self.history) > self.max_history:
            ev = self.history.pop(0)
            self.compacted = ev.rv + 1
        self.cond.notify_all()

    def compact(self):
        """Forget every event and list snapshot: watches and continue tokens from before now
        get 410 (etcd compaction)."""
        with self.cond:
            self.history = []
            self.compacted = self.rv + 1
            self.snaps = {}
            self.cond.notify_all()

    def expire(self):
        """As if other writes (to a kind nobody watches, a Lease renewal) moved the
        resourceVersion on and etcd compacted: every open watch ends, and a client that watches
        again from the resourceVersion it had gets the in-stream ERROR 410 Expired."""
        with self.cond:
            self.rv += 1
            self.history = []
            self.compacted = self.rv + 1
            self.snaps = {}
            self.closed_gen += 1
            self.cond.notify_all()

    def close_watches(self):
        with self.cond:
            self.closed_gen += 1
            self.cond.notify_all()

    def _map(self, res):
        return self.objs.setdefault((res.group, res.resource), {})

    def _check_ns(self, res, ns):
        if res.namespaced and ns is not None and \
                ("", ns) not in self.objs.get(("", "namespaces"), {}):
            raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns,
                           {"name": ns, "kind": "namespaces"})

    @staticmethod
    def not_found(res, name):
        return ApiError(404, "NotFound", '%s "%s" not found' % (_gr_name(res), name),
                        {"name": name, "group": res.group, "kind": res.resource})

    # ---- reads -------------------------------------------------------------------------------
    def get(self, res, ns, name):
        with self.cond:
            o = self._map(res).get((ns or "", name))
            if o is None:
                raise self.not_found(res, name)
            return copy.deepcopy(o)

    def list(self, res, ns, pred, limit=0, cont=None):
        """(items, list rv, continue token, remaining). A continue token names a snapshot."""
        with self.cond:
            if cont:
                try:
                    tok = json.loads(_b64d(cont))
                    srv, start = int(tok["rv"]), tok["start"]
                except Exception:
                    raise ApiError(400, "BadRequest", "continue key is not valid: %s" % cont)
                snap = self.snaps.get((srv, res.group, res.resource, ns or ""))
                if self.expire_continues > 0:  # as if etcd compacted since the first page
                    self.expire_continues -= 1
                    snap = None
                if snap is None or srv < self.compacted:
                    self.stats["continue_expired"] += 1
                    raise ApiError(410, "Expired", "The provided continue parameter is too old "
                                   "to display a consistent list result. You can start a new list "
                                   "without the continue parameter.")
                items = snap
                lrv = srv
            else:
                lrv = self.rv
                items = sorted(((k, o) for k, o in self._map(res).items()), key=lambda kv: kv[0])
                items = [(k, o) for k, o in items if ns is None or k[0] == ns]
                start = None
            sel = [(k, o) for k, o in items if (start is None or list(k) > start) and pred(o)]
            if limit and len(sel) > limit:
                page = sel[:limit]
                last = page[-1][0]
                if not cont:
                    # per resource (and namespace): lists of other kinds at the same RV (a
                    # controller starting its informers at once) must not share a snapshot
                    self.snaps[(lrv, res.group, res.resource, ns or "")] = items
                    while len(self.snaps) > self.max_snaps:
                        self.snaps.pop(min(self.snaps))
                token = _b64e(json.dumps({"rv": lrv, "start": list(last)}))
                return [copy.deepcopy(o) for _, o in page], str(lrv), token, len(sel) - limit
            return [copy.deepcopy(o) for _, o in sel], str(lrv), "", 0

    # ---- writes ------------------------------------------------------------------------------
    def create(self, res, ns, obj, dry_run=False):
        """Creates obj; dry_run (dryRun=All): the same checks and defaults, the object answered
        without a resourceVersion, nothing stored and no watch event."""
        if dry_run:
            obj = copy.deepcopy(obj)
        with self.cond:
            md = obj.setdefault("metadata", {})
            if not md.get("name") and md.get("generateName"):
                md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
            name = md.get("name")
            if not name:
                raise ApiError(422, "Invalid", '%s "" is invalid: metadata.name: Required value: '
                               'name or generateName is required' % res.kind,
                               {"kind": res.kind, "causes": [{"reason": "FieldValueRequired",
                                "message": "Required value: name or generateName is required",
                                "field": "metadata.name"}]})
            if res.namespaced:
                if md.get("namespace") and ns and md["namespace"] != ns:
                    raise ApiError(400, "BadRequest", "the namespace of the provided object does "
                                   "not match the namespace sent on the request")
                md["namespace"] = ns
                self._check_ns(res, ns)
            else:
                md.pop("namespace", None)
            key = (md.get("namespace", ""), name)
            m = self._map(res)
            if key in m:
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists'
                               % (_gr_name(res), name),
                               {"name": name, "group": res.group, "kind": res.resource})
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_ts()
            md.pop("deletionTimestamp", None)
            md["generation"] = 1
            obj["kind"] = res.kind
            if dry_run:
                md.pop("resourceVersion", None)
                return obj
            md["resourceVersion"] = self._bump()
            m[key] = obj
            self._record((res.group, res.resource), "ADDED", copy.deepcopy(obj), None)
            return copy.deepcopy(obj)

    def update(self, res, ns, name, obj, subresource=None):
        with self.cond:
            m = self._map(res)
            key = (ns or "", name)
            old = m.get(key)
            if old is None:
                raise self.not_found(res, name)
            md = obj.setdefault("metadata", {})
            if md.get("name") and md["name"] != name:
                raise ApiError(400, "BadRequest", "the name of the object (%s) does not match "
                               "the name on the URL (%s)" % (md["name"], name))
            want = md.get("resourceVersion")
            if want and want != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the '
                               'object has been modified; please apply your changes to the latest '
                               'version and try again' % (_gr_name(res), name),
                               {"name": name, "group": res.group, "kind": res.resource})
            new = copy.deepcopy(old)
            if subresource == "status":
                new["status"] = copy.deepcopy(obj.get("status"))
            else:
                keep_status = old.get("status")
                new = copy.deepcopy(obj)
                if keep_status is not None and res.group in resources.BUILTIN_GROUPS and \
                        res.resource not in ("configmaps", "secrets"):
                    new["status"] = keep_status  # status only through /status
                nmd = new.setdefault("metadata", {})
                for f in ("uid", "creationTimestamp", "name", "namespace"):
                    if f in old["metadata"]:
                        nmd[f] = old["metadata"][f]
                nmd["generation"] = old["metadata"].get("generation", 1) + \
                    (1 if new.get("spec") != old.get("spec") else 0)
            new["kind"] = res.kind
            if _strip_meta(new) == _strip_meta(old):
                return copy.deepcopy(old)  # a no-op write bumps nothing (as kube-apiserver)
            new["metadata"]["resourceVersion"] = self._bump()
            m[key] = new
            self._record((res.group, res.resource), "MODIFIED", copy.deepcopy(new),
                         copy.deepcopy(old))
            return copy.deepcopy(new)

    def delete(self, res, ns, name):
        with self.cond:
            m = self._map(res)
            key = (ns or "", name)
            old = m.pop(key, None)
            if old is None:
                raise self.not_found(res, name)
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = self._bump()
            self._record((res.group, res.resource), "DELETED", copy.deepcopy(gone),
                         copy.deepcopy(old))
            if res.resource == "namespaces":  # the namespace controller, at once
                for (g, r), om in self.objs.items():
                    for k in [k for k in om if k[0] == name]:
                        o = om.pop(k)
                        o["metadata"]["resourceVersion"] = self._bump()
                        self._record((g, r), "DELETED", copy.deepcopy(o), copy.deepcopy(o))
            return gone

    # ---- watch -------------------------------------------------------------------------------
    def events_after(self, gr, rv, timeout, gen):
        """Waits up to timeout s for events of gr after rv. Returns (events, current rv,
        closed: close_watches ran since generation gen) or raises ApiError 410 when rv is older
        than the history kept."""
        with self.cond:
            if rv + 1 < self.compacted:
                raise expired(rv, self.compacted)
            evs = [e for e in self.history if e.rv > rv and e.gr == gr]
            if not evs:
                self.cond.wait(timeout)
                if rv + 1 < self.compacted:
                    raise expired(rv, self.compacted)
                evs = [e for e in self.history if e.rv > rv and e.gr == gr]
            return evs, self.rv, self.closed_gen != gen


def _strip_meta(o):
    o = copy.deepcopy(o)
    for f in ("resourceVersion", "generation", "managedFields"):
        o.get("metadata", {}).pop(f, None)
    return o


def _gr_name(res):
    return res.resource if not res.group else "%s.%s" % (res.resource, res.group)


def _b64e(s):
    import base64
    return base64.urlsafe_b64encode(s.encode()).decode()


def _b64d(s):
    import base64
    return base64.urlsafe_b64decode(s.encode() + b"=" * (-len(s) % 4)).decode()
