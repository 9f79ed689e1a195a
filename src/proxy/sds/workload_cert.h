/*
 * workload_cert.h - the pieces of pilot-agent's certificate provider that need no event
 * loop: the workload key and its CSR, the CreateCertificate request and response
 * (istio.v1.auth.IstioCertificateService, protobuf by hand: xds/protowire.h), the facts of a
 * certificate, and the rotation delay.
 *
 * Istio behaviour followed (security/pkg/nodeagent/cache/secretcache.go,
 * security/pkg/pki/util/generate_csr.go, security/pkg/nodeagent/caclient/providers/citadel/
 * client.go, pkg/security/security.go; reference security.md §1.2, §1.3, §1.6):
 *  - the key: RSA 2048 (WORKLOAD_RSA_KEY_SIZE) by default, ECDSA P-256 when
 *    ECC_SIGNATURE_ALGORITHM=ECDSA; PEM "PRIVATE KEY" (PKCS#8) as OpenSSL writes it.
 *  - the CSR: empty subject, one URI SAN (the SPIFFE ID, critical since the subject is
 *    empty) when the identity is known, signed SHA-256. The CA takes the identity from the
 *    token, never from the CSR.
 *  - IstioCertificateRequest {csr = 1; validity_duration = 2 (seconds)}; the response's
 *    repeated cert_chain = 1 holds leaf, intermediates, root last; ROOTCA is the last one.
 *  - rotation: delay = expire - life * (ratio + jitter) - now, at least 0, where life =
 *    expire - the time the certificate was received, ratio SECRET_GRACE_PERIOD_RATIO (0.5) and
 *    jitter a uniform draw in [-SECRET_GRACE_PERIOD_RATIO_JITTER, +...] (0.01).
 *
 * Errors: functions return NULL / -1 with a message in err (capacity cap). Nothing global.
 */
#ifndef WEFT_PROXY_SDS_WORKLOAD_CERT_H
#define WEFT_PROXY_SDS_WORKLOAD_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

/* A new key and its CSR: key_pem and csr_pem are heap strings the caller frees (key_pem
 * with wp_wc_free_secret). spiffe_id: the URI SAN, NULL/"" = none. 0 or -1 with err. */
int wp_wc_make_csr(bool ecdsa, const char *spiffe_id, char **key_pem, char **csr_pem, char *err,
                   size_t cap);
/* Cleanses and frees a secret string (NULL ok). */
void wp_wc_free_secret(char *s);

/* IstioCertificateRequest {csr, validity_duration (seconds)} appended to out. */
void wp_wc_encode_request(const char *csr_pem, int64_t ttl_s, wf_strbuf *out);

/* IstioCertificateResponse: the cert_chain elements, joined into *chain (heap, leaf first,
 * each ending in a newline) and the last element into *root (heap). 0, or -1 with err
 * (malformed protobuf, an empty chain). */
int wp_wc_decode_response(const uint8_t *msg, size_t len, char **chain, char **root, char *err,
                          size_t cap);

/* The first certificate of a PEM text: NotBefore and NotAfter (seconds since the epoch) and
 * its serial number in lower-case hex, two digits a byte (Envoy's /certs serial_number) (serial,
 * capacity scap; may be NULL). 0, or -1 when no certificate parses. */
int wp_wc_cert_facts(const char *pem, size_t len, int64_t *not_before, int64_t *not_after,
                     char *serial, size_t scap);

/* Istio's rotation delay in milliseconds (>= 0): created_ms and expire_ms are wall-clock
 * milliseconds (received, NotAfter), ratio the grace period ratio, jitter_draw the jitter
 * already drawn in [-jitter, +jitter]. */
uint64_t wp_wc_rotate_delay_ms(int64_t created_ms, int64_t expire_ms, int64_t now_ms, double ratio,
                               double jitter_draw);

#endif
