/*
 * generate.c - the resources of one proxy per xDS type (see generate.h): dispatch to cds, eds,
 * rds, lds, inbound and gateway, MeshConfig options, access logs, and the local-mesh addresses.
 * Follows Istio's ConfigGenerator per proxy type (pilot/pkg/networking/core: BuildClusters,
 * BuildListeners, BuildHTTPRoutes; pilot/pkg/xds/eds.go for named assignments) and
 * accesslog.go for the file access log.
 */
#include "pilot/generate.h"
#include "pilot/capture.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pilot/cds.h"
#include "pilot/generate_internal.h"
#include "pilot/nds.h"
#include "pilot/eds.h"
#include "pilot/gateway.h"
#include "pilot/inbound.h"
#include "pilot/jwt.h"
#include "pilot/lds.h"
#include "pilot/naming.h"
#include "pilot/rds.h"
#include "pilot/sds.h"
#include "pilot/sidecar_scope.h"
#include "xds/istio_log.h"

#define HCM_NAME       "envoy.filters.network.http_connection_manager"
#define FAL_NAME       "envoy.access_loggers.file"
#define TCP_PROXY_NAME "envoy.filters.network.tcp_proxy"
#define FAL_TYPE       "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"

typedef wf_gen gen;

/* ---------- setup ---------- */

static int labels_view(const json_t *labels, wf_kvs *out)
{
    size_t n = json_object_size(labels), i = 0;
    *out = (wf_kvs){0};
    if (n == 0)
        return 0;
    out->items = calloc(n, sizeof *out->items);
    if (!out->items)
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        if (json_is_string(v) && i < n)
            out->items[i++] = (wf_kv){.key = k, .value = json_string_value(v)};
    }
    out->n = i;
    return 0;
}

int wf_gen_init(gen *g, const wf_pilot_env *env, const wf_pilot_proxy *p)
{
    *g = (gen){.s = env->store,
               .mesh = env->mesh,
               .p = p,
               .jwks_resolve = env->jwks_resolve,
               .jwks_arg = env->jwks_arg};
    g->pod = p->pod && p->ns ? wf_store_find(env->store, WF_KIND_POD, p->ns, p->pod) : NULL;
    if (labels_view(p->labels, &g->labels) != 0)
        return -1;
    g->cds.proxy_ns = p->ns;
    g->cds.root_namespace = env->mesh ? wf_meshcfg_root_ns(env->mesh) : NULL;
    g->cds.trust_domain = env->mesh ? wf_meshcfg_str(env->mesh, "trustDomain") : NULL;
    const wf_node *am = env->mesh ? wf_meshcfg_get(env->mesh, "enableAutoMtls") : NULL;
    bool auto_mtls = true;
    g->cds.disable_auto_mtls = am && wf_node_bool(am, &auto_mtls) && !auto_mtls;
    const char *h2u = env->mesh ? wf_meshcfg_str(env->mesh, "h2UpgradePolicy") : NULL;
    g->cds.mesh_h2_upgrade = h2u && strcmp(h2u, "UPGRADE") == 0;
    g->cds.router = p->kind == WF_PROXY_ROUTER;
    const char *mode = env->mesh ? wf_meshcfg_str(env->mesh, "outboundTrafficPolicy.mode") : NULL;
    g->registry_only = mode && strcmp(mode, "REGISTRY_ONLY") == 0;
    if (p->kind == WF_PROXY_SIDECAR && p->ns && *p->ns &&
        wf_scope_build(env->store, p->ns, &g->labels, g->cds.root_namespace, &g->scope) != 0) {
        free(g->labels.items);
        return -1;
    }
    g->cds.scope = g->scope;
    int sc_mode = wf_scope_registry_only(g->scope); /* the Sidecar's policy overrides */
    if (sc_mode >= 0)
        g->registry_only = sc_mode == 1;
    const wf_node *rp = env->mesh ? wf_meshcfg_get(env->mesh, "defaultHttpRetryPolicy") : NULL;
    g->default_retries = rp && rp->type == WF_NODE_MAP ? rp : NULL;
    return 0;
}

static bool wanted(const wf_xds_names *names, const char *name)
{
    if (!names || names->n == 0)
        return true;
    for (size_t i = 0; i < names->n; i++)
        if (names->v[i] && name && strcmp(names->v[i], name) == 0)
            return true;
    return false;
}

/* Keep only the resources whose "name" (or "cluster_name") names asks for. */
json_t *wf_gen_filter_names(json_t *arr, const wf_xds_names *names)
{
    if (!arr || !names || names->n == 0)
        return arr;
    for (size_t i = 0; i < json_array_size(arr);) {
        json_t *r = json_array_get(arr, i);
        const char *n = json_string_value(json_object_get(r, "name"));
        if (wanted(names, n))
            i++;
        else if (json_array_remove(arr, i) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* Append every element of extra (released) to arr (released on failure). */
static json_t *append_all(json_t *arr, json_t *extra)
{
    if (!arr || !extra || json_array_extend(arr, extra) != 0) {
        json_decref(arr);
        arr = NULL;
    }
    json_decref(extra);
    return arr;
}

/* ---------- CDS, EDS ---------- */

json_t *wf_gen_outbound_clusters(const gen *g)
{
    return wf_cds_sidecar_clusters(g->s, &g->cds);
}

static json_t *clusters(const gen *g)
{
    json_t *out = wf_gen_outbound_clusters(g);
    if (!out)
        return NULL;
    if (g->p->kind == WF_PROXY_SIDECAR)
        return append_all(out, wf_gen_inbound(g, false));
    for (size_t i = 0; i < json_array_size(out); i++) { /* gateways: no PassthroughCluster */
        const char *n = json_string_value(json_object_get(json_array_get(out, i), "name"));
        if (n && !strcmp(n, WF_CLUSTER_PASSTHROUGH) && json_array_remove(out, i) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *wf_gen_endpoints(const gen *g, const wf_xds_names *names, json_t *memo)
{
    if (!names || names->n == 0)
        return wf_eds_sidecar_assignments(g->s, &g->cds);
    json_t *out = json_array();
    for (size_t i = 0; out && i < names->n; i++)
        if (json_array_append_new(
                out, wf_eds_load_assignment_memo(g->s, names->v[i], &g->cds, memo)) != 0) {
            json_decref(out);
            out = NULL;
        }
    return out;
}

/* ---------- LDS, RDS ---------- */

/* RequestAuthentication's jwt_authn filter for the proxy's workload, in every HTTP connection
 * manager of listeners after istio.metadata_exchange (pilot/jwt.h). 0, -1 on OOM. */
static int add_reqauthn(const gen *g, json_t *listeners)
{
    const wf_reqauthn_options ra = {.ns = g->p->ns,
                                    .labels = &g->labels,
                                    .root_ns = g->mesh ? wf_meshcfg_root_ns(g->mesh) : NULL,
                                    .gateway = g->p->kind == WF_PROXY_ROUTER,
                                    .resolve = g->jwks_resolve,
                                    .resolve_arg = g->jwks_arg};
    int rc = 0;
    json_t *jwt = wf_reqauthn_filter(g->s, &ra, &rc);
    if (rc == 0)
        rc = wf_reqauthn_insert(listeners, jwt);
    json_decref(jwt);
    return rc;
}

json_t *wf_gen_inbound(const gen *g, bool listeners)
{
    const wf_inbound_options o = {.ns = g->p->ns,
                                  .labels = &g->labels,
                                  .pod = g->pod,
                                  /* captured: Istio's chain names "0.0.0.0_<port>" */
                                  .bind = g->p->captured ? NULL : g->p->ip,
                                  .app_address = g->p->localhost,
                                  .mesh = g->mesh,
                                  .capture = g->p->captured};
    if (!listeners) {
        json_t *cl = wf_inbound_clusters(g->s, &o);
        if (cl && g->p->captured && wf_capture_inbound_clusters(cl) != 0) {
            json_decref(cl);
            return NULL;
        }
        return cl;
    }
    json_t *out = wf_inbound_listeners(g->s, &o);
    if (out && add_reqauthn(g, out) != 0) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

static wf_gateway_options gateway_options(const gen *g)
{
    return (wf_gateway_options){.proxy_ns = g->p->ns,
                                .proxy_labels = &g->labels,
                                .pod = g->pod,
                                .bind = g->p->ip,
                                .default_retries = g->default_retries,
                                .mesh = g->mesh};
}

/* Outbound listeners whose name an inbound listener took (a pod without a known IP binds
 * inbound on 0.0.0.0 too) give way to it. */
json_t *wf_gen_merge_listeners(json_t *out, json_t *in)
{
    if (!out || !in) {
        json_decref(out);
        json_decref(in);
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(out);) {
        const char *n = json_string_value(json_object_get(json_array_get(out, i), "name"));
        bool taken = false;
        for (size_t j = 0; j < json_array_size(in) && !taken; j++)
            taken = !strcmp(n, json_string_value(json_object_get(json_array_get(in, j), "name")));
        if (!taken)
            i++;
        else if (json_array_remove(out, i) != 0) {
            json_decref(in);
            json_decref(out);
            return NULL;
        }
    }
    return append_all(out, in);
}

json_t *wf_gen_sidecar_route_configs(const gen *g)
{
    const wf_rds_options o = {.proxy_ns = g->p->ns,
                              .proxy_labels = &g->labels,
                              .registry_only = g->registry_only,
                              .default_retries = g->default_retries,
                              .scope = g->scope};
    return wf_rds_sidecar_route_configs(g->s, &o);
}

static json_t *route_configs(const gen *g, const wf_xds_names *names)
{
    if (g->p->kind == WF_PROXY_ROUTER) {
        const wf_gateway_options o = gateway_options(g);
        return wf_gen_filter_names(wf_gateway_route_configs(g->s, &o), names);
    }
    return wf_gen_filter_names(wf_gen_sidecar_route_configs(g), names);
}

/* ---------- access logs (Istio's pilot/pkg/networking/core/accesslog.go) ---------- */

/* The custom JSON format as an object, NULL when there is none or it is not a JSON object
 * (why, when given, gets the reason). */
static json_t *custom_json_format(const char *custom, char *why, size_t cap)
{
    json_error_t e;
    json_t *f = custom && *custom ? json_loads(custom, 0, &e) : NULL;
    if (json_is_object(f))
        return f;
    if (why && custom && *custom)
        snprintf(why, cap, "%s", f ? "not a JSON object" : e.text);
    json_decref(f);
    return NULL;
}

int wf_gen_log_format_error(const wf_meshcfg *mesh, char *why, size_t cap)
{
    const char *file = mesh ? wf_meshcfg_str(mesh, "accessLogFile") : NULL;
    const char *enc = mesh ? wf_meshcfg_str(mesh, "accessLogEncoding") : NULL;
    const char *fmt = mesh ? wf_meshcfg_str(mesh, "accessLogFormat") : NULL;
    if (!file || !*file || !enc || strcmp(enc, "JSON") != 0 || !fmt || !*fmt)
        return 0;
    json_t *f = custom_json_format(fmt, why, cap);
    json_decref(f);
    return f ? 0 : 1;
}

static json_t *json_log_format(const char *custom)
{
    json_t *f = custom_json_format(custom, NULL, 0);
    if (f)
        return json_pack("{s:o}", "json_format", f);
    /* unparsable: Istio falls back to the default map (wf_gen_log_format_error says why) */
    f = wf_istio_json_format();
    return f ? json_pack("{s:o}", "json_format", f) : NULL;
}

static json_t *text_log_format(const char *custom)
{
    if (!custom || !*custom)
        return json_pack("{s:{s:s}}", "text_format_source", "inline_string", WF_ISTIO_TEXT_FORMAT);
    size_t n = strlen(custom);
    return json_pack("{s:{s:s+}}", "text_format_source", "inline_string", custom,
                     custom[n - 1] == '\n' ? "" : "\n");
}

/* The access_log list every HCM gets, NULL when MeshConfig accessLogFile is empty (or OOM:
 * *oom set). */
static json_t *access_log(const wf_meshcfg *mesh, bool *oom)
{
    const char *file = mesh ? wf_meshcfg_str(mesh, "accessLogFile") : NULL;
    *oom = false;
    if (!file || !*file)
        return NULL;
    const char *enc = wf_meshcfg_str(mesh, "accessLogEncoding");
    const char *fmt = wf_meshcfg_str(mesh, "accessLogFormat");
    json_t *lf = enc && !strcmp(enc, "JSON") ? json_log_format(fmt) : text_log_format(fmt);
    json_t *al = json_pack("[{s:s,s:{s:s,s:s,s:o}}]", "name", FAL_NAME, "typed_config", "@type",
                           FAL_TYPE, "path", file, "log_format", lf);
    *oom = al == NULL;
    return al;
}

/* Istio's listener access log (accesslog.go buildListenerFileAccessLog): the HCM's file log
 * with addNoRouteAccessLogFilter's {"response_flag_filter": {"flags": ["NR"]}}; NULL when
 * accessLogFile is empty or disableEnvoyListenerLog is true (setListenerAccessLog). */
static bool listener_log_disabled(const wf_meshcfg *mesh)
{
    const wf_node *off = mesh ? wf_meshcfg_get(mesh, "disableEnvoyListenerLog") : NULL;
    bool disabled = false;
    return off && wf_node_bool(off, &disabled) && disabled;
}

static json_t *listener_access_log(const wf_meshcfg *mesh, const json_t *al)
{
    if (!al || listener_log_disabled(mesh))
        return NULL;
    json_t *lal = json_deep_copy(al);
    json_t *flt = json_pack("{s:{s:[s]}}", "response_flag_filter", "flags", "NR");
    if (!lal || !flt || json_object_set_new(json_array_get(lal, 0), "filter", flt) != 0) {
        json_decref(lal);
        return NULL;
    }
    return lal;
}

/* The access log al on the HCM or tcp_proxy of chain fc. */
static int log_chain(json_t *fc, const json_t *al)
{
    size_t k;
    json_t *f;
    int rc = 0;
    json_array_foreach(json_object_get(fc, "filters"), k, f)
    {
        const char *n = json_string_value(json_object_get(f, "name"));
        json_t *tc = json_object_get(f, "typed_config");
        if (rc == 0 && n && (!strcmp(n, HCM_NAME) || !strcmp(n, TCP_PROXY_NAME)) &&
            json_is_object(tc))
            rc = json_object_set_new(tc, "access_log", json_deep_copy(al));
    }
    return rc;
}

int wf_gen_access_logs(json_t *listeners, const wf_meshcfg *mesh)
{
    bool oom = false;
    json_t *al = access_log(mesh, &oom);
    json_t *lal = listener_access_log(mesh, al);
    size_t i, j;
    json_t *l, *fc;
    int rc = oom || (al && !lal && !listener_log_disabled(mesh)) ? -1 : 0;
    json_array_foreach(listeners, i, l)
    {
        if (lal && rc == 0)
            rc = json_object_set_new(l, "access_log", json_deep_copy(lal));
        json_array_foreach(json_object_get(l, "filter_chains"), j, fc)
        {
            if (al && rc == 0)
                rc = log_chain(fc, al);
        }
        fc = json_object_get(l, "default_filter_chain"); /* sniffed listeners (pilot/sniff.h) */
        if (al && rc == 0 && fc)
            rc = log_chain(fc, al);
    }
    json_decref(al);
    json_decref(lal);
    return rc;
}

/* A sniffed HCM chain of an HTTP/1.0 proxy also matches the inspector's "http/1.0", first
 * (protocols.md §1.2; Istio's plaintextHTTPALPNs with PILOT_HTTP10). */
static int alpn_http10(json_t *fc)
{
    json_t *a = json_object_get(json_object_get(fc, "filter_chain_match"), "application_protocols");
    bool h11 = false, h10 = false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *v = json_string_value(json_array_get(a, i));
        h11 = h11 || (v && !strcmp(v, "http/1.1"));
        h10 = h10 || (v && !strcmp(v, "http/1.0"));
    }
    return h11 && !h10 ? json_array_insert_new(a, 0, json_string("http/1.0")) : 0;
}

json_t *wf_gen_accept_http10(json_t *listeners)
{
    json_t *out = listeners ? json_deep_copy(listeners) : NULL; /* parts may be shared */
    json_decref(listeners);
    size_t i, j, k;
    json_t *l, *fc, *f;
    json_array_foreach(out, i, l)
    {
        json_array_foreach(json_object_get(l, "filter_chains"), j, fc)
        {
            if (alpn_http10(fc) != 0) {
                json_decref(out);
                return NULL;
            }
            json_array_foreach(json_object_get(fc, "filters"), k, f)
            {
                const char *n = json_string_value(json_object_get(f, "name"));
                json_t *tc = json_object_get(f, "typed_config");
                if (n && !strcmp(n, HCM_NAME) && json_is_object(tc) &&
                    json_object_set_new(tc, "http_protocol_options",
                                        json_pack("{s:b}", "accept_http_10", 1)) != 0) {
                    json_decref(out);
                    return NULL;
                }
            }
        }
    }
    return out;
}

json_t *wf_gen_outbound_listeners(const gen *g, const char *bind)
{
    const wf_lds_options o = {.bind = bind,
                              .per_vip = g->p->captured && !bind,
                              .auto_allocate = g->p->dns_auto_allocate,
                              .proxy_ns = g->p->ns,
                              .scope = g->scope,
                              .proxy_labels = &g->labels,
                              .root_ns = g->cds.root_namespace,
                              .mesh = g->mesh,
                              .registry_only = g->registry_only};
    return wf_lds_sidecar_outbound_listeners_opt(g->s, &o);
}

/* Istio's listener builder (pilot/pkg/networking/core/listener_builder.go,
 * buildHTTPConnectionManager): MeshConfig pathNormalization.normalization sets three HCM
 * fields, path_with_escaped_slashes_action KEEP_UNCHANGED unless said otherwise:
 *   NONE                      normalize_path false
 *   BASE, DEFAULT (or unset)  normalize_path true
 *   MERGE_SLASHES             normalize_path true, merge_slashes true
 *   DECODE_AND_MERGE_SLASHES  normalize_path true, merge_slashes true,
 *                             path_with_escaped_slashes_action UNESCAPE_AND_FORWARD
 * (an unknown value is refused when the MeshConfig is loaded, source_build.c). */
static json_t *path_normalization(const wf_meshcfg *mesh)
{
    const char *v = mesh ? wf_meshcfg_str(mesh, "pathNormalization.normalization") : NULL;
    bool none = v && !strcmp(v, "NONE");
    bool merge = v && (!strcmp(v, "MERGE_SLASHES") || !strcmp(v, "DECODE_AND_MERGE_SLASHES"));
    bool decode = v && !strcmp(v, "DECODE_AND_MERGE_SLASHES");
    json_t *o = json_pack("{s:b,s:s}", "normalize_path", !none, "path_with_escaped_slashes_action",
                          decode ? "UNESCAPE_AND_FORWARD" : "KEEP_UNCHANGED");
    if (o && merge && json_object_set_new(o, "merge_slashes", json_true()) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int wf_gen_path_normalization(json_t *listeners, const wf_meshcfg *mesh)
{
    json_t *opts = path_normalization(mesh), *l, *fc, *f;
    size_t i, j, k;
    int rc = opts ? 0 : -1;
    json_array_foreach(listeners, i, l)
    {
        json_array_foreach(json_object_get(l, "filter_chains"), j, fc)
        {
            json_array_foreach(json_object_get(fc, "filters"), k, f)
            {
                const char *n = json_string_value(json_object_get(f, "name"));
                json_t *tc = json_object_get(f, "typed_config");
                if (rc == 0 && n && !strcmp(n, HCM_NAME) && json_is_object(tc))
                    rc = json_object_update(tc, opts);
            }
        }
    }
    json_decref(opts);
    return rc;
}

json_t *wf_gen_capture_listeners(json_t *outbound, json_t *inbound, const gen *g)
{
    json_t *out = outbound && inbound ? wf_capture_listeners(outbound, inbound) : NULL;
    json_t *vo = out ? wf_capture_virtual_outbound(g->registry_only) : NULL;
    json_decref(outbound);
    json_decref(inbound);
    if (!vo || json_array_insert_new(out, 0, vo) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *listeners(const gen *g)
{
    json_t *out;
    if (g->p->kind == WF_PROXY_ROUTER) {
        const wf_gateway_options o = gateway_options(g);
        out = wf_gateway_listeners(g->s, &o);
        if (out && add_reqauthn(g, out) != 0) {
            json_decref(out);
            out = NULL;
        }
    } else if (g->p->captured) {
        out = wf_gen_capture_listeners(wf_gen_outbound_listeners(g, NULL), wf_gen_inbound(g, true),
                                       g);
    } else {
        out = wf_gen_merge_listeners(wf_gen_outbound_listeners(g, g->p->localhost),
                                     wf_gen_inbound(g, true));
    }
    if (out &&
        (wf_gen_access_logs(out, g->mesh) != 0 || wf_gen_path_normalization(out, g->mesh) != 0)) {
        json_decref(out);
        return NULL;
    }
    return g->p->http10 ? wf_gen_accept_http10(out) : out;
}

json_t *wf_pilot_generate(const wf_pilot_env *env, const wf_pilot_proxy *p, wf_xds_type t,
                          const wf_xds_names *names)
{
    gen g;
    if (!env || !env->store || !p || wf_gen_init(&g, env, p) != 0)
        return NULL;
    json_t *out;
    switch (t) {
    case WF_XDS_CDS:
        out = clusters(&g);
        break;
    case WF_XDS_LDS:
        out = listeners(&g);
        break;
    case WF_XDS_RDS:
        out = route_configs(&g, names);
        break;
    case WF_XDS_EDS:
        out = wf_gen_endpoints(&g, names, NULL);
        break;
    case WF_XDS_SDS: /* quiet: the ADS server calls pilot/sds.h itself to log and count */
        out = wf_pilot_sds_secrets(g.s, p->id, p->ns, names, (int64_t)time(NULL), NULL);
        break;
    case WF_XDS_NDS:
        out = wf_nds_generate(g.s, p, g.scope);
        break;
    default:
        out = json_array();
        break;
    }
    wf_gen_fini(&g);
    return out;
}

void wf_gen_fini(gen *g)
{
    free(g->labels.items);
    wf_scope_free(g->scope);
    *g = (gen){0};
}
