/*
 * bootstrap_read.c - the bootstrap decoder's readers (bootstrap_read.h): the JSON path of
 * the value being decoded and the first error, typed field readers (strings, numbers,
 * durations, enums, sub-objects, arrays of objects), Envoy's protobuf-JSON key normalization
 * (lowerCamelCase to snake_case, as protobuf's JSON parser accepts both) and socket addresses.
 * Every decoder of the bootstrap (bootstrap.c, bootstrap_*.c) stands on these; they call
 * nothing of the decoders.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/bootstrap/envoy_fields.h"

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

bool bs_fail_atf(bs *b, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return bs_fail_at(b, key, msg);
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

/* A key o does not allow, named as written: "not supported by weft-proxy (Envoy's
 * <message>.<field>)" when it (or a snake_case reading of a lowerCamelCase key) is a field of
 * the Envoy message o is (envoy_fields.h: by o's "@type" or the path), "unknown field" for any
 * other name. Returns false. */
static bool refuse_field(bs *b, json_t *o, const char *k)
{
    json_t *t = json_object_get(o, "@type");
    const char *msg = wp_envoy_message_at(b->path, json_is_string(t) ? json_string_value(t) : NULL);
    char key[256];
    const char *field = msg && wp_envoy_message_has(msg, k) ? k : NULL;
    for (int digits = 0; msg && !field && digits < 2; digits++)
        if (snake(k, key, sizeof(key), digits) && wp_envoy_message_has(msg, key))
            field = key;
    if (field)
        return bs_fail_atf(b, k, "not supported by weft-proxy (Envoy's %s.%s)", msg, field);
    return bs_fail_at(b, k, "unknown field");
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
            goto again; /* o changed under the iteration */
        return refuse_field(b, o, k);
    }
    return true;
}

bool bs_wrong_type(bs *b, const char *k, const char *what)
{
    bs_fail_atf(b, k, "wrong type: expected %s", what);
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
    bs_fail_atf(b, k, "unsupported value \"%s\"", json_string_value(v));
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
        bs_fail_atf(b, "@type", "unsupported value \"%s\" (expected \"%s\")", json_string_value(t),
                    type);
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

/* Cluster.transport_socket_matches: each entry normalized, its `match` (a Struct) kept as
 * written. */
static json_t *norm_tsms(bs *b, json_t *v)
{
    json_t *out = norm(b, v, false);
    for (size_t i = 0; out && json_is_array(v) && i < json_array_size(v); i++) {
        json_t *m = json_object_get(json_array_get(v, i), "match");
        json_t *o = json_array_get(out, i);
        if (m && json_is_object(o) && json_object_set_new(o, "match", json_deep_copy(m)) != 0) {
            json_decref(out);
            return bs_fail(b, "out of memory"), NULL;
        }
    }
    return out;
}

/* An RBAC permission's or principal's `metadata` is a MetadataMatcher {filter, path, value,
 * invert} (normalized like any message), not a core Metadata / Struct. */
static bool is_metadata_matcher(json_t *v)
{
    return json_is_object(v) && json_is_string(json_object_get(v, "filter")) &&
           json_is_array(json_object_get(v, "path"));
}

static json_t *norm_value(bs *b, const char *key, json_t *v)
{
    if (word_in("metadata json_format static_layer", key) &&
        !(strcmp(key, "metadata") == 0 && is_metadata_matcher(v)))
        return json_deep_copy(v); /* google.protobuf.Struct: keys as written */
    if (strcmp(key, "transport_socket_matches") == 0)
        return norm_tsms(b, v);
    /* map fields: their keys are names (RBAC.policies: policy names; JwtAuthentication.providers:
     * provider names) */
    return norm(b, v,
                word_in("typed_extension_protocol_options typed_per_filter_config policies "
                        "providers",
                        key));
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

json_t *bs_normalize(bs *b, json_t *root)
{
    return norm(b, root, false);
}
