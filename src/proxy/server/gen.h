/*
 * gen.h - generations (gen.c): one applied config snapshot with everything indexed by its
 * cluster and listener numbers (the structs are upstream/cluster_manager.h's: wp_gen
 * process-wide, reference counted; wp_wgen per worker, counted by its users). Threads as
 * each function says.
 */
#ifndef WEFT_PROXY_SERVER_GEN_H
#define WEFT_PROXY_SERVER_GEN_H

#include "core/strbuf.h"
#include "proxy/config/config.h"
#include "proxy/event/worker.h"
#include "proxy/server/instance.h"
#include "proxy/upstream/cluster_manager.h"

/* A generation of cfg (takes over one reference of cfg): compiles its access logs (opening
 * their files in srv->alog_files), registers its stats, allocates the cluster runtime and
 * outlier state. NULL with the reason appended to err (cfg's reference is dropped then).
 * Main thread. */
wp_gen *wp_gen_new(wp_server *srv, wp_config *cfg, wf_strbuf *err);
void wp_gen_ref(wp_gen *g);
/* Drops a reference; the last frees cfg's reference, the runtime and the stat slot table.
 * Any thread. */
void wp_gen_unref(wp_gen *g);
/* Worker side: a new wp_wgen of gen (takes over the reference, also on failure). NULL on out
 * of memory. */
wp_wgen *wp_wgen_new(wp_worker *w, wp_gen *gen);
/* Makes wg the worker's current generation; the previous one is retired (its idle upstream
 * connections closed) and freed once unused. */
void wp_wgen_install(wp_worker *w, wp_wgen *wg);
/* Frees every generation of the worker (shutdown, after the loop closed every handle). */
void wp_wgen_free_all(wp_worker *w);

#endif
