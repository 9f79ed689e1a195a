/*
 * admin_ops.c - the admin's operational endpoints (admin_internal.h), shaped as Envoy's
 * source/server/admin/{server_info,server_cmd,runtime,init_dump,logs,stats}_handler.cc and
 * docs operations/admin:
 *
 *  GET  /memory  admin.v3.Memory, uint64 fields printed as JSON strings (protobuf JSON):
 *       {"allocated","heap_size","pageheap_unmapped","pageheap_free","total_thread_cache",
 *        "total_physical_bytes"}. Envoy reads tcmalloc; weft uses glibc malloc, so:
 *         allocated          = mallinfo2 uordblks + hblkhd (bytes in use, arenas + mmapped)
 *         heap_size          = mallinfo2 arena + hblkhd (bytes malloc got from the system)
 *         pageheap_free      = mallinfo2 fordblks (free bytes kept in the arenas)  [approx.]
 *         pageheap_unmapped  = 0: glibc keeps no unmapped-but-reserved pages       [approx.]
 *         total_thread_cache = 0: glibc's tcache is not reported by mallinfo2     [approx.]
 *         total_physical_bytes = resident set size (/proc/self/statm), else the peak RSS of
 *                              getrusage (ru_maxrss)                               [approx.]
 *       Under AddressSanitizer mallinfo2 reads 0.
 *  GET  /certs   {"certificates":[{"ca_cert":[...],"cert_chain":[...]}]}: one entry per TLS
 *                context fed by SDS whose secrets are held (sds/secrets.h
 *                wp_secrets_cert_entry: `default`/`ROOTCA`, or a gateway's credentialName);
 *                contexts with static certificates are not listed yet.
 *  GET  /runtime {"entries":{},"layers":[]}: the bootstrap's layered_runtime is accepted only
 *       empty (bootstrap.c), so there is no layer and no value.
 *  POST /healthcheck/fail, /healthcheck/ok  "OK\n". Envoy's InstanceImpl::failHealthcheck:
 *       server.live becomes 0 (1 again after ok), /ready answers 503 "DRAINING" and
 *       /server_info's state is DRAINING while the server is otherwise LIVE. weft has no
 *       health_check HTTP filter, so nothing else changes; server.state keeps weft's
 *       init/drain state (Envoy recomputes it from the flag at its stats flush).
 *  GET  /init_dump[?mask=listener]  admin.v3.UnreadyTargetsDumps: {} once everything is
 *       initialized; while listeners wait for their route configuration (RDS, warming) one
 *       {"name":"Listener-local-init-manager <listener>","target_names":[
 *       "RdsRouteConfigSubscription init <route config>"...]} per listener (Envoy's names,
 *       without the config hash Envoy appends to the manager's name).
 *  GET  /hot_restart_version  "disabled": weft has no hot restart (Envoy's HotRestartNopImpl,
 *       as under Istio's --disable-hot-restart).
 *  POST /reopen_logs  "OK\n": reopens every access-log file (alog_sink.h), as SIGUSR1 does
 *       (the server's reopen_logs action, admin.h); a file that cannot be reopened is logged at
 * error and keeps its old descriptor (Envoy also answers OK). GET  /stats/recentlookups  Envoy's
 * text with tracking disabled (its default; weft has no symbol table to track): "Lookup tracking is
 * not enabled. Use /stats/recentlookups/enable to enable.\n\ntotal: 0\n".
 */
#include <malloc.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "proxy/server/admin/admin_ops.h"
#include "proxy/access_log/alog_sink.h"
#include "proxy/sds/sds_ctx.h"
#include "proxy/sds/secrets.h"
#include "proxy/server/instance.h"

void wp_admin_put_json(admin_resp *o, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    if (!s) {
        o->status = 500;
        wf_strbuf_puts(&o->body, "out of memory\n");
    } else {
        wf_strbuf_puts(&o->body, s);
        wf_strbuf_putc(&o->body, '\n');
        o->content_type = "application/json";
    }
    free(s);
    json_decref(j);
}

/* ---------- query strings and the state name ---------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

void wp_admin_url_decode(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
            *o++ = (char)(hexval(p[1]) * 16 + hexval(p[2]));
            p += 2;
        } else if (*p == '+') {
            *o++ = ' ';
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
}

const char *wp_admin_qparam(const admin_req *r, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *p = r->query;
    while (*p) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= nl && strncmp(p, name, nl) == 0 && (len == nl || p[nl] == '=')) {
            size_t vl = len > nl ? len - nl - 1 : 0;
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, p + nl + (len > nl), vl);
            out[vl] = 0;
            wp_admin_url_decode(out);
            return out;
        }
        p += len + (end != NULL);
    }
    return NULL;
}

const char *wp_admin_state_name(wp_admin *a)
{
    static const char *const names[] = {"LIVE", "DRAINING", "PRE_INITIALIZING", "INITIALIZING"};
    int s = atomic_load(&a->srv->state);
    if (s == 0 && a->hc_failed)
        s = 1; /* Envoy's Utility::serverState: initialized + health check failed */
    return s >= 0 && s < 4 ? names[s] : "LIVE";
}

/* ---------- /memory ---------- */

/* Resident set size in bytes from /proc/self/statm, else the peak from getrusage. */
static unsigned long long physical_bytes(void)
{
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        int n = fscanf(f, "%llu %llu", &size, &resident);
        fclose(f);
        long page = sysconf(_SC_PAGESIZE);
        if (n == 2 && page > 0)
            return resident * (unsigned long long)page;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0)
        return (unsigned long long)ru.ru_maxrss * 1024u;
    return 0;
}

static json_t *u64_string(unsigned long long v)
{
    return json_sprintf("%llu", v);
}

void wp_admin_memory(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)a;
    (void)r;
    struct mallinfo2 mi = mallinfo2();
    json_t *j = json_object();
    if (j) {
        json_object_set_new(j, "allocated", u64_string(mi.uordblks + mi.hblkhd));
        json_object_set_new(j, "heap_size", u64_string(mi.arena + mi.hblkhd));
        json_object_set_new(j, "pageheap_unmapped", u64_string(0));
        json_object_set_new(j, "pageheap_free", u64_string(mi.fordblks));
        json_object_set_new(j, "total_thread_cache", u64_string(0));
        json_object_set_new(j, "total_physical_bytes", u64_string(physical_bytes()));
    }
    wp_admin_put_json(o, j);
}

/* ---------- /certs, /runtime, /hot_restart_version, /stats/recentlookups ---------- */

void wp_admin_certs(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)r;
    const wp_config *c = a->srv->gen->cfg;
    int64_t now = (int64_t)time(NULL);
    json_t *out = json_pack("{s:[]}", "certificates");
    /* one entry per TLS context fed by SDS: default / ROOTCA, or a gateway's credentials */
    for (size_t i = 0; out && i < c->nsds_ctxs; i++) {
        const char *cert, *ca;
        bool want_cert, want_ca;
        wp_sds_ctx_secrets(c->sds_ctxs[i], &cert, &want_cert, &ca, &want_ca);
        json_t *e = wp_secrets_cert_entry(a->srv->secrets, cert, want_cert, ca, want_ca, now);
        if (e)
            json_array_append_new(json_object_get(out, "certificates"), e);
    }
    wp_admin_put_json(o, out);
}

void wp_admin_runtime(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)a;
    (void)r;
    wp_admin_put_json(o, json_pack("{s:{},s:[]}", "entries", "layers"));
}

void wp_admin_hot_restart_version(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)a;
    (void)r;
    wf_strbuf_puts(&o->body, "disabled");
}

void wp_admin_recent_lookups(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)a;
    (void)r;
    wf_strbuf_puts(&o->body, "Lookup tracking is not enabled. Use /stats/recentlookups/enable to "
                             "enable.\n\ntotal: 0\n");
}

/* ---------- /healthcheck/fail|ok, /reopen_logs ---------- */

void wp_admin_healthcheck(wp_admin *a, const admin_req *r, admin_resp *o, bool fail)
{
    (void)r;
    if (a->hc_failed != fail) {
        wp_server *srv = a->srv;
        wp_stats_shard *sh = wp_stats_get_shard(srv->stats_store, srv->nworkers);
        wp_stat_add(sh, srv->gen->pstats->server_live, fail ? -1 : 1);
        /* server.state as Envoy's serverState(): a LIVE server is DRAINING while health
         * checks fail (initializing and draining servers keep their state) */
        if (atomic_load(&srv->state) == 0)
            wp_stat_add(sh, srv->gen->pstats->server_state, fail ? 1 : -1);
        a->hc_failed = fail;
        WF_LOG(WF_LC_admin, WF_LOG_INFO, "health checks %s by the admin",
               fail ? "failed" : "restored");
    }
    wf_strbuf_puts(&o->body, "OK\n");
}

void wp_admin_reopen_logs(wp_admin *a, const admin_req *r, admin_resp *o)
{
    (void)r;
    a->act.reopen_logs(a->act.ctx);
    wf_strbuf_puts(&o->body, "OK\n");
}

/* ---------- /init_dump ---------- */

/* Appends "RdsRouteConfigSubscription init <name>" for every rds.route_config_name in j. */
static void rds_targets(const json_t *j, json_t *out)
{
    const char *key;
    json_t *v;
    size_t i;
    if (json_is_array(j)) {
        json_array_foreach(j, i, v) rds_targets(v, out);
        return;
    }
    if (!json_is_object(j))
        return;
    const char *rc =
        json_string_value(json_object_get(json_object_get(j, "rds"), "route_config_name"));
    if (rc)
        json_array_append_new(out, json_sprintf("RdsRouteConfigSubscription init %s", rc));
    json_object_foreach((json_t *)j, key, v)
    {
        if (strcmp(key, "rds") != 0)
            rds_targets(v, out);
    }
}

static json_t *unready_listener(const json_t *dl)
{
    const json_t *l = json_object_get(json_object_get(dl, "warming_state"), "listener");
    const char *name = json_string_value(json_object_get(dl, "name"));
    json_t *targets = json_array();
    json_t *d = json_object();
    if (!l || !name || !targets || !d) {
        json_decref(targets);
        json_decref(d);
        return NULL;
    }
    rds_targets(l, targets);
    json_object_set_new(d, "name", json_sprintf("Listener-local-init-manager %s", name));
    if (json_array_size(targets))
        json_object_set_new(d, "target_names", targets);
    else
        json_decref(targets);
    return d;
}

void wp_admin_init_dump(wp_admin *a, const admin_req *r, admin_resp *o)
{
    char mask[64];
    const char *m = wp_admin_qparam(r, "mask", mask, sizeof(mask));
    const wp_config *cfg = a->srv->gen->cfg;
    json_t *root = json_object(), *list = json_array();
    const json_t *dls =
        json_object_get(json_object_get(cfg->xds_dump, "listeners"), "dynamic_listeners");
    size_t i;
    json_t *dl;
    if (root && list && (!m || !m[0] || strcmp(m, "listener") == 0)) {
        json_array_foreach(dls, i, dl)
        {
            json_t *d = unready_listener(dl);
            if (d)
                json_array_append_new(list, d);
        }
    }
    if (root && json_array_size(list))
        json_object_set(root, "unready_targets_dumps", list);
    json_decref(list);
    wp_admin_put_json(o, root);
}

/* ---------- /config_dump?name_regex= ---------- */

static const char *str_at(const json_t *j, const char *k1, const char *k2)
{
    return json_string_value(json_object_get(json_object_get(j, k1), k2));
}

/* The name of a config-dump element: its embedded resource's name (cluster, listener,
 * route_config, endpoint_config.cluster_name), else its own "name" (DynamicListener,
 * secrets). NULL when it has none. */
static const char *element_name(const json_t *e)
{
    const char *n = str_at(e, "cluster", "name");
    if (!n)
        n = str_at(e, "listener", "name");
    if (!n)
        n = str_at(e, "route_config", "name");
    if (!n)
        n = str_at(e, "endpoint_config", "cluster_name");
    if (!n)
        n = json_string_value(json_object_get(e, "name"));
    return n;
}

static bool full_match(const pcre2_code *re, const char *s, pcre2_match_data *md)
{
    return s && pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, md,
                            NULL) >= 0;
}

/* Drops the elements of arr whose twin in plain (same index) has a name not matching re. */
static void filter_array(json_t *arr, const json_t *plain, const pcre2_code *re,
                         pcre2_match_data *md)
{
    for (size_t i = json_array_size(arr); i-- > 0;) {
        const json_t *twin = json_array_get(plain, i);
        if (!full_match(re, element_name(twin ? twin : json_array_get(arr, i)), md))
            json_array_remove(arr, i);
    }
}

static const json_t *section_of_type(const json_t *plain_configs, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(plain_configs, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "@type"));
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

/* One dump section (ClustersConfigDump ...): filters each array of elements; arrays left
 * empty are dropped (protobuf JSON omits empty repeated fields). */
static void filter_section(json_t *sec, const json_t *plain_sec, const pcre2_code *re,
                           pcre2_match_data *md)
{
    const char *key;
    json_t *v, *tmp;
    json_object_foreach_safe(sec, tmp, key, v)
    {
        if (!json_is_array(v))
            continue;
        filter_array(v, json_object_get(plain_sec, key), re, md);
        if (json_array_size(v) == 0)
            json_object_del(sec, key);
    }
}

int wp_admin_filter_names(json_t *dump, const json_t *plain, const pcre2_code *re)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return -1;
    json_t *configs = json_object_get(dump, "configs");
    const json_t *pconfigs = json_object_get(plain, "configs");
    json_t *c;
    size_t i;
    bool elements = false;
    json_array_foreach(configs, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "@type"));
        elements |= t && strstr(t, "ConfigDump.") != NULL;
    }
    if (elements) { /* ?resource=: configs are the elements themselves */
        filter_array(configs, pconfigs, re, md);
    } else {
        json_array_foreach(configs, i, c)
        {
            const char *t = json_string_value(json_object_get(c, "@type"));
            if (t && !strstr(t, "BootstrapConfigDump"))
                filter_section(c, section_of_type(pconfigs, t), re, md);
        }
    }
    pcre2_match_data_free(md);
    return 0;
}
