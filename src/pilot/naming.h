/*
 * naming.h - Istio's cluster names ("subset keys"):
 * `outbound|80|v1|reviews.default.svc.cluster.local`,
 * `outbound|80||reviews.default.svc.cluster.local`, `inbound|9080||`.
 *
 * Follows Istio's model.BuildSubsetKey / model.ParseSubsetKey (pilot/pkg/model/service.go)
 * and istioctl's reading of them (../shared/reference/istioctl-troubleshooting.md §1.4): a
 * name is a subset key when splitting it on `|` gives at least 4 parts; anything else
 * (`BlackHoleCluster`, `PassthroughCluster`, `xds-grpc`) is a plain name.
 */
#ifndef WF_PILOT_NAMING_H
#define WF_PILOT_NAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WF_CLUSTER_BLACKHOLE   "BlackHoleCluster"
#define WF_CLUSTER_PASSTHROUGH "PassthroughCluster"
/* virtualInbound's passthrough cluster (pilot/capture.h). Istio's name since 1.23
 * (istio/istio#51503 "collapse to single inbound passthrough", util.InboundPassthroughCluster);
 * Istio 1.10-1.22 had one per IP family, "InboundPassthroughClusterIpv4" / "...Ipv6", which
 * older config dumps and logs show. */
#define WF_CLUSTER_INBOUND_PASSTHROUGH "InboundPassthroughCluster"

/* The parts of a subset key. Pointers point into the parsed name (not NUL-terminated at the
 * part's end: use the lengths). */
typedef struct wf_cluster_key {
    const char *direction; /* "outbound", "inbound", ... */
    size_t direction_len;
    int32_t port; /* 0 when the port part is not a number 0..65535, as Go's ignored Atoi */
    const char *subset;
    size_t subset_len; /* 0 for the default (no subset) cluster */
    const char *host;
    size_t host_len; /* 0 for inbound clusters */
} wf_cluster_key;

/* "direction|port|subset|host" (subset and host may be NULL for empty). Returns a new heap
 * string the caller frees with free(), or NULL on out of memory or a NULL direction. */
char *wf_cluster_name(const char *direction, int32_t port, const char *subset, const char *host);

/* Split a subset key. Returns false (and leaves *out unspecified) when name has fewer than 4
 * `|`-separated parts; extra parts after the host are ignored, as in Istio. */
bool wf_cluster_name_parse(const char *name, wf_cluster_key *out);

#endif
