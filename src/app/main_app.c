/*
 * main_app.c - weft-app: command line, signals, start (the server is app.c; see app.h).
 *
 * Exit status: 0 after --help, --version or SIGTERM/SIGINT; 2 for a bad command line (the
 * message names the flag); 1 when a listener cannot be opened (the message names the
 * address and the error text) or memory runs out at start. Prints "listening on ADDR:PORT"
 * on stdout (flushed) for each listener once it accepts connections: the --listen ones in
 * order (those whose port is a --grpc-port serve gRPC), then the --grpc-listen ones.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "app/app.h"

enum app_args { ARGS_OK, ARGS_HELP, ARGS_VERSION, ARGS_ERROR };

static const char usage[] =
    "Usage: weft-app --listen ADDR:PORT [options]\n"
    "       weft-app --grpc-listen ADDR:PORT [options]\n"
    "\n"
    "A small HTTP/1.1 test backend: /healthz, /status/<code>, /delay/<ms>, /hangup,\n"
    "/upload, /bytes/<n>, /chunked/<n>, /reset/<n> (n bytes of 2n, then a TCP\n"
    "reset), /echo, /ws (WebSocket echo), /count,\n"
    "/count/reset; with --catalog the book's catalog API: GET|POST /items,\n"
    "GET /items/{id}, GET|POST /blowup (fault injection: latency, 500, drop).\n"
    "gRPC listeners (HTTP/2 prior knowledge) serve shop.Echo/Echo and EchoStream\n"
    "(delay_ms, status, count in the request) and grpc.health.v1.Health/Check.\n"
    "\n"
    "Options:\n"
    "  --listen ADDR:PORT     listen address, repeatable; IPv6 as [::1]:8080;\n"
    "                         port 0 picks a free port (printed on stdout)\n"
    "  --grpc-listen ADDR:PORT  gRPC listen address, repeatable (printed after\n"
    "                         the --listen ones)\n"
    "  --grpc-port PORT       a --listen address with this port serves gRPC instead\n"
    "                         of HTTP/1.1, repeatable (for weftctl up, which adds\n"
    "                         --listen for each containerPort)\n"
    "  --name NAME            send \"x-weft-app: NAME\" on every response\n"
    "  --pod POD              send \"x-weft-pod: POD\" on every response\n"
    "  --version-label V      send \"x-weft-version: V\" on every response (default:\n"
    "                         $WEFT_VERSION_LABEL when set)\n"
    "  --catalog              serve the catalog API (/items, /blowup)\n"
    "  --idle-timeout-ms N    close connections idle for N ms (default 0: never)\n"
    "  --hangup-first N       close the first N requests without a response\n"
    "  --latency-ms A-B       delay every response by a uniform draw in [A,B] ms\n"
    "  --seed N               seed of the latency draws (default 1)\n"
    "  --help                 print this help\n"
    "  --version              print the version\n";

static bool header_value_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return false;
    }
    return true;
}

static int set_flag(struct wf_app_config *cfg, const char *flag, const char *v, char *err,
                    size_t errlen)
{
    uint64_t *num = NULL;
    if (strcmp(flag, "--listen") == 0) {
        struct sockaddr_storage ss;
        if (wf_app_parse_addr(v, &ss) != 0) {
            snprintf(err, errlen,
                     "invalid address \"%s\" for --listen: want ADDR:PORT or "
                     "[IPv6]:PORT",
                     v);
            return -1;
        }
        if (cfg->nlisten >= WF_APP_MAX_LISTEN) {
            snprintf(err, errlen, "too many --listen flags (at most %d)", WF_APP_MAX_LISTEN);
            return -1;
        }
        cfg->listen[cfg->nlisten++] = v;
        return 0;
    }
    if (strcmp(flag, "--grpc-listen") == 0) {
        struct sockaddr_storage ss;
        if (wf_app_parse_addr(v, &ss) != 0) {
            snprintf(err, errlen,
                     "invalid address \"%s\" for --grpc-listen: want ADDR:PORT or [IPv6]:PORT", v);
            return -1;
        }
        if (cfg->ngrpc_listen >= WF_APP_MAX_LISTEN) {
            snprintf(err, errlen, "too many --grpc-listen flags (at most %d)", WF_APP_MAX_LISTEN);
            return -1;
        }
        cfg->grpc_listen[cfg->ngrpc_listen++] = v;
        return 0;
    }
    if (strcmp(flag, "--grpc-port") == 0) {
        uint64_t port;
        if (!wf_app_parse_u64(v, strlen(v), 65535, &port) || port == 0) {
            snprintf(err, errlen, "invalid value \"%s\" for --grpc-port: want a port 1..65535", v);
            return -1;
        }
        if (cfg->ngrpc_port >= WF_APP_MAX_LISTEN) {
            snprintf(err, errlen, "too many --grpc-port flags (at most %d)", WF_APP_MAX_LISTEN);
            return -1;
        }
        cfg->grpc_port[cfg->ngrpc_port++] = (uint16_t)port;
        return 0;
    }
    if (strcmp(flag, "--name") == 0 || strcmp(flag, "--pod") == 0 ||
        strcmp(flag, "--version-label") == 0) {
        if (!header_value_ok(v)) {
            snprintf(err, errlen, "invalid value \"%s\" for %s: want a non-empty header value", v,
                     flag);
            return -1;
        }
        *(flag[2] == 'n' ? &cfg->name : flag[2] == 'p' ? &cfg->pod : &cfg->version) = v;
        return 0;
    }
    if (strcmp(flag, "--latency-ms") == 0) {
        const char *dash = strchr(v, '-');
        if (!dash || !wf_app_parse_u64(v, (size_t)(dash - v), 86400000, &cfg->latency_min_ms) ||
            !wf_app_parse_u64(dash + 1, strlen(dash + 1), 86400000, &cfg->latency_max_ms) ||
            cfg->latency_min_ms > cfg->latency_max_ms) {
            snprintf(err, errlen,
                     "invalid value \"%s\" for --latency-ms: want A-B "
                     "(milliseconds, A <= B)",
                     v);
            return -1;
        }
        return 0;
    }
    if (strcmp(flag, "--idle-timeout-ms") == 0)
        num = &cfg->idle_timeout_ms;
    else if (strcmp(flag, "--hangup-first") == 0)
        num = &cfg->hangup_first;
    else if (strcmp(flag, "--seed") == 0)
        num = &cfg->seed;
    if (!num) {
        snprintf(err, errlen, "unknown flag: %s", flag);
        return -1;
    }
    if (!wf_app_parse_u64(v, strlen(v), UINT64_MAX / 2, num)) {
        snprintf(err, errlen, "invalid value \"%s\" for %s: want a non-negative integer", v, flag);
        return -1;
    }
    return 0;
}

static bool known_flag(const char *f)
{
    static const char *const flags[] = {
        "--listen",     "--name", "--pod",           "--idle-timeout-ms", "--hangup-first",
        "--latency-ms", "--seed", "--version-label", "--grpc-listen",     "--grpc-port"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(f, flags[i]) == 0)
            return true;
    return false;
}

/* The port of a --listen address (already checked by set_flag). */
static unsigned listen_port(const char *addr)
{
    struct sockaddr_storage ss;
    if (wf_app_parse_addr(addr, &ss) != 0)
        return 0;
    return ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* True when --listen address addr serves gRPC (its port was given to --grpc-port). */
static bool listen_is_grpc(const struct wf_app_config *cfg, const char *addr)
{
    unsigned port = listen_port(addr);
    for (size_t i = 0; i < cfg->ngrpc_port; i++)
        if (cfg->grpc_port[i] == port)
            return true;
    return false;
}

/* Fills cfg from argv ("--flag value" or "--flag=value"); cfg keeps pointers into argv. On
 * ARGS_ERROR err holds a one-line message. */
static enum app_args parse_args(struct wf_app_config *cfg, int argc, char **argv, char *err,
                                size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return ARGS_HELP;
        if (strcmp(a, "--version") == 0)
            return ARGS_VERSION;
        if (strcmp(a, "--catalog") == 0) {
            cfg->catalog = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument: %s", a);
            return ARGS_ERROR;
        }
        char flag[32];
        const char *eq = strchr(a, '='), *v;
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        if (fl >= sizeof flag) {
            snprintf(err, errlen, "unknown flag: %s", a);
            return ARGS_ERROR;
        }
        memcpy(flag, a, fl);
        flag[fl] = '\0';
        if (!known_flag(flag)) {
            snprintf(err, errlen, "unknown flag: %s", flag);
            return ARGS_ERROR;
        }
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            snprintf(err, errlen, "flag %s needs a value", flag);
            return ARGS_ERROR;
        }
        if (set_flag(cfg, flag, v, err, errlen) != 0)
            return ARGS_ERROR;
    }
    const char *env_version = getenv("WEFT_VERSION_LABEL");
    if (!cfg->version && env_version && *env_version) {
        if (!header_value_ok(env_version)) {
            snprintf(err, errlen, "invalid value in WEFT_VERSION_LABEL: want a header value");
            return ARGS_ERROR;
        }
        cfg->version = env_version;
    }
    if (cfg->nlisten == 0 && cfg->ngrpc_listen == 0) {
        snprintf(err, errlen, "--listen ADDR:PORT (or --grpc-listen ADDR:PORT) is required");
        return ARGS_ERROR;
    }
    for (size_t i = 0; i < cfg->ngrpc_port; i++) {
        size_t j = 0;
        while (j < cfg->nlisten && listen_port(cfg->listen[j]) != cfg->grpc_port[i])
            j++;
        if (j == cfg->nlisten) {
            snprintf(err, errlen, "--grpc-port %u: no --listen address has this port",
                     (unsigned)cfg->grpc_port[i]);
            return ARGS_ERROR;
        }
    }
    return ARGS_OK;
}

static void close_any(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* The process-wide state of weft-app: the loop, the server and the signal watchers. */
struct app_main {
    uv_loop_t loop;
    struct wf_app *app;
    uv_signal_t sigterm, sigint;
};

static void on_signal(uv_signal_t *s, int signum)
{
    struct app_main *m = s->data;
    wf_app_stop(m->app);
    uv_close((uv_handle_t *)&m->sigterm, NULL);
    uv_close((uv_handle_t *)&m->sigint, NULL);
}

/* Opens one listener and prints its address; returns 0, or 1 after printing the error. */
static int open_one(struct app_main *m, const char *addr, bool grpc)
{
    char bound[96];
    int r = grpc ? wf_app_listen_grpc(m->app, addr, bound, sizeof bound)
                 : wf_app_listen(m->app, addr, bound, sizeof bound);
    if (r < 0) {
        fprintf(stderr, "weft-app: cannot listen%s on %s: %s\n", grpc ? " (gRPC)" : "", addr,
                uv_strerror(r));
        return 1;
    }
    printf("listening on %s\n", bound);
    fflush(stdout);
    return 0;
}

/* Opens every listener, the --listen ones (HTTP/1.1, or gRPC for a --grpc-port) in order,
 * then the --grpc-listen ones; returns 0, or 1 after printing the error. */
static int open_listeners(struct app_main *m, const struct wf_app_config *cfg)
{
    for (size_t i = 0; i < cfg->nlisten; i++)
        if (open_one(m, cfg->listen[i], listen_is_grpc(cfg, cfg->listen[i])) != 0)
            return 1;
    for (size_t i = 0; i < cfg->ngrpc_listen; i++)
        if (open_one(m, cfg->grpc_listen[i], true) != 0)
            return 1;
    return 0;
}

static int start_signals(struct app_main *m)
{
    m->sigterm.data = m->sigint.data = m;
    if (uv_signal_init(&m->loop, &m->sigterm) || uv_signal_init(&m->loop, &m->sigint))
        return -1;
    if (uv_signal_start(&m->sigterm, on_signal, SIGTERM) ||
        uv_signal_start(&m->sigint, on_signal, SIGINT))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct wf_app_config cfg;
    struct app_main m;
    char err[256];
    switch (parse_args(&cfg, argc, argv, err, sizeof err)) {
    case ARGS_HELP:
        fputs(usage, stdout);
        return 0;
    case ARGS_VERSION:
#ifdef WEFT_VERSION /* the project's version, set by the build */
        printf("weft-app %s\n", WEFT_VERSION);
#else
        printf("weft-app %s\n", WF_APP_VERSION);
#endif
        return 0;
    case ARGS_ERROR:
        fprintf(stderr, "weft-app: %s\nRun 'weft-app --help' for usage.\n", err);
        return 2;
    case ARGS_OK:
        break;
    }
    signal(SIGPIPE, SIG_IGN); /* a peer that went away is a write error, not a signal */
    memset(&m, 0, sizeof m);
    if (uv_loop_init(&m.loop) != 0) {
        fprintf(stderr, "weft-app: cannot create the event loop\n");
        return 1;
    }
    int rc = 1;
    m.app = wf_app_new(&m.loop, &cfg);
    if (!m.app)
        fprintf(stderr, "weft-app: out of memory\n");
    else if (open_listeners(&m, &cfg) == 0 && start_signals(&m) == 0)
        rc = 0;
    if (rc == 0) {
        uv_run(&m.loop, UV_RUN_DEFAULT);
    } else if (m.app) {
        wf_app_stop(m.app);
        uv_walk(&m.loop, close_any, NULL);
        uv_run(&m.loop, UV_RUN_DEFAULT);
    }
    wf_app_free(m.app);
    uv_loop_close(&m.loop);
    return rc;
}
