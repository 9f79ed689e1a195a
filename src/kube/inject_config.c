/*
 * inject_config.c - the injector's config (kube/inject.h): Istio's ConfigMap
 * `istio-sidecar-injector` (pkg/kube/inject/inject.go Config: policy, alwaysInjectSelector,
 * neverInjectSelector, injectedAnnotations, defaultTemplates, templates, aliases; the `values`
 * JSON of the istio-discovery chart) and the mesh config, with the chart's defaults
 * (manifests/charts/istio-control/istio-discovery/values.yaml) except the image: weft's
 * `localhost/weft/weft:<weft's version>`.
 *
 * Fields weft does not implement are collected as messages (wf_inject_config_unimplemented),
 * never silently ignored: custom `templates`, `aliases`, a `defaultTemplates` other than
 * [sidecar], and the values under global/sidecarInjectorWebhook/pilot.cni/istio_cni that the
 * default template reads and weft does not (set to anything but their default/false/empty).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/arena.h"
#include "core/json_util.h"
#include "kube/inject_internal.h"
#include "model/node.h"
#include "model/node_json.h"
#include "model/parse.h"
#include "model/unimplemented.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.0.0"
#endif

/* The chart's values the default template reads (Istio's defaults; weft's image). */
static const char DEFAULT_VALUES[] =
    "{\"global\":{\"hub\":\"localhost/weft\",\"tag\":\"" WEFT_VERSION "\","
    "\"imagePullPolicy\":\"\",\"imagePullSecrets\":[],\"istioNamespace\":\"istio-system\","
    "\"pilotCertProvider\":\"istiod\",\"caAddress\":\"\",\"meshID\":\"\",\"network\":\"\","
    "\"logAsJson\":false,\"logging\":{\"level\":\"default:info\"},"
    "\"multiCluster\":{\"clusterName\":\"\"},"
    "\"proxy\":{\"image\":\"weft\",\"clusterDomain\":\"cluster.local\",\"logLevel\":\"warning\","
    "\"componentLogLevel\":\"misc:error\",\"statusPort\":15020,\"includeIPRanges\":\"*\","
    "\"excludeIPRanges\":\"\",\"includeInboundPorts\":\"*\",\"excludeInboundPorts\":\"\","
    "\"includeOutboundPorts\":\"\",\"excludeOutboundPorts\":\"\",\"privileged\":false,"
    "\"readinessInitialDelaySeconds\":0,\"readinessPeriodSeconds\":15,"
    "\"readinessFailureThreshold\":4,\"startupProbe\":{\"enabled\":true,\"failureThreshold\":600},"
    "\"holdApplicationUntilProxyStarts\":false,\"enableCoreDump\":false,"
    "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},"
    "\"limits\":{\"cpu\":\"2000m\",\"memory\":\"1024Mi\"}}},"
    "\"proxy_init\":{\"image\":\"weft\"}},"
    "\"sidecarInjectorWebhook\":{\"rewriteAppHTTPProbe\":true},"
    "\"revision\":\"\",\"pilot\":{\"cni\":{\"enabled\":false}},\"istio_cni\":{\"enabled\":false}}";

/* The values weft's injector reads (the rest of global/sidecarInjectorWebhook is reported
 * when set). */
static const char *const IMPLEMENTED_VALUES[] = {"global.hub",
                                                 "global.tag",
                                                 "global.imagePullPolicy",
                                                 "global.imagePullSecrets",
                                                 "global.istioNamespace",
                                                 "global.pilotCertProvider",
                                                 "global.caAddress",
                                                 "global.meshID",
                                                 "global.network",
                                                 "global.logAsJson",
                                                 "global.logging.level",
                                                 "global.multiCluster.clusterName",
                                                 "global.proxy.image",
                                                 "global.proxy.clusterDomain",
                                                 "global.proxy.logLevel",
                                                 "global.proxy.componentLogLevel",
                                                 "global.proxy.statusPort",
                                                 "global.proxy.includeIPRanges",
                                                 "global.proxy.excludeIPRanges",
                                                 "global.proxy.includeInboundPorts",
                                                 "global.proxy.excludeInboundPorts",
                                                 "global.proxy.includeOutboundPorts",
                                                 "global.proxy.excludeOutboundPorts",
                                                 "global.proxy.privileged",
                                                 "global.proxy.readinessInitialDelaySeconds",
                                                 "global.proxy.readinessPeriodSeconds",
                                                 "global.proxy.readinessFailureThreshold",
                                                 "global.proxy.startupProbe.enabled",
                                                 "global.proxy.startupProbe.failureThreshold",
                                                 "global.proxy.holdApplicationUntilProxyStarts",
                                                 "global.proxy.resources",
                                                 "global.proxy_init.image",
                                                 "global.trustDomain",
                                                 "global.sds.token.aud",
                                                 "sidecarInjectorWebhook.rewriteAppHTTPProbe",
                                                 "sidecarInjectorWebhook.injectedAnnotations",
                                                 "sidecarInjectorWebhook.enableNamespacesByDefault",
                                                 "sidecarInjectorWebhook.reinvocationPolicy",
                                                 "sidecarInjectorWebhook.neverInjectSelector",
                                                 "sidecarInjectorWebhook.alwaysInjectSelector",
                                                 "sidecarInjectorWebhook.defaultTemplates",
                                                 "pilot.cni.enabled",
                                                 "istio_cni.enabled",
                                                 "pilot.env.ENABLE_NATIVE_SIDECARS",
                                                 NULL};

void wf_inj_warn(json_t *warnings, const char *fmt, ...)
{
    if (!warnings)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(warnings, json_string(buf));
}

/* ---- values ------------------------------------------------------------------------------ */

const json_t *wf_inj_value(const wf_inject_config *c, const char *path)
{
    const json_t *v = c->values;
    char key[128];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        v = json_object_get(v, key);
        path += n + (path[n] == '.');
    }
    return v;
}

const char *wf_inj_value_str(const wf_inject_config *c, const char *path, const char *def)
{
    const char *s = json_string_value(wf_inj_value(c, path));
    return s ? s : def;
}

bool wf_inj_value_bool(const wf_inject_config *c, const char *path, bool def)
{
    const json_t *v = wf_inj_value(c, path);
    if (json_is_boolean(v))
        return json_is_true(v);
    if (json_is_string(v))
        return strcmp(json_string_value(v), "true") == 0;
    return def;
}

json_int_t wf_inj_value_int(const wf_inject_config *c, const char *path, json_int_t def)
{
    const json_t *v = wf_inj_value(c, path);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v) && *json_string_value(v))
        return strtoll(json_string_value(v), NULL, 10);
    return def;
}

static bool implemented_value(const char *path)
{
    for (size_t i = 0; IMPLEMENTED_VALUES[i]; i++)
        if (strcmp(IMPLEMENTED_VALUES[i], path) == 0)
            return true;
    return false;
}

static bool truthy(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return *json_string_value(v) != '\0';
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0;
    case JSON_TRUE:
        return true;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    default:
        return false;
    }
}

/* Reports the leaves under v (at path) that weft does not read and that are set. */
static void scan_values(json_t *out, const char *file, const char *path, const json_t *v)
{
    if (implemented_value(path))
        return;
    if (json_is_object(v) && json_object_size(v)) {
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)v, k, e)
        {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.%s", path, k);
            scan_values(out, file, sub, e);
        }
        return;
    }
    if (truthy(v))
        wf_inj_warn(out, "%s: %s: not implemented by weft's injector (ignored)", file, path);
}

static void unimplemented_values(wf_inject_config *c, const char *file, const json_t *values)
{
    static const char *const roots[] = {"global", "sidecarInjectorWebhook", "pilot", "istio_cni"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        const json_t *v = json_object_get(values, roots[i]);
        if (strcmp(roots[i], "pilot") == 0) /* only what the template reads from pilot */
            v = json_object_get(v, "cni");
        if (v)
            scan_values(c->unimplemented, file,
                        strcmp(roots[i], "pilot") == 0 ? "pilot.cni" : roots[i], v);
    }
    if (wf_inj_value_bool(c, "pilot.cni.enabled", false) ||
        wf_inj_value_bool(c, "istio_cni.enabled", false))
        wf_inj_warn(c->unimplemented,
                    "%s: pilot.cni.enabled: the Istio CNI plugin is not implemented: weft injects "
                    "the istio-init container (REDIRECT) instead of istio-validation",
                    file);
}

/* ---- files ------------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len, wf_strbuf *why)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        wf_strbuf_printf(why, "%s: %s", path, strerror(errno));
        return NULL;
    }
    wf_strbuf b = WF_STRBUF_INIT;
    int rc = wf_strbuf_read_stream(&b, f);
    fclose(f);
    if (rc != 0) {
        wf_strbuf_printf(why, "%s: cannot read", path);
        wf_strbuf_free(&b);
        return NULL;
    }
    *len = b.len;
    wf_strbuf_puts(&b, "");
    return wf_strbuf_take(&b);
}

static int first_doc(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    (void)line;
    (void)col;
    wf_node **out = arg;
    if (!*out)
        *out = root;
    return 0;
}

/* Parses a YAML (or JSON) file's first document into *root (arena a). */
static int parse_yaml_file(wf_arena *a, const char *path, wf_node **root, wf_strbuf *why)
{
    size_t len = 0;
    char *text = read_file(path, &len, why);
    if (!text)
        return -1;
    wf_parse_error e = {0};
    *root = NULL;
    int rc = wf_parse_yaml(a, text, len, first_doc, root, &e);
    free(text);
    if (rc != 0) {
        if (rc > 0)
            wf_strbuf_printf(why, "%s:%u:%u: %s", path, e.line, e.col, e.message);
        else
            wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    return 0;
}

static int field_error(wf_strbuf *why, const char *file, const wf_node *n, const char *field,
                       const char *problem)
{
    wf_strbuf_printf(why, "%s:%u: %s: %s", file, n ? wf_node_report_line(n) : 0, field, problem);
    return -1;
}

static int check_selectors(const char *file, const wf_node *n, const char *field, wf_strbuf *why)
{
    if (n->type == WF_NODE_NULL)
        return 0;
    if (n->type != WF_NODE_SEQ)
        return field_error(why, file, n, field, "want a list of label selectors");
    for (size_t i = 0; i < wf_seq_len(n); i++) {
        const wf_node *s = wf_seq_at(n, i);
        if (s->type != WF_NODE_MAP)
            return field_error(why, file, s, field,
                               "want a label selector (matchLabels, "
                               "matchExpressions)");
        for (size_t k = 0; k < s->len; k++) {
            const char *key = s->u.entries[k].key;
            if (strcmp(key, "matchLabels") != 0 && strcmp(key, "matchExpressions") != 0) {
                char f[128];
                snprintf(f, sizeof f, "%s[%zu].%s", field, i, key);
                return field_error(why, file, s->u.entries[k].value, f,
                                   "unknown field (want matchLabels or matchExpressions)");
            }
        }
    }
    return 0;
}

static json_t *to_json_or_empty(const wf_node *n, bool array)
{
    if (!n || n->type == WF_NODE_NULL)
        return array ? json_array() : json_object();
    return wf_node_to_json(n);
}

static int cfg_policy(wf_inject_config *c, const char *file, const wf_node *v, wf_strbuf *why)
{
    const char *p = wf_node_str(v);
    if (!p || (strcmp(p, "enabled") != 0 && strcmp(p, "disabled") != 0))
        return field_error(why, file, v, "policy", "want enabled or disabled");
    c->policy_enabled = strcmp(p, "enabled") == 0;
    return 0;
}

static int cfg_selectors(wf_inject_config *c, const char *file, const char *k, const wf_node *v,
                         wf_strbuf *why)
{
    if (check_selectors(file, v, k, why) != 0)
        return -1;
    json_t **dst = k[0] == 'a' ? &c->always : &c->never;
    json_decref(*dst);
    *dst = to_json_or_empty(v, true);
    return *dst ? 0 : -1;
}

/* injectedAnnotations: a map of strings (whatever YAML typed the scalars). */
static int cfg_annotations(wf_inject_config *c, const char *file, const char *k, const wf_node *v,
                           wf_strbuf *why)
{
    if (v->type != WF_NODE_MAP && v->type != WF_NODE_NULL)
        return field_error(why, file, v, k, "want a map of annotations");
    json_t *o = json_object();
    for (size_t j = 0; o && v->type == WF_NODE_MAP && j < v->len; j++) {
        const char *val = wf_node_str(v->u.entries[j].value);
        if (!val) {
            json_decref(o);
            return field_error(why, file, v->u.entries[j].value, k, "want string values");
        }
        if (json_object_set_new(o, v->u.entries[j].key, json_string(val)) != 0)
            json_decref(o), o = NULL;
    }
    json_decref(c->injected_annotations);
    c->injected_annotations = o;
    return o ? 0 : -1;
}

static int cfg_default_templates(wf_inject_config *c, const char *file, uint32_t line,
                                 const wf_node *v, wf_strbuf *why)
{
    if (v->type != WF_NODE_SEQ && v->type != WF_NODE_NULL)
        return field_error(why, file, v, "defaultTemplates", "want a list of template names");
    bool only_sidecar =
        v->type == WF_NODE_NULL || (wf_seq_len(v) == 1 && wf_node_str(wf_seq_at(v, 0)) &&
                                    strcmp(wf_node_str(wf_seq_at(v, 0)), "sidecar") == 0);
    if (!only_sidecar)
        wf_inj_warn(c->unimplemented,
                    "%s:%u: defaultTemplates: only the built-in \"sidecar\" template is "
                    "implemented (the others are ignored)",
                    file, line);
    return 0;
}

static int cfg_field(wf_inject_config *c, const char *file, const wf_map_entry *e, wf_strbuf *why)
{
    const char *k = e->key;
    if (strcmp(k, "policy") == 0)
        return cfg_policy(c, file, e->value, why);
    if (strcmp(k, "alwaysInjectSelector") == 0 || strcmp(k, "neverInjectSelector") == 0)
        return cfg_selectors(c, file, k, e->value, why);
    if (strcmp(k, "injectedAnnotations") == 0)
        return cfg_annotations(c, file, k, e->value, why);
    if (strcmp(k, "defaultTemplates") == 0)
        return cfg_default_templates(c, file, e->key_line, e->value, why);
    if (strcmp(k, "templates") == 0 || strcmp(k, "template") == 0 || strcmp(k, "aliases") == 0)
        wf_inj_warn(c->unimplemented,
                    "%s:%u: %s: custom injection templates (Go templates) are not "
                    "implemented: weft injects its built-in equivalent of Istio's default "
                    "\"sidecar\" template",
                    file, e->key_line, k);
    else
        wf_inj_warn(c->unimplemented, "%s:%u: %s: not implemented by weft's injector (ignored)",
                    file, e->key_line, k);
    return 0;
}

static int load_config(wf_inject_config *c, const char *file, wf_strbuf *why)
{
    wf_arena a;
    wf_arena_init(&a);
    wf_node *root = NULL;
    int rc = parse_yaml_file(&a, file, &root, why);
    if (rc == 0 && root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL)
        rc = field_error(why, file, root, "config", "want a mapping");
    for (size_t i = 0; rc == 0 && root && root->type == WF_NODE_MAP && i < root->len; i++)
        rc = cfg_field(c, file, &root->u.entries[i], why);
    if (rc != 0 && why->len == 0)
        wf_strbuf_puts(why, "out of memory");
    wf_arena_destroy(&a);
    return rc;
}

static int load_values(wf_inject_config *c, const char *file, wf_strbuf *why)
{
    wf_arena a;
    wf_arena_init(&a);
    wf_node *root = NULL;
    int rc = parse_yaml_file(&a, file, &root, why);
    if (rc == 0 && root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL)
        rc = field_error(why, file, root, "values", "want an object");
    json_t *v = rc == 0 && root && root->type == WF_NODE_MAP ? wf_node_to_json(root) : NULL;
    if (rc == 0 && root && root->type == WF_NODE_MAP && !v) {
        wf_strbuf_puts(why, "out of memory");
        rc = -1;
    }
    if (rc == 0 && v) {
        const wf_node *g = wf_map_get(root, "global");
        if (g && g->type != WF_NODE_MAP)
            rc = field_error(why, file, g, "global", "want an object");
        const wf_node *hub = wf_node_path(root, "global.hub");
        if (rc == 0 && hub && !wf_node_str(hub))
            rc = field_error(why, file, hub, "global.hub", "want a string");
        const wf_node *tag = wf_node_path(root, "global.tag");
        if (rc == 0 && tag && tag->type != WF_NODE_SCALAR)
            rc = field_error(why, file, tag, "global.tag", "want a string");
    }
    if (rc == 0 && v) {
        /* a numeric tag (1.22) is a string to the template */
        json_t *g = json_object_get(v, "global");
        json_t *tag = json_object_get(g, "tag");
        if (tag && !json_is_string(tag)) {
            const wf_node *tn = wf_node_path(root, "global.tag");
            json_object_set_new(g, "tag", json_string(wf_node_str(tn) ? wf_node_str(tn) : ""));
        }
        rc = wf_json_overlay(c->values, v);
        if (rc == 0)
            unimplemented_values(c, file, v);
        else
            wf_strbuf_puts(why, "out of memory");
    }
    json_decref(v);
    wf_arena_destroy(&a);
    return rc;
}

typedef struct unimpl_arg {
    json_t *out;
    const char *file, *prefix;
} unimpl_arg;

static bool unimpl_cb(const wf_unimpl_hit *hit, void *arg)
{
    const unimpl_arg *u = arg;
    wf_strbuf b = WF_STRBUF_INIT;
    wf_unimpl_message(hit, &b);
    if (!wf_strbuf_failed(&b))
        wf_inj_warn(u->out, "%s: %s%s", u->file, u->prefix, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return true;
}

static int load_mesh(wf_inject_config *c, const char *file, wf_strbuf *why)
{
    wf_arena a;
    wf_arena_init(&a);
    wf_node *root = NULL;
    int rc = parse_yaml_file(&a, file, &root, why);
    if (rc == 0 && root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL)
        rc = field_error(why, file, root, "mesh", "want a MeshConfig mapping");
    const wf_node *dc = rc == 0 && root ? wf_map_get(root, "defaultConfig") : NULL;
    if (dc && dc->type != WF_NODE_MAP && dc->type != WF_NODE_NULL)
        rc = field_error(why, file, dc, "defaultConfig", "want a ProxyConfig mapping");
    const wf_node *td = rc == 0 && root ? wf_map_get(root, "trustDomain") : NULL;
    if (td && !wf_node_str(td))
        rc = field_error(why, file, td, "trustDomain", "want a string");
    if (rc == 0 && root && root->type == WF_NODE_MAP) {
        json_decref(c->mesh);
        if (!(c->mesh = wf_node_to_json(root))) {
            wf_strbuf_puts(why, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0 && root && root->type == WF_NODE_MAP) {
        unimpl_arg arg = {c->unimplemented, file, ""};
        wf_unimpl_scan_mesh(root, file, WF_UNIMPL_KUBERNETES, unimpl_cb, &arg);
    }
    wf_arena_destroy(&a);
    return rc;
}

/* ---- public ------------------------------------------------------------------------------ */

wf_inject_config *wf_inject_config_default(void)
{
    wf_inject_config *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->policy_enabled = true;
    c->always = json_array();
    c->never = json_array();
    c->injected_annotations = json_object();
    c->values = json_loads(DEFAULT_VALUES, 0, NULL);
    c->mesh = json_object();
    c->unimplemented = json_array();
    const char *env = getenv("ENABLE_NATIVE_SIDECARS");
    c->native_sidecars = env && strcmp(env, "true") == 0;
    if (!c->always || !c->never || !c->injected_annotations || !c->values || !c->mesh ||
        !c->unimplemented) {
        wf_inject_config_free(c);
        return NULL;
    }
    return c;
}

void wf_inject_config_free(wf_inject_config *c)
{
    if (!c)
        return;
    json_decref(c->always);
    json_decref(c->never);
    json_decref(c->injected_annotations);
    json_decref(c->values);
    json_decref(c->mesh);
    json_decref(c->unimplemented);
    free(c);
}

const json_t *wf_inject_config_unimplemented(const wf_inject_config *c)
{
    return c->unimplemented;
}

int wf_inject_config_load_files(const char *config_file, const char *values_file,
                                const char *mesh_file, wf_inject_config **out, wf_strbuf *why)
{
    *out = NULL;
    wf_inject_config *c = wf_inject_config_default();
    if (!c) {
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    if ((config_file && load_config(c, config_file, why) != 0) ||
        (values_file && load_values(c, values_file, why) != 0) ||
        (mesh_file && load_mesh(c, mesh_file, why) != 0)) {
        wf_inject_config_free(c);
        return -1;
    }
    const char *native = wf_inj_value_str(c, "pilot.env.ENABLE_NATIVE_SIDECARS", NULL);
    if (native)
        c->native_sidecars = strcmp(native, "true") == 0;
    else if (json_is_boolean(wf_inj_value(c, "pilot.env.ENABLE_NATIVE_SIDECARS")))
        c->native_sidecars = json_is_true(wf_inj_value(c, "pilot.env.ENABLE_NATIVE_SIDECARS"));
    *out = c;
    return 0;
}

static int mesh_json_error(wf_strbuf *why, const char *name, const char *field, const char *want)
{
    wf_strbuf_printf(why, "%s: %s: %s", name ? name : "MeshConfig", field, want);
    return -1;
}

int wf_inject_config_with_mesh(const wf_inject_config *base, const json_t *mesh, const char *name,
                               wf_inject_config **out, wf_strbuf *why)
{
    *out = NULL;
    const json_t *dc = json_object_get(mesh, "defaultConfig");
    const json_t *td = json_object_get(mesh, "trustDomain");
    if (!json_is_object(mesh))
        return mesh_json_error(why, name, "mesh", "want a MeshConfig mapping");
    if (dc && !json_is_object(dc) && !json_is_null(dc))
        return mesh_json_error(why, name, "defaultConfig", "want a ProxyConfig mapping");
    if (td && !json_is_string(td))
        return mesh_json_error(why, name, "trustDomain", "want a string");
    wf_inject_config *c = calloc(1, sizeof *c);
    if (!c) {
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    *c = *base;
    c->always = json_deep_copy(base->always);
    c->never = json_deep_copy(base->never);
    c->injected_annotations = json_deep_copy(base->injected_annotations);
    c->values = json_deep_copy(base->values);
    c->mesh = json_deep_copy(mesh);
    c->unimplemented = json_deep_copy(base->unimplemented);
    if (!c->always || !c->never || !c->injected_annotations || !c->values || !c->mesh ||
        !c->unimplemented) {
        wf_inject_config_free(c);
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    *out = c;
    return 0;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static bool exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0;
}

int wf_inject_config_load(const char *dir, const char *mesh_file, wf_inject_config **out,
                          wf_strbuf *why)
{
    char *cfg = dir ? join(dir, "config") : NULL, *val = dir ? join(dir, "values") : NULL;
    if (dir && (!cfg || !val)) {
        free(cfg);
        free(val);
        wf_strbuf_puts(why, "out of memory");
        return -1;
    }
    int rc = wf_inject_config_load_files(exists(cfg) ? cfg : NULL, exists(val) ? val : NULL,
                                         mesh_file, out, why);
    free(cfg);
    free(val);
    return rc;
}
