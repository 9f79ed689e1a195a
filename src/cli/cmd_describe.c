/*
 * cmd_describe.c - `weftctl describe pod|service` (also `weftctl x describe`), istioctl's
 * `x describe` (istioctl/pkg/describe/describe.go; reference istioctl-troubleshooting.md §4).
 *
 * Where the inputs come from:
 *  - Kubernetes and Istio objects: `-f FILE` / `--config-dir DIR` (repeatable; the loader of
 *    `weftctl analyze`: YAML or JSON, `kind: List`, directories). In a cluster
 *    (--kubeconfig, --context, $KUBECONFIG: mesh_access.h) the API server's objects
 *    (kube_live.h), as istioctl reads them. Otherwise the files
 *    weft-pilot reports serving in /debug/configz (`--pilot ADDR`), read from this host: pilot
 *    has no endpoint that returns whole resources, so describe must run next to the mesh.
 *    JSON objects are taken as the API server returns them (fields literal); a YAML manifest
 *    gets the API server's default `protocol: TCP`.
 *  - each pod's /config_dump: `--config-dump POD[.NS]=FILE` (repeatable), else the proxy's
 *    admin API (mesh_access.h: found through pilot locally, through the API server's pod
 *    proxy subresource in a cluster) when `--pilot` is given, a cluster chosen, or no files.
 *
 * Output goes to stdout in istioctl's layout; errors to stderr as "Error: ..." with exit 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/describe.h"
#include "cli/flags.h"
#include "cli/http_client.h"
#include "cli/kube_live.h"
#include "cli/mesh_access.h"
#include "cli/proxy_find.h"

#define TIMEOUT_MS 5000

enum {
    F_NS,
    F_ISTIONS,
    F_IGNORE,
    F_PILOT,
    F_KUBECONFIG,
    F_CONTEXT,
    F_ADMIN_PORT,
    F_FILE,
    F_DIR,
    F_DUMP,
    F_HELP,
    F_COUNT
};

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_NS] = {"namespace", 'n', WF_FLAG_STRING,
                  "Namespace of the pod or service (default "
                  "\"default\")",
                  "namespace"},
        [F_ISTIONS] = {"istioNamespace", 'i', WF_FLAG_STRING,
                       "Istio root namespace for PeerAuthentication (default istio-system)",
                       "string"},
        [F_IGNORE] = {"ignoreUnmeshed", 0, WF_FLAG_BOOL, "Suppress warnings for unmeshed pods",
                      NULL},
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING,
                     "weft-pilot monitoring address (default " WF_DEFAULT_PILOT ")", "addr"},
        [F_KUBECONFIG] = WF_MESH_FLAG_KUBECONFIG,
        [F_CONTEXT] = WF_MESH_FLAG_CONTEXT,
        [F_ADMIN_PORT] = {"proxy-admin-port", 0, WF_FLAG_STRING,
                          "Cluster: the proxies' admin port (default 15000)", "int"},
        [F_FILE] = {"file", 'f', WF_FLAG_LIST, "Kubernetes/Istio manifests to read (repeatable)",
                    "file"},
        [F_DIR] = {"config-dir", 0, WF_FLAG_LIST, "Directory of manifests to read (repeatable)",
                   "dir"},
        [F_DUMP] = {"config-dump", 0, WF_FLAG_LIST,
                    "POD[.NS]=FILE: the pod's Envoy /config_dump (repeatable)", "pod=file"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for describe", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(const wf_flag *flags)
{
    printf("Describe a pod or service and the Istio configuration that applies to it: its\n"
           "Services and ports, DestinationRules (subsets this pod matches, traffic policy),\n"
           "VirtualServices (routes, weights, warnings), mTLS mode and ingress exposure.\n\n"
           "Usage:\n  weftctl describe pod <pod>[.<namespace>] [flags]   (alias: po)\n"
           "  weftctl describe service <svc>[.<namespace>] [flags]   (alias: svc)\n\n"
           "Examples:\n  weftctl describe pod catalog-v2-7b9c8d-x7k2p -n istioinaction\n"
           "  weftctl describe svc productpage -f cluster.json --config-dump "
           "productpage-v1=dump.json\n\n" WF_MESH_MODE_HELP "\n");
    wf_flags_usage(flags, F_COUNT);
}

const char *dsc_kname(const dsc_ctx *c, const wf_resource *r, char *buf, size_t cap)
{
    if (strcmp(r->ns, c->ns) == 0)
        snprintf(buf, cap, "%s", r->name);
    else
        snprintf(buf, cap, "%s.%s", r->name, r->ns);
    return buf;
}

/* --config-dump value for the pod ("name.ns=" first, then "name="), or NULL. */
static const char *dump_file_for(const dsc_ctx *c, const wf_resource *pod)
{
    char key[600];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            snprintf(key, sizeof key, "%s.%s=", pod->name, pod->ns);
        else
            snprintf(key, sizeof key, "%s=", pod->name);
        for (size_t i = 0; i < c->ndump_arg; i++)
            if (strncmp(c->dump_arg[i], key, strlen(key)) == 0)
                return c->dump_arg[i] + strlen(key);
    }
    return NULL;
}

static bool pilot_knows(const dsc_ctx *c, const wf_resource *pod)
{
    char id[600];
    snprintf(id, sizeof id, "%s.%s", pod->name, pod->ns);
    json_t *e;
    size_t i;
    json_array_foreach(c->syncz, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "proxy"));
        if (p && strcmp(p, id) == 0)
            return true;
    }
    return false;
}

static bool has_proxy_container(const wf_resource *pod)
{
    const wf_pod_spec *ps = &pod->t.pod->spec;
    for (size_t i = 0; i < ps->ncontainers + ps->ninit; i++) {
        const wf_container *ct =
            i < ps->ncontainers ? &ps->containers[i] : &ps->init_containers[i - ps->ncontainers];
        if (ct->name && strcmp(ct->name, "istio-proxy") == 0)
            return true;
    }
    return false;
}

bool dsc_pod_meshed(const dsc_ctx *c, const wf_resource *pod)
{
    return has_proxy_container(pod) || dump_file_for(c, pod) || pilot_knows(c, pod);
}

/* containerReady(pod, "istio-proxy"): 1 ready, 0 not ready, -1 no such container. */
static int proxy_ready(const dsc_ctx *c, const wf_resource *pod)
{
    const char *keys[2] = {"containerStatuses", "initContainerStatuses"};
    for (int k = 0; k < 2; k++) {
        const wf_node *st = wf_map_get(pod->status, keys[k]);
        for (size_t i = 0; i < wf_seq_len(st); i++) {
            const char *n = wf_map_str(wf_seq_at(st, i), "name");
            bool ready = false;
            if (n && strcmp(n, "istio-proxy") == 0)
                return wf_node_bool(wf_map_get(wf_seq_at(st, i), "ready"), &ready) && ready;
        }
    }
    /* weft's local mesh lists no container statuses (its pods name an istio-proxy container
     * or not): a proxy pilot knows, or whose dump was given, is a ready sidecar */
    if (!wf_map_get(pod->status, "containerStatuses") &&
        (dump_file_for(c, pod) || pilot_knows(c, pod)))
        return 1;
    return -1;
}

static json_t *parse_dump(const char *text, size_t len, const char *what, wf_strbuf *err)
{
    json_error_t je;
    json_t *d = json_loadb(text, len, 0, &je);
    if (!d)
        wf_strbuf_printf(err, "can't parse config_dump from %s: line %d: %s", what, je.line,
                         je.text);
    else if (!json_is_object(d)) {
        wf_strbuf_printf(err, "can't parse config_dump from %s: not a JSON object", what);
        json_decref(d);
        d = NULL;
    }
    return d;
}

static json_t *dump_from_file(const char *path, wf_strbuf *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        wf_strbuf_printf(err, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    wf_strbuf b = WF_STRBUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < WF_HTTP_MAX_BODY)
        wf_strbuf_append(&b, chunk, n);
    fclose(f);
    json_t *d = wf_strbuf_failed(&b) ? NULL : parse_dump(wf_strbuf_cstr(&b), b.len, path, err);
    if (wf_strbuf_failed(&b))
        wf_strbuf_puts(err, "out of memory");
    wf_strbuf_free(&b);
    return d;
}

static json_t *dump_from_proxy(const dsc_ctx *c, const wf_resource *pod, wf_strbuf *err)
{
    char id[600];
    snprintf(id, sizeof id, "%s.%s", pod->name, pod->ns);
    wf_proxy_ref ref = {0};
    if (wf_mesh_find_proxy(c->mesh, id, NULL, &ref, err))
        return NULL;
    json_t *d = NULL;
    wf_http_resp r = {0};
    if (wf_mesh_proxy_do(c->mesh, &ref, "GET", "/config_dump", TIMEOUT_MS, &r, err) == 0) {
        if (r.status != 200)
            wf_strbuf_printf(err, "unexpected status code: %d", r.status);
        else
            d = parse_dump(r.body, r.len, ref.admin, err);
        wf_http_resp_free(&r);
    }
    wf_proxy_ref_free(&ref);
    return d;
}

json_t *dsc_fetch_dump(const dsc_ctx *c, const wf_resource *pod, wf_strbuf *err)
{
    const char *file = dump_file_for(c, pod);
    if (file)
        return dump_from_file(file, err);
    if (c->mesh)
        return dump_from_proxy(c, pod, err);
    wf_strbuf_printf(err, "no config dump for pod %s.%s (give --config-dump %s=FILE or --pilot)",
                     pod->name, pod->ns, pod->name);
    return NULL;
}

/* ---- loading the cluster state ------------------------------------------------------------ */

/* pilot's answer to GET path (the first control plane's in a cluster), or NULL with err. */
static json_t *pilot_get_json(wf_mesh *m, const char *path, wf_strbuf *err)
{
    json_t *j = NULL;
    return wf_mesh_pilot_get_json(m, path, &j, err) == 0 ? j : NULL;
}

/* Loads the files pilot serves from (/debug/configz "resources[].file"), once each. */
static int load_files(wf_store *st, json_t *cz, wf_strbuf *err)
{
    dsc_names done = {0};
    json_t *e;
    size_t i;
    int rc = 0;
    json_array_foreach(json_object_get(cz, "resources"), i, e)
    {
        const char *f = json_string_value(json_object_get(e, "file"));
        if (!f || dsc_names_has(&done, f))
            continue;
        if (dsc_names_add(&done, f) || wf_store_load_path(st, f, NULL, NULL) < 0) {
            wf_strbuf_puts(err, "out of memory");
            rc = -1;
            break;
        }
    }
    if (rc == 0 && wf_store_error_count(st)) {
        const wf_load_error *le = wf_store_error(st, 0);
        wf_strbuf_printf(err,
                         "cannot read %s (named by weft-pilot's /debug/configz): %s; pilot "
                         "serves no whole resources, so run describe on the mesh's host or "
                         "pass --config-dir",
                         le->file, le->message);
        rc = -1;
    }
    dsc_names_free(&done);
    return rc;
}

/* pilot's --default-namespace: the namespace configz gives a resource whose file has none. */
static const char *pilot_default_ns(json_t *cz, wf_store *st)
{
    json_t *e;
    size_t i;
    for (size_t k = 0; k < wf_store_count(st); k++) {
        const wf_resource *r = wf_store_at(st, k);
        if (*r->ns || !r->kind_name)
            continue;
        json_array_foreach(json_object_get(cz, "resources"), i, e)
        {
            const char *kind = json_string_value(json_object_get(e, "kind"));
            const char *name = json_string_value(json_object_get(e, "name"));
            const char *file = json_string_value(json_object_get(e, "file"));
            const char *ns = json_string_value(json_object_get(e, "namespace"));
            if (kind && name && file && ns && *ns && !strcmp(kind, r->kind_name) &&
                !strcmp(name, r->name) && !strcmp(file, r->file))
                return ns;
        }
    }
    return NULL;
}

/* The store from pilot's files, with pilot's default namespace applied (two passes: the
 * first finds which namespace pilot gave the resources their files leave without one). */
static int load_from_pilot(dsc_ctx *c, wf_strbuf *err)
{
    json_t *cz = pilot_get_json(c->mesh, "/debug/configz", err);
    if (!cz)
        return -1;
    wf_store *probe = wf_store_new();
    int rc = probe ? load_files(probe, cz, err) : -1;
    if (rc == 0 && wf_store_finalize(probe, NULL, false))
        rc = -1;
    if (rc == 0) {
        const char *dns = pilot_default_ns(cz, probe);
        /* the store keeps the pointer: copy it into the store's arena */
        const char *keep = dns ? wf_arena_strdup(wf_store_arena(c->store), dns) : NULL;
        rc = load_files(c->store, cz, err);
        if (rc == 0 && wf_store_finalize(c->store, keep ? keep : c->ns, false))
            rc = -1;
    }
    if (rc && !wf_strbuf_cstr(err)[0])
        wf_strbuf_puts(err, "out of memory");
    wf_store_free(probe);
    json_decref(cz);
    return rc;
}

/* The cluster's objects, as istioctl's describe reads them from the API server. */
static int load_from_cluster(dsc_ctx *c, wf_strbuf *err)
{
    if (wf_kube_live_load(wf_mesh_kube_client(c->mesh), c->istio_ns, c->store, NULL, err) < 0)
        return -1;
    if (wf_store_finalize(c->store, c->ns, false)) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

static int load_state(dsc_ctx *c, const wf_flag *fl, wf_strbuf *err)
{
    c->store = wf_store_new();
    if (!c->store) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    /* pilot's proxies tell which pods of the local mesh carry a sidecar; a cluster's pods say
     * it themselves (an istio-proxy container), and istioctl's describe needs no istiod */
    if (c->mesh && c->mesh->mode == WF_MESH_LOCAL) {
        c->syncz = pilot_get_json(c->mesh, "/debug/syncz", err);
        if (!c->syncz)
            return -1;
    }
    size_t nfiles = fl[F_FILE].nlist + fl[F_DIR].nlist;
    if (nfiles == 0 && c->mesh && c->mesh->mode == WF_MESH_CLUSTER)
        return load_from_cluster(c, err);
    if (nfiles == 0)
        return load_from_pilot(c, err);
    for (size_t i = 0; i < nfiles; i++) {
        const char *p =
            i < fl[F_FILE].nlist ? fl[F_FILE].list[i] : fl[F_DIR].list[i - fl[F_FILE].nlist];
        if (wf_store_load_path(c->store, p, NULL, NULL) < 0) {
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
    }
    if (nfiles && wf_store_error_count(c->store)) {
        const wf_load_error *le = wf_store_error(c->store, 0);
        wf_strbuf_printf(err, "%s:%u: %s", le->file, le->line, le->message);
        return -1;
    }
    if (wf_store_finalize(c->store, c->ns, false)) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- the two commands ---------------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(const wf_resource *const *)a)->name, (*(const wf_resource *const *)b)->name);
}

/* handlers.InferPodInfo: "name.ns" splits at the last dot. */
static void infer(const char *arg, const char *dflt, char *name, size_t ncap, char *ns, size_t scap)
{
    const char *dot = strrchr(arg, '.');
    if (dot && dot > arg) {
        snprintf(name, ncap, "%.*s", (int)(dot - arg), arg);
        snprintf(ns, scap, "%s", dot + 1);
    } else {
        snprintf(name, ncap, "%s", arg);
        snprintf(ns, scap, "%s", dflt);
    }
}

static void revision_of(const wf_resource *pod, char *buf, size_t cap)
{
    const char *rev = wf_kvs_get(&pod->annotations, "istio.io/rev");
    buf[0] = '\0';
    if (rev) {
        snprintf(buf, cap, "%s", rev);
        return;
    }
    const char *st = wf_kvs_get(&pod->annotations, "sidecar.istio.io/status");
    json_t *j = st ? json_loads(st, 0, NULL) : NULL;
    const char *r = json_string_value(json_object_get(j, "revision"));
    /* weft: an injected pod whose status names no revision was injected by the default
     * revision (Istio's injector writes "revision": "default" then; weft's local mesh writes
     * the status without it), so its line reads "Pod Revision: default" as on Istio */
    if (!r && json_is_object(j) && !json_object_get(j, "revision"))
        r = "default";
    if (r)
        snprintf(buf, cap, "%s", r);
    json_decref(j);
}

static int describe_pod(dsc_ctx *c, const char *arg, wf_strbuf *err)
{
    char name[256], ns[256], rev[256], kn[512];
    infer(arg, c->ns, name, sizeof name, ns, sizeof ns);
    const wf_resource *pod = wf_store_find(c->store, WF_KIND_POD, ns, name);
    if (!pod || !pod->t.pod) {
        wf_strbuf_printf(err, "pods \"%s\" not found", name);
        return -1;
    }
    revision_of(pod, rev, sizeof rev);
    dsc_print_pod(c, pod, rev);
    size_t n = 0;
    const wf_resource *const *all = wf_store_kind_ns(c->store, WF_KIND_SERVICE, ns, &n);
    const wf_resource **svcs = malloc((n ? n : 1) * sizeof *svcs);
    dsc_pods pods = {0};
    if (!svcs || dsc_pods_add(&pods, pod)) {
        free(svcs);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    size_t ns_n = 0;
    for (size_t i = 0; i < n; i++) {
        const wf_service *s = all[i]->t.service;
        if (s && s->selector.n && wf_kvs_subset(&s->selector, &pod->labels))
            svcs[ns_n++] = all[i];
    }
    qsort(svcs, ns_n, sizeof *svcs, cmp_name);
    if (!ns_n && !c->ignore_unmeshed)
        fprintf(c->out,
                "Warning: No Kubernetes Services select pod %s (see https://istio.io/docs/"
                "setup/kubernetes/additional-setup/requirements/ )\n",
                dsc_kname(c, pod, kn, sizeof kn));
    fputs("--------------------\n", c->out);
    int rc = dsc_print_services(c, pod, svcs, ns_n, &pods, err);
    if (rc == 0) {
        fputs("--------------------\n", c->out);
        dsc_print_peer_authn(c, ns, &pod->labels);
        dsc_print_authz(c, ns, &pod->labels);
        dsc_print_capture(c, pod);
        rc = dsc_print_ingress(c, svcs, ns_n, &pods, err);
    }
    if (rc == 0) {
        fflush(c->out);
        dsc_print_unimplemented(c, pod, svcs, ns_n, stderr);
        dsc_print_gateway_secrets(c, pod, stderr);
    }
    dsc_pods_free(&pods);
    free(svcs);
    return rc;
}

static int select_pods(dsc_ctx *c, const wf_resource *svc, dsc_pods *usable, size_t *selected)
{
    char kn[512];
    size_t n = 0;
    const wf_resource *const *all = wf_store_kind_ns(c->store, WF_KIND_POD, svc->ns, &n);
    const wf_resource **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n && svc->t.service->selector.n; i++)
        if (all[i]->t.pod && wf_kvs_subset(&svc->t.service->selector, &all[i]->labels))
            v[k++] = all[i];
    qsort(v, k, sizeof *v, cmp_name);
    *selected = k;
    int rc = 0;
    for (size_t i = 0; i < k && rc == 0; i++) {
        const char *ph = v[i]->t.pod->phase ? v[i]->t.pod->phase : "";
        int ready;
        if (strcmp(ph, "Running") != 0) {
            fflush(c->out);
            printf("   Pod is not Running (%s)\n", ph);
            fflush(stdout);
        } else if ((ready = proxy_ready(c, v[i])) < 0) {
            fprintf(c->out, "Pod %s: no container \"istio-proxy\" in pod\n",
                    dsc_kname(c, v[i], kn, sizeof kn));
        } else if (!ready) {
            fprintf(c->out, "WARNING: Pod %s Container istio-proxy NOT READY\n",
                    dsc_kname(c, v[i], kn, sizeof kn));
        } else {
            rc = dsc_pods_add(usable, v[i]);
        }
    }
    free(v);
    return rc;
}

static int describe_service(dsc_ctx *c, const char *arg, wf_strbuf *err)
{
    char name[256], ns[256], kn[512];
    infer(arg, c->ns, name, sizeof name, ns, sizeof ns);
    const wf_resource *svc = wf_store_find(c->store, WF_KIND_SERVICE, ns, name);
    if (!svc || !svc->t.service) {
        wf_strbuf_printf(err, "services \"%s\" not found", name);
        return -1;
    }
    dsc_pods pods = {0};
    size_t selected = 0;
    if (select_pods(c, svc, &pods, &selected)) {
        dsc_pods_free(&pods);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    int rc = 0;
    if (!pods.n && !selected) {
        fprintf(c->out, "Service \"%s\" has no pods.\n", dsc_kname(c, svc, kn, sizeof kn));
    } else if (!pods.n) {
        fprintf(c->out,
                "Service \"%s\" has no Istio pods.  (%zu pods in service).\n"
                "Use `istioctl kube-inject` or redeploy with Istio automatic sidecar "
                "injection.\n",
                dsc_kname(c, svc, kn, sizeof kn), selected);
    } else {
        rc = dsc_print_services(c, pods.v[0], &svc, 1, &pods, err);
        if (rc == 0)
            rc = dsc_print_ingress(c, &svc, 1, &pods, err);
    }
    dsc_pods_free(&pods);
    return rc;
}

static int run(wf_flag *fl, char **pos, size_t npos)
{
    const char *what = npos ? pos[0] : NULL;
    bool is_pod =
        what && (strcmp(what, "pod") == 0 || strcmp(what, "po") == 0 || strcmp(what, "pods") == 0);
    bool is_svc = what && (strcmp(what, "service") == 0 || strcmp(what, "svc") == 0 ||
                           strcmp(what, "services") == 0);
    if (!is_pod && !is_svc) {
        if (what)
            return wf_usage_error("describe", "unknown resource type \"%s\"", what);
        return wf_usage_error("describe", "a resource type is required: pod or service");
    }
    if (npos != 2)
        return wf_usage_error("describe", "expecting %s name", is_pod ? "pod" : "service");
    bool files = fl[F_FILE].nlist || fl[F_DIR].nlist;
    dsc_ctx c = {
        .out = stdout,
        .istio_ns = fl[F_ISTIONS].sval && *fl[F_ISTIONS].sval ? fl[F_ISTIONS].sval : "istio-system",
        .ignore_unmeshed = fl[F_IGNORE].bval,
        .dump_arg = fl[F_DUMP].list,
        .ndump_arg = fl[F_DUMP].nlist,
    };
    wf_mesh_opts mo = {.pilot = fl[F_PILOT].sval,
                       .kubeconfig = fl[F_KUBECONFIG].sval,
                       .context = fl[F_CONTEXT].sval,
                       .istio_ns = c.istio_ns,
                       .admin_port = fl[F_ADMIN_PORT].sval};
    bool cluster = wf_mesh_choose(mo.pilot, mo.kubeconfig, mo.context, getenv("KUBECONFIG")) ==
                   WF_MESH_CLUSTER;
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = 0;
    if ((fl[F_PILOT].sval || cluster || !files) && wf_mesh_open(&mo, &c.mesh, &err) != 0)
        rc = -1;
    /* -n, else the kubeconfig context's namespace in a cluster, else "default" */
    c.ns = fl[F_NS].sval && *fl[F_NS].sval ? fl[F_NS].sval
           : c.mesh                        ? c.mesh->default_ns
                                           : "default";
    if (rc == 0)
        rc = load_state(&c, fl, &err);
    if (rc == 0)
        rc = is_pod ? describe_pod(&c, pos[1], &err) : describe_service(&c, pos[1], &err);
    fflush(stdout);
    if (rc)
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    json_decref(c.syncz);
    wf_store_free(c.store);
    wf_mesh_free(c.mesh);
    return rc ? WF_EXIT_ERROR : WF_EXIT_OK;
}

int wf_cmd_describe(int argc, char **argv)
{
    wf_flag fl[F_COUNT];
    init_flags(fl);
    char **pos = NULL;
    size_t npos = 0;
    int rc;
    if (wf_flags_parse_cmd("describe", fl, F_COUNT, argc, argv, &pos, &npos)) {
        rc = WF_EXIT_USAGE;
    } else if (fl[F_HELP].bval) {
        usage(fl);
        rc = WF_EXIT_OK;
    } else {
        rc = run(fl, pos, npos);
    }
    free(pos);
    wf_flags_free(fl, F_COUNT);
    return rc;
}
