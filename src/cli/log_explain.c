/*
 * log_explain.c - reading access log lines for `weftctl log explain` (log_explain.h).
 *
 * A text format compiles to segments: literal text and command operators
 * (`%NAME%`, `%NAME(arg)%`, `%NAME(arg):N%`; START_TIME's argument may itself hold '%').
 * A line is matched against the segments with bounded backtracking: an operator's value ends
 * at an occurrence of the next literal, and operators that never hold spaces (codes, flags,
 * details, sizes, durations, clusters, addresses) may not take one, so Istio's and Envoy's
 * default formats tell themselves apart.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/log_explain.h"
#include "proxy/access_log/access_log.h"
#include "xds/istio_log.h"

const char WF_LX_ENVOY_DEFAULT_FORMAT[] =
    "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "
    "%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "
    "\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\"\n";

#define MAX_STEPS 200000

typedef enum field {
    FLD_NONE,
    FLD_CODE,
    FLD_FLAGS,
    FLD_DETAILS,
    FLD_CONN,
    FLD_TFR,
    FLD_DTFR,
    FLD_CLUSTER,
    FLD_ROUTE,
    FLD_HOST,
    FLD_METHOD,
    FLD_PATH,
    FLD_AUTHORITY,
    FLD_START,
    FLD_REQID,
    FLD_DURATION,
    FLD_UST,
    FLD_PROTO,
    FLD_UPROTO,
    FLD_UA,
    FLD_CT,
    FLD_GRPC,
    FLD_GRPC_TIMEOUT,
    FLD_BRX,
    FLD_BTX,
    FLD_SNI,
    FLD_DLOCAL,
} field;

typedef struct segment {
    char *text;     /* literal text, or the operator as written ("%RESPONSE_CODE%") */
    bool op;        /* an operator */
    bool spaceless; /* its value never holds a space */
    field fld;
    char *json_key; /* JSON formats: the key whose value is this operator */
} segment;

struct wf_lx_format {
    bool json;
    size_t n;
    segment *seg;
};

/* Which record field an operator fills, and whether its values can hold spaces. */
static field op_field(const char *op, bool *spaceless)
{
    static const struct {
        const char *prefix;
        field f;
        bool spaceless;
    } ops[] = {
        {"%RESPONSE_CODE_DETAILS", FLD_DETAILS, true},
        {"%RESPONSE_CODE%", FLD_CODE, true},
        {"%RESPONSE_FLAGS", FLD_FLAGS, true},
        {"%CONNECTION_TERMINATION_DETAILS", FLD_CONN, true},
        {"%UPSTREAM_TRANSPORT_FAILURE_REASON", FLD_TFR, false},
        {"%DOWNSTREAM_TRANSPORT_FAILURE_REASON", FLD_DTFR, false},
        {"%UPSTREAM_CLUSTER", FLD_CLUSTER, true},
        {"%ROUTE_NAME", FLD_ROUTE, true},
        {"%UPSTREAM_HOST", FLD_HOST, true},
        {"%REQ(:METHOD)", FLD_METHOD, true},
        {"%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)", FLD_PATH, true},
        {"%REQ(:PATH)", FLD_PATH, true},
        {"%REQ(:AUTHORITY)", FLD_AUTHORITY, true},
        {"%REQ(HOST)", FLD_AUTHORITY, true},
        {"%START_TIME", FLD_START, false},
        {"%REQ(X-REQUEST-ID)", FLD_REQID, true},
        {"%DURATION", FLD_DURATION, true},
        {"%BYTES_RECEIVED%", FLD_BRX, true},
        {"%BYTES_SENT%", FLD_BTX, true},
        {"%BYTES_", FLD_NONE, true},
        {"%PROTOCOL", FLD_PROTO, true},
        {"%UPSTREAM_PROTOCOL", FLD_UPROTO, true},
        {"%REQ(USER-AGENT)", FLD_UA, false},
        {"%REQ(CONTENT-TYPE)", FLD_CT, true},
        {"%REQ(GRPC-TIMEOUT)", FLD_GRPC_TIMEOUT, true},
        {"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)", FLD_UST, true},
        {"%UPSTREAM_LOCAL_ADDRESS", FLD_NONE, true},
        {"%DOWNSTREAM_LOCAL_ADDRESS%", FLD_DLOCAL, true},
        {"%DOWNSTREAM_", FLD_NONE, true},
        {"%REQUESTED_SERVER_NAME", FLD_SNI, true},
        {"%UPSTREAM_REQUEST_ATTEMPT_COUNT", FLD_NONE, true},
        {"%REQUEST_DURATION", FLD_NONE, true},
        {"%RESPONSE_DURATION", FLD_NONE, true},
        {"%GRPC_STATUS", FLD_GRPC, true},
        {"%CONNECTION_ID", FLD_NONE, true},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strncmp(op, ops[i].prefix, strlen(ops[i].prefix)) == 0) {
            *spaceless = ops[i].spaceless;
            return ops[i].f;
        }
    *spaceless = false;
    return FLD_NONE;
}

/* Length of the operator starting at s ('%'), 0 when s does not start one. */
static size_t op_len(const char *s)
{
    const char *p = s + 1;
    if (!isupper((unsigned char)*p))
        return 0;
    while (isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')
        p++;
    if (*p == '(') {
        const char *close = strchr(p, ')');
        if (!close)
            return 0;
        p = close + 1;
    }
    if (*p == ':')
        for (p++; isdigit((unsigned char)*p);)
            p++;
    return *p == '%' ? (size_t)(p + 1 - s) : 0;
}

static int add_seg(wf_lx_format *f, const char *s, size_t len, bool op)
{
    segment *v = realloc(f->seg, (f->n + 1) * sizeof *v);
    if (!v)
        return -1;
    f->seg = v;
    segment *g = &f->seg[f->n];
    memset(g, 0, sizeof *g);
    g->text = strndup(s, len);
    if (!g->text)
        return -1;
    f->n++;
    g->op = op;
    if (op)
        g->fld = op_field(g->text, &g->spaceless);
    return 0;
}

static int compile_text(wf_lx_format *f, const char *fmt)
{
    const char *lit = fmt, *p = fmt;
    while (*p) {
        size_t ol = *p == '%' ? op_len(p) : 0;
        if (!ol) {
            p++;
            continue;
        }
        if (p > lit && add_seg(f, lit, (size_t)(p - lit), false))
            return -1;
        if (add_seg(f, p, ol, true))
            return -1;
        p += ol;
        lit = p;
    }
    size_t tail = strlen(lit);
    while (tail && (lit[tail - 1] == '\n' || lit[tail - 1] == '\r'))
        tail--;
    return tail ? add_seg(f, lit, tail, false) : 0;
}

static int compile_json(wf_lx_format *f, json_t *obj)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        const char *s = json_string_value(v);
        size_t ol = s && *s == '%' ? op_len(s) : 0;
        if (!ol)
            continue;
        if (add_seg(f, s, ol, true))
            return -1;
        f->seg[f->n - 1].json_key = strdup(key);
        if (!f->seg[f->n - 1].json_key)
            return -1;
    }
    return 0;
}

wf_lx_format *wf_lx_format_new(const char *fmt, wf_strbuf *err)
{
    wf_lx_format *f = calloc(1, sizeof *f);
    if (!f) {
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    json_t *obj = NULL;
    const char *p = fmt;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '{' && (obj = json_loads(fmt, 0, NULL)) != NULL && json_is_object(obj))
        f->json = true;
    /* the operators must be Envoy's: the proxy's own access-log compiler says which are */
    wf_strbuf why = WF_STRBUF_INIT;
    wp_access_log_format *check =
        f->json ? wp_alf_compile_json(obj, &why) : wp_alf_compile_text(fmt, &why);
    if (!check) {
        wf_strbuf_printf(err, "format %s: %s", fmt, wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        json_decref(obj);
        wf_lx_format_free(f);
        return NULL;
    }
    wp_alf_free(check);
    wf_strbuf_free(&why);
    int rc = f->json ? compile_json(f, obj) : compile_text(f, fmt);
    json_decref(obj);
    size_t ops = 0;
    for (size_t i = 0; i < f->n; i++)
        ops += f->seg[i].op;
    if (rc || !ops) {
        wf_strbuf_printf(err,
                         rc ? "out of memory"
                            : "format %s names no command operator "
                              "(%%NAME%%)",
                         fmt);
        wf_lx_format_free(f);
        return NULL;
    }
    return f;
}

void wf_lx_format_free(wf_lx_format *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        free(f->seg[i].text);
        free(f->seg[i].json_key);
    }
    free(f->seg);
    free(f);
}

/* Stores a value ("-" and "" mean absent). Returns -1 when a numeric field is not a number. */
static int set_field(wf_lx_record *r, field f, const char *v, size_t len)
{
    if (len == 0 || (len == 1 && v[0] == '-'))
        return 0;
    if (f == FLD_CODE) {
        int code = 0;
        for (size_t i = 0; i < len; i++) {
            if (!isdigit((unsigned char)v[i]) || i > 3)
                return -1;
            code = code * 10 + (v[i] - '0');
        }
        r->code = code;
        return 0;
    }
    if (f == FLD_CLUSTER && v[len - 1] == ';')
        len--; /* %UPSTREAM_CLUSTER% prints Istio's alt_stat_name "<name>;" */
    char **slot[] = {[FLD_FLAGS] = &r->flags,
                     [FLD_DETAILS] = &r->details,
                     [FLD_CONN] = &r->conn_details,
                     [FLD_TFR] = &r->tfr,
                     [FLD_DTFR] = &r->dtfr,
                     [FLD_CLUSTER] = &r->cluster,
                     [FLD_ROUTE] = &r->route,
                     [FLD_HOST] = &r->host,
                     [FLD_METHOD] = &r->method,
                     [FLD_PATH] = &r->path,
                     [FLD_AUTHORITY] = &r->authority,
                     [FLD_START] = &r->start_time,
                     [FLD_REQID] = &r->request_id,
                     [FLD_DURATION] = &r->duration,
                     [FLD_UST] = &r->upstream_service_time,
                     [FLD_PROTO] = &r->protocol,
                     [FLD_UPROTO] = &r->upstream_protocol,
                     [FLD_UA] = &r->user_agent,
                     [FLD_CT] = &r->content_type,
                     [FLD_GRPC] = &r->grpc_status,
                     [FLD_GRPC_TIMEOUT] = &r->grpc_timeout,
                     [FLD_BRX] = &r->bytes_received,
                     [FLD_BTX] = &r->bytes_sent,
                     [FLD_SNI] = &r->sni,
                     [FLD_DLOCAL] = &r->downstream_local};
    if (f == FLD_NONE || f >= sizeof slot / sizeof slot[0] || !slot[f])
        return 0;
    free(*slot[f]);
    *slot[f] = strndup(v, len);
    return *slot[f] ? 0 : -1;
}

static bool value_ok(const segment *g, const char *v, size_t len)
{
    if (g->spaceless && memchr(v, ' ', len))
        return false;
    if (g->fld == FLD_CODE) {
        if (len == 1 && v[0] == '-')
            return true;
        for (size_t i = 0; i < len; i++)
            if (!isdigit((unsigned char)v[i]))
                return false;
        return len > 0 && len <= 3;
    }
    return true;
}

typedef struct matcher {
    const wf_lx_format *f;
    const char *line;
    size_t len;
    size_t *starts, *ends; /* value bounds per segment */
    long steps;
} matcher;

static bool match_from(matcher *m, size_t i, size_t pos)
{
    if (++m->steps > MAX_STEPS)
        return false;
    if (i == m->f->n)
        return pos == m->len;
    const segment *g = &m->f->seg[i];
    if (!g->op) {
        size_t tl = strlen(g->text);
        return pos + tl <= m->len && strncmp(m->line + pos, g->text, tl) == 0 &&
               match_from(m, i + 1, pos + tl);
    }
    m->starts[i] = pos;
    if (i + 1 == m->f->n) {
        m->ends[i] = m->len;
        return value_ok(g, m->line + pos, m->len - pos);
    }
    const segment *next = &m->f->seg[i + 1];
    if (next->op) { /* two operators in a row: the first ends at a space */
        const char *sp = memchr(m->line + pos, ' ', m->len - pos);
        size_t end = sp ? (size_t)(sp - m->line) : m->len;
        m->ends[i] = end;
        return value_ok(g, m->line + pos, end - pos) && match_from(m, i + 1, end);
    }
    for (const char *p = m->line + pos; (p = strstr(p, next->text)) != NULL; p++) {
        size_t end = (size_t)(p - m->line);
        if (end > m->len)
            break;
        if (!value_ok(g, m->line + pos, end - pos))
            break; /* a longer value would only hold more */
        m->ends[i] = end;
        if (match_from(m, i + 1, end))
            return true;
    }
    return false;
}

static int parse_text(const wf_lx_format *f, const char *line, wf_lx_record *out)
{
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    char *copy = strndup(line, len);
    size_t *b = calloc(2 * (f->n + 1), sizeof *b);
    int rc = -1;
    matcher m = {f, copy, len, b, b ? b + f->n + 1 : NULL, 0};
    if (copy && b && match_from(&m, 0, 0)) {
        rc = 0;
        for (size_t i = 0; i < f->n && rc == 0; i++)
            if (f->seg[i].op)
                rc = set_field(out, f->seg[i].fld, copy + m.starts[i], m.ends[i] - m.starts[i]);
    }
    free(copy);
    free(b);
    return rc;
}

static int json_value(wf_lx_record *out, field fld, json_t *v)
{
    char num[32];
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return set_field(out, fld, num, strlen(num));
    }
    const char *s = json_string_value(v);
    return s ? set_field(out, fld, s, strlen(s)) : 0; /* null: absent */
}

static int parse_json(const wf_lx_format *f, const char *line, wf_lx_record *out)
{
    static const struct {
        const char *key;
        field f;
    } istio_keys[] = {
        {"response_code", FLD_CODE},
        {"response_flags", FLD_FLAGS},
        {"response_code_details", FLD_DETAILS},
        {"connection_termination_details", FLD_CONN},
        {"upstream_transport_failure_reason", FLD_TFR},
        {"downstream_transport_failure_reason", FLD_DTFR},
        {"upstream_cluster", FLD_CLUSTER},
        {"route_name", FLD_ROUTE},
        {"upstream_host", FLD_HOST},
        {"method", FLD_METHOD},
        {"path", FLD_PATH},
        {"authority", FLD_AUTHORITY},
        {"start_time", FLD_START},
        {"request_id", FLD_REQID},
        {"duration", FLD_DURATION},
        {"upstream_service_time", FLD_UST},
        {"protocol", FLD_PROTO},
        {"upstream_protocol", FLD_UPROTO},
        {"user_agent", FLD_UA},
        {"content_type", FLD_CT},
        {"grpc_status", FLD_GRPC},
        {"grpc_timeout", FLD_GRPC_TIMEOUT},
        {"bytes_received", FLD_BRX},
        {"bytes_sent", FLD_BTX},
        {"requested_server_name", FLD_SNI},
        {"downstream_local_address", FLD_DLOCAL},
    };
    json_t *o = json_loads(line, 0, NULL);
    int rc = json_is_object(o) ? 0 : -1;
    bool any = false;
    if (rc == 0 && f && f->json) {
        for (size_t i = 0; i < f->n && rc == 0; i++) {
            json_t *v = json_object_get(o, f->seg[i].json_key);
            any |= v != NULL;
            rc = v ? json_value(out, f->seg[i].fld, v) : 0;
        }
    } else if (rc == 0) {
        for (size_t i = 0; i < sizeof istio_keys / sizeof istio_keys[0] && rc == 0; i++) {
            json_t *v = json_object_get(o, istio_keys[i].key);
            any |= v != NULL && istio_keys[i].f == FLD_CODE;
            rc = v ? json_value(out, istio_keys[i].f, v) : 0;
        }
    }
    json_decref(o);
    return rc == 0 && any ? 0 : -1;
}

int wf_lx_parse_line(const wf_lx_format *fmt, const char *line, wf_lx_record *out)
{
    memset(out, 0, sizeof *out);
    out->code = -1;
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    int rc = -1;
    if (*p == '{' && (!fmt || fmt->json)) {
        rc = parse_json(fmt, p, out);
    } else if (fmt && !fmt->json) {
        rc = parse_text(fmt, line, out);
    } else if (!fmt) {
        const char *defaults[2] = {WF_ISTIO_TEXT_FORMAT, WF_LX_ENVOY_DEFAULT_FORMAT};
        for (int i = 0; i < 2 && rc; i++) {
            wf_strbuf err = WF_STRBUF_INIT;
            wf_lx_format *f = wf_lx_format_new(defaults[i], &err);
            wf_strbuf_free(&err);
            wf_lx_record_free(out);
            out->code = -1;
            rc = f ? parse_text(f, line, out) : -1;
            wf_lx_format_free(f);
        }
    }
    if (rc)
        wf_lx_record_free(out);
    return rc;
}
