/*
 * cert_provider.c - the workload certificate provider (cert_provider.h): CSR on the thread
 * pool, CreateCertificate over gRPC on the main loop, rotation and back-off timers.
 */
#include "proxy/sds/cert_provider.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gofmt.h"
#include "core/grpc_codes.h"
#include "core/log.h"
#include "proxy/sds/workload_cert.h"
#include "tls/tls.h"
#include "xds/h2_stream.h"

#define CSR_PATH        "/istio.v1.auth.IstioCertificateService/CreateCertificate"
#define TOKEN_DEFAULT   "./var/run/secrets/tokens/istio-token"
#define BACKOFF_MIN_MS  1000u
#define BACKOFF_MAX_MS  60000u
#define MAX_TOKEN_BYTES 65536u
#define MAX_ROOT_BYTES  (1024u * 1024u)
#define ROOT_DEFAULT    "./var/run/secrets/istio/root-cert.pem" /* istio-ca-root-cert */
#define SECURE_PORT     15012

/* One CSR and its call (freed when its connection has closed). */
typedef struct attempt {
    wp_cert_provider *p; /* NULL once the provider is closing */
    uv_work_t work;
    char *key_pem, *csr_pem;
    char err[256];
    char *auth; /* "Bearer <token>" (metadata must outlive the connection) */
    const char *md[5];
    wf_tls_ctx *tls; /* to the CA's TLS port (it must outlive the connection); NULL = plain */
    wf_h2_conn *conn;
    bool answered;
    uint64_t start_ms;
} attempt;

struct wp_cert_provider {
    uv_loop_t *loop;
    wp_cert_provider_opts o;
    wp_secrets *store;
    uv_timer_t timer;
    attempt *cur; /* in flight, NULL = none */
    uint64_t backoff_ms;
    bool closing, timer_closed;
    unsigned live; /* attempts not yet freed */
    uint64_t rng;
};

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A uniform draw in [-1, 1] (xorshift; seeded from the clock and the address). */
static double draw(wp_cert_provider *p)
{
    p->rng ^= p->rng << 13;
    p->rng ^= p->rng >> 7;
    p->rng ^= p->rng << 17;
    return (double)(p->rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static void maybe_free(wp_cert_provider *p)
{
    if (p->closing && p->timer_closed && p->live == 0)
        free(p);
}

static void attempt_free(attempt *a)
{
    wf_tls_ctx_free(a->tls);
    wp_wc_free_secret(a->key_pem);
    free(a->csr_pem);
    free(a->auth);
    wp_cert_provider *p = a->p;
    free(a);
    if (p) {
        p->live--;
        maybe_free(p);
    }
}

/* A client context for the CA's TLS port (istiod's 15012): the root it must chain to, read
 * from ca_root_path now (a rotated root file is read by the next CSR), the CA address as the
 * name its certificate must carry, ALPN h2. NULL with err. */
static wf_tls_ctx *ca_tls(const wp_cert_provider *p, char *err, size_t cap)
{
    char *root = NULL;
    size_t len = 0;
    FILE *f = fopen(p->o.ca_root_path, "rb");
    if (f) {
        root = malloc(MAX_ROOT_BYTES);
        len = root ? fread(root, 1, MAX_ROOT_BYTES, f) : 0;
        fclose(f);
    }
    if (!root || len == 0) {
        free(root);
        snprintf(err, cap, "failed to read the CA's root certificate %s", p->o.ca_root_path);
        return NULL;
    }
    static const char *const alpn[] = {"h2"};
    wf_tls_ctx_opts o = {.trusted_ca = root,
                         .trusted_ca_len = len,
                         .alpn = alpn,
                         .nalpn = 1,
                         .min_version = WF_TLS_V1_2,
                         .verify_name = *p->o.ca_name ? p->o.ca_name : p->o.ca_host};
    char why[200];
    wf_tls_ctx *ctx = wf_tls_ctx_new(&o, why, sizeof why);
    free(root);
    if (!ctx)
        snprintf(err, cap, "the CA's root certificate %s: %s", p->o.ca_root_path, why);
    return ctx;
}

static void request(wp_cert_provider *p);

static void on_timer(uv_timer_t *t)
{
    request(t->data);
}

static void schedule(wp_cert_provider *p, uint64_t ms)
{
    if (!p->closing)
        uv_timer_start(&p->timer, on_timer, ms, 0);
}

static void failed(wp_cert_provider *p, const char *why)
{
    WF_LOG(WF_LC_secret, WF_LOG_ERROR, "failed to sign CSR: %s", why);
    uint64_t ms = p->backoff_ms ? p->backoff_ms : BACKOFF_MIN_MS;
    p->backoff_ms = ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms * 2;
    schedule(p, ms);
}

/* The answer: store it, log Istio's line, schedule the rotation. */
static void got_chain(wp_cert_provider *p, attempt *a, const uint8_t *msg, size_t len)
{
    char *chain = NULL, *root = NULL, err[128];
    int64_t nb, na;
    double now = wall_s();
    if (wp_wc_decode_response(msg, len, &chain, &root, err, sizeof(err)) != 0 ||
        wp_wc_cert_facts(chain, strlen(chain), &nb, &na, NULL, 0) != 0) {
        failed(p, chain ? "create certificate: the certificate chain does not parse" : err);
    } else if (wp_secrets_set(p->store, chain, a->key_pem, root, now) != 0) {
        failed(p, "out of memory");
    } else {
        p->backoff_ms = 0;
        if (p->o.on_update)
            p->o.on_update(p->o.ud);
        char ttl[32];
        int64_t left = na - (int64_t)now;
        snprintf(ttl, sizeof(ttl), "%lldh%lldm%llds", (long long)(left / 3600),
                 (long long)(left % 3600 / 60), (long long)(left % 60));
        WF_LOG(WF_LC_secret, WF_LOG_INFO,
               "generated new workload certificate resourceName=default latency=%llums ttl=%s",
               (unsigned long long)(uv_now(p->loop) - a->start_ms), ttl);
        int64_t now_ms = (int64_t)(now * 1000);
        uint64_t delay = wp_wc_rotate_delay_ms(now_ms, na * 1000, now_ms, p->o.grace_ratio,
                                               draw(p) * p->o.grace_jitter);
        WF_LOG(WF_LC_secret, WF_LOG_DEBUG, "certificate rotation in %llu ms",
               (unsigned long long)delay);
        schedule(p, delay);
    }
    free(chain);
    free(root);
}

static void on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    attempt *a = wf_h2_call_data(call);
    (void)ud;
    if (!a || a->answered || !a->p)
        return;
    a->answered = true;
    if (a->p->cur == a) /* done: a rotation due at once must not find it in flight */
        a->p->cur = NULL;
    got_chain(a->p, a, msg, len);
}

static void on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    attempt *a = wf_h2_call_data(call);
    (void)ud;
    if (!a)
        return;
    if (a->p && !a->answered) {
        char why[512];
        const char *code =
            end->grpc_status >= 0 ? wf_grpc_code_name((unsigned)end->grpc_status, false) : NULL;
        if (end->reason == WF_H2_END_CONN_LOST || !code)
            snprintf(why, sizeof(why),
                     "create certificate: rpc error: code = Unavailable desc = connection error: "
                     "%s:%d: %s",
                     a->p->o.ca_host, a->p->o.ca_port, wf_h2_end_reason_str(end->reason));
        else
            snprintf(why, sizeof(why), "create certificate: rpc error: code = %s desc = %s", code,
                     end->grpc_message);
        failed(a->p, why);
    }
    if (a->p && a->p->cur == a)
        a->p->cur = NULL;
    wf_h2_conn_close(a->conn);
}

static void on_conn_closed(wf_h2_conn *conn, wf_h2_end_reason r, void *ud)
{
    (void)conn;
    (void)r;
    attempt_free(ud);
}

/* "Bearer <token>" from the token file, trailing whitespace dropped. */
static char *bearer(const char *path, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "failed to read token file %s", path);
        return NULL;
    }
    char *s = malloc(MAX_TOKEN_BYTES + 8);
    size_t n = s ? fread(s + 7, 1, MAX_TOKEN_BYTES, f) : 0;
    fclose(f);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    while (n && (s[6 + n] == '\n' || s[6 + n] == '\r' || s[6 + n] == ' '))
        n--;
    memcpy(s, "Bearer ", 7);
    s[7 + n] = '\0';
    return s;
}

static void send_csr(wp_cert_provider *p, attempt *a)
{
    char err[256];
    if (!(a->auth = bearer(p->o.token_path, err, sizeof(err)))) {
        p->cur = NULL;
        attempt_free(a);
        failed(p, err);
        return;
    }
    a->md[0] = "authorization";
    a->md[1] = a->auth;
    a->md[2] = "clusterid";
    a->md[3] = p->o.cluster_id ? p->o.cluster_id : "Kubernetes";
    a->md[4] = NULL;
    if (p->o.ca_root_path && !(a->tls = ca_tls(p, err, sizeof err))) {
        p->cur = NULL;
        attempt_free(a);
        failed(p, err);
        return;
    }
    wf_h2_opts ho = {.max_msg = 1 << 20, .path = CSR_PATH, .metadata = a->md, .tls = a->tls};
    wf_h2_handlers h = {NULL, on_message, on_end, on_conn_closed, a};
    wf_h2_call *call = NULL;
    wf_strbuf req = {0};
    wp_wc_encode_request(a->csr_pem, p->o.ttl_s, &req);
    if (wf_strbuf_failed(&req) ||
        wf_h2_client_connect(p->loop, p->o.ca_host, p->o.ca_port, &ho, &h, &a->conn) != 0) {
        wf_strbuf_free(&req);
        p->cur = NULL;
        attempt_free(a);
        failed(p, "create certificate: cannot connect to the CA");
        return;
    }
    if (wf_h2_call_open(a->conn, &call) != 0 || (wf_h2_call_set_data(call, a), 0) ||
        wf_h2_call_send(call, req.data, req.len) != 0 || wf_h2_call_finish(call, 0, NULL) != 0) {
        /* on_end (if the call opened) or on_conn_closed report and free */
        if (!call) {
            p->cur = NULL;
            failed(p, "create certificate: cannot open the call");
        }
        wf_h2_conn_close(a->conn);
    }
    wf_strbuf_free(&req);
}

static void csr_work(uv_work_t *w)
{
    attempt *a = w->data;
    wp_wc_make_csr(a->p->o.ecdsa, a->p->o.spiffe_id, &a->key_pem, &a->csr_pem, a->err,
                   sizeof(a->err));
}

static void csr_done(uv_work_t *w, int status)
{
    attempt *a = w->data;
    wp_cert_provider *p = a->p;
    if (p->closing || status != 0 || !a->csr_pem) {
        bool report = !p->closing;
        char why[256];
        snprintf(why, sizeof(why), "%s", a->err[0] ? a->err : "cannot build the CSR");
        p->cur = NULL;
        attempt_free(a); /* may free a closing provider */
        if (report)
            failed(p, why);
        return;
    }
    send_csr(p, a);
}

static void request(wp_cert_provider *p)
{
    if (p->closing || p->cur)
        return;
    attempt *a = calloc(1, sizeof(*a));
    if (!a) {
        failed(p, "out of memory");
        return;
    }
    a->p = p;
    a->work.data = a;
    a->start_ms = uv_now(p->loop);
    p->live++;
    p->cur = a;
    if (uv_queue_work(p->loop, &a->work, csr_work, csr_done) != 0) {
        p->cur = NULL;
        attempt_free(a);
        failed(p, "cannot queue the CSR");
    }
}

wp_cert_provider *wp_cert_provider_start(uv_loop_t *loop, const wp_cert_provider_opts *opts,
                                         wp_secrets *store)
{
    wp_cert_provider *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->loop = loop;
    p->o = *opts;
    p->store = store;
    p->rng = (uint64_t)(wall_s() * 1e6) ^ (uint64_t)(uintptr_t)p ^ 0x9e3779b97f4a7c15ull;
    if (!p->rng)
        p->rng = 1;
    uv_timer_init(loop, &p->timer);
    p->timer.data = p;
    request(p);
    return p;
}

static void on_timer_closed(uv_handle_t *h)
{
    wp_cert_provider *p = h->data;
    p->timer_closed = true;
    maybe_free(p);
}

void wp_cert_provider_close(wp_cert_provider *p)
{
    if (!p || p->closing)
        return;
    p->closing = true;
    attempt *a = p->cur;
    if (a && a->conn)
        wf_h2_conn_close(a->conn);
    uv_close((uv_handle_t *)&p->timer, on_timer_closed);
}

/* ---------- options ---------- */

static int env_ratio(const char *name, double *out, wf_strbuf *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    double d = strtod(v, &end);
    if (*end || d < 0 || d > 1) {
        wf_strbuf_printf(err, "%s: invalid value \"%s\": want a number 0..1", name, v);
        return -1;
    }
    *out = d;
    return 0;
}

/* host:port ([v6]:port); a DNS name is resolved (first address), and kept as the name the
 * certificate must carry. 0, or -1 with why in err. */
static int parse_addr(const char *v, wp_cert_provider_opts *o, wf_strbuf *err)
{
    const char *colon = strrchr(v, ':');
    char host[256];
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof host)
        return wf_strbuf_puts(err, "want HOST:PORT"), -1;
    size_t hl = (size_t)(colon - v);
    if (v[0] == '[' && v[hl - 1] == ']') {
        memcpy(host, v + 1, hl - 2);
        host[hl - 2] = '\0';
    } else {
        memcpy(host, v, hl);
        host[hl] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535)
        return wf_strbuf_puts(err, "want HOST:PORT"), -1;
    o->ca_port = (int)port;
    snprintf(o->ca_name, sizeof o->ca_name, "%s", host);
    unsigned char buf[16];
    if (inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1) {
        if (strlen(host) >= sizeof o->ca_host)
            return wf_strbuf_puts(err, "want HOST:PORT"), -1;
        snprintf(o->ca_host, sizeof o->ca_host, "%s", host);
        return 0;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res)
        return wf_strbuf_printf(err, "cannot resolve \"%s\": %s", host, gai_strerror(rc)), -1;
    const void *a = res->ai_family == AF_INET6
                        ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    inet_ntop(res->ai_family, a, o->ca_host, sizeof o->ca_host);
    freeaddrinfo(res);
    return 0;
}

const char *wp_token_path(const char *flag)
{
    const char *tp = getenv("WEFT_TOKEN_PATH");
    return flag ? flag : tp && *tp ? tp : TOKEN_DEFAULT;
}

int wp_cert_provider_opts_from_env(wp_cert_provider_opts *o, const char *ca_default,
                                   const char *ca_default_name, const char *token_path,
                                   char *spiffe_buf, size_t scap, wf_strbuf *err)
{
    *o = (wp_cert_provider_opts){.ttl_s = 86400, .grace_ratio = 0.5, .grace_jitter = 0.01};
    const char *ca = getenv("CA_ADDR");
    const char *addr = ca && *ca ? ca : ca_default;
    if (!addr) {
        wf_strbuf_puts(err, "CA_ADDR is not set and the bootstrap has no xDS cluster address");
        return -1;
    }
    wf_strbuf why = {0};
    if (parse_addr(addr, o, &why) != 0) {
        wf_strbuf_printf(err, "%s: invalid address \"%s\": %s",
                         ca && *ca ? "CA_ADDR" : "the xDS cluster", addr, wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        return -1;
    }
    wf_strbuf_free(&why);
    const char *san = getenv("ISTIOD_SAN");
    if (!(ca && *ca) && ((san && *san) || ca_default_name))
        snprintf(o->ca_name, sizeof o->ca_name, "%s", san && *san ? san : ca_default_name);
    o->token_path = wp_token_path(token_path);
    const char *ttl = getenv("SECRET_TTL");
    if (ttl && *ttl) {
        int64_t ns;
        if (wf_go_duration(ttl, &ns, NULL) != 0 || ns < 1000000000) {
            wf_strbuf_printf(err, "SECRET_TTL: invalid duration \"%s\" (at least 1s)", ttl);
            return -1;
        }
        o->ttl_s = ns / 1000000000;
    }
    if (env_ratio("SECRET_GRACE_PERIOD_RATIO", &o->grace_ratio, err) != 0 ||
        env_ratio("SECRET_GRACE_PERIOD_RATIO_JITTER", &o->grace_jitter, err) != 0)
        return -1;
    const char *alg = getenv("ECC_SIGNATURE_ALGORITHM");
    o->ecdsa = alg && strcmp(alg, "ECDSA") == 0;
    const char *td = getenv("TRUST_DOMAIN"), *ns = getenv("POD_NAMESPACE"),
               *sa = getenv("SERVICE_ACCOUNT");
    if (ns && *ns && sa && *sa) {
        snprintf(spiffe_buf, scap, "spiffe://%s/ns/%s/sa/%s", td && *td ? td : "cluster.local", ns,
                 sa);
        o->spiffe_id = spiffe_buf;
    }
    const char *cid = getenv("CLUSTER_ID");
    o->cluster_id = cid && *cid ? cid : "Kubernetes";
    /* pilot-agent's CA_ROOT_CA: the root the CA's TLS port must chain to; istiod's secure
     * port (15012) implies TLS with the mounted istio-ca-root-cert */
    const char *root = getenv("CA_ROOT_CA");
    if (root && *root)
        o->ca_root_path = root;
    else if (o->ca_port == SECURE_PORT)
        o->ca_root_path = ROOT_DEFAULT;
    return 0;
}
