/*
 * gateway_hosts.c - Gateway hosts against VirtualServices (gateway_hosts.h).
 */
#include "pilot/gateway_hosts.h"

#include <string.h>

bool wf_gw_vs_binds(const wf_resource *vs, const wf_resource *gw)
{
    const wf_strs *g = &vs->t.vs->gateways;
    for (size_t i = 0; i < g->n; i++) {
        const char *e = g->v[i], *slash = strchr(e, '/');
        const char *ns = slash ? e : vs->ns;
        size_t nl = slash ? (size_t)(slash - e) : strlen(vs->ns);
        const char *name = slash ? slash + 1 : e;
        if (strlen(gw->ns) == nl && !strncmp(ns, gw->ns, nl) && !strcmp(name, gw->name))
            return true;
    }
    return false;
}

bool wf_gw_host_subset(const char *a, const char *b)
{
    if (!strcmp(a, b) || !strcmp(b, "*"))
        return true;
    if (b[0] != '*' || !strcmp(a, "*"))
        return false;
    size_t al = strlen(a), sl = strlen(b + 1); /* b + 1 = ".example.com" */
    return al > sl && !strcmp(a + al - sl, b + 1);
}

const char *wf_gw_server_host(const char *h, const char *vs_ns, const char *gw_ns)
{
    const char *slash = strchr(h, '/');
    if (!slash)
        return h;
    size_t nl = (size_t)(slash - h);
    if (nl == 1 && h[0] == '*')
        return slash + 1;
    if (nl == 1 && h[0] == '.')
        return !strcmp(vs_ns, gw_ns) ? slash + 1 : NULL;
    return strlen(vs_ns) == nl && !strncmp(h, vs_ns, nl) ? slash + 1 : NULL;
}
