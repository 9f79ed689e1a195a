#!/usr/bin/env bash
# bench/proxy/cpu_split.sh PID URL [SECONDS] - where a proxy's CPU goes per request under
# wrk -t1 -c64 (pinned to CPU 0 as bench/run_proxy.sh pins its load): user and kernel time
# per request from /proc/PID/stat (utime, stime; clock ticks of 10 ms, so use a few seconds)
# and voluntary context switches per 1,000 requests summed over the process's threads (each
# one a sleep in epoll_wait and a wake-up). Used for the "where the CPU goes" figures in the
# README; start the proxies as bench/run_proxy.sh does (BENCH_KEEP=1 keeps their configs).
set -euo pipefail
PID=${1:?usage: cpu_split.sh PID URL [SECONDS]} URL=${2:?usage: cpu_split.sh PID URL [SECONDS]}
DUR=${3:-4}
switches() {
  local v=0 n t
  for t in /proc/"$PID"/task/*/status; do
    n=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t")
    v=$((v + n))
  done
  echo "$v"
}
read -r -a a </proc/"$PID"/stat
u0=${a[13]} s0=${a[14]} v0=$(switches)
out=$(taskset -c 0 wrk -t1 -c64 -d"$DUR" "$URL")
read -r -a a </proc/"$PID"/stat
u1=${a[13]} s1=${a[14]} v1=$(switches)
n=$(awk '/requests in/ {print $1}' <<<"$out")
tick=$(getconf CLK_TCK)
awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v v=$((v1 - v0)) -v n="$n" -v t="$tick" 'BEGIN {
  printf "requests %d  user %.2f us/req  kernel %.2f us/req  voluntary switches %.1f per 1k req\n",
    n, u * 1e6 / t / n, s * 1e6 / t / n, v * 1000 / n }'
