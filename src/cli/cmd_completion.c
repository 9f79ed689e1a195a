/*
 * cmd_completion.c - `weftctl completion bash`: a bash completion script for weftctl's
 * commands, subcommands, flags and `-o` values (istioctl ships cobra's `completion bash`;
 * this one is generated from the table below, which mirrors each command's flag table).
 *
 * Install: `source <(weftctl completion bash)` or write it to
 * /etc/bash_completion.d/weftctl.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flags.h"

typedef struct comp_cmd {
    const char *name;    /* command (aliases share the entry through `aliases`) */
    const char *aliases; /* space separated, may be "" */
    const char *subs;    /* subcommands, space separated */
    const char *flags;   /* long and short flags */
    const char *outputs; /* values of -o/--output, "" when the command has none */
} comp_cmd;

static const comp_cmd cmds[] = {
    {"analyze", "", "",
     "--all-namespaces -A --namespace -n --output -o --failure-threshold --output-threshold "
     "--list-analyzers -L --analyzer --suppress -S --meshConfigFile --meshNetworksFile "
     "--recursive -R --use-kube -k --color --verbose -v --istioNamespace -i --ignore-unknown "
     "--timeout --revision --kubeconfig -c --context --help -h",
     "log json yaml"},
    {"completion", "", "bash", "--help -h", ""},
    {"dashboard", "dash d", "weft kiali",
     "--address --port -p --browser --namespace -n --istioNamespace -i --pilot --state "
     "--kubeconfig -c --context --output -o --help -h",
     "text json"},
    {"down", "", "", "--state --help -h", ""},
    {"describe", "", "pod po service svc",
     "--namespace -n --istioNamespace -i --ignoreUnmeshed --pilot --kubeconfig -c --context "
     "--proxy-admin-port --file -f --config-dir --config-dump --help -h",
     ""},
    {"kube-inject", "", "",
     "--filename -f --output -o --injectConfigFile --meshConfigFile --valuesFile --help -h", ""},
    {"log", "", "explain",
     "--format --summary --pod --namespace -n --pilot --config-dump --output -o --help -h",
     "text json"},
    {"manifest", "", "generate", "--set --filename -f --output -o --help -h", ""},
    {"proxy-config", "pc",
     "all bootstrap cluster ecds endpoint eds listener log rootca-compare route secret",
     "--output -o --file -f --namespace -n --pilot --fqdn --port --subset --direction --address "
     "--type --name --status --cluster --verbose --level --reset -r --with-headers "
     "--proxy-admin-port --kubeconfig -c --context --istioNamespace -i --selector -l --help -h",
     "json yaml short"},
    {"proxy-status", "ps", "",
     "--namespace -n --output -o --pilot --file -f --verbosity -v --table-format --from-file "
     "--revision -r --hide-disconnected --kubeconfig -c --context --istioNamespace -i "
     "--proxy-admin-port --help -h",
     "table json yaml"},
    {"remote-clusters", "", "", "--pilot --from-file --revision -r --help -h", ""},
    {"status", "", "", "--state --output -o --help -h", "json"},
    {"up", "", "",
     "--state --detach -d --timeout --namespace -n --mesh-config --print-bootstrap --pod-network "
     "--capture --help -h",
     ""},
    {"version", "", "", "--remote --short -s --output -o --pilot --help -h", "json yaml"},
    {"x", "experimental", "describe authz", "--help -h", ""},
};

static void print_case(const comp_cmd *c)
{
    printf("        %s", c->name);
    const char *a = c->aliases;
    while (*a) {
        size_t n = strcspn(a, " ");
        printf("|%.*s", (int)n, a);
        a += n + (a[n] == ' ');
    }
    printf(")\n            subs=\"%s\"\n            flags=\"%s\"\n            outputs=\"%s\"\n"
           "            ;;\n",
           c->subs, c->flags, c->outputs);
}

static void print_script(void)
{
    printf("# bash completion for weftctl                              -*- shell-script -*-\n"
           "# source <(weftctl completion bash)\n\n"
           "_weftctl()\n{\n"
           "    local cur prev cmd subs flags outputs i\n"
           "    COMPREPLY=()\n"
           "    cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
           "    prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
           "    cmd=\"\"\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        case \"${COMP_WORDS[i]}\" in\n"
           "            -*) ;;\n"
           "            *) cmd=\"${COMP_WORDS[i]}\"; break ;;\n"
           "        esac\n"
           "    done\n"
           "    if [[ -z \"$cmd\" ]]; then\n"
           "        COMPREPLY=($(compgen -W \"");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        printf("%s%s%s%s", i ? " " : "", cmds[i].name, *cmds[i].aliases ? " " : "",
               cmds[i].aliases);
    printf(" help --version\" -- \"$cur\"))\n"
           "        return 0\n"
           "    fi\n"
           "    case \"$cmd\" in\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        print_case(&cmds[i]);
    printf(
        "        *)\n            return 0\n            ;;\n"
        "    esac\n"
        "    if [[ \"$cmd\" == x || \"$cmd\" == experimental ]] && "
        "[[ \" ${COMP_WORDS[*]} \" == *\" describe \"* ]]; then\n"
        "        subs=\"pod po service svc\"\n"
        "        flags=\"--namespace -n --istioNamespace -i --ignoreUnmeshed --pilot --kubeconfig "
        "-c --context --proxy-admin-port --file -f --config-dir --config-dump --help -h\"\n"
        "    elif [[ \"$cmd\" == x || \"$cmd\" == experimental ]] && "
        "[[ \" ${COMP_WORDS[*]} \" == *\" authz \"* ]]; then\n"
        "        subs=\"check\"\n"
        "        flags=\"--file -f --namespace -n --pilot --proxy-admin-port --output -o "
        "--help -h\"\n"
        "        outputs=\"short json\"\n"
        "    fi\n"
        "    case \"$prev\" in\n"
        "        -o|--output)\n"
        "            COMPREPLY=($(compgen -W \"$outputs\" -- \"$cur\"))\n"
        "            return 0\n"
        "            ;;\n"
        "        -f|--file|--config-dir|--from-file|--meshConfigFile|--meshNetworksFile|-c|"
        "--kubeconfig)\n"
        "            COMPREPLY=($(compgen -f -- \"$cur\"))\n"
        "            return 0\n"
        "            ;;\n"
        "    esac\n"
        "    if [[ \"$cur\" == -* ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
        "        return 0\n"
        "    fi\n"
        "    local have_sub=\"\" w\n"
        "    for ((i = i + 1; i < COMP_CWORD; i++)); do\n"
        "        w=\"${COMP_WORDS[i]}\"\n"
        "        [[ \"$w\" != -* && \" $subs \" == *\" $w \"* ]] && have_sub=1\n"
        "    done\n"
        "    if [[ -n \"$subs\" && -z \"$have_sub\" ]]; then\n"
        "        COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
        "    else\n"
        "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
        "    fi\n"
        "    return 0\n"
        "}\n\n"
        "complete -o default -F _weftctl weftctl\n");
}

int wf_cmd_completion(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("Generate the autocompletion script for weftctl for the specified shell.\n\n"
               "Usage:\n  weftctl completion bash\n\n"
               "  source <(weftctl completion bash)\n");
        return WF_EXIT_OK;
    }
    if (argc != 2 || strcmp(argv[1], "bash") != 0)
        return wf_usage_error("completion", "%s",
                              argc < 2            ? "requires a shell name (bash)"
                              : argc > 2          ? "accepts 1 arg (the shell)"
                              : argv[1][0] == '-' ? "unknown flag: the only argument is the shell"
                                                  : "unsupported shell type");
    print_script();
    return WF_EXIT_OK;
}
