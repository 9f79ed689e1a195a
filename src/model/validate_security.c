/*
 * validate_security.c - PeerAuthentication, AuthorizationPolicy, RequestAuthentication.
 *
 * Follows istio/istio pkg/config/validation/validation.go (ValidatePeerAuthentication,
 * ValidateAuthorizationPolicy, ValidateRequestAuthentication, validateJwtRule) and
 * pkg/config/security/security.go (ValidateIPs, ValidatePorts, CheckEmptyValues,
 * CheckValidPathTemplate, ValidateAttribute, ParseJwksURI). AuthorizationPolicy errors carry
 * Istio's prefix "invalid policy <name>.<namespace>: ".
 */
#include "model/validate_internal.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define IN(c, key, stmt)                                                                           \
    do {                                                                                           \
        size_t in_mark_ = vc_push((c), (key));                                                     \
        stmt;                                                                                      \
        vc_pop((c), in_mark_);                                                                     \
    } while (0)

/* ---- PeerAuthentication ---- */

void vc_peerauthentication(vc *c, const wf_node *spec)
{
    const wf_node *sel = vc_get(spec, "selector");
    bool empty_selector = !sel || vc_mlen(sel, "matchLabels") == 0;
    const wf_node *plm = vc_get(spec, "portLevelMtls");
    size_t n = plm && plm->type == WF_NODE_MAP ? plm->len : 0;
    size_t mark = vc_push(c, "portLevelMtls");
    if (empty_selector && n != 0)
        vc_err(c, plm, "mesh/namespace peer authentication cannot have port level mTLS");
    if (plm && n == 0)
        vc_err(c, plm, "port level mTLS, if defined, must have at least one element");
    vc_pop(c, mark);
    for (size_t i = 0; i < n; i++) {
        long long port = strtoll(plm->u.entries[i].key, NULL, 10);
        if (port <= 0 || port > 65535)
            IN(c, "portLevelMtls",
               vc_err(c, plm->u.entries[i].value, "port must be in range 1..65535"));
    }
    vc_workload_selector(c, spec, "selector");
}

/* ---- security helpers ---- */

static const char *multi(vc *c, const char *list, size_t n)
{
    return vc_fmt(c, "%zu error%s occurred:%s\n\n", n, n == 1 ? "" : "s", list);
}

/* ValidateIPs: each problem as a separate message in *list; returns the count. */
static size_t bad_ips(vc *c, const wf_node *seq, const char **list)
{
    size_t n = 0;
    *list = "";
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *v = vc_nstr(wf_seq_at(seq, i));
        const char *e = NULL;
        if (strchr(v, '/')) {
            if (!vc_is_cidr(v))
                e = vc_fmt(c, "bad CIDR range (%s): netip.ParsePrefix(%s): invalid prefix", v,
                           vc_q(c, v));
        } else if (!vc_is_ip(v)) {
            e = vc_fmt(c, "bad IP address (%s)", v);
        }
        if (e) {
            *list = vc_fmt(c, "%s\n\t* %s", *list, e);
            n++;
        }
    }
    return n;
}

static void report_ips(vc *c, const wf_node *m, const char *key)
{
    const wf_node *seq = vc_get(m, key);
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *v = vc_nstr(wf_seq_at(seq, i));
        size_t mark = vc_push(c, key);
        vc_push_idx(c, i);
        if (strchr(v, '/')) {
            if (!vc_is_cidr(v))
                vc_err(c, wf_seq_at(seq, i),
                       "bad CIDR range (%s): netip.ParsePrefix(%s): invalid prefix", v, vc_q(c, v));
        } else if (!vc_is_ip(v)) {
            vc_err(c, wf_seq_at(seq, i), "bad IP address (%s)", v);
        }
        vc_pop(c, mark);
    }
}

static const char *bad_port(vc *c, const char *p)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (!*p || *end || !isdigit((unsigned char)p[0]))
        return vc_fmt(c, "bad port (%s): strconv.ParseUint: parsing %s: invalid syntax", p,
                      vc_q(c, p));
    if (errno || v > 4294967295ULL)
        return vc_fmt(c, "bad port (%s): strconv.ParseUint: parsing %s: value out of range", p,
                      vc_q(c, p));
    if (v > 65535)
        return vc_fmt(c, "bad port (%s): <nil>", p);
    return NULL;
}

static void report_ports(vc *c, const wf_node *m, const char *key)
{
    const wf_node *seq = vc_get(m, key);
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *e = bad_port(c, vc_nstr(wf_seq_at(seq, i)));
        if (e)
            IN(c, key, vc_err(c, wf_seq_at(seq, i), "%s", e));
    }
}

static void empty_values(vc *c, const wf_node *m, const char *key, const char *name)
{
    const wf_node *seq = vc_get(m, key);
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        if (!*vc_nstr(wf_seq_at(seq, i))) {
            IN(c, key, vc_err(c, wf_seq_at(seq, i), "empty value not allowed, found in %s", name));
            return;
        }
    }
}

static bool is_word(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* unsupportedPathTempRegex: \/{\w+\=\*[*]?\}|{\w*\}|\/\*[*]?|\*[*]?\/ */
static bool unsupported_template(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '{') {
            const char *q = p + 2;
            while (is_word(*q))
                q++;
            if (q > p + 2 && q[0] == '=' && q[1] == '*') {
                q += 2;
                if (*q == '*')
                    q++;
                if (*q == '}')
                    return true;
            }
        }
        if (p[0] == '{') {
            const char *q = p + 1;
            while (is_word(*q))
                q++;
            if (*q == '}')
                return true;
        }
        if (p[0] == '/' && p[1] == '*')
            return true;
        if (p[0] == '*' && (p[1] == '/' || (p[1] == '*' && p[2] == '/')))
            return true;
    }
    return false;
}

static void path_templates(vc *c, const wf_node *m, const char *key, const char *name)
{
    const wf_node *seq = vc_get(m, key);
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *p = vc_nstr(wf_seq_at(seq, i));
        bool tmpl = strstr(p, "{*}") || strstr(p, "{**}");
        if (tmpl && unsupported_template(p)) {
            IN(c, key,
               vc_err(c, wf_seq_at(seq, i), "invalid or unsupported path template, found in %s",
                      name));
            return;
        }
    }
}

static const char *map_key_error(vc *c, const char *key)
{
    const char *open = strchr(key, '[');
    size_t len = strlen(key);
    long pos = open ? (long)(open - key) : -1;
    if (len > 0 && key[len - 1] == ']' && pos > 0 && pos < (long)len - 2)
        return NULL;
    return vc_fmt(c, "bad key (%s): should have format a[b]", key);
}

/* security.ValidateAttribute */
static const char *attribute_error(vc *c, const char *key, const wf_node *values)
{
    for (size_t i = 0; i < wf_seq_len(values); i++) {
        if (!*vc_nstr(wf_seq_at(values, i)))
            return vc_fmt(c, "empty value not allowed, found in %s", key);
    }
    const char *list;
    size_t n;
    if (!strncmp(key, "request.headers", 15) || !strncmp(key, "request.auth.claims", 19) ||
        !strncmp(key, "experimental.envoy.filters.", 27))
        return map_key_error(c, key);
    if (!strcmp(key, "source.ip") || !strcmp(key, "remote.ip") || !strcmp(key, "destination.ip"))
        return (n = bad_ips(c, values, &list)) ? multi(c, list, n) : NULL;
    if (!strcmp(key, "destination.port")) {
        list = "";
        n = 0;
        for (size_t i = 0; i < wf_seq_len(values); i++) {
            const char *e = bad_port(c, vc_nstr(wf_seq_at(values, i)));
            if (e) {
                list = vc_fmt(c, "%s\n\t* %s", list, e);
                n++;
            }
        }
        return n ? multi(c, list, n) : NULL;
    }
    static const char *const plain[] = {"source.namespace",       "source.principal",
                                        "source.serviceAccount",  "source.trustDomain",
                                        "request.auth.principal", "request.auth.audiences",
                                        "request.auth.presenter", "connection.sni"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if (!strcmp(key, plain[i]))
            return NULL;
    }
    if (!strcmp(key, "destination.namespace"))
        return vc_fmt(c, "attribute %s is replaced by the metadata.namespace", key);
    if (!strncmp(key, "destination.labels", 18))
        return vc_fmt(c, "attribute %s is replaced by the workload selector", key);
    if (!strcmp(key, "destination.name") || !strcmp(key, "destination.user"))
        return vc_fmt(c, "deprecated attribute %s: only supported in v1alpha1", key);
    return vc_fmt(c, "unknown attribute: %s", key);
}

/* ---- AuthorizationPolicy ---- */

static const char *const src_lists[] = {
    "principals",     "requestPrincipals", "namespaces",           "ipBlocks",
    "remoteIpBlocks", "notPrincipals",     "notRequestPrincipals", "notNamespaces",
    "notIpBlocks",    "notRemoteIpBlocks", "serviceAccounts",      "notServiceAccounts",
    "trustDomains",   "notTrustDomains"};
static const char *const src_names[] = {
    "Principals",     "RequestPrincipals", "Namespaces",           "IpBlocks",
    "RemoteIpBlocks", "NotPrincipals",     "NotRequestPrincipals", "NotNamespaces",
    "NotIpBlocks",    "NotRemoteIpBlocks", "ServiceAccounts",      "NotServiceAccounts",
    "TrustDomains",   "NotTrustDomains"};
static const char *const op_lists[] = {"ports",    "methods",    "paths",    "hosts",
                                       "notPorts", "notMethods", "notPaths", "notHosts"};
static const char *const op_names[] = {"Ports",    "Methods",    "Paths",    "Hosts",
                                       "NotPorts", "NotMethods", "NotPaths", "NotHosts"};

typedef struct rule_state {
    bool from_exist, to_exist, tcp_from, tcp_to;
} rule_state;

static void rule_from(vc *c, const wf_node *rule, size_t i, rule_state *st)
{
    const wf_node *from = vc_get(rule, "from");
    if (from && wf_seq_len(from) == 0)
        vc_err(c, from, "`from` must not be empty, found at rule %zu", i);
    for (size_t j = 0; j < wf_seq_len(from); j++) {
        const wf_node *f = wf_seq_at(from, j);
        size_t mark = vc_push(c, "from");
        vc_push_idx(c, j);
        const wf_node *src = vc_get(f, "source");
        if (!f || f->type == WF_NODE_NULL) {
            vc_err(c, f, "`from` must not be nil, found at rule %zu", i);
        } else if (!src) {
            vc_err(c, f, "`from.source` must not be nil, found at rule %zu", i);
        } else {
            st->from_exist = true;
            size_t m2 = vc_push(c, "source");
            bool any = false;
            for (size_t k = 0; k < sizeof(src_lists) / sizeof(src_lists[0]); k++)
                any |= vc_len(src, src_lists[k]) > 0;
            if (!any)
                vc_err(c, src, "`from.source` must not be empty, found at rule %zu", i);
            report_ips(c, src, "ipBlocks");
            report_ips(c, src, "notIpBlocks");
            report_ips(c, src, "remoteIpBlocks");
            report_ips(c, src, "notRemoteIpBlocks");
            for (size_t k = 0; k < 10; k++)
                empty_values(c, src, src_lists[k], src_names[k]);
            static const char *const tcp_keys[] = {
                "notPrincipals",   "principals",         "ipBlocks",       "notIpBlocks",
                "namespaces",      "notNamespaces",      "remoteIpBlocks", "notRemoteIpBlocks",
                "serviceAccounts", "notServiceAccounts", "trustDomains",   "notTrustDomains"};
            for (size_t k = 0; k < sizeof tcp_keys / sizeof tcp_keys[0]; k++)
                st->tcp_from |= vc_has(src, tcp_keys[k]);
            vc_pop(c, m2);
        }
        vc_pop(c, mark);
    }
}

static void rule_to(vc *c, const wf_node *rule, size_t i, rule_state *st)
{
    const wf_node *to = vc_get(rule, "to");
    if (to && wf_seq_len(to) == 0)
        vc_err(c, to, "`to` must not be empty, found at rule %zu", i);
    for (size_t j = 0; j < wf_seq_len(to); j++) {
        const wf_node *t = wf_seq_at(to, j);
        size_t mark = vc_push(c, "to");
        vc_push_idx(c, j);
        const wf_node *op = vc_get(t, "operation");
        if (!t || t->type == WF_NODE_NULL) {
            vc_err(c, t, "`to` must not be nil, found at rule %zu", i);
        } else if (!op) {
            vc_err(c, t, "`to.operation` must not be nil, found at rule %zu", i);
        } else {
            st->to_exist = true;
            size_t m2 = vc_push(c, "operation");
            bool any = false;
            for (size_t k = 0; k < 8; k++)
                any |= vc_len(op, op_lists[k]) > 0;
            if (!any)
                vc_err(c, op, "`to.operation` must not be empty, found at rule %zu", i);
            report_ports(c, op, "ports");
            report_ports(c, op, "notPorts");
            for (size_t k = 0; k < 8; k++)
                empty_values(c, op, op_lists[k], op_names[k]);
            path_templates(c, op, "paths", "Paths");
            path_templates(c, op, "notPaths", "NotPaths");
            st->tcp_to |= vc_has(op, "ports") || vc_has(op, "notPorts");
            vc_pop(c, m2);
        }
        vc_pop(c, mark);
    }
}

static void rule_when(vc *c, const wf_node *rule)
{
    const wf_node *when = vc_get(rule, "when");
    for (size_t j = 0; j < wf_seq_len(when); j++) {
        const wf_node *cond = wf_seq_at(when, j);
        const char *key = vc_str(cond, "key");
        size_t mark = vc_push(c, "when");
        vc_push_idx(c, j);
        if (!*key) {
            vc_err(c, cond, "`key` must not be empty");
        } else if (vc_len(cond, "values") == 0 && vc_len(cond, "notValues") == 0) {
            vc_err(c, cond, "at least one of `values` or `notValues` must be set for key %s", key);
        } else {
            const char *e =
                vc_len(cond, "values") ? attribute_error(c, key, vc_get(cond, "values")) : NULL;
            if (e)
                vc_err(c, cond, "invalid `value` for `key` %s: %s", key, e);
            e = vc_len(cond, "notValues") ? attribute_error(c, key, vc_get(cond, "notValues"))
                                          : NULL;
            if (e)
                vc_err(c, cond, "invalid `notValue` for `key` %s: %s", key, e);
        }
        vc_pop(c, mark);
    }
}

static void custom_rules(vc *c, const wf_node *spec)
{
    const wf_node *rules = vc_get(spec, "rules");
    if (!vc_has(spec, "rules"))
        vc_err(c, spec,
               "CUSTOM action without `rules` is meaningless as it will never be "
               "triggered, add an empty rule `{}` if you want it be triggered for every "
               "request");
    else if (!*vc_str(vc_get(spec, "provider"), "name"))
        vc_err(c, spec, "`provider.name` must not be empty");
    static const char *const keys[] = {"namespaces",        "notNamespaces",
                                       "principals",        "notPrincipals",
                                       "requestPrincipals", "notRequestPrincipals"};
    static const char *const names[] = {"From.Namespaces",        "From.NotNamespaces",
                                        "From.Principals",        "From.NotPrincipals",
                                        "From.RequestPrincipals", "From.NotRequestPrincipals"};
    for (size_t i = 0; i < wf_seq_len(rules); i++) {
        const wf_node *rule = wf_seq_at(rules, i);
        const wf_node *from = vc_get(rule, "from");
        for (size_t j = 0; j < wf_seq_len(from); j++) {
            const wf_node *src = vc_get(wf_seq_at(from, j), "source");
            for (size_t k = 0; src && k < 6; k++) {
                if (vc_len(src, keys[k]) != 0)
                    vc_err(c, src, "%s is currently not supported with CUSTOM action", names[k]);
            }
        }
        const wf_node *when = vc_get(rule, "when");
        for (size_t j = 0; j < wf_seq_len(when); j++) {
            const wf_node *cond = wf_seq_at(when, j);
            if (!cond || cond->type == WF_NODE_NULL) {
                vc_err(c, cond, "when field cannot be nil");
                continue;
            }
            const char *key = vc_str(cond, "key");
            if (!strcmp(key, "source.namespace") || !strcmp(key, "source.principal") ||
                !strncmp(key, "request.auth.", 13))
                vc_err(c, cond, "%s is currently not supported with CUSTOM action", key);
        }
    }
}

void vc_authorizationpolicy(vc *c, const wf_node *spec)
{
    const char *ns = c->r->ns ? c->r->ns : "";
    c->err_prefix = vc_fmt(c, "invalid policy %s.%s: ", c->r->name ? c->r->name : "", ns);
    vc_policy_targets(c, spec);
    static const char *const actions[] = {"ALLOW", "DENY", "AUDIT", "CUSTOM", NULL};
    const char *action = vc_enum(spec, "action", actions);
    bool deny = !strcmp(action, "DENY");
    if (!strcmp(action, "CUSTOM"))
        custom_rules(c, spec);
    if (vc_has(spec, "provider") && strcmp(action, "CUSTOM") != 0)
        vc_err(c, spec, "`provider` must not be with non CUSTOM action, found %s", action);
    if (deny && !vc_has(spec, "rules"))
        vc_err(c, spec,
               "DENY action without `rules` is meaningless as it will never be "
               "triggered, add an empty rule `{}` if you want it be triggered for every "
               "request");
    const wf_node *rules = vc_get(spec, "rules");
    for (size_t i = 0; i < wf_seq_len(rules); i++) {
        const wf_node *rule = wf_seq_at(rules, i);
        size_t mark = vc_push(c, "rules");
        vc_push_idx(c, i);
        if (!rule || rule->type == WF_NODE_NULL) {
            vc_err(c, rule, "`rule` must not be nil, found at rule %zu", i);
            vc_pop(c, mark);
            continue;
        }
        rule_state st = {0};
        rule_from(c, rule, i, &st);
        rule_to(c, rule, i, &st);
        rule_when(c, rule);
        if (deny &&
            ((st.from_exist && !st.to_exist && !st.tcp_from) || (st.to_exist && !st.tcp_to)))
            vc_warn(c, rule,
                    "configured AuthorizationPolicy will deny all traffic to TCP ports under its "
                    "scope due to the use of only HTTP attributes in a DENY rule; it is "
                    "recommended to explicitly specify the port");
        vc_pop(c, mark);
    }
    c->err_prefix = NULL;
}

/* ---- RequestAuthentication ---- */

static void jwks_uri(vc *c, const wf_node *at, const char *uri)
{
    const char *colon = strstr(uri, "://");
    const char *scheme = colon ? vc_fmt(c, "%.*s", (int)(colon - uri), uri) : "";
    if (!colon && strchr(uri, ':')) {
        const char *sc = strchr(uri, ':');
        scheme = vc_fmt(c, "%.*s", (int)(sc - uri), uri);
    }
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
        vc_err(c, at, "URI scheme %s is not supported", vc_q(c, scheme));
        return;
    }
    const char *host = colon + 3;
    const char *end = host + strcspn(host, "/?#");
    const char *pc = NULL;
    for (const char *p = host; p < end; p++) {
        if (*p == ':')
            pc = p;
        if (*p == ']')
            pc = NULL;
    }
    if (!pc || pc + 1 == end)
        return;
    for (const char *p = pc + 1; p < end; p++) {
        if (!isdigit((unsigned char)*p)) {
            const char *port = vc_fmt(c, "%.*s", (int)(end - pc - 1), pc + 1);
            vc_err(c, at, "parse %s: invalid port %s after host", vc_q(c, uri),
                   vc_q(c, vc_fmt(c, ":%s", port)));
            return;
        }
    }
}

static void jwt_rule(vc *c, const wf_node *r)
{
    if (!*vc_str(r, "issuer"))
        vc_err(c, r, "issuer must be set");
    const wf_node *aud = vc_get(r, "audiences");
    for (size_t i = 0; i < wf_seq_len(aud); i++) {
        if (!*vc_nstr(wf_seq_at(aud, i)))
            vc_err(c, wf_seq_at(aud, i), "audience must be non-empty string");
    }
    const char *uri = vc_str(r, "jwksUri");
    if (*uri)
        IN(c, "jwksUri", jwks_uri(c, vc_get(r, "jwksUri"), uri));
    const char *jwks = vc_str(r, "jwks");
    if (*jwks) {
        json_error_t jerr;
        json_t *j = json_loads(jwks, 0, &jerr);
        if (!j || !json_is_object(j))
            IN(c, "jwks",
               vc_err(c, vc_get(r, "jwks"), "jwks parse error: failed to unmarshal JWK set: %s",
                      j ? "not a JSON object" : jerr.text));
        json_decref(j);
    }
    const wf_node *fh = vc_get(r, "fromHeaders");
    for (size_t i = 0; i < wf_seq_len(fh); i++) {
        const wf_node *h = wf_seq_at(fh, i);
        if (!h || h->type == WF_NODE_NULL)
            vc_err(c, h, "location header name must be non-null");
        else if (!*vc_str(h, "name"))
            vc_err(c, h, "location header name must be non-empty string");
    }
    const wf_node *fp = vc_get(r, "fromParams");
    for (size_t i = 0; i < wf_seq_len(fp); i++) {
        if (!*vc_nstr(wf_seq_at(fp, i)))
            vc_err(c, wf_seq_at(fp, i), "location query must be non-empty string");
    }
    const wf_node *fc = vc_get(r, "fromCookies");
    for (size_t i = 0; i < wf_seq_len(fc); i++) {
        if (!*vc_nstr(wf_seq_at(fc, i)))
            vc_err(c, wf_seq_at(fc, i), "cookie name must be non-empty string");
    }
    const wf_node *oc = vc_get(r, "outputClaimToHeaders");
    for (size_t i = 0; i < wf_seq_len(oc); i++) {
        const wf_node *h = wf_seq_at(oc, i);
        if (!h || h->type == WF_NODE_NULL) {
            vc_err(c, h, "outputClaimToHeaders must not be null");
        } else if (!*vc_str(h, "claim") || !*vc_str(h, "header")) {
            vc_err(c, h, "outputClaimToHeaders header and claim value must be non-empty string");
        } else {
            vc_http_header_name(c, h, vc_str(h, "header"));
        }
    }
    vc_duration(c, r, "timeout");
}

void vc_requestauthentication(vc *c, const wf_node *spec)
{
    vc_policy_targets(c, spec);
    const wf_node *rules = vc_get(spec, "jwtRules");
    vc_each(c, rules, "jwtRules", jwt_rule);
}
