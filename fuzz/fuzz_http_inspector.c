/*
 * fuzz_http_inspector.c - libFuzzer target for the HTTP inspector's classifier
 * (src/proxy/filters/listener/http_inspector.h wp_http_inspect: the socket's first bytes of an
 * untrusted client). Checked, besides memory safety:
 *  - every prefix gives NEED_MORE or the same verdict as the whole input once decided (a
 *    verdict never changes with more bytes: the inspector may be given any read split);
 *  - an input without '\n' that is not a prefix of the h2 preface and does not start with
 *    CR/LF is never decided (Envoy waits for the end of the request line).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/filters/listener/http_inspector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    wp_http_inspect_result whole = wp_http_inspect(data, size);
    wp_http_inspect_result decided = WP_HI_NEED_MORE;
    for (size_t k = 0; k <= size; k++) {
        wp_http_inspect_result r = wp_http_inspect(data, k);
        if (decided != WP_HI_NEED_MORE && r != decided)
            abort();
        if (r != WP_HI_NEED_MORE)
            decided = r;
    }
    if (decided != whole)
        abort();
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    size_t k = size < 24 ? size : 24;
    if (size > 0 && !memchr(data, '\n', size) && data[0] != '\r' && memcmp(data, preface, k) != 0 &&
        whole != WP_HI_NEED_MORE)
        abort();
    return 0;
}
