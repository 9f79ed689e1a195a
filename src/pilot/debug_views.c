/*
 * debug_views.c - what weft-pilot's debug endpoints answer (istiod's /debug handlers,
 * reference istioctl-troubleshooting.md §5). See debug.h for the list; shapes:
 *
 * /debug/syncz: [{ "proxy": "<pod>.<ns>", "connection_id": "<id>-<n>", "proxy_type":
 *   "sidecar|router", "cluster_id": "Kubernetes", "istio_version": "...",   (omitted if empty)
 *   "cluster_sent"/"cluster_acked", "listener_sent"/..., "route_sent"/..., "endpoint_sent"/...
 *   (nonces, omitted when empty, istiod's names),
 *   "resources": {"<type url>": {"sent", "acked", "sentTime" (always), "lastError"}},
 *   weft: "cluster_status": "SYNCED|NOT SENT|STALE|ERROR|IGNORED" (IGNORED = not watched;
 *   a watched type pilot never sent is NOT SENT), for every type pilot tracks: prefixes
 *   cluster, listener, route, endpoint, extensionconfig (istiod's) and secret (weft's);
 *   "resources" entries also carry weft's "versionSent" and "versionAcked",
 *   "cluster_since_s" (seconds since the status last changed), "cluster_since" (when, RFC 3339),
 *   "cluster_error" (NACK text),
 *   likewise listener_/route_/endpoint_; "connected": bool, "disconnected_for_s" (when not
 *   connected), "delta": bool, "admin": WEFT_ADMIN }]
 * /debug/adsz: {"totalClients": N, "rejected": [{"node", "address", "reason", "at"}] (the
 *   last streams refused for their node, newest first), "clients": [{"connectionId",
 *   "connectedAt", "address": "",
 *   "labels", "metadata": {"NAMESPACE", "ISTIO_VERSION", "CLUSTER_ID", "PROXY_TYPE",
 *   "WEFT_ADMIN"}, "watches": {"<type url>": [names]}, "connected", "delta"}]}
 * /debug/configz: {"snapshot": seq, "version": push version, "files": N, "resources":
 *   [{"kind", "namespace", "name", "file", "last_good": bool}], "errors": [...config_errors],
 *   "mesh_error"?}
 * /debug/config_errors: [{"level": "error", "file", "line", "column", "resource", "kind", "field",
 *   "message", "kept_last_good"}] then [{"level": "warning", "code": "WFT0001|WFT0002", ...}]
 *   for the Istio fields weft does not implement (model/unimplemented.h)
 * /debug/registryz: [{"hostname", "name", "namespace", "kind": "Service|ServiceEntry",
 *   "ports": [{"name", "port", "protocol", "targetPort"?}], "selector"?}]
 * /debug/endpointz: [{"service", "namespace", "port", "cluster", "endpoints":
 *   [{"address", "port", "workload", "health_status"}]}]
 * /debug/config_dump: {"configs": [BootstrapConfigDump, ClustersConfigDump, (EndpointsConfigDump
 *   with include_eds), ListenersConfigDump, ScopedRoutesConfigDump, RoutesConfigDump,
 *   SecretsConfigDump]} with Envoy's snake_case fields, so weftctl compares it with a proxy's
 *   /config_dump the way istioctl proxy-status <pod> does.
 * /debug/authorizationz: istiod's {"authorization_policies": {"namespace_to_policies": {ns:
 *   [{"name", "namespace", "annotations", "spec"}]}, "root_namespace"}} (pilot/authz.h)
 * /debug/push_status: {"version", "snapshot", "change", "full" (false for an incremental
 *   EDS push), "changed": [keys], "updated_services": [hosts an incremental push updated],
 *   "build_ms", "changed_at", "full_pushes", "eds_pushes", "pushed_proxies" (queued by the last
 *   push), "connected", "config_errors"}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/timefmt.h"
#include "pilot/ads.h"
#include "pilot/authz.h"
#include "pilot/debug.h"
#include "pilot/debug_internal.h"
#include "pilot/webhook.h"
#include "pilot/eds.h"
#include "pilot/jwks_fetch.h"
#include "pilot/kube_writer.h"
#include "pilot/nds.h"
#include "pilot/pilot.h"
#include "pilot/ui_proxies.h"
#include "pilot/ui_static.h"
#include "pilot/ui_validations.h"
#include "pilot/ui_graph.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

static const wf_xds_type core_types[] = {WF_XDS_CDS, WF_XDS_LDS, WF_XDS_RDS, WF_XDS_EDS};
/* /debug/syncz: every type a proxy may watch, with istiod's prefixes (secret: weft's). */
static const wf_xds_type syncz_types[] = {WF_XDS_CDS, WF_XDS_LDS,  WF_XDS_RDS,
                                          WF_XDS_EDS, WF_XDS_ECDS, WF_XDS_SDS};
static const char *const syncz_prefix[] = {"cluster",  "listener",        "route",
                                           "endpoint", "extensionconfig", "secret"};

static void rfc3339(int64_t ms, char *buf, size_t cap)
{
    if (ms <= 0) {
        snprintf(buf, cap, "0001-01-01T00:00:00Z");
        return;
    }
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v && *v) {
        json_object_set_new(o, k, json_string(v));
    }
}

static void reply_text(wf_debug_reply *r, int status, const char *text)
{
    r->status = status;
    r->ctype = "text/plain; charset=utf-8";
    wf_strbuf_puts(&r->body, text);
}

/* ---- syncz / adsz ------------------------------------------------------------------------------
 */

static const char *kind_name(const wf_pilot_proxy *p)
{
    return p->kind == WF_PROXY_ROUTER ? "router" : "sidecar";
}

static void syncz_type(json_t *o, json_t *res, const wf_ads_conn *c, int i, int64_t now)
{
    wf_xds_type t = syncz_types[i];
    const wf_ads_type *ty = &c->types[t];
    char k[64], ts[40];
    const char *pre = syncz_prefix[i];
    if (ty->w.watched) {
        snprintf(k, sizeof k, "%s_sent", pre);
        set_str(o, k, ty->w.nonce_sent);
        snprintf(k, sizeof k, "%s_acked", pre);
        set_str(o, k, ty->w.nonce_acked);
    }
    snprintf(k, sizeof k, "%s_status", pre); /* the status proxy-status and the web view show */
    json_object_set_new(o, k, json_string(wf_ads_type_status(c, t)));
    if (!ty->w.watched)
        return;
    int64_t since = ty->w.sync_since_ms ? ty->w.sync_since_ms : c->connected_at_ms;
    snprintf(k, sizeof k, "%s_since_s", pre);
    json_object_set_new(o, k, json_integer((now - since) / 1000));
    snprintf(k, sizeof k, "%s_since", pre); /* absolute: a stable lastUpdated for weftctl */
    rfc3339(since, ts, sizeof ts);
    json_object_set_new(o, k, json_string(ts));
    snprintf(k, sizeof k, "%s_error", pre);
    set_str(o, k, ty->w.error_message);
    json_t *r = json_object();
    set_str(r, "sent", ty->w.nonce_sent);
    set_str(r, "acked", ty->w.nonce_acked);
    rfc3339(ty->sent_at_ms, ts, sizeof ts);
    json_object_set_new(r, "sentTime", json_string(ts));
    set_str(r, "lastError", ty->w.error_message);
    set_str(r, "versionSent", ty->w.version_sent);
    set_str(r, "versionAcked", ty->w.version_acked);
    json_object_set_new(res, wf_xds_type_url(t), r);
}

static json_t *syncz_entry(const wf_ads_conn *c, int64_t now)
{
    json_t *o = json_object(), *res = json_object();
    const wf_pilot_proxy *p = &c->proxy;
    json_object_set_new(o, "cluster_id", json_string(p->cluster_id ? p->cluster_id : "Kubernetes"));
    json_object_set_new(o, "proxy", json_string(p->id));
    json_object_set_new(o, "connection_id", json_string(c->id));
    json_object_set_new(o, "proxy_type", json_string(kind_name(p)));
    set_str(o, "istio_version", p->version);
    for (int i = 0; i < (int)(sizeof syncz_types / sizeof syncz_types[0]); i++) {
        syncz_type(o, res, c, i, now);
    }
    json_object_set_new(o, "resources", res);
    json_object_set_new(o, "connected", json_boolean(c->connected));
    if (!c->connected) {
        json_object_set_new(o, "disconnected_for_s",
                            json_integer((now - c->disconnected_at_ms) / 1000));
    }
    json_object_set_new(o, "delta", json_boolean(c->delta));
    set_str(o, "admin", p->admin);
    return o;
}

static void view_syncz(wf_ads *a, const char *q, wf_debug_reply *r)
{
    char ns[256];
    const char *want = wf_debug_query_get(q, "namespace", ns, sizeof ns);
    json_t *arr = json_array();
    int64_t now = wf_ads_now_ms();
    for (size_t i = 0; arr && i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        if (!want || !*want || strcmp(want, c->proxy.ns) == 0) {
            json_array_append_new(arr, syncz_entry(c, now));
        }
    }
    wf_debug_reply_json(r, 200, arr);
}

static json_t *adsz_client(const wf_ads_conn *c)
{
    char ts[40];
    const wf_pilot_proxy *p = &c->proxy;
    json_t *o = json_object(), *md = json_object(), *w = json_object();
    json_object_set_new(o, "connectionId", json_string(c->id));
    rfc3339(c->connected_at_ms, ts, sizeof ts);
    json_object_set_new(o, "connectedAt", json_string(ts));
    json_object_set_new(o, "address",
                        json_string(c->address[0] ? c->address : (p->ip ? p->ip : "")));
    json_object_set(o, "labels", p->labels);
    set_str(md, "NAMESPACE", p->ns);
    set_str(md, "ISTIO_VERSION", p->version);
    json_object_set_new(md, "CLUSTER_ID",
                        json_string(p->cluster_id ? p->cluster_id : "Kubernetes"));
    json_object_set_new(md, "PROXY_TYPE", json_string(kind_name(p)));
    set_str(md, "WEFT_ADMIN", p->admin);
    json_object_set_new(o, "metadata", md);
    for (int t = 0; t < WF_XDS_NTYPES; t++) {
        const wf_ads_type *ty = &c->types[t];
        if (!ty->w.watched) {
            continue;
        }
        json_t *names = json_array();
        for (size_t i = 0; i < ty->w.names.n; i++) {
            json_array_append_new(names, json_string(ty->w.names.v[i]));
        }
        json_object_set_new(w, wf_xds_type_url(t), names);
    }
    json_object_set_new(o, "watches", w);
    json_object_set_new(o, "connected", json_boolean(c->connected));
    json_object_set_new(o, "delta", json_boolean(c->delta));
    return o;
}

static void view_adsz(wf_ads *a, const char *q, wf_debug_reply *r)
{
    char id[256];
    const char *want = wf_debug_query_get(q, "proxyID", id, sizeof id);
    json_t *arr = json_array();
    size_t n = 0;
    for (size_t i = 0; arr && i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        if (!want || strstr(c->id, want)) {
            json_array_append_new(arr, adsz_client(c));
            n += c->connected;
        }
    }
    json_t *rej = json_array();
    for (size_t i = 0; rej && i < wf_ads_rejected_count(a); i++) {
        const wf_ads_rejected *x = wf_ads_rejected_at(a, i);
        char ts[40];
        rfc3339(x->at_ms, ts, sizeof ts);
        json_array_append_new(rej, json_pack("{s:s, s:s, s:s, s:s}", "node", x->node, "address",
                                             x->address, "reason", x->reason, "at", ts));
    }
    wf_debug_reply_json(r, 200,
                        json_pack("{s:I, s:o, s:o}", "totalClients", (json_int_t)n, "clients", arr,
                                  "rejected", rej ? rej : json_array()));
}

/* ---- configz / errors / push_status -----------------------------------------------------------
 */

static json_t *error_json(const wf_config_error *e, bool warning)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:b}", "level",
                          warning ? "warning" : "error", "file", e->file, "line", (int)e->line,
                          "column", (int)e->col, "resource", e->resource, "field", e->field,
                          "message", e->message, "kept_last_good", e->kept_last_good);
    if (o && warning && e->code)
        json_object_set_new(o, "code", json_string(e->code));
    /* the kind alone, for scripts: "Kind ns/name" -> "Kind" ("" for a file-level error) */
    size_t k = strcspn(e->resource, " ");
    if (o)
        json_object_set_new(o, "kind", json_stringn(e->resource, k));
    return o;
}

/* The errors, then the warnings (fields weft does not implement). */
static json_t *errors_json(const wf_snapshot *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < s->n_errors; i++)
        json_array_append_new(arr, error_json(&s->errors[i], false));
    for (size_t i = 0; arr && i < s->n_warnings; i++)
        json_array_append_new(arr, error_json(&s->warnings[i], true));
    return arr;
}

/* The CA's certificates near their end (pilot_ca.h) as config_errors warnings (code WFT0003),
 * appended to arr. */
static void append_ca_expiry(wf_pilot *p, json_t *arr)
{
    wf_ca_expiry e[2];
    int64_t now = (int64_t)time(NULL);
    size_t n = wf_pilot_ca_expiry(wf_pilot_get_ca(p), now, e);
    for (size_t i = 0; arr && i < n; i++) {
        char na[40], res[64];
        wf_timestamp_s(e[i].not_after_s, na, sizeof na);
        snprintf(res, sizeof res, "CA %s", e[i].which);
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:I}", "level",
                           "warning", "file",
                           wf_ca_where(wf_ca_server_ca(wf_pilot_ca_server(wf_pilot_get_ca(p)))),
                           "line", 0, "column", 0, "resource", res, "kind", "CA", "field", "",
                           "message", e[i].message, "kept_last_good", false, "code", "WFT0003",
                           "not_after", na, "days_left", (json_int_t)(e[i].left_s / 86400)));
    }
}

static void view_configz(wf_pilot *p, wf_debug_reply *r, bool errors_only)
{
    wf_ads *a = wf_pilot_ads(p);
    const wf_snapshot *s = wf_ads_snapshot(a);
    if (!s) {
        reply_text(r, 503, "no config loaded yet\n");
        return;
    }
    if (errors_only) {
        json_t *arr = errors_json(s);
        append_ca_expiry(p, arr);
        wf_debug_reply_json(r, 200, arr);
        return;
    }
    json_t *res = json_array();
    for (size_t i = 0; res && i < wf_strmap_count(s->res); i++) {
        const wf_snap_res *e = wf_strmap_value(s->res, i);
        const char *key = wf_strmap_key(s->res, i);
        const char *ns = strchr(key, '/') + 1, *name = strchr(ns, '/') + 1;
        json_array_append_new(res, json_pack("{s:s, s:s#, s:s, s:s, s:b}", "kind", e->kind,
                                             "namespace", ns, (int)(name - ns - 1), "name", name,
                                             "file", e->file, "last_good", e->stale));
    }
    json_t *o = json_pack("{s:I, s:s, s:I, s:o, s:o}", "snapshot", (json_int_t)s->seq, "version",
                          wf_ads_version(a), "files", (json_int_t)s->files, "resources", res,
                          "errors", errors_json(s));
    append_ca_expiry(p, json_object_get(o, "errors"));
    if (o && s->mesh_error) {
        json_object_set_new(o, "mesh_error", json_string(s->mesh_error));
    }
    wf_debug_reply_json(r, 200, o);
}

static void view_push_status(wf_ads *a, wf_debug_reply *r)
{
    const wf_snapshot *s = wf_ads_snapshot(a);
    const wf_ads_metrics *m = wf_ads_get_metrics(a);
    char ts[40];
    json_t *changed = json_array();
    for (size_t i = 0; s && changed && i < s->n_changed; i++) {
        json_array_append_new(changed, json_string(s->changed[i]));
    }
    /* the services an incremental push updated (istiod's ConfigsUpdated of kind ServiceEntry) */
    json_t *services = json_array();
    const char *host;
    json_t *v;
    json_object_foreach(s ? s->eds_services : NULL, host, v)
    {
        json_array_append_new(services, json_string(host));
    }
    rfc3339(s ? s->changed_at_ms : 0, ts, sizeof ts);
    json_t *o = json_pack(
        "{s:s, s:I, s:s, s:b, s:o, s:o, s:f, s:s, s:I, s:I, s:I, s:I, s:I}", "version",
        wf_ads_version(a), "snapshot", (json_int_t)(s ? s->seq : 0), "change",
        wf_change_kind_name(s ? s->change : WF_CHANGE_NONE), "full",
        !s || s->change != WF_CHANGE_ENDPOINTS, "changed", changed, "updated_services", services,
        "build_ms", s ? s->build_ms : 0.0, "changed_at", ts, "full_pushes",
        (json_int_t)m->full_pushes, "eds_pushes", (json_int_t)m->eds_pushes, "pushed_proxies",
        (json_int_t)m->last_push_proxies, "connected", (json_int_t)wf_ads_connected(a),
        "config_errors", (json_int_t)(s ? s->n_errors : 0));
    wf_debug_reply_json(r, 200, o);
}

/* ---- registryz / endpointz --------------------------------------------------------------------
 */

static json_t *service_json(const wf_store *st, const wf_resource *res)
{
    const wf_service *sv = res->t.service;
    char host[512];
    snprintf(host, sizeof host, "%s.%s.svc.%s", res->name, res->ns, wf_store_domain_suffix(st));
    json_t *ports = json_array(), *sel = json_object();
    for (size_t i = 0; sv && i < sv->nports; i++) {
        const wf_service_port *p = &sv->ports[i];
        json_t *po =
            json_pack("{s:s, s:i, s:s, s:i}", "name", p->name ? p->name : "", "port", p->port,
                      "protocol", p->protocol ? p->protocol : "TCP", "targetPort", p->target_port);
        if (po && p->target_name) {
            json_object_set_new(po, "targetPort", json_string(p->target_name));
        }
        json_array_append_new(ports, po);
    }
    for (size_t i = 0; sv && i < sv->selector.n; i++) {
        json_object_set_new(sel, sv->selector.items[i].key,
                            json_string(sv->selector.items[i].value));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "hostname", host, "name", res->name,
                     "namespace", res->ns, "kind", "Service", "ports", ports, "selector", sel);
}

/* alloc: pilot/nds.h wf_nds_auto_allocate (istiod's model.Service shows the addresses it
 * auto-allocated as autoAllocatedIPv4Address / autoAllocatedIPv6Address). */
static json_t *se_json(const wf_resource *res, const char *host, const json_t *alloc)
{
    const wf_serviceentry *se = res->t.se;
    json_t *ports = json_array();
    for (size_t i = 0; se && i < se->nports; i++) {
        json_array_append_new(ports, json_pack("{s:s, s:i, s:s}", "name",
                                               se->ports[i].name ? se->ports[i].name : "", "port",
                                               se->ports[i].number, "protocol",
                                               se->ports[i].protocol ? se->ports[i].protocol : ""));
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s}", "hostname", host, "name", res->name,
                          "namespace", res->ns, "kind", "ServiceEntry", "ports", ports,
                          "resolution", se && se->resolution ? se->resolution : "");
    char key[512];
    snprintf(key, sizeof key, "%s/%s", res->ns ? res->ns : "", host);
    const json_t *a = json_object_get(alloc, key);
    if (o && a) {
        json_object_set(o, "autoAllocatedIPv4Address", json_object_get(a, "ipv4"));
        json_object_set(o, "autoAllocatedIPv6Address", json_object_get(a, "ipv6"));
    }
    return o;
}

static void view_registryz(wf_ads *a, wf_debug_reply *r)
{
    const wf_snapshot *s = wf_ads_snapshot(a);
    json_t *arr = json_array();
    size_t n = 0;
    const wf_resource *const *svcs = s ? wf_store_kind(s->store, WF_KIND_SERVICE, &n) : NULL;
    for (size_t i = 0; arr && i < n; i++) {
        json_array_append_new(arr, service_json(s->store, svcs[i]));
    }
    const wf_resource *const *ses = s ? wf_store_kind(s->store, WF_KIND_SERVICEENTRY, &n) : NULL;
    json_t *alloc = ses && n ? wf_nds_auto_allocate(s->store) : NULL;
    for (size_t i = 0; arr && ses && i < n; i++) {
        for (size_t h = 0; ses[i]->t.se && h < ses[i]->t.se->hosts.n; h++) {
            json_array_append_new(arr, se_json(ses[i], ses[i]->t.se->hosts.v[h], alloc));
        }
    }
    json_decref(alloc);
    wf_debug_reply_json(r, 200, arr);
}

static json_t *cla_endpoints(json_t *cla)
{
    json_t *out = json_array(), *loc, *lb;
    size_t i, j;
    json_array_foreach(json_object_get(cla, "endpoints"), i, loc)
    {
        json_array_foreach(json_object_get(loc, "lb_endpoints"), j, lb)
        {
            json_t *sa = json_object_get(
                json_object_get(json_object_get(json_object_get(lb, "endpoint"), "address"),
                                "socket_address"),
                "address");
            json_t *sp = json_object_get(
                json_object_get(json_object_get(json_object_get(lb, "endpoint"), "address"),
                                "socket_address"),
                "port_value");
            json_t *wl = json_object_get(
                json_object_get(json_object_get(json_object_get(lb, "metadata"), "filter_metadata"),
                                "istio"),
                "workload");
            json_array_append_new(out, json_pack("{s:O?, s:O?, s:O?, s:O?}", "address", sa, "port",
                                                 sp, "workload", wl, "health_status",
                                                 json_object_get(lb, "health_status")));
        }
    }
    return out;
}

static void view_endpointz(wf_ads *a, wf_debug_reply *r)
{
    const wf_snapshot *s = wf_ads_snapshot(a);
    json_t *arr = json_array();
    size_t n = 0;
    const wf_resource *const *svcs = s ? wf_store_kind(s->store, WF_KIND_SERVICE, &n) : NULL;
    for (size_t i = 0; arr && i < n; i++) {
        const wf_service *sv = svcs[i]->t.service;
        char host[512], cluster[600];
        snprintf(host, sizeof host, "%s.%s.svc.%s", svcs[i]->name, svcs[i]->ns,
                 wf_store_domain_suffix(s->store));
        for (size_t p = 0; sv && p < sv->nports; p++) {
            snprintf(cluster, sizeof cluster, "outbound|%d||%s", sv->ports[p].port, host);
            json_t *cla = wf_eds_load_assignment(s->store, cluster, NULL);
            json_array_append_new(arr,
                                  json_pack("{s:s, s:s, s:i, s:s, s:o}", "service", host,
                                            "namespace", svcs[i]->ns, "port", sv->ports[p].port,
                                            "cluster", cluster, "endpoints", cla_endpoints(cla)));
            json_decref(cla);
        }
    }
    wf_debug_reply_json(r, 200, arr);
}

/* ---- metrics ----------------------------------------------------------------------------------
 */

static const char *metric_type(wf_xds_type t)
{
    static const char *const n[] = {"cds", "lds", "rds", "eds", "sds", "ecds", "nds"};
    return (unsigned)t < WF_XDS_NTYPES ? n[t] : "unknown";
}

static void hist_lines(wf_strbuf *b, const char *name, const char *labels, const wf_ads_hist *h)
{
    uint64_t cum = 0;
    const char *sep = *labels ? "," : "";
    for (size_t i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        wf_strbuf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, h->bounds[i],
                         (unsigned long long)cum);
    }
    cum += h->counts[h->n_bounds];
    wf_strbuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                     (unsigned long long)cum);
    wf_strbuf_printf(b, "%s_sum%s%s%s %.9g\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
                     h->sum);
    wf_strbuf_printf(b, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels,
                     *labels ? "}" : "", (unsigned long long)h->count);
}

static void metrics_xds_gauge(wf_strbuf *b, wf_ads *a)
{
    wf_strbuf_puts(b, "# HELP pilot_xds Number of endpoints connected to this pilot using XDS.\n"
                      "# TYPE pilot_xds gauge\n");
    for (size_t i = 0; i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        const char *v = c->proxy.version ? c->proxy.version : "";
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const wf_ads_conn *o = wf_ads_conn_at(a, j);
            seen = o->connected && strcmp(o->proxy.version ? o->proxy.version : "", v) == 0;
        }
        if (!c->connected || seen) {
            continue;
        }
        size_t n = 0;
        for (size_t j = i; j < wf_ads_conn_count(a); j++) {
            const wf_ads_conn *o = wf_ads_conn_at(a, j);
            n += o->connected && strcmp(o->proxy.version ? o->proxy.version : "", v) == 0;
        }
        wf_strbuf_printf(b, "pilot_xds{version=\"%s\"} %zu\n", v, n);
    }
}

static void view_metrics(wf_ads *a, wf_debug_reply *r)
{
    const wf_ads_metrics *m = wf_ads_get_metrics(a);
    const wf_snapshot *s = wf_ads_snapshot(a);
    wf_strbuf *b = &r->body;
    char lab[32];
    wf_strbuf_puts(b, "# HELP pilot_xds_pushes Pilot build and send errors for lds, rds, cds and "
                      "eds.\n# TYPE pilot_xds_pushes counter\n");
    for (int i = 0; i < 4; i++) {
        wf_strbuf_printf(b, "pilot_xds_pushes{type=\"%s\"} %llu\n", metric_type(core_types[i]),
                         (unsigned long long)m->pushes[core_types[i]]);
    }
    /* istiod counts NDS pushes under the same metric (type "nds") */
    wf_strbuf_printf(b, "pilot_xds_pushes{type=\"nds\"} %llu\n",
                     (unsigned long long)m->pushes[WF_XDS_NDS]);
    wf_strbuf_puts(b, "# HELP pilot_xds_push_time Total time in seconds Pilot takes to push lds, "
                      "rds, cds and eds.\n# TYPE pilot_xds_push_time histogram\n");
    for (int i = 0; i < 4; i++) {
        snprintf(lab, sizeof lab, "type=\"%s\"", metric_type(core_types[i]));
        hist_lines(b, "pilot_xds_push_time", lab, &m->push_time[core_types[i]]);
    }
    wf_strbuf_puts(b, "# HELP pilot_proxy_convergence_time Delay in seconds between config change "
                      "and a proxy receiving all required configuration.\n"
                      "# TYPE pilot_proxy_convergence_time histogram\n");
    hist_lines(b, "pilot_proxy_convergence_time", "", &m->convergence);
    metrics_xds_gauge(b, a);
    wf_strbuf_puts(b, "# HELP pilot_total_xds_rejects Total number of XDS responses from pilot "
                      "rejected by proxy.\n# TYPE pilot_total_xds_rejects counter\n");
    for (int i = 0; i < 4; i++) {
        wf_strbuf_printf(b, "pilot_total_xds_rejects{type=\"%s\"} %llu\n",
                         metric_type(core_types[i]), (unsigned long long)m->rejects[core_types[i]]);
    }
    wf_strbuf_printf(b,
                     "# HELP pilot_sds_certificate_errors_total Total number of failures to "
                     "fetch SDS key and certificate.\n"
                     "# TYPE pilot_sds_certificate_errors_total counter\n"
                     "pilot_sds_certificate_errors_total %llu\n",
                     (unsigned long long)m->sds_cert_errors);
    size_t nsvc = 0;
    if (s) {
        wf_store_kind(s->store, WF_KIND_SERVICE, &nsvc);
    }
    wf_strbuf_printf(b,
                     "# HELP pilot_services Total services known to pilot.\n"
                     "# TYPE pilot_services gauge\npilot_services %zu\n",
                     nsvc);
    wf_strbuf_printf(b,
                     "# HELP weft_pilot_config_errors Config errors in the current snapshot "
                     "(the last good versions are served).\n"
                     "# TYPE weft_pilot_config_errors gauge\nweft_pilot_config_errors %zu\n",
                     s ? s->n_errors : 0);
    wf_strbuf_printf(b,
                     "# HELP weft_pilot_config_warnings Warnings in the current snapshot: "
                     "Istio fields weft does not implement (WFT0001/WFT0002) and schema "
                     "warnings (IST0133).\n"
                     "# TYPE weft_pilot_config_warnings gauge\n"
                     "weft_pilot_config_warnings %zu\n",
                     s ? s->n_warnings : 0);
    /* istiod's build gauge, which istioctl version reads for the control plane's version */
    wf_strbuf_printf(b,
                     "# HELP istio_build Istio component build info\n"
                     "# TYPE istio_build gauge\n"
                     "istio_build{component=\"pilot\",tag=\"%s\"} 1\n",
                     WEFT_VERSION);
    r->status = 200;
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- the routes and the /debug index ------------------------------------------------------- */

typedef void (*route_fn)(wf_pilot *p, const char *query, wf_debug_reply *r);

static void r_ready(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    bool ok = wf_pilot_ready(p);
    reply_text(r, ok ? 200 : 503, ok ? "ready\n" : "not ready\n");
}

static void r_metrics(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    view_metrics(wf_pilot_ads(p), r);
    wf_ca_server_metrics_text(wf_pilot_ca_server(wf_pilot_get_ca(p)), (int64_t)time(NULL),
                              &r->body);
    wf_webhook_metrics_text(wf_pilot_webhook(p), &r->body); /* the webhooks' counters */
    /* istiod's JwksResolver counters (pilot/pkg/model/jwks_resolver.go) */
    uint64_t ok = 0, failed = 0;
    if (wf_pilot_jwks(p))
        wf_jwks_resolver_counts(wf_pilot_jwks(p), &ok, &failed);
    wf_strbuf_printf(&r->body,
                     "# HELP pilot_jwks_resolver_network_fetch_success_total Total number of "
                     "successfully network fetch by pilot jwks resolver\n"
                     "# TYPE pilot_jwks_resolver_network_fetch_success_total counter\n"
                     "pilot_jwks_resolver_network_fetch_success_total %llu\n"
                     "# HELP pilot_jwks_resolver_network_fetch_fail_total Total number of failed "
                     "network fetch by pilot jwks resolver\n"
                     "# TYPE pilot_jwks_resolver_network_fetch_fail_total counter\n"
                     "pilot_jwks_resolver_network_fetch_fail_total %llu\n",
                     (unsigned long long)ok, (unsigned long long)failed);
    if (wf_pilot_kube_writer(p))
        wf_kube_writer_metrics_text(wf_pilot_kube_writer(p), &r->body);
}

/* The istio-ca-root-cert ConfigMaps (pilot_ca.h): all namespaces as a List, or ?namespace=. */
static void r_ca_root(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    char ns[256];
    const char *want = wf_debug_query_get(q, "namespace", ns, sizeof ns);
    const wf_snapshot *s = wf_ads_snapshot(wf_pilot_ads(p));
    if (want && !*want)
        want = NULL;
    json_t *j = s ? wf_pilot_ca_root_configmaps(wf_pilot_get_ca(p), s->store, want) : NULL;
    if (!j && (want || !s)) {
        reply_text(r, 404, want ? "namespace not found\n" : "no config yet\n");
        return;
    }
    wf_debug_reply_json(r, 200, j);
}

static void r_syncz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    view_syncz(wf_pilot_ads(p), q, r);
}

static void r_adsz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    view_adsz(wf_pilot_ads(p), q, r);
}

static void r_configz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    view_configz(p, r, false);
}

static void r_config_errors(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    view_configz(p, r, true);
}

static void r_registryz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    view_registryz(wf_pilot_ads(p), r);
}

static void r_endpointz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    view_endpointz(wf_pilot_ads(p), r);
}

static void r_config_dump(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    wf_debug_config_dump(wf_pilot_ads(p), q, r);
}

static void r_ndsz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    wf_debug_ndsz(wf_pilot_ads(p), q, r);
}

static void r_push_status(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    view_push_status(wf_pilot_ads(p), r);
}

static void r_mesh(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    wf_debug_mesh(wf_pilot_ads(p), r);
}

/* istiod's /debug/authorizationz (pilot/authz.h wf_authz_debug). */
static void r_authorizationz(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    const wf_snapshot *s = wf_ads_snapshot(wf_pilot_ads(p));
    if (!s) {
        reply_text(r, 503, "no config yet\n");
        return;
    }
    wf_debug_reply_json(r, 200, wf_authz_debug(s->store, s->mesh));
}

/* weft: the Kubernetes source's watches (pilot/source_kube.h): each kind's state, last
 * resourceVersion, counters and last error; the Pods served without their IP; under "writer"
 * what pilot writes back (pilot/kube_writer.h). The directory source has none: {"source":
 * "directory", "watches": []}. */
static void r_kubez(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)q;
    wf_config_source *src = wf_pilot_source(p);
    if (!src || !src->debug) { /* the directory source (--config-dir): no watches */
        wf_debug_reply_json(r, 200, json_pack("{s:s,s:[]}", "source", "directory", "watches"));
        return;
    }
    json_t *j = src->debug(src);
    wf_kube_writer *w = wf_pilot_kube_writer(p);
    if (j && w) /* what pilot writes back (kube_writer.h) */
        json_object_set_new(j, "writer", wf_kube_writer_debug(w));
    wf_debug_reply_json(r, 200, j);
}

/* ---- the web view's endpoints (issue 22; ui_*.h) ---- */

static void r_ui_validations(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    char ns[256];
    const char *want = wf_debug_query_get(q, "namespace", ns, sizeof ns);
    wf_ads *a = wf_pilot_ads(p);
    wf_debug_reply_json(r, 200,
                        wf_ui_validations_json(wf_pilot_ui_validations(p), wf_ads_snapshot(a),
                                               wf_ads_version(a), want));
}

static void r_ui_proxies(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    char ns[256];
    const char *want = wf_debug_query_get(q, "namespace", ns, sizeof ns);
    wf_debug_reply_json(
        r, 200, wf_ui_proxies_json(wf_pilot_ads(p), wf_pilot_ca_server(wf_pilot_get_ca(p)), want));
}

/* The web view's metrics endpoints (ui_graph.h). */
static void r_ui_graph(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    wf_ui_graph_serve(wf_pilot_ui_graph(p), q, r);
}

static void r_ui_scrape(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    wf_ui_scrape_serve(wf_pilot_ui_graph(p), q, r);
}

static void r_ui_failed(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    wf_ui_failed_serve(wf_pilot_ui_graph(p), q, r);
}

static void r_index(wf_pilot *p, const char *q, wf_debug_reply *r);
static void r_list(wf_pilot *p, const char *q, wf_debug_reply *r);

/* Every path the server answers, with istiod's one-line help where istiod has the handler
 * (pilot/pkg/xds/debug.go) and weft's own otherwise. /debug and /debug/list are built from
 * this table, so they list exactly what is served. Entries with a NULL help are aliases or
 * not under /debug: served, not listed. Sorted by path, as istiod sorts its index. */
static const struct {
    const char *path;
    route_fn fn;
    const char *help;
} routes[] = {
    {"/debug", r_index, NULL},
    {"/debug/", r_index, NULL},
    {"/debug/adsz", r_adsz, "Status and debug interface for ADS"},
    {"/debug/authorizationz", r_authorizationz, "Internal authorization policies"},
    {"/debug/config_dump", r_config_dump,
     "ConfigDump in the form of the Envoy admin config dump API for passed in proxyID"},
    {"/debug/config_errors", r_config_errors,
     "weft: the configuration errors found (file, line, column, field, message)"},
    {"/debug/configz", r_configz, "Debug support for config"},
    {"/debug/connections", r_adsz, "Info about the connected XDS clients"},
    {"/debug/endpointShardz", r_endpointz, "Info about the endpoint shards"},
    {"/debug/endpointz", r_endpointz, "Obsolete, use endpointShardz"},
    {"/debug/istio-ca-root-cert", r_ca_root,
     "weft: the istio-ca-root-cert ConfigMap (root-cert.pem) of every namespace "
     "(?namespace=NS: one)"},
    {"/debug/kubez", r_kubez,
     "weft: the Kubernetes API watches (state, last resourceVersion, errors) of the Kubernetes "
     "config source"},
    {"/debug/list", r_list, "List all supported debug commands in json"},
    {"/debug/mesh", r_mesh, "Active mesh config"},
    {"/debug/ndsz", r_ndsz, "Status and debug interface for NDS"},
    {"/debug/push_status", r_push_status, "Last PushContext Details"},
    {"/debug/registryz", r_registryz, "Debug support for registry"},
    {"/debug/syncz", r_syncz,
     "Synchronization status of all Envoys connected to this Pilot instance"},
    {"/metrics", r_metrics, NULL},
    {"/ready", r_ready, NULL},
    {"/stats/prometheus", r_metrics, NULL},
    /* the web view's JSON (issue 22): served, not listed (not under /debug) */
    {"/ui/api/proxies", r_ui_proxies, NULL},
    {"/ui/api/validations", r_ui_validations, NULL},
    {"/ui/api/failed", r_ui_failed, NULL},
    {"/ui/api/graph", r_ui_graph, NULL},
    {"/ui/api/scrape", r_ui_scrape, NULL},
};
#define NROUTES (sizeof routes / sizeof routes[0])

static bool listed(size_t i)
{
    return routes[i].help != NULL;
}

/* istiod's index page (an HTML table of name and help, one row per handler, sorted); with
 * ?format=json (weft) the same rows as [{"name", "href", "help"}]. */
static void r_index(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)p;
    char fmt[16];
    const char *f = wf_debug_query_get(q, "format", fmt, sizeof fmt);
    if (f && strcmp(f, "json") == 0) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < NROUTES; i++)
            if (listed(i) && json_array_append_new(
                                 arr, json_pack("{s:s,s:s,s:s}", "name", routes[i].path, "href",
                                                routes[i].path, "help", routes[i].help)) != 0) {
                json_decref(arr);
                arr = NULL;
            }
        wf_debug_reply_json(r, 200, arr);
        return;
    }
    r->status = 200;
    r->ctype = "text/html; charset=utf-8";
    wf_strbuf_puts(&r->body, "<!DOCTYPE html>\n<html>\n<head>\n<title>Pilot Debug Console</title>\n"
                             "</head>\n<body>\n<table>\n<thead>\n"
                             "<tr><th>Endpoint</th><th>Description</th></tr>\n</thead>\n"
                             "<tbody>\n");
    for (size_t i = 0; i < NROUTES; i++)
        if (listed(i)) /* paths and help are this file's constants: nothing to escape */
            wf_strbuf_printf(&r->body, "<tr><td><a href=\"%s\">%s</a></td><td>%s</td></tr>\n",
                             routes[i].path, routes[i].path, routes[i].help);
    wf_strbuf_puts(&r->body, "</tbody>\n</table>\n</body>\n</html>\n");
}

/* istiod's /debug/list: the handler names without "/debug/", "list" left out, sorted. */
static void r_list(wf_pilot *p, const char *q, wf_debug_reply *r)
{
    (void)p;
    (void)q;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < NROUTES; i++) {
        if (!listed(i) || strcmp(routes[i].path, "/debug/list") == 0)
            continue;
        if (json_array_append_new(arr, json_string(routes[i].path + strlen("/debug/"))) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    wf_debug_reply_json(r, 200, arr);
}

void wf_debug_route(wf_pilot *p, const char *path, const char *query, wf_debug_reply *r)
{
    for (size_t i = 0; i < NROUTES; i++)
        if (strcmp(path, routes[i].path) == 0) {
            routes[i].fn(p, query ? query : "", r);
            return;
        }
    if (strcmp(path, "/ui") == 0 || strncmp(path, "/ui/", 4) == 0) /* the view's files */
        wf_ui_static_serve(p ? wf_pilot_ui_dir(p) : NULL, p ? wf_pilot_ui_dir_origin(p) : NULL,
                           path, r);
    else
        reply_text(r, 404, "404 page not found\n");
}
