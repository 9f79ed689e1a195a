#!/usr/bin/python3
"""Run one group of integration tests (pytest) for ctest, and keep what a user needs to see.

usage: run_pytest.py --group NAME --out DIR FILE...

- pytest runs quietly with its pass/fail/skip counts; the result is also written to
  DIR/pytest-NAME.xml (JUnit XML), which tests/pytest_summary.py turns into one line per group
  (with the reasons of skipped tests) at the end of `make test`;
- pytest's temporary folders go under DIR/pytest-tmp-NAME and are removed after a passing
  run (kept after a failure, for the post-mortem: the path is printed);
- the exit status is pytest's (0 when every test passed or was skipped with a reason).
"""
import argparse
import os
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = os.path.join(a.out, "pytest-tmp-" + a.group)
    shutil.rmtree(tmp, ignore_errors=True)
    xml = os.path.join(a.out, "pytest-%s.xml" % a.group)
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
           "--basetemp", tmp, "--junitxml", xml, "-o", "junit_suite_name=" + a.group] + a.files
    rc = subprocess.call(cmd)
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("%s: pytest exit %d; temporary files kept in %s" % (a.group, rc, tmp))
    return rc


if __name__ == "__main__":
    sys.exit(main())
