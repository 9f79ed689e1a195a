/*
 * jsonpatch.c - RFC 6902 diff (gomodules jsonpatch/v2 CreatePatch) and apply (jsonpatch.h).
 */
#include "kube/jsonpatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void wf_jsonpointer_append(wf_strbuf *b, const char *token)
{
    wf_strbuf_putc(b, '/');
    for (const char *p = token; *p; p++) {
        if (*p == '~')
            wf_strbuf_puts(b, "~0");
        else if (*p == '/')
            wf_strbuf_puts(b, "~1");
        else
            wf_strbuf_putc(b, *p);
    }
}

/* ---- diff --------------------------------------------------------------------------------- */

static int op(json_t *patch, const char *name, const wf_strbuf *path, const json_t *value)
{
    json_t *o = json_pack("{s:s,s:s}", "op", name, "path", path->len ? wf_strbuf_cstr(path) : "");
    if (!o)
        return -1;
    if (value && json_object_set_new(o, "value", json_deep_copy(value)) != 0) {
        json_decref(o);
        return -1;
    }
    return json_array_append_new(patch, o);
}

static int diff(json_t *patch, wf_strbuf *path, const json_t *a, const json_t *b);

/* Back to len bytes after a child's token was appended. */
static void path_cut(wf_strbuf *path, size_t len)
{
    path->len = len;
    if (path->data)
        path->data[len] = '\0';
}

/* diff of a and b at path + "/" + token. */
static int diff_child(json_t *patch, wf_strbuf *path, const char *token, const json_t *a,
                      const json_t *b)
{
    size_t len = path->len;
    wf_jsonpointer_append(path, token);
    int rc = wf_strbuf_failed(path) ? -1 : diff(patch, path, a, b);
    path_cut(path, len);
    return rc;
}

/* One operation at path + "/" + token. */
static int child_op(json_t *patch, wf_strbuf *path, const char *name, const char *token,
                    const json_t *value)
{
    size_t len = path->len;
    wf_jsonpointer_append(path, token);
    int rc = wf_strbuf_failed(path) ? -1 : op(patch, name, path, value);
    path_cut(path, len);
    return rc;
}

static int diff_object(json_t *patch, wf_strbuf *path, const json_t *a, const json_t *b)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)b, key, v)
    {
        const json_t *old = json_object_get(a, key);
        int rc = old ? diff_child(patch, path, key, old, v) : child_op(patch, path, "add", key, v);
        if (rc != 0)
            return -1;
    }
    json_object_foreach((json_t *)a, key, v)
    {
        if (!json_object_get(b, key) && child_op(patch, path, "remove", key, NULL) != 0)
            return -1;
    }
    return 0;
}

static int diff_array(json_t *patch, wf_strbuf *path, const json_t *a, const json_t *b)
{
    size_t na = json_array_size(a), nb = json_array_size(b), n = na < nb ? na : nb;
    char idx[24];
    for (size_t i = na; i > n; i--) {
        snprintf(idx, sizeof idx, "%zu", i - 1);
        if (child_op(patch, path, "remove", idx, NULL) != 0)
            return -1;
    }
    for (size_t i = n; i < nb; i++) {
        snprintf(idx, sizeof idx, "%zu", i);
        if (child_op(patch, path, "add", idx, json_array_get(b, i)) != 0)
            return -1;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(idx, sizeof idx, "%zu", i);
        if (diff_child(patch, path, idx, json_array_get(a, i), json_array_get(b, i)) != 0)
            return -1;
    }
    return 0;
}

static int diff(json_t *patch, wf_strbuf *path, const json_t *a, const json_t *b)
{
    if (json_equal((json_t *)a, (json_t *)b))
        return 0;
    if (json_is_object(a) && json_is_object(b))
        return diff_object(patch, path, a, b);
    if (json_is_array(a) && json_is_array(b))
        return diff_array(patch, path, a, b);
    return op(patch, "replace", path, b);
}

json_t *wf_jsonpatch_create(const json_t *from, const json_t *to)
{
    json_t *patch = json_array();
    wf_strbuf path = WF_STRBUF_INIT;
    if (patch && diff(patch, &path, from, to) != 0) {
        json_decref(patch);
        patch = NULL;
    }
    wf_strbuf_free(&path);
    return patch;
}

/* ---- apply -------------------------------------------------------------------------------- */

/* The next unescaped token of pointer *p (after its '/') into tok; advances *p. */
static int next_token(const char **p, wf_strbuf *tok)
{
    wf_strbuf_reset(tok);
    const char *s = *p + 1;
    for (; *s && *s != '/'; s++) {
        if (*s == '~') {
            if (s[1] != '0' && s[1] != '1')
                return -1;
            wf_strbuf_putc(tok, s[1] == '0' ? '~' : '/');
            s++;
        } else {
            wf_strbuf_putc(tok, *s);
        }
    }
    wf_strbuf_puts(tok, "");
    *p = s;
    return wf_strbuf_failed(tok) ? -1 : 0;
}

/* An array index token: digits without a leading zero (RFC 6901 §4), or "-" (= size). */
static int array_index(const char *t, size_t size, bool allow_end, size_t *out)
{
    if (strcmp(t, "-") == 0) {
        *out = size;
        return allow_end ? 0 : -1;
    }
    if (!*t || (t[0] == '0' && t[1]) || strspn(t, "0123456789") != strlen(t))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(t, NULL, 10);
    if (errno || v > size || (!allow_end && v == size))
        return -1;
    *out = (size_t)v;
    return 0;
}

/* Resolves pointer to its parent container and last token. *parent NULL for the root. */
static int resolve(json_t *doc, const char *ptr, json_t **parent, wf_strbuf *last)
{
    *parent = NULL;
    if (!*ptr)
        return 0;
    if (*ptr != '/')
        return -1;
    json_t *cur = doc;
    const char *p = ptr;
    for (;;) {
        if (next_token(&p, last) != 0)
            return -1;
        if (!*p) {
            *parent = cur;
            return 0;
        }
        const char *t = wf_strbuf_cstr(last);
        size_t i;
        if (json_is_object(cur))
            cur = json_object_get(cur, t);
        else if (json_is_array(cur) && array_index(t, json_array_size(cur), false, &i) == 0)
            cur = json_array_get(cur, i);
        else
            cur = NULL;
        if (!cur)
            return -1;
    }
}

static json_t *get(json_t *doc, const char *ptr)
{
    json_t *parent;
    wf_strbuf last = WF_STRBUF_INIT;
    json_t *v = NULL;
    if (resolve(doc, ptr, &parent, &last) == 0) {
        size_t i;
        const char *t = wf_strbuf_cstr(&last);
        if (!parent)
            v = doc;
        else if (json_is_object(parent))
            v = json_object_get(parent, t);
        else if (json_is_array(parent) && array_index(t, json_array_size(parent), false, &i) == 0)
            v = json_array_get(parent, i);
    }
    wf_strbuf_free(&last);
    return v;
}

/* Removes the value at ptr; returns it (a new reference) or NULL. */
static json_t *take(json_t *doc, const char *ptr)
{
    json_t *parent, *v = NULL;
    wf_strbuf last = WF_STRBUF_INIT;
    if (resolve(doc, ptr, &parent, &last) == 0 && parent) {
        size_t i;
        const char *t = wf_strbuf_cstr(&last);
        if (json_is_object(parent) && (v = json_object_get(parent, t))) {
            json_incref(v);
            json_object_del(parent, t);
        } else if (json_is_array(parent) &&
                   array_index(t, json_array_size(parent), false, &i) == 0) {
            v = json_incref(json_array_get(parent, i));
            json_array_remove(parent, i);
        }
    }
    wf_strbuf_free(&last);
    return v;
}

/* Adds value (stolen) at ptr; replace_only: the target must exist and is replaced. */
static int put(json_t **doc, const char *ptr, json_t *value, bool replace_only)
{
    json_t *parent;
    wf_strbuf last = WF_STRBUF_INIT;
    int rc = -1;
    if (!value || resolve(*doc, ptr, &parent, &last) != 0)
        goto out;
    const char *t = wf_strbuf_cstr(&last);
    size_t i;
    if (!parent) {
        json_decref(*doc);
        *doc = value, value = NULL, rc = 0;
    } else if (json_is_object(parent)) {
        if (!replace_only || json_object_get(parent, t))
            rc = json_object_set_new(parent, t, value), value = NULL;
    } else if (json_is_array(parent) &&
               array_index(t, json_array_size(parent), !replace_only, &i) == 0) {
        if (replace_only)
            rc = json_array_set_new(parent, i, value);
        else
            rc = json_array_insert_new(parent, i, value);
        value = NULL;
    }
out:
    json_decref(value);
    wf_strbuf_free(&last);
    return rc;
}

static int apply_one(json_t **doc, const json_t *o)
{
    const char *name = json_string_value(json_object_get(o, "op"));
    const char *path = json_string_value(json_object_get(o, "path"));
    const char *from = json_string_value(json_object_get(o, "from"));
    json_t *value = json_object_get(o, "value");
    if (!name || !path)
        return -1;
    if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0)
        return value ? put(doc, path, json_deep_copy(value), name[0] == 'r') : -1;
    if (strcmp(name, "remove") == 0) {
        json_t *v = take(*doc, path);
        json_decref(v);
        return v ? 0 : -1;
    }
    if (strcmp(name, "test") == 0)
        return value && json_equal(get(*doc, path), value) ? 0 : -1;
    if (!from)
        return -1;
    if (strcmp(name, "copy") == 0) {
        json_t *v = get(*doc, from);
        return v ? put(doc, path, json_deep_copy(v), false) : -1;
    }
    if (strcmp(name, "move") == 0) {
        json_t *v = take(*doc, from);
        return v ? put(doc, path, v, false) : -1;
    }
    return -1;
}

int wf_jsonpatch_apply(json_t **doc, const json_t *patch, wf_strbuf *why)
{
    if (!json_is_array(patch)) {
        wf_strbuf_puts(why, "a JSON Patch is an array of operations");
        return -1;
    }
    size_t i;
    json_t *o;
    json_array_foreach(patch, i, o)
    {
        if (apply_one(doc, o) != 0) {
            const char *name = json_string_value(json_object_get(o, "op"));
            const char *path = json_string_value(json_object_get(o, "path"));
            wf_strbuf_printf(why, "operation %zu (%s %s): cannot be applied", i, name ? name : "?",
                             path ? path : "?");
            return -1;
        }
    }
    return 0;
}
