/*
 * inject_probes.c - ISTIO_KUBE_APP_PROBERS, probe rewriting and ISTIO_PROMETHEUS_ANNOTATIONS
 * (inject_probes.h; Istio's pkg/kube/inject/app_probe.go and webhook.go).
 */
#include "kube/inject_probes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int wf_inject_parse_bool(const char *s)
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

static int status_port(const wf_probe_opts *o)
{
    return o->status_port ? o->status_port : WF_INJECT_STATUS_PORT;
}

/* The probe's port as a number: an integer (or an integer string), or a name among the
 * container's ports; -1 when it cannot be resolved. */
static json_int_t probe_port(const json_t *c, const json_t *port)
{
    if (json_is_integer(port)) {
        json_int_t n = json_integer_value(port);
        return n > 0 && n < 65536 ? n : -1;
    }
    const char *name = json_string_value(port);
    if (!name || !*name)
        return -1;
    if (strspn(name, "0123456789") == strlen(name)) {
        long n = strtol(name, NULL, 10);
        return n > 0 && n < 65536 ? n : -1;
    }
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(c, "ports"), i, p)
    {
        const char *pn = json_string_value(json_object_get(p, "name"));
        if (pn && strcmp(pn, name) == 0 && json_is_integer(json_object_get(p, "containerPort")))
            return json_integer_value(json_object_get(p, "containerPort"));
    }
    return -1;
}

static const char *str_or(const json_t *o, const char *key, const char *def)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : def;
}

/* Sets key to a string unless it is NULL/empty (Go's omitempty). */
static int set_str(json_t *o, const char *key, const char *v)
{
    return !v || !*v ? 0 : json_object_set_new(o, key, json_string(v));
}

static json_t *http_action(const json_t *http, json_int_t port, const wf_probe_opts *o)
{
    json_t *a = json_object();
    const char *host = str_or(http, "host", o->api_defaults ? (o->host ? o->host : "") : NULL);
    const json_t *hh = json_object_get(http, "httpHeaders");
    if (!a)
        return NULL;
    int rc = 0;
    if (o->api_defaults) {
        rc |= json_object_set_new(a, "path", json_string(str_or(http, "path", "/")));
        rc |= json_object_set_new(a, "port", json_integer(port));
        rc |= json_object_set_new(a, "host", json_string(host));
        rc |= json_object_set_new(a, "scheme", json_string(str_or(http, "scheme", "HTTP")));
    } else {
        rc |= set_str(a, "path", str_or(http, "path", NULL));
        rc |= json_object_set_new(a, "port", json_integer(port));
        rc |= set_str(a, "host", host);
        rc |= set_str(a, "scheme", str_or(http, "scheme", NULL));
    }
    if (json_array_size(hh)) {
        json_t *arr = json_array();
        size_t i;
        json_t *h;
        json_array_foreach(hh, i, h)
        {
            json_t *e = json_pack("{s:s,s:s}", "name", str_or(h, "name", ""), "value",
                                  str_or(h, "value", ""));
            if (!arr || !e || json_array_append_new(arr, e) != 0)
                rc = -1;
        }
        rc |= json_object_set_new(a, "httpHeaders", arr);
    }
    if (rc != 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* The prober for one Kubernetes probe or hook (a handler with httpGet/tcpSocket/grpc), or NULL
 * (none, exec, unresolvable, already rewritten). *oom set when out of memory. */
static json_t *prober(const json_t *c, const json_t *probe, const wf_probe_opts *o, bool *oom)
{
    if (!json_is_object(probe))
        return NULL;
    const json_t *http = json_object_get(probe, "httpGet");
    const json_t *tcp = json_object_get(probe, "tcpSocket");
    const json_t *grpc = json_object_get(probe, "grpc");
    json_t *action = NULL;
    const char *key = NULL;
    if (json_is_object(http)) {
        json_int_t port = probe_port(c, json_object_get(http, "port"));
        if (port < 0 || port == status_port(o))
            return NULL;
        key = "httpGet";
        action = http_action(http, port, o);
    } else if (json_is_object(tcp)) {
        json_int_t port = probe_port(c, json_object_get(tcp, "port"));
        if (port < 0 || port == status_port(o))
            return NULL;
        key = "tcpSocket";
        action = json_pack("{s:I}", "port", port);
        const char *h = str_or(tcp, "host", o->api_defaults ? (o->host ? o->host : "") : NULL);
        if (action && (o->api_defaults ? json_object_set_new(action, "host", json_string(h))
                                       : set_str(action, "host", h)) != 0)
            json_decref(action), action = NULL;
    } else if (json_is_object(grpc)) {
        json_t *pv = json_object_get(grpc, "port");
        json_int_t port = json_is_integer(pv) ? json_integer_value(pv) : -1;
        if (port <= 0 || port == status_port(o))
            return NULL;
        key = "grpc";
        action = json_pack("{s:I}", "port", port);
        const char *service = json_string_value(json_object_get(grpc, "service"));
        if (action && (o->api_defaults ? json_object_set_new(action, "service",
                                                             json_string(service ? service : ""))
                                       : set_str(action, "service", service)) != 0)
            json_decref(action), action = NULL;
    } else {
        return NULL;
    }
    json_t *out = action ? json_pack("{s:o}", key, action) : NULL;
    json_t *ts = json_object_get(probe, "timeoutSeconds");
    json_int_t timeout = json_is_integer(ts) ? json_integer_value(ts) : 0;
    if (o->api_defaults && timeout <= 0)
        timeout = 1;
    if (out && timeout > 0 && json_object_set_new(out, "timeoutSeconds", json_integer(timeout)))
        json_decref(out), out = NULL;
    *oom = !out;
    return out;
}

typedef struct site {
    const char *field, *sub, *root, *suffix; /* container field (sub: lifecycle hook) */
} site;

static const site SITES[] = {
    {"readinessProbe", NULL, "app-health", "readyz"},
    {"livenessProbe", NULL, "app-health", "livez"},
    {"startupProbe", NULL, "app-health", "startupz"},
    {"lifecycle", "preStop", "app-lifecycle", "prestopz"},
    {"lifecycle", "postStart", "app-lifecycle", "poststartz"},
};
#define NSITES (sizeof SITES / sizeof SITES[0])

static json_t *site_probe(const json_t *c, const site *s)
{
    json_t *v = json_object_get(c, s->field);
    return s->sub ? json_object_get(v, s->sub) : v;
}

static bool site_on(const site *s, const wf_probe_opts *o)
{
    if (!s->sub)
        return true;
    return o->lifecycle;
}

/* Lifecycle hooks: only httpGet and tcpSocket (Istio rewrites no grpc hook; there is none). */
static bool hook_ok(const site *s, const json_t *p)
{
    return !s->sub || json_object_get(p, "httpGet") || json_object_get(p, "tcpSocket");
}

static void site_path(char *buf, size_t cap, const site *s, const char *container)
{
    snprintf(buf, cap, "/%s/%s/%s", s->root, container, s->suffix);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* map with its top-level keys in Go's map order (sorted), values shared. */
static json_t *sorted_copy(json_t *map)
{
    size_t n = json_object_size(map), i = 0;
    const char **keys = calloc(n, sizeof *keys);
    json_t *out = keys ? json_object() : NULL;
    const char *k;
    json_t *v;
    if (!keys)
        return NULL;
    json_object_foreach(map, k, v) keys[i++] = k;
    qsort(keys, n, sizeof *keys, by_str);
    for (i = 0; out && i < n; i++)
        if (json_object_set(out, keys[i], json_object_get(map, keys[i])) != 0)
            json_decref(out), out = NULL;
    free(keys);
    return out;
}

int wf_inject_app_probers(const json_t *containers, const wf_probe_opts *o, char **out)
{
    *out = NULL;
    json_t *map = json_object();
    if (!map)
        return -1;
    bool oom = false;
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        for (size_t k = 0; !oom && name && k < NSITES; k++) {
            const json_t *p = site_probe(c, &SITES[k]);
            if (!site_on(&SITES[k], o) || !hook_ok(&SITES[k], p))
                continue;
            json_t *pr = prober(c, p, o, &oom);
            if (!pr)
                continue;
            char path[512];
            site_path(path, sizeof path, &SITES[k], name);
            if (json_object_set_new(map, path, pr) != 0)
                oom = true;
        }
    }
    if (!oom && json_object_size(map)) {
        json_t *sorted = sorted_copy(map);
        *out = sorted ? json_dumps(sorted, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(sorted);
        oom = !*out;
    }
    json_decref(map);
    return oom ? -1 : 0;
}

/* The rewritten handler: httpGet {path, port: status port[, scheme HTTP]} (Istio keeps the
 * httpGet's other fields, turns HTTPS into HTTP, and replaces tcpSocket/grpc). */
static int rewrite_one(json_t *p, const char *path, const wf_probe_opts *o)
{
    json_t *http = json_object_get(p, "httpGet");
    if (!json_is_object(http)) {
        json_object_del(p, "tcpSocket");
        json_object_del(p, "grpc");
        http = json_object();
        if (!http || json_object_set_new(p, "httpGet", http) != 0)
            return -1;
    }
    const char *scheme = json_string_value(json_object_get(http, "scheme"));
    if (scheme && strcasecmp(scheme, "HTTPS") == 0 &&
        json_object_set_new(http, "scheme", json_string("HTTP")) != 0)
        return -1;
    return json_object_set_new(http, "path", json_string(path)) ||
                   json_object_set_new(http, "port", json_integer(status_port(o)))
               ? -1
               : 0;
}

int wf_inject_rewrite_probes(json_t *containers, const wf_probe_opts *o)
{
    int n = 0;
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        for (size_t k = 0; name && k < NSITES; k++) {
            json_t *p = site_probe(c, &SITES[k]);
            bool oom = false;
            if (!site_on(&SITES[k], o) || !hook_ok(&SITES[k], p))
                continue;
            json_t *pr = prober(c, p, o, &oom);
            if (oom)
                return -1;
            if (!pr)
                continue;
            json_decref(pr);
            char path[512];
            site_path(path, sizeof path, &SITES[k], name);
            if (rewrite_one(p, path, o) != 0)
                return -1;
            n++;
        }
    }
    return n;
}

int wf_inject_prometheus_env(const json_t *an, bool mesh_merge, int port_status, bool webhook,
                             char **out)
{
    *out = NULL;
    const char *scrape = json_string_value(json_object_get(an, "prometheus.io/scrape"));
    const char *path = json_string_value(json_object_get(an, "prometheus.io/path"));
    const char *port = json_string_value(json_object_get(an, "prometheus.io/port"));
    if (!wf_inject_prometheus_merge(an, mesh_merge, port_status))
        return 0;
    if (webhook ? !scrape && !path && !port : !scrape || strcasecmp(scrape, "true") != 0)
        return 0;
    json_t *o = json_pack("{s:s,s:s,s:s}", "scrape", scrape ? scrape : "", "path",
                          webhook ? (path ? path : "") : (path && *path ? path : "/metrics"),
                          "port", port ? port : "");
    *out = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return *out ? 0 : -1;
}

bool wf_inject_prometheus_merge(const json_t *an, bool mesh_merge, int port_status)
{
    int merge = wf_inject_parse_bool(
        json_string_value(json_object_get(an, "prometheus.istio.io/merge-metrics")));
    if (merge == 0 || (merge < 0 && !mesh_merge))
        return false;
    const char *scrape = json_string_value(json_object_get(an, "prometheus.io/scrape"));
    if (scrape && strcasecmp(scrape, "false") == 0)
        return false;
    const char *port = json_string_value(json_object_get(an, "prometheus.io/port"));
    char sp[16];
    snprintf(sp, sizeof sp, "%d", port_status ? port_status : WF_INJECT_STATUS_PORT);
    return !(port && strcmp(port, sp) == 0); /* already pointed at the agent */
}
