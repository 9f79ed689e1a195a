/*
 * cmd_localmesh.c - `weftctl up DIR`, `weftctl down`, `weftctl status`: the local mesh
 * (DESIGN.md "The local mesh", docs/local-mesh.md).
 *
 * up: plan from the manifests (localmesh_plan.h), check the fixed ports (15010, 15012, 15014,
 * 30000), write the state folder (localmesh_state.h; by default outside DIR:
 * wf_lm_default_state), fork the supervisor (localmesh_super.h), then wait, with a progress
 * line on stderr, until pilot answers /ready, every proxy is SYNCED (pilot's /debug/syncz)
 * and answers /healthz/ready 200, and every app process runs (or has failed: nothing to wait
 * for), at most --timeout seconds. It then prints the pods and, on stderr, what is wrong
 * (localmesh_report.h): the resources pilot rejected (/debug/config_errors, as the
 * validation webhook would refuse them) and the fields it accepts without effect, apps that
 * cannot start or exited (the supervisor's reason), proxies not SYNCED or not ready, and a
 * node port with no gateway listener behind it. With --detach the supervisor runs in its own
 * session and up returns: 0, or 3 (WF_EXIT_MESH) when anything was wrong (the mesh keeps
 * running). Without it, up stays in the foreground, printing config errors pilot reports
 * for later edits as they appear, until Ctrl-C or SIGTERM, which stop everything (exit 0).
 *
 * With --pod-network netns (root; auto: when possible) up builds the pod network
 * (localmesh_netns.h) after writing the state folder and before forking the supervisor, which
 * removes it when it stops; with --capture it also installs Istio's capture rules in every
 * sidecar pod. A failure before the supervisor runs removes it again.
 *
 * `down` and `status` are in cmd_down.c. Exit codes: 0, 1 errors (nothing started), 3 the
 * mesh runs with problems, 64 bad flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/localmesh_netns.h"
#include "cli/localmesh_report.h"
#include "cli/localmesh_plan.h"
#include "cli/localmesh_state.h"
#include "cli/localmesh_super.h"
#include "cli/localmesh_sys.h"
#include "cli/tabwriter.h"
#include "kube/inject_iptables.h"
#include "kube/inject_probes.h"

#define POLL_MS 250

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Parse flags; on a bad command line prints the error and returns WF_EXIT_USAGE; on --help
 * prints usage and returns WF_EXIT_OK; else -1 (go on). */
static int parse(wf_flag *flags, size_t n, int argc, char **argv, char ***pos, size_t *npos,
                 void (*usage)(const wf_flag *), size_t help_index)
{
    if (wf_flags_parse_cmd(argv[0], flags, n, argc, argv, pos, npos) != 0)
        return WF_EXIT_USAGE;
    if (flags[help_index].bval) {
        usage(flags);
        return WF_EXIT_OK;
    }
    return -1;
}

static char *state_file(const char *state, const char *name)
{
    size_t len = strlen(state) + strlen(name) + 2;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", state, name);
    return p;
}

/* ---- up: checks and the summary ----------------------------------------------------------- */

static int check_not_running(const wf_lm_plan *p)
{
    char *pidfile = state_file(p->state, WF_LM_SUPERVISOR_PID);
    pid_t pid = pidfile ? wf_lm_read_pid(pidfile) : 0;
    free(pidfile);
    if (pid && wf_lm_pid_alive(pid, "weftctl")) {
        fprintf(stderr,
                "Error: a local mesh is already running from %s (supervisor pid %d): run "
                "`weftctl down --state %s` first\n",
                p->state, (int)pid, p->state);
        return -1;
    }
    return 0;
}

static int check_ports(const wf_lm_plan *p)
{
    static const struct {
        int port;
        const char *what;
    } ports[] = {{15010, "weft-pilot's xDS"},
                 {15012, "weft-pilot's secure gRPC port (the CA over TLS)"},
                 {15014, "weft-pilot's monitoring"},
                 {WF_LM_GW_HOST_PORT, "the gateway's node port"},
                 {WF_LM_GW_HTTPS_HOST_PORT, "the gateway's https node port"}};
    int bad = 0;
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        if ((ports[i].port == WF_LM_GW_HOST_PORT || ports[i].port == WF_LM_GW_HTTPS_HOST_PORT) &&
            p->gateway >= p->npods)
            continue;
        wf_strbuf err = WF_STRBUF_INIT;
        if (wf_lm_port_free("127.0.0.1", ports[i].port, &err) != 0) {
            fprintf(stderr, "Error: %s (needed for %s)\n", wf_strbuf_cstr(&err), ports[i].what);
            bad++;
        }
        wf_strbuf_free(&err);
    }
    if (bad)
        fprintf(stderr, "Another local mesh may be running: stop it with `weftctl down` (or "
                        "`weftctl down --state STATEDIR`).\n");
    return bad ? -1 : 0;
}

/* A host the ingress gateway serves, for the curl hint; NULL when none. */
static const char *gateway_host(const wf_lm_plan *p)
{
    size_t n;
    const wf_resource *const *gws = p->store ? wf_store_kind(p->store, WF_KIND_GATEWAY, &n) : NULL;
    for (size_t i = 0; gws && i < n; i++) {
        const wf_gateway *g = gws[i]->t.gateway;
        for (size_t k = 0; g && k < g->nservers; k++)
            for (size_t h = 0; h < g->servers[k].hosts.n; h++) {
                const char *host = g->servers[k].hosts.v[h];
                const char *slash = strchr(host, '/');
                host = slash ? slash + 1 : host;
                if (!strchr(host, '*'))
                    return host;
            }
    }
    return NULL;
}

static void print_summary(const wf_lm_plan *p, pid_t sup, bool ready)
{
    wf_tw tw;
    wf_tw_init(&tw, 3);
    wf_tw_puts(&tw, "POD\tNAMESPACE\tIP\tRUNS\n");
    for (size_t i = 0; i < p->npods; i++) {
        const wf_lm_pod *pod = &p->pods[i];
        if (pod->error) {
            wf_tw_printf(&tw, "%s\t%s\t%s\tnot started (see the error above)\n", pod->name, pod->ns,
                         pod->ip);
            continue;
        }
        wf_tw_printf(&tw, "%s\t%s\t%s\t%s%s%s\n", pod->name, pod->ns, pod->ip,
                     pod->gateway            ? "gateway"
                     : pod->ncontainers == 1 ? "app"
                                             : "apps",
                     pod->sidecar ? " + proxy" : "",
                     pod->gateway || pod->sidecar ? "" : " (no sidecar)");
    }
    printf("%s (state %s, supervisor pid %d)\n\n",
           ready ? "weft local mesh is up" : "weft local mesh is starting", p->state, (int)sup);
    wf_tw_flush(&tw, stdout, NULL);
    wf_tw_free(&tw);
    printf("\npilot:    xDS %s (TLS: the proxies' streams and CSRs), %s (plaintext),\n"
           "          monitoring http://%s\n",
           p->secure_addr, WF_LM_XDS_ADDR, WF_LM_MON_ADDR);
    printf("view:     http://%s/ui/   (weft-pilot's web view: weftctl dashboard weft)\n",
           WF_LM_MON_ADDR);
    if (p->gateway < p->npods) {
        const char *host = gateway_host(p);
        printf("gateway:  http://%s:%d", WF_LM_GW_HOST_IP, WF_LM_GW_HOST_PORT);
        if (host)
            printf("   e.g. curl -H \"Host: %s\" http://%s:%d/", host, WF_LM_GW_HOST_IP,
                   WF_LM_GW_HOST_PORT);
        printf("\n          https://%s:%d (Gateway servers on port 443)\n", WF_LM_GW_HOST_IP,
               WF_LM_GW_HTTPS_HOST_PORT);
    }
    printf("logs:     %s/logs/ (supervisor.log, pilot.log, <pod>.proxy.log, <pod>.app.log)\n",
           p->state);
    printf("status:   weftctl status --state %s\nstop:     weftctl down --state %s\n", p->state,
           p->state);
    fflush(stdout);
}

/* Sleeps up to ms; returns the signal that arrived (SIGINT/SIGTERM/SIGHUP) or 0. */
static int wait_signal(const sigset_t *set, long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

static void print_log_tail(const char *state)
{
    char *path = state_file(state, WF_LM_SUPERVISOR_LOG);
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f) {
        char buf[4096];
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, size > 3000 ? size - 3000 : 0, SEEK_SET);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fprintf(stderr, "%s (end):\n%s\n", path, buf);
        fclose(f);
    }
    free(path);
}

/* Stop the supervisor child and reap it. */
static int stop_child(pid_t child)
{
    int status = 0;
    kill(child, SIGTERM);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

typedef enum { W_READY, W_TIMEOUT, W_SIGNAL, W_DIED } wait_result;

static wait_result wait_ready(const wf_lm_plan *p, pid_t child, const sigset_t *set, long timeout,
                              wf_lm_look *l)
{
    long deadline = now_ms() + timeout * 1000L;
    wf_strbuf last = WF_STRBUF_INIT;
    wait_result r;
    for (;;) {
        int status;
        if (waitpid(child, &status, WNOHANG) == child) {
            r = W_DIED;
            break;
        }
        bool settled = wf_lm_look_take(p, l);
        wf_lm_progress(p, l, &last);
        if (settled) {
            r = W_READY;
            break;
        }
        if (now_ms() >= deadline) {
            r = W_TIMEOUT;
            break;
        }
        if (wait_signal(set, POLL_MS)) {
            r = W_SIGNAL;
            break;
        }
    }
    wf_lm_progress_end(&last);
    wf_strbuf_free(&last);
    return r;
}

/* ---- up: the supervisor process ----------------------------------------------------------- */

static void child_main(wf_lm_plan *p, bool detach, const sigset_t *set)
{
    sigprocmask(SIG_UNBLOCK, set, NULL);
    if (detach)
        setsid();
    char *logpath = state_file(p->state, WF_LM_SUPERVISOR_LOG);
    int fd = logpath ? open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    free(logpath);
    if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        exit(1);
    close(fd);
    close(null);
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = wf_lm_supervise(p, stderr, &err);
    if (rc != 0)
        fprintf(stderr, "weftctl up: %s\n", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    fflush(NULL);
    _exit(rc); /* the parent's allocations are the parent's to free */
}

static int foreground(const wf_lm_plan *p, pid_t child, const sigset_t *set, json_t *seen)
{
    printf("\nPress Ctrl-C to stop the mesh.\n");
    fflush(stdout);
    for (int tick = 0;; tick++) {
        int status;
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "weftctl up: the supervisor was killed by signal %d (%s)\n",
                        WTERMSIG(status), strsignal(WTERMSIG(status)));
            else
                fprintf(stderr, "weftctl up: the supervisor exited with status %d (see its log)\n",
                        WEXITSTATUS(status));
            print_log_tail(p->state);
            return WF_EXIT_ERROR; /* up stops what it left (wf_cmd_up) */
        }
        if (tick % 2 == 1)
            wf_lm_follow_config(p, seen);
        if (wait_signal(set, 500)) {
            printf("stopping the local mesh...\n");
            fflush(stdout);
            stop_child(child);
            printf("stopped\n");
            return WF_EXIT_OK;
        }
    }
}

static int launch(wf_lm_plan *p, bool detach, long timeout)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "Error: fork: %s\n", strerror(errno));
        return WF_EXIT_ERROR;
    }
    if (child == 0)
        child_main(p, detach, &set);
    if (wf_lm_remember_state(p->state) != 0) /* for `status` and `down` without a DIR */
        fprintf(stderr,
                "note: cannot record the mesh's state folder: name it to "
                "`weftctl status` and `weftctl down` (--state %s)\n",
                p->state);
    printf("starting the local mesh from %s (%zu pods, %zu processes)...\n", p->dir, p->npods,
           p->nprocs);
    fflush(stdout);
    wf_lm_look l = {0};
    wait_result r = wait_ready(p, child, &set, timeout, &l);
    if (r == W_DIED) {
        wf_lm_look_free(&l);
        fprintf(stderr, "Error: the supervisor exited while starting\n");
        print_log_tail(p->state);
        return WF_EXIT_ERROR;
    }
    if (r == W_SIGNAL) {
        wf_lm_look_free(&l);
        stop_child(child);
        fprintf(stderr, "interrupted: the local mesh was stopped\n");
        return WF_EXIT_ERROR;
    }
    if (r == W_TIMEOUT)
        fprintf(stderr, "not settled after %lds (--timeout):\n", timeout);
    print_summary(p, child, r == W_READY);
    fflush(stdout);
    json_t *seen = json_object();
    size_t bad = seen ? wf_lm_report_problems(p, &l, seen) : 1;
    wf_lm_look_free(&l);
    if (bad)
        fprintf(stderr,
                "\nThe mesh runs with %zu problem%s (exit %d): fix the manifests (pilot picks "
                "edits up), see %s/logs/, `weftctl status`; `weftctl down` stops it.\n",
                bad, bad == 1 ? "" : "s", WF_EXIT_MESH, p->state);
    int rc = bad ? WF_EXIT_MESH : WF_EXIT_OK;
    if (!detach)
        rc = foreground(p, child, &set, seen);
    json_decref(seen);
    return rc;
}

/* ---- up: the pod network (netns) -------------------------------------------------------- */

static bool supervisor_alive(const wf_lm_plan *p)
{
    char *pidfile = state_file(p->state, WF_LM_SUPERVISOR_PID);
    pid_t pid = pidfile ? wf_lm_read_pid(pidfile) : 0;
    free(pidfile);
    return pid && wf_lm_pid_alive(pid, "weftctl");
}

/* Istio's injector's istio-init arguments (pkg/kube/inject, the default sidecar template):
 * outbound TCP to 15001, inbound to 15006, uid 1337 let through, every inbound port
 * captured except the agent's 15090, 15021, 15020; the pod's traffic.sidecar.istio.io
 * annotations (-i, -x, -b, -d, -o, -q, localmesh_plan.h wf_lm_capture_ann); and port 53 to the
 * agent's DNS proxy (15053), as istio-init does when ISTIO_META_DNS_CAPTURE is on, which netns
 * pods have. Fills argv (cap entries, NULL-terminated) from argv[1]; returns -1 when too many. */
static int capture_args(const wf_lm_pod *pod, const char *excl_in, const char **argv, size_t cap)
{
    const wf_lm_capture_ann *c = &pod->capture;
    wf_inject_capture ic = {.include_out_cidrs = c->include_out_cidrs,
                            .exclude_out_cidrs = c->exclude_out_cidrs,
                            .include_in_ports = c->include_in_ports,
                            .exclude_in_ports = excl_in,
                            .include_out_ports = c->include_out_ports,
                            .exclude_out_ports = c->exclude_out_ports};
    int n = cap > 2 ? wf_inject_iptables_argv(&ic, argv + 1, cap - 2) : -1;
    if (n < 0)
        return -1;
    argv[1 + n] = "--redirect-dns";
    argv[2 + n] = NULL;
    return 0;
}

/* --capture: the rules in every sidecar pod's namespace (the proxy runs as uid 1337: its
 * files are checked in pod_network_up, its token is its own: localmesh_tokens.c). */
static int capture_pod(const wf_lm_plan *p, const wf_lm_pod *pod, wf_strbuf *err)
{
    const char *proxy = NULL;
    for (size_t i = 0; i < p->nprocs && !proxy; i++)
        if (p->procs[i].pod < p->npods && &p->pods[p->procs[i].pod] == pod &&
            p->procs[i].kind == WF_LM_PROXY)
            proxy = p->procs[i].argv[0];
    if (!proxy)
        return 0;
    /* and the local mesh's own: the proxy's admin on the pod IP (WEFT_ADMIN), which weftctl
     * reaches from the host where istioctl port-forwards to Istio's 127.0.0.1:15000 */
    char user[512], excl_in[600];
    const char *ann = pod->capture.exclude_in_ports;
    snprintf(user, sizeof user, "%d%s%s", WF_LM_ADMIN_PORT, ann && *ann ? "," : "", ann ? ann : "");
    wf_inject_exclude_inbound(WF_INJECT_STATUS_PORT, user, excl_in, sizeof excl_in);
    const char *argv[32] = {proxy};
    if (capture_args(pod, excl_in, argv, sizeof argv / sizeof argv[0]) != 0)
        return wf_strbuf_puts(err, "too many istio-iptables arguments"), -1;
    /* and, as Istio's injector sets in the pod's securityContext, ports below 1024 for the
     * proxy's listeners (its outbound listener on Service port 80) */
    return wf_lm_netns_sysctl(pod->netns, "net/ipv4/ip_unprivileged_port_start", "0", err) ||
                   wf_lm_netns_run(pod->netns, argv, err)
               ? -1
               : 0;
}

static int pod_network_up(const wf_lm_plan *p, wf_strbuf *err)
{
    wf_lm_netns_pod *pods = calloc(p->npods ? p->npods : 1, sizeof *pods);
    if (!pods)
        return wf_strbuf_puts(err, "out of memory"), -1;
    for (size_t i = 0; i < p->npods; i++)
        pods[i] = (wf_lm_netns_pod){.netns = p->pods[i].netns, .ip = p->pods[i].ip};
    int rc = wf_lm_netns_up(p->state, pods, p->npods, err);
    free(pods);
    bool built = rc == 0;
    for (size_t i = 0; rc == 0 && p->capture && i < p->npods; i++)
        if (p->pods[i].sidecar && !p->pods[i].error)
            rc = wf_lm_netns_uid_can_read(WF_LM_CAPTURE_UID, p->pods[i].bootstrap, err) ||
                         wf_lm_netns_uid_can_read(WF_LM_CAPTURE_UID, p->pods[i].token, err) ||
                         capture_pod(p, &p->pods[i], err)
                     ? -1
                     : 0;
    if (rc != 0 && built) { /* the capture step failed: remove what was built */
        wf_strbuf undo = WF_STRBUF_INIT;
        if (wf_lm_netns_down(p->state, NULL, &undo) != 0)
            wf_strbuf_printf(err, "; removing the pod network: %s", wf_strbuf_cstr(&undo));
        wf_strbuf_free(&undo);
    }
    if (rc == 0)
        printf("pod network: %s, a network namespace per pod (%s...), pilot at %s for them\n",
               WF_LM_NETNS_CIDR, p->netns_prefix, p->pilot_ip);
    return rc;
}

/* ---- up ----------------------------------------------------------------------------------- */

enum {
    U_STATE,
    U_DETACH,
    U_TIMEOUT,
    U_NS,
    U_MESH,
    U_PRINT_BOOTSTRAP,
    U_PODNET,
    U_CAPTURE,
    U_HELP,
    U_COUNT
};

static void up_usage(const wf_flag *flags)
{
    printf("Runs the mesh described by the manifests in DIR on this machine: weft-pilot, the\n"
           "ingress gateway (http://127.0.0.1:30000), and per Deployment replica a pod with its\n"
           "application and a weft-proxy sidecar (docs/local-mesh.md). It waits until every\n"
           "proxy is SYNCED and every app runs, then names what is wrong: config pilot\n"
           "rejected, apps that cannot start, proxies not SYNCED (exit 3; the mesh keeps\n"
           "running).\n\n"
           "Usage:\n  weftctl up DIR [flags]\n\n");
    wf_flags_usage(flags, U_COUNT);
}

static void up_flags(wf_flag *f)
{
    wf_flag defs[U_COUNT] = {
        [U_STATE] = {"state", 0, WF_FLAG_STRING,
                     "State folder (default $XDG_STATE_HOME/weft/NAME-HASH, outside DIR)", "dir"},
        [U_DETACH] = {"detach", 'd', WF_FLAG_BOOL,
                      "Run in the background; return once everything is ready", NULL},
        [U_TIMEOUT] = {"timeout", 0, WF_FLAG_STRING,
                       "Seconds to wait for every proxy to be SYNCED and ready and every app "
                       "running (default 60)",
                       "s"},
        [U_NS] = {"namespace", 'n', WF_FLAG_STRING,
                  "Namespace of manifests that name none (default: the one namespace labelled "
                  "istio-injection=enabled, else default)",
                  "ns"},
        [U_MESH] = {"mesh-config", 0, WF_FLAG_STRING,
                    "MeshConfig file (default: ConfigMap istio key mesh, or DIR/mesh.yaml)",
                    "file"},
        [U_PRINT_BOOTSTRAP] = {"print-bootstrap", 0, WF_FLAG_STRING,
                               "Print the pod's proxy bootstrap (JSON) as up writes it, and "
                               "exit: nothing is started or written",
                               "pod"},
        [U_PODNET] = {"pod-network", 0, WF_FLAG_STRING,
                      "explicit (default: pods on loopback addresses), netns (a network "
                      "namespace per pod on 10.10.0.0/16; root), or auto (netns when root)",
                      "mode"},
        [U_CAPTURE] = {"capture", 0, WF_FLAG_BOOL,
                       "With netns: transparent capture as Istio's REDIRECT mode: Istio's "
                       "iptables rules in every sidecar pod, its proxy as uid 1337, the apps "
                       "unmodified reaching Services by name (docs/local-mesh.md)",
                       NULL},
        [U_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for up", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

/* --pod-network: explicit, netns (refused without root: exit 1 naming the privilege), or
 * auto (netns when possible, else explicit with a note). Returns 0, WF_EXIT_USAGE or
 * WF_EXIT_ERROR. */
static int pod_network(const wf_flag *flags, wf_lm_podnet *out)
{
    const char *mode = flags[U_PODNET].set ? flags[U_PODNET].sval : "explicit";
    *out = WF_LM_PODNET_EXPLICIT;
    if (strcmp(mode, "explicit") != 0 && strcmp(mode, "netns") != 0 && strcmp(mode, "auto")) {
        fprintf(stderr, "Error: invalid --pod-network \"%s\": want explicit, netns or auto\n",
                mode);
        return WF_EXIT_USAGE;
    }
    if (flags[U_CAPTURE].bval && strcmp(mode, "explicit") == 0) {
        fprintf(stderr, "Error: --capture needs --pod-network netns (the rules go into each "
                        "pod's own network namespace)\n");
        return WF_EXIT_USAGE;
    }
    if (strcmp(mode, "explicit") == 0)
        return 0;
    wf_strbuf why = WF_STRBUF_INIT;
    bool ok = wf_lm_netns_possible(&why);
    if (!ok && strcmp(mode, "netns") == 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        return WF_EXIT_ERROR;
    }
    if (!ok)
        fprintf(stderr, "note: pods run on loopback addresses (--pod-network explicit)%s: %s\n",
                flags[U_CAPTURE].bval ? ", without transparent capture (--capture needs netns)"
                                      : "",
                wf_strbuf_cstr(&why));
    wf_strbuf_free(&why);
    *out = ok ? WF_LM_PODNET_NETNS : WF_LM_PODNET_EXPLICIT;
    return 0;
}

static int up_plan(const wf_flag *flags, const char *dir, wf_lm_podnet podnet, wf_lm_plan **p)
{
    char *self = wf_lm_self_dir();
    wf_lm_opts o = {.dir = dir,
                    .state = flags[U_STATE].sval,
                    .ns = flags[U_NS].sval,
                    .mesh_config = flags[U_MESH].sval,
                    .bin_dir = self,
                    .env_pilot = getenv("WEFT_PILOT"),
                    .env_proxy = getenv("WEFT_PROXY"),
                    .env_app = getenv("WEFT_APP"),
                    .podnet = podnet,
                    .capture = flags[U_CAPTURE].bval};
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = wf_lm_plan_build(&o, p, &err);
    if (rc != 0)
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
    for (size_t i = 0; rc == 0 && i < (*p)->npods; i++)
        if ((*p)->pods[i].error)
            fprintf(stderr, "Error: pod %s.%s is not started (the other pods run): %s\n",
                    (*p)->pods[i].name, (*p)->pods[i].ns, (*p)->pods[i].error);
    free(self);
    wf_strbuf_free(&err);
    return rc;
}

/* --print-bootstrap POD (pod name, or NAME.NAMESPACE): the bootstrap on stdout. */
static int print_bootstrap(const wf_lm_plan *p, const char *name)
{
    const wf_lm_pod *pod = NULL;
    for (size_t i = 0; !pod && i < p->npods; i++) {
        const wf_lm_pod *c = &p->pods[i];
        size_t n = strlen(c->name);
        if (strcmp(c->name, name) == 0 ||
            (strncmp(c->name, name, n) == 0 && name[n] == '.' && !strcmp(name + n + 1, c->ns)))
            pod = c;
    }
    if (!pod || (!pod->sidecar && !pod->gateway) || pod->error) {
        fprintf(stderr, "Error: %s: %s", name,
                !pod         ? "no such pod in the plan; pods with a proxy:"
                : pod->error ? "the pod is not started (see the error above)"
                             : "the pod has no proxy");
        for (size_t i = 0; !pod && i < p->npods; i++)
            if (p->pods[i].sidecar || p->pods[i].gateway)
                fprintf(stderr, " %s.%s", p->pods[i].name, p->pods[i].ns);
        fputc('\n', stderr);
        return WF_EXIT_ERROR;
    }
    json_t *bs = wf_lm_bootstrap_json(p, pod);
    char *text = bs ? json_dumps(bs, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(bs);
    if (!text) {
        fprintf(stderr, "Error: out of memory\n");
        return WF_EXIT_ERROR;
    }
    puts(text);
    free(text);
    return fflush(stdout) == 0 ? WF_EXIT_OK : WF_EXIT_ERROR;
}

int wf_cmd_up(int argc, char **argv)
{
    wf_flag flags[U_COUNT];
    up_flags(flags);
    char **pos = NULL;
    size_t npos = 0;
    int rc = parse(flags, U_COUNT, argc, argv, &pos, &npos, up_usage, U_HELP);
    long timeout = 60;
    if (rc < 0 && npos != 1) {
        fprintf(stderr, "Error: weftctl up takes one folder of manifests (got %zu arguments)\n",
                npos);
        rc = WF_EXIT_USAGE;
    }
    if (rc < 0 && flags[U_TIMEOUT].set) {
        char *end;
        timeout = strtol(flags[U_TIMEOUT].sval, &end, 10);
        if (*end || timeout <= 0) {
            fprintf(stderr, "Error: invalid --timeout \"%s\": want seconds > 0\n",
                    flags[U_TIMEOUT].sval);
            rc = WF_EXIT_USAGE;
        }
    }
    wf_lm_podnet podnet = WF_LM_PODNET_EXPLICIT;
    if (rc < 0 && !flags[U_PRINT_BOOTSTRAP].set) {
        int prc = pod_network(flags, &podnet);
        rc = prc ? prc : rc;
    } else if (rc < 0 && flags[U_PODNET].set && strcmp(flags[U_PODNET].sval, "explicit") != 0)
        podnet = WF_LM_PODNET_NETNS; /* only printed: nothing is created */
    wf_lm_plan *p = NULL;
    if (rc < 0 && up_plan(flags, pos[0], podnet, &p) != 0)
        rc = WF_EXIT_ERROR;
    if (rc < 0 && flags[U_PRINT_BOOTSTRAP].set)
        rc = print_bootstrap(p, flags[U_PRINT_BOOTSTRAP].sval);
    wf_strbuf err = WF_STRBUF_INIT;
    if (rc < 0 && (check_not_running(p) != 0 || check_ports(p) != 0))
        rc = WF_EXIT_ERROR;
    if (rc < 0 && p->podnet == WF_LM_PODNET_NETNS &&
        wf_lm_netns_check_leftovers(p->state, &err) != 0) { /* before the state is rewritten */
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        rc = WF_EXIT_ERROR;
    }
    bool prepared = false; /* this run wrote the state folder: a failure cleans it up */
    if (rc < 0 && wf_lm_state_prepare(p, &err) != 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        rc = WF_EXIT_ERROR;
    } else if (rc < 0)
        prepared = true;
    if (rc < 0 && wf_lm_write_mesh_json(p, NULL, 0, &err) != 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        rc = WF_EXIT_ERROR;
    }
    if (rc < 0 && p->podnet == WF_LM_PODNET_NETNS && pod_network_up(p, &err) != 0) {
        fprintf(stderr, "Error: building the pod network: %s\n", wf_strbuf_cstr(&err));
        rc = WF_EXIT_ERROR;
    }
    if (rc < 0)
        rc = launch(p, flags[U_DETACH].bval, timeout);
    if (prepared && rc != WF_EXIT_OK && rc != WF_EXIT_MESH && !supervisor_alive(p)) {
        /* nothing supervises this run: stop what it started and remove what it made (its
         * processes, their tokens, the pod network), as `down` does, so a failed or crashed
         * start leaves nothing behind */
        fprintf(stderr, "cleaning up what this run started:\n");
        fflush(stderr);
        wf_lm_down_state(p->state);
    }
    wf_strbuf_free(&err);
    wf_lm_plan_free(p);
    free(pos);
    wf_flags_free(flags, U_COUNT);
    return rc;
}
