/*
 * cmd_authz.c - `weftctl x authz check` (also `experimental authz check`), istioctl's
 * `x authz check` (istioctl/pkg/authz/authz.go; reference security.md §6.5): the
 * AuthorizationPolicies a proxy enforces, read from its Envoy config dump (authz_check.h).
 *
 * Input: `-f/--file DUMP` (a JSON config dump, "-" = stdin; wins over a pod argument, as in
 * istioctl), else the pod (POD, POD.NS, POD -n NS, deploy/NAME) found through weft-pilot
 * (--pilot, proxy_find.h) and its admin GET /config_dump.
 * Output: istioctl's table (ACTION / AuthorizationPolicy / RULES, tabwriter padding 3); weft's
 * addition `-o json`. Warnings (policy ids that do not parse, skipped filters) go to stderr.
 *
 * Exit status: 0; 1 for errors ("failed to get config dump from file F: ...", "failed to get
 * config dump from pod P in NS: ...", a dump without listeners, pilot or proxy unreachable);
 * 64 for usage errors (unknown subcommand or flag, more than one argument, neither pod nor -f,
 * bad -o value).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/authz_fetch.h"
#include "cli/proxy_find.h"
#include "cli/cli.h"
#include "cli/flags.h"

enum { F_FILE, F_NAMESPACE, F_PILOT, F_ADMIN_PORT, F_OUTPUT, F_HELP, F_COUNT };

static void init_flags(wf_flag *f)
{
    const wf_flag defs[F_COUNT] = {
        [F_FILE] = {"file", 'f', WF_FLAG_STRING,
                    "The json file with Envoy config dump to be checked (- for stdin)"},
        [F_NAMESPACE] = {"namespace", 'n', WF_FLAG_STRING, "Namespace of the pod"},
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING, "weft-pilot monitoring address (ip:port)"},
        [F_ADMIN_PORT] = {"proxy-admin-port", 0, WF_FLAG_STRING,
                          "Accepted for istioctl compatibility (weft-pilot knows the address)",
                          "int"},
        [F_OUTPUT] = {"output", 'o', WF_FLAG_STRING,
                      "Output format: short (default) or json (weft's addition)", "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "help for check"},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage_group(FILE *f)
{
    fprintf(f, "Inspect Istio AuthorizationPolicy\n\n"
               "Usage:\n  weftctl x authz [command]\n\n"
               "Available Commands:\n"
               "  check       Check AuthorizationPolicy applied in the pod.\n\n"
               "Use \"weftctl x authz check --help\" for more information about a command.\n");
}

static void usage_check(void)
{
    printf("Check prints the AuthorizationPolicy applied to a pod by directly checking\n"
           "the Envoy configuration of the pod (its /config_dump, through weft-pilot).\n"
           "The command also supports reading from a standalone config dump file with flag -f.\n\n"
           "Usage:\n  weftctl x authz check [<type>/]<name>[.<namespace>] [flags]\n\n"
           "Examples:\n"
           "  # Check AuthorizationPolicy applied to pod httpbin-88ddbcfdd-nt5jb:\n"
           "  weftctl x authz check httpbin-88ddbcfdd-nt5jb\n\n"
           "  # Check AuthorizationPolicy applied to one pod under a deployment\n"
           "  weftctl x authz check deployment/productpage-v1\n\n"
           "  # Check AuthorizationPolicy from Envoy config dump file:\n"
           "  weftctl x authz check -f httpbin_config_dump.json\n\n");
}

static int check(const wf_flag *f, char **pos, wf_strbuf *out, wf_strbuf *warn, wf_strbuf *err)
{
    wf_authz_table t;
    const char *pilot = f[F_PILOT].sval ? f[F_PILOT].sval : WF_DEFAULT_PILOT;
    int rc = f[F_FILE].sval
                 ? wf_authz_fetch_file(f[F_FILE].sval, &t, warn, err)
                 : wf_authz_fetch_pod(pilot, pos[0], f[F_NAMESPACE].sval, &t, NULL, warn, err);
    if (rc != 0)
        return -1;
    bool json = f[F_OUTPUT].sval && strcmp(f[F_OUTPUT].sval, "json") == 0;
    rc = json ? wf_authz_print_json(&t, out) : wf_authz_print_table(&t, out);
    if (rc != 0)
        wf_strbuf_puts(err, "out of memory");
    wf_authz_table_free(&t);
    return rc;
}

/* Usage checks (istioctl's Args and RunE argument errors). Returns 0 or WF_EXIT_USAGE. */
static int check_args(const wf_flag *f, size_t npos, wf_strbuf *err)
{
    const char *o = f[F_OUTPUT].sval;
    if (o && strcmp(o, "short") != 0 && strcmp(o, "json") != 0)
        wf_strbuf_printf(err, "output format \"%s\" not supported", o);
    else if (npos > 1)
        wf_strbuf_puts(err, "check requires only <pod-name>[.<pod-namespace>]");
    else if (npos == 0 && !f[F_FILE].sval)
        wf_strbuf_puts(err, "expecting pod name or config dump, found: 0");
    else
        return 0;
    return WF_EXIT_USAGE;
}

static int cmd_check(int argc, char **argv)
{
    wf_flag f[F_COUNT];
    init_flags(f);
    char **pos = NULL;
    size_t npos = 0;
    if (wf_flags_parse_cmd("x authz check", f, F_COUNT, argc, argv, &pos, &npos) != 0) {
        free(pos); /* allocated even when parsing fails */
        wf_flags_free(f, F_COUNT);
        return WF_EXIT_USAGE;
    }
    wf_strbuf out = WF_STRBUF_INIT, warn = WF_STRBUF_INIT, err = WF_STRBUF_INIT;
    int rc = WF_EXIT_OK;
    if (f[F_HELP].bval) {
        usage_check();
        wf_flags_usage(f, F_COUNT);
    } else if ((rc = check_args(f, npos, &err)) == 0) {
        rc = check(f, pos, &out, &warn, &err) == 0 ? WF_EXIT_OK : WF_EXIT_ERROR;
    }
    fwrite(wf_strbuf_cstr(&warn), 1, warn.len, stderr);
    if (rc == WF_EXIT_OK)
        fwrite(wf_strbuf_cstr(&out), 1, out.len, stdout);
    else
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
    if (rc == WF_EXIT_USAGE)
        fprintf(stderr, "Run 'weftctl x authz check --help' for usage.\n");
    free(pos);
    wf_flags_free(f, F_COUNT);
    wf_strbuf_free(&out);
    wf_strbuf_free(&warn);
    wf_strbuf_free(&err);
    return rc;
}

int wf_cmd_authz(int argc, char **argv)
{
    if (argc < 2) /* a parent command without its subcommand (docs/weftctl.md "Exit codes") */
        return wf_usage_error("x authz", "a subcommand is required: check");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage_group(stdout);
        return WF_EXIT_OK;
    }
    if (strcmp(argv[1], "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    fprintf(stderr,
            "Error: unknown command \"%s\" for \"weftctl x authz\"\n"
            "Run 'weftctl x authz --help' for usage.\n",
            argv[1]);
    return WF_EXIT_USAGE;
}
