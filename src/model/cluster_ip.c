/*
 * cluster_ip.c - Service IP allocation as the API server's (cluster_ip.h).
 */
#include "model/cluster_ip.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"
#include "model/store_internal.h"

int wf_ip_range_parse(const char *s, wf_ip_range *out, const char **why)
{
    char ip[32];
    const char *slash = s ? strchr(s, '/') : NULL;
    *why = "want an IPv4 CIDR such as 10.96.0.0/12";
    if (!slash || (size_t)(slash - s) >= sizeof ip)
        return -1;
    snprintf(ip, sizeof ip, "%.*s", (int)(slash - s), s);
    struct in_addr a;
    char *end;
    long len = strtol(slash + 1, &end, 10);
    if (inet_pton(AF_INET, ip, &a) != 1 || !slash[1] || *end)
        return -1;
    if (len < 8 || len > 30) {
        *why = "the prefix length must be 8..30";
        return -1;
    }
    uint32_t base = ntohl(a.s_addr), mask = ~0u << (32 - len);
    if (base & ~mask) {
        *why = "host bits are set (write the network address, e.g. 10.96.0.0/12)";
        return -1;
    }
    *out = (wf_ip_range){.base = base, .prefix_len = (int)len};
    return 0;
}

static bool wants_ip(const wf_resource *r)
{
    const wf_service *svc = r->t.service;
    if (!svc || (svc->cluster_ip && *svc->cluster_ip))
        return false;
    return !svc->type || strcmp(svc->type, "ExternalName") != 0;
}

static int by_ns_name(const void *x, const void *y)
{
    const wf_resource *a = *(const wf_resource *const *)x, *b = *(const wf_resource *const *)y;
    int c = strcmp(a->ns ? a->ns : "", b->ns ? b->ns : "");
    return c ? c : strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

typedef struct taken {
    uint32_t *v; /* offsets in the range, open addressing; UINT32_MAX = empty */
    size_t cap, n;
} taken;

static bool taken_has(const taken *t, uint32_t off)
{
    for (size_t i = off % t->cap;; i = (i + 1) % t->cap) {
        if (t->v[i] == UINT32_MAX)
            return false;
        if (t->v[i] == off)
            return true;
    }
}

static void taken_add(taken *t, uint32_t off)
{
    size_t i = off % t->cap;
    while (t->v[i] != UINT32_MAX && t->v[i] != off)
        i = (i + 1) % t->cap;
    if (t->v[i] == UINT32_MAX)
        t->n++;
    t->v[i] = off;
}

/* The manifests' own clusterIPs inside the range, and the reserved first offsets. */
static void reserve(taken *t, const wf_resource *const *svcs, size_t n, const wf_ip_range *r,
                    uint32_t size)
{
    taken_add(t, 0);
    taken_add(t, 1);
    taken_add(t, size - 1);
    for (size_t i = 0; i < n; i++) {
        const char *ip = svcs[i]->t.service ? svcs[i]->t.service->cluster_ip : NULL;
        struct in_addr a;
        if (!ip || inet_pton(AF_INET, ip, &a) != 1)
            continue;
        uint32_t h = ntohl(a.s_addr);
        if ((h & (~0u << (32 - r->prefix_len))) == r->base)
            taken_add(t, h - r->base);
    }
}

static int assign(wf_store *s, const wf_resource *r, const wf_ip_range *range, uint32_t size,
                  taken *t)
{
    uint32_t off = wf_fnv32a(wf_fnv32a(wf_fnv32a(WF_FNV32_OFFSET, r->ns), "/"), r->name) % size;
    while (taken_has(t, off))
        off = (off + 1) % size;
    taken_add(t, off);
    uint32_t h = range->base + off;
    char buf[INET_ADDRSTRLEN];
    snprintf(buf, sizeof buf, "%u.%u.%u.%u", h >> 24, (h >> 16) & 255, (h >> 8) & 255, h & 255);
    const char *ip = wf_arena_strdup(&s->arena, buf);
    if (!ip)
        return -1;
    r->t.service->cluster_ip = ip;
    return 0;
}

int wf_store_allocate_cluster_ips(wf_store *s, const wf_ip_range *range)
{
    if (!range || range->prefix_len == 0)
        return 0;
    size_t n = 0;
    const wf_resource *const *svcs = wf_store_kind(s, WF_KIND_SERVICE, &n);
    uint32_t size = 1u << (32 - range->prefix_len);
    const wf_resource **want = malloc((n ? n : 1) * sizeof *want);
    taken t = {.cap = 2 * (n + 3) + 1};
    t.v = malloc(t.cap * sizeof *t.v);
    if (!want || !t.v) {
        free(want);
        free(t.v);
        return -1;
    }
    memset(t.v, 0xff, t.cap * sizeof *t.v);
    size_t nw = 0;
    for (size_t i = 0; i < n; i++)
        if (wants_ip(svcs[i]))
            want[nw++] = svcs[i];
    qsort(want, nw, sizeof *want, by_ns_name);
    reserve(&t, svcs, n, range, size);
    int rc = 0, assigned = 0;
    for (size_t i = 0; rc == 0 && i < nw && t.n < size; i++, assigned++) /* until full */
        rc = assign(s, want[i], range, size, &t);
    free(want);
    free(t.v);
    return rc == 0 ? assigned : -1;
}
