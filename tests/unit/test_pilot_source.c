/*
 * test_pilot_source.c - pilot/source: snapshots from a temporary directory; an invalid
 * resource and an unparsable file keep their last good versions and are reported with file,
 * line and field; change classification (endpoint-only vs full vs none); the directory
 * source's debounce (quiet period, maximum delay) and fs events on a real libuv loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pilot/source.h"

static const char *const SVC = "apiVersion: v1\n"
                               "kind: Service\n"
                               "metadata: {name: catalog, namespace: shop}\n"
                               "spec:\n"
                               "  selector: {app: catalog}\n"
                               "  ports: [{name: http, port: 80, targetPort: 3000}]\n";

static const char *const VS_FMT = "apiVersion: networking.istio.io/v1\n"
                                  "kind: VirtualService\n"
                                  "metadata: {name: catalog, namespace: shop}\n"
                                  "spec:\n"
                                  "  hosts: [catalog]\n"
                                  "  http:\n"
                                  "  - route:\n"
                                  "    - destination: {host: catalog}\n"
                                  "      weight: %s\n"
                                  "    - destination: {host: catalog}\n"
                                  "      weight: %s\n";

static const char *const POD_FMT = "apiVersion: v1\n"
                                   "kind: Pod\n"
                                   "metadata:\n"
                                   "  name: catalog-1\n"
                                   "  namespace: shop\n"
                                   "  labels: {app: catalog}\n"
                                   "status: {podIP: %s, phase: Running}\n";

typedef struct tdir {
    char path[64];
} tdir;

static void tdir_make(tdir *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/wf-src-XXXXXX");
    assert_non_null(mkdtemp(d->path));
}

static void put(const tdir *d, const char *name, const char *text)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", d->path, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_vs(const tdir *d, const char *w1, const char *w2)
{
    char buf[1024];
    snprintf(buf, sizeof buf, VS_FMT, w1, w2);
    put(d, "vs.yaml", buf);
}

static void put_pod(const tdir *d, const char *ip)
{
    char buf[512];
    snprintf(buf, sizeof buf, POD_FMT, ip);
    put(d, "pod.yaml", buf);
}

static void tdir_remove(tdir *d)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", d->path);
    assert_int_equal(system(cmd), 0);
}

static wf_dir_source_opts opts_for(const tdir *d, const char **dirs)
{
    dirs[0] = d->path;
    return (wf_dir_source_opts){.dirs = dirs, .n_dirs = 1};
}

static const wf_snap_res *res_of(const wf_snapshot *s, const char *key)
{
    void **slot = wf_strmap_slot(s->res, key, false);
    return slot ? *slot : NULL;
}

static void test_last_good_resource(void **state)
{
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put_vs(&d, "20", "80");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    assert_non_null(s1);
    assert_int_equal(s1->n_errors, 0);
    assert_int_equal(s1->change, WF_CHANGE_FULL);
    const wf_snap_res *good = res_of(s1, "VirtualService/shop/catalog");
    assert_non_null(good);
    assert_non_null(strstr(good->json, "\"weight\":20"));

    put_vs(&d, "\"abc\"", "80");
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_non_null(s2);
    assert_true(s2->n_errors >= 1);
    const wf_config_error *e = &s2->errors[0];
    assert_non_null(strstr(e->file, "vs.yaml"));
    assert_int_equal(e->line, 9);
    assert_string_equal(e->field, "spec.http[0].route[0].weight");
    assert_string_equal(e->resource, "VirtualService shop/catalog");
    assert_true(e->kept_last_good);
    const wf_snap_res *kept = res_of(s2, "VirtualService/shop/catalog");
    assert_non_null(kept);
    assert_true(kept->stale);
    assert_non_null(strstr(kept->json, "\"weight\":20"));
    /* the store served has the old VirtualService (and the Service) */
    const wf_resource *vs = wf_store_find(s2->store, WF_KIND_VIRTUALSERVICE, "shop", "catalog");
    assert_non_null(vs);
    assert_non_null(wf_store_find(s2->store, WF_KIND_SERVICE, "shop", "catalog"));
    /* nothing the proxies see changed */
    assert_int_equal(s2->change, WF_CHANGE_NONE);

    /* fixed again: a real change */
    put_vs(&d, "30", "70");
    wf_snapshot *s3 = wf_source_build(&o, s2, 0);
    assert_int_equal(s3->n_errors, 0);
    assert_int_equal(s3->change, WF_CHANGE_FULL);
    assert_true(wf_snapshot_changed(s3, "VirtualService/shop/catalog"));
    assert_false(res_of(s3, "VirtualService/shop/catalog")->stale);
    wf_snapshot_unref(s1);
    wf_snapshot_unref(s2);
    wf_snapshot_unref(s3);
    tdir_remove(&d);
}

/* The same resource in two files: the later file wins (as kubectl apply -f DIR), and the
 * conflict is reported. */
static void test_duplicate_resource_is_reported(void **state)
{
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put_vs(&d, "20", "80");
    char buf[1024];
    snprintf(buf, sizeof buf, VS_FMT, "50", "50");
    put(&d, "zz-copy.yaml", buf);
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s = wf_source_build(&o, NULL, 0);
    assert_non_null(s);
    assert_int_equal(s->n_errors, 1);
    assert_non_null(strstr(s->errors[0].file, "zz-copy.yaml"));
    assert_string_equal(s->errors[0].resource, "VirtualService shop/catalog");
    assert_non_null(strstr(s->errors[0].message, "vs.yaml"));
    assert_non_null(strstr(res_of(s, "VirtualService/shop/catalog")->json, "\"weight\":50"));
    wf_snapshot_unref(s);
    tdir_remove(&d);
}

/* A MeshConfig value Istio would refuse is reported, and the last good MeshConfig (or, at the
 * start, Istio's defaults) stays. */
static void test_invalid_meshconfig_is_reported(void **state)
{
    tdir d, m;
    const char *dirs[1];
    tdir_make(&d);
    tdir_make(&m);
    put(&d, "svc.yaml", SVC);
    char mesh[160];
    snprintf(mesh, sizeof mesh, "%s/mesh.yaml", m.path);
    put(&m, "mesh.yaml", "outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n");
    wf_dir_source_opts o = opts_for(&d, dirs);
    o.mesh_file = mesh;
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    assert_int_equal(s1->n_errors, 0);
    assert_string_equal(wf_meshcfg_str(s1->mesh, "outboundTrafficPolicy.mode"), "REGISTRY_ONLY");
    put(&m, "mesh.yaml", "outboundTrafficPolicy: {mode: registry_only}\n");
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_int_equal(s2->n_errors, 1);
    assert_string_equal(s2->errors[0].resource, "MeshConfig");
    assert_non_null(strstr(s2->errors[0].message, "outboundTrafficPolicy.mode"));
    assert_true(s2->errors[0].kept_last_good);
    assert_string_equal(wf_meshcfg_str(s2->mesh, "outboundTrafficPolicy.mode"), "REGISTRY_ONLY");
    put(&m, "mesh.yaml", "accessLogEncoding: XML\n");
    wf_snapshot *s3 = wf_source_build(&o, NULL, 0);
    assert_int_equal(s3->n_errors, 1);
    assert_false(s3->errors[0].kept_last_good);
    const char *enc = wf_meshcfg_str(s3->mesh, "accessLogEncoding"); /* Istio's defaults */
    assert_true(!enc || strcmp(enc, "XML") != 0);
    put(&m, "mesh.yaml", "pathNormalization: {normalization: MERGE}\n");
    wf_snapshot *s4 = wf_source_build(&o, s1, 0);
    assert_int_equal(s4->n_errors, 1);
    assert_string_equal(s4->errors[0].message,
                        "pathNormalization.normalization: invalid value \"MERGE\" (want DEFAULT, "
                        "NONE, BASE, MERGE_SLASHES or DECODE_AND_MERGE_SLASHES)");
    assert_null(wf_meshcfg_str(s4->mesh, "pathNormalization.normalization"));
    wf_snapshot_unref(s4);
    wf_snapshot_unref(s1);
    wf_snapshot_unref(s2);
    wf_snapshot_unref(s3);
    tdir_remove(&d);
    tdir_remove(&m);
}

static void test_new_invalid_resource_is_left_out(void **state)
{
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put_vs(&d, "\"abc\"", "80");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s = wf_source_build(&o, NULL, 0);
    assert_true(s->n_errors >= 1);
    assert_false(s->errors[0].kept_last_good);
    assert_null(wf_store_find(s->store, WF_KIND_VIRTUALSERVICE, "shop", "catalog"));
    wf_snapshot_unref(s);
    tdir_remove(&d);
}

static void test_unparsable_file_keeps_resources(void **state)
{
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put_vs(&d, "20", "80");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    put(&d, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: [\n");
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_true(s2->n_errors >= 1);
    assert_non_null(strstr(s2->errors[0].file, "svc.yaml"));
    assert_string_equal(s2->errors[0].resource, "");
    assert_true(s2->errors[0].line > 0);
    assert_true(s2->errors[0].kept_last_good);
    assert_non_null(wf_store_find(s2->store, WF_KIND_SERVICE, "shop", "catalog"));
    assert_true(res_of(s2, "Service/shop/catalog")->stale);
    assert_int_equal(s2->change, WF_CHANGE_NONE);
    wf_snapshot_unref(s1);
    wf_snapshot_unref(s2);
    tdir_remove(&d);
}

static void test_classification(void **state)
{
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put_pod(&d, "127.10.0.1");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_int_equal(s2->change, WF_CHANGE_NONE);
    put_pod(&d, "127.10.0.2");
    wf_snapshot *s3 = wf_source_build(&o, s2, 0);
    assert_int_equal(s3->change, WF_CHANGE_ENDPOINTS);
    assert_int_equal(s3->n_changed, 1);
    assert_string_equal(s3->changed[0], "Pod/shop/catalog-1");
    put(&d, "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: catalog, namespace: "
        "shop}\nspec:\n  ports: [{port: 8080}]\n");
    wf_snapshot *s4 = wf_source_build(&o, s3, 0);
    assert_int_equal(s4->change, WF_CHANGE_FULL);
    char p[128];
    snprintf(p, sizeof p, "%s/pod.yaml", d.path);
    unlink(p);
    wf_snapshot *s5 = wf_source_build(&o, s4, 0);
    assert_int_equal(s5->change, WF_CHANGE_ENDPOINTS); /* a removed pod */
    wf_snapshot *all[] = {s1, s2, s3, s4, s5};
    for (int i = 0; i < 5; i++)
        wf_snapshot_unref(all[i]);
    tdir_remove(&d);
}

/* A pod with a service account no workload had is a full change: clusters carry the accounts
 * as SAN matchers (Istio's EndpointIndex pushes full when a service's accounts change); one
 * more replica of a known identity, or a workload going away, stays endpoints-only. */
static void test_new_identity_is_full(void **state)
{
    (void)state;
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put_pod(&d, "127.10.0.1");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    char buf[512];
    snprintf(buf, sizeof buf, POD_FMT, "127.10.0.2");
    char *n = strstr(buf, "catalog-1");
    assert_non_null(n);
    n[8] = '2'; /* catalog-2: the same identity */
    put(&d, "pod2.yaml", buf);
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_int_equal(s2->change, WF_CHANGE_ENDPOINTS);
    put(&d, "pod3.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: catalog-3, namespace: shop, labels: {app: "
        "catalog}}\nspec: {serviceAccountName: catalog-v2}\nstatus: {podIP: 127.10.0.3, "
        "phase: Running}\n");
    wf_snapshot *s3 = wf_source_build(&o, s2, 0);
    assert_int_equal(s3->change, WF_CHANGE_FULL);
    assert_int_equal(s3->n_changed, 1);
    char p[128];
    snprintf(p, sizeof p, "%s/pod3.yaml", d.path);
    unlink(p);
    wf_snapshot *s4 = wf_source_build(&o, s3, 0);
    assert_int_equal(s4->change, WF_CHANGE_ENDPOINTS);
    wf_snapshot *all[] = {s1, s2, s3, s4};
    for (int i = 0; i < 4; i++)
        wf_snapshot_unref(all[i]);
    tdir_remove(&d);
}

/* ---- the watching source on a loop ------------------------------------------------------- */

typedef struct watch_env {
    uv_loop_t loop;
    uv_timer_t tick;
    wf_config_source *src;
    tdir d;
    int deliveries;
    uint64_t last_delivery_ms;
    int pokes_left;
    uint64_t first_poke_ms, last_poke_ms;
} watch_env;

static void on_change(wf_snapshot *s, void *ud)
{
    watch_env *e = ud;
    e->deliveries++;
    e->last_delivery_ms = uv_now(&e->loop);
}

static void on_tick(uv_timer_t *t)
{
    watch_env *e = t->data;
    if (e->pokes_left-- > 0) {
        if (!e->first_poke_ms)
            e->first_poke_ms = uv_now(&e->loop);
        e->last_poke_ms = uv_now(&e->loop);
        wf_dir_source_poke(e->src);
    } else {
        uv_timer_stop(t);
    }
}

static void run_for(watch_env *e, uint64_t ms)
{
    uint64_t end = uv_now(&e->loop) + ms;
    while (uv_now(&e->loop) < end) {
        uv_run(&e->loop, UV_RUN_NOWAIT);
        usleep(2000);
        uv_update_time(&e->loop);
    }
}

static void watch_setup(watch_env *e, uint64_t after, uint64_t max)
{
    memset(e, 0, sizeof *e);
    tdir_make(&e->d);
    put(&e->d, "svc.yaml", SVC);
    assert_int_equal(uv_loop_init(&e->loop), 0);
    const char *dirs[] = {e->d.path};
    wf_dir_source_opts o = {.dirs = dirs,
                            .n_dirs = 1,
                            .debounce_after_ms = after,
                            .debounce_max_ms = max,
                            .rescan_ms = 60000};
    assert_int_equal(wf_dir_source_new(&e->loop, &o, &e->src), 0);
    e->src->on_change = on_change;
    e->src->on_change_ud = e;
    char err[256];
    assert_int_equal(e->src->start(e->src, err, sizeof err), 0);
    assert_int_equal(e->deliveries, 1); /* the first snapshot, synchronously */
    assert_non_null(e->src->current(e->src));
    uv_timer_init(&e->loop, &e->tick);
    e->tick.data = e;
}

static void watch_teardown(watch_env *e)
{
    e->src->stop(e->src);
    uv_close((uv_handle_t *)&e->tick, NULL);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    tdir_remove(&e->d);
}

static void test_debounce_quiet(void **state)
{
    watch_env e;
    watch_setup(&e, 80, 5000);
    e.pokes_left = 4;
    uv_timer_start(&e.tick, on_tick, 10, 20);
    run_for(&e, 400);
    assert_int_equal(e.deliveries, 2); /* four events, one build */
    assert_true(e.last_delivery_ms - e.last_poke_ms >= 75);
    watch_teardown(&e);
}

static void test_debounce_max(void **state)
{
    watch_env e;
    watch_setup(&e, 100, 250);
    e.pokes_left = 40; /* an event every 30 ms for 1.2 s: never 100 ms of quiet */
    uv_timer_start(&e.tick, on_tick, 5, 30);
    run_for(&e, 400);
    assert_int_equal(e.deliveries, 2);
    uint64_t waited = e.last_delivery_ms - e.first_poke_ms;
    assert_true(waited >= 240 && waited <= 450);
    run_for(&e, 1200);
    watch_teardown(&e);
}

static void test_fs_event_rebuilds(void **state)
{
    watch_env e;
    watch_setup(&e, 20, 1000);
    put_vs(&e.d, "20", "80");
    for (int i = 0; i < 150 && e.deliveries < 2; i++)
        run_for(&e, 10);
    assert_int_equal(e.deliveries, 2);
    wf_snapshot *s = e.src->current(e.src);
    assert_non_null(wf_store_find(s->store, WF_KIND_VIRTUALSERVICE, "shop", "catalog"));
    assert_int_equal(s->change, WF_CHANGE_FULL);
    watch_teardown(&e);
}

static void test_unreadable_dir_fails_start(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    const char *dirs[] = {"/nonexistent/weft-config"};
    wf_dir_source_opts o = {.dirs = dirs, .n_dirs = 1};
    wf_config_source *src;
    assert_int_equal(wf_dir_source_new(&loop, &o, &src), 0);
    char err[256];
    assert_int_equal(src->start(src, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/weft-config"));
    src->stop(src);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Fields weft does not implement are served and reported as warnings (never silently), not as
 * errors: the resource is not stale and nothing is kept back. */
static void test_not_implemented_fields_are_warnings(void **state)
{
    (void)state;
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put(&d, "pa.yaml",
        "apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\n"
        "metadata: {name: default, namespace: shop}\nspec:\n  url: oci://example.com/a:1\n"
        "  phase: AUTHN\n");
    put(&d, "dr.yaml",
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
        "metadata: {name: catalog, namespace: shop}\nspec:\n  host: catalog\n"
        "  trafficPolicy:\n    loadBalancer:\n      consistentHash: {useSourceIp: true}\n");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    assert_non_null(s1);
    assert_int_equal(s1->n_errors, 0);
    assert_int_equal(s1->n_warnings, 2);
    const wf_config_error *w = NULL;
    for (size_t i = 0; i < s1->n_warnings; i++)
        if (strstr(s1->warnings[i].resource, "WasmPlugin"))
            w = &s1->warnings[i];
    assert_non_null(w);
    assert_string_equal(w->code, "WFT0002");
    assert_string_equal(w->resource, "WasmPlugin shop/default");
    assert_string_equal(w->field, "spec.phase");
    assert_int_equal(w->line, 6);
    assert_non_null(strstr(w->file, "pa.yaml"));
    assert_non_null(strstr(w->message, "is not enforced by weft"));
    const wf_snap_res *dr = res_of(s1, "DestinationRule/shop/catalog");
    assert_non_null(dr);
    assert_false(dr->stale);
    /* the warning goes when the field goes */
    put(&d, "dr.yaml",
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
        "metadata: {name: catalog, namespace: shop}\nspec:\n  host: catalog\n");
    wf_snapshot *s2 = wf_source_build(&o, s1, 0);
    assert_int_equal(s2->n_warnings, 1);
    assert_string_equal(s2->warnings[0].code, "WFT0002");
    /* a bad edit: the last good WasmPlugin (AUTHN) is still served, and still said to be
     * unenforced */
    put(&d, "pa.yaml",
        "apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\n"
        "metadata: {name: default, namespace: shop}\nspec:\n  url: oci://example.com/a:1\n"
        "  phase: AUTHNX\n");
    wf_snapshot *s3 = wf_source_build(&o, s2, 0);
    assert_int_equal(s3->n_errors, 1);
    assert_int_equal(s3->n_warnings, 1);
    assert_string_equal(s3->warnings[0].code, "WFT0002");
    assert_string_equal(s3->warnings[0].field, "spec.phase");
    wf_snapshot_unref(s1);
    wf_snapshot_unref(s2);
    wf_snapshot_unref(s3);
    tdir_remove(&d);
}

/* MeshConfig fields weft does not implement are warnings (the file's, not Istio's defaults). */
static void test_meshconfig_not_implemented_is_a_warning(void **state)
{
    (void)state;
    tdir d, m;
    const char *dirs[1];
    tdir_make(&d);
    tdir_make(&m);
    put(&d, "svc.yaml", SVC);
    char mesh[160];
    snprintf(mesh, sizeof mesh, "%s/mesh.yaml", m.path);
    put(&m, "mesh.yaml", "accessLogFile: /dev/stdout\nenableTracing: true\n");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s0 = wf_source_build(&o, NULL, 0); /* no file: Istio's defaults, no warning */
    assert_int_equal(s0->n_warnings, 0);
    o.mesh_file = mesh;
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    assert_int_equal(s1->n_errors, 0);
    assert_int_equal(s1->n_warnings, 1);
    assert_string_equal(s1->warnings[0].resource, "MeshConfig");
    assert_string_equal(s1->warnings[0].field, "enableTracing");
    assert_string_equal(s1->warnings[0].code, "WFT0001");
    assert_int_equal(s1->warnings[0].line, 2);
    assert_non_null(strstr(s1->warnings[0].file, "mesh.yaml"));
    wf_snapshot_unref(s0);
    wf_snapshot_unref(s1);
    tdir_remove(&d);
    tdir_remove(&m);
}

/* An object the API server would refuse for its name is a config error, not served. */
static void test_invalid_names_are_errors(void **state)
{
    (void)state;
    tdir d;
    const char *dirs[1];
    tdir_make(&d);
    put(&d, "svc.yaml", SVC);
    put(&d, "bad.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {namespace: shop}\n"
        "spec: {hosts: [catalog], http: [{route: [{destination: {host: catalog}}]}]}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: Catalog_2, namespace: shop}\n"
        "spec: {ports: [{name: http, port: 80}]}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: 1svc.dotted, namespace: shop}\n"
        "spec: {ports: [{name: http, port: 80}]}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_CM, namespace: shop}\n"
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
        "metadata: {name: 'system:reader'}\n");
    wf_dir_source_opts o = opts_for(&d, dirs);
    wf_snapshot *s1 = wf_source_build(&o, NULL, 0);
    assert_int_equal(s1->n_errors, 4);
    assert_non_null(strstr(s1->errors[3].message, "RFC 1123 subdomain"));
    assert_string_equal(s1->errors[0].field, "metadata.name");
    assert_non_null(strstr(s1->errors[2].message, "DNS-1035 label"));
    assert_non_null(strstr(s1->errors[0].message, "Required value"));
    assert_string_equal(s1->errors[1].resource, "Service shop/Catalog_2");
    assert_non_null(strstr(s1->errors[1].message, "DNS-1035 label")); /* a Service name */
    assert_null(wf_store_find(s1->store, WF_KIND_SERVICE, "shop", "Catalog_2"));
    wf_snapshot_unref(s1);
    tdir_remove(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_good_resource),
        cmocka_unit_test(test_not_implemented_fields_are_warnings),
        cmocka_unit_test(test_new_invalid_resource_is_left_out),
        cmocka_unit_test(test_duplicate_resource_is_reported),
        cmocka_unit_test(test_invalid_meshconfig_is_reported),
        cmocka_unit_test(test_invalid_names_are_errors),
        cmocka_unit_test(test_meshconfig_not_implemented_is_a_warning),
        cmocka_unit_test(test_unparsable_file_keeps_resources),
        cmocka_unit_test(test_classification),
        cmocka_unit_test(test_new_identity_is_full),
        cmocka_unit_test(test_debounce_quiet),
        cmocka_unit_test(test_debounce_max),
        cmocka_unit_test(test_fs_event_rebuilds),
        cmocka_unit_test(test_unreadable_dir_fails_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
