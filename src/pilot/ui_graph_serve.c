/*
 * ui_graph_serve.c - GET /ui/api/graph (memoized per scrape round) and GET /ui/api/scrape
 * (ui_graph.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "pilot/debug_internal.h"
#include "pilot/scrape_failed.h"
#include "pilot/ui_graph.h"

typedef struct {
    char ns[64];
    unsigned window_s;
    char *text; /* the answer, JSON */
} graph_entry;

struct wf_ui_graph {
    wf_scrape *scrape;
    wf_failed *failed;   /* GET /ui/api/failed (scrape_failed.h) */
    uint64_t generation; /* of the cached answers */
    graph_entry cache[WF_UI_GRAPH_CACHE];
    size_t n_cache;
    uint64_t builds; /* graphs built (for tests: memoization) */
};

static void cache_clear(wf_ui_graph *g)
{
    for (size_t i = 0; i < g->n_cache; i++)
        free(g->cache[i].text);
    g->n_cache = 0;
}

wf_ui_graph *wf_ui_graph_new(uv_loop_t *loop, wf_ads *ads, const wf_scrape_opts *o, char *err,
                             size_t cap)
{
    wf_ui_graph *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    if (!(g->scrape = wf_scrape_new(loop, ads, o, err, cap))) {
        free(g);
        return NULL;
    }
    if (!(g->failed = wf_failed_new(loop, g->scrape))) {
        snprintf(err, cap, "out of memory");
        wf_ui_graph_free(g);
        return NULL;
    }
    return g;
}

void wf_ui_graph_free(wf_ui_graph *g)
{
    if (!g)
        return;
    cache_clear(g);
    wf_failed_free(g->failed);
    wf_scrape_free(g->scrape);
    free(g);
}

wf_scrape *wf_ui_graph_scrape(const wf_ui_graph *g)
{
    return g ? g->scrape : NULL;
}

static void reply_text(wf_debug_reply *r, int status, const char *text)
{
    r->status = status;
    r->ctype = "text/plain; charset=utf-8";
    wf_strbuf_puts(&r->body, text);
}

static json_t *scrape_summary(const wf_scrape *s)
{
    size_t ok = 0, failed = 0, n = wf_scrape_target_count(s);
    for (size_t i = 0; i < n; i++) {
        const wf_scrape_target *t = wf_scrape_target_at(s, i);
        ok += t->scraped && t->ok;
        failed += t->scraped && !t->ok;
    }
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "interval_s",
                     (json_int_t)(wf_scrape_interval_ms(s) / 1000), "targets", (json_int_t)n, "ok",
                     (json_int_t)ok, "failed", (json_int_t)failed, "last_round_ms",
                     (json_int_t)wf_scrape_last_round_ms(s), "round_duration_ms",
                     (json_int_t)wf_scrape_last_round_duration_ms(s), "series",
                     (json_int_t)wf_mm_tuple_count(wf_scrape_store(s)), "store_bytes",
                     (json_int_t)wf_mm_memory(wf_scrape_store(s)));
}

/* window: absent = default; else whole seconds in range. Returns 0 or -1. */
static int parse_window(const char *q, unsigned *out)
{
    char buf[32];
    const char *w = wf_debug_query_get(q, "window", buf, sizeof buf);
    *out = WF_UI_GRAPH_WINDOW_S;
    if (!w || !w[0])
        return 0;
    size_t n = strlen(w);
    if (n > 1 && w[n - 1] == 's') /* "60s" as Kiali's duration parameter reads */
        buf[--n] = '\0';
    char *end = NULL;
    unsigned long v = strtoul(w, &end, 10);
    if (*end || end == w || v < WF_UI_GRAPH_MIN_WINDOW_S || v > WF_UI_GRAPH_MAX_WINDOW_S)
        return -1;
    *out = (unsigned)v;
    return 0;
}

void wf_ui_graph_serve(wf_ui_graph *g, const char *query, wf_debug_reply *r)
{
    if (!g) {
        reply_text(r, 503, "the graph is off (weft-pilot --uiScrapeInterval 0)\n");
        return;
    }
    unsigned window;
    char ns[64];
    if (parse_window(query, &window) != 0) {
        reply_text(r, 400, "window: want whole seconds from 10 to 3600\n");
        return;
    }
    const char *want = wf_debug_query_get(query, "namespace", ns, sizeof ns);
    if (!want)
        ns[0] = '\0';
    if (g->generation != wf_scrape_generation(g->scrape)) {
        cache_clear(g);
        g->generation = wf_scrape_generation(g->scrape);
    }
    for (size_t i = 0; i < g->n_cache; i++)
        if (g->cache[i].window_s == window && strcmp(g->cache[i].ns, ns) == 0) {
            r->status = 200;
            r->ctype = "application/json";
            wf_strbuf_puts(&r->body, g->cache[i].text);
            return;
        }
    json_t *o = wf_ui_graph_build(wf_scrape_store(g->scrape), window, ns);
    g->builds++;
    if (o) {
        json_object_set_new(o, "timestamp_ms", json_integer(wf_scrape_last_round_ms(g->scrape)));
        json_object_set_new(o, "namespace", json_string(ns));
        json_object_set_new(o, "scrape", scrape_summary(g->scrape));
    }
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
#ifdef __GLIBC__
    /* the graph's JSON tree (tens of MB on a 1,000-service mesh) is gone: give its pages back
     * (glibc keeps freed small blocks otherwise, and pilot's RSS would keep the peak) */
    malloc_trim(0);
#endif
    if (!text) {
        reply_text(r, 500, "out of memory\n");
        return;
    }
    r->status = 200;
    r->ctype = "application/json";
    wf_strbuf_puts(&r->body, text);
    wf_strbuf_putc(&r->body, '\n');
    if (g->n_cache == WF_UI_GRAPH_CACHE)
        cache_clear(g);
    graph_entry *e = &g->cache[g->n_cache++];
    snprintf(e->ns, sizeof e->ns, "%s", ns);
    e->window_s = window;
    e->text = text;            /* kept: the next identical request is answered from it */
    size_t len = strlen(text); /* the cached copy gets the same final newline */
    char *nl = realloc(text, len + 2);
    if (nl) {
        nl[len] = '\n';
        nl[len + 1] = '\0';
        e->text = nl;
    }
}

static json_t *target_json(const wf_scrape_target *t)
{
    const wf_mm_scrape_info *in = &t->info;
    json_t *o = json_object(), *h = json_array();
    json_object_set_new(o, "proxy_id", json_string(t->proxy_id));
    json_object_set_new(o, "namespace", json_string(t->ns));
    json_object_set_new(o, "workload", json_string(in->workload));
    json_object_set_new(o, "url", json_string(t->url));
    json_object_set_new(o, "last_ms", json_integer(t->last_ms));
    json_object_set_new(o, "ok", json_boolean(t->scraped && t->ok));
    json_object_set_new(o, "error", json_string(t->scraped ? t->error : "not scraped yet"));
    json_object_set_new(o, "duration_ms", json_integer((json_int_t)t->duration_ms));
    json_object_set_new(o, "series", json_integer((json_int_t)in->tuples));
    json_object_set_new(o, "series_dropped", json_integer((json_int_t)in->dropped));
    json_object_set_new(o, "server_state",
                        in->has_state ? json_string(wf_mm_server_state_name(in->server_state))
                                      : json_null());
    json_object_set_new(o, "days_until_first_cert_expiring",
                        in->has_cert_days ? json_real(in->cert_days) : json_null());
    json_object_set_new(o, "control_plane_connected",
                        in->has_cp ? json_boolean(in->cp_connected == 1) : json_null());
    for (size_t i = 0; h; i++) {
        const wf_scrape_event *e = wf_scrape_event_at(t, i);
        if (!e)
            break;
        json_array_append_new(h, json_pack("{s:I,s:s,s:s}", "t_ms", (json_int_t)e->t_ms, "event",
                                           e->event, "detail", e->detail));
    }
    json_object_set_new(o, "history", h ? h : json_array());
    return o;
}

void wf_ui_failed_serve(wf_ui_graph *g, const char *query, wf_debug_reply *r)
{
    wf_failed_serve(g ? g->failed : NULL, query, r);
}

void wf_ui_scrape_serve(wf_ui_graph *g, const char *query, wf_debug_reply *r)
{
    (void)query;
    if (!g) {
        reply_text(r, 503, "the scrape loop is off (weft-pilot --uiScrapeInterval 0)\n");
        return;
    }
    json_t *o = scrape_summary(g->scrape), *arr = json_array();
    for (size_t i = 0; arr && i < wf_scrape_target_count(g->scrape); i++)
        json_array_append_new(arr, target_json(wf_scrape_target_at(g->scrape, i)));
    if (o)
        json_object_set_new(o, "targets", arr ? arr : json_array());
    wf_debug_reply_json(r, 200, o);
}
