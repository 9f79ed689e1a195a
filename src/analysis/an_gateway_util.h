/*
 * an_gateway_util.h - Go-compatible helpers of the gateway analyzers (an_gateway.c,
 * an_k8sgateway.c).
 *
 * Istio's gateway analyzers lean on Go library behaviour that shows in their results:
 * - encoding/base64 StdEncoding (Secret data, PEM bodies): padding required, CR/LF ignored;
 * - encoding/pem Decode: the first well-formed block anywhere in the input;
 * - pilot/pkg/xds ValidateCertificate: the first PEM block's bytes must be a sequence of
 *   DER certificates (parsed with OpenSSL here), each valid at `now`;
 * - github.com/Masterminds/semver/v3 NewVersion (coercing parser) and Compare, for the
 *   Gateway API CRD bundle-version check.
 */
#ifndef WF_ANALYSIS_AN_GATEWAY_UTIL_H
#define WF_ANALYSIS_AN_GATEWAY_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/arena.h"
#include "model/types.h"

/* Go pem.Decode: finds the first well-formed PEM block in data. On success writes the
 * block's decoded bytes to out (which must hold len bytes), their length to *outlen, and the
 * block type (not NUL-terminated, points into data) to *type / *type_len. */
bool wf_gw_pem_decode(const unsigned char *data, size_t len, unsigned char *out, size_t *outlen,
                      const unsigned char **type, size_t *type_len);

/* pilot/pkg/xds ValidateCertificate(data) == nil at time `now`. False on out of memory. */
bool wf_gw_cert_valid(const unsigned char *data, size_t len, time_t now);

/* The same check, also giving the earliest NotAfter (seconds since the epoch) of the
 * certificates of the first PEM block that parsed, 0 when none did (first_not_after may be
 * NULL). weft-pilot's expiry warning (pilot/gateway_secrets.h) uses it. */
bool wf_gw_cert_check(const unsigned char *data, size_t len, time_t now, time_t *first_not_after);

/* A version as Masterminds semver/v3 parses it. pre and meta point into the parsed string
 * (lengths given); empty when absent. */
typedef struct wf_semver {
    uint64_t major, minor, patch;
    const char *pre, *meta;
    size_t pre_len, meta_len;
} wf_semver;

/* semver.NewVersion with coercion (the library default): "v1.4", "1.04.0-rc.1+b" parse;
 * numeric prerelease parts with a leading zero, overflow and anything else do not. */
bool wf_semver_parse(const char *s, wf_semver *v);

/* Version.Compare: -1, 0, 1 (metadata ignored; a prerelease sorts before its release). */
int wf_semver_compare(const wf_semver *a, const wf_semver *b);

/* Version.String() ("1.4.1-rc.1+meta", no leading v) in the arena; NULL on out of memory. */
const char *wf_semver_string(wf_arena *a, const wf_semver *v);

#endif
