/*
 * hex.h - hexadecimal digits: the one helper the HTTP parser (chunk sizes), the gRPC framing
 * (grpc-message percent-decoding) and the analyzers (URL unescaping) share.
 */
#ifndef WF_CORE_HEX_H
#define WF_CORE_HEX_H

/* The value 0..15 of hex digit c (either case), or -1 when c is not one. */
static inline int wf_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
