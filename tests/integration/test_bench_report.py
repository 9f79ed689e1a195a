"""bench/proxy/report.py's weft vs weft-base comparison (run_proxy.sh BENCH_BASELINE mode) over
synthetic samples, and build_baseline.sh's refusal of an unknown revision. Nothing here runs
the benchmark: the samples directory is written as run_proxy.sh writes it (samples.jsonl plus
the wrk output and h2load log each sample names).

The figures are chosen so that the paired statistic (ratio inside each round, then the median)
and the unpaired one (ratio of the medians) give different verdicts.
"""
import json
import os
import subprocess

import pytest

from conftest import ROOT

REPORT = os.path.join(ROOT, "bench", "proxy", "report.py")
BUILD_BASELINE = os.path.join(ROOT, "bench", "proxy", "build_baseline.sh")
WALL_US = 2_000_000
BODIES = (128, 16384)

# Requests per proxy CPU-second in the throughput phase, per round 1..3.
# 128 B: paired ratios 2.0, 0.952, 1.034 -> median 1.034 (PASS); ratio of medians
# 200/210 = 0.952 would FAIL.
# 16 KiB: paired ratios 0.96, 0.95, 1.5 -> median 0.96 (FAIL); ratio of medians 100/100 = 1.0
# would PASS.
EFF = {
    ("weft", 128): [100, 200, 300],
    ("weft-base", 128): [50, 210, 290],
    ("weft", 16384): [96, 95, 150],
    ("weft-base", 16384): [100, 100, 100],
}
# Proxy CPU-seconds per thr run (differs per target so that the CPU ratio is checked too).
CPU_S = {"weft": 1.5, "weft-base": 2.0}


def wrk_text(requests):
    return ("Running 2s test @ http://127.0.0.1:1/x\n"
            "  1 threads and 64 connections\n"
            "  Latency Distribution\n"
            "     50%%  1.00ms\n     75%%  1.20ms\n     90%%  1.50ms\n     99%%  2.00ms\n"
            "  %d requests in 2.00s, 1.00MB read\n"
            "Requests/sec:  %.2f\n" % (requests, requests / (WALL_US / 1e6)))


def write_run(d, targets, eff=None, invalid=None):
    """Writes samples.jsonl and the outputs it names for 3 rounds of every phase."""
    eff = EFF if eff is None else eff
    out_dir = os.path.join(d, "out")
    os.makedirs(out_dir)
    lines = []
    for r in (1, 2, 3):
        for phase in ("thr", "lat", "fixed"):
            for body in BODIES:
                for t in targets:
                    out = os.path.join(out_dir, "r%d-%s-%s-%d" % (r, phase, t, body))
                    cpu_ns = None
                    if phase == "thr" and (t, body) in eff:
                        cpu_s = CPU_S[t]
                        requests = round(eff[(t, body)][r - 1] * cpu_s)
                        cpu_ns = int(cpu_s * 1e9)
                    else:
                        requests = 1000
                        if t != "direct":
                            cpu_ns = 100_000_000
                    if phase == "fixed":
                        with open(out + ".log", "w", encoding="ascii") as f:
                            for i in range(requests):
                                f.write("%d\t200\t%d\n" % (i * 1000, 500))
                        text = ""
                    else:
                        text = wrk_text(requests)
                    with open(out + ".txt", "w", encoding="ascii") as f:
                        f.write(text)
                    rc = 1 if invalid == (r, phase, t, body) else 0
                    lines.append({
                        "round": r, "phase": phase, "target": t, "body": body, "out": out,
                        "rc": rc, "wall_us": WALL_US, "proxy_cpu_ns": cpu_ns,
                        "rss_kb": 1000 if cpu_ns is not None else None,
                        "pss_kb": 900 if cpu_ns is not None else None,
                        "stat0": "0 0 0 0", "stat1": "100 200 100 200"})
    with open(os.path.join(d, "samples.jsonl"), "w", encoding="utf-8") as f:
        for s in lines:
            f.write(json.dumps(s) + "\n")
    with open(os.path.join(d, "idle.jsonl"), "w", encoding="utf-8") as f:
        for t, kib in (("weft", 3.0), ("weft-base", 4.0)):
            if t in targets:
                f.write(json.dumps({"target": t, "rc": 0, "result": {
                    "rss_kib_per_conn": kib, "ok": 10, "count": 10}}) + "\n")


def run_report(d, targets, *extra):
    out = os.path.join(d, "result.json")
    meta = ["--meta", "targets=" + " ".join(targets), "--meta", "rounds=3",
            "--meta", "duration_s=2", "--meta", "baseline=HEAD~3",
            "--meta", "baseline_sha=abcdef1234567890abcdef1234567890abcdef12"]
    p = subprocess.run(["/usr/bin/python3", REPORT, "--dir", d, "--out", out, *meta, *extra],
                       capture_output=True, text=True, timeout=60)
    doc = None
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
    return p, doc


TARGETS = ["direct", "weft", "weft-base"]


def test_paired_ratio_and_verdict_per_body(tmp_path):
    d = str(tmp_path)
    write_run(d, TARGETS)
    p, doc = run_report(d, TARGETS)
    assert p.returncode == 3, p.stdout + p.stderr
    base = doc["baseline"]
    b128, b16k = base["bodies"]["128"], base["bodies"]["16384"]
    assert b128["ratio"]["req_per_cpu_s"] == pytest.approx(300 / 290)
    assert b128["verdict"] == "PASS"
    assert b16k["ratio"]["req_per_cpu_s"] == pytest.approx(0.96)
    assert b16k["verdict"] == "FAIL"
    assert b128["ratio_per_round"]["req_per_cpu_s"] == pytest.approx([2.0, 200 / 210, 300 / 290])
    # medians of each build and the CPU-second ratio
    assert b128["weft"]["req_per_cpu_s"] == pytest.approx(200, rel=1e-3)
    assert b128["weft-base"]["req_per_cpu_s"] == pytest.approx(210, rel=1e-3)
    assert b128["weft"]["proxy_cpu_s"] == pytest.approx(1.5)
    assert b128["ratio"]["proxy_cpu_s"] == pytest.approx(0.75)
    assert b128["weft"]["samples"] == 3
    assert base["verdict"] == "FAIL" and base["failed_bodies"] == ["16 KiB"]
    assert base["idle_rss_ratio"] == pytest.approx(0.75)
    assert "weft vs weft-base (HEAD~3 = abcdef123)" in p.stdout
    assert "RESULT: FAIL" in p.stdout and "at 16 KiB" in p.stdout
    # weft-base is a full target of the ordinary tables too
    assert "weft-base" in doc["summary"]["thr"]["128"]


def test_all_pass_exits_zero(tmp_path):
    d = str(tmp_path)
    eff = dict(EFF)
    eff[("weft", 16384)] = [100, 97, 150]  # ratios 1.0, 0.97, 1.5 -> median 1.0
    write_run(d, TARGETS, eff=eff)
    p, doc = run_report(d, TARGETS)
    assert p.returncode == 0, p.stdout + p.stderr
    assert doc["baseline"]["verdict"] == "PASS"
    assert "RESULT: PASS" in p.stdout


def test_min_ratio_is_an_option(tmp_path):
    d = str(tmp_path)
    write_run(d, TARGETS)
    p, doc = run_report(d, TARGETS, "--baseline-min", "0.95")
    assert p.returncode == 0, p.stdout + p.stderr
    assert doc["baseline"]["min_ratio"] == 0.95
    p, doc = run_report(d, TARGETS, "--baseline-min", "1.1")
    assert p.returncode == 3
    assert doc["baseline"]["failed_bodies"] == ["128 B", "16 KiB"]


def test_invalid_sample_takes_precedence(tmp_path):
    d = str(tmp_path)
    write_run(d, TARGETS, invalid=(2, "lat", "direct", 128))
    p, doc = run_report(d, TARGETS)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "INVALID sample: round 2 lat direct 128" in p.stdout
    assert doc["baseline"]["verdict"] == "FAIL"


def test_missing_baseline_ratio_fails(tmp_path):
    d = str(tmp_path)
    eff = {k: v for k, v in EFF.items() if k[0] == "weft"}
    write_run(d, ["direct", "weft"], eff=eff)
    # weft-base is named as a target but has no sample: no ratio, so no PASS
    p, doc = run_report(d, TARGETS)
    assert p.returncode == 3, p.stdout + p.stderr
    assert doc["baseline"]["bodies"]["128"]["ratio"]["req_per_cpu_s"] is None
    assert doc["baseline"]["failed_bodies"] == ["128 B", "16 KiB"]


def test_no_baseline_no_section(tmp_path):
    d = str(tmp_path)
    targets = ["direct", "weft"]
    eff = {k: v for k, v in EFF.items() if k[0] == "weft"}
    write_run(d, targets, eff=eff)
    p, doc = run_report(d, targets)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "weft-base" not in p.stdout and "RESULT" not in p.stdout
    assert "baseline" not in doc
    assert all("proxy_cpu_s" not in s for s in doc["samples"])


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, ".git")),
                    reason="the sources are not a git checkout")
def test_build_baseline_unknown_revision(tmp_path):
    p = subprocess.run([BUILD_BASELINE, "no-such-revision-xyz", str(tmp_path / "cache")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "no-such-revision-xyz" in p.stderr and "is not a commit" in p.stderr
    assert p.stdout == ""
    assert not (tmp_path / "cache").exists()
