/*
 * localmesh_internal.h - shared by the planning files (localmesh_plan.c, localmesh_images.c,
 * localmesh_stats.c): the image map (weft-local.yaml), MeshConfig discovery, ProxyConfig
 * proxyMetadata and stats inclusion, and small arena helpers. Everything allocated here lives in
 * the plan's arena.
 */
#ifndef WF_CLI_LOCALMESH_INTERNAL_H
#define WF_CLI_LOCALMESH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/localmesh_plan.h"
#include "core/strbuf.h"
#include "model/store.h"

/* A growable array of strings in the arena (old storage is abandoned on growth). */
typedef struct lm_strv {
    const char **v;
    size_t n, cap;
} lm_strv;

/* Append s (not copied). Returns 0, or -1 on out of memory. v->v stays NULL-terminated. */
int lm_strv_add(wf_arena *a, lm_strv *v, const char *s);

/* Append "key=value" (copied), replacing an earlier entry with the same key. */
int lm_strv_setenv(wf_arena *a, lm_strv *v, const char *key, const char *value);

/* True when the resource was read from a file under the state folder. */
bool lm_in_state(const wf_lm_plan *p, const wf_resource *r);

/* "FILE:LINE:COL" of a node of resource r ("FILE" alone for JSON input). */
void lm_where(wf_strbuf *b, const wf_resource *r, const wf_node *n);

typedef struct lm_image {
    const char *key;
    const char **cmd; /* NULL-terminated */
    size_t ncmd;
    lm_strv env;
    const wf_node *node;
    /* weftArgs (default true): weftctl adds --listen <addr>:<containerPort> and --pod <name>
     * (a stand-in such as weft-app; the container's command and args are not used). false:
     * the command runs as the image would, with nothing added: the container's `command`
     * replaces it and its `args` follow, $(VAR) expanded (docs/local-mesh.md). */
    bool weft_args;
} lm_image;

typedef struct lm_images {
    const wf_resource *res; /* the LocalImages resource, NULL for the built-in default */
    size_t n;
    lm_image *v;
} lm_images;

/* Find and parse the LocalImages resource (at most one outside the state folder). Without
 * one: a single "*" entry running weft-app. Returns 0 or -1 with err filled. */
int lm_images_load(wf_lm_plan *p, const wf_store *s, lm_images *out, wf_strbuf *err);

/* The entry for an image (exact, then without tag/digest, then without docker.io/ or
 * docker.io/library/, then "*"), or NULL. */
const lm_image *lm_images_match(const lm_images *m, const char *image);

/* argv[0] as run: a bare name next to weftctl, else env_override (for weft-*), else the
 * name (PATH); a relative path is taken relative to DIR. */
const char *lm_resolve_bin(wf_lm_plan *p, const wf_lm_opts *o, const char *name,
                           const char *env_override);

/* Decide the MeshConfig: opts->mesh_config, else a ConfigMap `istio` (key `mesh`) in DIR,
 * else DIR/mesh.yaml. Fills p->mesh_file/mesh_text/mesh_origin and *mesh (the parsed
 * document in the plan's arena, NULL when none). Returns 0 or -1 with err filled. */
int lm_mesh_config(wf_lm_plan *p, const wf_lm_opts *o, const wf_store *s, const wf_node **mesh,
                   wf_strbuf *err);

/* The template annotation proxy.istio.io/config of workload r, parsed once (YAML or JSON
 * ProxyConfig, in the plan's arena): *doc is the map, or NULL when the annotation is absent
 * or empty. One that does not parse, or is not a map, stops only r's pods, as Istio's sidecar
 * injector refuses them: *pod_error is then an arena message naming the file, workload,
 * annotation and the parse error. Returns 0, or -1 when out of memory. */
int lm_proxy_config_doc(wf_lm_plan *p, const wf_resource *r, const wf_kvs *annotations,
                        const wf_node **doc, const char **pod_error);

/* Proxy environment for a workload: MeshConfig defaultConfig.proxyMetadata, then pc's
 * (the annotation's ProxyConfig, NULL when none) proxyMetadata. */
int lm_proxy_env(wf_lm_plan *p, const wf_node *mesh, const wf_node *pc, lm_strv *env);

/* The stats inclusion inputs of a workload's proxy (localmesh_stats.c), as Istio merges
 * them: the annotations sidecar.istio.io/statsInclusion{Prefixes,Suffixes,Regexps}, and
 * ProxyConfig.proxyStatsMatcher from pc (proxy.istio.io/config) when it sets that field —
 * it replaces MeshConfig's whole, as pilot-agent's proto merge does — else from MeshConfig
 * defaultConfig. env is the proxy environment (EXIT_ON_ZERO_ACTIVE_CONNECTIONS). r is NULL
 * for the gateway we add. Every pattern is checked as weft-proxy will: a bad one in the
 * workload's annotations sets *pod_error (arena string naming file, workload, annotation
 * and pattern) and returns 0; a bad one in MeshConfig, or a proxyStatsMatcher that is not
 * lists of strings in MeshConfig, returns -1 with err. Returns 0, or -1. */
int lm_proxy_stats(wf_lm_plan *p, const wf_node *mesh, const wf_resource *r,
                   const wf_kvs *annotations, const wf_node *pc, const lm_strv *env, wf_psc_in *out,
                   const char **pod_error, wf_strbuf *err);

/* What Istio's sidecar injector adds to a sidecar's environment for pilot-agent
 * (localmesh_inject.c): ISTIO_KUBE_APP_PROBERS from the workload r's containers' probes
 * (app_host: where the app listens, the probes' host unless the manifest names one) and
 * ISTIO_PROMETHEUS_ANNOTATIONS from its prometheus.io annotations (mesh: the MeshConfig
 * document, for enablePrometheusMerge; may be NULL). Sets them in env when they apply.
 * Returns 0, or -1 when out of memory. */
int lm_inject_env(wf_lm_plan *p, const wf_node *mesh, const wf_resource *r, const char *app_host,
                  lm_strv *env);

#endif
