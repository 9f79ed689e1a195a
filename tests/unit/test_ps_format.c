/*
 * test_ps_format.c - proxy-status pieces (src/cli/proxy_status.h): Kubernetes HumanDuration,
 * weft /debug/syncz entries to the classic table (ages, ERROR, IGNORED, DISCONNECTED, a
 * reconnected proxy's old stream hidden), watched ECDS/SDS as NOT SENT, the -o json per-type
 * sync fields, --hide-disconnected, and the config-dump comparison ignoring
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

/* An ECDS or SDS the proxy watches and pilot never sent is NOT SENT, not IGNORED (issue 15
 * item 7): in the classic ECDS column and in the SUBSCRIBED TYPES count. */
static void test_watched_types_beyond_the_core_four(void **state)
{
    (void)state;
    char *out =
        render_classic("[{\"proxy\":\"a.ns\",\"cluster_id\":\"K\",\"istio_version\":\"weft\","
                       "\"cluster_status\":\"SYNCED\",\"listener_status\":\"SYNCED\","
                       "\"endpoint_status\":\"SYNCED\",\"route_status\":\"SYNCED\","
                       "\"extensionconfig_status\":\"NOT SENT\",\"secret_status\":\"NOT SENT\","
                       "\"connected\":true}]");
    assert_non_null(strstr(out, "SYNCED     NOT SENT     weft-pilot"));
    assert_null(strstr(out, "IGNORED"));
    free(out);
    json_t *v = json_loads("[{\"proxy\":\"a.ns\",\"cluster_status\":\"SYNCED\","
                           "\"secret_status\":\"NOT SENT\",\"extensionconfig_status\":"
                           "\"IGNORED\",\"connected\":true}]",
                           0, NULL);
    ps_state st = {.now = 1000};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(ps_add_syncz(&st, "weft-pilot", v, &err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ps_print_types(&st, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "2 (CDS,SDS)")); /* ECDS not watched: not counted */
    free(buf);
    ps_state_free(&st);
    json_decref(v);
    wf_strbuf_free(&err);
}

static char *render_json(const char *syncz, bool hide_disconnected)
{
    json_t *v = json_loads(syncz, 0, NULL);
    assert_non_null(v);
    ps_state st = {.now = 1000};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(ps_add_syncz(&st, "weft-pilot", v, &err), 0);
    if (hide_disconnected)
        ps_filter_connected(&st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ps_print_json(&st, f), 0);
    fclose(f);
    ps_state_free(&st);
    json_decref(v);
    wf_strbuf_free(&err);
    return buf;
}

static const char stale_entry[] =
    "{\"proxy\":\"a.ns\",\"cluster_id\":\"K\",\"istio_version\":\"weft\","
    "\"cluster_status\":\"STALE\",\"cluster_since\":\"1970-01-01T00:16:00Z\","
    "\"cluster_sent\":\"n2\",\"cluster_acked\":\"n1\","
    "\"resources\":{\"type.googleapis.com/envoy.config.cluster.v3.Cluster\":{\"sent\":\"n2\","
    "\"acked\":\"n1\",\"sentTime\":\"1970-01-01T00:16:30.5Z\",\"versionSent\":\"v2\","
    "\"versionAcked\":\"v1\"}},\"connected\":true}";

/* -o json carries per type the nonces and versions sent and acked and the send time, so a
 * script can tell STALE (sent != acked) from SYNCED. */
static void test_json_per_type_sync_fields(void **state)
{
    (void)state;
    char buf[1024];
    snprintf(buf, sizeof buf, "[%s]", stale_entry);
    char *out = render_json(buf, false);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    json_t *g = json_array_get(
        json_object_get(json_array_get(json_object_get(doc, "resources"), 0), "genericXdsConfigs"),
        0);
    assert_string_equal(json_string_value(json_object_get(g, "configStatus")), "STALE");
    assert_string_equal(json_string_value(json_object_get(g, "lastUpdated")),
                        "1970-01-01T00:16:00Z");
    assert_string_equal(json_string_value(json_object_get(g, "versionInfo")), "v1");
    assert_string_equal(json_string_value(json_object_get(g, "versionSent")), "v2");
    assert_string_equal(json_string_value(json_object_get(g, "sent")), "n2");
    assert_string_equal(json_string_value(json_object_get(g, "acked")), "n1");
    assert_string_equal(json_string_value(json_object_get(g, "sentTime")),
                        "1970-01-01T00:16:30.5Z");
    json_decref(doc);
    free(out);
}

/* --hide-disconnected: weft's DISCONNECTED rows go, in the tables and in -o json. */
static void test_hide_disconnected(void **state)
{
    (void)state;
    char buf[1200];
    snprintf(buf, sizeof buf,
             "[%s,{\"proxy\":\"b.ns\",\"cluster_id\":\"K\",\"cluster_status\":\"SYNCED\","
             "\"connected\":false,\"disconnected_for_s\":12}]",
             stale_entry);
    char *out = render_json(buf, false);
    assert_non_null(strstr(out, "\"b.ns\""));
    free(out);
    out = render_json(buf, true);
    assert_null(strstr(out, "\"b.ns\""));
    assert_null(strstr(out, "WEFT_DISCONNECTED_FOR"));
    assert_non_null(strstr(out, "\"a.ns\""));
    free(out);
    json_t *v = json_loads(buf, 0, NULL);
    ps_state st = {.now = 1000};
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(ps_add_syncz(&st, "weft-pilot", v, &err), 0);
    ps_filter_connected(&st);
    assert_int_equal(st.nrows, 1);
    assert_string_equal(st.rows[0].name, "a.ns");
    ps_state_free(&st);
    json_decref(v);
    wf_strbuf_free(&err);
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
        cmocka_unit_test(test_watched_types_beyond_the_core_four),
        cmocka_unit_test(test_json_per_type_sync_fields),
        cmocka_unit_test(test_hide_disconnected),
        cmocka_unit_test(test_compare_dumps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
