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

/* Decode one UTF-8 sequence at s; returns its length (1 for an invalid byte, *cp = -1). */
static size_t utf8_next(const unsigned char *s, long *cp)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0) {
        *cp = -1;
        return 1;
    }
    long v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

void wf_go_quote(wf_strbuf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    wf_strbuf_putc(out, '"');
    while (*p) {
        long cp;
        size_t n = utf8_next(p, &cp);
        if (cp < 0) {
            wf_strbuf_printf(out, "\\x%02x", *p);
        } else if (cp == '"' || cp == '\\') {
            wf_strbuf_putc(out, '\\');
            wf_strbuf_putc(out, (char)cp);
        } else if (cp == '\n') {
            wf_strbuf_puts(out, "\\n");
        } else if (cp == '\t') {
            wf_strbuf_puts(out, "\\t");
        } else if (cp == '\r') {
            wf_strbuf_puts(out, "\\r");
        } else if (cp == '\a') {
            wf_strbuf_puts(out, "\\a");
        } else if (cp == '\b') {
            wf_strbuf_puts(out, "\\b");
        } else if (cp == '\f') {
            wf_strbuf_puts(out, "\\f");
        } else if (cp == '\v') {
            wf_strbuf_puts(out, "\\v");
        } else if (cp < 0x20 || cp == 0x7F) {
            wf_strbuf_printf(out, "\\x%02lx", cp);
        } else {
            wf_strbuf_append(out, (const char *)p, n);
        }
        p += n;
    }
    wf_strbuf_putc(out, '"');
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
