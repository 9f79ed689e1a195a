/*
 * dns_refresh.c - DNS clusters' names resolved again while the proxy runs (dns_refresh.h;
 * Envoy's strict_dns_cluster.cc / logical_dns_cluster.cc refresh timer).
 */
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/net/address.h"
#include "proxy/server/dns_refresh.h"

typedef struct entry {
    struct wp_dns_refresh *r;
    char *host;
    uint32_t port;
    wp_dns_family fam;
    wp_addr *addrs; /* the last successful answer (naddrs > 0), or none yet */
    size_t naddrs;
    bool inflight, dropped;
    uint64_t used; /* the epoch of the last snapshot that used the name */
    uv_getaddrinfo_t req;
} entry;

struct wp_dns_refresh {
    wp_dns_changed_cb changed;
    void *ud;
    uv_loop_t *loop;
    uv_timer_t timer;
    bool timer_init, timer_closed, closing, round_changed;
    uint64_t epoch, refresh_ms, armed_ms;
    entry **e;
    size_t n, cap, inflight;
    wp_dns_refresh_counts counts;
};

/* Both families are asked for, whatever the cluster's (wp_dns_pick chooses): asked for AF_INET
 * only, glibc answers an "::1" line of /etc/hosts as 127.0.0.1, an address the name does not
 * have. */
static const struct addrinfo HINTS = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};

const struct addrinfo *wp_dns_pick(const struct addrinfo *res, wp_dns_family fam)
{
    int want = fam == WP_DNS_AUTO ? AF_INET6 : AF_INET;
    const struct addrinfo *other = NULL;
    for (const struct addrinfo *a = res; a; a = a->ai_next) {
        if (a->ai_family == want)
            return a;
        if (!other && fam != WP_DNS_V4_ONLY &&
            (a->ai_family == AF_INET || a->ai_family == AF_INET6))
            other = a;
    }
    return other;
}

static void entry_free(entry *x)
{
    free(x->addrs);
    free(x->host);
    free(x);
}

static void addr_from(const struct addrinfo *res, wp_addr *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    wp_sockaddr_text(res->ai_addr, out->text, sizeof(out->text));
}

static bool same_addr(const wp_addr *a, const wp_addr *b)
{
    return a->len == b->len && memcmp(&a->sa, &b->sa, a->len) == 0;
}

/* The addresses of res in the family dns_lookup_family picks (wp_dns_pick's), in getaddrinfo's
 * order, without repeats, at most WP_DNS_MAX_ADDRS: a new array in *out. Returns how many (0:
 * none of that family, *out NULL), or -1 when out of memory. */
static int collect(const struct addrinfo *res, wp_dns_family fam, wp_addr **out)
{
    *out = NULL;
    const struct addrinfo *first = wp_dns_pick(res, fam);
    if (!first)
        return 0;
    wp_addr v[WP_DNS_MAX_ADDRS]; /* the answer's addresses, then a copy of just those */
    size_t n = 0;
    for (const struct addrinfo *a = first; a && n < WP_DNS_MAX_ADDRS; a = a->ai_next) {
        if (a->ai_family != first->ai_family)
            continue;
        addr_from(a, &v[n]);
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            seen = same_addr(&v[i], &v[n]);
        n += !seen;
    }
    *out = malloc(n * sizeof(*v));
    if (!*out)
        return -1;
    memcpy(*out, v, n * sizeof(*v));
    return (int)n;
}

static bool same_answer(const entry *x, const wp_addr *v, size_t n)
{
    if (x->naddrs != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!same_addr(&x->addrs[i], &v[i]))
            return false;
    return true;
}

wp_dns_refresh *wp_dns_refresh_new(wp_dns_changed_cb changed, void *ud)
{
    wp_dns_refresh *r = calloc(1, sizeof(*r));
    if (r) {
        r->changed = changed;
        r->ud = ud;
    }
    return r;
}

static void maybe_free(wp_dns_refresh *r)
{
    if (!r->closing || r->inflight > 0 || (r->timer_init && !r->timer_closed))
        return;
    for (size_t i = 0; i < r->n; i++)
        entry_free(r->e[i]);
    free(r->e);
    free(r);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    entry *x = req->data;
    wp_dns_refresh *r = x->r;
    x->inflight = false;
    r->inflight--;
    if (status != UV_ECANCELED)
        r->counts.lookups++;
    if (x->dropped) {
        entry_free(x);
    } else {
        wp_addr *v = NULL;
        int n = status == 0 ? collect(res, x->fam, &v) : 0;
        if (n > 0 && !same_answer(x, v, (size_t)n)) {
            WF_LOG(WF_LC_upstream, WF_LOG_INFO,
                   "DNS: %s:%u now resolves to %s%s (%zu address(es); was %s)", x->host, x->port,
                   v[0].text, n > 1 ? ", ..." : "", (size_t)n,
                   x->naddrs ? x->addrs[0].text : "no address");
            free(x->addrs);
            x->addrs = v;
            x->naddrs = (size_t)n;
            v = NULL;
            r->round_changed = true;
        } else if (n <= 0 && status != UV_ECANCELED) {
            /* Envoy keeps the hosts of the last resolution that succeeded */
            WF_LOG(WF_LC_upstream, WF_LOG_DEBUG, "DNS: %s:%u did not resolve: %s (%s kept)",
                   x->host, x->port,
                   status  ? uv_strerror(status)
                   : n < 0 ? "out of memory"
                           : "no address of its dns_lookup_family",
                   x->naddrs ? x->addrs[0].text : "no address");
        }
        free(v);
    }
    uv_freeaddrinfo(res);
    if (r->inflight > 0)
        return;
    if (r->closing) {
        maybe_free(r);
        return;
    }
    if (r->round_changed) {
        r->round_changed = false;
        r->counts.changes++;
        r->changed(r->ud);
    }
}

static void on_tick(uv_timer_t *t)
{
    wp_dns_refresh *r = t->data;
    if (r->closing || r->inflight > 0)
        return; /* the last round is still out */
    r->round_changed = false;
    for (size_t i = 0; i < r->n; i++) {
        entry *x = r->e[i];
        char port[16];
        snprintf(port, sizeof(port), "%u", x->port);
        x->req.data = x;
        if (uv_getaddrinfo(r->loop, &x->req, on_resolved, x->host, port, &HINTS) != 0)
            continue;
        x->inflight = true;
        r->inflight++;
    }
}

static void arm(wp_dns_refresh *r)
{
    if (!r->timer_init || r->closing)
        return;
    if (r->refresh_ms == 0) {
        uv_timer_stop(&r->timer);
        r->armed_ms = 0;
    } else if (r->armed_ms != r->refresh_ms || !uv_is_active((uv_handle_t *)&r->timer)) {
        /* a snapshot with the same rate keeps the timer's phase: frequent EDS pushes must
         * not postpone the refresh for ever */
        uv_timer_start(&r->timer, on_tick, r->refresh_ms, r->refresh_ms);
        r->armed_ms = r->refresh_ms;
    }
}

int wp_dns_refresh_set_loop(wp_dns_refresh *r, uv_loop_t *loop)
{
    if (r->timer_init)
        return 0;
    int rc = uv_timer_init(loop, &r->timer);
    if (rc != 0)
        return rc;
    r->loop = loop;
    r->timer.data = r;
    r->timer_init = true;
    arm(r);
    return 0;
}

void wp_dns_refresh_begin(wp_dns_refresh *r)
{
    r->epoch++;
}

static entry *find(const wp_dns_refresh *r, const char *host, uint32_t port, wp_dns_family fam)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i]->port == port && r->e[i]->fam == fam && strcmp(r->e[i]->host, host) == 0)
            return r->e[i];
    return NULL;
}

/* A new cached name with the answer of a blocking lookup. NULL when out of memory (logged). */
static entry *first_lookup(wp_dns_refresh *r, const char *host, uint32_t port, wp_dns_family fam)
{
    entry *x = calloc(1, sizeof(*x));
    if (x)
        x->host = strdup(host);
    if (x && x->host && r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        entry **ne = realloc(r->e, cap * sizeof(*ne));
        if (ne) {
            r->e = ne;
            r->cap = cap;
        }
    }
    if (!x || !x->host || r->n == r->cap) {
        WF_LOG(WF_LC_upstream, WF_LOG_WARN, "cannot resolve %s: out of memory (no host)", host);
        if (x)
            entry_free(x);
        return NULL;
    }
    x->r = r;
    x->port = port;
    x->fam = fam;
    r->e[r->n++] = x;
    struct addrinfo *res = NULL;
    char p[16];
    snprintf(p, sizeof(p), "%u", port);
    int g = getaddrinfo(host, p, &HINTS, &res);
    int n = g == 0 ? collect(res, fam, &x->addrs) : 0;
    if (res)
        freeaddrinfo(res);
    if (n > 0)
        x->naddrs = (size_t)n;
    else
        WF_LOG(WF_LC_upstream, WF_LOG_WARN, "cannot resolve %s: %s (no host)", host,
               g != 0  ? gai_strerror(g)
               : n < 0 ? "out of memory"
                       : "no address of the cluster's dns_lookup_family");
    return x;
}

size_t wp_dns_refresh_resolve(wp_dns_refresh *r, const char *host, uint32_t port, wp_dns_family fam,
                              const wp_addr **addrs)
{
    entry *x = find(r, host, port, fam);
    if (!x)
        x = first_lookup(r, host, port, fam);
    *addrs = NULL;
    if (!x)
        return 0;
    x->used = r->epoch;
    *addrs = x->addrs;
    return x->naddrs;
}

void wp_dns_refresh_end(wp_dns_refresh *r, uint64_t refresh_ms)
{
    size_t kept = 0;
    for (size_t i = 0; i < r->n; i++) {
        entry *x = r->e[i];
        if (x->used == r->epoch)
            r->e[kept++] = x;
        else if (x->inflight)
            x->dropped = true; /* freed by its lookup's callback */
        else
            entry_free(x);
    }
    r->n = kept;
    r->refresh_ms = kept ? refresh_ms : 0;
    arm(r);
}

wp_dns_refresh_counts wp_dns_refresh_stats(const wp_dns_refresh *r)
{
    wp_dns_refresh_counts c = r->counts;
    c.names = r->n;
    return c;
}

static void on_timer_closed(uv_handle_t *h)
{
    wp_dns_refresh *r = h->data;
    r->timer_closed = true;
    maybe_free(r);
}

void wp_dns_refresh_close(wp_dns_refresh *r)
{
    if (!r || r->closing)
        return;
    r->closing = true;
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i]->inflight)
            uv_cancel((uv_req_t *)&r->e[i]->req);
    if (r->timer_init)
        uv_close((uv_handle_t *)&r->timer, on_timer_closed);
    maybe_free(r);
}
