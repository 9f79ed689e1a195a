/*
 * authz_check.h - the table of `weftctl x authz check` (istioctl x authz check,
 * istioctl/pkg/authz/{analyzer,listener}.go; reference security.md §6.5): which
 * AuthorizationPolicies an Envoy config dump enforces, read back from its RBAC filters.
 *
 * Input: the active state of every dynamic listener of the dump's ListenersConfigDump (as
 * istioctl's GetDynamicListenerDump; static listeners are not read), normalized to snake_case
 * (envoy_dump.h). In each listener's filter_chains (not default_filter_chain, as istioctl):
 *  - every HTTP filter named envoy.filters.http.rbac inside a network filter named
 *    envoy.filters.network.http_connection_manager or envoy.http_connection_manager;
 *  - every network filter named envoy.filters.network.rbac.
 * Per RBAC filter:
 *  - each policy id of `rules.policies` counts under `rules.action` (ALLOW when absent; DENY,
 *    LOG; protobuf JSON enum names or numbers 0/1/2);
 *  - each policy id of `shadow_rules.policies` starting with "istio-ext-authz-" counts under
 *    CUSTOM (Istio's CUSTOM action is a shadow RBAC filter, security.md §6.3); other shadow
 *    ids (dry run) are not shown;
 *  - a filter whose `rules` holds no policy (absent or empty) counts
 *    "_anonymous_match_nothing_" with rule "0" under its action.
 * A policy id is parsed as Go's regexp (?:istio-ext-authz-)?ns\[(.+)\]-policy\[(.+)\]-rule\[(.+)\]
 * finds it (unanchored, greedy, '.' not matching '\n') into the name "<policy>.<namespace>" and
 * the rule index; an id that does not match counts as name "" and rule "" (istioctl logs
 * "failed to parse policy name: <id>" and goes on; so do we, as a warning).
 * RULES is the number of distinct rule indexes seen for a name (over all actions, as istioctl's
 * one name -> rules map). Rows are grouped DENY, ALLOW, LOG, CUSTOM, names in byte order
 * within an action.
 *
 * Deliberate leniency: a filter whose typed_config "@type" is not the RBAC (or HCM) type, or
 * whose action is unknown, is skipped with a warning; istioctl's proto decoding would fail
 * there (skipping the filter or printing nothing).
 *
 * Ownership: tables own their rows; json_t inputs are borrowed.
 */
#ifndef WF_CLI_AUTHZ_CHECK_H
#define WF_CLI_AUTHZ_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"

#define WF_AUTHZ_ANONYMOUS "_anonymous_match_nothing_"

/* Print order. */
typedef enum {
    WF_AUTHZ_DENY,
    WF_AUTHZ_ALLOW,
    WF_AUTHZ_LOG,
    WF_AUTHZ_CUSTOM,
    WF_AUTHZ_NACTIONS
} wf_authz_action;

/* "DENY", "ALLOW", "LOG", "CUSTOM". */
const char *wf_authz_action_name(wf_authz_action a);

/* Parses a policy id ("ns[default]-policy[httpbin]-rule[0]", optionally prefixed
 * "istio-ext-authz-") as described above. Returns 0 with name ("httpbin.default") and rule
 * ("0") appended to the (reset) buffers, or -1 when the id does not match (buffers empty). */
int wf_authz_parse_policy_id(const char *id, wf_strbuf *name, wf_strbuf *rule);

typedef struct wf_authz_row {
    wf_authz_action action;
    char *name;   /* "<policy>.<namespace>", WF_AUTHZ_ANONYMOUS, or "" (unparsable id); owned */
    size_t rules; /* distinct rule indexes */
} wf_authz_row;

typedef struct wf_authz_table {
    wf_authz_row *rows; /* in print order; owned */
    size_t n;
    size_t listeners; /* listeners read; 0 = istioctl prints nothing, not even the header */
} wf_authz_table;

/* Builds the table from `listeners`, a JSON array of normalized Listener objects (borrowed).
 * Warnings (unparsable ids, skipped filters), one per line, naming the listener, are appended
 * to warn. Returns 0 with *out filled (free with wf_authz_table_free), or -1 with err set
 * ("out of memory", or "listeners: expected an array"). */
int wf_authz_build(const json_t *listeners, wf_authz_table *out, wf_strbuf *warn, wf_strbuf *err);

/* istioctl's table: "ACTION\tAuthorizationPolicy\tRULES" and one "<action>\t<name>\t<rules>"
 * line per row through Go's tabwriter (padding 3); nothing when t->listeners is 0. Appends to
 * out; returns 0, or -1 when out of memory. */
int wf_authz_print_table(const wf_authz_table *t, wf_strbuf *out);

/* weft's addition for -o json: [{"action": ..., "authorizationPolicy": ..., "rules": N}, ...]
 * (2-space indent, "[]" when empty), with a final newline.
 * Returns 0, or -1 when out of memory. */
int wf_authz_print_json(const wf_authz_table *t, wf_strbuf *out);

void wf_authz_table_free(wf_authz_table *t);

#endif
