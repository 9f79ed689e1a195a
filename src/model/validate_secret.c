/*
 * validate_secret.c - a Kubernetes Secret as the API server decodes it (validate.h
 * wf_validate_secret). The local mesh and pilot's folder source read Secrets from files that
 * no API server has seen; `kubectl apply` would refuse these with the decoder's error
 * (encoding/json into corev1.Secret: `data` is map[string][]byte, each value base64 per Go's
 * encoding/base64 StdEncoding; `stringData` is map[string]string) or the validation's
 * (ValidateSecret: keys are config keys, [-._a-zA-Z0-9]+). Messages follow the API server's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "model/validate.h"

static void issue(const wf_resource *r, wf_validation_cb cb, void *arg, const char *path,
                  const wf_node *at, const char *msg)
{
    wf_validation_issue is = {.path = path, .node = at, .message = msg};
    cb(r, &is, arg);
}

/* What a JSON decoder says a YAML node is ("array", "object", "number", "bool", "string"). */
static const char *json_kind(const wf_node *n)
{
    const char *k = wf_node_kind_name(n);
    if (!strcmp(k, "integer"))
        return "number";
    if (!strcmp(k, "boolean"))
        return "bool";
    return k;
}

static bool config_key_ok(const char *k)
{
    if (!*k || strlen(k) > 253 || !strcmp(k, ".") || !strcmp(k, ".."))
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

static int check_map(const wf_resource *r, wf_validation_cb cb, void *arg, const char *field,
                     bool base64)
{
    const wf_node *m = wf_map_get(r->root, field);
    char path[512], msg[768];
    if (!m || m->type == WF_NODE_NULL)
        return 0;
    if (m->type != WF_NODE_MAP) {
        snprintf(msg, sizeof msg,
                 "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal "
                 "%s into Go struct field Secret.%s of type map[string]%s",
                 json_kind(m), field, base64 ? "[]uint8" : "string");
        issue(r, cb, arg, field, m, msg);
        return 1;
    }
    int errors = 0;
    for (size_t i = 0; i < m->len; i++) {
        const wf_map_entry *e = &m->u.entries[i];
        const wf_node *v = e->value;
        snprintf(path, sizeof path, "%s[%s]", field, e->key);
        if (!config_key_ok(e->key)) {
            snprintf(msg, sizeof msg,
                     "Invalid value: \"%.200s\": a valid config key must consist of alphanumeric "
                     "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                     "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                     e->key);
            issue(r, cb, arg, path, v, msg);
            errors++;
            continue;
        }
        if (v->type == WF_NODE_NULL)
            continue;
        if (!wf_node_is_string(v)) {
            snprintf(msg, sizeof msg,
                     "Secret in version \"v1\" cannot be handled as a Secret: json: cannot "
                     "unmarshal %s into Go struct field Secret.%s of type %s",
                     json_kind(v), field, base64 ? "[]uint8" : "string");
            issue(r, cb, arg, path, v, msg);
            errors++;
            continue;
        }
        if (!base64)
            continue;
        unsigned char *out = malloc(v->len / 4 * 3 + 3);
        size_t n;
        if (!out)
            continue; /* out of memory: not checked, nothing wrongly refused */
        size_t bad = 0;
        bool ok = wf_base64_decode_at(v->u.str, v->len, 0, out, &n, &bad);
        free(out);
        if (ok)
            continue;
        snprintf(msg, sizeof msg,
                 "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at "
                 "input byte %zu",
                 bad);
        issue(r, cb, arg, path, v, msg);
        errors++;
    }
    return errors;
}

int wf_validate_secret(const wf_resource *r, wf_validation_cb cb, void *arg)
{
    if (r->kind != WF_KIND_SECRET)
        return 0;
    return check_map(r, cb, arg, "data", true) + check_map(r, cb, arg, "stringData", false);
}
