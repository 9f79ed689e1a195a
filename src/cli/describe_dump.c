/*
 * describe_dump.c - what `describe` reads from a pod's Envoy /config_dump (describe.h):
 * the DestinationRule and VirtualService names from filter_metadata.istio.config, and RBAC
 * policy names. Follows describe.go (getIstioDestinationRulePathForSvc,
 * getIstioVirtualServicePathForSvcFromRoute, routeDestinationMatchesSvc, getIstioRBACPolicies).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/describe.h"

#define T_CLUSTERS  "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"
#define T_ROUTES    "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"
#define T_LISTENERS "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
#define HCM_TYPE                                                                                   \
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."             \
    "HttpConnectionManager"
#define K8S_SUFFIX ".svc.cluster.local"

int dsc_names_add(dsc_names *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        const char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

bool dsc_names_has(const dsc_names *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

void dsc_names_free(dsc_names *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

int dsc_pods_add(dsc_pods *l, const wf_resource *pod)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        const wf_resource **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = pod;
    return 0;
}

void dsc_pods_free(dsc_pods *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

json_t *dsc_jget(const json_t *obj, const char *snake)
{
    json_t *v = json_object_get(obj, snake);
    if (v || !strchr(snake, '_'))
        return v;
    char camel[128];
    size_t j = 0;
    for (const char *p = snake; *p && j + 1 < sizeof camel; p++) {
        if (*p == '_' && p[1]) {
            camel[j++] = (char)toupper((unsigned char)*++p);
        } else {
            camel[j++] = *p;
        }
    }
    camel[j] = '\0';
    return json_object_get(obj, camel);
}

json_t *dsc_dump_section(json_t *dump, const char *type_url)
{
    json_t *configs = json_object_get(dump, "configs"), *found = NULL, *c;
    size_t i;
    json_array_foreach(configs, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "@type"));
        if (t && strcmp(t, type_url) == 0)
            found = c;
    }
    return found;
}

/* metadata.filter_metadata.istio.config as a string ("" when absent). */
static const char *istio_config(const json_t *metadata)
{
    json_t *istio = json_object_get(dsc_jget(metadata, "filter_metadata"), "istio");
    const char *s = json_string_value(json_object_get(istio, "config"));
    return s ? s : "";
}

/* Parses "/apis/networking(.istio.io)?/v1(alpha3)?/namespaces/<ns>/<kind>/<name>" found
 * anywhere in path (describe.go's unanchored regexp). */
static int parse_config_path(const char *path, const char *kind, char **name, char **ns)
{
    for (const char *p = strstr(path, "/apis/networking"); p;
         p = strstr(p + 1, "/apis/networking")) {
        const char *q = p + strlen("/apis/networking");
        if (strncmp(q, ".istio.io", 9) == 0)
            q += 9;
        if (strncmp(q, "/v1", 3) != 0)
            continue;
        q += 3;
        if (strncmp(q, "alpha3", 6) == 0)
            q += 6;
        if (strncmp(q, "/namespaces/", 12) != 0)
            continue;
        q += 12;
        size_t nsl = strcspn(q, "/");
        if (nsl == 0 || q[nsl] != '/')
            continue;
        const char *k = q + nsl + 1;
        size_t kl = strlen(kind);
        if (strncmp(k, kind, kl) != 0 || k[kl] != '/')
            continue;
        const char *nm = k + kl + 1;
        size_t nl = strcspn(nm, "/");
        if (nl == 0)
            continue;
        *ns = strndup(q, nsl);
        *name = strndup(nm, nl);
        if (!*ns || !*name) {
            free(*ns);
            free(*name);
            *ns = *name = NULL;
            return -1;
        }
        return 0;
    }
    return 1;
}

static int name_from_path(const char *path, const char *kind, const char *what, char **name,
                          char **ns, wf_strbuf *err)
{
    *name = *ns = NULL;
    if (!path || !*path)
        return 0;
    int rc = parse_config_path(path, kind, name, ns);
    if (rc == 1) {
        wf_strbuf_printf(err, "not a %s path: %s", what, path);
        return -1;
    }
    if (rc < 0)
        wf_strbuf_puts(err, "out of memory");
    return rc;
}

static void svc_host(const char *svc, const char *ns, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.%s" K8S_SUFFIX, svc, ns);
}

int dsc_dump_dr_name(json_t *dump, const char *svc, const char *ns, int port, char **name,
                     char **dns, wf_strbuf *err)
{
    *name = *dns = NULL;
    json_t *sec = dsc_dump_section(dump, T_CLUSTERS);
    if (!sec) {
        wf_strbuf_puts(err, "config dump has no configuration type " T_CLUSTERS);
        return -1;
    }
    char host[512], portpat[32];
    svc_host(svc, ns, host, sizeof host);
    snprintf(portpat, sizeof portpat, "|%d|", port);
    json_t *dac = dsc_jget(sec, "dynamic_active_clusters"), *e;
    size_t i;
    json_array_foreach(dac, i, e)
    {
        json_t *cl = json_object_get(e, "cluster");
        const char *cn = json_string_value(json_object_get(cl, "name"));
        if (!cn || !strstr(cn, host) || !strstr(cn, "outbound") || !strstr(cn, portpat))
            continue;
        json_t *md = json_object_get(cl, "metadata");
        if (md)
            return name_from_path(istio_config(md), "destination-rule", "DR", name, dns, err);
    }
    return 0;
}

/* "<a>.<b>.svc.cluster.local" at the end of s: a = svc, b = ns (dot-free labels). */
static bool host_is_svc(const char *s, size_t len, const char *svc, const char *ns)
{
    size_t sl = strlen(K8S_SUFFIX);
    if (len <= sl || strncmp(s + len - sl, K8S_SUFFIX, sl) != 0)
        return false;
    size_t rest = len - sl;
    const char *dot = s + rest;
    while (dot > s && dot[-1] != '.')
        dot--;
    dot = dot > s ? dot - 1 : NULL;
    if (!dot || dot == s + rest - 1)
        return false;
    const char *nsp = dot + 1;
    size_t nsl = (size_t)(s + rest - nsp);
    const char *start = dot;
    while (start > s && start[-1] != '.')
        start--;
    size_t svl = (size_t)(dot - start);
    return svl > 0 && strlen(ns) == nsl && strncmp(nsp, ns, nsl) == 0 && strlen(svc) == svl &&
           strncmp(start, svc, svl) == 0;
}

static const char *route_cluster(const json_t *route)
{
    json_t *ra = json_object_get(route, "route");
    const char *c = json_string_value(json_object_get(ra, "cluster"));
    if (c)
        return c;
    json_t *wc = json_object_get(dsc_jget(ra, "weighted_clusters"), "clusters");
    return json_string_value(json_object_get(json_array_get(wc, 0), "name"));
}

static bool route_matches_svc(const json_t *route, const json_t *vh, const char *svc,
                              const char *ns, int port)
{
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(vh, "domains"), i, d)
    {
        const char *s = json_string_value(d);
        if (s && host_is_svc(s, strlen(s), svc, ns))
            return true;
    }
    const char *cn = route_cluster(route);
    char pre[48];
    snprintf(pre, sizeof pre, "outbound|%d|", port);
    const char *p = cn ? strstr(cn, pre) : NULL;
    if (!p)
        return false;
    const char *bar = strchr(p + strlen(pre), '|');
    return bar && host_is_svc(bar + 1, strlen(bar + 1), svc, ns);
}

int dsc_dump_vs_name(json_t *dump, const char *svc, const char *ns, int port, char **name,
                     char **dns, wf_strbuf *err)
{
    *name = *dns = NULL;
    json_t *sec = dsc_dump_section(dump, T_ROUTES);
    if (!sec) {
        wf_strbuf_puts(err, "config dump has no configuration type " T_ROUTES);
        return -1;
    }
    char sport[16];
    snprintf(sport, sizeof sport, "%d", port);
    json_t *rc, *vh, *r;
    size_t i, j, k;
    json_array_foreach(dsc_jget(sec, "dynamic_route_configs"), i, rc)
    {
        json_t *cfg = dsc_jget(rc, "route_config");
        const char *rn = json_string_value(json_object_get(cfg, "name"));
        rn = rn ? rn : "";
        if (strcmp(rn, sport) != 0 && strncmp(rn, "http.", 5) != 0 && strncmp(rn, "https.", 6) != 0)
            continue;
        json_array_foreach(dsc_jget(cfg, "virtual_hosts"), j, vh)
        {
            json_array_foreach(json_object_get(vh, "routes"), k, r)
            {
                if (!route_matches_svc(r, vh, svc, ns, port))
                    continue;
                json_t *md = json_object_get(r, "metadata");
                if (!md) {
                    wf_strbuf_puts(err, "no istio config");
                    return -1;
                }
                return name_from_path(istio_config(md), "virtual-service", "VS", name, dns, err);
            }
        }
    }
    return 0;
}

/* The first filter of the listener's chains whose typed_config is an HCM. */
static json_t *first_hcm(const json_t *listener)
{
    json_t *fc, *f;
    size_t i, j;
    json_array_foreach(dsc_jget(listener, "filter_chains"), i, fc)
    {
        json_array_foreach(json_object_get(fc, "filters"), j, f)
        {
            json_t *tc = dsc_jget(f, "typed_config");
            const char *t = json_string_value(json_object_get(tc, "@type"));
            if (t && strcmp(t, HCM_TYPE) == 0)
                return tc;
        }
    }
    return NULL;
}

static json_t *inbound_hcm(json_t *dump, int port)
{
    json_t *sec = dsc_dump_section(dump, T_LISTENERS), *dl;
    size_t i;
    json_array_foreach(dsc_jget(sec, "dynamic_listeners"), i, dl)
    {
        json_t *l = json_object_get(dsc_jget(dl, "active_state"), "listener");
        if (!l)
            continue;
        const char *name = json_string_value(json_object_get(l, "name"));
        json_t *h;
        if (name && strcmp(name, "virtualInbound") == 0 && (h = first_hcm(l)) != NULL)
            return h;
        json_t *sa = dsc_jget(json_object_get(l, "address"), "socket_address");
        json_t *pv = dsc_jget(sa, "port_value");
        if (!sa || json_integer_value(pv) != port)
            continue;
        const char *addr = json_string_value(json_object_get(sa, "address"));
        if (addr && strcmp(addr, "0.0.0.0") == 0)
            continue;
        if ((h = first_hcm(l)) != NULL)
            return h;
    }
    return NULL;
}

int dsc_dump_rbac(json_t *dump, int port, dsc_names *out)
{
    json_t *hcm = inbound_hcm(dump, port), *f;
    size_t i;
    json_array_foreach(dsc_jget(hcm, "http_filters"), i, f)
    {
        const char *n = json_string_value(json_object_get(f, "name"));
        if (!n || strcmp(n, "envoy.filters.http.rbac") != 0)
            continue;
        json_t *pol =
            json_object_get(json_object_get(dsc_jget(f, "typed_config"), "rules"), "policies");
        const char *key;
        json_t *v;
        json_object_foreach(pol, key, v)
        {
            if (dsc_names_add(out, key))
                return -1;
        }
        return 0;
    }
    return 0;
}
