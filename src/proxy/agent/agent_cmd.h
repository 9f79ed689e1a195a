/*
 * agent_cmd.h - pilot-agent's small subcommands that the injected istio-proxy container's
 * lifecycle hooks run (Istio's pilot/cmd/pilot-agent/app/wait.go and request.go):
 *
 *   weft-proxy wait [--timeoutSeconds N] [--periodMillis N] [--requestTimeoutMillis N]
 *                   [--url URL]
 *     polls URL (default http://localhost:15021/healthz/ready) every periodMillis (500) with a
 *     requestTimeoutMillis (500) timeout until it answers 200, at most timeoutSeconds (60):
 *     the postStart hook of holdApplicationUntilProxyStarts. Prints "Waiting for Envoy proxy
 *     to be ready (timeout: N seconds)..." then "Envoy is ready!"; exit 0, or 1 with "timeout
 *     waiting for Envoy proxy to become ready. Last error: ...".
 *
 *   weft-proxy request [--debug-port N] METHOD PATH [BODY]
 *     sends METHOD http://localhost:N/PATH (N default 15000, the proxy's admin) with BODY and
 *     prints the answer's body: the native sidecar's preStop hook runs
 *     `request --debug-port=15020 POST drain`. Exit 0 on 200, 1 otherwise (the status and body
 *     on stderr).
 *
 * Both: 2 for a bad command line. Only plain HTTP to a local address (what the hooks use).
 */
#ifndef WP_AGENT_CMD_H
#define WP_AGENT_CMD_H

/* argv[0] is the subcommand's name. */
int wp_agent_wait_main(int argc, char **argv);
int wp_agent_request_main(int argc, char **argv);

#endif
