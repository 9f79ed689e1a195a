/*
 * nds.c - Istio's NameTable and ServiceEntry address auto-allocation. See nds.h.
 */
#include "pilot/nds.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "pilot/serviceentry.h"
#include "xds/discovery.h"

#define MAX_IPS (255 * 255) /* 240.240.x.x without .0 and .255 (Istio's maxIPs) */
#define PRIME   65011u      /* Istio's secondary hash prime */

static bool is_ip(const char *s, bool *v6)
{
    unsigned char buf[16];
    if (!s)
        return false;
    if (inet_pton(AF_INET, s, buf) == 1) {
        *v6 = false;
        return true;
    }
    if (inet_pton(AF_INET6, s, buf) == 1) {
        *v6 = true;
        return true;
    }
    return false;
}

/* ---- auto-allocation ---- */

/* A ServiceEntry host Istio allocates for: no addresses, not a wildcard, resolution not NONE. */
static bool allocatable(const wf_resource *r, size_t h)
{
    const wf_serviceentry *se = r->t.se;
    const char *host = se->hosts.v[h];
    const char *res = se->resolution;
    return host && *host && host[0] != '*' && se->addresses.n == 0 && res && *res &&
           strcmp(res, "NONE") != 0;
}

static int allocate_slots(const wf_store *s, const wf_resource **slots, size_t *slot_host)
{
    size_t n = 0, j = 0;
    const wf_resource *const *ses = wf_store_kind(s, WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n; i++) {
        for (size_t h = 0; ses[i]->t.se && h < ses[i]->t.se->hosts.n; h++) {
            if (!allocatable(ses[i], h))
                continue;
            if (j++ >= MAX_IPS)
                return 0; /* Istio: "out of IPs to allocate for service entries" */
            uint32_t hv = wf_fnv32a(wf_fnv32a(wf_fnv32a(WF_FNV32_OFFSET, ses[i]->ns), "/"),
                                    ses[i]->t.se->hosts.v[h]);
            uint32_t slot = hv % MAX_IPS;
            if (slots[slot]) { /* double hashing, as Istio (uint32 arithmetic) */
                uint32_t second = PRIME - (hv % PRIME);
                for (uint32_t k = 1;; k++) {
                    slot = (hv + k * second) % (uint32_t)(MAX_IPS - 1);
                    if (!slots[slot])
                        break;
                }
            }
            slots[slot] = ses[i];
            slot_host[slot] = h;
        }
    }
    return 0;
}

static int set_addr(json_t *out, const wf_resource *r, size_t h, int x)
{
    int a = x / 255, b = x % 255;
    char key[512], v4[32], v6[48];
    snprintf(key, sizeof key, "%s/%s", r->ns ? r->ns : "", r->t.se->hosts.v[h]);
    if (json_object_get(out, key))
        return 0; /* Istio reuses the first address of a key */
    snprintf(v4, sizeof v4, "240.240.%d.%d", a, b);
    if (a == 0)
        snprintf(v6, sizeof v6, "2001:2::f0f0:%x", b);
    else
        snprintf(v6, sizeof v6, "2001:2::f0f0:%x%x", a, b);
    return json_object_set_new(out, key, json_pack("{s:s, s:s}", "ipv4", v4, "ipv6", v6));
}

json_t *wf_nds_auto_allocate(const wf_store *s)
{
    const wf_resource **slots = calloc(MAX_IPS, sizeof *slots);
    size_t *slot_host = calloc(MAX_IPS, sizeof *slot_host);
    json_t *out = json_object();
    int rc = slots && slot_host && out ? allocate_slots(s, slots, slot_host) : -1;
    int x = 0;
    for (size_t i = 0; rc == 0 && i < MAX_IPS; i++) {
        x++;
        if (!slots[i])
            continue;
        if (x % 255 == 0) /* never 240.240.i.0 */
            x++;
        rc = set_addr(out, slots[i], slot_host[i], x);
    }
    free(slots);
    free(slot_host);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ---- the name table ---- */

typedef struct ip_walk {
    json_t *ips;
    int rc;
} ip_walk;

static int add_ip(json_t *ips, const char *ip)
{
    bool v6;
    if (!is_ip(ip, &v6))
        return 0;
    for (size_t i = 0; i < json_array_size(ips); i++)
        if (strcmp(json_string_value(json_array_get(ips, i)), ip) == 0)
            return 0;
    return json_array_append_new(ips, json_string(ip));
}

static bool ep_cb(const wf_endpoint *ep, void *arg)
{
    ip_walk *w = arg;
    if (add_ip(w->ips, ep->address) != 0)
        w->rc = -1;
    return w->rc == 0;
}

/* Istio's Passthrough service: the addresses of its endpoints on its first port. */
static int endpoint_ips(const wf_store *s, const wf_svc *svc, json_t *ips)
{
    if (svc->nports == 0)
        return 0;
    ip_walk w = {.ips = ips};
    wf_svc_endpoints(s, svc, &svc->ports[0], NULL, ep_cb, &w);
    return w.rc;
}

static int se_ips(const wf_store *s, const wf_svc *svc, const wf_pilot_proxy *p, json_t *alloc,
                  json_t *ips)
{
    const wf_strs *addrs = wf_svc_addresses(svc);
    for (size_t i = 0; addrs && i < addrs->n; i++)
        if (add_ip(ips, addrs->v[i]) != 0)
            return -1;
    if (json_array_size(ips) > 0 || (addrs && addrs->n > 0))
        return 0;
    if (p->dns_auto_allocate && alloc) {
        char key[512];
        snprintf(key, sizeof key, "%s/%s", svc->ns ? svc->ns : "", svc->host);
        json_t *a = json_object_get(alloc, key);
        bool v6 = false;
        if (a && add_ip(ips, json_string_value(json_object_get(a, "ipv4"))) != 0)
            return -1;
        if (a && p->ip && is_ip(p->ip, &v6) && v6 &&
            add_ip(ips, json_string_value(json_object_get(a, "ipv6"))) != 0)
            return -1;
        if (a)
            return 0;
    }
    return svc->resolution == WF_SVC_NONE ? endpoint_ips(s, svc, ips) : 0;
}

static int put_entry(json_t *table, const wf_svc *svc, json_t *ips, bool kube)
{
    if (json_array_size(ips) == 0 || json_object_get(table, svc->host)) {
        json_decref(ips);
        return 0;
    }
    json_t *e = json_pack("{s:o, s:s}", "ips", ips, "registry", kube ? "Kubernetes" : "External");
    if (e && kube &&
        (json_object_set_new(e, "shortname", json_string(svc->name)) != 0 ||
         json_object_set_new(e, "namespace", json_string(svc->ns)) != 0)) {
        json_decref(e);
        return -1;
    }
    return e ? json_object_set_new(table, svc->host, e) : -1;
}

/* Headless Services (not services in serviceentry.h): Istio's Passthrough Kubernetes
 * services, answered with their endpoints' addresses. */
static int headless(const wf_store *s, const wf_pilot_proxy *p, const wf_scope *scope,
                    json_t *table)
{
    size_t n = 0;
    const wf_resource *const *svcs = wf_store_kind(s, WF_KIND_SERVICE, &n);
    const wf_svc_view view = {.proxy_ns = p->ns, .scope = scope};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const wf_service *k = svcs[i]->t.service;
        if (!k || !k->cluster_ip || strcmp(k->cluster_ip, "None") != 0 || !svcs[i]->name ||
            k->nports == 0)
            continue;
        wf_svc sv = {.res = svcs[i],
                     .name = svcs[i]->name,
                     .ns = svcs[i]->ns,
                     .resolution = WF_SVC_NONE,
                     .nports = k->nports,
                     .ports = k->ports};
        char host[512];
        snprintf(host, sizeof host, "%s.%s.svc.%s", svcs[i]->name, svcs[i]->ns,
                 wf_store_domain_suffix(s));
        sv.host = host;
        if (!wf_svc_visible(&sv, &view) || json_object_get(table, host))
            continue;
        json_t *ips = json_array();
        rc = ips ? endpoint_ips(s, &sv, ips) : -1;
        if (rc == 0)
            rc = put_entry(table, &sv, ips, true);
        else
            json_decref(ips);
    }
    return rc;
}

static int fill_table(const wf_store *s, const wf_pilot_proxy *p, const wf_scope *scope,
                      json_t *table)
{
    wf_svcs l = {0};
    const wf_svc_view view = {.proxy_ns = p->ns, .scope = scope};
    if (wf_svcs_collect(s, &view, &l) != 0)
        return -1;
    json_t *alloc = p->dns_auto_allocate ? wf_nds_auto_allocate(s) : NULL;
    int rc = p->dns_auto_allocate && !alloc ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        const wf_svc *svc = &l.v[i];
        json_t *ips = json_array();
        if (!ips) {
            rc = -1;
            break;
        }
        if (!svc->is_se)
            rc = svc->vip ? add_ip(ips, svc->vip) : 0;
        else
            rc = se_ips(s, svc, p, alloc, ips);
        if (rc == 0)
            rc = put_entry(table, svc, ips, !svc->is_se);
        else
            json_decref(ips);
    }
    json_decref(alloc);
    wf_svcs_free(&l);
    return rc == 0 ? headless(s, p, scope, table) : rc;
}

json_t *wf_nds_name_table(const wf_store *s, const wf_pilot_proxy *p, const wf_scope *scope)
{
    json_t *table = json_object();
    if (!s || !p || !table) {
        json_decref(table);
        return NULL;
    }
    if (p->kind == WF_PROXY_SIDECAR && fill_table(s, p, scope, table) != 0) {
        json_decref(table);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "@type", WF_XDS_TYPE_NAME_TABLE, "table", table);
}

json_t *wf_nds_generate(const wf_store *s, const wf_pilot_proxy *p, const wf_scope *scope)
{
    json_t *out = json_array();
    if (!out || !p || !p->dns_capture || p->kind != WF_PROXY_SIDECAR)
        return out;
    json_t *nt = wf_nds_name_table(s, p, scope);
    if (!nt || json_array_append_new(out, nt) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}
