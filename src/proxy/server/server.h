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
#include <stdint.h>

#include "proxy/admin/options.h"

/* Runs the proxy. Returns the process exit code: 0 after a clean shutdown or a valid
 * configuration in validate mode, 1 when the configuration is invalid or a listener cannot
 * be bound (the error is printed on stderr, naming the file and JSON path or address). */
int wp_server_run(const wp_server_opts *o);

#endif
