/*
 * cmd_log.c - `weftctl log explain [FILE|-] [--format FMT] [--summary] [-o json]` (beyond
 * istioctl; docs/log-explain.md). Reads access log lines (Istio TEXT, Envoy default, a
 * --format string of command operators, or JSON lines), and for every failed request (code 0
 * or >= 400, or any response flag) says what its flags and details mean, the likely causes
 * and the next check, from the table in src/explain/explain_table.c (explain.h builds and
 * prints every explanation: weft-pilot's web view uses the same). Unknown values are reported as
 * unknown. --summary groups failures by code, flags, details, upstream cluster and route.
 * Transport failure reasons (upstream and downstream) are explained by their TLS signature
 * (explain_table.c), and signatures that only together name a cause (wf_lx_pair: the
 * client's UC connection_termination and the server's NR filter_chain_not_found) are
 * reported when both occur in the input ("Together, line A (...) and line B (...)"; -o json:
 * "together"). HTTP/2, gRPC and TCP lines are also read as a whole (log_explain_proto.h:
 * items "grpc", "protocol", "tcp"; the per-line gRPC and TCP readings stay out of --summary),
 * with the route timeouts of --pod / --config-dump's dump for gRPC timeouts. Transparent
 * capture outcomes (log_explain_capture.h, item "capture"): block_all, BlackHoleCluster,
 * PassthroughCluster / allow_any, InboundPassthroughCluster, with the original destination and
 * SNI; lines through the passthrough clusters that did not fail are shown too, marked "(not a
 * failure)" (-o json: "passthrough"), never in --summary.
 *
 * Lines that are not access log lines (application output mixed in) are skipped and counted
 * on stderr. Exit 0; 1 when the input cannot be read or holds lines but none parses; 64 for
 * a bad flag.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/arena.h"
#include "core/strmap.h"
#include "cli/flags.h"
#include "cli/authz_fetch.h"
#include "cli/envoy_dump.h"
#include "cli/log_explain.h"
#include "cli/log_explain_capture.h"
#include "cli/log_explain_proto.h"
#include "explain/explain.h"
#include "cli/log_explain_rbac.h"
#include "cli/proxy_find.h"
#include "cli/tabwriter.h"
#include "xds/istio_log.h"

#define MAX_LINE (1024u * 1024u)

enum { F_FORMAT, F_SUMMARY, F_POD, F_NAMESPACE, F_PILOT, F_CONFIG_DUMP, F_OUT, F_HELP, F_COUNT };

static void init_flags(wf_flag *f)
{
    wf_flag defs[F_COUNT] = {
        [F_FORMAT] = {"format", 0, WF_FLAG_STRING,
                      "Access log format (Envoy command operators, or a JSON object of them); "
                      "default: detect Istio TEXT, Envoy default or JSON lines",
                      "string"},
        [F_SUMMARY] = {"summary", 0, WF_FLAG_BOOL,
                       "Group failures by code, flags, details, upstream cluster and route", NULL},
        [F_POD] = {"pod", 0, WF_FLAG_STRING,
                   "The proxy that wrote the log (POD, POD.NS or deploy/NAME): RBAC denials then "
                   "name the policies it enforces, and gRPC timeouts whether the route's timeout "
                   "or the client's grpc-timeout fired, read from its config dump",
                   "string"},
        [F_NAMESPACE] = {"namespace", 'n', WF_FLAG_STRING, "Namespace of --pod", "string"},
        [F_PILOT] = {"pilot", 0, WF_FLAG_STRING,
                     "weft-pilot monitoring address (ip:port) used to find --pod", "string"},
        [F_CONFIG_DUMP] = {"config-dump", 0, WF_FLAG_STRING,
                           "As --pod, from a saved Envoy config dump of that proxy", "file"},
        [F_OUT] = {"output", 'o', WF_FLAG_STRING, "Output format: one of [text json]", "string"},
        [F_HELP] = {"help", 'h', WF_FLAG_BOOL, "Help for log explain", NULL},
    };
    memcpy(f, defs, sizeof defs);
}

static void usage(const wf_flag *flags)
{
    printf("Explain failed requests in proxy access logs: what the response flags and response\n"
           "code details mean, the likely causes, and the next check or fix.\n\n"
           "Usage:\n  weftctl log explain [FILE|-] [flags]\n\n"
           "Examples:\n  kubectl logs deploy/catalog -c istio-proxy | weftctl log explain\n"
           "  weftctl log explain gateway.log --summary\n"
           "  weftctl log explain catalog.log --pod deploy/catalog-v1 -n shop\n"
           "  weftctl log explain frontend.log --config-dump frontend-dump.json\n\n"
           "HTTP/2 resets, GOAWAY, protocol errors (with the likely port-naming cause), gRPC\n"
           "status codes and TCP proxy lines are read too.\n\n");
    wf_flags_usage(flags, F_COUNT);
}

/* ---- explanations (explain/explain.h builds and prints them) ------------------------------ */

/* The AuthorizationPolicy behind an RBAC denial in the details (log_explain_rbac.h). */
typedef struct rbac_ctx {
    const wf_authz_table *t; /* --pod / --config-dump's table; NULL = none given */
    const char *pod;         /* "<pod>.<ns>", NULL for a dump file */
    const wf_lx_routes *rt;  /* the same dump's route timeouts; NULL = none given */
} rbac_ctx;

/* wf_explain_details_hook: the authorization item after a details value's items. */
static int add_rbac(void *ctx, const char *details, wf_explain_items *l)
{
    const rbac_ctx *rc = ctx;
    wf_strbuf d = WF_STRBUF_INIT;
    int n = wf_lx_rbac_describe(details, rc->t, rc->pod, &d);
    int r = n > 0 ? wf_explain_items_add(l, "authorization", wf_strbuf_cstr(&d), d.len, NULL) : n;
    wf_strbuf_free(&d);
    return r;
}

/* Everything to explain about one record, in the order it is printed. */
static int explain(const wf_lx_record *r, const rbac_ctx *rc, wf_explain_items *out)
{
    return wf_explain_record(r, rc->rt, add_rbac, (void *)rc, out);
}

static void print_item(FILE *f, const wf_explain_item *it, int ind)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_explain_item_print(it, ind, &b);
    fwrite(wf_strbuf_cstr(&b), 1, b.len, f);
    wf_strbuf_free(&b);
}

static const char *dash(const char *s)
{
    return s ? s : "-";
}

/* The response code as text: "-" when the line carries none (a --format without
 * %RESPONSE_CODE%, or a value that is not an integer). */
static const char *code_text(int code, char buf[16])
{
    if (code < 0)
        return "-";
    snprintf(buf, 16, "%d", code);
    return buf;
}

static json_t *code_json(int code)
{
    return code < 0 ? json_null() : json_integer(code);
}

static void print_record(FILE *f, const wf_lx_record *r, const wf_explain_items *its)
{
    char cb[16];
    fprintf(f, "line %zu: %s %s %s\n", r->line, code_text(r->code, cb), dash(r->flags),
            dash(r->details));
    if (!r->method && !r->path && r->details && !strcmp(r->details, "filter_chain_not_found"))
        fputs("   request: none (the connection closed before any was read)", f);
    else
        fprintf(f, "   request: %s %s%s", dash(r->method), r->authority ? r->authority : "",
                dash(r->path));
    if (r->request_id)
        fprintf(f, "  (x-request-id %s)", r->request_id);
    fprintf(f, "\n   upstream cluster: %s  route: %s  upstream host: %s\n", dash(r->cluster),
            dash(r->route), dash(r->host));
    const char *dst = wf_lx_original_destination(r);
    if (dst || r->sni)
        fprintf(f, "   original destination: %s  SNI: %s\n", dash(dst), dash(r->sni));
    for (size_t i = 0; i < its->n; i++)
        print_item(f, &its->v[i], 3);
    if (!its->n)
        fprintf(f, "   %s\n", WF_EXPLAIN_NOTHING_FLAGGED);
    fputc('\n', f);
}

static json_t *items_json(const wf_explain_items *its)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < its->n; i++)
        json_array_append_new(a, wf_explain_item_json(&its->v[i]));
    return a;
}

static json_t *nstr(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *record_json(const wf_lx_record *r, const wf_explain_items *its)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "line", json_integer((json_int_t)r->line));
    json_object_set_new(o, "response_code", code_json(r->code));
    json_object_set_new(o, "response_flags", nstr(r->flags));
    json_object_set_new(o, "response_code_details", nstr(r->details));
    json_object_set_new(o, "connection_termination_details", nstr(r->conn_details));
    json_object_set_new(o, "upstream_transport_failure_reason", nstr(r->tfr));
    json_object_set_new(o, "downstream_transport_failure_reason", nstr(r->dtfr));
    json_object_set_new(o, "upstream_cluster", nstr(r->cluster));
    json_object_set_new(o, "route_name", nstr(r->route));
    json_object_set_new(o, "upstream_host", nstr(r->host));
    json_object_set_new(o, "method", nstr(r->method));
    json_object_set_new(o, "authority", nstr(r->authority));
    json_object_set_new(o, "path", nstr(r->path));
    json_object_set_new(o, "request_id", nstr(r->request_id));
    json_object_set_new(o, "protocol", nstr(r->protocol));
    json_object_set_new(o, "grpc_status", nstr(r->grpc_status));
    json_object_set_new(o, "duration", nstr(r->duration));
    json_object_set_new(o, "requested_server_name", nstr(r->sni));
    json_object_set_new(o, "original_destination", nstr(wf_lx_original_destination(r)));
    wf_lx_capture cap = wf_lx_capture_of(r);
    json_object_set_new(o, "capture",
                        cap == WF_LX_CAP_NONE ? json_null() : json_string(wf_lx_capture_name(cap)));
    json_object_set_new(o, "explanations", items_json(its));
    return o;
}

/* fopen opens a directory for reading on Linux; reading it then fails. */
static bool is_dir(FILE *f)
{
    struct stat st;
    return fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- summary groups ------------------------------------------------------------------- */

typedef struct group {
    int code;
    char *key[4]; /* flags, details, cluster, route ("-" when absent) */
    size_t count;
} group;

typedef struct run_state {
    bool json, summary;
    size_t lines, parsed, failed;
    size_t blank; /* empty or white-space lines: neither access log lines nor skipped */
    group *g;
    size_t ng;
    wf_arena arena;       /* the group index's keys */
    wf_strmap *index;     /* "code\x1fflags\x1fdetails\x1fcluster\x1froute" -> group number + 1 */
    wf_explain_items all; /* every flag/details seen, for the summary's explanations */
    json_t *jfail;
    json_t *jpass; /* -o json: lines through the capture clusters that did not fail */
    size_t passed;
    size_t *pair_line; /* per wf_lx_pair: first line of its a (2i) and of its b (2i + 1) */
    rbac_ctx rbac;
} run_state;

static bool entry_is(const wf_lx_entry *e, wf_lx_kind kind, const char *key)
{
    return e && e->kind == kind && strcmp(e->key, key) == 0;
}

/* Notes the first line of each pair's signatures among a record's items. */
static void note_pairs(run_state *s, const wf_lx_record *r, const wf_explain_items *its)
{
    for (size_t p = 0; p < wf_lx_pair_count(); p++) {
        const wf_lx_pair *pr = wf_lx_pair_at(p);
        for (size_t i = 0; i < its->n; i++) {
            if (!s->pair_line[2 * p] && entry_is(its->v[i].e, pr->kind_a, pr->key_a))
                s->pair_line[2 * p] = r->line;
            if (!s->pair_line[2 * p + 1] && entry_is(its->v[i].e, pr->kind_b, pr->key_b))
                s->pair_line[2 * p + 1] = r->line;
        }
    }
}

/* The pairs seen whole: printed (text) or as a new array (json, NULL when out of memory). */
static json_t *print_pairs(const run_state *s, FILE *f)
{
    json_t *a = f ? NULL : json_array();
    for (size_t p = 0; p < wf_lx_pair_count(); p++) {
        const wf_lx_pair *pr = wf_lx_pair_at(p);
        size_t la = s->pair_line[2 * p], lb = s->pair_line[2 * p + 1];
        if (!la || !lb)
            continue;
        if (f) {
            fprintf(f, "Together, line %zu (%s) and line %zu (%s): %s\n", la, pr->key_a, lb,
                    pr->key_b, pr->meaning);
            fprintf(f, "   Likely causes: %s\n   Next: %s\n\n", pr->causes, pr->next);
        } else if (a) {
            json_array_append_new(a, json_pack("{s:[s,s],s:[I,I],s:s,s:s,s:s}", "signatures",
                                               pr->key_a, pr->key_b, "lines", (json_int_t)la,
                                               (json_int_t)lb, "meaning", pr->meaning, "causes",
                                               pr->causes, "next", pr->next));
        }
    }
    return a;
}

static int add_group(run_state *s, const wf_lx_record *r)
{
    const char *k[4] = {dash(r->flags), dash(r->details), dash(r->cluster), dash(r->route)};
    if (!s->index && !(s->index = wf_strmap_new(&s->arena)))
        return -1;
    char *key = NULL;
    if (asprintf(&key, "%d\x1f%s\x1f%s\x1f%s\x1f%s", r->code, k[0], k[1], k[2], k[3]) < 0)
        return -1;
    void **slot = wf_strmap_slot(s->index, key, true);
    free(key);
    if (!slot)
        return -1;
    if (*slot) { /* hashed: --summary stays linear in the number of lines */
        s->g[(uintptr_t)*slot - 1].count++;
        return 0;
    }
    group *v = realloc(s->g, (s->ng + 1) * sizeof *v);
    if (!v)
        return -1;
    *slot = (void *)(uintptr_t)(s->ng + 1);
    s->g = v;
    group *g = &s->g[s->ng++];
    g->code = r->code;
    g->count = 1;
    for (int i = 0; i < 4; i++)
        g->key[i] = strdup(k[i]);
    return g->key[0] && g->key[1] && g->key[2] && g->key[3] ? 0 : -1;
}

static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->code - y->code;
}

static int print_summary(run_state *s)
{
    qsort(s->g, s->ng, sizeof *s->g, cmp_group);
    if (s->json) {
        json_t *groups = json_array();
        for (size_t i = 0; groups && i < s->ng; i++) {
            const group *g = &s->g[i];
            json_array_append_new(
                groups, json_pack("{s:I, s:o, s:s, s:s, s:s, s:s}", "count", (json_int_t)g->count,
                                  "response_code", code_json(g->code), "response_flags", g->key[0],
                                  "response_code_details", g->key[1], "upstream_cluster", g->key[2],
                                  "route_name", g->key[3]));
        }
        json_t *o = json_pack("{s:o, s:o, s:o, s:I, s:I, s:I}", "groups", groups, "explanations",
                              items_json(&s->all), "together", print_pairs(s, NULL), "lines",
                              (json_int_t)s->lines, "parsed", (json_int_t)s->parsed, "failed",
                              (json_int_t)s->failed);
        int rc = o ? json_dumpf(o, stdout, JSON_INDENT(2)) : -1;
        fputc('\n', stdout);
        json_decref(o);
        return rc;
    }
    printf("%zu failed requests in %zu access log lines\n\n", s->failed, s->parsed);
    wf_tw tw;
    wf_tw_init(&tw, 3);
    wf_tw_puts(&tw, "COUNT\tCODE\tFLAGS\tDETAILS\tUPSTREAM CLUSTER\tROUTE\n");
    for (size_t i = 0; i < s->ng; i++) {
        const group *g = &s->g[i];
        char cb[16];
        wf_tw_printf(&tw, "%zu\t%s\t%s\t%s\t%s\t%s\n", g->count, code_text(g->code, cb), g->key[0],
                     g->key[1], g->key[2], g->key[3]);
    }
    int rc = wf_tw_flush(&tw, stdout, NULL);
    wf_tw_free(&tw);
    if (s->all.n)
        fputc('\n', stdout);
    for (size_t i = 0; i < s->all.n; i++)
        print_item(stdout, &s->all.v[i], 0);
    if (s->all.n)
        fputc('\n', stdout);
    print_pairs(s, stdout);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct formats {
    wf_lx_format *user, *istio, *envoy;
} formats;

static int parse_any(const formats *f, const char *line, wf_lx_record *r)
{
    if (f->user)
        return wf_lx_parse_line(f->user, line, r);
    const char *p = line + strspn(line, " \t");
    if (*p == '{')
        return wf_lx_parse_line(NULL, line, r);
    return wf_lx_parse_line(f->istio, line, r) == 0 ? 0 : wf_lx_parse_line(f->envoy, line, r);
}

/* A line that did not fail but went through a capture cluster (PassthroughCluster,
 * InboundPassthroughCluster, the allow_any route): said as such, since it left the mesh's
 * policy (B039: ALLOW_ANY "logged as such"). Not in --summary. */
static int handle_passed(run_state *s, const wf_lx_record *r)
{
    if (s->summary || wf_lx_capture_of(r) == WF_LX_CAP_NONE)
        return 0;
    s->passed++;
    wf_strbuf b = WF_STRBUF_INIT;
    wf_explain_items its = {0};
    int rc = wf_lx_capture_read(r, &b);
    if (rc == 0 && b.len)
        rc = wf_explain_items_add(&its, "capture", wf_strbuf_cstr(&b), b.len, NULL);
    wf_strbuf_free(&b);
    if (rc == 0 && s->json) {
        rc = json_array_append_new(s->jpass, record_json(r, &its));
    } else if (rc == 0) {
        fputs("(not a failure) ", stdout);
        print_record(stdout, r, &its);
    }
    wf_explain_items_free(&its);
    return rc;
}

static int handle(run_state *s, wf_lx_record *r)
{
    s->parsed++;
    if (!wf_lx_failed(r))
        return handle_passed(s, r);
    s->failed++;
    wf_explain_items its = {0};
    int rc = explain(r, &s->rbac, &its);
    if (rc == 0)
        note_pairs(s, r, &its);
    if (rc == 0 && s->summary) {
        rc = add_group(s, r);
        for (size_t i = 0; rc == 0 && i < its.n; i++)
            if (strcmp(its.v[i].kind, "grpc") != 0 && strcmp(its.v[i].kind, "tcp") != 0 &&
                strcmp(its.v[i].kind, "capture") != 0)
                rc = wf_explain_items_add(
                    &s->all, its.v[i].kind, its.v[i].value, strlen(its.v[i].value),
                    its.v[i].e); /* per-line readings (durations, bytes) stay out */
    } else if (rc == 0 && s->json) {
        rc = json_array_append_new(s->jfail, record_json(r, &its));
    } else if (rc == 0) {
        print_record(stdout, r, &its);
    }
    wf_explain_items_free(&its);
    return rc;
}

static int read_all(FILE *in, const formats *f, run_state *s)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, in)) >= 0) {
        s->lines++;
        if (strspn(line, " \t\r\n") == (size_t)n) {
            s->blank++;
            continue;
        }
        if ((size_t)n > MAX_LINE)
            continue;
        wf_lx_record r;
        if (parse_any(f, line, &r) == 0) {
            r.line = s->lines;
            rc = handle(s, &r);
            wf_lx_record_free(&r);
        }
    }
    free(line);
    return rc;
}

static int finish(run_state *s, const char *src)
{
    size_t skipped = s->lines >= s->parsed + s->blank ? s->lines - s->parsed - s->blank : 0;
    if (skipped && !s->parsed) { /* an empty input has no failed request, it is no error */
        fprintf(stderr,
                "Error: no access log lines in %s (%zu lines); pass --format if the log "
                "uses a custom format\n",
                src, skipped);
        return WF_EXIT_ERROR;
    }
    int rc = 0;
    if (s->summary) {
        rc = print_summary(s);
    } else if (s->json) {
        json_t *o =
            json_pack("{s:O, s:o, s:O, s:I, s:I, s:I}", "failures", s->jfail, "together",
                      print_pairs(s, NULL), "passthrough", s->jpass, "lines", (json_int_t)s->lines,
                      "parsed", (json_int_t)s->parsed, "failed", (json_int_t)s->failed);
        rc = o ? json_dumpf(o, stdout, JSON_INDENT(2)) : -1;
        fputc('\n', stdout);
        json_decref(o);
    } else if (!s->failed) {
        printf("No failed requests in %zu access log lines.\n", s->parsed);
    } else {
        print_pairs(s, stdout);
    }
    if (skipped && !s->json)
        fprintf(stderr, "(%zu lines were not access log lines and were skipped)\n", skipped);
    if (rc)
        fprintf(stderr, "Error: out of memory\n");
    return rc ? WF_EXIT_ERROR : WF_EXIT_OK;
}

/* --pod / --config-dump: the proxy's AuthorizationPolicy table and route timeouts, from one
 * read of its config dump. 0 (nothing asked: *asked false), or -1 with the error printed. */
static int load_dump(const wf_flag *fl, wf_authz_table *t, wf_lx_routes *rt, char **pod,
                     bool *asked)
{
    wf_strbuf warn = WF_STRBUF_INIT, err = WF_STRBUF_INIT, why = WF_STRBUF_INIT;
    const char *pilot = fl[F_PILOT].sval ? fl[F_PILOT].sval : WF_DEFAULT_PILOT;
    int rc = 0;
    *pod = NULL;
    *asked = fl[F_POD].sval || fl[F_CONFIG_DUMP].sval;
    wf_envoy_dump d = {0};
    if (fl[F_CONFIG_DUMP].sval) {
        rc = wf_envoy_dump_load_file(fl[F_CONFIG_DUMP].sval, &d, &why);
        if (rc != 0)
            wf_strbuf_printf(&err, "failed to get config dump from file %s: %s",
                             fl[F_CONFIG_DUMP].sval, wf_strbuf_cstr(&why));
    } else if (fl[F_POD].sval) {
        rc = wf_authz_dump_pod(pilot, fl[F_POD].sval, fl[F_NAMESPACE].sval, &d, pod, &err);
    }
    if (rc == 0 && *asked) {
        rc = wf_authz_from_dump(&d, t, &warn, &err);
        /* route timeouts: optional (a dump of listeners only still explains RBAC) */
        json_t *sec = wf_envoy_dump_section(&d, WF_DUMP_T_ROUTES, NULL, &why);
        json_t *rcs = json_array();
        if (rc == 0 && sec && rcs &&
            (wf_envoy_dump_items(&d, sec, 0, "dynamic_route_configs", "route_config", rcs, &why) ||
             wf_envoy_dump_items(&d, sec, 0, "static_route_configs", "route_config", rcs, &why) ||
             wf_lx_routes_add(rt, rcs)))
            wf_strbuf_printf(&warn, "warning: route timeouts not read: %s\n",
                             why.len ? wf_strbuf_cstr(&why) : "out of memory");
        json_decref(rcs);
    }
    if (*asked && d.root)
        wf_envoy_dump_free(&d);
    fwrite(wf_strbuf_cstr(&warn), 1, warn.len, stderr);
    if (rc != 0) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        memset(t, 0, sizeof *t);
        free(*pod);
        *pod = NULL;
    }
    wf_strbuf_free(&warn);
    wf_strbuf_free(&err);
    wf_strbuf_free(&why);
    return rc;
}

static int explain_cmd(wf_flag *fl, char **pos, size_t npos)
{
    const char *out = fl[F_OUT].sval ? fl[F_OUT].sval : "text";
    if (strcmp(out, "text") != 0 && strcmp(out, "json") != 0) {
        fprintf(stderr, "Error: output format \"%s\" not supported\n", out);
        return WF_EXIT_USAGE;
    }
    if (npos > 2) {
        fprintf(stderr, "Error: log explain takes at most one FILE\n");
        return WF_EXIT_USAGE;
    }
    const char *src = npos == 2 ? pos[1] : "-";
    wf_strbuf err = WF_STRBUF_INIT;
    formats f = {0};
    if (fl[F_FORMAT].sval)
        f.user = wf_lx_format_new(fl[F_FORMAT].sval, &err);
    else {
        f.istio = wf_lx_format_new(WF_ISTIO_TEXT_FORMAT, &err);
        f.envoy = f.istio ? wf_lx_format_new(WF_LX_ENVOY_DEFAULT_FORMAT, &err) : NULL;
    }
    FILE *in = NULL;
    int rc = WF_EXIT_ERROR;
    wf_authz_table authz = {0};
    wf_lx_routes routes = {0};
    char *authz_pod = NULL;
    bool authz_asked = false;
    if (!f.user && !f.envoy) {
        fprintf(stderr, "Error: %s\n", wf_strbuf_cstr(&err));
        rc = WF_EXIT_USAGE;
    } else if (load_dump(fl, &authz, &routes, &authz_pod, &authz_asked) != 0) {
        rc = WF_EXIT_ERROR;
    } else if (!(in = strcmp(src, "-") == 0 ? stdin : fopen(src, "r")) || is_dir(in)) {
        fprintf(stderr, "Error: cannot read %s: %s\n", src,
                in ? strerror(EISDIR) : strerror(errno));
    } else {
        run_state s = {
            .json = strcmp(out, "json") == 0,
            .summary = fl[F_SUMMARY].bval,
            .jfail = json_array(),
            .jpass = json_array(),
            .pair_line = calloc(2 * wf_lx_pair_count() + 1, sizeof(size_t)),
            .rbac = {authz_asked ? &authz : NULL, authz_pod, authz_asked ? &routes : NULL}};
        wf_arena_init(&s.arena);
        if (!s.jfail || !s.jpass || !s.pair_line || read_all(in, &f, &s))
            fprintf(stderr, "Error: out of memory\n");
        else
            rc = finish(&s, strcmp(src, "-") == 0 ? "stdin" : src);
        for (size_t i = 0; i < s.ng; i++)
            for (int k = 0; k < 4; k++)
                free(s.g[i].key[k]);
        free(s.g);
        wf_arena_destroy(&s.arena);
        wf_explain_items_free(&s.all);
        json_decref(s.jfail);
        json_decref(s.jpass);
        free(s.pair_line);
    }
    if (in && in != stdin)
        fclose(in);
    if (authz_asked)
        wf_authz_table_free(&authz);
    wf_lx_routes_free(&routes);
    free(authz_pod);
    wf_lx_format_free(f.user);
    wf_lx_format_free(f.istio);
    wf_lx_format_free(f.envoy);
    wf_strbuf_free(&err);
    return rc;
}

int wf_cmd_log(int argc, char **argv)
{
    wf_flag fl[F_COUNT];
    init_flags(fl);
    char **pos = NULL;
    size_t npos = 0;
    int rc;
    if (wf_flags_parse_cmd("log explain", fl, F_COUNT, argc, argv, &pos, &npos)) {
        rc = WF_EXIT_USAGE;
    } else if (fl[F_HELP].bval) {
        usage(fl);
        rc = WF_EXIT_OK;
    } else if (npos == 0) {
        rc = wf_usage_error("log", "a subcommand is required: explain");
    } else if (strcmp(pos[0], "explain") != 0) {
        fprintf(stderr, "Error: unknown command \"%s\" for \"weftctl log\"\n", pos[0]);
        rc = WF_EXIT_USAGE;
    } else {
        rc = explain_cmd(fl, pos, npos);
    }
    free(pos);
    wf_flags_free(fl, F_COUNT);
    return rc;
}
