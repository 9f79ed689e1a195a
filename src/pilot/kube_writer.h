/*
 * kube_writer.h - what weft-pilot writes back to the Kubernetes API, as istiod does
 * (../shared/reference/kubernetes.md §2.8): the root ConfigMap `istio-ca-root-cert` in every
 * discovered namespace, the CA bundle (and, once ready, failurePolicy Fail) of its
 * revision's webhook configurations, and with PILOT_ENABLE_ANALYSIS the analyzers' messages in
 * the Istio resources' status.validationMessages. What is written and when: kube_writer_plan.h;
 * retries, back-off, logging and counters: kube_writer_sync.h.
 *
 * Inputs:
 *  - the Kubernetes client of the config source (borrowed: it must outlive the writer);
 *  - three reflectors of its own (kube/reflector.h): ConfigMaps of every namespace with
 *    fieldSelector metadata.name=<ConfigMap name> (istiod's namespace controller's informer),
 *    MutatingWebhookConfigurations and ValidatingWebhookConfigurations with labelSelector
 *    istio.io/rev=<revision> (istiod's webhook patcher and validation controller);
 *  - from pilot, on the loop: each config snapshot's Namespaces and MeshConfig (discovery
 *    selectors) with the mesh root bundle (wf_kube_writer_set_config), and whether pilot's
 *    webhook server is ready (wf_kube_writer_set_webhook_ready).
 * Every input change and every cache change wakes the writer's thread, which runs a pass
 * (kube_writer_sync.h); it also wakes when the earliest retry is due.
 *
 * Threads: the requests are blocking (kube/client.h) and run on the writer's own thread, never
 * on the loop: the API server away or slow never delays xDS serving. The functions below are
 * for the loop's thread. Stopping cancels a request in flight (an eventfd) and joins the
 * thread. No globals.
 */
#ifndef WF_PILOT_KUBE_WRITER_H
#define WF_PILOT_KUBE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "analysis/meshcfg.h"
#include "core/strbuf.h"
#include "kube/client.h"
#include "model/store.h"

typedef struct wf_kube_writer_opts {
    const char *cm_name;     /* the root ConfigMap's name; NULL = "istio-ca-root-cert" */
    const char *revision;    /* istio.io/rev; NULL = "default" */
    bool webhook_ready;      /* the initial value (see wf_kube_writer_set_webhook_ready) */
    bool analysis;           /* PILOT_ENABLE_ANALYSIS: analysis messages into status */
    long page_size;          /* the reflectors' list limit; 0 = 500 */
    long request_timeout_ms; /* per write; 0 = 10000 */
    uint64_t seed;           /* back-off jitter; 0 = from the clock */
} wf_kube_writer_opts;

typedef struct wf_kube_writer wf_kube_writer;

/* Starts the reflectors and the thread. NULL with why on failure (out of memory, no thread). */
wf_kube_writer *wf_kube_writer_start(uv_loop_t *loop, wf_kube_client *client,
                                     const wf_kube_writer_opts *opts, wf_strbuf *why);

/* Stops the thread (a request in flight is cancelled) and the reflectors; the memory of the
 * reflectors is released as their handles close (run the loop). NULL ok. */
void wf_kube_writer_stop(wf_kube_writer *w);

/* The namespaces that get the ConfigMap, from store and mesh (kube_writer_plan.h
 * wf_kw_wanted_namespaces), the root bundle root_pem (copied; NULL = no CA yet) and, with
 * analysis, the analysis messages (wf_kw_status_wanted: the analyzers run here, on the
 * caller's thread). Wakes the thread when any changed. */
void wf_kube_writer_set_config(wf_kube_writer *w, const wf_store *store, const wf_meshcfg *mesh,
                               const char *root_pem);

/* Pilot's webhook server serves (validating webhooks: failurePolicy Fail from then on). */
void wf_kube_writer_set_webhook_ready(wf_kube_writer *w, bool ready);

/* For /debug/kubez (a new object): {"configmap_name", "revision", "webhook_ready", "root" (a
 * root bundle is known), "namespaces_wanted" (how many get the ConfigMap), "watches": [the
 * reflectors' states], and wf_kw_sync_debug's tables and counters}. NULL on OOM. */
json_t *wf_kube_writer_debug(wf_kube_writer *w);

/* Appends the writer's metrics (kube_writer_sync.h wf_kw_sync_metrics_text). */
void wf_kube_writer_metrics_text(wf_kube_writer *w, wf_strbuf *b);

#endif
