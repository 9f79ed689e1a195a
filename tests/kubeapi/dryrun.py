"""Server-side dry run of the test API server (`dryRun=All`): a create is checked as
Store.create checks it (name or generateName, the namespace of the URL and of the object, the
namespace exists, the name is free) and answered with the object the server would store
(uid, creationTimestamp, generation; no resourceVersion), storing nothing and recording no watch
event, as kube-apiserver's dry run does
(https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run)."""

import copy
import uuid

from store import ApiError, _gr_name, now_ts


def create(store, res, ns, obj):
    obj = copy.deepcopy(obj)
    with store.cond:
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
            store._check_ns(res, ns)
        else:
            md.pop("namespace", None)
        if (md.get("namespace", ""), name) in store.objs.get((res.group, res.resource), {}):
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (_gr_name(res), name),
                           {"name": name, "group": res.group, "kind": res.resource})
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_ts()
        md["generation"] = 1
        md.pop("resourceVersion", None)
        obj["kind"] = res.kind
        return obj
