#!/usr/bin/env bash
# bench/proxy/profile_h2.sh BUILD_DIR [BODY [SECONDS]] - where weft-proxy's CPU goes under the
# h2c load of bench/run_h2.sh, next to HAProxy: the same backend, fronts and pinning (lib.sh),
# h2load -t1 -c8 -m8 GETs of /BODY (128 or 16k; default 128) for SECONDS (default 3) through each
# proxy in turn, after a 1 s warm-up. Per proxy it prints the write-side and read-side system
# calls per request and the voluntary context switches (perf stat on the syscall tracepoints:
# counting, not tracing, so the load is barely slowed), user and kernel CPU per request
# (/proc/PID/stat) and the top symbols by self time (perf record -e cpu-clock, all of the
# process's threads). PROFILE_CALLGRAPH=1 records DWARF call graphs for weft-proxy and prints
# the inclusive ("children") time of the functions of the HTTP/2 path. The perf.data files
# are kept in bench/results/h2prof-PROXY-BODY.data for perf report. Last, the ceiling
# (proxy/ceiling.py, as profile_tls.sh): from CPU per request measured in a run with no perf
# attached (before the observed one) and the share of weft's user-space time in nghttp2, the
# ratio weft would reach against HAProxy if its own user-space code took no time, and the own
# user time per request issue 19's goal (1.2x) leaves it. Needs perf (linux-perf).
# shellcheck disable=SC2054,SC2086,SC2317
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: profile_h2.sh BUILD_DIR [BODY [SECONDS]]} BODY=${2:-128} DUR=${3:-3}
case $BODY in 128 | 16k) ;; *) echo "profile_h2.sh: BODY is 128 or 16k" >&2; exit 2 ;; esac
# shellcheck source=lib.sh
. "$HERE/proxy/lib.sh"
bp_setup h2prof nginx haproxy h2load perf taskset
mapfile -t P < <(/usr/bin/python3 "$HERE/proxy/free_ports.py" 4)
mkdir -p "$BP_DIR/backend" "$BP_DIR/haproxy" "$HERE/results"
bp_write_backend "$BP_DIR/backend" "${P[0]}"
bp_start backend "$PIN_LOAD" nginx -e "$BP_DIR/backend/error.log" -p "$BP_DIR/backend" \
  -c "$BP_DIR/backend/nginx.conf"
PIDS+=("$BP_PID")
/usr/bin/python3 "$HERE/proxy/weft_bootstrap.py" "$BP_DIR/weft.json" "${P[1]}" "${P[2]}" "${P[0]}"
bp_start weft "$PIN_PROXY" "$BUILD/weft-proxy" -c "$BP_DIR/weft.json" --concurrency 1 -l error
PIDS+=("$BP_PID")
declare -A PID_OF=([weft]=$BP_PID) PORT_OF=([weft]=${P[1]} [haproxy]=${P[3]})
bp_write_haproxy "$BP_DIR/haproxy" "${P[3]}" "${P[0]}" "proto h2"
bp_start haproxy "$PIN_PROXY" haproxy -db -f "$BP_DIR/haproxy/haproxy.cfg"
PIDS+=("$BP_PID")
PID_OF[haproxy]=$BP_PID
bp_sleep 1
HZ=$(getconf CLK_TCK)
EV=syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto
EV=$EV,syscalls:sys_enter_read,syscalls:sys_enter_readv,syscalls:sys_enter_recvfrom
EV=$EV,syscalls:sys_enter_epoll_wait,context-switches
for t in weft haproxy; do
  pid=${PID_OF[$t]} url="http://127.0.0.1:${PORT_OF[$t]}/$BODY"
  data=$HERE/results/h2prof-$t-$BODY.data
  $PIN_LOAD h2load -t1 -c8 -m8 -D1 "$url" >/dev/null
  # unobserved: CPU per request with no perf attached (tracepoints make system calls dearer)
  bp_cpu_ticks "$pid"
  u0=$BP_UTICKS s0=$BP_STICKS
  out=$($PIN_LOAD h2load -t1 -c8 -m8 -D"$DUR" "$url")
  bp_cpu_ticks "$pid"
  n=$(awk '/^requests:/ {print $6}' <<<"$out")
  [ "${n:-0}" -gt 0 ] || { echo "profile_h2.sh: no request finished through $t" >&2; exit 1; }
  cpu_row=$(awk -v n="$n" -v u=$((BP_UTICKS - u0)) -v s=$((BP_STICKS - s0)) -v hz="$HZ" \
    'BEGIN {printf "%.3f %.3f", u * 1e6 / hz / n, s * 1e6 / hz / n}')
  cg=()
  [ "${PROFILE_CALLGRAPH:-0}" = 1 ] && [ "$t" = weft ] && cg=(--call-graph dwarf,16384 -F 999)
  perf stat -x, -e "$EV" -p "$pid" -o "$BP_DIR/$t.stat" -- sleep "$DUR" &
  sp=$!
  perf record -q -e cpu-clock "${cg[@]}" -p "$pid" -o "$data" -- sleep "$DUR" 2>/dev/null &
  rp=$!
  bp_cpu_ticks "$pid"
  u0=$BP_UTICKS s0=$BP_STICKS
  out=$($PIN_LOAD h2load -t1 -c8 -m8 -D"$DUR" "$url")
  bp_cpu_ticks "$pid"
  wait "$sp" "$rp" || true
  n=$(awk '/^requests:/ {print $6}' <<<"$out")
  grep -q "^status codes: [0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx" <<<"$out" ||
    { echo "profile_h2.sh: non-2xx answers through $t" >&2; exit 1; }
  echo "=== $t, /$BODY: $n requests in $DUR s"
  awk -F, -v n="$n" '$1 != "" && $1 !~ /^#/ {sub(/syscalls:sys_enter_/, "", $3); if ($1 + 0 > 0)
    printf "  %s %.2f", $3, $1 / n} END {print "  (per request)"}' "$BP_DIR/$t.stat"
  awk -v n="$n" -v u=$((BP_UTICKS - u0)) -v s=$((BP_STICKS - s0)) -v hz="$HZ" 'BEGIN {
    printf "  CPU per request: user %.2f us, kernel %.2f us\n", u * 1e6 / hz / n, s * 1e6 / hz / n}'
  { perf report -i "$data" -g none --no-children --sort dso 2>/dev/null | grep -E '^ +[0-9]' |
    head -n 6 | tr -s ' ' | tr '\n' ';' | sed 's/^/  by object:/; s/;$/\n/'; } || true
  lib=$(perf report -i "$data" -g none --no-children --sort dso 2>/dev/null |
    awk '/^ +[0-9.]+%/ {p = $1; sub(/%/, "", p); if ($2 ~ /kernel/) next; all += p
      if ($2 ~ /^libnghttp2\.so/) lib += p} END {printf "%.3f", (all > 0 ? lib / all : 0)}')
  echo "$t $cpu_row $lib" >>"$BP_DIR/rows"
  echo "  unobserved run: CPU per request user ${cpu_row% *} us, kernel ${cpu_row#* } us;" \
    "nghttp2 $(awk -v l="$lib" 'BEGIN {printf "%.0f", l * 100}') % of user time"
  { perf report -i "$data" -g none --no-children --sort dso,sym 2>/dev/null | grep -E '^ +[0-9]' |
    grep -v kernel | head -n 15; } || true
  if [ ${#cg[@]} -gt 0 ]; then
    echo "  inclusive time of the HTTP/2 path's functions (weft):"
    perf report -i "$data" -g none --children --sort sym 2>/dev/null | grep -E '^ +[0-9]' |
      grep -E '\] (nghttp2_session_mem_recv|on_begin_headers|on_request|bs_pump|process|flush_upstream|on_upstream_data|bs_write|h2c_flush|nghttp2_session_mem_send|h1_parse|wp_h2_server_respond|wf_strbuf_append_slow|__GI___libc_write|__GI___libc_read)$' || true
  fi
done
echo
echo "ceiling, /$BODY (h2load -t1 -c8 -m8; HAProxy's HTTP/2 code is its own, weft's is nghttp2's):"
/usr/bin/python3 "$HERE/proxy/ceiling.py" "$BP_DIR/rows" nghttp2
