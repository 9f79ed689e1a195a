/*
 * strbuf.h - growable NUL-terminated byte string on the heap.
 *
 * Used to build output (tables, JSON, messages). A strbuf that failed an allocation is
 * marked failed: later appends do nothing and wf_strbuf_failed() reports it, so callers may
 * check once at the end. The owner frees with wf_strbuf_free().
 */
#ifndef WF_CORE_STRBUF_H
#define WF_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct wf_strbuf {
    char *data; /* NUL-terminated when len > 0 or after any append; may be NULL when empty */
    size_t len; /* bytes, excluding the NUL */
    size_t cap;
    bool failed;
} wf_strbuf;

#define WF_STRBUF_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0, false                                                                          \
    }

/* Appends len bytes of s (a failed buffer ignores it). The common case, room already there,
 * is inline: the proxy builds every header block with it. */
void wf_strbuf_append_slow(wf_strbuf *b, const char *s, size_t len);
static inline void wf_strbuf_append(wf_strbuf *b, const char *s, size_t len)
{
    if (b->len + len < b->cap && !b->failed) {
        memcpy(b->data + b->len, s, len);
        b->len += len;
        b->data[b->len] = '\0';
        return;
    }
    wf_strbuf_append_slow(b, s, len);
}
void wf_strbuf_puts(wf_strbuf *b, const char *s);
void wf_strbuf_putc(wf_strbuf *b, char c);
void wf_strbuf_printf(wf_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The contents as a C string ("" when empty); valid until the next append or free. */
const char *wf_strbuf_cstr(const wf_strbuf *b);
void wf_strbuf_reset(wf_strbuf *b);
static inline bool wf_strbuf_failed(const wf_strbuf *b)
{
    return b->failed;
}
/* Hand the heap string to the caller (who frees it with free()); b becomes empty.
 * Returns NULL if an allocation failed earlier. */
char *wf_strbuf_take(wf_strbuf *b);

/* Appends everything f still holds (read to its end; f is not closed). Returns 0, or -1 on a
 * read error or when out of memory (b then holds what was read). */
int wf_strbuf_read_stream(wf_strbuf *b, FILE *f);
void wf_strbuf_free(wf_strbuf *b);

#endif
