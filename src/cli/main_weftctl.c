/*
 * weftctl - weft's command-line tool (the role istioctl plays for Istio). Command names and
 * aliases follow istioctl: proxy-config (pc), proxy-status (ps), dashboard (dash, d), describe
 * (istioctl's `experimental describe`, also reachable as `x describe`), remote-clusters, and `x
 * authz check` (`experimental authz check`). Usage errors (unknown command or flag, missing or
 * extra argument, bad flag value) exit 64 in every command (cli.h, docs/weftctl.md "Exit codes").
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flags.h"

static void usage(FILE *f)
{
    fprintf(f, "weftctl controls and troubleshoots a weft service mesh.\n\n"
               "Usage:\n  weftctl <command> [flags]\n\n"
               "Available Commands:\n"
               "  analyze          Analyze Istio configuration and report problems (IST codes)\n"
               "  completion       Generate the bash completion script\n"
               "  dashboard        Open weft's web view (dashboard weft; aliases: dash, d)\n"
               "  describe         Describe a pod or service and the config that applies to it\n"
               "  down             Stop the local mesh weftctl up started\n"
               "  kube-inject      Inject the weft-proxy sidecar into Kubernetes workloads\n"
               "  log              Explain access log lines (log explain)\n"
               "  manifest         Generate the install manifests (manifest generate)\n"
               "  proxy-config     Retrieve information about proxy configuration (alias: pc)\n"
               "  proxy-status     Retrieve the synchronization status of each proxy (alias: "
               "ps)\n"
               "  remote-clusters  List the remote clusters each control plane is connected to\n"
               "  status           Show the processes of the local mesh\n"
               "  up               Run a local mesh from a folder of manifests\n"
               "  version          Print the client and control plane versions\n"
               "  x authz check    Check the AuthorizationPolicies applied in a pod\n\n"
               "Use \"weftctl <command> --help\" for more information about a command.\n");
}

typedef int (*wf_cmd_fn)(int argc, char **argv);

static const struct {
    const char *name, *alias;
    wf_cmd_fn fn;
} commands[] = {
    {"analyze", NULL, wf_cmd_analyze},
    {"completion", NULL, wf_cmd_completion},
    {"dashboard", "dash", wf_cmd_dashboard},
    {"d", NULL, wf_cmd_dashboard}, /* istioctl's second alias of dashboard */
    {"describe", NULL, wf_cmd_describe},
    {"down", NULL, wf_cmd_down},
    {"kube-inject", NULL, wf_cmd_kube_inject},
    {"log", NULL, wf_cmd_log},
    {"manifest", NULL, wf_cmd_manifest},
    {"proxy-config", "pc", wf_cmd_proxy_config},
    {"proxy-status", "ps", wf_cmd_proxy_status},
    {"remote-clusters", NULL, wf_cmd_remote_clusters},
    {"status", NULL, wf_cmd_status},
    {"up", NULL, wf_cmd_up},
    {"version", NULL, wf_cmd_version},
};

static wf_cmd_fn find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0 ||
            (commands[i].alias && strcmp(name, commands[i].alias) == 0))
            return commands[i].fn;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) { /* istioctl (cobra): the root command alone prints its help */
        usage(stdout);
        return WF_EXIT_OK;
    }
    const char *cmd = argv[1];
    if ((strcmp(cmd, "x") == 0 || strcmp(cmd, "experimental") == 0) && argc > 2 &&
        strcmp(argv[2], "describe") == 0)
        return wf_cmd_describe(argc - 2, argv + 2);
    if ((strcmp(cmd, "x") == 0 || strcmp(cmd, "experimental") == 0) && argc > 2 &&
        strcmp(argv[2], "authz") == 0)
        return wf_cmd_authz(argc - 2, argv + 2);
    if ((strcmp(cmd, "x") == 0 || strcmp(cmd, "experimental") == 0) && argc > 2 &&
        (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        printf("Experimental commands (istioctl's `experimental`, alias `x`)\n\nUsage:\n  "
               "weftctl x [command]\n\nAvailable Commands:\n  authz       Inspect Istio "
               "AuthorizationPolicy\n  describe    Describe resource and related Istio "
               "configuration\n");
        return WF_EXIT_OK;
    }
    if (strcmp(cmd, "x") == 0 || strcmp(cmd, "experimental") == 0) /* without a known one */
        return wf_usage_error(cmd,
                              argc > 2 ? "unknown subcommand \"%s\": authz or describe"
                                       : "a subcommand is required: authz or describe%s",
                              argc > 2 ? argv[2] : "");
    if (strcmp(cmd, "--version") == 0)
        return wf_cmd_version(argc - 1, argv + 1);
    wf_cmd_fn fn = find(cmd);
    if (fn)
        return fn(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && (fn = find(argv[2])) != NULL) {
            char *help_argv[] = {argv[2], "--help", NULL};
            return fn(2, help_argv);
        }
        usage(stdout);
        return WF_EXIT_OK;
    }
    if (cmd[0] == '-')
        fprintf(stderr, "Error: unknown flag: %s\nRun 'weftctl --help' for usage.\n", cmd);
    else
        fprintf(stderr,
                "Error: unknown command \"%s\" for \"weftctl\"\n"
                "Run 'weftctl --help' for usage.\n",
                cmd);
    return WF_EXIT_USAGE;
}
