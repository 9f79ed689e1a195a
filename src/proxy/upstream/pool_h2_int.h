/*
 * pool_h2_int.h - what pool_h2.c (the connections and the session) and stream_h2.c (one
 * stream's transport socket) share: the structures of an HTTP/2 connection and of a stream,
 * and the calls each side makes on the other. Internal to proxy/upstream (see pool_h2.h for
 * the behaviour, ownership and errors).
 */
#ifndef WEFT_PROXY_UPSTREAM_POOL_H2_INT_H
#define WEFT_PROXY_UPSTREAM_POOL_H2_INT_H

#include <nghttp2/nghttp2.h>

#include "core/strbuf.h"
#include "proxy/upstream/pool_h2.h"

#define H2UP_MAX_FIELDS  128u
#define H2UP_MAX_HEAD    (64u * 1024u)
#define H2UP_REQ_HEADERS WP_UPSTREAM_MAX_HEADERS

/* cluster.<name>.http2.* counters weft counts (Envoy's Http2::CodecStats) */
#define H2UP_COUNTERS(X) X(rx_reset) X(tx_reset) X(trailers) X(stream_refused_errors)

enum {
#define H2UP_IDX_(n) H2UP_##n,
    H2UP_COUNTERS(H2UP_IDX_)
#undef H2UP_IDX_
        H2UP_NCOUNTERS
};

typedef struct ustream ustream;

/* What a stream asks of its connection (pool_h2.c provides them; stream_h2.c, below it, calls
 * them through this table and never names the file above it): frames out now, and the
 * connection's work (waiting requests, drain, idle) from the loop. */
typedef struct wp_h2conn_ops {
    void (*flush)(wp_h2conn *c);
    void (*arm)(wp_h2conn *c);
} wp_h2conn_ops;

struct wp_h2conn {
    const wp_h2conn_ops *ops;
    wp_pool *p;
    int host;
    wp_uconn *u; /* the connection: NULL until it is up, and once it closed */
    wp_pool_req creq;
    nghttp2_session *ss;
    uv_timer_t timer; /* work from the loop (waiting requests, close when idle); frees c */
    struct wp_h2conn *next;
    wp_pool_req *wait_head, *wait_tail;
    ustream *streams;
    uint32_t active, opened;
    uint64_t idle_since; /* uv_now when its last stream ended (idle_timeout) */
    /* ORIGINAL_DST: where the connection goes (host is 0) */
    bool has_dst;
    struct sockaddr_storage dst;
    bool up, draining, closed, writing, flushing, proto_error;
    wf_strbuf out;
};

/* One stream: its transport socket (the stream wp_uconn's), the request parser and body
 * queue, the response rendered as HTTP/1.1 bytes. */
struct ustream {
    wp_tsock base;
    uv_timer_t timer; /* deliveries from the loop; its close ends the socket */
    wp_h2conn *c;     /* NULL once the connection is gone */
    ustream *prev, *next;
    wp_uconn *u;
    int32_t id; /* 0 until the HEADERS were submitted */
    bool reading, sock_closed, timer_closed, h2_open, notify_written, write_pending;
    /* request */
    h1_parser qp;
    h1_header qh[H2UP_REQ_HEADERS];
    wf_strbuf win, odata, otrl;
    size_t ooff, ntrl;
    bool req_end, head_req;
    /* response */
    wf_strbuf blk; /* the header block being read: name\0value\0 */
    size_t nblk;
    int status;
    bool head_done, chunked, resp_end, rst_rx;
    wf_strbuf in;
    size_t in_off, unconsumed;
    int reset; /* a WP_RESET_* + 1 to report once the bytes before it were read; 0 none */
};

/* stream_h2.c: the stream's socket for wp_uconn_stream_new (arg: the ustream); its memory
 * goes once the socket closed and the HTTP/2 stream ended; the HTTP/2 stream ended (its
 * connection's active count drops); the stream's deliveries run from the loop. */
wp_tsock *wp_h2s_init(void *arg, const wp_tsock_cbs *cbs, void *owner);
void wp_h2s_maybe_free(ustream *s);
void wp_h2s_h2_closed(ustream *s);
void wp_h2s_arm(ustream *s);

#endif
