/*
 * webhook.h - istiod's admission webhook port (15017; pilot/pkg/bootstrap/webhook.go and
 * server.go's httpsMux): HTTPS (HTTP/1.1 over http/h1_server.h with tls/tls.h) with a serving
 * certificate from the mesh CA (serving_cert.h: istiod's DNS names istiod.<ns>.svc,
 * istiod-<rev>.<ns>.svc, ... and the bound IP; issued again when the CA changes or half its
 * life passed, wf_webhook_refresh), the certificate the webhook configurations' caBundle (the
 * mesh root) verifies. Routes, as istiod's mux:
 *   POST /inject, /inject/...   the sidecar injector (kube/inject.h wf_inject_review;
 *                               Istio's pkg/kube/inject/webhook.go serves "/inject" and
 *                               "/inject/" with its cluster/network path segments)
 *   POST /validate, /validate/...
 *                               the validating webhook (webhook_validate.h; Istio's
 *                               pkg/webhooks/validation/server/server.go)
 *   GET  /httpsReady            200 (istiod's HTTPSHandlerReadyPath)
 *   anything else               404 "404 page not found" (Go's ServeMux)
 * Request bodies up to 16 MiB (beyond: 413); heads up to 64 KiB.
 *
 * Counters, as istiod names them (monitoring port /metrics, wf_webhook_metrics_text):
 * galley_validation_passed{group,resource,version}, galley_validation_failed{group,reason,
 * resource,version}, galley_validation_http_error{status}, sidecar_injection_requests_total,
 * sidecar_injection_success_total (a patch was answered), sidecar_injection_skip_total
 * (allowed without a patch), sidecar_injection_failure_total (refused or an HTTP error).
 *
 * Ownership: the CA server and the injector config are borrowed and must outlive the webhook;
 * wf_webhook_close stops it (freed once libuv closed its handles). One loop, no threads.
 */
#ifndef WF_PILOT_WEBHOOK_H
#define WF_PILOT_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/strbuf.h"
#include "kube/inject.h"
#include "pilot/ca_server.h"
#include "pilot/serving_cert.h"

typedef struct wf_webhook wf_webhook;

typedef struct wf_webhook_opts {
    const char *addr; /* "ip:port" ("[ip6]:port"); port 0 picks one */
    const wf_ca_server *cas;
    const wf_serving_names *names; /* the certificate's DNS names (serving_cert.h) */
    const wf_inject_config *inject;
} wf_webhook_opts;

/* Issues the certificate and listens. Returns 0 and *out, or -1 with err naming the address
 * (or why the certificate could not be made); *uv_err (may be NULL) gets the libuv error of a
 * failed bind (UV_EADDRINUSE, ...), else 0. */
int wf_webhook_start(uv_loop_t *loop, const wf_webhook_opts *o, int64_t now_s, wf_webhook **out,
                     int *uv_err, char *err, size_t cap);
/* A new certificate when the CA changed or half of the current one's life passed (connections
 * accepted later use it). A failure is logged; the current certificate stays. NULL ok. */
void wf_webhook_refresh(wf_webhook *w, int64_t now_s);
/* The injector config later /inject requests use (borrowed, must outlive the webhook or the
 * next call): weft-pilot hands over one rebuilt with each new MeshConfig. A request is
 * answered within the loop callback that read it, so the caller may free the previous config
 * as soon as this returns. NULL w ok. */
void wf_webhook_set_inject(wf_webhook *w, const wf_inject_config *inject);
int wf_webhook_port(const wf_webhook *w);
/* The counters above in Prometheus text, appended to out. NULL w appends nothing. */
void wf_webhook_metrics_text(const wf_webhook *w, wf_strbuf *out);
void wf_webhook_close(wf_webhook *w); /* NULL ok */

#endif
