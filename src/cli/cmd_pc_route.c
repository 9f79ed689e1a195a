/*
 * cmd_pc_route.c - `proxy-config route` (reference istioctl-troubleshooting.md §2.4):
 * NAME VHOST NAME DOMAINS MATCH VIRTUAL SERVICE (padding 5), or NAME VIRTUAL HOSTS with
 * --verbose=false; --name filter; -o json|yaml.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_pc.h"
#include "cli/tabwriter.h"

/* strconv.Atoi succeeds: optional sign, digits only. */
static bool atoi_ok(const char *s, long long *v)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 18)
        return false;
    *v = strtoll(s, NULL, 10);
    return true;
}

/* istioctl's "both names numeric -> numeric order, else false", applied by Go's insertion
 * sort (what sort.Slice does for up to 12 elements): an element moves left only past numeric
 * names larger than its own numeric name. */
static void sort_route_configs(json_t **v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0; j--) {
            long long a, b;
            if (!atoi_ok(wf_jstr_or(v[j], "name", ""), &a) ||
                !atoi_ok(wf_jstr_or(v[j - 1], "name", ""), &b) || !(a < b))
                break;
            json_t *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
}

/* The DOMAINS column: one domain as is; otherwise the domains without a port (and bare
 * bracketed IPv6), minus the .svc.cluster.local / .svc expansions of a kept short name, the
 * first two joined, then " + N more...". */
static void route_domains(const json_t *doms, wf_strbuf *sb)
{
    size_t n = json_array_size(doms);
    if (n == 0)
        return;
    if (n == 1) {
        const char *only = json_string_value(json_array_get(doms, 0));
        wf_strbuf_puts(sb, only ? only : "");
        return;
    }
    const char **kept = calloc(n, sizeof *kept);
    if (!kept) {
        sb->failed = true;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = json_string_value(json_array_get(doms, i));
        if (!d)
            continue;
        size_t colons = 0;
        for (const char *p = d; *p; p++)
            colons += *p == ':';
        if (colons == 0 || (colons > 2 && d[strlen(d) - 1] == ']'))
            kept[k++] = d;
    }
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < k; i++) {
        bool drop = false;
        static const char *const sfx[] = {".svc.cluster.local", ".svc"};
        for (size_t s = 0; s < 2 && !drop; s++) {
            size_t dl = strlen(kept[i]), sl = strlen(sfx[s]);
            if (dl <= sl || strcmp(kept[i] + dl - sl, sfx[s]) != 0)
                continue;
            for (size_t j = 0; j < k; j++)
                if (strlen(kept[j]) == dl - sl && strncmp(kept[j], kept[i], dl - sl) == 0)
                    drop = true;
        }
        if (drop)
            continue;
        total++;
        if (shown < 2) {
            wf_strbuf_printf(sb, "%s%s", shown ? ", " : "", kept[i]);
            shown++;
        }
    }
    if (total > 2)
        wf_strbuf_printf(sb, " + %zu more...", total - 2);
    free(kept);
}

static bool is_passthrough(const json_t *route)
{
    const char *c = json_string_value(wf_jpath(route, "route.cluster"));
    return c && strcmp(c, "PassthroughCluster") == 0;
}

static void vhost_rows(wf_tw *tw, const char *name, const json_t *vh)
{
    wf_strbuf doms = WF_STRBUF_INIT;
    route_domains(json_object_get(vh, "domains"), &doms);
    const char *vname = wf_jstr_or(vh, "name", "");
    const json_t *routes = json_object_get(vh, "routes");
    size_t i;
    json_t *r;
    json_array_foreach((json_t *)routes, i, r)
    {
        if (is_passthrough(r))
            continue;
        wf_strbuf m = WF_STRBUF_INIT;
        pc_route_match(json_object_get(r, "match"), &m);
        char vs[512];
        pc_mgmt_metadata(r, vs, sizeof vs);
        wf_tw_printf(tw, "%s\t%s\t%s\t%s\t%s\n", name, vname, wf_strbuf_cstr(&doms),
                     wf_strbuf_cstr(&m), vs);
        wf_strbuf_free(&m);
    }
    if (json_array_size(routes) == 0)
        wf_tw_printf(tw, "%s\t%s\t%s\t/*\t404\n", name, vname, wf_strbuf_cstr(&doms));
    wf_strbuf_free(&doms);
}

static void route_rows(wf_tw *tw, const json_t *rc, const pc_opts *o)
{
    const char *raw = wf_jstr_or(rc, "name", "");
    char name[600];
    snprintf(name, sizeof name, "%s%s", o->all ? "route/" : "", raw);
    const json_t *vhs = json_object_get(rc, "virtual_hosts");
    if (!o->verbose) {
        wf_tw_printf(tw, "%s\t%zu\n", name, json_array_size(vhs));
        return;
    }
    size_t i;
    json_t *vh;
    json_array_foreach((json_t *)vhs, i, vh) vhost_rows(tw, name, vh);
}

static bool route_passes(const json_t *rc, const pc_opts *o)
{
    return !o->name || strcmp(wf_jstr_or(rc, "name", ""), o->name) == 0;
}

int pc_routes(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    static const char *const lists[] = {"dynamic_route_configs:route_config",
                                        "static_route_configs:route_config", NULL};
    pc_sel s;
    int rc = pc_select(d, WF_DUMP_T_ROUTES, lists, "routes", route_passes, sort_route_configs, true,
                       o, &s, out, err);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    wf_tw tw;
    wf_tw_init(&tw, 5);
    wf_tw_puts(&tw, o->verbose ? "NAME\tVHOST NAME\tDOMAINS\tMATCH\tVIRTUAL SERVICE\n"
                               : "NAME\tVIRTUAL HOSTS\n");
    for (size_t i = 0; i < s.m; i++)
        route_rows(&tw, s.v[i], o);
    rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
    if (rc != 0)
        wf_strbuf_puts(err, "out of memory");
    pc_sel_free(&s);
    return rc;
}
