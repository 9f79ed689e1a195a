/*
 * peer_exchange.c - the wire protocol of Istio's TCP metadata exchange (peer_exchange.h).
 */
#include "proxy/net/peer_exchange.h"

#include <stdlib.h>
#include <string.h>

#include "xds/protowire.h"

#define KEY_MD "x-envoy-peer-metadata"
#define KEY_ID "x-envoy-peer-metadata-id"

/* ------------------------------------------------------------------ encoding */

static void put_u32be(wf_strbuf *b, uint32_t v)
{
    char c[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
    wf_strbuf_append(b, c, 4);
}

/* A Struct fields entry {key, Value{field vnum: bytes}} appended to out as field 1. */
static void put_entry(wf_strbuf *out, const char *key, uint32_t vnum, const void *p, size_t n)
{
    wf_strbuf value = WF_STRBUF_INIT, entry = WF_STRBUF_INIT;
    wf_pb_put_bytes(&value, vnum, p, n);
    wf_pb_put_bytes(&entry, 1, key, strlen(key));
    wf_pb_put_bytes(&entry, 2, value.data, value.len);
    wf_pb_put_bytes(out, 1, entry.data, entry.len);
    if (wf_strbuf_failed(&value) || wf_strbuf_failed(&entry))
        out->failed = true;
    wf_strbuf_free(&value);
    wf_strbuf_free(&entry);
}

void wp_tcp_mx_encode(const wp_istio_workload *w, const char *node_id, wf_strbuf *out)
{
    wf_strbuf inner = WF_STRBUF_INIT, top = WF_STRBUF_INIT, any = WF_STRBUF_INIT;
    wp_istio_struct_encode(w, &inner);
    /* deterministic: x-envoy-peer-metadata < x-envoy-peer-metadata-id; struct_value is
     * Value field 5, string_value field 3 */
    put_entry(&top, KEY_MD, 5, inner.data, inner.len);
    if (node_id && *node_id)
        put_entry(&top, KEY_ID, 3, node_id, strlen(node_id));
    wf_pb_put_bytes(&any, 1, WP_TCP_MX_STRUCT_URL, strlen(WP_TCP_MX_STRUCT_URL));
    wf_pb_put_bytes(&any, 2, top.data, top.len);
    if (wf_strbuf_failed(&inner) || wf_strbuf_failed(&top) || wf_strbuf_failed(&any)) {
        out->failed = true;
    } else {
        put_u32be(out, WP_TCP_MX_MAGIC);
        put_u32be(out, (uint32_t)any.len);
        wf_strbuf_append(out, any.data, any.len);
    }
    wf_strbuf_free(&inner);
    wf_strbuf_free(&top);
    wf_strbuf_free(&any);
}

/* ------------------------------------------------------------------ decoding */

static uint32_t get_u32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The struct_value bytes of the x-envoy-peer-metadata entry of a Struct: 1 found, 0 absent,
 * -1 malformed. */
static int find_peer_struct(const uint8_t *p, size_t n, const uint8_t **sp, size_t *sn)
{
    wf_pb_reader r;
    wf_pb_field f;
    int rc;
    wf_pb_reader_init(&r, p, n);
    while ((rc = wf_pb_next(&r, &f)) == 1) {
        if (f.num != 1 || f.wire != WF_PB_LEN)
            continue;
        wf_pb_reader er;
        wf_pb_field ef;
        const uint8_t *key = NULL, *val = NULL;
        size_t klen = 0, vlen = 0;
        int erc;
        wf_pb_reader_init(&er, f.p, f.len);
        while ((erc = wf_pb_next(&er, &ef)) == 1) {
            if (ef.num == 1 && ef.wire == WF_PB_LEN)
                key = ef.p, klen = ef.len;
            else if (ef.num == 2 && ef.wire == WF_PB_LEN)
                val = ef.p, vlen = ef.len;
        }
        if (erc < 0)
            return -1;
        if (!key || klen != strlen(KEY_MD) || memcmp(key, KEY_MD, klen) != 0)
            continue;
        if (!val) /* an absent Value: the empty message */
            return 0;
        wf_pb_reader vr;
        wf_pb_field vf;
        int vrc;
        wf_pb_reader_init(&vr, val, vlen);
        while ((vrc = wf_pb_next(&vr, &vf)) == 1) {
            if (vf.num == 5 && vf.wire == WF_PB_LEN) {
                *sp = vf.p;
                *sn = vf.len;
                return 1;
            }
        }
        return vrc < 0 ? -1 : 0;
    }
    return rc < 0 ? -1 : 0;
}

/* Copies w's fields into peer->buf (fields that do not fit are left out). */
static void keep_peer(const wp_istio_workload *w, wp_tcp_mx_peer *peer)
{
    size_t used = 0;
    memset(&peer->w, 0, sizeof peer->w);
    for (int i = 0; i < WP_WL_COUNT_; i++) {
        size_t n = w->f[i].len;
        if (!n || n > sizeof peer->buf - used)
            continue;
        memcpy(peer->buf + used, w->f[i].p, n);
        peer->w.f[i] = (wp_istio_str){(const char *)peer->buf + used, n};
        used += n;
    }
}

int wp_tcp_mx_decode(const uint8_t *p, size_t len, wp_tcp_mx_peer *peer, size_t *consumed)
{
    *consumed = 0;
    if (len < WP_TCP_MX_HEADER_LEN)
        return WP_TCP_MX_MORE;
    if (get_u32be(p) != WP_TCP_MX_MAGIC)
        return WP_TCP_MX_INVALID;
    uint32_t size = get_u32be(p + 4);
    if (size > WP_TCP_MX_MAX_DATA) {
        *consumed = WP_TCP_MX_HEADER_LEN;
        return WP_TCP_MX_INVALID;
    }
    if (len - WP_TCP_MX_HEADER_LEN < size)
        return WP_TCP_MX_MORE;
    *consumed = WP_TCP_MX_HEADER_LEN; /* from here on the header is drained either way */
    const uint8_t *data = p + WP_TCP_MX_HEADER_LEN;
    wf_pb_reader r;
    wf_pb_field f;
    int rc;
    const uint8_t *url = NULL, *value = NULL;
    size_t ulen = 0, vlen = 0;
    wf_pb_reader_init(&r, data, size);
    while ((rc = wf_pb_next(&r, &f)) == 1) {
        if (f.num == 1 && f.wire == WF_PB_LEN)
            url = f.p, ulen = f.len;
        else if (f.num == 2 && f.wire == WF_PB_LEN)
            value = f.p, vlen = f.len;
    }
    if (rc < 0 || !url || ulen != strlen(WP_TCP_MX_STRUCT_URL) ||
        memcmp(url, WP_TCP_MX_STRUCT_URL, ulen) != 0)
        return WP_TCP_MX_INVALID;
    const uint8_t *sp = NULL;
    size_t sn = 0;
    int found = value ? find_peer_struct(value, vlen, &sp, &sn) : 0; /* absent: empty Struct */
    if (found < 0)
        return WP_TCP_MX_INVALID;
    wp_istio_workload w;
    memset(&w, 0, sizeof w);
    if (found && wp_istio_struct_decode(sp, sn, &w) != 0)
        return WP_TCP_MX_INVALID;
    keep_peer(&w, peer);
    *consumed = WP_TCP_MX_HEADER_LEN + size;
    return WP_TCP_MX_DONE;
}

/* ------------------------------------------------------------------ one connection side */

bool wp_tcp_mx_begin(wp_tcp_mx *m, const char *alpn)
{
    if (m->state == WP_TCP_MX_PROTOCOL_NOT_READ)
        m->state = alpn && strcmp(alpn, m->cfg->protocol) == 0 ? WP_TCP_MX_READING : WP_TCP_MX_OFF;
    return m->state == WP_TCP_MX_READING;
}

bool wp_tcp_mx_take_preamble(wp_tcp_mx *m, const uint8_t **p, size_t *n)
{
    if (m->written || m->state == WP_TCP_MX_OFF || m->state == WP_TCP_MX_PROTOCOL_NOT_READ ||
        !m->cfg->preamble_len)
        return false;
    m->written = true;
    *p = m->cfg->preamble;
    *n = m->cfg->preamble_len;
    return true;
}

size_t wp_tcp_mx_on_bytes(wp_tcp_mx *m, const uint8_t *p, size_t len, bool end_stream, bool *hold)
{
    *hold = false;
    if (m->state != WP_TCP_MX_READING)
        return 0;
    size_t consumed = 0;
    int rc = wp_tcp_mx_decode(p, len, &m->peer, &consumed);
    if (rc == WP_TCP_MX_DONE) {
        m->state = WP_TCP_MX_FINISHED;
        m->have_peer = true;
    } else if (rc == WP_TCP_MX_INVALID || end_stream) {
        m->state = WP_TCP_MX_OFF; /* Istio's Invalid: the rest passes unchanged */
    } else {
        *hold = true;
    }
    return consumed;
}

const wp_istio_workload *wp_tcp_mx_peer_workload(const wp_tcp_mx *m)
{
    return m && m->have_peer ? &m->peer.w : NULL;
}
