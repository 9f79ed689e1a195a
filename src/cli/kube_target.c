/*
 * kube_target.c - pod names, workload selectors and pod choice as istioctl and kubectl do them
 * (kube_target.h).
 */
#include "cli/kube_target.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube/client.h"

static const wf_kube_workload WORKLOADS[] = {
    {"deployments", "/apis/apps/v1", false},
    {"replicasets", "/apis/apps/v1", false},
    {"statefulsets", "/apis/apps/v1", false},
    {"daemonsets", "/apis/apps/v1", false},
    {"jobs", "/apis/batch/v1", false},
    {"replicationcontrollers", "/api/v1", true},
    {"services", "/api/v1", true},
};

/* kubectl's names for each: singular, short name, plural, plural.group. */
static const struct {
    const char *name;
    size_t w; /* index in WORKLOADS */
} NAMES[] = {
    {"deployment", 0},
    {"deploy", 0},
    {"deployments", 0},
    {"deployments.apps", 0},
    {"deployment.apps", 0},
    {"replicaset", 1},
    {"rs", 1},
    {"replicasets", 1},
    {"replicasets.apps", 1},
    {"statefulset", 2},
    {"sts", 2},
    {"statefulsets", 2},
    {"statefulsets.apps", 2},
    {"daemonset", 3},
    {"ds", 3},
    {"daemonsets", 3},
    {"daemonsets.apps", 3},
    {"job", 4},
    {"jobs", 4},
    {"jobs.batch", 4},
    {"replicationcontroller", 5},
    {"rc", 5},
    {"replicationcontrollers", 5},
    {"service", 6},
    {"svc", 6},
    {"services", 6},
};

static bool is_pod_type(const char *t)
{
    return strcasecmp(t, "pod") == 0 || strcasecmp(t, "pods") == 0 || strcasecmp(t, "po") == 0;
}

static const wf_kube_workload *find_workload(const char *t)
{
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcasecmp(t, NAMES[i].name) == 0)
            return &WORKLOADS[NAMES[i].w];
    return NULL;
}

void wf_kube_target_free(wf_kube_target *t)
{
    if (!t)
        return;
    free(t->type);
    free(t->name);
    free(t->ns);
    memset(t, 0, sizeof *t);
}

int wf_kube_target_parse(const char *arg, const char *default_ns, wf_kube_target *t, wf_strbuf *err)
{
    memset(t, 0, sizeof *t);
    const char *slash = strrchr(arg, '/');
    const char *base = slash && slash > arg ? slash + 1 : arg;
    const char *dot = strrchr(base, '.');
    size_t bl = dot ? (size_t)(dot - base) : strlen(base);
    if (slash && slash > arg && !(t->type = strndup(arg, (size_t)(slash - arg))))
        goto oom;
    if (!(t->name = strndup(base, bl)) ||
        !(t->ns = strdup(dot ? dot + 1 : (default_ns && *default_ns ? default_ns : "default"))))
        goto oom;
    if (!t->name[0] || !t->ns[0]) {
        wf_strbuf_printf(err, "invalid pod name \"%s\" (want [<type>/]<name>[.<namespace>])", arg);
        wf_kube_target_free(t);
        return -1;
    }
    if (t->type && !is_pod_type(t->type) && !(t->workload = find_workload(t->type))) {
        wf_strbuf_printf(err, "the server doesn't have a resource type \"%s\"", t->type);
        wf_kube_target_free(t);
        return -1;
    }
    return 0;
oom:
    wf_strbuf_puts(err, "out of memory");
    wf_kube_target_free(t);
    return -1;
}

void wf_kube_target_path(const wf_kube_target *t, wf_strbuf *out)
{
    if (t->workload)
        wf_strbuf_printf(out, "%s/namespaces/%s/%s/%s", t->workload->api, t->ns,
                         t->workload->resource, t->name);
    else
        wf_strbuf_printf(out, "/api/v1/namespaces/%s/pods/%s", t->ns, t->name);
}

/* ---- selectors ------------------------------------------------------------------------------ */

typedef struct req {
    const char *key;
    char *text; /* the requirement as written, malloc'd */
} req;

static int cmp_req(const void *a, const void *b)
{
    const req *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->text, y->text);
}

/* "k in (a,b)" with values sorted as labels.Requirement.String() sorts them. */
static char *set_req(const char *key, const char *op, const json_t *values)
{
    size_t n = json_array_size(values);
    const char **v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(values, i));
    for (size_t i = 1; i < n; i++) /* insertion sort: few values */
        for (size_t j = i; j > 0 && v[j] && v[j - 1] && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *tmp = v[j];
            v[j] = v[j - 1];
            v[j - 1] = tmp;
        }
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_printf(&b, "%s %s (", key, op);
    for (size_t i = 0; i < n; i++)
        wf_strbuf_printf(&b, "%s%s", i ? "," : "", v[i] ? v[i] : "");
    wf_strbuf_putc(&b, ')');
    free(v);
    return wf_strbuf_take(&b);
}

static char *expr_req(const json_t *e, const char **key, wf_strbuf *err)
{
    const char *k = json_string_value(json_object_get(e, "key"));
    const char *op = json_string_value(json_object_get(e, "operator"));
    const json_t *vals = json_object_get(e, "values");
    *key = k;
    if (!k || !op) {
        wf_strbuf_puts(err, "matchExpressions entry without key or operator");
        return NULL;
    }
    char *s = NULL;
    if (strcmp(op, "In") == 0)
        s = set_req(k, "in", vals);
    else if (strcmp(op, "NotIn") == 0)
        s = set_req(k, "notin", vals);
    else if (strcmp(op, "Exists") == 0)
        s = strdup(k);
    else if (strcmp(op, "DoesNotExist") == 0 && asprintf(&s, "!%s", k) < 0)
        s = NULL;
    else if (strcmp(op, "DoesNotExist") != 0) {
        wf_strbuf_printf(err, "\"%s\" is not a valid label selector operator", op);
        return NULL;
    }
    if (!s)
        wf_strbuf_puts(err, "out of memory");
    return s;
}

/* The requirements of selector sel into v (n of them; v has room for all). */
static int collect(const json_t *labels, const json_t *exprs, req *v, size_t *n, wf_strbuf *err)
{
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)labels, k, val)
    {
        v[*n].key = k;
        if (asprintf(&v[*n].text, "%s=%s", k,
                     json_string_value(val) ? json_string_value(val) : "") < 0) {
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
        (*n)++;
    }
    size_t i;
    json_t *e;
    json_array_foreach(exprs, i, e)
    {
        if (!(v[*n].text = expr_req(e, &v[*n].key, err)))
            return -1;
        (*n)++;
    }
    return 0;
}

int wf_kube_workload_selector(const json_t *obj, bool map_selector, wf_strbuf *out, wf_strbuf *err)
{
    const json_t *sel = json_object_get(json_object_get(obj, "spec"), "selector");
    const json_t *labels = map_selector ? sel : json_object_get(sel, "matchLabels");
    const json_t *exprs = map_selector ? NULL : json_object_get(sel, "matchExpressions");
    size_t total = json_object_size(labels) + json_array_size(exprs);
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (total == 0) {
        wf_strbuf_printf(err, "the selector of %s is empty", name ? name : "the object");
        return -1;
    }
    req *v = calloc(total, sizeof *v);
    size_t n = 0;
    int rc = v ? collect(labels, exprs, v, &n, err) : -1;
    if (!v)
        wf_strbuf_puts(err, "out of memory");
    if (rc == 0) {
        qsort(v, n, sizeof *v, cmp_req);
        for (size_t i = 0; i < n; i++)
            wf_strbuf_printf(out, "%s%s", i ? "," : "", v[i].text);
    }
    for (size_t i = 0; v && i < total; i++)
        free(v[i].text);
    free(v);
    return rc;
}

void wf_kube_pods_query(const char *ns, const char *label_sel, const char *field_sel,
                        wf_strbuf *out)
{
    if (ns && *ns)
        wf_strbuf_printf(out, "/api/v1/namespaces/%s/pods", ns);
    else
        wf_strbuf_puts(out, "/api/v1/pods");
    char sep = '?';
    if (label_sel && *label_sel) {
        wf_strbuf_printf(out, "%clabelSelector=", sep);
        wf_kube_query_escape(out, label_sel);
        sep = '&';
    }
    if (field_sel && *field_sel) {
        wf_strbuf_printf(out, "%cfieldSelector=", sep);
        wf_kube_query_escape(out, field_sel);
    }
}

/* ---- ByLogging ------------------------------------------------------------------------------ */

static const char *sget(const json_t *o, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, a), b));
    return s ? s : "";
}

static int phase_rank(const json_t *pod)
{
    const char *p = sget(pod, "status", "phase");
    return strcmp(p, "Pending") == 0 ? 2 : strcmp(p, "Unknown") == 0 ? 1 : 0;
}

/* The Ready condition's lastTransitionTime when the pod is ready, else NULL. */
static const char *ready_since(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && strcmp(t, "Ready") == 0) {
            if (!s || strcmp(s, "True") != 0)
                return NULL;
            const char *lt = json_string_value(json_object_get(c, "lastTransitionTime"));
            return lt ? lt : "";
        }
    }
    return NULL;
}

static long max_restarts(const json_t *pod)
{
    long m = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, c)
    {
        long r = (long)json_integer_value(json_object_get(c, "restartCount"));
        if (r > m)
            m = r;
    }
    return m;
}

/* afterOrZero(t1, t2): t1 is zero or after t2 (RFC 3339 UTC strings compare as times). */
static bool after_or_zero(const char *t1, const char *t2)
{
    if (!*t1 || !*t2)
        return !*t1;
    return strcmp(t1, t2) > 0;
}

/* podutils.ByLogging Less(a, b). */
static bool less(const json_t *a, const json_t *b)
{
    const char *na = sget(a, "spec", "nodeName"), *nb = sget(b, "spec", "nodeName");
    if (strcmp(na, nb) != 0 && (!*na || !*nb))
        return *na != '\0';
    if (phase_rank(a) != phase_rank(b))
        return phase_rank(a) < phase_rank(b);
    const char *ra = ready_since(a), *rb = ready_since(b);
    if ((ra != NULL) != (rb != NULL))
        return ra != NULL;
    if (ra && rb && strcmp(ra, rb) != 0)
        return after_or_zero(rb, ra);
    if (max_restarts(a) != max_restarts(b))
        return max_restarts(a) > max_restarts(b);
    const char *ca = sget(a, "metadata", "creationTimestamp");
    const char *cb = sget(b, "metadata", "creationTimestamp");
    if (strcmp(ca, cb) != 0)
        return after_or_zero(cb, ca);
    return false;
}

long wf_kube_first_pod(const json_t *items)
{
    long best = -1;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p)
    {
        if (best < 0 || less(p, json_array_get(items, (size_t)best)))
            best = (long)i;
    }
    return best;
}

int wf_kube_monitoring_port(const json_t *pod)
{
    const char *v = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "metadata"), "annotations"), "prometheus.io/port"));
    if (v && *v) {
        char *end;
        long p = strtol(v, &end, 10);
        if (!*end && p > 0 && p < 65536)
            return (int)p;
    }
    return 15014;
}

void wf_kube_pod_proxy_path(const char *ns, const char *pod, int port, const char *path,
                            wf_strbuf *out)
{
    wf_strbuf_printf(out, "/api/v1/namespaces/%s/pods/%s:%d/proxy%s", ns, pod, port,
                     path[0] == '/' ? path : "/");
    if (path[0] != '/')
        wf_strbuf_puts(out, path);
}
