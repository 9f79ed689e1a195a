/*
 * kube_check.c - strict JSON types of Kubernetes built-in objects (see kube_check.h).
 */
#include "model/kube_check.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct kc {
    char *msg;
    size_t size;
    const wf_node **at;
    char path[256];
} kc;

static int bad(kc *c, const wf_node *n, const char *field, const char *want)
{
    *c->at = n;
    snprintf(c->msg, c->size,
             "failed parsing JSON for built-in type: %s%s%s: cannot unmarshal %s into a value "
             "of type %s",
             c->path, c->path[0] ? "." : "", field, wf_node_kind_name(n), want);
    return 1;
}

/* Absent and null fields are fine everywhere (Go leaves the zero value). */
static bool present(const wf_node *n)
{
    return n && n->type != WF_NODE_NULL;
}

static int want_string(kc *c, const wf_node *parent, const char *field)
{
    const wf_node *n = wf_map_get(parent, field);
    return present(n) && !wf_node_is_string(n) ? bad(c, n, field, "string") : 0;
}

static int want_int(kc *c, const wf_node *parent, const char *field)
{
    int64_t v;
    const wf_node *n = wf_map_get(parent, field);
    return present(n) && !wf_node_int(n, &v) ? bad(c, n, field, "int32") : 0;
}

static int want_int_or_string(kc *c, const wf_node *parent, const char *field)
{
    int64_t v;
    const wf_node *n = wf_map_get(parent, field);
    return present(n) && !wf_node_int(n, &v) && !wf_node_is_string(n)
               ? bad(c, n, field, "IntOrString")
               : 0;
}

static int want_kind(kc *c, const wf_node *parent, const char *field, wf_node_type t)
{
    const wf_node *n = wf_map_get(parent, field);
    if (!present(n) || n->type == t)
        return 0;
    return bad(c, n, field, t == WF_NODE_MAP ? "object" : "array");
}

/* A map[string]string (labels, annotations, selectors). */
static int want_string_map(kc *c, const wf_node *parent, const char *field)
{
    const wf_node *m = wf_map_get(parent, field);
    if (!present(m))
        return 0;
    if (m->type != WF_NODE_MAP)
        return bad(c, m, field, "object");
    for (size_t i = 0; i < m->len; i++) {
        const wf_node *v = m->u.entries[i].value;
        if (present(v) && !wf_node_is_string(v)) {
            char f[200];
            snprintf(f, sizeof(f), "%s.%s", field, m->u.entries[i].key);
            return bad(c, v, f, "string");
        }
    }
    return 0;
}

/* Run fn on each item of parent[field] (which must be a list of objects), with the path
 * extended by "field[i]". */
static int each_item(kc *c, const wf_node *parent, const char *field,
                     int (*fn)(kc *c, const wf_node *item))
{
    const wf_node *seq = wf_map_get(parent, field);
    if (!present(seq))
        return 0;
    if (seq->type != WF_NODE_SEQ)
        return bad(c, seq, field, "array");
    size_t saved = strlen(c->path);
    for (size_t i = 0; i < seq->len; i++) {
        const wf_node *it = seq->u.items[i];
        snprintf(c->path + saved, sizeof(c->path) - saved, "%s%s[%zu]", saved ? "." : "", field, i);
        if (present(it) && it->type != WF_NODE_MAP) {
            c->path[saved] = '\0';
            char f[100];
            snprintf(f, sizeof(f), "%s[%zu]", field, i);
            return bad(c, it, f, "object");
        }
        if (present(it) && fn(c, it))
            return 1;
    }
    c->path[saved] = '\0';
    return 0;
}

/* Run fn on parent[field] (an object) with the path extended. */
static int in_object(kc *c, const wf_node *parent, const char *field,
                     int (*fn)(kc *c, const wf_node *obj))
{
    const wf_node *o = wf_map_get(parent, field);
    if (!present(o))
        return 0;
    if (o->type != WF_NODE_MAP)
        return bad(c, o, field, "object");
    size_t saved = strlen(c->path);
    snprintf(c->path + saved, sizeof(c->path) - saved, "%s%s", saved ? "." : "", field);
    int rc = fn(c, o);
    c->path[saved] = '\0';
    return rc;
}

static int check_metadata(kc *c, const wf_node *m)
{
    return want_string(c, m, "name") || want_string(c, m, "namespace") ||
           want_string_map(c, m, "labels") || want_string_map(c, m, "annotations");
}

static int check_service_port(kc *c, const wf_node *p)
{
    return want_string(c, p, "name") || want_string(c, p, "protocol") ||
           want_string(c, p, "appProtocol") || want_int(c, p, "port") ||
           want_int_or_string(c, p, "targetPort") || want_int(c, p, "nodePort");
}

static int check_service_spec(kc *c, const wf_node *s)
{
    return want_string(c, s, "type") || want_string(c, s, "externalName") ||
           want_string(c, s, "clusterIP") || want_string_map(c, s, "selector") ||
           each_item(c, s, "ports", check_service_port);
}

static int check_container_port(kc *c, const wf_node *p)
{
    return want_string(c, p, "name") || want_string(c, p, "protocol") ||
           want_int(c, p, "containerPort");
}

static int check_container(kc *c, const wf_node *ct)
{
    return want_string(c, ct, "name") || want_string(c, ct, "image") ||
           each_item(c, ct, "ports", check_container_port);
}

static int check_pod_spec(kc *c, const wf_node *s)
{
    return want_string(c, s, "serviceAccountName") || want_string(c, s, "serviceAccount") ||
           want_string(c, s, "nodeName") || each_item(c, s, "containers", check_container) ||
           each_item(c, s, "initContainers", check_container);
}

static int check_template(kc *c, const wf_node *t)
{
    return in_object(c, t, "metadata", check_metadata) || in_object(c, t, "spec", check_pod_spec);
}

static int check_selector(kc *c, const wf_node *s)
{
    return want_string_map(c, s, "matchLabels") || want_kind(c, s, "matchExpressions", WF_NODE_SEQ);
}

static int check_workload_spec(kc *c, const wf_node *s)
{
    return want_int(c, s, "replicas") || in_object(c, s, "selector", check_selector) ||
           in_object(c, s, "template", check_template);
}

int wf_kube_check(const wf_node *root, wf_kind k, char *msg, size_t msg_size, const wf_node **at)
{
    kc c = {msg, msg_size, at, ""};
    if (in_object(&c, root, "metadata", check_metadata))
        return 1;
    switch (k) {
    case WF_KIND_SERVICE:
        return in_object(&c, root, "spec", check_service_spec);
    case WF_KIND_POD:
        return in_object(&c, root, "spec", check_pod_spec);
    case WF_KIND_DEPLOYMENT:
    case WF_KIND_REPLICASET:
    case WF_KIND_STATEFULSET:
    case WF_KIND_DAEMONSET:
        return in_object(&c, root, "spec", check_workload_spec);
    default:
        return 0;
    }
}
