/*
 * proxy_id.c - who a proxy is, from the node of its first discovery request (see generate.h):
 * Istio's ParseServiceNodeWithMetadata (pilot/pkg/model/context.go) for the
 * "<type>~<ip>~<id>~<domain>" form, weft's "<pod>.<namespace>", node metadata, and the Pod
 * object in the store.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pilot/generate.h"
#include "pilot/eds.h"

/* What the id says, before metadata and the store fill the rest. */
typedef struct id_parts {
    char *pod, *ns, *ip, *type;
} id_parts;

static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && cap)
        vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static bool is_ip(const char *s)
{
    unsigned char buf[16];
    return s && (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void parts_free(id_parts *p)
{
    free(p->pod);
    free(p->ns);
    free(p->ip);
    free(p->type);
    *p = (id_parts){0};
}

/* "<pod>.<namespace>" (namespaces hold no dot: split at the last one). Empty parts stay NULL.
 * Returns 0, -1 on OOM. */
static int split_pod_ns(const char *s, size_t len, id_parts *out)
{
    const char *dot = NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '.')
            dot = s + i;
    if (!dot || dot == s || (size_t)(dot - s) + 1 == len)
        return 0;
    out->pod = dup_n(s, (size_t)(dot - s));
    out->ns = dup_n(dot + 1, len - (size_t)(dot - s) - 1);
    return out->pod && out->ns ? 0 : -1;
}

/* Istio's form: exactly four '~'-separated parts. Returns 0, -1 (err set). */
static int parse_istio_id(const char *id, id_parts *out, char *err, size_t cap)
{
    const char *f[5] = {id};
    size_t n = 1;
    for (const char *c = id; *c; c++)
        if (*c == '~' && n < 5)
            f[n++] = c + 1;
    if (n != 4)
        return fail(err, cap, "node.id: want <type>~<ip>~<pod>.<namespace>~<domain>, got \"%s\"",
                    id);
    size_t tl = (size_t)(f[1] - f[0] - 1), il = (size_t)(f[2] - f[1] - 1);
    size_t pl = (size_t)(f[3] - f[2] - 1), dl = strcspn(f[3], ".");
    out->type = dup_n(f[0], tl);
    out->ip = il ? dup_n(f[1], il) : NULL;
    if (!out->type || (il && !out->ip) || split_pod_ns(f[2], pl, out) != 0)
        return fail(err, cap, "out of memory");
    if (!out->ns && dl > 0 && !(out->ns = dup_n(f[3], dl))) /* "<ns>.svc.cluster.local" */
        return fail(err, cap, "out of memory");
    if (strcmp(out->type, "sidecar") != 0 && strcmp(out->type, "router") != 0)
        return fail(err, cap, "node.id: unknown proxy type \"%s\" (want sidecar or router)",
                    out->type);
    if (out->ip && !is_ip(out->ip))
        return fail(err, cap, "node.id: \"%s\" is not an IP address", out->ip);
    return 0;
}

/* The string at key of metadata md into *out (a copy; stays NULL when absent or ""). */
static int md_str(const json_t *md, const char *key, char **out, char *err, size_t cap)
{
    json_t *v = json_object_get(md, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return fail(err, cap, "node.metadata.%s: want a string", key);
    if (json_string_length(v) == 0)
        return 0;
    *out = strdup(json_string_value(v));
    return *out ? 0 : fail(err, cap, "out of memory");
}

/* Replace *slot with the metadata string at key when present. */
static int md_override(const json_t *md, const char *key, char **slot, char *err, size_t cap)
{
    char *v = NULL;
    if (md_str(md, key, &v, err, cap) != 0)
        return -1;
    if (v) {
        free(*slot);
        *slot = v;
    }
    return 0;
}

/* LABELS: an object of strings, copied. */
static int md_labels(const json_t *md, json_t **out, char *err, size_t cap)
{
    json_t *v = json_object_get(md, "LABELS");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return fail(err, cap, "node.metadata.LABELS: want an object of strings");
    const char *k;
    json_t *lv;
    json_object_foreach(v, k, lv)
    {
        if (!json_is_string(lv))
            return fail(err, cap, "node.metadata.LABELS.%s: want a string", k);
    }
    *out = json_deep_copy(v);
    return *out ? 0 : fail(err, cap, "out of memory");
}

/* INSTANCE_IPS "ip1,ip2": the first entry, which must be an IP address. */
static int md_ip(const json_t *md, char **ip, char *err, size_t cap)
{
    char *all = NULL;
    if (md_str(md, "INSTANCE_IPS", &all, err, cap) != 0)
        return -1;
    if (!all)
        return 0;
    all[strcspn(all, ",")] = '\0';
    if (!is_ip(all)) {
        fail(err, cap, "node.metadata.INSTANCE_IPS: \"%s\" is not an IP address", all);
        free(all);
        return -1;
    }
    free(*ip);
    *ip = all;
    return 0;
}

static int md_kind(const json_t *md, const char *id_type, wf_proxy_kind *kind, char *err,
                   size_t cap)
{
    char *t = NULL;
    if (md_str(md, "PROXY_TYPE", &t, err, cap) != 0)
        return -1;
    const char *use = t ? t : id_type ? id_type : "sidecar";
    int rc = 0;
    if (!strcmp(use, "sidecar"))
        *kind = WF_PROXY_SIDECAR;
    else if (!strcmp(use, "router"))
        *kind = WF_PROXY_ROUTER;
    else
        rc = fail(err, cap, "node.metadata.PROXY_TYPE: \"%s\" (want sidecar or router)", use);
    free(t);
    return rc;
}

/* Labels, IP and workload name (Istio's GetDeployMetaFromPod: the pod's controller) from the
 * Pod object when the node did not give them. */
static int from_pod(const wf_store *store, wf_pilot_proxy *p)
{
    const wf_resource *pod = store ? wf_store_find(store, WF_KIND_POD, p->ns, p->pod) : NULL;
    if (!pod)
        return 0;
    if (!p->ip && pod->t.pod && pod->t.pod->pod_ip && *pod->t.pod->pod_ip &&
        !(p->ip = strdup(pod->t.pod->pod_ip)))
        return -1;
    char wl[256];
    if (!p->workload && !(p->workload = strdup(wf_eds_pod_workload_name(pod, wl, sizeof wl))))
        return -1;
    if (p->labels)
        return 0;
    p->labels = json_object();
    for (size_t i = 0; p->labels && i < pod->labels.n; i++) {
        const wf_kv *kv = &pod->labels.items[i];
        if (kv->key && kv->value &&
            json_object_set_new(p->labels, kv->key, json_string(kv->value)) != 0)
            return -1;
    }
    return p->labels ? 0 : -1;
}

/* Istio's StringBool metadata: "true" (any case) is true, anything else false. */
static int md_flag(const json_t *md, const char *key, bool *out, char *err, size_t cap)
{
    char *v = NULL;
    if (md_str(md, key, &v, err, cap) != 0)
        return -1;
    *out = v && strcasecmp(v, "true") == 0;
    free(v);
    return 0;
}

static int fill(const wf_xds_node *node, const wf_store *store, wf_pilot_proxy *p, char *err,
                size_t cap)
{
    id_parts ids = {0};
    const json_t *md = json_is_object(node->metadata) ? node->metadata : NULL;
    int rc = strchr(node->id, '~') ? parse_istio_id(node->id, &ids, err, cap)
                                   : split_pod_ns(node->id, strlen(node->id), &ids);
    if (rc != 0 && !strchr(node->id, '~'))
        fail(err, cap, "out of memory");
    p->pod = ids.pod;
    p->ns = ids.ns;
    p->ip = ids.ip;
    ids.pod = ids.ns = ids.ip = NULL;
    if (rc == 0)
        rc = md_kind(md, ids.type, &p->kind, err, cap);
    parts_free(&ids);
    if (rc != 0 || md_override(md, "NAME", &p->pod, err, cap) != 0 ||
        md_override(md, "NAMESPACE", &p->ns, err, cap) != 0)
        return -1;
    if (!p->pod || !p->ns)
        return fail(err, cap, "node.id: want <pod>.<namespace>, got \"%s\"", node->id);
    if (md_ip(md, &p->ip, err, cap) != 0 || md_labels(md, &p->labels, err, cap) != 0 ||
        md_str(md, "WEFT_LOCALHOST", &p->localhost, err, cap) != 0 ||
        md_str(md, "WEFT_ADMIN", &p->admin, err, cap) != 0 ||
        md_str(md, "ISTIO_VERSION", &p->version, err, cap) != 0 ||
        md_str(md, "CLUSTER_ID", &p->cluster_id, err, cap) != 0 ||
        md_str(md, "SERVICE_ACCOUNT", &p->service_account, err, cap) != 0 ||
        md_str(md, "WORKLOAD_NAME", &p->workload, err, cap) != 0)
        return -1;
    char *h10 = NULL;
    if (md_str(md, "HTTP10", &h10, err, cap) != 0)
        return -1;
    p->http10 = h10 && strcmp(h10, "1") == 0;
    free(h10);
    if (md_flag(md, "DNS_CAPTURE", &p->dns_capture, err, cap) != 0 ||
        md_flag(md, "DNS_AUTO_ALLOCATE", &p->dns_auto_allocate, err, cap) != 0)
        return -1;
    char *mode = NULL;
    if (md_str(md, "INTERCEPTION_MODE", &mode, err, cap) != 0)
        return -1;
    p->captured = mode && strcmp(mode, "REDIRECT") == 0 && !p->localhost;
    free(mode);
    if (p->localhost && !is_ip(p->localhost))
        return fail(err, cap, "node.metadata.WEFT_LOCALHOST: \"%s\" is not an IP address",
                    p->localhost);
    if (from_pod(store, p) != 0 || (!p->labels && !(p->labels = json_object())))
        return fail(err, cap, "out of memory");
    return 0;
}

int wf_pilot_proxy_from_node(const wf_xds_node *node, const wf_store *store, wf_pilot_proxy *out,
                             char *err, size_t cap)
{
    if (!out)
        return fail(err, cap, "no proxy to fill");
    *out = (wf_pilot_proxy){0};
    if (!node || !node->id || !*node->id)
        return fail(err, cap, "node.id: missing");
    if (!(out->id = strdup(node->id)))
        return fail(err, cap, "out of memory");
    if (fill(node, store, out, err, cap) != 0) {
        wf_pilot_proxy_free(out);
        return -1;
    }
    return 0;
}

void wf_pilot_proxy_free(wf_pilot_proxy *p)
{
    if (!p)
        return;
    free(p->id);
    free(p->pod);
    free(p->ns);
    free(p->ip);
    free(p->localhost);
    free(p->admin);
    free(p->version);
    free(p->cluster_id);
    free(p->service_account);
    free(p->workload);
    json_decref(p->labels);
    *p = (wf_pilot_proxy){0};
}
