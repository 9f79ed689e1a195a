/*
 * source_kube.c - the Kubernetes config source: reflectors, debounce, builds. See
 * source_kube.h.
 */
#include "pilot/source_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/strbuf.h"
#include "kube/client.h"
#include "kube/kinds.h"
#include "kube/kubeconfig.h"
#include "kube/reflector.h"
#include "pilot/source_kube_conv.h"

#define SECRET_TYPES "type!=helm.sh/release.v1,type!=kubernetes.io/service-account-token"

/* One watched kind. */
typedef struct watch {
    const wf_kube_kind *kind;
    const char *ns, *field_selector; /* NULL = all namespaces / none */
    wf_kube_reflector *r;
} watch;

typedef struct kube_src {
    wf_config_source iface;
    uv_loop_t *loop;
    wf_kube_source_opts opts; /* strings below are owned copies */
    char *kubeconfig, *context, *root, *system_ns, *domain, *mesh_selector;
    wf_kube_client *client;
    watch *w;
    size_t n_w;
    uv_timer_t debounce;
    bool pending;
    uint64_t first_ms;
    int64_t first_wall_ms;
    uint64_t built_gen; /* sum of the reflectors' generations at the last build */
    wf_snapshot *cur;
    json_t *not_ready, *ignored, *discovery; /* of the last build */
    bool started, stopping, timer_open;
} kube_src;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- build ------------------------------------------------------------------------------- */

static uint64_t generations(kube_src *k)
{
    uint64_t g = 0;
    for (size_t i = 0; i < k->n_w; i++) {
        wf_kube_reflector_state st;
        wf_kube_reflector_state_get(k->w[i].r, &st);
        g += st.generation;
    }
    return g;
}

/* {"Kind": {"ns/name": obj}} of every cache now; NULL on OOM. */
static json_t *caches(kube_src *k)
{
    json_t *in = json_object();
    for (size_t i = 0; in && i < k->n_w; i++) {
        json_t *snap = wf_kube_reflector_snapshot(k->w[i].r);
        if (!snap || json_object_set_new(in, k->w[i].kind->kind, snap)) {
            json_decref(in);
            return NULL;
        }
    }
    return in;
}

static void log_ignored(kube_src *k, const json_t *ignored)
{
    size_t i;
    const json_t *m;
    json_array_foreach(ignored, i, m)
    {
        bool seen = false;
        size_t j;
        const json_t *o;
        json_array_foreach(k->ignored, j, o) seen |= json_equal(o, m);
        if (!seen)
            WF_LOG(WF_LC_config, WF_LOG_WARN, "kubernetes: %s", json_string_value(m));
    }
}

static void rebuild(kube_src *k)
{
    k->built_gen = generations(k);
    json_t *in = caches(k);
    wf_kube_docs docs;
    if (!in || wf_kube_docs_make(in, k->opts.system_ns, &docs) != 0) {
        json_decref(in);
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "config: out of memory building a snapshot");
        return;
    }
    json_decref(in);
    wf_dir_source_opts o = {.domain_suffix = k->opts.domain_suffix,
                            .default_ns = "default",
                            .service_ips = k->opts.service_ips,
                            .docs = docs.docs,
                            .n_docs = docs.n,
                            .mesh_text = docs.mesh_text,
                            .mesh_len = docs.mesh_len,
                            .mesh_name = docs.mesh_name,
                            .discovery_selectors = true,
                            .kubernetes = true};
    int64_t changed_at = k->first_wall_ms ? k->first_wall_ms : wall_ms();
    wf_snapshot *s = wf_source_build(&o, k->cur, changed_at);
    k->first_wall_ms = 0;
    log_ignored(k, docs.ignored);
    json_decref(k->not_ready);
    json_decref(k->ignored);
    json_decref(k->discovery);
    k->discovery = json_incref(docs.discovery);
    k->not_ready = json_incref(docs.not_ready);
    k->ignored = json_incref(docs.ignored);
    wf_kube_docs_free(&docs);
    if (!s) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "config: out of memory building a snapshot");
        return;
    }
    WF_LOG(WF_LC_config, WF_LOG_INFO,
           "config: snapshot %llu: %zu resources from the Kubernetes API, %zu errors, %zu "
           "warnings, change %s, built in %.1f ms",
           (unsigned long long)s->seq, wf_store_count(s->store), s->n_errors, s->n_warnings,
           wf_change_kind_name(s->change), s->build_ms);
    wf_snapshot_unref(k->cur);
    k->cur = s;
    if (k->iface.on_change)
        k->iface.on_change(s, k->iface.on_change_ud);
}

static void on_debounce(uv_timer_t *t)
{
    kube_src *k = t->data;
    k->pending = false;
    if (generations(k) != k->built_gen)
        rebuild(k);
}

/* The directory source's debounce (source.c poke). */
static void on_changed(void *ud)
{
    kube_src *k = ud;
    if (k->stopping || !k->started || generations(k) == k->built_gen)
        return;
    uint64_t now = uv_now(k->loop);
    if (!k->pending) {
        k->pending = true;
        k->first_ms = now;
        k->first_wall_ms = wall_ms();
    }
    uint64_t elapsed = now - k->first_ms;
    uint64_t left = elapsed >= k->opts.debounce_max_ms ? 0 : k->opts.debounce_max_ms - elapsed;
    uint64_t delay = left < k->opts.debounce_after_ms ? left : k->opts.debounce_after_ms;
    uv_timer_start(&k->debounce, on_debounce, delay, 0);
}

/* ---- /debug/kubez -------------------------------------------------------------------------- */

static json_t *watch_json(const watch *w)
{
    wf_kube_reflector_state st;
    wf_kube_reflector_state_get(w->r, &st);
    const wf_kube_kind *kd = w->kind;
    return json_pack("{s:s,s:s,s:s,s:s?,s:s?,s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I}",
                     "kind", kd->kind, "group", kd->group, "resource", kd->resource, "namespace",
                     w->ns, "fieldSelector", w->field_selector, "state",
                     wf_kube_reflector_phase_name(st.phase), "resourceVersion", st.rv, "synced",
                     st.synced, "objects", (json_int_t)st.objects, "lists", (json_int_t)st.lists,
                     "relists_expired", (json_int_t)st.relists_expired, "watches",
                     (json_int_t)st.watches, "events", (json_int_t)st.events, "bookmarks",
                     (json_int_t)st.bookmarks, "errors", (json_int_t)st.errors, "generation",
                     (json_int_t)st.generation, "last_error", st.last_error, "backoff_ms",
                     (json_int_t)st.backoff_ms);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of obj as a sorted JSON array; NULL on OOM. */
static json_t *sorted_names(json_t *obj)
{
    size_t n = json_object_size(obj), i = 0;
    const char **v = malloc((n ? n : 1) * sizeof *v);
    json_t *arr = json_array();
    const char *key;
    json_t *val;
    if (!v || !arr) {
        free(v);
        json_decref(arr);
        return NULL;
    }
    json_object_foreach(obj, key, val) v[i++] = key;
    qsort(v, n, sizeof *v, cmp_str);
    for (i = 0; i < n; i++)
        json_array_append_new(arr, json_string(v[i]));
    free(v);
    return arr;
}

static json_t *src_debug(wf_config_source *src)
{
    kube_src *k = src->impl;
    const wf_kube_config *c = k->client ? wf_kube_client_config(k->client) : NULL;
    json_t *ws = json_array();
    for (size_t i = 0; ws && i < k->n_w; i++)
        if (json_array_append_new(ws, watch_json(&k->w[i]))) {
            json_decref(ws);
            ws = NULL;
        }
    if (!ws)
        return NULL;
    json_t *disc = k->discovery ? sorted_names(k->discovery) : NULL; /* null = every one */
    return json_pack("{s:s,s:s?,s:s?,s:s?,s:I,s:o,s:O?,s:O?,s:o?}", "source", "kubernetes",
                     "server", c ? c->server : NULL, "context", c ? c->context : NULL, "origin",
                     c ? c->origin : NULL, "snapshot", (json_int_t)(k->cur ? k->cur->seq : 0),
                     "watches", ws, "pods_not_endpoints", k->not_ready, "ignored", k->ignored,
                     "discovery_namespaces", disc);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

static void free_src(kube_src *k)
{
    free(k->w);
    wf_kube_client_free(k->client);
    free(k->kubeconfig);
    free(k->context);
    free(k->root);
    free(k->system_ns);
    free(k->domain);
    free(k->mesh_selector);
    wf_snapshot_unref(k->cur);
    json_decref(k->not_ready);
    json_decref(k->ignored);
    json_decref(k->discovery);
    free(k);
}

static void on_timer_closed(uv_handle_t *h)
{
    free_src(h->data);
}

static void stop_reflectors(kube_src *k)
{
    for (size_t i = 0; i < k->n_w; i++) {
        wf_kube_reflector_stop(k->w[i].r);
        k->w[i].r = NULL;
    }
    k->n_w = 0;
}

static void src_stop(wf_config_source *src)
{
    kube_src *k = src->impl;
    if (k->stopping)
        return;
    k->stopping = true;
    stop_reflectors(k);
    if (k->timer_open)
        uv_close((uv_handle_t *)&k->debounce, on_timer_closed);
    else
        free_src(k);
}

static wf_snapshot *src_current(wf_config_source *src)
{
    return ((kube_src *)src->impl)->cur;
}

static int make_client(kube_src *k, char *err, size_t cap)
{
    wf_kube_config *cfg = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = k->opts.in_cluster ? wf_kube_incluster_env(k->root, &cfg, &why)
                                : wf_kubeconfig_load(k->kubeconfig, k->context, &cfg, &why);
    if (rc == 0)
        rc = wf_kube_client_new(cfg, &k->client, &why);
    if (rc != 0)
        snprintf(err, cap, "%s", wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    return rc;
}

static int start_watches(kube_src *k, char *err, size_t cap)
{
    size_t nk;
    const wf_kube_kind *kinds = wf_kube_kinds(&nk);
    k->w = calloc(nk, sizeof *k->w);
    if (!k->w) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nk; i++) {
        watch *w = &k->w[k->n_w];
        w->kind = &kinds[i];
        if (strcmp(w->kind->kind, "Pod") == 0)
            w->field_selector = "status.phase!=Failed";
        else if (strcmp(w->kind->kind, "Secret") == 0)
            w->field_selector = SECRET_TYPES;
        else if (strcmp(w->kind->kind, "ConfigMap") == 0) {
            w->ns = k->opts.system_ns;
            w->field_selector = k->mesh_selector;
        }
        wf_kube_reflector_opts ro = {.kind = w->kind,
                                     .ns = w->ns,
                                     .field_selector = w->field_selector,
                                     .page_size = k->opts.page_size};
        wf_strbuf why = WF_STRBUF_INIT;
        w->r = wf_kube_reflector_start(k->loop, k->client, &ro, on_changed, k, &why);
        if (!w->r) {
            snprintf(err, cap, "cannot watch %s: %s", w->kind->resource, wf_strbuf_cstr(&why));
            wf_strbuf_free(&why);
            return -1;
        }
        wf_strbuf_free(&why);
        k->n_w++;
    }
    return 0;
}

/* istiod waits for its informers to sync before serving: so does start(). */
static int wait_synced(kube_src *k, char *err, size_t cap)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    wf_strbuf why = WF_STRBUF_INIT;
    for (size_t i = 0; i < k->n_w; i++) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t used = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        int64_t left = k->opts.sync_timeout_ms > used ? k->opts.sync_timeout_ms - used : 0;
        if (wf_kube_reflector_wait_synced(k->w[i].r, left))
            continue;
        wf_kube_reflector_state st;
        wf_kube_reflector_state_get(k->w[i].r, &st);
        wf_strbuf_printf(&why, "%s%s (%s)", why.len ? "; " : "", k->w[i].kind->resource,
                         st.last_error[0] ? st.last_error : "no answer");
    }
    int rc = why.len ? -1 : 0;
    if (rc)
        snprintf(err, cap, "Kubernetes API %s: not synced after %lld ms: %s",
                 wf_kube_client_config(k->client)->server, (long long)k->opts.sync_timeout_ms,
                 wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    return rc;
}

static int src_start(wf_config_source *src, char *err, size_t cap)
{
    kube_src *k = src->impl;
    if (k->started || k->stopping) {
        snprintf(err, cap, "config source already started");
        return -1;
    }
    if (make_client(k, err, cap) || start_watches(k, err, cap) || wait_synced(k, err, cap)) {
        stop_reflectors(k);
        return -1;
    }
    uv_timer_init(k->loop, &k->debounce);
    k->debounce.data = k;
    k->timer_open = true;
    k->started = true;
    WF_LOG(WF_LC_config, WF_LOG_INFO, "kubernetes: %s (%s): %zu watches synced",
           wf_kube_client_config(k->client)->server, wf_kube_client_config(k->client)->origin,
           k->n_w);
    rebuild(k);
    if (!k->cur) {
        snprintf(err, cap, "out of memory building the first config snapshot");
        return -1;
    }
    return 0;
}

wf_kube_client *wf_kube_source_client(wf_config_source *src)
{
    kube_src *k = src->impl;
    return k->started && !k->stopping ? k->client : NULL;
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *c = s ? strdup(s) : NULL;
    *oom |= s && !c;
    return c;
}

int wf_kube_source_new(uv_loop_t *loop, const wf_kube_source_opts *opts, wf_config_source **out)
{
    bool oom = false;
    kube_src *k = calloc(1, sizeof *k);
    if (!k)
        return -1;
    k->loop = loop;
    k->opts = *opts;
    k->kubeconfig = dup_or_null(opts->kubeconfig, &oom);
    k->context = dup_or_null(opts->context, &oom);
    k->root = dup_or_null(opts->incluster_root, &oom);
    k->system_ns = dup_or_null(opts->system_ns ? opts->system_ns : "istio-system", &oom);
    k->domain = dup_or_null(opts->domain_suffix, &oom);
    k->mesh_selector = dup_or_null("metadata.name=istio", &oom);
    if (oom) {
        free_src(k);
        return -1;
    }
    k->opts.kubeconfig = k->kubeconfig;
    k->opts.context = k->context;
    k->opts.incluster_root = k->root;
    k->opts.system_ns = k->system_ns;
    k->opts.domain_suffix = k->domain;
    k->opts.debounce_after_ms = opts->debounce_after_ms ? opts->debounce_after_ms : 100;
    k->opts.debounce_max_ms = opts->debounce_max_ms ? opts->debounce_max_ms : 10000;
    k->opts.sync_timeout_ms = opts->sync_timeout_ms > 0 ? opts->sync_timeout_ms : 30000;
    k->iface.start = src_start;
    k->iface.stop = src_stop;
    k->iface.current = src_current;
    k->iface.debug = src_debug;
    k->iface.impl = k;
    *out = &k->iface;
    return 0;
}
