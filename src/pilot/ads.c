/*
 * ads.c - the xDS server: connections, SotW requests and responses, pushes, metrics.
 * Delta streams are in delta.c. See ads.h.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/sds.h"
#include "xds/grpc_frame.h"

/* Istio's buckets (pilot/pkg/xds/monitoring.go). */
static const double push_buckets[] = {.01, .1, 1, 3, 5, 10, 20, 30};
static const double conv_buckets[] = {.1, .5, 1, 3, 5, 10, 20, 30};
#define NBUCKETS(a) (sizeof(a) / sizeof((a)[0]))

int64_t wf_ads_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t wf_ads_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void wf_ads_hist_observe(wf_ads_hist *h, double v)
{
    size_t i = 0;
    while (i < h->n_bounds && v > h->bounds[i]) {
        i++;
    }
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

static uint64_t rng_next(wf_ads *a)
{
    uint64_t s1 = a->rng[0];
    const uint64_t s0 = a->rng[1];
    a->rng[0] = s0;
    s1 ^= s1 << 23;
    a->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return a->rng[1] + s0;
}

void wf_ads_nonce(wf_ads *a, char *buf)
{
    uint64_t hi = rng_next(a), lo = rng_next(a);
    hi = (hi & ~0xf000ull) | 0x4000ull;                        /* version 4 */
    lo = (lo & 0x3fffffffffffffffull) | 0x8000000000000000ull; /* variant */
    snprintf(buf, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(hi >> 32),
             (unsigned)((hi >> 16) & 0xffff), (unsigned)(hi & 0xffff), (unsigned)(lo >> 48),
             (unsigned long long)(lo & 0xffffffffffffull));
}

/* ---- connections ---------------------------------------------------------------------------- */

static void type_free(wf_ads_type *t)
{
    wf_xds_watch_free(&t->w);
    wf_delta_type_free(t);
}

static void conn_free(wf_ads_conn *c)
{
    wf_ads_dequeue(c);
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        type_free(&c->types[t]);
    }
    if (c->has_proxy) {
        wf_pilot_proxy_free(&c->proxy);
    }
    wf_xds_caller_free(&c->caller);
    free(c->id);
    free(c);
}

static void list_remove(wf_ads *a, size_t i)
{
    memmove(&a->conns[i], &a->conns[i + 1], (a->n_conns - i - 1) * sizeof *a->conns);
    a->n_conns--;
}

static int list_add(wf_ads *a, wf_ads_conn *c)
{
    if (a->n_conns == a->cap_conns) {
        size_t cap = a->cap_conns ? 2 * a->cap_conns : 16;
        wf_ads_conn **v = realloc(a->conns, cap * sizeof *v);
        if (!v) {
            return -1;
        }
        a->conns = v;
        a->cap_conns = cap;
    }
    a->conns[a->n_conns++] = c;
    return 0;
}

/* A reconnecting proxy replaces its retained (disconnected) entries. */
static void drop_retained(wf_ads *a, const char *proxy_id)
{
    for (size_t i = a->n_conns; i-- > 0;) {
        wf_ads_conn *o = a->conns[i];
        if (!o->connected && strcmp(o->proxy.id, proxy_id) == 0) {
            list_remove(a, i);
            conn_free(o);
        }
    }
}

void wf_ads_fail(wf_ads_conn *c, int code, const char *msg)
{
    WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS: closing %s: %d %s", c->id ? c->id : "(no node)", code,
           msg);
    if (c->call) {
        wf_h2_call_finish(c->call, code, msg);
    }
}

void wf_ads_note_rejected(wf_ads *a, const char *node, const char *address, const char *reason)
{
    wf_ads_rejected *r = &a->rejected[a->next_rejected];
    a->next_rejected = (a->next_rejected + 1) % WF_ADS_MAX_REJECTED;
    if (a->n_rejected < WF_ADS_MAX_REJECTED)
        a->n_rejected++;
    r->at_ms = wf_ads_now_ms();
    snprintf(r->node, sizeof r->node, "%s", node);
    snprintf(r->address, sizeof r->address, "%s", address);
    snprintf(r->reason, sizeof r->reason, "%s", reason);
}

size_t wf_ads_rejected_count(const wf_ads *a)
{
    return a->n_rejected;
}

const wf_ads_rejected *wf_ads_rejected_at(const wf_ads *a, size_t i)
{
    if (i >= a->n_rejected)
        return NULL;
    size_t k = (a->next_rejected + WF_ADS_MAX_REJECTED - 1 - i) % WF_ADS_MAX_REJECTED;
    return &a->rejected[k];
}

int wf_ads_on_node(wf_ads_conn *c, bool has_node, const wf_xds_node *node)
{
    wf_ads *a = c->ads;
    char err[256] = "node is required in the first request of a stream";
    const wf_store *store = a->snap ? a->snap->store : NULL;
    if (!has_node || a->opts.proxy_from_node(node, store, &c->proxy, err, sizeof err) != 0) {
        wf_ads_note_rejected(a, has_node && node->id ? node->id : "", c->address, err);
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err);
        return -1;
    }
    if (wf_ads_authorize(c) != 0) {
        wf_pilot_proxy_free(&c->proxy);
        return -1;
    }
    c->has_proxy = true;
    size_t n = strlen(c->proxy.id) + 24;
    c->id = malloc(n);
    if (!c->id || list_add(a, c)) {
        free(c->id);
        c->id = NULL;
        wf_pilot_proxy_free(&c->proxy);
        c->has_proxy = false;
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return -1;
    }
    snprintf(c->id, n, "%s-%llu", c->proxy.id, (unsigned long long)++a->conn_seq);
    drop_retained(a, c->proxy.id);
    /* drop_retained never removes c: it is connected */
    WF_LOG(WF_LC_config, WF_LOG_INFO, "ADS: new %sconnection for node:%s", c->delta ? "delta " : "",
           c->id);
    return 0;
}

/* ---- sending ----------------------------------------------------------------------------------
 */

int wf_ads_send(wf_ads_conn *c, const char *text, size_t len)
{
    int rc = c->call ? wf_h2_call_send(c->call, text, len) : WF_H2_E_CLOSED;
    if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS: send to %s failed (%d, %zu bytes)", c->id, rc, len);
        return -1;
    }
    return 0;
}

/* The snapshot's generation cache, made on first use; NULL with an injected generator (tests)
 * or on OOM. */
static wf_gen_cache *cache_of(wf_ads *a)
{
    if (!a->snap || a->opts.generate != wf_pilot_generate)
        return NULL;
    if (!a->cache) {
        wf_pilot_env env = {.store = a->snap->store,
                            .mesh = a->snap->mesh,
                            .jwks_resolve = a->opts.jwks_resolve,
                            .jwks_arg = a->opts.jwks_arg};
        a->cache = wf_gen_cache_new(&env);
    }
    return a->cache;
}

static void sds_warn(void *ud, const char *line)
{
    (void)ud;
    WF_LOG(WF_LC_config, WF_LOG_WARN, "%s", line);
}

/* SDS with the real generator: istiod's SecretGen logs every failure and counts it in
 * pilot_sds_certificate_errors_total (pilot/sds.h); wf_pilot_generate stays quiet. */
static json_t *sds_gen(wf_ads_conn *c, const wf_xds_names *names)
{
    wf_ads *a = c->ads;
    const wf_sds_report rep = {.warn = sds_warn, .errors = &a->metrics.sds_cert_errors};
    return wf_pilot_sds_secrets(a->snap->store, c->proxy.id, c->proxy.ns, names,
                                (int64_t)time(NULL), &rep);
}

json_t *wf_ads_gen(wf_ads_conn *c, wf_xds_type t, const wf_xds_names *names)
{
    wf_gen_cache *gc = cache_of(c->ads);
    if (gc && t == WF_XDS_SDS)
        return sds_gen(c, names);
    return gc ? wf_gen_cache_json(gc, &c->proxy, t, names)
              : wf_ads_generate(c->ads, &c->proxy, t, names);
}

static int gen_text_of(json_t *res, wf_gen_text *out);

/* The resources of t for c as text (gen_cache.h); with an injected generator its output,
 * serialized. 0 or -1. */
static int gen_text(wf_ads_conn *c, wf_xds_type t, const wf_xds_watch *w, wf_gen_text *out)
{
    wf_gen_cache *gc = cache_of(c->ads);
    const wf_xds_names *names = &w->names;
    if (gc && t == WF_XDS_SDS) {
        json_t *res = sds_gen(c, names);
        return gen_text_of(res, out);
    }
    if (gc) /* the watch keeps the hash of its names: not recomputed per push */
        return wf_gen_cache_text_hashed(gc, &c->proxy, t, names,
                                        w->list ? w->names_hash : wf_xds_names_hash(names), out);
    return gen_text_of(wf_ads_generate(c->ads, &c->proxy, t, names), out);
}

/* res (released) as the text of a response; 0 or -1. */
static int gen_text_of(json_t *res, wf_gen_text *out)
{
    *out = (wf_gen_text){.shared = ""};
    char *txt = res ? json_dumps(res, JSON_COMPACT) : NULL;
    json_decref(res);
    size_t n = txt ? strlen(txt) : 0;
    if (n < 2) {
        free(txt);
        return -1;
    }
    memmove(txt, txt + 1, n - 2);
    txt[n - 2] = '\0';
    *out = (wf_gen_text){.shared = "", .own = txt, .own_len = n - 2};
    out->hash = wf_ads_hash(txt, n - 2);
    return 0;
}

void wf_ads_observe_push(wf_ads_conn *c, wf_xds_type t, uint64_t t0_ns)
{
    wf_ads *a = c->ads;
    a->metrics.pushes[t]++;
    wf_ads_hist_observe(&a->metrics.push_time[t], (double)(uv_hrtime() - t0_ns) / 1e9);
}

/* Sends the SotW response for r: the resources are not copied. The cache's shared text is
 * referenced (wf_h2_buf) and the proxy's own part is handed over (r->own is taken: NULL
 * afterwards); only the envelope around them is copied. *len: the message's bytes. 0 or -1. */
static int sotw_send(wf_ads_conn *c, const char *version, wf_gen_text *r, const char *type_url,
                     const char *nonce, size_t *len)
{
    char head[192], tail[256];
    bool any = r->shared_len || r->own_len;
    int hn = snprintf(head, sizeof head, "{\"version_info\":\"%s\",%s", version,
                      any ? "\"resources\":[" : "");
    int tn = snprintf(tail, sizeof tail, "%s\"type_url\":\"%s\",\"nonce\":\"%s\"}", any ? "]," : "",
                      type_url, nonce);
    if (hn < 0 || (size_t)hn >= sizeof head || tn < 0 || (size_t)tn >= sizeof tail)
        return -1;
    wf_h2_buf *own = NULL;
    if (r->own_len) {
        own = wf_h2_buf_take(r->own, r->own_len); /* frees r->own when it fails */
        r->own = NULL;
        if (!own)
            return -1;
    }
    wf_h2_piece pc[5];
    size_t n = 0;
    pc[n++] = (wf_h2_piece){.data = head, .len = (size_t)hn};
    if (r->shared_len)
        pc[n++] = r->shared_buf ? (wf_h2_piece){.buf = r->shared_buf, .len = r->shared_len}
                                : (wf_h2_piece){.data = r->shared, .len = r->shared_len};
    if (r->shared_len && r->own_len)
        pc[n++] = (wf_h2_piece){.data = ",", .len = 1};
    if (own)
        pc[n++] = (wf_h2_piece){.buf = own, .len = r->own_len};
    pc[n++] = (wf_h2_piece){.data = tail, .len = (size_t)tn};
    *len = (size_t)hn + r->shared_len + (r->shared_len && r->own_len) + r->own_len + (size_t)tn;
    int rc = c->call ? wf_h2_call_sendv(c->call, pc, n) : WF_H2_E_CLOSED;
    wf_h2_buf_unref(own);
    if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS: send to %s failed (%d, %zu bytes)", c->id, rc,
               *len);
        return -1;
    }
    return 0;
}

int wf_ads_sotw_push(wf_ads_conn *c, wf_xds_type t, bool force)
{
    wf_ads *a = c->ads;
    wf_ads_type *ty = &c->types[t];
    uint64_t t0 = uv_hrtime();
    wf_gen_text r;
    if (gen_text(c, t, &ty->w, &r) != 0) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "ADS:%s: generation failed for %s", wf_xds_type_short(t),
               c->id);
        return -1;
    }
    if (!force && ty->sent_any && r.hash == ty->sent_hash) {
        wf_gen_text_free(&r);
        return 0;
    }
    char nonce[40];
    size_t len = 0;
    wf_ads_nonce(a, nonce);
    int rc = sotw_send(c, a->version, &r, wf_xds_type_url(t), nonce, &len);
    uint64_t h = r.hash;
    wf_gen_text_free(&r);
    if (rc || wf_xds_watch_on_sent(&ty->w, a->version, nonce, wf_ads_now_ms())) {
        return -1;
    }
    ty->sent_any = true;
    ty->sent_hash = h;
    ty->sent_at_ms = wf_ads_now_ms();
    wf_ads_observe_push(c, t, t0);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: PUSH for node:%s version:%s nonce:%s bytes:%zu",
           wf_xds_type_short(t), c->id, a->version, nonce, len);
    return 1;
}

void wf_ads_log_nack(wf_ads_conn *c, wf_xds_type t, int code, const char *msg)
{
    c->ads->metrics.rejects[t]++;
    WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS:%s: ACK ERROR %s %d:%s", wf_xds_type_short(t), c->id,
           code, msg ? msg : "");
}

static void sotw_request(wf_ads_conn *c, const wf_xds_request *req, const wf_xds_req_peek *pk)
{
    int t = wf_xds_type_from_url(req->type_url);
    wf_xds_req_kind kind;
    if (t < 0) {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS: %s: ignoring unknown type %s", c->id,
               req->type_url);
        return;
    }
    if (wf_xds_watch_on_request(&c->types[t].w, req, wf_ads_now_ms(), &kind)) {
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (kind == WF_XDS_REQ_INITIAL || kind == WF_XDS_REQ_ACK || kind == WF_XDS_REQ_RESOURCE_CHANGE)
        wf_xds_watch_set_names_key(&c->types[t].w, pk->names_ok, pk->names_key);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: REQ %s %s resources:%zu nonce:%s version:%s",
           wf_xds_type_short(t), c->id, wf_xds_req_kind_name(kind), req->resource_names.n,
           req->response_nonce ? req->response_nonce : "",
           req->version_info ? req->version_info : "");
    if (kind == WF_XDS_REQ_NACK) {
        wf_ads_log_nack(c, t, req->error_detail.code, req->error_detail.message);
    } else if (kind == WF_XDS_REQ_INITIAL || kind == WF_XDS_REQ_RESOURCE_CHANGE) {
        wf_ads_enqueue(c, 0, 1u << t, 0); /* answered from the push queue */
    }
}

static void sotw_message(wf_ads_conn *c, const json_t *j, const wf_xds_req_peek *pk)
{
    wf_xds_request req;
    wf_xds_err err;
    if (wf_xds_request_decode(j, &req, &err) != 0) {
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err.text);
        return;
    }
    if (c->has_proxy || wf_ads_on_node(c, req.has_node, &req.node) == 0) {
        sotw_request(c, &req, pk);
    }
    wf_xds_request_free(&req);
}

/* ---- h2 handlers ------------------------------------------------------------------------------
 */

/* The other service a call was opened for, NULL for ADS. */
static const wf_ads_service *service_of(const wf_ads *a, wf_h2_call *call)
{
    const char *path = wf_h2_call_path(call);
    for (size_t i = 0; i < a->opts.n_services; i++)
        if (path == a->services[i].path || (path && strcmp(path, a->services[i].path) == 0))
            return &a->services[i];
    return NULL;
}

static void on_call(wf_h2_call *call, void *ud)
{
    wf_ads *a = ud;
    const wf_ads_service *svc = service_of(a, call);
    if (svc) {
        if (svc->h.on_call)
            svc->h.on_call(call, svc->h.ud);
        return;
    }
    wf_ads_conn *c = calloc(1, sizeof *c);
    if (!c) {
        wf_h2_call_finish(call, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    c->ads = a;
    for (int t = 0; t < WF_XDS_NTYPES; t++)
        c->types[t].w.pool = a->names;
    c->delta = strcmp(wf_h2_call_path(call), WF_XDS_DELTA_PATH) == 0;
    /* unknown (""): the debug view then shows no address */
    (void)wf_h2_conn_peer(wf_h2_call_conn(call), c->address, sizeof c->address);
    c->call = call;
    c->connected = true;
    c->connected_at_ms = wf_ads_now_ms();
    a->live_calls++;
    wf_h2_call_set_data(call, c);
    (void)wf_ads_authenticate(c, call); /* a refusal ends the call (XDS_AUTH, secure port) */
}

/* The ACK fast path (discovery.h): an ACK of the last response whose resource_names are the
 * bytes the watch's names came from is recorded without decoding the request. 1 when done. */
static int sotw_fast_ack(wf_ads_conn *c, const wf_xds_req_peek *pk)
{
    int t =
        pk->simple && c->has_proxy ? wf_xds_type_from_url_n(pk->type_url, pk->type_url_len) : -1;
    if (t < 0)
        return 0;
    wf_xds_watch *w = &c->types[t].w;
    int rc = wf_xds_watch_ack_peeked(w, pk, wf_ads_now_ms());
    if (rc < 0) {
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return 1;
    }
    if (rc > 0)
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: REQ %s ACK resources:%zu nonce:%s version:%s",
               wf_xds_type_short(t), c->id, w->names.n, w->nonce_acked,
               w->version_acked ? w->version_acked : "");
    return rc;
}

static void on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    wf_ads *a = ud;
    const wf_ads_service *svc = service_of(a, call);
    if (svc) {
        if (svc->h.on_message)
            svc->h.on_message(call, msg, len, svc->h.ud);
        return;
    }
    wf_ads_conn *c = wf_h2_call_data(call);
    json_t *j;
    wf_xds_err err;
    wf_xds_req_peek pk;
    if (!c || a->closing || c->refused) {
        return;
    }
    if (!c->delta) {
        wf_xds_request_peek((const char *)msg, len, &pk);
        if (sotw_fast_ack(c, &pk))
            return;
    }
    if (wf_xds_parse_text((const char *)msg, len, &j, &err) != 0) {
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err.text);
        return;
    }
    if (c->delta) {
        wf_delta_on_message(c, j);
    } else {
        sotw_message(c, j, &pk);
    }
    json_decref(j);
}

static void maybe_free(wf_ads *a);

static void on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    wf_ads *a = ud;
    const wf_ads_service *svc = service_of(a, call);
    if (svc) {
        if (svc->h.on_end)
            svc->h.on_end(call, end, svc->h.ud);
        return;
    }
    wf_ads_conn *c = wf_h2_call_data(call);
    if (!c) {
        return;
    }
    a->live_calls--;
    c->call = NULL;
    c->connected = false;
    c->disconnected_at_ms = wf_ads_now_ms();
    if (c->has_proxy) {
        WF_LOG(WF_LC_config, WF_LOG_INFO, "ADS: %s terminated (%s%s%s)", c->id,
               wf_h2_end_reason_str(end->reason), *end->grpc_message ? ": " : "",
               end->grpc_message);
    }
    if (!c->has_proxy || a->closing) {
        for (size_t i = 0; i < a->n_conns; i++) {
            if (a->conns[i] == c) {
                list_remove(a, i);
                break;
            }
        }
        conn_free(c);
    }
    maybe_free(a);
}

/* ---- pushes -----------------------------------------------------------------------------------
 */

void wf_ads_set_snapshot(wf_ads *a, wf_snapshot *snap)
{
    wf_gen_cache *old = a->cache;
    a->cache = NULL;
    if (old && snap && a->opts.generate == wf_pilot_generate) {
        wf_pilot_env env = {.store = snap->store,
                            .mesh = snap->mesh,
                            .jwks_resolve = a->opts.jwks_resolve,
                            .jwks_arg = a->opts.jwks_arg};
        a->cache = wf_gen_cache_carry(old, &env, (const char *const *)snap->changed,
                                      snap->n_changed, snap->mesh_changed);
    }
    wf_gen_cache_free(old);
    wf_snapshot_unref(a->snap);
    a->snap = snap;
}

/* ---- lifecycle and queries --------------------------------------------------------------------
 */

static void on_reap(uv_timer_t *t)
{
    wf_ads *a = t->data;
    int64_t now = wf_ads_now_ms();
    for (size_t i = a->n_conns; i-- > 0;) {
        wf_ads_conn *c = a->conns[i];
        if (!c->connected && now - c->disconnected_at_ms >= (int64_t)a->opts.retention_ms) {
            list_remove(a, i);
            conn_free(c);
        }
    }
}

static void free_ads(wf_ads *a)
{
    for (size_t i = 0; i < a->n_conns; i++) {
        conn_free(a->conns[i]);
    }
    free(a->conns);
    wf_ads_set_snapshot(a, NULL);
    wf_xds_name_pool_free(a->names);
    free(a);
}

static void maybe_free(wf_ads *a)
{
    if (a->closing && a->live_calls == 0 && a->open_handles == 0) {
        free_ads(a);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    wf_ads *a = h->data;
    a->open_handles--;
    maybe_free(a);
}

void wf_ads_close(wf_ads *a)
{
    if (!a || a->closing) {
        return;
    }
    a->closing = true;
    if (a->h2) {
        wf_h2_server_close(a->h2);
    }
    if (a->h2_secure)
        wf_h2_server_close(a->h2_secure);
    uv_close((uv_handle_t *)&a->reaper, on_handle_closed);
    uv_close((uv_handle_t *)&a->q_idle, on_handle_closed);
    uv_close((uv_handle_t *)&a->q_timer, on_handle_closed);
}

/* Why listening failed, in the kernel's words: a probe bind of the same address (the transport
 * only says that it failed). Returns a static string. */
static const char *why_not(const char *ip, int port, const char *pipe)
{
    struct sockaddr_storage sa = {0};
    socklen_t len;
    if (pipe) {
        struct sockaddr_un *un = (struct sockaddr_un *)&sa;
        un->sun_family = AF_UNIX;
        if (strlen(pipe) >= sizeof un->sun_path)
            return "path too long for a Unix socket";
        strcpy(un->sun_path, pipe);
        len = sizeof *un;
    } else if (uv_ip4_addr(ip, port, (struct sockaddr_in *)&sa) == 0) {
        len = sizeof(struct sockaddr_in);
    } else if (uv_ip6_addr(ip, port, (struct sockaddr_in6 *)&sa) == 0) {
        len = sizeof(struct sockaddr_in6);
    } else {
        return "not an IP address";
    }
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return strerror(errno);
    int one = 1;
    if (!pipe)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = bind(fd, (struct sockaddr *)&sa, len);
    int e = errno;
    close(fd);
    if (rc == 0) {
        if (pipe)
            unlink(pipe);
        return "unknown reason";
    }
    return strerror(e);
}

/* The methods served on the one xDS listener, as istiod serves both on 15010, and the other
 * services hosted there. */
static void set_paths(wf_ads *a)
{
    size_t n = 0;
    a->paths[n++] = WF_XDS_ADS_PATH;
    a->paths[n++] = WF_XDS_DELTA_PATH;
    for (size_t i = 0; i < a->opts.n_services; i++)
        a->paths[n++] = a->services[i].path;
    a->paths[n] = NULL;
}

static wf_h2_opts xds_opts(wf_ads *a)
{
    return (wf_h2_opts){
        .max_msg = a->opts.max_msg,
        .max_send_queue = (size_t)256 * 1024 * 1024,
        .ping_interval_ms = a->opts.ping_interval_ms,
        .ping_timeout_ms = a->opts.ping_timeout_ms,
        .paths = a->paths,
    };
}

int wf_ads_listen_secure(wf_ads *a, const char *ip, int port, wf_tls_ctx *tls, char *err,
                         size_t cap)
{
    wf_h2_opts o = xds_opts(a);
    wf_h2_handlers h = {.on_call = on_call, .on_message = on_message, .on_end = on_end, .ud = a};
    if (wf_h2_server_start(a->loop, ip, port, &o, &h, &a->h2_secure) != 0) {
        a->h2_secure = NULL;
        snprintf(err, cap, "cannot listen for secure xDS on %s:%d: %s", ip, port,
                 why_not(ip, port, NULL));
        return -1;
    }
    wf_h2_server_set_tls(a->h2_secure, tls);
    return 0;
}

void wf_ads_set_secure_tls(wf_ads *a, wf_tls_ctx *tls)
{
    if (a->h2_secure)
        wf_h2_server_set_tls(a->h2_secure, tls);
}

int wf_ads_secure_port(const wf_ads *a)
{
    return a->h2_secure ? wf_h2_server_port(a->h2_secure) : -1;
}

static int listen_xds(wf_ads *a, char *err, size_t cap)
{
    set_paths(a);
    wf_h2_opts o = {
        .max_msg = a->opts.max_msg,
        .max_send_queue = (size_t)256 * 1024 * 1024,
        .ping_interval_ms = a->opts.ping_interval_ms,
        .ping_timeout_ms = a->opts.ping_timeout_ms,
        .paths = a->paths,
    };
    wf_h2_handlers h = {.on_call = on_call, .on_message = on_message, .on_end = on_end, .ud = a};
    const char *pipe = a->opts.pipe;
    int rc = pipe ? wf_h2_server_start_pipe(a->loop, pipe, &o, &h, &a->h2)
                  : wf_h2_server_start(a->loop, a->opts.ip, a->opts.port, &o, &h, &a->h2);
    if (rc != 0 && pipe) {
        snprintf(err, cap, "cannot listen for xDS on unix:%s: %s", pipe, why_not(NULL, 0, pipe));
        return -1;
    }
    if (rc != 0) {
        snprintf(err, cap, "cannot listen for xDS on %s:%d: %s", a->opts.ip, a->opts.port,
                 why_not(a->opts.ip, a->opts.port, NULL));
        return -1;
    }
    return 0;
}

static void init_metrics(wf_ads_metrics *m)
{
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        m->push_time[t].bounds = push_buckets;
        m->push_time[t].n_bounds = NBUCKETS(push_buckets);
    }
    m->convergence.bounds = conv_buckets;
    m->convergence.n_bounds = NBUCKETS(conv_buckets);
}

int wf_ads_start(uv_loop_t *loop, const wf_ads_opts *opts, wf_ads **out, char *err, size_t cap)
{
    wf_ads *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    a->loop = loop;
    a->opts = *opts;
    if (opts->n_services > WF_ADS_MAX_SERVICES) {
        snprintf(err, cap, "too many gRPC services on the xDS listener");
        free(a);
        return -1;
    }
    for (size_t i = 0; i < opts->n_services; i++)
        a->services[i] = opts->services[i];
    a->opts.services = NULL;
    a->opts.ip = opts->ip ? opts->ip : "127.0.0.1";
    a->opts.retention_ms = opts->retention_ms ? opts->retention_ms : 300000;
    a->opts.generate = opts->generate ? opts->generate : wf_pilot_generate;
    a->opts.proxy_from_node =
        opts->proxy_from_node ? opts->proxy_from_node : wf_pilot_proxy_from_node;
    a->rng[0] = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)a;
    a->rng[1] = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1;
    init_metrics(&a->metrics);
    if (!(a->names = wf_xds_name_pool_new())) {
        snprintf(err, cap, "out of memory");
        free(a);
        return -1;
    }
    uv_timer_init(loop, &a->reaper);
    uv_idle_init(loop, &a->q_idle);
    uv_timer_init(loop, &a->q_timer);
    a->reaper.data = a->q_idle.data = a->q_timer.data = a;
    a->open_handles = 3;
    if (listen_xds(a, err, cap)) {
        wf_ads_close(a);
        return -1;
    }
    uint64_t every = a->opts.retention_ms < 10000 ? 100 : 1000;
    uv_timer_start(&a->reaper, on_reap, every, every);
    *out = a;
    return 0;
}

int wf_ads_port(const wf_ads *a)
{
    return a->h2 ? wf_h2_server_port(a->h2) : -1;
}

wf_snapshot *wf_ads_snapshot(const wf_ads *a)
{
    return a->snap;
}

const char *wf_ads_version(const wf_ads *a)
{
    return a->version;
}

size_t wf_ads_conn_count(const wf_ads *a)
{
    return a->n_conns;
}

const wf_ads_conn *wf_ads_conn_at(const wf_ads *a, size_t i)
{
    return i < a->n_conns ? a->conns[i] : NULL;
}

size_t wf_ads_connected(const wf_ads *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n_conns; i++) {
        n += a->conns[i]->connected;
    }
    return n;
}

const wf_ads_metrics *wf_ads_get_metrics(const wf_ads *a)
{
    return &a->metrics;
}

json_t *wf_ads_generate(const wf_ads *a, const wf_pilot_proxy *p, wf_xds_type t,
                        const wf_xds_names *names)
{
    if (!a->snap) {
        return NULL;
    }
    wf_pilot_env env = {.store = a->snap->store,
                        .mesh = a->snap->mesh,
                        .jwks_resolve = a->opts.jwks_resolve,
                        .jwks_arg = a->opts.jwks_arg};
    return a->opts.generate(&env, p, t, names);
}

int wf_ads_proxy_from_node(const wf_ads *a, const wf_xds_node *node, wf_pilot_proxy *out, char *err,
                           size_t cap)
{
    return a->opts.proxy_from_node(node, a->snap ? a->snap->store : NULL, out, err, cap);
}
