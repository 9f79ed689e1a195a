/*
 * filter_chain_match.c - Envoy's filter chain match (filter_chain_match.h).
 *
 * Envoy builds nested maps (port -> IP trie -> server name -> transport -> ALPN -> direct
 * source IP trie -> source type -> source IP trie -> source port) and walks them once. A
 * listener has a handful of chains, so weft walks the same levels over the chain array: at
 * level k it picks the most specific value among the chains that chose the values of levels
 * 0..k-1, which gives the same answer without building or allocating anything.
 */
#include "proxy/net/filter_chain_match.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

enum {
    L_PORT,
    L_DST_IP,
    L_SERVER_NAME,
    L_TRANSPORT,
    L_ALPN,
    L_DIRECT_SRC_IP,
    L_SOURCE_TYPE,
    L_SRC_IP,
    L_SRC_PORT,
    L_COUNT,
};

/* The value chosen at each level so far. */
typedef struct {
    uint32_t port;
    wp_cidr dst, direct, src; /* len 0: chains without ranges (or with a /0) */
    int sn_kind;              /* 0 exact, 1 wildcard (sn_suffix ".b.c"), 2 no server_names */
    const char *sn_suffix;
    bool tp_exact;
    int alpn; /* index into the input's protocols, -1 = chains without any */
    wp_fcm_source_type st;
    uint32_t sport; /* 0 = chains without source_ports */
} chosen;

/* ---------- addresses ---------- */

int wp_cidr_parse(const char *address_prefix, uint32_t prefix_len, wp_cidr *out)
{
    memset(out, 0, sizeof(*out));
    if (!address_prefix)
        return -1;
    if (inet_pton(AF_INET, address_prefix, out->addr) == 1) {
        out->family = AF_INET;
        if (prefix_len > 32)
            return -1;
    } else if (inet_pton(AF_INET6, address_prefix, out->addr) == 1) {
        out->family = AF_INET6;
        if (prefix_len > 128)
            return -1;
    } else {
        return -1;
    }
    out->len = (uint8_t)prefix_len;
    size_t width = out->family == AF_INET ? 4 : 16;
    for (size_t i = 0; i < width; i++) {
        uint32_t bit = (uint32_t)i * 8;
        if (bit >= prefix_len)
            out->addr[i] = 0;
        else if (prefix_len - bit < 8)
            out->addr[i] &= (uint8_t)(0xffu << (8 - (prefix_len - bit)));
    }
    return 0;
}

void wp_cidr_text(const wp_cidr *c, char *out, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "";
    inet_ntop(c->family == AF_INET ? AF_INET : AF_INET6, c->addr, ip, sizeof(ip));
    snprintf(out, cap, "%s/%u", ip, (unsigned)c->len);
}

/* The address bytes of sa (4 or 16), NULL for other families. */
static const uint8_t *ip_bytes(const struct sockaddr *sa, int *family)
{
    if (sa && sa->sa_family == AF_INET) {
        *family = AF_INET;
        return (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    }
    if (sa && sa->sa_family == AF_INET6) {
        *family = AF_INET6;
        return (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    }
    *family = 0;
    return NULL;
}

static uint32_t ip_port(const struct sockaddr *sa)
{
    if (sa && sa->sa_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
    if (sa && sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
    return 0;
}

bool wp_cidr_contains(const wp_cidr *c, const struct sockaddr *sa)
{
    int family;
    const uint8_t *a = ip_bytes(sa, &family);
    if (!a || family != c->family)
        return false;
    uint32_t full = c->len / 8u, rest = c->len % 8u;
    if (memcmp(a, c->addr, full) != 0)
        return false;
    return rest == 0 || (a[full] & (uint8_t)(0xffu << (8 - rest))) == c->addr[full];
}

static bool cidr_eq(const wp_cidr *a, const wp_cidr *b)
{
    return a->family == b->family && a->len == b->len && memcmp(a->addr, b->addr, 16) == 0;
}

/* ---------- one level of one chain against the chosen value ---------- */

static bool str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* A chain's ranges against the chosen prefix: the same prefix, or none (and the chosen is
 * the catch-all). */
static bool ranges_ok(const wp_cidr *r, size_t n, const wp_cidr *c)
{
    if (n == 0)
        return c->len == 0;
    for (size_t i = 0; i < n; i++)
        if (cidr_eq(&r[i], c))
            return true;
    return false;
}

static bool sn_ok(const wp_fcm *m, const chosen *ch, const wp_fcm_input *in)
{
    if (ch->sn_kind == 2)
        return m->nserver_names == 0;
    for (size_t i = 0; i < m->nserver_names; i++) {
        const char *s = m->server_names[i];
        if (ch->sn_kind == 0 ? strcmp(s, in->server_name) == 0
                             : s[0] == '*' && strcmp(s + 1, ch->sn_suffix) == 0)
            return true;
    }
    return false;
}

static bool alpn_ok(const wp_fcm *m, const chosen *ch, const wp_fcm_input *in)
{
    if (ch->alpn < 0)
        return m->napplication_protocols == 0;
    for (size_t i = 0; i < m->napplication_protocols; i++)
        if (strcmp(m->application_protocols[i], in->application_protocols[ch->alpn]) == 0)
            return true;
    return false;
}

static bool ports_ok(const uint32_t *p, size_t n, uint32_t port)
{
    if (n == 0)
        return port == 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] == port)
            return true;
    return false;
}

static bool level_ok(const wp_fcm *m, int level, const chosen *ch, const wp_fcm_input *in)
{
    switch (level) {
    case L_PORT:
        return m->destination_port == ch->port;
    case L_DST_IP:
        return ranges_ok(m->prefix_ranges, m->nprefix_ranges, &ch->dst);
    case L_SERVER_NAME:
        return sn_ok(m, ch, in);
    case L_TRANSPORT:
        return ch->tp_exact ? m->transport_protocol && m->transport_protocol[0] &&
                                  strcmp(m->transport_protocol, in->transport_protocol) == 0
                            : !m->transport_protocol || !m->transport_protocol[0];
    case L_ALPN:
        return alpn_ok(m, ch, in);
    case L_DIRECT_SRC_IP:
        return ranges_ok(m->direct_source_prefix_ranges, m->ndirect_source_prefix_ranges,
                         &ch->direct);
    case L_SOURCE_TYPE:
        return m->source_type == ch->st;
    case L_SRC_IP:
        return ranges_ok(m->source_prefix_ranges, m->nsource_prefix_ranges, &ch->src);
    default:
        return ports_ok(m->source_ports, m->nsource_ports, ch->sport);
    }
}

/* The chain chose every value of the levels before `level`. */
static bool alive(const wp_fcm *m, int level, const chosen *ch, const wp_fcm_input *in)
{
    for (int k = 0; k < level; k++)
        if (!level_ok(m, k, ch, in))
            return false;
    return true;
}

/* ---------- choosing a level's value ---------- */

/* The longest prefix among the live chains' ranges that holds sa (a chain without ranges
 * offers the catch-all, length 0). Returns false when no live chain holds sa. */
static bool choose_prefix(const wp_fcm *const *m, size_t n, int level, chosen *ch,
                          const wp_fcm_input *in, const struct sockaddr *sa, wp_cidr *out)
{
    int best = -1, family;
    ip_bytes(sa, &family);
    for (size_t i = 0; i < n; i++) {
        if (!alive(m[i], level, ch, in))
            continue;
        const wp_cidr *r = level == L_DST_IP          ? m[i]->prefix_ranges
                           : level == L_DIRECT_SRC_IP ? m[i]->direct_source_prefix_ranges
                                                      : m[i]->source_prefix_ranges;
        size_t nr = level == L_DST_IP          ? m[i]->nprefix_ranges
                    : level == L_DIRECT_SRC_IP ? m[i]->ndirect_source_prefix_ranges
                                               : m[i]->nsource_prefix_ranges;
        if (nr == 0 && best < 0) {
            memset(out, 0, sizeof(*out));
            out->family = (uint8_t)family;
            best = 0;
        }
        for (size_t k = 0; k < nr; k++) {
            if ((int)r[k].len > best && wp_cidr_contains(&r[k], sa)) {
                *out = r[k];
                best = r[k].len;
            }
        }
    }
    if (best == 0) /* the catch-all: chains without ranges and those naming a /0 */
        memset(out->addr, 0, sizeof(out->addr));
    return best >= 0;
}

static bool any_alive(const wp_fcm *const *m, size_t n, int level, chosen *ch,
                      const wp_fcm_input *in)
{
    for (size_t i = 0; i < n; i++)
        if (alive(m[i], level + 1, ch, in))
            return true;
    return false;
}

static bool choose_server_name(const wp_fcm *const *m, size_t n, chosen *ch, const wp_fcm_input *in)
{
    const char *s = in->server_name;
    if (s[0]) {
        ch->sn_kind = 0;
        if (any_alive(m, n, L_SERVER_NAME, ch, in))
            return true;
        /* the wildcards from the longest suffix: ".b.c" then ".c" for "a.b.c" */
        size_t len = strlen(s);
        ch->sn_kind = 1;
        for (const char *p = strchr(s + 1, '.'); p && (size_t)(p - s) < len - 1;
             p = strchr(p + 1, '.')) {
            ch->sn_suffix = p;
            if (any_alive(m, n, L_SERVER_NAME, ch, in))
                return true;
        }
    }
    ch->sn_kind = 2;
    return any_alive(m, n, L_SERVER_NAME, ch, in);
}

static bool choose_alpn(const wp_fcm *const *m, size_t n, chosen *ch, const wp_fcm_input *in)
{
    for (size_t k = 0; k < in->napplication_protocols; k++) {
        ch->alpn = (int)k;
        if (any_alive(m, n, L_ALPN, ch, in))
            return true;
    }
    ch->alpn = -1;
    return any_alive(m, n, L_ALPN, ch, in);
}

/* Envoy's Network::Utility::isSameIpOrLoopback: the peer is a loopback address or has the
 * local IP. */
static bool same_ip_or_loopback(const wp_fcm_input *in)
{
    int fr, fl;
    const uint8_t *r = ip_bytes(in->remote, &fr), *l = ip_bytes(in->local, &fl);
    if (!r)
        return false;
    static const uint8_t v6_loopback[16] = {[15] = 1};
    if ((fr == AF_INET && r[0] == 127) || (fr == AF_INET6 && memcmp(r, v6_loopback, 16) == 0))
        return true;
    return l && fl == fr && memcmp(r, l, fr == AF_INET ? 4 : 16) == 0;
}

static bool choose_source_type(const wp_fcm *const *m, size_t n, chosen *ch, const wp_fcm_input *in)
{
    bool typed = false;
    for (size_t i = 0; i < n && !typed; i++)
        typed = m[i]->source_type != WP_FCM_SOURCE_ANY && alive(m[i], L_SOURCE_TYPE, ch, in);
    if (typed) {
        ch->st =
            same_ip_or_loopback(in) ? WP_FCM_SOURCE_SAME_IP_OR_LOOPBACK : WP_FCM_SOURCE_EXTERNAL;
        if (any_alive(m, n, L_SOURCE_TYPE, ch, in))
            return true;
    }
    ch->st = WP_FCM_SOURCE_ANY;
    return any_alive(m, n, L_SOURCE_TYPE, ch, in);
}

static bool choose(const wp_fcm *const *m, size_t n, int level, chosen *ch, const wp_fcm_input *in)
{
    switch (level) {
    case L_PORT:
        ch->port = ip_port(in->local);
        if (ch->port && any_alive(m, n, level, ch, in))
            return true;
        ch->port = 0;
        return any_alive(m, n, level, ch, in);
    case L_DST_IP:
        return choose_prefix(m, n, level, ch, in, in->local, &ch->dst);
    case L_SERVER_NAME:
        return choose_server_name(m, n, ch, in);
    case L_TRANSPORT:
        ch->tp_exact = in->transport_protocol[0] != '\0';
        if (ch->tp_exact && any_alive(m, n, level, ch, in))
            return true;
        ch->tp_exact = false;
        return any_alive(m, n, level, ch, in);
    case L_ALPN:
        return choose_alpn(m, n, ch, in);
    case L_DIRECT_SRC_IP:
        return choose_prefix(m, n, level, ch, in, in->direct_remote, &ch->direct);
    case L_SOURCE_TYPE:
        return choose_source_type(m, n, ch, in);
    case L_SRC_IP:
        return choose_prefix(m, n, level, ch, in, in->remote, &ch->src);
    default:
        ch->sport = ip_port(in->remote);
        if (ch->sport && any_alive(m, n, level, ch, in))
            return true;
        ch->sport = 0;
        return any_alive(m, n, level, ch, in);
    }
}

bool wp_fcm_is_empty(const wp_fcm *m)
{
    return !m->destination_port && !m->nprefix_ranges && !m->nserver_names &&
           (!m->transport_protocol || !m->transport_protocol[0]) && !m->napplication_protocols &&
           !m->ndirect_source_prefix_ranges && m->source_type == WP_FCM_SOURCE_ANY &&
           !m->nsource_prefix_ranges && !m->nsource_ports;
}

int wp_fcm_select(const wp_fcm *const *m, size_t n, const wp_fcm_input *in0)
{
    if (n == 1 && wp_fcm_is_empty(m[0]))
        return 0; /* the common listener: one chain for every connection */
    wp_fcm_input in = *in0;
    if (!in.server_name)
        in.server_name = "";
    if (!in.transport_protocol)
        in.transport_protocol = "";
    chosen ch = {.alpn = -1};
    for (int level = 0; level < L_COUNT; level++)
        if (!choose(m, n, level, &ch, &in))
            return -1;
    for (size_t i = 0; i < n; i++)
        if (alive(m[i], L_COUNT, &ch, &in))
            return (int)i;
    return -1;
}

/* ---------- config-time checks ---------- */

bool wp_fcm_server_name_ok(const char *name)
{
    const char *star = strchr(name, '*');
    if (!star)
        return true;
    return star == name && name[1] == '.' && !strchr(name + 1, '*');
}

static bool strs_same(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

static bool cidrs_same(const wp_cidr *a, size_t na, const wp_cidr *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!cidr_eq(&a[i], &b[i]))
            return false;
    return true;
}

static bool u32s_same(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

/* Equal matchers, field by field (Envoy compares the FilterChainMatch messages). */
static bool same(const wp_fcm *a, const wp_fcm *b)
{
    return a->destination_port == b->destination_port &&
           cidrs_same(a->prefix_ranges, a->nprefix_ranges, b->prefix_ranges, b->nprefix_ranges) &&
           strs_same(a->server_names, a->nserver_names, b->server_names, b->nserver_names) &&
           str_eq(a->transport_protocol, b->transport_protocol) &&
           strs_same(a->application_protocols, a->napplication_protocols, b->application_protocols,
                     b->napplication_protocols) &&
           cidrs_same(a->direct_source_prefix_ranges, a->ndirect_source_prefix_ranges,
                      b->direct_source_prefix_ranges, b->ndirect_source_prefix_ranges) &&
           a->source_type == b->source_type &&
           cidrs_same(a->source_prefix_ranges, a->nsource_prefix_ranges, b->source_prefix_ranges,
                      b->nsource_prefix_ranges) &&
           u32s_same(a->source_ports, a->nsource_ports, b->source_ports, b->nsource_ports);
}

/* Two value lists share a value; an empty list is the value "any", shared only with another
 * empty list (Envoy keys it as "" / port 0 / the catch-all prefix). */
static bool strs_meet(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (!na || !nb)
        return !na && !nb;
    for (size_t i = 0; i < na; i++)
        for (size_t k = 0; k < nb; k++)
            if (strcmp(a[i], b[k]) == 0)
                return true;
    return false;
}

static bool cidrs_meet(const wp_cidr *a, size_t na, const wp_cidr *b, size_t nb)
{
    if (!na || !nb)
        return !na && !nb;
    for (size_t i = 0; i < na; i++)
        for (size_t k = 0; k < nb; k++)
            if (cidr_eq(&a[i], &b[k]))
                return true;
    return false;
}

static bool u32s_meet(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    if (!na || !nb)
        return !na && !nb;
    for (size_t i = 0; i < na; i++)
        for (size_t k = 0; k < nb; k++)
            if (a[i] == b[k])
                return true;
    return false;
}

/* Envoy's addFilterChainForSourcePorts error: the two matchers reach the same leaf. */
static bool overlap(const wp_fcm *a, const wp_fcm *b)
{
    return a->destination_port == b->destination_port &&
           cidrs_meet(a->prefix_ranges, a->nprefix_ranges, b->prefix_ranges, b->nprefix_ranges) &&
           strs_meet(a->server_names, a->nserver_names, b->server_names, b->nserver_names) &&
           str_eq(a->transport_protocol, b->transport_protocol) &&
           strs_meet(a->application_protocols, a->napplication_protocols, b->application_protocols,
                     b->napplication_protocols) &&
           cidrs_meet(a->direct_source_prefix_ranges, a->ndirect_source_prefix_ranges,
                      b->direct_source_prefix_ranges, b->ndirect_source_prefix_ranges) &&
           a->source_type == b->source_type &&
           cidrs_meet(a->source_prefix_ranges, a->nsource_prefix_ranges, b->source_prefix_ranges,
                      b->nsource_prefix_ranges) &&
           u32s_meet(a->source_ports, a->nsource_ports, b->source_ports, b->nsource_ports);
}

int wp_fcm_check(const wp_fcm *const *m, size_t n, size_t *first, size_t *second)
{
    /* chain by chain, as Envoy adds them: first the equal-matcher check against the chains
     * before, then the overlap found while adding it */
    for (size_t i = 1; i < n; i++) {
        for (size_t k = 0; k < i; k++) {
            if (same(m[k], m[i])) {
                *first = k;
                *second = i;
                return WP_FCM_SAME;
            }
        }
        for (size_t k = 0; k < i; k++) {
            if (overlap(m[k], m[i])) {
                *first = k;
                *second = i;
                return WP_FCM_OVERLAP;
            }
        }
    }
    return WP_FCM_OK;
}
