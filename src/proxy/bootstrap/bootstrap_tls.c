/*
 * bootstrap_tls.c - transport_socket of a listener's filter chain and of a cluster
 * (envoy.config.core.v3.TransportSocket): envoy.transport_sockets.raw_buffer, and
 * envoy.transport_sockets.tls with typed_config
 *   type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
 *     {common_tls_context, require_client_certificate}             (filter chains)
 *   type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
 *     {common_tls_context, sni}                                     (clusters)
 *   CommonTlsContext {tls_params {tls_minimum_protocol_version, tls_maximum_protocol_version,
 *     cipher_suites}, tls_certificates[1] {certificate_chain, private_key},
 *     validation_context {trusted_ca, match_subject_alt_names, match_typed_subject_alt_names},
 *     alpn_protocols}
 * DataSources as filename, inline_bytes (base64, as protobuf's JSON) or inline_string.
 * Envoy's data-plane-api envoy/extensions/transport_sockets/tls/v3/{tls,common}.proto and
 * envoy/type/matcher/v3/string.proto are followed; the TLS engine (tls/tls.h) builds the
 * context at load, so a bad certificate, key or cipher list fails the load naming its path.
 *
 * SDS as Istio writes it (security.md §2.3, §3.2, §3.3): tls_certificate_sds_secret_configs
 * [{name: "default", sds_config}], validation_context_sds_secret_config {name: "ROOTCA"} and
 * combined_validation_context {default_validation_context (SAN matchers),
 * validation_context_sds_secret_config {name: "ROOTCA"}}; sds_config is a ConfigSource with
 * api_config_source (GRPC, envoy_grpc to Istio's `sds-grpc`) or ads {}, and
 * initial_fetch_timeout. The secrets come from weft-proxy's own certificate provider
 * (sds/cert_provider.h, pilot-agent's part), so only `default` and `ROOTCA` are accepted,
 * and the credentialName secrets `kubernetes://...` with sds_config ads {} (Istio's
 * SDSAdsConfig: weft-pilot serves them on the aggregated stream, the xDS client stores them);
 * another name is refused as not supported. The context is built from the secrets when they
 * arrive (sds/sds_ctx.h).
 *
 * Not implemented, refused by name with "not supported by weft-proxy" (never accepted
 * silently): SDS secrets other than default/ROOTCA, certificate providers, session ticket keys and
 * session settings, OCSP, CRLs, SPKI/hash pinning, ecdh_curves, signature_algorithms,
 * several certificates, SAN matchers other than exact/prefix or on EMAIL / IP SANs.
 *
 * As Envoy's config dump (MessageUtil::redact), an inline private key is rewritten to
 * "[redacted]" (inline_string) or its base64 (inline_bytes) in the configuration kept for
 * /config_dump.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/base64.h"
#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/sds/sds_ctx.h"
#include "tls/tls.h"

#define TLS_NAME     "envoy.transport_sockets.tls"
#define RAW_NAME     "envoy.transport_sockets.raw_buffer"
#define TLS_PKG      "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3."
#define DTC_TYPE     TLS_PKG "DownstreamTlsContext"
#define UTC_TYPE     TLS_PKG "UpstreamTlsContext"
#define RAW_TYPE     "type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"
#define REDACTED     "[redacted]"
#define REDACTED_B64 "W3JlZGFjdGVkXQ=="
#define MAX_PEM      (1024u * 1024u)

/* The fields of o named in names (space-separated) are refused as not supported. */
static bool refuse(bs *b, json_t *o, const char *names)
{
    char name[64];
    for (const char *p = names; *p;) {
        size_t n = strcspn(p, " ");
        if (n < sizeof(name)) {
            memcpy(name, p, n);
            name[n] = '\0';
            if (json_object_get(o, name))
                return bs_fail_at(b, name, "not supported by weft-proxy");
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    return true;
}

/* Each object of the array o[k] through fn with the same arg (path .k[i]). */
static bool each_obj(bs *b, json_t *o, const char *k, bool (*fn)(bs *, json_t *, void *), void *arg)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, k, "an array");
    size_t m = bs_push(b, k);
    for (size_t i = 0; i < json_array_size(v) && !b->failed; i++) {
        size_t mi = bs_push_i(b, i);
        json_t *it = json_array_get(v, i);
        if (!json_is_object(it))
            bs_fail(b, "wrong type: expected an object");
        else
            fn(b, it, arg);
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    return !b->failed;
}

/* A decoded DataSource: malloc'd bytes (cleansed and freed with ds_free). */
typedef struct {
    char *data;
    size_t len;
} ds_bytes;

static void ds_free(ds_bytes *d)
{
    if (d->data) {
        OPENSSL_cleanse(d->data, d->len);
        free(d->data);
    }
    *d = (ds_bytes){0};
}

static bool read_file(bs *b, const char *path, ds_bytes *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return bs_fail(b, "unable to read file: %s", path);
    char *buf = malloc(MAX_PEM + 1);
    size_t n = buf ? fread(buf, 1, MAX_PEM + 1, f) : 0;
    bool err = ferror(f);
    fclose(f);
    if (!buf)
        return bs_fail(b, "out of memory");
    if (err || n > MAX_PEM) {
        free(buf);
        return bs_fail(b, "unable to read file: %s", path);
    }
    buf[n] = '\0';
    *out = (ds_bytes){buf, n};
    return true;
}

/* o[k], a DataSource, into *out (left empty when absent). secret: an inline value is
 * redacted in o afterwards. */
static bool dec_data_source(bs *b, json_t *o, const char *k, bool secret, ds_bytes *out)
{
    json_t *ds = bs_get(o, k);
    if (!ds)
        return true;
    size_t m = bs_push(b, k);
    const char *fn = NULL, *bytes = NULL, *str = NULL;
    bool ok = refuse(b, ds, "environment_variable watched_directory") &&
              bs_fields(b, ds, "filename inline_bytes inline_string") &&
              bs_str(b, ds, "filename", &fn) && bs_str(b, ds, "inline_bytes", &bytes) &&
              bs_str(b, ds, "inline_string", &str);
    if (ok && (fn != NULL) + (bytes != NULL) + (str != NULL) != 1)
        ok = bs_fail(b, "exactly one of filename, inline_bytes, inline_string must be set");
    if (ok && fn) {
        ok = read_file(b, fn, out);
    } else if (ok && bytes) {
        size_t len = strlen(bytes);
        out->data = malloc(3 * (len / 4 + 1) + 1);
        if (!out->data)
            ok = bs_fail(b, "out of memory");
        else if (!wf_base64_decode(bytes, len, 0, (unsigned char *)out->data, &out->len))
            ok = bs_fail_at(b, "inline_bytes", "invalid base64");
        else
            out->data[out->len] = '\0';
        if (ok && secret)
            json_object_set_new(ds, "inline_bytes", json_string(REDACTED_B64));
    } else if (ok && str) {
        out->len = strlen(str);
        if (!(out->data = strdup(str)))
            ok = bs_fail(b, "out of memory");
        if (ok && secret)
            json_object_set_new(ds, "inline_string", json_string(REDACTED));
    }
    bs_pop(b, m);
    return ok;
}

/* What a CommonTlsContext decodes into, before the engine builds it. */
typedef struct {
    wf_tls_ctx_opts o;
    ds_bytes chain, key, ca;
    const char **alpn;
    wf_tls_san_matcher *sans;
    size_t cap_sans;
    char *ciphers;
    bool sds_cert, sds_ca;           /* `default` / `ROOTCA` over SDS */
    const char *cert_name, *ca_name; /* credentialName secrets over ADS; NULL = default */
} tls_in;

static void tls_in_free(tls_in *t)
{
    ds_free(&t->chain);
    ds_free(&t->key);
    ds_free(&t->ca);
    free(t->alpn);
    free(t->sans);
    free(t->ciphers);
}

static bool dec_version(bs *b, json_t *o, const char *k, int *out)
{
    const char *s = NULL;
    if (!bs_str(b, o, k, &s) || !s)
        return !b->failed;
    int v = wf_tls_version_from_name(s);
    if (v < 0)
        return bs_fail_atf(b, k, "unknown enum value \"%s\"", s);
    *out = v;
    return true;
}

static bool dec_tls_params(bs *b, json_t *o, void *arg)
{
    tls_in *t = arg;
    if (!refuse(b, o, "ecdh_curves signature_algorithms compliance_policies") ||
        !bs_fields(b, o,
                   "tls_minimum_protocol_version tls_maximum_protocol_version cipher_suites") ||
        !dec_version(b, o, "tls_minimum_protocol_version", &t->o.min_version) ||
        !dec_version(b, o, "tls_maximum_protocol_version", &t->o.max_version))
        return false;
    /* checked when the context is loaded (Envoy's ContextConfigImpl), not only when an SDS
     * secret later builds it: an LDS update with such a context is rejected */
    if (!wf_tls_versions_ok(&t->o))
        return bs_fail_at(b, "tls_minimum_protocol_version",
                          "tls_minimum_protocol_version is above tls_maximum_protocol_version");
    json_t *cs = bs_get(o, "cipher_suites");
    if (!cs)
        return true;
    if (!json_is_array(cs))
        return bs_wrong_type(b, "cipher_suites", "an array of strings");
    wf_strbuf sb = WF_STRBUF_INIT;
    for (size_t i = 0; i < json_array_size(cs); i++) {
        json_t *e = json_array_get(cs, i);
        if (!json_is_string(e)) {
            wf_strbuf_free(&sb);
            return bs_wrong_type(b, "cipher_suites", "an array of strings");
        }
        wf_strbuf_printf(&sb, "%s%s", i ? ":" : "", json_string_value(e));
    }
    if (wf_strbuf_failed(&sb))
        return bs_fail(b, "out of memory");
    t->ciphers = sb.data;
    t->o.cipher_suites = t->ciphers;
    return true;
}

static bool dec_certificate(bs *b, json_t *o, void *arg)
{
    tls_in *t = arg;
    if (!refuse(b, o,
                "password ocsp_staple signed_certificate_timestamp private_key_provider pkey "
                "watched_directory") ||
        !bs_fields(b, o, "certificate_chain private_key") ||
        !dec_data_source(b, o, "certificate_chain", false, &t->chain) ||
        !dec_data_source(b, o, "private_key", true, &t->key))
        return false;
    if (!t->chain.data)
        return bs_fail_at(b, "certificate_chain", "missing required field");
    if (!t->key.data)
        return bs_fail_at(b, "private_key", "missing required field");
    return true;
}

/* A StringMatcher on a SAN (exact or prefix). */
static bool dec_san_string(bs *b, json_t *o, wf_tls_san_type type, tls_in *t)
{
    bool ic = false;
    const char *exact = NULL, *prefix = NULL;
    if (!refuse(b, o, "suffix contains safe_regex custom") ||
        !bs_fields(b, o, "exact prefix ignore_case") || !bs_bool(b, o, "ignore_case", &ic) ||
        !bs_str(b, o, "exact", &exact) || !bs_str(b, o, "prefix", &prefix))
        return false;
    if (ic)
        return bs_fail_at(b, "ignore_case", "not supported by weft-proxy");
    if ((exact != NULL) + (prefix != NULL) != 1)
        return bs_fail(b, "exactly one of exact, prefix must be set");
    if (t->o.nsans == t->cap_sans) {
        size_t cap = t->cap_sans ? t->cap_sans * 2 : 4;
        wf_tls_san_matcher *n = realloc(t->sans, cap * sizeof(*n));
        if (!n)
            return bs_fail(b, "out of memory");
        t->sans = n;
        t->cap_sans = cap;
    }
    t->sans[t->o.nsans++] = (wf_tls_san_matcher){
        type, exact ? WF_TLS_MATCH_EXACT : WF_TLS_MATCH_PREFIX, exact ? exact : prefix};
    return true;
}

static bool dec_untyped_san(bs *b, json_t *o, void *arg)
{
    return dec_san_string(b, o, WF_TLS_SAN_ANY, arg);
}

static bool dec_typed_san(bs *b, json_t *o, void *arg)
{
    static const char *const types[] = {"SAN_TYPE_UNSPECIFIED", "EMAIL",      "DNS", "URI",
                                        "IP_ADDRESS",           "OTHER_NAME", NULL};
    int st = 0;
    if (!refuse(b, o, "oid") || !bs_fields(b, o, "san_type matcher") ||
        !bs_enum(b, o, "san_type", types, &st))
        return false;
    if (st != 2 && st != 3)
        return bs_fail_atf(b, "san_type", "%s is not supported by weft-proxy (DNS, URI are)",
                           types[st]);
    json_t *mj = bs_get(o, "matcher");
    if (!json_is_object(mj))
        return bs_fail_at(b, "matcher", "missing required field");
    size_t m = bs_push(b, "matcher");
    bool ok = dec_san_string(b, mj, st == 2 ? WF_TLS_SAN_DNS : WF_TLS_SAN_URI, arg);
    bs_pop(b, m);
    return ok;
}

static bool dec_validation(bs *b, json_t *o, void *arg)
{
    tls_in *t = arg;
    if (!refuse(b, o,
                "verify_certificate_spki verify_certificate_hash "
                "require_signed_certificate_timestamp crl allow_expired_certificate "
                "trust_chain_verification custom_validator_config only_verify_leaf_cert_crl "
                "max_verify_depth system_root_certs watched_directory "
                "ca_certificate_provider_instance") ||
        !bs_fields(b, o, "trusted_ca match_subject_alt_names match_typed_subject_alt_names") ||
        !dec_data_source(b, o, "trusted_ca", false, &t->ca) ||
        !each_obj(b, o, "match_subject_alt_names", dec_untyped_san, t) ||
        !each_obj(b, o, "match_typed_subject_alt_names", dec_typed_san, t))
        return false;
    return true;
}

/* ---------- SDS (Istio's shapes, security.md §2.3, §3.2, §3.3) ---------- */

/* grpc_services[i]: {envoy_grpc {cluster_name}} */
static bool dec_grpc_service(bs *b, json_t *o, void *arg)
{
    (void)arg;
    const char *cluster = NULL;
    if (!refuse(b, o, "google_grpc retry_policy") ||
        !bs_fields(b, o, "envoy_grpc timeout initial_metadata"))
        return false;
    json_t *eg = bs_get(o, "envoy_grpc");
    if (!json_is_object(eg))
        return bs_fail_at(b, "envoy_grpc", "missing required field");
    size_t m = bs_push(b, "envoy_grpc");
    bool ok =
        bs_fields(b, eg, "cluster_name authority") && bs_req_str(b, eg, "cluster_name", &cluster);
    bs_pop(b, m);
    return ok;
}

static bool dec_api_config_source(bs *b, json_t *o, void *arg)
{
    static const char *const types[] = {"DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE",
                                        "REST",
                                        "GRPC",
                                        "DELTA_GRPC",
                                        "AGGREGATED_GRPC",
                                        "AGGREGATED_DELTA_GRPC",
                                        NULL};
    int api = 0;
    bool first = false;
    if (!bs_fields(b, o,
                   "api_type transport_api_version grpc_services set_node_on_first_message_only") ||
        !bs_enum(b, o, "api_type", types, &api) ||
        !bs_bool(b, o, "set_node_on_first_message_only", &first) ||
        !each_obj(b, o, "grpc_services", dec_grpc_service, arg))
        return false;
    if (api != 2 && api != 3)
        return bs_fail_atf(b, "api_type", "%s is not supported by weft-proxy for SDS (GRPC is)",
                           types[api]);
    return true;
}

static bool dec_empty(bs *b, json_t *o, void *arg)
{
    (void)arg;
    return bs_fields(b, o, "");
}

/* sds_config (envoy.config.core.v3.ConfigSource): Istio's api_config_source to `sds-grpc`
 * (the agent's SDS server) or ads {}; the secrets come from the in-process provider. */
static bool dec_sds_config(bs *b, json_t *o, void *arg)
{
    uint64_t ms = 0;
    if (!refuse(b, o, "path path_config_source self api_config_source_deprecated authorities") ||
        !bs_fields(b, o, "api_config_source ads initial_fetch_timeout resource_api_version") ||
        !bs_dur(b, o, "initial_fetch_timeout", &ms, NULL) ||
        !bs_sub(b, o, "api_config_source", dec_api_config_source, arg) ||
        !bs_sub(b, o, "ads", dec_empty, arg))
        return false;
    return true;
}

/* An SdsSecretConfig {name, sds_config}: name must be want (the provider's secrets), or a
 * credentialName secret `kubernetes://...` over ads {} (weft-pilot serves those on the
 * aggregated stream, pilot/sds.h), then *named gets it. */
static bool dec_sds_secret(bs *b, json_t *o, const char *want, const char **named)
{
    const char *name = NULL;
    if (!bs_fields(b, o, "name sds_config") || !bs_req_str(b, o, "name", &name))
        return false;
    json_t *src = bs_get(o, "sds_config");
    if (strncmp(name, WP_SDS_K8S_PREFIX, sizeof WP_SDS_K8S_PREFIX - 1) == 0 &&
        json_is_object(src) && json_is_object(json_object_get(src, "ads")))
        *named = name;
    else if (strcmp(name, want) != 0)
        return bs_fail_atf(b, "name",
                           "SDS secret \"%s\" is not supported by weft-proxy here (\"%s\" is, "
                           "from the agent's certificate provider, and kubernetes://... over "
                           "ads)",
                           name, want);
    if (!bs_get(o, "sds_config"))
        return bs_fail_at(b, "sds_config", "missing required field");
    return bs_sub(b, o, "sds_config", dec_sds_config, NULL);
}

static bool dec_sds_cert(bs *b, json_t *o, void *arg)
{
    tls_in *t = arg;
    t->sds_cert = true;
    return dec_sds_secret(b, o, "default", &t->cert_name);
}

static bool dec_sds_ca(bs *b, json_t *o, void *arg)
{
    tls_in *t = arg;
    t->sds_ca = true;
    return dec_sds_secret(b, o, "ROOTCA", &t->ca_name);
}

/* combined_validation_context {default_validation_context, validation_context_sds_secret_
 * config} */
static bool dec_combined(bs *b, json_t *o, void *arg)
{
    if (!refuse(b, o,
                "validation_context_certificate_provider "
                "validation_context_certificate_provider_instance") ||
        !bs_fields(b, o, "default_validation_context validation_context_sds_secret_config") ||
        !bs_sub(b, o, "default_validation_context", dec_validation, arg))
        return false;
    if (!bs_get(o, "validation_context_sds_secret_config"))
        return bs_fail_at(b, "validation_context_sds_secret_config", "missing required field");
    return bs_sub(b, o, "validation_context_sds_secret_config", dec_sds_ca, arg);
}

static bool dec_common(bs *b, json_t *o, void *arg)
{
    tls_in *t = arg;
    if (!refuse(b, o,
                "tls_certificate_provider_instance "
                "tls_certificate_certificate_provider tls_certificate_certificate_provider_"
                "instance validation_context_certificate_provider "
                "validation_context_certificate_provider_instance custom_handshaker key_log "
                "custom_tls_certificate_selector") ||
        !bs_fields(b, o,
                   "tls_params tls_certificates validation_context alpn_protocols "
                   "tls_certificate_sds_secret_configs validation_context_sds_secret_config "
                   "combined_validation_context") ||
        !bs_sub(b, o, "tls_params", dec_tls_params, t) ||
        !bs_sub(b, o, "validation_context", dec_validation, t) ||
        !bs_sub(b, o, "validation_context_sds_secret_config", dec_sds_ca, t) ||
        !bs_sub(b, o, "combined_validation_context", dec_combined, t))
        return false;
    if ((bs_get(o, "validation_context") != NULL) +
            (bs_get(o, "validation_context_sds_secret_config") != NULL) +
            (bs_get(o, "combined_validation_context") != NULL) >
        1)
        return bs_fail(b, "only one of validation_context, validation_context_sds_secret_config, "
                          "combined_validation_context may be set");
    json_t *sds = bs_get(o, "tls_certificate_sds_secret_configs");
    if (sds && !json_is_array(sds))
        return bs_wrong_type(b, "tls_certificate_sds_secret_configs", "an array");
    if (json_array_size(sds) > 1 || (json_array_size(sds) && bs_get(o, "tls_certificates")))
        return bs_fail_at(b, "tls_certificate_sds_secret_configs",
                          "more than one certificate is not supported by weft-proxy");
    if (!each_obj(b, o, "tls_certificate_sds_secret_configs", dec_sds_cert, t))
        return false;
    json_t *certs = bs_get(o, "tls_certificates");
    if (certs && !json_is_array(certs))
        return bs_wrong_type(b, "tls_certificates", "an array");
    if (json_array_size(certs) > 1)
        return bs_fail_at(b, "tls_certificates",
                          "more than one certificate is not supported by weft-proxy");
    if (!each_obj(b, o, "tls_certificates", dec_certificate, t))
        return false;
    json_t *alpn = bs_get(o, "alpn_protocols");
    if (!alpn)
        return true;
    if (!json_is_array(alpn))
        return bs_wrong_type(b, "alpn_protocols", "an array of strings");
    t->alpn = calloc(json_array_size(alpn) + 1, sizeof(char *));
    if (!t->alpn)
        return bs_fail(b, "out of memory");
    for (size_t i = 0; i < json_array_size(alpn); i++) {
        json_t *e = json_array_get(alpn, i);
        if (!json_is_string(e))
            return bs_wrong_type(b, "alpn_protocols", "an array of strings");
        t->alpn[i] = json_string_value(e);
    }
    t->o.alpn = t->alpn;
    t->o.nalpn = json_array_size(alpn);
    return true;
}

/* A Downstream- or UpstreamTlsContext tc into a new arena wp_tls_config (*out). */
static bool dec_tls_context(bs *b, json_t *tc, bool downstream, const wp_tls_config **out)
{
    tls_in t = {0};
    wp_tls_config *cfg = bs_alloc(b, sizeof(*cfg));
    if (!cfg)
        return false;
    bool ok =
        downstream
            ? refuse(b, tc,
                     "session_ticket_keys session_ticket_keys_sds_secret_config "
                     "disable_stateless_session_resumption "
                     "disable_stateful_session_resumption session_timeout "
                     "ocsp_staple_policy full_scan_certs_on_sni_mismatch require_sni "
                     "prefer_client_ciphers") &&
                  bs_fields(b, tc, "@type common_tls_context require_client_certificate") &&
                  bs_bool(b, tc, "require_client_certificate", &cfg->require_client_certificate)
            : refuse(b, tc,
                     "allow_renegotiation max_session_keys enforce_rsa_key_usage "
                     "auto_host_sni auto_sni_san_validation") &&
                  bs_fields(b, tc, "@type common_tls_context sni") &&
                  bs_str(b, tc, "sni", &cfg->sni);
    ok = ok && bs_sub(b, tc, "common_tls_context", dec_common, &t);
    if (ok) {
        char err[256] = "";
        t.o.server = downstream;
        t.o.require_client_cert = cfg->require_client_certificate;
        t.o.cert_chain = t.chain.data;
        t.o.cert_chain_len = t.chain.len;
        t.o.private_key = t.key.data;
        t.o.private_key_len = t.key.len;
        t.o.trusted_ca = t.ca.data;
        t.o.trusted_ca_len = t.ca.len;
        t.o.sans = t.sans;
        if (t.sds_cert || t.sds_ca) {
            if (downstream && !t.sds_cert && !t.chain.data)
                ok = bs_fail_atf(b, "common_tls_context", "%s",
                                 "a server needs a certificate_chain and a private_key");
            else if (t.o.nsans && !t.sds_ca && !t.ca.data)
                ok = bs_fail_atf(b, "common_tls_context", "%s",
                                 "SAN-based verification of peer certificates without trusted CA "
                                 "is insecure and not allowed");
            wp_sds_ctx *s = ok ? wp_sds_ctx_new(&t.o, t.sds_cert, t.sds_ca) : NULL;
            if (ok && s && !wp_sds_ctx_set_names(s, t.cert_name, t.ca_name)) {
                wp_sds_ctx_free(s);
                s = NULL;
            }
            if (ok && (!s || !wp_config_add_sds_ctx(b->c, s)))
                ok = bs_fail(b, "out of memory");
            if (ok) {
                cfg->sds = s;
                *out = cfg;
            }
            tls_in_free(&t);
            return ok;
        }
        wf_tls_ctx *ctx = wf_tls_ctx_new(&t.o, err, sizeof(err));
        if (!ctx) {
            ok = bs_fail_atf(b, "common_tls_context", "%s", err);
        } else if (!wp_config_add_tls_ctx(b->c, ctx)) {
            ok = bs_fail(b, "out of memory");
        } else {
            cfg->ctx = ctx;
            *out = cfg;
        }
    }
    tls_in_free(&t);
    return ok;
}

bool bs_transport_socket(bs *b, json_t *o, bool downstream, const wp_tls_config **out)
{
    json_t *ts = bs_get(o, "transport_socket");
    *out = NULL;
    if (!ts)
        return true;
    size_t m = bs_push(b, "transport_socket");
    const char *name = NULL;
    bool ok = bs_fields(b, ts, "name typed_config") && bs_req_str(b, ts, "name", &name);
    json_t *tc = ok ? bs_get(ts, "typed_config") : NULL;
    if (ok && tc && !json_is_object(tc))
        ok = bs_wrong_type(b, "typed_config", "an object");
    if (ok && strcmp(name, RAW_NAME) == 0) {
        if (tc) {
            size_t mt = bs_push(b, "typed_config");
            ok = bs_fields(b, tc, "@type") && bs_opt_type(b, tc, RAW_TYPE);
            bs_pop(b, mt);
        }
    } else if (ok && strcmp(name, TLS_NAME) == 0) {
        if (!tc) {
            ok = bs_fail_at(b, "typed_config", "missing required field");
        } else {
            size_t mt = bs_push(b, "typed_config");
            ok = bs_type_is(b, tc, downstream ? DTC_TYPE : UTC_TYPE) &&
                 dec_tls_context(b, tc, downstream, out);
            bs_pop(b, mt);
        }
    } else if (ok) {
        ok = bs_fail_atf(b, "name",
                         "transport socket \"%s\" is not supported by weft-proxy (%s and %s are)",
                         name, RAW_NAME, TLS_NAME);
    }
    bs_pop(b, m);
    return ok;
}

/* Replaces every inline private key under v (a "private_key" DataSource's inline_string or
 * inline_bytes) with Envoy's redacted form; returns how many it replaced. */
static size_t redact(json_t *v)
{
    size_t n = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            n += redact(json_array_get(v, i));
        return n;
    }
    if (!json_is_object(v))
        return 0;
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e)
    {
        bool key = strcmp(k, "private_key") == 0 || strcmp(k, "privateKey") == 0;
        if (key && json_is_object(e)) {
            if (json_object_get(e, "inline_string") || json_object_get(e, "inlineString")) {
                json_object_set_new(
                    e, json_object_get(e, "inline_string") ? "inline_string" : "inlineString",
                    json_string(REDACTED));
                n++;
            }
            if (json_object_get(e, "inline_bytes") || json_object_get(e, "inlineBytes")) {
                json_object_set_new(
                    e, json_object_get(e, "inline_bytes") ? "inline_bytes" : "inlineBytes",
                    json_string(REDACTED_B64));
                n++;
            }
        } else {
            n += redact(e);
        }
    }
    return n;
}

json_t *wp_tls_redacted(json_t *resource)
{
    json_t *copy = json_deep_copy(resource);
    if (!copy)
        return NULL;
    if (redact(copy) == 0) {
        json_decref(copy);
        return json_incref(resource);
    }
    return copy;
}
