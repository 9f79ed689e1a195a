/*
 * ads_gen.c - what the xDS server sends a connection (ads_internal.h): the current snapshot
 * and its generation cache (gen_cache.h), a connection's resources as JSON or as text, SDS
 * with istiod's error reporting, push metrics. Builds on ads_conn.c only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/sds.h"

/* The snapshot's generation cache, made on first use; NULL with an injected generator (tests)
 * or on OOM. */
static wf_gen_cache *cache_of(wf_ads *a)
{
    if (!a->snap || a->opts.generate != wf_pilot_generate)
        return NULL;
    if (!a->cache) {
        wf_pilot_env env = {.store = a->snap->store,
                            .mesh = a->snap->mesh,
                            .jwks_resolve = a->opts.jwks_resolve,
                            .jwks_arg = a->opts.jwks_arg};
        a->cache = wf_gen_cache_new(&env);
    }
    return a->cache;
}

static void sds_warn(void *ud, const char *line)
{
    (void)ud;
    WF_LOG(WF_LC_config, WF_LOG_WARN, "%s", line);
}

/* SDS with the real generator: istiod's SecretGen logs every failure and counts it in
 * pilot_sds_certificate_errors_total (pilot/sds.h); wf_pilot_generate stays quiet. */
static json_t *sds_gen(wf_ads_conn *c, const wf_xds_names *names)
{
    wf_ads *a = c->ads;
    const wf_sds_report rep = {.warn = sds_warn, .errors = &a->metrics.sds_cert_errors};
    return wf_pilot_sds_secrets(a->snap->store, c->proxy.id, c->proxy.ns, names,
                                (int64_t)time(NULL), &rep);
}

json_t *wf_ads_gen(wf_ads_conn *c, wf_xds_type t, const wf_xds_names *names)
{
    wf_gen_cache *gc = cache_of(c->ads);
    if (gc && t == WF_XDS_SDS)
        return sds_gen(c, names);
    return gc ? wf_gen_cache_json(gc, &c->proxy, t, names)
              : wf_ads_generate(c->ads, &c->proxy, t, names);
}

static int gen_text_of(json_t *res, wf_gen_text *out);

/* The resources of t for c as text (gen_cache.h); with an injected generator its output,
 * serialized. 0 or -1. */
int wf_ads_gen_text(wf_ads_conn *c, wf_xds_type t, const wf_xds_watch *w, wf_gen_text *out)
{
    /* the watch keeps the hash of its names: not recomputed per push */
    return wf_ads_gen_text_names(c, t, &w->names,
                                 w->list ? w->names_hash : wf_xds_names_hash(&w->names), out);
}

int wf_ads_gen_text_names(wf_ads_conn *c, wf_xds_type t, const wf_xds_names *names,
                          uint64_t names_hash, wf_gen_text *out)
{
    wf_gen_cache *gc = cache_of(c->ads);
    if (gc && t == WF_XDS_SDS) {
        json_t *res = sds_gen(c, names);
        return gen_text_of(res, out);
    }
    if (gc)
        return wf_gen_cache_text_hashed(gc, &c->proxy, t, names, names_hash, out);
    return gen_text_of(wf_ads_generate(c->ads, &c->proxy, t, names), out);
}

/* res (released) as the text of a response; 0 or -1. */
static int gen_text_of(json_t *res, wf_gen_text *out)
{
    *out = (wf_gen_text){.shared = ""};
    char *txt = res ? json_dumps(res, JSON_COMPACT) : NULL;
    json_decref(res);
    size_t n = txt ? strlen(txt) : 0;
    if (n < 2) {
        free(txt);
        return -1;
    }
    memmove(txt, txt + 1, n - 2);
    txt[n - 2] = '\0';
    *out = (wf_gen_text){.shared = "", .own = txt, .own_len = n - 2};
    out->hash = wf_ads_hash(txt, n - 2);
    return 0;
}

void wf_ads_observe_push(wf_ads_conn *c, wf_xds_type t, uint64_t t0_ns)
{
    wf_ads *a = c->ads;
    a->metrics.pushes[t]++;
    wf_ads_hist_observe(&a->metrics.push_time[t], (double)(uv_hrtime() - t0_ns) / 1e9);
}

void wf_ads_set_snapshot(wf_ads *a, wf_snapshot *snap)
{
    wf_gen_cache *old = a->cache;
    a->cache = NULL;
    if (old && snap && a->opts.generate == wf_pilot_generate) {
        wf_pilot_env env = {.store = snap->store,
                            .mesh = snap->mesh,
                            .jwks_resolve = a->opts.jwks_resolve,
                            .jwks_arg = a->opts.jwks_arg};
        a->cache = wf_gen_cache_carry(old, &env, (const char *const *)snap->changed,
                                      snap->n_changed, snap->mesh_changed);
    }
    wf_gen_cache_free(old);
    wf_snapshot_unref(a->snap);
    a->snap = snap;
}

json_t *wf_ads_generate(const wf_ads *a, const wf_pilot_proxy *p, wf_xds_type t,
                        const wf_xds_names *names)
{
    if (!a->snap) {
        return NULL;
    }
    wf_pilot_env env = {.store = a->snap->store,
                        .mesh = a->snap->mesh,
                        .jwks_resolve = a->opts.jwks_resolve,
                        .jwks_arg = a->opts.jwks_arg};
    return a->opts.generate(&env, p, t, names);
}
