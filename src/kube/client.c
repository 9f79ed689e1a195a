/*
 * client.c - requests, paged lists and watch streams (client.h).
 */
#include "kube/client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WEFT_VERSION
#define WEFT_VERSION "0"
#endif

#define MAX_BODY (256u << 20) /* a list response */

/* client-go's cached file token source (transport/token_source.go NewCachedFileTokenSource):
 * the file's token is kept for a minute less 10 s of leeway, and dropped after a 401 so that
 * the next request reads the file again (tokenSourceTransport's ResetTokenOlderThan). */
#define TOKEN_PERIOD_MS (60000 - 10000)

struct wf_kube_client {
    wf_kube_config *cfg;
    wf_kube_url url;
    SSL_CTX *ctx;          /* NULL for http:// */
    pthread_mutex_t mu;    /* guards the cached token file content */
    char *file_token;      /* last read of cfg->token_file, or NULL */
    int64_t file_token_at; /* when it was read (monotonic ms) */
};

int wf_kube_client_new(wf_kube_config *cfg, wf_kube_client **out, wf_strbuf *why)
{
    wf_kube_client *c = calloc(1, sizeof *c);
    if (!c) {
        wf_strbuf_puts(why, "out of memory");
        wf_kube_config_free(cfg);
        return -1;
    }
    c->cfg = cfg;
    pthread_mutex_init(&c->mu, NULL);
    if (wf_kube_url_parse(cfg->server, &c->url, why) != 0 ||
        (c->url.https && !(c->ctx = wf_kube_tls_ctx(cfg, why)))) {
        wf_kube_client_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void wf_kube_client_free(wf_kube_client *c)
{
    if (!c)
        return;
    SSL_CTX_free(c->ctx);
    wf_kube_config_free(c->cfg);
    free(c->file_token);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const wf_kube_config *wf_kube_client_config(const wf_kube_client *c)
{
    return c->cfg;
}

void wf_kube_query_escape(wf_strbuf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            wf_strbuf_putc(out, (char)ch);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            wf_strbuf_append(out, e, 3);
        }
    }
}

/* The bearer token for a request now (malloc'ed, or NULL for none). 0 or -1 with why. */
static int bearer(wf_kube_client *c, char **token, wf_strbuf *why)
{
    if (c->cfg->token || !c->cfg->token_file)
        return wf_kube_config_token(c->cfg, token, why);
    int rc = 0;
    int64_t now = wf_kube_now_ms();
    pthread_mutex_lock(&c->mu);
    if (!c->file_token || now - c->file_token_at >= TOKEN_PERIOD_MS) {
        char *t = NULL;
        rc = wf_kube_config_token(c->cfg, &t, why);
        if (rc == 0) {
            free(c->file_token);
            c->file_token = t;
            c->file_token_at = now;
        }
    }
    *token = rc == 0 && c->file_token ? strdup(c->file_token) : NULL;
    if (rc == 0 && c->file_token && !*token) {
        wf_strbuf_puts(why, "out of memory");
        rc = -1;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* After a 401: the next request reads the token file again. */
static void unauthorized(wf_kube_client *c, int status)
{
    if (status != 401)
        return;
    pthread_mutex_lock(&c->mu);
    free(c->file_token);
    c->file_token = NULL;
    pthread_mutex_unlock(&c->mu);
}

/* Connects and sends the request; on success the caller reads the head. */
static int start(wf_kube_client *c, wf_kube_conn *conn, const char *method, const char *path,
                 const char *ctype, const char *body, int cancel_fd, int64_t deadline,
                 wf_strbuf *why)
{
    char *token = NULL;
    if (bearer(c, &token, why) != 0)
        return -1;
    wf_strbuf req = WF_STRBUF_INIT;
    bool v6 = strchr(c->url.host, ':') != NULL;
    wf_strbuf_printf(&req,
                     "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nAccept: application/json\r\n"
                     "User-Agent: weft/" WEFT_VERSION "\r\n",
                     method, c->url.prefix, path, v6 ? "[" : "", c->url.host, v6 ? "]" : "",
                     c->url.port);
    if (token)
        wf_strbuf_printf(&req, "Authorization: Bearer %s\r\n", token);
    free(token);
    if (body)
        wf_strbuf_printf(&req, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                         ctype ? ctype : "application/json", strlen(body));
    wf_strbuf_puts(&req, "Connection: close\r\n\r\n");
    if (body)
        wf_strbuf_puts(&req, body);
    int rc = -1;
    if (wf_strbuf_failed(&req))
        wf_strbuf_puts(why, "out of memory");
    else if (wf_kube_conn_open(conn, &c->url, c->ctx, c->cfg->tls_server_name, cancel_fd, deadline,
                               why) == 0) {
        rc = wf_kube_conn_send(conn, req.data, req.len, why);
        if (rc != 0)
            wf_kube_conn_close(conn);
    }
    wf_strbuf_free(&req);
    return rc;
}

int wf_kube_request(wf_kube_client *c, const char *method, const char *path, const char *body,
                    int cancel_fd, long timeout_ms, wf_strbuf *resp, wf_kube_status *st,
                    wf_strbuf *why)
{
    return wf_kube_request_ct(c, method, path, NULL, body, cancel_fd, timeout_ms, resp, st, why);
}

int wf_kube_request_ct(wf_kube_client *c, const char *method, const char *path,
                       const char *content_type, const char *body, int cancel_fd, long timeout_ms,
                       wf_strbuf *resp, wf_kube_status *st, wf_strbuf *why)
{
    memset(st, 0, sizeof *st);
    int64_t deadline = timeout_ms > 0 ? wf_kube_now_ms() + timeout_ms : 0;
    wf_kube_conn conn;
    wf_strbuf err = WF_STRBUF_INIT, tmp = WF_STRBUF_INIT;
    wf_kube_head h;
    int rc = -1;
    if (start(c, &conn, method, path, content_type, body, cancel_fd, deadline, &err) != 0)
        goto out;
    wf_strbuf *dst = resp;
    if (wf_kube_read_head(&conn, &h, &err) == 0) {
        if (h.status < 200 || h.status > 299)
            dst = &tmp;
        if (wf_kube_read_body(&conn, &h, MAX_BODY, dst, &err) == 0) {
            if (dst == resp)
                rc = 0;
            else {
                unauthorized(c, h.status);
                wf_kube_status_from_body(h.status, tmp.data, tmp.len, st);
                wf_kube_status_format(st, &err);
            }
        }
    }
    wf_kube_conn_close(&conn);
out:
    if (rc != 0)
        wf_strbuf_printf(why, "%s %s: %s", method, path, wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    wf_strbuf_free(&tmp);
    return rc;
}

static void selectors(wf_strbuf *q, const char *label, const char *field)
{
    if (label && *label) {
        wf_strbuf_puts(q, "&labelSelector=");
        wf_kube_query_escape(q, label);
    }
    if (field && *field) {
        wf_strbuf_puts(q, "&fieldSelector=");
        wf_kube_query_escape(q, field);
    }
}

/* Items of built-in lists come without kind/apiVersion (§1.1): set them as watch events do. */
static void stamp(json_t *item, const wf_kube_kind *k)
{
    char av[128];
    if (k->group[0])
        snprintf(av, sizeof av, "%s/%s", k->group, k->version);
    else
        snprintf(av, sizeof av, "%s", k->version);
    if (!json_object_get(item, "kind"))
        json_object_set_new(item, "kind", json_string(k->kind));
    if (!json_object_get(item, "apiVersion"))
        json_object_set_new(item, "apiVersion", json_string(av));
}

/* One page: appends its items, sets *cont (malloc'ed or NULL) and, for the first, *rv. */
static int list_page(wf_kube_client *c, const wf_kube_kind *k, const char *base,
                     const wf_kube_list_opts *o, const char *cont_in, int cancel_fd, json_t *items,
                     char **rv, char **cont, wf_kube_status *st, wf_strbuf *why)
{
    wf_strbuf path = WF_STRBUF_INIT, body = WF_STRBUF_INIT;
    wf_strbuf_printf(&path, "%s?", base);
    if (o->limit > 0)
        wf_strbuf_printf(&path, "limit=%ld", o->limit);
    if (cont_in) {
        wf_strbuf_puts(&path, "&continue=");
        wf_kube_query_escape(&path, cont_in);
    }
    selectors(&path, o->label_selector, o->field_selector);
    int rc = -1;
    *cont = NULL;
    if (wf_kube_request(c, "GET", path.data, NULL, cancel_fd,
                        o->timeout_ms > 0 ? o->timeout_ms : 60000, &body, st, why) != 0)
        goto out;
    json_error_t je;
    json_t *j = json_loadb(body.data, body.len, 0, &je);
    json_t *arr = json_object_get(j, "items");
    json_t *md = json_object_get(j, "metadata");
    const char *lrv = json_string_value(json_object_get(md, "resourceVersion"));
    if (!json_is_array(arr) || !lrv) {
        wf_strbuf_printf(why, "GET %s: not a list (%s)", path.data,
                         j ? "no items or metadata.resourceVersion" : je.text);
        json_decref(j);
        goto out;
    }
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it)
    {
        stamp(it, k);
        json_array_append(items, it);
    }
    if (!*rv)
        *rv = strdup(lrv);
    const char *ct = json_string_value(json_object_get(md, "continue"));
    bool more = ct && *ct;
    if (more)
        *cont = strdup(ct);
    json_decref(j);
    rc = *rv && (!more || *cont) ? 0 : -1;
    if (rc != 0)
        wf_strbuf_puts(why, "out of memory");
out:
    wf_strbuf_free(&path);
    wf_strbuf_free(&body);
    return rc;
}

int wf_kube_list(wf_kube_client *c, const wf_kube_kind *k, const char *ns,
                 const wf_kube_list_opts *o, int cancel_fd, json_t **items, char **rv, int *pages,
                 wf_kube_status *st, wf_strbuf *why)
{
    char base[512];
    if (!wf_kube_kind_path(k, ns, base, sizeof base)) {
        wf_strbuf_puts(why, "namespace name too long");
        return -1;
    }
    bool restarted = false;
    for (;;) {
        json_t *arr = json_array();
        char *lrv = NULL, *cont = NULL;
        int n = 0, rc = 0;
        if (!arr) {
            wf_strbuf_puts(why, "out of memory");
            return -1;
        }
        do {
            char *next = NULL;
            rc = list_page(c, k, base, o, cont, cancel_fd, arr, &lrv, &next, st, why);
            bool had_cont = cont != NULL;
            free(cont);
            cont = next;
            n++;
            if (rc != 0 && had_cont && wf_kube_status_expired(st) && !restarted)
                rc = 1; /* the token expired: the whole list again, once */
        } while (rc == 0 && cont);
        if (rc == 0) {
            *items = arr;
            *rv = lrv;
            *pages = n;
            return 0;
        }
        json_decref(arr);
        free(lrv);
        free(cont);
        if (rc != 1)
            return -1;
        restarted = true;
        wf_strbuf_reset(why);
    }
}

/* ---- watch ----------------------------------------------------------------------------------- */

struct wf_kube_watch {
    wf_kube_conn conn;
    wf_kube_head head;
    wf_kube_chunked chunked;
    wf_kube_lines lines;
    wf_strbuf decoded;
    bool ended;
};

int wf_kube_watch_open(wf_kube_client *c, const wf_kube_kind *k, const char *ns,
                       const wf_kube_watch_opts *o, int cancel_fd, wf_kube_watch **out,
                       wf_kube_status *st, wf_strbuf *why)
{
    memset(st, 0, sizeof *st);
    char base[512];
    if (!wf_kube_kind_path(k, ns, base, sizeof base)) {
        wf_strbuf_puts(why, "namespace name too long");
        return -1;
    }
    wf_kube_watch *w = calloc(1, sizeof *w);
    if (!w) {
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    w->conn.fd = -1;
    wf_strbuf path = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
    wf_strbuf_printf(&path, "%s?watch=true", base);
    if (o->rv && *o->rv) {
        wf_strbuf_puts(&path, "&resourceVersion=");
        wf_kube_query_escape(&path, o->rv);
    }
    if (o->bookmarks)
        wf_strbuf_puts(&path, "&allowWatchBookmarks=true");
    if (o->timeout_s > 0)
        wf_strbuf_printf(&path, "&timeoutSeconds=%ld", o->timeout_s);
    selectors(&path, o->label_selector, o->field_selector);
    /* the connect and the head within 30 s; then data within the server's timeout + 30 s */
    int64_t deadline = wf_kube_now_ms() + 30000;
    int rc = -1;
    if (start(c, &w->conn, "GET", path.data, NULL, NULL, cancel_fd, deadline, &err) != 0)
        goto out;
    w->conn.deadline_ms = deadline;
    if (wf_kube_read_head(&w->conn, &w->head, &err) != 0)
        goto out;
    if (w->head.status != 200) {
        unauthorized(c, w->head.status);
        wf_strbuf body = WF_STRBUF_INIT;
        if (wf_kube_read_body(&w->conn, &w->head, 1 << 20, &body, &err) == 0) {
            wf_kube_status_from_body(w->head.status, body.data, body.len, st);
            wf_kube_status_format(st, &err);
        }
        wf_strbuf_free(&body);
        goto out;
    }
    w->conn.deadline_ms =
        o->timeout_s > 0 ? wf_kube_now_ms() + (o->timeout_s + 30) * (int64_t)1000 : 0;
    rc = 0;
out:
    if (rc != 0) {
        wf_strbuf_printf(why, "GET %s: %s", path.data, wf_strbuf_cstr(&err));
        wf_kube_watch_close(w);
    } else {
        *out = w;
    }
    wf_strbuf_free(&path);
    wf_strbuf_free(&err);
    return rc;
}

int wf_kube_watch_next(wf_kube_watch *w, wf_kube_event *ev, wf_strbuf *why)
{
    for (;;) {
        const char *line;
        long n = wf_kube_lines_pop(&w->lines, &line);
        if (n >= 0)
            return wf_kube_event_parse(line, (size_t)n, ev, why) == 0 ? 1 : -1;
        if (w->ended) {
            if (wf_kube_lines_pending(&w->lines) > 0) {
                wf_strbuf_puts(why, "watch stream ended in the middle of an event");
                return -1;
            }
            return 0;
        }
        int r = wf_kube_conn_fill(&w->conn, why);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (w->head.chunked) {
                wf_strbuf_puts(why, "watch stream closed before its last chunk");
                return -1;
            }
            w->ended = true;
            wf_kube_lines_push(&w->lines, "", 0, why);
            continue;
        }
        const char *p = w->conn.buf + w->conn.pos;
        size_t avail = w->conn.len - w->conn.pos;
        if (w->head.chunked) {
            wf_strbuf_reset(&w->decoded);
            long used = wf_kube_chunked_feed(&w->chunked, p, avail, &w->decoded, why);
            if (used < 0)
                return -1;
            w->conn.pos += (size_t)used;
            if (w->decoded.len &&
                wf_kube_lines_push(&w->lines, w->decoded.data, w->decoded.len, why) != 0)
                return -1;
            if (w->chunked.done)
                w->ended = true;
        } else {
            w->conn.pos += avail;
            if (wf_kube_lines_push(&w->lines, p, avail, why) != 0)
                return -1;
        }
    }
}

void wf_kube_watch_close(wf_kube_watch *w)
{
    if (!w)
        return;
    wf_kube_conn_close(&w->conn);
    wf_kube_lines_free(&w->lines);
    wf_strbuf_free(&w->decoded);
    free(w);
}
