/*
 * access_log.c - access log format compiler and renderer (see access_log.h for the rules
 * and the Envoy/Istio sources they follow).
 *
 * A compiled format is a list of elements: raw JSON text (pre-escaped keys, delimiters and
 * constant values) or a template (a run of pieces: literal text or one operator). A text
 * format is a single template. Strings live in the format's arena; pieces and elements in
 * two arrays; raw JSON in one string buffer referenced by offset.
 */
#include "proxy/access_log/access_log.h"

#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "core/grpc_codes.h"
#include "http/grpc_http.h"

#define ALF_MAX_DEPTH    32
#define ALF_TIME_FMT_MAX 64
#define ALF_VALBUF       1024
#define ALF_PREFIX_MAX   1400 /* "<JSON path>.<json_format key path>: " */

/* Operator kinds. The generic ones read a wp_stream_info field at a table offset. */
typedef enum {
    OP_LITERAL,
    OP_STR,         /* const char * field, unset when NULL or "" */
    OP_STR_NOPORT,  /* const char * "ip:port" field, printed without the port */
    OP_STR_NOSPACE, /* const char * field with spaces printed as '_' (failure reasons) */
    OP_U64,         /* uint64_t field, a number (0 when unset, as Envoy's value_or(0)) */
    OP_DUR,         /* milliseconds between two uint64_t monotonic fields, unset when 0 */
    OP_DURATION,
    OP_START_TIME,
    OP_RESPONSE_CODE,
    OP_ATTEMPT_COUNT,
    OP_FLAGS,
    OP_FLAGS_LONG,
    OP_UPSTREAM_CLUSTER,
    OP_STREAM_ID,
    OP_HOSTNAME,
    OP_REQ,
    OP_RESP,
    OP_TRAILER,
    OP_UPSTREAM_PROTOCOL, /* the upstream connection's ("HTTP/1.1", "HTTP/2") once a host was
                           * chosen */
    OP_GRPC_STATUS,       /* gRPC requests: grpc-status of the trailers, headers or code */
    OP_FILTER_STATE,      /* key validated as Envoy does; no filter state: always unset */
    OP_DYN_MD,            /* DYNAMIC_METADATA(NS:KEY): a string entry of the stream's */
    OP_UNSET,             /* operators whose source weft never sets: always unset ("-") */
} alf_op;

/* Envoy's CommandSyntaxChecker flags. */
enum { SYN_COMMAND_ONLY = 0, SYN_PARAMS_REQUIRED = 1, SYN_PARAMS_OPTIONAL = 2, SYN_LENGTH = 4 };

#define FLD(x) ((uint16_t)offsetof(wp_stream_info, x))
#define HDR    (SYN_PARAMS_REQUIRED | SYN_LENGTH)

static const struct {
    const char *name;
    uint8_t op, syntax;
    uint16_t off, off2;
} OPS[] = {
    {"START_TIME", OP_START_TIME, SYN_PARAMS_OPTIONAL, 0, 0},
    {"PROTOCOL", OP_STR, 0, FLD(protocol), 0},
    {"RESPONSE_CODE", OP_RESPONSE_CODE, 0, 0, 0},
    {"RESPONSE_CODE_DETAILS", OP_STR, 0, FLD(details), 0},
    {"CONNECTION_TERMINATION_DETAILS", OP_STR, 0, FLD(termination_details), 0},
    {"RESPONSE_FLAGS", OP_FLAGS, 0, 0, 0},
    {"RESPONSE_FLAGS_LONG", OP_FLAGS_LONG, 0, 0, 0},
    {"BYTES_RECEIVED", OP_U64, 0, FLD(bytes_received), 0},
    {"BYTES_SENT", OP_U64, 0, FLD(bytes_sent), 0},
    {"DOWNSTREAM_WIRE_BYTES_SENT", OP_U64, 0, FLD(wire_bytes_sent), 0},
    {"DOWNSTREAM_WIRE_BYTES_RECEIVED", OP_U64, 0, FLD(wire_bytes_received), 0},
    {"DURATION", OP_DURATION, 0, 0, 0},
    {"REQUEST_DURATION", OP_DUR, 0, FLD(start_ns), FLD(last_rx_ns)},
    {"REQUEST_TX_DURATION", OP_DUR, 0, FLD(start_ns), FLD(last_upstream_tx_ns)},
    {"RESPONSE_DURATION", OP_DUR, 0, FLD(start_ns), FLD(first_upstream_rx_ns)},
    {"RESPONSE_TX_DURATION", OP_DUR, 0, FLD(first_upstream_rx_ns), FLD(last_downstream_tx_ns)},
    {"UPSTREAM_REQUEST_ATTEMPT_COUNT", OP_ATTEMPT_COUNT, 0, 0, 0},
    {"ROUTE_NAME", OP_STR, 0, FLD(route_name), 0},
    {"UPSTREAM_HOST", OP_STR, 0, FLD(upstream_host), 0},
    {"UPSTREAM_REMOTE_ADDRESS", OP_STR, 0, FLD(upstream_host), 0},
    {"UPSTREAM_REMOTE_ADDRESS_WITHOUT_PORT", OP_STR_NOPORT, 0, FLD(upstream_host), 0},
    {"UPSTREAM_CLUSTER", OP_UPSTREAM_CLUSTER, 0, 0, 0},
    {"UPSTREAM_CLUSTER_RAW", OP_STR, 0, FLD(upstream_cluster), 0},
    {"UPSTREAM_LOCAL_ADDRESS", OP_STR, 0, FLD(upstream_local), 0},
    {"UPSTREAM_LOCAL_ADDRESS_WITHOUT_PORT", OP_STR_NOPORT, 0, FLD(upstream_local), 0},
    /* Envoy's stream_info_formatter.cc replaces the spaces of both failure reasons with '_' */
    {"UPSTREAM_TRANSPORT_FAILURE_REASON", OP_STR_NOSPACE, 0, FLD(transport_failure_reason), 0},
    {"DOWNSTREAM_TRANSPORT_FAILURE_REASON", OP_UNSET, 0, 0, 0},
    {"DOWNSTREAM_PEER_URI_SAN", OP_STR, 0, FLD(downstream_peer_uri_san), 0},
    {"DOWNSTREAM_LOCAL_URI_SAN", OP_STR, 0, FLD(downstream_local_uri_san), 0},
    {"DOWNSTREAM_TLS_VERSION", OP_STR, 0, FLD(downstream_tls_version), 0},
    {"DOWNSTREAM_TLS_CIPHER", OP_STR, 0, FLD(downstream_tls_cipher), 0},
    {"DOWNSTREAM_PEER_SUBJECT", OP_STR, 0, FLD(downstream_peer_subject), 0},
    {"UPSTREAM_PEER_URI_SAN", OP_STR, 0, FLD(upstream_peer_uri_san), 0},
    {"UPSTREAM_LOCAL_URI_SAN", OP_STR, 0, FLD(upstream_local_uri_san), 0},
    {"UPSTREAM_TLS_VERSION", OP_STR, 0, FLD(upstream_tls_version), 0},
    {"DOWNSTREAM_REMOTE_ADDRESS", OP_STR, 0, FLD(downstream_remote), 0},
    {"DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT", OP_STR_NOPORT, 0, FLD(downstream_remote), 0},
    {"DOWNSTREAM_DIRECT_REMOTE_ADDRESS", OP_STR, 0, FLD(downstream_direct_remote), 0},
    {"DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT", OP_STR_NOPORT, 0,
     FLD(downstream_direct_remote), 0},
    {"DOWNSTREAM_LOCAL_ADDRESS", OP_STR, 0, FLD(downstream_local), 0},
    {"DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT", OP_STR_NOPORT, 0, FLD(downstream_local), 0},
    {"REQUESTED_SERVER_NAME", OP_STR, 0, FLD(requested_server_name), 0},
    {"CONNECTION_ID", OP_U64, 0, FLD(connection_id), 0},
    {"UPSTREAM_CONNECTION_ID", OP_U64, 0, FLD(upstream_connection_id), 0},
    {"STREAM_ID", OP_STREAM_ID, 0, 0, 0},
    {"HOSTNAME", OP_HOSTNAME, 0, 0, 0},
    {"REQ", OP_REQ, HDR, 0, 0},
    {"RESP", OP_RESP, HDR, 0, 0},
    {"TRAILER", OP_TRAILER, HDR, 0, 0},
    {"UPSTREAM_PROTOCOL", OP_UPSTREAM_PROTOCOL, 0, 0, 0},
    {"UPSTREAM_WIRE_BYTES_SENT", OP_U64, 0, FLD(upstream_wire_bytes_sent), 0},
    {"UPSTREAM_WIRE_BYTES_RECEIVED", OP_U64, 0, FLD(upstream_wire_bytes_received), 0},
    {"GRPC_STATUS", OP_GRPC_STATUS, SYN_PARAMS_OPTIONAL, 0, 0},
    {"GRPC_STATUS_NUMBER", OP_GRPC_STATUS, 0, 0, 1},
    /* no virtual clusters, dynamic metadata or filter state exist in weft: Envoy prints "-"
     * (null in JSON) when they are absent, and so does weft */
    {"VIRTUAL_CLUSTER_NAME", OP_UNSET, 0, 0, 0},
    {"DYNAMIC_METADATA", OP_DYN_MD, HDR, 0, 0},
    {"CLUSTER_METADATA", OP_UNSET, HDR, 0, 0},
    {"UPSTREAM_METADATA", OP_UNSET, HDR, 0, 0},
    {"FILTER_STATE", OP_FILTER_STATE, SYN_PARAMS_OPTIONAL | SYN_LENGTH, 0, 0},
    {"UPSTREAM_FILTER_STATE", OP_FILTER_STATE, SYN_PARAMS_OPTIONAL | SYN_LENGTH, 0, 0},
};

typedef struct {
    uint8_t op; /* alf_op */
    bool has_max;
    uint16_t off, off2; /* stream_info field offsets (OPS) */
    uint32_t max_len;
    const char *a; /* literal text, header name (lower case) or START_TIME format */
    size_t alen;
    const char *b; /* alternative header, NULL when none */
    size_t blen;
} alf_piece;

typedef struct {
    bool is_tmpl;
    size_t off, len; /* raw: range in f->raw; template: range in f->pieces */
} alf_elem;

struct wp_access_log_format {
    wp_log_kind kind;
    wf_arena arena;
    alf_piece *pieces;
    size_t npieces, cappieces;
    alf_elem *elems;
    size_t nelems, capelems;
    wf_strbuf raw;
    const char *hostname; /* NULL when HOSTNAME is unused or gethostname failed */
    bool oom;
};

/* ---------------------------------------------------------------- JSON escaping ---- */

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    }
    return len;
}

/* Appends s[0..n) escaped for the inside of a JSON string (no quotes). */
static void json_escape(wf_strbuf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of the pending run of bytes copied as they are */
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        size_t seq = c >= 0x80 ? utf8_seq_len(u + i, n - i) : 0;
        if (seq) {
            i += seq;
            continue;
        }
        wf_strbuf_append(out, s + run, i - run);
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
        const char *sym = c ? strchr(from, c) : NULL;
        if (sym) {
            char two[2] = {'\\', to[sym - from]};
            wf_strbuf_append(out, two, 2);
        } else
            wf_strbuf_append(out, esc, 6);
        i++;
        run = i;
    }
    wf_strbuf_append(out, s + run, n - run);
}

static void json_quote(wf_strbuf *out, const char *s, size_t n)
{
    wf_strbuf_putc(out, '"');
    json_escape(out, s, n);
    wf_strbuf_putc(out, '"');
}

/* ---------------------------------------------------------------- time -------------- */

static void put_str(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n >= cap)
        n = cap - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
}

static void put_fraction(char *buf, size_t cap, size_t *len, int64_t us, int digits)
{
    char d[16];
    snprintf(d, sizeof d, "%06lld000", (long long)(us % 1000000));
    put_str(buf, cap, len, d, (size_t)digits);
}

/* Handles one conversion at fmt[i] == '%'; returns the number of format bytes used. */
static size_t time_conv(const char *fmt, size_t i, size_t n, const struct tm *tm, int64_t secs,
                        int64_t us, char *buf, size_t cap, size_t *len)
{
    char tmp[64];
    size_t j = i + 1;
    if (j < n && fmt[j] == 's') {
        int k = snprintf(tmp, sizeof tmp, "%lld", (long long)secs);
        put_str(buf, cap, len, tmp, (size_t)k);
        return 2;
    }
    if (j < n && fmt[j] == 'f') {
        put_fraction(buf, cap, len, us, 9);
        return 2;
    }
    if (j + 1 < n && fmt[j] >= '1' && fmt[j] <= '9' && fmt[j + 1] == 'f') {
        put_fraction(buf, cap, len, us, fmt[j] - '0');
        return 3;
    }
    if (j + 2 < n && fmt[j] == 'E' && (fmt[j + 2] == 'S' || fmt[j + 2] == 'f') &&
        (fmt[j + 1] == '*' || (fmt[j + 1] >= '1' && fmt[j + 1] <= '9'))) {
        bool full = fmt[j + 1] == '*';
        int digits = full ? 6 : fmt[j + 1] - '0';
        if (full) { /* absl: full precision, trailing zeros dropped */
            int64_t frac = us;
            while (digits > 0 && frac % 10 == 0) {
                frac /= 10;
                digits--;
            }
        }
        if (fmt[j + 2] == 'S') {
            int k = snprintf(tmp, sizeof tmp, digits ? "%02d." : "%02d", tm->tm_sec);
            put_str(buf, cap, len, tmp, (size_t)k);
        } else if (digits == 0) {
            put_str(buf, cap, len, "0", 1);
        }
        put_fraction(buf, cap, len, us, digits);
        return 4;
    }
    if (j < n && fmt[j] == 'Z') {
        put_str(buf, cap, len, "UTC", 3);
        return 2;
    }
    /* flags, width, E/O modifier and the conversion letter go to strftime */
    size_t k = j;
    while (k < n && strchr("-_0^#", fmt[k]))
        k++;
    while (k < n && fmt[k] >= '0' && fmt[k] <= '9')
        k++;
    if (k < n && (fmt[k] == 'E' || fmt[k] == 'O'))
        k++;
    if (k >= n) { /* dangling '%': copy as is */
        put_str(buf, cap, len, fmt + i, n - i);
        return n - i;
    }
    char spec[24];
    size_t slen = k + 1 - i;
    if (slen >= sizeof spec)
        slen = sizeof spec - 1;
    memcpy(spec, fmt + i, slen);
    spec[slen] = '\0';
    size_t w = strftime(tmp, sizeof tmp, spec, tm);
    put_str(buf, cap, len, tmp, w);
    return k + 1 - i;
}

/* Formats start_time_us into buf (NUL-terminated); fmt NULL = Envoy's default. */
static size_t format_time(const char *fmt, size_t n, int64_t us_total, char *buf, size_t cap)
{
    int64_t secs = us_total / 1000000, us = us_total % 1000000;
    if (us < 0) {
        us += 1000000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    size_t len = 0;
    if (!gmtime_r(&t, &tm)) {
        buf[0] = '\0';
        return 0;
    }
    if (!fmt) {
        int k =
            snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(us / 1000));
        return k < 0 ? 0 : ((size_t)k < cap ? (size_t)k : cap - 1);
    }
    for (size_t i = 0; i < n;) {
        if (fmt[i] != '%') {
            put_str(buf, cap, &len, fmt + i, 1);
            i++;
            continue;
        }
        i += time_conv(fmt, i, n, &tm, secs, us, buf, cap, &len);
    }
    buf[len] = '\0';
    return len;
}

/* ---------------------------------------------------------------- building ---------- */

static bool push_piece(wp_access_log_format *f, const alf_piece *p)
{
    if (f->npieces == f->cappieces) {
        size_t cap = f->cappieces ? f->cappieces * 2 : 16;
        alf_piece *np = realloc(f->pieces, cap * sizeof *np);
        if (!np) {
            f->oom = true;
            return false;
        }
        f->pieces = np;
        f->cappieces = cap;
    }
    f->pieces[f->npieces++] = *p;
    return true;
}

static bool push_elem(wp_access_log_format *f, bool is_tmpl, size_t off, size_t len)
{
    if (!is_tmpl && f->nelems && !f->elems[f->nelems - 1].is_tmpl) {
        f->elems[f->nelems - 1].len += len; /* raw pieces are contiguous in f->raw */
        return true;
    }
    if (f->nelems == f->capelems) {
        size_t cap = f->capelems ? f->capelems * 2 : 16;
        alf_elem *ne = realloc(f->elems, cap * sizeof *ne);
        if (!ne) {
            f->oom = true;
            return false;
        }
        f->elems = ne;
        f->capelems = cap;
    }
    f->elems[f->nelems++] = (alf_elem){is_tmpl, off, len};
    return true;
}

static bool add_literal(wp_access_log_format *f, const char *s, size_t n)
{
    char *copy = wf_arena_strndup(&f->arena, s, n);
    if (!copy) {
        f->oom = true;
        return false;
    }
    alf_piece p = {.op = OP_LITERAL, .a = copy, .alen = n};
    return push_piece(f, &p);
}

static __attribute__((format(printf, 3, 4))) void errf(wf_strbuf *err, const char *prefix,
                                                       const char *fmt, ...)
{
    if (!err)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wf_strbuf_printf(err, "%s%s", prefix ? prefix : "", msg);
}

/* "<at>: " (the JSON path of the format in the configuration), "" when at is unknown. */
static void at_prefix(char *buf, size_t cap, const char *at)
{
    buf[0] = '\0';
    if (at && *at)
        snprintf(buf, cap, "%s: ", at);
}

/* A parsed "%COMMAND(ARG):LEN%" at some position. */
typedef struct {
    const char *name;
    size_t nlen;
    const char *arg; /* NULL when no parentheses */
    size_t alen;
    bool has_len;
    unsigned long long len;
    size_t total; /* bytes from the opening to the closing '%' inclusive */
} alf_cmd;

static size_t scan_len_and_close(const char *s, size_t i, size_t n, alf_cmd *c)
{
    c->has_len = false;
    if (i < n && s[i] == ':') {
        size_t k = i + 1;
        unsigned long long v = 0;
        while (k < n && s[k] >= '0' && s[k] <= '9') {
            v = v > (ULLONG_MAX - 9) / 10 ? ULLONG_MAX : v * 10 + (unsigned)(s[k] - '0');
            k++;
        }
        if (k == i + 1 || k >= n || s[k] != '%')
            return 0;
        c->has_len = true;
        c->len = v;
        return k + 1;
    }
    return (i < n && s[i] == '%') ? i + 1 : 0;
}

/* Envoy's ^%([A-Z0-9_]+)(?:\((.*?)\))?(?::([0-9]+))?% at s[pos] == '%'. */
static bool scan_command(const char *s, size_t pos, size_t n, alf_cmd *c)
{
    size_t i = pos + 1;
    while (i < n && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
        i++;
    if (i == pos + 1)
        return false;
    c->name = s + pos + 1;
    c->nlen = i - pos - 1;
    c->arg = NULL;
    c->alen = 0;
    size_t end = 0;
    if (i < n && s[i] == '(') {
        for (size_t k = i + 1; k < n && !end; k++) {
            if (s[k] == ')' && (end = scan_len_and_close(s, k + 1, n, c)) != 0) {
                c->arg = s + i + 1;
                c->alen = k - i - 1;
            }
        }
    }
    if (!end)
        end = scan_len_and_close(s, i, n, c);
    if (!end)
        return false;
    c->total = end - pos;
    return true;
}

static int find_op(const alf_cmd *c)
{
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++) {
        if (strlen(OPS[i].name) == c->nlen && memcmp(OPS[i].name, c->name, c->nlen) == 0)
            return (int)i;
    }
    return -1;
}

static bool check_syntax(const alf_cmd *c, int syntax, const char *prefix, size_t col,
                         wf_strbuf *err)
{
    int nl = (int)c->nlen;
    if (syntax == SYN_COMMAND_ONLY && (c->alen || c->has_len)) {
        errf(err, prefix, "%.*s does not take any parameters or length (column %zu)", nl, c->name,
             col);
        return false;
    }
    if ((syntax & SYN_PARAMS_REQUIRED) && c->alen == 0) {
        errf(err, prefix, "%.*s requires parameters (column %zu)", nl, c->name, col);
        return false;
    }
    if (!(syntax & SYN_LENGTH) && c->has_len) {
        errf(err, prefix, "%.*s does not allow length to be specified. (column %zu)", nl, c->name,
             col);
        return false;
    }
    if ((syntax & SYN_LENGTH) && c->has_len && c->len > UINT32_MAX) {
        errf(err, prefix, "%.*s length too large (column %zu)", nl, c->name, col);
        return false;
    }
    return true;
}

static char *lower_dup(wf_arena *a, const char *s, size_t n)
{
    char *d = wf_arena_strndup(a, s, n);
    for (size_t i = 0; d && i < n; i++) {
        if (d[i] >= 'A' && d[i] <= 'Z')
            d[i] = (char)(d[i] - 'A' + 'a');
    }
    return d;
}

static bool parse_headers_arg(wp_access_log_format *f, const alf_cmd *c, alf_piece *p,
                              const char *prefix, size_t col, wf_strbuf *err)
{
    const char *q = memchr(c->arg, '?', c->alen);
    if (q && memchr(q + 1, '?', c->alen - (size_t)(q + 1 - c->arg))) {
        errf(err, prefix, "More than 1 alternative header specified in token: %.*s (column %zu)",
             (int)c->alen, c->arg, col);
        return false;
    }
    if (memchr(c->arg, '\n', c->alen) || memchr(c->arg, '\r', c->alen)) {
        errf(err, prefix,
             "Invalid header configuration. Format string contains null or newline. (column %zu)",
             col);
        return false;
    }
    size_t main_len = q ? (size_t)(q - c->arg) : c->alen;
    p->a = lower_dup(&f->arena, c->arg, main_len);
    p->alen = main_len;
    if (q) {
        p->blen = c->alen - main_len - 1;
        p->b = lower_dup(&f->arena, q + 1, p->blen);
    }
    if (!p->a || (q && !p->b)) {
        f->oom = true;
        return false;
    }
    return true;
}

/* Envoy rejects START_TIME formats that can produce a newline
 * (getSystemTimeFormatNewlinePattern: %[-_0^#]*[1-9]*(E|O)?n). */
static bool time_fmt_has_newline(const char *s, size_t n)
{
    if (memchr(s, '\n', n) || memchr(s, '\r', n))
        return true;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%')
            continue;
        size_t k = i + 1;
        while (k < n && strchr("-_0^#", s[k]) && s[k])
            k++;
        while (k < n && s[k] >= '1' && s[k] <= '9')
            k++;
        if (k < n && (s[k] == 'E' || s[k] == 'O'))
            k++;
        if (k < n && s[k] == 'n')
            return true;
    }
    return false;
}

static bool parse_time_arg(wp_access_log_format *f, const alf_cmd *c, alf_piece *p,
                           const char *prefix, size_t col, wf_strbuf *err)
{
    if (c->alen == 0)
        return true; /* default format */
    if (time_fmt_has_newline(c->arg, c->alen)) {
        errf(err, prefix,
             "Invalid header configuration. Format string contains newline. (column %zu)", col);
        return false;
    }
    if (c->alen > ALF_TIME_FMT_MAX) {
        errf(err, prefix, "START_TIME format longer than %d bytes (column %zu)", ALF_TIME_FMT_MAX,
             col);
        return false;
    }
    p->a = wf_arena_strndup(&f->arena, c->arg, c->alen);
    p->alen = c->alen;
    if (!p->a)
        f->oom = true;
    return p->a != NULL;
}

/* GRPC_STATUS(CAMEL_STRING|SNAKE_STRING|NUMBER): p->off2 = 0, 2 or 1 (Envoy's
 * GrpcStatusFormatter::parseFormat and its message). */
static bool parse_grpc_arg(const alf_cmd *c, alf_piece *p, const char *prefix, size_t col,
                           wf_strbuf *err)
{
    static const char *const fmts[] = {"CAMEL_STRING", "NUMBER", "SNAKE_STRING"};
    for (uint16_t i = 0; i < 3; i++)
        if (strlen(fmts[i]) == c->alen && memcmp(fmts[i], c->arg, c->alen) == 0) {
            p->off2 = i;
            return true;
        }
    errf(err, prefix,
         "GrpcStatusFormatter only supports CAMEL_STRING, SNAKE_STRING or NUMBER. (column %zu)",
         col);
    return false;
}

static bool token_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* FILTER_STATE(KEY:TYPE:FIELD) / UPSTREAM_FILTER_STATE(...) as Envoy's
 * FilterStateFormatter::create: the argument split on ':' into key, serialize type (default
 * TYPED) and field name, later tokens ignored; the key is required, the type is PLAIN, TYPED
 * or FIELD, and FIELD goes with a field name and only it. */
static bool parse_filter_state_arg(const alf_cmd *c, const char *prefix, size_t col, wf_strbuf *err)
{
    const char *at = c->arg ? c->arg : "", *end = at + c->alen;
    const char *t[3] = {end, end, end};
    size_t n[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        const char *colon = memchr(at, ':', (size_t)(end - at));
        t[i] = at;
        n[i] = (size_t)((colon ? colon : end) - at);
        if (!colon)
            break;
        at = colon + 1;
    }
    if (n[0] == 0) {
        errf(err, prefix, "Invalid filter state configuration, key cannot be empty. (column %zu)",
             col);
        return false;
    }
    bool field = token_is(t[1], n[1], "FIELD");
    if (n[1] && !field && !token_is(t[1], n[1], "PLAIN") && !token_is(t[1], n[1], "TYPED")) {
        errf(err, prefix,
             "Invalid filter state serialize type, only support PLAIN/TYPED/FIELD. (column %zu)",
             col);
        return false;
    }
    if (field != (n[2] != 0)) {
        errf(err, prefix,
             "Invalid filter state serialize type, FIELD should be used with the field name. "
             "(column %zu)",
             col);
        return false;
    }
    return true;
}

/* DYNAMIC_METADATA(NAMESPACE:KEY): namespace into p->a, key into p->b (arena). Only a
 * namespace, or a path of more than one key, prints "-" (weft's dynamic metadata entries are
 * one key of a namespace). */
static bool parse_dyn_md_arg(wp_access_log_format *f, const alf_cmd *c, alf_piece *p)
{
    const char *colon = memchr(c->arg, ':', c->alen);
    size_t ns_len = colon ? (size_t)(colon - c->arg) : c->alen;
    p->a = wf_arena_strndup(&f->arena, c->arg, ns_len);
    p->alen = ns_len;
    bool one_key = colon && !memchr(colon + 1, ':', c->alen - ns_len - 1);
    if (one_key) {
        p->blen = c->alen - ns_len - 1;
        p->b = wf_arena_strndup(&f->arena, colon + 1, p->blen);
    }
    if (!p->a || (one_key && !p->b)) {
        f->oom = true;
        return false;
    }
    return true;
}

static void load_hostname(wp_access_log_format *f)
{
    char name[HOST_NAME_MAX + 1];
    if (f->hostname || gethostname(name, sizeof name) != 0)
        return;
    name[HOST_NAME_MAX] = '\0';
    f->hostname = wf_arena_strdup(&f->arena, name);
    if (!f->hostname)
        f->oom = true;
}

static bool add_command(wp_access_log_format *f, const alf_cmd *c, const char *prefix, size_t col,
                        wf_strbuf *err)
{
    int idx = find_op(c);
    if (idx < 0) {
        errf(err, prefix, "Not supported field in StreamInfo: %.*s (column %zu)", (int)c->nlen,
             c->name, col);
        return false;
    }
    if (!check_syntax(c, OPS[idx].syntax, prefix, col, err))
        return false;
    alf_piece p = {.op = OPS[idx].op,
                   .off = OPS[idx].off,
                   .off2 = OPS[idx].off2,
                   .has_max = c->has_len,
                   .max_len = (uint32_t)c->len};
    if (p.op == OP_REQ || p.op == OP_RESP || p.op == OP_TRAILER) {
        if (!parse_headers_arg(f, c, &p, prefix, col, err))
            return false;
    } else if (p.op == OP_START_TIME) {
        if (!parse_time_arg(f, c, &p, prefix, col, err))
            return false;
    } else if (p.op == OP_HOSTNAME) {
        load_hostname(f);
    } else if (p.op == OP_GRPC_STATUS && c->alen) {
        if (!parse_grpc_arg(c, &p, prefix, col, err))
            return false;
    } else if (p.op == OP_FILTER_STATE) {
        if (!parse_filter_state_arg(c, prefix, col, err))
            return false;
    } else if (p.op == OP_DYN_MD) {
        if (!parse_dyn_md_arg(f, c, &p))
            return false;
    }
    return !f->oom && push_piece(f, &p);
}

/* Parses a substitution format string into pieces appended to f->pieces; on success adds
 * one template element. */
static bool parse_template(wp_access_log_format *f, const char *s, size_t n, const char *prefix,
                           wf_strbuf *err)
{
    size_t first = f->npieces;
    wf_strbuf lit = WF_STRBUF_INIT;
    bool ok = true;
    for (size_t pos = 0; pos < n && ok;) {
        if (s[pos] != '%' || (pos + 1 < n && s[pos + 1] == '%')) {
            wf_strbuf_putc(&lit, s[pos]);
            pos += s[pos] == '%' ? 2 : 1;
            continue;
        }
        if (lit.len && !(ok = add_literal(f, lit.data, lit.len)))
            break;
        wf_strbuf_reset(&lit);
        alf_cmd c;
        if (!scan_command(s, pos, n, &c)) {
            errf(err, prefix,
                 "Incorrect configuration: %.*s. Couldn't find valid command at position %zu",
                 (int)n, s, pos);
            ok = false;
            break;
        }
        ok = add_command(f, &c, prefix, pos + 1, err);
        pos += c.total;
    }
    if (ok && (lit.len || f->npieces == first))
        ok = add_literal(f, lit.data ? lit.data : "", lit.len);
    if (wf_strbuf_failed(&lit))
        f->oom = ok = false;
    wf_strbuf_free(&lit);
    return ok && !f->oom && push_elem(f, true, first, f->npieces - first);
}

static wp_access_log_format *alf_new(wp_log_kind kind)
{
    wp_access_log_format *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->kind = kind;
    wf_arena_init(&f->arena);
    return f;
}

void wp_alf_free(wp_access_log_format *f)
{
    if (!f)
        return;
    wf_arena_destroy(&f->arena);
    free(f->pieces);
    free(f->elems);
    wf_strbuf_free(&f->raw);
    free(f);
}

bool wp_alf_is_json(const wp_access_log_format *f)
{
    return f && f->kind == WP_LOG_JSON;
}

wp_access_log_format *wp_alf_compile_text_at(const char *fmt, const char *at, wf_strbuf *err)
{
    if (!fmt)
        fmt = WP_ENVOY_DEFAULT_FORMAT;
    wp_access_log_format *f = alf_new(WP_LOG_TEXT);
    if (!f) {
        errf(err, NULL, "out of memory compiling access log format");
        return NULL;
    }
    char prefix[ALF_PREFIX_MAX];
    at_prefix(prefix, sizeof prefix, at);
    if (!parse_template(f, fmt, strlen(fmt), prefix, err) || f->oom) {
        if (f->oom)
            errf(err, NULL, "out of memory compiling access log format");
        wp_alf_free(f);
        return NULL;
    }
    return f;
}

wp_access_log_format *wp_alf_compile_text(const char *fmt, wf_strbuf *err)
{
    return wp_alf_compile_text_at(fmt, NULL, err);
}

/* ---------------------------------------------------------------- JSON compile ------ */

/* Appends raw JSON text produced by the caller into f->raw since offset off. */
static bool close_raw(wp_access_log_format *f, size_t off)
{
    if (wf_strbuf_failed(&f->raw)) {
        f->oom = true;
        return false;
    }
    return push_elem(f, false, off, f->raw.len - off);
}

static bool raw_text(wp_access_log_format *f, const char *s)
{
    size_t off = f->raw.len;
    wf_strbuf_puts(&f->raw, s);
    return close_raw(f, off);
}

/* Shortest "%.Ng" that reads back as d (fmt::to_string prints the shortest form). */
static void put_real(wf_strbuf *out, double d)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    wf_strbuf_puts(out, tmp);
}

typedef struct {
    const char *at; /* JSON path of the json_format in the configuration, NULL = unknown */
    char path[256];
    size_t len;
} key_path;

static bool compile_value(wp_access_log_format *f, const json_t *v, key_path *kp, int depth,
                          wf_strbuf *err);

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool compile_object(wp_access_log_format *f, const json_t *obj, key_path *kp, int depth,
                           wf_strbuf *err)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = n ? malloc(n * sizeof *keys) : NULL;
    if (n && !keys) {
        f->oom = true;
        return false;
    }
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)obj, k, val) keys[i++] = k;
    if (n)
        qsort(keys, n, sizeof *keys, cmp_keys);
    bool ok = raw_text(f, "{");
    for (i = 0; i < n && ok; i++) {
        size_t off = f->raw.len, saved = kp->len;
        if (i)
            wf_strbuf_putc(&f->raw, ',');
        json_quote(&f->raw, keys[i], strlen(keys[i]));
        wf_strbuf_putc(&f->raw, ':');
        ok = close_raw(f, off);
        int w = snprintf(kp->path + kp->len, sizeof kp->path - kp->len, "%s%s", kp->len ? "." : "",
                         keys[i]);
        if (w > 0)
            kp->len =
                kp->len + (size_t)w < sizeof kp->path ? kp->len + (size_t)w : sizeof kp->path - 1;
        ok = ok && compile_value(f, json_object_get(obj, keys[i]), kp, depth + 1, err);
        kp->len = saved;
        kp->path[saved] = '\0';
    }
    free(keys);
    return ok && raw_text(f, "}");
}

static bool compile_array(wp_access_log_format *f, const json_t *arr, key_path *kp, int depth,
                          wf_strbuf *err)
{
    bool ok = raw_text(f, "[");
    for (size_t i = 0; i < json_array_size(arr) && ok; i++) {
        if (i)
            ok = raw_text(f, ",");
        ok = ok && compile_value(f, json_array_get(arr, i), kp, depth + 1, err);
    }
    return ok && raw_text(f, "]");
}

static bool compile_string(wp_access_log_format *f, const json_t *v, key_path *kp, wf_strbuf *err)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (!memchr(s, '%', n)) {
        size_t off = f->raw.len;
        json_quote(&f->raw, s, n);
        return close_raw(f, off);
    }
    char prefix[ALF_PREFIX_MAX];
    if (kp->at && *kp->at)
        snprintf(prefix, sizeof prefix, "%s.%s: ", kp->at, kp->path);
    else
        snprintf(prefix, sizeof prefix, "json_format key \"%s\": ", kp->path);
    return parse_template(f, s, n, prefix, err);
}

static bool compile_value(wp_access_log_format *f, const json_t *v, key_path *kp, int depth,
                          wf_strbuf *err)
{
    if (depth > ALF_MAX_DEPTH) {
        char prefix[ALF_PREFIX_MAX];
        at_prefix(prefix, sizeof prefix, kp->at);
        errf(err, prefix, "json_format nested deeper than %d levels", ALF_MAX_DEPTH);
        return false;
    }
    size_t off = f->raw.len;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return compile_object(f, v, kp, depth, err);
    case JSON_ARRAY:
        return compile_array(f, v, kp, depth, err);
    case JSON_STRING:
        return compile_string(f, v, kp, err);
    case JSON_INTEGER:
        wf_strbuf_printf(&f->raw, "%lld", (long long)json_integer_value(v));
        return close_raw(f, off);
    case JSON_REAL:
        put_real(&f->raw, json_real_value(v));
        return close_raw(f, off);
    case JSON_TRUE:
        return raw_text(f, "true");
    case JSON_FALSE:
        return raw_text(f, "false");
    case JSON_NULL:
        return raw_text(f, "null");
    }
    return false;
}

wp_access_log_format *wp_alf_compile_json_at(const json_t *json_format, const char *at,
                                             wf_strbuf *err)
{
    if (!json_format || !json_is_object(json_format)) {
        char prefix[ALF_PREFIX_MAX];
        at_prefix(prefix, sizeof prefix, at);
        errf(err, prefix, "json_format must be a JSON object");
        return NULL;
    }
    wp_access_log_format *f = alf_new(WP_LOG_JSON);
    if (!f) {
        errf(err, NULL, "out of memory compiling access log format");
        return NULL;
    }
    key_path kp = {.at = at, .len = 0};
    kp.path[0] = '\0';
    if (!compile_object(f, json_format, &kp, 0, err) || f->oom) {
        if (f->oom)
            errf(err, NULL, "out of memory compiling access log format");
        wp_alf_free(f);
        return NULL;
    }
    return f;
}

wp_access_log_format *wp_alf_compile_json(const json_t *json_format, wf_strbuf *err)
{
    return wp_alf_compile_json_at(json_format, NULL, err);
}

/* ---------------------------------------------------------------- rendering --------- */

typedef enum { V_NONE, V_STR, V_NUM } alf_vkind;

typedef struct {
    alf_vkind kind;
    const char *s;
    size_t len;
    int64_t num;
    char buf[ALF_VALBUF];
} alf_val;

static void val_str(alf_val *v, const char *s)
{
    if (s && *s) {
        v->kind = V_STR;
        v->s = s;
        v->len = strlen(s);
    }
}

/* s with every space as '_' (Envoy's failure-reason operators), cut at the value buffer. */
static void val_str_nospace(alf_val *v, const char *s)
{
    if (!s || !*s)
        return;
    size_t n = strlen(s);
    if (n >= sizeof v->buf)
        n = sizeof v->buf - 1;
    for (size_t i = 0; i < n; i++)
        v->buf[i] = s[i] == ' ' ? '_' : s[i];
    v->buf[n] = '\0';
    v->kind = V_STR;
    v->s = v->buf;
    v->len = n;
}

static void val_num(alf_val *v, int64_t n)
{
    v->kind = V_NUM;
    v->num = n;
}

/* Duration between two monotonic instants in whole milliseconds; unset when to == 0. */
static void val_duration(alf_val *v, uint64_t from, uint64_t to)
{
    if (to == 0 || from == 0)
        return;
    val_num(v, ((int64_t)to - (int64_t)from) / 1000000);
}

/* "1.2.3.4:80" -> "1.2.3.4", "[::1]:80" -> "::1" (Envoy's formatDownstreamAddressNoPort). */
static void val_addr_noport(alf_val *v, const char *addr)
{
    if (!addr || !*addr)
        return;
    const char *colon = strrchr(addr, ':');
    const char *start = addr;
    size_t n = colon ? (size_t)(colon - addr) : strlen(addr);
    if (addr[0] == '[' && colon && colon > addr && colon[-1] == ']') {
        start = addr + 1;
        n -= 2;
    } else if (colon && memchr(addr, ':', n)) {
        n = strlen(addr); /* bare IPv6 without port */
    }
    if (n >= sizeof v->buf)
        n = sizeof v->buf - 1;
    memcpy(v->buf, start, n);
    v->buf[n] = '\0';
    val_str(v, v->buf);
}

static void val_flags(alf_val *v, const wp_stream_info *si, bool long_names)
{
    if (!long_names) {
        v->len = wp_si_flags_string(si, v->buf, sizeof v->buf);
    } else {
        size_t len = 0;
        for (size_t i = 0; i < si->nflags && i < WP_MAX_FLAGS; i++) {
            const char *name = wp_flag_long((wp_response_flag)si->flags[i]);
            int w = snprintf(v->buf + len, sizeof v->buf - len, "%s%s", len ? "," : "", name);
            if (w > 0 && (size_t)w < sizeof v->buf - len)
                len += (size_t)w;
        }
        if (len == 0)
            v->buf[len++] = '-';
        v->buf[len] = '\0';
        v->len = len;
    }
    v->kind = V_STR;
    v->s = v->buf;
}

static void val_header(alf_val *v, const alf_piece *p, const wp_stream_info *si)
{
    size_t len = 0;
    const char *h = NULL;
    const char *(*get)(const wp_stream_info *, const char *, size_t *) =
        p->op == OP_REQ    ? wp_si_req_header
        : p->op == OP_RESP ? wp_si_resp_header
                           : wp_si_resp_trailer;
    h = get(si, p->a, &len);
    if (!h && p->b && p->blen)
        h = get(si, p->b, &len);
    if (!h)
        return;
    if (p->has_max && len > p->max_len)
        len = p->max_len;
    v->kind = V_STR;
    v->s = h;
    v->len = len;
}

/* Grpc::Common::isGrpcRequestHeaders: a :path and a content-type of exactly
 * "application/grpc" or starting with "application/grpc+" (not "application/grpc-web"). */
static bool is_grpc_request(const wp_stream_info *si)
{
    size_t len = 0;
    if (!wp_si_req_header(si, ":path", NULL))
        return false;
    const char *ct = wp_si_req_header(si, "content-type", &len);
    return wf_grpc_content_type(ct, len);
}

/* Grpc::Common::getGrpcStatus of one header map (allow_user_defined): absent or empty =
 * false; a value absl::SimpleAtoi refuses = -1 (InvalidCode). */
static bool grpc_status_of(const char *h, size_t len, int64_t *code)
{
    if (!h || len == 0)
        return false;
    while (len && (*h == ' ' || *h == '\t')) /* SimpleAtoi skips surrounding whitespace */
        h++, len--;
    while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
        len--;
    if (len && *h == '+')
        h++, len--;
    uint64_t v = 0;
    *code = -1;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(h[i] - '0');
        if (h[i] < '0' || h[i] > '9' || v > (UINT64_MAX - d) / 10)
            return true;
        v = v * 10 + d;
    }
    if (len)
        *code = (int64_t)v;
    return true;
}

/* Envoy's GrpcStatusFormatter: unset unless the request is gRPC; the status from the
 * response trailers, else the response headers, else mapped from the response code; the
 * name in CamelCase or SNAKE_CASE (a code without a name prints its number, as a string),
 * or the number. */
static void val_grpc_status(alf_val *v, const alf_piece *p, const wp_stream_info *si)
{
    size_t len = 0;
    int64_t code = 0;
    if (!is_grpc_request(si))
        return;
    const char *t = wp_si_resp_trailer(si, "grpc-status", &len);
    if (!grpc_status_of(t, len, &code)) {
        const char *h = wp_si_resp_header(si, "grpc-status", &len);
        if (!grpc_status_of(h, len, &code)) {
            if (si->response_code == 0)
                return;
            code = wf_grpc_http_to_status(si->response_code);
        }
    }
    if (p->off2 == 1) {
        val_num(v, code);
        return;
    }
    const char *name = code >= 0 && code <= WF_GRPC_CODE_MAX
                           ? wf_grpc_code_name((unsigned)code, p->off2 == 2)
                           : NULL;
    if (!name) {
        snprintf(v->buf, sizeof v->buf, "%lld", (long long)code);
        name = v->buf;
    }
    val_str(v, name);
}

static void val_time(alf_val *v, const alf_piece *p, const wp_stream_info *si)
{
    if (si->start_time_us == 0)
        return;
    v->len = format_time(p->a, p->alen, si->start_time_us, v->buf, sizeof v->buf);
    v->kind = V_STR;
    v->s = v->buf;
}

static void val_counter_str(alf_val *v, uint64_t n)
{
    if (n == 0)
        return;
    snprintf(v->buf, sizeof v->buf, "%llu", (unsigned long long)n);
    val_str(v, v->buf);
}

static const char *si_str(const wp_stream_info *si, uint16_t off)
{
    return *(const char *const *)(const void *)((const char *)si + off);
}

static uint64_t si_u64(const wp_stream_info *si, uint16_t off)
{
    return *(const uint64_t *)(const void *)((const char *)si + off);
}

static void eval_special(const wp_access_log_format *f, const alf_piece *p,
                         const wp_stream_info *si, alf_val *v)
{
    switch (p->op) {
    case OP_DURATION: /* currentDuration(): up to now while the stream is still open */
        val_duration(v, si->start_ns, si->end_ns ? si->end_ns : uv_hrtime());
        break;
    case OP_START_TIME:
        val_time(v, p, si);
        break;
    case OP_RESPONSE_CODE:
        val_num(v, si->response_code);
        break;
    case OP_ATTEMPT_COUNT:
        val_num(v, si->attempt_count);
        break;
    case OP_FLAGS:
        val_flags(v, si, false);
        break;
    case OP_FLAGS_LONG:
        val_flags(v, si, true);
        break;
    case OP_UPSTREAM_CLUSTER: /* observabilityName(): alt_stat_name when set */
        val_str(v, si->upstream_cluster_stat ? si->upstream_cluster_stat : si->upstream_cluster);
        break;
    case OP_STREAM_ID:
        val_counter_str(v, si->stream_id);
        break;
    case OP_HOSTNAME:
        val_str(v, f->hostname);
        break;
    case OP_UPSTREAM_PROTOCOL:
        val_str(v, si->upstream_protocol ? si->upstream_protocol
                   : si->upstream_host   ? "HTTP/1.1"
                                         : NULL);
        break;
    case OP_GRPC_STATUS:
        val_grpc_status(v, p, si);
        break;
    case OP_DYN_MD: {
        const wp_dyn_md_entry *e = p->b ? wp_si_metadata(si, p->a, p->b) : NULL;
        val_str(v, e ? e->str : NULL);
        break;
    }
    case OP_UNSET:
    case OP_FILTER_STATE:
        break;
    default:
        val_header(v, p, si);
        break; /* REQ, RESP, TRAILER */
    }
}

static void eval(const wp_access_log_format *f, const alf_piece *p, const wp_stream_info *si,
                 alf_val *v)
{
    v->kind = V_NONE;
    switch (p->op) {
    case OP_LITERAL:
        v->kind = V_STR;
        v->s = p->a;
        v->len = p->alen;
        break;
    case OP_STR:
        val_str(v, si_str(si, p->off));
        break;
    case OP_STR_NOPORT:
        val_addr_noport(v, si_str(si, p->off));
        break;
    case OP_STR_NOSPACE:
        val_str_nospace(v, si_str(si, p->off));
        break;
    case OP_U64:
        val_num(v, (int64_t)si_u64(si, p->off));
        break;
    case OP_DUR:
        val_duration(v, si_u64(si, p->off), si_u64(si, p->off2));
        break;
    default:
        eval_special(f, p, si, v);
        break;
    }
}

static void put_num(wf_strbuf *out, int64_t n)
{
    char tmp[24];
    int w = snprintf(tmp, sizeof tmp, "%lld", (long long)n);
    wf_strbuf_append(out, tmp, (size_t)w);
}

static void render_text_tmpl(const wp_access_log_format *f, const alf_piece *p, size_t n,
                             const wp_stream_info *si, wf_strbuf *out, bool json_inner)
{
    alf_val v;
    for (size_t i = 0; i < n; i++) {
        eval(f, &p[i], si, &v);
        if (v.kind == V_NONE)
            wf_strbuf_putc(out, '-');
        else if (v.kind == V_NUM)
            put_num(out, v.num);
        else if (json_inner)
            json_escape(out, v.s, v.len);
        else
            wf_strbuf_append(out, v.s, v.len);
    }
}

static void render_json_tmpl(const wp_access_log_format *f, const alf_piece *p, size_t n,
                             const wp_stream_info *si, wf_strbuf *out)
{
    if (n != 1) {
        wf_strbuf_putc(out, '"');
        render_text_tmpl(f, p, n, si, out, true);
        wf_strbuf_putc(out, '"');
        return;
    }
    alf_val v;
    eval(f, p, si, &v);
    if (v.kind == V_NONE)
        wf_strbuf_append(out, "null", 4);
    else if (v.kind == V_NUM)
        put_num(out, v.num);
    else
        json_quote(out, v.s, v.len);
}

void wp_alf_render(const wp_access_log_format *f, const wp_stream_info *si, wf_strbuf *out)
{
    for (size_t i = 0; i < f->nelems; i++) {
        const alf_elem *e = &f->elems[i];
        if (!e->is_tmpl)
            wf_strbuf_append(out, f->raw.data + e->off, e->len);
        else if (f->kind == WP_LOG_JSON)
            render_json_tmpl(f, f->pieces + e->off, e->len, si, out);
        else
            render_text_tmpl(f, f->pieces + e->off, e->len, si, out, false);
    }
    if (f->kind == WP_LOG_JSON)
        wf_strbuf_putc(out, '\n');
}
