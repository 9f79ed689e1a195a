/*
 * base64.h - base64 with the standard alphabet (RFC 4648 §4), shared by the analyzers (Go's
 * encoding/base64 StdEncoding for Secret data and PEM bodies) and the proxy (Istio's
 * x-envoy-peer-metadata header), and decoding with the URL-safe alphabet (RFC 4648 §5, the
 * JWT's base64url: WF_B64_URL).
 */
#ifndef WF_CORE_BASE64_H
#define WF_CORE_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Encodes n bytes of in with '=' padding into out (cap bytes) and adds a NUL. Returns the
 * length written, or 0 when cap is below 4 * ceil(n / 3) + 1. */
size_t wf_base64_encode(const unsigned char *in, size_t n, char *out, size_t cap);

enum {
    WF_B64_SKIP_BLANKS = 1,  /* also skip ' ' and '\t' (pem.Decode strips them first) */
    WF_B64_PAD_OPTIONAL = 2, /* a last quantum may lack its '=' (Envoy decodeWithoutPadding) */
    WF_B64_URL = 4 /* the URL and filename safe alphabet (RFC 4648 §5: '-' and '_' for '+' and
                    * '/'), as JWTs use it; the standard alphabet's '+' and '/' are refused */
};

/* Decodes in[0..len) as Go's base64.StdEncoding.Decode does: '\r' and '\n' are skipped
 * anywhere; padding is required unless WF_B64_PAD_OPTIONAL; nothing but skippable bytes may
 * follow the padding. out must hold 3 * ceil(len / 4) bytes. Returns false on malformed
 * input (bad character, missing or misplaced padding, a dangling sextet), else true with the
 * byte count in *outlen. */
bool wf_base64_decode(const char *in, size_t len, unsigned flags, unsigned char *out,
                      size_t *outlen);
/* wf_base64_decode that also says where malformed input went wrong: *bad_at (when not NULL)
 * gets the offset in `in` Go's CorruptInputError names: the bad byte or the '=' whose
 * padding is wrong, else the start of the incomplete last quantum. */
bool wf_base64_decode_at(const char *in, size_t len, unsigned flags, unsigned char *out,
                         size_t *outlen, size_t *bad_at);

#endif
