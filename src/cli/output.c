/*
 * output.c - JSON and YAML scalar writers matching Go's encoders (cli.h).
 */
#include <stdbool.h>
#include <string.h>

#include "cli/cli.h"

void wf_json_write_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (; *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\r') {
            fputs("\\r", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            fprintf(f, "\\u%04x", c);
        } else if (c == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            fprintf(f, "\\u20%s", p[2] == 0xA8 ? "28" : "29");
            p += 2;
        } else {
            fputc((int)c, f);
        }
    }
    fputc('"', f);
}

static bool yaml_needs_quotes(const char *s)
{
    static const char *const special[] = {"true", "false", "yes", "no", "on", "off", "null", "~",
                                          "True", "False", "Yes", "No", "On", "Off", "Null", "NULL",
                                          "TRUE", "FALSE", "YES", "NO", "ON", "OFF", ""};
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
        if (strcmp(s, special[i]) == 0)
            return true;
    if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]))
        return true;
    size_t len = strlen(s);
    if (s[len - 1] == ' ' || s[len - 1] == ':')
        return true;
    if (strstr(s, ": ") || strstr(s, " #"))
        return true;
    bool numeric = true;
    for (const char *p = s; *p; p++) {
        if ((unsigned char)*p < 0x20)
            return true;
        if (!strchr("0123456789.+-eE", *p))
            numeric = false;
    }
    return numeric;
}

void wf_yaml_write_scalar(FILE *f, const char *s)
{
    if (yaml_needs_quotes(s))
        wf_json_write_string(f, s);
    else
        fputs(s, f);
}
