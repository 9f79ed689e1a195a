/*
 * test_ps_format.c - proxy-status pieces (src/cli/proxy_status.h): Kubernetes HumanDuration,
 * weft /debug/syncz entries to the classic table (ages, ERROR, IGNORED, DISCONNECTED, a
 * reconnected proxy's old stream hidden), and the config-dump comparison ignoring
 * version_info/last_updated and order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/proxy_status.h"

static void test_human_duration(void **state)
{
    (void)state;
    static const struct {
        long s;
        const char *want;
    } cases[] = {{-5, "<invalid>"}, {-1, "0s"},      {0, "0s"},        {119, "119s"},
                 {120, "2m"},       {192, "3m12s"},  {600, "10m"},     {10799, "179m"},
                 {10800, "3h"},     {11100, "3h5m"}, {28800, "8h"},    {172800, "2d"},
                 {183600, "2d3h"},  {691200, "8d"},  {63072000, "2y"}, {63158400, "2y1d"},
                 {252288000, "8y"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        ps_human_duration(cases[i].s, buf, sizeof buf);
        assert_string_equal(buf, cases[i].want);
    }
}

static char *render_classic(const char *syncz)
{
    json_t *v = json_loads(syncz, 0, NULL);
    assert_non_null(v);
    ps_state st = {.now = 1000};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(ps_add_syncz(&st, "weft-pilot", v, &err), 0);
    ps_sort(&st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ps_print_classic(&st, f), 0);
    fclose(f);
    ps_state_free(&st);
    json_decref(v);
    wf_strbuf_free(&err);
    return buf;
}

static void test_weft_syncz_table(void **state)
{
    (void)state;
    char *out = render_classic(
        "[{\"proxy\":\"a.ns\",\"cluster_id\":\"K\",\"istio_version\":\"weft\","
        "\"cluster_status\":\"SYNCED\",\"cluster_since_s\":192,\"listener_status\":\"ERROR\","
        "\"listener_since_s\":40,\"listener_error\":\"bad\",\"route_status\":\"IGNORED\","
        "\"endpoint_status\":\"NOT SENT\",\"endpoint_since_s\":3,\"connected\":true},"
        "{\"proxy\":\"b.ns\",\"cluster_id\":\"K\",\"istio_version\":\"weft\","
        "\"cluster_status\":\"SYNCED\",\"connected\":false,\"disconnected_for_s\":12},"
        "{\"proxy\":\"a.ns\",\"cluster_id\":\"K\",\"cluster_status\":\"SYNCED\","
        "\"connected\":false,\"disconnected_for_s\":99}]");
    assert_string_equal(
        out, "NAME     CLUSTER     CDS                    LDS                    EDS               "
             "     RDS                    ECDS                   ISTIOD         VERSION\n"
             "a.ns     K           SYNCED (3m12s)         ERROR (40s)            NOT SENT          "
             "     IGNORED                IGNORED                weft-pilot     weft\n"
             "b.ns     K           DISCONNECTED (12s)     DISCONNECTED (12s)     DISCONNECTED "
             "(12s)     DISCONNECTED (12s)     DISCONNECTED (12s)     weft-pilot     weft\n");
    free(out);
}

static void test_compare_dumps(void **state)
{
    (void)state;
    json_t *pilot = json_loads(
        "{\"configs\":[{\"@type\":\"type.googleapis.com/envoy.admin.v3.ClustersConfigDump\","
        "\"dynamic_active_clusters\":[{\"version_info\":\"1\",\"cluster\":{\"name\":\"b\"}},"
        "{\"cluster\":{\"name\":\"a\"}}]},"
        "{\"@type\":\"type.googleapis.com/envoy.admin.v3.ListenersConfigDump\"},"
        "{\"@type\":\"type.googleapis.com/envoy.admin.v3.RoutesConfigDump\"}]}",
        0, NULL);
    json_t *envoy = json_loads(
        "{\"configs\":[{\"@type\":\"type.googleapis.com/envoy.admin.v3.ClustersConfigDump\","
        "\"dynamicActiveClusters\":[{\"cluster\":{\"name\":\"a\"},\"lastUpdated\":\"x\"},"
        "{\"versionInfo\":\"2\",\"cluster\":{\"name\":\"b\"}}]},"
        "{\"@type\":\"type.googleapis.com/envoy.admin.v3.ListenersConfigDump\","
        "\"dynamic_listeners\":[{\"name\":\"l\",\"active_state\":{\"listener\":{\"name\":"
        "\"l\"}}}]},"
        "{\"@type\":\"type.googleapis.com/envoy.admin.v3.RoutesConfigDump\"}]}",
        0, NULL);
    assert_non_null(pilot);
    assert_non_null(envoy);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(ps_compare_dumps(pilot, envoy, f, &err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "Clusters Match\n"));
    assert_non_null(strstr(buf,
                           "Listeners Don't Match\n--- Istiod Listeners\n+++ Envoy "
                           "Listeners\n@@ -1,3 +1,11 @@\n {\n-    \"dynamic_listeners\": []\n"));
    assert_non_null(strstr(buf, "Routes Match\n"));
    free(buf);
    wf_strbuf_free(&err);
    json_decref(pilot);
    json_decref(envoy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_human_duration),
        cmocka_unit_test(test_weft_syncz_table),
        cmocka_unit_test(test_compare_dumps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
