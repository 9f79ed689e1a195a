/*
 * kube_writer.c - the write-back thread, its reflectors and inputs (kube_writer.h).
 */
#include "pilot/kube_writer.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "kube/http.h"
#include "kube/kinds.h"
#include "kube/reflector.h"
#include "pilot/kube_writer_plan.h"
#include "pilot/kube_writer_sync.h"

static const char *const GROUP_RESOURCE[WF_KW_WATCHED] = {
    "configmaps", "mutatingwebhookconfigurations", "validatingwebhookconfigurations"};

struct wf_kube_writer {
    uv_loop_t *loop;
    wf_kube_client *client;
    char *cm_name, *revision, *field_sel, *label_sel;
    long timeout_ms;
    wf_kube_reflector *r[WF_KW_WATCHED];
    wf_kw_sync *sync;
    int cancel_fd; /* eventfd: readable = stop (cancels a request in flight) */
    atomic_bool stop;
    uv_thread_t thread;
    bool thread_started;
    uv_mutex_t mu; /* guards the inputs below and dirty/next_at */
    uv_cond_t wake;
    json_t *namespaces; /* wanted; NULL before the first snapshot */
    bool analysis;      /* PILOT_ENABLE_ANALYSIS */
    json_t *status;     /* wf_kw_status_wanted of the last snapshot; NULL without analysis */
    char *root_pem;
    bool ready;
    bool dirty;
    int64_t next_at; /* the earliest retry (monotonic ms), INT64_MAX = none */
};

static void kick(wf_kube_writer *w)
{
    uv_mutex_lock(&w->mu);
    w->dirty = true;
    uv_cond_signal(&w->wake);
    uv_mutex_unlock(&w->mu);
}

static void on_cache_changed(void *ud)
{
    kick(ud);
}

/* The real request: the client, the cancel fd, the timeout. */
static int request(void *ud, const char *method, const char *path, const char *ctype,
                   const char *body, wf_kube_status *st, wf_strbuf *why)
{
    wf_kube_writer *w = ud;
    wf_strbuf resp = WF_STRBUF_INIT;
    int rc = wf_kube_request_ct(w->client, method, path, ctype, body, w->cancel_fd, w->timeout_ms,
                                &resp, st, why);
    wf_strbuf_free(&resp);
    return rc;
}

/* One pass over the current inputs and caches; the lock is not held. */
static int64_t pass(wf_kube_writer *w, json_t *namespaces, json_t *status, const char *root,
                    bool ready)
{
    wf_kw_inputs in = {.namespaces = namespaces,
                       .status = status,
                       .root_pem = root,
                       .cm_name = w->cm_name,
                       .revision = w->revision,
                       .webhook_ready = ready,
                       .stop = &w->stop};
    json_t *caches[WF_KW_WATCHED] = {NULL, NULL, NULL};
    for (int g = 0; g < WF_KW_WATCHED; g++) {
        wf_kube_reflector_state st;
        wf_kube_reflector_state_get(w->r[g], &st); /* the generation first: never newer */
        in.gen[g] = st.generation;
        if (st.synced)
            caches[g] = wf_kube_reflector_snapshot(w->r[g]);
        in.cache[g] = caches[g];
    }
    in.now_ms = wf_kube_now_ms();
    int64_t next = wf_kw_sync_pass(w->sync, &in, request, w);
    for (int g = 0; g < WF_KW_WATCHED; g++)
        json_decref(caches[g]);
    return next < 0 ? in.now_ms + 1000 : next; /* out of memory: try again in a second */
}

static void run(void *arg)
{
    wf_kube_writer *w = arg;
    uv_mutex_lock(&w->mu);
    while (!atomic_load(&w->stop)) {
        int64_t now = wf_kube_now_ms();
        if (!w->dirty && now < w->next_at) {
            if (w->next_at == INT64_MAX)
                uv_cond_wait(&w->wake, &w->mu);
            else
                (void)uv_cond_timedwait(&w->wake, &w->mu, (uint64_t)(w->next_at - now) * 1000000u);
            continue;
        }
        w->dirty = false;
        json_t *ns = json_incref(w->namespaces), *status = json_incref(w->status);
        char *root = w->root_pem ? strdup(w->root_pem) : NULL;
        bool ready = w->ready, oom = w->root_pem && !root;
        uv_mutex_unlock(&w->mu);
        int64_t next = oom ? wf_kube_now_ms() + 1000 : pass(w, ns, status, root, ready);
        json_decref(ns);
        json_decref(status);
        free(root);
        uv_mutex_lock(&w->mu);
        w->next_at = next;
    }
    uv_mutex_unlock(&w->mu);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static void free_writer(wf_kube_writer *w)
{
    wf_kw_sync_free(w->sync);
    if (w->cancel_fd >= 0)
        close(w->cancel_fd);
    json_decref(w->namespaces);
    json_decref(w->status);
    free(w->root_pem);
    free(w->cm_name);
    free(w->revision);
    free(w->field_sel);
    free(w->label_sel);
    uv_cond_destroy(&w->wake);
    uv_mutex_destroy(&w->mu);
    free(w);
}

void wf_kube_writer_stop(wf_kube_writer *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, true);
    uint64_t one = 1;
    if (w->cancel_fd >= 0 && write(w->cancel_fd, &one, sizeof one) < 0) {
        /* only on overflow: the flag is set already */
    }
    kick(w);
    if (w->thread_started)
        uv_thread_join(&w->thread);
    for (int g = 0; g < WF_KW_WATCHED; g++)
        wf_kube_reflector_stop(w->r[g]);
    free_writer(w);
}

static int start_reflectors(wf_kube_writer *w, const wf_kube_writer_opts *o, wf_strbuf *why)
{
    for (int g = 0; g < WF_KW_WATCHED; g++) {
        wf_kube_reflector_opts ro = {.kind = wf_kube_kind_find(GROUP_RESOURCE[g]),
                                     .field_selector = g == WF_KW_CM ? w->field_sel : NULL,
                                     .label_selector = g == WF_KW_CM ? NULL : w->label_sel,
                                     .page_size = o->page_size,
                                     .seed = o->seed ? o->seed + (uint64_t)g : 0};
        w->r[g] = ro.kind
                      ? wf_kube_reflector_start(w->loop, w->client, &ro, on_cache_changed, w, why)
                      : NULL;
        if (!w->r[g]) {
            if (!ro.kind)
                wf_strbuf_printf(why, "unknown kind %s", GROUP_RESOURCE[g]);
            return -1;
        }
    }
    return 0;
}

static char *printf_dup(const char *fmt, const char *a)
{
    int n = snprintf(NULL, 0, fmt, a);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        snprintf(s, (size_t)n + 1, fmt, a);
    return s;
}

wf_kube_writer *wf_kube_writer_start(uv_loop_t *loop, wf_kube_client *client,
                                     const wf_kube_writer_opts *opts, wf_strbuf *why)
{
    wf_kube_writer *w = calloc(1, sizeof *w);
    if (!w || uv_mutex_init(&w->mu) != 0) {
        free(w);
        wf_strbuf_puts(why, "out of memory");
        return NULL;
    }
    if (uv_cond_init(&w->wake) != 0) {
        uv_mutex_destroy(&w->mu);
        free(w);
        wf_strbuf_puts(why, "cannot create a condition variable");
        return NULL;
    }
    w->loop = loop;
    w->client = client;
    w->ready = opts->webhook_ready;
    w->analysis = opts->analysis;
    w->next_at = INT64_MAX;
    w->timeout_ms = opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 10000;
    w->cm_name = strdup(opts->cm_name && *opts->cm_name ? opts->cm_name : WF_KW_CM_NAME);
    w->revision = strdup(opts->revision && *opts->revision ? opts->revision : "default");
    w->field_sel = w->cm_name ? printf_dup("metadata.name=%s", w->cm_name) : NULL;
    w->label_sel = w->revision ? printf_dup(WF_KW_REV_LABEL "=%s", w->revision) : NULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    w->sync = wf_kw_sync_new(opts->seed ? opts->seed : (uint64_t)ts.tv_nsec * 2654435761u + 1);
    w->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!w->cm_name || !w->revision || !w->field_sel || !w->label_sel || !w->sync ||
        w->cancel_fd < 0) {
        wf_strbuf_puts(why, w->cancel_fd < 0 ? "cannot create an eventfd" : "out of memory");
        wf_kube_writer_stop(w);
        return NULL;
    }
    if (start_reflectors(w, opts, why) != 0) {
        wf_kube_writer_stop(w);
        return NULL;
    }
    if (uv_thread_create(&w->thread, run, w) != 0) {
        wf_strbuf_puts(why, "cannot start the writer's thread");
        wf_kube_writer_stop(w);
        return NULL;
    }
    w->thread_started = true;
    return w;
}

/* ---- inputs -------------------------------------------------------------------------------- */

void wf_kube_writer_set_config(wf_kube_writer *w, const wf_store *store, const wf_meshcfg *mesh,
                               const char *root_pem)
{
    json_t *ns = wf_kw_wanted_namespaces(store, mesh);
    json_t *status = w->analysis ? wf_kw_status_wanted(store, mesh) : NULL;
    if (!ns || (w->analysis && !status)) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "kubernetes: out of memory listing namespaces");
        json_decref(ns);
        json_decref(status);
        return;
    }
    uv_mutex_lock(&w->mu);
    bool same_status = !w->analysis || (w->status && json_equal(w->status, status));
    if (!same_status) {
        json_decref(w->status);
        w->status = status;
        status = NULL;
    }
    bool same_ns = w->namespaces && json_equal(w->namespaces, ns);
    bool same_root = (!w->root_pem && !root_pem) ||
                     (w->root_pem && root_pem && strcmp(w->root_pem, root_pem) == 0);
    if (!same_root) {
        char *r = root_pem ? strdup(root_pem) : NULL;
        if (r || !root_pem) {
            free(w->root_pem);
            w->root_pem = r;
        }
    }
    if (!same_ns) {
        json_decref(w->namespaces);
        w->namespaces = ns;
        ns = NULL;
    }
    if (!same_ns || !same_root || !same_status) {
        w->dirty = true;
        uv_cond_signal(&w->wake);
    }
    uv_mutex_unlock(&w->mu);
    json_decref(ns);
    json_decref(status);
}

void wf_kube_writer_set_webhook_ready(wf_kube_writer *w, bool ready)
{
    uv_mutex_lock(&w->mu);
    if (w->ready != ready) {
        w->ready = ready;
        w->dirty = true;
        uv_cond_signal(&w->wake);
    }
    uv_mutex_unlock(&w->mu);
}

/* ---- /debug/kubez and metrics --------------------------------------------------------------- */

static json_t *watch_json(wf_kube_reflector *r, const char *resource, const char *label,
                          const char *field)
{
    wf_kube_reflector_state st;
    wf_kube_reflector_state_get(r, &st);
    return json_pack("{s:s,s:s?,s:s?,s:s,s:s,s:b,s:I,s:I,s:s}", "resource", resource,
                     "labelSelector", label, "fieldSelector", field, "state",
                     wf_kube_reflector_phase_name(st.phase), "resourceVersion", st.rv, "synced",
                     st.synced, "objects", (json_int_t)st.objects, "errors", (json_int_t)st.errors,
                     "last_error", st.last_error);
}

json_t *wf_kube_writer_debug(wf_kube_writer *w)
{
    json_t *out = wf_kw_sync_debug(w->sync, wf_kube_now_ms());
    json_t *ws = json_array();
    for (int g = 0; ws && g < WF_KW_WATCHED; g++)
        if (json_array_append_new(ws,
                                  watch_json(w->r[g], GROUP_RESOURCE[g], g ? w->label_sel : NULL,
                                             g ? NULL : w->field_sel)) != 0) {
            json_decref(ws);
            ws = NULL;
        }
    uv_mutex_lock(&w->mu);
    bool ready = w->ready, root = w->root_pem != NULL;
    size_t nns = json_object_size(w->namespaces);
    uv_mutex_unlock(&w->mu);
    if (!out || !ws) {
        json_decref(out);
        json_decref(ws);
        return NULL;
    }
    if (json_object_update_new(out, json_pack("{s:s,s:s,s:b,s:b,s:I,s:o}", "configmap_name",
                                              w->cm_name, "revision", w->revision, "webhook_ready",
                                              ready, "root", root, "namespaces_wanted",
                                              (json_int_t)nns, "watches", ws)) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

void wf_kube_writer_metrics_text(wf_kube_writer *w, wf_strbuf *b)
{
    wf_kw_sync_metrics_text(w->sync, b);
}
