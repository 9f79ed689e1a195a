#!/bin/bash
# bench/proxy/count_instr.sh [--tls] [--rbac] PROXY_BINARY [N1 N2] - user-space instructions per
# proxied request of a weft-proxy binary (one worker, valgrind --tool=callgrind): it serves N1
# and then, in a second run, N2 keep-alive GETs of 128 bytes from a weft-app on one connection
# (serve_gets.sh); the difference of the two totals divided by N2-N1 leaves startup and
# shutdown out. Defaults N1=1000 N2=3000. --tls: the downstream connection is TLS 1.3 (ECDSA
# P-256, AES-128-GCM; the handshake left out as startup is), the keep-alive TLS requests of
# run_proxy_tls.sh without its timing noise. --h2: the GETs are h2c streams from h2load on one
# connection (serve_gets.sh SERVE_H2; SERVE_H2_STREAMS=M in the environment for M concurrent
# streams, default 1), the downstream of bench/run_h2.sh without its timing noise. Options in
# this order: --tls, --h2, --rbac. Compare two builds with it (e.g. build/weft-proxy and a
# baseline from build_baseline.sh). Needs valgrind. Prints "instructions per request: X".
set -eu
if [ "${1:-}" = --tls ]; then
    export SERVE_TLS=1
    shift
fi
if [ "${1:-}" = --h2 ]; then
    export SERVE_H2=1
    shift
fi
if [ "${1:-}" = --rbac ]; then # through the 10-rule ALLOW RBAC filter (serve_gets.sh)
    export SERVE_RBAC=1
    shift
fi
P=$1 N1=${2:-1000} N2=${3:-3000}
run() { # N -> total instructions (callgrind's "Collected")
    local L; L=$(mktemp)
    "$(dirname "$0")"/serve_gets.sh "$P" "$1" "$L" valgrind --tool=callgrind \
        --callgrind-out-file=/dev/null
    grep -o "Collected : [0-9]*" "$L" | grep -o "[0-9]*$"; rm -f "$L"
}
a=$(run "$N1"); b=$(run "$N2")
echo "instructions per request: $(( (b - a) / (N2 - N1) ))"
