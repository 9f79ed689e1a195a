#!/usr/bin/python3
"""Run Istio's analyzer conformance corpus (../shared/corpus/istio-analyzers) through
`weftctl analyze` and compare the multiset of (code, resource) pairs per case.

How a case runs (corpus README and harness/harness.json): the case's inputs, all namespaces
(-A), only the case's analyzer, the case's mesh config / mesh networks if any. weftctl adds
the default ingress gateway Pod and Service itself, as istioctl does offline.

Prints a pass table per analyzer. Exit status 0 only when every case passes except the
documented exceptions in EXCEPTIONS (each with its reason).
"""
import argparse
import collections
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Cases the CLI cannot express, with the reason (from the case's own notes).
EXCEPTIONS = {
    "multicluster-inconsistent-multi-cluster-service":
        "needs two clusters' inputs at once; a single-cluster CLI run cannot express it "
        "(istioctl uses live remote clusters via --remote-contexts)",
}


def run_case(weftctl, case_dir, verbose):
    with open(os.path.join(case_dir, "expected.json"), encoding="utf-8") as f:
        exp = json.load(f)
    cmd = [weftctl, "analyze", "-A", "--analyzer", exp["analyzer"], "-o", "json"]
    if exp.get("mesh_config"):
        cmd += ["--meshConfigFile", os.path.join(case_dir, exp["mesh_config"])]
    if exp.get("mesh_networks"):
        cmd += ["--meshNetworksFile", os.path.join(case_dir, exp["mesh_networks"])]
    cmd += [os.path.join(case_dir, "inputs", p) for p in exp["inputs"]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return exp, False, "timeout", None
    if proc.returncode != 0:
        return exp, False, "exit %d: %s" % (proc.returncode, proc.stderr.strip()[:300]), None
    try:
        got = json.loads(proc.stdout)
    except ValueError as e:
        return exp, False, "bad JSON output: %s" % e, None
    want = collections.Counter((m["code"], m["resource"]) for m in exp["expected"])
    have = collections.Counter((m["code"], m["origin"]) for m in got)
    if want == have:
        return exp, True, "", got
    missing = want - have
    extra = have - want
    detail = []
    if missing:
        detail.append("missing " + ", ".join("%s %s x%d" % (c, r, n) for (c, r), n in missing.items()))
    if extra:
        detail.append("extra " + ", ".join("%s %s x%d" % (c, r, n) for (c, r), n in extra.items()))
    return exp, False, "; ".join(detail), got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weftctl", default=os.path.join(ROOT, "build", "weftctl"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--analyzer", help="only cases of this analyzer")
    ap.add_argument("--case", help="only this case slug")
    ap.add_argument("-v", "--verbose", action="store_true", help="print messages of failures")
    args = ap.parse_args()

    cases_dir = os.path.join(args.shared, "corpus", "istio-analyzers", "cases")
    slugs = sorted(os.listdir(cases_dir))
    table = collections.OrderedDict()
    failures = []
    for slug in slugs:
        if args.case and slug != args.case:
            continue
        case_dir = os.path.join(cases_dir, slug)
        with open(os.path.join(case_dir, "expected.json"), encoding="utf-8") as f:
            analyzer = json.load(f)["analyzer"]
        if args.analyzer and analyzer != args.analyzer:
            continue
        row = table.setdefault(analyzer, [0, 0, 0])
        if slug in EXCEPTIONS:
            row[2] += 1
            print("SKIP %s: %s" % (slug, EXCEPTIONS[slug]))
            continue
        exp, ok, detail, got = run_case(args.weftctl, case_dir, args.verbose)
        if ok:
            row[0] += 1
        else:
            row[1] += 1
            failures.append(slug)
            print("FAIL %s (%s): %s" % (slug, analyzer, detail))
            if args.verbose and got is not None:
                for m in got:
                    print("    got: %s %s %s" % (m["code"], m["origin"], m["message"]))
    print()
    print("%-58s %5s %5s %5s" % ("analyzer", "pass", "fail", "skip"))
    tot = [0, 0, 0]
    for name, (p, f, s) in table.items():
        print("%-58s %5d %5d %5d" % (name, p, f, s))
        tot = [tot[0] + p, tot[1] + f, tot[2] + s]
    print("%-58s %5d %5d %5d" % ("total", tot[0], tot[1], tot[2]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
