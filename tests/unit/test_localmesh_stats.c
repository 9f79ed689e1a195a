/*
 * test_localmesh_stats.c - the local mesh's proxy stats inclusion (cli/localmesh_stats.c and
 * the bootstrap's stats_config): MeshConfig defaultConfig.proxyStatsMatcher merged in,
 * proxy.istio.io/config replacing it, the deprecated sidecar.istio.io/statsInclusion*
 * annotations replacing a list, and a bad pattern stopping only its pod (a bad one in
 * MeshConfig stops the plan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/localmesh_plan.h"
#include "cli/localmesh_state.h"
#include "harness.h"

#define MESH(matcher)                                                                              \
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\n"          \
    "data:\n  mesh: |-\n    defaultConfig:\n      proxyStatsMatcher:\n" matcher

#define WORKLOAD(name, annotations)                                                                \
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " name ", namespace: n}\n"       \
    "spec:\n  template:\n    metadata:\n      annotations:\n"                                      \
    "        sidecar.istio.io/inject: \"true\"\n" annotations                                      \
    "    spec:\n      containers: [{name: c, image: x}]\n"

typedef struct fixture {
    wf_store *store;
    wf_lm_plan *plan;
    wf_strbuf err;
} fixture;

static int plan(fixture *f, const char *yaml)
{
    wf_lm_opts o = {.dir = "/m", .state = "/m/.weft", .bin_dir = "/nonexistent-bin"};
    memset(f, 0, sizeof *f);
    f->store = wf_test_load_store(NULL, yaml, NULL);
    return wf_lm_plan_from_store(&o, f->store, &f->plan, &f->err);
}

static void done(fixture *f)
{
    wf_lm_plan_free(f->plan);
    wf_store_free(f->store);
    wf_strbuf_free(&f->err);
}

static const wf_lm_pod *pod_of(const wf_lm_plan *p, const char *owner)
{
    for (size_t i = 0; i < p->npods; i++)
        if (strcmp(p->pods[i].owner, owner) == 0)
            return &p->pods[i];
    fail_msg("no pod of %s", owner);
    return NULL;
}

/* The bootstrap's inclusion patterns, one "kind:value" per pattern, space-separated. */
static void expect_in_bootstrap(const wf_lm_plan *p, const wf_lm_pod *pod, const char *want,
                                bool present)
{
    json_t *b = wf_lm_bootstrap_json(p, pod);
    assert_non_null(b);
    char *text = json_dumps(wf_test_json_at(b, "stats_config.stats_matcher"), JSON_COMPACT);
    assert_non_null(text);
    if ((strstr(text, want) != NULL) != present)
        fail_msg("%s: %s %s", pod->name, present ? "lacks" : "has", want);
    free(text);
    json_decref(b);
}

static void mesh_default_and_overrides(void **state)
{
    static const char *const yaml =
        MESH("        inclusionPrefixes: [control_plane]\n"
             "        inclusionRegexps: [\"cluster\\\\..*\\\\.upstream_rq_retry\"]\n")
            WORKLOAD("plain", "") WORKLOAD(
                "pc", "        proxy.istio.io/config: |\n"
                      "          proxyStatsMatcher: {inclusionSuffixes: [upstream_cx_total]}\n")
                WORKLOAD("anno",
                         "        sidecar.istio.io/statsInclusionPrefixes: \"http.{pod_ip}_\"\n");
    fixture f;
    if (plan(&f, yaml) != 0)
        fail_msg("%s", wf_strbuf_cstr(&f.err));
    const wf_lm_pod *plain = pod_of(f.plan, "plain"), *pc = pod_of(f.plan, "pc"),
                    *anno = pod_of(f.plan, "anno"), *gw = &f.plan->pods[0];
    /* MeshConfig's lists, for the pod and for the gateway we add */
    expect_in_bootstrap(f.plan, plain, "{\"prefix\":\"control_plane\"}", true);
    expect_in_bootstrap(f.plan, gw, "{\"prefix\":\"control_plane\"}", true);
    expect_in_bootstrap(f.plan, plain, "upstream_rq_retry", true);
    expect_in_bootstrap(f.plan, plain, "{\"prefix\":\"cluster_manager\"}", true);
    /* proxy.istio.io/config's proxyStatsMatcher replaces MeshConfig's whole */
    expect_in_bootstrap(f.plan, pc, "{\"suffix\":\"upstream_cx_total\"}", true);
    expect_in_bootstrap(f.plan, pc, "control_plane", false);
    expect_in_bootstrap(f.plan, pc, "upstream_rq_retry", false);
    /* the annotation replaces the prefixes only; {pod_ip} is the pod's IP */
    char want[80];
    snprintf(want, sizeof want, "{\"prefix\":\"http.%s_\"}", anno->ip);
    expect_in_bootstrap(f.plan, anno, want, true);
    expect_in_bootstrap(f.plan, anno, "control_plane", false);
    expect_in_bootstrap(f.plan, anno, "upstream_rq_retry", true);
    json_t *b = wf_lm_bootstrap_json(f.plan, plain);
    wf_test_expect_str(b, "static_resources.clusters.0.alt_stat_name", "xds-grpc;");
    assert_true(json_is_false(wf_test_json_at(b, "stats_config.use_all_default_tags")));
    wf_test_expect_str(b, "stats_config.stats_tags.0.tag_name", "cluster_name");
    json_decref(b);
    done(&f);
}

static bool has_proc_of(const wf_lm_plan *p, const wf_lm_pod *pod)
{
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].pod < p->npods && &p->pods[p->procs[i].pod] == pod)
            return true;
    return false;
}

/* A bad pattern in a pod's annotations stops that pod only, with a message naming the file,
 * the workload, the annotation and the pattern. */
static void bad_annotation_stops_its_pod(void **state)
{
    static const char *const yaml = WORKLOAD("good", "")
        WORKLOAD("bad", "        sidecar.istio.io/statsInclusionRegexps: \"ok.*,(bad\"\n")
            WORKLOAD("badpc", "        proxy.istio.io/config: |\n"
                              "          proxyStatsMatcher: {inclusionPrefixes: [\"\"]}\n")
                WORKLOAD("badtype", "        proxy.istio.io/config: |\n"
                                    "          proxyStatsMatcher: {inclusionRegexps: a}\n");
    fixture f;
    if (plan(&f, yaml) != 0)
        fail_msg("%s", wf_strbuf_cstr(&f.err));
    const wf_lm_pod *good = pod_of(f.plan, "good"), *bad = pod_of(f.plan, "bad");
    assert_null(good->error);
    assert_true(has_proc_of(f.plan, good));
    assert_non_null(bad->error);
    assert_false(has_proc_of(f.plan, bad));
    assert_null(bad->bootstrap);
    static const char *const want[] = {
        "Deployment n/bad: spec.template.metadata.annotations[sidecar.istio.io/"
        "statsInclusionRegexps]: item 1 \"(bad\": error parsing regexp: missing closing )",
        NULL};
    for (size_t i = 0; want[i]; i++)
        if (!strstr(bad->error, want[i]))
            fail_msg("\"%s\" lacks \"%s\"", bad->error, want[i]);
    const char *e = pod_of(f.plan, "badpc")->error;
    assert_non_null(e);
    assert_non_null(strstr(e, "annotations[proxy.istio.io/config]: proxyStatsMatcher."
                              "inclusionPrefixes[0] \"\": value length must be at least 1"));
    e = pod_of(f.plan, "badtype")->error;
    assert_non_null(e);
    assert_non_null(strstr(e, "proxyStatsMatcher.inclusionRegexps: want a list of strings"));
    json_t *mesh = wf_lm_mesh_json(f.plan, NULL, 0);
    char *text = json_dumps(mesh, JSON_COMPACT);
    assert_non_null(strstr(text, "\"error\":"));
    free(text);
    json_decref(mesh);
    done(&f);
}

/* A bad pattern in MeshConfig would stop every proxy: the plan fails, naming it. */
static void bad_mesh_pattern_fails_plan(void **state)
{
    fixture f;
    assert_int_equal(plan(&f, MESH("        inclusionRegexps: [\"envoy_(\"]\n") WORKLOAD("d", "")),
                     -1);
    const char *e = wf_strbuf_cstr(&f.err);
    if (!strstr(e, "ConfigMap istio-system/istio (data.mesh)") ||
        !strstr(e, "defaultConfig.proxyStatsMatcher.inclusionRegexps[0] \"envoy_(\": error "
                   "parsing regexp"))
        fail_msg("%s", e);
    done(&f);
}

/* An annotation that does not parse stops only its workload's pods, as a bad pattern does
 * (Istio's injector refuses the pod); so does a proxyStatsMatcher protobuf JSON refuses. */
static void bad_annotation_config_stops_its_pod(void **state)
{
    static const char *const yaml =
        WORKLOAD("good", "") WORKLOAD("unparsable", "        proxy.istio.io/config: "
                                                    "'proxyStatsMatcher: [1'\n")
            WORKLOAD("unknown", "        proxy.istio.io/config: |\n"
                                "          proxyStatsMatcher: {exclusionRegexps: [x]}\n")
                WORKLOAD("number", "        proxy.istio.io/config: |\n"
                                   "          proxyStatsMatcher: {inclusionPrefixes: [5]}\n");
    fixture f;
    if (plan(&f, yaml) != 0)
        fail_msg("%s", wf_strbuf_cstr(&f.err));
    const wf_lm_pod *good = pod_of(f.plan, "good");
    assert_null(good->error);
    assert_true(has_proc_of(f.plan, good));
    static const struct {
        const char *owner, *want;
    } cases[] = {
        {"unparsable", "t.yaml:21:32: Deployment n/unparsable: spec.template.metadata.annotations["
                       "proxy.istio.io/config]: does not parse (line 1, column 22 of the value): "
                       "yaml: did not find "
                       "expected ',' or ']'"},
        {"unknown", "Deployment n/unknown: spec.template.metadata.annotations[proxy.istio.io/"
                    "config]: proxyStatsMatcher.exclusionRegexps: unknown field"},
        {"number", "annotations[proxy.istio.io/config]: proxyStatsMatcher.inclusionPrefixes[0]: "
                   "want a string, not integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const wf_lm_pod *pod = pod_of(f.plan, cases[i].owner);
        if (!pod->error || !strstr(pod->error, cases[i].want))
            fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].owner,
                     pod->error ? pod->error : "(no error)", cases[i].want);
        assert_false(has_proc_of(f.plan, pod));
    }
    done(&f);
}

/* In MeshConfig the same mistakes stop the plan, naming the file and the field. */
static void bad_mesh_matcher_fields_fail_plan(void **state)
{
    static const struct {
        const char *mesh, *want;
    } cases[] = {
        {MESH("        exclusionRegexps: [x]\n"),
         "t.yaml:8:5: MeshConfig: defaultConfig.proxyStatsMatcher.exclusionRegexps: unknown field"},
        {MESH("        inclusionPrefixes: [5]\n"),
         "t.yaml:8:25: MeshConfig: defaultConfig.proxyStatsMatcher.inclusionPrefixes[0]: want a "
         "string, not integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f;
        assert_int_equal(plan(&f, cases[i].mesh), -1);
        if (!strstr(wf_strbuf_cstr(&f.err), cases[i].want))
            fail_msg("\"%s\" lacks \"%s\"", wf_strbuf_cstr(&f.err), cases[i].want);
        done(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mesh_default_and_overrides),
        cmocka_unit_test(bad_annotation_stops_its_pod),
        cmocka_unit_test(bad_mesh_pattern_fails_plan),
        cmocka_unit_test(bad_annotation_config_stops_its_pod),
        cmocka_unit_test(bad_mesh_matcher_fields_fail_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
