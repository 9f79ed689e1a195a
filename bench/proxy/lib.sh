# shellcheck shell=bash
# The BP_* results are read by the caller:
# shellcheck disable=SC2034
# bench/proxy/lib.sh - helpers for bench/run_proxy.sh (sourced, bash only).
#
# Config writers for the backend and the proxy targets, process start/readiness, and the
# samplers. The samplers (bp_cpu_ns, bp_cpu_stat, bp_mem, bp_sleep) use bash builtins only:
# no fork happens while a measurement runs, because a sampler that forks disturbs the proxy
# it measures (see shared/reference/performance.md, 4.4).
#
# Globals the caller sets: BP_DIR (temporary directory), BP_SLEEP_FD (a FIFO opened
# read-write, see bp_sleep_init), BP_PIN_PROXY / BP_PIN_LOAD (taskset prefixes, may be empty).

# bp_setup NAME TOOL...: what the one-proxy benches (run_retry.sh, run_rbac.sh, run_tcp.sh)
# share: each TOOL installed (else exit 1 naming it), BP_DIR (/tmp/weft-NAME-bench.XXXXXX),
# PIDS=() with an EXIT trap that stops them and removes BP_DIR, the sleep FIFO, and PIN_PROXY /
# PIN_LOAD (the proxy on CPU 1, load and backend on CPU 0, with 2 CPUs or more).
bp_setup() {
  local name=$1 exe
  shift
  for exe in "$@"; do
    command -v "$exe" >/dev/null ||
      { echo "run_$name.sh: $exe missing (make bench-proxy installs it)" >&2; exit 1; }
  done
  BP_DIR=$(mktemp -d "/tmp/weft-$name-bench.XXXXXX")
  PIDS=()
  trap bp_cleanup EXIT
  bp_sleep_init
  PIN_PROXY="" PIN_LOAD=""
  if [ "$(nproc)" -ge 2 ]; then PIN_PROXY="taskset -c 1" PIN_LOAD="taskset -c 0"; fi
}

# bp_cleanup: the EXIT trap of bp_setup.
bp_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$BP_DIR"
}

# bp_sleep_init: opens the FIFO bp_sleep waits on.
bp_sleep_init() {
  mkfifo "$BP_DIR/sleep.fifo"
  exec {BP_SLEEP_FD}<>"$BP_DIR/sleep.fifo"
}

# bp_sleep SECONDS: sleeps (fractions allowed) without forking.
bp_sleep() {
  read -r -t "$1" -u "$BP_SLEEP_FD" _ || true
}

# bp_now_us: sets BP_NOW_US to the wall clock in microseconds (LC_ALL=C keeps the dot).
bp_now_us() {
  BP_NOW_US=${EPOCHREALTIME/./}
}

# bp_alive PID: succeeds when PID exists and is not a zombie.
bp_alive() {
  local st
  [ -r /proc/"$1"/stat ] || return 1
  read -r _ _ st _ </proc/"$1"/stat 2>/dev/null || return 1
  [ "$st" != Z ]
}

# bp_cpu_ns PID...: sets BP_CPU_NS to the CPU time (ns) the live threads of the PIDs have run,
# the first field of /proc/PID/task/*/schedstat, summed.
bp_cpu_ns() {
  local pid f run rest total=0
  for pid in "$@"; do
    for f in /proc/"$pid"/task/*/schedstat; do
      [ -r "$f" ] || continue
      read -r run rest <"$f" || continue
      total=$((total + run))
    done
  done
  BP_CPU_NS=$total
}

# bp_cpu_ticks PID...: sets BP_UTICKS and BP_STICKS, the user and kernel CPU time of the PIDs
# (all their threads) in clock ticks (CLK_TCK, 100 a second), utime and stime of /proc/PID/stat.
bp_cpu_ticks() {
  local pid a u=0 s=0
  for pid in "$@"; do
    read -r -a a <"/proc/$pid/stat" 2>/dev/null || continue
    u=$((u + a[13])) s=$((s + a[14]))
  done
  BP_UTICKS=$u BP_STICKS=$s
}

# bp_cpu_stat: sets BP_BUSY0 BP_TOT0 BP_BUSY1 BP_TOT1, the busy and total jiffies of CPU 0
# and CPU 1 from /proc/stat (busy = user + nice + system + irq + softirq; total adds idle,
# iowait and steal).
bp_cpu_stat() {
  local name u n s idle iow irq sirq steal rest busy
  BP_BUSY0=0 BP_TOT0=0 BP_BUSY1=0 BP_TOT1=0
  while read -r name u n s idle iow irq sirq steal rest; do
    case $name in
    cpu0 | cpu1)
      busy=$((u + n + s + irq + sirq))
      if [ "$name" = cpu0 ]; then
        BP_BUSY0=$busy BP_TOT0=$((busy + idle + iow + steal))
      else
        BP_BUSY1=$busy BP_TOT1=$((busy + idle + iow + steal))
        break
      fi
      ;;
    esac
  done </proc/stat
}

# bp_mem PID...: sets BP_RSS_KB and BP_PSS_KB, Rss and Pss from /proc/PID/smaps_rollup summed.
bp_mem() {
  local pid k v u rss=0 pss=0
  for pid in "$@"; do
    [ -r /proc/"$pid"/smaps_rollup ] || continue
    while read -r k v u; do
      case $k in
      Rss:) rss=$((rss + v)) ;;
      Pss:) pss=$((pss + v)) ;;
      esac
    done </proc/"$pid"/smaps_rollup
  done
  BP_RSS_KB=$rss BP_PSS_KB=$pss
}

# bp_http_check PORT PATH BYTES: one GET with Connection: close through bash's /dev/tcp;
# succeeds when the status is 200 and Content-Length is BYTES. Runs in a subshell (forks:
# for setup only, never while measuring).
bp_http_check() (
  local port=$1 path=$2 bytes=$3 fd line status="" len=""
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || exit 1
  printf 'GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n' "$path" >&"$fd"
  IFS= read -r -t 2 -u "$fd" line || exit 1
  line=${line%$'\r'}
  status=${line#* }
  status=${status%% *}
  while IFS= read -r -t 2 -u "$fd" line; do
    line=${line%$'\r'}
    [ -z "$line" ] && break
    case ${line,,} in
    content-length:*) len=${line#*:} && len=${len// /} ;;
    esac
  done
  [ "$status" = 200 ] && [ "$len" = "$bytes" ]
)

# bp_wait_ready NAME PID PORT PATH BYTES: waits up to 10 s until bp_http_check passes; fails
# early when the process PID has exited.
bp_wait_ready() {
  local name=$1 pid=$2 port=$3 path=$4 bytes=$5 i
  for ((i = 0; i < 200; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "run_proxy.sh: $name exited during start-up; its log:" >&2
      tail -n 20 "$BP_DIR/$name.log" >&2 2>/dev/null || true
      return 1
    fi
    bp_http_check "$port" "$path" "$bytes" 2>/dev/null && return 0
    bp_sleep 0.05
  done
  echo "run_proxy.sh: $name on port $port did not answer GET $path with 200 and" \
    "$bytes bytes within 10 s" >&2
  return 1
}

# bp_nginx_common PREFIX: the top of an nginx config: 1 worker, foreground, logs and temp
# paths under PREFIX (nginx-light's defaults point into /var/lib/nginx).
bp_nginx_common() {
  cat <<EOF
worker_processes 1;
worker_rlimit_nofile 16384;
daemon off;
user root root;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 8192; }
EOF
}

# bp_nginx_http_common PREFIX: shared http{} settings: no access log, long keep-alive.
bp_nginx_http_common() {
  cat <<EOF
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    tcp_nodelay on;
    client_body_temp_path $1/client_body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fastcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
EOF
}

# bp_write_backend DIR PORT: the backend nginx config; serves DIR/www/128 (128 bytes) and
# DIR/www/16k (16384 bytes) as static files from the page cache. BENCH_BACKEND picks how it
# writes a response: "sendfile" (default: headers by writev, then the body by sendfile, so
# most responses reach the proxy as two TCP segments), "nopush" (sendfile with TCP_CORK, as
# Debian's nginx.conf: one segment) or "write" (sendfile off: headers and body in one writev).
bp_write_backend() {
  local d=$1 port=$2 send
  case ${BENCH_BACKEND:-sendfile} in
  sendfile) send="sendfile on;" ;;
  nopush) send="sendfile on; tcp_nopush on;" ;;
  write) send="sendfile off;" ;;
  *) echo "bench: BENCH_BACKEND must be sendfile, nopush or write" >&2; return 1 ;;
  esac
  mkdir -p "$d/www"
  head -c 128 /dev/zero | tr '\0' 'a' >"$d/www/128"
  head -c 16384 /dev/zero | tr '\0' 'b' >"$d/www/16k"
  {
    bp_nginx_common "$d"
    echo "http {"
    bp_nginx_http_common "$d"
    cat <<EOF
    default_type application/octet-stream;
    $send
    open_file_cache max=16 inactive=300s;
    server {
        listen 127.0.0.1:$port backlog=4096;
        root $d/www;
        location / { }
    }
}
EOF
  } >"$d/nginx.conf"
}

# bp_write_nginx_proxy DIR PORT BACKEND_PORT [h2]: nginx as a reverse proxy, upstream keep-alive.
# h2: the listener speaks HTTP/2 with prior knowledge (h2c) downstream, in the syntax of the
# installed nginx (`http2 on;` from 1.25.1, the `listen ... http2` parameter before).
bp_write_nginx_proxy() {
  local d=$1 port=$2 bport=$3 lopt="" sopt="" v
  if [ "${4:-}" = h2 ]; then
    v=$(nginx -v 2>&1 | sed -n 's|.*nginx/\([0-9.]*\).*|\1|p')
    if [ "$(printf '%s\n' 1.25.1 "$v" | sort -V | head -n 1)" = 1.25.1 ]; then
      sopt="http2 on;"
    else
      lopt=" http2"
    fi
  fi
  {
    bp_nginx_common "$d"
    echo "http {"
    bp_nginx_http_common "$d"
    cat <<EOF
    upstream backend {
        server 127.0.0.1:$bport;
        keepalive 128;
        keepalive_requests 1000000;
        keepalive_timeout 300s;
    }
    server {
        listen 127.0.0.1:$port backlog=4096$lopt;
        $sopt
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
  } >"$d/nginx.conf"
}

# bp_write_haproxy DIR PORT BACKEND_PORT [BIND_OPTIONS]: HAProxy, 1 thread, mode http, keep-alive
# on both sides, idle server connections shared (http-reuse always). BIND_OPTIONS are appended
# to the bind line (e.g. "proto h2": HTTP/2 with prior knowledge downstream).
bp_write_haproxy() {
  local d=$1 port=$2 bport=$3 bopt=${4:+ $4}
  cat >"$d/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
    pidfile $d/haproxy.pid

defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 1s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s

frontend bench
    bind 127.0.0.1:$port$bopt
    default_backend backend

backend backend
    server backend 127.0.0.1:$bport
EOF
}

# bp_write_haproxy_tls DIR PORT BACKEND_PORT PEM: HAProxy (one thread) terminating TLS 1.2-1.3
# with the certificate and key in PEM, ALPN http/1.1, in front of the plaintext backend
# (run_proxy_tls.sh and proxy/profile_tls.sh).
bp_write_haproxy_tls() {
  cat >"$1/haproxy.cfg" <<CONF
global
    nbthread 1
    maxconn 8192
    ssl-default-bind-options ssl-min-ver TLSv1.2
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 1s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s
frontend bench
    bind 127.0.0.1:$2 ssl crt $4 alpn http/1.1
    default_backend backend
backend backend
    server backend 127.0.0.1:$3
CONF
}

# bp_start NAME CPU_PREFIX CMD...: starts CMD in the background with stdout/stderr in
# BP_DIR/NAME.log; sets BP_PID. CPU_PREFIX is a taskset command line ("" for none).
bp_start() {
  local name=$1 pin=$2
  shift 2
  # shellcheck disable=SC2086
  $pin "$@" >"$BP_DIR/$name.log" 2>&1 &
  BP_PID=$!
}

# bp_pids_of PID: sets BP_PIDS to PID and its child processes (nginx master + worker).
bp_pids_of() {
  local kids
  kids=$(pgrep -P "$1" | tr '\n' ' ' || true)
  BP_PIDS="$1${kids:+ $kids}"
  BP_PIDS=${BP_PIDS% }
}
