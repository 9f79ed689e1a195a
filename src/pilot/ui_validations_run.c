/*
 * ui_validations_run.c - one analysis for the web view's validations (ui_validations.h): the
 * store loaded as `weftctl analyze` loads one, the analyzers, the findings grouped per resource
 * with its YAML text and the line at fault. ui_validations.c keeps the answer per snapshot.
 */
#include "pilot/ui_validations_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "model/node_json.h"
#include "pilot/analyze_authn.h"
#include "pilot/ui_yaml.h"

/* One run's state. */
typedef struct run {
    const wf_ui_val_source *src;
    const wf_snapshot *snap;
    wf_store *store;
    json_t *texts;      /* file name -> its text (files read, documents rendered) */
    const char *suffix; /* the served store's domain suffix (for "services") */
    json_t **by_index;  /* resource index -> its entry of "resources" */
    size_t n_index;
} run;

/* ---- the store ------------------------------------------------------------------------------ */

/* The Kubernetes source: every document the snapshot serves, rendered as YAML and loaded in that
 * form (its name, the document's key, stands for its file). */
static int load_documents(run *r)
{
    const wf_strmap *m = r->snap->res;
    for (size_t i = 0; m && i < wf_strmap_count(m); i++) {
        const char *key = wf_strmap_key(m, i);
        const wf_snap_res *d = wf_strmap_value(m, i);
        json_t *j = json_loadb(d->json, d->len, 0, NULL);
        wf_strbuf y = WF_STRBUF_INIT;
        int rc = j ? wf_ui_json_to_yaml(j, &y) : -1;
        json_decref(j);
        if (rc == 0 && (json_object_set_new(r->texts, key, json_stringn(y.data, y.len)) != 0 ||
                        wf_store_load_buffer(r->store, key, y.data, y.len, false) < 0))
            rc = -1;
        wf_strbuf_free(&y);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int build_store(run *r)
{
    r->store = wf_store_new();
    if (!r->store)
        return -1;
    if (r->src->n_dirs == 0) {
        if (load_documents(r) != 0)
            return -1;
    } else {
        if (wf_store_load_buffer(r->store, WF_ANALYSIS_DEFAULTS_NAME, wf_analysis_offline_defaults,
                                 strlen(wf_analysis_offline_defaults), false) < 0)
            return -1;
        for (size_t i = 0; i < r->src->n_dirs; i++)
            if (wf_store_load_path(r->store, r->src->dirs[i], NULL, NULL) < 0)
                return -1;
    }
    const char *ns = r->src->default_ns && *r->src->default_ns ? r->src->default_ns : "default";
    return wf_store_finalize(r->store, ns, true);
}

/* ---- a resource's text ---------------------------------------------------------------------- */

/* The text of file (read once per run; NULL when unreadable). */
static const char *file_text(run *r, const char *file, size_t *len)
{
    const json_t *t = json_object_get(r->texts, file);
    if (!t && strcmp(file, WF_ANALYSIS_DEFAULTS_NAME) == 0) {
        t = json_string(wf_analysis_offline_defaults);
        if (!t || json_object_set_new(r->texts, file, (json_t *)t) != 0)
            return NULL;
    } else if (!t && r->src->n_dirs) {
        FILE *f = fopen(file, "rb");
        struct stat st;
        wf_strbuf b = WF_STRBUF_INIT;
        int rc = f && fstat(fileno(f), &st) == 0 && st.st_size <= WF_LOAD_MAX_FILE_BYTES
                     ? wf_strbuf_read_stream(&b, f)
                     : -1;
        if (f)
            fclose(f);
        t = rc == 0 ? json_stringn(b.data ? b.data : "", b.len)
                    : json_null(); /* null: unreadable */
        wf_strbuf_free(&b);
        if (!t || json_object_set_new(r->texts, file, (json_t *)t) != 0)
            return NULL;
    }
    if (!json_is_string(t))
        return NULL;
    *len = json_string_length(t);
    return json_string_value(t);
}

static bool doc_marker(const char *p, const char *end)
{
    return end - p >= 3 && (memcmp(p, "---", 3) == 0 || memcmp(p, "...", 3) == 0) &&
           (end - p == 3 || p[3] == '\n' || p[3] == '\r' || p[3] == ' ' || p[3] == '\t');
}

/* The document of text that starts on line `start` (1-based; a "---" there is skipped): up to
 * the next "---" (or "...") line or the end. Sets *first to its first line. */
static json_t *doc_slice(const char *text, size_t len, uint32_t start, uint32_t *first)
{
    const char *p = text, *end = text + len;
    for (uint32_t l = 1; l < start && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    *first = start;
    if (doc_marker(p, end)) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        (*first)++;
    }
    const char *q = p;
    while (q < end && !doc_marker(q, end)) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        q = nl ? nl + 1 : end;
    }
    return json_stringn(p, (size_t)(q - p));
}

/* A Secret's values are never shown: each of data and stringData becomes "<redacted>". */
static void redact(json_t *j)
{
    static const char *const keys[] = {"data", "stringData"};
    for (size_t i = 0; i < 2; i++) {
        const char *k;
        json_t *v, *m = json_object_get(j, keys[i]);
        json_object_foreach(m, k, v) json_object_set_new(m, k, json_string("<redacted>"));
    }
}

/* The resource's YAML text into e ("yaml") and the first line of it in its file (*first; 0 when
 * the text is rendered from JSON, whose findings carry no line, and for a Secret, shown
 * rendered with its values redacted). */
static int set_yaml(run *r, const wf_resource *res, json_t *e, uint32_t *first)
{
    const wf_resource *doc = res->synthetic && res->owner ? res->owner : res;
    bool secret = doc->kind == WF_KIND_SECRET;
    size_t len = 0;
    const char *text = doc->json || !doc->file || secret ? NULL : file_text(r, doc->file, &len);
    *first = 0;
    if (text && doc->line > 0)
        return json_object_set_new(e, "yaml", doc_slice(text, len, doc->line, first));
    json_t *j = wf_node_to_json(doc->root); /* a JSON file, a Secret: the document as YAML */
    if (j && secret)
        redact(j);
    wf_strbuf y = WF_STRBUF_INIT;
    int rc = j ? wf_ui_json_to_yaml(j, &y) : -1;
    json_decref(j);
    if (rc == 0)
        rc = json_object_set_new(e, "yaml", json_stringn(y.data ? y.data : "", y.len));
    wf_strbuf_free(&y);
    return rc;
}

/* ---- services ------------------------------------------------------------------------------- */

/* Istio's ConvertHostToFQDN. */
static int add_host(run *r, json_t *set, const char *ns, const char *host)
{
    if (!host || !*host)
        return 0;
    if (strchr(host, '.') || host[0] == '*')
        return json_object_set_new(set, host, json_true());
    char buf[768];
    snprintf(buf, sizeof buf, "%s.%s.svc.%s", host, ns, r->suffix);
    return json_object_set_new(set, buf, json_true());
}

static int add_routes(run *r, json_t *set, const char *ns, const wf_route *rt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < rt[i].ndest; d++)
            if (add_host(r, set, ns, rt[i].dests[d].dest.host))
                return -1;
        if (add_host(r, set, ns, rt[i].mirror.host))
            return -1;
        for (size_t m = 0; m < rt[i].nmirrors; m++)
            if (add_host(r, set, ns, rt[i].mirrors[m].host))
                return -1;
    }
    return 0;
}

static int collect_services(run *r, const wf_resource *res, json_t *set)
{
    const char *ns = res->ns;
    if (res->kind == WF_KIND_VIRTUALSERVICE && res->t.vs) {
        const wf_virtualservice *vs = res->t.vs;
        for (size_t i = 0; i < vs->hosts.n; i++)
            if (add_host(r, set, ns, vs->hosts.v[i]))
                return -1;
        return add_routes(r, set, ns, vs->http, vs->nhttp) ||
                       add_routes(r, set, ns, vs->tcp, vs->ntcp) ||
                       add_routes(r, set, ns, vs->tls, vs->ntls)
                   ? -1
                   : 0;
    }
    if (res->kind == WF_KIND_DESTINATIONRULE && res->t.dr)
        return add_host(r, set, ns, res->t.dr->host);
    if (res->kind == WF_KIND_SERVICEENTRY && res->t.se) {
        for (size_t i = 0; i < res->t.se->hosts.n; i++)
            if (add_host(r, set, ns, res->t.se->hosts.v[i]))
                return -1;
        return 0;
    }
    if (res->kind == WF_KIND_SERVICE)
        return add_host(r, set, ns, res->name);
    return 0;
}

static json_t *services_json(run *r, const wf_resource *res)
{
    json_t *set = json_object(), *out = json_array();
    if (!set || !out || collect_services(r, res, set) != 0) {
        json_decref(set);
        json_decref(out);
        return NULL;
    }
    const char **keys = calloc(json_object_size(set) + 1, sizeof *keys);
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(set, k, v) if (keys) keys[n++] = k;
    qsort(keys, n, sizeof *keys, wf_ui_cmp_str);
    for (size_t i = 0; keys && i < n; i++)
        json_array_append_new(out, json_string(keys[i]));
    if (!keys) {
        json_decref(out);
        out = NULL;
    }
    free(keys);
    json_decref(set);
    return out;
}

/* ---- findings per resource ------------------------------------------------------------------ */

static json_t *resource_entry(run *r, const wf_resource *res, uint32_t *first)
{
    json_t *e = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:o?, s:[]}", "kind", res->kind_name, "api_version",
        res->api_version ? res->api_version : "", "namespace", res->ns, "name", res->name, "origin",
        r->src->n_dirs ? (res->synthetic && res->owner ? res->owner->file : res->file)
                       : "kubernetes",
        "services", services_json(r, res), "messages");
    if (e && set_yaml(r, res, e, first) != 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static json_t *message_json(const wf_finding *f, bool with_line, uint32_t first, uint32_t nlines)
{
    const wf_msg_type *t = wf_msg_type_get(f->id);
    char url[200];
    json_t *m = json_pack("{s:s, s:s, s:s, s:s}", "code", t->code, "level", wf_level_name(t->level),
                          "message", f->text, "documentation_url",
                          wf_analysis_doc_url(t->code, url, sizeof url));
    if (m && with_line) {
        uint32_t line = 0;
        if (first && f->line >= first && f->line - first < nlines)
            line = f->line - first + 1;
        json_object_set_new(m, "line", json_integer(line));
    }
    return m;
}

static uint32_t count_lines(const char *s)
{
    uint32_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n + 1;
}

/* The entry of res (made at its first finding). */
static json_t *entry_of(run *r, json_t *resources, const wf_resource *res)
{
    if (res->index < r->n_index && r->by_index[res->index])
        return r->by_index[res->index];
    uint32_t first = 0;
    json_t *e = resource_entry(r, res, &first);
    if (!e || json_array_append_new(resources, e) != 0)
        return NULL;
    json_object_set_new(e, "_first", json_integer(first)); /* removed once grouped */
    json_object_set_new(e, "_lines",
                        json_integer(count_lines(json_string_value(json_object_get(e, "yaml")))));
    if (res->index < r->n_index)
        r->by_index[res->index] = e;
    return e;
}

static int group(run *r, const wf_analysis_result *res, json_t *out)
{
    json_t *resources = json_array(), *mesh = json_array();
    if (!resources || !mesh || json_object_set_new(out, "resources", resources) ||
        json_object_set_new(out, "mesh_messages", mesh))
        return -1;
    for (size_t i = 0; i < res->n; i++) {
        const wf_finding *f = &res->findings[i];
        if (!f->res) {
            if (json_array_append_new(mesh, message_json(f, false, 0, 0)) != 0)
                return -1;
            continue;
        }
        json_t *e = entry_of(r, resources, f->res);
        if (!e)
            return -1;
        uint32_t first = (uint32_t)json_integer_value(json_object_get(e, "_first"));
        uint32_t nl = (uint32_t)json_integer_value(json_object_get(e, "_lines"));
        if (json_array_append_new(json_object_get(e, "messages"), message_json(f, true, first, nl)))
            return -1;
    }
    size_t i;
    json_t *e;
    json_array_foreach(resources, i, e)
    {
        json_object_del(e, "_first");
        json_object_del(e, "_lines");
    }
    return json_object_set_new(out, "truncated", json_boolean(res->truncated));
}

int wf_ui_val_analyze(const wf_ui_val_source *src, const wf_snapshot *s, json_t *out)
{
    run r = {.src = src, .snap = s, .texts = json_object(), .suffix = "cluster.local"};
    wf_analysis_result *res = NULL;
    int rc = -1;
    if (s && s->store)
        r.suffix = wf_store_domain_suffix(s->store);
    if (!r.texts || build_store(&r) != 0)
        goto out;
    static const wf_analyzer *const extra[] = {&wf_pilot_authn_port_analyzer};
    wf_analysis_opts o = {.extra = extra, .nextra = 1, .kubernetes = src->n_dirs == 0};
    res = wf_analyze(r.store, s ? s->mesh : NULL, &o);
    r.n_index = wf_store_count(r.store);
    r.by_index = calloc(r.n_index + 1, sizeof *r.by_index);
    if (res && r.by_index)
        rc = group(&r, res, out);
out:
    wf_analysis_result_free(res);
    free(r.by_index);
    wf_store_free(r.store);
    json_decref(r.texts);
    return rc;
}
