/*
 * tls.c - the TLS engine over the caller's buffers (tls.h).
 */
#include "tls/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/strbuf.h"

/* Envoy's default TLS 1.2 cipher list (context_config_impl.cc DEFAULT_CIPHER_SUITES, the
 * equal-preference groups written in order: OpenSSL has no "[a|b]" syntax). */
#define DEFAULT_CIPHERS                                                                            \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256:"     \
    "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"

#define TLS13_CIPHERS "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

struct wf_tls_ctx {
    atomic_uint refs; /* the creator's and each connection's */
    SSL_CTX *ssl;
    /* client: the last session a server gave (Envoy's UpstreamTlsContext max_session_keys,
     * default 1), offered by the next connection; under the lock (workers share contexts) */
    pthread_mutex_t session_mu;
    SSL_SESSION *session;
    bool server, has_ca, require_client_cert;
    wf_tls_san_matcher *sans;
    size_t nsans;
    char *verify_name;        /* client: the server's name or IP to check, NULL = none */
    unsigned char *alpn_wire; /* length-prefixed protocols */
    char *alpn_text;          /* the same, each protocol NUL-terminated at its wire offset */
    size_t alpn_len;
    char *local_uri_sans;
    BIO_METHOD *bio_meth; /* the connections' BIO (conn_bio_*) */
};

enum { VERIFY_NONE, VERIFY_X509, VERIFY_SAN };

/* Ciphertext kept by the engine (no sink): data[off, len) waiting. */
typedef struct out_buf {
    size_t off, len, cap;
    unsigned char data[];
} out_buf;

struct wf_tls_conn {
    wf_tls_ctx *ctx;
    SSL *ssl;                /* its BIO reads in[] and writes to the sink or out[] */
    const unsigned char *in; /* ciphertext given and not consumed yet: in[0, in_len) */
    size_t in_len;
    unsigned char *in_own; /* the engine's copy of fed bytes (in points into it), else NULL */
    wf_tls_sink sink;      /* NULL: ciphertext waits in out */
    void *sink_arg;
    out_buf *out; /* NULL when empty */
    wf_tls_stat outcome;
    unsigned char verify_kind;
    bool hs_done, failed, no_peer_cert;
    char *failure; /* NULL = none */
    char *detail;  /* the verification error (Envoy's certificate validation error) */
    /* the facts that need strings of their own, made once the handshake is done (NULL =
     * none; wf_tls_conn_info reads the others from OpenSSL and the context on demand) */
    const char *alpn; /* the context's NUL-terminated name, or alpn_own */
    char *alpn_own, *peer_uri_sans, *peer_uri_first, *peer_subject, *sni;
};

/* ---------- BoringSSL's names for OpenSSL's reasons ---------- */

#define BSSL_CODE(reason) (0x10000000ul + (unsigned long)(reason))

/* SSL reasons that differ between the libraries: OpenSSL's reason, BoringSSL's number and
 * name (BoringSSL include/openssl/ssl.h SSL_R_*). */
static const struct {
    int ossl;
    int bssl;
    const char *name;
} ssl_reasons[] = {
    {SSL_R_CERTIFICATE_VERIFY_FAILED, 125, "CERTIFICATE_VERIFY_FAILED"},
    {SSL_R_WRONG_VERSION_NUMBER, 247, "WRONG_VERSION_NUMBER"},
    {SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, 192, "PEER_DID_NOT_RETURN_A_CERTIFICATE"},
    {SSL_R_NO_SHARED_CIPHER, 184, "NO_SHARED_CIPHER"},
    {SSL_R_UNSUPPORTED_PROTOCOL, 240, "UNSUPPORTED_PROTOCOL"},
    {SSL_R_NO_PROTOCOLS_AVAILABLE, 280, "NO_SUPPORTED_VERSIONS_ENABLED"},
    {SSL_R_HTTP_REQUEST, 156, "HTTP_REQUEST"},
    {SSL_R_HTTPS_PROXY_REQUEST, 155, "HTTPS_PROXY_REQUEST"},
    {SSL_R_NO_APPLICATION_PROTOCOL, 307, "NO_APPLICATION_PROTOCOL"},
    {SSL_R_WRONG_SSL_VERSION, 246, "WRONG_SSL_VERSION"},
    {SSL_R_UNEXPECTED_MESSAGE, 223, "UNEXPECTED_MESSAGE"},
    {SSL_R_UNEXPECTED_RECORD, 225, "UNEXPECTED_RECORD"},
    {SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC, 139, "DECRYPTION_FAILED_OR_BAD_RECORD_MAC"},
    {SSL_R_RECORD_LENGTH_MISMATCH, 199, "RECORD_LENGTH_MISMATCH"},
    {SSL_R_DATA_LENGTH_TOO_LONG, 136, "DATA_LENGTH_TOO_LONG"},
    {SSL_R_BAD_SIGNATURE, 114, "BAD_SIGNATURE"},
    {SSL_R_NO_SHARED_GROUPS, 266, "NO_SHARED_GROUP"},
    {SSL_R_UNKNOWN_PROTOCOL, 233, "UNKNOWN_PROTOCOL"},
};

/* TLS alerts (reason 1000 + alert in both libraries), BoringSSL's names. */
static const struct {
    int reason;
    const char *name;
} alert_reasons[] = {
    {1000, "SSLV3_ALERT_CLOSE_NOTIFY"},
    {1010, "SSLV3_ALERT_UNEXPECTED_MESSAGE"},
    {1020, "SSLV3_ALERT_BAD_RECORD_MAC"},
    {1021, "TLSV1_ALERT_DECRYPTION_FAILED"},
    {1022, "TLSV1_ALERT_RECORD_OVERFLOW"},
    {1030, "SSLV3_ALERT_DECOMPRESSION_FAILURE"},
    {1040, "SSLV3_ALERT_HANDSHAKE_FAILURE"},
    {1041, "SSLV3_ALERT_NO_CERTIFICATE"},
    {1042, "SSLV3_ALERT_BAD_CERTIFICATE"},
    {1043, "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE"},
    {1044, "SSLV3_ALERT_CERTIFICATE_REVOKED"},
    {1045, "SSLV3_ALERT_CERTIFICATE_EXPIRED"},
    {1046, "SSLV3_ALERT_CERTIFICATE_UNKNOWN"},
    {1047, "SSLV3_ALERT_ILLEGAL_PARAMETER"},
    {1048, "TLSV1_ALERT_UNKNOWN_CA"},
    {1049, "TLSV1_ALERT_ACCESS_DENIED"},
    {1050, "TLSV1_ALERT_DECODE_ERROR"},
    {1051, "TLSV1_ALERT_DECRYPT_ERROR"},
    {1060, "TLSV1_ALERT_EXPORT_RESTRICTION"},
    {1070, "TLSV1_ALERT_PROTOCOL_VERSION"},
    {1071, "TLSV1_ALERT_INSUFFICIENT_SECURITY"},
    {1080, "TLSV1_ALERT_INTERNAL_ERROR"},
    {1086, "TLSV1_ALERT_INAPPROPRIATE_FALLBACK"},
    {1090, "TLSV1_ALERT_USER_CANCELLED"},
    {1100, "TLSV1_ALERT_NO_RENEGOTIATION"},
    {1110, "TLSV1_ALERT_UNSUPPORTED_EXTENSION"},
    {1111, "TLSV1_ALERT_CERTIFICATE_UNOBTAINABLE"},
    {1112, "TLSV1_ALERT_UNRECOGNIZED_NAME"},
    {1113, "TLSV1_ALERT_BAD_CERTIFICATE_STATUS_RESPONSE"},
    {1114, "TLSV1_ALERT_BAD_CERTIFICATE_HASH_VALUE"},
    {1115, "TLSV1_ALERT_UNKNOWN_PSK_IDENTITY"},
    {1116, "TLSV1_ALERT_CERTIFICATE_REQUIRED"},
    {1120, "TLSV1_ALERT_NO_APPLICATION_PROTOCOL"},
};

/* OpenSSL's reason text upper-cased with '_' for spaces ("record layer failure" ->
 * "RECORD_LAYER_FAILURE"). */
static void append_upper(wf_strbuf *b, const char *s)
{
    for (; s && *s; s++) {
        char ch = *s == ' ' ? '_' : (*s >= 'a' && *s <= 'z') ? (char)(*s - 'a' + 'A') : *s;
        wf_strbuf_append(b, &ch, 1);
    }
}

/* One queued error as "|code:lib:func:reason". Returns true for a reason Envoy counts in
 * a stat of its own (verify failures, a missing certificate, system errors). */
static bool append_error(wf_tls_conn *c, wf_strbuf *b, unsigned long e)
{
    int lib = ERR_GET_LIB(e), r = ERR_GET_REASON(e);
    if (lib == ERR_LIB_SSL) {
        for (size_t i = 0; i < sizeof(ssl_reasons) / sizeof(ssl_reasons[0]); i++) {
            if (ssl_reasons[i].ossl != r)
                continue;
            wf_strbuf_printf(b, "|%lu:SSL routines:OPENSSL_internal:%s",
                             BSSL_CODE(ssl_reasons[i].bssl), ssl_reasons[i].name);
            if (r == SSL_R_CERTIFICATE_VERIFY_FAILED) {
                if (c->detail)
                    wf_strbuf_printf(b, ":%s", c->detail);
                c->outcome = c->verify_kind == VERIFY_SAN ? WF_TLS_STAT_FAIL_VERIFY_SAN
                                                          : WF_TLS_STAT_FAIL_VERIFY_ERROR;
                return true;
            }
            if (r == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
                wf_strbuf_puts(b, ":peer did not provide required client certificate");
                c->outcome = WF_TLS_STAT_FAIL_VERIFY_NO_CERT;
                return true;
            }
            return false;
        }
        for (size_t i = 0; i < sizeof(alert_reasons) / sizeof(alert_reasons[0]); i++) {
            if (alert_reasons[i].reason == r) {
                wf_strbuf_printf(b, "|%lu:SSL routines:OPENSSL_internal:%s", BSSL_CODE(r),
                                 alert_reasons[i].name);
                return false;
            }
        }
        wf_strbuf_printf(b, "|%lu:SSL routines:OPENSSL_internal:", e);
        append_upper(b, ERR_reason_error_string(e));
        return false;
    }
    if (lib == ERR_LIB_SYS) {
        wf_strbuf_printf(b, "|%lu:system library:OPENSSL_internal:%s", e, strerror(r));
        return true;
    }
    const char *ls = ERR_lib_error_string(e);
    wf_strbuf_printf(b, "|%lu:%s:OPENSSL_internal:", e, ls ? ls : "");
    append_upper(b, ERR_reason_error_string(e));
    return false;
}

/* Envoy's SslSocket::drainErrorQueue: the failure reason (the first failure's) and the stat
 * to count. */
static void drain_errors(wf_tls_conn *c)
{
    wf_strbuf b = WF_STRBUF_INIT;
    bool saw = false, counted = false;
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        if (!saw)
            wf_strbuf_puts(&b, "TLS_error:");
        saw = true;
        if (append_error(c, &b, e))
            counted = true;
    }
    if (!saw) {
        wf_strbuf_free(&b);
        return;
    }
    wf_strbuf_puts(&b, ":TLS_error_end");
    if (!counted)
        c->outcome = WF_TLS_STAT_CONNECTION_ERROR;
    if (!c->failure && !wf_strbuf_failed(&b)) {
        c->failure = b.data;
        b.data = NULL;
    }
    wf_strbuf_free(&b);
}

/* ---------- SANs ---------- */

/* Every SAN of cert of the kinds wanted (NULL type: all) into out, each through fn. */
typedef bool (*san_fn)(void *arg, wf_tls_san_type type, const char *v, size_t len);

static void each_san(X509 *cert, san_fn fn, void *arg)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    if (!names)
        return;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        char ip[64];
        const char *v = NULL;
        size_t len = 0;
        wf_tls_san_type t = WF_TLS_SAN_ANY;
        if (g->type == GEN_URI || g->type == GEN_DNS || g->type == GEN_EMAIL) {
            const ASN1_IA5STRING *s = g->d.ia5;
            v = (const char *)ASN1_STRING_get0_data(s);
            len = (size_t)ASN1_STRING_length(s);
            t = g->type == GEN_URI   ? WF_TLS_SAN_URI
                : g->type == GEN_DNS ? WF_TLS_SAN_DNS
                                     : WF_TLS_SAN_ANY;
        } else if (g->type == GEN_IPADD) {
            const unsigned char *p = ASN1_STRING_get0_data(g->d.ip);
            int n = ASN1_STRING_length(g->d.ip);
            if (n == 4)
                snprintf(ip, sizeof(ip), "%u.%u.%u.%u", p[0], p[1], p[2], p[3]);
            else
                snprintf(ip, sizeof(ip), "<ipv6>");
            v = ip;
            len = strlen(ip);
        } else {
            continue;
        }
        if (!fn(arg, t, v, len))
            break;
    }
    GENERAL_NAMES_free(names);
}

typedef struct {
    const wf_tls_san_matcher *m;
    bool hit;
} match_arg;

static bool match_one(void *arg, wf_tls_san_type type, const char *v, size_t len)
{
    match_arg *a = arg;
    if (a->m->type != WF_TLS_SAN_ANY && a->m->type != type)
        return true;
    size_t ml = strlen(a->m->value);
    bool hit = a->m->kind == WF_TLS_MATCH_EXACT ? (len == ml && memcmp(v, a->m->value, ml) == 0)
                                                : (len >= ml && memcmp(v, a->m->value, ml) == 0);
    a->hit = a->hit || hit;
    return !a->hit;
}

/* Envoy's DefaultCertValidator::matchSubjectAltName: any matcher matching any SAN. */
static bool sans_match(const wf_tls_ctx *ctx, X509 *cert)
{
    for (size_t i = 0; i < ctx->nsans; i++) {
        match_arg a = {&ctx->sans[i], false};
        each_san(cert, match_one, &a);
        if (a.hit)
            return true;
    }
    return false;
}

typedef struct {
    wf_strbuf *b;
    wf_tls_san_type only; /* ANY = every kind */
    const char *sep;
    size_t n;
} join_arg;

static bool join_one(void *arg, wf_tls_san_type type, const char *v, size_t len)
{
    join_arg *a = arg;
    if (a->only != WF_TLS_SAN_ANY && type != a->only)
        return true;
    if (a->n++)
        wf_strbuf_puts(a->b, a->sep);
    wf_strbuf_append(a->b, v, len);
    return true;
}

/* The SANs of cert (of one type, or all) joined by sep; malloc'd ("" when none). */
static char *join_sans(X509 *cert, wf_tls_san_type only, const char *sep)
{
    wf_strbuf b = WF_STRBUF_INIT;
    join_arg a = {&b, only, sep, 0};
    if (cert)
        each_san(cert, join_one, &a);
    if (wf_strbuf_failed(&b) || !b.data) {
        wf_strbuf_free(&b);
        return strdup("");
    }
    return b.data;
}

/* The verify error of a SAN mismatch: a code outside OpenSSL's X509_V_ERR_* table, which
 * ssl_verify_alarm_type turns into the certificate_unknown alert, the one Envoy's
 * DefaultCertValidator sends (tls_alert = SSL_AD_CERTIFICATE_UNKNOWN); a chain error keeps
 * OpenSSL's alert for its X509 error, as Envoy's SSL_alert_from_verify_result. */
#define SAN_VERIFY_ERROR 1000

/* The verify callback: X509 chain errors and, on the leaf, the SAN matchers (Envoy's
 * DefaultCertValidator::doVerifyCertChain order: the chain, then the SANs). */
static int verify_cb(int ok, X509_STORE_CTX *xs)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
    wf_tls_conn *c = ssl ? SSL_get_app_data(ssl) : NULL;
    if (!c || !c->ctx->has_ca)
        return 1; /* no validation context: any certificate */
    if (c->verify_kind != VERIFY_NONE)
        return 0;
    int depth = X509_STORE_CTX_get_error_depth(xs);
    if (!ok) {
        char d[320];
        snprintf(d, sizeof(d),
                 "verify cert failed: X509_verify_cert: certificate verification error at depth "
                 "%d: %s",
                 depth, X509_verify_cert_error_string(X509_STORE_CTX_get_error(xs)));
        c->detail = strdup(d);
        c->verify_kind = VERIFY_X509;
        return 0;
    }
    if (depth != 0 || c->ctx->nsans == 0)
        return 1;
    X509 *cert = X509_STORE_CTX_get_current_cert(xs);
    if (sans_match(c->ctx, cert))
        return 1;
    char *all = join_sans(cert, WF_TLS_SAN_ANY, ", ");
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_printf(&b, "verify cert failed: SAN matcher, certificate SANs are [%s]",
                     all ? all : "");
    free(all);
    c->detail = wf_strbuf_failed(&b) ? NULL : b.data;
    c->verify_kind = VERIFY_SAN;
    X509_STORE_CTX_set_error(xs, SAN_VERIFY_ERROR);
    return 0;
}

/* ---------- the connection's BIO ----------
 *
 * One BIO is both the read and the write BIO of a connection's SSL (as HAProxy's): it reads
 * the ciphertext the caller gave (lent or fed) and hands every record written to the sink, or
 * keeps it in out[] without one. Nothing is buffered twice and nothing stays allocated once
 * it is consumed: the memory BIOs this replaces kept their buffers, and a copy was made on
 * the way out. Reading an empty window is "retry" (SSL_ERROR_WANT_READ); writing never is. */

/* A fixed type from the application range: BIO_get_new_index() would take a new number for
 * every context (each SDS rotation makes one) until the range runs out. */
#define CONN_BIO_TYPE ((BIO_TYPE_START + 23) | BIO_TYPE_SOURCE_SINK)

/* Appends to out[] (no sink). 0, or -1 on out of memory. */
static int out_append(wf_tls_conn *c, const void *data, size_t len)
{
    out_buf *o = c->out;
    if (o && o->off && o->len + len > o->cap) { /* room at the front first */
        memmove(o->data, o->data + o->off, o->len - o->off);
        o->len -= o->off;
        o->off = 0;
    }
    size_t have = o ? o->len : 0, cap = o ? o->cap : 0;
    if (have + len > cap) {
        cap = cap * 2 > have + len ? cap * 2 : have + len;
        out_buf *nb = realloc(o, sizeof(*nb) + cap);
        if (!nb)
            return -1;
        if (!o)
            nb->off = nb->len = 0;
        nb->cap = cap;
        c->out = o = nb;
    }
    memcpy(o->data + o->len, data, len);
    o->len += len;
    return 0;
}

static int conn_bio_write(BIO *b, const char *data, size_t len, size_t *written)
{
    wf_tls_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    *written = 0;
    if (!c || (c->sink ? c->sink(c->sink_arg, data, len) : out_append(c, data, len)) != 0)
        return 0; /* an error, not a retry: the SSL call fails */
    *written = len;
    return 1;
}

static int conn_bio_read(BIO *b, char *buf, size_t cap, size_t *got)
{
    wf_tls_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    *got = 0;
    if (!c || c->in_len == 0) {
        BIO_set_retry_read(b);
        return 0;
    }
    size_t n = cap < c->in_len ? cap : c->in_len;
    memcpy(buf, c->in, n);
    c->in += n;
    c->in_len -= n;
    if (c->in_len == 0) {
        free(c->in_own); /* a fed copy goes once consumed */
        c->in_own = NULL;
        c->in = NULL;
    }
    *got = n;
    return 1;
}

static long conn_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    wf_tls_conn *c = BIO_get_data(b);
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH: /* the sink has it already */
        return 1;
    case BIO_CTRL_PENDING:
        return c ? (long)c->in_len : 0;
    case BIO_CTRL_WPENDING:
        return c && c->out ? (long)(c->out->len - c->out->off) : 0;
    default: /* no kTLS, no end of file (an empty window is a retry), ... */
        return 0;
    }
}

static int conn_bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static int conn_bio_destroy(BIO *b)
{
    BIO_set_data(b, NULL);
    return 1;
}

static BIO_METHOD *conn_bio_method(void)
{
    BIO_METHOD *m = BIO_meth_new(CONN_BIO_TYPE, "weft connection");
    if (m && BIO_meth_set_write_ex(m, conn_bio_write) == 1 &&
        BIO_meth_set_read_ex(m, conn_bio_read) == 1 && BIO_meth_set_ctrl(m, conn_bio_ctrl) == 1 &&
        BIO_meth_set_create(m, conn_bio_create) == 1 &&
        BIO_meth_set_destroy(m, conn_bio_destroy) == 1)
        return m;
    BIO_meth_free(m);
    return NULL;
}

/* ---------- the context ---------- */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    wf_tls_ctx *ctx = arg;
    (void)ssl;
    unsigned char *o = NULL;
    if (SSL_select_next_proto(&o, outlen, ctx->alpn_wire, (unsigned)ctx->alpn_len, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK; /* Envoy: no common protocol is no ALPN, not a failure */
    *out = o;
    return SSL_TLSEXT_ERR_OK;
}

static bool fail(char *err, size_t cap, const char *fmt, const char *arg)
{
    snprintf(err, cap, fmt, arg ? arg : "");
    ERR_clear_error();
    return false;
}

static bool load_chain(wf_tls_ctx *c, const wf_tls_ctx_opts *o, char *err, size_t cap)
{
    BIO *bio = BIO_new_mem_buf(o->cert_chain, (int)o->cert_chain_len);
    if (!bio)
        return fail(err, cap, "out of memory%s", NULL);
    X509 *leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    bool ok = leaf && SSL_CTX_use_certificate(c->ssl, leaf) == 1;
    if (ok) {
        c->local_uri_sans = join_sans(leaf, WF_TLS_SAN_URI, ",");
        X509 *x;
        while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
            if (SSL_CTX_add0_chain_cert(c->ssl, x) != 1) {
                X509_free(x);
                ok = false;
                break;
            }
        }
    }
    X509_free(leaf);
    BIO_free(bio);
    ERR_clear_error(); /* the end of the PEM text */
    if (!ok)
        return fail(err, cap, "certificate_chain: no certificate found in PEM%s", NULL);
    bio = BIO_new_mem_buf(o->private_key, (int)o->private_key_len);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!key)
        return fail(err, cap, "private_key: no private key found in PEM%s", NULL);
    ok = SSL_CTX_use_PrivateKey(c->ssl, key) == 1 && SSL_CTX_check_private_key(c->ssl) == 1;
    EVP_PKEY_free(key);
    if (!ok)
        return fail(err, cap, "private_key does not match the certificate%s", NULL);
    return true;
}

static bool load_ca(wf_tls_ctx *c, const wf_tls_ctx_opts *o, char *err, size_t cap)
{
    BIO *bio = BIO_new_mem_buf(o->trusted_ca, (int)o->trusted_ca_len);
    if (!bio)
        return fail(err, cap, "out of memory%s", NULL);
    X509_STORE *store = SSL_CTX_get_cert_store(c->ssl);
    X509 *x;
    int n = 0;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(store, x) == 1)
            n++;
        X509_free(x);
    }
    BIO_free(bio);
    ERR_clear_error();
    if (n == 0)
        return fail(err, cap, "trusted_ca: no certificate found in PEM%s", NULL);
    c->has_ca = true;
    return true;
}

static bool set_alpn(wf_tls_ctx *c, const wf_tls_ctx_opts *o, char *err, size_t cap)
{
    size_t len = 0;
    for (size_t i = 0; i < o->nalpn; i++) {
        size_t l = strlen(o->alpn[i]);
        if (l == 0 || l > 255)
            return fail(err, cap, "alpn_protocols: invalid protocol '%s'", o->alpn[i]);
        len += 1 + l;
    }
    if (!len)
        return true;
    if (!(c->alpn_wire = malloc(len)))
        return fail(err, cap, "out of memory%s", NULL);
    unsigned char *p = c->alpn_wire;
    for (size_t i = 0; i < o->nalpn; i++) {
        size_t l = strlen(o->alpn[i]);
        *p++ = (unsigned char)l;
        memcpy(p, o->alpn[i], l);
        p += l;
    }
    c->alpn_len = len;
    if (!(c->alpn_text = malloc(len)))
        return fail(err, cap, "out of memory%s", NULL);
    for (size_t at = 0; at < len; at += 1u + c->alpn_wire[at]) {
        memcpy(c->alpn_text + at, c->alpn_wire + at + 1, c->alpn_wire[at]);
        c->alpn_text[at + c->alpn_wire[at]] = '\0';
    }
    if (c->server)
        SSL_CTX_set_alpn_select_cb(c->ssl, alpn_select, c);
    else if (SSL_CTX_set_alpn_protos(c->ssl, c->alpn_wire, (unsigned)len) != 0)
        return fail(err, cap, "alpn_protocols: rejected%s", NULL);
    return true;
}

static bool set_sans(wf_tls_ctx *c, const wf_tls_ctx_opts *o, char *err, size_t cap)
{
    if (!o->nsans)
        return true;
    if (!(c->sans = calloc(o->nsans, sizeof(*c->sans))))
        return fail(err, cap, "out of memory%s", NULL);
    c->nsans = o->nsans;
    for (size_t i = 0; i < o->nsans; i++) {
        c->sans[i] = o->sans[i];
        if (!(c->sans[i].value = strdup(o->sans[i].value ? o->sans[i].value : "")))
            return fail(err, cap, "out of memory%s", NULL);
    }
    return true;
}

bool wf_tls_versions_ok(const wf_tls_ctx_opts *o)
{
    int minv = o->min_version ? o->min_version : WF_TLS_V1_2;
    int maxv = o->max_version ? o->max_version : WF_TLS_V1_3;
    return minv <= maxv;
}

static bool set_params(wf_tls_ctx *c, const wf_tls_ctx_opts *o, char *err, size_t cap)
{
    int minv = o->min_version ? o->min_version : WF_TLS_V1_2;
    int maxv = o->max_version ? o->max_version : WF_TLS_V1_3;
    if (!wf_tls_versions_ok(o))
        return fail(err, cap,
                    "tls_params: tls_minimum_protocol_version is above "
                    "tls_maximum_protocol_version%s",
                    NULL);
    if (SSL_CTX_set_min_proto_version(c->ssl, minv) != 1 ||
        SSL_CTX_set_max_proto_version(c->ssl, maxv) != 1)
        return fail(err, cap, "tls_params: unsupported protocol version%s", NULL);
    const char *ciphers = o->cipher_suites ? o->cipher_suites : DEFAULT_CIPHERS;
    if (SSL_CTX_set_cipher_list(c->ssl, ciphers) != 1)
        return fail(err, cap, "Failed to initialize cipher suites %s", ciphers);
    /* TLS 1.3 suites in BoringSSL's order (not configurable in Envoy either) */
    if (SSL_CTX_set_ciphersuites(c->ssl, TLS13_CIPHERS) != 1)
        return fail(err, cap, "TLS 1.3 cipher suites rejected%s", NULL);
    /* Envoy's default prefer_client_ciphers: false, the server's order decides */
    if (c->server)
        SSL_CTX_set_options(c->ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
    return true;
}

/* A server's session id context, as Envoy's ServerContextImpl::generateHashForSessionContextId
 * makes one from its configuration: a hash of the certificate chain and the trusted CA (and
 * whether a client certificate is required), so a session is only resumed by a context
 * configured alike. OpenSSL refuses (an internal_error alert) to resume a session on a server
 * that verifies clients and has none. 1, or 0 on failure. */
static int set_session_context(wf_tls_ctx *c, const wf_tls_ctx_opts *o)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    unsigned char req = o->require_client_cert ? 1 : 0;
    int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1 &&
             (!o->cert_chain || EVP_DigestUpdate(h, o->cert_chain, o->cert_chain_len) == 1) &&
             (!o->trusted_ca || EVP_DigestUpdate(h, o->trusted_ca, o->trusted_ca_len) == 1) &&
             EVP_DigestUpdate(h, &req, 1) == 1 && EVP_DigestFinal_ex(h, md, &n) == 1;
    EVP_MD_CTX_free(h);
    if (n > SSL_MAX_SID_CTX_LENGTH)
        n = SSL_MAX_SID_CTX_LENGTH;
    return ok && SSL_CTX_set_session_id_context(c->ssl, md, n) == 1;
}

/* A server gave the client a session (a TLS 1.3 ticket, or a TLS 1.2 session): it replaces the
 * one kept, as Envoy's ClientContextImpl keeps max_session_keys (1) sessions. Returns 1: the
 * reference is ours. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    wf_tls_conn *conn = SSL_get_app_data(ssl);
    if (!conn)
        return 0;
    wf_tls_ctx *c = conn->ctx;
    pthread_mutex_lock(&c->session_mu);
    SSL_SESSION *old = c->session;
    c->session = sess;
    pthread_mutex_unlock(&c->session_mu);
    SSL_SESSION_free(old);
    return 1;
}

/* The server's certificate must carry name: an IP address (IP SAN) or a DNS name. */
static bool check_name(SSL *ssl, const char *name)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1;
    return SSL_set1_host(ssl, name) == 1;
}

/* A new client connection offers the kept session, if any (resumption: no certificate
 * exchange, no signature). */
static void offer_session(wf_tls_ctx *c, SSL *ssl)
{
    pthread_mutex_lock(&c->session_mu);
    if (c->session && SSL_SESSION_is_resumable(c->session))
        SSL_set_session(ssl, c->session); /* takes its own reference */
    pthread_mutex_unlock(&c->session_mu);
}

wf_tls_ctx *wf_tls_ctx_new(const wf_tls_ctx_opts *o, char *err, size_t errcap)
{
    ERR_clear_error();
    wf_tls_ctx *c = calloc(1, sizeof(*c));
    if (!c) {
        fail(err, errcap, "out of memory%s", NULL);
        return NULL;
    }
    atomic_init(&c->refs, 1);
    if (pthread_mutex_init(&c->session_mu, NULL) != 0) {
        free(c);
        fail(err, errcap, "out of memory%s", NULL);
        return NULL;
    }
    c->server = o->server;
    c->require_client_cert = o->require_client_cert;
    if (o->verify_name && !(c->verify_name = strdup(o->verify_name))) {
        pthread_mutex_destroy(&c->session_mu);
        free(c);
        fail(err, errcap, "out of memory%s", NULL);
        return NULL;
    }
    c->ssl = SSL_CTX_new(o->server ? TLS_server_method() : TLS_client_method());
    c->bio_meth = conn_bio_method();
    bool ok = c->ssl != NULL && c->bio_meth != NULL;
    if (!ok)
        fail(err, errcap, "out of memory%s", NULL);
    if (ok && o->server && !o->cert_chain)
        ok = fail(err, errcap, "a server needs a certificate_chain and a private_key%s", NULL);
    if (ok && o->cert_chain && !o->private_key)
        ok = fail(err, errcap, "private_key: missing (certificate_chain given)%s", NULL);
    if (ok && o->nsans && !o->trusted_ca)
        ok = fail(err, errcap,
                  "SAN-based verification of peer certificates without trusted CA is insecure "
                  "and not allowed%s",
                  NULL);
    if (ok && o->cert_chain)
        ok = load_chain(c, o, err, errcap);
    if (ok && o->trusted_ca)
        ok = load_ca(c, o, err, errcap);
    ok = ok && set_params(c, o, err, errcap) && set_alpn(c, o, err, errcap) &&
         set_sans(c, o, err, errcap);
    if (!ok) {
        wf_tls_ctx_free(c);
        return NULL;
    }
    int mode = SSL_VERIFY_NONE;
    if (!o->server || c->has_ca || o->require_client_cert)
        mode = SSL_VERIFY_PEER;
    if (o->server && o->require_client_cert)
        mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(c->ssl, mode, verify_cb);
    /* no renegotiation either way, as BoringSSL under Envoy (allow_renegotiation: false):
     * OpenSSL 3 servers already refuse a client's; this also refuses a server's request on
     * upstream connections */
    SSL_CTX_set_options(c->ssl, SSL_OP_NO_RENEGOTIATION);
    /* the chain sent is the configured one, as BoringSSL sends it (OpenSSL would add CA
     * certificates of the trust store) */
    SSL_CTX_set_mode(c->ssl, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN);
    if (o->server && !set_session_context(c, o)) {
        fail(err, errcap, "out of memory%s", NULL);
        wf_tls_ctx_free(c);
        return NULL;
    }
    if (!o->server) { /* keep the last session for the next connection (not OpenSSL's cache) */
        SSL_CTX_set_session_cache_mode(c->ssl,
                                       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(c->ssl, on_new_session);
    }
    if (!c->local_uri_sans)
        c->local_uri_sans = strdup("");
    if (!c->local_uri_sans) {
        fail(err, errcap, "out of memory%s", NULL);
        wf_tls_ctx_free(c);
        return NULL;
    }
    return c;
}

wf_tls_ctx *wf_tls_ctx_ref(wf_tls_ctx *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void wf_tls_ctx_free(wf_tls_ctx *c)
{
    if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    SSL_SESSION_free(c->session);
    pthread_mutex_destroy(&c->session_mu);
    SSL_CTX_free(c->ssl);
    for (size_t i = 0; i < c->nsans; i++)
        free((char *)c->sans[i].value);
    free(c->sans);
    free(c->alpn_wire);
    free(c->alpn_text);
    free(c->local_uri_sans);
    BIO_meth_free(c->bio_meth);
    free(c->verify_name);
    free(c);
}

bool wf_tls_ctx_is_server(const wf_tls_ctx *c)
{
    return c->server;
}

const char *wf_tls_ctx_local_uri_sans(const wf_tls_ctx *c)
{
    return c->local_uri_sans;
}

/* ---------- connections ---------- */

wf_tls_conn *wf_tls_conn_new(wf_tls_ctx *ctx, const char *sni)
{
    wf_tls_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ctx = ctx;
    c->ssl = SSL_new(ctx->ssl);
    BIO *bio = BIO_new(ctx->bio_meth);
    if (!c->ssl || !bio) {
        BIO_free(bio);
        SSL_free(c->ssl);
        free(c);
        ERR_clear_error();
        return NULL;
    }
    wf_tls_ctx_ref(ctx); /* the connection holds its context (rotation frees the old one) */
    BIO_set_data(bio, c);
    SSL_set_bio(c->ssl, bio, bio); /* one BIO both ways: one reference, freed with the SSL */
    SSL_set_app_data(c->ssl, c);
    if (ctx->server) {
        SSL_set_accept_state(c->ssl);
    } else {
        SSL_set_connect_state(c->ssl);
        offer_session(ctx, c->ssl);
        if (ctx->verify_name && !check_name(c->ssl, ctx->verify_name)) {
            wf_tls_conn_free(c);
            ERR_clear_error();
            return NULL;
        }
        if (sni && *sni) {
            c->sni = strdup(sni);
            if (!c->sni || SSL_set_tlsext_host_name(c->ssl, sni) != 1) {
                wf_tls_conn_free(c);
                ERR_clear_error();
                return NULL;
            }
        }
    }
    return c;
}

void wf_tls_conn_free(wf_tls_conn *c)
{
    if (!c)
        return;
    SSL_free(c->ssl);        /* frees the BIO */
    wf_tls_ctx_free(c->ctx); /* the connection's reference */
    free(c->in_own);
    free(c->out);
    free(c->failure);
    free(c->detail);
    free(c->peer_uri_sans);
    free(c->peer_uri_first);
    free(c->peer_subject);
    free(c->sni);
    free(c->alpn_own);
    free(c);
}

void wf_tls_conn_lend(wf_tls_conn *c, const void *data, size_t len)
{
    free(c->in_own);
    c->in_own = NULL;
    c->in = len ? data : NULL;
    c->in_len = len;
}

int wf_tls_conn_feed(wf_tls_conn *c, const void *data, size_t len)
{
    if (len == 0)
        return WF_TLS_OK;
    unsigned char *nb = malloc(c->in_len + len);
    if (!nb)
        return WF_TLS_NOMEM;
    if (c->in_len)
        memcpy(nb, c->in, c->in_len);
    memcpy(nb + c->in_len, data, len);
    free(c->in_own);
    c->in_own = nb;
    c->in = nb;
    c->in_len += len;
    return WF_TLS_OK;
}

size_t wf_tls_conn_input_left(const wf_tls_conn *c)
{
    return c->in_len;
}

void wf_tls_conn_set_sink(wf_tls_conn *c, wf_tls_sink sink, void *arg)
{
    c->sink = sink;
    c->sink_arg = arg;
}

/* BoringSSL's name of a key exchange group (what Envoy's ssl.curves.<name> shows), "" when
 * unknown. */
static const char *curve_name(int nid)
{
    switch (nid) {
    case NID_X25519:
        return "X25519";
    case NID_X448:
        return "X448";
    case NID_X9_62_prime256v1:
        return "P-256";
    case NID_secp384r1:
        return "P-384";
    case NID_secp521r1:
        return "P-521";
    default:
        return "";
    }
}

/* The negotiated ALPN protocol: the context's own NUL-terminated copy of it (a server picks
 * one of its list, a client's OpenSSL refuses a protocol it did not offer), else a copy. */
static void set_conn_alpn(wf_tls_conn *c)
{
    const unsigned char *a = NULL;
    unsigned alen = 0;
    SSL_get0_alpn_selected(c->ssl, &a, &alen);
    if (!a || alen == 0)
        return;
    const wf_tls_ctx *x = c->ctx;
    for (size_t o = 0; o < x->alpn_len; o += 1u + x->alpn_wire[o]) {
        if (x->alpn_wire[o] == alen && memcmp(x->alpn_wire + o + 1, a, alen) == 0) {
            c->alpn = x->alpn_text + o;
            return;
        }
    }
    if ((c->alpn_own = malloc(alen + 1u)) != NULL) {
        memcpy(c->alpn_own, a, alen);
        c->alpn_own[alen] = '\0';
        c->alpn = c->alpn_own;
    }
}

/* The facts that need strings of their own, once the handshake is done: the peer's (made
 * from its certificate, which stays OpenSSL's: the session's) and an unexpected ALPN. */
static void fill_info(wf_tls_conn *c)
{
    set_conn_alpn(c);
    X509 *peer = SSL_get1_peer_certificate(c->ssl);
    c->no_peer_cert = peer == NULL;
    if (peer) {
        c->peer_uri_sans = join_sans(peer, WF_TLS_SAN_URI, ",");
        size_t first = c->peer_uri_sans ? strcspn(c->peer_uri_sans, ",") : 0;
        if (c->peer_uri_sans && c->peer_uri_sans[first] != '\0') /* more than one */
            c->peer_uri_first = strndup(c->peer_uri_sans, first);
        BIO *m = BIO_new(BIO_s_mem());
        if (m && X509_NAME_print_ex(m, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253) >= 0) {
            char *p = NULL;
            long n = BIO_get_mem_data(m, &p);
            if (n >= 0 && (c->peer_subject = malloc((size_t)n + 1)) != NULL) {
                if (n > 0) /* an empty subject (SPIFFE certificates) leaves p NULL */
                    memcpy(c->peer_subject, p, (size_t)n);
                c->peer_subject[n] = '\0';
            }
        }
        BIO_free(m);
        X509_free(peer);
    }
}

/* Empties OpenSSL's thread-local error queue before a call whose SSL_get_error must see its
 * own errors only (and after one that may leave some): looked at first, as it is empty but
 * after a failure, and clearing its slots costs some 800 instructions, three times a
 * keep-alive request. */
static void clear_errors(void)
{
    if (ERR_peek_error() != 0)
        ERR_clear_error();
}

/* A failed SSL call: the failure reason (a generic one when the queue is empty). */
static int failed(wf_tls_conn *c)
{
    c->failed = true;
    drain_errors(c);
    if (!c->failure) {
        c->failure = strdup("TLS_error:|connection error:TLS_error_end");
        c->outcome = WF_TLS_STAT_CONNECTION_ERROR;
    }
    return WF_TLS_FAIL;
}

int wf_tls_conn_handshake(wf_tls_conn *c)
{
    if (c->failed)
        return WF_TLS_FAIL;
    if (c->hs_done)
        return WF_TLS_OK;
    clear_errors();
    int r = SSL_do_handshake(c->ssl);
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, r);
    if (r == 1) {
        c->hs_done = true;
        c->outcome = WF_TLS_STAT_HANDSHAKE;
        fill_info(c);
        clear_errors();
        return WF_TLS_OK;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return WF_TLS_WANT;
    return failed(c);
}

bool wf_tls_conn_handshake_done(const wf_tls_conn *c)
{
    return c->hs_done;
}

/* What an SSL_read / SSL_peek that returned r means: bytes, WANT, EOF or a failure. */
static ssize_t read_result(wf_tls_conn *c, int r)
{
    int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, r);
    if (r > 0)
        return r;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return WF_TLS_WANT;
    if (e == SSL_ERROR_ZERO_RETURN)
        return WF_TLS_EOF;
    return failed(c);
}

ssize_t wf_tls_conn_read(wf_tls_conn *c, void *buf, size_t cap)
{
    if (c->failed)
        return WF_TLS_FAIL;
    clear_errors();
    return read_result(c, SSL_read(c->ssl, buf, cap > 0x7fffffff ? 0x7fffffff : (int)cap));
}

ssize_t wf_tls_conn_peek(wf_tls_conn *c)
{
    if (c->failed)
        return WF_TLS_FAIL;
    clear_errors();
    char one;
    return read_result(c, SSL_peek(c->ssl, &one, 1));
}

bool wf_tls_conn_readable(const wf_tls_conn *c)
{
    return !c->failed && (SSL_has_pending(c->ssl) || c->in_len > 0);
}

int wf_tls_conn_write(wf_tls_conn *c, const void *buf, size_t len)
{
    if (c->failed || !c->hs_done)
        return WF_TLS_FAIL;
    clear_errors();
    const char *p = buf;
    while (len > 0) {
        int n = len > 0x40000000 ? 0x40000000 : (int)len;
        int r = SSL_write(c->ssl, p, n);
        if (r <= 0)
            return failed(c);
        p += r;
        len -= (size_t)r;
    }
    return WF_TLS_OK;
}

void wf_tls_conn_shutdown(wf_tls_conn *c)
{
    if (c->failed || !c->hs_done)
        return;
    SSL_shutdown(c->ssl);
    clear_errors();
}

size_t wf_tls_conn_out_pending(const wf_tls_conn *c)
{
    return c->out ? c->out->len - c->out->off : 0;
}

size_t wf_tls_conn_out_take(wf_tls_conn *c, void *buf, size_t cap)
{
    out_buf *o = c->out;
    size_t left = o ? o->len - o->off : 0, n = left < cap ? left : cap;
    if (n)
        memcpy(buf, o->data + o->off, n);
    if (o && (o->off += n) == o->len) { /* empty: the buffer goes */
        free(o);
        c->out = NULL;
    }
    return n;
}

const char *wf_tls_conn_failure(const wf_tls_conn *c)
{
    return c->failure ? c->failure : "";
}

wf_tls_stat wf_tls_conn_outcome(const wf_tls_conn *c)
{
    return c->outcome;
}

bool wf_tls_conn_session_reused(const wf_tls_conn *c)
{
    return c->hs_done && SSL_session_reused(c->ssl) == 1;
}

bool wf_tls_conn_no_peer_cert(const wf_tls_conn *c)
{
    return c->hs_done && c->no_peer_cert;
}

void wf_tls_conn_info(const wf_tls_conn *c, wf_tls_info *out)
{
    *out = (wf_tls_info){"", c->sni ? c->sni : "", "", "", c->ctx->local_uri_sans, "", "", "", ""};
    if (!c->hs_done)
        return;
    if (c->alpn)
        out->alpn = c->alpn;
    if (c->ctx->server) { /* OpenSSL's copy of the ClientHello's name, kept with the SSL */
        const char *sn = SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name);
        if (sn)
            out->sni = sn;
    }
    if (c->peer_uri_sans) {
        out->peer_uri_sans = c->peer_uri_sans;
        out->peer_uri_san = c->peer_uri_first                ? c->peer_uri_first
                            : !strchr(c->peer_uri_sans, ',') ? c->peer_uri_sans
                                                             : ""; /* out of memory */
    }
    if (c->peer_subject)
        out->peer_subject = c->peer_subject;
    out->version = SSL_get_version(c->ssl);
    out->curve = curve_name(SSL_get_negotiated_group(c->ssl));
    const SSL_CIPHER *ci = SSL_get_current_cipher(c->ssl);
    out->cipher = ci ? SSL_CIPHER_get_name(ci) : "";
}

int wf_tls_version_from_name(const char *name)
{
    static const struct {
        const char *name;
        int v;
    } names[] = {{"TLS_AUTO", 0},
                 {"TLSv1_0", WF_TLS_V1_0},
                 {"TLSv1_1", WF_TLS_V1_1},
                 {"TLSv1_2", WF_TLS_V1_2},
                 {"TLSv1_3", WF_TLS_V1_3}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i].name) == 0)
            return names[i].v;
    return -1;
}

/* ---------- the peer certificate for x-forwarded-client-cert ---------- */

int wf_tls_conn_peer_sha256(const wf_tls_conn *c, wf_strbuf *out)
{
    X509 *peer = c->hs_done ? SSL_get0_peer_certificate(c->ssl) : NULL;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!peer || X509_digest(peer, EVP_sha256(), md, &len) != 1) {
        ERR_clear_error();
        return -1;
    }
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        wf_strbuf_putc(out, hex[md[i] >> 4]);
        wf_strbuf_putc(out, hex[md[i] & 15]);
    }
    return wf_strbuf_failed(out) ? -1 : 0;
}

int wf_tls_conn_peer_sans(const wf_tls_conn *c, wf_tls_san_type type, const char *sep,
                          wf_strbuf *out)
{
    X509 *peer = c->hs_done ? SSL_get0_peer_certificate(c->ssl) : NULL;
    if (!peer)
        return -1;
    join_arg a = {out, type, sep, 0};
    each_san(peer, join_one, &a);
    return wf_strbuf_failed(out) ? -1 : 0;
}

/* cert's PEM, URL-encoded as Envoy's urlEncodedPemEncodedPeerCertificate, appended to out. */
static int append_pem(X509 *cert, wf_strbuf *out)
{
    BIO *m = BIO_new(BIO_s_mem());
    char *p = NULL;
    long n = m && PEM_write_bio_X509(m, cert) == 1 ? BIO_get_mem_data(m, &p) : -1;
    for (long i = 0; i < n; i++) {
        switch (p[i]) {
        case '\n':
            wf_strbuf_puts(out, "%0A");
            break;
        case ' ':
            wf_strbuf_puts(out, "%20");
            break;
        case '+':
            wf_strbuf_puts(out, "%2B");
            break;
        case '/':
            wf_strbuf_puts(out, "%2F");
            break;
        case '=':
            wf_strbuf_puts(out, "%3D");
            break;
        default:
            wf_strbuf_putc(out, p[i]);
        }
    }
    BIO_free(m);
    ERR_clear_error();
    return n < 0 || wf_strbuf_failed(out) ? -1 : 0;
}

int wf_tls_conn_peer_pem(const wf_tls_conn *c, bool chain, wf_strbuf *out)
{
    X509 *peer = c->hs_done ? SSL_get0_peer_certificate(c->ssl) : NULL;
    if (!peer || append_pem(peer, out) != 0)
        return -1;
    /* OpenSSL's peer chain has the leaf first on a client, not on a server */
    STACK_OF(X509) *sk = chain ? SSL_get_peer_cert_chain(c->ssl) : NULL;
    for (int i = 0; sk && i < sk_X509_num(sk); i++) {
        X509 *x = sk_X509_value(sk, i);
        if (X509_cmp(x, peer) != 0 && append_pem(x, out) != 0)
            return -1;
    }
    return 0;
}
