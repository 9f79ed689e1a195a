/*
 * fuzz_discovery.c - libFuzzer target for the xDS discovery message decoders
 * (xds/discovery.h): DiscoveryRequest / DiscoveryResponse / DeltaDiscoveryRequest /
 * DeltaDiscoveryResponse JSON, as both ends of an ADS stream receive them, and the
 * request peek of the server's ACK fast path.
 *
 * Input: byte 0 selects the message (low two bits), the rest is the message text.
 * Checks besides crashes and leaks:
 *  - a decode error names a field text; a decoded message re-encodes, the encoding decodes
 *    again and re-encodes to the same JSON (protobuf JSON round trip);
 *  - requests: wf_xds_request_peek never reads outside the text, its pointers lie inside it,
 *    and when it calls a request simple and the full decode accepts it, the peeked type_url,
 *    response_nonce and version_info are the decoded ones byte for byte;
 *  - the server classifies the decoded request against a fresh and an answered watch.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "xds/discovery.h"

typedef union {
    wf_xds_request req;
    wf_xds_response resp;
    wf_xds_delta_request dreq;
    wf_xds_delta_response dresp;
} any_msg;

typedef struct {
    int (*decode)(const json_t *, any_msg *, wf_xds_err *);
    json_t *(*encode)(const any_msg *);
    void (*release)(any_msg *);
} codec;

/* Adapters with the union's type (no calls through mismatched function pointer types). */
#define CODEC(member, name)                                                                        \
    static int name##_dec(const json_t *j, any_msg *m, wf_xds_err *e)                              \
    {                                                                                              \
        return wf_xds_##name##_decode(j, &m->member, e);                                           \
    }                                                                                              \
    static json_t *name##_enc(const any_msg *m)                                                    \
    {                                                                                              \
        return wf_xds_##name##_encode(&m->member);                                                 \
    }                                                                                              \
    static void name##_rel(any_msg *m)                                                             \
    {                                                                                              \
        wf_xds_##name##_free(&m->member);                                                          \
    }
CODEC(req, request)
CODEC(resp, response)
CODEC(dreq, delta_request)
CODEC(dresp, delta_response)

static const codec codecs[4] = {
    {request_dec, request_enc, request_rel},
    {response_dec, response_enc, response_rel},
    {delta_request_dec, delta_request_enc, delta_request_rel},
    {delta_response_dec, delta_response_enc, delta_response_rel},
};

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        if (s[i])
            return false;
    return true;
}

/* Decodes j with c into *m; checks the error contract. */
static int decode(const codec *c, const json_t *j, any_msg *m)
{
    wf_xds_err err;
    memset(&err, 0xa5, sizeof err);
    memset(m, 0, sizeof *m); /* a failed decode must leave it so: nothing half-built */
    int rc = c->decode(j, m, &err);
    if (rc == WF_XDS_E_INVALID &&
        (!memchr(err.text, '\0', sizeof err.text) || !memchr(err.field, '\0', sizeof err.field) ||
         err.text[0] == '\0' || !all_zero(m, sizeof *m)))
        abort();
    return rc;
}

/* decode(encode(m)) encodes to encode(m). */
static void round_trip(const codec *c, const any_msg *m)
{
    json_t *e1 = c->encode(m);
    if (!e1)
        return; /* out of memory */
    any_msg m2;
    if (decode(c, e1, &m2) != WF_XDS_OK)
        abort();
    json_t *e2 = c->encode(&m2);
    if (e2 && !json_equal(e1, e2))
        abort();
    json_decref(e2);
    c->release(&m2);
    json_decref(e1);
}

static bool same(const char *p, size_t n, const char *s)
{
    if (!p)
        return s == NULL || *s == '\0';
    return s && strlen(s) == n && memcmp(p, s, n) == 0;
}

static void inside(const char *lo, size_t len, const char *p, size_t n)
{
    if (p && (p < lo || n > len || p + n > lo + len))
        abort();
}

static void check_peek(const char *text, size_t len, const wf_xds_request *req)
{
    wf_xds_req_peek pk;
    wf_xds_request_peek(text, len, &pk);
    inside(text, len, pk.type_url, pk.type_url_len);
    inside(text, len, pk.nonce, pk.nonce_len);
    inside(text, len, pk.version, pk.version_len);
    if (pk.type_url && wf_xds_type_from_url_n(pk.type_url, pk.type_url_len) < -1)
        abort();
    if (!req || !pk.simple)
        return;
    if (!same(pk.type_url, pk.type_url_len, req->type_url) ||
        !same(pk.nonce, pk.nonce_len, req->response_nonce) ||
        !same(pk.version, pk.version_len, req->version_info))
        abort();
    if (wf_xds_type_from_url_n(pk.type_url, pk.type_url_len) != wf_xds_type_from_url(req->type_url))
        abort();
}

/* The server side: classify and record the request on a fresh watch and on one that sent a
 * response with the request's nonce. */
static void watch(const wf_xds_request *req)
{
    wf_xds_watch w = {0};
    wf_xds_req_kind k;
    if (wf_xds_watch_on_request(&w, req, 1, &k) == WF_XDS_OK &&
        wf_xds_watch_on_sent(&w, "v1", req->response_nonce ? req->response_nonce : "n", 2) ==
            WF_XDS_OK) {
        (void)wf_xds_watch_on_request(&w, req, 3, &k);
        if (!wf_xds_req_kind_name(k) || !wf_xds_sync_name(wf_xds_watch_sync(&w)))
            abort();
    }
    wf_xds_watch_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] & 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const codec *c = &codecs[which];
    json_t *j = NULL;
    wf_xds_err err;
    int rc = wf_xds_parse_text(text, len, &j, &err);
    if (rc != WF_XDS_OK) {
        if (j || (rc == WF_XDS_E_INVALID && !memchr(err.text, '\0', sizeof err.text)))
            abort();
        if (which == 0)
            check_peek(text, len, NULL);
        return 0;
    }
    any_msg m;
    rc = decode(c, j, &m);
    if (rc == WF_XDS_OK) {
        round_trip(c, &m);
        if (which == 0) {
            check_peek(text, len, &m.req);
            watch(&m.req);
        }
        c->release(&m);
    } else if (which == 0) {
        check_peek(text, len, NULL);
    }
    json_decref(j);
    return 0;
}
