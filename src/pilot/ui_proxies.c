/*
 * ui_proxies.c - the web view's proxies. See ui_proxies.h.
 */
#include "pilot/ui_proxies.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/strmap.h"

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

/* How many distinct proxies (connected or retained) share an identity, and an identity and
 * the IP of their xDS stream's peer: keys "<identity>" and "<identity>|<ip>", counts as values. */
typedef struct {
    wf_arena a;
    wf_strmap *ids, *seen;
} id_counts;

static void identity_of(const wf_ads *a, const wf_ca_server *cas, const wf_pilot_proxy *p,
                        char *out, size_t cap)
{
    snprintf(out, cap, "spiffe://%s/ns/%s/sa/%s",
             cas ? wf_ca_server_trust_domain(cas) : "cluster.local", p->ns ? p->ns : "",
             service_account(a, p));
}

static int count_key(id_counts *k, const char *key)
{
    void **slot = wf_strmap_slot(k->ids, key, true);
    if (!slot)
        return -1;
    *slot = (void *)((uintptr_t)*slot + 1);
    return 0;
}

static size_t count_of(const id_counts *k, const char *key)
{
    void **slot = wf_strmap_slot(k->ids, key, false);
    return slot ? (size_t)(uintptr_t)*slot : 0;
}

/* The counts over a's proxies (a proxy listed twice, retained and reconnected, counts once).
 * 0, or -1 when out of memory. */
static int count_identities(const wf_ads *a, const wf_ca_server *cas, id_counts *k)
{
    wf_arena_init(&k->a);
    if (!(k->ids = wf_strmap_new(&k->a)) || !(k->seen = wf_strmap_new(&k->a)))
        return -1;
    for (size_t i = 0; i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        if (!c->has_proxy || !c->proxy.id)
            continue;
        void **slot = wf_strmap_slot(k->seen, c->proxy.id, true);
        if (!slot)
            return -1;
        if (*slot)
            continue;
        *slot = (void *)1;
        char id[600], key[700], ip[64];
        identity_of(a, cas, &c->proxy, id, sizeof id);
        snprintf(key, sizeof key, "%s|%s", id, address_ip(c->address, ip, sizeof ip));
        if (count_key(k, id) != 0 || count_key(k, key) != 0)
            return -1;
    }
    return 0;
}

/* The certificate the CA issued to c's identity, or null with a note when the record cannot be
 * told apart: more than one proxy of the identity asked from the record's caller IP (the local
 * mesh's pods all ask from 127.0.0.1 with one service account), or the record is not from c's
 * IP and more than one proxy has the identity. */
static int cert_set(json_t *o, const wf_ca_server *cas, const char *identity, const wf_ads_conn *c,
                    const id_counts *k)
{
    char ip[64], key[700];
    const char *want = c->proxy.ip ? c->proxy.ip : address_ip(c->address, ip, sizeof ip);
    const wf_ca_issued *e = cas ? wf_ca_server_issued(cas, identity, want) : NULL;
    if (!e)
        return json_object_set_new(o, "certificate", json_null());
    bool ip_match = e->ip[0] && want && strcmp(e->ip, want) == 0;
    snprintf(key, sizeof key, "%s|%s", identity, e->ip);
    size_t n = ip_match ? count_of(k, key) : count_of(k, identity);
    if (n > 1) {
        char note[1200];
        snprintf(note, sizeof note,
                 "%zu proxies share %s from %s: pilot cannot tell which certificate each holds; "
                 "weftctl proxy-config secret %s shows it",
                 n, identity, e->ip[0] ? e->ip : "an unknown address",
                 c->proxy.pod ? c->proxy.pod : "<pod>");
        return json_object_set_new(o, "certificate", json_null()) ||
               json_object_set_new(o, "certificate_note", json_string(note));
    }
    return json_object_set_new(o, "certificate",
                               json_pack("{s:s, s:I, s:I, s:I}", "serial", e->serial,
                                         "not_before_ms", (json_int_t)e->not_before_s * 1000,
                                         "not_after_ms", (json_int_t)e->not_after_s * 1000,
                                         "issued_ms", (json_int_t)e->issued_s * 1000));
}

static json_t *proxy_json(const wf_ads *a, const wf_ca_server *cas, const wf_ads_conn *c,
                          const id_counts *k)
{
    const wf_pilot_proxy *p = &c->proxy;
    char identity[600];
    identity_of(a, cas, p, identity, sizeof identity);
    char pid[512];
    snprintf(pid, sizeof pid, "%s.%s", p->pod ? p->pod : "", p->ns ? p->ns : "");
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:I, s:s, s:o, s:o}", "proxy_id",
        pid, "node_id", p->id, "connection_id", c->id ? c->id : "", "namespace", p->ns ? p->ns : "",
        "pod", p->pod ? p->pod : "", "workload", p->workload ? p->workload : (p->pod ? p->pod : ""),
        "type", p->kind == WF_PROXY_ROUTER ? "router" : "sidecar", "ip", p->ip ? p->ip : "",
        "address", c->address, "identity", identity, "connected", c->connected, "connected_at_ms",
        (json_int_t)c->connected_at_ms, "istio_version", p->version ? p->version : "", "sync",
        sync_json(c), "history", history_json(c));
    if (o && cert_set(o, cas, identity, c, k) != 0) {
        json_decref(o);
        return NULL;
    }
    if (o && !c->connected)
        json_object_set_new(o, "disconnected_at_ms", json_integer(c->disconnected_at_ms));
    return o;
}

json_t *wf_ui_proxies_json(const wf_ads *a, const wf_ca_server *cas, const char *ns)
{
    id_counts k = {0};
    json_t *arr = count_identities(a, cas, &k) == 0 ? json_array() : NULL;
    if (ns && !*ns)
        ns = NULL;
    for (size_t i = 0; arr && i < wf_ads_conn_count(a); i++) {
        const wf_ads_conn *c = wf_ads_conn_at(a, i);
        if (!c->has_proxy || (ns && (!c->proxy.ns || strcmp(c->proxy.ns, ns) != 0)))
            continue;
        if (json_array_append_new(arr, proxy_json(a, cas, c, &k)) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    wf_arena_destroy(&k.a);
    return arr ? json_pack("{s:o}", "proxies", arr) : NULL;
}
