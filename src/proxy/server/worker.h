/*
 * worker.h - worker threads of weft-proxy (see worker.c). Called from the main thread
 * only, except that each worker's loop runs on its own thread between wp_worker_start and
 * wp_worker_join.
 */
#ifndef WEFT_PROXY_WORKER_H
#define WEFT_PROXY_WORKER_H

#include "core/strbuf.h"
#include "proxy/config/config.h"
#include "proxy/event/worker.h"
#include "proxy/net/address.h"
#include "proxy/upstream/cluster_manager.h"

/* A listening socket of a worker, named after its listener. */
typedef struct wp_wlistener {
    uv_tcp_t tcp;
    wp_worker *w;
    int index; /* listener index in the worker's current snapshot; -1 once removed */
    char name[160];
    wp_addr addr;
    struct wp_wlistener *next;
} wp_wlistener;

/* DRAIN_INBOUND: only the listeners whose traffic_direction is INBOUND (Envoy's
 * StopListenersType::InboundOnly, POST /drain_listeners?inboundonly). */
enum { WP_WORKER_DRAIN = 1, WP_WORKER_STOP = 2, WP_WORKER_DRAIN_INBOUND = 3 };

/* Prepares worker id of srv: its loop, stats shard, access-log writer, and installs the first
 * generation from post (taken over: its reference and sockets; the sockets are bound by the
 * caller, so bind errors surface before any thread starts). Returns 0, or -1 with a message in
 * err (the caller then frees with wp_worker_free). */
int wp_worker_init(wp_worker *w, wp_server *srv, unsigned id, wp_gen_post *post, wf_strbuf *err);
/* Hands the worker a new generation (one reference of gen and the malloc'd fds array, see
 * wp_gen_post, taken over); the worker installs it on its own thread. A post the worker has
 * not taken yet is replaced (its reference dropped, its sockets closed). Thread-safe. */
void wp_worker_post(wp_worker *w, wp_gen *gen, int *fds);
/* Runs the loop on a new thread. Returns 0 or a libuv error. */
int wp_worker_start(wp_worker *w);
/* Asks the worker to drain (stop accepting, close idle connections, close others after
 * their current request), to do so for its INBOUND listeners only, or to stop (close
 * everything now). A command not taken yet is replaced. Thread-safe. */
void wp_worker_command(wp_worker *w, int cmd);
/* Waits for the worker's loop to end (after WP_WORKER_STOP). */
void wp_worker_join(wp_worker *w);
/* Frees what wp_worker_init made (after join, or after a failed init). */
void wp_worker_free(wp_worker *w);
/* Open downstream connections (racy read; for drain decisions only). */
size_t wp_worker_connections(wp_worker *w);

#endif
