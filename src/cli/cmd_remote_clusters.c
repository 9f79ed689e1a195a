/*
 * cmd_remote_clusters.c - `weftctl remote-clusters`: the remote clusters each control plane is
 * connected to, istioctl remote-clusters' table (NAME SECRET STATUS ISTIOD REVISION, Go
 * tabwriter padding 5; rows grouped by control-plane name sorted, clusters in answer order;
 * REVISION from the control plane's istio.io/rev label, empty when absent).
 *
 * Source: GET <pilot>/debug/clusterz ([{"id","secretName","syncStatus"}]). weft-pilot runs a
 * single cluster and does not serve /debug/clusterz: a 404 means no remote clusters (header
 * only). Offline/testing: --from-file FILE reads either one /debug/clusterz answer (array) or
 * {"clusterz_by_istiod": {"<istiod>": [...]}, "clusterz_by_istiod_raw": {"<istiod>": "<body>"},
 * "istiod_revision_label": {"<istiod>": "<rev>"}}. A body that is not JSON is an error and
 * nothing is printed (istioctl). Exit: 0, 1 errors, 64 bad flags.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/http_client.h"
#include "cli/proxy_find.h"
#include "cli/tabwriter.h"

#define PILOT_NAME "weft-pilot"

enum { F_PILOT, F_FROM, F_REV, F_HELP, F_COUNT };

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING,
                     "weft-pilot monitoring address (default " WF_DEFAULT_PILOT ")", "addr"},
        [F_FROM] = {"from-file", 0, WF_FLAG_STRING,
                    "Testing/offline: read /debug/clusterz answers from this file instead of "
                    "asking weft-pilot",
                    "file"},
        [F_REV] = {"revision", 'r', WF_FLAG_STRING, "Accepted for compatibility (unused)",
                   "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for remote-clusters", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(const wf_flag *flags)
{
    printf("Lists the remote clusters each control plane is connected to.\n\n"
           "Usage:\n  weftctl remote-clusters [flags]\n\n");
    wf_flags_usage(flags, F_COUNT);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int add_rows(wf_tw *tw, const char *istiod, const json_t *clusters, const char *rev,
                    wf_strbuf *err)
{
    if (!json_is_array(clusters)) {
        wf_strbuf_printf(err, "the /debug/clusterz answer of %s is not a JSON array", istiod);
        return -1;
    }
    size_t i;
    json_t *c;
    json_array_foreach(clusters, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *sec = json_string_value(json_object_get(c, "secretName"));
        const char *st = json_string_value(json_object_get(c, "syncStatus"));
        wf_tw_printf(tw, "%s\t%s\t%s\t%s\t%s\n", id ? id : "", sec ? sec : "", st ? st : "", istiod,
                     rev ? rev : "");
    }
    return 0;
}

/* {"<istiod>": clusters} (raw: string bodies parsed here) into the table, by sorted name. */
static int add_map(wf_tw *tw, const json_t *map, bool raw, const json_t *revs, wf_strbuf *err)
{
    size_t n = json_object_size(map), k = 0;
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names)
        return wf_strbuf_puts(err, "out of memory"), -1;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)map, name, v)
    {
        names[k++] = name;
    }
    qsort(names, n, sizeof *names, cmp_str);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const json_t *body = json_object_get(map, names[i]);
        json_t *parsed = NULL;
        if (raw) {
            json_error_t je;
            const char *s = json_string_value(body);
            parsed = s ? json_loads(s, JSON_DECODE_ANY, &je) : NULL;
            if (!parsed) {
                wf_strbuf_printf(err, "cannot parse the /debug/clusterz answer of %s: %s", names[i],
                                 s ? je.text : "not a string");
                rc = -1;
                break;
            }
            body = parsed;
        }
        rc = add_rows(tw, names[i], body, json_string_value(json_object_get(revs, names[i])), err);
        json_decref(parsed);
    }
    free(names);
    return rc;
}

static int from_file(wf_tw *tw, const char *path, wf_strbuf *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!doc) {
        wf_strbuf_printf(err, "cannot read %s: %s (line %d)", path, je.text, je.line);
        return -1;
    }
    int rc;
    if (json_is_array(doc)) {
        rc = add_rows(tw, PILOT_NAME, doc, NULL, err);
    } else {
        const json_t *revs = json_object_get(doc, "istiod_revision_label");
        rc = add_map(tw, json_object_get(doc, "clusterz_by_istiod"), false, revs, err);
        if (rc == 0)
            rc = add_map(tw, json_object_get(doc, "clusterz_by_istiod_raw"), true, revs, err);
    }
    json_decref(doc);
    return rc;
}

static int from_pilot(wf_tw *tw, const char *pilot, wf_strbuf *err)
{
    wf_http_resp r;
    wf_strbuf e = WF_STRBUF_INIT;
    if (wf_http_request("GET", pilot, "/debug/clusterz", 5000, &r, &e) != 0) {
        wf_strbuf_printf(err, "cannot reach weft-pilot at %s: %s", pilot, wf_strbuf_cstr(&e));
        wf_strbuf_free(&e);
        return -1;
    }
    wf_strbuf_free(&e);
    int rc = 0;
    if (r.status == 404) {
        rc = 0; /* a single-cluster weft-pilot: no remote clusters */
    } else if (r.status != 200) {
        wf_strbuf_printf(err, "weft-pilot at %s answered GET /debug/clusterz with status %d", pilot,
                         r.status);
        rc = -1;
    } else {
        json_error_t je;
        json_t *v = json_loadb(r.body, r.len, JSON_DECODE_ANY, &je);
        if (!v) {
            wf_strbuf_printf(err, "weft-pilot at %s: /debug/clusterz is not JSON: %s", pilot,
                             je.text);
            rc = -1;
        } else {
            rc = add_rows(tw, PILOT_NAME, v, NULL, err);
            json_decref(v);
        }
    }
    wf_http_resp_free(&r);
    return rc;
}

int wf_cmd_remote_clusters(int argc, char **argv)
{
    wf_flag flags[F_COUNT];
    init_flags(flags);
    char **pos = NULL;
    size_t npos = 0;
    int rc = WF_EXIT_OK;
    if (wf_flags_parse_cmd("remote-clusters", flags, F_COUNT, argc, argv, &pos, &npos) != 0) {
        rc = WF_EXIT_USAGE;
    } else if (flags[F_HELP].bval) {
        usage(flags);
    } else if (npos > 0) {
        fprintf(stderr, "Error: remote-clusters takes no arguments\n");
        rc = WF_EXIT_USAGE;
    } else {
        wf_tw tw;
        wf_tw_init(&tw, 5);
        wf_tw_puts(&tw, "NAME\tSECRET\tSTATUS\tISTIOD\tREVISION\n");
        wf_strbuf err = WF_STRBUF_INIT;
        const char *pilot = flags[F_PILOT].sval ? flags[F_PILOT].sval : WF_DEFAULT_PILOT;
        int r = flags[F_FROM].sval ? from_file(&tw, flags[F_FROM].sval, &err)
                                   : from_pilot(&tw, pilot, &err);
        if (r == 0 && wf_tw_flush(&tw, stdout, NULL) != 0) {
            wf_strbuf_puts(&err, "cannot write the output");
            r = -1;
        }
        if (r != 0) {
            fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
            rc = WF_EXIT_ERROR;
        }
        wf_strbuf_free(&err);
        wf_tw_free(&tw);
    }
    free(pos);
    wf_flags_free(flags, F_COUNT);
    return rc;
}
