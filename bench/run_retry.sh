#!/usr/bin/env bash
# run_retry.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] - the cost of a retry policy (issue 4):
# weft-proxy requests/s on a route with Istio's default retry policy against the same route
# without one, 1 KiB POST bodies (every body is kept in the retry buffer for replay).
#
# One weft-proxy (--concurrency 1) with two routes to one backend: "/retry" (retry_policy as
# Istio generates it, reference §4.5) and "/" (none). The backend is nginx answering
# `return 200` (it reads and drops the body). wrk -t1 -c64 posts 1 KiB bodies for -d seconds
# after a 1 s warm-up, once per route per round; the order alternates each round. Reported:
# req/s and proxy CPU per request per route, and the per-round ratio retry / plain, medianed.
# Pinning as bench/run_proxy.sh: proxy on CPU 1, wrk and backend on CPU 0 (2+ CPUs).
# Raw output goes to bench/results/retry-YYYYmmdd-HHMMSS.txt. Defaults: 5 rounds of 5 s.
# shellcheck disable=SC2086,SC2317
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_retry.sh BUILD_DIR [-r ROUNDS] [-d SECONDS]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD="" ROUNDS=5 DUR=5
while [ $# -gt 0 ]; do
  case $1 in
  -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
  -d) DUR=${2:?-d needs seconds}; shift 2 ;;
  -h | --help) usage ;;
  -*) echo "run_retry.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage
[[ $DUR =~ ^[1-9][0-9]*$ ]] || usage
PROXY=$BUILD/weft-proxy
[ -x "$PROXY" ] || { echo "run_retry.sh: $PROXY is not built" >&2; exit 1; }
PY=/usr/bin/python3
# shellcheck source=proxy/lib.sh
. "$HERE/proxy/lib.sh"
bp_setup retry nginx wrk taskset
mapfile -t PORTS < <("$PY" "$HERE/proxy/free_ports.py" 3)
BPORT=${PORTS[0]} LPORT=${PORTS[1]} APORT=${PORTS[2]}

mkdir -p "$BP_DIR/backend"
{
  bp_nginx_common "$BP_DIR/backend"
  echo "http {"
  bp_nginx_http_common "$BP_DIR/backend"
  cat <<EOF
    server {
        listen 127.0.0.1:$BPORT backlog=4096;
        location / { return 200 "ok"; }
    }
}
EOF
} >"$BP_DIR/backend/nginx.conf"
bp_start backend "$PIN_LOAD" nginx -e "$BP_DIR/backend/error.log" -p "$BP_DIR/backend" \
  -c "$BP_DIR/backend/nginx.conf"
PIDS+=("$BP_PID")
"$PY" "$HERE/proxy/weft_bootstrap.py" "$BP_DIR/weft.json" "$LPORT" "$APORT" "$BPORT" --retry-route
bp_start weft "$PIN_PROXY" "$PROXY" -c "$BP_DIR/weft.json" --concurrency 1 -l error
WEFT=$BP_PID
PIDS+=("$WEFT")
bp_wait_ready backend "${PIDS[0]}" "$BPORT" / 2
bp_wait_ready weft "$WEFT" "$LPORT" /retry 2

cat >"$BP_DIR/post.lua" <<'EOF'
wrk.method = "POST"
wrk.body = string.rep("x", 1024)
wrk.headers["Content-Type"] = "application/octet-stream"
EOF
mkdir -p "$HERE/results"
OUT="$HERE/results/retry-$(date +%Y%m%d-%H%M%S).txt"

# run PATH: one measured wrk run; sets RPS and CPU_US (proxy CPU microseconds per request).
run() {
  $PIN_LOAD wrk -t1 -c64 -d1 -s "$BP_DIR/post.lua" "http://127.0.0.1:$LPORT$1" >/dev/null
  bp_cpu_ns "$WEFT"
  local c0=$BP_CPU_NS out
  out=$($PIN_LOAD wrk -t1 -c64 -d"$DUR" -s "$BP_DIR/post.lua" "http://127.0.0.1:$LPORT$1")
  bp_cpu_ns "$WEFT"
  echo "$out" >>"$OUT"
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
    echo "run_retry.sh: errors on $1:" >&2
    echo "$out" >&2
    exit 1
  fi
  RPS=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  local n
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  CPU_US=$(awk -v c=$((BP_CPU_NS - c0)) -v n="$n" 'BEGIN {printf "%.2f", c / 1000 / n}')
}

RATIOS=() CPU_RATIOS=()
echo "retry-policy cost: weft-proxy, 1 KiB POST, wrk -t1 -c64, $ROUNDS round(s) x ${DUR} s"
printf '  %-5s %12s %12s %14s %14s %8s %8s\n' round "plain req/s" "retry req/s" "plain CPU/req" \
  "retry CPU/req" "req/s" "CPU"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then order=(/plain /retry); else order=(/retry /plain); fi
  for path in "${order[@]}"; do
    run "$path"
    if [ "$path" = /plain ]; then P_RPS=$RPS P_CPU=$CPU_US; else R_RPS=$RPS R_CPU=$CPU_US; fi
  done
  ratio=$(awk -v a="$R_RPS" -v b="$P_RPS" 'BEGIN {printf "%.3f", a / b}')
  cratio=$(awk -v a="$R_CPU" -v b="$P_CPU" 'BEGIN {printf "%.3f", a / b}')
  RATIOS+=("$ratio") CPU_RATIOS+=("$cratio")
  printf '  %-5s %12s %12s %11s us %11s us %8s %8s\n' "$r" "$P_RPS" "$R_RPS" "$P_CPU" "$R_CPU" \
    "$ratio" "$cratio"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "median retry/plain: requests/s $(median "${RATIOS[@]}"), proxy CPU per request $(median "${CPU_RATIOS[@]}")"
echo "(target: requests/s ratio >= 0.95; raw wrk output in $OUT)"
