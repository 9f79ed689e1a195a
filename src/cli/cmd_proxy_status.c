/*
 * cmd_proxy_status.c - `weftctl proxy-status [PROXY] [-n NS] [-o table|json|yaml]` (alias ps),
 * istioctl proxy-status (reference istioctl-troubleshooting.md §3) against weft-pilot:
 *  - no PROXY: GET <pilot>/debug/syncz and print the sync table (classic columns by default,
 *    istioctl >= 1.27's SUBSCRIBED TYPES table with --table-format types, its per-type columns
 *    with --verbosity 1), or each control plane's CSDS DiscoveryResponse with -o json|yaml;
 *  - PROXY: compare GET <pilot>/debug/config_dump?proxyID=<pod>.<ns> with the proxy's live
 *    /config_dump (or --file) and print "Clusters Match" / "... Don't Match" + unified diff.
 * Offline/testing: --from-file reads the control plane's answer(s) from a file instead of
 * asking weft-pilot (a /debug/syncz array, or {"<istiod>": DiscoveryResponse | syncz array});
 * then PROXY filters rows by substring as istioctl <= 1.21 did. $WEFTCTL_NOW (RFC 3339) fixes
 * the clock for ages. Where pilot and the proxies are (local mesh or a cluster through its API
 * server, --kubeconfig/--context): mesh_access.h. Exit: 0, 1 errors, 64 bad flags or -o value.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/http_client.h"
#include "cli/mesh_access.h"
#include "cli/proxy_find.h"
#include "cli/proxy_status.h"

#define ADMIN_TIMEOUT_MS 5000

enum {
    F_NS,
    F_OUT,
    F_PILOT,
    F_KUBECONFIG,
    F_CONTEXT,
    F_ISTIONS,
    F_ADMIN_PORT,
    F_FILE,
    F_VERB,
    F_TABLE,
    F_FROM,
    F_REV,
    F_HIDE,
    F_HELP,
    F_COUNT
};

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_NS] = {"namespace", 'n', WF_FLAG_STRING, "Namespace of the proxies (default: all)",
                  "string"},
        [F_OUT] = {"output", 'o', WF_FLAG_STRING, "Output format: one of table|json|yaml",
                   "string"},
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING,
                     "weft-pilot monitoring address (default " WF_DEFAULT_PILOT ")", "addr"},
        [F_KUBECONFIG] = WF_MESH_FLAG_KUBECONFIG,
        [F_CONTEXT] = WF_MESH_FLAG_CONTEXT,
        [F_ISTIONS] = WF_MESH_FLAG_ISTIONS,
        [F_ADMIN_PORT] = {"proxy-admin-port", 0, WF_FLAG_STRING,
                          "Cluster: the proxies' admin port (default 15000)", "int"},
        [F_FILE] = {"file", 'f', WF_FLAG_STRING,
                    "Envoy config dump to compare with (PROXY given; instead of its /config_dump)",
                    "file"},
        [F_VERB] = {"verbosity", 'v', WF_FLAG_STRING,
                    "1: one column per xDS type (with --table-format types)", "int"},
        [F_TABLE] = {"table-format", 0, WF_FLAG_STRING,
                     "classic (NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION, default) or types "
                     "(istioctl >= 1.27: SUBSCRIBED TYPES)",
                     "string"},
        [F_FROM] = {"from-file", 0, WF_FLAG_STRING,
                    "Testing/offline: read the control plane's sync state from this file (a "
                    "/debug/syncz answer, or {\"<istiod>\": xDS syncz DiscoveryResponse or "
                    "/debug/syncz array}) instead of asking weft-pilot",
                    "file"},
        [F_REV] = {"revision", 'r', WF_FLAG_STRING, "Accepted for compatibility (unused)",
                   "string"},
        [F_HIDE] = {"hide-disconnected", 0, WF_FLAG_BOOL,
                    "Leave out proxies whose stream ended (weft's DISCONNECTED rows): "
                    "istioctl's view, where istiod lists connected proxies only",
                    NULL},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for proxy-status", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(const wf_flag *flags)
{
    printf("Retrieves the last sent and last acknowledged xDS sync from weft-pilot to each proxy "
           "in the mesh.\nWith a proxy named, compares what weft-pilot would send it with the "
           "configuration it holds.\n\n"
           "Usage:\n  weftctl proxy-status [<type>/]<name>[.<namespace>] [flags]\n\n"
           "Aliases:\n  proxy-status, ps\n\n"
           "Examples:\n"
           "  # Sync status of every proxy\n  weftctl proxy-status\n\n"
           "  # Compare pilot's view with a proxy's live configuration\n"
           "  weftctl ps catalog-6cf4b97d-abcde.istioinaction\n\n"
           "  # Compare with a saved Envoy config dump\n"
           "  weftctl ps catalog-6cf4b97d-abcde.istioinaction --file envoy.json\n\n"
           "Values: SYNCED (age), NOT SENT (watched, nothing sent yet), STALE (age: sent, not "
           "acknowledged yet),\nERROR (age) after a NACK, IGNORED (type not watched), "
           "DISCONNECTED (time since the stream ended;\nweft's rows, --hide-disconnected leaves "
           "them out). -o json carries per type the status, the\nnonces sent and acked, the "
           "versions sent and acked and when the status last changed.\n"
           "$WEFTCTL_NOW (RFC 3339) fixes the clock used for ages (testing).\n\n" WF_MESH_MODE_HELP
           "In a cluster the ISTIOD column names the istiod pod that answered.\n\n");
    wf_flags_usage(flags, F_COUNT);
    printf("\nExit codes: 0 success, 64 bad flag or output format, 1 other errors.\n");
}

static time_t clock_now(void)
{
    const char *s = getenv("WEFTCTL_NOW");
    struct tm tm = {0};
    if (s && *s && strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
        return timegm(&tm);
    return time(NULL);
}

static json_t *load_json_file(const char *path, wf_strbuf *err)
{
    json_error_t je;
    json_t *v = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_DECODE_ANY, &je)
                                       : json_load_file(path, JSON_DECODE_ANY, &je);
    if (!v)
        wf_strbuf_printf(err, "cannot read %s: %s (line %d, column %d)", path, je.text, je.line,
                         je.column);
    return v;
}

typedef struct ps_opts {
    wf_mesh *mesh; /* NULL with --from-file */
    const char *ns, *out, *file, *from, *table;
    bool verbose, hide_disconnected;
    const char *verbosity; /* -v value as given, NULL when absent */
    const char *proxy;     /* positional, NULL when none */
} ps_opts;

static int render(ps_state *st, const ps_opts *o)
{
    if (o->ns && *o->ns)
        ps_filter_namespace(st, o->ns);
    if (o->hide_disconnected)
        ps_filter_connected(st);
    ps_sort(st);
    if (strcmp(o->out, "json") == 0)
        return ps_print_json(st, stdout);
    if (strcmp(o->out, "yaml") == 0)
        return ps_print_yaml(st, stdout);
    if (strcmp(o->table, "types") == 0)
        return o->verbose ? ps_print_verbose(st, stdout) : ps_print_types(st, stdout);
    return ps_print_classic(st, stdout);
}

static int status_all(const ps_opts *o, wf_strbuf *err)
{
    ps_state st = {.now = clock_now()};
    json_t *doc = NULL;
    int rc;
    if (o->from) {
        doc = load_json_file(o->from, err);
        rc = doc ? ps_add_file_doc(&st, doc, st.now, err) : -1;
        if (rc == 0 && o->proxy)
            ps_filter_substring(&st, o->proxy); /* istioctl <= 1.21 `ps <pod>` */
    } else {
        wf_mesh_answer *a = NULL;
        size_t n = 0;
        rc = wf_mesh_pilots_get(o->mesh, "/debug/syncz", &a, &n, err);
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = ps_add_syncz(&st, a[i].istiod, a[i].doc, err);
        wf_mesh_answers_free(a, n);
    }
    if (rc == 0 && render(&st, o) != 0) {
        wf_strbuf_puts(err, "cannot write the output");
        rc = -1;
    }
    json_decref(doc);
    ps_state_free(&st);
    return rc;
}

/* GET a JSON document from a proxy's admin API (istioctl: non-200 -> unexpected status). */
static json_t *admin_get(wf_mesh *m, const wf_proxy_ref *ref, const char *path, wf_strbuf *err)
{
    wf_http_resp r = {0};
    wf_strbuf e = WF_STRBUF_INIT;
    json_t *v = NULL;
    if (wf_mesh_proxy_do(m, ref, "GET", path, ADMIN_TIMEOUT_MS, &r, &e) != 0) {
        wf_strbuf_printf(err, "proxy %s does not answer at %s: %s", ref->id, ref->admin,
                         wf_strbuf_cstr(&e));
    } else if (r.status != 200) {
        wf_strbuf_printf(err, "proxy %s (%s%s): unexpected status code: %d", ref->id, ref->admin,
                         path, r.status);
    } else {
        json_error_t je;
        v = json_loadb(r.body, r.len, 0, &je);
        if (!v)
            wf_strbuf_printf(err, "proxy %s: %s is not JSON: %s", ref->id, path, je.text);
    }
    wf_strbuf_free(&e);
    wf_http_resp_free(&r);
    return v;
}

/* The proxy reference: through pilot, or (with --file and a plain POD[.NS]) from the name. */
static int resolve(const ps_opts *o, wf_proxy_ref *ref, wf_strbuf *err)
{
    if (!o->file || strchr(o->proxy, '/'))
        return wf_mesh_find_proxy(o->mesh, o->proxy, o->ns, ref, err);
    memset(ref, 0, sizeof *ref);
    const char *dot = strrchr(o->proxy, '.');
    ref->pod = dot ? strndup(o->proxy, (size_t)(dot - o->proxy)) : strdup(o->proxy);
    ref->ns = strdup(dot ? dot + 1 : (o->ns && *o->ns ? o->ns : "default"));
    if (!ref->pod || !ref->ns || asprintf(&ref->id, "%s.%s", ref->pod, ref->ns) < 0) {
        ref->id = NULL;
        wf_proxy_ref_free(ref);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

static int status_diff(const ps_opts *o, wf_strbuf *err)
{
    wf_proxy_ref ref;
    if (resolve(o, &ref, err) != 0)
        return -1;
    json_t *envoy =
        o->file ? load_json_file(o->file, err) : admin_get(o->mesh, &ref, "/config_dump", err);
    json_t *pilot = NULL;
    int rc = envoy ? 0 : -1;
    if (rc == 0) {
        char path[600];
        snprintf(path, sizeof path, "/debug/config_dump?proxyID=%s", ref.id);
        rc = wf_mesh_pilot_get_json(o->mesh, path, &pilot, err);
    }
    if (rc == 0)
        rc = ps_compare_dumps(pilot, envoy, stdout, err);
    json_decref(envoy);
    json_decref(pilot);
    wf_proxy_ref_free(&ref);
    return rc;
}

/* Validates flag values; returns 0 or -1 with err (a usage error). */
static int check_opts(const ps_opts *o, size_t npos, wf_strbuf *err)
{
    if (strcmp(o->out, "table") != 0 && strcmp(o->out, "json") != 0 &&
        strcmp(o->out, "yaml") != 0) {
        wf_strbuf_printf(err, "output format \"%s\" not supported", o->out);
        return -1;
    }
    if (strcmp(o->table, "classic") != 0 && strcmp(o->table, "types") != 0) {
        wf_strbuf_printf(err, "table format \"%s\" not supported (classic or types)", o->table);
        return -1;
    }
    if (npos > 1) {
        wf_strbuf_puts(err, "proxy-status takes at most one proxy name");
        return -1;
    }
    if (o->verbosity) {
        char *end;
        long v = strtol(o->verbosity, &end, 10);
        if (!*o->verbosity || *end || v < 0) {
            wf_strbuf_printf(err, "invalid argument \"%s\" for \"-v, --verbosity\" flag",
                             o->verbosity);
            return -1;
        }
    }
    if (o->file && npos == 0) {
        wf_strbuf_puts(err, "--file needs a proxy name: weftctl ps POD[.NS] --file DUMP");
        return -1;
    }
    return 0;
}

int wf_cmd_proxy_status(int argc, char **argv)
{
    wf_flag flags[F_COUNT];
    init_flags(flags);
    char **pos = NULL;
    size_t npos = 0;
    int rc = WF_EXIT_OK;
    if (wf_flags_parse_cmd("proxy-status", flags, F_COUNT, argc, argv, &pos, &npos) != 0) {
        rc = WF_EXIT_USAGE;
        goto out;
    }
    if (flags[F_HELP].bval) {
        usage(flags);
        goto out;
    }
    ps_opts o = {
        .ns = flags[F_NS].sval,
        .out = flags[F_OUT].sval && *flags[F_OUT].sval ? flags[F_OUT].sval : "table",
        .file = flags[F_FILE].sval,
        .from = flags[F_FROM].sval,
        .table = flags[F_TABLE].sval ? flags[F_TABLE].sval : "classic",
        .verbose = flags[F_VERB].sval && atoi(flags[F_VERB].sval) >= 1,
        .verbosity = flags[F_VERB].sval,
        .hide_disconnected = flags[F_HIDE].bval,
        .proxy = npos ? pos[0] : NULL,
    };
    wf_strbuf err = WF_STRBUF_INIT;
    wf_mesh_opts mo = {.pilot = flags[F_PILOT].sval,
                       .kubeconfig = flags[F_KUBECONFIG].sval,
                       .context = flags[F_CONTEXT].sval,
                       .istio_ns = flags[F_ISTIONS].sval,
                       .admin_port = flags[F_ADMIN_PORT].sval};
    if (check_opts(&o, npos, &err) != 0) {
        rc = WF_EXIT_USAGE;
    } else if (!o.from && wf_mesh_open(&mo, &o.mesh, &err) != 0) {
        rc = WF_EXIT_ERROR;
    } else if (o.proxy && !o.from) {
        rc = status_diff(&o, &err) == 0 ? WF_EXIT_OK : WF_EXIT_ERROR;
    } else {
        rc = status_all(&o, &err) == 0 ? WF_EXIT_OK : WF_EXIT_ERROR;
    }
    if (rc != WF_EXIT_OK)
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    wf_mesh_free(o.mesh);
out:
    free(pos);
    wf_flags_free(flags, F_COUNT);
    return rc;
}
