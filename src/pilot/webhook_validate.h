/*
 * webhook_validate.h - istiod's validating admission webhook (`/validate`; Istio's
 * pkg/webhooks/validation/server/server.go): an AdmissionReview (admission.k8s.io/v1, or
 * v1beta1, answered in the version asked) for an Istio resource is converted as the
 * Kubernetes source converts API objects (source_kube_conv.h) and checked by weft's Istio
 * validation (model/validate.h), the rules pilot applies to what it serves.
 *
 * The exchange, as istiod's handler:
 *  - an empty body: HTTP 400 "no body found"; a Content-Type other than application/json:
 *    415 "invalid Content-Type, want `application/json`" (checked in that order), each text
 *    followed by a newline (Go's http.Error);
 *  - a body that is no AdmissionReview: 200, allowed false, status.message "could not decode
 *    body: <why>";
 *  - operations other than CREATE and UPDATE (DELETE, CONNECT): allowed;
 *  - an object that is not JSON: "cannot decode configuration: <why>" (reason
 *    yaml_decode_error);
 *  - a kind of no Istio schema (istiod's FindByGroupVersionAliasesKind fails): an *.istio.io
 *    kind weft does not know, or a group neither Istio's, Gateway API's nor a Kubernetes
 *    built-in: "unrecognized type <group>/<version>, Kind=<Kind>" (Go's GroupVersionKind
 *    text; unknown_type); Gateway API and Kubernetes kinds are allowed (istiod has no rules
 *    for them), as are the few Istio kinds weft does not model (TrafficExtension, MeshConfig,
 *    MeshNetworks: weft cannot check them);
 *  - errors: "configuration is invalid: <error>" for one, "configuration is invalid: N errors
 *    occurred:\n\t* a\n\t* b\n\n" for several (hashicorp/go-multierror's list, which Istio's
 *    validation appends to) (invalid_resource), without warnings; an allowed object carries
 *    Istio's warnings in response.warnings;
 *  - a top-level field other than apiVersion, kind, metadata, spec, status: `unknown field
 *    "<f>" on <Kind> resource <ns>/<name>` (invalid_resource);
 *  - a dry run is answered as any request (istiod adds " (dry run)" to its log line only).
 * The response: {"apiVersion", "kind": "AdmissionReview" as asked, "response": {"uid" of the
 * request, "allowed", "status": {"metadata": {}, "message"} when refused, "warnings"}}.
 *
 * Outcome: what istiod counts (galley_validation_passed{group,version,resource},
 * galley_validation_failed{group,version,resource,reason},
 * galley_validation_http_error{status}) is reported in *oc for the caller's counters.
 *
 * Pure: no I/O, no global state; safe from any thread.
 */
#ifndef WF_PILOT_WEBHOOK_VALIDATE_H
#define WF_PILOT_WEBHOOK_VALIDATE_H

#include <stddef.h>

#include "core/strbuf.h"

typedef enum {
    WF_WHV_HTTP_ERROR, /* 400 / 415: galley_validation_http_error{status} */
    WF_WHV_PASSED,     /* galley_validation_passed */
    WF_WHV_FAILED,     /* galley_validation_failed{reason}: refused, or an unsupported
                        * operation (allowed, reason unsupported_operation, as istiod) */
    WF_WHV_UNDECODED,  /* no AdmissionReview: answered, not counted (as istiod) */
} wf_whv_result;

typedef struct wf_whv_outcome {
    wf_whv_result result;
    const char *reason; /* FAILED: "unsupported_operation", "yaml_decode_error",
                         * "unknown_type", "invalid_resource" (static) */
    char group[128], version[64], resource[128]; /* request.resource */
} wf_whv_outcome;

/* One `/validate` request: Content-Type (NULL = none) and body. Writes the answer's body to
 * out and returns the HTTP status (200, 400, 415); *oc says what to count. The answer is
 * JSON for 200, text otherwise. Returns 500 only when out of memory. */
int wf_webhook_validate(const char *content_type, const char *body, size_t len, wf_strbuf *out,
                        wf_whv_outcome *oc);

#endif
