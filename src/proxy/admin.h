/*
 * admin.h - weft-proxy's admin server (Envoy's admin interface, docs operations/admin):
 * /ready, /server_info, /stats (text, ?filter=, ?usedonly, ?type=, ?format=json|prometheus),
 * /stats/prometheus, /stats/recentlookups, /clusters (text and ?format=json), /listeners,
 * /config_dump (?resource=, ?mask=, ?name_regex=, ?include_eds), /init_dump, /memory, /certs,
 * /runtime, /hot_restart_version, /help; POST only: /logging (no query lists; ?level=,
 * ?paths=, ?<logger>=<level>), /quitquitquit, /drain_listeners, /reset_counters,
 * /healthcheck/fail, /healthcheck/ok, /reopen_logs (other methods: 405). Details in admin.c
 * and admin_ops.c. Runs on the main thread's loop on the shared HTTP/1 server
 * (http/h1_server.h): every response closes its connection; a request body beyond 64 KiB is
 * answered 413 and a head beyond 60 KiB 431 (each closes after its answer: FIN, then input is
 * dropped for up to 1 s, Envoy's delayed close).
 */
#ifndef WEFT_PROXY_ADMIN_H
#define WEFT_PROXY_ADMIN_H

#include <uv.h>

#include "core/strbuf.h"
#include "proxy/proxy_internal.h"
#include "proxy/server.h"

typedef struct wp_admin wp_admin;

/* Listens on srv->gen->cfg->admin_addr. main_ctx is handed back to wp_server_request_drain and
 * wp_server_request_quit. Returns NULL with a message in err when it cannot listen. */
wp_admin *wp_admin_start(uv_loop_t *loop, wp_server *srv, void *main_ctx,
                         const wp_server_opts *opts, wf_strbuf *err);
/* Stops listening and closes admin connections (async; the loop finishes it). */
void wp_admin_close(wp_admin *a);
/* True after POST /healthcheck/fail until POST /healthcheck/ok (a NULL admin: false). */
bool wp_admin_hc_failed(const wp_admin *a);
/* Frees the admin after its loop has run the close callbacks. */
void wp_admin_free(wp_admin *a);

/* Implemented by server.c. */
/* POST /drain_listeners (Envoy's ListenersHandler::handlerDrainListeners): inbound_only
 * (?inboundonly) stops only the listeners whose traffic_direction is INBOUND; without graceful
 * the listeners stop now and the process stays up; graceful starts the drain sequence once
 * (not ready, server.state DRAINING; later ?graceful calls are ignored) and, unless skip_exit,
 * the process exits at the end of the drain period (--drain-time-s; sooner once no connection
 * is left when every listener stopped). */
void wp_server_request_drain(void *main_ctx, bool inbound_only, bool graceful, bool skip_exit);
void wp_server_request_quit(void *main_ctx);
/* Reopens every access-log file (POST /reopen_logs and SIGUSR1); a failure is logged. */
void wp_server_reopen_logs(wp_server *srv);

#endif
