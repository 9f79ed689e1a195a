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
    wf_xds_names_free(&w->names);
    free(w->version_sent);
    free(w->nonce_sent);
    free(w->version_acked);
    free(w->nonce_acked);
    free(w->error_message);
    memset(w, 0, sizeof *w);
}

/* INITIAL: a fresh watch on names (istiod's NewWatchedResource). */
static void watch_reset(wf_xds_watch *w, wf_xds_names *names)
{
    uint64_t changes = w->changes;
    int64_t since = w->sync_since_ms;
    wf_xds_watch_free(w);
    w->watched = true;
    w->names = *names;
    w->changes = changes;
    w->sync_since_ms = since;
}

static int on_ack(wf_xds_watch *w, const wf_xds_request *req, wf_xds_names *names)
{
    bool oom = false;
    char *nonce = dup_opt(req->response_nonce, &oom);
    char *version = dup_opt(req->version_info, &oom);
    if (oom) {
        free(nonce);
        free(version);
        return WF_XDS_E_NOMEM;
    }
    put(&w->nonce_acked, nonce);
    put(&w->version_acked, version);
    put(&w->error_message, NULL);
    w->nacked = false;
    w->error_code = 0;
    wf_xds_names_free(&w->names);
    w->names = *names;
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
    wf_xds_names names = {0};
    *kind = wf_xds_watch_classify(w, req);
    if (*kind == WF_XDS_REQ_STALE_NONCE) {
        return WF_XDS_OK;
    }
    if (*kind == WF_XDS_REQ_NACK) {
        int rc = on_nack(w, req);
        stamp(w, before, now_ms);
        return rc;
    }
    if (wf_xds_names_copy(&names, &req->resource_names)) {
        return WF_XDS_E_NOMEM;
    }
    if (*kind == WF_XDS_REQ_INITIAL) {
        watch_reset(w, &names);
    } else if (on_ack(w, req, &names)) {
        wf_xds_names_free(&names);
        return WF_XDS_E_NOMEM;
    }
    stamp(w, before, now_ms);
    return WF_XDS_OK;
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
