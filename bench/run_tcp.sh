#!/usr/bin/env bash
# run_tcp.sh BUILD_DIR [-r ROUNDS] [-m MIB] [-c CONNS] - the TCP proxy's CPU per GiB forwarded
# against HAProxy in TCP mode (issue 19, goal: weft <= 1.0x HAProxy).
#
# Two proxies, each with one worker thread, forward to the same upstream: weft-proxy with a
# listener whose chain is envoy.filters.network.tcp_proxy (no access log, no Istio filters), and
# HAProxy `mode tcp` (nbthread 1). The load is bench/proxy/tcp_blast.c (built here with cc -O2):
# one process that opens CONNS connections to the proxy, writes MIB MiB on each and is also the
# upstream that reads and drops the bytes (so a proxy forwards CONNS x MIB MiB one way). The
# proxy's CPU (its threads' schedstat run time, bench/proxy/lib.sh bp_cpu_ns) is read before and
# after each transfer; reported: proxy CPU seconds per GiB, and the per-round ratio weft /
# haproxy, medianed (paired). The order alternates each round. Pinning as bench/run_proxy.sh:
# the proxies on CPU 1, tcp_blast on CPU 0 (2+ CPUs). Raw output goes to
# bench/results/tcp-YYYYmmdd-HHMMSS.txt. Defaults: 5 rounds, 8 connections x 256 MiB (2 GiB).
# shellcheck disable=SC2086,SC2317
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_tcp.sh BUILD_DIR [-r ROUNDS] [-m MIB_PER_CONNECTION] [-c CONNECTIONS]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD="" ROUNDS=5 MIB=256 CONNS=8
while [ $# -gt 0 ]; do
  case $1 in
  -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
  -m) MIB=${2:?-m needs a number}; shift 2 ;;
  -c) CONNS=${2:?-c needs a number}; shift 2 ;;
  -h | --help) usage ;;
  -*) echo "run_tcp.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage
[[ $MIB =~ ^[1-9][0-9]*$ ]] || usage
[[ $CONNS =~ ^[1-9][0-9]*$ ]] || usage
PROXY=$BUILD/weft-proxy
[ -x "$PROXY" ] || { echo "run_tcp.sh: $PROXY is not built" >&2; exit 1; }
PY=/usr/bin/python3
# shellcheck source=proxy/lib.sh
. "$HERE/proxy/lib.sh"
bp_setup tcp haproxy cc taskset
cc -O2 -o "$BP_DIR/tcp_blast" "$HERE/proxy/tcp_blast.c"
mapfile -t PORTS < <("$PY" "$HERE/proxy/free_ports.py" 4)
SPORT=${PORTS[0]} WPORT=${PORTS[1]} APORT=${PORTS[2]} HPORT=${PORTS[3]}

cat >"$BP_DIR/weft.json" <<EOF
{"admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": $APORT}}},
 "static_resources": {
  "listeners": [{"name": "tcp", "address": {"socket_address": {"address": "127.0.0.1", "port_value": $WPORT}},
   "filter_chains": [{"filters": [{"name": "envoy.filters.network.tcp_proxy", "typed_config": {
     "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
     "stat_prefix": "bench", "cluster": "sink"}}]}]}],
  "clusters": [{"name": "sink", "type": "STATIC", "connect_timeout": "1s",
   "load_assignment": {"cluster_name": "sink", "endpoints": [{"lb_endpoints": [
     {"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": $SPORT}}}}]}]}}]}}
EOF
cat >"$BP_DIR/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
    pidfile $BP_DIR/haproxy.pid

defaults
    mode tcp
    timeout connect 1s
    timeout client 300s
    timeout server 300s

frontend bench
    bind 127.0.0.1:$HPORT
    default_backend sink

backend sink
    server sink 127.0.0.1:$SPORT
EOF
bp_start weft "$PIN_PROXY" "$PROXY" -c "$BP_DIR/weft.json" --concurrency 1 -l error
WEFT=$BP_PID
PIDS+=("$WEFT")
bp_start haproxy "$PIN_PROXY" haproxy -db -f "$BP_DIR/haproxy.cfg"
HAP=$BP_PID
PIDS+=("$HAP")
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$WPORT") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$HPORT") 2>/dev/null; then
    break
  fi
  bp_sleep 0.1
done
bp_alive "$WEFT" || { echo "run_tcp.sh: weft-proxy did not start:" >&2; cat "$BP_DIR/weft.log" >&2; exit 1; }
bp_alive "$HAP" || { echo "run_tcp.sh: haproxy did not start:" >&2; cat "$BP_DIR/haproxy.log" >&2; exit 1; }

mkdir -p "$HERE/results"
OUT="$HERE/results/tcp-$(date +%Y%m%d-%H%M%S).txt"
GIB=$(awk -v c="$CONNS" -v m="$MIB" 'BEGIN {printf "%.4f", c * m / 1024}')

# run PORT PID: one transfer through the proxy PID listening on PORT; sets CPU_S (proxy CPU
# seconds per GiB) and GBPS (GiB/s).
run() {
  local port=$1 pid=$2 c0 out
  bp_cpu_ns "$pid"
  c0=$BP_CPU_NS
  if ! out=$($PIN_LOAD "$BP_DIR/tcp_blast" "$port" "$SPORT" "$CONNS" "$MIB"); then
    echo "run_tcp.sh: transfer through port $port failed: $out" >&2
    exit 1
  fi
  bp_cpu_ns "$pid"
  echo "port=$port cpu_ns=$((BP_CPU_NS - c0)) $out" >>"$OUT"
  local secs
  secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$out")
  CPU_S=$(awk -v c=$((BP_CPU_NS - c0)) -v g="$GIB" 'BEGIN {printf "%.3f", c / 1e9 / g}')
  GBPS=$(awk -v s="$secs" -v g="$GIB" 'BEGIN {printf "%.2f", g / s}')
}

run "$WPORT" "$WEFT" # warm-up (buffers, page cache of the binaries)
run "$HPORT" "$HAP"
RATIOS=()
echo "TCP proxy CPU per GiB: weft-proxy tcp_proxy vs haproxy mode tcp, 1 thread each," \
  "$CONNS connections x $MIB MiB ($GIB GiB) per run, $ROUNDS round(s)"
printf '  %-5s %14s %14s %10s %10s %8s\n' round "weft CPU s/GiB" "hap CPU s/GiB" "weft GiB/s" \
  "hap GiB/s" "ratio"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then order=(weft haproxy); else order=(haproxy weft); fi
  for t in "${order[@]}"; do
    if [ "$t" = weft ]; then run "$WPORT" "$WEFT"; W_CPU=$CPU_S W_BW=$GBPS; else run "$HPORT" "$HAP"; H_CPU=$CPU_S H_BW=$GBPS; fi
  done
  ratio=$(awk -v a="$W_CPU" -v b="$H_CPU" 'BEGIN {printf "%.3f", a / b}')
  RATIOS+=("$ratio")
  printf '  %-5s %14s %14s %10s %10s %8s\n' "$r" "$W_CPU" "$H_CPU" "$W_BW" "$H_BW" "$ratio"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "median weft/haproxy proxy CPU per GiB: $(median "${RATIOS[@]}") (goal <= 1.0; raw output in $OUT)"
echo "haproxy: $(haproxy -v 2>&1 | head -n 1)"
