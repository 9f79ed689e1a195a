/*
 * jwt_authn_filter.c - envoy.filters.http.jwt_authn as a filter of the HTTP filter chain
 * (proxy/http/filter.h): Envoy's jwt_authn Filter::decodeHeaders and onComplete (the logic is
 * jwt_authn.h's). Verification is synchronous (the keys are inline), so the filter never stops
 * iteration except to answer.
 *
 * Per-stream state (the slot): the verification result (header changes and the payload, held
 * until the stream ends: the upstream request head and the dynamic metadata point into it) or,
 * after a rejection, the www-authenticate header added to the local reply in encode_headers.
 * Nothing is allocated when the request carries no token.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "proxy/filters/http/filters.h"
#include "proxy/filters/http/jwt_authn.h"
#include "proxy/http/filter.h"

/* What a rejection adds to the local reply. */
typedef struct {
    wp_header_ops ops;
    wp_header_add add;
    char value[];
} www_auth;

typedef struct {
    wp_jwt_result *res; /* NULL when no token was verified */
    www_auth *deny;     /* NULL unless rejected */
} jwt_slot;

static uint64_t stream_id(const wp_filter *f)
{
    return f->cb->stream_info(f->stream)->stream_id;
}

/* Envoy's Utility::buildOriginalUri: <forwarded proto>://<host><path>. */
static www_auth *www_auth_new(const wp_route_req *rq, wp_jwt_status st)
{
    const char *err = st == WP_JWT_MISSED ? "" : ", error=\"invalid_token\"";
    int n = snprintf(NULL, 0, "Bearer realm=\"%s://%.*s%.*s\"%s", rq->https ? "https" : "http",
                     (int)rq->authority_len, rq->authority ? rq->authority : "", (int)rq->path_len,
                     rq->path, err);
    if (n < 0)
        return NULL;
    www_auth *w = malloc(sizeof(*w) + (size_t)n + 1);
    if (!w)
        return NULL;
    snprintf(w->value, (size_t)n + 1, "Bearer realm=\"%s://%.*s%.*s\"%s",
             rq->https ? "https" : "http", (int)rq->authority_len,
             rq->authority ? rq->authority : "", (int)rq->path_len, rq->path, err);
    w->add =
        (wp_header_add){"www-authenticate", 16, w->value, (size_t)n, WP_OVERWRITE_IF_EXISTS_OR_ADD};
    w->ops = (wp_header_ops){&w->add, 1, NULL, 0};
    return w;
}

/* Filter::onComplete with a failure: 401 (403 for the audiences), the status as body. */
static void reject(const wp_filter *f, jwt_slot *js, const wp_route_req *rq, wp_jwt_status st)
{
    const wp_jwt_authn_filter *cfg = f->config;
    wp_stat_add(f->cb->stats(f->stream), cfg->st_denied, 1);
    js->deny = www_auth_new(rq, st);
    WF_STREAM_LOG(WF_LC_filter, WF_LOG_DEBUG, f->cb->connection_id(f->stream), stream_id(f),
                  "jwt_authn: Jwt authentication completed with: %s", wp_jwt_status_str(st));
    f->cb->send_local_reply(f->stream, st == WP_JWT_AUDIENCE_NOT_ALLOWED ? 403 : 401,
                            wp_jwt_status_str(st), wp_jwt_status_details(st), -1);
}

/* Filter::decodeHeaders. */
static wp_filter_headers_status decode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    (void)end_stream;
    const wp_jwt_authn_filter *cfg = f->config;
    jwt_slot *js = f->slot;
    wp_route_req rq;
    f->cb->request(f->stream, &rq);
    wp_jwt_request jr = {rq.method, rq.method_len, rq.path, rq.path_len, h->headers, h->nheaders};
    struct wp_stats_shard *sh = f->cb->stats(f->stream);
    if (cfg->bypass_cors_preflight && wp_jwt_is_cors_preflight(&jr)) {
        wp_stat_add(sh, cfg->st_cors, 1);
        wp_stat_add(sh, cfg->st_allowed, 1);
        return WP_FILTER_HEADERS_CONTINUE;
    }
    const wp_jwt_rule *rule = wp_jwt_match_rule(cfg, &jr);
    wp_jwt_status st = WP_JWT_OK;
    if (rule)
        st = wp_jwt_verify_request(cfg, &rule->req, &jr, (uint64_t)time(NULL), &js->res);
    if (st != WP_JWT_OK) {
        reject(f, js, &rq, st);
        return WP_FILTER_HEADERS_STOP_ITERATION;
    }
    wp_stat_add(sh, cfg->st_allowed, 1);
    if (js->res) {
        wp_filter_add_request_ops(f, &js->res->ops);
        if (js->res->clear_route)
            f->cb->clear_route_cache(f->stream);
        if (js->res->payload)
            wp_si_set_metadata(f->cb->stream_info(f->stream), WP_JWT_AUTHN_NAME, js->res->md_key,
                               NULL, js->res->payload);
    } else if (cfg->sanitize.nremove) {
        wp_filter_add_request_ops(f, &cfg->sanitize);
    }
    return WP_FILTER_HEADERS_CONTINUE;
}

/* The rejection's www-authenticate goes on the local reply's head. */
static wp_filter_headers_status encode_headers(const wp_filter *f, wp_filter_headers *h,
                                               bool end_stream)
{
    (void)h;
    (void)end_stream;
    jwt_slot *js = f->slot;
    if (js->deny)
        wp_filter_add_response_ops(f, &js->deny->ops);
    return WP_FILTER_HEADERS_CONTINUE;
}

static void on_destroy(const wp_filter *f)
{
    jwt_slot *js = f->slot;
    wp_jwt_result_free(js->res);
    free(js->deny);
    js->res = NULL;
    js->deny = NULL;
}

const wp_http_filter_type wp_http_filter_jwt_authn = {
    .name = WP_JWT_AUTHN_NAME,
    .slot_size = sizeof(jwt_slot),
    .decode_headers = decode_headers,
    .encode_headers = encode_headers,
    .on_destroy = on_destroy,
};
