/*
 * localmesh_super.h - the local mesh's supervisor: runs a plan's processes on a libuv loop.
 *
 * - weft-pilot starts first, everything else 300 ms later (proxies retry the xDS stream
 *   anyway); each process runs in its own session (a terminal's Ctrl-C reaches only the
 *   supervisor), with stdout and stderr appended to its log file and its working folder DIR.
 * - A process that exits is restarted after a back-off of 1 s, doubling up to 30 s; a process
 *   that ran for 10 s or more starts again from 1 s. Every start, exit and restart is a line
 *   in the supervisor's log.
 * - The port forwarder 127.0.0.1:30000 -> gateway pod IP:8080 runs on the same loop.
 * - When the MeshConfig came from a ConfigMap in DIR, its file is read again every 2 s and
 *   STATE/meshconfig rewritten when data.mesh changed (pilot watches that file).
 * - mesh.json is rewritten on every change (PIDs with their /proc start times, states,
 *   restart counts, when each started, why each last stopped: "exited with status N",
 *   "killed by signal N (Name)", "command not found: NAME" when it cannot start) and
 *   STATE/supervisor.pid holds the supervisor's PID while it runs.
 * - SIGINT, SIGTERM or SIGHUP (the terminal went away) stops everything: SIGTERM to each process
 * group, SIGKILL to what is left after 10 s; a second signal sends SIGKILL at once.
 * - Pod network netns (localmesh_netns.h): a process with a namespace runs through `nsenter
 *   --net=/run/netns/NAME [--setuid U --setgid U] --` (which execs it), pilot's plaintext xDS
 *   is forwarded from the host link's IP for the pods, and once everything stopped the pod
 *   network is removed (up built it before starting the supervisor).
 */
#ifndef WF_CLI_LOCALMESH_SUPER_H
#define WF_CLI_LOCALMESH_SUPER_H

#include <stdio.h>

#include "cli/localmesh_plan.h"
#include "core/strbuf.h"

#define WF_LM_BACKOFF_MIN_MS 1000u
#define WF_LM_BACKOFF_MAX_MS 30000u
#define WF_LM_STABLE_MS      10000u /* a run this long resets the back-off */
#define WF_LM_STOP_GRACE_MS  10000u /* SIGTERM, then SIGKILL after this */

/* Run the plan until SIGINT/SIGTERM/SIGHUP (the state folder must be prepared: state module).
 * log receives the supervisor's own lines (not owned). Returns 0 after a clean stop, or 1
 * when it could not start (err says why: the forwarder's port, the loop). */
int wf_lm_supervise(const wf_lm_plan *p, FILE *log, wf_strbuf *err);

#endif
