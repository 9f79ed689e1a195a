/*
 * describe.h - internals of `weftctl describe pod|service` (cmd_describe.c, describe_dump.c,
 * describe_print.c), following `istioctl x describe` (istioctl/pkg/describe/describe.go;
 * reference istioctl-troubleshooting.md §4): the same lines, indentation (0, 3 and 6
 * spaces), order and warnings.
 *
 * Inputs: the cluster state is a wf_store (Kubernetes + Istio objects, loaded from files or
 * from the files weft-pilot names in /debug/configz) and each pod's Envoy /config_dump
 * (jansson JSON; snake_case or camelCase field names). Which DestinationRule and
 * VirtualService apply is read from the dump's metadata (filter_metadata.istio.config), their
 * contents from the store, exactly as istioctl does.
 *
 * Ownership: everything returned points into the store or the dump, or is written to out.
 */
#ifndef WF_CLI_DESCRIBE_H
#define WF_CLI_DESCRIBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "model/store.h"

/* Indentation levels of describe.go (printLevel0/1/2). */
#define DSC_L0 0
#define DSC_L1 3
#define DSC_L2 6

/* A list of borrowed strings (subset names, policy names). */
typedef struct dsc_names {
    size_t n, cap;
    const char **v;
} dsc_names;

int dsc_names_add(dsc_names *l, const char *s); /* 0, or -1 when out of memory */
bool dsc_names_has(const dsc_names *l, const char *s);
void dsc_names_free(dsc_names *l);

/* The pods whose labels subset matching uses (`podsLabels`). */
typedef struct dsc_pods {
    size_t n, cap;
    const wf_resource **v;
} dsc_pods;

int dsc_pods_add(dsc_pods *l, const wf_resource *pod);
void dsc_pods_free(dsc_pods *l);

/* One describe run. */
typedef struct dsc_ctx {
    FILE *out;
    wf_store *store;
    const char *ns;       /* the describe namespace (kname() compares against it) */
    const char *istio_ns; /* root namespace for PeerAuthentication (istio-system) */
    bool ignore_unmeshed;
    /* where dumps come from */
    struct wf_mesh *mesh;  /* pilot and proxies when live (mesh_access.h), else NULL */
    const char **dump_arg; /* --config-dump POD[.NS]=FILE values */
    size_t ndump_arg;
    json_t *syncz; /* live: pilot's /debug/syncz array (proxies pilot knows), else NULL */
} dsc_ctx;

/* ---- cmd_describe.c ---- */

/* `name` when ns is the describe namespace, else `name.ns` (istioctl kname). Returns buf. */
const char *dsc_kname(const dsc_ctx *c, const wf_resource *r, char *buf, size_t cap);

/* Fetches the /config_dump of pod (live: through pilot and the proxy's admin API; offline:
 * the --config-dump file). Returns the parsed dump (caller json_decref), or NULL with err. */
json_t *dsc_fetch_dump(const dsc_ctx *c, const wf_resource *pod, wf_strbuf *err);

/* Does the pod carry a sidecar (an istio-proxy container, or, in weft's local mesh where
 * pods list only the app, a proxy pilot knows / a dump was given for)? */
bool dsc_pod_meshed(const dsc_ctx *c, const wf_resource *pod);

/* ---- describe_dump.c: what the pod's config dump says ---- */

/* The section of dump with this @type (the last one when repeated), or NULL. */
json_t *dsc_dump_section(json_t *dump, const char *type_url);

/* Member `snake` of obj, also accepted in lowerCamelCase ("filter_metadata" or
 * "filterMetadata"). NULL when absent. */
json_t *dsc_jget(const json_t *obj, const char *snake);

/* The DestinationRule a pod's dump attaches to outbound clusters of svc.ns port: the first
 * dynamic cluster whose name contains "<svc>.<ns>.svc.cluster.local", "|port|" and
 * "outbound" and that has metadata. Returns 0 with *name and *dns set (malloc'd; both NULL when
 * none), or -1 with err (no cluster section; not a DR path). */
int dsc_dump_dr_name(json_t *dump, const char *svc, const char *ns, int port, char **name,
                     char **dns, wf_strbuf *err);

/* The VirtualService of the first route (in route configs named "<port>", "http.*" or
 * "https.*") whose virtual host has domain "<svc>.<ns>.svc.cluster.local" or whose cluster is
 * "outbound|<port>|*|<svc>.<ns>.svc.cluster.local". Same return convention. */
int dsc_dump_vs_name(json_t *dump, const char *svc, const char *ns, int port, char **name,
                     char **dns, wf_strbuf *err);

/* RBAC policy names of the first HTTP connection manager on virtualInbound (or, as older
 * istioctl did, on a non-0.0.0.0 listener of that port). Names borrowed from dump. */
int dsc_dump_rbac(json_t *dump, int port, dsc_names *out);

/* ---- describe_print.c ---- */

/* printPod: the Pod lines and its warnings (istioctl's printPod). */
void dsc_print_pod(const dsc_ctx *c, const wf_resource *pod, const char *revision);

/* describePodServices for one pod's dump and the given services. Returns 0, or -1 with err
 * (the dump could not be fetched and --ignoreUnmeshed is off). */
int dsc_print_services(const dsc_ctx *c, const wf_resource *pod, const wf_resource *const *svcs,
                       size_t nsvcs, const dsc_pods *pods, wf_strbuf *err);

/* printVirtualService for svc, with the subsets of dr (may be NULL) the pods match. Returns
 * 0, or -1 when out of memory. */
int dsc_print_vs_block(const dsc_ctx *c, int lvl, const wf_resource *vs, const wf_resource *svc,
                       const wf_resource *dr, const dsc_pods *pods);

/* describePeerAuthentication for a workload's namespace and labels. */
void dsc_print_peer_authn(const dsc_ctx *c, const char *ns, const wf_kvs *labels);
/* weft's lines on stderr: the AuthorizationPolicies that apply to a pod of ns with labels,
 * with action, rules and mode (describe_authz.c). */
void dsc_print_authz(const dsc_ctx *c, const char *ns, const wf_kvs *labels);

/* ---- describe_capture.c ---- */

/* weft's transparent-capture lines for a pod's dump (each "weft: ...\n"): capture on or off
 * (a virtualOutbound listener with use_original_dst; node metadata INTERCEPTION_MODE /
 * WEFT_LOCALHOST), the captured and excluded outbound IP ranges and ports and inbound ports
 * (Istio's istio-iptables defaults, the agent's 15090,15021,15020, and the pod's
 * traffic.sidecar.istio.io annotations), and the outboundTrafficPolicy mode in effect
 * (virtualOutbound's catch-all cluster, else allow_any/block_all routes). Returns 0, or -1
 * when out of memory. */
int dsc_capture_lines(json_t *dump, const wf_kvs *annotations, wf_strbuf *out);

/* The same for pod, fetched through dsc_fetch_dump, printed on stderr (nothing for a pod
 * without a sidecar or when the dump cannot be fetched: the services part reports that). */
void dsc_print_capture(const dsc_ctx *c, const wf_resource *pod);

/* ---- describe_unimpl.c ---- */

/* Prints to `to` (stderr: stdout stays istioctl's) the Istio fields weft does not implement
 * in the config that applies to pod (its selector-scoped policies, its Services svcs and their
 * DestinationRules and VirtualServices, the Gateways it serves), one analyze-style line each
 * under a heading. Returns how many were printed. */
size_t dsc_print_unimplemented(const dsc_ctx *c, const wf_resource *pod,
                               const wf_resource *const *svcs, size_t nsvcs, FILE *to);

/* ---- describe_gwsecret.c ---- */

/* Prints to `to` (stderr) the credentialName Secrets of the Gateways that select pod which the
 * pod cannot use (missing in its namespace, invalid, expiring; pilot/gateway_secrets.h), one
 * line each naming the Gateway, the server, the Secret and the namespace looked in, under a
 * heading. Returns how many were printed. */
size_t dsc_print_gateway_secrets(const dsc_ctx *c, const wf_resource *pod, FILE *to);

/* printIngressInfo. Returns 0, or -1 with err (a gateway's dump could not be fetched). */
int dsc_print_ingress(const dsc_ctx *c, const wf_resource *const *svcs, size_t nsvcs,
                      const dsc_pods *pods, wf_strbuf *err);

/* Protocol shown for a Service port (findProtocolForPort; unit table
 * describe-port-protocol.json). Returns a static string or port fields. */
const char *dsc_port_protocol(const wf_resource *svc, const wf_service_port *p, char *buf,
                              size_t cap);

/* The service port's protocol as the API object has it: the literal value for JSON input
 * (objects as the API server returned them), TCP when a YAML manifest leaves it out (the API
 * server's default). */
const char *dsc_literal_protocol(const wf_resource *r, const wf_node *port_node);

#endif
