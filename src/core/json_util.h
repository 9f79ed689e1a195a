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

#endif
