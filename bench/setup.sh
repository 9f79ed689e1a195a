#!/bin/sh
# Install the Debian packages the proxy benchmark (bench/run_proxy.sh) needs: nginx (backend
# and reverse-proxy target), haproxy, wrk, h2load (nghttp2-client), openssl (certificates and
# s_time for bench/run_proxy_tls.sh), taskset (util-linux), ps
# (procps) and python3 for the statistics. Idempotent like scripts/setup: does nothing when
# everything is present. As root it runs apt-get; otherwise it prints the exact command and
# exits non-zero. nginx-light is preferred; any installed nginx flavour (nginx, nginx-core,
# nginx-full, nginx-extras) also counts.
set -eu
PKGS="haproxy wrk nghttp2-client openssl util-linux procps python3"
missing=""
installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
for p in $PKGS; do
  installed "$p" || missing="$missing $p"
done
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  missing="$missing nginx-light"
fi
[ -z "$missing" ] && exit 0
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "the proxy benchmark needs these Debian packages:$missing" >&2
  echo "Run as root:  apt-get update && $cmd" >&2
  exit 1
fi
echo "Installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || apt-get update
$cmd
