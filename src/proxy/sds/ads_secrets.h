/*
 * ads_secrets.h - the credentialName secrets weft-proxy receives on the aggregated xDS stream
 * (SDS type envoy.extensions.transport_sockets.tls.v3.Secret, names `kubernetes://...`,
 * security.md §2.1, §2.3, §5.3) checked as Envoy loads them and put in the secret store
 * (secrets.h named secrets), where the TLS contexts that name them read them (sds_ctx.h).
 *
 * Input: set, the xDS client's accepted Secrets (an object name -> {"resource": Secret, ...},
 * xds_compose.h), each {"name", "tls_certificate" {certificate_chain, private_key}} or
 * {"name", "validation_context" {trusted_ca}}, DataSources as inline_bytes (base64) or
 * inline_string. Each is checked as Envoy's context does before any is stored: a chain without
 * a PEM certificate "Failed to load certificate chain from <inline>", a key that does not
 * parse "Failed to load private key from <inline>", a key that is not the certificate's "Failed
 * to load private key from <inline>: the private key does not match the certificate", a CA
 * without a certificate "Failed to load trusted CA certificates from <inline>", another shape
 * "Secret <name>: <what> is not supported by weft-proxy". The first failure is appended to err
 * as "Secret <name>: <reason>" and nothing is stored (the client NACKs, the previous secrets
 * stay, as Envoy keeps them). wanted (may be NULL) becomes the store's wanted list.
 *
 * Returns 0, or -1 with err. now_s: the wall clock for last_updated.
 */
#ifndef WEFT_PROXY_SDS_ADS_SECRETS_H
#define WEFT_PROXY_SDS_ADS_SECRETS_H

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/sds/secrets.h"
#include "xds/discovery.h"

int wp_ads_secrets_store(wp_secrets *store, const json_t *set, const wf_xds_names *wanted,
                         double now_s, wf_strbuf *err);

#endif
