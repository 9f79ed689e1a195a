/*
 * path_norm.h - request path normalization as Envoy's HTTP connection manager does it before
 * routing (HttpConnectionManager normalize_path, merge_slashes,
 * path_with_escaped_slashes_action). Pure functions on byte buffers: no allocation, no
 * global state, safe from any thread. Lengths are in bytes; strings are not NUL-terminated.
 *
 * A "path" here is the HTTP/1 origin-form request-target, Envoy's :path header: the path
 * part up to the first '?' and, from that '?' on, the query, which no function changes.
 *
 * Envoy behaviour followed (source/common/http/path_utility.cc, conn_manager_utility.cc
 * ConnectionManagerUtility::maybeNormalizePath, and Envoy's own fork of Chromium's
 * url_canon_path.cc, source/common/chromium_url; expected results from
 * test/common/http/path_utility_test.cc):
 *  - wf_path_normalize is PathUtil::canonicalPath: parameters are dropped from dot segments
 *    ("/a/..;x/b" -> "/a/../b", PathUtil::stripParametersFromDotSegments, runtime
 *    strip_dotdot_segments_with_parameters, on in current Envoy), then Chromium's
 *    CanonicalizePath runs on the path part: a missing leading '/' is added ("" -> "/"),
 *    '\' becomes '/', "." and ".." segments are removed (RFC 3986 §5.2.4; a ".." above the
 *    root stays at the root), "%2e"/"%2E" count as '.', escaped unreserved characters
 *    (ALPHA DIGIT - _ ~, and '.') are decoded, other escapes are kept as written (case
 *    preserved), '%' not followed by two hex digits is kept (with Chromium's fix-up of
 *    nested escapes: "%%32e" -> "%252e"), and space, '"', '#', '<', '>', '\', '^', '`',
 *    '{', '|', '}', DEL, control bytes and bytes >= 0x80 are percent-encoded (upper-case
 *    hex). A raw or escaped NUL makes the path invalid (Envoy answers 400). Multiple
 *    slashes are kept.
 *  - wf_path_merge_slashes is PathUtil::mergeSlashes: runs of '/' in the path part become
 *    one; a path of slashes only keeps Envoy's quirk ("//" and "///" give "//").
 *  - wf_path_unescape_slashes is PathUtil::unescapeSlashes: %2F/%2f become '/', %5C/%5c
 *    become '\' in the path part, left to right, without rescanning.
 *  - wf_path_sanitize is maybeNormalizePath: a '#' anywhere rejects the request (runtime
 *    http_reject_path_with_fragment, on by default); then the escaped-slashes action (when
 *    not KEEP_UNCHANGED / IMPLEMENTATION_SPECIFIC_DEFAULT, which Envoy resolves to
 *    KEEP_UNCHANGED); then normalize_path; then merge_slashes. Envoy runs the escaped-slash
 *    step first, so "%2F.." style segments are seen as dot segments when unescaped.
 */
#ifndef WF_HTTP_PATH_NORM_H
#define WF_HTTP_PATH_NORM_H

#include <stdbool.h>
#include <stddef.h>

/* HttpConnectionManager.PathWithEscapedSlashesAction, with the proto's numbers. */
typedef enum {
    WF_ESC_SLASH_DEFAULT = 0,  /* IMPLEMENTATION_SPECIFIC_DEFAULT: Envoy keeps them */
    WF_ESC_SLASH_KEEP = 1,     /* KEEP_UNCHANGED */
    WF_ESC_SLASH_REJECT = 2,   /* REJECT_REQUEST: 400 path_normalization_failed */
    WF_ESC_SLASH_REDIRECT = 3, /* UNESCAPE_AND_REDIRECT: 307 to the unescaped path */
    WF_ESC_SLASH_FORWARD = 4,  /* UNESCAPE_AND_FORWARD */
} wf_esc_slash_action;

typedef struct {
    bool normalize;                      /* normalize_path */
    bool merge_slashes;                  /* merge_slashes */
    wf_esc_slash_action escaped_slashes; /* path_with_escaped_slashes_action */
} wf_path_opts;

/* What the connection manager does with the request (maybeNormalizePath's result). */
typedef enum {
    WF_PATH_CONTINUE = 0, /* route the (possibly rewritten) path */
    WF_PATH_REJECT = 1,   /* 400, empty body, details path_normalization_failed */
    WF_PATH_REDIRECT = 2, /* 307, location: the rewritten path (gRPC: rejected instead) */
} wf_path_action;

/* Canonicalizes in[0..len) (PathUtil::canonicalPath) into out[0..cap); in and out must not
 * overlap. Returns 0 with the length in *out_len; -EINVAL for a path Envoy rejects (NUL),
 * out then holds garbage; -ENOSPC when the output needs more than cap bytes at some point
 * of the left-to-right rewrite (segments written before a ".." removes them count):
 * cap >= 3 * len + 1 is always enough. */
int wf_path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *out_len);

/* Collapses runs of '/' in the path part of p[0..len), in place (PathUtil::mergeSlashes).
 * Returns the new length (never more than len). */
size_t wf_path_merge_slashes(char *p, size_t len);

/* Decodes %2F, %2f, %5C, %5c in the path part of p[0..*len), in place; *len shrinks by 2
 * per sequence. Returns true when any was found (UnescapeSlashesResult::FoundAndUnescaped). */
bool wf_path_unescape_slashes(char *p, size_t *len);

/* Whether wf_path_sanitize could do anything to p[0..len) with these options: false means
 * the path is routed as it is (the common case; one pass, no writes). */
bool wf_path_needs_sanitize(const wf_path_opts *o, const char *p, size_t len);

/* The out capacity wf_path_sanitize needs for a path of len bytes (it stages the input in
 * the last len bytes). */
#define WF_PATH_SANITIZE_CAP(len) (4 * (size_t)(len) + 8)

/* maybeNormalizePath on in[0..len) into out[0..cap), cap >= WF_PATH_SANITIZE_CAP(len), no
 * overlap. Returns a wf_path_action with *out_len bytes in out: the path to route and
 * forward (CONTINUE), the redirect target (REDIRECT), or the path as Envoy's :path holds it
 * when it gives up (REJECT; for the access log). -ENOSPC when cap is too small. */
int wf_path_sanitize(const wf_path_opts *o, const char *in, size_t len, char *out, size_t cap,
                     size_t *out_len);

#endif
