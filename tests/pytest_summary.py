#!/usr/bin/python3
"""Print one line per integration group from the JUnit XML files run_pytest.py wrote:
"integration.proxy_a: 120 passed, 2 skipped, 0 failed (12.3 s)", then each skip's reason.

usage: pytest_summary.py DIR
Exit status 0 (a summary never fails the build; ctest's verdict does)."""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    total = [0, 0, 0]
    lines = []
    for path in sorted(glob.glob(os.path.join(d, "pytest-*.xml"))):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            lines.append("%s: unreadable (%s)" % (os.path.basename(path), e))
            continue
        for suite in root.iter("testsuite"):
            n = int(suite.get("tests", 0))
            skipped = int(suite.get("skipped", 0))
            failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            passed = n - skipped - failed
            total[0] += passed
            total[1] += skipped
            total[2] += failed
            lines.append("integration.%s: %d passed, %d skipped, %d failed (%.1f s)" % (
                suite.get("name"), passed, skipped, failed, float(suite.get("time", 0))))
            for case in suite.iter("testcase"):
                sk = case.find("skipped")
                if sk is not None:
                    lines.append("    skipped %s: %s" % (case.get("name"),
                                                         (sk.get("message") or "").strip()))
    if lines:
        print("\n".join(lines))
        print("integration total: %d passed, %d skipped, %d failed" % tuple(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
