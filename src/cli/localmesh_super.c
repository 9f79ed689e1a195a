/*
 * localmesh_super.c - the local mesh's supervisor (localmesh_super.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "cli/localmesh_dns_relay.h"
#include "cli/localmesh_fwd.h"
#include "cli/localmesh_netns.h"
#include "cli/localmesh_roots.h"
#include "cli/localmesh_state.h"
#include "cli/localmesh_super.h"
#include "cli/localmesh_sys.h"
#include "cli/localmesh_tokens.h"
#include "pilot/ca_token.h"

extern char **environ;

#define START_DELAY_MS 300u
#define MESH_POLL_MS   2000u

typedef struct super super;

typedef enum { K_IDLE, K_RUNNING, K_RESTARTING, K_STOPPED } kid_state;

typedef struct kid {
    super *sup;
    const wf_lm_proc *proc;
    uv_process_t handle;
    bool handle_open; /* initialised and not yet closed */
    uv_timer_t timer;
    kid_state state;
    pid_t pid;
    unsigned restarts, backoff_ms;
    uint64_t started_ms;       /* loop time of the last start */
    long long started_wall_ms; /* the same, Unix milliseconds (mesh.json startedAt) */
    unsigned long long ticks;  /* the running process's start time (localmesh_sys.h) */
    char last_exit[200];       /* why it last stopped or could not start; "" when never */
} kid;

struct super {
    uv_loop_t loop;
    const wf_lm_plan *plan;
    FILE *log;
    kid *kids;
    size_t nkids;
    wf_lm_proc_status *status;
    uv_signal_t sigint, sigterm, sighup;
    uv_timer_t start_timer, kill_timer, mesh_timer;
    uv_timer_t token_timer; /* the kubelet's token refresh (localmesh_tokens.h) */
    uv_timer_t root_timer;  /* the kubelet's ConfigMap sync of the mesh root (localmesh_roots.h) */
    unsigned root_tries;    /* before the proxies start: fetches of the root so far */
    char *mesh_text;        /* the MeshConfig last written from the ConfigMap (NULL: the plan's) */
    wf_lm_fwd *fwd, *fwd_https; /* node ports 30000 -> 8080, 30005 -> 8443 */
    wf_lm_fwd *fwd_pilot[2];    /* pod network netns: host link IP:15010 -> 127.0.0.1 */
    wf_lm_fwd *fwd_dns;         /* netns: host link IP:53 (TCP) -> the host's nameserver */
    wf_lm_dns_relay *dns_relay; /* the same for UDP */
    bool stopping, killed;
};

static void slog(super *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void slog(super *s, const char *fmt, ...)
{
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(s->log, "%s ", ts);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(s->log, fmt, ap);
    va_end(ap);
    fputc('\n', s->log);
    fflush(s->log);
}

static const char *state_name(kid_state st)
{
    switch (st) {
    case K_IDLE:
        return "starting";
    case K_RUNNING:
        return "running";
    case K_RESTARTING:
        return "restarting";
    case K_STOPPED:
        return "stopped";
    }
    return "?";
}

static void publish(super *s)
{
    for (size_t i = 0; i < s->nkids; i++) {
        kid *k = &s->kids[i];
        s->status[i] = (wf_lm_proc_status){
            .pid = k->state == K_RUNNING ? k->pid : 0,
            .state = s->stopping && k->state == K_RUNNING ? "stopping" : state_name(k->state),
            .restarts = k->restarts,
            .last_exit = k->last_exit[0] ? k->last_exit : NULL,
            .started_ms = k->state == K_RUNNING ? k->started_wall_ms : 0,
            .start_ticks = k->state == K_RUNNING ? k->ticks : 0};
    }
    wf_strbuf err = WF_STRBUF_INIT;
    if (wf_lm_write_mesh_json(s->plan, s->status, getpid(), &err) != 0)
        slog(s, "warning: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
}

/* ---- starting ----------------------------------------------------------------------------- */

static bool env_overridden(const char *entry, const wf_lm_proc *proc)
{
    size_t klen = strcspn(entry, "=");
    for (size_t i = 0; i < proc->nenv; i++)
        if (strncmp(proc->env[i], entry, klen) == 0 && proc->env[i][klen] == '=')
            return true;
    return false;
}

/* The argv that runs proc: its own, or, in a pod's network namespace, util-linux's
 * `nsenter --net=/run/netns/NAME [--setuid U --setgid U] -- argv...` (nsenter execs the
 * program: the PID and the start time are the program's). malloc'd, strings borrowed
 * except netns_arg and uid (filled). */
static char **build_argv(const wf_lm_proc *proc, char *netns_arg, size_t cap, char uid[16])
{
    size_t n = 0;
    while (proc->argv[n])
        n++;
    char **v = malloc((n + 8) * sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    if (proc->netns) {
        snprintf(netns_arg, cap, "--net=%s/%s", WF_LM_NETNS_RUN_DIR, proc->netns);
        v[k++] = "nsenter";
        v[k++] = netns_arg;
        if (proc->uid >= 0) {
            snprintf(uid, 16, "%d", proc->uid);
            v[k++] = "--setuid";
            v[k++] = uid;
            v[k++] = "--setgid";
            v[k++] = uid;
        }
        v[k++] = "--";
    }
    for (size_t i = 0; i < n; i++)
        v[k++] = (char *)proc->argv[i];
    v[k] = NULL;
    return v;
}

/* environ with proc->env added or replacing; the array is malloc'd, the strings borrowed. */
static char **build_env(const wf_lm_proc *proc)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = malloc((n + proc->nenv + 1) * sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!env_overridden(environ[i], proc))
            env[k++] = environ[i];
    for (size_t i = 0; i < proc->nenv; i++)
        env[k++] = (char *)proc->env[i];
    env[k] = NULL;
    return env;
}

static void kid_exited(uv_process_t *h, int64_t status, int sig);

static void on_handle_closed(uv_handle_t *h)
{
    kid *k = h->data;
    k->handle_open = false;
}

static void log_start(kid *k, int fd)
{
    char line[8192];
    int len = snprintf(line, sizeof line, "--- weftctl up: starting %s:", k->proc->name);
    for (size_t i = 0; k->proc->argv[i] && len < (int)sizeof line; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s", k->proc->argv[i]);
    if (len >= (int)sizeof line)
        len = (int)sizeof line - 1;
    line[len++] = '\n';
    ssize_t rc = write(fd, line, (size_t)len);
    (void)rc;
}

static void schedule_restart(kid *k);

static void start_kid(kid *k)
{
    super *s = k->sup;
    if (s->stopping || k->handle_open)
        return;
    int fd = open(k->proc->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    char **env = build_env(k->proc);
    char netns_arg[400], uid[16];
    char **argv = build_argv(k->proc, netns_arg, sizeof netns_arg, uid);
    int rc = UV_ENOMEM;
    if (fd >= 0 && env && argv) {
        log_start(k, fd);
        uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                         {.flags = UV_INHERIT_FD, .data.fd = fd},
                                         {.flags = UV_INHERIT_FD, .data.fd = fd}};
        uv_process_options_t opts = {.exit_cb = kid_exited,
                                     .file = argv[0],
                                     .args = argv,
                                     .env = env,
                                     .cwd = s->plan->dir,
                                     .flags = UV_PROCESS_DETACHED,
                                     .stdio_count = 3,
                                     .stdio = stdio};
        k->handle.data = k;
        rc = uv_spawn(&s->loop, &k->handle, &opts);
        k->handle_open = true;
    }
    free(env);
    free(argv);
    if (fd >= 0)
        close(fd);
    if (rc != 0) {
        const char *a0 = k->proc->argv[0];
        if (fd < 0)
            snprintf(k->last_exit, sizeof k->last_exit, "cannot open its log %s: %s", k->proc->log,
                     strerror(errno));
        else if (rc == UV_ENOENT)
            snprintf(k->last_exit, sizeof k->last_exit, "command not found: %s", a0);
        else if (rc == UV_EACCES)
            snprintf(k->last_exit, sizeof k->last_exit, "permission denied: %s", a0);
        else
            snprintf(k->last_exit, sizeof k->last_exit, "cannot start %s: %s", a0, uv_strerror(rc));
        slog(s, "%s: %s", k->proc->name, k->last_exit);
        if (k->handle_open)
            uv_close((uv_handle_t *)&k->handle, on_handle_closed);
        schedule_restart(k);
        return;
    }
    k->pid = k->handle.pid;
    k->state = K_RUNNING;
    k->started_ms = uv_now(&s->loop);
    k->ticks = wf_lm_pid_start_ticks(k->pid);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    k->started_wall_ms = now.tv_sec * 1000LL + now.tv_nsec / 1000000;
    slog(s, "%s: started, pid %d", k->proc->name, (int)k->pid);
    publish(s);
}

static void on_restart_timer(uv_timer_t *t)
{
    kid *k = t->data;
    if (k->handle_open) { /* the old handle is still closing: try again shortly */
        uv_timer_start(&k->timer, on_restart_timer, 50, 0);
        return;
    }
    k->restarts++;
    start_kid(k);
}

static void schedule_restart(kid *k)
{
    super *s = k->sup;
    if (s->stopping)
        return;
    uint64_t ran = uv_now(&s->loop) - k->started_ms;
    if (k->state == K_RUNNING && ran >= WF_LM_STABLE_MS)
        k->backoff_ms = 0;
    k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : WF_LM_BACKOFF_MIN_MS;
    if (k->backoff_ms > WF_LM_BACKOFF_MAX_MS)
        k->backoff_ms = WF_LM_BACKOFF_MAX_MS;
    k->state = K_RESTARTING;
    k->pid = 0;
    slog(s, "%s: restarting in %.0fs (restart %u)", k->proc->name, k->backoff_ms / 1000.0,
         k->restarts + 1);
    uv_timer_start(&k->timer, on_restart_timer, k->backoff_ms, 0);
    publish(s);
}

/* ---- stopping ----------------------------------------------------------------------------- */

static void close_all(super *s);

static bool all_stopped(super *s)
{
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].state == K_RUNNING)
            return false;
    return true;
}

static void signal_kids(super *s, int sig)
{
    for (size_t i = 0; i < s->nkids; i++) {
        kid *k = &s->kids[i];
        if (k->state != K_RUNNING || k->pid <= 0)
            continue;
        if (kill(-k->pid, sig) != 0) /* its session's process group, then the process */
            kill(k->pid, sig);
    }
}

static void kid_exited(uv_process_t *h, int64_t status, int sig)
{
    kid *k = h->data;
    super *s = k->sup;
    if (sig)
        snprintf(k->last_exit, sizeof k->last_exit, "killed by signal %d (%s)", sig,
                 strsignal(sig));
    else
        snprintf(k->last_exit, sizeof k->last_exit, "exited with status %lld%s", (long long)status,
                 status == 127 ? " (command not found)" : "");
    slog(s, "%s: pid %d %s", k->proc->name, (int)k->pid, k->last_exit);
    uv_close((uv_handle_t *)h, on_handle_closed);
    if (s->stopping) {
        k->state = K_STOPPED;
        k->pid = 0;
        publish(s);
        if (all_stopped(s))
            close_all(s);
        return;
    }
    schedule_restart(k);
}

static void on_kill_timer(uv_timer_t *t)
{
    super *s = t->data;
    slog(s, "processes still running after %us: SIGKILL", WF_LM_STOP_GRACE_MS / 1000);
    s->killed = true;
    signal_kids(s, SIGKILL);
}

static void stop(super *s, int sig)
{
    if (s->stopping) {
        if (!s->killed) {
            slog(s, "signal %d again: SIGKILL", sig);
            s->killed = true;
            signal_kids(s, SIGKILL);
        }
        return;
    }
    s->stopping = true;
    slog(s, "signal %d: stopping everything", sig);
    uv_timer_stop(&s->start_timer);
    uv_timer_stop(&s->mesh_timer);
    for (size_t i = 0; i < s->nkids; i++) {
        uv_timer_stop(&s->kids[i].timer);
        if (s->kids[i].state != K_RUNNING)
            s->kids[i].state = K_STOPPED;
    }
    wf_lm_fwd_close(s->fwd);
    wf_lm_fwd_close(s->fwd_https);
    s->fwd = s->fwd_https = NULL;
    for (size_t i = 0; i < 2; i++) {
        wf_lm_fwd_close(s->fwd_pilot[i]);
        s->fwd_pilot[i] = NULL;
    }
    wf_lm_fwd_close(s->fwd_dns);
    wf_lm_dns_relay_close(s->dns_relay);
    s->fwd_dns = NULL;
    s->dns_relay = NULL;
    signal_kids(s, SIGTERM);
    publish(s);
    if (all_stopped(s))
        close_all(s);
    else
        uv_timer_start(&s->kill_timer, on_kill_timer, WF_LM_STOP_GRACE_MS, 0);
}

static void on_signal(uv_signal_t *h, int sig)
{
    stop(h->data, sig);
}

static void close_if(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void close_all(super *s)
{
    close_if((uv_handle_t *)&s->sigint);
    close_if((uv_handle_t *)&s->sigterm);
    close_if((uv_handle_t *)&s->sighup);
    close_if((uv_handle_t *)&s->start_timer);
    close_if((uv_handle_t *)&s->kill_timer);
    close_if((uv_handle_t *)&s->mesh_timer);
    close_if((uv_handle_t *)&s->token_timer);
    close_if((uv_handle_t *)&s->root_timer);
    for (size_t i = 0; i < s->nkids; i++)
        close_if((uv_handle_t *)&s->kids[i].timer);
}

/* ---- MeshConfig from a ConfigMap: follow edits (pilot watches STATE/meshconfig) ---------- */

static void on_mesh_timer(uv_timer_t *t)
{
    super *s = t->data;
    bool changed = false;
    wf_strbuf err = WF_STRBUF_INIT;
    if (wf_lm_mesh_refresh(s->plan, &s->mesh_text, &changed, &err) != 0)
        slog(s, "warning: %s", wf_strbuf_cstr(&err));
    else if (changed)
        slog(s,
             "MeshConfig changed in %s: rewrote %s (proxies read proxyMetadata only when "
             "they start)",
             s->plan->mesh_cm_file, s->plan->mesh_file);
    wf_strbuf_free(&err);
}

/* ---- service-account tokens: refreshed as the kubelet refreshes projected ones ------------- */

static void on_token_timer(uv_timer_t *t)
{
    super *s = t->data;
    wf_strbuf err = WF_STRBUF_INIT;
    if (wf_lm_tokens_refresh(s->plan, (int64_t)time(NULL), &err) != 0)
        slog(s, "warning: refreshing the pods' tokens: %s", wf_strbuf_cstr(&err));
    else
        slog(s, "refreshed the pods' service-account tokens");
    wf_strbuf_free(&err);
}

/* Every 80 % of a token's life (9.6 h); WEFT_LM_TOKEN_REFRESH_MS overrides it (tests). */
static uint64_t token_refresh_ms(void)
{
    const char *v = getenv("WEFT_LM_TOKEN_REFRESH_MS");
    char *end = NULL;
    unsigned long long ms = v && *v ? strtoull(v, &end, 10) : 0;
    if (ms > 0 && end && *end == '\0')
        return ms;
    return (uint64_t)WF_CA_TOKEN_DEFAULT_TTL_S * 1000u * WF_LM_TOKEN_REFRESH_PCT / 100u;
}

static bool any_token(const wf_lm_plan *p)
{
    for (size_t i = 0; i < p->npods; i++)
        if (p->pods[i].token && !p->pods[i].error)
            return true;
    return false;
}

/* ---- setup -------------------------------------------------------------------------------- */

#define ROOT_SYNC_MS     5000u /* the root files follow pilot's within this */
#define ROOT_FIRST_MS    200u  /* while waiting for pilot's first root */
#define ROOT_FIRST_TRIES 100u  /* then the proxies start anyway (they retry) */
/* Each fetch is a blocking GET to pilot on this host, in the supervisor's loop (which also
 * runs the node-port forwarders): kept short, so that a pilot that hangs stalls them little. */
#define ROOT_TIMEOUT_MS 250

static bool sync_roots(super *s)
{
    bool all = false;
    wf_strbuf err = WF_STRBUF_INIT;
    int rc = wf_lm_roots_sync(s->plan, WF_LM_MON_ADDR, ROOT_TIMEOUT_MS, &all, &err);
    if (rc < 0)
        slog(s, "warning: the mesh root for the pods: %s", wf_strbuf_cstr(&err));
    else if (rc > 0 && s->root_tries == 0)
        slog(s, "wrote the mesh root (root-cert.pem) for %d namespace(s)", rc);
    wf_strbuf_free(&err);
    return rc >= 0 && all;
}

static void on_root_timer(uv_timer_t *t)
{
    sync_roots(t->data);
}

/* The proxies start once their namespaces' root files exist (pilot publishes the root with its
 * first snapshot), as a pod starts once its ConfigMap volume is mounted. */
static void on_start_rest(uv_timer_t *t)
{
    super *s = t->data;
    bool ready = sync_roots(s);
    if (!ready && ++s->root_tries < ROOT_FIRST_TRIES) {
        uv_timer_start(&s->start_timer, on_start_rest, ROOT_FIRST_MS, 0);
        return;
    }
    if (!ready)
        slog(s,
             "warning: no mesh root from pilot after %u tries: starting the proxies "
             "anyway (their xDS streams and CSRs retry)",
             s->root_tries);
    s->root_tries = 0;
    uv_timer_start(&s->root_timer, on_root_timer, ROOT_SYNC_MS, ROOT_SYNC_MS);
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].proc->kind != WF_LM_PILOT)
            start_kid(&s->kids[i]);
}

static int init_handles(super *s)
{
    int rc = uv_signal_init(&s->loop, &s->sigint);
    rc = rc ? rc : uv_signal_init(&s->loop, &s->sigterm);
    rc = rc ? rc : uv_signal_init(&s->loop, &s->sighup);
    rc = rc ? rc : uv_timer_init(&s->loop, &s->start_timer);
    rc = rc ? rc : uv_timer_init(&s->loop, &s->kill_timer);
    rc = rc ? rc : uv_timer_init(&s->loop, &s->mesh_timer);
    rc = rc ? rc : uv_timer_init(&s->loop, &s->token_timer);
    rc = rc ? rc : uv_timer_init(&s->loop, &s->root_timer);
    for (size_t i = 0; rc == 0 && i < s->nkids; i++) {
        s->kids[i] = (kid){.sup = s, .proc = &s->plan->procs[i]};
        rc = uv_timer_init(&s->loop, &s->kids[i].timer);
        s->kids[i].timer.data = &s->kids[i];
    }
    s->sigint.data = s->sigterm.data = s->start_timer.data = s->kill_timer.data = s;
    s->mesh_timer.data = s->sighup.data = s->token_timer.data = s->root_timer.data = s;
    rc = rc ? rc : uv_signal_start(&s->sigint, on_signal, SIGINT);
    rc = rc ? rc : uv_signal_start(&s->sighup, on_signal, SIGHUP);
    return rc ? rc : uv_signal_start(&s->sigterm, on_signal, SIGTERM);
}

/* Pod network netns: the pods reach pilot's plaintext xDS (on the host's 127.0.0.1) at the host
 * link's IP, as pods reach istiod's 15010. */
static int start_pilot_forwarders(super *s, wf_strbuf *err)
{
    const wf_lm_plan *p = s->plan;
    const int ports[1] = {15010}; /* 15012 pilot binds on pilot_ip itself (its cert's SAN) */
    for (size_t i = 0; p->podnet == WF_LM_PODNET_NETNS && i < 1; i++) {
        if (wf_lm_fwd_start(&s->loop, p->pilot_ip, ports[i], "127.0.0.1", ports[i], s->log,
                            &s->fwd_pilot[i], err) != 0)
            return -1;
        slog(s, "forwarding %s:%d (the pods' way to pilot) to 127.0.0.1:%d", p->pilot_ip, ports[i],
             ports[i]);
    }
    return 0;
}

/* Pod network netns: the pods' DNS proxies reach the host's nameserver through the host link
 * (localmesh_dns_relay.h). Not fatal: a host DNS server already bound to port 53 of every
 * address answers there itself. */
static void start_dns_relay(super *s)
{
    const wf_lm_plan *p = s->plan;
    if (p->podnet != WF_LM_PODNET_NETNS || !p->dns_upstream)
        return;
    wf_strbuf err = WF_STRBUF_INIT;
    if (wf_lm_dns_relay_start(&s->loop, p->pilot_ip, 53, p->dns_upstream, 53, &s->dns_relay,
                              &err) != 0 ||
        wf_lm_fwd_start(&s->loop, p->pilot_ip, 53, p->dns_upstream, 53, s->log, &s->fwd_dns,
                        &err) != 0)
        slog(s, "warning: DNS relay for the pods: %s", wf_strbuf_cstr(&err));
    else
        slog(s, "relaying DNS %s:53 (the pods' upstream) to the host's nameserver %s:53",
             p->pilot_ip, p->dns_upstream);
    wf_strbuf_free(&err);
}

static int start_forwarder(super *s, wf_strbuf *err)
{
    const wf_lm_plan *p = s->plan;
    if (start_pilot_forwarders(s, err) != 0)
        return -1;
    start_dns_relay(s);
    if (p->gateway >= p->npods)
        return 0;
    const char *ip = p->pods[p->gateway].ip;
    if (wf_lm_fwd_start(&s->loop, WF_LM_GW_HOST_IP, WF_LM_GW_HOST_PORT, ip, WF_LM_GW_HTTP_PORT,
                        s->log, &s->fwd, err) != 0)
        return -1;
    slog(s, "forwarding %s:%d to the gateway %s:%d", WF_LM_GW_HOST_IP, WF_LM_GW_HOST_PORT, ip,
         WF_LM_GW_HTTP_PORT);
    if (wf_lm_fwd_start(&s->loop, WF_LM_GW_HOST_IP, WF_LM_GW_HTTPS_HOST_PORT, ip,
                        WF_LM_GW_HTTPS_PORT, s->log, &s->fwd_https, err) != 0)
        return -1;
    slog(s, "forwarding %s:%d to the gateway %s:%d", WF_LM_GW_HOST_IP, WF_LM_GW_HTTPS_HOST_PORT, ip,
         WF_LM_GW_HTTPS_PORT);
    return 0;
}

static int write_pid_file(const wf_lm_plan *p, bool remove, wf_strbuf *err)
{
    char path[4200], text[32];
    snprintf(path, sizeof path, "%s/%s", p->state, WF_LM_SUPERVISOR_PID);
    if (remove)
        return unlink(path);
    int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
    return wf_lm_write_file(path, text, (size_t)len, err);
}

static int run(super *s, wf_strbuf *err)
{
    int rc = init_handles(s);
    if (rc != 0) {
        wf_strbuf_printf(err, "supervisor: %s", uv_strerror(rc));
        close_all(s);
        return -1;
    }
    if (start_forwarder(s, err) != 0 || write_pid_file(s->plan, false, err) != 0) {
        close_all(s);
        wf_lm_fwd_close(s->fwd);
        wf_lm_fwd_close(s->fwd_https);
        wf_lm_fwd_close(s->fwd_pilot[0]);
        wf_lm_fwd_close(s->fwd_pilot[1]);
        wf_lm_fwd_close(s->fwd_dns);
        wf_lm_dns_relay_close(s->dns_relay);
        return -1;
    }
    slog(s, "supervisor pid %d: %zu processes, %zu pods, state %s", (int)getpid(), s->nkids,
         s->plan->npods, s->plan->state);
    publish(s);
    for (size_t i = 0; i < s->nkids; i++)
        if (s->kids[i].proc->kind == WF_LM_PILOT)
            start_kid(&s->kids[i]);
    uv_timer_start(&s->start_timer, on_start_rest, START_DELAY_MS, 0);
    if (s->plan->mesh_cm_file)
        uv_timer_start(&s->mesh_timer, on_mesh_timer, MESH_POLL_MS, MESH_POLL_MS);
    if (any_token(s->plan)) {
        uint64_t every = token_refresh_ms();
        uv_timer_start(&s->token_timer, on_token_timer, every, every);
    }
    return 0;
}

int wf_lm_supervise(const wf_lm_plan *p, FILE *log, wf_strbuf *err)
{
    /* The node-port forwarder writes to sockets the gateway or the client may have closed (a
     * large upload answered early): that is EPIPE for the forwarder to handle, not a signal
     * that kills the supervisor. Children get the default back (uv_spawn resets it). */
    signal(SIGPIPE, SIG_IGN);
    super s = {.plan = p, .log = log, .nkids = p->nprocs};
    s.kids = calloc(p->nprocs ? p->nprocs : 1, sizeof *s.kids);
    s.status = calloc(p->nprocs ? p->nprocs : 1, sizeof *s.status);
    if (!s.kids || !s.status || uv_loop_init(&s.loop) != 0) {
        free(s.kids);
        free(s.status);
        return wf_strbuf_puts(err, "supervisor: out of memory"), 1;
    }
    int rc = run(&s, err);
    uv_run(&s.loop, UV_RUN_DEFAULT);
    if (rc == 0) {
        slog(&s, "stopped");
        publish(&s);
        write_pid_file(p, true, err);
    }
    int closed = uv_loop_close(&s.loop);
    if (closed != 0)
        slog(&s, "warning: loop not closed: %s", uv_strerror(closed));
    if (p->podnet == WF_LM_PODNET_NETNS) { /* the supervisor owns the pod network */
        size_t removed = 0;
        wf_strbuf nerr = WF_STRBUF_INIT;
        if (wf_lm_netns_down(p->state, &removed, &nerr) != 0)
            slog(&s, "warning: removing the pod network: %s", wf_strbuf_cstr(&nerr));
        else
            slog(&s, "removed the pod network (%zu namespaces and links)", removed);
        wf_strbuf_free(&nerr);
    }
    free(s.kids);
    free(s.status);
    free(s.mesh_text);
    return rc == 0 ? 0 : 1;
}
