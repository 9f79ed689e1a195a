/*
 * unimplemented.h - the Istio resources and fields weft reads but does not turn into proxy
 * behaviour, as one table, and a scanner that finds them in a resource.
 *
 * "Never accept silently": weft-pilot accepts every valid Istio resource, but a field it does
 * not translate changes nothing on the data plane. Every such field (or whole kind) is one row
 * of the table in unimplemented.c; the row leaves the table when the feature lands. Whoever
 * reports config uses this scanner: weft-pilot (/debug/config_errors warnings), `weftctl
 * analyze` (WFT0001 NotImplemented, WFT0002 SecurityPolicyNotEnforced), `weftctl up` and
 * `weftctl describe pod`.
 *
 * A row names the kind, a field path, when it applies, whether the field is a security
 * control (an unenforced one is an error: the operator believes traffic is protected and it
 * is not), what weft lacks and what the config therefore does.
 *
 * Paths are dotted map keys from the document root ("spec.trafficPolicy.tls"); a step
 * ending in "[]" visits every item of a sequence ("spec.http[].corsPolicy"), a step "*" every
 * value of a map ("spec.portLevelMtls.*.mode", reported as "spec.portLevelMtls[8080].mode"),
 * and a leading "{tp}" step stands for every
 * place a DestinationRule holds a traffic policy (spec.trafficPolicy, its
 * portLevelSettings[], spec.subsets[].trafficPolicy and its portLevelSettings[]). An empty
 * path is the resource as a whole. Reported field paths use Istio's form
 * ("spec.subsets[1].trafficPolicy.tls").
 *
 * No allocation outside the callers' buffers; no global mutable state.
 */
#ifndef WF_MODEL_UNIMPLEMENTED_H
#define WF_MODEL_UNIMPLEMENTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "model/store.h"

typedef enum wf_unimpl_when {
    WF_UNIMPL_PRESENT = 0,  /* the field is present (not null) */
    WF_UNIMPL_VALUE_IN,     /* its scalar value is one of values (case-insensitive) */
    WF_UNIMPL_VALUE_NOT_IN, /* it is a scalar not among values */
    WF_UNIMPL_CUSTOM,       /* pred(resource, node) says so */
    /* the path ends in "*" (a map of annotations): the key is an annotation Istio defines for
     * the resource's kind (model/istio_annotations.h) and not among values, the ones weft
     * honours */
    WF_UNIMPL_ISTIO_KEY_NOT_IN,
} wf_unimpl_when;

/* Where the config runs: the local mesh (`weftctl up`: weft-proxy started from a plan, the
 * local injector) or Kubernetes (weft-pilot's Kubernetes source, `weftctl analyze --use-kube`,
 * `weftctl kube-inject` and the webhook: pods injected with Istio's template, whose istio-proxy
 * runs `weft-proxy proxy sidecar` and reads PROXY_CONFIG, proxy/agent/agent_config.h). Some
 * fields have effect in one and not the other. */
typedef enum wf_unimpl_target {
    WF_UNIMPL_LOCAL_MESH = 0,
    WF_UNIMPL_KUBERNETES,
} wf_unimpl_target;

/* Which targets a row holds for. */
typedef enum wf_unimpl_where {
    WF_UNIMPL_BOTH = 0,
    WF_UNIMPL_LOCAL_ONLY, /* has effect in Kubernetes (the agent, the injector honour it) */
    WF_UNIMPL_KUBE_ONLY,  /* has effect in the local mesh */
} wf_unimpl_where;

typedef struct wf_unimpl_entry {
    wf_kind kind;
    const char *path; /* see above; "" = the whole resource */
    wf_unimpl_when when;
    const char *const *values; /* NULL-terminated, for VALUE_IN / VALUE_NOT_IN */
    /* CUSTOM: at is the node the path found (NULL for a whole-resource row). */
    bool (*pred)(const wf_resource *r, const wf_node *at);
    bool security;       /* a security control: WFT0002 (Error) instead of WFT0001 (Warning) */
    const char *feature; /* what weft does not implement */
    const char *effect;  /* what the config does in weft, therefore */
    /* For the table's own test: a YAML flow value that, put at path in an otherwise empty
     * resource of kind, makes the row report ("" = the bare resource does). */
    const char *example; /* for kind WF_KIND_OTHER rows: "apiVersion Kind" of the example */
    wf_unimpl_where where;
} wf_unimpl_entry;

/* One finding. Strings and pointers are valid during the callback only. */
typedef struct wf_unimpl_hit {
    const wf_unimpl_entry *entry;
    const wf_resource *res;
    const wf_node *at;  /* the node found, NULL for a whole-resource row */
    const char *field;  /* "spec.trafficPolicy.tls", or "" for a whole-resource row */
    uint32_t line, col; /* of the field's key, else the resource's; 0 when unknown (JSON) */
} wf_unimpl_hit;

/* Return false to stop the scan. */
typedef bool (*wf_unimpl_cb)(const wf_unimpl_hit *hit, void *arg);

/* The kind of the rows about MeshConfig (paths from its root: "enableTracing"), which is not
 * a resource of the store. */
#define WF_UNIMPL_MESHCONFIG WF_KIND_COUNT

/* The table, in a stable order; sets *n. */
const wf_unimpl_entry *wf_unimpl_table(size_t *n);

/* Objects weft writes itself (the ingress gateway Service `weftctl up` adds, as Istio's
 * installation would) carry this annotation, naming the writer; they are not the user's
 * config, so nothing is reported about them. */
#define WF_UNIMPL_GENERATED_ANNOTATION "weft.io/generated-by"

/* Whether row e holds for target t. */
bool wf_unimpl_holds(const wf_unimpl_entry *e, wf_unimpl_target t);

/* The pod annotations weft's Kubernetes injector (kube/inject.h) implements, NULL-terminated:
 * the injector and the table's Kubernetes rows share the list. */
const char *const *wf_unimpl_injector_annotations(void);

/* Calls cb for every row that applies to r and holds for target t, in table order, and in
 * document order within a row; nothing for an object carrying
 * WF_UNIMPL_GENERATED_ANNOTATION. Returns the number of hits reported, or -1 on out of
 * memory. */
int wf_unimpl_scan(const wf_resource *r, wf_unimpl_target t, wf_unimpl_cb cb, void *arg);

/* Scans a MeshConfig document (root: its top-level map; file: where it came from) against the
 * MeshConfig rows; hits carry a resource of kind WF_UNIMPL_MESHCONFIG named "MeshConfig", valid
 * during the callback only. Returns as wf_unimpl_scan. */
int wf_unimpl_scan_mesh(const wf_node *root, const char *file, wf_unimpl_target t, wf_unimpl_cb cb,
                        void *arg);

/* Scans a ProxyConfig document (the proxy.istio.io/config annotation's, or a ProxyConfig
 * resource's spec) against the MeshConfig rows under defaultConfig (paths without that
 * prefix: "concurrency"); hits carry a resource of kind WF_UNIMPL_MESHCONFIG named
 * "ProxyConfig", valid during the callback only. Returns as wf_unimpl_scan. */
int wf_unimpl_scan_proxyconfig(const wf_node *root, const char *file, wf_unimpl_target t,
                               wf_unimpl_cb cb, void *arg);

/* The message text of a hit, appended to out:
 *   "spec.trafficPolicy.tls.mode is not enforced by weft: <feature> is not implemented;
 *    <effect>" (security rows, WFT0002)
 *   "spec.ports[0] (tcp-db) has no effect in weft: <feature> is not implemented; <effect>"
 *   "Telemetry has no effect in weft: ..." (whole resource)
 * subject is the field (with the list item's name or port when it has one) or the kind, in buf
 * (cap bytes) when it needs formatting; detail is the part after the colon. These are the two
 * arguments of the WFT message templates. */
void wf_unimpl_message(const wf_unimpl_hit *hit, wf_strbuf *out);
const char *wf_unimpl_subject(const wf_unimpl_hit *hit, char *buf, size_t cap);
void wf_unimpl_detail(const wf_unimpl_hit *hit, wf_strbuf *out);

/* "WFT0002" for security rows, else "WFT0001". */
const char *wf_unimpl_code(const wf_unimpl_entry *e);

#endif
