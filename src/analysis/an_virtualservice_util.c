/*
 * an_virtualservice_util.c - helpers of the virtualservice analyzers.
 *
 * Follows Istio's pkg/config/analysis/analyzers/virtualservice/util.go and
 * analyzers/util/{service_lookup,hosts}.go; see an_virtualservice_util.h.
 */
#include "analysis/an_virtualservice_util.h"

#include "analysis/util.h"

#include <stdio.h>
#include <string.h>

#define EXPORT_TO_ANNOTATION "networking.istio.io/exportTo"

/* ---- destinations ---- */

static void fill_dest(wf_vsu_dest *d, const char *rule, size_t i, size_t j,
                      const wf_destination *src)
{
    const wf_node *port = src && src->node ? wf_map_get(src->node, "port") : NULL;
    d->rule = rule;
    d->rule_index = i;
    d->dest_index = j;
    d->host = src && src->host ? src->host : "";
    d->subset = src && src->subset ? src->subset : "";
    d->has_port = port && port->type == WF_NODE_MAP;
    d->port = src ? src->port : 0;
}

static size_t add_route_dests(wf_vsu_dest *out, size_t n, const char *rule, const wf_route *routes,
                              size_t nroutes)
{
    for (size_t i = 0; i < nroutes; i++) {
        for (size_t j = 0; j < routes[i].ndest; j++)
            fill_dest(&out[n++], rule, i, j, &routes[i].dests[j].dest);
    }
    return n;
}

static size_t count_route_dests(const wf_route *routes, size_t nroutes)
{
    size_t n = 0;
    for (size_t i = 0; i < nroutes; i++)
        n += routes[i].ndest;
    return n;
}

const wf_vsu_dest *wf_vsu_route_dests(wf_analysis_ctx *ctx, const wf_resource *vs, size_t *n)
{
    const wf_virtualservice *v = vs->t.vs;
    *n = 0;
    if (!v)
        return NULL;
    size_t total = count_route_dests(v->tcp, v->ntcp) + count_route_dests(v->tls, v->ntls) +
                   count_route_dests(v->http, v->nhttp);
    if (total == 0)
        return NULL;
    wf_vsu_dest *out = wf_arena_alloc(wf_ctx_arena(ctx), total * sizeof(*out));
    if (!out)
        return NULL;
    size_t k = add_route_dests(out, 0, "tcp", v->tcp, v->ntcp);
    k = add_route_dests(out, k, "tls", v->tls, v->ntls);
    *n = add_route_dests(out, k, "http", v->http, v->nhttp);
    return out;
}

static bool has_mirror(const wf_route *r)
{
    const wf_node *m = r->node ? wf_map_get(r->node, "mirror") : NULL;
    return m && m->type == WF_NODE_MAP;
}

const wf_vsu_dest *wf_vsu_mirror_dests(wf_analysis_ctx *ctx, const wf_resource *vs, size_t *n)
{
    const wf_virtualservice *v = vs->t.vs;
    size_t total = 0;
    *n = 0;
    for (size_t i = 0; v && i < v->nhttp; i++)
        total += (has_mirror(&v->http[i]) ? 1 : 0) + v->http[i].nmirrors;
    if (total == 0)
        return NULL;
    wf_vsu_dest *out = wf_arena_alloc(wf_ctx_arena(ctx), total * sizeof(*out));
    if (!out)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < v->nhttp; i++) {
        const wf_route *r = &v->http[i];
        if (has_mirror(r))
            fill_dest(&out[k++], "http.mirror", i, 0, &r->mirror);
        for (size_t j = 0; j < r->nmirrors; j++)
            fill_dest(&out[k++], "http.mirrors", i, j, &r->mirrors[j]);
    }
    *n = k;
    return out;
}

const wf_node *wf_vsu_dest_host_node(const wf_resource *vs, const char *rule, size_t i, size_t j)
{
    char path[256];
    if (!vs->spec || !rule || !*rule || strchr(rule, '.'))
        return NULL;
    int len = snprintf(path, sizeof(path), "%s.%zu.route.%zu.destination.host", rule, i, j);
    if (len < 0 || (size_t)len >= sizeof(path))
        return NULL;
    return wf_node_path(vs->spec, path);
}

const wf_node *wf_vsu_mirror_host_node(const wf_resource *vs, size_t i)
{
    char path[64];
    if (!vs->spec)
        return NULL;
    snprintf(path, sizeof(path), "http.%zu.mirror.host", i);
    return wf_node_path(vs->spec, path);
}

/* ---- names and hosts ---- */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

const char *wf_vsu_resource_key(wf_analysis_ctx *ctx, const char *default_ns, const char *host)
{
    wf_arena *a = wf_ctx_arena(ctx);
    const char *domain = wf_store_domain_suffix(wf_ctx_store(ctx));
    char *suffix = wf_arena_printf(a, ".svc.%s", domain ? domain : "cluster.local");
    if (suffix && has_suffix(host, suffix)) {
        /* "^(.+)\.(.+)\.svc\.<domain>$": the name is greedy, so the namespace starts after
         * the last dot that leaves both parts non-empty. */
        size_t len = strlen(host) - strlen(suffix);
        for (size_t p = len >= 2 ? len - 2 : 0; p >= 1 && len >= 3; p--) {
            if (host[p] == '.')
                return wf_arena_printf(a, "%.*s/%.*s", (int)(len - p - 1), host + p + 1, (int)p,
                                       host);
        }
    }
    return wf_arena_printf(a, "%s/%s", default_ns ? default_ns : "", host);
}

void wf_vsu_short_or_full(wf_analysis_ctx *ctx, const char *default_ns, const char *ref,
                          const char **ns, const char **name)
{
    const char *slash = strchr(ref, '/');
    if (!slash) {
        *ns = default_ns ? default_ns : "";
        *name = ref;
        return;
    }
    const char *n = wf_arena_strndup(wf_ctx_arena(ctx), ref, (size_t)(slash - ref));
    *ns = n ? n : "";
    *name = slash + 1;
}

const char *wf_vsu_full_name_str(wf_analysis_ctx *ctx, const char *ns, const char *name)
{
    if (!ns || !*ns)
        return name;
    const char *s = wf_arena_printf(wf_ctx_arena(ctx), "%s/%s", ns, name);
    return s ? s : name;
}

bool wf_vsu_host_matches(const char *a, const char *b)
{
    bool aw = a[0] == '*', bw = b[0] == '*';
    if (aw && bw) {
        if (strlen(a) < strlen(b))
            return has_suffix(b + 1, a + 1);
        return has_suffix(a + 1, b + 1);
    }
    if (aw)
        return has_suffix(b, a + 1);
    if (bw)
        return has_suffix(a, b + 1);
    return strcmp(a, b) == 0;
}

/* ---- service hosts ---- */

static int put_scoped(wf_analysis_ctx *ctx, wf_strmap *m, const char *scope, const char *ns,
                      const char *host, const wf_resource *r)
{
    const char *key = wf_arena_printf(wf_ctx_arena(ctx), "%s/%s", scope, wf_fqdn(ctx, ns, host));
    void **slot = key ? wf_strmap_slot(m, key, true) : NULL;
    if (!slot)
        return -1;
    *slot = (void *)r;
    return 0;
}

static int add_service_entry(wf_analysis_ctx *ctx, wf_strmap *m, const wf_resource *r)
{
    const wf_serviceentry *se = r->t.se;
    bool all = false;
    for (size_t h = 0; h < se->hosts.n; h++) {
        const char *host = se->hosts.v[h] ? se->hosts.v[h] : "";
        if (se->export_to.n == 0 || all) {
            if (put_scoped(ctx, m, "*", r->ns, host, r) != 0)
                return -1;
            continue;
        }
        for (size_t e = 0; e < se->export_to.n && !all; e++) {
            const char *to = se->export_to.v[e] ? se->export_to.v[e] : "";
            if (strcmp(to, "*") == 0)
                all = true;
            else if (strcmp(to, ".") == 0)
                to = r->ns;
            if (put_scoped(ctx, m, to, r->ns, host, r) != 0)
                return -1;
        }
    }
    return 0;
}

static int add_service(wf_analysis_ctx *ctx, wf_strmap *m, const wf_resource *r)
{
    const char *anno = wf_kvs_get(&r->annotations, EXPORT_TO_ANNOTATION);
    if (!anno || !*anno)
        return put_scoped(ctx, m, "*", r->ns, r->name, r);
    for (const char *p = anno;; p++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *scope = wf_arena_strndup(wf_ctx_arena(ctx), p, len);
        if (!scope)
            return -1;
        if (strcmp(scope, ".") == 0)
            scope = r->ns;
        if (put_scoped(ctx, m, scope, r->ns, r->name, r) != 0)
            return -1;
        if (!comma)
            break;
        p = comma;
    }
    return 0;
}

wf_strmap *wf_vsu_service_hosts(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    wf_strmap *m = wf_strmap_new(wf_ctx_arena(ctx));
    size_t n;
    if (!m)
        return NULL;
    const wf_resource *const *ses = wf_store_kind(s, WF_KIND_SERVICEENTRY, &n);
    for (size_t i = 0; i < n; i++) {
        if (ses[i]->t.se && add_service_entry(ctx, m, ses[i]) != 0)
            return NULL;
    }
    const wf_resource *const *svcs = wf_store_kind(s, WF_KIND_SERVICE, &n);
    for (size_t i = 0; i < n; i++) {
        if (add_service(ctx, m, svcs[i]) != 0)
            return NULL;
    }
    return m;
}

static const wf_resource *lookup_scoped(wf_analysis_ctx *ctx, const wf_strmap *hosts,
                                        const char *scope, const char *fqdn)
{
    const char *key = wf_arena_printf(wf_ctx_arena(ctx), "%s/%s", scope, fqdn);
    void **slot = key ? wf_strmap_slot((wf_strmap *)hosts, key, false) : NULL;
    return slot ? *slot : NULL;
}

static const wf_resource *lookup_wildcard(const wf_strmap *hosts, const char *source_ns,
                                          const char *host)
{
    const char *h = host[0] == '*' ? host + 1 : host;
    for (size_t i = 0; i < wf_strmap_count(hosts); i++) {
        const char *key = wf_strmap_key(hosts, i);
        const char *slash = strchr(key, '/');
        if (!slash || slash[1] != '*')
            continue;
        size_t slen = (size_t)(slash - key);
        bool all = slen == 1 && key[0] == '*';
        bool same = strlen(source_ns) == slen && memcmp(key, source_ns, slen) == 0;
        if ((all || same) && has_suffix(h, slash + 2))
            return wf_strmap_value(hosts, i);
    }
    return NULL;
}

const wf_resource *wf_vsu_dest_service(wf_analysis_ctx *ctx, const wf_strmap *hosts,
                                       const char *source_ns, const wf_strs *export_to,
                                       const char *host)
{
    const char *ns = source_ns ? source_ns : "";
    const char *fqdn = wf_fqdn(ctx, ns, host);
    const wf_resource *r = lookup_scoped(ctx, hosts, "*", fqdn);
    if (r)
        return r;
    if (!export_to || export_to->n == 0) {
        r = lookup_scoped(ctx, hosts, ns, fqdn);
    } else {
        for (size_t i = 0; i < export_to->n && !r; i++) {
            const char *e = export_to->v[i] ? export_to->v[i] : "";
            r = lookup_scoped(ctx, hosts, strcmp(e, ".") == 0 ? ns : e, fqdn);
        }
    }
    return r ? r : lookup_wildcard(hosts, ns, host);
}

size_t wf_vsu_service_nports(const wf_resource *svc)
{
    if (svc->kind == WF_KIND_SERVICEENTRY)
        return svc->t.se ? svc->t.se->nports : 0;
    return svc->t.service ? svc->t.service->nports : 0;
}

int32_t wf_vsu_service_port(const wf_resource *svc, size_t i)
{
    if (svc->kind == WF_KIND_SERVICEENTRY)
        return svc->t.se->ports[i].number;
    return svc->t.service->ports[i].port;
}
