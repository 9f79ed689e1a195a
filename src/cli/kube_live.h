/*
 * kube_live.h - the resources `weftctl analyze --use-kube` and `weftctl describe` read from a
 * live cluster, loaded into a config store as istioctl's analyzer reads them
 * (istio-analyze.md §3 "Live cluster"; pkg/config/analysis/local/istiod_analyze.go
 * AddRunningKubeSourceWithRevision):
 *  - every namespace: the Istio kinds weft models (kube/kinds.h), Services, Pods, Deployments,
 *    ReplicaSets, StatefulSets, DaemonSets, Nodes, Namespaces, MutatingWebhookConfigurations,
 *    Secrets without the types istiod skips (type!=helm.sh/release.v1,
 *    type!=kubernetes.io/service-account-token); ConfigMaps only in the Istio namespace and
 *    only those whose name starts with "istio";
 *  - a kind the server does not serve (404: a CRD not installed) is left out, as istioctl's
 *    CRD watcher leaves it out; any other error stops the load;
 *  - each object becomes one live resource (wf_store_load_live: findings carry no file
 *    reference), named "<Kind> <ns>/<name>" for load errors; namespaces istiod ignores are
 *    dropped by the store.
 * The mesh config is the Istio namespace's ConfigMap `istio`, key `mesh` (meshNetworks from key
 * `meshNetworks`), applied over the defaults when mesh is not NULL; missing, it stays the
 * default (istioctl logs it only at debug level).
 */
#ifndef WF_CLI_KUBE_LIVE_H
#define WF_CLI_KUBE_LIVE_H

#include "analysis/meshcfg.h"
#include "core/strbuf.h"
#include "kube/client.h"
#include "model/store.h"

/* Loads the cluster's resources into store (not finalized) and, when mesh is not NULL, the
 * mesh config. Returns the number of objects loaded, or -1 with err ("unable to list
 * virtualservices.networking.istio.io: GET ...: 401 Unauthorized: Unauthorized", an invalid
 * mesh config naming the ConfigMap). */
long wf_kube_live_load(wf_kube_client *c, const char *istio_ns, wf_store *store, wf_meshcfg *mesh,
                       wf_strbuf *err);

/* Whether namespace ns exists: 1 yes, 0 no (404), -1 with err (any other failure). */
int wf_kube_namespace_exists(wf_kube_client *c, const char *ns, wf_strbuf *err);

#endif
