/*
 * cmd_version.c - `weftctl version` (and `weftctl --version`), in istioctl's layout
 * (istio pkg/version/cobra.go): with --short (default) and --remote (default):
 *
 *   client version: 0.1.0
 *   control plane version: 0.1.0
 *   data plane version: 0.1.0 (3 proxies)
 *
 * `--remote=false` prints the client version alone; `--short=false` prints the long
 * BuildInfo form; `-o json|yaml` prints the whole structure.
 *
 * The control-plane version is read from weft-pilot's /metrics gauge
 * istio_build{component="pilot",tag="<version>"} (what istiod exports); a pilot that does
 * not export it is reported as "unknown". The data-plane versions are the connected proxies'
 * ISTIO_VERSION from /debug/syncz. An unreachable pilot is reported on stderr and the client
 * version is still printed (istioctl: "Istio is not present in the cluster").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/http_client.h"
#include "cli/proxy_find.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif
#define TIMEOUT_MS 5000

enum { F_REMOTE, F_SHORT, F_OUT, F_PILOT, F_HELP, F_COUNT };

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_REMOTE] = {"remote", 0, WF_FLAG_BOOL,
                      "Use to retrieve the remote versions (default "
                      "true)",
                      NULL},
        [F_SHORT] = {"short", 's', WF_FLAG_BOOL,
                     "Use --short=false to generate full version "
                     "information (default true)",
                     NULL},
        [F_OUT] = {"output", 'o', WF_FLAG_STRING, "One of 'yaml' or 'json'.", "string"},
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING,
                     "weft-pilot monitoring address (default " WF_DEFAULT_PILOT ")", "addr"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for version", NULL},
    };
    memcpy(f, defs, sizeof defs);
    f[F_REMOTE].bval = true;
    f[F_SHORT].bval = true;
}

typedef struct remote {
    bool reached;
    char *cp_version; /* NULL: pilot does not report it */
    json_t *proxies;  /* [{"ID", "IstioVersion"}] */
} remote;

static char *get_body(const char *pilot, const char *path, wf_strbuf *err)
{
    wf_http_resp r = {0};
    wf_strbuf e = WF_STRBUF_INIT;
    char *body = NULL;
    if (wf_http_request("GET", pilot, path, TIMEOUT_MS, &r, &e))
        wf_strbuf_printf(err, "cannot reach weft-pilot at %s: %s", pilot, wf_strbuf_cstr(&e));
    else if (r.status != 200)
        wf_strbuf_printf(err, "weft-pilot at %s answered %d to %s", pilot, r.status, path);
    else {
        body = r.body;
        r.body = NULL;
    }
    wf_http_resp_free(&r);
    wf_strbuf_free(&e);
    return body;
}

/* tag="X" of an istio_build line with component="pilot". */
static char *pilot_build_tag(const char *metrics)
{
    for (const char *l = metrics; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        size_t len = strcspn(l, "\n");
        if (strncmp(l, "istio_build{", 12) != 0)
            continue;
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)len, l);
        char *tag = strstr(line, "tag=\"");
        if (!strstr(line, "component=\"pilot\"") || !tag)
            continue;
        tag += 5;
        return strndup(tag, strcspn(tag, "\""));
    }
    return NULL;
}

static int fetch_remote(const char *pilot, remote *rm, wf_strbuf *err)
{
    char *metrics = get_body(pilot, "/metrics", err);
    if (!metrics)
        return -1;
    rm->reached = true;
    rm->cp_version = pilot_build_tag(metrics);
    free(metrics);
    char *sync = get_body(pilot, "/debug/syncz", err);
    json_t *arr = sync ? json_loads(sync, 0, NULL) : NULL, *e;
    free(sync);
    rm->proxies = json_array();
    size_t i;
    json_array_foreach(arr, i, e)
    {
        json_t *conn = json_object_get(e, "connected");
        if (conn && !json_is_true(conn))
            continue;
        const char *id = json_string_value(json_object_get(e, "proxy"));
        const char *v = json_string_value(json_object_get(e, "istio_version"));
        json_array_append_new(
            rm->proxies, json_pack("{s:s, s:s}", "ID", id ? id : "", "IstioVersion", v ? v : ""));
    }
    json_decref(arr);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* renderProxyVersions: "<v> (<n> proxies)" per version, sorted, joined by ", ". */
static void print_proxy_versions(const json_t *proxies)
{
    size_t n = json_array_size(proxies), k = 0;
    char **lines = calloc(n ? n : 1, sizeof *lines);
    for (size_t i = 0; lines && i < n; i++) {
        const char *v =
            json_string_value(json_object_get(json_array_get(proxies, i), "IstioVersion"));
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(
                v, json_string_value(json_object_get(json_array_get(proxies, j), "IstioVersion")));
        if (seen)
            continue;
        size_t cnt = 0;
        for (size_t j = 0; j < n; j++)
            cnt += !strcmp(
                v, json_string_value(json_object_get(json_array_get(proxies, j), "IstioVersion")));
        char buf[300];
        snprintf(buf, sizeof buf, "%s (%zu proxies)", v, cnt);
        lines[k] = strdup(buf);
        k += lines[k] != NULL;
    }
    qsort(lines, k, sizeof *lines, cmp_str);
    printf("data plane version: ");
    for (size_t i = 0; i < k; i++) {
        printf("%s%s", i ? ", " : "", lines[i]);
        free(lines[i]);
    }
    printf("\n");
    free(lines);
}

static void long_form(const char *v)
{
    printf("version.BuildInfo{Version:\"%s\", GitRevision:\"\", GolangVersion:\"\", "
           "BuildStatus:\"Clean\", GitTag:\"%s\"}",
           v, v);
}

static json_t *info_json(const char *v)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "version", v, "revision", "", "golang_version",
                     "", "status", "Clean", "tag", v);
}

static int print_structured(const char *out, const remote *rm)
{
    json_t *o = json_pack("{s:o}", "clientVersion", info_json(WEFT_VERSION));
    if (o && rm->reached) {
        const char *cp = rm->cp_version ? rm->cp_version : "unknown";
        json_object_set_new(o, "meshVersion",
                            json_pack("[{s:s, s:o}]", "Component", "pilot", "Info", info_json(cp)));
        json_object_set(o, "dataPlaneVersion", rm->proxies);
    }
    if (!o)
        return WF_EXIT_ERROR;
    if (strcmp(out, "json") == 0) {
        json_dumpf(o, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        const char *cv = WEFT_VERSION;
        printf("clientVersion:\n  golang_version: \"\"\n  revision: \"\"\n  status: Clean\n"
               "  tag: %s\n  version: %s\n",
               cv, cv);
        if (rm->reached) {
            const char *cp = rm->cp_version ? rm->cp_version : "unknown";
            printf("dataPlaneVersion:\n");
            json_t *p;
            size_t i;
            json_array_foreach(rm->proxies, i, p) printf(
                "- ID: %s\n  IstioVersion: %s\n", json_string_value(json_object_get(p, "ID")),
                json_string_value(json_object_get(p, "IstioVersion")));
            printf("meshVersion:\n- Component: pilot\n  Info:\n    golang_version: \"\"\n"
                   "    revision: \"\"\n    status: Clean\n    tag: %s\n    version: %s\n\n",
                   cp, cp);
        } else {
            printf("\n");
        }
    }
    json_decref(o);
    return WF_EXIT_OK;
}

static int run(wf_flag *fl)
{
    const char *out = fl[F_OUT].sval ? fl[F_OUT].sval : "";
    if (*out && strcmp(out, "json") != 0 && strcmp(out, "yaml") != 0) {
        return wf_usage_error("version", "--output must be 'yaml' or 'json'");
    }
    const char *pilot = fl[F_PILOT].sval ? fl[F_PILOT].sval : WF_DEFAULT_PILOT;
    remote rm = {0};
    wf_strbuf err = WF_STRBUF_INIT;
    if (fl[F_REMOTE].bval && fetch_remote(pilot, &rm, &err))
        fprintf(stderr, "weft-pilot is not present: %s\n", wf_strbuf_cstr(&err));
    int rc = WF_EXIT_OK;
    if (*out) {
        rc = print_structured(out, &rm);
    } else if (!rm.reached) {
        if (fl[F_SHORT].bval)
            printf("%s\n", WEFT_VERSION);
        else {
            long_form(WEFT_VERSION);
            printf("\n");
        }
    } else {
        const char *cp = rm.cp_version ? rm.cp_version : "unknown";
        if (!rm.cp_version)
            fprintf(stderr,
                    "weft-pilot at %s does not report its version (no istio_build "
                    "metric)\n",
                    pilot);
        if (fl[F_SHORT].bval) {
            printf("client version: %s\ncontrol plane version: %s\n", WEFT_VERSION, cp);
            if (json_array_size(rm.proxies))
                print_proxy_versions(rm.proxies);
        } else {
            printf("client version: ");
            long_form(WEFT_VERSION);
            printf("\npilot version: ");
            long_form(cp);
            printf("\n");
            json_t *p;
            size_t i;
            json_array_foreach(rm.proxies, i, p)
                printf("data plane version: &version.ProxyInfo{ID:\"%s\", IstioVersion:\"%s\"}\n",
                       json_string_value(json_object_get(p, "ID")),
                       json_string_value(json_object_get(p, "IstioVersion")));
        }
    }
    free(rm.cp_version);
    json_decref(rm.proxies);
    wf_strbuf_free(&err);
    return rc;
}

int wf_cmd_version(int argc, char **argv)
{
    wf_flag fl[F_COUNT];
    init_flags(fl);
    char **pos = NULL;
    size_t npos = 0;
    int rc;
    if (wf_flags_parse_cmd("version", fl, F_COUNT, argc, argv, &pos, &npos)) {
        rc = WF_EXIT_USAGE;
    } else if (fl[F_HELP].bval) {
        printf("Prints out build version information\n\nUsage:\n  weftctl version [flags]\n\n");
        wf_flags_usage(fl, F_COUNT);
        rc = WF_EXIT_OK;
    } else if (npos) {
        rc = wf_usage_error("version", "unknown command \"%s\" for \"weftctl version\"", pos[0]);
    } else {
        if (strcmp(argv[0], "--version") == 0 && !fl[F_REMOTE].set)
            fl[F_REMOTE].bval = false; /* `weftctl --version`: the client alone */
        rc = run(fl);
    }
    free(pos);
    wf_flags_free(fl, F_COUNT);
    return rc;
}
