/*
 * weftctl - weft's command-line tool (the role istioctl plays for Istio).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
    fprintf(f, "weftctl controls and troubleshoots a weft service mesh.\n\n"
               "Usage:\n  weftctl <command> [flags]\n\n"
               "Available Commands:\n"
               "  analyze     Analyze Istio configuration and report problems (IST codes)\n"
               "  version     Print the version\n\n"
               "Use \"weftctl <command> --help\" for more information about a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return WF_EXIT_ERROR;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "analyze") == 0)
        return wf_cmd_analyze(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            printf("Print the version of weftctl.\n\nUsage:\n  weftctl version\n");
            return WF_EXIT_OK;
        }
        if (argc > 2) {
            fprintf(stderr, "Error: unknown argument \"%s\" for \"weftctl version\"\n", argv[2]);
            return WF_EXIT_ERROR;
        }
        printf("weftctl version %s\n", WEFT_VERSION);
        return WF_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && strcmp(argv[2], "analyze") == 0) {
            char *help_argv[] = {"analyze", "--help", NULL};
            return wf_cmd_analyze(2, help_argv);
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
    return WF_EXIT_ERROR;
}
