/*
 * sds_ctx.h - a TLS context whose certificate and/or trusted CA come over SDS (Envoy's
 * ContextConfigImpl with SdsApi secret providers, source/common/tls/context_config_impl.cc
 * and ssl_socket.cc): the decoded CommonTlsContext minus the SDS parts is kept as a template,
 * and the engine context (tls/tls.h) is built from it plus the current secrets of the store
 * (secrets.h: `default` -> certificate chain and key, `ROOTCA` -> trusted CA; a combined
 * validation context's default_validation_context supplies the SAN matchers).
 *
 * Rotation: when the store's generation moves, the next acquire rebuilds the context (Envoy's
 * ssl_context_update_by_sds; weft-proxy's main thread acquires once when the secrets change
 * and when a snapshot is applied, so workers find it built) and new handshakes use it; connections
 * made with the old context keep it (the engine's contexts are reference-counted). A secret not
 * supplied yet: wp_sds_ctx_acquire gives NULL, and the transport socket fails the connection
 * as Envoy's NotReadySslSocket ("TLS error: Secret is not supplied by SDS").
 *
 * Threads: acquire may be called from any worker (a mutex guards the cached context; a
 * rebuild parses PEM once per rotation). Ownership: a wp_sds_ctx belongs to its snapshot
 * (wp_config_add_sds_ctx) and copies everything it is given; the store is attached by the
 * server (wp_sds_ctx_attach) and must outlive the snapshot.
 */
#ifndef WEFT_PROXY_SDS_SDS_CTX_H
#define WEFT_PROXY_SDS_SDS_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/sds/secrets.h"
#include "tls/tls.h"

typedef struct wp_sds_ctx wp_sds_ctx;

/* A context of template o (deep-copied: PEM parts, ALPN, SAN matchers, cipher list) that
 * takes its chain and key from `default` (want_cert) and its trusted CA from `ROOTCA`
 * (want_ca). NULL when out of memory. */
wp_sds_ctx *wp_sds_ctx_new(const wf_tls_ctx_opts *o, bool want_cert, bool want_ca);
void wp_sds_ctx_free(wp_sds_ctx *s); /* NULL ok; the current context is released */

/* The secrets to read instead of `default` / `ROOTCA`: a credentialName secret served over ADS
 * (`kubernetes://<name>`, its chain and key; `kubernetes://<name>-cacert`, its CA; secrets.h
 * named secrets). NULL keeps the default. Call before use; copied. false when out of memory. */
bool wp_sds_ctx_set_names(wp_sds_ctx *s, const char *cert_name, const char *ca_name);

/* The store the secrets come from (NULL: none, every acquire gives NULL). */
void wp_sds_ctx_attach(wp_sds_ctx *s, wp_secrets *store);

/* A reference to the current engine context (release with wf_tls_ctx_free), rebuilt first
 * when the store changed; NULL while the secrets are not supplied (or the last build failed
 * with no earlier context: the reason is logged). */
wf_tls_ctx *wp_sds_ctx_acquire(wp_sds_ctx *s);

bool wp_sds_ctx_is_server(const wp_sds_ctx *s);

/* The secrets the context reads: its certificate (cert_name; NULL = `default`) when want_cert,
 * its CA (ca_name; NULL = `ROOTCA`) when want_ca. Pointers stay valid while s lives. */
void wp_sds_ctx_secrets(const wp_sds_ctx *s, const char **cert_name, bool *want_cert,
                        const char **ca_name, bool *want_ca);

/* Does the context read `default` or `ROOTCA` (not only named secrets)? */
bool wp_sds_ctx_uses_default(const wp_sds_ctx *s);

#endif
