/*
 * parse_json.c - JSON text (jansson) to wf_node trees. JSON positions are not kept (line 0),
 * as istioctl reports JSON inputs without a line number.
 */
#include "model/parse.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "model/store.h"

static wf_node *convert(wf_arena *a, json_t *j, unsigned depth, wf_parse_error *err, int *rc);

static wf_node *scalar(wf_arena *a, const char *text, bool quoted)
{
    wf_node *n = wf_arena_alloc(a, sizeof(*n));
    if (!n)
        return NULL;
    n->type = WF_NODE_SCALAR;
    n->quoted = quoted;
    n->len = strlen(text);
    n->u.str = wf_arena_strndup(a, text, n->len);
    return n->u.str ? n : NULL;
}

static wf_node *convert_object(wf_arena *a, json_t *j, unsigned depth, wf_parse_error *err,
                               int *rc)
{
    wf_node *n = wf_arena_alloc(a, sizeof(*n));
    size_t count = json_object_size(j);
    if (!n || !(n->u.entries = wf_arena_alloc(a, (count ? count : 1) * sizeof(wf_map_entry))))
        return NULL;
    n->type = WF_NODE_MAP;
    const char *key;
    json_t *val;
    size_t i = 0;
    json_object_foreach(j, key, val)
    {
        wf_map_entry *e = &n->u.entries[i++];
        e->key = wf_arena_strdup(a, key);
        e->value = convert(a, val, depth + 1, err, rc);
        if (!e->key || !e->value)
            return NULL;
    }
    n->len = i;
    return n;
}

static wf_node *convert_array(wf_arena *a, json_t *j, unsigned depth, wf_parse_error *err, int *rc)
{
    wf_node *n = wf_arena_alloc(a, sizeof(*n));
    size_t count = json_array_size(j);
    if (!n || !(n->u.items = wf_arena_alloc(a, (count ? count : 1) * sizeof(wf_node *))))
        return NULL;
    n->type = WF_NODE_SEQ;
    for (size_t i = 0; i < count; i++) {
        n->u.items[i] = convert(a, json_array_get(j, i), depth + 1, err, rc);
        if (!n->u.items[i])
            return NULL;
    }
    n->len = count;
    return n;
}

static wf_node *convert(wf_arena *a, json_t *j, unsigned depth, wf_parse_error *err, int *rc)
{
    char num[64];
    if (depth > WF_LOAD_MAX_DEPTH) {
        snprintf(err->message, sizeof(err->message),
                 "json: document nested too deeply (limit %u levels)", WF_LOAD_MAX_DEPTH);
        *rc = 1;
        return NULL;
    }
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return convert_object(a, j, depth, err, rc);
    case JSON_ARRAY:
        return convert_array(a, j, depth, err, rc);
    case JSON_STRING:
        return scalar(a, json_string_value(j), true);
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        return scalar(a, num, false);
    case JSON_REAL:
        snprintf(num, sizeof(num), "%.17g", json_real_value(j));
        return scalar(a, num, false);
    case JSON_TRUE:
        return scalar(a, "true", false);
    case JSON_FALSE:
        return scalar(a, "false", false);
    default: {
        wf_node *n = wf_arena_alloc(a, sizeof(*n));
        if (n)
            n->type = WF_NODE_NULL;
        return n;
    }
    }
}

/* Find the first '[' or '{' (outside strings) nested deeper than max. Returns true and its
 * 1-based line and column (in characters) when there is one. jansson keeps no positions in
 * its values, so the depth limit is checked on the text. */
static bool json_too_deep(const char *buf, size_t len, unsigned max, uint32_t *line, uint32_t *col)
{
    unsigned depth = 0;
    bool in_str = false, esc = false;
    uint32_t ln = 1, cl = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n') {
            ln++, cl = 0;
            continue;
        }
        if ((c & 0xC0) != 0x80)
            cl++;
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max) {
                *line = ln, *col = cl;
                return true;
            }
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return false;
}

int wf_parse_json(wf_arena *a, const char *buf, size_t len, wf_doc_cb doc, void *arg,
                  wf_parse_error *err)
{
    if (json_too_deep(buf, len, WF_LOAD_MAX_DEPTH, &err->line, &err->col)) {
        snprintf(err->message, sizeof(err->message),
                 "json: document nested too deeply (limit %u levels)", WF_LOAD_MAX_DEPTH);
        return 1;
    }
    json_error_t jerr;
    json_t *j = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                           &jerr);
    if (!j) {
        err->line = jerr.line > 0 ? (uint32_t)jerr.line : 0;
        err->col = jerr.column > 0 ? (uint32_t)jerr.column : err->line ? 1 : 0;
        snprintf(err->message, sizeof(err->message), "json: %s", jerr.text);
        return 1;
    }
    int rc = 0;
    wf_node *root = convert(a, j, 0, err, &rc);
    json_decref(j);
    if (!root)
        return rc ? rc : -1;
    return doc(root, 0, 0, arg) ? -1 : 0;
}

/* 1-based line and column (in characters) of byte offset `off`. */
static void utf8_position(const char *buf, size_t off, uint32_t *line, uint32_t *col)
{
    uint32_t ln = 1;
    const char *p = buf, *end = buf + off, *nl;
    while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        ln++;
        p = nl + 1;
    }
    uint32_t cl = 1;
    for (; p < end; p++)
        cl += ((unsigned char)*p & 0xC0) != 0x80;
    if (line)
        *line = ln;
    if (col)
        *col = cl;
}

size_t wf_utf8_check(const char *buf, size_t len, uint32_t *line, uint32_t *col)
{
    const unsigned char *s = (const unsigned char *)buf;
    size_t i = 0;
    while (i < len) {
        uint64_t w;
        if (len - i >= 8 && (memcpy(&w, s + i, 8), (w & 0x8080808080808080ull) == 0)) {
            i += 8; /* eight ASCII bytes */
            continue;
        }
        unsigned c = s[i];
        size_t need;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            need = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            break;
        }
        size_t k;
        for (k = 1; k <= need; k++) {
            if (i + k >= len || (s[i + k] & 0xC0) != 0x80)
                break;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (k <= need || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            break;
        i += need + 1;
    }
    if (line || col)
        utf8_position(buf, i, line, col);
    return i;
}
