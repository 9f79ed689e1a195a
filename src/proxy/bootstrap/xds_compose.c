/*
 * xds_compose.c - effective bootstrap from the base bootstrap and the accepted xDS resources
 * (see xds_compose.h for the rules and the Envoy behaviour they follow).
 */
#include "proxy/bootstrap/xds_compose.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HCM_NAME "envoy.filters.network.http_connection_manager"
#define HCM_TYPE                                                                                   \
    "type.googleapis.com/"                                                                         \
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define DUMP_CLUSTER  "type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster"
#define DUMP_ROUTE    "type.googleapis.com/envoy.admin.v3.RoutesConfigDump.DynamicRouteConfig"
#define DUMP_ENDPOINT "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump.DynamicEndpointConfig"

typedef struct cx {
    const wp_xds_resources *res;
    json_t *clusters, *listeners; /* effective static_resources arrays */
    wp_xds_dynamic *dyn;
    wf_strbuf *err;
    int bad_type;
    char bad_name[256];
    bool failed;
} cx;

/* ---- small JSON helpers ---- */

/* o[snake] or o[lowerCamel(snake)]. */
static json_t *field(const json_t *o, const char *snake)
{
    json_t *v = json_object_get(o, snake);
    if (v || !strchr(snake, '_'))
        return json_is_null(v) ? NULL : v;
    char camel[128];
    size_t n = 0;
    for (const char *p = snake; *p && n + 1 < sizeof(camel); p++) {
        if (*p == '_' && p[1]) {
            camel[n++] = (char)toupper((unsigned char)*++p);
        } else {
            camel[n++] = *p;
        }
    }
    camel[n] = '\0';
    v = json_object_get(o, camel);
    return json_is_null(v) ? NULL : v;
}

/* Removes o[snake] and its lowerCamelCase twin. */
static void del_field(json_t *o, const char *snake)
{
    while (field(o, snake)) {
        if (json_object_del(o, snake) != 0) {
            char camel[128];
            size_t n = 0;
            for (const char *p = snake; *p && n + 1 < sizeof(camel); p++)
                camel[n++] = *p == '_' && p[1] ? (char)toupper((unsigned char)*++p) : *p;
            camel[n] = '\0';
            json_object_del(o, camel);
        }
    }
}

static const char *str_field(const json_t *o, const char *k)
{
    json_t *v = field(o, k);
    return json_is_string(v) && *json_string_value(v) ? json_string_value(v) : NULL;
}

static bool fail(cx *c, int type, const char *name, const char *fmt, const char *detail)
{
    if (c->failed)
        return false;
    c->failed = true;
    static const char *const kinds[] = {"cluster", "listener", "route configuration",
                                        "cluster load assignment"};
    c->bad_type = type;
    snprintf(c->bad_name, sizeof(c->bad_name), "%s", name ? name : "");
    if (type >= 0 && type <= WF_XDS_EDS && name)
        wf_strbuf_printf(c->err, "%s '%s': ", kinds[type], name);
    wf_strbuf_printf(c->err, fmt, detail);
    return false;
}

static bool oom(cx *c)
{
    return fail(c, -1, NULL, "%s", "out of memory");
}

static bool names_add(wf_xds_names *n, const char *s, bool unique)
{
    for (size_t i = 0; unique && i < n->n; i++)
        if (strcmp(n->v[i], s) == 0)
            return true;
    char **v = realloc(n->v, (n->n + 1) * sizeof(*v));
    if (!v)
        return false;
    n->v = v;
    if (!(v[n->n] = strdup(s)))
        return false;
    n->n++;
    return true;
}

/* Shallow copy of o without "@type". */
static json_t *untyped(const json_t *o)
{
    json_t *c = json_copy((json_t *)o);
    if (c)
        json_object_del(c, "@type");
    return c;
}

const char *wp_xds_resource_name(int t, const json_t *r)
{
    if (t == WF_XDS_CDS || t == WF_XDS_LDS || t == WF_XDS_RDS || t == WF_XDS_SDS)
        return str_field(r, "name");
    if (t == WF_XDS_EDS)
        return str_field(r, "cluster_name");
    return NULL;
}

/* A name already used by a base resource. */
static bool has_name(const json_t *arr, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *s = str_field(json_array_get(arr, i), "name");
        if (s && strcmp(s, name) == 0)
            return true;
    }
    return false;
}

/* ---- config dump elements ---- */

static json_t *dump_section(cx *c, const char *type_key, const char *key)
{
    json_t *d = json_object_get(c->dyn->dump, type_key);
    json_t *a = d ? json_object_get(d, key) : NULL;
    if (a)
        return a;
    if (!d && (json_object_set_new(c->dyn->dump, type_key, d = json_object()) != 0 || !d))
        return NULL;
    if (json_object_set_new(d, key, a = json_array()) != 0)
        return NULL;
    return a;
}

/* {"@type"?, "version_info", <res_key>: resource, "last_updated"} from an entry. */
static json_t *dump_elem(const json_t *entry, const char *elem_type, const char *res_key)
{
    json_t *e = json_object();
    json_t *v = json_object_get(entry, "version_info");
    json_t *t = json_object_get(entry, "last_updated");
    bool ok = e != NULL;
    if (ok && elem_type)
        ok = json_object_set_new(e, "@type", json_string(elem_type)) == 0;
    if (ok && json_is_string(v) && *json_string_value(v))
        ok = json_object_set(e, "version_info", v) == 0;
    if (ok) /* a private key never reaches /config_dump (Envoy redacts it) */
        ok = json_object_set_new(e, res_key, wp_tls_redacted(json_object_get(entry, "resource"))) ==
             0;
    if (ok && json_is_string(t))
        ok = json_object_set(e, "last_updated", t) == 0;
    if (!ok) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static bool dump_add(cx *c, const char *type_key, const char *key, json_t *elem)
{
    json_t *a = dump_section(c, type_key, key);
    if (!elem || !a || json_array_append_new(a, elem) != 0)
        return oom(c);
    return true;
}

static bool dump_versions(cx *c)
{
    static const struct {
        int t;
        const char *key;
    } v[] = {{WF_XDS_CDS, "clusters"}, {WF_XDS_LDS, "listeners"}};
    for (size_t i = 0; i < 2; i++) {
        const char *ver = c->res->version[v[i].t];
        if (!ver || !*ver)
            continue;
        json_t *d = json_object_get(c->dyn->dump, v[i].key);
        if (!d && (json_object_set_new(c->dyn->dump, v[i].key, d = json_object()) != 0 || !d))
            return oom(c);
        if (json_object_set_new(d, "version_info", json_string(ver)) != 0)
            return oom(c);
    }
    return true;
}

/* ---- clusters ---- */

/* The EDS cluster r as a STATIC cluster carrying its assignment (or none). */
static json_t *eds_to_static(cx *c, const char *name, const json_t *r, const char *svc,
                             bool *warming)
{
    json_t *set = c->res->set[WF_XDS_EDS];
    json_t *entry = set ? json_object_get(set, svc) : NULL;
    json_t *cla = entry ? json_object_get(entry, "resource") : NULL;
    json_t *out = json_copy((json_t *)r);
    json_t *la = cla ? untyped(cla) : json_object();
    *warming = cla == NULL;
    if (!out || !la || json_object_set_new(la, "cluster_name", json_string(name)) != 0) {
        json_decref(out);
        json_decref(la);
        return oom(c), NULL;
    }
    del_field(out, "eds_cluster_config");
    del_field(out, "load_assignment");
    if (json_object_set_new(out, "type", json_string("STATIC")) != 0 ||
        json_object_set_new(out, "load_assignment", la) != 0) {
        json_decref(out);
        return oom(c), NULL;
    }
    return out;
}

/* eds_cluster_config {eds_config {ads {}, ...}, service_name}: the assignment's name. */
static const char *eds_service(cx *c, const char *name, const json_t *r)
{
    json_t *ecc = field(r, "eds_cluster_config");
    json_t *src = ecc ? field(ecc, "eds_config") : NULL;
    if (ecc && !json_is_object(ecc))
        return fail(c, WF_XDS_CDS, name, "%s",
                    "eds_cluster_config: wrong type: expected an object"),
               NULL;
    if (!src || !json_is_object(field(src, "ads")))
        return fail(c, WF_XDS_CDS, name, "%s",
                    "eds_cluster_config.eds_config: only ads is supported (weft takes EDS from "
                    "the aggregated stream)"),
               NULL;
    const char *svc = str_field(ecc, "service_name");
    return svc ? svc : name;
}

static bool add_cluster(cx *c, const char *name, const json_t *entry)
{
    const json_t *r = json_object_get(entry, "resource");
    json_t *type = field(r, "type");
    bool eds = json_is_string(type) && strcmp(json_string_value(type), "EDS") == 0;
    bool warming = false;
    json_t *out;
    const char *svc = NULL;
    if (has_name(c->clusters, c->dyn->n_static_clusters, name))
        return fail(c, WF_XDS_CDS, name, "%s", "a static cluster with that name exists");
    if (eds) {
        svc = eds_service(c, name, r);
        if (!svc)
            return false;
        if (!names_add(&c->dyn->eds_names, svc, true))
            return oom(c);
        out = eds_to_static(c, name, r, svc, &warming);
    } else {
        out = json_incref((json_t *)r);
    }
    if (!out)
        return false;
    if (json_array_append_new(c->clusters, out) != 0 ||
        !names_add(&c->dyn->dyn_clusters, name, false) ||
        !names_add(&c->dyn->dyn_cluster_eds, eds ? svc : "", false) ||
        (warming && !names_add(&c->dyn->warming_clusters, name, false)))
        return oom(c);
    return dump_add(c, "clusters", warming ? "dynamic_warming_clusters" : "dynamic_active_clusters",
                    dump_elem(entry, DUMP_CLUSTER, "cluster"));
}

/* ---- listeners ---- */

/* The HCM typed_config with rds replaced by the inline route configuration; *missing set
 * when that configuration has not arrived (and NULL returned, unless placeholder_routes:
 * then an empty one is inlined). */
static json_t *inline_rds(cx *c, const char *lname, const json_t *tc, bool *missing)
{
    json_t *rds = field(tc, "rds");
    json_t *src = json_is_object(rds) ? field(rds, "config_source") : NULL;
    const char *rc = json_is_object(rds) ? str_field(rds, "route_config_name") : NULL;
    if (!rc)
        return fail(c, WF_XDS_LDS, lname, "%s", "rds.route_config_name: missing required field"),
               NULL;
    if (!src || !json_is_object(field(src, "ads")))
        return fail(c, WF_XDS_LDS, lname, "%s",
                    "rds.config_source: only ads is supported (weft takes RDS from the "
                    "aggregated stream)"),
               NULL;
    if (!names_add(&c->dyn->rds_names, rc, true))
        return oom(c), NULL;
    json_t *set = c->res->set[WF_XDS_RDS];
    json_t *entry = set ? json_object_get(set, rc) : NULL;
    if (!entry) { /* warming; with placeholder_routes composed with an empty one */
        *missing = true;
        if (!c->res->placeholder_routes)
            return NULL;
    }
    json_t *out = json_copy((json_t *)tc);
    json_t *route =
        entry ? untyped(json_object_get(entry, "resource")) : json_pack("{s:s}", "name", rc);
    if (!out || !route) {
        json_decref(out);
        json_decref(route);
        return oom(c), NULL;
    }
    del_field(out, "rds");
    if (json_object_set_new(out, "route_config", route) != 0) {
        json_decref(out);
        return oom(c), NULL;
    }
    return out;
}

/* A copy of filter f with its HCM's rds inlined (f itself, referenced, when there is none). */
static json_t *filter_inlined(cx *c, const char *lname, json_t *f, bool *missing)
{
    json_t *tc = field(f, "typed_config");
    const char *name = str_field(f, "name");
    const char *type = tc ? str_field(tc, "@type") : NULL;
    bool hcm = (name && strcmp(name, HCM_NAME) == 0) || (type && strcmp(type, HCM_TYPE) == 0);
    if (!hcm || !json_is_object(tc) || !field(tc, "rds"))
        return json_incref(f);
    json_t *ntc = inline_rds(c, lname, tc, missing);
    if (!ntc)
        return NULL;
    json_t *out = json_copy(f);
    if (out)
        del_field(out, "typed_config");
    if (!out || json_object_set_new(out, "typed_config", ntc) != 0) {
        json_decref(out);
        return oom(c), NULL;
    }
    return out;
}

/* Array arr with each element mapped by fn (a new array), NULL on error or missing. */
static json_t *map_array(cx *c, const char *lname, json_t *arr, bool *missing,
                         json_t *(*fn)(cx *, const char *, json_t *, bool *))
{
    json_t *out = json_array();
    bool gap = false; /* an element is missing its route configuration: the others are still
                       * mapped, so that every name they need is noted (one RDS request) */
    if (!out)
        return oom(c), NULL;
    for (size_t i = 0; i < json_array_size(arr) && !c->failed; i++) {
        json_t *e = json_array_get(arr, i);
        json_t *m = json_is_object(e) ? fn(c, lname, e, missing) : json_incref(e);
        if (!m)
            gap = true;
        else if (json_array_append_new(out, m) != 0) {
            json_decref(out);
            return oom(c), NULL;
        }
    }
    if (gap || c->failed) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *chain_inlined(cx *c, const char *lname, json_t *ch, bool *missing)
{
    json_t *fs = field(ch, "filters");
    if (!json_is_array(fs))
        return json_incref(ch);
    json_t *nfs = map_array(c, lname, fs, missing, filter_inlined);
    json_t *out = nfs ? json_copy(ch) : NULL;
    if (nfs && (!out || json_object_set_new(out, "filters", nfs) != 0)) {
        json_decref(out);
        return oom(c), NULL;
    }
    return out;
}

/* *warming: a route configuration of the listener has not arrived (it is left out, or
 * composed with placeholders when res->placeholder_routes). */
/* *out (a copy of the listener, made on first use) with its key k set to v (consumed). */
static bool set_in_copy(cx *c, json_t *r, json_t **out, const char *k, json_t *v)
{
    if (!*out)
        *out = json_copy(r);
    if (*out)
        del_field(*out, k);
    if (!*out || json_object_set_new(*out, k, v) != 0)
        return oom(c);
    return true;
}

/* ---- SDS secrets a listener waits for ---- */

#define SDS_K8S_PREFIX       "kubernetes://"
#define SDS_DEFAULT_FETCH_MS 15000u

/* A protobuf JSON Duration ("15s", "0.5s") in ms; dflt when absent or not one. */
static uint64_t duration_ms(const json_t *v, uint64_t dflt)
{
    const char *s = json_string_value(v);
    char *end = NULL;
    double d = s ? strtod(s, &end) : -1;
    if (!s || end == s || strcmp(end, "s") != 0 || d < 0 || d > 1e9)
        return dflt;
    return (uint64_t)(d * 1000.0 + 0.5);
}

/* One SdsSecretConfig: a credentialName secret over ads is noted; *missing when it is neither
 * held nor expired. */
static bool sds_secret(cx *c, const json_t *cfg, bool *missing)
{
    const char *name = str_field(cfg, "name");
    json_t *src = field(cfg, "sds_config");
    if (!name || strncmp(name, SDS_K8S_PREFIX, sizeof SDS_K8S_PREFIX - 1) != 0 ||
        !json_is_object(src) || !json_is_object(field(src, "ads")))
        return true;
    if (!names_add(&c->dyn->sds_names, name, true))
        return oom(c);
    uint64_t dflt =
        c->res->sds_default_fetch_ms ? c->res->sds_default_fetch_ms : SDS_DEFAULT_FETCH_MS;
    uint64_t ms = duration_ms(field(src, "initial_fetch_timeout"), dflt);
    if (ms > c->dyn->sds_fetch_ms)
        c->dyn->sds_fetch_ms = ms;
    const json_t *held = c->res->set[WF_XDS_SDS];
    if (!(held && json_object_get(held, name)) &&
        !(c->res->sds_expired && json_object_get(c->res->sds_expired, name)))
        *missing = true;
    return true;
}

/* The SDS secrets of a filter chain's DownstreamTlsContext. */
static bool chain_sds(cx *c, const json_t *ch, bool *missing)
{
    json_t *tc = field(field(ch, "transport_socket"), "typed_config");
    json_t *ctc = field(tc, "common_tls_context");
    json_t *certs = field(ctc, "tls_certificate_sds_secret_configs");
    json_t *cvc = field(ctc, "combined_validation_context");
    const json_t *vs[] = {field(ctc, "validation_context_sds_secret_config"),
                          field(cvc, "validation_context_sds_secret_config")};
    for (size_t i = 0; i < json_array_size(certs); i++)
        if (!sds_secret(c, json_array_get(certs, i), missing))
            return false;
    for (size_t i = 0; i < 2; i++)
        if (json_is_object(vs[i]) && !sds_secret(c, vs[i], missing))
            return false;
    return true;
}

/* Every chain's secrets (all noted, even after a missing one); *missing as chain_sds. */
static bool listener_sds(cx *c, const json_t *r, bool *missing)
{
    json_t *chains = field(r, "filter_chains"), *dflt = field(r, "default_filter_chain");
    for (size_t i = 0; i < json_array_size(chains); i++)
        if (!chain_sds(c, json_array_get(chains, i), missing))
            return false;
    return !json_is_object(dflt) || chain_sds(c, dflt, missing);
}

static bool add_listener(cx *c, const char *name, const json_t *entry, bool *warming)
{
    json_t *r = json_object_get(entry, "resource");
    json_t *chains = field(r, "filter_chains"), *dflt = field(r, "default_filter_chain");
    bool missing = false;
    json_t *out = NULL;
    *warming = false;
    if (has_name(c->listeners, c->dyn->n_static_listeners, name))
        return fail(c, WF_XDS_LDS, name, "%s", "a static listener with that name exists");
    bool no_secret = false;
    if (!listener_sds(c, r, &no_secret))
        return false;
    if (json_is_array(chains)) {
        json_t *nch = map_array(c, name, chains, &missing, chain_inlined);
        *warming = missing && !c->failed;
        if (!nch)
            return !c->failed; /* missing route configuration: warming, left out */
        if (!set_in_copy(c, r, &out, "filter_chains", nch)) {
            json_decref(out);
            return false;
        }
    }
    if (json_is_object(dflt)) { /* default_filter_chain: its HCM's rds inlined the same way */
        json_t *nd = chain_inlined(c, name, dflt, &missing);
        *warming = missing && !c->failed;
        if (!nd || !set_in_copy(c, r, &out, "default_filter_chain", nd)) {
            json_decref(out);
            return nd ? false : !c->failed;
        }
    }
    if (no_secret && !c->res->placeholder_routes) {
        json_decref(out); /* its route configurations are noted: waits for its secrets */
        *warming = true;  /* (or their initial fetch timeout) */
        return true;
    }
    *warming = *warming || no_secret;
    if (!out)
        out = json_incref(r);
    if (json_array_append_new(c->listeners, out) != 0 ||
        !names_add(&c->dyn->dyn_listeners, name, false))
        return oom(c);
    return true;
}

/* The DynamicListener dump element: active, or warming (route configuration missing), or both
 * (active: the older version still serving while the update warms). */
static bool dump_listener(cx *c, const char *name, const json_t *entry, bool warming,
                          const json_t *active)
{
    json_t *state = dump_elem(entry, NULL, "listener");
    json_t *old = active ? dump_elem(active, NULL, "listener") : NULL;
    json_t *e = json_object();
    if (!state || !e || (active && !old) ||
        json_object_set_new(e, "name", json_string(name)) != 0 ||
        (old && json_object_set_new(e, "active_state", old) != 0) ||
        json_object_set_new(e, warming ? "warming_state" : "active_state", state) != 0) {
        json_decref(e);
        if (!e)
            json_decref(old);
        json_decref(state);
        return oom(c);
    }
    return dump_add(c, "listeners", "dynamic_listeners", e);
}

/* Records name -> entry in lds_served (the version composed to serve). */
static bool note_served(cx *c, const char *name, const json_t *entry)
{
    if (c->res->placeholder_routes)
        return true;
    if (!c->dyn->lds_served && !(c->dyn->lds_served = json_object()))
        return oom(c);
    if (json_object_set(c->dyn->lds_served, name, (json_t *)entry) != 0)
        return oom(c);
    return true;
}

/* Listener k's update (entry) is warming: Envoy keeps the version that served before active
 * until the update warms (ListenerManagerImpl: a warming listener replaces the active one only
 * once warmed). The older version is composed in its place when it still composes active;
 * *active gets it (NULL when none). Placeholder mode composes nothing more and only says
 * whether an older version exists (the hold keeps the workers' sockets for it). */
static bool keep_older(cx *c, const char *k, const json_t *entry, const json_t **active)
{
    const json_t *prev = c->res->lds_active ? json_object_get(c->res->lds_active, k) : NULL;
    *active = NULL;
    if (!prev || json_equal(json_object_get(prev, "resource"), json_object_get(entry, "resource")))
        return true;
    if (c->res->placeholder_routes) {
        *active = prev;
        return names_add(&c->dyn->updating_listeners, k, false) || oom(c);
    }
    size_t before = json_array_size(c->listeners);
    bool warming = false;
    if (!add_listener(c, k, prev, &warming))
        return false;
    if (json_array_size(c->listeners) == before)
        return true; /* the older version cannot serve either (its routes went) */
    *active = prev;
    if (!names_add(&c->dyn->updating_listeners, k, false) || !note_served(c, k, prev))
        return oom(c);
    return true;
}

/* ---- top level ---- */

static json_t *static_array(cx *c, json_t *eff, const char *key)
{
    json_t *sr = json_object_get(eff, "static_resources");
    if (!sr) {
        if (json_object_set_new(eff, "static_resources", sr = json_object()) != 0 || !sr)
            return oom(c), NULL;
    }
    json_t *a = json_object_get(sr, key);
    json_t *copy = json_is_array(a) ? json_copy(a) : json_array();
    if (a && !json_is_array(a))
        return fail(c, -1, NULL, "static_resources.%s: wrong type: expected an array", key), NULL;
    if (!copy || json_object_set_new(sr, key, copy) != 0)
        return oom(c), NULL;
    return copy;
}

/* eff is a shallow copy of the base: give it its own static_resources before changing it. */
static bool own_static(cx *c, json_t *eff)
{
    json_t *sr = json_object_get(eff, "static_resources");
    if (sr && !json_is_object(sr))
        return fail(c, -1, NULL, "%s", "static_resources: wrong type: expected an object");
    json_t *copy = sr ? json_copy(sr) : json_object();
    if (!copy || json_object_set_new(eff, "static_resources", copy) != 0)
        return oom(c);
    return true;
}

static bool compose_all(cx *c)
{
    const char *k;
    json_t *entry;
    json_t *cds = c->res->set[WF_XDS_CDS], *lds = c->res->set[WF_XDS_LDS];
    json_object_foreach(cds, k, entry) if (!add_cluster(c, k, entry)) return false;
    json_object_foreach(lds, k, entry)
    {
        bool warming = false;
        const json_t *active = NULL;
        size_t before = json_array_size(c->listeners);
        if (!add_listener(c, k, entry, &warming))
            return false;
        bool added = json_array_size(c->listeners) > before;
        if (warming && !names_add(&c->dyn->warming_listeners, k, false))
            return oom(c);
        if (added && !warming && !note_served(c, k, entry))
            return false;
        if (warming && (!added || c->res->placeholder_routes) && !keep_older(c, k, entry, &active))
            return false;
        if (!dump_listener(c, k, entry, warming, active))
            return false;
    }
    json_t *rds = c->res->set[WF_XDS_RDS], *eds = c->res->set[WF_XDS_EDS];
    json_object_foreach(rds, k, entry)
    {
        if (!dump_add(c, "routes", "dynamic_route_configs",
                      dump_elem(entry, DUMP_ROUTE, "route_config")))
            return false;
    }
    json_object_foreach(eds, k, entry)
    {
        if (!dump_add(c, "endpoints", "dynamic_endpoint_configs",
                      dump_elem(entry, DUMP_ENDPOINT, "endpoint_config")))
            return false;
    }
    return dump_versions(c);
}

int wp_xds_compose(const json_t *base, const wp_xds_resources *res, json_t **effective,
                   wp_xds_dynamic *dyn, wf_strbuf *err, int *bad_type, char *bad_name)
{
    memset(dyn, 0, sizeof(*dyn));
    *effective = NULL;
    cx c = {.res = res, .dyn = dyn, .err = err, .bad_type = -1};
    json_t *eff = json_is_object(base) ? json_copy((json_t *)base) : NULL;
    if (!json_is_object(base))
        fail(&c, -1, NULL, "%s", "the base bootstrap must be a JSON object");
    else if (!eff || !(dyn->dump = json_object()))
        oom(&c);
    if (!c.failed && own_static(&c, eff) && (c.clusters = static_array(&c, eff, "clusters")) &&
        (c.listeners = static_array(&c, eff, "listeners"))) {
        dyn->n_static_clusters = json_array_size(c.clusters);
        dyn->n_static_listeners = json_array_size(c.listeners);
        compose_all(&c);
    }
    if (bad_type)
        *bad_type = c.bad_type;
    if (bad_name)
        snprintf(bad_name, 256, "%s", c.bad_name);
    if (c.failed) {
        json_decref(eff);
        wp_xds_dynamic_free(dyn);
        return -1;
    }
    *effective = eff;
    return 0;
}

void wp_xds_dynamic_free(wp_xds_dynamic *d)
{
    json_decref(d->dump);
    wf_xds_names_free(&d->eds_names);
    wf_xds_names_free(&d->rds_names);
    wf_xds_names_free(&d->sds_names);
    wf_xds_names_free(&d->warming_clusters);
    wf_xds_names_free(&d->warming_listeners);
    wf_xds_names_free(&d->updating_listeners);
    json_decref(d->lds_served);
    wf_xds_names_free(&d->dyn_clusters);
    wf_xds_names_free(&d->dyn_listeners);
    wf_xds_names_free(&d->dyn_cluster_eds);
    memset(d, 0, sizeof(*d));
}

/* ---- naming errors ---- */

/* "<prefix>[N]" at *p: N, *p moved past "]". */
static bool take_index(const char **p, const char *prefix, size_t *n)
{
    size_t pl = strlen(prefix);
    if (strncmp(*p, prefix, pl) != 0 || (*p)[pl] != '[')
        return false;
    char *end;
    unsigned long long v = strtoull(*p + pl + 1, &end, 10);
    if (end == *p + pl + 1 || *end != ']')
        return false;
    *n = (size_t)v;
    *p = end + 1;
    return true;
}

/* reason = "<path>: <message>" from the text after a resource's path (".x.y: msg" or ": msg"). */
static void put_reason(const char *after, wf_strbuf *reason)
{
    if (*after == '.')
        after++;
    else if (strncmp(after, ": ", 2) == 0)
        after += 2;
    wf_strbuf_puts(reason, after);
}

/* The route configuration inlined at "filter_chains[i].filters[j].typed_config.route_config"
 * (or "default_filter_chain.filters[j]...") of listener l; *after moved past it. */
static const char *route_at(const json_t *l, const char **after)
{
    static const char dflt[] = "default_filter_chain.";
    size_t i, j;
    const char *p = *after;
    json_t *ch = NULL;
    if (*p == '.')
        p++;
    if (strncmp(p, dflt, sizeof(dflt) - 1) == 0) {
        p += sizeof(dflt) - 1;
        ch = json_object_get(l, "default_filter_chain");
    } else if (take_index(&p, "filter_chains", &i) && strncmp(p, ".", 1) == 0) {
        p++;
        ch = json_array_get(json_object_get(l, "filter_chains"), i);
    } else {
        return NULL;
    }
    static const char tail[] = ".typed_config.route_config";
    if (!take_index(&p, "filters", &j) || strncmp(p, tail, sizeof(tail) - 1) != 0)
        return NULL;
    json_t *f = json_array_get(json_object_get(ch, "filters"), j);
    json_t *rc = json_object_get(json_object_get(f, "typed_config"), "route_config");
    const char *name = str_field(rc, "name");
    if (name)
        *after = p + sizeof(tail) - 1;
    return name;
}

int wp_xds_locate_error(const wp_xds_dynamic *dyn, const json_t *effective, const char *source,
                        const char *error, char *name, size_t cap, wf_strbuf *reason)
{
    const char *p = error;
    size_t sl = source ? strlen(source) : 0;
    if (sl && strncmp(p, source, sl) == 0 && strncmp(p + sl, ": ", 2) == 0)
        p += sl + 2;
    const char *path = p;
    size_t n = 0;
    int type = -1;
    const char *rname = NULL;
    json_t *sr = json_object_get(effective, "static_resources");
    if (take_index(&p, "static_resources.clusters", &n) && n >= dyn->n_static_clusters &&
        n - dyn->n_static_clusters < dyn->dyn_clusters.n) {
        size_t k = n - dyn->n_static_clusters;
        type = WF_XDS_CDS;
        rname = dyn->dyn_clusters.v[k];
        static const char la[] = ".load_assignment";
        if (k < dyn->dyn_cluster_eds.n && *dyn->dyn_cluster_eds.v[k] &&
            strncmp(p, la, sizeof(la) - 1) == 0) {
            type = WF_XDS_EDS;
            rname = dyn->dyn_cluster_eds.v[k];
            p += sizeof(la) - 1;
        }
    } else if ((p = path, take_index(&p, "static_resources.listeners", &n)) &&
               n >= dyn->n_static_listeners && n - dyn->n_static_listeners < dyn->dyn_listeners.n) {
        type = WF_XDS_LDS;
        rname = dyn->dyn_listeners.v[n - dyn->n_static_listeners];
        const char *rc = route_at(json_array_get(json_object_get(sr, "listeners"), n), &p);
        if (rc) {
            type = WF_XDS_RDS;
            rname = rc;
        }
    }
    if (type < 0) {
        wf_strbuf_puts(reason, path);
        return -1;
    }
    snprintf(name, cap, "%s", rname);
    put_reason(p, reason);
    return type;
}

void wp_xds_nack_text(int type, const char *name, const char *reason, wf_strbuf *out)
{
    static const char *const what[] = {"cluster(s)", "listener(s)", "route configuration(s)",
                                       "cluster load assignment(s)"};
    if (type >= 0 && type <= WF_XDS_EDS && name && *name)
        wf_strbuf_printf(out, "Error adding/updating %s %s: ", what[type], name);
    wf_strbuf_puts(out, reason);
}
