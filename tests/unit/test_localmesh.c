/*
 * test_localmesh.c - planning the local mesh from manifests (cli/localmesh_plan.h) and the
 * files written for it (cli/localmesh_state.h): pods and their names, addresses and
 * namespaces, sidecar injection, the image map (weft-local.yaml), the processes' command
 * lines and environment, MeshConfig and proxyMetadata, bootstraps and Pod objects, and the
 * errors that name file, line and field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/localmesh_plan.h"
#include "cli/localmesh_state.h"
#include "cli/localmesh_tokens.h"
#include "pilot/ca_token.h"
#include "harness.h"

#define DIR   "/m"
#define STATE "/m/.weft"

/* The book's catalog (services/catalog/kubernetes/catalog.yaml and ch10), abridged. */
static const char *const BOOK =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: istioinaction\n"
    "  labels: {istio-injection: enabled}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: catalog, labels: {app: catalog}}\n"
    "spec:\n  ports: [{name: http, port: 80, protocol: TCP, targetPort: 3000}]\n"
    "  selector: {app: catalog}\n"
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: catalog\n"
    "spec:\n  replicas: 1\n  selector: {matchLabels: {app: catalog, version: v1}}\n"
    "  template:\n    metadata: {labels: {app: catalog, version: v1}}\n    spec:\n"
    "      serviceAccountName: catalog\n      containers:\n"
    "      - env:\n        - name: KUBERNETES_NAMESPACE\n          valueFrom:\n"
    "            fieldRef: {fieldPath: metadata.namespace}\n"
    "        image: istioinaction/catalog:latest\n        name: catalog\n"
    "        ports: [{containerPort: 3000, name: http, protocol: TCP}]\n"
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: catalog-v2}\n"
    "spec:\n  replicas: 2\n  selector: {matchLabels: {app: catalog, version: v2}}\n"
    "  template:\n    metadata: {labels: {app: catalog, version: v2}}\n    spec:\n"
    "      containers:\n      - image: istioinaction/catalog\n        name: catalog\n"
    "        ports: [{containerPort: 3000, name: http}]\n"
    "---\napiVersion: networking.istio.io/v1alpha3\nkind: Gateway\n"
    "metadata: {name: catalog-gateway, namespace: istioinaction}\n"
    "spec:\n  selector: {istio: ingressgateway}\n  servers:\n"
    "  - hosts: [catalog.istioinaction.io]\n    port: {number: 80, name: http, protocol: HTTP}\n";

static const char *const IMAGES =
    "---\napiVersion: weft.dev/v1\nkind: LocalImages\nmetadata: {name: local}\nimages:\n"
    "  istioinaction/catalog:\n    command: [weft-app, --name, catalog]\n"
    "    env: {CATALOG_MODE: demo}\n";

typedef struct fixture {
    wf_store *store;
    wf_lm_plan *plan;
    wf_strbuf err;
} fixture;

static int plan_opts(fixture *f, const char *yaml, const wf_lm_opts *extra)
{
    wf_lm_opts o = {.dir = DIR,
                    .state = STATE,
                    .bin_dir = "/nonexistent-bin",
                    .env_app = "/opt/weft/weft-app",
                    .env_proxy = "/opt/weft/weft-proxy"};
    if (extra) {
        o.ns = extra->ns;
        o.env_pilot = extra->env_pilot;
        o.podnet = extra->podnet;
        o.capture = extra->capture;
    }
    memset(&f->err, 0, sizeof f->err);
    f->store = wf_test_load_store(NULL, yaml, NULL);
    return wf_lm_plan_from_store(&o, f->store, &f->plan, &f->err);
}

static void plan_ok(fixture *f, const char *yaml, const wf_lm_opts *extra)
{
    if (plan_opts(f, yaml, extra) != 0)
        fail_msg("plan failed: %s", wf_strbuf_cstr(&f->err));
}

static void plan_fails(const char *yaml, const char *want)
{
    fixture f;
    assert_int_equal(plan_opts(&f, yaml, NULL), -1);
    assert_null(f.plan);
    if (!strstr(wf_strbuf_cstr(&f.err), want))
        fail_msg("error \"%s\" lacks \"%s\"", wf_strbuf_cstr(&f.err), want);
    wf_strbuf_free(&f.err);
    wf_store_free(f.store);
}

static void done(fixture *f)
{
    wf_lm_plan_free(f->plan);
    wf_store_free(f->store);
    wf_strbuf_free(&f->err);
}

static char *concat(const char *a, const char *b)
{
    char *s = malloc(strlen(a) + strlen(b) + 1);
    assert_non_null(s);
    return strcat(strcpy(s, a), b);
}

static const wf_lm_proc *proc_named(const wf_lm_plan *p, const char *name)
{
    for (size_t i = 0; i < p->nprocs; i++)
        if (strcmp(p->procs[i].name, name) == 0)
            return &p->procs[i];
    fail_msg("no process %s", name);
    return NULL;
}

static bool has_arg_pair(const wf_lm_proc *proc, const char *flag, const char *value)
{
    for (size_t i = 0; proc->argv[i] && proc->argv[i + 1]; i++)
        if (strcmp(proc->argv[i], flag) == 0 && strcmp(proc->argv[i + 1], value) == 0)
            return true;
    return false;
}

static bool has_env(const wf_lm_proc *proc, const char *kv)
{
    for (size_t i = 0; i < proc->nenv; i++)
        if (strcmp(proc->env[i], kv) == 0)
            return true;
    return false;
}

static const char *label(const wf_lm_pod *pod, const char *key)
{
    for (size_t i = 0; i < pod->nlabels; i++)
        if (strcmp(pod->labels[i].key, key) == 0)
            return pod->labels[i].value;
    return NULL;
}

/* ---- pods ---- */

static void book_pods(void **state)
{
    fixture f;
    char *yaml = concat(BOOK, IMAGES);
    plan_ok(&f, yaml, NULL);
    wf_lm_plan *p = f.plan;
    assert_string_equal(p->default_ns, "istioinaction");
    assert_int_equal(p->npods, 4);
    /* the gateway we add has the first address */
    assert_int_equal(p->gateway, 0);
    const wf_lm_pod *gw = &p->pods[0];
    assert_true(gw->gateway);
    assert_false(gw->sidecar);
    assert_string_equal(gw->ns, "istio-system");
    assert_string_equal(gw->ip, "127.10.0.2");
    assert_string_equal(label(gw, "istio"), "ingressgateway");
    assert_string_equal(label(gw, "app"), "istio-ingressgateway");
    assert_int_equal(strncmp(gw->name, "istio-ingressgateway-", 21), 0);
    assert_true(p->gateway_service);
    /* catalog v1 then two v2 replicas, with the sidecar: the namespace is labelled */
    const wf_lm_pod *v1 = &p->pods[1];
    assert_string_equal(v1->ns, "istioinaction");
    assert_string_equal(v1->ip, "127.10.0.3");
    assert_string_equal(v1->localhost, "127.11.0.3");
    assert_true(v1->sidecar);
    assert_string_equal(label(v1, "version"), "v1");
    assert_string_equal(v1->cluster, "catalog.istioinaction");
    assert_string_equal(v1->service_account, "catalog");
    /* catalog-<hash 10>-<suffix 5>, the hash also as pod-template-hash */
    assert_int_equal(strlen(v1->name), strlen("catalog-") + 10 + 1 + 5);
    assert_int_equal(strncmp(v1->name + 8, label(v1, "pod-template-hash"), 10), 0);
    assert_int_equal(strncmp(p->pods[2].name, "catalog-v2-", 11), 0);
    assert_string_not_equal(p->pods[2].name, p->pods[3].name);
    assert_string_equal(p->pods[3].ip, "127.10.0.5");
    char path[400];
    snprintf(path, sizeof path, STATE "/bootstrap/%s.istioinaction.bootstrap", v1->name);
    assert_string_equal(v1->bootstrap, path);
    snprintf(path, sizeof path, STATE "/pods/istioinaction.%s.json", v1->name);
    assert_string_equal(v1->pod_file, path);
    done(&f);
    free(yaml);
}

static void names_are_deterministic(void **state)
{
    fixture a, b;
    char *yaml = concat(BOOK, IMAGES);
    plan_ok(&a, yaml, NULL);
    plan_ok(&b, yaml, NULL);
    for (size_t i = 0; i < a.plan->npods; i++)
        assert_string_equal(a.plan->pods[i].name, b.plan->pods[i].name);
    done(&a);
    done(&b);
    free(yaml);
    char ip[16];
    wf_lm_pod_ip(252, false, ip);
    assert_string_equal(ip, "127.10.0.254");
    wf_lm_pod_ip(253, true, ip);
    assert_string_equal(ip, "127.11.1.2");
}

static void namespaces_and_injection(void **state)
{
    fixture f;
    /* -n wins; a namespace without the label gets no sidecar: the app listens on the pod IP */
    static const char *const plain =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n"
        "    metadata: {labels: {app: web}}\n    spec:\n"
        "      containers: [{name: web, image: nginx:1.25, ports: [{containerPort: 8080}]}]\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: opted, namespace: x}\n"
        "spec:\n  template:\n    metadata:\n      labels: {app: opted}\n"
        "      annotations: {sidecar.istio.io/inject: \"true\"}\n    spec:\n"
        "      containers: [{name: o, image: nginx, ports: [{containerPort: 9000}]}]\n";
    wf_lm_opts o = {.ns = "shop"};
    plan_ok(&f, plain, &o);
    assert_string_equal(f.plan->default_ns, "shop");
    const wf_lm_pod *web = &f.plan->pods[1];
    assert_string_equal(web->ns, "shop");
    assert_false(web->sidecar);
    assert_null(web->bootstrap);
    /* no replicas: one pod */
    assert_int_equal(f.plan->npods, 3);
    const wf_lm_proc *app = proc_named(f.plan, "pilot");
    assert_true(has_arg_pair(app, "--default-namespace", "shop"));
    char name[300];
    snprintf(name, sizeof name, "%s.app", web->name);
    app = proc_named(f.plan, name);
    snprintf(name, sizeof name, "%s:8080", web->ip);
    assert_true(has_arg_pair(app, "--listen", name));
    /* the annotation injects in a namespace nobody labelled */
    assert_true(f.plan->pods[2].sidecar);
    assert_string_equal(f.plan->pods[2].ns, "x");
    done(&f);
    /* two labelled namespaces: "default" */
    plan_ok(&f,
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {istio-injection: "
            "enabled}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: "
            "{istio-injection: enabled}}\n",
            NULL);
    assert_string_equal(f.plan->default_ns, "default");
    assert_int_equal(f.plan->npods, 1); /* the gateway only */
    done(&f);
    /* the injector's values (lower-cased y, yes, true, on inject; "" follows the namespace;
     * anything else does not), label before annotation */
    static const char *const values =
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: m, labels: {istio-injection: "
        "enabled}}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: m}\nspec:\n"
        "  template:\n    metadata: {labels: {app: a, sidecar.istio.io/inject: \"True\"}}\n"
        "    spec: {containers: [{name: a, image: x, ports: [{containerPort: 1}]}]}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b, namespace: m}\nspec:\n"
        "  template:\n    metadata: {labels: {app: b, sidecar.istio.io/inject: \"off\"}}\n"
        "    spec: {containers: [{name: b, image: x, ports: [{containerPort: 1}]}]}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c, namespace: m}\nspec:\n"
        "  template:\n    metadata: {labels: {app: c, sidecar.istio.io/inject: \"\"}}\n"
        "    spec: {containers: [{name: c, image: x, ports: [{containerPort: 1}]}]}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n"
        "  template:\n    metadata:\n      labels: {app: d, sidecar.istio.io/inject: \"no\"}\n"
        "      annotations: {sidecar.istio.io/inject: \"yes\"}\n"
        "    spec: {containers: [{name: d, image: x, ports: [{containerPort: 1}]}]}\n";
    plan_ok(&f, values, NULL);
    bool want[] = {true, false, true, false}; /* a, b, c, d */
    const char *apps[] = {"a", "b", "c", "d"};
    for (size_t k = 0; k < 4; k++) {
        const wf_lm_pod *pod = NULL;
        for (size_t i = 0; i < f.plan->npods; i++)
            for (size_t j = 0; j < f.plan->pods[i].nlabels; j++)
                if (strcmp(f.plan->pods[i].labels[j].key, "app") == 0 &&
                    strcmp(f.plan->pods[i].labels[j].value, apps[k]) == 0)
                    pod = &f.plan->pods[i];
        assert_non_null(pod);
        if (pod->sidecar != want[k])
            fail_msg("app %s: sidecar %d, want %d", apps[k], pod->sidecar, want[k]);
    }
    done(&f);
}

static void gateway_from_manifests(void **state)
{
    fixture f;
    /* a gateway Service in DIR: none is written; a gateway workload in DIR: none is added */
    plan_ok(&f,
            "apiVersion: v1\nkind: Service\nmetadata: {name: istio-ingressgateway, namespace: "
            "istio-system}\nspec:\n  selector: {istio: ingressgateway}\n  ports: [{name: http2, "
            "port: 80, targetPort: 8080}]\n",
            NULL);
    assert_false(f.plan->gateway_service);
    done(&f);
    plan_ok(&f,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: my-gw, namespace: gw}\n"
            "spec:\n  replicas: 2\n  template:\n    metadata: {labels: {istio: ingressgateway}}\n"
            "    spec:\n      containers: [{name: istio-proxy, image: auto}]\n",
            NULL);
    assert_int_equal(f.plan->npods, 2);
    assert_true(f.plan->pods[0].gateway && f.plan->pods[1].gateway);
    assert_int_equal(f.plan->pods[0].ncontainers, 0);
    assert_int_equal(f.plan->gateway, 0);
    assert_int_equal(f.plan->nprocs, 3); /* pilot and two router proxies */
    assert_int_equal(f.plan->procs[1].kind, WF_LM_GATEWAY);
    done(&f);
}

/* ---- the image map and processes ---- */

static void image_map_and_processes(void **state)
{
    fixture f;
    char *yaml = concat(BOOK, IMAGES);
    plan_ok(&f, yaml, NULL);
    const wf_lm_pod *v1 = &f.plan->pods[1];
    assert_string_equal(v1->containers[0].image_key, "istioinaction/catalog"); /* tag ignored */
    char name[300], addr[64];
    snprintf(name, sizeof name, "%s.app", v1->name);
    const wf_lm_proc *app = proc_named(f.plan, name);
    assert_int_equal(app->kind, WF_LM_APP);
    assert_string_equal(app->argv[0], "/opt/weft/weft-app"); /* $WEFT_APP: none next to us */
    assert_string_equal(app->argv[1], "--name");
    assert_string_equal(app->argv[2], "catalog");
    assert_true(has_arg_pair(app, "--listen", "127.11.0.3:3000"));
    assert_true(has_arg_pair(app, "--pod", v1->name));
    snprintf(addr, sizeof addr, "POD_NAME=%s", v1->name);
    assert_true(has_env(app, addr));
    assert_true(has_env(app, "POD_NAMESPACE=istioinaction"));
    assert_true(has_env(app, "POD_IP=127.10.0.3"));
    assert_true(has_env(app, "KUBERNETES_NAMESPACE=istioinaction")); /* fieldRef */
    assert_true(has_env(app, "CATALOG_MODE=demo"));
    char log[400];
    snprintf(log, sizeof log, STATE "/logs/%s.app.log", v1->name);
    assert_string_equal(app->log, log);
    /* the proxy */
    snprintf(name, sizeof name, "%s.proxy", v1->name);
    const wf_lm_proc *proxy = proc_named(f.plan, name);
    assert_int_equal(proxy->kind, WF_LM_PROXY);
    assert_string_equal(proxy->argv[0], "/opt/weft/weft-proxy");
    assert_true(has_arg_pair(proxy, "-c", v1->bootstrap));
    assert_true(has_arg_pair(proxy, "--status-address", "127.10.0.3:15020"));
    assert_true(has_arg_pair(proxy, "--file-flush-interval-msec", "1000"));
    /* pilot: no $WEFT_PILOT, nothing next to us: PATH */
    const wf_lm_proc *pilot = &f.plan->procs[0];
    assert_string_equal(pilot->name, "pilot");
    assert_string_equal(pilot->argv[0], "weft-pilot");
    assert_true(has_arg_pair(pilot, "--config-dir", DIR));
    assert_true(has_arg_pair(pilot, "--grpcAddr", "127.0.0.1:15010"));
    assert_true(has_arg_pair(pilot, "--monitoringAddr", "127.0.0.1:15014"));
    char ca_dir[4200];
    snprintf(ca_dir, sizeof ca_dir, "%s/ca", f.plan->state);
    assert_true(has_arg_pair(pilot, "--ca-dir", ca_dir)); /* the root lives with the state */
    assert_false(f.plan->pods_dir_watched); /* STATE/pods is inside DIR: pilot sees it there */
    /* the gateway proxy also answers on 15021 */
    snprintf(name, sizeof name, "%s.proxy", f.plan->pods[0].name);
    assert_true(has_arg_pair(proc_named(f.plan, name), "--health-address", "127.10.0.2:15021"));
    done(&f);
    free(yaml);
}

static void image_matching(void **state)
{
    static const char *const map =
        "apiVersion: weft.dev/v1\nkind: LocalImages\nimages:\n"
        "  istioinaction/catalog: {command: [a]}\n  nginx: {command: [./bin/b]}\n"
        "  \"*\": {command: [c]}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
        "    spec:\n      containers:\n"
        "      - {name: one, image: \"docker.io/istioinaction/catalog:1.0\"}\n"
        "      - {name: two, image: \"docker.io/library/nginx@sha256:abc\"}\n"
        "      - {name: three, image: \"quay.io/other:2\"}\n";
    fixture f;
    plan_ok(&f, map, NULL);
    const wf_lm_pod *d = &f.plan->pods[1];
    assert_int_equal(d->ncontainers, 3);
    assert_string_equal(d->containers[0].image_key, "istioinaction/catalog");
    assert_string_equal(d->containers[1].image_key, "nginx");
    assert_string_equal(d->containers[2].image_key, "*");
    char name[300];
    snprintf(name, sizeof name, "%s.two", d->name); /* several containers: named by container */
    assert_string_equal(proc_named(f.plan, name)->argv[0], DIR "/./bin/b");
    done(&f);
}

static void image_map_errors(void **state)
{
    /* an unknown image without "*": the Deployment, the container and the image are named */
    plan_fails("apiVersion: weft.dev/v1\nkind: LocalImages\nimages:\n  x: {command: [a]}\n"
               "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\n"
               "spec:\n  template:\n    spec:\n      containers:\n"
               "      - {name: c, image: \"istioinaction/catalog:latest\"}\n",
               "t.yaml:13:26: Deployment n/d: container c: image \"istioinaction/catalog:latest\" "
               "has no entry");
    plan_fails("apiVersion: weft.dev/v1\nkind: LocalImages\nmetadata: {name: m}\nimages:\n"
               "  x: {command: a}\n",
               "t.yaml:5:16: LocalImages m: images.x.command: want a non-empty list of strings");
    plan_fails("apiVersion: weft.dev/v1\nkind: LocalImages\nimages:\n  x: [a]\n",
               "t.yaml:4:6: LocalImages (unnamed): images.x: want a map with `command`");
    plan_fails("apiVersion: weft.dev/v1\nkind: LocalImages\nimages: {}\n",
               "LocalImages (unnamed): images: want a map");
    plan_fails("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: e}\nspec:\n  template:\n"
               "    spec:\n      containers: []\n",
               "t.yaml:7:19: Deployment default/e: spec.template.spec.containers: a workload needs "
               "at least one container");
    /* the API server refuses a workload whose selector does not select its own pods */
    plan_fails("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n"
               "  selector: {matchLabels: {app: other}}\n  template:\n"
               "    metadata: {labels: {app: s}}\n"
               "    spec: {containers: [{name: s, image: x, ports: [{containerPort: 1}]}]}\n",
               "t.yaml:7:24: Deployment default/s: spec.template.metadata.labels: `selector` does "
               "not match template `labels`");
    /* and what its field validation refuses among the fields the local mesh uses */
    plan_fails("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: r}\nspec:\n"
               "  replicas: -1\n  template:\n"
               "    spec: {containers: [{name: r, image: x}]}\n",
               "t.yaml:5:13: Deployment default/r: spec.replicas: Invalid value: -1: must be "
               "greater than or equal to 0");
    plan_fails("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: p}\nspec:\n"
               "  template:\n    spec:\n      containers:\n      - name: p\n        image: x\n"
               "        ports: [{containerPort: 80}, {containerPort: 70000}]\n",
               "t.yaml:10:54: Deployment default/p: "
               "spec.template.spec.containers[0].ports[1].containerPort: Invalid value: 70000: "
               "must be between 1 and 65535, inclusive");
    plan_fails("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: q}\nspec:\n"
               "  template:\n    spec: {containers: [{name: q, image: x, ports: [{name: a}]}]}\n",
               "StatefulSet default/q: spec.template.spec.containers[0].ports[0].containerPort: "
               "Required value");
}

/* ---- MeshConfig and proxyMetadata ---- */

static void mesh_config_and_proxy_metadata(void **state)
{
    static const char *const yaml =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\n"
        "data:\n  mesh: |-\n    accessLogFile: /dev/stdout\n    defaultConfig:\n"
        "      proxyMetadata:\n        WEFT_READINESS_POLICY: control-plane\n"
        "        WEFT_READINESS_GRACE_S: \"10\"\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\n"
        "spec:\n  template:\n    metadata:\n      annotations:\n"
        "        sidecar.istio.io/inject: \"true\"\n"
        "        proxy.istio.io/config: |\n          proxyMetadata:\n"
        "            WEFT_READINESS_GRACE_S: \"3\"\n"
        "    spec:\n      containers: [{name: c, image: x}]\n";
    fixture f;
    plan_ok(&f, yaml, NULL);
    assert_string_equal(f.plan->mesh_file, STATE "/meshconfig");
    assert_non_null(strstr(f.plan->mesh_text, "accessLogFile"));
    assert_true(has_arg_pair(&f.plan->procs[0], "--meshConfig", STATE "/meshconfig"));
    char name[300];
    snprintf(name, sizeof name, "%s.proxy", f.plan->pods[1].name);
    const wf_lm_proc *proxy = proc_named(f.plan, name);
    assert_true(has_env(proxy, "WEFT_READINESS_POLICY=control-plane"));
    assert_true(has_env(proxy, "WEFT_READINESS_GRACE_S=3")); /* the annotation wins */
    snprintf(name, sizeof name, "%s.proxy", f.plan->pods[0].name);
    assert_true(has_env(proc_named(f.plan, name), "WEFT_READINESS_GRACE_S=10"));
    done(&f);
    /* an unparsable proxy.istio.io/config stops only that workload's pods (Istio's injector
     * refuses them); the plan goes on */
    plan_ok(&f,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\n"
            "spec:\n  template:\n    metadata:\n      annotations:\n"
            "        sidecar.istio.io/inject: \"true\"\n"
            "        proxy.istio.io/config: \"a: [\"\n"
            "    spec:\n      containers: [{name: c, image: x}]\n",
            NULL);
    const char *e = NULL;
    for (size_t i = 0; i < f.plan->npods; i++)
        if (strcmp(f.plan->pods[i].owner, "d") == 0)
            e = f.plan->pods[i].error;
    assert_non_null(e);
    if (!strstr(e, "Deployment n/d: spec.template.metadata.annotations[proxy.istio.io/config]: "
                   "does not parse"))
        fail_msg("%s", e);
    done(&f);
}

/* ---- what Istio's injector adds for pilot-agent (localmesh_inject.c) ---- */

static const char *env_value(const wf_lm_proc *proc, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < proc->nenv; i++)
        if (strncmp(proc->env[i], key, n) == 0 && proc->env[i][n] == '=')
            return proc->env[i] + n + 1;
    return NULL;
}

static const wf_lm_proc *proxy_of(const wf_lm_plan *p, const char *owner)
{
    for (size_t i = 0; i < p->npods; i++)
        if (strcmp(p->pods[i].owner, owner) == 0) {
            char name[300];
            snprintf(name, sizeof name, "%s.proxy", p->pods[i].name);
            return proc_named(p, name);
        }
    fail_msg("no pod of %s", owner);
    return NULL;
}

static void app_probers_and_prometheus_merge(void **state)
{
    static const char *const yaml =
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, labels: {istio-injection: "
        "enabled}}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: n}\n"
        "spec:\n  template:\n    metadata:\n      annotations:\n"
        "        prometheus.io/scrape: \"true\"\n        prometheus.io/port: \"9102\"\n"
        "    spec:\n      containers:\n"
        "      - name: web\n        image: x\n"
        "        ports: [{name: http, containerPort: 3000}, {containerPort: 9102}]\n"
        "        readinessProbe:\n          httpGet: {path: /healthz, port: http}\n"
        "        livenessProbe:\n          tcpSocket: {port: 3000}\n          timeoutSeconds: 5\n"
        "        startupProbe:\n          httpGet:\n            port: 3000\n"
        "            scheme: HTTPS\n            httpHeaders: [{name: X-Probe, value: kubelet}]\n"
        "      - name: side\n        image: x\n"
        "        livenessProbe:\n          exec: {command: [\"true\"]}\n"
        "        readinessProbe:\n          grpc: {port: 9000}\n"
        "        startupProbe:\n          httpGet: {port: nosuchname}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: norewrite, namespace: n}\n"
        "spec:\n  template:\n    metadata:\n      annotations:\n"
        "        sidecar.istio.io/rewriteAppHTTPProbers: \"false\"\n"
        "        prometheus.io/scrape: \"true\"\n"
        "        prometheus.istio.io/merge-metrics: \"false\"\n"
        "    spec:\n      containers:\n      - name: c\n        image: x\n"
        "        readinessProbe:\n          httpGet: {port: 8080}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: plain, namespace: n}\n"
        "spec:\n  template:\n    metadata:\n      annotations:\n"
        "        prometheus.io/scrape: \"true\"\n        prometheus.io/path: /stats\n"
        "    spec:\n      containers: [{name: c, image: x}]\n";
    fixture f;
    plan_ok(&f, yaml, NULL);
    const wf_lm_proc *web = proxy_of(f.plan, "web");
    const wf_lm_pod *pod = &f.plan->pods[web->pod];
    char want[2000];
    snprintf(want, sizeof want,
             "{\"/app-health/side/readyz\":{\"grpc\":{\"port\":9000,\"service\":\"\"},"
             "\"timeoutSeconds\":1},"
             "\"/app-health/web/livez\":{\"tcpSocket\":{\"port\":3000,\"host\":\"%s\"},"
             "\"timeoutSeconds\":5},"
             "\"/app-health/web/readyz\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":3000,"
             "\"host\":\"%s\",\"scheme\":\"HTTP\"},\"timeoutSeconds\":1},"
             "\"/app-health/web/startupz\":{\"httpGet\":{\"path\":\"/\",\"port\":3000,"
             "\"host\":\"%s\",\"scheme\":\"HTTPS\",\"httpHeaders\":[{\"name\":\"X-Probe\","
             "\"value\":\"kubelet\"}]},\"timeoutSeconds\":1}}",
             pod->localhost, pod->localhost, pod->localhost);
    assert_non_null(env_value(web, "ISTIO_KUBE_APP_PROBERS"));
    assert_string_equal(env_value(web, "ISTIO_KUBE_APP_PROBERS"), want);
    assert_string_equal(env_value(web, "ISTIO_PROMETHEUS_ANNOTATIONS"),
                        "{\"scrape\":\"true\",\"path\":\"/metrics\",\"port\":\"9102\"}");
    const wf_lm_proc *off = proxy_of(f.plan, "norewrite");
    assert_null(env_value(off, "ISTIO_KUBE_APP_PROBERS"));
    assert_null(env_value(off, "ISTIO_PROMETHEUS_ANNOTATIONS"));
    const wf_lm_proc *plain = proxy_of(f.plan, "plain");
    assert_null(env_value(plain, "ISTIO_KUBE_APP_PROBERS")); /* no probes: unset, not {} */
    assert_string_equal(env_value(plain, "ISTIO_PROMETHEUS_ANNOTATIONS"),
                        "{\"scrape\":\"true\",\"path\":\"/stats\",\"port\":\"\"}");
    /* the app processes do not get them */
    for (size_t i = 0; i < f.plan->nprocs; i++)
        if (f.plan->procs[i].kind == WF_LM_APP)
            assert_null(env_value(&f.plan->procs[i], "ISTIO_KUBE_APP_PROBERS"));
    done(&f);

    /* MeshConfig enablePrometheusMerge: false turns merging off (the annotation can turn it
     * back on for its pods) */
    char *mesh = concat(yaml, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, "
                              "namespace: istio-system}\ndata:\n  mesh: |-\n"
                              "    enablePrometheusMerge: false\n");
    plan_ok(&f, mesh, NULL);
    assert_null(env_value(proxy_of(f.plan, "web"), "ISTIO_PROMETHEUS_ANNOTATIONS"));
    assert_non_null(env_value(proxy_of(f.plan, "web"), "ISTIO_KUBE_APP_PROBERS"));
    done(&f);
    free(mesh);
}

/* ---- state files ---- */

static void bootstrap_and_pod_object(void **state)
{
    fixture f;
    char *yaml = concat(BOOK, IMAGES);
    plan_ok(&f, yaml, NULL);
    const wf_lm_pod *v1 = &f.plan->pods[1], *gw = &f.plan->pods[0];
    json_t *b = wf_lm_bootstrap_json(f.plan, v1);
    assert_non_null(b);
    char id[300];
    snprintf(id, sizeof id, "%s.istioinaction", v1->name);
    wf_test_expect_str(b, "node.id", id);
    wf_test_expect_str(b, "node.cluster", "catalog.istioinaction");
    wf_test_expect_str(b, "node.metadata.NAME", v1->name);
    wf_test_expect_str(b, "node.metadata.NAMESPACE", "istioinaction");
    wf_test_expect_str(b, "node.metadata.LABELS.version", "v1");
    wf_test_expect_str(b, "node.metadata.INSTANCE_IPS", "127.10.0.3");
    wf_test_expect_str(b, "node.metadata.PROXY_TYPE", "sidecar");
    wf_test_expect_str(b, "node.metadata.WEFT_LOCALHOST", "127.11.0.3");
    wf_test_expect_str(b, "node.metadata.WEFT_ADMIN", "127.10.0.3:15000");
    /* what the injector adds for Istio's metrics: workload, owner, canonical labels */
    wf_test_expect_str(b, "node.metadata.WORKLOAD_NAME", "catalog");
    wf_test_expect_str(b, "node.metadata.OWNER",
                       "kubernetes://apis/apps/v1/namespaces/istioinaction/deployments/catalog");
    json_t *lb = wf_test_json_at(b, "node.metadata.LABELS");
    assert_string_equal(json_string_value(json_object_get(lb, "service.istio.io/canonical-name")),
                        "catalog");
    assert_string_equal(
        json_string_value(json_object_get(lb, "service.istio.io/canonical-revision")), "v1");
    wf_test_expect_str(b, "admin.address.socket_address.address", "127.10.0.3");
    wf_test_expect_int(b, "admin.address.socket_address.port_value", 15000);
    wf_test_expect_str(b, "dynamic_resources.ads_config.grpc_services.0.envoy_grpc.cluster_name",
                       "xds-grpc");
    wf_test_expect_str(b, "static_resources.clusters.0.name", "xds-grpc");
    wf_test_expect_int(b,
                       "static_resources.clusters.0.load_assignment.endpoints.0.lb_endpoints.0."
                       "endpoint.address.socket_address.port_value",
                       15012);
    /* as Istio's sidecars reach istiod: TLS verified with the namespace's synced root */
    const char *tc = "static_resources.clusters.0.transport_socket.typed_config.";
    char path[300], root[4400];
    snprintf(path, sizeof path, "%ssni", tc);
    wf_test_expect_str(b, path, "istiod.istio-system.svc");
    snprintf(path, sizeof path, "%scommon_tls_context.alpn_protocols.0", tc);
    wf_test_expect_str(b, path, "h2");
    snprintf(path, sizeof path, "%scommon_tls_context.validation_context.trusted_ca.filename", tc);
    snprintf(root, sizeof root, "%s/roots/istioinaction/root-cert.pem", f.plan->state);
    wf_test_expect_str(b, path, root);
    snprintf(path, sizeof path,
             "%scommon_tls_context.validation_context.match_typed_subject_alt_names.0.matcher."
             "exact",
             tc);
    wf_test_expect_str(b, path, "istiod.istio-system.svc");
    json_decref(b);
    b = wf_lm_bootstrap_json(f.plan, gw);
    wf_test_expect_str(b, "node.metadata.PROXY_TYPE", "router");
    assert_null(wf_test_json_at(b, "node.metadata.WEFT_LOCALHOST"));
    wf_test_expect_str(b, "node.metadata.WORKLOAD_NAME", "istio-ingressgateway");
    lb = wf_test_json_at(b, "node.metadata.LABELS");
    assert_string_equal(
        json_string_value(json_object_get(lb, "service.istio.io/canonical-revision")), "latest");
    json_decref(b);
    json_t *pod = wf_lm_pod_json(f.plan, v1);
    wf_test_expect_str(pod, "kind", "Pod");
    wf_test_expect_str(pod, "metadata.namespace", "istioinaction");
    wf_test_expect_str(pod, "status.podIP", "127.10.0.3");
    wf_test_expect_str(pod, "status.phase", "Running");
    wf_test_expect_int(pod, "spec.containers.0.ports.0.containerPort", 3000);
    wf_test_expect_str(pod, "spec.containers.1.name", "istio-proxy");
    json_decref(pod);
    json_t *mesh = wf_lm_mesh_json(f.plan, NULL, 0);
    wf_test_expect_str(mesh, "kind", "LocalMesh");
    wf_test_expect_str(mesh, "gateway.url", "http://127.0.0.1:30000");
    wf_test_expect_str(mesh, "gateway.target", "127.10.0.2:8080");
    wf_test_expect_str(mesh, "pods.1.admin", "127.10.0.3:15000");
    wf_test_expect_str(mesh, "processes.0.kind", "pilot");
    wf_test_expect_str(mesh, "pilot.xds", "127.0.0.1:15010");
    wf_test_expect_str(mesh, "pilot.secureXds", "127.0.0.1:15012");
    wf_test_expect_str(mesh, "processes.0.state", "planned");
    json_decref(mesh);
    json_t *svc = wf_lm_gateway_service_json();
    wf_test_expect_int(svc, "spec.ports.0.port", 80);
    wf_test_expect_int(svc, "spec.ports.0.targetPort", 8080);
    wf_test_expect_str(svc, "spec.ports.0.name", "http2");
    json_decref(svc);
    done(&f);
    free(yaml);
}

/* The last-mesh record: round trip; never written through a symlink; a record others may
 * write is not believed. */
static void last_mesh_record(void **state)
{
    (void)state;
    char dir[] = "/tmp/weft-test-rt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char path[300], target[300];
    snprintf(path, sizeof path, "%s/weft-last-mesh", dir);
    snprintf(target, sizeof target, "%s/victim", dir);
    assert_int_equal(wf_lm_remember_state("/srv/mesh/.weft"), 0);
    char *got = wf_lm_recall_state();
    assert_string_equal(got, "/srv/mesh/.weft");
    free(got);
    assert_int_equal(chmod(path, 0666), 0);
    assert_null(wf_lm_recall_state());
    assert_int_equal(unlink(path), 0);
    FILE *v = fopen(target, "w");
    assert_non_null(v);
    fclose(v);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(wf_lm_remember_state("/evil"), -1);
    assert_null(wf_lm_recall_state());
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, 0); /* the symlink's target was not written */
    unlink(path);
    unlink(target);
    rmdir(dir);
    if (old)
        setenv("XDG_RUNTIME_DIR", old, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    free(old);
}

/* Each proxy gets a token for its pod's identity (namespace, the Deployment's service
 * account or "default"; the added gateway's istio-ingressgateway-service-account), minted with
 * the CA's token key in STATE/ca (made as pilot makes it, so pilot verifies it), mode 0600,
 * passed as --token-path; injected pods carry security.istio.io/tlsMode: istio (not the
 * gateway); wf_lm_tokens_remove takes them away. */
static void tokens_and_tls_mode(void **state)
{
    (void)state;
    char tmp[] = "/tmp/weft-test-tok-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char *yaml = concat(BOOK, IMAGES);
    wf_lm_opts o = {.dir = DIR, .state = tmp, .bin_dir = "/nonexistent-bin"};
    fixture f;
    memset(&f, 0, sizeof f);
    f.store = wf_test_load_store(NULL, yaml, NULL);
    if (wf_lm_plan_from_store(&o, f.store, &f.plan, &f.err) != 0)
        fail_msg("plan failed: %s", wf_strbuf_cstr(&f.err));
    wf_lm_plan *p = f.plan;
    const char *want_sa[] = {"istio-ingressgateway-service-account", "catalog", "default",
                             "default"};
    assert_int_equal(p->npods, 4);
    assert_null(label(&p->pods[0], "security.istio.io/tlsMode"));
    for (size_t i = 1; i < 4; i++)
        assert_string_equal(label(&p->pods[i], "security.istio.io/tlsMode"), "istio");
    time_t now = time(NULL);
    if (wf_lm_tokens_write(p, (int64_t)now, &f.err) != 0)
        fail_msg("tokens: %s", wf_strbuf_cstr(&f.err));
    char dir[300], ebuf[256], ns[254], sa[254], pname[300];
    snprintf(dir, sizeof dir, "%s/ca", tmp);
    wf_ca_token_key key;
    assert_int_equal(wf_ca_token_key_load(dir, 0, &key, ebuf, sizeof ebuf), 0);
    for (size_t i = 0; i < 4; i++) {
        const wf_lm_pod *pod = &p->pods[i];
        char want[400];
        snprintf(want, sizeof want, "%s/tokens/%s.%s/istio-token", tmp, pod->name, pod->ns);
        assert_string_equal(pod->token, want);
        snprintf(pname, sizeof pname, "%s.proxy", pod->name);
        assert_true(has_arg_pair(proc_named(p, pname), "--token-path", want));
        struct stat st;
        assert_int_equal(stat(want, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        FILE *fp = fopen(want, "r");
        assert_non_null(fp);
        char tok[4200];
        size_t n = fread(tok, 1, sizeof tok - 1, fp);
        fclose(fp);
        tok[n] = '\0';
        if (wf_ca_token_verify(&key, tok, n, (int64_t)now + 60, ns, sa, ebuf, sizeof ebuf) != 0)
            fail_msg("%s: %s", want, ebuf);
        assert_string_equal(ns, pod->ns);
        assert_string_equal(sa, want_sa[i]);
    }
    assert_int_equal(wf_lm_tokens_remove(tmp, &f.err), 0);
    snprintf(dir, sizeof dir, "%s/tokens", tmp);
    struct stat st;
    assert_int_not_equal(stat(dir, &st), 0);
    snprintf(dir, sizeof dir, "%s/ca/token-signing-key", tmp);
    assert_int_equal(unlink(dir), 0); /* the key stays with the CA */
    snprintf(dir, sizeof dir, "%s/ca", tmp);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(rmdir(tmp), 0);
    done(&f);
    free(yaml);
}

/* A Service port equal to a sidecar pod's containerPort clashes on the pod localhost (no
 * traffic capture): named from the manifests; the book's 80 -> 3000 does not clash. */
static void port_clash_is_named(void **state)
{
    (void)state;
    fixture f;
    plan_ok(&f, BOOK, NULL);
    for (size_t i = 0; i < f.plan->npods; i++)
        assert_null(f.plan->pods[i].clash);
    done(&f);
    char *y = concat(BOOK, "---\napiVersion: v1\nkind: Service\nmetadata: {name: other, "
                           "namespace: istioinaction}\nspec:\n  selector: {app: other}\n"
                           "  ports: [{name: http, port: 3000}]\n");
    plan_ok(&f, y, NULL);
    size_t clashes = 0;
    for (size_t i = 0; i < f.plan->npods; i++)
        if (f.plan->pods[i].clash) {
            clashes++;
            assert_non_null(strstr(f.plan->pods[i].clash, "is also port 3000 of Service "
                                                          "istioinaction/other"));
        }
    assert_true(clashes > 0);
    done(&f);
    free(y);
}

/* --pod-network netns --capture: the sidecars get Istio's REDIRECT mode (no WEFT_LOCALHOST),
 * the DNS proxy, ISTIO_META_* proxyMetadata as metadata; apps listen on every address of their
 * pod; the pod's traffic.sidecar.istio.io annotations are kept for istio-init; pilot hands out
 * clusterIPs from 10.96.0.0/12; no port clash (nothing binds the Service port). */
static void capture_mode(void **state)
{
    (void)state;
    fixture f;
    char *y = concat(BOOK, "---\napiVersion: v1\nkind: Service\nmetadata: {name: other, "
                           "namespace: istioinaction}\nspec:\n  selector: {app: other}\n"
                           "  ports: [{name: http, port: 3000}]\n"
                           "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, "
                           "namespace: istio-system}\ndata:\n  mesh: |-\n"
                           "    defaultConfig:\n      proxyMetadata:\n"
                           "        ISTIO_META_DNS_AUTO_ALLOCATE: \"true\"\n");
    char *yaml = concat(y, IMAGES);
    wf_lm_opts o = {.podnet = WF_LM_PODNET_NETNS, .capture = true};
    plan_ok(&f, yaml, &o);
    const wf_lm_pod *v1 = &f.plan->pods[1];
    assert_null(v1->clash);
    json_t *b = wf_lm_bootstrap_json(f.plan, v1);
    wf_test_expect_str(b, "node.metadata.INTERCEPTION_MODE", "REDIRECT");
    assert_null(wf_test_json_at(b, "node.metadata.WEFT_LOCALHOST"));
    wf_test_expect_str(b, "node.metadata.DNS_CAPTURE", "true");
    wf_test_expect_str(b, "node.metadata.DNS_AUTO_ALLOCATE", "true");
    json_decref(b);
    /* the gateway: neither mode, its own listeners */
    b = wf_lm_bootstrap_json(f.plan, &f.plan->pods[0]);
    assert_null(wf_test_json_at(b, "node.metadata.INTERCEPTION_MODE"));
    assert_null(wf_test_json_at(b, "node.metadata.WEFT_LOCALHOST"));
    json_decref(b);
    char app[300];
    snprintf(app, sizeof app, "%s.app", v1->name);
    const wf_lm_proc *a = proc_named(f.plan, app);
    assert_true(has_arg_pair(a, "--listen", "0.0.0.0:3000"));
    assert_true(has_env(a, "POD_LOCALHOST=0.0.0.0"));
    assert_true(
        has_arg_pair(proc_named(f.plan, "pilot"), "--service-cluster-ip-range", "10.96.0.0/12"));
    done(&f);
    /* the explicit mode of the same pods: WEFT_LOCALHOST, the pod's localhost, no range */
    plan_ok(&f, yaml, NULL);
    b = wf_lm_bootstrap_json(f.plan, &f.plan->pods[1]);
    wf_test_expect_str(b, "node.metadata.WEFT_LOCALHOST", "127.11.0.3");
    assert_null(wf_test_json_at(b, "node.metadata.INTERCEPTION_MODE"));
    assert_null(wf_test_json_at(b, "node.metadata.DNS_CAPTURE"));
    json_decref(b);
    assert_false(
        has_arg_pair(proc_named(f.plan, "pilot"), "--service-cluster-ip-range", "10.96.0.0/12"));
    /* a DNS proxy (proxyMetadata ISTIO_META_DNS_CAPTURE) answers on the pod's own localhost */
    char px[300];
    snprintf(px, sizeof px, "%s.proxy", f.plan->pods[1].name);
    assert_true(has_env(proc_named(f.plan, px), "DNS_PROXY_ADDR=127.11.0.3:15053"));
    done(&f);
    free(y);
    free(yaml);
    /* the injector's annotations for istio-init */
    y = concat(BOOK, IMAGES);
    const char *plain = "    metadata: {labels: {app: catalog, version: v1}}\n";
    char *ann = strstr(y, plain);
    assert_non_null(ann);
    size_t at = (size_t)(ann - y);
    const char *repl = "    metadata:\n      labels: {app: catalog, version: v1}\n"
                       "      annotations:\n"
                       "        traffic.sidecar.istio.io/excludeOutboundPorts: \"5432\"\n"
                       "        traffic.sidecar.istio.io/excludeInboundPorts: \"9000\"\n"
                       "        traffic.sidecar.istio.io/includeOutboundIPRanges: 10.0.0.0/8\n";
    char *z = malloc(strlen(y) + strlen(repl) + 1);
    assert_non_null(z);
    memcpy(z, y, at);
    strcpy(z + at, repl);
    strcat(z, ann + strlen(plain));
    plan_ok(&f, z, &o);
    const wf_lm_capture_ann *c = &f.plan->pods[1].capture;
    assert_string_equal(c->exclude_out_ports, "5432");
    assert_string_equal(c->exclude_in_ports, "9000");
    assert_string_equal(c->include_out_cidrs, "10.0.0.0/8");
    assert_null(c->exclude_out_cidrs);
    assert_null(f.plan->pods[2].capture.exclude_out_ports);
    done(&f);
    /* a value Istio's injector refuses: that pod is not started, the error names the place */
    char *bad = strstr(z, "\"5432\"");
    assert_non_null(bad);
    memcpy(bad, "\"abcd\"", 6);
    plan_ok(&f, z, &o);
    const char *e = f.plan->pods[1].error;
    assert_non_null(e);
    assert_non_null(strstr(
        e, "spec.template.metadata.annotations[traffic.sidecar.istio.io/excludeOutboundPorts]"));
    assert_non_null(strstr(e, "refuses the pod"));
    assert_non_null(strstr(e, "t.yaml:"));
    assert_null(f.plan->pods[2].error); /* the other workload's pods run */
    done(&f);
    plan_ok(&f, z, NULL); /* the injector refuses it in explicit mode too */
    assert_non_null(f.plan->pods[1].error);
    done(&f);
    free(y);
    free(z);
}

/* ProxyConfig fields of the proxy.istio.io/config annotation weft's injector does not
 * implement are plan warnings at the annotation (proxyMetadata, which it does, is not). */
static void proxy_config_fields_are_warned(void **state)
{
    (void)state;
    fixture f;
    char *y = concat(BOOK, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: pc, "
                           "namespace: istioinaction}\nspec:\n  selector: {matchLabels: {app: "
                           "pc}}\n  template:\n    metadata:\n      labels: {app: pc}\n"
                           "      annotations:\n        proxy.istio.io/config: |\n"
                           "          concurrency: 4\n          proxyMetadata: {A: b}\n"
                           "    spec:\n      containers: [{name: pc, image: x}]\n");
    plan_ok(&f, y, NULL);
    assert_int_equal(f.plan->nwarnings, 1);
    if (!strstr(f.plan->warnings[0], "Deployment istioinaction/pc: spec.template.metadata."
                                     "annotations[proxy.istio.io/config].concurrency has no "
                                     "effect in weft: ") ||
        !strstr(f.plan->warnings[0], "[WFT0001]"))
        fail_msg("warning: %s", f.plan->warnings[0]);
    done(&f);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(book_pods),
        cmocka_unit_test(names_are_deterministic),
        cmocka_unit_test(namespaces_and_injection),
        cmocka_unit_test(gateway_from_manifests),
        cmocka_unit_test(image_map_and_processes),
        cmocka_unit_test(image_matching),
        cmocka_unit_test(image_map_errors),
        cmocka_unit_test(mesh_config_and_proxy_metadata),
        cmocka_unit_test(app_probers_and_prometheus_merge),
        cmocka_unit_test(bootstrap_and_pod_object),
        cmocka_unit_test(last_mesh_record),
        cmocka_unit_test(port_clash_is_named),
        cmocka_unit_test(proxy_config_fields_are_warned),
        cmocka_unit_test(capture_mode),
        cmocka_unit_test(tokens_and_tls_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
