/*
 * stream.h - the watch response body, byte by byte: HTTP/1.1 chunked transfer coding decoded
 * incrementally (RFC 9112 §7.1; chunk extensions and trailers skipped) and the decoded bytes
 * split into lines, one watch event per line (kube-apiserver writes one JSON object per line,
 * ../shared/reference/kubernetes.md §1.4). Pure: no I/O, so the unit tests feed it any split.
 *
 * Limits: a chunk-size line is at most 64 bytes of hex digits and extensions; a line (one event)
 * at most WF_KUBE_MAX_EVENT bytes: larger is an error, never a silent cut.
 */
#ifndef WF_KUBE_STREAM_H
#define WF_KUBE_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"

#define WF_KUBE_MAX_EVENT (16u << 20)

typedef struct wf_kube_chunked {
    int state;     /* private */
    size_t left;   /* bytes left in the current chunk */
    char line[72]; /* the size line being read */
    size_t line_len;
    bool done; /* the last chunk and the trailers were read */
} wf_kube_chunked;

/* Decodes in[0..n) appending data bytes to out. Returns the bytes of in consumed (all of them
 * unless the body ended: bytes after it are not consumed), or -1 with why on a malformed
 * coding. */
long wf_kube_chunked_feed(wf_kube_chunked *d, const char *in, size_t n, wf_strbuf *out,
                          wf_strbuf *why);

/* Lines: bytes go in with wf_kube_lines_push, complete lines ("\n"-terminated, the "\n" and
 * a "\r" before it removed; empty lines skipped) come out with wf_kube_lines_pop. */
typedef struct wf_kube_lines {
    wf_strbuf buf;
    size_t pos; /* start of the unread part */
} wf_kube_lines;

/* Appends; -1 with why when the pending line exceeds WF_KUBE_MAX_EVENT or out of memory. */
int wf_kube_lines_push(wf_kube_lines *l, const char *p, size_t n, wf_strbuf *why);
/* The next complete line (valid until the next push or pop): returns its length and sets
 * *line, or returns -1 when no complete line is buffered. */
long wf_kube_lines_pop(wf_kube_lines *l, const char **line);
/* Bytes of an incomplete last line (a stream that ended mid-event). */
size_t wf_kube_lines_pending(const wf_kube_lines *l);
void wf_kube_lines_free(wf_kube_lines *l);

#endif
