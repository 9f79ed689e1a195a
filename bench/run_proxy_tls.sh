#!/usr/bin/env bash
# run_proxy_tls.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] [--quick] - TLS benchmark: weft-proxy
# terminating TLS side by side with HAProxy and nginx on the same certificate, and the cost of
# sidecar-to-sidecar mutual TLS (issue 17; method of shared/reference/performance.md (3)).
#
# Certificates (bench/proxy/tls_certs.sh): one root, server certificates ECDSA P-256 and RSA
# 2048. Backend: a plaintext nginx (bench/proxy/lib.sh) serving /128. For each key type, three
# TLS-terminating proxies forward to it: nginx (1 worker, upstream keep-alive), HAProxy
# (nbthread 1) and weft-proxy (--concurrency 1, a DownstreamTlsContext with the certificate
# files); all offer TLS 1.2 and 1.3 with their default ciphers, session caches and tickets
# (TLS 1.3 session tickets are sent by all three, as Envoy does by default) and ALPN http/1.1.
#
# Each round runs every phase against every target (the order rotates each round):
#   hs   `openssl s_time -new -www /128` for -d seconds: every connection a full handshake
#        (no session resumption), one request, close. Figure: handshakes per proxy CPU-second.
#   ka   wrk -t1 -c64 over TLS with keep-alive: requests per proxy CPU-second (and req/s).
# Then "mesh": two weft-proxies in a row as two sidecars (client sidecar -> server sidecar ->
# backend), once in plaintext and once with mutual TLS between them (client certificate, SAN
# check, ECDSA), wrk -t1 -c1 --latency: the added p50 of mTLS = p50(mtls) - p50(plain), per
# round, medianed. Last, "idle": a fresh instance of each ECDSA target holds BENCH_IDLE_CONNS
# (1000) TLS keep-alive connections after one request each (proxy/idle_conns.py --tls): KiB
# per idle TLS connection.
#
# Proxy CPU is read from /proc/PID/task/*/schedstat around each run; proxies are pinned to CPU
# 1, load generators and the backend to CPU 0 (2 or more CPUs). Ratios against HAProxy are
# computed inside each round, then medianed. Defaults: 3 rounds of 5 s runs (about 4 minutes);
# --quick is 1 round of 2 s runs. Results: bench/results/proxy-tls-YYYYmmdd-HHMMSS.json and the
# tables on stdout. BENCH_KEEP=1 keeps the temporary directory.
#
# Exit status: 0 every sample valid; 1 a sample was invalid, a tool failed or a proxy did not
# start; 2 usage error.
# shellcheck disable=SC2086,SC2317
set -euo pipefail
export LC_ALL=C

usage() {
  echo "usage: bench/run_proxy_tls.sh BUILD_DIR [-r ROUNDS] [-d SECONDS] [--quick]" >&2
  exit 2
}
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD="" ROUNDS=3 DUR=5 QUICK=0 DUR_SET=0
while [ $# -gt 0 ]; do
  case $1 in
  -r) ROUNDS=${2:?-r needs a number}; shift 2 ;;
  -d) DUR=${2:?-d needs seconds}; DUR_SET=1; shift 2 ;;
  --quick) QUICK=1; shift ;;
  -h | --help) usage ;;
  -*) echo "run_proxy_tls.sh: unknown option $1" >&2; usage ;;
  *) [ -z "$BUILD" ] || usage; BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || usage
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "run_proxy_tls.sh: -r takes a positive integer" >&2; exit 2; }
[[ $DUR =~ ^[1-9][0-9]*$ ]] || { echo "run_proxy_tls.sh: -d takes whole seconds" >&2; exit 2; }
if [ "$QUICK" = 1 ]; then
  ROUNDS=1
  [ "$DUR_SET" = 1 ] || DUR=2
fi
IDLE_CONNS=${BENCH_IDLE_CONNS:-1000}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
for exe in nginx haproxy wrk openssl taskset pgrep; do
  command -v "$exe" >/dev/null 2>&1 && continue
  [ -x "/usr/sbin/$exe" ] && { PATH=$PATH:/usr/sbin; continue; }
  echo "run_proxy_tls.sh: $exe is missing; run bench/setup.sh (as root)" >&2
  exit 1
done
WEFT=$BUILD/weft-proxy
[ -x "$WEFT" ] || { echo "run_proxy_tls.sh: $WEFT is not built: run make first" >&2; exit 1; }

NCPU=$(nproc)
if [ "$NCPU" -ge 2 ]; then
  taskset -pc 0 $$ >/dev/null
  PIN_PROXY="taskset -c 1" PINNED=1
else
  echo "run_proxy_tls.sh: fewer than 2 CPUs: nothing is pinned" >&2
  PIN_PROXY="" PINNED=0
fi
[ "$(ulimit -n)" -ge $((2 * IDLE_CONNS + 256)) ] || ulimit -n $((4 * IDLE_CONNS + 1024)) 2>/dev/null || {
  echo "run_proxy_tls.sh: open-file limit $(ulimit -n) is too low for $IDLE_CONNS connections" >&2
  exit 1
}

BP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/weft-proxy-tls-bench.XXXXXX")
chmod 755 "$BP_DIR"
# shellcheck source=bench/proxy/lib.sh
. "$HERE/proxy/lib.sh"
STARTED=()
LOAD_PID=""
cleanup() {
  local rc=$? pid i alive
  set +e
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
  for pid in "${STARTED[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 40; i++)); do
    alive=0
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
CERTS=$BP_DIR/certs
"$HERE/proxy/tls_certs.sh" "$CERTS"

mapfile -t PORTS < <("$PY" "$HERE/proxy/free_ports.py" 40)
[ "${#PORTS[@]}" = 40 ] || { echo "run_proxy_tls.sh: could not get free ports" >&2; exit 1; }
next_port() { NEXT_PORT=${PORTS[0]}; PORTS=("${PORTS[@]:1}"); }
declare -A T_PORT T_PIDS

# tls_wait NAME PID PORT: waits up to 10 s until GET /128 over TLS answers 200.
tls_wait() {
  local name=$1 pid=$2 port=$3 i
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || { echo "run_proxy_tls.sh: $name exited; its log:" >&2
      tail -n 20 "$BP_DIR/$name.log" >&2; return 1; }
    if printf 'GET /128 HTTP/1.0\r\nHost: bench\r\n\r\n' | timeout 2 openssl s_client -quiet \
      -connect "127.0.0.1:$port" -servername bench 2>/dev/null | head -n 1 | grep -q ' 200 '; then
      return 0
    fi
    bp_sleep 0.1
  done
  echo "run_proxy_tls.sh: $name on port $port did not answer over TLS within 10 s" >&2
  return 1
}

nginx_tls_conf() { # DIR PORT KEY
  local d=$1 port=$2 key=$3
  {
    bp_nginx_common "$d"
    echo "http {"
    bp_nginx_http_common "$d"
    cat <<CONF
    upstream backend { server 127.0.0.1:${T_PORT[direct]}; keepalive 128; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:$port ssl backlog=4096;
        ssl_certificate $CERTS/$key.crt;
        ssl_certificate_key $CERTS/$key.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
CONF
  } >"$d/nginx.conf"
}

# start KIND KEY NAME: a fresh TLS-terminating instance (nginx, haproxy, weft) with KEY's
# certificate; sets T_PORT[NAME], T_PIDS[NAME].
start() {
  local kind=$1 key=$2 name=$3 d=$BP_DIR/$3 port
  mkdir -p "$d"
  next_port
  port=$NEXT_PORT
  case $kind in
  nginx) nginx_tls_conf "$d" "$port" "$key"
    bp_start "$name" "$PIN_PROXY" nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" ;;
  haproxy) bp_write_haproxy_tls "$d" "$port" "${T_PORT[direct]}" "$CERTS/$key.pem"
    bp_start "$name" "$PIN_PROXY" haproxy -db -f "$d/haproxy.cfg" ;;
  weft) next_port
    "$PY" "$HERE/proxy/weft_bootstrap.py" "$d/b.json" "$port" "$NEXT_PORT" "${T_PORT[direct]}" \
      --tls "$CERTS/$key.crt" "$CERTS/$key.key"
    bp_start "$name" "$PIN_PROXY" "$WEFT" -c "$d/b.json" --concurrency 1 ;;
  esac
  STARTED+=("$BP_PID")
  tls_wait "$name" "$BP_PID" "$port"
  bp_pids_of "$BP_PID"
  local p
  for p in $BP_PIDS; do [ "$p" = "$BP_PID" ] || STARTED+=("$p"); done
  T_PORT[$name]=$port
  T_PIDS[$name]=$BP_PIDS
}

# start_mesh MODE: the two sidecars (plain or mtls); sets T_PORT[mesh-MODE] (the client
# sidecar's port) and T_PIDS[mesh-MODE] (both proxies).
start_mesh() {
  local mode=$1 d=$BP_DIR/mesh-$1 sport cport
  mkdir -p "$d"
  next_port; sport=$NEXT_PORT
  next_port
  if [ "$mode" = mtls ]; then
    "$PY" "$HERE/proxy/weft_bootstrap.py" "$d/server.json" "$sport" "$NEXT_PORT" "${T_PORT[direct]}" \
      --tls "$CERTS/server.crt" "$CERTS/server.key" --client-ca "$CERTS/ca.crt"
  else
    "$PY" "$HERE/proxy/weft_bootstrap.py" "$d/server.json" "$sport" "$NEXT_PORT" "${T_PORT[direct]}"
  fi
  bp_start "mesh-$mode-server" "$PIN_PROXY" "$WEFT" -c "$d/server.json" --concurrency 1
  STARTED+=("$BP_PID")
  local spid=$BP_PID
  next_port; cport=$NEXT_PORT
  next_port
  if [ "$mode" = mtls ]; then
    "$PY" "$HERE/proxy/weft_bootstrap.py" "$d/client.json" "$cport" "$NEXT_PORT" "$sport" \
      --upstream-tls "$CERTS/client.crt" "$CERTS/client.key" "$CERTS/ca.crt" \
      "spiffe://cluster.local/ns/bench/sa/server" "outbound_.80_._.server.bench.svc.cluster.local"
  else
    "$PY" "$HERE/proxy/weft_bootstrap.py" "$d/client.json" "$cport" "$NEXT_PORT" "$sport"
  fi
  bp_start "mesh-$mode-client" "$PIN_PROXY" "$WEFT" -c "$d/client.json" --concurrency 1
  STARTED+=("$BP_PID")
  bp_wait_ready "mesh-$mode-client" "$BP_PID" "$cport" /128 128
  T_PORT[mesh-$mode]=$cport
  T_PIDS[mesh-$mode]="$spid $BP_PID"
}

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

mkdir -p "$BP_DIR/direct"
next_port
bp_write_backend "$BP_DIR/direct" "$NEXT_PORT"
bp_start direct "" nginx -e "$BP_DIR/direct/error.log" -p "$BP_DIR/direct" -c "$BP_DIR/direct/nginx.conf"
STARTED+=("$BP_PID")
bp_wait_ready direct "$BP_PID" "$NEXT_PORT" /128 128
bp_pids_of "$BP_PID"
read -r -a _kids <<<"$BP_PIDS"
STARTED+=("${_kids[@]}")
T_PORT[direct]=$NEXT_PORT

TARGETS=()
for key in ecdsa rsa; do
  for kind in nginx haproxy weft; do
    start "$kind" "$key" "$kind-$key"
    TARGETS+=("$kind-$key")
  done
done
start_mesh plain
start_mesh mtls
ntargets=${#TARGETS[@]}
secs=$((ROUNDS * (ntargets * 2 * (DUR + 1) + 2 * (DUR + 1)) + 30))
echo "proxy TLS bench: ${TARGETS[*]} + mesh plain/mtls; $ROUNDS round(s) of ${DUR}s runs;" \
  "$NCPU CPUs, pinned=$PINNED; about $((secs / 60)) min $((secs % 60)) s"

mkdir -p "$BP_DIR/out"
# measure ROUND PHASE TARGET: one load run, sampled with builtins only.
measure() {
  local r=$1 phase=$2 t=$3 out="$BP_DIR/out/r$1-$2-$3" pids=${T_PIDS[$3]} c0 c1 t0 t1 rc=0
  local url="https://127.0.0.1:${T_PORT[$t]}/128"
  case $phase in
  ka) wrk -t1 -c64 -d1s "$url" >/dev/null 2>&1 || true ;;
  mesh) url="http://127.0.0.1:${T_PORT[$t]}/128"
    wrk -t1 -c1 -d1s "$url" >/dev/null 2>&1 || true ;;
  esac
  bp_cpu_ns $pids
  c0=$BP_CPU_NS
  bp_now_us
  t0=$BP_NOW_US
  case $phase in
  hs) openssl s_time -connect "127.0.0.1:${T_PORT[$t]}" -new -www /128 -time "$DUR" \
      >"$out.txt" 2>&1 & ;;
  ka) wrk -t1 -c64 -d"${DUR}s" --latency "$url" >"$out.txt" 2>&1 & ;;
  mesh) wrk -t1 -c1 -d"${DUR}s" --latency "$url" >"$out.txt" 2>&1 & ;;
  esac
  LOAD_PID=$!
  wait "$LOAD_PID" || rc=$?
  LOAD_PID=""
  bp_now_us
  t1=$BP_NOW_US
  bp_cpu_ns $pids
  c1=$BP_CPU_NS
  printf '{"round":%d,"phase":"%s","target":"%s","out":"%s","rc":%d,"wall_us":%d,"proxy_cpu_ns":%d}\n' \
    "$r" "$phase" "$t" "$out.txt" "$rc" $((t1 - t0)) $((c1 - c0)) >>"$BP_DIR/samples.jsonl"
}

for ((r = 1; r <= ROUNDS; r++)); do
  order=("${TARGETS[@]:$(((r - 1) % ntargets))}" "${TARGETS[@]:0:$(((r - 1) % ntargets))}")
  for phase in hs ka; do
    for t in "${order[@]}"; do measure "$r" "$phase" "$t"; done
  done
  if [ $((r % 2)) = 1 ]; then mesh=(mesh-plain mesh-mtls); else mesh=(mesh-mtls mesh-plain); fi
  for t in "${mesh[@]}"; do measure "$r" mesh "$t"; done
  echo "round $r/$ROUNDS done (order: ${order[*]})"
done

for kind in nginx haproxy weft; do
  start "$kind" ecdsa "idle-$kind"
  rc=0
  res=$("$PY" "$HERE/proxy/idle_conns.py" --tls --port "${T_PORT[idle-$kind]}" --path /128 \
    --count "$IDLE_CONNS" ${T_PIDS[idle-$kind]}) || rc=$?
  [ -n "$res" ] && printf '{"target":"%s-ecdsa","rc":%d,"result":%s}\n' "$kind" "$rc" "$res" >>"$BP_DIR/idle.jsonl"
  for p in ${T_PIDS[idle-$kind]}; do kill -TERM "$p" 2>/dev/null || true; done
done

mkdir -p "$HERE/results"
OUT=$HERE/results/proxy-tls-$(date +%Y%m%d-%H%M%S).json
rc=0
"$PY" "$HERE/proxy/report_tls.py" --dir "$BP_DIR" --out "$OUT" \
  --meta "rounds=$ROUNDS" --meta "duration_s=$DUR" --meta "quick=$QUICK" --meta "cpus=$NCPU" \
  --meta "pinned=$PINNED" --meta "idle_conns=$IDLE_CONNS" --meta "nginx=$(nginx -v 2>&1)" \
  --meta "haproxy=$(haproxy -v 2>&1 | head -n 1)" --meta "openssl=$(openssl version)" \
  --meta "kernel=$(uname -r)" --meta "idle_busy_cpu0_pct=$IDLE_BUSY0" \
  --meta "idle_busy_cpu1_pct=$IDLE_BUSY1" || rc=$?
echo "raw samples: $OUT"
exit "$rc"
