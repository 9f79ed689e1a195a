/*
 * kube_writer_plan.c - the write-back decisions (kube_writer_plan.h).
 */
#include "pilot/kube_writer_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "core/base64.h"
#include "kube/kinds.h"
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
    free(a->written);
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

/* ---- analysis status ------------------------------------------------------------------------ */

static bool istio_group(const char *g)
{
    return !strcmp(g, "networking.istio.io") || !strcmp(g, "security.istio.io") ||
           !strcmp(g, "telemetry.istio.io");
}

/* The /status path of r when it is an Istio resource read from the API, else "" (buf). */
static const char *status_path(const wf_resource *r, char *buf, size_t cap)
{
    const wf_kube_kind *k = r->kind_name ? wf_kube_kind_find(r->kind_name) : NULL;
    buf[0] = '\0';
    if (!k || !istio_group(k->group) || !r->file || strncmp(r->file, "kube:", 5) != 0 || !r->ns ||
        !r->ns[0] || !r->name[0])
        return buf;
    int n = snprintf(buf, cap, "/apis/%s/%s/namespaces/%s/%s/%s/status", k->group, k->version,
                     r->ns, k->resource, r->name);
    if (n < 0 || (size_t)n >= cap)
        buf[0] = '\0';
    return buf;
}

static json_t *message_json(const wf_finding *f)
{
    static const char *const levels[] = {"ERROR", "WARNING", "INFO"};
    const wf_msg_type *t = wf_msg_type_get(f->id);
    char url[160], lower[16];
    size_t i;
    if (!t)
        return NULL;
    for (i = 0; t->code[i] && i < sizeof lower - 1; i++)
        lower[i] = (char)(t->code[i] >= 'A' && t->code[i] <= 'Z' ? t->code[i] + 32 : t->code[i]);
    lower[i] = '\0';
    snprintf(url, sizeof url, "https://istio.io/latest/docs/reference/config/analysis/%s/", lower);
    return json_pack("{s:s,s:s,s:{s:s,s:s}}", "documentationUrl", url, "level",
                     levels[t->level <= WF_LEVEL_INFO ? t->level : 0], "type", "code", t->code,
                     "name", t->name);
}

/* *e = out["Kind/ns/name"] for r, made with messages [] when absent; *e NULL when r is not
 * written to. 0, or -1 on OOM. */
static int status_entry(json_t *out, const wf_resource *r, json_t **e)
{
    char path[768], key[768];
    *e = NULL;
    if (!r || !status_path(r, path, sizeof path)[0])
        return 0;
    snprintf(key, sizeof key, "%s/%s/%s", r->kind_name, r->ns, r->name);
    *e = json_object_get(out, key);
    if (!*e &&
        json_object_set_new(out, key, json_pack("{s:s,s:[]}", "path", path, "messages")) == 0)
        *e = json_object_get(out, key);
    return *e ? 0 : -1;
}

json_t *wf_kw_status_wanted(const wf_store *store, const wf_meshcfg *mesh)
{
    json_t *out = json_object(), *e;
    wf_analysis_opts o = {0};
    wf_analysis_result *res = out ? wf_analyze(store, mesh, &o) : NULL;
    int rc = res ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < wf_store_count(store); i++)
        rc = status_entry(out, wf_store_at(store, i), &e);
    for (size_t i = 0; rc == 0 && i < res->n; i++) {
        rc = status_entry(out, res->findings[i].res, &e);
        if (rc == 0 && e)
            rc = json_array_append_new(json_object_get(e, "messages"),
                                       message_json(&res->findings[i]));
    }
    wf_analysis_result_free(res);
    if (rc != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

int wf_kw_plan_status(const json_t *want, const char *last, wf_kw_action *out)
{
    memset(out, 0, sizeof *out);
    const json_t *msgs = json_object_get(want, "messages");
    char *text = json_dumps(msgs, JSON_COMPACT);
    if (!text)
        return -1;
    if ((!last && json_array_size(msgs) == 0) || (last && strcmp(last, text) == 0)) {
        free(text);
        out->note = last ? "in sync" : "no messages";
        return 0;
    }
    snprintf(out->path, sizeof out->path, "%s", json_string_value(json_object_get(want, "path")));
    out->op = WF_KW_PATCH;
    out->method = "PATCH";
    out->content_type = WF_KW_MERGE_PATCH;
    out->written = text;
    json_t *body = json_pack("{s:{s:O}}", "status", "validationMessages",
                             json_array_size(msgs) ? (json_t *)msgs : json_null());
    return take_body(out, body);
}
