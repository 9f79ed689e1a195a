/*
 * pilot.h - weft-pilot wired together (istiod's discovery server bootstrap): the directory
 * config source, the xDS server and the debug/monitoring server on one libuv loop.
 *
 * Startup order: xDS listener, monitoring listener, then the config source builds the first
 * snapshot (synchronously) and hands it to the xDS server; from then on every debounced change
 * becomes a snapshot and a push (ads.h). /ready answers 200 once the first snapshot is served
 * and the xDS server listens.
 *
 * The xDS listener (--grpcAddr) serves both StreamAggregatedResources (SotW) and
 * DeltaAggregatedResources (delta), as istiod does on 15010, and Istio's CSR service
 * istio.v1.auth.IstioCertificateService/CreateCertificate (ca_server.h; istiod serves it on
 * 15012). With --secureGRPCAddr both are also served over TLS on istiod's secure port
 * (pilot_secure.h), whose xDS streams are authenticated unless no_xds_auth (XDS_AUTH=false,
 * xds_auth.h). The CA (pilot_ca.h) is set up before the listeners, from --ca-dir, and follows
 * every snapshot (trust domain, a plug-in cacerts Secret); no CA at the first snapshot is a
 * start failure, as in istiod.
 *
 * Each listener that comes up logs "<what> listening on IP:PORT" (WF_LC_main, info) and, for
 * scripts and tests, prints "listening on IP:PORT" on stdout: xDS first, then monitoring, then the
 * secure gRPC port and the webhook port when they are on.
 * The admission webhook port (--webhookAddr, istiod's 15017: webhook.h) comes up after the
 * first snapshot (its certificate is the CA's) and follows the CA as the secure port does;
 * its injector config is rebuilt with each snapshot's new MeshConfig (istiod's injector follows
 * the mesh watcher). Both TLS ports carry istiod's DNS names (serving_cert.h: system_ns,
 * revision, custom_host).
 * An xDS Unix socket (--grpcAddr unix:PATH) is only logged ("xDS server listening on
 * unix:PATH"), not printed.
 */
#ifndef WF_PILOT_PILOT_H
#define WF_PILOT_PILOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "pilot/ads.h"
#include "pilot/debug.h"
#include "pilot/listen_addr.h"
#include "pilot/pilot_ca.h"
#include "pilot/scrape.h"
#include "pilot/source.h"

typedef struct wf_pilot_opts {
    const char *const *config_dirs;
    size_t n_dirs;
    const char *mesh_file;                       /* NULL = defaults */
    const char *domain_suffix;                   /* NULL = cluster.local */
    const char *default_ns;                      /* NULL = "default" */
    const char *grpc_addr;                       /* "ip:port"; NULL = 127.0.0.1:15010 */
    const char *monitoring_addr;                 /* NULL = 127.0.0.1:15014 */
    uint64_t debounce_after_ms, debounce_max_ms; /* 0 = 100 / 10000 */
    uint64_t keepalive_interval_ms;              /* 0 = no pings */
    uint64_t keepalive_timeout_ms;               /* 0 = 20000 */
    uint64_t retention_ms;                       /* 0 = 300000 */
    uint64_t rescan_ms;                          /* 0 = 2000 */
    const char *ca_dir; /* the CA directory (pilot_ca.h); NULL = wf_pilot_ca_default_dir */
    const char *secure_grpc_addr; /* istiod's 15012 over TLS (pilot_secure.h); NULL = none */
    /* what answers the debug endpoints: wf_debug_route (debug.h) from the program; NULL =
     * every path 404 */
    wf_debug_route_fn debug_route;
    wf_ip_range service_ips; /* --service-cluster-ip-range (source.h); prefix 0 = none */
    /* The Kubernetes source (source_kube.h) instead of the directories: kubeconfig paths
     * (NULL = $KUBECONFIG / ~/.kube/config) or the in-cluster configuration; kube = false keeps
     * the directory source. */
    bool kube;
    bool kube_in_cluster;
    const char *kubeconfig, *kube_context, *kube_incluster_root;
    int64_t kube_sync_timeout_ms; /* 0 = 30000 */
    /* istiod's webhook port (webhook.h): NULL = WF_PILOT_WEBHOOK_ADDR, "off" = none; a bind
     * failure of the default address is logged and the port left out, of an address given
     * (webhook_addr_given) a start failure */
    const char *webhook_addr;
    bool webhook_addr_given;
    /* the injector's config folder (kube/inject.h: files config and values); NULL =
     * WF_PILOT_INJECT_DIR; an absent folder means Istio's chart defaults */
    const char *inject_config_dir;
    bool no_xds_auth; /* XDS_AUTH=false: the secure port's xDS streams are not authenticated
                       * (xds_auth.h); default (false) authenticates them, as istiod */
    /* Write-back with the Kubernetes source (kube_writer.h): istiod's revision (istio.io/rev
     * of the webhook configurations patched; NULL = "default"); the root ConfigMap's name is
     * $PILOT_CA_CERT_CONFIGMAP, else istio-ca-root-cert. The validating webhooks get
     * failurePolicy Fail only while pilot serves its webhook port (wf_pilot_set_webhook_ready
     * after the start). */
    const char *revision;
    /* istiod's namespace (POD_NAMESPACE; NULL = istio-system): where the Kubernetes source
     * reads the `istio` ConfigMap, and the serving certificate's DNS names (serving_cert.h,
     * with revision and custom_host, ISTIOD_CUSTOM_HOST's value, NULL = none) */
    const char *system_ns;
    const char *custom_host;
    /* the web view's folder (--uiDir; NULL = $WEFT_UI_DIR, else next to the program:
     * ui_static.h wf_ui_dir_resolve) */
    const char *ui_dir;
    /* the web view's scrape loop (scrape.h); interval_ms 0 = off (the graph endpoints then
     * answer 503). weft-pilot's default is WF_SCRAPE_INTERVAL_MS (--uiScrapeInterval). */
    wf_scrape_opts ui_scrape;
} wf_pilot_opts;

#define WF_PILOT_WEBHOOK_ADDR "127.0.0.1:15017"
#define WF_PILOT_INJECT_DIR   "./var/lib/istio/inject" /* istiod's mount, relative */

typedef struct wf_pilot wf_pilot;

/* Starts everything. Returns 0 and *out, or -1 with a message naming the address or path at
 * fault in err (what was started is closed; run the loop to release it). */
int wf_pilot_start(uv_loop_t *loop, const wf_pilot_opts *opts, wf_pilot **out, char *err,
                   size_t cap);
/* Stops listening and watching; memory is released as handles close (run the loop). */
void wf_pilot_stop(wf_pilot *p);

bool wf_pilot_ready(const wf_pilot *p);
wf_ads *wf_pilot_ads(const wf_pilot *p);
/* The config source (its debug() for /debug/kubez); NULL before start. */
wf_config_source *wf_pilot_source(const wf_pilot *p);
/* The Kubernetes write-back (kube_writer.h), NULL with the directory source. */
struct wf_kube_writer *wf_pilot_kube_writer(const wf_pilot *p);
/* Pilot's webhook server serves (or no longer does): the validating webhook configurations'
 * failurePolicy becomes Fail once ready (kube_writer.h). */
void wf_pilot_set_webhook_ready(wf_pilot *p, bool ready);
/* The CA (root, CSR service and its metrics). */
wf_pilot_ca *wf_pilot_get_ca(const wf_pilot *p);
int wf_pilot_monitoring_port(const wf_pilot *p);
/* The admission webhook port (webhook.h), NULL when off. */
struct wf_webhook *wf_pilot_webhook(const wf_pilot *p);
/* The web view's folder (ui_static.h), resolved at start. */
const char *wf_pilot_ui_dir(const wf_pilot *p);
/* How the web view's folder was given: "--uiDir", "$WEFT_UI_DIR", or NULL (the default). */
const char *wf_pilot_ui_dir_origin(const wf_pilot *p);
/* The web view's validations cache (ui_validations.h). */
struct wf_ui_validations *wf_pilot_ui_validations(const wf_pilot *p);
/* The web view's metrics (ui_graph.h: the scrape loop and the graph cache), NULL when the
 * scrape loop is off. */
struct wf_ui_graph *wf_pilot_ui_graph(const wf_pilot *p);
/* The RequestAuthentication jwksUri resolver (pilot/jwks_fetch.h), NULL before start. */
struct wf_jwks_resolver *wf_pilot_jwks(const wf_pilot *p);

#endif
