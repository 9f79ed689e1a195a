/*
 * cmd_pc_cluster.c - `proxy-config cluster` and `proxy-config bootstrap`, plus the helpers the
 * other writers share (cmd_pc.h): cluster names (reference §1.4), management metadata,
 * section items, a stable sort.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_pc.h"
#include "cli/tabwriter.h"

/* ---- shared helpers ----------------------------------------------------------------------------
 */

void pc_parse_subset_key(const char *name, pc_subset_key *k)
{
    memset(k, 0, sizeof *k);
    const char *p1 = strchr(name, '|');
    const char *p2 = p1 ? strchr(p1 + 1, '|') : NULL;
    const char *p3 = p2 ? strchr(p2 + 1, '|') : NULL;
    if (!p3)
        return;
    k->ok = true;
    snprintf(k->direction, sizeof k->direction, "%.*s", (int)(p1 - name), name);
    char port[32];
    snprintf(port, sizeof port, "%.*s", (int)(p2 - p1 - 1), p1 + 1);
    char *end;
    k->port = strtol(port, &end, 10);
    if (*end || !port[0])
        k->port = 0; /* Go's Atoi fails on anything but an integer */
    snprintf(k->subset, sizeof k->subset, "%.*s", (int)(p3 - p2 - 1), p2 + 1);
    if (!strchr(p3 + 1, '|'))
        snprintf(k->host, sizeof k->host, "%s", p3 + 1);
}

int pc_cmp_cluster_names(const char *a, const char *b)
{
    pc_subset_key ka, kb;
    pc_parse_subset_key(a, &ka);
    pc_parse_subset_key(b, &kb);
    const char *ha = ka.ok ? ka.host : a, *hb = kb.ok ? kb.host : b;
    int c = strcmp(ha, hb);
    if (c)
        return c;
    if ((c = strcmp(ka.subset, kb.subset)) != 0)
        return c;
    if (ka.port != kb.port)
        return ka.port < kb.port ? -1 : 1;
    return strcmp(ka.direction, kb.direction);
}

void pc_mgmt_metadata(const json_t *obj, char *buf, size_t size)
{
    buf[0] = '\0';
    const char *cfg = json_string_value(wf_jpath(obj, "metadata.filter_metadata.istio.config"));
    if (!cfg)
        return;
    static const char prefix[] = "/apis/networking.istio.io/";
    if (strncmp(cfg, prefix, sizeof prefix - 1) != 0) {
        snprintf(buf, size, "<unknown>");
        return;
    }
    const char *piece[9] = {0};
    size_t len[9] = {0}, n = 0;
    const char *p = cfg;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t l = slash ? (size_t)(slash - p) : strlen(p);
        if (n < 9) {
            piece[n] = p;
            len[n] = l;
        }
        n++;
        if (!slash)
            break;
        p = slash + 1;
    }
    if (n == 8)
        snprintf(buf, size, "%.*s.%.*s", (int)len[7], piece[7], (int)len[5], piece[5]);
}

/* Bottom-up merge sort: stable, O(n log n) comparisons (large dumps hold tens of thousands of
 * clusters). Falls back to insertion sort when the scratch array cannot be allocated. */
void pc_stable_sort(json_t **v, size_t n, int (*cmp)(const json_t *, const json_t *))
{
    json_t **tmp = n > 1 ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) {
        for (size_t i = 1; i < n; i++) {
            json_t *x = v[i];
            size_t j = i;
            for (; j > 0 && cmp(v[j - 1], x) > 0; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                tmp[k++] = cmp(v[b], v[a]) < 0 ? v[b++] : v[a++];
            while (a < mid)
                tmp[k++] = v[a++];
            while (b < hi)
                tmp[k++] = v[b++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
    free(tmp);
}

static int print_selection(const pc_opts *o, json_t **v, size_t m, wf_strbuf *out, wf_strbuf *err)
{
    json_t *sel = json_array();
    for (size_t i = 0; sel && i < m; i++)
        json_array_append(sel, v[i]);
    int rc = sel ? pc_print_raw(o, sel, true, out, err) : -1;
    json_decref(sel);
    return rc;
}

int pc_select(const wf_envoy_dump *d, const char *type_url, const char *const *lists,
              const char *what, bool (*passes)(const json_t *, const pc_opts *),
              void (*sort)(json_t **v, size_t n), bool sort_raw, const pc_opts *o, pc_sel *s,
              wf_strbuf *out, wf_strbuf *err)
{
    memset(s, 0, sizeof *s);
    if (!(s->all = pc_items(d, type_url, lists, false, err)))
        return -1;
    size_t n = json_array_size(s->all);
    if (n == 0) {
        wf_strbuf_printf(err, "no %s found", what);
        pc_sel_free(s);
        return -1;
    }
    if (!(s->v = calloc(n, sizeof *s->v))) {
        wf_strbuf_puts(err, "out of memory");
        pc_sel_free(s);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!passes || passes(json_array_get(s->all, i), o))
            s->v[s->m++] = json_array_get(s->all, i);
    if (o->out == PC_OUT_SHORT || sort_raw)
        sort(s->v, s->m);
    if (o->out == PC_OUT_SHORT)
        return 0;
    int rc = print_selection(o, s->v, s->m, out, err);
    pc_sel_free(s);
    return rc == 0 ? 1 : -1;
}

void pc_sel_free(pc_sel *s)
{
    free(s->v);
    json_decref(s->all);
    memset(s, 0, sizeof *s);
}

json_t *pc_items(const wf_envoy_dump *d, const char *type_url, const char *const *lists,
                 bool missing_ok, wf_strbuf *err)
{
    size_t index = 0;
    wf_strbuf e2 = WF_STRBUF_INIT;
    json_t *sec = wf_envoy_dump_section(d, type_url, &index, &e2);
    json_t *out = json_array();
    if (!out) {
        wf_strbuf_free(&e2);
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    if (!sec) {
        if (!missing_ok || strstr(wf_strbuf_cstr(&e2), "expected")) {
            wf_strbuf_puts(err, wf_strbuf_cstr(&e2));
            json_decref(out);
            out = NULL;
        }
        wf_strbuf_free(&e2);
        return out;
    }
    wf_strbuf_free(&e2);
    for (size_t i = 0; lists[i]; i++) {
        char list[128];
        snprintf(list, sizeof list, "%s", lists[i]);
        char *colon = strchr(list, ':');
        if (colon)
            *colon = '\0';
        if (wf_envoy_dump_items(d, sec, index, list, colon ? colon + 1 : NULL, out, err) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---- pc cluster (§2.2) -------------------------------------------------------------------------
 */

static int cmp_cluster(const json_t *a, const json_t *b)
{
    return pc_cmp_cluster_names(wf_jstr_or(a, "name", ""), wf_jstr_or(b, "name", ""));
}

static bool cluster_passes(const json_t *c, const pc_opts *o)
{
    const char *name = wf_jstr_or(c, "name", "");
    if (o->fqdn && !strstr(name, o->fqdn))
        return false;
    if (o->direction && !strstr(name, o->direction))
        return false;
    if (o->subset && !strstr(name, o->subset))
        return false;
    if (o->port) {
        char pat[32];
        snprintf(pat, sizeof pat, "|%ld|", o->port);
        if (!strstr(name, pat))
            return false;
    }
    return true;
}

static void cluster_row(wf_tw *tw, const json_t *c, const pc_opts *o)
{
    const char *name = wf_jstr_or(c, "name", "");
    pc_subset_key k;
    pc_parse_subset_key(name, &k);
    char dr[512];
    pc_mgmt_metadata(c, dr, sizeof dr);
    const char *type = wf_jstr_or(c, "type", "STATIC");
    if (o->all)
        wf_tw_printf(tw, "cluster/%s\t", name);
    if (!k.ok) {
        wf_tw_printf(tw, "%s%s\t-\t-\t-\t%s\t%s\n", o->all ? "cluster/" : "", name, type, dr);
        return;
    }
    char port[32];
    snprintf(port, sizeof port, "%ld", k.port);
    wf_tw_printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.host, port, k.subset[0] ? k.subset : "-",
                 k.direction, type, dr);
}

static void sort_clusters(json_t **v, size_t n)
{
    pc_stable_sort(v, n, cmp_cluster);
}

int pc_clusters(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    static const char *const lists[] = {"dynamic_active_clusters:cluster",
                                        "static_clusters:cluster", NULL};
    pc_sel s;
    int rc = pc_select(d, WF_DUMP_T_CLUSTERS, lists, "clusters", cluster_passes, sort_clusters,
                       true, o, &s, out, err);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    wf_tw tw;
    wf_tw_init(&tw, 5);
    wf_tw_puts(&tw, o->all ? "NAME\t" : "");
    wf_tw_puts(&tw, "SERVICE FQDN\tPORT\tSUBSET\tDIRECTION\tTYPE\tDESTINATION RULE\n");
    for (size_t i = 0; i < s.m; i++)
        cluster_row(&tw, s.v[i], o);
    rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
    if (rc != 0)
        wf_strbuf_puts(err, "out of memory");
    pc_sel_free(&s);
    return rc;
}

/* ---- pc bootstrap (§2.1) -----------------------------------------------------------------------
 */

/* Envoy's "<commit>/<x.y.z>/<status>/<type>[/<ssl>]" without the commit: what the lines
 * below print from user_agent_build_version. 0, or -1 when sv is not in that form. */
static int server_version(const char *sv, wf_strbuf *sb)
{
    const char *slash = sv ? strchr(sv, '/') : NULL;
    if (!slash || !slash[1] || !strchr(slash + 1, '/'))
        return -1;
    wf_strbuf_puts(sb, slash + 1);
    return 0;
}

static void envoy_version(const json_t *node, const char *sv, wf_strbuf *sb)
{
    const json_t *ua = wf_jpath(node, "user_agent_build_version");
    if (!ua && server_version(sv, sb) == 0)
        return;
    const json_t *ver = json_object_get(ua, "version");
    wf_strbuf_printf(sb, "%lld.%lld.%lld", wf_jint(ver, "major_number"),
                     wf_jint(ver, "minor_number"), wf_jint(ver, "patch"));
    const json_t *md = json_object_get(ua, "metadata");
    static const struct {
        const char *key, *sep;
    } parts[] = {
        {"build.label", "-"}, {"revision.status", "/"}, {"build.type", "/"}, {"ssl.version", "/"}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const char *s = wf_jstr(md, parts[i].key);
        if (s && *s)
            wf_strbuf_printf(sb, "%s%s", parts[i].sep, s);
    }
}

static int bootstrap_short(const json_t *sec, const char *sv, wf_strbuf *out)
{
    const json_t *node = wf_jpath(sec, "bootstrap.node");
    const json_t *md = json_object_get(node, "metadata");
    const char *iv = wf_jstr(md, "ISTIO_VERSION");
    const char *sha = wf_jstr(md, "ISTIO_PROXY_SHA");
    if (sha && strchr(sha, ':'))
        sha = strchr(sha, ':') + 1;
    wf_tw tw;
    wf_tw_init(&tw, 1);
    if (iv && *iv)
        wf_tw_printf(&tw, "Istio Version:\t%s\n", iv);
    if (sha && *sha)
        wf_tw_printf(&tw, "Istio Proxy Version:\t%s\n", sha);
    wf_strbuf ev = WF_STRBUF_INIT;
    envoy_version(node, sv, &ev);
    wf_tw_printf(&tw, "Envoy Version:\t%s\n", wf_strbuf_cstr(&ev));
    wf_strbuf_free(&ev);
    int rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
    return rc;
}

int pc_bootstrap(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    json_t *sec = wf_envoy_dump_section(d, WF_DUMP_T_BOOTSTRAP, NULL, err);
    if (!sec)
        return -1;
    if (o->out != PC_OUT_SHORT)
        return pc_print_raw(o, sec, true, out, err);
    if (bootstrap_short(sec, o->server_version, out) != 0) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}
