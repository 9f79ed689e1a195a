/*
 * test_proxy_stats_config.c - Istio's bootstrap stats_config (proxy/agent/proxy_stats_config.h): the
 * default inclusion list, ProxyConfig lists merged in, annotations that replace them list by
 * list, "{pod_ip}", pattern checks, and what weft-proxy's matcher and tag extraction make of
 * the result (operator report B016: Prometheus names match nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/agent/proxy_stats_config.h"
#include "harness.h"
#include "proxy/stats/stats.h"
#include "proxy/stats/stats_matcher.h"

/* The inclusion patterns as "prefix:x", "suffix:x", "regex:x", space-separated. */
static char *patterns_text(json_t *sc)
{
    json_t *pats = wf_test_json_at(sc, "stats_matcher.inclusion_list.patterns");
    assert_true(json_is_array(pats));
    size_t cap = 8192, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    size_t i;
    json_t *p;
    json_array_foreach(pats, i, p)
    {
        const char *k = json_object_get(p, "prefix")   ? "prefix"
                        : json_object_get(p, "suffix") ? "suffix"
                                                       : "regex";
        const char *v = strcmp(k, "regex")
                            ? json_string_value(json_object_get(p, k))
                            : json_string_value(wf_test_json_at(p, "safe_regex.regex"));
        assert_non_null(v);
        len += (size_t)snprintf(out + len, cap - len, "%s%s:%s", i ? " " : "", k, v);
        assert_true(len < cap);
    }
    return out;
}

static void expect_patterns(const wf_psc_in *in, const char *want)
{
    json_t *sc = wf_psc_stats_config(in);
    assert_non_null(sc);
    char *got = patterns_text(sc);
    if (strcmp(got, want) != 0)
        fail_msg("patterns\n got: %s\nwant: %s", got, want);
    free(got);
    json_decref(sc);
}

#define DEFAULT_HEAD "prefix:reporter="
#define REQ_PREFIXES                                                                               \
    "prefix:cluster_manager prefix:listener_manager prefix:server prefix:cluster.xds-grpc "        \
    "prefix:wasm"
#define REQ_SUFFIXES                                                                               \
    "suffix:rbac.allowed suffix:rbac.denied suffix:shadow_allowed suffix:shadow_denied"
#define REQ_REGEX "regex:vhost\\..*\\.route\\..*"
#define TAIL      "prefix:component prefix:istio"

/* The sidecar default, as an Istio 1.2x bootstrap renders it (reference §6.5). */
static void default_list(void **state)
{
    wf_psc_in in = {0};
    expect_patterns(&in, DEFAULT_HEAD " " REQ_PREFIXES " " REQ_SUFFIXES " " REQ_REGEX " " TAIL);
    in.exit_on_zero_active = true;
    expect_patterns(&in, DEFAULT_HEAD " " REQ_PREFIXES " " REQ_SUFFIXES
                                      " suffix:downstream_cx_active " REQ_REGEX " " TAIL);
    json_t *sc = wf_psc_stats_config(&(wf_psc_in){0});
    assert_true(json_is_false(json_object_get(sc, "use_all_default_tags")));
    assert_int_equal(json_array_size(json_object_get(sc, "stats_tags")), 16);
    wf_test_expect_str(sc, "stats_tags.0.tag_name", "cluster_name");
    wf_test_expect_str(sc, "stats_tags.0.regex", "^cluster(\\.(.+);)");
    wf_test_expect_str(sc, "stats_tags.4.tag_name", "response_code");
    wf_test_expect_str(sc, "stats_tags.5.regex", "_rq(_(\\dxx))$");
    json_decref(sc);
}

/* ProxyConfig lists come before Istio's required entries of their kind. */
static void proxy_config_merged(void **state)
{
    const char *pre[] = {"control_plane", "http.{pod_ip}_"};
    const char *re[] = {"cluster\\..*\\.upstream_rq_retry"};
    const char *ips[] = {"10.0.0.1", "10.0.0.2"};
    wf_psc_in in = {.pc = {{pre, 2}, {NULL, 0}, {re, 1}}, .ips = {ips, 2}};
    expect_patterns(&in,
                    DEFAULT_HEAD " prefix:control_plane prefix:http.10.0.0.1_ "
                                 "prefix:http.10.0.0.2_ " REQ_PREFIXES " " REQ_SUFFIXES
                                 " regex:cluster\\..*\\.upstream_rq_retry " REQ_REGEX " " TAIL);
}

/* An annotation replaces that kind's ProxyConfig list, not the others; "" counts as unset;
 * items are split on commas and kept as written. */
static void annotation_overrides(void **state)
{
    const char *pre[] = {"mesh_prefix"};
    const char *suf[] = {"mesh_suffix"};
    wf_psc_in in = {.pc = {{pre, 1}, {suf, 1}, {NULL, 0}}, .anno = {"a.,b", "", "upstream_rq_.*"}};
    expect_patterns(&in, DEFAULT_HEAD " prefix:a. prefix:b " REQ_PREFIXES
                                      " suffix:mesh_suffix " REQ_SUFFIXES
                                      " regex:upstream_rq_.* " REQ_REGEX " " TAIL);
}

static int count_visit(int kind, bool from_annotation, size_t index, const char *pattern, void *arg)
{
    char *log = arg;
    size_t n = strlen(log);
    snprintf(log + n, 512 - n, "%d%c%zu=%s;", kind, from_annotation ? 'a' : 'p', index, pattern);
    return 0;
}

static void visit_and_check(void **state)
{
    char log[512] = "";
    wf_psc_in in = {.anno = {"x,,y"}};
    assert_int_equal(wf_psc_visit(&in, WF_PSC_PREFIX, count_visit, log), 0);
    assert_string_equal(log, "0a0=x;0a1=;0a2=y;");
    char why[256];
    assert_null(
        wf_psc_check_pattern(WF_PSC_REGEX, "control_plane\\.connected_state", why, sizeof why));
    assert_non_null(wf_psc_check_pattern(WF_PSC_REGEX, "(bad", why, sizeof why));
    assert_non_null(strstr(why, "missing closing )"));
    assert_non_null(wf_psc_check_pattern(WF_PSC_REGEX, "a(?=b)", why, sizeof why)); /* not RE2 */
    assert_non_null(wf_psc_check_pattern(WF_PSC_PREFIX, "", why, sizeof why));
    assert_non_null(strstr(why, "at least 1"));
    assert_null(wf_psc_check_pattern(WF_PSC_SUFFIX, "rbac.allowed", why, sizeof why));
}

/* What weft-proxy does with it: the default hides per-cluster and control-plane stats;
 * B016: a Prometheus-style name includes nothing, the Envoy name does. */
static void matcher_semantics_b016(void **state)
{
    const char *prom[] = {"envoy_cluster_upstream_rq_total"};
    const char *envoy[] = {"cluster\\..*\\.upstream_rq_total"};
    wf_psc_in in = {0};
    const char *rq =
        "cluster.outbound|80||catalog.istioinaction.svc.cluster.local;.upstream_rq_total";
    for (int round = 0; round < 3; round++) {
        in.pc[WF_PSC_REGEX] = round == 1 ? (wf_psc_list){prom, 1} : (wf_psc_list){envoy, 1};
        if (round == 0)
            in.pc[WF_PSC_REGEX] = (wf_psc_list){0};
        json_t *sc = wf_psc_stats_config(&in);
        wf_strbuf where = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
        wp_stats_matcher *m = wp_stats_matcher_new(sc, &where, &why);
        if (!m)
            fail_msg("%s: %s", wf_strbuf_cstr(&where), wf_strbuf_cstr(&why));
        assert_true(wp_stats_matcher_accepts(m, "cluster_manager.cds.update_success"));
        assert_true(wp_stats_matcher_accepts(m, "server.state"));
        assert_true(wp_stats_matcher_accepts(m, "cluster.xds-grpc;.upstream_cx_active"));
        assert_true(wp_stats_matcher_accepts(m, "istiocustom.istio_requests_total"));
        assert_false(wp_stats_matcher_accepts(m, "control_plane.connected_state"));
        assert_false(wp_stats_matcher_accepts(m, "cluster.backend;.upstream_cx_total"));
        assert_false(wp_stats_matcher_accepts(m, "http.inbound_0.0.0.0_15006.downstream_rq_total"));
        assert_int_equal(wp_stats_matcher_accepts(m, rq), round == 2);
        wp_stats_matcher_free(m);
        wf_strbuf_free(&where);
        wf_strbuf_free(&why);
        json_decref(sc);
    }
}

static void expect_tags(const wp_stats_tags *t, const char *name, const char *want_name,
                        const char *want_tags)
{
    wf_strbuf n = WF_STRBUF_INIT, tags = WF_STRBUF_INIT;
    wp_stats_tags_extract(t, name, &n, &tags);
    if (strcmp(wf_strbuf_cstr(&n), want_name) || strcmp(wf_strbuf_cstr(&tags), want_tags))
        fail_msg("%s -> %s {%s}, want %s {%s}", name, wf_strbuf_cstr(&n), wf_strbuf_cstr(&tags),
                 want_name, want_tags);
    wf_strbuf_free(&n);
    wf_strbuf_free(&tags);
}

/* Istio's tag names, no envoy_ prefix; the class keeps "2xx" (reference §6.4, §10 item 14). */
static void istio_tag_extraction(void **state)
{
    json_t *sc = wf_psc_stats_config(&(wf_psc_in){0});
    wf_strbuf err = WF_STRBUF_INIT;
    wp_stats_tags *t = wp_stats_tags_from_config(sc, &err);
    if (!t)
        fail_msg("%s", wf_strbuf_cstr(&err));
    expect_tags(t, "cluster.outbound|80||catalog.istioinaction.svc.cluster.local;.upstream_rq_503",
                "cluster.upstream_rq",
                "cluster_name=outbound|80||catalog.istioinaction.svc.cluster.local,"
                "response_code=503");
    expect_tags(t, "cluster.xds-grpc;.upstream_rq_2xx", "cluster.upstream_rq",
                "cluster_name=xds-grpc,response_code_class=2xx");
    expect_tags(t, "server.live", "server.live", "");
    wp_stats_tags_free(t);
    wf_strbuf_free(&err);
    json_decref(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_list),           cmocka_unit_test(proxy_config_merged),
        cmocka_unit_test(annotation_overrides),   cmocka_unit_test(visit_and_check),
        cmocka_unit_test(matcher_semantics_b016), cmocka_unit_test(istio_tag_extraction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
