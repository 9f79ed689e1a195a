"""PATCH bodies as kube-apiserver applies them (§1.6 of ../shared/reference/kubernetes.md):
JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch (built-in types:
lists of objects with a `name` are merged by name, `$patch: delete|replace` and the
`$setElementOrder/`, `$retainKeys`, `$deleteFromPrimitiveList/` directives are understood
well enough for kubectl apply; other lists are replaced) and server-side apply
(application/apply-patch+yaml, merged into the live object as a merge patch; field ownership
is not tracked)."""

import copy
import json

import yaml

import resources
from store import ApiError


def merge(target, p):
    if not isinstance(p, dict):
        return copy.deepcopy(p)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in p.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def strategic(target, p):
    if not isinstance(p, dict):
        return copy.deepcopy(p)
    if p.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in p.items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in p.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            f = k.split("/", 1)[1]
            out[f] = [x for x in out.get(f, []) if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and isinstance(out.get(k), list) and v and \
                all(isinstance(x, dict) and "name" in x for x in v + out[k]):
            cur = list(out[k])
            for item in v:
                idx = next((i for i, x in enumerate(cur) if x["name"] == item["name"]), None)
                if item.get("$patch") == "delete":
                    if idx is not None:
                        cur.pop(idx)
                elif idx is None:
                    cur.append({a: b for a, b in item.items() if a != "$patch"})
                else:
                    cur[idx] = strategic(cur[idx], item)
            out[k] = cur
        else:
            out[k] = strategic(out.get(k), v)
    return out


def _pointer(path):
    return [s.replace("~1", "/").replace("~0", "~") for s in path.split("/")[1:]]


def json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    for op in ops:
        steps = _pointer(op["path"])
        parent = doc
        for s in steps[:-1]:
            parent = parent[int(s)] if isinstance(parent, list) else parent[s]
        last = steps[-1] if steps else None
        kind = op["op"]
        if kind == "test":
            cur = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if cur != op["value"]:
                raise ApiError(422, "Invalid", "the server rejected our request due to an "
                               "error in our request: test operation failed")
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif kind == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                if kind == "replace" and last not in parent:
                    raise ApiError(422, "Invalid", "the server rejected our request due to an "
                                   "error in our request: replace operation does not apply: "
                                   "doc is missing key: %s" % op["path"])
                parent[last] = op["value"]
        elif kind == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            else:
                parent.pop(last)
        else:
            raise ApiError(400, "BadRequest", "unsupported JSON patch operation %s" % kind)
    return doc


def apply(ctype, cur, raw, res, field_manager=None):
    try:
        if ctype == "application/apply-patch+yaml":
            body = yaml.safe_load(raw.decode() or "{}")
        else:
            body = json.loads(raw or b"{}")
    except (ValueError, yaml.YAMLError) as e:
        raise ApiError(400, "BadRequest", "error decoding patch: %s" % e)
    try:
        if ctype == "application/merge-patch+json":
            return merge(cur, body)
        if ctype == "application/json-patch+json":
            return json_patch(cur, body)
        if ctype == "application/strategic-merge-patch+json":
            if res.group not in resources.BUILTIN_GROUPS:
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                               "unknown format - accepted media types include: "
                               "application/json-patch+json, application/merge-patch+json, "
                               "application/apply-patch+yaml")
            return strategic(cur, body)
        if ctype == "application/apply-patch+yaml":
            return merge(cur, body)
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our "
                       "request: %s" % e)
    raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                   "format - accepted media types include: application/json-patch+json, "
                   "application/merge-patch+json, application/apply-patch+yaml")
