/*
 * log_explain_rbac.h - what `weftctl log explain` says about an RBAC denial: the
 * AuthorizationPolicy and rule behind `rbac_access_denied_matched_policy[<id>]` (Envoy's RBAC
 * filter writes it in %RESPONSE_CODE_DETAILS% for a 403, and in
 * %CONNECTION_TERMINATION_DETAILS% for a closed TCP connection; reference security.md §6.5).
 *
 * Ids are Istio's policy names (security.md §6.3): "ns[<ns>]-policy[<name>]-rule[<i>]",
 * prefixed "istio-ext-authz-<provider>-" for CUSTOM and suffixed
 * "-deny-due-to-bad-CUSTOM-action" when a CUSTOM policy fails closed; "none" means ALLOW
 * policies apply and none matched (deny by default).
 *
 * wf_lx_rbac_describe: when details (NULL allowed) is an RBAC denial, appends to out plain
 * lines separated by '\n' (no final newline, no indentation) and returns 1; 0 when it is not
 * one (out untouched); -1 when out of memory. t, when not NULL, is the denying proxy's
 * AuthorizationPolicy table (authz_fetch.h) and pod its "<pod>.<ns>": the lines then say the
 * policy's action as the proxy enforces it, and for "none" list its ALLOW policies. Pure.
 */
#ifndef WF_CLI_LOG_EXPLAIN_RBAC_H
#define WF_CLI_LOG_EXPLAIN_RBAC_H

#include "cli/authz_check.h"
#include "core/strbuf.h"

#define WF_LX_RBAC_DETAILS "rbac_access_denied_matched_policy["

int wf_lx_rbac_describe(const char *details, const wf_authz_table *t, const char *pod,
                        wf_strbuf *out);

#endif
