/*
 * ui_yaml.c - JSON as YAML text. See ui_yaml.h.
 */
#include "pilot/ui_yaml.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

static int write_out(void *data, unsigned char *buf, size_t size)
{
    wf_strbuf *b = data;
    wf_strbuf_append(b, (const char *)buf, size);
    return !wf_strbuf_failed(b);
}

/* A string a YAML 1.1 reader would take for something else when plain. */
static bool ambiguous(const char *s)
{
    static const char *const words[] = {"true", "false", "yes", "no", "on",   "off",
                                        "null", "~",     "y",   "n",  ".inf", ".nan"};
    if (!*s)
        return true;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i]) == 0)
            return true;
    const char *p = s + (*s == '-' || *s == '+');
    bool digit = false;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digit = true;
        else if (!strchr(".eE+-_xXoObB:abcdefABCDEF", *p))
            return false;
    }
    return digit; /* number-like: 80, 1.5, 0x1F, 1e3, 12:30 */
}

static int scalar(yaml_emitter_t *e, const char *v, bool quote)
{
    yaml_event_t ev;
    yaml_scalar_style_t st = quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v, (int)strlen(v), !quote, 1,
                                      st))
        return -1;
    return yaml_emitter_emit(e, &ev) ? 0 : -1;
}

static int node(yaml_emitter_t *e, const json_t *j, int depth)
{
    yaml_event_t ev;
    char num[64];
    if (depth > 128)
        return -1;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        const char *k;
        const json_t *v;
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
            !yaml_emitter_emit(e, &ev))
            return -1;
        json_object_foreach((json_t *)j, k, v)
        {
            if (scalar(e, k, ambiguous(k)) || node(e, v, depth + 1))
                return -1;
        }
        if (!yaml_mapping_end_event_initialize(&ev))
            return -1;
        return yaml_emitter_emit(e, &ev) ? 0 : -1;
    }
    case JSON_ARRAY: {
        size_t i;
        const json_t *v;
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(e, &ev))
            return -1;
        json_array_foreach(j, i, v)
        {
            if (node(e, v, depth + 1))
                return -1;
        }
        if (!yaml_sequence_end_event_initialize(&ev))
            return -1;
        return yaml_emitter_emit(e, &ev) ? 0 : -1;
    }
    case JSON_STRING:
        return scalar(e, json_string_value(j), ambiguous(json_string_value(j)));
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        return scalar(e, num, false);
    case JSON_REAL:
        snprintf(num, sizeof num, "%.17g", json_real_value(j));
        return scalar(e, num, false);
    case JSON_TRUE:
        return scalar(e, "true", false);
    case JSON_FALSE:
        return scalar(e, "false", false);
    default:
        return scalar(e, "null", false);
    }
}

int wf_ui_json_to_yaml(const json_t *j, wf_strbuf *out)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&e))
        return -1;
    yaml_emitter_set_output(&e, write_out, out);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1); /* no folding of long strings */
    int rc = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
                     yaml_emitter_emit(&e, &ev) &&
                     yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
                     yaml_emitter_emit(&e, &ev)
                 ? 0
                 : -1;
    if (rc == 0)
        rc = node(&e, j, 0);
    if (rc == 0)
        rc = yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
                     yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev) &&
                     yaml_emitter_flush(&e)
                 ? 0
                 : -1;
    yaml_emitter_delete(&e);
    return rc == 0 && !wf_strbuf_failed(out) ? 0 : -1;
}
