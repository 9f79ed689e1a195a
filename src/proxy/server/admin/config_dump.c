/*
 * config_dump.c - Envoy-shaped /config_dump documents (see config_dump.h).
 *
 * Field lists below are "name:kind" with kind s (scalar), r (repeated), m (message; deeper
 * mask paths allowed), a (embedded Any resource). They mirror the envoy/admin/v3 protos for the
 * messages weft produces.
 */
#include "proxy/server/admin/config_dump.h"
#include "core/timefmt.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ADMIN_T "type.googleapis.com/envoy.admin.v3."

typedef struct {
    const char *type;
    const char *fields;
} schema;

typedef struct {
    const char *field;     /* repeated field of a dump */
    const char *elem_type; /* @type of its elements */
    const char *elem_fields;
} elem_schema;

static const schema BOOTSTRAP = {ADMIN_T "BootstrapConfigDump", "bootstrap:m last_updated:m"};
static const schema CLUSTERS = {ADMIN_T "ClustersConfigDump",
                                "version_info:s static_clusters:r dynamic_active_clusters:r "
                                "dynamic_warming_clusters:r"};
static const schema ENDPOINTS = {ADMIN_T "EndpointsConfigDump",
                                 "static_endpoint_configs:r dynamic_endpoint_configs:r"};
static const schema LISTENERS = {ADMIN_T "ListenersConfigDump",
                                 "version_info:s static_listeners:r dynamic_listeners:r"};
static const schema ROUTES = {ADMIN_T "RoutesConfigDump",
                              "static_route_configs:r dynamic_route_configs:r"};
static const schema SECRETS = {ADMIN_T "SecretsConfigDump",
                               "static_secrets:r dynamic_active_secrets:r "
                               "dynamic_warming_secrets:r"};

static const elem_schema ELEMS[] = {
    {"static_clusters", ADMIN_T "ClustersConfigDump.StaticCluster", "cluster:a last_updated:m"},
    {"static_listeners", ADMIN_T "ListenersConfigDump.StaticListener", "listener:a last_updated:m"},
    {"static_route_configs", ADMIN_T "RoutesConfigDump.StaticRouteConfig",
     "route_config:a last_updated:m"},
    {"static_endpoint_configs", ADMIN_T "EndpointsConfigDump.StaticEndpointConfig",
     "endpoint_config:a"},
    {"dynamic_active_clusters", ADMIN_T "ClustersConfigDump.DynamicCluster",
     "version_info:s cluster:a last_updated:m error_state:m client_status:s"},
    {"dynamic_warming_clusters", ADMIN_T "ClustersConfigDump.DynamicCluster",
     "version_info:s cluster:a last_updated:m error_state:m client_status:s"},
    {"dynamic_listeners", ADMIN_T "ListenersConfigDump.DynamicListener",
     "name:s active_state:m warming_state:m draining_state:m error_state:m client_status:s"},
    {"dynamic_route_configs", ADMIN_T "RoutesConfigDump.DynamicRouteConfig",
     "version_info:s route_config:a last_updated:m error_state:m client_status:s"},
    {"dynamic_endpoint_configs", ADMIN_T "EndpointsConfigDump.DynamicEndpointConfig",
     "version_info:s endpoint_config:a last_updated:m error_state:m client_status:s"},
    {"dynamic_active_secrets", ADMIN_T "SecretsConfigDump.DynamicSecret",
     "name:s version_info:s last_updated:m secret:a"},
    {"dynamic_warming_secrets", ADMIN_T "SecretsConfigDump.DynamicSecret",
     "name:s version_info:s last_updated:m secret:a"},
};

#define CLUSTER_T  "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define LISTENER_T "type.googleapis.com/envoy.config.listener.v3.Listener"
#define ROUTE_T    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
#define CLA_T      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

/* ---------- building the dumps ---------- */

/* {"@type": type, ...copy of o} */
static json_t *typed(const char *type, json_t *o)
{
    json_t *out = json_object();
    json_t *copy = json_deep_copy(o);
    if (!out || !copy || json_object_set_new(out, "@type", json_string(type)) != 0 ||
        json_object_update(out, copy) != 0) {
        json_decref(out);
        out = NULL;
    }
    json_decref(copy);
    return out;
}

/* {wrapper_key: typed(type, o), "last_updated": ts} appended to arr; false on OOM.
 * (jansson's *_set_new / *_append_new take the value's reference even when they fail.) */
static bool add_elem(json_t *arr, const char *key, const char *type, json_t *o, const char *ts)
{
    json_t *e = json_object();
    json_t *t = typed(type, o);
    if (!e || !t) {
        json_decref(e);
        json_decref(t);
        return false;
    }
    if (json_object_set_new(e, key, t) != 0 ||
        (ts && json_object_set_new(e, "last_updated", json_string(ts)) != 0)) {
        json_decref(e);
        return false;
    }
    return json_array_append_new(arr, e) == 0;
}

static json_t *new_dump(const schema *s)
{
    json_t *d = json_object();
    if (d && json_object_set_new(d, "@type", json_string(s->type)) != 0) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* Set d[key] = arr when arr is non-empty (protobuf JSON omits empty repeated fields). */
static bool set_list(json_t *d, const char *key, json_t *arr)
{
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        return true;
    }
    return json_object_set_new(d, key, arr) == 0;
}

static json_t *static_list(const wp_config *c, const char *key)
{
    json_t *sr = json_object_get(c->bootstrap, "static_resources");
    return json_object_get(sr, key);
}

/* How many entries of static_resources.<key> are the bootstrap's own (the rest of a snapshot
 * built from xDS are the dynamic resources written as static ones, xds_compose.h). */
static size_t static_count(const wp_config *c, const char *key)
{
    size_t n = json_array_size(static_list(c, key));
    if (!c->from_xds)
        return n;
    size_t own = strcmp(key, "clusters") == 0 ? c->n_static_clusters : c->n_static_listeners;
    return own < n ? own : n;
}

/* Copies the dynamic part of section `sec` of the xDS dump ("clusters", "listeners", "routes",
 * "endpoints": version_info and the dynamic_* lists) into dump d. */
static bool add_dynamic(const wp_config *c, json_t *d, const char *sec)
{
    json_t *part = json_object_get(c->xds_dump, sec);
    if (!part)
        return true;
    json_t *copy = json_deep_copy(part);
    bool ok = copy && json_object_update(d, copy) == 0;
    json_decref(copy);
    return ok;
}

/* Envoy's ListenerManagerImpl::dumpListenerConfigs: each named error state goes on the
 * dynamic listener of that name (an entry {name, error_state} is added after the others when
 * there is none), and each unnamed one is an entry of its own, last. The states are the xDS
 * client's "listener_errors" (xds_client_state.h), read at the time of the dump. */
static bool add_listener_errors(const wp_config *c, json_t *d)
{
    json_t *errors = json_object_get(c->xds_dump, "listener_errors");
    if (json_array_size(errors) == 0)
        return true;
    json_t *list = json_object_get(d, "dynamic_listeners");
    if (!list) {
        list = json_array();
        if (!list || json_object_set_new(d, "dynamic_listeners", list) != 0)
            return false;
    }
    size_t n = json_array_size(list), i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        json_t *state = json_object_get(e, "error_state");
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *to = NULL;
        for (size_t k = 0; name && k < n && !to; k++) {
            json_t *l = json_array_get(list, k);
            const char *ln = json_string_value(json_object_get(l, "name"));
            if (ln && strcmp(ln, name) == 0)
                to = l;
        }
        if (!state)
            continue;
        if (to) {
            if (json_object_set_new(to, "error_state", json_deep_copy(state)) != 0)
                return false;
        } else if (json_array_append_new(list, json_deep_copy(e)) != 0) {
            return false;
        }
    }
    return true;
}

/* The bootstrap as given: without the dynamic resources a snapshot from xDS adds. */
static json_t *own_bootstrap(const wp_config *c)
{
    json_t *bs = c->bootstrap ? json_deep_copy(c->bootstrap) : json_object();
    json_t *sr = json_object_get(bs, "static_resources");
    if (!bs || !c->from_xds || !sr)
        return bs;
    static const char *const keys[] = {"clusters", "listeners"};
    for (size_t k = 0; k < 2; k++) {
        json_t *list = json_object_get(sr, keys[k]);
        size_t own = static_count(c, keys[k]);
        while (json_array_size(list) > own)
            json_array_remove(list, json_array_size(list) - 1);
        if (list && own == 0)
            json_object_del(sr, keys[k]);
    }
    return bs;
}

static json_t *dump_bootstrap(const wp_config *c, const char *ts)
{
    json_t *d = new_dump(&BOOTSTRAP);
    if (!d)
        return NULL;
    json_t *bs = own_bootstrap(c);
    if (json_object_set_new(d, "bootstrap", bs) != 0 ||
        json_object_set_new(d, "last_updated", json_string(ts)) != 0) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static json_t *dump_resources(const wp_config *c, const schema *s, const char *src_key,
                              const char *field, const char *wrapper, const char *type,
                              const char *ts)
{
    json_t *d = new_dump(s);
    json_t *arr = json_array();
    json_t *list = static_list(c, src_key);
    size_t n = static_count(c, src_key);
    bool ok = d && arr;
    for (size_t i = 0; ok && i < n; i++)
        ok = add_elem(arr, wrapper, type, json_array_get(list, i), ts);
    if (ok && set_list(d, field, arr) && add_dynamic(c, d, src_key) &&
        (strcmp(src_key, "listeners") != 0 || add_listener_errors(c, d)))
        return d;
    if (!ok)
        json_decref(arr);
    json_decref(d);
    return NULL;
}

static json_t *dump_routes(const wp_config *c, const char *ts)
{
    json_t *d = new_dump(&ROUTES);
    json_t *arr = json_array();
    json_t *list = static_list(c, "listeners");
    size_t n = static_count(c, "listeners");
    bool ok = d && arr;
    for (size_t i = 0; ok && i < n; i++) {
        /* every chain's connection manager, then the default chain's */
        json_t *l = json_array_get(list, i), *chains = json_object_get(l, "filter_chains");
        for (size_t k = 0; ok && k <= json_array_size(chains); k++) {
            json_t *chain = k < json_array_size(chains)
                                ? json_array_get(chains, k)
                                : json_object_get(l, "default_filter_chain");
            /* the connection manager is the chain's last (terminal) filter, after any
             * network RBAC filters */
            json_t *fs = json_object_get(chain, "filters");
            json_t *f = json_array_get(fs, json_array_size(fs) - 1);
            json_t *rc = json_object_get(json_object_get(f, "typed_config"), "route_config");
            if (rc)
                ok = add_elem(arr, "route_config", ROUTE_T, rc, ts);
        }
    }
    if (ok && set_list(d, "static_route_configs", arr) && add_dynamic(c, d, "routes"))
        return d;
    if (!ok)
        json_decref(arr);
    json_decref(d);
    return NULL;
}

static const char *health_name(wp_health h)
{
    static const char *const names[] = {"HEALTHY",  "HEALTHY", "UNHEALTHY",
                                        "DRAINING", "TIMEOUT", "DEGRADED"};
    return (unsigned)h < sizeof(names) / sizeof(names[0]) ? names[h] : "UNKNOWN";
}

/* One lb_endpoint as Envoy's dumpEndpointConfigs prints a host. */
static json_t *lb_endpoint(const wp_endpoint *e)
{
    char ip[64];
    const char *addr = e->hostname ? e->hostname : "";
    if (e->addr.len) { /* the printed IP without brackets and port */
        snprintf(ip, sizeof(ip), "%s", e->addr.text[0] == '[' ? e->addr.text + 1 : e->addr.text);
        char *colon = strrchr(ip, e->addr.text[0] == '[' ? ']' : ':');
        if (colon)
            *colon = '\0';
        addr = ip;
    }
    json_t *ep = json_pack("{s:{s:{s:s,s:I}},s:{}}", "address", "socket_address", "address", addr,
                           "port_value", (json_int_t)e->port, "health_check_config");
    if (ep && e->hostname && e->addr.len &&
        json_object_set_new(ep, "hostname", json_string(e->hostname)) != 0) {
        json_decref(ep);
        return NULL;
    }
    json_t *out = json_pack("{s:o,s:s,s:I}", "endpoint", ep, "health_status",
                            health_name(e->health), "load_balancing_weight", (json_int_t)e->weight);
    /* the host's metadata as kept: filter_metadata["envoy.transport_socket_match"] */
    if (out && e->tsm_metadata &&
        json_object_set_new(out, "metadata",
                            json_pack("{s:{s:O}}", "filter_metadata",
                                      "envoy.transport_socket_match", e->tsm_metadata)) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *cluster_load_assignment(const wp_cluster *cl)
{
    json_t *lbs = json_array();
    for (size_t i = 0; lbs && i < cl->nendpoints; i++) {
        json_t *e = lb_endpoint(&cl->endpoints[i]);
        if (!e || json_array_append_new(lbs, e) != 0) {
            json_decref(lbs);
            return NULL;
        }
    }
    json_t *cla = json_pack("{s:s,s:s}", "@type", CLA_T, "cluster_name", cl->name);
    if (cla && json_array_size(lbs) > 0 &&
        json_object_set_new(cla, "endpoints",
                            json_pack("[{s:{},s:O}]", "locality", "lb_endpoints", lbs)) != 0) {
        json_decref(cla);
        cla = NULL;
    }
    json_decref(lbs);
    if (cla && json_object_set_new(cla, "policy",
                                   json_pack("{s:i}", "overprovisioning_factor", 140)) != 0) {
        json_decref(cla);
        return NULL;
    }
    return cla;
}

static json_t *dump_endpoints(const wp_config *c)
{
    json_t *d = new_dump(&ENDPOINTS);
    json_t *arr = json_array();
    bool ok = d && arr;
    size_t n = c->from_xds ? c->n_static_clusters : c->nclusters;
    for (size_t i = 0; ok && i < n && i < c->nclusters; i++) {
        json_t *cla = cluster_load_assignment(&c->clusters[i]);
        json_t *e = cla ? json_pack("{s:o}", "endpoint_config", cla) : NULL;
        ok = e && json_array_append_new(arr, e) == 0;
    }
    if (ok && set_list(d, "static_endpoint_configs", arr) && add_dynamic(c, d, "endpoints"))
        return d;
    if (!ok)
        json_decref(arr);
    json_decref(d);
    return NULL;
}

typedef struct {
    json_t *d[6];
    const schema *s[6];
    size_t n;
} dumps;

static bool build(const wp_config *c, bool include_eds, const char *ts, json_t *secrets, dumps *out)
{
    out->n = 0;
    json_t *d;
#define ADD(expr, sch)                                                                             \
    do {                                                                                           \
        if (!(d = (expr)))                                                                         \
            return false;                                                                          \
        out->d[out->n] = d;                                                                        \
        out->s[out->n++] = (sch);                                                                  \
    } while (0)
    ADD(dump_bootstrap(c, ts), &BOOTSTRAP);
    ADD(dump_resources(c, &CLUSTERS, "clusters", "static_clusters", "cluster", CLUSTER_T, ts),
        &CLUSTERS);
    if (include_eds)
        ADD(dump_endpoints(c), &ENDPOINTS);
    ADD(dump_resources(c, &LISTENERS, "listeners", "static_listeners", "listener", LISTENER_T, ts),
        &LISTENERS);
    ADD(dump_routes(c, ts), &ROUTES);
    if (secrets)
        ADD(json_deep_copy(secrets), &SECRETS);
#undef ADD
    return true;
}

static void free_dumps(dumps *ds)
{
    for (size_t i = 0; i < ds->n; i++)
        json_decref(ds->d[i]);
    ds->n = 0;
}

/* ---------- field masks ---------- */

typedef struct {
    char *paths[64];
    size_t n;
} fmask;

static bool parse_mask(const char *mask, fmask *m)
{
    m->n = 0;
    const char *p = mask;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0) {
            if (m->n == 64 || !(m->paths[m->n] = strndup(p, len)))
                return false;
            m->n++;
        }
        p += len + (end ? 1 : 0);
    }
    return true;
}

static void free_mask(fmask *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->paths[i]);
    m->n = 0;
}

/* Kind of field name (len bytes) in a "name:kind ..." list, 0 when absent. */
static char field_kind(const char *fields, const char *name, size_t len)
{
    for (const char *p = fields; *p;) {
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        if ((size_t)(colon - p) == len && strncmp(p, name, len) == 0)
            return colon[1];
        p = colon + 2;
        while (*p == ' ')
            p++;
    }
    return 0;
}

static bool ident_path(const char *p)
{
    if (!*p)
        return false;
    for (; *p; p++) {
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' ||
              (*p == '.' && p[1] && p[1] != '.')))
            return false;
    }
    return true;
}

/* Is path valid for a message with these fields? any_ok: an Any field may be entered. */
static bool path_ok(const char *fields, const char *path, bool any_ok)
{
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    char kind = field_kind(fields, path, len);
    if (!kind)
        return false;
    if (!dot)
        return true;
    return (kind == 'm' || (kind == 'a' && any_ok)) && ident_path(dot + 1);
}

static bool mask_ok(const char *fields, const fmask *m, bool any_ok)
{
    for (size_t i = 0; i < m->n; i++) {
        if (!path_ok(fields, m->paths[i], any_ok))
            return false;
    }
    return true;
}

/* Copy of o keeping "@type" and the fields the mask covers (FieldMaskUtil::TrimMessage). */
static json_t *trim(json_t *o, const fmask *m, const char *prefix)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    size_t plen = strlen(prefix);
    json_object_foreach(o, k, v)
    {
        if (!out)
            break;
        bool whole = strcmp(k, "@type") == 0, deeper = false;
        size_t klen = strlen(k);
        for (size_t i = 0; i < m->n && !whole; i++) {
            const char *p = m->paths[i];
            if (strncmp(p, prefix, plen) != 0 || strncmp(p + plen, k, klen) != 0)
                continue;
            whole = p[plen + klen] == '\0';
            deeper = deeper || p[plen + klen] == '.';
        }
        json_t *keep = NULL;
        if (whole) {
            keep = json_deep_copy(v);
        } else if (deeper && json_is_object(v)) {
            char *sub = malloc(plen + klen + 2);
            if (sub) {
                snprintf(sub, plen + klen + 2, "%s%s.", prefix, k);
                keep = trim(v, m, sub);
                free(sub);
            }
        } else {
            continue;
        }
        if (!keep || json_object_set_new(out, k, keep) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---------- entry points ---------- */

static json_t *fail(wf_strbuf *err, int *status, int code, const char *msg)
{
    wf_strbuf_puts(err, msg);
    if (status)
        *status = code;
    return NULL;
}

static const elem_schema *elem_for(const char *field)
{
    for (size_t i = 0; i < sizeof(ELEMS) / sizeof(ELEMS[0]); i++) {
        if (strcmp(ELEMS[i].field, field) == 0)
            return &ELEMS[i];
    }
    return NULL;
}

static json_t *mask_error(const fmask *m, wf_strbuf *err, int *status)
{
    wf_strbuf msg = WF_STRBUF_INIT;
    wf_strbuf_puts(&msg, "FieldMask ");
    for (size_t i = 0; i < m->n; i++)
        wf_strbuf_printf(&msg, "paths: \"%s\"\n", m->paths[i]);
    wf_strbuf_puts(&msg, " could not be successfully used.");
    fail(err, status, 400, wf_strbuf_cstr(&msg));
    wf_strbuf_free(&msg);
    return NULL;
}

/* Elements of repeated field `resource` of dump d, each with its @type. */
static json_t *resource_configs(json_t *d, const char *resource, const fmask *m, wf_strbuf *err,
                                int *status)
{
    json_t *list = json_object_get(d, resource);
    const elem_schema *es = elem_for(resource);
    if (!es)
        list = NULL;
    if (json_array_size(list) && m->n && !mask_ok(es->elem_fields, m, true))
        return mask_error(m, err, status);
    json_t *configs = json_array();
    for (size_t i = 0; configs && i < json_array_size(list); i++) {
        json_t *e = typed(es->elem_type, json_array_get(list, i));
        if (e && m->n) {
            json_t *t = trim(e, m, "");
            json_decref(e);
            e = t;
        }
        if (!e || json_array_append_new(configs, e) != 0) {
            json_decref(configs);
            configs = NULL;
        }
    }
    return configs ? configs : fail(err, status, 500, "out of memory");
}

static json_t *by_resource(dumps *ds, const char *resource, const fmask *m, wf_strbuf *err,
                           int *status)
{
    for (size_t i = 0; i < ds->n; i++) {
        char kind = field_kind(ds->s[i]->fields, resource, strlen(resource));
        if (!kind)
            continue;
        if (kind != 'r') {
            wf_strbuf_printf(err, "%s is not a repeated field. Use ?mask=%s to get only this field",
                             resource, resource);
            return fail(err, status, 400, "");
        }
        return resource_configs(ds->d[i], resource, m, err, status);
    }
    wf_strbuf_printf(err, "%s not found in config dump", resource);
    return fail(err, status, 404, "");
}

static json_t *all_configs(dumps *ds, const char *mask, const fmask *m, wf_strbuf *err, int *status)
{
    json_t *configs = json_array();
    for (size_t i = 0; configs && i < ds->n; i++) {
        json_t *d = ds->d[i];
        if (m->n && !mask_ok(ds->s[i]->fields, m, false))
            continue; /* Envoy skips the dumps a mask does not fit */
        json_t *t = m->n ? trim(d, m, "") : json_incref(d);
        if (!t || json_array_append_new(configs, t) != 0) {
            json_decref(configs);
            return fail(err, status, 500, "out of memory");
        }
    }
    if (!configs)
        return fail(err, status, 500, "out of memory");
    if (mask && json_array_size(configs) == 0) {
        json_decref(configs);
        wf_strbuf_printf(err, "FieldMask %s could not be successfully applied to any configs.",
                         mask);
        return fail(err, status, 400, "");
    }
    return configs;
}

json_t *wp_config_dump_http(const wp_config *c, const char *resource, const char *mask,
                            bool include_eds, double last_updated_unix, wf_strbuf *err,
                            int *http_status)
{
    return wp_config_dump_secrets(c, NULL, resource, mask, include_eds, last_updated_unix, err,
                                  http_status);
}

json_t *wp_config_dump_secrets(const wp_config *c, json_t *secrets, const char *resource,
                               const char *mask, bool include_eds, double last_updated_unix,
                               wf_strbuf *err, int *http_status)
{
    char ts[40];
    dumps ds = {.n = 0};
    fmask m = {.n = 0};
    if (resource && !*resource)
        resource = NULL;
    if (mask && !*mask)
        mask = NULL;
    wf_timestamp_ms(last_updated_unix, ts, sizeof(ts));
    if (!build(c, include_eds, ts, secrets, &ds) || (mask && !parse_mask(mask, &m))) {
        free_dumps(&ds);
        free_mask(&m);
        return fail(err, http_status, 500, "out of memory");
    }
    json_t *configs = resource ? by_resource(&ds, resource, &m, err, http_status)
                               : all_configs(&ds, mask, &m, err, http_status);
    free_dumps(&ds);
    free_mask(&m);
    if (!configs)
        return NULL;
    json_t *out = json_object();
    if (!out || json_object_set_new(out, "configs", configs) != 0) {
        json_decref(out);
        return fail(err, http_status, 500, "out of memory");
    }
    if (http_status)
        *http_status = 200;
    return out;
}

json_t *wp_config_dump(const wp_config *c, const char *resource, const char *mask, bool include_eds,
                       double last_updated_unix, wf_strbuf *err)
{
    return wp_config_dump_http(c, resource, mask, include_eds, last_updated_unix, err, NULL);
}
