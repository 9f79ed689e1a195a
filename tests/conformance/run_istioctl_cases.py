#!/usr/bin/python3
"""Run the istioctl golden corpus (../shared/corpus/istioctl-golden/cases/*/case.json) through
weftctl and compare each output with the case's compare mode (index.json "compare_modes").

A case's `input_kind` says how weftctl gets its input; one module per kind family in
istioctl_kinds/ runs it:
    istioctl_kinds/<module>.py  with  KINDS = ["envoy-config-dump", ...]
                                and   def run(case, ctx) -> (returncode, stdout, stderr)
ctx has .weftctl (path), .golden (the corpus folder), .now (the fixed clock, RFC 3339, for
time-dependent cases; weftctl reads it from $WEFTCTL_NOW), .tmp (a scratch folder) and
.path(rel) (absolute path of a corpus file).

A case whose kind no module handles FAILS ("no runner for input kind ..."): nothing is
skipped silently. Exit status 0 only when every case passes.

    run_istioctl_cases.py --weftctl build/weftctl --shared ../shared [--only PREFIX] [-v]
"""
import argparse
import glob
import importlib.util
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# Inside every time-dependent case's validity window (certificates valid 2024-10-27 ..
# 2033-05-02 in the goldens).
FIXED_NOW = "2026-06-01T12:00:00Z"


class Ctx:
    def __init__(self, weftctl, golden, tmp):
        self.weftctl, self.golden, self.tmp, self.now = weftctl, golden, tmp, FIXED_NOW

    def path(self, rel):
        return os.path.join(self.golden, rel)


def load_runners():
    runners = {}
    for f in sorted(glob.glob(os.path.join(HERE, "istioctl_kinds", "*.py"))):
        name = os.path.splitext(os.path.basename(f))[0]
        if name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location("istioctl_kinds." + name, f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for kind in getattr(mod, "KINDS", []):
            runners[kind] = mod.run
    return runners


def compare(case, ctx, rc, out, err):
    """Returns None when the case passes, else the reason."""
    mode = case["compare"]
    if mode in ("error", "error-contains"):
        if rc == 0:
            return "expected a failure, got exit 0"
        want = case.get("expected_error_contains")
        if mode == "error-contains" and want and want not in err + out:
            return "error output lacks %r:\n%s" % (want, err + out)
        return None
    if rc != 0:
        return "exit %d\nstderr:\n%s" % (rc, err)
    if mode == "contains":
        missing = [s for s in case["expected_stdout_contains"] if s not in out]
        return "stdout lacks %r:\n%s" % (missing, out) if missing else None
    with open(ctx.path(case["expected"]), encoding="utf-8") as f:
        want = f.read()
    if mode == "exact":
        ok = out == want
    elif mode in ("exact-trimmed", "json-reindent-4"):
        ok = out.strip() == want.strip()
    elif mode == "json-semantic":
        try:
            ok = json.loads(out) == json.loads(want)
        except ValueError as e:
            return "not JSON: %s\n%s" % (e, out)
    else:
        return "unknown compare mode %r" % mode
    if ok:
        return None
    import difflib
    diff = "".join(difflib.unified_diff(want.splitlines(True), out.splitlines(True),
                                        "expected", "weftctl"))
    return "output differs (%s):\n%s" % (mode, diff[:6000])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weftctl", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--only", default="", help="run only the cases whose id starts with this")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    golden = os.path.join(os.path.abspath(a.shared), "corpus", "istioctl-golden")
    runners = load_runners()
    cases = sorted(glob.glob(os.path.join(golden, "cases", "*", "case.json")))
    failed, ran = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Ctx(os.path.abspath(a.weftctl), golden, tmp)
        for cf in cases:
            with open(cf, encoding="utf-8") as f:
                case = json.load(f)
            if not case["id"].startswith(a.only):
                continue
            ran += 1
            run = runners.get(case.get("input_kind"))
            if not run:
                why = "no runner for input kind %r" % case.get("input_kind")
            else:
                try:
                    why = compare(case, ctx, *run(case, ctx))
                except Exception as e:  # a runner bug fails the case, never the whole run
                    why = "runner error: %r" % (e,)
            print("%-4s %s" % ("ok" if why is None else "FAIL", case["id"]))
            if why is not None:
                failed.append(case["id"])
                if a.v:
                    print("     " + why.replace("\n", "\n     "))
    print("%d/%d istioctl golden cases pass" % (ran - len(failed), ran))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
