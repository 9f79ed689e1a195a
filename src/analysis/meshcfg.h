/*
 * meshcfg.h - Istio MeshConfig (and MeshNetworks) as analyzers and pilot read it.
 *
 * Loaded from a YAML file in MeshConfig format (`istioctl analyze --meshConfigFile`, Istio's
 * `mesh` ConfigMap key) and merged over Istio's defaults (istio.io/latest/docs/reference/
 * config/istio.mesh.v1alpha1/): a field set in the file wins, an absent field keeps the
 * default. Lookups go through wf_meshcfg_get(), which searches the file first, then the
 * defaults.
 */
#ifndef WF_ANALYSIS_MESHCFG_H
#define WF_ANALYSIS_MESHCFG_H

#include "model/node.h"
#include "model/store.h"

typedef struct wf_meshcfg wf_meshcfg;

/* Defaults only (rootNamespace istio-system, ingressControllerMode STRICT,
 * ingressService istio-ingressgateway, ...). NULL on out of memory. */
wf_meshcfg *wf_meshcfg_new_default(void);

/* Merge a MeshConfig YAML file over the current values. Returns 0, or -1 with *err set to a
 * static or meshcfg-owned message naming file:line:column. */
int wf_meshcfg_load_file(wf_meshcfg *m, const char *path, const char **err);

/* Load a MeshNetworks YAML file (`networks:` map). Same return as above. */
int wf_meshcfg_load_networks(wf_meshcfg *m, const char *path, const char **err);

void wf_meshcfg_free(wf_meshcfg *m);

/* Value at a dotted path ("defaultConfig.proxyMetadata.ISTIO_META_DNS_AUTO_ALLOCATE"),
 * file first, then defaults; NULL when unset in both. */
const wf_node *wf_meshcfg_get(const wf_meshcfg *m, const char *path);

/* Scalar string at path, or NULL. */
const char *wf_meshcfg_str(const wf_meshcfg *m, const char *path);

/* The root config namespace ("istio-system" by default). */
const char *wf_meshcfg_root_ns(const wf_meshcfg *m);

/* The MeshNetworks document root (`networks:` map's parent), or NULL when none loaded. */
const wf_node *wf_meshcfg_networks(const wf_meshcfg *m);

#endif
