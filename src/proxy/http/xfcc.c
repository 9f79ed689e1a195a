/*
 * xfcc.c - x-forwarded-client-cert (see xfcc.h for the Envoy behaviour it follows).
 */
#include "proxy/http/xfcc.h"

#include <string.h>
#include <strings.h>

#define XFCC     "x-forwarded-client-cert"
#define XFCC_LEN (sizeof(XFCC) - 1)

/* Each item of the ","-joined list as "<key><item>", ";"-separated from what is before. */
static void each_item(wf_strbuf *out, const char *key, const char *list, bool even_empty)
{
    if (!list || !*list) {
        if (even_empty) {
            if (out->len)
                wf_strbuf_putc(out, ';');
            wf_strbuf_puts(out, key);
        }
        return;
    }
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        if (out->len)
            wf_strbuf_putc(out, ';');
        wf_strbuf_puts(out, key);
        wf_strbuf_append(out, p, n);
        if (!p[n])
            break;
        p += n + 1;
    }
}

/* ";<key>\"<fact>\"" (nothing when the fact is empty). */
static void quoted_fact(wf_strbuf *out, const wp_tsock *sock, wp_peer_fact what, const char *key)
{
    size_t mark = out->len;
    if (out->len)
        wf_strbuf_putc(out, ';');
    wf_strbuf_puts(out, key);
    wf_strbuf_putc(out, '"');
    size_t at = out->len;
    if (wp_tsock_peer_cert(sock, what, NULL, out) != 0 || out->len == at) {
        if (!wf_strbuf_failed(out))
            out->len = mark; /* Envoy: only when not empty */
        return;
    }
    wf_strbuf_putc(out, '"');
}

int wp_xfcc_element(const wp_tsock *sock, const wp_tsock_ssl *ssl, unsigned details, wf_strbuf *out)
{
    wf_strbuf_reset(out);
    size_t start = 0;
    each_item(out, "By=", ssl->local_uri_sans, false);
    size_t mark = out->len;
    wf_strbuf_puts(out, out->len > start ? ";Hash=" : "Hash=");
    size_t at = out->len;
    if ((wp_tsock_peer_cert(sock, WP_PEER_SHA256, NULL, out) != 0 || out->len == at) &&
        !wf_strbuf_failed(out))
        out->len = mark;
    if (details & WP_CCD_CERT)
        quoted_fact(out, sock, WP_PEER_PEM, "Cert=");
    if (details & WP_CCD_CHAIN)
        quoted_fact(out, sock, WP_PEER_CHAIN_PEM, "Chain=");
    if (details & WP_CCD_SUBJECT) { /* present even when the subject is empty */
        if (out->len > start)
            wf_strbuf_putc(out, ';');
        wf_strbuf_puts(out, "Subject=\"");
        wf_strbuf_puts(out, ssl->peer_subject ? ssl->peer_subject : "");
        wf_strbuf_putc(out, '"');
    }
    if (details & WP_CCD_URI)
        each_item(out, "URI=", ssl->peer_uri_sans, true);
    if (details & WP_CCD_DNS) {
        size_t m = out->len;
        if (out->len > start)
            wf_strbuf_putc(out, ';');
        wf_strbuf_puts(out, "DNS=");
        size_t a = out->len;
        if ((wp_tsock_peer_cert(sock, WP_PEER_DNS_SANS, ";DNS=", out) != 0 || out->len == a) &&
            !wf_strbuf_failed(out))
            out->len = m;
    }
    return wf_strbuf_failed(out) ? -1 : 0;
}

static bool is_xfcc(const h1_header *h)
{
    return h->name.len == XFCC_LEN && strncasecmp(h->name.p, XFCC, XFCC_LEN) == 0;
}

/* Removes every XFCC field after index first (all when first < 0); order kept. */
static void remove_after(h1_header *hdrs, size_t *n, long first)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if ((long)i <= first || !is_xfcc(&hdrs[i]))
            hdrs[k++] = hdrs[i];
    *n = k;
}

int wp_xfcc_mutate(wp_fcc_mode mode, bool mtls, h1_header *hdrs, size_t *n, size_t max,
                   const char *element, size_t elen, wf_strbuf *buf)
{
    if (mode == WP_FCC_ALWAYS_FORWARD_ONLY)
        return 0;
    if (mode == WP_FCC_SANITIZE || !mtls) {
        remove_after(hdrs, n, -1);
        return 0;
    }
    if (mode == WP_FCC_FORWARD_ONLY)
        return 0;
    long first = -1;
    for (size_t i = 0; i < *n && first < 0; i++)
        if (is_xfcc(&hdrs[i]))
            first = (long)i;
    h1_str value = {element, elen};
    if (mode == WP_FCC_APPEND_FORWARD && first >= 0) {
        wf_strbuf_reset(buf);
        for (size_t i = (size_t)first; i < *n; i++) { /* the fields joined, as one header */
            if (!is_xfcc(&hdrs[i]) || !hdrs[i].value.len)
                continue;
            if (buf->len)
                wf_strbuf_putc(buf, ',');
            wf_strbuf_append(buf, hdrs[i].value.p, hdrs[i].value.len);
        }
        if (buf->len)
            wf_strbuf_putc(buf, ',');
        wf_strbuf_append(buf, element, elen);
        if (wf_strbuf_failed(buf))
            return -1;
        value = (h1_str){buf->data, buf->len};
    }
    if (first < 0) {
        if (*n >= max)
            return 0; /* no room: the parser's limit keeps a slot, so not reached */
        hdrs[*n] = (h1_header){.name = {XFCC, XFCC_LEN}, .value = value};
        (*n)++;
        return 0;
    }
    hdrs[first].value = value;
    remove_after(hdrs, n, first);
    return 0;
}
