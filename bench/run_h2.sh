#!/usr/bin/env bash
# run_h2.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] [-c CONNS] [-m STREAMS] - HTTP/2 downstream:
# requests per proxy CPU-second of weft-proxy, HAProxy and nginx as h2c proxies (issue 19,
# goal: weft >= 1.2x HAProxy).
#
# Downstream HTTP/2 with prior knowledge (h2c) from h2load (-t1 -c CONNS -m STREAMS: CONNS
# keep-alive connections with STREAMS concurrent streams each), upstream HTTP/1.1 to the
# backend of bench/run_proxy.sh (nginx serving /128 and /16k, bench/proxy/lib.sh
# bp_write_backend). The proxies, one worker thread each: weft-proxy with the bootstrap of
# bench/proxy/weft_bootstrap.py (codec_type left at its default, AUTO: the connection preface
# picks HTTP/2), HAProxy (`bind ... proto h2`, mode http, http-reuse always) and nginx
# (`listen ... http2`, or `http2 on;` from nginx 1.25.1; upstream keep-alive pool).
# Each round runs, for both bodies, every proxy (the order rotates each round): a 1 s warm-up,
# then h2load for -d seconds; the proxy's CPU (its threads' schedstat run time, lib.sh
# bp_cpu_ns; nginx master + worker) is read around the measured run. A run counts only when
# h2load negotiated h2c, every finished request was a 2xx and none failed or errored, so a
# failing proxy cannot look fast; weft must also count the connections as HTTP/2
# (http.bench.downstream_cx_http2_total). Reported per body: req/s and requests per proxy
# CPU-second of each proxy, and the per-round ratios weft/haproxy and weft/nginx, medianed
# (paired) with their range. Pinning as bench/run_proxy.sh: the proxies on CPU 1, h2load and
# the backend on CPU 0 (2+ CPUs). Raw h2load output: bench/results/h2-YYYYmmdd-HHMMSS.txt.
# Defaults: 5 rounds of 5 s, -c 8 -m 8 (64 streams in flight, as wrk -c64 in run_proxy.sh).
# Exit status: 0 every run valid (whatever the ratio), 1 an invalid run or a proxy that did
# not start, 2 usage.
# shellcheck disable=SC2086,SC2206,SC2317
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_h2.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] [-c CONNS] [-m STREAMS]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD="" ROUNDS=5 DUR=5 CONNS=8 STREAMS=8
while [ $# -gt 0 ]; do
  case $1 in
  -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
  -d) DUR=${2:?-d needs seconds}; shift 2 ;;
  -c) CONNS=${2:?-c needs a number}; shift 2 ;;
  -m) STREAMS=${2:?-m needs a number}; shift 2 ;;
  -h | --help) usage ;;
  -*) echo "run_h2.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
for v in "$ROUNDS" "$DUR" "$CONNS" "$STREAMS"; do [[ $v =~ ^[1-9][0-9]*$ ]] || usage; done
PROXY=$BUILD/weft-proxy
[ -x "$PROXY" ] || { echo "run_h2.sh: $PROXY is not built" >&2; exit 1; }
PY=/usr/bin/python3
# shellcheck source=proxy/lib.sh
. "$HERE/proxy/lib.sh"
bp_setup h2 nginx haproxy h2load taskset curl
mapfile -t PORTS < <("$PY" "$HERE/proxy/free_ports.py" 5)
BPORT=${PORTS[0]} WPORT=${PORTS[1]} APORT=${PORTS[2]} HPORT=${PORTS[3]} NPORT=${PORTS[4]}

mkdir -p "$BP_DIR/backend" "$BP_DIR/nginx" "$BP_DIR/haproxy"
bp_write_backend "$BP_DIR/backend" "$BPORT"
bp_start backend "$PIN_LOAD" nginx -e "$BP_DIR/backend/error.log" -p "$BP_DIR/backend" \
  -c "$BP_DIR/backend/nginx.conf"
PIDS+=("$BP_PID")
bp_wait_ready backend "$BP_PID" "$BPORT" /16k 16384
"$PY" "$HERE/proxy/weft_bootstrap.py" "$BP_DIR/weft.json" "$WPORT" "$APORT" "$BPORT"
bp_start weft "$PIN_PROXY" "$PROXY" -c "$BP_DIR/weft.json" --concurrency 1 -l error
PIDS+=("$BP_PID")
declare -A PORT_OF=([weft]=$WPORT [haproxy]=$HPORT [nginx]=$NPORT) PIDS_OF=([weft]=$BP_PID)
bp_write_haproxy "$BP_DIR/haproxy" "$HPORT" "$BPORT" "proto h2"
bp_start haproxy "$PIN_PROXY" haproxy -db -f "$BP_DIR/haproxy/haproxy.cfg"
PIDS+=("$BP_PID")
PIDS_OF[haproxy]=$BP_PID
bp_write_nginx_proxy "$BP_DIR/nginx" "$NPORT" "$BPORT" h2
bp_start nginx "$PIN_PROXY" nginx -e "$BP_DIR/nginx/error.log" -p "$BP_DIR/nginx" \
  -c "$BP_DIR/nginx/nginx.conf"
PIDS+=("$BP_PID")
NGINX=$BP_PID

# h2_ready NAME: waits up to 10 s until one h2c GET of /16k through NAME answers 200.
h2_ready() {
  local i pid=${PIDS_OF[$1]:-$NGINX}
  for ((i = 0; i < 100; i++)); do
    bp_alive "$pid" || break
    h2load -n1 -c1 "http://127.0.0.1:${PORT_OF[$1]}/16k" 2>&1 | grep -q 'status codes: 1 2xx' &&
      return 0
    bp_sleep 0.1
  done
  echo "run_h2.sh: $1 did not answer an h2c GET /16k with 200; its log:" >&2
  tail -n 20 "$BP_DIR/$1.log" "$BP_DIR/$1/error.log" 2>/dev/null >&2 || true
  exit 1
}
for t in weft haproxy nginx; do h2_ready "$t"; done
bp_pids_of "$NGINX"
PIDS_OF[nginx]=$BP_PIDS
PIDS+=(${BP_PIDS#"$NGINX"})

bp_cpu_stat
b0=$BP_BUSY0 t0=$BP_TOT0 b1=$BP_BUSY1 t1=$BP_TOT1
bp_sleep 1
bp_cpu_stat
IDLE0=$(((BP_BUSY0 - b0) * 100 / (BP_TOT0 - t0 > 0 ? BP_TOT0 - t0 : 1)))
IDLE1=$(((BP_BUSY1 - b1) * 100 / (BP_TOT1 - t1 > 0 ? BP_TOT1 - t1 : 1)))
mkdir -p "$HERE/results"
OUT="$HERE/results/h2-$(date +%Y%m%d-%H%M%S).txt"

# run TARGET PATH: one measured h2load run; sets RPS (req/s) and RPC (requests per proxy
# CPU-second). Exits 1 on an invalid run.
run() {
  local t=$1 url="http://127.0.0.1:${PORT_OF[$1]}$2" out c0 n ok bad
  $PIN_LOAD h2load -t1 -c"$CONNS" -m"$STREAMS" -D1 "$url" >/dev/null 2>&1 || true
  bp_cpu_ticks ${PIDS_OF[$t]}
  local u0=$BP_UTICKS s0=$BP_STICKS
  bp_cpu_ns ${PIDS_OF[$t]}
  c0=$BP_CPU_NS
  out=$($PIN_LOAD h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$DUR" "$url" 2>&1) || true
  bp_cpu_ns ${PIDS_OF[$t]}
  bp_cpu_ticks ${PIDS_OF[$t]}
  printf '### %s %s cpu_ns=%d\n%s\n' "$t" "$url" $((BP_CPU_NS - c0)) "$out" >>"$OUT"
  n=$(awk '/^requests:/ {print $6}' <<<"$out")
  # a response whose head arrived as the time ran out counts in the status codes, not as done
  ok=$(awk '/^status codes:/ {print $3}' <<<"$out")
  bad=$(awk '/^status codes:/ {s = $5 + $7 + $9} /^requests:/ {r = $10 + $12 + $14} END {print s + r}' <<<"$out")
  if ! grep -q '^Application protocol: h2c' <<<"$out" || [ -z "$n" ] || [ "$n" = 0 ] ||
    [ -z "$ok" ] || [ "$ok" -lt "$n" ] || [ "$bad" != 0 ]; then
    echo "run_h2.sh: invalid run through $t ($url): done ${n:-?}, 2xx ${ok:-?}," \
      "non-2xx+failed+errored+timeout ${bad:-?}; h2load said:" >&2
    echo "$out" | grep -v '^progress' >&2
    exit 1
  fi
  RPS=$(awk '/^finished in/ {print $4}' <<<"$out")
  RPC=$(awk -v n="$n" -v c=$((BP_CPU_NS - c0)) 'BEGIN {printf "%.0f", (c > 0) ? n / (c / 1e9) : 0}')
  USR=$(awk -v n="$n" -v u=$((BP_UTICKS - u0)) -v hz="$HZ" 'BEGIN {printf "%.2f", u * 1e6 / hz / n}')
  SYS=$(awk -v n="$n" -v u=$((BP_STICKS - s0)) -v hz="$HZ" 'BEGIN {printf "%.2f", u * 1e6 / hz / n}')
}
HZ=$(getconf CLK_TCK)

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 {lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
TARGETS=(weft haproxy nginx)
echo "HTTP/2 (h2c) downstream, HTTP/1.1 upstream: weft-proxy vs haproxy vs nginx, 1 worker each;" \
  "h2load -t1 -c$CONNS -m$STREAMS, $ROUNDS round(s) x ${DUR} s; CPU busy before the run:" \
  "CPU 0 ${IDLE0}%, CPU 1 ${IDLE1}% (load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '  %-5s %-5s %9s %9s %9s %11s %11s %11s %7s %7s\n' round body "weft r/s" "hap r/s" \
  "nginx r/s" "weft r/CPUs" "hap r/CPUs" "ngx r/CPUs" "w/hap" "w/ngx"
declare -A ALL
for ((r = 1; r <= ROUNDS; r++)); do
  i=$(((r - 1) % 3))
  order=("${TARGETS[@]:$i}" "${TARGETS[@]:0:$i}")
  for body in 128 16384; do
    path=/128
    [ "$body" = 128 ] || path=/16k
    declare -A S_RPS S_RPC
    for t in "${order[@]}"; do
      run "$t" "$path"
      S_RPS[$t]=$RPS S_RPC[$t]=$RPC
      ALL[$body.$t]="${ALL[$body.$t]:-} $RPC"
      ALL[$body.$t.u]="${ALL[$body.$t.u]:-} $USR" ALL[$body.$t.k]="${ALL[$body.$t.k]:-} $SYS"
    done
    rh=$(awk -v a="${S_RPC[weft]}" -v b="${S_RPC[haproxy]}" 'BEGIN {printf "%.3f", a / b}')
    rn=$(awk -v a="${S_RPC[weft]}" -v b="${S_RPC[nginx]}" 'BEGIN {printf "%.3f", a / b}')
    ALL[$body.hap]="${ALL[$body.hap]:-} $rh" ALL[$body.ngx]="${ALL[$body.ngx]:-} $rn"
    printf '  %-5s %-5s %9.0f %9.0f %9.0f %11s %11s %11s %7s %7s\n' "$r" "$body" \
      "${S_RPS[weft]}" "${S_RPS[haproxy]}" "${S_RPS[nginx]}" "${S_RPC[weft]}" \
      "${S_RPC[haproxy]}" "${S_RPC[nginx]}" "$rh" "$rn"
  done
done
h2=$(curl -s "http://127.0.0.1:$APORT/stats" | awk -F': ' '$1 == "http.bench.downstream_cx_http2_total" {print $2}')
[ "${h2:-0}" -gt 0 ] || {
  echo "run_h2.sh: weft-proxy counted no HTTP/2 connection (downstream_cx_http2_total ${h2:-missing})" >&2
  exit 1
}
echo "medians (requests per proxy CPU-second; ratios paired per round, range in brackets):"
for body in 128 16384; do
  w=(${ALL[$body.weft]}) h=(${ALL[$body.haproxy]}) n=(${ALL[$body.nginx]}) rh=(${ALL[$body.hap]}) rn=(${ALL[$body.ngx]})
  printf '  %5s B: weft %.0f, haproxy %.0f, nginx %.0f; weft/haproxy %.3f [%s], weft/nginx %.3f [%s]\n' \
    "$body" "$(median "${w[@]}")" "$(median "${h[@]}")" "$(median "${n[@]}")" \
    "$(median "${rh[@]}")" "$(range "${rh[@]}")" "$(median "${rn[@]}")" "$(range "${rn[@]}")"
  line=""
  for t in "${TARGETS[@]}"; do
    line="$line, $t $(median ${ALL[$body.$t.u]}) + $(median ${ALL[$body.$t.k]})"
  done
  printf '         proxy CPU per request, user + kernel (us; /proc/PID/stat, 10 ms ticks): %s\n' "${line#, }"
done
echo "(goal: weft/haproxy >= 1.2; weft downstream_cx_http2_total $h2; raw h2load output in $OUT)"
echo "$(haproxy -v 2>&1 | head -n 1 | cut -d' ' -f1-3); $(nginx -v 2>&1 | sed 's/.*: //'); $(h2load --version 2>&1 | head -n 1)"
