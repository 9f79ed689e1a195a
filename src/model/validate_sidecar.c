/*
 * validate_sidecar.c - Sidecar validation.
 *
 * Follows istio/istio pkg/config/validation/validation.go: ValidateSidecar,
 * validateSidecarIngressPortAndBind, validateSidecarEgressPortBindAndCaptureMode,
 * validateSidecarOutboundTrafficPolicy, and net.SplitHostPort for defaultEndpoint.
 */
#include "model/validate_internal.h"

#include <stdlib.h>
#include <string.h>

#define IN(c, key, stmt)                                                                           \
    do {                                                                                           \
        size_t in_mark_ = vc_push((c), (key));                                                     \
        stmt;                                                                                      \
        vc_pop((c), in_mark_);                                                                     \
    } while (0)

static const char *const capture_modes[] = {"DEFAULT", "IPTABLES", "NONE", NULL};
static const char *const server_tls_modes[] = {
    "PASSTHROUGH", "SIMPLE", "MUTUAL", "AUTO_PASSTHROUGH", "ISTIO_MUTUAL", "OPTIONAL_MUTUAL", NULL};

static void port_number(vc *c, const wf_node *at, int64_t n)
{
    const char *e = vc_check_port(c, n);
    if (e)
        vc_err(c, at, "%s", e);
}

static void bind_ip(vc *c, const wf_node *at, const char *bind)
{
    if (*bind && !vc_is_ip(bind))
        vc_err(c, at, "%s is not a valid IP", bind);
}

/* net.SplitHostPort: false with *err set on failure. */
static bool split_host_port(vc *c, const char *addr, const char **host, const char **port,
                            const char **err)
{
    const char *colon = strrchr(addr, ':');
    if (!colon) {
        *err = vc_fmt(c, "address %s: missing port in address", addr);
        return false;
    }
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close) {
            *err = vc_fmt(c, "address %s: missing ']' in address", addr);
            return false;
        }
        if (close[1] != ':') {
            *err = vc_fmt(c,
                          close[1] ? "address %s: too many colons in address"
                                   : "address %s: missing port in address",
                          addr);
            return false;
        }
        *host = vc_fmt(c, "%.*s", (int)(close - addr - 1), addr + 1);
        *port = close + 2;
        return true;
    }
    *host = vc_fmt(c, "%.*s", (int)(colon - addr), addr);
    if (strchr(*host, ':')) {
        *err = vc_fmt(c, "address %s: too many colons in address", addr);
        return false;
    }
    *port = colon + 1;
    return true;
}

static void default_endpoint(vc *c, const wf_node *ing)
{
    const char *ep = vc_str(ing, "defaultEndpoint");
    const wf_node *at = vc_get(ing, "defaultEndpoint");
    if (!*ep)
        return;
    if (strncmp(ep, "unix://", 7) == 0) {
        const char *e = vc_check_unix_address(c, ep + 7);
        if (e)
            vc_err(c, at, "%s", e);
        return;
    }
    const char *host = "", *port = "", *err;
    if (!split_host_port(c, ep, &host, &port, &err))
        vc_err(c, at, "%s", err);
    if (*host && strcmp(host, "127.0.0.1") && strcmp(host, "0.0.0.0") && strcmp(host, "::1") &&
        strcmp(host, "::"))
        vc_err(c, at,
               "sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,"
               "[::1]:port,[::]:port,unix://filepath or unset");
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end)
        vc_err(c, at,
               "sidecar: defaultEndpoint port (%s) is not a number: strconv.Atoi: parsing %s: "
               "invalid syntax",
               port, vc_q(c, port));
    else
        port_number(c, at, p);
}

static void ingress_tls(vc *c, const wf_node *tls)
{
    if (!tls)
        return;
    if (vc_len(tls, "subjectAltNames") > 0)
        vc_err(c, tls, "sidecar: subjectAltNames is not supported in ingress tls");
    if (vc_bool(tls, "httpsRedirect"))
        vc_err(c, tls, "sidecar: httpsRedirect is not supported");
    if (*vc_str(tls, "credentialName"))
        vc_err(c, tls, "sidecar: credentialName is not currently supported");
    const char *mode = vc_enum(tls, "mode", server_tls_modes);
    if (!strcmp(mode, "ISTIO_MUTUAL") || !strcmp(mode, "AUTO_PASSTHROUGH"))
        vc_err(c, tls, "configuration is invalid: cannot set mode to %s in sidecar ingress tls",
               mode);
    vc_server_tls(c, tls);
}

static bool seen_port(const int64_t *ports, size_t n, int64_t p)
{
    for (size_t i = 0; i < n; i++) {
        if (ports[i] == p)
            return true;
    }
    return false;
}

static void ingress(vc *c, const wf_node *seq)
{
    size_t n = wf_seq_len(seq);
    int64_t *ports = wf_arena_alloc(&c->scratch, (n + 1) * sizeof(*ports));
    if (!ports)
        return;
    size_t nports = 0;
    for (size_t i = 0; i < n; i++) {
        const wf_node *ing = wf_seq_at(seq, i);
        size_t mark = vc_push(c, "ingress");
        vc_push_idx(c, i);
        const wf_node *port = vc_get(ing, "port");
        if (!ing || ing->type == WF_NODE_NULL) {
            vc_err(c, ing, "sidecar: ingress may not be null");
        } else if (!port) {
            vc_err(c, ing, "sidecar: port is required for ingress listeners");
        } else {
            if (vc_int(port, "targetPort") > 0)
                vc_err(c, port, "targetPort has no impact on Sidecars");
            const char *name = vc_str(port, "name");
            const char *proto = vc_str(port, "protocol");
            if (*name)
                vc_port_name(c, port, name);
            vc_validate_protocol(c, port, proto);
            port_number(c, port, vc_int(port, "number"));
            bind_ip(c, ing, vc_str(ing, "bind"));
            int64_t num = vc_int(port, "number");
            if (seen_port(ports, nports, num))
                vc_err(c, port, "sidecar: ports on IP bound listeners must be unique");
            ports[nports++] = num;
            default_endpoint(c, ing);
            IN(c, "tls", ingress_tls(c, vc_get(ing, "tls")));
            const wf_node *cp = vc_get(ing, "connectionPool");
            IN(c, "connectionPool", vc_connection_pool(c, cp));
            if (cp && vc_has(cp, "http") && !vc_proto_is_http(vc_protocol(proto)))
                vc_warn(c, cp,
                        "sidecar: HTTP connection pool settings are configured for port %lld (%s) "
                        "but its protocol is not HTTP (%s); only TCP settings will apply",
                        (long long)num, vc_q(c, name), proto);
        }
        vc_pop(c, mark);
    }
}

static void egress_port(vc *c, const wf_node *eg, const wf_node *port)
{
    const char *name = vc_str(port, "name"), *proto = vc_str(port, "protocol");
    const char *bind = vc_str(eg, "bind");
    if (*name)
        vc_port_name(c, port, name);
    if (vc_int(port, "number") == 0) {
        vc_validate_protocol(c, port, proto);
        if (strncmp(bind, "unix://", 7) != 0) {
            vc_err(c, port,
                   "sidecar: ports with 0 value must have a unix domain socket bind address");
        } else {
            const char *e = vc_check_unix_address(c, bind + 7);
            if (e)
                vc_err(c, eg, "%s", e);
        }
        const char *cm = vc_enum(eg, "captureMode", capture_modes);
        if (strcmp(cm, "DEFAULT") != 0 && strcmp(cm, "NONE") != 0)
            vc_err(c, eg,
                   "sidecar: captureMode must be DEFAULT/NONE for unix domain socket listeners");
        return;
    }
    vc_validate_protocol(c, port, proto);
    port_number(c, port, vc_int(port, "number"));
    bind_ip(c, eg, bind);
}

typedef struct nssvc {
    const char *ns, *svc;
} nssvc;

static void egress_hosts(vc *c, const wf_node *eg)
{
    const wf_node *hosts = vc_get(eg, "hosts");
    size_t n = wf_seq_len(hosts);
    if (n == 0) {
        vc_err(c, eg, "sidecar: egress listener must contain at least one host");
        return;
    }
    nssvc *seen = wf_arena_alloc(&c->scratch, (n + 1) * sizeof(*seen));
    if (!seen)
        return;
    size_t nseen = 0;
    bool all_all = false;
    const char *my_ns = c->r->ns ? c->r->ns : "";
    for (size_t i = 0; i < n; i++) {
        const wf_node *h = wf_seq_at(hosts, i);
        const char *host = vc_nstr(h);
        size_t mark = vc_push(c, "hosts");
        vc_push_idx(c, i);
        const char *slash = strchr(host, '/');
        if (slash) {
            const char *ns = vc_fmt(c, "%.*s", (int)(slash - host), host);
            const char *svc = slash + 1;
            if (strcmp(ns, ".") == 0)
                ns = my_ns;
            bool dup = false;
            for (size_t j = 0; j < nseen; j++) {
                if (strcmp(seen[j].ns, ns) != 0)
                    continue;
                if (strcmp(svc, "*") == 0 || strcmp(seen[j].svc, svc) == 0 ||
                    strcmp(seen[j].svc, "*") == 0)
                    dup = true;
            }
            if (dup)
                vc_warn(c, h, "duplicated egress host: %s", host);
            seen[nseen++] = (nssvc){ns, svc};
            all_all |= strcmp(ns, "*") == 0 && strcmp(svc, "*") == 0;
        }
        vc_namespace_slash_host(c, h, host, false);
        vc_pop(c, mark);
    }
    bool other_ns = false;
    for (size_t j = 0; j < nseen; j++)
        other_ns |= strcmp(seen[j].ns, "*") != 0;
    if (all_all && other_ns)
        vc_warn(c, hosts, "`*/*` host select all resources, no other hosts can be added");
}

static void egress(vc *c, const wf_node *seq)
{
    size_t n = wf_seq_len(seq);
    int64_t *ports = wf_arena_alloc(&c->scratch, (n + 1) * sizeof(*ports));
    const char **uds = wf_arena_alloc(&c->scratch, (n + 1) * sizeof(*uds));
    if (!ports || !uds)
        return;
    size_t nports = 0, nuds = 0;
    bool catch_all = false;
    for (size_t i = 0; i < n; i++) {
        size_t mark;
        const wf_node *eg = vc_item(c, seq, "egress", i, "egress listener may not be null", &mark);
        if (!eg)
            continue;
        const wf_node *port = vc_get(eg, "port");
        if (!port) {
            if (catch_all) {
                vc_err(c, eg, "sidecar: egress can have only one listener with empty port");
                vc_pop(c, mark);
                continue;
            }
            if (i == n - 1)
                catch_all = true;
            else
                vc_err(c, eg,
                       "sidecar: the egress listener with empty port should be the last "
                       "listener in the list");
        } else {
            if (vc_int(port, "targetPort") > 0)
                vc_err(c, port, "targetPort has no impact on Sidecars");
            egress_port(c, eg, port);
            int64_t num = vc_int(port, "number");
            const char *bind = vc_str(eg, "bind");
            if (num == 0) {
                bool dup = false;
                for (size_t j = 0; j < nuds; j++)
                    dup |= strcmp(uds[j], bind) == 0;
                if (dup)
                    vc_err(c, eg,
                           "sidecar: unix domain socket values for listeners must be unique");
                uds[nuds++] = bind;
            } else {
                if (seen_port(ports, nports, num))
                    vc_err(c, port, "sidecar: ports on IP bound listeners must be unique");
                ports[nports++] = num;
            }
        }
        egress_hosts(c, eg);
        vc_pop(c, mark);
    }
}

static void outbound_policy(vc *c, const wf_node *tp)
{
    if (!tp)
        return;
    const wf_node *proxy = vc_get(tp, "egressProxy");
    if (!proxy)
        return;
    static const char *const modes[] = {"REGISTRY_ONLY", "ALLOW_ANY", NULL};
    if (strcmp(vc_enum(tp, "mode", modes), "ALLOW_ANY") != 0) {
        vc_err(c, proxy,
               "sidecar: egress_proxy must be set only with ALLOW_ANY "
               "outbound_traffic_policy mode");
        return;
    }
    const char *e = vc_check_fqdn(c, vc_str(proxy, "host"));
    if (e)
        vc_err(c, proxy, "%s", e);
    if (!vc_has(proxy, "port")) {
        vc_err(c, proxy, "sidecar: egress_proxy port must be non-nil");
        return;
    }
    IN(c, "egressProxy", vc_destination(c, proxy));
}

void vc_sidecar(vc *c, const wf_node *spec)
{
    bool failed = false;
    int before = c->errors;
    bool no_labels = false;
    if (vc_has(spec, "workloadSelector")) {
        /* errors in the selector end the validation, as upstream returns early */
        no_labels = vc_alpha_workload_selector(c, spec, &failed);
        if (failed || c->errors != before)
            return;
    }
    if (vc_len(spec, "egress") == 0 && vc_len(spec, "ingress") == 0 &&
        !vc_has(spec, "outboundTrafficPolicy") && !vc_has(spec, "inboundConnectionPool")) {
        vc_err(c, spec, "sidecar: empty configuration provided");
        return;
    }
    if (no_labels)
        IN(c, "workloadSelector",
           vc_warn(c, vc_get(spec, "workloadSelector"),
                   "sidecar: workload selector specified without labels, will be applied to all "
                   "services in namespace"));
    ingress(c, vc_get(spec, "ingress"));
    IN(c, "inboundConnectionPool", vc_connection_pool(c, vc_get(spec, "inboundConnectionPool")));
    egress(c, vc_get(spec, "egress"));
    IN(c, "outboundTrafficPolicy", outbound_policy(c, vc_get(spec, "outboundTrafficPolicy")));
}
