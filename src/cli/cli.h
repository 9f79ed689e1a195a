/*
 * cli.h - weftctl subcommands. Each takes the argv after the subcommand name (argv[0] is
 * the subcommand) and returns the process exit code.
 *
 * Exit codes follow istioctl (istioctl/cmd/sysexits.go): 0 success, 1 other error,
 * 64 usage error, 65 input files could not be parsed, 79 analyzers found issues at or above
 * --failure-threshold; weft's own: 3 (`up`, `status`) the local mesh runs with problems. One
 * rule for usage errors in every command (docs/weftctl.md "Exit codes"): an unknown command or
 * flag, a missing or extra argument, or a bad flag value is 64, found before anything is
 * contacted or started (wf_flags_parse_cmd, wf_usage_error).
 */
#ifndef WF_CLI_CLI_H
#define WF_CLI_CLI_H

#include <stdio.h>

#define WF_EXIT_OK        0
#define WF_EXIT_ERROR     1
#define WF_EXIT_USAGE     64
#define WF_EXIT_DATAERR   65
#define WF_EXIT_ANALYZERS 79
#define WF_EXIT_MESH                                                                               \
    3 /* weftctl up/status: the local mesh runs but something in it is                             \
         wrong (config pilot rejected, an app that cannot start, a proxy                           \
         not SYNCED, ...): docs/local-mesh.md */

int wf_cmd_analyze(int argc, char **argv);
int wf_cmd_authz(int argc, char **argv);           /* cmd_authz.c: x authz check */
int wf_cmd_completion(int argc, char **argv);      /* cmd_completion.c */
int wf_cmd_dashboard(int argc, char **argv);       /* cmd_dashboard.c */
int wf_cmd_describe(int argc, char **argv);        /* cmd_describe.c */
int wf_cmd_kube_inject(int argc, char **argv);     /* cmd_kube_inject.c */
int wf_cmd_log(int argc, char **argv);             /* cmd_log.c: log explain */
int wf_cmd_manifest(int argc, char **argv);        /* cmd_manifest.c: manifest generate */
int wf_cmd_proxy_config(int argc, char **argv);    /* cmd_proxy_config.c */
int wf_cmd_proxy_status(int argc, char **argv);    /* cmd_proxy_status.c */
int wf_cmd_remote_clusters(int argc, char **argv); /* cmd_remote_clusters.c */
int wf_cmd_version(int argc, char **argv);         /* cmd_version.c */
int wf_cmd_up(int argc, char **argv);              /* cmd_localmesh.c: the local mesh */
int wf_cmd_down(int argc, char **argv);            /* cmd_down.c */
/* `weftctl down --state STATE` without the command line: stops the supervisor and every
 * process mesh.json lists, removes the pods' tokens and the pod network; prints what it did.
 * Returns a WF_EXIT_* code (cmd_down.c; also `up`'s clean-up when its supervisor died). */
int wf_lm_down_state(const char *state);
int wf_cmd_status(int argc, char **argv); /* cmd_down.c */

/* Append a Go-json-escaped string (json.Marshal: \u003c \u003e \u0026, \u2028 \u2029) with
 * quotes to f. */
void wf_json_write_string(FILE *f, const char *s);

/* Write s as a YAML scalar (plain when unambiguous, else double-quoted). */
void wf_yaml_write_scalar(FILE *f, const char *s);

#endif
