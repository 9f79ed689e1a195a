/*
 * flags.h - command-line flags parsed the way Go's pflag (cobra) parses them, so istioctl
 * habits work: `--name value`, `--name=value`, `-n value`, `-nvalue`, boolean `--flag`,
 * `--flag=false`, repeatable flags, and `--` ending flags.
 */
#ifndef WF_CLI_FLAGS_H
#define WF_CLI_FLAGS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum wf_flag_type { WF_FLAG_BOOL, WF_FLAG_STRING, WF_FLAG_LIST } wf_flag_type;

typedef struct wf_flag {
    const char *name; /* long name without dashes */
    char shorthand;   /* 0 for none */
    wf_flag_type type;
    const char *help;
    const char *metavar; /* shown in help for value flags */
    /* outputs (set by wf_flags_parse) */
    bool set;
    bool bval;
    const char *sval;
    const char **list; /* WF_FLAG_LIST values (heap array, free with wf_flags_free) */
    size_t nlist;
} wf_flag;

/* Parse argv[1..argc-1] (argv[0] is the command name). Positional arguments are collected
 * into *pos (heap array of argv pointers; caller frees with free()). Returns 0, or -1 with a
 * message in err (err_size bytes) naming the bad flag and *pos NULL. Either way the caller
 * calls wf_flags_free (list flags parsed before an error hold memory). */
int wf_flags_parse(wf_flag *flags, size_t nflags, int argc, char **argv, char ***pos, size_t *npos,
                   char *err, size_t err_size);

/* wf_flags_parse for the command cmd ("proxy-status", "log explain"): a bad command line is
 * reported on stderr as "Error: <why>" and "Run 'weftctl <cmd> --help' for usage.", the one
 * wording every command uses. Returns 0, or -1 after printing. */
int wf_flags_parse_cmd(const char *cmd, wf_flag *flags, size_t nflags, int argc, char **argv,
                       char ***pos, size_t *npos);

/* The one way a command reports a usage error it finds after parsing (a missing or extra
 * argument, a bad flag value): prints "Error: <message>" and "Run 'weftctl <cmd> --help' for
 * usage." on stderr, as wf_flags_parse_cmd does, and returns WF_EXIT_USAGE (64, cli.h). */
int wf_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void wf_flags_free(wf_flag *flags, size_t nflags);

/* Print the flag table for --help. */
void wf_flags_usage(const wf_flag *flags, size_t nflags);

#endif
