/*
 * ads_sotw.c - state-of-the-world xDS streams (StreamAggregatedResources) on the xDS server
 * (ads_internal.h): requests classified by the watch (discovery_state.h), the ACK fast path,
 * responses sent without copying the generated resources. Delta streams are delta.c's. See
 * ads.h for the behaviour followed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/eds_update.h"
#include "xds/grpc_frame.h"

/* Sends the SotW response for r: the resources are not copied. The cache's shared text is
 * referenced (wf_h2_buf) and the proxy's own part is handed over (r->own is taken: NULL
 * afterwards); only the envelope around them is copied. *len: the message's bytes. 0 or -1. */
static int sotw_send(wf_ads_conn *c, const char *version, wf_gen_text *r, const char *type_url,
                     const char *nonce, size_t *len)
{
    char head[192], tail[256];
    bool any = r->shared_len || r->own_len;
    int hn = snprintf(head, sizeof head, "{\"version_info\":\"%s\",%s", version,
                      any ? "\"resources\":[" : "");
    int tn = snprintf(tail, sizeof tail, "%s\"type_url\":\"%s\",\"nonce\":\"%s\"}", any ? "]," : "",
                      type_url, nonce);
    if (hn < 0 || (size_t)hn >= sizeof head || tn < 0 || (size_t)tn >= sizeof tail)
        return -1;
    wf_h2_buf *own = NULL;
    if (r->own_len) {
        own = wf_h2_buf_take(r->own, r->own_len); /* frees r->own when it fails */
        r->own = NULL;
        if (!own)
            return -1;
    }
    wf_h2_piece pc[5];
    size_t n = 0;
    pc[n++] = (wf_h2_piece){.data = head, .len = (size_t)hn};
    if (r->shared_len)
        pc[n++] = r->shared_buf ? (wf_h2_piece){.buf = r->shared_buf, .len = r->shared_len}
                                : (wf_h2_piece){.data = r->shared, .len = r->shared_len};
    if (r->shared_len && r->own_len)
        pc[n++] = (wf_h2_piece){.data = ",", .len = 1};
    if (own)
        pc[n++] = (wf_h2_piece){.buf = own, .len = r->own_len};
    pc[n++] = (wf_h2_piece){.data = tail, .len = (size_t)tn};
    *len = (size_t)hn + r->shared_len + (r->shared_len && r->own_len) + r->own_len + (size_t)tn;
    int rc = c->call ? wf_h2_call_sendv(c->call, pc, n) : WF_H2_E_CLOSED;
    wf_h2_buf_unref(own);
    if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "ADS: send to %s failed (%d, %zu bytes)", c->id, rc,
               *len);
        return -1;
    }
    return 0;
}

/* The resources of t for c: the whole watch, or (an incremental EDS push) the watched clusters
 * of services only. 1 generated, 0 nothing to send (no watched cluster updated), -1. */
static int sotw_generate(wf_ads_conn *c, wf_xds_type t, const json_t *services, wf_gen_text *r)
{
    wf_ads_type *ty = &c->types[t];
    if (!services)
        return wf_ads_gen_text(c, t, &ty->w, r) == 0 ? 1 : -1;
    wf_xds_names sub;
    int n = wf_eds_names_updated(&ty->w.names, services, &sub);
    if (n <= 0)
        return n;
    int rc = wf_ads_gen_text_names(c, t, &sub, wf_xds_names_hash(&sub), r);
    wf_xds_names_free(&sub);
    return rc == 0 ? 1 : -1;
}

int wf_ads_sotw_push(wf_ads_conn *c, wf_xds_type t, bool force, const json_t *services)
{
    wf_ads *a = c->ads;
    wf_ads_type *ty = &c->types[t];
    uint64_t t0 = uv_hrtime();
    wf_gen_text r;
    services = t == WF_XDS_EDS ? services : NULL;
    int g = sotw_generate(c, t, services, &r);
    if (g < 0) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "ADS:%s: generation failed for %s", wf_xds_type_short(t),
               c->id);
        return -1;
    }
    if (g == 0)
        return 0;
    if (!force && !services && ty->sent_any && r.hash == ty->sent_hash) {
        wf_gen_text_free(&r);
        return 0;
    }
    char nonce[40];
    size_t len = 0;
    wf_ads_nonce(a, nonce);
    int rc = sotw_send(c, a->version, &r, wf_xds_type_url(t), nonce, &len);
    uint64_t h = r.hash;
    wf_gen_text_free(&r);
    if (rc || wf_xds_watch_on_sent(&ty->w, a->version, nonce, wf_ads_now_ms())) {
        return -1;
    }
    ty->sent_any = true;
    ty->sent_hash = services ? 0 : h; /* a part: the next full push sends the whole again */
    ty->sent_at_ms = wf_ads_now_ms();
    wf_ads_observe_push(c, t, t0);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: PUSH%s for node:%s version:%s nonce:%s bytes:%zu",
           wf_xds_type_short(t), services ? " INC" : "", c->id, a->version, nonce, len);
    return 1;
}

static void sotw_request(wf_ads_conn *c, const wf_xds_request *req, const wf_xds_req_peek *pk)
{
    int t = wf_xds_type_from_url(req->type_url);
    wf_xds_req_kind kind;
    if (t < 0) {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS: %s: ignoring unknown type %s", c->id,
               req->type_url);
        return;
    }
    if (wf_xds_watch_on_request(&c->types[t].w, req, wf_ads_now_ms(), &kind)) {
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (kind == WF_XDS_REQ_INITIAL || kind == WF_XDS_REQ_ACK || kind == WF_XDS_REQ_RESOURCE_CHANGE)
        wf_xds_watch_set_names_key(&c->types[t].w, pk->names_ok, pk->names_key);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: REQ %s %s resources:%zu nonce:%s version:%s",
           wf_xds_type_short(t), c->id, wf_xds_req_kind_name(kind), req->resource_names.n,
           req->response_nonce ? req->response_nonce : "",
           req->version_info ? req->version_info : "");
    if (kind == WF_XDS_REQ_ACK || kind == WF_XDS_REQ_RESOURCE_CHANGE)
        wf_ads_note_ack(c, (wf_xds_type)t);
    if (kind == WF_XDS_REQ_NACK) {
        wf_ads_log_nack(c, t, req->error_detail.code, req->error_detail.message);
    } else if (kind == WF_XDS_REQ_INITIAL || kind == WF_XDS_REQ_RESOURCE_CHANGE) {
        wf_ads_enqueue(c, 0, 1u << t, 0); /* answered from the push queue */
    }
}

static void sotw_message(wf_ads_conn *c, const json_t *j, const wf_xds_req_peek *pk)
{
    wf_xds_request req;
    wf_xds_err err;
    if (wf_xds_request_decode(j, &req, &err) != 0) {
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err.text);
        return;
    }
    if (c->has_proxy || wf_ads_on_node(c, req.has_node, &req.node) == 0) {
        sotw_request(c, &req, pk);
    }
    wf_xds_request_free(&req);
}

/* The ACK fast path (discovery.h): an ACK of the last response whose resource_names are the
 * bytes the watch's names came from is recorded without decoding the request. 1 when done. */
static int sotw_fast_ack(wf_ads_conn *c, const wf_xds_req_peek *pk)
{
    int t =
        pk->simple && c->has_proxy ? wf_xds_type_from_url_n(pk->type_url, pk->type_url_len) : -1;
    if (t < 0)
        return 0;
    wf_xds_watch *w = &c->types[t].w;
    int rc = wf_xds_watch_ack_peeked(w, pk, wf_ads_now_ms());
    if (rc < 0) {
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return 1;
    }
    if (rc > 0) {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: REQ %s ACK resources:%zu nonce:%s version:%s",
               wf_xds_type_short(t), c->id, w->names.n, w->nonce_acked,
               w->version_acked ? w->version_acked : "");
        wf_ads_note_ack(c, (wf_xds_type)t);
    }
    return rc;
}

void wf_ads_sotw_on_message(wf_ads_conn *c, const uint8_t *msg, size_t len)
{
    wf_xds_req_peek pk;
    wf_xds_request_peek((const char *)msg, len, &pk);
    if (sotw_fast_ack(c, &pk))
        return;
    json_t *j;
    wf_xds_err err;
    if (wf_xds_parse_text((const char *)msg, len, &j, &err) != 0) {
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err.text);
        return;
    }
    sotw_message(c, j, &pk);
    json_decref(j);
}
