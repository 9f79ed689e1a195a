/*
 * engine.c - the RBAC matcher engine (engine.h).
 */
#include "proxy/filters/rbac/engine.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

/* ---------- addresses (parsed once per input, on demand) ---------- */

/* "1.2.3.4:80", "[::1]:80", "1.2.3.4" or "::1" into sa. */
static bool parse_addr(const char *text, struct sockaddr_storage *sa)
{
    char ip[64];
    if (!text || !*text)
        return false;
    const char *start = text, *end = NULL;
    if (*text == '[') {
        start = text + 1;
        end = strchr(start, ']');
    } else {
        const char *colon = strrchr(text, ':');
        end = colon && strchr(text, ':') == colon ? colon : NULL; /* one ':': v4 with port */
    }
    size_t n = end ? (size_t)(end - start) : strlen(start);
    if (n >= sizeof ip)
        return false;
    memcpy(ip, start, n);
    ip[n] = '\0';
    memset(sa, 0, sizeof(*sa));
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        if (end && end[0] == ':')
            v4->sin_port = htons((uint16_t)strtoul(end + 1, NULL, 10));
        return true;
    }
    if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        if (end && end[0] == ']' && end[1] == ':')
            v6->sin6_port = htons((uint16_t)strtoul(end + 2, NULL, 10));
        return true;
    }
    return false;
}

static const struct sockaddr *addr_of(wp_rbac_input *in, int which)
{
    uint8_t bit = (uint8_t)(1u << which);
    if (!(in->parsed & bit)) {
        const char *t = which == 0 ? in->local : which == 1 ? in->direct_remote : in->remote;
        in->parsed |= bit;
        if (parse_addr(t, &in->sa[which]))
            in->parsed_ok |= bit;
    }
    return (in->parsed_ok & bit) ? (const struct sockaddr *)&in->sa[which] : NULL;
}

static uint32_t port_of(const struct sockaddr *sa)
{
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* ---------- request pieces ---------- */

/* The path without query and fragment (Http::PathUtil::removeQueryAndFragment). */
/* The path without query and fragment (url_path and uri_template see that), measured once per
 * evaluation. */
static size_t path_len(wp_rbac_input *in)
{
    if (!in->path_known) {
        const wp_route_req *rq = in->req;
        size_t n = 0;
        while (n < rq->path_len && rq->path[n] != '?' && rq->path[n] != '#')
            n++;
        in->path_only = n;
        in->path_known = true;
    }
    return in->path_only;
}

/* Envoy's AuthenticatedMatcher: URI SANs, then the subject. */
static bool authenticated(const wp_rbac_node *n, wp_rbac_input *in)
{
    if (!in->tls)
        return false;
    if (!n->u.str.has_sm)
        return true;
    const char *s = in->peer_uri_sans;
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (wp_string_match(in->rx, &n->u.str.sm, s, len))
            return true;
        s = comma ? comma + 1 : NULL;
    }
    const char *subj = in->peer_subject ? in->peer_subject : "";
    return wp_string_match(in->rx, &n->u.str.sm, subj, strlen(subj));
}

static bool header(const wp_rbac_node *n, wp_rbac_input *in)
{
    static const wp_route_req none; /* a connection has no headers */
    const wp_kv_matcher *km = &n->u.header;
    const wp_route_req *rq = in->req;
    const char *v = NULL;
    size_t len = 0;
    if (rq && km->m.kind != WP_SM_PRESENT) { /* a pseudo-header: no lookup by name */
        if (n->hdr == WP_RBAC_H_METHOD)
            v = rq->method, len = rq->method_len;
        else if (n->hdr == WP_RBAC_H_PATH)
            v = rq->path, len = rq->path_len;
        else if (n->hdr == WP_RBAC_H_AUTHORITY)
            v = rq->authority, len = rq->authority_len;
    }
    if (v)
        return wp_string_match(in->rx, &km->m, v, len) != km->invert;
    return wp_route_headers_match(in->rx, rq ? rq : &none, km, 1);
}

/* ---------- metadata ---------- */

static bool vm_match(wp_regex_ctx *rx, const wp_rbac_vm *v, const json_t *j)
{
    switch (v->kind) {
    case WP_VM_NULL:
        return j && json_is_null(j);
    case WP_VM_DOUBLE_EXACT:
        return j && json_is_number(j) && json_number_value(j) == v->d;
    case WP_VM_DOUBLE_RANGE:
        return j && json_is_number(j) && json_number_value(j) >= v->lo &&
               json_number_value(j) < v->hi;
    case WP_VM_STRING:
        return j && json_is_string(j) &&
               wp_string_match(rx, &v->sm, json_string_value(j), json_string_length(j));
    case WP_VM_BOOL:
        return j && json_is_boolean(j) && json_is_true(j) == v->b;
    case WP_VM_PRESENT:
        return v->b && j != NULL; /* Envoy: present_match false matches nothing */
    case WP_VM_LIST_ONE_OF: {
        if (!j || !json_is_array(j))
            return false;
        for (size_t i = 0; i < json_array_size(j); i++)
            if (vm_match(rx, v->kids, json_array_get(j, i)))
                return true;
        return false;
    }
    case WP_VM_OR:
        for (size_t i = 0; i < v->n; i++)
            if (vm_match(rx, &v->kids[i], j))
                return true;
        return false;
    }
    return false;
}

/* A value matcher over a string entry of the dynamic metadata (the RBAC filters' own). */
static bool vm_match_str(wp_regex_ctx *rx, const wp_rbac_vm *v, const char *s)
{
    switch (v->kind) {
    case WP_VM_STRING:
        return wp_string_match(rx, &v->sm, s, strlen(s));
    case WP_VM_PRESENT:
        return v->b;
    case WP_VM_OR:
        for (size_t i = 0; i < v->n; i++)
            if (vm_match_str(rx, &v->kids[i], s))
                return true;
        return false;
    default:
        return false;
    }
}

bool wp_rbac_md_match(wp_regex_ctx *rx, const wp_rbac_md *m, const wp_dyn_md *md)
{
    const json_t *j = NULL;
    const char *str = NULL;
    for (uint8_t i = 0; md && i < md->n; i++) {
        const wp_dyn_md_entry *e = &md->e[i];
        if (strcmp(e->ns, m->filter) != 0 || strcmp(e->key, m->path[0]) != 0)
            continue;
        if (e->json) {
            j = e->json;
            for (size_t k = 1; j && k < m->npath; k++)
                j = json_is_object(j) ? json_object_get(j, m->path[k]) : NULL;
        } else if (m->npath == 1) {
            str = e->str;
        }
        break;
    }
    bool r = str ? vm_match_str(rx, &m->value, str) : vm_match(rx, &m->value, j);
    return r != m->invert;
}

/* ---------- the tree ---------- */

bool wp_rbac_node_match(const wp_rbac_node *n, wp_rbac_input *in)
{
    switch (n->kind) {
    case WP_RBAC_ANY:
        return true;
    case WP_RBAC_AND:
        for (size_t i = 0; i < n->u.set.n; i++)
            if (!wp_rbac_node_match(&n->u.set.kids[i], in))
                return false;
        return true;
    case WP_RBAC_OR:
        for (size_t i = 0; i < n->u.set.n; i++)
            if (wp_rbac_node_match(&n->u.set.kids[i], in))
                return true;
        return false;
    case WP_RBAC_NOT:
        return !wp_rbac_node_match(n->u.set.kids, in);
    case WP_RBAC_HEADER:
        return header(n, in);
    case WP_RBAC_URL_PATH:
        return in->req && wp_string_match(in->rx, &n->u.str.sm, in->req->path, path_len(in));
    case WP_RBAC_URI_TEMPLATE:
        return in->req && wp_regex_full_match(in->rx, n->u.tpl, in->req->path, path_len(in));
    case WP_RBAC_DEST_IP: {
        const struct sockaddr *sa = addr_of(in, 0);
        return sa && wp_cidr_contains(&n->u.cidr, sa);
    }
    case WP_RBAC_DEST_PORT:
    case WP_RBAC_DEST_PORT_RANGE: {
        uint32_t p = port_of(addr_of(in, 0));
        return p >= n->u.port.lo && p < n->u.port.hi;
    }
    case WP_RBAC_SNI: {
        const char *s = in->sni ? in->sni : "";
        return wp_string_match(in->rx, &n->u.str.sm, s, strlen(s));
    }
    case WP_RBAC_METADATA:
        return wp_rbac_md_match(in->rx, n->u.md, in->md);
    case WP_RBAC_AUTHENTICATED:
        return authenticated(n, in);
    case WP_RBAC_DIRECT_REMOTE_IP: {
        const struct sockaddr *sa = addr_of(in, 1);
        return sa && wp_cidr_contains(&n->u.cidr, sa);
    }
    case WP_RBAC_REMOTE_IP: {
        const struct sockaddr *sa = addr_of(in, 2);
        return sa && wp_cidr_contains(&n->u.cidr, sa);
    }
    }
    return false;
}

bool wp_rbac_policy_match(const wp_rbac_policy *p, wp_rbac_input *in)
{
    bool perm = false;
    for (size_t i = 0; !perm && i < p->npermissions; i++)
        perm = wp_rbac_node_match(&p->permissions[i], in);
    if (!perm)
        return false;
    for (size_t i = 0; i < p->nprincipals; i++)
        if (wp_rbac_node_match(&p->principals[i], in))
            return true;
    return false;
}

bool wp_rbac_allowed(const wp_rbac_engine *e, wp_rbac_input *in, int *matched)
{
    int m = -1;
    for (size_t i = 0; i < e->npolicies; i++) {
        if (wp_rbac_policy_match(&e->policies[i], in)) {
            m = (int)i;
            break;
        }
    }
    if (matched)
        *matched = m;
    switch (e->action) {
    case WP_RBAC_ALLOW:
        return m >= 0;
    case WP_RBAC_DENY:
        return m < 0;
    case WP_RBAC_LOG:
        return true;
    }
    return false;
}

/* ---------- URI templates ---------- */

/* Envoy's uri_template (source/extensions/path/uri_template_lib): one path segment of
 * unreserved / sub-delims / ':' '@' characters, and a run of them with '/'. */
#define SEG_CHARS "[a-zA-Z0-9\\-._~%!$&'()+,;:@=]"
#define SEG_GLOB  SEG_CHARS "+"
#define TEXT_GLOB "[a-zA-Z0-9\\-._~%!$&'()+,;:@=/]*"

static bool literal_ok(char c)
{
    return strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%!$&'()+,;:@=",
                  c) != NULL &&
           c != '\0';
}

static bool put(char *out, size_t cap, size_t *n, const char *s)
{
    size_t l = strlen(s);
    if (*n + l + 1 > cap)
        return false;
    memcpy(out + *n, s, l);
    *n += l;
    out[*n] = '\0';
    return true;
}

/* One segment [s, s + len): an operator, a variable or literal text. *glob: a `**` was seen. */
static int segment(const char *s, size_t len, char *out, size_t cap, size_t *n, bool *text_glob,
                   const char **why)
{
    const char *op = NULL;
    if (len == 1 && s[0] == '*')
        op = "*";
    else if (len == 2 && s[0] == '*' && s[1] == '*')
        op = "**";
    else if (len >= 2 && s[0] == '{' && s[len - 1] == '}') {
        const char *eq = memchr(s, '=', len);
        size_t name_len = eq ? (size_t)(eq - s - 1) : len - 2;
        if (name_len == 0)
            return *why = "invalid variable name", -1;
        for (size_t i = 1; i <= name_len; i++)
            if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                  (i > 1 && s[i] >= '0' && s[i] <= '9')))
                return *why = "invalid variable name", -1;
        if (!eq)
            op = "*";
        else if ((size_t)(s + len - 1 - eq - 1) == 1 && eq[1] == '*')
            op = "*";
        else if ((size_t)(s + len - 1 - eq - 1) == 2 && eq[1] == '*' && eq[2] == '*')
            op = "**";
        else
            return *why = "unsupported variable pattern (weft-proxy takes * and **)", -1;
    }
    if (op) {
        if (*text_glob)
            return *why = "Implicit variable path glob after text glob.", -1;
        *text_glob = op[1] == '*';
        return put(out, cap, n, *text_glob ? TEXT_GLOB : SEG_GLOB) ? 0 : (*why = "too long", -1);
    }
    for (size_t i = 0; i < len; i++) {
        if (!literal_ok(s[i]))
            return *why = "Invalid path template: invalid literal", -1;
        char lit[3] = {0};
        if (strchr(".$()+\\[]{}^|?*", s[i])) {
            lit[0] = '\\';
            lit[1] = s[i];
        } else {
            lit[0] = s[i];
        }
        if (!put(out, cap, n, lit))
            return *why = "too long", -1;
    }
    return 0;
}

int wp_rbac_uri_template_regex(const char *tpl, char *out, size_t cap, const char **why)
{
    size_t n = 0;
    bool text_glob = false;
    out[0] = '\0';
    if (!tpl || tpl[0] != '/')
        return *why = "Invalid path template: must start with '/'", -1;
    const char *p = tpl;
    while (*p == '/') {
        const char *s = p + 1;
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (!put(out, cap, &n, "/"))
            return *why = "too long", -1;
        if (len == 0 && e)
            return *why = "Invalid path template: empty segment", -1;
        if (len && segment(s, len, out, cap, &n, &text_glob, why) != 0)
            return -1;
        p = s + len;
    }
    return 0;
}
