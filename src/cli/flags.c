/*
 * flags.c - pflag-style command-line parsing (flags.h).
 */
#include "cli/flags.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static wf_flag *find_long(wf_flag *flags, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

static wf_flag *find_short(wf_flag *flags, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        if (flags[i].shorthand == c)
            return &flags[i];
    return NULL;
}

static int set_value(wf_flag *f, const char *val, char *err, size_t err_size)
{
    f->set = true;
    if (f->type == WF_FLAG_BOOL) {
        if (!val || strcmp(val, "true") == 0 || strcmp(val, "1") == 0 || strcmp(val, "t") == 0 ||
            strcmp(val, "TRUE") == 0 || strcmp(val, "True") == 0)
            f->bval = true;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0 || strcmp(val, "f") == 0 ||
                 strcmp(val, "FALSE") == 0 || strcmp(val, "False") == 0)
            f->bval = false;
        else {
            snprintf(err, err_size,
                     "invalid argument \"%s\" for \"--%s\" flag: strconv.ParseBool: "
                     "parsing \"%s\": invalid syntax",
                     val, f->name, val);
            return -1;
        }
        return 0;
    }
    if (f->type == WF_FLAG_STRING) {
        f->sval = val;
        return 0;
    }
    const char **nl = realloc(f->list, (f->nlist + 1) * sizeof(*nl));
    if (!nl) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    f->list = nl;
    f->list[f->nlist++] = val;
    return 0;
}

static int parse_long(wf_flag *flags, size_t nflags, int argc, char **argv, int *i, char *err,
                      size_t err_size)
{
    const char *arg = argv[*i] + 2;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    wf_flag *f = find_long(flags, nflags, arg, len);
    if (!f) {
        snprintf(err, err_size, "unknown flag: --%.*s", (int)len, arg);
        return -1;
    }
    const char *val = eq ? eq + 1 : NULL;
    if (!val && f->type != WF_FLAG_BOOL) {
        if (*i + 1 >= argc) {
            snprintf(err, err_size, "flag needs an argument: --%s", f->name);
            return -1;
        }
        val = argv[++*i];
    }
    return set_value(f, val, err, err_size);
}

static int parse_short(wf_flag *flags, size_t nflags, int argc, char **argv, int *i, char *err,
                       size_t err_size)
{
    const char *p = argv[*i] + 1;
    while (*p) {
        wf_flag *f = find_short(flags, nflags, *p);
        if (!f) {
            snprintf(err, err_size, "unknown shorthand flag: '%c' in %s", *p, argv[*i]);
            return -1;
        }
        p++;
        if (f->type == WF_FLAG_BOOL) {
            const char *val = NULL;
            if (*p == '=') {
                val = p + 1;
                p += strlen(p);
            }
            if (set_value(f, val, err, err_size))
                return -1;
            continue;
        }
        const char *val = *p == '=' ? p + 1 : *p ? p : NULL;
        if (!val) {
            if (*i + 1 >= argc) {
                snprintf(err, err_size, "flag needs an argument: '%c' in -%c", f->shorthand,
                         f->shorthand);
                return -1;
            }
            val = argv[++*i];
        }
        return set_value(f, val, err, err_size);
    }
    return 0;
}

int wf_flags_parse(wf_flag *flags, size_t nflags, int argc, char **argv, char ***pos, size_t *npos,
                   char *err, size_t err_size)
{
    *pos = calloc((size_t)argc + 1, sizeof(char *));
    *npos = 0;
    if (!*pos) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    bool flags_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (flags_done || a[0] != '-' || strcmp(a, "-") == 0)
            (*pos)[(*npos)++] = argv[i];
        else if (strcmp(a, "--") == 0)
            flags_done = true;
        else if (a[1] == '-')
            rc = parse_long(flags, nflags, argc, argv, &i, err, err_size);
        else
            rc = parse_short(flags, nflags, argc, argv, &i, err, err_size);
        if (rc) {
            free(*pos);
            *pos = NULL;
            *npos = 0;
            return -1;
        }
    }
    return 0;
}

void wf_flags_free(wf_flag *flags, size_t nflags)
{
    for (size_t i = 0; i < nflags; i++) {
        free(flags[i].list);
        flags[i].list = NULL;
        flags[i].nlist = 0;
    }
}

void wf_flags_usage(const wf_flag *flags, size_t nflags)
{
    printf("Flags:\n");
    for (size_t i = 0; i < nflags; i++) {
        char left[64];
        const char *mv = flags[i].type == WF_FLAG_BOOL ? ""
                         : flags[i].metavar            ? flags[i].metavar
                                                       : "string";
        if (flags[i].shorthand)
            snprintf(left, sizeof(left), "-%c, --%s %s", flags[i].shorthand, flags[i].name, mv);
        else
            snprintf(left, sizeof(left), "    --%s %s", flags[i].name, mv);
        printf("  %-36s %s\n", left, flags[i].help);
    }
}

int wf_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("Error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'weftctl %s --help' for usage.\n", cmd);
    return WF_EXIT_USAGE;
}

int wf_flags_parse_cmd(const char *cmd, wf_flag *flags, size_t nflags, int argc, char **argv,
                       char ***pos, size_t *npos)
{
    char err[512];
    if (wf_flags_parse(flags, nflags, argc, argv, pos, npos, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "Error: %s\nRun 'weftctl %s --help' for usage.\n", err, cmd);
    return -1;
}
