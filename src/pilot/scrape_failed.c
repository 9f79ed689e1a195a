/*
 * scrape_failed.c - GET /ui/api/failed: on-demand fetches of the proxies' failed requests
 * (scrape_failed.h).
 */
#include "pilot/scrape_failed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "explain/explain.h"
#include "pilot/debug_internal.h"
#include "http/http_fetch.h"

typedef struct fp_entry {
    char *proxy_id;
    uint64_t fetched_ms; /* loop time of the answer; 0 = never */
    bool ok;
    char error[160];
    json_t *requests;     /* the proxy's "failed_requests" array */
    wf_http_fetch *fetch; /* in flight */
    struct wf_failed *owner;
    struct fp_entry *next;
} fp_entry;

struct wf_failed {
    uv_loop_t *loop;
    wf_scrape *scrape;
    fp_entry *entries; /* one per proxy asked about recently */
    size_t n_entries;
    unsigned inflight;
};

wf_failed *wf_failed_new(uv_loop_t *loop, wf_scrape *scrape)
{
    wf_failed *f = calloc(1, sizeof *f);
    if (f) {
        f->loop = loop;
        f->scrape = scrape;
    }
    return f;
}

static void entry_free(fp_entry *e)
{
    wf_http_fetch_cancel(e->fetch);
    json_decref(e->requests);
    free(e->proxy_id);
    free(e);
}

void wf_failed_free(wf_failed *f)
{
    if (!f)
        return;
    for (fp_entry *e = f->entries, *n; e; e = n) {
        n = e->next;
        entry_free(e);
    }
    free(f);
}

/* Entries not asked for long (10 cache periods) are dropped. */
static void sweep(wf_failed *f)
{
    uint64_t now = uv_now(f->loop);
    for (fp_entry **pp = &f->entries; *pp;) {
        fp_entry *e = *pp;
        if (!e->fetch && e->fetched_ms && now - e->fetched_ms > 10 * WF_FAILED_CACHE_MS) {
            *pp = e->next;
            entry_free(e);
            f->n_entries--;
        } else {
            pp = &e->next;
        }
    }
}

static fp_entry *entry_get(wf_failed *f, const char *proxy_id)
{
    for (fp_entry *e = f->entries; e; e = e->next)
        if (strcmp(e->proxy_id, proxy_id) == 0)
            return e;
    fp_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->proxy_id = strdup(proxy_id))) {
        free(e);
        return NULL;
    }
    e->owner = f;
    e->next = f->entries;
    f->entries = e;
    f->n_entries++;
    return e;
}

static void on_fetched(void *ud, const wf_http_fetch_result *r)
{
    fp_entry *e = ud;
    wf_failed *f = e->owner;
    e->fetch = NULL;
    f->inflight--;
    e->fetched_ms = uv_now(f->loop);
    json_decref(e->requests);
    e->requests = NULL;
    e->ok = false;
    if (!r->ok) {
        snprintf(e->error, sizeof e->error, "%s", r->error ? r->error : "failed");
    } else if (r->status != 200) {
        snprintf(e->error, sizeof e->error, "status %d from the status port", r->status);
    } else {
        json_error_t je;
        json_t *doc = json_loadb(r->body, r->body_len, 0, &je);
        json_t *arr = json_object_get(doc, "failed_requests");
        if (json_is_array(arr)) {
            e->requests = json_incref(arr);
            e->ok = true;
            e->error[0] = '\0';
        } else {
            snprintf(e->error, sizeof e->error, "not a failed_requests answer: %.100s",
                     doc ? "no failed_requests array" : je.text);
        }
        json_decref(doc);
    }
}

static void start_fetch(wf_failed *f, fp_entry *e, const wf_scrape_target *t, unsigned limit)
{
    char target[64];
    const char *host = NULL;
    const struct sockaddr *dest = wf_scrape_target_addr(f->scrape, t, &host);
    snprintf(target, sizeof target, "/failed_requests?limit=%u", limit);
    wf_http_fetch_req req = {.dest = dest,
                             .target = target,
                             .host = host,
                             .headers = "Accept: application/json\r\nUser-Agent: weft-pilot\r\n",
                             .timeout_ms = WF_FAILED_TIMEOUT_MS,
                             .max_body = WF_FAILED_MAX_BODY,
                             .body_limit_fails = true};
    e->fetch = wf_http_fetch_start(f->loop, &req, on_fetched, e);
    if (e->fetch) {
        f->inflight++;
    } else {
        e->fetched_ms = uv_now(f->loop);
        e->ok = false;
        snprintf(e->error, sizeof e->error, "cannot start the request (out of memory)");
    }
}

/* ---- the explanation ---- */

/* `weftctl log explain`'s reading of one entry of a proxy's /failed_requests (explain/explain.h:
 * the same function builds the CLI's words, so the view and the CLI cannot disagree). */
json_t *wf_failed_explain(const json_t *entry)
{
    const json_t *code = json_object_get(entry, "response_code");
    wf_explain_input in = {
        .response_code = json_is_integer(code) ? (int)json_integer_value(code) : -1,
        .response_flags = json_string_value(json_object_get(entry, "response_flags")),
        .response_code_details = json_string_value(json_object_get(entry, "response_code_details")),
        .route_name = json_string_value(json_object_get(entry, "route_name")),
        .upstream_cluster = json_string_value(json_object_get(entry, "upstream_cluster")),
        .upstream_host = json_string_value(json_object_get(entry, "upstream_host")),
        .method = json_string_value(json_object_get(entry, "method")),
        .authority = json_string_value(json_object_get(entry, "authority")),
        .path = json_string_value(json_object_get(entry, "path")),
    };
    return wf_explain_failed_json(&in);
}

/* ---- the answer ---- */

typedef struct {
    char ns[64], workload[128];
    unsigned limit;
} fq;

static int parse_query(const char *q, fq *out)
{
    char lim[16];
    if (!wf_debug_query_get(q, "namespace", out->ns, sizeof out->ns))
        out->ns[0] = '\0';
    if (!wf_debug_query_get(q, "workload", out->workload, sizeof out->workload))
        out->workload[0] = '\0';
    out->limit = 20;
    const char *l = wf_debug_query_get(q, "limit", lim, sizeof lim);
    if (l && l[0]) {
        char *end = NULL;
        unsigned long v = strtoul(l, &end, 10);
        if (*end || v < 1 || v > 100)
            return -1;
        out->limit = (unsigned)v;
    }
    return 0;
}

/* The proxy's workload as /ui/api/proxies names it (known from its xDS node at once; the
 * scraped series name it only once they carry traffic). */
static const char *workload_of(const wf_scrape_target *t)
{
    return t->workload[0] ? t->workload : t->pod;
}

static bool matches(const wf_scrape_target *t, const fq *q)
{
    return (!q->ns[0] || strcmp(t->ns, q->ns) == 0) &&
           (!q->workload[0] || strcmp(workload_of(t), q->workload) == 0);
}

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* "2026-12-06T07:57:53.008Z" -> unix ms (0 when unreadable). */
static int64_t parse_time_ms(const char *s)
{
    struct tm tm = {0};
    int ms = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

static const char *str_or(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static json_t *request_json(const char *proxy_id, json_t *x)
{
    int code = (int)json_integer_value(json_object_get(x, "response_code"));
    const char *flags = str_or(x, "response_flags");
    const char *details = str_or(x, "response_code_details");
    json_t *o = json_object();
    json_object_set_new(o, "proxy_id", json_string(proxy_id));
    json_object_set_new(o, "start_time_ms", json_integer(parse_time_ms(str_or(x, "start_time"))));
    json_object_set_new(o, "method", json_string(str_or(x, "method")));
    json_object_set_new(o, "authority", json_string(str_or(x, "authority")));
    json_object_set_new(o, "path", json_string(str_or(x, "path")));
    json_object_set_new(o, "response_code", json_integer(code));
    json_object_set_new(o, "response_flags", json_string(flags));
    json_object_set_new(o, "details", json_string(details));
    json_object_set_new(o, "route_name", json_string(str_or(x, "route_name")));
    json_object_set_new(o, "upstream_cluster", json_string(str_or(x, "upstream_cluster")));
    json_object_set_new(o, "upstream_host", json_string(str_or(x, "upstream_host")));
    json_object_set_new(o, "duration_ms",
                        json_integer(json_integer_value(json_object_get(x, "duration"))));
    json_object_set_new(o, "request_id", json_string(str_or(x, "x_request_id")));
    json_t *ex = wf_failed_explain(x);
    json_object_set_new(o, "explanation", ex ? ex : json_null());
    return o;
}

static int newest_first(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "start_time_ms"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "start_time_ms"));
    return x > y ? -1 : x < y;
}

/* The requests of one workload group, newest first, at most limit. */
static void sort_limit(json_t *reqs, unsigned limit)
{
    size_t n = json_array_size(reqs);
    json_t **v = n ? malloc(n * sizeof *v) : NULL;
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(reqs, i));
    qsort(v, n, sizeof *v, newest_first);
    json_array_clear(reqs);
    for (size_t i = 0; i < n; i++) {
        if (i < limit)
            json_array_append(reqs, v[i]);
        json_decref(v[i]);
    }
    free(v);
}

static json_t *group_for(json_t *groups, const wf_scrape_target *t)
{
    const char *wl = workload_of(t);
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g)
    {
        if (!strcmp(str_or(g, "namespace"), t->ns) && !strcmp(str_or(g, "workload"), wl))
            return g;
    }
    g = json_pack("{s:s,s:s,s:[],s:[]}", "namespace", t->ns, "workload", wl, "proxies", "requests");
    json_array_append_new(groups, g);
    return g;
}

static json_t *answer(wf_failed *f, const fq *q, const wf_scrape_target **ts, size_t n,
                      bool truncated)
{
    json_t *groups = json_array();
    for (size_t i = 0; groups && i < n; i++) {
        const wf_scrape_target *t = ts[i];
        fp_entry *e = entry_get(f, t->proxy_id);
        json_t *g = group_for(groups, t);
        if (!e || !g)
            continue;
        bool have = e->fetched_ms != 0 && !e->fetch;
        json_array_append_new(json_object_get(g, "proxies"),
                              json_pack("{s:s,s:b,s:s}", "proxy_id", t->proxy_id, "ok",
                                        have && e->ok, "error", have ? e->error : "no answer yet"));
        size_t k;
        json_t *x;
        json_array_foreach(e->ok ? e->requests : NULL, k, x)
        {
            json_array_append_new(json_object_get(g, "requests"), request_json(t->proxy_id, x));
        }
    }
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g) sort_limit(json_object_get(g, "requests"), q->limit);
    return json_pack("{s:I,s:o,s:b}", "timestamp_ms", (json_int_t)wall_ms(), "workloads",
                     groups ? groups : json_array(), "truncated", truncated);
}

void wf_failed_serve(wf_failed *f, const char *query, wf_debug_reply *r)
{
    fq q;
    if (!f) {
        r->status = 503;
        r->ctype = "text/plain; charset=utf-8";
        wf_strbuf_puts(&r->body,
                       "the failed-request view is off (weft-pilot --uiScrapeInterval 0)\n");
        return;
    }
    if (parse_query(query, &q) != 0) {
        r->status = 400;
        r->ctype = "text/plain; charset=utf-8";
        wf_strbuf_puts(&r->body, "limit: want a number from 1 to 100\n");
        return;
    }
    if (r->waited_ms == 0)
        sweep(f);
    const wf_scrape_target *ts[WF_FAILED_MAX_PROXIES];
    size_t n = 0;
    bool truncated = false;
    for (size_t i = 0; i < wf_scrape_target_count(f->scrape); i++) {
        const wf_scrape_target *t = wf_scrape_target_at(f->scrape, i);
        if (!matches(t, &q))
            continue;
        if (n == WF_FAILED_MAX_PROXIES) {
            truncated = true;
            break;
        }
        ts[n++] = t;
    }
    /* fetch what is missing or stale; wait while fetches run (bounded) */
    uint64_t now = uv_now(f->loop);
    bool pending = false;
    for (size_t i = 0; i < n; i++) {
        fp_entry *e = entry_get(f, ts[i]->proxy_id);
        if (!e)
            continue;
        bool fresh = e->fetched_ms && now - e->fetched_ms <= WF_FAILED_CACHE_MS;
        if (!fresh && !e->fetch && f->inflight < WF_FAILED_INFLIGHT)
            start_fetch(f, e, ts[i], 100);
        pending |= e->fetch != NULL || (!fresh && !e->fetch);
    }
    if (pending && r->waited_ms < WF_FAILED_WAIT_MS) {
        r->retry_ms = WF_FAILED_RETRY_MS;
        return;
    }
    wf_debug_reply_json(r, 200, answer(f, &q, ts, n, truncated));
}
