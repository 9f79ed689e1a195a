/*
 * bootstrap_listener.c - static_resources.listeners[] of the bootstrap (and of listeners
 * received over LDS, which xds_compose.h composes into one): envoy.config.listener.v3.Listener
 *   {name, address, per_connection_buffer_limit_bytes, traffic_direction, listener_filters,
 *    filter_chains[] {name, filter_chain_match, filters[1]}, default_filter_chain}
 * with envoy.filters.network.http_connection_manager (bootstrap_hcm.c) or
 * envoy.filters.network.tcp_proxy (bootstrap_tcp_proxy.c) as the last (terminal) network filter
 * of a chain, after any number of envoy.filters.network.rbac (bootstrap_rbac.c; at most
 * WP_NF_MAX filters in all).
 *
 * Envoy behaviour followed (source/common/listener_manager/listener_impl.cc and
 * filter_chain_manager_impl.cc):
 *  - filter_chain_match: destination_port, prefix_ranges, direct_source_prefix_ranges,
 *    source_type, source_prefix_ranges, source_ports, server_names (lower-cased; "*.b.c"
 *    wildcards only: "partial wildcards are not supported"), transport_protocol,
 *    application_protocols; equal matchers fail with "error adding listener 'ADDR': filter
 *    chain 'B' has the same matching rules defined as 'A'. duplicate matcher is: JSON",
 *    overlapping ones with "error adding listener 'ADDR': multiple filter chains with
 *    overlapping matching rules are defined";
 *  - a listener with neither filter_chains nor default_filter_chain: "error adding listener
 *    'ADDR': no filter chains specified".
 *  - listener_filters: envoy.filters.listener.tls_inspector (filters/listener/tls_inspector.h),
 *    envoy.filters.listener.http_inspector (filters/listener/http_inspector.h; its HttpInspector
 *    config has no fields), envoy.filters.listener.original_dst, each with an optional
 *    filter_disabled predicate (net/listener_filter.h wp_lf_pred: or_match, and_match,
 *    not_match, any_match, destination_port_range; Istio's virtualInbound disables its
 *    inspectors per port), listener_filters_timeout (default 15 s, 0 none) and
 *    continue_on_listener_filters_timeout.
 *  - transport_socket: raw_buffer or TLS with a DownstreamTlsContext (bootstrap_tls.c).
 * Refused by name: the other listener filters (the message names the feature that brings
 * each), network filters other than RBAC and the connection manager,
 * a non-empty filter_chain_match in the default_filter_chain (Envoy ignores it; weft never
 * ignores a field; Istio's PassthroughFilterChain carries an empty one, accepted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/network/metadata_exchange.h"
#include "proxy/filters/listener/http_inspector.h"
#include "proxy/filters/listener/original_dst.h"
#include "proxy/filters/listener/tls_inspector.h"

#define HCM_NAME         "envoy.filters.network.http_connection_manager"
#define RBAC_NAME        "envoy.filters.network.rbac"
#define TCP_PROXY_NAME   "envoy.filters.network.tcp_proxy"
#define ISTIO_STATS_NAME "istio.stats"
#define WP_LISTENER_TYPE "type.googleapis.com/envoy.config.listener.v3.Listener"

/* ---------- filter_chain_match ---------- */

/* A CidrRange {address_prefix, prefix_len} (bs_each callback). */
static bool dec_cidr(bs *b, json_t *o, void *arg)
{
    wp_cidr *c = arg;
    const char *ip = NULL;
    uint32_t len = 0;
    if (!bs_fields(b, o, "address_prefix prefix_len") || !bs_req_str(b, o, "address_prefix", &ip) ||
        !bs_u32(b, o, "prefix_len", &len))
        return false;
    if (wp_cidr_parse(ip, 0, c) != 0)
        return bs_fail(b, "malformed IP address: %s", ip);
    if (wp_cidr_parse(ip, len, c) != 0)
        return bs_fail(b, "invalid prefix_len %u for %s", len, ip);
    return true;
}

static bool dec_cidrs(bs *b, json_t *o, const char *k, const wp_cidr **out, size_t *n)
{
    void *arr = NULL;
    if (!bs_each(b, o, k, sizeof(wp_cidr), &arr, n, dec_cidr))
        return false;
    *out = arr;
    return true;
}

/* An array of non-empty strings o[k] (lower-cased when lower). */
static bool dec_strs(bs *b, json_t *o, const char *k, bool lower, const char *const **out,
                     size_t *n)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, k, "an array of strings");
    const char **arr = bs_alloc(b, sizeof(char *) * (json_array_size(v) + 1));
    if (!arr)
        return false;
    size_t m = bs_push(b, k);
    for (size_t i = 0; i < json_array_size(v) && !b->failed; i++) {
        json_t *s = json_array_get(v, i);
        size_t mi = bs_push_i(b, i);
        if (!json_is_string(s) || !*json_string_value(s)) {
            bs_fail(b, "wrong type: expected a non-empty string");
        } else if ((arr[i] = bs_strdup(b, json_string_value(s))) && lower) {
            for (char *p = (char *)arr[i]; *p; p++)
                *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        }
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    *out = arr;
    *n = json_array_size(v);
    return !b->failed;
}

static bool dec_ports(bs *b, json_t *o, wp_fcm *m)
{
    json_t *v = bs_get(o, "source_ports");
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, "source_ports", "an array of ports");
    uint32_t *p = bs_alloc(b, sizeof(uint32_t) * (json_array_size(v) + 1));
    if (!p)
        return false;
    size_t mk = bs_push(b, "source_ports");
    for (size_t i = 0; i < json_array_size(v) && !b->failed; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > 65535) {
            bs_push_i(b, i);
            bs_fail(b, "value must be inside range [1, 65535]");
        }
        p[i] = (uint32_t)json_integer_value(e);
    }
    bs_pop(b, mk);
    m->source_ports = p;
    m->nsource_ports = json_array_size(v);
    return !b->failed;
}

static bool dec_match(bs *b, json_t *o, void *arg)
{
    static const char *const types[] = {"ANY", "SAME_IP_OR_LOOPBACK", "EXTERNAL", NULL};
    wp_fcm *m = arg;
    int st = 0;
    if (!bs_fields(b, o,
                   "destination_port prefix_ranges direct_source_prefix_ranges source_type "
                   "source_prefix_ranges source_ports server_names transport_protocol "
                   "application_protocols") ||
        !bs_u32(b, o, "destination_port", &m->destination_port) ||
        !dec_cidrs(b, o, "prefix_ranges", &m->prefix_ranges, &m->nprefix_ranges) ||
        !dec_cidrs(b, o, "direct_source_prefix_ranges", &m->direct_source_prefix_ranges,
                   &m->ndirect_source_prefix_ranges) ||
        !bs_enum(b, o, "source_type", types, &st) ||
        !dec_cidrs(b, o, "source_prefix_ranges", &m->source_prefix_ranges,
                   &m->nsource_prefix_ranges) ||
        !dec_ports(b, o, m) ||
        !dec_strs(b, o, "server_names", true, &m->server_names, &m->nserver_names) ||
        !bs_str(b, o, "transport_protocol", &m->transport_protocol) ||
        !dec_strs(b, o, "application_protocols", false, &m->application_protocols,
                  &m->napplication_protocols))
        return false;
    m->source_type = (wp_fcm_source_type)st;
    if (bs_get(o, "destination_port") && (m->destination_port < 1 || m->destination_port > 65535))
        return bs_fail_at(b, "destination_port", "value must be inside range [1, 65535]");
    for (size_t i = 0; i < m->nserver_names; i++)
        if (!wp_fcm_server_name_ok(m->server_names[i]))
            return bs_fail_at(b, "server_names",
                              "partial wildcards are not supported in \"server_names\"");
    return true;
}

/* ---------- filter chains ---------- */

/* The terminal filter: the HTTP connection manager. */
static bool dec_hcm_filter(bs *b, json_t *f, wp_filter_chain *fc, wp_nf_config *out)
{
    json_t *tc = bs_get(f, "typed_config");
    if (!tc)
        return bs_fail_at(b, "typed_config", "missing required field");
    fc->hcm = bs_alloc(b, sizeof(*fc->hcm));
    if (!fc->hcm)
        return false;
    *out = (wp_nf_config){HCM_NAME, WP_NF_HTTP_CONNECTION_MANAGER, fc->hcm};
    size_t m = bs_push(b, "typed_config");
    bool ok =
        json_is_object(tc) ? bs_hcm(b, tc, fc->hcm) : bs_fail(b, "wrong type: expected an object");
    bs_pop(b, m);
    return ok;
}

/* The terminal filter: the TCP proxy. */
static bool dec_tcp_proxy_filter(bs *b, json_t *f, wp_filter_chain *fc, wp_nf_config *out)
{
    json_t *tc = bs_get(f, "typed_config");
    if (!tc)
        return bs_fail_at(b, "typed_config", "missing required field");
    fc->tcp = bs_alloc(b, sizeof(*fc->tcp));
    if (!fc->tcp)
        return false;
    *out = (wp_nf_config){TCP_PROXY_NAME, WP_NF_TCP_PROXY, fc->tcp};
    size_t m = bs_push(b, "typed_config");
    bool ok = json_is_object(tc) ? bs_tcp_proxy(b, tc, fc->tcp)
                                 : bs_fail(b, "wrong type: expected an object");
    bs_pop(b, m);
    return ok;
}

/* One element of filters: envoy.filters.network.rbac before the terminal filter (last):
 * envoy.filters.network.http_connection_manager or envoy.filters.network.tcp_proxy. */
static bool dec_network_filter(bs *b, json_t *f, wp_filter_chain *fc, bool last, wp_nf_config *out)
{
    const char *name = NULL;
    if (!bs_fields(b, f, "name typed_config") || !bs_req_str(b, f, "name", &name))
        return false;
    if (strcmp(name, RBAC_NAME) == 0) {
        if (last)
            return bs_fail_at(b, "name",
                              "the last network filter of a chain must be a terminal filter "
                              "(" HCM_NAME " or " TCP_PROXY_NAME ")");
        struct wp_rbac_config *rc = NULL;
        *out = (wp_nf_config){RBAC_NAME, WP_NF_RBAC, NULL};
        bool ok = bs_rbac_network_filter(b, bs_get(f, "typed_config"), &rc);
        out->config = rc;
        return ok;
    }
    if (strcmp(name, ISTIO_STATS_NAME) == 0) {
        if (last || !b->tcp_chain)
            return bs_fail_at(b, "name",
                              "the istio.stats network filter goes before " TCP_PROXY_NAME
                              " (the TCP metrics); an HTTP chain has it in http_filters");
        struct wp_istio_stats_filter *sf = NULL;
        *out = (wp_nf_config){ISTIO_STATS_NAME, WP_NF_ISTIO_STATS, NULL};
        bool ok = bs_istio_network_stats(b, bs_get(f, "typed_config"), &sf);
        out->config = sf;
        return ok;
    }
    if (strcmp(name, WP_TCP_MX_NAME) == 0 || strcmp(name, WP_TCP_MX_NAME_LEGACY) == 0) {
        if (last || !b->tcp_chain)
            return bs_fail_at(
                b, "name",
                "the istio.metadata_exchange network filter goes before " TCP_PROXY_NAME
                " (TCP peer metadata); an HTTP chain has it in http_filters");
        const struct wp_tcp_mx_config *mc = NULL;
        *out = (wp_nf_config){WP_TCP_MX_NAME, WP_NF_METADATA_EXCHANGE, NULL};
        bool ok = bs_tcp_mx_config(b, bs_get(f, "typed_config"), &mc);
        out->config = mc;
        return ok;
    }
    bool tcp = strcmp(name, TCP_PROXY_NAME) == 0;
    if (!tcp && strcmp(name, HCM_NAME) != 0) {
        bs_fail_atf(b, "name", "unsupported network filter \"%s\" (supported: %s, %s, %s, %s, %s)",
                    name, RBAC_NAME, WP_TCP_MX_NAME, ISTIO_STATS_NAME, HCM_NAME, TCP_PROXY_NAME);
        return false;
    }
    if (!last) {
        bs_fail_atf(b, "name",
                    "Error: terminal filter named %s of type %s must be the last filter in a "
                    "network filter chain.",
                    name, name);
        return false;
    }
    return tcp ? dec_tcp_proxy_filter(b, f, fc, out) : dec_hcm_filter(b, f, fc, out);
}

/* filters: [envoy.filters.network.rbac...,] envoy.filters.network.http_connection_manager. */
static bool dec_network_filters(bs *b, json_t *o, wp_filter_chain *fc)
{
    json_t *v = bs_get(o, "filters");
    if (v && !json_is_array(v))
        return bs_wrong_type(b, "filters", "an array");
    size_t n = json_array_size(v);
    if (n == 0)
        return bs_fail_at(b, "filters",
                          "the chain needs a terminal network filter (" HCM_NAME
                          " or " TCP_PROXY_NAME ")");
    if (n > WP_NF_MAX)
        return bs_fail_atf(b, "filters", "too many network filters (weft-proxy takes %d)",
                           WP_NF_MAX);
    fc->filters = bs_alloc(b, sizeof(*fc->filters) * n);
    if (!fc->filters)
        return false;
    json_t *lastf = json_array_get(v, n - 1);
    const char *lastn = json_is_object(lastf) ? json_string_value(bs_get(lastf, "name")) : NULL;
    b->tcp_chain = lastn && strcmp(lastn, TCP_PROXY_NAME) == 0;
    size_t m = bs_push(b, "filters");
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        size_t mi = bs_push_i(b, i);
        json_t *f = json_array_get(v, i);
        ok = json_is_object(f) ? dec_network_filter(b, f, fc, i + 1 == n, &fc->filters[i])
                               : bs_fail(b, "wrong type: expected an object");
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    fc->nfilters = n;
    return ok;
}

static bool dec_chain_common(bs *b, json_t *o, wp_filter_chain *fc)
{
    fc->name = "";
    if (!bs_fields(b, o, "name filters filter_chain_match transport_socket") ||
        !bs_str(b, o, "name", &fc->name))
        return false;
    return dec_network_filters(b, o, fc) && bs_transport_socket(b, o, true, &fc->tls);
}

/* One filter_chains element (bs_each callback). */
static bool dec_filter_chain(bs *b, json_t *o, void *arg)
{
    wp_filter_chain *fc = arg;
    return bs_sub(b, o, "filter_chain_match", dec_match, &fc->match) && dec_chain_common(b, o, fc);
}

static bool dec_default_chain(bs *b, json_t *o, void *arg)
{
    wp_listener *l = arg;
    json_t *fcm = bs_get(o, "filter_chain_match");
    if (fcm && !(json_is_object(fcm) && json_object_size(fcm) == 0))
        return bs_fail_at(b, "filter_chain_match",
                          "filter_chain_match has no effect in default_filter_chain (the chain "
                          "of connections no filter chain matches)");
    l->default_chain = bs_alloc(b, sizeof(*l->default_chain));
    return l->default_chain && dec_chain_common(b, o, l->default_chain);
}

/* ---------- listener filters ---------- */

#define TLS_INSPECTOR_TYPE                                                                         \
    "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"

/* TlsInspector: max_client_hello_size (at most 16 KiB, Envoy's message), initial_read_buffer_
 * size (accepted: weft's buffer starts at 1 KiB and doubles up to the maximum, so it only
 * tunes how reads are sized), close_connection_on_client_hello_parsing_errors; the JA3/JA4
 * fingerprints are not implemented and refused when enabled. */
static bool dec_tls_inspector(bs *b, json_t *tc, wp_listener_filter *lf)
{
    wp_tls_inspector *f = bs_alloc(b, sizeof(*f));
    if (!f)
        return false;
    f->max_client_hello_size = WP_TLS_MAX_CLIENT_HELLO;
    uint32_t initial = 0;
    bool ja3 = false, ja4 = false;
    if (tc && (!bs_fields(b, tc,
                          "@type max_client_hello_size initial_read_buffer_size "
                          "close_connection_on_client_hello_parsing_errors "
                          "enable_ja3_fingerprinting enable_ja4_fingerprinting") ||
               !bs_opt_type(b, tc, TLS_INSPECTOR_TYPE) ||
               !bs_u32(b, tc, "max_client_hello_size", &f->max_client_hello_size) ||
               !bs_u32(b, tc, "initial_read_buffer_size", &initial) ||
               !bs_bool(b, tc, "close_connection_on_client_hello_parsing_errors",
                        &f->close_on_parse_error) ||
               !bs_bool(b, tc, "enable_ja3_fingerprinting", &ja3) ||
               !bs_bool(b, tc, "enable_ja4_fingerprinting", &ja4)))
        return false;
    if (f->max_client_hello_size > WP_TLS_MAX_CLIENT_HELLO)
        return bs_fail_atf(b, "max_client_hello_size",
                           "max_client_hello_size of %u is greater than maximum of %u.",
                           f->max_client_hello_size, WP_TLS_MAX_CLIENT_HELLO);
    if (ja3 || ja4)
        return bs_fail_at(b, ja3 ? "enable_ja3_fingerprinting" : "enable_ja4_fingerprinting",
                          "TLS fingerprinting (JA3/JA4) is not supported by weft-proxy");
    lf->ops = &wp_tls_inspector_ops;
    lf->config = f;
    return true;
}

/* HttpInspector: an empty message. */
static bool dec_http_inspector(bs *b, json_t *tc, wp_listener_filter *lf)
{
    wp_http_inspector *f = bs_alloc(b, sizeof(*f));
    if (!f)
        return false;
    if (tc && (!bs_fields(b, tc, "@type") || !bs_opt_type(b, tc, WP_HTTP_INSPECTOR_TYPE)))
        return false;
    lf->ops = &wp_http_inspector_ops;
    lf->config = f;
    return true;
}

/* OriginalDst: an empty message. */
static bool dec_original_dst(bs *b, json_t *tc, wp_listener_filter *lf)
{
    if (tc && (!bs_fields(b, tc, "@type") || !bs_opt_type(b, tc, WP_ORIGINAL_DST_TYPE)))
        return false;
    lf->ops = &wp_original_dst_ops;
    lf->config = NULL;
    return true;
}

/* ListenerFilterChainMatchPredicate (listener_filter.h): exactly one rule; a MatchSet has at
 * least two rules; any_match must be true (Envoy's proto validation). */
static bool dec_pred(bs *b, json_t *o, wp_lf_pred *p);

static bool dec_match_set(bs *b, json_t *o, const char *k, wp_lf_pred *p)
{
    json_t *set = bs_get(o, k);
    if (!json_is_object(set))
        return bs_wrong_type(b, k, "an object");
    size_t m = bs_push(b, k);
    json_t *rules = bs_get(set, "rules");
    size_t n = json_array_size(rules);
    bool ok = bs_fields(b, set, "rules");
    if (ok && (!json_is_array(rules) || n < 2))
        ok = bs_fail_at(b, "rules", "value must contain at least 2 item(s)");
    wp_lf_pred *kids = ok ? bs_alloc(b, n * sizeof(*kids)) : NULL;
    ok = ok && kids;
    size_t mr = bs_push(b, "rules");
    for (size_t i = 0; ok && i < n; i++) {
        size_t mi = bs_push_i(b, i);
        json_t *e = json_array_get(rules, i);
        ok = json_is_object(e) ? dec_pred(b, e, &kids[i])
                               : bs_fail(b, "wrong type: expected an object");
        bs_pop(b, mi);
    }
    bs_pop(b, mr);
    bs_pop(b, m);
    p->kind = k[0] == 'o' ? WP_LF_PRED_OR : WP_LF_PRED_AND;
    p->kids = kids;
    p->nkids = n;
    return ok;
}

static bool dec_pred(bs *b, json_t *o, wp_lf_pred *p)
{
    static const char *const rules[] = {"or_match", "and_match", "not_match", "any_match",
                                        "destination_port_range"};
    const char *rule = NULL;
    int n = 0;
    if (!bs_fields(b, o, "or_match and_match not_match any_match destination_port_range"))
        return false;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (bs_get(o, rules[i])) {
            rule = rules[i];
            n++;
        }
    if (n != 1)
        return bs_fail(b, "exactly one rule of or_match, and_match, not_match, any_match, "
                          "destination_port_range is required");
    if (!strcmp(rule, "or_match") || !strcmp(rule, "and_match"))
        return dec_match_set(b, o, rule, p);
    if (!strcmp(rule, "any_match")) {
        bool any = false;
        if (!bs_bool(b, o, rule, &any))
            return false;
        if (!any)
            return bs_fail_at(b, rule, "value must equal true");
        p->kind = WP_LF_PRED_ANY;
        return true;
    }
    json_t *v = bs_get(o, rule);
    if (!json_is_object(v))
        return bs_wrong_type(b, rule, "an object");
    size_t m = bs_push(b, rule);
    bool ok;
    if (!strcmp(rule, "not_match")) {
        wp_lf_pred *kid = bs_alloc(b, sizeof(*kid));
        ok = kid && dec_pred(b, v, kid);
        p->kind = WP_LF_PRED_NOT;
        p->kids = kid;
        p->nkids = 1;
    } else { /* type.v3.Int32Range [start, end) */
        json_t *st = bs_get(v, "start"), *en = bs_get(v, "end");
        ok = bs_fields(b, v, "start end");
        if (ok && ((st && !json_is_integer(st)) || (en && !json_is_integer(en))))
            ok = bs_fail(b, "wrong type: start and end must be integers");
        json_int_t lo = st ? json_integer_value(st) : 0, hi = en ? json_integer_value(en) : 0;
        if (ok && (lo < INT32_MIN || lo > INT32_MAX || hi < INT32_MIN || hi > INT32_MAX))
            ok = bs_fail(b, "start and end must be 32-bit integers");
        p->kind = WP_LF_PRED_PORT_RANGE;
        p->start = (int32_t)(ok ? lo : 0);
        p->end = (int32_t)(ok ? hi : 0);
    }
    bs_pop(b, m);
    return ok;
}

/* listener_filters: tls_inspector, http_inspector, original_dst; the others are refused with
 * the feature that brings them. */
static bool dec_listener_filter(bs *b, json_t *o, void *arg)
{
    static const struct {
        const char *name, *feature;
    } known[] = {
        {"envoy.filters.listener.proxy_protocol", "the PROXY protocol"},
    };
    wp_listener_filter *lf = arg;
    const char *name = NULL;
    if (!bs_fields(b, o, "name typed_config filter_disabled") || !bs_req_str(b, o, "name", &name))
        return false;
    json_t *fd = bs_get(o, "filter_disabled");
    if (fd) {
        if (!json_is_object(fd))
            return bs_wrong_type(b, "filter_disabled", "an object");
        wp_lf_pred *p = bs_alloc(b, sizeof(*p));
        size_t m = bs_push(b, "filter_disabled");
        bool ok = p && dec_pred(b, fd, p);
        bs_pop(b, m);
        if (!ok)
            return false;
        lf->disabled = p;
    }
    json_t *tc = bs_get(o, "typed_config");
    const char *type = json_is_object(tc) ? json_string_value(json_object_get(tc, "@type")) : NULL;
    if (strcmp(name, WP_TLS_INSPECTOR_NAME) == 0 || strcmp(name, "tls_inspector") == 0 ||
        (type && strcmp(type, TLS_INSPECTOR_TYPE) == 0)) {
        size_t m = bs_push(b, "typed_config");
        bool ok = dec_tls_inspector(b, tc, lf);
        bs_pop(b, m);
        return ok;
    }
    if (strcmp(name, WP_HTTP_INSPECTOR_NAME) == 0 || strcmp(name, "http_inspector") == 0 ||
        (type && strcmp(type, WP_HTTP_INSPECTOR_TYPE) == 0)) {
        size_t m = bs_push(b, "typed_config");
        bool ok = dec_http_inspector(b, tc, lf);
        bs_pop(b, m);
        return ok;
    }
    if (strcmp(name, WP_ORIGINAL_DST_NAME) == 0 || strcmp(name, "original_dst") == 0 ||
        (type && strcmp(type, WP_ORIGINAL_DST_TYPE) == 0)) {
        size_t m = bs_push(b, "typed_config");
        bool ok = dec_original_dst(b, tc, lf);
        bs_pop(b, m);
        return ok;
    }
    size_t m = bs_push(b, "name");
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(name, known[i].name) == 0) {
            bs_fail(b, "listener filter \"%s\" is not supported yet: it comes with %s", name,
                    known[i].feature);
            bs_pop(b, m);
            return false;
        }
    }
    bs_fail(b,
            "unsupported listener filter \"%s\" (weft-proxy implements "
            "envoy.filters.listener.tls_inspector, envoy.filters.listener.http_inspector and "
            "envoy.filters.listener.original_dst)",
            name);
    bs_pop(b, m);
    return false;
}

/* ---------- the listener ---------- */

/* Envoy's duplicate and overlap checks over the listener's chains. */
static bool check_chains(bs *b, json_t *o, wp_listener *l)
{
    const wp_fcm **fcms = bs_alloc(b, sizeof(*fcms) * (l->nchains + 1));
    if (!fcms)
        return false;
    for (size_t i = 0; i < l->nchains; i++)
        fcms[i] = &l->chains[i].match;
    l->fcms = fcms;
    size_t first = 0, second = 0;
    int r = wp_fcm_check(fcms, l->nchains, &first, &second);
    if (r == WP_FCM_OK)
        return true;
    size_t m = bs_push(b, "filter_chains");
    bs_push_i(b, second);
    if (r == WP_FCM_OVERLAP) {
        bs_fail(b,
                "error adding listener '%s': multiple filter chains with overlapping matching "
                "rules are defined",
                l->addr.text);
    } else {
        json_t *mj =
            bs_get(json_array_get(bs_get(o, "filter_chains"), second), "filter_chain_match");
        char *js = mj ? json_dumps(mj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        bs_fail(b,
                "error adding listener '%s': filter chain '%s' has the same matching rules "
                "defined as '%s'. duplicate matcher is: %s",
                l->addr.text, l->chains[second].name, l->chains[first].name, js ? js : "{}");
        free(js);
    }
    bs_pop(b, m);
    return false;
}

/* use_original_dst, bind_to_port (BoolValue, default true) and transparent (only false:
 * TPROXY is not supported, Istio sets it for TPROXY interception only). use_original_dst
 * appends the original_dst listener filter unless one is configured (Envoy's
 * ListenerImpl::buildOriginalDstListenerFilter). *lf: the decoded listener filters (grown). */
static bool dec_capture(bs *b, json_t *o, wp_listener *l, void **lf)
{
    bool transparent = false;
    l->bind_to_port = true;
    if (!bs_bool(b, o, "use_original_dst", &l->use_original_dst) ||
        !bs_bool(b, o, "bind_to_port", &l->bind_to_port) ||
        !bs_bool(b, o, "transparent", &transparent))
        return false;
    if (transparent)
        return bs_fail_at(b, "transparent",
                          "transparent listeners (TPROXY interception) are not supported by "
                          "weft-proxy; use REDIRECT");
    if (!l->use_original_dst)
        return true;
    wp_listener_filter *v = *lf;
    for (size_t i = 0; i < l->nlistener_filters; i++)
        if (v[i].ops == &wp_original_dst_ops)
            return true;
    wp_listener_filter *nv = bs_alloc(b, sizeof(*nv) * (l->nlistener_filters + 1));
    if (!nv)
        return false;
    if (l->nlistener_filters)
        memcpy(nv, v, sizeof(*nv) * l->nlistener_filters);
    nv[l->nlistener_filters++] = (wp_listener_filter){&wp_original_dst_ops, NULL, NULL};
    *lf = nv;
    return true;
}

bool bs_dec_listener(bs *b, json_t *o, void *arg)
{
    static const char *const directions[] = {"UNSPECIFIED", "INBOUND", "OUTBOUND", NULL};
    wp_listener *l = arg;
    l->per_connection_buffer_limit_bytes = WP_DEFAULT_BUFFER_LIMIT;
    if (!bs_fields(b, o,
                   "@type name address per_connection_buffer_limit_bytes filter_chains "
                   "default_filter_chain listener_filters traffic_direction "
                   "listener_filters_timeout continue_on_listener_filters_timeout access_log "
                   "use_original_dst bind_to_port transparent") ||
        !bs_opt_type(b, o, WP_LISTENER_TYPE) ||
        !bs_enum(b, o, "traffic_direction", directions, &l->traffic_direction) ||
        !bs_str(b, o, "name", &l->name) ||
        !bs_req_address(b, o, &l->addr, NULL, NULL, "malformed IP address: %s") ||
        !bs_u32(b, o, "per_connection_buffer_limit_bytes", &l->per_connection_buffer_limit_bytes))
        return false;
    char *stat = wf_arena_strdup(b->a, l->addr.text);
    if (!stat)
        return bs_fail(b, "out of memory");
    for (char *p = stat; *p; p++)
        *p = *p == ':' ? '_' : *p;
    l->stat_name = stat;
    if (!l->name)
        l->name = stat;
    b->direction = l->traffic_direction; /* Istio's stats reporter follows it */
    void *lf = NULL, *chains = NULL;
    l->listener_filters_timeout_ms = 15000; /* Envoy's default */
    if (!bs_dur(b, o, "listener_filters_timeout", &l->listener_filters_timeout_ms, NULL) ||
        !bs_bool(b, o, "continue_on_listener_filters_timeout",
                 &l->continue_on_listener_filters_timeout) ||
        !bs_each(b, o, "listener_filters", sizeof(wp_listener_filter), &lf, &l->nlistener_filters,
                 dec_listener_filter) ||
        !bs_each(b, o, "filter_chains", sizeof(wp_filter_chain), &chains, &l->nchains,
                 dec_filter_chain) ||
        !bs_sub(b, o, "default_filter_chain", dec_default_chain, l))
        return false;
    void *logs = NULL;
    if (!bs_each(b, o, "access_log", sizeof(wp_access_log), &logs, &l->naccess_logs, bs_access_log))
        return false;
    if (!dec_capture(b, o, l, &lf))
        return false;
    l->access_logs = logs;
    l->chains = chains;
    l->listener_filters = lf;
    for (size_t i = 0; i < l->nchains; i++)
        l->has_tls = l->has_tls || l->chains[i].tls;
    l->has_tls = l->has_tls || (l->default_chain && l->default_chain->tls);
    if (l->nchains == 0 && !l->default_chain)
        return bs_fail(b, "error adding listener '%s': no filter chains specified", l->addr.text);
    return check_chains(b, o, l);
}

/* c->hcms and c->tcps: every chain's connection manager or TCP proxy in order, each knowing its
 * position. */
static bool index_hcms(bs *b)
{
    wp_config *c = b->c;
    size_t n = 0;
    for (size_t i = 0; i < c->nlisteners; i++)
        n += c->listeners[i].nchains + (c->listeners[i].default_chain != NULL);
    c->hcms = bs_alloc(b, sizeof(*c->hcms) * (n + 1));
    c->tcps = bs_alloc(b, sizeof(*c->tcps) * (n + 1));
    if (!c->hcms || !c->tcps)
        return false;
    for (size_t i = 0; i < c->nlisteners; i++) {
        wp_listener *l = &c->listeners[i];
        for (size_t k = 0; k <= l->nchains; k++) {
            wp_filter_chain *fc = k < l->nchains ? &l->chains[k] : l->default_chain;
            if (!fc)
                continue;
            if (fc->tcp) {
                fc->tcp->index = c->ntcps;
                c->tcps[c->ntcps++] = fc->tcp;
                continue;
            }
            fc->hcm->index = c->nhcms;
            c->hcms[c->nhcms++] = fc->hcm;
        }
    }
    return true;
}

bool bs_check_listeners(bs *b)
{
    wp_config *c = b->c;
    for (size_t i = 0; i < c->nlisteners; i++) {
        for (size_t j = 0; j < i; j++) {
            const char *msg = NULL;
            if (strcmp(c->listeners[i].name, c->listeners[j].name) == 0)
                msg = "duplicate listener name";
            else if (strcmp(c->listeners[i].addr.text, c->listeners[j].addr.text) == 0)
                msg = "has duplicate address";
            if (!msg)
                continue;
            bs_push(b, "listeners");
            bs_push_i(b, i);
            if (msg[0] == 'd')
                return bs_fail(b, "duplicate listener name '%s'", c->listeners[i].name);
            return bs_fail(b,
                           "error adding listener: '%s' has duplicate address '%s' as existing "
                           "listener",
                           c->listeners[i].name, c->listeners[i].addr.text);
        }
    }
    return index_hcms(b);
}
