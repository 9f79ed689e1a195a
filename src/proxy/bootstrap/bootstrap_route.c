/*
 * bootstrap_route.c - decode an inline RouteConfiguration (envoy.config.route.v3) into a
 * wp_route_config: virtual hosts, routes, matchers, actions and header operations.
 *
 * Supported: RouteConfiguration {name, virtual_hosts, request/response_headers_to_add/remove,
 * ignore_port_in_host_matching, validate_clusters}; VirtualHost {name, domains, routes,
 * header ops, retry_policy, include_request_attempt_count, include_attempt_count_in_response,
 * request_body_buffer_limit, per_request_buffer_limit_bytes}; Route {name, match, route |
 * redirect | direct_response, header ops, request_body_buffer_limit,
 * per_request_buffer_limit_bytes}; VirtualHost and Route also typed_per_filter_config
 * (only envoy.filters.http.fault, bootstrap_fault.c);
 * RouteMatch {prefix | path | safe_regex | path_separated_prefix, case_sensitive, headers,
 * query_parameters}; RouteAction {cluster | weighted_clusters, prefix_rewrite, regex_rewrite,
 * host_rewrite_literal, timeout, idle_timeout, max_grpc_timeout, grpc_timeout_offset,
 * max_stream_duration {max_stream_duration, grpc_timeout_header_max,
 * grpc_timeout_header_offset}, retry_policy and request_mirror_policies (bootstrap_retry.c)}.
 * Messages for rules Envoy enforces copy Envoy's wording (source/common/router/config_impl.cc,
 * header_parser.cc) or protoc-gen-validate's.
 */
#include "proxy/bootstrap/bootstrap_read.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *lower_dup(bs *b, const char *s)
{
    char *p = (char *)bs_strdup(b, s);
    for (char *q = p; q && *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return p;
}

static bool modifiable(const char *name)
{
    return name[0] != ':' && strcmp(name, "host") != 0;
}

/* ---------- header operations ---------- */

static bool header_name_ok(const char *n)
{
    if (!*n)
        return false;
    for (const unsigned char *p = (const unsigned char *)n; *p; p++)
        if (!(isalnum(*p) || strchr("!#$%&'*+-.^_`|~", *p)))
            return false;
    return true;
}

static bool dec_header_add(bs *b, json_t *o, void *arg)
{
    static const char *const actions[] = {"APPEND_IF_EXISTS_OR_ADD", "ADD_IF_ABSENT",
                                          "OVERWRITE_IF_EXISTS_OR_ADD", "OVERWRITE_IF_EXISTS",
                                          NULL};
    wp_header_add *h = arg;
    json_t *hv = bs_get(o, "header");
    int action = 0;
    bool append = true;
    if (!bs_fields(b, o, "header append append_action") || !bs_bool(b, o, "append", &append) ||
        !bs_enum(b, o, "append_action", actions, &action))
        return false;
    if (bs_get(o, "append") && bs_get(o, "append_action"))
        return bs_fail(b, "Both append and append_action are set and it's not allowed");
    h->action = bs_get(o, "append")
                    ? (append ? WP_APPEND_IF_EXISTS_OR_ADD : WP_OVERWRITE_IF_EXISTS_OR_ADD)
                    : (wp_append_action)action;
    if (!hv)
        return bs_fail_at(b, "header", "missing required field");
    size_t m = bs_push(b, "header");
    const char *key = NULL;
    h->value = "";
    bool ok = bs_fields(b, hv, "key value") && bs_req_str(b, hv, "key", &key) &&
              bs_str(b, hv, "value", &h->value);
    if (ok && !(h->key = lower_dup(b, key)))
        ok = false;
    if (ok && !modifiable(h->key))
        ok = bs_fail_at(b, "key", ":-prefixed or host headers may not be modified");
    /* Envoy's HeaderValue validation (HTTP_HEADER_NAME / HTTP_HEADER_VALUE, not strict):
     * a name is a token, a value has no NUL, CR or LF, so no mutation can inject a line */
    if (ok && !header_name_ok(h->key))
        ok = bs_fail_at(b, "key", "invalid header name: want an RFC 9110 token");
    if (ok && strpbrk(h->value, "\r\n"))
        ok = bs_fail_at(b, "value", "invalid header value: CR and LF are not allowed");
    if (ok) {
        h->key_len = strlen(h->key);
        h->value_len = strlen(h->value);
    }
    bs_pop(b, m);
    return ok;
}

static bool dec_header_remove(bs *b, json_t *o, const char *k, wp_header_ops *ops)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    size_t m = bs_push(b, k);
    if (!json_is_array(v))
        return bs_fail(b, "wrong type: expected an array of strings"), bs_pop(b, m), false;
    ops->remove = bs_alloc(b, sizeof(char *) * json_array_size(v));
    for (size_t i = 0; ops->remove && i < json_array_size(v) && !b->failed; i++) {
        json_t *s = json_array_get(v, i);
        size_t mi = bs_push_i(b, i);
        if (!json_is_string(s) || !*json_string_value(s))
            bs_fail(b, "wrong type: expected a non-empty string");
        else if (!modifiable(json_string_value(s)))
            bs_fail(b, ":-prefixed or host headers may not be removed");
        else
            ops->remove[ops->nremove++] = lower_dup(b, json_string_value(s));
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    return !b->failed;
}

/* prefix "request" or "response": <prefix>_headers_to_add / <prefix>_headers_to_remove */
static bool dec_header_ops(bs *b, json_t *o, const char *prefix, wp_header_ops *ops)
{
    char add[64], rm[64];
    snprintf(add, sizeof(add), "%s_headers_to_add", prefix);
    snprintf(rm, sizeof(rm), "%s_headers_to_remove", prefix);
    void *arr = NULL;
    if (!bs_each(b, o, add, sizeof(wp_header_add), &arr, &ops->nadd, dec_header_add))
        return false;
    ops->add = arr;
    return dec_header_remove(b, o, rm, ops);
}

static bool dec_req_resp_ops(bs *b, json_t *o, wp_header_ops *req, wp_header_ops *resp)
{
    return dec_header_ops(b, o, "request", req) && dec_header_ops(b, o, "response", resp);
}

#define HEADER_OPS_FIELDS                                                                          \
    " request_headers_to_add request_headers_to_remove response_headers_to_add "                   \
    "response_headers_to_remove"

/* ---------- regexes and string matchers ---------- */

/* o[k] is a RegexMatcher {regex, google_re2}. */
static bool dec_regex(bs *b, json_t *o, const char *k, bool full, pcre2_code **out)
{
    json_t *rm = bs_get(o, k);
    if (!rm)
        return true;
    size_t m = bs_push(b, k);
    const char *re = NULL;
    json_t *g = bs_get(rm, "google_re2");
    bool ok = bs_fields(b, rm, "regex google_re2");
    if (ok && g) {
        size_t mg = bs_push(b, "google_re2");
        ok = bs_fields(b, g, "");
        bs_pop(b, mg);
    }
    ok = ok && bs_req_str(b, rm, "regex", &re);
    if (ok) {
        wf_strbuf why = WF_STRBUF_INIT;
        *out =
            full ? wp_config_add_regex(b->c, re, &why) : wp_config_add_regex_search(b->c, re, &why);
        if (!*out) {
            size_t mr = bs_push(b, "regex");
            ok = bs_fail(b, "%s", wf_strbuf_cstr(&why));
            bs_pop(b, mr);
        }
        wf_strbuf_free(&why);
    }
    bs_pop(b, m);
    return ok;
}

static bool set_sm_value(bs *b, json_t *o, const char *k, wp_string_matcher *sm, bool nonempty)
{
    const char *v = NULL;
    if (!bs_str(b, o, k, &v))
        return false;
    if (nonempty && !*v)
        return bs_fail_at(b, k, "value length must be at least 1 characters");
    sm->value = sm->ignore_case ? lower_dup(b, v) : v;
    sm->value_len = sm->value ? strlen(sm->value) : 0;
    return sm->value != NULL;
}

static int count_present(json_t *o, const char *const *keys)
{
    int n = 0;
    for (int i = 0; keys[i]; i++)
        n += bs_get(o, keys[i]) != NULL;
    return n;
}

/* StringMatcher {exact | prefix | suffix | contains | safe_regex, ignore_case} */
bool bs_string_matcher(bs *b, json_t *o, void *arg)
{
    static const char *const kinds[] = {"exact",    "prefix",     "suffix",
                                        "contains", "safe_regex", NULL};
    wp_string_matcher *sm = arg;
    if (!bs_fields(b, o, "exact prefix suffix contains safe_regex ignore_case") ||
        !bs_bool(b, o, "ignore_case", &sm->ignore_case))
        return false;
    if (count_present(o, kinds) != 1)
        return bs_fail(b, "exactly one of exact, prefix, suffix, contains, safe_regex is required");
    for (int i = 0; kinds[i]; i++) {
        if (!bs_get(o, kinds[i]))
            continue;
        sm->kind = (wp_sm_kind)i; /* kinds[] follows wp_sm_kind */
        if (i == WP_SM_REGEX)
            return dec_regex(b, o, "safe_regex", true, &sm->re);
        return set_sm_value(b, o, kinds[i], sm, i != WP_SM_EXACT);
    }
    return true;
}

/* HeaderMatcher; without a specifier it is a presence match, as in Envoy. */
/* Route metadata (envoy.config.core.v3.Metadata): informational for weft (Istio puts the
 * VirtualService that produced a route in filter_metadata.istio.config); kept as written, so
 * /config_dump shows it. Only its shape is checked. */
bool bs_metadata(bs *b, json_t *o)
{
    json_t *m = bs_get(o, "metadata");
    if (!m)
        return true;
    if (!json_is_object(m))
        return bs_fail_at(b, "metadata", "wrong type: expected an object");
    size_t mk = bs_push(b, "metadata");
    bool ok = bs_fields(b, m, "filter_metadata typed_filter_metadata");
    json_t *fm = bs_get(m, "filter_metadata");
    if (ok && fm && !json_is_object(fm))
        ok = bs_fail_at(b, "filter_metadata", "wrong type: expected an object");
    bs_pop(b, mk);
    return ok;
}

bool bs_header_matcher(bs *b, json_t *o, void *arg)
{
    static const char *const legacy[] = {
        "exact_match",      "prefix_match",  "suffix_match", "contains_match",
        "safe_regex_match", "present_match", "string_match", NULL};
    wp_kv_matcher *h = arg;
    const char *name = NULL;
    if (!bs_fields(b, o,
                   "name exact_match prefix_match suffix_match contains_match safe_regex_match "
                   "present_match string_match invert_match treat_missing_header_as_empty") ||
        !bs_req_str(b, o, "name", &name) || !bs_bool(b, o, "invert_match", &h->invert) ||
        !bs_bool(b, o, "treat_missing_header_as_empty", &h->treat_missing_as_empty))
        return false;
    if (!(h->name = lower_dup(b, name)))
        return false;
    h->name_len = strlen(h->name);
    if (count_present(o, legacy) > 1)
        return bs_fail(b, "only one header match specifier may be set");
    h->m.kind = WP_SM_PRESENT;
    for (int i = 0; i < 4; i++) {
        if (bs_get(o, legacy[i])) {
            h->m.kind = (wp_sm_kind)i;
            return set_sm_value(b, o, legacy[i], &h->m, false);
        }
    }
    if (bs_get(o, "safe_regex_match")) {
        h->m.kind = WP_SM_REGEX;
        return dec_regex(b, o, "safe_regex_match", true, &h->m.re);
    }
    bool present = true;
    if (!bs_bool(b, o, "present_match", &present))
        return false;
    if (!present)
        h->invert = !h->invert; /* present_match: false matches when the header is absent */
    return bs_sub(b, o, "string_match", bs_string_matcher, &h->m);
}

static bool dec_query_matcher(bs *b, json_t *o, void *arg)
{
    wp_kv_matcher *q = arg;
    bool present = false;
    if (!bs_fields(b, o, "name string_match present_match") ||
        !bs_req_str(b, o, "name", &q->name) || !bs_bool(b, o, "present_match", &present))
        return false;
    q->name_len = strlen(q->name);
    if (bs_get(o, "string_match") && bs_get(o, "present_match"))
        return bs_fail(b, "only one of string_match, present_match may be set");
    q->m.kind = WP_SM_PRESENT;
    return bs_sub(b, o, "string_match", bs_string_matcher, &q->m);
}

/* ---------- route match ---------- */

static bool dec_match(bs *b, json_t *o, void *arg)
{
    static const char *const kinds[] = {"prefix", "path", "safe_regex", "path_separated_prefix",
                                        NULL};
    wp_route *r = arg;
    void *arr = NULL;
    r->case_sensitive = true;
    if (!bs_fields(b, o,
                   "prefix path safe_regex path_separated_prefix case_sensitive headers "
                   "query_parameters") ||
        !bs_bool(b, o, "case_sensitive", &r->case_sensitive))
        return false;
    if (count_present(o, kinds) != 1)
        return bs_fail(b, "exactly one of prefix, path, safe_regex, path_separated_prefix is "
                          "required");
    if (bs_get(o, "safe_regex")) {
        r->path_kind = WP_PATH_REGEX;
        if (!dec_regex(b, o, "safe_regex", true, &r->path_re))
            return false;
    } else {
        const char *k = bs_get(o, "prefix") ? "prefix"
                        : bs_get(o, "path") ? "path"
                                            : "path_separated_prefix";
        r->path_kind = k[0] == 'p' && k[1] == 'r' ? WP_PATH_PREFIX
                       : strcmp(k, "path") == 0   ? WP_PATH_EXACT
                                                  : WP_PATH_SEPARATED_PREFIX;
        if (!bs_str(b, o, k, &r->path))
            return false;
        r->path_len = strlen(r->path);
        if (r->path_kind == WP_PATH_SEPARATED_PREFIX &&
            (r->path[0] != '/' || r->path[r->path_len - 1] == '/' || strpbrk(r->path, "?#")))
            return bs_fail_at(b, k, "value does not match regex pattern \"^[^?#]+[^?#/]$\"");
    }
    if (!bs_each(b, o, "headers", sizeof(wp_kv_matcher), &arr, &r->nheaders, bs_header_matcher))
        return false;
    r->headers = arr;
    if (!bs_each(b, o, "query_parameters", sizeof(wp_kv_matcher), &arr, &r->nquery,
                 dec_query_matcher))
        return false;
    r->query = arr;
    return true;
}

/* ---------- actions ---------- */

static bool resolve(bs *b, const char *key, const char *name, int *out, bool weighted)
{
    *out = wp_config_find_cluster(b->c, name);
    if (*out >= 0 || !b->validate_clusters)
        return true;
    bs_fail_atf(b, key, "route: unknown %scluster '%s'", weighted ? "weighted " : "", name);
    return false;
}

static bool dec_weighted_cluster(bs *b, json_t *o, void *arg)
{
    wp_weighted_cluster *w = arg;
    return bs_fields(b, o, "name weight" HEADER_OPS_FIELDS) && bs_req_str(b, o, "name", &w->name) &&
           bs_u32(b, o, "weight", &w->weight) && dec_req_resp_ops(b, o, &w->req, &w->resp) &&
           resolve(b, "name", w->name, &w->cluster, true);
}

static bool dec_weighted(bs *b, json_t *o, void *arg)
{
    wp_route *r = arg;
    void *arr = NULL;
    uint32_t total = 0;
    if (!bs_fields(b, o, "clusters total_weight") || !bs_u32(b, o, "total_weight", &total) ||
        !bs_each(b, o, "clusters", sizeof(wp_weighted_cluster), &arr, &r->nweighted,
                 dec_weighted_cluster))
        return false;
    r->weighted = arr;
    if (r->nweighted == 0)
        return bs_fail_at(b, "clusters", "value must contain at least 1 item(s)");
    uint64_t sum = 0;
    for (size_t i = 0; i < r->nweighted; i++)
        sum += r->weighted[i].weight;
    if (bs_get(o, "total_weight") && sum != total) {
        bs_fail(b, "Sum of weights in the weighted_cluster should add up to %u", total);
        return false;
    }
    if (sum == 0 || sum > UINT32_MAX)
        return bs_fail(b, sum ? "Sum of weights in the weighted_cluster must not exceed 4294967295"
                              : "Sum of weights in the weighted_cluster must be greater than 0.");
    r->total_weight = (uint32_t)sum;
    return true;
}

static bool dec_regex_rewrite(bs *b, json_t *o, pcre2_code **re, const char **subst)
{
    json_t *rr = bs_get(o, "regex_rewrite");
    if (!rr)
        return true;
    size_t m = bs_push(b, "regex_rewrite");
    *subst = "";
    bool ok = bs_fields(b, rr, "pattern substitution") && bs_str(b, rr, "substitution", subst);
    if (ok && !bs_get(rr, "pattern"))
        ok = bs_fail_at(b, "pattern", "missing required field");
    ok = ok && dec_regex(b, rr, "pattern", false, re);
    bs_pop(b, m);
    return ok;
}

/* RouteAction.MaxStreamDuration (Envoy's usingNewTimeouts once present). */
static bool dec_max_stream_duration(bs *b, json_t *o, void *arg)
{
    wp_route *r = arg;
    bool has_msd = false, has_max = false;
    if (!bs_fields(b, o,
                   "max_stream_duration grpc_timeout_header_max grpc_timeout_header_offset") ||
        !bs_dur(b, o, "max_stream_duration", &r->msd_ms, &has_msd) ||
        !bs_dur(b, o, "grpc_timeout_header_max", &r->grpc_timeout_header_max_ms, &has_max) ||
        !bs_dur(b, o, "grpc_timeout_header_offset", &r->grpc_timeout_header_offset_ms, NULL))
        return false;
    r->has_max_stream_duration = true;
    r->has_msd_value = has_msd;
    r->has_grpc_timeout_header_max = has_max;
    return true;
}

static bool dec_route_action(bs *b, json_t *o, void *arg)
{
    wp_route *r = arg;
    bool has_idle = false, has_max_grpc = false;
    r->action = WP_ACT_ROUTE;
    r->timeout_ms = 15000;
    if (!bs_fields(b, o,
                   "cluster weighted_clusters prefix_rewrite regex_rewrite host_rewrite_literal "
                   "timeout idle_timeout retry_policy request_mirror_policies max_grpc_timeout "
                   "grpc_timeout_offset max_stream_duration"))
        return false;
    if (!!bs_get(o, "cluster") + !!bs_get(o, "weighted_clusters") != 1)
        return bs_fail(b, "exactly one of cluster, weighted_clusters is required");
    if (bs_get(o, "prefix_rewrite") && bs_get(o, "regex_rewrite"))
        return bs_fail(b, "Specify only one of prefix_rewrite, regex_rewrite or "
                          "path_rewrite_policy");
    if (!bs_retry_policy(b, o, &r->retry) || !bs_mirror_policies(b, o, r))
        return false;
    r->cluster = -1;
    if (!bs_str(b, o, "cluster", &r->cluster_name) ||
        (r->cluster_name && !*r->cluster_name &&
         !bs_fail_at(b, "cluster", "value length must be at least 1 characters")) ||
        (r->cluster_name && !resolve(b, "cluster", r->cluster_name, &r->cluster, false)) ||
        !bs_sub(b, o, "weighted_clusters", dec_weighted, r) ||
        !bs_str(b, o, "prefix_rewrite", &r->prefix_rewrite) ||
        !dec_regex_rewrite(b, o, &r->regex_rewrite, &r->regex_rewrite_subst) ||
        !bs_str(b, o, "host_rewrite_literal", &r->host_rewrite_literal) ||
        !bs_dur(b, o, "timeout", &r->timeout_ms, NULL) ||
        !bs_dur(b, o, "idle_timeout", &r->idle_timeout_ms, &has_idle) ||
        !bs_dur(b, o, "max_grpc_timeout", &r->max_grpc_timeout_ms, &has_max_grpc) ||
        !bs_dur(b, o, "grpc_timeout_offset", &r->grpc_timeout_offset_ms, NULL) ||
        !bs_sub(b, o, "max_stream_duration", dec_max_stream_duration, r))
        return false;
    r->has_idle_timeout = has_idle;
    r->has_max_grpc_timeout = has_max_grpc;
    return true;
}

static bool dec_redirect(bs *b, json_t *o, void *arg)
{
    static const char *const codes[] = {"MOVED_PERMANENTLY",  "FOUND",
                                        "SEE_OTHER",          "TEMPORARY_REDIRECT",
                                        "PERMANENT_REDIRECT", NULL};
    static const int code_values[] = {301, 302, 303, 307, 308};
    static const char *const path_kinds[] = {"path_redirect", "prefix_rewrite", "regex_rewrite",
                                             NULL};
    wp_route *r = arg;
    wp_redirect *d = &r->redirect;
    bool https = false;
    int code = 0;
    r->action = WP_ACT_REDIRECT;
    if (!bs_fields(b, o,
                   "https_redirect scheme_redirect host_redirect port_redirect path_redirect "
                   "prefix_rewrite regex_rewrite response_code strip_query"))
        return false;
    if (bs_get(o, "https_redirect") && bs_get(o, "scheme_redirect"))
        return bs_fail(b, "only one of https_redirect, scheme_redirect may be set");
    if (count_present(o, path_kinds) > 1)
        return bs_fail(b, "only one of path_redirect, prefix_rewrite, regex_rewrite may be set");
    if (!bs_bool(b, o, "https_redirect", &https) || !bs_str(b, o, "scheme_redirect", &d->scheme) ||
        !bs_str(b, o, "host_redirect", &d->host) || !bs_u32(b, o, "port_redirect", &d->port) ||
        !bs_str(b, o, "path_redirect", &d->path) || !bs_str(b, o, "prefix_rewrite", &d->prefix) ||
        !dec_regex_rewrite(b, o, &d->regex, &d->regex_subst) ||
        !bs_enum(b, o, "response_code", codes, &code) ||
        !bs_bool(b, o, "strip_query", &d->strip_query))
        return false;
    if (d->port > 65535)
        return bs_fail_at(b, "port_redirect", "value must be less than or equal to 65535");
    if (https)
        d->scheme = "https";
    d->code = code_values[code];
    r->cluster = -1;
    return true;
}

static bool dec_direct(bs *b, json_t *o, void *arg)
{
    wp_route *r = arg;
    uint32_t status = 0;
    r->action = WP_ACT_DIRECT;
    r->cluster = -1;
    if (!bs_fields(b, o, "status body") || !bs_u32(b, o, "status", &status))
        return false;
    if (status < 200 || status >= 600)
        return bs_fail_at(b, "status", "value must be inside range [200, 600)");
    r->direct_status = (int)status;
    json_t *body = bs_get(o, "body");
    if (!body)
        return true;
    size_t m = bs_push(b, "body");
    bool ok =
        bs_fields(b, body, "inline_string") && bs_str(b, body, "inline_string", &r->direct_body);
    if (ok && !r->direct_body)
        ok = bs_fail(b, "missing required field inline_string");
    if (ok)
        r->direct_body_len = strlen(r->direct_body);
    bs_pop(b, m);
    return ok;
}

static bool dec_route(bs *b, json_t *o, void *arg)
{
    static const char *const actions[] = {"route", "redirect", "direct_response", NULL};
    wp_route *r = arg;
    r->name = "";
    if (!bs_fields(
            b, o,
            "name match route redirect direct_response request_body_buffer_limit "
            "per_request_buffer_limit_bytes typed_per_filter_config metadata" HEADER_OPS_FIELDS) ||
        !bs_str(b, o, "name", &r->name) || !bs_buffer_limits(b, o, &r->limits) ||
        !bs_metadata(b, o) || !bs_per_filter_config(b, o, &r->fault))
        return false;
    if (!bs_get(o, "match"))
        return bs_fail_at(b, "match", "missing required field");
    if (count_present(o, actions) != 1)
        return bs_fail(b, "exactly one of route, redirect, direct_response is required");
    return bs_sub(b, o, "match", dec_match, r) && bs_sub(b, o, "route", dec_route_action, r) &&
           bs_sub(b, o, "redirect", dec_redirect, r) &&
           bs_sub(b, o, "direct_response", dec_direct, r) &&
           dec_req_resp_ops(b, o, &r->req, &r->resp);
}

/* ---------- virtual hosts and the route configuration ---------- */

/* require_tls (VirtualHost.TlsRequirementType): NONE, or ALL (every request that did not
 * come over https gets a 301 to https://<host><path>); EXTERNAL_ONLY needs the internal
 * address configuration and is refused as not supported. */
static bool dec_require_tls(bs *b, json_t *o, wp_vhost *v)
{
    static const char *const kinds[] = {"NONE", "EXTERNAL_ONLY", "ALL", NULL};
    int k = 0;
    if (!bs_enum(b, o, "require_tls", kinds, &k))
        return false;
    if (k == 1)
        return bs_fail_at(b, "require_tls", "EXTERNAL_ONLY is not supported by weft-proxy");
    v->require_tls_all = k == 2;
    if (v->require_tls_all) {
        v->tls_redirect = (wp_route){.name = "", .action = WP_ACT_REDIRECT, .cluster = -1};
        v->tls_redirect.redirect =
            (wp_redirect){.scheme = "https", .code = 301, .ssl_redirect = true};
    }
    return true;
}

static bool dec_vhost(bs *b, json_t *o, void *arg)
{
    wp_vhost *v = arg;
    json_t *d = bs_get(o, "domains");
    void *arr = NULL;
    if (!bs_fields(b, o,
                   "name domains routes require_tls retry_policy include_request_attempt_count "
                   "include_attempt_count_in_response request_body_buffer_limit "
                   "per_request_buffer_limit_bytes typed_per_filter_config" HEADER_OPS_FIELDS) ||
        !bs_req_str(b, o, "name", &v->name) || !bs_retry_policy(b, o, &v->retry) ||
        !bs_bool(b, o, "include_request_attempt_count", &v->include_request_attempt_count) ||
        !bs_bool(b, o, "include_attempt_count_in_response",
                 &v->include_attempt_count_in_response) ||
        !bs_buffer_limits(b, o, &v->limits) || !bs_per_filter_config(b, o, &v->fault) ||
        !dec_require_tls(b, o, v))
        return false;
    if (!json_is_array(d) || json_array_size(d) == 0)
        return bs_fail_at(b, "domains",
                          d ? "value must contain at least 1 item(s)" : "missing required field");
    v->domains = bs_alloc(b, sizeof(char *) * json_array_size(d));
    size_t m = bs_push(b, "domains");
    for (size_t i = 0; v->domains && i < json_array_size(d) && !b->failed; i++) {
        json_t *s = json_array_get(d, i);
        size_t mi = bs_push_i(b, i);
        if (!json_is_string(s) || !*json_string_value(s))
            bs_fail(b, "wrong type: expected a non-empty string");
        else
            v->domains[v->ndomains++] = lower_dup(b, json_string_value(s));
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    if (b->failed || !bs_each(b, o, "routes", sizeof(wp_route), &arr, &v->nroutes, dec_route))
        return false;
    v->routes = arr;
    for (size_t i = 0; i < v->nroutes; i++) { /* a route's own policy replaces the vhost's */
        wp_route *r = &v->routes[i];
        if (!r->retry)
            r->retry = v->retry;
        if (!r->limits.has_request_body_buffer_limit && !r->limits.has_per_request_buffer_limit)
            r->limits = v->limits;
    }
    return dec_req_resp_ops(b, o, &v->req, &v->resp);
}

/* Envoy rejects a domain that appears twice in one route configuration. */
static bool check_domains(bs *b, const wp_route_config *rc)
{
    for (size_t i = 0; i < rc->nvhosts; i++) {
        for (size_t j = 0; j < rc->vhosts[i].ndomains; j++) {
            const char *dom = rc->vhosts[i].domains[j];
            for (size_t k = 0; k <= i; k++) {
                size_t end = k == i ? j : rc->vhosts[k].ndomains;
                for (size_t l = 0; l < end; l++) {
                    if (strcmp(rc->vhosts[k].domains[l], dom) != 0)
                        continue;
                    bs_push(b, "virtual_hosts");
                    bs_push_i(b, i);
                    bs_push(b, "domains");
                    bs_push_i(b, j);
                    return bs_fail(b,
                                   "Only unique values for domains are permitted. Duplicate "
                                   "entry of domain %s in route %s",
                                   dom, rc->name);
                }
            }
        }
    }
    return true;
}

bool bs_route_config(bs *b, json_t *o, wp_route_config *rc)
{
    void *arr = NULL;
    bool validate = false;
    rc->name = "";
    if (!bs_fields(b, o,
                   "@type name virtual_hosts ignore_port_in_host_matching "
                   "validate_clusters" HEADER_OPS_FIELDS) ||
        !bs_opt_type(b, o, "type.googleapis.com/envoy.config.route.v3.RouteConfiguration") ||
        !bs_str(b, o, "name", &rc->name) ||
        !bs_bool(b, o, "ignore_port_in_host_matching", &rc->ignore_port_in_host_matching) ||
        !bs_bool(b, o, "validate_clusters", &validate))
        return false;
    b->validate_clusters = validate;
    if (!bs_each(b, o, "virtual_hosts", sizeof(wp_vhost), &arr, &rc->nvhosts, dec_vhost))
        return false;
    rc->vhosts = arr;
    size_t m = b->plen;
    bool ok = check_domains(b, rc);
    bs_pop(b, m);
    return ok && dec_req_resp_ops(b, o, &rc->req, &rc->resp);
}
