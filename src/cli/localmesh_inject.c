/*
 * localmesh_inject.c - what Istio's sidecar injector adds to a sidecar's environment that
 * pilot-agent reads (localmesh_internal.h: lm_inject_env):
 *
 * ISTIO_KUBE_APP_PROBERS (pkg/kube/inject/app_probe.go DumpAppProbers, the injector rewrites
 * the probes to the agent's /app-health/<container>/livez|readyz|startupz on 15020): a JSON
 * map, keys sorted as Go's json.Marshal sorts a map, from those paths to
 *   {"httpGet": {"path", "port", "host", "scheme", "httpHeaders"?}, "timeoutSeconds"}
 *   {"tcpSocket": {"port", "host"}, "timeoutSeconds"}
 *   {"grpc": {"port", "service"}, "timeoutSeconds"}
 * built from every app container's readinessProbe, livenessProbe and startupProbe (exec
 * probes stay with the app: none). As the API server defaults them before the injector sees
 * them: path "/", scheme "HTTP", timeoutSeconds 1, service "". A named port is resolved to the
 * container's port of that name (a name the container lacks drops that probe, as Istio's);
 * a probe already on the status port 15020 is left out (already rewritten). host is the
 * manifest's, else the address the app listens on in the local mesh (the pod localhost
 * beside a sidecar), which is where Istio's agent reaches the app at the pod IP, past its own
 * sidecar. The template annotation sidecar.istio.io/rewriteAppHTTPProbers: "false" turns
 * rewriting off. Unset when no probe qualifies (Istio does not send "{}").
 *
 * ISTIO_PROMETHEUS_ANNOTATIONS (webhook.go applyPrometheusMerge): when the template has
 * prometheus.io/scrape: "true" and metrics merging is on (annotation
 * prometheus.istio.io/merge-metrics, else MeshConfig enablePrometheusMerge, default true):
 * {"scrape": "true", "path": the prometheus.io/path annotation or "/metrics", "port": the
 * prometheus.io/port annotation or ""}; not when the port annotation already is 15020.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli/localmesh_internal.h"

#define STATUS_PORT 15020 /* pilot-agent's status port (Istio's defaultConfig.statusPort) */

/* Go's strconv.ParseBool: 1 true, 0 false, -1 not a bool (or absent). */
static int parse_bool(const char *s)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; s && i < 6; i++) {
        if (strcmp(s, yes[i]) == 0)
            return 1;
        if (strcmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* The probe's port as a number: an integer, or a name among the container's ports; -1 when
 * it cannot be resolved. */
static int64_t probe_port(const wf_container *c, const wf_node *port)
{
    int64_t n;
    if (wf_node_int(port, &n))
        return n > 0 && n < 65536 ? n : -1;
    const char *name = wf_node_str(port);
    for (size_t i = 0; name && i < c->nports; i++)
        if (c->ports[i].name && strcmp(c->ports[i].name, name) == 0)
            return c->ports[i].container_port;
    return -1;
}

static json_t *headers_json(const wf_node *headers)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < wf_seq_len(headers); i++) {
        const wf_node *h = wf_seq_at(headers, i);
        json_t *e =
            json_pack("{s:s,s:s}", "name", wf_map_str(h, "name") ? wf_map_str(h, "name") : "",
                      "value", wf_map_str(h, "value") ? wf_map_str(h, "value") : "");
        if (!e || json_array_append_new(arr, e) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* The prober for one Kubernetes probe, or NULL (none, exec, unresolvable, already
 * rewritten). *oom set when out of memory. */
static json_t *prober(const wf_container *c, const wf_node *probe, const char *host, bool *oom)
{
    int64_t timeout = 1;
    if (!probe || probe->type != WF_NODE_MAP)
        return NULL;
    wf_node_int(wf_map_get(probe, "timeoutSeconds"), &timeout);
    const wf_node *http = wf_map_get(probe, "httpGet"), *tcp = wf_map_get(probe, "tcpSocket");
    const wf_node *grpc = wf_map_get(probe, "grpc");
    json_t *action = NULL;
    const char *key = NULL;
    if (http && http->type == WF_NODE_MAP) {
        int64_t port = probe_port(c, wf_map_get(http, "port"));
        if (port < 0 || port == STATUS_PORT)
            return NULL;
        const char *path = wf_map_str(http, "path"), *h = wf_map_str(http, "host");
        const char *scheme = wf_map_str(http, "scheme");
        key = "httpGet";
        action = json_pack("{s:s,s:I,s:s,s:s}", "path", path && *path ? path : "/", "port",
                           (json_int_t)port, "host", h && *h ? h : host, "scheme",
                           scheme && *scheme ? scheme : "HTTP");
        const wf_node *hh = wf_map_get(http, "httpHeaders");
        if (action && wf_seq_len(hh) &&
            json_object_set_new(action, "httpHeaders", headers_json(hh)) != 0)
            json_decref(action), action = NULL;
    } else if (tcp && tcp->type == WF_NODE_MAP) {
        int64_t port = probe_port(c, wf_map_get(tcp, "port"));
        if (port < 0 || port == STATUS_PORT)
            return NULL;
        const char *h = wf_map_str(tcp, "host");
        key = "tcpSocket";
        action = json_pack("{s:I,s:s}", "port", (json_int_t)port, "host", h && *h ? h : host);
    } else if (grpc && grpc->type == WF_NODE_MAP) {
        int64_t port;
        if (!wf_node_int(wf_map_get(grpc, "port"), &port) || port <= 0 || port == STATUS_PORT)
            return NULL;
        const char *service = wf_map_str(grpc, "service");
        key = "grpc";
        action =
            json_pack("{s:I,s:s}", "port", (json_int_t)port, "service", service ? service : "");
    } else {
        return NULL;
    }
    json_t *out = action ? json_pack("{s:o,s:I}", key, action, "timeoutSeconds",
                                     (json_int_t)(timeout > 0 ? timeout : 1))
                         : NULL;
    *oom = !out;
    return out;
}

typedef struct entry {
    char *path;
    json_t *prober;
} entry;

static int by_path(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->path, ((const entry *)b)->path);
}

/* The probers of every container, sorted by path; *n entries (the caller frees each). */
static int collect(const wf_workload *w, const char *host, entry **out, size_t *n)
{
    static const struct {
        const char *field, *suffix;
    } kinds[] = {
        {"readinessProbe", "readyz"}, {"livenessProbe", "livez"}, {"startupProbe", "startupz"}};
    entry *v = calloc(w->spec.ncontainers * 3 + 1, sizeof *v);
    if (!v)
        return -1;
    *n = 0;
    bool oom = false;
    for (size_t i = 0; !oom && i < w->spec.ncontainers; i++) {
        const wf_container *c = &w->spec.containers[i];
        for (size_t k = 0; !oom && k < 3 && c->name; k++) {
            json_t *p = prober(c, wf_map_get(c->node, kinds[k].field), host, &oom);
            if (!p)
                continue;
            size_t len = strlen(c->name) + 32;
            v[*n].path = malloc(len);
            if (!v[*n].path) {
                json_decref(p);
                oom = true;
                break;
            }
            snprintf(v[*n].path, len, "/app-health/%s/%s", c->name, kinds[k].suffix);
            v[(*n)++].prober = p;
        }
    }
    qsort(v, *n, sizeof *v, by_path);
    *out = v;
    return oom ? -1 : 0;
}

static int probers_env(wf_lm_plan *p, const wf_workload *w, const char *host, lm_strv *env)
{
    if (parse_bool(
            wf_kvs_get(&w->template_annotations, "sidecar.istio.io/rewriteAppHTTPProbers")) == 0)
        return 0;
    entry *v = NULL;
    size_t n = 0;
    int rc = collect(w, host, &v, &n);
    json_t *map = rc == 0 && n ? json_object() : NULL;
    for (size_t i = 0; i < n; i++) {
        if (map && json_object_set_new(map, v[i].path, v[i].prober) != 0)
            rc = -1;
        else if (!map)
            json_decref(v[i].prober);
        free(v[i].path);
    }
    free(v);
    char *text = map ? json_dumps(map, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(map);
    if (rc == 0 && map &&
        (!text || lm_strv_setenv(&p->arena, env, "ISTIO_KUBE_APP_PROBERS", text) != 0))
        rc = -1;
    free(text);
    return rc;
}

static int prometheus_env(wf_lm_plan *p, const wf_node *mesh, const wf_workload *w, lm_strv *env)
{
    const wf_kvs *an = &w->template_annotations;
    const char *scrape = wf_kvs_get(an, "prometheus.io/scrape");
    if (!scrape || strcasecmp(scrape, "true") != 0)
        return 0;
    int merge = parse_bool(wf_kvs_get(an, "prometheus.istio.io/merge-metrics"));
    bool mesh_merge = true;
    wf_node_bool(wf_map_get(mesh, "enablePrometheusMerge"), &mesh_merge);
    if (merge == 0 || (merge < 0 && !mesh_merge))
        return 0;
    const char *path = wf_kvs_get(an, "prometheus.io/path");
    const char *port = wf_kvs_get(an, "prometheus.io/port");
    char status_port[8];
    snprintf(status_port, sizeof status_port, "%d", STATUS_PORT);
    if (port && strcmp(port, status_port) == 0) /* already pointed at the agent */
        return 0;
    json_t *o = json_pack("{s:s,s:s,s:s}", "scrape", scrape, "path",
                          path && *path ? path : "/metrics", "port", port ? port : "");
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    int rc = text ? lm_strv_setenv(&p->arena, env, "ISTIO_PROMETHEUS_ANNOTATIONS", text) : -1;
    free(text);
    return rc;
}

int lm_inject_env(wf_lm_plan *p, const wf_node *mesh, const wf_resource *r, const char *app_host,
                  lm_strv *env)
{
    const wf_workload *w = r ? r->t.workload : NULL;
    if (!w)
        return 0;
    return probers_env(p, w, app_host, env) != 0 || prometheus_env(p, mesh, w, env) != 0 ? -1 : 0;
}
