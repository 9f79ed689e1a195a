/*
 * iptables.c - Istio's capture rules (see iptables.h for the Istio sources followed).
 */
#include "capture/iptables.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

const char *const wf_ipt_istio_chains[] = {
    "ISTIO_INBOUND",    "ISTIO_REDIRECT", "ISTIO_IN_REDIRECT", "ISTIO_OUTPUT",
    "ISTIO_OUTPUT_DNS", "ISTIO_DIVERT",   "ISTIO_TPROXY",      "ISTIO_DROP",
};
const size_t wf_ipt_istio_chain_count = sizeof wf_ipt_istio_chains / sizeof *wf_ipt_istio_chains;

#define DNS_PORT      "15053" /* constants.IstioAgentDNSListenerPort */
#define OUTBOUND_MARK "1338"
#define MAX_MULTIPORT 15

void wf_ipt_opts_default(wf_ipt_opts *o)
{
    memset(o, 0, sizeof *o);
    o->proxy_port = "15001";
    o->inbound_capture_port = "15006";
    o->inbound_tunnel_port = "15008";
    o->tproxy_mark = "1337";
    o->tproxy_route_table = "133";
    o->owner_groups_include = "*";
    o->owner_groups_exclude = "";
    o->host_ipv4_loopback_cidr = "127.0.0.1/32";
}

static const char *S(const char *s)
{
    return s ? s : "";
}

/* ---- comma lists (Istio's config.Split: empty items dropped) ---- */

typedef struct list {
    char **v;
    size_t n;
    char *buf;
} list;

static bool list_split(const char *s, list *l)
{
    memset(l, 0, sizeof *l);
    s = S(s);
    size_t len = strlen(s), cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += s[i] == ',';
    l->buf = strdup(s);
    l->v = calloc(cap, sizeof *l->v);
    if (!l->buf || !l->v) {
        free(l->buf);
        free(l->v);
        memset(l, 0, sizeof *l);
        return false;
    }
    char *save = NULL;
    for (char *t = strtok_r(l->buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (*t)
            l->v[l->n++] = t;
    return true;
}

static void list_free(list *l)
{
    free(l->buf);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* ---- rules ---- */

static void rules_free(wf_ipt_rules *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].table);
        free(r->v[i].chain);
        free(r->v[i].params);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

void wf_ipt_plan_free(wf_ipt_plan *plan)
{
    rules_free(&plan->v4);
    rules_free(&plan->v6);
}

static void rules_push(wf_ipt_rules *r, const char *table, const char *chain, char *params)
{
    if (r->failed || !params) {
        r->failed = true;
        free(params);
        return;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        wf_ipt_rule *v = realloc(r->v, cap * sizeof *v);
        if (!v) {
            r->failed = true;
            free(params);
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    wf_ipt_rule *x = &r->v[r->n];
    x->table = strdup(table);
    x->chain = strdup(chain);
    x->params = params;
    if (!x->table || !x->chain) {
        free(x->table);
        free(x->chain);
        free(params);
        r->failed = true;
        return;
    }
    r->n++;
}

static char *vfmt(const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

/* The builder state: which families get a rule (AppendRule = both when IPv6 is on). */
typedef struct bld {
    wf_ipt_plan *p;
    bool v6;
} bld;

static void add(wf_ipt_rules *r, const char *table, const char *chain, const char *fmt, va_list ap)
{
    char *rest = vfmt(fmt, ap);
    if (!rest) {
        r->failed = true;
        return;
    }
    size_t n = strlen(chain) + strlen(rest) + 8;
    char *params = malloc(n);
    if (params)
        snprintf(params, n, "-A %s %s", chain, rest);
    free(rest);
    rules_push(r, table, chain, params);
}

__attribute__((format(printf, 4, 5))) static void append4(bld *b, const char *table,
                                                          const char *chain, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(&b->p->v4, table, chain, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 4, 5))) static void append6(bld *b, const char *table,
                                                          const char *chain, const char *fmt, ...)
{
    if (!b->v6)
        return;
    va_list ap;
    va_start(ap, fmt);
    add(&b->p->v6, table, chain, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 4, 5))) static void append(bld *b, const char *table,
                                                         const char *chain, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(&b->p->v4, table, chain, fmt, ap);
    va_end(ap);
    if (b->v6) {
        va_start(ap, fmt);
        add(&b->p->v6, table, chain, fmt, ap);
        va_end(ap);
    }
}

static void insert_one(wf_ipt_rules *r, const char *table, const char *chain, int pos,
                       const char *rest)
{
    size_t n = strlen(chain) + strlen(rest) + 24;
    char *params = malloc(n);
    if (params)
        snprintf(params, n, "-I %s %d %s", chain, pos, rest);
    rules_push(r, table, chain, params);
}

static void insert4(bld *b, const char *table, const char *chain, int pos, const char *rest)
{
    insert_one(&b->p->v4, table, chain, pos, rest);
}

static void insert6(bld *b, const char *table, const char *chain, int pos, const char *rest)
{
    if (b->v6)
        insert_one(&b->p->v6, table, chain, pos, rest);
}

static void insert(bld *b, const char *table, const char *chain, int pos, const char *rest)
{
    insert4(b, table, chain, pos, rest);
    insert6(b, table, chain, pos, rest);
}

/* ---- CIDRs (Istio's config.SeparateV4V6 with netip.ParsePrefix) ---- */

typedef struct range {
    bool wildcard, has_loopback;
    char **own; /* canonical "addr/bits" strings */
    size_t n;
} range;

static void range_free(range *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->own[i]);
    free(r->own);
    memset(r, 0, sizeof *r);
}

static bool range_add(range *r, const char *s)
{
    char **v = realloc(r->own, (r->n + 1) * sizeof *v);
    if (!v)
        return false;
    r->own = v;
    if (!(r->own[r->n] = strdup(s)))
        return false;
    r->n++;
    return true;
}

/* Parses "addr/bits"; writes its canonical text into out. 4 or 6, or 0 when invalid. */
static int parse_prefix(const char *s, char *out, size_t outlen, bool *loopback)
{
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1])
        return 0;
    char addr[INET6_ADDRSTRLEN + 1];
    size_t alen = (size_t)(slash - s);
    if (alen >= sizeof addr)
        return 0;
    memcpy(addr, s, alen);
    addr[alen] = '\0';
    char *end = NULL;
    long bits = strtol(slash + 1, &end, 10);
    if (*end || slash[1] == '+' || slash[1] == '-' || (slash[1] == '0' && slash[2]))
        return 0;
    unsigned char bin[16];
    char txt[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET, addr, bin) == 1) {
        if (bits < 0 || bits > 32)
            return 0;
        *loopback = bin[0] == 127;
        inet_ntop(AF_INET, bin, txt, sizeof txt);
        snprintf(out, outlen, "%s/%ld", txt, bits);
        return 4;
    }
    if (inet_pton(AF_INET6, addr, bin) == 1 && !strchr(addr, '%')) {
        if (bits < 0 || bits > 128)
            return 0;
        static const unsigned char one[16] = {[15] = 1};
        *loopback = memcmp(bin, one, 16) == 0;
        inet_ntop(AF_INET6, bin, txt, sizeof txt);
        snprintf(out, outlen, "%s/%ld", txt, bits);
        return 6;
    }
    return 0;
}

static int separate(const char *field, const char *val, range *v4, range *v6, char *err,
                    size_t errlen)
{
    memset(v4, 0, sizeof *v4);
    memset(v6, 0, sizeof *v6);
    if (strcmp(S(val), "*") == 0) {
        v4->wildcard = v6->wildcard = true;
        return 0;
    }
    list l;
    if (!list_split(val, &l))
        return -2;
    int rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        char canon[INET6_ADDRSTRLEN + 8];
        bool lo = false;
        int fam = parse_prefix(l.v[i], canon, sizeof canon, &lo);
        if (!fam) {
            snprintf(err, errlen, "%s: \"%s\" is not a CIDR (want ADDRESS/BITS)", field, l.v[i]);
            rc = -1;
            break;
        }
        range *r = fam == 4 ? v4 : v6;
        r->has_loopback |= lo;
        if (!range_add(r, canon))
            rc = -2;
    }
    list_free(&l);
    if (rc) {
        range_free(v4);
        range_free(v6);
    }
    return rc;
}

/* ---- the rule set (run.go Run) ---- */

static void multiport(bld *b, const char *chain, const char *table, const char *proto,
                      const list *ports, const char *target)
{
    if (ports->n == 1) {
        append(b, table, chain, "-p %s --dport %s -j %s", proto, ports->v[0], target);
        return;
    }
    for (size_t i = 0; i < ports->n; i += MAX_MULTIPORT) {
        size_t end = i + MAX_MULTIPORT < ports->n ? i + MAX_MULTIPORT : ports->n;
        if (end - i == 1) {
            append(b, table, chain, "-p %s --dport %s -j %s", proto, ports->v[i], target);
            continue;
        }
        wf_strbuf s = WF_STRBUF_INIT;
        for (size_t j = i; j < end; j++) {
            if (j > i)
                wf_strbuf_putc(&s, ',');
            wf_strbuf_puts(&s, ports->v[j]);
        }
        if (wf_strbuf_failed(&s))
            b->p->v4.failed = true;
        else
            append(b, table, chain, "-p %s -m multiport --dports %s -j %s", proto,
                   wf_strbuf_cstr(&s), target);
        wf_strbuf_free(&s);
    }
}

static void inbound(bld *b, const wf_ipt_opts *o, bool tproxy)
{
    const char *inc = S(o->inbound_ports_include);
    if (!*inc)
        return;
    const char *table = tproxy ? "mangle" : "nat";
    if (tproxy) {
        append(b, "mangle", "ISTIO_DIVERT", "-j MARK --set-mark %s", S(o->tproxy_mark));
        append(b, "mangle", "ISTIO_DIVERT", "-j ACCEPT");
        append4(b, "mangle", "ISTIO_TPROXY",
                "! -d %s -p tcp -j TPROXY --tproxy-mark %s/0xffffffff --on-port %s",
                S(o->host_ipv4_loopback_cidr), S(o->tproxy_mark), S(o->inbound_capture_port));
        append6(b, "mangle", "ISTIO_TPROXY",
                "! -d ::1/128 -p tcp -j TPROXY --tproxy-mark %s/0xffffffff --on-port %s",
                S(o->tproxy_mark), S(o->inbound_capture_port));
    }
    append(b, table, "PREROUTING", "-p tcp -j ISTIO_INBOUND");
    if (strcmp(inc, "*") == 0) {
        list ex;
        if (!list_split(o->inbound_ports_exclude, &ex)) {
            b->p->v4.failed = true;
            return;
        }
        if (ex.n)
            multiport(b, "ISTIO_INBOUND", table, "tcp", &ex, "RETURN");
        list_free(&ex);
        if (tproxy) {
            append(b, "mangle", "ISTIO_INBOUND",
                   "-p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT");
            append(b, "mangle", "ISTIO_INBOUND", "-p tcp -j ISTIO_TPROXY");
        } else {
            append(b, "nat", "ISTIO_INBOUND", "-p tcp -j ISTIO_IN_REDIRECT");
        }
        return;
    }
    list ports;
    if (!list_split(inc, &ports)) {
        b->p->v4.failed = true;
        return;
    }
    for (size_t i = 0; i < ports.n; i++) {
        if (tproxy) {
            append(b, "mangle", "ISTIO_INBOUND",
                   "-p tcp --dport %s -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT",
                   ports.v[i]);
            append(b, "mangle", "ISTIO_INBOUND", "-p tcp --dport %s -j ISTIO_TPROXY", ports.v[i]);
        } else {
            append(b, "nat", "ISTIO_INBOUND", "-p tcp --dport %s -j ISTIO_IN_REDIRECT", ports.v[i]);
        }
    }
    list_free(&ports);
}

/* handleOutboundIncludeRules for one family. */
static void outbound_include(bld *b, const range *r, const list *virt, bool v6)
{
    void (*app)(bld *, const char *, const char *, const char *, ...) = v6 ? append6 : append4;
    void (*ins)(bld *, const char *, const char *, int, const char *) = v6 ? insert6 : insert4;
    if (r->wildcard) {
        app(b, "nat", "ISTIO_OUTPUT", "-j ISTIO_REDIRECT");
        for (size_t i = 0; i < virt->n; i++) {
            char rest[128];
            snprintf(rest, sizeof rest, "-i %s -j ISTIO_REDIRECT", virt->v[i]);
            ins(b, "nat", "PREROUTING", 1, rest);
        }
        return;
    }
    for (size_t c = 0; c < r->n; c++) {
        for (size_t i = 0; i < virt->n; i++) {
            char rest[192];
            snprintf(rest, sizeof rest, "-i %s -d %s -j ISTIO_REDIRECT", virt->v[i], r->own[c]);
            ins(b, "nat", "PREROUTING", 1, rest);
        }
        app(b, "nat", "ISTIO_OUTPUT", "-d %s -j ISTIO_REDIRECT", r->own[c]);
    }
}

/* The per-uid/gid rules of ISTIO_OUTPUT. */
static void owner_rules(bld *b, const wf_ipt_opts *o, const char *kind, const char *id,
                        bool dns_multiport, bool redirect_dns, bool loopback_included)
{
    const char *lo4 = S(o->host_ipv4_loopback_cidr), *tun = S(o->inbound_tunnel_port);
    if (dns_multiport) {
        append4(b, "nat", "ISTIO_OUTPUT",
                "-o lo ! -d %s -p tcp -m multiport ! --dports 53,%s -m owner --%s-owner %s -j "
                "ISTIO_IN_REDIRECT",
                lo4, tun, kind, id);
        append6(b, "nat", "ISTIO_OUTPUT",
                "-o lo ! -d ::1/128 -p tcp -m multiport ! --dports 53,%s -m owner --%s-owner %s "
                "-j ISTIO_IN_REDIRECT",
                tun, kind, id);
    } else {
        append4(b, "nat", "ISTIO_OUTPUT",
                "-o lo ! -d %s -p tcp ! --dport %s -m owner --%s-owner %s -j ISTIO_IN_REDIRECT",
                lo4, tun, kind, id);
        append6(b, "nat", "ISTIO_OUTPUT",
                "-o lo ! -d ::1/128 -p tcp ! --dport %s -m owner --%s-owner %s -j "
                "ISTIO_IN_REDIRECT",
                tun, kind, id);
    }
    if (!loopback_included) {
        if (redirect_dns)
            append(b, "nat", "ISTIO_OUTPUT",
                   "-o lo -p tcp ! --dport 53 -m owner ! --%s-owner %s -j RETURN", kind, id);
        else
            append(b, "nat", "ISTIO_OUTPUT", "-o lo -m owner ! --%s-owner %s -j RETURN", kind, id);
    }
    append(b, "nat", "ISTIO_OUTPUT", "-m owner --%s-owner %s -j RETURN", kind, id);
}

/* handleCaptureByOwnerGroup with ParseInterceptFilter(include, exclude). */
static void owner_groups(bld *b, const wf_ipt_opts *o)
{
    const char *inc = o->owner_groups_include ? o->owner_groups_include : "*";
    list l;
    bool except = strcmp(inc, "*") == 0;
    if (!list_split(except ? o->owner_groups_exclude : inc, &l)) {
        b->p->v4.failed = true;
        return;
    }
    if (except) {
        for (size_t i = 0; i < l.n; i++)
            append(b, "nat", "ISTIO_OUTPUT", "-m owner --gid-owner %s -j RETURN", l.v[i]);
    } else {
        wf_strbuf s = WF_STRBUF_INIT;
        for (size_t i = 0; i < l.n; i++)
            wf_strbuf_printf(&s, "-m owner ! --gid-owner %s ", l.v[i]);
        if (wf_strbuf_failed(&s))
            b->p->v4.failed = true;
        else
            append(b, "nat", "ISTIO_OUTPUT", "%s-j RETURN", wf_strbuf_cstr(&s));
        wf_strbuf_free(&s);
    }
    list_free(&l);
}

/* SetupDNSRedir + addDNSConntrackZones. */
static void dns(bld *b, const wf_ipt_opts *o, const list *uids, const list *gids, const list *s4,
                const list *s6)
{
    bool all = o->capture_all_dns;
    append(b, "raw", "OUTPUT", "-j ISTIO_OUTPUT_DNS");
    if (all || s4->n)
        append4(b, "nat", "ISTIO_OUTPUT", "-j ISTIO_OUTPUT_DNS");
    if (all || s6->n)
        append6(b, "nat", "ISTIO_OUTPUT", "-j ISTIO_OUTPUT_DNS");
    if (all) {
        append(b, "nat", "ISTIO_OUTPUT_DNS", "-p tcp --dport 53 -j REDIRECT --to-ports " DNS_PORT);
    } else {
        for (size_t i = 0; i < s4->n; i++)
            append4(b, "nat", "ISTIO_OUTPUT_DNS",
                    "-p tcp --dport 53 -d %s/32 -j REDIRECT --to-ports " DNS_PORT, s4->v[i]);
        for (size_t i = 0; i < s6->n; i++)
            append6(b, "nat", "ISTIO_OUTPUT_DNS",
                    "-p tcp --dport 53 -d %s/128 -j REDIRECT --to-ports " DNS_PORT, s6->v[i]);
    }
    if (all) {
        append(b, "nat", "ISTIO_OUTPUT_DNS", "-p udp --dport 53 -j REDIRECT --to-port " DNS_PORT);
    } else {
        for (size_t i = 0; i < s4->n; i++)
            append4(b, "nat", "ISTIO_OUTPUT_DNS",
                    "-p udp --dport 53 -d %s/32 -j REDIRECT --to-port " DNS_PORT, s4->v[i]);
        for (size_t i = 0; i < s6->n; i++)
            append6(b, "nat", "ISTIO_OUTPUT_DNS",
                    "-p udp --dport 53 -d %s/128 -j REDIRECT --to-port " DNS_PORT, s6->v[i]);
    }
    const list *ids[2] = {uids, gids};
    const char *kinds[2] = {"uid", "gid"};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < ids[k]->n; i++) {
            append(b, "raw", "ISTIO_OUTPUT_DNS",
                   "-p udp --dport 53 -m owner --%s-owner %s -j CT --zone 1", kinds[k],
                   ids[k]->v[i]);
            append(b, "raw", "ISTIO_OUTPUT_DNS",
                   "-p udp --sport " DNS_PORT " -m owner --%s-owner %s -j CT --zone 2", kinds[k],
                   ids[k]->v[i]);
        }
    }
    if (all) {
        append(b, "raw", "PREROUTING", "-j ISTIO_INBOUND");
        append(b, "raw", "ISTIO_OUTPUT_DNS", "-p udp --dport 53 -j CT --zone 2");
        append(b, "raw", "ISTIO_INBOUND", "-p udp --sport 53 -j CT --zone 1");
        return;
    }
    if (s4->n)
        append4(b, "raw", "PREROUTING", "-j ISTIO_INBOUND");
    for (size_t i = 0; i < s4->n; i++) {
        append4(b, "raw", "ISTIO_OUTPUT_DNS", "-p udp --dport 53 -d %s/32 -j CT --zone 2",
                s4->v[i]);
        append4(b, "raw", "ISTIO_INBOUND", "-p udp --sport 53 -s %s/32 -j CT --zone 1", s4->v[i]);
    }
    if (s6->n)
        append6(b, "raw", "PREROUTING", "-j ISTIO_INBOUND");
    for (size_t i = 0; i < s6->n; i++) {
        append6(b, "raw", "ISTIO_OUTPUT_DNS", "-p udp --dport 53 -d %s/128 -j CT --zone 2",
                s6->v[i]);
        append6(b, "raw", "ISTIO_INBOUND", "-p udp --sport 53 -s %s/128 -j CT --zone 1", s6->v[i]);
    }
}

static void tproxy_tail(bld *b, const wf_ipt_opts *o, const list *uids, const list *gids)
{
    const char *mark = S(o->tproxy_mark), *lo4 = S(o->host_ipv4_loopback_cidr);
    append(b, "mangle", "PREROUTING", "-p tcp -m mark --mark %s -j CONNMARK --save-mark", mark);
    append(b, "mangle", "OUTPUT", "-p tcp -o lo -m mark --mark %s -j RETURN", mark);
    const list *ids[2] = {uids, gids};
    const char *kinds[2] = {"uid", "gid"};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < ids[k]->n; i++) {
            append4(b, "mangle", "OUTPUT",
                    "! -d %s -p tcp -o lo -m owner --%s-owner %s -j MARK --set-mark " OUTBOUND_MARK,
                    lo4, kinds[k], ids[k]->v[i]);
            append6(b, "mangle", "OUTPUT",
                    "! -d ::1/128 -p tcp -o lo -m owner --%s-owner %s -j MARK "
                    "--set-mark " OUTBOUND_MARK,
                    kinds[k], ids[k]->v[i]);
        }
    }
    append(b, "mangle", "OUTPUT", "-p tcp -m connmark --mark %s -j CONNMARK --restore-mark", mark);
    char rest[128];
    snprintf(rest, sizeof rest, "-p tcp -m mark --mark %s -j RETURN", mark);
    insert(b, "mangle", "ISTIO_INBOUND", 1, rest);
    insert4(b, "mangle", "ISTIO_INBOUND", 2, "-p tcp -s 127.0.0.6/32 -i lo -j RETURN");
    insert6(b, "mangle", "ISTIO_INBOUND", 2, "-p tcp -s ::6/128 -i lo -j RETURN");
    insert(b, "mangle", "ISTIO_INBOUND", 3,
           "-p tcp -i lo -m mark ! --mark " OUTBOUND_MARK " -j RETURN");
}

typedef struct lists {
    list exif, virt, oex, oinc, uids, gids, s4, s6;
} lists;

static void lists_free(lists *l)
{
    list_free(&l->exif);
    list_free(&l->virt);
    list_free(&l->oex);
    list_free(&l->oinc);
    list_free(&l->uids);
    list_free(&l->gids);
    list_free(&l->s4);
    list_free(&l->s6);
}

static bool lists_split(const wf_ipt_opts *o, lists *l)
{
    memset(l, 0, sizeof *l);
    bool ok = list_split(o->exclude_interfaces, &l->exif) &&
              list_split(o->kube_virt_interfaces, &l->virt) &&
              list_split(o->outbound_ports_exclude, &l->oex) &&
              list_split(o->outbound_ports_include, &l->oinc) &&
              list_split(o->proxy_uid, &l->uids) && list_split(o->proxy_gid, &l->gids) &&
              list_split(o->dns_servers_v4, &l->s4) && list_split(o->dns_servers_v6, &l->s6);
    if (!ok)
        lists_free(l);
    return ok;
}

static void build_rules(bld *b, const wf_ipt_opts *o, const lists *l, const range *ex4,
                        const range *ex6, const range *in4, const range *in6)
{
    bool tproxy = strcmp(S(o->interception_mode), "TPROXY") == 0;
    bool redirect_dns = o->redirect_dns;
    if (redirect_dns && !o->capture_all_dns && l->s4.n == 0 && l->s6.n == 0)
        redirect_dns = false; /* Istio: "DNS capture disabled" */

    for (size_t i = 0; i < l->exif.n; i++) {
        append(b, "nat", "PREROUTING", "-i %s -j RETURN", l->exif.v[i]);
        append(b, "nat", "OUTPUT", "-o %s -j RETURN", l->exif.v[i]);
    }
    if (tproxy) {
        for (size_t i = 0; i < l->exif.n; i++) {
            append(b, "mangle", "PREROUTING", "-i %s -j RETURN", l->exif.v[i]);
            append(b, "mangle", "OUTPUT", "-o %s -j RETURN", l->exif.v[i]);
        }
    }
    for (size_t i = 0; i < l->virt.n; i++) {
        char rest[128];
        snprintf(rest, sizeof rest, "-i %s -j RETURN", l->virt.v[i]);
        insert(b, "nat", "PREROUTING", 1, rest);
    }
    if (o->drop_invalid) {
        append(b, "mangle", "PREROUTING", "-m conntrack --ctstate INVALID -j ISTIO_DROP");
        append(b, "mangle", "ISTIO_DROP", "-j DROP");
    }
    append(b, "nat", "ISTIO_INBOUND", "-p tcp --dport %s -j RETURN", S(o->inbound_tunnel_port));
    append(b, "nat", "ISTIO_REDIRECT", "-p tcp -j REDIRECT --to-ports %s", S(o->proxy_port));
    append(b, "nat", "ISTIO_IN_REDIRECT", "-p tcp -j REDIRECT --to-ports %s",
           S(o->inbound_capture_port));
    inbound(b, o, tproxy);
    append(b, "nat", "OUTPUT", "-j ISTIO_OUTPUT");
    if (l->oex.n) {
        multiport(b, "ISTIO_OUTPUT", "nat", "tcp", &l->oex, "RETURN");
        multiport(b, "ISTIO_OUTPUT", "nat", "udp", &l->oex, "RETURN");
    }
    append4(b, "nat", "ISTIO_OUTPUT", "-o lo -s 127.0.0.6/32 -j RETURN");
    append6(b, "nat", "ISTIO_OUTPUT", "-o lo -s ::6/128 -j RETURN");
    bool lo_inc = in4->has_loopback || in6->has_loopback;
    for (size_t i = 0; i < l->uids.n; i++)
        owner_rules(b, o, "uid", l->uids.v[i], redirect_dns, redirect_dns, lo_inc);
    for (size_t i = 0; i < l->gids.n; i++)
        owner_rules(b, o, "gid", l->gids.v[i], false, redirect_dns, lo_inc);
    owner_groups(b, o);
    if (redirect_dns)
        dns(b, o, &l->uids, &l->gids, &l->s4, &l->s6);
    append4(b, "nat", "ISTIO_OUTPUT", "-d %s -j RETURN", S(o->host_ipv4_loopback_cidr));
    append6(b, "nat", "ISTIO_OUTPUT", "-d ::1/128 -j RETURN");
    for (size_t i = 0; i < ex4->n; i++)
        append4(b, "nat", "ISTIO_OUTPUT", "-d %s -j RETURN", ex4->own[i]);
    for (size_t i = 0; i < ex6->n; i++)
        append6(b, "nat", "ISTIO_OUTPUT", "-d %s -j RETURN", ex6->own[i]);
    for (size_t i = 0; i < l->oinc.n; i++)
        append(b, "nat", "ISTIO_OUTPUT", "-p tcp --dport %s -j ISTIO_REDIRECT", l->oinc.v[i]);
    outbound_include(b, in4, &l->virt, false);
    outbound_include(b, in6, &l->virt, true);
    if (tproxy)
        tproxy_tail(b, o, &l->uids, &l->gids);
}

int wf_ipt_build(const wf_ipt_opts *o, wf_ipt_plan *plan, char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    if (errlen)
        err[0] = '\0';
    range ex4, ex6, in4, in6;
    int rc = separate("istio-service-exclude-cidr (-x)", o->outbound_ip_ranges_exclude, &ex4, &ex6,
                      err, errlen);
    if (rc)
        return rc;
    if (ex4.wildcard) {
        snprintf(err, errlen,
                 "istio-service-exclude-cidr (-x): \"*\" is not allowed "
                 "(invalid value for OUTBOUND_IP_RANGES_EXCLUDE)");
        return -1;
    }
    rc =
        separate("istio-service-cidr (-i)", o->outbound_ip_ranges_include, &in4, &in6, err, errlen);
    if (rc) {
        range_free(&ex4);
        range_free(&ex6);
        return rc;
    }
    lists l;
    if (!lists_split(o, &l)) {
        rc = -2;
    } else {
        bld b = {.p = plan, .v6 = o->enable_ipv6};
        build_rules(&b, o, &l, &ex4, &ex6, &in4, &in6);
        lists_free(&l);
        if (plan->v4.failed || plan->v6.failed)
            rc = -2;
    }
    range_free(&ex4);
    range_free(&ex6);
    range_free(&in4);
    range_free(&in6);
    if (rc) {
        if (rc == -2)
            snprintf(err, errlen, "out of memory");
        wf_ipt_plan_free(plan);
    }
    return rc;
}

/* ---- renderers ---- */

static bool builtin(const char *chain)
{
    static const char *const b[] = {"INPUT",       "OUTPUT", "FORWARD", "PREROUTING",
                                    "POSTROUTING", "ACCEPT", "RETURN",  "DROP"};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        if (strcmp(chain, b[i]) == 0)
            return true;
    return false;
}

static const char *const TABLES[] = {"filter", "mangle", "nat", "raw"}; /* sorted */

/* Whether "table:chain" appears among the first n pairs collected so far. */
typedef struct seen {
    const char *t[256], *c[256];
    size_t n;
} seen;

static bool seen_add(seen *s, const char *t, const char *c)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->t[i], t) == 0 && strcmp(s->c[i], c) == 0)
            return false;
    if (s->n < 256) {
        s->t[s->n] = t;
        s->c[s->n] = c;
        s->n++;
    }
    return true;
}

/* The last token when the one before it is "-j" (Istio's "chains we jump to"). */
static const char *jump_target(const char *params, char *buf, size_t len)
{
    const char *last = strrchr(params, ' ');
    if (!last || last == params)
        return NULL;
    const char *p = last;
    while (p > params && p[-1] != ' ')
        p--;
    if ((size_t)(last - p) != 2 || strncmp(p, "-j", 2) != 0)
        return NULL;
    snprintf(buf, len, "%s", last + 1);
    return buf;
}

char *wf_ipt_restore_text(const wf_ipt_rules *r)
{
    wf_strbuf out = WF_STRBUF_INIT;
    seen *s = calloc(1, sizeof *s);
    char(*jt)[64] = calloc(r->n ? r->n : 1, sizeof *jt);
    if (!s || !jt) {
        free(s);
        free(jt);
        return NULL;
    }
    /* "-N" lines, table by table, in first-seen order (rule chains, then jump targets) */
    for (size_t i = 0; i < r->n; i++)
        if (!builtin(r->v[i].chain))
            seen_add(s, r->v[i].table, r->v[i].chain);
    for (size_t i = 0; i < r->n; i++) {
        const char *t = jump_target(r->v[i].params, jt[i], sizeof jt[i]);
        if (t && !builtin(t))
            seen_add(s, r->v[i].table, t);
    }
    for (size_t ti = 0; ti < 4; ti++) {
        const char *table = TABLES[ti];
        bool any = false;
        for (size_t i = 0; i < r->n && !any; i++)
            any = strcmp(r->v[i].table, table) == 0;
        if (!any)
            continue;
        wf_strbuf_printf(&out, "* %s\n", table);
        for (size_t i = 0; i < s->n; i++)
            if (strcmp(s->t[i], table) == 0)
                wf_strbuf_printf(&out, "-N %s\n", s->c[i]);
        for (size_t i = 0; i < r->n; i++)
            if (strcmp(r->v[i].table, table) == 0)
                wf_strbuf_printf(&out, "%s\n", r->v[i].params);
        wf_strbuf_puts(&out, "COMMIT\n");
    }
    free(s);
    free(jt);
    if (wf_strbuf_failed(&out))
        return NULL;
    char *t = wf_strbuf_take(&out);
    return t ? t : strdup("");
}

char *wf_ipt_golden_text(const wf_ipt_plan *p, bool enable_ipv6)
{
    char *r4 = wf_ipt_restore_text(&p->v4), *r6 = wf_ipt_restore_text(&p->v6);
    if (!r4 || !r6) {
        free(r4);
        free(r6);
        return NULL;
    }
    wf_strbuf out = WF_STRBUF_INIT;
    wf_strbuf_printf(&out, "iptables-save\nip6tables-save\n%s%siptables-save%s", r4, r6,
                     enable_ipv6 ? "\nip6tables-save" : "");
    free(r4);
    free(r6);
    return wf_strbuf_failed(&out) ? NULL : wf_strbuf_take(&out);
}

/* UndoRules for one rule: "-D CHAIN params" without the insert position; nothing when the
 * rule sits in an ISTIO_ chain and does not jump to one (the chain is flushed anyway). */
static void undo_line(wf_strbuf *out, const wf_ipt_rule *r)
{
    const char *p = r->params;
    bool ins = strncmp(p, "-I ", 3) == 0;
    p += 3 + strlen(r->chain); /* past "-A CHAIN" / "-I CHAIN" */
    if (ins) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    bool skip = strncmp(r->chain, "ISTIO_", 6) == 0 && !strstr(r->params, "-j ISTIO_");
    if (skip)
        return;
    wf_strbuf_printf(out, "-t %s -D %s%s\n", r->table, r->chain, p);
}

char *wf_ipt_cleanup_text(const wf_ipt_rules *r)
{
    wf_strbuf out = WF_STRBUF_INIT;
    for (size_t i = r->n; i-- > 0;)
        undo_line(&out, &r->v[i]);
    seen *s = calloc(1, sizeof *s);
    if (!s) {
        wf_strbuf_free(&out);
        return NULL;
    }
    for (size_t i = r->n; i-- > 0;) {
        const wf_ipt_rule *x = &r->v[i];
        if (!builtin(x->chain) && seen_add(s, x->table, x->chain))
            wf_strbuf_printf(&out, "-t %s -F %s\n-t %s -X %s\n", x->table, x->chain, x->table,
                             x->chain);
    }
    free(s);
    if (out.len && out.data[out.len - 1] == '\n')
        out.data[--out.len] = '\0';
    if (wf_strbuf_failed(&out))
        return NULL;
    char *t = wf_strbuf_take(&out);
    return t ? t : strdup("");
}
