#!/bin/bash
# bench/proxy/count_allocs.sh BUILD_DIR N - total heap allocations (valgrind memcheck) of a
# weft-proxy (BUILD_DIR/weft-proxy, one worker) that served N keep-alive GETs of 128 bytes from
# a weft-app on one connection (serve_gets.sh). Run it for two values of N: equal totals mean
# the steady state allocates nothing per request. Needs valgrind. Prints valgrind's "total
# heap usage" line.
set -eu
L=$(mktemp)
"$(dirname "$0")"/serve_gets.sh "$1/weft-proxy" "$2" "$L" valgrind --tool=memcheck --leak-check=no
grep "total heap usage" "$L"; rm -f "$L"
