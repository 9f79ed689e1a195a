"""bench/proxy/report_tls.py (bench/run_proxy_tls.sh's summary) over synthetic samples: the
figures per proxy CPU-second, the ratios to HAProxy paired inside each round, the mTLS added
p50 paired per round, and invalid samples failing the run. Nothing here runs the benchmark: the
directory is written as run_proxy_tls.sh writes it (samples.jsonl, the tools' output files it
names, idle.jsonl).

The figures are chosen so that pairing inside each round and comparing medians give different
answers, so a report that stopped pairing would fail.
"""
import json
import os
import subprocess

from conftest import ROOT

REPORT = os.path.join(ROOT, "bench", "proxy", "report_tls.py")

# Handshakes (s_time) per round for the ECDSA targets; each run takes 1 proxy CPU-second.
HS = {"weft-ecdsa": [100, 300, 200], "haproxy-ecdsa": [50, 310, 190]}
# paired ratios 2.0, 0.968, 1.053 -> median 1.053 (as is the ratio of medians 200/190).
# Keep-alive requests and proxy CPU-seconds per round: per CPU-second weft 1000, 960, 1500 and
# haproxy 1000, 1000, 500; paired ratios 1.0, 0.96, 3.0 -> median 1.0, while the ratio of the
# medians would be 1000/1000 = 1.0 as well but the mean of the ratios 1.65.
KA = {"weft-ecdsa": [1000, 960, 1500], "haproxy-ecdsa": [1000, 1000, 1000]}
KA_CPU = {"weft-ecdsa": [1.0, 1.0, 1.0], "haproxy-ecdsa": [1.0, 1.0, 2.0]}
MESH_P50 = {"mesh-plain": [150, 400, 160], "mesh-mtls": [190, 420, 230]}
# added per round 40, 20, 70 -> median 40; difference of medians 230-160 = 70


def stime_text(n):
    return ("Collecting connection statistics for 2 seconds\n"
            "%d connections in 0.50s; 200.00 connections/user sec, bytes read 1000\n"
            "%d connections in 3 real seconds, 233 bytes read per connection\n" % (n, n))


def wrk_text(requests, p50_us=100, errors=False):
    return ("Running 2s test @ https://127.0.0.1:1/128\n"
            "  Latency Distribution\n"
            "     50%%  %dus\n     75%%  200us\n     90%%  300us\n     99%%  400us\n"
            "  %d requests in 2.00s, 1.00MB read\n%s"
            "Requests/sec:   %.2f\n" % (p50_us, requests,
                                        "  Socket errors: connect 0, read 3, write 0, timeout 0\n"
                                        if errors else "", requests / 2.0))


def write_run(d, broken=False):
    samples = []

    def add(r, phase, target, text, cpu_s):
        out = os.path.join(d, "r%d-%s-%s.txt" % (r, phase, target))
        with open(out, "w") as f:
            f.write(text)
        samples.append({"round": r, "phase": phase, "target": target, "out": out, "rc": 0,
                        "wall_us": 2_000_000, "proxy_cpu_ns": int(cpu_s * 1e9)})

    for r in (1, 2, 3):
        for t, v in HS.items():
            add(r, "hs", t, stime_text(v[r - 1]), 1.0)
        for t, v in KA.items():
            add(r, "ka", t, wrk_text(v[r - 1], errors=broken and r == 2 and t == "weft-ecdsa"),
                KA_CPU[t][r - 1])
        for t, v in MESH_P50.items():
            add(r, "mesh", t, wrk_text(1000, p50_us=v[r - 1]), 0.5)
    with open(os.path.join(d, "samples.jsonl"), "w") as f:
        for s in samples:
            f.write(json.dumps(s) + "\n")
    with open(os.path.join(d, "idle.jsonl"), "w") as f:
        for t, kib in (("weft-ecdsa", 12.0), ("haproxy-ecdsa", 16.0)):
            f.write(json.dumps({"target": t, "rc": 0, "result": {"rss_kib_per_conn": kib}}) + "\n")


def run(d):
    out = os.path.join(d, "result.json")
    r = subprocess.run(["/usr/bin/python3", REPORT, "--dir", d, "--out", out, "--meta", "x=y"],
                       capture_output=True, text=True, timeout=60)
    return r, out


def test_paired_ratios_and_added_p50(tmp_path):
    write_run(str(tmp_path))
    r, out = run(str(tmp_path))
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        res = json.load(f)
    s = res["summary"]
    assert res["meta"]["x"] == "y"
    assert s["hs"]["weft-ecdsa"]["per_cpu_s"] == 200
    assert abs(s["hs"]["weft-ecdsa_vs_haproxy"] - 200 / 190) < 1e-9
    # keep-alive: paired ratios 1.0, 0.96, 3.0 -> 1.0
    assert abs(s["ka"]["weft-ecdsa_vs_haproxy"] - 1.0) < 1e-9
    assert s["mesh"]["added_p50_us"] == 40  # paired; the difference of medians would be 70
    assert s["idle"]["weft_vs_haproxy"] == 12.0 / 16.0
    assert "added by mTLS 40 us" in r.stdout
    assert "weft vs haproxy (ecdsa): full handshakes per CPU-s 1.05x" in r.stdout


def test_socket_errors_make_the_run_invalid(tmp_path):
    write_run(str(tmp_path), broken=True)
    r, _ = run(str(tmp_path))
    assert r.returncode == 1
    assert "invalid sample: ka weft-ecdsa round 2" in r.stderr
