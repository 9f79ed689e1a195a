/*
 * store.h - the config store: every loaded resource, typed, with positions and indices.
 *
 * The one model shared by weftctl and weft-pilot. Load files, directories or stdin with
 * wf_store_load_path(); then wf_store_finalize() applies the default namespace, decodes the
 * typed views, and builds the indices (by kind, by kind/namespace/name, by host). Lookups
 * after finalize are O(1) hash lookups or O(k) over one kind.
 *
 * Loading follows `istioctl analyze` (../shared/reference/istio-analyze.md §3): `.yaml`,
 * `.yml` and `.json` files; directories recursively; `-` for stdin; multi-document YAML and
 * `kind: List`; unknown kinds are kept as WF_KIND_OTHER and never an error; resources in
 * kube-system, kube-public, kube-node-lease and local-path-storage are dropped.
 *
 * Memory: the store owns everything it returns (one arena); wf_store_free() releases it.
 */
#ifndef WF_MODEL_STORE_H
#define WF_MODEL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/arena.h"
#include "model/kinds.h"
#include "model/node.h"
#include "model/types.h"

/* Limits on untrusted input (DESIGN.md: "Untrusted input is bounded"). */
#define WF_LOAD_MAX_FILE_BYTES  (64u * 1024u * 1024u) /* per file or stdin */
#define WF_LOAD_MAX_DEPTH       128u                  /* nesting of maps/sequences */
#define WF_LOAD_MAX_ALIAS_NODES 100000u /* nodes produced by alias expansion, per document */

typedef struct wf_resource wf_resource;

struct wf_resource {
    wf_kind kind;
    const char *api_version; /* as written */
    const char *kind_name;   /* as written ("VirtualService") */
    const char *name;        /* metadata.name ("" when absent) */
    const char *ns;          /* metadata.namespace, or the default applied; "" for none */
    bool ns_defaulted;       /* true when ns came from the default, not the file */
    wf_kvs labels, annotations;
    const wf_node *root, *metadata, *spec, *status;
    const char *file;         /* path as given on the command line; "-" for stdin */
    uint32_t line, col;       /* where the document starts; line 0 for JSON */
    bool json;                /* read from a JSON file (findings carry no line) */
    bool synthetic;           /* a Pod the store made from a workload controller's template */
    bool live;                /* read from a live cluster (wf_store_load_live): no file reference */
    const wf_resource *owner; /* for synthetic pods: the controller */
    size_t index;             /* position in load order */
    union {
        wf_service *service;
        wf_pod *pod;
        wf_workload *workload;
        wf_gateway *gateway;
        wf_virtualservice *vs;
        wf_destinationrule *dr;
        wf_serviceentry *se;
        wf_workloadentry *we;
        wf_sidecar *sidecar;
        wf_policy *policy;
        void *any;
    } t; /* typed view; NULL for kinds without one (Namespace, Secret, ConfigMap, OTHER) */
};

/* A problem found while loading: unparsable file, invalid YAML, bad UTF-8, limits. */
typedef struct wf_load_error {
    const char *file;
    uint32_t line, col; /* 0 when not known */
    const char *message;
} wf_load_error;

typedef struct wf_store wf_store;

/* New empty store. Returns NULL on out of memory. */
wf_store *wf_store_new(void);
void wf_store_free(wf_store *s);

/* Load a file, a directory (recursively, only regular .yaml/.yml/.json files; other files
 * are reported through skipped_cb when non-NULL), or "-" for stdin. Paths found in
 * directories are joined as Go's filepath.Join does ("./d" + "x.yaml" is "d/x.yaml").
 * Returns the number of load errors added (0 = all good); errors are kept in the store
 * (wf_store_errors). Returns -1 on out of memory. */
int wf_store_load_path(wf_store *s, const char *path,
                       void (*skipped_cb)(const char *path, void *arg), void *arg);

/* Load one buffer as if read from a file named `name`; `json` selects the JSON parser.
 * Same return as wf_store_load_path. The buffer is not kept. */
int wf_store_load_buffer(wf_store *s, const char *name, const char *buf, size_t len, bool json);

/* Before wf_store_finalize: the resource of that kind, namespace (after defaulting) and name
 * is dropped by finalize, as if it had not been read (not counted as shadowed). 0, or -1 when
 * out of memory or after finalize. */
int wf_store_exclude(wf_store *s, wf_kind kind, const char *ns, const char *name);

/* wf_store_load_buffer (JSON) for objects read from a Kubernetes API server: their resources
 * are marked live, and findings on them carry no file reference (istioctl analyze prints none
 * for resources of a live cluster, istio-analyze.md §2). name is for load errors only. */
int wf_store_load_live(wf_store *s, const char *name, const char *buf, size_t len);

/* Apply default_ns (may be NULL or "" for none) to namespaced resources without one, make
 * one synthetic Pod per workload controller whose template no Pod matches (when
 * synth_pods), decode typed views and build indices. Call once, after loading. Returns 0, or
 * -1 on out of memory. */
int wf_store_finalize(wf_store *s, const char *default_ns, bool synth_pods);

/* Load errors, in the order they happened. */
size_t wf_store_error_count(const wf_store *s);
const wf_load_error *wf_store_error(const wf_store *s, size_t i);

/* Files read so far (given, found in directories, "-" for stdin), in the order read. */
size_t wf_store_file_count(const wf_store *s);
const char *wf_store_file(const wf_store *s, size_t i);

/* Number of files that failed to parse (at least one error in them). */
size_t wf_store_failed_files(const wf_store *s);

/* Resources a later one of the same kind, namespace and name replaced at finalize (the last
 * one read wins, as istioctl's file store), in load order; wf_store_find gives the winner. */
size_t wf_store_shadowed_count(const wf_store *s);
const wf_resource *wf_store_shadowed(const wf_store *s, size_t i);

/* All resources in load order. */
size_t wf_store_count(const wf_store *s);
const wf_resource *wf_store_at(const wf_store *s, size_t i);

/* Resources of one kind, in load order: returns the array and sets *n. */
const wf_resource *const *wf_store_kind(const wf_store *s, wf_kind k, size_t *n);

/* Resources of one kind in one namespace ("" for cluster-scoped kinds), in load order. */
const wf_resource *const *wf_store_kind_ns(const wf_store *s, wf_kind k, const char *ns, size_t *n);

/* Lookup by kind, namespace ("" for cluster-scoped) and name; NULL if absent. When several
 * resources share the key, the last loaded one wins. */
const wf_resource *wf_store_find(const wf_store *s, wf_kind k, const char *ns, const char *name);

/* Services and ServiceEntries by FQDN host ("reviews.default.svc.cluster.local" for a
 * Service; each spec.hosts entry for a ServiceEntry). Returns the matches (may be several
 * ServiceEntries) and sets *n. */
const wf_resource *const *wf_store_by_host(const wf_store *s, const char *host, size_t *n);

/* Pods (real and synthetic) in namespace ns (NULL = all namespaces) whose labels the
 * selector (matchLabels-style kvs) matches. Calls cb for each; stops when cb returns false. */
void wf_store_pods_matching(const wf_store *s, const char *ns, const wf_kvs *selector,
                            bool (*cb)(const wf_resource *pod, void *arg), void *arg);

/* Istio's util.IsSystemNamespace: kube-system, kube-public, kube-node-lease,
 * local-path-storage. Resources in them are dropped at load time. */
bool wf_is_system_namespace(const char *ns);

/* The arena of the store, for analyzers and tools that allocate results with the same
 * lifetime. */
wf_arena *wf_store_arena(wf_store *s);

/* The cluster DNS suffix used to make FQDNs ("cluster.local"). */
const char *wf_store_domain_suffix(const wf_store *s);

#endif
