#!/usr/bin/python3
"""Summarise a bench/run_proxy.sh run: parse the raw wrk / h2load output, print the tables
and write every raw sample plus the summary as JSON.

usage: report.py --dir BENCH_TMP_DIR --out RESULT.json [--meta key=value]...
                 [--baseline-min RATIO]

Reads DIR/samples.jsonl (one line per load run, written by run_proxy.sh), the output files
it names, DIR/start.jsonl (memory after start) and DIR/idle.jsonl (idle-connection memory).
Statistics: medians over rounds; every comparison between targets ("vs haproxy",
"vs direct", "added") is computed inside each round first and then medianed (paired), as
shared/reference/performance.md (section 3) asks. Times are microseconds, memory KiB.

Baseline comparison: when the targets (--meta targets=...) include "weft-base" (run_proxy.sh's
BENCH_BASELINE mode), the section "weft vs weft-base (REV)" gives, per body, both builds'
req/s, proxy CPU-seconds and requests per proxy CPU-second in the throughput phase, their
per-round ratios weft / weft-base medianed, and the verdict: PASS when the ratio of requests
per proxy CPU-second is >= --baseline-min (default 0.97) at every body size, FAIL when it is
lower or missing. The JSON gets the same figures under "baseline".

Exit status: 0 all samples valid (and the baseline verdict PASS); 1 a sample was invalid;
3 all samples valid, the baseline verdict FAIL.
"""
import argparse
import datetime
import json
import math
import os
import re
import statistics
import sys

UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
BODY_NAMES = {128: "128 B", 16384: "16 KiB"}


def wrk_time_us(text):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    return float(m.group(1)) * UNITS_US[m.group(2)] if m else None


def parse_wrk(text):
    """wrk --latency output -> requests, rps, p50/p75/p90/p99 (us), errors."""
    out = {"requests": None, "rps": None, "errors": 0, "non2xx": 0}
    m = re.search(r"^\s*(\d+) requests in ", text, re.M)
    if m:
        out["requests"] = int(m.group(1))
    m = re.search(r"^Requests/sec:\s*([0-9.]+)", text, re.M)
    if m:
        out["rps"] = float(m.group(1))
    for pct, val in re.findall(r"^\s+(50|75|90|99)%\s+(\S+)$", text, re.M):
        out["p" + pct] = wrk_time_us(val)
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        out["errors"] = sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        out["non2xx"] = int(m.group(1))
    return out


def percentile(values, q):
    """Nearest-rank percentile of a sorted list (q in 0..100)."""
    if not values:
        return None
    k = max(0, min(len(values) - 1, math.ceil(q / 100.0 * len(values)) - 1))
    return values[k]


def parse_h2load(text, log_path):
    """h2load stdout + --log-file (start_us, status, duration_us) -> rate and percentiles."""
    out = {"requests": None, "rps": None, "errors": 0, "non2xx": 0}
    durations, starts = [], []
    try:
        with open(log_path, encoding="ascii") as f:
            for line in f:
                cols = line.split("\t")
                if len(cols) < 3:
                    continue
                if cols[1] != "200":
                    out["non2xx"] += 1
                starts.append(int(cols[0]))
                durations.append(int(cols[2]))
    except OSError:
        pass
    durations.sort()
    out["requests"] = len(durations)
    if len(starts) > 1:
        out["rps"] = (len(starts) - 1) / ((max(starts) - min(starts)) / 1e6)
    for q in (50, 90, 99):
        out["p%d" % q] = percentile(durations, q)
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text)
    if m:
        out["errors"] = sum(int(x) for x in m.groups())
    return out


def busy_fraction(before, after):
    b0, t0, b1, t1 = (int(x) for x in before.split())
    c0, u0, c1, u1 = (int(x) for x in after.split())
    f0 = (c0 - b0) / (u0 - t0) if u0 > t0 else None
    f1 = (c1 - b1) / (u1 - t1) if u1 > t1 else None
    return f0, f1


def enrich(s):
    """Adds the parsed load-generator figures and the derived CPU figures to a sample."""
    try:
        with open(s["out"] + ".txt", encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except OSError:
        raw = ""
    s["raw"] = raw
    parsed = parse_h2load(raw, s["out"] + ".log") if s["phase"] == "fixed" else parse_wrk(raw)
    s.update(parsed)
    s["load_core_busy"], s["proxy_core_busy"] = busy_fraction(s.pop("stat0"), s.pop("stat1"))
    s["valid"] = (s["rc"] == 0 and bool(s["requests"]) and s["errors"] == 0
                  and s["non2xx"] == 0)
    cpu = s.get("proxy_cpu_ns")
    wall_s = s["wall_us"] / 1e6
    if cpu is not None and s["requests"]:
        s["proxy_cpu_share"] = cpu / 1e9 / wall_s
        s["kreq_per_cpu_s"] = s["requests"] / (cpu / 1e9) / 1e3 if cpu else None
        s["cpu_us_per_req"] = cpu / 1e3 / s["requests"]
        rate = s["requests"] / wall_s
        s["vcpu_per_1k_rps"] = s["proxy_cpu_share"] / (rate / 1e3)
        if s["proxy_core_busy"] is not None:
            # CPU 1 time not spent by the proxy: other processes (or the kernel) on its core
            s["foreign_on_proxy_core"] = max(0.0, s["proxy_core_busy"] - s["proxy_cpu_share"])
    return s


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


class Table:
    """Samples indexed by (phase, body, target, round)."""

    def __init__(self, samples):
        self.by = {}
        for s in samples:
            if s["valid"]:
                self.by[(s["phase"], s["body"], s["target"], s["round"])] = s
        self.rounds = sorted({s["round"] for s in samples})

    def values(self, phase, body, target, key):
        return [self.by[k][key] for k in self.by
                if k[:3] == (phase, body, target) and self.by[k].get(key) is not None]

    def median(self, phase, body, target, key):
        return med(self.values(phase, body, target, key))

    def paired_values(self, phase, body, target, ref, key, op):
        """op(target value, ref value) within each round that has both, in round order."""
        out = []
        for r in self.rounds:
            a = self.by.get((phase, body, target, r), {}).get(key)
            b = self.by.get((phase, body, ref, r), {}).get(key)
            if a is not None and b is not None:
                v = op(a, b)
                if v is not None:
                    out.append(v)
        return out

    def paired(self, phase, body, target, ref, key, op):
        """Median over rounds of op(target value, ref value) within the same round."""
        return med(self.paired_values(phase, body, target, ref, key, op))


def ratio(a, b):
    return a / b if b else None


def diff(a, b):
    return a - b


def fmt(v, spec, unit=""):
    return "-" if v is None else (spec % v) + unit


def fmt_us(v):
    if v is None:
        return "-"
    return "%.0f us" % v if abs(v) < 1000 else "%.2f ms" % (v / 1000)


def added_vs_haproxy(tab, phase, body, t):
    """Median over rounds of (p50 t - p50 direct) / (p50 haproxy - p50 direct)."""
    out = []
    for r in tab.rounds:
        vals = [tab.by.get((phase, body, x, r), {}).get("p50") for x in (t, "haproxy", "direct")]
        if None not in vals and vals[1] > vals[2]:
            out.append((vals[0] - vals[2]) / (vals[1] - vals[2]))
    return med(out)


METRICS = ("rps", "p50", "p90", "p99", "kreq_per_cpu_s", "proxy_cpu_share", "cpu_us_per_req",
           "vcpu_per_1k_rps", "load_core_busy", "proxy_core_busy", "foreign_on_proxy_core",
           "rss_kb", "pss_kb")


def summarize_cell(tab, phase, body, t):
    cell = {k: tab.median(phase, body, t, k) for k in METRICS}
    cell["samples"] = len(tab.values(phase, body, t, "requests"))
    if t != "direct":
        for k in ("p50", "p90", "p99"):
            cell["added_" + k] = tab.paired(phase, body, t, "direct", k, diff)
        cell["rps_vs_direct"] = tab.paired(phase, body, t, "direct", "rps", ratio)
    if t not in ("direct", "haproxy"):
        for k in ("rps", "kreq_per_cpu_s", "vcpu_per_1k_rps"):
            cell[k + "_vs_haproxy"] = tab.paired(phase, body, t, "haproxy", k, ratio)
        cell["added_p50_vs_haproxy"] = added_vs_haproxy(tab, phase, body, t)
    return cell


def summarize(tab, targets, bodies):
    return {phase: {str(body): {t: summarize_cell(tab, phase, body, t) for t in targets}
                    for body in bodies}
            for phase in ("thr", "lat", "fixed")}


def print_table(title, header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(title)
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print("  " + line)
    print("  " + "-" * len(line))
    for row in rows:
        print("  " + "  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
    print()


def pct(v):
    return "-" if v is None else "%.0f%%" % (100 * v)


def kb_mb(v):
    return "-" if v is None else "%.1f MB" % (v / 1024)


def print_throughput(summary, targets, bodies, conns_note):
    header = ["target", "req/s", "vs direct", "vs haproxy", "p50", "p99", "k req/proxy CPU-s",
              "CPU/req", "eff vs haproxy", "proxy", "other on core 1", "load core",
              "RSS load", "n"]
    for body in bodies:
        rows = []
        for t in targets:
            c = summary["thr"][str(body)][t]
            rows.append([t, fmt(c["rps"], "%.0f"), fmt(c.get("rps_vs_direct"), "%.2f"),
                         "1.00" if t == "haproxy" else fmt(c.get("rps_vs_haproxy"), "%.2f"),
                         fmt_us(c["p50"]), fmt_us(c["p99"]), fmt(c["kreq_per_cpu_s"], "%.1f"),
                         fmt(c["cpu_us_per_req"], "%.1f us"),
                         "1.00" if t == "haproxy" else fmt(c.get("kreq_per_cpu_s_vs_haproxy"),
                                                            "%.2f"),
                         pct(c["proxy_cpu_share"]), pct(c["foreign_on_proxy_core"]),
                         pct(c["load_core_busy"]),
                         kb_mb(c["rss_kb"]), c["samples"]])
        print_table("Throughput, %s body, %s" % (BODY_NAMES[body], conns_note), header, rows)


def print_latency(summary, targets, bodies, phase, title, with_cpu):
    header = ["target", "body", "p50", "p90", "p99", "added p50", "added p90", "added p99",
              "added p50 vs haproxy"]
    if with_cpu:
        header += ["rate", "proxy vCPU/1k req/s", "vs haproxy"]
    rows = []
    for body in bodies:
        for t in targets:
            c = summary[phase][str(body)][t]
            row = [t, BODY_NAMES[body], fmt_us(c["p50"]), fmt_us(c["p90"]), fmt_us(c["p99"]),
                   fmt_us(c.get("added_p50")), fmt_us(c.get("added_p90")),
                   fmt_us(c.get("added_p99")),
                   "1.00" if t == "haproxy" else fmt(c.get("added_p50_vs_haproxy"), "%.2f")]
            if with_cpu:
                row += [fmt(c["rps"], "%.0f"), fmt(c["vcpu_per_1k_rps"], "%.3f"),
                        "1.00" if t == "haproxy" else fmt(c.get("vcpu_per_1k_rps_vs_haproxy"),
                                                          "%.2f")]
            rows.append(row)
    print_table(title, header, rows)


def print_memory(start, idle, summary, targets, bodies):
    header = ["target", "RSS / PSS after start"] + [
        "RSS load %s" % BODY_NAMES[b] for b in bodies] + [
        "idle KiB/conn RSS", "PSS", "MB per 1k idle", "conns ok"]
    rows = []
    for t in targets:
        if t == "direct":
            continue
        st = start.get(t, {})
        idl = idle.get(t, {}).get("result", {})
        per = idl.get("rss_kib_per_conn")
        rows.append([t, "%s / %s" % (kb_mb(st.get("rss_kb")), kb_mb(st.get("pss_kb")))]
                    + [kb_mb(summary["thr"][str(b)][t]["rss_kb"]) for b in bodies]
                    + [fmt(per, "%.2f"), fmt(idl.get("pss_kib_per_conn"), "%.2f"),
                       fmt(per and per * 1000 / 1024, "%.2f"),
                       "%s/%s" % (idl.get("ok", "-"), idl.get("count", "-"))])
    print_table("Memory (user space; kernel socket memory not included)", header, rows)


BASE = "weft-base"
# (key in the JSON, sample key, heading) of the figures compared between weft and weft-base
BASE_FIGURES = (("rps", "rps", "req/s"), ("proxy_cpu_s", "proxy_cpu_s", "proxy CPU-s"),
                ("req_per_cpu_s", "req_per_cpu_s", "req/proxy CPU-s"))


def add_cpu_seconds(samples):
    """Adds proxy_cpu_s and req_per_cpu_s (requests per proxy CPU-second) to weft's and
    weft-base's samples."""
    for s in samples:
        cpu = s.get("proxy_cpu_ns")
        if s["target"] not in ("weft", BASE) or cpu is None:
            continue
        s["proxy_cpu_s"] = cpu / 1e9
        s["req_per_cpu_s"] = s["requests"] / (cpu / 1e9) if cpu and s["requests"] else None


def compare_baseline(tab, bodies, idle, meta, min_ratio):
    """weft against weft-base: per body the medians of both and the paired ratios
    weft / weft-base (throughput phase), a verdict per body and overall; the other phases'
    ratios (low-load p50, fixed-rate vCPU per 1k req/s) for information."""
    out = {"baseline": meta.get("baseline"), "baseline_sha": meta.get("baseline_sha"),
           "min_ratio": min_ratio, "phase": "thr", "bodies": {}}
    failed = []
    for body in bodies:
        cell = {}
        for t in ("weft", BASE):
            cell[t] = {k: tab.median("thr", body, t, key) for k, key, _ in BASE_FIGURES}
            cell[t]["samples"] = len(tab.values("thr", body, t, "requests"))
        per_round = {k: tab.paired_values("thr", body, "weft", BASE, key, ratio)
                     for k, key, _ in BASE_FIGURES}
        cell["ratio"] = {k: med(v) for k, v in per_round.items()}
        cell["ratio_per_round"] = per_round
        r = cell["ratio"]["req_per_cpu_s"]
        cell["verdict"] = "PASS" if r is not None and r >= min_ratio else "FAIL"
        if cell["verdict"] == "FAIL":
            failed.append(BODY_NAMES.get(body, str(body)))
        cell["lat_p50_ratio"] = tab.paired("lat", body, "weft", BASE, "p50", ratio)
        cell["fixed_vcpu_per_1k_rps_ratio"] = tab.paired("fixed", body, "weft", BASE,
                                                         "vcpu_per_1k_rps", ratio)
        out["bodies"][str(body)] = cell
    per_conn = [idle.get(t, {}).get("result", {}).get("rss_kib_per_conn") for t in ("weft", BASE)]
    out["idle_rss_kib_per_conn"] = dict(zip(("weft", BASE), per_conn))
    out["idle_rss_ratio"] = ratio(*per_conn) if None not in per_conn else None
    out["verdict"] = "FAIL" if failed or not bodies else "PASS"
    out["failed_bodies"] = failed
    return out


def print_baseline(cmp, meta):
    rev = cmp["baseline"] or "?"
    sha = (cmp["baseline_sha"] or "")[:9]
    label = rev if not sha or rev.startswith(sha) or sha.startswith(rev) else "%s = %s" % (
        rev, sha)
    header = ["body", "target"] + [h for _, _, h in BASE_FIGURES] + ["n", "ratio range"]
    rows = []
    for body, cell in cmp["bodies"].items():
        name = BODY_NAMES.get(int(body), body)
        for t in ("weft", BASE):
            c = cell[t]
            rows.append([name, t, fmt(c["rps"], "%.0f"), fmt(c["proxy_cpu_s"], "%.3f"),
                         fmt(c["req_per_cpu_s"], "%.0f"), c["samples"], ""])
        r, rr = cell["ratio"], cell["ratio_per_round"]["req_per_cpu_s"]
        rows.append([name, "ratio", fmt(r["rps"], "%.3f"), fmt(r["proxy_cpu_s"], "%.3f"),
                     fmt(r["req_per_cpu_s"], "%.3f"), len(rr),
                     "%.3f-%.3f" % (min(rr), max(rr)) if rr else "-"])
    print_table("weft vs weft-base (%s): throughput phase, wrk 1 thread, 64 connections; "
                "ratio = weft / weft-base in each round, medianed" % label, header, rows)
    header = ["body", "low-load p50 ratio", "fixed-rate vCPU/1k req/s ratio"]
    rows = [[BODY_NAMES.get(int(b), b), fmt(c["lat_p50_ratio"], "%.3f"),
             fmt(c["fixed_vcpu_per_1k_rps_ratio"], "%.3f")] for b, c in cmp["bodies"].items()]
    print_table("weft vs weft-base, other phases (weft / weft-base, lower is better; idle KiB "
                "per connection ratio %s)" % fmt(cmp["idle_rss_ratio"], "%.3f"), header, rows)
    print("Acceptance (issue 16): requests per proxy CPU-second, weft / weft-base >= %.2f at "
          "every body size" % cmp["min_ratio"])
    for b, c in cmp["bodies"].items():
        print("  %-7s %s  %s" % (BODY_NAMES.get(int(b), b) + ":",
                                 fmt(c["ratio"]["req_per_cpu_s"], "%.3f"), c["verdict"]))
    rounds = meta.get("rounds")
    if isinstance(rounds, int) and rounds < 5:
        print("  note: %d round(s); the acceptance needs medians over >= 5 rounds on a quiet "
              "machine" % rounds)
    if cmp["verdict"] == "PASS":
        print("RESULT: PASS: weft keeps >= %.2fx the requests per proxy CPU-second of "
              "weft-base (%s)\n" % (cmp["min_ratio"], label))
    else:
        print("RESULT: FAIL: weft keeps less than %.2fx the requests per proxy CPU-second of "
              "weft-base (%s) at %s\n" % (cmp["min_ratio"], label,
                                          ", ".join(cmp["failed_bodies"]) or "every body"))


def read_jsonl(path):
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            out = [json.loads(line) for line in f if line.strip()]
    except OSError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", action="append", default=[])
    ap.add_argument("--baseline-min", type=float, default=0.97,
                    help="minimum ratio weft / weft-base of requests per proxy CPU-second")
    args = ap.parse_args()
    meta = dict(kv.split("=", 1) for kv in args.meta)
    for k, v in meta.items():
        if re.fullmatch(r"-?[0-9]+", v):
            meta[k] = int(v)
    meta["date"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    samples = [enrich(s) for s in read_jsonl(os.path.join(args.dir, "samples.jsonl"))]
    start = {s["target"]: s for s in read_jsonl(os.path.join(args.dir, "start.jsonl"))}
    idle = {s["target"]: s for s in read_jsonl(os.path.join(args.dir, "idle.jsonl"))}
    targets = meta.get("targets", "direct nginx haproxy").split()
    bodies = sorted({s["body"] for s in samples})
    with_base = BASE in targets
    if with_base:
        add_cpu_seconds(samples)
    tab = Table(samples)
    summary = summarize(tab, targets, bodies)
    bad = [s for s in samples if not s["valid"]]
    print("\nweft proxy bench %s: %s round(s) x %s s, %s CPUs, pinned=%s (medians; 'vs' "
          "columns are per-round paired ratios, medianed)\n" % (
              meta["date"], meta.get("rounds"), meta.get("duration_s"), meta.get("cpus"),
              meta.get("pinned")))
    print_throughput(summary, targets, bodies, "wrk 1 thread, 64 connections")
    print_latency(summary, targets, bodies, "lat", "Low-load latency (wrk, 1 connection)",
                  False)
    print_latency(summary, targets, bodies, "fixed", "Fixed rate (h2load --h1, %s req/s over %s "
                  "connections)" % (meta.get("fixed_rate"), meta.get("fixed_conns")), True)
    print_memory(start, idle, summary, targets, bodies)
    cmp = None
    if with_base:
        cmp = compare_baseline(tab, bodies, idle, meta, args.baseline_min)
        print_baseline(cmp, meta)
    foreign = [s for s in samples if (s.get("foreign_on_proxy_core") or 0) > 0.1]
    if foreign:
        print("WARNING: in %d of %d proxied samples more than 10%% of CPU 1 went to other "
              "processes than the proxy: the machine was not quiet" % (
                  len(foreign), sum(1 for s in samples if s.get("proxy_cpu_ns") is not None)))
    for s in bad:
        print("INVALID sample: round %d %s %s %d: rc %d, %s requests, %d errors, %d non-2xx" % (
            s["round"], s["phase"], s["target"], s["body"], s["rc"], s["requests"],
            s["errors"], s["non2xx"]))
    for t, i in idle.items():
        r = i.get("result", {})
        if i.get("rc") or r.get("failed") or r.get("closed_by_peer"):
            print("idle %s: %d failed, %d closed by the proxy" % (
                t, r.get("failed", 0), r.get("closed_by_peer", 0)))
    for s in samples:
        s.pop("out", None)
    doc = {"meta": meta, "summary": summary, "start": start, "idle": idle, "samples": samples}
    if cmp is not None:
        doc["baseline"] = cmp
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    if bad:
        return 1
    return 3 if cmp is not None and cmp["verdict"] == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
