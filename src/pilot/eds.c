/*
 * eds.c - a sidecar's ClusterLoadAssignments from the registry (pilot/serviceentry.h: Pods,
 * WorkloadEntries, ServiceEntry endpoints) and DestinationRule subsets (see eds.h).
 */
#include "pilot/eds.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/authn.h"
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
    wf_svc svc;
    const wf_service_port *port;
    const wf_resource *dr;   /* the DestinationRule that applies; NULL when none */
    const wf_subset *subset; /* NULL for the default cluster */
    const char *root_ns;     /* MeshConfig rootNamespace (PeerAuthentication's mesh scope) */
} eds_in;

/* The endpoints being collected. */
typedef struct eds_fill {
    const wf_store *s;
    const char *root_ns; /* MeshConfig rootNamespace: PeerAuthentication's mesh scope */
    json_t *lb;          /* lb_endpoints */
    bool for_cds;        /* inline load_assignment of a DNS cluster: no health fields */
    const char *dr_mode; /* mtls_checker's DestinationRule tls mode; NULL when none */
    json_int_t sum;      /* of the endpoint weights */
    bool oom;
} eds_fill;

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

static wf_svc_view view_of(const wf_store *s, const wf_cds_options *opt)
{
    return (wf_svc_view){.proxy_ns = opt->proxy_ns && *opt->proxy_ns ? opt->proxy_ns : NULL,
                         .suffix =
                             opt->domain_suffix ? opt->domain_suffix : wf_store_domain_suffix(s),
                         .scope = opt->scope};
}

/* ---- which service, port and subset a cluster name means ---- */

static const wf_subset *find_subset(const wf_resource *dr, const char *name, size_t len)
{
    for (size_t i = 0; dr && i < dr->t.dr->nsubsets; i++) {
        const char *sn = dr->t.dr->subsets[i].name;
        if (sn && strlen(sn) == len && memcmp(sn, name, len) == 0)
            return &dr->t.dr->subsets[i];
    }
    return NULL;
}

/* Fill in (svc, port, subset) for an EDS cluster name. Returns 1, 0 when the name has no
 * endpoints to build (in->svc cleared), -1 on OOM. */
static int resolve(const wf_store *s, const char *name, const wf_cds_options *opt, eds_in *in)
{
    wf_cluster_key k;
    char host[512];
    if (!wf_cluster_name_parse(name, &k) || k.direction_len != 8 ||
        memcmp(k.direction, "outbound", 8) != 0 || k.host_len == 0 || k.host_len >= sizeof host)
        return 0;
    snprintf(host, sizeof host, "%.*s", (int)k.host_len, k.host);
    const wf_svc_view v = view_of(s, opt);
    int rc = wf_svc_find(s, host, &v, &in->svc);
    if (rc <= 0)
        return rc;
    in->port = wf_svc_port(&in->svc, k.port);
    if (!in->port || in->svc.resolution != WF_SVC_EDS)
        goto none;
    const char *root = opt->root_namespace ? opt->root_namespace : WF_CDS_ROOT_NAMESPACE;
    in->root_ns = root;
    in->dr = wf_cds_find_destinationrule(s, host, in->svc.ns, v.proxy_ns, root, v.suffix);
    if (k.subset_len == 0)
        return 1;
    in->subset = find_subset(in->dr, k.subset, k.subset_len);
    if (in->subset)
        return 1;
none:
    wf_svc_clear(&in->svc);
    return 0;
}

/* ---- one endpoint ---- */

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

const char *wf_eds_pod_workload_name(const wf_resource *r, char *buf, size_t size)
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

/* "<workload>;<ns>;<canonical-name>;<canonical-revision>;<cluster>": a Pod's controller, a
 * WorkloadEntry's name, none for a ServiceEntry endpoint; ";;;;" for a DNS host. */
static json_t *workload_string(const wf_endpoint *ep)
{
    char buf[256];
    if (!ep->src)
        return json_string(";;;;");
    const char *wl = ep->src->kind == WF_KIND_POD
                         ? wf_eds_pod_workload_name(ep->src, buf, sizeof buf)
                     : ep->src->kind == WF_KIND_WORKLOADENTRY ? ep->src->name
                                                              : "";
    return json_sprintf("%s;%s;%s;%s;%s", wl, ep->src->ns,
                        str_or_empty(wf_endpoint_label(ep, LBL_CANON_NAME)),
                        str_or_empty(wf_endpoint_label(ep, LBL_CANON_REV)), CLUSTER_ID);
}

/* ---- the tlsMode tag (Istio's pilot/pkg/xds/endpoints/mtls_checker.go) ---- */

/* trafficPolicyTLSModeForPort: tls.mode of tp (absent mode = DISABLE, the enum's zero), then a
 * portLevelSettings entry for port that has tls. NULL when neither sets tls. */
static const char *tp_tls_mode(const wf_node *tp, int32_t port)
{
    const wf_node *tls = wf_map_get(tp, "tls");
    const wf_node *pls = wf_map_get(tp, "portLevelSettings");
    for (size_t i = 0; i < wf_seq_len(pls); i++) {
        const wf_node *e = wf_seq_at(pls, i);
        int64_t num = 0;
        if (wf_node_int(wf_node_path(e, "port.number"), &num) && num == port &&
            wf_map_get(e, "tls")) {
            tls = wf_map_get(e, "tls");
            break;
        }
    }
    if (!tls)
        return NULL;
    const char *m = wf_map_str(tls, "mode");
    return m ? m : "DISABLE";
}

/* tlsModeForDestinationRule: the default cluster reads the top-level policy, a subset cluster
 * its subset's policy only (no merge with the top level, as Istio's checker). */
static const char *dr_tls_mode(const wf_resource *dr, const wf_subset *subset, int32_t port)
{
    if (!dr || !dr->t.dr)
        return NULL;
    return tp_tls_mode(subset ? subset->traffic_policy : dr->t.dr->traffic_policy, port);
}

/* True when the effective PeerAuthentication of the endpoint's workload (ep->src, a Pod or a
 * WorkloadEntry; none for a DNS host) on its port ep->port is DISABLE: Istio's
 * NewMtlsPolicy(push, ep.Namespace, ep.Labels).GetMutualTLSModeForPort(ep.EndpointPort) ==
 * MTLSDisable, composed as pilot/authn.h does for the workload's own inbound chains. Out of
 * memory answers false (the endpoint keeps its tag: the client tries mTLS). */
static bool peer_mtls_disabled(const eds_fill *f, const wf_endpoint *ep)
{
    if (!ep->src || !ep->labels || ep->src->kind == WF_KIND_SERVICEENTRY || ep->port <= 0)
        return false;
    wf_peer_authn pa;
    if (wf_peer_authn_compose(f->s, f->root_ns, ep->src->ns, ep->labels, &pa) != 0)
        return false;
    bool off = wf_peer_authn_port_mode(&pa, (uint32_t)ep->port) == WF_MTLS_DISABLE;
    wf_peer_authn_free(&pa);
    return off;
}

/* checkMtlsEnabled + AppendLbEndpointMetadata: the tlsMode value to write, NULL for none. A
 * DestinationRule tls mode decides alone (ISTIO_MUTUAL keeps the label, any other mode drops
 * it); else only tlsMode "istio" on a workload whose port is not DISABLE. The value written is
 * the label's, never "disabled" or empty. */
static const char *tls_tag(const eds_fill *f, const wf_endpoint *ep)
{
    const char *label = wf_endpoint_label(ep, LBL_TLS_MODE);
    if (!label || !*label || strcmp(label, "disabled") == 0)
        return NULL;
    if (f->dr_mode)
        return strcmp(f->dr_mode, "ISTIO_MUTUAL") == 0 ? label : NULL;
    if (strcmp(label, "istio") != 0 || peer_mtls_disabled(f, ep))
        return NULL;
    return label;
}

static json_t *endpoint_metadata(const eds_fill *f, const wf_endpoint *ep)
{
    json_t *fm = json_pack("{s:{s:o}}", "istio", "workload", workload_string(ep));
    if (!fm)
        return NULL;
    const char *tls = tls_tag(f, ep);
    if (tls && json_object_set_new(fm, "envoy.transport_socket_match",
                                   json_pack("{s:s}", "tlsMode", tls)) != 0) {
        json_decref(fm);
        return NULL;
    }
    return json_pack("{s:o}", "filter_metadata", fm);
}

static json_t *lb_endpoint(const eds_fill *f, const wf_endpoint *ep)
{
    if (f->for_cds)
        return json_pack("{s:{s:{s:{s:s,s:i}}},s:o,s:I}", "endpoint", "address", "socket_address",
                         "address", ep->address, "port_value", (int)ep->port, "metadata",
                         endpoint_metadata(f, ep), "load_balancing_weight", (json_int_t)ep->weight);
    return json_pack("{s:{s:{s:{s:s,s:i}},s:{}},s:s,s:o,s:I}", "endpoint", "address",
                     "socket_address", "address", ep->address, "port_value", (int)ep->port,
                     "health_check_config", "health_status", "HEALTHY", "metadata",
                     endpoint_metadata(f, ep), "load_balancing_weight", (json_int_t)ep->weight);
}

static bool add_endpoint(const wf_endpoint *ep, void *arg)
{
    eds_fill *f = arg;
    if (json_array_append_new(f->lb, lb_endpoint(f, ep)) != 0) {
        f->oom = true;
        return false;
    }
    f->sum += ep->weight;
    return true;
}

/* ---- the assignment ---- */

json_t *wf_eds_locality_endpoints(const wf_store *store, const char *root_ns, const wf_svc *svc,
                                  const wf_service_port *sp, const wf_resource *dr,
                                  const wf_subset *subset, bool for_cds)
{
    eds_fill f = {.s = store,
                  .root_ns = root_ns,
                  .lb = json_array(),
                  .for_cds = for_cds,
                  .dr_mode = dr_tls_mode(dr, subset, sp->port)};
    json_t *out = json_array();
    if (!f.lb || !out)
        goto fail;
    wf_svc_endpoints(store, svc, sp, subset ? &subset->labels : NULL, add_endpoint, &f);
    if (f.oom)
        goto fail;
    if (json_array_size(f.lb) == 0) {
        json_decref(f.lb);
        return out;
    }
    json_t *grp = json_pack("{s:{},s:o,s:I}", "locality", "lb_endpoints", f.lb,
                            "load_balancing_weight", f.sum);
    if (json_array_append_new(out, grp) != 0)
        goto fail_out;
    return out;
fail:
    json_decref(f.lb);
fail_out:
    json_decref(out);
    return NULL;
}

static json_t *empty_assignment(const char *name)
{
    return json_pack("{s:s,s:s,s:[]}", "@type", CLA_TYPE, "cluster_name", name, "endpoints");
}

/* Fill an assignment whose endpoints list is still empty. Returns 0, or -1 on OOM. */
static int fill(json_t *cla, const wf_store *s, const eds_in *in)
{
    json_t *eps =
        wf_eds_locality_endpoints(s, in->root_ns, &in->svc, in->port, in->dr, in->subset, false);
    if (!eps)
        return -1;
    bool any = json_array_size(eps) > 0;
    if (json_object_set_new(cla, "endpoints", eps) != 0)
        return -1;
    if (!any)
        return 0;
    return json_object_set_new(cla, "policy",
                               json_pack("{s:i}", "overprovisioning_factor", OVERPROVISION));
}

/* The memo key of an assignment: the name and what resolve() found (the service's resource,
 * the DestinationRule, whose tls mode tags endpoints, and the subset), which is all fill()
 * reads. */
static void memo_key(char *buf, size_t cap, const char *name, const eds_in *in, int rc)
{
    snprintf(buf, cap, "%s|%p|%p|%p", name, rc > 0 ? (const void *)in->svc.res : NULL,
             rc > 0 ? (const void *)in->dr : NULL, rc > 0 ? (const void *)in->subset : NULL);
}

json_t *wf_eds_load_assignment_memo(const wf_store *store, const char *cluster_name,
                                    const wf_cds_options *opt, json_t *memo)
{
    if (!store || !cluster_name)
        return NULL;
    static const wf_cds_options none = {0};
    eds_in in = {0};
    char key[1100];
    json_t *cla = NULL;
    int rc = resolve(store, cluster_name, opt ? opt : &none, &in);
    if (rc >= 0 && memo && strlen(cluster_name) < 1000) {
        memo_key(key, sizeof key, cluster_name, &in, rc);
        if ((cla = json_object_get(memo, key)) != NULL) {
            wf_svc_clear(&in.svc);
            return json_incref(cla);
        }
    } else {
        memo = NULL;
    }
    cla = rc >= 0 ? empty_assignment(cluster_name) : NULL;
    if (cla && rc > 0 && fill(cla, store, &in) != 0)
        rc = -1;
    wf_svc_clear(&in.svc);
    if (!cla || rc < 0 || (memo && json_object_set(memo, key, cla) != 0)) {
        json_decref(cla);
        return NULL;
    }
    return cla;
}

json_t *wf_eds_load_assignment(const wf_store *store, const char *cluster_name,
                               const wf_cds_options *opt)
{
    return wf_eds_load_assignment_memo(store, cluster_name, opt, NULL);
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
