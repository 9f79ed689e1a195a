/*
 * failed_requests.c - GET /failed_requests (weft's own admin endpoint, no Envoy counterpart):
 * the workers' rings of recent failed HTTP requests (stream_info/failed_ring.h) merged, newest
 * first (by the monotonic time each was recorded, at the stream's end), as {"failed_requests":
 * [...]}; ?limit=N keeps the first N. Each entry's keys are Istio's JSON access-log keys (reference
 * §5.3) for the same fields, plus "path_truncated" and "worker".
 *
 * Consistency: each worker's ring is read without a lock while it keeps writing (seqlock per
 * slot): every entry shown is whole, rings are read one after the other, and a request that
 * ended during the read may be missing from the answer.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/server/admin/admin.h"
#include "proxy/server/admin/admin_ops.h"
#include "proxy/stream_info/failed_ring.h"

typedef struct {
    wp_failed_entry e;
    unsigned worker;
} fr_item;

static int newest_first(const void *pa, const void *pb)
{
    const fr_item *a = pa, *b = pb;
    if (a->e.recorded_ns != b->e.recorded_ns)
        return a->e.recorded_ns > b->e.recorded_ns ? -1 : 1;
    if (a->e.seq != b->e.seq)
        return a->e.seq > b->e.seq ? -1 : 1;
    return a->worker < b->worker ? -1 : a->worker > b->worker;
}

static json_t *nonempty(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *entry_json(const fr_item *it)
{
    const wp_failed_entry *e = &it->e;
    char t[40];
    wp_fring_time(e->start_time_us, t, sizeof t);
    json_t *j = json_object();
    if (!j)
        return NULL;
    json_object_set_new(j, "start_time", json_string(t));
    json_object_set_new(j, "method", nonempty(e->method));
    json_object_set_new(j, "authority", nonempty(e->authority));
    json_object_set_new(j, "path", nonempty(e->path));
    json_object_set_new(j, "path_truncated", json_boolean(e->path_truncated));
    json_object_set_new(j, "response_code", json_integer(e->response_code));
    json_object_set_new(j, "response_flags", json_string(e->response_flags));
    json_object_set_new(j, "response_code_details", nonempty(e->details));
    json_object_set_new(j, "route_name", nonempty(e->route_name));
    json_object_set_new(j, "upstream_cluster", nonempty(e->upstream_cluster));
    json_object_set_new(j, "upstream_host", nonempty(e->upstream_host));
    json_object_set_new(j, "downstream_remote_address", nonempty(e->downstream_remote));
    json_object_set_new(j, "duration", json_integer((json_int_t)e->duration_ms));
    json_object_set_new(j, "x_request_id", nonempty(e->request_id));
    json_object_set_new(j, "worker", json_integer(it->worker));
    return j;
}

/* ?limit=N: a decimal count; absent = all. Returns false on a bad value. */
static bool parse_limit(const admin_req *r, size_t *limit)
{
    char v[32];
    const char *s = wp_admin_qparam(r, "limit", v, sizeof v);
    if (!s)
        return true;
    char *end = NULL;
    if (!s[0] || s[0] == '-')
        return false;
    unsigned long long n = strtoull(s, &end, 10);
    if (*end)
        return false;
    *limit = (size_t)n;
    return true;
}

json_t *wp_failed_requests_json(const wp_server *srv, size_t limit)
{
    size_t cap = (size_t)srv->nworkers * WP_FRING_SLOTS;
    fr_item *items = cap ? calloc(cap, sizeof *items) : NULL;
    wp_failed_entry *buf = malloc(WP_FRING_SLOTS * sizeof *buf);
    json_t *list = json_array();
    json_t *root = json_object();
    if ((cap && !items) || !buf || !list || !root) {
        free(items);
        free(buf);
        json_decref(list);
        json_decref(root);
        return NULL;
    }
    size_t n = 0;
    for (unsigned w = 0; srv->workers && w < srv->nworkers; w++) {
        size_t got = wp_fring_read(&srv->workers[w].failed, buf, WP_FRING_SLOTS);
        for (size_t i = 0; i < got; i++) {
            items[n].e = buf[i];
            items[n++].worker = w;
        }
    }
    qsort(items, n, sizeof *items, newest_first);
    for (size_t i = 0; i < n && i < limit; i++)
        json_array_append_new(list, entry_json(&items[i]));
    json_object_set_new(root, "failed_requests", list);
    free(items);
    free(buf);
    return root;
}

void wp_admin_failed_requests(wp_admin *a, const admin_req *r, admin_resp *o)
{
    size_t limit = SIZE_MAX;
    if (!parse_limit(r, &limit)) {
        o->status = 400;
        wf_strbuf_puts(&o->body, "usage: /failed_requests?limit=N\n");
        return;
    }
    json_t *root = wp_failed_requests_json(a->srv, limit);
    if (!root) {
        o->status = 500;
        wf_strbuf_puts(&o->body, "out of memory\n");
        return;
    }
    wp_admin_put_json(o, root);
}
