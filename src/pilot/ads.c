/*
 * ads.c - the xDS server (ads.h): its listeners, the gRPC calls' handlers (each stream goes to
 * ads_sotw.c or delta.c, the other services hosted on the listener to theirs), the reaper of
 * disconnected proxies, the lifecycle and the queries of the debug views. The top of the
 * xDS server's layers (ads_internal.h lists them).
 */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "xds/grpc_frame.h"

/* Istio's buckets (pilot/pkg/xds/monitoring.go). */
static const double push_buckets[] = {.01, .1, 1, 3, 5, 10, 20, 30};
static const double conv_buckets[] = {.1, .5, 1, 3, 5, 10, 20, 30};
#define NBUCKETS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- h2 handlers ------------------------------------------------------------------------------
 */

/* The other service a call was opened for, NULL for ADS. */
static void on_reviewed(void *arg, bool ok, const char *ns, const char *sa, const char *why);

/* The other service a call was opened for, NULL for ADS. */
static const wf_ads_service *service_of(const wf_ads *a, wf_h2_call *call)
{
    const char *path = wf_h2_call_path(call);
    for (size_t i = 0; i < a->opts.n_services; i++)
        if (path == a->services[i].path || (path && strcmp(path, a->services[i].path) == 0))
            return &a->services[i];
    return NULL;
}

static void on_call(wf_h2_call *call, void *ud)
{
    wf_ads *a = ud;
    const wf_ads_service *svc = service_of(a, call);
    if (svc) {
        if (svc->h.on_call)
            svc->h.on_call(call, svc->h.ud);
        return;
    }
    wf_ads_conn *c = calloc(1, sizeof *c);
    if (!c) {
        wf_h2_call_finish(call, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    c->ads = a;
    for (int t = 0; t < WF_XDS_NTYPES; t++)
        c->types[t].w.pool = a->names;
    c->delta = strcmp(wf_h2_call_path(call), WF_XDS_DELTA_PATH) == 0;
    /* unknown (""): the debug view then shows no address */
    (void)wf_h2_conn_peer(wf_h2_call_conn(call), c->address, sizeof c->address);
    c->call = call;
    c->connected = true;
    c->connected_at_ms = wf_ads_now_ms();
    a->live_calls++;
    wf_h2_call_set_data(call, c);
    /* a refusal ends the call (XDS_AUTH, secure port); a TokenReview answers later */
    (void)wf_ads_authenticate(c, call, on_reviewed);
}

/* One request of an ADS stream. */
static void conn_message(wf_ads_conn *c, const uint8_t *msg, size_t len)
{
    if (!c->delta) {
        wf_ads_sotw_on_message(c, msg, len);
        return;
    }
    json_t *j;
    wf_xds_err err;
    if (wf_xds_parse_text((const char *)msg, len, &j, &err) != 0) {
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err.text);
        return;
    }
    wf_delta_on_message(c, j);
    json_decref(j);
}

static void on_message(wf_h2_call *call, const uint8_t *msg, size_t len, void *ud)
{
    wf_ads *a = ud;
    const wf_ads_service *svc = service_of(a, call);
    if (svc) {
        if (svc->h.on_message)
            svc->h.on_message(call, msg, len, svc->h.ud);
        return;
    }
    wf_ads_conn *c = wf_h2_call_data(call);
    if (!c || a->closing || c->refused)
        return;
    if (c->review) { /* XDS_AUTH: the stream's TokenReview has not answered yet */
        (void)wf_ads_hold(c, msg, len);
        return;
    }
    conn_message(c, msg, len);
}

/* The stream's TokenReview answered (XDS_AUTH in Kubernetes mode): the requests that waited
 * are served in order, unless the stream was refused. */
static void on_reviewed(void *arg, bool ok, const char *ns, const char *sa, const char *why)
{
    wf_ads_conn *c = arg;
    wf_ads_held *h = c->held;
    c->held = NULL;
    c->held_tail = &c->held;
    c->held_bytes = 0;
    bool go = wf_ads_reviewed(c, ok, ns, sa, why) == 0;
    while (h) {
        wf_ads_held *n = h->next;
        if (go && c->call && !c->refused && !c->ads->closing)
            conn_message(c, h->data, h->len);
        free(h);
        h = n;
    }
}

static void maybe_free(wf_ads *a);

static void on_end(wf_h2_call *call, const wf_h2_end *end, void *ud)
{
    wf_ads *a = ud;
    const wf_ads_service *svc = service_of(a, call);
    if (svc) {
        if (svc->h.on_end)
            svc->h.on_end(call, end, svc->h.ud);
        return;
    }
    wf_ads_conn *c = wf_h2_call_data(call);
    if (!c) {
        return;
    }
    a->live_calls--;
    c->call = NULL;
    c->connected = false;
    c->disconnected_at_ms = wf_ads_now_ms();
    if (c->has_proxy) {
        WF_LOG(WF_LC_config, WF_LOG_INFO, "ADS: %s terminated (%s%s%s)", c->id,
               wf_h2_end_reason_str(end->reason), *end->grpc_message ? ": " : "",
               end->grpc_message);
        wf_ads_history_add(c, WF_ADS_EV_DISCONNECTED, "%s%s%s", wf_h2_end_reason_str(end->reason),
                           *end->grpc_message ? ": " : "", end->grpc_message);
    }
    if (!c->has_proxy || a->closing) {
        for (size_t i = 0; i < a->n_conns; i++) {
            if (a->conns[i] == c) {
                wf_ads_list_remove(a, i);
                break;
            }
        }
        wf_ads_conn_free(c);
    }
    maybe_free(a);
}

/* ---- pushes -----------------------------------------------------------------------------------
 */
/* ---- lifecycle and queries --------------------------------------------------------------------
 */

static void on_reap(uv_timer_t *t)
{
    wf_ads *a = t->data;
    int64_t now = wf_ads_now_ms();
    for (size_t i = a->n_conns; i-- > 0;) {
        wf_ads_conn *c = a->conns[i];
        if (!c->connected && now - c->disconnected_at_ms >= (int64_t)a->opts.retention_ms) {
            wf_ads_list_remove(a, i);
            wf_ads_conn_free(c);
        }
    }
}

static void free_ads(wf_ads *a)
{
    for (size_t i = 0; i < a->n_conns; i++) {
        wf_ads_conn_free(a->conns[i]);
    }
    free(a->conns);
    wf_ads_set_snapshot(a, NULL);
    wf_xds_name_pool_free(a->names);
    free(a);
}

static void maybe_free(wf_ads *a)
{
    if (a->closing && a->live_calls == 0 && a->open_handles == 0) {
        free_ads(a);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    wf_ads *a = h->data;
    a->open_handles--;
    maybe_free(a);
}

void wf_ads_close(wf_ads *a)
{
    if (!a || a->closing) {
        return;
    }
    a->closing = true;
    if (a->h2) {
        wf_h2_server_close(a->h2);
    }
    if (a->h2_secure)
        wf_h2_server_close(a->h2_secure);
    uv_close((uv_handle_t *)&a->reaper, on_handle_closed);
    uv_close((uv_handle_t *)&a->q_idle, on_handle_closed);
    uv_close((uv_handle_t *)&a->q_timer, on_handle_closed);
}

/* Why listening failed, in the kernel's words: a probe bind of the same address (the transport
 * only says that it failed). Returns a static string. */
static const char *why_not(const char *ip, int port, const char *pipe)
{
    struct sockaddr_storage sa = {0};
    socklen_t len;
    if (pipe) {
        struct sockaddr_un *un = (struct sockaddr_un *)&sa;
        un->sun_family = AF_UNIX;
        if (strlen(pipe) >= sizeof un->sun_path)
            return "path too long for a Unix socket";
        strcpy(un->sun_path, pipe);
        len = sizeof *un;
    } else if (uv_ip4_addr(ip, port, (struct sockaddr_in *)&sa) == 0) {
        len = sizeof(struct sockaddr_in);
    } else if (uv_ip6_addr(ip, port, (struct sockaddr_in6 *)&sa) == 0) {
        len = sizeof(struct sockaddr_in6);
    } else {
        return "not an IP address";
    }
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return strerror(errno);
    int one = 1;
    if (!pipe)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = bind(fd, (struct sockaddr *)&sa, len);
    int e = errno;
    close(fd);
    if (rc == 0) {
        if (pipe)
            unlink(pipe);
        return "unknown reason";
    }
    return strerror(e);
}

/* The methods served on the one xDS listener, as istiod serves both on 15010, and the other
 * services hosted there. */
static void set_paths(wf_ads *a)
{
    size_t n = 0;
    a->paths[n++] = WF_XDS_ADS_PATH;
    a->paths[n++] = WF_XDS_DELTA_PATH;
    for (size_t i = 0; i < a->opts.n_services; i++)
        a->paths[n++] = a->services[i].path;
    a->paths[n] = NULL;
}

static wf_h2_opts xds_opts(wf_ads *a)
{
    return (wf_h2_opts){
        .max_msg = a->opts.max_msg,
        .max_send_queue = (size_t)256 * 1024 * 1024,
        .ping_interval_ms = a->opts.ping_interval_ms,
        .ping_timeout_ms = a->opts.ping_timeout_ms,
        .paths = a->paths,
    };
}

int wf_ads_listen_secure(wf_ads *a, const char *ip, int port, wf_tls_ctx *tls, char *err,
                         size_t cap)
{
    wf_h2_opts o = xds_opts(a);
    wf_h2_handlers h = {.on_call = on_call, .on_message = on_message, .on_end = on_end, .ud = a};
    if (wf_h2_server_start(a->loop, ip, port, &o, &h, &a->h2_secure) != 0) {
        a->h2_secure = NULL;
        snprintf(err, cap, "cannot listen for secure xDS on %s:%d: %s", ip, port,
                 why_not(ip, port, NULL));
        return -1;
    }
    wf_h2_server_set_tls(a->h2_secure, tls);
    return 0;
}

void wf_ads_set_secure_tls(wf_ads *a, wf_tls_ctx *tls)
{
    if (a->h2_secure)
        wf_h2_server_set_tls(a->h2_secure, tls);
}

int wf_ads_secure_port(const wf_ads *a)
{
    return a->h2_secure ? wf_h2_server_port(a->h2_secure) : -1;
}

static int listen_xds(wf_ads *a, char *err, size_t cap)
{
    set_paths(a);
    wf_h2_opts o = {
        .max_msg = a->opts.max_msg,
        .max_send_queue = (size_t)256 * 1024 * 1024,
        .ping_interval_ms = a->opts.ping_interval_ms,
        .ping_timeout_ms = a->opts.ping_timeout_ms,
        .paths = a->paths,
    };
    wf_h2_handlers h = {.on_call = on_call, .on_message = on_message, .on_end = on_end, .ud = a};
    const char *pipe = a->opts.pipe;
    int rc = pipe ? wf_h2_server_start_pipe(a->loop, pipe, &o, &h, &a->h2)
                  : wf_h2_server_start(a->loop, a->opts.ip, a->opts.port, &o, &h, &a->h2);
    if (rc != 0 && pipe) {
        snprintf(err, cap, "cannot listen for xDS on unix:%s: %s", pipe, why_not(NULL, 0, pipe));
        return -1;
    }
    if (rc != 0) {
        snprintf(err, cap, "cannot listen for xDS on %s:%d: %s", a->opts.ip, a->opts.port,
                 why_not(a->opts.ip, a->opts.port, NULL));
        return -1;
    }
    return 0;
}

static void init_metrics(wf_ads_metrics *m)
{
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        m->push_time[t].bounds = push_buckets;
        m->push_time[t].n_bounds = NBUCKETS(push_buckets);
    }
    m->convergence.bounds = conv_buckets;
    m->convergence.n_bounds = NBUCKETS(conv_buckets);
}

int wf_ads_start(uv_loop_t *loop, const wf_ads_opts *opts, wf_ads **out, char *err, size_t cap)
{
    wf_ads *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    a->loop = loop;
    a->opts = *opts;
    if (opts->n_services > WF_ADS_MAX_SERVICES) {
        snprintf(err, cap, "too many gRPC services on the xDS listener");
        free(a);
        return -1;
    }
    for (size_t i = 0; i < opts->n_services; i++)
        a->services[i] = opts->services[i];
    a->opts.services = NULL;
    a->opts.ip = opts->ip ? opts->ip : "127.0.0.1";
    a->opts.retention_ms = opts->retention_ms ? opts->retention_ms : 300000;
    a->opts.generate = opts->generate ? opts->generate : wf_pilot_generate;
    a->opts.proxy_from_node =
        opts->proxy_from_node ? opts->proxy_from_node : wf_pilot_proxy_from_node;
    a->rng[0] = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)a;
    a->rng[1] = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1;
    init_metrics(&a->metrics);
    if (!(a->names = wf_xds_name_pool_new())) {
        snprintf(err, cap, "out of memory");
        free(a);
        return -1;
    }
    uv_timer_init(loop, &a->reaper);
    uv_idle_init(loop, &a->q_idle);
    uv_timer_init(loop, &a->q_timer);
    a->reaper.data = a->q_idle.data = a->q_timer.data = a;
    a->q_turn = wf_ads_on_queue_turn;
    a->open_handles = 3;
    if (listen_xds(a, err, cap)) {
        wf_ads_close(a);
        return -1;
    }
    uint64_t every = a->opts.retention_ms < 10000 ? 100 : 1000;
    uv_timer_start(&a->reaper, on_reap, every, every);
    *out = a;
    return 0;
}

int wf_ads_port(const wf_ads *a)
{
    return a->h2 ? wf_h2_server_port(a->h2) : -1;
}

wf_snapshot *wf_ads_snapshot(const wf_ads *a)
{
    return a->snap;
}

const char *wf_ads_version(const wf_ads *a)
{
    return a->version;
}

size_t wf_ads_conn_count(const wf_ads *a)
{
    return a->n_conns;
}

const wf_ads_conn *wf_ads_conn_at(const wf_ads *a, size_t i)
{
    return i < a->n_conns ? a->conns[i] : NULL;
}

const wf_ads_metrics *wf_ads_get_metrics(const wf_ads *a)
{
    return &a->metrics;
}

int wf_ads_proxy_from_node(const wf_ads *a, const wf_xds_node *node, wf_pilot_proxy *out, char *err,
                           size_t cap)
{
    return a->opts.proxy_from_node(node, a->snap ? a->snap->store : NULL, out, err, cap);
}
