/*
 * test_localmesh_netns.c - the pod network of `weftctl up --pod-network netns`
 * (cli/localmesh_netns.h) as planned: the mesh's namespace and link names from its state
 * folder, the pod IPs on 10.10.0.0/16, and what the plan gives each pod and process (its
 * namespace, pilot's address on the host link, DNS capture in the proxy's metadata, uid 1337
 * with --capture), next to explicit mode, which stays as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/localmesh_netns.h"
#include "cli/localmesh_plan.h"
#include "cli/localmesh_state.h"
#include "harness.h"

#define STATE "/m/state"

static const char *const MESH =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: istioinaction\n"
    "  labels: {istio-injection: enabled}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: catalog}\n"
    "spec:\n  ports: [{name: http, port: 80, targetPort: 3000}]\n  selector: {app: catalog}\n"
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: catalog\n"
    "spec:\n  replicas: 2\n  selector: {matchLabels: {app: catalog}}\n"
    "  template:\n    metadata: {labels: {app: catalog}}\n    spec:\n      containers:\n"
    "      - image: istioinaction/catalog\n        name: catalog\n"
    "        ports: [{containerPort: 3000}]\n"
    "---\napiVersion: networking.istio.io/v1alpha3\nkind: Gateway\n"
    "metadata: {name: gw, namespace: istioinaction}\n"
    "spec:\n  selector: {istio: ingressgateway}\n  servers:\n"
    "  - hosts: ['*']\n    port: {number: 80, name: http, protocol: HTTP}\n";

static void names_from_state(void **state)
{
    (void)state;
    wf_lm_netns_names a, b, c;
    wf_lm_netns_names_of("/tmp/x/state", &a);
    wf_lm_netns_names_of("/tmp/x/state", &b);
    wf_lm_netns_names_of("/tmp/y/state", &c);
    assert_string_equal(a.prefix, b.prefix); /* the same state folder: the same names */
    assert_string_not_equal(a.prefix, c.prefix);
    assert_int_equal(strlen(a.hash), 12);
    for (const char *h = a.hash; *h; h++)
        assert_non_null(strchr("0123456789abcdef", *h));
    char want[64];
    snprintf(want, sizeof want, "weft-%s-", a.hash);
    assert_string_equal(a.prefix, want);
    snprintf(want, sizeof want, "weft-%s-node", a.hash);
    assert_string_equal(a.node, want); /* the node namespace starts with the prefix too */
    snprintf(want, sizeof want, "weft%.8s", a.hash);
    assert_string_equal(a.host_link, want);
    assert_true(strlen(a.host_link) < 16); /* IFNAMSIZ */
}

static void pod_names(void **state)
{
    (void)state;
    wf_lm_netns_names n;
    wf_lm_netns_names_of("/s", &n);
    char out[300], want[300];
    assert_int_equal(
        wf_lm_netns_pod_name(&n, "catalog-6d8f4bc9fb-x2k7q", "istioinaction", out, sizeof out), 0);
    snprintf(want, sizeof want, "%scatalog-6d8f4bc9fb-x2k7q.istioinaction", n.prefix);
    assert_string_equal(out, want);
    /* not a file name under /run/netns, or too long */
    assert_int_equal(wf_lm_netns_pod_name(&n, "a/b", "ns", out, sizeof out), -1);
    assert_int_equal(wf_lm_netns_pod_name(&n, "a", "", out, sizeof out), -1);
    assert_int_equal(wf_lm_netns_pod_name(&n, "catalog", "istioinaction", out, 20), -1);
}

static void pod_ips(void **state)
{
    (void)state;
    char ip[16];
    wf_lm_netns_pod_ip(0, ip);
    assert_string_equal(ip, "10.10.0.2"); /* 10.10.0.1 is the node's bridge */
    wf_lm_netns_pod_ip(252, ip);
    assert_string_equal(ip, "10.10.0.254");
    wf_lm_netns_pod_ip(253, ip);
    assert_string_equal(ip, "10.10.1.2");
    wf_lm_netns_pod_ip(253 * 250 - 1, ip);
    assert_string_equal(ip, "10.10.249.254"); /* never the host's 10.10.255.254 */
}

typedef struct fixture {
    wf_store *store;
    wf_lm_plan *plan;
    wf_strbuf err;
} fixture;

static void plan(fixture *f, wf_lm_podnet podnet, bool capture)
{
    wf_lm_opts o = {.dir = "/m",
                    .state = STATE,
                    .bin_dir = "/nonexistent-bin",
                    .env_app = "/opt/weft/weft-app",
                    .env_proxy = "/opt/weft/weft-proxy",
                    .podnet = podnet,
                    .capture = capture};
    memset(&f->err, 0, sizeof f->err);
    f->store = wf_test_load_store(NULL, MESH, NULL);
    if (wf_lm_plan_from_store(&o, f->store, &f->plan, &f->err) != 0)
        fail_msg("plan failed: %s", wf_strbuf_cstr(&f->err));
}

static void done(fixture *f)
{
    wf_lm_plan_free(f->plan);
    wf_store_free(f->store);
    wf_strbuf_free(&f->err);
}

static bool has_env(const wf_lm_proc *proc, const char *kv)
{
    for (size_t i = 0; i < proc->nenv; i++)
        if (strcmp(proc->env[i], kv) == 0)
            return true;
    return false;
}

static bool has_arg_pair(const wf_lm_proc *proc, const char *flag, const char *value)
{
    for (size_t i = 0; proc->argv[i] && proc->argv[i + 1]; i++)
        if (strcmp(proc->argv[i], flag) == 0 && strcmp(proc->argv[i + 1], value) == 0)
            return true;
    return false;
}

static void netns_plan(void **state)
{
    (void)state;
    fixture f;
    plan(&f, WF_LM_PODNET_NETNS, false);
    wf_lm_netns_names n;
    wf_lm_netns_names_of(STATE, &n);
    assert_string_equal(f.plan->netns_prefix, n.prefix);
    assert_int_equal(f.plan->npods, 3); /* the gateway and two catalog pods */
    for (size_t i = 0; i < f.plan->npods; i++) {
        const wf_lm_pod *pod = &f.plan->pods[i];
        char ip[16], ns[300];
        wf_lm_netns_pod_ip(i, ip);
        assert_string_equal(pod->ip, ip);
        assert_int_equal(wf_lm_netns_pod_name(&n, pod->name, pod->ns, ns, sizeof ns), 0);
        assert_string_equal(pod->netns, ns);
        assert_true(strncmp(pod->localhost, "127.11.", 7) == 0); /* the app's, in its pod */
    }
    assert_string_equal(f.plan->pods[0].ip, "10.10.0.2"); /* the gateway first */
    assert_true(f.plan->pods[0].gateway);
    assert_string_equal(f.plan->secure_addr, "10.10.255.254:15012");
    for (size_t i = 0; i < f.plan->nprocs; i++) {
        const wf_lm_proc *proc = &f.plan->procs[i];
        assert_int_equal(proc->uid, -1);
        if (proc->kind == WF_LM_PILOT) { /* pilot stays on the host, its 15012 on the link */
            assert_null(proc->netns);
            assert_true(has_arg_pair(proc, "--secureGRPCAddr", "10.10.255.254:15012"));
            assert_true(has_arg_pair(proc, "--monitoringAddr", "127.0.0.1:15014"));
            continue;
        }
        const wf_lm_pod *pod = &f.plan->pods[proc->pod];
        assert_string_equal(proc->netns, pod->netns); /* app and proxy in the pod's namespace */
        if (proc->kind == WF_LM_PROXY || proc->kind == WF_LM_GATEWAY) {
            assert_true(has_env(proc, "CA_ADDR=10.10.255.254:15012"));
            assert_true(has_env(proc, "ISTIO_META_DNS_CAPTURE=true"));
            char status[40];
            snprintf(status, sizeof status, "%s:15020", pod->ip);
            assert_true(has_arg_pair(proc, "--status-address", status));
        }
    }
    /* the bootstrap's xds-grpc cluster reaches pilot on the host link */
    json_t *bs = wf_lm_bootstrap_json(f.plan, &f.plan->pods[1]);
    assert_non_null(bs);
    char *text = json_dumps(bs, 0);
    assert_non_null(strstr(text, "\"address\": \"10.10.255.254\""));
    free(text);
    json_decref(bs);
    /* mesh.json says how the pods are networked */
    json_t *mesh = wf_lm_mesh_json(f.plan, NULL, 0);
    json_t *net = json_object_get(mesh, "podNetwork");
    assert_string_equal(json_string_value(json_object_get(net, "mode")), "netns");
    assert_string_equal(json_string_value(json_object_get(net, "prefix")), n.prefix);
    assert_string_equal(json_string_value(json_object_get(net, "cidr")), "10.10.0.0/16");
    assert_string_equal(json_string_value(json_object_get(net, "hostLink")), n.host_link);
    json_t *pod0 = json_array_get(json_object_get(mesh, "pods"), 0);
    assert_string_equal(json_string_value(json_object_get(pod0, "netns")), f.plan->pods[0].netns);
    json_decref(mesh);
    done(&f);
}

static void capture_runs_sidecars_as_1337(void **state)
{
    (void)state;
    fixture f;
    plan(&f, WF_LM_PODNET_NETNS, true);
    assert_true(f.plan->capture);
    size_t sidecars = 0;
    for (size_t i = 0; i < f.plan->nprocs; i++) {
        const wf_lm_proc *proc = &f.plan->procs[i];
        /* the sidecar as Istio's proxy uid; the gateway (no capture rules) and apps as before */
        assert_int_equal(proc->uid, proc->kind == WF_LM_PROXY ? WF_LM_CAPTURE_UID : -1);
        sidecars += proc->kind == WF_LM_PROXY;
    }
    assert_int_equal(sidecars, 2);
    done(&f);
}

static void explicit_stays(void **state)
{
    (void)state;
    fixture f;
    plan(&f, WF_LM_PODNET_EXPLICIT, true); /* --capture means nothing without netns */
    assert_false(f.plan->capture);
    assert_null(f.plan->netns_prefix);
    assert_string_equal(f.plan->secure_addr, "127.0.0.1:15012");
    for (size_t i = 0; i < f.plan->npods; i++) {
        assert_null(f.plan->pods[i].netns);
        assert_true(strncmp(f.plan->pods[i].ip, "127.10.", 7) == 0);
    }
    for (size_t i = 0; i < f.plan->nprocs; i++) {
        assert_null(f.plan->procs[i].netns);
        assert_int_equal(f.plan->procs[i].uid, -1);
        assert_false(has_env(&f.plan->procs[i], "ISTIO_META_DNS_CAPTURE=true"));
        if (f.plan->procs[i].kind == WF_LM_PROXY)
            assert_true(has_env(&f.plan->procs[i], "CA_ADDR=127.0.0.1:15012"));
    }
    json_t *mesh = wf_lm_mesh_json(f.plan, NULL, 0);
    json_t *net = json_object_get(mesh, "podNetwork");
    assert_string_equal(json_string_value(json_object_get(net, "mode")), "explicit");
    json_decref(mesh);
    done(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_from_state),
        cmocka_unit_test(pod_names),
        cmocka_unit_test(pod_ips),
        cmocka_unit_test(netns_plan),
        cmocka_unit_test(capture_runs_sidecars_as_1337),
        cmocka_unit_test(explicit_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
