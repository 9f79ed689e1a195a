/*
 * h1_parser.h - incremental, zero-copy "pull" parser for HTTP/1.0 and HTTP/1.1 messages
 * (requests and responses). No callbacks, no allocation: every string handed back points
 * into the caller's buffer, and header fields go into a caller-provided array.
 *
 * Feeding bytes. h1_parse(p, buf, len, &ev) returns how many bytes of buf it consumed and
 * sets one event. The caller drops the consumed bytes, keeps the rest at the start of its
 * buffer, appends newly read bytes after them and calls again. While a head (start line +
 * fields) or a trailer section is incomplete nothing is consumed, so the caller's buffer
 * must be able to hold one whole head (max_head_bytes); the parser remembers how far it
 * has scanned and never rescans. Call h1_parse in a loop until it returns H1_EV_NEED_MORE,
 * H1_EV_UPGRADED or H1_EV_ERROR (an event can come with 0 bytes consumed, e.g. DONE of a
 * bodiless message, so do not stop when the input is empty). The strings of an event stay
 * valid until the caller moves or overwrites those bytes. The result never depends on how the input
 * was split across reads.
 *
 * Events for one message: HEADERS, then BODY* (data/data_len), then TRAILERS (chunked
 * bodies only, possibly with zero fields), then DONE. After DONE the parser is ready for the
 * next (pipelined) message. After the DONE of a 101 response, a 2xx response to CONNECT,
 * or a request with Upgrade/CONNECT, every further call returns H1_EV_UPGRADED with nothing
 * consumed: the remaining bytes belong to the tunnel (call h1_parser_reset to go back to
 * HTTP, e.g. when the upstream refused the upgrade).
 *
 * Standards followed:
 *  - RFC 9112 §2.2 (message parsing): lines end in CRLF; a bare CR is rejected and so is a
 *    bare LF (the "MAY accept LF" leniency is not taken: mixed terminators are a smuggling
 *    vector); empty lines before a request line are skipped; whitespace between the start
 *    line and the first field is rejected (reported as obs-fold).
 *  - RFC 9112 §3 (request line: method token, one SP, request-target of VCHARs, one SP,
 *    "HTTP/1.0" or "HTTP/1.1"; other versions are H1_ERR_INVALID_VERSION), §4 (status
 *    line; the reason phrase may be empty and its SP may be missing).
 *  - RFC 9112 §5.1/§5.2 and RFC 9110 §5.5/§5.6.2: field names are tokens, no whitespace
 *    before the colon, obs-fold rejected, values are VCHAR/obs-text/SP/HTAB with OWS
 *    trimmed; NUL and other CTLs rejected.
 *  - RFC 9112 §6.1/§6.3 (framing): Transfer-Encoding with Content-Length is rejected
 *    (§6.1 allows "MAY reject"; Envoy rejects by default); a request whose
 *    Transfer-Encoding (every line, as one list) is anything but exactly one "chunked"
 *    coding is rejected with 501 as Envoy's codec does (so "gzip, chunked", "chunked,
 *    chunked" and a "gzip" line plus a "chunked" line are refused, never forwarded as
 *    chunked), and one carrying Transfer-Encoding in HTTP/1.0 is rejected; a response whose
 *    Transfer-Encoding does not end in chunked is read until close; responses to HEAD, 1xx,
 *    204 and 304 have no body.
 *    Content-Length must be 1*DIGIT (no sign, no overflow of 64 bits); duplicates (repeated
 *    lines or a comma list, RFC 9110 §8.6) are accepted only when all values are equal.
 *  - RFC 9112 §7.1 (chunked): hex chunk sizes (overflow rejected), extensions skipped (at
 *    most H1_MAX_CHUNK_EXT bytes per chunk line), trailer section parsed like the header
 *    section; RFC 9112 §9.3 (persistence: HTTP/1.1 keep-alive unless "Connection: close",
 *    HTTP/1.0 only with "Connection: keep-alive"); RFC 9110 §10.1.1 (Expect: 100-continue,
 *    HTTP/1.1 requests only); RFC 9110 §7.8 (Upgrade counts only with "Connection: upgrade",
 *    as in Envoy); RFC 9112 §3.2 (more than one Host is rejected).
 *
 * Envoy behaviour followed: max_request_headers_kb (default 60 KiB) bounds the head; here it
 * counts every byte of the head, start line and CRLFs included (Envoy counts the header map;
 * the difference is a start line and some CRLFs). The header array capacity plays the role
 * of max_headers_count (Envoy's default is 100). h1_error_details gives the
 * %RESPONSE_CODE_DETAILS% string Envoy's HTTP/1 codec uses for the same failure
 * (Http1ResponseCodeDetailValues in source/common/http/http1/codec_impl.cc:
 * http1.codec_error, http1.invalid_characters, http1.headers_too_large,
 * http1.too_many_headers, http1.content_length_and_chunked_not_allowed,
 * http1.invalid_transfer_encoding, http1.invalid_url) [verify: the per-error choice between
 * http1.codec_error and a specific string was not checked against the pinned Envoy SHA;
 * the reference file has no codec section]. h1_error_status gives Envoy's status: 431 for
 * too large / too many headers, 501 for a non-chunked request Transfer-Encoding, else 400.
 */
#ifndef WEFT_HTTP_H1_PARSER_H
#define WEFT_HTTP_H1_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H1_DEFAULT_MAX_HEAD_BYTES (60u * 1024u)
#define H1_MAX_CHUNK_EXT          4096u

typedef enum { H1_REQUEST, H1_RESPONSE } h1_kind;

/* What the response being parsed answers (affects body framing, RFC 9112 §6.3). */
typedef enum { H1_ANSWERS_OTHER, H1_ANSWERS_HEAD, H1_ANSWERS_CONNECT } h1_answers;

typedef struct {
    const char *p;
    size_t len;
} h1_str;

typedef struct {
    h1_str name;  /* as received (case kept) */
    h1_str value; /* OWS trimmed */
} h1_header;

typedef enum {
    H1_BODY_NONE,        /* no body */
    H1_BODY_LENGTH,      /* content_length bytes */
    H1_BODY_CHUNKED,     /* chunked transfer coding */
    H1_BODY_UNTIL_CLOSE, /* response read until the connection closes */
} h1_framing;

typedef struct {
    h1_str method, target; /* requests */
    int status;            /* responses */
    h1_str reason;         /* responses, may be empty */
    int version_minor;     /* 0 or 1 (HTTP/1.x) */
    h1_header *headers;
    size_t nheaders;
    h1_header *trailers; /* stored after the headers in the same array */
    size_t ntrailers;
    h1_framing framing;
    uint64_t content_length; /* H1_BODY_LENGTH only */
    size_t head_len;         /* bytes of the head, final CRLF included */
    bool keep_alive;         /* the connection may carry another message */
    bool close_asked;        /* its fields end the connection (Envoy's shouldCloseConnection:
                                Connection/Proxy-Connection close, HTTP/1.0 without
                                keep-alive), whatever the framing */
    bool expect_continue;    /* request: Expect: 100-continue (HTTP/1.1) */
    bool upgrade;            /* request: Upgrade + Connection: upgrade, or CONNECT;
                                response: 101 or 2xx to CONNECT */
} h1_message;

typedef enum {
    H1_OK = 0,
    H1_ERR_BARE_CR,             /* CR not followed by LF */
    H1_ERR_BARE_LF,             /* LF not preceded by CR */
    H1_ERR_NUL,                 /* NUL byte in the head, a trailer or a chunk line */
    H1_ERR_INVALID_METHOD,      /* non-token character in the method */
    H1_ERR_INVALID_TARGET,      /* request-target with a non-VCHAR */
    H1_ERR_INVALID_VERSION,     /* not HTTP/1.0 or HTTP/1.1 */
    H1_ERR_INVALID_START_LINE,  /* request/status line structure (SPs, status digits) */
    H1_ERR_INVALID_FIELD_NAME,  /* non-token character, empty name, missing colon */
    H1_ERR_INVALID_FIELD_VALUE, /* control character in a value */
    H1_ERR_WS_BEFORE_COLON,     /* "Name : value" */
    H1_ERR_OBS_FOLD,            /* line folding (field line starting with SP/HTAB) */
    H1_ERR_HEADERS_TOO_LARGE,   /* head or trailers beyond max_head_bytes */
    H1_ERR_TOO_MANY_HEADERS,    /* more fields than the caller's array holds */
    H1_ERR_CL_AND_TE,           /* Content-Length together with Transfer-Encoding */
    H1_ERR_CL_DIFFERENT,        /* duplicate Content-Length with different values */
    H1_ERR_CL_INVALID,          /* Content-Length not 1*DIGIT or beyond 64 bits */
    H1_ERR_TE_NOT_CHUNKED,      /* request TE other than exactly one "chunked" coding */
    H1_ERR_TE_INVALID,     /* response: non-token coding, chunked twice/not last; TE in 1.0 req */
    H1_ERR_CHUNK_SIZE,     /* chunk size missing, non-hex or overflowing */
    H1_ERR_CHUNK_EXT,      /* control character in, or too long, chunk extension */
    H1_ERR_CHUNK_END,      /* chunk data not followed by CRLF */
    H1_ERR_DUPLICATE_HOST, /* more than one Host field */
    H1_ERR_TRUNCATED,      /* connection closed inside a message */
    H1_ERR_COUNT_
} h1_error;

typedef enum {
    H1_EV_NEED_MORE, /* all usable input consumed; read more and call again */
    H1_EV_HEADERS,   /* parser.msg holds the head */
    H1_EV_BODY,      /* parser.data / data_len: body bytes (de-chunked) */
    H1_EV_TRAILERS,  /* parser.msg.trailers / ntrailers */
    H1_EV_DONE,      /* message complete */
    H1_EV_UPGRADED,  /* the connection is a tunnel now; nothing consumed */
    H1_EV_ERROR,     /* parser.error; the connection must be closed */
} h1_event;

typedef struct {
    /* results */
    h1_message msg;
    const char *data; /* H1_EV_BODY */
    size_t data_len;
    h1_error error;
    /* configuration */
    h1_kind kind;
    h1_answers answers;
    h1_header *hdr_array;
    size_t hdr_cap;
    size_t max_head;
    /* state (private) */
    int state;
    size_t scan, line_start;
    uint64_t remaining;
    unsigned chunk_digits, chunk_ext;
} h1_parser;

/* Prepares p. headers/max_headers: the caller's field array (its capacity is the field
 * limit, headers and trailers together); max_head_bytes 0 means H1_DEFAULT_MAX_HEAD_BYTES. */
void h1_parser_init(h1_parser *p, h1_kind kind, h1_header *headers, size_t max_headers,
                    size_t max_head_bytes);
/* Back to "expecting a new message" (keeps the configuration); also leaves UPGRADED. */
void h1_parser_reset(h1_parser *p);
/* Response parsers: what the next response answers; stays set until a final (non-1xx)
 * response completes. */
void h1_parser_set_answers(h1_parser *p, h1_answers a);

/* Parses buf[0..len) (see the top of this file); returns the number of bytes consumed. */
size_t h1_parse(h1_parser *p, const char *buf, size_t len, h1_event *ev);
/* The peer closed the connection: DONE for a read-until-close body, NEED_MORE between
 * messages, otherwise ERROR with H1_ERR_TRUNCATED. */
h1_event h1_parse_eof(h1_parser *p);

/* Stable lower-case name of an error ("bare_cr", "cl_and_te", ...); "ok" for H1_OK. */
const char *h1_error_name(h1_error e);
/* Envoy's response code details string for the error (see above). */
const char *h1_error_details(h1_error e);
/* HTTP status a server answers the error with (400, 431 or 501). */
int h1_error_status(h1_error e);

/* ASCII case-insensitive equality of a[0, n) and b[0, n) (field names are ASCII tokens):
 * inline, with no locale and no call, for the field-name checks on every request. */
static inline unsigned char h1_lower(unsigned char c)
{
    return (unsigned char)(c + (((unsigned)(c - 'A') < 26u) << 5));
}
static inline bool h1_ieq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (h1_lower((unsigned char)a[i]) != h1_lower((unsigned char)b[i]))
            return false;
    return true;
}

/* First field named name (case-insensitive) among n fields, or NULL. */
const h1_header *h1_find_header(const h1_header *fields, size_t n, const char *name);

#endif
