/*
 * localmesh_state.c - the files of the local mesh's state folder (localmesh_state.h).
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/localmesh_netns.h"
#include "cli/localmesh_state.h"
#include "cli/localmesh_tokens.h"
#include "cli/localmesh_sys.h"
#include "model/unimplemented.h"
#include "proxy/agent/agent_bootstrap.h"

#define ISTIO_VERSION "weft-" WEFT_VERSION
#define PROXY_IMAGE   "docker.io/istio/proxyv2:weft"

/* ---- JSON helpers: a failed allocation makes the whole document NULL ----------------------- */

static json_t *labels_json(const wf_lm_pod *pod)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < pod->nlabels; i++)
        if (json_object_set_new(o, pod->labels[i].key, json_string(pod->labels[i].value)) != 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* Istio's stats_config for the pod (proxy_stats_config.h), INSTANCE_IPS = the pod IP. */
static json_t *stats_config(const wf_lm_pod *pod)
{
    const char *ips[] = {pod->ip};
    wf_psc_in in = pod->stats;
    in.ips = (wf_psc_list){ips, 1};
    return wf_psc_stats_config(&in);
}

/* pilot-agent's ISTIO_META_* environment (here the pod's proxyMetadata) as node metadata, the
 * prefix dropped, as pilot-agent builds its bootstrap (pkg/bootstrap: getNodeMetaData). */
static int istio_meta_env(json_t *m, const wf_lm_pod *pod)
{
    static const char prefix[] = "ISTIO_META_";
    for (size_t i = 0; i < pod->nproxy_env; i++) {
        const char *kv = pod->proxy_env[i];
        const char *eq = strchr(kv, '=');
        size_t plen = sizeof prefix - 1;
        if (!eq || strncmp(kv, prefix, plen) != 0 || eq == kv + plen)
            continue;
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv - plen), kv + plen);
        if (json_object_set_new(m, key, json_string(eq + 1)) != 0)
            return -1;
    }
    return 0;
}

/* How the pod's traffic reaches its sidecar. With --capture: Istio's REDIRECT mode
 * (INTERCEPTION_MODE, istio-init's rules), the app knowing nothing of the sidecar; otherwise
 * weft's explicit mode, outbound listeners on the pod's localhost (WEFT_LOCALHOST). In a
 * network namespace the agent's DNS proxy runs (DNS_CAPTURE, as ISTIO_META_DNS_CAPTURE). */
static int traffic_metadata(json_t *m, const wf_lm_plan *p, const wf_lm_pod *pod)
{
    if (pod->gateway)
        return 0;
    if (p->capture)
        return json_object_set_new(m, "INTERCEPTION_MODE", json_string("REDIRECT"));
    return json_object_set_new(m, "WEFT_LOCALHOST", json_string(pod->localhost));
}

static json_t *node_metadata(const wf_lm_plan *p, const wf_lm_pod *pod)
{
    char admin[40];
    snprintf(admin, sizeof admin, "%s:%d", pod->ip, WF_LM_ADMIN_PORT);
    json_t *m = json_pack("{s:s,s:s,s:o,s:s,s:s,s:s,s:s,s:s}", "NAME", pod->name, "NAMESPACE",
                          pod->ns, "LABELS", labels_json(pod), "INSTANCE_IPS", pod->ip,
                          "PROXY_TYPE", pod->gateway ? "router" : "sidecar", "ISTIO_VERSION",
                          ISTIO_VERSION, "CLUSTER_ID", "Kubernetes", "WEFT_ADMIN", admin);
    if (m && pod->service_account &&
        json_object_set_new(m, "SERVICE_ACCOUNT", json_string(pod->service_account)) != 0)
        goto fail;
    if (m && (istio_meta_env(m, pod) != 0 || traffic_metadata(m, p, pod) != 0 ||
              (pod->netns && json_object_set_new(m, "DNS_CAPTURE", json_string("true")) != 0)))
        goto fail;
    /* what istiod's injector puts in the proxy's metadata for Istio's metrics (source_workload,
     * the peer's OWNER): the workload and its Kubernetes owner reference */
    const char *wl = *pod->owner ? pod->owner : WF_LM_GATEWAY_NAME;
    char kind[64];
    size_t k = 0;
    for (const char *c = *pod->owner_kind ? pod->owner_kind : "Deployment"; *c && k < 60; c++)
        kind[k++] = (char)tolower((unsigned char)*c);
    kind[k] = 0;
    json_t *owner =
        json_sprintf("kubernetes://apis/apps/v1/namespaces/%s/%ss/%s", pod->ns, kind, wl);
    if (!m) {
        json_decref(owner);
        return NULL;
    }
    if (json_object_set_new(m, "OWNER", owner) != 0 || /* takes owner, also on failure */
        json_object_set_new(m, "WORKLOAD_NAME", json_string(wl)) != 0)
        goto fail;
    return m;
fail:
    json_decref(m);
    return NULL;
}

/* The pod's pilot-agent bootstrap (agent_bootstrap.h): admin and the Prometheus listener on the
 * pod IP (Istio binds 0.0.0.0; here each pod has its own address); xds-grpc to pilot's secure
 * port 15012 over TLS, as Istio's sidecars reach istiod: trusted_ca the root of the pod's
 * namespace the supervisor keeps in sync (istio-ca-root-cert, localmesh_roots.h; weft-proxy
 * reads it again before each connection), istiod's SAN and SNI istiod.istio-system.svc. The
 * stream carries the pod's token (--token-path), which pilot authenticates (XDS_AUTH). */
json_t *wf_lm_bootstrap_json(const wf_lm_plan *p, const wf_lm_pod *pod)
{
    char id[600], root[4400];
    snprintf(id, sizeof id, "%s.%s", pod->name, pod->ns);
    snprintf(root, sizeof root, "%s/%s/%s/root-cert.pem", p->state, WF_LM_ROOTS_DIR, pod->ns);
    wp_agent_bootstrap b = {.node_id = id,
                            .cluster = pod->cluster,
                            .metadata = node_metadata(p, pod),
                            .stats_config = stats_config(pod),
                            .admin_ip = pod->ip,
                            .admin_port = WF_LM_ADMIN_PORT,
                            .prom_ip = pod->ip,
                            .xds_ip = p->pilot_ip ? p->pilot_ip : "127.0.0.1",
                            .xds_port = WF_LM_SECURE_PORT,
                            .xds_root = root,
                            .xds_san = WF_LM_ISTIOD_SAN};
    return wp_agent_bootstrap_json(&b);
}

/* ---- Pod and Service objects -------------------------------------------------------------- */

static json_t *container_json(const wf_lm_container *c)
{
    json_t *ports = json_array();
    for (size_t i = 0; ports && i < c->nports; i++) {
        json_t *port = json_pack("{s:i,s:s}", "containerPort", c->ports[i].port, "protocol", "TCP");
        if (!port ||
            (c->ports[i].name &&
             json_object_set_new(port, "name", json_string(c->ports[i].name)) != 0) ||
            json_array_append_new(ports, port) != 0) {
            json_decref(port);
            json_decref(ports);
            return NULL;
        }
    }
    return json_pack("{s:s,s:s,s:o}", "name", c->name, "image", c->image, "ports", ports);
}

/* istio-proxy as the injector adds it (a gateway's runs as the only container). */
static json_t *proxy_container(const wf_lm_pod *pod)
{
    if (pod->gateway)
        return json_pack("{s:s,s:s,s:[{s:i,s:s},{s:i,s:s},{s:i,s:s,s:s}]}", "name", "istio-proxy",
                         "image", PROXY_IMAGE, "ports", "containerPort", WF_LM_GW_HTTP_PORT,
                         "protocol", "TCP", "containerPort", 8443, "protocol", "TCP",
                         "containerPort", WF_LM_HEALTH_PORT, "protocol", "TCP", "name",
                         "status-port");
    return json_pack("{s:s,s:s,s:[{s:i,s:s,s:s}]}", "name", "istio-proxy", "image", PROXY_IMAGE,
                     "ports", "containerPort", 15090, "protocol", "TCP", "name", "http-envoy-prom");
}

static json_t *pod_spec(const wf_lm_pod *pod)
{
    json_t *containers = json_array();
    for (size_t i = 0; containers && i < pod->ncontainers; i++)
        if (json_array_append_new(containers, container_json(&pod->containers[i])) != 0)
            goto fail;
    if (containers && (pod->sidecar || pod->gateway) &&
        json_array_append_new(containers, proxy_container(pod)) != 0)
        goto fail;
    json_t *spec = json_pack("{s:o}", "containers", containers);
    if (spec && pod->service_account &&
        json_object_set_new(spec, "serviceAccountName", json_string(pod->service_account)) != 0) {
        json_decref(spec);
        return NULL;
    }
    return spec;
fail:
    json_decref(containers);
    return NULL;
}

/* The pod's annotations: what the injector writes (sidecar.istio.io/status) and the template's
 * traffic.sidecar.istio.io ones istio-init got (as a Pod carries its template's), which
 * `describe pod` reads. */
static json_t *pod_annotations(const wf_lm_pod *pod)
{
#define TS "traffic.sidecar.istio.io/"
    const struct {
        const char *key, *value;
    } t[] = {{TS "includeOutboundIPRanges", pod->capture.include_out_cidrs},
             {TS "excludeOutboundIPRanges", pod->capture.exclude_out_cidrs},
             {TS "includeInboundPorts", pod->capture.include_in_ports},
             {TS "excludeInboundPorts", pod->capture.exclude_in_ports},
             {TS "excludeOutboundPorts", pod->capture.exclude_out_ports},
             {TS "includeOutboundPorts", pod->capture.include_out_ports}};
#undef TS
    json_t *a = json_pack("{s:s}", "sidecar.istio.io/status",
                          "{\"containers\":[\"istio-proxy\"],\"revision\":\"default\"}");
    for (size_t i = 0; a && i < sizeof t / sizeof t[0]; i++)
        if (t[i].value && json_object_set_new(a, t[i].key, json_string(t[i].value)) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *wf_lm_pod_json(const wf_lm_plan *p, const wf_lm_pod *pod)
{
    (void)p;
    json_t *meta = json_pack("{s:s,s:s,s:o}", "name", pod->name, "namespace", pod->ns, "labels",
                             labels_json(pod));
    if (meta && (pod->sidecar || pod->gateway) &&
        json_object_set_new(meta, "annotations", pod_annotations(pod)) != 0) {
        json_decref(meta);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:{s:s,s:s,s:[{s:s}],s:[{s:s,s:s}]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", meta, "spec", pod_spec(pod), "status", "phase",
                     "Running", "podIP", pod->ip, "podIPs", "ip", pod->ip, "conditions", "type",
                     "Ready", "status", "True");
}

json_t *wf_lm_gateway_service_json(void)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s},s:{s:s}},s:{s:s,s:{s:s,s:s},"
                     "s:[{s:s,s:i,s:i,s:i,s:s},{s:s,s:i,s:i,s:i,s:s}]}}",
                     "apiVersion", "v1", "kind", "Service", "metadata", "name", WF_LM_GATEWAY_NAME,
                     "namespace", WF_LM_GATEWAY_NS, "labels", "app", "istio-ingressgateway",
                     "istio", "ingressgateway", "annotations", WF_UNIMPL_GENERATED_ANNOTATION,
                     "weftctl up", "spec", "type", "NodePort", "selector", "app",
                     "istio-ingressgateway", "istio", "ingressgateway", "ports", "name", "http2",
                     "port", 80, "targetPort", WF_LM_GW_HTTP_PORT, "nodePort", WF_LM_GW_HOST_PORT,
                     "protocol", "TCP", "name", "https", "port", 443, "targetPort",
                     WF_LM_GW_HTTPS_PORT, "nodePort", WF_LM_GW_HTTPS_HOST_PORT, "protocol", "TCP");
}

/* ---- writing ------------------------------------------------------------------------------ */

static int write_json(const char *path, json_t *doc, wf_strbuf *err)
{
    if (!doc)
        return wf_strbuf_printf(err, "out of memory writing %s", path), -1;
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!text)
        return wf_strbuf_printf(err, "out of memory writing %s", path), -1;
    size_t len = strlen(text);
    int rc = wf_lm_write_file(path, text, len, err);
    free(text);
    return rc;
}

static int make_dirs(const wf_lm_plan *p, wf_strbuf *err)
{
    char path[4200];
    static const char *const subs[] = {"pods", "bootstrap", "logs"};
    if (wf_lm_mkdirs(p->state, err) != 0)
        return -1;
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", p->state, subs[i]);
        if (wf_lm_mkdirs(path, err) != 0)
            return -1;
    }
    snprintf(path, sizeof path, "%s/bootstrap", p->state);
    return wf_lm_clean_dir(p->pods_dir, ".json", err) || wf_lm_clean_dir(path, ".bootstrap", err)
               ? -1
               : 0;
}

int wf_lm_state_prepare(const wf_lm_plan *p, wf_strbuf *err)
{
    if (make_dirs(p, err) != 0 || wf_lm_tokens_write(p, (int64_t)time(NULL), err) != 0)
        return -1;
    if (p->mesh_text &&
        wf_lm_write_file(p->mesh_file, p->mesh_text, strlen(p->mesh_text), err) != 0)
        return -1;
    for (size_t i = 0; i < p->npods; i++) {
        const wf_lm_pod *pod = &p->pods[i];
        if (pod->error) /* not started (localmesh_plan.h) */
            continue;
        if (write_json(pod->pod_file, wf_lm_pod_json(p, pod), err) != 0 ||
            (pod->bootstrap && write_json(pod->bootstrap, wf_lm_bootstrap_json(p, pod), err) != 0))
            return -1;
    }
    if (p->gateway_service) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.%s.service.json", p->pods_dir, WF_LM_GATEWAY_NS,
                 WF_LM_GATEWAY_NAME);
        if (write_json(path, wf_lm_gateway_service_json(), err) != 0)
            return -1;
    }
    return 0;
}

/* ---- MeshConfig from a ConfigMap ---------------------------------------------------------- */

/* data.mesh of ConfigMap istio in file (istio-system preferred), copied; NULL when none. */
static char *configmap_mesh(const char *file)
{
    wf_store *s = wf_store_new();
    char *out = NULL;
    if (s && wf_store_load_path(s, file, NULL, NULL) == 0 &&
        wf_store_finalize(s, NULL, false) == 0) {
        size_t n;
        const wf_resource *const *cms = wf_store_kind(s, WF_KIND_CONFIGMAP, &n);
        const char *best = NULL;
        for (size_t i = 0; i < n; i++) {
            const char *text = wf_node_str(wf_node_path(cms[i]->root, "data.mesh"));
            if (text && strcmp(cms[i]->name, "istio") == 0 &&
                (!best || strcmp(cms[i]->ns, WF_LM_GATEWAY_NS) == 0))
                best = text;
        }
        out = best ? strdup(best) : NULL;
    }
    wf_store_free(s);
    return out;
}

int wf_lm_mesh_refresh(const wf_lm_plan *p, char **last, bool *changed, wf_strbuf *err)
{
    *changed = false;
    if (!p->mesh_cm_file || !p->mesh_text)
        return 0;
    char *text = configmap_mesh(p->mesh_cm_file);
    const char *prev = *last ? *last : p->mesh_text;
    if (!text || strcmp(text, prev) == 0) {
        free(text);
        return 0;
    }
    if (wf_lm_write_file(p->mesh_file, text, strlen(text), err) != 0) {
        free(text);
        return -1;
    }
    free(*last);
    *last = text;
    *changed = true;
    return 0;
}

/* ---- mesh.json ---------------------------------------------------------------------------- */

static json_t *pod_entry(const wf_lm_plan *p, const wf_lm_pod *pod)
{
    char admin[40], owner[600];
    snprintf(admin, sizeof admin, "%s:%d", pod->ip, WF_LM_ADMIN_PORT);
    snprintf(owner, sizeof owner, "%s%s%s", pod->owner_kind, *pod->owner ? "/" : "", pod->owner);
    json_t *e = json_pack(
        "{s:s,s:s,s:o,s:s,s:s,s:s,s:i,s:b,s:b,s:s,s:s?}", "name", pod->name, "namespace", pod->ns,
        "labels", labels_json(pod), "ip", pod->ip, "localhost", pod->localhost, "admin", admin,
        "statusPort", pod->sidecar || pod->gateway ? WF_LM_STATUS_PORT : 0, "sidecar", pod->sidecar,
        "gateway", pod->gateway, "owner", owner, "bootstrap", pod->bootstrap);
    if (e && pod->gateway &&
        json_object_set_new(e, "healthPort", json_integer(WF_LM_HEALTH_PORT)) != 0) {
        json_decref(e);
        return NULL;
    }
    if (e && pod->clash && json_object_set_new(e, "clash", json_string(pod->clash)) != 0) {
        json_decref(e);
        return NULL;
    }
    if (e && pod->error && json_object_set_new(e, "error", json_string(pod->error)) != 0) {
        json_decref(e);
        return NULL;
    }
    if (e && pod->netns && json_object_set_new(e, "netns", json_string(pod->netns)) != 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static json_t *proc_entry(const wf_lm_plan *p, const wf_lm_proc *proc, const wf_lm_proc_status *st)
{
    const wf_lm_pod *pod = proc->pod < p->npods ? &p->pods[proc->pod] : NULL;
    json_t *argv = json_array();
    for (size_t i = 0; argv && proc->argv[i]; i++)
        if (json_array_append_new(argv, json_string(proc->argv[i])) != 0) {
            json_decref(argv);
            return NULL;
        }
    json_t *e = json_pack(
        "{s:s,s:s,s:s?,s:s?,s:s?,s:i,s:s,s:i,s:s,s:o,s:I,s:I}", "name", proc->name, "kind",
        wf_lm_kind_name(proc->kind), "pod", pod ? pod->name : NULL, "namespace",
        pod ? pod->ns : NULL, "podIP", pod ? pod->ip : NULL, "pid", st ? (int)st->pid : 0, "state",
        st && st->state ? st->state : "planned", "restarts", st ? (int)st->restarts : 0, "log",
        proc->log, "argv", argv, "startedAt", (json_int_t)(st ? st->started_ms : 0), "startTicks",
        (json_int_t)(st ? st->start_ticks : 0));
    if (e && proc->netns && json_object_set_new(e, "netns", json_string(proc->netns)) != 0) {
        json_decref(e);
        return NULL;
    }
    if (e && st && st->last_exit &&
        json_object_set_new(e, "lastExit", json_string(st->last_exit)) != 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static json_t *gateway_entry(const wf_lm_plan *p)
{
    if (p->gateway >= p->npods)
        return json_null();
    const wf_lm_pod *gw = &p->pods[p->gateway];
    char url[64], target[40];
    snprintf(url, sizeof url, "http://%s:%d", WF_LM_GW_HOST_IP, WF_LM_GW_HOST_PORT);
    snprintf(target, sizeof target, "%s:%d", gw->ip, WF_LM_GW_HTTP_PORT);
    return json_pack("{s:s,s:s,s:s,s:s}", "url", url, "pod", gw->name, "namespace", gw->ns,
                     "target", target);
}

/* How the pods are networked: {"mode": "explicit"}, or netns with the namespace prefix, the
 * node namespace, the host link and the CIDR (localmesh_netns.h). */
static json_t *pod_network(const wf_lm_plan *p)
{
    if (p->podnet != WF_LM_PODNET_NETNS)
        return json_pack("{s:s}", "mode", "explicit");
    wf_lm_netns_names n;
    wf_lm_netns_names_of(p->state, &n);
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:b}", "mode", "netns", "cidr", WF_LM_NETNS_CIDR,
                     "prefix", n.prefix, "node", n.node, "hostLink", n.host_link, "hostIP",
                     WF_LM_NETNS_HOST_IP, "capture", p->capture);
}

json_t *wf_lm_mesh_json(const wf_lm_plan *p, const wf_lm_proc_status *status, pid_t supervisor_pid)
{
    json_t *pods = json_array(), *procs = json_array(), *warnings = json_array();
    for (size_t i = 0; warnings && i < p->nwarnings; i++)
        if (json_array_append_new(warnings, json_string(p->warnings[i])) != 0)
            goto fail;
    for (size_t i = 0; pods && i < p->npods; i++)
        if (json_array_append_new(pods, pod_entry(p, &p->pods[i])) != 0)
            goto fail;
    for (size_t i = 0; procs && i < p->nprocs; i++)
        if (json_array_append_new(procs, proc_entry(p, &p->procs[i], status ? &status[i] : NULL)))
            goto fail;
    return json_pack("{s:s,s:s,s:{s:s},s:s,s:s,s:s,s:s?,s:{s:i},s:{s:s,s:s,s:s},s:o,s:o,s:o,s:o,"
                     "s:o,s:o}",
                     "apiVersion", "weft.dev/v1", "kind", "LocalMesh", "metadata", "name",
                     "local-mesh", "dir", p->dir, "state", p->state, "defaultNamespace",
                     p->default_ns, "meshConfig", p->mesh_file, "supervisor", "pid",
                     (int)supervisor_pid, "pilot", "xds", WF_LM_XDS_ADDR, "secureXds",
                     p->secure_addr ? p->secure_addr : WF_LM_SECURE_ADDR, "monitoring",
                     WF_LM_MON_ADDR, "gateway", gateway_entry(p), "pods", pods, "processes", procs,
                     "injectorWarnings", warnings, "meshConfigSource",
                     p->mesh_cm_file ? json_pack("{s:s,s:i,s:i}", "file", p->mesh_cm_file, "line0",
                                                 (int)p->mesh_line0, "col0", (int)p->mesh_col0)
                                     : json_null(),
                     "podNetwork", pod_network(p));
fail:
    json_decref(pods);
    json_decref(procs);
    json_decref(warnings);
    return NULL;
}

int wf_lm_write_mesh_json(const wf_lm_plan *p, const wf_lm_proc_status *status,
                          pid_t supervisor_pid, wf_strbuf *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", p->state, WF_LM_MESH_JSON);
    return write_json(path, wf_lm_mesh_json(p, status, supervisor_pid), err);
}

/* ---- the last mesh started (status and down without a DIR) ---- */

static char *last_mesh_path(void)
{
    const char *rt = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    char buf[4096];
    if (rt && rt[0] == '/' && stat(rt, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(buf, sizeof(buf), "%s/weft-last-mesh", rt);
    else
        snprintf(buf, sizeof(buf), "/tmp/weft-last-mesh-%u", (unsigned)getuid());
    return strdup(buf);
}

/* The record may sit in a shared folder (/tmp): it is never written through a symlink, and
 * only read when it is a regular file of this user that nobody else may write. */
int wf_lm_remember_state(const char *state)
{
    char *path = last_mesh_path();
    if (!path)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    free(path);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 022))) {
        close(fd);
        return -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = fprintf(f, "%s\n", state) < 0 ? -1 : 0;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

char *wf_lm_recall_state(void)
{
    char *path = last_mesh_path();
    int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    free(path);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
                    (st.st_mode & 022))) {
        close(fd);
        return NULL;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char buf[4096];
    char *line = fgets(buf, sizeof(buf), f);
    fclose(f);
    if (!line)
        return NULL;
    buf[strcspn(buf, "\n")] = 0;
    return buf[0] == '/' ? strdup(buf) : NULL;
}
