/*
 * test_meshcfg.c - the MeshConfig loader weft-pilot (--meshConfig), weftctl analyze and
 * weftctl up share (analysis/meshcfg.c): the plain MeshConfig file, the istio ConfigMap shape
 * (data.mesh, as examples/catalog/mesh.yaml), and the fields refused as Istio's protobuf
 * JSON decoding refuses them, each error naming file:line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/meshcfg.h"
#include "harness.h"

/* Load text as a MeshConfig file; returns 0 or -1, with the error copied into err. */
static int load(wf_meshcfg *m, const char *text, char *err, size_t cap, char **path_out)
{
    char *path = wf_test_temp_file(text);
    const char *e = NULL;
    int rc = wf_meshcfg_load_file(m, path, &e);
    snprintf(err, cap, "%s", rc ? e : "");
    unlink(path);
    if (path_out)
        *path_out = path;
    else
        free(path);
    return rc;
}

static void expect_error(const char *text, const char *want_line, const char *want)
{
    wf_meshcfg *m = wf_meshcfg_new_default();
    assert_non_null(m);
    char err[1024], *path = NULL;
    assert_int_equal(load(m, text, err, sizeof err, &path), -1);
    char where[512];
    snprintf(where, sizeof where, "%s:%s: MeshConfig: ", path, want_line);
    if (strncmp(err, where, strlen(where)) != 0 || !strstr(err, want))
        fail_msg("error \"%s\" lacks \"%s\" or \"%s\"", err, where, want);
    free(path);
    wf_meshcfg_free(m);
}

static void plain_file(void **state)
{
    wf_meshcfg *m = wf_meshcfg_new_default();
    char err[512];
    assert_int_equal(load(m,
                          "accessLogFile: /dev/stdout\naccessLogEncoding: JSON\n"
                          "defaultConfig:\n  proxyStatsMatcher:\n"
                          "    inclusionPrefixes: [control_plane, \"5\"]\n",
                          err, sizeof err, NULL),
                     0);
    assert_string_equal(wf_meshcfg_str(m, "accessLogFile"), "/dev/stdout");
    assert_string_equal(wf_meshcfg_str(m, "rootNamespace"), "istio-system"); /* default */
    wf_meshcfg_free(m);
}

/* examples/catalog/mesh.yaml's shape: the MeshConfig is data.mesh of the istio ConfigMap. */
static void configmap_file(void **state)
{
    wf_meshcfg *m = wf_meshcfg_new_default();
    char err[512];
    assert_int_equal(load(m,
                          "# comment\napiVersion: v1\nkind: ConfigMap\n"
                          "metadata: {name: istio, namespace: istio-system}\n"
                          "data:\n  mesh: |-\n    accessLogFile: /dev/stdout\n"
                          "    accessLogEncoding: JSON\n",
                          err, sizeof err, NULL),
                     0);
    assert_string_equal(wf_meshcfg_str(m, "accessLogFile"), "/dev/stdout");
    assert_string_equal(wf_meshcfg_str(m, "accessLogEncoding"), "JSON");
    assert_null(wf_meshcfg_get(m, "data"));
    wf_meshcfg_free(m);
}

static void wrong_shapes(void **state)
{
    expect_error("accessLogFile: /dev/stdout\nfoo: 1\n", "2:1", "foo: unknown field");
    expect_error("access_log_file: /dev/stdout\n", "1:1",
                 "access_log_file: unknown field (write it as accessLogFile)");
    expect_error("apiVersion: apps/v1\nkind: Deployment\n", "2:7",
                 "kind Deployment: want the MeshConfig fields, or the istio ConfigMap");
    expect_error("apiVersion: v1\nkind: ConfigMap\ndata:\n  config: x\n", "2:7",
                 "ConfigMap: want data.mesh");
    expect_error("- a\n", "1:1", "want a map of MeshConfig fields");
    /* inside data.mesh: the line is the file's */
    expect_error("apiVersion: v1\nkind: ConfigMap\ndata:\n  mesh: |-\n"
                 "    accessLogFile: /dev/stdout\n    bogus: true\n",
                 "6:1", "bogus: unknown field");
    /* a parser error at the end of the value: after its last character (it was put on line
     * 5, past the end of the file); the column is the value's */
    expect_error("kind: ConfigMap\ndata:\n  mesh: |-\n    a: [\n", "4:5", "");
}

static void stats_matcher_strict(void **state)
{
    expect_error("defaultConfig:\n  proxyStatsMatcher:\n    exclusionRegexps: [x]\n", "3:5",
                 "defaultConfig.proxyStatsMatcher.exclusionRegexps: unknown field");
    expect_error("defaultConfig:\n  proxyStatsMatcher:\n    inclusionPrefixes: [a, 5]\n", "3:28",
                 "defaultConfig.proxyStatsMatcher.inclusionPrefixes[1]: want a string, not "
                 "integer");
    expect_error("defaultConfig:\n  proxyStatsMatcher:\n    inclusionRegexps: a\n", "3:23",
                 "defaultConfig.proxyStatsMatcher.inclusionRegexps: want a list of strings");
    expect_error("defaultConfig:\n  proxyStatsMatcher: [a]\n", "2:22",
                 "defaultConfig.proxyStatsMatcher: want a ProxyStatsMatcher map");
    expect_error("defaultConfig: 3\n", "1:16", "defaultConfig: want a ProxyConfig map");
}

static void networks_unchecked(void **state)
{
    wf_meshcfg *m = wf_meshcfg_new_default();
    char *path = wf_test_temp_file("networks:\n  n1:\n    endpoints: [{fromRegistry: c1}]\n");
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_networks(m, path, &err), 0);
    assert_non_null(wf_meshcfg_networks(m));
    unlink(path);
    free(path);
    wf_meshcfg_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_file),         cmocka_unit_test(configmap_file),
        cmocka_unit_test(wrong_shapes),       cmocka_unit_test(stats_matcher_strict),
        cmocka_unit_test(networks_unchecked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
