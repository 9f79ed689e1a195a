/*
 * authz_cmd.c - `weft-pilot authz-filters`: prints the RBAC filters weft-pilot builds (authz.h)
 * for one workload from a config directory, the output Istio's builder tests compare
 * (pilot/pkg/security/authz/builder/builder_test.go). For the conformance runner
 * (tests/conformance/run_authz_cases.py) and for reading what a policy becomes; not needed to
 * run a mesh. Notes (skipped rules, CUSTOM) go to stderr as "LEVEL: namespace/name: message".
 * Exit codes: 0 printed, 1 the directory or MeshConfig cannot be loaded, 2 bad command line.
 */
#include "pilot/authz_cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/meshcfg.h"
#include "pilot/authz.h"

static void cmd_usage(FILE *f)
{
    fprintf(f, "Usage: weft-pilot authz-filters --config-dir DIR -n NS [-l K=V,...] [flags]\n"
               "\n"
               "Prints, as a JSON array, the Envoy RBAC filters weft-pilot puts on the inbound\n"
               "filter chains of a workload in namespace NS with labels K=V: for --chain http the\n"
               "HTTP filters (envoy.filters.http.rbac) of its HTTP connection manager, for\n"
               "--chain tcp the network filters (envoy.filters.network.rbac) of a TCP chain, in\n"
               "Istio's order (CUSTOM, AUDIT, DENY, ALLOW). For conformance tests against Istio's\n"
               "authz builder goldens and for inspection; a running weft-pilot pushes the same\n"
               "filters. Notes about policies (skipped rules, CUSTOM) are printed on stderr.\n"
               "\n"
               "Flags:\n"
               "      --config-dir DIR       manifests (repeatable)\n"
               "      --meshConfig FILE      MeshConfig YAML (rootNamespace, trustDomain,\n"
               "                             trustDomainAliases)\n"
               "  -n, --namespace NS         the workload's namespace (required)\n"
               "  -l, --labels K=V,...       the workload's labels\n"
               "      --chain http|tcp       which filters (default http)\n"
               "  -h, --help                 show this help\n"
               "\n"
               "Exit codes: 0 printed, 1 the manifests or MeshConfig cannot be loaded, 2 bad\n"
               "command line.\n");
}

/* "a=b,c=d" into kvs (items malloc'd, strings pointing into the copy s). */
static int parse_labels(char *s, wf_kvs *out)
{
    size_t n = 1;
    for (const char *c = s; *c; c++)
        n += *c == ',';
    out->items = calloc(n, sizeof *out->items);
    out->n = 0;
    if (!out->items)
        return -1;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok)
            return -1;
        *eq = '\0';
        out->items[out->n++] = (wf_kv){.key = tok, .value = eq + 1};
    }
    return 0;
}

static void print_note(void *arg, const wf_authz_note *n)
{
    (void)arg;
    static const char *const names[] = {"debug", "warning", "error"};
    const wf_resource *p = n->policy;
    unsigned line = n->at ? wf_node_report_line(n->at) : p->line;
    fprintf(stderr, "%s: %s:%u: AuthorizationPolicy %s/%s: %s: %s\n", names[n->level], p->file,
            line, p->ns, p->name, n->field, n->msg);
}

typedef struct args {
    const char *dirs[16];
    size_t ndirs;
    const char *mesh, *ns, *chain;
    char *labels;
} args;

static int parse(int argc, char **argv, args *a)
{
    static const struct option opts[] = {{"config-dir", required_argument, NULL, 'd'},
                                         {"meshConfig", required_argument, NULL, 'm'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"labels", required_argument, NULL, 'l'},
                                         {"chain", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "n:l:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd':
            if (a->ndirs == 16) {
                fprintf(stderr, "weft-pilot authz-filters: at most 16 --config-dir\n");
                return -1;
            }
            a->dirs[a->ndirs++] = optarg;
            break;
        case 'm':
            a->mesh = optarg;
            break;
        case 'n':
            a->ns = optarg;
            break;
        case 'l':
            a->labels = optarg;
            break;
        case 'c':
            a->chain = optarg;
            break;
        case 'h':
            cmd_usage(stdout);
            return 1;
        default:
            return -1;
        }
    }
    if (optind < argc || !a->ndirs || !a->ns ||
        (strcmp(a->chain, "http") != 0 && strcmp(a->chain, "tcp") != 0)) {
        fprintf(stderr, "weft-pilot authz-filters: %s\n",
                optind < argc ? "unexpected argument"
                : !a->ndirs   ? "--config-dir is required"
                : !a->ns      ? "--namespace is required"
                              : "--chain must be http or tcp");
        return -1;
    }
    return 0;
}

static int load(const args *a, wf_store **s, wf_meshcfg **m)
{
    const char *err = NULL;
    *s = wf_store_new();
    *m = wf_meshcfg_new_default();
    if (!*s || !*m)
        return -1;
    if (a->mesh && wf_meshcfg_load_file(*m, a->mesh, &err) != 0) {
        fprintf(stderr, "weft-pilot authz-filters: %s\n", err ? err : a->mesh);
        return -1;
    }
    for (size_t i = 0; i < a->ndirs; i++)
        if (wf_store_load_path(*s, a->dirs[i], NULL, NULL) != 0) {
            const wf_load_error *e = wf_store_error(*s, 0);
            fprintf(stderr, "weft-pilot authz-filters: %s:%u: %s\n", e ? e->file : a->dirs[i],
                    e ? e->line : 0, e ? e->message : "cannot load");
            return -1;
        }
    return wf_store_finalize(*s, "default", false);
}

int wf_authz_cmd(int argc, char **argv)
{
    args a = {.chain = "http"};
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc < 0 ? 2 : 0;
    wf_kvs labels = {0};
    char *lcopy = a.labels ? strdup(a.labels) : NULL;
    if (a.labels && (!lcopy || parse_labels(lcopy, &labels) != 0)) {
        fprintf(stderr, "weft-pilot authz-filters: invalid --labels \"%s\": want K=V,...\n",
                a.labels);
        free(labels.items);
        free(lcopy);
        return 2;
    }
    wf_store *s;
    wf_meshcfg *m;
    json_t *out = NULL;
    if (load(&a, &s, &m) == 0) {
        wf_authz_options o = {.ns = a.ns, .labels = &labels, .mesh = m, .note = print_note};
        out = strcmp(a.chain, "tcp") == 0 ? wf_authz_tcp_filters(s, &o)
                                          : wf_authz_http_filters(s, &o);
    }
    rc = 1;
    if (out) {
        char *txt = json_dumps(out, JSON_INDENT(2));
        if (txt) {
            printf("%s\n", txt);
            rc = 0;
        }
        free(txt);
    }
    json_decref(out);
    wf_store_free(s);
    wf_meshcfg_free(m);
    free(labels.items);
    free(lcopy);
    return rc;
}
