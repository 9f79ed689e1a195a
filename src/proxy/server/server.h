/*
 * server.h - weft-proxy as a process: loads the bootstrap, starts the workers and the
 * admin server, runs until SIGTERM/SIGINT or POST /quitquitquit, then drains.
 *
 * Follows Envoy's server behaviour (docs operations/cli and operations/admin, server.cc): --mode
 * validate checks the configuration and exits; SIGTERM stops accepting, lets in-flight
 * requests finish for up to --drain-time-s seconds, then exits 0; SIGHUP is ignored (logged);
 * SIGUSR1 reopens the access-log files as POST /reopen_logs does.
 */
#ifndef WEFT_PROXY_SERVER_H
#define WEFT_PROXY_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include "proxy/server/admin/options.h"
#include "proxy/server/instance.h"

struct wp_listen_hold;
/* Applies a new snapshot (one reference of cfg, taken over) on the main thread: builds its
 * generation, binds the sockets of new listeners for every worker (taking those hold has
 * held since their LDS update, listen_hold.h; hold may be NULL) and posts it to them; the
 * previous generation serves the requests already running. Returns 0; 1 when it was applied
 * but some listeners could not bind (they stay without sockets and are tried again with the
 * next update; err holds Envoy's "Error adding/updating listener(s) NAME: cannot bind ..."
 * lines); or -1 with the reason appended to err (a route index or access log that does not
 * compile, out of memory): the current snapshot then stays. */
int wp_server_apply(wp_server *srv, wp_config *cfg, struct wp_listen_hold *hold, wf_strbuf *err);

/* Runs the proxy. Returns the process exit code: 0 after a clean shutdown or a valid
 * configuration in validate mode, 1 when the configuration is invalid or a listener cannot
 * be bound (the error is printed on stderr, naming the file and JSON path or address). */
int wp_server_run(const wp_server_opts *o);

#endif
