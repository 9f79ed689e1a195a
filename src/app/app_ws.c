/*
 * app_ws.c - weft-app: the WebSocket echo on /ws (RFC 6455): the handshake, the 101 answer,
 * and frames echoed back as they arrive (control frames: ping answered by pong, close by
 * close; protocol errors end the connection with close code 1002).
 */
#include <openssl/evp.h>

#include "app/app_internal.h"

void app_resp_ws(struct app_conn *c)
{
    wf_strbuf h = WF_STRBUF_INIT;
    PUTS(&h, "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ");
    wf_strbuf_append(&h, c->ws_accept, 28);
    PUTS(&h, "\r\n");
    wf_strbuf_append(&h, c->app->fixed, c->app->fixed_len);
    c->ws_in_frame = c->ws_closing = false;
    if (wf_strbuf_failed(&h) || h1s_respond(c->hc, 101, NULL, wf_strbuf_cstr(&h), NULL, 0) != 0)
        h1s_conn_close(c->hc);
    else
        h1s_takeover(c->hc);
    wf_strbuf_free(&h);
}

bool app_ws_handshake(struct app_conn *c, const h1_message *m)
{
    const h1_header *up = h1_find_header(m->headers, m->nheaders, "upgrade");
    const h1_header *key = h1_find_header(m->headers, m->nheaders, "sec-websocket-key");
    const h1_header *ver = h1_find_header(m->headers, m->nheaders, "sec-websocket-version");
    char accept[29];
    if (!m->upgrade || !str_eq(m->method, "GET") || !up || !str_ieq(up->value, "websocket") ||
        !key || key->value.len == 0 || key->value.len > 64 || !ver || !str_eq(ver->value, "13"))
        return false;
    if (wf_app_ws_accept(key->value.p, key->value.len, accept) != 0)
        return false;
    memcpy(c->ws_accept, accept, sizeof c->ws_accept);
    return true;
}

/* ---- WebSocket (RFC 6455 §5) ---- */

static void ws_frame_head(struct app_conn *c, uint8_t b0, uint64_t len)
{
    uint8_t h[10];
    size_t n = 2;
    h[0] = b0;
    if (len < 126) {
        h[1] = (uint8_t)len;
    } else if (len <= 0xffff) {
        h[1] = 126;
        h[2] = (uint8_t)(len >> 8);
        h[3] = (uint8_t)len;
        n = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    h1s_raw_write(c->hc, (const char *)h, n);
}

/* The last frame we send: the connection closes once it is written. */
static void ws_end(struct app_conn *c)
{
    c->ws_closing = true;
    h1s_conn_close(c->hc);
}

static void ws_fail(struct app_conn *c)
{
    static const char close1002[] = {(char)0x88, 2, 0x03, (char)0xea};
    h1s_raw_write(c->hc, close1002, sizeof close1002);
    ws_end(c);
}

static void ws_unmask(struct app_conn *c, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= c->ws_mask[(c->ws_pos + i) & 3];
    c->ws_pos += (uint32_t)n;
}

/* Control frame (whole, payload p[0..n) unmasked): ping -> pong, close -> close. */
static void ws_control(struct app_conn *c, uint8_t op, uint8_t *p, size_t n)
{
    if (op == 0x9 || op == 0x8) {
        ws_frame_head(c, (uint8_t)(0x80 | (op == 0x9 ? 0xA : 0x8)), n);
        h1s_raw_write(c->hc, (const char *)p, n);
    }
    if (op == 0x8)
        ws_end(c);
}

/* Parses a frame header at p[0..avail); returns the bytes used, 0 when more are needed. */
static size_t ws_frame_start(struct app_conn *c, uint8_t *p, size_t avail)
{
    size_t hl = 2;
    if (avail < 2)
        return 0;
    uint8_t op = p[0] & 0x0f, len7 = p[1] & 0x7f;
    bool control = op >= 0x8;
    /* RSV bits unset (no extension negotiated), client frames masked, known opcodes,
     * control frames final and short (RFC 6455 §5.2, §5.5) */
    if ((p[0] & 0x70) || !(p[1] & 0x80) || (op > 0x2 && op < 0x8) || op > 0xA ||
        (control && (!(p[0] & 0x80) || len7 > 125))) {
        ws_fail(c);
        return avail;
    }
    hl += (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4;
    if (avail < hl)
        return 0;
    uint64_t len = hl > 6 ? 0 : len7; /* extended lengths replace the 7 bits */
    for (size_t i = 2; i < hl - 4; i++)
        len = (len << 8) | p[i];
    if (len >> 63) {
        ws_fail(c);
        return avail;
    }
    if (control && avail < hl + len)
        return 0;
    memcpy(c->ws_mask, p + hl - 4, 4);
    c->ws_pos = 0;
    if (control) {
        ws_unmask(c, p + hl, (size_t)len);
        ws_control(c, op, p + hl, (size_t)len);
        return hl + (size_t)len;
    }
    ws_frame_head(c, p[0], len);
    c->ws_in_frame = len > 0;
    c->ws_left = len;
    return hl;
}

size_t app_ws_input(struct app_conn *c, char *data, size_t len)
{
    size_t used = 0;
    while (!c->ws_closing) {
        if (!c->ws_in_frame) {
            size_t n = ws_frame_start(c, (uint8_t *)data + used, len - used);
            if (n == 0)
                break;
            used += n;
            continue;
        }
        size_t avail = len - used;
        size_t n = c->ws_left < avail ? (size_t)c->ws_left : avail;
        if (n == 0)
            break;
        ws_unmask(c, (uint8_t *)data + used, n);
        c->ws_left -= n;
        c->ws_in_frame = c->ws_left > 0;
        int r = h1s_raw_send(c->hc, data + used, n); /* echoed from the read buffer */
        used += n;
        if (r != 0)
            break; /* h1_server offers the rest again once this was written */
    }
    return used;
}

int wf_app_ws_accept(const char *key, size_t key_len, char out[29])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char buf[64 + sizeof APP_WS_GUID];
    if (key_len > 64)
        return -1;
    memcpy(buf, key, key_len);
    memcpy(buf + key_len, APP_WS_GUID, sizeof APP_WS_GUID - 1);
    if (!EVP_Digest(buf, key_len + sizeof APP_WS_GUID - 1, md, &mdlen, EVP_sha1(), NULL) ||
        mdlen != 20)
        return -1;
    return EVP_EncodeBlock((unsigned char *)out, md, 20) == 28 ? 0 : -1;
}
