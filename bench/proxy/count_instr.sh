#!/bin/bash
# bench/proxy/count_instr.sh PROXY_BINARY [N1 N2] - user-space instructions per proxied request
# of a weft-proxy binary (one worker, valgrind --tool=callgrind): it serves N1 and then, in a
# second run, N2 keep-alive GETs of 128 bytes from a weft-app on one connection; the difference
# of the two totals divided by N2-N1 leaves startup and shutdown out. Defaults N1=1000 N2=3000.
# Compare two builds with it (e.g. build/weft-proxy and a baseline from build_baseline.sh).
# Needs valgrind. Prints "instructions per request: X".
set -eu
P=$(readlink -f "$1") N1=${2:-1000} N2=${3:-3000}
cd "$(dirname "$0")/../.."
B=build
run() { # N -> total Ir
    local n=$1 D; D=$(mktemp -d)
    mapfile -t PS < <(/usr/bin/python3 bench/proxy/free_ports.py 3)
    local BP=${PS[0]} PP=${PS[1]} AP=${PS[2]}
    $B/weft-app --listen 127.0.0.1:$BP --name b >/dev/null 2>&1 & local APP=$!
    /usr/bin/python3 bench/proxy/weft_bootstrap.py $D/b.json $PP $AP $BP
    valgrind --tool=callgrind --callgrind-out-file=$D/cg.out $P -c $D/b.json --concurrency 1 \
        >/dev/null 2>$D/vg.txt & local VG=$!
    for i in $(seq 100); do curl -s -o /dev/null localhost:$PP/bytes/128 && break; sleep 0.2; done
    /usr/bin/python3 - $PP $n <<'PY'
import socket,sys
port,n=int(sys.argv[1]),int(sys.argv[2])
s=socket.create_connection(("127.0.0.1",port))
for i in range(n):
    s.sendall(b"GET /bytes/128 HTTP/1.1\r\nHost: x\r\n\r\n")
    buf=b""
    while b"\r\n\r\n" not in buf or len(buf.split(b"\r\n\r\n",1)[1])<128: buf+=s.recv(65536)
s.close()
PY
    kill -TERM $VG; wait $VG || true; kill $APP; wait 2>/dev/null || true
    grep -o "Collected : [0-9]*" $D/vg.txt | grep -o "[0-9]*$"; rm -rf $D
}
a=$(run $N1); b=$(run $N2)
echo "instructions per request: $(( (b - a) / (N2 - N1) ))"
