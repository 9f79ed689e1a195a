/*
 * tls_inspector.c - envoy.filters.listener.tls_inspector (tls_inspector.h): the ClientHello
 * parser (RFC 8446 §4.1.2 and §5.1, RFC 6066 §3 server_name, RFC 7301 ALPN) and the filter.
 */
#include "proxy/filters/listener/tls_inspector.h"

#include <string.h>

/* A cursor over bytes. */
typedef struct {
    const unsigned char *p;
    size_t n;
} cur;

static bool get_u8(cur *c, unsigned *v)
{
    if (c->n < 1)
        return false;
    *v = c->p[0];
    c->p++;
    c->n--;
    return true;
}

static bool get_u16(cur *c, unsigned *v)
{
    if (c->n < 2)
        return false;
    *v = (unsigned)c->p[0] << 8 | c->p[1];
    c->p += 2;
    c->n -= 2;
    return true;
}

static bool get_u24(cur *c, size_t *v)
{
    if (c->n < 3)
        return false;
    *v = (size_t)c->p[0] << 16 | (size_t)c->p[1] << 8 | c->p[2];
    c->p += 3;
    c->n -= 3;
    return true;
}

static bool get_bytes(cur *c, size_t len, cur *out)
{
    if (c->n < len)
        return false;
    *out = (cur){c->p, len};
    c->p += len;
    c->n -= len;
    return true;
}

static bool get_vec8(cur *c, cur *out)
{
    unsigned len;
    return get_u8(c, &len) && get_bytes(c, len, out);
}

static bool get_vec16(cur *c, cur *out)
{
    unsigned len;
    return get_u16(c, &len) && get_bytes(c, len, out);
}

/* server_name: the first host_name entry, lower-cased ("" when none). */
static bool parse_sni(cur ext, wp_client_hello *out)
{
    cur list, name;
    if (!get_vec16(&ext, &list) || ext.n != 0)
        return false;
    while (list.n > 0) {
        unsigned type;
        if (!get_u8(&list, &type) || !get_vec16(&list, &name))
            return false;
        if (type == 0 && !out->sni[0] && name.n > 0 && name.n < sizeof(out->sni)) {
            for (size_t i = 0; i < name.n; i++) {
                unsigned char ch = name.p[i];
                out->sni[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
            }
            out->sni[name.n] = '\0';
        }
    }
    return true;
}

/* application_layer_protocol_negotiation: the protocol names, in order. A malformed list is
 * ignored (Envoy leaves the error to the TLS stack). */
static void parse_alpn(cur ext, wp_client_hello *out)
{
    cur list, name;
    if (!get_vec16(&ext, &list) || ext.n != 0 || list.n < 2)
        return;
    size_t used = 0, n = 0;
    const char *names[WP_TLS_INSPECTOR_MAX_ALPN];
    while (list.n > 0) {
        if (!get_vec8(&list, &name) || name.n == 0)
            return;
        if (n == WP_TLS_INSPECTOR_MAX_ALPN || used + name.n + 1 > sizeof(out->alpn_buf))
            continue; /* kept: what fits */
        memcpy(out->alpn_buf + used, name.p, name.n);
        out->alpn_buf[used + name.n] = '\0';
        names[n++] = out->alpn_buf + used;
        used += name.n + 1;
    }
    memcpy(out->alpn, names, n * sizeof(names[0]));
    out->nalpn = n;
    out->has_alpn = true;
}

/* The ClientHello body (after the handshake header). */
static bool parse_body(cur b, wp_client_hello *out)
{
    unsigned version;
    cur skip;
    if (!get_u16(&b, &version) || (version >> 8) != 3 || !get_bytes(&b, 32, &skip) ||
        !get_vec8(&b, &skip) || !get_vec16(&b, &skip) || !get_vec8(&b, &skip))
        return false;
    if (b.n == 0)
        return true; /* no extensions */
    cur exts;
    if (!get_vec16(&b, &exts))
        return false;
    while (exts.n > 0) {
        unsigned type;
        cur ext;
        if (!get_u16(&exts, &type) || !get_vec16(&exts, &ext))
            return false;
        if (type == 0 && !parse_sni(ext, out))
            return false;
        if (type == 16)
            parse_alpn(ext, out);
    }
    return true;
}

wp_client_hello_result wp_client_hello_parse(const unsigned char *data, size_t len,
                                             wp_client_hello *out)
{
    memset(out, 0, sizeof(*out));
    /* the common case: one record carries the whole ClientHello, parsed where it lies */
    if (len >= 9 && data[0] == 22 && data[1] == 3 && data[5] == 1) {
        size_t rlen = (size_t)data[3] << 8 | data[4];
        size_t mlen = (size_t)data[6] << 16 | (size_t)data[7] << 8 | data[8];
        if (rlen >= 4 + mlen && rlen <= 16384 + 2048 && len >= 5 + rlen) {
            out->consumed = 5 + rlen;
            return parse_body((cur){data + 9, mlen}, out) ? WP_CH_FOUND : WP_CH_NOT_TLS;
        }
    }
    /* else the handshake message, reassembled from the handshake records that carry it */
    unsigned char msg[WP_TLS_MAX_CLIENT_HELLO + 4];
    size_t have = 0, need = 0; /* need: the message's length once its header is known */
    cur c = {data, len};
    while (true) {
        if (c.n == 0)
            return WP_CH_NEED_MORE;
        if (c.p[0] != 22) /* not a handshake record */
            return WP_CH_NOT_TLS;
        if (c.n >= 2 && c.p[1] != 3) /* record version major 3 (TLS 1.0-1.3) */
            return WP_CH_NOT_TLS;
        if (c.n < 5)
            return WP_CH_NEED_MORE;
        size_t rlen = (size_t)c.p[3] << 8 | c.p[4];
        if (rlen == 0 || rlen > 16384 + 2048) /* RFC 8446 §5.1 record size */
            return WP_CH_NOT_TLS;
        if (c.n < 5 + rlen)
            return WP_CH_NEED_MORE;
        size_t take = rlen;
        if (have + take > sizeof(msg))
            take = sizeof(msg) - have; /* too large: the caller stops at its limit */
        memcpy(msg + have, c.p + 5, take);
        have += take;
        c.p += 5 + rlen;
        c.n -= 5 + rlen;
        if (need == 0 && have >= 4) {
            cur h = {msg, have};
            unsigned type;
            size_t mlen;
            get_u8(&h, &type);
            get_u24(&h, &mlen);
            if (type != 1) /* client_hello */
                return WP_CH_NOT_TLS;
            if (mlen > WP_TLS_MAX_CLIENT_HELLO)
                return WP_CH_NEED_MORE; /* larger than any limit: the caller's limit ends it */
            need = 4 + mlen;
        }
        if (need && have >= need) {
            out->consumed = len - c.n;
            return parse_body((cur){msg + 4, need - 4}, out) ? WP_CH_FOUND : WP_CH_NOT_TLS;
        }
    }
}

/* ---------- the filter ---------- */

static wp_lf_status on_accept(const void *self, wp_lf_callbacks *cb)
{
    (void)self;
    (void)cb;
    return WP_LF_STOP_ITERATION; /* the ClientHello is read first */
}

static void count(const wp_lf_callbacks *cb, uint32_t slot)
{
    if (cb->stats)
        wp_stat_add((wp_stats_shard *)cb->stats, slot, 1);
}

static wp_lf_status on_data(const void *self, wp_lf_callbacks *cb, const unsigned char *data,
                            size_t len)
{
    const wp_tls_inspector *f = self;
    wp_client_hello ch;
    wp_client_hello_result r = wp_client_hello_parse(data, len, &ch);
    if (r == WP_CH_NEED_MORE) {
        if (len < f->max_client_hello_size)
            return WP_LF_STOP_ITERATION;
        count(cb, f->st_too_large);
        return WP_LF_FAILED;
    }
    if (cb->stats)
        wp_hist_record((wp_stats_shard *)cb->stats, f->st_bytes_processed,
                       r == WP_CH_FOUND ? ch.consumed : len);
    if (r == WP_CH_NOT_TLS) {
        if (f->close_on_parse_error)
            return WP_LF_FAILED;
        count(cb, f->st_tls_not_found);
        return WP_LF_CONTINUE;
    }
    count(cb, f->st_tls_found);
    count(cb, ch.sni[0] ? f->st_sni_found : f->st_sni_not_found);
    count(cb, ch.has_alpn ? f->st_alpn_found : f->st_alpn_not_found);
    if (wp_lf_set_transport_protocol(cb->socket, "tls") != 0 ||
        (ch.sni[0] && wp_lf_set_server_name(cb->socket, ch.sni) != 0) ||
        (ch.nalpn && wp_lf_set_application_protocols(cb->socket, ch.alpn, ch.nalpn) != 0))
        return WP_LF_FAILED; /* out of memory */
    return WP_LF_CONTINUE;
}

static size_t max_read_bytes(const void *self)
{
    return ((const wp_tls_inspector *)self)->max_client_hello_size;
}

const wp_listener_filter_ops wp_tls_inspector_ops = {
    .name = WP_TLS_INSPECTOR_NAME,
    .on_accept = on_accept,
    .on_data = on_data,
    .max_read_bytes = max_read_bytes,
};

int wp_tls_inspector_register_stats(wp_stats *st, const wp_config *c)
{
    for (size_t i = 0; i < c->nlisteners; i++) {
        const wp_listener *l = &c->listeners[i];
        for (size_t k = 0; k < l->nlistener_filters; k++) {
            if (l->listener_filters[k].ops != &wp_tls_inspector_ops)
                continue;
            /* the filter's stat slots are the mutable part of its config */
            wp_tls_inspector *f = (wp_tls_inspector *)(uintptr_t)l->listener_filters[k].config;
            f->st_too_large = wp_stats_counter(st, "tls_inspector.client_hello_too_large");
            f->st_tls_found = wp_stats_counter(st, "tls_inspector.tls_found");
            f->st_tls_not_found = wp_stats_counter(st, "tls_inspector.tls_not_found");
            f->st_alpn_found = wp_stats_counter(st, "tls_inspector.alpn_found");
            f->st_alpn_not_found = wp_stats_counter(st, "tls_inspector.alpn_not_found");
            f->st_sni_found = wp_stats_counter(st, "tls_inspector.sni_found");
            f->st_sni_not_found = wp_stats_counter(st, "tls_inspector.sni_not_found");
            f->st_bytes_processed = wp_stats_histogram(st, "tls_inspector.bytes_processed");
            if (f->st_too_large == WP_STAT_INVALID || f->st_tls_found == WP_STAT_INVALID ||
                f->st_tls_not_found == WP_STAT_INVALID || f->st_alpn_found == WP_STAT_INVALID ||
                f->st_alpn_not_found == WP_STAT_INVALID || f->st_sni_found == WP_STAT_INVALID ||
                f->st_sni_not_found == WP_STAT_INVALID || f->st_bytes_processed == WP_STAT_INVALID)
                return -1;
        }
    }
    return 0;
}
