/*
 * agent_cmd.c - `weft-proxy wait` and `weft-proxy request` (agent_cmd.h).
 */
#include "proxy/agent/agent_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/strbuf.h"

/* A parsed http://HOST[:PORT]/PATH. */
typedef struct url {
    char host[256], port[8];
    const char *path;
} url;

static int parse_url(const char *s, url *u)
{
    if (strncmp(s, "http://", 7) != 0)
        return -1;
    const char *h = s + 7, *slash = strchr(h, '/'), *end = slash ? slash : h + strlen(h);
    const char *colon = memchr(h, ':', (size_t)(end - h));
    size_t hl = (size_t)((colon ? colon : end) - h);
    if (!hl || hl >= sizeof u->host)
        return -1;
    memcpy(u->host, h, hl);
    u->host[hl] = '\0';
    size_t pl = colon ? (size_t)(end - colon - 1) : 0;
    if (colon && (!pl || pl >= sizeof u->port))
        return -1;
    snprintf(u->port, sizeof u->port, "%.*s", colon ? (int)pl : 2, colon ? colon + 1 : "80");
    u->path = slash ? slash : "/";
    return 0;
}

static int dial(const url *u, long timeout_ms, wf_strbuf *why)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &ai);
    if (rc != 0) {
        wf_strbuf_printf(why, "dial tcp %s:%s: %s", u->host, u->port, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
                        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
                        connect(fd, a->ai_addr, a->ai_addrlen) != 0)) {
            wf_strbuf_reset(why);
            wf_strbuf_printf(why, "dial tcp %s:%s: %s", u->host, u->port, strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

/* One exchange; *status and body (the answer after the head). 0, or -1 with why. */
static int exchange(const url *u, const char *method, const char *body, long timeout_ms,
                    int *status, wf_strbuf *out, wf_strbuf *why)
{
    int fd = dial(u, timeout_ms, why);
    if (fd < 0)
        return -1;
    wf_strbuf req = WF_STRBUF_INIT, resp = WF_STRBUF_INIT;
    size_t blen = body ? strlen(body) : 0;
    wf_strbuf_printf(&req,
                     "%s %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: weft-proxy\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     method, u->path, u->host, u->port, blen, body ? body : "");
    int rc = 0;
    for (size_t off = 0; rc == 0 && off < req.len;) {
        ssize_t n = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
        if (n <= 0)
            rc = -1;
        else
            off += (size_t)n;
    }
    char buf[4096];
    ssize_t n = 0;
    while (rc == 0 && (n = recv(fd, buf, sizeof buf, 0)) > 0)
        wf_strbuf_append(&resp, buf, (size_t)n);
    if (rc != 0 || n < 0)
        wf_strbuf_printf(why, "%s %s: %s", method, u->path,
                         errno == EAGAIN ? "timed out" : strerror(errno));
    close(fd);
    const char *head_end = resp.len ? strstr(resp.data, "\r\n\r\n") : NULL;
    if (rc == 0 && n == 0 && (!head_end || sscanf(resp.data, "HTTP/1.%*c %d", status) != 1)) {
        wf_strbuf_printf(why, "%s %s: malformed HTTP response", method, u->path);
        rc = -1;
    } else if (rc == 0 && n == 0) {
        wf_strbuf_append(out, head_end + 4, resp.len - (size_t)(head_end + 4 - resp.data));
    } else {
        rc = -1;
    }
    wf_strbuf_free(&req);
    wf_strbuf_free(&resp);
    return rc;
}

static bool parse_long(const char *s, long min, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < min)
        return false;
    *out = v;
    return true;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int wp_agent_wait_main(int argc, char **argv)
{
    long timeout_s = 60, period = 500, req_timeout = 500;
    const char *target = "http://localhost:15021/healthz/ready";
    static const struct option opts[] = {{"timeoutSeconds", required_argument, 0, 't'},
                                         {"periodMillis", required_argument, 0, 'p'},
                                         {"requestTimeoutMillis", required_argument, 0, 'r'},
                                         {"url", required_argument, 0, 'u'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        bool ok = c == 'u'   ? (target = optarg, true)
                  : c == 't' ? parse_long(optarg, 1, &timeout_s)
                  : c == 'p' ? parse_long(optarg, 1, &period)
                  : c == 'r' ? parse_long(optarg, 1, &req_timeout)
                             : false;
        if (c == 'h') {
            printf("Usage: weft-proxy wait [--timeoutSeconds N] [--periodMillis N] "
                   "[--requestTimeoutMillis N] [--url URL]\n\nWaits until the proxy is ready "
                   "(pilot-agent wait): URL (default %s) answers 200.\n",
                   target);
            return 0;
        }
        if (!ok) {
            fprintf(stderr, "weft-proxy wait: bad flag or value (see --help)\n");
            return 2;
        }
    }
    url u;
    if (optind != argc || parse_url(target, &u) != 0) {
        fprintf(stderr, "weft-proxy wait: %s\n",
                optind != argc ? "no arguments taken" : "--url: want http://HOST[:PORT]/PATH");
        return 2;
    }
    printf("Waiting for Envoy proxy to be ready (timeout: %ld seconds)...\n", timeout_s);
    fflush(stdout);
    int64_t deadline = now_ms() + timeout_s * 1000;
    wf_strbuf last = WF_STRBUF_INIT;
    for (;;) {
        int status = 0;
        wf_strbuf body = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
        int rc = exchange(&u, "GET", NULL, req_timeout, &status, &body, &why);
        wf_strbuf_reset(&last);
        if (rc == 0 && status == 200) {
            printf("Envoy is ready!\n");
            wf_strbuf_free(&body);
            wf_strbuf_free(&why);
            wf_strbuf_free(&last);
            return 0;
        }
        if (rc == 0)
            wf_strbuf_printf(&last, "HTTP status code %d", status);
        else
            wf_strbuf_puts(&last, wf_strbuf_cstr(&why));
        wf_strbuf_free(&body);
        wf_strbuf_free(&why);
        if (now_ms() + period > deadline)
            break;
        usleep((useconds_t)period * 1000);
    }
    fprintf(stderr, "timeout waiting for Envoy proxy to become ready. Last error: %s\n",
            wf_strbuf_cstr(&last));
    wf_strbuf_free(&last);
    return 1;
}

int wp_agent_request_main(int argc, char **argv)
{
    long port = 15000;
    static const struct option opts[] = {
        {"debug-port", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("Usage: weft-proxy request [--debug-port N] METHOD PATH [BODY]\n\nSends a "
                   "request to the proxy's admin on localhost (pilot-agent request; default "
                   "port 15000) and prints the answer.\n");
            return 0;
        }
        if (c != 'd' || !parse_long(optarg, 1, &port) || port > 65535) {
            fprintf(stderr, "weft-proxy request: bad flag or value (see --help)\n");
            return 2;
        }
    }
    int n = argc - optind;
    if (n < 2 || n > 3) {
        fprintf(stderr, "weft-proxy request: want METHOD PATH [BODY]\n");
        return 2;
    }
    url u = {.host = "localhost"};
    snprintf(u.port, sizeof u.port, "%ld", port);
    wf_strbuf path = WF_STRBUF_INIT, body = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    const char *p = argv[optind + 1];
    wf_strbuf_printf(&path, "%s%s", p[0] == '/' ? "" : "/", p);
    u.path = wf_strbuf_cstr(&path);
    int status = 0;
    int rc =
        exchange(&u, argv[optind], n == 3 ? argv[optind + 2] : NULL, 10000, &status, &body, &why);
    if (rc != 0)
        fprintf(stderr, "weft-proxy request: %s\n", wf_strbuf_cstr(&why));
    else if (status != 200)
        fprintf(stderr, "weft-proxy request: received unsuccessful status code %d: %s\n", status,
                wf_strbuf_cstr(&body));
    else
        fwrite(body.data ? body.data : "", 1, body.len, stdout);
    wf_strbuf_free(&path);
    wf_strbuf_free(&body);
    wf_strbuf_free(&why);
    return rc == 0 && status == 200 ? 0 : 1;
}
