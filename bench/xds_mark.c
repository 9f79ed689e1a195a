/* xds_mark.c - marked changes under churn for weft-xds-load (see xds_mark.h). */
#include "xds_mark.h"

#include <stdlib.h>
#include <string.h>

/* ---- marks --------------------------------------------------------------------------------- */

long xm_add(xm_marks *m, const char *label, const char *marker, uint64_t t0)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        xm_mark *v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return -1;
        m->v = v;
        m->cap = cap;
    }
    xm_mark *k = &m->v[m->n];
    memset(k, 0, sizeof *k);
    snprintf(k->label, sizeof k->label, "%s", label);
    k->marker = strdup(marker);
    k->marker_len = strlen(marker);
    k->conv = calloc(m->n_clients + 1, sizeof *k->conv);
    if (!k->marker || !k->conv || !k->marker_len) {
        free(k->marker);
        free(k->conv);
        return -1;
    }
    k->t0 = t0;
    m->open++;
    return (long)m->n++;
}

void xm_on_eds(xm_marks *m, size_t client, const char *body, size_t len, uint64_t now)
{
    if (!m->open || client >= m->n_clients)
        return;
    for (size_t i = m->n; i-- > 0;) {
        xm_mark *k = &m->v[i];
        if (k->done || k->conv[client] || !memmem(body, len, k->marker, k->marker_len))
            continue;
        k->conv[client] = now > k->t0 ? now : k->t0 + 1;
        k->n_conv++;
        if (!k->first_ns)
            k->first_ns = k->conv[client];
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void xm_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
}

uint64_t xm_pct(const uint64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    return v[(k ? k : 1) - 1];
}

void xm_report(xm_marks *m, size_t i, size_t live, bool timed_out, FILE *out)
{
    xm_mark *k = &m->v[i];
    size_t n = 0;
    for (size_t c = 0; c < m->n_clients; c++)
        if (k->conv[c])
            k->conv[n++] = k->conv[c] - k->t0;
    xm_sort_u64(k->conv, n);
    fprintf(out,
            "MARK {\"label\":\"%s\",\"clients\":%zu,\"live\":%zu,\"converged\":%zu,"
            "\"timed_out\":%s,\"http_status\":%d,\"first_ms\":%.1f,\"conv_p50_ms\":%.1f,"
            "\"conv_p99_ms\":%.1f,\"conv_max_ms\":%.1f}\n",
            k->label, m->n_clients, live, n, timed_out ? "true" : "false", k->http_status,
            k->first_ns ? (double)(k->first_ns - k->t0) / 1e6 : -1.0,
            (double)xm_pct(k->conv, n, 50) / 1e6, (double)xm_pct(k->conv, n, 99) / 1e6,
            n ? (double)k->conv[n - 1] / 1e6 : 0.0);
    fflush(out);
    k->done = true;
    m->open--;
    free(k->conv);
    k->conv = NULL;
    free(k->marker);
    k->marker = NULL;
}

void xm_marks_free(xm_marks *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].conv);
        free(m->v[i].marker);
    }
    free(m->v);
    m->v = NULL;
    m->n = m->cap = m->open = 0;
}

/* ---- one HTTP request ------------------------------------------------------------------------ */

typedef struct xm_req {
    uv_tcp_t tcp;
    uv_connect_t conn;
    uv_write_t wr;
    char *msg;
    size_t msg_len;
    char resp[256];
    size_t resp_len;
    xm_http_done done;
    void *ud;
    long tag;
    bool reported;
} xm_req;

static void req_closed(uv_handle_t *h)
{
    xm_req *r = h->data;
    free(r->msg);
    free(r);
}

/* Reports once: the status from "HTTP/1.1 NNN", else -1; then closes. */
static void req_finish(xm_req *r)
{
    if (!r->reported) {
        r->reported = true;
        int status = -1;
        r->resp[r->resp_len] = '\0';
        if (r->resp_len >= 12 && strncmp(r->resp, "HTTP/1.", 7) == 0)
            status = atoi(r->resp + 9);
        r->done(r->ud, r->tag, status ? status : -1);
    }
    if (!uv_is_closing((uv_handle_t *)&r->tcp))
        uv_close((uv_handle_t *)&r->tcp, req_closed);
}

static void req_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    xm_req *r = h->data;
    (void)hint;
    buf->base = r->resp + r->resp_len;
    buf->len = sizeof r->resp - 1 - r->resp_len;
}

static void req_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    xm_req *r = s->data;
    (void)buf;
    if (n > 0)
        r->resp_len += (size_t)n;
    /* the status line is all we need: stop at its end, EOF, an error or a full buffer */
    if (n < 0 || memchr(r->resp, '\n', r->resp_len) || r->resp_len >= sizeof r->resp - 1)
        req_finish(r);
}

static void req_written(uv_write_t *w, int status)
{
    xm_req *r = w->data;
    if (status < 0 || uv_read_start((uv_stream_t *)&r->tcp, req_alloc, req_read) != 0)
        req_finish(r);
}

static void req_connected(uv_connect_t *c, int status)
{
    xm_req *r = c->data;
    uv_buf_t b = uv_buf_init(r->msg, (unsigned)r->msg_len);
    if (status < 0 || uv_write(&r->wr, (uv_stream_t *)&r->tcp, &b, 1, req_written) != 0)
        req_finish(r);
}

int xm_http_send(uv_loop_t *loop, const char *ip, int port, const char *method, const char *path,
                 const char *ctype, const char *body, size_t len, xm_http_done done, void *ud,
                 long tag)
{
    struct sockaddr_in sa;
    if (uv_ip4_addr(ip, port, &sa) != 0)
        return -1;
    xm_req *r = calloc(1, sizeof *r);
    size_t cap = 256 + strlen(method) + strlen(path) + strlen(ip) + strlen(ctype) + len;
    if (!r || !(r->msg = malloc(cap))) {
        free(r);
        return -1;
    }
    int h = snprintf(r->msg, cap,
                     "%s %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
                     method, path, ip, port, ctype, len);
    if (h < 0 || (size_t)h + len > cap) {
        free(r->msg);
        free(r);
        return -1;
    }
    memcpy(r->msg + h, body, len);
    r->msg_len = (size_t)h + len;
    r->done = done;
    r->ud = ud;
    r->tag = tag;
    r->tcp.data = r->conn.data = r->wr.data = r;
    if (uv_tcp_init(loop, &r->tcp) != 0) {
        free(r->msg);
        free(r);
        return -1;
    }
    if (uv_tcp_connect(&r->conn, &r->tcp, (const struct sockaddr *)&sa, req_connected) != 0) {
        r->reported = true; /* done is not called: the caller sees -1 */
        uv_close((uv_handle_t *)&r->tcp, req_closed);
        return -1;
    }
    return 0;
}
