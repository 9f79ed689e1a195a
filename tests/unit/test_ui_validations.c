/*
 * test_ui_validations.c - pilot/ui_validations: weftctl analyze's messages per resource for
 * snapshots of a temporary folder: the analyzers run once per snapshot (counted), the YAML
 * text is the document's own and the line at fault is marked in it, the services a resource
 * routes to, the namespace filter, the config pilot rejected with the last good version kept,
 * the WFT warnings; and the Kubernetes source's documents rendered as YAML with the line marked
 * in the rendering.
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

#include "pilot/source.h"
#include "pilot/ui_validations.h"

/* The Service, then (second document, after a comment) a VirtualService to a subset no
 * DestinationRule defines: IST0101 on the destination. */
static const char *const APP = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: catalog, namespace: shop}\n"
                               "spec:\n"
                               "  selector: {app: catalog}\n"
                               "  ports: [{name: http, port: 80, targetPort: 3000}]\n"
                               "---\n"
                               "apiVersion: networking.istio.io/v1\n"
                               "kind: VirtualService\n"
                               "metadata: {name: catalog, namespace: shop}\n"
                               "spec:\n"
                               "  hosts: [catalog]\n"
                               "  http:\n"
                               "  - route:\n"
                               "    - destination:\n"
                               "        host: catalog\n"
                               "        subset: v1\n"
                               "      weight: %s\n"
                               "---\n"
                               "apiVersion: networking.istio.io/v1\n"
                               "kind: DestinationRule\n"
                               "metadata: {name: other, namespace: other}\n"
                               "spec:\n"
                               "  host: reviews.other.svc.cluster.local\n"
                               "  workloadSelector: {matchLabels: {app: reviews}}\n";

typedef struct tdir {
    char path[64];
} tdir;

static void tdir_make(tdir *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/wf-uiv-XXXXXX");
    assert_non_null(mkdtemp(d->path));
}

static void tdir_rm(const tdir *d)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", d->path);
    assert_int_equal(system(cmd), 0);
}

static void put_app(const tdir *d, const char *weight)
{
    char p[128], text[4096];
    snprintf(p, sizeof p, "%s/app.yaml", d->path);
    snprintf(text, sizeof text, APP, weight);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The entry of kind/name in the answer's resources, NULL when absent. */
static json_t *entry(json_t *ans, const char *kind, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(ans, "resources"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "kind")), kind) == 0 &&
            strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
            return e;
    }
    return NULL;
}

/* Line n (1-based) of text into buf. */
static const char *line_of(const char *text, json_int_t n, char *buf, size_t cap)
{
    for (json_int_t l = 1; l < n && text; l++) {
        text = strchr(text, '\n');
        text = text ? text + 1 : NULL;
    }
    assert_non_null(text);
    const char *nl = strchr(text, '\n');
    snprintf(buf, cap, "%.*s", (int)(nl ? (size_t)(nl - text) : strlen(text)), text);
    return buf;
}

static json_t *message(json_t *e, const char *code, const char *text)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(e, "messages"), i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "code")), code) == 0 &&
            strstr(json_string_value(json_object_get(m, "message")), text))
            return m;
    }
    return NULL;
}

static void test_messages_yaml_line_services(void **state)
{
    (void)state;
    tdir d;
    tdir_make(&d);
    put_app(&d, "100");
    const char *dirs[] = {d.path};
    wf_dir_source_opts o = {.dirs = dirs, .n_dirs = 1};
    wf_snapshot *s = wf_source_build(&o, NULL, 0);
    assert_non_null(s);
    wf_ui_val_source src = {.dirs = dirs, .n_dirs = 1, .default_ns = "default"};
    wf_ui_validations *v = wf_ui_validations_new(&src);
    assert_non_null(v);
    json_t *ans = wf_ui_validations_json(v, s, "V1", NULL);
    assert_non_null(ans);
    assert_string_equal(json_string_value(json_object_get(ans, "version")), "V1");
    json_t *vs = entry(ans, "VirtualService", "catalog");
    assert_non_null(vs);
    assert_string_equal(json_string_value(json_object_get(vs, "namespace")), "shop");
    assert_string_equal(json_string_value(json_object_get(vs, "api_version")),
                        "networking.istio.io/v1");
    assert_non_null(strstr(json_string_value(json_object_get(vs, "origin")), "app.yaml"));
    /* the document's own text: not the Service before it, not the DestinationRule after */
    const char *yaml = json_string_value(json_object_get(vs, "yaml"));
    assert_non_null(yaml);
    assert_non_null(strstr(yaml, "kind: VirtualService\n"));
    assert_null(strstr(yaml, "kind: Service\n"));
    assert_null(strstr(yaml, "DestinationRule"));
    assert_null(strstr(yaml, "---"));
    json_t *m = message(vs, "IST0101", "\"catalog+v1\"");
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "level")), "Error");
    assert_string_equal(json_string_value(json_object_get(m, "documentation_url")),
                        "https://istio.io/latest/docs/reference/config/analysis/ist0101/"
                        "?ref=istioctl-analyze");
    /* the line at fault, in the resource's text (weftctl analyze: app.yaml:16) */
    char buf[256];
    json_int_t line = json_integer_value(json_object_get(m, "line"));
    assert_true(line > 0);
    assert_int_equal(line, 16 - 7); /* the document starts on line 8 of the file */
    assert_string_equal(line_of(yaml, line, buf, sizeof buf), "        host: catalog");
    /* services: the host and the destination as FQDNs */
    json_t *svcs = json_object_get(vs, "services");
    assert_int_equal(json_array_size(svcs), 1);
    assert_string_equal(json_string_value(json_array_get(svcs, 0)),
                        "catalog.shop.svc.cluster.local");
    /* the WFT warning pilot reports (the DestinationRule's workloadSelector) */
    json_t *ni = json_object_get(ans, "not_implemented");
    assert_int_equal(json_array_size(ni), 1);
    json_t *w = json_array_get(ni, 0);
    assert_string_equal(json_string_value(json_object_get(w, "code")), "WFT0001");
    assert_string_equal(json_string_value(json_object_get(w, "resource")),
                        "DestinationRule/other/other");
    assert_string_equal(json_string_value(json_object_get(w, "field")), "spec.workloadSelector");
    /* analyze reports it too, as a message on the resource */
    json_t *dr = entry(ans, "DestinationRule", "other");
    assert_non_null(dr);
    assert_non_null(message(dr, "WFT0001", "workloadSelector"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(dr, "services"), 0)),
                        "reviews.other.svc.cluster.local");
    json_int_t errors =
        json_integer_value(json_object_get(json_object_get(ans, "summary"), "error"));
    assert_true(errors >= 1);
    json_decref(ans);

    /* ?namespace=shop: the other namespace's resource and warning are left out */
    ans = wf_ui_validations_json(v, s, "V1", "shop");
    assert_non_null(entry(ans, "VirtualService", "catalog"));
    assert_null(entry(ans, "DestinationRule", "other"));
    assert_int_equal(json_array_size(json_object_get(ans, "not_implemented")), 0);
    json_decref(ans);
    wf_ui_validations_free(v);
    wf_snapshot_unref(s);
    tdir_rm(&d);
}

static void test_once_per_snapshot_and_rejected(void **state)
{
    (void)state;
    tdir d;
    tdir_make(&d);
    put_app(&d, "100");
    const char *dirs[] = {d.path};
    wf_dir_source_opts o = {.dirs = dirs, .n_dirs = 1};
    wf_ui_val_source src = {.dirs = dirs, .n_dirs = 1};
    wf_ui_validations *v = wf_ui_validations_new(&src);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    assert_int_equal(wf_ui_validations_note(v, s1, "V1"), 0);
    assert_int_equal(wf_ui_validations_runs(v), 0); /* lazily: nothing asked yet */
    for (int i = 0; i < 3; i++)
        json_decref(wf_ui_validations_json(v, s1, "V1", i == 2 ? "shop" : NULL));
    assert_int_equal(wf_ui_validations_runs(v), 1);

    /* the VirtualService broken: pilot keeps its last good version (served since V1) */
    put_app(&d, "\"abc\"");
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_true(s2->n_errors >= 1);
    assert_int_equal(wf_ui_validations_note(v, s2, "V2"), 0);
    json_t *ans = wf_ui_validations_json(v, s2, "V2", NULL);
    assert_int_equal(wf_ui_validations_runs(v), 2);
    json_decref(wf_ui_validations_json(v, s2, "V2", NULL));
    assert_int_equal(wf_ui_validations_runs(v), 2);
    json_t *rej = json_array_get(json_object_get(ans, "rejected"), 0);
    assert_non_null(rej);
    assert_non_null(strstr(json_string_value(json_object_get(rej, "origin")), "app.yaml"));
    assert_int_equal(json_integer_value(json_object_get(rej, "line")), 18);
    assert_non_null(strstr(json_string_value(json_object_get(rej, "message")),
                           "VirtualService shop/catalog: spec.http[0].route[0].weight: "));
    assert_string_equal(json_string_value(json_object_get(rej, "serving")),
                        "last good version kept: V1");
    assert_int_equal(json_array_size(json_object_get(rej, "resources")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(rej, "resources"), 0)),
                        "VirtualService/shop/catalog");
    /* ?namespace=other leaves the shop namespace's rejection out */
    json_t *other = wf_ui_validations_json(v, s2, "V2", "other");
    assert_int_equal(json_array_size(json_object_get(other, "rejected")), 0);
    json_decref(other);
    json_decref(ans);

    /* the whole file unparsable: every resource of it kept, listed with the file's error */
    char p[128];
    snprintf(p, sizeof p, "%s/app.yaml", d.path);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("apiVersion: v1\nkind: Service\nmetadata: {name: [unclosed\n", f);
    fclose(f);
    wf_snapshot *s3 = wf_source_build(&o, s2, 0);
    assert_int_equal(wf_ui_validations_note(v, s3, "V3"), 0);
    ans = wf_ui_validations_json(v, s3, "V3", NULL);
    assert_int_equal(wf_ui_validations_runs(v), 3);
    json_t *file = NULL;
    size_t i;
    json_array_foreach(json_object_get(ans, "rejected"), i, rej)
    {
        if (!*json_string_value(json_object_get(rej, "resource")))
            file = rej;
    }
    assert_non_null(file);
    assert_string_equal(json_string_value(json_object_get(file, "serving")),
                        "last good version kept: V1");
    json_t *kept = json_object_get(file, "resources");
    assert_int_equal(json_array_size(kept), 3);
    assert_string_equal(json_string_value(json_array_get(kept, 0)), "Service/shop/catalog");
    json_decref(ans);
    wf_ui_validations_free(v);
    wf_snapshot_unref(s3);
    wf_snapshot_unref(s2);
    wf_snapshot_unref(s1);
    tdir_rm(&d);
}

/* The Kubernetes source: the documents pilot holds as JSON, analyzed in their YAML rendering. */
static void test_kubernetes_documents_rendered(void **state)
{
    (void)state;
    static const char svc[] = "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                              "\"catalog\",\"namespace\":\"shop\"},\"spec\":{\"selector\":{\"app\":"
                              "\"catalog\"},\"ports\":[{\"name\":\"http\",\"port\":80}]}}";
    static const char vs[] =
        "{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"VirtualService\",\"metadata\":"
        "{\"name\":\"catalog\",\"namespace\":\"shop\"},\"spec\":{\"hosts\":[\"catalog\"],"
        "\"http\":[{\"route\":[{\"destination\":{\"host\":\"catalog\",\"subset\":\"v1\"}}]}]}}";
    wf_source_doc docs[] = {{"kube:Service/shop/catalog", svc, sizeof svc - 1},
                            {"kube:VirtualService/shop/catalog", vs, sizeof vs - 1}};
    wf_dir_source_opts o = {.docs = docs, .n_docs = 2, .kubernetes = true};
    wf_snapshot *s = wf_source_build(&o, NULL, 0);
    assert_non_null(s);
    wf_ui_val_source src = {.n_dirs = 0};
    wf_ui_validations *v = wf_ui_validations_new(&src);
    json_t *ans = wf_ui_validations_json(v, s, "V1", NULL);
    json_t *e = entry(ans, "VirtualService", "catalog");
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "origin")), "kubernetes");
    const char *yaml = json_string_value(json_object_get(e, "yaml"));
    assert_non_null(strstr(yaml, "apiVersion: networking.istio.io/v1\nkind: VirtualService\n"));
    json_t *m = message(e, "IST0101", "\"catalog+v1\"");
    assert_non_null(m);
    char buf[256];
    json_int_t line = json_integer_value(json_object_get(m, "line"));
    assert_true(line > 0);
    assert_non_null(strstr(line_of(yaml, line, buf, sizeof buf), "host: catalog"));
    json_decref(ans);
    wf_ui_validations_free(v);
    wf_snapshot_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_yaml_line_services),
        cmocka_unit_test(test_once_per_snapshot_and_rejected),
        cmocka_unit_test(test_kubernetes_documents_rendered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
