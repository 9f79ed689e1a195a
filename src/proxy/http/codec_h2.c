/*
 * codec_h2.c - the HTTP/2 server codec over nghttp2 (see codec_h2.h for the Envoy behaviour
 * followed): the preface check, the request head translation and the session glue (SETTINGS,
 * received frames to stream events, responses to frames, resets, GOAWAY, flow control).
 */
#include "proxy/http/codec_h2.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "proxy/http/headers.h"

/* Envoy's Http2ResponseCodeDetails (codec_impl.h); one space after the name: weftctl's
 * explain coverage test reads these defines */
/* clang-format off */
#define D_INVALID_HEADER "http2.invalid.header.field"
#define D_MESSAGING "http2.violation.of.messaging.rule"
#define D_UNKNOWN "http2.unknown.nghttp2.error"
#define D_TOO_MANY "http2.too_many_headers"
#define D_REMOTE_REFUSE "http2.remote_refuse"
#define D_REMOTE_RESET "http2.remote_reset"
/* clang-format on */

int wp_h2_preface_check(const char *data, size_t len)
{
    size_t n = len < WP_H2_PREFACE_LEN ? len : WP_H2_PREFACE_LEN;
    if (memcmp(data, WP_H2_PREFACE, n) != 0)
        return -1;
    return n == WP_H2_PREFACE_LEN ? 1 : 0;
}

/* ---------- request translation ---------- */

static bool name_is(const h1_str *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && memcmp(s->p, lit, n) == 0;
}

static bool parse_u64(h1_str v, uint64_t *out)
{
    uint64_t x = 0;
    if (v.len == 0 || v.len > 19)
        return false;
    for (size_t i = 0; i < v.len; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(v.p[i] - '0');
    }
    *out = x;
    return true;
}

/* The pseudo-fields of in[0, n): 0, or -1 for an unknown or repeated one (nghttp2 has
 * checked them already; this keeps the translation safe on its own). */
static int pseudo_fields(const h1_header *in, size_t n, h1_str *method, h1_str *path,
                         h1_str *authority, h1_str *scheme)
{
    for (size_t i = 0; i < n && in[i].name.len && in[i].name.p[0] == ':'; i++) {
        const h1_str *nm = &in[i].name;
        h1_str *slot = name_is(nm, ":method")      ? method
                       : name_is(nm, ":path")      ? path
                       : name_is(nm, ":authority") ? authority
                       : name_is(nm, ":scheme")    ? scheme
                                                   : NULL;
        if (!slot || slot->p)
            return -1;
        *slot = in[i].value;
    }
    return 0;
}

int wp_h2_request_head(const h1_header *in, size_t n, bool end_stream, h1_message *m,
                       h1_header *out, size_t cap, wf_strbuf *cookie, h1_str *scheme,
                       const char **details)
{
    h1_str method = {0}, path = {0}, authority = {0};
    *scheme = (h1_str){0};
    memset(m, 0, sizeof(*m));
    *details = D_MESSAGING;
    if (pseudo_fields(in, n, &method, &path, &authority, scheme) != 0 || !method.p)
        return -1;
    bool connect = name_is(&method, "CONNECT");
    if (!connect && (!path.p || !path.len))
        return -1;
    size_t k = 0, cookie_at = SIZE_MAX;
    cookie->len = 0;
    if (authority.p && authority.len)
        out[k++] = (h1_header){{"host", 4}, authority};
    m->framing = end_stream ? H1_BODY_NONE : H1_BODY_CHUNKED;
    for (size_t i = 0; i < n; i++) {
        const h1_header *f = &in[i];
        if (f->name.len && f->name.p[0] == ':')
            continue;
        if (name_is(&f->name, "host") && authority.p && authority.len)
            continue; /* :authority wins (one :authority in Envoy's header map) */
        if (name_is(&f->name, "cookie")) {
            if (cookie->len)
                wf_strbuf_append(cookie, "; ", 2);
            wf_strbuf_append(cookie, f->value.p, f->value.len);
            if (cookie_at != SIZE_MAX)
                continue;
            cookie_at = k;
        } else if (name_is(&f->name, "content-length") && !end_stream) {
            if (!parse_u64(f->value, &m->content_length))
                return -1;
            m->framing = H1_BODY_LENGTH;
        }
        if (k == cap) {
            *details = D_TOO_MANY;
            return -1;
        }
        out[k++] = *f;
    }
    if (wf_strbuf_failed(cookie)) {
        *details = D_UNKNOWN;
        return -1;
    }
    if (cookie_at != SIZE_MAX)
        out[cookie_at].value = (h1_str){cookie->data, cookie->len};
    m->method = method;
    m->target = connect ? authority : path;
    m->version_minor = 1;
    m->headers = out;
    m->nheaders = k;
    m->keep_alive = true;
    return 0;
}

/* ---------- the session ---------- */

/* A header block as received: name\0value\0 pairs in b; offsets (off[2i], off[2i+1]) until
 * the block ends (b may move while it grows), then f's slices. off and f grow with the
 * fields (cap of each, up to WP_H2_MAX_FIELDS). */
typedef struct {
    wf_strbuf b;
    size_t n, bytes, cap;
    uint32_t *off;
    h1_header *f;
} block;

#define H2S_FIELDS0   16u   /* a block's first room for fields */
#define H2S_FREE_MAX  16u   /* stream states a session keeps for its next streams */
#define H2S_KEEP_HEAD 8192u /* header bytes a kept state may hold on to */

typedef struct h2s {
    int32_t id;
    void *sctx;
    struct h2s *prev, *next;
    const char *details;
    bool head_done;
    block head, trailers;
    h1_header *out; /* the translated fields (out_cap) */
    size_t out_cap;
    wf_strbuf cookie;
    h1_message m;
    /* the response body slice being framed; frame_data: the bytes of the DATA frame being sent
     * (read_body took them, send_data appends them) */
    const char *out_data, *frame_data;
    size_t out_len;
    bool have_data, out_end, sent_pending;
    /* trailers to send at the body's end (nv copies in trl) */
    wf_strbuf trl;
    nghttp2_nv *trl_nv;
    size_t trl_n;
} h2s;

struct wp_h2_server {
    nghttp2_session *session;
    const wp_h2_server_callbacks *cb;
    void *ctx;
    wp_h2_stats *st;
    wp_h2_stats own;
    wp_h2_limits lim;
    h2s *streams;
    size_t nstreams;
    h2s *free; /* ended streams' states, for the next ones (nfree <= H2S_FREE_MAX) */
    size_t nfree;
    wf_strbuf names;      /* a response's lowercased names (nghttp2 copies them) */
    wf_strbuf *flush_out; /* wp_h2_server_flush's out while it runs (send_data appends there) */
    const char *conn_details;
};

static h2s *stream_of(wp_h2_server *h, int32_t id)
{
    return id > 0 ? nghttp2_session_get_stream_user_data(h->session, id) : NULL;
}

static void block_free(block *k)
{
    wf_strbuf_free(&k->b);
    free(k->off);
    free(k->f);
}

static void state_free(h2s *s)
{
    block_free(&s->head);
    block_free(&s->trailers);
    free(s->out);
    wf_strbuf_free(&s->cookie);
    wf_strbuf_free(&s->trl);
    free(s->trl_nv);
    free(s);
}

static bool keepable(const wf_strbuf *b)
{
    return !b->failed && b->cap <= H2S_KEEP_HEAD;
}

/* An emptied block that keeps its room. */
static block block_reuse(const block *k)
{
    block r = {.b = k->b, .cap = k->cap, .off = k->off, .f = k->f};
    r.b.len = 0;
    return r;
}

/* A zeroed stream state: from the session's free ones (their room kept) or new. */
static h2s *state_get(wp_h2_server *h)
{
    h2s *s = h->free;
    if (!s)
        return calloc(1, sizeof(*s));
    h->free = s->next;
    h->nfree--;
    s->next = NULL;
    return s;
}

/* s's stream ended: its state goes back to the session's free ones (emptied, its buffers'
 * room kept) unless enough wait there or it holds big buffers. */
static void state_put(wp_h2_server *h, h2s *s)
{
    if (h->nfree >= H2S_FREE_MAX || s->trl_nv || !keepable(&s->head.b) ||
        !keepable(&s->trailers.b) || !keepable(&s->cookie) || !keepable(&s->trl)) {
        state_free(s);
        return;
    }
    h2s r = {.head = block_reuse(&s->head),
             .trailers = block_reuse(&s->trailers),
             .out = s->out,
             .out_cap = s->out_cap,
             .cookie = s->cookie,
             .trl = s->trl};
    r.cookie.len = r.trl.len = 0;
    *s = r;
    s->next = h->free;
    h->free = s;
    h->nfree++;
}

static void stream_free(wp_h2_server *h, h2s *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        h->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    h->nstreams--;
    state_put(h, s);
}

static int on_begin_headers(nghttp2_session *ss, const nghttp2_frame *f, void *ud)
{
    wp_h2_server *h = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2s *s = state_get(h);
    if (!s)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    s->id = f->hd.stream_id;
    if (nghttp2_session_set_stream_user_data(ss, s->id, s) != 0) {
        state_free(s);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    s->next = h->streams;
    if (h->streams)
        h->streams->prev = s;
    h->streams = s;
    h->nstreams++;
    return 0;
}

/* Room for one more field in k (twice as much, up to WP_H2_MAX_FIELDS). 0, or -1 when out
 * of memory. */
static int block_grow(block *k)
{
    size_t cap = k->cap ? k->cap * 2 : H2S_FIELDS0;
    if (cap > WP_H2_MAX_FIELDS)
        cap = WP_H2_MAX_FIELDS;
    uint32_t *off = realloc(k->off, cap * 2 * sizeof(*off));
    if (!off)
        return -1;
    k->off = off;
    h1_header *f = realloc(k->f, cap * sizeof(*f));
    if (!f)
        return -1;
    k->f = f;
    k->cap = cap;
    return 0;
}

/* Keeps a field of the block being read (the head or the trailers), within Envoy's limits
 * (ConnectionImpl::onHeader: the header map's byteSize and size, pseudo-fields included):
 * the block's bytes (name + value each) and its count. */
static int on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *ud)
{
    (void)ss;
    (void)flags;
    wp_h2_server *h = ud;
    h2s *s = stream_of(h, f->hd.stream_id);
    if (!s) {
        h->st->headers_cb_no_stream++;
        return 0;
    }
    block *k = s->head_done ? &s->trailers : &s->head;
    k->bytes += namelen + valuelen;
    if (k->bytes > (size_t)h->lim.max_request_headers_kb * 1024 ||
        k->n + 1 > h->lim.max_headers_count || k->n == WP_H2_MAX_FIELDS) {
        s->details = D_TOO_MANY;
        h->st->header_overflow++;
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* nghttp2 resets the stream */
    }
    if (k->n == k->cap && block_grow(k) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    k->off[2 * k->n] = (uint32_t)k->b.len;
    wf_strbuf_append(&k->b, (const char *)name, namelen);
    wf_strbuf_putc(&k->b, '\0');
    k->off[2 * k->n + 1] = (uint32_t)k->b.len;
    wf_strbuf_append(&k->b, (const char *)value, valuelen);
    wf_strbuf_putc(&k->b, '\0');
    if (wf_strbuf_failed(&k->b))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    k->f[k->n].name.len = namelen;
    k->f[k->n].value.len = valuelen;
    k->n++;
    return 0;
}

/* The block's slices, now that its bytes no longer move. */
static void block_done(block *k)
{
    for (size_t i = 0; i < k->n; i++) {
        k->f[i].name.p = k->b.data + k->off[2 * i];
        k->f[i].value.p = k->b.data + k->off[2 * i + 1];
    }
}

static int deliver_head(wp_h2_server *h, h2s *s, bool end_stream)
{
    block_done(&s->head);
    h1_str scheme;
    const char *details;
    s->head_done = true;
    /* the translation has at most as many fields as the block (Host takes :authority's place) */
    size_t need = s->head.n ? s->head.n : 1;
    if (s->out_cap < need) {
        h1_header *out = realloc(s->out, need * sizeof(*out));
        if (!out)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        s->out = out;
        s->out_cap = need;
    }
    if (wp_h2_request_head(s->head.f, s->head.n, end_stream, &s->m, s->out, s->out_cap, &s->cookie,
                           &scheme, &details) != 0) {
        s->details = details;
        return nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, s->id,
                                         NGHTTP2_PROTOCOL_ERROR);
    }
    s->sctx = h->cb->on_request(h->ctx, s->id, &s->m, scheme);
    if (!s->sctx)
        return nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, s->id,
                                         NGHTTP2_REFUSED_STREAM);
    if (end_stream)
        h->cb->on_complete(s->sctx);
    return 0;
}

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *ud)
{
    (void)ss;
    wp_h2_server *h = ud;
    h2s *s = stream_of(h, f->hd.stream_id);
    bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        if (!s)
            return 0;
        if (!s->head_done)
            return deliver_head(h, s, end) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
        if (s->sctx) { /* trailers (nghttp2 requires END_STREAM on them) */
            block_done(&s->trailers);
            h->st->trailers++;
            h->cb->on_trailers(s->sctx, s->trailers.f, s->trailers.n);
            if (end)
                h->cb->on_complete(s->sctx);
        }
        return 0;
    case NGHTTP2_DATA:
        if (s && s->sctx && end)
            h->cb->on_complete(s->sctx);
        return 0;
    case NGHTTP2_RST_STREAM:
        h->st->rx_reset++;
        if (s)
            s->details = f->rst_stream.error_code == NGHTTP2_REFUSED_STREAM ? D_REMOTE_REFUSE
                                                                            : D_REMOTE_RESET;
        return 0;
    default:
        return 0;
    }
}

static int on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud)
{
    (void)flags;
    wp_h2_server *h = ud;
    h2s *s = stream_of(h, id);
    if (!s || !s->sctx) {
        /* nobody reads it: its window opens again at once */
        nghttp2_session_consume(ss, id, len);
        return 0;
    }
    h->cb->on_data(s->sctx, (const char *)data, len);
    return 0;
}

/* Envoy's ConnectionImpl::onInvalidFrame: the details of the stream, a messaging error
 * counted; with Envoy's default (stream_error_on_invalid_http_message false) the connection
 * ends with a protocol error. */
static int on_invalid_frame(nghttp2_session *ss, const nghttp2_frame *f, int err, void *ud)
{
    (void)ss;
    wp_h2_server *h = ud;
    h2s *s = stream_of(h, f->hd.stream_id);
    const char *d = err == NGHTTP2_ERR_HTTP_HEADER      ? D_INVALID_HEADER
                    : err == NGHTTP2_ERR_HTTP_MESSAGING ? D_MESSAGING
                                                        : D_UNKNOWN;
    if (s)
        s->details = d;
    if (err == NGHTTP2_ERR_REFUSED_STREAM)
        return 0;
    if (err == NGHTTP2_ERR_HTTP_HEADER || err == NGHTTP2_ERR_HTTP_MESSAGING)
        h->st->rx_messaging_error++;
    h->conn_details = d;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *ud)
{
    wp_h2_server *h = ud;
    if (f->hd.type == NGHTTP2_RST_STREAM)
        h->st->tx_reset++;
    else if (f->hd.type == NGHTTP2_GOAWAY)
        h->st->goaway_sent++;
    else if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
             (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
             !nghttp2_session_get_stream_remote_close(ss, f->hd.stream_id))
        /* the response is complete while the request still arrives: Envoy's doEndStream
         * resets the stream, RST_STREAM NO_ERROR (RFC 9113 §8.1), so the client stops sending */
        return nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, f->hd.stream_id,
                                         NGHTTP2_NO_ERROR) == 0
                   ? 0
                   : NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int on_stream_close(nghttp2_session *ss, int32_t id, uint32_t code, void *ud)
{
    wp_h2_server *h = ud;
    h2s *s = stream_of(h, id);
    if (!s)
        return 0;
    nghttp2_session_set_stream_user_data(ss, id, NULL);
    if (s->sctx && s->sent_pending) /* the last slice went out with the stream's end */
        h->cb->on_data_sent(s->sctx);
    if (s->sctx)
        h->cb->on_close(s->sctx, code,
                        code || s->details ? (s->details ? s->details : D_UNKNOWN) : NULL);
    stream_free(h, s);
    return 0;
}

static int send_data(nghttp2_session *ss, nghttp2_frame *f, const uint8_t *framehd, size_t length,
                     nghttp2_data_source *src, void *ud);

wp_h2_server *wp_h2_server_new(const wp_h2_options *opts, const wp_h2_limits *lim,
                               const wp_h2_server_callbacks *cb, void *ctx, wp_h2_stats *st)
{
    wp_h2_server *h = calloc(1, sizeof(*h));
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_option *opt = NULL;
    if (!h || nghttp2_session_callbacks_new(&cbs) != 0 || nghttp2_option_new(&opt) != 0)
        goto fail;
    h->cb = cb;
    h->ctx = ctx;
    h->st = st ? st : &h->own;
    h->lim = *lim;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, on_invalid_frame);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_send_data_callback(cbs, send_data);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* the peer's header table may not exceed ours (HPACK decoder side) */
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, opts->hpack_table_size);
    int rc = nghttp2_session_server_new2(&h->session, cbs, h, opt);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_option_del(opt);
    cbs = NULL;
    opt = NULL;
    if (rc != 0)
        goto fail;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, opts->max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, opts->initial_stream_window_size},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, opts->hpack_table_size},
    };
    if (nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, iv, 3) != 0 ||
        nghttp2_session_set_local_window_size(h->session, NGHTTP2_FLAG_NONE, 0,
                                              (int32_t)opts->initial_connection_window_size) != 0)
        goto fail;
    return h;
fail:
    if (cbs)
        nghttp2_session_callbacks_del(cbs);
    if (opt)
        nghttp2_option_del(opt);
    wp_h2_server_free(h);
    return NULL;
}

void wp_h2_server_free(wp_h2_server *h)
{
    if (!h)
        return;
    if (h->session)
        nghttp2_session_del(h->session); /* no close callbacks: the streams are freed here */
    while (h->streams)
        stream_free(h, h->streams);
    while (h->free) {
        h2s *s = h->free;
        h->free = s->next;
        state_free(s);
    }
    wf_strbuf_free(&h->names);
    free(h);
}

int wp_h2_server_recv(wp_h2_server *h, const char *data, size_t len, const char **details)
{
    ssize_t rc = nghttp2_session_mem_recv(h->session, (const uint8_t *)data, len);
    if (rc >= 0)
        return 0;
    *details = h->conn_details ? h->conn_details : D_UNKNOWN;
    uint32_t code = rc == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR;
    /* a GOAWAY for every error (nghttp2 has queued one for some already: then this fails) */
    nghttp2_session_terminate_session(h->session, code);
    return -1;
}

long wp_h2_server_flush(wp_h2_server *h, wf_strbuf *out)
{
    size_t before = out->len;
    for (;;) {
        const uint8_t *p;
        ssize_t n;
        h->flush_out = out;
        while ((n = nghttp2_session_mem_send(h->session, &p)) > 0)
            wf_strbuf_append(out, (const char *)p, (size_t)n);
        h->flush_out = NULL;
        if (n < 0 || wf_strbuf_failed(out))
            return -1;
        /* slices framed in this pass: their owners may give the next ones */
        bool any = false;
        for (h2s *s = h->streams; s; s = s->next) {
            if (s->sent_pending && s->sctx) {
                s->sent_pending = false;
                any = true;
                h->cb->on_data_sent(s->sctx);
                break; /* the callback may have changed the list */
            }
        }
        if (!any)
            break;
    }
    return (long)(out->len - before);
}

bool wp_h2_server_done(const wp_h2_server *h)
{
    return !nghttp2_session_want_read(h->session) && !nghttp2_session_want_write(h->session);
}

void wp_h2_server_consume(wp_h2_server *h, int32_t id, size_t n)
{
    nghttp2_session_consume(h->session, id, n);
}

/* The fields of l as nghttp2 name/value pairs: names lowercased into names (nv points
 * there), connection-specific fields dropped. Returns the count, or -1 (out of memory). */
static long to_nv(const wp_hdr_list *l, nghttp2_nv *nv, size_t cap, wf_strbuf *names,
                  const char *status)
{
    size_t k = 0;
    names->len = 0;
    for (size_t i = 0; i < l->n; i++)
        wf_strbuf_append(names, l->e[i].name.p, l->e[i].name.len);
    if (wf_strbuf_failed(names))
        return -1;
    for (size_t i = 0; i < names->len; i++)
        names->data[i] = (char)h1_lower((unsigned char)names->data[i]);
    if (status)
        nv[k++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP2_NV_FLAG_NONE};
    size_t at = 0;
    for (size_t i = 0; i < l->n && k < cap; i++) {
        h1_str nm = {names->data + at, l->e[i].name.len};
        at += nm.len;
        if (name_is(&nm, "connection") || name_is(&nm, "keep-alive") ||
            name_is(&nm, "proxy-connection") || name_is(&nm, "transfer-encoding") ||
            name_is(&nm, "upgrade") || nm.len == 0)
            continue;
        nv[k++] = (nghttp2_nv){(uint8_t *)nm.p, (uint8_t *)l->e[i].value.p, nm.len,
                               l->e[i].value.len, NGHTTP2_NV_FLAG_NONE};
    }
    return (long)k;
}

static ssize_t read_body(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    (void)id;
    (void)ud;
    h2s *s = src->ptr;
    if (!s->have_data)
        return NGHTTP2_ERR_DEFERRED;
    (void)buf;
    size_t n = s->out_len < length ? s->out_len : length;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY; /* send_data appends the bytes to the output at once */
    s->frame_data = s->out_data;
    s->out_data += n;
    s->out_len -= n;
    if (s->out_len == 0) {
        s->have_data = false;
        s->sent_pending = true;
        if (s->out_end) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            if (s->trl_nv) {
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
                if (nghttp2_submit_trailer(ss, s->id, s->trl_nv, s->trl_n) != 0)
                    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }
        }
    }
    return (ssize_t)n;
}

/* A DATA frame of the slice read_body took (NO_COPY): its header and its bytes go straight
 * to the flush's output, one copy fewer than through nghttp2's frame buffer. No padding. */
static int send_data(nghttp2_session *ss, nghttp2_frame *f, const uint8_t *framehd, size_t length,
                     nghttp2_data_source *src, void *ud)
{
    (void)ss;
    (void)f;
    wp_h2_server *h = ud;
    h2s *s = src->ptr;
    if (!h->flush_out)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    wf_strbuf_append(h->flush_out, (const char *)framehd, 9);
    wf_strbuf_append(h->flush_out, s->frame_data, length);
    return wf_strbuf_failed(h->flush_out) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

int wp_h2_server_respond(wp_h2_server *h, int32_t id, int status, const wp_hdr_list *l,
                         bool end_stream)
{
    h2s *s = stream_of(h, id);
    if (!s || status < 100 || status > 999)
        return -1;
    char st[4] = {(char)('0' + status / 100), (char)('0' + status / 10 % 10),
                  (char)('0' + status % 10), 0};
    nghttp2_nv nv[WP_HDR_LIST_MAX + 1];
    long n = to_nv(l, nv, WP_HDR_LIST_MAX + 1, &h->names, st);
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = read_body};
    int rc = n < 0
                 ? -1
                 : nghttp2_submit_response(h->session, id, nv, (size_t)n, end_stream ? NULL : &prd);
    if (h->names.cap > H2S_KEEP_HEAD || h->names.failed) /* nghttp2 copied the pairs */
        wf_strbuf_free(&h->names);
    return rc == 0 ? 0 : -1;
}

int wp_h2_server_data(wp_h2_server *h, int32_t id, const char *data, size_t len, bool end)
{
    h2s *s = stream_of(h, id);
    if (!s || s->have_data)
        return -1;
    s->out_data = data;
    s->out_len = len;
    s->out_end = end;
    s->have_data = true;
    int rc = nghttp2_session_resume_data(h->session, id);
    return rc == 0 || rc == NGHTTP2_ERR_INVALID_ARGUMENT ? 0 : -1;
}

int wp_h2_server_trailers(wp_h2_server *h, int32_t id, const wp_hdr_list *l)
{
    h2s *s = stream_of(h, id);
    if (!s || s->trl_nv)
        return -1;
    s->trl_nv = malloc((l->n + 1) * sizeof(*s->trl_nv));
    if (!s->trl_nv)
        return -1;
    long n = to_nv(l, s->trl_nv, l->n + 1, &s->trl, NULL);
    if (n < 0)
        return -1;
    /* nghttp2 copies the pairs when the trailer is submitted: the names stay in s->trl */
    s->trl_n = (size_t)n;
    if (s->have_data) { /* the last slice ends the body */
        s->out_end = true;
        return 0;
    }
    return wp_h2_server_data(h, id, "", 0, true);
}

int wp_h2_server_reset(wp_h2_server *h, int32_t id, uint32_t code)
{
    return nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, id, code) == 0 ? 0 : -1;
}

int wp_h2_server_goaway(wp_h2_server *h, bool graceful)
{
    int rc = graceful ? nghttp2_submit_shutdown_notice(h->session)
                      : nghttp2_submit_goaway(h->session, NGHTTP2_FLAG_NONE,
                                              nghttp2_session_get_last_proc_stream_id(h->session),
                                              NGHTTP2_NO_ERROR, NULL, 0);
    return rc == 0 ? 0 : -1;
}

size_t wp_h2_server_streams(const wp_h2_server *h)
{
    return h->nstreams;
}
