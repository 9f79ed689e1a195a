/*
 * source_build.c - one config snapshot from the directories: load, validate, keep the last
 * good version of what is broken, classify the change. See source.h.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <jansson.h>

#include "core/log.h"
#include "model/node_json.h"
#include "model/store_internal.h"
#include "model/unimplemented.h"
#include "model/validate.h"
#include "pilot/authz.h"
#include "pilot/eds_update.h"
#include "pilot/gateway_secrets.h"
#include "pilot/generate.h"
#include "pilot/inbound.h"
#include "pilot/serviceentry.h"
#include "pilot/source.h"
#include "pilot/tcp.h"

/* The MeshConfig of a snapshot: shared by snapshots while its file does not change. */
typedef struct mesh_box {
    int refs;
    wf_meshcfg *mesh;
    uint64_t hash; /* FNV-1a of the file text; 0 for defaults */
} mesh_box;

/* Build context. */
typedef struct build {
    const wf_dir_source_opts *opts;
    const wf_snapshot *prev;
    wf_snapshot *snap;
    size_t cap_errors, cap_warnings;
    bool need_rebuild;   /* a bad resource was dropped or an old version is served */
    const char **failed; /* files with load errors (arena strings) */
    size_t n_failed;
    const wf_resource *cur; /* resource being validated */
    size_t cur_errors;
    const wf_snap_res *cur_prev; /* last good version of cur, or NULL */
    const wf_resource **dropped; /* rejected resources with no last good version (malloc) */
    size_t n_dropped;
} build;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ---- snapshots ------------------------------------------------------------------------------ */

static void mesh_box_unref(mesh_box *b)
{
    if (b && --b->refs == 0) {
        wf_meshcfg_free(b->mesh);
        free(b);
    }
}

wf_snapshot *wf_snapshot_ref(wf_snapshot *s)
{
    if (s) {
        s->refs++;
    }
    return s;
}

void wf_snapshot_unref(wf_snapshot *s)
{
    if (!s || --s->refs > 0) {
        return;
    }
    wf_store_free(s->store);
    json_decref(s->eds_services);
    mesh_box_unref(s->mesh_box);
    free(s->errors);
    free(s->warnings);
    wf_arena_destroy(&s->arena);
    free(s);
}

bool wf_snapshot_changed(const wf_snapshot *s, const char *key)
{
    for (size_t i = 0; s && i < s->n_changed; i++) {
        if (strcmp(s->changed[i], key) == 0) {
            return true;
        }
    }
    return false;
}

const char *wf_change_kind_name(wf_change_kind k)
{
    static const char *const n[] = {"NONE", "ENDPOINTS", "FULL"};
    return (unsigned)k < 3 ? n[k] : "UNKNOWN";
}

/* ---- resources as canonical JSON --------------------------------------------------------- */

/* Canonical JSON text of r's document in the snapshot arena, or NULL on OOM. */
static char *resource_json(wf_snapshot *s, const wf_resource *r, size_t *len)
{
    json_t *j = wf_node_to_json(r->root);
    char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(j);
    if (!txt) {
        return NULL;
    }
    *len = strlen(txt);
    char *a = wf_arena_strndup(&s->arena, txt, *len);
    free(txt);
    return a;
}

static const char *resource_key(wf_snapshot *s, const wf_resource *r)
{
    return wf_arena_printf(&s->arena, "%s/%s/%s", r->kind_name, r->ns, r->name);
}

/* ---- errors ------------------------------------------------------------------------------- */

/* Appends a copy of e to *v (n used, *cap allocated); strings go to the snapshot's arena. */
static int push_error(wf_snapshot *s, wf_config_error **v, size_t *n, size_t *cap,
                      const wf_config_error *e)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 8;
        wf_config_error *nv = realloc(*v, ncap * sizeof *nv);
        if (!nv) {
            return -1;
        }
        *v = nv;
        *cap = ncap;
    }
    wf_config_error *d = &(*v)[*n];
    d->file = wf_arena_strdup(&s->arena, e->file ? e->file : "");
    d->resource = wf_arena_strdup(&s->arena, e->resource ? e->resource : "");
    d->field = wf_arena_strdup(&s->arena, e->field ? e->field : "");
    d->message = wf_arena_strdup(&s->arena, e->message ? e->message : "");
    d->code = e->code;
    d->line = e->line;
    d->col = e->col;
    d->kept_last_good = e->kept_last_good;
    if (!d->file || !d->resource || !d->field || !d->message) {
        return -1;
    }
    (*n)++;
    return 0;
}

static int add_error(build *b, const wf_config_error *e)
{
    wf_snapshot *s = b->snap;
    return push_error(s, &s->errors, &s->n_errors, &b->cap_errors, e);
}

/* "FILE:LINE:COL", or "FILE" alone when the line is unknown (a Kubernetes object, JSON). */
static const char *where(const wf_config_error *e, char *buf, size_t cap)
{
    if (e->line)
        snprintf(buf, cap, "%s:%u:%u", e->file, e->line, e->col);
    else
        snprintf(buf, cap, "%s", e->file);
    return buf;
}

static void log_error(const wf_config_error *e)
{
    char at[1024];
    WF_LOG(WF_LC_config, WF_LOG_WARN, "config error: %s: %s%s%s%s%s (%s)", where(e, at, sizeof at),
           e->resource, *e->resource ? ": " : "", e->field, *e->field ? ": " : "", e->message,
           e->kept_last_good ? "keeping the last good version" : "no good version to keep");
}

static bool warned_before(const build *b, const wf_config_error *w);
static const char *where(const wf_config_error *e, char *buf, size_t cap);

/* "Kind ns/name", or the kind alone for MeshConfig (not a resource of the store). */
static const char *res_label(const wf_resource *r, char *buf, size_t cap)
{
    if (r->kind == WF_UNIMPL_MESHCONFIG)
        snprintf(buf, cap, "%s", r->kind_name);
    else
        snprintf(buf, cap, "%s %s/%s", r->kind_name, r->ns, r->name);
    return buf;
}

/* Adds a warning to the snapshot and logs it the first time it appears ("not implemented:"
 * or "config warning:" FILE:LINE:COL: Kind ns/name: [FIELD: ]MESSAGE [CODE]; the field is
 * left out when the message starts with it). Returns 0, or -1 when out of memory. */
static int add_warning(build *b, const wf_config_error *w, const char *what)
{
    wf_snapshot *s = b->snap;
    if (push_error(s, &s->warnings, &s->n_warnings, &b->cap_warnings, w) != 0)
        return -1;
    if (warned_before(b, w))
        return 0;
    size_t fl = strlen(w->field);
    bool say_field = fl && strncmp(w->message, w->field, fl) != 0;
    char at[1024];
    WF_LOG(WF_LC_config, WF_LOG_WARN, "%s: %s: %s: %s%s%s [%s]", what, where(w, at, sizeof at),
           w->resource, say_field ? w->field : "", say_field ? ": " : "", w->message, w->code);
    return 0;
}

/* A schema warning (IST0133: an unknown field, a deprecated one, ...), as the validation
 * webhook returns it and kubectl apply prints it: served, reported as a warning. */
static void on_schema_warning(build *b, const wf_resource *r, const wf_validation_issue *issue)
{
    char res[512];
    wf_config_error w = {.file = r->file,
                         .line = issue->node ? wf_node_report_line(issue->node) : r->line,
                         .col = issue->node ? issue->node->col : r->col,
                         .resource = res_label(r, res, sizeof res),
                         .field = issue->path ? issue->path : "",
                         .message = issue->message ? issue->message : "",
                         .code = "IST0133"};
    add_warning(b, &w, "config warning"); /* out of memory: the warning is lost, as errors */
}

static void on_issue(const wf_resource *r, const wf_validation_issue *issue, void *arg)
{
    build *b = arg;
    if (issue->warning) {
        on_schema_warning(b, r, issue);
        return;
    }
    char res[512];
    res_label(r, res, sizeof res);
    /* some validation messages start with their field ("spec.x: bad Duration ..."): the
     * field is a column of its own here (FILE:LINE:COL: Kind ns/name: FIELD: MESSAGE) */
    const char *msg = issue->message ? issue->message : "";
    size_t plen = issue->path ? strlen(issue->path) : 0;
    if (plen && strncmp(msg, issue->path, plen) == 0 && strncmp(msg + plen, ": ", 2) == 0)
        msg += plen + 2;
    wf_config_error e = {
        .file = r->file,
        .line = issue->node ? wf_node_report_line(issue->node) : r->line,
        .col = issue->node ? issue->node->col : r->col,
        .resource = res,
        .field = issue->path,
        .message = msg,
        .kept_last_good = b->cur_prev != NULL,
    };
    b->cur_errors++;
    if (add_error(b, &e) == 0) {
        log_error(&e);
    }
}

/* ---- not implemented: warnings ---------------------------------------------------------- */

/* Was the same warning (resource, field, message) in the previous snapshot? */
static bool warned_before(const build *b, const wf_config_error *w)
{
    for (size_t i = 0; b->prev && i < b->prev->n_warnings; i++) {
        const wf_config_error *o = &b->prev->warnings[i];
        if (!strcmp(o->resource, w->resource) && !strcmp(o->field, w->field) &&
            !strcmp(o->message, w->message))
            return true;
    }
    return false;
}

typedef struct unimpl_arg {
    build *b;
    int rc;
} unimpl_arg;

static bool on_unimpl(const wf_unimpl_hit *h, void *arg)
{
    unimpl_arg *u = arg;
    if (u->b->opts->discovery_selectors && h->res->kind == WF_UNIMPL_MESHCONFIG &&
        strcmp(h->field, "discoverySelectors") == 0)
        return true; /* applied by the source */
    char res[512];
    wf_strbuf msg = WF_STRBUF_INIT;
    wf_unimpl_message(h, &msg);
    wf_config_error w = {.file = h->res->file,
                         .line = h->line,
                         .col = h->col,
                         .resource = res_label(h->res, res, sizeof res),
                         .field = h->field,
                         .message = wf_strbuf_cstr(&msg),
                         .code = wf_unimpl_code(h->entry)};
    if (wf_strbuf_failed(&msg) || add_warning(u->b, &w, "not implemented") != 0)
        u->rc = -1;
    wf_strbuf_free(&msg);
    return u->rc == 0;
}

static wf_unimpl_target unimpl_target(const build *b)
{
    return b->opts->kubernetes ? WF_UNIMPL_KUBERNETES : WF_UNIMPL_LOCAL_MESH;
}

/* Warnings for the Istio fields of r that weft does not implement. */
static int scan_unimplemented(build *b, const wf_resource *r)
{
    unimpl_arg u = {b, 0};
    if (wf_unimpl_scan(r, unimpl_target(b), on_unimpl, &u) < 0)
        return -1;
    return u.rc;
}

/* ---- the steps ---------------------------------------------------------------------------- */

static const wf_snap_res *prev_res(const build *b, const char *key)
{
    if (!b->prev || !b->prev->res) {
        return NULL;
    }
    void **slot = wf_strmap_slot(b->prev->res, key, false);
    return slot ? *slot : NULL;
}

static int put_res(build *b, const char *key, const wf_snap_res *r)
{
    wf_snapshot *s = b->snap;
    void **slot = wf_strmap_slot(s->res, key, true);
    wf_snap_res *d = wf_arena_alloc(&s->arena, sizeof *d);
    if (!slot || !d) {
        return -1;
    }
    *d = *r;
    /* strings of an older snapshot die with it: copy them */
    d->kind = wf_arena_strdup(&s->arena, r->kind);
    d->file = wf_arena_strdup(&s->arena, r->file);
    d->json = wf_arena_strndup(&s->arena, r->json, r->len);
    if (!d->kind || !d->file || !d->json) {
        return -1;
    }
    *slot = d;
    return 0;
}

static bool file_failed(const build *b, const char *file)
{
    for (size_t i = 0; i < b->n_failed; i++) {
        if (strcmp(b->failed[i], file) == 0) {
            return true;
        }
    }
    return false;
}

/* Load errors of the candidate store become file-level errors. */
static int collect_load_errors(build *b, const wf_store *c)
{
    size_t n = wf_store_error_count(c);
    b->failed = n ? wf_arena_alloc(&b->snap->arena, n * sizeof *b->failed) : NULL;
    if (n && !b->failed) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const wf_load_error *le = wf_store_error(c, i);
        if (!file_failed(b, le->file)) {
            b->failed[b->n_failed] = wf_arena_strdup(&b->snap->arena, le->file);
            if (!b->failed[b->n_failed++]) {
                return -1;
            }
        }
        wf_config_error e = {
            .file = le->file, .line = le->line, .col = le->col, .message = le->message};
        if (add_error(b, &e)) {
            return -1;
        }
    }
    return 0;
}

/* Validates one resource and records its current (or last good) version. */
/* Kubernetes' lowercase RFC 1123 subdomain: [a-z0-9]([-a-z0-9]*[a-z0-9])? labels joined by
 * '.', at most 253 characters (the API server's rule for object names). */
static bool is_dns1123_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        bool edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';
        if (!alnum && !((c == '-' && !edge) || (c == '.' && i > 0 && i < n - 1 && s[i - 1] != '.')))
            return false;
    }
    return true;
}

/* Did the validator already report the current resource's metadata.name (Istio's own
 * checks do for a Gateway)? */
static bool name_reported(const build *b)
{
    for (size_t i = 0; i < b->cur_errors && i < b->snap->n_errors; i++)
        if (strcmp(b->snap->errors[b->snap->n_errors - 1 - i].field, "metadata.name") == 0)
            return true;
    return false;
}

/* A Service's name: a DNS-1035 label, [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters. */
static bool is_dns1035_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* The API server refuses an object without a valid metadata.name (kubectl apply says so):
 * so does pilot, as a config error of the resource. */
static void check_name(build *b, const wf_resource *r)
{
    const wf_node *name = wf_node_path(r->root, "metadata.name");
    char msg[512];
    if (r->kind == WF_KIND_OTHER) /* other kinds have rules of their own (RBAC's "a:b") */
        return;
    if (!r->name[0])
        snprintf(msg, sizeof msg, "Required value: name or generateName is required");
    else if (r->kind == WF_KIND_SERVICE && !is_dns1035_label(r->name))
        snprintf(msg, sizeof msg,
                 "Invalid value: \"%.200s\": a DNS-1035 label must consist of lower case "
                 "alphanumeric characters or '-', start with an alphabetic character, and end "
                 "with an alphanumeric character",
                 r->name);
    else if (!is_dns1123_subdomain(r->name) || (name && name->len != strlen(r->name)))
        snprintf(msg, sizeof msg,
                 "Invalid value: \"%.200s\": a lowercase RFC 1123 subdomain must consist of "
                 "lower case alphanumeric characters, '-' or '.', and must start and end with an "
                 "alphanumeric character",
                 r->name);
    else
        return;
    const wf_node *at = name ? name : r->metadata;
    wf_validation_issue issue = {.path = "metadata.name", .node = at, .message = msg};
    on_issue(r, &issue, b);
}

static int take_resource(build *b, const wf_resource *r)
{
    const char *key = resource_key(b->snap, r);
    if (!key) {
        return -1;
    }
    b->cur = r;
    b->cur_errors = 0;
    b->cur_prev = prev_res(b, key);
    if (wf_kind_is_istio(r->kind)) {
        wf_validate_resource(r, on_issue, b);
    } else if (r->kind == WF_KIND_SECRET) { /* as the API server would refuse it */
        wf_validate_secret(r, on_issue, b);
    }
    if (!name_reported(b))
        check_name(b, r);
    if (b->cur_errors) {
        b->need_rebuild = true;
        if (!b->cur_prev) {
            const wf_resource **v = realloc(b->dropped, (b->n_dropped + 1) * sizeof(*v));
            if (!v)
                return -1;
            b->dropped = v;
            b->dropped[b->n_dropped++] = r;
            return 0;
        }
        wf_snap_res keep = *b->cur_prev;
        keep.stale = true;
        return put_res(b, key, &keep);
    }
    wf_snap_res now = {.kind = r->kind_name, .file = r->file};
    now.json = resource_json(b->snap, r, &now.len);
    if (!now.json || scan_unimplemented(b, r) != 0) {
        return -1;
    }
    now.hash = fnv1a(now.json, now.len);
    return put_res(b, key, &now);
}

/* Resources of files that failed to parse keep their last good versions. */
static int keep_failed_files(build *b)
{
    const wf_snapshot *p = b->prev;
    size_t n = p && p->res ? wf_strmap_count(p->res) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = wf_strmap_key(p->res, i);
        const wf_snap_res *r = wf_strmap_value(p->res, i);
        if (!file_failed(b, r->file) || wf_strmap_slot(b->snap->res, key, false)) {
            continue;
        }
        wf_snap_res keep = *r;
        keep.stale = true;
        if (put_res(b, key, &keep)) {
            return -1;
        }
        b->need_rebuild = true;
        for (size_t e = 0; e < b->snap->n_errors; e++) {
            if (!*b->snap->errors[e].resource && strcmp(b->snap->errors[e].file, r->file) == 0) {
                b->snap->errors[e].kept_last_good = true;
            }
        }
    }
    for (size_t e = 0; e < b->snap->n_errors; e++) {
        if (!*b->snap->errors[e].resource) {
            log_error(&b->snap->errors[e]);
        }
    }
    return 0;
}

static wf_store *new_store(const wf_dir_source_opts *o)
{
    wf_store *s = wf_store_new();
    if (s && o->domain_suffix && *o->domain_suffix) {
        s->domain_suffix = wf_arena_strdup(wf_store_arena(s), o->domain_suffix);
        if (!s->domain_suffix) {
            wf_store_free(s);
            return NULL;
        }
    }
    return s;
}

static const char *default_ns(const build *b)
{
    return b->opts->default_ns && *b->opts->default_ns ? b->opts->default_ns : "default";
}

/* Loads the folders and documents of the source into s. 0, or -1 when out of memory. */
static int load_sources(build *b, wf_store *s)
{
    for (size_t i = 0; i < b->opts->n_dirs; i++)
        if (wf_store_load_path(s, b->opts->dirs[i], NULL, NULL) < 0)
            return -1;
    for (size_t i = 0; i < b->opts->n_docs; i++) {
        const wf_source_doc *d = &b->opts->docs[i];
        if (wf_store_load_buffer(s, d->name, d->json, d->len, true) < 0)
            return -1;
    }
    return 0;
}

/* The store served when a resource was rejected: the sources read again, so the resources
 * served as read keep their files, lines and columns (every warning about them names its
 * line); then each resource served at its last good version from that version's JSON (it
 * replaces the rejected one read, the last one read winning) and each rejected resource
 * without one excluded. Before, the whole store came from JSON text and every warning lost
 * its line once any resource was rejected. */
static wf_store *rebuild_store(build *b)
{
    wf_store *f = new_store(b->opts);
    if (!f || load_sources(b, f) != 0) {
        wf_store_free(f);
        return NULL;
    }
    size_t n = wf_strmap_count(b->snap->res);
    for (size_t i = 0; i < n; i++) {
        const wf_snap_res *r = wf_strmap_value(b->snap->res, i);
        if (r->stale && wf_store_load_buffer(f, r->file, r->json, r->len, true) < 0) {
            wf_store_free(f);
            return NULL;
        }
    }
    for (size_t i = 0; i < b->n_dropped; i++) {
        const wf_resource *d = b->dropped[i];
        if (wf_store_exclude(f, d->kind, d->ns, d->name) != 0) {
            wf_store_free(f);
            return NULL;
        }
    }
    if (wf_store_finalize(f, default_ns(b), false) < 0 ||
        wf_store_allocate_cluster_ips(f, &b->opts->service_ips) < 0) {
        wf_store_free(f);
        return NULL;
    }
    return f;
}

/* A resource defined again in a later file replaces the earlier one (the store keeps the last
 * one read, as `kubectl apply -f DIR` would leave it); the conflict is reported, never silent. */
static int report_shadowed(build *b, const wf_store *c)
{
    for (size_t i = 0; i < wf_store_shadowed_count(c); i++) {
        const wf_resource *old = wf_store_shadowed(c, i);
        const wf_resource *r = wf_store_find(c, old->kind, old->ns, old->name);
        if (!r)
            continue;
        char res[512], msg[1024];
        snprintf(res, sizeof res, "%s %s/%s", r->kind_name, r->ns, r->name);
        snprintf(msg, sizeof msg,
                 "defined again: also in %s; the later definition is used (as kubectl apply "
                 "-f DIR would leave it)",
                 old->file);
        wf_config_error e = {.file = r->file,
                             .line = r->line,
                             .col = r->col,
                             .resource = res,
                             .field = "",
                             .message = msg};
        if (add_error(b, &e) != 0)
            return -1;
        log_error(&e);
    }
    return 0;
}

/* The resources served at their last good version are scanned too: what is served is what
 * is reported (JSON text, so without lines). */
static int scan_stale(build *b)
{
    const wf_store *st = b->snap->store;
    for (size_t i = 0; i < wf_store_count(st); i++) {
        const wf_resource *r = wf_store_at(st, i);
        const char *key = resource_key(b->snap, r);
        void **slot = key ? wf_strmap_slot(b->snap->res, key, false) : NULL;
        if (!key)
            return -1;
        if (slot && ((const wf_snap_res *)*slot)->stale && scan_unimplemented(b, r) != 0)
            return -1;
    }
    return 0;
}

static int load_store(build *b)
{
    wf_store *c = new_store(b->opts);
    if (!c) {
        return -1;
    }
    if (load_sources(b, c) != 0) {
        wf_store_free(c);
        return -1;
    }
    if (wf_store_finalize(c, default_ns(b), false) < 0 ||
        wf_store_allocate_cluster_ips(c, &b->opts->service_ips) < 0 || collect_load_errors(b, c)) {
        wf_store_free(c);
        return -1;
    }
    if (report_shadowed(b, c) != 0) {
        wf_store_free(c);
        return -1;
    }
    b->snap->files = wf_store_file_count(c);
    for (size_t i = 0; i < wf_store_count(c); i++) {
        const wf_resource *r = wf_store_at(c, i);
        if (!r->synthetic && take_resource(b, r)) {
            wf_store_free(c);
            return -1;
        }
    }
    if (keep_failed_files(b)) {
        wf_store_free(c);
        return -1;
    }
    if (!b->need_rebuild) {
        b->snap->store = c;
        return 0;
    }
    b->snap->store = rebuild_store(b); /* b->dropped points into c */
    wf_store_free(c);
    free(b->dropped);
    b->dropped = NULL;
    b->n_dropped = 0;
    return b->snap->store ? scan_stale(b) : -1;
}

/* ---- PeerAuthentication modes no inbound chain carries (pilot/inbound.h) ------------------- */

/* The node of spec.portLevelMtls[port], or of spec.mtls. */
static bool on_gap(const wf_inbound_gap *g, void *arg)
{
    unimpl_arg *u = arg;
    char res[512], field[64], detail[768], msg[1024];
    bool strict;
    const wf_node *at =
        wf_inbound_gap_describe(g, field, sizeof field, detail, sizeof detail, &strict);
    snprintf(msg, sizeof msg, "%s %s %s", field,
             strict ? "is not enforced by weft" : "has no effect in weft", detail);
    wf_config_error w = {.file = g->policy->file,
                         .line = at ? wf_node_report_line(at) : g->policy->line,
                         .col = at ? at->col : g->policy->col,
                         .resource = res_label(g->policy, res, sizeof res),
                         .field = field,
                         .message = msg,
                         .code = strict ? "WFT0002" : "WFT0001"};
    if (add_warning(u->b, &w, "not implemented") != 0)
        u->rc = -1;
    return u->rc == 0;
}

static int report_authn_gaps(build *b)
{
    unimpl_arg u = {b, 0};
    if (wf_inbound_authn_gaps(b->snap->store, wf_meshcfg_root_ns(b->snap->mesh), on_gap, &u) < 0)
        return -1;
    return u.rc;
}

/* ---- TCP ports another service takes (pilot/tcp.h) --------------------------------------- */

static void on_clash(const wf_tcp_clash *c, void *arg)
{
    unimpl_arg *u = arg;
    char res[512], field[64], msg[1024];
    const wf_node *at = c->port->node;
    snprintf(field, sizeof field, "spec.ports[%zu]", c->index);
    snprintf(msg, sizeof msg,
             "%s (%s) has no effect in weft's explicit mode: port %d is also %s's (%s): there "
             "weft-proxy binds one outbound listener per port on the pod's address, so sidecars "
             "that see both send connections to port %d to %s (captured sidecars get Istio's "
             "listener per service address)",
             field, c->port->name ? c->port->name : "unnamed", (int)c->port->port, c->taker_host,
             c->http ? "HTTP" : "TCP", (int)c->port->port, c->taker_host);
    wf_config_error w = {.file = c->res->file,
                         .line = at ? wf_node_report_line(at) : c->res->line,
                         .col = at ? at->col : c->res->col,
                         .resource = res_label(c->res, res, sizeof res),
                         .field = field,
                         .message = msg,
                         .code = "WFT0001"};
    if (u->rc == 0 && add_warning(u->b, &w, "not implemented") != 0)
        u->rc = -1;
}

static int report_tcp_clashes(build *b)
{
    unimpl_arg u = {b, 0};
    if (wf_tcp_port_clashes(b->snap->store, NULL, on_clash, &u) < 0)
        return -1;
    return u.rc;
}

/* ---- AuthorizationPolicy translation problems (pilot/authz.h) ---------------------------- */

typedef struct authz_arg {
    build *b;
    int rc;
} authz_arg;

/* CUSTOM (not supported: fails closed) and a DENY policy that denies less than written (a
 * skipped rule, an unparsable dry-run annotation, targetRef(s) that reach no proxy) are
 * WFT0002, a security control not applied as written; the rest (a skipped ALLOW rule or a
 * value left out of a DENY rule fail closed, AUDIT, ALLOW targetRefs) is WFT0004. */
static void on_authz_problem(void *arg, const wf_authz_note *n)
{
    authz_arg *u = arg;
    char res[512];
    const wf_resource *p = n->policy;
    bool custom = wf_ap_action_of(p) == WF_AP_CUSTOM && strcmp(n->field, "spec.action") == 0;
    bool deny_gap =
        wf_ap_action_of(p) == WF_AP_DENY &&
        (n->level == WF_AUTHZ_NOTE_ERROR || strncmp(n->field, "spec.targetRef", 14) == 0);
    bool security = custom || deny_gap;
    if (custom) /* the unimplemented table's spec.action row says it (weftctl analyze too) */
        return;
    wf_config_error w = {.file = p->file,
                         .line = n->at ? wf_node_report_line(n->at) : p->line,
                         .col = n->at ? n->at->col : p->col,
                         .resource = res_label(p, res, sizeof res),
                         .field = n->field,
                         .message = n->msg,
                         .code = security ? "WFT0002" : "WFT0004"};
    if (u->rc == 0 && add_warning(u->b, &w, security ? "not implemented" : "config warning") != 0)
        u->rc = -1;
}

static int report_authz_problems(build *b)
{
    authz_arg u = {b, 0};
    size_t n;
    const wf_resource *const *v = wf_store_kind(b->snap->store, WF_KIND_AUTHORIZATIONPOLICY, &n);
    for (size_t i = 0; i < n && u.rc == 0; i++)
        if (wf_authz_policy_problems(v[i], b->snap->mesh, on_authz_problem, &u) < 0)
            return -1;
    return u.rc;
}

/* ---- gateway credential Secrets (pilot/gateway_secrets.h) -------------------------------- */

static const char *gwsec_code(wf_gwsec_kind k)
{
    return k == WF_GWSEC_NOT_FOUND ? "IST0101" : k == WF_GWSEC_INVALID ? "IST0161" : "WFT0003";
}

/* A warning for each Gateway server whose credentialName Secret the gateway workload cannot
 * use (missing in its namespace, invalid, expiring), logged when it first appears (B030). */
static bool on_gwsec(const wf_gwsec_problem *p, void *arg)
{
    unimpl_arg *u = arg;
    char res[512], field[64], msg[1536];
    const wf_resource *g = p->gateway;
    size_t idx = (size_t)(p->server - g->t.gateway->servers);
    snprintf(field, sizeof field, "spec.servers[%zu].tls.credentialName", idx);
    const wf_node *at = wf_map_get(p->server->tls, "credentialName");
    wf_config_error w = {.file = g->file,
                         .line = at ? wf_node_report_line(at) : g->line,
                         .col = at ? at->col : g->col,
                         .resource = res_label(g, res, sizeof res),
                         .field = field,
                         .message = wf_gwsec_message(p, msg, sizeof msg),
                         .code = gwsec_code(p->kind)};
    if (add_warning(u->b, &w, "config warning") != 0)
        u->rc = -1;
    return u->rc == 0;
}

static int report_gateway_secrets(build *b)
{
    unimpl_arg u = {b, 0};
    if (wf_gw_secret_problems(b->snap->store, (int64_t)time(NULL), on_gwsec, &u) < 0)
        return -1;
    return u.rc;
}

/* ---- MeshConfig ----------------------------------------------------------------------------- */

static uint64_t file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint64_t h = 1469598103934665603ull;
    int ch;
    if (!f) {
        return 0;
    }
    while ((ch = getc(f)) != EOF) {
        h ^= (unsigned char)ch;
        h *= 1099511628211ull;
    }
    fclose(f);
    return h;
}

/* The MeshConfig values weft reads, checked as Istio's ValidateMeshConfig does for them: an
 * enum must be one of its names, rootNamespace a DNS label, retry attempts >= 0. Returns NULL
 * or a message naming the field. */
static const char *mesh_invalid(const wf_meshcfg *m, char *buf, size_t cap)
{
    static const struct {
        const char *path, *allowed[6], *want;
    } enums[] = {
        {"accessLogEncoding", {"TEXT", "JSON", NULL}, "TEXT or JSON"},
        {"outboundTrafficPolicy.mode",
         {"ALLOW_ANY", "REGISTRY_ONLY", NULL},
         "ALLOW_ANY or REGISTRY_ONLY"},
        {"pathNormalization.normalization",
         {"DEFAULT", "NONE", "BASE", "MERGE_SLASHES", "DECODE_AND_MERGE_SLASHES", NULL},
         "DEFAULT, NONE, BASE, MERGE_SLASHES or DECODE_AND_MERGE_SLASHES"},
    };
    for (size_t i = 0; i < sizeof enums / sizeof enums[0]; i++) {
        const wf_node *n = wf_meshcfg_get(m, enums[i].path);
        const char *v = wf_meshcfg_str(m, enums[i].path);
        if (!n)
            continue;
        bool ok = false;
        for (size_t k = 0; v && enums[i].allowed[k]; k++)
            ok |= strcmp(v, enums[i].allowed[k]) == 0;
        if (!ok) {
            snprintf(buf, cap, "%s: invalid value \"%s\" (want %s)", enums[i].path,
                     v ? v : "(not a string)", enums[i].want);
            return buf;
        }
    }
    const char *root = wf_meshcfg_str(m, "rootNamespace");
    if (wf_meshcfg_get(m, "rootNamespace") && (!root || !wf_is_dns1123_label(root))) {
        snprintf(buf, cap, "rootNamespace: invalid value \"%s\" (want a namespace name)",
                 root ? root : "(not a string)");
        return buf;
    }
    const char *att = wf_meshcfg_str(m, "defaultHttpRetryPolicy.attempts");
    if (att && (att[0] == '-' || strspn(att, "0123456789") != strlen(att))) {
        snprintf(buf, cap,
                 "defaultHttpRetryPolicy.attempts: invalid value \"%s\" (want a "
                 "number >= 0)",
                 att);
        return buf;
    }
    return NULL;
}

static int report_mesh_error(build *b, const char *path, const char *err)
{
    b->snap->mesh_error = wf_arena_strdup(&b->snap->arena, err ? err : path);
    wf_config_error e = {.file = path,
                         .resource = "MeshConfig",
                         .message = err ? err : "unreadable",
                         .kept_last_good = b->prev != NULL};
    WF_LOG(WF_LC_config, WF_LOG_WARN, "config error: MeshConfig %s: %s (%s)", path,
           err ? err : "unreadable",
           b->prev ? "keeping the last good version" : "using Istio's defaults");
    return add_error(b, &e);
}

/* Istio's control plane logs an unparsable JSON accessLogFormat once, when the MeshConfig
 * is read, and uses the default JSON format (operator report B022). */
static void warn_log_format(const wf_meshcfg *mesh)
{
    char why[256] = "";
    if (wf_gen_log_format_error(mesh, why, sizeof why))
        WF_LOG(WF_LC_config, WF_LOG_ERROR,
               "error parsing provided json log format, default log format will be used: %s", why);
}

static int load_mesh(build *b)
{
    mesh_box *box = calloc(1, sizeof *box);
    const char *err = NULL;
    if (!box || !(box->mesh = wf_meshcfg_new_default())) {
        free(box);
        return -1;
    }
    box->refs = 1;
    const char *text = b->opts->mesh_text;
    const char *path = text ? b->opts->mesh_name : b->opts->mesh_file;
    if (path && *path) {
        box->hash = text ? fnv1a(text, b->opts->mesh_len) : file_hash(path);
        char why[512];
        int bad = (text ? wf_meshcfg_load_text(box->mesh, path, text, b->opts->mesh_len, &err)
                        : wf_meshcfg_load_file(box->mesh, path, &err)) != 0;
        if (!bad && (err = mesh_invalid(box->mesh, why, sizeof why)) != NULL)
            bad = 1;
        if (bad) {
            if (report_mesh_error(b, path, err) != 0) {
                mesh_box_unref(box);
                return -1;
            }
            mesh_box_unref(box);
            if (b->prev) {
                box = b->prev->mesh_box;
                box->refs++;
            } else if (!(box = calloc(1, sizeof *box)) || !(box->mesh = wf_meshcfg_new_default())) {
                free(box);
                return -1;
            } else {
                box->refs = 1;
            }
        }
    }
    b->snap->mesh_box = box;
    b->snap->mesh = box->mesh;
    if (!b->prev || ((mesh_box *)b->prev->mesh_box)->hash != box->hash)
        warn_log_format(box->mesh);
    /* the MeshConfig fields weft does not implement (a file's, not Istio's defaults) */
    unimpl_arg u = {b, 0};
    if (box->hash && path && *path &&
        wf_unimpl_scan_mesh(wf_meshcfg_get(box->mesh, ""), path, unimpl_target(b), on_unimpl, &u) <
            0)
        return -1;
    return u.rc;
}

/* ---- change classification ---------------------------------------------------------------- */

static bool endpoint_kind(const char *kind)
{
    return strcmp(kind, "Pod") == 0 || strcmp(kind, "WorkloadEntry") == 0 ||
           strcmp(kind, "Endpoints") == 0 || strcmp(kind, "EndpointSlice") == 0;
}

static int note_change(build *b, const char *key, const char *kind, size_t *cap, bool *full)
{
    wf_snapshot *s = b->snap;
    if (s->n_changed == *cap) {
        size_t ncap = *cap ? 2 * *cap : 16;
        const char **v = wf_arena_alloc(&s->arena, ncap * sizeof *v);
        if (!v) {
            return -1;
        }
        if (s->n_changed) {
            memcpy(v, s->changed, s->n_changed * sizeof *v);
        }
        s->changed = v;
        *cap = ncap;
    }
    s->changed[s->n_changed] = wf_arena_strdup(&s->arena, key);
    if (!s->changed[s->n_changed++]) {
        return -1;
    }
    if (!endpoint_kind(kind)) {
        *full = true;
    }
    return 0;
}

static int classify(build *b)
{
    wf_snapshot *s = b->snap;
    const wf_snapshot *p = b->prev;
    size_t cap = 0;
    bool full = !p || ((mesh_box *)p->mesh_box)->hash != ((mesh_box *)s->mesh_box)->hash;
    s->mesh_changed = full;
    for (size_t i = 0; i < wf_strmap_count(s->res); i++) {
        const char *key = wf_strmap_key(s->res, i);
        const wf_snap_res *r = wf_strmap_value(s->res, i);
        const wf_snap_res *o = prev_res(b, key);
        if ((!o || o->hash != r->hash || o->len != r->len) &&
            note_change(b, key, r->kind, &cap, &full)) {
            return -1;
        }
    }
    for (size_t i = 0; p && p->res && i < wf_strmap_count(p->res); i++) {
        const char *key = wf_strmap_key(p->res, i);
        const wf_snap_res *o = wf_strmap_value(p->res, i);
        if (!wf_strmap_slot(s->res, key, false) && note_change(b, key, o->kind, &cap, &full)) {
            return -1;
        }
    }
    /* endpoints that change the service accounts clusters carry as SANs: a full push */
    if (!full && s->n_changed && p && wf_svc_identities_added(p->store, s->store))
        full = true;
    /* the services whose endpoints changed (istiod's edsUpdatedServices); a change that cannot
     * be narrowed to EDS services is a full push */
    if (!full && s->n_changed) {
        int rc =
            wf_eds_updated_services(p ? p->store : NULL, s->store, (const char *const *)s->changed,
                                    s->n_changed, &s->eds_services);
        if (rc == WF_EDS_UPDATE_OOM)
            return -1;
        full = rc == WF_EDS_UPDATE_FULL;
    }
    s->change = full ? WF_CHANGE_FULL : s->n_changed ? WF_CHANGE_ENDPOINTS : WF_CHANGE_NONE;
    return 0;
}

wf_snapshot *wf_source_build(const wf_dir_source_opts *opts, const wf_snapshot *prev,
                             int64_t changed_at_ms)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    wf_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        return NULL;
    }
    s->refs = 1;
    s->seq = prev ? prev->seq + 1 : 1;
    s->changed_at_ms = changed_at_ms ? changed_at_ms : wall_ms();
    wf_arena_init(&s->arena);
    build b = {.opts = opts, .prev = prev, .snap = s};
    if (!(s->res = wf_strmap_new(&s->arena)) || load_mesh(&b) || load_store(&b) ||
        report_authn_gaps(&b) || report_tcp_clashes(&b) || report_authz_problems(&b) ||
        report_gateway_secrets(&b) || classify(&b)) {
        wf_snapshot_unref(s);
        return NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->build_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    s->built_at_ms = wall_ms();
    return s;
}
