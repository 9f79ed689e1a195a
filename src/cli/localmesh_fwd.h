/*
 * localmesh_fwd.h - a TCP port forwarder on a libuv loop: what a kind cluster's node port
 * mapping does for the local mesh (127.0.0.1:30000 -> the gateway pod's IP:8080).
 *
 * Every accepted connection gets its own connection to the target; bytes are copied both
 * ways with back-pressure (reading stops while more than 1 MiB waits to be written); a
 * half-close is passed on (shutdown), and either side's error closes both. If the target
 * refuses, the client's connection is closed.
 *
 * Ownership: wf_lm_fwd_start allocates the forwarder; wf_lm_fwd_close closes the listener and
 * every connection and frees it once libuv has closed the handles (run the loop after).
 */
#ifndef WF_CLI_LOCALMESH_FWD_H
#define WF_CLI_LOCALMESH_FWD_H

#include <stdio.h>

#include <uv.h>

#include "core/strbuf.h"

typedef struct wf_lm_fwd wf_lm_fwd;

/* Listen on listen_ip:listen_port and forward to to_ip:to_port. log (may be NULL) gets one
 * line per failed target connection. Returns 0, or -1 with err naming the address. */
int wf_lm_fwd_start(uv_loop_t *loop, const char *listen_ip, int listen_port, const char *to_ip,
                    int to_port, FILE *log, wf_lm_fwd **out, wf_strbuf *err);

/* Stop listening, close every connection, free when closed. NULL is ignored. */
void wf_lm_fwd_close(wf_lm_fwd *f);

#endif
