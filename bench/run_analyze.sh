#!/usr/bin/env bash
# run_analyze.sh BUILD_DIR - benchmark `weftctl analyze -A` on a generated mesh.
#
# Generates (BUILD_DIR/bench_gen_mesh) a mesh of $BENCH_SERVICES services (default 10000) in
# $BENCH_NAMESPACES namespaces (default 100), each with a Service, Deployment,
# VirtualService, DestinationRule and Gateway (50,000 resources, about 31 MB of YAML in
# 10,100 files), in a temporary directory, then runs `weftctl analyze -A DIR` under
# /usr/bin/time -v (best of $BENCH_RUNS runs, default 3; hyperfine is used for the wall time
# when installed) and prints wall time and peak RSS against the targets (1 s, 500 MB).
#
# A second measurement runs a single trivial analyzer ($BENCH_LOAD_ANALYZER, default
# webhook.Analyzer) to show what loading alone costs. Each run is killed after
# $BENCH_TIMEOUT seconds (default 300). With BENCH_STRICT=1 the exit status is 1 when a
# target is missed; otherwise 0 unless something failed to run. BENCH_KEEP=1 keeps the mesh.
set -euo pipefail

BUILD=${1:?usage: bench/run_analyze.sh BUILD_DIR}
SERVICES=${BENCH_SERVICES:-10000}
NAMESPACES=${BENCH_NAMESPACES:-100}
RUNS=${BENCH_RUNS:-3}
TIMEOUT=${BENCH_TIMEOUT:-300}
LOAD_ANALYZER=${BENCH_LOAD_ANALYZER:-webhook.Analyzer}
TARGET_WALL=1.0   # seconds
TARGET_RSS_MB=500 # MiB

GEN=$BUILD/bench_gen_mesh
WEFTCTL=$BUILD/weftctl
for exe in "$GEN" "$WEFTCTL"; do
  [ -x "$exe" ] || { echo "run_analyze.sh: $exe not built (run make)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "run_analyze.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-bench.XXXXXX")
cleanup() { [ "${BENCH_KEEP:-0}" = 1 ] && echo "mesh kept in $DIR" || rm -rf "$DIR"; }
trap cleanup EXIT

"$GEN" -n "$SERVICES" -s "$NAMESPACES" "$DIR/mesh"
nfiles=$(find "$DIR/mesh" -type f | wc -l)
bytes=$(find "$DIR/mesh" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "mesh: $SERVICES services x 5 resources in $NAMESPACES namespaces;" \
  "$nfiles files, $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB"
echo "weftctl: $WEFTCTL ($(nproc) CPUs)"

# time_run LABEL ARGS... : best wall time and peak RSS over $RUNS runs; sets WALL, RSS_MB, RC
time_run() {
  local label=$1
  shift
  WALL="" RSS_MB="" RC=0
  local best="" rss=0 i
  for ((i = 0; i < RUNS; i++)); do
    local rc=0
    /usr/bin/time -v -o "$DIR/time.txt" timeout "$TIMEOUT" "$WEFTCTL" analyze "$@" \
      >"$DIR/out.txt" 2>"$DIR/err.txt" || rc=$?
    if [ "$rc" -eq 124 ]; then
      printf '%-28s killed after %d s (BENCH_TIMEOUT), peak RSS by then %d MiB\n' "$label:" \
        "$TIMEOUT" "$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$DIR/time.txt")"
      RC=124
      return
    fi
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 79 ]; then
      echo "$label: weftctl exited $rc" >&2
      tail -5 "$DIR/err.txt" >&2
      RC=$rc
      return
    fi
    local w r
    w=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0;
          for (k = 1; k <= n; k++) s = s * 60 + t[k]; printf "%.3f", s}' "$DIR/time.txt")
    r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$DIR/time.txt")
    if [ -z "$best" ] || awk -v a="$w" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$w; fi
    [ "$r" -gt "$rss" ] && rss=$r
  done
  if command -v hyperfine >/dev/null 2>&1; then
    best=$(hyperfine -N -w 1 -r "$RUNS" -i --export-json "$DIR/hf.json" \
      "$WEFTCTL analyze $*" >/dev/null 2>&1 &&
      python3 -c 'import json,sys; print("%.3f" % min(json.load(open(sys.argv[1]))["results"][0]["times"]))' \
        "$DIR/hf.json" || echo "$best")
  fi
  WALL=$best RSS_MB=$rss
  local findings
  findings=$(grep -c '^[A-Z][a-z]* \[\(IST\|WFT\)' "$DIR/out.txt" || true)
  printf '%-28s wall %6.3f s   peak RSS %5d MiB   exit %d   findings %d\n' \
    "$label:" "$WALL" "$RSS_MB" "$rc" "$findings"
}

missed=0
if "$WEFTCTL" analyze -L | grep -q "^\* $LOAD_ANALYZER:"; then
  time_run "load + $LOAD_ANALYZER" -A --analyzer "$LOAD_ANALYZER" "$DIR/mesh"
fi
time_run "analyze -A (all analyzers)" -A "$DIR/mesh"
if [ "$RC" -eq 124 ]; then
  missed=1
elif [ "$RC" -ne 0 ]; then
  exit 1
else
  awk -v w="$WALL" -v t="$TARGET_WALL" 'BEGIN {exit !(w > t)}' && missed=1
  [ "$RSS_MB" -gt "$TARGET_RSS_MB" ] && missed=1
  echo "targets: wall <= ${TARGET_WALL} s, peak RSS <= ${TARGET_RSS_MB} MiB:" \
    "$([ $missed = 0 ] && echo met || echo MISSED)"
fi
[ "${BENCH_STRICT:-0}" = 1 ] && [ $missed = 1 ] && exit 1
exit 0
