/*
 * authz.h - AuthorizationPolicy to Envoy's RBAC filters for one proxy, as Istio's authz builder
 * (istio/istio pilot/pkg/security/authz/builder/builder.go, model/ (model.go, generator.go);
 * reference security.md §6; conformance: ../shared/corpus/istio-authz/, docs/pilot.md
 * "AuthorizationPolicy").
 *
 * Input: a finalized wf_store (model/store.h), the proxy's namespace and labels, MeshConfig
 * (rootNamespace, default istio-system; trustDomain, default cluster.local; trustDomainAliases).
 *
 * Which policies (Istio's AuthorizationPolicies.ListAuthorizationPolicies for a sidecar or an
 * Istio gateway): those of the root namespace, then of the proxy's namespace, each in store
 * order, whose spec.selector.matchLabels is absent or a subset of the labels (a root-namespace
 * policy with a selector applies to matching workloads in every namespace). A policy with
 * targetRef / targetRefs applies only to Gateway API gateways and waypoints (Istio), which weft
 * does not run: it never applies, and the note callback says so. spec.action ALLOW (absent),
 * DENY, AUDIT, CUSTOM; any other value: ignored, noted (Istio logs "ignored authorization policy
 * ... with unsupported action").
 *
 * Filters (Envoy v3 JSON, /config_dump's snake_case names, "@type" in typed_config):
 *  - HTTP: envoy.filters.http.rbac (envoy.extensions.filters.http.rbac.v3.RBAC); TCP:
 *    envoy.filters.network.rbac (...network.rbac.v3.RBAC) with stat_prefix "tcp.".
 *  - CUSTOM first: weft has no ext_authz filter, so every CUSTOM provider is unusable and weft
 *    does what Istio does for an unusable provider (fail closed): per provider name, sorted, a
 *    filter {"rules": {"action": "DENY", "policies": {"istio-ext-authz-<provider>-ns[<ns>]-
 *    policy[<name>]-rule[<i>]-deny-due-to-bad-CUSTOM-action": ...}}} denying what the CUSTOM
 *    rules match (built with the DENY action, so on TCP chains HTTP-only conditions are left
 *    out: wider). A dry-run CUSTOM policy goes to that filter's shadow_rules (never enforced).
 *    Each CUSTOM policy is noted as not supported (WARNING), naming it.
 *  - then one filter per action present, AUDIT (RBAC action LOG), DENY, ALLOW: policies with
 *    annotation istio.io/dry-run true (Go's strconv.ParseBool) in "shadow_rules", the others in
 *    "rules" (each present only when it has a policy); "shadow_rules_stat_prefix"
 *    "istio_dry_run_deny_" when the shadow rules are DENY, else "istio_dry_run_allow_" (also
 *    without shadow rules, Istio's quirk), none for LOG shadow rules.
 *  - policy names "ns[<ns>]-policy[<name>]-rule[<i>]"; a policy without rules is one
 *    never-matching policy named rule[0] (spec: {} allows nothing); a null rule is skipped
 *    (noted); an invalid rule (unknown `when` key: "unknown attribute <key>") is skipped for every
 *    action (noted, ERROR), as Istio's builder does; see authz_internal.h for the rest.
 * An ALLOW filter whose every rule was skipped keeps "rules": {"action": "ALLOW", "policies":
 * {}}, which denies everything (Istio: `rules: {}`).
 *
 * Ownership: results are new JSON the caller json_decrefs; the store is only read. No global
 * state. Errors: NULL on out of memory or NULL arguments.
 */
#ifndef WF_PILOT_AUTHZ_H
#define WF_PILOT_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "analysis/meshcfg.h"
#include "model/store.h"

typedef enum wf_ap_action {
    WF_AP_ALLOW = 0,
    WF_AP_DENY,
    WF_AP_AUDIT,
    WF_AP_CUSTOM,
    WF_AP_UNSUPPORTED, /* an action Istio does not have: the policy is ignored */
} wf_ap_action;

/* spec.action of an AuthorizationPolicy (absent: ALLOW; Istio's enum names, case-sensitive). */
wf_ap_action wf_ap_action_of(const wf_resource *policy);

/* "ALLOW", "DENY", "AUDIT", "CUSTOM", "UNSUPPORTED". */
const char *wf_ap_action_name(wf_ap_action a);

/* istio.io/dry-run parsed as Go's strconv.ParseBool; *bad set when present and unparsable. */
bool wf_authz_dry_run(const wf_resource *policy, bool *bad);

typedef enum wf_authz_level {
    WF_AUTHZ_NOTE_DEBUG = 0, /* as Istio logs it at debug (HTTP-only fields on a TCP chain) */
    WF_AUTHZ_NOTE_WARNING,   /* something not translated as written (CUSTOM, a dropped value) */
    WF_AUTHZ_NOTE_ERROR,     /* a rule or policy skipped */
} wf_authz_level;

/* A note while building: about policy (never NULL), its field ("spec.action",
 * "spec.rules[2]", "spec.targetRefs", "metadata.annotations[istio.io/dry-run]") and the node
 * of that field (NULL when absent: the resource's own position then); msg names the policy
 * rule when it is about one ("skipped invalid rule ns[foo]-policy[bar]-rule[0]: unknown
 * attribute x"). All borrowed for the call. */
typedef struct wf_authz_note {
    wf_authz_level level;
    const wf_resource *policy;
    const char *field;
    const wf_node *at;
    const char *msg;
} wf_authz_note;

typedef void (*wf_authz_note_cb)(void *arg, const wf_authz_note *n);

typedef struct wf_authz_options {
    const char *ns;         /* the proxy's namespace ("" / NULL: only root-namespace policies) */
    const wf_kvs *labels;   /* its labels; NULL = none (only policies without selector) */
    const wf_meshcfg *mesh; /* NULL = MeshConfig defaults */
    const char *root_ns;    /* overrides the mesh's rootNamespace when not NULL (describe's
                               --istioNamespace) */
    wf_authz_note_cb note;  /* may be NULL */
    void *arg;
} wf_authz_options;

/* The policies that apply (above), in order, every action (UNSUPPORTED ones included, so a
 * caller can list them). *out is a malloc'd array the caller frees (NULL when none). Returns
 * the count, -1 on out of memory. */
long wf_authz_select(const wf_store *store, const wf_authz_options *o, const wf_resource ***out);

/* The HTTP filters for the proxy's inbound (or gateway) HTTP connection manager, in order:
 * CUSTOM fail-closed filters, then AUDIT, DENY, ALLOW. A new array (empty: no policy applies). */
json_t *wf_authz_http_filters(const wf_store *store, const wf_authz_options *o);

/* The network filters for a TCP filter chain (before tcp_proxy), same order. */
json_t *wf_authz_tcp_filters(const wf_store *store, const wf_authz_options *o);

/* Problems of one policy that do not depend on the proxy, for weft-pilot's
 * /debug/config_errors and `weftctl analyze`: CUSTOM (not supported, fails closed), an
 * unsupported action, an unparsable istio.io/dry-run, targetRef(s) (never applied), null or
 * invalid rules and values Istio's builder skips on HTTP chains. cb gets each; returns the
 * number reported, -1 on out of memory. */
long wf_authz_policy_problems(const wf_resource *policy, const wf_meshcfg *mesh,
                              wf_authz_note_cb cb, void *arg);

/* istiod's /debug/authorizationz: {"authorization_policies": {"namespace_to_policies":
 * {"<ns>": [{"name", "namespace", "annotations", "spec"}]}, "root_namespace": "<root>"}},
 * every AuthorizationPolicy of the store (spec as written, YAML field names). */
json_t *wf_authz_debug(const wf_store *store, const wf_meshcfg *mesh);

#endif
