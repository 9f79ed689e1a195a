/*
 * pilot.c - weft-pilot's wiring: source -> snapshots -> xDS pushes, and the debug server.
 * See pilot.h.
 */
#include "pilot/pilot.h"
#include "pilot/source_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "pilot/debug.h"
#include "pilot/jwks_fetch.h"
#include "pilot/ca_tokenreview.h"
#include "pilot/kube_writer.h"
#include "pilot/pilot_secure.h"
#include "pilot/ui_static.h"
#include "pilot/ui_validations.h"
#include "pilot/ui_graph.h"
#include "pilot/webhook.h"

#include <sys/stat.h>

struct wf_pilot {
    uv_loop_t *loop;
    wf_pilot_ca *ca;
    char ca_err[512]; /* why the last CA update failed ("" when it did not) */
    wf_config_source *src;
    wf_ads *ads;
    wf_debug *debug;
    uv_timer_t *ca_check;          /* WF_PILOT_CA_CHECK_S: the CA's expiry warning */
    wf_pilot_secure *secure;       /* the secure gRPC port, NULL when not asked */
    wf_jwks_resolver *jwks;        /* RequestAuthentication jwksUri key sets (pilot/jwks_fetch.h) */
    wf_webhook *webhook;           /* the admission webhook port, NULL when off */
    wf_inject_config *inject;      /* the injector's config as loaded (kube/inject.h) */
    wf_inject_config *inject_mesh; /* inject with the watched MeshConfig; what the webhook
                                    * uses, NULL before the first snapshot served */
    wf_kube_writer *writer;        /* the Kubernetes write-back (kube_writer.h), NULL without */
    wf_tokenreview *review;        /* service-account tokens (ca_tokenreview.h), NULL without */
    wf_serving_names names;        /* the serving certificates' DNS names (serving_cert.h) */
    struct wf_ui_graph *ui_graph;  /* the web view's scrape loop and graph (ui_graph.h) */
    bool serving;
    char *ui_dir;              /* the web view's folder (ui_static.h) */
    const char *ui_dir_origin; /* "--uiDir", "$WEFT_UI_DIR" or NULL (the default folder) */
    wf_ui_validations *ui_val; /* the web view's validations (ui_validations.h) */
};

/* The mesh root bundle as the root ConfigMap publishes it (pilot_ca.h), NULL without a CA. */
static const char *root_pem(const wf_pilot *p)
{
    const wf_ca *ca = wf_ca_server_ca(wf_pilot_ca_server(p->ca));
    return ca ? wf_ca_root_pem(ca) : NULL;
}

/* The injector follows the watched MeshConfig, as istiod's (its Webhook takes the mesh
 * watcher's config): a config rebuilt with the snapshot's mesh goes to the webhook. A mesh the
 * injector cannot take keeps the current one (logged). */
static void inject_follow_mesh(wf_pilot *p, const wf_snapshot *snap)
{
    if (!p->webhook || !p->inject || !snap->mesh)
        return;
    json_t *mesh = wf_meshcfg_user_json(snap->mesh);
    wf_inject_config *next = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    if (!mesh)
        wf_strbuf_puts(&why, "out of memory");
    else if (json_object_size(mesh) == 0) /* no MeshConfig file: the injector's own */
        next = NULL;
    else
        wf_inject_config_with_mesh(p->inject, mesh, "MeshConfig", &next, &why);
    json_decref(mesh);
    if (why.len) {
        WF_LOG(WF_LC_main, WF_LOG_WARN, "injector keeps its MeshConfig: %s", wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        return;
    }
    wf_strbuf_free(&why);
    wf_webhook_set_inject(p->webhook, next ? next : p->inject);
    wf_inject_config_free(p->inject_mesh); /* no request holds it (webhook.h) */
    p->inject_mesh = next;
}

static void on_snapshot(wf_snapshot *snap, void *ud)
{
    wf_pilot *p = ud;
    p->ca_err[0] = '\0';
    wf_pilot_ca_update(p->ca, snap, (int64_t)time(NULL), p->ca_err, sizeof p->ca_err);
    wf_pilot_ca_warn_expiry(p->ca, (int64_t)time(NULL));
    wf_pilot_secure_refresh(p->secure, (int64_t)time(NULL)); /* a new CA: a new certificate */
    wf_webhook_refresh(p->webhook, (int64_t)time(NULL));
    wf_ads_push(p->ads, snap);
    /* what each resource's last good version is, for the web view's "rejected" */
    if (wf_ui_validations_note(p->ui_val, snap, wf_ads_version(p->ads)) != 0)
        WF_LOG(WF_LC_main, WF_LOG_WARN, "web view: out of memory noting snapshot %llu",
               (unsigned long long)snap->seq);
    if (snap->mesh_changed)
        inject_follow_mesh(p, snap);
    p->serving = true;
    /* a snapshot with nothing changed changes no namespace, root or finding: the writer's
     * inputs (and the analyzers' run) are only recomputed for the others */
    if (p->writer && (snap->change != WF_CHANGE_NONE || snap->mesh_changed))
        wf_kube_writer_set_config(p->writer, snap->store, snap->mesh, root_pem(p));
}

static void announce(const char *what, const char *ip, int port)
{
    WF_LOG(WF_LC_main, WF_LOG_INFO, "%s listening on %s:%d", what, ip, port);
    printf("listening on %s:%d\n", ip, port);
    fflush(stdout);
}

/* A fetched key set changed: listeners again (istiod's JwksResolver PushFunc). */
static void on_jwks_changed(void *arg)
{
    wf_pilot *p = arg;
    if (p->ads)
        wf_ads_push_listeners(p->ads);
}

/* istiod's PILOT_JWT_PUB_KEY_REFRESH_INTERVAL ("20m", "30s", "500ms"); 0 = the default. */
static uint64_t jwks_refresh_ms(void)
{
    const char *v = getenv("PILOT_JWT_PUB_KEY_REFRESH_INTERVAL");
    char *end = NULL;
    double n = v ? strtod(v, &end) : 0;
    if (!v || end == v || n <= 0)
        return 0;
    double unit = strcmp(end, "ms") == 0  ? 1
                  : strcmp(end, "s") == 0 ? 1000
                  : strcmp(end, "m") == 0 ? 60000
                  : strcmp(end, "h") == 0 ? 3600000
                                          : 0;
    return (uint64_t)(n * unit);
}

static int start_ads(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    char ip[64];
    int port;
    const char *addr = o->grpc_addr ? o->grpc_addr : "127.0.0.1:15010";
    const char *pipe = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : NULL;
    if (pipe) {
        snprintf(ip, sizeof ip, "127.0.0.1");
        port = 0;
    } else if (wf_pilot_parse_addr(addr, ip, sizeof ip, &port)) {
        snprintf(err, cap, "bad --grpcAddr %s: want ip:port", addr);
        return -1;
    }
    wf_ads_service csr = {.path = WF_CA_CSR_PATH,
                          .h = wf_ca_server_handlers(wf_pilot_ca_server(p->ca))};
    wf_ads_opts ao = {
        .services = &csr,
        .n_services = 1,
        .ip = ip,
        .port = port,
        .pipe = pipe,
        .ping_interval_ms = o->keepalive_interval_ms,
        .ping_timeout_ms = o->keepalive_timeout_ms,
        .retention_ms = o->retention_ms,
    };
    p->jwks = wf_jwks_resolver_new(p->loop, jwks_refresh_ms(), on_jwks_changed, p);
    if (!p->jwks) {
        snprintf(err, cap, "cannot start the JWKS resolver: out of memory");
        return -1;
    }
    ao.jwks_resolve = wf_jwks_resolve;
    ao.jwks_arg = p->jwks;
    if (wf_ads_start(p->loop, &ao, &p->ads, err, cap)) {
        return -1;
    }
    if (pipe) {
        WF_LOG(WF_LC_main, WF_LOG_INFO, "xDS server listening on unix:%s", pipe);
    } else {
        announce("xDS server", ip, wf_ads_port(p->ads));
    }
    return 0;
}

static int start_debug(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    char ip[64];
    int port;
    const char *addr = o->monitoring_addr ? o->monitoring_addr : "127.0.0.1:15014";
    if (wf_pilot_parse_addr(addr, ip, sizeof ip, &port)) {
        snprintf(err, cap, "bad --monitoringAddr %s: want ip:port", addr);
        return -1;
    }
    wf_debug_opts d = {.ip = ip, .port = port, .pilot = p, .route = o->debug_route};
    if (wf_debug_start(p->loop, &d, &p->debug, err, cap)) {
        return -1;
    }
    announce("monitoring server", ip, wf_debug_port(p->debug));
    return 0;
}

/* The Kubernetes write-back, fed the first snapshot at once (it came during start()). */
static int start_writer(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    const char *cm = getenv("PILOT_CA_CERT_CONFIGMAP");
    const char *an = getenv("PILOT_ENABLE_ANALYSIS"); /* istiod's: Go bool, default false */
    wf_kube_writer_opts wo = {.cm_name = cm && *cm ? cm : NULL,
                              .revision = o->revision,
                              .webhook_ready = false, /* until start_webhook serves */
                              .analysis = an && (!strcmp(an, "true") || !strcmp(an, "1") ||
                                                 !strcmp(an, "t") || !strcmp(an, "T") ||
                                                 !strcmp(an, "TRUE") || !strcmp(an, "True"))};
    wf_strbuf why = WF_STRBUF_INIT;
    wf_kube_client *client = wf_kube_source_client(p->src);
    p->writer = client ? wf_kube_writer_start(p->loop, client, &wo, &why) : NULL;
    if (!client)
        wf_strbuf_puts(&why, "the config source has no client");
    if (!p->writer)
        snprintf(err, cap, "cannot start the Kubernetes write-back: %s", wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    if (!p->writer)
        return -1;
    wf_snapshot *s = p->src->current(p->src);
    if (s)
        wf_kube_writer_set_config(p->writer, s->store, s->mesh, root_pem(p));
    return 0;
}

/* Kubernetes mode: the CSR service and XDS_AUTH also take service-account tokens, checked with
 * a TokenReview (istiod's KubeJWTAuthenticator). */
static int start_review(wf_pilot *p, char *err, size_t cap)
{
    wf_strbuf why = WF_STRBUF_INIT;
    wf_kube_client *client = wf_kube_source_client(p->src);
    p->review = client ? wf_tokenreview_start(p->loop, client, NULL, &why) : NULL;
    if (!p->review) {
        snprintf(err, cap, "cannot start the TokenReview authenticator: %s",
                 client ? wf_strbuf_cstr(&why) : "the config source has no client");
        wf_strbuf_free(&why);
        return -1;
    }
    wf_strbuf_free(&why);
    wf_ca_server_set_review(wf_pilot_ca_server(p->ca), p->review);
    return 0;
}

static int start_source(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    wf_dir_source_opts so = {
        .dirs = o->config_dirs,
        .n_dirs = o->n_dirs,
        .mesh_file = o->mesh_file,
        .domain_suffix = o->domain_suffix,
        .default_ns = o->default_ns,
        .debounce_after_ms = o->debounce_after_ms,
        .debounce_max_ms = o->debounce_max_ms,
        .rescan_ms = o->rescan_ms,
        .service_ips = o->service_ips,
    };
    wf_kube_source_opts ko = {
        .kubeconfig = o->kubeconfig,
        .context = o->kube_context,
        .in_cluster = o->kube_in_cluster,
        .incluster_root = o->kube_incluster_root,
        .domain_suffix = o->domain_suffix,
        .debounce_after_ms = o->debounce_after_ms,
        .debounce_max_ms = o->debounce_max_ms,
        .sync_timeout_ms = o->kube_sync_timeout_ms,
        .service_ips = o->service_ips,
        .system_ns = o->system_ns,
    };
    if (o->kube ? wf_kube_source_new(p->loop, &ko, &p->src)
                : wf_dir_source_new(p->loop, &so, &p->src)) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    p->src->on_change = on_snapshot;
    p->src->on_change_ud = p;
    if (p->src->start(p->src, err, cap) != 0)
        return -1;
    if (!wf_ca_server_ca(wf_pilot_ca_server(p->ca))) {
        snprintf(err, cap, "cannot set up the CA: %s", p->ca_err[0] ? p->ca_err : "no snapshot");
        return -1;
    }
    return o->kube ? start_review(p, err, cap) || start_writer(p, o, err, cap) : 0;
}

static void on_ca_check(uv_timer_t *t)
{
    wf_pilot *p = t->data;
    wf_pilot_ca_warn_expiry(p->ca, (int64_t)time(NULL));
    wf_pilot_secure_refresh(p->secure, (int64_t)time(NULL));
    wf_webhook_refresh(p->webhook, (int64_t)time(NULL));
}

static int start_secure(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    if (!o->secure_grpc_addr)
        return 0;
    if (wf_pilot_secure_start(p->ads, wf_pilot_ca_server(p->ca), &p->names, o->secure_grpc_addr,
                              !o->no_xds_auth, (int64_t)time(NULL), &p->secure, err, cap) != 0)
        return -1;
    char ip[64];
    int port;
    wf_pilot_parse_addr(o->secure_grpc_addr, ip, sizeof ip, &port);
    announce("secure gRPC server", ip, wf_pilot_secure_port(p->secure));
    return 0;
}

/* The injector's config: the folder's files (Istio's chart defaults for those absent) and the
 * mesh file; what weft does not implement in them is logged, never silently ignored. A path
 * that is not a folder is an error; a folder given (--injectConfigDir) and absent a warning,
 * the default one absent is normal (info). */
static int load_inject(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    const char *dir = o->inject_config_dir ? o->inject_config_dir : WF_PILOT_INJECT_DIR;
    struct stat st;
    if (stat(dir, &st) != 0) {
        WF_LOG(WF_LC_main, o->inject_config_dir ? WF_LOG_WARN : WF_LOG_INFO,
               "injector config %s absent: Istio's defaults", dir);
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(err, cap,
                 "--injectConfigDir %s: not a folder (want the folder of the files config and "
                 "values, as istiod mounts the istio-sidecar-injector ConfigMap)",
                 dir);
        return -1;
    }
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = wf_inject_config_load(dir, o->mesh_file, &p->inject, &why);
    if (rc != 0)
        snprintf(err, cap, "--injectConfigDir %s: %s", dir,
                 why.len ? wf_strbuf_cstr(&why) : "cannot be read");
    wf_strbuf_free(&why);
    size_t i;
    json_t *m;
    json_array_foreach(rc == 0 ? wf_inject_config_unimplemented(p->inject) : NULL, i, m)
        WF_LOG(WF_LC_main, WF_LOG_WARN, "injector config: %s", json_string_value(m));
    return rc;
}

static int start_webhook(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    const char *addr = o->webhook_addr ? o->webhook_addr : WF_PILOT_WEBHOOK_ADDR;
    if (strcmp(addr, "off") == 0)
        return 0;
    if (load_inject(p, o, err, cap) != 0)
        return -1;
    wf_webhook_opts wo = {
        .addr = addr, .cas = wf_pilot_ca_server(p->ca), .names = &p->names, .inject = p->inject};
    int uv_err;
    if (wf_webhook_start(p->loop, &wo, (int64_t)time(NULL), &p->webhook, &uv_err, err, cap) != 0) {
        if (uv_err && !o->webhook_addr_given) { /* the default port taken: go on without */
            WF_LOG(WF_LC_main, WF_LOG_WARN, "%s; the webhooks are not served", err);
            err[0] = '\0';
            return 0;
        }
        return -1;
    }
    char ip[64];
    int port;
    wf_pilot_parse_addr(addr, ip, sizeof ip, &port);
    wf_snapshot *s = p->src->current(p->src); /* the first snapshot came before */
    if (s)
        inject_follow_mesh(p, s);
    announce("webhook server", ip, wf_webhook_port(p->webhook));
    return 0;
}

static void free_handle(uv_handle_t *h)
{
    free(h);
}

static int start_ca_check(wf_pilot *p, char *err, size_t cap)
{
    p->ca_check = malloc(sizeof *p->ca_check);
    if (!p->ca_check) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    uv_timer_init(p->loop, p->ca_check);
    p->ca_check->data = p;
    uv_timer_start(p->ca_check, on_ca_check, WF_PILOT_CA_CHECK_S * 1000ull,
                   WF_PILOT_CA_CHECK_S * 1000ull);
    uv_unref((uv_handle_t *)p->ca_check); /* never keeps the loop alive */
    return 0;
}

static int start_ca(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    char def[4096];
    const char *dir = o->ca_dir ? o->ca_dir : wf_pilot_ca_default_dir(def, sizeof def);
    if (wf_pilot_ca_new(dir, &p->ca, err, cap) != 0)
        return -1;
    wf_pilot_ca_set_namespace(p->ca, o->system_ns);
    WF_LOG(WF_LC_main, WF_LOG_INFO, "CA directory %s", dir);
    return 0;
}

/* The web view's folder and validations cache (ui_static.h, ui_validations.h). */
static int start_ui(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    char dir[4096];
    wf_ui_dir_resolve(o->ui_dir, getenv("WEFT_UI_DIR"), NULL, dir, sizeof dir);
    /* the validations read the folders again as weftctl analyze does; with the Kubernetes
     * source, the snapshot's documents (n_dirs 0) */
    wf_ui_val_source vs = {.dirs = o->config_dirs,
                           .n_dirs = o->kube ? 0 : o->n_dirs,
                           .default_ns = o->default_ns && *o->default_ns ? o->default_ns : NULL};
    if (!(p->ui_dir = strdup(dir)) || !(p->ui_val = wf_ui_validations_new(&vs))) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    const char *env = getenv("WEFT_UI_DIR");
    p->ui_dir_origin = o->ui_dir && *o->ui_dir ? "--uiDir" : env && *env ? "$WEFT_UI_DIR" : NULL;
    WF_LOG(WF_LC_main, WF_LOG_INFO, "web view folder %s", p->ui_dir);
    char why[8192];
    if (wf_ui_dir_problem(p->ui_dir, p->ui_dir_origin, why, sizeof why))
        WF_LOG(WF_LC_main, WF_LOG_WARN, "%s (the web view at /ui/ will answer 503)", why);
    return 0;
}

/* The web view's scrape loop (ui_graph.h), when its interval is not 0. */
static int start_ui_graph(wf_pilot *p, const wf_pilot_opts *o, char *err, size_t cap)
{
    if (!o->ui_scrape.interval_ms)
        return 0;
    p->ui_graph = wf_ui_graph_new(p->loop, p->ads, &o->ui_scrape, err, cap);
    return p->ui_graph ? 0 : -1;
}

int wf_pilot_start(uv_loop_t *loop, const wf_pilot_opts *opts, wf_pilot **out, char *err,
                   size_t cap)
{
    wf_pilot *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    p->loop = loop;
    if (wf_serving_names_make(opts->system_ns, opts->revision, opts->custom_host, &p->names)) {
        snprintf(err, cap, "out of memory");
        free(p);
        return -1;
    }
    if (start_ui(p, opts, err, cap) || start_ca(p, opts, err, cap) ||
        start_ads(p, opts, err, cap) || start_debug(p, opts, err, cap) ||
        start_source(p, opts, err, cap) || start_secure(p, opts, err, cap) ||
        start_webhook(p, opts, err, cap) || start_ca_check(p, err, cap) ||
        start_ui_graph(p, opts, err, cap)) {
        wf_pilot_stop(p);
        return -1;
    }
    /* the validating webhook is switched to failurePolicy Fail only while pilot serves it */
    wf_pilot_set_webhook_ready(p, p->webhook != NULL);
    *out = p;
    return 0;
}

void wf_pilot_stop(wf_pilot *p)
{
    if (!p) {
        return;
    }
    wf_kube_writer_stop(p->writer); /* before the source: it uses the source's client */
    p->writer = NULL;
    if (p->review) { /* before the source: it uses the source's client */
        wf_ca_server_set_review(wf_pilot_ca_server(p->ca), NULL);
        wf_tokenreview_stop(p->review); /* pending calls are answered (refused) */
        p->review = NULL;
    }
    if (p->src) {
        p->src->stop(p->src);
    }
    if (p->ca_check)
        uv_close((uv_handle_t *)p->ca_check, free_handle);
    wf_debug_close(p->debug);
    wf_ui_graph_free(p->ui_graph); /* before the xDS server it reads from */
    wf_webhook_close(p->webhook);
    wf_inject_config_free(p->inject_mesh);
    wf_inject_config_free(p->inject);
    wf_ads_close(p->ads);
    p->ads = NULL;
    wf_jwks_resolver_free(p->jwks);
    wf_pilot_secure_free(p->secure);
    wf_pilot_ca_free(p->ca);
    wf_serving_names_free(&p->names);
    wf_ui_validations_free(p->ui_val);
    free(p->ui_dir);
    free(p);
}

bool wf_pilot_ready(const wf_pilot *p)
{
    return p->serving && p->ads && wf_ads_snapshot(p->ads) != NULL;
}

wf_config_source *wf_pilot_source(const wf_pilot *p)
{
    return p->src;
}

wf_ads *wf_pilot_ads(const wf_pilot *p)
{
    return p->ads;
}

const char *wf_pilot_ui_dir(const wf_pilot *p)
{
    return p->ui_dir;
}

const char *wf_pilot_ui_dir_origin(const wf_pilot *p)
{
    return p->ui_dir_origin;
}

wf_ui_validations *wf_pilot_ui_validations(const wf_pilot *p)
{
    return p->ui_val;
}

wf_webhook *wf_pilot_webhook(const wf_pilot *p)
{
    return p->webhook;
}

struct wf_ui_graph *wf_pilot_ui_graph(const wf_pilot *p)
{
    return p->ui_graph;
}

wf_jwks_resolver *wf_pilot_jwks(const wf_pilot *p)
{
    return p->jwks;
}

wf_kube_writer *wf_pilot_kube_writer(const wf_pilot *p)
{
    return p->writer;
}

void wf_pilot_set_webhook_ready(wf_pilot *p, bool ready)
{
    if (p->writer)
        wf_kube_writer_set_webhook_ready(p->writer, ready);
}

wf_pilot_ca *wf_pilot_get_ca(const wf_pilot *p)
{
    return p->ca;
}

int wf_pilot_monitoring_port(const wf_pilot *p)
{
    return p->debug ? wf_debug_port(p->debug) : -1;
}
