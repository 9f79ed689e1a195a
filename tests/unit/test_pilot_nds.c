/*
 * test_pilot_nds.c - pilot/nds: Istio's NameTable for a sidecar with DNS capture (Services
 * with clusterIPs, headless Services with their Pods, ServiceEntries with addresses, with
 * auto-allocated ones under DNS_AUTO_ALLOCATE, NONE with endpoints, wildcard and CIDR
 * addresses left out, exportTo), what the generator sends without DNS_CAPTURE or to a router,
 * and the auto-allocation (Istio's FNV-32a slot in 240.240.0.0/16, stable, collision-free).
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
#include "pilot/generate.h"
#include "pilot/nds.h"

static const char YAML[] = "apiVersion: v1\n"
                           "kind: Service\n"
                           "metadata: {name: catalog, namespace: istioinaction}\n"
                           "spec:\n"
                           "  clusterIP: 10.96.0.20\n"
                           "  selector: {app: catalog}\n"
                           "  ports: [{name: http, port: 80, targetPort: 3000}]\n"
                           "---\n"
                           "apiVersion: v1\n"
                           "kind: Service\n"
                           "metadata:\n"
                           "  name: hidden\n"
                           "  namespace: other\n"
                           "  annotations: {networking.istio.io/exportTo: \".\"}\n"
                           "spec:\n"
                           "  clusterIP: 10.96.0.30\n"
                           "  ports: [{name: http, port: 80}]\n"
                           "---\n"
                           "apiVersion: v1\n"
                           "kind: Service\n"
                           "metadata: {name: db, namespace: istioinaction}\n"
                           "spec:\n"
                           "  clusterIP: None\n"
                           "  selector: {app: db}\n"
                           "  ports: [{name: tcp, port: 5432}]\n"
                           "---\n"
                           "apiVersion: v1\n"
                           "kind: Pod\n"
                           "metadata: {name: db-0, namespace: istioinaction, labels: {app: db}}\n"
                           "spec: {containers: [{name: db}]}\n"
                           "status: {phase: Running, podIP: 10.10.0.7}\n"
                           "---\n"
                           "apiVersion: networking.istio.io/v1\n"
                           "kind: ServiceEntry\n"
                           "metadata: {name: ext, namespace: istioinaction}\n"
                           "spec:\n"
                           "  hosts: [api.example.test]\n"
                           "  addresses: [192.0.2.10, 198.51.100.0/24]\n"
                           "  location: MESH_EXTERNAL\n"
                           "  resolution: STATIC\n"
                           "  ports: [{number: 80, name: http, protocol: HTTP}]\n"
                           "  endpoints: [{address: 192.0.2.10}]\n"
                           "---\n"
                           "apiVersion: networking.istio.io/v1\n"
                           "kind: ServiceEntry\n"
                           "metadata: {name: auto, namespace: istioinaction}\n"
                           "spec:\n"
                           "  hosts: [db.internal.test, '*.wild.test']\n"
                           "  location: MESH_EXTERNAL\n"
                           "  resolution: DNS\n"
                           "  ports: [{number: 5432, name: tcp, protocol: TCP}]\n"
                           "---\n"
                           "apiVersion: networking.istio.io/v1\n"
                           "kind: ServiceEntry\n"
                           "metadata: {name: none, namespace: istioinaction}\n"
                           "spec:\n"
                           "  hosts: [legacy.test]\n"
                           "  location: MESH_INTERNAL\n"
                           "  resolution: NONE\n"
                           "  ports: [{number: 8080, name: http, protocol: HTTP}]\n"
                           "  endpoints: [{address: 10.20.0.5}]\n";

/* Istio's autoAllocateIPs for one service alone: slot = fnv32a(key) % 65025, x = slot + 1. */
static void expected_alloc(const char *key, char *v4, size_t cap)
{
    uint32_t h = 2166136261u;
    for (const char *p = key; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 16777619u;
    }
    int x = (int)(h % 65025u) + 1;
    if (x % 255 == 0)
        x++;
    snprintf(v4, cap, "240.240.%d.%d", x / 255, x % 255);
}

static wf_store *store(void)
{
    wf_store *s = wf_test_load_store(NULL, YAML, "default");
    assert_non_null(s);
    return s;
}

static wf_pilot_proxy sidecar(bool capture, bool alloc)
{
    wf_pilot_proxy p = {.id = "sleep-1.istioinaction",
                        .pod = "sleep-1",
                        .ns = "istioinaction",
                        .kind = WF_PROXY_SIDECAR,
                        .ip = "10.10.0.9",
                        .dns_capture = capture,
                        .dns_auto_allocate = alloc};
    return p;
}

static const char *ip0(json_t *table, const char *host)
{
    json_t *ips = json_object_get(json_object_get(table, host), "ips");
    return json_string_value(json_array_get(ips, 0));
}

static void test_name_table(void **state)
{
    (void)state;
    wf_store *s = store();
    wf_pilot_proxy p = sidecar(true, false);
    json_t *nt = wf_nds_name_table(s, &p, NULL);
    assert_non_null(nt);
    wf_test_expect_str(nt, "@type", "type.googleapis.com/istio.networking.nds.v1.NameTable");
    json_t *t = json_object_get(nt, "table");
    json_t *cat = json_object_get(t, "catalog.istioinaction.svc.cluster.local");
    assert_non_null(cat);
    wf_test_expect_str(cat, "ips.0", "10.96.0.20");
    assert_int_equal(json_array_size(json_object_get(cat, "ips")), 1);
    wf_test_expect_str(cat, "registry", "Kubernetes");
    wf_test_expect_str(cat, "shortname", "catalog");
    wf_test_expect_str(cat, "namespace", "istioinaction");
    /* headless: the Pods' addresses */
    assert_string_equal(ip0(t, "db.istioinaction.svc.cluster.local"), "10.10.0.7");
    /* SE with addresses: plain IPs only (the CIDR is skipped), External, no short name */
    json_t *ext = json_object_get(t, "api.example.test");
    assert_non_null(ext);
    assert_int_equal(json_array_size(json_object_get(ext, "ips")), 1);
    wf_test_expect_str(ext, "ips.0", "192.0.2.10");
    wf_test_expect_str(ext, "registry", "External");
    assert_null(json_object_get(ext, "shortname"));
    /* NONE with endpoints: the endpoints */
    assert_string_equal(ip0(t, "legacy.test"), "10.20.0.5");
    /* no address and no auto-allocation asked: left out; wildcard too */
    assert_null(json_object_get(t, "db.internal.test"));
    assert_null(json_object_get(t, "*.wild.test"));
    /* exportTo "." in another namespace */
    assert_null(json_object_get(t, "hidden.other.svc.cluster.local"));
    json_decref(nt);
    wf_store_free(s);
}

static void test_auto_allocate(void **state)
{
    (void)state;
    wf_store *s = store();
    wf_pilot_proxy p = sidecar(true, true);
    json_t *nt = wf_nds_name_table(s, &p, NULL);
    char want[32];
    expected_alloc("istioinaction/db.internal.test", want, sizeof want);
    json_t *t = json_object_get(nt, "table");
    assert_string_equal(ip0(t, "db.internal.test"), want);
    json_t *e = json_object_get(t, "db.internal.test");
    assert_int_equal(json_array_size(json_object_get(e, "ips")), 1); /* IPv4 proxy: no v6 */
    wf_test_expect_str(e, "registry", "External");
    /* still not for a wildcard, nor for hosts with addresses or resolution NONE */
    assert_null(json_object_get(t, "*.wild.test"));
    assert_string_equal(ip0(t, "api.example.test"), "192.0.2.10");
    json_t *alloc = wf_nds_auto_allocate(s);
    assert_int_equal(json_object_size(alloc), 1);
    json_t *a = json_object_get(alloc, "istioinaction/db.internal.test");
    wf_test_expect_str(a, "ipv4", want);
    assert_true(strncmp(json_string_value(json_object_get(a, "ipv6")), "2001:2::f0f0:", 13) == 0);
    /* an IPv6 proxy gets both */
    p.ip = "fd00::9";
    json_t *nt6 = wf_nds_name_table(s, &p, NULL);
    e = json_object_get(json_object_get(nt6, "table"), "db.internal.test");
    assert_int_equal(json_array_size(json_object_get(e, "ips")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(e, "ips"), 1)),
                        json_string_value(json_object_get(a, "ipv6")));
    json_decref(nt6);
    json_decref(alloc);
    json_decref(nt);
    wf_store_free(s);
}

/* Stable across runs (a new store from the same files) and distinct for many hosts. */
static void test_allocation_stable_and_distinct(void **state)
{
    (void)state;
    char *yaml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&yaml, &len);
    assert_non_null(f);
    for (int i = 0; i < 300; i++)
        fprintf(f,
                "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\n"
                "metadata: {name: se%d, namespace: ns%d}\n"
                "spec:\n  hosts: [h%d.example.test]\n  resolution: DNS\n"
                "  ports: [{number: 80, name: http, protocol: HTTP}]\n---\n",
                i, i % 7, i);
    fclose(f);
    wf_store *a = wf_test_load_store(NULL, yaml, "default");
    wf_store *b = wf_test_load_store(NULL, yaml, "default");
    json_t *ja = wf_nds_auto_allocate(a), *jb = wf_nds_auto_allocate(b);
    assert_int_equal(json_object_size(ja), 300);
    assert_true(json_equal(ja, jb));
    json_t *seen = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(ja, k, v)
    {
        const char *ip = json_string_value(json_object_get(v, "ipv4"));
        assert_null(json_object_get(seen, ip));
        json_object_set_new(seen, ip, json_true());
        int c, d;
        assert_int_equal(sscanf(ip, "240.240.%d.%d", &c, &d), 2);
        assert_true(d != 0 && d != 255);
    }
    json_decref(seen);
    json_decref(ja);
    json_decref(jb);
    wf_store_free(a);
    wf_store_free(b);
    free(yaml);
}

/* The generator: [NameTable] with DNS_CAPTURE, [] without, [] for a router. */
static void test_generate(void **state)
{
    (void)state;
    wf_store *s = store();
    wf_pilot_env env = {.store = s};
    wf_pilot_proxy p = sidecar(true, false);
    json_t *out = wf_pilot_generate(&env, &p, WF_XDS_NDS, NULL);
    assert_int_equal(json_array_size(out), 1);
    wf_test_expect_str(out, "0.@type", WF_XDS_TYPE_NAME_TABLE);
    json_decref(out);
    p.dns_capture = false;
    out = wf_pilot_generate(&env, &p, WF_XDS_NDS, NULL);
    assert_int_equal(json_array_size(out), 0);
    json_decref(out);
    p.dns_capture = true;
    p.kind = WF_PROXY_ROUTER;
    out = wf_pilot_generate(&env, &p, WF_XDS_NDS, NULL);
    assert_int_equal(json_array_size(out), 0);
    json_decref(out);
    assert_string_equal(wf_xds_type_short(WF_XDS_NDS), "NDS");
    assert_int_equal(wf_xds_type_from_url(WF_XDS_TYPE_NAME_TABLE), WF_XDS_NDS);
    wf_store_free(s);
}

/* Node metadata: Istio's DNS_CAPTURE / DNS_AUTO_ALLOCATE strings. */
static void test_proxy_metadata(void **state)
{
    (void)state;
    json_t *md = json_pack("{s:s, s:s, s:s}", "NAMESPACE", "istioinaction", "DNS_CAPTURE", "true",
                           "DNS_AUTO_ALLOCATE", "True");
    wf_xds_node node = {.id = "sleep-1.istioinaction", .metadata = md};
    wf_pilot_proxy p;
    char err[256];
    assert_int_equal(wf_pilot_proxy_from_node(&node, NULL, &p, err, sizeof err), 0);
    assert_true(p.dns_capture);
    assert_true(p.dns_auto_allocate);
    wf_pilot_proxy_free(&p);
    json_object_set_new(md, "DNS_CAPTURE", json_string("false"));
    assert_int_equal(wf_pilot_proxy_from_node(&node, NULL, &p, err, sizeof err), 0);
    assert_false(p.dns_capture);
    wf_pilot_proxy_free(&p);
    json_object_set_new(md, "DNS_CAPTURE", json_true());
    assert_int_equal(wf_pilot_proxy_from_node(&node, NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "DNS_CAPTURE"));
    json_decref(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_table),
        cmocka_unit_test(test_auto_allocate),
        cmocka_unit_test(test_allocation_stable_and_distinct),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_proxy_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
