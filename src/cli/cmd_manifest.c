/*
 * cmd_manifest.c - `weftctl manifest generate` (istioctl's command: istioctl/pkg/install/
 * manifest.go): the install manifests (cli/manifest.h) as YAML documents on stdout, in apply
 * order, or with -o DIR one file per component in istioctl's layout (Base/Base.yaml,
 * Base/Pilot/Pilot.yaml, Base/Pilot/IngressGateways/IngressGateways.yaml). Options: `--set
 * key=value` (repeatable, istioctl's keys) and `-f/--filename` (an IstioOperator file); the
 * --set values win over the file, as istioctl's.
 *
 * Exit codes (cli.h): 0 written; 1 a values file or output directory that cannot be read or
 * written, naming it; 64 a bad command line (an unknown --set key or a bad value is one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cmd_pc.h"
#include "cli/flags.h"
#include "cli/manifest.h"

enum { F_SET, F_FILE, F_OUT, F_HELP, F_COUNT };

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_SET] = {"set", 0, WF_FLAG_LIST,
                   "Override an IstioOperator value (--set hub=localhost/weft, --set "
                   "meshConfig.trustDomain=example.org); repeatable",
                   "stringArray"},
        [F_FILE] = {"filename", 'f', WF_FLAG_STRING,
                    "Path to a file containing an IstioOperator custom resource", "string"},
        [F_OUT] = {"output", 'o', WF_FLAG_STRING,
                   "Manifest output directory path (default: stdout)", "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "help for generate", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void help(const wf_flag *fl)
{
    printf("The generate subcommand generates an Istio install manifest and outputs to the "
           "console by default.\n\nweft's: the namespace, the CRDs of the Istio kinds weft "
           "reads, istiod's\nRBAC, ConfigMaps, Deployment (weft-pilot) and Service, the "
           "webhook\nconfigurations and the ingress gateway (weft-proxy), in apply order.\n"
           "docs/kubernetes.md \"Installing on a cluster\".\n\n"
           "Usage:\n  weftctl manifest generate [flags]\n\n"
           "Examples:\n  # Generate the default manifests and apply them\n"
           "  weftctl manifest generate | kubectl apply -f -\n\n"
           "  # A revision with its own image tag\n"
           "  weftctl manifest generate --set revision=canary --set tag=0.2.0\n\n"
           "Keys of --set: hub, tag, namespace (values.global.istioNamespace), revision,\n"
           "  meshConfig.trustDomain, meshConfig.accessLogFile,\n"
           "  meshConfig.outboundTrafficPolicy.mode, components.ingressGateways[0].enabled\n"
           "  (values.gateways.istio-ingressgateway.enabled), components.base.enabled\n"
           "  (false: leave out the CRDs, for a cluster that has Istio's)\n\n");
    wf_flags_usage(fl, F_COUNT);
    printf("\nExit codes: 0 written, 1 a file that cannot be read or written, 64 a bad command "
           "line (an unknown --set key or bad value).\n");
}

/* The component a document belongs to, as istioctl names them. */
static const char *component(const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    if (kind && (!strcmp(kind, "Namespace") || !strcmp(kind, "CustomResourceDefinition")))
        return "Base";
    if (name && !strncmp(name, "istio-ingressgateway", 20))
        return "Base/Pilot/IngressGateways";
    return "Base/Pilot";
}

static int write_docs(FILE *f, const json_t *docs, const char *only)
{
    size_t i;
    const json_t *d;
    bool first = true;
    json_array_foreach(docs, i, d)
    {
        if (only && strcmp(component(d), only) != 0)
            continue;
        wf_strbuf b = WF_STRBUF_INIT;
        pc_yaml_write(&b, d);
        if (wf_strbuf_failed(&b)) {
            wf_strbuf_free(&b);
            return -1;
        }
        fprintf(f, "%s%s", first ? "" : "---\n", wf_strbuf_cstr(&b));
        first = false;
        wf_strbuf_free(&b);
    }
    return ferror(f) ? -1 : 0;
}

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int write_dir(const char *dir, const json_t *docs)
{
    static const char *const comps[] = {"Base", "Base/Pilot", "Base/Pilot/IngressGateways"};
    for (size_t i = 0; i < sizeof comps / sizeof comps[0]; i++) {
        char sub[4096], file[4200];
        const char *leaf = strrchr(comps[i], '/') ? strrchr(comps[i], '/') + 1 : comps[i];
        snprintf(sub, sizeof sub, "%s/%s", dir, comps[i]);
        snprintf(file, sizeof file, "%s/%s.yaml", sub, leaf);
        bool any = false;
        size_t j;
        const json_t *d;
        json_array_foreach(docs, j, d) any |= !strcmp(component(d), comps[i]);
        if (!any)
            continue;
        FILE *f = NULL;
        if (mkdirs(sub) != 0 || !(f = fopen(file, "w")) || write_docs(f, docs, comps[i]) != 0 ||
            fclose(f) != 0) {
            fprintf(stderr, "Error: cannot write %s: %s\n", file, strerror(errno));
            return WF_EXIT_ERROR;
        }
    }
    return WF_EXIT_OK;
}

static int generate(wf_flag *fl)
{
    wf_manifest_opts o;
    wf_strbuf why = WF_STRBUF_INIT;
    int rc = WF_EXIT_OK;
    if (wf_manifest_opts_init(&o) != 0) {
        fprintf(stderr, "Error: out of memory\n");
        rc = WF_EXIT_ERROR;
    } else if (fl[F_FILE].set && wf_manifest_values(&o, fl[F_FILE].sval, &why) != 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&why));
        rc = WF_EXIT_ERROR;
    }
    for (size_t i = 0; rc == WF_EXIT_OK && i < fl[F_SET].nlist; i++) {
        const char *kv = fl[F_SET].list[i], *eq = strchr(kv, '=');
        char key[256];
        if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof key) {
            rc = wf_usage_error("manifest generate", "invalid --set \"%s\": want key=value", kv);
            break;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        wf_strbuf_reset(&why);
        if (wf_manifest_set(&o, key, eq + 1, &why) != 0)
            rc = wf_usage_error("manifest generate", "--set %s: %s", kv, wf_strbuf_cstr(&why));
    }
    json_t *docs = rc == WF_EXIT_OK ? wf_manifest_generate(&o) : NULL;
    if (rc == WF_EXIT_OK && !docs) {
        fprintf(stderr, "Error: out of memory\n");
        rc = WF_EXIT_ERROR;
    } else if (rc == WF_EXIT_OK && fl[F_OUT].set) {
        rc = write_dir(fl[F_OUT].sval, docs);
    } else if (rc == WF_EXIT_OK && (write_docs(stdout, docs, NULL) != 0 || fflush(stdout))) {
        fprintf(stderr, "Error: cannot write the manifests: %s\n", strerror(errno));
        rc = WF_EXIT_ERROR;
    }
    json_decref(docs);
    wf_strbuf_free(&why);
    wf_manifest_opts_free(&o);
    return rc;
}

int wf_cmd_manifest(int argc, char **argv)
{
    if (argc < 2) /* a parent command without its subcommand, as pc and log */
        return wf_usage_error("manifest", "a subcommand is required: generate");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("The manifest command generates Istio (weft) install manifests.\n\nUsage:\n"
               "  weftctl manifest [command]\n\nAvailable Commands:\n"
               "  generate    Generates an Istio install manifest\n");
        return WF_EXIT_OK;
    }
    if (strcmp(argv[1], "generate") != 0)
        return wf_usage_error("manifest", "unknown command \"%s\" for \"weftctl manifest\"",
                              argv[1]);
    wf_flag fl[F_COUNT];
    init_flags(fl);
    char **pos = NULL;
    size_t npos = 0;
    int rc;
    if (wf_flags_parse_cmd("manifest generate", fl, F_COUNT, argc - 1, argv + 1, &pos, &npos))
        rc = WF_EXIT_USAGE;
    else if (fl[F_HELP].bval) {
        help(fl);
        rc = WF_EXIT_OK;
    } else if (npos)
        rc = wf_usage_error("manifest generate",
                            "unknown command \"%s\" for \"weftctl manifest generate\"", pos[0]);
    else
        rc = generate(fl);
    free(pos);
    wf_flags_free(fl, F_COUNT);
    return rc;
}
