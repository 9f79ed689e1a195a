/*
 * test_kube_client.c - the pure parts of the kube client: client-go's reflector back-off,
 * server URLs, kind paths and query escaping (kube/backoff.h, kube/http.h, kube/kinds.h,
 * kube/client.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kube/backoff.h"
#include "kube/client.h"
#include "kube/http.h"
#include "kube/kinds.h"

/* 800 ms doubling to 30 s, each wait in [d, 2d); reset after 2 minutes without a step. */
static void backoff_like_client_go(void **state)
{
    wf_kube_backoff b = {.rng = 42};
    int64_t now = 1000000, d = 800;
    for (int i = 0; i < 10; i++) {
        int64_t w = wf_kube_backoff_step(&b, now);
        assert_true(w >= d && w < 2 * d);
        now += w;
        d = d * 2 > 30000 ? 30000 : d * 2;
    }
    assert_int_equal(d, 30000); /* capped: waits in [30, 60) s */
    int64_t w = wf_kube_backoff_step(&b, now + 1000);
    assert_true(w >= 30000 && w < 60000);
    w = wf_kube_backoff_step(&b, now + 1000 + WF_KUBE_BACKOFF_RESET_MS + 1);
    assert_true(w >= 800 && w < 1600);
    /* jitter spreads: not every first step is the same */
    int64_t first = -1;
    bool differs = false;
    for (uint64_t seed = 1; seed < 20; seed++) {
        wf_kube_backoff c = {.rng = seed};
        int64_t x = wf_kube_backoff_step(&c, 5);
        if (first >= 0 && x != first)
            differs = true;
        first = x;
    }
    assert_true(differs);
}

static void urls(void **state)
{
    wf_kube_url u;
    wf_strbuf why = WF_STRBUF_INIT;
    assert_int_equal(wf_kube_url_parse("https://[fd00::1]:6443/k8s/clusters/c1/", &u, &why), 0);
    assert_true(u.https);
    assert_string_equal(u.host, "fd00::1");
    assert_string_equal(u.port, "6443");
    assert_string_equal(u.prefix, "/k8s/clusters/c1");
    assert_int_equal(wf_kube_url_parse("http://localhost", &u, &why), 0);
    assert_false(u.https);
    assert_string_equal(u.port, "80");
    assert_string_equal(u.prefix, "");
    assert_int_equal(wf_kube_url_parse("https://kubernetes.default.svc", &u, &why), 0);
    assert_string_equal(u.port, "443");
    assert_int_equal(wf_kube_url_parse("https://h:x1/", &u, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "bad port"));
    wf_strbuf_reset(&why);
    assert_int_equal(wf_kube_url_parse("ftp://h", &u, &why), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&why), "not an http:// or https:// URL"));
    wf_strbuf_free(&why);
}

static void kinds_and_paths(void **state)
{
    char p[256];
    const wf_kube_kind *k = wf_kube_kind_find("pods");
    assert_non_null(k);
    assert_ptr_equal(k, wf_kube_kind_find("Pod"));
    assert_string_equal(wf_kube_kind_path(k, "default", p, sizeof p),
                        "/api/v1/namespaces/default/pods");
    assert_string_equal(wf_kube_kind_path(k, NULL, p, sizeof p), "/api/v1/pods");
    k = wf_kube_kind_find("virtualservices.networking.istio.io");
    assert_non_null(k);
    assert_string_equal(wf_kube_kind_path(k, "ns1", p, sizeof p),
                        "/apis/networking.istio.io/v1/namespaces/ns1/virtualservices");
    k = wf_kube_kind_find("Node");
    assert_string_equal(wf_kube_kind_path(k, "ignored", p, sizeof p), "/api/v1/nodes");
    k = wf_kube_kind_find("EndpointSlice");
    assert_string_equal(wf_kube_kind_path(k, NULL, p, sizeof p),
                        "/apis/discovery.k8s.io/v1/endpointslices");
    assert_string_equal(wf_kube_kind_find("envoyfilters")->version, "v1alpha3");
    assert_null(wf_kube_kind_find("virtualservices.example.com"));
    assert_null(wf_kube_kind_path(k, NULL, p, 10));
}

static void query_escape(void **state)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_kube_query_escape(&b, "app in (a,b),!x,type!=helm.sh/release.v1");
    assert_string_equal(wf_strbuf_cstr(&b),
                        "app%20in%20%28a%2Cb%29%2C%21x%2Ctype%21%3Dhelm.sh%2Frelease.v1");
    wf_strbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backoff_like_client_go),
        cmocka_unit_test(urls),
        cmocka_unit_test(kinds_and_paths),
        cmocka_unit_test(query_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
