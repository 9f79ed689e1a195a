/*
 * reflector.c - list + watch of one kind on a worker thread, with a cache (reflector.h).
 */
#include "kube/reflector.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "kube/backoff.h"

struct wf_kube_reflector {
    uv_loop_t *loop;
    uv_async_t async;
    uv_thread_t thread;
    bool thread_started;
    wf_kube_client *client;
    wf_kube_reflector_opts opts; /* strings owned */
    int cancel_fd;               /* eventfd: readable = stop */
    void (*changed)(void *ud);
    void *ud;
    wf_kube_backoff backoff; /* the thread's */
    uv_mutex_t mu;           /* guards cache and st */
    uv_cond_t synced;        /* signalled when st.synced becomes true */
    json_t *cache;
    wf_kube_reflector_state st;
};

static const char *const PHASES[] = {"starting", "listing", "watching", "backing-off", "stopped"};

const char *wf_kube_reflector_phase_name(wf_kube_reflector_phase p)
{
    return (unsigned)p < 5 ? PHASES[p] : "?";
}

static bool stopping(wf_kube_reflector *r)
{
    struct pollfd p = {r->cancel_fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

static void notify(wf_kube_reflector *r)
{
    uv_async_send(&r->async);
}

static void set_phase(wf_kube_reflector *r, wf_kube_reflector_phase p)
{
    uv_mutex_lock(&r->mu);
    r->st.phase = p;
    uv_mutex_unlock(&r->mu);
    notify(r);
}

static void record_error(wf_kube_reflector *r, const char *what, const wf_strbuf *why)
{
    uv_mutex_lock(&r->mu);
    r->st.errors++;
    snprintf(r->st.last_error, sizeof r->st.last_error, "%s: %s", what, wf_strbuf_cstr(why));
    uv_mutex_unlock(&r->mu);
    notify(r);
}

static void set_rv(wf_kube_reflector *r, const char *rv)
{
    snprintf(r->st.rv, sizeof r->st.rv, "%s", rv);
}

/* Waits one back-off step; false when stopped meanwhile. */
static bool back_off(wf_kube_reflector *r)
{
    int64_t ms = wf_kube_backoff_step(&r->backoff, wf_kube_now_ms());
    uv_mutex_lock(&r->mu);
    r->st.phase = WF_KUBE_BACKING_OFF;
    r->st.backoff_ms = ms;
    uv_mutex_unlock(&r->mu);
    notify(r);
    struct pollfd p = {r->cancel_fd, POLLIN, 0};
    int64_t until = wf_kube_now_ms() + ms;
    for (;;) {
        int64_t left = until - wf_kube_now_ms();
        if (left <= 0)
            return !stopping(r);
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return false;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

/* The list: replaces the cache. 0, or -1 (recorded). */
static int relist(wf_kube_reflector *r)
{
    set_phase(r, WF_KUBE_LISTING);
    wf_kube_list_opts lo = {.label_selector = r->opts.label_selector,
                            .field_selector = r->opts.field_selector,
                            .limit = r->opts.page_size};
    json_t *items = NULL;
    char *rv = NULL;
    int pages = 0;
    wf_kube_status st;
    wf_strbuf why = WF_STRBUF_INIT;
    if (wf_kube_list(r->client, r->opts.kind, r->opts.ns, &lo, r->cancel_fd, &items, &rv, &pages,
                     &st, &why) != 0) {
        if (!stopping(r))
            record_error(r, "list", &why);
        wf_strbuf_free(&why);
        return -1;
    }
    wf_strbuf_free(&why);
    json_t *cache = json_object();
    size_t i;
    json_t *it;
    char key[512];
    json_array_foreach(items, i, it)
    {
        const char *k = wf_kube_obj_key(it, key, sizeof key);
        if (k && cache)
            json_object_set(cache, k, it);
    }
    json_decref(items);
    if (!cache) {
        free(rv);
        return -1;
    }
    uv_mutex_lock(&r->mu);
    json_decref(r->cache);
    r->cache = cache;
    set_rv(r, rv);
    r->st.synced = true;
    uv_cond_broadcast(&r->synced);
    r->st.objects = json_object_size(cache);
    r->st.generation++;
    r->st.lists++;
    r->st.pages += (uint64_t)pages;
    uv_mutex_unlock(&r->mu);
    free(rv);
    notify(r);
    return 0;
}

/* Applies one ADDED/MODIFIED/DELETED/BOOKMARK event. */
static void apply(wf_kube_reflector *r, const wf_kube_event *ev)
{
    char key[512];
    const char *k =
        ev->type == WF_KUBE_BOOKMARK ? NULL : wf_kube_obj_key(ev->object, key, sizeof key);
    uv_mutex_lock(&r->mu);
    set_rv(r, ev->rv);
    if (ev->type == WF_KUBE_BOOKMARK) {
        r->st.bookmarks++;
    } else if (k) {
        if (ev->type == WF_KUBE_DELETED)
            json_object_del(r->cache, k);
        else
            json_object_set(r->cache, k, ev->object);
        r->st.events++;
        r->st.generation++;
        r->st.objects = json_object_size(r->cache);
    }
    uv_mutex_unlock(&r->mu);
    notify(r);
}

typedef enum { W_RENEW, W_RELIST, W_BACKOFF, W_STOP } watch_end;

/* One watch stream from the current resourceVersion; says what to do next. */
static watch_end watch_once(wf_kube_reflector *r)
{
    char rv[64];
    uv_mutex_lock(&r->mu);
    snprintf(rv, sizeof rv, "%s", r->st.rv);
    uv_mutex_unlock(&r->mu);
    long timeout = r->opts.watch_timeout_s > 0 ? r->opts.watch_timeout_s
                                               : 300 + (long)wf_kube_backoff_rand(&r->backoff, 300);
    wf_kube_watch_opts wo = {.label_selector = r->opts.label_selector,
                             .field_selector = r->opts.field_selector,
                             .rv = rv,
                             .timeout_s = timeout,
                             .bookmarks = true};
    wf_kube_watch *w = NULL;
    wf_kube_status st;
    wf_strbuf why = WF_STRBUF_INIT;
    watch_end end = W_BACKOFF;
    if (wf_kube_watch_open(r->client, r->opts.kind, r->opts.ns, &wo, r->cancel_fd, &w, &st, &why) !=
        0) {
        if (stopping(r))
            end = W_STOP;
        else {
            record_error(r, "watch", &why);
            if (wf_kube_status_expired(&st)) {
                end = W_RELIST;
                uv_mutex_lock(&r->mu);
                r->st.relists_expired++;
                uv_mutex_unlock(&r->mu);
            }
        }
        wf_strbuf_free(&why);
        return end;
    }
    uv_mutex_lock(&r->mu);
    r->st.watches++;
    r->st.phase = WF_KUBE_WATCHING;
    uv_mutex_unlock(&r->mu);
    notify(r);
    for (;;) {
        wf_kube_event ev;
        int n = wf_kube_watch_next(w, &ev, &why);
        if (n == 0) {
            end = W_RENEW;
            break;
        }
        if (n < 0) {
            if (stopping(r))
                end = W_STOP;
            else
                record_error(r, "watch", &why);
            break;
        }
        if (ev.type == WF_KUBE_ERROR) {
            wf_strbuf_reset(&why);
            wf_kube_status_format(&ev.err, &why);
            record_error(r, "watch: ERROR event", &why);
            if (wf_kube_status_expired(&ev.err)) {
                end = W_RELIST;
                uv_mutex_lock(&r->mu);
                r->st.relists_expired++;
                uv_mutex_unlock(&r->mu);
            }
            wf_kube_event_clear(&ev);
            break;
        }
        apply(r, &ev);
        wf_kube_event_clear(&ev);
    }
    wf_kube_watch_close(w);
    wf_strbuf_free(&why);
    return end;
}

static void run(void *arg)
{
    wf_kube_reflector *r = arg;
    bool need_list = true;
    while (!stopping(r)) {
        if (need_list) {
            if (relist(r) != 0) {
                if (!back_off(r))
                    break;
                continue;
            }
            need_list = false;
        }
        watch_end e = watch_once(r);
        if (e == W_STOP)
            break;
        if (e == W_RENEW)
            continue;
        need_list = e == W_RELIST;
        if (!back_off(r))
            break;
    }
    set_phase(r, WF_KUBE_STOPPED);
}

static void on_async(uv_async_t *a)
{
    wf_kube_reflector *r = a->data;
    if (r->changed)
        r->changed(r->ud);
}

static void free_reflector(wf_kube_reflector *r)
{
    if (r->cancel_fd >= 0)
        close(r->cancel_fd);
    free((char *)r->opts.ns);
    free((char *)r->opts.label_selector);
    free((char *)r->opts.field_selector);
    json_decref(r->cache);
    uv_cond_destroy(&r->synced);
    uv_mutex_destroy(&r->mu);
    free(r);
}

static void on_closed(uv_handle_t *h)
{
    free_reflector(h->data);
}

static char *dup_opt(const char *s, bool *oom)
{
    if (!s || !*s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

wf_kube_reflector *wf_kube_reflector_start(uv_loop_t *loop, wf_kube_client *client,
                                           const wf_kube_reflector_opts *opts,
                                           void (*changed)(void *ud), void *ud, wf_strbuf *why)
{
    wf_kube_reflector *r = calloc(1, sizeof *r);
    if (!r) {
        wf_strbuf_puts(why, "out of memory");
        return NULL;
    }
    r->cancel_fd = -1;
    if (uv_mutex_init(&r->mu) != 0) {
        free(r);
        wf_strbuf_puts(why, "cannot create a mutex");
        return NULL;
    }
    if (uv_cond_init(&r->synced) != 0) {
        uv_mutex_destroy(&r->mu);
        free(r);
        wf_strbuf_puts(why, "cannot create a condition variable");
        return NULL;
    }
    bool oom = false;
    r->loop = loop;
    r->client = client;
    r->opts = *opts;
    r->opts.ns = dup_opt(opts->ns, &oom);
    r->opts.label_selector = dup_opt(opts->label_selector, &oom);
    r->opts.field_selector = dup_opt(opts->field_selector, &oom);
    if (r->opts.page_size == 0)
        r->opts.page_size = 500;
    r->changed = changed;
    r->ud = ud;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->backoff.rng = opts->seed ? opts->seed : (uint64_t)ts.tv_nsec * 2654435761u + 1;
    r->cache = json_object();
    r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (oom || !r->cache || r->cancel_fd < 0) {
        wf_strbuf_puts(why, oom || !r->cache ? "out of memory" : "cannot create an eventfd");
        free_reflector(r);
        return NULL;
    }
    if (uv_async_init(loop, &r->async, on_async) != 0) {
        wf_strbuf_puts(why, "cannot create a uv_async");
        free_reflector(r);
        return NULL;
    }
    r->async.data = r;
    if (uv_thread_create(&r->thread, run, r) != 0) {
        wf_strbuf_puts(why, "cannot start the reflector's thread");
        uv_close((uv_handle_t *)&r->async, on_closed);
        return NULL;
    }
    r->thread_started = true;
    return r;
}

void wf_kube_reflector_stop(wf_kube_reflector *r)
{
    if (!r)
        return;
    uint64_t one = 1;
    if (write(r->cancel_fd, &one, sizeof one) < 0) {
        /* an eventfd write fails only on overflow: the flag is set already */
    }
    if (r->thread_started)
        uv_thread_join(&r->thread);
    r->thread_started = false;
    uv_close((uv_handle_t *)&r->async, on_closed);
}

json_t *wf_kube_reflector_snapshot(wf_kube_reflector *r)
{
    uv_mutex_lock(&r->mu);
    json_t *c = json_copy(r->cache); /* shallow: values are shared references */
    uv_mutex_unlock(&r->mu);
    return c;
}

bool wf_kube_reflector_wait_synced(wf_kube_reflector *r, int64_t timeout_ms)
{
    int64_t until = wf_kube_now_ms() + timeout_ms;
    uv_mutex_lock(&r->mu);
    while (!r->st.synced) {
        int64_t left = until - wf_kube_now_ms();
        if (left <= 0 || uv_cond_timedwait(&r->synced, &r->mu, (uint64_t)left * 1000000u) != 0)
            break;
    }
    bool ok = r->st.synced;
    uv_mutex_unlock(&r->mu);
    return ok;
}

void wf_kube_reflector_state_get(wf_kube_reflector *r, wf_kube_reflector_state *out)
{
    uv_mutex_lock(&r->mu);
    *out = r->st;
    uv_mutex_unlock(&r->mu);
}
