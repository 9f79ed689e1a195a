/*
 * header_list.h - the header fields of one head, in order (Envoy's HeaderMap as the connection
 * manager and the router hand it to the codec's encodeHeaders, source/common/http/
 * header_map_impl.h): the layers above the codec build a list of name/value pairs and a codec
 * (http/codec.h) turns it into bytes; nothing above the codec writes wire text.
 *
 * Inputs: each entry's name and value point at the caller's bytes (the request's head, the
 * upstream's response buffer, the configuration, a buffer of the caller's holding a number the
 * proxy formatted), which must stay valid until the list is encoded. Memory: a fixed capacity
 * of WP_HDR_LIST_MAX entries inside the list; nothing is allocated (a list lives on the stack
 * of the function that builds and encodes a head). Errors: an add beyond the capacity is not
 * stored and marks the list overflowed; a codec refuses to encode an overflowed list (the
 * caller treats it as it treats running out of memory).
 *
 * Threads: a list belongs to the caller.
 */
#ifndef WEFT_PROXY_HTTP_HEADER_LIST_H
#define WEFT_PROXY_HTTP_HEADER_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "http/h1_parser.h"

/* Entries of a list: the 99 fields a request or response may carry, the 4 the connection
 * manager adds to a request, the proxy's own (x-envoy-*, host, date, server) and the route's
 * header additions, with room to spare. */
#define WP_HDR_LIST_MAX 256u

typedef struct wp_hdr_list {
    size_t n;
    bool overflow; /* an add did not fit: the list cannot be encoded */
    h1_header e[WP_HDR_LIST_MAX];
} wp_hdr_list;

/* An empty list (the entries need no zeroing). */
static inline void wp_hdr_list_init(wp_hdr_list *l)
{
    l->n = 0;
    l->overflow = false;
}

/* Appends name: value (the caller's bytes). Returns false (and marks the list overflowed)
 * when the list is full. */
static inline bool wp_hdr_list_add(wp_hdr_list *l, const char *name, size_t nlen, const char *value,
                                   size_t vlen)
{
    if (l->n == WP_HDR_LIST_MAX) {
        l->overflow = true;
        return false;
    }
    l->e[l->n++] = (h1_header){{name, nlen}, {value, vlen}};
    return true;
}

/* Appends a field as parsed or configured. */
static inline bool wp_hdr_list_add_field(wp_hdr_list *l, const h1_header *h)
{
    return wp_hdr_list_add(l, h->name.p, h->name.len, h->value.p, h->value.len);
}

/* Appends a field whose name is a string literal. */
#define WP_HDR_LIST_ADD_LIT(l, lit, value, vlen)                                                   \
    wp_hdr_list_add((l), (lit), sizeof(lit) - 1, (value), (vlen))

#endif
