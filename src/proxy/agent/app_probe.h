/*
 * app_probe.h - pilot-agent's rewritten application probes (Istio
 * pilot/cmd/pilot-agent/status/server.go; reference istioctl-troubleshooting.md §6.2,
 * kubernetes.md §3.4). Istio's injector rewrites a container's httpGet/tcpSocket/grpc
 * liveness, readiness and startup probes to GET :15020/app-health/<container>/livez|readyz|
 * startupz and hands the original probes to the agent in the environment variable
 * ISTIO_KUBE_APP_PROBERS, a JSON object (Istio's KubeAppProbers):
 *
 *   {"/app-health/<c>/livez": {"httpGet": {"path": "/hello", "port": 8080,
 *                                           "scheme": "HTTP", "host"?, "httpHeaders"?},
 *                              "timeoutSeconds": 1},
 *    "/app-health/<c>/readyz": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1},
 *    "/app-health/<c>/startupz": {"grpc": {"port": 9090, "service"?: "x"}}}
 *
 * Checked as pilot-agent checks it at start (its error texts): every key matches
 * ^/(app-health|app-lifecycle)/[^/]+/(livez|readyz|startupz|prestopz|poststartz)$ ("invalid
 * path, must be in form of regex pattern ..."), exactly one of httpGet, tcpSocket, grpc
 * ("invalid prober type, must be one of type httpGet, tcpSocket or gRPC"), and an httpGet or
 * tcpSocket port that is an integer ("invalid prober config for <path>, the port must be int
 * type"); ports 1..65535. pilot-agent then does not start; weft-proxy exits 2.
 *
 * Each probe runs on the caller's loop (http_fetch.h) against the application's address
 * (INSTANCE_IP, the pod IP, as pilot-agent's appProbersDestination; 127.0.0.1 without it), as
 * Kubernetes' prober does and pilot-agent copies:
 *   httpGet    GET http://<dest>:<port><path> (scheme HTTPS is not supported: weft has no TLS
 *              client here: answered 500 naming it, see wp_app_probe_unsupported), Host as the
 * incoming request's (its port replaced by the probe's when it was the status port), the incoming
 * request's headers forwarded, then the prober's httpHeaders for names not already sent (weft: no
 * kubelet sends them in the local mesh). The answer is the app's status and the first 10 KiB of its
 * body; a 3xx is followed to the same host up to 10 times (a redirect elsewhere is a success,
 * Kubernetes' rule) and answered 200; more than 10 redirects or a connection failure / timeout
 * answer 500 with an empty body (pilot-agent's answer; weft logs the reason on the "probes" scope,
 *              as pilot-agent does).
 *   tcpSocket  200 when a TCP connection opens within the timeout, else 500.
 *   grpc       not implemented in weft: 500, body "grpc probes are not implemented by
 *              weft-proxy: <path>".
 * timeoutSeconds: 0 or absent means Kubernetes' default, 1 s. Connections come from
 * 127.0.0.6 (pilot-agent's UpstreamLocalAddress, which Istio's iptables rules let through
 * uncaptured) when the destination is an IPv4 address, else from the system's choice.
 */
#ifndef WEFT_PROXY_APP_PROBE_H
#define WEFT_PROXY_APP_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/strbuf.h"

#define WP_APP_PROBE_MAX_BODY (10u * 1024u) /* pilot-agent's maxRespBodyLength */

typedef enum { WP_PROBE_HTTP, WP_PROBE_TCP, WP_PROBE_GRPC } wp_probe_kind;

typedef struct {
    char *path; /* "/app-health/<c>/livez" */
    wp_probe_kind kind;
    int port;
    char *http_path;    /* httpGet.path, starting with "/" */
    bool https;         /* httpGet.scheme HTTPS */
    char *http_headers; /* httpGet.httpHeaders as "Name: value\r\n" lines, or NULL */
    char *grpc_service; /* grpc.service, or NULL */
    uint64_t timeout_ms;
} wp_app_prober;

typedef struct {
    wp_app_prober *v;
    size_t n;
} wp_app_probers;

/* Parses the ISTIO_KUBE_APP_PROBERS text into *out (caller frees with wp_app_probers_free).
 * Returns 0, or -1 with the reason in err (pilot-agent's texts above; out left empty). */
int wp_app_probers_parse(const char *json_text, wp_app_probers *out, wf_strbuf *err);
void wp_app_probers_free(wp_app_probers *p);
/* The prober for a request path (no query), or NULL. */
const wp_app_prober *wp_app_probers_find(const wp_app_probers *p, const char *path, size_t len);

/* The answer to the kubelet. body is valid during the callback only. */
typedef void (*wp_app_probe_cb)(void *ud, int status, const char *body, size_t body_len);

typedef struct {
    const char *dest_ip; /* the application's address (numeric IPv4 or IPv6) */
    const char *host;    /* the incoming Host header, or NULL */
    const char *headers; /* the incoming header lines to forward ("Name: v\r\n"), or NULL */
    int status_port;     /* the status server's port (Host rewrite) */
} wp_app_probe_ctx;

typedef struct wp_app_probe wp_app_probe;

/* Starts probing with p (borrowed until the callback or the cancellation). The callback
 * runs once, on the loop, never inside this call. NULL when out of memory (no callback). */
wp_app_probe *wp_app_probe_start(uv_loop_t *loop, const wp_app_prober *p,
                                 const wp_app_probe_ctx *ctx, wp_app_probe_cb cb, void *ud);
/* The callback will not run. NULL is ignored. */
void wp_app_probe_cancel(wp_app_probe *pr);
/* Why weft cannot run p (a grpc probe, an HTTPS httpGet), or NULL. The status server answers
 * such a probe 500 with this text and the probe's path, and logs it. */
const char *wp_app_probe_unsupported(const wp_app_prober *p);

#endif
