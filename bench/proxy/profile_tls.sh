#!/usr/bin/env bash
# bench/proxy/profile_tls.sh BUILD_DIR [KEY [SECONDS [ROUNDS]]] - where weft-proxy's CPU goes
# under the keep-alive TLS load of bench/run_proxy_tls.sh, next to HAProxy, and the best
# ratio weft could reach on this harness (issue 17's goal: >= 1.2x HAProxy's keep-alive
# requests per proxy CPU-second).
#
# The same backend (lib.sh bp_write_backend, BENCH_BACKEND as there), certificates
# (tls_certs.sh; KEY ecdsa (default) or rsa), proxy configurations and pinning as
# run_proxy_tls.sh; wrk -t1 -c64 GETs of /128 over TLS for SECONDS (default 4) through each
# proxy in turn, ROUNDS (default 2) times, after a 1 s warm-up. Per proxy and round, two runs:
#   1. unobserved: user and kernel CPU per request (/proc/PID/stat; no perf attached, since
#      counting system calls with tracepoints makes every system call dearer);
#   2. observed: system calls per request (perf stat on the syscall tracepoints) and a
#      profile by shared object (perf record -e cpu-clock), from which the share of the
#      proxy's user-space time spent in OpenSSL (libssl, libcrypto) is read.
# Then, from the medians: the ceiling, the requests per CPU-second weft would reach against
# HAProxy's if everything weft-proxy does in user space outside OpenSSL took no time at all
# (its kernel time and its OpenSSL time kept), and the user time outside OpenSSL per request
# that the 1.2x goal leaves to weft. profile_h2.sh prints the same for HTTP/2 (nghttp2 in place
# of OpenSSL). The perf.data files stay in bench/results/tlsprof-PROXY.data. Needs perf
# (linux-perf) and root (or perf_event_paranoid <= 1).
# shellcheck disable=SC2086,SC2317
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: profile_tls.sh BUILD_DIR [KEY [SECONDS [ROUNDS]]]} KEY=${2:-ecdsa}
DUR=${3:-4} ROUNDS=${4:-2}
case $KEY in ecdsa | rsa) ;; *) echo "profile_tls.sh: KEY is ecdsa or rsa" >&2; exit 2 ;; esac
for v in "$DUR" "$ROUNDS"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "profile_tls.sh: SECONDS and ROUNDS are whole numbers" >&2; exit 2; }
done
[ -x "$BUILD/weft-proxy" ] || { echo "profile_tls.sh: $BUILD/weft-proxy is not built" >&2; exit 1; }
# shellcheck source=lib.sh
. "$HERE/proxy/lib.sh"
bp_setup tlsprof nginx haproxy wrk perf taskset openssl
mapfile -t P < <(/usr/bin/python3 "$HERE/proxy/free_ports.py" 4)
CERTS=$BP_DIR/certs
"$HERE/proxy/tls_certs.sh" "$CERTS" >/dev/null
mkdir -p "$BP_DIR/backend" "$BP_DIR/haproxy" "$HERE/results"
bp_write_backend "$BP_DIR/backend" "${P[0]}"
bp_start backend "$PIN_LOAD" nginx -e "$BP_DIR/backend/error.log" -p "$BP_DIR/backend" \
  -c "$BP_DIR/backend/nginx.conf"
PIDS+=("$BP_PID")
/usr/bin/python3 "$HERE/proxy/weft_bootstrap.py" "$BP_DIR/weft.json" "${P[1]}" "${P[2]}" "${P[0]}" \
  --tls "$CERTS/$KEY.crt" "$CERTS/$KEY.key"
bp_start weft "$PIN_PROXY" "$BUILD/weft-proxy" -c "$BP_DIR/weft.json" --concurrency 1 -l error
PIDS+=("$BP_PID")
declare -A PID_OF=([weft]=$BP_PID) PORT_OF=([weft]=${P[1]} [haproxy]=${P[3]})
bp_write_haproxy_tls "$BP_DIR/haproxy" "${P[3]}" "${P[0]}" "$CERTS/$KEY.pem"
bp_start haproxy "$PIN_PROXY" haproxy -db -f "$BP_DIR/haproxy/haproxy.cfg"
PIDS+=("$BP_PID")
PID_OF[haproxy]=$BP_PID
for t in weft haproxy; do
  for ((i = 0; i < 50; i++)); do
    curl -ksf -o /dev/null "https://127.0.0.1:${PORT_OF[$t]}/128" && continue 2
    bp_sleep 0.2
  done
  echo "profile_tls.sh: $t does not answer GET /128 over TLS; its log:" >&2
  tail -n 20 "$BP_DIR/$t.log" >&2
  exit 1
done
HZ=$(getconf CLK_TCK)
EV=syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto
EV=$EV,syscalls:sys_enter_sendmsg,syscalls:sys_enter_read,syscalls:sys_enter_readv
EV=$EV,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,context-switches

# load URL SECONDS: wrk's run; sets N (requests) and fails on non-2xx answers or errors.
load() {
  local out
  out=$($PIN_LOAD wrk -t1 -c64 -d"${2}s" "$1")
  N=$(awk '/requests in/ {print $1}' <<<"$out")
  if grep -qE 'Non-2xx|Socket errors' <<<"$out" || [ -z "$N" ] || [ "$N" -eq 0 ]; then
    echo "profile_tls.sh: an invalid run through $1:" >&2
    echo "$out" >&2
    exit 1
  fi
}

: >"$BP_DIR/rows"
for ((r = 1; r <= ROUNDS; r++)); do
  for t in weft haproxy; do
    pid=${PID_OF[$t]} url="https://127.0.0.1:${PORT_OF[$t]}/128"
    data=$HERE/results/tlsprof-$t.data
    load "$url" 1
    bp_cpu_ticks "$pid"
    u0=$BP_UTICKS s0=$BP_STICKS
    load "$url" "$DUR"
    bp_cpu_ticks "$pid"
    us=$(awk -v n="$N" -v u=$((BP_UTICKS - u0)) -v hz="$HZ" 'BEGIN {printf "%.3f", u * 1e6 / hz / n}')
    ks=$(awk -v n="$N" -v s=$((BP_STICKS - s0)) -v hz="$HZ" 'BEGIN {printf "%.3f", s * 1e6 / hz / n}')
    perf stat -x, -e "$EV" -p "$pid" -o "$BP_DIR/$t.stat" -- sleep "$DUR" &
    sp=$!
    perf record -q -e cpu-clock -p "$pid" -o "$data" -- sleep "$DUR" 2>/dev/null &
    rp=$!
    load "$url" "$DUR"
    wait "$sp" "$rp" || true
    sc=$(awk -F, -v n="$N" '$1 != "" && $1 !~ /^#/ {sub(/syscalls:sys_enter_/, "", $3)
      if ($1 + 0 > 0) printf "%s %.2f ", $3, $1 / n}' "$BP_DIR/$t.stat")
    # the share of user-space samples in OpenSSL
    lib=$(perf report -i "$data" -g none --no-children --sort dso 2>/dev/null |
      awk '/^ +[0-9.]+%/ {p = $1; sub(/%/, "", p); if ($2 ~ /kernel/) next; all += p
        if ($2 ~ /^lib(ssl|crypto)\.so/) lib += p} END {printf "%.3f", (all > 0 ? lib / all : 0)}')
    printf '%s %s %s %s %s\n' "$t" "$us" "$ks" "$lib" "$sc" >>"$BP_DIR/rows"
    echo "round $r, $t: user $us us, kernel $ks us per request; OpenSSL $(awk -v l="$lib" \
      'BEGIN {printf "%.0f", l * 100}') % of user time; per request: $sc"
  done
done
echo
echo "ROUNDS=$ROUNDS KEY=$KEY, medians over rounds (wrk -t1 -c64 GET /128 over TLS, keep-alive):"
/usr/bin/python3 "$HERE/proxy/ceiling.py" "$BP_DIR/rows" OpenSSL
echo "perf data: $HERE/results/tlsprof-{weft,haproxy}.data (perf report -i FILE --sort dso,sym)"
