/*
 * validate.h - schema validation of Istio config with Istio's rules.
 *
 * Follows the admission webhook's checks (istio.io/istio pkg/config/validation): hosts
 * (FQDN/wildcard syntax), durations ("0.5s", "1m", ≥ 1ms), ports (1..65535), weights
 * (0..100, summing to 100 when several destinations), match fields (string match with exactly
 * one of exact/prefix/regex), subset names (DNS-1123 label), label keys and values
 * (Kubernetes syntax), regexes (RE2 syntax: no backreferences or lookaround). Also checks
 * field types from the YAML (`weight: "abc"` is an error).
 *
 * Each problem is reported through a callback with severity (error = IST0106
 * SchemaValidationError, warning = IST0133 SchemaWarning), the field path in the form
 * Istio prints ("spec.http[0].route[1].weight"), the node at fault (for its line) and the
 * message text.
 */
#ifndef WF_MODEL_VALIDATE_H
#define WF_MODEL_VALIDATE_H

#include <stdbool.h>

#include "model/store.h"

typedef struct wf_validation_issue {
    bool warning;        /* false = error */
    const char *path;    /* "spec.http[0].timeout"; valid during the callback only */
    const wf_node *node; /* may be NULL */
    const char *message; /* valid during the callback only */
} wf_validation_issue;

typedef void (*wf_validation_cb)(const wf_resource *r, const wf_validation_issue *issue, void *arg);

/* Validate one resource of an Istio kind (wf_kind_is_istio). Calls cb once per problem.
 * Returns the number of errors (warnings not counted); 0 for other kinds. */
int wf_validate_resource(const wf_resource *r, wf_validation_cb cb, void *arg);

/* A Kubernetes Secret as the API server decodes and validates it (validate_secret.c): `data`
 * a map of base64 strings, `stringData` a map of strings, keys config keys. Calls cb once per
 * problem (errors, with the API server's messages). Returns the number of errors; 0 for other
 * kinds. */
int wf_validate_secret(const wf_resource *r, wf_validation_cb cb, void *arg);

/* Kubernetes' DNS-1123 label (a namespace name): [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63
 * characters. */
bool wf_is_dns1123_label(const char *s);

/* Istio's isInternalHeader (":"-prefixed or Host: not a header operation; validation and
 * pilot's route translation share it) and isAuthorityHeader (Host or :authority, which a
 * VirtualService header operation turns into a host rewrite). */
bool wf_header_is_internal(const char *name);
bool wf_header_is_authority(const char *name);

#endif
