/*
 * cmd_dashboard.c - `weftctl dashboard weft` (aliases: `dash`, `d`; `kiali` for the same view):
 * the URL of weft-pilot's built-in web view (GET /ui/ on its monitoring port, docs/web-view.md),
 * opened in a browser as istioctl's `dashboard` opens an addon's UI
 * (istioctl/pkg/dashboard/dashboard.go: --browser default true, --address, --port/-p,
 * -n/--namespace; the URL is printed first, "skipping opening a browser" style notes after).
 *
 * Where pilot is: --pilot ADDR; else, with --kubeconfig / --context / $KUBECONFIG, the cluster
 * (mesh_access.h): the first running istiod pod, checked through the API server's pod proxy
 * subresource. weftctl does not port-forward (istioctl does): in a cluster it prints the exact
 * `kubectl port-forward` command to istiod's monitoring port and the URL that command serves,
 * and opens no browser (the URL answers only once the port-forward runs). Else the local mesh:
 * mesh.json's pilot.monitoring of --state STATEDIR or of the last mesh `weftctl up` started,
 * else 127.0.0.1:15014.
 *
 * Before printing, GET /ui/ (3 s) must answer 200. Exit codes: 0 the view answers (URL
 * printed; browser opened when asked and possible: $BROWSER, else xdg-open when $DISPLAY or
 * $WAYLAND_DISPLAY is set; a browser that cannot be started is a note, not an error);
 * 1 pilot not reachable (or the cluster's API server / istiod pod not found);
 * 3 (WF_EXIT_MESH) pilot answers but the view is not there: 503 (its files or node_modules
 * are missing: run scripts/setup; pilot's text is shown), 404 (a weft-pilot without the view)
 * or any other status; 64 usage. `-o json` prints {"url": ...} (plus "port_forward" in a
 * cluster) and never opens a browser.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/localmesh_state.h"
#include "cli/mesh_access.h"

extern char **environ;

#define CHECK_TIMEOUT_MS 3000
#define UI_PATH          "/ui/"

enum {
    F_ADDRESS,
    F_PORT,
    F_BROWSER,
    F_NAMESPACE,
    F_ISTIO_NS,
    F_PILOT,
    F_STATE,
    F_KUBECONFIG,
    F_CONTEXT,
    F_OUT,
    F_HELP,
    F_COUNT
};

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_ADDRESS] = {"address", 0, WF_FLAG_STRING,
                       "Cluster: the address `kubectl port-forward` listens on (default localhost)",
                       "string"},
        [F_PORT] = {"port", 'p', WF_FLAG_STRING,
                    "Cluster: the local port of the port-forward (default istiod's monitoring "
                    "port, 15014)",
                    "int"},
        [F_BROWSER] = {"browser", 0, WF_FLAG_BOOL,
                       "Open a browser (default true; --browser=false only prints the URL)", NULL},
        [F_NAMESPACE] = {"namespace", 'n', WF_FLAG_STRING,
                         "Cluster: the namespace of istiod, which serves the view (default "
                         "istio-system)",
                         "string"},
        [F_ISTIO_NS] = WF_MESH_FLAG_ISTIONS,
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING,
                     "weft-pilot monitoring address (default: the local mesh's, " WF_DEFAULT_PILOT
                     ")",
                     "addr"},
        [F_STATE] = {"state", 0, WF_FLAG_STRING,
                     "Local mesh: its state folder (mesh.json names pilot's address; default the "
                     "last mesh `weftctl up` started)",
                     "dir"},
        [F_KUBECONFIG] = WF_MESH_FLAG_KUBECONFIG,
        [F_CONTEXT] = WF_MESH_FLAG_CONTEXT,
        [F_OUT] = {"output", 'o', WF_FLAG_STRING, "Output format: one of [text json]", "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for dashboard", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(const wf_flag *flags)
{
    printf(
        "Open weft's web view: the mesh as a live graph (health, mTLS), the validations of the\n"
        "config, proxy sync and certificates, and failed requests explained. weft-pilot\n"
        "serves it on its monitoring port at /ui/ (docs/web-view.md); it plays the role\n"
        "Kiali plays for Istio, so `weftctl dashboard kiali` opens it too.\n\n"
        "Usage:\n  weftctl dashboard weft [flags]\n  weftctl dashboard kiali [flags]\n\n"
        "Aliases:\n  dashboard, dash, d\n\n"
        "Examples:\n  weftctl dashboard weft\n  weftctl dash kiali --browser=false\n"
        "  weftctl d weft --pilot 127.0.0.1:15014 -o json\n"
        "  weftctl dashboard weft --context kind-weft   # prints the kubectl port-forward\n\n"
        "The URL is checked first (GET /ui/, 3 s). Exit codes: 0 the view answers; 1 weft-pilot\n"
        "is not reachable; 3 weft-pilot answers but not with the view (503: its files are\n"
        "missing, run scripts/setup); 64 usage.\n\n" WF_MESH_MODE_HELP "\n");
    wf_flags_usage(flags, F_COUNT);
}

/* istioctl's other dashboards, and what to use in weft instead. */
static const struct {
    const char *name, *instead;
} others[] = {
    {"grafana", "weft ships no Grafana: the view's graph shows the request rates, success rates "
                "and p50/p99 latencies of the proxies' Istio metrics (weftctl dashboard weft)"},
    {"prometheus", "weft ships no Prometheus: weft-pilot scrapes the proxies' :15020/stats/"
                   "prometheus itself and the view's graph shows the result (weftctl dashboard "
                   "weft)"},
    {"jaeger", "weft has no tracing backend"},
    {"zipkin", "weft has no tracing backend"},
    {"skywalking", "weft has no tracing backend"},
    {"envoy", "use `weftctl proxy-config` (the proxy's admin API, port 15000), or the view's "
              "Proxies tab"},
    {"proxy", "use `weftctl proxy-config` (the proxy's admin API, port 15000), or the view's "
              "Proxies tab"},
    {"controlz", "weft-pilot has no ControlZ; its debug endpoints are on the monitoring port "
                 "(/debug/syncz, /debug/config_dump)"},
};

/* 0 for "weft"/"kiali" (*kiali set for the alias), else a usage error printed. */
static int pick(const char *name, bool *kiali)
{
    *kiali = strcmp(name, "kiali") == 0;
    if (*kiali || strcmp(name, "weft") == 0)
        return 0;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (strcmp(name, others[i].name) == 0)
            return wf_usage_error("dashboard", "no %s dashboard in weft: %s", name,
                                  others[i].instead);
    return wf_usage_error("dashboard", "unknown dashboard \"%s\": weft or kiali", name);
}

/* mesh.json's pilot.monitoring in state (--state), else in the last mesh `up` started; NULL
 * when neither names one. The caller frees. */
static char *state_pilot(const char *state)
{
    char *last = state ? NULL : wf_lm_recall_state();
    const char *dir = state ? state : last;
    char *path = NULL, *addr = NULL;
    if (dir && asprintf(&path, "%s/%s", dir, WF_LM_MESH_JSON) < 0)
        path = NULL;
    json_t *doc = path ? json_load_file(path, 0, NULL) : NULL;
    const char *mon =
        json_string_value(json_object_get(json_object_get(doc, "pilot"), "monitoring"));
    if (mon && *mon)
        addr = strdup(mon);
    json_decref(doc);
    free(path);
    free(last);
    return addr;
}

/* "http://HOST:PORT/ui/" for a local address; a wildcard bind address is reached on loopback. */
static char *local_url(const char *addr)
{
    const char *host_end = strrchr(addr, ':');
    char *url = NULL;
    if (host_end && strncmp(addr, "0.0.0.0:", 8) == 0)
        return asprintf(&url, "http://127.0.0.1%s" UI_PATH, host_end) < 0 ? NULL : url;
    if (host_end && strncmp(addr, "[::]:", 5) == 0)
        return asprintf(&url, "http://[::1]%s" UI_PATH, host_end) < 0 ? NULL : url;
    return asprintf(&url, "http://%s" UI_PATH, addr) < 0 ? NULL : url;
}

/* Shell-safe single quoting when s needs it. */
static void shell_word(wf_strbuf *b, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,") ==
                  strlen(s)) {
        wf_strbuf_puts(b, s);
        return;
    }
    wf_strbuf_putc(b, '\'');
    for (; *s; s++)
        if (*s == '\'')
            wf_strbuf_puts(b, "'\\''");
        else
            wf_strbuf_putc(b, *s);
    wf_strbuf_putc(b, '\'');
}

/* The kubectl port-forward command to istiod's monitoring port, and the URL it serves. */
static int cluster_plan(const wf_flag *fl, const wf_mesh_pilot *who, wf_strbuf *cmd, char **url)
{
    const char *address = fl[F_ADDRESS].sval ? fl[F_ADDRESS].sval : "localhost";
    int local_port = who->port;
    if (fl[F_PORT].sval) {
        char *end;
        long p = strtol(fl[F_PORT].sval, &end, 10);
        local_port = *end == '\0' && p > 0 && p < 65536 ? (int)p : -1;
    }
    if (local_port < 0)
        return -1;
    wf_strbuf_puts(cmd, "kubectl");
    if (fl[F_KUBECONFIG].sval) {
        wf_strbuf_puts(cmd, " --kubeconfig ");
        shell_word(cmd, fl[F_KUBECONFIG].sval);
    }
    if (fl[F_CONTEXT].sval) {
        wf_strbuf_puts(cmd, " --context ");
        shell_word(cmd, fl[F_CONTEXT].sval);
    }
    wf_strbuf_puts(cmd, " -n ");
    shell_word(cmd, who->ns);
    wf_strbuf_puts(cmd, " port-forward pod/");
    shell_word(cmd, who->pod);
    wf_strbuf_printf(cmd, " %d:%d", local_port, who->port);
    if (strcmp(address, "localhost") != 0) {
        wf_strbuf_puts(cmd, " --address ");
        shell_word(cmd, address);
    }
    const char *host = strcmp(address, "0.0.0.0") == 0 ? "localhost" : address;
    bool v6 = strchr(host, ':') != NULL;
    if (asprintf(url, "http://%s%s%s:%d" UI_PATH, v6 ? "[" : "", host, v6 ? "]" : "", local_port) <
        0)
        *url = NULL;
    return *url && !wf_strbuf_failed(cmd) ? 0 : -1;
}

/* Starts the browser on url without waiting for it: $BROWSER (its words; "%s" stands for the
 * URL, else the URL is appended), else xdg-open when a display is set. Returns 0 when started;
 * otherwise writes why to why. */
static int open_browser(const char *url, wf_strbuf *why)
{
    const char *env = getenv("BROWSER");
    char *copy = NULL;
    char *argv[34];
    size_t n = 0;
    bool put_url = false;
    if (env && *env) {
        if (!(copy = strdup(env))) {
            wf_strbuf_puts(why, "out of memory");
            return -1;
        }
        for (char *save = NULL, *w = strtok_r(copy, " \t", &save); w && n < 32;
             w = strtok_r(NULL, " \t", &save)) {
            put_url |= strcmp(w, "%s") == 0;
            argv[n++] = strcmp(w, "%s") == 0 ? (char *)url : w;
        }
    } else if ((getenv("DISPLAY") && *getenv("DISPLAY")) ||
               (getenv("WAYLAND_DISPLAY") && *getenv("WAYLAND_DISPLAY"))) {
        argv[n++] = "xdg-open";
    } else {
        wf_strbuf_puts(why, "no display ($DISPLAY and $WAYLAND_DISPLAY unset) and no $BROWSER");
        return -1;
    }
    if (!put_url)
        argv[n++] = (char *)url;
    argv[n] = NULL;
    pid_t pid;
    int rc = n > 1 || put_url ? posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) : -1;
    if (rc != 0)
        wf_strbuf_printf(why, "%s: %s", argv[0], rc > 0 ? strerror(rc) : "no command");
    free(copy);
    return rc == 0 ? 0 : -1;
}

/* Reports a check that did not find the view; returns the exit code. */
static int report_check(const char *where, int rc, const wf_http_resp *r, const wf_strbuf *err,
                        bool local)
{
    if (rc != 0) {
        fprintf(stderr, "Error: weft-pilot is not reachable (%s): %s\n", where,
                wf_strbuf_cstr(err));
        if (local)
            fputs("Is the local mesh up (`weftctl up DIR`, `weftctl status`)? Pass --pilot ADDR "
                  "for a weft-pilot elsewhere.\n",
                  stderr);
        return WF_EXIT_ERROR;
    }
    if (r->status == 503) {
        fprintf(stderr,
                "Error: weft-pilot (%s) answers GET %s with 503: the web view's files are "
                "missing; run scripts/setup (or start weft-pilot with --uiDir DIR)\n",
                where, UI_PATH);
        if (r->body && r->len)
            fprintf(stderr, "weft-pilot says: %.*s%s", (int)(r->len > 2000 ? 2000 : r->len),
                    r->body, r->body[r->len - 1] == '\n' ? "" : "\n");
    } else if (r->status == 404) {
        fprintf(stderr,
                "Error: %s answers GET %s with 404: not weft-pilot's monitoring port, or a "
                "weft-pilot older than the web view\n",
                where, UI_PATH);
    } else {
        fprintf(stderr, "Error: weft-pilot (%s) answers GET %s with status %d, not the view\n",
                where, UI_PATH, r->status);
    }
    return WF_EXIT_MESH;
}

static int print_json(const char *url, const char *port_forward)
{
    json_t *o = json_pack("{s:s}", "url", url);
    if (o && port_forward)
        json_object_set_new(o, "port_forward", json_string(port_forward));
    int rc = o ? json_dumpf(o, stdout, JSON_INDENT(2)) : -1;
    fputc('\n', stdout);
    json_decref(o);
    return rc ? WF_EXIT_ERROR : WF_EXIT_OK;
}

static int run(const wf_flag *fl, bool kiali)
{
    const char *out = fl[F_OUT].sval ? fl[F_OUT].sval : "text";
    if (strcmp(out, "text") != 0 && strcmp(out, "json") != 0)
        return wf_usage_error("dashboard", "output format \"%s\" not supported", out);
    bool json = strcmp(out, "json") == 0;
    bool browser = !fl[F_BROWSER].set || fl[F_BROWSER].bval;
    const char *ns = fl[F_NAMESPACE].sval ? fl[F_NAMESPACE].sval : fl[F_ISTIO_NS].sval;
    wf_mesh_mode mode = wf_mesh_choose(fl[F_PILOT].sval, fl[F_KUBECONFIG].sval, fl[F_CONTEXT].sval,
                                       getenv("KUBECONFIG"));
    if (fl[F_PORT].sval) {
        char *end;
        long p = strtol(fl[F_PORT].sval, &end, 10);
        if (*end || p <= 0 || p > 65535)
            return wf_usage_error("dashboard", "invalid --port \"%s\": a port 1-65535",
                                  fl[F_PORT].sval);
    }
    char *state_addr =
        mode == WF_MESH_LOCAL && !fl[F_PILOT].sval ? state_pilot(fl[F_STATE].sval) : NULL;
    if (mode == WF_MESH_LOCAL && !fl[F_PILOT].sval && fl[F_STATE].sval && !state_addr) {
        fprintf(stderr,
                "Error: --state %s: no local mesh there (%s/%s missing or naming no pilot; "
                "weftctl status lists the mesh's state folder)\n",
                fl[F_STATE].sval, fl[F_STATE].sval, WF_LM_MESH_JSON);
        return WF_EXIT_ERROR;
    }
    wf_mesh_opts o = {fl[F_PILOT].sval ? fl[F_PILOT].sval : state_addr, fl[F_KUBECONFIG].sval,
                      fl[F_CONTEXT].sval, ns, NULL};
    wf_strbuf err = WF_STRBUF_INIT, cmd = WF_STRBUF_INIT;
    wf_mesh *m = NULL;
    wf_http_resp r = {0};
    wf_mesh_pilot who = {0};
    char *url = NULL, *where = NULL;
    int rc = WF_EXIT_ERROR;
    if (kiali)
        fputs("weft has no Kiali: its own web view plays that role (weftctl dashboard weft)\n",
              stderr);
    if (wf_mesh_open(&o, &m, &err) != 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        goto done;
    }
    int got = wf_mesh_pilot_do(m, "GET", UI_PATH, CHECK_TIMEOUT_MS, &r, &who, &err);
    if (who.pod && asprintf(&where, "istiod pod %s.%s port %d, through the API server", who.pod,
                            who.ns, who.port) < 0)
        where = NULL;
    else if (!who.pod && asprintf(&where, "%s", who.addr ? who.addr : "?") < 0)
        where = NULL;
    if (!where) {
        fputs("Error: out of memory\n", stderr);
        goto done;
    }
    if (got != 0 || r.status != 200) {
        rc = report_check(where, got, &r, &err, m->mode == WF_MESH_LOCAL);
        goto done;
    }
    if (m->mode == WF_MESH_CLUSTER) {
        if (cluster_plan(fl, &who, &cmd, &url) != 0) {
            fputs("Error: out of memory\n", stderr);
            goto done;
        }
        if (json) {
            rc = print_json(url, wf_strbuf_cstr(&cmd));
            goto done;
        }
        printf("%s\n", url);
        fprintf(stderr,
                "weftctl does not port-forward: the view answers on %s (checked through the API "
                "server); to open it, run\n  %s\nand keep it running while you browse %s "
                "(no browser opened)\n",
                where, wf_strbuf_cstr(&cmd), url);
        rc = WF_EXIT_OK;
        goto done;
    }
    if (!(url = local_url(who.addr))) {
        fputs("Error: out of memory\n", stderr);
        goto done;
    }
    if (json) {
        rc = print_json(url, NULL);
        goto done;
    }
    printf("%s\n", url);
    fflush(stdout);
    wf_strbuf why = WF_STRBUF_INIT;
    if (!browser)
        fputs("skipping opening a browser (--browser=false)\n", stderr);
    else if (open_browser(url, &why) != 0)
        fprintf(stderr, "Not opening a browser (%s); open %s in your browser.\n",
                wf_strbuf_cstr(&why), url);
    wf_strbuf_free(&why);
    rc = WF_EXIT_OK;
done:
    wf_http_resp_free(&r);
    wf_mesh_pilot_free(&who);
    if (m)
        wf_mesh_free(m);
    wf_strbuf_free(&err);
    wf_strbuf_free(&cmd);
    free(url);
    free(where);
    free(state_addr);
    return rc;
}

int wf_cmd_dashboard(int argc, char **argv)
{
    wf_flag fl[F_COUNT];
    init_flags(fl);
    char **pos = NULL;
    size_t npos = 0;
    int rc;
    bool kiali = false;
    if (wf_flags_parse_cmd("dashboard", fl, F_COUNT, argc, argv, &pos, &npos)) {
        rc = WF_EXIT_USAGE;
    } else if (fl[F_HELP].bval || npos == 0) { /* istioctl: `dashboard` alone prints its help */
        usage(fl);
        rc = WF_EXIT_OK;
    } else if (npos > 1) {
        rc = wf_usage_error("dashboard", "dashboard %s takes no argument, got \"%s\"", pos[0],
                            pos[1]);
    } else if ((rc = pick(pos[0], &kiali)) == 0) {
        rc = run(fl, kiali);
    }
    free(pos);
    wf_flags_free(fl, F_COUNT);
    return rc;
}
