/*
 * message.c - message type lookups and Go fmt rendering of templates (see message.h).
 */
#include "analysis/message.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

extern const wf_msg_type wf_msg_types[WF_MSG_COUNT];

const wf_msg_type *wf_msg_type_get(wf_msg_id id)
{
    return (id >= 0 && id < WF_MSG_COUNT) ? &wf_msg_types[id] : NULL;
}

const wf_msg_type *wf_msg_type_by_code(const char *code)
{
    for (int i = 0; i < WF_MSG_COUNT; i++)
        if (strcmp(wf_msg_types[i].code, code) == 0)
            return &wf_msg_types[i];
    return NULL;
}

const char *wf_level_name(wf_level l)
{
    switch (l) {
    case WF_LEVEL_ERROR:
        return "Error";
    case WF_LEVEL_WARNING:
        return "Warning";
    default:
        return "Info";
    }
}

int wf_level_parse(const char *s)
{
    if (strcasecmp(s, "error") == 0)
        return WF_LEVEL_ERROR;
    if (strcasecmp(s, "warning") == 0)
        return WF_LEVEL_WARNING;
    if (strcasecmp(s, "info") == 0)
        return WF_LEVEL_INFO;
    return -1;
}

void wf_go_format(wf_strbuf *out, const char *tmpl, const char *const *args, size_t nargs)
{
    size_t argi = 0;
    for (const char *p = tmpl; *p; p++) {
        if (*p != '%') {
            wf_strbuf_putc(out, *p);
            continue;
        }
        char verb = p[1];
        if (verb == '\0') {
            wf_strbuf_puts(out, "%!(NOVERB)");
            break;
        }
        p++;
        if (verb == '%') {
            wf_strbuf_putc(out, '%');
            continue;
        }
        if (argi >= nargs) {
            wf_strbuf_printf(out, "%%!%c(MISSING)", verb);
            continue;
        }
        const char *a = args[argi++];
        if (!a)
            a = "";
        if (verb == 'q')
            wf_go_quote(out, a);
        else
            wf_strbuf_puts(out, a);
    }
}
