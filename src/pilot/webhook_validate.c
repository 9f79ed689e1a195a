/*
 * webhook_validate.c - istiod's validating admission webhook (see webhook_validate.h).
 */
#include "pilot/webhook_validate.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "kube/kinds.h"
#include "model/kinds.h"
#include "model/store.h"
#include "model/validate.h"
#include "pilot/source_kube_conv.h"

/* Istio's reasons (server.go's monitoring constants). */
#define R_UNSUPPORTED "unsupported_operation"
#define R_DECODE      "yaml_decode_error"
#define R_UNKNOWN     "unknown_type"
#define R_INVALID     "invalid_resource"

typedef struct issues {
    json_t *errors, *warnings; /* arrays of strings */
} issues;

static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static void copy(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

/* Go's http.Error: the text and a newline. */
static int http_error(wf_strbuf *out, wf_whv_outcome *oc, int status, const char *text)
{
    oc->result = WF_WHV_HTTP_ERROR;
    wf_strbuf_printf(out, "%s\n", text);
    return status;
}

/* A kind weft does not model that Istio's schema may know: Kubernetes' built-in and Gateway
 * API groups (istiod validates those with no rules), and the Istio kinds weft has no model of.
 * Any other kind of an *.istio.io group, or of another group, is unknown to istiod. */
static bool istio_schema_kind(const char *group, const char *kind)
{
    static const char *const istio_only[] = {"TrafficExtension", "MeshConfig", "MeshNetworks"};
    size_t n = strlen(group);
    static const char *const builtin[] = {"",
                                          "apps",
                                          "batch",
                                          "admissionregistration.k8s.io",
                                          "apiextensions.k8s.io",
                                          "discovery.k8s.io",
                                          "networking.k8s.io",
                                          "policy",
                                          "rbac.authorization.k8s.io",
                                          "coordination.k8s.io",
                                          "certificates.k8s.io",
                                          "gateway.networking.k8s.io",
                                          "gateway.networking.x-k8s.io"};
    if (n >= 8 && strcmp(group + n - 8, "istio.io") == 0) {
        for (size_t i = 0; i < sizeof istio_only / sizeof istio_only[0]; i++)
            if (strcmp(kind, istio_only[i]) == 0)
                return true;
        return false;
    }
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (strcmp(group, builtin[i]) == 0)
            return true;
    return false;
}

static void on_issue(const wf_resource *r, const wf_validation_issue *issue, void *arg)
{
    (void)r;
    issues *is = arg;
    json_array_append_new(issue->warning ? is->warnings : is->errors,
                          json_string(issue->message ? issue->message : ""));
}

/* hashicorp/go-multierror's ListFormatFunc for several errors, the error itself for one. */
static void join_errors(const json_t *errs, wf_strbuf *b)
{
    size_t n = json_array_size(errs);
    if (n == 1) {
        wf_strbuf_puts(b, json_string_value(json_array_get(errs, 0)));
        return;
    }
    wf_strbuf_printf(b, "%zu errors occurred:", n);
    for (size_t i = 0; i < n; i++)
        wf_strbuf_printf(b, "\n\t* %s", json_string_value(json_array_get(errs, i)));
    wf_strbuf_puts(b, "\n\n");
}

/* The object as the Kubernetes source serves it (source_kube_conv.h), one JSON document. */
static int to_document(const json_t *obj, const char *kind, const char *group, const char *ns,
                       const char *name, wf_store *st)
{
    const wf_kube_kind *kk = wf_kube_kind_find(kind);
    if (kk && strcmp(kk->group, group) == 0) {
        char key[512];
        snprintf(key, sizeof key, "%s%s%s", kk->namespaced ? ns : "", kk->namespaced ? "/" : "",
                 name);
        json_t *in = json_pack("{s:{s:O}}", kind, key, obj);
        wf_kube_docs d;
        int rc = in ? wf_kube_docs_make(in, NULL, &d) : -1;
        json_decref(in);
        if (rc != 0)
            return -1;
        for (size_t i = 0; rc >= 0 && i < d.n; i++)
            rc = wf_store_load_buffer(st, d.docs[i].name, d.docs[i].json, d.docs[i].len, true);
        wf_kube_docs_free(&d);
        return rc < 0 ? -1 : 0;
    }
    /* a kind the Kubernetes source does not watch: as it is, status left out */
    json_t *c = json_deep_copy(obj);
    if (!c)
        return -1;
    json_object_del(c, "status");
    char *txt = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    if (!txt)
        return -1;
    char fname[640];
    snprintf(fname, sizeof fname, "kube:%s/%s%s%s", kind, ns, *ns ? "/" : "", name);
    int rc = wf_store_load_buffer(st, fname, txt, strlen(txt), true);
    free(txt);
    return rc < 0 ? -1 : 0;
}

/* Istio's checkFields: only apiVersion, kind, metadata, spec and status at the top. */
static const char *unknown_field(const json_t *obj)
{
    static const char *const ok[] = {"apiVersion", "kind", "metadata", "spec", "status"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
            known = known || strcmp(k, ok[i]) == 0;
        if (!known)
            return k;
    }
    return NULL;
}

typedef struct answer {
    bool allowed;
    wf_strbuf msg; /* empty: no status */
    json_t *warnings;
} answer;

/* Runs the checks of one CREATE/UPDATE; fills a (message without the dry-run suffix). */
static int admit(const json_t *req, wf_whv_outcome *oc, answer *a)
{
    const json_t *obj = json_object_get(req, "object");
    if (!json_is_object(obj)) {
        oc->result = WF_WHV_FAILED;
        oc->reason = R_DECODE;
        wf_strbuf_puts(&a->msg, "cannot decode configuration: the object is not a JSON object");
        return 0;
    }
    const char *av = str(obj, "apiVersion"), *kind = str(obj, "kind");
    const char *slash = strchr(av, '/');
    char group[128] = "", version[64];
    if (slash)
        snprintf(group, sizeof group, "%.*s", (int)(slash - av), av);
    copy(version, sizeof version, slash ? slash + 1 : av);
    wf_kind k = wf_kind_lookup(av, kind);
    if (k == WF_KIND_OTHER && !istio_schema_kind(group, kind)) {
        oc->result = WF_WHV_FAILED;
        oc->reason = R_UNKNOWN;
        wf_strbuf_printf(&a->msg, "unrecognized type %s%s%s, Kind=%s", group, *group ? "/" : "",
                         version, kind);
        return 0;
    }
    const json_t *md = json_object_get(obj, "metadata");
    const char *ns = str(md, "namespace"), *name = str(md, "name");
    if (!*ns)
        ns = str(req, "namespace");
    if (!*name)
        name = str(req, "name");
    issues is = {json_array(), a->warnings};
    wf_store *st = wf_kind_is_istio(k) ? wf_store_new() : NULL;
    int rc = is.errors ? 0 : -1;
    if (st && rc == 0) {
        rc = to_document(obj, kind, group, ns, name, st);
        if (rc == 0 && wf_store_error_count(st)) {
            oc->result = WF_WHV_FAILED;
            oc->reason = R_DECODE;
            wf_strbuf_printf(&a->msg, "cannot decode configuration: %s",
                             wf_store_error(st, 0)->message);
        } else if (rc == 0 && (rc = wf_store_finalize(st, ns, false)) == 0 &&
                   wf_store_count(st) > 0) {
            wf_validate_resource(wf_store_at(st, 0), on_issue, &is);
        }
    }
    if (rc == 0 && !a->msg.len && json_array_size(is.errors)) {
        oc->result = WF_WHV_FAILED;
        oc->reason = R_INVALID;
        wf_strbuf_puts(&a->msg, "configuration is invalid: ");
        join_errors(is.errors, &a->msg);
    }
    const char *extra = rc == 0 && !a->msg.len ? unknown_field(obj) : NULL;
    if (extra) {
        oc->result = WF_WHV_FAILED;
        oc->reason = R_INVALID;
        wf_strbuf_printf(&a->msg, "unknown field \"%s\" on %s resource %s/%s", extra,
                         str(json_object_get(req, "kind"), "kind"), str(req, "namespace"), name);
    }
    if (rc == 0 && !a->msg.len) {
        oc->result = WF_WHV_PASSED;
        a->allowed = true;
    }
    wf_store_free(st);
    json_decref(is.errors);
    return rc;
}

static int respond(const json_t *review, const json_t *req, const answer *a, wf_strbuf *out)
{
    json_t *resp = json_pack("{s:s, s:b}", "uid", str(req, "uid"), "allowed", a->allowed);
    if (resp && a->msg.len)
        json_object_set_new(
            resp, "status",
            json_pack("{s:{}, s:s}", "metadata", "message", wf_strbuf_cstr(&a->msg)));
    if (resp && a->allowed && json_array_size(a->warnings)) /* refusals carry none (istiod) */
        json_object_set(resp, "warnings", a->warnings);
    const char *av = str(review, "apiVersion");
    json_t *top = resp
                      ? json_pack("{s:s, s:s, s:o}", "apiVersion", *av ? av : "admission.k8s.io/v1",
                                  "kind", "AdmissionReview", "response", resp)
                      : NULL;
    char *txt = top ? json_dumps(top, JSON_COMPACT) : NULL;
    json_decref(top);
    if (!txt)
        return 500;
    wf_strbuf_puts(out, txt);
    free(txt);
    return wf_strbuf_failed(out) ? 500 : 200;
}

int wf_webhook_validate(const char *content_type, const char *body, size_t len, wf_strbuf *out,
                        wf_whv_outcome *oc)
{
    memset(oc, 0, sizeof *oc);
    if (!body || len == 0)
        return http_error(out, oc, 400, "no body found");
    if (!content_type || strcmp(content_type, "application/json") != 0)
        return http_error(out, oc, 415, "invalid Content-Type, want `application/json`");
    json_error_t jerr;
    json_t *review = json_loadb(body, len, 0, &jerr);
    const json_t *req = json_object_get(review, "request");
    answer a = {.warnings = json_array()};
    int status = 500;
    if (!a.warnings)
        goto done;
    if (!json_is_object(req)) {
        oc->result = WF_WHV_UNDECODED;
        wf_strbuf_printf(&a.msg, "could not decode body: %s",
                         review ? "the AdmissionReview has no request" : jerr.text);
        status = respond(review, req, &a, out);
        goto done;
    }
    const json_t *res = json_object_get(req, "resource");
    copy(oc->group, sizeof oc->group, str(res, "group"));
    copy(oc->version, sizeof oc->version, str(res, "version"));
    copy(oc->resource, sizeof oc->resource, str(res, "resource"));
    const char *op = str(req, "operation");
    if (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0) {
        oc->result = WF_WHV_FAILED; /* counted as istiod does, and allowed */
        oc->reason = R_UNSUPPORTED;
        a.allowed = true;
    } else if (admit(req, oc, &a) != 0) {
        goto done;
    }
    status = respond(review, req, &a, out);
done:
    json_decref(review);
    json_decref(a.warnings);
    wf_strbuf_free(&a.msg);
    return status;
}
