/*
 * test_pilot_capture.c - pilot/capture: a sidecar whose node metadata says INTERCEPTION_MODE
 * REDIRECT (and no WEFT_LOCALHOST) gets istiod's capture layout: virtualOutbound (15001,
 * use_original_dst, blackhole and catch-all chains, PassthroughCluster or BlackHoleCluster under
 * REGISTRY_ONLY), the outbound 0.0.0.0_<port> listeners with bind_to_port false, virtualInbound
 * (15006, original_dst, a chain per port by destination_port, InboundPassthroughCluster), the
 * inbound clusters as ORIGINAL_DST from 127.0.0.6; both generation paths (wf_pilot_generate and
 * the gen cache) agree; explicit mode is unchanged. The book's catalog
 * (../shared/corpus/istioinaction/), shapes as in istioctl's authz testdata configdump.yaml.
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

#define BOOK "../shared/corpus/istioinaction/"

static const char *const catalog_files[] = {BOOK "services/catalog/kubernetes/catalog.yaml", NULL};
static const char *const catalog_pod = "apiVersion: v1\n"
                                       "kind: Pod\n"
                                       "metadata:\n"
                                       "  name: catalog-v1-abc\n"
                                       "  namespace: istioinaction\n"
                                       "  labels: {app: catalog, version: v1}\n"
                                       "spec:\n"
                                       "  containers:\n"
                                       "  - name: catalog\n"
                                       "    ports: [{name: http, containerPort: 3000}]\n"
                                       "status: {podIP: 10.10.0.3, phase: Running}\n";

typedef struct fixture {
    wf_store *s;
    wf_pilot_proxy p;
    wf_pilot_env env;
    wf_meshcfg *mesh;
} fixture;

/* The catalog pod's sidecar with metadata md (taken), the catalog Pod followed by extra
 * documents (NULL none). */
static void setup_with(fixture *f, json_t *md, const char *mesh_yaml, const char *extra)
{
    char yaml[4096];
    snprintf(yaml, sizeof yaml, "%s%s%s", catalog_pod, extra ? "---\n" : "", extra ? extra : "");
    *f = (fixture){.s = wf_test_load_store(catalog_files, yaml, "istioinaction")};
    assert_non_null(f->s);
    if (mesh_yaml) {
        f->mesh = wf_meshcfg_new_default();
        char *path = wf_test_temp_file(mesh_yaml);
        const char *err = NULL;
        assert_int_equal(wf_meshcfg_load_file(f->mesh, path, &err), 0);
        remove(path);
        free(path);
    }
    char *id = strdup("catalog-v1-abc.istioinaction"), err[256] = "";
    wf_xds_node node = {.id = id, .metadata = md};
    assert_int_equal(wf_pilot_proxy_from_node(&node, f->s, &f->p, err, sizeof err), 0);
    free(id);
    json_decref(md);
    f->env = (wf_pilot_env){.store = f->s, .mesh = f->mesh};
}

static void setup(fixture *f, json_t *md, const char *mesh_yaml)
{
    setup_with(f, md, mesh_yaml, NULL);
}

static void teardown(fixture *f)
{
    wf_pilot_proxy_free(&f->p);
    wf_store_free(f->s);
    wf_meshcfg_free(f->mesh);
}

static json_t *by_name(json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (n && strcmp(n, name) == 0)
            return v;
    }
    return NULL;
}

/* The tcp_proxy's cluster of a chain (its last filter). */
static const char *tcp_cluster(json_t *fc)
{
    json_t *fs = json_object_get(fc, "filters");
    json_t *f = json_array_get(fs, json_array_size(fs) - 1);
    assert_string_equal(json_string_value(json_object_get(f, "name")),
                        "envoy.filters.network.tcp_proxy");
    return json_string_value(json_object_get(json_object_get(f, "typed_config"), "cluster"));
}

static json_int_t dport(json_t *fc)
{
    return json_integer_value(
        json_object_get(json_object_get(fc, "filter_chain_match"), "destination_port"));
}

static void detection(void **state)
{
    (void)state;
    fixture f;
    setup(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"), NULL);
    assert_true(f.p.captured);
    teardown(&f);
    /* the local mesh's explicit mode wins; other modes and none are not captured */
    setup(&f,
          json_pack("{s:s,s:s}", "INTERCEPTION_MODE", "REDIRECT", "WEFT_LOCALHOST", "127.11.0.3"),
          NULL);
    assert_false(f.p.captured);
    teardown(&f);
    setup(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "NONE"), NULL);
    assert_false(f.p.captured);
    teardown(&f);
    setup(&f, NULL, NULL);
    assert_false(f.p.captured);
    teardown(&f);
}

static void check_listeners(json_t *lds, const char *catchall)
{
    json_t *vo = json_array_get(lds, 0);
    assert_string_equal(json_string_value(json_object_get(vo, "name")), "virtualOutbound");
    assert_true(json_is_true(json_object_get(vo, "use_original_dst")));
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(vo, "address"), "socket_address"), "port_value")),
        15001);
    json_t *vc = json_object_get(vo, "filter_chains");
    assert_int_equal(json_array_size(vc), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(vc, 0), "name")),
                        "virtualOutbound-blackhole");
    assert_int_equal(dport(json_array_get(vc, 0)), 15001);
    assert_string_equal(tcp_cluster(json_array_get(vc, 0)), "BlackHoleCluster");
    assert_string_equal(json_string_value(json_object_get(json_array_get(vc, 1), "name")),
                        "virtualOutbound-catchall-tcp");
    assert_null(json_object_get(json_array_get(vc, 1), "filter_chain_match"));
    assert_string_equal(tcp_cluster(json_array_get(vc, 1)), catchall);
    /* the outbound listener for catalog's port 80: 0.0.0.0, not bound */
    json_t *o80 = by_name(lds, "0.0.0.0_80");
    assert_non_null(o80);
    assert_true(json_is_false(json_object_get(o80, "bind_to_port")));
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(o80, "address"), "socket_address"), "address")),
        "0.0.0.0");
    /* inbound: no per-port listener of its own, a chain of virtualInbound instead */
    assert_null(by_name(lds, "10.10.0.3_3000"));
    json_t *vi = json_array_get(lds, json_array_size(lds) - 1);
    assert_string_equal(json_string_value(json_object_get(vi, "name")), "virtualInbound");
    assert_string_equal(json_string_value(json_object_get(vi, "traffic_direction")), "INBOUND");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(vi, "listener_filters"), 0), "name")),
                        "envoy.filters.listener.original_dst");
    json_t *ic = json_object_get(vi, "filter_chains");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ic, 0), "name")),
                        "virtualInbound-blackhole");
    assert_int_equal(dport(json_array_get(ic, 0)), 15006);
    /* the passthrough chains, then the port's */
    size_t n = json_array_size(ic), port_chains = 0, i = 1;
    for (; i < n && dport(json_array_get(ic, i)) == 0; i++)
        assert_non_null(strstr(json_string_value(json_object_get(json_array_get(ic, i), "name")),
                               "virtualInbound"));
    assert_true(i > 1);
    for (; i < n; i++) {
        assert_int_equal(dport(json_array_get(ic, i)), 3000);
        assert_string_equal(json_string_value(json_object_get(json_array_get(ic, i), "name")),
                            "0.0.0.0_3000");
        port_chains++;
    }
    assert_true(port_chains >= 1);
}

static void captured_layout(void **state)
{
    (void)state;
    fixture f;
    setup(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"), NULL);
    json_t *lds = wf_pilot_generate(&f.env, &f.p, WF_XDS_LDS, NULL);
    assert_non_null(lds);
    check_listeners(lds, "PassthroughCluster");
    json_decref(lds);
    json_t *cds = wf_pilot_generate(&f.env, &f.p, WF_XDS_CDS, NULL);
    assert_non_null(cds);
    json_t *in = by_name(cds, "inbound|3000||");
    assert_non_null(in);
    assert_string_equal(json_string_value(json_object_get(in, "type")), "ORIGINAL_DST");
    assert_string_equal(json_string_value(json_object_get(in, "lb_policy")), "CLUSTER_PROVIDED");
    assert_null(json_object_get(in, "load_assignment"));
    json_t *src = json_object_get(json_object_get(in, "upstream_bind_config"), "source_address");
    assert_string_equal(json_string_value(json_object_get(src, "address")), "127.0.0.6");
    json_t *ip = by_name(cds, "InboundPassthroughCluster");
    assert_non_null(ip);
    assert_string_equal(json_string_value(json_object_get(ip, "type")), "ORIGINAL_DST");
    assert_non_null(by_name(cds, "PassthroughCluster"));
    assert_non_null(by_name(cds, "BlackHoleCluster"));
    json_decref(cds);
    teardown(&f);
}

static void registry_only(void **state)
{
    (void)state;
    fixture f;
    setup(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"),
          "outboundTrafficPolicy:\n  mode: REGISTRY_ONLY\n");
    json_t *lds = wf_pilot_generate(&f.env, &f.p, WF_XDS_LDS, NULL);
    assert_non_null(lds);
    check_listeners(lds, "BlackHoleCluster");
    json_decref(lds);
    teardown(&f);
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

static void cache_agrees(void **state)
{
    (void)state;
    fixture f;
    setup(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"), "accessLogFile: /dev/stdout\n");
    wf_gen_cache *c = wf_gen_cache_new(&f.env);
    assert_non_null(c);
    for (int t = 0; t < 2; t++) {
        wf_xds_type type = t ? WF_XDS_CDS : WF_XDS_LDS;
        json_t *want = wf_pilot_generate(&f.env, &f.p, type, NULL);
        assert_non_null(want);
        wf_gen_text txt;
        assert_int_equal(wf_gen_cache_text(c, &f.p, type, NULL, &txt), 0);
        char *got = whole(&txt);
        json_error_t e;
        json_t *g = json_loads(got, 0, &e);
        assert_non_null(g);
        if (!json_equal(g, want)) {
            char *w = json_dumps(want, JSON_COMPACT);
            fail_msg("type %d:\n got %s\nwant %s", (int)type, got, w);
        }
        json_decref(g);
        json_decref(want);
        free(got);
        wf_gen_text_free(&txt);
    }
    wf_gen_cache_free(c);
    teardown(&f);
}

/* Explicit mode (WEFT_LOCALHOST) keeps its per-port listeners on the pod's addresses. */
static void explicit_unchanged(void **state)
{
    (void)state;
    fixture f;
    setup(&f, json_pack("{s:s}", "WEFT_LOCALHOST", "127.11.0.3"), NULL);
    json_t *lds = wf_pilot_generate(&f.env, &f.p, WF_XDS_LDS, NULL);
    assert_null(by_name(lds, "virtualOutbound"));
    assert_null(by_name(lds, "virtualInbound"));
    json_t *o80 = by_name(lds, "0.0.0.0_80");
    assert_non_null(o80);
    assert_null(json_object_get(o80, "bind_to_port"));
    json_decref(lds);
    json_t *cds = wf_pilot_generate(&f.env, &f.p, WF_XDS_CDS, NULL);
    assert_string_equal(json_string_value(json_object_get(by_name(cds, "inbound|3000||"), "type")),
                        "STATIC");
    assert_null(by_name(cds, "InboundPassthroughCluster"));
    json_decref(cds);
    teardown(&f);
}

/* TCP Services with clusterIPs on one port (two databases on 5432) and a ServiceEntry without
 * addresses on it: a captured sidecar gets istiod's <clusterIP>_5432 listener per Service,
 * bound at that address, and 0.0.0.0_5432 for the ServiceEntry, so virtualOutbound hands each
 * its own connections (a connection to another address on 5432 goes to 0.0.0.0_5432 or the
 * catch-all); explicit mode keeps one listener per port on the pod's address. The cache
 * serves each mode its own. */
static const char *const two_dbs =
    "apiVersion: v1\nkind: Service\nmetadata: {name: db-a, namespace: istioinaction}\n"
    "spec: {clusterIP: 10.96.0.20, ports: [{name: tcp-pg, port: 5432}], selector: {app: a}}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: db-b, namespace: istioinaction}\n"
    "spec: {clusterIP: 10.96.0.21, ports: [{name: tcp-pg, port: 5432}], selector: {app: b}}\n"
    "---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\n"
    "metadata: {name: ext-pg, namespace: istioinaction}\n"
    "spec: {hosts: [pg.example.com], location: MESH_EXTERNAL, resolution: DNS,\n"
    "  ports: [{number: 5432, name: tcp, protocol: TCP}]}\n";

static void setup_dbs(fixture *f, json_t *md)
{
    setup_with(f, md, NULL, two_dbs);
}

/* The cluster of the last chain's tcp_proxy (after istio.stats and the like). */
static const char *last_tcp_cluster(json_t *l)
{
    json_t *fcs = json_object_get(l, "filter_chains");
    json_t *fl = json_object_get(json_array_get(fcs, json_array_size(fcs) - 1), "filters");
    size_t i;
    json_t *x;
    json_array_foreach(fl, i, x)
    {
        if (!strcmp(json_string_value(json_object_get(x, "name")),
                    "envoy.filters.network.tcp_proxy"))
            return json_string_value(
                json_object_get(json_object_get(x, "typed_config"), "cluster"));
    }
    fail_msg("no tcp_proxy");
    return NULL;
}

static const char *listener_addr(json_t *l)
{
    return json_string_value(json_object_get(
        json_object_get(json_object_get(l, "address"), "socket_address"), "address"));
}

static void per_vip_tcp_listeners(void **state)
{
    (void)state;
    fixture f;
    setup_dbs(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"));
    json_t *lds = wf_pilot_generate(&f.env, &f.p, WF_XDS_LDS, NULL);
    assert_non_null(lds);
    json_t *a = by_name(lds, "10.96.0.20_5432"), *b = by_name(lds, "10.96.0.21_5432");
    json_t *any = by_name(lds, "0.0.0.0_5432");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(any);
    assert_string_equal(listener_addr(a), "10.96.0.20");
    assert_string_equal(listener_addr(b), "10.96.0.21");
    assert_string_equal(listener_addr(any), "0.0.0.0");
    assert_true(json_is_false(json_object_get(a, "bind_to_port")));
    assert_string_equal(last_tcp_cluster(a), "outbound|5432||db-a.istioinaction.svc.cluster.local");
    assert_string_equal(last_tcp_cluster(b), "outbound|5432||db-b.istioinaction.svc.cluster.local");
    assert_string_equal(last_tcp_cluster(any), "outbound|5432||pg.example.com");
    json_decref(lds);
    /* the cache gives the captured sidecar the same, and an explicit one its own */
    wf_gen_cache *c = wf_gen_cache_new(&f.env);
    assert_non_null(c);
    wf_gen_text txt;
    assert_int_equal(wf_gen_cache_text(c, &f.p, WF_XDS_LDS, NULL, &txt), 0);
    char *got = whole(&txt);
    assert_non_null(strstr(got, "\"10.96.0.21_5432\""));
    free(got);
    wf_gen_text_free(&txt);
    fixture g;
    setup_dbs(&g, json_pack("{s:s}", "WEFT_LOCALHOST", "127.11.0.3"));
    g.env = f.env;
    assert_int_equal(wf_gen_cache_text(c, &g.p, WF_XDS_LDS, NULL, &txt), 0);
    got = whole(&txt);
    json_error_t e;
    json_t *el = json_loads(got, 0, &e);
    assert_non_null(el);
    size_t n5432 = 0, i;
    json_t *l;
    json_array_foreach(el, i, l)
    {
        const char *nm = json_string_value(json_object_get(l, "name"));
        if (strstr(nm, "_5432")) {
            n5432++;
            assert_string_equal(listener_addr(l), "127.11.0.3");
        }
    }
    assert_int_equal(n5432, 1); /* one address, one listener per port */
    json_decref(el);
    free(got);
    wf_gen_text_free(&txt);
    wf_gen_cache_free(c);
    wf_pilot_proxy_free(&g.p);
    wf_store_free(g.s);
    teardown(&f);
    /* DNS_AUTO_ALLOCATE: the ServiceEntry's listener is named and bound at its auto-allocated
     * address (the one the DNS proxy answers), as istiod does */
    setup_dbs(&f,
              json_pack("{s:s,s:s}", "INTERCEPTION_MODE", "REDIRECT", "DNS_AUTO_ALLOCATE", "true"));
    lds = wf_pilot_generate(&f.env, &f.p, WF_XDS_LDS, NULL);
    assert_non_null(lds);
    assert_null(by_name(lds, "0.0.0.0_5432"));
    json_t *se = NULL;
    json_array_foreach(lds, i, l)
    {
        const char *nm = json_string_value(json_object_get(l, "name"));
        if (strncmp(nm, "240.240.", 8) == 0 && strstr(nm, "_5432"))
            se = l;
    }
    assert_non_null(se);
    assert_true(strncmp(listener_addr(se), "240.240.", 8) == 0);
    assert_string_equal(last_tcp_cluster(se), "outbound|5432||pg.example.com");
    assert_non_null(by_name(lds, "10.96.0.20_5432"));
    json_decref(lds);
    teardown(&f);
}

/* ---------- virtualInbound per PeerAuthentication mode, against istiod's layout ----------
 * The golden (istioctl/pkg/authz/testdata/configdump.yaml, PERMISSIVE, HTTP port 80):
 * virtualInbound-blackhole; virtualInbound-catchall-http tls + istio-http/1.0,istio-http/1.1,
 * istio-h2 (mTLS) and raw_buffer + http/1.1,h2c; virtualInbound tls + istio-peer-exchange,istio
 * (mTLS), raw_buffer, tls; the port's chains; listener filters original_dst, tls_inspector
 * disabled on 15006, http_inspector disabled on 80 and 15006. */

/* "<name> <dport> <transport|-> <alpn,...|-> <hcm|tcp>:<cluster> <mtls|plain>" */
static void chain_line(json_t *fc, char *out, size_t cap)
{
    json_t *m = json_object_get(fc, "filter_chain_match");
    char alpn[256] = "";
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(m, "application_protocols"), i, a)
    {
        strcat(alpn, i ? "," : "");
        strcat(alpn, json_string_value(a));
    }
    json_t *fs = json_object_get(fc, "filters");
    json_t *last = json_array_get(fs, json_array_size(fs) - 1);
    const char *fname = json_string_value(json_object_get(last, "name"));
    json_t *tc = json_object_get(last, "typed_config");
    const char *cluster;
    bool hcm = strcmp(fname, "envoy.filters.network.http_connection_manager") == 0;
    if (hcm)
        cluster = json_string_value(json_object_get(
            json_object_get(
                json_array_get(
                    json_object_get(
                        json_array_get(
                            json_object_get(json_object_get(tc, "route_config"), "virtual_hosts"),
                            0),
                        "routes"),
                    0),
                "route"),
            "cluster"));
    else
        cluster = json_string_value(json_object_get(tc, "cluster"));
    const char *tp = json_string_value(json_object_get(m, "transport_protocol"));
    snprintf(out, cap, "%s %d %s %s %s:%s %s", json_string_value(json_object_get(fc, "name")),
             (int)dport(fc), tp ? tp : "-", alpn[0] ? alpn : "-", hcm ? "hcm" : "tcp",
             cluster ? cluster : "?", json_object_get(fc, "transport_socket") ? "mtls" : "plain");
}

/* A listener filter predicate as text: [s,e) ranges, or(...), not(...). */
static void pred_text(json_t *p, char *out, size_t cap)
{
    json_t *r = json_object_get(p, "destination_port_range");
    if (r) {
        snprintf(out, cap, "[%d,%d)", (int)json_integer_value(json_object_get(r, "start")),
                 (int)json_integer_value(json_object_get(r, "end")));
        return;
    }
    json_t *n = json_object_get(p, "not_match");
    if (n) {
        char in[200];
        pred_text(n, in, sizeof in);
        snprintf(out, cap, "not(%s)", in);
        return;
    }
    json_t *rules = json_object_get(json_object_get(p, "or_match"), "rules");
    size_t i;
    json_t *e;
    snprintf(out, cap, "or(");
    json_array_foreach(rules, i, e)
    {
        char in[64];
        pred_text(e, in, sizeof in);
        strcat(out, i ? "," : "");
        strcat(out, in);
    }
    strcat(out, ")");
}

/* "original_dst; tls_inspector!<pred>; http_inspector!<pred>" (no "!" when always on). */
static void filters_line(json_t *vi, char *out, size_t cap)
{
    size_t i;
    json_t *f;
    out[0] = '\0';
    json_array_foreach(json_object_get(vi, "listener_filters"), i, f)
    {
        const char *n = json_string_value(json_object_get(f, "name"));
        strcat(out, i ? "; " : "");
        strcat(out, n + strlen("envoy.filters.listener."));
        json_t *d = json_object_get(f, "filter_disabled");
        if (d) {
            char p[256];
            pred_text(d, p, sizeof p);
            strcat(out, "!");
            strcat(out, p);
        }
    }
    (void)cap;
}

static json_t *virtual_inbound(const char *extra)
{
    fixture f;
    setup_with(&f, json_pack("{s:s}", "INTERCEPTION_MODE", "REDIRECT"), NULL, extra);
    json_t *lds = wf_pilot_generate(&f.env, &f.p, WF_XDS_LDS, NULL);
    assert_non_null(lds);
    json_t *vi = json_incref(by_name(lds, "virtualInbound"));
    assert_non_null(vi);
    json_decref(lds);
    teardown(&f);
    return vi;
}

static void expect_layout(const char *extra, const char *const *want, const char *want_filters)
{
    json_t *vi = virtual_inbound(extra);
    json_t *ic = json_object_get(vi, "filter_chains");
    size_t n = 0;
    while (want[n])
        n++;
    char line[512];
    for (size_t i = 0; i < json_array_size(ic); i++) {
        chain_line(json_array_get(ic, i), line, sizeof line);
        if (i >= n)
            fail_msg("unexpected chain %zu: %s", i, line);
        if (strcmp(line, want[i]) != 0)
            fail_msg("chain %zu:\n got %s\nwant %s", i, line, want[i]);
    }
    assert_int_equal(json_array_size(ic), n);
    filters_line(vi, line, sizeof line);
    assert_string_equal(line, want_filters);
    assert_string_equal(json_string_value(json_object_get(vi, "listener_filters_timeout")), "0s");
    assert_true(json_is_true(json_object_get(vi, "continue_on_listener_filters_timeout")));
    json_decref(vi);
}

#define BH  "virtualInbound-blackhole 15006 - - tcp:BlackHoleCluster plain"
#define IPC "InboundPassthroughCluster"
#define PA(mode)                                                                                   \
    "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: default, "       \
    "namespace: istioinaction}\nspec:\n  mtls: {mode: " mode "}\n"

static void vi_permissive(void **state)
{
    (void)state;
    static const char *const want[] = {
        BH,
        "virtualInbound-catchall-http 0 tls istio-http/1.0,istio-http/1.1,istio-h2 hcm:" IPC
        " mtls",
        "virtualInbound-catchall-http 0 raw_buffer http/1.1,h2c hcm:" IPC " plain",
        "virtualInbound 0 tls istio-peer-exchange,istio tcp:" IPC " mtls",
        "virtualInbound 0 raw_buffer - tcp:" IPC " plain",
        "virtualInbound 0 tls - tcp:" IPC " plain",
        "0.0.0.0_3000 3000 tls istio,istio-peer-exchange,istio-http/1.0,istio-http/1.1,istio-h2 "
        "hcm:inbound|3000|| mtls",
        "0.0.0.0_3000 3000 raw_buffer - hcm:inbound|3000|| plain",
        NULL};
    const char *filters =
        "original_dst; tls_inspector![15006,15007); http_inspector!or([3000,3001),[15006,15007))";
    expect_layout(NULL, want, filters); /* no policy: PERMISSIVE */
    expect_layout(PA("PERMISSIVE"), want, filters);
}

static void vi_strict(void **state)
{
    (void)state;
    static const char *const want[] = {
        BH,
        "virtualInbound-catchall-http 0 tls istio-http/1.0,istio-http/1.1,istio-h2 hcm:" IPC
        " mtls",
        "virtualInbound 0 tls - tcp:" IPC " mtls",
        "0.0.0.0_3000 3000 tls - hcm:inbound|3000|| mtls", NULL};
    /* only TLS arrives: no http_inspector at all */
    expect_layout(PA("STRICT"), want, "original_dst; tls_inspector![15006,15007)");
}

static void vi_disable(void **state)
{
    (void)state;
    static const char *const want[] = {
        BH, "virtualInbound-catchall-http 0 raw_buffer http/1.1,h2c hcm:" IPC " plain",
        "virtualInbound 0 raw_buffer - tcp:" IPC " plain",
        "0.0.0.0_3000 3000 - - hcm:inbound|3000|| plain", NULL};
    /* no TLS chain: no tls_inspector */
    expect_layout(PA("DISABLE"), want,
                  "original_dst; http_inspector!or([3000,3001),[15006,15007))");
}

/* A portLevelMtls port no Service targets gets passthrough chains of its own mode (authn
 * ForPassthrough); the port a Service targets keeps its chains. */
static void vi_port_level(void **state)
{
    (void)state;
    static const char *const want[] = {
        BH,
        "virtualInbound-catchall-http 0 tls istio-http/1.0,istio-http/1.1,istio-h2 hcm:" IPC
        " mtls",
        "virtualInbound 0 tls - tcp:" IPC " mtls",
        "virtualInbound-catchall-http 9999 raw_buffer http/1.1,h2c hcm:" IPC " plain",
        "virtualInbound 9999 raw_buffer - tcp:" IPC " plain",
        "0.0.0.0_3000 3000 tls - hcm:inbound|3000|| mtls",
        NULL};
    expect_layout("apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: "
                  "catalog, namespace: istioinaction}\nspec:\n  selector: {matchLabels: {app: "
                  "catalog}}\n  mtls: {mode: STRICT}\n  portLevelMtls:\n    9999: {mode: "
                  "DISABLE}\n",
                  want,
                  "original_dst; tls_inspector!or([9999,10000),[15006,15007)); "
                  "http_inspector!or([0,1),[3000,3001),[15006,15007))");
}

/* The catch-all chains' filters: HCM as istiod's (stat_prefix, route_config, vhost, route,
 * the workload's HTTP filters with the AuthorizationPolicy's RBAC), TCP with metadata exchange
 * first, network RBAC, istio.stats, tcp_proxy. */
static void vi_filters(void **state)
{
    (void)state;
    json_t *vi = virtual_inbound(
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: deny-admin, "
        "namespace: istioinaction}\nspec:\n  selector: {matchLabels: {app: catalog}}\n  action: "
        "DENY\n  rules:\n  - to:\n    - operation: {paths: [/admin]}\n");
    json_t *ic = json_object_get(vi, "filter_chains");
    json_t *http = NULL, *tcp = NULL;
    for (size_t i = 0; i < json_array_size(ic); i++) {
        json_t *fc = json_array_get(ic, i);
        const char *n = json_string_value(json_object_get(fc, "name"));
        if (!http && !strcmp(n, "virtualInbound-catchall-http"))
            http = fc;
        if (!tcp && !strcmp(n, "virtualInbound"))
            tcp = fc;
    }
    assert_non_null(http);
    assert_non_null(tcp);
    json_t *hf = json_object_get(http, "filters");
    json_t *hcm = json_object_get(json_array_get(hf, json_array_size(hf) - 1), "typed_config");
    assert_string_equal(json_string_value(json_object_get(hcm, "stat_prefix")), IPC);
    json_t *rc = json_object_get(hcm, "route_config");
    assert_string_equal(json_string_value(json_object_get(rc, "name")), IPC);
    json_t *vh = json_array_get(json_object_get(rc, "virtual_hosts"), 0);
    assert_string_equal(json_string_value(json_object_get(vh, "name")), "inbound|http|0");
    assert_string_equal(json_string_value(json_array_get(json_object_get(vh, "domains"), 0)), "*");
    json_t *r = json_array_get(json_object_get(vh, "routes"), 0);
    assert_string_equal(json_string_value(json_object_get(r, "name")), "default");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "route"), "timeout")),
                        "0s");
    static const char *const hnames[] = {"istio.metadata_exchange",
                                         "envoy.filters.http.rbac",
                                         "envoy.filters.http.fault",
                                         "envoy.filters.http.cors",
                                         "istio.stats",
                                         "envoy.filters.http.router"};
    json_t *hfs = json_object_get(hcm, "http_filters");
    assert_int_equal(json_array_size(hfs), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(hfs, i), "name")),
                            hnames[i]);
    json_t *rbac = json_object_get(json_array_get(hfs, 1), "typed_config");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(rbac, "rules"), "action")), "DENY");
    assert_non_null(json_object_get(json_object_get(json_object_get(rbac, "rules"), "policies"),
                                    "ns[istioinaction]-policy[deny-admin]-rule[0]"));
    static const char *const tnames[] = {"istio.metadata_exchange", "envoy.filters.network.rbac",
                                         "istio.stats", "envoy.filters.network.tcp_proxy"};
    json_t *tf = json_object_get(tcp, "filters");
    assert_int_equal(json_array_size(tf), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(tf, i), "name")),
                            tnames[i]);
    json_t *tp = json_object_get(json_array_get(tf, 3), "typed_config");
    assert_string_equal(json_string_value(json_object_get(tp, "stat_prefix")), IPC);
    json_decref(vi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(detection),
        cmocka_unit_test(captured_layout),
        cmocka_unit_test(registry_only),
        cmocka_unit_test(cache_agrees),
        cmocka_unit_test(explicit_unchanged),
        cmocka_unit_test(vi_permissive),
        cmocka_unit_test(vi_strict),
        cmocka_unit_test(vi_disable),
        cmocka_unit_test(vi_port_level),
        cmocka_unit_test(vi_filters),
        cmocka_unit_test(per_vip_tcp_listeners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
