/*
 * worker.h - worker threads of weft-proxy (see worker.c). Called from the main thread
 * only, except that each worker's loop runs on its own thread between wp_worker_start and
 * wp_worker_join.
 */
#ifndef WEFT_PROXY_WORKER_H
#define WEFT_PROXY_WORKER_H

#include "core/strbuf.h"
#include "proxy/proxy_internal.h"

enum { WP_WORKER_DRAIN = 1, WP_WORKER_STOP = 2 };

/* Prepares worker id of srv: its loop, its listener sockets (bound now, so bind errors
 * surface before any thread starts), pools, stats shard, access-log writer.
 * Returns 0, or -1 with a message in err (the caller then frees with wp_worker_free). */
int wp_worker_init(wp_worker *w, wp_server *srv, unsigned id, wf_strbuf *err);
/* Runs the loop on a new thread. Returns 0 or a libuv error. */
int wp_worker_start(wp_worker *w);
/* Asks the worker to drain (stop accepting, close idle connections, close others after
 * their current request) or stop (close everything now). Thread-safe. */
void wp_worker_command(wp_worker *w, int cmd);
/* Waits for the worker's loop to end (after WP_WORKER_STOP). */
void wp_worker_join(wp_worker *w);
/* Frees what wp_worker_init made (after join, or after a failed init). */
void wp_worker_free(wp_worker *w);
/* Open downstream connections (racy read; for drain decisions only). */
size_t wp_worker_connections(wp_worker *w);

#endif
