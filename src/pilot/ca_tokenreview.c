/*
 * ca_tokenreview.c - TokenReview authentication of Kubernetes service-account tokens (see
 * ca_tokenreview.h): the request and answer, the cache, the worker threads.
 */
#include "pilot/ca_tokenreview.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "core/base64.h"
#include "kube/client.h"

/* ---- pure helpers ------------------------------------------------------------------------- */

int wf_tr_parse_username(const char *u, char *ns, char *sa)
{
    static const char prefix[] = "system:serviceaccount:";
    if (!u || strncmp(u, prefix, sizeof prefix - 1) != 0)
        return -1;
    const char *n = u + sizeof prefix - 1, *colon = strchr(n, ':');
    if (!colon || strchr(colon + 1, ':'))
        return -1; /* strings.Split(username, ":") must give four parts */
    size_t nl = (size_t)(colon - n), sl = strlen(colon + 1);
    if (nl >= WF_TR_NAME_MAX || sl >= WF_TR_NAME_MAX)
        return -1;
    memcpy(ns, n, nl);
    ns[nl] = '\0';
    memcpy(sa, colon + 1, sl + 1);
    return 0;
}

int wf_tr_request_body(const char *token, wf_strbuf *out)
{
    json_t *o =
        json_pack("{s:s, s:s, s:{s:s, s:[s]}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                  "TokenReview", "spec", "token", token, "audiences", WF_TR_AUDIENCE);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -1;
    wf_strbuf_puts(out, s);
    OPENSSL_cleanse(s, strlen(s)); /* the token */
    free(s);
    return wf_strbuf_failed(out) ? -1 : 0;
}

static bool has_string(const json_t *arr, const char *want)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
            return true;
    }
    return false;
}

static void audiences_text(const json_t *arr, char *buf, size_t cap)
{
    size_t i, off = 0;
    const json_t *v;
    off += (size_t)snprintf(buf, cap, "[");
    json_array_foreach(arr, i, v)
    {
        if (off < cap)
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? " " : "",
                                    json_is_string(v) ? json_string_value(v) : "?");
    }
    if (off < cap)
        snprintf(buf + off, cap - off, "]");
}

static int review_status(const json_t *st, char *ns, char *sa, char *why, size_t cap)
{
    const char *err = json_string_value(json_object_get(st, "error"));
    if (err && *err) {
        snprintf(why, cap, "the service account authentication returns an error: %s", err);
        return -1;
    }
    if (!json_is_true(json_object_get(st, "authenticated"))) {
        snprintf(why, cap, "the token is not authenticated");
        return -1;
    }
    const json_t *user = json_object_get(st, "user");
    if (!has_string(json_object_get(user, "groups"), "system:serviceaccounts")) {
        snprintf(why, cap, "the token is not a service account");
        return -1;
    }
    if (wf_tr_parse_username(json_string_value(json_object_get(user, "username")), ns, sa) != 0) {
        snprintf(why, cap, "invalid username field in the token review result");
        return -1;
    }
    const json_t *auds = json_object_get(st, "audiences");
    if (json_is_array(auds) && !has_string(auds, WF_TR_AUDIENCE)) {
        char t[200];
        audiences_text(auds, t, sizeof t);
        snprintf(why, cap, "the token audiences %s do not include %s", t, WF_TR_AUDIENCE);
        return -1;
    }
    if (!*sa) {
        snprintf(why, cap, "failed to parse the JWT; service account required");
        return -1;
    }
    if (!*ns) {
        snprintf(why, cap, "failed to parse the JWT; namespace required");
        return -1;
    }
    return 0;
}

int wf_tr_parse_review(const char *json, size_t len, char *ns, char *sa, char *why, size_t cap)
{
    json_error_t je;
    json_t *o = json_loadb(json, len, 0, &je);
    if (!json_is_object(o)) {
        snprintf(why, cap, "the TokenReview answer is not a JSON object");
        json_decref(o);
        return -1;
    }
    int rc = review_status(json_object_get(o, "status"), ns, sa, why, cap);
    json_decref(o);
    return rc;
}

int64_t wf_tr_token_exp(const char *token)
{
    const char *a = strchr(token, '.'), *b = a ? strchr(a + 1, '.') : NULL;
    if (!b || (size_t)(b - a - 1) > 8192)
        return 0;
    size_t n = (size_t)(b - a - 1), outlen = 0;
    unsigned char *buf = malloc(3 * (n / 4 + 1) + 1);
    int64_t exp = 0;
    if (buf && wf_base64_decode(a + 1, n, WF_B64_URL | WF_B64_PAD_OPTIONAL, buf, &outlen)) {
        json_t *c = json_loadb((const char *)buf, outlen, 0, NULL);
        const json_t *e = json_object_get(c, "exp");
        exp = json_is_integer(e) ? (int64_t)json_integer_value(e) : 0;
        json_decref(c);
    }
    free(buf);
    return exp;
}

/* ---- the cache ---------------------------------------------------------------------------- */

typedef struct tr_entry {
    unsigned char hash[SHA256_DIGEST_LENGTH];
    int64_t until;
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX];
} tr_entry;

struct wf_tr_cache {
    tr_entry *e;
    size_t n, max;
    int64_t ttl_s;
};

wf_tr_cache *wf_tr_cache_new(size_t max, int64_t ttl_s)
{
    wf_tr_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max = max ? max : WF_TR_CACHE_MAX;
    c->ttl_s = ttl_s > 0 ? ttl_s : WF_TR_DEFAULT_TTL_S;
    c->e = calloc(c->max, sizeof *c->e);
    if (!c->e) {
        free(c);
        return NULL;
    }
    return c;
}

void wf_tr_cache_free(wf_tr_cache *c)
{
    if (!c)
        return;
    free(c->e);
    free(c);
}

size_t wf_tr_cache_len(const wf_tr_cache *c)
{
    return c->n;
}

static void hash_token(const char *token, unsigned char out[SHA256_DIGEST_LENGTH])
{
    SHA256((const unsigned char *)token, strlen(token), out);
}

static tr_entry *find(wf_tr_cache *c, const unsigned char *h)
{
    for (size_t i = 0; i < c->n; i++)
        if (memcmp(c->e[i].hash, h, SHA256_DIGEST_LENGTH) == 0)
            return &c->e[i];
    return NULL;
}

int wf_tr_cache_get(wf_tr_cache *c, const char *token, int64_t now_s, char *ns, char *sa)
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    hash_token(token, h);
    const tr_entry *e = find(c, h);
    if (!e || e->until <= now_s)
        return 0;
    memcpy(ns, e->ns, WF_TR_NAME_MAX);
    memcpy(sa, e->sa, WF_TR_NAME_MAX);
    return 1;
}

static void drop_expired(wf_tr_cache *c, int64_t now_s)
{
    size_t j = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].until > now_s)
            c->e[j++] = c->e[i];
    c->n = j;
}

static tr_entry *slot(wf_tr_cache *c, const unsigned char *h, int64_t now_s)
{
    tr_entry *e = find(c, h);
    if (e)
        return e;
    if (c->n == c->max)
        drop_expired(c, now_s);
    if (c->n == c->max) { /* the entry that ends first goes */
        size_t first = 0;
        for (size_t i = 1; i < c->n; i++)
            if (c->e[i].until < c->e[first].until)
                first = i;
        c->e[first] = c->e[--c->n];
    }
    return &c->e[c->n++];
}

void wf_tr_cache_put(wf_tr_cache *c, const char *token, int64_t now_s, int64_t exp, const char *ns,
                     const char *sa)
{
    int64_t until = now_s + c->ttl_s;
    if (exp > 0 && exp < until)
        until = exp;
    if (until <= now_s || strlen(ns) >= WF_TR_NAME_MAX || strlen(sa) >= WF_TR_NAME_MAX)
        return;
    unsigned char h[SHA256_DIGEST_LENGTH];
    hash_token(token, h);
    tr_entry *e = slot(c, h, now_s);
    memcpy(e->hash, h, sizeof h);
    e->until = until;
    snprintf(e->ns, sizeof e->ns, "%s", ns);
    snprintf(e->sa, sizeof e->sa, "%s", sa);
}

/* ---- the reviewer ------------------------------------------------------------------------- */

struct wf_tr_pending {
    wf_tr_pending *next;
    char *token; /* cleansed and freed once reviewed */
    int64_t exp, now_s;
    wf_tr_done cb; /* loop only */
    void *ud;
    bool cancelled;
    bool ok; /* the worker's answer */
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX], why[640];
};

struct wf_tokenreview {
    uv_loop_t *loop;
    uv_async_t *async; /* answers ready; its data is the reviewer */
    wf_kube_client *client;
    wf_tr_cache *cache;
    long timeout_ms;
    int cancel_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wf_tr_pending *todo, **todo_tail, *done; /* under mu */
    bool stopping;                           /* under mu */
    pthread_t th[WF_TR_WORKERS];
    size_t n_th;
    size_t inflight; /* reviews not yet delivered (loop only): they keep the loop alive */
    wf_tr_stats stats;
};

static void free_pending(wf_tr_pending *p)
{
    if (p->token) {
        OPENSSL_cleanse(p->token, strlen(p->token));
        free(p->token);
    }
    free(p);
}

/* One review on a worker thread: p->ok, ns, sa or why. */
static void review(wf_tokenreview *tr, wf_tr_pending *p)
{
    wf_strbuf body = WF_STRBUF_INIT, resp = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
    wf_kube_status st;
    char why[512];
    if (wf_tr_request_body(p->token, &body) != 0) {
        snprintf(why, sizeof why, "out of memory");
    } else if (wf_kube_request(tr->client, "POST", WF_TR_PATH, body.data, tr->cancel_fd,
                               tr->timeout_ms, &resp, &st, &err) != 0) {
        snprintf(why, sizeof why, "%s",
                 wf_strbuf_failed(&err) ? "out of memory" : wf_strbuf_cstr(&err));
    } else {
        p->ok = wf_tr_parse_review(resp.data ? resp.data : "", resp.len, p->ns, p->sa, why,
                                   sizeof why) == 0;
    }
    if (!p->ok)
        snprintf(p->why, sizeof p->why, "failed to validate the JWT from cluster \"%s\": %s",
                 WF_TR_CLUSTER_ID, why);
    if (body.data)
        OPENSSL_cleanse(body.data, body.len);
    if (resp.data) /* the answer echoes spec.token */
        OPENSSL_cleanse(resp.data, resp.len);
    wf_strbuf_free(&body);
    wf_strbuf_free(&resp);
    wf_strbuf_free(&err);
}

static void *worker(void *arg)
{
    wf_tokenreview *tr = arg;
    pthread_mutex_lock(&tr->mu);
    for (;;) {
        while (!tr->todo && !tr->stopping)
            pthread_cond_wait(&tr->cv, &tr->mu);
        if (tr->stopping)
            break;
        wf_tr_pending *p = tr->todo;
        tr->todo = p->next;
        if (!tr->todo)
            tr->todo_tail = &tr->todo;
        pthread_mutex_unlock(&tr->mu);
        review(tr, p);
        pthread_mutex_lock(&tr->mu);
        p->next = tr->done;
        tr->done = p;
        uv_async_send(tr->async);
    }
    pthread_mutex_unlock(&tr->mu);
    return NULL;
}

static void deliver(wf_tokenreview *tr, wf_tr_pending *p)
{
    if (--tr->inflight == 0)
        uv_unref((uv_handle_t *)tr->async);
    if (p->ok) {
        tr->stats.authenticated++;
        wf_tr_cache_put(tr->cache, p->token, p->now_s, p->exp, p->ns, p->sa);
    }
    if (!p->cancelled)
        p->cb(p->ud, p->ok, p->ns, p->sa, p->why);
    free_pending(p);
}

static void on_async(uv_async_t *a)
{
    wf_tokenreview *tr = a->data;
    pthread_mutex_lock(&tr->mu);
    wf_tr_pending *list = tr->done;
    tr->done = NULL;
    pthread_mutex_unlock(&tr->mu);
    /* oldest first: the list was pushed at its head */
    wf_tr_pending *rev = NULL;
    while (list) {
        wf_tr_pending *n = list->next;
        list->next = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        wf_tr_pending *n = rev->next;
        deliver(tr, rev);
        rev = n;
    }
}

static void free_tr(wf_tokenreview *tr)
{
    if (tr->cancel_fd >= 0)
        close(tr->cancel_fd);
    wf_tr_cache_free(tr->cache);
    pthread_mutex_destroy(&tr->mu);
    pthread_cond_destroy(&tr->cv);
    free(tr);
}

static void on_async_closed(uv_handle_t *h)
{
    wf_tokenreview *tr = h->data;
    free(h);
    free_tr(tr);
}

wf_tokenreview *wf_tokenreview_start(uv_loop_t *loop, struct wf_kube_client *client,
                                     const wf_tokenreview_opts *o, wf_strbuf *why)
{
    wf_tokenreview *tr = calloc(1, sizeof *tr);
    if (!tr) {
        wf_strbuf_puts(why, "out of memory");
        return NULL;
    }
    tr->loop = loop;
    tr->client = client;
    tr->timeout_ms = o && o->request_timeout_ms > 0 ? o->request_timeout_ms : 10000;
    tr->todo_tail = &tr->todo;
    tr->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&tr->mu, NULL);
    pthread_cond_init(&tr->cv, NULL);
    tr->cache = wf_tr_cache_new(0, o ? o->cache_ttl_s : 0);
    tr->async = malloc(sizeof *tr->async);
    if (!tr->cache || !tr->async || tr->cancel_fd < 0 ||
        uv_async_init(loop, tr->async, on_async) != 0) {
        wf_strbuf_puts(why, tr->cancel_fd < 0 ? "cannot create an eventfd" : "out of memory");
        free(tr->async);
        free_tr(tr);
        return NULL;
    }
    tr->async->data = tr;
    uv_unref((uv_handle_t *)tr->async);
    for (; tr->n_th < WF_TR_WORKERS; tr->n_th++)
        if (pthread_create(&tr->th[tr->n_th], NULL, worker, tr) != 0)
            break;
    if (tr->n_th == 0) {
        wf_strbuf_puts(why, "cannot start a thread");
        uv_close((uv_handle_t *)tr->async, on_async_closed);
        return NULL;
    }
    return tr;
}

static void answer_stopped(wf_tokenreview *tr, wf_tr_pending *p)
{
    while (p) {
        tr->inflight--;
        wf_tr_pending *n = p->next;
        p->ok = false;
        snprintf(p->why, sizeof p->why,
                 "failed to validate the JWT from cluster \"%s\": the TokenReview authenticator "
                 "stopped",
                 WF_TR_CLUSTER_ID);
        if (!p->cancelled)
            p->cb(p->ud, false, "", "", p->why);
        free_pending(p);
        p = n;
    }
}

void wf_tokenreview_stop(wf_tokenreview *tr)
{
    if (!tr)
        return;
    uint64_t one = 1;
    pthread_mutex_lock(&tr->mu);
    tr->stopping = true;
    pthread_cond_broadcast(&tr->cv);
    pthread_mutex_unlock(&tr->mu);
    if (write(tr->cancel_fd, &one, sizeof one) < 0 && errno != EAGAIN) {
        /* the workers still end: stopping is set and requests time out */
    }
    for (size_t i = 0; i < tr->n_th; i++)
        pthread_join(tr->th[i], NULL);
    on_async(tr->async); /* the answers that came in: delivered as they are */
    answer_stopped(tr, tr->todo);
    tr->todo = NULL;
    uv_close((uv_handle_t *)tr->async, on_async_closed);
}

int wf_tokenreview_check(wf_tokenreview *tr, const char *token, int64_t now_s, char *ns, char *sa,
                         wf_tr_done cb, void *ud, wf_tr_pending **out, char *why, size_t cap)
{
    if (wf_tr_cache_get(tr->cache, token, now_s, ns, sa) == 1) {
        tr->stats.cache_hits++;
        return 1;
    }
    wf_tr_pending *p = calloc(1, sizeof *p);
    if (!p || !(p->token = strdup(token))) {
        free(p);
        snprintf(why, cap, "failed to validate the JWT from cluster \"%s\": out of memory",
                 WF_TR_CLUSTER_ID);
        return -1;
    }
    p->exp = wf_tr_token_exp(token);
    p->now_s = now_s;
    p->cb = cb;
    p->ud = ud;
    pthread_mutex_lock(&tr->mu);
    bool stopping = tr->stopping;
    if (!stopping) {
        *tr->todo_tail = p;
        tr->todo_tail = &p->next;
        pthread_cond_signal(&tr->cv);
    }
    pthread_mutex_unlock(&tr->mu);
    if (stopping) {
        free_pending(p);
        snprintf(why, cap,
                 "failed to validate the JWT from cluster \"%s\": the TokenReview authenticator "
                 "stopped",
                 WF_TR_CLUSTER_ID);
        return -1;
    }
    tr->stats.requests++;
    if (tr->inflight++ == 0)
        uv_ref((uv_handle_t *)tr->async);
    *out = p;
    return 0;
}

void wf_tokenreview_cancel(wf_tr_pending *p)
{
    if (p)
        p->cancelled = true;
}

wf_tr_stats wf_tokenreview_stats(const wf_tokenreview *tr)
{
    return tr->stats;
}
