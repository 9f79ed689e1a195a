/*
 * test_cluster_ip.c - model/cluster_ip.h: Service IPs as the API server hands them out, stable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "model/cluster_ip.h"

static const char *svc_ip(const wf_store *s, const char *ns, const char *name)
{
    const wf_resource *r = wf_store_find(s, WF_KIND_SERVICE, ns, name);
    assert_non_null(r);
    return r->t.service->cluster_ip;
}

static const char *const SVCS =
    "apiVersion: v1\nkind: Service\nmetadata: {name: catalog, namespace: shop}\n"
    "spec: {ports: [{port: 80}]}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
    "spec: {ports: [{port: 80}]}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: fixed, namespace: shop}\n"
    "spec: {clusterIP: 10.96.0.10, ports: [{port: 80}]}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: headless, namespace: shop}\n"
    "spec: {clusterIP: None, ports: [{port: 80}]}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: shop}\n"
    "spec: {type: ExternalName, externalName: example.com}\n";

static void parse_ranges(void **state)
{
    (void)state;
    wf_ip_range r;
    const char *why;
    assert_int_equal(wf_ip_range_parse("10.96.0.0/12", &r, &why), 0);
    assert_int_equal(r.base, 0x0a600000u);
    assert_int_equal(r.prefix_len, 12);
    assert_int_equal(wf_ip_range_parse("10.96.0.1/12", &r, &why), -1);
    assert_non_null(strstr(why, "host bits"));
    assert_int_equal(wf_ip_range_parse("10.96.0.0/31", &r, &why), -1);
    assert_non_null(strstr(why, "8..30"));
    assert_int_equal(wf_ip_range_parse("10.96.0.0", &r, &why), -1);
    assert_int_equal(wf_ip_range_parse("fd00::/108", &r, &why), -1);
    assert_int_equal(wf_ip_range_parse("10.96.0.0/x", &r, &why), -1);
}

static void allocates_stably(void **state)
{
    (void)state;
    wf_ip_range r;
    const char *why;
    assert_int_equal(wf_ip_range_parse("10.96.0.0/12", &r, &why), 0);
    wf_store *s = wf_test_load_store(NULL, SVCS, NULL);
    assert_int_equal(wf_store_allocate_cluster_ips(s, &r), 2); /* catalog and web */
    const char *a = svc_ip(s, "shop", "catalog"), *b = svc_ip(s, "shop", "web");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_not_equal(a, b);
    assert_true(strncmp(a, "10.", 3) == 0);
    /* in range, never the network address or the kubernetes Service's first one */
    unsigned o[4];
    assert_int_equal(sscanf(a, "%u.%u.%u.%u", &o[0], &o[1], &o[2], &o[3]), 4);
    uint32_t h = o[0] << 24 | o[1] << 16 | o[2] << 8 | o[3];
    assert_true(h > 0x0a600001u && h < 0x0a6fffffu);
    /* kept: written ones, headless, ExternalName */
    assert_string_equal(svc_ip(s, "shop", "fixed"), "10.96.0.10");
    assert_string_equal(svc_ip(s, "shop", "headless"), "None");
    assert_null(svc_ip(s, "shop", "ext"));
    char keep[32];
    snprintf(keep, sizeof keep, "%s", a);
    wf_store_free(s);
    /* the same Service gets the same address in another build with more Services */
    char *more = malloc(strlen(SVCS) + 200);
    assert_non_null(more);
    strcpy(more, SVCS);
    strcat(more, "---\napiVersion: v1\nkind: Service\nmetadata: {name: new, namespace: x}\n"
                 "spec: {ports: [{port: 80}]}\n");
    s = wf_test_load_store(NULL, more, NULL);
    assert_int_equal(wf_store_allocate_cluster_ips(s, &r), 3);
    assert_string_equal(svc_ip(s, "shop", "catalog"), keep);
    wf_store_free(s);
    free(more);
    /* no range: nothing assigned */
    s = wf_test_load_store(NULL, SVCS, NULL);
    wf_ip_range none = {0};
    assert_int_equal(wf_store_allocate_cluster_ips(s, &none), 0);
    assert_null(svc_ip(s, "shop", "catalog"));
    wf_store_free(s);
}

/* A /30 has one address to give (network, first and broadcast are kept back): the second
 * Service is left without one, as the API server refuses it when the range is full. */
static void full_range(void **state)
{
    (void)state;
    wf_ip_range r;
    const char *why;
    assert_int_equal(wf_ip_range_parse("10.0.0.0/30", &r, &why), 0);
    wf_store *s = wf_test_load_store(NULL, SVCS, NULL);
    assert_int_equal(wf_store_allocate_cluster_ips(s, &r), 1);
    const char *a = svc_ip(s, "shop", "catalog"), *b = svc_ip(s, "shop", "web");
    assert_true((a && !b) || (!a && b));
    assert_string_equal(a ? a : b, "10.0.0.2");
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_ranges),
        cmocka_unit_test(allocates_stably),
        cmocka_unit_test(full_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
