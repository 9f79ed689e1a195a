/*
 * peer_exchange.h - the wire protocol of Istio's TCP metadata exchange, one connection side at a
 * time: the preamble a side writes (header + Any of a Struct) and the peer's read from the front
 * of the bytes received. Used by the downstream network filter
 * (filters/network/metadata_exchange.h, with the TCP proxy) and by the upstream connections of
 * a cluster that carries the exchange (upstream/upstream.c): it sits below both.
 *
 * Followed: istio/proxy source/extensions/filters/network/metadata_exchange/metadata_exchange.cc
 * (now envoy contrib/istio/filters/network/metadata_exchange): when the connection's negotiated
 * ALPN is the configured protocol, each side writes, ahead of any byte it forwards, an initial
 * header (magic 0x3D230467 then the length of what follows, both 32-bit big-endian) and a
 * serialized google.protobuf.Any {type_url "type.googleapis.com/google.protobuf.Struct", value:
 * Struct {"x-envoy-peer-metadata": <the workload Struct, istio_peer.h>,
 * "x-envoy-peer-metadata-id": <node id>}} (deterministic: keys sorted); it reads the peer's
 * header and Any from the front of the bytes it receives, drains them (the application never
 * sees them) and keeps the peer's workload as the connection's filter state downstream_peer
 * (downstream filter) or upstream_peer (upstream filter) for istio.stats. Not the protocol's
 * ALPN, a wrong magic, an Any that does not parse, or the peer half-closing before its header
 * was complete: no peer (Istio's peer_not_found), the bytes pass unchanged (after a correct
 * header whose data is refused, the 8 header bytes are drained, as Istio does). weft refuses a
 * data length over WP_TCP_MX_MAX_DATA (Istio has no limit; its buffer grows).
 *
 * Pure functions; no global state. A wp_tcp_mx belongs to its connection's worker.
 */
#ifndef WEFT_PROXY_NET_PEER_EXCHANGE_H
#define WEFT_PROXY_NET_PEER_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "proxy/net/deferred.h"
#include "proxy/stream_info/istio_peer.h"

#define WP_TCP_MX_TYPE       "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange"
#define WP_TCP_MX_PROTOCOL   "istio-peer-exchange"
#define WP_TCP_MX_MAGIC      0x3D230467u
#define WP_TCP_MX_HEADER_LEN 8u
#define WP_TCP_MX_MAX_DATA   8192u /* bytes after the header weft accepts */
#define WP_TCP_MX_STRUCT_URL "type.googleapis.com/google.protobuf.Struct"

/* One filter's config (bootstrap-decoded; arena-owned). */
typedef struct wp_tcp_mx_config {
    const char *protocol;    /* the ALPN that turns the exchange on */
    const uint8_t *preamble; /* this node's header + Any, written to the peer */
    size_t preamble_len;
} wp_tcp_mx_config;

/* Appends this workload's preamble (header + Any) to out; check wf_strbuf_failed(out). */
void wp_tcp_mx_encode(const wp_istio_workload *w, const char *node_id, wf_strbuf *out);

/* The peer read from the wire: the workload's fields point into buf. */
typedef struct wp_tcp_mx_peer {
    wp_istio_workload w;
    uint8_t buf[1024];
} wp_tcp_mx_peer;

enum { WP_TCP_MX_MORE = 0, WP_TCP_MX_DONE = 1, WP_TCP_MX_INVALID = -1 };

/* Reads a preamble from the front of p (len bytes): WP_TCP_MX_MORE (not all there yet;
 * *consumed 0), WP_TCP_MX_DONE (*consumed = its length; *peer filled, its workload empty when
 * the Struct lacks x-envoy-peer-metadata), WP_TCP_MX_INVALID (*consumed: 0 for a wrong magic,
 * the header's 8 bytes for a data length over WP_TCP_MX_MAX_DATA or an Any / Struct that does
 * not parse). */
int wp_tcp_mx_decode(const uint8_t *p, size_t len, wp_tcp_mx_peer *peer, size_t *consumed);

/* One connection side's exchange (Istio's conn_state_). */
typedef enum {
    WP_TCP_MX_PROTOCOL_NOT_READ, /* ALPN not looked at yet */
    WP_TCP_MX_READING,           /* our preamble is due / out; reading the peer's */
    WP_TCP_MX_FINISHED,          /* the peer's was read (have_peer) */
    WP_TCP_MX_OFF,               /* Istio's Invalid: another ALPN or a bad preamble */
} wp_tcp_mx_state;

typedef struct wp_tcp_mx {
    const wp_tcp_mx_config *cfg;
    wp_tcp_mx_state state;
    bool written;   /* our preamble was handed to the socket */
    bool have_peer; /* peer holds the peer's workload */
    wp_tcp_mx_peer peer;
    wp_deferred_item dd; /* the downstream filter's deferred free */
} wp_tcp_mx;

/* Looks at the negotiated ALPN once (NULL = none): READING when it is cfg->protocol, else
 * OFF. Returns true while the exchange is on (READING). */
bool wp_tcp_mx_begin(wp_tcp_mx *m, const char *alpn);
/* Our preamble when it is still to be written (marks it written): true and *p, *n. */
bool wp_tcp_mx_take_preamble(wp_tcp_mx *m, const uint8_t **p, size_t *n);
/* The peer's preamble from the front of the received bytes p (len): how many leading bytes to
 * drain; *hold is set when nothing may be forwarded yet (more bytes needed). end_stream: the
 * peer ended its stream (an incomplete preamble is given up, Istio's "closed early"). */
size_t wp_tcp_mx_on_bytes(wp_tcp_mx *m, const uint8_t *p, size_t len, bool end_stream, bool *hold);
/* The peer's workload, NULL when there is none (yet). */
const wp_istio_workload *wp_tcp_mx_peer_workload(const wp_tcp_mx *m);

#endif
