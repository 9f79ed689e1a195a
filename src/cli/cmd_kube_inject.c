/*
 * cmd_kube_inject.c - `weftctl kube-inject`: istioctl kube-inject offline
 * (istioctl/pkg/kubeinject/kubeinject.go with --injectConfigFile/--meshConfigFile/--valuesFile;
 * pkg/kube/inject/inject.go IntoResourceFile/IntoObject): reads Kubernetes YAML (a file or
 * `-`), injects the sidecar into Pods and the pod templates of Deployments, ReplicaSets,
 * StatefulSets, DaemonSets, Jobs, CronJobs (spec.jobTemplate) and ReplicationControllers (and
 * the items of a List), through the injector library (kube/inject.h), and writes every
 * document back as YAML, each followed by "---" as istioctl does; other documents pass through
 * as written. A workload the decision skips is written unchanged with istioctl's
 * "===> Skipping injection because ..." on stderr. What weft's injector does not implement is
 * printed on stderr ("Warning: ..."), never silently ignored.
 *
 * Unlike istioctl, weftctl never contacts a cluster: without the three files it injects with
 * Istio's chart defaults and weft's image. Exit codes: 0 done; 1 an input or config file that
 * cannot be read or parsed (FILE:LINE: ...), or a pod the injector refuses; 64 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/cmd_pc.h"
#include "cli/flags.h"
#include "core/arena.h"
#include "kube/inject.h"
#include "model/node_json.h"
#include "model/parse.h"

enum { F_FILE, F_OUT, F_INJECT, F_MESH, F_VALUES, F_HELP, F_COUNT };

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_FILE] = {"filename", 'f', WF_FLAG_STRING,
                    "Input Kubernetes resource filename (\"-\" for stdin)", "string"},
        [F_OUT] = {"output", 'o', WF_FLAG_STRING,
                   "Modified output Kubernetes resource filename (default stdout)", "string"},
        [F_INJECT] = {"injectConfigFile", 0, WF_FLAG_STRING,
                      "Injection configuration filename (the `config` of the "
                      "istio-sidecar-injector ConfigMap)",
                      "string"},
        [F_MESH] = {"meshConfigFile", 0, WF_FLAG_STRING,
                    "Mesh configuration filename (MeshConfig YAML)", "string"},
        [F_VALUES] = {"valuesFile", 0, WF_FLAG_STRING,
                      "Injection values configuration filename (the `values` JSON)", "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for kube-inject", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(const wf_flag *flags)
{
    printf("kube-inject manually injects the weft-proxy sidecar into Kubernetes workloads, as\n"
           "`istioctl kube-inject` does with Istio's default injection template: Pods and the\n"
           "pod templates of Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs\n"
           "and ReplicationControllers get the istio-init container (`weft-proxy\n"
           "istio-iptables`) and the istio-proxy container. Other documents pass through.\n"
           "Without --injectConfigFile/--valuesFile/--meshConfigFile the defaults of Istio's\n"
           "chart are used, with weft's image (localhost/weft/weft:<version>); weftctl never\n"
           "contacts a cluster.\n\n"
           "Usage:\n  weftctl kube-inject -f FILE|- [flags]\n\n"
           "Examples:\n"
           "  weftctl kube-inject -f deployment.yaml | kubectl apply -f -\n"
           "  weftctl kube-inject -f deployment.yaml --injectConfigFile inject-config.yaml \\\n"
           "      --meshConfigFile mesh.yaml --valuesFile values.json -o injected.yaml\n\n");
    wf_flags_usage(flags, F_COUNT);
    printf("\nExit codes: 0 done; 1 an input or configuration file that cannot be read or\n"
           "parsed, or a pod the injector refuses; 64 usage error.\n");
}

/* ---- input: YAML documents split as Kubernetes' YAMLReader splits them ("---" lines) ---- */

typedef struct doc {
    const char *text;
    size_t len;
    uint32_t line0; /* lines before it */
} doc;

static bool separator(const char *p, const char *end)
{
    if (end - p < 3 || strncmp(p, "---", 3) != 0)
        return false;
    p += 3;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p == end || *p == '\n';
}

static int push_doc(doc **v, size_t *n, size_t *cap, doc d)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        doc *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv, *cap = nc;
    }
    (*v)[(*n)++] = d;
    return 0;
}

/* The documents of text (*out malloc'd; NULL when out of memory): split at "---" lines. */
static size_t split(const char *text, size_t len, doc **out)
{
    doc *v = NULL;
    size_t n = 0, cap = 0;
    const char *p = text, *end = text + len, *start = text;
    uint32_t line = 0, start_line = 0;
    for (;;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        bool sep = separator(p, eol ? eol : end);
        if (sep || !eol) {
            const char *stop = sep ? p : end;
            if (push_doc(&v, &n, &cap, (doc){start, (size_t)(stop - start), start_line}) != 0) {
                free(v);
                *out = NULL;
                return 0;
            }
            start = eol ? eol + 1 : end;
            start_line = line + 1;
        }
        if (!eol)
            break;
        p = eol + 1;
        line++;
    }
    *out = v;
    return n;
}

static int first_root(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    (void)line, (void)col;
    if (!*(wf_node **)arg)
        *(wf_node **)arg = root;
    return 0;
}

/* ---- injection ---------------------------------------------------------------------------- */

typedef struct run {
    const wf_inject_config *cfg;
    const char *file;
    wf_strbuf *out;
    int rc;
} run;

/* "Warning: [PREFIX: ]TEXT" per warning; prefix names the file, line and workload. */
static void print_warnings(const json_t *w, const char *prefix)
{
    size_t i;
    json_t *s;
    json_array_foreach(w, i, s) fprintf(stderr, "Warning: %s%s%s\n", prefix ? prefix : "",
                                        prefix ? ": " : "", json_string_value(s));
}

/* The line of the annotation the injector's message names ("annotation KEY..."), found in
 * node (the object's, or NULL) under the pod's metadata path; else line. */
static uint32_t annotation_line(const wf_node *node, const char *kind, const char *why,
                                uint32_t line)
{
    const char *path = strcmp(kind, "Pod") == 0       ? "metadata.annotations"
                       : strcmp(kind, "CronJob") == 0 ? "spec.jobTemplate.spec.template.metadata."
                                                        "annotations"
                                                      : "spec.template.metadata.annotations";
    const wf_node *an = node ? wf_node_path(node, path) : NULL;
    for (size_t i = 0; an && an->type == WF_NODE_MAP && i < an->len; i++) {
        const wf_map_entry *e = &an->u.entries[i];
        const char *at = strstr(why, "annotation ");
        for (; at; at = strstr(at + 1, "annotation ")) {
            size_t k = strlen(e->key);
            const char *after = at + 11;
            if (strncmp(after, e->key, k) == 0 && strchr("=: \"", after[k]) && after[k])
                return e->key_line ? e->key_line : line;
        }
    }
    return line;
}

/* Where a workload keeps its pod template. */
static json_t *pod_template(json_t *obj, const char *kind)
{
    static const char *const templ[] = {"Deployment",       "ReplicaSet", "StatefulSet",
                                        "DaemonSet",        "Job",        "ReplicationController",
                                        "DeploymentConfig", NULL};
    json_t *spec = json_object_get(obj, "spec");
    if (strcmp(kind, "CronJob") == 0)
        return json_object_get(json_object_get(json_object_get(spec, "jobTemplate"), "spec"),
                               "template");
    for (size_t i = 0; templ[i]; i++)
        if (strcmp(kind, templ[i]) == 0)
            return json_object_get(spec, "template");
    return NULL;
}

/* Injects obj in place: 1 changed, 0 not a workload or skipped, -1 refused (reported). node
 * is obj's YAML (for the lines of its fields), NULL when unknown. */
static int inject_object(run *r, json_t *obj, const wf_node *node, uint32_t line)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!kind)
        return 0;
    if (strcmp(kind, "List") == 0) {
        int changed = 0;
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(obj, "items"), i, item)
        {
            const wf_node *in = node ? wf_seq_at(wf_map_get(node, "items"), i) : NULL;
            int rc = inject_object(r, item, in, in ? in->line : line);
            if (rc < 0)
                return -1;
            changed |= rc;
        }
        return changed;
    }
    json_t *templ = NULL, *pod = NULL;
    if (strcmp(kind, "Pod") == 0) {
        pod = json_incref(obj);
    } else if ((templ = pod_template(obj, kind))) {
        json_t *tmd = json_object_get(templ, "metadata"), *tspec = json_object_get(templ, "spec");
        pod = json_object();
        if (!pod ||
            json_object_set_new(pod, "metadata",
                                json_is_object(tmd) ? json_deep_copy(tmd) : json_object()) ||
            json_object_set_new(pod, "spec",
                                json_is_object(tspec) ? json_deep_copy(tspec) : json_object())) {
            json_decref(pod);
            fprintf(stderr, "Error: out of memory\n");
            return -1;
        }
    } else {
        return 0;
    }
    wf_inject_owner owner = {json_string_value(json_object_get(obj, "apiVersion")), kind,
                             name ? name : ""};
    json_t *warnings = json_array(), *injected = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    int rc =
        wf_inject_pod(r->cfg, pod, ns && *ns ? ns : "default", &owner, &injected, warnings, &why);
    char where[1024];
    snprintf(where, sizeof where, "%s:%u: %s %s/%s", r->file, line, kind,
             ns && *ns ? ns : "default", name ? name : "");
    print_warnings(warnings, where);
    json_decref(warnings);
    if (rc == 0)
        fprintf(stderr,
                "===> Skipping injection because \"%s\" has sidecar injection disabled "
                "(%s)\n",
                name ? name : "", wf_strbuf_cstr(&why));
    if (rc < 0)
        fprintf(stderr, "Error: %s:%u: %s %s/%s: %s\n", r->file,
                annotation_line(node, kind, wf_strbuf_cstr(&why), line), kind,
                ns && *ns ? ns : "default", name ? name : "", wf_strbuf_cstr(&why));
    if (rc == 1 && templ) {
        json_object_set(templ, "metadata", json_object_get(injected, "metadata"));
        json_object_set(templ, "spec", json_object_get(injected, "spec"));
    } else if (rc == 1) {
        json_object_set(obj, "metadata", json_object_get(injected, "metadata"));
        json_object_set(obj, "spec", json_object_get(injected, "spec"));
    }
    wf_strbuf_free(&why);
    json_decref(injected);
    json_decref(pod);
    return rc < 0 ? -1 : rc;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '#') { /* a comment line */
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return false;
    }
    return true;
}

/* istioctl decodes every document's TypeMeta first (inject.go FromRawToObject): a document that
 * is not a mapping fails there, with encoding/json's words. */
static const char *json_type_word(const json_t *v)
{
    return json_is_string(v)    ? "string"
           : json_is_array(v)   ? "array"
           : json_is_number(v)  ? "number"
           : json_is_boolean(v) ? "bool"
                                : NULL;
}

static int one_doc(run *r, const doc *d)
{
    if (blank(d->text, d->len))
        return 0;
    wf_arena a;
    wf_arena_init(&a);
    wf_node *root = NULL;
    wf_parse_error e = {0};
    int prc = wf_parse_yaml_lines(&a, d->text, d->len, d->line0, first_root, &root, &e);
    if (prc != 0) {
        fprintf(stderr, "Error: %s:%u:%u: %s\n", r->file, e.line, e.col,
                prc > 0 ? e.message : "out of memory");
        wf_arena_destroy(&a);
        return -1;
    }
    json_t *obj = root ? wf_node_to_json(root) : NULL;
    uint32_t line = root ? root->line : d->line0 + 1;
    const char *word = json_type_word(obj);
    if (word) {
        fprintf(stderr,
                "Error: %s:%u: error unmarshaling JSON: while decoding JSON: json: cannot "
                "unmarshal %s into Go value of type v1.TypeMeta (a document must be a "
                "Kubernetes object)\n",
                r->file, line, word);
        json_decref(obj);
        wf_arena_destroy(&a);
        return -1;
    }
    if (!json_is_object(obj)) {
        /* an empty (null) document: passes through */
        json_decref(obj);
        wf_arena_destroy(&a);
        wf_strbuf_append(r->out, d->text, d->len);
        if (d->len && d->text[d->len - 1] != '\n')
            wf_strbuf_putc(r->out, '\n');
        wf_strbuf_puts(r->out, "---\n");
        return 0;
    }
    int rc = inject_object(r, obj, root, line);
    wf_arena_destroy(&a);
    if (rc == 1) {
        pc_yaml_write(r->out, obj);
    } else if (rc == 0) {
        wf_strbuf_append(r->out, d->text, d->len);
        if (d->len && d->text[d->len - 1] != '\n')
            wf_strbuf_putc(r->out, '\n');
    }
    wf_strbuf_puts(r->out, "---\n");
    json_decref(obj);
    return rc < 0 ? -1 : 0;
}

static char *read_all(FILE *f, size_t *len)
{
    wf_strbuf b = WF_STRBUF_INIT;
    if (wf_strbuf_read_stream(&b, f) != 0) {
        wf_strbuf_free(&b);
        return NULL;
    }
    *len = b.len;
    wf_strbuf_puts(&b, "");
    return wf_strbuf_take(&b);
}

static int inject_text(const wf_inject_config *cfg, const char *file, const char *text, size_t len,
                       wf_strbuf *out)
{
    doc *docs = NULL;
    size_t n = split(text, len, &docs);
    if (!docs) {
        fprintf(stderr, "Error: out of memory\n");
        return WF_EXIT_ERROR;
    }
    run r = {cfg, file, out, 0};
    int rc = WF_EXIT_OK;
    for (size_t i = 0; i < n && rc == WF_EXIT_OK; i++)
        if (one_doc(&r, &docs[i]) != 0)
            rc = WF_EXIT_ERROR;
    free(docs);
    return rc;
}

static int write_out(const char *path, const wf_strbuf *b)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "Error: %s: %s\n", path, strerror(errno));
        return WF_EXIT_ERROR;
    }
    size_t n = b->len ? fwrite(b->data, 1, b->len, f) : 0;
    int bad = n != b->len;
    if (path)
        bad |= fclose(f) != 0;
    else
        bad |= fflush(f) != 0;
    if (bad) {
        fprintf(stderr, "Error: %s: cannot write\n", path ? path : "stdout");
        return WF_EXIT_ERROR;
    }
    return WF_EXIT_OK;
}

int wf_cmd_kube_inject(int argc, char **argv)
{
    wf_flag flags[F_COUNT];
    init_flags(flags);
    char **pos = NULL;
    size_t npos = 0;
    if (wf_flags_parse_cmd("kube-inject", flags, F_COUNT, argc, argv, &pos, &npos) != 0) {
        wf_flags_free(flags, F_COUNT);
        return WF_EXIT_USAGE;
    }
    int rc = WF_EXIT_OK;
    if (flags[F_HELP].bval) {
        usage(flags);
        goto done;
    }
    if (npos) {
        rc = wf_usage_error("kube-inject", "unexpected argument \"%s\"", pos[0]);
        goto done;
    }
    const char *file = flags[F_FILE].sval;
    if (!file || !*file) {
        rc = wf_usage_error("kube-inject", "filename not specified (see --filename or -f)");
        goto done;
    }
    wf_inject_config *cfg = NULL;
    wf_strbuf why = WF_STRBUF_INIT;
    if (wf_inject_config_load_files(flags[F_INJECT].sval, flags[F_VALUES].sval, flags[F_MESH].sval,
                                    &cfg, &why) != 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        rc = WF_EXIT_ERROR;
        goto done;
    }
    wf_strbuf_free(&why);
    print_warnings(wf_inject_config_unimplemented(cfg), NULL);
    bool is_stdin = strcmp(file, "-") == 0;
    struct stat st;
    if (!is_stdin && stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "Error: %s: is a directory (kube-inject reads one file, or - for "
                "stdin)\n",
                file);
        wf_inject_config_free(cfg);
        rc = WF_EXIT_ERROR;
        goto done;
    }
    FILE *in = is_stdin ? stdin : fopen(file, "rb");
    size_t len = 0;
    char *text = in ? read_all(in, &len) : NULL;
    if (in && !is_stdin)
        fclose(in);
    if (!text) {
        fprintf(stderr, "Error: %s: %s\n", is_stdin ? "stdin" : file,
                in ? "cannot read" : strerror(errno));
        rc = WF_EXIT_ERROR;
    } else {
        wf_strbuf out = WF_STRBUF_INIT;
        rc = inject_text(cfg, is_stdin ? "stdin" : file, text, len, &out);
        if (rc == WF_EXIT_OK && wf_strbuf_failed(&out)) {
            fprintf(stderr, "Error: out of memory\n");
            rc = WF_EXIT_ERROR;
        }
        if (rc == WF_EXIT_OK)
            rc = write_out(flags[F_OUT].sval, &out);
        wf_strbuf_free(&out);
    }
    free(text);
    wf_inject_config_free(cfg);
done:
    free(pos);
    wf_flags_free(flags, F_COUNT);
    return rc;
}
