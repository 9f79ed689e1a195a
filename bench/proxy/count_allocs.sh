#!/bin/bash
# bench/proxy/count_allocs.sh BUILD_DIR N - total heap allocations (valgrind memcheck) of a
# weft-proxy (BUILD_DIR/weft-proxy, one worker) that served N keep-alive GETs of 128 bytes from
# a weft-app on one connection. Run it for two values of N: equal totals mean the steady state
# allocates nothing per request. Needs valgrind. Prints valgrind's "total heap usage" line.
set -eu
B=$1
P=$B/weft-proxy N=$2 D=$(mktemp -d)
cd "$(dirname "$0")/../.."
mapfile -t PS < <(/usr/bin/python3 bench/proxy/free_ports.py 3); BP=${PS[0]} PP=${PS[1]} AP=${PS[2]}
$B/weft-app --listen 127.0.0.1:$BP --name b >/dev/null 2>&1 & APP=$!
/usr/bin/python3 bench/proxy/weft_bootstrap.py $D/b.json $PP $AP $BP
valgrind --tool=memcheck --leak-check=no $P -c $D/b.json --concurrency 1 >/dev/null 2>$D/vg.txt & VG=$!
for i in $(seq 100); do curl -s -o /dev/null localhost:$PP/bytes/128 && break; sleep 0.2; done
/usr/bin/python3 - $PP $N <<'PY'
import socket,sys
port,n=int(sys.argv[1]),int(sys.argv[2])
s=socket.create_connection(("127.0.0.1",port))
for i in range(n):
    s.sendall(b"GET /bytes/128 HTTP/1.1\r\nHost: x\r\n\r\n")
    buf=b""
    while b"\r\n\r\n" not in buf or len(buf.split(b"\r\n\r\n",1)[1])<128: buf+=s.recv(65536)
s.close()
PY
kill -TERM $VG; wait $VG; kill $APP; wait 2>/dev/null
grep "total heap usage" $D/vg.txt; rm -rf $D
