/*
 * cds_internal.h - shared between cds.c (clusters) and cds_policy.c (DestinationRule lookup
 * and trafficPolicy). Not a public interface: see cds.h.
 */
#ifndef WF_PILOT_CDS_INTERNAL_H
#define WF_PILOT_CDS_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "model/node.h"

/* The sections of a trafficPolicy that apply to one cluster after Istio's merge; each NULL
 * when absent. */
typedef struct cds_policy {
    const wf_node *pool, *lb, *outlier;
} cds_policy;

/* MergeTrafficPolicy(top for port, subset_tp, port); either node may be NULL. */
cds_policy cds_policy_resolve(const wf_node *top, const wf_node *subset_tp, int32_t port);

/* Write the policy into cluster c (which already holds Istio's defaults, including
 * circuit_breakers.thresholds[0]). Returns 0, or -1 on out of memory. */
int cds_policy_apply(json_t *c, const cds_policy *p);

/* Istio's getDefaultCircuitBreakerThresholds: {"thresholds": [{max_connections,
 * max_pending_requests, max_requests, max_retries = 4294967295, track_remaining true}]}. A new
 * object, NULL on OOM. Shared with pilot/inbound.c. */
json_t *cds_default_circuit_breakers(void);

/* Protobuf JSON text of a duration in nanoseconds ("10s", "0.030s"); NULL on OOM. */
json_t *cds_duration(int64_t ns);

#endif
