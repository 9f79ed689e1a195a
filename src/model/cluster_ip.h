/*
 * cluster_ip.h - the Kubernetes API server's Service IP allocation, for config read from files.
 *
 * In a cluster every Service except a headless one (clusterIP: None) and an ExternalName one
 * gets a clusterIP from the API server's --service-cluster-ip-range before istiod sees it; Istio
 * keys TCP listeners and its DNS proxy's answers on that address. Manifests in a folder carry
 * none, so the local mesh (which stands in for the API server) assigns them here.
 *
 * Allocation follows the API server's rules that matter to a client: the range's network
 * address and its first address (the `kubernetes` Service's, the API server keeps it) are
 * never given, nor the broadcast address of an IPv4 range; a clusterIP written in the manifest
 * is kept and never given to another Service. Unlike the API server (random), the address is
 * stable: derived from a hash of "namespace/name" with linear probing, Services handled in
 * namespace/name order, so the same set of Services gets the same addresses after every
 * reload and restart. IPv4 ranges only (prefix 8..30).
 */
#ifndef WF_MODEL_CLUSTER_IP_H
#define WF_MODEL_CLUSTER_IP_H

#include <stdint.h>

#include "model/store.h"

/* A parsed IPv4 range "a.b.c.d/len": base in host byte order, the network part only. */
typedef struct wf_ip_range {
    uint32_t base;
    int prefix_len; /* 0 = no range (no allocation) */
} wf_ip_range;

/* Parses "10.96.0.0/12" into *out. Returns 0, or -1 (not an IPv4 CIDR with a prefix of 8..30,
 * or host bits set) with why (static text). */
int wf_ip_range_parse(const char *s, wf_ip_range *out, const char **why);

/* Gives every Service of the finalized store s that has no clusterIP an address of range
 * (strings in the store's arena; the typed view's cluster_ip is set). A range of prefix 0 does
 * nothing. Returns the number assigned, or -1 (out of memory; the range full is not an error:
 * the Services left without an address are those that did not fit). */
int wf_store_allocate_cluster_ips(wf_store *s, const wf_ip_range *range);

#endif
