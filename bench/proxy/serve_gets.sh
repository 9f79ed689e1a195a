#!/bin/bash
# bench/proxy/serve_gets.sh PROXY N LOG TOOL [ARGS...] - runs weft-proxy binary PROXY (one
# worker, the bootstrap of weft_bootstrap.py) under TOOL ARGS (e.g. valgrind --tool=callgrind)
# in front of a weft-app, sends it N keep-alive GETs of 128 bytes on one connection, stops it
# with SIGTERM and leaves the tool's stderr in LOG. The request driver of count_allocs.sh and
# count_instr.sh. Run from anywhere; uses build/weft-app of the project. SERVE_TLS=1: the
# listener terminates TLS (an ECDSA P-256 certificate of tls_certs.sh, as run_proxy_tls.sh)
# and the connection is TLS 1.3 with ALPN http/1.1 (its handshake is one of the N-independent
# costs that the callers' subtraction leaves out). SERVE_RBAC=1: the requests go to a second
# listener whose connection manager runs the 10-rule ALLOW RBAC filter of weft_bootstrap.py
# --rbac-port (the last rule allows them). SERVE_H2=1: the GETs are HTTP/2 with prior knowledge
# (h2c; the listener's codec_type AUTO sees the preface) from h2load on one connection with
# SERVE_H2_STREAMS (default 1) concurrent streams; h2load must report N 2xx, else exit 1.
set -eu
P=$(readlink -f "$1") N=$2 LOG=$3
shift 3
cd "$(dirname "$0")/../.."
D=$(mktemp -d)
mapfile -t PS < <(/usr/bin/python3 bench/proxy/free_ports.py 4)
BP=${PS[0]} PP=${PS[1]} AP=${PS[2]}
TLS_ARGS=() SCHEME=http
if [ "${SERVE_TLS:-0}" = 1 ]; then
  bench/proxy/tls_certs.sh "$D/certs"
  TLS_ARGS=(--tls "$D/certs/ecdsa.crt" "$D/certs/ecdsa.key") SCHEME=https
fi
build/weft-app --listen 127.0.0.1:$BP --name b >/dev/null 2>&1 & APP=$!
RBAC_ARGS=()
if [ "${SERVE_RBAC:-0}" = 1 ]; then RBAC_ARGS=(--rbac-port "${PS[3]}"); fi
/usr/bin/python3 bench/proxy/weft_bootstrap.py $D/b.json $PP $AP $BP "${TLS_ARGS[@]}" "${RBAC_ARGS[@]}"
if [ "${SERVE_RBAC:-0}" = 1 ]; then PP=${PS[3]}; fi
"$@" "$P" -c $D/b.json --concurrency 1 >/dev/null 2>"$LOG" & TOOL=$!
for _ in $(seq 100); do curl -sk -o /dev/null $SCHEME://localhost:$PP/bytes/128 && break; sleep 0.2; done
if [ "${SERVE_H2:-0}" = 1 ]; then
  H2OUT=$(h2load -n "$N" -c1 -m "${SERVE_H2_STREAMS:-1}" "http://127.0.0.1:$PP/bytes/128" 2>&1) || true
  grep -q "^status codes: $N 2xx" <<<"$H2OUT" ||
    { echo "serve_gets.sh: h2load did not get $N 2xx: $H2OUT" >&2; H2FAIL=1; }
else
/usr/bin/python3 - $PP $N "${SERVE_TLS:-0}" <<'PY'
import socket,ssl,sys
port,n,tls=int(sys.argv[1]),int(sys.argv[2]),sys.argv[3]=="1"
s=socket.create_connection(("127.0.0.1",port))
if tls:
    ctx=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname=False
    ctx.verify_mode=ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    s=ctx.wrap_socket(s,server_hostname="bench")
for i in range(n):
    s.sendall(b"GET /bytes/128 HTTP/1.1\r\nHost: x\r\n\r\n")
    buf=b""
    while b"\r\n\r\n" not in buf or len(buf.split(b"\r\n\r\n",1)[1])<128: buf+=s.recv(65536)
s.close()
PY
fi
kill -TERM $TOOL; wait $TOOL || true; kill $APP; wait 2>/dev/null || true
rm -rf "$D"
[ -z "${H2FAIL:-}" ]
