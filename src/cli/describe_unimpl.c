/*
 * describe_unimpl.c - what `weftctl describe pod` adds to istioctl's output: the Istio fields
 * weft does not implement (model/unimplemented.h) in the config that applies to the pod, so
 * that an operator looking at one workload learns that its AuthorizationPolicy is not
 * enforced, or that its Service's tcp- port has no listener.
 *
 * "Applies to the pod" follows how Istio scopes each kind:
 *  - selector kinds (PeerAuthentication, AuthorizationPolicy, RequestAuthentication,
 *    Telemetry, WasmPlugin, ProxyConfig: spec.selector.matchLabels; EnvoyFilter, Sidecar:
 *    spec.workloadSelector.labels) in the pod's namespace or the root namespace, without a
 *    selector or with one the pod's labels match;
 *  - the Services that select the pod, and the DestinationRules and VirtualServices whose
 *    host is one of them (short name, name.ns, name.ns.svc or the FQDN);
 *  - Gateways whose spec.selector the pod's labels match (the gateway's own pods);
 *  - the workload controller whose selector matches the pod (its template's annotations);
 *  - kinds weft does not know in the pod's or the root namespace (a policy under a wrong API
 *    version is not enforced for it either).
 * The lines go to stderr, in analyze's format, so that stdout stays istioctl's.
 */
#include <stdio.h>
#include <string.h>

#include "cli/describe.h"
#include "model/unimplemented.h"

/* Every key of the selector map sel is a label of the pod with the same value. */
static bool node_selects(const wf_node *sel, const wf_kvs *labels)
{
    for (size_t i = 0; sel && sel->type == WF_NODE_MAP && i < sel->len; i++) {
        const char *want = wf_node_str(sel->u.entries[i].value);
        const char *have = wf_kvs_get(labels, sel->u.entries[i].key);
        if (!want || !have || strcmp(want, have) != 0)
            return false;
    }
    return true;
}

static const char *selector_path(wf_kind k)
{
    switch (k) {
    case WF_KIND_PEERAUTHENTICATION:
    case WF_KIND_AUTHORIZATIONPOLICY:
    case WF_KIND_REQUESTAUTHENTICATION:
    case WF_KIND_TELEMETRY:
    case WF_KIND_WASMPLUGIN:
    case WF_KIND_PROXYCONFIG:
        return "selector.matchLabels";
    case WF_KIND_ENVOYFILTER:
    case WF_KIND_SIDECAR:
        return "workloadSelector.labels";
    default:
        return NULL;
    }
}

/* host (as written in a DestinationRule or VirtualService of namespace ns) names svc. */
static bool host_is(const char *host, const char *ns, const wf_resource *svc, const char *suffix)
{
    char buf[512];
    if (strcmp(host, svc->name) == 0)
        return strcmp(ns, svc->ns) == 0;
    snprintf(buf, sizeof buf, "%s.%s", svc->name, svc->ns);
    if (strcmp(host, buf) == 0)
        return true;
    snprintf(buf, sizeof buf, "%s.%s.svc", svc->name, svc->ns);
    if (strcmp(host, buf) == 0)
        return true;
    snprintf(buf, sizeof buf, "%s.%s.svc.%s", svc->name, svc->ns, suffix);
    return strcmp(host, buf) == 0;
}

static bool names_a_service(const dsc_ctx *c, const wf_resource *r, const wf_resource *const *svcs,
                            size_t n)
{
    const wf_node *hosts = r->kind == WF_KIND_DESTINATIONRULE ? wf_map_get(r->spec, "host")
                                                              : wf_map_get(r->spec, "hosts");
    const char *suffix = wf_store_domain_suffix(c->store);
    size_t nh = hosts && hosts->type == WF_NODE_SEQ ? hosts->len : 1;
    for (size_t h = 0; h < nh; h++) {
        const char *host =
            wf_node_str(hosts && hosts->type == WF_NODE_SEQ ? hosts->u.items[h] : hosts);
        for (size_t i = 0; host && i < n; i++)
            if (host_is(host, r->ns, svcs[i], suffix))
                return true;
    }
    return false;
}

static bool applies(const dsc_ctx *c, const wf_resource *r, const wf_resource *pod,
                    const wf_resource *const *svcs, size_t n)
{
    const char *sel = selector_path(r->kind);
    if (sel)
        return (strcmp(r->ns, pod->ns) == 0 || strcmp(r->ns, c->istio_ns) == 0) &&
               node_selects(wf_node_path(r->spec, sel), &pod->labels);
    switch (r->kind) {
    case WF_KIND_SERVICE:
        for (size_t i = 0; i < n; i++)
            if (svcs[i] == r)
                return true;
        return false;
    case WF_KIND_DESTINATIONRULE:
    case WF_KIND_VIRTUALSERVICE:
        return names_a_service(c, r, svcs, n);
    case WF_KIND_GATEWAY: {
        const wf_node *s = wf_map_get(r->spec, "selector");
        return s && s->type == WF_NODE_MAP && s->len && node_selects(s, &pod->labels);
    }
    case WF_KIND_DEPLOYMENT:
    case WF_KIND_STATEFULSET:
    case WF_KIND_DAEMONSET:
    case WF_KIND_REPLICASET: { /* the pod's own workload: its template's annotations */
        const wf_node *s = wf_node_path(r->spec, "selector.matchLabels");
        return strcmp(r->ns, pod->ns) == 0 && s && s->type == WF_NODE_MAP && s->len &&
               node_selects(s, &pod->labels);
    }
    case WF_KIND_OTHER: /* an unknown Istio kind or version (a misspelled policy) nearby */
        return strcmp(r->ns, pod->ns) == 0 || strcmp(r->ns, c->istio_ns) == 0;
    default:
        return false;
    }
}

typedef struct print_arg {
    FILE *to;
    size_t n;
} print_arg;

static bool print_hit(const wf_unimpl_hit *h, void *arg)
{
    print_arg *p = arg;
    if (p->n++ == 0)
        fputs("Not implemented by weft in the config of this pod (accepted, no effect):\n", p->to);
    wf_strbuf m = WF_STRBUF_INIT;
    wf_unimpl_message(h, &m);
    fprintf(p->to, "   %s [%s] (%s %s/%s", h->entry->security ? "Error" : "Warning",
            wf_unimpl_code(h->entry), h->res->kind_name, h->res->ns, h->res->name);
    if (h->res->file && h->line)
        fprintf(p->to, " %s:%u", h->res->file, h->line);
    else if (h->res->file)
        fprintf(p->to, " %s", h->res->file);
    fprintf(p->to, ") %s\n", wf_strbuf_failed(&m) ? "(out of memory)" : wf_strbuf_cstr(&m));
    wf_strbuf_free(&m);
    return true;
}

size_t dsc_print_unimplemented(const dsc_ctx *c, const wf_resource *pod,
                               const wf_resource *const *svcs, size_t nsvcs, FILE *to)
{
    print_arg p = {to, 0};
    for (size_t i = 0; i < wf_store_count(c->store); i++) {
        const wf_resource *r = wf_store_at(c->store, i);
        if (!r->synthetic && applies(c, r, pod, svcs, nsvcs))
            wf_unimpl_scan(r, WF_UNIMPL_LOCAL_MESH, print_hit, &p);
    }
    return p.n;
}
