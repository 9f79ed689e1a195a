/*
 * scrape_failed.h - GET /ui/api/failed?namespace=NS&workload=W&limit=N (the web view's failed
 * requests; JSON contract /work/notes/ui_contract.md): the recent failed requests of the
 * matching proxies, fetched on demand from each proxy's status port
 * (http://<ip>:15020/failed_requests?limit=N, the relay of the admin's ring:
 * proxy/agent/status.h), grouped per workload, newest first, each with an explanation in
 * `weftctl log explain`'s words.
 *
 * Matching proxies: the scrape loop's targets (scrape.h) in namespace NS (all without it)
 * whose workload is W (the name /ui/api/proxies gives it, known from the xDS node at once:
 * WORKLOAD_NAME, else the Pod object's controller as Istio's GetDeployMetaFromPod names it,
 * else the pod name; scrape.h wf_scrape_target.workload; all without W); grouped by the same
 * name, so a workload's replicas are one group from their first request on; at most WF_FAILED_MAX_PROXIES per answer (the first by
 * proxy id; "truncated": true says more matched: narrow with namespace / workload).
 * limit: requests per workload, 1..100, default 20.
 *
 * Cost: a proxy's answer is cached for WF_FAILED_CACHE_MS and reused by every request in that
 * time; at most WF_FAILED_INFLIGHT GETs at once, each bounded by WF_FAILED_TIMEOUT_MS and
 * WF_FAILED_MAX_BODY bytes. While fetches for an answer are running, the view asks the debug
 * server to route it again shortly (debug.h retry_ms); after WF_FAILED_WAIT_MS it answers with
 * what it has (proxies not answered yet: ok false, error "no answer yet").
 *
 * Threads: none (pilot's loop).
 */
#ifndef WF_PILOT_SCRAPE_FAILED_H
#define WF_PILOT_SCRAPE_FAILED_H

#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "pilot/debug.h"
#include "pilot/scrape.h"

#define WF_FAILED_MAX_PROXIES 50
#define WF_FAILED_CACHE_MS    2000
#define WF_FAILED_INFLIGHT    16
#define WF_FAILED_TIMEOUT_MS  2000
#define WF_FAILED_WAIT_MS     3000
#define WF_FAILED_MAX_BODY    (1024u * 1024u)
#define WF_FAILED_RETRY_MS    25

typedef struct wf_failed wf_failed;

/* The failed-request fetcher over the scrape loop's targets (borrowed, outlives it). */
wf_failed *wf_failed_new(uv_loop_t *loop, wf_scrape *scrape);
/* Cancels the GETs in flight. NULL ok. */
void wf_failed_free(wf_failed *f);

/* GET /ui/api/failed: an answer in r, or r->retry_ms while fetches run. 503 when f is NULL. */
void wf_failed_serve(wf_failed *f, const char *query, wf_debug_reply *r);

/* The "explanation" object of one failed request (contract: summary, meaning, causes, next,
 * text) from an entry of a proxy's GET /failed_requests (response_code, response_flags,
 * response_code_details, route_name, upstream_cluster, upstream_host, method, authority, path):
 * `weftctl log explain`'s words (explain/explain.h wf_explain_failed_json). A new object, NULL
 * when out of memory. */
json_t *wf_failed_explain(const json_t *entry);

#endif
