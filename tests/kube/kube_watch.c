/*
 * kube_watch.c - weft-kube-watch, a test program (built by CMake, not installed) that runs one
 * kube/reflector.h reflector on a libuv loop, as weft-pilot's Kubernetes source will, and prints
 * its state as one JSON line on stdout whenever it changed:
 *   {"phase":"watching","rv":"12","synced":true,"generation":3,"lists":1,"pages":2,
 *    "relists_expired":0,"watches":1,"events":2,"bookmarks":0,"errors":0,"last_error":"",
 *    "backoff_ms":0,"objects":{"default/a":"11",...}}   (objects: key -> resourceVersion)
 * It ends on SIGTERM or SIGINT (exit 0), or after --duration seconds.
 *
 * Exit codes: 0 stopped, 1 configuration error (kubeconfig, in-cluster files, TLS material),
 * 2 usage error.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/reflector.h"

static const char USAGE[] =
    "Usage: weft-kube-watch [options] KIND\n"
    "Lists and watches KIND (Pod, pods, virtualservices.networking.istio.io, ...) through the\n"
    "Kubernetes API and prints the reflector's state as JSON lines on every change.\n"
    "  --kubeconfig FILE[:FILE...]  kubeconfig (default $KUBECONFIG, else ~/.kube/config)\n"
    "  --context NAME               context instead of current-context\n"
    "  --in-cluster ROOT            in-cluster configuration (KUBERNETES_SERVICE_HOST/PORT and\n"
    "                               ROOT/var/run/secrets/kubernetes.io/serviceaccount/*)\n"
    "  -n, --namespace NS           one namespace (default: all)\n"
    "  -l, --selector SEL           label selector\n"
    "  --field-selector SEL         field selector\n"
    "  --page-size N                list page size (default 500)\n"
    "  --watch-timeout S            timeoutSeconds of each watch (default random 300-600)\n"
    "  --seed N                     random seed for back-off jitter\n"
    "  --duration S                 stop after S seconds (default: run until SIGTERM)\n"
    "  --wait-synced MS             first wait up to MS ms for the first list (the way a\n"
    "                               config source's start() will) and print\n"
    "                               {\"synced\":true|false} before the state lines\n"
    "Exit codes: 0 stopped, 1 configuration error, 2 usage error.\n";

typedef struct app {
    uv_loop_t *loop;
    wf_kube_reflector *r;
    uv_signal_t sigterm, sigint;
    uv_timer_t timer;
    char *last;
} app;

static void print_state(void *ud)
{
    app *a = ud;
    if (!a->r)
        return;
    wf_kube_reflector_state st;
    wf_kube_reflector_state_get(a->r, &st);
    json_t *snap = wf_kube_reflector_snapshot(a->r);
    json_t *objs = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(snap, k, v) json_object_set_new(objs, k, json_string(wf_kube_obj_rv(v)));
    json_decref(snap);
    json_t *j =
        json_pack("{s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I,s:o}", "phase",
                  wf_kube_reflector_phase_name(st.phase), "rv", st.rv, "synced", st.synced,
                  "generation", (json_int_t)st.generation, "lists", (json_int_t)st.lists, "pages",
                  (json_int_t)st.pages, "relists_expired", (json_int_t)st.relists_expired,
                  "watches", (json_int_t)st.watches, "events", (json_int_t)st.events, "bookmarks",
                  (json_int_t)st.bookmarks, "errors", (json_int_t)st.errors, "last_error",
                  st.last_error, "backoff_ms", (json_int_t)st.backoff_ms, "objects", objs);
    char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(j);
    if (s && (!a->last || strcmp(s, a->last) != 0)) {
        printf("%s\n", s);
        fflush(stdout);
        free(a->last);
        a->last = s;
    } else {
        free(s);
    }
}

static void stop(app *a)
{
    if (!a->r)
        return;
    print_state(a);
    wf_kube_reflector_stop(a->r);
    a->r = NULL;
    uv_close((uv_handle_t *)&a->sigterm, NULL);
    uv_close((uv_handle_t *)&a->sigint, NULL);
    uv_close((uv_handle_t *)&a->timer, NULL);
}

static void on_signal(uv_signal_t *s, int signum)
{
    stop(s->data);
}

static void on_timer(uv_timer_t *t)
{
    stop(t->data);
}

int main(int argc, char **argv)
{
    const char *kubeconfig = NULL, *context = NULL, *incluster = NULL, *kind_name = NULL;
    wf_kube_reflector_opts o = {0};
    long duration = 0, wait_synced = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (a[0] == '-' && !v) {
            fprintf(stderr, "weft-kube-watch: %s needs a value\n%s", a, USAGE);
            return 2;
        }
        if (strcmp(a, "--kubeconfig") == 0)
            kubeconfig = argv[++i];
        else if (strcmp(a, "--context") == 0)
            context = argv[++i];
        else if (strcmp(a, "--in-cluster") == 0)
            incluster = argv[++i];
        else if (strcmp(a, "-n") == 0 || strcmp(a, "--namespace") == 0)
            o.ns = argv[++i];
        else if (strcmp(a, "-l") == 0 || strcmp(a, "--selector") == 0)
            o.label_selector = argv[++i];
        else if (strcmp(a, "--field-selector") == 0)
            o.field_selector = argv[++i];
        else if (strcmp(a, "--page-size") == 0)
            o.page_size = atol(argv[++i]);
        else if (strcmp(a, "--watch-timeout") == 0)
            o.watch_timeout_s = atol(argv[++i]);
        else if (strcmp(a, "--seed") == 0)
            o.seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--duration") == 0)
            duration = atol(argv[++i]);
        else if (strcmp(a, "--wait-synced") == 0)
            wait_synced = atol(argv[++i]);
        else if (a[0] == '-') {
            fprintf(stderr, "weft-kube-watch: unknown option %s\n%s", a, USAGE);
            return 2;
        } else if (!kind_name)
            kind_name = a;
        else {
            fprintf(stderr, "weft-kube-watch: one KIND only\n%s", USAGE);
            return 2;
        }
    }
    if (!kind_name) {
        fputs(USAGE, stderr);
        return 2;
    }
    o.kind = wf_kube_kind_find(kind_name);
    if (!o.kind) {
        fprintf(stderr, "weft-kube-watch: unknown kind %s\n", kind_name);
        return 2;
    }
    wf_strbuf err = WF_STRBUF_INIT;
    wf_kube_config *cfg = NULL;
    wf_kube_client *client = NULL;
    if ((incluster ? wf_kube_incluster_env(incluster, &cfg, &err)
                   : wf_kubeconfig_load(kubeconfig, context, &cfg, &err)) != 0 ||
        wf_kube_client_new(cfg, &client, &err) != 0) {
        fprintf(stderr, "weft-kube-watch: %s\n", wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    app a = {.loop = uv_default_loop()};
    uv_signal_init(a.loop, &a.sigterm);
    uv_signal_init(a.loop, &a.sigint);
    uv_timer_init(a.loop, &a.timer);
    a.sigterm.data = a.sigint.data = a.timer.data = &a;
    uv_signal_start(&a.sigterm, on_signal, SIGTERM);
    uv_signal_start(&a.sigint, on_signal, SIGINT);
    if (duration > 0)
        uv_timer_start(&a.timer, on_timer, (uint64_t)duration * 1000, 0);
    a.r = wf_kube_reflector_start(a.loop, client, &o, print_state, &a, &err);
    int rc = 0;
    if (a.r && wait_synced >= 0) {
        printf("{\"synced\":%s}\n",
               wf_kube_reflector_wait_synced(a.r, wait_synced) ? "true" : "false");
        fflush(stdout);
    }
    if (!a.r) {
        fprintf(stderr, "weft-kube-watch: %s\n", wf_strbuf_cstr(&err));
        uv_close((uv_handle_t *)&a.sigterm, NULL);
        uv_close((uv_handle_t *)&a.sigint, NULL);
        uv_close((uv_handle_t *)&a.timer, NULL);
        rc = 1;
    }
    uv_run(a.loop, UV_RUN_DEFAULT);
    uv_loop_close(a.loop);
    wf_kube_client_free(client);
    free(a.last);
    wf_strbuf_free(&err);
    return rc;
}
