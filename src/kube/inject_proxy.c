/*
 * inject_proxy.c - the containers Istio's default sidecar template adds
 * (manifests/charts/istio-control/istio-discovery/files/injection-template.yaml;
 * ../shared/reference/kubernetes.md §3.4; REDIRECT, no CNI), with weft's programs: istio-init
 * runs `weft-proxy istio-iptables` (src/capture/iptables_cmd.h, Istio's flags) and
 * istio-proxy runs the image's weft-proxy with pilot-agent's `proxy sidecar` arguments and
 * Istio's environment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/inject_internal.h"
#include "kube/inject_iptables.h"

static const char *ann(const inj_ctx *x, const char *key)
{
    return wf_inj_annotation(x->pod, key);
}

/* annotation, else the values' default (Istio's `annotation .ObjectMeta key default`). */
static const char *ann_or(const inj_ctx *x, const char *key, const char *value_path,
                          const char *def)
{
    const char *a = ann(x, key);
    return a ? a : wf_inj_value_str(x->cfg, value_path, def);
}

/* <hub>/<image>:<tag>, or the image itself when it has a '/' (the template's rule). */
static char *image(const inj_ctx *x, const char *value_path)
{
    const char *a = ann(x, "sidecar.istio.io/proxyImage");
    const char *img = a && strchr(a, '/') ? a : wf_inj_value_str(x->cfg, value_path, "weft");
    if (strchr(img, '/'))
        return strdup(img);
    const char *hub = wf_inj_value_str(x->cfg, "global.hub", "");
    const char *tag = wf_inj_value_str(x->cfg, "global.tag", "");
    size_t n = strlen(hub) + strlen(img) + strlen(tag) + 3;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s:%s", hub, img, tag);
    return s;
}

static int push(json_t *arr, const char *s)
{
    return json_array_append_new(arr, json_string(s ? s : ""));
}

static json_t *resources(const inj_ctx *x)
{
    const char *cpu = ann(x, "sidecar.istio.io/proxyCPU");
    const char *mem = ann(x, "sidecar.istio.io/proxyMemory");
    const char *cpul = ann(x, "sidecar.istio.io/proxyCPULimit");
    const char *meml = ann(x, "sidecar.istio.io/proxyMemoryLimit");
    if (!cpu && !mem && !cpul && !meml) {
        const json_t *r = wf_inj_value(x->cfg, "global.proxy.resources");
        return json_is_object(r) ? json_deep_copy(r) : json_object();
    }
    json_t *r = json_object(), *req = json_object(), *lim = json_object();
    if (!r || !req || !lim) {
        json_decref(r), json_decref(req), json_decref(lim);
        return NULL;
    }
    if (cpu)
        json_object_set_new(req, "cpu", json_string(cpu));
    if (mem)
        json_object_set_new(req, "memory", json_string(mem));
    if (cpul)
        json_object_set_new(lim, "cpu", json_string(cpul));
    if (meml)
        json_object_set_new(lim, "memory", json_string(meml));
    if (json_object_size(req))
        json_object_set(r, "requests", req);
    if (json_object_size(lim))
        json_object_set(r, "limits", lim);
    json_decref(req);
    json_decref(lim);
    return r;
}

static json_t *proxy_metadata_env(const inj_ctx *x)
{
    json_t *env = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(x->proxy_config, "proxyMetadata"), k, v)
    {
        const char *s = json_string_value(v);
        if (env &&
            json_array_append_new(env, json_pack("{s:s,s:s}", "name", k, "value", s ? s : "")) != 0)
            json_decref(env), env = NULL;
    }
    return env;
}

json_t *wf_inj_init_container(inj_ctx *x)
{
    json_t *args = json_array();
    char excl[512];
    wf_inject_exclude_inbound(x->status_port,
                              ann_or(x, "traffic.sidecar.istio.io/excludeInboundPorts",
                                     "global.proxy.excludeInboundPorts", ""),
                              excl, sizeof excl);
    const char *k = ann(x, "istio.io/reroute-virtual-interfaces");
    wf_inject_capture cap = {
        .include_out_cidrs = ann_or(x, "traffic.sidecar.istio.io/includeOutboundIPRanges",
                                    "global.proxy.includeIPRanges", "*"),
        .exclude_out_cidrs = ann_or(x, "traffic.sidecar.istio.io/excludeOutboundIPRanges",
                                    "global.proxy.excludeIPRanges", ""),
        .include_in_ports = ann_or(x, "traffic.sidecar.istio.io/includeInboundPorts",
                                   "global.proxy.includeInboundPorts", "*"),
        .exclude_in_ports = excl,
        .include_out_ports = ann_or(x, "traffic.sidecar.istio.io/includeOutboundPorts",
                                    "global.proxy.includeOutboundPorts", ""),
        .exclude_out_ports = ann_or(x, "traffic.sidecar.istio.io/excludeOutboundPorts",
                                    "global.proxy.excludeOutboundPorts", ""),
        .reroute_ifaces = k ? k : ann(x, "traffic.sidecar.istio.io/kubevirtInterfaces"),
        .exclude_ifaces = ann(x, "traffic.sidecar.istio.io/excludeInterfaces"),
    };
    const char *argv[32];
    int n = wf_inject_iptables_argv(&cap, argv, sizeof argv / sizeof argv[0]);
    int rc = args && n > 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++)
        rc = push(args, argv[i]);
    char lvl[256];
    snprintf(lvl, sizeof lvl, "--log_output_level=%s",
             ann_or(x, "sidecar.istio.io/agentLogLevel", "global.logging.level", "default:info"));
    if (rc == 0)
        rc = push(args, lvl);
    if (rc == 0 && wf_inj_value_bool(x->cfg, "global.logAsJson", false))
        rc = push(args, "--log_as_json");
    char *img = image(x, "global.proxy_init.image");
    bool priv = wf_inj_value_bool(x->cfg, "global.proxy.privileged", false);
    json_t *ct = rc == 0 && img ? json_pack("{s:s,s:s,s:[s],s:O}", "name", "istio-init", "image",
                                            img, "command", "weft-proxy", "args", args)
                                : NULL;
    free(img);
    json_decref(args);
    const char *pull = wf_inj_value_str(x->cfg, "global.imagePullPolicy", "");
    json_t *env = proxy_metadata_env(x);
    json_t *sc =
        json_pack("{s:b,s:b,s:{s:[s,s],s:[s]},s:b,s:i,s:b,s:i}", "allowPrivilegeEscalation", priv,
                  "privileged", priv, "capabilities", "add", "NET_ADMIN", "NET_RAW", "drop", "ALL",
                  "readOnlyRootFilesystem", 0, "runAsGroup", 0, "runAsNonRoot", 0, "runAsUser", 0);
    if (!ct || !env || !sc ||
        (*pull && json_object_set_new(ct, "imagePullPolicy", json_string(pull)) != 0) ||
        (json_array_size(env) && json_object_set(ct, "env", env) != 0) ||
        json_object_set_new(ct, "resources", resources(x)) != 0 ||
        json_object_set(ct, "securityContext", sc) != 0) {
        json_decref(ct);
        ct = NULL;
    }
    json_decref(env);
    json_decref(sc);
    return ct;
}

/* ---- istio-proxy --------------------------------------------------------------------------- */

static json_t *env_value(const char *name, const char *value)
{
    return json_pack("{s:s,s:s}", "name", name, "value", value ? value : "");
}

static json_t *env_field(const char *name, const char *path)
{
    return json_pack("{s:s,s:{s:{s:s}}}", "name", name, "valueFrom", "fieldRef", "fieldPath", path);
}

static json_t *env_resource(const char *name, const char *resource)
{
    return json_pack("{s:s,s:{s:{s:s}}}", "name", name, "valueFrom", "resourceFieldRef", "resource",
                     resource);
}

/* ISTIO_META_POD_PORTS as the template writes it: one Go-struct-ordered JSON object per
 * container port, "[\n    {..}\n    ,{..}\n]". */
static char *pod_ports(const json_t *containers)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, "[\n");
    bool first = true;
    size_t i, j;
    json_t *c, *p;
    json_array_foreach(containers, i, c)
    {
        json_array_foreach(json_object_get(c, "ports"), j, p)
        {
            static const char *const order[] = {"name", "hostPort", "containerPort", "protocol",
                                                "hostIP"};
            json_t *o = json_object();
            for (size_t k = 0; o && k < 5; k++) {
                json_t *v = json_object_get(p, order[k]);
                if (v && !(json_is_string(v) && !*json_string_value(v)) &&
                    !(json_is_integer(v) && json_integer_value(v) == 0))
                    json_object_set(o, order[k], v);
            }
            char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
            json_decref(o);
            if (!s) {
                wf_strbuf_free(&b);
                return NULL;
            }
            wf_strbuf_printf(&b, "    %s%s\n", first ? "" : ",", s);
            free(s);
            first = false;
        }
    }
    wf_strbuf_puts(&b, "]");
    return wf_strbuf_failed(&b) ? (wf_strbuf_free(&b), NULL) : wf_strbuf_take(&b);
}

static char *app_containers(const json_t *containers)
{
    wf_strbuf b = WF_STRBUF_INIT;
    size_t i;
    json_t *c;
    bool first = true;
    json_array_foreach(containers, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (!n || strcmp(n, "istio-proxy") == 0)
            continue;
        wf_strbuf_printf(&b, "%s%s", first ? "" : ",", n);
        first = false;
    }
    wf_strbuf_puts(&b, "");
    return wf_strbuf_failed(&b) ? (wf_strbuf_free(&b), NULL) : wf_strbuf_take(&b);
}

static const char *mesh_str(const inj_ctx *x, const char *key)
{
    const char *s = json_string_value(json_object_get(x->cfg->mesh, key));
    return s && *s ? s : NULL;
}

static json_t *proxy_env(inj_ctx *x)
{
    const json_t *containers = json_object_get(json_object_get(x->pod, "spec"), "containers");
    char ca[512], owner[1024], kind[128];
    const char *ca_addr = wf_inj_value_str(x->cfg, "global.caAddress", "");
    const char *rev = wf_inj_value_str(x->cfg, "revision", "");
    if (*ca_addr)
        snprintf(ca, sizeof ca, "%s", ca_addr);
    else
        snprintf(ca, sizeof ca, "istiod%s%s.%s.svc:15012", *rev ? "-" : "", rev,
                 wf_inj_value_str(x->cfg, "global.istioNamespace", "istio-system"));
    size_t i;
    for (i = 0; x->owner.kind && x->owner.kind[i] && i + 1 < sizeof kind; i++)
        kind[i] =
            (char)(x->owner.kind[i] >= 'A' && x->owner.kind[i] <= 'Z' ? x->owner.kind[i] - 'A' + 'a'
                                                                      : x->owner.kind[i]);
    kind[i] = '\0';
    snprintf(owner, sizeof owner, "kubernetes://apis/%s/namespaces/%s/%ss/%s",
             x->owner.api_version ? x->owner.api_version : "", x->ns, kind,
             x->owner.name ? x->owner.name : "");
    const char *trust = mesh_str(x, "trustDomain");
    if (!trust)
        trust = *wf_inj_value_str(x->cfg, "global.trustDomain", "")
                    ? wf_inj_value_str(x->cfg, "global.trustDomain", "")
                    : "cluster.local";
    const char *mesh_id = wf_inj_value_str(x->cfg, "global.meshID", "");
    const char *cluster = wf_inj_value_str(x->cfg, "global.multiCluster.clusterName", "");
    const char *network = wf_inj_value_str(x->cfg, "global.network", "");
    char *pc = json_dumps(x->proxy_config, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *pcn = pc ? malloc(strlen(pc) + 2) : NULL;
    if (pcn)
        sprintf(pcn, "%s\n", pc);
    free(pc);
    char *ports = pod_ports(containers), *apps = app_containers(containers);
    json_t *env = json_array();
    json_t *items[] = {
        env_value("PILOT_CERT_PROVIDER",
                  wf_inj_value_str(x->cfg, "global.pilotCertProvider", "istiod")),
        env_value("CA_ADDR", ca),
        env_field("POD_NAME", "metadata.name"),
        env_field("POD_NAMESPACE", "metadata.namespace"),
        env_field("INSTANCE_IP", "status.podIP"),
        env_field("SERVICE_ACCOUNT", "spec.serviceAccountName"),
        env_field("HOST_IP", "status.hostIP"),
        env_resource("ISTIO_CPU_LIMIT", "limits.cpu"),
        env_value("PROXY_CONFIG", pcn),
        env_value("ISTIO_META_POD_PORTS", ports),
        env_value("ISTIO_META_APP_CONTAINERS", apps),
        env_resource("GOMEMLIMIT", "limits.memory"),
        env_value("ISTIO_META_CLUSTER_ID", *cluster ? cluster : "Kubernetes"),
        env_field("ISTIO_META_NODE_NAME", "spec.nodeName"),
        env_value("ISTIO_META_INTERCEPTION_MODE", "REDIRECT"),
        *network ? env_value("ISTIO_META_NETWORK", network) : NULL,
        x->owner.name ? env_value("ISTIO_META_WORKLOAD_NAME", x->owner.name) : NULL,
        x->owner.name && x->owner.api_version ? env_value("ISTIO_META_OWNER", owner) : NULL,
        env_value("ISTIO_META_MESH_ID", *mesh_id ? mesh_id : trust),
        env_value("TRUST_DOMAIN", trust),
    };
    bool oom = !env || !pcn || !ports || !apps;
    for (i = 0; i < sizeof items / sizeof items[0]; i++) {
        bool optional = (i == 15 && !*network) || (i == 16 && !x->owner.name) ||
                        (i == 17 && !(x->owner.name && x->owner.api_version));
        if (!items[i] && !optional)
            oom = true;
        if (items[i] && (oom || json_array_append_new(env, items[i]) != 0))
            oom = true;
    }
    free(pcn);
    free(ports);
    free(apps);
    json_t *md = proxy_metadata_env(x);
    if (!md || json_array_extend(env, md) != 0)
        oom = true;
    json_decref(md);
    if (oom) {
        json_decref(env);
        return NULL;
    }
    return env;
}

static json_t *health_probe(const inj_ctx *x, bool startup)
{
    json_int_t delay =
        startup ? 0 : wf_inj_value_int(x->cfg, "global.proxy.readinessInitialDelaySeconds", 0);
    json_int_t period =
        startup ? 1 : wf_inj_value_int(x->cfg, "global.proxy.readinessPeriodSeconds", 15);
    json_int_t fail =
        startup ? wf_inj_value_int(x->cfg, "global.proxy.startupProbe.failureThreshold", 600)
                : wf_inj_value_int(x->cfg, "global.proxy.readinessFailureThreshold", 4);
    if (!startup) {
        const char *a;
        if ((a = ann(x, "readiness.status.sidecar.istio.io/initialDelaySeconds")))
            delay = strtoll(a, NULL, 10);
        if ((a = ann(x, "readiness.status.sidecar.istio.io/periodSeconds")))
            period = strtoll(a, NULL, 10);
        if ((a = ann(x, "readiness.status.sidecar.istio.io/failureThreshold")))
            fail = strtoll(a, NULL, 10);
    }
    return json_pack("{s:{s:s,s:i},s:I,s:I,s:i,s:I}", "httpGet", "path", "/healthz/ready", "port",
                     15021, "initialDelaySeconds", delay, "periodSeconds", period, "timeoutSeconds",
                     3, "failureThreshold", fail);
}

static json_t *mounts(const inj_ctx *x)
{
    static const char *const m[][2] = {
        {"workload-socket", "/var/run/secrets/workload-spiffe-uds"},
        {"credential-socket", "/var/run/secrets/credential-uds"},
        {"workload-certs", "/var/run/secrets/workload-spiffe-credentials"},
        {"istiod-ca-cert", "/var/run/secrets/istio"},
        {"istio-ca-crl", "/var/run/secrets/istio/crl"},
        {"istio-data", "/var/lib/istio/data"},
        {"istio-envoy", "/etc/istio/proxy"},
        {"istio-token", "/var/run/secrets/tokens"},
        {"istio-podinfo", "/etc/istio/pod"},
    };
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < sizeof m / sizeof m[0]; i++)
        if (json_array_append_new(
                arr, json_pack("{s:s,s:s}", "name", m[i][0], "mountPath", m[i][1])) != 0)
            json_decref(arr), arr = NULL;
    /* sidecar.istio.io/userVolumeMount: {"name": {mountPath, readOnly, ...}} (validated by
     * the caller) */
    json_t *user = json_loads(ann(x, "sidecar.istio.io/userVolumeMount")
                                  ? ann(x, "sidecar.istio.io/userVolumeMount")
                                  : "{}",
                              0, NULL);
    const char *k;
    json_t *v;
    json_object_foreach(user, k, v)
    {
        json_t *e = json_is_object(v) ? json_deep_copy(v) : NULL;
        if (!arr || !e || json_object_set_new(e, "name", json_string(k)) != 0 ||
            json_array_append_new(arr, e) != 0) {
            json_decref(arr), arr = NULL;
            break;
        }
    }
    json_decref(user);
    return arr;
}

static bool hold_application(const inj_ctx *x)
{
    const json_t *h = json_object_get(x->proxy_config, "holdApplicationUntilProxyStarts");
    if (json_is_boolean(h))
        return json_is_true(h);
    return wf_inj_value_bool(x->cfg, "global.proxy.holdApplicationUntilProxyStarts", false);
}

bool wf_inj_hold_application(const inj_ctx *x)
{
    return !x->native && hold_application(x);
}

json_t *wf_inj_proxy_container(inj_ctx *x)
{
    char dom[256], lvl[256], comp[256], agent[256];
    snprintf(dom, sizeof dom, "$(POD_NAMESPACE).svc.%s",
             wf_inj_value_str(x->cfg, "global.proxy.clusterDomain", "cluster.local"));
    snprintf(lvl, sizeof lvl, "--proxyLogLevel=%s",
             ann_or(x, "sidecar.istio.io/logLevel", "global.proxy.logLevel", "warning"));
    snprintf(comp, sizeof comp, "--proxyComponentLogLevel=%s",
             ann_or(x, "sidecar.istio.io/componentLogLevel", "global.proxy.componentLogLevel",
                    "misc:error"));
    snprintf(agent, sizeof agent, "--log_output_level=%s",
             ann_or(x, "sidecar.istio.io/agentLogLevel", "global.logging.level", "default:info"));
    char *img = image(x, "global.proxy.image");
    json_t *c = img ? json_pack("{s:s,s:s,s:[{s:i,s:s,s:s}],s:[s,s,s,s,s,s,s]}", "name",
                                "istio-proxy", "image", img, "ports", "containerPort", 15090,
                                "protocol", "TCP", "name", "http-envoy-prom", "args", "proxy",
                                "sidecar", "--domain", dom, lvl, comp, agent)
                    : NULL;
    free(img);
    if (!c)
        return NULL;
    int rc = 0;
    if (wf_inj_value_bool(x->cfg, "global.logAsJson", false))
        rc |= json_array_append_new(json_object_get(c, "args"), json_string("--log_as_json"));
    if (x->native)
        rc |= json_object_set_new(c, "restartPolicy", json_string("Always"));
    char sp[16];
    snprintf(sp, sizeof sp, "--debug-port=%d", x->status_port);
    if (wf_inj_hold_application(x))
        rc |= json_object_set_new(
            c, "lifecycle",
            json_pack("{s:{s:{s:[s,s]}}}", "postStart", "exec", "command", "weft-proxy", "wait"));
    else if (x->native)
        rc |= json_object_set_new(c, "lifecycle",
                                  json_pack("{s:{s:{s:[s,s,s,s,s]}}}", "preStop", "exec", "command",
                                            "weft-proxy", "request", sp, "POST", "drain"));
    json_t *env = proxy_env(x);
    rc |= env ? json_object_set_new(c, "env", env) : -1;
    const char *pull = wf_inj_value_str(x->cfg, "global.imagePullPolicy", "");
    if (*pull)
        rc |= json_object_set_new(c, "imagePullPolicy", json_string(pull));
    const char *spa = ann(x, "status.sidecar.istio.io/port");
    if (!(spa && strcmp(spa, "0") == 0))
        rc |= json_object_set_new(c, "readinessProbe", health_probe(x, false));
    if (wf_inj_value_bool(x->cfg, "global.proxy.startupProbe.enabled", true))
        rc |= json_object_set_new(c, "startupProbe", health_probe(x, true));
    rc |= json_object_set_new(c, "resources", resources(x));
    bool priv = wf_inj_value_bool(x->cfg, "global.proxy.privileged", false);
    rc |= json_object_set_new(c, "securityContext",
                              json_pack("{s:b,s:{s:[s]},s:b,s:b,s:i,s:b,s:i}",
                                        "allowPrivilegeEscalation", priv, "capabilities", "drop",
                                        "ALL", "privileged", priv, "readOnlyRootFilesystem", 1,
                                        "runAsGroup", 1337, "runAsNonRoot", 1, "runAsUser", 1337));
    rc |= json_object_set_new(c, "volumeMounts", mounts(x));
    if (rc != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}
