/*
 * policy_select.h - which security policies of one kind apply to a workload, as istiod's
 * PushContext selects AuthorizationPolicies and RequestAuthentications for a sidecar or
 * gateway: those of the root namespace and of the workload's namespace whose `selector` is
 * absent, empty, or a subset of the workload's labels. A policy with `targetRef(s)` applies to
 * none (Istio attaches those to Gateway API gateways and waypoints, which weft does not run).
 * Pure; the result points into the store.
 */
#ifndef WF_PILOT_POLICY_SELECT_H
#define WF_PILOT_POLICY_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "model/store.h"

/* Does policy r select a workload with labels (NULL = none)? */
bool wf_policy_selects(const wf_resource *r, const wf_kvs *labels);

/* The policies of kind that apply to a workload of ns with labels, root_ns's first when
 * root_first (authorization's order) else ns's first (authentication's); root_ns NULL or "" is
 * istio-system; a workload in the root namespace gets its policies once. *out is a new array
 * (caller frees; NULL when none) of *n entries. Returns 0, -1 on out of memory. */
int wf_policy_select(const wf_store *s, wf_kind kind, const char *ns, const wf_kvs *labels,
                     const char *root_ns, bool root_first, const wf_resource ***out, size_t *n);

#endif
