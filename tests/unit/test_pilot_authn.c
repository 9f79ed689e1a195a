/*
 * test_pilot_authn.c - pilot/authn: Istio's ComposePeerAuthentication for a workload: nothing
 * = PERMISSIVE, mesh < namespace < workload, the oldest of a scope wins (creationTimestamp,
 * then name), UNSET inherits, port-level modes (UNSET inherits the workload mode), selector
 * policies in the root namespace ignored, a non-default rootNamespace, the applied list; and
 * the corpus's PeerAuthentications.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "model/store.h"
#include "pilot/authn.h"

#define PA_HEAD "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"

static const wf_kv web_kv[] = {{.key = "app", .value = "web"}};
static const wf_kvs web = {.n = 1, .items = (wf_kv *)web_kv};

/* Composes for app=web in namespace shop over yaml (root namespace root, NULL = default). */
static wf_peer_authn compose(const char *yaml, const char *root, wf_store **out_store)
{
    wf_store *s = wf_test_load_store(NULL, yaml, "default");
    assert_non_null(s);
    wf_peer_authn pa;
    assert_int_equal(wf_peer_authn_compose(s, root, "shop", &web, &pa), 0);
    *out_store = s;
    return pa;
}

static void done(wf_peer_authn *pa, wf_store *s)
{
    wf_peer_authn_free(pa);
    wf_store_free(s);
}

static void nothing_is_permissive(void **state)
{
    (void)state;
    wf_store *s;
    wf_peer_authn pa =
        compose("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n", NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_PERMISSIVE);
    assert_null(pa.mesh);
    assert_null(pa.ns);
    assert_null(pa.wl);
    assert_int_equal(pa.napplied, 0);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 8080), WF_MTLS_PERMISSIVE);
    assert_string_equal(wf_mtls_mode_name(pa.mode), "PERMISSIVE");
    done(&pa, s);
}

static const char *const scopes =
    PA_HEAD "metadata: {name: mesh, namespace: istio-system}\n"
            "spec: {mtls: {mode: STRICT}}\n"
            "---\n" PA_HEAD "metadata: {name: ns, namespace: shop}\n"
            "spec: {mtls: {mode: DISABLE}}\n"
            "---\n" PA_HEAD "metadata: {name: wl, namespace: shop}\n"
            "spec:\n"
            "  selector: {matchLabels: {app: web}}\n"
            "  mtls: {mode: PERMISSIVE}\n"
            "---\n" PA_HEAD "metadata: {name: other, namespace: shop}\n"
            "spec:\n"
            "  selector: {matchLabels: {app: db}}\n"
            "  mtls: {mode: STRICT}\n"
            "---\n" PA_HEAD "metadata: {name: elsewhere, namespace: other}\n"
            "spec: {mtls: {mode: STRICT}}\n";

static void mesh_namespace_workload(void **state)
{
    (void)state;
    wf_store *s;
    wf_peer_authn pa = compose(scopes, NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_PERMISSIVE); /* the workload's */
    assert_string_equal(pa.mesh->name, "mesh");
    assert_string_equal(pa.ns->name, "ns");
    assert_string_equal(pa.wl->name, "wl");
    /* applied: root namespace first, then the workload's, only matching ones */
    assert_int_equal(pa.napplied, 3);
    assert_string_equal(pa.applied[0]->name, "mesh");
    assert_string_equal(pa.applied[1]->name, "ns");
    assert_string_equal(pa.applied[2]->name, "wl");
    done(&pa, s);

    /* without the workload policy the namespace's wins; without that, the mesh's */
    const char *ns_only = strstr(scopes, PA_HEAD "metadata: {name: wl");
    char *cut = strndup(scopes, (size_t)(ns_only - scopes));
    assert_non_null(cut);
    pa = compose(cut, NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_DISABLE);
    done(&pa, s);
    *strstr(cut, "---\n" PA_HEAD "metadata: {name: ns") = '\0';
    pa = compose(cut, NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_STRICT);
    assert_null(pa.ns);
    done(&pa, s);
    free(cut);
}

static void oldest_wins(void **state)
{
    (void)state;
    wf_store *s;
    /* b is older by creationTimestamp (an offset time), though a loads first */
    wf_peer_authn pa =
        compose(PA_HEAD "metadata: {name: a, namespace: shop, creationTimestamp: "
                        "'2024-05-01T10:00:00Z'}\n"
                        "spec: {mtls: {mode: STRICT}}\n"
                        "---\n" PA_HEAD "metadata: {name: b, namespace: shop, creationTimestamp: "
                        "'2024-05-01T11:30:00+02:00'}\n"
                        "spec: {mtls: {mode: DISABLE}}\n",
                NULL, &s);
    assert_string_equal(pa.ns->name, "b");
    assert_int_equal(pa.mode, WF_MTLS_DISABLE);
    done(&pa, s);
    /* same time (or none): the name decides */
    pa = compose(PA_HEAD "metadata: {name: zz, namespace: shop}\n"
                         "spec: {selector: {matchLabels: {app: web}}, mtls: {mode: STRICT}}\n"
                         "---\n" PA_HEAD "metadata: {name: aa, namespace: shop}\n"
                         "spec: {selector: {matchLabels: {app: web}}, mtls: {mode: DISABLE}}\n",
                 NULL, &s);
    assert_string_equal(pa.wl->name, "aa");
    assert_int_equal(pa.mode, WF_MTLS_DISABLE);
    done(&pa, s);
    /* a policy with a timestamp is younger than one without (the zero time) */
    pa = compose(PA_HEAD "metadata: {name: a, namespace: shop, creationTimestamp: "
                         "'2020-01-01T00:00:00.5Z'}\n"
                         "spec: {mtls: {mode: STRICT}}\n"
                         "---\n" PA_HEAD "metadata: {name: b, namespace: shop}\n"
                         "spec: {mtls: {mode: DISABLE}}\n",
                 NULL, &s);
    assert_string_equal(pa.ns->name, "b");
    done(&pa, s);
}

static void unset_inherits(void **state)
{
    (void)state;
    wf_store *s;
    wf_peer_authn pa = compose(PA_HEAD "metadata: {name: mesh, namespace: istio-system}\n"
                                       "spec: {mtls: {mode: STRICT}}\n"
                                       "---\n" PA_HEAD "metadata: {name: ns, namespace: shop}\n"
                                       "spec: {mtls: {mode: UNSET}}\n"
                                       "---\n" PA_HEAD "metadata: {name: wl, namespace: shop}\n"
                                       "spec:\n"
                                       "  selector: {matchLabels: {app: web}}\n"
                                       "  portLevelMtls:\n"
                                       "    8080: {mode: DISABLE}\n"
                                       "    9090: {mode: UNSET}\n"
                                       "    9091: {}\n",
                               NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_STRICT); /* UNSET ns, no workload mode: the mesh's */
    assert_int_equal(pa.nports, 3);
    assert_int_equal(pa.ports[0].port, 8080);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 8080), WF_MTLS_DISABLE);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 9090), WF_MTLS_STRICT);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 9091), WF_MTLS_STRICT);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 80), WF_MTLS_STRICT); /* not named */
    done(&pa, s);
}

static void port_level_over_workload(void **state)
{
    (void)state;
    wf_store *s;
    wf_peer_authn pa = compose(PA_HEAD "metadata: {name: wl, namespace: shop}\n"
                                       "spec:\n"
                                       "  selector: {matchLabels: {app: web}}\n"
                                       "  mtls: {mode: DISABLE}\n"
                                       "  portLevelMtls: {8080: {mode: STRICT}, 8081: {}}\n"
                                       "---\n" PA_HEAD "metadata: {name: ns, namespace: shop}\n"
                                       "spec:\n"
                                       "  mtls: {mode: PERMISSIVE}\n"
                                       "  portLevelMtls: {9000: {mode: STRICT}}\n",
                               NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_DISABLE);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 8080), WF_MTLS_STRICT);
    assert_int_equal(wf_peer_authn_port_mode(&pa, 8081), WF_MTLS_DISABLE);
    /* a namespace policy's portLevelMtls does nothing */
    assert_int_equal(wf_peer_authn_port_mode(&pa, 9000), WF_MTLS_DISABLE);
    done(&pa, s);
}

static void root_namespace_selector_ignored(void **state)
{
    (void)state;
    wf_store *s;
    static const char *const yaml =
        PA_HEAD "metadata: {name: sel, namespace: istio-system}\n"
                "spec:\n"
                "  selector: {matchLabels: {app: web}}\n"
                "  mtls: {mode: STRICT}\n"
                "---\n" PA_HEAD "metadata: {name: m, namespace: mesh-root}\n"
                "spec: {mtls: {mode: DISABLE}}\n";
    wf_peer_authn pa = compose(yaml, NULL, &s);
    assert_int_equal(pa.mode, WF_MTLS_PERMISSIVE);
    assert_null(pa.wl);
    assert_int_equal(pa.napplied, 1); /* listed as applied (istioctl), no effect */
    done(&pa, s);
    /* rootNamespace mesh-root: its selector-less policy is the mesh's; istio-system is a
     * namespace like another (not the workload's: nothing from it) */
    pa = compose(yaml, "mesh-root", &s);
    assert_int_equal(pa.mode, WF_MTLS_DISABLE);
    assert_string_equal(pa.mesh->name, "m");
    done(&pa, s);
}

/* The book's PeerAuthentications (ch9): every one composes, and the namespace-wide STRICT
 * one applies to a workload of its namespace. */
static void corpus_policies(void **state)
{
    (void)state;
    static const char *const files[] = {
        "../shared/corpus/istioinaction/ch9/meshwide-strict-peer-authn.yaml",
        "../shared/corpus/istioinaction/ch9/workload-permissive-peer-authn.yaml", NULL};
    wf_store *s = wf_test_load_store(files, NULL, "istioinaction");
    assert_non_null(s);
    static const wf_kv kv[] = {{.key = "app", .value = "webapp"}};
    const wf_kvs labels = {.n = 1, .items = (wf_kv *)kv};
    wf_peer_authn pa;
    assert_int_equal(wf_peer_authn_compose(s, NULL, "istioinaction", &labels, &pa), 0);
    assert_non_null(pa.mesh);
    assert_non_null(pa.wl);
    assert_int_equal(pa.mode, WF_MTLS_PERMISSIVE); /* the workload's PERMISSIVE over STRICT */
    wf_peer_authn_free(&pa);
    assert_int_equal(wf_peer_authn_compose(s, NULL, "istioinaction", NULL, &pa), 0);
    assert_int_equal(pa.mode, WF_MTLS_STRICT); /* another workload: the mesh's STRICT */
    wf_peer_authn_free(&pa);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_is_permissive),
        cmocka_unit_test(mesh_namespace_workload),
        cmocka_unit_test(oldest_wins),
        cmocka_unit_test(unset_inherits),
        cmocka_unit_test(port_level_over_workload),
        cmocka_unit_test(root_namespace_selector_ignored),
        cmocka_unit_test(corpus_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
