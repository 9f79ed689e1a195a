/*
 * validate_se.c - ServiceEntry, WorkloadEntry and WorkloadGroup validation.
 *
 * Follows istio/istio pkg/config/validation/validation.go: ValidateServiceEntry,
 * validateWorkloadEntry, ValidateWorkloadEntry, ValidateWorkloadGroup, validateReadinessProbe,
 * ValidatePortName, ValidateProtocol. IP auto-allocation (PILOT_ENABLE_IP_AUTOALLOCATE, on by
 * default) applies to every ServiceEntry whose resolution is not NONE and that has no
 * addresses, which decides the "addresses are required" warning.
 */
#include "model/validate_internal.h"

#include <string.h>

#define IN(c, key, stmt)                                                                           \
    do {                                                                                           \
        size_t in_mark_ = vc_push((c), (key));                                                     \
        stmt;                                                                                      \
        vc_pop((c), in_mark_);                                                                     \
    } while (0)

static const char *const resolutions[] = {"NONE", "STATIC", "DNS", "DNS_ROUND_ROBIN", NULL};

static void port_number(vc *c, const wf_node *at, int64_t n)
{
    const char *e = vc_check_port(c, n);
    if (e)
        vc_err(c, at, "%s", e);
}

static bool has_port_name(const wf_node *ports, const char *name)
{
    for (size_t i = 0; i < wf_seq_len(ports); i++) {
        if (strcmp(vc_str(wf_seq_at(ports, i), "name"), name) == 0)
            return true;
    }
    return false;
}

/* Endpoint ports: defined by the service entry, valid names and numbers. */
static void endpoint_ports(vc *c, const wf_node *we, const wf_node *service_ports)
{
    const wf_node *ports = vc_get(we, "ports");
    for (size_t i = 0; ports && ports->type == WF_NODE_MAP && i < ports->len; i++) {
        const wf_map_entry *e = &ports->u.entries[i];
        size_t mark = vc_push(c, "ports");
        vc_push_key(c, e->key);
        int64_t num = 0;
        vc_nint(e->value, &num);
        if (service_ports && !has_port_name(service_ports, e->key))
            vc_err(c, e->value, "endpoint port %lld is not defined by the service entry",
                   (long long)num);
        vc_port_name(c, e->value, e->key);
        port_number(c, e->value, num);
        vc_pop(c, mark);
    }
}

void vc_workloadentry_ex(vc *c, const wf_node *we, const wf_node *service_ports, bool allow_fqdn)
{
    const char *addr = vc_str(we, "address");
    const wf_node *at = vc_get(we, "address") ? vc_get(we, "address") : we;
    if (!*addr) {
        const char *network = vc_str(we, "network");
        if (!*network) {
            vc_err(c, we, "address is required");
            return;
        }
        vc_warn(c, we, "address is unset with network %s", vc_q(c, network));
    }
    bool unix_ep = false;
    if (strncmp(addr, "unix://", 7) == 0) {
        unix_ep = true;
        const char *e = vc_check_unix_address(c, addr + 7);
        if (e)
            vc_err(c, at, "%s", e);
        if (vc_mlen(we, "ports") != 0)
            vc_err(c, at, "unix endpoint %s must not include ports", addr);
    } else if (*addr && !vc_is_ip(addr)) {
        if (!allow_fqdn)
            vc_err(c, at, "endpoint address %s is not a valid IP address", vc_q(c, addr));
        else if (vc_check_fqdn(c, addr))
            vc_err(c, at, "endpoint address %s is not a valid FQDN or an IP address",
                   vc_q(c, addr));
    }
    endpoint_ports(c, we, service_ports);
    IN(c, "labels", vc_labels(c, vc_get(we, "labels")));
    if (unix_ep && service_ports && wf_seq_len(service_ports) != 1)
        vc_err(c, we, "exactly 1 service port required for unix endpoints");
}

void vc_workloadentry(vc *c, const wf_node *spec)
{
    vc_workloadentry_ex(c, spec, NULL, true);
}

static void probe(vc *c, const wf_node *p)
{
    if (!p)
        return;
    static const char *const fields[] = {"periodSeconds", "initialDelaySeconds", "timeoutSeconds",
                                         "successThreshold", "failureThreshold"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (vc_int(p, fields[i]) < 0)
            vc_err(c, p, "%s must be non-negative", fields[i]);
    }
    const wf_node *h;
    if ((h = vc_get(p, "httpGet"))) {
        port_number(c, h, vc_int(h, "port"));
        const char *scheme = vc_str(h, "scheme");
        if (*scheme && strcmp(scheme, "HTTPS") != 0 && strcmp(scheme, "HTTP") != 0)
            vc_err(c, h, "httpGet.scheme must be one of \"HTTPS\", \"HTTP\"");
        const wf_node *hdrs = vc_get(h, "httpHeaders");
        for (size_t i = 0; i < wf_seq_len(hdrs); i++) {
            const wf_node *hd = wf_seq_at(hdrs, i);
            if (!hd || hd->type == WF_NODE_NULL)
                vc_err(c, hd, "invalid nil header");
            else
                vc_http_header_name(c, hd, vc_str(hd, "name"));
        }
    } else if ((h = vc_get(p, "tcpSocket"))) {
        port_number(c, h, vc_int(h, "port"));
    } else if ((h = vc_get(p, "exec"))) {
        if (vc_len(h, "command") == 0)
            vc_err(c, h, "exec.command is required");
    } else if (!vc_has(p, "grpc")) {
        vc_err(c, p, "unknown health check method <nil>");
    }
}

typedef struct label_errs {
    vc *c;
    size_t n;
    const char *text;
} label_errs;

static void collect(const wf_resource *r, const wf_validation_issue *issue, void *arg)
{
    label_errs *le = arg;
    le->text = vc_fmt(le->c, "%s\n\t* %s", le->text, issue->message);
    le->n++;
}

void vc_workloadgroup(vc *c, const wf_node *spec)
{
    if (!vc_has(spec, "template")) {
        vc_err(c, spec, "template is required");
        return;
    }
    const wf_node *meta = vc_get(spec, "metadata");
    if (meta) {
        /* Istio wraps the label errors in one "invalid labels: <multierror>" error */
        label_errs le = {.c = c, .n = 0, .text = ""};
        wf_validation_cb cb = c->cb;
        void *arg = c->arg;
        int before = c->errors;
        c->cb = collect;
        c->arg = &le;
        size_t mark = vc_push(c, "metadata");
        vc_push(c, "labels");
        vc_labels(c, vc_get(meta, "labels"));
        vc_pop(c, mark);
        c->cb = cb;
        c->arg = arg;
        c->errors = before;
        if (le.n > 0) {
            IN(c, "metadata",
               vc_err(c, meta, "invalid labels: %zu error%s occurred:%s\n\n", le.n,
                      le.n == 1 ? "" : "s", le.text));
            return;
        }
    }
    IN(c, "probe", probe(c, vc_get(spec, "probe")));
}

static void se_hosts(vc *c, const wf_node *spec)
{
    const wf_node *hosts = vc_get(spec, "hosts");
    if (wf_seq_len(hosts) == 0)
        vc_err(c, spec, "service entry must have at least one host");
    for (size_t i = 0; i < wf_seq_len(hosts); i++) {
        const wf_node *h = wf_seq_at(hosts, i);
        const char *host = vc_nstr(h);
        size_t mark = vc_push(c, "hosts");
        vc_push_idx(c, i);
        if (strcmp(host, "*") == 0) {
            vc_err(c, h, "invalid host %s", host);
        } else {
            const char *e = vc_check_wildcard_domain(c, host);
            if (e)
                vc_err(c, h, "%s", e);
            e = vc_check_partial_wildcard(c, host);
            if (e)
                vc_warn(c, h, "%s", e);
        }
        vc_pop(c, mark);
    }
}

static void se_ports(vc *c, const wf_node *spec, const char *resolution)
{
    const wf_node *ports = vc_get(spec, "ports");
    bool auto_alloc = strcmp(resolution, "NONE") != 0 && vc_len(spec, "addresses") == 0;
    for (size_t i = 0; i < wf_seq_len(ports); i++) {
        size_t mark;
        const wf_node *p =
            vc_item(c, ports, "ports", i, "service entry port may not be null", &mark);
        if (!p)
            continue;
        const char *name = vc_str(p, "name"), *proto = vc_str(p, "protocol");
        int64_t num = vc_int(p, "number");
        for (size_t j = 0; j < i; j++) {
            if (strcmp(vc_str(wf_seq_at(ports, j), "name"), name) == 0) {
                vc_err(c, p, "service entry port name %s already defined", vc_q(c, name));
                break;
            }
        }
        for (size_t j = 0; j < i; j++) {
            if (vc_int(wf_seq_at(ports, j), "number") == num) {
                vc_err(c, p, "service entry port %lld already defined", (long long)num);
                break;
            }
        }
        if (vc_int(p, "targetPort") != 0)
            port_number(c, p, vc_int(p, "targetPort"));
        if (vc_len(spec, "addresses") == 0 && !auto_alloc && (!*proto || !strcmp(proto, "TCP")))
            vc_warn(c, p,
                    "addresses are required for ports serving TCP (or unset) protocol when "
                    "ISTIO_META_DNS_AUTO_ALLOCATE is not set on a proxy");
        vc_port_name(c, p, name);
        vc_validate_protocol(c, p, proto);
        port_number(c, p, num);
        vc_pop(c, mark);
    }
}

static void dns_endpoints(vc *c, const wf_node *spec, const char *resolution)
{
    const wf_node *eps = vc_get(spec, "endpoints"), *hosts = vc_get(spec, "hosts");
    if (wf_seq_len(eps) == 0) {
        for (size_t i = 0; i < wf_seq_len(hosts); i++) {
            if (vc_check_fqdn(c, vc_nstr(wf_seq_at(hosts, i))))
                vc_err(c, wf_seq_at(hosts, i),
                       "hosts must be FQDN if no endpoints are provided for resolution mode %s",
                       resolution);
        }
    }
    if (strcmp(resolution, "DNS_ROUND_ROBIN") == 0 && wf_seq_len(eps) > 1)
        vc_err(c, eps, "there must only be 0 or 1 endpoint for resolution mode %s", resolution);
    const wf_node *ports = vc_get(spec, "ports");
    for (size_t i = 0; i < wf_seq_len(eps); i++) {
        size_t mark;
        const wf_node *ep = vc_item(c, eps, "endpoints", i, "endpoint cannot be nil", &mark);
        if (!ep)
            continue;
        const char *addr = vc_str(ep, "address");
        if (!vc_is_ip(addr) && vc_check_fqdn(c, addr))
            vc_err(c, ep, "endpoint address %s is not a valid FQDN or an IP address",
                   vc_q(c, addr));
        IN(c, "labels", vc_labels(c, vc_get(ep, "labels")));
        endpoint_ports(c, ep, ports ? ports : ep);
        vc_pop(c, mark);
    }
    if (vc_has(spec, "workloadSelector"))
        vc_warn(c, spec, "workloadSelector should not be set when resolution mode is %s",
                resolution);
    if (vc_len(spec, "addresses") > 0 && wf_seq_len(hosts) > 1) {
        for (size_t i = 0; i < wf_seq_len(ports); i++) {
            const wf_node *p = wf_seq_at(ports, i);
            if (!p || p->type == WF_NODE_NULL) {
                vc_err(c, ports, "ports cannot be nil");
                continue;
            }
            if (vc_proto_is_tcp(vc_protocol(vc_str(p, "protocol")))) {
                vc_warn(c, p,
                        "service entry can not have more than one host specified "
                        "simultaneously with address and tcp port");
                break;
            }
        }
    }
}

static void resolution_rules(vc *c, const wf_node *spec, const char *resolution)
{
    const wf_node *eps = vc_get(spec, "endpoints");
    if (!strcmp(resolution, "NONE")) {
        if (wf_seq_len(eps) != 0)
            vc_err(c, eps, "no endpoints should be provided for resolution type none");
        if (vc_has(spec, "workloadSelector"))
            vc_warn(c, spec, "workloadSelector should not be set when resolution mode is NONE");
    } else if (!strcmp(resolution, "STATIC")) {
        for (size_t i = 0; i < wf_seq_len(eps); i++) {
            const wf_node *ep = wf_seq_at(eps, i);
            size_t mark = vc_push(c, "endpoints");
            vc_push_idx(c, i);
            if (!ep || ep->type == WF_NODE_NULL)
                vc_err(c, ep, "endpoint cannot be nil");
            else
                vc_workloadentry_ex(c, ep, vc_get(spec, "ports") ? vc_get(spec, "ports") : ep,
                                    false);
            vc_pop(c, mark);
        }
    } else if (!strcmp(resolution, "DNS") || !strcmp(resolution, "DNS_ROUND_ROBIN")) {
        dns_endpoints(c, spec, resolution);
    } else {
        vc_err(c, spec, "unsupported resolution type %s", resolution);
    }
}

void vc_serviceentry(vc *c, const wf_node *spec)
{
    bool failed = false;
    bool no_labels = vc_alpha_workload_selector(c, spec, &failed);
    if (failed)
        return;
    if (no_labels)
        IN(c, "workloadSelector",
           vc_warn(c, vc_get(spec, "workloadSelector"),
                   "service entry: workload selector specified without labels, will be applied to "
                   "all services in namespace"));
    if (vc_has(spec, "workloadSelector") && vc_has(spec, "endpoints"))
        vc_err(c, spec, "only one of WorkloadSelector or Endpoints is allowed in Service Entry");
    se_hosts(c, spec);
    const wf_node *addrs = vc_get(spec, "addresses");
    bool cidr = false;
    const char *resolution = vc_enum(spec, "resolution", resolutions);
    for (size_t i = 0; i < wf_seq_len(addrs); i++) {
        const char *a = vc_nstr(wf_seq_at(addrs, i));
        cidr |= strchr(a, '/') != NULL;
        const char *e = vc_check_ip_subnet(c, a);
        if (e)
            IN(c, "addresses", vc_err(c, wf_seq_at(addrs, i), "%s", e));
    }
    if (cidr && strcmp(resolution, "NONE") != 0 && strcmp(resolution, "STATIC") != 0)
        vc_err(c, addrs, "CIDR addresses are allowed only for NONE/STATIC resolution types");
    se_ports(c, spec, resolution);
    resolution_rules(c, spec, resolution);
    const wf_node *ports = vc_get(spec, "ports");
    if (strcmp(resolution, "NONE") != 0 && vc_len(spec, "hosts") > 1) {
        for (size_t i = 0; i < wf_seq_len(ports); i++) {
            const wf_node *p = wf_seq_at(ports, i);
            if (!p || p->type == WF_NODE_NULL) {
                vc_err(c, ports, "ports cannot be nil");
                continue;
            }
            const char *proto = vc_protocol(vc_str(p, "protocol"));
            if (!vc_proto_is_http(proto) && !vc_proto_is_tls(proto)) {
                vc_err(c, p, "multiple hosts provided with non-HTTP, non-TLS ports");
                break;
            }
        }
    }
    vc_export_to(c, spec, true, false);
}
