/*
 * localmesh_health.h - what is wrong in a running local mesh, for `weftctl up` (its summary
 * and the foreground's live reports) and `weftctl status` (docs/local-mesh.md "What up and
 * status report").
 *
 * Inputs are the documents the mesh already publishes: weft-pilot's GET /debug/config_errors
 * (a JSON array of {"file", "line", "column", "resource": "Kind ns/name", "field", "message",
 * "kept_last_good", "level": "error"|"warning" (absent: error), "code": "WFT0001"...}),
 * /debug/syncz (one entry per proxy: "proxy": "<pod>.<ns>", "<type>_status", "connected") and
 * the supervisor's mesh.json processes (localmesh_state.h). Nothing here keeps state; the
 * fetch functions block for at most their timeout.
 *
 * Config errors are printed as the validation webhook would refuse the resources:
 * `FILE:LINE:COL: Kind ns/name: field: message`; warnings (Istio fields weft accepts but does
 * not implement) the same, followed by ` [CODE]`. An error fails `up`; a warning does only
 * when its code is WF_LM_CODE_SECURITY (an unenforced security control).
 */
#ifndef WF_CLI_LOCALMESH_HEALTH_H
#define WF_CLI_LOCALMESH_HEALTH_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "core/strbuf.h"

#define WF_LM_CODE_SECURITY "WFT0002" /* a security control weft does not enforce */
#define WF_LM_APP_SETTLE_MS 1000      /* an app counts as running after this long */

/* GET path from weft-pilot's monitoring address; the JSON document (new reference), or NULL
 * with err naming the address and what failed. */
json_t *wf_lm_pilot_json(const char *path, long timeout_ms, wf_strbuf *err);

/* True when the config_errors entry is a warning ("level": "warning"). */
bool wf_lm_cfg_is_warning(const json_t *e);

/* True when the entry makes `up` fail: an error, or a warning with WF_LM_CODE_SECURITY. */
bool wf_lm_cfg_fails(const json_t *e);

/* The entry as one line (no newline): "FILE:LINE:COL: Kind ns/name: field: message", plus
 * " [CODE]" for warnings that carry a code. FILE alone when line is 0; the field part is
 * left out when empty. Replaces out's contents. */
/* Pilot reads a MeshConfig taken from a ConfigMap in DIR as STATE/meshconfig: entries of cfg
 * about file `from` are moved to where that text is in file `to` (line + line0, column +
 * col0), so that they name the user's file. */
void wf_lm_cfg_remap(json_t *cfg, const char *from, const char *to, long line0, long col0);

void wf_lm_cfg_line(const json_t *e, wf_strbuf *out);

/* Print the entries of arr (a config_errors array) to f: errors under "pilot rejected N
 * resource(s) (as the validation webhook would refuse them; each keeps its last good version
 * or is left out):" and warnings under "accepted with a warning: N fields (...)", each line
 * indented by two spaces. Prints nothing for an empty array. Returns how many entries fail
 * (wf_lm_cfg_fails). */
size_t wf_lm_cfg_print(FILE *f, const json_t *arr);

/* Why a process of mesh.json (an app, a proxy, pilot) is a problem, in buf (NUL-terminated),
 * or NULL when it is fine or nothing is known yet (starting, stopping): stopped with a reason
 * ("cannot start: command not found: x (restarted 3 times)"), or running but it stopped
 * since the mesh started ("restarted 2 times, last: exited with status 1"). */
const char *wf_lm_app_problem(const json_t *proc, char *buf, size_t cap);

/* True when the app process has settled: running for WF_LM_APP_SETTLE_MS by now_ms (Unix
 * ms), or stopped with a reason (it failed: nothing to wait for). */
bool wf_lm_app_settled(const json_t *proc, long long now_ms);

#define WF_LM_NACK_SETTLE_S 2 /* a type in ERROR this long is a failure, not a moment */

/* The proxy "<pod>.<ns>" in a syncz array: true when it is connected and every type pilot
 * tracks for it is SYNCED (IGNORED: not watched, fine). Else false with why ("not
 * connected to pilot", "LDS ERROR: ...", "CDS STALE") in why (replaced), and *nacked (may
 * be NULL) set when a type has been in ERROR (the proxy refused pilot's config) for
 * WF_LM_NACK_SETTLE_S or more: it stays so until the config changes, nothing to wait for. */
bool wf_lm_proxy_synced(const json_t *syncz, const char *id, wf_strbuf *why, bool *nacked);

#endif
