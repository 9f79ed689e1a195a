/*
 * cmd_pc_listener.c - `proxy-config listener` (reference istioctl-troubleshooting.md §2.3):
 * ADDRESSES PORT MATCH DESTINATION (one row per filter chain, padding 1), or ADDRESSES PORT
 * TYPE with --verbose=false; --address/--port/--type filters; -o json|yaml in dump order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cmd_pc.h"
#include "cli/tabwriter.h"

#define HCM_NAME "envoy.filters.network.http_connection_manager"
#define TCP_NAME "envoy.filters.network.tcp_proxy"

/* ---- route MATCH, shared with pc route (§2.4) --------------------------------------------------
 */

void pc_route_match(const json_t *match, wf_strbuf *sb)
{
    const char *s;
    if ((s = wf_jstr(match, "prefix")) != NULL)
        wf_strbuf_printf(sb, "%s*", s);
    else if ((s = wf_jstr(match, "path_separated_prefix")) != NULL)
        wf_strbuf_printf(sb, "PathPrefix:%s", s);
    else if ((s = wf_jstr(match, "path")) != NULL)
        wf_strbuf_puts(sb, s);
    else if ((s = json_string_value(wf_jpath(match, "safe_regex.regex"))) != NULL)
        wf_strbuf_printf(sb, "regex %s", s);
}

/* ---- listener-level values ---------------------------------------------------------------------
 */

static const char *sock_addr(const json_t *addr)
{
    const char *s = json_string_value(wf_jpath(addr, "socket_address.address"));
    if (s)
        return s;
    s = json_string_value(wf_jpath(addr, "pipe.path"));
    return s ? s : "";
}

/* Main address then additional addresses, joined with ','. */
static void listener_addresses(const json_t *l, wf_strbuf *sb)
{
    wf_strbuf_puts(sb, sock_addr(json_object_get(l, "address")));
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(l, "additional_addresses"), i, a)
    {
        wf_strbuf_putc(sb, ',');
        wf_strbuf_puts(sb, sock_addr(json_object_get(a, "address")));
    }
}

static long listener_port(const json_t *l)
{
    return (long)wf_jint(wf_jpath(l, "address.socket_address"), "port_value");
}

/* Chains including the default chain, as a new array of borrowed references. */
static json_t *filter_chains(const json_t *l)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(l, "filter_chains"), i, c) json_array_append(out, c);
    json_t *def = json_object_get(l, "default_filter_chain");
    if (json_is_object(def))
        json_array_append(out, def);
    return out;
}

static bool mentions_blackhole(const json_t *filter)
{
    char *s = json_dumps(json_object_get(filter, "typed_config"), JSON_COMPACT);
    bool r = s && strstr(s, "BlackHoleCluster");
    free(s);
    return r;
}

static const char *listener_type(const json_t *l)
{
    int nhttp = 0, ntcp = 0;
    json_t *chains = filter_chains(l);
    size_t i, j;
    json_t *c, *f;
    json_array_foreach(chains, i, c)
    {
        json_array_foreach(json_object_get(c, "filters"), j, f)
        {
            const char *name = wf_jstr_or(f, "name", "");
            if (strcmp(name, HCM_NAME) == 0)
                nhttp++;
            else if (strcmp(name, TCP_NAME) == 0 && !mentions_blackhole(f))
                ntcp++;
        }
    }
    json_decref(chains);
    if (nhttp > 0)
        return ntcp == 0 ? "HTTP" : "HTTP+TCP";
    return ntcp > 0 ? "TCP" : "UNKNOWN";
}

static bool listener_passes(const json_t *l, const pc_opts *o)
{
    if (o->address) {
        bool any = strcasecmp(sock_addr(json_object_get(l, "address")), o->address) == 0;
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(l, "additional_addresses"), i,
                           a) if (strcasecmp(sock_addr(json_object_get(a, "address")),
                                             o->address) == 0) any = true;
        if (!any)
            return false;
    }
    if (o->port && listener_port(l) != o->port)
        return false;
    if (o->type && strcasecmp(listener_type(l), o->type) != 0)
        return false;
    return true;
}

/* ---- MATCH and DESTINATION of a chain
 * ------------------------------------------------------------ */

static void join_strings(const json_t *arr, const char *sep, wf_strbuf *sb)
{
    size_t i;
    json_t *s;
    json_array_foreach((json_t *)arr, i, s)
    {
        if (i)
            wf_strbuf_puts(sb, sep);
        wf_strbuf_puts(sb, json_string_value(s) ? json_string_value(s) : "");
    }
}

static bool strings_equal(const json_t *arr, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    if (json_array_size(arr) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || strcmp(s, want[i]) != 0)
            return false;
    }
    return true;
}

static void app_protocols(const json_t *arr, wf_strbuf *sb)
{
    static const char *const http[] = {"http/1.0", "http/1.1", "h2c", NULL};
    static const char *const istio_plain[] = {"istio", "istio-http/1.0", "istio-http/1.1",
                                              "istio-h2", NULL};
    static const char *const http_tls[] = {"http/1.0",       "http/1.1", "h2c", "istio-http/1.0",
                                           "istio-http/1.1", "istio-h2", NULL};
    static const char *const tcp_tls[] = {"istio-peer-exchange", "istio", NULL};
    if (strings_equal(arr, http_tls))
        wf_strbuf_puts(sb, "App: HTTP TLS");
    else if (strings_equal(arr, istio_plain))
        wf_strbuf_puts(sb, "App: Istio HTTP Plain");
    else if (strings_equal(arr, tcp_tls))
        wf_strbuf_puts(sb, "App: TCP TLS");
    else if (strings_equal(arr, http))
        wf_strbuf_puts(sb, "App: HTTP");
    else {
        wf_strbuf_puts(sb, "App: ");
        join_strings(arr, ",", sb);
    }
}

static void part_sep(wf_strbuf *sb, size_t start)
{
    if (sb->len > start)
        wf_strbuf_puts(sb, "; ");
}

void pc_chain_match(const json_t *chain, wf_strbuf *sb)
{
    size_t start = sb->len;
    const json_t *m = json_object_get(chain, "filter_chain_match");
    const json_t *v;
    if (json_array_size(v = json_object_get(m, "server_names")) > 0) {
        wf_strbuf_puts(sb, "SNI: ");
        join_strings(v, ",", sb);
    }
    const char *tp = wf_jstr(m, "transport_protocol");
    if (tp && *tp) {
        part_sep(sb, start);
        wf_strbuf_printf(sb, "Trans: %s", tp);
    }
    if (json_array_size(v = json_object_get(m, "application_protocols")) > 0) {
        part_sep(sb, start);
        app_protocols(v, sb);
    }
    char port[32] = "";
    if (json_object_get(m, "destination_port"))
        snprintf(port, sizeof port, ":%lld", wf_jint(m, "destination_port"));
    if (json_array_size(v = json_object_get(m, "prefix_ranges")) > 0) {
        part_sep(sb, start);
        wf_strbuf_puts(sb, "Addr: ");
        size_t i;
        json_t *p;
        json_array_foreach((json_t *)v, i, p)
            wf_strbuf_printf(sb, "%s%s/%lld", i ? "," : "", wf_jstr_or(p, "address_prefix", ""),
                             wf_jint(p, "prefix_len"));
        wf_strbuf_puts(sb, port);
    } else if (port[0]) {
        part_sep(sb, start);
        wf_strbuf_printf(sb, "Addr: *%s", port);
    }
    if (sb->len == start)
        wf_strbuf_puts(sb, "ALL");
}

static void cluster_dest(const char *cluster, wf_strbuf *sb)
{
    if (strstr(cluster, "Cluster"))
        wf_strbuf_puts(sb, cluster);
    else
        wf_strbuf_printf(sb, "Cluster: %s", cluster);
}

/* "Cluster: X" when the route config matches everything to one cluster, else "". */
static bool match_all_cluster(const json_t *rc, wf_strbuf *sb)
{
    const json_t *vhs = json_object_get(rc, "virtual_hosts");
    if (json_array_size(vhs) != 1)
        return false;
    const json_t *vh = json_array_get(vhs, 0);
    static const char *const star[] = {"*", NULL};
    if (!strings_equal(json_object_get(vh, "domains"), star))
        return false;
    const json_t *routes = json_object_get(vh, "routes");
    if (json_array_size(routes) != 1)
        return false;
    const json_t *r = json_array_get(routes, 0);
    const char *prefix = json_string_value(wf_jpath(r, "match.prefix"));
    const char *cluster = json_string_value(wf_jpath(r, "route.cluster"));
    if (!prefix || strcmp(prefix, "/") != 0 || !cluster)
        return false;
    cluster_dest(cluster, sb);
    return true;
}

static void inline_route(const json_t *rc, wf_strbuf *sb)
{
    if (match_all_cluster(rc, sb))
        return;
    wf_strbuf_puts(sb, "Inline Route: ");
    size_t i, j;
    json_t *vh, *r;
    json_array_foreach(json_object_get(rc, "virtual_hosts"), i, vh)
    {
        if (i)
            wf_strbuf_puts(sb, "; ");
        const json_t *doms = json_object_get(vh, "domains");
        static const char *const star[] = {"*", NULL};
        if (!strings_equal(doms, star)) {
            join_strings(doms, "/", sb);
            wf_strbuf_putc(sb, ' ');
        }
        json_array_foreach(json_object_get(vh, "routes"), j, r)
        {
            if (j)
                wf_strbuf_puts(sb, ", ");
            pc_route_match(json_object_get(r, "match"), sb);
        }
    }
}

static void chain_destination(const json_t *chain, wf_strbuf *sb)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(chain, "filters"), i, f)
    {
        const char *name = wf_jstr_or(f, "name", "");
        const json_t *tc = json_object_get(f, "typed_config");
        if (strcmp(name, HCM_NAME) == 0) {
            const json_t *rc = json_object_get(tc, "route_config");
            const char *rds = json_string_value(wf_jpath(tc, "rds.route_config_name"));
            if (json_is_object(rc))
                inline_route(rc, sb);
            else if (rds && *rds)
                wf_strbuf_printf(sb, "Route: %s", rds);
            else
                wf_strbuf_puts(sb, "HTTP");
            return;
        }
        if (strcmp(name, TCP_NAME) == 0 && !mentions_blackhole(f)) {
            cluster_dest(wf_jstr_or(tc, "cluster", ""), sb);
            return;
        }
    }
    wf_strbuf_puts(sb, "Non-HTTP/Non-TCP");
}

/* ---- rows
 * ---------------------------------------------------------------------------------------- */

typedef struct chain_row {
    char *match, *dest;
} chain_row;

static int cmp_row_desc(const void *a, const void *b)
{
    return strcmp(((const chain_row *)b)->dest, ((const chain_row *)a)->dest);
}

static int listener_rows(wf_tw *tw, const json_t *l, const pc_opts *o)
{
    wf_strbuf addrs = WF_STRBUF_INIT;
    listener_addresses(l, &addrs);
    char prefix[600] = "";
    if (o->all)
        snprintf(prefix, sizeof prefix, "listener/%s\t", wf_jstr_or(l, "name", ""));
    int rc = 0;
    if (!o->verbose) {
        wf_tw_printf(tw, "%s%s\t%ld\t%s\n", prefix, wf_strbuf_cstr(&addrs), listener_port(l),
                     listener_type(l));
        wf_strbuf_free(&addrs);
        return 0;
    }
    json_t *chains = filter_chains(l);
    size_t n = json_array_size(chains);
    chain_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        wf_strbuf m = WF_STRBUF_INIT, d = WF_STRBUF_INIT;
        pc_chain_match(json_array_get(chains, i), &m);
        chain_destination(json_array_get(chains, i), &d);
        rows[i].match = wf_strbuf_take(&m);
        rows[i].dest = wf_strbuf_take(&d);
        if (!rows[i].match || !rows[i].dest)
            rc = -1;
    }
    if (rc == 0) {
        /* sort.Slice by destination descending; stable here so ties keep chain order */
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && cmp_row_desc(&rows[j - 1], &rows[j]) > 0; j--) {
                chain_row t = rows[j];
                rows[j] = rows[j - 1];
                rows[j - 1] = t;
            }
        for (size_t i = 0; i < n; i++)
            wf_tw_printf(tw, "%s%s\t%ld\t%s\t%s\n", prefix, wf_strbuf_cstr(&addrs),
                         listener_port(l), rows[i].match, rows[i].dest);
    }
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].match);
        free(rows[i].dest);
    }
    free(rows);
    json_decref(chains);
    wf_strbuf_free(&addrs);
    return rc;
}

static int cmp_listener(const json_t *a, const json_t *b)
{
    long pa = listener_port(a), pb = listener_port(b);
    if (pa != pb)
        return pa < pb ? -1 : 1;
    int c =
        strcmp(sock_addr(json_object_get(a, "address")), sock_addr(json_object_get(b, "address")));
    if (c)
        return c;
    return strcmp(listener_type(a), listener_type(b));
}

static void sort_listeners(json_t **v, size_t n)
{
    pc_stable_sort(v, n, cmp_listener);
}

int pc_listeners(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    static const char *const lists[] = {"dynamic_listeners:active_state.listener",
                                        "static_listeners:listener", NULL};
    pc_sel s;
    int rc = pc_select(d, WF_DUMP_T_LISTENERS, lists, "listeners", listener_passes, sort_listeners,
                       false, o, &s, out, err);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    wf_tw tw;
    wf_tw_init(&tw, 1);
    wf_tw_puts(&tw, o->all ? "NAME\t" : "");
    wf_tw_puts(&tw,
               o->verbose ? "ADDRESSES\tPORT\tMATCH\tDESTINATION\n" : "ADDRESSES\tPORT\tTYPE\n");
    for (size_t i = 0; rc == 0 && i < s.m; i++)
        rc = listener_rows(&tw, s.v[i], o);
    if (rc == 0)
        rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
    if (rc == 0 && o->port && o->notes && !o->all)
        rc = pc_capture_port_note(s.all, o->port, o->notes);
    if (rc != 0 && !err->len)
        wf_strbuf_puts(err, "out of memory");
    pc_sel_free(&s);
    return rc;
}
