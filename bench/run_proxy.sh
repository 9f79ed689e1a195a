#!/usr/bin/env bash
# run_proxy.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] [--quick] [--baseline REV] [--weft-only] -
# HTTP/1.1 proxy benchmark: weft-proxy against nginx and HAProxy, by the method of
# shared/reference/performance.md (3).
#
# Backend: a dedicated nginx (1 worker) on 127.0.0.1 serving static bodies /128 (128 B) and
# /16k (16 KiB) with keep-alive. Targets: "direct" (the backend itself, the ceiling), nginx as
# a reverse proxy (1 worker, upstream keep-alive pool), HAProxy (nbthread 1, mode http,
# http-reuse always) and weft-proxy (BUILD_DIR/weft-proxy -c bootstrap.json --concurrency 1;
# skipped with a notice when not built). Every process gets its own temporary config on free
# loopback ports; all are started up front and killed on exit.
#
# Each round runs, for both bodies, every target in turn (the order rotates each round):
#   thr    wrk -t1 -c64 --latency for -d seconds after a 1 s warm-up: req/s, p50/p99, proxy
#          CPU from /proc/PID/task/*/schedstat, RSS under load (read mid-run)
#   lat    wrk -t1 -c1 --latency: low-load p50/p90/p99
#   fixed  h2load --h1, 1000 req/s over 4 connections (BENCH_RATE): p50/p90/p99 from its
#          per-request log, proxy vCPU per 1000 req/s
# After the rounds, the idle phase starts a fresh instance of each proxy and opens
# BENCH_IDLE_CONNS (2000) keep-alive connections, one request each (proxy/idle_conns.py):
# KiB per idle connection = (RSS after - RSS before) / connections.
#
# BENCH_BACKEND (sendfile, nopush, write; see bench/proxy/lib.sh) picks how the backend
# writes its responses: in two TCP segments (the default) or in one. BENCH_BACKEND_NICE (default
# 0) runs the backend at that nice value: wrk and the backend share CPU 0, and a proxy that
# forwards each response at once wakes wrk, which then preempts the backend.
# Pinning (2 or more CPUs): every proxy on CPU 1; this script, wrk, h2load and the backend on
# CPU 0. While a load generator runs, the script samples with bash builtins only (no fork).
# Ratios vs haproxy are computed per round, then medianed (paired). Defaults: 5 rounds of 5 s
# runs (about 11 minutes with weft-proxy, 8.5 without); --quick is 1 round of 2 s runs
# (under a minute); with a baseline about 14 minutes (9 with --weft-only). Raw samples and
# the summary go to bench/results/proxy-YYYYmmdd-HHMMSS.json. BENCH_KEEP=1 keeps the
# temporary directory (configs, logs, raw wrk/h2load output).
#
# Baseline mode, BENCH_BASELINE=REV (or --baseline REV; REV is any git revision of this
# repository, e.g. 872295f or HEAD~3): weft-proxy as it was at REV is built once
# (bench/proxy/build_baseline.sh: git archive of REV, RelWithDebInfo, only the weft-proxy
# target, cached in BUILD_DIR/bench-baseline/<full sha>/ and reused by later runs) and joins the
# rotation as target "weft-base", started exactly like "weft" (same bootstrap, same pinning) and
# measured in every phase. Within each round weft and weft-base swap their order (weft first
# in odd rounds). The report adds the section "weft vs weft-base (REV)": per body, req/s,
# proxy CPU-seconds and requests per proxy CPU-second of both, their per-round ratios
# weft / weft-base medianed, and the verdict PASS when the requests-per-proxy-CPU-second ratio
# is >= BENCH_BASELINE_MIN (default 0.97) at every body size, else FAIL (issue 16).
# BENCH_RBAC_RULES=N gives the "weft" target (not weft-base) an N-rule ALLOW RBAC policy in
# Istio's shape (bench/proxy/weft_bootstrap.py --rbac-rules): with --baseline HEAD the verdict
# compares requests per proxy CPU-second with and without the policy (issue 18's 10-rule goal).
# BENCH_ONLY_WEFT=1 (or --weft-only) leaves nginx and HAProxy out (targets: direct, weft and,
# with a baseline, weft-base): a faster weft-only comparison; the "vs haproxy" columns are "-".
#
# Exit status: 0 every sample valid (and, with a baseline, the verdict PASS); 1 a sample was
# invalid, a tool failed, a proxy did not start or the baseline did not build; 2 usage error or
# BENCH_BASELINE is not a commit of this repository; 3 (only with a baseline, all samples
# valid) the verdict is FAIL: a ratio is below BENCH_BASELINE_MIN or missing.
# PID lists are split on purpose; SC2317: cleanup is reached through the trap.
# shellcheck disable=SC2086,SC2034,SC2317
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_proxy.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] [--quick]" \
    "[--baseline REV] [--weft-only]" >&2
  exit 2
}

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD="" ROUNDS=5 DUR=5 QUICK=0 DUR_SET=0
BASELINE=${BENCH_BASELINE:-} ONLY_WEFT=${BENCH_ONLY_WEFT:-0}
BASE_MIN=${BENCH_BASELINE_MIN:-0.97}
while [ $# -gt 0 ]; do
  case $1 in
  -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
  -d) DUR=${2:?-d needs seconds}; DUR_SET=1; shift 2 ;;
  --quick) QUICK=1; shift ;;
  --baseline) BASELINE=${2:?--baseline needs a git revision}; shift 2 ;;
  --weft-only) ONLY_WEFT=1; shift ;;
  -h | --help) usage ;;
  -*) echo "run_proxy.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "run_proxy.sh: -r takes a positive integer" >&2; exit 2; }
[[ $DUR =~ ^[1-9][0-9]*$ ]] || { echo "run_proxy.sh: -d takes whole seconds" >&2; exit 2; }
if [ "$QUICK" = 1 ]; then
  ROUNDS=1
  [ "$DUR_SET" = 1 ] || DUR=2
fi
IDLE_CONNS=${BENCH_IDLE_CONNS:-2000}
RATE=${BENCH_RATE:-1000}
BACKEND_NICE=${BENCH_BACKEND_NICE:-0} BACKEND_PREFIX=""
[[ $BACKEND_NICE =~ ^-?[0-9]+$ ]] || { echo "run_proxy.sh: BENCH_BACKEND_NICE takes an integer" >&2; exit 2; }
[ "$BACKEND_NICE" = 0 ] || BACKEND_PREFIX="nice -n $BACKEND_NICE"
case $ONLY_WEFT in
0 | 1) ;;
*) echo "run_proxy.sh: BENCH_ONLY_WEFT takes 0 or 1" >&2; exit 2 ;;
esac
[[ $BASE_MIN =~ ^[0-9]+(\.[0-9]+)?$ ]] || {
  echo "run_proxy.sh: BENCH_BASELINE_MIN takes a number such as 0.97" >&2
  exit 2
}
case ${BENCH_BACKEND:-sendfile} in
sendfile | nopush | write) ;;
*) echo "run_proxy.sh: BENCH_BACKEND must be sendfile, nopush or write" >&2; exit 2 ;;
esac
FIXED_CONNS=4
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

for exe in nginx haproxy wrk h2load taskset pgrep; do
  command -v "$exe" >/dev/null 2>&1 && continue
  [ -x "/usr/sbin/$exe" ] && { PATH=$PATH:/usr/sbin; continue; }
  echo "run_proxy.sh: $exe is missing; run bench/setup.sh (as root)" >&2
  exit 1
done
WEFT=$BUILD/weft-proxy

# The baseline is built before anything is pinned or started (the build may use every CPU).
WEFT_BASE="" BASE_SHA="" WEFT_HEAD="" WEFT_DIRTY=0
if [ -n "$BASELINE" ]; then
  [ -x "$WEFT" ] || {
    echo "run_proxy.sh: BENCH_BASELINE needs the current build, $WEFT: run make first" >&2
    exit 1
  }
  rc=0
  WEFT_BASE=$("$HERE/proxy/build_baseline.sh" "$BASELINE" "$BUILD/bench-baseline") || rc=$?
  [ "$rc" = 0 ] || exit "$rc"
  BASE_SHA=$(git -C "$HERE" rev-parse --verify "$BASELINE^{commit}")
  WEFT_HEAD=$(git -C "$HERE" rev-parse HEAD)
  git -C "$HERE" diff --quiet HEAD -- || WEFT_DIRTY=1
fi

# Pinning: this script (and so the load generators and the backend) on CPU 0, proxies on 1.
NCPU=$(nproc)
if [ "$NCPU" -ge 2 ]; then
  taskset -pc 0 $$ >/dev/null
  PIN_PROXY="taskset -c 1" PINNED=1
else
  echo "run_proxy.sh: fewer than 2 CPUs: nothing is pinned" >&2
  PIN_PROXY="" PINNED=0
fi
[ "$(ulimit -n)" -ge $((2 * IDLE_CONNS + 256)) ] || ulimit -n $((4 * IDLE_CONNS + 1024)) 2>/dev/null || {
  echo "run_proxy.sh: open-file limit $(ulimit -n) is too low for $IDLE_CONNS connections" >&2
  exit 1
}

BP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-proxy-bench.XXXXXX")
chmod 755 "$BP_DIR"
# shellcheck source=bench/proxy/lib.sh
. "$HERE/proxy/lib.sh"

STARTED=() # every pid this script started and must kill
LOAD_PID=""
cleanup() {
  local rc=$? pid i
  set +e
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
  for pid in "${STARTED[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 40; i++)); do
    local alive=0
    for pid in "${STARTED[@]}"; do bp_alive "$pid" && alive=1; done
    [ "$alive" = 0 ] && break
    bp_sleep 0.05
  done
  for pid in "${STARTED[@]}"; do bp_alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null || true
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept $BP_DIR" >&2; else rm -rf "$BP_DIR"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bp_sleep_init

mapfile -t PORTS < <("$PY" "$HERE/proxy/free_ports.py" 16)
[ "${#PORTS[@]}" = 16 ] || { echo "run_proxy.sh: could not get free ports" >&2; exit 1; }
next_port() { NEXT_PORT=${PORTS[0]}; PORTS=("${PORTS[@]:1}"); }

declare -A T_PORT T_PIDS
PATH_OF_128=/128 PATH_OF_16384=/16k
TARGETS=()

# start_target KIND NAME: starts a fresh instance of KIND (backend, nginx, haproxy, weft,
# weft-base: the baseline's weft-proxy, started exactly like weft) as NAME on a free port, waits until it answers; sets T_PORT[NAME], T_PIDS[NAME].
start_target() {
  local kind=$1 name=$2 d=$BP_DIR/$2 port
  mkdir -p "$d"
  next_port
  port=$NEXT_PORT
  case $kind in
  backend)
    bp_write_backend "$d" "$port"
    bp_start "$name" "$BACKEND_PREFIX" nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
    ;;
  nginx)
    bp_write_nginx_proxy "$d" "$port" "${T_PORT[direct]}"
    bp_start "$name" "$PIN_PROXY" nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
    ;;
  haproxy)
    bp_write_haproxy "$d" "$port" "${T_PORT[direct]}"
    bp_start "$name" "$PIN_PROXY" haproxy -db -f "$d/haproxy.cfg"
    ;;
  weft | weft-base)
    local exe=$WEFT
    [ "$kind" = weft ] || exe=$WEFT_BASE
    next_port
    local rbac=()
    # BENCH_RBAC_RULES=N: the "weft" target runs an N-rule ALLOW policy (issue 18)
    [ "$kind" = weft ] && [ "${BENCH_RBAC_RULES:-0}" -gt 0 ] && rbac=(--rbac-rules "$BENCH_RBAC_RULES")
    "$PY" "$HERE/proxy/weft_bootstrap.py" "$d/bootstrap.json" "$port" "$NEXT_PORT" \
      "${T_PORT[direct]}" "${rbac[@]}" || return 1
    bp_start "$name" "$PIN_PROXY" "$exe" -c "$d/bootstrap.json" --concurrency 1
    ;;
  esac
  STARTED+=("$BP_PID")
  bp_wait_ready "$name" "$BP_PID" "$port" /16k 16384 || return 1
  bp_pids_of "$BP_PID"
  local p
  for p in $BP_PIDS; do [ "$p" = "$BP_PID" ] || STARTED+=("$p"); done
  T_PORT[$name]=$port
  T_PIDS[$name]=$BP_PIDS
}

# record_start NAME: memory right after start (one request served by the readiness check).
record_start() {
  bp_mem ${T_PIDS[$1]}
  printf '{"target":"%s","pids":"%s","rss_kb":%d,"pss_kb":%d}\n' "$1" "${T_PIDS[$1]}" \
    "$BP_RSS_KB" "$BP_PSS_KB" >>"$BP_DIR/start.jsonl"
}

# Is the machine idle? Other processes on CPU 0 or 1 disturb every figure.
bp_cpu_stat
b0=$BP_BUSY0 t0=$BP_TOT0 b1=$BP_BUSY1 t1=$BP_TOT1
bp_sleep 1
bp_cpu_stat
IDLE_BUSY0=$(((BP_BUSY0 - b0) * 100 / (BP_TOT0 - t0 > 0 ? BP_TOT0 - t0 : 1)))
IDLE_BUSY1=$(((BP_BUSY1 - b1) * 100 / (BP_TOT1 - t1 > 0 ? BP_TOT1 - t1 : 1)))
if [ "$IDLE_BUSY0" -gt 10 ] || [ "$IDLE_BUSY1" -gt 10 ]; then
  echo "WARNING: the machine is not idle before the run (CPU 0 ${IDLE_BUSY0}% busy," \
    "CPU 1 ${IDLE_BUSY1}%): other processes will disturb the figures" >&2
fi

start_target backend direct
TARGETS+=(direct)
if [ "$ONLY_WEFT" = 0 ]; then
  start_target nginx nginx
  start_target haproxy haproxy
  TARGETS+=(nginx haproxy)
fi
HAVE_WEFT=0
if [ ! -x "$WEFT" ]; then
  echo "weft-proxy not built: skipping"
elif start_target weft weft; then
  TARGETS+=(weft)
  HAVE_WEFT=1
elif [ -n "$BASELINE" ]; then
  echo "run_proxy.sh: weft-proxy failed to start (log above): no comparison" >&2
  exit 1
else
  echo "weft-proxy failed to start (log above): skipping"
fi
if [ -n "$BASELINE" ]; then
  start_target weft-base weft-base || {
    echo "run_proxy.sh: the baseline weft-proxy ($WEFT_BASE) failed to start (log above)" >&2
    exit 1
  }
  TARGETS+=(weft-base)
fi
for t in nginx haproxy weft weft-base; do
  [ -n "${T_PIDS[$t]:-}" ] && record_start "$t"
done
T_PIDS[direct]="" # the backend's CPU is not the proxy's

ntargets=${#TARGETS[@]}
secs=$((ROUNDS * 2 * ntargets * (3 * DUR + 1) + 15 * (ntargets - 1)))
echo "proxy bench: ${TARGETS[*]}; $ROUNDS round(s) of ${DUR}s runs; $NCPU CPUs," \
  "pinned=$PINNED; about $((secs / 60)) min $((secs % 60)) s"

mkdir -p "$BP_DIR/out"
# measure ROUND PHASE TARGET BODY: one load run against TARGET, sampled with builtins only.
measure() {
  local r=$1 phase=$2 t=$3 body=$4 pathvar=PATH_OF_$4
  local url="http://127.0.0.1:${T_PORT[$t]}${!pathvar}" out="$BP_DIR/out/r$1-$2-$3-$4"
  local pids=${T_PIDS[$t]} c0=0 c1=0 t0 t1 rss=null pss=null
  if [ "$phase" = thr ]; then wrk -t1 -c64 -d1s "$url" >/dev/null 2>&1 || true; fi
  bp_cpu_stat
  local s0="$BP_BUSY0 $BP_TOT0 $BP_BUSY1 $BP_TOT1"
  [ -n "$pids" ] && bp_cpu_ns $pids && c0=$BP_CPU_NS
  bp_now_us
  t0=$BP_NOW_US
  case $phase in
  thr) wrk -t1 -c64 -d"${DUR}s" --latency "$url" >"$out.txt" 2>&1 & ;;
  lat) wrk -t1 -c1 -d"${DUR}s" --latency "$url" >"$out.txt" 2>&1 & ;;
  fixed)
    h2load --h1 -c"$FIXED_CONNS" --rps=$((RATE / FIXED_CONNS)) -D "$DUR" \
      --log-file="$out.log" "$url" >"$out.txt" 2>&1 &
    ;;
  esac
  LOAD_PID=$!
  if [ -n "$pids" ]; then
    bp_sleep "$((DUR / 2)).$((DUR % 2 * 5))"
    bp_mem $pids
    rss=$BP_RSS_KB pss=$BP_PSS_KB
  fi
  local rc=0
  wait "$LOAD_PID" || rc=$?
  LOAD_PID=""
  bp_now_us
  t1=$BP_NOW_US
  [ -n "$pids" ] && bp_cpu_ns $pids && c1=$BP_CPU_NS
  bp_cpu_stat
  printf '{"round":%d,"phase":"%s","target":"%s","body":%d,"out":"%s","rc":%d,"wall_us":%d,' \
    "$r" "$phase" "$t" "$body" "$out" "$rc" $((t1 - t0)) >>"$BP_DIR/samples.jsonl"
  local cpu=null
  [ -n "$pids" ] && cpu=$((c1 - c0))
  printf '"proxy_cpu_ns":%s,"rss_kb":%s,"pss_kb":%s,"stat0":"%s","stat1":"%s"}\n' \
    "$cpu" "$rss" "$pss" "$s0" \
    "$BP_BUSY0 $BP_TOT0 $BP_BUSY1 $BP_TOT1" >>"$BP_DIR/samples.jsonl"
}

# alternate_base ROUND: in the rotated order, puts weft before weft-base in odd rounds and
# weft-base before weft in even ones, so that neither always runs first (the rotation alone
# keeps adjacent targets in the same order in most rounds).
alternate_base() {
  local i iw=-1 ib=-1 first=weft second=weft-base
  [ $(($1 % 2)) = 1 ] || first=weft-base second=weft
  for i in "${!order[@]}"; do
    case ${order[$i]} in
    weft) iw=$i ;;
    weft-base) ib=$i ;;
    esac
  done
  [ "$iw" -ge 0 ] && [ "$ib" -ge 0 ] || return 0
  local lo=$iw hi=$ib
  [ "$iw" -lt "$ib" ] || lo=$ib hi=$iw
  order[lo]=$first order[hi]=$second
}

for ((r = 1; r <= ROUNDS; r++)); do
  order=("${TARGETS[@]:$(((r - 1) % ntargets))}" "${TARGETS[@]:0:$(((r - 1) % ntargets))}")
  [ -z "$BASELINE" ] || alternate_base "$r"
  for phase in thr lat fixed; do
    for body in 128 16384; do
      for t in "${order[@]}"; do measure "$r" "$phase" "$t" "$body"; done
    done
  done
  echo "round $r/$ROUNDS done (order: ${order[*]})"
done

# Idle-connection memory: a fresh instance of each proxy, so that earlier load does not
# leave buffers or pools behind.
for t in "${TARGETS[@]}"; do
  [ "$t" = direct ] && continue
  start_target "$t" "idle-$t"
  rc=0
  res=$("$PY" "$HERE/proxy/idle_conns.py" --port "${T_PORT[idle-$t]}" --path /128 \
    --count "$IDLE_CONNS" ${T_PIDS[idle-$t]}) || rc=$?
  [ -n "$res" ] && printf '{"target":"%s","rc":%d,"result":%s}\n' "$t" "$rc" "$res" >>"$BP_DIR/idle.jsonl"
  for p in ${T_PIDS[idle-$t]}; do kill -TERM "$p" 2>/dev/null || true; done
  wait "${T_PIDS[idle-$t]%% *}" 2>/dev/null || true
done

mkdir -p "$HERE/results"
BASE_ARGS=()
if [ -n "$BASELINE" ]; then
  BASE_ARGS=(--meta "baseline=$BASELINE" --meta "baseline_sha=$BASE_SHA"
    --meta "weft_base=$WEFT_BASE" --meta "weft_head=$WEFT_HEAD" --meta "weft_dirty=$WEFT_DIRTY"
    --baseline-min "$BASE_MIN")
fi
rc=0
OUT=$HERE/results/proxy-$(date +%Y%m%d-%H%M%S).json
"$PY" "$HERE/proxy/report.py" --dir "$BP_DIR" --out "$OUT" \
  --meta "rounds=$ROUNDS" --meta "duration_s=$DUR" --meta "quick=$QUICK" \
  --meta "cpus=$NCPU" --meta "pinned=$PINNED" --meta "idle_conns=$IDLE_CONNS" \
  --meta "fixed_rate=$RATE" --meta "fixed_conns=$FIXED_CONNS" --meta "weft_built=$HAVE_WEFT" \
  --meta "backend=${BENCH_BACKEND:-sendfile}" --meta "backend_nice=$BACKEND_NICE" \
  --meta "targets=${TARGETS[*]}" --meta "nginx=$(nginx -v 2>&1)" \
  --meta "haproxy=$(haproxy -v 2>&1 | head -n 1)" --meta "kernel=$(uname -r)" \
  --meta "weft=$WEFT" --meta "idle_busy_cpu0_pct=$IDLE_BUSY0" \
  --meta "idle_busy_cpu1_pct=$IDLE_BUSY1" "${BASE_ARGS[@]}" || rc=$?
echo "raw samples: $OUT"
exit "$rc"
