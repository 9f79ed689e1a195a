/*
 * inject_annotations.c - the pod annotations Istio's injector reads (inject_internal.h):
 * validated with Istio's validators (pkg/kube/inject/validate.go, analysis/an_annotations_util.h:
 * a bad value refuses the pod), reported when weft's injector does not implement them (the
 * injector's own annotation prefixes; the agent's stats annotations are not the injector's), and
 * proxy.istio.io/config merged over MeshConfig defaultConfig (mesh.ApplyProxyConfig), its fields
 * weft does not implement reported (model/unimplemented.h).
 */
#include <string.h>

#include "analysis/an_annotations_util.h"
#include "core/arena.h"
#include "core/json_util.h"
#include "kube/inject_internal.h"
#include "model/node_json.h"
#include "model/parse.h"
#include "model/unimplemented.h"

/* The injector annotations weft implements: wf_unimpl_injector_annotations()
 * (model/unimplemented.h), which the table's Kubernetes rows share. */

/* Annotations of those prefixes that the injector does not read (the agent, pilot or the
 * bootstrap do, from the pod's annotations): not the injector's to report. */
static const char *const NOT_INJECTOR[] = {"sidecar.istio.io/statsInclusionPrefixes",
                                           "sidecar.istio.io/statsInclusionSuffixes",
                                           "sidecar.istio.io/statsInclusionRegexps",
                                           "sidecar.istio.io/statsHistogramBuckets",
                                           "sidecar.istio.io/extraStatTags",
                                           "sidecar.istio.io/statsEvictionInterval",
                                           "sidecar.istio.io/statsFlushInterval",
                                           "sidecar.istio.io/dnsCapture",
                                           NULL};

static const char *const INJECTOR_PREFIXES[] = {"sidecar.istio.io/",
                                                "traffic.sidecar.istio.io/",
                                                "status.sidecar.istio.io/",
                                                "readiness.status.sidecar.istio.io/",
                                                "proxy.istio.io/",
                                                "inject.istio.io/",
                                                NULL};

static bool listed(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

static bool injector_annotation(const char *k)
{
    for (size_t i = 0; INJECTOR_PREFIXES[i]; i++)
        if (strncmp(k, INJECTOR_PREFIXES[i], strlen(INJECTOR_PREFIXES[i])) == 0)
            return true;
    return strcmp(k, "istio.io/reroute-virtual-interfaces") == 0;
}

void wf_inj_report_annotations(const json_t *pod, json_t *warnings)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get((json_t *)pod, "metadata"), "annotations"),
                        k, v)
    {
        const char *s = json_string_value(v);
        if (strcmp(k, "sidecar.istio.io/interceptionMode") == 0 && s &&
            strcmp(s, "REDIRECT") != 0) {
            wf_inj_warn(warnings,
                        "annotation sidecar.istio.io/interceptionMode: \"%s\" is not implemented "
                        "by weft's injector: the pod gets REDIRECT",
                        s);
        } else if (strcmp(k, "inject.istio.io/templates") == 0 && s && strcmp(s, "sidecar") == 0) {
            continue;
        } else if (injector_annotation(k) && !listed(wf_unimpl_injector_annotations(), k) &&
                   !listed(NOT_INJECTOR, k) && strcmp(k, "istio.io/reroute-virtual-interfaces")) {
            wf_inj_warn(warnings, "annotation %s is not implemented by weft's injector (ignored)",
                        k);
        }
    }
}

/* Kubernetes' resource.ParseQuantity: NULL when s is a quantity, else its error. */
static const char *quantity_problem(const char *s)
{
    static const char *const format = "quantities must match the regular expression "
                                      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    static const char *const suffixes[] = {"",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n",
                                           "u", "m",  "k",  "M",  "G",  "T",  "P",  "E"};
    const char *p = s + (*s == '+' || *s == '-');
    size_t digits = strspn(p, "0123456789."), ndig = 0;
    for (size_t i = 0; i < digits; i++)
        ndig += p[i] != '.';
    const char *dot = memchr(p, '.', digits);
    if (ndig == 0 || (dot && memchr(dot + 1, '.', digits - (size_t)(dot + 1 - p))))
        return format;
    const char *suf = p + digits;
    size_t letters = strspn(suf, "eEinumkKMGTP");
    const char *rest = suf + letters;
    rest += (*rest == '+' || *rest == '-');
    if (rest[strspn(rest, "0123456789")] != '\0')
        return format;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (strcmp(suf, suffixes[i]) == 0)
            return NULL;
    /* a decimal exponent: e or E and a signed integer */
    if ((suf[0] == 'e' || suf[0] == 'E') && letters == 1) {
        const char *x = suf + 1 + (suf[1] == '+' || suf[1] == '-');
        if (*x && x[strspn(x, "0123456789")] == '\0')
            return NULL;
    }
    return "unable to parse quantity's suffix";
}

/* The resource annotations become the istio-proxy container's resources: a value that is not
 * a quantity fails the rendered pod's decoding in Istio's injector. */
static int validate_quantities(const json_t *pod, wf_strbuf *why)
{
    static const char *const names[] = {"sidecar.istio.io/proxyCPU", "sidecar.istio.io/proxyMemory",
                                        "sidecar.istio.io/proxyCPULimit",
                                        "sidecar.istio.io/proxyMemoryLimit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = wf_inj_annotation(pod, names[i]), *problem = v ? quantity_problem(v) : NULL;
        if (problem) {
            wf_strbuf_printf(why, "injection failed: invalid annotation %s=\"%s\": %s", names[i], v,
                             problem);
            return -1;
        }
    }
    return 0;
}

/* Istio's validate.go on every annotation; -1 with why for the first invalid one. */
int wf_inj_validate_annotations(const json_t *pod, wf_strbuf *why)
{
    wf_arena a;
    wf_arena_init(&a);
    int rc = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get((json_t *)pod, "metadata"), "annotations"),
                        k, v)
    {
        const char *problem = NULL;
        if (json_is_string(v) &&
            wf_inject_annotation_invalid(&a, k, json_string_value(v), &problem)) {
            wf_strbuf_printf(why, "injection failed: invalid annotation %s=\"%s\": %s", k,
                             json_string_value(v), problem);
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        rc = validate_quantities(pod, why);
    const char *uv[] = {"sidecar.istio.io/userVolume", "sidecar.istio.io/userVolumeMount"};
    for (size_t i = 0; rc == 0 && i < 2; i++) {
        const char *s = wf_inj_annotation(pod, uv[i]);
        json_t *j = s ? json_loads(s, 0, NULL) : NULL;
        const char *name;
        json_t *e;
        bool ok = !s || json_is_object(j);
        json_object_foreach(j, name, e) ok = ok && json_is_object(e);
        if (!ok) {
            wf_strbuf_printf(why,
                             "injection failed: annotation %s: want a JSON object of %s by name",
                             uv[i], i ? "volume mounts" : "volumes");
            rc = -1;
        }
        json_decref(j);
    }
    wf_arena_destroy(&a);
    return rc;
}

static int first_doc(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    (void)line, (void)col;
    if (!*(wf_node **)arg)
        *(wf_node **)arg = root;
    return 0;
}

static bool unimpl_cb(const wf_unimpl_hit *hit, void *arg)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_unimpl_message(hit, &b);
    if (!wf_strbuf_failed(&b))
        wf_inj_warn(arg, "annotation proxy.istio.io/config: %s", wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return true;
}

/* MeshConfig defaultConfig merged with the pod's proxy.istio.io/config (Istio's
 * mesh.ApplyProxyConfig); NULL with why when the annotation is not a ProxyConfig. */
json_t *wf_inj_proxy_config(const wf_inject_config *c, const json_t *pod, json_t *warnings,
                            wf_strbuf *why)
{
    const json_t *dc = json_object_get(c->mesh, "defaultConfig");
    json_t *pc = json_is_object(dc) ? json_deep_copy(dc) : json_object();
    const char *text = wf_inj_annotation(pod, "proxy.istio.io/config");
    if (!pc || !text)
        return pc;
    wf_arena a;
    wf_arena_init(&a);
    wf_node *root = NULL;
    wf_parse_error e = {0};
    int rc = wf_parse_yaml(&a, text, strlen(text), first_doc, &root, &e);
    if (rc != 0 || (root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL)) {
        wf_strbuf_printf(why, "injection failed: annotation proxy.istio.io/config: %s",
                         rc ? e.message : "want a ProxyConfig mapping");
        json_decref(pc);
        pc = NULL;
    } else if (root && root->type == WF_NODE_MAP) {
        json_t *ov = wf_node_to_json(root);
        if (!ov || wf_json_overlay(pc, ov) != 0)
            json_decref(pc), pc = NULL;
        json_decref(ov);
        for (size_t i = 0; pc && warnings && i < root->len; i++)
            if (!wf_proxy_config_field_known(root->u.entries[i].key))
                wf_inj_warn(warnings,
                            "annotation proxy.istio.io/config: unknown field \"%s\": not a "
                            "ProxyConfig field; ignored (as Istio's injector does)",
                            root->u.entries[i].key);
        if (pc && warnings)
            wf_unimpl_scan_proxyconfig(root, "proxy.istio.io/config", WF_UNIMPL_KUBERNETES,
                                       unimpl_cb, warnings);
    }
    wf_arena_destroy(&a);
    return pc;
}
