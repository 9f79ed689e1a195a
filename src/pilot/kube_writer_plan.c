/*
 * kube_writer_plan.c - the write-back decisions (kube_writer_plan.h).
 */
#include "pilot/kube_writer_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "model/node.h"
#include "model/types.h"

bool wf_kw_ns_ignored(const char *ns)
{
    return strcmp(ns, "kube-public") == 0 || strcmp(ns, "kube-node-lease") == 0 ||
           strcmp(ns, "local-path-storage") == 0;
}

const char *wf_kw_op_name(wf_kw_op op)
{
    static const char *const names[] = {"none", "create", "update", "patch"};
    return op <= WF_KW_PATCH ? names[op] : "?";
}

void wf_kw_action_clear(wf_kw_action *a)
{
    free(a->body);
    memset(a, 0, sizeof *a);
}

static bool selected(const wf_node *sel, const wf_kvs *labels)
{
    if (wf_seq_len(sel) == 0)
        return true;
    for (size_t i = 0; i < wf_seq_len(sel); i++)
        if (wf_label_selector_matches(wf_seq_at(sel, i), labels))
            return true;
    return false;
}

json_t *wf_kw_wanted_namespaces(const wf_store *store, const wf_meshcfg *mesh)
{
    json_t *out = json_object();
    size_t n = 0;
    const wf_resource *const *nss = store ? wf_store_kind(store, WF_KIND_NAMESPACE, &n) : NULL;
    const wf_node *sel = mesh ? wf_meshcfg_get(mesh, "discoverySelectors") : NULL;
    for (size_t i = 0; out && i < n; i++) {
        const wf_resource *r = nss[i];
        const char *phase = wf_node_str(wf_map_get(r->status, "phase"));
        if (!r->name[0] || wf_kw_ns_ignored(r->name) || (phase && !strcmp(phase, "Terminating")) ||
            wf_map_get(r->metadata, "deletionTimestamp") || !selected(sel, &r->labels))
            continue;
        if (json_object_set_new(out, r->name, json_true()) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

char *wf_kw_ca_bundle(const char *root_pem)
{
    size_t n = strlen(root_pem), cap = 4 * ((n + 2) / 3) + 1;
    char *b = malloc(cap);
    if (b)
        b[wf_base64_encode((const unsigned char *)root_pem, n, b, cap)] = '\0';
    return b;
}

static int take_body(wf_kw_action *out, json_t *body)
{
    out->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return out->body ? 0 : -1;
}

/* ---- the root ConfigMap ------------------------------------------------------------------- */

int wf_kw_plan_configmap(const char *cm_name, const char *ns, const json_t *existing,
                         const char *root_pem, wf_kw_action *out)
{
    memset(out, 0, sizeof *out);
    int n = snprintf(out->path, sizeof out->path, "/api/v1/namespaces/%s/configmaps%s%s", ns,
                     existing ? "/" : "", existing ? cm_name : "");
    if (n < 0 || (size_t)n >= sizeof out->path)
        return -1;
    if (!existing) {
        out->op = WF_KW_CREATE;
        out->method = "POST";
        return take_body(out, json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1",
                                        "kind", "ConfigMap", "metadata", "name", cm_name,
                                        "namespace", ns, "labels", WF_KW_CM_LABEL, "true", "data",
                                        WF_KW_CM_KEY, root_pem));
    }
    const json_t *data = json_object_get(existing, "data");
    const char *cur = json_string_value(json_object_get(data, WF_KW_CM_KEY));
    if (cur && strcmp(cur, root_pem) == 0) {
        out->path[0] = '\0';
        out->note = "in sync";
        return 0;
    }
    json_t *upd = json_deep_copy(existing);
    json_t *d = upd ? json_object_get(upd, "data") : NULL;
    if (upd && !json_is_object(d)) {
        d = json_object();
        if (json_object_set_new(upd, "data", d) != 0)
            d = NULL;
    }
    if (!d || json_object_set_new(d, WF_KW_CM_KEY, json_string(root_pem)) != 0) {
        json_decref(upd);
        return -1;
    }
    out->op = WF_KW_UPDATE;
    out->method = "PUT";
    return take_body(out, upd);
}

/* ---- webhook configurations --------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int op_add(json_t *ops, const char *op, const char *path, json_t *value)
{
    json_t *o = json_pack("{s:s,s:s,s:o}", "op", op, "path", path, "value", value);
    return o ? json_array_append_new(ops, o) : -1;
}

/* Adds to ops the changes of webhook i (name): caBundle when it differs, failurePolicy Fail
 * when fail and it is not. Returns the number of changes, -1 on OOM. */
static int webhook_ops(json_t *ops, size_t i, const json_t *wh, const char *ca, bool fail)
{
    const json_t *cc = json_object_get(wh, "clientConfig");
    const char *cur = json_string_value(json_object_get(cc, "caBundle"));
    const char *fp = json_string_value(json_object_get(wh, "failurePolicy"));
    bool ca_change = !cur || strcmp(cur, ca) != 0, fp_change = fail && (!fp || strcmp(fp, "Fail"));
    if (!ca_change && !fp_change)
        return 0;
    char p[96];
    snprintf(p, sizeof p, "/webhooks/%zu/name", i);
    int rc = op_add(ops, "test", p, json_string(json_string_value(json_object_get(wh, "name"))));
    if (rc == 0 && ca_change && json_is_object(cc)) {
        snprintf(p, sizeof p, "/webhooks/%zu/clientConfig/caBundle", i);
        rc = op_add(ops, "add", p, json_string(ca));
    } else if (rc == 0 && ca_change) {
        snprintf(p, sizeof p, "/webhooks/%zu/clientConfig", i);
        rc = op_add(ops, "add", p, json_pack("{s:s}", "caBundle", ca));
    }
    if (rc == 0 && fp_change) {
        snprintf(p, sizeof p, "/webhooks/%zu/failurePolicy", i);
        rc = op_add(ops, "add", p, json_string("Fail"));
    }
    return rc == 0 ? 1 : -1;
}

static int plan_webhooks(const json_t *cfg, const char *resource, const char *rev,
                         const char *root_pem, bool validating, bool ready, wf_kw_action *out)
{
    memset(out, 0, sizeof *out);
    const json_t *md = json_object_get(cfg, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *have =
        json_string_value(json_object_get(json_object_get(md, "labels"), WF_KW_REV_LABEL));
    if (!name || !have || strcmp(have, rev) != 0) {
        out->note = "wrong revision"; /* istiod's errWrongRevision */
        return 0;
    }
    char *ca = wf_kw_ca_bundle(root_pem);
    json_t *ops = json_array();
    const json_t *whs = json_object_get(cfg, "webhooks");
    size_t i, found = 0;
    int rc = ca && ops ? 0 : -1;
    const json_t *wh;
    json_array_foreach(whs, i, wh)
    {
        const char *wn = json_string_value(json_object_get(wh, "name"));
        if (rc != 0 || !wn || (!validating && !ends_with(wn, WF_KW_INJECTOR_SUFFIX)))
            continue;
        found++;
        rc = webhook_ops(ops, i, wh, ca, validating && ready) < 0 ? -1 : 0;
    }
    free(ca);
    if (rc == 0 && (found == 0 || json_array_size(ops) == 0)) {
        out->note = found ? "in sync" : "no webhook to patch";
        json_decref(ops);
        return 0;
    }
    int n = snprintf(out->path, sizeof out->path, "/apis/admissionregistration.k8s.io/v1/%s/%s",
                     resource, name);
    if (rc != 0 || n < 0 || (size_t)n >= sizeof out->path) {
        json_decref(ops);
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->op = WF_KW_PATCH;
    out->method = "PATCH";
    out->content_type = WF_KW_JSON_PATCH;
    return take_body(out, ops);
}

int wf_kw_plan_mutating(const json_t *cfg, const char *rev, const char *root_pem, wf_kw_action *out)
{
    return plan_webhooks(cfg, "mutatingwebhookconfigurations", rev, root_pem, false, false, out);
}

int wf_kw_plan_validating(const json_t *cfg, const char *rev, const char *root_pem, bool ready,
                          wf_kw_action *out)
{
    return plan_webhooks(cfg, "validatingwebhookconfigurations", rev, root_pem, true, ready, out);
}
