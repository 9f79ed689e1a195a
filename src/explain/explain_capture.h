/*
 * explain_capture.h - what `weftctl log explain` says about a line of transparent capture
 * (issue 20 item 5, operator report B039 in ../shared/cases/operator-reports.md;
 * ../shared/reference/protocols.md §5.3-5.4): which of Istio's capture outcomes the line is,
 * the original destination (%DOWNSTREAM_LOCAL_ADDRESS%, which SO_ORIGINAL_DST restores, else
 * %UPSTREAM_HOST%), the SNI (%REQUESTED_SERVER_NAME%) and whether outboundTrafficPolicy is the
 * cause.
 *
 *  - registry_only_blocked: an HTTP request answered by Istio's `block_all` virtual host
 *    (route name block_all; or 502 direct_response with no upstream cluster on an outbound
 *    line): outboundTrafficPolicy REGISTRY_ONLY and a Host no ServiceEntry or Service declares.
 *  - blackhole: a connection to BlackHoleCluster (STATIC, no endpoints: UH). The loop guard
 *    chains (original destination port 15001 or 15006) are told apart; otherwise it is
 *    virtualOutbound's catch-all under REGISTRY_ONLY.
 *  - passthrough: PassthroughCluster (ORIGINAL_DST) or the `allow_any` route: ALLOW_ANY let a
 *    destination outside the registry through, to its original destination.
 *  - inbound_passthrough: InboundPassthroughCluster: inbound traffic to a port of the pod that
 *    no Service declares (virtualInbound's catch-all), handed to the application from
 *    127.0.0.6.
 *
 * Pure functions over a record; no I/O.
 */
#ifndef WF_EXPLAIN_CAPTURE_H
#define WF_EXPLAIN_CAPTURE_H

#include "explain/explain_table.h"
#include "core/strbuf.h"

typedef enum wf_lx_capture {
    WF_LX_CAP_NONE,
    WF_LX_CAP_BLOCKED,             /* "registry_only_blocked" */
    WF_LX_CAP_BLACKHOLE,           /* "blackhole" */
    WF_LX_CAP_PASSTHROUGH,         /* "passthrough" */
    WF_LX_CAP_INBOUND_PASSTHROUGH, /* "inbound_passthrough" */
} wf_lx_capture;

/* The capture outcome of r (WF_LX_CAP_NONE when the line is none of them). */
wf_lx_capture wf_lx_capture_of(const wf_lx_record *r);

/* Its name as -o json writes it ("blackhole"); "" for WF_LX_CAP_NONE. */
const char *wf_lx_capture_name(wf_lx_capture c);

/* The original destination of r ("10.1.2.50:443"): %DOWNSTREAM_LOCAL_ADDRESS%, else the
 * upstream host of a passthrough line. Borrowed from r; NULL when the line has neither. */
const char *wf_lx_original_destination(const wf_lx_record *r);

/* The table entry for flag UH on a BlackHoleCluster line (the flag's usual entry speaks of
 * a Service without endpoints): static. */
const wf_lx_entry *wf_lx_capture_uh_blackhole(void);

/* The table entry for details direct_response on a block_all line (the usual entry calls a
 * direct response expected): static. */
const wf_lx_entry *wf_lx_capture_blocked_direct_response(void);

/* Appends the reading of r to out (first line the verdict, further lines after '\n'); out
 * stays empty when r is no capture outcome. Returns 0, or -1 when out of memory. */
int wf_lx_capture_read(const wf_lx_record *r, wf_strbuf *out);

#endif
