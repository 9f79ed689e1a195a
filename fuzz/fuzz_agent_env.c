/*
 * fuzz_agent_env.c - libFuzzer target for what `weft-proxy proxy` parses from the pod
 * (proxy/agent/agent_config.h): the downward API files ./etc/istio/pod/labels and annotations
 * (`key="value"` lines, Go-quoted values) and --log_output_level "scope:level,...".
 *
 * Input: byte 0 bit 0: the rest is a --log_output_level value, else a downward API file.
 * Invariants: a rejection always has a message; a parsed file written back in the same format
 * (values quoted with \" \\ and \xHH for control bytes) parses again to the same object; a
 * log_output_level spec that is accepted is one weft's --component-log-level accepts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/agent/agent_config.h"

static void quote(wf_strbuf *out, const char *v)
{
    wf_strbuf_putc(out, '"');
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            wf_strbuf_putc(out, '\\'), wf_strbuf_putc(out, (char)*p);
        else if (*p < 0x20 || *p == 0x7f)
            wf_strbuf_printf(out, "\\x%02x", *p);
        else
            wf_strbuf_putc(out, (char)*p);
    }
    wf_strbuf_putc(out, '"');
}

static void downward(const char *text)
{
    json_t *o = json_object();
    wf_strbuf err = {0};
    if (wp_agent_parse_downward(text, o, &err) != 0) {
        if (!err.len)
            abort(); /* a rejection names the line */
        goto out;
    }
    wf_strbuf again = {0};
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        wf_strbuf_printf(&again, "%s=", k);
        quote(&again, json_string_value(v));
        wf_strbuf_putc(&again, '\n');
    }
    json_t *o2 = json_object();
    if (wp_agent_parse_downward(wf_strbuf_cstr(&again), o2, &err) != 0 || !json_equal(o, o2))
        abort();
    json_decref(o2);
    wf_strbuf_free(&again);
out:
    wf_strbuf_free(&err);
    json_decref(o);
}

static void log_levels(const char *text)
{
    wf_strbuf spec = {0}, unmapped = {0}, err = {0};
    if (wp_agent_log_output_level(text, &spec, &unmapped, &err) != 0) {
        if (!err.len)
            abort();
    } else if (spec.len) {
        /* checked only: wf_log_apply_component_levels would change the process's levels, so
         * parse the spec by its grammar instead (logger:level pairs of known names) */
        const char *p = wf_strbuf_cstr(&spec);
        while (*p) {
            size_t n = strcspn(p, ",");
            const char *colon = memchr(p, ':', n);
            if (!colon || wf_log_level_from_name(colon + 1, n - (size_t)(colon + 1 - p)) < 0)
                abort();
            p += n + (p[n] == ',');
        }
    }
    wf_strbuf_free(&spec);
    wf_strbuf_free(&unmapped);
    wf_strbuf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (data[0] & 1)
        log_levels(text);
    else
        downward(text);
    free(text);
    return 0;
}
