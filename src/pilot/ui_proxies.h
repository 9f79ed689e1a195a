/*
 * ui_proxies.h - GET /ui/api/proxies of weft-pilot's web view (issue 22): `istioctl
 * proxy-status` as data, with each proxy's control-plane history and the certificate pilot's
 * CA last issued to it.
 *
 * One entry per connection the xDS server lists (connected and retained, ads.h), in connection
 * order: {"proxy_id": "<pod>.<ns>" (istioctl proxy-status's NAME), "node_id" (as the proxy
 * sent it), "connection_id", "namespace", "pod", "workload"
 * (the node's WORKLOAD_NAME, else the Pod object's controller as generate.h fills it, else the
 * pod's name), "type": "sidecar"|"router", "ip",
 * "address" (the stream's peer), "identity" (spiffe://<trust domain>/ns/<ns>/sa/<sa>: the
 * node's SERVICE_ACCOUNT, else the Pod's serviceAccountName, else "default"), "connected",
 * "connected_at_ms", "disconnected_at_ms" (retained only), "istio_version", "sync": {"CDS",
 * "LDS", "EDS", "RDS", "ECDS"} with /debug/syncz's per-type status (ads.h
 * wf_ads_type_status: SYNCED, NOT SENT, STALE, ERROR, IGNORED), "certificate": {"serial",
 * "not_before_ms", "not_after_ms", "issued_ms"} of the last one the CA issued to the identity
 * (the one asked for from the proxy's IP when there is one; ca_server.h wf_ca_server_issued),
 * or null; null with "certificate_note" when the record cannot be told apart (the CA keeps
 * the last per identity and caller IP): more than one proxy (connected or retained, a proxy
 * listed twice counted once) of the identity whose xDS peer address is the record's caller IP,
 * or the record not from the proxy's IP and more than one proxy of the identity; the note says
 * "<n> proxies share <identity> from <ip>: pilot cannot tell which certificate each holds;
 * weftctl proxy-config secret <pod> shows it" (the local mesh's pods all ask from 127.0.0.1
 * with their service account), "history": [{"t_ms", "event": "connected"|"disconnected"|"nack"|"ack", "detail"}]
 * oldest first (ads.h wf_ads_history)}. ?namespace=NS keeps that namespace's proxies.
 *
 * Nothing is cached: the answer reads the xDS server's state (O(proxies), the identities
 * counted once per answer).
 */
#ifndef WF_PILOT_UI_PROXIES_H
#define WF_PILOT_UI_PROXIES_H

#include <jansson.h>

#include "pilot/ads.h"
#include "pilot/ca_server.h"

/* The answer (a new object; NULL when out of memory). cas may be NULL (no certificates). */
json_t *wf_ui_proxies_json(const wf_ads *a, const wf_ca_server *cas, const char *ns);

#endif
