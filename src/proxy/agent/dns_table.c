/*
 * dns_table.c - the agent's DNS lookup table and answers (Istio's pkg/dns/client). See
 * dns_table.h. The wire format is NLnet Labs' ldns (libldns-dev).
 */
#include "proxy/agent/dns_table.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

struct wp_dns_table {
    json_t *nt;    /* the NameTable (a reference) */
    json_t *names; /* "host." -> {"a": [ip...], "aaaa": [ip...]} */
    json_t *cname; /* "expanded." -> "host." */
};

/* ---- building ---- */

static char *lower_dup(const char *s, bool dot)
{
    size_t n = strlen(s);
    char *o = malloc(n + 2);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++)
        o[i] = (char)tolower((unsigned char)s[i]);
    o[n] = '\0';
    if (dot && (n == 0 || o[n - 1] != '.')) {
        o[n] = '.';
        o[n + 1] = '\0';
    }
    return o;
}

static int set_add(json_t *set, const char *name)
{
    char *l = lower_dup(name, true);
    int rc = l ? json_object_set_new(set, l, json_true()) : -1;
    free(l);
    return rc;
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* generateAltHosts: the names of a Kubernetes entry. */
static int alt_hosts(json_t *set, const char *host, const json_t *ni, const wp_dns_scope *sc,
                     const char *domain, const char *first_part)
{
    const char *sn = json_string_value(json_object_get(ni, "shortname"));
    const char *ns = json_string_value(json_object_get(ni, "namespace"));
    char buf[1024];
    if (set_add(set, host) != 0)
        return -1;
    if (!*domain || !has_suffix(host, domain) || !sn || !*sn || !ns || !*ns)
        return 0;
    snprintf(buf, sizeof buf, "%s.%s.", sn, ns);
    if (set_add(set, buf) != 0)
        return -1;
    if (sc->ns && strcmp(sc->ns, ns) == 0) {
        snprintf(buf, sizeof buf, "%s.", sn);
        if (set_add(set, buf) != 0)
            return -1;
    }
    snprintf(buf, sizeof buf, "%s.%s.%s.", sn, ns, first_part);
    if (set_add(set, buf) != 0)
        return -1;
    const json_t *alts = json_object_get(ni, "altHosts");
    for (size_t i = 0; i < json_array_size(alts); i++) {
        const char *a = json_string_value(json_array_get(alts, i));
        if (a && set_add(set, a) != 0)
            return -1;
    }
    return 0;
}

/* separateIPtypes */
static int split_ips(const json_t *ips, json_t *v4, json_t *v6)
{
    unsigned char b[16];
    for (size_t i = 0; i < json_array_size(ips); i++) {
        const char *ip = json_string_value(json_array_get(ips, i));
        int rc = 0;
        if (ip && inet_pton(AF_INET, ip, b) == 1)
            rc = json_array_append_new(v4, json_string(ip));
        else if (ip && inet_pton(AF_INET6, ip, b) == 1)
            rc = json_array_append_new(v6, json_string(ip));
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* buildDNSAnswers for one entry's names. */
static int add_answers(wp_dns_table *t, const json_t *set, json_t *v4, json_t *v6,
                       const wp_dns_scope *sc)
{
    const char *h;
    json_t *v;
    json_object_foreach((json_t *)set, h, v)
    {
        json_t *e = json_object_get(t->names, h);
        if (!e && (!(e = json_object()) || json_object_set_new(t->names, h, e) != 0))
            return -1;
        if ((json_array_size(v4) && json_object_set(e, "a", v4) != 0) ||
            (json_array_size(v6) && json_object_set(e, "aaaa", v6) != 0))
            return -1;
        if (sc->nsearch == 0 || !sc->search[0] || !*sc->search[0])
            continue;
        char exp[1024];
        const char *s = sc->search[0];
        snprintf(exp, sizeof exp, "%s%s%s", h, s, has_suffix(s, ".") ? "" : ".");
        char *l = lower_dup(exp, false);
        int rc = !l                        ? -1
                 : json_object_get(set, l) ? 0
                                           : json_object_set_new(t->cname, l, json_string(h));
        free(l);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int build(wp_dns_table *t, const json_t *table, const wp_dns_scope *sc)
{
    /* the proxy's domain without its namespace: "svc.cluster.local" */
    char domain[256] = "", first[64] = "";
    if (sc->domain && *sc->domain) {
        const char *d = sc->domain;
        size_t nl = sc->ns ? strlen(sc->ns) : 0;
        if (nl && strncmp(d, sc->ns, nl) == 0 && d[nl] == '.')
            d += nl + 1;
        snprintf(domain, sizeof domain, "%s", d);
        snprintf(first, sizeof first, "%.*s", (int)strcspn(domain, "."), domain);
    }
    const char *host;
    json_t *ni;
    json_object_foreach((json_t *)table, host, ni)
    {
        const char *reg = json_string_value(json_object_get(ni, "registry"));
        json_t *set = json_object(), *v4 = json_array(), *v6 = json_array();
        int rc = set && v4 && v6 ? 0 : -1;
        if (rc == 0)
            rc = reg && strcmp(reg, "Kubernetes") == 0 ? alt_hosts(set, host, ni, sc, domain, first)
                                                       : set_add(set, host);
        if (rc == 0)
            rc = split_ips(json_object_get(ni, "ips"), v4, v6);
        if (rc == 0 && (json_array_size(v4) || json_array_size(v6)))
            rc = add_answers(t, set, v4, v6, sc);
        json_decref(set);
        json_decref(v4);
        json_decref(v6);
        if (rc != 0)
            return -1;
    }
    return 0;
}

wp_dns_table *wp_dns_table_new(const json_t *name_table, const wp_dns_scope *scope)
{
    static const wp_dns_scope none = {0};
    if (!json_is_object(name_table))
        return NULL;
    wp_dns_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->nt = json_incref((json_t *)name_table);
    t->names = json_object();
    t->cname = json_object();
    const json_t *table = json_object_get(name_table, "table");
    if (!t->names || !t->cname ||
        (json_is_object(table) && build(t, table, scope ? scope : &none) != 0)) {
        wp_dns_table_free(t);
        return NULL;
    }
    return t;
}

void wp_dns_table_free(wp_dns_table *t)
{
    if (!t)
        return;
    json_decref(t->nt);
    json_decref(t->names);
    json_decref(t->cname);
    free(t);
}

const json_t *wp_dns_table_name_table(const wp_dns_table *t)
{
    return t ? t->nt : NULL;
}

size_t wp_dns_table_size(const wp_dns_table *t)
{
    return t ? json_object_size(t->names) + json_object_size(t->cname) : 0;
}

/* ---- answering ---- */

static bool known(const wp_dns_table *t, const char *name)
{
    return json_object_get(t->names, name) || json_object_get(t->cname, name);
}

static ldns_rr *make_rr(const char *owner, ldns_rr_type type, ldns_rdf *data)
{
    ldns_rdf *o = ldns_dname_new_frm_str(owner);
    ldns_rr *rr = o && data ? ldns_rr_new() : NULL;
    if (!rr) {
        ldns_rdf_deep_free(o);
        ldns_rdf_deep_free(data);
        return NULL;
    }
    ldns_rr_set_owner(rr, o);
    ldns_rr_set_type(rr, type);
    ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
    ldns_rr_set_ttl(rr, WP_DNS_TTL);
    if (!ldns_rr_push_rdf(rr, data)) {
        ldns_rdf_deep_free(data);
        ldns_rr_free(rr);
        return NULL;
    }
    return rr;
}

static int push(ldns_pkt *p, ldns_rr *rr)
{
    if (!rr)
        return -1;
    if (!ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr)) {
        ldns_rr_free(rr);
        return -1;
    }
    return 0;
}

/* lookupHost: -1 OOM, 0 not ours (forward), 1 answered into p. */
static int lookup(const wp_dns_table *t, ldns_rr_type qt, const char *qname, ldns_pkt *p)
{
    const char *name = qname;
    bool wildcard = false;
    char wc[1100];
    if (!known(t, name)) {
        for (const char *d = strchr(qname, '.'); d && d[1]; d = strchr(d + 1, '.')) {
            snprintf(wc, sizeof wc, "*.%s", d + 1);
            if (known(t, wc)) {
                name = wc;
                wildcard = true;
                break;
            }
        }
        if (!wildcard)
            return 0;
    }
    if (qt != LDNS_RR_TYPE_A && qt != LDNS_RR_TYPE_AAAA)
        return 0; /* Istio: other types of a known host go upstream */
    const char *target = json_string_value(json_object_get(t->cname, name));
    const char *host = target ? target : name;
    const json_t *ips =
        json_object_get(json_object_get(t->names, host), qt == LDNS_RR_TYPE_A ? "a" : "aaaa");
    if (json_array_size(ips) == 0)
        return 1; /* known host, no record of this type: NOERROR, no answers */
    if (target && push(p, make_rr(name, LDNS_RR_TYPE_CNAME, ldns_dname_new_frm_str(target))) != 0)
        return -1;
    for (size_t i = 0; i < json_array_size(ips); i++) {
        const char *ip = json_string_value(json_array_get(ips, i));
        ldns_rdf *d =
            ldns_rdf_new_frm_str(qt == LDNS_RR_TYPE_A ? LDNS_RDF_TYPE_A : LDNS_RDF_TYPE_AAAA, ip);
        if (push(p, make_rr(wildcard ? qname : host, qt, d)) != 0)
            return -1;
    }
    return 1;
}

/* miekg's SetReply: id, opcode, RD, CD, QR, the first question. */
static ldns_pkt *reply_to(const ldns_pkt *q, ldns_pkt_rcode rc)
{
    ldns_pkt *r = ldns_pkt_new();
    if (!r)
        return NULL;
    ldns_pkt_set_id(r, ldns_pkt_id(q));
    ldns_pkt_set_qr(r, true);
    ldns_pkt_set_opcode(r, ldns_pkt_get_opcode(q));
    ldns_pkt_set_rd(r, ldns_pkt_rd(q));
    ldns_pkt_set_cd(r, ldns_pkt_cd(q));
    ldns_pkt_set_rcode(r, rc);
    const ldns_rr_list *qs = ldns_pkt_question(q);
    if (qs && ldns_rr_list_rr_count(qs) > 0) {
        ldns_rr *c = ldns_rr_clone(ldns_rr_list_rr(qs, 0));
        if (!c || !ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, c)) {
            ldns_rr_free(c);
            ldns_pkt_free(r);
            return NULL;
        }
    }
    return r;
}

static int to_wire(ldns_pkt *p, uint8_t **out, size_t *out_len)
{
    uint8_t *w = NULL;
    size_t n = 0;
    ldns_status st = ldns_pkt2wire(&w, p, &n);
    ldns_pkt_free(p);
    if (st != LDNS_STATUS_OK || !w)
        return WP_DNS_NOMEM;
    *out = w;
    *out_len = n;
    return WP_DNS_ANSWER;
}

/* A bare header reply (the query did not parse): id, opcode, RD kept. */
static int header_reply(const uint8_t *q, int rcode, uint8_t **out, size_t *out_len)
{
    uint8_t *h = calloc(1, 12);
    if (!h)
        return WP_DNS_NOMEM;
    h[0] = q[0];
    h[1] = q[1];
    h[2] = (uint8_t)(0x80 | (q[2] & 0x79)); /* QR, opcode, RD */
    h[3] = (uint8_t)(rcode & 0x0f);
    *out = h;
    *out_len = 12;
    return WP_DNS_ANSWER;
}

static void name_of(const ldns_rr *qrr, char *buf, size_t cap)
{
    char *s = ldns_rdf2str(ldns_rr_owner(qrr));
    size_t i = 0;
    for (; s && s[i] && i + 1 < cap; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    if (cap)
        buf[i] = '\0';
    free(s);
}

int wp_dns_answer(const wp_dns_table *t, const uint8_t *q, size_t len, bool tcp, uint8_t **out,
                  size_t *out_len, char *qname, size_t cap)
{
    *out = NULL;
    *out_len = 0;
    if (qname && cap)
        qname[0] = '\0';
    if (!q || len < 12 || (q[2] & 0x80))
        return WP_DNS_DROP; /* too short for a header, or a response */
    ldns_pkt *p = NULL;
    if (ldns_wire2pkt(&p, q, len) != LDNS_STATUS_OK)
        return header_reply(q, LDNS_RCODE_FORMERR, out, out_len);
    int rc;
    if (ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY) {
        rc = to_wire(reply_to(p, LDNS_RCODE_NOTIMPL), out, out_len);
    } else if (ldns_pkt_qdcount(p) == 0 || !t) {
        rc = to_wire(reply_to(p, LDNS_RCODE_SERVFAIL), out, out_len);
    } else {
        const ldns_rr *qrr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
        char name[1100];
        name_of(qrr, name, sizeof name);
        if (qname)
            snprintf(qname, cap, "%s", name);
        ldns_pkt *r = reply_to(p, LDNS_RCODE_NOERROR);
        int found = r ? lookup(t, ldns_rr_get_type(qrr), name, r) : -1;
        if (found <= 0) {
            ldns_pkt_free(r);
            rc = found == 0 ? WP_DNS_FORWARD : WP_DNS_NOMEM;
        } else {
            ldns_pkt_set_aa(r, true); /* we are the authority for known hostnames */
            rc = to_wire(r, out, out_len);
        }
    }
    size_t max = rc == WP_DNS_ANSWER ? wp_dns_max_size(q, len, tcp) : 0;
    ldns_pkt_free(p);
    if (rc == WP_DNS_ANSWER && *out_len > max && wp_dns_truncate(out, out_len, max) != 0) {
        free(*out);
        *out = NULL;
        return WP_DNS_NOMEM;
    }
    return rc;
}

int wp_dns_servfail(const uint8_t *q, size_t len, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!q || len < 12 || (q[2] & 0x80))
        return WP_DNS_DROP;
    ldns_pkt *p = NULL;
    if (ldns_wire2pkt(&p, q, len) != LDNS_STATUS_OK)
        return header_reply(q, LDNS_RCODE_SERVFAIL, out, out_len);
    int rc = to_wire(reply_to(p, LDNS_RCODE_SERVFAIL), out, out_len);
    ldns_pkt_free(p);
    return rc;
}

size_t wp_dns_max_size(const uint8_t *q, size_t len, bool tcp)
{
    if (tcp)
        return WP_DNS_TCP_MAX;
    ldns_pkt *p = NULL;
    size_t n = 0;
    if (q && ldns_wire2pkt(&p, q, len) == LDNS_STATUS_OK && ldns_pkt_edns(p))
        n = ldns_pkt_edns_udp_size(p);
    ldns_pkt_free(p);
    return n < WP_DNS_UDP_MIN ? WP_DNS_UDP_MIN : n;
}

int wp_dns_truncate(uint8_t **msg, size_t *len, size_t max)
{
    if (*len <= max)
        return 0;
    ldns_pkt *p = NULL;
    if (ldns_wire2pkt(&p, *msg, *len) != LDNS_STATUS_OK)
        return -1;
    ldns_pkt *r = reply_to(p, ldns_pkt_get_rcode(p));
    if (r) {
        ldns_pkt_set_aa(r, ldns_pkt_aa(p));
        ldns_pkt_set_ra(r, ldns_pkt_ra(p));
        ldns_pkt_set_ad(r, ldns_pkt_ad(p));
        ldns_pkt_set_tc(r, true);
    }
    ldns_pkt_free(p);
    uint8_t *w = NULL;
    size_t n = 0;
    if (!r || to_wire(r, &w, &n) != WP_DNS_ANSWER)
        return -1;
    free(*msg);
    *msg = w;
    *len = n;
    return 0;
}
