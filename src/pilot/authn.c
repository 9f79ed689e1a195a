/*
 * authn.c - Istio's ComposePeerAuthentication for one workload (see authn.h).
 */
#include "pilot/authn.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROOT_NS_DEFAULT "istio-system"

const char *wf_mtls_mode_name(wf_mtls_mode m)
{
    switch (m) {
    case WF_MTLS_DISABLE:
        return "DISABLE";
    case WF_MTLS_PERMISSIVE:
        return "PERMISSIVE";
    case WF_MTLS_STRICT:
        return "STRICT";
    default:
        return "UNSET";
    }
}

wf_mtls_mode wf_mtls_mode_of(const wf_node *mtls)
{
    const char *m = wf_map_str(mtls, "mode");
    if (!m)
        return WF_MTLS_UNSET;
    if (strcasecmp(m, "STRICT") == 0)
        return WF_MTLS_STRICT;
    if (strcasecmp(m, "PERMISSIVE") == 0)
        return WF_MTLS_PERMISSIVE;
    if (strcasecmp(m, "DISABLE") == 0)
        return WF_MTLS_DISABLE;
    return WF_MTLS_UNSET;
}

/* ---- creation time ---- */

typedef struct ts {
    int64_t sec;
    int32_t nsec;
} ts;

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* RFC 3339 "2006-01-02T15:04:05[.frac](Z|+hh:mm|-hh:mm)". false when malformed. */
static bool parse_rfc3339(const char *s, ts *out)
{
    int y, mo, d, h, mi, se;
    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &se) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        se > 60)
        return false;
    const char *p = s + 19;
    int32_t ns = 0;
    if (*p == '.') {
        int n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 9)
                ns = ns * 10 + (*p - '0');
        if (n == 0)
            return false;
        for (; n < 9; n++)
            ns *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om))
            return false;
        off = (*p == '-' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    out->sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    out->nsec = ns;
    return true;
}

/* The zero time (Go's time.Time{}) when absent or malformed: older than any real time. */
static ts created(const wf_resource *r)
{
    ts t = {INT64_MIN, 0};
    const char *s = wf_map_str(r->metadata, "creationTimestamp");
    if (s && !parse_rfc3339(s, &t))
        t = (ts){INT64_MIN, 0};
    return t;
}

/* Istio's order: creation time, then name, then namespace. */
static bool older(const wf_resource *a, const wf_resource *b)
{
    ts x = created(a), y = created(b);
    if (x.sec != y.sec)
        return x.sec < y.sec;
    if (x.nsec != y.nsec)
        return x.nsec < y.nsec;
    int c = strcmp(a->name, b->name);
    return c != 0 ? c < 0 : strcmp(a->ns, b->ns) < 0;
}

/* ---- composition ---- */

static bool has_selector(const wf_resource *pa)
{
    return pa->t.policy && pa->t.policy->has_selector && pa->t.policy->selector.n > 0;
}

static int add_applied(wf_peer_authn *pa, size_t *cap, const wf_resource *r)
{
    if (pa->napplied == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        const wf_resource **v = realloc(pa->applied, nc * sizeof *v);
        if (!v)
            return -1;
        pa->applied = v;
        *cap = nc;
    }
    pa->applied[pa->napplied++] = r;
    return 0;
}

static int collect(const wf_store *s, const char *root, const char *ns, const wf_kvs *labels,
                   wf_peer_authn *out)
{
    const char *nss[2] = {root, ns};
    size_t cap = 0;
    for (int k = 0; k < 2; k++) {
        if (!nss[k] || !*nss[k] || (k == 1 && strcmp(nss[1], root) == 0))
            continue;
        size_t n = 0;
        const wf_resource *const *v = wf_store_kind_ns(s, WF_KIND_PEERAUTHENTICATION, nss[k], &n);
        for (size_t i = 0; i < n; i++) {
            if (has_selector(v[i]) && !wf_kvs_subset(&v[i]->t.policy->selector, labels))
                continue;
            if (add_applied(out, &cap, v[i]) != 0)
                return -1;
        }
    }
    return 0;
}

static void pick(const wf_resource **slot, const wf_resource *r)
{
    if (!*slot || older(r, *slot))
        *slot = r;
}

static int port_modes(wf_peer_authn *pa)
{
    const wf_node *plm = pa->wl ? wf_map_get(pa->wl->spec, "portLevelMtls") : NULL;
    if (!plm || plm->type != WF_NODE_MAP || plm->len == 0)
        return 0;
    pa->ports = calloc(plm->len, sizeof *pa->ports);
    if (!pa->ports)
        return -1;
    for (size_t i = 0; i < plm->len; i++) {
        const char *key = plm->u.entries[i].key;
        char *end = NULL;
        long port = key ? strtol(key, &end, 10) : 0;
        if (!key || end == key || *end || port < 1 || port > 65535)
            continue;
        wf_mtls_mode m = wf_mtls_mode_of(plm->u.entries[i].value);
        pa->ports[pa->nports++] =
            (wf_mtls_port){.port = (uint32_t)port, .mode = m == WF_MTLS_UNSET ? pa->mode : m};
    }
    return 0;
}

int wf_peer_authn_compose(const wf_store *store, const char *root_ns, const char *ns,
                          const wf_kvs *labels, wf_peer_authn *out)
{
    static const wf_kvs none = {0};
    if (!out)
        return -1;
    *out = (wf_peer_authn){.mode = WF_MTLS_PERMISSIVE};
    if (!store)
        return -1;
    const char *root = root_ns && *root_ns ? root_ns : ROOT_NS_DEFAULT;
    if (collect(store, root, ns, labels ? labels : &none, out) != 0)
        goto oom;
    for (size_t i = 0; i < out->napplied; i++) {
        const wf_resource *r = out->applied[i];
        bool in_root = strcmp(r->ns, root) == 0;
        if (!has_selector(r))
            pick(in_root ? &out->mesh : &out->ns, r);
        else if (!in_root)
            pick(&out->wl, r);
    }
    const wf_resource *chain[3] = {out->mesh, out->ns, out->wl};
    for (int i = 0; i < 3; i++) {
        wf_mtls_mode m = chain[i] ? wf_mtls_mode_of(wf_map_get(chain[i]->spec, "mtls")) : 0;
        if (m != WF_MTLS_UNSET)
            out->mode = m;
    }
    if (port_modes(out) != 0)
        goto oom;
    return 0;
oom:
    wf_peer_authn_free(out);
    return -1;
}

wf_mtls_mode wf_peer_authn_port_mode(const wf_peer_authn *pa, uint32_t port)
{
    if (!pa)
        return WF_MTLS_PERMISSIVE;
    for (size_t i = 0; i < pa->nports; i++)
        if (pa->ports[i].port == port)
            return pa->ports[i].mode;
    return pa->mode;
}

void wf_peer_authn_free(wf_peer_authn *pa)
{
    if (!pa)
        return;
    free(pa->ports);
    free(pa->applied);
    *pa = (wf_peer_authn){.mode = WF_MTLS_PERMISSIVE};
}
