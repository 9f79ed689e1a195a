/*
 * inject_review.c - the `/inject` AdmissionReview v1 exchange (kube/inject.h
 * wf_inject_review; Istio's pkg/kube/inject/webhook.go serveInject, inject, parseInjectEnvs,
 * createPatch; ../shared/reference/kubernetes.md §3.2):
 *   - an empty body is 400 "no body found"; a Content-Type other than application/json is 415
 *     "invalid Content-Type, want `application/json`" (checked in that order, as Istio does);
 *     a body that is not an AdmissionReview with a request is 400 "could not decode body: ...";
 *   - the response copies the request's apiVersion, kind and uid;
 *   - the pod's managedFields are dropped and an empty metadata.namespace is request.namespace
 *     before anything else; the JSON Patch is the diff from that pod to the injected one;
 *   - a skipped pod is allowed without a patch; an injection error is allowed false with
 *     status.message; warnings (what weft does not implement) go in response.warnings;
 *   - /inject/<k>/<v>/... sets istio-proxy's environment (cluster → ISTIO_META_CLUSTER_ID,
 *     net → ISTIO_META_NETWORK, other keys upper-cased; "--slash--" is "/"; the deprecated
 *     /inject/:ENV:K=V form too, its values taken as written); dryRun changes nothing (the
 *     injector has no side effects).
 */
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "kube/inject_internal.h"
#include "kube/jsonpatch.h"

static char *slash(const char *s, size_t n)
{
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < n;) {
        if (n - i >= 9 && strncmp(s + i, "--slash--", 9) == 0) {
            wf_strbuf_putc(&b, '/');
            i += 9;
        } else {
            wf_strbuf_putc(&b, s[i++]);
        }
    }
    wf_strbuf_puts(&b, "");
    return wf_strbuf_failed(&b) ? (wf_strbuf_free(&b), NULL) : wf_strbuf_take(&b);
}

static int set_env(json_t *envs, const char *key, const char *value)
{
    const char *env = strcmp(key, "cluster") == 0 ? "ISTIO_META_CLUSTER_ID"
                      : strcmp(key, "net") == 0   ? "ISTIO_META_NETWORK"
                                                  : NULL;
    if (env)
        return json_object_set_new(envs, env, json_string(value));
    char *up = strdup(key);
    if (!up)
        return -1;
    for (char *p = up; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    int rc = *up ? json_object_set_new(envs, up, json_string(value)) : 0;
    free(up);
    return rc;
}

/* Istio's parseInjectEnvs. */
static json_t *path_envs(const char *path)
{
    json_t *envs = json_object();
    if (!envs || !path)
        return envs;
    size_t len = strlen(path);
    while (len && path[len - 1] == '/')
        len--;
    /* "/inject/<rest>": the rest after the second '/' */
    const char *rest = NULL;
    if (len && path[0] == '/') {
        const char *s = memchr(path + 1, '/', len - 1);
        if (s)
            rest = s + 1;
    }
    if (!rest || rest >= path + len)
        return envs;
    size_t rl = (size_t)(path + len - rest);
    if (rl >= 5 && strncmp(rest, ":ENV:", 5) == 0) {
        const char *p = rest + 5, *end = path + len;
        while (p < end) {
            const char *next = strstr(p, ":ENV:");
            if (!next || next > end)
                next = end;
            const char *eq = memchr(p, '=', (size_t)(next - p));
            if (eq && eq > p) {
                char *k = strndup(p, (size_t)(eq - p)),
                     *v = strndup(eq + 1, (size_t)(next - eq - 1));
                if (!k || !v || set_env(envs, k, v) != 0) {
                    free(k), free(v);
                    json_decref(envs);
                    return NULL;
                }
                free(k), free(v);
            }
            p = next + (next < end ? 5 : 0);
        }
        return envs;
    }
    const char *p = rest, *end = path + len;
    while (p < end) {
        const char *ks = p, *ke = memchr(p, '/', (size_t)(end - p));
        if (!ke)
            break; /* a last key without value is ignored */
        const char *vs = ke + 1, *ve = memchr(vs, '/', (size_t)(end - vs));
        if (!ve)
            ve = end;
        char *k = slash(ks, (size_t)(ke - ks)), *v = slash(vs, (size_t)(ve - vs));
        int rc = k && v ? set_env(envs, k, v) : -1;
        free(k), free(v);
        if (rc != 0) {
            json_decref(envs);
            return NULL;
        }
        p = ve + (ve < end);
    }
    return envs;
}

static int bad_request(wf_strbuf *out, int code, const char *text)
{
    wf_strbuf_printf(out, "%s\n", text);
    return code;
}

/* The AdmissionResponse for the request (uid filled by the caller). */
static json_t *respond(const wf_inject_config *cfg, const char *path, const json_t *req)
{
    json_t *warnings = json_array();
    json_t *resp = json_object();
    json_t *pod = json_deep_copy(json_object_get(req, "object"));
    json_t *envs = path_envs(path);
    json_t *injected = NULL, *patch = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = -1;
    if (!warnings || !resp || !envs || (json_object_get(req, "object") && !pod)) {
        wf_strbuf_puts(&why, "out of memory");
    } else if (!json_is_object(pod)) {
        wf_strbuf_puts(&why, "could not unmarshal raw object: the request has no object");
    } else {
        json_t *md = json_object_get(pod, "metadata");
        if (json_is_object(md)) {
            json_object_del(md, "managedFields");
            const char *ns = json_string_value(json_object_get(md, "namespace"));
            const char *rns = json_string_value(json_object_get(req, "namespace"));
            if ((!ns || !*ns) && rns)
                json_object_set_new(md, "namespace", json_string(rns));
        }
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        rc = wf_inj_pod(cfg, pod, ns, NULL, envs, &injected, warnings, &why);
        if (rc == 1 && !(patch = wf_jsonpatch_create(pod, injected))) {
            wf_strbuf_reset(&why);
            wf_strbuf_puts(&why, "out of memory");
            rc = -1;
        }
    }
    int err = 0;
    if (resp && rc == 1) {
        char *text = json_dumps(patch, JSON_COMPACT | JSON_PRESERVE_ORDER);
        size_t n = text ? strlen(text) : 0, cap = 4 * ((n + 2) / 3) + 1;
        char *b64 = text ? malloc(cap) : NULL;
        if (b64 && wf_base64_encode((const unsigned char *)text, n, b64, cap) == 0 && n)
            err = -1;
        err |= !b64 || json_object_set_new(resp, "allowed", json_true()) ||
               json_object_set_new(resp, "patchType", json_string("JSONPatch")) ||
               json_object_set_new(resp, "patch", json_string(b64));
        free(text);
        free(b64);
    } else if (resp && rc == 0) {
        err = json_object_set_new(resp, "allowed", json_true());
    } else if (resp) {
        err = json_object_set_new(resp, "allowed", json_false()) ||
              json_object_set_new(resp, "status",
                                  json_pack("{s:s}", "message", wf_strbuf_cstr(&why)));
    }
    if (resp && !err && json_array_size(warnings))
        err = json_object_set(resp, "warnings", warnings);
    if (err)
        json_decref(resp), resp = NULL;
    wf_strbuf_free(&why);
    json_decref(warnings);
    json_decref(pod);
    json_decref(envs);
    json_decref(injected);
    json_decref(patch);
    return resp;
}

int wf_inject_review(const wf_inject_config *cfg, const char *path, const char *content_type,
                     const char *body, size_t len, wf_strbuf *out)
{
    if (!body || len == 0)
        return bad_request(out, 400, "no body found");
    if (!content_type || strcmp(content_type, "application/json") != 0)
        return bad_request(out, 415, "invalid Content-Type, want `application/json`");
    json_error_t jerr;
    json_t *ar = json_loadb(body, len, 0, &jerr);
    const json_t *req = json_object_get(ar, "request");
    if (!json_is_object(ar) || !json_is_object(req)) {
        wf_strbuf_printf(out, "could not decode body: %s\n",
                         !ar ? jerr.text : "not an AdmissionReview with a request");
        json_decref(ar);
        return 400;
    }
    json_t *resp = respond(cfg, path, req);
    const json_t *uid = json_object_get(req, "uid");
    const char *api = json_string_value(json_object_get(ar, "apiVersion"));
    const char *kind = json_string_value(json_object_get(ar, "kind"));
    json_t *review = resp ? json_object() : NULL;
    int rc = review && (!uid || json_object_set(resp, "uid", (json_t *)uid) == 0) &&
                     (!api || json_object_set_new(review, "apiVersion", json_string(api)) == 0) &&
                     (!kind || json_object_set_new(review, "kind", json_string(kind)) == 0) &&
                     json_object_set(review, "response", resp) == 0
                 ? 0
                 : -1;
    char *text = rc == 0 ? json_dumps(review, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(resp);
    json_decref(review);
    json_decref(ar);
    if (!text)
        return bad_request(out, 500, "could not encode response: out of memory");
    wf_strbuf_puts(out, text);
    free(text);
    return 200;
}
