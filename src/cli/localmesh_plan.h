/*
 * localmesh_plan.h - what `weftctl up DIR` runs, decided from the manifests in DIR
 * (DESIGN.md "The local mesh", docs/local-mesh.md).
 *
 * The plan is pure data: pods (name, namespace, labels, pod IP 127.10.x.y — 10.10.x.y and a
 * network namespace each with --pod-network netns —, pod localhost 127.11.x.y, containers and the
 * local command each runs, whether a weft-proxy runs beside them) and the processes to start
 * (weft-pilot, each application container, each proxy), with argv, extra environment and log file.
 * Nothing is written or started here: the state module (localmesh_state.h) writes the files, the
 * supervisor (localmesh_super.h) runs it.
 *
 * Inputs: the manifests are loaded with the same loader as `weftctl analyze`
 * (model/store.h). Files under the state folder are ignored (they are what an earlier run
 * wrote). The image map comes from a `LocalImages` resource (apiVersion weft.dev/v1,
 * normally DIR/weft-local.yaml); without one every image runs `weft-app`.
 *
 * A pod whose proxy would refuse its bootstrap (a bad pattern in its stats inclusion
 * annotations or in proxy.istio.io/config's proxyStatsMatcher: localmesh_stats.c), or that
 * Istio's sidecar injector would refuse (a proxy.istio.io/config that does not parse, is not
 * a map, or has a proxyStatsMatcher protobuf JSON refuses), is planned with `error` set and
 * gets no processes, no Pod object and no bootstrap; the other pods run. The same mistakes in
 * MeshConfig's defaultConfig.proxyStatsMatcher fail the plan.
 *
 * Ownership: a plan owns everything it points to (one arena); free it with
 * wf_lm_plan_free(). Errors: -1 with a message in err naming the file, line and field.
 */
#ifndef WF_CLI_LOCALMESH_PLAN_H
#define WF_CLI_LOCALMESH_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/arena.h"
#include "proxy/agent/proxy_stats_config.h"
#include "core/strbuf.h"
#include "model/store.h"

#define WF_LM_XDS_ADDR           "127.0.0.1:15010" /* plaintext xDS (tools; istiod serves both) */
#define WF_LM_SECURE_ADDR        "127.0.0.1:15012" /* istiod's secure port: proxies' xDS + CSRs, TLS */
#define WF_LM_ROOTS_DIR          "roots" /* STATE/roots/<ns>/root-cert.pem: istio-ca-root-cert */
#define WF_LM_SECURE_PORT        15012   /* WF_LM_SECURE_ADDR's port: the proxies' xDS and CSRs */
#define WF_LM_ISTIOD_SAN         "istiod.istio-system.svc" /* what proxies verify on 15012 */
#define WF_LM_MON_ADDR           "127.0.0.1:15014"
#define WF_LM_GW_HOST_IP         "127.0.0.1"
#define WF_LM_GW_HOST_PORT       30000 /* the book's kind cluster maps its node port here */
#define WF_LM_GW_HTTP_PORT       8080  /* the gateway Service's targetPort for port 80 */
#define WF_LM_GW_HTTPS_HOST_PORT 30005 /* the book's kind cluster maps the https node port here */
#define WF_LM_GW_HTTPS_PORT      8443  /* the gateway Service's targetPort for port 443 */
#define WF_LM_UI_SCRAPE_INTERVAL "5s"  /* pilot's --uiScrapeInterval in the local mesh */
#define WF_LM_ADMIN_PORT         15000
#define WF_LM_STATUS_PORT        15020
#define WF_LM_HEALTH_PORT        15021
#define WF_LM_GATEWAY_NS         "istio-system"
#define WF_LM_GATEWAY_NAME       "istio-ingressgateway"
#define WF_LM_MAX_PODS           (253u * 250u)

typedef enum wf_lm_kind { WF_LM_PILOT, WF_LM_PROXY, WF_LM_APP, WF_LM_GATEWAY } wf_lm_kind;

/* "pilot", "proxy", "app", "gateway" (the KIND column of `weftctl status`). */
const char *wf_lm_kind_name(wf_lm_kind k);

typedef struct wf_lm_label {
    const char *key, *value;
} wf_lm_label;

typedef struct wf_lm_port {
    const char *name; /* NULL when unnamed */
    int port;
} wf_lm_port;

typedef struct wf_lm_container {
    const char *name, *image;
    const char *image_key; /* the weft-local.yaml key that matched ("*" for the default) */
    size_t nports;
    wf_lm_port *ports;
} wf_lm_container;

/* The pod template's traffic.sidecar.istio.io annotations that Istio's injector turns into
 * istio-init's arguments (NULL when absent): includeOutboundIPRanges (-i), excludeOutboundIPRanges
 * (-x), includeInboundPorts (-b), excludeInboundPorts (-d, after the agent's own ports),
 * excludeOutboundPorts (-o), includeOutboundPorts (-q). */
typedef struct wf_lm_capture_ann {
    const char *include_out_cidrs, *exclude_out_cidrs, *include_in_ports, *exclude_in_ports,
        *exclude_out_ports, *include_out_ports;
} wf_lm_capture_ann;

typedef struct wf_lm_pod {
    const char *name, *ns;
    const char *owner_kind, *owner; /* "Deployment", "catalog"; "" for the gateway we add */
    const char *cluster;            /* bootstrap node.cluster: "<app label or owner>.<ns>" */
    const char *ip, *localhost;     /* 127.10.x.y, 127.11.x.y */
    const char *service_account;    /* NULL when none */
    size_t nlabels;
    wf_lm_label *labels;
    bool sidecar; /* a weft-proxy sidecar runs beside the containers */
    bool gateway; /* a weft-proxy in router mode, no containers */
    size_t ncontainers;
    wf_lm_container *containers;
    size_t nproxy_env; /* ProxyConfig proxyMetadata as "K=V" (MeshConfig, then annotation) */
    const char **proxy_env;
    wf_psc_in stats;       /* the proxy's stats inclusion inputs (stats.ips unset: see pod ip) */
    const char *error;     /* why the pod is not started (its proxy would refuse its bootstrap,
                              or the injector the pod: see above), NULL when fine */
    const char *clash;     /* a sidecar pod whose app port is also a Service port: started, but
                              the app and the sidecar's outbound listener on the pod localhost
                              cannot both bind it (docs/local-mesh.md "Limits"); NULL when fine */
    const char *bootstrap; /* STATE/bootstrap/<pod>.<ns>.bootstrap (JSON; NULL without proxy) */
    const char *pod_file;  /* STATE/pods/<ns>.<pod>.json: the Pod object pilot reads */
    const char *token;     /* STATE/tokens/<pod>.<ns>/istio-token: its proxy's service-account
                              token (--token-path; localmesh_tokens.h), NULL without proxy */
    const char *netns;     /* its network namespace (pod network netns), NULL in explicit mode */
    wf_lm_capture_ann capture; /* with --capture: what its istio-init gets */
} wf_lm_pod;

typedef struct wf_lm_proc {
    const char *name; /* "pilot", "<pod>.proxy", "<pod>.app" or "<pod>.<container>" */
    wf_lm_kind kind;
    size_t pod;        /* index into pods, SIZE_MAX for pilot */
    const char **argv; /* NULL-terminated; argv[0] is a path or a name looked up in PATH */
    size_t nenv;
    const char **env;  /* "K=V" added to (or replacing in) the supervisor's environment */
    const char *log;   /* absolute path: STATE/logs/<name>.log */
    const char *netns; /* run inside this network namespace (/run/netns/NAME); NULL: the host */
    int uid;           /* run as this uid and gid (the proxy with capture: 1337); -1: as we run */
} wf_lm_proc;

/* How pods are networked (docs/local-mesh.md): loopback addresses in the host's namespace
 * (explicit, the default and the fallback without root), or a network namespace per pod on
 * the pod network 10.10.0.0/16 (localmesh_netns.h). */
typedef enum wf_lm_podnet { WF_LM_PODNET_EXPLICIT, WF_LM_PODNET_NETNS } wf_lm_podnet;

typedef struct wf_lm_plan {
    wf_arena arena;
    wf_store *store;          /* owned when built by wf_lm_plan_build (strings point into it) */
    const char *dir;          /* absolute, no trailing slash */
    const char *state;        /* absolute */
    const char *pods_dir;     /* STATE/pods */
    const char *default_ns;   /* -n, else the one injection-labelled Namespace, else "default" */
    const char *images_file;  /* the LocalImages file, NULL when none */
    const char *mesh_file;    /* MeshConfig file pilot gets (may be STATE/meshconfig), or NULL */
    const char *mesh_text;    /* MeshConfig text to write to mesh_file (ConfigMap form), or NULL */
    const char *mesh_origin;  /* where the MeshConfig came from (for messages), or NULL */
    const char *mesh_cm_file; /* the file holding ConfigMap istio when mesh_text came from it */
    /* where mesh_text starts in mesh_cm_file: its line 1, column 1 are line mesh_line0 + 1,
     * column mesh_col0 + 1 of the file (so pilot's positions in mesh_file map back) */
    unsigned mesh_line0, mesh_col0;
    bool gateway_service;  /* write the ingress gateway's Service into STATE/pods */
    bool pods_dir_watched; /* pilot gets --config-dir STATE/pods (false when inside DIR) */
    size_t gateway;        /* index of the gateway pod, SIZE_MAX when none */
    size_t npods;
    wf_lm_pod *pods;
    size_t nprocs;
    wf_lm_proc *procs;
    /* What the injector reads and weft does not implement (the proxy.istio.io/config
     * annotation's ProxyConfig fields: model/unimplemented.h), one line each,
     * "FILE:LINE:COL: Kind ns/name: FIELD has no effect in weft: ... [WFT0001]" */
    size_t nwarnings;
    const char **warnings;
    wf_lm_podnet podnet;     /* explicit or netns */
    bool capture;            /* netns: Istio's capture rules in every sidecar pod, proxy uid 1337 */
    const char *pilot_ip;    /* where the proxies reach pilot: 127.0.0.1, or the host link's IP */
    const char *secure_addr; /* pilot's --secureGRPCAddr: pilot_ip:15012 */
    const char *netns_prefix; /* netns: "weft-<hash>-" (localmesh_netns.h), else NULL */
    /* netns: the host's nameserver (the first IPv4 one of $WEFT_DNS_RESOLV_CONF, else
     * /etc/resolv.conf), which the supervisor relays to at pilot_ip:53 for the pods' DNS
     * proxies (localmesh_dns_relay.h); NULL when there is none or in explicit mode */
    const char *dns_upstream;
} wf_lm_plan;

typedef struct wf_lm_opts {
    const char *dir;         /* required: the manifests */
    const char *state;       /* NULL: wf_lm_default_state(DIR) (localmesh_state.h) */
    const char *ns;          /* NULL: decided from the Namespaces in DIR */
    const char *mesh_config; /* NULL: looked for in DIR */
    const char *bin_dir;     /* where weftctl lives (weft-pilot etc. are looked up there) */
    const char *env_pilot, *env_proxy, *env_app; /* $WEFT_PILOT, $WEFT_PROXY, $WEFT_APP */
    wf_lm_podnet podnet;                         /* default explicit */
    bool capture; /* with netns: install the capture rules (off until the proxy's
                     virtualOutbound/virtualInbound exist) */
} wf_lm_opts;

/* Load DIR and plan the mesh. The state folder is made absolute but not created. Returns
 * 0 with *out set, or -1 with err filled (no plan). */
int wf_lm_plan_build(const wf_lm_opts *o, wf_lm_plan **out, wf_strbuf *err);

/* Plan from a finalized store (no default namespace applied: finalize with NULL). dir and
 * state must be absolute (opts->state may not be NULL here). The plan points into the store:
 * the caller keeps it alive until wf_lm_plan_free (or hands it over in plan->store). For
 * tests and for wf_lm_plan_build. Same return. */
int wf_lm_plan_from_store(const wf_lm_opts *o, const wf_store *s, wf_lm_plan **out, wf_strbuf *err);

void wf_lm_plan_free(wf_lm_plan *p);

/* Pod by name (any namespace), or NULL. */
const wf_lm_pod *wf_lm_plan_pod(const wf_lm_plan *p, const char *name);

/* The pod IP and pod localhost of the i-th pod (0-based): 127.10.(i/253).(2+i%253) and the
 * same in 127.11. buf must hold 16 bytes. */
void wf_lm_pod_ip(size_t i, bool localhost, char *buf);

/* Kubernetes-style names: the pod-template hash (10 characters of Kubernetes' safe
 * alphabet) of a workload, and the 5-character suffix of its i-th replica. Deterministic. */
void wf_lm_template_hash(const char *ns, const char *name, const char *salt, char out[11]);
void wf_lm_pod_suffix(const char *hash, size_t i, char out[6]);

#endif
