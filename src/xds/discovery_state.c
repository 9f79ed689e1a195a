/*
 * discovery_state.c - ACK/NACK bookkeeping for SotW xDS: istiod's per-connection watched
 * resources (server) and Envoy's GrpcMuxImpl per-type state (client). See discovery.h.
 */
#include "xds/discovery.h"

#include <stdlib.h>
#include <string.h>

#include "xds/grpc_frame.h"

static const char *str(const char *s)
{
    return s ? s : "";
}

/* Replaces *slot with s (which may be NULL). */
static void put(char **slot, char *s)
{
    free(*slot);
    *slot = s;
}

/* Heap copy of s, NULL for NULL; *oom set when allocation failed. */
static char *dup_opt(const char *s, bool *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d) {
        *oom = true;
    }
    return d;
}

/* ---- interned name lists -------------------------------------------------------------------- */

struct wf_xds_name_list {
    wf_xds_name_list *next; /* bucket chain */
    wf_xds_name_pool *pool; /* the pool listing it; NULL: private, or the pool is gone */
    size_t refs;
    uint64_t hash;
    wf_xds_names names; /* v and the strings live in this allocation */
};

struct wf_xds_name_pool {
    wf_xds_name_list **b; /* nb buckets (a power of two) */
    size_t nb, count;
};

uint64_t wf_xds_names_hash(const wf_xds_names *n)
{
    uint64_t h = 1469598103934665603ull;
    size_t cnt = n ? n->n : 0;
    for (size_t i = 0; i < cnt; i++) {
        const char *s = n->v[i] ? n->v[i] : "";
        for (;; s++) { /* the name and its NUL */
            h ^= (unsigned char)*s;
            h *= 1099511628211ull;
            if (!*s)
                break;
        }
    }
    const unsigned char *c = (const unsigned char *)&cnt;
    for (size_t i = 0; i < sizeof cnt; i++) {
        h ^= c[i];
        h *= 1099511628211ull;
    }
    return h;
}

wf_xds_name_pool *wf_xds_name_pool_new(void)
{
    wf_xds_name_pool *p = calloc(1, sizeof *p);
    if (p && !(p->b = calloc(p->nb = 64, sizeof *p->b))) {
        free(p);
        return NULL;
    }
    return p;
}

void wf_xds_name_pool_free(wf_xds_name_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nb; i++) {
        for (wf_xds_name_list *l = p->b[i], *next; l; l = next) {
            next = l->next;
            l->pool = NULL; /* still held by watches: freed with the last reference */
            l->next = NULL;
        }
    }
    free(p->b);
    free(p);
}

size_t wf_xds_name_pool_count(const wf_xds_name_pool *p)
{
    return p ? p->count : 0;
}

static bool names_equal(const wf_xds_names *a, const wf_xds_names *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(str(a->v[i]), str(b->v[i])) != 0)
            return false;
    return true;
}

/* A new list holding a copy of names in one allocation. NULL on OOM. */
static wf_xds_name_list *list_new(const wf_xds_names *names, uint64_t hash)
{
    size_t bytes = 0;
    for (size_t i = 0; i < names->n; i++)
        bytes += strlen(str(names->v[i])) + 1;
    wf_xds_name_list *l = malloc(sizeof *l + names->n * sizeof(char *) + bytes);
    if (!l)
        return NULL;
    *l = (wf_xds_name_list){.refs = 1, .hash = hash, .names.n = names->n};
    l->names.v = (char **)(l + 1);
    char *w = (char *)(l->names.v + names->n);
    for (size_t i = 0; i < names->n; i++) {
        size_t k = strlen(str(names->v[i])) + 1;
        memcpy(w, str(names->v[i]), k);
        l->names.v[i] = w;
        w += k;
    }
    return l;
}

static void pool_grow(wf_xds_name_pool *p)
{
    size_t nb = p->nb * 2;
    wf_xds_name_list **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains; still correct */
    for (size_t i = 0; i < p->nb; i++) {
        for (wf_xds_name_list *l = p->b[i], *next; l; l = next) {
            next = l->next;
            l->next = b[l->hash & (nb - 1)];
            b[l->hash & (nb - 1)] = l;
        }
    }
    free(p->b);
    p->b = b;
    p->nb = nb;
}

/* The list for names: the pool's (one more reference) or a new one. NULL on OOM. */
static wf_xds_name_list *list_get(wf_xds_name_pool *p, const wf_xds_names *names, uint64_t hash)
{
    if (p) {
        for (wf_xds_name_list *l = p->b[hash & (p->nb - 1)]; l; l = l->next) {
            if (l->hash == hash && names_equal(&l->names, names)) {
                l->refs++;
                return l;
            }
        }
    }
    wf_xds_name_list *l = list_new(names, hash);
    if (l && p) {
        if (p->count >= p->nb)
            pool_grow(p);
        l->pool = p;
        l->next = p->b[hash & (p->nb - 1)];
        p->b[hash & (p->nb - 1)] = l;
        p->count++;
    }
    return l;
}

static void list_unref(wf_xds_name_list *l)
{
    if (!l || --l->refs > 0)
        return;
    wf_xds_name_pool *p = l->pool;
    if (p) {
        wf_xds_name_list **pp = &p->b[l->hash & (p->nb - 1)];
        while (*pp && *pp != l)
            pp = &(*pp)->next;
        if (*pp)
            *pp = l->next;
        p->count--;
    }
    free(l);
}

/* ---- server -------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, de-duplicated pointer copy of n (borrowed strings). NULL with *m 0 when empty. */
static char **sorted_set(const wf_xds_names *n, size_t *m, bool *oom)
{
    *m = 0;
    char **v = n->n ? malloc(n->n * sizeof *v) : NULL;
    if (n->n && !v) {
        *oom = true;
        return NULL;
    }
    if (n->n) {
        memcpy(v, n->v, n->n * sizeof *v);
        qsort(v, n->n, sizeof *v, cmp_str);
    }
    for (size_t i = 0; i < n->n; i++) {
        if (*m == 0 || strcmp(v[*m - 1], v[i]) != 0) {
            v[(*m)++] = v[i];
        }
    }
    return v;
}

/* Whether a and b hold the same names as sets. On allocation failure, "different" (the
 * server then responds, which is always safe). */
static bool same_set(const wf_xds_names *a, const wf_xds_names *b)
{
    bool oom = false;
    size_t na, nb;
    if (names_equal(a, b)) {
        return true; /* the usual case, without sorting */
    }
    char **va = sorted_set(a, &na, &oom);
    char **vb = sorted_set(b, &nb, &oom);
    bool same = !oom && na == nb;
    for (size_t i = 0; same && i < na; i++) {
        same = strcmp(va[i], vb[i]) == 0;
    }
    free(va);
    free(vb);
    return same;
}

wf_xds_req_kind wf_xds_watch_classify(const wf_xds_watch *w, const wf_xds_request *req)
{
    if (!w->watched || !req->response_nonce || !*req->response_nonce) {
        return WF_XDS_REQ_INITIAL;
    }
    if (strcmp(req->response_nonce, str(w->nonce_sent)) != 0) {
        return WF_XDS_REQ_STALE_NONCE;
    }
    if (req->has_error) {
        return WF_XDS_REQ_NACK;
    }
    return same_set(&w->names, &req->resource_names) ? WF_XDS_REQ_ACK : WF_XDS_REQ_RESOURCE_CHANGE;
}

wf_xds_sync wf_xds_watch_sync(const wf_xds_watch *w)
{
    if (w->nacked) {
        return WF_XDS_SYNC_ERROR;
    }
    if (!w->nonce_sent || !*w->nonce_sent) {
        return WF_XDS_SYNC_NOT_SENT;
    }
    return strcmp(str(w->nonce_acked), w->nonce_sent) == 0 ? WF_XDS_SYNC_SYNCED : WF_XDS_SYNC_STALE;
}

static void stamp(wf_xds_watch *w, wf_xds_sync before, int64_t now_ms)
{
    if (wf_xds_watch_sync(w) != before) {
        w->changes++;
        w->sync_since_ms = now_ms;
    }
}

void wf_xds_watch_free(wf_xds_watch *w)
{
    wf_xds_name_pool *pool = w->pool;
    list_unref(w->list);
    free(w->version_sent);
    free(w->nonce_sent);
    free(w->version_acked);
    free(w->nonce_acked);
    free(w->error_message);
    memset(w, 0, sizeof *w);
    w->pool = pool;
}

/* Makes l (a reference passed in, NULL = no names) the watch's names. */
static void watch_take_list(wf_xds_watch *w, wf_xds_name_list *l)
{
    list_unref(w->list);
    w->list = l;
    w->names = l ? l->names : (wf_xds_names){0};
    w->names_hash = l ? l->hash : wf_xds_names_hash(&w->names);
}

/* The list for names (NULL for none). 0, or WF_XDS_E_NOMEM. */
static int list_for(wf_xds_watch *w, const wf_xds_names *names, wf_xds_name_list **out)
{
    *out = NULL;
    if (names->n == 0)
        return WF_XDS_OK;
    *out = list_get(w->pool, names, wf_xds_names_hash(names));
    return *out ? WF_XDS_OK : WF_XDS_E_NOMEM;
}

int wf_xds_watch_set_names(wf_xds_watch *w, const wf_xds_names *names)
{
    wf_xds_name_list *l;
    if (names->v == w->names.v && names->n == w->names.n)
        return WF_XDS_OK;
    if (list_for(w, names, &l))
        return WF_XDS_E_NOMEM;
    watch_take_list(w, l);
    return WF_XDS_OK;
}

/* INITIAL: a fresh watch on names (istiod's NewWatchedResource). */
static void watch_reset(wf_xds_watch *w, wf_xds_name_list *l)
{
    uint64_t changes = w->changes;
    int64_t since = w->sync_since_ms;
    wf_xds_watch_free(w);
    w->watched = true;
    watch_take_list(w, l);
    w->changes = changes;
    w->sync_since_ms = since;
}

/* An ACK of nonce/version (both taken over, version may be NULL): no error any more. */
static void record_ack(wf_xds_watch *w, char *nonce, char *version)
{
    put(&w->nonce_acked, nonce);
    put(&w->version_acked, version);
    put(&w->error_message, NULL);
    w->nacked = false;
    w->error_code = 0;
}

static int on_ack(wf_xds_watch *w, const wf_xds_request *req, wf_xds_name_list *l)
{
    bool oom = false;
    char *nonce = dup_opt(req->response_nonce, &oom);
    char *version = dup_opt(req->version_info, &oom);
    if (oom) {
        free(nonce);
        free(version);
        return WF_XDS_E_NOMEM;
    }
    record_ack(w, nonce, version);
    watch_take_list(w, l);
    return WF_XDS_OK;
}

static int on_nack(wf_xds_watch *w, const wf_xds_request *req)
{
    bool oom = false;
    char *msg = dup_opt(str(req->error_detail.message), &oom);
    if (oom) {
        return WF_XDS_E_NOMEM;
    }
    put(&w->error_message, msg);
    w->nacked = true;
    w->error_code = req->error_detail.code;
    return WF_XDS_OK;
}

int wf_xds_watch_on_request(wf_xds_watch *w, const wf_xds_request *req, int64_t now_ms,
                            wf_xds_req_kind *kind)
{
    wf_xds_sync before = wf_xds_watch_sync(w);
    wf_xds_name_list *l;
    *kind = wf_xds_watch_classify(w, req);
    if (*kind == WF_XDS_REQ_STALE_NONCE) {
        return WF_XDS_OK;
    }
    if (*kind == WF_XDS_REQ_NACK) {
        int rc = on_nack(w, req);
        stamp(w, before, now_ms);
        return rc;
    }
    if (list_for(w, &req->resource_names, &l)) {
        return WF_XDS_E_NOMEM;
    }
    w->has_names_key = false; /* the caller sets the key of the new names */
    if (*kind == WF_XDS_REQ_INITIAL) {
        watch_reset(w, l);
    } else if (on_ack(w, req, l)) {
        list_unref(l);
        return WF_XDS_E_NOMEM;
    }
    stamp(w, before, now_ms);
    return WF_XDS_OK;
}

void wf_xds_watch_set_names_key(wf_xds_watch *w, bool names_ok, uint64_t key)
{
    w->has_names_key = names_ok;
    w->names_key = names_ok ? key : 0;
}

int wf_xds_watch_ack_peeked(wf_xds_watch *w, const wf_xds_req_peek *p, int64_t now_ms)
{
    if (!p->simple || !p->names_ok || !w->watched || !w->has_names_key ||
        w->names_key != p->names_key || !w->nonce_sent || strlen(w->nonce_sent) != p->nonce_len ||
        memcmp(w->nonce_sent, p->nonce, p->nonce_len) != 0) {
        return 0;
    }
    wf_xds_sync before = wf_xds_watch_sync(w);
    char *nonce = strndup(p->nonce, p->nonce_len);
    char *version = p->version ? strndup(p->version, p->version_len) : NULL;
    if (!nonce || (p->version && !version)) {
        free(nonce);
        free(version);
        return WF_XDS_E_NOMEM;
    }
    record_ack(w, nonce, version); /* as on_ack, with the names (the same bytes) kept */
    stamp(w, before, now_ms);
    return 1;
}

int wf_xds_watch_on_sent(wf_xds_watch *w, const char *version, const char *nonce, int64_t now_ms)
{
    bool oom = false;
    wf_xds_sync before = wf_xds_watch_sync(w);
    char *v = dup_opt(str(version), &oom);
    char *n = dup_opt(str(nonce), &oom);
    if (oom) {
        free(v);
        free(n);
        return WF_XDS_E_NOMEM;
    }
    put(&w->version_sent, v);
    put(&w->nonce_sent, n);
    stamp(w, before, now_ms);
    return WF_XDS_OK;
}

const char *wf_xds_sync_name(wf_xds_sync s)
{
    static const char *const names[] = {"NOT SENT", "SYNCED", "STALE", "ERROR"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "UNKNOWN";
}

const char *wf_xds_req_kind_name(wf_xds_req_kind k)
{
    static const char *const names[] = {"INITIAL", "ACK", "NACK", "STALE_NONCE", "RESOURCE_CHANGE"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "UNKNOWN";
}

/* ---- client -------------------------------------------------------------------------------- */

int wf_xds_client_init(wf_xds_client_type *c, const char *type_url)
{
    memset(c, 0, sizeof *c);
    c->type_url = strdup(str(type_url));
    return c->type_url ? WF_XDS_OK : WF_XDS_E_NOMEM;
}

int wf_xds_client_set_names(wf_xds_client_type *c, const wf_xds_names *names)
{
    wf_xds_names copy;
    if (wf_xds_names_copy(&copy, names)) {
        return WF_XDS_E_NOMEM;
    }
    wf_xds_names_free(&c->names);
    c->names = copy;
    return WF_XDS_OK;
}

void wf_xds_client_stream_reset(wf_xds_client_type *c)
{
    put(&c->nonce, NULL);
}

void wf_xds_client_free(wf_xds_client_type *c)
{
    free(c->type_url);
    free(c->version);
    free(c->nonce);
    wf_xds_names_free(&c->names);
    memset(c, 0, sizeof *c);
}

/* Copies src into dst; the metadata object is shared (one more reference). */
static void copy_node(wf_xds_node *dst, const wf_xds_node *src, bool *oom)
{
    dst->id = dup_opt(src->id, oom);
    dst->cluster = dup_opt(src->cluster, oom);
    dst->metadata = src->metadata ? json_incref(src->metadata) : NULL;
}

/* Builds the request for (version, nonce) and c's names into *out. */
static int build(const wf_xds_client_type *c, const char *version, const char *nonce,
                 const wf_xds_node *node, wf_xds_request *out)
{
    bool oom = false;
    memset(out, 0, sizeof *out);
    out->version_info = dup_opt(version, &oom);
    out->type_url = dup_opt(str(c->type_url), &oom);
    out->response_nonce = dup_opt(nonce, &oom);
    if (node) {
        out->has_node = true;
        copy_node(&out->node, node, &oom);
    }
    if (oom || wf_xds_names_copy(&out->resource_names, &c->names)) {
        wf_xds_request_free(out);
        return WF_XDS_E_NOMEM;
    }
    return WF_XDS_OK;
}

int wf_xds_client_request(const wf_xds_client_type *c, const wf_xds_node *node, wf_xds_request *out)
{
    return build(c, c->version, c->nonce, node, out);
}

/* Sets c's version (when version is non-NULL) and nonce; out is freed on failure. */
static int commit(wf_xds_client_type *c, const char *version, const char *nonce,
                  wf_xds_request *out)
{
    bool oom = false;
    char *v = version ? dup_opt(version, &oom) : NULL;
    char *n = dup_opt(nonce, &oom);
    if (oom) {
        free(v);
        free(n);
        wf_xds_request_free(out);
        return WF_XDS_E_NOMEM;
    }
    if (version) {
        put(&c->version, v);
    }
    put(&c->nonce, n);
    return WF_XDS_OK;
}

int wf_xds_client_ack(wf_xds_client_type *c, const wf_xds_response *resp, wf_xds_request *out)
{
    const char *version = str(resp->version_info);
    int rc = build(c, version, resp->nonce, NULL, out);
    return rc ? rc : commit(c, version, str(resp->nonce), out);
}

int wf_xds_client_nack(wf_xds_client_type *c, const wf_xds_response *resp, const char *message,
                       wf_xds_request *out)
{
    int rc = build(c, c->version, resp->nonce, NULL, out);
    if (rc) {
        return rc;
    }
    out->has_error = true;
    out->error_detail.code = WF_GRPC_INTERNAL;
    out->error_detail.message = strdup(str(message));
    if (!out->error_detail.message) {
        wf_xds_request_free(out);
        return WF_XDS_E_NOMEM;
    }
    return commit(c, NULL, str(resp->nonce), out);
}
