/*
 * envoy_dump.c - reading Envoy config dumps (envoy_dump.h).
 */
#include "cli/envoy_dump.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_util.h"

/* ---- field-name spelling -------------------------------------------------------------------- */

/* How the value under a key is converted. */
typedef enum { CONV_MESSAGE, CONV_VERBATIM, CONV_MAP } conv_mode;

static bool is_snake_key(const char *k)
{
    if (!islower((unsigned char)k[0]))
        return false;
    bool us = false;
    for (const char *p = k; *p; p++) {
        if (*p == '_')
            us = true;
        else if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p))
            return false;
    }
    return us;
}

static bool is_camel_key(const char *k)
{
    if (!islower((unsigned char)k[0]))
        return false;
    bool upper = false;
    for (const char *p = k; *p; p++) {
        if (isupper((unsigned char)*p))
            upper = true;
        else if (!isalnum((unsigned char)*p))
            return false;
    }
    return upper;
}

/* "clusterName" -> "cluster_name" (malloc'd). */
static char *camel_to_snake(const char *k)
{
    size_t n = strlen(k);
    char *s = malloc(2 * n + 1);
    if (!s)
        return NULL;
    char *o = s;
    for (const char *p = k; *p; p++) {
        if (isupper((unsigned char)*p)) {
            *o++ = '_';
            *o++ = (char)tolower((unsigned char)*p);
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return s;
}

/* "cluster_name" -> "clusterName" (malloc'd), protoc's json_name rule. */
static char *snake_to_camel(const char *k)
{
    char *s = malloc(strlen(k) + 1);
    if (!s)
        return NULL;
    char *o = s;
    bool up = false;
    for (const char *p = k; *p; p++) {
        if (*p == '_') {
            up = true;
            continue;
        }
        *o++ = up ? (char)toupper((unsigned char)*p) : *p;
        up = false;
    }
    *o = '\0';
    return s;
}

static bool only_metadata_keys(const json_t *v)
{
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        if (strcmp(k, "filter_metadata") != 0 && strcmp(k, "typed_filter_metadata") != 0 &&
            strcmp(k, "filterMetadata") != 0 && strcmp(k, "typedFilterMetadata") != 0)
            return false;
    }
    return true;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The conversion of the value under snake_case key `key` of object `parent`. */
static conv_mode mode_of(const json_t *parent, const char *key, const json_t *value)
{
    static const char *const verbatim[] = {"filter_metadata", "key_values", "static_layer",
                                           "per_filter_config"};
    static const char *const maps[] = {"typed_filter_metadata", "typed_per_filter_config",
                                       "typed_extension_protocol_options"};
    for (size_t i = 0; i < sizeof verbatim / sizeof verbatim[0]; i++)
        if (strcmp(key, verbatim[i]) == 0)
            return CONV_VERBATIM;
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        if (strcmp(key, maps[i]) == 0)
            return CONV_MAP;
    if (strcmp(key, "metadata") == 0 && json_is_object(value) && !only_metadata_keys(value))
        return CONV_VERBATIM; /* a google.protobuf.Struct (node metadata) */
    if (strcmp(key, "value") == 0) {
        const char *t = json_string_value(json_object_get(parent, "@type"));
        if (t &&
            (ends_with(t, "TypedStruct") || ends_with(t, "google.protobuf.Struct") ||
             ends_with(t, "google.protobuf.Value") || ends_with(t, "google.protobuf.ListValue")))
            return CONV_VERBATIM;
    }
    return CONV_MESSAGE;
}

static int snake_value(json_t *v, conv_mode m);

static int snake_object(json_t *obj)
{
    /* Rename first (collect keys: renaming while iterating is not allowed). */
    size_t n = json_object_size(obj), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    if (!keys)
        return -1;
    const char *k;
    json_t *x;
    json_object_foreach(obj, k, x) keys[i++] = k;
    json_t *fresh = json_object();
    if (!fresh) {
        free(keys);
        return -1;
    }
    int rc = 0;
    for (i = 0; i < n && rc == 0; i++) {
        json_t *val = json_object_get(obj, keys[i]);
        char *nk = is_camel_key(keys[i]) ? camel_to_snake(keys[i]) : strdup(keys[i]);
        if (!nk || json_object_set(fresh, nk, val) != 0)
            rc = -1;
        free(nk);
    }
    free(keys);
    if (rc == 0) {
        /* replace the old spellings (fresh holds references to every value) */
        json_object_clear(obj);
        rc = json_object_update(obj, fresh);
    }
    if (rc == 0) {
        json_object_foreach(obj, k, x)
        {
            if (snake_value(x, mode_of(obj, k, x)) != 0) {
                rc = -1;
                break;
            }
        }
    }
    json_decref(fresh);
    return rc;
}

static int snake_value(json_t *v, conv_mode m)
{
    if (m == CONV_VERBATIM)
        return 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) if (snake_value(x, m) != 0) return -1;
        return 0;
    }
    if (!json_is_object(v))
        return 0;
    if (m == CONV_MAP) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) if (snake_value(x, CONV_MESSAGE) != 0) return -1;
        return 0;
    }
    return snake_object(v);
}

int wf_json_keys_to_snake(json_t *v)
{
    return snake_value(v, CONV_MESSAGE);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static json_t *camel_value(const json_t *v, conv_mode m);

/* Copy of a map or Struct object with sorted keys; values converted with vm. */
static json_t *sorted_copy(const json_t *obj, conv_mode vm)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *out = json_object();
    if (!keys || !out) {
        free(keys);
        json_decref(out);
        return NULL;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)obj, k, x) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_str);
    for (i = 0; i < n; i++) {
        json_t *c = camel_value(json_object_get(obj, keys[i]), vm);
        if (!c || json_object_set_new(out, keys[i], c) != 0) {
            json_decref(out);
            out = NULL;
            break;
        }
    }
    free(keys);
    return out;
}

static json_t *camel_object(const json_t *obj)
{
    json_t *out = json_object();
    if (!out)
        return NULL;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)obj, k, x)
    {
        char *nk = is_snake_key(k) ? snake_to_camel(k) : strdup(k);
        json_t *c = camel_value(x, mode_of(obj, k, x));
        if (!nk || !c || json_object_set_new(out, nk, c) != 0) {
            free(nk);
            json_decref(out);
            return NULL;
        }
        free(nk);
    }
    return out;
}

static json_t *camel_value(const json_t *v, conv_mode m)
{
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x)
        {
            json_t *c = camel_value(x, m);
            if (!out || !c || json_array_append_new(out, c) != 0) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    if (m == CONV_VERBATIM)
        return sorted_copy(v, CONV_VERBATIM);
    if (m == CONV_MAP)
        return sorted_copy(v, CONV_MESSAGE);
    return camel_object(v);
}

json_t *wf_json_camel_copy(const json_t *v)
{
    return camel_value(v, CONV_MESSAGE);
}

/* ---- loading --------------------------------------------------------------------------------- */

/* ---- shape checks: a field of the wrong type is an error naming its JSON path (istioctl's
 * protojson refuses such a dump), so tables never print half-read values ---- */

typedef enum { K_STR, K_INT, K_OBJ, K_ARR } kind;

static const char *kind_name(kind k)
{
    static const char *const n[] = {"a string", "an integer", "an object", "an array"};
    return n[k];
}

static bool is_kind(const json_t *v, kind k)
{
    switch (k) {
    case K_STR:
        return json_is_string(v);
    case K_INT:
        return json_is_integer(v) ||
               (json_is_string(v) && *json_string_value(v) &&
                strspn(json_string_value(v), "0123456789") == strlen(json_string_value(v)));
    case K_OBJ:
        return json_is_object(v);
    default:
        return json_is_array(v);
    }
}

/* obj.key, when present, must be of kind k. path: the JSON path of obj. */
static int want(const json_t *obj, const char *key, kind k, const char *src, const char *path,
                wf_strbuf *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v) || is_kind(v, k))
        return 0;
    wf_strbuf_printf(err, "%s: %s.%s: expected %s", src, path, key, kind_name(k));
    return -1;
}

static int check_cluster(const json_t *c, const char *src, const char *path, wf_strbuf *err)
{
    static const char *const types[] = {"STATIC", "STRICT_DNS",   "LOGICAL_DNS",
                                        "EDS",    "ORIGINAL_DST", NULL};
    if (want(c, "name", K_STR, src, path, err) || want(c, "type", K_STR, src, path, err))
        return -1;
    const char *t = json_string_value(json_object_get(c, "type"));
    for (size_t i = 0; t && types[i]; i++)
        if (strcmp(t, types[i]) == 0)
            return 0;
    if (!t)
        return 0;
    wf_strbuf_printf(err, "%s: %s.type: unknown cluster type \"%s\"", src, path, t);
    return -1;
}

static int check_listener(const json_t *l, const char *src, const char *path, wf_strbuf *err)
{
    char p2[512];
    const json_t *sa = json_object_get(json_object_get(l, "address"), "socket_address");
    snprintf(p2, sizeof p2, "%s.address.socket_address", path);
    return want(l, "name", K_STR, src, path, err) || want(l, "address", K_OBJ, src, path, err) ||
                   want(l, "filter_chains", K_ARR, src, path, err) ||
                   (sa && (want(sa, "port_value", K_INT, src, p2, err) ||
                           want(sa, "address", K_STR, src, p2, err)))
               ? -1
               : 0;
}

static int check_route_config(const json_t *rc, const char *src, const char *path, wf_strbuf *err)
{
    if (want(rc, "name", K_STR, src, path, err) || want(rc, "virtual_hosts", K_ARR, src, path, err))
        return -1;
    const json_t *vh;
    size_t i;
    json_array_foreach(json_object_get(rc, "virtual_hosts"), i, vh)
    {
        char p2[512];
        snprintf(p2, sizeof p2, "%s.virtual_hosts[%zu]", path, i);
        if (!json_is_object(vh)) {
            wf_strbuf_printf(err, "%s: %s: expected an object", src, p2);
            return -1;
        }
        if (want(vh, "name", K_STR, src, p2, err) || want(vh, "domains", K_ARR, src, p2, err) ||
            want(vh, "routes", K_ARR, src, p2, err))
            return -1;
    }
    return 0;
}

typedef int (*check_fn)(const json_t *, const char *, const char *, wf_strbuf *);

/* Every element of section.list (unwrapped by inner) checked with fn. */
static int check_list(const json_t *sec, const char *ppath, const char *list, const char *inner,
                      check_fn fn, const char *src, wf_strbuf *err)
{
    const json_t *arr = json_object_get(sec, list), *e;
    size_t i;
    json_array_foreach(arr, i, e)
    {
        char path[512];
        snprintf(path, sizeof path, "%s.%s[%zu].%s", ppath, list, i, inner);
        const json_t *r = wf_jpath(e, inner);
        if (!r || json_is_null(r))
            continue;
        if (!json_is_object(r)) {
            wf_strbuf_printf(err, "%s: %s: expected an object", src, path);
            return -1;
        }
        if (fn(r, src, path, err) != 0)
            return -1;
    }
    return 0;
}

static int check_section(const json_t *sec, size_t i, const char *src, wf_strbuf *err)
{
    char p[64];
    snprintf(p, sizeof p, "configs[%zu]", i);
    const char *t = json_string_value(json_object_get(sec, "@type"));
    if (!t)
        return 0;
    if (strcmp(t, WF_DUMP_T_CLUSTERS) == 0)
        return check_list(sec, p, "static_clusters", "cluster", check_cluster, src, err) ||
               check_list(sec, p, "dynamic_active_clusters", "cluster", check_cluster, src, err) ||
               check_list(sec, p, "dynamic_warming_clusters", "cluster", check_cluster, src, err);
    if (strcmp(t, WF_DUMP_T_LISTENERS) == 0)
        return check_list(sec, p, "static_listeners", "listener", check_listener, src, err) ||
               check_list(sec, p, "dynamic_listeners", "active_state.listener", check_listener, src,
                          err);
    if (strcmp(t, WF_DUMP_T_ROUTES) == 0)
        return check_list(sec, p, "static_route_configs", "route_config", check_route_config, src,
                          err) ||
               check_list(sec, p, "dynamic_route_configs", "route_config", check_route_config, src,
                          err);
    return 0;
}

/* configs[] entries must be objects; the fields the tables read must have their types. */
static int check_shapes(const json_t *root, const char *src, wf_strbuf *err)
{
    const json_t *configs = json_object_get(root, "configs"), *sec;
    size_t i;
    json_array_foreach(configs, i, sec)
    {
        if (!json_is_object(sec)) {
            wf_strbuf_printf(err, "%s: configs[%zu]: expected an object", src, i);
            return -1;
        }
        if (check_section(sec, i, src, err) != 0)
            return -1;
    }
    return 0;
}

int wf_envoy_dump_parse(const char *text, size_t len, const char *source, wf_envoy_dump *out,
                        wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) {
        wf_strbuf_printf(err, "%s: line %d column %d: %s", source, je.line, je.column, je.text);
        return -1;
    }
    if (!json_is_object(root)) {
        wf_strbuf_printf(err, "%s: the document is not a JSON object", source);
        json_decref(root);
        return -1;
    }
    out->source = strdup(source);
    if (!out->source || wf_json_keys_to_snake(root) != 0) {
        wf_strbuf_printf(err, "%s: out of memory", source);
        json_decref(root);
        free(out->source);
        out->source = NULL;
        return -1;
    }
    if (check_shapes(root, source, err) != 0) {
        json_decref(root);
        free(out->source);
        out->source = NULL;
        return -1;
    }
    out->root = root;
    return 0;
}

static int read_all(FILE *f, const char *path, wf_strbuf *buf, wf_strbuf *err)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (buf->len + n > WF_DUMP_MAX_BYTES) {
            wf_strbuf_printf(err, "%s is larger than 256 MiB", path);
            return -1;
        }
        wf_strbuf_append(buf, chunk, n);
    }
    if (ferror(f)) {
        wf_strbuf_printf(err, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (wf_strbuf_failed(buf)) {
        wf_strbuf_printf(err, "cannot read %s: out of memory", path);
        return -1;
    }
    return 0;
}

int wf_envoy_dump_load_file(const char *path, wf_envoy_dump *out, wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        wf_strbuf_printf(err, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    wf_strbuf buf = WF_STRBUF_INIT;
    int rc = read_all(f, is_stdin ? "stdin" : path, &buf, err);
    if (!is_stdin)
        fclose(f);
    if (rc == 0)
        rc = wf_envoy_dump_parse(buf.data ? buf.data : "", buf.len, is_stdin ? "stdin" : path, out,
                                 err);
    wf_strbuf_free(&buf);
    return rc;
}

void wf_envoy_dump_free(wf_envoy_dump *d)
{
    json_decref(d->root);
    free(d->source);
    d->root = NULL;
    d->source = NULL;
}

/* ---- sections -------------------------------------------------------------------------------- */

json_t *wf_envoy_dump_section(const wf_envoy_dump *d, const char *type_url, size_t *index,
                              wf_strbuf *err)
{
    json_t *configs = json_object_get(d->root, "configs");
    if (configs && !json_is_array(configs)) {
        wf_strbuf_printf(err, "%s: configs: expected an array", d->source);
        return NULL;
    }
    json_t *found = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(configs, i, c)
    {
        const char *t = wf_jstr(c, "@type");
        if (t && strcmp(t, type_url) == 0) {
            found = c;
            if (index)
                *index = i;
        }
    }
    if (!found)
        wf_strbuf_printf(err, "config dump has no configuration type %s", type_url);
    return found;
}

/* Follows a dotted path of objects; NULL when a step is missing. On a step that is not an
 * object, sets *bad to the prefix length of the path that failed. */
static json_t *follow(json_t *v, const char *path, size_t *bad)
{
    const char *p = path;
    while (v && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        if (!json_is_object(v)) {
            *bad = (size_t)(p - path);
            return NULL;
        }
        v = json_object_get(v, key);
        p += n + (dot ? 1 : 0);
    }
    return v;
}

int wf_envoy_dump_items(const wf_envoy_dump *d, const json_t *section, size_t index,
                        const char *list, const char *inner, json_t *out, wf_strbuf *err)
{
    json_t *arr = json_object_get(section, list);
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        wf_strbuf_printf(err, "%s: configs[%zu].%s: expected an array, got %s", d->source, index,
                         list, wf_json_type_name(arr));
        return -1;
    }
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it)
    {
        size_t bad = 0;
        json_t *v = inner ? follow(it, inner, &bad) : it;
        if (!v && bad == 0 && inner && json_is_object(it))
            continue; /* absent (e.g. a warming listener has no active_state) */
        if (!v || !json_is_object(v)) {
            wf_strbuf_printf(err, "%s: configs[%zu].%s[%zu]%s%s: expected an object, got %s",
                             d->source, index, list, i, inner ? "." : "", inner ? inner : "",
                             v ? wf_json_type_name(v) : wf_json_type_name(it));
            return -1;
        }
        if (json_array_append(out, v) != 0) {
            wf_strbuf_printf(err, "%s: out of memory", d->source);
            return -1;
        }
    }
    return 0;
}

/* ---- accessors ------------------------------------------------------------------------------- */

const char *wf_jstr(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

const char *wf_jstr_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = wf_jstr(obj, key);
    return s ? s : dflt;
}

long long wf_jint(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (long long)json_real_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

json_t *wf_jpath(const json_t *obj, const char *dotted_path)
{
    size_t bad = 0;
    return follow((json_t *)obj, dotted_path, &bad);
}
