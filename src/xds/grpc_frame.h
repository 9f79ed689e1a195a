/*
 * grpc_frame.h - gRPC length-prefixed message framing and grpc-message text encoding.
 *
 * Follows "gRPC over HTTP2" (grpc/grpc doc/PROTOCOL-HTTP2.md):
 *   Length-Prefixed-Message = Compressed-Flag (1 byte, 0 or 1)
 *                             Message-Length (4 bytes, unsigned big-endian)
 *                             Message (Message-Length bytes)
 * weft never negotiates a grpc-encoding, so a message with Compressed-Flag 1 is an error
 * (the protocol doc: a compressed message without a known encoding is INTERNAL). A flag byte
 * other than 0 or 1 is a framing error. Messages longer than the configured maximum are
 * rejected before any allocation (gRPC reports RESOURCE_EXHAUSTED for those). A zero-length
 * message is valid and is delivered as (non-NULL pointer, 0).
 *
 * grpc-message trailer values are percent-encoded as the protocol doc says: bytes outside
 * 0x20..0x7E and '%' itself become %XX.
 *
 * No global state: everything lives in the wf_grpc_decoder the caller owns.
 */
#ifndef WF_XDS_GRPC_FRAME_H
#define WF_XDS_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WF_GRPC_HDR_LEN         5u
#define WF_GRPC_DEFAULT_MAX_MSG ((size_t)4 * 1024 * 1024) /* bytes, payload only */

/* gRPC status codes used by the transport (grpc/grpc doc/statuscodes.md). */
enum {
    WF_GRPC_OK = 0,
    WF_GRPC_CANCELLED = 1,
    WF_GRPC_UNKNOWN = 2,
    WF_GRPC_INVALID_ARGUMENT = 3,
    WF_GRPC_RESOURCE_EXHAUSTED = 8,
    WF_GRPC_UNIMPLEMENTED = 12,
    WF_GRPC_INTERNAL = 13,
    WF_GRPC_UNAVAILABLE = 14,
    WF_GRPC_UNAUTHENTICATED = 16,
    WF_GRPC_PERMISSION_DENIED = 7,
};

/* Decoder / encoder errors (negative; 0 is success). */
typedef enum wf_grpc_err {
    WF_GRPC_E_OK = 0,
    WF_GRPC_E_COMPRESSED = -1, /* Compressed-Flag 1: no encoding is negotiated */
    WF_GRPC_E_BAD_FLAG = -2,   /* Compressed-Flag neither 0 nor 1 */
    WF_GRPC_E_TOO_LARGE = -3,  /* Message-Length above the maximum */
    WF_GRPC_E_NOMEM = -4,      /* allocation failed */
    WF_GRPC_E_STOPPED = -5,    /* the message callback asked to stop */
} wf_grpc_err;

/* Called once per whole message. msg is valid only during the call (never NULL, even for
 * len 0). Return 0 to go on, non-zero to stop decoding (feed then returns WF_GRPC_E_STOPPED
 * and the decoder refuses further input). */
typedef int (*wf_grpc_msg_fn)(void *ud, const uint8_t *msg, size_t len);

typedef struct wf_grpc_decoder {
    size_t max_msg; /* bytes */
    uint8_t hdr[WF_GRPC_HDR_LEN];
    size_t hdr_have; /* header bytes collected for the current message */
    uint8_t *buf;    /* payload of the current message (heap), NULL between messages */
    size_t msg_len;  /* payload length of the current message */
    size_t msg_have; /* payload bytes collected */
    int err;         /* sticky wf_grpc_err, 0 while healthy */
} wf_grpc_decoder;

/* max_msg 0 means WF_GRPC_DEFAULT_MAX_MSG. Never fails. */
void wf_grpc_decoder_init(wf_grpc_decoder *d, size_t max_msg);

/* Feeds len bytes (any split: a message may arrive byte by byte or many per call). Calls fn
 * for every completed message. Returns 0, or a wf_grpc_err; errors are sticky. Buffers at
 * most one partial message (<= max_msg bytes). */
int wf_grpc_decoder_feed(wf_grpc_decoder *d, const uint8_t *data, size_t len, wf_grpc_msg_fn fn,
                         void *ud);

/* True when no partial message is pending (end of stream here is clean). */
bool wf_grpc_decoder_idle(const wf_grpc_decoder *d);

/* Frees the partial message buffer; the decoder may be re-initialised afterwards. */
void wf_grpc_decoder_free(wf_grpc_decoder *d);

/* Writes the 5-byte prefix for an uncompressed message of len bytes. Returns 0, or
 * WF_GRPC_E_TOO_LARGE when len does not fit in 32 bits. */
int wf_grpc_frame_header(uint8_t out[WF_GRPC_HDR_LEN], size_t len);

/* Short English text for a wf_grpc_err ("message too large", ...). */
const char *wf_grpc_strerror(int err);

/* The gRPC status a receiver reports for a decoder error (RESOURCE_EXHAUSTED for oversize,
 * INTERNAL otherwise). */
int wf_grpc_err_status(int err);

/* Percent-encodes s for a grpc-message value. Returns a heap string (caller frees) or NULL
 * when out of memory. */
char *wf_grpc_message_encode(const char *s);

/* Decodes a grpc-message value of len bytes; invalid %-sequences are kept literally, as the
 * protocol doc asks. Returns a heap NUL-terminated string (caller frees) or NULL on OOM. */
char *wf_grpc_message_decode(const char *s, size_t len);

#endif
