/*
 * istio_peer.c - Istio workload metadata: node.metadata, base64 and the protobuf Struct
 * wire format of the x-envoy-peer-metadata header (see istio_peer.h).
 *
 * Struct wire format (google/protobuf/struct.proto): Struct { map<string, Value> fields = 1 }
 * where each map entry is a message { string key = 1; Value value = 2 }; Value is a oneof
 * { null_value = 1 (varint), number_value = 2 (fixed64), string_value = 3, bool_value = 4
 * (varint), struct_value = 5, list_value = 6 }.
 */
#include "proxy/stream_info/istio_peer.h"

#include <stdlib.h>
#include <string.h>

#include "core/base64.h"

/* ------------------------------------------------------------------ protobuf writing */

static const char *const TOP_KEYS[] = {"NAME", "NAMESPACE", "WORKLOAD_NAME", "CLUSTER_ID",
                                       "OWNER"}; /* WP_WL_NAME .. WP_WL_OWNER */
static const char *const LABEL_KEYS[] = {"app", "version", "service.istio.io/canonical-name",
                                         "service.istio.io/canonical-revision"}; /* WP_WL_APP.. */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_varint(wf_strbuf *b, uint64_t v)
{
    char tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (char)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    tmp[n++] = (char)v;
    wf_strbuf_append(b, tmp, n);
}

static void put_bytes(wf_strbuf *b, uint8_t tag, const char *p, size_t len)
{
    wf_strbuf_putc(b, (char)tag);
    put_varint(b, len);
    if (len)
        wf_strbuf_append(b, p, len);
}

/* Size of a map entry {key, Value{string_value}}. */
static size_t str_entry_len(size_t klen, size_t vlen)
{
    size_t value = 1 + varint_len(vlen) + vlen; /* Value.string_value */
    return 1 + varint_len(klen) + klen + 1 + varint_len(value) + value;
}

static void put_str_entry(wf_strbuf *b, const char *key, wp_istio_str v)
{
    size_t klen = strlen(key), value = 1 + varint_len(v.len) + v.len;
    wf_strbuf_putc(b, 0x0a); /* Struct.fields */
    put_varint(b, str_entry_len(klen, v.len));
    put_bytes(b, 0x0a, key, klen); /* entry.key */
    wf_strbuf_putc(b, 0x12);       /* entry.value */
    put_varint(b, value);
    put_bytes(b, 0x1a, v.p, v.len); /* Value.string_value */
}

/* LABELS: a Value{struct_value} whose Struct holds the non-empty labels, sorted by key. */
static void put_labels(wf_strbuf *b, const wp_istio_workload *w)
{
    static const int order[] = {WP_WL_APP, WP_WL_CANONICAL_NAME, WP_WL_CANONICAL_REVISION,
                                WP_WL_VERSION}; /* bytewise key order */
    size_t inner = 0;
    for (int i = 0; i < 4; i++) {
        const wp_istio_str *v = &w->f[order[i]];
        if (v->len) {
            size_t e = str_entry_len(strlen(LABEL_KEYS[order[i] - WP_WL_APP]), v->len);
            inner += 1 + varint_len(e) + e; /* Struct.fields tag, length, entry */
        }
    }
    size_t value = 1 + varint_len(inner) + inner; /* Value.struct_value */
    size_t entry = 1 + varint_len(6) + 6 + 1 + varint_len(value) + value;
    wf_strbuf_putc(b, 0x0a);
    put_varint(b, entry);
    put_bytes(b, 0x0a, "LABELS", 6);
    wf_strbuf_putc(b, 0x12);
    put_varint(b, value);
    wf_strbuf_putc(b, 0x2a);
    put_varint(b, inner);
    for (int i = 0; i < 4; i++) {
        if (w->f[order[i]].len)
            put_str_entry(b, LABEL_KEYS[order[i] - WP_WL_APP], w->f[order[i]]);
    }
}

void wp_istio_struct_encode(const wp_istio_workload *w, wf_strbuf *out)
{
    /* deterministic: CLUSTER_ID < LABELS < NAME < NAMESPACE < OWNER < WORKLOAD_NAME */
    if (w->f[WP_WL_CLUSTER].len)
        put_str_entry(out, "CLUSTER_ID", w->f[WP_WL_CLUSTER]);
    put_labels(out, w);
    static const int rest[] = {WP_WL_NAME, WP_WL_NAMESPACE, WP_WL_OWNER, WP_WL_WORKLOAD};
    for (int i = 0; i < 4; i++) {
        if (w->f[rest[i]].len)
            put_str_entry(out, TOP_KEYS[rest[i]], w->f[rest[i]]);
    }
}

void wp_istio_peer_value(const wp_istio_workload *w, wf_strbuf *out)
{
    wf_strbuf raw = WF_STRBUF_INIT;
    wp_istio_struct_encode(w, &raw);
    if (wf_strbuf_failed(&raw)) {
        out->failed = true;
        wf_strbuf_free(&raw);
        return;
    }
    size_t cap = (raw.len + 2) / 3 * 4 + 1;
    char *tmp = malloc(cap);
    if (!tmp) {
        out->failed = true;
    } else {
        size_t n =
            wf_base64_encode((const unsigned char *)(raw.data ? raw.data : ""), raw.len, tmp, cap);
        wf_strbuf_append(out, tmp, n);
        free(tmp);
    }
    wf_strbuf_free(&raw);
}

/* ------------------------------------------------------------------ protobuf reading */

typedef struct {
    const uint8_t *p, *end;
} rd;

static int get_varint(rd *r, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return -1;
        uint8_t c = *r->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* Reads one field header and, for length-delimited fields, its payload into *sub. Other wire
 * types are skipped (*sub empty). Returns the field number, or -1 on malformed input. */
static int next_field(rd *r, int *wt, rd *sub)
{
    uint64_t key, len;
    if (get_varint(r, &key) != 0 || key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return -1;
    *wt = (int)(key & 7);
    sub->p = sub->end = NULL;
    switch (*wt) {
    case 0:
        return get_varint(r, &len) == 0 ? (int)(key >> 3) : -1;
    case 1:
    case 5: {
        size_t n = *wt == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return -1;
        r->p += n;
        return (int)(key >> 3);
    }
    case 2:
        if (get_varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p))
            return -1;
        sub->p = r->p;
        sub->end = r->p + len;
        r->p += len;
        return (int)(key >> 3);
    default:
        return -1;
    }
}

/* A Value: its string_value (*is_str) or struct_value (*is_struct) payload. */
static int read_value(rd v, rd *payload, bool *is_str, bool *is_struct)
{
    *is_str = *is_struct = false;
    while (v.p < v.end) {
        int wt;
        rd sub;
        int f = next_field(&v, &wt, &sub);
        if (f < 0)
            return -1;
        if (wt == 2 && (f == 3 || f == 5)) {
            *payload = sub;
            *is_str = f == 3;
            *is_struct = f == 5;
        } else if (f == 3 || f == 5) {
            return -1;
        }
    }
    return 0;
}

/* A map entry: key and Value payload. */
static int read_entry(rd e, wp_istio_str *key, rd *value)
{
    key->p = NULL;
    key->len = 0;
    value->p = value->end = NULL;
    while (e.p < e.end) {
        int wt;
        rd sub;
        int f = next_field(&e, &wt, &sub);
        if (f < 0 || ((f == 1 || f == 2) && wt != 2))
            return -1;
        if (f == 1)
            *key = (wp_istio_str){(const char *)sub.p, (size_t)(sub.end - sub.p)};
        else if (f == 2)
            *value = sub;
    }
    return 0;
}

static bool key_is(wp_istio_str k, const char *lit)
{
    size_t n = strlen(lit);
    return k.len == n && memcmp(k.p, lit, n) == 0;
}

/* Walks a Struct; labels: the Struct is LABELS (keys are label names). */
static int read_struct(rd s, wp_istio_workload *w, bool labels)
{
    while (s.p < s.end) {
        int wt;
        rd e, val, payload;
        wp_istio_str key;
        bool is_str, is_struct;
        int f = next_field(&s, &wt, &e);
        if (f < 0)
            return -1;
        if (f != 1)
            continue;
        if (wt != 2 || read_entry(e, &key, &val) != 0)
            return -1;
        if (!val.p || read_value(val, &payload, &is_str, &is_struct) != 0)
            continue;
        wp_istio_str v = {(const char *)payload.p, is_str ? (size_t)(payload.end - payload.p) : 0};
        if (!labels && is_struct && key_is(key, "LABELS")) {
            if (read_struct(payload, w, true) != 0)
                return -1;
            continue;
        }
        if (!is_str)
            continue;
        const char *const *keys = labels ? LABEL_KEYS : TOP_KEYS;
        int nkeys = labels ? 4 : 5, base = labels ? WP_WL_APP : 0;
        for (int i = 0; i < nkeys; i++) {
            if (key_is(key, keys[i]))
                w->f[base + i] = v;
        }
    }
    return 0;
}

int wp_istio_struct_decode(const uint8_t *buf, size_t n, wp_istio_workload *w)
{
    memset(w, 0, sizeof *w);
    rd r = {buf, buf + n};
    if (read_struct(r, w, false) != 0) {
        memset(w, 0, sizeof *w);
        return -1;
    }
    return 0;
}

int wp_istio_peer_decode(const char *value, size_t len, uint8_t *scratch, size_t cap,
                         wp_istio_workload *w)
{
    memset(w, 0, sizeof *w);
    size_t n = 0;
    if ((len + 3) / 4 * 3 > cap || !wf_base64_decode(value, len, WF_B64_PAD_OPTIONAL, scratch, &n))
        return -1;
    return wp_istio_struct_decode(scratch, n, w);
}

/* ------------------------------------------------------------------ node metadata */

static wp_istio_str json_str(const json_t *o, const char *k)
{
    const json_t *v = o ? json_object_get(o, k) : NULL;
    if (!json_is_string(v))
        return (wp_istio_str){NULL, 0};
    return (wp_istio_str){json_string_value(v), json_string_length(v)};
}

void wp_istio_workload_from_node(const json_t *md, wp_istio_workload *w)
{
    memset(w, 0, sizeof *w);
    if (!json_is_object(md))
        return;
    for (int i = 0; i < 5; i++)
        w->f[i] = json_str(md, TOP_KEYS[i]);
    const json_t *labels = json_object_get(md, "LABELS");
    for (int i = 0; i < 4; i++)
        w->f[WP_WL_APP + i] = json_str(labels, LABEL_KEYS[i]);
}
