/*
 * ps_json.c - writers for `proxy-status -o json|yaml` (see proxy_status.h):
 *  - legacy jsonpb with 4-space indent (golang/protobuf jsonpb Marshaler{Indent: "    "}):
 *    members in document order, an empty message is "{", empty line, "}", and a
 *    google.protobuf.Struct (node.metadata) is indented on its own with sorted keys, its
 *    continuation lines prefixed by the key line's indent + 4 (reference §1.3);
 *  - YAML as sigs.k8s.io/yaml (go-yaml v2) prints that JSON: natural key order, lists not
 *    indented under their key, double quotes for strings that would read back as another
 *    type, single quotes for strings that cannot be plain.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/proxy_status.h"

static void spaces(FILE *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputc(' ', out);
}

static void write_scalar_json(FILE *out, const json_t *v)
{
    if (json_is_string(v))
        wf_json_write_string(out, json_string_value(v));
    else if (json_is_integer(v))
        fprintf(out, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        fprintf(out, "%.17g", json_real_value(v));
    else if (json_is_true(v))
        fputs("true", out);
    else if (json_is_false(v))
        fputs("false", out);
    else
        fputs("null", out);
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of obj, sorted (byte order; natural when natural is set). Caller frees the array. */
static const char **sorted_keys(const json_t *obj, int (*cmp)(const void *, const void *))
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        keys[i++] = k;
    }
    qsort(keys, n, sizeof *keys, cmp);
    return keys;
}

/* encoding/json MarshalIndent of a Struct value with prefix and "    " indent. */
static void write_struct(FILE *out, const json_t *v, size_t prefix)
{
    if (json_is_object(v) && json_object_size(v) > 0) {
        const char **keys = sorted_keys(v, cmp_key);
        fputs("{\n", out);
        for (size_t i = 0; keys && i < json_object_size(v); i++) {
            spaces(out, prefix + 4);
            wf_json_write_string(out, keys[i]);
            fputs(": ", out);
            write_struct(out, json_object_get(v, keys[i]), prefix + 4);
            fputs(i + 1 < json_object_size(v) ? ",\n" : "\n", out);
        }
        spaces(out, prefix);
        fputc('}', out);
        free(keys);
    } else if (json_is_array(v) && json_array_size(v) > 0) {
        fputs("[\n", out);
        for (size_t i = 0; i < json_array_size(v); i++) {
            spaces(out, prefix + 4);
            write_struct(out, json_array_get(v, i), prefix + 4);
            fputs(i + 1 < json_array_size(v) ? ",\n" : "\n", out);
        }
        spaces(out, prefix);
        fputc(']', out);
    } else if (json_is_object(v)) {
        fputs("{}", out);
    } else if (json_is_array(v)) {
        fputs("[]", out);
    } else {
        write_scalar_json(out, v);
    }
}

static void write_pb(FILE *out, const json_t *v, size_t indent, const char *parent);

static void write_pb_object(FILE *out, const json_t *v, size_t indent)
{
    fputs("{\n", out);
    size_t i = 0, n = json_object_size(v);
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m)
    {
        spaces(out, indent + 4);
        wf_json_write_string(out, k);
        fputs(": ", out);
        if (strcmp(k, "metadata") == 0 && json_is_object(m))
            write_struct(out, m, indent + 8); /* the Struct quirk */
        else
            write_pb(out, m, indent + 4, k);
        fputs(++i < n ? ",\n" : "\n", out);
    }
    if (n == 0)
        fputc('\n', out);
    spaces(out, indent);
    fputc('}', out);
}

static void write_pb(FILE *out, const json_t *v, size_t indent, const char *parent)
{
    (void)parent;
    if (json_is_object(v)) {
        write_pb_object(out, v, indent);
    } else if (json_is_array(v) && json_array_size(v) > 0) {
        fputs("[\n", out);
        for (size_t i = 0; i < json_array_size(v); i++) {
            spaces(out, indent + 4);
            write_pb(out, json_array_get(v, i), indent + 4, parent);
            fputs(i + 1 < json_array_size(v) ? ",\n" : "\n", out);
        }
        spaces(out, indent);
        fputc(']', out);
    } else if (json_is_array(v)) {
        fputs("[]", out);
    } else {
        write_scalar_json(out, v);
    }
}

void ps_write_jsonpb(FILE *out, const json_t *v)
{
    write_pb(out, v, 0, "");
}

/* ---- YAML (go-yaml v2) ---------------------------------------------------------------------- */

static bool is_letter(unsigned char c)
{
    return isalpha(c) || c >= 0x80;
}

/* go-yaml v2 keyList.Less for string keys (numbers inside keys compare numerically). */
static int cmp_natural(const void *pa, const void *pb)
{
    const unsigned char *a = *(const unsigned char *const *)pa;
    const unsigned char *b = *(const unsigned char *const *)pb;
    size_t i = 0;
    for (; a[i] && b[i]; i++) {
        if (a[i] == b[i])
            continue;
        bool al = is_letter(a[i]), bl = is_letter(b[i]);
        if (al && bl)
            return a[i] < b[i] ? -1 : 1;
        if (al || bl)
            return bl ? -1 : 1;
        long long an = 0, bn = 0;
        size_t ai = i, bi = i;
        if (a[i] == '0' || b[i] == '0')
            for (size_t j = i; j-- > 0 && isdigit(a[j]);)
                if (a[j] != '0') {
                    an = bn = 1;
                    break;
                }
        for (; isdigit(a[ai]); ai++)
            an = an * 10 + (a[ai] - '0');
        for (; isdigit(b[bi]); bi++)
            bn = bn * 10 + (b[bi] - '0');
        if (an != bn)
            return an < bn ? -1 : 1;
        if (ai != bi)
            return ai < bi ? -1 : 1;
        return a[i] < b[i] ? -1 : 1;
    }
    return a[i] ? 1 : (b[i] ? -1 : 0);
}

static bool is_yaml_number(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (strcasecmp(p, ".inf") == 0 || strcasecmp(s, ".nan") == 0)
        return true;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'b') && p[2])
        return true;
    bool digits = false, dot = false, exp = false;
    for (; *p; p++) {
        if (isdigit((unsigned char)*p) || *p == '_') {
            digits |= isdigit((unsigned char)*p) != 0;
        } else if (*p == '.' && !dot && !exp) {
            dot = true;
        } else if ((*p == 'e' || *p == 'E') && digits && !exp) {
            exp = true;
            if (p[1] == '+' || p[1] == '-')
                p++;
        } else {
            return false;
        }
    }
    return digits;
}

static bool is_yaml_timestamp(const char *s)
{
    /* YYYY-M?M-D?D, optionally followed by [Tt ]time... (go-yaml v2 allowed formats) */
    int y, m, d, n = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n < 8 || !isdigit((unsigned char)s[0]))
        return false;
    if (s[n] == '\0')
        return true;
    if (s[n] != 'T' && s[n] != 't' && s[n] != ' ')
        return false;
    int hh, mm, ss, k = 0;
    if (sscanf(s + n + 1, "%2d:%2d:%2d%n", &hh, &mm, &ss, &k) != 3)
        return false;
    const char *p = s + n + 1 + k;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    return *p == '\0' || strcmp(p, "Z") == 0 || ((*p == '+' || *p == '-') && strlen(p) <= 6);
}

static bool resolves_to_other(const char *s)
{
    static const char *const words[] = {"y",     "Y",     "yes",  "Yes",  "YES",  "n",    "N",
                                        "no",    "No",    "NO",   "true", "True", "TRUE", "false",
                                        "False", "FALSE", "on",   "On",   "ON",   "off",  "Off",
                                        "OFF",   "null",  "Null", "NULL", "~",    ""};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    return is_yaml_number(s) || is_yaml_timestamp(s);
}

static bool cannot_be_plain(const char *s)
{
    size_t n = strlen(s);
    if (strchr("@`{}[]*&!|>%'\"#,", s[0]))
        return true;
    if (strchr("-?:", s[0]) && (s[1] == ' ' || s[1] == '\0'))
        return true;
    if (s[0] == ' ' || s[n - 1] == ' ' || s[n - 1] == ':')
        return true;
    if (strstr(s, ": ") || strstr(s, " #"))
        return true;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20)
            return true;
    return false;
}

static void yaml_string(FILE *out, const char *s)
{
    if (resolves_to_other(s) || strchr(s, '\n')) {
        wf_json_write_string(out, s);
    } else if (cannot_be_plain(s)) {
        fputc('\'', out);
        for (const char *p = s; *p; p++) {
            if (*p == '\'')
                fputc('\'', out);
            fputc(*p, out);
        }
        fputc('\'', out);
    } else {
        fputs(s, out);
    }
}

static void yaml_scalar(FILE *out, const json_t *v)
{
    if (json_is_string(v))
        yaml_string(out, json_string_value(v));
    else
        write_scalar_json(out, v);
}

static bool is_collection(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

static void yaml_value(FILE *out, const json_t *v, size_t indent, bool in_list);

/* A non-empty object; when in_list, the first key continues the "- " already written. */
static void yaml_object(FILE *out, const json_t *v, size_t indent, bool in_list)
{
    const char **keys = sorted_keys(v, cmp_natural);
    for (size_t i = 0; keys && i < json_object_size(v); i++) {
        if (i > 0 || !in_list)
            spaces(out, indent);
        yaml_string(out, keys[i]);
        fputc(':', out);
        const json_t *m = json_object_get(v, keys[i]);
        if (json_is_array(m) && json_array_size(m) > 0) {
            fputc('\n', out);
            yaml_value(out, m, indent, false);
        } else if (is_collection(m)) {
            fputc('\n', out);
            yaml_value(out, m, indent + 2, false);
        } else {
            fputc(' ', out);
            yaml_value(out, m, indent, false);
        }
    }
    free(keys);
}

static void yaml_value(FILE *out, const json_t *v, size_t indent, bool in_list)
{
    if (json_is_object(v) && json_object_size(v) > 0) {
        yaml_object(out, v, indent, in_list);
    } else if (json_is_array(v) && json_array_size(v) > 0) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i > 0 || !in_list)
                spaces(out, indent);
            fputs("- ", out);
            yaml_value(out, json_array_get(v, i), indent + 2, true);
        }
    } else {
        if (json_is_object(v))
            fputs("{}", out);
        else if (json_is_array(v))
            fputs("[]", out);
        else
            yaml_scalar(out, v);
        fputc('\n', out);
    }
}

void ps_write_yaml(FILE *out, const json_t *v)
{
    yaml_value(out, v, 0, false);
}
