#!/usr/bin/python3
"""bulkload.py - turns a file of API objects into a state file the test API server (kubeapi.py)
loads at start with --state, so a large fixture (the pilot benchmark's 1,000 Services and 5,000
Pods) is served at once instead of through thousands of POSTs.

Usage: bulkload.py OBJECTS STATE
  OBJECTS  a JSON array of objects, or a v1 List ({"items": [...]}), or YAML documents; each
           with apiVersion, kind, metadata.name (and metadata.namespace for namespaced kinds).
  STATE    written: what kubeapi.py --state reads (store.Store.dump()).

Every object goes through store.Store.create as a POST would (uid, creationTimestamp,
generation, a resourceVersion each; Namespaces must come before what they hold, as for POSTs).
The server starts with no watch history (as after a restart): clients list first.
Exit: 0, 1 on an object the store refuses (its message, the object's index and kind/name), 2 on
a bad command line or unreadable input.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import resources  # noqa: E402
from store import ApiError, Store  # noqa: E402


def _by_kind():
    """{(group, Kind): Res}."""
    return {(r.group, r.kind): r for r in resources.RESOURCES}


def read_objects(path):
    with open(path) as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError:
        import yaml
        return [d for d in yaml.safe_load_all(text) if d]
    if isinstance(doc, dict):
        return doc.get("items", [doc])
    return doc


def build(objs):
    """A Store holding objs (the default namespaces first, as kubeapi.py starts with them)."""
    st = Store(history=1)
    kinds = _by_kind()
    for i, o in enumerate(objs):
        group, _, _ = o.get("apiVersion", "").rpartition("/")
        res = kinds.get((group, o.get("kind")))
        name = "%s/%s" % (o.get("kind"), o.get("metadata", {}).get("name"))
        if res is None:
            raise ApiError(400, "BadRequest", "object %d (%s): no resource for apiVersion %s"
                           % (i, name, o.get("apiVersion")))
        ns = o.get("metadata", {}).get("namespace") if res.namespaced else None
        if res.namespaced and not ns:
            raise ApiError(400, "BadRequest", "object %d (%s): metadata.namespace is required"
                           % (i, name))
        if res.kind == "Namespace" and ("", o["metadata"]["name"]) in \
                st.objs.get(("", "namespaces"), {}):
            continue  # the default namespaces exist already
        try:
            st.create(res, ns, o)
        except ApiError as e:
            e.message = "object %d (%s): %s" % (i, name, e.message)
            raise
    return st


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    if len(argv) != 3:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    try:
        objs = read_objects(argv[1])
    except (OSError, ValueError) as e:
        sys.stderr.write("bulkload.py: %s: %s\n" % (argv[1], e))
        return 2
    try:
        st = build(objs)
    except ApiError as e:
        sys.stderr.write("bulkload.py: %s: %s\n" % (argv[1], e.message))
        return 1
    tmp = argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st.dump(), f)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
