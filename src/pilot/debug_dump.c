/*
 * debug_dump.c - /debug/config_dump?proxyID=: what weft-pilot would send one proxy, as an
 * Envoy admin ConfigDump (istiod's debug config_dump, reference istioctl-troubleshooting.md
 * §5: Bootstrap (empty), Clusters, Endpoints (with include_eds), Listeners, ScopedRoutes
 * (empty), Routes, Secrets (empty)). Field names are Envoy's snake_case, as weft-proxy's
 * /config_dump prints them, so the two compare as istioctl proxy-status <pod> does
 * (dynamic_active_clusters[].cluster, dynamic_listeners[].active_state.listener,
 * dynamic_route_configs[].route_config).
 *
 * The proxy: the first connection whose id contains proxyID (istiod's substring match),
 * connected ones first; else, when proxyID is "<pod>.<namespace>" of a Pod in the store, the
 * proxy that Pod's sidecar would be (a dump exists before the proxy connects).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/timefmt.h"
#include "pilot/ads.h"
#include "pilot/debug.h"
#include "pilot/debug_internal.h"

#define ADMIN "type.googleapis.com/envoy.admin.v3."

static void text(wf_debug_reply *r, int status, const char *t)
{
    r->status = status;
    r->ctype = "text/plain; charset=utf-8";
    wf_strbuf_puts(&r->body, t);
}

static void stamp(int64_t ms, char *buf, size_t cap)
{
    wf_timestamp_s(ms > 0 ? ms / 1000 : (int64_t)time(NULL), buf, cap);
}

static const wf_ads_conn *find_conn(wf_ads *a, const char *id)
{
    const wf_ads_conn *retained = NULL;
    for (size_t i = 0; i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        if (strstr(c->id, id)) {
            if (c->connected) {
                return c;
            }
            retained = retained ? retained : c;
        }
    }
    return retained;
}

/* A proxy for a Pod "<pod>.<ns>" of the store. 0 or -1. */
static int pod_proxy(wf_ads *a, const char *id, wf_pilot_proxy *out)
{
    const wf_snapshot *s = wf_ads_snapshot(a);
    const char *dot = strrchr(id, '.');
    char pod[256], err[256];
    if (!s || !dot || dot == id || (size_t)(dot - id) >= sizeof pod) {
        return -1;
    }
    memcpy(pod, id, (size_t)(dot - id));
    pod[dot - id] = '\0';
    if (!wf_store_find(s->store, WF_KIND_POD, dot + 1, pod)) {
        return -1;
    }
    wf_xds_node node = {.id = (char *)id};
    return wf_ads_proxy_from_node(a, &node, out, err, sizeof err);
}

typedef struct dump_ctx {
    wf_ads *a;
    const wf_pilot_proxy *p;
    const wf_ads_conn *c; /* NULL for a Pod-made proxy */
} dump_ctx;

static const char *version_of(const dump_ctx *d, wf_xds_type t)
{
    const char *v = d->c ? d->c->types[t].w.version_acked : NULL;
    return v && *v ? v : wf_ads_version(d->a);
}

/* [{version_info, <key>: resource, last_updated}] for type t. */
static json_t *entries(const dump_ctx *d, wf_xds_type t, const char *key, bool stamped)
{
    char ts[40];
    json_t *res = wf_ads_generate(d->a, d->p, t, NULL), *out = json_array(), *v;
    size_t i;
    stamp(d->c ? d->c->types[t].sent_at_ms : 0, ts, sizeof ts);
    json_array_foreach(res, i, v)
    {
        json_t *e = json_pack("{s:s, s:O}", "version_info", version_of(d, t), key, v);
        if (e && stamped) {
            json_object_set_new(e, "last_updated", json_string(ts));
        }
        json_array_append_new(out, e);
    }
    json_decref(res);
    return out;
}

static json_t *listeners(const dump_ctx *d)
{
    char ts[40];
    json_t *res = wf_ads_generate(d->a, d->p, WF_XDS_LDS, NULL), *out = json_array(), *v;
    size_t i;
    stamp(d->c ? d->c->types[WF_XDS_LDS].sent_at_ms : 0, ts, sizeof ts);
    json_array_foreach(res, i, v)
    {
        json_t *name = json_object_get(v, "name");
        json_array_append_new(out,
                              json_pack("{s:O?, s:{s:s, s:O, s:s}}", "name", name, "active_state",
                                        "version_info", version_of(d, WF_XDS_LDS), "listener", v,
                                        "last_updated", ts));
    }
    json_decref(res);
    return out;
}

static json_t *dump(const dump_ctx *d, bool eds)
{
    json_t *configs = json_array();
    json_array_append_new(configs, json_pack("{s:s}", "@type", ADMIN "BootstrapConfigDump"));
    json_array_append_new(configs, json_pack("{s:s, s:s, s:o}", "@type", ADMIN "ClustersConfigDump",
                                             "version_info", version_of(d, WF_XDS_CDS),
                                             "dynamic_active_clusters",
                                             entries(d, WF_XDS_CDS, "cluster", true)));
    if (eds) {
        json_array_append_new(configs, json_pack("{s:s, s:o}", "@type", ADMIN "EndpointsConfigDump",
                                                 "dynamic_endpoint_configs",
                                                 entries(d, WF_XDS_EDS, "endpoint_config", false)));
    }
    json_array_append_new(
        configs, json_pack("{s:s, s:s, s:o}", "@type", ADMIN "ListenersConfigDump", "version_info",
                           version_of(d, WF_XDS_LDS), "dynamic_listeners", listeners(d)));
    json_array_append_new(configs, json_pack("{s:s}", "@type", ADMIN "ScopedRoutesConfigDump"));
    json_array_append_new(configs, json_pack("{s:s, s:o}", "@type", ADMIN "RoutesConfigDump",
                                             "dynamic_route_configs",
                                             entries(d, WF_XDS_RDS, "route_config", true)));
    json_array_append_new(configs, json_pack("{s:s}", "@type", ADMIN "SecretsConfigDump"));
    return json_pack("{s:o}", "configs", configs);
}

void wf_debug_config_dump(wf_ads *a, const char *query, wf_debug_reply *r)
{
    char id[512], tmp[16];
    if (!wf_debug_query_get(query, "proxyID", id, sizeof id) || !*id) {
        text(r, 400, "You must provide a proxyID in the query string\n");
        return;
    }
    const char *eds = wf_debug_query_get(query, "include_eds", tmp, sizeof tmp);
    dump_ctx d = {.a = a, .c = find_conn(a, id)};
    wf_pilot_proxy made;
    bool own = false;
    if (d.c) {
        d.p = &d.c->proxy;
    } else if (pod_proxy(a, id, &made) == 0) {
        d.p = &made;
        own = true;
    } else {
        text(r, 404,
             "Proxy not connected to this Pilot instance. It may be connected to another "
             "instance.\n");
        return;
    }
    json_t *j = dump(&d, eds && strcmp(eds, "false") != 0);
    char *txt = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    if (own) {
        wf_pilot_proxy_free(&made);
    }
    r->status = txt ? 200 : 500;
    r->ctype = "application/json";
    wf_strbuf_puts(&r->body, txt ? txt : "out of memory");
    wf_strbuf_putc(&r->body, '\n');
    free(txt);
}

/* istiod's ndsz (pilot/pkg/xds/debug.go): the NameTable NDS would send a connected proxy, as
 * the Resource {"resource": NameTable}; 400 when the proxy did not ask for DNS capture. */
void wf_debug_ndsz(wf_ads *a, const char *query, wf_debug_reply *r)
{
    char id[512];
    if (!wf_debug_query_get(query, "proxyID", id, sizeof id) || !*id) {
        text(r, 400, "You must provide a proxyID in the query string\n");
        return;
    }
    const wf_ads_conn *c = find_conn(a, id);
    if (!c) {
        text(r, 404,
             "Proxy not connected to this Pilot instance. It may be connected to another "
             "instance.\n");
        return;
    }
    if (!c->proxy.dns_capture) {
        text(r, 400, "DNS capture is not enabled in the proxy\n");
        return;
    }
    json_t *res = wf_ads_generate(a, &c->proxy, WF_XDS_NDS, NULL);
    json_t *nt = json_array_get(res, 0);
    if (!nt) {
        json_decref(res);
        text(r, res ? 200 : 500, res ? "" : "out of memory\n");
        return;
    }
    json_t *j = json_pack("{s:O}", "resource", nt);
    json_decref(res);
    char *txt = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    r->status = txt ? 200 : 500;
    r->ctype = "application/json";
    wf_strbuf_puts(&r->body, txt ? txt : "out of memory");
    wf_strbuf_putc(&r->body, '\n');
    free(txt);
}
