/*
 * explain.c - the explanation of one failed request (explain.h): the "failed" rule, the
 * items `weftctl log explain` prints under a request, and their four-string summary.
 */
#include "explain/explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_capture.h"

const char WF_EXPLAIN_NOTHING_FLAGGED[] =
    "No response flags and no response code details: the proxy flagged nothing, so the status "
    "most likely came from the upstream application; check its logs (log "
    "%RESPONSE_CODE_DETAILS% to be sure).";

void wf_lx_record_free(wf_lx_record *r)
{
    char **s[] = {&r->flags,
                  &r->details,
                  &r->conn_details,
                  &r->tfr,
                  &r->dtfr,
                  &r->cluster,
                  &r->route,
                  &r->host,
                  &r->method,
                  &r->path,
                  &r->authority,
                  &r->start_time,
                  &r->request_id,
                  &r->duration,
                  &r->upstream_service_time,
                  &r->protocol,
                  &r->upstream_protocol,
                  &r->user_agent,
                  &r->content_type,
                  &r->grpc_status,
                  &r->grpc_timeout,
                  &r->bytes_received,
                  &r->bytes_sent,
                  &r->sni,
                  &r->downstream_local};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        free(*s[i]);
        *s[i] = NULL;
    }
}

/* ---- the "failed" rule ----------------------------------------------------------------- */

static bool grpc_ok(const char *s)
{
    return strcmp(s, "0") == 0 || strcmp(s, "OK") == 0 || strcmp(s, "Ok") == 0;
}

static bool present(const char *s)
{
    return s && *s && strcmp(s, "-") != 0;
}

/* The rule for an HTTP request (explain.h). */
static bool http_failed(bool flagged, int code, const char *details, const char *grpc)
{
    if (flagged)
        return true;
    /* a denial answered to a gRPC request logs the gRPC reply's 200, and RBAC sets no flag */
    if (details && strncmp(details, "rbac_access_denied", 18) == 0)
        return true;
    return code == 0 || code >= 400 || (present(grpc) && !grpc_ok(grpc));
}

bool wf_explain_input_failed(const wf_explain_input *in)
{
    return http_failed(present(in->response_flags), in->response_code, in->response_code_details,
                       in->grpc_status);
}

bool wf_lx_failed(const wf_lx_record *r)
{
    if (r->flags && *r->flags)
        return true;
    if (!r->method && !r->path && !r->protocol && r->code <= 0 && r->cluster)
        return r->conn_details != NULL; /* a TCP connection's line */
    return http_failed(false, r->code, r->details, r->grpc_status);
}

/* ---- items ----------------------------------------------------------------------------- */

int wf_explain_items_add(wf_explain_items *l, const char *kind, const char *v, size_t len,
                         const wf_lx_entry *e)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].kind, kind) == 0 && strlen(l->v[i].value) == len &&
            strncmp(l->v[i].value, v, len) == 0)
            return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        wf_explain_item *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        l->v = nv;
        l->cap = cap;
    }
    char *s = strndup(v, len);
    if (!s)
        return -1;
    l->v[l->n++] = (wf_explain_item){kind, s, e, NULL};
    return 0;
}

void wf_explain_items_free(wf_explain_items *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].value);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* A transport failure reason (kind "transport_failure" for the upstream's, or
 * "downstream_transport_failure"), explained by its TLS signature when it has one. */
static int add_transport(wf_explain_items *l, const char *kind, const char *v, size_t len)
{
    char *z = strndup(v, len);
    if (!z)
        return -1;
    int rc = wf_explain_items_add(l, kind, v, len, wf_lx_find_tls(z));
    free(z);
    return rc;
}

/* upstream_reset_*{reason|transport failure}: the reason and the transport part (older
 * Envoy: {reason,transport failure}). */
static int add_reset_parts(wf_explain_items *l, const char *details, const char *tfr)
{
    const char *open = strchr(details, '{'), *close = open ? strrchr(open, '}') : NULL;
    if (!open || !close)
        return 0;
    const char *r = open + 1;
    size_t rl = strcspn(r, "|,");
    if (rl > (size_t)(close - r))
        rl = (size_t)(close - r);
    const char *bar = r + rl < close ? r + rl : NULL;
    char reason[128];
    snprintf(reason, sizeof reason, "%.*s", (int)(rl < sizeof reason ? rl : sizeof reason - 1), r);
    if (wf_explain_items_add(l, "reset_reason", r, rl, wf_lx_find_reset(reason)))
        return -1;
    if (tfr) /* %UPSTREAM_TRANSPORT_FAILURE_REASON% is the same text */
        return add_transport(l, "transport_failure", tfr, strlen(tfr));
    if (bar && close > bar + 1)
        return add_transport(l, "transport_failure", bar + 1, (size_t)(close - bar - 1));
    return 0;
}

/* blocked: the line is block_all's (its direct_response has its own entry). */
static int add_details(wf_explain_items *l, const char *d, const char *tfr, bool blocked)
{
    if (!d)
        return 0;
    const wf_lx_entry *e = blocked && strcmp(d, "direct_response") == 0
                               ? wf_lx_capture_blocked_direct_response()
                               : wf_lx_find_detail(d);
    if (wf_explain_items_add(l, "details", d, strlen(d), e))
        return -1;
    return strncmp(d, "upstream_reset_", 15) == 0 ? add_reset_parts(l, d, tfr) : 0;
}

typedef struct hook {
    wf_explain_details_hook fn;
    void *ctx;
} hook;

static int run_hook(const hook *h, const char *details, wf_explain_items *out)
{
    return h->fn ? h->fn(h->ctx, details, out) : 0;
}

/* The flag, details, reset, transport and hook items of one record. */
static int explain_tables(const wf_lx_record *r, const hook *h, wf_explain_items *out)
{
    for (const char *p = r->flags; p && *p;) {
        size_t len = strcspn(p, ",");
        char flag[32];
        snprintf(flag, sizeof flag, "%.*s", (int)(len < sizeof flag ? len : sizeof flag - 1), p);
        const wf_lx_entry *e = wf_lx_find_flag_in_context(flag, r->details);
        if (strcmp(flag, "UH") == 0 && wf_lx_capture_of(r) == WF_LX_CAP_BLACKHOLE)
            e = wf_lx_capture_uh_blackhole();
        if (len && wf_explain_items_add(out, "flag", p, len, e ? e : wf_lx_find_flag(flag)))
            return -1;
        p += len + (p[len] == ',');
    }
    if (add_details(out, r->details, r->tfr, wf_lx_capture_of(r) == WF_LX_CAP_BLOCKED) ||
        run_hook(h, r->details, out))
        return -1;
    /* a transport failure the details do not carry (a TCP proxy's line, other details) */
    bool have_tfr = false;
    for (size_t i = 0; i < out->n; i++)
        have_tfr = have_tfr || strcmp(out->v[i].kind, "transport_failure") == 0;
    if (r->tfr && !have_tfr && add_transport(out, "transport_failure", r->tfr, strlen(r->tfr)))
        return -1;
    if (r->dtfr && add_transport(out, "downstream_transport_failure", r->dtfr, strlen(r->dtfr)))
        return -1;
    if (r->conn_details && (!r->details || strcmp(r->conn_details, r->details) != 0))
        return add_details(out, r->conn_details, NULL, false) || run_hook(h, r->conn_details, out)
                   ? -1
                   : 0;
    const char *why;
    const wf_lx_entry *e = wf_lx_infer_details(r, &why);
    if (e) {
        if (wf_explain_items_add(out, "details", e->key, strlen(e->key), e))
            return -1;
        out->v[out->n - 1].inferred = why;
    }
    return 0;
}

/* The HTTP/2, gRPC and TCP readings (explain_proto.h) and the capture reading, one item
 * each. */
static int add_proto(wf_explain_items *l, const wf_lx_record *r, const wf_lx_routes *rt)
{
    wf_strbuf b[4] = {WF_STRBUF_INIT, WF_STRBUF_INIT, WF_STRBUF_INIT, WF_STRBUF_INIT};
    static const char *const kinds[4] = {"grpc", "protocol", "tcp", "capture"};
    int ret = wf_lx_proto_read(r, rt, &b[0], &b[1], &b[2]);
    if (ret == 0)
        ret = wf_lx_capture_read(r, &b[3]);
    for (int i = 0; i < 4; i++) {
        if (ret == 0 && b[i].len)
            ret = wf_explain_items_add(l, kinds[i], wf_strbuf_cstr(&b[i]), b[i].len, NULL);
        wf_strbuf_free(&b[i]);
    }
    return ret;
}

int wf_explain_record(const wf_lx_record *r, const wf_lx_routes *rt, wf_explain_details_hook fn,
                      void *ctx, wf_explain_items *out)
{
    hook h = {fn, ctx};
    return explain_tables(r, &h, out) ? -1 : add_proto(out, r, rt);
}

/* ---- printing -------------------------------------------------------------------------- */

bool wf_explain_is_text_kind(const char *kind)
{
    return strcmp(kind, "authorization") == 0 || strcmp(kind, "grpc") == 0 ||
           strcmp(kind, "protocol") == 0 || strcmp(kind, "tcp") == 0 ||
           strcmp(kind, "capture") == 0;
}

static void print_text(const wf_explain_item *it, int ind, wf_strbuf *f)
{
    const char *p = it->value;
    const char *label = strcmp(it->kind, "grpc") == 0  ? "gRPC"
                        : strcmp(it->kind, "tcp") == 0 ? "TCP"
                                                       : it->kind;
    wf_strbuf_printf(f, "%*s%s: %.*s\n", ind, "", label, (int)strcspn(p, "\n"), p);
    for (p = strchr(p, '\n'); p; p = strchr(p + 1, '\n'))
        wf_strbuf_printf(f, "%*s%.*s\n", ind + 3, "", (int)strcspn(p + 1, "\n"), p + 1);
}

static void print_entry_tail(const wf_lx_entry *e, int ind, wf_strbuf *f)
{
    wf_strbuf_printf(f, "%*sLikely causes: %s\n", ind + 3, "", e->causes);
    wf_strbuf_printf(f, "%*sNext: %s\n", ind + 3, "", e->next);
}

void wf_explain_item_print(const wf_explain_item *it, int ind, wf_strbuf *f)
{
    if (wf_explain_is_text_kind(it->kind)) {
        print_text(it, ind, f);
        return;
    }
    bool down = strcmp(it->kind, "downstream_transport_failure") == 0;
    if (down || strcmp(it->kind, "transport_failure") == 0) {
        wf_strbuf_printf(f, "%*s%stransport failure reason: %s\n", ind, "",
                         down ? "downstream " : "", it->value);
        if (it->e) {
            wf_strbuf_printf(f, "%*s%s\n", ind + 3, "", it->e->meaning);
            print_entry_tail(it->e, ind, f);
        }
        return;
    }
    const char *what = strcmp(it->kind, "flag") == 0      ? "response flag"
                       : strcmp(it->kind, "details") == 0 ? "response code details"
                                                          : "reset reason";
    if (!it->e) {
        wf_strbuf_printf(f,
                         "%*s%s: unknown %s (weft's table does not describe it; see "
                         "docs/log-explain.md)\n",
                         ind, "", it->value, what);
        return;
    }
    if (it->inferred)
        wf_strbuf_printf(f, "%*s%s (inferred: %s): %s\n", ind, "", it->value, it->inferred,
                         it->e->meaning);
    else if (*it->e->name)
        wf_strbuf_printf(f, "%*s%s (%s): %s\n", ind, "", it->value, it->e->name, it->e->meaning);
    else if (strcmp(it->kind, "reset_reason") == 0)
        wf_strbuf_printf(f, "%*sreset reason %s: %s\n", ind, "", it->value, it->e->meaning);
    else
        wf_strbuf_printf(f, "%*s%s: %s\n", ind, "", it->value, it->e->meaning);
    if (strcmp(it->e->causes, "See the reset reason below.") != 0)
        print_entry_tail(it->e, ind, f);
}

json_t *wf_explain_item_json(const wf_explain_item *it)
{
    bool transport =
        strstr(it->kind, "transport_failure") != NULL || wf_explain_is_text_kind(it->kind);
    json_t *o = json_pack("{s:s, s:s, s:b}", "kind", it->kind, "value", it->value, "known",
                          it->e != NULL || transport);
    if (o && it->e) {
        if (*it->e->name)
            json_object_set_new(o, "name", json_string(it->e->name));
        json_object_set_new(o, "status", json_string(it->e->status));
        json_object_set_new(o, "meaning", json_string(it->e->meaning));
        json_object_set_new(o, "causes", json_string(it->e->causes));
        json_object_set_new(o, "next", json_string(it->e->next));
    }
    if (o && it->inferred)
        json_object_set_new(o, "inferred_from", json_string(it->inferred));
    return o;
}

/* ---- one request in four strings ------------------------------------------------------- */

/* A present value of in, as a record's (mutable-typed, never written) field. */
static char *borrow(const char *s)
{
    return present(s) ? (char *)s : NULL;
}

/* The record the fields of in describe; its strings are in's (never freed). */
static wf_lx_record record_of(const wf_explain_input *in)
{
    return (wf_lx_record){
        .code = in->response_code,
        .flags = borrow(in->response_flags),
        .details = borrow(in->response_code_details),
        .tfr = borrow(in->upstream_transport_failure_reason),
        .route = borrow(in->route_name),
        .cluster = borrow(in->upstream_cluster),
        .grpc_status = borrow(in->grpc_status),
        .host = borrow(in->upstream_host),
        .method = borrow(in->method),
        .authority = borrow(in->authority),
        .path = borrow(in->path),
        .protocol = borrow(in->protocol),
    };
}

/* The item whose meaning, causes and next stand for the request (explain.h); NULL when no
 * item has a table entry. */
static const wf_explain_item *primary(const wf_explain_items *its)
{
    for (size_t i = 0; i < its->n; i++)
        if (its->v[i].e && strcmp(its->v[i].kind, "transport_failure") == 0)
            return &its->v[i];
    for (size_t i = 0; i < its->n; i++)
        if (its->v[i].e && strncmp(its->v[i].e->causes, "See ", 4) != 0)
            return &its->v[i];
    return NULL;
}

/* The first line of what s holds, without its newline; a new string. */
static char *first_line(const char *s)
{
    return strndup(s, strcspn(s, "\n"));
}

static int fill_out(const wf_explain_items *its, wf_explain_out *out)
{
    wf_strbuf text = WF_STRBUF_INIT;
    for (size_t i = 0; i < its->n; i++)
        wf_explain_item_print(&its->v[i], 0, &text);
    if (!its->n)
        wf_strbuf_printf(&text, "%s\n", WF_EXPLAIN_NOTHING_FLAGGED);
    if (wf_strbuf_failed(&text)) {
        wf_strbuf_free(&text);
        return -1;
    }
    const char *t = wf_strbuf_cstr(&text);
    const wf_explain_item *p = primary(its);
    out->summary = first_line(t);
    out->meaning = p ? strdup(p->e->meaning) : first_line(t);
    out->causes = strdup(p ? p->e->causes : "");
    out->next = strdup(p ? p->e->next : "");
    size_t len = text.len;
    out->text = wf_strbuf_take(&text);
    if (out->text && len && out->text[len - 1] == '\n')
        out->text[len - 1] = '\0';
    wf_strbuf_free(&text);
    return out->summary && out->meaning && out->causes && out->next && out->text ? 0 : -1;
}

int wf_explain_failed(const wf_explain_input *in, wf_explain_out *out)
{
    memset(out, 0, sizeof *out);
    wf_lx_record r = record_of(in);
    wf_explain_items its = {0};
    int rc = wf_explain_record(&r, NULL, NULL, NULL, &its);
    if (rc == 0)
        rc = fill_out(&its, out);
    wf_explain_items_free(&its);
    if (rc)
        wf_explain_out_free(out);
    return rc;
}

void wf_explain_out_free(wf_explain_out *out)
{
    free(out->summary);
    free(out->meaning);
    free(out->causes);
    free(out->next);
    free(out->text);
    memset(out, 0, sizeof *out);
}

json_t *wf_explain_failed_json(const wf_explain_input *in)
{
    wf_explain_out x;
    if (wf_explain_failed(in, &x))
        return NULL;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "summary", x.summary, "meaning", x.meaning,
                          "causes", x.causes, "next", x.next, "text", x.text);
    wf_explain_out_free(&x);
    return o;
}
