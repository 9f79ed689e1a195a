#!/usr/bin/env bash
# run_pilot_scale.sh BUILD_DIR [-n CLIENTS] [-r ROUNDS] [-s SERVICES] [-t TIMEOUT_S]
#                   [--pilot PATH] [--keep]
# The pilot scale benchmark (issue 5): weft-pilot with the book's ch11/resources-600.yaml plus
# a generated mesh (bench/gen_mesh.py: SERVICES services, default 1000, in 10 namespaces,
# one Pod per service plus a v2 Pod for each of the 100 services with a VirtualService),
# and CLIENTS simulated sidecars (BUILD_DIR/weft-xds-load, default 1000), one ADS stream each.
#
# Measured:
#  - initial: the time until every client had its first response and until every client ACKed
#    its whole initial config (CDS, EDS, LDS, RDS), p50/p99/max, from the client's start;
#  - ROUNDS rounds (default 3) of two changes each, made by the load client itself (it
#    renames a prepared file over the watched one and starts its clock just before):
#      vs   the first VirtualService's weights 90/10 <-> 50/50 (a full push; RDS changes),
#      pod  the last Pod's IP (a pod no client is) (endpoint-only: an EDS push);
#    per client the time from the rename until it ACKed the last response carrying a new
#    version: p50/p99/max over the clients. These times INCLUDE pilot's debounce
#    (PILOT_DEBOUNCE_AFTER, 100 ms quiet by default, left at its default here), the fs event
#    and the config rebuild, as an operator would see them;
#  - pilot's memory: VmHWM and VmRSS (/proc/PID/status) after the initial connection, and the
#    peak during the changes (VmHWM is reset through /proc/PID/clear_refs after the initial
#    phase; needs to own the process); pilot CPU seconds (utime+stime, /proc/PID/stat) for the
#    initial phase and per change.
# Targets (issue 5): <= 1 s to converge every proxy after one change, <= 200 MB RSS.
# The web view (issue 22), after the changes with every client still connected: pilot's RSS,
# then the load client starts answering pilot's scrapes (weft-xds-load --serve-metrics
# --metrics-on-command; pilot runs with --uiScrapeInterval 5s --uiScrapeAddr) and, once three
# rounds scraped every client, the time of /ui/api/validations (first: the analysis of the
# snapshot; second: from its cache), /ui/api/proxies, /ui/api/graph (built, then cached, and a
# one-hour window), /ui/api/scrape, and pilot's RSS growth from before the scraping (so the
# metrics store counts); each answer must take < 500 ms, the graph must have edges and the
# growth be < 50 MB, else the bench exits 1.
# Pinning: with 2+ CPUs pilot runs on CPU 1 and the load client on CPU 0.
# Output: a summary on stdout; the client's raw lines and the figures as JSON go to
# bench/results/pilot-scale-YYYYmmdd-HHMMSS.json ($BENCH_RESULTS_DIR instead when set).
# --keep keeps the temporary directory.
# --pilot PATH runs another weft-pilot binary (e.g. a patched build) against the same setup.
# The Kubernetes mode (issue 21: the test API server, 5,000 Pods, endpoint churn, the folder
# source in the same run) is bench/run_pilot_kube.sh (make bench-pilot-kube).
# shellcheck disable=SC2086
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_pilot_scale.sh BUILD_DIR [-n CLIENTS] [-r ROUNDS] [-s SERVICES]" \
    "[-t TIMEOUT_S] [--pilot PATH] [--keep]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD="" CLIENTS=1000 ROUNDS=3 SERVICES=1000 TIMEOUT=900 PILOT="" KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
  -n) CLIENTS=${2:?}; shift 2 ;;
  -r) ROUNDS=${2:?}; shift 2 ;;
  -s) SERVICES=${2:?}; shift 2 ;;
  -t) TIMEOUT=${2:?}; shift 2 ;;
  --pilot) PILOT=${2:?}; shift 2 ;;
  --keep) KEEP=1; shift ;;
  -h | --help) usage ;;
  -*) echo "run_pilot_scale.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
for v in "$CLIENTS" "$ROUNDS" "$SERVICES" "$TIMEOUT"; do [[ $v =~ ^[1-9][0-9]*$ ]] || usage; done
PILOT=${PILOT:-$BUILD/weft-pilot}
LOAD=$BUILD/weft-xds-load
for exe in "$PILOT" "$LOAD"; do
  [ -x "$exe" ] || { echo "run_pilot_scale.sh: $exe is not built (run make)" >&2; exit 1; }
done
SHARED=${WEFT_SHARED:-$ROOT/../shared}
R600=$SHARED/corpus/istioinaction/ch11/resources-600.yaml
[ -r "$R600" ] || { echo "run_pilot_scale.sh: $R600 missing" >&2; exit 1; }

DIR=$(mktemp -d /tmp/weft-pilot-scale.XXXXXX)
PILOT_PID="" LOAD_PID=""
cleanup() {
  exec 3>&- 2>/dev/null || true
  for p in $LOAD_PID $PILOT_PID; do kill "$p" 2>/dev/null || true; done
  for p in $LOAD_PID $PILOT_PID; do wait "$p" 2>/dev/null || true; done
  if [ "$KEEP" = 1 ]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PIN_PILOT="" PIN_LOAD=""
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  PIN_PILOT="taskset -c 1" PIN_LOAD="taskset -c 0"
fi
HZ=$(getconf CLK_TCK)

/usr/bin/python3 "$HERE/gen_mesh.py" -n "$SERVICES" "$DIR/mesh" >/dev/null
cp "$R600" "$DIR/mesh/config/"
npods=$(wc -l <"$DIR/mesh/proxies.txt")
[ "$CLIENTS" -le "$npods" ] || { echo "run_pilot_scale.sh: only $npods pods for -n $CLIENTS" >&2; exit 1; }
mkdir -p "$DIR/stage"

# ---- pilot ----
# The web view's scrape loop every UI_SCRAPE_S against the load client's synthetic metrics
# (weft-xds-load --serve-metrics, started only at the "metrics" command after the changes)
UI_SCRAPE_S=5
MPORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$PIN_PILOT "$PILOT" --config-dir "$DIR/mesh/config" --config-dir "$DIR/mesh/pods" \
  --grpcAddr 127.0.0.1:0 --monitoringAddr 127.0.0.1:0 --default-namespace istioinaction \
  --uiScrapeInterval ${UI_SCRAPE_S}s --uiScrapeAddr 127.0.0.1:$MPORT \
  --disconnected-retention-s 60 -l warning >"$DIR/pilot.out" 2>"$DIR/pilot.err" &
PILOT_PID=$!

# wait_line FILE PATTERN COUNT TIMEOUT_S: until FILE has COUNT lines matching PATTERN. FILE
# may not exist yet (a background command's redirection is made in its own process): no
# count is 0 (an empty one made the test fail and the loop stop at once, a flake in CI).
wait_line() {
  local deadline=$((SECONDS + $4)) n
  for (( ; ; )); do
    n=$(grep -c -- "$2" "$1" 2>/dev/null || true)
    [ "${n:-0}" -lt "$3" ] || break
    if ! kill -0 "$PILOT_PID" 2>/dev/null; then
      echo "run_pilot_scale.sh: weft-pilot died; stderr:" >&2
      tail -20 "$DIR/pilot.err" >&2
      exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "run_pilot_scale.sh: timed out waiting for '$2' in $1" >&2
      exit 1
    fi
    sleep 0.1
  done
}
wait_line "$DIR/pilot.out" "^listening on" 2 60
XDS=$(sed -n '1s/^listening on //p' "$DIR/pilot.out")
MON=$(sed -n '2s/^listening on //p' "$DIR/pilot.out")
# /ready: the first snapshot is built and served
deadline=$((SECONDS + 120))
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$MON/ready" || true)" = 200 ]; do
  [ $SECONDS -lt $deadline ] || { echo "run_pilot_scale.sh: pilot not ready" >&2; exit 1; }
  sleep 0.1
done

# pilot_sample: sets RSS_KB, HWM_KB, CPU_S (utime+stime) with bash builtins only.
pilot_sample() {
  local k v _
  RSS_KB=0 HWM_KB=0
  while read -r k v _; do
    case $k in VmRSS:) RSS_KB=$v ;; VmHWM:) HWM_KB=$v ;; esac
  done </proc/$PILOT_PID/status
  local stat
  read -r stat </proc/$PILOT_PID/stat
  stat=${stat##*) }
  read -r -a f <<<"$stat"
  CPU_S=$(awk -v u="${f[11]}" -v s="${f[12]}" -v hz="$HZ" 'BEGIN {printf "%.2f", (u + s) / hz}')
}
pilot_sample
BASE_RSS=$RSS_KB BASE_CPU=$CPU_S

# ---- load client ----
mkfifo "$DIR/ctl"
$PIN_LOAD "$LOAD" --addr "$XDS" --proxies "$DIR/mesh/proxies.txt" -n "$CLIENTS" \
  --timeout-s "$TIMEOUT" --serve-metrics 127.0.0.1:$MPORT --metrics-on-command \
  <"$DIR/ctl" >"$DIR/load.out" 2>"$DIR/load.err" &
LOAD_PID=$!
exec 3>"$DIR/ctl"
echo "pilot scale: $SERVICES generated services + resources-600.yaml, $CLIENTS simulated sidecars," \
  "$ROUNDS round(s); pilot ${PIN_PILOT:-unpinned}, client ${PIN_LOAD:-unpinned}"
wait_line "$DIR/load.out" "^READY" 1 $((TIMEOUT + 30))
pilot_sample
INIT_RSS=$RSS_KB INIT_HWM=$HWM_KB INIT_CPU=$(awk -v a="$CPU_S" -v b="$BASE_CPU" 'BEGIN {printf "%.2f", a - b}')
echo 5 >/proc/$PILOT_PID/clear_refs 2>/dev/null || true # reset VmHWM: the peak of the changes
CPU_MARK=$CPU_S
CHG_CPU=()

# ---- changes ----
n=0
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then side=b; else side=a; fi
  for kind in vs pod; do
    ext=yaml
    [ $kind = pod ] && ext=json
    cp "$DIR/mesh/changes/$kind-$side.$ext" "$DIR/stage/$kind"
    sleep 1 # pilot quiet: the previous change's debounce and pushes are over
    pilot_sample
    CPU_MARK=$CPU_S
    echo "change $kind $DIR/stage/$kind $(cat "$DIR/mesh/changes/$kind.target")" >&3
    n=$((n + 1))
    wait_line "$DIR/load.out" "^RESULT" $n $((TIMEOUT + 30))
    pilot_sample
    CHG_CPU+=("$(awk -v a="$CPU_S" -v b="$CPU_MARK" 'BEGIN {printf "%.2f", a - b}')")
  done
done
pilot_sample
CHG_HWM=$HWM_KB

# ---- the web view (issue 22) ----
# With the mesh loaded and every client still connected (see the header): the scrape loop's
# data, then every endpoint of the view; pilot's RSS before the scraping and after. Limits
# (issue 22): each answer < UI_LIMIT_MS, RSS growth < UI_LIMIT_MB; over them the bench fails
# (exit 1) after its summary.
UI_LIMIT_MS=500 UI_LIMIT_MB=50
pilot_sample
UI_RSS0=$RSS_KB
# the proxies' metrics from now on: pilot's scrape rounds fill its store; the graph is asked for
# once three rounds have scraped every client (a rate needs two scrapes of a proxy)
echo metrics >&3
wait_line "$DIR/load.out" "^METRICS serving" 1 60
rounds_seen=0 last_ok=0 deadline=$((SECONDS + 20 * UI_SCRAPE_S))
prev_round=""
while [ $rounds_seen -lt 3 ] && [ $SECONDS -lt $deadline ]; do
  sleep 1
  g=$(curl -s "http://$MON/ui/api/graph" | /usr/bin/python3 -c '
import json, sys
try:
    s = json.load(sys.stdin).get("scrape", {})
    print(s.get("ok", 0), s.get("last_round_ms", 0))
except Exception:
    print(0, 0)')
  last_ok=${g%% *} round=${g##* }
  if [ "$round" != "$prev_round" ] && [ "$last_ok" -ge "$CLIENTS" ]; then
    rounds_seen=$((rounds_seen + 1))
  fi
  prev_round=$round
done
[ $rounds_seen -ge 3 ] || echo "run_pilot_scale.sh: only $last_ok of $CLIENTS proxies scraped after $((20 * UI_SCRAPE_S)) s" >&2
sleep $UI_SCRAPE_S # the graph of a new round: built at the request, then cached
ui_get() { # ui_get NAME PATH: sets UI_CODE and UI_MS; the answer goes to $DIR/ui-NAME.json
  local r
  r=$(curl -s -o "$DIR/ui-$1.json" -w '%{http_code} %{time_total}' "http://$MON$2" || echo "000 0")
  UI_CODE=${r%% *}
  UI_MS=$(awk -v t="${r##* }" 'BEGIN {printf "%.1f", t * 1000}')
}
UI_LINES=()
for step in "validations_first /ui/api/validations" "validations_cached /ui/api/validations" \
  "proxies /ui/api/proxies" "graph /ui/api/graph" "graph_cached /ui/api/graph" \
  "graph_1h /ui/api/graph?window=3600" "scrape /ui/api/scrape"; do
  name=${step%% *}
  ui_get "$name" "${step#* }"
  UI_LINES+=("$name $UI_CODE $UI_MS $(stat -c %s "$DIR/ui-$name.json" 2>/dev/null || echo 0)")
done
pilot_sample
UI_RSS1=$RSS_KB
echo quit >&3
exec 3>&-
wait "$LOAD_PID" 2>/dev/null || true
LOAD_PID=""

RESULTS=${BENCH_RESULTS_DIR:-$HERE/results}
mkdir -p "$RESULTS"
OUT="$RESULTS/pilot-scale-$(date +%Y%m%d-%H%M%S).json"
SUMMARY_RC=0
UI_STEPS=$(printf '%s\n' "${UI_LINES[@]}") UI_RSS0=$UI_RSS0 UI_RSS1=$UI_RSS1 \
UI_LIMIT_MS=$UI_LIMIT_MS UI_LIMIT_MB=$UI_LIMIT_MB \
/usr/bin/python3 - "$DIR/load.out" "$OUT" "$CLIENTS" "$SERVICES" "$BASE_RSS" "$INIT_RSS" \
  "$INIT_HWM" "$CHG_HWM" "$INIT_CPU" "${CHG_CPU[@]}" <<'EOF' || SUMMARY_RC=$?
import json, os, sys
load_out, out, clients, services = sys.argv[1:5]
base_rss, init_rss, init_hwm, chg_hwm = (int(v) / 1024 for v in sys.argv[5:9])
init_cpu = float(sys.argv[9])
chg_cpu = [float(v) for v in sys.argv[10:]]
ready, results = None, []
for line in open(load_out):
    if line.startswith("READY "):
        ready = json.loads(line[6:])
    elif line.startswith("RESULT "):
        results.append(json.loads(line[7:]))
for r, c in zip(results, chg_cpu):
    r["pilot_cpu_s"] = c
peak = max(init_hwm, chg_hwm)
doc = {"clients": int(clients), "services": int(services), "initial": ready, "changes": results,
       "pilot": {"rss_start_mb": base_rss, "rss_after_initial_mb": init_rss,
                 "hwm_initial_mb": init_hwm, "hwm_changes_mb": chg_hwm, "rss_peak_mb": peak,
                 "cpu_initial_s": init_cpu}}
ui = {"steps": {}, "rss_before_mb": int(os.environ["UI_RSS0"]) / 1024,
      "rss_after_mb": int(os.environ["UI_RSS1"]) / 1024,
      "limit_ms": float(os.environ["UI_LIMIT_MS"]), "limit_mb": float(os.environ["UI_LIMIT_MB"])}
for line in os.environ["UI_STEPS"].splitlines():
    name, code, ms, size = line.split()
    ui["steps"][name] = {"status": int(code), "ms": float(ms), "bytes": int(size)}
ui["rss_growth_mb"] = ui["rss_after_mb"] - ui["rss_before_mb"]
ui_fail = [n for n, st in ui["steps"].items()
           if st["status"] != 200 or st["ms"] >= ui["limit_ms"]]
try:
    g = json.load(open(os.path.join(os.path.dirname(load_out), "ui-graph.json")))
    ui["graph"] = {"nodes": len(g.get("nodes", [])), "edges": len(g.get("edges", [])),
                   "scrape": g.get("scrape", {})}
except Exception:
    ui["graph"] = {"nodes": 0, "edges": 0, "scrape": {}}
if ui["graph"]["edges"] == 0:
    ui_fail.append("graph has no edges")
if ui["rss_growth_mb"] >= ui["limit_mb"]:
    ui_fail.append("rss")
ui["ok"] = not ui_fail
doc["ui"] = ui
json.dump(doc, open(out, "w"), indent=1)
i = ready or {}
print("initial: first response on every client after %.0f ms; all ACKed: p50 %.0f ms, "
      "p99 %.0f ms, max %.0f ms (%s/%s converged, %.1f MB received)"
      % (i.get("connect_all_ms", -1), i.get("initial_p50_ms", -1), i.get("initial_p99_ms", -1),
         i.get("initial_max_ms", -1), i.get("converged"), clients, i.get("bytes", 0) / 1e6))
print("pilot: CPU %.2f s for the initial phase; RSS %.1f MB when ready (config loaded), %.1f MB after, "
      "peak (VmHWM) %.1f MB initial, %.1f MB during changes" % (init_cpu, base_rss, init_rss,
                                                                   init_hwm, chg_hwm))
print("%-5s %9s %9s %9s %9s %9s %10s  %s" % ("change", "converged", "first", "p50", "p99", "max",
                                             "pilot CPU", "types with a new version"))
worst = {}
for r in results:
    nv = ",".join("%s %d" % (k.upper(), v) for k, v in r.get("new_version", {}).items() if v)
    print("%-6s %4d/%-4d %7.0f ms %6.0f ms %6.0f ms %6.0f ms %8.2f s  %s"
          % (r["change"], r.get("converged", 0), r.get("live", 0), r.get("first_ms", -1),
             r.get("conv_p50_ms", -1), r.get("conv_p99_ms", -1), r.get("conv_max_ms", -1),
             r.get("pilot_cpu_s", -1), nv))
    w = worst.setdefault(r["change"], {"p50": [], "p99": [], "max": [], "ok": True})
    for k in ("p50", "p99", "max"):
        w[k].append(r.get("conv_%s_ms" % k, 1e9))
    w["ok"] &= r.get("converged") == r.get("live") == int(clients) and not r.get("timed_out")
med = lambda v: sorted(v)[len(v) // 2]
print("targets (issue 5): converge %s proxies <= 1000 ms (debounce included), RSS <= 200 MB"
      % clients)
for k, w in worst.items():
    print("  %-4s median over rounds: p50 %.0f ms, p99 %.0f ms, max %.0f ms -> max/target %.2f%s"
          % (k, med(w["p50"]), med(w["p99"]), med(w["max"]), med(w["max"]) / 1000,
             "" if w["ok"] else " (NOT every client converged)"))
print("  RSS peak %.1f MB -> %.2f of target" % (peak, peak / 200))
print("web view (issue 22): limits < %.0f ms per answer, RSS growth < %.0f MB"
      % (ui["limit_ms"], ui["limit_mb"]))
gs = ui["graph"]["scrape"]
print("  scraped %s of %s proxies, %s series in %.1f MB; graph %d nodes, %d edges"
      % (gs.get("ok", 0), gs.get("targets", 0), gs.get("series", 0),
         gs.get("store_bytes", 0) / 1e6, ui["graph"]["nodes"], ui["graph"]["edges"]))
for n, st in ui["steps"].items():
    print("  %-19s %3d %8.1f ms %9d bytes%s" % (n, st["status"], st["ms"], st["bytes"],
                                               "" if n not in ui_fail else "  OVER LIMIT"))
print("  RSS %.1f MB -> %.1f MB: growth %.1f MB%s" % (ui["rss_before_mb"], ui["rss_after_mb"],
      ui["rss_growth_mb"], "  OVER LIMIT" if "rss" in ui_fail else ""))
print("raw: %s" % out)
sys.exit(0 if ui["ok"] else 3)
EOF
if grep -q 'stream ended\|undecodable\|bad ' "$DIR/load.err"; then
  echo "load client errors (first lines):" >&2
  head -5 "$DIR/load.err" >&2
fi
if [ "$SUMMARY_RC" != 0 ]; then
  echo "run_pilot_scale.sh: the web view's endpoints are over their limits (issue 22)" >&2
  exit 1
fi
