/*
 * rds_policy.c - per-route policies of a VirtualService HTTP route as Istio translates them
 * (see rds.h): retries (route/retry/retry.go ConvertPolicy), fault (TranslateFault), mirror
 * (TranslateRequestMirrorPolicy, mirrorPercent) and header operations
 * (translateHeadersOperations).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grpc_codes.h"
#include "core/gofmt.h"
#include "model/validate.h"
#include "pilot/cds_internal.h"
#include "pilot/rds_internal.h"

#define FAULT_TYPE "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"

/* Duration at key of map m as protobuf JSON text; NULL when absent or unparsable. */
json_t *rds_duration_at(const wf_node *m, const char *key)
{
    const char *s = wf_map_str(m, key);
    int64_t ns = 0;
    if (!s || wf_go_duration(s, &ns, NULL) != 0 || ns < 0)
        return NULL;
    return cds_duration(ns);
}

/* Go's http.StatusText(code) != "". */
static bool known_status(long c)
{
    static const short codes[] = {100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208,
                                  226, 300, 301, 302, 303, 304, 305, 307, 308, 400, 401, 402, 403,
                                  404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416,
                                  417, 418, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451, 500,
                                  501, 502, 503, 504, 505, 506, 507, 508, 510, 511};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i] == c)
            return true;
    return false;
}

/* A trimmed token that is all digits and a known HTTP status: its value, else -1. */
static long status_token(const char *t, size_t len)
{
    if (len == 0 || len > 3)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        v = v * 10 + (t[i] - '0');
    }
    return known_status(v) ? v : -1;
}

/* parseRetryOn: non-code tokens joined into retry_on; codes into retriable_status_codes. */
static int set_retry_on(json_t *p, const char *list)
{
    json_t *codes = json_array();
    char *joined = calloc(1, strlen(list) + sizeof ",retriable-status-codes");
    if (!codes || !joined)
        goto fail;
    for (const char *t = list; *t;) {
        size_t len = strcspn(t, ",");
        const char *next = t[len] ? t + len + 1 : t + len;
        while (len && (*t == ' ' || *t == '\t'))
            t++, len--;
        while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
            len--;
        long code = status_token(t, len);
        if (code > 0 && json_array_append_new(codes, json_integer(code)) != 0)
            goto fail;
        if (code < 0 && len)
            sprintf(joined + strlen(joined), "%s%.*s", *joined ? "," : "", (int)len, t);
        t = next;
    }
    if (json_array_size(codes) && !strstr(joined, "retriable-status-codes"))
        strcat(joined, ",retriable-status-codes");
    if (json_object_set_new(p, "retry_on", json_string(joined)) != 0 ||
        (json_array_size(codes) && json_object_set(p, "retriable_status_codes", codes) != 0))
        goto fail;
    free(joined);
    json_decref(codes);
    return 0;
fail:
    free(joined);
    json_decref(codes);
    return -1;
}

/* Overrides of a `retries` block on the default policy p. */
static int retry_overrides(json_t *p, const wf_node *in, int64_t attempts)
{
    const char *on = wf_map_str(in, "retryOn");
    bool keep_hosts = true;
    if (json_object_set_new(p, "num_retries", json_integer(attempts)) != 0 ||
        (on && *on && set_retry_on(p, on) != 0))
        return -1;
    json_t *ptt = rds_duration_at(in, "perTryTimeout");
    if (ptt && json_object_set_new(p, "per_try_timeout", ptt) != 0)
        return -1;
    if (wf_node_bool(wf_map_get(in, "retryIgnorePreviousHosts"), &keep_hosts) && !keep_hosts)
        json_object_del(p, "retry_host_predicate");
    json_t *backoff = rds_duration_at(in, "backoff");
    if (backoff &&
        json_object_set_new(p, "retry_back_off", json_pack("{s:o}", "base_interval", backoff)) != 0)
        return -1;
    return 0;
}

int rds_retry_policy(const wf_node *in, json_t **out)
{
    *out = NULL;
    int64_t attempts = 0;
    if (in && (!wf_node_int(wf_map_get(in, "attempts"), &attempts) || attempts <= 0))
        return 0; /* explicitly disabled */
    json_t *p = rds_default_retry_policy();
    if (!p)
        return -1;
    if (in && retry_overrides(p, in, attempts) != 0) {
        json_decref(p);
        return -1;
    }
    *out = p;
    return 0;
}

/* Istio's translatePercentToFractionalPercent / translateIntegerToFractionalPercent. */
static json_t *percent(const wf_node *pct, const wf_node *legacy_int)
{
    const char *v = wf_map_str(pct, "value");
    if (pct) {
        double d = v ? strtod(v, NULL) : 0;
        return json_pack("{s:I,s:s}", "numerator", (json_int_t)(uint32_t)(d * 10000), "denominator",
                         "MILLION");
    }
    int64_t n = 0;
    if (!wf_node_int(legacy_int, &n) || n <= 0)
        return json_object(); /* numerator 0, HUNDRED: both defaults */
    return json_pack("{s:I}", "numerator", (json_int_t)n);
}

static int fault_delay(json_t *f, const wf_node *d)
{
    json_t *fixed = rds_duration_at(d, "fixedDelay");
    if (!fixed)
        return 0; /* exponentialDelay is not translated by Istio either */
    return json_object_set_new(
        f, "delay",
        json_pack("{s:o,s:o}", "fixed_delay", fixed, "percentage",
                  percent(wf_map_get(d, "percentage"), wf_map_get(d, "percent"))));
}

/* Istio's translateFault abort: httpStatus, or grpcStatus by name (grpc.SupportedGRPCStatus);
 * any other error type (http2Error) skips the abort, as istiod does. */
static int fault_abort(json_t *f, const wf_node *a)
{
    int64_t status = 0;
    int grpc = wf_grpc_code_of(wf_map_str(a, "grpcStatus"));
    json_t *ab;
    if (wf_node_int(wf_map_get(a, "httpStatus"), &status))
        ab = json_pack("{s:I}", "http_status", (json_int_t)status);
    else if (grpc >= 0)
        ab = json_pack("{s:i}", "grpc_status", grpc);
    else
        return 0;
    const wf_node *pct = wf_map_get(a, "percentage");
    if (ab && pct && json_object_set_new(ab, "percentage", percent(pct, NULL)) != 0) {
        json_decref(ab);
        return -1;
    }
    return json_object_set_new(f, "abort", ab);
}

int rds_fault(const wf_node *in, json_t **out)
{
    *out = NULL;
    if (!in)
        return 0;
    json_t *f = json_pack("{s:s}", "@type", FAULT_TYPE);
    if (!f || fault_delay(f, wf_map_get(in, "delay")) != 0 ||
        fault_abort(f, wf_map_get(in, "abort")) != 0) {
        json_decref(f);
        return -1;
    }
    if (json_object_size(f) == 1) { /* neither delay nor abort */
        json_decref(f);
        return 0;
    }
    *out = json_pack("{s:o}", "envoy.filters.http.fault", f);
    return *out ? 0 : -1;
}

/* mirrorPercent(): the runtime_fraction, or NULL (no mirroring) into *out. */
static int mirror_fraction(const wf_node *route, json_t **out)
{
    const wf_node *mp = wf_map_get(route, "mirrorPercentage");
    const wf_node *legacy = wf_map_get(route, "mirrorPercent");
    int64_t n = 0;
    *out = NULL;
    if (mp) {
        const char *v = wf_map_str(mp, "value");
        if (!v || strtod(v, NULL) <= 0)
            return 0;
        *out = json_pack("{s:o}", "default_value", percent(mp, NULL));
    } else if (legacy) {
        if (!wf_node_int(legacy, &n) || n <= 0)
            return 0;
        *out = json_pack("{s:{s:I}}", "default_value", "numerator", (json_int_t)n);
    } else {
        *out = json_pack("{s:{s:i}}", "default_value", "numerator", 100);
    }
    return *out ? 0 : -1;
}

int rds_mirror_policies(const wf_node *route, const char *cluster, json_t **out)
{
    json_t *frac = NULL;
    *out = NULL;
    if (mirror_fraction(route, &frac) != 0)
        return -1;
    if (!frac)
        return 0;
    *out = json_pack("[{s:s,s:o,s:b}]", "cluster", cluster, "runtime_fraction", frac,
                     "trace_sampled", 0);
    return *out ? 0 : -1;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp((*(const wf_map_entry *const *)a)->key, (*(const wf_map_entry *const *)b)->key);
}

/* translateAppendHeaders: the map's entries sorted by key; ":"-prefixed and Host fields are
 * no header operation (the proxy refuses them), a Host or :authority value goes to
 * *authority (model/validate.h). */
static int append_headers(json_t *arr, const wf_node *map, bool append, const char **authority)
{
    if (!map || map->type != WF_NODE_MAP || map->len == 0)
        return 0;
    const wf_map_entry **e = calloc(map->len, sizeof *e);
    if (!e)
        return -1;
    for (size_t i = 0; i < map->len; i++)
        e[i] = &map->u.entries[i];
    qsort(e, map->len, sizeof *e, cmp_entry);
    int rc = 0;
    for (size_t i = 0; i < map->len && rc == 0; i++) {
        const char *v = wf_node_str(e[i]->value);
        if (wf_header_is_authority(e[i]->key) && authority)
            *authority = v;
        if (wf_header_is_internal(e[i]->key))
            continue;
        json_t *h = json_pack("{s:{s:s,s:s}}", "header", "key", e[i]->key, "value", v ? v : "");
        if (h && !append &&
            json_object_set_new(h, "append_action", json_string("OVERWRITE_IF_EXISTS_OR_ADD")))
            rc = -1;
        if (json_array_append_new(arr, h) != 0)
            rc = -1;
    }
    free(e);
    return rc;
}

static int remove_headers(json_t *arr, const wf_node *seq)
{
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const char *s = wf_node_str(wf_seq_at(seq, i));
        if (s && !wf_header_is_internal(s) && json_array_append_new(arr, json_string(s)) != 0)
            return -1;
    }
    return 0;
}

/* Set key to arr when it is not empty; arr is consumed. */
static int set_nonempty(json_t *o, const char *key, json_t *arr)
{
    if (!arr)
        return -1;
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        return 0;
    }
    return json_object_set_new(o, key, arr);
}

int rds_header_ops(json_t *route, const wf_node *headers)
{
    static const char *const dirs[] = {"request", "response"};
    json_t *add[2], *rm[2];
    const char *authority = NULL;
    int rc = 0;
    for (int d = 0; d < 2; d++) {
        const wf_node *op = wf_map_get(headers, dirs[d]);
        const char **auth = d == 0 ? &authority : NULL;
        add[d] = json_array();
        rm[d] = json_array();
        if (!add[d] || !rm[d] || append_headers(add[d], wf_map_get(op, "set"), false, auth) != 0 ||
            append_headers(add[d], wf_map_get(op, "add"), true, auth) != 0 ||
            remove_headers(rm[d], wf_map_get(op, "remove")) != 0)
            rc = -1;
    }
    /* a request Host / :authority set or add rewrites the route's Host, as istiod does */
    json_t *action = json_object_get(route, "route");
    if (authority && *authority && action &&
        json_object_set_new(action, "host_rewrite_literal", json_string(authority)) != 0)
        rc = -1;
    /* Envoy's field order: request add, response add, response remove, request remove. */
    if (set_nonempty(route, "request_headers_to_add", add[0]) != 0)
        rc = -1;
    if (set_nonempty(route, "response_headers_to_add", add[1]) != 0)
        rc = -1;
    if (set_nonempty(route, "response_headers_to_remove", rm[1]) != 0)
        rc = -1;
    if (set_nonempty(route, "request_headers_to_remove", rm[0]) != 0)
        rc = -1;
    return rc;
}
