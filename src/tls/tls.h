/*
 * tls.h - a TLS engine over the caller's buffers (OpenSSL 3): a context built from PEM and a
 * connection that takes ciphertext in and gives plaintext out, and the reverse. It knows no
 * event loop and no proxy, so weft-proxy's transport socket (proxy/net/tls_socket.h),
 * weft-pilot's gRPC server and the agent can share it.
 *
 * Ciphertext moves through one BIO of the engine's own (BIO_meth_new; HAProxy's SSL layer
 * and Envoy's io_handle_bio.cc also give OpenSSL/BoringSSL a BIO of their own over the
 * connection), not through memory BIOs:
 *  - in: the caller lends the bytes it read (wf_tls_conn_lend: no copy; OpenSSL reads its
 *    records straight from them) or has them copied (wf_tls_conn_feed);
 *  - out: every record OpenSSL writes goes to the caller's sink as it is written
 *    (wf_tls_conn_set_sink), or, without a sink, waits in the engine for
 *    wf_tls_conn_out_take.
 * Memory: the engine holds a buffer only while bytes are in it (a fed copy until consumed,
 * ciphertext until taken) and OpenSSL's record buffers are released when empty
 * (SSL_MODE_RELEASE_BUFFERS): an idle connection holds none of them.
 *
 * Envoy behaviour followed (envoyproxy/envoy source/common/tls/context_impl.cc,
 * ssl_socket.cc, server_ssl_socket.cc, cert_validator/default_validator.cc, utility.cc;
 * data-plane-api envoy/extensions/transport_sockets/tls/v3/{tls,common}.proto):
 *  - A context (CommonTlsContext): certificate chain + private key, trusted CA bundle
 *    (validation_context.trusted_ca), ALPN list (alpn_protocols), TLS versions
 *    (tls_params.tls_minimum/maximum_protocol_version; Envoy's defaults: TLS 1.2 to 1.3 for
 *    clients and servers), TLS 1.2 cipher suites (tls_params.cipher_suites, OpenSSL syntax
 *    as BoringSSL's), require_client_certificate, and SAN matchers as
 *    match_typed_subject_alt_names (exact or prefix on a URI or DNS SAN) and the older
 *    match_subject_alt_names (exact or prefix against every SAN of the certificate). Without
 *    a trusted CA the peer's certificate is not verified (Envoy's "no validation context").
 *  - Failure reasons as Envoy's SslSocket::drainErrorQueue writes them since envoy PR
 *    #29875: "TLS_error:" then "|<code>:<lib>:<func>:<reason>" per queued error, ":<detail>"
 *    after a verification error (Envoy's certificate validation error), then
 *    ":TLS_error_end". weft links OpenSSL, not BoringSSL, but operators grep Envoy's texts,
 *    so SSL reasons are written with BoringSSL's code numbers (0x10000000 + BoringSSL's
 *    SSL_R_* value), BoringSSL's names and "SSL routines:OPENSSL_internal" as lib and func:
 *    268435581:...:CERTIFICATE_VERIFY_FAILED, 268435703:...:WRONG_VERSION_NUMBER,
 *    268436504:...:TLSV1_ALERT_UNKNOWN_CA, 268436501:...:SSLV3_ALERT_CERTIFICATE_EXPIRED,
 *    SSLV3_ALERT_HANDSHAKE_FAILURE, SSLV3_ALERT_BAD_CERTIFICATE,
 *    TLSV1_ALERT_CERTIFICATE_REQUIRED, PEER_DID_NOT_RETURN_A_CERTIFICATE, NO_SHARED_CIPHER,
 *    UNSUPPORTED_PROTOCOL, HTTP_REQUEST, ... (every TLS alert maps one to one, as both
 *    libraries number alerts 1000 + the alert). An OpenSSL reason with no BoringSSL
 *    counterpart keeps OpenSSL's packed code, its library text and its reason upper-cased
 *    with '_' for spaces. Details: "verify cert failed: SAN matcher, certificate SANs are
 *    [a, b]", "verify cert failed: X509_verify_cert: certificate verification error at
 *    depth <n>: <X509 error text>", "peer did not provide required client certificate".
 *  - The outcome counted as Envoy's ssl.* stats (SslStats): handshake, session_reused,
 *    connection_error, fail_verify_error, fail_verify_san, fail_verify_no_cert,
 *    no_certificate. A server resumes sessions from OpenSSL's stateless tickets (keys made
 *    per context); clients keep no session yet.
 *
 * Ownership and threads: a context is immutable after wf_tls_ctx_new and may be shared by
 * connections of any thread (OpenSSL's SSL_CTX is). It is reference-counted (atomically):
 * the creator holds one reference, wf_tls_ctx_ref adds one, wf_tls_ctx_free drops one, and
 * each connection holds its own from wf_tls_conn_new to wf_tls_conn_free, so a context
 * replaced by a rotation (SDS) lives on while connections made with it stay open. A
 * connection belongs to one thread. Strings a connection returns are its own (or its
 * context's), valid until wf_tls_conn_free. OpenSSL's thread-local error queue is cleared
 * around every call.
 */
#ifndef WF_TLS_TLS_H
#define WF_TLS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/strbuf.h"

typedef struct wf_tls_ctx wf_tls_ctx;
typedef struct wf_tls_conn wf_tls_conn;

/* A SAN matcher. URI / DNS: match_typed_subject_alt_names (that SAN type only); ANY:
 * match_subject_alt_names (every SAN of the certificate: DNS, URI, email, IP). */
typedef enum { WF_TLS_SAN_ANY, WF_TLS_SAN_URI, WF_TLS_SAN_DNS } wf_tls_san_type;
typedef enum { WF_TLS_MATCH_EXACT, WF_TLS_MATCH_PREFIX } wf_tls_match_kind;
typedef struct wf_tls_san_matcher {
    wf_tls_san_type type;
    wf_tls_match_kind kind;
    const char *value;
} wf_tls_san_matcher;

/* TLS versions (tls_params): 0 = the default (TLS 1.2 minimum, TLS 1.3 maximum). */
enum { WF_TLS_V1_0 = 0x0301, WF_TLS_V1_1 = 0x0302, WF_TLS_V1_2 = 0x0303, WF_TLS_V1_3 = 0x0304 };

typedef struct wf_tls_ctx_opts {
    bool server;
    /* PEM text (not NUL-terminated necessarily), NULL/0 = none. A server needs a chain and
     * a key; a client presents them when given. */
    const char *cert_chain;
    size_t cert_chain_len;
    const char *private_key;
    size_t private_key_len;
    const char *trusted_ca; /* PEM bundle; NULL = no verification of the peer */
    size_t trusted_ca_len;
    const char *const *alpn; /* protocols in preference order */
    size_t nalpn;
    int min_version, max_version; /* WF_TLS_V*, 0 = default */
    const char *cipher_suites;    /* TLS 1.2 list ("A:B"), NULL = OpenSSL's default */
    bool require_client_cert;     /* server: require_client_certificate */
    const wf_tls_san_matcher *sans;
    size_t nsans;
    /* client: the DNS name or IP address (text) the server's certificate must carry, checked
     * as OpenSSL's host / IP check (a gRPC client's server-name check); NULL = none */
    const char *verify_name;
} wf_tls_ctx_opts;

/* Whether o's protocol versions make a range (0 = the defaults, TLS 1.2 to 1.3): the minimum
 * not above the maximum. The loader checks it when a context is configured (an LDS update
 * with such a context is NACKed), wf_tls_ctx_new again when it builds one. */
bool wf_tls_versions_ok(const wf_tls_ctx_opts *o);

/* Builds a context (strings copied). NULL with a message in err (capacity errcap, e.g.
 * "certificate chain: no certificate found in PEM", "private key does not match the
 * certificate", "cipher_suites: no cipher matches 'X'"). */
wf_tls_ctx *wf_tls_ctx_new(const wf_tls_ctx_opts *o, char *err, size_t errcap);
/* Drops one reference; the last frees the context. NULL ok. */
void wf_tls_ctx_free(wf_tls_ctx *c);
/* Takes one more reference; returns c (NULL ok). */
wf_tls_ctx *wf_tls_ctx_ref(wf_tls_ctx *c);
bool wf_tls_ctx_is_server(const wf_tls_ctx *c);
/* The first URI SAN of the context's own certificate ("" when none). */
const char *wf_tls_ctx_local_uri_sans(const wf_tls_ctx *c);

/* A connection of ctx; sni: the server name a client sends (NULL = none; ignored by a
 * server). NULL on out of memory. */
wf_tls_conn *wf_tls_conn_new(wf_tls_ctx *ctx, const char *sni);
void wf_tls_conn_free(wf_tls_conn *c); /* NULL ok */

/* Results of the calls below. */
enum {
    WF_TLS_OK = 0,     /* done (handshake complete / bytes moved) */
    WF_TLS_WANT = -1,  /* needs more ciphertext in */
    WF_TLS_EOF = -2,   /* the peer closed the TLS session (close_notify) */
    WF_TLS_FAIL = -3,  /* failed: wf_tls_conn_failure says why; the connection is done */
    WF_TLS_NOMEM = -4, /* out of memory */
};

/* Ciphertext received, lent: the engine reads records from data[0, len) in the calls that
 * follow, without copying them first. The window replaces the previous one: bytes of that one
 * not consumed yet (wf_tls_conn_input_left) must be at the start of the new one (the caller
 * moves them). The bytes must stay valid and unchanged until consumed or lent again; lend
 * (NULL, 0) before freeing them early. Bytes copied in by wf_tls_conn_feed and not yet
 * consumed are dropped. */
void wf_tls_conn_lend(wf_tls_conn *c, const void *data, size_t len);
/* Ciphertext received: copied in, after the bytes not yet consumed (lent or fed); the copy is
 * freed once consumed. WF_TLS_OK or WF_TLS_NOMEM. */
int wf_tls_conn_feed(wf_tls_conn *c, const void *data, size_t len);
/* Ciphertext given (lent or fed) and not consumed yet. */
size_t wf_tls_conn_input_left(const wf_tls_conn *c);

/* Where outgoing ciphertext goes: sink(arg, data, len) takes each record as OpenSSL writes it
 * (handshake flights, application data, alerts, close_notify) and returns 0, or -1 when it
 * cannot (out of memory: the call that wrote fails, WF_TLS_FAIL). data is valid during the
 * call only. NULL sink: the engine keeps the ciphertext for wf_tls_conn_out_take (the
 * default). Set it before the ciphertext it is to take is written. */
typedef int (*wf_tls_sink)(void *arg, const void *data, size_t len);
void wf_tls_conn_set_sink(wf_tls_conn *c, wf_tls_sink sink, void *arg);
/* Drives the handshake with what was given: WF_TLS_OK (complete, also when called again),
 * WF_TLS_WANT, WF_TLS_FAIL. Output (and an alert on failure) goes to the sink or waits in
 * the outgoing ciphertext (wf_tls_conn_out_pending). */
int wf_tls_conn_handshake(wf_tls_conn *c);
bool wf_tls_conn_handshake_done(const wf_tls_conn *c);
/* Decrypts into buf: bytes (> 0), WF_TLS_WANT, WF_TLS_EOF, WF_TLS_FAIL. */
ssize_t wf_tls_conn_read(wf_tls_conn *c, void *buf, size_t cap);
/* Processes the records fed so far (handshake messages such as session tickets) without
 * taking plaintext: 1 when plaintext is ready for wf_tls_conn_read, else WF_TLS_WANT,
 * WF_TLS_EOF, WF_TLS_FAIL. */
ssize_t wf_tls_conn_peek(wf_tls_conn *c);
/* Plaintext ready to read without more ciphertext (decrypted, or ciphertext given and not
 * consumed yet). */
bool wf_tls_conn_readable(const wf_tls_conn *c);
/* Encrypts all of buf into the outgoing ciphertext (records of at most 16 KiB each, given to
 * the sink as they are made): WF_TLS_OK or WF_TLS_FAIL. Only after the handshake. */
int wf_tls_conn_write(wf_tls_conn *c, const void *buf, size_t len);
/* Queues close_notify. */
void wf_tls_conn_shutdown(wf_tls_conn *c);
/* Outgoing ciphertext kept by the engine (no sink): bytes waiting, and taking up to cap of
 * them into buf (returns the count). Always 0 with a sink. */
size_t wf_tls_conn_out_pending(const wf_tls_conn *c);
size_t wf_tls_conn_out_take(wf_tls_conn *c, void *buf, size_t cap);

/* The failure reason ("" when none): "TLS_error:|...:TLS_error_end" as above. */
const char *wf_tls_conn_failure(const wf_tls_conn *c);

/* What to count (Envoy's SslStats), once the handshake is done or failed. */
typedef enum {
    WF_TLS_STAT_NONE = 0,
    WF_TLS_STAT_HANDSHAKE,          /* ssl.handshake */
    WF_TLS_STAT_CONNECTION_ERROR,   /* ssl.connection_error */
    WF_TLS_STAT_FAIL_VERIFY_ERROR,  /* ssl.fail_verify_error */
    WF_TLS_STAT_FAIL_VERIFY_SAN,    /* ssl.fail_verify_san */
    WF_TLS_STAT_FAIL_VERIFY_NO_CERT /* ssl.fail_verify_no_cert */
} wf_tls_stat;
wf_tls_stat wf_tls_conn_outcome(const wf_tls_conn *c);
/* The completed handshake resumed a session (ssl.session_reused). */
bool wf_tls_conn_session_reused(const wf_tls_conn *c);
/* The peer presented no certificate to a completed handshake (ssl.no_certificate). */
bool wf_tls_conn_no_peer_cert(const wf_tls_conn *c);

/* The connection's facts ("" when unknown; known after the handshake), the strings the
 * connection's, its context's or OpenSSL's, valid until wf_tls_conn_free. */
typedef struct wf_tls_info {
    const char *alpn;           /* negotiated ALPN */
    const char *sni;            /* server name: sent (client) or received (server) */
    const char *peer_uri_san;   /* the peer certificate's first URI SAN */
    const char *peer_uri_sans;  /* all of them, joined by "," (%DOWNSTREAM_PEER_URI_SAN%) */
    const char *local_uri_sans; /* our certificate's URI SANs, joined by "," */
    const char *peer_subject;   /* RFC 2253 ("CN=a,O=b") */
    const char *version;        /* "TLSv1.2", "TLSv1.3" */
    const char *cipher;         /* IANA / OpenSSL name ("TLS_AES_128_GCM_SHA256") */
    const char *curve;          /* key exchange group, BoringSSL's name ("X25519", "P-256") */
} wf_tls_info;
/* Fills *out (made on demand: a connection keeps only the strings that are its own). */
void wf_tls_conn_info(const wf_tls_conn *c, wf_tls_info *out);

/* The peer certificate's facts Envoy's x-forwarded-client-cert uses (Ssl::ConnectionInfo),
 * made on demand (not at every handshake). Each appends to out and returns 0, or -1 when
 * there is no peer certificate or on out of memory (out may then be failed):
 *  - wf_tls_conn_peer_sha256: sha256PeerCertificateDigest, the SHA-256 of the leaf's DER in
 *    lower-case hex (64 characters);
 *  - wf_tls_conn_peer_sans: the leaf's SANs of one type joined by sep (dnsSansPeerCertificate
 *    with WF_TLS_SAN_DNS; nothing appended when it has none);
 *  - wf_tls_conn_peer_pem: urlEncodedPemEncodedPeerCertificate (chain false: the leaf) or
 *    urlEncodedPemEncodedPeerCertificateChain (chain true: the leaf then the certificates the
 *    peer sent after it): PEM with "\n", " ", "+", "/", "=" written as %0A, %20, %2B, %2F,
 *    %3D, as Envoy's ConnectionInfoImplBase does. */
int wf_tls_conn_peer_sha256(const wf_tls_conn *c, wf_strbuf *out);
int wf_tls_conn_peer_sans(const wf_tls_conn *c, wf_tls_san_type type, const char *sep,
                          wf_strbuf *out);
int wf_tls_conn_peer_pem(const wf_tls_conn *c, bool chain, wf_strbuf *out);

/* "TLSv1_2" style (Envoy's TlsParameters enum names) to WF_TLS_V*, 0 for TLS_AUTO, -1
 * when unknown. */
int wf_tls_version_from_name(const char *name);

#endif
