/*
 * test_envoy_dump.c - reading config dumps (cli/envoy_dump.c: snake/camel field names, map
 * and Struct keys kept, sections, error paths) and the proxy-config helpers they feed
 * (cli/cmd_pc_*.c: cluster names, management metadata, JSON/YAML writers, the route DOMAINS
 * and listener filter rule tables of the shared corpus).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cmd_pc.h"
#include "cli/envoy_dump.h"

#define UNIT_DIR "../shared/corpus/istioctl-golden/unit/"

static wf_envoy_dump parse_ok(const char *text)
{
    wf_envoy_dump d;
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = wf_envoy_dump_parse(text, strlen(text), "t.json", &d, &err);
    if (rc != 0)
        fail_msg("parse: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return d;
}

static void test_camel_keys_become_snake(void **state)
{
    (void)state;
    wf_envoy_dump d = parse_ok(
        "{\"configs\":[{\"@type\":\"type.googleapis.com/envoy.admin.v3.EndpointsConfigDump\","
        "\"dynamicEndpointConfigs\":[{\"endpointConfig\":{\"clusterName\":\"c\","
        "\"endpoints\":[{\"lbEndpoints\":[{\"metadata\":{\"filterMetadata\":{\"istio\":"
        "{\"tlsMode\":\"istio\"}}},\"healthStatus\":\"HEALTHY\"}]}]}}]},"
        "{\"@type\":\"b\",\"bootstrap\":{\"node\":{\"metadata\":{\"ISTIO_VERSION\":\"1\","
        "\"someKey\":\"x\"}}}}]}");
    json_t *c0 = json_array_get(json_object_get(d.root, "configs"), 0);
    json_t *cla = json_object_get(
        json_array_get(json_object_get(c0, "dynamic_endpoint_configs"), 0), "endpoint_config");
    assert_string_equal(wf_jstr(cla, "cluster_name"), "c");
    json_t *lbe = json_array_get(
        json_object_get(json_array_get(json_object_get(cla, "endpoints"), 0), "lb_endpoints"), 0);
    assert_string_equal(wf_jstr(lbe, "health_status"), "HEALTHY");
    /* Struct contents keep their keys */
    assert_string_equal(json_string_value(wf_jpath(lbe, "metadata.filter_metadata.istio.tlsMode")),
                        "istio");
    json_t *c1 = json_array_get(json_object_get(d.root, "configs"), 1);
    assert_non_null(wf_jpath(c1, "bootstrap.node.metadata.someKey"));
    assert_null(wf_jpath(c1, "bootstrap.node.metadata.some_key"));
    wf_envoy_dump_free(&d);
}

static void test_camel_copy_for_output(void **state)
{
    (void)state;
    json_t *v = json_loads("{\"cluster_name\":\"c\",\"metadata\":{\"filter_metadata\":{"
                           "\"z\":{\"b_key\":1},\"envoy.transport_socket_match\":{\"a\":2}}},"
                           "\"key_values\":{\"ISTIO_META_X\":\"1\"}}",
                           0, NULL);
    json_t *c = wf_json_camel_copy(v);
    wf_strbuf out = WF_STRBUF_INIT;
    pc_json_write(&out, c);
    assert_string_equal(wf_strbuf_cstr(&out), "{\n"
                                              "    \"clusterName\": \"c\",\n"
                                              "    \"metadata\": {\n"
                                              "        \"filterMetadata\": {\n"
                                              "            \"envoy.transport_socket_match\": {\n"
                                              "                \"a\": 2\n"
                                              "            },\n"
                                              "            \"z\": {\n"
                                              "                \"b_key\": 1\n"
                                              "            }\n"
                                              "        }\n"
                                              "    },\n"
                                              "    \"keyValues\": {\n"
                                              "        \"ISTIO_META_X\": \"1\"\n"
                                              "    }\n"
                                              "}");
    wf_strbuf_free(&out);
    json_decref(c);
    json_decref(v);
}

/* A field of the wrong type in a resource the tables read is an error naming its JSON path
 * (istioctl's protojson refuses such dumps), never a half-read row. */
static void expect_shape_error(const char *text, const char *want)
{
    wf_envoy_dump d;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_envoy_dump_parse(text, strlen(text), "d.json", &d, &err), -1);
    if (!strstr(wf_strbuf_cstr(&err), want))
        fail_msg("got \"%s\", want \"%s\"", wf_strbuf_cstr(&err), want);
    wf_strbuf_free(&err);
}

static void test_sections_and_errors(void **state)
{
    (void)state;
    wf_envoy_dump d = parse_ok("{\"configs\":[{\"@type\":\"x\",\"n\":1},{\"@type\":\"x\",\"n\":2},"
                               "{\"@type\":\"type.googleapis.com/envoy.admin.v3."
                               "ClustersConfigDump\",\"static_clusters\":[{\"cluster\":{}}]}]}");
    wf_strbuf err = WF_STRBUF_INIT;
    size_t idx = 99;
    json_t *s = wf_envoy_dump_section(&d, "x", &idx, &err);
    assert_int_equal(wf_jint(s, "n"), 2); /* the last one wins */
    assert_int_equal(idx, 1);
    assert_null(wf_envoy_dump_section(&d, WF_DUMP_T_ROUTES, NULL, &err));
    assert_string_equal(wf_strbuf_cstr(&err),
                        "config dump has no configuration type "
                        "type.googleapis.com/envoy.admin.v3.RoutesConfigDump");
    wf_strbuf_reset(&err);
    wf_strbuf_free(&err);
    wf_envoy_dump_free(&d);
    /* a cluster entry that is not an object is refused when the dump is read */
    expect_shape_error("{\"configs\":[{\"@type\":\"x\"},{\"@type\":\"x\"},{\"@type\":"
                       "\"type.googleapis.com/envoy.admin.v3.ClustersConfigDump\","
                       "\"static_clusters\":[{\"cluster\":{}},{\"cluster\":7}]}]}",
                       "d.json: configs[2].static_clusters[1].cluster: expected an object");

    wf_envoy_dump bad;
    wf_strbuf e2 = WF_STRBUF_INIT;
    assert_int_equal(wf_envoy_dump_parse("{\"configs\": [", 13, "dump.json", &bad, &e2), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&e2), "dump.json: line 1"));
    wf_strbuf_reset(&e2);
    assert_int_equal(wf_envoy_dump_parse("[1]", 3, "x.json", &bad, &e2), -1);
    assert_string_equal(wf_strbuf_cstr(&e2), "x.json: the document is not a JSON object");
    wf_strbuf_reset(&e2);
    assert_int_equal(wf_envoy_dump_load_file("/nonexistent/dump.json", &bad, &e2), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&e2), "cannot read /nonexistent/dump.json"));
    wf_strbuf_free(&e2);
}

static void test_cluster_names(void **state)
{
    (void)state;
    pc_subset_key k;
    pc_parse_subset_key("outbound|9080|v1|reviews.default.svc.cluster.local", &k);
    assert_true(k.ok);
    assert_string_equal(k.direction, "outbound");
    assert_int_equal(k.port, 9080);
    assert_string_equal(k.subset, "v1");
    assert_string_equal(k.host, "reviews.default.svc.cluster.local");
    pc_parse_subset_key("inbound|x||a|b", &k);
    assert_true(k.ok);
    assert_int_equal(k.port, 0);
    assert_string_equal(k.host, ""); /* the rest still has a '|' */
    pc_parse_subset_key("outbound_.9080_.v1_.reviews", &k);
    assert_false(k.ok);
    assert_true(pc_cmp_cluster_names("BlackHoleCluster", "PassthroughCluster") < 0);
    assert_true(pc_cmp_cluster_names("PassthroughCluster", "agent") < 0);
    assert_true(pc_cmp_cluster_names("outbound|443||a", "outbound|15010||a") < 0);
    assert_true(pc_cmp_cluster_names("outbound|80|v2|a", "outbound|80|v1|a") > 0);

    char buf[128];
    json_t *r = json_loads("{\"metadata\":{\"filter_metadata\":{\"istio\":{\"config\":"
                           "\"/apis/networking.istio.io/v1alpha3/namespaces/default/"
                           "destination-rule/reviews\"}}}}",
                           0, NULL);
    pc_mgmt_metadata(r, buf, sizeof buf);
    assert_string_equal(buf, "reviews.default");
    json_decref(r);
    r = json_loads("{\"metadata\":{\"filter_metadata\":{\"istio\":{\"config\":"
                   "\"/apis/networking/v1alpha3/namespaces/default/destination-rule/x\"}}}}",
                   0, NULL);
    pc_mgmt_metadata(r, buf, sizeof buf);
    assert_string_equal(buf, "<unknown>");
    json_decref(r);
}

static void yaml_is(const char *json, const char *want)
{
    json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    wf_strbuf out = WF_STRBUF_INIT;
    pc_yaml_write(&out, v);
    assert_string_equal(wf_strbuf_cstr(&out), want);
    wf_strbuf_free(&out);
    json_decref(v);
}

static void test_yaml_writer(void **state)
{
    (void)state;
    yaml_is("{\"@type\":\"t\",\"v\":\"1605\",\"ts\":\"2022-12-08T11:03:53.361Z\","
            "\"ver\":\"2022-12-08T09:07:09Z/10\",\"b\":\"on\",\"e\":\"\",\"m\":{},\"l\":[]}",
            "'@type': t\n"
            "b: \"on\"\n"
            "e: \"\"\n"
            "l: []\n"
            "m: {}\n"
            "ts: \"2022-12-08T11:03:53.361Z\"\n"
            "v: \"1605\"\n"
            "ver: 2022-12-08T09:07:09Z/10\n");
    yaml_is("{\"a10\":1,\"a2\":2,\"list\":[{\"x\":1,\"y\":[\"p\",\"q\"]}],\"s\":\"a: b\"}",
            "a2: 2\n"
            "a10: 1\n"
            "list:\n"
            "- x: 1\n"
            "  \"y\":\n"
            "  - p\n"
            "  - q\n"
            "s: 'a: b'\n");
    yaml_is("{\"k\":\"line1\\nline2\"}", "k: |-\n  line1\n  line2\n");
    yaml_is("{\"f\":0.5,\"g\":1000000.0,\"t\":true,\"n\":null}",
            "f: 0.5\ng: 1e+06\n\"n\": null\nt: true\n"); /* "n" reads as a bool */
}

static void test_json_writer_escapes_like_go(void **state)
{
    (void)state;
    json_t *v = json_pack("[s,i,f]", "<a&b>", 3, 0.25);
    wf_strbuf out = WF_STRBUF_INIT;
    pc_json_write(&out, v);
    assert_string_equal(wf_strbuf_cstr(&out),
                        "[\n    \"\\u003ca\\u0026b\\u003e\",\n    3,\n    0.25\n]");
    wf_strbuf_free(&out);
    json_decref(v);
}

/* unit/route-domains.json through pc route's DOMAINS column. */
static void test_route_domains_table(void **state)
{
    (void)state;
    json_t *t = json_load_file(UNIT_DIR "route-domains.json", 0, NULL);
    if (!t)
        skip();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(t, "cases"), i, c)
    {
        json_t *dump = json_pack("{s:[{s:s,s:[{s:{s:s,s:[{s:s,s:O,s:[{s:{s:s}}]}]}}]}]}", "configs",
                                 "@type", WF_DUMP_T_ROUTES, "dynamic_route_configs", "route_config",
                                 "name", "r", "virtual_hosts", "name", "vh", "domains",
                                 json_object_get(c, "domains"), "routes", "match", "prefix", "/");
        char *text = json_dumps(dump, 0);
        wf_envoy_dump d = parse_ok(text);
        pc_opts o = {.out = PC_OUT_SHORT, .verbose = true};
        wf_strbuf out = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
        assert_int_equal(pc_routes(&d, &o, &out, &err), 0);
        /* second line: r, vh, DOMAINS, then the MATCH column */
        const char *row = strchr(wf_strbuf_cstr(&out), '\n') + 1;
        const char *want = json_string_value(json_object_get(c, "expected"));
        const char *dom = strstr(row, "vh") + 2;
        while (*dom == ' ')
            dom++;
        if (!*want)
            assert_true(strncmp(dom, "/*", 2) == 0);
        else
            assert_true(strncmp(dom, want, strlen(want)) == 0 && dom[strlen(want)] == ' ');
        wf_strbuf_free(&out);
        wf_strbuf_free(&err);
        wf_envoy_dump_free(&d);
        free(text);
        json_decref(dump);
    }
    json_decref(t);
}

/* unit/listener-filter.json through pc listener -o json (the filtered array). */
static void test_listener_filter_table(void **state)
{
    (void)state;
    json_t *t = json_load_file(UNIT_DIR "listener-filter.json", 0, NULL);
    if (!t)
        skip();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(t, "cases"), i, c)
    {
        json_t *dump = json_pack("{s:[{s:s,s:[{s:O}]}]}", "configs", "@type", WF_DUMP_T_LISTENERS,
                                 "static_listeners", "listener", json_object_get(c, "listener"));
        char *text = json_dumps(dump, 0);
        wf_envoy_dump d = parse_ok(text);
        json_t *f = json_object_get(c, "filter");
        pc_opts o = {.out = PC_OUT_JSON, .verbose = true};
        o.address = wf_jstr(f, "address");
        o.type = wf_jstr(f, "type");
        o.port = (long)wf_jint(f, "port");
        wf_strbuf out = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
        assert_int_equal(pc_listeners(&d, &o, &out, &err), 0);
        json_t *arr = json_loads(wf_strbuf_cstr(&out), 0, NULL);
        assert_int_equal(json_array_size(arr) == 1, json_is_true(json_object_get(c, "expected")));
        json_decref(arr);
        wf_strbuf_free(&out);
        wf_strbuf_free(&err);
        wf_envoy_dump_free(&d);
        free(text);
        json_decref(dump);
    }
    json_decref(t);
}

static void test_wrong_types_are_errors(void **state)
{
    (void)state;
    expect_shape_error("{\"configs\":[1]}", "d.json: configs[0]: expected an object");
    expect_shape_error("{\"configs\":[{\"@type\":\"" WF_DUMP_T_CLUSTERS "\","
                       "\"dynamic_active_clusters\":[{\"cluster\":{\"name\":7}}]}]}",
                       "configs[0].dynamic_active_clusters[0].cluster.name: expected a string");
    expect_shape_error("{\"configs\":[{\"@type\":\"" WF_DUMP_T_CLUSTERS "\","
                       "\"static_clusters\":[{\"cluster\":{\"name\":\"a\",\"type\":\"BOGUS\"}}]}]}",
                       "configs[0].static_clusters[0].cluster.type: unknown cluster type");
    expect_shape_error(
        "{\"configs\":[{\"@type\":\"" WF_DUMP_T_LISTENERS "\","
        "\"static_listeners\":[{\"listener\":{\"name\":\"l\",\"address\":"
        "{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":\"abc\"}}}}]}]}",
        "listener.address.socket_address.port_value: expected an integer");
    expect_shape_error("{\"configs\":[{\"@type\":\"" WF_DUMP_T_LISTENERS "\","
                       "\"dynamic_listeners\":[{\"name\":\"l\",\"active_state\":{\"listener\":"
                       "{\"name\":\"l\",\"filter_chains\":{\"x\":1}}}}]}]}",
                       "active_state.listener.filter_chains: expected an array");
    expect_shape_error("{\"configs\":[{\"@type\":\"" WF_DUMP_T_ROUTES "\","
                       "\"dynamic_route_configs\":[{\"route_config\":{\"name\":\"80\","
                       "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":\"catalog\"}]}}]}]}",
                       "virtual_hosts[0].domains: expected an array");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_camel_keys_become_snake),
        cmocka_unit_test(test_camel_copy_for_output),
        cmocka_unit_test(test_sections_and_errors),
        cmocka_unit_test(test_wrong_types_are_errors),
        cmocka_unit_test(test_cluster_names),
        cmocka_unit_test(test_yaml_writer),
        cmocka_unit_test(test_json_writer_escapes_like_go),
        cmocka_unit_test(test_route_domains_table),
        cmocka_unit_test(test_listener_filter_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
