/*
 * validate_ext.c - EnvoyFilter, Telemetry, WasmPlugin and ProxyConfig validation (light).
 *
 * Follows istio/istio pkg/config/validation/envoyfilter/envoyfilter.go (ValidateEnvoyFilter,
 * without building the xDS objects from the patch values) and
 * pkg/config/validation/validation.go (ValidateTelemetry without CEL filter parsing,
 * ValidateWasmPlugin, ValidateProxyConfig).
 */
#include "model/validate_internal.h"

#include "model/istio_enums.h"

#include <string.h>

#define IN(c, key, stmt)                                                                           \
    do {                                                                                           \
        size_t in_mark_ = vc_push((c), (key));                                                     \
        stmt;                                                                                      \
        vc_pop((c), in_mark_);                                                                     \
    } while (0)

/* ---- EnvoyFilter ---- */

static bool one_of(const char *s, const char *a, const char *b, const char *c_, const char *d)
{
    return !strcmp(s, a) || !strcmp(s, b) || (c_ && !strcmp(s, c_)) || (d && !strcmp(s, d));
}

/* Checks of a listener-class patch; false when the patch is done (upstream `continue`). */
static bool listener_match(vc *c, const wf_node *cp, const char *to)
{
    const wf_node *match = vc_get(cp, "match");
    bool object_types = vc_has(match, "listener") || vc_has(match, "routeConfiguration") ||
                        vc_has(match, "cluster");
    if (!object_types)
        return true;
    const wf_node *listener = vc_get(match, "listener");
    if (!listener) {
        vc_err(c, match,
               "Envoy filter: applyTo for listener class objects cannot have non "
               "listener match");
        return false;
    }
    const wf_node *filter = vc_get(vc_get(listener, "filterChain"), "filter");
    if (!filter)
        return true;
    if (!strcmp(to, "LISTENER") || !strcmp(to, "FILTER_CHAIN"))
        vc_warn(c, filter, "Envoy filter: filter match has no effect when used with %s", to);
    const char *name = vc_str(filter, "name");
    if (!*name) {
        vc_err(c, filter, "Envoy filter: filter match has no name to match on");
        return false;
    }
    const wf_node *sub = vc_get(filter, "subFilter");
    if (!sub)
        return true;
    if (strcmp(to, "HTTP_FILTER") != 0) {
        vc_err(c, sub, "Envoy filter: subfilter match can be used with applyTo HTTP_FILTER only");
        return false;
    }
    if (strcmp(name, "envoy.filters.network.http_connection_manager") != 0 &&
        strcmp(name, "envoy.http_connection_manager") != 0) {
        vc_err(c, sub,
               "Envoy filter: subfilter match requires filter match with "
               "envoy.filters.network.http_connection_manager");
        return false;
    }
    if (!*vc_str(sub, "name")) {
        vc_err(c, sub, "Envoy filter: subfilter match has no name to match on");
        return false;
    }
    return true;
}

static void config_patch(vc *c, const wf_node *cp)
{
    if (!cp || cp->type == WF_NODE_NULL) {
        vc_err(c, cp, "Envoy filter: null config patch");
        return;
    }
    const char *to = vc_enum(cp, "applyTo", wf_envoyfilter_apply_to);
    if (!strcmp(to, "INVALID")) {
        vc_err(c, cp, "Envoy filter: missing applyTo");
        return;
    }
    const wf_node *patch = vc_get(cp, "patch");
    if (!patch) {
        vc_err(c, cp, "Envoy filter: missing patch");
        return;
    }
    const char *op = vc_enum(patch, "operation", wf_envoyfilter_patch_op);
    if (!strcmp(op, "INVALID")) {
        IN(c, "patch", vc_err(c, patch, "Envoy filter: missing patch operation"));
        return;
    }
    if (strcmp(op, "REMOVE") != 0 && !vc_has(patch, "value")) {
        IN(c, "patch",
           vc_err(c, patch, "Envoy filter: missing patch value for non-remove operation"));
        return;
    }
    const wf_node *match = vc_get(cp, "match");
    const char *pv = vc_str(vc_get(match, "proxy"), "proxyVersion");
    if (*pv) {
        const char *e = vc_regex_error(c, pv);
        if (e) {
            vc_err(c, match, "Envoy filter: invalid regex for proxy version, [%s]", e);
            return;
        }
    }
    bool object_types = vc_has(match, "listener") || vc_has(match, "routeConfiguration") ||
                        vc_has(match, "cluster");
    if (one_of(to, "LISTENER", "FILTER_CHAIN", "NETWORK_FILTER", "HTTP_FILTER")) {
        listener_match(c, cp, to);
    } else if (one_of(to, "ROUTE_CONFIGURATION", "VIRTUAL_HOST", "HTTP_ROUTE", NULL)) {
        if (object_types && !vc_has(match, "routeConfiguration"))
            vc_err(c, match,
                   "Envoy filter: applyTo for http route class objects cannot have non "
                   "route configuration match");
    } else if (!strcmp(to, "CLUSTER")) {
        if (object_types && !vc_has(match, "cluster"))
            vc_err(c, match,
                   "Envoy filter: applyTo for cluster class objects cannot have non "
                   "cluster match");
    }
}

void vc_envoyfilter(vc *c, const wf_node *spec)
{
    bool failed = false;
    bool no_labels = vc_alpha_workload_selector(c, spec, &failed);
    if (failed)
        return;
    vc_warn(c, spec,
            "EnvoyFilter exposes internal implementation details that may change at any time. "
            "Prefer other APIs if possible, and exercise extreme caution, especially around "
            "upgrades.");
    if (no_labels)
        IN(c, "workloadSelector",
           vc_warn(c, vc_get(spec, "workloadSelector"),
                   "Envoy filter: workload selector specified without labels, will be applied to "
                   "all services in namespace"));
    const wf_node *patches = vc_get(spec, "configPatches");
    for (size_t i = 0; i < wf_seq_len(patches); i++) {
        size_t mark = vc_push(c, "configPatches");
        vc_push_idx(c, i);
        config_patch(c, wf_seq_at(patches, i));
        vc_pop(c, mark);
    }
}

/* ---- Telemetry ---- */

static void providers(vc *c, const wf_node *m)
{
    const wf_node *seq = vc_get(m, "providers");
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *p = wf_seq_at(seq, i);
        if (!p || p->type == WF_NODE_NULL || !*vc_str(p, "name")) {
            IN(c, "providers", vc_err(c, p ? p : seq, "providers.name may not be empty"));
            return;
        }
    }
}

static void metrics_override(vc *c, const wf_node *o)
{
    if (!o || o->type == WF_NODE_NULL) {
        vc_err(c, o, "tagOverrides may not be null");
        return;
    }
    const wf_node *tags = vc_get(o, "tagOverrides");
    static const char *const ops[] = {"UPSERT", "REMOVE", NULL};
    for (size_t i = 0; tags && tags->type == WF_NODE_MAP && i < tags->len; i++) {
        const wf_map_entry *e = &tags->u.entries[i];
        if (!*e->key)
            vc_warn(c, e->value, "tagOverrides.name may not be empty");
        if (e->value->type == WF_NODE_NULL) {
            vc_err(c, e->value, "tagOverrides may not be null");
            continue;
        }
        const char *op = vc_enum(e->value, "operation", ops);
        const char *value = vc_str(e->value, "value");
        if (!strcmp(op, "UPSERT") && !*value)
            vc_err(c, e->value, "tagOverrides.value must be set when operation is UPSERT");
        if (!strcmp(op, "REMOVE") && *value)
            vc_err(c, e->value, "tagOverrides.value may only be set when operation is UPSERT");
    }
    const wf_node *match = vc_get(o, "match");
    const wf_node *cm = wf_map_get(match, "customMetric");
    if (cm && cm->type != WF_NODE_NULL && !*vc_nstr(cm))
        vc_err(c, match, "customMetric may not be empty");
}

static void telemetry_metrics(vc *c, const wf_node *seq)
{
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *m = wf_seq_at(seq, i);
        if (!m || m->type == WF_NODE_NULL)
            continue;
        size_t mark = vc_push(c, "metrics");
        vc_push_idx(c, i);
        providers(c, m);
        const wf_node *ovs = vc_get(m, "overrides");
        for (size_t j = 0; j < wf_seq_len(ovs); j++) {
            size_t m2 = vc_push(c, "overrides");
            vc_push_idx(c, j);
            metrics_override(c, wf_seq_at(ovs, j));
            vc_pop(c, m2);
        }
        vc_pop(c, mark);
    }
}

static void custom_tags(vc *c, const wf_node *tags)
{
    for (size_t i = 0; tags && tags->type == WF_NODE_MAP && i < tags->len; i++) {
        const wf_map_entry *e = &tags->u.entries[i];
        if (!*e->key)
            vc_err(c, e->value, "tag name may not be empty");
        if (e->value->type == WF_NODE_NULL) {
            vc_err(c, e->value, "tag '%s' may not have a nil value", e->key);
            continue;
        }
        const wf_node *lit = vc_get(e->value, "literal"), *hdr = vc_get(e->value, "header");
        const wf_node *env = vc_get(e->value, "environment");
        if (lit && !*vc_str(lit, "value"))
            vc_err(c, lit, "literal tag value may not be empty");
        else if (hdr && !*vc_str(hdr, "name"))
            vc_err(c, hdr, "header tag name may not be empty");
        else if (env && !*vc_str(env, "name"))
            vc_err(c, env, "environment tag name may not be empty");
    }
}

static void telemetry_tracing(vc *c, const wf_node *seq)
{
    if (wf_seq_len(seq) > 1)
        IN(c, "tracing", vc_warn(c, seq, "multiple tracing is not currently supported"));
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *t = wf_seq_at(seq, i);
        if (!t || t->type == WF_NODE_NULL)
            continue;
        size_t mark = vc_push(c, "tracing");
        vc_push_idx(c, i);
        if (vc_len(t, "providers") > 1)
            vc_warn(c, t, "multiple providers is not currently supported");
        providers(c, t);
        double pct = vc_double(t, "randomSamplingPercentage");
        if (pct < 0 || pct > 100)
            vc_err(c, t, "randomSamplingPercentage must be in range [0.0, 100.0]");
        IN(c, "customTags", custom_tags(c, vc_get(t, "customTags")));
        vc_pop(c, mark);
    }
}

void vc_telemetry(vc *c, const wf_node *spec)
{
    vc_policy_targets(c, spec);
    telemetry_metrics(c, vc_get(spec, "metrics"));
    telemetry_tracing(c, vc_get(spec, "tracing"));
    const wf_node *logs = vc_get(spec, "accessLogging");
    vc_each(c, logs, "accessLogging", providers);
}

/* ---- WasmPlugin ---- */

static void wasm_url(vc *c, const wf_node *spec)
{
    const char *url = vc_str(spec, "url");
    const wf_node *at = vc_get(spec, "url") ? vc_get(spec, "url") : spec;
    if (!*url) {
        vc_err(c, at, "url field needs to be set");
        return;
    }
    const char *sep = strstr(url, "://");
    if (!sep)
        return; /* a path or host[:port]/path, parsed as http:// */
    const char *scheme = vc_fmt(c, "%.*s", (int)(sep - url), url);
    static const char *const ok[] = {"file", "http", "https", "oci"};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(scheme, ok[i]) == 0)
            return;
    }
    vc_err(c, at, "url contains unsupported scheme: %s", scheme);
}

static void wasm_vm_config(vc *c, const wf_node *vm)
{
    const wf_node *env = vc_get(vm, "env");
    static const char *const sources[] = {"INLINE", "HOST", NULL};
    for (size_t i = 0; i < wf_seq_len(env); i++) {
        const wf_node *e = wf_seq_at(env, i);
        if (!e || e->type == WF_NODE_NULL)
            continue;
        const char *name = vc_str(e, "name");
        if (!*name) {
            vc_err(c, e, "spec.vmConfig.env invalid");
            return;
        }
        if (strlen(name) > 256) {
            vc_err(c, e, "env.name field must be less than 255 characters long");
            return;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(vc_str(wf_seq_at(env, j), "name"), name) == 0) {
                vc_err(c, e, "duplicate env");
                return;
            }
        }
        if (strcmp(vc_enum(e, "valueFrom", sources), "INLINE") != 0 && *vc_str(e, "value")) {
            vc_err(c, e, "value may only be set when valueFrom is INLINE");
            return;
        }
    }
}

static void wasm_match(vc *c, const wf_node *seq)
{
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *sel = wf_seq_at(seq, i);
        if (!sel || sel->type == WF_NODE_NULL) {
            vc_err(c, seq, "spec.Match[%zu] is nil", i);
            return;
        }
        const wf_node *ports = vc_get(sel, "ports");
        for (size_t j = 0; j < wf_seq_len(ports); j++) {
            const wf_node *p = wf_seq_at(ports, j);
            if (!p || p->type == WF_NODE_NULL) {
                vc_err(c, sel, "spec.Match[%zu].Ports[%zu] is nil", i, j);
                return;
            }
            int64_t n = vc_int(p, "number");
            if (n <= 0 || n > 65535) {
                vc_err(c, p, "spec.Match[%zu].Ports[%zu] is out of range: %lld", i, j,
                       (long long)n);
                return;
            }
        }
    }
}

void vc_wasmplugin(vc *c, const wf_node *spec)
{
    vc_policy_targets(c, spec);
    wasm_url(c, spec);
    const char *sha = vc_str(spec, "sha256");
    if (*sha) {
        if (strlen(sha) != 64) {
            vc_err(c, spec, "sha256 field must be 64 characters long");
        } else {
            for (const char *p = sha; *p; p++) {
                if (!((*p >= 'a' && *p <= 'f') || (*p >= '0' && *p <= '9'))) {
                    vc_err(c, spec, "sha256 field must match [a-f0-9]{64} pattern");
                    break;
                }
            }
        }
    }
    if (strlen(vc_str(spec, "imagePullSecret")) > 253)
        vc_err(c, spec, "imagePullSecret field must be less than 253 characters long");
    if (strlen(vc_str(spec, "pluginName")) > 256)
        vc_err(c, spec, "pluginName field must be less than 255 characters long");
    IN(c, "vmConfig", wasm_vm_config(c, vc_get(spec, "vmConfig")));
    IN(c, "match", wasm_match(c, vc_get(spec, "match")));
}

/* ---- ProxyConfig ---- */

void vc_proxyconfig(vc *c, const wf_node *spec)
{
    vc_workload_selector(c, spec, "selector");
    if (vc_int(spec, "concurrency") < 0)
        IN(c, "concurrency",
           vc_err(c, vc_get(spec, "concurrency"),
                  "concurrency must be greater than or equal to 0"));
}
