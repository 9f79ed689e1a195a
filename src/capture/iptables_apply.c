/*
 * iptables_apply.c - runs iptables-restore/iptables/iptables-save for Istio's capture rules
 * (see iptables_apply.h for the Istio behaviour followed).
 */
#include "capture/iptables_apply.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 64

static void collect(int fd, wf_strbuf *into, bool *open_)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
        if (into)
            wf_strbuf_append(into, buf, (size_t)n);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        *open_ = false;
    }
}

static void child(char *const argv[], int in[2], int out[2], int err[2])
{
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    execvp(argv[0], argv);
    dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
    _exit(127);
}

/* Writes stdin, reads stdout and stderr until both close. */
static void pump(int in, int out, int err, const char *text, wf_strbuf *o, wf_strbuf *e)
{
    size_t off = 0, len = text ? strlen(text) : 0;
    bool out_open = true, err_open = true, in_open = true;
    if (len == 0) {
        close(in);
        in_open = false;
    } else {
        fcntl(in, F_SETFL, fcntl(in, F_GETFL) | O_NONBLOCK);
    }
    while (out_open || err_open) {
        struct pollfd p[3] = {{.fd = out_open ? out : -1, .events = POLLIN},
                              {.fd = err_open ? err : -1, .events = POLLIN},
                              {.fd = in_open ? in : -1, .events = POLLOUT}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents)
            collect(out, o, &out_open);
        if (p[1].revents)
            collect(err, e, &err_open);
        if (in_open && p[2].revents) {
            ssize_t n = (p[2].revents & POLLOUT) ? write(in, text + off, len - off) : -1;
            if (n > 0)
                off += (size_t)n;
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                off = len;
            if (off >= len) {
                close(in);
                in_open = false;
            }
        }
    }
    if (in_open)
        close(in);
}

int wf_ipt_exec(char *const argv[], const char *stdin_text, wf_strbuf *out, wf_strbuf *errout)
{
    int in[2], o[2], e[2];
    if (pipe(in) != 0)
        goto fail;
    if (pipe(o) != 0) {
        close(in[0]);
        close(in[1]);
        goto fail;
    }
    if (pipe(e) != 0) {
        close(in[0]);
        close(in[1]);
        close(o[0]);
        close(o[1]);
        goto fail;
    }
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    pid_t pid = fork();
    if (pid == 0)
        child(argv, in, o, e);
    close(in[0]);
    close(o[1]);
    close(e[1]);
    if (pid < 0) {
        close(in[1]);
        close(o[0]);
        close(e[0]);
        signal(SIGPIPE, old);
        goto fail;
    }
    pump(in[1], o[0], e[0], stdin_text, out, errout);
    close(o[0]);
    close(e[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    signal(SIGPIPE, old);
    if (WIFEXITED(st))
        return WEXITSTATUS(st) == 127 ? -1 : WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
fail:
    if (errout)
        wf_strbuf_printf(errout, "cannot run %s: %s", argv[0], strerror(errno));
    return -1;
}

/* The tool name with WEFT_IPTABLES_PREFIX. */
static void tool(char *buf, size_t len, const char *name)
{
    const char *pre = getenv("WEFT_IPTABLES_PREFIX");
    snprintf(buf, len, "%s%s", pre ? pre : "", name);
}

static void trim(wf_strbuf *b)
{
    while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == ' '))
        b->data[--b->len] = '\0';
}

/* Runs "TOOL args-line" (space-separated tokens). Returns the exit status or -1. */
static int run_line(const char *name, const char *line, const char *stdin_text, wf_strbuf *out,
                    wf_strbuf *errout)
{
    char prog[256], *argv[MAX_ARGS + 2], *copy = strdup(line ? line : "");
    if (!copy)
        return -1;
    tool(prog, sizeof prog, name);
    size_t n = 0;
    argv[n++] = prog;
    char *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t && n < MAX_ARGS; t = strtok_r(NULL, " ", &save))
        argv[n++] = t;
    argv[n] = NULL;
    int rc = wf_ipt_exec(argv, stdin_text, out, errout);
    free(copy);
    return rc;
}

static int restore(bool ip6, const char *text, char *err, size_t errlen)
{
    if (!text || !*text)
        return 0;
    const char *name = ip6 ? "ip6tables-restore" : "iptables-restore";
    wf_strbuf e = WF_STRBUF_INIT;
    int rc = run_line(name, "--noflush", text, NULL, &e);
    trim(&e);
    if (rc != 0)
        snprintf(err, errlen, "%s --noflush failed (exit %d): %s", name, rc, wf_strbuf_cstr(&e));
    wf_strbuf_free(&e);
    return rc == 0 ? 0 : -1;
}

static int save(bool ip6, wf_strbuf *out, char *err, size_t errlen)
{
    const char *name = ip6 ? "ip6tables-save" : "iptables-save";
    wf_strbuf e = WF_STRBUF_INIT;
    int rc = run_line(name, "", NULL, out, &e);
    trim(&e);
    if (rc != 0)
        snprintf(err, errlen, "%s failed (exit %d): %s", name, rc, wf_strbuf_cstr(&e));
    wf_strbuf_free(&e);
    return rc == 0 ? 0 : -1;
}

int wf_ipt_has_istio_chains(bool ip6, char *err, size_t errlen)
{
    wf_strbuf out = WF_STRBUF_INIT;
    if (save(ip6, &out, err, errlen) != 0) {
        wf_strbuf_free(&out);
        return -1;
    }
    const char *s = wf_strbuf_cstr(&out);
    bool found = strncmp(s, ":ISTIO_", 7) == 0 || strstr(s, "\n:ISTIO_") != NULL;
    wf_strbuf_free(&out);
    return found ? 1 : 0;
}

static void ip_quiet(const char *line)
{
    (void)run_line("ip", line, NULL, NULL, NULL);
}

int wf_ipt_apply(const wf_ipt_plan *p, const wf_ipt_opts *o, char *err, size_t errlen)
{
    char *r4 = wf_ipt_restore_text(&p->v4), *r6 = wf_ipt_restore_text(&p->v6);
    int rc = -1;
    if (!r4 || !r6) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (restore(false, r4, err, errlen) != 0)
        goto out;
    if (o->enable_ipv6 && restore(true, r6, err, errlen) != 0)
        goto out;
    if (o->enable_ipv6)
        ip_quiet("-6 addr add ::6/128 dev lo");
    if (o->interception_mode && strcmp(o->interception_mode, "TPROXY") == 0) {
        char line[128];
        snprintf(line, sizeof line, "-f inet rule add fwmark %s lookup %s", o->tproxy_mark,
                 o->tproxy_route_table);
        ip_quiet(line);
        snprintf(line, sizeof line, "-f inet route add local default dev lo table %s",
                 o->tproxy_route_table);
        ip_quiet(line);
        if (o->enable_ipv6) {
            snprintf(line, sizeof line, "-f inet6 rule add fwmark %s lookup %s", o->tproxy_mark,
                     o->tproxy_route_table);
            ip_quiet(line);
            snprintf(line, sizeof line, "-f inet6 route add local default dev lo table %s",
                     o->tproxy_route_table);
            ip_quiet(line);
        }
    }
    rc = 0;
out:
    free(r4);
    free(r6);
    return rc;
}

/* Runs each "-t TABLE ..." line of text with iptables/ip6tables, ignoring failures. */
static void run_lines_quiet(bool ip6, const char *text)
{
    char *copy = strdup(text ? text : "");
    if (!copy)
        return;
    char *save_p = NULL;
    for (char *l = strtok_r(copy, "\n", &save_p); l; l = strtok_r(NULL, "\n", &save_p))
        (void)run_line(ip6 ? "ip6tables" : "iptables", l, NULL, NULL, NULL);
    free(copy);
}

static bool is_builtin(const char *c, size_t n)
{
    static const char *const b[] = {"INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"};
    for (size_t i = 0; i < 5; i++)
        if (strlen(b[i]) == n && strncmp(c, b[i], n) == 0)
            return true;
    return false;
}

/* BuildCleanupFromState: from iptables-save, the "-D" lines for built-in chain rules that jump
 * to an ISTIO_ chain, then "-F" for every ISTIO_ chain, then "-X" for every ISTIO_ chain. */
static void state_cleanup(const char *saved, wf_strbuf *del, wf_strbuf *flush, wf_strbuf *drop)
{
    char table[32] = "";
    const char *s = saved;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n > 1 && s[0] == '*') {
            snprintf(table, sizeof table, "%.*s", (int)(n - 1), s + 1);
        } else if (n > 7 && strncmp(s, ":ISTIO_", 7) == 0) {
            size_t cn = strcspn(s + 1, " \n");
            wf_strbuf_printf(flush, "-t %s -F %.*s\n", table, (int)cn, s + 1);
            wf_strbuf_printf(drop, "-t %s -X %.*s\n", table, (int)cn, s + 1);
        } else if (n > 3 && strncmp(s, "-A ", 3) == 0) {
            size_t cn = strcspn(s + 3, " \n");
            const char *j = strstr(s, " -j ISTIO_");
            if (is_builtin(s + 3, cn) && j && j < s + n)
                wf_strbuf_printf(del, "-t %s -D %.*s\n", table, (int)(n - 3), s + 3);
        }
        s += n + (e ? 1 : 0);
    }
}

static int clean_family(bool ip6, const wf_ipt_rules *r, char *err, size_t errlen)
{
    if (r) {
        char *plan = wf_ipt_cleanup_text(r);
        if (!plan) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        run_lines_quiet(ip6, plan);
        free(plan);
    }
    wf_strbuf st = WF_STRBUF_INIT, del = WF_STRBUF_INIT, fl = WF_STRBUF_INIT, dr = WF_STRBUF_INIT;
    int rc = save(ip6, &st, err, errlen);
    if (rc == 0) {
        state_cleanup(wf_strbuf_cstr(&st), &del, &fl, &dr);
        run_lines_quiet(ip6, wf_strbuf_cstr(&del));
        run_lines_quiet(ip6, wf_strbuf_cstr(&fl));
        run_lines_quiet(ip6, wf_strbuf_cstr(&dr));
        int left = wf_ipt_has_istio_chains(ip6, err, errlen);
        if (left == 1)
            snprintf(err, errlen, "%s: ISTIO_* chains remain after cleanup",
                     ip6 ? "ip6tables" : "iptables");
        rc = left == 0 ? 0 : -1;
    }
    wf_strbuf_free(&st);
    wf_strbuf_free(&del);
    wf_strbuf_free(&fl);
    wf_strbuf_free(&dr);
    return rc;
}

int wf_ipt_clean(const wf_ipt_plan *p, const wf_ipt_opts *o, char *err, size_t errlen)
{
    if (clean_family(false, p ? &p->v4 : NULL, err, errlen) != 0)
        return -1;
    /* IPv6: whenever ip6tables-save works (rules may come from a dual-stack run) */
    char e6[256];
    if (wf_ipt_has_istio_chains(true, e6, sizeof e6) == 1 || o->enable_ipv6) {
        if (clean_family(true, p && o->enable_ipv6 ? &p->v6 : NULL, err, errlen) != 0)
            return -1;
    }
    if (o->interception_mode && strcmp(o->interception_mode, "TPROXY") == 0) {
        char line[128];
        snprintf(line, sizeof line, "-f inet rule del fwmark %s lookup %s", o->tproxy_mark,
                 o->tproxy_route_table);
        ip_quiet(line);
        snprintf(line, sizeof line, "-f inet route flush table %s", o->tproxy_route_table);
        ip_quiet(line);
    }
    return 0;
}
