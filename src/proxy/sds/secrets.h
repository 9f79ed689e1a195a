/*
 * secrets.h - the SDS secrets weft-proxy holds, as Envoy's SecretManager sees them from
 * pilot-agent's SDS server: `default` (the workload's certificate chain and private key, an
 * envoy.extensions.transport_sockets.tls.v3.Secret tls_certificate) and `ROOTCA` (the trust
 * bundle, a validation_context.trusted_ca). Istio's resource names (security.md §2,
 * pkg/security/security.go WorkloadKeyCertResourceName / RootCertReqResourceName).
 *
 * The certificate provider (cert_provider.h) sets them on the main thread; TLS contexts read
 * them from any thread (workers rebuild their engine context when the generation moved, see
 * proxy/sds/sds_ctx.h). A mutex guards the strings; the generation is atomic, so a reader
 * checks for a change without locking.
 *
 * Ownership: the store copies what it is given; wp_secrets_get copies out (the caller frees,
 * the key with wp_wc_free_secret). No globals: the server owns the store.
 */
#ifndef WEFT_PROXY_SDS_SECRETS_H
#define WEFT_PROXY_SDS_SECRETS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#define WP_SDS_DEFAULT    "default"
#define WP_SDS_ROOTCA     "ROOTCA"
#define WP_SDS_K8S_PREFIX "kubernetes://" /* credentialName secrets, served over ADS */

typedef struct wp_secrets wp_secrets;

wp_secrets *wp_secrets_new(void); /* NULL when out of memory */
void wp_secrets_free(wp_secrets *s);

/* Replaces `default` (chain + key) and `ROOTCA` (root) at once; version_info as Istio's SDS
 * server writes it (the time, RFC 3339) and last_updated (wall clock, seconds). 0, or -1 out
 * of memory (the old secrets stay). */
int wp_secrets_set(wp_secrets *s, const char *chain, const char *key, const char *root,
                   double now_s);

/* Increases with every wp_secrets_set; 0 = nothing yet. */
uint64_t wp_secrets_generation(const wp_secrets *s);

/* true once `default` and `ROOTCA` (wp_secrets_set) have been supplied. */
bool wp_secrets_has_workload(wp_secrets *s);

/* Copies of the current secrets (heap strings, NULL when unset) and the generation they are
 * of. false when out of memory. */
bool wp_secrets_get(wp_secrets *s, char **chain, char **key, char **root, uint64_t *gen);

/* Envoy's SecretsConfigDump (admin/v3/config_dump_shared.proto) for /config_dump (Envoy's
 * SecretManagerImpl::dumpSecretConfigs):
 * {"@type": ".../SecretsConfigDump", "dynamic_active_secrets": [{name, version_info,
 * last_updated, secret: {"@type": ".../Secret", name, tls_certificate {certificate_chain
 * {inline_bytes}, private_key {inline_bytes: "[redacted]"}}}}, {ROOTCA: validation_context
 * {trusted_ca {inline_bytes}}}]} (base64 as protobuf's JSON, private key redacted as Envoy's
 * MessageUtil::redact). in_use: TLS contexts wait for the secrets, so those not supplied yet
 * are listed in dynamic_warming_secrets as {name, secret: {"@type", name}} (istioctl's
 * WARMING rows). Then the named secrets: each held one active (its private key redacted
 * too), each wanted one not held warming. Empty lists are left out (protobuf JSON). New
 * reference; NULL when out of memory. */
json_t *wp_secrets_dump(wp_secrets *s, bool in_use);

/* ---- named secrets: the credentialName secrets weft-pilot serves over ADS ----
 * (`kubernetes://<name>`, `kubernetes://<name>-cacert`: security.md §2.1, §5.3), stored as
 * the xDS client accepted them (it checks the PEM first: Envoy NACKs what it cannot load). */

/* Sets secret name: chain + key (a tls_certificate) or ca (a validation_context), the other
 * NULL; version_info of the SDS response and the wall clock. Unchanged contents leave the
 * generation alone. 0, or -1 out of memory (the old secret stays). */
int wp_secrets_set_named(wp_secrets *s, const char *name, const char *chain, const char *key,
                         const char *ca, const char *version, double now_s);

/* Copies of secret name's parts (heap strings; NULL when absent or the secret is not held).
 * true when held; false when not held or out of memory (everything NULL then). */
bool wp_secrets_get_named(wp_secrets *s, const char *name, char **chain, char **key, char **ca);

/* The names the listeners wait for (the SDS subscription): listed warming in the dump while
 * not held. names: n strings, copied; replaces the previous list. 0 or -1 (out of memory). */
int wp_secrets_set_wanted(wp_secrets *s, const char *const *names, size_t n);
/* How many names are wanted (the dump is worth showing even before any secret arrives). */
size_t wp_secrets_n_wanted(wp_secrets *s);

/* The earliest NotAfter of the held certificates, `default`/`ROOTCA` and the named ones
 * (seconds since the epoch), 0 when none: server.days_until_first_cert_expiring. */
int64_t wp_secrets_first_expiry(wp_secrets *s);

/* One entry of Envoy's /certs ({"certificates": [entry, ...]}, one per TLS context) for a
 * context that reads certificate cert_name (NULL = `default`) when
 * want_cert and CA ca_name (NULL = `ROOTCA`) when want_ca: {"ca_cert": [...], "cert_chain":
 * [the leaf]} of what is held, each certificate with its path ("<inline>"), serial_number,
 * subject_alt_names [{uri|dns}], days_until_expiration, valid_from, expiration_time (RFC
 * 3339); or NULL when none of them is held yet (Envoy lists the
 * contexts that exist) or out of memory. */
json_t *wp_secrets_cert_entry(wp_secrets *s, const char *cert_name, bool want_cert,
                              const char *ca_name, bool want_ca, int64_t now_s);

#endif
