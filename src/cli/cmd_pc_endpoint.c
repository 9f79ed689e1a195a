/*
 * cmd_pc_endpoint.c - `proxy-config endpoint` over Envoy's /clusters?format=json (reference
 * istioctl-troubleshooting.md §2.5: ENDPOINT STATUS OUTLIER CHECK CLUSTER) and the hidden
 * `proxy-config eds` over the dump's EndpointsConfigDump (§2.6: NAME STATUS LOCALITY
 * CLUSTER, also the ENDPOINTS section of `pc all`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cmd_pc.h"
#include "cli/tabwriter.h"

/* ---- pc endpoint (§2.5) ------------------------------------------------------------------------
 */

typedef struct ep_row {
    char endpoint[600];
    const char *ip; /* address without port ("" for non-socket addresses) */
    long port;
    const char *status, *cluster;
    bool failed;
    const json_t *cluster_obj;
} ep_row;

static void host_endpoint(const json_t *addr, ep_row *r)
{
    const json_t *sa = json_object_get(addr, "socket_address");
    const json_t *pipe = json_object_get(addr, "pipe");
    const json_t *internal = json_object_get(addr, "envoy_internal_address");
    r->ip = "";
    if (json_is_object(sa)) {
        r->ip = wf_jstr_or(sa, "address", "");
        r->port = (long)wf_jint(sa, "port_value");
        if (r->port)
            snprintf(r->endpoint, sizeof r->endpoint, "%s:%ld", r->ip, r->port);
        else
            snprintf(r->endpoint, sizeof r->endpoint, "%s", r->ip);
    } else if (json_is_object(pipe)) {
        snprintf(r->endpoint, sizeof r->endpoint, "unix://%s", wf_jstr_or(pipe, "path", ""));
    } else if (json_is_object(internal)) {
        snprintf(r->endpoint, sizeof r->endpoint, "envoy://%s/%s",
                 wf_jstr_or(internal, "server_listener_name", ""),
                 wf_jstr_or(internal, "endpoint_id", ""));
    } else {
        snprintf(r->endpoint, sizeof r->endpoint, "unknown");
    }
}

static bool ep_passes(const ep_row *r, const pc_opts *o)
{
    if (o->address && strcasecmp(r->ip, o->address) != 0)
        return false;
    if (o->port && r->port != o->port)
        return false;
    if (o->cluster && strcasecmp(r->cluster, o->cluster) != 0)
        return false;
    if (o->status && strcasecmp(r->status, o->status) != 0)
        return false;
    return true;
}

static int cmp_ep(const void *pa, const void *pb)
{
    const ep_row *a = pa, *b = pb;
    int c = strcmp(a->ip, b->ip);
    if (c)
        return c;
    if (a->port != b->port)
        return a->port < b->port ? -1 : 1;
    return strcmp(a->cluster, b->cluster);
}

/* All host rows of the document that pass the filters; *n rows, caller frees. */
static ep_row *endpoint_rows(const json_t *clusters, const pc_opts *o, size_t *n)
{
    size_t cap = 16, i, j;
    ep_row *rows = malloc(cap * sizeof *rows);
    json_t *c, *h;
    *n = 0;
    if (!rows)
        return NULL;
    json_array_foreach((json_t *)clusters, i, c)
    {
        json_array_foreach(json_object_get(c, "host_statuses"), j, h)
        {
            if (*n == cap) {
                ep_row *nr = realloc(rows, 2 * cap * sizeof *rows);
                if (!nr) {
                    free(rows);
                    return NULL;
                }
                rows = nr;
                cap *= 2;
            }
            ep_row *r = &rows[*n];
            memset(r, 0, sizeof *r);
            host_endpoint(json_object_get(h, "address"), r);
            const json_t *hs = json_object_get(h, "health_status");
            r->status = wf_jstr_or(hs, "eds_health_status", "UNKNOWN");
            r->failed = json_is_true(json_object_get(hs, "failed_outlier_check"));
            r->cluster = wf_jstr_or(c, "name", "");
            r->cluster_obj = c;
            if (ep_passes(r, o))
                (*n)++;
        }
    }
    return rows;
}

int pc_endpoints(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    const json_t *clusters = json_object_get(d->root, "cluster_statuses");
    if (clusters && !json_is_array(clusters)) {
        wf_strbuf_printf(err, "%s: cluster_statuses: expected an array", d->source);
        return -1;
    }
    size_t n = 0;
    ep_row *rows = endpoint_rows(clusters, o, &n);
    if (!rows) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    int rc = 0;
    if (o->out != PC_OUT_SHORT) {
        /* every cluster with a matching host, with all of its hosts */
        json_t *sel = json_array();
        size_t i;
        json_t *c;
        json_array_foreach((json_t *)clusters, i, c)
        {
            for (size_t k = 0; k < n; k++)
                if (rows[k].cluster_obj == c) {
                    json_array_append(sel, c);
                    break;
                }
        }
        rc = sel ? pc_print_raw(o, sel, false, out, err) : -1;
        json_decref(sel);
    } else {
        qsort(rows, n, sizeof *rows, cmp_ep);
        wf_tw tw;
        wf_tw_init(&tw, 5);
        wf_tw_puts(&tw, "ENDPOINT\tSTATUS\tOUTLIER CHECK\tCLUSTER\n");
        for (size_t i = 0; i < n; i++)
            wf_tw_printf(&tw, "%s\t%s\t%s\t%s\n", rows[i].endpoint, rows[i].status,
                         rows[i].failed ? "FAILED" : "OK", rows[i].cluster);
        rc = wf_tw_flush(&tw, NULL, out);
        wf_tw_free(&tw);
    }
    if (rc != 0 && !err->len)
        wf_strbuf_puts(err, "out of memory");
    free(rows);
    return rc;
}

/* ---- pc eds (§2.6) -----------------------------------------------------------------------------
 */

/* One address as the EDS table shows it: ip:port, raw pipe path, envoy://l/id, unknown. */
static void eds_address(const json_t *addr, wf_strbuf *sb)
{
    const json_t *sa = json_object_get(addr, "socket_address");
    const json_t *internal = json_object_get(addr, "envoy_internal_address");
    if (json_is_object(sa))
        wf_strbuf_printf(sb, "%s:%lld", wf_jstr_or(sa, "address", ""), wf_jint(sa, "port_value"));
    else if (json_is_object(json_object_get(addr, "pipe")))
        wf_strbuf_puts(sb, wf_jstr_or(json_object_get(addr, "pipe"), "path", ""));
    else if (json_is_object(internal))
        wf_strbuf_printf(sb, "envoy://%s/%s", wf_jstr_or(internal, "server_listener_name", ""),
                         wf_jstr_or(internal, "endpoint_id", ""));
    else
        wf_strbuf_puts(sb, "unknown");
}

/* Every address of an lb endpoint (main, then additional), as separate strings in arr. */
static void lb_addresses(const json_t *lbe, json_t *arr)
{
    const json_t *ep = json_object_get(lbe, "endpoint");
    wf_strbuf sb = WF_STRBUF_INIT;
    eds_address(json_object_get(ep, "address"), &sb);
    json_array_append_new(arr, json_string(wf_strbuf_cstr(&sb)));
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(ep, "additional_addresses"), i, a)
    {
        wf_strbuf_reset(&sb);
        eds_address(json_object_get(a, "address"), &sb);
        json_array_append_new(arr, json_string(wf_strbuf_cstr(&sb)));
    }
    wf_strbuf_free(&sb);
}

static bool lbe_passes(const json_t *lbe, const char *cluster, const pc_opts *o)
{
    if (o->address) {
        json_t *addrs = json_array();
        lb_addresses(lbe, addrs);
        bool any = false;
        size_t i;
        json_t *a;
        json_array_foreach(addrs, i, a) if (strcmp(json_string_value(a), o->address) == 0) any =
            true;
        json_decref(addrs);
        if (!any)
            return false;
    }
    if (o->port &&
        wf_jint(wf_jpath(lbe, "endpoint.address.socket_address"), "port_value") != o->port)
        return false;
    if (o->cluster && strcasecmp(cluster, o->cluster) != 0)
        return false;
    if (o->status && strcasecmp(wf_jstr_or(lbe, "health_status", "UNKNOWN"), o->status) != 0)
        return false;
    return true;
}

/* A copy of the CLA keeping only the lb endpoints that pass; NULL when none pass. */
static json_t *filter_cla(const json_t *cla, const pc_opts *o)
{
    json_t *copy = json_deep_copy(cla);
    if (!copy)
        return NULL;
    const char *cluster = wf_jstr_or(cla, "cluster_name", "");
    size_t kept = 0, i;
    json_t *group;
    json_array_foreach(json_object_get(copy, "endpoints"), i, group)
    {
        json_t *lbes = json_object_get(group, "lb_endpoints");
        for (size_t j = json_array_size(lbes); j-- > 0;) {
            if (lbe_passes(json_array_get(lbes, j), cluster, o))
                kept++;
            else
                json_array_remove(lbes, j);
        }
    }
    if (kept == 0) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

static int cmp_cla(const json_t *a, const json_t *b)
{
    return pc_cmp_cluster_names(wf_jstr_or(a, "cluster_name", ""),
                                wf_jstr_or(b, "cluster_name", ""));
}

static void locality(const json_t *loc, wf_strbuf *sb)
{
    const char *zone = wf_jstr_or(loc, "zone", "");
    const char *sub = wf_jstr_or(loc, "sub_zone", "");
    wf_strbuf_puts(sb, wf_jstr_or(loc, "region", ""));
    if (*zone) {
        wf_strbuf_printf(sb, "/%s", zone);
        if (*sub)
            wf_strbuf_printf(sb, "/%s", sub);
    }
}

static void eds_rows(wf_tw *tw, const json_t *cla, const pc_opts *o)
{
    const char *cluster = wf_jstr_or(cla, "cluster_name", "");
    size_t i, j;
    json_t *group, *lbe;
    json_array_foreach(json_object_get(cla, "endpoints"), i, group)
    {
        wf_strbuf loc = WF_STRBUF_INIT;
        locality(json_object_get(group, "locality"), &loc);
        json_array_foreach(json_object_get(group, "lb_endpoints"), j, lbe)
        {
            json_t *addrs = json_array();
            lb_addresses(lbe, addrs);
            wf_strbuf name = WF_STRBUF_INIT;
            size_t k;
            json_t *a;
            json_array_foreach(addrs, k, a)
                wf_strbuf_printf(&name, "%s%s", k ? "," : "", json_string_value(a));
            json_decref(addrs);
            wf_tw_printf(tw, "%s%s\t%s\t%s\t%s\n", o->all ? "endpoint/" : "", wf_strbuf_cstr(&name),
                         wf_jstr_or(lbe, "health_status", "UNKNOWN"), wf_strbuf_cstr(&loc),
                         cluster);
            wf_strbuf_free(&name);
        }
        wf_strbuf_free(&loc);
    }
}

int pc_eds(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    static const char *const lists[] = {"dynamic_endpoint_configs:endpoint_config",
                                        "static_endpoint_configs:endpoint_config", NULL};
    json_t *all = pc_items(d, WF_DUMP_T_ENDPOINTS, lists, true, err);
    if (!all)
        return -1;
    json_t *sel = json_array(); /* owned filtered copies */
    size_t n = json_array_size(all), m = 0;
    json_t **v = calloc(n ? n : 1, sizeof *v);
    int rc = -1;
    if (!sel || !v)
        goto done;
    for (size_t i = 0; i < n; i++) {
        json_t *f = filter_cla(json_array_get(all, i), o);
        if (f) {
            json_array_append_new(sel, f);
            v[m++] = f;
        }
    }
    pc_stable_sort(v, m, cmp_cla);
    if (o->out != PC_OUT_SHORT) {
        json_t *sorted = json_array();
        for (size_t i = 0; sorted && i < m; i++)
            json_array_append(sorted, v[i]);
        rc = sorted ? pc_print_raw(o, sorted, true, out, err) : -1;
        json_decref(sorted);
        goto done;
    }
    wf_tw tw;
    wf_tw_init(&tw, 5);
    wf_tw_puts(&tw, "NAME\tSTATUS\tLOCALITY\tCLUSTER\n");
    for (size_t i = 0; i < m; i++)
        eds_rows(&tw, v[i], o);
    rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
done:
    if (rc != 0 && !err->len)
        wf_strbuf_puts(err, "out of memory");
    free(v);
    json_decref(sel);
    json_decref(all);
    return rc;
}
