/*
 * eds.c - a sidecar's ClusterLoadAssignments from Services, Pods and DestinationRules (see
 * eds.h).
 */
#include "pilot/eds.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/naming.h"

#define CLA_TYPE       "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define CLUSTER_ID     "Kubernetes"
#define OVERPROVISION  140
#define LBL_CANON_NAME "service.istio.io/canonical-name"
#define LBL_CANON_REV  "service.istio.io/canonical-revision"
#define LBL_TLS_MODE   "security.istio.io/tlsMode"
#define LBL_HASH       "pod-template-hash"

/* What one assignment is built from. */
typedef struct eds_in {
    const wf_resource *svc;
    const wf_service_port *port;
    const wf_subset *subset; /* NULL for the default cluster */
    json_t *lb;              /* lb_endpoints being filled */
    bool oom;
} eds_in;

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

/* ---- which service, port and subset a cluster name means ---- */

static const wf_resource *find_service(const wf_store *s, const char *host, size_t len)
{
    char buf[512];
    if (len >= sizeof buf)
        return NULL;
    memcpy(buf, host, len);
    buf[len] = '\0';
    size_t n = 0;
    const wf_resource *const *v = wf_store_by_host(s, buf, &n);
    for (size_t i = 0; i < n; i++)
        if (v[i]->kind == WF_KIND_SERVICE && v[i]->t.service)
            return v[i];
    return NULL;
}

static const wf_service_port *find_port(const wf_service *svc, int32_t port)
{
    for (size_t i = 0; i < svc->nports; i++)
        if (svc->ports[i].port == port &&
            !(svc->ports[i].protocol && strcmp(svc->ports[i].protocol, "UDP") == 0))
            return &svc->ports[i];
    return NULL;
}

static const wf_subset *find_subset(const wf_resource *dr, const char *name, size_t len)
{
    for (size_t i = 0; dr && i < dr->t.dr->nsubsets; i++) {
        const char *sn = dr->t.dr->subsets[i].name;
        if (sn && strlen(sn) == len && memcmp(sn, name, len) == 0)
            return &dr->t.dr->subsets[i];
    }
    return NULL;
}

/* Fill in->svc, in->port and in->subset; false when the name has no endpoints to build. */
static bool resolve(const wf_store *s, const char *name, const wf_cds_options *opt, eds_in *in)
{
    wf_cluster_key k;
    if (!wf_cluster_name_parse(name, &k) || k.direction_len != 8 ||
        memcmp(k.direction, "outbound", 8) != 0 || k.host_len == 0)
        return false;
    in->svc = find_service(s, k.host, k.host_len);
    if (!in->svc)
        return false;
    in->port = find_port(in->svc->t.service, k.port);
    if (!in->port)
        return false;
    if (k.subset_len == 0)
        return true;
    const char *suffix = opt->domain_suffix ? opt->domain_suffix : wf_store_domain_suffix(s);
    const char *root = opt->root_namespace ? opt->root_namespace : WF_CDS_ROOT_NAMESPACE;
    const char *pns = opt->proxy_ns && *opt->proxy_ns ? opt->proxy_ns : NULL;
    char host[512];
    snprintf(host, sizeof host, "%.*s", (int)k.host_len, k.host);
    const wf_resource *dr = wf_cds_find_destinationrule(s, host, in->svc->ns, pns, root, suffix);
    in->subset = find_subset(dr, k.subset, k.subset_len);
    return in->subset != NULL;
}

/* ---- one endpoint ---- */

/* Kubernetes' endpoints controller: a pod with an IP that has not terminated. */
static bool pod_ready(const wf_pod *p)
{
    if (!p->pod_ip || !*p->pod_ip)
        return false;
    return !(p->phase && (!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed")));
}

/* The pod's port for the Service port; 0 when a named targetPort is not a container port. */
static int32_t pod_port(const wf_pod *p, const wf_service_port *sp)
{
    if (!sp->target_name)
        return sp->target_port > 0 ? sp->target_port : sp->port;
    for (size_t c = 0; c < p->spec.ncontainers; c++) {
        const wf_container *ct = &p->spec.containers[c];
        for (size_t i = 0; i < ct->nports; i++)
            if (ct->ports[i].name && strcmp(ct->ports[i].name, sp->target_name) == 0)
                return ct->ports[i].container_port;
    }
    return 0;
}

/* The controlling ownerReference of a pod (the first one when none says controller). */
static const wf_node *controller_ref(const wf_resource *r)
{
    const wf_node *refs = wf_map_get(r->metadata, "ownerReferences");
    size_t n = wf_seq_len(refs);
    for (size_t i = 0; i < n; i++) {
        bool ctl = false;
        if (wf_node_bool(wf_map_get(wf_seq_at(refs, i), "controller"), &ctl) && ctl)
            return wf_seq_at(refs, i);
    }
    return n ? wf_seq_at(refs, 0) : NULL;
}

/* Istio's workload name (kube.GetDeployMetaFromPod), written into buf. */
static const char *workload_name(const wf_resource *r, char *buf, size_t size)
{
    if (r->synthetic && r->owner)
        return r->owner->name;
    const wf_node *ref = controller_ref(r);
    const char *name = wf_map_str(ref, "name");
    if (!name || !*name)
        return r->name;
    const char *kind = wf_map_str(ref, "kind");
    const char *hash = wf_kvs_get(&r->labels, LBL_HASH);
    size_t nl = strlen(name), hl = hash ? strlen(hash) : 0;
    if (kind && !strcmp(kind, "ReplicaSet") && hl && nl > hl + 1 && name[nl - hl - 1] == '-' &&
        !strcmp(name + nl - hl, hash)) {
        snprintf(buf, size, "%.*s", (int)(nl - hl - 1), name);
        return buf;
    }
    return name;
}

static json_t *endpoint_metadata(const wf_resource *r)
{
    char buf[256];
    json_t *fm =
        json_pack("{s:{s:s++++++++}}", "istio", "workload", workload_name(r, buf, sizeof buf), ";",
                  r->ns, ";", str_or_empty(wf_kvs_get(&r->labels, LBL_CANON_NAME)), ";",
                  str_or_empty(wf_kvs_get(&r->labels, LBL_CANON_REV)), ";", CLUSTER_ID);
    if (!fm)
        return NULL;
    const char *tls = wf_kvs_get(&r->labels, LBL_TLS_MODE);
    if (tls && *tls && strcmp(tls, "disabled") != 0 &&
        json_object_set_new(fm, "envoy.transport_socket_match",
                            json_pack("{s:s}", "tlsMode", tls)) != 0) {
        json_decref(fm);
        return NULL;
    }
    return json_pack("{s:o}", "filter_metadata", fm);
}

static json_t *lb_endpoint(const wf_resource *r, int32_t port)
{
    return json_pack("{s:{s:{s:{s:s,s:i}},s:{}},s:s,s:o,s:i}", "endpoint", "address",
                     "socket_address", "address", r->t.pod->pod_ip, "port_value", (int)port,
                     "health_check_config", "health_status", "HEALTHY", "metadata",
                     endpoint_metadata(r), "load_balancing_weight", 1);
}

static bool add_pod(const wf_resource *r, void *arg)
{
    eds_in *in = arg;
    const wf_pod *p = r->t.pod;
    if (!p || !pod_ready(p))
        return true;
    if (in->subset && !wf_kvs_subset(&in->subset->labels, &r->labels))
        return true;
    int32_t port = pod_port(p, in->port);
    if (port <= 0 || port > 65535)
        return true;
    if (json_array_append_new(in->lb, lb_endpoint(r, port)) != 0) {
        in->oom = true;
        return false;
    }
    return true;
}

/* ---- the assignment ---- */

static json_t *empty_assignment(const char *name)
{
    return json_pack("{s:s,s:s,s:[]}", "@type", CLA_TYPE, "cluster_name", name, "endpoints");
}

/* Fill an assignment whose endpoints list is still empty. Returns 0, or -1 on OOM. */
static int fill(json_t *cla, const wf_store *s, eds_in *in)
{
    const wf_service *svc = in->svc->t.service;
    if (!svc->has_selector)
        return 0;
    in->lb = json_array();
    if (!in->lb)
        return -1;
    wf_store_pods_matching(s, in->svc->ns, &svc->selector, add_pod, in);
    size_t n = json_array_size(in->lb);
    if (in->oom || n == 0) {
        json_decref(in->lb);
        return in->oom ? -1 : 0;
    }
    json_t *grp = json_pack("{s:{},s:o,s:I}", "locality", "lb_endpoints", in->lb,
                            "load_balancing_weight", (json_int_t)n);
    if (json_array_append_new(json_object_get(cla, "endpoints"), grp) != 0)
        return -1;
    return json_object_set_new(cla, "policy",
                               json_pack("{s:i}", "overprovisioning_factor", OVERPROVISION));
}

json_t *wf_eds_load_assignment(const wf_store *store, const char *cluster_name,
                               const wf_cds_options *opt)
{
    if (!store || !cluster_name)
        return NULL;
    static const wf_cds_options none = {0};
    json_t *cla = empty_assignment(cluster_name);
    eds_in in = {0};
    if (!cla || !resolve(store, cluster_name, opt ? opt : &none, &in))
        return cla;
    if (fill(cla, store, &in) != 0) {
        json_decref(cla);
        return NULL;
    }
    return cla;
}

/* service_name of an EDS cluster, NULL for other cluster types. */
static const char *eds_service_name(json_t *c)
{
    const char *type = json_string_value(json_object_get(c, "type"));
    if (!type || strcmp(type, "EDS") != 0)
        return NULL;
    json_t *cfg = json_object_get(c, "eds_cluster_config");
    const char *sn = json_string_value(json_object_get(cfg, "service_name"));
    return sn ? sn : json_string_value(json_object_get(c, "name"));
}

json_t *wf_eds_sidecar_assignments(const wf_store *store, const wf_cds_options *opt)
{
    json_t *clusters = wf_cds_sidecar_clusters(store, opt);
    json_t *out = clusters ? json_array() : NULL;
    if (!out) {
        json_decref(clusters);
        return NULL;
    }
    size_t i;
    json_t *c;
    json_array_foreach(clusters, i, c)
    {
        const char *name = eds_service_name(c);
        if (name && json_array_append_new(out, wf_eds_load_assignment(store, name, opt)) != 0) {
            json_decref(out);
            out = NULL;
            break;
        }
    }
    json_decref(clusters);
    return out;
}
