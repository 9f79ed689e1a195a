/*
 * validate_dr.c - DestinationRule and traffic policy validation.
 *
 * Follows istio/istio pkg/config/validation/validation.go (ValidateDestinationRule,
 * validateTrafficPolicy, validateOutlierDetection, validateConnectionPool,
 * validateLoadBalancer, isPrime, validateSubset, validatePortTrafficPolicies,
 * validateTunnelSettings, validateProxyProtocol) and pkg/config/validation/agent
 * (ValidateTLS, ValidateLocalityLbSetting, validateLocalities).
 */
#include "model/validate_internal.h"

#include <math.h>
#include <string.h>

#define IN(c, key, stmt)                                                                           \
    do {                                                                                           \
        size_t in_mark_ = vc_push((c), (key));                                                     \
        stmt;                                                                                      \
        vc_pop((c), in_mark_);                                                                     \
    } while (0)

static void percent(vc *c, const wf_node *m, const char *key)
{
    int64_t v = vc_int(m, key);
    if (v < 0 || v > 100)
        IN(c, key,
           vc_err(c, vc_get(m, key), "percentage %lld is not in range 0..100", (long long)v));
}

static void outlier_detection(vc *c, const wf_node *o)
{
    if (!o)
        return;
    vc_duration(c, o, "baseEjectionTime");
    if (vc_int(o, "consecutiveErrors") != 0)
        IN(c, "consecutiveErrors",
           vc_warn(c, vc_get(o, "consecutiveErrors"),
                   "outlier detection consecutive errors is deprecated, use "
                   "consecutiveGatewayErrors or consecutive5xxErrors instead"));
    if (!vc_bool(o, "splitExternalLocalOriginErrors") &&
        vc_int(o, "consecutiveLocalOriginFailures") > 0)
        vc_err(c, o,
               "outlier detection consecutive local origin failures is specified, but split "
               "external local origin errors is set to false");
    vc_duration(c, o, "interval");
    percent(c, o, "maxEjectionPercent");
    percent(c, o, "minHealthPercent");
}

static void non_negative(vc *c, const wf_node *m, const char *key, const char *msg)
{
    if (vc_int(m, key) < 0)
        IN(c, key, vc_err(c, vc_get(m, key), "%s", msg));
}

void vc_connection_pool(vc *c, const wf_node *cp)
{
    if (!cp)
        return;
    const wf_node *http = vc_get(cp, "http"), *tcp = vc_get(cp, "tcp");
    if (!http && !tcp) {
        vc_err(c, cp, "connection pool must have at least one field");
        return;
    }
    if (http) {
        size_t mark = vc_push(c, "http");
        non_negative(c, http, "http1MaxPendingRequests",
                     "http1 max pending requests must be non-negative");
        non_negative(c, http, "http2MaxRequests", "http2 max requests must be non-negative");
        non_negative(c, http, "maxRequestsPerConnection",
                     "max requests per connection must be non-negative");
        non_negative(c, http, "maxRetries", "max retries must be non-negative");
        vc_duration(c, http, "idleTimeout");
        static const char *const h2[] = {"DEFAULT", "DO_NOT_UPGRADE", "UPGRADE", NULL};
        if (strcmp(vc_enum(http, "h2UpgradePolicy", h2), "UPGRADE") == 0 &&
            vc_bool(http, "useClientProtocol"))
            vc_err(c, http, "use client protocol must not be true when H2UpgradePolicy is UPGRADE");
        non_negative(c, http, "maxConcurrentStreams",
                     "max concurrent streams must be non-negative");
        vc_pop(c, mark);
    }
    if (tcp) {
        size_t mark = vc_push(c, "tcp");
        non_negative(c, tcp, "maxConnections", "max connections must be non-negative");
        vc_duration(c, tcp, "connectTimeout");
        vc_duration(c, tcp, "maxConnectionDuration");
        vc_duration(c, tcp, "idleTimeout");
        const wf_node *ka = vc_get(tcp, "tcpKeepalive");
        if (ka) {
            IN(c, "tcpKeepalive", vc_duration(c, ka, "time"));
            IN(c, "tcpKeepalive", vc_duration(c, ka, "interval"));
        }
        vc_pop(c, mark);
    }
}

/* Envoy's isPrime (source/common/common/utility.cc), as Istio copies it. */
static bool is_prime(uint64_t x)
{
    if (x != 0 && x < 4)
        return true;
    if ((x & 1) == 0)
        return false;
    uint64_t limit = (uint64_t)sqrt((double)x);
    for (uint64_t f = 3; f <= limit; f += 2) {
        if (x % f == 0)
            return false;
    }
    return true;
}

/* ---- locality load balancing ---- */

typedef struct loc {
    const char *region, *zone, *subzone;
} loc;

static bool loc_any(const loc *set, size_t n, const char *region, const char *zone,
                    const char *subzone)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(set[i].region, region) != 0)
            continue;
        if (zone && strcmp(set[i].zone, zone) != 0)
            continue;
        if (subzone && strcmp(set[i].subzone, subzone) != 0)
            continue;
        return true;
    }
    return false;
}

/* validateLocalities: the first problem, or NULL. */
static const char *localities(vc *c, const char *const *list, size_t n)
{
    loc *set = wf_arena_alloc(&c->scratch, (n + 1) * sizeof(*set));
    if (!set)
        return NULL;
    size_t nset = 0;
    for (size_t i = 0; i < n; i++) {
        const char *l = list[i];
        size_t stars = 0;
        for (const char *p = l; *p; p++)
            stars += *p == '*';
        size_t len = strlen(l);
        if (stars > 0 && (stars > 1 || l[len - 1] != '*'))
            return vc_fmt(
                c, "locality %s wildcard '*' number can not exceed 1 and must be in the end", l);
        if (loc_any(set, nset, "*", NULL, NULL))
            return vc_fmt(c, "locality %s overlap with previous specified ones", l);
        const char *parts[3] = {"", "", ""};
        size_t np = 0;
        const char *p = l;
        for (; np < 3; np++) {
            const char *slash = np < 2 ? strchr(p, '/') : NULL;
            size_t plen = slash ? (size_t)(slash - p) : strlen(p);
            if (plen == 0)
                return vc_fmt(c, "locality %s must not contain empty region/zone/subzone info", l);
            parts[np] = vc_fmt(c, "%.*s", (int)plen, p);
            if (!slash) {
                np++;
                break;
            }
            p = slash + 1;
        }
        const char *r = parts[0], *z = parts[1], *s = parts[2];
        bool overlap = false;
        if (np == 1) {
            overlap = loc_any(set, nset, r, NULL, NULL);
            set[nset++] = (loc){r, "*", "*"};
        } else if (np == 2) {
            overlap = loc_any(set, nset, r, "*", NULL) || loc_any(set, nset, r, z, NULL);
            set[nset++] = (loc){r, z, "*"};
        } else {
            overlap = loc_any(set, nset, r, "*", NULL) || loc_any(set, nset, r, z, "*") ||
                      loc_any(set, nset, r, z, s);
            set[nset++] = (loc){r, z, s};
        }
        if (overlap)
            return vc_fmt(c, "locality %s overlap with previous specified ones", l);
    }
    return NULL;
}

static void locality_lb(vc *c, const wf_node *lb, const wf_node *outlier)
{
    if (!lb)
        return;
    const wf_node *dist = vc_get(lb, "distribute"), *fo = vc_get(lb, "failover");
    const wf_node *fp = vc_get(lb, "failoverPriority");
    if (wf_seq_len(dist) > 0 && wf_seq_len(fo) > 0) {
        vc_err(c, lb, "can not simultaneously specify 'distribute' and 'failover'");
        return;
    }
    for (size_t i = 0; wf_seq_len(fo) > 0 && i < wf_seq_len(fp); i++) {
        const char *label = vc_nstr(wf_seq_at(fp, i));
        if (!strcmp(label, "topology.kubernetes.io/region") ||
            !strcmp(label, "topology.kubernetes.io/zone") ||
            !strcmp(label, "topology.istio.io/subzone")) {
            vc_err(c, lb,
                   "can not simultaneously set 'failover' and topology label '%s' in "
                   "'failover_priority'",
                   label);
            return;
        }
    }
    size_t nd = wf_seq_len(dist);
    const char **src = wf_arena_alloc(&c->scratch, (nd + 1) * sizeof(*src));
    if (!src)
        return;
    for (size_t i = 0; i < nd; i++) {
        const wf_node *d = wf_seq_at(dist, i);
        src[i] = vc_str(d, "from");
        const wf_node *to = vc_get(d, "to");
        size_t nto = to && to->type == WF_NODE_MAP ? to->len : 0;
        const char **dst = wf_arena_alloc(&c->scratch, (nto + 1) * sizeof(*dst));
        if (!dst)
            return;
        int64_t total = 0;
        for (size_t j = 0; j < nto; j++) {
            dst[j] = to->u.entries[j].key;
            int64_t w = 0;
            vc_nint(to->u.entries[j].value, &w);
            if (w <= 0 || w > 100) {
                vc_err(c, to, "locality weight must be in range [1, 100]");
                return;
            }
            total += w;
        }
        if (total != 100) {
            vc_err(c, d, "total locality weight %lld != 100", (long long)total);
            return;
        }
        const char *e = localities(c, dst, nto);
        if (e)
            vc_err(c, d, "%s", e);
    }
    const char *e = localities(c, src, nd);
    if (e)
        vc_err(c, lb, "%s", e);
    if ((wf_seq_len(fo) != 0 || wf_seq_len(fp) != 0) && !outlier)
        vc_warn(c, lb, "outlier detection policy must be provided for failover");
    for (size_t i = 0; i < wf_seq_len(fo); i++) {
        const wf_node *f = wf_seq_at(fo, i);
        const char *from = vc_str(f, "from"), *to = vc_str(f, "to");
        if (strcmp(from, to) == 0)
            vc_err(c, f, "locality lb failover settings must specify different regions");
        if (strchr(from, '/') || strchr(to, '/'))
            vc_err(c, f, "locality lb failover only specify region");
        if (strchr(to, '*') || strchr(from, '*'))
            vc_err(c, f, "locality lb failover region should not contain '*' wildcard");
    }
}

static void load_balancer(vc *c, const wf_node *lb, const wf_node *outlier)
{
    if (!lb)
        return;
    const wf_node *ch = vc_get(lb, "consistentHash");
    if (ch) {
        size_t mark = vc_push(c, "consistentHash");
        const wf_node *cookie = vc_get(ch, "httpCookie");
        if (cookie && !*vc_str(cookie, "name"))
            vc_err(c, cookie, "name required for HttpCookie");
        int64_t min_ring = vc_int(ch, "minimumRingSize");
        if (min_ring != 0)
            vc_warn(c, ch,
                    "consistent hash MinimumRingSize is deprecated, use ConsistentHashLB's "
                    "RingHash configuration instead");
        if (min_ring != 0 && (vc_has(ch, "ringHash") || vc_has(ch, "maglev")))
            vc_err(c, ch, "only one of MinimumRingSize or Maglev/Ringhash can be specified");
        const wf_node *ml = vc_get(ch, "maglev");
        if (ml) {
            int64_t ts = vc_int(ml, "tableSize");
            if (ts == 0)
                vc_err(c, ml, "tableSize must be set for maglev");
            if (ts >= 5000011)
                vc_err(c, ml, "tableSize must be less than 5000011 for maglev");
            if (!is_prime((uint64_t)ts))
                vc_err(c, ml, "tableSize must be a prime number for maglev");
        }
        vc_pop(c, mark);
    }
    IN(c, "localityLbSetting", locality_lb(c, vc_get(lb, "localityLbSetting"), outlier));
    vc_duration(c, lb, "warmupDurationSecs");
}

static void client_tls(vc *c, const wf_node *tls)
{
    if (!tls)
        return;
    static const char *const modes[] = {"DISABLE", "SIMPLE", "MUTUAL", "ISTIO_MUTUAL", NULL};
    const char *mode = vc_enum(tls, "mode", modes);
    bool simple = !strcmp(mode, "SIMPLE"), mutual = !strcmp(mode, "MUTUAL");
    bool ca = *vc_str(tls, "caCertificates"), cred = *vc_str(tls, "credentialName");
    bool sans = vc_has(tls, "subjectAltNames");
    if (vc_bool(tls, "insecureSkipVerify")) {
        if (simple && (ca || cred || sans))
            vc_err(c, tls,
                   "cannot specify CaCertificates or CredentialName or SubjectAltNames when "
                   "InsecureSkipVerify is set true");
        if (mutual && (ca || sans))
            vc_err(c, tls,
                   "cannot specify CaCertificates or SubjectAltNames when "
                   "InsecureSkipVerify is set true");
    }
    bool cert = *vc_str(tls, "clientCertificate"), key = *vc_str(tls, "privateKey");
    if ((simple || mutual) && cred) {
        if (cert || ca || key || *vc_str(tls, "caCrl"))
            vc_err(c, tls,
                   "cannot specify client certificates or CA certificate or CA CRL If "
                   "credentialName is set");
        return;
    }
    if (mutual) {
        if (!cert)
            vc_err(c, tls, "client certificate required for mutual tls");
        if (!key)
            vc_err(c, tls, "private key required for mutual tls");
    }
}

static void port_policies(vc *c, const wf_node *seq)
{
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        size_t mark;
        const wf_node *t =
            vc_item(c, seq, "portLevelSettings", i, "traffic policy may not be null", &mark);
        if (!t)
            continue;
        if (!vc_has(t, "port"))
            vc_err(c, t, "portTrafficPolicy must have valid port");
        const wf_node *od = vc_get(t, "outlierDetection");
        if (!od && !vc_has(t, "connectionPool") && !vc_has(t, "loadBalancer") &&
            !vc_has(t, "tls")) {
            vc_err(c, t, "port traffic policy must have at least one field");
        } else {
            IN(c, "outlierDetection", outlier_detection(c, od));
            IN(c, "connectionPool", vc_connection_pool(c, vc_get(t, "connectionPool")));
            IN(c, "loadBalancer", load_balancer(c, vc_get(t, "loadBalancer"), od));
            IN(c, "tls", client_tls(c, vc_get(t, "tls")));
        }
        vc_pop(c, mark);
    }
}

static void tunnel(vc *c, const wf_node *t)
{
    if (!t)
        return;
    const char *proto = vc_str(t, "protocol");
    if (*proto && strcmp(proto, "CONNECT") != 0 && strcmp(proto, "POST") != 0)
        vc_err(c, t, "tunnel protocol must be \"CONNECT\" or \"POST\"");
    const char *host = vc_str(t, "targetHost");
    const char *fqdn_err = vc_check_fqdn(c, host);
    if (fqdn_err && !vc_is_ip(host))
        vc_err(c, t,
               "tunnel target host must be valid FQDN or IP address: %s; %s is not a valid IP",
               fqdn_err, host);
    const char *pe = vc_check_port(c, vc_int(t, "targetPort"));
    if (pe)
        vc_err(c, t, "tunnel target port is invalid: %s", pe);
}

void vc_traffic_policy(vc *c, const wf_node *tp)
{
    if (!tp)
        return;
    static const char *const fields[] = {
        "outlierDetection",  "connectionPool", "loadBalancer",  "tls",
        "portLevelSettings", "tunnel",         "proxyProtocol", "retryBudget"};
    bool any = false;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        any |= vc_has(tp, fields[i]);
    if (!any) {
        vc_err(c, tp, "traffic policy must have at least one field");
        return;
    }
    if (vc_has(tp, "tunnel") && vc_has(tp, "proxyProtocol")) {
        vc_err(c, tp, "tunnel and proxyProtocol must not be set together");
        return;
    }
    const wf_node *od = vc_get(tp, "outlierDetection");
    IN(c, "outlierDetection", outlier_detection(c, od));
    IN(c, "connectionPool", vc_connection_pool(c, vc_get(tp, "connectionPool")));
    IN(c, "loadBalancer", load_balancer(c, vc_get(tp, "loadBalancer"), od));
    IN(c, "tls", client_tls(c, vc_get(tp, "tls")));
    port_policies(c, vc_get(tp, "portLevelSettings"));
    IN(c, "tunnel", tunnel(c, vc_get(tp, "tunnel")));
}

static void subsets(vc *c, const wf_node *seq)
{
    size_t n = wf_seq_len(seq);
    for (size_t i = 0; i < n; i++) {
        size_t mark;
        const wf_node *s = vc_item(c, seq, "subsets", i, "subset may not be null", &mark);
        if (!s)
            continue;
        const char *name = vc_str(s, "name");
        for (size_t j = 0; j < i; j++) {
            if (strcmp(vc_str(wf_seq_at(seq, j), "name"), name) == 0) {
                vc_err(c, s, "duplicate subset names: %s", name);
                break;
            }
        }
        IN(c, "name", vc_subset_name(c, vc_get(s, "name") ? vc_get(s, "name") : s, name));
        IN(c, "labels", vc_labels(c, vc_get(s, "labels")));
        IN(c, "trafficPolicy", vc_traffic_policy(c, vc_get(s, "trafficPolicy")));
        vc_pop(c, mark);
    }
}

void vc_destinationrule(vc *c, const wf_node *spec)
{
    const char *host = vc_str(spec, "host");
    const char *e = vc_check_wildcard_domain(c, host);
    if (e)
        IN(c, "host", vc_err(c, vc_get(spec, "host") ? vc_get(spec, "host") : spec, "%s", e));
    IN(c, "trafficPolicy", vc_traffic_policy(c, vc_get(spec, "trafficPolicy")));
    subsets(c, vc_get(spec, "subsets"));
    vc_export_to(c, spec, false, vc_has(spec, "workloadSelector"));
    vc_workload_selector(c, spec, "workloadSelector");
}
