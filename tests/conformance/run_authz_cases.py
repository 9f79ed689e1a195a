#!/usr/bin/python3
"""Run Istio's AuthorizationPolicy translation corpus (../shared/corpus/istio-authz, the goldens
of istio/istio pilot/pkg/security/authz/builder/builder_test.go) through
`weft-pilot authz-filters` and compare the filters by meaning (index.json "compare").

How a case runs (corpus README "How a test uses a case"): the case's input file alone in a
config directory; workload namespace and labels from case.json; a MeshConfig with the case's
trust domain bundle (trustDomain + trustDomainAliases) when it has one, plus the case's
meshconfig.yaml (CUSTOM extension providers) when it has one; chain http or tcp.

Comparison (index.json compare): same number of filters in the same order with the same
names and @type; RBAC rules / shadowRules present alike; action equal (absent = ALLOW); the same
policy names; permissions and principals equal as trees where the children of
andRules/orRules/andIds/orIds and the permissions/principals lists are unordered, proto-default
scalars and empty lists/maps are dropped, present empty messages kept; statPrefix and
shadowRulesStatPrefix equal. Field names are compared in one spelling (weft prints Envoy's
snake_case, the goldens protobuf JSON's camelCase).

Cases weft does not pass must be listed, with the reason, in the table of docs/pilot.md section
"Conformance with Istio's authz builder" (rows "| `<case id>` | reason |"). Exit status 0 only
when every case passes except exactly those documented ones; a documented case that passes now
fails the run too (the documentation would be stale). Legacy cases (case.json legacy: true, a
golden the Go test no longer runs) are reported but never counted.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "pilot.md")
DOC_SECTION = "Conformance with Istio's authz builder"

UNORDERED_SETS = {"and_rules", "or_rules", "and_ids", "or_ids"}


def snake(key):
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def norm(value, key=None):
    """Canonical form: snake_case keys, defaults dropped, unordered lists sorted."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            nk = k if key == "policies" or k.startswith("@") else snake(k)
            nv = norm(v, nk)
            if nv is None or nv is False or nv == "" or nv == []:
                continue  # proto3 defaults and empty lists
            if isinstance(nv, int) and not isinstance(nv, bool) and nv == 0:
                continue
            if nk == "policies" and nv == {}:
                continue
            if nk == "action" and nv == "ALLOW":
                continue  # the enum's default
            out[nk] = nv
        if key in UNORDERED_SETS:
            for lk in ("rules", "ids"):
                if lk in out:
                    out[lk] = sorted(out[lk], key=lambda x: json.dumps(x, sort_keys=True))
        return out
    if isinstance(value, list):
        items = [norm(v) for v in value]
        if key in ("permissions", "principals", "value_matchers"):
            items = sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
        return items
    return value


def first_diff(a, b, path="$"):
    """Where two canonical trees first differ, in words."""
    if type(a) is not type(b):
        return "%s: %s vs %s" % (path, json.dumps(a)[:120], json.dumps(b)[:120])
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                return "%s.%s: missing in weft (expected %s)" % (path, k, json.dumps(b[k])[:120])
            if k not in b:
                return "%s.%s: unexpected in weft (%s)" % (path, k, json.dumps(a[k])[:120])
            d = first_diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items in weft, %d expected" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %s in weft, %s expected" % (path, json.dumps(a), json.dumps(b))


def compare_filters(got, want):
    """None when equal by meaning, else why not."""
    if len(got) != len(want):
        return "%d filters, %d expected (%s vs %s)" % (
            len(got), len(want), [f.get("name") for f in got], [f.get("name") for f in want])
    for i, (g, w) in enumerate(zip(got, want)):
        gn, wn = norm(g), norm(w)
        if gn.get("name") != wn.get("name"):
            return "filter %d: name %s, expected %s" % (i, gn.get("name"), wn.get("name"))
        gt, wt = gn.get("typed_config", {}), wn.get("typed_config", {})
        if gt.get("@type") != wt.get("@type"):
            return "filter %d: @type %s, expected %s" % (i, gt.get("@type"), wt.get("@type"))
        for part in ("rules", "shadow_rules"):
            if (part in gt) != (part in wt):
                return "filter %d: %s %s" % (i, part, "present, expected absent" if part in gt
                                             else "absent, expected present")
            if part in gt:
                gp = set(gt[part].get("policies", {}))
                wp = set(wt[part].get("policies", {}))
                if gp != wp:
                    return "filter %d: %s policy names differ: only weft %s, only Istio %s" % (
                        i, part, sorted(gp - wp), sorted(wp - gp))
        d = first_diff(gn, wn, "filter[%d]" % i)
        if d:
            return d
    return None


def documented_failures():
    """{case id: reason} from the docs table."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^#+ " + re.escape(DOC_SECTION) + r"\s*$(.*?)(?=^#+ |\Z)", text, re.M | re.S)
    if not m:
        raise SystemExit("run_authz_cases: %s has no section %r" % (DOC, DOC_SECTION))
    out = {}
    for row in re.finditer(r"^\|\s*`([a-z0-9-]+)`\s*\|\s*(.+?)\s*\|\s*$", m.group(1), re.M):
        out[row.group(1)] = row.group(2)
    return out


def run_case(pilot, case_dir, case):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "config")
        os.mkdir(cfg)
        with open(os.path.join(case_dir, case["input"]), encoding="utf-8") as f:
            src = f.read()
        with open(os.path.join(cfg, case["input"]), "w", encoding="utf-8") as f:
            f.write(src)
        mesh = {}
        if case.get("mesh_config"):
            with open(os.path.join(case_dir, case["mesh_config"]), encoding="utf-8") as f:
                mesh.update(yaml.safe_load(f) or {})
        tdb = case.get("trust_domain_bundle")
        if tdb:
            mesh["trustDomain"] = tdb["trust_domain"]
            mesh["trustDomainAliases"] = tdb["aliases"]
        if case.get("root_namespace"):
            mesh["rootNamespace"] = case["root_namespace"]
        wl = case["workload"]
        cmd = [pilot, "authz-filters", "--config-dir", cfg, "-n", wl["namespace"], "--chain",
               case["chain"], "-l", ",".join("%s=%s" % kv for kv in wl["labels"].items())]
        if mesh:
            mpath = os.path.join(tmp, "mesh.yaml")
            with open(mpath, "w", encoding="utf-8") as f:
                yaml.safe_dump(mesh, f)
            cmd += ["--meshConfig", mpath]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return "timeout", ""
        if proc.returncode != 0:
            return "exit %d: %s" % (proc.returncode, proc.stderr.strip()[:300]), proc.stderr
        try:
            got = json.loads(proc.stdout)
        except ValueError as e:
            return "bad JSON output: %s" % e, proc.stderr
    want = []
    for e in case["expected"]:
        with open(os.path.join(case_dir, e["file"]), encoding="utf-8") as f:
            want.append(yaml.safe_load(f))
    return compare_filters(got, want), proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weft-pilot", required=True)
    ap.add_argument("--shared", required=True, help="the ../shared folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print weft-pilot's notes")
    args = ap.parse_args()
    corpus = os.path.join(args.shared, "corpus", "istio-authz")
    with open(os.path.join(corpus, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    documented = documented_failures()
    passed, failed, legacy, problems = [], [], [], []
    for entry in index["cases"]:
        cid = entry["id"]
        case_dir = os.path.join(corpus, "cases", cid)
        with open(os.path.join(case_dir, "case.json"), encoding="utf-8") as f:
            case = json.load(f)
        why, notes = run_case(args.weft_pilot, case_dir, case)
        if case.get("legacy"):
            legacy.append((cid, why))
            print("LEGACY %-45s %s" % (cid, why or "matches"))
            continue
        if why is None:
            passed.append(cid)
            print("PASS   %s" % cid)
            if cid in documented:
                problems.append("%s passes but docs/pilot.md lists it as failing" % cid)
        else:
            failed.append(cid)
            tag = "KNOWN " if cid in documented else "FAIL  "
            print("%s %-45s %s" % (tag, cid, why))
            if cid in documented:
                print("       documented: %s" % documented[cid])
            else:
                problems.append("%s differs and is not documented: %s" % (cid, why))
        if args.verbose and notes.strip():
            for line in notes.strip().splitlines():
                print("       | %s" % line)
    for cid in documented:
        if cid not in passed and cid not in failed:
            problems.append("docs/pilot.md lists %s, which is not a (non-legacy) case" % cid)
    counted = len(passed) + len(failed)
    print("\nauthz conformance: %d/%d passed, %d documented failures, %d legacy (not counted)"
          % (len(passed), counted, len([c for c in failed if c in documented]), len(legacy)))
    for p in problems:
        print("PROBLEM: %s" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
