#!/usr/bin/python3
"""Summarise a bench/run_proxy_tls.sh run: parse the raw s_time / wrk output, print the tables
and write every raw sample plus the summary as JSON.

usage: report_tls.py --dir BENCH_TMP_DIR --out RESULT.json [--meta key=value]...

Reads DIR/samples.jsonl (one line per load run: round, phase hs|ka|mesh, target, out, rc,
wall_us, proxy_cpu_ns) and DIR/idle.jsonl. Figures per target, medians over rounds:
  hs    full handshakes per proxy CPU-second (s_time's "N connections in T real seconds")
  ka    keep-alive requests per proxy CPU-second over TLS, and req/s (wrk)
  mesh  p50 through two sidecars, plaintext and mTLS; added p50 = mtls - plain per round
  idle  KiB of RSS per idle TLS connection
Ratios "vs haproxy" pair the weft and haproxy samples of the same key type and round, then
take the median (performance.md, section 3). A sample is invalid when its tool failed, made no
request, or wrk reported socket errors or non-2xx answers.
Exit status: 0 all samples valid, 1 otherwise.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import parse_wrk  # noqa: E402


def parse_stime(text):
    m = re.search(r"^(\d+) connections in ([0-9.]+) real seconds", text, re.M)
    return {"handshakes": int(m.group(1)) if m else None}


def load(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def sample_figures(s):
    with open(s["out"], encoding="utf-8", errors="replace") as f:
        text = f.read()
    cpu_s = s["proxy_cpu_ns"] / 1e9
    if s["phase"] == "hs":
        p = parse_stime(text)
        n = p["handshakes"]
        p["valid"] = s["rc"] == 0 and bool(n)
        p["per_cpu_s"] = n / cpu_s if n and cpu_s > 0 else None
    else:
        p = parse_wrk(text)
        p["valid"] = (s["rc"] == 0 and bool(p["requests"]) and p["errors"] == 0
                      and p["non2xx"] == 0)
        p["per_cpu_s"] = p["requests"] / cpu_s if p["requests"] and cpu_s > 0 else None
    p["cpu_s"] = cpu_s
    return p


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, spec="%.0f"):
    return "-" if v is None else spec % v


def summarise(samples, idle):
    by = {}
    for s in samples:
        by.setdefault((s["phase"], s["target"]), []).append(s)
    targets = sorted({s["target"] for s in samples if s["phase"] != "mesh"})
    summary = {"hs": {}, "ka": {}, "mesh": {}, "idle": {}}
    for phase in ("hs", "ka"):
        for t in targets:
            ss = by.get((phase, t), [])
            summary[phase][t] = {
                "per_cpu_s": med(x["fig"]["per_cpu_s"] for x in ss),
                "rps": med(x["fig"].get("rps") for x in ss),
                "handshakes": med(x["fig"].get("handshakes") for x in ss),
            }
        for key in ("ecdsa", "rsa"):
            for other in ("haproxy", "nginx"):
                ratios = []
                for w in by.get((phase, "weft-" + key), []):
                    for h in by.get((phase, other + "-" + key), []):
                        a, b = w["fig"]["per_cpu_s"], h["fig"]["per_cpu_s"]
                        if h["round"] == w["round"] and a and b:
                            ratios.append(a / b)
                summary[phase]["weft-%s_vs_%s" % (key, other)] = med(ratios)
    plain = {s["round"]: s["fig"].get("p50") for s in by.get(("mesh", "mesh-plain"), [])}
    added = []
    for s in by.get(("mesh", "mesh-mtls"), []):
        p = plain.get(s["round"])
        if p is not None and s["fig"].get("p50") is not None:
            added.append(s["fig"]["p50"] - p)
    summary["mesh"] = {
        "plain_p50_us": med(s["fig"].get("p50") for s in by.get(("mesh", "mesh-plain"), [])),
        "mtls_p50_us": med(s["fig"].get("p50") for s in by.get(("mesh", "mesh-mtls"), [])),
        "added_p50_us": med(added),
    }
    for i in idle:
        summary["idle"][i["target"]] = i["result"].get("rss_kib_per_conn")
    if summary["idle"].get("weft-ecdsa") and summary["idle"].get("haproxy-ecdsa"):
        summary["idle"]["weft_vs_haproxy"] = (summary["idle"]["weft-ecdsa"] /
                                              summary["idle"]["haproxy-ecdsa"])
    return targets, summary


def print_tables(targets, summary):
    print("\nTLS termination (medians over rounds; proxy CPU = the proxy's own threads)")
    print("%-14s %18s %18s %12s" % ("target", "handshakes/CPU-s", "ka req/CPU-s", "ka req/s"))
    for t in targets:
        print("%-14s %18s %18s %12s" % (t, fmt(summary["hs"][t]["per_cpu_s"]),
                                        fmt(summary["ka"][t]["per_cpu_s"]),
                                        fmt(summary["ka"][t]["rps"])))
    for key in ("ecdsa", "rsa"):
        for other in ("haproxy", "nginx"):
            k = "weft-%s_vs_%s" % (key, other)
            print("weft vs %-7s (%s): full handshakes per CPU-s %sx, keep-alive req per CPU-s %sx"
                  % (other, key, fmt(summary["hs"][k], "%.2f"), fmt(summary["ka"][k], "%.2f")))
    m = summary["mesh"]
    print("\nsidecar to sidecar (two weft-proxies, 1 connection): p50 plain %s us, mTLS %s us,"
          " added by mTLS %s us" % (fmt(m["plain_p50_us"]), fmt(m["mtls_p50_us"]),
                                    fmt(m["added_p50_us"])))
    print("idle TLS connection, RSS KiB each: " + ", ".join(
        "%s %s" % (k, fmt(v, "%.2f")) for k, v in sorted(summary["idle"].items())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", action="append", default=[])
    a = ap.parse_args()
    samples = load(os.path.join(a.dir, "samples.jsonl"))
    idle = load(os.path.join(a.dir, "idle.jsonl"))
    invalid = 0
    for s in samples:
        s["fig"] = sample_figures(s)
        if not s["fig"]["valid"]:
            invalid += 1
            sys.stderr.write("invalid sample: %s %s round %d (%s)\n"
                             % (s["phase"], s["target"], s["round"], s["out"]))
    for i in idle:
        if i["rc"] != 0:
            invalid += 1
            sys.stderr.write("invalid idle sample: %s\n" % i["target"])
    targets, summary = summarise(samples, idle)
    print_tables(targets, summary)
    meta = dict(m.split("=", 1) for m in a.meta)
    meta["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "summary": summary, "samples": samples, "idle": idle}, f,
                  indent=1)
        f.write("\n")
    return 1 if invalid or not samples else 0


if __name__ == "__main__":
    sys.exit(main())
