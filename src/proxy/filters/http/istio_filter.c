/*
 * istio_filter.c - the request-path work of Istio's filters (istio_stats.h), which
 * filters/http/istio_filters.c runs as filters of the HTTP filter chain: upstream peer
 * discovery when the upstream response headers arrive, the exchange's response header
 * operations and the metrics record when a stream ends. Runs on the stream's worker thread
 * only.
 */
#include <stdio.h>
#include <string.h>

#include "http/grpc_http.h"
#include "proxy/http/headers.h"
#include "proxy/filters/http/istio_stats.h"
#include "proxy/http/conn.h"

/* Decoding room for one x-envoy-peer-metadata value (a sidecar's is a few hundred bytes; the
 * full node metadata older proxies send fits too). Larger values are taken as no peer. */
#define MX_SCRATCH 4096

/* Copies the fields of w into is->buf; false (no peer kept) when they do not fit. */
static bool keep_peer(wp_istio_stream *is, const wp_istio_workload *w)
{
    size_t used = 0;
    for (int i = 0; i < WP_WL_COUNT_; i++) {
        size_t n = w->f[i].len;
        if (n > sizeof is->buf - used)
            return false;
        if (n)
            memcpy(is->buf + used, w->f[i].p, n);
        is->peer.f[i] = (wp_istio_str){is->buf + used, n};
        used += n;
    }
    return true;
}

bool wp_istio_upstream_peer(const wp_istio_stats_filter *f, const h1_header *hdrs, size_t n,
                            wp_istio_stream *out)
{
    const wp_istio_mx_filter *mx = f->mx;
    if (!mx || !mx->upstream_discovery)
        return false;
    const h1_header *h = h1_find_header(hdrs, n, WP_MX_HEADER);
    uint8_t scratch[MX_SCRATCH];
    wp_istio_workload w;
    return h && wp_istio_peer_decode(h->value.p, h->value.len, scratch, sizeof scratch, &w) == 0 &&
           keep_peer(out, &w);
}

const wp_header_ops *wp_istio_mx_resp_ops(const wp_istio_mx_filter *mx, const h1_message *req)
{
    int k = 0;
    if (mx->downstream_propagation && req) {
        k |= h1_find_header(req->headers, req->nheaders, WP_MX_HEADER_ID) ? 1 : 0;
        k |= h1_find_header(req->headers, req->nheaders, WP_MX_HEADER) ? 2 : 0;
    }
    return &mx->resp[k];
}

/* The downstream peer (destination reporter): the request's exchange header. */
static bool downstream_peer(const wp_stream *s, const wp_istio_mx_filter *mx, uint8_t *scratch,
                            size_t cap, wp_istio_workload *w)
{
    if (!mx || !mx->downstream_discovery || !s->si.request)
        return false;
    const h1_header *h = h1_find_header(s->req.headers, s->req.nheaders, WP_MX_HEADER);
    return h && wp_istio_peer_decode(h->value.p, h->value.len, scratch, cap, w) == 0;
}

/* Istio's grpc_response_status of s (Grpc::Common::getGrpcStatus(trailers, headers, info)):
 * the trailers' grpc-status, else the headers' (hdr, -1 none), else the HTTP status mapped;
 * false when there is none. */
static bool grpc_status(const wp_stream *s, int hdr, int *code)
{
    size_t len = 0;
    const char *t = wp_si_resp_trailer(&s->si, "grpc-status", &len);
    if (wf_grpc_status_parse(t, len, code))
        return true;
    if (hdr >= 0) {
        *code = hdr;
        return true;
    }
    if (s->si.response_code <= 0)
        return false;
    *code = wf_grpc_http_to_status(s->si.response_code);
    return true;
}

void wp_istio_stream_done(wp_stream *s, const wp_istio_stats_filter *f,
                          const wp_istio_workload *upstream_peer, int header_grpc_status)
{
    wp_istio_rt *rt = s->d->w->istio;
    if (!f || !rt || (!s->si.request && !s->si.response_code))
        return;
    uint8_t scratch[MX_SCRATCH];
    wp_istio_workload dpeer;
    const wp_istio_workload *peer = NULL;
    if (f->reporter == WP_ISTIO_REPORTER_DESTINATION) {
        if (downstream_peer(s, f->mx, scratch, sizeof scratch, &dpeer))
            peer = &dpeer;
    } else {
        peer = upstream_peer;
    }
    wp_istio_str host_hdr = {NULL, 0}, svc_host, svc_name;
    const char *hv = wp_si_req_header(&s->si, ":authority", &host_hdr.len);
    host_hdr.p = hv;
    if (!hv)
        host_hdr.len = 0;
    const wp_cluster *cl = s->cluster >= 0 ? &s->cfg->clusters[s->cluster] : NULL;
    wp_istio_service(s->route ? s->route->name : NULL, cl, host_hdr,
                     f->disable_host_header_fallback, &svc_host, &svc_name);
    char code[16], flags[96];
    snprintf(code, sizeof code, "%d", s->si.response_code > 0 ? s->si.response_code : 0);
    wp_si_flags_string(&s->si, flags, sizeof flags);
    /* the connection's identities, read once per connection after its handshake */
    wp_istio_sans sans;
    if (f->reporter == WP_ISTIO_REPORTER_DESTINATION)
        sans = (wp_istio_sans){wp_istio_first_san(s->si.downstream_peer_uri_san),
                               wp_istio_first_san(s->si.downstream_local_uri_san)};
    else
        sans = (wp_istio_sans){wp_istio_first_san(s->si.upstream_peer_uri_san),
                               wp_istio_first_san(s->si.upstream_local_uri_san)};
    wp_istio_labels l;
    wp_istio_labels_build(f, peer, &sans, svc_host, svc_name, code, flags, &l);
    const h1_header *ct =
        s->si.request ? h1_find_header(s->req.headers, s->req.nheaders, "content-type") : NULL;
    char gs[16] = "";
    int g;
    bool is_grpc = ct && wf_grpc_content_type(ct->value.p, ct->value.len);
    if (is_grpc) {
        if (grpc_status(s, header_grpc_status, &g))
            snprintf(gs, sizeof gs, "%d", g);
        wp_istio_labels_grpc(&l, gs);
    }
    uint64_t ms = s->si.end_ns >= s->si.start_ns ? (s->si.end_ns - s->si.start_ns) / 1000000u : 0;
    wp_istio_record(rt, s->d->w->id, s->d->w->stats, &l, ms, s->si.wire_bytes_received,
                    s->si.wire_bytes_sent);
    const wp_grpc_stats_object *m = &s->si.grpc_stats;
    if (is_grpc && m->present) { /* reportHelper(true): envoy.filters.http.grpc_stats's counts */
        wp_istio_labels_messages(&l);
        wp_istio_record_messages(rt, s->d->w->id, s->d->w->stats, &l, m->request_message_count,
                                 m->response_message_count);
    }
}
