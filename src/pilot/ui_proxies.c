/*
 * ui_proxies.c - the web view's proxies. See ui_proxies.h.
 */
#include "pilot/ui_proxies.h"

#include <stdio.h>
#include <string.h>

/* proxy-status's columns. */
static const struct {
    const char *name;
    wf_xds_type t;
} sync_cols[] = {{"CDS", WF_XDS_CDS},
                 {"LDS", WF_XDS_LDS},
                 {"EDS", WF_XDS_EDS},
                 {"RDS", WF_XDS_RDS},
                 {"ECDS", WF_XDS_ECDS}};

static json_t *sync_json(const wf_ads_conn *c)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof sync_cols / sizeof sync_cols[0]; i++)
        if (json_object_set_new(o, sync_cols[i].name,
                                json_string(wf_ads_type_status(c, sync_cols[i].t))) != 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

static json_t *history_json(const wf_ads_conn *c)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < wf_ads_history_count(c); i++) {
        const wf_ads_event *e = wf_ads_history_at(c, i);
        if (json_array_append_new(arr, json_pack("{s:I, s:s, s:s}", "t_ms", (json_int_t)e->t_ms,
                                                 "event", wf_ads_event_name(e->kind), "detail",
                                                 e->detail ? e->detail : "")) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

/* The proxy's service account: the node's, else its Pod's, else "default". */
static const char *service_account(const wf_ads *a, const wf_pilot_proxy *p)
{
    if (p->service_account && *p->service_account)
        return p->service_account;
    const wf_snapshot *s = wf_ads_snapshot(a);
    const wf_resource *pod =
        s && p->pod && p->ns ? wf_store_find(s->store, WF_KIND_POD, p->ns, p->pod) : NULL;
    if (pod && pod->t.pod && pod->t.pod->spec.service_account && *pod->t.pod->spec.service_account)
        return pod->t.pod->spec.service_account;
    return "default";
}

/* The IP of "ip:port" / "[ip6]:port" into out. */
static const char *address_ip(const char *addr, char *out, size_t cap)
{
    const char *colon = strrchr(addr, ':');
    out[0] = '\0';
    if (!colon || strncmp(addr, "unix:", 5) == 0)
        return out;
    const char *b = addr[0] == '[' ? addr + 1 : addr;
    size_t n = (size_t)(colon - b) - (addr[0] == '[' && colon > b && colon[-1] == ']');
    snprintf(out, cap, "%.*s", (int)n, b);
    return out;
}

static json_t *cert_json(const wf_ca_server *cas, const char *identity, const wf_ads_conn *c)
{
    char ip[64];
    const char *want = c->proxy.ip ? c->proxy.ip : address_ip(c->address, ip, sizeof ip);
    const wf_ca_issued *e = cas ? wf_ca_server_issued(cas, identity, want) : NULL;
    if (!e)
        return json_null();
    return json_pack("{s:s, s:I, s:I, s:I}", "serial", e->serial, "not_before_ms",
                     (json_int_t)e->not_before_s * 1000, "not_after_ms",
                     (json_int_t)e->not_after_s * 1000, "issued_ms",
                     (json_int_t)e->issued_s * 1000);
}

static json_t *proxy_json(const wf_ads *a, const wf_ca_server *cas, const wf_ads_conn *c)
{
    const wf_pilot_proxy *p = &c->proxy;
    char identity[600];
    snprintf(identity, sizeof identity, "spiffe://%s/ns/%s/sa/%s",
             cas ? wf_ca_server_trust_domain(cas) : "cluster.local", p->ns ? p->ns : "",
             service_account(a, p));
    char pid[512];
    snprintf(pid, sizeof pid, "%s.%s", p->pod ? p->pod : "", p->ns ? p->ns : "");
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:I, s:s, s:o, s:o, s:o}",
        "proxy_id", pid, "node_id", p->id, "connection_id", c->id ? c->id : "", "namespace",
        p->ns ? p->ns : "", "pod", p->pod ? p->pod : "", "workload",
        p->workload ? p->workload : (p->pod ? p->pod : ""), "type",
        p->kind == WF_PROXY_ROUTER ? "router" : "sidecar", "ip", p->ip ? p->ip : "", "address",
        c->address, "identity", identity, "connected", c->connected, "connected_at_ms",
        (json_int_t)c->connected_at_ms, "istio_version", p->version ? p->version : "", "sync",
        sync_json(c), "certificate", cert_json(cas, identity, c), "history", history_json(c));
    if (o && !c->connected)
        json_object_set_new(o, "disconnected_at_ms", json_integer(c->disconnected_at_ms));
    return o;
}

json_t *wf_ui_proxies_json(const wf_ads *a, const wf_ca_server *cas, const char *ns)
{
    json_t *arr = json_array();
    if (ns && !*ns)
        ns = NULL;
    for (size_t i = 0; arr && i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        if (!c->has_proxy || (ns && (!c->proxy.ns || strcmp(c->proxy.ns, ns) != 0)))
            continue;
        if (json_array_append_new(arr, proxy_json(a, cas, c)) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr ? json_pack("{s:o}", "proxies", arr) : NULL;
}
