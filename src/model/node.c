#include "model/node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

uint32_t wf_node_report_line(const wf_node *n)
{
    if (!n)
        return 0;
    if ((n->type == WF_NODE_MAP || n->type == WF_NODE_SEQ) && n->key_line)
        return n->key_line;
    return n->line;
}

const wf_map_entry *wf_map_entry_get(const wf_node *n, const char *key)
{
    if (!n || n->type != WF_NODE_MAP)
        return NULL;
    for (size_t i = n->len; i-- > 0;) {
        if (strcmp(n->u.entries[i].key, key) == 0)
            return &n->u.entries[i];
    }
    return NULL;
}

wf_node *wf_map_get(const wf_node *n, const char *key)
{
    const wf_map_entry *e = wf_map_entry_get(n, key);
    return e ? e->value : NULL;
}

wf_node *wf_node_path(const wf_node *n, const char *path)
{
    char step[256];
    const char *p = path;
    wf_node *cur = (wf_node *)n;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof(step))
            return NULL;
        memcpy(step, p, len);
        step[len] = '\0';
        if (cur->type == WF_NODE_SEQ) {
            char *end;
            unsigned long idx = strtoul(step, &end, 10);
            cur = (*end == '\0' && len) ? wf_seq_at(cur, idx) : NULL;
        } else {
            cur = wf_map_get(cur, step);
        }
        p += len;
        if (*p == '.')
            p++;
    }
    return cur;
}

const char *wf_node_str(const wf_node *n)
{
    return (n && n->type == WF_NODE_SCALAR) ? n->u.str : NULL;
}

const char *wf_map_str(const wf_node *n, const char *key)
{
    return wf_node_str(wf_map_get(n, key));
}

size_t wf_seq_len(const wf_node *n)
{
    return (n && n->type == WF_NODE_SEQ) ? n->len : 0;
}

wf_node *wf_seq_at(const wf_node *n, size_t i)
{
    return (n && n->type == WF_NODE_SEQ && i < n->len) ? n->u.items[i] : NULL;
}

bool wf_node_int(const wf_node *n, int64_t *out)
{
    if (!n || n->type != WF_NODE_SCALAR || n->quoted || n->len == 0)
        return false;
    const char *s = n->u.str;
    const char *digits = s;
    if (*digits == '-' || *digits == '+')
        digits++;
    int base = 10;
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        base = 16;
    else if (digits[0] == '0' && digits[1] == 'o')
        base = 8;
    if (base != 10) {
        if (digits != s)
            return false;
        digits += 2;
    }
    if (*digits == '\0' || *digits == '-' || *digits == '+' || *digits == ' ')
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(digits, &end, base);
    if (errno || *end != '\0')
        return false;
    if (s[0] == '-')
        v = -v;
    *out = v;
    return true;
}

bool wf_node_bool(const wf_node *n, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    if (!n || n->type != WF_NODE_SCALAR || n->quoted || n->len < 2 || n->len > 5 ||
        !strchr("tTfFyYnNoO", n->u.str[0]))
        return false;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(n->u.str, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(n->u.str, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

static bool is_float(const char *s)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    (void)strtod(s, &end);
    if (*end != '\0')
        return false;
    /* strtod accepts "inf"/"nan" and hex floats; YAML spells them .inf/.nan */
    for (const char *p = s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z' && *p != 'e') || (*p >= 'A' && *p <= 'Z' && *p != 'E'))
            return false;
    }
    return true;
}

const char *wf_node_kind_name(const wf_node *n)
{
    if (!n || n->type == WF_NODE_NULL)
        return "null";
    if (n->type == WF_NODE_MAP)
        return "object";
    if (n->type == WF_NODE_SEQ)
        return "array";
    if (n->quoted || !strchr("0123456789+-.tTfFyYnNoO", n->u.str[0]))
        return "string"; /* cannot be a number or a boolean */
    int64_t i;
    bool b;
    if (wf_node_int(n, &i))
        return "integer";
    if (wf_node_bool(n, &b))
        return "boolean";
    if (is_float(n->u.str) || strcmp(n->u.str, ".inf") == 0 || strcmp(n->u.str, ".nan") == 0)
        return "number";
    return "string";
}

bool wf_node_is_string(const wf_node *n)
{
    return n && n->type == WF_NODE_SCALAR && strcmp(wf_node_kind_name(n), "string") == 0;
}
