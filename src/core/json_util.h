/*
 * json_util.h - small jansson helpers shared by weft's readers.
 */
#ifndef WF_CORE_JSON_UTIL_H
#define WF_CORE_JSON_UTIL_H

#include <jansson.h>

/* "an object", "an array", "a string", "a number", "a boolean" or "null": how a value is
 * named in "expected X, got Y" messages. */
static inline const char *wf_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* Overlays src onto dst: objects merged key by key, anything else (arrays included) replaced
 * by a deep copy (Helm's values merge; proto MergeFrom for ProxyConfig's scalar and message
 * fields). Returns 0, or -1 when out of memory (dst then partly merged). */
static inline int wf_json_overlay(json_t *dst, const json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v)
    {
        json_t *d = json_object_get(dst, k);
        if (json_is_object(d) && json_is_object(v)) {
            if (wf_json_overlay(d, v) != 0)
                return -1;
        } else if (json_object_set_new(dst, k, json_deep_copy(v)) != 0) {
            return -1;
        }
    }
    return 0;
}

#endif
