/*
 * debug_internal.h - what the debug server (debug.c: the reply helpers) and its view files
 * (debug_views.c, debug_dump.c, debug_mesh.c) share. Not for use outside src/pilot/debug*.c
 * and their tests.
 */
#ifndef WF_PILOT_DEBUG_INTERNAL_H
#define WF_PILOT_DEBUG_INTERNAL_H

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "pilot/ads.h"
#include "pilot/debug.h"

/* r gets status and j (consumed; NULL = out of memory, answered 500) as JSON indented with 2
 * spaces and a final newline. */
void wf_debug_reply_json(wf_debug_reply *r, int status, json_t *j);

/* /debug/config_dump (debug_dump.c). */
void wf_debug_config_dump(wf_ads *a, const char *query, wf_debug_reply *r);
/* istiod's /debug/ndsz?proxyID=: {"resource": NameTable} of a connected proxy (pilot/nds.h);
 * 400 without proxyID or when the proxy has no DNS_CAPTURE, 404 when not connected. */
void wf_debug_ndsz(wf_ads *a, const char *query, wf_debug_reply *r);

/* The MeshConfig istiod's /debug/mesh answers for mesh (NULL = Istio's defaults only): a new
 * object, or NULL when out of memory (debug_mesh.c). */
json_t *wf_debug_mesh_json(const wf_meshcfg *mesh);
/* /debug/mesh: the current snapshot's MeshConfig (debug_mesh.c). */
void wf_debug_mesh(wf_ads *a, wf_debug_reply *r);

#endif
