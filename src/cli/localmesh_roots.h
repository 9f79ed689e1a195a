/*
 * localmesh_roots.h - the mesh root as each pod sees it: Kubernetes mounts the
 * istio-ca-root-cert ConfigMap weft-pilot publishes into every namespace (root-cert.pem), and
 * the kubelet keeps the file in sync; pilot-agent reads it to verify istiod's secure port
 * (CA_ROOT_CA). In the local mesh the supervisor plays the kubelet: it fetches
 * /debug/istio-ca-root-cert?namespace=<ns> from pilot's monitoring address for every namespace
 * with a proxy and writes STATE/roots/<ns>/root-cert.pem (replaced at once, only when it
 * changed; a plug-in CA's new root thus reaches the proxies' next CSR).
 */
#ifndef WF_CLI_LOCALMESH_ROOTS_H
#define WF_CLI_LOCALMESH_ROOTS_H

#include <stdbool.h>

#include "cli/localmesh_plan.h"
#include "core/strbuf.h"

/* One sync (blocking, each request bounded by timeout_ms). *all: every namespace has a root
 * file now. Returns how many files changed, or -1 with err (a file that cannot be written; a
 * pilot that does not answer is not an error: *all stays false). */
int wf_lm_roots_sync(const wf_lm_plan *p, const char *mon_addr, long timeout_ms, bool *all,
                     wf_strbuf *err);

#endif
