/*
 * ca_server.c - istio.v1.auth.IstioCertificateService/CreateCertificate: request decoding,
 * authentication, signing, the response and the citadel_server_* metrics. See ca_server.h.
 */
#include "pilot/ca_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "xds/grpc_frame.h"
#include "xds/protowire.h"

#include "pilot/ca_tokenreview.h"

struct wf_ca_server {
    wf_ca_token_key key;
    char *trust_domain;
    wf_ca *ca;
    wf_ca_metrics m;
    wf_tokenreview *review; /* Kubernetes tokens (borrowed), NULL outside Kubernetes mode */
    wf_ca_issued *issued;   /* a ring of up to WF_CA_ISSUED_MAX (wf_ca_server_note_issued) */
    size_t n_issued, next_issued;
};

wf_ca_server *wf_ca_server_new(const wf_ca_token_key *key, const char *trust_domain)
{
    wf_ca_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->key = *key;
    if (wf_ca_server_set_trust_domain(s, trust_domain) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void wf_ca_server_free(wf_ca_server *s)
{
    if (!s)
        return;
    wf_ca_free(s->ca);
    free(s->trust_domain);
    free(s->issued);
    free(s);
}

void wf_ca_server_set_ca(wf_ca_server *s, wf_ca *ca)
{
    wf_ca_free(s->ca);
    s->ca = ca;
}

const wf_ca *wf_ca_server_ca(const wf_ca_server *s)
{
    return s->ca;
}

int wf_ca_server_set_trust_domain(wf_ca_server *s, const char *td)
{
    char *n = strdup(td && *td ? td : "cluster.local");
    if (!n)
        return -1;
    for (char *c = n; *c; c++)
        if (*c == '@') /* spiffe.go: '@' in a trust domain becomes '.' */
            *c = '.';
    free(s->trust_domain);
    s->trust_domain = n;
    return 0;
}

const char *wf_ca_server_trust_domain(const wf_ca_server *s)
{
    return s->trust_domain;
}

const wf_ca_metrics *wf_ca_server_metrics(const wf_ca_server *s)
{
    return &s->m;
}

const wf_ca_token_key *wf_ca_server_token_key(const wf_ca_server *s)
{
    return &s->key;
}

void wf_ca_server_set_review(wf_ca_server *s, wf_tokenreview *tr)
{
    s->review = tr;
}

wf_tokenreview *wf_ca_server_review(const wf_ca_server *s)
{
    return s->review;
}

/* ---- certificates issued --------------------------------------------------------------------- */

/* "ip:port", "[ip6]:port" -> ip. */
static void peer_ip(const char *peer, char *out, size_t cap)
{
    const char *colon = peer ? strrchr(peer, ':') : NULL;
    if (!peer || strncmp(peer, "unix:", 5) == 0 || !colon) {
        snprintf(out, cap, "%s", peer && strncmp(peer, "unix:", 5) != 0 ? peer : "");
        return;
    }
    const char *b = peer[0] == '[' ? peer + 1 : peer;
    size_t n = (size_t)(colon - b) - (peer[0] == '[' && colon > b && colon[-1] == ']');
    snprintf(out, cap, "%.*s", (int)n, b);
}

void wf_ca_server_note_issued(wf_ca_server *s, const char *identity, const char *peer,
                              const wf_ca_chain *chain, int64_t now_s)
{
    char ip[64];
    peer_ip(peer, ip, sizeof ip);
    wf_ca_issued *slot = NULL;
    for (size_t i = 0; i < s->n_issued && !slot; i++)
        if (strcmp(s->issued[i].identity, identity) == 0 && strcmp(s->issued[i].ip, ip) == 0)
            slot = &s->issued[i];
    if (!slot && !s->issued && !(s->issued = calloc(WF_CA_ISSUED_MAX, sizeof *s->issued)))
        return; /* out of memory: not recorded */
    if (!slot) {
        slot = &s->issued[s->next_issued];
        s->next_issued = (s->next_issued + 1) % WF_CA_ISSUED_MAX;
        if (s->n_issued < WF_CA_ISSUED_MAX)
            s->n_issued++;
    }
    snprintf(slot->identity, sizeof slot->identity, "%s", identity);
    snprintf(slot->ip, sizeof slot->ip, "%s", ip);
    snprintf(slot->serial, sizeof slot->serial, "%s", chain->serial);
    slot->not_before_s = chain->not_before_s;
    slot->not_after_s = chain->not_after_s;
    slot->issued_s = now_s;
}

const wf_ca_issued *wf_ca_server_issued(const wf_ca_server *s, const char *identity, const char *ip)
{
    const wf_ca_issued *best = NULL;
    for (size_t i = 0; i < s->n_issued; i++) {
        const wf_ca_issued *e = &s->issued[i];
        if (strcmp(e->identity, identity) != 0)
            continue;
        if (ip && *ip && strcmp(e->ip, ip) == 0)
            return e;
        if (!best || e->issued_s >= best->issued_s)
            best = e;
    }
    return best;
}

/* ---- the request ---------------------------------------------------------------------------- */

typedef struct csr_req {
    const uint8_t *csr;
    size_t csr_len;
    int64_t ttl_s;
    bool impersonate; /* metadata ImpersonatedIdentity is a non-empty string */
} csr_req;

/* google.protobuf.Value: string_value = 3. True when a non-empty string. */
static bool value_is_string(const uint8_t *p, size_t len)
{
    wf_pb_reader r;
    wf_pb_field f;
    bool s = false;
    wf_pb_reader_init(&r, p, len);
    while (wf_pb_next(&r, &f) == 1)
        s = f.num == 3 && f.wire == WF_PB_LEN ? f.len > 0 : s;
    return s;
}

/* google.protobuf.Struct: map<string, Value> fields = 1 (entries: key = 1, value = 2). */
static int parse_metadata(const uint8_t *p, size_t len, csr_req *out)
{
    wf_pb_reader r, er;
    wf_pb_field f, e;
    int rc;
    wf_pb_reader_init(&r, p, len);
    while ((rc = wf_pb_next(&r, &f)) == 1) {
        if (f.num != 1 || f.wire != WF_PB_LEN)
            continue;
        const uint8_t *key = NULL, *val = NULL;
        size_t klen = 0, vlen = 0;
        wf_pb_reader_init(&er, f.p, f.len);
        while ((rc = wf_pb_next(&er, &e)) == 1) {
            if (e.num == 1 && e.wire == WF_PB_LEN)
                key = e.p, klen = e.len;
            else if (e.num == 2 && e.wire == WF_PB_LEN)
                val = e.p, vlen = e.len;
        }
        if (rc < 0)
            return -1;
        if (key && klen == 20 && memcmp(key, "ImpersonatedIdentity", 20) == 0 && val &&
            value_is_string(val, vlen))
            out->impersonate = true;
    }
    return rc;
}

static int parse_request(const uint8_t *p, size_t len, csr_req *out)
{
    wf_pb_reader r;
    wf_pb_field f;
    int rc;
    memset(out, 0, sizeof *out);
    wf_pb_reader_init(&r, p, len);
    while ((rc = wf_pb_next(&r, &f)) == 1) {
        if (f.num == 1 && f.wire == WF_PB_LEN) {
            out->csr = f.p;
            out->csr_len = f.len;
        } else if (f.num == 2 && f.wire == WF_PB_VARINT) {
            out->ttl_s = (int64_t)f.u;
        } else if (f.num == 3 && f.wire == WF_PB_LEN && parse_metadata(f.p, f.len, out) != 0) {
            return -1;
        } else if (f.num <= 3 && f.wire != (f.num == 2 ? WF_PB_VARINT : WF_PB_LEN)) {
            return -1; /* a known field with the wrong wire type */
        }
    }
    return rc;
}

/* ---- handling -------------------------------------------------------------------------------- */

/* The caller's identity from "Bearer <token>" into id. 0, or -1 with why. */
static int authenticate(wf_ca_server *s, const char *auth, int64_t now_s, char *id, size_t idcap,
                        char *why, size_t cap)
{
    char ns[254], sa[254];
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !auth[7]) {
        snprintf(why, cap, "no bearer token in the authorization metadata");
        return -1;
    }
    if (wf_ca_token_verify(&s->key, auth + 7, strlen(auth + 7), now_s, ns, sa, why, cap) != 0)
        return -1;
    snprintf(id, idcap, "spiffe://%s/ns/%s/sa/%s", s->trust_domain, ns, sa);
    return 0;
}

static int sign_status(wf_ca_err e)
{
    return e == WF_CA_E_CSR || e == WF_CA_E_TTL ? WF_GRPC_INVALID_ARGUMENT : WF_GRPC_INTERNAL;
}

static void encode_response(const wf_ca_chain *chain, wf_strbuf *resp)
{
    for (size_t i = 0; i < chain->n; i++)
        wf_pb_put_bytes(resp, 1, chain->pem[i], strlen(chain->pem[i]));
}

static int parse_or_fail(wf_ca_server *s, const uint8_t *req, size_t len, csr_req *r, char *msg,
                         size_t cap)
{
    s->m.csr++;
    if (parse_request(req, len, r) == 0)
        return 0;
    snprintf(msg, cap,
             "grpc: error unmarshalling request: proto: cannot parse invalid "
             "wire-format data");
    return WF_GRPC_INTERNAL;
}

/* istiod's log line and status for a caller no authenticator accepted; fail is the
 * authenticators' messages ("Authenticator X: ...; Authenticator Y: ..."). */
static int authn_failed(wf_ca_server *s, const char *peer, const char *fail, char *msg, size_t cap)
{
    s->m.authn_fail++;
    WF_LOG(WF_LC_secret, WF_LOG_WARN, "Failed to authenticate client from %s: %s",
           peer && *peer ? peer : "unknown", fail);
    snprintf(msg, cap, "request authenticate failure");
    return WF_GRPC_UNAUTHENTICATED;
}

/* The authenticated part of a call: the caller is id. */
static int sign_for(wf_ca_server *s, const csr_req *rq, const char *id, const char *peer,
                    int64_t now_s, wf_strbuf *resp, char *msg, size_t cap)
{
    char detail[512];
    csr_req r = *rq;
    if (r.impersonate) {
        s->m.authn_fail++;
        snprintf(msg, cap, "request impersonation authentication failure");
        return WF_GRPC_UNAUTHENTICATED;
    }
    wf_ca_sign_req sr = {.csr_pem = (const char *)r.csr,
                         .csr_len = r.csr_len,
                         .san = id,
                         .ttl_s = r.ttl_s,
                         .now_s = now_s};
    wf_ca_chain chain;
    int e = wf_ca_sign(s->ca, &sr, &chain, detail, sizeof detail);
    if (e != WF_CA_OK) {
        s->m.sign_err[e]++;
        WF_LOG(WF_LC_secret, WF_LOG_ERROR, "CSR signing error: %s", detail);
        snprintf(msg, cap, "CSR signing error (%s)", detail);
        return sign_status((wf_ca_err)e);
    }
    encode_response(&chain, resp);
    wf_ca_server_note_issued(s, id, peer, &chain, now_s);
    wf_ca_chain_free(&chain);
    if (wf_strbuf_failed(resp)) {
        snprintf(msg, cap, "out of memory");
        return WF_GRPC_RESOURCE_EXHAUSTED;
    }
    s->m.success++;
    WF_LOG(WF_LC_secret, WF_LOG_DEBUG, "CSR signed for %s (ttl %llds)", id,
           (long long)(r.ttl_s > 0 ? r.ttl_s : WF_CA_DEFAULT_TTL_S));
    return WF_GRPC_OK;
}

int wf_ca_server_handle(wf_ca_server *s, const char *authorization, const char *peer,
                        const uint8_t *req, size_t len, int64_t now_s, wf_strbuf *resp, char *msg,
                        size_t cap)
{
    char id[600], why[256], fail[400];
    csr_req r;
    int st = parse_or_fail(s, req, len, &r, msg, cap);
    if (st != 0)
        return st;
    if (authenticate(s, authorization, now_s, id, sizeof id, why, sizeof why) != 0) {
        snprintf(fail, sizeof fail, "Authenticator %s: %s", WF_CA_TOKEN_AUTHENTICATOR, why);
        return authn_failed(s, peer, fail, msg, cap);
    }
    return sign_for(s, &r, id, peer, now_s, resp, msg, cap);
}

/* ---- the gRPC handlers ------------------------------------------------------------------- */

/* A call's state (wf_h2_call_data): NULL until its first message, the server once answered,
 * else a review_call while a TokenReview is pending. */
typedef struct review_call {
    wf_ca_server *s;
    wf_h2_call *call;
    wf_tr_pending *pending;
    uint8_t *req; /* a copy of the request */
    size_t len;
    char peer[128];
    char local_why[256]; /* why pilot's own token check refused it */
} review_call;

static void answer(wf_h2_call *call, int st, const wf_strbuf *resp, char *text, size_t cap)
{
    if (st == WF_GRPC_OK && wf_h2_call_send(call, resp->data ? resp->data : "", resp->len) != 0) {
        st = WF_GRPC_INTERNAL;
        snprintf(text, cap, "cannot send the response");
    }
    wf_h2_call_finish(call, st, st == WF_GRPC_OK ? NULL : text);
}

static void review_call_free(review_call *rc)
{
    free(rc->req);
    free(rc);
}

/* The TokenReview's answer (ca_tokenreview.h), on the loop. */
static void on_reviewed(void *ud, bool ok, const char *ns, const char *sa, const char *why)
{
    review_call *rc = ud;
    wf_ca_server *s = rc->s;
    char text[768], id[600], fail[1200];
    wf_strbuf resp = WF_STRBUF_INIT;
    csr_req r;
    wf_h2_call_set_data(rc->call, s); /* answered */
    int st;
    if (parse_request(rc->req, rc->len, &r) != 0) { /* parsed once already: cannot fail */
        st = WF_GRPC_INTERNAL;
        snprintf(text, sizeof text, "cannot parse the request again");
    } else if (!ok) {
        snprintf(fail, sizeof fail, "Authenticator %s: %s; Authenticator %s: %s",
                 WF_CA_TOKEN_AUTHENTICATOR, rc->local_why, WF_TR_AUTHENTICATOR, why);
        st = authn_failed(s, rc->peer, fail, text, sizeof text);
    } else {
        snprintf(id, sizeof id, "spiffe://%s/ns/%s/sa/%s", s->trust_domain, ns, sa);
        st = sign_for(s, &r, id, rc->peer, (int64_t)time(NULL), &resp, text, sizeof text);
    }
    answer(rc->call, st, &resp, text, sizeof text);
    wf_strbuf_free(&resp);
    review_call_free(rc);
}

/* Pilot's own token refused (why): a TokenReview in Kubernetes mode. Returns 1 when answered
 * from the cache (id filled), 0 when the review is pending (the call's data is set), or -1
 * with fail (the authenticators' messages). */
static int start_review(wf_ca_server *s, wf_h2_call *call, const char *auth, const char *peer,
                        const uint8_t *msg, size_t len, const char *why, char *id, size_t idcap,
                        char *fail, size_t cap)
{
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX], rwhy[700];
    review_call *rc = NULL;
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !auth[7]) {
        snprintf(fail, cap, "Authenticator %s: %s; Authenticator %s: %s", WF_CA_TOKEN_AUTHENTICATOR,
                 why, WF_TR_AUTHENTICATOR,
                 !auth ? "target JWT extraction error: no HTTP authorization header exists"
                       : "target JWT extraction error: no bearer token exists in HTTP "
                         "authorization header");
        return -1;
    }
    rc = calloc(1, sizeof *rc);
    if (rc && (rc->req = malloc(len ? len : 1)) != NULL) {
        memcpy(rc->req, msg, len);
        rc->len = len;
        rc->s = s;
        rc->call = call;
        snprintf(rc->peer, sizeof rc->peer, "%s", peer);
        snprintf(rc->local_why, sizeof rc->local_why, "%s", why);
        int r = wf_tokenreview_check(s->review, auth + 7, (int64_t)time(NULL), ns, sa, on_reviewed,
                                     rc, &rc->pending, rwhy, sizeof rwhy);
        if (r == 0) {
            wf_h2_call_set_data(call, rc);
            return 0;
        }
        review_call_free(rc);
        if (r == 1) {
            snprintf(id, idcap, "spiffe://%s/ns/%s/sa/%s", s->trust_domain, ns, sa);
            return 1;
        }
    } else {
        if (rc)
            free(rc);
        snprintf(rwhy, sizeof rwhy, "out of memory");
    }
    snprintf(fail, cap, "Authenticator %s: %s; Authenticator %s: %s", WF_CA_TOKEN_AUTHENTICATOR,
             why, WF_TR_AUTHENTICATOR, rwhy);
    return -1;
}

static void on_call(wf_h2_call *call, void *ud)
{
    (void)ud;
    wf_h2_call_set_data(call, NULL); /* not answered yet */
}

static void on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    wf_ca_server *s = ud;
    if (wf_h2_call_data(call) != NULL)
        return; /* unary: only the first message is answered (or is being reviewed) */
    wf_h2_call_set_data(call, s);
    char peer[128] = "", text[768], id[600], why[256], fail[1200];
    wf_strbuf resp = WF_STRBUF_INIT;
    csr_req r;
    const char *auth = wf_h2_call_metadata(call, "authorization");
    int64_t now_s = (int64_t)time(NULL);
    (void)wf_h2_conn_peer(wf_h2_call_conn(call), peer, sizeof peer);
    int st = parse_or_fail(s, msg, len, &r, text, sizeof text);
    if (st == WF_GRPC_OK) {
        if (authenticate(s, auth, now_s, id, sizeof id, why, sizeof why) == 0) {
            st = sign_for(s, &r, id, peer, now_s, &resp, text, sizeof text);
        } else if (!s->review) {
            snprintf(fail, sizeof fail, "Authenticator %s: %s", WF_CA_TOKEN_AUTHENTICATOR, why);
            st = authn_failed(s, peer, fail, text, sizeof text);
        } else {
            int rv =
                start_review(s, call, auth, peer, msg, len, why, id, sizeof id, fail, sizeof fail);
            if (rv == 0)
                return; /* answered by on_reviewed */
            st = rv == 1 ? sign_for(s, &r, id, peer, now_s, &resp, text, sizeof text)
                         : authn_failed(s, peer, fail, text, sizeof text);
        }
    }
    answer(call, st, &resp, text, sizeof text);
    wf_strbuf_free(&resp);
}

static void on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    (void)end;
    review_call *rc = wf_h2_call_data(call);
    if (!rc || (void *)rc == ud)
        return;
    wf_tokenreview_cancel(rc->pending); /* the call went before its review came back */
    review_call_free(rc);
}

wf_h2_handlers wf_ca_server_handlers(wf_ca_server *s)
{
    wf_h2_handlers h = {.on_call = on_call, .on_message = on_message, .on_end = on_end, .ud = s};
    return h;
}

/* ---- metrics ------------------------------------------------------------------------------- */

static void counter(wf_strbuf *b, const char *name, const char *help, uint64_t v)
{
    wf_strbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                     (unsigned long long)v);
}

static void gauge(wf_strbuf *b, const char *name, const char *help, long long v)
{
    wf_strbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, v);
}

void wf_ca_server_metrics_text(const wf_ca_server *s, int64_t now_s, wf_strbuf *b)
{
    const wf_ca_metrics *m = &s->m;
    counter(b, "citadel_server_csr_count", "The number of CSRs received by Citadel server.",
            m->csr);
    counter(b, "citadel_server_authentication_failure_count",
            "The number of authentication failures.", m->authn_fail);
    wf_strbuf_puts(b, "# HELP citadel_server_csr_sign_err_count The number of errors occurred "
                      "when signing the CSR.\n# TYPE citadel_server_csr_sign_err_count counter\n");
    for (int e = WF_CA_E_NOT_READY; e <= WF_CA_E_CONFIG; e++)
        if (m->sign_err[e])
            wf_strbuf_printf(b, "citadel_server_csr_sign_err_count{error=\"%s\"} %llu\n",
                             wf_ca_err_name((wf_ca_err)e), (unsigned long long)m->sign_err[e]);
    counter(b, "citadel_server_success_cert_issuance_count",
            "The number of certificates issuances that have succeeded.", m->success);
    if (s->review) { /* weft's own: not in istiod */
        wf_tr_stats t = wf_tokenreview_stats(s->review);
        counter(b, "weft_pilot_tokenreview_requests_total",
                "TokenReviews sent to the Kubernetes API server.", t.requests);
        counter(b, "weft_pilot_tokenreview_authenticated_total",
                "TokenReviews that authenticated a service account.", t.authenticated);
        counter(b, "weft_pilot_tokenreview_cache_hits_total",
                "Service-account tokens authenticated from the TokenReview cache.", t.cache_hits);
    }
    if (!s->ca)
        return;
    int64_t root = wf_ca_root_not_after(s->ca), chain = wf_ca_signing_not_after(s->ca);
    gauge(b, "citadel_server_root_cert_expiry_timestamp",
          "The unix timestamp, in seconds, when Citadel root cert will expire. A negative time "
          "indicates the cert is expired.",
          (long long)root);
    gauge(b, "citadel_server_root_cert_expiry_seconds",
          "The time remaining, in seconds, before the root cert will expire. A negative value "
          "indicates the cert is expired.",
          (long long)(root - now_s));
    gauge(b, "citadel_server_cert_chain_expiry_timestamp",
          "The unix timestamp, in seconds, when Citadel cert chain will expire. A negative time "
          "indicates the cert is expired.",
          (long long)chain);
    gauge(b, "citadel_server_cert_chain_expiry_seconds",
          "The time remaining, in seconds, before the cert chain will expire. A negative value "
          "indicates the cert is expired.",
          (long long)(chain - now_s));
}
