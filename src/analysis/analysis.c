/*
 * analysis.c - the analysis run: context, reporting, suppression, ordering (analysis.h).
 */
#include "analysis/analysis.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"

#define SUPPRESS_ANNOTATION "galley.istio.io/analyze-suppress"

struct wf_analysis_ctx {
    const wf_store *store;
    const wf_meshcfg *mesh;
    wf_arena *arena; /* this worker's own arena */
    size_t text_limit;
    const wf_analyzer *current;
    wf_finding *v;
    size_t n, cap;
    size_t text_bytes; /* rendered text collected so far */
    bool oom, truncated;
    bool kubernetes;
};

const wf_store *wf_ctx_store(const wf_analysis_ctx *ctx)
{
    return ctx->store;
}

bool wf_ctx_kubernetes(const wf_analysis_ctx *ctx)
{
    return ctx->kubernetes;
}

const wf_meshcfg *wf_ctx_mesh(const wf_analysis_ctx *ctx)
{
    return ctx->mesh;
}

wf_arena *wf_ctx_arena(wf_analysis_ctx *ctx)
{
    return ctx->arena;
}

void wf_report_line(wf_analysis_ctx *ctx, wf_msg_id id, const wf_resource *res, uint32_t line,
                    const char *const *args, size_t nargs)
{
    const wf_msg_type *t = wf_msg_type_get(id);
    if (!t || ctx->oom || ctx->truncated)
        return;
    if (ctx->n == ctx->cap) {
        size_t cap = ctx->cap ? ctx->cap * 2 : 32;
        wf_finding *nv = realloc(ctx->v, cap * sizeof(*nv));
        if (!nv) {
            ctx->oom = true;
            return;
        }
        ctx->v = nv;
        ctx->cap = cap;
    }
    wf_strbuf b = WF_STRBUF_INIT;
    wf_go_format(&b, t->tmpl, args, nargs);
    ctx->text_bytes += b.len;
    if (ctx->text_bytes > ctx->text_limit) {
        ctx->truncated = true;
        wf_strbuf_free(&b);
        return;
    }
    const char *text =
        wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(ctx->arena, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    if (!text) {
        ctx->oom = true;
        return;
    }
    if (res && (res->json || res->synthetic))
        line = 0;
    else if (res && line == 0)
        line = res->line;
    ctx->v[ctx->n++] = (wf_finding){id, res, line, text, ctx->current ? ctx->current->name : ""};
}

void wf_report(wf_analysis_ctx *ctx, wf_msg_id id, const wf_resource *res, const wf_node *at,
               const char *const *args, size_t nargs)
{
    wf_report_line(ctx, id, res, wf_node_report_line(at), args, nargs);
}

const char *wf_finding_origin(wf_arena *a, const wf_finding *f)
{
    const wf_resource *r = f->res;
    if (!r)
        return NULL;
    return r->ns[0] ? wf_arena_printf(a, "%s %s/%s", r->kind_name, r->ns, r->name)
                    : wf_arena_printf(a, "%s %s", r->kind_name, r->name);
}

const char *wf_finding_reference(wf_arena *a, const wf_finding *f)
{
    const wf_resource *r = f->res;
    if (!r || !r->file || r->synthetic || r->live)
        return NULL;
    if (f->line == 0)
        return r->file;
    return wf_arena_printf(a, "%s:%u", r->file, f->line);
}

/* ---- selection ---- */

static bool named(const wf_analysis_opts *o, const wf_analyzer *a)
{
    for (size_t j = 0; j < o->nanalyzers; j++)
        if (strcmp(a->name, o->analyzers[j]) == 0)
            return true;
    return false;
}

static int cmp_analyzer(const void *x, const void *y)
{
    return strcmp((*(const wf_analyzer *const *)x)->name, (*(const wf_analyzer *const *)y)->name);
}

/* The registry's analyzers, then the caller's extra ones, sorted by name: those --analyzer
 * names, else the default ones. out holds n + o->nextra. */
static size_t select_analyzers(const wf_analysis_opts *o, const wf_analyzer **out)
{
    size_t n, k = 0;
    const wf_analyzer *const *all = wf_analyzers_all(&n);
    for (size_t pass = 0; pass < 2 && k == 0; pass++) {
        for (size_t i = 0; i < n + o->nextra; i++) {
            const wf_analyzer *a = i < n ? all[i] : o->extra[i - n];
            if (pass == 0 ? named(o, a) : a->default_on)
                out[k++] = a;
        }
    }
    qsort(out, k, sizeof *out, cmp_analyzer);
    return k;
}

/* ---- suppression and filtering ---- */

static bool code_in_list(const char *list, const char *code)
{
    const char *p = list;
    size_t cl = strlen(code);
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        if ((t - p == 1 && *p == '*') || ((size_t)(t - p) == cl && strncmp(p, code, cl) == 0))
            return true;
        p = e;
    }
    return false;
}

static bool suppressed(wf_arena *a, const wf_analysis_opts *o, const wf_finding *f)
{
    const char *code = wf_msg_type_get(f->id)->code;
    if (f->res) {
        const char *ann = wf_kvs_get(&f->res->annotations, SUPPRESS_ANNOTATION);
        if (ann && code_in_list(ann, code))
            return true;
    }
    for (size_t i = 0; i < o->nsuppress; i++) {
        const char *eq = strchr(o->suppress[i], '=');
        if (!eq)
            continue;
        size_t cl = (size_t)(eq - o->suppress[i]);
        bool code_ok = (cl == 1 && o->suppress[i][0] == '*') ||
                       (cl == strlen(code) && strncmp(o->suppress[i], code, cl) == 0);
        if (!code_ok || !f->res)
            continue;
        const char *glob = eq + 1;
        const char *origin = wf_finding_origin(a, f);
        const char *dotted = f->res->ns[0] ? wf_arena_printf(a, "%s %s.%s", f->res->kind_name,
                                                             f->res->name, f->res->ns)
                                           : origin;
        if ((origin && fnmatch(glob, origin, 0) == 0) || (dotted && fnmatch(glob, dotted, 0) == 0))
            return true;
    }
    return false;
}

bool wf_resource_in_namespace(const wf_resource *r, const char *ns)
{
    if (!ns || !r)
        return true;
    if (r->kind == WF_KIND_NAMESPACE)
        return strcmp(r->name, ns) == 0;
    if (!r->ns[0])
        return true;
    return strcmp(r->ns, ns) == 0;
}

static bool in_namespace(const wf_finding *f, const char *ns)
{
    return wf_resource_in_namespace(f->res, ns);
}

/* ---- ordering ---- */

typedef struct sort_item {
    wf_finding f;
    const char *res_key; /* Kind/name/namespace */
    const char *line;    /* full rendered line, for ties and dedup */
} sort_item;

static int cmp_items(const void *pa, const void *pb)
{
    const sort_item *a = pa, *b = pb;
    const wf_msg_type *ta = wf_msg_type_get(a->f.id), *tb = wf_msg_type_get(b->f.id);
    if (ta->level != tb->level)
        return (int)ta->level - (int)tb->level;
    int c = strcmp(ta->code, tb->code);
    if (c)
        return c;
    if ((c = strcmp(a->res_key, b->res_key)) != 0)
        return c;
    return strcmp(a->line, b->line);
}

static int order_findings(wf_analysis_result *res, wf_finding *v, size_t n)
{
    sort_item *items = calloc(n ? n : 1, sizeof(*items));
    res->findings = calloc(n ? n : 1, sizeof(*res->findings));
    if (!items || !res->findings) {
        free(items);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const wf_resource *r = v[i].res;
        items[i].f = v[i];
        items[i].res_key =
            r ? wf_arena_printf(&res->arena, "%s/%s/%s", r->kind_name, r->name, r->ns) : "";
        const char *origin = wf_finding_origin(&res->arena, &v[i]);
        const char *ref = wf_finding_reference(&res->arena, &v[i]);
        items[i].line = wf_arena_printf(&res->arena, "%s [%s] (%s%s%s) %s",
                                        wf_level_name(wf_msg_type_get(v[i].id)->level),
                                        wf_msg_type_get(v[i].id)->code, origin ? origin : "",
                                        ref ? " " : "", ref ? ref : "", v[i].text);
        if (!items[i].res_key || !items[i].line) {
            free(items);
            return -1;
        }
    }
    qsort(items, n, sizeof(*items), cmp_items);
    for (size_t i = 0; i < n; i++) {
        if (res->n && strcmp(items[i].line, items[i - 1].line) == 0)
            continue;
        res->findings[res->n++] = items[i].f;
    }
    free(items);
    return 0;
}

#define MAX_WORKERS 2

/* Analyzers only read the store and the mesh config, so they run on up to two threads,
 * each taking the next analyzer and reporting into its own context and arena. */
typedef struct analysis_job {
    const wf_analyzer **ran;
    size_t nran;
    atomic_size_t next;
    wf_analysis_ctx ctx[MAX_WORKERS];
    wf_arena arenas[MAX_WORKERS];
} analysis_job;

typedef struct worker_arg {
    analysis_job *job;
    size_t w;
} worker_arg;

static void *analysis_worker(void *arg)
{
    worker_arg *wa = arg;
    analysis_job *job = wa->job;
    wf_analysis_ctx *ctx = &job->ctx[wa->w];
    for (;;) {
        size_t i = atomic_fetch_add(&job->next, 1);
        if (i >= job->nran)
            return NULL;
        ctx->current = job->ran[i];
        job->ran[i]->run(ctx);
    }
}

static void run_analyzers(analysis_job *job, unsigned workers)
{
    pthread_t tid[MAX_WORKERS];
    worker_arg args[MAX_WORKERS];
    unsigned started = 0;
    for (unsigned w = 1; w < workers; w++) {
        args[w] = (worker_arg){job, w};
        if (pthread_create(&tid[w], NULL, analysis_worker, &args[w]) != 0)
            break; /* the calling thread does the rest */
        started = w;
    }
    args[0] = (worker_arg){job, 0};
    analysis_worker(&args[0]);
    for (unsigned w = 1; w <= started; w++)
        pthread_join(tid[w], NULL);
}

/* Gather every worker's findings into one heap array and their arenas into res. */
static wf_finding *gather(analysis_job *job, wf_analysis_result *res, size_t *n, bool *oom)
{
    size_t total = 0;
    for (size_t w = 0; w < MAX_WORKERS; w++)
        total += job->ctx[w].n;
    wf_finding *v = malloc((total ? total : 1) * sizeof(*v));
    *n = 0;
    *oom = v == NULL;
    for (size_t w = 0; w < MAX_WORKERS; w++) {
        wf_analysis_ctx *c = &job->ctx[w];
        if (v && c->n)
            memcpy(v + *n, c->v, c->n * sizeof(*v));
        *n += v ? c->n : 0;
        *oom |= c->oom;
        res->truncated |= c->truncated;
        free(c->v);
        wf_arena_adopt(&res->arena, &job->arenas[w]);
    }
    return v;
}

wf_analysis_result *wf_analyze(const wf_store *s, const wf_meshcfg *mesh,
                               const wf_analysis_opts *opts)
{
    wf_analysis_result *res = calloc(1, sizeof(*res));
    analysis_job *job = calloc(1, sizeof(*job));
    size_t n;
    (void)wf_analyzers_all(&n);
    if (res)
        res->ran = calloc(n + opts->nextra + 1, sizeof(*res->ran));
    if (!res || !job || !res->ran) {
        free(job);
        wf_analysis_result_free(res);
        return NULL;
    }
    wf_arena_init(&res->arena);
    res->nran = select_analyzers(opts, res->ran);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned workers = ncpu >= MAX_WORKERS && res->nran > 1 ? MAX_WORKERS : 1;
    job->ran = res->ran;
    job->nran = res->nran;
    for (size_t w = 0; w < MAX_WORKERS; w++) {
        wf_arena_init(&job->arenas[w]);
        job->ctx[w] = (wf_analysis_ctx){.store = s,
                                        .mesh = mesh,
                                        .arena = &job->arenas[w],
                                        .kubernetes = opts->kubernetes,
                                        .text_limit = WF_ANALYSIS_MAX_TEXT_BYTES / workers};
    }
    run_analyzers(job, workers);
    bool oom;
    wf_finding *v = gather(job, res, &n, &oom);
    free(job);
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++)
        if (in_namespace(&v[i], opts->ns_filter) && !suppressed(&res->arena, opts, &v[i]))
            v[k++] = v[i];
    int rc = oom ? -1 : order_findings(res, v, k);
    free(v);
    if (rc) {
        wf_analysis_result_free(res);
        return NULL;
    }
    return res;
}

void wf_analysis_result_free(wf_analysis_result *r)
{
    if (!r)
        return;
    free(r->findings);
    free(r->ran);
    wf_arena_destroy(&r->arena);
    free(r);
}
