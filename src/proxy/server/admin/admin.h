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
#include "proxy/server/instance.h"
#include "proxy/server/admin/admin_ops.h"
#include "proxy/server/admin/options.h"

/* Listens on srv->gen->cfg->admin_addr; actions (copied) serve the POST operations. Returns
 * NULL with a message in err when it cannot listen. */
wp_admin *wp_admin_start(uv_loop_t *loop, wp_server *srv, const wp_admin_actions *actions,
                         const wp_server_opts *opts, wf_strbuf *err);
/* Stops listening and closes admin connections (async; the loop finishes it). */
void wp_admin_close(wp_admin *a);
/* True after POST /healthcheck/fail until POST /healthcheck/ok (a NULL admin: false). */
bool wp_admin_hc_failed(const wp_admin *a);
/* GET /failed_requests' answer (failed_requests.c): {"failed_requests": [...]} of srv's
 * workers' rings, newest first, at most limit entries (SIZE_MAX = all). A new object, NULL when
 * out of memory. Also what the status port relays (agent/status.h). Main thread only. */
json_t *wp_failed_requests_json(const wp_server *srv, size_t limit);
/* Frees the admin after its loop has run the close callbacks. */
void wp_admin_free(wp_admin *a);

#endif
