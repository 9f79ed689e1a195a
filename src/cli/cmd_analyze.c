/*
 * cmd_analyze.c - `weftctl analyze`, following `istioctl analyze`
 * (istioctl/pkg/analyze/analyze.go; ../shared/reference/istio-analyze.md §2-3): flags, line
 * format, ordering, JSON/YAML shapes, "No validation issues" lines and exit codes.
 *
 * Live cluster (istio-analyze.md §3): `--use-kube` (-k) reads the cluster's resources through
 * its API server (kube_live.h) and lays the files over them; it defaults to true when a
 * kubeconfig is chosen as weftctl chooses the cluster (mesh_access.h: --kubeconfig, --context
 * or $KUBECONFIG), else false (files only, weft's local use). Without -n the namespace is the
 * kubeconfig context's; a namespace that does not exist prints `namespace "x" not found` and
 * exits 0; the mesh config is the `istio` ConfigMap's unless --meshConfigFile; the default
 * ingress gateway resources are added only without the cluster, as istioctl does.
 *
 * Differences by design: without the cluster, no file at all is a usage error (64); stdout is
 * istioctl's, but stderr says which namespaces -n left out (analyze_scope.h) and never prints the
 * "No validation issues" all-clear when no resource was in scope; Pod, Service, Namespace, Node and
 * Secret documents are read from the files; a workload controller stands for the pods of its
 * template; the default ingress gateway Pod and Service that istioctl adds offline are added here
 * too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "pilot/analyze_authn.h"
#include "cli/analyze_scope.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/kube_live.h"
#include "cli/mesh_access.h"
#include "kube/client.h"

#define DOC_BASE WF_ANALYSIS_DOC_BASE

enum {
    F_ALL,
    F_NS,
    F_OUT,
    F_FAIL,
    F_OUTTH,
    F_LIST,
    F_ANALYZER,
    F_SUPPRESS,
    F_MESH,
    F_NETWORKS,
    F_RECURSIVE,
    F_USEKUBE,
    F_KUBECONFIG,
    F_CONTEXT,
    F_COLOR,
    F_VERBOSE,
    F_ISTIONS,
    F_IGNORE_UNKNOWN,
    F_TIMEOUT,
    F_REVISION,
    F_HELP,
    F_COUNT
};

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_ALL] = {"all-namespaces", 'A', WF_FLAG_BOOL, "Analyze all namespaces", NULL},
        [F_NS] = {"namespace", 'n', WF_FLAG_STRING,
                  "Namespace for resources without one, and the only namespace reported",
                  "namespace"},
        [F_OUT] = {"output", 'o', WF_FLAG_STRING, "Output format: one of [log json yaml]",
                   "string"},
        [F_FAIL] = {"failure-threshold", 0, WF_FLAG_STRING,
                    "Lowest severity that makes the exit code non-zero: Info, Warning, Error "
                    "(default Error)",
                    "level"},
        [F_OUTTH] = {"output-threshold", 0, WF_FLAG_STRING,
                     "Lowest severity printed: Info, Warning, Error (default Info)", "level"},
        [F_LIST] = {"list-analyzers", 'L', WF_FLAG_BOOL, "List the analyzers and exit", NULL},
        [F_ANALYZER] = {"analyzer", 0, WF_FLAG_LIST, "Run only this analyzer (repeatable)", "name"},
        [F_SUPPRESS] = {"suppress", 'S', WF_FLAG_LIST,
                        "Suppress findings: \"CODE=Kind ns/name\" (glob; repeatable)",
                        "stringArray"},
        [F_MESH] = {"meshConfigFile", 0, WF_FLAG_STRING, "MeshConfig YAML merged over the defaults",
                    "file"},
        [F_NETWORKS] = {"meshNetworksFile", 0, WF_FLAG_STRING, "MeshNetworks YAML (weft extension)",
                        "file"},
        [F_RECURSIVE] = {"recursive", 'R', WF_FLAG_BOOL,
                         "Obsolete: directories are always walked recursively", NULL},
        [F_USEKUBE] = {"use-kube", 'k', WF_FLAG_BOOL,
                       "Use the live Kubernetes cluster (default true when --kubeconfig, "
                       "--context or $KUBECONFIG is given); --use-kube=false: files only",
                       NULL},
        [F_KUBECONFIG] = WF_MESH_FLAG_KUBECONFIG,
        [F_CONTEXT] = WF_MESH_FLAG_CONTEXT,
        [F_COLOR] = {"color", 0, WF_FLAG_BOOL, "Colour the level (default: when stdout is a TTY)",
                     NULL},
        [F_VERBOSE] = {"verbose", 'v', WF_FLAG_BOOL, "List executed and skipped analyzers", NULL},
        [F_ISTIONS] = {"istioNamespace", 'i', WF_FLAG_STRING,
                       "Istio system namespace (default istio-system)", "string"},
        [F_IGNORE_UNKNOWN] = {"ignore-unknown", 0, WF_FLAG_BOOL,
                              "Do not fail (65) when some files cannot be parsed", NULL},
        [F_TIMEOUT] = {"timeout", 0, WF_FLAG_STRING, "Accepted for compatibility (unused)",
                       "duration"},
        [F_REVISION] = {"revision", 0, WF_FLAG_STRING, "Accepted for compatibility (unused)",
                        "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for analyze", NULL},
    };
    memcpy(f, defs, sizeof(defs));
}

static void usage(const wf_flag *flags)
{
    printf("Analyze Istio configuration and report problems with Istio's message codes.\n\n"
           "Usage:\n  weftctl analyze [FILE|DIR|-]... [flags]\n\n"
           "Examples:\n"
           "  # Analyze a folder of manifests\n"
           "  weftctl analyze -A manifests/\n\n"
           "  # Analyze the live cluster, simulating the effect of applying more files\n"
           "  weftctl analyze --kubeconfig ~/.kube/config a.yaml my-config/\n\n"
           "  # Analyze files in one namespace, JSON output\n"
           "  weftctl analyze -n istioinaction vs.yaml dr.yaml -o json\n\n"
           "  # Suppress a finding\n"
           "  weftctl analyze -S \"IST0102=Namespace default\" manifests/\n\n");
    wf_flags_usage(flags, F_COUNT);
    printf("\nThe live cluster is read (--use-kube defaults to true) when --kubeconfig, "
           "--context or\n$KUBECONFIG is given; --use-kube=true alone reads ~/.kube/config. "
           "Files are laid\nover the cluster's resources.\n");
    printf("\nResources outside the analyzed namespace (-n, default \"default\") are not "
           "reported;\nstderr names their namespaces: include them with -A or -n NAMESPACE.\n"
           "\nExit codes: 0 no issues, 79 issues at or above --failure-threshold (log output),\n"
           "65 some files could not be parsed, 64 usage error (bad flag or value, no input),\n"
           "1 other errors.\n");
}

/* weftctl's own analyzers, handed to the framework next to the registry's (analysis.h). */
static const wf_analyzer *const cli_analyzers[] = {&wf_pilot_authn_port_analyzer};
#define N_CLI_ANALYZERS (sizeof cli_analyzers / sizeof cli_analyzers[0])

static void list_analyzers(void)
{
    size_t n;
    const wf_analyzer *const *all = wf_analyzers_all(&n);
    size_t next = 0; /* the next of cli_analyzers (sorted) to print, in name order */
    for (size_t i = 0; i <= n; i++) {
        while (next < N_CLI_ANALYZERS &&
               (i == n || strcmp(cli_analyzers[next]->name, all[i]->name) < 0)) {
            printf("* %s:\n    %s\n", cli_analyzers[next]->name, cli_analyzers[next]->description);
            next++;
        }
        if (i < n && all[i]->default_on)
            printf("* %s:\n    %s\n", all[i]->name, all[i]->description);
    }
}

static void on_skipped(const char *path, void *arg)
{
    fprintf(stderr, "Skipping file %s, recognized file extensions are: [.json .yaml .yml]\n", path);
}

static const char *doc_url(char *buf, size_t cap, const char *code)
{
    return wf_analysis_doc_url(code, buf, cap);
}

static void print_log(wf_analysis_result *res, int out_threshold, bool color)
{
    for (size_t i = 0; i < res->n; i++) {
        const wf_finding *f = &res->findings[i];
        const wf_msg_type *t = wf_msg_type_get(f->id);
        if ((int)t->level > out_threshold)
            continue;
        const char *origin = wf_finding_origin(&res->arena, f);
        const char *ref = wf_finding_reference(&res->arena, f);
        const char *on = "", *off = "";
        if (color && t->level == WF_LEVEL_ERROR)
            on = "\033[1;31m", off = "\033[0m";
        else if (color && t->level == WF_LEVEL_WARNING)
            on = "\033[33m", off = "\033[0m";
        printf("%s%s%s [%s]", on, wf_level_name(t->level), off, t->code);
        if (origin)
            printf(" (%s%s%s)", origin, ref ? " " : "", ref ? ref : "");
        printf(" %s\n", f->text);
    }
}

/* The fields of a finding as istioctl's JSON and YAML print them: keys sorted, `reference`
 * only for file input. Returns the number of fields. */
typedef struct out_field {
    const char *key, *value;
} out_field;

static size_t finding_fields(wf_analysis_result *res, const wf_finding *f, char *url,
                             size_t url_size, out_field out[6])
{
    const wf_msg_type *t = wf_msg_type_get(f->id);
    const char *origin = wf_finding_origin(&res->arena, f);
    const char *ref = wf_finding_reference(&res->arena, f);
    size_t n = 0;
    out[n++] = (out_field){"code", t->code};
    out[n++] = (out_field){"documentationUrl", doc_url(url, url_size, t->code)};
    out[n++] = (out_field){"level", wf_level_name(t->level)};
    out[n++] = (out_field){"message", f->text};
    out[n++] = (out_field){"origin", origin ? origin : ""};
    if (ref)
        out[n++] = (out_field){"reference", ref};
    return n;
}

/* json.MarshalIndent(messages, "", "\t") and yaml.Marshal(messages). */
static void print_structured(wf_analysis_result *res, int out_threshold, bool json)
{
    char url[160];
    out_field fields[6];
    size_t shown = 0;
    for (size_t i = 0; i < res->n; i++) {
        const wf_finding *f = &res->findings[i];
        if ((int)wf_msg_type_get(f->id)->level > out_threshold)
            continue;
        size_t nf = finding_fields(res, f, url, sizeof(url), fields);
        if (json)
            printf("%s\n\t{", shown ? "," : "[");
        for (size_t k = 0; k < nf; k++) {
            if (json) {
                printf("%s\n\t\t\"%s\": ", k ? "," : "", fields[k].key);
                wf_json_write_string(stdout, fields[k].value);
            } else {
                printf("%s%s: ", k ? "  " : "- ", fields[k].key);
                wf_yaml_write_scalar(stdout, fields[k].value);
                printf("\n");
            }
        }
        if (json)
            printf("\n\t}");
        shown++;
    }
    if (json)
        printf(shown ? "\n]\n" : "[]\n");
    else if (!shown)
        printf("[]\n");
}

/* istioctl names what it read: the files found (one, or a list), else the namespace. weft
 * gives no all-clear when no resource was in scope (scope.in_scope == 0): see
 * print_scope. */
static void print_no_issues(const char *ns_label, const wf_store *store, size_t failed,
                            const wf_analyze_scope *scope)
{
    size_t nfiles = wf_store_file_count(store);
    if (!failed && scope->in_scope == 0)
        return;
    if (failed) {
        fprintf(stderr,
                "No validation issues found when analyzing %s (but %zu file%s could not be "
                "parsed).\n",
                ns_label, failed, failed == 1 ? "" : "s");
        return;
    }
    if (nfiles == 0)
        fprintf(stderr, "\u2714 No validation issues found when analyzing %s.\n", ns_label);
    else if (nfiles == 1)
        fprintf(stderr, "\u2714 No validation issues found when analyzing %s.\n",
                wf_store_file(store, 0));
    else {
        fprintf(stderr, "\u2714 No validation issues found when analyzing:\n");
        for (size_t i = 0; i < nfiles; i++)
            fprintf(stderr, "  - %s\n", wf_store_file(store, i));
    }
}

/* "a (1), b (2)" */
static void print_ns_list(const wf_analyze_scope *sc)
{
    for (size_t i = 0; i < sc->nskipped_ns; i++)
        fprintf(stderr, "%s%s (%zu)", i ? ", " : "", sc->skipped_ns[i].ns, sc->skipped_ns[i].n);
}

/* What the namespace filter left out, on stderr (weft's addition to istioctl's output). */
static void print_scope(const char *ns, const wf_analyze_scope *sc, size_t failed)
{
    const char *hint = sc->nskipped_ns == 1 ? sc->skipped_ns[0].ns : "NAMESPACE";
    if (sc->in_scope == 0 && sc->skipped == 0) {
        if (!failed)
            fprintf(stderr, "Warning: nothing was analyzed: the input holds no resources (only "
                            ".yaml, .yml and .json files are read).\n");
        return;
    }
    if (sc->skipped == 0)
        return;
    if (sc->in_scope == 0) {
        fprintf(stderr,
                "Warning: nothing was analyzed: no resource read is in namespace %s; skipped "
                "%zu in ",
                ns, sc->skipped);
        print_ns_list(sc);
        fprintf(stderr, ".\nAnalyze them with -n %s, or every namespace with -A.\n", hint);
        return;
    }
    fprintf(stderr, "Note: %zu resource%s outside namespace %s not analyzed: ", sc->skipped,
            sc->skipped == 1 ? "" : "s", ns);
    print_ns_list(sc);
    fprintf(stderr, ".\nInclude them with -n %s, or every namespace with -A.\n", hint);
}

typedef struct analyze_run {
    wf_flag *flags;
    char **files;
    size_t nfiles;
    const char *ns; /* default namespace for resources; NULL with -A */
    char ns_label[300];
    int fail_th, out_th;
    const char *fmt;
    wf_kube_client *kube; /* the live cluster (--use-kube), else NULL */
    const char *istio_ns;
    char *kube_ns; /* -n, else the kubeconfig context's namespace (malloc'd) */
} analyze_run;

/* Returns 0, -1 out of memory, -2 with the cluster error printed. */
static int load_inputs(analyze_run *run, wf_store *store, wf_meshcfg *mesh)
{
    if (run->kube) { /* the cluster first: the files are laid over it */
        wf_strbuf err = WF_STRBUF_INIT;
        long n = wf_kube_live_load(run->kube, run->istio_ns, store,
                                   run->flags[F_MESH].sval ? NULL : mesh, &err);
        if (n < 0)
            fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        if (n < 0)
            return -2;
    } else if (wf_store_load_buffer(store, WF_ANALYZE_DEFAULTS_NAME, wf_analysis_offline_defaults,
                                    strlen(wf_analysis_offline_defaults), false) < 0) {
        /* the defaults first, so that the user's own gateway Pod or Service replaces them */
        return -1;
    }
    for (size_t i = 0; i < run->nfiles; i++)
        if (wf_store_load_path(store, run->files[i], on_skipped, NULL) < 0)
            return -1;
    size_t nerr = wf_store_error_count(store);
    if (nerr) {
        fprintf(stderr, "Error(s) adding files:\n");
        for (size_t i = 0; i < nerr; i++) {
            const wf_load_error *e = wf_store_error(store, i);
            if (e->line)
                fprintf(stderr, "  %s:%u:%u: %s\n", e->file, e->line, e->col, e->message);
            else
                fprintf(stderr, "  %s: %s\n", e->file, e->message);
        }
    }
    return wf_store_finalize(store, run->ns, true);
}

static bool any_shown(const analyze_run *run, const wf_analysis_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        if ((int)wf_msg_type_get(res->findings[i].id)->level <= run->out_th)
            return true;
    return false;
}

/* Print the findings; the exit code follows the unfiltered findings and parse errors, and
 * only for log output (istioctl/pkg/analyze/analyze.go). */
static int report(analyze_run *run, wf_store *store, wf_analysis_result *res,
                  const wf_analyze_scope *scope)
{
    size_t failed = wf_store_failed_files(store);
    if (!any_shown(run, res))
        print_no_issues(run->ns_label, store, failed, scope);
    print_scope(run->ns, scope, failed);
    if (strcmp(run->fmt, "json") == 0) {
        print_structured(res, run->out_th, true);
        return WF_EXIT_OK;
    }
    if (strcmp(run->fmt, "yaml") == 0) {
        print_structured(res, run->out_th, false);
        return WF_EXIT_OK;
    }
    bool color = run->flags[F_COLOR].set ? run->flags[F_COLOR].bval : isatty(1) != 0;
    const char *term = getenv("TERM");
    if (!run->flags[F_COLOR].set && (!term || strcmp(term, "dumb") == 0))
        color = false;
    bool failing = false;
    for (size_t i = 0; i < res->n; i++)
        failing |= (int)wf_msg_type_get(res->findings[i].id)->level <= run->fail_th;
    if (any_shown(run, res))
        print_log(res, run->out_th, color);
    else
        printf("\n");
    if (failing) {
        fflush(stdout); /* the messages before the verdict, also when both go to one pipe */
        fprintf(stderr,
                "Error: Analyzers found issues when analyzing %s.\n"
                "See " DOC_BASE " for more information about causes and resolutions.\n",
                run->ns_label);
        return WF_EXIT_ANALYZERS;
    }
    if (failed && !run->flags[F_IGNORE_UNKNOWN].bval) {
        fprintf(stderr, "Error: Some files couldn't be parsed.\n");
        return WF_EXIT_DATAERR;
    }
    return WF_EXIT_OK;
}

/* -o value, case-insensitive as istioctl lowercases it; NULL when not a format. */
static const char *output_format(const char *v)
{
    static const char *const formats[] = {"log", "json", "yaml"};
    if (!v)
        return "log";
    for (size_t i = 0; i < 3; i++)
        if (strcasecmp(v, formats[i]) == 0)
            return formats[i];
    return NULL;
}

/* -S values must be CODE=RESOURCE; an unknown code only warns (analyze.go). */
static int check_suppressions(const wf_flag *flags)
{
    for (size_t i = 0; i < flags[F_SUPPRESS].nlist; i++) {
        const char *v = flags[F_SUPPRESS].list[i];
        const char *eq = strchr(v, '=');
        if (!eq || strchr(eq + 1, '=')) {
            fprintf(stderr,
                    "Error: %s is not a valid suppression value. See weftctl analyze "
                    "--help\n",
                    v);
            return -1;
        }
        char code[32];
        snprintf(code, sizeof(code), "%.*s", (int)(eq - v), v);
        if (!wf_msg_type_by_code(code) && strcmp(code, "*") != 0)
            fprintf(stderr,
                    "Warning: Supplied message code '%s' is an unknown message code and "
                    "will not have any effect.\n",
                    code);
    }
    return 0;
}

/* Every path argument must exist (istioctl stops at the first os.Stat error). */
static int check_paths(const analyze_run *run)
{
    for (size_t i = 0; i < run->nfiles; i++) {
        struct stat st;
        if (strcmp(run->files[i], "-") != 0 && stat(run->files[i], &st) != 0) {
            fprintf(stderr, "Error: stat %s: %s\n", run->files[i], strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* --timeout is unused (there is no cluster) but must be a Go duration ("30s", "1m30s"). */
static int check_timeout(const wf_flag *flags)
{
    const char *v = flags[F_TIMEOUT].sval;
    if (!v || wf_go_duration(v, NULL, NULL) == 0)
        return 0;
    fprintf(stderr,
            "Error: invalid argument \"%s\" for \"--timeout\" flag: time: invalid duration "
            "\"%s\"\n",
            v, v);
    return -1;
}

static int parse_levels(analyze_run *run)
{
    const char *ft = run->flags[F_FAIL].sval, *ot = run->flags[F_OUTTH].sval;
    run->fail_th = ft ? wf_level_parse(ft) : WF_LEVEL_ERROR;
    run->out_th = ot ? wf_level_parse(ot) : WF_LEVEL_INFO;
    if (run->fail_th < 0 || run->out_th < 0) {
        fprintf(stderr, "Error: invalid level \"%s\": valid levels are [Info Warning Error]\n",
                run->fail_th < 0 ? ft : ot);
        return -1;
    }
    return 0;
}

static void print_verbose(const wf_analysis_result *res)
{
    size_t n;
    const wf_analyzer *const *all = wf_analyzers_all(&n);
    fprintf(stderr, "Executed analyzers:\n");
    for (size_t i = 0; i < res->nran; i++)
        fprintf(stderr, "    %s\n", res->ran[i]->name);
    fprintf(stderr, "Skipped analyzers:\n");
    for (size_t i = 0; i < n; i++) {
        bool ran = false;
        for (size_t j = 0; j < res->nran && !ran; j++)
            ran = res->ran[j] == all[i];
        if (!ran && all[i]->default_on)
            fprintf(stderr, "    %s\n", all[i]->name);
    }
}

static int run_analysis(analyze_run *run)
{
    wf_flag *flags = run->flags;
    wf_meshcfg *mesh = wf_meshcfg_new_default();
    wf_store *store = wf_store_new();
    int rc = WF_EXIT_ERROR;
    const char *err = NULL;
    if (!mesh || !store) {
        fprintf(stderr, "Error: out of memory\n");
        goto out;
    }
    if ((flags[F_MESH].sval && wf_meshcfg_load_file(mesh, flags[F_MESH].sval, &err)) ||
        (flags[F_NETWORKS].sval && wf_meshcfg_load_networks(mesh, flags[F_NETWORKS].sval, &err))) {
        fprintf(stderr, "Error: %s\n", err);
        goto out;
    }
    int lrc = load_inputs(run, store, mesh);
    if (lrc) {
        if (lrc == -1)
            fprintf(stderr, "Error: out of memory\n");
        goto out;
    }
    wf_analysis_opts opts = {
        .analyzers = flags[F_ANALYZER].list,
        .nanalyzers = flags[F_ANALYZER].nlist,
        .ns_filter = run->ns,
        .suppress = flags[F_SUPPRESS].list,
        .nsuppress = flags[F_SUPPRESS].nlist,
        .extra = cli_analyzers,
        .nextra = N_CLI_ANALYZERS,
        .kubernetes = run->kube != NULL,
    };
    wf_analysis_result *res = wf_analyze(store, mesh, &opts);
    if (!res) {
        fprintf(stderr, "Error: out of memory\n");
        goto out;
    }
    if (flags[F_VERBOSE].bval)
        print_verbose(res);
    if (res->truncated) {
        fprintf(stderr,
                "Error: the analysis produced more than %u MiB of findings and was "
                "stopped; analyze a smaller part of the input\n",
                WF_ANALYSIS_MAX_TEXT_BYTES >> 20);
        wf_analysis_result_free(res);
        goto out;
    }
    wf_analyze_scope scope;
    if (wf_analyze_scope_count(store, run->ns, &scope) != 0) {
        fprintf(stderr, "Error: out of memory\n");
        wf_analysis_result_free(res);
        goto out;
    }
    rc = report(run, store, res, &scope);
    wf_analyze_scope_free(&scope);
    wf_analysis_result_free(res);
out:
    wf_store_free(store);
    wf_meshcfg_free(mesh);
    return rc;
}

/* --use-kube: the client, the namespace (-n, else the context's) and istioctl's check that it
 * exists. Returns 0 with *ns; 1 when the namespace does not exist (printed; exit 0, as
 * istioctl); -1 after printing the error. */
static int open_cluster(analyze_run *run, const char **ns)
{
    wf_kube_config *cfg = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    int rc =
        wf_kubeconfig_load(run->flags[F_KUBECONFIG].sval, run->flags[F_CONTEXT].sval, &cfg, &err);
    if (rc == 0 &&
        !(run->kube_ns = strdup(
              run->flags[F_NS].sval && *run->flags[F_NS].sval ? run->flags[F_NS].sval : cfg->ns))) {
        wf_kube_config_free(cfg);
        wf_strbuf_puts(&err, "out of memory");
        rc = -1;
    }
    if (rc == 0)
        rc = wf_kube_client_new(cfg, &run->kube, &err); /* takes cfg */
    if (rc == 0 && !run->flags[F_ALL].bval) {
        int ex = wf_kube_namespace_exists(run->kube, run->kube_ns, &err);
        if (ex == 0) {
            fprintf(stderr, "namespace \"%s\" not found\n", run->kube_ns);
            rc = 1;
        } else if (ex < 0) {
            rc = -1;
        }
    }
    if (rc < 0)
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    *ns = run->kube_ns;
    return rc;
}

int wf_cmd_analyze(int argc, char **argv)
{
    wf_flag flags[F_COUNT];
    init_flags(flags);
    analyze_run run = {.flags = flags};
    int rc = WF_EXIT_ERROR;
    if (wf_flags_parse_cmd("analyze", flags, F_COUNT, argc, argv, &run.files, &run.nfiles)) {
        rc = WF_EXIT_USAGE;
        goto out;
    }
    if (flags[F_HELP].bval) {
        usage(flags);
        rc = WF_EXIT_OK;
        goto out;
    }
    run.fmt = output_format(flags[F_OUT].sval);
    if (!run.fmt) {
        fprintf(stderr, "Error: invalid output format \"%s\"; valid formats are [log json yaml]\n",
                flags[F_OUT].sval);
        rc = WF_EXIT_USAGE;
        goto out;
    }
    if (flags[F_LIST].bval) {
        list_analyzers();
        rc = WF_EXIT_OK;
        goto out;
    }
    bool use_kube = flags[F_USEKUBE].set
                        ? flags[F_USEKUBE].bval
                        : wf_mesh_choose(NULL, flags[F_KUBECONFIG].sval, flags[F_CONTEXT].sval,
                                         getenv("KUBECONFIG")) == WF_MESH_CLUSTER;
    if (!use_kube && run.nfiles == 0) {
        rc = wf_usage_error("analyze", "nothing to analyze: give manifest files, folders or - "
                                       "(stdin), or a cluster to read (--kubeconfig, --context, "
                                       "$KUBECONFIG)");
        goto out;
    }
    if (check_suppressions(flags) || check_timeout(flags) || parse_levels(&run)) {
        rc = WF_EXIT_USAGE;
        goto out;
    }
    if (check_paths(&run))
        goto out;
    run.istio_ns =
        flags[F_ISTIONS].sval && *flags[F_ISTIONS].sval ? flags[F_ISTIONS].sval : "istio-system";
    const char *dflt_ns = flags[F_NS].sval ? flags[F_NS].sval : "default";
    if (use_kube) {
        int krc = open_cluster(&run, &dflt_ns);
        if (krc != 0) {
            rc = krc > 0 ? WF_EXIT_OK : WF_EXIT_ERROR;
            goto out;
        }
    }
    if (flags[F_ALL].bval) {
        run.ns = NULL;
        snprintf(run.ns_label, sizeof(run.ns_label), "all namespaces");
    } else {
        run.ns = dflt_ns;
        snprintf(run.ns_label, sizeof(run.ns_label), "namespace: %s", run.ns);
    }
    rc = run_analysis(&run);
out:
    wf_kube_client_free(run.kube);
    free(run.kube_ns);
    wf_flags_free(flags, F_COUNT);
    free(run.files);
    return rc;
}
