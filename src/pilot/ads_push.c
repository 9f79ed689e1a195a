/*
 * ads_push.c - the push queue: pushes and request responses are generated and sent proxy by
 * proxy from the loop's idle phase, a batch per loop turn, with the bytes waiting in the HTTP/2
 * send queues bounded. See ads.h ("pushes") for the behaviour and ads_internal.h for the API.
 *
 * Istio's push queue (pilot/pkg/xds/pushqueue.go) and its throttling (PILOT_PUSH_THROTTLE,
 * the concurrent push limit): a proxy waiting in the queue is pushed once, with the latest
 * snapshot, whatever number of pushes were merged while it waited (Istio's PushRequest.Merge);
 * proxies are served in queue order so early proxies converge early, and the loop keeps
 * accepting connections and reading ACKs between batches.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/eds_update.h"
#include "xds/grpc_frame.h"

/* Proxies served per loop turn, and the bytes queued in HTTP/2 send queues above which no
 * more proxies are served until they drain (Istio's PILOT_PUSH_THROTTLE plays this role). */
#define PUSH_BATCH        32
#define PUSH_INFLIGHT_MAX ((size_t)48 << 20)
#define PUSH_RETRY_MS     2

/* Istio's full-push order, then the other types (requests only). */
static const wf_xds_type serve_order[WF_XDS_NTYPES] = {
    WF_XDS_CDS, WF_XDS_EDS, WF_XDS_LDS, WF_XDS_RDS, WF_XDS_SDS, WF_XDS_ECDS, WF_XDS_NDS};

/* Bytes waiting in the send queues of every call (kept by the transport: O(1)). */
static size_t inflight(const wf_ads *a)
{
    return (a->h2 ? wf_h2_server_pending(a->h2) : 0) +
           (a->h2_secure ? wf_h2_server_pending(a->h2_secure) : 0);
}

static void observe_convergence(wf_ads_conn *c, int64_t changed_at_ms)
{
    double s = (double)(wf_ads_now_ms() - changed_at_ms) / 1e3;
    wf_ads_hist_observe(&c->ads->metrics.convergence, s < 0 ? 0 : s);
}

/* Generates and sends what c waits for. */
static void serve(wf_ads_conn *c)
{
    unsigned push = c->q_push, force = c->q_force;
    int64_t at = c->q_changed_at_ms;
    json_t *eds_services = c->q_eds_services; /* NULL: the whole EDS watch */
    bool sent = false;
    c->q_push = c->q_force = 0;
    c->q_changed_at_ms = 0;
    c->q_eds_services = NULL;
    for (size_t i = 0; i < WF_XDS_NTYPES && c->connected && c->call; i++) {
        wf_xds_type t = serve_order[i];
        unsigned bit = 1u << t;
        if (!((push | force) & bit) || !c->types[t].w.watched)
            continue;
        bool f = (force & bit) != 0;
        const json_t *svc = t == WF_XDS_EDS ? eds_services : NULL;
        int rc = c->delta ? wf_delta_push(c, t, f, svc) : wf_ads_sotw_push(c, t, f, svc);
        if (rc < 0) {
            wf_ads_fail(c, WF_GRPC_INTERNAL,
                        f ? "could not generate or send the response"
                          : "could not generate or send a push");
            json_decref(eds_services);
            return;
        }
        sent |= rc > 0;
    }
    json_decref(eds_services);
    if (sent && at)
        observe_convergence(c, at);
}

static void on_retry(uv_timer_t *t)
{
    wf_ads *a = t->data;
    if (a->q_head)
        wf_ads_kick(a);
}

void wf_ads_on_queue_turn(uv_idle_t *h)
{
    wf_ads *a = h->data;
    for (int k = 0; k < PUSH_BATCH && a->q_head && !a->closing; k++) {
        if (inflight(a) > PUSH_INFLIGHT_MAX) { /* wait for the peers to read */
            uv_idle_stop(&a->q_idle);
            uv_timer_start(&a->q_timer, on_retry, PUSH_RETRY_MS, 0);
            return;
        }
        wf_ads_conn *c = a->q_head;
        wf_ads_dequeue(c);
        serve(c);
    }
    if (!a->q_head || a->closing)
        uv_idle_stop(&a->q_idle);
}

/* ---- pushes ---- */

static void make_version(wf_ads *a)
{
    time_t now = time(NULL);
    struct tm tm;
    char ts[32];
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(a->version, sizeof a->version, "%s/%llu", ts, (unsigned long long)++a->push_seq);
}

/* The types a push covers (Istio's full push: CDS, EDS, LDS, RDS, and NDS for the proxies
 * that watch it: nds.go ndsNeedsPush is true on every full push). */
#define PUSH_TYPES                                                                                 \
    ((1u << WF_XDS_CDS) | (1u << WF_XDS_EDS) | (1u << WF_XDS_LDS) | (1u << WF_XDS_RDS) |           \
     (1u << WF_XDS_NDS))

/* The types a change can alter for a sidecar. Only RDS reads VirtualServices for a sidecar
 * (rds*.c; CDS, EDS and LDS never do, and gen_cache.c drops only RDS for them), so a change of
 * VirtualServices alone regenerates RDS only, instead of regenerating CDS, EDS and LDS just to
 * find them byte-identical to what was sent (they would not be resent anyway, see ads.h).
 * Anything else, an unknown change list or another MeshConfig: every type. */
static unsigned sidecar_push_types(const wf_snapshot *snap)
{
    static const char vs[] = "VirtualService/";
    if (snap->mesh_changed || snap->n_changed == 0)
        return PUSH_TYPES;
    for (size_t i = 0; i < snap->n_changed; i++)
        if (strncmp(snap->changed[i], vs, sizeof vs - 1) != 0)
            return PUSH_TYPES;
    return 1u << WF_XDS_RDS;
}

/* istiod's sdsNeedsPush: SDS is generated again only when a Secret changed (or the change is
 * not known). The proxies that do not watch SDS skip it (serve). */
static unsigned sds_push_type(const wf_snapshot *snap)
{
    static const char sec[] = "Secret/";
    if (snap->mesh_changed || snap->n_changed == 0)
        return 1u << WF_XDS_SDS;
    for (size_t i = 0; i < snap->n_changed; i++)
        if (strncmp(snap->changed[i], sec, sizeof sec - 1) == 0)
            return 1u << WF_XDS_SDS;
    return 0;
}

/* Whether c's EDS watch holds a cluster of an updated service (a delta wildcard: yes). memo:
 * the answer per distinct name list (proxies share their lists), "<names hash>" -> bool. */
static bool watches_updated(const wf_ads_conn *c, const json_t *services, json_t *memo)
{
    const wf_ads_type *ty = &c->types[WF_XDS_EDS];
    if (!ty->w.watched)
        return false;
    if (c->delta && ty->wildcard)
        return true;
    const wf_xds_names *names = &ty->w.names;
    char key[24];
    snprintf(key, sizeof key, "%016llx",
             (unsigned long long)(ty->w.list ? ty->w.names_hash : wf_xds_names_hash(names)));
    json_t *known = json_object_get(memo, key);
    if (known)
        return json_is_true(known);
    bool hit = false;
    for (size_t i = 0; i < names->n && !hit; i++)
        hit = wf_eds_cluster_updated(names->v[i], services);
    json_object_set_new(memo, key, json_boolean(hit)); /* out of memory: not remembered */
    return hit;
}

/* An ENDPOINTS snapshot: istiod's incremental EDS push (ads.h). */
static void push_incremental(wf_ads *a, wf_snapshot *snap)
{
    const json_t *services = snap->eds_services;
    json_t *memo = json_object();
    size_t queued = 0;
    for (size_t i = 0; i < a->n_conns; i++) {
        wf_ads_conn *c = a->conns[i];
        if (!c->connected || !c->call)
            continue;
        char key[512];
        snprintf(key, sizeof key, "Pod/%s/%s", c->proxy.ns, c->proxy.pod);
        if (wf_snapshot_changed(snap, key)) { /* the proxy's own workload: a full push */
            wf_ads_enqueue(c, PUSH_TYPES, 0, snap->changed_at_ms);
            queued++;
        } else if (!services || !memo || watches_updated(c, services, memo)) {
            if (services)
                wf_ads_enqueue_eds(c, services, snap->changed_at_ms);
            else
                wf_ads_enqueue(c, 1u << WF_XDS_EDS, 0, snap->changed_at_ms);
            queued++;
        }
    }
    json_decref(memo);
    a->metrics.last_push_proxies = queued;
}

/* The updated services for the log line: "[a, b, ...]" (the first few). */
static void services_text(const json_t *services, char *buf, size_t cap)
{
    size_t n = 0, k = 0;
    const char *host;
    json_t *v;
    n += (size_t)snprintf(buf, cap, "[");
    json_object_foreach((json_t *)services, host, v)
    {
        if (n + strlen(host) + 8 >= cap || k == 8) {
            snprintf(buf + n, cap - n, "%s...", k ? ", " : "");
            n = strlen(buf);
            break;
        }
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", k++ ? ", " : "", host);
    }
    snprintf(buf + n, cap - n, "]");
}

/* istiod's debounce line (pilot/pkg/xds/discovery.go debounce): "Push debounce stable[<n>] <events>
 * for config <first changed key> and <k> more configs: ... full=<bool>"; the events are the
 * changed resources, the time is from the burst's first change to the push. */
static void log_debounced(wf_ads *a, const wf_snapshot *snap)
{
    char more[48] = "";
    if (snap->n_changed > 1)
        snprintf(more, sizeof more, " and %zu more configs", snap->n_changed - 1);
    int64_t since = wf_ads_now_ms() - snap->changed_at_ms;
    WF_LOG(WF_LC_config, WF_LOG_INFO,
           "Push debounce stable[%llu] %zu for config %s%s: %lldms since first change, full=%s",
           (unsigned long long)a->push_seq, snap->n_changed,
           snap->n_changed      ? snap->changed[0]
           : snap->mesh_changed ? "MeshConfig"
                                : "(start)",
           more, (long long)(since < 0 ? 0 : since),
           snap->change == WF_CHANGE_ENDPOINTS ? "false" : "true");
}

void wf_ads_push(wf_ads *a, wf_snapshot *snap)
{
    bool first = a->snap == NULL;
    wf_snapshot_ref(snap);
    wf_ads_set_snapshot(a, snap);
    if (!first && snap->change == WF_CHANGE_NONE)
        return; /* errors or touched files only: served for debug, nothing to push */
    make_version(a);
    log_debounced(a, snap);
    if (snap->change == WF_CHANGE_ENDPOINTS) {
        char svcs[512];
        a->metrics.eds_pushes++;
        services_text(snap->eds_services, svcs, sizeof svcs);
        push_incremental(a, snap);
        WF_LOG(WF_LC_config, WF_LOG_INFO,
               "XDS: Incremental Pushing ConnectedEndpoints:%zu Version:%s Services:%zu %s "
               "Proxies:%llu",
               wf_ads_connected(a), a->version, json_object_size(snap->eds_services), svcs,
               (unsigned long long)a->metrics.last_push_proxies);
        return;
    }
    a->metrics.full_pushes++;
    WF_LOG(WF_LC_config, WF_LOG_INFO, "XDS: Pushing full Version:%s ConnectedEndpoints:%zu",
           a->version, wf_ads_connected(a));
    unsigned sds = sds_push_type(snap);
    unsigned sidecar = sidecar_push_types(snap) | sds;
    size_t queued = 0;
    for (size_t i = 0; i < a->n_conns; i++) {
        wf_ads_conn *c = a->conns[i];
        if (!c->connected || !c->call)
            continue;
        unsigned types = c->proxy.kind == WF_PROXY_SIDECAR ? sidecar : PUSH_TYPES | sds;
        wf_ads_enqueue(c, types, 0, snap->changed_at_ms);
        queued++;
    }
    a->metrics.last_push_proxies = queued;
}

void wf_ads_push_listeners(wf_ads *a)
{
    if (!a->snap)
        return;
    make_version(a);
    a->metrics.full_pushes++;
    WF_LOG(WF_LC_config, WF_LOG_INFO, "XDS: Pushing LDS (JWKS) Version:%s ConnectedEndpoints:%zu",
           a->version, wf_ads_connected(a));
    for (size_t i = 0; i < a->n_conns; i++) {
        wf_ads_conn *c = a->conns[i];
        if (c->connected && c->call)
            wf_ads_enqueue(c, 1u << WF_XDS_LDS, 0, wf_ads_now_ms());
    }
}
