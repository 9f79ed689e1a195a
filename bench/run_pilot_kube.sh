#!/usr/bin/env bash
# run_pilot_kube.sh BUILD_DIR [--source kube|folder|both] [-n CLIENTS] [-s SERVICES]
#                   [-p PODS_PER_SERVICE] [--rate R] [--batch B] [--churn-s S]
#                   [--marks-per-s M] [-t TIMEOUT_S] [--pilot PATH] [--keep]
# The pilot churn benchmark, Kubernetes mode (issue 21; `make bench-pilot-kube`): weft-pilot
# with its Kubernetes source (--kubeconfig) against the test API server (tests/kubeapi, plain
# HTTP, no auth), and, in the same run (--source both, the default), with its folder source on
# the same mesh, for comparison. The mesh (bench/gen_kube_mesh.py): SERVICES Services (default
# 1000) with PODS_PER_SERVICE Pods each (default 5: 5,000 Pods), one EndpointSlice per Service,
# a VirtualService and DestinationRule every 10th Service; loaded into the API server at its
# start (tests/kubeapi/bulkload.py -> kubeapi.py --state: no 11,000 POSTs).
#
# Per source, in turn (kube first):
#  - initial: CLIENTS simulated sidecars (BUILD_DIR/weft-xds-load, default 1000; the first Pod
#    of every Service) connect over ADS; the time until every one ACKed its whole initial
#    config (p50/p99/max from the client's start), pilot RSS;
#  - churn: bench/pilot_churn.py makes RATE endpoint changes per second (default 50) for S s
#    (default 20), in bursts of B (default 50: one burst a second; B 1 = evenly spaced): an
#    EndpointSlice endpoint's ready condition flipped (kube: a merge patch to the API server),
#    or the Pod's file rewritten with/without its IP (folder). MARKS-PER-S times a second
#    (default 1) the burst's first change is a marked one: a Pod that was never ready becomes
#    ready; weft-xds-load makes that write itself at t0 and a client has converged at its first
#    ACK of an EDS response carrying the Pod's IP (bench/xds_mark.h) -- under continuous churn
#    "the last new version" never settles. Per mark p50/p99/max over the clients;
#  - pilot's memory (VmHWM/VmRSS; VmHWM reset after the initial phase) and CPU seconds
#    (utime+stime) during the churn; the API server's CPU, the driver's achieved write rate and
#    write latency (the Python API server's throughput, measured).
# Both sources debounce as istiod does (PILOT_DEBOUNCE_AFTER 100 ms quiet, _MAX 10 s, the
# defaults): with evenly spaced changes (B 1 at 50/s: one every 20 ms) the quiet period never
# comes and pushes wait for the 10 s maximum; bursts leave quiet time between them.
# Pinning: with 2+ CPUs pilot runs on CPU 1; the load client, API server and driver on CPU 0.
# Output: a summary on stdout; the raw lines and figures as JSON in
# bench/results/pilot-kube-YYYYmmdd-HHMMSS.json ($BENCH_RESULTS_DIR instead of bench/results when
# set). --keep keeps the temporary directory.
# Exit: 0; 1 on a start failure or a timeout; 2 on a bad command line.
# shellcheck disable=SC2086
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_pilot_kube.sh BUILD_DIR [--source kube|folder|both] [-n CLIENTS]" \
    "[-s SERVICES] [-p PODS_PER_SERVICE] [--rate R] [--batch B] [--churn-s S]" \
    "[--marks-per-s M] [-t TIMEOUT_S] [--pilot PATH] [--keep]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD="" SOURCE=both CLIENTS=1000 SERVICES=1000 PODS=5 RATE=50 BATCH=50 CHURN_S=20 MARKS=1
TIMEOUT=300 PILOT="" KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
  --source) SOURCE=${2:?}; shift 2 ;;
  -n) CLIENTS=${2:?}; shift 2 ;;
  -s) SERVICES=${2:?}; shift 2 ;;
  -p) PODS=${2:?}; shift 2 ;;
  --rate) RATE=${2:?}; shift 2 ;;
  --batch) BATCH=${2:?}; shift 2 ;;
  --churn-s) CHURN_S=${2:?}; shift 2 ;;
  --marks-per-s) MARKS=${2:?}; shift 2 ;;
  -t) TIMEOUT=${2:?}; shift 2 ;;
  --pilot) PILOT=${2:?}; shift 2 ;;
  --keep) KEEP=1; shift ;;
  -h | --help) usage ;;
  -*) echo "run_pilot_kube.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
case $SOURCE in kube) SOURCES=kube ;; folder) SOURCES=folder ;; both) SOURCES="kube folder" ;; *) usage ;; esac
for v in "$CLIENTS" "$SERVICES" "$PODS" "$RATE" "$BATCH" "$CHURN_S" "$MARKS" "$TIMEOUT"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || usage
done
[ "$CLIENTS" -le "$SERVICES" ] || { echo "run_pilot_kube.sh: -n $CLIENTS is more than -s $SERVICES (one client per Service)" >&2; exit 2; }
PILOT=${PILOT:-$BUILD/weft-pilot}
LOAD=$BUILD/weft-xds-load
for exe in "$PILOT" "$LOAD"; do
  [ -x "$exe" ] || { echo "run_pilot_kube.sh: $exe is not built (run make)" >&2; exit 1; }
done
PY=/usr/bin/python3
NMARKS=$((CHURN_S * MARKS + 2))
[ "$NMARKS" -lt "$SERVICES" ] || { echo "run_pilot_kube.sh: -s $SERVICES is too few for $NMARKS marked changes" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-pilot-kube.XXXXXX")
PILOT_PID="" LOAD_PID="" API_PID=""
stop_all() {
  exec 3>&- 2>/dev/null || true
  for p in $LOAD_PID $PILOT_PID $API_PID; do kill "$p" 2>/dev/null || true; done
  for p in $LOAD_PID $PILOT_PID $API_PID; do wait "$p" 2>/dev/null || true; done
  PILOT_PID="" LOAD_PID="" API_PID=""
}
cleanup() {
  stop_all
  if [ "$KEEP" = 1 ]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PIN1="" PIN0=""
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  PIN1="taskset -c 1" PIN0="taskset -c 0"
fi
HZ=$(getconf CLK_TCK)

$PY "$HERE/gen_kube_mesh.py" -n "$SERVICES" -p "$PODS" --markers "$NMARKS" "$DIR/mesh" >/dev/null
t=$SECONDS
$PY "$ROOT/tests/kubeapi/bulkload.py" "$DIR/mesh/objects.json" "$DIR/state.json"
BULK_S=$((SECONDS - t))

die() {
  echo "run_pilot_kube.sh: $*" >&2
  for f in "$RUN/pilot.err" "$RUN/api.err" "$RUN/load.err"; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }
  done
  exit 1
}
# wait_line FILE PATTERN COUNT TIMEOUT_S: until FILE has COUNT lines matching PATTERN.
wait_line() {
  local deadline=$((SECONDS + $4)) n
  for (( ; ; )); do
    n=$(grep -c -- "$2" "$1" 2>/dev/null || true)
    [ "${n:-0}" -lt "$3" ] || break
    kill -0 "$PILOT_PID" 2>/dev/null || die "weft-pilot died"
    [ -z "$API_PID" ] || kill -0 "$API_PID" 2>/dev/null || die "the API server died"
    [ $SECONDS -lt $deadline ] || die "timed out waiting for '$2' in $1"
    sleep 0.1
  done
}
# sample PID: sets RSS_KB, HWM_KB, CPU_S (utime+stime).
sample() {
  local k v _ stat
  RSS_KB=0 HWM_KB=0
  while read -r k v _; do
    case $k in VmRSS:) RSS_KB=$v ;; VmHWM:) HWM_KB=$v ;; esac
  done </proc/$1/status
  read -r stat </proc/$1/stat
  stat=${stat##*) }
  read -r -a f <<<"$stat"
  CPU_S=$(awk -v u="${f[11]}" -v s="${f[12]}" -v hz="$HZ" 'BEGIN {printf "%.2f", (u + s) / hz}')
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a - b}'; }

# run_one SOURCE: one pilot, its clients, the churn; figures into $RUN/figures.
run_one() {
  local src=$1 t0
  RUN=$DIR/$src
  mkdir -p "$RUN/mesh"
  cp -r "$DIR/mesh/plan.json" "$DIR/mesh/proxies.txt" "$DIR/mesh/folder" "$RUN/mesh/"
  local pilot_src=() api_addr=""
  if [ "$src" = kube ]; then
    cp "$DIR/state.json" "$RUN/state.json"
    $PIN0 $PY "$ROOT/tests/kubeapi/kubeapi.py" --state "$RUN/state.json" --history 20000 \
      >"$RUN/api.out" 2>"$RUN/api.err" &
    API_PID=$!
    local deadline=$((SECONDS + 60))
    until grep -q "^kubeapi listening on " "$RUN/api.out" 2>/dev/null; do
      kill -0 "$API_PID" 2>/dev/null || die "the API server did not start"
      [ $SECONDS -lt $deadline ] || die "the API server did not start in 60 s"
      sleep 0.1
    done
    local url
    url=$(sed -n 's/^kubeapi listening on //p' "$RUN/api.out")
    api_addr=${url#http://}
    $PY -c 'import json, sys
json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "bench",
           "clusters": [{"name": "c", "cluster": {"server": sys.argv[2]}}],
           "users": [{"name": "u", "user": {}}],
           "contexts": [{"name": "bench", "context": {"cluster": "c", "user": "u"}}]},
          open(sys.argv[1], "w"))' "$RUN/kubeconfig" "$url"
    pilot_src=(--kubeconfig "$RUN/kubeconfig" --kube-sync-timeout-s 300)
  else
    pilot_src=(--config-dir "$RUN/mesh/folder/config" --config-dir "$RUN/mesh/folder/pods")
  fi
  t0=$(date +%s.%N)
  XDG_STATE_HOME=$RUN/state $PIN1 "$PILOT" "${pilot_src[@]}" --grpcAddr 127.0.0.1:0 \
    --monitoringAddr 127.0.0.1:0 --disconnected-retention-s 60 -l warning \
    >"$RUN/pilot.out" 2>"$RUN/pilot.err" &
  PILOT_PID=$!
  wait_line "$RUN/pilot.out" "^listening on" 2 300
  local xds mon deadline
  xds=$(sed -n '1s/^listening on //p' "$RUN/pilot.out")
  mon=$(sed -n '2s/^listening on //p' "$RUN/pilot.out")
  deadline=$((SECONDS + 300))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$mon/ready" || true)" = 200 ]; do
    [ $SECONDS -lt $deadline ] || die "pilot not ready"
    kill -0 "$PILOT_PID" 2>/dev/null || die "weft-pilot died"
    sleep 0.1
  done
  local ready_s
  ready_s=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.2f", a - b}')
  sample "$PILOT_PID"
  local base_rss=$RSS_KB base_cpu=$CPU_S
  mkfifo "$RUN/ctl"
  $PIN0 "$LOAD" --addr "$xds" --proxies "$RUN/mesh/proxies.txt" -n "$CLIENTS" \
    --timeout-s "$TIMEOUT" <"$RUN/ctl" >"$RUN/load.out" 2>"$RUN/load.err" &
  LOAD_PID=$!
  exec 3>"$RUN/ctl"
  wait_line "$RUN/load.out" "^READY" 1 $((TIMEOUT + 30))
  sample "$PILOT_PID"
  local init_rss=$RSS_KB init_hwm=$HWM_KB init_cpu
  init_cpu=$(sub "$CPU_S" "$base_cpu")
  echo 5 >/proc/$PILOT_PID/clear_refs 2>/dev/null || true # VmHWM from here: the churn's peak
  sleep 1
  sample "$PILOT_PID"
  local cpu_mark=$CPU_S api_mark=0
  if [ -n "$API_PID" ]; then sample "$API_PID"; api_mark=$CPU_S; fi
  local churn_args=(--folder)
  [ "$src" = kube ] && churn_args=(--api "$api_addr")
  $PIN0 $PY "$HERE/pilot_churn.py" --mesh "$RUN/mesh" --clients "$CLIENTS" --ctl "$RUN/ctl" \
    --rate "$RATE" --batch "$BATCH" --seconds "$CHURN_S" --marks-per-s "$MARKS" \
    "${churn_args[@]}" >"$RUN/churn.out" 2>"$RUN/churn.err" || true
  sample "$PILOT_PID"
  local churn_cpu
  churn_cpu=$(sub "$CPU_S" "$cpu_mark")
  local api_cpu=-1
  if [ -n "$API_PID" ]; then sample "$API_PID"; api_cpu=$(sub "$CPU_S" "$api_mark"); fi
  echo marks-wait >&3
  wait_line "$RUN/load.out" "^MARKS_DONE" 1 $((TIMEOUT + 30))
  sample "$PILOT_PID"
  local churn_hwm=$HWM_KB churn_rss=$RSS_KB
  echo quit >&3
  exec 3>&-
  wait "$LOAD_PID" 2>/dev/null || true
  LOAD_PID=""
  stop_all
  echo "$src $ready_s $base_rss $init_rss $init_hwm $init_cpu $churn_hwm $churn_rss $churn_cpu" \
    "$api_cpu" >"$RUN/figures"
}

echo "pilot churn: $SERVICES Services, $((SERVICES * PODS)) Pods, $CLIENTS simulated sidecars;" \
  "churn $RATE changes/s in bursts of $BATCH for $CHURN_S s, $MARKS marked change(s)/s;" \
  "sources: $SOURCES; pilot ${PIN1:-unpinned}, client/API server/driver ${PIN0:-unpinned}"
for src in $SOURCES; do
  echo "[$src] running ..."
  run_one "$src"
done

RESULTS=${BENCH_RESULTS_DIR:-$HERE/results}
mkdir -p "$RESULTS"
OUT="$RESULTS/pilot-kube-$(date +%Y%m%d-%H%M%S).json"
$PY - "$DIR" "$OUT" "$CLIENTS" "$SERVICES" "$PODS" "$RATE" "$BATCH" "$CHURN_S" "$MARKS" \
  "$BULK_S" $SOURCES <<'EOF'
import json, os, sys
d, out = sys.argv[1:3]
clients, services, pods, rate, batch, churn_s, marks, bulk_s = (int(v) for v in sys.argv[3:11])
sources = sys.argv[11:]
doc = {"clients": clients, "services": services, "pods": services * pods, "rate": rate,
       "batch": batch, "churn_s": churn_s, "marks_per_s": marks, "bulkload_s": bulk_s,
       "sources": {}}
med = lambda v: sorted(v)[len(v) // 2] if v else -1
for src in sources:
    run = os.path.join(d, src)
    f = open(os.path.join(run, "figures")).read().split()
    ready, mk, churn, done = None, [], None, {}
    for line in open(os.path.join(run, "load.out")):
        if line.startswith("READY "):
            ready = json.loads(line[6:])
        elif line.startswith("MARKS_DONE "):
            done = json.loads(line[11:])
        elif line.startswith("MARK "):
            mk.append(json.loads(line[5:]))
    for line in open(os.path.join(run, "churn.out")):
        if line.startswith("CHURN "):
            churn = json.loads(line[6:])
    ok = [m for m in mk if m["converged"] == clients and not m["timed_out"]]
    s = {"ready_s": float(f[1]), "initial": ready, "marks": mk, "churn": churn,
         "marks_converged_all": len(ok), "marks_total": len(mk),
         "conv_p50_ms": med([m["conv_p50_ms"] for m in mk]),
         "conv_p99_ms": med([m["conv_p99_ms"] for m in mk]),
         "conv_p99_worst_ms": max([m["conv_p99_ms"] for m in mk] or [-1]),
         "conv_max_ms": max([m["conv_max_ms"] for m in mk] or [-1]),
         "pilot": {"rss_ready_mb": int(f[2]) / 1024, "rss_after_initial_mb": int(f[3]) / 1024,
                   "hwm_initial_mb": int(f[4]) / 1024, "hwm_churn_mb": int(f[6]) / 1024,
                   "rss_after_churn_mb": int(f[7]) / 1024, "cpu_initial_s": float(f[5]),
                   "cpu_churn_s": float(f[8])},
         "api_cpu_churn_s": float(f[9]) if float(f[9]) >= 0 else None}
    if ready and "bytes" in done:  # what each client received from the churn's start on
        s["churn_mb_per_client"] = (done["bytes"] - ready["bytes"]) / clients / 1e6
        s["churn_eds_per_client"] = (done["eds_responses"] - ready["responses"]["eds"]) / clients
    doc["sources"][src] = s
json.dump(doc, open(out, "w"), indent=1)
print("%-6s %7s %22s %24s %9s %9s %9s %9s %8s %16s %9s" % (
    "source", "ready", "initial p50/p99 (ms)", "churn writes/s (p99 ms)", "marks ok",
    "conv p50", "conv p99", "conv max", "RSS MB", "peak (init/churn)", "CPU churn"))
for src, s in doc["sources"].items():
    i, c, p = s["initial"] or {}, s["churn"] or {}, s["pilot"]
    print("%-6s %6.1fs %10.0f / %-10.0f %12.1f (%6.1f ms) %5d/%-3d %6.0f ms %6.0f ms %6.0f ms %8.1f"
          " %7.1f / %-7.1f %8.2fs" % (
              src, s["ready_s"], i.get("initial_p50_ms", -1), i.get("initial_p99_ms", -1),
              c.get("rate", -1), c.get("write_p99_ms", -1), s["marks_converged_all"],
              s["marks_total"], s["conv_p50_ms"], s["conv_p99_ms"], s["conv_max_ms"],
              p["rss_after_initial_mb"], p["hwm_initial_mb"], p["hwm_churn_mb"],
              p["cpu_churn_s"]))
for src, s in doc["sources"].items():
    c = s["churn"] or {}
    extra = ""
    if s["api_cpu_churn_s"] is not None:
        extra = "; API server CPU %.2f s during the churn" % s["api_cpu_churn_s"]
    if "churn_mb_per_client" in s:
        extra += "; each client received %.1f EDS responses, %.1f MB" % (
            s["churn_eds_per_client"], s["churn_mb_per_client"])
    print("%s: %d writes in %.1f s (target %d/s; the latest burst started %.0f ms late), write "
          "latency p50 %.1f ms, max %.1f ms, %d errors%s" % (
              src, c.get("writes", 0), c.get("seconds", 0), rate, c.get("behind_ms", 0),
              c.get("write_p50_ms", -1), c.get("write_max_ms", -1), c.get("errors", -1), extra))
print("conv p50/p99: the median over the marked changes of each one's p50/p99 over the clients; "
      "conv max: the worst client of any mark")
print("raw: %s" % out)
EOF
for src in $SOURCES; do
  if grep -q 'stream ended\|undecodable\|bad \|answered' "$DIR/$src/load.err"; then
    echo "$src: load client errors (first lines):" >&2
    head -5 "$DIR/$src/load.err" >&2
  fi
  [ ! -s "$DIR/$src/churn.err" ] || { echo "$src: churn driver:" >&2; head -5 "$DIR/$src/churn.err" >&2; }
done
