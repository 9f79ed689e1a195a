/*
 * ui_validations.c - the web view's validations: the answer kept per snapshot, "rejected" and
 * "not_implemented" from the snapshot, the namespace filter. See ui_validations.h; the
 * analysis itself is ui_validations_run.c.
 */
#include "pilot/ui_validations_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

struct wf_ui_validations {
    wf_ui_val_source src; /* dirs and default_ns owned */
    bool cached;
    uint64_t seq;   /* the snapshot cached */
    json_t *answer; /* resources, mesh_messages, truncated, rejected, not_implemented */
    json_t *since;  /* "Kind/ns/name" -> the push version that first served its content */
    uint64_t runs;
};

int wf_ui_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

wf_ui_validations *wf_ui_validations_new(const wf_ui_val_source *src)
{
    wf_ui_validations *v = calloc(1, sizeof *v);
    char **dirs = v && src->n_dirs ? calloc(src->n_dirs, sizeof *dirs) : NULL;
    if (!v || (src->n_dirs && !dirs)) {
        free(v);
        return NULL;
    }
    v->src.dirs = (const char *const *)dirs;
    v->src.n_dirs = src->n_dirs;
    bool ok = (v->since = json_object()) != NULL;
    for (size_t i = 0; ok && i < src->n_dirs; i++)
        ok = (dirs[i] = strdup(src->dirs[i])) != NULL;
    if (ok && src->default_ns)
        ok = (v->src.default_ns = strdup(src->default_ns)) != NULL;
    if (!ok) {
        wf_ui_validations_free(v);
        return NULL;
    }
    return v;
}

void wf_ui_validations_free(wf_ui_validations *v)
{
    if (!v)
        return;
    for (size_t i = 0; v->src.dirs && i < v->src.n_dirs; i++)
        free((char *)v->src.dirs[i]);
    free((void *)v->src.dirs);
    free((char *)v->src.default_ns);
    json_decref(v->answer);
    json_decref(v->since);
    free(v);
}

uint64_t wf_ui_validations_runs(const wf_ui_validations *v)
{
    return v->runs;
}

int wf_ui_validations_note(wf_ui_validations *v, const wf_snapshot *s, const char *version)
{
    if (!s || !s->res)
        return 0;
    for (size_t i = 0; i < s->n_changed; i++) {
        const char *key = s->changed[i];
        void **slot = wf_strmap_slot(s->res, key, false);
        const wf_snap_res *r = slot ? *slot : NULL;
        if (!r)
            json_object_del(v->since, key); /* removed */
        else if (!r->stale && json_object_set_new(v->since, key, json_string(version)) != 0)
            return -1;
    }
    return 0;
}

/* ---- rejected, not_implemented -------------------------------------------------------------- */

/* "Kind ns/name" -> key "Kind/ns/name" and namespace ns (buffers of cap bytes). */
static void split_resource(const char *res, char *key, char *ns, size_t cap)
{
    const char *sp = strchr(res, ' '), *sl = sp ? strchr(sp + 1, '/') : NULL;
    snprintf(key, cap, "%s", res);
    ns[0] = '\0';
    if (!sp)
        return;
    snprintf(key, cap, "%.*s/%s", (int)(sp - res), res, sp + 1);
    if (sl)
        snprintf(ns, cap, "%.*s", (int)(sl - sp - 1), sp + 1);
}

/* What pilot serves instead of a rejected resource or file. */
static void serving(const wf_ui_validations *v, const wf_snapshot *s, const wf_config_error *e,
                    const char *key, char *out, size_t cap)
{
    const char *ver = NULL;
    if (!e->kept_last_good) {
        snprintf(out, cap, "nothing served: no good version yet");
        return;
    }
    if (*e->resource)
        ver = json_string_value(json_object_get(v->since, key));
    for (size_t i = 0; !*e->resource && s->res && i < wf_strmap_count(s->res); i++) {
        const wf_snap_res *r = wf_strmap_value(s->res, i);
        if (r->stale && r->file && strcmp(r->file, e->file) == 0) {
            ver = json_string_value(json_object_get(v->since, wf_strmap_key(s->res, i)));
            break;
        }
    }
    snprintf(out, cap, "last good version kept%s%s", ver ? ": " : "", ver ? ver : "");
}

/* The resources an error is about: its own ("Kind/ns/name"), or every resource of a file
 * rejected as a whole that pilot serves at its last good version. */
static json_t *rejected_resources(const wf_snapshot *s, const wf_config_error *e, const char *key)
{
    json_t *arr = json_array();
    if (arr && *e->resource) {
        if (json_array_append_new(arr, json_string(key)) != 0) {
            json_decref(arr);
            return NULL;
        }
        return arr;
    }
    for (size_t i = 0; arr && s->res && i < wf_strmap_count(s->res); i++) {
        const wf_snap_res *r = wf_strmap_value(s->res, i);
        if (r->stale && r->file && strcmp(r->file, e->file) == 0 &&
            json_array_append_new(arr, json_string(wf_strmap_key(s->res, i))) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *rejected_json(const wf_ui_validations *v, const wf_snapshot *s)
{
    json_t *arr = json_array();
    char key[600], ns[300], srv[400];
    for (size_t i = 0; arr && i < s->n_errors; i++) {
        const wf_config_error *e = &s->errors[i];
        split_resource(e->resource, key, ns, sizeof ns);
        serving(v, s, e, key, srv, sizeof srv);
        wf_strbuf m = WF_STRBUF_INIT;
        if (*e->resource)
            wf_strbuf_printf(&m, "%s: ", e->resource);
        if (*e->field)
            wf_strbuf_printf(&m, "%s: ", e->field);
        wf_strbuf_puts(&m, e->message);
        json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:o}", "origin", e->file, "line",
                              (json_int_t)e->line, "message", wf_strbuf_cstr(&m), "serving", srv,
                              "resource", e->resource, "namespace", ns, "resources",
                              rejected_resources(s, e, key));
        wf_strbuf_free(&m);
        if (json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

static json_t *not_implemented_json(const wf_snapshot *s)
{
    json_t *arr = json_array();
    char key[600], ns[300];
    for (size_t i = 0; arr && i < s->n_warnings; i++) {
        const wf_config_error *w = &s->warnings[i];
        if (!w->code || strncmp(w->code, "WFT", 3) != 0)
            continue;
        split_resource(w->resource, key, ns, sizeof ns);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "code", w->code, "resource",
                              key, "field", w->field, "message", w->message, "namespace", ns,
                              "origin", w->file ? w->file : "", "line", (json_int_t)w->line);
        if (json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

/* ---- the answer ----------------------------------------------------------------------------- */

static json_t *compute(wf_ui_validations *v, const wf_snapshot *s)
{
    json_t *a = json_object();
    if (!a)
        return NULL;
    v->runs++;
    if (wf_ui_val_analyze(&v->src, s, a) != 0 ||
        json_object_set_new(a, "rejected", rejected_json(v, s)) != 0 ||
        json_object_set_new(a, "not_implemented", not_implemented_json(s)) != 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* analysis.h wf_resource_in_namespace on an entry. */
static bool in_ns(const json_t *e, const char *ns)
{
    const char *rns = json_string_value(json_object_get(e, "namespace"));
    const char *kind = json_string_value(json_object_get(e, "kind"));
    if (kind && strcmp(kind, "Namespace") == 0)
        return strcmp(json_string_value(json_object_get(e, "name")), ns) == 0;
    return !rns || !*rns || strcmp(rns, ns) == 0;
}

static json_t *kept(const json_t *arr, const char *ns)
{
    json_t *out = json_array(), *e;
    size_t i;
    json_array_foreach(arr, i, e)
    {
        if ((!ns || in_ns(e, ns)) && out && json_array_append(out, e) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

static json_t *summary(const json_t *resources, const json_t *mesh)
{
    json_int_t n[3] = {0, 0, 0};
    const json_t *r, *m;
    size_t i, j;
    json_array_foreach(resources, i, r) json_array_foreach(json_object_get(r, "messages"), j, m)
    {
        const char *l = json_string_value(json_object_get(m, "level"));
        n[l && !strcmp(l, "Error") ? 0 : l && !strcmp(l, "Warning") ? 1 : 2]++;
    }
    json_array_foreach(mesh, j, m)
    {
        const char *l = json_string_value(json_object_get(m, "level"));
        n[l && !strcmp(l, "Error") ? 0 : l && !strcmp(l, "Warning") ? 1 : 2]++;
    }
    return json_pack("{s:I, s:I, s:I}", "error", n[0], "warning", n[1], "info", n[2]);
}

json_t *wf_ui_validations_json(wf_ui_validations *v, const wf_snapshot *s, const char *version,
                               const char *ns)
{
    if (s && (!v->cached || v->seq != s->seq)) {
        json_t *a = compute(v, s);
        if (!a)
            return NULL; /* tried again at the next request */
        json_decref(v->answer);
        v->answer = a;
        v->seq = s->seq;
        v->cached = true;
    }
    const json_t *a = s ? v->answer : NULL;
    if (ns && !*ns)
        ns = NULL;
    json_t *res = kept(json_object_get(a, "resources"), ns);
    json_t *mesh = kept(json_object_get(a, "mesh_messages"), NULL);
    json_t *sum = summary(res, mesh);
    return json_pack("{s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:b}", "version", version ? version : "",
                     "snapshot", (json_int_t)(s ? s->seq : 0), "summary", sum, "resources", res,
                     "mesh_messages", mesh, "rejected", kept(json_object_get(a, "rejected"), ns),
                     "not_implemented", kept(json_object_get(a, "not_implemented"), ns),
                     "truncated", json_is_true(json_object_get(a, "truncated")));
}
