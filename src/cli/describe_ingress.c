/*
 * describe_ingress.c - the PeerAuthentication and ingress-gateway parts of `weftctl describe`
 * (describe.h), as describe.go prints them (describePeerAuthentication with
 * authn.ComposePeerAuthentication; printIngressInfo, printIngressService, getIngressIP).
 *
 * weft additions: one line on stderr (stdout stays istioctl's) under a STRICT or DISABLE
 * workload mode saying what it means for clients (security.md §4.3; the DISABLE one as
 * Istio's mtls_checker.go untags the endpoints), and the address a user can reach when the gateway
 * has neither a load balancer address nor a hostIP (weft's local mesh: no nodes, so pods carry no
 * hostIP; the node is this host). A port with a nodePort is then http://127.0.0.1:<nodePort> (the
 * local mesh's node-port forwarder, docs/local-mesh.md: 127.0.0.1:30000); one without is the
 * gateway pod's status.podIP and the port it listens on (targetPort), since the pod IP is reachable
 * from this host but the Service port is not. istioctl prints hostIP with the Service port.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/describe.h"
#include "pilot/authn.h"

/* ---- PeerAuthentication -------------------------------------------------------------------- */

/* describe.go printPeerAuthentication over authn.ComposePeerAuthentication (pilot/authn.h, the
 * composition weft-pilot uses for the inbound chains), then printConfigs of the matched ones. */
void dsc_print_peer_authn(const dsc_ctx *c, const char *ns, const wf_kvs *labels)
{
    wf_peer_authn pa;
    if (wf_peer_authn_compose(c->store, c->istio_ns, ns, labels, &pa) != 0) {
        fprintf(stderr, "Error: out of memory\n");
        return;
    }
    fprintf(c->out, "Effective PeerAuthentication:\n   Workload mTLS mode: %s\n",
            wf_mtls_mode_name(pa.mode));
    if (pa.nports) {
        fputs("   Port Level mTLS mode:\n", c->out);
        for (size_t i = 0; i < pa.nports; i++)
            fprintf(c->out, "      %u: %s\n", (unsigned)pa.ports[i].port,
                    wf_mtls_mode_name(pa.ports[i].mode));
    }
    if (pa.napplied) {
        fputs("Applied PeerAuthentication:\n   ", c->out);
        for (size_t i = 0; i < pa.napplied; i++)
            fprintf(c->out, "%s%s.%s", i ? ", " : "", pa.applied[i]->name, pa.applied[i]->ns);
        fputc('\n', c->out);
    }
    fflush(c->out); /* weft's line, on stderr so that stdout stays istioctl's */
    if (pa.mode == WF_MTLS_STRICT)
        fputs("weft: Workload mTLS mode STRICT: only mutual TLS is accepted; a client without a "
              "sidecar, or one whose DestinationRule sets tls DISABLE or SIMPLE, is closed (NR "
              "filter_chain_not_found)\n",
              stderr);
    else if (pa.mode == WF_MTLS_DISABLE)
        fputs("weft: Workload mTLS mode DISABLE: plaintext only; this workload's endpoints are "
              "not tagged for auto mTLS, so meshed clients send it plaintext\n",
              stderr);
    wf_peer_authn_free(&pa);
}

/* ---- ingress ----------------------------------------------------------------------------- */

typedef struct ingress {
    const wf_resource *svc;
    dsc_pods pods;
    char ip[64];
    bool node_local; /* no LB address, no hostIP: weft's local mesh (see the file comment) */
} ingress;

typedef struct ingress_list {
    size_t n, cap;
    ingress *v;
} ingress_list;

static int cmp_res(const void *a, const void *b)
{
    const wf_resource *x = *(const wf_resource *const *)a, *y = *(const wf_resource *const *)b;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->name, y->name);
}

static int cmp_ingress(const void *a, const void *b)
{
    return strcmp(((const ingress *)a)->ip, ((const ingress *)b)->ip);
}

/* Running pods labelled istio=ingressgateway, in (namespace, name) order as the API lists. */
static int gateway_pods(const dsc_ctx *c, dsc_pods *out)
{
    size_t n = 0;
    const wf_resource *const *v = wf_store_kind(c->store, WF_KIND_POD, &n);
    for (size_t i = 0; i < n; i++) {
        const char *l = wf_kvs_get(&v[i]->labels, "istio");
        const char *ph = v[i]->t.pod ? v[i]->t.pod->phase : NULL;
        if (!v[i]->synthetic && l && strcmp(l, "ingressgateway") == 0 && ph &&
            strcmp(ph, "Running") == 0 && dsc_pods_add(out, v[i]))
            return -1;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_res);
    return 0;
}

static void ingress_ip(ingress *g)
{
    const wf_node *lb = wf_node_path(g->svc->status, "loadBalancer.ingress");
    const char *ip = NULL;
    if (wf_seq_len(lb)) {
        ip = wf_map_str(wf_seq_at(lb, 0), "ip");
        ip = ip ? ip : "";
    } else if ((ip = wf_map_str(g->pods.v[0]->status, "hostIP")) == NULL) {
        ip = g->pods.v[0]->t.pod->pod_ip; /* weft: the local mesh has no hostIP */
        g->node_local = ip && *ip;
    }
    snprintf(g->ip, sizeof g->ip, "%s", ip && (*ip || wf_seq_len(lb)) ? ip : "unknown");
}

static int add_ingress(ingress_list *l, const wf_resource *svc, const dsc_pods *gw, const char *ns)
{
    ingress g = {.svc = svc};
    for (size_t i = 0; i < gw->n; i++)
        if (strcmp(gw->v[i]->ns, ns) == 0 &&
            wf_kvs_subset(&svc->t.service->selector, &gw->v[i]->labels) &&
            dsc_pods_add(&g.pods, gw->v[i]))
            return -1;
    if (!g.pods.n)
        return 0;
    ingress_ip(&g);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        ingress *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            dsc_pods_free(&g.pods);
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = g;
    return 0;
}

static int find_ingresses(const dsc_ctx *c, const dsc_pods *gw, ingress_list *out)
{
    for (size_t i = 0; i < gw->n; i++) {
        if (i && strcmp(gw->v[i]->ns, gw->v[i - 1]->ns) == 0)
            continue; /* one pass per namespace */
        size_t n = 0;
        const wf_resource *const *v = wf_store_kind_ns(c->store, WF_KIND_SERVICE, gw->v[i]->ns, &n);
        const wf_resource **sorted = n ? malloc(n * sizeof *sorted) : NULL;
        if (n && !sorted)
            return -1;
        if (n)
            memcpy(sorted, v, n * sizeof *sorted);
        if (n > 1)
            qsort(sorted, n, sizeof *sorted, cmp_res);
        for (size_t k = 0; k < n; k++)
            if (sorted[k]->t.service && add_ingress(out, sorted[k], gw, gw->v[i]->ns)) {
                free(sorted);
                return -1;
            }
        free(sorted);
    }
    return 0;
}

static void free_ingresses(ingress_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        dsc_pods_free(&l->v[i].pods);
    free(l->v);
}

static void print_ingress_service(const dsc_ctx *c, const ingress *g)
{
    const wf_service *s = g->svc->t.service;
    for (size_t i = 0; i < s->nports; i++) {
        const wf_service_port *p = &s->ports[i];
        if (strcmp(dsc_literal_protocol(g->svc, p->node), "TCP") != 0 || !p->name ||
            (strcmp(p->name, "http") != 0 && strcmp(p->name, "http2") != 0))
            continue;
        if (p->target_name) {
            bool found = false; /* FindPort by name against the first pod */
            const wf_pod_spec *ps = &g->pods.v[0]->t.pod->spec;
            for (size_t k = 0; k < ps->ncontainers && !found; k++)
                for (size_t j = 0; j < ps->containers[k].nports; j++)
                    found |= ps->containers[k].ports[j].name &&
                             strcmp(ps->containers[k].ports[j].name, p->target_name) == 0;
            if (!found)
                continue;
        }
        /* ConvertProtocol of "http"/"http2" is HTTP/HTTP2 (unless appProtocol says else) */
        const char *scheme = "http";
        if (p->app_protocol && strcasecmp(p->app_protocol, "http") != 0 &&
            strcasecmp(p->app_protocol, "http2") != 0 &&
            strcmp(p->app_protocol, "kubernetes.io/h2c") != 0 &&
            strcmp(p->app_protocol, "kubernetes.io/ws") != 0)
            scheme = "";
        const char *host = g->ip;
        int port = p->port;
        if (g->node_local && p->node_port > 0) {
            host = "127.0.0.1";
            port = p->node_port;
        } else if (g->node_local && !p->target_name && p->target_port > 0) {
            port = p->target_port;
        }
        fprintf(c->out, "Exposed on Ingress Gateway %s://%s", scheme, host);
        if (strcmp(scheme, "http") != 0 || port != 80)
            fprintf(c->out, ":%d", port);
        fputc('\n', c->out);
    }
}

/* What printIngressInfo remembers across gateway pods. */
typedef struct seen {
    dsc_names keys; /* "dr/ns/name", "vs/ns/name", "gw/ns/name" (heap strings) */
} seen;

static bool seen_test_add(seen *s, const char *kind, const char *ns, const char *name, bool add)
{
    char key[600];
    snprintf(key, sizeof key, "%s/%s/%s", kind, ns, name);
    if (dsc_names_has(&s->keys, key))
        return true;
    if (add) {
        char *k = strdup(key);
        if (k && dsc_names_add(&s->keys, k))
            free(k);
    }
    return false;
}

static void seen_free(seen *s)
{
    for (size_t i = 0; i < s->keys.n; i++)
        free((char *)s->keys.v[i]);
    dsc_names_free(&s->keys);
}

static const wf_resource *lookup_dr(const dsc_ctx *c, seen *s, json_t *dump, const wf_resource *svc,
                                    int port)
{
    wf_strbuf err = WF_STRBUF_INIT;
    char *name = NULL, *ns = NULL;
    const wf_resource *dr = NULL;
    if (dsc_dump_dr_name(dump, svc->name, svc->ns, port, &name, &ns, &err) == 0 && name) {
        dr = wf_store_find(c->store, WF_KIND_DESTINATIONRULE, ns, name);
        if (!seen_test_add(s, "dr", ns, name, true) && !dr)
            fprintf(c->out,
                    "WARNING: Proxy is stale; it references to non-existent destination "
                    "rule %s.%s\n",
                    name, ns);
    }
    free(name);
    free(ns);
    wf_strbuf_free(&err);
    return dr;
}

static void print_gateway_vs(const dsc_ctx *c, seen *s, const ingress_list *found,
                             const wf_resource *vs, const wf_resource *svc, const wf_resource *dr,
                             const dsc_pods *pods)
{
    for (size_t i = 0; i < vs->t.vs->gateways.n; i++) {
        const char *gname = vs->t.vs->gateways.v[i], *slash = strchr(gname, '/');
        if (!*gname || strcmp(gname, "mesh") == 0)
            continue;
        char gns[256];
        snprintf(gns, sizeof gns, "%.*s", slash ? (int)(slash - gname) : (int)strlen(vs->ns),
                 slash ? gname : vs->ns);
        gname = slash ? slash + 1 : gname;
        if (seen_test_add(s, "gw", gns, gname, false))
            continue;
        const wf_resource *gw = wf_store_find(c->store, WF_KIND_GATEWAY, gns, gname);
        if (!gw) {
            fprintf(c->out,
                    "WARNING: Proxy is stale; it references to non-existent gateway "
                    "%s/%s\n",
                    gns, gname);
            continue;
        }
        seen_test_add(s, "gw", gns, gname, true);
        if (!gw->t.gateway || !gw->t.gateway->has_selector || !gw->t.gateway->selector.n) {
            fprintf(c->out, "Ingress Gateway %s/%s be applied all workloads", gns, gname);
            continue;
        }
        bool any = false;
        for (size_t k = 0; k < found->n; k++) {
            bool m = false;
            for (size_t p = 0; p < found->v[k].pods.n && !m; p++)
                m = wf_kvs_subset(&gw->t.gateway->selector, &found->v[k].pods.v[p]->labels);
            if (!m)
                continue;
            if (!any)
                fputs("--------------------\n", c->out);
            any = true;
            print_ingress_service(c, &found->v[k]);
        }
        if (any)
            dsc_print_vs_block(c, DSC_L0, vs, svc, dr, pods);
    }
}

static void ingress_for_dump(const dsc_ctx *c, seen *s, const ingress_list *found, json_t *dump,
                             const wf_resource *const *svcs, size_t nsvcs, const dsc_pods *pods)
{
    for (size_t i = 0; i < nsvcs; i++) {
        const wf_service *sv = svcs[i]->t.service;
        for (size_t p = 0; p < sv->nports; p++) {
            int port = sv->ports[p].port;
            const wf_resource *dr = lookup_dr(c, s, dump, svcs[i], port);
            wf_strbuf err = WF_STRBUF_INIT;
            char *name = NULL, *ns = NULL;
            if (dsc_dump_vs_name(dump, svcs[i]->name, svcs[i]->ns, port, &name, &ns, &err) == 0 &&
                name) {
                const wf_resource *vs = wf_store_find(c->store, WF_KIND_VIRTUALSERVICE, ns, name);
                if (!seen_test_add(s, "vs", ns, name, true) && !vs)
                    fprintf(c->out,
                            "WARNING: Proxy is stale; it references to non-existent "
                            "virtual service %s.%s\n",
                            name, ns);
                if (vs && vs->t.vs)
                    print_gateway_vs(c, s, found, vs, svcs[i], dr, pods);
            }
            free(name);
            free(ns);
            wf_strbuf_free(&err);
        }
    }
}

int dsc_print_ingress(const dsc_ctx *c, const wf_resource *const *svcs, size_t nsvcs,
                      const dsc_pods *pods, wf_strbuf *err)
{
    dsc_pods gw = {0};
    ingress_list found = {0};
    seen s = {0};
    int rc = gateway_pods(c, &gw) || find_ingresses(c, &gw, &found) ? -1 : 0;
    if (rc) {
        wf_strbuf_puts(err, "out of memory");
    } else if (!gw.n) {
        fputs("Skipping Gateway information (no ingress gateway pods)\n", c->out);
    } else {
        if (!found.n)
            fputs("Skipping Gateway information (no ingress gateway service)\n", c->out);
        if (found.n > 1)
            qsort(found.v, found.n, sizeof *found.v, cmp_ingress);
        for (size_t i = 0; i < gw.n && rc == 0; i++) {
            wf_strbuf ferr = WF_STRBUF_INIT;
            json_t *dump = dsc_fetch_dump(c, gw.v[i], &ferr);
            if (!dump) {
                wf_strbuf_printf(err, "failed to execute command on ingress gateway sidecar: %s",
                                 wf_strbuf_cstr(&ferr));
                rc = -1;
            } else {
                ingress_for_dump(c, &s, &found, dump, svcs, nsvcs, pods);
                json_decref(dump);
            }
            wf_strbuf_free(&ferr);
        }
    }
    seen_free(&s);
    free_ingresses(&found);
    dsc_pods_free(&gw);
    return rc;
}
