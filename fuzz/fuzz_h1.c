/*
 * fuzz_h1.c - libFuzzer target for the HTTP/1.x parser (src/http/h1_parser.h).
 * The first byte selects requests or responses (bit 0), what a response answers (bits 1-2)
 * and a read size (bits 3-7, plus 1). The rest is fed once whole and once in reads of that
 * size, the way a connection would; both runs must report the same events, fields, body
 * bytes and errors (a digest of everything is compared), and every string reported must lie
 * inside the caller's buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/h1_parser.h"

typedef struct {
    uint64_t h;
    const char *lo, *hi; /* the live buffer */
} digest;

static void mix(digest *d, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        d->h = (d->h ^ s[i]) * 1099511628211ull;
}

/* Body bytes: no separator, a body may arrive in any number of pieces. */
static void mix_bytes(digest *d, h1_str s)
{
    if (s.len && (s.p < d->lo || s.p + s.len > d->hi))
        abort();
    mix(d, s.p, s.len);
}

static void mix_str(digest *d, h1_str s)
{
    mix_bytes(d, s);
    mix(d, "|", 1);
}

static void mix_fields(digest *d, const h1_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mix_str(d, h[i].name);
        mix_str(d, h[i].value);
    }
}

static void mix_head(digest *d, const h1_message *m)
{
    int v[] = {m->status,     m->version_minor,   (int)m->framing,
               m->keep_alive, m->expect_continue, m->upgrade};
    mix(d, "H", 1);
    mix_str(d, m->method);
    mix_str(d, m->target);
    mix_str(d, m->reason);
    mix(d, v, sizeof v);
    mix(d, &m->content_length, sizeof m->content_length);
    mix_fields(d, m->headers, m->nheaders);
}

static bool on_event(digest *d, h1_parser *p, h1_event ev)
{
    if (ev == H1_EV_HEADERS)
        mix_head(d, &p->msg);
    else if (ev == H1_EV_BODY)
        mix_bytes(d, (h1_str){p->data, p->data_len});
    else if (ev == H1_EV_TRAILERS)
        mix_fields(d, p->msg.trailers, p->msg.ntrailers);
    if (ev != H1_EV_BODY && ev != H1_EV_NEED_MORE)
        mix(d, &ev, sizeof ev);
    if (ev == H1_EV_ERROR)
        mix(d, &p->error, sizeof p->error);
    return ev != H1_EV_NEED_MORE && ev != H1_EV_ERROR && ev != H1_EV_UPGRADED;
}

static uint64_t run(const uint8_t *cfg, const char *in, size_t len, size_t step)
{
    h1_header hdrs[16];
    h1_parser p;
#ifdef FUZZ_H1_KIND /* fuzz_h1_request / fuzz_h1_response: one kind per target */
    h1_parser_init(&p, FUZZ_H1_KIND, hdrs, 16, 2048);
#else
    h1_parser_init(&p, (cfg[0] & 1) ? H1_RESPONSE : H1_REQUEST, hdrs, 16, 2048);
#endif
    h1_parser_set_answers(&p, (h1_answers)((cfg[0] >> 1) % 3));
    char *buf = malloc(len + 1);
    digest d = {1469598103934665603ull, buf, buf + len};
    size_t have = 0, off = 0;
    bool dead = false;
    while (off < len && !dead) {
        size_t n = len - off < step ? len - off : step;
        memcpy(buf + have, in + off, n);
        have += n;
        off += n;
        for (bool go = true; go;) {
            h1_event ev;
            size_t used = h1_parse(&p, buf, have, &ev);
            if (used > have)
                abort();
            go = on_event(&d, &p, ev);
            dead = ev == H1_EV_ERROR || ev == H1_EV_UPGRADED;
            memmove(buf, buf + used, have - used);
            have -= used;
        }
    }
    if (!dead)
        on_event(&d, &p, h1_parse_eof(&p));
    free(buf);
    return d.h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *in = (const char *)data + 1;
    size_t len = size - 1, step = (size_t)(data[0] >> 3) + 1;
    if (run(data, in, len, len ? len : 1) != run(data, in, len, step))
        abort();
    return 0;
}
