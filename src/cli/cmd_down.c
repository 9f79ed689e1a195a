/*
 * cmd_down.c - `weftctl down` and `weftctl status` for the local mesh that `weftctl up`
 * started (cmd_localmesh.c, docs/local-mesh.md).
 *
 * Both find the state folder from --state STATEDIR, else the one `up DIR` used for a
 * positional DIR (wf_lm_default_state, or DIR/.weft where older versions put it; a DIR that
 * is not a folder is an error), else the current folder's when a mesh ran from it, else the
 * last mesh `up` started (wf_lm_recall_state). A process of mesh.json is identified by its
 * PID and /proc start time (wf_lm_pid_is), which survive a launcher's exec.
 *
 * down: SIGTERM to the supervisor (which stops every process: SIGTERM, SIGKILL after 10 s),
 * SIGKILL if it is still there after 15 s, then whatever mesh.json still lists as running (a
 * supervisor that was killed leaves its processes behind), then the pod network of
 * --pod-network netns (localmesh_netns.h: every namespace named with the mesh's prefix, the
 * host link), found from the state folder alone. Exit 0, also when nothing runs (with a
 * note); 1 when a namespace or link could not be removed.
 *
 * status: mesh.json's processes as a table (NAME KIND POD IP PID STATE RESTARTS LAST EXIT:
 * the supervisor's state, "crash-looping" for a process restarted and waiting again) or with
 * -o json, then pilot's config errors and warnings and the problems (localmesh_health.h); a
 * dead supervisor is said first ("supervisor not running: N processes left; run `weftctl
 * down`"). Exit codes: 0, 1 errors, 3 (WF_EXIT_MESH) a problem or a dead supervisor, 64 bad
 * flags.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/localmesh_health.h"
#include "cli/localmesh_report.h"
#include "cli/localmesh_state.h"
#include "cli/localmesh_netns.h"
#include "cli/localmesh_tokens.h"
#include "cli/localmesh_super.h"
#include "cli/localmesh_sys.h"
#include "cli/tabwriter.h"

#define DOWN_WAIT_MS (WF_LM_STOP_GRACE_MS + 5000u)

static char *join(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", dir, name);
    return p;
}

static bool has_mesh(const char *state)
{
    char *p = join(state, WF_LM_MESH_JSON);
    struct stat st;
    bool yes = p && stat(p, &st) == 0;
    free(p);
    return yes;
}

/* The state folder `up` used for DIR: its default (wf_lm_default_state), else DIR/.weft when
 * a mesh ran from there (the default before state folders moved out of DIR); NULL with a
 * message when DIR is not a folder. The caller frees. */
static char *dir_state(const char *dir)
{
    struct stat st;
    bool found = stat(dir, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "Error: %s: %s (name the folder of manifests `weftctl up` ran, or --state)\n", dir,
                found             ? "not a folder"
                : errno == ENOENT ? "no such folder"
                                  : strerror(errno));
        return NULL;
    }
    char *abs = realpath(dir, NULL);
    wf_strbuf err = WF_STRBUF_INIT;
    char *state = abs ? wf_lm_default_state(abs, &err) : NULL;
    if (!abs || !state)
        fprintf(stderr, "Error: %s: %s\n", dir, abs ? wf_strbuf_cstr(&err) : strerror(errno));
    wf_strbuf_free(&err);
    if (abs && state && !has_mesh(state)) { /* where `up --capture` puts it as root */
        wf_strbuf cerr = WF_STRBUF_INIT;
        char *cap = wf_lm_capture_state(abs, &cerr);
        if (cap && has_mesh(cap)) {
            free(state);
            state = cap;
        } else {
            free(cap);
        }
        wf_strbuf_free(&cerr);
    }
    char *old = abs && state && !has_mesh(state) ? join(abs, ".weft") : NULL;
    free(abs);
    if (old && has_mesh(old)) {
        free(state);
        return old;
    }
    free(old);
    return state;
}

/* --state, else DIR's state folder (dir_state), else the current folder's when a mesh ran
 * from it, else the state folder of the last mesh `up` started (wf_lm_recall_state). NULL
 * (after a message) when DIR is not a folder. The caller frees. */
static char *state_dir(const wf_flag *state, char **pos, size_t npos)
{
    if (state->set)
        return strdup(state->sval);
    if (npos)
        return dir_state(pos[0]);
    char *here = dir_state(".");
    if (!here || has_mesh(here))
        return here;
    char *last = wf_lm_recall_state();
    if (last && has_mesh(last)) {
        free(here);
        return last;
    }
    free(last);
    return here;
}

static json_t *load_mesh_json(const char *state)
{
    char *path = join(state, WF_LM_MESH_JSON);
    json_error_t je;
    json_t *doc = path ? json_load_file(path, 0, &je) : NULL;
    free(path);
    return json_is_object(doc) ? doc : (json_decref(doc), NULL);
}

static pid_t supervisor_pid(const char *state)
{
    char *path = join(state, WF_LM_SUPERVISOR_PID);
    pid_t pid = path ? wf_lm_read_pid(path) : 0;
    free(path);
    return pid && wf_lm_pid_alive(pid, "weftctl") ? pid : 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait up to ms for pid (started at ticks, 0: unknown) to go; true when gone. */
static bool wait_gone(pid_t pid, unsigned long long ticks, const char *want, long ms)
{
    for (long waited = 0; waited < ms; waited += 100) {
        if (!wf_lm_pid_is(pid, ticks, want))
            return true;
        sleep_ms(100);
    }
    return !wf_lm_pid_is(pid, ticks, want);
}

/* The program name a process of mesh.json runs (argv[0]'s base name), for the PID check. */
static const char *proc_program(const json_t *proc)
{
    const char *a0 = json_string_value(json_array_get(json_object_get(proc, "argv"), 0));
    const char *slash = a0 ? strrchr(a0, '/') : NULL;
    return slash ? slash + 1 : a0;
}

/* True when the process mesh.json lists still runs: the same PID and start time (a launcher
 * that exec'd another program is still it; a recycled PID is not). */
static bool proc_alive(const json_t *proc)
{
    pid_t pid = (pid_t)json_integer_value(json_object_get(proc, "pid"));
    unsigned long long ticks =
        (unsigned long long)json_integer_value(json_object_get(proc, "startTicks"));
    const char *prog = proc_program(proc);
    return pid > 0 && (ticks || prog) && wf_lm_pid_is(pid, ticks, prog);
}

static size_t count_alive(const json_t *mesh)
{
    size_t i, n = 0;
    json_t *proc;
    json_array_foreach(json_object_get(mesh, "processes"), i, proc) n += proc_alive(proc);
    return n;
}

/* Stop what mesh.json lists as running and still runs. Returns how many were found. */
static size_t stop_leftovers(const json_t *mesh)
{
    const json_t *procs = json_object_get(mesh, "processes");
    size_t i, found = 0;
    json_t *proc;
    json_array_foreach(procs, i, proc)
    {
        pid_t pid = (pid_t)json_integer_value(json_object_get(proc, "pid"));
        unsigned long long ticks =
            (unsigned long long)json_integer_value(json_object_get(proc, "startTicks"));
        const char *prog = proc_program(proc);
        if (!proc_alive(proc))
            continue;
        found++;
        if (kill(-pid, SIGTERM) != 0)
            kill(pid, SIGTERM);
        if (!wait_gone(pid, ticks, prog, WF_LM_STOP_GRACE_MS) && kill(-pid, SIGKILL) != 0)
            kill(pid, SIGKILL);
    }
    return found;
}

static int down(const char *state)
{
    pid_t sup = supervisor_pid(state);
    if (sup) {
        printf("stopping the local mesh (supervisor pid %d)...\n", (int)sup);
        fflush(stdout);
        kill(sup, SIGTERM);
        if (!wait_gone(sup, 0, "weftctl", DOWN_WAIT_MS)) {
            fprintf(stderr, "the supervisor did not stop within %us: SIGKILL\n",
                    DOWN_WAIT_MS / 1000);
            kill(sup, SIGKILL);
            wait_gone(sup, 0, "weftctl", 2000);
        }
    }
    json_t *mesh = load_mesh_json(state);
    size_t left = mesh ? stop_leftovers(mesh) : 0;
    json_decref(mesh);
    if (left)
        printf("stopped %zu process%s the supervisor left behind\n", left, left == 1 ? "" : "es");
    /* the pods' service-account tokens go with the pods (as Kubernetes' projected volumes) */
    wf_strbuf err = WF_STRBUF_INIT;
    if (wf_lm_tokens_remove(state, &err) != 0)
        fprintf(stderr, "warning: %s\n", wf_strbuf_cstr(&err));
    /* the pod network (--pod-network netns): what the supervisor did not remove (it died) */
    size_t removed = 0;
    int net_rc = WF_EXIT_OK;
    wf_strbuf_reset(&err);
    if (wf_lm_netns_down(state, &removed, &err) != 0) {
        fprintf(stderr, "Error: removing the pod network: %s\n", wf_strbuf_cstr(&err));
        net_rc = WF_EXIT_ERROR;
    } else if (removed)
        printf("removed the pod network the supervisor left behind (%zu namespaces and links)\n",
               removed);
    wf_strbuf_free(&err);
    if (!sup && !left && !removed && net_rc == WF_EXIT_OK) {
        printf("no local mesh is running from %s\n", state);
        return WF_EXIT_OK;
    }
    char *pidfile = join(state, WF_LM_SUPERVISOR_PID);
    if (pidfile)
        unlink(pidfile);
    free(pidfile);
    printf("the local mesh is stopped\n");
    return net_rc;
}

int wf_lm_down_state(const char *state)
{
    return down(state);
}

enum { D_STATE, D_HELP, D_COUNT };

static void down_usage(const wf_flag *flags)
{
    printf("Stops the local mesh that `weftctl up` started, and every process it runs.\n\n"
           "Usage:\n  weftctl down [DIR] [flags]\n\n");
    wf_flags_usage(flags, D_COUNT);
}

int wf_cmd_down(int argc, char **argv)
{
    wf_flag flags[D_COUNT] = {
        [D_STATE] = {"state", 0, WF_FLAG_STRING, "State folder (default: the one `up DIR` used)",
                     "dir"},
        [D_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for down", NULL},
    };
    char **pos = NULL;
    size_t npos = 0;
    int rc = WF_EXIT_OK;
    if (wf_flags_parse_cmd("down", flags, D_COUNT, argc, argv, &pos, &npos) != 0) {
        rc = WF_EXIT_USAGE;
    } else if (flags[D_HELP].bval) {
        down_usage(flags);
    } else if (npos > 1) {
        fprintf(stderr, "Error: weftctl down takes at most one folder\n");
        rc = WF_EXIT_USAGE;
    } else {
        char *state = state_dir(&flags[D_STATE], pos, npos);
        rc = state ? down(state) : WF_EXIT_ERROR;
        free(state);
    }
    free(pos);
    wf_flags_free(flags, D_COUNT);
    return rc;
}

/* ---- status ------------------------------------------------------------------------------- */

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : dflt;
}

/* The state column: the supervisor's word while it runs (it is every process's parent, so
 * its "running" holds across a launcher's exec); "crash-looping" for a process waiting to be
 * restarted again; without a supervisor "left running" or "gone". */
static const char *proc_state(const json_t *proc, bool supervised)
{
    const char *st = str_or(proc, "state", "unknown");
    if (!supervised)
        return proc_alive(proc) ? "left running" : "gone";
    if (strcmp(st, "restarting") == 0 && json_integer_value(json_object_get(proc, "restarts")) > 0)
        return "crash-looping";
    return st;
}

/* What status reports as wrong (each a line), and pilot's config errors. */
typedef struct report {
    json_t *problems; /* array of strings */
    json_t *cfg;      /* pilot's /debug/config_errors, NULL when not read */
    char *cfg_unread; /* why not, NULL when read or no supervisor */
    size_t cfg_failing;
    size_t left; /* processes left running by a dead supervisor */
} report;

static void add_problem(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_problem(report *r, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    json_array_append_new(r->problems, json_string(line));
}

/* The node port (mesh.json "gateway"), when pilot serves a Gateway: as up checks it. */
static void check_node_port(const json_t *mesh, const json_t *syncz, report *r)
{
    const json_t *gw = json_object_get(mesh, "gateway");
    const char *target = str_or(gw, "target", NULL);
    if (!target || !syncz)
        return;
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *cz = wf_lm_pilot_json("/debug/configz", 3000, &why);
    bool has_gateway = false;
    size_t i;
    json_t *res;
    json_array_foreach(json_object_get(cz, "resources"), i, res) has_gateway |=
        strcmp(str_or(res, "kind", ""), "Gateway") == 0;
    json_decref(cz);
    char id[600];
    snprintf(id, sizeof id, "%s.%s", str_or(gw, "pod", ""), str_or(gw, "namespace", ""));
    if (has_gateway && wf_lm_node_port_problem(syncz, id, target, &why))
        add_problem(r, "%s", wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
}

/* Proxies pilot does not list as SYNCED, or whose /healthz/ready is not 200 (as up reports
 * them), and the node port. */
static void check_proxies(const json_t *mesh, report *r)
{
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *syncz = wf_lm_pilot_json("/debug/syncz", 3000, &why);
    size_t i;
    json_t *pod;
    json_array_foreach(json_object_get(mesh, "pods"), i, pod)
    {
        json_int_t port = json_integer_value(json_object_get(pod, "statusPort"));
        if (!port || json_object_get(pod, "error"))
            continue;
        char id[600], addr[80];
        snprintf(id, sizeof id, "%s.%s", str_or(pod, "name", ""), str_or(pod, "namespace", ""));
        snprintf(addr, sizeof addr, "%s:%lld", str_or(pod, "ip", ""), (long long)port);
        if (!syncz)
            break; /* pilot itself is reported with the config errors */
        if (wf_lm_proxy_problem(syncz, id, addr, &why))
            add_problem(r, "proxy %s: %s", id, wf_strbuf_cstr(&why));
    }
    check_node_port(mesh, syncz, r);
    json_decref(syncz);
    wf_strbuf_free(&why);
}

static int build_report(const json_t *mesh, pid_t sup, report *r)
{
    *r = (report){.problems = json_array()};
    if (!r->problems)
        return -1;
    if (!sup) {
        r->left = count_alive(mesh);
        add_problem(r, "supervisor not running: %zu process%s left; run `weftctl down`", r->left,
                    r->left == 1 ? "" : "es");
        return 0;
    }
    size_t i;
    json_t *proc;
    json_array_foreach(json_object_get(mesh, "pods"), i, proc)
    {
        if (json_object_get(proc, "clash"))
            add_problem(r, "pod %s.%s: port clash: %s", str_or(proc, "name", "?"),
                        str_or(proc, "namespace", "?"), str_or(proc, "clash", ""));
    }
    json_array_foreach(json_object_get(mesh, "processes"), i, proc)
    {
        char why[400];
        if (wf_lm_app_problem(proc, why, sizeof why))
            add_problem(r, "%s: %s", str_or(proc, "name", "?"), why);
    }
    wf_strbuf err = WF_STRBUF_INIT;
    r->cfg = wf_lm_pilot_json("/debug/config_errors", 3000, &err);
    if (!json_is_array(r->cfg)) {
        json_decref(r->cfg);
        r->cfg = NULL;
        r->cfg_unread = strdup(wf_strbuf_cstr(&err));
        add_problem(r, "cannot read pilot's config errors: %s", wf_strbuf_cstr(&err));
    }
    const json_t *src = json_object_get(mesh, "meshConfigSource");
    if (json_is_object(src))
        wf_lm_cfg_remap(r->cfg, str_or(mesh, "meshConfig", NULL), str_or(src, "file", NULL),
                        (long)json_integer_value(json_object_get(src, "line0")),
                        (long)json_integer_value(json_object_get(src, "col0")));
    json_array_foreach(r->cfg, i, proc) r->cfg_failing += wf_lm_cfg_fails(proc);
    wf_strbuf_free(&err);
    if (r->cfg)
        check_proxies(mesh, r);
    return 0;
}

static void free_report(report *r)
{
    json_decref(r->problems);
    json_decref(r->cfg);
    free(r->cfg_unread);
}

static int report_rc(const report *r)
{
    return json_array_size(r->problems) || r->cfg_failing ? WF_EXIT_MESH : WF_EXIT_OK;
}

static int status_table(const json_t *mesh, bool supervised, const report *rep)
{
    if (!supervised)
        printf("%s\n\n", json_string_value(json_array_get(rep->problems, 0)));
    wf_tw tw;
    wf_tw_init(&tw, 3);
    wf_tw_puts(&tw, "NAME\tKIND\tPOD IP\tPID\tSTATE\tRESTARTS\tLAST EXIT\n");
    size_t i;
    json_t *proc;
    json_array_foreach(json_object_get(mesh, "processes"), i, proc)
    {
        json_int_t pid = json_integer_value(json_object_get(proc, "pid"));
        char pidbuf[32];
        snprintf(pidbuf, sizeof pidbuf, "%lld", (long long)pid);
        wf_tw_printf(&tw, "%s\t%s\t%s\t%s\t%s\t%lld\t%s\n", str_or(proc, "name", "?"),
                     str_or(proc, "kind", "?"), str_or(proc, "podIP", "-"), pid > 0 ? pidbuf : "-",
                     proc_state(proc, supervised),
                     (long long)json_integer_value(json_object_get(proc, "restarts")),
                     str_or(proc, "lastExit", "-"));
    }
    int rc = wf_tw_flush(&tw, stdout, NULL);
    wf_tw_free(&tw);
    const json_t *gw = json_object_get(mesh, "gateway");
    if (json_is_object(gw))
        printf("\ngateway: %s -> %s\n", str_or(gw, "url", "?"), str_or(gw, "target", "?"));
    const json_t *net = json_object_get(mesh, "podNetwork");
    if (json_is_object(net) && !strcmp(str_or(net, "mode", ""), "netns"))
        printf("pods:    network namespaces %s* on %s (node %s, host link %s %s); "
               "transparent capture %s\n",
               str_or(net, "prefix", "?"), str_or(net, "cidr", "?"), str_or(net, "node", "?"),
               str_or(net, "hostLink", "?"), str_or(net, "hostIP", "?"),
               json_is_true(json_object_get(net, "capture")) ? "on (REDIRECT)" : "off");
    printf("logs:    %s/logs/\n", str_or(mesh, "state", "?"));
    if (!supervised)
        return rc == 0 ? report_rc(rep) : WF_EXIT_ERROR;
    if (rep->cfg && json_array_size(rep->cfg)) {
        printf("\n");
        wf_lm_cfg_print(stdout, rep->cfg);
    }
    const json_t *iw = json_object_get(mesh, "injectorWarnings");
    if (json_array_size(iw))
        printf("%sthe injector accepted with a warning: %zu field%s\n",
               rep->cfg && json_array_size(rep->cfg) ? "" : "\n", json_array_size(iw),
               json_array_size(iw) == 1 ? "" : "s");
    json_array_foreach(iw, i, proc) printf("  %s\n", json_string_value(proc));
    if (json_array_size(rep->problems)) {
        printf("\nproblems:\n");
        json_array_foreach(rep->problems, i, proc) printf("  %s\n", json_string_value(proc));
    }
    /* say why the exit status is 3 when no problem line does: rejected resources, security
     * controls weft does not enforce */
    size_t unenforced = 0, rejected = 0;
    json_array_foreach(rep->cfg, i, proc)
    {
        if (!wf_lm_cfg_fails(proc))
            continue;
        if (wf_lm_cfg_is_warning(proc))
            unenforced++;
        else
            rejected++;
    }
    if (rejected)
        printf("\n%zu resource%s pilot rejected (above): %s its last good version or left out\n",
               rejected, rejected == 1 ? "" : "s", rejected == 1 ? "it keeps" : "each keeps");
    if (unenforced)
        printf("%s%zu security control%s weft does not enforce (WFT0002, above): the mesh is "
               "not protected as its config says\n",
               rejected ? "" : "\n", unenforced, unenforced == 1 ? "" : "s");
    return rc == 0 ? report_rc(rep) : WF_EXIT_ERROR;
}

static int status_json(const json_t *mesh, const char *state, pid_t sup, const report *rep)
{
    json_t *procs = json_array();
    size_t i;
    json_t *proc;
    json_array_foreach(json_object_get(mesh, "processes"), i, proc)
    {
        json_t *e = json_pack(
            "{s:s,s:s,s:O,s:O,s:O,s:O,s:s,s:O,s:O,s:O*,s:O*}", "name", str_or(proc, "name", "?"),
            "kind", str_or(proc, "kind", "?"), "pod", json_object_get(proc, "pod"), "namespace",
            json_object_get(proc, "namespace"), "podIP", json_object_get(proc, "podIP"), "pid",
            json_object_get(proc, "pid"), "state", proc_state(proc, sup != 0), "restarts",
            json_object_get(proc, "restarts"), "log", json_object_get(proc, "log"), "startedAt",
            json_object_get(proc, "startedAt"), "lastExit", json_object_get(proc, "lastExit"));
        if (e && json_object_get(proc, "netns"))
            json_object_set(e, "netns", json_object_get(proc, "netns"));
        if (!e || json_array_append_new(procs, e) != 0)
            break;
    }
    json_t *out =
        json_pack("{s:b,s:s,s:i,s:O,s:O,s:o,s:O,s:O}", "running", sup != 0, "state", state,
                  "supervisorPid", (int)sup, "pilot", json_object_get(mesh, "pilot"), "gateway",
                  json_object_get(mesh, "gateway"), "processes", procs, "configErrors",
                  rep->cfg ? rep->cfg : json_null(), "problems", rep->problems);
    if (out && !sup)
        json_object_set_new(out, "processesLeft", json_integer((json_int_t)rep->left));
    if (out && json_object_get(mesh, "podNetwork"))
        json_object_set(out, "podNetwork", json_object_get(mesh, "podNetwork"));
    if (!out)
        return fprintf(stderr, "Error: out of memory\n"), WF_EXIT_ERROR;
    json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("\n");
    json_decref(out);
    return report_rc(rep);
}

static int status(const char *state, const char *format)
{
    pid_t sup = supervisor_pid(state);
    json_t *mesh = load_mesh_json(state);
    report rep = {0};
    int rc = WF_EXIT_OK;
    if (mesh && (sup || count_alive(mesh)) && build_report(mesh, sup, &rep) != 0) {
        fprintf(stderr, "Error: out of memory\n");
        rc = WF_EXIT_ERROR;
    } else if (!mesh || (!sup && !rep.left)) {
        /* nothing runs, but a pod network a crash left behind is still there: say so (down
         * removes it), exit 3 as for any problem */
        size_t nets = wf_lm_netns_count(state);
        if (strcmp(format, "json") == 0)
            printf("{\"running\": false, \"state\": \"%s\", \"processes\": [], "
                   "\"podNetworkLeft\": %zu}\n",
                   state, nets);
        else
            printf("no local mesh is running from %s\n", state);
        if (nets) {
            if (strcmp(format, "json") != 0)
                printf("its pod network is still there (%zu network namespace%s): `weftctl down "
                       "--state %s` removes it\n",
                       nets, nets == 1 ? "" : "s", state);
            rc = WF_EXIT_MESH;
        }
    } else if (strcmp(format, "json") == 0) {
        rc = status_json(mesh, state, sup, &rep);
    } else {
        rc = status_table(mesh, sup != 0, &rep);
    }
    free_report(&rep);
    json_decref(mesh);
    return rc;
}

enum { S_STATE, S_OUTPUT, S_HELP, S_COUNT };

static void status_usage(const wf_flag *flags)
{
    printf("Lists the processes of the local mesh that `weftctl up` started (restarts, last\n"
           "exit), the config pilot rejected and what is wrong; exit 3 when anything is\n"
           "(docs/local-mesh.md).\n\n"
           "Usage:\n  weftctl status [DIR] [flags]\n\n");
    wf_flags_usage(flags, S_COUNT);
}

int wf_cmd_status(int argc, char **argv)
{
    wf_flag flags[S_COUNT] = {
        [S_STATE] = {"state", 0, WF_FLAG_STRING, "State folder (default: the one `up DIR` used)",
                     "dir"},
        [S_OUTPUT] = {"output", 'o', WF_FLAG_STRING, "Output format: table or json", "format"},
        [S_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for status", NULL},
    };
    char **pos = NULL;
    size_t npos = 0;
    int rc = WF_EXIT_OK;
    if (wf_flags_parse_cmd("status", flags, S_COUNT, argc, argv, &pos, &npos) != 0) {
        rc = WF_EXIT_USAGE;
    } else if (flags[S_HELP].bval) {
        status_usage(flags);
    } else if (npos > 1 || (flags[S_OUTPUT].set && strcmp(flags[S_OUTPUT].sval, "json") != 0 &&
                            strcmp(flags[S_OUTPUT].sval, "table") != 0)) {
        fprintf(stderr, "Error: %s\n",
                npos > 1 ? "weftctl status takes at most one folder"
                         : "--output must be table or json");
        rc = WF_EXIT_USAGE;
    } else {
        char *state = state_dir(&flags[S_STATE], pos, npos);
        rc = state ? status(state, flags[S_OUTPUT].set ? flags[S_OUTPUT].sval : "table")
                   : WF_EXIT_ERROR;
        free(state);
    }
    free(pos);
    wf_flags_free(flags, S_COUNT);
    return rc;
}
