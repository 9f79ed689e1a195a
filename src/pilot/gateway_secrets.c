/*
 * gateway_secrets.c - credentialName Secrets of gateway TLS servers checked where the gateway
 * workload reads them. See gateway_secrets.h.
 */
#include "pilot/gateway_secrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/timefmt.h"
#include "analysis/an_gateway_util.h"
#include "core/base64.h"
#include "pilot/gateway_tls.h"

#define K8S_PREFIX "kubernetes://"

/* A Secret's value for key (stringData wins over data, as the API server merges them): the
 * non-empty scalar, *plain true when it is stringData's (not base64), or NULL. */
static const wf_node *secret_entry(const wf_resource *sec, const char *key, bool *plain)
{
    const wf_node *sd = wf_map_get(wf_map_get(sec->root, "stringData"), key);
    const wf_node *d = wf_map_get(wf_map_get(sec->root, "data"), key);
    const wf_node *v = sd && sd->type == WF_NODE_SCALAR ? sd : d;
    *plain = v == sd;
    return v && v->type == WF_NODE_SCALAR && v->len ? v : NULL;
}

/* The certificate of a credential Secret as Istio's kube.ExtractCertInfo takes it: the first
 * pair, cert/key then tls.crt/tls.key, with both values non-empty (an analyzer's isValidSecret
 * has the same order). The certificate decoded into a new buffer (*len bytes); NULL when no
 * pair is complete, the value does not decode, or out of memory (*oom). */
static unsigned char *secret_cert(const wf_resource *sec, size_t *len, bool *oom)
{
    static const char *const pairs[2][2] = {{"cert", "key"}, {"tls.crt", "tls.key"}};
    *len = 0;
    for (size_t i = 0; i < 2; i++) {
        bool plain, key_plain;
        const wf_node *v = secret_entry(sec, pairs[i][0], &plain);
        if (!v || !secret_entry(sec, pairs[i][1], &key_plain))
            continue;
        unsigned char *buf = malloc(v->len + 1);
        if (!buf) {
            *oom = true;
            return NULL;
        }
        if (plain) {
            memcpy(buf, v->u.str, v->len);
            *len = v->len;
        } else if (!wf_base64_decode(v->u.str, v->len, 0, buf, len)) {
            free(buf);
            return NULL;
        }
        return buf;
    }
    return NULL;
}

/* A namespace other than ns holding a Secret named name, or NULL. */
static const char *secret_elsewhere(const wf_store *s, const char *ns, const char *name)
{
    size_t n;
    const wf_resource *const *v = wf_store_kind(s, WF_KIND_SECRET, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i]->name, name) && strcmp(v[i]->ns, ns) != 0)
            return v[i]->ns;
    return NULL;
}

/* Checks one server's Secret in namespace ns (workload: a pod there). -1 OOM, 0 stop, 1 go on. */
static int check_one(const wf_store *s, wf_gwsec_problem *p, wf_gwsec_fn fn, void *ud)
{
    p->no_material = false;
    const wf_resource *sec = wf_store_find(s, WF_KIND_SECRET, p->ns, p->secret);
    if (!sec) {
        p->kind = WF_GWSEC_NOT_FOUND;
        p->elsewhere = secret_elsewhere(s, p->ns, p->secret);
        return fn(p, ud) ? 1 : 0;
    }
    size_t len;
    bool oom = false;
    unsigned char *cert = secret_cert(sec, &len, &oom);
    if (oom)
        return -1;
    if (!cert) { /* no complete pair: what Istio's secret controller cannot read */
        free(cert);
        p->kind = WF_GWSEC_INVALID;
        p->no_material = true;
        p->not_after_s = 0;
        return fn(p, ud) ? 1 : 0;
    }
    time_t na = 0;
    bool valid = wf_gw_cert_check(cert, len, (time_t)p->now_s, &na);
    free(cert);
    p->not_after_s = (int64_t)na;
    if (!valid)
        p->kind = WF_GWSEC_INVALID;
    else if (p->not_after_s - p->now_s < (int64_t)WF_GWSEC_EXPIRY_WARN_DAYS * 86400)
        p->kind = WF_GWSEC_EXPIRING;
    else
        return 1;
    return fn(p, ud) ? 1 : 0;
}

/* Was namespace ns already checked for this server (a pod of it came earlier)? */
static bool ns_seen(const wf_resource *const *pods, size_t upto, const wf_gateway *gw,
                    const char *ns)
{
    for (size_t i = 0; i < upto; i++)
        if (!strcmp(pods[i]->ns, ns) && wf_kvs_subset(&gw->selector, &pods[i]->labels))
            return true;
    return false;
}

static int check_server(const wf_store *s, const wf_resource *g, const wf_gateway_server *srv,
                        int64_t now_s, wf_gwsec_fn fn, void *ud)
{
    const wf_gateway *gw = g->t.gateway;
    const char *cn = srv->credential_name;
    if (!strncmp(cn, K8S_PREFIX, sizeof K8S_PREFIX - 1))
        cn += sizeof K8S_PREFIX - 1;
    const char *slash = strchr(cn, '/');
    char ns_buf[254];
    size_t np;
    const wf_resource *const *pods = wf_store_kind(s, WF_KIND_POD, &np);
    for (size_t i = 0; i < np; i++) {
        if (!wf_kvs_subset(&gw->selector, &pods[i]->labels) || ns_seen(pods, i, gw, pods[i]->ns))
            continue;
        wf_gwsec_problem p = {.gateway = g,
                              .server = srv,
                              .secret = cn,
                              .ns = pods[i]->ns,
                              .workload = pods[i]->name,
                              .now_s = now_s};
        if (slash) {
            snprintf(ns_buf, sizeof ns_buf, "%.*s", (int)(slash - cn), cn);
            p.ns = ns_buf;
            p.secret = slash + 1;
        }
        int rc = check_one(s, &p, fn, ud);
        if (rc <= 0)
            return rc;
        if (slash) /* one namespace named: checked once */
            break;
    }
    return 1;
}

int wf_gw_secret_problems(const wf_store *s, int64_t now_s, wf_gwsec_fn fn, void *ud)
{
    size_t ng;
    const wf_resource *const *gv = wf_store_kind(s, WF_KIND_GATEWAY, &ng);
    for (size_t g = 0; g < ng; g++) {
        const wf_gateway *gw = gv[g]->t.gateway;
        for (size_t i = 0; gw && gw->has_selector && i < gw->nservers; i++) {
            if (!wf_gw_tls_server(&gw->servers[i]) || !gw->servers[i].credential_name)
                continue;
            int rc = check_server(s, gv[g], &gw->servers[i], now_s, fn, ud);
            if (rc <= 0)
                return rc;
        }
    }
    return 0;
}

const char *wf_gwsec_message(const wf_gwsec_problem *p, char *buf, size_t cap)
{
    const wf_gateway_server *srv = p->server;
    char na[32], where[600] = "";
    int off = snprintf(buf, cap, "server %s (port %d): ", srv->port_name ? srv->port_name : "",
                       (int)srv->port);
    if (off < 0 || (size_t)off >= cap)
        return buf;
    char *b = buf + off;
    size_t left = cap - (size_t)off;
    switch (p->kind) {
    case WF_GWSEC_NOT_FOUND:
        if (p->elsewhere)
            snprintf(where, sizeof where,
                     "; a Secret %s exists in namespace %s, but a gateway reads only the Secrets "
                     "of its own namespace: create it in %s",
                     p->secret, p->elsewhere, p->ns);
        snprintf(b, left,
                 "credentialName secret \"%s\" not found in namespace %s (the namespace of the "
                 "gateway workload %s/%s, where Istio looks for it)%s; HTTPS for this server "
                 "fails its handshake (kubernetes://%s stays WARMING at the gateway)",
                 p->secret, p->ns, p->ns, p->workload, where, p->secret);
        break;
    case WF_GWSEC_INVALID:
        if (p->no_material)
            snprintf(b, left,
                     "credentialName secret %s/%s has no certificate and key Istio can read "
                     "(tls.crt and tls.key, or cert and key, absent or empty); HTTPS for this "
                     "server fails its handshake (kubernetes://%s stays WARMING at the gateway)",
                     p->ns, p->secret, p->secret);
        else if (p->not_after_s && p->not_after_s < p->now_s)
            snprintf(b, left,
                     "the certificate of credentialName secret %s/%s expired %lld days ago "
                     "(NotAfter %s)",
                     p->ns, p->secret, (long long)((p->now_s - p->not_after_s) / 86400),
                     wf_timestamp_s(p->not_after_s, na, sizeof na));
        else
            snprintf(b, left,
                     "the certificate of credentialName secret %s/%s is not valid (unparsable "
                     "or not yet valid)",
                     p->ns, p->secret);
        break;
    case WF_GWSEC_EXPIRING:
        snprintf(b, left,
                 "the certificate of credentialName secret %s/%s expires in %lld days (NotAfter "
                 "%s; weft warns %d days ahead)",
                 p->ns, p->secret, (long long)((p->not_after_s - p->now_s) / 86400),
                 wf_timestamp_s(p->not_after_s, na, sizeof na), WF_GWSEC_EXPIRY_WARN_DAYS);
        break;
    }
    return buf;
}
