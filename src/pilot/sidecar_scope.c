/*
 * sidecar_scope.c - which Sidecar applies to a proxy and the egress-host predicate every
 * sidecar generator uses (see sidecar_scope.h).
 */
#include "pilot/sidecar_scope.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_ROOT_NS "istio-system"

/* One egress import "ns/host". ns NULL = any namespace ("*"). */
typedef struct scope_import {
    char *ns;
    char *host;
} scope_import;

struct wf_scope {
    const wf_resource *sidecar;
    int registry_only; /* 1, 0, -1 unset */
    size_t n;
    scope_import *v;
};

/* ---------- which Sidecar ---------- */

static const wf_resource *pick_sidecar(const wf_store *s, const char *ns, const wf_kvs *labels,
                                       bool with_selector)
{
    static const wf_kvs none = {0};
    size_t n = 0;
    const wf_resource *const *all = wf_store_kind_ns(s, WF_KIND_SIDECAR, ns, &n);
    for (size_t i = 0; i < n; i++) {
        const wf_sidecar *sc = all[i]->t.sidecar;
        if (!sc || sc->has_workload_selector != with_selector)
            continue;
        if (!with_selector || (sc->workload_selector.n > 0 &&
                               wf_kvs_subset(&sc->workload_selector, labels ? labels : &none)))
            return all[i];
    }
    return NULL;
}

static const wf_resource *applicable_sidecar(const wf_store *s, const char *proxy_ns,
                                             const wf_kvs *labels, const char *root_ns)
{
    const wf_resource *r = pick_sidecar(s, proxy_ns, labels, true);
    if (!r)
        r = pick_sidecar(s, proxy_ns, labels, false);
    if (!r && strcmp(proxy_ns, root_ns) != 0)
        r = pick_sidecar(s, root_ns, labels, false);
    return r;
}

/* ---------- imports ---------- */

static int add_import(wf_scope *sc, const char *ns, size_t ns_len, const char *host)
{
    scope_import *im = &sc->v[sc->n];
    im->ns = NULL;
    if (!(ns_len == 1 && ns[0] == '*')) {
        im->ns = strndup(ns, ns_len);
        if (!im->ns)
            return -1;
    }
    im->host = strdup(host);
    if (!im->host) {
        free(im->ns);
        return -1;
    }
    sc->n++;
    return 0;
}

/* Parse "ns/host" into the next slot; entries that import nothing are dropped. */
static int parse_import(wf_scope *sc, const char *entry, const char *proxy_ns)
{
    const char *slash = entry ? strchr(entry, '/') : NULL;
    if (!slash || !slash[1])
        return 0;
    size_t ns_len = (size_t)(slash - entry);
    if (ns_len == 0 || (ns_len == 1 && entry[0] == '~'))
        return 0;
    if (ns_len == 1 && entry[0] == '.')
        return add_import(sc, proxy_ns, strlen(proxy_ns), slash + 1);
    return add_import(sc, entry, ns_len, slash + 1);
}

static size_t count_hosts(const wf_node *egress)
{
    size_t total = 0;
    for (size_t i = 0; i < wf_seq_len(egress); i++)
        total += wf_seq_len(wf_map_get(wf_seq_at(egress, i), "hosts"));
    return total;
}

static int load_imports(wf_scope *sc, const wf_node *egress, const char *proxy_ns)
{
    size_t total = count_hosts(egress);
    if (wf_seq_len(egress) == 0) /* Istio's default egress listener: */
        return (sc->v = calloc(1, sizeof *sc->v)) ? add_import(sc, "*", 1, "*") : -1;
    sc->v = calloc(total ? total : 1, sizeof *sc->v);
    if (!sc->v)
        return -1;
    for (size_t i = 0; i < wf_seq_len(egress); i++) {
        const wf_node *hosts = wf_map_get(wf_seq_at(egress, i), "hosts");
        for (size_t j = 0; j < wf_seq_len(hosts); j++)
            if (parse_import(sc, wf_node_str(wf_seq_at(hosts, j)), proxy_ns) != 0)
                return -1;
    }
    return 0;
}

static int outbound_mode(const wf_sidecar *sc)
{
    const char *mode = wf_map_str(sc->outbound_traffic_policy, "mode");
    if (!mode)
        return -1;
    if (strcmp(mode, "REGISTRY_ONLY") == 0)
        return 1;
    return strcmp(mode, "ALLOW_ANY") == 0 ? 0 : -1;
}

int wf_scope_build(const wf_store *s, const char *proxy_ns, const wf_kvs *labels,
                   const char *root_ns, wf_scope **out)
{
    if (!out)
        return -1;
    *out = NULL;
    if (!s || !proxy_ns || !*proxy_ns)
        return -1;
    const wf_resource *r =
        applicable_sidecar(s, proxy_ns, labels, root_ns ? root_ns : DEFAULT_ROOT_NS);
    if (!r)
        return 0;
    wf_scope *sc = calloc(1, sizeof *sc);
    if (!sc)
        return -1;
    sc->sidecar = r;
    sc->registry_only = outbound_mode(r->t.sidecar);
    if (load_imports(sc, r->t.sidecar->egress, proxy_ns) != 0) {
        wf_scope_free(sc);
        return -1;
    }
    *out = sc;
    return 0;
}

void wf_scope_free(wf_scope *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].ns);
        free(s->v[i].host);
    }
    free(s->v);
    free(s);
}

/* ---------- the predicate ---------- */

/* Istio's host.Name.Matches: does pattern p cover host h? ("*" all, "*.x" its subdomains and
 * any narrower wildcard, else equality). */
static bool covers(const char *p, const char *h)
{
    if (strcmp(p, "*") == 0 || strcmp(p, h) == 0)
        return true;
    if (p[0] != '*')
        return false;
    size_t pl = strlen(p + 1), hl = strlen(h);
    if (h[0] == '*') /* wildcard host: the pattern must cover its suffix */
        return hl - 1 >= pl && strcmp(h + hl - pl, p + 1) == 0;
    return hl > pl && strcmp(h + hl - pl, p + 1) == 0;
}

bool wf_scope_visible(const wf_scope *s, const char *ns, const char *host)
{
    if (!s)
        return true;
    if (!host)
        return false;
    for (size_t i = 0; i < s->n; i++) {
        const scope_import *im = &s->v[i];
        if (im->ns && (!ns || strcmp(im->ns, ns) != 0))
            continue;
        if (covers(im->host, host) || (host[0] == '*' && covers(host, im->host)))
            return true;
    }
    return false;
}

const wf_resource *wf_scope_sidecar(const wf_scope *s)
{
    return s ? s->sidecar : NULL;
}

int wf_scope_registry_only(const wf_scope *s)
{
    return s ? s->registry_only : -1;
}
