/*
 * scrape.c - the scrape loop (scrape.h): rounds over the connected proxies, bounded GETs,
 * each answer read into the metrics store.
 */
#include "pilot/scrape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "core/log.h"
#include "http/http_fetch.h"

struct wf_scrape {
    uv_loop_t *loop;
    wf_ads *ads;
    wf_scrape_opts o;
    uv_timer_t timer;
    wf_mm_store *store;
    wf_scrape_target **t; /* sorted by proxy_id */
    size_t n, cap;
    bool override;
    struct sockaddr_storage override_sa;
    /* the round */
    bool active;
    size_t next, inflight;
    uint64_t round_start_ms;
    uint64_t generation, skipped, last_duration_ms;
    int64_t last_round_ms;
};

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void target_free(wf_scrape_target *t)
{
    if (!t)
        return;
    wf_http_fetch_cancel(t->fetch);
    wf_mm_target_free(t->mm);
    free(t->proxy_id);
    free(t->ns);
    free(t->pod);
    free(t->workload);
    free(t->ip);
    free(t->url);
    free(t);
}

static void record(wf_scrape_target *t, int64_t now, const char *event, const char *detail)
{
    wf_scrape_event *e = &t->history[t->history_n++ % WF_SCRAPE_HISTORY];
    e->t_ms = now;
    snprintf(e->event, sizeof e->event, "%s", event);
    snprintf(e->detail, sizeof e->detail, "%s", detail ? detail : "");
}

const wf_scrape_event *wf_scrape_event_at(const wf_scrape_target *t, size_t i)
{
    size_t n = t->history_n < WF_SCRAPE_HISTORY ? t->history_n : WF_SCRAPE_HISTORY;
    if (i >= n)
        return NULL;
    return &t->history[(t->history_n - n + i) % WF_SCRAPE_HISTORY];
}

static int parse_addr(const char *ip, int port, struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof *sa);
    if (strchr(ip, ':'))
        return uv_ip6_addr(ip, port, (struct sockaddr_in6 *)sa);
    return uv_ip4_addr(ip, port, (struct sockaddr_in *)sa);
}

static wf_scrape_target *target_new(const wf_scrape *s, const wf_pilot_proxy *p)
{
    wf_scrape_target *t = calloc(1, sizeof *t);
    int port = s->o.port;
    if (!t)
        return NULL;
    char url[256];
    bool v6 = strchr(p->ip, ':') != NULL;
    snprintf(url, sizeof url, "http://%s%s%s:%d%s", v6 ? "[" : "", p->ip, v6 ? "]" : "", port,
             WF_SCRAPE_PATH);
    snprintf(t->host, sizeof t->host, "%s%s%s:%d", v6 ? "[" : "", p->ip, v6 ? "]" : "", port);
    t->proxy_id = strdup(p->id);
    t->ns = strdup(p->ns ? p->ns : "");
    t->pod = strdup(p->pod ? p->pod : "");
    t->workload = strdup(p->workload ? p->workload : p->pod ? p->pod : "");
    t->ip = strdup(p->ip);
    t->url = strdup(url);
    t->mm = wf_mm_target_new();
    t->router = p->kind == WF_PROXY_ROUTER;
    if (!t->proxy_id || !t->ns || !t->pod || !t->workload || !t->ip || !t->url || !t->mm ||
        parse_addr(p->ip, port, &t->addr) != 0) {
        target_free(t);
        return NULL;
    }
    return t;
}

static int id_cmp(const void *k, const void *e)
{
    return strcmp(k, (*(wf_scrape_target *const *)e)->proxy_id);
}

static int target_cmp(const void *a, const void *b)
{
    return strcmp((*(wf_scrape_target *const *)a)->proxy_id,
                  (*(wf_scrape_target *const *)b)->proxy_id);
}

/* The targets become the connected proxies with an address: new ones added, gone ones freed. */
static void sync_targets(wf_scrape *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->t[i]->seen = false;
    size_t old = s->n;
    for (size_t i = 0; i < wf_ads_conn_count(s->ads); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(s->ads, i);
        if (!c->connected || !c->has_proxy || !c->proxy.ip || !c->proxy.id)
            continue;
        wf_scrape_target **f = old ? bsearch(c->proxy.id, s->t, old, sizeof *s->t, id_cmp) : NULL;
        if (f) {
            (*f)->seen = true;
            continue;
        }
        bool dup = false; /* a second stream of a proxy added in this pass */
        for (size_t j = old; j < s->n && !dup; j++)
            dup = strcmp(s->t[j]->proxy_id, c->proxy.id) == 0;
        if (dup)
            continue;
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 64;
            wf_scrape_target **v = realloc(s->t, cap * sizeof *v);
            if (!v)
                break;
            s->t = v;
            s->cap = cap;
        }
        wf_scrape_target *t = target_new(s, &c->proxy);
        if (!t)
            break;
        t->seen = true;
        s->t[s->n++] = t;
    }
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->t[i]->seen)
            s->t[kept++] = s->t[i];
        else
            target_free(s->t[i]);
    }
    s->n = kept;
    if (s->n > 1)
        qsort(s->t, s->n, sizeof *s->t, target_cmp);
}

static void start_some(wf_scrape *s);

static void round_end(wf_scrape *s)
{
    int64_t now = wall_ms();
    wf_mm_round_end(s->store, now);
    s->active = false;
    s->generation++;
    s->last_round_ms = now;
    s->last_duration_ms = uv_now(s->loop) - s->round_start_ms;
    WF_LOG(WF_LC_main, WF_LOG_DEBUG, "scrape: round %llu: %zu targets in %llu ms, %zu series",
           (unsigned long long)s->generation, s->n, (unsigned long long)s->last_duration_ms,
           wf_mm_tuple_count(s->store));
}

static void scrape_ended(wf_scrape *s, wf_scrape_target *t, bool ok, const char *why)
{
    int64_t now = wall_ms();
    if (!t->scraped || t->ok != ok)
        record(t, now, ok ? "scrape ok" : "scrape failed", ok ? "" : why);
    t->scraped = true;
    t->ok = ok;
    snprintf(t->error, sizeof t->error, "%s", ok ? "" : why);
    t->last_ms = now;
    t->duration_ms = uv_now(s->loop) - t->started_ms;
}

static void on_fetched(void *ud, const wf_http_fetch_result *r)
{
    wf_scrape_target *t = ud;
    wf_scrape *s = t->owner;
    t->fetch = NULL;
    s->inflight--;
    char why[160] = "";
    bool ok = false, state_changed = false;
    if (!r->ok) {
        snprintf(why, sizeof why, "%s", r->error ? r->error : "failed");
    } else if (r->status != 200) {
        snprintf(why, sizeof why, "status %d", r->status);
    } else if (r->truncated) {
        snprintf(why, sizeof why, "body larger than %zu bytes", s->o.max_body);
    } else {
        wf_mm_scrape_info info;
        char err[128];
        if (wf_mm_ingest(s->store, t->mm, t->router, r->body, r->body_len, &info, err,
                         sizeof err) != 0) {
            snprintf(why, sizeof why, "bad metrics text: %s", err);
        } else {
            state_changed =
                info.has_state && (!t->info.has_state || t->info.server_state != info.server_state);
            t->info = info;
            ok = true;
        }
    }
    scrape_ended(s, t, ok, why);
    if (state_changed) { /* after "scrape ok": the scrape is what told */
        char ev[40];
        snprintf(ev, sizeof ev, "state %s", wf_mm_server_state_name(t->info.server_state));
        record(t, t->last_ms, ev, "");
    }
    start_some(s);
}

static void start_one(wf_scrape *s, wf_scrape_target *t)
{
    const char *host = NULL;
    const struct sockaddr *dest = wf_scrape_target_addr(s, t, &host);
    wf_http_fetch_req req = {.dest = dest,
                             .target = WF_SCRAPE_PATH,
                             .host = host,
                             /* what Prometheus sends (its scrape timeout, seconds) */
                             .headers = "Accept: text/plain;version=0.0.4\r\n"
                                        "User-Agent: weft-pilot\r\n",
                             .timeout_ms = s->o.timeout_ms,
                             .max_body = s->o.max_body,
                             .body_limit_fails = true};
    t->started_ms = uv_now(s->loop);
    t->owner = s;
    t->fetch = wf_http_fetch_start(s->loop, &req, on_fetched, t);
    if (!t->fetch) {
        scrape_ended(s, t, false, "cannot start the request (out of memory)");
        return;
    }
    s->inflight++;
}

static void start_some(wf_scrape *s)
{
    while (s->active && s->next < s->n && s->inflight < s->o.max_inflight)
        start_one(s, s->t[s->next++]);
    if (s->active && s->next >= s->n && s->inflight == 0)
        round_end(s);
}

void wf_scrape_round_now(wf_scrape *s)
{
    if (s->active) {
        s->skipped++;
        return;
    }
    sync_targets(s);
    s->active = true;
    s->next = 0;
    s->inflight = 0;
    s->round_start_ms = uv_now(s->loop);
    start_some(s);
}

static void on_timer(uv_timer_t *h)
{
    wf_scrape_round_now(h->data);
}

wf_scrape *wf_scrape_new(uv_loop_t *loop, wf_ads *ads, const wf_scrape_opts *o, char *err,
                         size_t cap)
{
    wf_scrape *s = calloc(1, sizeof *s);
    if (!s || !(s->store = wf_mm_store_new())) {
        free(s);
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    s->loop = loop;
    s->ads = ads;
    s->o = *o;
    s->o.max_inflight = o->max_inflight ? o->max_inflight : WF_SCRAPE_INFLIGHT;
    s->o.timeout_ms = o->timeout_ms ? o->timeout_ms : WF_SCRAPE_TIMEOUT_MS;
    s->o.max_body = o->max_body ? o->max_body : WF_SCRAPE_MAX_BODY;
    s->o.port = o->port ? o->port : WF_SCRAPE_PORT;
    s->o.override_addr = NULL;
    if (o->override_addr) {
        const char *colon = strrchr(o->override_addr, ':');
        char ip[64];
        int port = colon ? atoi(colon + 1) : 0;
        size_t il = colon ? (size_t)(colon - o->override_addr) : 0;
        if (!colon || il == 0 || il >= sizeof ip || port <= 0 || port > 65535) {
            snprintf(err, cap, "--uiScrapeAddr %s: want IP:PORT", o->override_addr);
            wf_mm_store_free(s->store);
            free(s);
            return NULL;
        }
        memcpy(ip, o->override_addr, il);
        ip[il] = '\0';
        if (parse_addr(ip, port, &s->override_sa) != 0) {
            snprintf(err, cap, "--uiScrapeAddr %s: not a numeric IP address", o->override_addr);
            wf_mm_store_free(s->store);
            free(s);
            return NULL;
        }
        s->override = true;
    }
    uv_timer_init(loop, &s->timer);
    s->timer.data = s;
    if (s->o.interval_ms)
        uv_timer_start(&s->timer, on_timer, s->o.interval_ms, s->o.interval_ms);
    return s;
}

static void timer_closed(uv_handle_t *h)
{
    wf_scrape *s = h->data;
    for (size_t i = 0; i < s->n; i++)
        target_free(s->t[i]);
    free(s->t);
    wf_mm_store_free(s->store);
    free(s);
}

void wf_scrape_free(wf_scrape *s)
{
    if (!s)
        return;
    s->active = false;
    for (size_t i = 0; i < s->n; i++) { /* their callbacks must not run any more */
        wf_http_fetch_cancel(s->t[i]->fetch);
        s->t[i]->fetch = NULL;
    }
    uv_timer_stop(&s->timer);
    uv_close((uv_handle_t *)&s->timer, timer_closed);
}

uint64_t wf_scrape_interval_ms(const wf_scrape *s)
{
    return s->o.interval_ms;
}

uint64_t wf_scrape_generation(const wf_scrape *s)
{
    return s->generation;
}

int64_t wf_scrape_last_round_ms(const wf_scrape *s)
{
    return s->last_round_ms;
}

uint64_t wf_scrape_last_round_duration_ms(const wf_scrape *s)
{
    return s->last_duration_ms;
}

uint64_t wf_scrape_skipped_rounds(const wf_scrape *s)
{
    return s->skipped;
}

const wf_mm_store *wf_scrape_store(const wf_scrape *s)
{
    return s->store;
}

size_t wf_scrape_target_count(const wf_scrape *s)
{
    return s->n;
}

const wf_scrape_target *wf_scrape_target_at(const wf_scrape *s, size_t i)
{
    return i < s->n ? s->t[i] : NULL;
}

const struct sockaddr *wf_scrape_target_addr(const wf_scrape *s, const wf_scrape_target *t,
                                             const char **host)
{
    *host = t->host;
    return (const struct sockaddr *)(s->override ? &s->override_sa : &t->addr);
}
