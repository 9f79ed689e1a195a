/*
 * an_annotations_util.h - value checks for Istio's injection annotations.
 *
 * Follows istio/istio pkg/kube/inject/validate.go (AnnotationValidation): the annotations
 * with a validation function there (interception mode, status port, readiness probe
 * numbers, traffic include/exclude ports and IP ranges, prometheus merge-metrics,
 * proxy.istio.io/config) are checked the same way and fail with the same error text
 * (Go's strconv, net/netip and fmt wording) where weft can reproduce it.
 */
#ifndef WF_ANALYSIS_AN_ANNOTATIONS_UTIL_H
#define WF_ANALYSIS_AN_ANNOTATIONS_UTIL_H

#include <stdbool.h>

#include "core/arena.h"

/* Validate `value` of annotation `name`. Returns true when the annotation has a validation
 * function and the value fails it; *problem is then the error text in arena `a` (a static
 * text when out of memory). Annotations without a validation function are always valid. */
bool wf_inject_annotation_invalid(wf_arena *a, const char *name, const char *value,
                                  const char **problem);

/* Whether name is a field of Istio's ProxyConfig (istio/api mesh/v1alpha1/proxy.proto, JSON
 * names). proxy.istio.io/config's values are checked against the fields' types (a wrong type
 * fails as Istio's protomarshal.ApplyYAML does); an unknown field Istio ignores. */
bool wf_proxy_config_field_known(const char *name);

#endif
