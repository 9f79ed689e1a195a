/*
 * admin_internal.h - what admin.c (connections, dispatch, the stats/clusters/config
 * handlers) and admin_ops.c (the operational endpoints: /memory, /certs, /runtime,
 * /healthcheck/fail|ok, /init_dump, /hot_restart_version, /reopen_logs,
 * /stats/recentlookups, and /config_dump's name_regex) share. Not a public API.
 *
 * Threads: everything here runs on the admin's (main) loop thread.
 */
#ifndef WEFT_PROXY_ADMIN_INTERNAL_H
#define WEFT_PROXY_ADMIN_INTERNAL_H

#include <stdbool.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/admin.h"
#include "proxy/stats.h"

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

/* The server state of an admin (admin.c owns the struct). */
wp_server *wp_admin_server(wp_admin *a);
void wp_admin_set_hc_failed(wp_admin *a, bool failed);

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
