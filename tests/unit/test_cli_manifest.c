/*
 * test_cli_manifest.c - `weftctl manifest generate`'s documents (cli/manifest.h): every one
 * written as YAML parses back to itself; istiod's RBAC, read from the generated ClusterRole and
 * Role, covers every kind weft-pilot watches (kube/kinds.h) and what it writes, and nothing
 * more; the CRDs match kinds.h's stored versions; revision and namespace naming as Istio's;
 * --set and values-file errors name the key.
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

#include "cli/cmd_pc.h"
#include "cli/manifest.h"
#include "kube/kinds.h"
#include "model/node_json.h"
#include "model/parse.h"

static json_t *gen(const char *const *sets)
{
    wf_manifest_opts o;
    assert_int_equal(wf_manifest_opts_init(&o), 0);
    for (size_t i = 0; sets && sets[i]; i += 2) {
        wf_strbuf why = WF_STRBUF_INIT;
        assert_int_equal(wf_manifest_set(&o, sets[i], sets[i + 1], &why), 0);
        wf_strbuf_free(&why);
    }
    json_t *docs = wf_manifest_generate(&o);
    wf_manifest_opts_free(&o);
    assert_non_null(docs);
    return docs;
}

/* The document of this kind and name, NULL when none. */
static json_t *find(json_t *docs, const char *kind, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        const char *k = json_string_value(json_object_get(d, "kind"));
        const char *n = json_string_value(json_object_get(json_object_get(d, "metadata"), "name"));
        if (k && n && !strcmp(k, kind) && !strcmp(n, name))
            return d;
    }
    return NULL;
}

static size_t count_kind(json_t *docs, const char *kind)
{
    size_t i, n = 0;
    json_t *d;
    json_array_foreach(docs, i, d) n +=
        !strcmp(json_string_value(json_object_get(d, "kind")), kind);
    return n;
}

typedef struct parsed {
    json_t *docs;
} parsed;

static int on_doc(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    parsed *p = arg;
    return json_array_append_new(p->docs, wf_node_to_json(root));
}

static void every_document_parses_back(void **state)
{
    const char *const sets[][5] = {{NULL}, {"revision", "canary", NULL}};
    for (size_t s = 0; s < 2; s++) {
        json_t *docs = gen(sets[s]);
        wf_strbuf y = WF_STRBUF_INIT;
        size_t i;
        json_t *d;
        json_array_foreach(docs, i, d)
        {
            if (i)
                wf_strbuf_puts(&y, "---\n");
            pc_yaml_write(&y, d);
            assert_non_null(json_object_get(d, "apiVersion"));
            assert_non_null(json_object_get(json_object_get(d, "metadata"), "name"));
        }
        assert_false(wf_strbuf_failed(&y));
        wf_arena a;
        wf_arena_init(&a);
        parsed p = {json_array()};
        wf_parse_error err = {0};
        const char *text = wf_strbuf_cstr(&y);
        assert_int_equal(wf_parse_yaml(&a, text, strlen(text), on_doc, &p, &err), 0);
        assert_int_equal(json_array_size(p.docs), json_array_size(docs));
        json_array_foreach(docs, i, d)
        {
            if (!json_equal(d, json_array_get(p.docs, i))) {
                char *want = json_dumps(d, JSON_SORT_KEYS);
                char *got = json_dumps(json_array_get(p.docs, i), JSON_SORT_KEYS);
                fail_msg("document %zu differs after YAML:\n%s\n%s", i, want, got);
            }
        }
        json_decref(p.docs);
        wf_arena_destroy(&a);
        wf_strbuf_free(&y);
        json_decref(docs);
    }
}

/* Whether a generated Role/ClusterRole grants verb on group/resource. */
static bool grants(const json_t *role, const char *group, const char *resource, const char *verb)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(role, "rules"), i, r)
    {
        bool g = false, res = false, v = false;
        size_t j;
        const json_t *x;
        json_array_foreach(json_object_get(r, "apiGroups"), j, x) g |=
            !strcmp(json_string_value(x), group);
        json_array_foreach(json_object_get(r, "resources"), j, x) res |=
            !strcmp(json_string_value(x), resource);
        json_array_foreach(json_object_get(r, "verbs"), j, x) v |=
            !strcmp(json_string_value(x), verb);
        if (g && res && v)
            return true;
    }
    return false;
}

static void rbac_covers_what_pilot_watches_and_writes(void **state)
{
    json_t *docs = gen(NULL);
    json_t *cr = find(docs, "ClusterRole", "istiod-clusterrole-istio-system");
    json_t *role = find(docs, "Role", "istiod");
    assert_non_null(cr);
    assert_non_null(role);
    size_t nk;
    const wf_kube_kind *k = wf_kube_kinds(&nk);
    for (size_t i = 0; i < nk; i++) {
        /* ConfigMaps: pilot watches the istio ConfigMap of its namespace (source_kube.c) */
        const json_t *where = strcmp(k[i].kind, "ConfigMap") ? cr : role;
        for (const char *const *v = (const char *const[]){"get", "list", "watch", NULL}; *v; v++)
            if (!grants(where, k[i].group, k[i].resource, *v))
                fail_msg("%s: no %s on %s", k[i].kind, *v, k[i].resource);
        if (strstr(k[i].group, "istio.io")) {
            char st[128];
            snprintf(st, sizeof st, "%s/status", k[i].resource);
            assert_true(grants(cr, k[i].group, st, "update"));
        }
    }
    assert_true(grants(cr, "", "configmaps", "create")); /* istio-ca-root-cert */
    assert_true(grants(cr, "", "configmaps", "update"));
    assert_false(grants(cr, "", "configmaps", "list")); /* only in its namespace */
    assert_true(grants(role, "", "configmaps", "list"));
    assert_true(
        grants(cr, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"));
    assert_true(
        grants(cr, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch"));
    assert_true(grants(cr, "authentication.k8s.io", "tokenreviews", "create"));
    /* nothing beyond: no delete, no wildcard, no Secret writes */
    for (const char *const *v = (const char *const[]){"delete", "deletecollection", "*", NULL}; *v;
         v++) {
        assert_false(grants(cr, "", "secrets", *v));
        assert_false(grants(cr, "", "configmaps", *v));
    }
    assert_false(grants(cr, "", "secrets", "create"));
    assert_false(grants(cr, "", "pods", "update"));
    /* the table says the same (wf_manifest_rbac_allows) */
    size_t n;
    wf_rbac_rule *t = wf_manifest_rbac(&n);
    assert_non_null(t);
    for (size_t i = 0; i < nk; i++)
        assert_true(wf_manifest_rbac_allows(
            t, n, strcmp(k[i].kind, "ConfigMap") ? WF_RBAC_CLUSTER : WF_RBAC_ISTIO_NS, k[i].group,
            k[i].resource, "watch"));
    assert_true(wf_manifest_rbac_allows(t, n, WF_RBAC_CLUSTER, "networking.istio.io",
                                        "virtualservices/status", "update"));
    assert_false(wf_manifest_rbac_allows(t, n, WF_RBAC_CLUSTER, "", "configmaps", "watch"));
    free(t);
    /* bound to istiod's service account */
    json_t *crb = find(docs, "ClusterRoleBinding", "istiod-clusterrole-istio-system");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(crb, "subjects"), 0), "name")),
                        "istiod");
    json_decref(docs);
}

static void crds_are_the_istio_kinds_weft_reads(void **state)
{
    json_t *docs = gen(NULL);
    size_t nk, want = 0;
    const wf_kube_kind *k = wf_kube_kinds(&nk);
    for (size_t i = 0; i < nk; i++) {
        if (!strstr(k[i].group, "istio.io"))
            continue;
        want++;
        char name[160];
        snprintf(name, sizeof name, "%s.%s", k[i].resource, k[i].group);
        json_t *c = find(docs, "CustomResourceDefinition", name);
        if (!c)
            fail_msg("no CRD %s", name);
        json_t *spec = json_object_get(c, "spec"), *v;
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(spec, "names"), "kind")), k[i].kind);
        size_t j, storage = 0;
        json_array_foreach(json_object_get(spec, "versions"), j, v)
        {
            if (json_is_true(json_object_get(v, "storage"))) {
                storage++;
                assert_string_equal(json_string_value(json_object_get(v, "name")), k[i].version);
            }
            assert_non_null(json_object_get(json_object_get(v, "subresources"), "status"));
        }
        assert_int_equal(storage, 1);
    }
    assert_int_equal(count_kind(docs, "CustomResourceDefinition"), want);
    json_t *vs = find(docs, "CustomResourceDefinition", "virtualservices.networking.istio.io");
    assert_int_equal(json_array_size(json_object_get(json_object_get(vs, "spec"), "versions")), 3);
    json_decref(docs);
}

static const char *webhook_name(json_t *cfg, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(cfg, "webhooks"), i), "name"));
}

static void default_and_revision_naming(void **state)
{
    json_t *docs = gen(NULL);
    json_t *mwc = find(docs, "MutatingWebhookConfiguration", "istio-sidecar-injector");
    assert_non_null(mwc);
    assert_int_equal(json_array_size(json_object_get(mwc, "webhooks")), 4);
    assert_string_equal(webhook_name(mwc, 0), "rev.namespace.sidecar-injector.istio.io");
    assert_string_equal(webhook_name(mwc, 3), "object.sidecar-injector.istio.io");
    json_t *vwc = find(docs, "ValidatingWebhookConfiguration", "istio-validator-istio-system");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(vwc, "webhooks"), 0), "failurePolicy")),
                        "Ignore");
    /* the default revision also validates objects without istio.io/rev */
    json_t *dv = find(docs, "ValidatingWebhookConfiguration", "istiod-default-validator");
    assert_non_null(dv);
    json_t *dw = json_array_get(json_object_get(dv, "webhooks"), 0);
    assert_string_equal(json_string_value(json_object_get(dw, "name")), "validation.istio.io");
    assert_null(json_object_get(dw, "objectSelector"));
    assert_non_null(find(docs, "Deployment", "istiod"));
    assert_non_null(find(docs, "Deployment", "istio-ingressgateway"));
    json_t *svc = find(docs, "Service", "istiod");
    json_t *p443 = json_array_get(json_object_get(json_object_get(svc, "spec"), "ports"), 2);
    assert_int_equal(json_integer_value(json_object_get(p443, "port")), 443);
    assert_int_equal(json_integer_value(json_object_get(p443, "targetPort")), 15017);
    json_decref(docs);

    const char *const rev[] = {"revision", "canary", "namespace", "mesh", NULL};
    docs = gen(rev);
    assert_non_null(find(docs, "Namespace", "mesh"));
    assert_non_null(find(docs, "Deployment", "istiod-canary"));
    assert_non_null(find(docs, "Service", "istiod-canary"));
    assert_non_null(find(docs, "ServiceAccount", "istiod-canary"));
    assert_non_null(find(docs, "ConfigMap", "istio-canary"));
    assert_non_null(find(docs, "ConfigMap", "istio-sidecar-injector-canary"));
    assert_non_null(find(docs, "ClusterRole", "istiod-clusterrole-canary-mesh"));
    assert_non_null(find(docs, "ValidatingWebhookConfiguration", "istio-validator-canary-mesh"));
    assert_null(find(docs, "Deployment", "istiod"));
    assert_null(find(docs, "ValidatingWebhookConfiguration", "istiod-default-validator"));
    /* not in istio-system: the namespace is appended */
    mwc = find(docs, "MutatingWebhookConfiguration", "istio-sidecar-injector-canary-mesh");
    assert_non_null(mwc);
    assert_int_equal(json_array_size(json_object_get(mwc, "webhooks")), 2);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(mwc, "metadata"), "labels"), "istio.io/rev")),
        "canary");
    json_t *dep = find(docs, "Deployment", "istiod-canary");
    json_t *ml =
        json_object_get(json_object_get(json_object_get(dep, "spec"), "selector"), "matchLabels");
    assert_string_equal(json_string_value(json_object_get(ml, "istio.io/rev")), "canary");
    /* the gateway reaches that istiod: its PROXY_CONFIG discoveryAddress */
    json_t *gw = find(docs, "Deployment", "istio-ingressgateway");
    json_t *c0 = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(gw, "spec"), "template"), "spec"),
            "containers"),
        0);
    const char *pc = NULL;
    size_t e;
    json_t *ev;
    json_array_foreach(json_object_get(c0, "env"), e, ev)
    {
        if (!strcmp(json_string_value(json_object_get(ev, "name")), "PROXY_CONFIG"))
            pc = json_string_value(json_object_get(ev, "value"));
    }
    assert_non_null(pc);
    assert_string_equal(pc, "{\"discoveryAddress\":\"istiod-canary.mesh.svc:15012\"}");
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        const char *ns =
            json_string_value(json_object_get(json_object_get(d, "metadata"), "namespace"));
        assert_true(!ns || !strcmp(ns, "mesh"));
    }
    json_decref(docs);

    const char *const noingress[] = {"components.ingressGateways[0].enabled", "false", NULL};
    docs = gen(noingress);
    assert_null(find(docs, "Deployment", "istio-ingressgateway"));
    size_t nk, istio = 0;
    const wf_kube_kind *k = wf_kube_kinds(&nk);
    for (size_t j = 0; j < nk; j++)
        istio += strstr(k[j].group, "istio.io") != NULL;
    assert_int_equal(count_kind(docs, "CustomResourceDefinition"), istio);
    json_decref(docs);
    const char *const nobase[] = {"components.base.enabled", "false", NULL};
    docs = gen(nobase);
    assert_int_equal(count_kind(docs, "CustomResourceDefinition"), 0);
    assert_non_null(find(docs, "Namespace", "istio-system"));
    json_decref(docs);
}

static void set_errors_name_the_key(void **state)
{
    static const struct {
        const char *key, *value, *want;
    } cases[] = {
        {"values.global.bogus", "1", "unknown key \"values.global.bogus\""},
        {"hubb", "x", "unknown key \"hubb\""},
        {"revision", "Bad_Rev", "for revision"},
        {"revision", "default", "for revision"},
        {"namespace", "", "for namespace"},
        {"meshConfig.outboundTrafficPolicy.mode", "OPEN", "ALLOW_ANY or REGISTRY_ONLY"},
        {"components.ingressGateways[0].enabled", "maybe", "true or false"},
        {"tag", "a b", "for tag"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wf_manifest_opts o;
        assert_int_equal(wf_manifest_opts_init(&o), 0);
        wf_strbuf why = WF_STRBUF_INIT;
        assert_int_equal(wf_manifest_set(&o, cases[i].key, cases[i].value, &why), -1);
        if (!strstr(wf_strbuf_cstr(&why), cases[i].want))
            fail_msg("%s=%s: %s", cases[i].key, cases[i].value, wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        wf_manifest_opts_free(&o);
    }
    wf_manifest_opts o;
    assert_int_equal(wf_manifest_opts_init(&o), 0);
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_manifest_set(&o, "spec.meshConfig.trustDomain", "example.org", &why), 0);
    assert_string_equal(o.trust_domain, "example.org");
    assert_int_equal(wf_manifest_set(&o, "values.global.istioNamespace", "ns2", &why), 0);
    assert_string_equal(o.ns, "ns2");
    wf_strbuf_free(&why);
    wf_manifest_opts_free(&o);
}

static void values_file(void **state)
{
    char path[] = "/tmp/weft-manifest-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "apiVersion: install.istio.io/v1alpha1\n"
                       "kind: IstioOperator\n"
                       "spec:\n"
                       "  hub: registry.example/weft\n"
                       "  meshConfig:\n"
                       "    trustDomain: td.example\n"
                       "  components:\n"
                       "    ingressGateways:\n"
                       "    - name: istio-ingressgateway\n"
                       "      enabled: false\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    wf_manifest_opts o;
    assert_int_equal(wf_manifest_opts_init(&o), 0);
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_manifest_values(&o, path, &why), 0);
    assert_string_equal(o.hub, "registry.example/weft");
    assert_string_equal(o.trust_domain, "td.example");
    assert_false(o.ingress);
    wf_manifest_opts_free(&o);

    FILE *f = fopen(path, "w");
    fputs("kind: IstioOperator\nspec:\n  meshConfig:\n    trustDomain: x\n    bogus: 1\n", f);
    fclose(f);
    assert_int_equal(wf_manifest_opts_init(&o), 0);
    assert_int_equal(wf_manifest_values(&o, path, &why), -1);
    char want[128];
    snprintf(want, sizeof want, "%s:5: spec.meshConfig.bogus: unknown key", path);
    if (!strstr(wf_strbuf_cstr(&why), want))
        fail_msg("%s", wf_strbuf_cstr(&why));
    wf_manifest_opts_free(&o);
    wf_strbuf_free(&why);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_document_parses_back),
        cmocka_unit_test(rbac_covers_what_pilot_watches_and_writes),
        cmocka_unit_test(crds_are_the_istio_kinds_weft_reads),
        cmocka_unit_test(default_and_revision_naming),
        cmocka_unit_test(set_errors_name_the_key),
        cmocka_unit_test(values_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
