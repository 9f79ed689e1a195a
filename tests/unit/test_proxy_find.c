/*
 * test_proxy_find.c - src/cli/proxy_find.c against a fake weft-pilot serving /debug/syncz
 * (tests/unit/fake_http.h): POD, POD.NS, POD -n NS, deploy/NAME, the not-found message listing
 * connected proxies, a proxy without WEFT_ADMIN, and an unreachable pilot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/proxy_find.h"
#include "fake_http.h"

#define SYNCZ                                                                                      \
    "[{\"proxy\":\"istio-ingressgateway-5d8f9.istio-system\",\"proxy_type\":\"router\","           \
    "\"connected\":true,\"admin\":\"127.10.1.2:15000\"},"                                          \
    "{\"proxy\":\"catalog-6cf4b97d-abcde.istioinaction\",\"proxy_type\":\"sidecar\","              \
    "\"connected\":true,\"admin\":\"127.10.1.3:15000\"},"                                          \
    "{\"proxy\":\"catalog-v2-7b9c8d-x7k2p.istioinaction\",\"proxy_type\":\"sidecar\","             \
    "\"connected\":false,\"admin\":\"127.10.1.4:15000\"},"                                         \
    "{\"proxy\":\"catalog-v2-7b9c8d-x7k2p.istioinaction\",\"proxy_type\":\"sidecar\","             \
    "\"connected\":true,\"admin\":\"127.10.1.5:15000\"},"                                          \
    "{\"proxy\":\"noadmin.default\",\"connected\":true}]"

static char response[4096];

static int find(const char *name, const char *ns, wf_proxy_ref *ref, wf_strbuf *err)
{
    fake_http f;
    snprintf(response, sizeof response, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
             strlen(SYNCZ), SYNCZ);
    assert_int_equal(fake_http_start(&f, response, 1), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    int rc = wf_proxy_find(addr, name, ns, ref, err);
    fake_http_stop(&f);
    assert_string_equal(f.last_request, "GET /debug/syncz HTTP/1.1");
    return rc;
}

static void test_pod_forms(void **state)
{
    (void)state;
    wf_proxy_ref ref;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(find("catalog-6cf4b97d-abcde.istioinaction", NULL, &ref, &err), 0);
    assert_string_equal(ref.id, "catalog-6cf4b97d-abcde.istioinaction");
    assert_string_equal(ref.pod, "catalog-6cf4b97d-abcde");
    assert_string_equal(ref.ns, "istioinaction");
    assert_string_equal(ref.admin, "127.10.1.3:15000");
    assert_string_equal(ref.type, "sidecar");
    wf_proxy_ref_free(&ref);

    assert_int_equal(find("istio-ingressgateway-5d8f9", "istio-system", &ref, &err), 0);
    assert_string_equal(ref.type, "router");
    wf_proxy_ref_free(&ref);

    /* a connected entry wins over a disconnected one with the same id */
    assert_int_equal(find("pod/catalog-v2-7b9c8d-x7k2p", "istioinaction", &ref, &err), 0);
    assert_string_equal(ref.admin, "127.10.1.5:15000");
    wf_proxy_ref_free(&ref);
    wf_strbuf_free(&err);
}

static void test_deploy(void **state)
{
    (void)state;
    wf_proxy_ref ref;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(find("deploy/catalog", "istioinaction", &ref, &err), 0);
    assert_string_equal(ref.pod, "catalog-6cf4b97d-abcde");
    wf_proxy_ref_free(&ref);
    assert_int_equal(find("deployment/catalog-v2.istioinaction", NULL, &ref, &err), 0);
    assert_string_equal(ref.pod, "catalog-v2-7b9c8d-x7k2p");
    wf_proxy_ref_free(&ref);
    assert_int_equal(find("deploy/catalog-v3", "istioinaction", &ref, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "no pod of deploy/catalog-v3 in namespace "
                                                 "istioinaction"));
    wf_strbuf_free(&err);
}

static void test_not_found(void **state)
{
    (void)state;
    wf_proxy_ref ref;
    wf_strbuf err = WF_STRBUF_INIT;
    /* default namespace is "default" */
    assert_int_equal(find("catalog-6cf4b97d-abcde", NULL, &ref, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "pod catalog-6cf4b97d-abcde not found in namespace default (connected "
                        "proxies: istio-ingressgateway-5d8f9.istio-system, "
                        "catalog-6cf4b97d-abcde.istioinaction, "
                        "catalog-v2-7b9c8d-x7k2p.istioinaction, noadmin.default)");
    wf_strbuf_reset(&err);
    assert_int_equal(find("noadmin", NULL, &ref, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err), "proxy noadmin.default has no admin address "
                                              "(WEFT_ADMIN)");
    assert_null(ref.id);
    wf_strbuf_free(&err);
}

static void test_pilot_unreachable(void **state)
{
    (void)state;
    fake_http f;
    assert_int_equal(fake_http_start(&f, "", 0), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", f.port);
    fake_http_stop(&f);
    wf_proxy_ref ref;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_proxy_find(addr, "x", NULL, &ref, &err), -1);
    char want[256];
    snprintf(want, sizeof want,
             "cannot reach weft-pilot at %s: cannot connect to %s: "
             "Connection refused",
             addr, addr);
    assert_string_equal(wf_strbuf_cstr(&err), want);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_forms),
        cmocka_unit_test(test_deploy),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_pilot_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
