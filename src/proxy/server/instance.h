/*
 * instance.h - the weft-proxy process as its parts see it (Envoy's Server::Instance): the
 * current generation, the workers, the stats store, the access-log files, the server state
 * the admin API reports and changes. Defined apart from server.h so that the admin API
 * (server/admin/) and the workers read it without including the server's main file.
 * Threads: the main thread's, except the atomics (the workers read the id counters and the
 * worker start count through their own pointers, event/worker.h).
 */
#ifndef WEFT_PROXY_SERVER_INSTANCE_H
#define WEFT_PROXY_SERVER_INSTANCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "proxy/event/worker.h"
#include "proxy/stats/stats.h"
#include "proxy/upstream/cluster_manager.h"

typedef struct wp_server wp_server;

/* The process: its workers, stores and current generation. */
struct wp_server {
    wp_gen *gen; /* current generation (main thread only: workers use their own) */
    unsigned nworkers;
    wp_worker *workers;
    wp_stats *stats_store;     /* process-wide; shard nworkers is the main thread's */
    struct wp_istio_rt *istio; /* Istio standard metrics (istio_stats.h), NULL when unused */
    struct wp_alog_files *alog_files;
    struct wp_secrets *secrets; /* SDS `default` / `ROOTCA` (sds/secrets.h), never NULL */
    atomic_uint_fast64_t next_conn_id;
    atomic_uint_fast64_t next_stream_id;
    uint64_t flush_interval_ms;
    atomic_int state; /* 0 LIVE, 1 DRAINING, 2 PRE_INITIALIZING, 3 INITIALIZING */
    atomic_int workers_started;
    int64_t start_time; /* uv_now of the main loop at start, ms */
    double loaded_unix; /* when the snapshot was applied, seconds since the epoch */
};

#endif
