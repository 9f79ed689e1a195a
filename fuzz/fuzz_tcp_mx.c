/*
 * fuzz_tcp_mx.c - libFuzzer target for Istio's TCP metadata exchange preamble reader
 * (proxy/filters/network/metadata_exchange.h): the bytes a peer sends first on an
 * istio-peer-exchange connection. Invariants: what is drained never exceeds the input; a
 * MORE result drains nothing; a DONE result's fields lie inside the peer buffer; the reader
 * is prefix-stable (a DONE prefix decodes the same with bytes appended).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/filters/network/metadata_exchange.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wp_tcp_mx_peer peer;
    size_t used = 0;
    int rc = wp_tcp_mx_decode(data, size, &peer, &used);
    if (used > size || (rc == WP_TCP_MX_MORE && used != 0))
        abort();
    if (rc == WP_TCP_MX_DONE) {
        for (int i = 0; i < WP_WL_COUNT_; i++) {
            const wp_istio_str *f = &peer.w.f[i];
            if (f->len && ((const uint8_t *)f->p < peer.buf ||
                           (const uint8_t *)f->p + f->len > peer.buf + sizeof peer.buf))
                abort();
        }
        uint8_t *more = malloc(used + 4);
        if (!more)
            return 0;
        memcpy(more, data, used);
        memcpy(more + used, "tail", 4);
        size_t used2 = 0;
        if (wp_tcp_mx_decode(more, used + 4, &peer, &used2) != WP_TCP_MX_DONE || used2 != used)
            abort();
        free(more);
    }
    return 0;
}
