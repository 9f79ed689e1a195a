/*
 * authz_fetch.h - the AuthorizationPolicy table (authz_check.h) of a proxy, from its live
 * Envoy config dump or a dump file: what `weftctl x authz check` prints and what `weftctl log
 * explain --pod` lists for an RBAC denial.
 *
 * Live: the pod (POD, POD.NS, POD -n NS, deploy/NAME) is found through weft-pilot's monitoring
 * address (proxy_find.h) and its admin GET /config_dump is read (10 s timeout). File: a JSON
 * config dump ("-" = stdin). Only the dynamic listeners' active state is read (istioctl's
 * GetDynamicListenerDump).
 *
 * Returns 0 with *t filled (free with wf_authz_table_free) and *pod_id (when pod_id is not
 * NULL) a new "<pod>.<ns>" string (NULL for a file); -1 with err holding istioctl's message
 * ("failed to get config dump from pod P in NS: ...", "failed to get config dump from file F:
 * ...", "failed to get dynamic listener dump: ..."). Warnings (ids that do not parse) are
 * appended to warn.
 */
#ifndef WF_CLI_AUTHZ_FETCH_H
#define WF_CLI_AUTHZ_FETCH_H

#include "cli/authz_check.h"
#include "cli/envoy_dump.h"
#include "core/strbuf.h"

/* The pieces of the two calls below, for commands that read more of the same dump (`log
 * explain` also reads route timeouts): the live dump of a pod (errors as above; *pod_id as
 * above), and the table of an already loaded dump. */
int wf_authz_dump_pod(const char *pilot, const char *name, const char *ns, wf_envoy_dump *d,
                      char **pod_id, wf_strbuf *err);
int wf_authz_from_dump(const wf_envoy_dump *d, wf_authz_table *t, wf_strbuf *warn, wf_strbuf *err);

int wf_authz_fetch_pod(const char *pilot, const char *name, const char *ns, wf_authz_table *t,
                       char **pod_id, wf_strbuf *warn, wf_strbuf *err);

int wf_authz_fetch_file(const char *path, wf_authz_table *t, wf_strbuf *warn, wf_strbuf *err);

#endif
