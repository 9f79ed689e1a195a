/*
 * source.h - weft-pilot's config sources and the immutable config snapshots they produce.
 *
 * A config source (istiod's ConfigStoreController + its file watcher) delivers whole
 * snapshots: a finalized wf_store plus the MeshConfig, reference counted, never changed once
 * delivered. A consumer keeps a snapshot as long as it needs it (wf_snapshot_ref/unref), so a
 * push that started on one snapshot finishes on it while the next one is being built.
 *
 * The interface (wf_config_source) is a struct of function pointers so that a Kubernetes API
 * source (list + watch) can implement it later; the directory source below implements it.
 *
 * Directory source, following istiod's file-based config (pilot/pkg/config/file, and
 * pilot/pkg/xds/discovery.go debounce):
 *  - watches every directory given (recursive libuv fs events where the platform has them,
 *    plus a rescan every rescan_ms that compares path, mtime and size: Linux inotify is not
 *    recursive, and editors that replace files confuse watches) and the MeshConfig file;
 *  - debounces like PILOT_DEBOUNCE_AFTER / PILOT_DEBOUNCE_MAX: a build runs once no event came
 *    for debounce_after_ms, or debounce_max_ms after the first event of a burst at the latest;
 *  - builds a new store (wf_store_new, load every directory, wf_store_finalize(s, "default",
 *    false)), runs Istio's schema validation (model/validate.h, IST0106 errors; warnings are
 *    not errors) on every Istio resource;
 *  - invalid input never replaces good state: a resource that fails validation, or any
 *    resource of a file that fails to parse, is served at its LAST GOOD version (per
 *    Kind/namespace/name, kept as JSON text of the last good document), and the problem is
 *    reported (log line "config error: FILE:LINE:COL: Kind ns/name: FIELD: MESSAGE (keeping
 *    the last good version)" and wf_snapshot.errors for /debug/configz). A resource that
 *    never had a good version is left out.
 *  - "never accept silently": every served resource is scanned for the Istio fields weft does
 *    not implement (model/unimplemented.h); each is a warning (wf_snapshot.warnings, logged
 *    once when it first appears: "not implemented: FILE:LINE:COL: Kind ns/name: MESSAGE
 *    [WFT0001]", the message starting with the field). ":LINE:COL" is left out when the
 *    line is unknown (JSON input, a Kubernetes object "kube:Kind/ns/name").
 *  - classifies each new snapshot against the previous one per resource (hash of its
 *    canonical JSON): NONE (nothing changed: no delivery), ENDPOINTS (only Pod, WorkloadEntry,
 *    Endpoints or EndpointSlice objects changed: Istio's incremental EDS push, with the
 *    services they touch in eds_services, pilot/eds_update.h) or FULL (also an endpoint change
 *    eds_update.h cannot narrow to EDS services, or one that adds a workload identity).
 *    Every build is delivered (its errors may have changed); consumers push nothing on NONE.
 *
 * Threads: one libuv loop; everything runs on it. No global mutable state.
 */
#ifndef WF_PILOT_SOURCE_H
#define WF_PILOT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "analysis/meshcfg.h"
#include "core/arena.h"
#include "core/strmap.h"
#include "model/cluster_ip.h"
#include "model/store.h"

/* One problem in the input. Strings owned by the snapshot. */
typedef struct wf_config_error {
    const char *file;
    uint32_t line, col;   /* 0 when unknown (JSON input, or the file as a whole) */
    const char *resource; /* "Kind ns/name", or "" for a file-level (parse) error */
    const char *field;    /* "spec.http[0].route[0].weight", or "" */
    const char *message;  /* the validator's or the parser's text */
    bool kept_last_good;  /* a last good version of the resource(s) is being served */
    /* Warnings (wf_snapshot.warnings) only: the message code, "WFT0001" (an Istio field
     * weft does not implement: accepted, no effect), "WFT0002" (a security control weft
     * does not enforce; model/unimplemented.h) or "IST0133" (a schema warning, as the
     * validation webhook returns it: an unknown field, ...). NULL for errors. */
    const char *code;
} wf_config_error;

/* Last good version of one resource, keyed "Kind/ns/name" in wf_snapshot.res. */
typedef struct wf_snap_res {
    const char *kind; /* kind as written ("VirtualService") */
    const char *file; /* file it came from */
    const char *json; /* canonical JSON text of the document (sorted keys) */
    size_t len;
    uint64_t hash; /* FNV-1a 64 of json */
    bool stale;    /* served from an older version (the current one is bad/unparsable) */
} wf_snap_res;

typedef enum wf_change_kind {
    WF_CHANGE_NONE = 0,
    WF_CHANGE_ENDPOINTS, /* only endpoint-bearing kinds changed: push EDS only */
    WF_CHANGE_FULL,
} wf_change_kind;

typedef struct wf_snapshot {
    int refs;
    uint64_t seq;           /* 1, 2, ... per delivered snapshot of a source */
    int64_t changed_at_ms;  /* wall clock (ms since epoch) of the first event of the burst */
    int64_t built_at_ms;    /* wall clock when the build finished */
    double build_ms;        /* time the build took */
    wf_store *store;        /* finalized, owned */
    const wf_meshcfg *mesh; /* never NULL; shared with other snapshots (mesh_box) */
    void *mesh_box;         /* private: the reference-counted MeshConfig holder */
    const char *mesh_error; /* MeshConfig load problem (last good mesh kept), or NULL */
    wf_arena arena;         /* errors, res map, changed keys */
    wf_config_error *errors;
    size_t n_errors;
    /* Istio fields and resources served but not implemented by weft (model/unimplemented.h),
     * and schema warnings (IST0133), in load order; field names the field, "" for a whole
     * resource. */
    wf_config_error *warnings;
    size_t n_warnings;
    wf_strmap *res;        /* "Kind/ns/name" -> wf_snap_res*, load order */
    wf_change_kind change; /* against the previous snapshot */
    bool mesh_changed;     /* MeshConfig differs from the previous snapshot's (true for the
                            * first); not listed in changed */
    const char **changed;  /* keys that changed (added, modified, removed) */
    size_t n_changed;
    /* ENDPOINTS only: the hostnames whose endpoints the change touches, istiod's
     * edsUpdatedServices (pilot/eds_update.h), an object host -> true owned by the snapshot;
     * NULL for NONE and FULL */
    json_t *eds_services;
    size_t files; /* files read */
} wf_snapshot;

/* Takes one more reference; returns s. */
wf_snapshot *wf_snapshot_ref(wf_snapshot *s);
/* Drops a reference (NULL is fine); frees the snapshot at zero. */
void wf_snapshot_unref(wf_snapshot *s);
/* True when key ("Pod/ns/name") is in s->changed. */
bool wf_snapshot_changed(const wf_snapshot *s, const char *key);
/* "NONE", "ENDPOINTS", "FULL". */
const char *wf_change_kind_name(wf_change_kind k);

/* ---- the interface ------------------------------------------------------------------------ */

/* A new snapshot (every build is delivered, also one whose change is NONE: its errors may
 * differ): the callee takes its own reference if it keeps it. */
typedef void (*wf_source_change_fn)(wf_snapshot *snap, void *ud);

typedef struct wf_config_source wf_config_source;
struct wf_config_source {
    /* Starts watching; the first snapshot is built synchronously and delivered before start
     * returns (so the caller can serve at once). Returns 0, or -1 with a message in err (cap
     * bytes) naming the path at fault (an unreadable directory, a bad MeshConfig file). */
    int (*start)(wf_config_source *src, char *err, size_t cap);
    /* Stops watching and closes handles; pending debounced changes are dropped. The source
     * is freed once its handles closed (run the loop). Idempotent. */
    void (*stop)(wf_config_source *src);
    /* The latest snapshot delivered (borrowed), NULL before start. */
    wf_snapshot *(*current)(wf_config_source *src);
    /* The source's own state for /debug (a new JSON value), or NULL: the directory source has
     * none (the member is NULL); the Kubernetes source's is /debug/kubez (source_kube.h). */
    json_t *(*debug)(wf_config_source *src);
    /* Set by the user before start. */
    wf_source_change_fn on_change;
    void *on_change_ud;
    void *impl;
};

/* ---- the directory source ------------------------------------------------------------------ */

/* A document in memory (the Kubernetes source's objects): JSON text named name, which stands
 * for its file in errors and in wf_snap_res.file ("kube:Kind/ns/name"; no line numbers). */
typedef struct wf_source_doc {
    const char *name;
    const char *json;
    size_t len;
} wf_source_doc;

typedef struct wf_dir_source_opts {
    const char *const *dirs; /* directories (or files) of manifests; copied */
    size_t n_dirs;
    const char *mesh_file;      /* MeshConfig YAML, NULL = Istio defaults; copied */
    const char *domain_suffix;  /* NULL = "cluster.local"; copied */
    const char *default_ns;     /* namespace of resources that name none; NULL = "default";
                                 * copied (kubectl apply -n) */
    uint64_t debounce_after_ms; /* 0 = 100 (PILOT_DEBOUNCE_AFTER) */
    uint64_t debounce_max_ms;   /* 0 = 10000 (PILOT_DEBOUNCE_MAX) */
    uint64_t rescan_ms;         /* 0 = 2000; the cheap mtime/size rescan */
    /* the API server's --service-cluster-ip-range this source stands in for: Services without
     * a clusterIP get one (model/cluster_ip.h); prefix_len 0 = none (they keep none) */
    wf_ip_range service_ips;
    /* wf_source_build only (the Kubernetes source, source_kube.h): documents loaded after the
     * directories, and the MeshConfig as text (mesh_name names it; used instead of mesh_file
     * when mesh_text is not NULL: the `istio` ConfigMap as JSON, its data.mesh read). Borrowed
     * for the build. */
    const wf_source_doc *docs;
    size_t n_docs;
    const char *mesh_text;
    size_t mesh_len;
    const char *mesh_name;
    /* the source applies MeshConfig discoverySelectors itself (the Kubernetes source): they
     * are not reported as not implemented (WFT0001) */
    bool discovery_selectors;
    /* the config is a Kubernetes cluster's (the Kubernetes source): its pods are injected with
     * Istio's template and run `weft-proxy proxy`, so the fields that lack effect in the local
     * mesh only are not reported (model/unimplemented.h WF_UNIMPL_KUBERNETES) */
    bool kubernetes;
} wf_dir_source_opts;

/* Makes a directory source on loop. Returns 0 and *out, or -1 (out of memory). */
int wf_dir_source_new(uv_loop_t *loop, const wf_dir_source_opts *opts, wf_config_source **out);

/* Test hook and the rescan's path: behaves as if an fs event arrived now (debounced). */
void wf_dir_source_poke(wf_config_source *src);

/* Builds one snapshot from the inputs now (directories, then opts->docs), against prev (may be
 * NULL: no last good versions, change FULL). Pure apart from reading files and logging. Returns the
 * snapshot (one reference, caller owns) or NULL on out of memory. */
wf_snapshot *wf_source_build(const wf_dir_source_opts *opts, const wf_snapshot *prev,
                             int64_t changed_at_ms);

#endif
