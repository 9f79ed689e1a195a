/*
 * admin_ops.h - the admin server's state, the process's actions it calls, and admin_ops.c:
 * request and answer helpers (query parameters, JSON answers, the server state name) and the
 * operational endpoints (/memory, /certs, /runtime, /healthcheck/fail|ok, /init_dump,
 * /hot_restart_version, /reopen_logs, /stats/recentlookups, and /config_dump's name_regex).
 * admin.c (connections, dispatch, the stats/clusters/config handlers) stands on it; nothing
 * here calls admin.c. Not a public API.
 *
 * Threads: everything here runs on the admin's (main) loop thread.
 */
#ifndef WEFT_PROXY_ADMIN_OPS_H
#define WEFT_PROXY_ADMIN_OPS_H

#include <stdbool.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "http/h1_server.h"
#include "proxy/server/admin/options.h"
#include "proxy/server/instance.h"
#include "proxy/stats/stats.h"

typedef struct wp_admin wp_admin;

/* What the admin API asks of the process that runs it (server.c provides them; ctx is handed
 * back). drain: POST /drain_listeners (Envoy's ListenersHandler::handlerDrainListeners):
 * inbound_only (?inboundonly) stops only the listeners whose traffic_direction is INBOUND;
 * without graceful the listeners stop now and the process stays up; graceful starts the drain
 * sequence once (not ready, server.state DRAINING; later ?graceful calls are ignored) and,
 * unless skip_exit, the process exits at the end of the drain period (--drain-time-s; sooner
 * once no connection is left when every listener stopped). quit: POST /quitquitquit.
 * reopen_logs: POST /reopen_logs, every access-log file reopened (a failure is logged). */
typedef struct {
    void (*drain)(void *ctx, bool inbound_only, bool graceful, bool skip_exit);
    void (*quit)(void *ctx);
    void (*reopen_logs)(void *ctx);
    void *ctx;
} wp_admin_actions;

/* The admin server's state (admin.c starts and stops it; the handlers read it). */
struct wp_admin {
    uv_loop_t *loop;
    h1s_server *http; /* the shared HTTP/1 server (http/h1_server.h) */
    wp_server *srv;
    wp_admin_actions act; /* the process's side of the POST operations */
    const wp_server_opts *opts;
    bool quit_after;
    bool hc_failed; /* POST /healthcheck/fail .. /healthcheck/ok */
};

/* One request: method and path (without the query) as received, query undecoded. */
typedef struct {
    const char *method;
    char path[256];
    char query[4096];
} admin_req;

/* The answer being built: status, content type (a static string) and body (owned). */
typedef struct {
    int status;
    const char *content_type;
    wf_strbuf body;
} admin_resp;

/* ---- admin_ops.c: request and answer helpers ---- */

/* Decodes %XX escapes and "+" (a space) of a query string in place. */
void wp_admin_url_decode(char *s);

/* Value of query parameter name, decoded into out (cap bytes, truncated), or NULL when
 * absent; a bare "name" gives "". */
const char *wp_admin_qparam(const admin_req *r, const char *name, char *out, size_t cap);

/* Envoy's server state name for /ready and /server_info: the init/drain state of srv, and
 * DRAINING when LIVE but health checks were failed (Envoy's Utility::serverState). */
const char *wp_admin_state_name(wp_admin *a);

/* ---- admin_ops.c: handlers; each fills o (status defaults to 200) ---- */
void wp_admin_memory(wp_admin *a, const admin_req *r, admin_resp *o);
void wp_admin_certs(wp_admin *a, const admin_req *r, admin_resp *o);
void wp_admin_runtime(wp_admin *a, const admin_req *r, admin_resp *o);
void wp_admin_healthcheck(wp_admin *a, const admin_req *r, admin_resp *o, bool fail);
void wp_admin_init_dump(wp_admin *a, const admin_req *r, admin_resp *o);
void wp_admin_hot_restart_version(wp_admin *a, const admin_req *r, admin_resp *o);
void wp_admin_reopen_logs(wp_admin *a, const admin_req *r, admin_resp *o);
void wp_admin_recent_lookups(wp_admin *a, const admin_req *r, admin_resp *o);
/* failed_requests.c: GET /failed_requests[?limit=N] (the workers' failed-request rings) */
void wp_admin_failed_requests(wp_admin *a, const admin_req *r, admin_resp *o);

/* /config_dump's name_regex (Envoy's ConfigDumpHandler::buildNameMatcher): keeps in dump (the
 * answer built with the same resource/mask) only the elements whose resource name fully
 * matches re; names are read from plain (the same dump built without mask, so a mask cannot
 * hide them; the element order of both is the same). The bootstrap is never filtered.
 * Returns 0, or -1 (out of memory). */
int wp_admin_filter_names(json_t *dump, const json_t *plain, const pcre2_code *re);

/* Writes JSON j (pretty, as Envoy's admin prints protobuf JSON) and a newline to o->body,
 * content type application/json. Steals j. */
void wp_admin_put_json(admin_resp *o, json_t *j);

#endif
