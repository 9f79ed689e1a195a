/*
 * nds.h - Istio's NDS (name discovery service): the NameTable istiod sends a sidecar whose
 * node metadata has DNS_CAPTURE "true", for the agent's DNS proxy (proxy/agent/dns.h), and
 * ServiceEntry address auto-allocation (ISTIO_META_DNS_AUTO_ALLOCATE).
 *
 * Follows Istio's pilot/pkg/xds/nds.go (NdsGenerator), pilot/pkg/networking/core/dns
 * (BuildNameTable) and pilot/pkg/serviceregistry/serviceentry (autoAllocateIPs, the
 * metadata-driven allocator of Istio 1.9-1.22):
 *
 * NameTable (JSON of istio.networking.nds.v1.NameTable):
 *   {"@type": "type.googleapis.com/istio.networking.nds.v1.NameTable",
 *    "table": {HOST: {"ips": [IP...], "registry": "Kubernetes"|"External",
 *                     "shortname": NAME, "namespace": NS}}}
 *  - only sidecars get a table (BuildNameTable returns nil for routers); the services are
 *    those the sidecar sees (exportTo and Sidecar egress scope, pilot/serviceentry.h), one per
 *    host, Kubernetes Services first.
 *  - a Kubernetes Service with a clusterIP: ips [clusterIP], registry "Kubernetes",
 *    shortname and namespace set (the agent builds name, name.ns, name.ns.svc from them).
 *  - a headless Service (clusterIP None, with ports): Istio's Passthrough service: ips = the
 *    addresses of its endpoints on its first port (ready Pods it selects); none: left out.
 *  - a ServiceEntry host: registry "External", no shortname/namespace; ips = its plain-IP
 *    addresses; none and the proxy has DNS_AUTO_ALLOCATE "true": the auto-allocated address
 *    (below: the IPv4 one, plus the IPv6 one when the proxy's IP is IPv6); none and
 *    resolution NONE with ports: the addresses of its endpoints; otherwise left out.
 *  - addresses that are not IPs (CIDRs) are skipped, as BuildNameTable.
 *
 * Auto-allocation (autoAllocateIPs): every ServiceEntry host without addresses, not a
 * wildcard, resolution not NONE, in store order, keyed "<namespace>/<host>", gets a slot of
 * 255*255 in 240.240.0.0/16 by FNV-32a of the key, modulo 255*255; a taken slot is resolved
 * by double hashing (h2 = 65011 - (h % 65011), slot = (h + i*h2) % (255*255 - 1)). Slots are
 * then numbered x = 1.. in slot order (x bumped by one when x % 255 == 0) and a host gets
 * 240.240.(x/255).(x%255) and 2001:2::f0f0:<hex(x/255) hex(x%255)> ("2001:2::f0f0:<hex x%255>"
 * when x/255 is 0). The same key always gets the same address while the set of keys stays:
 * stable across restarts.
 *
 * Ownership: returned JSON is a new reference the caller json_decrefs. Errors: NULL / -1 on
 * out of memory only.
 */
#ifndef WF_PILOT_NDS_H
#define WF_PILOT_NDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "model/store.h"
#include "pilot/generate.h"
#include "pilot/sidecar_scope.h"

/* The auto-allocated addresses of the store's ServiceEntry hosts: a JSON object
 * "<namespace>/<host>" -> {"ipv4": "240.240.a.b", "ipv6": "2001:2::f0f0:..."}. NULL on OOM. */
json_t *wf_nds_auto_allocate(const wf_store *s);

/* The NameTable for proxy p (scope: its Sidecar scope, NULL = everything): a JSON object as
 * above; NULL on OOM. A router gets a table with no entries. */
json_t *wf_nds_name_table(const wf_store *s, const wf_pilot_proxy *p, const wf_scope *scope);

/* What the NDS generator sends p: [NameTable] for a sidecar with DNS capture, [] otherwise.
 * NULL on OOM. */
json_t *wf_nds_generate(const wf_store *s, const wf_pilot_proxy *p, const wf_scope *scope);

#endif
