"""Label and field selectors as kube-apiserver parses them (§1.5 of
../shared/reference/kubernetes.md): labels `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
`k`, `!k`, comma = AND; fields `=`, `==`, `!=`, comma = AND."""

import re


class SelectorError(Exception):
    pass


_IN_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")


def _split_top(s):
    """Splits on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise SelectorError("unable to parse requirement: unbalanced parentheses")
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_labels(s):
    """A list of predicates over a labels dict."""
    reqs = []
    for part in _split_top(s or ""):
        m = re.match(r"^([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)$", part)
        if m:
            k, op, v = m.groups()
            if op == "!=":
                reqs.append(lambda l, k=k, v=v: l.get(k) != v)
            else:
                reqs.append(lambda l, k=k, v=v: l.get(k) == v)
            continue
        m = _IN_RE.match(part)
        if not m:
            raise SelectorError("unable to parse requirement: %r" % part)
        neg, k, op, vals = m.groups()
        if op:
            if neg:
                raise SelectorError("unable to parse requirement: %r" % part)
            vs = {x.strip() for x in vals.split(",") if x.strip()}
            if op == "in":
                reqs.append(lambda l, k=k, vs=vs: l.get(k) in vs)
            else:
                reqs.append(lambda l, k=k, vs=vs: l.get(k) not in vs)
        elif neg:
            reqs.append(lambda l, k=k: k not in l)
        else:
            reqs.append(lambda l, k=k: k in l)
    return lambda labels: all(r(labels or {}) for r in reqs)


def field_value(obj, label):
    cur = obj
    for step in label.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(step)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_fields(s, res):
    """A predicate over an object; unknown labels raise SelectorError with kube-apiserver's
    text."""
    reqs = []
    for part in _split_top(s or ""):
        m = re.match(r"^([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (s, part))
        k, op, v = m.groups()
        if k not in ("metadata.name", "metadata.namespace") and k not in res.fields:
            if res.fields:
                raise SelectorError('field label not supported: %s' % k)
            raise SelectorError('"%s" is not a known field selector: only "metadata.name", '
                                '"metadata.namespace"' % k)
        if op == "!=":
            reqs.append(lambda o, k=k, v=v: field_value(o, k) != v)
        else:
            reqs.append(lambda o, k=k, v=v: field_value(o, k) == v)
    return lambda obj: all(r(obj) for r in reqs)
