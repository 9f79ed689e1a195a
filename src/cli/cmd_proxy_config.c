/*
 * cmd_proxy_config.c - `weftctl proxy-config` (alias pc), istioctl's proxy-config
 * (reference istioctl-troubleshooting.md §2): argument parsing, the input (a dump file with
 * -f, or a proxy found through weft-pilot and read over its admin API), and dispatch to the
 * writers of cmd_pc_*.c (cmd_pc.h).
 *
 * Exit status: 0; 1 for errors (unreadable dump, unknown pod, pilot or proxy unreachable;
 * rootca-compare: roots that differ);
 * 64 for usage errors (unknown subcommand or flag, bad -o value, pod and -f both or neither).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cmd_pc.h"
#include "cli/flags.h"
#include "cli/http_client.h"
#include "cli/mesh_access.h"
#include "cli/proxy_find.h"

#define PC_ADMIN_TIMEOUT_MS 10000

typedef enum {
    SUB_CLUSTER,
    SUB_LISTENER,
    SUB_ROUTE,
    SUB_ENDPOINT,
    SUB_EDS,
    SUB_BOOTSTRAP,
    SUB_SECRET,
    SUB_ECDS,
    SUB_ALL,
    SUB_LOG,
    SUB_ROOTCA
} pc_sub;

static const struct {
    pc_sub sub;
    const char *name, *alias1, *alias2, *what; /* what: istioctl's name in messages */
} subs[] = {
    {SUB_CLUSTER, "cluster", "clusters", "c", "cluster"},
    {SUB_LISTENER, "listener", "listeners", "l", "listener"},
    {SUB_ROUTE, "route", "routes", "r", "route"},
    {SUB_ENDPOINT, "endpoint", "endpoints", "ep", "endpoints"},
    {SUB_EDS, "eds", NULL, NULL, "eds"},
    {SUB_BOOTSTRAP, "bootstrap", "b", NULL, "bootstrap"},
    {SUB_SECRET, "secret", "secrets", "s", "secret"},
    {SUB_ECDS, "ecds", "ec", NULL, "ecds"},
    {SUB_ALL, "all", "a", NULL, "all"},
    {SUB_LOG, "log", "o", NULL, "log"},
    {SUB_ROOTCA, "rootca-compare", "rc", NULL, "rootca-compare"},
};

enum {
    F_OUTPUT,
    F_FILE,
    F_NAMESPACE,
    F_PILOT,
    F_KUBECONFIG,
    F_CONTEXT,
    F_ISTIONS,
    F_SELECTOR,
    F_FQDN,
    F_PORT,
    F_SUBSET,
    F_DIRECTION,
    F_ADDRESS,
    F_TYPE,
    F_NAME,
    F_STATUS,
    F_CLUSTER,
    F_VERBOSE,
    F_LEVEL,
    F_RESET,
    F_HEADERS,
    F_ADMIN_PORT,
    F_HELP,
    F_COUNT
};

static void init_flags(wf_flag *f)
{
    const wf_flag defs[F_COUNT] = {
        [F_OUTPUT] = {"output", 'o', WF_FLAG_STRING, "Output format: one of json|yaml|short",
                      "string", false, false, NULL, NULL, 0},
        [F_FILE] = {"file", 'f', WF_FLAG_LIST,
                    "Envoy config dump file (- for stdin); rootca-compare: two, one per pod",
                    "string"},
        [F_NAMESPACE] = {"namespace", 'n', WF_FLAG_STRING, "Namespace of the pod"},
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING, "weft-pilot monitoring address (ip:port)"},
        [F_KUBECONFIG] = WF_MESH_FLAG_KUBECONFIG,
        [F_CONTEXT] = WF_MESH_FLAG_CONTEXT,
        [F_ISTIONS] = WF_MESH_FLAG_ISTIONS,
        [F_SELECTOR] = {"selector", 'l', WF_FLAG_STRING,
                        "pc log: every pod the label selector matches (cluster only)", "string"},
        [F_FQDN] = {"fqdn", 0, WF_FLAG_STRING, "Filter clusters by substring of FQDN field"},
        [F_PORT] = {"port", 0, WF_FLAG_STRING, "Filter by port", "int"},
        [F_SUBSET] = {"subset", 0, WF_FLAG_STRING, "Filter clusters by substring of subset"},
        [F_DIRECTION] = {"direction", 0, WF_FLAG_STRING, "Filter clusters by direction"},
        [F_ADDRESS] = {"address", 0, WF_FLAG_STRING, "Filter listeners/endpoints by address"},
        [F_TYPE] = {"type", 0, WF_FLAG_STRING, "Filter listeners by type (HTTP, TCP, ...)"},
        [F_NAME] = {"name", 0, WF_FLAG_STRING, "Filter routes by route name"},
        [F_STATUS] = {"status", 0, WF_FLAG_STRING, "Filter endpoints by status"},
        [F_CLUSTER] = {"cluster", 0, WF_FLAG_STRING, "Filter endpoints by cluster name"},
        [F_VERBOSE] = {"verbose", 0, WF_FLAG_BOOL, "Output more information (default true)"},
        [F_LEVEL] = {"level", 0, WF_FLAG_STRING, "pc log: [<logger>:]<level>,... or <level>"},
        [F_RESET] = {"reset", 'r', WF_FLAG_BOOL, "pc log: reset levels to the default"},
        [F_HEADERS] = {"with-headers", 0, WF_FLAG_BOOL, "pc all: a banner before each section"},
        [F_ADMIN_PORT] = {"proxy-admin-port", 0, WF_FLAG_STRING,
                          "Cluster: Envoy proxy admin port (default 15000); locally weft-pilot "
                          "knows the address",
                          "int"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "help for proxy-config"},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(FILE *f)
{
    fprintf(f, "Retrieve information about proxy configuration from a proxy or a config dump.\n\n"
               "Usage:\n"
               "  weftctl proxy-config {cluster|listener|route|endpoint|eds|bootstrap|secret|"
               "ecds|all|log} [POD[.NS] | deploy/NAME] [-n NS] [-f DUMP] [flags]\n"
               "  weftctl proxy-config rootca-compare POD1[.NS1] POD2[.NS2] [-f DUMP1 -f DUMP2] "
               "[flags]\n\n"
               "Aliases: proxy-config, pc; c/clusters, l/listeners, r/routes, ep/endpoints, b, "
               "s/secrets, ec, a/all, o/log, rc\n\n"
               "  weftctl proxy-config log -l <label selector> [--level ...]   "
               "(cluster)\n\n" WF_MESH_MODE_HELP "\n");
}

static void rootca_usage(FILE *f)
{
    fprintf(f,
            "Compare ROOTCA values for given 2 pods to check the connectivity between them.\n\n"
            "Both proxies' ROOTCA secrets (the trusted CA bundle SDS gave them) are read from\n"
            "their config dumps; they are identical when any certificate is in both. Exit 0\n"
            "when identical, 1 when not (or a pod has no ROOTCA), 64 for a usage error.\n\n"
            "Usage:\n"
            "  weftctl proxy-config rootca-compare [pod/]<name-1>[.<namespace-1>] "
            "[pod/]<name-2>[.<namespace-2>] [flags]\n"
            "  weftctl proxy-config rootca-compare -f DUMP1 -f DUMP2 [flags]\n\n"
            "Aliases:\n  rootca-compare, rc\n\n"
            "Examples:\n"
            "  # Compare ROOTCA values for given 2 pods to check the connectivity between them.\n"
            "  weftctl proxy-config rootca-compare <pod-name-1[.namespace]> "
            "<pod-name-2[.namespace]>\n\n");
}

/* ---- time -------------------------------------------------------------------------------------
 */

/* RFC 3339 ("2026-06-01T12:00:00Z", "...T12:00:00.5+02:00"). Returns 0 with *t, or -1. */
static int parse_rfc3339(const char *s, time_t *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1])) {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
            return -1;
        off = (hh * 60L + mm) * 60L * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p)
        return -1;
    *t = timegm(&tm) - off;
    return 0;
}

/* ---- live proxies -----------------------------------------------------------------------------
 */

int pc_live_fetch(const pc_live *live, const char *method, const char *path, char **body,
                  wf_strbuf *err)
{
    wf_http_resp r;
    wf_strbuf e2 = WF_STRBUF_INIT;
    *body = NULL;
    wf_proxy_ref ref = {.id = (char *)live->id,
                        .pod = (char *)live->pod,
                        .ns = (char *)live->ns,
                        .admin = (char *)live->admin};
    if (wf_mesh_proxy_do(live->mesh, &ref, method, path, live->timeout_ms, &r, &e2) != 0) {
        wf_strbuf_printf(err, "proxy %s (admin %s) did not answer: %s", live->id, live->admin,
                         wf_strbuf_cstr(&e2));
        wf_strbuf_free(&e2);
        return -1;
    }
    wf_strbuf_free(&e2);
    if (r.status != 200) {
        size_t n = r.len;
        while (n > 0 && (r.body[n - 1] == '\n' || r.body[n - 1] == '\r'))
            n--;
        wf_strbuf_printf(err, "unexpected status code: %d", r.status);
        if (n)
            wf_strbuf_printf(err, " (%.*s)", (int)n, r.body);
        wf_http_resp_free(&r);
        return -1;
    }
    *body = r.body;
    r.body = NULL;
    wf_http_resp_free(&r);
    return 0;
}

static void live_from_ref(wf_mesh *m, const wf_proxy_ref *ref, pc_live *live)
{
    snprintf(live->id, sizeof live->id, "%s", ref->id);
    snprintf(live->admin, sizeof live->admin, "%s", ref->admin);
    snprintf(live->pod, sizeof live->pod, "%s", ref->pod);
    snprintf(live->ns, sizeof live->ns, "%s", ref->ns);
    live->mesh = m;
    live->timeout_ms = PC_ADMIN_TIMEOUT_MS;
}

static int find_proxy(wf_mesh *m, const wf_flag *f, const char *name, pc_live *live, wf_strbuf *err)
{
    wf_proxy_ref ref;
    if (wf_mesh_find_proxy(m, name, f[F_NAMESPACE].sval, &ref, err) != 0)
        return -1;
    int rc = 0;
    if (!ref.admin) {
        wf_strbuf_printf(err, "proxy %s has no admin address (WEFT_ADMIN)", ref.id);
        rc = -1;
    } else {
        live_from_ref(m, &ref, live);
    }
    wf_proxy_ref_free(&ref);
    return rc;
}

/* A live proxy's /server_info "version" when its bootstrap dump has no node
 * user_agent_build_version (pc_opts.server_version); NULL when not needed or not known. */
static char *server_version(const pc_live *live, const wf_envoy_dump *d)
{
    const json_t *cfgs = json_object_get(d->root, "configs");
    const json_t *c;
    size_t i;
    json_array_foreach(cfgs, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "@type"));
        if (t && strcmp(t, WF_DUMP_T_BOOTSTRAP) == 0 &&
            wf_jpath(c, "bootstrap.node.user_agent_build_version"))
            return NULL;
    }
    char *body = NULL, *v = NULL;
    wf_strbuf e = WF_STRBUF_INIT;
    if (pc_live_fetch(live, "GET", "/server_info", &body, &e) == 0) {
        json_t *j = json_loads(body, 0, NULL);
        const char *s = json_string_value(json_object_get(j, "version"));
        v = s ? strdup(s) : NULL;
        json_decref(j);
    }
    free(body);
    wf_strbuf_free(&e);
    return v;
}

/* Reads the input document: the -f file, or the proxy's admin path (for the short bootstrap
 * also its /server_info version, *sv, malloc'd, may stay NULL). */
static int load_input(wf_mesh *m, const wf_flag *f, const char *pod, const char *path,
                      wf_envoy_dump *d, char **sv, wf_strbuf *err)
{
    if (f[F_FILE].sval)
        return wf_envoy_dump_load_file(f[F_FILE].sval, d, err);
    pc_live live;
    if (find_proxy(m, f, pod, &live, err) != 0)
        return -1;
    char *body = NULL;
    wf_strbuf e = WF_STRBUF_INIT;
    if (pc_live_fetch(&live, "GET", path, &body, &e) != 0) {
        /* istioctl: "failed to execute command on POD.NS sidecar: ..." */
        wf_strbuf_printf(err, "failed to execute command on %s sidecar: %s", live.id,
                         wf_strbuf_cstr(&e));
        wf_strbuf_free(&e);
        return -1;
    }
    wf_strbuf_free(&e);
    char src[512];
    snprintf(src, sizeof src, "%s (admin %s%s)", live.id, live.admin, path);
    int rc = wf_envoy_dump_parse(body, strlen(body), src, d, err);
    free(body);
    if (rc == 0 && sv)
        *sv = server_version(&live, d);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------------------------
 */

static int run_all(const wf_envoy_dump *d, pc_opts *o, bool headers, wf_strbuf *out, wf_strbuf *err)
{
    if (o->out != PC_OUT_SHORT)
        return pc_print_raw(o, d->root, false, out, err);
    static const char *const banners[] = {"BOOTSTRAP", "CLUSTER", "LISTENER",
                                          "ROUTE",     "SECRET",  "ENDPOINTS"};
    int (*const writers[])(const wf_envoy_dump *, const pc_opts *, wf_strbuf *, wf_strbuf *) = {
        pc_bootstrap, pc_clusters, pc_listeners, pc_routes, pc_secrets, pc_eds};
    o->all = true;
    for (size_t i = 0; i < 6; i++) {
        if (i > 0)
            wf_strbuf_putc(out, '\n');
        if (headers)
            wf_strbuf_printf(out, "------ %s INFO ------\n\n", banners[i]);
        if (writers[i](d, o, out, err) != 0)
            return -1;
    }
    return 0;
}

static const char *admin_path(pc_sub sub)
{
    switch (sub) {
    case SUB_ENDPOINT:
        return "/clusters?format=json";
    case SUB_ALL:
    case SUB_EDS:
    case SUB_ECDS:
        return "/config_dump?include_eds=true";
    default:
        return "/config_dump";
    }
}

static int run_sub(pc_sub sub, const wf_envoy_dump *d, pc_opts *o, bool headers, wf_strbuf *out,
                   wf_strbuf *err)
{
    switch (sub) {
    case SUB_CLUSTER:
        return pc_clusters(d, o, out, err);
    case SUB_LISTENER:
        return pc_listeners(d, o, out, err);
    case SUB_ROUTE:
        return pc_routes(d, o, out, err);
    case SUB_ENDPOINT:
        return pc_endpoints(d, o, out, err);
    case SUB_EDS:
        return pc_eds(d, o, out, err);
    case SUB_BOOTSTRAP:
        return pc_bootstrap(d, o, out, err);
    case SUB_SECRET:
        return pc_secrets(d, o, out, err);
    case SUB_ECDS:
        return pc_ecds(d, o, out, err);
    case SUB_ALL:
        return run_all(d, o, headers, out, err);
    case SUB_LOG:
    case SUB_ROOTCA: /* not a single-dump writer (execute) */
        break;
    }
    return -1;
}

/* Fills o from the flags. Returns 0, WF_EXIT_USAGE or WF_EXIT_ERROR with err set. */
static int make_opts(pc_sub sub, const wf_flag *f, pc_opts *o, wf_strbuf *err)
{
    memset(o, 0, sizeof *o);
    const char *out = f[F_OUTPUT].sval ? f[F_OUTPUT].sval : sub == SUB_BOOTSTRAP ? "json" : "short";
    if (sub == SUB_LOG) {
        if (strcmp(out, "short") != 0) {
            wf_strbuf_puts(err, "--output is not applicable for this command");
            return WF_EXIT_USAGE;
        }
    } else if (strcmp(out, "short") == 0) {
        o->out = PC_OUT_SHORT;
    } else if (strcmp(out, "json") == 0) {
        o->out = PC_OUT_JSON;
    } else if (strcmp(out, "yaml") == 0) {
        o->out = PC_OUT_YAML;
    } else {
        wf_strbuf_printf(err, "output format \"%s\" not supported", out);
        return WF_EXIT_USAGE;
    }
    o->fqdn = f[F_FQDN].sval;
    o->direction = f[F_DIRECTION].sval;
    o->subset = f[F_SUBSET].sval;
    o->address = f[F_ADDRESS].sval;
    o->type = f[F_TYPE].sval;
    o->name = f[F_NAME].sval;
    o->status = f[F_STATUS].sval;
    o->cluster = f[F_CLUSTER].sval;
    o->verbose = f[F_VERBOSE].set ? f[F_VERBOSE].bval : true;
    if (f[F_PORT].sval) {
        char *end;
        o->port = strtol(f[F_PORT].sval, &end, 10);
        if (*end || !f[F_PORT].sval[0] || o->port < 0) {
            wf_strbuf_printf(err, "invalid argument \"%s\" for \"--port\" flag", f[F_PORT].sval);
            return WF_EXIT_USAGE;
        }
    }
    const char *now = getenv("WEFTCTL_NOW");
    o->now = time(NULL);
    if (now && *now && parse_rfc3339(now, &o->now) != 0) {
        wf_strbuf_printf(err, "WEFTCTL_NOW=%s is not an RFC 3339 time", now);
        return WF_EXIT_ERROR;
    }
    return 0;
}

static int find_sub(const char *name, pc_sub *sub, const char **what)
{
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(name, subs[i].name) == 0 ||
            (subs[i].alias1 && strcmp(name, subs[i].alias1) == 0) ||
            (subs[i].alias2 && strcmp(name, subs[i].alias2) == 0)) {
            *sub = subs[i].sub;
            *what = subs[i].what;
            return 0;
        }
    return -1;
}

/* Checks the arguments of one subcommand. Returns 0 or an exit code with err set. */
static int check_args(pc_sub sub, const char *what, const wf_flag *f, size_t npos, wf_strbuf *err)
{
    if (f[F_SELECTOR].sval && sub != SUB_LOG) {
        wf_strbuf_puts(err,
                       "unknown flag: --selector (only proxy-config log takes a label selector)");
        return WF_EXIT_USAGE;
    }
    if (sub == SUB_LOG) {
        if (f[F_SELECTOR].sval ? npos != 0 : npos != 1) {
            wf_strbuf_puts(err, f[F_SELECTOR].sval
                                    ? "name cannot be provided when the label selector is "
                                      "specified"
                                    : "log requires pod name or --selector");
            return WF_EXIT_USAGE;
        }
        if (f[F_RESET].bval && f[F_LEVEL].sval) {
            wf_strbuf_puts(err, "--level cannot be combined with --reset");
            return WF_EXIT_USAGE;
        }
        if (f[F_LEVEL].sval && pc_log_check_levels(f[F_LEVEL].sval, err) != 0)
            return WF_EXIT_USAGE;
        return 0;
    }
    if (sub == SUB_ROOTCA) {
        if (f[F_FILE].nlist ? f[F_FILE].nlist != 2 || npos != 0 : npos != 2) {
            wf_strbuf_puts(err, "rootca-compare requires 2 pods as an argument");
            return WF_EXIT_USAGE;
        }
        return 0;
    }
    if (f[F_FILE].nlist > 1) {
        wf_strbuf_printf(err, "%s takes one --file", what);
        return WF_EXIT_USAGE;
    }
    if ((npos == 1) == (f[F_FILE].sval != NULL) || npos > 1) {
        wf_strbuf_printf(err, "%s requires pod name or --file parameter", what);
        return WF_EXIT_USAGE;
    }
    return 0;
}

/* The name a dump gives its proxy: Istio's node id "sidecar~IP~POD.NS~NS.svc.cluster.local"
 * gives POD.NS, weft-proxy's is "POD.NS" already; else the file name. Into buf. */
static void dump_proxy_id(const wf_envoy_dump *d, const char *file, char *buf, size_t cap)
{
    size_t index;
    wf_strbuf e = WF_STRBUF_INIT;
    json_t *b = wf_envoy_dump_section(d, WF_DUMP_T_BOOTSTRAP, &index, &e);
    wf_strbuf_free(&e);
    const char *id = json_string_value(wf_jpath(b, "bootstrap.node.id"));
    const char *t1 = id ? strchr(id, '~') : NULL, *t2 = t1 ? strchr(t1 + 1, '~') : NULL;
    const char *t3 = t2 ? strchr(t2 + 1, '~') : NULL;
    if (t3)
        snprintf(buf, cap, "%.*s", (int)(t3 - t2 - 1), t2 + 1);
    else
        snprintf(buf, cap, "%s", id && *id ? id : file);
}

/* rootca-compare: both ROOTCA bundles, from two proxies or two dump files. Returns 0 when
 * identical, 1 when not (err holds istioctl's error; out may hold -o json), -1 with err. */
static int rootca_compare(wf_mesh *m, const wf_flag *f, char **pos, const pc_opts *o,
                          wf_strbuf *out, wf_strbuf *err)
{
    char ids[2][300];
    char *pems[2] = {NULL, NULL};
    int rc = -1;
    for (int i = 0; i < 2; i++) {
        wf_envoy_dump d;
        pc_live live;
        if (f[F_FILE].nlist) {
            if (wf_envoy_dump_load_file(f[F_FILE].list[i], &d, err) != 0)
                goto done;
            dump_proxy_id(&d, f[F_FILE].list[i], ids[i], sizeof ids[i]);
        } else {
            char *body = NULL, src[512];
            if (find_proxy(m, f, pos[i], &live, err) != 0 ||
                pc_live_fetch(&live, "GET", "/config_dump", &body, err) != 0)
                goto done;
            snprintf(src, sizeof src, "%s (admin %s/config_dump)", live.id, live.admin);
            snprintf(ids[i], sizeof ids[i], "%s", live.id);
            int prc = wf_envoy_dump_parse(body, strlen(body), src, &d, err);
            free(body);
            if (prc != 0)
                goto done;
        }
        int prc = pc_rootca_pem(&d, ids[i], &pems[i], err);
        wf_envoy_dump_free(&d);
        if (prc != 0)
            goto done;
    }
    bool same;
    const char *const idv[2] = {ids[0], ids[1]};
    const char *const pemv[2] = {pems[0], pems[1]};
    if (pc_rootca_compare(idv, pemv, o, &same, out, err) == 0)
        rc = same ? 0 : 1;
done:
    free(pems[0]);
    free(pems[1]);
    return rc;
}

/* pc log -l SELECTOR: every pod it matches, one after the other (istioctl's logCmd). */
static int log_selected(wf_mesh *m, const wf_flag *f, wf_strbuf *out, wf_strbuf *err)
{
    wf_proxy_ref *refs = NULL;
    size_t n = 0;
    if (wf_mesh_select_proxies(m, f[F_SELECTOR].sval, f[F_NAMESPACE].sval, &refs, &n, err) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        pc_live live;
        live_from_ref(m, &refs[i], &live);
        rc = pc_log(&live, f[F_LEVEL].sval, f[F_RESET].bval, out, err);
    }
    for (size_t i = 0; i < n; i++)
        wf_proxy_ref_free(&refs[i]);
    free(refs);
    return rc;
}

static int execute(wf_mesh *m, pc_sub sub, const wf_flag *f, char **pos, const pc_opts *opts,
                   wf_strbuf *out, wf_strbuf *err)
{
    pc_opts o = *opts;
    if (sub == SUB_ROOTCA)
        return rootca_compare(m, f, pos, &o, out, err) == 0 ? 0 : -1;
    if (sub == SUB_LOG && f[F_SELECTOR].sval)
        return log_selected(m, f, out, err);
    if (sub == SUB_LOG) {
        pc_live live;
        if (find_proxy(m, f, pos[0], &live, err) != 0)
            return -1;
        return pc_log(&live, f[F_LEVEL].sval, f[F_RESET].bval, out, err);
    }
    wf_envoy_dump d;
    char *sv = NULL;
    bool want_sv = (sub == SUB_BOOTSTRAP || sub == SUB_ALL) && o.out == PC_OUT_SHORT;
    if (load_input(m, f, pos ? pos[0] : NULL, admin_path(sub), &d, want_sv ? &sv : NULL, err) != 0)
        return -1;
    o.server_version = sv;
    int rc = run_sub(sub, &d, &o, f[F_HEADERS].bval, out, err);
    wf_envoy_dump_free(&d);
    free(sv);
    return rc;
}

int wf_cmd_proxy_config(int argc, char **argv)
{
    if (argc < 2)
        return wf_usage_error("proxy-config",
                              "a subcommand is required: all, bootstrap, cluster, "
                              "ecds, endpoint, listener, log, rootca-compare, route or secret");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return WF_EXIT_OK;
    }
    pc_sub sub;
    const char *what;
    if (find_sub(argv[1], &sub, &what) != 0) {
        fprintf(stderr, "Error: unknown command \"%s\" for \"weftctl proxy-config\"\n", argv[1]);
        return WF_EXIT_USAGE;
    }
    wf_flag f[F_COUNT];
    init_flags(f);
    char **pos = NULL, ebuf[256];
    size_t npos = 0;
    wf_strbuf out = WF_STRBUF_INIT, err = WF_STRBUF_INIT, notes = WF_STRBUF_INIT;
    int rc = WF_EXIT_OK;
    pc_opts o;
    int prc = wf_flags_parse(f, F_COUNT, argc - 1, argv + 1, &pos, &npos, ebuf, sizeof ebuf);
    if (prc == 0 && f[F_FILE].nlist) /* one dump for every subcommand but rootca-compare */
        f[F_FILE].sval = f[F_FILE].list[f[F_FILE].nlist - 1];
    if (prc != 0) {
        wf_strbuf_puts(&err, ebuf);
        rc = WF_EXIT_USAGE;
    } else if (f[F_HELP].bval) {
        if (sub == SUB_ROOTCA)
            rootca_usage(stdout);
        else
            usage(stdout);
        wf_flags_usage(f, F_COUNT);
    } else if ((rc = check_args(sub, what, f, npos, &err)) == 0 &&
               (rc = make_opts(sub, f, &o, &err)) == 0) {
        o.notes = &notes;
        wf_mesh *m = NULL;
        wf_mesh_opts mo = {.pilot = f[F_PILOT].sval,
                           .kubeconfig = f[F_KUBECONFIG].sval,
                           .context = f[F_CONTEXT].sval,
                           .istio_ns = f[F_ISTIONS].sval,
                           .admin_port = f[F_ADMIN_PORT].sval};
        int e = f[F_FILE].nlist == 0 && wf_mesh_open(&mo, &m, &err) != 0
                    ? -1
                    : execute(m, sub, f, pos, &o, &out, &err);
        wf_mesh_free(m);
        rc = e == 0 ? WF_EXIT_OK : e == PC_E_USAGE ? WF_EXIT_USAGE : WF_EXIT_ERROR;
    }
    if (wf_strbuf_failed(&out)) {
        wf_strbuf_reset(&err);
        wf_strbuf_puts(&err, "out of memory");
        rc = WF_EXIT_ERROR;
    }
    /* rootca-compare -o json prints the comparison also when the roots differ (exit 1) */
    if (rc == WF_EXIT_OK || (sub == SUB_ROOTCA && rc == WF_EXIT_ERROR))
        fwrite(wf_strbuf_cstr(&out), 1, out.len, stdout);
    if (rc == WF_EXIT_OK && notes.len) { /* weft's notes: stdout stays istioctl's */
        fflush(stdout);
        fwrite(wf_strbuf_cstr(&notes), 1, notes.len, stderr);
    }
    if (rc != WF_EXIT_OK)
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
    free(pos);
    wf_flags_free(f, F_COUNT);
    wf_strbuf_free(&out);
    wf_strbuf_free(&err);
    wf_strbuf_free(&notes);
    return rc;
}
