/*
 * kube_writer_sync.c - the write-back reconciler (kube_writer_sync.h).
 */
#include "pilot/kube_writer_sync.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/backoff.h"
#include "pilot/kube_writer_plan.h"

static const char *const GROUP_KIND[WF_KW_GROUPS] = {"ConfigMap", "MutatingWebhookConfiguration",
                                                     "ValidatingWebhookConfiguration", "status of"};
static const char *const GROUP_JSON[WF_KW_GROUPS] = {"configmaps", "mutatingwebhookconfigurations",
                                                     "validatingwebhookconfigurations", "status"};

typedef struct kw_item {
    int group;
    char *key;         /* namespace (ConfigMap) or configuration name */
    const char *state; /* static text */
    char last_error[512];
    uint64_t writes, errors, conflicts;
    wf_kube_backoff bo;
    int64_t retry_at; /* 0 = no retry pending */
    bool waiting;     /* written at cache generation wrote_gen, its event not seen yet */
    uint64_t wrote_gen;
    bool seen;       /* in the current pass */
    char *last_body; /* status: the messages last written (JSON text), NULL = never */
} kw_item;

struct wf_kw_sync {
    pthread_mutex_t mu; /* guards items and counters against wf_kw_sync_debug */
    kw_item *items;
    size_t n, cap;
    uint64_t seed;
    wf_kw_counts counts;
    char logged[WF_KW_GROUPS][256]; /* the cause last logged per group; "" = none */
};

wf_kw_sync *wf_kw_sync_new(uint64_t seed)
{
    wf_kw_sync *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->seed = seed ? seed : 0x9E3779B97F4A7C15ull;
    return s;
}

void wf_kw_sync_free(wf_kw_sync *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->items[i].key);
        free(s->items[i].last_body);
    }
    free(s->items);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* The item of (group, key), made when absent; NULL on OOM. Called with the lock held. */
static kw_item *item_get(wf_kw_sync *s, int group, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].group == group && strcmp(s->items[i].key, key) == 0)
            return &s->items[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        kw_item *v = realloc(s->items, cap * sizeof *v);
        if (!v)
            return NULL;
        s->items = v;
        s->cap = cap;
    }
    kw_item *it = &s->items[s->n];
    memset(it, 0, sizeof *it);
    it->key = strdup(key);
    if (!it->key)
        return NULL;
    it->group = group;
    it->state = "pending";
    s->seed = s->seed * 6364136223846793005ull + 1442695040888963407ull;
    it->bo.rng = s->seed | 1;
    s->n++;
    return it;
}

/* Drops the items of the groups done in this pass that were not seen. Lock held. */
static void drop_unseen(wf_kw_sync *s, const bool done[WF_KW_GROUPS])
{
    size_t j = 0;
    for (size_t i = 0; i < s->n; i++) {
        kw_item *it = &s->items[i];
        if (done[it->group] && !it->seen) {
            free(it->key);
            free(it->last_body);
            continue;
        }
        it->seen = false;
        s->items[j++] = *it;
    }
    s->n = j;
}

/* The error's cause: "409 Conflict", or the transport error without "METHOD PATH: ". */
static void cause_of(const wf_kube_status *st, const char *why, char *out, size_t cap)
{
    if (st->code) {
        snprintf(out, cap, "%d %s", st->code, st->reason[0] ? st->reason : "");
        return;
    }
    const char *p = strstr(why, ": ");
    snprintf(out, cap, "%s", p ? p + 2 : why);
}

typedef struct pass_ctx {
    wf_kw_sync *s;
    const wf_kw_inputs *in;
    wf_kw_request_fn fn;
    void *ud;
    int64_t next;
} pass_ctx;

static void count_write(wf_kw_sync *s, wf_kw_op op)
{
    if (op == WF_KW_CREATE)
        s->counts.creates++;
    else if (op == WF_KW_UPDATE)
        s->counts.updates++;
    else
        s->counts.patches++;
}

/* Sends a (locked on entry and exit; unlocked during the request) and records the result. */
static void execute(pass_ctx *c, int group, const char *key, const wf_kw_action *a)
{
    wf_kw_sync *s = c->s;
    wf_kube_status st;
    wf_strbuf why = WF_STRBUF_INIT;
    pthread_mutex_unlock(&s->mu);
    int rc = c->fn(c->ud, a->method, a->path, a->content_type, a->body, &st, &why);
    pthread_mutex_lock(&s->mu);
    kw_item *it = item_get(s, group, key); /* the table may have moved meanwhile: look again */
    if (!it) {
        wf_strbuf_free(&why);
        return;
    }
    it->seen = true;
    if (rc != 0 && a->op == WF_KW_CREATE && st.code == 409 &&
        strcmp(st.reason, "AlreadyExists") == 0) {
        /* it exists and our watch has not told us yet (an earlier create of ours, or
         * someone's): wait for its event, then compare as for any object; not an error */
        it->state = "exists (waiting for its watch event)";
        it->waiting = group != WF_KW_STATUS;
        it->wrote_gen = c->in->gen[group];
        it->retry_at = group == WF_KW_STATUS ? c->in->now_ms + 1000 : 0;
        wf_strbuf_free(&why);
        return;
    }
    if (rc == 0) {
        static const char *const done[] = {"in sync", "created", "updated", "patched"};
        it->state = done[a->op];
        it->writes++;
        it->retry_at = 0;
        it->bo.next_ms = 0;
        it->waiting = group != WF_KW_STATUS; /* status: compared with last_body instead */
        it->wrote_gen = c->in->gen[group];
        char *w = a->written ? strdup(a->written) : NULL;
        if (w) {
            free(it->last_body);
            it->last_body = w;
        }
        count_write(s, a->op);
        if (s->logged[group][0]) {
            WF_LOG(WF_LC_config, WF_LOG_INFO, "kubernetes: %s %s written again (%s)",
                   GROUP_KIND[group], key, wf_kw_op_name(a->op));
            s->logged[group][0] = '\0';
        }
        /* istiod logs its webhook updates ("Successfully updated ..."), not the ConfigMaps */
        WF_LOG(WF_LC_config, group == WF_KW_CM ? WF_LOG_DEBUG : WF_LOG_INFO, "kubernetes: %s %s %s",
               wf_kw_op_name(a->op), GROUP_KIND[group], key);
    } else {
        char cause[256];
        cause_of(&st, wf_strbuf_cstr(&why), cause, sizeof cause);
        it->state = "error";
        it->errors++;
        s->counts.errors++;
        if (st.code == 409) {
            it->conflicts++;
            s->counts.conflicts++;
        }
        snprintf(it->last_error, sizeof it->last_error, "%s", wf_strbuf_cstr(&why));
        int64_t wait = wf_kube_backoff_step(&it->bo, c->in->now_ms);
        it->retry_at = c->in->now_ms + wait;
        if (strcmp(s->logged[group], cause) != 0) {
            WF_LOG(WF_LC_config, WF_LOG_WARN,
                   "kubernetes: cannot %s %s %s: %s (retrying with back-off; further errors "
                   "of this cause are counted in /debug/kubez, not logged)",
                   wf_kw_op_name(a->op), GROUP_KIND[group], key, wf_strbuf_cstr(&why));
            snprintf(s->logged[group], sizeof s->logged[group], "%s", cause);
        }
    }
    wf_strbuf_free(&why);
}

/* Plans and, when needed, writes one object. Lock held. 0, or -1 on OOM. */
static int one(pass_ctx *c, int group, const char *key, const json_t *obj)
{
    wf_kw_sync *s = c->s;
    const wf_kw_inputs *in = c->in;
    kw_item *it = item_get(s, group, key);
    if (!it)
        return -1;
    it->seen = true;
    if (it->retry_at && it->retry_at > in->now_ms) {
        c->next = it->retry_at < c->next ? it->retry_at : c->next;
        return 0;
    }
    if (it->waiting && it->wrote_gen == in->gen[group])
        return 0; /* our write's event has not come back yet */
    it->waiting = false;
    wf_kw_action a;
    int rc = group == WF_KW_CM    ? wf_kw_plan_configmap(in->cm_name, key, obj, in->root_pem, &a)
             : group == WF_KW_MWC ? wf_kw_plan_mutating(obj, in->revision, in->root_pem, &a)
             : group == WF_KW_VWC
                 ? wf_kw_plan_validating(obj, in->revision, in->root_pem, in->webhook_ready, &a)
                 : wf_kw_plan_status(obj, it->last_body, &a);
    if (rc != 0)
        return -1;
    if (a.op == WF_KW_NONE) {
        it->state = a.note;
        it->retry_at = 0;
    } else {
        execute(c, group, key, &a);
        it = item_get(s, group, key);
        if (it && it->retry_at)
            c->next = it->retry_at < c->next ? it->retry_at : c->next;
    }
    wf_kw_action_clear(&a);
    return 0;
}

static bool stopped(const wf_kw_inputs *in)
{
    return in->stop && atomic_load(in->stop);
}

/* The objects of one group: the webhook configurations of a cache, or the status entries. */
static int webhooks(pass_ctx *c, int group, const json_t *objs)
{
    const char *name;
    json_t *obj;
    json_object_foreach((json_t *)objs, name, obj)
    {
        if (stopped(c->in) || one(c, group, name, obj) != 0)
            return -1;
    }
    return 0;
}

static int configmaps(pass_ctx *c)
{
    const char *ns;
    json_t *v;
    json_object_foreach((json_t *)c->in->namespaces, ns, v)
    {
        char key[512];
        snprintf(key, sizeof key, "%s/%s", ns, c->in->cm_name);
        const json_t *cur = json_object_get(c->in->cache[WF_KW_CM], key);
        if (stopped(c->in) || one(c, WF_KW_CM, ns, cur) != 0)
            return -1;
    }
    return 0;
}

int64_t wf_kw_sync_pass(wf_kw_sync *s, const wf_kw_inputs *in, wf_kw_request_fn fn, void *ud)
{
    pass_ctx c = {.s = s, .in = in, .fn = fn, .ud = ud, .next = INT64_MAX};
    bool done[WF_KW_GROUPS] = {false, false, false, false};
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    for (int g = WF_KW_MWC; in->root_pem && rc == 0 && g <= WF_KW_VWC; g++) {
        if (!in->cache[g])
            continue;
        rc = webhooks(&c, g, in->cache[g]);
        done[g] = rc == 0;
    }
    if (in->root_pem && rc == 0 && in->cache[WF_KW_CM] && in->namespaces) {
        rc = configmaps(&c);
        done[WF_KW_CM] = rc == 0;
    }
    if (rc == 0 && in->status) {
        rc = webhooks(&c, WF_KW_STATUS, in->status);
        done[WF_KW_STATUS] = rc == 0;
    }
    drop_unseen(s, done);
    pthread_mutex_unlock(&s->mu);
    return rc == 0 || stopped(in) ? c.next : -1;
}

void wf_kw_sync_counts(wf_kw_sync *s, wf_kw_counts *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->counts;
    pthread_mutex_unlock(&s->mu);
}

static json_t *item_json(const kw_item *it, int64_t now_ms)
{
    int64_t left = it->retry_at > now_ms ? it->retry_at - now_ms : 0;
    return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "state", it->state, "last_error", it->last_error,
                     "writes", (json_int_t)it->writes, "errors", (json_int_t)it->errors,
                     "conflicts", (json_int_t)it->conflicts, "retry_in_ms",
                     (json_int_t)(it->retry_at ? left : 0));
}

json_t *wf_kw_sync_debug(wf_kw_sync *s, int64_t now_ms)
{
    json_t *out = json_object(), *g[WF_KW_GROUPS];
    int rc = out ? 0 : -1;
    for (int i = 0; i < WF_KW_GROUPS; i++) {
        g[i] = json_object();
        if (rc == 0)
            rc = json_object_set_new(out, GROUP_JSON[i], g[i]);
        else
            json_decref(g[i]);
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; rc == 0 && i < s->n; i++)
        rc = json_object_set_new(g[s->items[i].group], s->items[i].key,
                                 item_json(&s->items[i], now_ms));
    wf_kw_counts k = s->counts;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0)
        rc = json_object_set_new(
            out, "counters",
            json_pack("{s:I,s:I,s:I,s:I,s:I}", "creates", (json_int_t)k.creates, "updates",
                      (json_int_t)k.updates, "patches", (json_int_t)k.patches, "errors",
                      (json_int_t)k.errors, "conflicts", (json_int_t)k.conflicts));
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

void wf_kw_sync_metrics_text(wf_kw_sync *s, wf_strbuf *b)
{
    pthread_mutex_lock(&s->mu);
    wf_strbuf_puts(b, "# HELP webhook_patch_attempts_total Webhook patching attempts\n"
                      "# TYPE webhook_patch_attempts_total counter\n");
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].group == WF_KW_MWC)
            wf_strbuf_printf(b, "webhook_patch_attempts_total{name=\"%s\"} %llu\n", s->items[i].key,
                             (unsigned long long)(s->items[i].writes + s->items[i].errors));
    wf_strbuf_puts(b, "# HELP webhook_patch_retries_total Webhook patching retries\n"
                      "# TYPE webhook_patch_retries_total counter\n");
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].group == WF_KW_MWC)
            wf_strbuf_printf(b, "webhook_patch_retries_total{name=\"%s\"} %llu\n", s->items[i].key,
                             (unsigned long long)s->items[i].errors);
    uint64_t vup = 0, verr = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].group == WF_KW_VWC) {
            vup += s->items[i].writes;
            verr += s->items[i].errors;
        }
    wf_strbuf_printf(b,
                     "# HELP galley_validation_config_updates k8s webhook configuration updates\n"
                     "# TYPE galley_validation_config_updates counter\n"
                     "galley_validation_config_updates %llu\n"
                     "# HELP galley_validation_config_update_error k8s webhook configuration "
                     "update error\n"
                     "# TYPE galley_validation_config_update_error counter\n"
                     "galley_validation_config_update_error %llu\n",
                     (unsigned long long)vup, (unsigned long long)verr);
    wf_kw_counts k = s->counts;
    pthread_mutex_unlock(&s->mu);
    wf_strbuf_printf(b,
                     "# HELP weft_pilot_kube_writes_total Objects weft-pilot wrote to the "
                     "Kubernetes API (root ConfigMaps, webhook configurations)\n"
                     "# TYPE weft_pilot_kube_writes_total counter\n"
                     "weft_pilot_kube_writes_total{op=\"create\"} %llu\n"
                     "weft_pilot_kube_writes_total{op=\"update\"} %llu\n"
                     "weft_pilot_kube_writes_total{op=\"patch\"} %llu\n"
                     "# HELP weft_pilot_kube_write_errors_total Failed writes (retried)\n"
                     "# TYPE weft_pilot_kube_write_errors_total counter\n"
                     "weft_pilot_kube_write_errors_total %llu\n"
                     "# HELP weft_pilot_kube_write_conflicts_total Writes refused with 409\n"
                     "# TYPE weft_pilot_kube_write_conflicts_total counter\n"
                     "weft_pilot_kube_write_conflicts_total %llu\n",
                     (unsigned long long)k.creates, (unsigned long long)k.updates,
                     (unsigned long long)k.patches, (unsigned long long)k.errors,
                     (unsigned long long)k.conflicts);
}
