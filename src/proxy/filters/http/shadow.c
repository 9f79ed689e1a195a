/*
 * shadow.c - mirrored requests (shadow.h).
 */
#include "proxy/filters/http/shadow.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "http/h1_parser.h"
#include "proxy/http/conn.h"

struct wp_shadow {
    wp_raw_socket raw; /* the TCP socket under sock */
    wp_tsock *sock;    /* the transport socket (net/transport_socket.h): &raw.base */
    uv_connect_t connect;
    uv_timer_t timer;
    wp_worker *w;
    wp_wgen *wg; /* one use of it */
    int cluster;
    struct wp_shadow *prev, *next;
    h1_parser parser;
    h1_header hdrs[WP_MAX_HEADERS];
    char rbuf[4096];
    size_t rlen;
    bool connected, counted_rq, closing;
    int closed;
    size_t len;
    char data[]; /* head and body */
};

size_t wp_shadow_host(const char *host, size_t len, char *out, size_t cap)
{
    size_t name = len;
    const char *colon = memchr(host, ':', len);
    if (len && host[0] == '[') { /* [v6]:port: the suffix goes after the literal */
        const char *rb = memchr(host, ']', len);
        name = rb ? (size_t)(rb - host) + 1 : len;
    } else if (colon) {
        name = (size_t)(colon - host);
    }
    if (len + 7 > cap)
        return 0;
    memcpy(out, host, name);
    memcpy(out + name, "-shadow", 7);
    memcpy(out + name + 7, host + name, len - name);
    return len + 7;
}

static void cstat(wp_shadow *sh, int which, int64_t d)
{
    wp_cluster_stat(sh->w, sh->wg->gen, sh->cluster, which, d);
}

/* Two handles (the socket and the timer): freed after the last close callback. */
static void closed_one(wp_shadow *sh)
{
    if (++sh->closed == 2) {
        wp_wgen_release(sh->w, sh->wg);
        free(sh);
    }
}

static void on_timer_closed(uv_handle_t *h)
{
    closed_one(h->data);
}

static void on_sock_closed(void *owner)
{
    closed_one(owner);
}

static void shadow_close(wp_shadow *sh)
{
    if (sh->closing)
        return;
    sh->closing = true;
    if (sh->prev)
        sh->prev->next = sh->next;
    else
        sh->w->shadows = sh->next;
    if (sh->next)
        sh->next->prev = sh->prev;
    if (sh->counted_rq)
        cstat(sh, WP_S_upstream_rq_active, -1);
    cstat(sh, WP_S_upstream_cx_active, -1);
    cstat(sh, WP_S_upstream_cx_destroy, 1);
    wp_tsock_close(sh->sock);
    uv_close((uv_handle_t *)&sh->timer, on_timer_closed);
}

static void on_timeout(uv_timer_t *t)
{
    wp_shadow *sh = t->data;
    cstat(sh, WP_S_upstream_rq_timeout, 1);
    shadow_close(sh);
}

static void on_alloc(void *owner, uv_buf_t *buf)
{
    wp_shadow *sh = owner;
    *buf = uv_buf_init(sh->rbuf + sh->rlen, (unsigned)(sizeof(sh->rbuf) - sh->rlen));
}

/* The answer is parsed only to count its status; its body is dropped. */
static void on_read(void *owner, ssize_t n)
{
    wp_shadow *sh = owner;
    if (n < 0) {
        shadow_close(sh);
        return;
    }
    sh->rlen += (size_t)n;
    size_t off = 0;
    for (;;) {
        h1_event ev;
        off += h1_parse(&sh->parser, sh->rbuf + off, sh->rlen - off, &ev);
        if (ev == H1_EV_HEADERS && sh->parser.msg.status >= 200) {
            wp_code_stat_add(wp_stats_code_local(
                                 sh->w->stats, sh->wg->gen->pstats->clusters[sh->cluster].rq_codes),
                             (unsigned)sh->parser.msg.status);
        } else if (ev == H1_EV_DONE && sh->parser.msg.status >= 200) {
            cstat(sh, WP_S_upstream_rq_completed, 1);
            shadow_close(sh);
            return;
        } else if (ev == H1_EV_ERROR || ev == H1_EV_UPGRADED) {
            shadow_close(sh);
            return;
        } else if (ev == H1_EV_NEED_MORE) {
            break;
        }
    }
    memmove(sh->rbuf, sh->rbuf + off, sh->rlen - off);
    sh->rlen -= off;
    if (sh->rlen == sizeof(sh->rbuf)) /* a head larger than the buffer: give up */
        shadow_close(sh);
}

static void on_written(void *owner, int status)
{
    wp_shadow *sh = owner;
    if (status < 0)
        shadow_close(sh);
}

static void on_connect(void *owner, int status)
{
    wp_shadow *sh = owner;
    if (sh->closing)
        return;
    if (status < 0) {
        cstat(sh, WP_S_upstream_cx_connect_fail, 1);
        shadow_close(sh);
        return;
    }
    sh->connected = true;
    cstat(sh, WP_S_upstream_rq_total, 1);
    cstat(sh, WP_S_upstream_rq_active, 1);
    sh->counted_rq = true;
    uv_buf_t b = uv_buf_init(sh->data, (unsigned)sh->len);
    if (wp_tsock_write(sh->sock, &b, 1) < 0 || wp_tsock_read_start(sh->sock) != 0)
        shadow_close(sh);
}

/* The transport socket's callbacks (net/transport_socket.h). */
static const wp_tsock_cbs shadow_sock_cbs = {
    .alloc = on_alloc,
    .on_read = on_read,
    .on_written = on_written,
    .on_connected = on_connect,
    .on_closed = on_sock_closed,
};

static int pick(wp_worker *w, const wp_cluster *c)
{
    size_t n = c->nendpoints;
    if (n == 0)
        return -1;
    size_t start = (size_t)(wp_rand(w) % n);
    for (size_t i = 0; i < n; i++) {
        const wp_endpoint *e = &c->endpoints[(start + i) % n];
        if (e->health != WP_HEALTH_UNHEALTHY && e->health != WP_HEALTH_DRAINING)
            return (int)((start + i) % n);
    }
    return (int)start; /* all unhealthy: Envoy's panic routing uses any host */
}

int wp_shadow_send(wp_worker *w, wp_wgen *wg, int cluster, const char *head, size_t head_len,
                   const uv_buf_t *body, unsigned nbody, uint64_t timeout_ms, bool head_request)
{
    const wp_cluster *c = &wg->gen->cfg->clusters[cluster];
    int host = pick(w, c);
    if (host < 0) {
        wp_cluster_stat(w, wg->gen, cluster, WP_S_upstream_cx_none_healthy, 1);
        return -1;
    }
    size_t len = head_len;
    for (unsigned i = 0; i < nbody; i++)
        len += body[i].len;
    wp_shadow *sh = calloc(1, sizeof(*sh) + len);
    if (!sh)
        return -1;
    memcpy(sh->data, head, head_len);
    for (unsigned i = 0, off = (unsigned)head_len; i < nbody; off += (unsigned)body[i++].len)
        memcpy(sh->data + off, body[i].base, body[i].len);
    sh->len = len;
    sh->w = w;
    sh->wg = wg;
    wp_wgen_use(wg);
    sh->cluster = cluster;
    h1_parser_init(&sh->parser, H1_RESPONSE, sh->hdrs, WP_MAX_HEADERS, sizeof(sh->rbuf));
    h1_parser_set_answers(&sh->parser, head_request ? H1_ANSWERS_HEAD : H1_ANSWERS_OTHER);
    wp_raw_socket_init(&sh->raw, &w->loop, &w->wreqs, &shadow_sock_cbs, sh);
    sh->sock = &sh->raw.base;
    uv_timer_init(&w->loop, &sh->timer);
    sh->timer.data = sh;
    sh->next = w->shadows;
    if (w->shadows)
        w->shadows->prev = sh;
    w->shadows = sh;
    cstat(sh, WP_S_upstream_cx_total, 1);
    cstat(sh, WP_S_upstream_cx_active, 1);
    WF_LOG(WF_LC_router, WF_LOG_DEBUG, "shadowing a request to cluster '%s' (%s)", c->name,
           c->endpoints[host].addr.text);
    if (wp_tsock_connect(sh->sock, &sh->connect,
                         (const struct sockaddr *)&c->endpoints[host].addr.sa) != 0) {
        cstat(sh, WP_S_upstream_cx_connect_fail, 1);
        shadow_close(sh);
        return -1;
    }
    if (timeout_ms)
        uv_timer_start(&sh->timer, on_timeout, timeout_ms, 0);
    return 0;
}

void wp_shadows_close(wp_worker *w)
{
    while (w->shadows)
        shadow_close(w->shadows);
}
