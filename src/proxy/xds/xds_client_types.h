/*
 * xds_client_types.h - the xDS client's public types (xds_client.h is its API): the
 * callbacks its owner gives it, its options and the status it reports. Apart so that the
 * client's lower parts (xds_client_state.h: the SotW and delta state, stats) use them without
 * including the stream's own header.
 */
#ifndef WEFT_PROXY_XDS_CLIENT_TYPES_H
#define WEFT_PROXY_XDS_CLIENT_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "core/strbuf.h"
#include "proxy/config/config.h"
#include "proxy/stats/stats.h"
#include "proxy/bootstrap/xds_compose.h"
#include "xds/discovery.h"

typedef struct wp_xds_client wp_xds_client;

typedef struct wp_xds_callbacks {
    /* Load effective (a bootstrap, borrowed: json_incref it to keep it) and publish the
     * snapshot. dyn is valid during the call (json_incref dyn->dump to keep the config-dump
     * elements). Return 0, or -1 with the loader's message appended to err (the client NACKs
     * naming the resource, xds_compose.h wp_xds_locate_error; load with source "xds"). */
    int (*apply)(void *ud, json_t *effective, const wp_xds_dynamic *dyn, wf_strbuf *err);
    /* The stream became connected / disconnected (may be NULL). */
    void (*on_state)(void *ud, bool connected);
    /* A response of type t (WF_XDS_CDS...) was applied and ACKed (accepted) or NACKed (may be
     * NULL). version: the response's version_info. */
    void (*on_update)(void *ud, wf_xds_type t, const char *version, bool accepted);
    void *ud;
    /* Envoy binds a listener's sockets when an LDS update adds it, before the listener warms
     * (listen_hold.h), so an address that cannot be bound fails that LDS update, never a
     * later RDS one. For each LDS update the client loads its state with placeholder route
     * configurations: cfg (borrowed), whose listeners[first..) are the dynamic listeners,
     * warming naming those whose route configuration has not arrived. hold binds (and keeps
     * until they serve) the addresses no serving listener has, and sets failed[name] =
     * reason ("cannot bind 'ADDR': why") for each listener that cannot be bound: the client
     * drops those from the update, applies the rest and NACKs it naming them ("Error
     * adding/updating listener(s) NAME: cannot bind ..."). 0, or -1 when out of memory (the
     * update is NACKed). hold_settle then gets the update's outcome (applied or not). Both
     * may be NULL (nothing is bound before apply). */
    int (*hold)(void *ud, const wp_config *cfg, size_t first, const wf_xds_names *warming,
                json_t *failed);
    void (*hold_settle)(void *ud, bool accepted);
    /* SDS (credentialName secrets over ADS): set (name -> entry, borrowed, NULL when only the
     * wanted names changed) holds every accepted Secret; wanted the names the listeners wait
     * for. Store them (checking each Secret as Envoy loads it) before the client composes the
     * state again. 0, or -1 with the NACK text appended to err (the response is rejected, the
     * previous secrets stay). NULL: SDS responses are rejected. */
    int (*secrets)(void *ud, const json_t *set, const wf_xds_names *wanted, wf_strbuf *err);
    /* NDS (Istio's name table, pilot/nds.h): with node metadata DNS_CAPTURE "true" the client
     * subscribes to WF_XDS_NDS on the SotW stream, as pilot-agent does on its upstream
     * connection, and hands each NameTable (borrowed) to this callback instead of composing
     * it into the bootstrap. 0 ACKs; -1 with a message in err NACKs. NULL: no subscription. */
    int (*name_table)(void *ud, const json_t *name_table, wf_strbuf *err);
} wp_xds_callbacks;

/* Knobs for tests; zero fields take the defaults. */
typedef struct wp_xds_client_opts {
    uint64_t backoff_base_ms;   /* 500 */
    uint64_t backoff_max_ms;    /* 30000 */
    uint64_t answer_timeout_ms; /* a stream that has not answered after this long is closed and
                                 * retried (a silent or black-holed control plane): 15000 */
    uint64_t ping_interval_ms;  /* HTTP/2 keepalive PINGs: 30000 (0 here = default) */
    uint64_t seed;              /* back-off jitter seed; 0 = from the clock */
    const char *reject_type;    /* as WEFT_PROXY_TEST_REJECT_TYPE (NULL = read the env) */
    const char *token_path;     /* the Bearer token sent over a TLS stream (istiod's 15012),
                                 * read for every connection (copied); NULL = none */
} wp_xds_client_opts;

/* For readiness (proxy/server/admin/readiness.h) and status pages. */
typedef struct wp_xds_status {
    bool connected;
    uint64_t connected_ms;         /* continuously connected for, 0 when down */
    int64_t since_update_ms;       /* since the last accepted update, -1 = never */
    bool cds_applied, lds_applied; /* at least one CDS / LDS response accepted */
    uint64_t attempts;             /* connection attempts so far */
    const char *last_nack;         /* text of the last NACK (valid until the next call into
                                    * the client), NULL = none */
} wp_xds_status;

#endif
