/*
 * test_pilot_gen_cache.c - pilot/gen_cache (istiod's XdsCache): the cached text of every type is
 * byte-identical to wf_pilot_generate's for sidecars and routers; the key tells apart what the
 * outbound config depends on (namespace, the Sidecar that applies, labels read by
 * sourceLabels) and nothing else, so proxies in different namespaces or under different
 * Sidecars get different resources and same-key proxies share the very same cached text.
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
#include "pilot/gen_cache.h"
#include "pilot/generate.h"

static const char *const mesh_yaml =
    "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: a}\n"
    "spec:\n  selector: {app: web}\n  ports: [{name: http, port: 80, targetPort: 8080}]\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: b}\n"
    "spec:\n  selector: {app: api}\n  ports: [{name: http, port: 80, targetPort: 9080}]\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: b}\n"
    "spec:\n  selector: {app: db}\n  ports: [{name: http-db, port: 7000}]\n"
    "---\napiVersion: networking.istio.io/v1beta1\nkind: VirtualService\n"
    "metadata: {name: api, namespace: b}\nspec:\n  hosts: [api]\n  http:\n"
    "  - match: [{sourceLabels: {app: web}}]\n"
    "    route: [{destination: {host: api, subset: v2}}]\n"
    "  - route: [{destination: {host: api, subset: v1}}]\n"
    "---\napiVersion: networking.istio.io/v1beta1\nkind: DestinationRule\n"
    "metadata: {name: api, namespace: b}\nspec:\n  host: api\n"
    "  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]\n"
    "---\napiVersion: networking.istio.io/v1beta1\nkind: Sidecar\n"
    "metadata: {name: narrow, namespace: b}\nspec:\n  workloadSelector: {labels: {app: db}}\n"
    "  egress: [{hosts: [\"./*\"]}]\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: a, labels: {app: web, "
    "version: v1}}\nspec: {containers: [{name: w}]}\nstatus: {podIP: 10.0.0.1}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-2, namespace: a, labels: {app: web, "
    "version: v1}}\nspec: {containers: [{name: w}]}\nstatus: {podIP: 10.0.0.2}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: other-1, namespace: a, labels: {app: "
    "other}}\n"
    "spec: {containers: [{name: o}]}\nstatus: {podIP: 10.0.0.3}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: api-1, namespace: b, labels: {app: api, "
    "version: v1}}\nspec: {containers: [{name: a}]}\nstatus: {podIP: 10.0.1.1}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: api-2, namespace: b, labels: {app: api, "
    "version: v2}}\nspec: {containers: [{name: a}]}\nstatus: {podIP: 10.0.1.2}\n"
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: db-1, namespace: b, labels: {app: db}}\n"
    "spec: {containers: [{name: d}]}\nstatus: {podIP: 10.0.1.3}\n";

enum { WEB1, WEB2, OTHER1, API1, DB1, ROUTER, NPROXY };

typedef struct fixture {
    wf_store *s;
    wf_pilot_env env;
    wf_gen_cache *c;
    wf_pilot_proxy p[NPROXY];
} fixture;

static void proxy(fixture *f, int i, const char *id, const char *localhost, const char *type)
{
    json_t *md = json_object();
    if (i == WEB2) /* same cache key as web-1, but its HCMs accept HTTP/1.0 */
        json_object_set_new(md, "HTTP10", json_string("1"));
    if (localhost)
        json_object_set_new(md, "WEFT_LOCALHOST", json_string(localhost));
    if (type)
        json_object_set_new(md, "PROXY_TYPE", json_string(type));
    char *idc = strdup(id), err[256] = "";
    wf_xds_node node = {.id = idc, .metadata = md};
    assert_int_equal(wf_pilot_proxy_from_node(&node, f->s, &f->p[i], err, sizeof err), 0);
    free(idc);
    json_decref(md);
}

static void setup(fixture *f)
{
    *f = (fixture){.s = wf_test_load_store(NULL, mesh_yaml, "default")};
    assert_non_null(f->s);
    f->env = (wf_pilot_env){.store = f->s};
    f->c = wf_gen_cache_new(&f->env);
    assert_non_null(f->c);
    proxy(f, WEB1, "web-1.a", "127.11.0.1", NULL);
    proxy(f, WEB2, "web-2.a", "127.11.0.2", NULL);
    proxy(f, OTHER1, "other-1.a", NULL, NULL);
    proxy(f, API1, "api-1.b", "127.11.1.1", NULL);
    proxy(f, DB1, "db-1.b", "127.11.1.3", NULL);
    proxy(f, ROUTER, "web-1.a", NULL, "router");
}

static void teardown(fixture *f)
{
    for (int i = 0; i < NPROXY; i++)
        wf_pilot_proxy_free(&f->p[i]);
    wf_gen_cache_free(f->c);
    wf_store_free(f->s);
}

/* "[" shared "," own "]" of the cached text. */
static char *whole(const wf_gen_text *t)
{
    size_t n = t->shared_len + t->own_len + 4;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "[%s%s%s]", t->shared, t->shared_len && t->own_len ? "," : "",
             t->own ? t->own : "");
    return s;
}

static void same_as_generate(fixture *f, int i, wf_xds_type t, const wf_xds_names *names)
{
    json_t *want = wf_pilot_generate(&f->env, &f->p[i], t, names);
    assert_non_null(want);
    char *w = json_dumps(want, JSON_COMPACT);
    json_decref(want);
    wf_gen_text txt;
    assert_int_equal(wf_gen_cache_text(f->c, &f->p[i], t, names, &txt), 0);
    char *got = whole(&txt);
    if (strcmp(got, w) != 0)
        fail_msg("proxy %s type %d:\n got %s\nwant %s", f->p[i].id, (int)t, got, w);
    free(got);
    free(w);
    wf_gen_text_free(&txt);
}

/* The EDS names of the proxy's clusters, plus an unknown one. */
static wf_xds_names eds_names(fixture *f, int i)
{
    json_t *cds = wf_pilot_generate(&f->env, &f->p[i], WF_XDS_CDS, NULL);
    wf_xds_names n = {.v = calloc(json_array_size(cds) + 1, sizeof(char *))};
    size_t k;
    json_t *c;
    json_array_foreach(cds, k, c)
    {
        if (json_object_get(c, "eds_cluster_config"))
            n.v[n.n++] = strdup(json_string_value(json_object_get(c, "name")));
    }
    n.v[n.n++] = strdup("outbound|80||nowhere.example.com");
    json_decref(cds);
    return n;
}

static void identical_output(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    char *only80[] = {"80"};
    const wf_xds_names rds80 = {.v = only80, .n = 1};
    for (int pass = 0; pass < 2; pass++) { /* the second pass is served from the cache */
        for (int i = 0; i < NPROXY; i++) {
            same_as_generate(&f, i, WF_XDS_CDS, NULL);
            same_as_generate(&f, i, WF_XDS_LDS, NULL);
            same_as_generate(&f, i, WF_XDS_RDS, NULL);
            same_as_generate(&f, i, WF_XDS_RDS, &rds80);
            wf_xds_names n = eds_names(&f, i);
            same_as_generate(&f, i, WF_XDS_EDS, &n);
            wf_xds_names_free(&n);
        }
    }
    teardown(&f);
}

/* Istio's ISTIO_META_HTTP10 "1": every HCM of that proxy accepts HTTP/1.0, the others do
 * not, though both share the cache key (the listeners are the proxy's own part). */
static void http10_per_proxy(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    assert_true(f.p[WEB2].http10);
    assert_false(f.p[WEB1].http10);
    for (int i = WEB1; i <= WEB2; i++) {
        wf_gen_text t;
        assert_int_equal(wf_gen_cache_text(f.c, &f.p[i], WF_XDS_LDS, NULL, &t), 0);
        char *all = whole(&t);
        json_t *lds = json_loads(all, 0, NULL);
        assert_non_null(lds);
        size_t k, hcms = 0;
        json_t *l;
        json_array_foreach(lds, k, l)
        {
            json_t *h = json_object_get(
                json_object_get(
                    json_array_get(
                        json_object_get(json_array_get(json_object_get(l, "filter_chains"), 0),
                                        "filters"),
                        0),
                    "typed_config"),
                "http_protocol_options");
            assert_int_equal(h != NULL, i == WEB2);
            if (h)
                assert_true(json_is_true(json_object_get(h, "accept_http_10")));
            hcms++;
        }
        assert_true(hcms > 0);
        json_decref(lds);
        free(all);
        wf_gen_text_free(&t);
    }
    teardown(&f);
}

static void key_of(fixture *f, int i, char *buf)
{
    assert_int_equal(wf_gen_cache_key(f->c, &f->p[i], buf, 512), 0);
}

static const char *shared_of(fixture *f, int i, wf_xds_type t, uint64_t *hash)
{
    wf_gen_text txt;
    assert_int_equal(wf_gen_cache_text(f->c, &f->p[i], t, NULL, &txt), 0);
    *hash = txt.hash;
    wf_gen_text_free(&txt);
    return txt.shared;
}

static void key_is_complete(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    char k[NPROXY][512];
    for (int i = 0; i < NPROXY; i++)
        key_of(&f, i, k[i]);
    assert_string_equal(k[WEB1], k[WEB2]);       /* same namespace, labels, Sidecar */
    assert_string_not_equal(k[WEB1], k[OTHER1]); /* app read by sourceLabels differs */
    assert_string_not_equal(k[WEB1], k[API1]);   /* another namespace */
    assert_string_not_equal(k[API1], k[DB1]);    /* a Sidecar applies to db only */
    assert_string_equal(k[ROUTER], "");          /* routers are not cached */
    uint64_t h1, h2;
    /* same key: the very same cached text */
    assert_ptr_equal(shared_of(&f, WEB1, WF_XDS_RDS, &h1), shared_of(&f, WEB2, WF_XDS_RDS, &h2));
    assert_true(h1 == h2);
    assert_ptr_equal(shared_of(&f, WEB1, WF_XDS_CDS, &h1), shared_of(&f, WEB2, WF_XDS_CDS, &h2));
    /* different keys, different resources */
    assert_ptr_not_equal(shared_of(&f, WEB1, WF_XDS_RDS, &h1),
                         shared_of(&f, OTHER1, WF_XDS_RDS, &h2));
    assert_true(h1 != h2); /* web gets the v2 route of its sourceLabels match */
    assert_ptr_not_equal(shared_of(&f, API1, WF_XDS_CDS, &h1), shared_of(&f, DB1, WF_XDS_CDS, &h2));
    assert_true(h1 != h2); /* db's Sidecar hides namespace a */
    shared_of(&f, WEB1, WF_XDS_CDS, &h1);
    shared_of(&f, API1, WF_XDS_CDS, &h2);
    assert_true(h1 != h2); /* inbound clusters differ, outbound too (namespace) */
    teardown(&f);
}

/* The next snapshot's cache keeps only what the change cannot have touched. */
static void carry_over(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    uint64_t h;
    const char *cds = shared_of(&f, WEB1, WF_XDS_CDS, &h);
    const char *rds = shared_of(&f, WEB1, WF_XDS_RDS, &h);
    const char *vs[] = {"VirtualService/b/api"};
    wf_gen_cache *next = wf_gen_cache_carry(f.c, &f.env, vs, 1, false);
    assert_non_null(next);
    wf_gen_cache_free(f.c);
    f.c = next;
    assert_ptr_equal(shared_of(&f, WEB1, WF_XDS_CDS, &h), cds); /* kept */
    rds = shared_of(&f, WEB1, WF_XDS_RDS, &h);                  /* regenerated */
    same_as_generate(&f, WEB1, WF_XDS_RDS, NULL);
    const char *pod[] = {"Pod/b/api-1"};
    next = wf_gen_cache_carry(f.c, &f.env, pod, 1, false);
    wf_gen_cache_free(f.c);
    f.c = next;
    assert_ptr_equal(shared_of(&f, WEB1, WF_XDS_RDS, &h), rds);
    const char *svc[] = {"Service/a/web"};
    next = wf_gen_cache_carry(f.c, &f.env, svc, 1, false);
    wf_gen_cache_free(f.c);
    f.c = next;
    assert_int_equal(wf_gen_cache_keys(f.c), 0); /* everything dropped */
    same_as_generate(&f, WEB1, WF_XDS_CDS, NULL);
    next = wf_gen_cache_carry(f.c, &f.env, NULL, 0, true); /* another MeshConfig */
    wf_gen_cache_free(f.c);
    f.c = next;
    assert_int_equal(wf_gen_cache_keys(f.c), 0);
    teardown(&f);
}

/* A Pod change that brings a service account no workload had drops the clusters too: they
 * carry the accounts as SAN matchers (serviceentry.h wf_svc_identities_added). */
static void new_identity_drops_clusters(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    uint64_t h;
    char *cds = strdup(shared_of(&f, WEB1, WF_XDS_CDS, &h)); /* its text: the memory goes */
    assert_non_null(cds);
    assert_null(strstr(cds, "spiffe://cluster.local/ns/b/sa/api-v3"));
    static char yaml[8192];
    snprintf(yaml, sizeof yaml,
             "%s---\napiVersion: v1\nkind: Pod\nmetadata: {name: api-3, namespace: b, labels: "
             "{app: api, version: v1}}\nspec: {serviceAccountName: api-v3, containers: [{name: "
             "a}]}\nstatus: {podIP: 10.0.1.4}\n",
             mesh_yaml);
    wf_store *s2 = wf_test_load_store(NULL, yaml, "default");
    wf_pilot_env env2 = {.store = s2};
    const char *pod[] = {"Pod/b/api-3"};
    wf_gen_cache *next = wf_gen_cache_carry(f.c, &env2, pod, 1, false);
    assert_non_null(next);
    wf_gen_cache_free(f.c);
    f.c = next;
    const char *again = shared_of(&f, WEB1, WF_XDS_CDS, &h); /* regenerated */
    assert_non_null(strstr(again, "spiffe://cluster.local/ns/b/sa/api-v3"));
    free(cds);
    /* the same store again: nothing new, the clusters stay */
    next = wf_gen_cache_carry(f.c, &env2, pod, 1, false);
    wf_gen_cache_free(f.c);
    f.c = next;
    assert_ptr_equal(shared_of(&f, WEB1, WF_XDS_CDS, &h), again);
    teardown(&f);
    wf_store_free(s2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_output),
        cmocka_unit_test(http10_per_proxy),
        cmocka_unit_test(key_is_complete),
        cmocka_unit_test(carry_over),
        cmocka_unit_test(new_identity_drops_clusters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
