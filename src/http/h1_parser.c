/*
 * h1_parser.c - HTTP/1.x pull parser (h1_parser.h): a head scanner that finds the end of a
 * head or trailer section without consuming, a line parser for the complete head, framing
 * decisions from the fields, and byte state machines for chunked and length bodies.
 */
#include "http/h1_parser.h"

#include <string.h>
#include <strings.h>

#include "core/hex.h"

enum {
    S_HEAD,
    S_BODY_LEN,
    S_CHUNK_SIZE,
    S_CHUNK_BWS,
    S_CHUNK_EXT,
    S_CHUNK_SIZE_LF,
    S_CHUNK_DATA,
    S_CHUNK_DATA_CR,
    S_CHUNK_DATA_LF,
    S_TRAILERS,
    S_BODY_CLOSE,
    S_DONE,
    S_UPGRADED,
    S_ERROR,
};

/* ---- character classes ---- */

/* Character classes as one constant table (RFC 9110 §5.6.2 tchar, §5.5 field-vchar), so the
 * per-byte checks of a head cost one load each. */
enum { C_TCHAR = 1, C_VCHAR = 2, C_VALUE = 4 };
#define IS_TCHAR_(c)                                                                               \
    (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') ||     \
     (c) == '!' || (c) == '#' || (c) == '$' || (c) == '%' || (c) == '&' || (c) == '\'' ||          \
     (c) == '*' || (c) == '+' || (c) == '-' || (c) == '.' || (c) == '^' || (c) == '_' ||           \
     (c) == '`' || (c) == '|' || (c) == '~')
#define IS_VCHAR_(c) ((c) >= 0x21 && (c) <= 0x7e)
#define CLS_(c)                                                                                    \
    ((IS_TCHAR_(c) ? C_TCHAR : 0) | (IS_VCHAR_(c) ? C_VCHAR : 0) |                                 \
     (IS_VCHAR_(c) || (c) >= 0x80 || (c) == ' ' || (c) == '\t' ? C_VALUE : 0))
#define CLS4_(c)  CLS_(c), CLS_((c) + 1), CLS_((c) + 2), CLS_((c) + 3)
#define CLS16_(c) CLS4_(c), CLS4_((c) + 4), CLS4_((c) + 8), CLS4_((c) + 12)
#define CLS64_(c) CLS16_(c), CLS16_((c) + 16), CLS16_((c) + 32), CLS16_((c) + 48)
static const unsigned char char_class[256] = {CLS64_(0), CLS64_(64), CLS64_(128), CLS64_(192)};

static bool is_tchar(unsigned char c)
{
    return char_class[c] & C_TCHAR;
}

static bool is_vchar(unsigned char c)
{
    return char_class[c] & C_VCHAR;
}

static bool is_value_char(unsigned char c)
{
    return char_class[c] & C_VALUE;
}

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Case-insensitive comparison of s with a lower-case literal of length n. */
static bool ieq_n(h1_str s, const char *lit, size_t n)
{
    if (s.len != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s.p[i]) != (unsigned char)lit[i])
            return false;
    return true;
}

/* str_ieq(s, "literal"): the literal must be lower case; its length is known at compile time,
 * so most comparisons end at the length check. */
#define str_ieq(s, lit) ieq_n((s), "" lit, sizeof(lit) - 1)

/* Every byte a field-value may hold (VCHAR, obs-text, SP, HTAB), eight at a time: a word
 * with no byte below 0x20 and no DEL needs no closer look (the "has less than" and "has
 * zero" bit tricks); a word that has one is checked byte by byte (HTAB is allowed). */
static bool value_ok(const unsigned char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w, del;
        memcpy(&w, p + i, 8);
        del = w ^ (0x7f * ones);
        if (((w - 0x20 * ones) & ~w & highs) | ((del - ones) & ~del & highs))
            for (size_t k = i; k < i + 8; k++)
                if (!is_value_char(p[k]))
                    return false;
    }
    for (; i < n; i++)
        if (!is_value_char(p[i]))
            return false;
    return true;
}

static inline h1_str trim_ows(h1_str s)
{
    while (s.len && is_ws((unsigned char)s.p[0])) {
        s.p++;
        s.len--;
    }
    while (s.len && is_ws((unsigned char)s.p[s.len - 1]))
        s.len--;
    return s;
}

/* Next comma-separated element of *rest (OWS trimmed; empty elements skipped). */
static bool list_next(h1_str *rest, h1_str *elem)
{
    while (rest->len) {
        const char *comma = memchr(rest->p, ',', rest->len);
        size_t n = comma ? (size_t)(comma - rest->p) : rest->len;
        *elem = trim_ows((h1_str){rest->p, n});
        rest->p += comma ? n + 1 : n;
        rest->len -= comma ? n + 1 : n;
        if (elem->len)
            return true;
    }
    return false;
}

/* ---- setup ---- */

void h1_parser_init(h1_parser *p, h1_kind kind, h1_header *headers, size_t max_headers,
                    size_t max_head_bytes)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->hdr_array = headers;
    p->hdr_cap = max_headers;
    p->max_head = max_head_bytes ? max_head_bytes : H1_DEFAULT_MAX_HEAD_BYTES;
    h1_parser_reset(p);
}

void h1_parser_reset(h1_parser *p)
{
    memset(&p->msg, 0, sizeof p->msg);
    p->data = NULL;
    p->data_len = 0;
    p->error = H1_OK;
    p->state = S_HEAD;
    p->scan = p->line_start = 0;
    p->remaining = 0;
    p->chunk_digits = p->chunk_ext = 0;
}

void h1_parser_set_answers(h1_parser *p, h1_answers a)
{
    p->answers = a;
}

static size_t fail(h1_parser *p, h1_error e, h1_event *ev)
{
    p->error = e;
    p->state = S_ERROR;
    *ev = H1_EV_ERROR;
    return 0;
}

/* ---- block scanner: finds the empty line ending a head or trailer section ---- */

/* 1: block complete, *end set; 0: need more; <0: -error. Every line must end in CRLF: a LF
 * without its CR is refused here, as is a NUL anywhere in the head; a CR without its LF stays
 * inside its line and is refused by the line parsers (classify_error names it). The search
 * jumps from LF to LF with memchr, so a head costs a few vectorised scans, not a branch per
 * byte. */
static int scan_block(h1_parser *p, const char *b, size_t len, size_t *end)
{
    size_t cap = len < p->max_head ? len : p->max_head;
    size_t from = p->scan, i = from;
    int r = 0;
    while (i < cap) {
        const char *lf = memchr(b + i, '\n', cap - i);
        if (!lf) {
            i = b[cap - 1] == '\r' ? cap - 1 : cap; /* a CR waits for its LF unscanned */
            break;
        }
        size_t j = (size_t)(lf - b);
        if (j == p->line_start || b[j - 1] != '\r') {
            i = j; /* a NUL before the LF is the earlier fault, however the bytes arrived */
            r = -H1_ERR_BARE_LF;
            break;
        }
        i = j + 1;
        if (j - 1 == p->line_start) {
            *end = i;
            r = 1;
            break;
        }
        p->line_start = i;
    }
    if (memchr(b + from, 0, (r == 1 ? *end : i) - from))
        return -H1_ERR_NUL;
    p->scan = i;
    if (r != 0)
        return r;
    return len >= p->max_head ? -H1_ERR_HEADERS_TOO_LARGE : 0;
}

/* A line that failed to parse: a bare CR inside it is the better name for the fault. */
static h1_error classify_error(const char *b, size_t end, h1_error e)
{
    for (const char *cr = memchr(b, '\r', end); cr;
         cr = memchr(cr + 2, '\r', end - (size_t)(cr + 2 - b)))
        if (cr[1] != '\n')
            return H1_ERR_BARE_CR;
    return e;
}

/* The line starting at *pos (scan_block proved it ends in CRLF before end); *pos moves past
 * the CRLF. */
static h1_str next_line(const char *b, size_t end, size_t *pos)
{
    const char *s = b + *pos;
    const char *lf = memchr(s, '\n', end - *pos);
    h1_str line = {s, (size_t)(lf - s) - 1};
    *pos += line.len + 2;
    return line;
}

/* ---- start lines ---- */

static h1_error parse_version(h1_str v, int *minor)
{
    if (v.len != 8 || memcmp(v.p, "HTTP/1.", 7) != 0)
        return H1_ERR_INVALID_VERSION;
    if (v.p[7] != '0' && v.p[7] != '1')
        return H1_ERR_INVALID_VERSION;
    *minor = v.p[7] - '0';
    return H1_OK;
}

static h1_error parse_request_line(h1_str l, h1_message *m)
{
    size_t i = 0;
    while (i < l.len && is_tchar((unsigned char)l.p[i]))
        i++;
    if (i < l.len && l.p[i] != ' ')
        return H1_ERR_INVALID_METHOD;
    if (i == 0 || i == l.len)
        return H1_ERR_INVALID_START_LINE;
    m->method = (h1_str){l.p, i};
    size_t t = ++i;
    while (i < l.len && is_vchar((unsigned char)l.p[i]))
        i++;
    if (i < l.len && l.p[i] != ' ')
        return H1_ERR_INVALID_TARGET;
    if (i == t || i == l.len)
        return H1_ERR_INVALID_START_LINE;
    m->target = (h1_str){l.p + t, i - t};
    i++;
    return parse_version((h1_str){l.p + i, l.len - i}, &m->version_minor);
}

static h1_error parse_status_line(h1_str l, h1_message *m)
{
    if (l.len < 8)
        return H1_ERR_INVALID_VERSION;
    h1_error e = parse_version((h1_str){l.p, 8}, &m->version_minor);
    if (e)
        return e;
    if (l.len < 12 || l.p[8] != ' ')
        return H1_ERR_INVALID_START_LINE;
    int st = 0;
    for (size_t i = 9; i < 12; i++) {
        if (l.p[i] < '0' || l.p[i] > '9')
            return H1_ERR_INVALID_START_LINE;
        st = st * 10 + (l.p[i] - '0');
    }
    if (st < 100 || (l.len > 12 && l.p[12] != ' '))
        return H1_ERR_INVALID_START_LINE;
    m->status = st;
    m->reason = (h1_str){l.p + 12 + (l.len > 12), l.len > 12 ? l.len - 13 : 0};
    for (size_t i = 0; i < m->reason.len; i++)
        if (!is_value_char((unsigned char)m->reason.p[i]))
            return H1_ERR_INVALID_START_LINE;
    return H1_OK;
}

/* ---- field lines ---- */

static h1_error parse_field(h1_str l, h1_header *h)
{
    if (is_ws((unsigned char)l.p[0]))
        return H1_ERR_OBS_FOLD;
    size_t i = 0;
    while (i < l.len && is_tchar((unsigned char)l.p[i]))
        i++;
    if (i < l.len && is_ws((unsigned char)l.p[i]))
        return H1_ERR_WS_BEFORE_COLON;
    if (i == 0 || i == l.len || l.p[i] != ':')
        return H1_ERR_INVALID_FIELD_NAME;
    h->name = (h1_str){l.p, i};
    h->value = trim_ows((h1_str){l.p + i + 1, l.len - i - 1});
    return value_ok((const unsigned char *)h->value.p, h->value.len) ? H1_OK
                                                                     : H1_ERR_INVALID_FIELD_VALUE;
}

/* Field lines from *pos up to the empty line; fields go to p->hdr_array[first..]. */
static h1_error parse_fields(h1_parser *p, const char *b, size_t end, size_t *pos, size_t first,
                             size_t *n)
{
    *n = 0;
    for (;;) {
        h1_str line = next_line(b, end, pos);
        if (line.len == 0)
            return H1_OK;
        if (first + *n >= p->hdr_cap)
            return H1_ERR_TOO_MANY_HEADERS;
        h1_error e = parse_field(line, &p->hdr_array[first + *n]);
        if (e)
            return e;
        (*n)++;
    }
}

/* ---- framing and connection semantics (RFC 9112 §6, §9.3) ---- */

typedef struct {
    bool has_cl, has_te, te_chunked_last, te_non_token, conn_close, conn_keep_alive;
    bool conn_upgrade, has_upgrade, proxy_close;
    unsigned te_codings, te_chunked, hosts; /* codings counted over every TE line */
    uint64_t cl;
} field_facts;

/* A response may carry Content-Length once, one value: Envoy's codec refuses any repetition
 * in a response (balsa's disallow_multiple_content_length); a request may repeat the same
 * value (RFC 9112 §6.3). */
static h1_error parse_cl_value(h1_kind kind, h1_str v, field_facts *f)
{
    h1_str elem;
    bool any = false;
    while (list_next(&v, &elem)) {
        if (kind == H1_RESPONSE && f->has_cl)
            return H1_ERR_CL_DIFFERENT;
        uint64_t n = 0;
        for (size_t i = 0; i < elem.len; i++) {
            unsigned d = (unsigned char)elem.p[i] - '0';
            if (d > 9 || n > (UINT64_MAX - d) / 10)
                return H1_ERR_CL_INVALID;
            n = n * 10 + d;
        }
        if (f->has_cl && n != f->cl)
            return H1_ERR_CL_DIFFERENT;
        f->has_cl = any = true;
        f->cl = n;
    }
    return any ? H1_OK : H1_ERR_CL_INVALID;
}

/* Records the codings of one Transfer-Encoding line; repeated lines add up as one comma
 * list (RFC 9110 §5.3), which is also how Envoy's header map joins them. A non-token coding
 * fails a response at once; a request is judged as a whole later (decide_request_te). */
static h1_error parse_te_value(h1_kind kind, h1_str v, field_facts *f)
{
    h1_str elem;
    f->has_te = true;
    while (list_next(&v, &elem)) {
        f->te_non_token |= !is_tchar((unsigned char)elem.p[0]);
        f->te_chunked_last = str_ieq(elem, "chunked");
        f->te_chunked += f->te_chunked_last;
        f->te_codings++;
    }
    return kind == H1_RESPONSE && f->te_non_token ? H1_ERR_TE_INVALID : H1_OK;
}

static bool has_close_token(h1_str v)
{
    h1_str elem;
    while (list_next(&v, &elem))
        if (str_ieq(elem, "close"))
            return true;
    return false;
}

static void parse_connection(h1_str v, field_facts *f)
{
    h1_str elem;
    while (list_next(&v, &elem)) {
        f->conn_close |= str_ieq(elem, "close");
        f->conn_keep_alive |= str_ieq(elem, "keep-alive");
        f->conn_upgrade |= str_ieq(elem, "upgrade");
    }
}

static h1_error collect_facts(h1_parser *p, field_facts *f)
{
    h1_message *m = &p->msg;
    for (size_t i = 0; i < m->nheaders; i++) {
        const h1_header *h = &m->headers[i];
        h1_error e = H1_OK;
        switch (h->name.len) { /* one comparison at most per field */
        case 14:
            if (str_ieq(h->name, "content-length"))
                e = parse_cl_value(p->kind, h->value, f);
            break;
        case 17:
            if (str_ieq(h->name, "transfer-encoding"))
                e = parse_te_value(p->kind, h->value, f);
            break;
        case 10:
            if (str_ieq(h->name, "connection"))
                parse_connection(h->value, f);
            break;
        case 7:
            f->has_upgrade |= str_ieq(h->name, "upgrade");
            break;
        case 16: /* Envoy's shouldCloseConnection honours Proxy-Connection: close too */
            if (str_ieq(h->name, "proxy-connection"))
                f->proxy_close |= has_close_token(h->value);
            break;
        case 4:
            f->hosts += str_ieq(h->name, "host");
            break;
        case 6:
            if (p->kind == H1_REQUEST && str_ieq(h->name, "expect"))
                m->expect_continue = m->version_minor == 1 && str_ieq(h->value, "100-continue");
            break;
        default:
            break;
        }
        if (e)
            return e;
    }
    return H1_OK;
}

static bool response_has_no_body(const h1_parser *p)
{
    int st = p->msg.status;
    return p->answers == H1_ANSWERS_HEAD || st < 200 || st == 204 || st == 304 ||
           (p->answers == H1_ANSWERS_CONNECT && st < 300);
}

/* Envoy's codec answers a request whose Transfer-Encoding value (all lines joined) is not
 * exactly "chunked" (case-insensitive) with 501 http1.invalid_transfer_encoding: "gzip,
 * chunked", "identity, chunked", "chunked, chunked", a gzip line plus a chunked line and a
 * quoted coding all qualify. A lone "chunked" in HTTP/1.0 is faulty framing (RFC 9112 §6.1). */
static h1_error decide_request_te(h1_parser *p, const field_facts *f)
{
    if (f->te_codings != 1 || f->te_chunked != 1)
        return H1_ERR_TE_NOT_CHUNKED;
    if (p->msg.version_minor == 0)
        return H1_ERR_TE_INVALID;
    p->msg.framing = H1_BODY_CHUNKED;
    return H1_OK;
}

/* Responses, as Envoy's codec: a Transfer-Encoding other than exactly one "chunked" coding
 * is a protocol error ("unsupported transfer encoding"), so no coding is dropped on the way. */
static h1_error decide_te(h1_parser *p, const field_facts *f)
{
    if (p->kind == H1_REQUEST)
        return decide_request_te(p, f);
    if (f->te_codings != 1 || f->te_chunked != 1)
        return H1_ERR_TE_INVALID;
    p->msg.framing = H1_BODY_CHUNKED;
    return H1_OK;
}

static h1_error decide_framing(h1_parser *p, const field_facts *f)
{
    h1_message *m = &p->msg;
    if (f->has_cl && f->has_te)
        return H1_ERR_CL_AND_TE;
    if (p->kind == H1_RESPONSE && (m->status < 200 || m->status == 204)) {
        /* Envoy's codec: "transfer encoding not allowed in 1xx or 204", and no
         * Content-Length but 0 */
        if (f->has_te)
            return H1_ERR_TE_INVALID;
        if (f->has_cl && f->cl != 0)
            return H1_ERR_CL_INVALID;
    }
    if (p->kind == H1_RESPONSE && response_has_no_body(p)) {
        m->framing = H1_BODY_NONE;
        return H1_OK;
    }
    if (f->has_te)
        return decide_te(p, f);
    if (f->has_cl) {
        m->framing = f->cl ? H1_BODY_LENGTH : H1_BODY_NONE;
        m->content_length = f->cl;
    } else {
        m->framing = p->kind == H1_REQUEST ? H1_BODY_NONE : H1_BODY_UNTIL_CLOSE;
    }
    return H1_OK;
}

static h1_error apply_semantics(h1_parser *p)
{
    h1_message *m = &p->msg;
    field_facts f = {0};
    h1_error e = collect_facts(p, &f);
    if (!e && f.hosts > 1 && p->kind == H1_REQUEST)
        e = H1_ERR_DUPLICATE_HOST;
    if (!e)
        e = decide_framing(p, &f);
    if (e)
        return e;
    m->keep_alive = m->version_minor == 1 ? !f.conn_close : f.conn_keep_alive && !f.conn_close;
    m->keep_alive = m->keep_alive && !f.proxy_close;
    m->close_asked = !m->keep_alive;
    if (m->framing == H1_BODY_UNTIL_CLOSE)
        m->keep_alive = false;
    if (p->kind == H1_REQUEST)
        m->upgrade = (f.has_upgrade && f.conn_upgrade) || str_ieq(m->method, "connect");
    else
        m->upgrade = m->status == 101 ||
                     (p->answers == H1_ANSWERS_CONNECT && m->status >= 200 && m->status < 300);
    return H1_OK;
}

/* ---- head ---- */

static h1_error parse_head_block(h1_parser *p, const char *b, size_t end)
{
    h1_message *m = &p->msg;
    size_t pos = 0;
    h1_str line = next_line(b, end, &pos);
    h1_error e = p->kind == H1_REQUEST ? parse_request_line(line, m) : parse_status_line(line, m);
    if (e)
        return e;
    m->headers = p->hdr_array;
    e = parse_fields(p, b, end, &pos, 0, &m->nheaders);
    return e ? e : apply_semantics(p);
}

/* Empty lines before a request line are ignored (RFC 9112 §2.2), CRLF or a bare LF (a
 * recipient may take LF as a line end), as Envoy's parsers skip them. */
static size_t skip_empty_lines(h1_parser *p, const char *b, size_t len)
{
    size_t i = 0;
    if (p->kind != H1_REQUEST || p->scan != 0)
        return 0;
    for (;;) {
        if (i < len && b[i] == '\n')
            i++;
        else if (i + 1 < len && b[i] == '\r' && b[i + 1] == '\n')
            i += 2;
        else
            return i;
    }
}

static void enter_body(h1_parser *p)
{
    static const int first[] = {[H1_BODY_NONE] = S_DONE,
                                [H1_BODY_LENGTH] = S_BODY_LEN,
                                [H1_BODY_CHUNKED] = S_CHUNK_SIZE,
                                [H1_BODY_UNTIL_CLOSE] = S_BODY_CLOSE};
    p->state = first[p->msg.framing];
    p->remaining = p->msg.content_length;
    p->chunk_digits = p->chunk_ext = 0;
}

static size_t parse_head(h1_parser *p, const char *b, size_t len, h1_event *ev)
{
    size_t skip = skip_empty_lines(p, b, len);
    if (skip)
        return skip + parse_head(p, b + skip, len - skip, ev);
    /* a response starts "HTTP/": anything else (a Redis or SSH port) fails with its first
     * bytes rather than waiting for a blank line that may never come (Envoy's balsa checks
     * the first byte) */
    if (p->kind == H1_RESPONSE && len && memcmp(b, "HTTP/", len < 5 ? len : 5) != 0)
        return fail(p, H1_ERR_INVALID_VERSION, ev);
    size_t end = 0;
    int r = scan_block(p, b, len, &end);
    if (r < 0)
        return fail(p, (h1_error)-r, ev);
    if (r == 0) {
        *ev = H1_EV_NEED_MORE;
        return 0;
    }
    memset(&p->msg, 0, sizeof p->msg);
    h1_error e = parse_head_block(p, b, end);
    if (e)
        return fail(p, classify_error(b, end, e), ev);
    p->msg.head_len = end;
    p->scan = p->line_start = 0;
    enter_body(p);
    *ev = H1_EV_HEADERS;
    return end;
}

/* ---- bodies ---- */

static size_t emit_body(h1_parser *p, const char *b, size_t len, h1_event *ev)
{
    size_t n = p->remaining < len ? (size_t)p->remaining : len;
    if (n == 0) {
        *ev = H1_EV_NEED_MORE;
        return 0;
    }
    p->remaining -= n;
    p->data = b;
    p->data_len = n;
    *ev = H1_EV_BODY;
    return n;
}

static size_t parse_body_length(h1_parser *p, const char *b, size_t len, h1_event *ev)
{
    size_t n = emit_body(p, b, len, ev);
    if (p->remaining == 0)
        p->state = S_DONE;
    return n;
}

static size_t parse_body_close(h1_parser *p, const char *b, size_t len, h1_event *ev)
{
    if (len == 0) {
        *ev = H1_EV_NEED_MORE;
        return 0;
    }
    p->data = b;
    p->data_len = len;
    *ev = H1_EV_BODY;
    return len;
}

static h1_error chunk_size_byte(h1_parser *p, unsigned char c)
{
    int v = wf_hex_value(c);
    if (v >= 0) {
        if (p->remaining > (UINT64_MAX >> 4))
            return H1_ERR_CHUNK_SIZE;
        p->remaining = (p->remaining << 4) | (uint64_t)v;
        p->chunk_digits++;
        return H1_OK;
    }
    if (p->chunk_digits == 0)
        return c == '\n' ? H1_ERR_BARE_LF : c == 0 ? H1_ERR_NUL : H1_ERR_CHUNK_SIZE;
    if (c == '\r')
        p->state = S_CHUNK_SIZE_LF;
    else if (c == ';')
        p->state = S_CHUNK_EXT;
    else if (is_ws(c))
        p->state = S_CHUNK_BWS;
    else
        return c == '\n' ? H1_ERR_BARE_LF : c == 0 ? H1_ERR_NUL : H1_ERR_CHUNK_SIZE;
    return H1_OK;
}

static h1_error chunk_ext_byte(h1_parser *p, unsigned char c)
{
    if (c == '\r') {
        p->state = S_CHUNK_SIZE_LF;
        return H1_OK;
    }
    if (c == '\n')
        return H1_ERR_BARE_LF;
    if (c == 0)
        return H1_ERR_NUL;
    if ((c < 0x20 && c != '\t') || c == 0x7f || ++p->chunk_ext > H1_MAX_CHUNK_EXT)
        return H1_ERR_CHUNK_EXT;
    return H1_OK;
}

/* One byte of chunk framing (everything except chunk data and trailers). */
static h1_error chunk_frame_byte(h1_parser *p, unsigned char c)
{
    switch (p->state) {
    case S_CHUNK_SIZE:
        return chunk_size_byte(p, c);
    case S_CHUNK_BWS:
        if (c == ';' || c == '\r')
            p->state = c == ';' ? S_CHUNK_EXT : S_CHUNK_SIZE_LF;
        else if (!is_ws(c))
            return H1_ERR_CHUNK_SIZE;
        return H1_OK;
    case S_CHUNK_EXT:
        return chunk_ext_byte(p, c);
    case S_CHUNK_SIZE_LF:
        if (c != '\n')
            return H1_ERR_BARE_CR;
        p->state = p->remaining ? S_CHUNK_DATA : S_TRAILERS;
        return H1_OK;
    case S_CHUNK_DATA_CR:
        if (c != '\r')
            return H1_ERR_CHUNK_END;
        p->state = S_CHUNK_DATA_LF;
        return H1_OK;
    default: /* S_CHUNK_DATA_LF */
        if (c != '\n')
            return H1_ERR_BARE_CR;
        p->state = S_CHUNK_SIZE;
        p->remaining = 0;
        p->chunk_digits = p->chunk_ext = 0;
        return H1_OK;
    }
}

static size_t parse_trailers(h1_parser *p, const char *b, size_t len, h1_event *ev)
{
    size_t end = 0, pos = 0, first = p->msg.nheaders;
    int r = scan_block(p, b, len, &end);
    if (r < 0)
        return fail(p, (h1_error)-r, ev);
    if (r == 0) {
        *ev = H1_EV_NEED_MORE;
        return 0;
    }
    p->msg.trailers = p->hdr_array + first;
    h1_error e = parse_fields(p, b, end, &pos, first, &p->msg.ntrailers);
    if (e)
        return fail(p, classify_error(b, end, e), ev);
    p->scan = p->line_start = 0;
    p->state = S_DONE;
    *ev = H1_EV_TRAILERS;
    return end;
}

static size_t parse_chunked(h1_parser *p, const char *b, size_t len, h1_event *ev)
{
    size_t i = 0;
    while (i < len && p->state != S_CHUNK_DATA && p->state != S_TRAILERS) {
        h1_error e = chunk_frame_byte(p, (unsigned char)b[i++]);
        if (e)
            return fail(p, e, ev);
    }
    if (p->state == S_TRAILERS)
        return i + parse_trailers(p, b + i, len - i, ev);
    if (p->state != S_CHUNK_DATA) {
        *ev = H1_EV_NEED_MORE;
        return i;
    }
    size_t n = emit_body(p, b + i, len - i, ev);
    if (p->remaining == 0)
        p->state = S_CHUNK_DATA_CR;
    if (n == 0)
        *ev = H1_EV_NEED_MORE;
    return i + n;
}

/* ---- message end and dispatch ---- */

static void finish_message(h1_parser *p, h1_event *ev)
{
    bool upgraded = p->msg.upgrade;
    if (p->kind == H1_RESPONSE && p->msg.status >= 200)
        p->answers = H1_ANSWERS_OTHER;
    p->state = upgraded ? S_UPGRADED : S_HEAD;
    p->scan = p->line_start = 0;
    *ev = H1_EV_DONE;
}

size_t h1_parse(h1_parser *p, const char *buf, size_t len, h1_event *ev)
{
    p->data = NULL;
    p->data_len = 0;
    switch (p->state) {
    case S_HEAD:
        return parse_head(p, buf, len, ev);
    case S_BODY_LEN:
        return parse_body_length(p, buf, len, ev);
    case S_BODY_CLOSE:
        return parse_body_close(p, buf, len, ev);
    case S_TRAILERS:
        return parse_trailers(p, buf, len, ev);
    case S_DONE:
        finish_message(p, ev);
        return 0;
    case S_UPGRADED:
        *ev = H1_EV_UPGRADED;
        return 0;
    case S_ERROR:
        *ev = H1_EV_ERROR;
        return 0;
    default:
        return parse_chunked(p, buf, len, ev);
    }
}

h1_event h1_parse_eof(h1_parser *p)
{
    if (p->state == S_BODY_CLOSE) {
        p->state = S_HEAD;
        return H1_EV_DONE;
    }
    if (p->state == S_ERROR || (p->state == S_HEAD && p->scan == 0) || p->state == S_UPGRADED)
        return p->state == S_ERROR ? H1_EV_ERROR : H1_EV_NEED_MORE;
    if (p->state == S_DONE) {
        h1_event ev;
        finish_message(p, &ev);
        return ev;
    }
    p->error = H1_ERR_TRUNCATED;
    p->state = S_ERROR;
    return H1_EV_ERROR;
}

/* ---- names and lookups ---- */

static const struct {
    const char *name, *details;
    int status;
} error_info[H1_ERR_COUNT_] = {
    [H1_OK] = {"ok", "", 0},
    [H1_ERR_BARE_CR] = {"bare_cr", "http1.codec_error", 400},
    [H1_ERR_BARE_LF] = {"bare_lf", "http1.codec_error", 400},
    [H1_ERR_NUL] = {"nul", "http1.invalid_characters", 400},
    [H1_ERR_INVALID_METHOD] = {"invalid_method", "http1.codec_error", 400},
    [H1_ERR_INVALID_TARGET] = {"invalid_target", "http1.invalid_url", 400},
    [H1_ERR_INVALID_VERSION] = {"invalid_version", "http1.codec_error", 400},
    [H1_ERR_INVALID_START_LINE] = {"invalid_start_line", "http1.codec_error", 400},
    [H1_ERR_INVALID_FIELD_NAME] = {"invalid_field_name", "http1.codec_error", 400},
    [H1_ERR_INVALID_FIELD_VALUE] = {"invalid_field_value", "http1.invalid_characters", 400},
    [H1_ERR_WS_BEFORE_COLON] = {"ws_before_colon", "http1.codec_error", 400},
    [H1_ERR_OBS_FOLD] = {"obs_fold", "http1.codec_error", 400},
    [H1_ERR_HEADERS_TOO_LARGE] = {"headers_too_large", "http1.headers_too_large", 431},
    [H1_ERR_TOO_MANY_HEADERS] = {"too_many_headers", "http1.too_many_headers", 431},
    [H1_ERR_CL_AND_TE] = {"cl_and_te", "http1.content_length_and_chunked_not_allowed", 400},
    [H1_ERR_CL_DIFFERENT] = {"cl_different", "http1.codec_error", 400},
    [H1_ERR_CL_INVALID] = {"cl_invalid", "http1.codec_error", 400},
    [H1_ERR_TE_NOT_CHUNKED] = {"te_not_chunked", "http1.invalid_transfer_encoding", 501},
    [H1_ERR_TE_INVALID] = {"te_invalid", "http1.invalid_transfer_encoding", 400},
    [H1_ERR_CHUNK_SIZE] = {"chunk_size", "http1.codec_error", 400},
    [H1_ERR_CHUNK_EXT] = {"chunk_ext", "http1.codec_error", 400},
    [H1_ERR_CHUNK_END] = {"chunk_end", "http1.codec_error", 400},
    [H1_ERR_DUPLICATE_HOST] = {"duplicate_host", "http1.codec_error", 400},
    [H1_ERR_TRUNCATED] = {"truncated", "http1.codec_error", 400},
};

const char *h1_error_name(h1_error e)
{
    return (unsigned)e < H1_ERR_COUNT_ ? error_info[e].name : "unknown";
}

const char *h1_error_details(h1_error e)
{
    return (unsigned)e < H1_ERR_COUNT_ ? error_info[e].details : "http1.codec_error";
}

int h1_error_status(h1_error e)
{
    return (unsigned)e < H1_ERR_COUNT_ && e != H1_OK ? error_info[e].status : 400;
}

const h1_header *h1_find_header(const h1_header *fields, size_t count, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < count; i++)
        if (fields[i].name.len == n && h1_ieq(fields[i].name.p, name, n))
            return &fields[i];
    return NULL;
}
