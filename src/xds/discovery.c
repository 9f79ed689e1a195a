/*
 * discovery.c - xDS discovery messages: type URLs and the JSON codec. See discovery.h.
 * The ACK/NACK bookkeeping lives in discovery_state.c.
 */
#include "xds/discovery.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_util.h"

/* ---- type URLs ------------------------------------------------------------------------ */

static const char *const type_urls[WF_XDS_NTYPES] = {
    WF_XDS_TYPE_CLUSTER, WF_XDS_TYPE_LISTENER,  WF_XDS_TYPE_ROUTE,      WF_XDS_TYPE_ENDPOINT,
    WF_XDS_TYPE_SECRET,  WF_XDS_TYPE_EXTENSION, WF_XDS_TYPE_NAME_TABLE,
};
static const char *const type_shorts[WF_XDS_NTYPES] = {"CDS", "LDS",  "RDS", "EDS",
                                                       "SDS", "ECDS", "NDS"};

const char *wf_xds_type_url(wf_xds_type t)
{
    return (unsigned)t < WF_XDS_NTYPES ? type_urls[t] : NULL;
}

const char *wf_xds_type_short(wf_xds_type t)
{
    return (unsigned)t < WF_XDS_NTYPES ? type_shorts[t] : NULL;
}

int wf_xds_type_from_url(const char *url)
{
    for (int i = 0; url && i < WF_XDS_NTYPES; i++) {
        if (strcmp(url, type_urls[i]) == 0) {
            return i;
        }
    }
    return -1;
}

int wf_xds_type_from_url_n(const char *url, size_t len)
{
    for (int i = 0; url && i < WF_XDS_NTYPES; i++) {
        if (strlen(type_urls[i]) == len && memcmp(url, type_urls[i], len) == 0) {
            return i;
        }
    }
    return -1;
}

/* ---- errors and small helpers ------------------------------------------------------------ */

static int fail(wf_xds_err *err, const char *field, const char *fmt, ...)
{
    if (err) {
        char reason[160];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        snprintf(err->field, sizeof err->field, "%s", field);
        snprintf(err->text, sizeof err->text, "%s: %s", field, reason);
    }
    return WF_XDS_E_INVALID;
}

/* "prefix" + "name" into buf (the path of a field). */
static const char *path_of(char *buf, size_t cap, const char *prefix, const char *name)
{
    snprintf(buf, cap, "%s%s", prefix, name);
    return buf;
}

/* lowerCamelCase JSON name of a snake_case proto field. */
static void camel_of(const char *snake, char *buf, size_t cap)
{
    size_t o = 0;
    for (const char *p = snake; *p && o + 1 < cap; p++) {
        if (*p == '_' && p[1]) {
            buf[o++] = (char)toupper((unsigned char)*++p);
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = '\0';
}

/* Looks a field up under its snake and camel names. *out is NULL when absent or null.
 * 0, or WF_XDS_E_INVALID when both spellings are present. */
static int field(const json_t *obj, const char *snake, const char *prefix, const json_t **out,
                 wf_xds_err *err)
{
    char camel[64], path[96];
    camel_of(snake, camel, sizeof camel);
    const json_t *a = json_object_get(obj, snake);
    const json_t *b = strcmp(camel, snake) ? json_object_get(obj, camel) : NULL;
    if (a && b) {
        return fail(err, path_of(path, sizeof path, prefix, snake), "given twice (also as %s)",
                    camel);
    }
    *out = (a && !json_is_null(a)) ? a : (b && !json_is_null(b)) ? b : NULL;
    return WF_XDS_OK;
}

/* Reads an optional string field into *out (NULL when absent). */
static int get_str(const json_t *obj, const char *snake, const char *prefix, char **out,
                   wf_xds_err *err)
{
    const json_t *v;
    char path[96];
    int rc = field(obj, snake, prefix, &v, err);
    if (rc || !v) {
        return rc;
    }
    if (!json_is_string(v)) {
        return fail(err, path_of(path, sizeof path, prefix, snake), "expected a string, got %s",
                    wf_json_type_name(v));
    }
    *out = strdup(json_string_value(v));
    return *out ? WF_XDS_OK : WF_XDS_E_NOMEM;
}

static int get_required_str(const json_t *obj, const char *snake, char **out, wf_xds_err *err)
{
    int rc = get_str(obj, snake, "", out, err);
    if (rc == WF_XDS_OK && (!*out || !**out)) {
        return fail(err, snake, "required field missing");
    }
    return rc;
}

void wf_xds_names_free(wf_xds_names *n)
{
    for (size_t i = 0; i < n->n; i++) {
        free(n->v[i]);
    }
    free(n->v);
    n->v = NULL;
    n->n = 0;
}

int wf_xds_names_copy(wf_xds_names *dst, const wf_xds_names *src)
{
    dst->n = 0;
    dst->v = src->n ? calloc(src->n, sizeof *dst->v) : NULL;
    if (src->n && !dst->v) {
        return WF_XDS_E_NOMEM;
    }
    for (size_t i = 0; i < src->n; i++, dst->n++) {
        dst->v[i] = strdup(src->v[i]);
        if (!dst->v[i]) {
            wf_xds_names_free(dst);
            return WF_XDS_E_NOMEM;
        }
    }
    return WF_XDS_OK;
}

/* Reads an optional array of strings. */
static int get_names(const json_t *obj, const char *snake, wf_xds_names *out, wf_xds_err *err)
{
    const json_t *v;
    char path[96];
    int rc = field(obj, snake, "", &v, err);
    if (rc || !v) {
        return rc;
    }
    if (!json_is_array(v)) {
        return fail(err, snake, "expected an array, got %s", wf_json_type_name(v));
    }
    size_t n = json_array_size(v);
    out->v = n ? calloc(n, sizeof *out->v) : NULL;
    if (n && !out->v) {
        return WF_XDS_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) {
            snprintf(path, sizeof path, "%s[%zu]", snake, i);
            return fail(err, path, "expected a string, got %s", wf_json_type_name(s));
        }
        out->v[i] = strdup(json_string_value(s));
        if (!out->v[i]) {
            return WF_XDS_E_NOMEM;
        }
        out->n = i + 1;
    }
    return WF_XDS_OK;
}

/* Reads an optional object field, returning a borrowed pointer. */
static int get_obj(const json_t *obj, const char *snake, const char *prefix, const json_t **out,
                   wf_xds_err *err)
{
    char path[96];
    int rc = field(obj, snake, prefix, out, err);
    if (rc == WF_XDS_OK && *out && !json_is_object(*out)) {
        return fail(err, path_of(path, sizeof path, prefix, snake), "expected an object, got %s",
                    wf_json_type_name(*out));
    }
    return rc;
}

/* ---- node and status --------------------------------------------------------------------- */

void wf_xds_node_free(wf_xds_node *n)
{
    free(n->id);
    free(n->cluster);
    json_decref(n->metadata);
    memset(n, 0, sizeof *n);
}

static int decode_node(const json_t *obj, bool *has, wf_xds_node *out, wf_xds_err *err)
{
    const json_t *v, *md;
    int rc = get_obj(obj, "node", "", &v, err);
    if (rc || !v) {
        return rc;
    }
    *has = true;
    if ((rc = get_str(v, "id", "node.", &out->id, err)) ||
        (rc = get_str(v, "cluster", "node.", &out->cluster, err)) ||
        (rc = get_obj(v, "metadata", "node.", &md, err))) {
        return rc;
    }
    out->metadata = md ? json_incref((json_t *)md) : NULL;
    return WF_XDS_OK;
}

/* protobuf JSON int32: a number or a decimal string. */
static int decode_code(const json_t *v, int *code, wf_xds_err *err)
{
    const char *path = "error_detail.code";
    if (json_is_integer(v)) {
        json_int_t c = json_integer_value(v);
        if (c < INT32_MIN || c > INT32_MAX) {
            return fail(err, path, "out of range");
        }
        *code = (int)c;
        return WF_XDS_OK;
    }
    if (json_is_string(v)) {
        char *end;
        long c = strtol(json_string_value(v), &end, 10);
        if (*json_string_value(v) && !*end && c >= INT32_MIN && c <= INT32_MAX) {
            *code = (int)c;
            return WF_XDS_OK;
        }
    }
    return fail(err, path, "expected an integer, got %s", wf_json_type_name(v));
}

static int decode_status(const json_t *obj, bool *has, wf_xds_status *out, wf_xds_err *err)
{
    const json_t *v, *c;
    int rc = get_obj(obj, "error_detail", "", &v, err);
    if (rc || !v) {
        return rc;
    }
    *has = true;
    if ((rc = field(v, "code", "error_detail.", &c, err))) {
        return rc;
    }
    if (c && (rc = decode_code(c, &out->code, err))) {
        return rc;
    }
    return get_str(v, "message", "error_detail.", &out->message, err);
}

/* ---- decoders ------------------------------------------------------------------------------ */

static int not_object(const json_t *j, wf_xds_err *err)
{
    return fail(err, "", "expected a JSON object, got %s", j ? wf_json_type_name(j) : "nothing");
}

static int decode_request(const json_t *j, wf_xds_request *out, wf_xds_err *err)
{
    int rc;
    if (!json_is_object(j)) {
        return not_object(j, err);
    }
    if ((rc = get_str(j, "version_info", "", &out->version_info, err)) ||
        (rc = decode_node(j, &out->has_node, &out->node, err)) ||
        (rc = get_names(j, "resource_names", &out->resource_names, err)) ||
        (rc = get_required_str(j, "type_url", &out->type_url, err)) ||
        (rc = get_str(j, "response_nonce", "", &out->response_nonce, err))) {
        return rc;
    }
    return decode_status(j, &out->has_error, &out->error_detail, err);
}

int wf_xds_request_decode(const json_t *j, wf_xds_request *out, wf_xds_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = decode_request(j, out, err);
    if (rc) {
        wf_xds_request_free(out);
    }
    return rc;
}

/* An Any: an object with a string "@type"; when want is non-NULL it must equal it. */
static int check_any(const json_t *v, const char *path, const char *want, wf_xds_err *err)
{
    char p[96];
    if (!json_is_object(v)) {
        return fail(err, path, "expected an object, got %s", wf_json_type_name(v));
    }
    const json_t *t = json_object_get(v, "@type");
    snprintf(p, sizeof p, "%s.@type", path);
    if (!json_is_string(t) || !*json_string_value(t)) {
        return fail(err, p, "required field missing");
    }
    if (want && strcmp(json_string_value(t), want) != 0) {
        return fail(err, p, "%s does not match the message-wide type URL %s", json_string_value(t),
                    want);
    }
    return WF_XDS_OK;
}

static int decode_response(const json_t *j, wf_xds_response *out, wf_xds_err *err)
{
    const json_t *v;
    char path[32];
    int rc;
    if (!json_is_object(j)) {
        return not_object(j, err);
    }
    if ((rc = get_str(j, "version_info", "", &out->version_info, err)) ||
        (rc = get_required_str(j, "type_url", &out->type_url, err)) ||
        (rc = get_str(j, "nonce", "", &out->nonce, err)) ||
        (rc = field(j, "resources", "", &v, err)) || !v) {
        return rc;
    }
    if (!json_is_array(v)) {
        return fail(err, "resources", "expected an array, got %s", wf_json_type_name(v));
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        snprintf(path, sizeof path, "resources[%zu]", i);
        if ((rc = check_any(json_array_get(v, i), path, out->type_url, err))) {
            return rc;
        }
    }
    out->resources = json_incref((json_t *)v);
    return WF_XDS_OK;
}

int wf_xds_response_decode(const json_t *j, wf_xds_response *out, wf_xds_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = decode_response(j, out, err);
    if (rc) {
        wf_xds_response_free(out);
    }
    return rc;
}

static int decode_versions(const json_t *j, json_t **out, wf_xds_err *err)
{
    const json_t *v, *val;
    const char *key;
    char path[96];
    int rc = get_obj(j, "initial_resource_versions", "", &v, err);
    if (rc || !v) {
        return rc;
    }
    json_object_foreach((json_t *)v, key, val)
    {
        if (!json_is_string(val)) {
            snprintf(path, sizeof path, "initial_resource_versions[%.64s]", key);
            return fail(err, path, "expected a string, got %s", wf_json_type_name(val));
        }
    }
    *out = json_incref((json_t *)v);
    return WF_XDS_OK;
}

static int decode_delta_request(const json_t *j, wf_xds_delta_request *out, wf_xds_err *err)
{
    int rc;
    if (!json_is_object(j)) {
        return not_object(j, err);
    }
    if ((rc = decode_node(j, &out->has_node, &out->node, err)) ||
        (rc = get_required_str(j, "type_url", &out->type_url, err)) ||
        (rc = get_names(j, "resource_names_subscribe", &out->subscribe, err)) ||
        (rc = get_names(j, "resource_names_unsubscribe", &out->unsubscribe, err)) ||
        (rc = decode_versions(j, &out->initial_resource_versions, err)) ||
        (rc = get_str(j, "response_nonce", "", &out->response_nonce, err))) {
        return rc;
    }
    return decode_status(j, &out->has_error, &out->error_detail, err);
}

int wf_xds_delta_request_decode(const json_t *j, wf_xds_delta_request *out, wf_xds_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = decode_delta_request(j, out, err);
    if (rc) {
        wf_xds_delta_request_free(out);
    }
    return rc;
}

static int decode_resource(const json_t *v, size_t i, const char *type_url, wf_xds_resource *out,
                           wf_xds_err *err)
{
    char prefix[48], path[96];
    const json_t *any;
    int rc;
    snprintf(prefix, sizeof prefix, "resources[%zu].", i);
    if (!json_is_object(v)) {
        snprintf(path, sizeof path, "resources[%zu]", i);
        return fail(err, path, "expected an object, got %s", wf_json_type_name(v));
    }
    if ((rc = get_str(v, "name", prefix, &out->name, err)) ||
        (rc = get_str(v, "version", prefix, &out->version, err)) ||
        (rc = field(v, "resource", prefix, &any, err)) || !any) {
        return rc;
    }
    if ((rc = check_any(any, path_of(path, sizeof path, prefix, "resource"), type_url, err))) {
        return rc;
    }
    out->resource = json_incref((json_t *)any);
    return WF_XDS_OK;
}

static int decode_delta_resources(const json_t *j, wf_xds_delta_response *out, wf_xds_err *err)
{
    const json_t *v;
    int rc = field(j, "resources", "", &v, err);
    if (rc || !v) {
        return rc;
    }
    if (!json_is_array(v)) {
        return fail(err, "resources", "expected an array, got %s", wf_json_type_name(v));
    }
    size_t n = json_array_size(v);
    out->resources = n ? calloc(n, sizeof *out->resources) : NULL;
    if (n && !out->resources) {
        return WF_XDS_E_NOMEM;
    }
    out->n_resources = n;
    for (size_t i = 0; i < n; i++) {
        rc = decode_resource(json_array_get(v, i), i, out->type_url, &out->resources[i], err);
        if (rc) {
            return rc;
        }
    }
    return WF_XDS_OK;
}

static int decode_delta_response(const json_t *j, wf_xds_delta_response *out, wf_xds_err *err)
{
    int rc;
    if (!json_is_object(j)) {
        return not_object(j, err);
    }
    if ((rc = get_str(j, "system_version_info", "", &out->system_version_info, err)) ||
        (rc = get_required_str(j, "type_url", &out->type_url, err)) ||
        (rc = get_names(j, "removed_resources", &out->removed_resources, err)) ||
        (rc = get_required_str(j, "nonce", &out->nonce, err))) {
        return rc;
    }
    return decode_delta_resources(j, out, err);
}

int wf_xds_delta_response_decode(const json_t *j, wf_xds_delta_response *out, wf_xds_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = decode_delta_response(j, out, err);
    if (rc) {
        wf_xds_delta_response_free(out);
    }
    return rc;
}

int wf_xds_parse_text(const char *buf, size_t len, json_t **out, wf_xds_err *err)
{
    json_error_t je;
    *out = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!*out) {
        return json_error_code(&je) == json_error_out_of_memory
                   ? WF_XDS_E_NOMEM
                   : fail(err, "", "invalid JSON at offset %d: %s", je.position, je.text);
    }
    if (!json_is_object(*out)) {
        int rc = not_object(*out, err);
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    return WF_XDS_OK;
}

/* ---- encoders ------------------------------------------------------------------------------ */

/* Each setter returns 0 or -1 (allocation failed). Empty values are omitted. */
static int set_str(json_t *o, const char *k, const char *v)
{
    return (v && *v) ? json_object_set_new(o, k, json_string(v)) : 0;
}

static int set_ref(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set(o, k, v) : 0;
}

static int set_names(json_t *o, const char *k, const wf_xds_names *n)
{
    if (!n->n) {
        return 0;
    }
    json_t *a = json_array();
    if (!a || json_object_set_new(o, k, a)) {
        return -1;
    }
    for (size_t i = 0; i < n->n; i++) {
        if (json_array_append_new(a, json_string(n->v[i]))) {
            return -1;
        }
    }
    return 0;
}

static int set_node(json_t *o, bool has, const wf_xds_node *n)
{
    json_t *v = has ? json_object() : NULL;
    if (!has) {
        return 0;
    }
    if (!v || json_object_set_new(o, "node", v)) {
        return -1;
    }
    return (set_str(v, "id", n->id) || set_str(v, "cluster", n->cluster) ||
            set_ref(v, "metadata", n->metadata))
               ? -1
               : 0;
}

static int set_status(json_t *o, bool has, const wf_xds_status *s)
{
    json_t *v = has ? json_object() : NULL;
    if (!has) {
        return 0;
    }
    if (!v || json_object_set_new(o, "error_detail", v)) {
        return -1;
    }
    if (s->code && json_object_set_new(v, "code", json_integer(s->code))) {
        return -1;
    }
    return set_str(v, "message", s->message);
}

/* Returns o, or NULL (after dropping o) when any setter failed. */
static json_t *finish(json_t *o, int failed)
{
    if (failed) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *wf_xds_request_encode(const wf_xds_request *r)
{
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    int failed = set_str(o, "version_info", r->version_info) ||
                 set_node(o, r->has_node, &r->node) ||
                 set_names(o, "resource_names", &r->resource_names) ||
                 json_object_set_new(o, "type_url", json_string(r->type_url ? r->type_url : "")) ||
                 set_str(o, "response_nonce", r->response_nonce) ||
                 set_status(o, r->has_error, &r->error_detail);
    return finish(o, failed);
}

json_t *wf_xds_response_encode(const wf_xds_response *r)
{
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    int failed = set_str(o, "version_info", r->version_info) ||
                 (json_array_size(r->resources) && set_ref(o, "resources", r->resources)) ||
                 json_object_set_new(o, "type_url", json_string(r->type_url ? r->type_url : "")) ||
                 set_str(o, "nonce", r->nonce);
    return finish(o, failed);
}

json_t *wf_xds_delta_request_encode(const wf_xds_delta_request *r)
{
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    json_t *irv =
        json_object_size(r->initial_resource_versions) ? r->initial_resource_versions : NULL;
    int failed = set_node(o, r->has_node, &r->node) ||
                 json_object_set_new(o, "type_url", json_string(r->type_url ? r->type_url : "")) ||
                 set_names(o, "resource_names_subscribe", &r->subscribe) ||
                 set_names(o, "resource_names_unsubscribe", &r->unsubscribe) ||
                 set_ref(o, "initial_resource_versions", irv) ||
                 set_str(o, "response_nonce", r->response_nonce) ||
                 set_status(o, r->has_error, &r->error_detail);
    return finish(o, failed);
}

static json_t *encode_resource(const wf_xds_resource *r)
{
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    int failed = set_str(o, "name", r->name) || set_str(o, "version", r->version) ||
                 set_ref(o, "resource", r->resource);
    return finish(o, failed);
}

static int set_resources(json_t *o, const wf_xds_delta_response *r)
{
    if (!r->n_resources) {
        return 0;
    }
    json_t *a = json_array();
    if (!a || json_object_set_new(o, "resources", a)) {
        return -1;
    }
    for (size_t i = 0; i < r->n_resources; i++) {
        if (json_array_append_new(a, encode_resource(&r->resources[i]))) {
            return -1;
        }
    }
    return 0;
}

json_t *wf_xds_delta_response_encode(const wf_xds_delta_response *r)
{
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    int failed = set_str(o, "system_version_info", r->system_version_info) || set_resources(o, r) ||
                 json_object_set_new(o, "type_url", json_string(r->type_url ? r->type_url : "")) ||
                 set_names(o, "removed_resources", &r->removed_resources) ||
                 set_str(o, "nonce", r->nonce);
    return finish(o, failed);
}

/* ---- free ------------------------------------------------------------------------------------ */

void wf_xds_request_free(wf_xds_request *r)
{
    free(r->version_info);
    wf_xds_node_free(&r->node);
    wf_xds_names_free(&r->resource_names);
    free(r->type_url);
    free(r->response_nonce);
    free(r->error_detail.message);
    memset(r, 0, sizeof *r);
}

void wf_xds_response_free(wf_xds_response *r)
{
    free(r->version_info);
    json_decref(r->resources);
    free(r->type_url);
    free(r->nonce);
    memset(r, 0, sizeof *r);
}

void wf_xds_delta_request_free(wf_xds_delta_request *r)
{
    wf_xds_node_free(&r->node);
    free(r->type_url);
    wf_xds_names_free(&r->subscribe);
    wf_xds_names_free(&r->unsubscribe);
    json_decref(r->initial_resource_versions);
    free(r->response_nonce);
    free(r->error_detail.message);
    memset(r, 0, sizeof *r);
}

void wf_xds_delta_response_free(wf_xds_delta_response *r)
{
    for (size_t i = 0; i < r->n_resources; i++) {
        free(r->resources[i].name);
        free(r->resources[i].version);
        json_decref(r->resources[i].resource);
    }
    free(r->resources);
    free(r->system_version_info);
    free(r->type_url);
    wf_xds_names_free(&r->removed_resources);
    free(r->nonce);
    memset(r, 0, sizeof *r);
}
