/*
 * gateway_tcp.c - TLS passthrough on a gateway: PASSTHROUGH chains from VirtualService tls
 * routes, AUTO_PASSTHROUGH chains per mesh service and subset (see gateway_tcp.h).
 */
#include "model/node_json.h"
#include "pilot/gateway_tcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pilot/gateway_hosts.h"
#include "pilot/cds.h"
#include "pilot/naming.h"
#include "pilot/rds_internal.h"
#include "pilot/serviceentry.h"
#include "pilot/tcp.h"

bool wf_gw_passthrough_server(const wf_gateway_server *srv)
{
    const char *p = srv->protocol ? srv->protocol : "";
    const char *mode = wf_map_str(srv->tls, "mode");
    return srv->port > 0 && srv->port <= 65535 &&
           (!strcasecmp(p, "TLS") || !strcasecmp(p, "HTTPS")) && mode &&
           (!strcmp(mode, "PASSTHROUGH") || !strcmp(mode, "AUTO_PASSTHROUGH"));
}

bool wf_gw_tcp_server(const wf_gateway_server *srv)
{
    static const char *const tcp[] = {"TCP", "MONGO", "REDIS", "MYSQL"};
    const char *p = srv->protocol ? srv->protocol : "";
    for (size_t i = 0; srv->port > 0 && srv->port <= 65535 && i < 4; i++)
        if (!strcasecmp(p, tcp[i]))
            return true;
    return false;
}

static bool has_name(const json_t *chains, const json_t *name)
{
    size_t j, k;
    json_t *c, *e;
    json_array_foreach(chains, j, c)
    {
        json_t *sn = json_object_get(json_object_get(c, "filter_chain_match"), "server_names");
        json_array_foreach(sn, k, e)
        {
            if (json_equal(e, name))
                return true;
        }
    }
    return false;
}

/* Is every name of names already a server name of a chain of chains? */
static bool duplicate_sni(const json_t *chains, const json_t *names)
{
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
    {
        if (!has_name(chains, n))
            return false;
    }
    return json_array_size(names) > 0;
}

/* Appends {"filter_chain_match": match, "filters": authz + filters} unless its server names are
 * duplicates. match and filters consumed. -1 on OOM. */
static int add_chain(const wf_gw_tcp_in *in, json_t *chains, json_t *match, json_t *filters)
{
    if (!match || !filters) {
        json_decref(match);
        json_decref(filters);
        return -1;
    }
    if (duplicate_sni(chains, json_object_get(match, "server_names"))) {
        json_decref(match);
        json_decref(filters);
        return 0;
    }
    json_t *all = in->authz ? json_deep_copy(in->authz) : json_array();
    if (!all || json_array_extend(all, filters) != 0) {
        json_decref(all);
        json_decref(filters);
        json_decref(match);
        return -1;
    }
    json_decref(filters);
    json_t *c = json_pack("{s:o,s:o}", "filter_chain_match", match, "filters", all);
    return c ? json_array_append_new(chains, c) : -1;
}

/* ---------- PASSTHROUGH ---------- */

static bool server_meets(const wf_gw_tcp_in *in, const char *ns, const char *host)
{
    for (size_t i = 0; i < in->srv->hosts.n; i++) {
        const char *sh = wf_gw_server_host(in->srv->hosts.v[i], ns, in->gw->ns);
        if (sh && (wf_gw_host_subset(host, sh) || wf_gw_host_subset(sh, host)))
            return true;
    }
    return false;
}

/* 1 when one of vs's hosts meets the server's, 0 not, -1 OOM. */
static int vs_meets(const wf_gw_tcp_in *in, const wf_resource *vs)
{
    for (size_t j = 0; j < vs->t.vs->hosts.n; j++) {
        char *h = rds_resolve_host(vs->t.vs->hosts.v[j], vs->ns, in->suffix);
        if (!h)
            return -1;
        bool ok = server_meets(in, vs->ns, h);
        free(h);
        if (ok)
            return 1;
    }
    return 0;
}

static bool match_applies(const wf_gw_tcp_in *in, const wf_node *m)
{
    int64_t port = 0;
    if (wf_node_int(wf_map_get(m, "port"), &port) && port != 0 && port != in->srv->port)
        return false;
    const wf_node *gws = wf_map_get(m, "gateways");
    bool named = wf_seq_len(gws) == 0;
    for (size_t i = 0; i < wf_seq_len(gws) && !named; i++) {
        const char *g = wf_node_str(wf_seq_at(gws, i));
        const char *slash = g ? strchr(g, '/') : NULL;
        named = g && (slash ? !strncmp(g, in->gw->ns, (size_t)(slash - g)) &&
                                  strlen(in->gw->ns) == (size_t)(slash - g) &&
                                  !strcmp(slash + 1, in->gw->name)
                            : !strcmp(g, in->gw->name));
    }
    const wf_node *sl = wf_map_get(m, "sourceLabels");
    for (size_t i = 0; named && sl && sl->type == WF_NODE_MAP && i < sl->len; i++) {
        const char *want = wf_node_str(sl->u.entries[i].value);
        const char *have =
            in->proxy_labels ? wf_kvs_get(in->proxy_labels, sl->u.entries[i].key) : NULL;
        named = want && have && !strcmp(want, have);
    }
    return named;
}

static int vs_chains(const wf_gw_tcp_in *in, const wf_resource *vs, json_t *chains)
{
    const wf_tcp_route_ctx c = {.s = in->s,
                                .proxy_ns = in->proxy_ns,
                                .suffix = in->suffix,
                                .root_ns = in->root_ns,
                                .port = in->srv->port,
                                .gateway = true};
    for (size_t i = 0; i < vs->t.vs->ntls; i++) {
        const wf_route *r = &vs->t.vs->tls[i];
        for (size_t j = 0; r->ndest > 0 && j < wf_seq_len(r->match); j++) {
            const wf_node *m = wf_seq_at(r->match, j);
            if (!match_applies(in, m))
                continue;
            json_t *sn = wf_node_json_strings(wf_map_get(m, "sniHosts"));
            if (sn && json_array_size(sn) == 0) { /* validation requires sniHosts */
                json_decref(sn);
                continue;
            }
            json_t *match = sn ? json_pack("{s:o}", "server_names", sn) : NULL;
            if (add_chain(in, chains, match, wf_tcp_route_filters(&c, vs, r)) != 0)
                return -1;
        }
    }
    return 0;
}

/* A TCP server: the first tcp route of a bound VirtualService whose match applies (or that has
 * none) is the server's one chain, without filter_chain_match. */
static int tcp_server_chain(const wf_gw_tcp_in *in, json_t *chains)
{
    const wf_tcp_route_ctx c = {.s = in->s,
                                .proxy_ns = in->proxy_ns,
                                .suffix = in->suffix,
                                .root_ns = in->root_ns,
                                .port = in->srv->port,
                                .gateway = true};
    size_t n = 0;
    const wf_resource *const *vss = wf_store_kind(in->s, WF_KIND_VIRTUALSERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *vs = vss[i];
        if (!vs->t.vs || vs->t.vs->ntcp == 0 || !rds_vs_visible(vs, in->proxy_ns) ||
            !wf_gw_vs_binds(vs, in->gw))
            continue;
        int meets = vs_meets(in, vs);
        if (meets < 0)
            return -1;
        for (size_t j = 0; meets && j < vs->t.vs->ntcp; j++) {
            const wf_route *r = &vs->t.vs->tcp[j];
            bool applies = wf_seq_len(r->match) == 0;
            for (size_t k = 0; !applies && k < wf_seq_len(r->match); k++)
                applies = match_applies(in, wf_seq_at(r->match, k));
            if (r->ndest == 0 || !applies)
                continue;
            json_t *f = wf_tcp_route_filters(&c, vs, r);
            json_t *all = f && in->authz ? json_deep_copy(in->authz) : f ? json_array() : NULL;
            int rc = all && json_array_extend(all, f) == 0 ? 0 : -1;
            json_decref(f);
            json_t *chain = rc == 0 ? json_pack("{s:o}", "filters", all) : NULL;
            if (!chain)
                json_decref(all);
            return chain ? json_array_append_new(chains, chain) : -1;
        }
    }
    return 0;
}

static int passthrough(const wf_gw_tcp_in *in, json_t *chains)
{
    size_t n = 0;
    const wf_resource *const *vss = wf_store_kind(in->s, WF_KIND_VIRTUALSERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_resource *vs = vss[i];
        if (!vs->t.vs || vs->t.vs->ntls == 0 || !rds_vs_visible(vs, in->proxy_ns) ||
            !wf_gw_vs_binds(vs, in->gw))
            continue;
        int meets = vs_meets(in, vs);
        if (meets < 0 || (meets && vs_chains(in, vs, chains) != 0))
            return -1;
    }
    return 0;
}

/* ---------- AUTO_PASSTHROUGH ---------- */

static int auto_chain(const wf_gw_tcp_in *in, const wf_svc *svc, int32_t port, const char *subset,
                      json_t *chains)
{
    char sni[1024];
    int k = snprintf(sni, sizeof sni, "outbound_.%d_.%s_.%s", (int)port, subset ? subset : "",
                     svc->host);
    if (k < 0 || (size_t)k >= sizeof sni)
        return 0; /* no such long host in a valid config */
    char *cluster = wf_cluster_name("outbound", port, subset, svc->host);
    json_t *tp = cluster ? wf_tcp_proxy_filter(NULL, cluster) : NULL;
    free(cluster);
    json_t *filters = tp ? json_pack("[o,o]", wf_tcp_stats_filter(true), tp) : NULL;
    json_t *match = json_pack("{s:[s],s:[s,s]}", "server_names", sni, "application_protocols",
                              "istio-peer-exchange", "istio");
    return add_chain(in, chains, match, filters);
}

static int auto_passthrough(const wf_gw_tcp_in *in, json_t *chains)
{
    const wf_svc_view v = {.proxy_ns = in->proxy_ns, .suffix = in->suffix};
    wf_svcs svcs;
    if (wf_svcs_collect(in->s, &v, &svcs) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < svcs.n; i++) {
        const wf_svc *svc = &svcs.v[i];
        if (!server_meets(in, svc->ns, svc->host))
            continue;
        const wf_resource *dr = wf_cds_find_destinationrule(in->s, svc->host, svc->ns, in->proxy_ns,
                                                            in->root_ns, in->suffix);
        for (size_t j = 0; rc == 0 && j < svc->nports; j++) {
            const wf_service_port *sp = &svc->ports[j];
            if (sp->port <= 0 || sp->port > 65535 || (sp->protocol && !strcmp(sp->protocol, "UDP")))
                continue;
            rc = auto_chain(in, svc, sp->port, NULL, chains);
            for (size_t k = 0; rc == 0 && dr && k < dr->t.dr->nsubsets; k++) {
                const char *sub = dr->t.dr->subsets[k].name;
                if (sub && *sub)
                    rc = auto_chain(in, svc, sp->port, sub, chains);
            }
        }
    }
    wf_svcs_free(&svcs);
    return rc;
}

int wf_gw_passthrough_chains(const wf_gw_tcp_in *in, json_t *chains)
{
    if (!in || !in->s || !in->gw || !in->srv || !in->suffix || !chains)
        return -1;
    if (wf_gw_tcp_server(in->srv))
        return tcp_server_chain(in, chains);
    const char *mode = wf_map_str(in->srv->tls, "mode");
    if (mode && !strcmp(mode, "AUTO_PASSTHROUGH"))
        return auto_passthrough(in, chains);
    return passthrough(in, chains);
}
