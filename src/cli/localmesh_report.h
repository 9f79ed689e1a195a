/*
 * localmesh_report.h - `weftctl up`'s view of the mesh it started (docs/local-mesh.md "What up
 * and status report"): one look at everything (pilot's /ready and /debug/syncz, every proxy's
 * /healthz/ready on podIP:15020, the supervisor's STATE/mesh.json), the progress line, the
 * summary of what is wrong, and the foreground's following of pilot's config errors.
 *
 * Judgements (what fails, how lines read) are localmesh_health.h's; this module does the
 * HTTP probes (each bounded by 1 s; 3 s for config_errors) and prints. Output goes to stderr.
 */
#ifndef WF_CLI_LOCALMESH_REPORT_H
#define WF_CLI_LOCALMESH_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "cli/localmesh_plan.h"
#include "core/strbuf.h"

/* 0 when addr ("ip:port") answers 200 on path within 1 s; else -1 with why in reason
 * ("cannot connect to ...", "503 <first line of the body>"). */
int wf_lm_probe(const char *addr, const char *path, wf_strbuf *reason);

/* A proxy's problem, as up and status name it: "not SYNCED: <why>" (pilot's syncz, NULL when
 * pilot did not answer) or "not ready (http://ADDR/healthz/ready): <why>" (addr: its status
 * port), in why. False (why empty) when it is SYNCED and ready. */
bool wf_lm_proxy_problem(const json_t *syncz, const char *id, const char *addr, wf_strbuf *why);

/* The node port forwards to the gateway pod's 8080 (target, "ip:port"): once the gateway proxy
 * (gw_id, "pod.ns") is SYNCED in syncz, something must answer there. True with the problem
 * ("node port: ... needs a Service ...") in why when nothing does. Call it only when DIR has a
 * Gateway (else nothing is meant to listen); an unsynced gateway is the proxies' problem. */
bool wf_lm_node_port_problem(const json_t *syncz, const char *gw_id, const char *target,
                             wf_strbuf *why);

/* One look at a starting mesh. Counts are over the plan's proxies of started pods and
 * mesh.json's app processes; the documents are owned (wf_lm_look_free). */
typedef struct wf_lm_look {
    bool pilot_ready;
    size_t proxies, synced, ready; /* proxies of started pods */
    size_t proxies_ok, nacked;     /* SYNCED and ready; refusing pilot's config */
    size_t apps, running, failed;  /* app processes: settled running, stopped with a reason */
    json_t *syncz, *mesh;          /* the last documents read (NULL when unavailable) */
} wf_lm_look;

/* Look again (l's old documents are freed). True when settled: pilot ready, every proxy
 * SYNCED and ready (or refusing pilot's config: nothing to wait for), every app running (or
 * failed: likewise). */
bool wf_lm_look_take(const wf_lm_plan *p, wf_lm_look *l);
void wf_lm_look_free(wf_lm_look *l);

/* "waiting for 5 pods: pilot ready, 3/4 proxies SYNCED, 2/4 ready, 4/5 apps running, 1
 * cannot start ..." on stderr when it differs from last (updated): a line each time, or
 * rewritten in place on a terminal, which wf_lm_progress_end then ends. */
void wf_lm_progress(const wf_lm_plan *p, const wf_lm_look *l, wf_strbuf *last);
void wf_lm_progress_end(const wf_strbuf *last);

/* Print pilot's config errors and warnings (wf_lm_cfg_print) and, under "problems:", apps
 * that cannot start or exited, pilot or proxies not SYNCED or not ready, and a node port
 * with no gateway listener behind it (checked when DIR has a Gateway). seen (an object)
 * receives each config error line printed, for wf_lm_follow_config. Returns how many
 * problems make `up` fail (0: nothing wrong). */
size_t wf_lm_report_problems(const wf_lm_plan *p, const wf_lm_look *l, json_t *seen);

/* Read pilot's config errors once: print those not in seen ("pilot rejected: LINE", or "not
 * implemented (accepted, no effect): LINE") and those of seen no longer reported ("no longer
 * reported: LINE"), and make seen the current set. An unreachable pilot changes nothing. */
void wf_lm_follow_config(const wf_lm_plan *p, json_t *seen);

#endif
