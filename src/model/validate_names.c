/*
 * validate_names.c - host names, labels, addresses, ports and protocols as Istio checks them.
 *
 * Follows istio/istio pkg/config/labels (IsDNS1123Label, IsWildcardDNS1123Label,
 * Instance.Validate), pkg/config/validation/agent (ValidateFQDN, ValidateWildcardDomain,
 * ValidateNamespaceSlashWildcardHostname, ValidateIPSubnet, ValidatePort), pkg/config/host
 * (Name.Matches, Name.SubsetOf) and pkg/config/protocol (Parse).
 */
#include "model/validate_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DNS1123_LABEL_MAX 63

static bool is_alnum(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* [a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])? over s[0..n) */
static bool label_n(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        if (!is_alnum(s[i]) && s[i] != '-')
            return false;
    }
    return true;
}

bool vc_is_dns1123_label(const char *s)
{
    size_t n = strlen(s);
    return n <= DNS1123_LABEL_MAX && label_n(s, n);
}

bool wf_is_dns1123_label(const char *s)
{
    return s && vc_is_dns1123_label(s);
}

bool vc_is_wildcard_dns1123_label(const char *s)
{
    size_t n = strlen(s);
    if (n > DNS1123_LABEL_MAX)
        return false;
    if (strcmp(s, "*") == 0)
        return true;
    if (s[0] == '*' && s[1] == '-')
        return label_n(s + 2, n - 2);
    if (s[0] == '*')
        return label_n(s + 1, n - 1);
    return label_n(s, n);
}

static const char *dns1123_preconditions(vc *c, const char *name)
{
    if (strlen(name) > 255)
        return vc_fmt(c, "domain name %s too long (max 255)", vc_q(c, name));
    if (!*name)
        return "empty domain name not allowed";
    return NULL;
}

/* strconv.Atoi succeeds: optional sign then decimal digits. */
static bool go_atoi_ok(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return false;
    }
    return true;
}

static const char *dns1123_labels(vc *c, const char *domain)
{
    const char *last = strrchr(domain, '.');
    const char *tld = last ? last + 1 : domain;
    if (go_atoi_ok(tld))
        return vc_fmt(c, "domain name %s invalid (top level domain %s cannot be all-numeric)",
                      vc_q(c, domain), vc_q(c, tld));
    const char *p = domain;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!dot && n == 0)
            return NULL; /* trailing dot: "istio.io." */
        if (n > DNS1123_LABEL_MAX || !label_n(p, n)) {
            const char *label = vc_fmt(c, "%.*s", (int)n, p);
            return vc_fmt(c, "domain name %s invalid (label %s invalid)", vc_q(c, domain),
                          vc_q(c, label));
        }
        if (!dot)
            return NULL;
        p = dot + 1;
    }
}

const char *vc_check_fqdn(vc *c, const char *s)
{
    const char *e = dns1123_preconditions(c, s);
    return e ? e : dns1123_labels(c, s);
}

const char *vc_check_wildcard_domain(vc *c, const char *s)
{
    const char *e = dns1123_preconditions(c, s);
    if (e)
        return e;
    const char *dot = strchr(s, '.');
    const char *first = dot ? vc_fmt(c, "%.*s", (int)(dot - s), s) : s;
    if (!vc_is_wildcard_dns1123_label(first))
        return vc_fmt(c, "domain name %s invalid (label %s invalid)", vc_q(c, s), vc_q(c, first));
    return dot ? dns1123_labels(c, dot + 1) : NULL;
}

const char *vc_check_wildcard_domain_gw_vs(vc *c, bool sni, const char *s)
{
    const char *e = dns1123_preconditions(c, s);
    if (e)
        return e;
    const char *dot = strchr(s, '.');
    const char *first = dot ? vc_fmt(c, "%.*s", (int)(dot - s), s) : s;
    if (sni && strcmp(first, "outbound_") == 0) {
        /* regexp "outbound_.([0-8].*).*" (unanchored) */
        const char *m = strstr(s, "outbound_");
        bool ok = false;
        for (; m && !ok; m = strstr(m + 1, "outbound_")) {
            const char *after = m + strlen("outbound_");
            ok = after[0] && after[1] >= '0' && after[1] <= '8';
        }
        if (!ok)
            return vc_fmt(c, "domain name %s invalid (label %s invalid)", vc_q(c, s),
                          vc_q(c, first));
        return NULL;
    }
    if (!vc_is_wildcard_dns1123_label(first))
        return vc_fmt(c, "domain name %s invalid (label %s invalid)", vc_q(c, s), vc_q(c, first));
    return dot ? dns1123_labels(c, dot + 1) : NULL;
}

const char *vc_check_partial_wildcard(vc *c, const char *s)
{
    if (strchr(s, '*') && strlen(s) != 1 && strncmp(s, "*.", 2) != 0)
        return vc_fmt(c, "partial wildcard %s not allowed", vc_q(c, s));
    return NULL;
}

static void sidecar_or_gateway_host_part(vc *c, const wf_node *at, const char *host,
                                         bool is_gateway)
{
    if (strcmp(host, "*") != 0 && !strchr(host, '.'))
        vc_err(c, at, "short names (non FQDN) are not allowed");
    const char *e = vc_check_wildcard_domain(c, host);
    if (e) {
        if (!is_gateway)
            vc_err(c, at, "%s", e);
        if (!vc_is_ip(host))
            vc_err(c, at, "%s", e);
    }
    e = vc_check_partial_wildcard(c, host);
    if (e)
        vc_err(c, at, "%s", e);
}

void vc_namespace_slash_host(vc *c, const wf_node *at, const char *host, bool is_gateway)
{
    const char *slash = strchr(host, '/');
    if (!slash) {
        if (is_gateway)
            sidecar_or_gateway_host_part(c, at, host, true);
        else
            vc_err(c, at, "host must be of form namespace/dnsName");
        return;
    }
    const char *ns = vc_fmt(c, "%.*s", (int)(slash - host), host);
    const char *name = slash + 1;
    if (!*ns || !*name)
        vc_err(c, at, "config namespace and dnsName in host entry cannot be empty");
    bool special = strcmp(ns, "*") == 0 || strcmp(ns, ".") == 0;
    if (!is_gateway && !special && strcmp(ns, "~") != 0 && !vc_is_dns1123_label(ns))
        vc_err(c, at, "invalid namespace value %s in sidecar", vc_q(c, ns));
    if (is_gateway && !special && !vc_is_dns1123_label(ns))
        vc_err(c, at, "invalid namespace value %s in gateway", vc_q(c, ns));
    sidecar_or_gateway_host_part(c, at, name, is_gateway);
}

/* netip.ParseAddr: dotted-quad IPv4 without leading zeros, or IPv6 with an optional zone. */
bool vc_is_ip(const char *s)
{
    unsigned char buf[16];
    if (!*s)
        return false;
    if (!strchr(s, ':'))
        return inet_pton(AF_INET, s, buf) == 1;
    const char *pct = strchr(s, '%');
    if (pct) {
        char tmp[64];
        size_t n = (size_t)(pct - s);
        if (n >= sizeof(tmp) || !pct[1])
            return false;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        return inet_pton(AF_INET6, tmp, buf) == 1;
    }
    return inet_pton(AF_INET6, s, buf) == 1;
}

/* netip.ParsePrefix: address (no zone) "/" decimal bits within the family's range. */
bool vc_is_cidr(const char *s)
{
    const char *slash = strrchr(s, '/');
    if (!slash)
        return false;
    char addr[64];
    size_t n = (size_t)(slash - s);
    if (n == 0 || n >= sizeof(addr))
        return false;
    memcpy(addr, s, n);
    addr[n] = '\0';
    if (strchr(addr, '%') || !vc_is_ip(addr))
        return false;
    const char *b = slash + 1;
    if (!*b || strlen(b) > 3 || (b[0] == '0' && b[1]))
        return false;
    for (const char *p = b; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return false;
    }
    int bits = atoi(b);
    return bits <= (strchr(addr, ':') ? 128 : 32);
}

const char *vc_check_ip_subnet(vc *c, const char *s)
{
    size_t slashes = 0;
    for (const char *p = s; *p; p++)
        slashes += *p == '/';
    if (slashes == 1)
        return vc_is_cidr(s) ? NULL : vc_fmt(c, "%s is not a valid CIDR block", s);
    return vc_is_ip(s) ? NULL : vc_fmt(c, "%s is not a valid IP", s);
}

const char *vc_check_port(vc *c, int64_t port)
{
    if (port >= 1 && port <= 65535)
        return NULL;
    return vc_fmt(c, "port number %lld must be in the range 1..65535", (long long)port);
}

/* qualifiedNameFmt: (?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n) */
static bool qualified_name_n(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    }
    return true;
}

/* dnsNamePrefixFmt without the slash: label(\.label)* */
static bool dns_prefix_n(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!label_n(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

static const char *tag_key_error(vc *c, const char *k)
{
    const char *slash = strchr(k, '/');
    const char *name = slash ? slash + 1 : k;
    if (slash && (!dns_prefix_n(k, (size_t)(slash - k)) || strchr(name, '/')))
        return vc_fmt(c, "invalid tag key: %s", vc_q(c, k));
    if (!qualified_name_n(name, strlen(name)))
        return vc_fmt(c, "invalid tag key: %s", vc_q(c, k));
    if (slash && (size_t)(slash - k) > 253)
        return vc_fmt(c, "invalid tag key: %s (DNS prefix is too long)", vc_q(c, k));
    if (strlen(name) > DNS1123_LABEL_MAX)
        return vc_fmt(c, "invalid tag key: %s (name is too long)", vc_q(c, k));
    return NULL;
}

void vc_labels(vc *c, const wf_node *map)
{
    if (!map || map->type != WF_NODE_MAP)
        return;
    for (size_t i = 0; i < map->len; i++) {
        const wf_map_entry *e = &map->u.entries[i];
        size_t mark = vc_push_key(c, e->key);
        const char *err = tag_key_error(c, e->key);
        if (err)
            vc_err(c, e->value, "%s", err);
        const char *v = vc_nstr(e->value);
        if (*v && !qualified_name_n(v, strlen(v)))
            vc_err(c, e->value, "invalid tag value: %s", vc_q(c, v));
        vc_pop(c, mark);
    }
}

void vc_port_name(vc *c, const wf_node *at, const char *name)
{
    if (!vc_is_dns1123_label(name))
        vc_err(c, at, "invalid port name: %s", name);
}

const char *vc_protocol(const char *s)
{
    static const char *const names[] = {"TCP",   "UDP",   "GRPC", "GRPC-Web", "HTTP",  "HTTP_PROXY",
                                        "HTTP2", "HTTPS", "TLS",  "Mongo",    "Redis", "MySQL"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i]) == 0)
            return names[i];
    }
    return "";
}

bool vc_proto_is_http(const char *p)
{
    return !strcmp(p, "HTTP") || !strcmp(p, "HTTP2") || !strcmp(p, "HTTP_PROXY") ||
           !strcmp(p, "GRPC") || !strcmp(p, "GRPC-Web");
}

bool vc_proto_is_tls(const char *p)
{
    return !strcmp(p, "HTTPS") || !strcmp(p, "TLS");
}

bool vc_proto_is_tcp(const char *p)
{
    return !strcmp(p, "TCP") || !strcmp(p, "HTTPS") || !strcmp(p, "TLS") || !strcmp(p, "Mongo") ||
           !strcmp(p, "Redis") || !strcmp(p, "MySQL");
}

void vc_validate_protocol(vc *c, const wf_node *at, const char *proto)
{
    if (*proto && !*vc_protocol(proto))
        vc_err(c, at, "unsupported protocol: %s", proto);
}

const char *vc_check_unix_address(vc *c, const char *addr)
{
    if (!*addr)
        return "unix address must not be empty";
    if (addr[0] == '@')
        return NULL;
    size_t n = strlen(addr);
    if (addr[0] != '/' || addr[n - 1] == '/')
        return vc_fmt(c, "%s is not an absolute path to a file", addr);
    return NULL;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return m <= n && strcmp(s + n - m, suffix) == 0;
}

bool vc_host_matches(const char *a, const char *b)
{
    bool aw = a[0] == '*', bw = b[0] == '*';
    if (aw && bw)
        return strlen(a) < strlen(b) ? has_suffix(b + 1, a + 1) : has_suffix(a + 1, b + 1);
    if (aw)
        return has_suffix(b, a + 1);
    if (bw)
        return has_suffix(a, b + 1);
    return strcmp(a, b) == 0;
}

bool vc_host_subset_of(const char *a, const char *b)
{
    bool aw = a[0] == '*', bw = b[0] == '*';
    if (aw)
        return bw && strlen(a) >= strlen(b) && has_suffix(a + 1, b + 1);
    if (bw)
        return has_suffix(a, b + 1);
    return strcmp(a, b) == 0;
}
