/*
 * bootstrap.c - decode an Envoy v3 bootstrap (JSON) into a wp_config snapshot.
 *
 * Supported subset (Envoy v3 field names; anything else is an error naming its JSON path):
 *   node {id, cluster, metadata, locality, user_agent_name, user_agent_version}
 *   admin {address, access_log_path, access_log[] (file/stdout/stderr), profile_path}
 *   static_resources.listeners[] (bootstrap_listener.c: filter chains with
 *     filter_chain_match, default_filter_chain; envoy.filters.network.http_connection_manager
 *     decoded here)
 *   static_resources.clusters[] (STATIC, STRICT_DNS, LOGICAL_DNS, ORIGINAL_DST;
 *     bootstrap_cluster.c)
 *   stats_config {stats_tags, use_all_default_tags, stats_matcher, histogram_bucket_settings}
 *     (checked, kept as JSON for the stats store);
 *   dynamic_resources {ads_config, cds_config, lds_config} (bootstrap_dynamic.c);
 *   layered_runtime, cluster_manager, overload_manager only as empty objects.
 * What xDS resources carry (weft-pilot's and Istio's output, composed into a bootstrap by
 * xds_compose.h) is accepted where it is harmless: "@type" naming the right type on a
 * Listener, Cluster, RouteConfiguration or ClusterLoadAssignment; envoy.filters.http.cors
 * without a policy (a no-op in Envoy without route/vhost cors policies); HCM normalize_path,
 * merge_slashes and path_with_escaped_slashes_action (applied: http/path_norm.h);
 * ORIGINAL_DST / CLUSTER_PROVIDED (kept without endpoints, config.h original_dst);
 * circuit-breaker track_remaining; use_downstream_protocol_config with empty options;
 * endpoint metadata and health_check_config, locality load_balancing_weight, the assignment's
 * policy.overprovisioning_factor (ignored: one priority, no locality weighting); a `pipe`
 * endpoint in the ADS cluster only.
 * Route configurations are decoded in the second half of this file.
 *
 * Choices where Envoy leaves room ([verify] in the behaviour reference):
 *   - a listener without a name is named after its address in stat form ("0.0.0.0_15001");
 *     Envoy would assign a UUID.
 *   - listener stat names replace every ':' of the printed address with '_', so IPv6 gives
 *     "[__]_80" (Envoy's listener.[__]_80. prefix).
 *   - an unknown route cluster is not an error (503 NC at request time) unless the route
 *     configuration sets validate_clusters: true explicitly (Envoy defaults it to true for
 *     inline route configs; weft follows the project brief and defaults to false).
 *   - durations are truncated to whole milliseconds (DurationUtil::durationToMilliseconds).
 */
#include "proxy/bootstrap.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "core/strmap.h"
#include "proxy/alog_sink.h"
#include "proxy/bootstrap_internal.h"
#include "proxy/fault.h"
#include "proxy/filters/http/filters.h"
#include "proxy/istio_stats.h"
#include "proxy/stats.h"

#define HCM_TYPE                                                                                   \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define ROUTER_NAME WP_ROUTER_FILTER_NAME
#define ROUTER_TYPE "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
#define CORS_NAME   "envoy.filters.http.cors"
#define CORS_TYPE   "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"
/* ---------- path and errors ---------- */

size_t bs_push(bs *b, const char *key)
{
    size_t mark = b->plen;
    int n = snprintf(b->path + b->plen, sizeof(b->path) - b->plen, "%s%s", b->plen ? "." : "", key);
    if (n > 0)
        b->plen = b->plen + (size_t)n < sizeof(b->path) ? b->plen + (size_t)n : sizeof(b->path) - 1;
    return mark;
}

size_t bs_push_i(bs *b, size_t i)
{
    size_t mark = b->plen;
    int n = snprintf(b->path + b->plen, sizeof(b->path) - b->plen, "[%zu]", i);
    if (n > 0)
        b->plen = b->plen + (size_t)n < sizeof(b->path) ? b->plen + (size_t)n : sizeof(b->path) - 1;
    return mark;
}

void bs_pop(bs *b, size_t mark)
{
    b->plen = mark;
    b->path[mark] = '\0';
}

bool bs_fail(bs *b, const char *fmt, ...)
{
    if (b->failed)
        return false;
    b->failed = true;
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (b->plen)
        wf_strbuf_printf(b->err, "%s: %s: %s", b->src, b->path, msg);
    else
        wf_strbuf_printf(b->err, "%s: %s", b->src, msg);
    return false;
}

bool bs_fail_at(bs *b, const char *key, const char *msg)
{
    size_t m = bs_push(b, key);
    bs_fail(b, "%s", msg);
    bs_pop(b, m);
    return false;
}

void *bs_alloc(bs *b, size_t n)
{
    void *p = wf_arena_alloc(b->a, n ? n : 1);
    if (!p)
        bs_fail(b, "out of memory");
    return p;
}

const char *bs_strdup(bs *b, const char *s)
{
    char *p = wf_arena_strdup(b->a, s);
    if (!p)
        bs_fail(b, "out of memory");
    return p;
}

/* ---------- typed field readers (absent or null = leave *out as is) ---------- */

json_t *bs_get(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_null(v) ? NULL : v;
}

static bool word_in(const char *list, const char *w)
{
    size_t n = strlen(w);
    if (n == 0)
        return false; /* strstr(p, "") never advances */
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    }
    return false;
}

static bool snake(const char *k, char *out, size_t cap, bool digits);

/* A lowerCamelCase key the normalization left as written because it has two snake_case
 * readings (see camel_ambiguous) becomes the one the object allows: renamed in o. Returns 1
 * when renamed, 0 when neither reading is allowed, -1 on failure (reported). */
static int resolve_camel(bs *b, json_t *o, const char *k, const char *allowed)
{
    char key[256];
    bool found = false;
    for (int digits = 0; digits < 2 && !found; digits++)
        found = snake(k, key, sizeof(key), digits) && word_in(allowed, key);
    if (!found)
        return 0;
    if (json_object_get(o, key))
        return bs_fail_at(b, key, "duplicate field (given in snake_case and in lowerCamelCase)"),
               -1;
    json_t *v = json_object_get(o, k);
    if (json_object_set(o, key, v) != 0 || json_object_del(o, k) != 0)
        return bs_fail(b, "out of memory"), -1;
    return 1;
}

bool bs_fields(bs *b, json_t *o, const char *allowed)
{
    if (!json_is_object(o))
        return bs_fail(b, "wrong type: expected an object");
    const char *k;
    json_t *v;
again:
    json_object_foreach(o, k, v)
    {
        if (word_in(allowed, k))
            continue;
        int r = resolve_camel(b, o, k, allowed);
        if (r < 0)
            return false;
        if (r > 0)
            goto again;                           /* o changed under the iteration */
        return bs_fail_at(b, k, "unknown field"); /* named as written */
    }
    return true;
}

bool bs_wrong_type(bs *b, const char *k, const char *what)
{
    size_t m = bs_push(b, k);
    bs_fail(b, "wrong type: expected %s", what);
    bs_pop(b, m);
    return false;
}

bool bs_str(bs *b, json_t *o, const char *k, const char **out)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    if (!json_is_string(v))
        return bs_wrong_type(b, k, "a string");
    *out = bs_strdup(b, json_string_value(v));
    return *out != NULL;
}

bool bs_req_str(bs *b, json_t *o, const char *k, const char **out)
{
    *out = NULL;
    if (!bs_str(b, o, k, out))
        return false;
    if (!*out || !**out)
        return bs_fail_at(
            b, k, *out ? "value length must be at least 1 characters" : "missing required field");
    return true;
}

bool bs_bool(bs *b, json_t *o, const char *k, bool *out)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    if (!json_is_boolean(v))
        return bs_wrong_type(b, k, "a boolean");
    *out = json_is_true(v);
    return true;
}

bool bs_u64(bs *b, json_t *o, const char *k, uint64_t max, uint64_t *out)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    uint64_t x = 0;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return bs_fail_at(b, k, "value out of range");
        x = (uint64_t)json_integer_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        unsigned long long y = strtoull(s, &end, 10);
        if (!isdigit((unsigned char)*s) || *end || errno)
            return bs_wrong_type(b, k, "an unsigned integer");
        x = y;
    } else {
        return bs_wrong_type(b, k, "an unsigned integer");
    }
    if (x > max)
        return bs_fail_at(b, k, "value out of range");
    *out = x;
    if (max <= UINT32_MAX && json_is_string(v)) /* print as Envoy does: uint32 as a number */
        json_object_set_new(o, k, json_integer((json_int_t)x));
    return true;
}

bool bs_u32(bs *b, json_t *o, const char *k, uint32_t *out)
{
    uint64_t x = *out;
    if (!bs_u64(b, o, k, UINT32_MAX, &x))
        return false;
    *out = (uint32_t)x;
    return true;
}

/* Parse "[-]S[.fffffffff]s" into seconds and nanos. */
static bool parse_duration(const char *s, int64_t *sec, int32_t *nanos)
{
    bool neg = *s == '-';
    if (neg)
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    int64_t x = 0;
    while (isdigit((unsigned char)*s)) {
        if (x > 315576000000LL)
            return false;
        x = x * 10 + (*s++ - '0');
    }
    int32_t ns = 0, digits = 0;
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s) && digits < 9) {
            ns = ns * 10 + (*s++ - '0');
            digits++;
        }
        if (!digits)
            return false;
        while (digits++ < 9)
            ns *= 10;
    }
    if (s[0] != 's' || s[1] != '\0')
        return false;
    *sec = neg ? -x : x;
    *nanos = neg ? -ns : ns;
    return true;
}

static json_t *duration_json(int64_t sec, int32_t ns)
{
    char buf[64];
    if (ns == 0)
        snprintf(buf, sizeof(buf), "%" PRId64 "s", sec);
    else if (ns % 1000000 == 0)
        snprintf(buf, sizeof(buf), "%" PRId64 ".%03ds", sec, ns / 1000000);
    else if (ns % 1000 == 0)
        snprintf(buf, sizeof(buf), "%" PRId64 ".%06ds", sec, ns / 1000);
    else
        snprintf(buf, sizeof(buf), "%" PRId64 ".%09ds", sec, ns);
    return json_string(buf);
}

bool bs_dur(bs *b, json_t *o, const char *k, uint64_t *ms, bool *present)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    int64_t sec = 0;
    int32_t ns = 0;
    if (json_is_string(v)) {
        if (!parse_duration(json_string_value(v), &sec, &ns))
            return bs_fail_at(b, k,
                              "invalid duration (expected a string like \"5s\" or "
                              "\"0.250s\")");
    } else if (json_is_object(v)) {
        size_t m = bs_push(b, k);
        uint64_t s = 0, n = 0;
        bool ok = bs_fields(b, v, "seconds nanos") &&
                  bs_u64(b, v, "seconds", 315576000000ULL, &s) &&
                  bs_u64(b, v, "nanos", 999999999, &n);
        bs_pop(b, m);
        if (!ok)
            return false;
        sec = (int64_t)s;
        ns = (int32_t)n;
    } else {
        return bs_wrong_type(b, k, "a duration");
    }
    if (sec < 0 || ns < 0)
        return bs_fail_at(b, k, "value must be a non-negative duration");
    *ms = (uint64_t)sec * 1000u + (uint64_t)ns / 1000000u;
    if (present)
        *present = true;
    json_object_set_new(o, k, duration_json(sec, ns)); /* canonical, as Envoy prints it */
    return true;
}

bool bs_enum(bs *b, json_t *o, const char *k, const char *const *names, int *out)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    if (!json_is_string(v))
        return bs_wrong_type(b, k, "an enum name");
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], json_string_value(v)) == 0) {
            *out = i;
            return true;
        }
    }
    size_t m = bs_push(b, k);
    bs_fail(b, "unsupported value \"%s\"", json_string_value(v));
    bs_pop(b, m);
    return false;
}

bool bs_type_is(bs *b, json_t *o, const char *type)
{
    json_t *t = bs_get(o, "@type");
    if (!t)
        return bs_fail_at(b, "@type", "missing required field");
    if (!json_is_string(t))
        return bs_wrong_type(b, "@type", "a string");
    if (strcmp(json_string_value(t), type) != 0) {
        size_t m = bs_push(b, "@type");
        bs_fail(b, "unsupported value \"%s\" (expected \"%s\")", json_string_value(t), type);
        bs_pop(b, m);
        return false;
    }
    return true;
}

bool bs_opt_type(bs *b, json_t *o, const char *type)
{
    return !bs_get(o, "@type") || bs_type_is(b, o, type);
}

bool bs_sub(bs *b, json_t *o, const char *k, bool (*fn)(bs *, json_t *, void *), void *arg)
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    size_t m = bs_push(b, k);
    bool ok = json_is_object(v) ? fn(b, v, arg) : bs_fail(b, "wrong type: expected an object");
    bs_pop(b, m);
    return ok;
}

bool bs_each(bs *b, json_t *o, const char *k, size_t elem, void **out, size_t *n,
             bool (*fn)(bs *, json_t *, void *))
{
    json_t *v = bs_get(o, k);
    if (!v)
        return true;
    if (!json_is_array(v))
        return bs_wrong_type(b, k, "an array");
    size_t len = json_array_size(v);
    char *arr = bs_alloc(b, elem * len);
    if (!arr)
        return false;
    size_t m = bs_push(b, k);
    for (size_t i = 0; i < len && !b->failed; i++) {
        size_t mi = bs_push_i(b, i);
        json_t *it = json_array_get(v, i);
        if (!json_is_object(it))
            bs_fail(b, "wrong type: expected an object");
        else
            fn(b, it, arr + i * elem);
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    *out = arr;
    *n = len;
    return !b->failed;
}

/* ---------- key normalization (lowerCamelCase -> snake_case) ---------- */

static json_t *norm(bs *b, json_t *v, bool map);

static json_t *norm_value(bs *b, const char *key, json_t *v)
{
    if (word_in("metadata json_format static_layer", key))
        return json_deep_copy(v); /* google.protobuf.Struct: keys as written */
    return norm(b, v, word_in("typed_extension_protocol_options typed_per_filter_config", key));
}

/* snake_case for a lowerCamelCase key: "_" before each capital (lowered); with digits, also
 * before each digit that follows a letter. Protobuf's JSON names drop the "_" before a digit
 * (accept_http_10 is acceptHttp10, http2_protocol_options http2ProtocolOptions), so a key
 * with a digit after a letter has two readings. */
static bool snake(const char *k, char *out, size_t cap, bool digits)
{
    size_t n = 0;
    for (const char *p = k; *p; p++) {
        bool up = isupper((unsigned char)*p);
        bool digit_after_letter =
            digits && isdigit((unsigned char)*p) && p > k && isalpha((unsigned char)p[-1]);
        if (n + 3 > cap)
            return false;
        if (up || digit_after_letter)
            out[n++] = '_';
        out[n++] = up ? (char)tolower((unsigned char)*p) : *p;
    }
    out[n] = '\0';
    return true;
}

/* A JSON name (no "_") whose two snake_case readings differ: which one is meant depends on
 * the object's fields, so the key is kept as written until bs_fields resolves it (and an
 * unknown one is reported as the user wrote it). */
static bool camel_ambiguous(const char *k)
{
    if (strchr(k, '_'))
        return false;
    for (const char *p = k + 1; *k && *p; p++)
        if (isdigit((unsigned char)*p) && isalpha((unsigned char)p[-1]))
            return true;
    return false;
}

/* The copy built so far, or NULL (freed) when building it failed. */
static json_t *built(bs *b, json_t *out)
{
    if (!out)
        bs_fail(b, "out of memory");
    if (b->failed) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *norm_object(bs *b, json_t *v, bool map)
{
    json_t *out = json_object();
    const char *k;
    json_t *child;
    char key[256];
    json_object_foreach(v, k, child)
    {
        if (!out || b->failed)
            break;
        const char *nk = k;
        if (!map && strcmp(k, "@type") != 0 && !camel_ambiguous(k)) {
            if (!snake(k, key, sizeof(key), false))
                return json_decref(out), bs_fail_at(b, k, "unknown field"), NULL;
            nk = key;
        }
        size_t m = bs_push(b, nk);
        if (json_object_get(out, nk))
            bs_fail(b, "duplicate field (given in snake_case and in lowerCamelCase)");
        json_t *c = b->failed ? NULL : norm_value(b, map ? "" : nk, child);
        if (!b->failed && (!c || json_object_set_new(out, nk, c) != 0))
            bs_fail(b, "out of memory");
        bs_pop(b, m);
    }
    return built(b, out);
}

static json_t *norm(bs *b, json_t *v, bool map)
{
    if (json_is_object(v))
        return norm_object(b, v, map);
    if (!json_is_array(v)) {
        json_t *c = json_copy(v);
        if (!c)
            bs_fail(b, "out of memory");
        return c;
    }
    json_t *out = json_array();
    for (size_t i = 0; out && i < json_array_size(v) && !b->failed; i++) {
        size_t m = bs_push_i(b, i);
        json_t *c = norm(b, json_array_get(v, i), false);
        if (c && json_array_append_new(out, c) != 0)
            bs_fail(b, "out of memory");
        bs_pop(b, m);
    }
    return built(b, out);
}

/* ---------- addresses ---------- */

/* address {socket_address {address, port_value, protocol}}. need_ip: the address must be an IP
 * literal (ip_msg is the error otherwise); else a hostname is kept in *host. */
static bool dec_address(bs *b, json_t *addr, wp_addr *out, const char **host, uint32_t *port,
                        const char *ip_msg)
{
    static const char *const protos[] = {"TCP", NULL};
    json_t *sa = bs_get(addr, "socket_address");
    if (!bs_fields(b, addr, "socket_address"))
        return false;
    if (!sa)
        return bs_fail_at(b, "socket_address", "missing required field");
    size_t m = bs_push(b, "socket_address");
    const char *ip = NULL;
    uint32_t p = 0;
    int proto = 0;
    bool ok = bs_fields(b, sa, "address port_value protocol") &&
              bs_req_str(b, sa, "address", &ip) && bs_u32(b, sa, "port_value", &p) &&
              bs_enum(b, sa, "protocol", protos, &proto);
    if (ok && p > 65535)
        ok = bs_fail_at(b, "port_value", "value must be less than or equal to 65535");
    memset(out, 0, sizeof(*out));
    struct sockaddr_in *v4 = (struct sockaddr_in *)&out->sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->sa;
    if (ok && inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)p);
        out->len = sizeof(*v4);
        wp_sockaddr_text((struct sockaddr *)v4, out->text, sizeof(out->text));
    } else if (ok && inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)p);
        out->len = sizeof(*v6);
        wp_sockaddr_text((struct sockaddr *)v6, out->text, sizeof(out->text));
    } else if (ok && ip_msg) {
        size_t ma = bs_push(b, "address");
        ok = bs_fail(b, ip_msg, ip);
        bs_pop(b, ma);
    } else if (ok) {
        snprintf(out->text, sizeof(out->text), "%.50s:%u", ip, p);
    }
    if (host)
        *host = ip;
    if (port)
        *port = p;
    bs_pop(b, m);
    return ok;
}

bool bs_req_address(bs *b, json_t *o, wp_addr *out, const char **host, uint32_t *port,
                    const char *ip_msg)
{
    json_t *a = bs_get(o, "address");
    if (!a)
        return bs_fail_at(b, "address", "missing required field");
    size_t m = bs_push(b, "address");
    bool ok = dec_address(b, a, out, host, port, ip_msg);
    bs_pop(b, m);
    return ok;
}

/* ---------- access logs ---------- */

/* l->format_at: "<source>: <JSON path>" of the format field key (under the current path), so
 * that a format that does not compile (gen.c) is reported as bs_fail reports errors. */
static void format_at(bs *b, wp_access_log *l, const char *key)
{
    size_t m = bs_push(b, key);
    char at[sizeof(b->path) + 1024];
    snprintf(at, sizeof at, "%s: %s", b->src, b->path);
    l->format_at = bs_strdup(b, at);
    bs_pop(b, m);
}

/* A file log's path must be one the proxy can open (Envoy fails the load otherwise); checked
 * here, without creating the file, so the error names the JSON path. */
static bool check_log_path(bs *b, const char *path)
{
    wf_strbuf why = WF_STRBUF_INIT;
    bool ok = wp_alog_path_check(path, &why) == 0;
    if (!ok)
        bs_fail_at(b, "path", wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    return ok;
}

static bool dec_log_format(bs *b, json_t *f, void *arg)
{
    wp_access_log *l = arg;
    if (!bs_fields(b, f, "text_format text_format_source json_format"))
        return false;
    if (json_object_size(f) != 1)
        return bs_fail(b,
                       "exactly one of text_format, text_format_source, json_format is required");
    json_t *src = bs_get(f, "text_format_source");
    if (src) {
        size_t m = bs_push(b, "text_format_source");
        bool ok = bs_fields(b, src, "inline_string") &&
                  bs_req_str(b, src, "inline_string", &l->text_format);
        format_at(b, l, "inline_string");
        bs_pop(b, m);
        return ok;
    }
    json_t *j = bs_get(f, "json_format");
    if (j) {
        if (!json_is_object(j))
            return bs_wrong_type(b, "json_format", "an object");
        l->kind = WP_LOG_JSON;
        l->json_format = j; /* borrowed from the snapshot's bootstrap */
        format_at(b, l, "json_format");
        return true;
    }
    format_at(b, l, "text_format");
    return bs_str(b, f, "text_format", &l->text_format);
}

static bool dec_logger_config(bs *b, json_t *tc, wp_access_log *l, bool file)
{
    const char *fields = file ? "@type path log_format format json_format" : "@type log_format";
    if (!bs_fields(b, tc, fields))
        return false;
    int n = !!bs_get(tc, "log_format") + !!bs_get(tc, "format") + !!bs_get(tc, "json_format");
    if (n > 1)
        return bs_fail(b, "only one of log_format, format, json_format may be set");
    if (file && (!bs_req_str(b, tc, "path", &l->path) || !check_log_path(b, l->path)))
        return false;
    json_t *j = bs_get(tc, "json_format");
    if (j) {
        if (!json_is_object(j))
            return bs_wrong_type(b, "json_format", "an object");
        l->kind = WP_LOG_JSON;
        l->json_format = j;
        format_at(b, l, "json_format");
    } else if (bs_get(tc, "format")) {
        format_at(b, l, "format");
    }
    if (!bs_str(b, tc, "format", &l->text_format) ||
        !bs_sub(b, tc, "log_format", dec_log_format, l))
        return false;
    if (l->text_format && !*l->text_format)
        l->text_format = NULL; /* empty = Envoy's default format */
    return true;
}

static bool dec_access_log(bs *b, json_t *o, void *arg)
{
    static const char *const names[] = {"envoy.access_loggers.file", "envoy.access_loggers.stdout",
                                        "envoy.access_loggers.stderr", NULL};
    static const char *const types[] = {
        "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
        "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
        "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog", NULL};
    wp_access_log *l = arg;
    l->kind = WP_LOG_TEXT;
    l->sink = -1;
    int name = 0, type = 0;
    if (!bs_fields(b, o, "name typed_config") || !bs_enum(b, o, "name", names, &name))
        return false;
    json_t *tc = bs_get(o, "typed_config");
    if (!tc)
        return bs_fail_at(b, "typed_config", "missing required field");
    size_t m = bs_push(b, "typed_config");
    bool ok = json_is_object(tc) ? bs_enum(b, tc, "@type", types, &type)
                                 : bs_fail(b, "wrong type: expected an object");
    if (ok && !bs_get(tc, "@type"))
        ok = bs_fail_at(b, "@type", "missing required field");
    if (ok && type > 0)
        l->path = type == 1 ? "/dev/stdout" : "/dev/stderr";
    ok = ok && dec_logger_config(b, tc, l, type == 0);
    bs_pop(b, m);
    return ok;
}

/* ---------- HTTP connection manager ---------- */

/* The fault filter's typed_config (HTTPFault; absent = empty), once per HCM. */
static bool dec_fault_filter(bs *b, json_t *tc)
{
    if (b->fault)
        return bs_fail_at(b, "name", "only one " WP_FAULT_NAME " filter is supported");
    size_t m = bs_push(b, "typed_config");
    b->fault = bs_fault_filter(b, tc);
    bs_pop(b, m);
    return b->fault != NULL;
}

/* envoy.filters.http.cors with an empty Cors config (what Istio sends on every HCM): without a
 * CorsPolicy on the route or virtual host the filter does nothing in Envoy, so weft accepts it
 * as a no-op. Route-level cors policies stay refused (unknown field). */
static bool dec_cors_filter(bs *b, json_t *tc, char *kind)
{
    *kind = 'c';
    if (!tc)
        return true;
    size_t m = bs_push(b, "typed_config");
    bool ok = json_is_object(tc) ? bs_fields(b, tc, "@type") && bs_type_is(b, tc, CORS_TYPE)
                                 : bs_fail(b, "wrong type: expected an object");
    bs_pop(b, m);
    return ok;
}

/* The typed_config of an http_filters entry of type t (its decoded config in *config). */
static bool dec_filter_config(bs *b, const wp_http_filter_type *t, json_t *tc, const void **config)
{
    wp_hcm *h = b->hcm;
    if (t == &wp_http_filter_fault) {
        bool ok = dec_fault_filter(b, tc);
        *config = b->fault;
        return ok;
    }
    if (t == &wp_http_filter_istio_stats) {
        bool ok = bs_istio_stats_filter(b, tc);
        *config = b->istio_stats;
        return ok;
    }
    if (t == &wp_http_filter_istio_mx) {
        bool ok = bs_istio_mx_filter(b, tc);
        *config = b->istio_mx;
        return ok;
    }
    if (!tc)
        return true;
    size_t m = bs_push(b, "typed_config");
    /* envoy.extensions.filters.http.router.v3.Router: dynamic_stats (default true) and
     * suppress_envoy_headers (default false) */
    bool ok = bs_fields(b, tc, "@type dynamic_stats suppress_envoy_headers") &&
              bs_type_is(b, tc, ROUTER_TYPE) &&
              bs_bool(b, tc, "dynamic_stats", &h->dynamic_stats) &&
              bs_bool(b, tc, "suppress_envoy_headers", &h->suppress_envoy_headers);
    bs_pop(b, m);
    return ok;
}

/* One http_filters entry: its name resolved to a filter type (filters/http/filters.h), its
 * typed_config decoded, the filter appended to the HCM's chain; *arg records the kind ('c'
 * cors, 'r' the terminal router, 'f' any other). */
static bool dec_http_filter(bs *b, json_t *o, void *arg)
{
    char *kind = arg;
    json_t *tc = bs_get(o, "typed_config");
    const char *name = NULL;
    if (!bs_fields(b, o, "name typed_config") || !bs_req_str(b, o, "name", &name))
        return false;
    const wp_http_filter_type *t = wp_http_filter_find(name);
    if (!t) {
        size_t m = bs_push(b, "name");
        bs_fail(b, "unsupported http filter \"%s\" (supported: %s)", name, wp_http_filter_names());
        bs_pop(b, m);
        return false;
    }
    const void *config = NULL;
    if (t == &wp_http_filter_cors) {
        if (!dec_cors_filter(b, tc, kind))
            return false;
    } else {
        *kind = t->terminal ? 'r' : 'f';
        if (tc && !json_is_object(tc))
            return bs_fail_at(b, "typed_config", "wrong type: expected an object");
        if (!dec_filter_config(b, t, tc, &config))
            return false;
    }
    /* a second terminal filter is reported by dec_http_filters with Envoy's message */
    wp_fchain *fc = (wp_fchain *)b->hcm->filter_chain;
    if (fc->n && fc->e[fc->n - 1].type->terminal)
        return true;
    if (wp_fchain_add(fc, t, config) != 0)
        return bs_fail_at(b, "name", "too many http filters (weft-proxy takes 16)");
    return true;
}

/* http_filters: [envoy.filters.http.fault, envoy.filters.http.cors, istio.metadata_exchange,
 * istio.stats, in any order,] envoy.filters.http.router (last), in the HCM's filter chain in
 * their order. */
static bool dec_http_filters(bs *b, json_t *hcm)
{
    void *arr;
    size_t n = 0;
    wp_fchain *fc = bs_alloc(b, sizeof(*fc));
    if (!fc)
        return false;
    b->hcm->filter_chain = fc;
    if (!bs_each(b, hcm, "http_filters", 1, &arr, &n, dec_http_filter))
        return false;
    const char *kinds = arr;
    for (size_t i = 0; i + 1 < n; i++) {
        if (kinds[i] != 'r')
            continue;
        size_t m = bs_push(b, "http_filters");
        bs_push_i(b, i);
        bs_fail(b,
                "Error: terminal filter named %s of type %s must be the last filter in a http "
                "filter chain.",
                ROUTER_NAME, ROUTER_NAME);
        bs_pop(b, m);
        return false;
    }
    if (n == 0 || kinds[n - 1] != 'r')
        return bs_fail_at(b, "http_filters", "the http filter chain must end with " ROUTER_NAME);
    if (b->istio_stats) /* istio.stats reads what the exchange discovers */
        b->istio_stats->mx = b->istio_mx;
    return true;
}

static bool dec_hcm_common(bs *b, json_t *o, void *arg)
{
    wp_hcm *h = arg;
    uint32_t max_headers = h->max_headers_count;
    if (!bs_fields(b, o, "idle_timeout max_headers_count") ||
        !bs_dur(b, o, "idle_timeout", &h->idle_timeout_ms, NULL) ||
        !bs_u32(b, o, "max_headers_count", &max_headers))
        return false;
    if (max_headers < 1)
        return bs_fail_at(b, "max_headers_count", "value must be greater than or equal to 1");
    h->max_headers_count = max_headers;
    return true;
}

/* http_protocol_options: the HTTP/1.0 settings of Envoy's Http1ProtocolOptions (the other
 * fields are refused by name). */
static bool dec_hcm_h1(bs *b, json_t *o, void *arg)
{
    wp_hcm *h = arg;
    return bs_fields(b, o, "accept_http_10 default_host_for_http_10") &&
           bs_bool(b, o, "accept_http_10", &h->accept_http_10) &&
           bs_str(b, o, "default_host_for_http_10", &h->default_host_for_http_10);
}

/* normalize_path, merge_slashes and path_with_escaped_slashes_action (every value of the
 * enum; http/path_norm.h applies them). */
static bool dec_path_options(bs *b, json_t *o, wp_hcm *h)
{
    static const char *const actions[] = {
        "IMPLEMENTATION_SPECIFIC_DEFAULT", "KEEP_UNCHANGED",       "REJECT_REQUEST",
        "UNESCAPE_AND_REDIRECT",           "UNESCAPE_AND_FORWARD", NULL};
    int action = WF_ESC_SLASH_DEFAULT;
    if (!bs_bool(b, o, "normalize_path", &h->normalize_path) ||
        !bs_bool(b, o, "merge_slashes", &h->merge_slashes) ||
        !bs_enum(b, o, "path_with_escaped_slashes_action", actions, &action))
        return false;
    h->path_with_escaped_slashes_action = (wf_esc_slash_action)action;
    return true;
}

bool bs_hcm(bs *b, json_t *o, wp_hcm *h)
{
    static const char *const codecs[] = {"AUTO", "HTTP1", NULL};
    int codec = 0;
    h->server_name = "envoy";
    h->stream_idle_timeout_ms = 300000;
    h->idle_timeout_ms = 3600000;
    h->max_request_headers_kb = 60;
    h->max_headers_count = 100;
    h->generate_request_id = true;
    h->dynamic_stats = true;
    if (!bs_fields(
            b, o,
            "@type stat_prefix codec_type route_config rds http_filters server_name "
            "stream_idle_timeout request_timeout common_http_protocol_options "
            "http_protocol_options max_request_headers_kb generate_request_id use_remote_address "
            "xff_num_trusted_hops access_log normalize_path merge_slashes "
            "path_with_escaped_slashes_action") ||
        !bs_type_is(b, o, HCM_TYPE) || !dec_path_options(b, o, h))
        return false;
    if (bs_get(o, "rds"))
        return bs_fail_at(b, "rds",
                          "rds is supported only in listeners received over LDS (the xDS "
                          "client inlines the route configuration); use route_config");
    if (!bs_req_str(b, o, "stat_prefix", &h->stat_prefix) ||
        !bs_enum(b, o, "codec_type", codecs, &codec) ||
        !bs_str(b, o, "server_name", &h->server_name) ||
        !bs_dur(b, o, "stream_idle_timeout", &h->stream_idle_timeout_ms, NULL) ||
        !bs_dur(b, o, "request_timeout", &h->request_timeout_ms, NULL) ||
        !bs_sub(b, o, "common_http_protocol_options", dec_hcm_common, h) ||
        !bs_sub(b, o, "http_protocol_options", dec_hcm_h1, h) ||
        !bs_u32(b, o, "max_request_headers_kb", &h->max_request_headers_kb) ||
        !bs_bool(b, o, "generate_request_id", &h->generate_request_id) ||
        !bs_bool(b, o, "use_remote_address", &h->use_remote_address) ||
        !bs_u32(b, o, "xff_num_trusted_hops", &h->xff_num_trusted_hops))
        return false;
    if (h->max_request_headers_kb < 1 || h->max_request_headers_kb > 8192)
        return bs_fail_at(b, "max_request_headers_kb", "value must be inside range [1, 8192]");
    void *logs = NULL;
    if (!bs_each(b, o, "access_log", sizeof(wp_access_log), &logs, &h->naccess_logs,
                 dec_access_log))
        return false;
    h->access_logs = logs;
    b->hcm = h;
    b->fault = NULL;
    b->istio_stats = NULL;
    b->istio_mx = NULL;
    if (!dec_http_filters(b, o))
        return false;
    json_t *rc = bs_get(o, "route_config");
    if (!rc)
        return bs_fail_at(b, "route_config", "missing required field");
    h->route_config = bs_alloc(b, sizeof(*h->route_config));
    if (!h->route_config)
        return false;
    size_t m = bs_push(b, "route_config");
    bool ok = bs_route_config(b, rc, h->route_config);
    bs_pop(b, m);
    return ok;
}

/* ---------- top level ---------- */

static bool dec_node(bs *b, json_t *o, void *arg)
{
    wp_config *c = arg;
    json_t *md = bs_get(o, "metadata");
    json_t *loc = bs_get(o, "locality");
    if (!bs_fields(b, o, "id cluster metadata locality user_agent_name user_agent_version") ||
        !bs_str(b, o, "id", &c->node_id) || !bs_str(b, o, "cluster", &c->node_cluster))
        return false;
    const char *s = NULL;
    if (!bs_str(b, o, "user_agent_name", &s) || !bs_str(b, o, "user_agent_version", &s))
        return false;
    if (md && !json_is_object(md))
        return bs_wrong_type(b, "metadata", "an object");
    if (loc) {
        size_t m = bs_push(b, "locality");
        bool ok = bs_fields(b, loc, "region zone sub_zone") && bs_str(b, loc, "region", &s) &&
                  bs_str(b, loc, "zone", &s) && bs_str(b, loc, "sub_zone", &s);
        bs_pop(b, m);
        if (!ok)
            return false;
    }
    c->node = json_deep_copy(o);
    return c->node ? true : bs_fail(b, "out of memory");
}

static bool dec_admin(bs *b, json_t *o, void *arg)
{
    wp_config *c = arg;
    const char *profile = NULL;
    void *logs = NULL;
    size_t nlogs = 0;
    if (!bs_fields(b, o, "address access_log_path access_log profile_path") ||
        !bs_str(b, o, "access_log_path", &c->admin_access_log_path) ||
        !bs_str(b, o, "profile_path", &profile) ||
        !bs_each(b, o, "access_log", sizeof(wp_access_log), &logs, &nlogs, dec_access_log))
        return false;
    if (nlogs + (c->admin_access_log_path != NULL) > 1)
        return bs_fail_at(b, "access_log", "only one admin access log is supported");
    if (nlogs == 1)
        c->admin_access_log_path = ((wp_access_log *)logs)->path;
    if (!bs_get(o, "address"))
        return true;
    c->has_admin = true;
    return bs_req_address(b, o, &c->admin_addr, NULL, NULL, "malformed IP address: %s");
}

static bool dec_static(bs *b, json_t *o, void *arg)
{
    wp_config *c = arg;
    void *arr = NULL;
    if (!bs_fields(b, o, "listeners clusters"))
        return false;
    /* clusters first: routes resolve cluster names to indexes */
    if (!bs_each(b, o, "clusters", sizeof(wp_cluster), &arr, &c->nclusters, bs_dec_cluster))
        return false;
    c->clusters = arr;
    size_t m = b->plen;
    bool ok = bs_check_clusters(b);
    bs_pop(b, m);
    if (!ok ||
        !bs_each(b, o, "listeners", sizeof(wp_listener), &arr, &c->nlisteners, bs_dec_listener))
        return false;
    c->listeners = arr;
    ok = bs_check_listeners(b);
    bs_pop(b, m);
    return ok;
}

/* stats_matcher and histogram_bucket_settings (stats_matcher.h): compiled now and dropped;
 * the stats store builds its own from the kept JSON (pstats.c). Errors name the JSON path. */
static bool check_stats_matcher(bs *b, json_t *sc)
{
    wf_strbuf where = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    wp_stats_matcher *sm = wp_stats_matcher_new(sc, &where, &why);
    bool ok = sm != NULL;
    if (!ok) {
        size_t m = where.len ? bs_push(b, wf_strbuf_cstr(&where)) : b->plen;
        bs_fail(b, "%s", wf_strbuf_cstr(&why));
        bs_pop(b, m);
    }
    wp_stats_matcher_free(sm);
    wf_strbuf_free(&where);
    wf_strbuf_free(&why);
    return ok;
}

/* stats_config: the tag extractors and the matcher are checked now (stats.c compiles them),
 * so a bad regex fails the load instead of silently changing the stats. */
static bool dec_stats_config(bs *b, json_t *sc)
{
    size_t m = bs_push(b, "stats_config");
    bool ok =
        bs_fields(b, sc, "stats_tags use_all_default_tags stats_matcher histogram_bucket_settings");
    ok = ok && check_stats_matcher(b, sc);
    if (ok) {
        wf_strbuf e = {0};
        wp_stats_tags *t = wp_stats_tags_from_config(sc, &e);
        if (!t)
            ok = bs_fail(b, "%s", wf_strbuf_cstr(&e));
        wp_stats_tags_free(t);
        wf_strbuf_free(&e);
    }
    bs_pop(b, m);
    return ok;
}

static bool dec_bootstrap(bs *b, json_t *o)
{
    static const char *const empty_only[] = {"layered_runtime", "cluster_manager",
                                             "overload_manager", NULL};
    wp_config *c = b->c;
    if (!bs_fields(b, o,
                   "node admin static_resources stats_config layered_runtime dynamic_resources "
                   "cluster_manager overload_manager"))
        return false;
    for (int i = 0; empty_only[i]; i++) {
        json_t *v = bs_get(o, empty_only[i]);
        if (v && (!json_is_object(v) || json_object_size(v) != 0)) {
            size_t m = bs_push(b, empty_only[i]);
            bs_fail(b, "%s is not supported by weft-proxy (only an empty object is accepted)",
                    empty_only[i]);
            bs_pop(b, m);
            return false;
        }
    }
    json_t *sc = bs_get(o, "stats_config");
    if (sc && !json_is_object(sc))
        return bs_wrong_type(b, "stats_config", "an object");
    if (sc && !dec_stats_config(b, sc))
        return false;
    if (sc && !(c->stats_config = json_deep_copy(sc)))
        return bs_fail(b, "out of memory");
    return bs_sub(b, o, "node", dec_node, c) && bs_sub(b, o, "admin", dec_admin, c) &&
           bs_sub(b, o, "static_resources", dec_static, c) && bs_dynamic_resources(b, o);
}

wp_config *wp_bootstrap_load(json_t *root, const char *source, wf_strbuf *err)
{
    wp_config *c = calloc(1, sizeof(*c));
    if (!c) {
        wf_strbuf_printf(err, "%s: out of memory", source ? source : "bootstrap");
        return NULL;
    }
    atomic_init(&c->refs, 1);
    wf_arena_init(&c->arena);
    c->version = 1;
    bs b = {.c = c, .a = &c->arena, .err = err, .src = source ? source : "bootstrap"};
    if (!json_is_object(root))
        bs_fail(&b, "wrong type: the bootstrap must be a JSON object");
    else
        c->bootstrap = norm(&b, root, false);
    if (!b.failed)
        dec_bootstrap(&b, c->bootstrap);
    if (b.failed) {
        wp_config_unref(c);
        return NULL;
    }
    return c;
}

wp_config *wp_bootstrap_load_file(const char *path, wf_strbuf *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    int e = !f || fstat(fileno(f), &st) != 0 ? errno : 0;
    if (e == 0 && S_ISDIR(st.st_mode))
        e = EISDIR; /* fopen succeeds on a directory, reading it fails */
    if (e != 0) {
        wf_strbuf_printf(err, "%s: cannot read: %s", path, strerror(e));
        if (f)
            fclose(f);
        return NULL;
    }
    if (st.st_size > (off_t)WP_BOOTSTRAP_MAX_BYTES) {
        fclose(f);
        wf_strbuf_printf(err, "%s: file too large (%lld bytes, at most %u)", path,
                         (long long)st.st_size, WP_BOOTSTRAP_MAX_BYTES);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        wf_strbuf_printf(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return NULL;
    }
    wp_config *c = wp_bootstrap_load(root, path, err);
    json_decref(root);
    return c;
}
