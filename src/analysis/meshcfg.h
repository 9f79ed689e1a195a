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

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/arena.h"
#include "model/node.h"
#include "model/store.h"

typedef struct wf_meshcfg wf_meshcfg;

/* Defaults only (rootNamespace istio-system, ingressControllerMode STRICT,
 * ingressService istio-ingressgateway, ...). NULL on out of memory. */
wf_meshcfg *wf_meshcfg_new_default(void);

/* Merge a MeshConfig YAML file over the current values. The file holds the MeshConfig fields
 * (what istiod's --meshConfig reads), or is the istio ConfigMap whose data.mesh holds them
 * (kind: ConfigMap; weftctl up takes the same file). Fields are checked (wf_meshcfg_check).
 * Returns 0, or -1 with *err set to a static or meshcfg-owned message naming file:line:column. */
int wf_meshcfg_load_file(wf_meshcfg *m, const char *path, const char **err);

/* The same for text in memory named name in errors (weft-pilot's Kubernetes source: the
 * `istio` ConfigMap as JSON, whose data.mesh holds the MeshConfig). Same return. */
int wf_meshcfg_load_text(wf_meshcfg *m, const char *name, const char *text, size_t len,
                         const char **err);

/* Load a MeshNetworks YAML file (`networks:` map). Same return as above. */
int wf_meshcfg_load_networks(wf_meshcfg *m, const char *path, const char **err);

void wf_meshcfg_free(wf_meshcfg *m);

/* Parse MeshConfig text (YAML or JSON; the first document) into arena a, as
 * wf_meshcfg_load_file does: with allow_configmap, a ConfigMap document stands for its
 * data.mesh. origin names the text in errors; line0 is added to its line numbers (text taken
 * from a block scalar). *out is the MeshConfig map, NULL when the text is empty. Returns 0;
 * 1 with err holding "ORIGIN:LINE:COL: MeshConfig: why" (":LINE:COL" left out when
 * unknown); -1 when out of memory. */
int wf_meshcfg_parse_text(wf_arena *a, const char *text, size_t len, const char *origin,
                          uint32_t line0, bool allow_configmap, const wf_node **out, char *err,
                          size_t cap);

/* Check a MeshConfig map as Istio's protobuf JSON decoding refuses it, for what weft can tell:
 * a top-level key that is not a MeshConfig field (istio/api mesh/v1alpha1/config.proto, JSON
 * names), and defaultConfig.proxyStatsMatcher (wf_meshcfg_check_stats_matcher). Returns NULL,
 * or buf holding "FIELD.PATH: why" with *line / *col the position (0 when unknown). */
const char *wf_meshcfg_check(const wf_node *root, char *buf, size_t cap, uint32_t *line,
                             uint32_t *col);

/* Check a ProxyStatsMatcher (null, or a map of inclusionPrefixes / inclusionSuffixes /
 * inclusionRegexps, each null or a list of strings): an unknown field, a list that is not a
 * list, an item that is not a string (a number, a boolean, null) are refused, as protobuf JSON
 * does. where prefixes the field in the message ("defaultConfig.proxyStatsMatcher"). Same
 * return as wf_meshcfg_check. */
const char *wf_meshcfg_check_stats_matcher(const wf_node *psm, const char *where, char *buf,
                                           size_t cap, uint32_t *line, uint32_t *col);

/* Value at a dotted path ("defaultConfig.proxyMetadata.ISTIO_META_DNS_AUTO_ALLOCATE"),
 * file first, then defaults; NULL when unset in both. */
const wf_node *wf_meshcfg_get(const wf_meshcfg *m, const char *path);

/* Scalar string at path, or NULL. */
const char *wf_meshcfg_str(const wf_meshcfg *m, const char *path);

/* The MeshConfig fields the loaded files set (not the defaults) as one JSON object, a later
 * file's values over an earlier one's (objects merged key by key, as wf_meshcfg_get reads
 * them); {} when no file. The caller owns it; NULL when out of memory. */
json_t *wf_meshcfg_user_json(const wf_meshcfg *m);

/* The root config namespace ("istio-system" by default). */
const char *wf_meshcfg_root_ns(const wf_meshcfg *m);

/* The MeshNetworks document root (`networks:` map's parent), or NULL when none loaded. */
const wf_node *wf_meshcfg_networks(const wf_meshcfg *m);

#endif
