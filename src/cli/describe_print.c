/*
 * describe_print.c - the Pod, Service, DestinationRule and VirtualService blocks of
 * `weftctl describe` (describe.h), line for line as describe.go prints them (printPod,
 * printService, findProtocolForPort, printDestinationRule, httpRouteMatchSvc,
 * tcpRouteMatchSvc, renderMatch, printVirtualService, describePodServices). weft's additions,
 * on stderr so that stdout stays istioctl's: a line for each DestinationRule tls block that
 * overrides auto mTLS (mode DISABLE, SIMPLE or MUTUAL) and what it does to clients; and after
 * each `Port:` line, where the port's protocol came from (port name prefix, appProtocol,
 * well-known port number, or not declared: sniffed), from model/protocol.h (operator report
 * B032: a gRPC server behind a port named http).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/describe.h"
#include "model/protocol.h"

#define K8S_SUFFIX ".svc.cluster.local"

static void indent(FILE *f, int n)
{
    fprintf(f, "%*s", n, "");
}

/* ---- protocols ------------------------------------------------------------------------ */

const char *dsc_literal_protocol(const wf_resource *r, const wf_node *port_node)
{
    const char *p = wf_map_str(port_node, "protocol");
    if (p)
        return p;
    return r->json ? "" : "TCP";
}

/* protocol.Parse (case-insensitive); NULL for UnsupportedProtocol. */
static const char *parse_protocol(const char *s, size_t len)
{
    static const char *const names[][2] = {
        {"tcp", "TCP"},           {"udp", "UDP"},     {"grpc", "GRPC"},
        {"grpc-web", "GRPC-Web"}, {"http", "HTTP"},   {"http_proxy", "HTTP_PROXY"},
        {"http2", "HTTP2"},       {"https", "HTTPS"}, {"tls", "TLS"},
        {"mongo", "Mongo"},       {"redis", "Redis"}, {"mysql", "MySQL"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i][0]) == len && strncasecmp(s, names[i][0], len) == 0)
            return names[i][1];
    return NULL;
}

/* pkg/config/kube ConvertProtocol. */
static const char *convert_protocol(int32_t port, const char *name, const char *proto,
                                    const char *app_proto)
{
    if (proto && strcmp(proto, "UDP") == 0)
        return "UDP";
    const char *n = name ? name : "";
    if (app_proto) {
        n = app_proto;
        if (strcmp(n, "kubernetes.io/h2c") == 0)
            return "HTTP2";
        if (strcmp(n, "kubernetes.io/ws") == 0)
            return "HTTP";
        if (strcmp(n, "kubernetes.io/wss") == 0)
            return "HTTPS";
    }
    if (strncasecmp(n, "grpc-web", 8) == 0)
        return "GRPC-Web";
    const char *p = parse_protocol(n, strcspn(n, "-"));
    if (p)
        return p;
    if (port == 25 || port == 53 || port == 3306 || port == 27017)
        return "TCP";
    return "UnsupportedProtocol";
}

const char *dsc_port_protocol(const wf_resource *svc, const wf_service_port *p, char *buf,
                              size_t cap)
{
    const char *proto = dsc_literal_protocol(svc, p->node);
    if ((!p->name || !*p->name) && !p->app_protocol && strcmp(proto, "UDP") != 0)
        return "auto-detect";
    const char *r = convert_protocol(p->port, p->name, proto, p->app_protocol);
    if (strcmp(r, "UnsupportedProtocol") == 0 && p->app_protocol &&
        strcmp(p->app_protocol, "hbone") == 0)
        r = "HBONE";
    snprintf(buf, cap, "%s", r);
    return buf;
}

/* pilot's FindPort: the container port a Service port targets; -1 when none. */
static int find_port(const wf_resource *pod, const wf_resource *svc, const wf_service_port *sp)
{
    if (!sp->target_name)
        return sp->target_port;
    const char *proto = dsc_literal_protocol(svc, sp->node);
    const wf_pod_spec *ps = &pod->t.pod->spec;
    for (size_t i = 0; i < ps->ncontainers; i++) {
        const wf_container *c = &ps->containers[i];
        const wf_node *ports = wf_map_get(c->node, "ports");
        for (size_t j = 0; j < c->nports; j++) {
            const char *cp = dsc_literal_protocol(pod, wf_seq_at(ports, j));
            if (c->ports[j].name && strcmp(c->ports[j].name, sp->target_name) == 0 &&
                strcmp(cp, proto) == 0)
                return c->ports[j].container_port;
        }
    }
    return -1;
}

/* ---- pod -------------------------------------------------------------------------------- */

static bool has_any_label(const wf_kvs *l, const char *a, const char *b, const char *c)
{
    const char *k[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        const char *v = wf_kvs_get(l, k[i]);
        if (v && *v)
            return true;
    }
    return false;
}

static void print_pod_ports(const dsc_ctx *c, const wf_resource *pod)
{
    const wf_pod_spec *ps = &pod->t.pod->spec;
    bool any = false;
    for (size_t i = 0; i < ps->ncontainers; i++) {
        const wf_container *ct = &ps->containers[i];
        const wf_node *ports = wf_map_get(ct->node, "ports");
        for (size_t j = 0; j < ct->nports; j++) {
            const char *proto = dsc_literal_protocol(pod, wf_seq_at(ports, j));
            fprintf(c->out, "%s%d%s%s (%s)",
                    any ? ", " : "   Pod Ports: ", ct->ports[j].container_port,
                    strcmp(proto, "TCP") ? "/" : "", strcmp(proto, "TCP") ? proto : "",
                    ct->name ? ct->name : "");
            any = true;
        }
    }
    fputs(any ? "\n" : "   Pod does not expose ports\n", c->out);
}

static void print_not_ready(const dsc_ctx *c, const wf_resource *pod, const char *key,
                            const char *what)
{
    char kn[512];
    const wf_node *st = wf_map_get(pod->status, key);
    for (size_t i = 0; i < wf_seq_len(st); i++) {
        const wf_node *cs = wf_seq_at(st, i);
        bool ready = false;
        if (!wf_node_bool(wf_map_get(cs, "ready"), &ready) || !ready) {
            const char *n = wf_map_str(cs, "name");
            fprintf(c->out, "WARNING: Pod %s %s %s NOT READY\n", dsc_kname(c, pod, kn, sizeof kn),
                    what, n ? n : "");
        }
    }
}

void dsc_print_pod(const dsc_ctx *c, const wf_resource *pod, const char *revision)
{
    char kn[512];
    const wf_pod_spec *ps = &pod->t.pod->spec;
    for (size_t i = 0; i < ps->ncontainers; i++) {
        const char *n = ps->containers[i].name ? ps->containers[i].name : "";
        if (strcmp(n, "istio-proxy") && strcmp(n, "istio-operator") &&
            ps->containers[i].run_as_user == 1337)
            fputs("WARNING: User ID (UID) 1337 is reserved for the sidecar proxy.\n", c->out);
    }
    fprintf(c->out, "Pod: %s\n   Pod Revision: %s\n", dsc_kname(c, pod, kn, sizeof kn), revision);
    print_pod_ports(c, pod);
    const char *phase = pod->t.pod->phase ? pod->t.pod->phase : "";
    if (strcmp(phase, "Running") != 0) {
        fflush(c->out);
        printf("   Pod is not Running (%s)\n", phase); /* istioctl: stdout, not the writer */
        fflush(stdout);
        return;
    }
    print_not_ready(c, pod, "containerStatuses", "Container");
    print_not_ready(c, pod, "initContainerStatuses", "Init Container");
    if (c->ignore_unmeshed)
        return;
    if (!dsc_pod_meshed(c, pod)) {
        fprintf(c->out, "WARNING: %s is not part of mesh; no Istio sidecar\n", kn);
        return;
    }
    if (ps->run_as_user == 1337)
        fputs("   WARNING: User ID (UID) 1337 is reserved for the sidecar proxy.\n", c->out);
    static const char req[] = "https://istio.io/latest/docs/ops/deployment/requirements/";
    if (!has_any_label(&pod->labels, "service.istio.io/canonical-name", "app.kubernetes.io/name",
                       "app"))
        fprintf(c->out,
                "Suggestion: add required service name label for Istio telemetry. "
                "See %s.\n",
                req);
    if (!has_any_label(&pod->labels, "service.istio.io/canonical-revision",
                       "app.kubernetes.io/version", "version"))
        fprintf(c->out,
                "Suggestion: add required service revision label for Istio telemetry. "
                "See %s.\n",
                req);
}

/* weft's line after a Port line: where its protocol came from (stderr, see the top). */
static void print_port_source(const dsc_ctx *c, const wf_resource *svc, const wf_service_port *p)
{
    wf_protocol_source src;
    const char *name = p->name && *p->name ? p->name : NULL;
    wf_protocol pr = wf_protocol_of_kube_port_src(p->port, name, dsc_literal_protocol(svc, p->node),
                                                  p->app_protocol, &src);
    fflush(c->out); /* keep the line under its Port line on a terminal */
    fprintf(stderr, "weft: port %s %d: ", name ? name : "(unnamed)", p->port);
    switch (src) {
    case WF_PROTO_SRC_APP_PROTOCOL:
        fprintf(stderr, "protocol %s from appProtocol \"%s\"", wf_protocol_name(pr),
                p->app_protocol);
        if (name)
            fprintf(stderr, " (it wins over the port name)");
        break;
    case WF_PROTO_SRC_NAME:
        fprintf(stderr, "protocol %s from the port name prefix \"%.*s\"", wf_protocol_name(pr),
                strncasecmp(name, "grpc-web", 8) == 0 ? 8 : (int)strcspn(name, "-"), name);
        break;
    case WF_PROTO_SRC_WELL_KNOWN:
        fprintf(stderr,
                "protocol TCP from the well-known port number %d (a server-first "
                "protocol: not sniffed)",
                p->port);
        break;
    case WF_PROTO_SRC_UDP:
        fprintf(stderr, "protocol UDP from the port's protocol (not proxied)");
        break;
    default:
        if (p->app_protocol)
            fprintf(stderr, "appProtocol \"%s\" names no protocol Istio knows: ", p->app_protocol);
        else if (name)
            fprintf(stderr, "port name \"%s\" names no protocol Istio knows: ", name);
        fprintf(stderr, "not declared: sniffed (auto-detection): HTTP/1.1 and HTTP/2 (h2c) are "
                        "detected, anything else is TCP");
        break;
    }
    if (pr == WF_PROTO_HTTP)
        fprintf(stderr, "; HTTP/1.1 toward the app: an HTTP/2-only (gRPC) server needs the name "
                        "grpc or http2, or appProtocol: grpc");
    else if (wf_protocol_is_h2(pr))
        fprintf(stderr, "; HTTP/2 toward the app");
    fputc('\n', stderr);
}

static void print_service(const dsc_ctx *c, const wf_resource *svc, const wf_resource *pod)
{
    char kn[512], pbuf[32];
    fprintf(c->out, "Service: %s\n", dsc_kname(c, svc, kn, sizeof kn));
    const wf_service *s = svc->t.service;
    for (size_t i = 0; i < s->nports; i++) {
        const wf_service_port *p = &s->ports[i];
        if (strcmp(dsc_literal_protocol(svc, p->node), "TCP") != 0)
            continue; /* istioctl ignores UDP (and unset) protocols */
        int np = find_port(pod, svc, p);
        if (np < 0)
            fputs("   no suitable port for manifest: \n", c->out);
        else {
            fprintf(c->out, "   Port: %s %d/%s targets pod port %d\n", p->name ? p->name : "",
                    p->port, dsc_port_protocol(svc, p, pbuf, sizeof pbuf), np);
            print_port_source(c, svc, p);
        }
    }
}

/* ---- DestinationRule --------------------------------------------------------------------- */

static bool subset_matches_any(const wf_subset *ss, const dsc_pods *pods)
{
    for (size_t i = 0; i < pods->n; i++)
        if (wf_kvs_subset(&ss->labels, &pods->v[i]->labels))
            return true;
    return false;
}

static int dr_subsets(const wf_resource *dr, const dsc_pods *pods, dsc_names *match,
                      dsc_names *nomatch)
{
    const wf_destinationrule *d = dr->t.dr;
    for (size_t i = 0; d && i < d->nsubsets; i++) {
        const char *n = d->subsets[i].name ? d->subsets[i].name : "";
        if (dsc_names_add(subset_matches_any(&d->subsets[i], pods) ? match : nomatch, n))
            return -1;
    }
    return 0;
}

static void join(FILE *f, const dsc_names *l, const char *sep)
{
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "%s%s", i ? sep : "", l->v[i]);
}

static void short_policies(FILE *f, int ind, const wf_node *tp)
{
    const char *parts[3];
    size_t n = 0;
    if (wf_map_get(tp, "loadBalancer"))
        parts[n++] = "load balancer";
    if (wf_map_get(tp, "connectionPool"))
        parts[n++] = "connection pool";
    if (wf_map_get(tp, "outlierDetection"))
        parts[n++] = "outlier detection";
    if (!n)
        return;
    indent(f, ind);
    fputs("Policies: ", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "/" : "", parts[i]);
    fputc('\n', f);
}

static const char *tls_mode(const wf_node *tls)
{
    const char *m = wf_map_str(tls, "mode");
    return m ? m : "DISABLE";
}

/* weft's addition for a tls mode other than ISTIO_MUTUAL (security.md §4.2, §4.3): such a
 * block replaces auto mTLS for every client of the host, which is what breaks calls to a
 * STRICT workload (operator reports B028, B029). On stderr, so stdout stays istioctl's. */
static void tls_override_note(const wf_resource *dr, const char *host, int64_t port,
                              const wf_node *tls)
{
    if (!tls)
        return;
    const char *m = tls_mode(tls);
    const char *what = strcmp(m, "DISABLE") == 0
                           ? "clients send plaintext, which a STRICT workload closes (503 UC)"
                       : strcmp(m, "SIMPLE") == 0
                           ? "clients originate TLS without a mesh certificate, which a STRICT "
                             "workload refuses (503 UF,URX)"
                       : strcmp(m, "MUTUAL") == 0
                           ? "clients present the rule's certificate, not their mesh identity"
                           : NULL;
    if (!what)
        return;
    fprintf(stderr, "weft: DestinationRule %s/%s sets tls mode %s for \"%s\"", dr->ns, dr->name, m,
            host);
    if (port > 0)
        fprintf(stderr, " port %lld", (long long)port);
    fprintf(stderr, ": it overrides auto mTLS, %s\n", what);
}

static void tls_override_notes(const wf_resource *dr, const char *host, const wf_node *tp)
{
    tls_override_note(dr, host, 0, wf_map_get(tp, "tls"));
    const wf_node *pls = wf_map_get(tp, "portLevelSettings");
    for (size_t i = 0; i < wf_seq_len(pls); i++) {
        int64_t num = 0;
        wf_node_int(wf_node_path(wf_seq_at(pls, i), "port.number"), &num);
        tls_override_note(dr, host, num, wf_map_get(wf_seq_at(pls, i), "tls"));
    }
}

static void print_traffic_policy(FILE *f, int lvl, const wf_node *tp)
{
    if (!tp || tp->type == WF_NODE_NULL) {
        indent(f, lvl + DSC_L1);
        fputs("No Traffic Policy\n", f);
        return;
    }
    const wf_node *tls = wf_map_get(tp, "tls");
    if (tls) {
        indent(f, lvl + DSC_L1);
        fprintf(f, "Traffic Policy TLS Mode: %s\n", tls_mode(tls));
    }
    short_policies(f, lvl + DSC_L1, tp);
    const wf_node *pls = wf_map_get(tp, "portLevelSettings");
    if (!pls)
        return;
    indent(f, lvl + DSC_L1);
    fputs("Port Level Settings:\n", f);
    for (size_t i = 0; i < wf_seq_len(pls); i++) {
        const wf_node *ps = wf_seq_at(pls, i);
        int64_t num = 0;
        wf_node_int(wf_node_path(ps, "port.number"), &num);
        fprintf(f, "    %lld:\n", (long long)num); /* always 4 spaces, as istioctl */
        const wf_node *ptls = wf_map_get(ps, "tls");
        if (ptls) {
            indent(f, lvl + DSC_L2);
            fprintf(f, "TLS Mode: %s\n", tls_mode(ptls));
        }
        short_policies(f, lvl + DSC_L2, ps);
    }
}

static int print_dr(const dsc_ctx *c, int lvl, const wf_resource *dr, const dsc_pods *pods)
{
    char kn[512];
    FILE *f = c->out;
    const char *host = dr->t.dr && dr->t.dr->host ? dr->t.dr->host : "";
    indent(f, lvl);
    fprintf(f, "DestinationRule: %s for \"%s\"\n", dsc_kname(c, dr, kn, sizeof kn), host);
    dsc_names m = {0}, nm = {0};
    if (dr_subsets(dr, pods, &m, &nm)) {
        dsc_names_free(&m);
        dsc_names_free(&nm);
        return -1;
    }
    if (m.n || nm.n) {
        if (!m.n) {
            indent(f, lvl + DSC_L1);
            fputs("WARNING POD DOES NOT MATCH ANY SUBSETS.  (Non matching subsets ", f);
            join(f, &nm, ",");
            fputs(")\n", f);
        }
        indent(f, lvl + DSC_L1);
        fputs("Matching subsets: ", f);
        join(f, &m, ",");
        fputc('\n', f);
        if (nm.n) {
            indent(f, lvl + DSC_L2);
            fputs("(Non-matching subsets ", f);
            join(f, &nm, ",");
            fputs(")\n", f);
        }
    }
    dsc_names_free(&m);
    dsc_names_free(&nm);
    print_traffic_policy(f, lvl, dr->t.dr ? dr->t.dr->traffic_policy : NULL);
    if (dr->t.dr && dr->t.dr->traffic_policy) {
        fflush(f);
        tls_override_notes(dr, host, dr->t.dr->traffic_policy);
    }
    return 0;
}

/* ---- VirtualService ------------------------------------------------------------------------ */

/* A small proto-text rendering of a node (Go's proto String()), for fault and TCP matches. */
static void proto_text(wf_strbuf *b, const wf_node *n)
{
    if (!n)
        return;
    if (n->type == WF_NODE_SCALAR) {
        if (wf_node_is_string(n))
            wf_strbuf_printf(b, "\"%s\"", n->u.str);
        else
            wf_strbuf_puts(b, n->u.str);
        return;
    }
    for (size_t i = 0; i < n->len; i++) {
        const wf_node *v = n->type == WF_NODE_MAP ? n->u.entries[i].value : n->u.items[i];
        if (i)
            wf_strbuf_putc(b, ' ');
        if (n->type == WF_NODE_MAP) {
            for (const char *k = n->u.entries[i].key; *k; k++) {
                if (isupper((unsigned char)*k))
                    wf_strbuf_putc(b, '_');
                wf_strbuf_putc(b, (char)tolower((unsigned char)*k));
            }
            wf_strbuf_putc(b, ':');
        }
        if (v->type == WF_NODE_MAP)
            wf_strbuf_putc(b, '{');
        proto_text(b, v);
        if (v->type == WF_NODE_MAP)
            wf_strbuf_putc(b, '}');
    }
}

static void render_string_match(wf_strbuf *b, const wf_node *sm)
{
    const char *v;
    if ((v = wf_map_str(sm, "exact")) != NULL) {
        wf_strbuf_puts(b, v);
    } else if ((v = wf_map_str(sm, "prefix")) != NULL) {
        wf_strbuf_printf(b, "%s*", v);
    } else {
        proto_text(b, sm);
    }
}

static void render_match(wf_strbuf *b, const wf_node *m)
{
    size_t start = b->len;
    wf_strbuf_puts(b, "Match: ");
    const wf_node *uri = wf_map_get(m, "uri");
    bool uncased = false;
    if (uri) {
        render_string_match(b, uri);
        if (wf_node_bool(wf_map_get(m, "ignoreUriCase"), &uncased) && uncased)
            wf_strbuf_puts(b, " uncased");
    }
    const wf_node *h = wf_map_get(m, "headers");
    if (h && h->type == WF_NODE_MAP && h->len) {
        wf_strbuf_puts(b, " when headers are ");
        for (size_t i = 0; i < h->len; i++) {
            wf_strbuf_printf(b, "%s%s=", i ? "; " : "", h->u.entries[i].key);
            render_string_match(b, h->u.entries[i].value);
        }
    }
    while (b->len > start && b->data[b->len - 1] == ' ')
        b->data[--b->len] = '\0'; /* strings.TrimSpace */
}

static void render_matches(wf_strbuf *b, const wf_node *matches)
{
    if (!wf_seq_len(matches)) {
        wf_strbuf_puts(b, "everything");
        return;
    }
    for (size_t i = 0; i < wf_seq_len(matches); i++) {
        if (i)
            wf_strbuf_puts(b, ", ");
        render_match(b, wf_seq_at(matches, i));
    }
}

/* extendFQDN(ResolveShortnameToFQDN(host, vs namespace)) == "<svc>.<ns>.svc.cluster.local" */
static bool dest_is_svc(const char *host, const char *vs_ns, const char *svc_fqdn)
{
    if (!host || !*host)
        return false;
    char fq[600];
    if (strcmp(host, "*") == 0 || strchr(host, '.') || strchr(host, ':'))
        snprintf(fq, sizeof fq, "%s", host);
    else
        snprintf(fq, sizeof fq, "%s.%s", host, vs_ns);
    size_t l = strlen(fq), sl = strlen(K8S_SUFFIX);
    if (fq[0] != '*' && !(l >= sl && strcmp(fq + l - sl, K8S_SUFFIX) == 0))
        strncat(fq, K8S_SUFFIX, sizeof fq - l - 1);
    return strcmp(fq, svc_fqdn) == 0;
}

typedef struct vs_eval {
    const dsc_ctx *c;
    const wf_resource *vs, *dr;
    const char *svc_fqdn;
    const dsc_names *match, *nomatch;
} vs_eval;

/* httpRouteMatchSvc: appends facts (matching) or notes (not matching) as lines to out. */
static int http_route(const vs_eval *e, const wf_route *r, bool *matched, wf_strbuf *pool)
{
    wf_strbuf notes = WF_STRBUF_INIT, line = WF_STRBUF_INIT;
    char kn[512];
    bool match = false;
    for (size_t i = 0; i < r->ndest; i++) {
        const wf_route_destination *d = &r->dests[i];
        const char *host = d->dest.host ? d->dest.host : "";
        const char *sub = d->dest.subset && *d->dest.subset ? d->dest.subset : NULL;
        int w = d->weight > 0 ? d->weight : 0;
        wf_strbuf_reset(&line);
        if (dest_is_svc(host, e->vs->ns, e->svc_fqdn)) {
            if (sub && dsc_names_has(e->nomatch, sub)) {
                wf_strbuf_printf(&notes, "Route to non-matching subset %s for (", sub);
                render_matches(&notes, r->match);
                wf_strbuf_puts(&notes, ")\n");
                continue;
            }
            if (sub && !dsc_names_has(e->match, sub)) {
                if (!e->dr)
                    wf_strbuf_printf(&notes,
                                     "Warning: Route to subset %s but NO DESTINATION "
                                     "RULE defining subsets!\n",
                                     sub);
                else
                    wf_strbuf_printf(&notes,
                                     "Warning: Route to UNKNOWN subset %s; check "
                                     "DestinationRule %s\n",
                                     sub, dsc_kname(e->c, e->dr, kn, sizeof kn));
                continue;
            }
            match = true;
            if (w > 0) {
                wf_strbuf_printf(&line, "Route to host \"%s\"", host);
                if (sub)
                    wf_strbuf_printf(&line, " subset \"%s\"", sub);
                wf_strbuf_printf(&line, " with weight %d%%", w);
            }
        } else if (!sub) {
            wf_strbuf_printf(&line, "Route to host \"%s\" with weight %d%%", host, w);
        } else {
            wf_strbuf_printf(&line, "Route to %s with invalid config", host);
        }
        if (line.len) {
            wf_strbuf_putc(pool, '\n');
            wf_strbuf_puts(pool, line.data);
        }
    }
    if (match) {
        wf_strbuf_reset(&line);
        const wf_node *fault = wf_map_get(r->node, "fault");
        if (fault) {
            wf_strbuf_puts(&line, "Fault injection ");
            proto_text(&line, fault);
        }
        for (size_t i = 0; i < wf_seq_len(r->match); i++) {
            if (line.len)
                wf_strbuf_puts(&line, ", ");
            render_match(&line, wf_seq_at(r->match, i));
        }
        if (line.len) {
            wf_strbuf_putc(pool, '\n');
            wf_strbuf_puts(pool, line.data);
        }
    } else if (notes.len) {
        wf_strbuf_putc(pool, '\n');
        wf_strbuf_append(pool, notes.data, notes.len - 1);
    }
    *matched = match;
    wf_strbuf_free(&notes);
    wf_strbuf_free(&line);
    return wf_strbuf_failed(pool) ? -1 : 0;
}

static void tcp_route(const vs_eval *e, const wf_route *r, bool *matched, wf_strbuf *pool)
{
    bool match = false;
    for (size_t i = 0; i < r->ndest; i++)
        if (dest_is_svc(r->dests[i].dest.host, e->vs->ns, e->svc_fqdn))
            match = true;
    if (match)
        for (size_t i = 0; i < wf_seq_len(r->match); i++) {
            wf_strbuf_putc(pool, '\n');
            proto_text(pool, wf_seq_at(r->match, i));
        }
    *matched = match;
}

/* Print the lines of text (each preceded by '\n') at ind; returns how many. */
static size_t print_lines(FILE *f, int ind, const wf_strbuf *b)
{
    size_t n = 0;
    for (const char *p = b->len ? b->data : ""; *p == '\n'; n++) {
        const char *q = strchr(p + 1, '\n');
        size_t l = q ? (size_t)(q - p - 1) : strlen(p + 1);
        indent(f, ind);
        fprintf(f, "%.*s\n", (int)l, p + 1);
        p += l + 1;
    }
    return n;
}

static int print_vs(const dsc_ctx *c, int lvl, const wf_resource *vsr, const wf_resource *svc,
                    const dsc_names *match, const dsc_names *nomatch, const wf_resource *dr)
{
    char kn[512], fq[600];
    FILE *f = c->out;
    const wf_virtualservice *vs = vsr->t.vs;
    snprintf(fq, sizeof fq, "%s.%s" K8S_SUFFIX, svc->name, svc->ns);
    vs_eval e = {c, vsr, dr, fq, match, nomatch};
    indent(f, lvl);
    fprintf(f, "VirtualService: %s\n", dsc_kname(c, vsr, kn, sizeof kn));
    size_t matches = 0, facts = 0;
    wf_strbuf mism = WF_STRBUF_INIT, pool = WF_STRBUF_INIT;
    for (size_t i = 0; vs && i < vs->nhttp + vs->ntcp; i++) {
        bool m = false;
        wf_strbuf_reset(&pool);
        if (i < vs->nhttp) {
            if (http_route(&e, &vs->http[i], &m, &pool))
                break;
        } else {
            tcp_route(&e, &vs->tcp[i - vs->nhttp], &m, &pool);
        }
        if (m) {
            matches++;
            facts += print_lines(f, lvl + DSC_L1, &pool);
        } else if (pool.len) {
            wf_strbuf_append(&mism, pool.data, pool.len);
        }
    }
    int rc = wf_strbuf_failed(&pool) || wf_strbuf_failed(&mism) ? -1 : 0;
    size_t nhttp = vs ? vs->nhttp : 0, ntcp = vs ? vs->ntcp : 0, ntls = vs ? vs->ntls : 0;
    if (matches == 0) {
        if (nhttp) {
            indent(f, lvl + DSC_L1);
            fprintf(f, "WARNING: No destinations match pod subsets (checked %zu HTTP routes)\n",
                    nhttp);
        }
        if (ntcp) {
            indent(f, lvl + DSC_L1);
            fprintf(f, "WARNING: No destinations match pod subsets (checked %zu TCP routes)\n",
                    ntcp);
        }
        print_lines(f, lvl + DSC_L2, &mism);
    } else if (matches < nhttp + ntls + ntcp) {
        indent(f, lvl + DSC_L1);
        fprintf(f, "%zu additional destination(s) that will not reach this pod\n",
                nhttp + ntls + ntcp - matches);
        if (facts == 0)
            print_lines(f, lvl + DSC_L2, &mism);
    } else if (facts == 0) {
        if (nhttp) {
            indent(f, lvl + DSC_L1);
            fprintf(f, "%zu HTTP route(s)\n", nhttp);
        }
        if (ntcp) {
            indent(f, lvl + DSC_L1);
            fprintf(f, "%zu TCP route(s)\n", ntcp);
        }
    }
    wf_strbuf_free(&mism);
    wf_strbuf_free(&pool);
    return rc;
}

int dsc_print_vs_block(const dsc_ctx *c, int lvl, const wf_resource *vs, const wf_resource *svc,
                       const wf_resource *dr, const dsc_pods *pods)
{
    dsc_names m = {0}, nm = {0};
    int rc = dr ? dr_subsets(dr, pods, &m, &nm) : 0;
    if (rc == 0)
        rc = print_vs(c, lvl, vs, svc, &m, &nm, dr);
    dsc_names_free(&m);
    dsc_names_free(&nm);
    return rc;
}

/* ---- describePodServices --------------------------------------------------------------- */

static int describe_port(const dsc_ctx *c, json_t *dump, const wf_resource *svc, int port, int lvl,
                         const dsc_pods *pods)
{
    wf_strbuf err = WF_STRBUF_INIT;
    char *name = NULL, *ns = NULL;
    const wf_resource *dr = NULL;
    int rc = 0;
    if (dsc_dump_dr_name(dump, svc->name, svc->ns, port, &name, &ns, &err) < 0)
        fprintf(stderr, "error: fetch destination rule for %s: %s\n", svc->name,
                wf_strbuf_cstr(&err));
    else if (name) {
        dr = wf_store_find(c->store, WF_KIND_DESTINATIONRULE, ns, name);
        if (dr)
            rc = print_dr(c, lvl, dr, pods);
        else
            fprintf(c->out,
                    "WARNING: Proxy is stale; it references to non-existent destination "
                    "rule %s.%s\n",
                    name, ns);
    }
    free(name);
    free(ns);
    wf_strbuf_reset(&err);
    if (rc == 0 && dsc_dump_vs_name(dump, svc->name, svc->ns, port, &name, &ns, &err) == 0 &&
        name) {
        const wf_resource *vs = wf_store_find(c->store, WF_KIND_VIRTUALSERVICE, ns, name);
        if (vs)
            rc = dsc_print_vs_block(c, lvl, vs, svc, dr, pods);
        else
            fprintf(c->out,
                    "WARNING: Proxy is stale; it references to non-existent virtual "
                    "service %s.%s\n",
                    name, ns);
        free(name);
        free(ns);
    }
    wf_strbuf_free(&err);
    dsc_names pol = {0};
    if (rc == 0 && dsc_dump_rbac(dump, port, &pol) == 0 && pol.n) {
        if (svc->t.service->nports > 1)
            fprintf(c->out, "%d ", port);
        fputs("RBAC policies: ", c->out);
        join(c->out, &pol, ", ");
        fputc('\n', c->out);
    }
    dsc_names_free(&pol);
    return rc;
}

int dsc_print_services(const dsc_ctx *c, const wf_resource *pod, const wf_resource *const *svcs,
                       size_t nsvcs, const dsc_pods *pods, wf_strbuf *err)
{
    wf_strbuf ferr = WF_STRBUF_INIT;
    json_t *dump = dsc_fetch_dump(c, pod, &ferr);
    if (!dump) {
        int rc = c->ignore_unmeshed ? 0 : -1;
        if (rc)
            wf_strbuf_printf(err, "failed to execute command on sidecar: %s",
                             wf_strbuf_cstr(&ferr));
        wf_strbuf_free(&ferr);
        return rc;
    }
    wf_strbuf_free(&ferr);
    int rc = 0;
    for (size_t i = 0; i < nsvcs && rc == 0; i++) {
        const wf_service *s = svcs[i]->t.service;
        if (i)
            fputs("--------------------\n", c->out);
        print_service(c, svcs[i], pod);
        bool multi = s->nports > 1;
        for (size_t p = 0; p < s->nports && rc == 0; p++) {
            if (multi)
                fprintf(c->out, "%d:\n", s->ports[p].port);
            rc = describe_port(c, dump, svcs[i], s->ports[p].port, multi ? DSC_L1 : DSC_L0, pods);
        }
    }
    json_decref(dump);
    if (rc)
        wf_strbuf_puts(err, "out of memory");
    return rc;
}
