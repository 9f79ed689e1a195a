#!/usr/bin/env bash
# tls_certs.sh DIR - the certificates of bench/run_proxy_tls.sh, made with the openssl CLI:
#   DIR/ca.crt ca.key          a self-signed RSA 2048 root ("bench-ca")
#   DIR/ecdsa.crt ecdsa.key    server, ECDSA P-256, SAN DNS:bench, IP:127.0.0.1
#   DIR/rsa.crt rsa.key        server, RSA 2048, same SANs
#   DIR/ecdsa.pem rsa.pem      certificate + key in one file (HAProxy's crt)
#   DIR/client.crt client.key  client, ECDSA P-256, URI SAN spiffe://cluster.local/ns/bench/sa/client
#   DIR/server.crt server.key  sidecar server, ECDSA P-256, URI SAN spiffe://cluster.local/ns/bench/sa/server
# The leaf certificates are signed by the root (a chain of one, as a workload's). Valid 2 days.
# Exit status: 0, or 1 when openssl fails (its message on stderr).
set -euo pipefail
d=${1:?usage: tls_certs.sh DIR}
mkdir -p "$d"
cd "$d"
q() { "$@" 2>/dev/null >/dev/null || { echo "tls_certs.sh: $* failed" >&2; "$@" >&2; exit 1; }; }
q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca
leaf() { # NAME KEYARGS SAN
  local name=$1 keyargs=$2 san=$3
  # shellcheck disable=SC2086
  q openssl req -newkey $keyargs -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$name"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$name.ext"
  q openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$name.ext" -out "$name.crt"
  cat "$name.crt" "$name.key" >"$name.pem"
}
leaf ecdsa "ec -pkeyopt ec_paramgen_curve:P-256" "DNS:bench,IP:127.0.0.1"
leaf rsa "rsa:2048" "DNS:bench,IP:127.0.0.1"
leaf client "ec -pkeyopt ec_paramgen_curve:P-256" "URI:spiffe://cluster.local/ns/bench/sa/client"
leaf server "ec -pkeyopt ec_paramgen_curve:P-256" "URI:spiffe://cluster.local/ns/bench/sa/server"
