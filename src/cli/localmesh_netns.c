/*
 * localmesh_netns.c - the local mesh's pod network in network namespaces (localmesh_netns.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/localmesh_netns.h"
#include "cli/localmesh_sys.h"

#define NODE_BRIDGE "br0"
#define NODE_HOST   "host0" /* the host link's end in the node namespace */
#define MAX_ARGS    24

void wf_lm_netns_names_of(const char *state, wf_lm_netns_names *out)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64, as the default state folder's name */
    for (const char *c = state; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    snprintf(out->hash, sizeof out->hash, "%012llx", (unsigned long long)(h & 0xffffffffffffull));
    snprintf(out->prefix, sizeof out->prefix, "weft-%s-", out->hash);
    snprintf(out->node, sizeof out->node, "%snode", out->prefix);
    snprintf(out->host_link, sizeof out->host_link, "weft%.8s", out->hash);
}

int wf_lm_netns_pod_name(const wf_lm_netns_names *n, const char *name, const char *ns, char *out,
                         size_t cap)
{
    if (!*name || !*ns || strchr(name, '/') || strchr(ns, '/'))
        return -1;
    int len = snprintf(out, cap, "%s%s.%s", n->prefix, name, ns);
    return len < 0 || (size_t)len >= cap || len > 255 ? -1 : 0;
}

void wf_lm_netns_pod_ip(size_t i, char *buf)
{
    snprintf(buf, 16, "10.10.%zu.%zu", (i / 253) % 256, 2 + i % 253);
}

/* ---- running commands --------------------------------------------------------------------- */

/* Append "cmd arg ...: " and the command's output (trimmed) to err. */
static void describe(wf_strbuf *err, const char *const *argv, const char *out, const char *why)
{
    for (size_t i = 0; argv[i]; i++)
        wf_strbuf_printf(err, "%s%s", i ? " " : "", argv[i]);
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    wf_strbuf_printf(err, ": %.*s%s%s", (int)n, out, n && why ? " " : "", why ? why : "");
}

/* Run argv (PATH lookup), inside namespace netns when not NULL, output in out (cap bytes,
 * NUL-terminated). Returns the exit status, 127 when argv[0] is not found, or -1 (err). */
static int run_capture(const char *netns, const char *const *argv, char *out, size_t cap,
                       wf_strbuf *err)
{
    int fds[2];
    out[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) != 0)
        return wf_strbuf_printf(err, "pipe: %s", strerror(errno)), -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return wf_strbuf_printf(err, "fork: %s", strerror(errno)), -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        if (netns) {
            char path[300];
            snprintf(path, sizeof path, "%s/%s", WF_LM_NETNS_RUN_DIR, netns);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
                dprintf(2, "cannot enter network namespace %s: %s", netns, strerror(errno));
                _exit(126);
            }
        }
        execvp(argv[0], (char *const *)argv);
        dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(fds[1]);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fds[0], out + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == cap - 1) { /* keep draining so the child never blocks */
            char sink[512];
            while (read(fds[0], sink, sizeof sink) > 0) {
            }
            break;
        }
    }
    out[n] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return wf_strbuf_printf(err, "waitpid: %s", strerror(errno)), -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* `ip ARGS...` (NULL-terminated); 0, or -1 with err "ip ARGS: message". */
static int ip(wf_strbuf *err, ...)
{
    const char *argv[MAX_ARGS] = {"ip"};
    size_t n = 1;
    va_list ap;
    va_start(ap, err);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < MAX_ARGS - 1)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    char out[2048];
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = run_capture(NULL, argv, out, sizeof out, &why);
    if (rc != 0) {
        describe(err, argv, out, rc < 0 ? wf_strbuf_cstr(&why) : NULL);
        if (rc > 0 && !out[0])
            wf_strbuf_printf(err, "exit status %d", rc);
    }
    wf_strbuf_free(&why);
    return rc == 0 ? 0 : -1;
}

int wf_lm_netns_run(const char *netns, const char *const *argv, wf_strbuf *err)
{
    char out[4096];
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = run_capture(netns, argv, out, sizeof out, &why);
    if (rc != 0) {
        wf_strbuf_printf(err, "in network namespace %s: ", netns);
        describe(err, argv, out, rc < 0 ? wf_strbuf_cstr(&why) : NULL);
        if (rc > 0)
            wf_strbuf_printf(err, " (exit status %d)", rc);
    }
    wf_strbuf_free(&why);
    return rc == 0 ? 0 : -1;
}

int wf_lm_netns_sysctl(const char *netns, const char *key, const char *value, wf_strbuf *err)
{
    char nspath[300], path[300];
    snprintf(nspath, sizeof nspath, "%s/%s", WF_LM_NETNS_RUN_DIR, netns);
    snprintf(path, sizeof path, "/proc/sys/%s", key);
    pid_t pid = fork();
    if (pid < 0)
        return wf_strbuf_printf(err, "fork: %s", strerror(errno)), -1;
    if (pid == 0) { /* /proc/sys/net shows the namespace of the process that opens it */
        int nfd = open(nspath, O_RDONLY | O_CLOEXEC);
        if (nfd < 0 || setns(nfd, CLONE_NEWNET) != 0)
            _exit(100);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        size_t n = strlen(value);
        _exit(fd < 0 || write(fd, value, n) != (ssize_t)n || close(fd) != 0
                  ? (errno < 98 ? errno + 1 : 99)
                  : 0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return wf_strbuf_printf(err, "waitpid: %s", strerror(errno)), -1;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    if (code != 0)
        wf_strbuf_printf(err, "in network namespace %s: cannot write %s to %s: %s", netns, value,
                         path,
                         code == 100 ? "cannot enter the namespace"
                         : code < 99 ? strerror(code - 1)
                                     : "failed");
    return code == 0 ? 0 : -1;
}

int wf_lm_netns_uid_can_read(int uid, const char *path, wf_strbuf *err)
{
    pid_t pid = fork();
    if (pid < 0)
        return wf_strbuf_printf(err, "fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0)
            _exit(100);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        _exit(fd < 0 ? (errno < 98 ? errno + 1 : 99) : 0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return wf_strbuf_printf(err, "waitpid: %s", strerror(errno)), -1;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    if (code == 0)
        return 0;
    wf_strbuf_printf(err, "uid %d (the proxy with --capture) cannot read %s: %s", uid, path,
                     code == 100 ? "cannot switch to that uid"
                     : code < 99 ? strerror(code - 1)
                                 : "failed");
    if (code == EACCES + 1)
        wf_strbuf_puts(err, " (a folder on the way is closed to others: choose a state folder "
                            "others may pass through with --state)");
    return -1;
}

static bool on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char full[4200];
        snprintf(full, sizeof full, "%.*s/%s", (int)n, path, name);
        if (n && access(full, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

bool wf_lm_netns_possible(wf_strbuf *why)
{
    if (geteuid() != 0) {
        wf_strbuf_puts(why, "--pod-network netns needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN, "
                            "to create network namespaces and links); run weftctl up as root "
                            "or with --pod-network explicit");
        return false;
    }
    if (!on_path("ip")) {
        wf_strbuf_puts(why, "--pod-network netns needs iproute2's `ip` on PATH "
                            "(Debian: apt-get install iproute2)");
        return false;
    }
    if (!on_path("nsenter")) {
        wf_strbuf_puts(why, "--pod-network netns needs util-linux's `nsenter` on PATH");
        return false;
    }
    return true;
}

/* ---- up ----------------------------------------------------------------------------------- */

static int write_record(const char *state, const wf_lm_netns_names *n, wf_strbuf *err)
{
    char path[4200], text[256];
    snprintf(path, sizeof path, "%s/%s", state, WF_LM_NETNS_FILE);
    int len = snprintf(
        text, sizeof text, "prefix %s\nnode %s\nhostLink %s\nhostIP %s\nbridge %s\ncidr %s\n",
        n->prefix, n->node, n->host_link, WF_LM_NETNS_HOST_IP, WF_LM_NETNS_GW, WF_LM_NETNS_CIDR);
    return wf_lm_write_file(path, text, (size_t)len, err);
}

static int node_up(const wf_lm_netns_names *n, wf_strbuf *err)
{
    char gw[32], host[32];
    snprintf(gw, sizeof gw, "%s/%d", WF_LM_NETNS_GW, WF_LM_NETNS_PLEN);
    snprintf(host, sizeof host, "%s/%d", WF_LM_NETNS_HOST_IP, WF_LM_NETNS_PLEN);
    const char *nd = n->node, *hl = n->host_link;
    if (ip(err, "netns", "add", nd, NULL) || ip(err, "-n", nd, "link", "set", "lo", "up", NULL) ||
        ip(err, "-n", nd, "link", "add", NODE_BRIDGE, "type", "bridge", NULL) ||
        ip(err, "-n", nd, "addr", "add", gw, "dev", NODE_BRIDGE, NULL) ||
        ip(err, "-n", nd, "link", "set", NODE_BRIDGE, "up", NULL))
        return -1;
    /* the host link: its host end is the host's only change (and its connected route) */
    return ip(err, "link", "add", hl, "type", "veth", "peer", "name", NODE_HOST, "netns", nd,
              NULL) ||
                   ip(err, "-n", nd, "link", "set", NODE_HOST, "master", NODE_BRIDGE, "up", NULL) ||
                   ip(err, "addr", "add", host, "dev", hl, NULL) ||
                   ip(err, "link", "set", hl, "up", NULL)
               ? -1
               : 0;
}

static int pod_up(const wf_lm_netns_names *n, size_t i, const wf_lm_netns_pod *pod, wf_strbuf *err)
{
    char veth[24], addr[32];
    snprintf(veth, sizeof veth, "vp%zu", i);
    snprintf(addr, sizeof addr, "%s/%d", pod->ip, WF_LM_NETNS_PLEN);
    const char *ns = pod->netns;
    return ip(err, "netns", "add", ns, NULL) ||
                   ip(err, "-n", ns, "link", "set", "lo", "up", NULL) ||
                   ip(err, "-n", n->node, "link", "add", veth, "type", "veth", "peer", "name",
                      "eth0", "netns", ns, NULL) ||
                   ip(err, "-n", n->node, "link", "set", veth, "master", NODE_BRIDGE, "up", NULL) ||
                   ip(err, "-n", ns, "addr", "add", addr, "dev", "eth0", NULL) ||
                   ip(err, "-n", ns, "link", "set", "eth0", "up", NULL) ||
                   ip(err, "-n", ns, "route", "add", "default", "via", WF_LM_NETNS_GW, NULL)
               ? -1
               : 0;
}

/* The host must not route any part of 10.10.0.0/16 already: the host link's connected route
 * would take that traffic into the mesh. */
static int check_host_routes(const wf_lm_netns_names *n, wf_strbuf *err)
{
    const char *argv[] = {"ip", "-4", "route", "show", "root", WF_LM_NETNS_CIDR, NULL};
    char out[2048];
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = run_capture(NULL, argv, out, sizeof out, &why);
    if (rc != 0)
        describe(err, argv, out, rc < 0 ? wf_strbuf_cstr(&why) : NULL);
    wf_strbuf_free(&why);
    if (rc != 0)
        return -1;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (!strstr(line, n->host_link))
            return wf_strbuf_printf(err,
                                    "this host already routes into the pod network %s (`%s`): "
                                    "use --pod-network explicit here",
                                    WF_LM_NETNS_CIDR, line),
                   -1;
    return 0;
}

/* A process inside network namespace path (/proc/PID/ns/net is that inode), 0 when none. */
static pid_t process_inside(const char *path)
{
    struct stat ns;
    if (stat(path, &ns) != 0)
        return 0;
    DIR *d = opendir("/proc");
    pid_t found = 0;
    struct dirent *e;
    while (d && !found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char link[300];
        struct stat st;
        snprintf(link, sizeof link, "/proc/%s/ns/net", e->d_name);
        if (stat(link, &st) == 0 && st.st_ino == ns.st_ino && st.st_dev == ns.st_dev)
            found = (pid_t)atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

/* SIGKILL to every process inside network namespace path (the mesh's own: a process its
 * supervisor started but did not live to record in mesh.json). Returns how many. */
static size_t kill_inside(const char *path)
{
    struct stat ns;
    if (stat(path, &ns) != 0)
        return 0;
    DIR *d = opendir("/proc");
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char link[300];
        struct stat st;
        snprintf(link, sizeof link, "/proc/%s/ns/net", e->d_name);
        if (stat(link, &st) == 0 && st.st_ino == ns.st_ino && st.st_dev == ns.st_dev &&
            kill((pid_t)atoi(e->d_name), SIGKILL) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* What an earlier run left: fine when nothing runs inside it any more (up removes it), refused
 * when a process still does (its pod would be cut off and out of `down`'s reach). */
int wf_lm_netns_check_leftovers(const char *state, wf_strbuf *err)
{
    wf_lm_netns_names names;
    wf_lm_netns_names_of(state, &names);
    const wf_lm_netns_names *n = &names;
    DIR *d = opendir(WF_LM_NETNS_RUN_DIR);
    struct dirent *e;
    int rc = 0;
    while (d && rc == 0 && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, n->prefix, strlen(n->prefix)) != 0)
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", WF_LM_NETNS_RUN_DIR, e->d_name);
        pid_t pid = process_inside(path);
        if (pid)
            rc = (wf_strbuf_printf(err,
                                   "network namespace %s of an earlier run still has processes "
                                   "(pid %d): run `weftctl down --state %s` first",
                                   e->d_name, (int)pid, state),
                  -1);
    }
    if (d)
        closedir(d);
    return rc;
}

int wf_lm_netns_up(const char *state, const wf_lm_netns_pod *pods, size_t npods, wf_strbuf *err)
{
    wf_lm_netns_names n;
    wf_lm_netns_names_of(state, &n);
    if (wf_lm_netns_check_leftovers(state, err) != 0)
        return -1;
    wf_strbuf ignored = WF_STRBUF_INIT;
    wf_lm_netns_down(state, NULL, &ignored); /* what a crashed run left, if anything */
    wf_strbuf_free(&ignored);
    if (check_host_routes(&n, err) != 0)
        return -1;
    if (write_record(state, &n, err) != 0)
        return -1;
    size_t before = err->len;
    int rc = node_up(&n, err);
    for (size_t i = 0; rc == 0 && i < npods; i++)
        rc = pod_up(&n, i, &pods[i], err);
    if (rc != 0) {
        wf_strbuf undo = WF_STRBUF_INIT;
        if (wf_lm_netns_down(state, NULL, &undo) != 0)
            wf_strbuf_printf(err, "; removing what was made: %s", wf_strbuf_cstr(&undo));
        wf_strbuf_free(&undo);
        if (err->len == before)
            wf_strbuf_puts(err, "building the pod network failed");
    }
    return rc;
}

/* ---- down --------------------------------------------------------------------------------- */

size_t wf_lm_netns_count(const char *state)
{
    wf_lm_netns_names n;
    wf_lm_netns_names_of(state, &n);
    DIR *d = opendir(WF_LM_NETNS_RUN_DIR);
    size_t count = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        count += strncmp(e->d_name, n.prefix, strlen(n.prefix)) == 0;
    if (d)
        closedir(d);
    return count;
}

int wf_lm_netns_down(const char *state, size_t *removed, wf_strbuf *err)
{
    wf_lm_netns_names n;
    wf_lm_netns_names_of(state, &n);
    size_t count = 0;
    int rc = 0;
    /* the host link first: deleting one end of a veth pair deletes both, and its route */
    if (if_nametoindex(n.host_link) != 0) {
        if (ip(err, "link", "del", n.host_link, NULL) == 0)
            count++;
        else
            rc = -1;
    }
    DIR *d = opendir(WF_LM_NETNS_RUN_DIR);
    if (!d && errno != ENOENT) {
        wf_strbuf_printf(err, "%s%s: %s", rc ? "; " : "", WF_LM_NETNS_RUN_DIR, strerror(errno));
        rc = -1;
    }
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, n.prefix, strlen(n.prefix)) != 0)
            continue;
        /* what still runs inside (down stopped what mesh.json lists) keeps the namespace
         * alive after its name is gone: it goes with it */
        char nspath[600];
        snprintf(nspath, sizeof nspath, "%s/%s", WF_LM_NETNS_RUN_DIR, e->d_name);
        kill_inside(nspath);
        wf_strbuf one = WF_STRBUF_INIT;
        if (ip(&one, "netns", "del", e->d_name, NULL) == 0)
            count++;
        else {
            wf_strbuf_printf(err, "%s%s", rc ? "; " : "", wf_strbuf_cstr(&one));
            rc = -1;
        }
        wf_strbuf_free(&one);
    }
    if (d)
        closedir(d);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", state, WF_LM_NETNS_FILE);
    if (rc == 0)
        unlink(path);
    if (removed)
        *removed = count;
    return rc;
}
