/*
 * test_analyze_scope.c - what `weftctl analyze`'s namespace filter leaves out
 * (cli/analyze_scope.h): resources counted in and out of the analyzed namespace, the skipped
 * namespaces named and sorted, the Namespace-belongs-to-itself and cluster-scoped rules of the
 * filter, and what is not counted (unknown kinds, weftctl's defaults, synthetic pods).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli/analyze_scope.h"
#include "model/store.h"

static const char manifests[] = "apiVersion: v1\n"
                                "kind: Namespace\n"
                                "metadata: {name: shop}\n"
                                "---\n"
                                "apiVersion: apps/v1\n"
                                "kind: Deployment\n"
                                "metadata: {name: catalog, namespace: shop}\n"
                                "spec:\n"
                                "  selector: {matchLabels: {app: catalog}}\n"
                                "  template: {metadata: {labels: {app: catalog}}}\n"
                                "---\n"
                                "apiVersion: networking.istio.io/v1\n"
                                "kind: VirtualService\n"
                                "metadata: {name: catalog, namespace: shop}\n"
                                "spec: {hosts: [catalog]}\n"
                                "---\n"
                                "apiVersion: networking.istio.io/v1\n"
                                "kind: Gateway\n"
                                "metadata: {name: gw, namespace: istio-system}\n"
                                "spec: {selector: {istio: ingressgateway}}\n"
                                "---\n"
                                "apiVersion: weft.dev/v1\n"
                                "kind: LocalImages\n"
                                "images: {}\n";

static const char defaults[] = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: istio-ingressgateway, namespace: istio-system}\n";

static wf_store *load(const char *text, const char *default_ns)
{
    wf_store *s = wf_store_new();
    assert_non_null(s);
    assert_int_equal(
        wf_store_load_buffer(s, WF_ANALYZE_DEFAULTS_NAME, defaults, strlen(defaults), false), 0);
    assert_int_equal(wf_store_load_buffer(s, "m.yaml", text, strlen(text), false), 0);
    assert_int_equal(wf_store_finalize(s, default_ns, true), 0);
    return s;
}

/* Everything is outside "default": nothing in scope, both namespaces named, sorted. */
static void test_all_outside_the_namespace(void **state)
{
    (void)state;
    wf_store *s = load(manifests, "default");
    wf_analyze_scope sc;
    assert_int_equal(wf_analyze_scope_count(s, "default", &sc), 0);
    assert_int_equal(sc.in_scope, 0);
    assert_int_equal(sc.skipped, 4); /* Namespace shop, Deployment, VS, Gateway */
    assert_int_equal(sc.nskipped_ns, 2);
    assert_string_equal(sc.skipped_ns[0].ns, "istio-system");
    assert_int_equal(sc.skipped_ns[0].n, 1);
    assert_string_equal(sc.skipped_ns[1].ns, "shop");
    assert_int_equal(sc.skipped_ns[1].n, 3); /* the Namespace object belongs to itself */
    wf_analyze_scope_free(&sc);
    wf_store_free(s);
}

static void test_some_in_scope(void **state)
{
    (void)state;
    wf_store *s = load(manifests, "shop");
    wf_analyze_scope sc;
    assert_int_equal(wf_analyze_scope_count(s, "shop", &sc), 0);
    assert_int_equal(sc.in_scope, 3);
    assert_int_equal(sc.skipped, 1);
    assert_int_equal(sc.nskipped_ns, 1);
    assert_string_equal(sc.skipped_ns[0].ns, "istio-system");
    wf_analyze_scope_free(&sc);
    wf_store_free(s);
}

/* -A: nothing is skipped. */
static void test_all_namespaces(void **state)
{
    (void)state;
    wf_store *s = load(manifests, NULL);
    wf_analyze_scope sc;
    assert_int_equal(wf_analyze_scope_count(s, NULL, &sc), 0);
    assert_int_equal(sc.in_scope, 4);
    assert_int_equal(sc.skipped, 0);
    assert_null(sc.skipped_ns);
    wf_analyze_scope_free(&sc);
    wf_store_free(s);
}

/* Cluster-scoped kinds are always reported, so they count as in scope; an empty input counts
 * nothing. */
static void test_cluster_scoped_and_empty(void **state)
{
    (void)state;
    wf_store *s = load("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", "default");
    wf_analyze_scope sc;
    assert_int_equal(wf_analyze_scope_count(s, "other", &sc), 0);
    assert_int_equal(sc.in_scope, 1);
    assert_int_equal(sc.skipped, 0);
    wf_analyze_scope_free(&sc);
    wf_store_free(s);
    s = load("", "default");
    assert_int_equal(wf_analyze_scope_count(s, "default", &sc), 0);
    assert_int_equal(sc.in_scope + sc.skipped, 0);
    wf_analyze_scope_free(&sc);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_outside_the_namespace),
        cmocka_unit_test(test_some_in_scope),
        cmocka_unit_test(test_all_namespaces),
        cmocka_unit_test(test_cluster_scoped_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
