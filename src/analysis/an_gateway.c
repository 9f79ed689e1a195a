/*
 * an_gateway.c - Istio's gateway analyzers (istio/istio pkg/config/analysis/analyzers/gateway):
 *
 * - gateway.IngressGatewayPortAnalyzer (gateway.go): the pods a Gateway selects must be
 *   selected by a Service exposing each server port as a TCP target port (IST0162); a
 *   selector matching no pod is IST0101.
 * - gateway.SecretAnalyzer (secret.go): each tls.credentialName must name a Secret in the
 *   namespace of the selected workload (IST0101) holding a parsable, current certificate
 *   (IST0161).
 * - gateway.ConflictingGatewayAnalyzer (conflictinggateway.go): servers of different Gateways
 *   on the same workload and port must not share a host with the same bind (IST0145).
 * - gateway.CertificateAnalyzer (certificate.go): TLS servers of Gateways on the same
 *   workload must not share a certificate (IST0138).
 *
 * Iteration is in load order where Istio's is map order; selector matching and the
 * quirks of the upstream code (selector strings compared as substrings, the host table
 * that CheckDuplicates extends as it goes) are kept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/an_gateway_util.h"
#include "core/base64.h"
#include "analysis/analyzer.h"
#include "analysis/util.h"
#include "core/strbuf.h"
#include "core/strmap.h"

/* ---- shared helpers ---- */

static const wf_resource *const *gateways(wf_analysis_ctx *ctx, size_t *n)
{
    return wf_store_kind(wf_ctx_store(ctx), WF_KIND_GATEWAY, n);
}

static const wf_resource *const *pods(wf_analysis_ctx *ctx, size_t *n)
{
    return wf_store_kind(wf_ctx_store(ctx), WF_KIND_POD, n);
}

/* The node of util.ErrorLine(r, "{.spec.selector.<label>}") where label is the first key of
 * the selector string (util.ExtractLabelFromSelectorString); NULL when there is none. */
static const wf_node *selector_label_node(const wf_resource *r, const char *sel_str)
{
    const char *eq = strchr(sel_str, '=');
    const wf_node *sel = wf_map_get(r->spec, "selector");
    if (!eq || !sel || sel->type != WF_NODE_MAP)
        return NULL;
    size_t k = (size_t)(eq - sel_str);
    for (size_t i = sel->len; i-- > 0;) {
        const wf_map_entry *e = &sel->u.entries[i];
        if (strlen(e->key) == k && strncmp(e->key, sel_str, k) == 0)
            return e->value;
    }
    return NULL;
}

static void report_selector_not_found(wf_analysis_ctx *ctx, const wf_resource *r,
                                      const char *sel_str)
{
    WF_REPORT(ctx, WF_IST0101, r, selector_label_node(r, sel_str), "selector", sel_str);
}

/* The server's tls block when set (a nil ServerTLSSettings otherwise). */
static const wf_node *server_tls(const wf_gateway_server *srv)
{
    const wf_node *t = srv->tls ? srv->tls : wf_map_get(srv->node, "tls");
    return t && t->type == WF_NODE_MAP ? t : NULL;
}

static const char *map_str_or_empty(const wf_node *n, const char *key)
{
    const char *s = wf_map_str(n, key);
    return s ? s : "";
}

/* Grow a malloc'ed array to hold n+1 elements. */
static bool grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *nv = realloc(*v, ncap * elem);
    if (!nv)
        return false;
    *v = nv;
    *cap = ncap;
    return true;
}

/* ==== gateway.IngressGatewayPortAnalyzer ==== */

/* A growable pointer list (heap array; the struct itself may live in an arena). */
typedef struct wf_ptr_list {
    const void **v;
    size_t n, cap;
} wf_ptr_list;

/* Free the heap arrays of every wf_ptr_list value of a map. */
static void free_ptr_lists(wf_strmap *m)
{
    for (size_t i = 0; m && i < wf_strmap_count(m); i++) {
        wf_ptr_list *l = wf_strmap_value(m, i);
        if (l)
            free(l->v);
    }
}

typedef struct port_set {
    uint32_t *v;
    size_t n, cap;
} port_set;

static bool port_set_add(port_set *s, uint32_t p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == p)
            return true;
    if (!grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)))
        return false;
    s->v[s->n++] = p;
    return true;
}

static bool port_set_has(const port_set *s, uint32_t p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == p)
            return true;
    return false;
}

/* Go strconv.Atoi, 0 on error (as IntOrString.IntValue ignores it). */
static int64_t go_atoi(const char *s)
{
    if (!s || !*s)
        return 0;
    const char *p = s;
    bool neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (!*p)
        return 0;
    int64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - (*p - '0')) / 10)
            return 0;
        v = v * 10 + (*p - '0');
    }
    return neg ? -v : v;
}

/* intstr.IntOrString.IntValue() of a Service port's targetPort (0 when absent). */
static int64_t target_port_value(const wf_node *tp)
{
    int64_t v;
    if (!tp || tp->type != WF_NODE_SCALAR)
        return 0;
    if (!tp->quoted && wf_node_int(tp, &v))
        return (int32_t)v;
    return go_atoi(wf_node_str(tp));
}

/* Add the TCP ports of a Service (target port, else port) to set. */
static bool add_service_ports(const wf_resource *svc, port_set *set)
{
    const wf_node *ports = wf_map_get(svc->spec, "ports");
    for (size_t i = 0; i < wf_seq_len(ports); i++) {
        const wf_node *p = wf_seq_at(ports, i);
        const char *proto = wf_map_str(p, "protocol");
        if (!proto || strcmp(proto, "TCP") != 0)
            continue;
        int64_t port = 0;
        if (!wf_node_int(wf_map_get(p, "port"), &port))
            port = 0;
        int64_t tp = target_port_value(wf_map_get(p, "targetPort"));
        if (!port_set_add(set, (uint32_t)(tp != 0 ? tp : (int32_t)port)))
            return false;
    }
    return true;
}

/* Shared state of one IngressGatewayPortAnalyzer run: pods matched per selector and the
 * Service ports of each pod are computed once, on first use, from the Services of its
 * namespace only, so many Gateways over many Services stay linear. */
typedef struct port_run {
    wf_analysis_ctx *ctx;
    const wf_resource *const *pv;
    size_t np;
    port_set *sets; /* per pod */
    bool *have_set;
    wf_strmap *pods_by_sel; /* selector string -> wf_ptr_list of pod indices */
} port_run;

/* The ports of the Services in the pod's namespace that select it (computed once). */
static const port_set *pod_ports(port_run *pr, size_t i)
{
    if (pr->have_set[i])
        return &pr->sets[i];
    pr->have_set[i] = true;
    size_t ns;
    const wf_resource *const *sv =
        wf_store_kind_ns(wf_ctx_store(pr->ctx), WF_KIND_SERVICE, pr->pv[i]->ns, &ns);
    for (size_t j = 0; j < ns; j++) {
        const wf_resource *svc = sv[j];
        if (svc->t.service && wf_kvs_subset(&svc->t.service->selector, &pr->pv[i]->labels) &&
            !add_service_ports(svc, &pr->sets[i]))
            break; /* out of memory: ports missing, as good as we can do */
    }
    return &pr->sets[i];
}

/* Indices of the pods a Gateway selector matches (computed once per selector). */
static const wf_ptr_list *selected_pods(port_run *pr, const wf_kvs *sel, const char *sel_str)
{
    void **slot = wf_strmap_slot(pr->pods_by_sel, sel_str, true);
    if (!slot)
        return NULL;
    if (*slot)
        return *slot;
    wf_ptr_list *l = wf_arena_alloc(wf_ctx_arena(pr->ctx), sizeof(*l));
    if (!l)
        return NULL;
    for (size_t i = 0; i < pr->np; i++) {
        if (!wf_kvs_subset(sel, &pr->pv[i]->labels))
            continue;
        if (!grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)))
            return NULL;
        l->v[l->n++] = (const void *)(uintptr_t)i;
    }
    *slot = l;
    return l;
}

static void check_gateway_ports(port_run *pr, const wf_resource *r)
{
    wf_analysis_ctx *ctx = pr->ctx;
    const wf_gateway *gw = r->t.gateway;
    const char *sel = wf_selector_string(wf_ctx_arena(ctx), &gw->selector);
    const wf_ptr_list *matched = sel ? selected_pods(pr, &gw->selector, sel) : NULL;
    if (!matched)
        return;
    if (matched->n == 0) {
        report_selector_not_found(ctx, r, sel);
        return;
    }
    for (size_t s = 0; s < gw->nservers; s++) {
        const wf_gateway_server *srv = &gw->servers[s];
        const wf_node *port = wf_map_get(srv->node, "port");
        if (!port || port->type != WF_NODE_MAP)
            continue;
        uint32_t number = (uint32_t)srv->port;
        bool found = false;
        for (size_t i = 0; i < matched->n && !found; i++)
            found = port_set_has(pod_ports(pr, (uintptr_t)matched->v[i]), number);
        if (found)
            continue;
        const char *num = wf_arena_printf(wf_ctx_arena(ctx), "%u", number);
        if (num)
            WF_REPORT(ctx, WF_IST0162, r, selector_label_node(r, sel), num, sel);
    }
}

static void run_ingress_gateway_port(wf_analysis_ctx *ctx)
{
    size_t ng;
    const wf_resource *const *gv = gateways(ctx, &ng);
    port_run pr = {.ctx = ctx};
    pr.pv = pods(ctx, &pr.np);
    if (ng == 0)
        return;
    pr.sets = calloc(pr.np ? pr.np : 1, sizeof(*pr.sets));
    pr.have_set = calloc(pr.np ? pr.np : 1, sizeof(*pr.have_set));
    pr.pods_by_sel = wf_strmap_new(wf_ctx_arena(ctx));
    if (pr.sets && pr.have_set && pr.pods_by_sel)
        for (size_t g = 0; g < ng; g++)
            if (gv[g]->t.gateway)
                check_gateway_ports(&pr, gv[g]);
    for (size_t i = 0; pr.sets && i < pr.np; i++)
        free(pr.sets[i].v);
    free(pr.sets);
    free(pr.have_set);
    free_ptr_lists(pr.pods_by_sel);
}

const wf_analyzer wf_an_gateway_IngressGatewayPortAnalyzer = {
    .name = "gateway.IngressGatewayPortAnalyzer",
    .description = "Checks a gateway's ports against the gateway's Kubernetes service ports",
    .inputs = {WF_KIND_GATEWAY, WF_KIND_POD, WF_KIND_SERVICE, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0162, WF_MSG_COUNT},
    .default_on = true,
    .run = run_ingress_gateway_port,
};

/* ==== gateway.SecretAnalyzer ==== */

/* Namespace of the first pod the Gateway selects (getGatewayNamespace); "" when none. The
 * order of istioctl's pod lister is unspecified; weft takes a pod of the input before the
 * istio-ingressgateway-dummypod istioctl adds offline (local/defaults.go), so that a gateway
 * workload given in the files (`edge/ingress-...`) decides where its Secrets are looked for, not
 * the dummy in istio-system (operator report B030). */
static const char *gateway_namespace(wf_analysis_ctx *ctx, const wf_gateway *gw)
{
    size_t np;
    const wf_resource *const *pv = pods(ctx, &np);
    const char *dummy = "";
    for (size_t i = 0; i < np; i++)
        if (wf_kvs_subset(&gw->selector, &pv[i]->labels)) {
            if (strcmp(pv[i]->name, "istio-ingressgateway-dummypod") != 0 ||
                strcmp(pv[i]->ns, "istio-system") != 0)
                return pv[i]->ns;
            if (!dummy[0])
                dummy = pv[i]->ns;
        }
    return dummy;
}

/* Kubernetes decodes Secret data values as base64 strings; a Secret with a value that is
 * not one fails to decode and is not there for Istio. */
static bool secret_decodes(const wf_resource *secret)
{
    const wf_node *data = wf_map_get(secret->root, "data");
    if (!data || data->type == WF_NODE_NULL)
        return true;
    if (data->type != WF_NODE_MAP)
        return false;
    for (size_t i = 0; i < data->len; i++) {
        const wf_node *v = data->u.entries[i].value;
        if (v->type == WF_NODE_NULL)
            continue;
        if (!wf_node_is_string(v))
            return false;
        unsigned char *buf = malloc(v->len ? v->len : 1);
        size_t n;
        bool ok = buf && wf_base64_decode(v->u.str, v->len, 0, buf, &n);
        free(buf);
        if (!ok)
            return false;
    }
    return true;
}

/* Decoded data[key] (arena); NULL with *len 0 when absent or empty. */
static const unsigned char *secret_value(wf_analysis_ctx *ctx, const wf_resource *secret,
                                         const char *key, size_t *len)
{
    const wf_node *v = wf_map_get(wf_map_get(secret->root, "data"), key);
    *len = 0;
    if (!v || v->type != WF_NODE_SCALAR)
        return NULL;
    unsigned char *buf = wf_arena_alloc(wf_ctx_arena(ctx), v->len ? v->len : 1);
    if (!buf || !wf_base64_decode(v->u.str, v->len, 0, buf, len))
        *len = 0;
    return *len ? buf : NULL;
}

/* isValidSecret: kube.ExtractCertInfo (cert/key, else tls.crt/tls.key, both non-empty) and
 * xds.ValidateCertificate of the certificate chain. */
static bool secret_valid(wf_analysis_ctx *ctx, const wf_resource *secret)
{
    static const char *const pairs[2][2] = {{"cert", "key"}, {"tls.crt", "tls.key"}};
    for (size_t i = 0; i < 2; i++) {
        size_t cert_len, key_len;
        const unsigned char *cert = secret_value(ctx, secret, pairs[i][0], &cert_len);
        secret_value(ctx, secret, pairs[i][1], &key_len);
        if (cert_len > 0 && key_len > 0)
            return wf_gw_cert_valid(cert, cert_len, time(NULL));
    }
    return false;
}

/* resource.NewShortOrFullName(gwNs, cn) then Find(Secret). */
static const wf_resource *find_credential(wf_analysis_ctx *ctx, const char *gw_ns, const char *cn)
{
    const char *slash = strchr(cn, '/');
    const char *ns = gw_ns, *name = cn;
    if (slash) {
        ns = wf_arena_strndup(wf_ctx_arena(ctx), cn, (size_t)(slash - cn));
        name = slash + 1;
        if (!ns)
            return NULL;
    }
    const wf_resource *s = wf_store_find(wf_ctx_store(ctx), WF_KIND_SECRET, ns, name);
    return s && secret_decodes(s) ? s : NULL;
}

static void check_gateway_secrets(wf_analysis_ctx *ctx, const wf_resource *r)
{
    const wf_gateway *gw = r->t.gateway;
    const char *gw_ns = gateway_namespace(ctx, gw);
    if (!gw_ns[0]) {
        const char *sel = wf_selector_string(wf_ctx_arena(ctx), &gw->selector);
        if (sel)
            report_selector_not_found(ctx, r, sel);
        return;
    }
    for (size_t i = 0; i < gw->nservers; i++) {
        const wf_node *tls = server_tls(&gw->servers[i]);
        const char *cn = map_str_or_empty(tls, "credentialName");
        if (!cn[0])
            continue;
        const wf_node *at = wf_map_get(tls, "credentialName");
        const wf_resource *secret = find_credential(ctx, gw_ns, cn);
        if (!secret)
            WF_REPORT(ctx, WF_IST0101, r, at, "credentialName", cn);
        else if (!secret_valid(ctx, secret))
            WF_REPORT(ctx, WF_IST0161, r, at, r->name, gw_ns);
    }
}

static void run_secret(wf_analysis_ctx *ctx)
{
    size_t ng;
    const wf_resource *const *gv = gateways(ctx, &ng);
    for (size_t g = 0; g < ng; g++)
        if (gv[g]->t.gateway)
            check_gateway_secrets(ctx, gv[g]);
}

const wf_analyzer wf_an_gateway_SecretAnalyzer = {
    .name = "gateway.SecretAnalyzer",
    .description = "Checks a gateway's referenced secrets for correctness",
    .inputs = {WF_KIND_GATEWAY, WF_KIND_POD, WF_KIND_SECRET, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0161, WF_MSG_COUNT},
    .default_on = true,
    .run = run_secret,
};

/* ==== gateway.ConflictingGatewayAnalyzer ==== */

typedef struct host_bind {
    const char *host, *bind;
} host_bind;

/* The hosts (with bind) of one Gateway's last server on a selector~port key. */
typedef struct gw_hosts {
    const char *gw; /* FullName.String() */
    host_bind *v;
    size_t n, cap;
} gw_hosts;

typedef struct gw_key {
    const char *key, *sel, *port; /* sel/port as parseFromGatewayMapKey splits key */
    gw_hosts *g;
    size_t n, cap;
} gw_key;

typedef struct gw_map {
    gw_key *k;
    size_t n, cap;
    wf_strmap *key_index;       /* key -> position in k + 1 */
    wf_strmap *repeated;        /* "port\x1fhost" -> non-NULL when it is on more than one server */
    const char **names, **sels; /* per Gateway (store order); NULL entries are skipped */
    bool failed;
} gw_map;

static bool hosts_set(gw_hosts *h, const char *host, const char *bind)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->v[i].host, host) == 0) {
            h->v[i].bind = bind;
            return true;
        }
    }
    if (!grow((void **)&h->v, &h->cap, h->n, sizeof(*h->v)))
        return false;
    h->v[h->n++] = (host_bind){host, bind};
    return true;
}

/* parseFromGatewayMapKey: exactly one "~" splits selector and port, else both "". */
static bool split_key(wf_analysis_ctx *ctx, gw_key *k)
{
    const char *t = strchr(k->key, '~');
    if (!t || strchr(t + 1, '~')) {
        k->sel = k->port = "";
        return true;
    }
    k->sel = wf_arena_strndup(wf_ctx_arena(ctx), k->key, (size_t)(t - k->key));
    k->port = t + 1;
    return k->sel != NULL;
}

static gw_key *key_get(wf_analysis_ctx *ctx, gw_map *m, const char *key)
{
    void **slot = wf_strmap_slot(m->key_index, key, true);
    if (!slot)
        return NULL;
    if (*slot)
        return &m->k[(uintptr_t)*slot - 1];
    if (!grow((void **)&m->k, &m->cap, m->n, sizeof(*m->k)))
        return NULL;
    *slot = (void *)(uintptr_t)(m->n + 1);
    gw_key *k = &m->k[m->n];
    memset(k, 0, sizeof(*k));
    k->key = key;
    if (!split_key(ctx, k))
        return NULL;
    m->n++;
    return k;
}

/* A Gateway's servers are added one after another and names are unique in the store, so
 * the only entry this gateway can already have is the last one. */
static gw_hosts *key_gateway(gw_key *k, const char *gw)
{
    if (k->n > 0 && strcmp(k->g[k->n - 1].gw, gw) == 0)
        return &k->g[k->n - 1];
    if (!grow((void **)&k->g, &k->cap, k->n, sizeof(*k->g)))
        return NULL;
    k->g[k->n] = (gw_hosts){gw, NULL, 0, 0};
    return &k->g[k->n++];
}

static const char *server_port_str(wf_analysis_ctx *ctx, const wf_gateway_server *srv)
{
    return wf_arena_printf(wf_ctx_arena(ctx), "%u", (uint32_t)srv->port);
}

/* Count each (port, host) over all servers: a host on one server only can never be found in
 * another gateway's host list, so servers without a repeated host need no comparison. */
static const char *port_host_key(wf_analysis_ctx *ctx, const char *port, const char *host)
{
    return wf_arena_printf(wf_ctx_arena(ctx), "%s\x1f%s", port, host);
}

static void count_hosts(wf_analysis_ctx *ctx, gw_map *m, const char *port, const wf_strs *hosts)
{
    for (size_t i = 0; i < hosts->n && !m->failed; i++) {
        const char *key = port_host_key(ctx, port, hosts->v[i]);
        void **slot = key ? wf_strmap_slot(m->repeated, key, true) : NULL;
        if (!slot)
            m->failed = true;
        else
            *slot = (void *)((uintptr_t)*slot + 1);
    }
}

static bool any_repeated(wf_analysis_ctx *ctx, const gw_map *m, const char *port,
                         const wf_strs *hosts)
{
    for (size_t i = 0; i < hosts->n; i++) {
        const char *key = port_host_key(ctx, port, hosts->v[i]);
        void **slot = key ? wf_strmap_slot(m->repeated, key, false) : NULL;
        if (!key || (slot && (uintptr_t)*slot > 1))
            return true; /* out of memory: fall back to comparing */
    }
    return false;
}

/* initGatewaysMap: selector~port -> gateway -> host -> bind (a gateway's later server on
 * the same key replaces the earlier one). */
static void add_gateway_servers(wf_analysis_ctx *ctx, gw_map *m, const wf_gateway *gw,
                                const char *name, const char *sel)
{
    for (size_t s = 0; s < gw->nservers && !m->failed; s++) {
        const wf_gateway_server *srv = &gw->servers[s];
        const char *port = server_port_str(ctx, srv);
        const char *key = port ? wf_arena_printf(wf_ctx_arena(ctx), "%s~%s", sel, port) : NULL;
        gw_key *k = key ? key_get(ctx, m, key) : NULL;
        gw_hosts *h = k ? key_gateway(k, name) : NULL;
        if (!h) {
            m->failed = true;
            return;
        }
        h->n = 0;
        count_hosts(ctx, m, port, &srv->hosts);
        const char *bind = map_str_or_empty(srv->node, "bind");
        for (size_t i = 0; i < srv->hosts.n; i++)
            if (!hosts_set(h, srv->hosts.v[i], bind))
                m->failed = true;
    }
}

static bool build_map(wf_analysis_ctx *ctx, gw_map *m, const wf_resource *const *gv, size_t ng)
{
    m->names = calloc(ng, sizeof(*m->names));
    m->sels = calloc(ng, sizeof(*m->sels));
    m->key_index = wf_strmap_new(wf_ctx_arena(ctx));
    m->repeated = wf_strmap_new(wf_ctx_arena(ctx));
    if (!m->names || !m->sels || !m->key_index || !m->repeated)
        return false;
    for (size_t g = 0; g < ng && !m->failed; g++) {
        const wf_gateway *gw = gv[g]->t.gateway;
        if (!gw)
            continue;
        m->names[g] = wf_full_name(ctx, gv[g]);
        m->sels[g] = wf_selector_string(wf_ctx_arena(ctx), &gw->selector);
        if (!m->names[g] || !m->sels[g])
            return false;
        add_gateway_servers(ctx, m, gw, m->names[g], m->sels[g]);
    }
    return !m->failed;
}

static void free_map(gw_map *m)
{
    for (size_t i = 0; i < m->n; i++) {
        for (size_t j = 0; j < m->k[i].n; j++)
            free(m->k[i].g[j].v);
        free(m->k[i].g);
    }
    free(m->k);
    free(m->names);
    free(m->sels);
}

/* parseSelectorFromString: "k=v" pairs split on "," and "="; malformed pairs dropped. */
static bool parse_selector(wf_analysis_ctx *ctx, const char *s, wf_kvs *out)
{
    out->n = 0;
    out->items = NULL;
    size_t parts = 1;
    for (const char *p = s; *p; p++)
        parts += *p == ',';
    out->items = wf_arena_alloc(wf_ctx_arena(ctx), parts * sizeof(*out->items));
    if (!out->items)
        return false;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (eq && !memchr(eq + 1, '=', len - (size_t)(eq + 1 - p))) {
            wf_kv *kv = &out->items[out->n++];
            kv->key = wf_arena_strndup(wf_ctx_arena(ctx), p, (size_t)(eq - p));
            kv->value = wf_arena_strndup(wf_ctx_arena(ctx), eq + 1, len - (size_t)(eq + 1 - p));
            kv->node = NULL;
            if (!kv->key || !kv->value)
                return false;
        }
        if (!p[len])
            return true;
        p += len + 1;
    }
}

/* Does some pod match both the Gateway's selector and the selector string of a map key? */
static bool pod_matches_both(wf_analysis_ctx *ctx, const wf_kvs *gw_sel, const char *xsel)
{
    wf_kvs x;
    if (!parse_selector(ctx, xsel, &x))
        return false;
    size_t np;
    const wf_resource *const *pv = pods(ctx, &np);
    for (size_t i = 0; i < np; i++)
        if (wf_kvs_subset(gw_sel, &pv[i]->labels) && wf_kvs_subset(&x, &pv[i]->labels))
            return true;
    return false;
}

/* model.CheckDuplicates: any of hosts already known with the same bind? If none, all hosts
 * become known (in the shared table, as upstream does). */
static bool check_duplicates(gw_map *m, gw_hosts *known, const wf_strs *hosts, const char *bind)
{
    for (size_t i = 0; i < hosts->n; i++)
        for (size_t j = 0; j < known->n; j++)
            if (strcmp(known->v[j].host, hosts->v[i]) == 0 && strcmp(known->v[j].bind, bind) == 0)
                return true;
    for (size_t i = 0; i < hosts->n; i++)
        if (!hosts_set(known, hosts->v[i], bind))
            m->failed = true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *join(wf_analysis_ctx *ctx, const char *const *v, size_t n)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, "");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            wf_strbuf_putc(&b, ',');
        wf_strbuf_puts(&b, v[i]);
    }
    const char *out =
        wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(wf_ctx_arena(ctx), wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return out;
}

typedef struct name_list {
    const char **v;
    size_t n, cap;
} name_list;

static void check_server_conflicts(wf_analysis_ctx *ctx, gw_map *m, const wf_resource *r,
                                   const wf_gateway_server *srv, gw_key **hits, size_t nhits)
{
    const char *name = wf_full_name(ctx, r);
    const char *sel = wf_selector_string(wf_ctx_arena(ctx), &r->t.gateway->selector);
    const char *port = server_port_str(ctx, srv);
    const char *bind = map_str_or_empty(srv->node, "bind");
    name_list l = {NULL, 0, 0};
    if (port && !any_repeated(ctx, m, port, &srv->hosts))
        nhits = 0; /* no host of this server is on another server: nothing to find */
    for (size_t i = 0; name && sel && port && i < nhits; i++) {
        if (strcmp(hits[i]->port, port) != 0)
            continue;
        for (size_t j = 0; j < hits[i]->n; j++) {
            gw_hosts *other = &hits[i]->g[j];
            if (strcmp(name, other->gw) == 0 || !check_duplicates(m, other, &srv->hosts, bind))
                continue;
            if (!grow((void **)&l.v, &l.cap, l.n, sizeof(*l.v)))
                goto out;
            l.v[l.n++] = other->gw;
        }
    }
    if (l.n > 0) {
        qsort(l.v, l.n, sizeof(*l.v), cmp_str);
        const char *gws = join(ctx, l.v, l.n);
        const char *hosts = join(ctx, srv->hosts.v, srv->hosts.n);
        if (gws && hosts)
            WF_REPORT(ctx, WF_IST0145, r, NULL, gws, sel, port, hosts);
    }
out:
    free(l.v);
}

static void check_gateway_conflicts(wf_analysis_ctx *ctx, gw_map *m, const wf_resource *r,
                                    const char *sel)
{
    gw_key **hits = calloc(m->n ? m->n : 1, sizeof(*hits));
    if (!hits)
        return;
    size_t nhits = 0;
    for (size_t i = 0; i < m->n; i++) {
        const char *x = m->k[i].sel;
        bool matched = strcmp(sel, x) == 0;
        if (!matched && (strstr(x, sel) || strstr(sel, x)))
            matched = pod_matches_both(ctx, &r->t.gateway->selector, x);
        if (matched)
            hits[nhits++] = &m->k[i];
    }
    if (sel[0] && nhits == 0)
        report_selector_not_found(ctx, r, sel);
    else
        for (size_t s = 0; s < r->t.gateway->nservers; s++)
            check_server_conflicts(ctx, m, r, &r->t.gateway->servers[s], hits, nhits);
    free(hits);
}

static void run_conflicting_gateway(wf_analysis_ctx *ctx)
{
    size_t ng;
    const wf_resource *const *gv = gateways(ctx, &ng);
    gw_map m;
    memset(&m, 0, sizeof(m));
    if (ng > 0 && build_map(ctx, &m, gv, ng)) {
        for (size_t g = 0; g < ng && !m.failed; g++)
            if (gv[g]->t.gateway)
                check_gateway_conflicts(ctx, &m, gv[g], m.sels[g]);
    }
    free_map(&m);
}

const wf_analyzer wf_an_gateway_ConflictingGatewayAnalyzer = {
    .name = "gateway.ConflictingGatewayAnalyzer",
    .description = "Checks a gateway's selector, port number and hosts",
    .inputs = {WF_KIND_GATEWAY, WF_KIND_POD, WF_KIND_OTHER},
    .codes = {WF_IST0101, WF_IST0145, WF_MSG_COUNT},
    .default_on = true,
    .run = run_conflicting_gateway,
};

/* ==== gateway.CertificateAnalyzer ==== */

/* features.ScopeGatewayToNamespace (PILOT_SCOPE_GATEWAY_TO_NAMESPACE, Go ParseBool, default
 * false). */
static bool scope_gateway_to_namespace(void)
{
    static const char *const truths[] = {"1", "t", "T", "TRUE", "true", "True"};
    const char *v = getenv("PILOT_SCOPE_GATEWAY_TO_NAMESPACE");
    for (size_t i = 0; v && i < sizeof(truths) / sizeof(truths[0]); i++)
        if (strcmp(v, truths[i]) == 0)
            return true;
    return false;
}

/* selectorSubset: every key of x is in y with the same value. */
static bool selector_subset(const wf_kvs *x, const wf_kvs *y)
{
    for (size_t i = 0; i < x->n; i++) {
        const char *v = wf_kvs_get(y, x->items[i].key);
        const char *want = x->items[i].value ? x->items[i].value : "";
        if (!v || strcmp(v, want) != 0)
            return false;
    }
    return true;
}

/* haveSameCertificate of two tls blocks. */
static bool same_certificate(const wf_node *a, const wf_node *b)
{
    const char *ca = map_str_or_empty(a, "credentialName");
    const char *cb = map_str_or_empty(b, "credentialName");
    if (ca[0] && cb[0])
        return strcmp(ca, cb) == 0;
    if (ca[0] || cb[0])
        return false;
    const char *sa = map_str_or_empty(a, "serverCertificate");
    const char *sb = map_str_or_empty(b, "serverCertificate");
    if (!sa[0] || !sb[0] || strcmp(sa, sb) != 0)
        return false;
    const char *ka = map_str_or_empty(a, "privateKey");
    const char *kb = map_str_or_empty(b, "privateKey");
    return ka[0] && kb[0] && strcmp(ka, kb) == 0;
}

static bool same_full_name(const wf_resource *a, const wf_resource *b)
{
    return strcmp(a->ns, b->ns) == 0 && strcmp(a->name, b->name) == 0;
}

static void compare_certificates(wf_analysis_ctx *ctx, const wf_resource *cur,
                                 const wf_resource *other)
{
    const wf_gateway *a = cur->t.gateway, *b = other->t.gateway;
    for (size_t i = 0; i < a->nservers; i++) {
        for (size_t j = 0; j < b->nservers; j++) {
            const wf_node *ta = server_tls(&a->servers[i]), *tb = server_tls(&b->servers[j]);
            if (!ta || !tb || !same_certificate(ta, tb))
                continue;
            const char *names[2] = {wf_full_name(ctx, cur), wf_full_name(ctx, other)};
            const char *list = names[0] && names[1] ? wf_go_slice(ctx, names, 2) : NULL;
            if (list)
                WF_REPORT(ctx, WF_IST0138, cur, wf_map_get(cur->metadata, "name"), list);
        }
    }
}

/* The key under which two tls blocks have the same certificate (same_certificate): the
 * credentialName, or the serverCertificate and privateKey files; NULL when none can match. */
static const char *certificate_key(wf_analysis_ctx *ctx, const wf_node *tls)
{
    const char *cn = map_str_or_empty(tls, "credentialName");
    if (cn[0])
        return wf_arena_printf(wf_ctx_arena(ctx), "c\x1f%s", cn);
    const char *sc = map_str_or_empty(tls, "serverCertificate");
    const char *pk = map_str_or_empty(tls, "privateKey");
    if (!sc[0] || !pk[0])
        return NULL;
    return wf_arena_printf(wf_ctx_arena(ctx), "f\x1f%s\x1f%s", sc, pk);
}

/* Gateway indices (into the store's Gateway list) per certificate key, each list ascending. */
typedef struct cert_index {
    wf_strmap *by_key; /* key -> size_t list (first element: count) */
} cert_index;

static bool index_certificates(wf_analysis_ctx *ctx, cert_index *ix, const wf_resource *const *gv,
                               size_t ng)
{
    ix->by_key = wf_strmap_new(wf_ctx_arena(ctx));
    if (!ix->by_key)
        return false;
    for (size_t g = 0; g < ng; g++) {
        const wf_gateway *gw = gv[g]->t.gateway;
        for (size_t i = 0; gw && i < gw->nservers; i++) {
            const wf_node *tls = server_tls(&gw->servers[i]);
            const char *key = tls ? certificate_key(ctx, tls) : NULL;
            if (!key)
                continue;
            void **slot = wf_strmap_slot(ix->by_key, key, true);
            if (!slot)
                return false;
            size_t *list = *slot, n = list ? list[0] : 0;
            if (n > 0 && list[n] == g)
                continue;                      /* this gateway is already listed */
            if (!list || (n & (n + 1)) == 0) { /* full at 1, 3, 7, ...: grow to 2n + 2 */
                size_t *nl = wf_arena_alloc(wf_ctx_arena(ctx), (2 * n + 2) * sizeof(*nl));
                if (!nl)
                    return false;
                if (list)
                    memcpy(nl, list, (n + 1) * sizeof(*nl));
                list = nl;
            }
            list[++n] = g;
            list[0] = n;
            *slot = list;
        }
    }
    return true;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Gateways that could share a certificate with gv[cur], in store order, without cur. */
static size_t certificate_peers(wf_analysis_ctx *ctx, const cert_index *ix,
                                const wf_resource *const *gv, size_t cur, size_t **out)
{
    const wf_gateway *gw = gv[cur]->t.gateway;
    size_t n = 0, cap = 0;
    *out = NULL;
    for (size_t i = 0; i < gw->nservers; i++) {
        const wf_node *tls = server_tls(&gw->servers[i]);
        const char *key = tls ? certificate_key(ctx, tls) : NULL;
        void **slot = key ? wf_strmap_slot(ix->by_key, key, false) : NULL;
        const size_t *list = slot ? *slot : NULL;
        for (size_t j = 1; list && j <= list[0]; j++) {
            if (list[j] == cur)
                continue;
            if (!grow((void **)out, &cap, n, sizeof(**out)))
                return n;
            (*out)[n++] = list[j];
        }
    }
    if (n > 1)
        qsort(*out, n, sizeof(**out), cmp_size);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || (*out)[k - 1] != (*out)[i])
            (*out)[k++] = (*out)[i];
    return k;
}

/* Only Gateways with a tls block of the same certificate can give IST0138, so each Gateway
 * is compared with those (in store order, as upstream iterates all Gateways). */
static void check_duplicate_certificates(wf_analysis_ctx *ctx, const cert_index *ix,
                                         const wf_resource *const *gv, size_t cur, bool scope_ns)
{
    const wf_resource *r0 = gv[cur];
    const wf_kvs *sel = &r0->t.gateway->selector;
    size_t *peers;
    size_t np = certificate_peers(ctx, ix, gv, cur, &peers);
    for (size_t p = 0; p < np; p++) {
        const wf_resource *r = gv[peers[p]];
        if (!r->t.gateway || (scope_ns && strcmp(r->ns, r0->ns) != 0))
            continue;
        if (sel->n > 0 && !selector_subset(sel, &r->t.gateway->selector))
            continue;
        if (same_full_name(r0, r))
            continue;
        compare_certificates(ctx, r0, r);
    }
    free(peers);
}

static void run_certificate(wf_analysis_ctx *ctx)
{
    size_t ng;
    const wf_resource *const *gv = gateways(ctx, &ng);
    bool scope_ns = scope_gateway_to_namespace();
    cert_index ix;
    if (!index_certificates(ctx, &ix, gv, ng))
        return;
    for (size_t g = 0; g < ng; g++)
        if (gv[g]->t.gateway)
            check_duplicate_certificates(ctx, &ix, gv, g, scope_ns);
}

const wf_analyzer wf_an_gateway_CertificateAnalyzer = {
    .name = "gateway.CertificateAnalyzer",
    .description = "Checks a gateway certificate",
    .inputs = {WF_KIND_GATEWAY, WF_KIND_OTHER},
    .codes = {WF_IST0138, WF_MSG_COUNT},
    .default_on = true,
    .run = run_certificate,
};
