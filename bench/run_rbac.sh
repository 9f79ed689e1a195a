#!/usr/bin/env bash
# run_rbac.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] - the cost of an AuthorizationPolicy on the
# request path (issue 18: a 10-rule ALLOW policy, goal <= 5 % fewer requests per proxy
# CPU-second than without it).
#
# One weft-proxy (--concurrency 1) with two listeners to one backend (bench/proxy/
# weft_bootstrap.py --rbac-port): "bench" without RBAC and "bench-rbac" whose connection
# manager runs envoy.filters.http.rbac with ten ALLOW rules as istiod writes them, of which only
# the last matches the benchmark's GET /bench/x (every request evaluates all ten). The backend
# is nginx answering `return 200`. wrk -t1 -c64 GETs for -d seconds after a 1 s warm-up, once
# per listener per round; the order alternates each round. Reported: req/s and proxy CPU per
# request per listener, and the per-round ratios rbac / plain, medianed; requests per proxy
# CPU-second is 1 / CPU per request, so its ratio is plain CPU / rbac CPU. The run fails
# unless the proxy counted the RBAC listener's requests as allowed (http.bench_rbac.rbac.allowed)
# and none denied, so that it measures the filter and not its absence.
# Pinning as bench/run_proxy.sh: proxy on CPU 1, wrk and backend on CPU 0 (2+ CPUs).
# Raw output goes to bench/results/rbac-YYYYmmdd-HHMMSS.txt. Defaults: 5 rounds of 5 s.
# shellcheck disable=SC2086,SC2317
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_rbac.sh BUILD_DIR [-r ROUNDS] [-d SECONDS]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD="" ROUNDS=5 DUR=5
while [ $# -gt 0 ]; do
  case $1 in
  -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
  -d) DUR=${2:?-d needs seconds}; shift 2 ;;
  -h | --help) usage ;;
  -*) echo "run_rbac.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage
[[ $DUR =~ ^[1-9][0-9]*$ ]] || usage
PROXY=$BUILD/weft-proxy
[ -x "$PROXY" ] || { echo "run_rbac.sh: $PROXY is not built" >&2; exit 1; }
PY=/usr/bin/python3
# shellcheck source=proxy/lib.sh
. "$HERE/proxy/lib.sh"
bp_setup rbac nginx wrk taskset curl
mapfile -t PORTS < <("$PY" "$HERE/proxy/free_ports.py" 4)
BPORT=${PORTS[0]} LPORT=${PORTS[1]} APORT=${PORTS[2]} RPORT=${PORTS[3]}

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
"$PY" "$HERE/proxy/weft_bootstrap.py" "$BP_DIR/weft.json" "$LPORT" "$APORT" "$BPORT" \
  --rbac-port "$RPORT"
bp_start weft "$PIN_PROXY" "$PROXY" -c "$BP_DIR/weft.json" --concurrency 1 -l error
WEFT=$BP_PID
PIDS+=("$WEFT")
bp_wait_ready backend "${PIDS[0]}" "$BPORT" / 2
bp_wait_ready weft "$WEFT" "$LPORT" /bench/x 2
bp_wait_ready weft "$WEFT" "$RPORT" /bench/x 2
mkdir -p "$HERE/results"
OUT="$HERE/results/rbac-$(date +%Y%m%d-%H%M%S).txt"

# run PORT: one measured wrk run; sets RPS, N and CPU_US (proxy CPU microseconds per request).
run() {
  $PIN_LOAD wrk -t1 -c64 -d1 "http://127.0.0.1:$1/bench/x" >/dev/null
  bp_cpu_ns "$WEFT"
  local c0=$BP_CPU_NS out
  out=$($PIN_LOAD wrk -t1 -c64 -d"$DUR" "http://127.0.0.1:$1/bench/x")
  bp_cpu_ns "$WEFT"
  echo "$out" >>"$OUT"
  if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
    echo "run_rbac.sh: errors on port $1:" >&2
    echo "$out" >&2
    exit 1
  fi
  RPS=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  N=$(awk '/requests in/ {print $1}' <<<"$out")
  CPU_US=$(awk -v c=$((BP_CPU_NS - c0)) -v n="$N" 'BEGIN {printf "%.2f", c / 1000 / n}')
}

RATIOS=() CPU_RATIOS=() RBAC_REQS=0
echo "rbac cost: weft-proxy, GET, 10-rule ALLOW policy (the last rule matches), wrk -t1 -c64, $ROUNDS round(s) x ${DUR} s"
printf '  %-5s %12s %12s %14s %14s %8s %10s\n' round "plain req/s" "rbac req/s" "plain CPU/req" \
  "rbac CPU/req" "req/s" "req/CPU-s"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then order=("$LPORT" "$RPORT"); else order=("$RPORT" "$LPORT"); fi
  for port in "${order[@]}"; do
    run "$port"
    if [ "$port" = "$LPORT" ]; then
      P_RPS=$RPS P_CPU=$CPU_US
    else
      R_RPS=$RPS R_CPU=$CPU_US RBAC_REQS=$((RBAC_REQS + N))
    fi
  done
  ratio=$(awk -v a="$R_RPS" -v b="$P_RPS" 'BEGIN {printf "%.3f", a / b}')
  cratio=$(awk -v a="$P_CPU" -v b="$R_CPU" 'BEGIN {printf "%.3f", a / b}')
  RATIOS+=("$ratio") CPU_RATIOS+=("$cratio")
  printf '  %-5s %12s %12s %11s us %11s us %8s %10s\n' "$r" "$P_RPS" "$R_RPS" "$P_CPU" "$R_CPU" \
    "$ratio" "$cratio"
done
STATS=$(curl -s "http://127.0.0.1:$APORT/stats")
allowed=$(awk -F': ' '$1 == "http.bench_rbac.rbac.allowed" {print $2}' <<<"$STATS")
denied=$(awk -F': ' '$1 == "http.bench_rbac.rbac.denied" {print $2}' <<<"$STATS")
if [ "${allowed:-0}" -lt "$RBAC_REQS" ] || [ "${denied:-1}" != 0 ]; then
  echo "run_rbac.sh: the RBAC listener did not evaluate the policy on every request" \
    "(rbac.allowed ${allowed:-missing} for $RBAC_REQS measured requests, rbac.denied ${denied:-missing})" >&2
  exit 1
fi
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "median rbac/plain: requests/s $(median "${RATIOS[@]}"), requests per proxy CPU-second $(median "${CPU_RATIOS[@]}")"
echo "(goal: requests per proxy CPU-second ratio >= 0.95; rbac.allowed $allowed; raw wrk output in $OUT)"
