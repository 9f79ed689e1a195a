/*
 * cert_provider.h - pilot-agent's workload certificate provider inside weft-proxy (Istio's
 * SecretManagerClient, security/pkg/nodeagent/cache/secretcache.go, with the Citadel client
 * security/pkg/nodeagent/caclient/providers/citadel/client.go; reference security.md §1.3,
 * §1.6): it makes the workload key (never sent anywhere) and a CSR, calls
 * istio.v1.auth.IstioCertificateService/CreateCertificate at CA_ADDR with gRPC metadata
 * "authorization: Bearer <token>" (the token file re-read for every call) and "clusterid",
 * asks for SECRET_TTL, and puts the answer into the SDS store (secrets.h) as `default`
 * (key + chain) and `ROOTCA` (the chain's last element).
 *
 * Timing: the first certificate is requested at start; a certificate is replaced at Istio's
 * rotation delay (workload_cert.h wp_wc_rotate_delay_ms, SECRET_GRACE_PERIOD_RATIO 0.5 ±
 * SECRET_GRACE_PERIOD_RATIO_JITTER 0.01); a failed request is retried after a back-off of
 * 1 s doubling to 60 s (weft's; Istio retries inside its gRPC client). Logs (scope secret, as
 * Istio's `cache` scope): "generated new workload certificate resourceName=default
 * latency=<ms>ms ttl=<duration>" and "failed to sign CSR: create certificate: rpc error: code
 * = <Code> desc = <message>".
 *
 * Threads: everything runs on the loop given (the main thread); key generation and CSR
 * signing (RSA 2048 takes tens of milliseconds) run on libuv's thread pool, so neither the
 * main loop nor a worker waits for them. Ownership: the provider borrows the store, which must
 * outlive it; wp_cert_provider_close stops it and frees it once its handles are closed.
 */
#ifndef WEFT_PROXY_SDS_CERT_PROVIDER_H
#define WEFT_PROXY_SDS_CERT_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"
#include "proxy/sds/secrets.h"

typedef struct wp_cert_provider_opts {
    char ca_host[64]; /* CA_ADDR's host (an IP address: a DNS name is resolved at start) */
    int ca_port;
    char ca_name[256];      /* the name (DNS or IP) the CA's certificate must carry; "" = ca_host */
    const char *token_path; /* the Bearer token's file */
    const char *spiffe_id;  /* the CSR's URI SAN, NULL = none */
    const char *cluster_id; /* ClusterID metadata, NULL = "Kubernetes" */
    const char *ca_root_path; /* TLS to the CA, verified against this root file (pilot-agent's
                               * CA_ROOT_CA; default for port 15012:
                               * ./var/run/secrets/istio/root-cert.pem); NULL = plaintext */
    bool ecdsa;               /* ECC_SIGNATURE_ALGORITHM=ECDSA */
    int64_t ttl_s;            /* SECRET_TTL in seconds */
    double grace_ratio;       /* SECRET_GRACE_PERIOD_RATIO */
    double grace_jitter;      /* SECRET_GRACE_PERIOD_RATIO_JITTER */
    /* called on the loop after each new certificate is stored (NULL = none): the server
     * rebuilds its TLS contexts there, so no worker does it */
    void (*on_update)(void *ud);
    void *ud;
} wp_cert_provider_opts;

/* Istio's defaults (TTL 24 h, ratio 0.5, jitter 0.01, RSA, "Kubernetes") over which the
 * environment applies: CA_ADDR (host:port, the host an IP address or a DNS name resolved now,
 * once, to its first address; its certificate must carry that host, as the citadel client's
 * ServerName); when CA_ADDR is unset ca_default is used (the ADS cluster's IP:PORT, NULL =
 * none) and the certificate must carry ISTIOD_SAN when set, else ca_default_name when not
 * NULL (`weft-proxy proxy`: discoveryAddress's host), else ca_default's IP (pilot-agent's
 * CAEndpointSAN = ISTIOD_SAN for the discovery address). SECRET_TTL (Go duration),
 * SECRET_GRACE_PERIOD_RATIO,
 * SECRET_GRACE_PERIOD_RATIO_JITTER, ECC_SIGNATURE_ALGORITHM, TRUST_DOMAIN (cluster.local) with
 * POD_NAMESPACE and SERVICE_ACCOUNT (the CSR's SPIFFE ID, kept in spiffe_buf of scap bytes),
 * CLUSTER_ID, CA_ROOT_CA (a root file: TLS to the CA, whose certificate must chain to it and
 * carry the name above; without it a CA on port 15012, istiod's secure port, is reached over
 * TLS with ./var/run/secrets/istio/root-cert.pem). token_path: the --token-path flag, else env
 * WEFT_TOKEN_PATH, else Istio's
 * ./var/run/secrets/tokens/istio-token. 0, or -1 with the bad variable named in err. */
int wp_cert_provider_opts_from_env(wp_cert_provider_opts *o, const char *ca_default,
                                   const char *ca_default_name, const char *token_path,
                                   char *spiffe_buf, size_t scap, wf_strbuf *err);

/* The token file (pilot-agent's istio-token): flag (--token-path) when given, else env
 * WEFT_TOKEN_PATH, else ./var/run/secrets/tokens/istio-token. The CSRs and the xDS stream over
 * TLS (xds_client.h) both send it. */
const char *wp_token_path(const char *flag);

typedef struct wp_cert_provider wp_cert_provider;

/* Starts the provider on loop: the first CSR is made at once. opts copied (the strings must
 * outlive the provider). NULL when out of memory. */
wp_cert_provider *wp_cert_provider_start(uv_loop_t *loop, const wp_cert_provider_opts *opts,
                                         wp_secrets *store);
/* Stops timers and any request in flight; frees the provider once its handles are closed
 * (run the loop). NULL ok. */
void wp_cert_provider_close(wp_cert_provider *p);

#endif
