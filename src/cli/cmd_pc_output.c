/*
 * cmd_pc_output.c - `-o json` and `-o yaml` of proxy-config (cmd_pc.h; reference
 * istioctl-troubleshooting.md §1.3): Go's json.MarshalIndent with 4 spaces, and the YAML that
 * sigs.k8s.io/yaml (go-yaml v2 over libyaml's emitter) makes of that JSON: natural key order,
 * 2-space indent, indentless sequences under keys, plain / single-quoted / double-quoted /
 * literal scalars as the emitter chooses them, plain and single-quoted scalars folded at
 * spaces past column 80.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_pc.h"

/* ---- numbers --------------------------------------------------------------------------------- */

/* Shortest decimal digits of f that read back as f: digits (no dot) and the decimal exponent
 * of the first digit (f = 0.d1d2... * 10^(dp)). */
static void shortest(double f, char *digits, size_t size, int *dp)
{
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    /* buf: [-]d.ddde[+-]XX */
    const char *s = buf[0] == '-' ? buf + 1 : buf;
    size_t n = 0;
    for (; *s && *s != 'e' && n + 1 < size; s++)
        if (isdigit((unsigned char)*s))
            digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    *dp = atoi(s + 1) + 1;
}

/* strconv.FormatFloat(f, fmt, -1, 64) for fmt 'f' or 'e' (Go exponent: at least 2 digits). */
static void go_float(wf_strbuf *out, double f, char fmt, bool json_exp)
{
    if (f == 0) {
        wf_strbuf_puts(out, "0");
        return;
    }
    char d[32];
    int dp;
    shortest(fabs(f), d, sizeof d, &dp);
    if (f < 0)
        wf_strbuf_putc(out, '-');
    int nd = (int)strlen(d);
    if (fmt == 'e') {
        wf_strbuf_putc(out, d[0]);
        if (nd > 1)
            wf_strbuf_printf(out, ".%s", d + 1);
        int e = dp - 1;
        if (json_exp)
            wf_strbuf_printf(out, "e%c%d", e < 0 ? '-' : '+', abs(e));
        else
            wf_strbuf_printf(out, "e%c%02d", e < 0 ? '-' : '+', abs(e));
        return;
    }
    if (dp <= 0) {
        wf_strbuf_puts(out, "0.");
        for (int i = 0; i < -dp; i++)
            wf_strbuf_putc(out, '0');
        wf_strbuf_puts(out, d);
        return;
    }
    for (int i = 0; i < dp; i++)
        wf_strbuf_putc(out, i < nd ? d[i] : '0');
    if (nd > dp)
        wf_strbuf_printf(out, ".%s", d + dp);
}

/* encoding/json float64: 'f' unless |f| < 1e-6 or >= 1e21, then 'e' with a short exponent. */
static void json_float(wf_strbuf *out, double f)
{
    double a = fabs(f);
    go_float(out, f, (a != 0 && (a < 1e-6 || a >= 1e21)) ? 'e' : 'f', true);
}

/* go-yaml v2: FormatFloat(f, 'g', -1, 64) (shortest: %e when exp < -4 || exp >= 6). */
static void yaml_float(wf_strbuf *out, double f)
{
    if (isnan(f)) {
        wf_strbuf_puts(out, ".nan");
        return;
    }
    if (isinf(f)) {
        wf_strbuf_puts(out, f > 0 ? ".inf" : "-.inf");
        return;
    }
    if (f == 0) {
        wf_strbuf_puts(out, "0");
        return;
    }
    char d[32];
    int dp;
    shortest(fabs(f), d, sizeof d, &dp);
    int exp = dp - 1;
    go_float(out, f, (exp < -4 || exp >= 6) ? 'e' : 'f', false);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void jstr_out(wf_strbuf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    wf_strbuf_putc(out, '"');
    for (; *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            wf_strbuf_putc(out, '\\');
            wf_strbuf_putc(out, (char)c);
        } else if (c == '\n') {
            wf_strbuf_puts(out, "\\n");
        } else if (c == '\r') {
            wf_strbuf_puts(out, "\\r");
        } else if (c == '\t') {
            wf_strbuf_puts(out, "\\t");
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            wf_strbuf_printf(out, "\\u%04x", c);
        } else if (c == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            wf_strbuf_printf(out, "\\u20%s", p[2] == 0xA8 ? "28" : "29");
            p += 2;
        } else {
            wf_strbuf_putc(out, (char)c);
        }
    }
    wf_strbuf_putc(out, '"');
}

static void indent(wf_strbuf *out, int n)
{
    for (int i = 0; i < n; i++)
        wf_strbuf_putc(out, ' ');
}

static void json_value(wf_strbuf *out, const json_t *v, int ind)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (json_object_size(v) == 0) {
            wf_strbuf_puts(out, "{}");
            return;
        }
        wf_strbuf_puts(out, "{\n");
        const char *k;
        json_t *x;
        size_t i = 0, n = json_object_size(v);
        json_object_foreach((json_t *)v, k, x)
        {
            indent(out, ind + 4);
            jstr_out(out, k);
            wf_strbuf_puts(out, ": ");
            json_value(out, x, ind + 4);
            wf_strbuf_puts(out, ++i < n ? ",\n" : "\n");
        }
        indent(out, ind);
        wf_strbuf_putc(out, '}');
        return;
    }
    case JSON_ARRAY: {
        if (json_array_size(v) == 0) {
            wf_strbuf_puts(out, "[]");
            return;
        }
        wf_strbuf_puts(out, "[\n");
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x)
        {
            indent(out, ind + 4);
            json_value(out, x, ind + 4);
            wf_strbuf_puts(out, i + 1 < json_array_size(v) ? ",\n" : "\n");
        }
        indent(out, ind);
        wf_strbuf_putc(out, ']');
        return;
    }
    case JSON_STRING:
        jstr_out(out, json_string_value(v));
        return;
    case JSON_INTEGER:
        wf_strbuf_printf(out, "%lld", (long long)json_integer_value(v));
        return;
    case JSON_REAL:
        json_float(out, json_real_value(v));
        return;
    case JSON_TRUE:
        wf_strbuf_puts(out, "true");
        return;
    case JSON_FALSE:
        wf_strbuf_puts(out, "false");
        return;
    default:
        wf_strbuf_puts(out, "null");
        return;
    }
}

void pc_json_write(wf_strbuf *out, const json_t *v)
{
    json_value(out, v, 0);
}

/* ---- YAML: which scalars go-yaml v2 quotes ----------------------------------------------------
 */

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* go-yaml's parseTimestamp: "2006-1-2", "2006-1-2T15:4:5.999999999Z07:00" (T or t),
 * "2006-1-2 15:4:5.999999999". */
static bool yaml_timestamp(const char *s)
{
    if (strlen(s) < 5 || !all_digits(s, 4) || s[4] != '-')
        return false;
    const char *p = s + 5;
    int lens[3] = {0, 0, 0};
    for (int part = 0; part < 2; part++) {
        while (isdigit((unsigned char)*p) && lens[part] < 3)
            p++, lens[part]++;
        if (lens[part] < 1 || lens[part] > 2)
            return false;
        if (part == 0 && *p++ != '-')
            return false;
    }
    if (*p == '\0')
        return true;
    char sep = *p++;
    if (sep != 'T' && sep != 't' && sep != ' ')
        return false;
    for (int part = 0; part < 3; part++) {
        int n = 0;
        while (isdigit((unsigned char)*p))
            p++, n++;
        if (n < 1 || n > 2)
            return false;
        if (part < 2 && *p++ != ':')
            return false;
    }
    if (*p == '.') {
        p++;
        int n = 0;
        while (isdigit((unsigned char)*p))
            p++, n++;
        if (n < 1 || n > 9)
            return false;
    }
    if (sep == ' ')
        return *p == '\0';
    if (*p == 'Z')
        return p[1] == '\0';
    return (*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
           isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
           isdigit((unsigned char)p[5]) && p[6] == '\0';
}

/* strconv.ParseInt(s, 0, 64) accepts it (underscores removed first, as go-yaml does). */
static bool yaml_int(const char *s)
{
    char buf[128];
    size_t n = 0;
    for (const char *p = s; *p && n + 1 < sizeof buf; p++)
        if (*p != '_')
            buf[n++] = *p;
    buf[n] = '\0';
    const char *p = buf;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return false;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return p[2] && strspn(p + 2, "0123456789abcdefABCDEF") == strlen(p + 2);
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        return p[2] && strspn(p + 2, "01") == strlen(p + 2);
    if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        return p[2] && strspn(p + 2, "01234567") == strlen(p + 2);
    if (p[0] == '0')
        return strspn(p, "01234567") == strlen(p);
    return strspn(p, "0123456789") == strlen(p);
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_float_text(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    } else {
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '.') {
            p++;
            while (isdigit((unsigned char)*p))
                p++;
        }
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

/* ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static bool yaml_base60(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p) || *p == '_')
        p++;
    int groups = 0;
    while (*p == ':') {
        p++;
        int n = 0;
        while (isdigit((unsigned char)*p) && n < 2)
            p++, n++;
        if (n == 0 || (n == 2 && p[-2] > '5'))
            return false;
        groups++;
    }
    if (groups == 0)
        return false;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p) || *p == '_')
            p++;
    }
    return *p == '\0';
}

/* go-yaml's resolve(): the string would read back as something other than a string. */
static bool yaml_resolves_non_string(const char *s)
{
    static const char *const words[] = {
        "y",     "Y",     "yes",   "Yes",   "YES",   "on",    "On",    "ON",    "n",    "N",
        "no",    "No",    "NO",    "off",   "Off",   "OFF",   "true",  "True",  "TRUE", "false",
        "False", "FALSE", "~",     "null",  "Null",  "NULL",  ".nan",  ".NaN",  ".NAN", ".inf",
        ".Inf",  ".INF",  "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<"};
    if (!*s)
        return true;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    if (!strchr("+-.0123456789", s[0]))
        return false;
    if (yaml_int(s) || yaml_float_text(s) || yaml_base60(s))
        return true;
    return isdigit((unsigned char)s[0]) && yaml_timestamp(s);
}

typedef enum { Y_PLAIN, Y_SINGLE, Y_DOUBLE, Y_LITERAL } y_style;

/* libyaml's yaml_emitter_analyze_scalar + select_scalar_style for a block-context scalar. */
static y_style yaml_style(const char *s, bool is_key)
{
    size_t n = strlen(s);
    if (n == 0)
        return is_key ? Y_DOUBLE : Y_DOUBLE; /* "" resolves to null: go-yaml double-quotes */
    bool want_literal = strchr(s, '\n') != NULL;
    bool block_ind = false, special = false, space_break = false, lead_ws = false, trail_ws = false,
         breaks = false;
    if (!strncmp(s, "---", 3) || !strncmp(s, "...", 3))
        block_ind = true;
    bool prev_ws = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool next_blank = i + 1 >= n || s[i + 1] == ' ' || s[i + 1] == '\t' || s[i + 1] == '\n';
        if (i == 0) {
            if (strchr("#,[]{}&*!|>'\"%@`", c))
                block_ind = true;
            if ((c == '?' || c == ':' || c == '-') && next_blank)
                block_ind = true;
        } else {
            if (c == ':' && next_blank)
                block_ind = true;
            if (c == '#' && prev_ws)
                block_ind = true;
        }
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            special = true;
        if (c == '\n') {
            breaks = true;
            if (i > 0 && s[i - 1] == ' ')
                space_break = true;
        }
        prev_ws = c == ' ' || c == '\t' || c == '\n';
    }
    if (s[0] == ' ' || s[0] == '\n')
        lead_ws = true;
    if (s[n - 1] == ' ' || s[n - 1] == '\n')
        trail_ws = true;
    if (want_literal) {
        if (is_key || special || space_break || (s[n - 1] == ' '))
            return Y_DOUBLE;
        return Y_LITERAL;
    }
    if (yaml_resolves_non_string(s) || yaml_base60(s))
        return Y_DOUBLE;
    if (special || space_break)
        return Y_DOUBLE;
    if (block_ind || lead_ws || trail_ws || breaks)
        return Y_SINGLE;
    return Y_PLAIN;
}

/* ---- YAML: writing ----------------------------------------------------------------------------
 */

static size_t column(const wf_strbuf *out)
{
    const char *s = wf_strbuf_cstr(out);
    const char *nl = strrchr(s, '\n');
    const char *p = nl ? nl + 1 : s;
    size_t col = 0;
    for (; *p; p++)
        if (((unsigned char)*p & 0xC0) != 0x80)
            col++;
    return col;
}

/* Plain or single-quoted text with libyaml's folding at best_width 80. */
static void yaml_folded(wf_strbuf *out, const char *s, int ind, bool single, bool allow_breaks)
{
    size_t n = strlen(s);
    if (single)
        wf_strbuf_putc(out, '\'');
    bool spaces = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ' ') {
            bool fold = allow_breaks && !spaces && column(out) > 80 && s[i + 1] != ' ' &&
                        (!single || (i != 0 && i != n - 1));
            if (fold) {
                wf_strbuf_putc(out, '\n');
                indent(out, ind);
            } else {
                wf_strbuf_putc(out, c);
            }
            spaces = true;
            continue;
        }
        spaces = false;
        if (single && c == '\'')
            wf_strbuf_putc(out, '\'');
        wf_strbuf_putc(out, c);
    }
    if (single)
        wf_strbuf_putc(out, '\'');
}

static void yaml_double(wf_strbuf *out, const char *s)
{
    wf_strbuf_putc(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            wf_strbuf_puts(out, "\\\"");
            break;
        case '\\':
            wf_strbuf_puts(out, "\\\\");
            break;
        case '\n':
            wf_strbuf_puts(out, "\\n");
            break;
        case '\t':
            wf_strbuf_puts(out, "\\t");
            break;
        case '\r':
            wf_strbuf_puts(out, "\\r");
            break;
        case 0:
            wf_strbuf_puts(out, "\\0");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                wf_strbuf_printf(out, "\\x%02X", *p);
            else
                wf_strbuf_putc(out, (char)*p);
        }
    }
    wf_strbuf_putc(out, '"');
}

static void yaml_literal(wf_strbuf *out, const char *s, int ind)
{
    size_t n = strlen(s);
    wf_strbuf_putc(out, '|');
    if (s[0] == ' ' || s[0] == '\n')
        wf_strbuf_putc(out, '2');
    if (s[n - 1] != '\n')
        wf_strbuf_putc(out, '-');
    else if (n == 1 || s[n - 2] == '\n')
        wf_strbuf_putc(out, '+');
    bool at_line_start = true;
    wf_strbuf_putc(out, '\n');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') {
            wf_strbuf_putc(out, '\n');
            at_line_start = true;
            continue;
        }
        if (at_line_start)
            indent(out, ind);
        at_line_start = false;
        wf_strbuf_putc(out, s[i]);
    }
    if (s[n - 1] != '\n')
        wf_strbuf_putc(out, '\n');
}

/* Writes a string scalar; ind is the indentation of continuation lines. Returns true when
 * the scalar already ended its line (literal blocks). */
static bool yaml_string(wf_strbuf *out, const char *s, int ind, bool is_key)
{
    switch (yaml_style(s, is_key)) {
    case Y_PLAIN:
        yaml_folded(out, s, ind, false, !is_key);
        return false;
    case Y_SINGLE:
        yaml_folded(out, s, ind, true, !is_key);
        return false;
    case Y_DOUBLE:
        yaml_double(out, s);
        return false;
    case Y_LITERAL:
        yaml_literal(out, s, ind);
        return true;
    }
    return false;
}

/* go-yaml v2's keyList.Less for two string keys (natural order). */
static int yaml_key_cmp(const void *pa, const void *pb)
{
    const unsigned char *a = *(const unsigned char *const *)pa;
    const unsigned char *b = *(const unsigned char *const *)pb;
    size_t la = strlen((const char *)a), lb = strlen((const char *)b);
    for (size_t i = 0; i < la && i < lb; i++) {
        if (a[i] == b[i])
            continue;
        bool al = isalpha(a[i]) || a[i] >= 0x80, bl = isalpha(b[i]) || b[i] >= 0x80;
        if (al && bl)
            return a[i] < b[i] ? -1 : 1;
        if (al || bl)
            return bl ? -1 : 1;
        long long an = 0, bn = 0;
        size_t ai, bi;
        if (a[i] == '0' || b[i] == '0') {
            for (size_t j = i; j-- > 0 && isdigit(a[j]);)
                if (a[j] != '0') {
                    an = 1;
                    bn = 1;
                    break;
                }
        }
        for (ai = i; ai < la && isdigit(a[ai]); ai++)
            an = an * 10 + (a[ai] - '0');
        for (bi = i; bi < lb && isdigit(b[bi]); bi++)
            bn = bn * 10 + (b[bi] - '0');
        if (an != bn)
            return an < bn ? -1 : 1;
        if (ai != bi)
            return ai < bi ? -1 : 1;
        return a[i] < b[i] ? -1 : 1;
    }
    return la < lb ? -1 : la > lb ? 1 : 0;
}

static bool yaml_is_block(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

static void yaml_node(wf_strbuf *out, const json_t *v, int ind, bool in_seq_item);

/* A scalar or empty collection after "key: " or "- "; ends the line. */
static void yaml_inline(wf_strbuf *out, const json_t *v, int ind)
{
    bool ended = false;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        wf_strbuf_puts(out, "{}");
        break;
    case JSON_ARRAY:
        wf_strbuf_puts(out, "[]");
        break;
    case JSON_STRING:
        ended = yaml_string(out, json_string_value(v), ind, false);
        break;
    case JSON_INTEGER:
        wf_strbuf_printf(out, "%lld", (long long)json_integer_value(v));
        break;
    case JSON_REAL:
        yaml_float(out, json_real_value(v));
        break;
    case JSON_TRUE:
        wf_strbuf_puts(out, "true");
        break;
    case JSON_FALSE:
        wf_strbuf_puts(out, "false");
        break;
    default:
        wf_strbuf_puts(out, "null");
        break;
    }
    if (!ended)
        wf_strbuf_putc(out, '\n');
}

/* A non-empty mapping whose first key is written at the current position (after "- ") or
 * on a fresh line at ind. */
static void yaml_map(wf_strbuf *out, const json_t *v, int ind, bool first_inline)
{
    size_t n = json_object_size(v), i = 0;
    const char **keys = calloc(n, sizeof *keys);
    if (!keys) {
        out->failed = true;
        return;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) keys[i++] = k;
    qsort(keys, n, sizeof *keys, yaml_key_cmp);
    for (i = 0; i < n; i++) {
        if (i > 0 || !first_inline)
            indent(out, ind);
        yaml_string(out, keys[i], ind + 2, true);
        wf_strbuf_putc(out, ':');
        x = json_object_get(v, keys[i]);
        if (yaml_is_block(x)) {
            wf_strbuf_putc(out, '\n');
            /* sequences under a key are not indented; mappings are */
            yaml_node(out, x, json_is_array(x) ? ind : ind + 2, false);
        } else {
            wf_strbuf_putc(out, ' ');
            yaml_inline(out, x, ind + 2);
        }
    }
    free(keys);
}

static void yaml_seq(wf_strbuf *out, const json_t *v, int ind, bool first_inline)
{
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)v, i, x)
    {
        if (i > 0 || !first_inline)
            indent(out, ind);
        wf_strbuf_puts(out, "- ");
        if (yaml_is_block(x))
            yaml_node(out, x, ind + 2, true);
        else
            yaml_inline(out, x, ind + 2);
    }
}

static void yaml_node(wf_strbuf *out, const json_t *v, int ind, bool in_seq_item)
{
    if (json_is_object(v) && json_object_size(v) > 0)
        yaml_map(out, v, ind, in_seq_item);
    else if (json_is_array(v) && json_array_size(v) > 0)
        yaml_seq(out, v, ind, in_seq_item);
    else
        yaml_inline(out, v, ind);
}

void pc_yaml_write(wf_strbuf *out, const json_t *v)
{
    yaml_node(out, v, 0, false);
}

/* ---- the -o json / -o yaml printer ------------------------------------------------------------
 */

int pc_print_raw(const pc_opts *o, const json_t *v, bool strip_any, wf_strbuf *out, wf_strbuf *err)
{
    json_t *c = wf_json_camel_copy(v);
    if (!c) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    if (strip_any && json_is_array(c)) {
        size_t i;
        json_t *x;
        json_array_foreach(c, i, x) json_object_del(x, "@type");
    } else if (strip_any && json_is_object(c)) {
        json_object_del(c, "@type");
    }
    if (o->out == PC_OUT_YAML) {
        pc_yaml_write(out, c);
        wf_strbuf_putc(out, '\n');
    } else {
        pc_json_write(out, c);
        wf_strbuf_putc(out, '\n');
    }
    json_decref(c);
    if (wf_strbuf_failed(out)) {
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}
