/*
 * authz_internal.h - one AuthorizationPolicy rule to one Envoy RBAC Policy (authz_model.c; the
 * per-value generators and Envoy matchers in authz_gen.c), for
 * the builder (authz.c) and its unit tests. Not a public interface: see authz.h.
 *
 * Follows Istio's pilot/pkg/security/authz/model (model.go New / Generate, generator.go,
 * matcher/ string.go, header.go, metadata.go) and pilot/pkg/security/trustdomain/bundle.go, checked
 * against the builder goldens of ../shared/corpus/istio-authz/:
 *  - `when` keys: Istio's (model.go) plus source.trustDomain (reference security.md §6.2),
 *    translated as the source field trustDomains.
 *  - conditions: the `when` entries in order (unknown key: the rule is invalid, "unknown
 *    attribute <key>", and Istio's builder skips it for every action); then per `from` the
 *    source fields principals, requestPrincipals, serviceAccounts, namespaces, remoteIpBlocks,
 *    ipBlocks, trustDomains before the `when` principals; per `to` hosts, methods, paths, ports
 *    before the `when` permissions. No `from` (`to`): one principal (permission) of the `when`
 *    conditions alone; an empty one is {"any": true}.
 *  - each condition gives an OR of its values and a NOT(OR) of its notValues inside the
 *    and_rules / and_ids of its permission / principal.
 *  - a value that cannot be generated (an HTTP-only field on a TCP chain, an IP or port that
 *    does not parse, a malformed bracketed key): for ALLOW the whole rule is dropped
 *    (WF_AUTHZ_RULE_SKIPPED: it can never match, a smaller allow); for DENY and LOG (AUDIT and
 *    CUSTOM) only that value is left out (a wider deny), reported through `drop`.
 *  - trust domains: principals of the form <td>/ns/<ns>/sa/<sa> whose trust domain is the
 *    mesh's, an alias, or cluster.local become one principal per trust domain of the bundle
 *    (ReplaceTrustDomainAliases); trustDomains values naming one of them become all of them
 *    (ExpandTrustDomainAliases).
 * JSON: Envoy v3 envoy.config.rbac.v3.Policy with /config_dump's snake_case field names.
 */
#ifndef WF_PILOT_AUTHZ_INTERNAL_H
#define WF_PILOT_AUTHZ_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "model/node.h"

/* Envoy's RBAC actions (envoy.config.rbac.v3.RBAC.Action). */
typedef enum wf_rbac_action {
    WF_RBAC_ALLOW = 0,
    WF_RBAC_DENY,
    WF_RBAC_LOG,
} wf_rbac_action;

typedef void (*wf_authz_drop_cb)(void *arg, const char *msg);

typedef struct wf_authz_gen {
    const char *policy_ns; /* the policy's namespace: serviceAccounts without one */
    bool for_tcp;          /* a TCP filter chain: HTTP-only fields cannot be generated */
    wf_rbac_action action;
    const char *const *tds; /* the trust domain bundle: the mesh's, then its aliases */
    size_t ntds;
    wf_authz_drop_cb drop; /* a value left out of a DENY/LOG rule (may be NULL) */
    void *arg;
} wf_authz_gen;

enum {
    WF_AUTHZ_RULE_OOM = -1,
    WF_AUTHZ_RULE_OK = 0,
    WF_AUTHZ_RULE_INVALID, /* unknown attribute or a rule that is not a map: skipped always */
    WF_AUTHZ_RULE_SKIPPED, /* an ALLOW rule with a value that cannot be generated */
};

/* Istio's generators (generator.go), by the attribute they serve. */
typedef enum wf_authz_kind {
    WF_AZ_DEST_IP,
    WF_AZ_DEST_PORT,
    WF_AZ_SNI,
    WF_AZ_ENVOY_FILTER, /* extended */
    WF_AZ_SRC_IP,
    WF_AZ_REMOTE_IP,
    WF_AZ_SRC_NS,
    WF_AZ_SRC_SA,
    WF_AZ_SRC_PRINCIPAL,
    WF_AZ_SRC_TD,
    WF_AZ_REQ_PRINCIPAL, /* extended */
    WF_AZ_REQ_AUD,       /* extended */
    WF_AZ_REQ_PRESENTER, /* extended */
    WF_AZ_REQ_HEADER,
    WF_AZ_REQ_CLAIMS, /* extended */
    WF_AZ_HOST,
    WF_AZ_PATH,
    WF_AZ_METHOD,
} wf_authz_kind;

typedef struct wf_authz_cond {
    wf_authz_kind g;
    const char *key;             /* the attribute as written (when) or Istio's internal name */
    json_t *values, *not_values; /* arrays of strings (owned) */
} wf_authz_cond;

/* What the generators return. */
enum { WF_AZ_OK = 0, WF_AZ_ERR = 1, WF_AZ_OOM = -1 };

/* Extended generators take all values at once (request principals, audiences, presenter,
 * claims, experimental Envoy metadata); permission kinds build permissions, the others
 * principals. */
bool wf_authz_kind_extended(wf_authz_kind k);
bool wf_authz_kind_permission(wf_authz_kind k);

/* The permission or principal of one value for a non-extended condition, of all values (array
 * of strings) for an extended one, into *out (new). WF_AZ_ERR: it cannot be generated (msg
 * says why: an HTTP-only field on a TCP chain, a value that does not parse). */
int wf_authz_gen_one(const wf_authz_cond *c, const char *v, const wf_authz_gen *g, json_t **out,
                     char *msg, size_t cap);
int wf_authz_gen_ext(const wf_authz_cond *c, json_t *values, const wf_authz_gen *g, json_t **out,
                     char *msg, size_t cap);

/* Translates rule (an item of spec.rules) into *policy, a new {"permissions": [...],
 * "principals": [...]} object the caller json_decrefs. On INVALID and SKIPPED, *policy is
 * NULL and msg (cap bytes) says why, as Istio's log does ("unknown attribute a.b",
 * "\"request.headers[x]\" is HTTP only", "invalid port x"). */
int wf_authz_rule_policy(const wf_node *rule, const wf_authz_gen *g, json_t **policy, char *msg,
                         size_t cap);

/* Istio's rbacPolicyMatchNever: {"permissions": [{"not_rule": {"any": true}}], "principals":
 * [{"not_id": {"any": true}}]}. New object, NULL on out of memory. */
json_t *wf_authz_policy_never(void);

/* Go's regexp.QuoteMeta of s into out (cap bytes, truncated). */
void wf_authz_quote_meta(const char *s, char *out, size_t cap);

#endif
