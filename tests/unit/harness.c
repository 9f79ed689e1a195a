/*
 * harness.c - shared helpers for analyzer unit tests (harness.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "proxy/bootstrap/bootstrap.h"

char *wf_test_temp_file(const char *text)
{
    char *path = strdup("/tmp/wf-test-XXXXXX");
    assert_non_null(path);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static void load_mesh_file(wf_meshcfg *m, const char *text, bool networks)
{
    const char *err = NULL;
    char *p = wf_test_temp_file(text);
    int rc = networks ? wf_meshcfg_load_networks(m, p, &err) : wf_meshcfg_load_file(m, p, &err);
    unlink(p);
    free(p);
    assert_int_equal(rc, 0);
}

wf_test_run wf_test_analyze_mesh(const char *analyzer, const char *yaml, const char *mesh,
                                 const char *networks)
{
    wf_test_run r = {wf_store_new(), wf_meshcfg_new_default(), NULL};
    assert_non_null(r.store);
    assert_non_null(r.mesh);
    if (mesh)
        load_mesh_file(r.mesh, mesh, false);
    if (networks)
        load_mesh_file(r.mesh, networks, true);
    assert_int_equal(wf_store_load_buffer(r.store, "t.yaml", yaml, strlen(yaml), false), 0);
    assert_int_equal(wf_store_finalize(r.store, NULL, true), 0);
    const char *names[] = {analyzer};
    wf_analysis_opts o = {.analyzers = names, .nanalyzers = 1};
    r.res = wf_analyze(r.store, r.mesh, &o);
    assert_non_null(r.res);
    assert_int_equal(r.res->nran, 1);
    return r;
}

wf_test_run wf_test_analyze(const char *analyzer, const char *yaml)
{
    return wf_test_analyze_mesh(analyzer, yaml, NULL, NULL);
}

void wf_test_done(wf_test_run *r)
{
    wf_analysis_result_free(r->res);
    wf_meshcfg_free(r->mesh);
    wf_store_free(r->store);
}

static bool matches(const wf_test_run *r, const wf_finding *f, const char *code, const char *origin)
{
    const char *o = wf_finding_origin(&r->res->arena, f);
    return strcmp(wf_msg_type_get(f->id)->code, code) == 0 && o && strcmp(o, origin) == 0;
}

size_t wf_test_count(const wf_test_run *r, const char *code, const char *origin, const char *text)
{
    size_t n = 0;
    for (size_t i = 0; i < r->res->n; i++) {
        const wf_finding *f = &r->res->findings[i];
        if (matches(r, f, code, origin) && (!text || strstr(f->text, text)))
            n++;
    }
    return n;
}

uint32_t wf_test_line_of(const wf_test_run *r, const char *code, const char *origin)
{
    for (size_t i = 0; i < r->res->n; i++)
        if (matches(r, &r->res->findings[i], code, origin))
            return r->res->findings[i].line;
    return 0;
}

wf_store *wf_test_load_store(const char *const *paths, const char *yaml, const char *ns)
{
    wf_store *s = wf_store_new();
    assert_non_null(s);
    for (size_t i = 0; paths && paths[i]; i++)
        assert_int_equal(wf_store_load_path(s, paths[i], NULL, NULL), 0);
    if (yaml)
        assert_int_equal(wf_store_load_buffer(s, "t.yaml", yaml, strlen(yaml), false), 0);
    assert_int_equal(wf_store_finalize(s, ns, true), 0);
    return s;
}

wf_store *wf_test_load_store_cat(const char *base, const char *extra, const char *ns)
{
    size_t n = strlen(base) + strlen(extra) + 1;
    char *yaml = malloc(n);
    assert_non_null(yaml);
    snprintf(yaml, n, "%s%s", base, extra);
    wf_store *s = wf_test_load_store(NULL, yaml, ns);
    free(yaml);
    return s;
}

json_t *wf_test_json_at(json_t *v, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *t = strtok_r(buf, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
        v = json_is_array(v) ? json_array_get(v, strtoul(t, NULL, 10)) : json_object_get(v, t);
    return v;
}

void wf_test_expect_str(json_t *c, const char *path, const char *want)
{
    json_t *v = wf_test_json_at(c, path);
    if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0)
        fail_msg("%s: got %s, want \"%s\"", path, v ? json_dumps(v, JSON_ENCODE_ANY) : "(none)",
                 want);
}

void wf_test_expect_int(json_t *c, const char *path, json_int_t want)
{
    json_t *v = wf_test_json_at(c, path);
    if (!json_is_integer(v) || json_integer_value(v) != want)
        fail_msg("%s: got %s, want %lld", path, v ? json_dumps(v, JSON_ENCODE_ANY) : "(none)",
                 (long long)want);
}

wp_config *wf_test_load_bootstrap(const char *text, wf_strbuf *err)
{
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root)
        fail_msg("test JSON does not parse: %s (%s)", je.text, text);
    wp_config *c = wp_bootstrap_load(root, "t.json", err);
    json_decref(root);
    return c;
}

void wf_test_expect_bootstrap_error(const char *text, const char *want)
{
    wf_strbuf err = WF_STRBUF_INIT;
    wp_config *c = wf_test_load_bootstrap(text, &err);
    if (c || strcmp(wf_strbuf_cstr(&err), want) != 0)
        fail_msg("loaded=%d\n got: %s\nwant: %s", c != NULL, wf_strbuf_cstr(&err), want);
    wf_strbuf_free(&err);
}
