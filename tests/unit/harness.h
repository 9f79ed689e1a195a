/*
 * harness.h - shared helpers for analyzer unit tests: load YAML text into a store, run one
 * analyzer, and query the findings. Failures abort the test through cmocka's asserts.
 */
#ifndef WF_TEST_HARNESS_H
#define WF_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "analysis/analysis.h"
#include "core/strbuf.h"
#include "model/store.h"

typedef struct wf_test_run {
    wf_store *store;
    wf_meshcfg *mesh;
    wf_analysis_result *res;
} wf_test_run;

/* Load yaml (as file "t.yaml", no default namespace), run only `analyzer`. mesh (MeshConfig
 * YAML) and networks (MeshNetworks YAML) may be NULL. Free with wf_test_done. */
wf_test_run wf_test_analyze_mesh(const char *analyzer, const char *yaml, const char *mesh,
                                 const char *networks);
wf_test_run wf_test_analyze(const char *analyzer, const char *yaml);
void wf_test_done(wf_test_run *r);

/* Findings with this code on this origin ("Kind ns/name") whose text contains `text`
 * (NULL = any). */
size_t wf_test_count(const wf_test_run *r, const char *code, const char *origin, const char *text);

/* Line of the first such finding, 0 when none. */
uint32_t wf_test_line_of(const wf_test_run *r, const char *code, const char *origin);

/* A finalized store of the files at paths (NULL-terminated, may be NULL) and of yaml (as file
 * "t.yaml", may be NULL), with ns as the default namespace. Free with wf_store_free. */
wf_store *wf_test_load_store(const char *const *paths, const char *yaml, const char *ns);
/* The same for the documents of base followed by those of extra (a test's shared fixtures and
 * its own). */
wf_store *wf_test_load_store_cat(const char *base, const char *extra, const char *ns);

/* JSON checks for translated Envoy resources: the value at a dotted path of object keys (a
 * numeric step indexes an array; NULL when absent), and assertions that it is the string /
 * integer wanted (the failure names the path and shows what is there). */
json_t *wf_test_json_at(json_t *v, const char *path);
void wf_test_expect_str(json_t *c, const char *path, const char *want);
void wf_test_expect_int(json_t *c, const char *path, json_int_t want);

/* weft-proxy bootstraps: loads JSON text as file "t.json" (a test whose JSON does not parse
 * fails), returning the config or NULL with the loader's message in err. */
struct wp_config *wf_test_load_bootstrap(const char *text, wf_strbuf *err);
/* Asserts that text is refused with exactly the message want. */
void wf_test_expect_bootstrap_error(const char *text, const char *want);

/* Write text to a new temporary file; returns its path (caller unlinks and frees). */
char *wf_test_temp_file(const char *text);

#endif
