/*
 * node_json.c - a document tree as a jansson value. See node_json.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/node_json.h"

static json_t *scalar_json(const wf_node *n)
{
    int64_t i;
    bool b;
    if (n->quoted)
        return json_stringn(n->u.str, n->len);
    if (wf_node_int(n, &i))
        return json_integer(i);
    if (wf_node_bool(n, &b))
        return json_boolean(b);
    char *end = NULL;
    double d = strtod(n->u.str, &end);
    if (n->len && end && *end == '\0' && d == d && strchr("0123456789+-.", n->u.str[0]))
        return json_real(d);
    return json_stringn(n->u.str, n->len);
}

json_t *wf_node_to_json(const wf_node *n)
{
    json_t *o;
    switch (n ? n->type : WF_NODE_NULL) {
    case WF_NODE_SCALAR:
        return scalar_json(n);
    case WF_NODE_MAP:
        o = json_object();
        for (size_t i = 0; o && i < n->len; i++) {
            json_t *v = wf_node_to_json(n->u.entries[i].value);
            if (!v || json_object_set_new(o, n->u.entries[i].key, v)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    case WF_NODE_SEQ:
        o = json_array();
        for (size_t i = 0; o && i < n->len; i++) {
            json_t *v = wf_node_to_json(n->u.items[i]);
            if (!v || json_array_append_new(o, v)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    default:
        return json_null();
    }
}

json_t *wf_node_json_strings(const wf_node *seq)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < wf_seq_len(seq); i++) {
        const char *v = wf_node_str(wf_seq_at(seq, i));
        if (v && json_array_append_new(a, json_string(v)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}
