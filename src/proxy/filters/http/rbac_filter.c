/*
 * rbac_filter.c - envoy.filters.http.rbac as a filter of the HTTP filter chain
 * (proxy/http/filter.h): Envoy's HTTP RoleBasedAccessControlFilter::decodeHeaders
 * (source/extensions/filters/http/rbac/rbac_filter.cc). The request (its headers, the path as
 * the connection manager normalized it), the connection (addresses, SNI, peer certificate)
 * and the stream's dynamic metadata go through the shadow rules (counted, published as
 * dynamic metadata under envoy.filters.http.rbac, never enforced) and then the rules
 * (filters/rbac/rbac.h). A denied request is answered with a local reply: 403, body
 * "RBAC: access denied", details rbac_access_denied_matched_policy[<policy>|none], no
 * response flag; decoding stops there. No per-stream state, no allocation.
 */
#include "core/log.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/rbac/rbac.h"

static wp_filter_headers_status decode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    (void)h;
    (void)end_stream;
    const wp_rbac_config *c = f->config;
    wp_stream_info *si = f->cb->stream_info(f->stream);
    wp_route_req rq;
    f->cb->request(f->stream, &rq);
    wp_rbac_input in; /* field by field: its address slots are written before they are read */
    in.rx = f->cb->regex(f->stream);
    in.req = &rq;
    in.local = si->downstream_local;
    in.direct_remote = si->downstream_direct_remote;
    in.remote = si->downstream_remote;
    in.sni = si->requested_server_name;
    in.tls = si->downstream_tls_version != NULL;
    in.peer_uri_sans = si->downstream_peer_uri_san;
    in.peer_subject = si->downstream_peer_subject;
    in.md = &si->dynamic_metadata;
    in.parsed = in.parsed_ok = 0;
    in.path_known = false;
    wp_rbac_verdict v =
        wp_rbac_check(c, &in, f->cb->stats(f->stream), si, si->connection_id, si->stream_id);
    if (v.allowed)
        return WP_FILTER_HEADERS_CONTINUE;
    f->cb->send_local_reply(f->stream, 403, WP_RBAC_DENIED_BODY, v.details, -1);
    return WP_FILTER_HEADERS_STOP_ITERATION;
}

const wp_http_filter_type wp_http_filter_rbac = {
    .name = WP_RBAC_HTTP_NAME,
    .decode_headers = decode_headers,
};
