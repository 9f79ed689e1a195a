/*
 * validate_values.c - durations, string matches, headers, exportTo, selectors, destinations.
 *
 * Follows istio/istio pkg/config/validation/validation.go (validateStringMatch*,
 * ValidateHTTPHeader*, validateExportTo, validateWorkloadSelector,
 * ValidateAlphaWorkloadSelector, validateOneOfSelectorType, validatePolicyTargetReference,
 * validateGatewayNames, validateDestination, validateSubsetName, validatePercentage),
 * header_value_validator.go, agent.ValidateDuration, pkg/config/visibility and Go's
 * time.ParseDuration (the JSON decoding of google.protobuf.Duration Istio uses).
 */
#include "model/validate_internal.h"

#include "core/gofmt.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- durations ---- */

bool vc_parse_duration(vc *c, const char *orig, int64_t *out, const char **msg)
{
    wf_strbuf err = WF_STRBUF_INIT;
    bool ok = wf_go_duration(orig, out, &err) == 0;
    if (!ok)
        *msg = vc_fmt(c, "%s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return ok;
}

void vc_duration(vc *c, const wf_node *m, const char *key)
{
    const wf_node *n = vc_get(m, key);
    if (!n)
        return;
    int64_t ns;
    const char *msg;
    if (!vc_parse_duration(c, vc_nstr(n), &ns, &msg))
        return; /* reported by the schema walk */
    size_t mark = vc_push(c, key);
    if (ns < 1000000)
        vc_err(c, n, "duration must be greater than 1ms");
    else if (ns % 1000000 != 0)
        vc_err(c, n, "only durations to ms precision are supported");
    vc_pop(c, mark);
}

/* ---- regexes and string matches ---- */

void vc_string_regexp(vc *c, const wf_node *at, const char *re, const char *where)
{
    if (strlen(re) > 1024) {
        vc_err(c, at, "%s: regex is too large, max length allowed is 1024", vc_q(c, where));
        return;
    }
    const char *e = vc_regex_error(c, re);
    if (e)
        vc_err(c, at,
               "%s: %s; Istio uses RE2 style regex-based match "
               "(https://github.com/google/re2/wiki/Syntax)",
               vc_q(c, where), e);
}

void vc_string_match(vc *c, const wf_node *sm, const char *where, bool check_prefix)
{
    if (!sm)
        return;
    const wf_node *prefix = wf_map_get(sm, "prefix");
    const wf_node *regex = wf_map_get(sm, "regex");
    if (check_prefix && prefix && prefix->type != WF_NODE_NULL && !*vc_nstr(prefix)) {
        size_t mark = vc_push(c, "prefix");
        vc_err(c, prefix, "%s: prefix string match should not be empty", vc_q(c, where));
        vc_pop(c, mark);
        return;
    }
    if (regex && regex->type != WF_NODE_NULL) {
        const char *re = vc_nstr(regex);
        size_t mark = vc_push(c, "regex");
        if (!*re)
            vc_err(c, regex, "%s: regex string match should not be empty", vc_q(c, where));
        else
            vc_string_regexp(c, regex, re, where);
        vc_pop(c, mark);
    }
}

/* ---- headers ---- */

static bool header_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
            return false;
    }
    return true;
}

void vc_http_header_name(vc *c, const wf_node *at, const char *name)
{
    if (!*name)
        vc_err(c, at, "header name cannot be empty");
    else if (!header_name_ok(name))
        vc_err(c, at, "header name %s is not a valid header name", name);
}

bool wf_header_is_internal(const char *k)
{
    return k[0] == ':' || strcasecmp(k, "host") == 0;
}

bool wf_header_is_authority(const char *k)
{
    return strcasecmp(k, ":authority") == 0 || strcasecmp(k, "host") == 0;
}

/* header_value_validator.go: Envoy's %VAR% header formatter syntax. */
static const char *header_value_syntax(vc *c, const char *v)
{
    enum { LIT, VARNAME, EXP_ARRAY, EXP_STRING, STR, EXP_DELIM, EXP_ARGS_END, EXP_VAR_END };
    int st = LIT;
    size_t n = strlen(v);
    for (size_t pos = 0; pos < n; pos++) {
        char ch = v[pos];
        bool next = pos + 1 < n;
        switch (st) {
        case LIT:
            if (ch != '%')
                break;
            if (!next)
                return "invalid header configuration. Un-escaped %";
            if (v[pos + 1] == '%') {
                pos++;
                break;
            }
            st = VARNAME;
            break;
        case VARNAME:
            if (ch == '%')
                st = LIT;
            else if (ch == '(')
                st = EXP_ARRAY;
            break;
        case EXP_ARRAY:
            if (ch == '[')
                st = EXP_STRING;
            else if (ch != ' ')
                st = STR;
            break;
        case EXP_DELIM:
            if (ch == ',')
                st = EXP_STRING;
            else if (ch == ']')
                st = EXP_ARGS_END;
            else if (ch != ' ')
                return "invalid header configuration. Expecting ',', ']', or whitespace";
            break;
        case EXP_STRING:
            if (ch == '"')
                st = STR;
            else if (ch != ' ')
                return "invalid header configuration. Expecting '\"'";
            break;
        case STR:
            if (ch == '\\') {
                if (!next)
                    return "invalid header configuration. Un-terminated backslash in JSON string";
                pos++;
            } else if (ch == ')') {
                st = EXP_VAR_END;
            } else if (ch == '"') {
                st = EXP_DELIM;
            }
            break;
        case EXP_ARGS_END:
            if (ch == ')')
                st = EXP_VAR_END;
            else if (ch != ' ')
                return "invalid header configuration. Expecting ')' or whitespace after '{}', "
                       "but found '{}'";
            break;
        default: /* EXP_VAR_END */
            if (ch == '%')
                st = LIT;
            else if (ch != ' ')
                return "invalid header configuration. Expecting '%' or whitespace after";
            break;
        }
    }
    if (st != LIT)
        return vc_fmt(c, "invalid header configuration. Un-terminated variable expression '%s'", v);
    return NULL;
}

static void header_value(vc *c, const wf_node *at, const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p <= 0x08) || (*p >= 0x0A && *p <= 0x1F) || *p == 0x7F) {
            vc_err(c, at, "header value configuration %s is invalid", v);
            return;
        }
    }
    const char *e = header_value_syntax(c, v);
    if (e)
        vc_err(c, at, "header value configuration: %s", e);
}

static void header_op_name(vc *c, const wf_node *at, const char *name, bool request_add_set)
{
    if (!*name) {
        vc_err(c, at, "header name cannot be empty");
        return;
    }
    if (request_add_set) {
        if (wf_header_is_internal(name) && !wf_header_is_authority(name))
            vc_err(c, at, "invalid header %s: header cannot have \":\" prefix", vc_q(c, name));
        return;
    }
    if (strcasecmp(name, "host") == 0)
        vc_err(c, at, "invalid header %s: cannot set Host header", vc_q(c, name));
    else if (wf_header_is_internal(name))
        vc_err(c, at, "invalid header %s: header cannot have \":\" prefix", vc_q(c, name));
}

static void header_ops(vc *c, const wf_node *ops, bool request)
{
    static const char *const kv_keys[] = {"add", "set"};
    for (size_t k = 0; k < 2; k++) {
        const wf_node *m = vc_get(ops, kv_keys[k]);
        size_t mk = vc_push(c, kv_keys[k]);
        for (size_t i = 0; m && m->type == WF_NODE_MAP && i < m->len; i++) {
            const wf_map_entry *e = &m->u.entries[i];
            size_t mark = vc_push_key(c, e->key);
            header_op_name(c, e->value, e->key, request);
            header_value(c, e->value, vc_nstr(e->value));
            vc_pop(c, mark);
        }
        vc_pop(c, mk);
    }
    const wf_node *rm = vc_get(ops, "remove");
    size_t mk = vc_push(c, "remove");
    for (size_t i = 0; i < wf_seq_len(rm); i++) {
        size_t mark = vc_push_idx(c, i);
        header_op_name(c, wf_seq_at(rm, i), vc_nstr(wf_seq_at(rm, i)), false);
        vc_pop(c, mark);
    }
    vc_pop(c, mk);
}

void vc_header_operations(vc *c, const wf_node *headers)
{
    if (!headers)
        return;
    size_t mark = vc_push(c, "headers");
    size_t m2 = vc_push(c, "request");
    header_ops(c, vc_get(headers, "request"), true);
    vc_pop(c, m2);
    m2 = vc_push(c, "response");
    header_ops(c, vc_get(headers, "response"), false);
    vc_pop(c, mark);
}

/* ---- exportTo ---- */

static const char *visibility_error(const char *v)
{
    if (!strcmp(v, ".") || !strcmp(v, "*"))
        return NULL;
    if (!strcmp(v, "~"))
        return "exportTo ~ (none) is not allowed for Istio configuration objects";
    if (!vc_is_dns1123_label(v))
        return "only .,*, or a valid DNS 1123 label is allowed as exportTo entry";
    return NULL;
}

static bool set_has(const char **set, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(set[i], k) == 0)
            return true;
    }
    return false;
}

void vc_export_to(vc *c, const wf_node *spec, bool is_se, bool is_dr_with_selector)
{
    const wf_node *seq = vc_get(spec, "exportTo");
    size_t n = wf_seq_len(seq);
    if (n == 0)
        return;
    const char **set = wf_arena_alloc(&c->scratch, n * sizeof(*set));
    if (!set)
        return;
    size_t nset = 0;
    const char *ns = c->r->ns ? c->r->ns : "";
    size_t mark = vc_push(c, "exportTo");
    for (size_t i = 0; i < n; i++) {
        const wf_node *item = wf_seq_at(seq, i);
        const char *e = vc_nstr(item);
        const char *key = strcmp(e, ".") == 0 ? ns : e;
        size_t m2 = vc_push_idx(c, i);
        if (set_has(set, nset, key)) {
            if (strcmp(key, e) != 0)
                vc_err(c, item, "duplicate entries in exportTo: . and current namespace %s", ns);
            else
                vc_err(c, item, "duplicate entries in exportTo for entry %s", e);
        } else if (is_se && strcmp(e, "~") == 0) {
            set[nset++] = key;
        } else {
            const char *err = visibility_error(key);
            if (err)
                vc_err(c, item, "%s", err);
            else
                set[nset++] = key;
        }
        vc_pop(c, m2);
    }
    if (is_dr_with_selector && nset > 0) {
        if (set_has(set, nset, ns)) {
            if (nset > 1)
                vc_err(c, seq,
                       "destination rule with workload selector cannot have multiple "
                       "entries in exportTo");
        } else {
            vc_err(c, seq,
                   "destination rule with workload selector cannot have exportTo beyond "
                   "current namespace");
        }
    }
    if (set_has(set, nset, "*") && n > 1)
        vc_err(c, seq, "cannot have both public (*) and non-public exportTo values for a resource");
    if (set_has(set, nset, "~") && n > 1)
        vc_err(c, seq, "cannot export service entry to no one (~) and someone");
    vc_pop(c, mark);
}

/* ---- selectors and targets ---- */

static void selector_labels(vc *c, const wf_node *labels)
{
    for (size_t i = 0; labels && labels->type == WF_NODE_MAP && i < labels->len; i++) {
        const wf_map_entry *e = &labels->u.entries[i];
        const char *kv = vc_fmt(c, "%s=%s", e->key, vc_nstr(e->value));
        size_t mark = vc_push_key(c, e->key);
        if (!*e->key)
            vc_err(c, e->value, "empty key is not supported in selector: %s", vc_q(c, kv));
        if (strchr(e->key, '*') || strchr(vc_nstr(e->value), '*'))
            vc_err(c, e->value, "wildcard is not supported in selector: %s", vc_q(c, kv));
        vc_pop(c, mark);
    }
}

void vc_workload_selector(vc *c, const wf_node *spec, const char *key)
{
    const wf_node *sel = vc_get(spec, key);
    if (!sel)
        return;
    size_t mark = vc_push(c, key);
    size_t m2 = vc_push(c, "matchLabels");
    selector_labels(c, vc_get(sel, "matchLabels"));
    vc_pop(c, m2);
    if (vc_mlen(sel, "matchLabels") == 0)
        vc_warn(c, sel, "workload selector specified without labels");
    vc_pop(c, mark);
}

bool vc_alpha_workload_selector(vc *c, const wf_node *spec, bool *failed)
{
    const wf_node *sel = vc_get(spec, "workloadSelector");
    if (!sel)
        return false;
    int before = c->errors;
    size_t mark = vc_push(c, "workloadSelector");
    vc_push(c, "labels");
    selector_labels(c, vc_get(sel, "labels"));
    vc_pop(c, mark);
    *failed = c->errors != before;
    return vc_mlen(sel, "labels") == 0;
}

static void target_ref(vc *c, const wf_node *ref)
{
    if (!ref)
        return;
    if (!*vc_str(ref, "name"))
        vc_err(c, ref, "targetRef name must be set");
    if (*vc_str(ref, "namespace"))
        vc_err(c, ref,
               "targetRef namespace must not be set; cross namespace referencing is not "
               "supported");
    const char *group = vc_str(ref, "group");
    const char *kind = vc_str(ref, "kind");
    const char *canon = *group ? group : "core";
    bool ok = (!strcmp(kind, "Service") && !strcmp(canon, "core")) ||
              (!strcmp(kind, "ServiceEntry") && !strcmp(canon, "networking.istio.io")) ||
              (!strcmp(kind, "Gateway") && !strcmp(canon, "gateway.networking.k8s.io"));
    if (!ok)
        vc_err(c, ref,
               "targetRef must be to one of [core/v1/Service networking.istio.io/v1/ServiceEntry "
               "gateway.networking.k8s.io/v1/Gateway] but was %s/%s",
               group, kind);
}

void vc_policy_targets(vc *c, const wf_node *spec)
{
    int set =
        vc_has(spec, "selector") + vc_has(spec, "targetRef") + (vc_len(spec, "targetRefs") > 0);
    if (set > 1)
        vc_err(c, spec, "only one of targetRefs or workloadSelector can be set");
    vc_workload_selector(c, spec, "selector");
    size_t mark = vc_push(c, "targetRef");
    target_ref(c, vc_get(spec, "targetRef"));
    vc_pop(c, mark);
    const wf_node *refs = vc_get(spec, "targetRefs");
    for (size_t i = 0; i < wf_seq_len(refs); i++) {
        mark = vc_push(c, "targetRefs");
        vc_push_idx(c, i);
        target_ref(c, wf_seq_at(refs, i));
        vc_pop(c, mark);
    }
}

/* ---- gateways, destinations ---- */

void vc_gateway_names(vc *c, const wf_node *seq, bool gateway_semantics)
{
    for (size_t i = 0; i < wf_seq_len(seq); i++) {
        const wf_node *item = wf_seq_at(seq, i);
        const char *gw = vc_nstr(item);
        size_t mark = vc_push_idx(c, i);
        const char *slash = strchr(gw, '/');
        if (!slash) {
            const char *dot = strchr(gw, '.');
            if (dot) {
                const char *d2 = strchr(dot + 1, '.');
                size_t n1 = d2 ? (size_t)(d2 - dot - 1) : strlen(dot + 1);
                const char *rec = vc_fmt(c, "%.*s/%.*s", (int)n1, dot + 1, (int)(dot - gw), gw);
                vc_warn(c, item,
                        "using legacy gatewayName format %s; prefer the <namespace>/<name> "
                        "format: %s",
                        vc_q(c, gw), vc_q(c, rec));
            }
            const char *e = vc_check_fqdn(c, gw);
            if (e)
                vc_err(c, item, "%s", e);
            vc_pop(c, mark);
            return; /* as upstream: the first name without a slash ends the check */
        }
        const char *ns = vc_fmt(c, "%.*s", (int)(slash - gw), gw);
        const char *name = slash + 1;
        if (!*ns || !*name)
            vc_err(c, item, "config namespace and gateway name cannot be empty");
        if (!vc_is_dns1123_label(ns))
            vc_err(c, item, "invalid value for namespace: %s", vc_q(c, ns));
        if (!vc_is_dns1123_label(name) && !gateway_semantics)
            vc_err(c, item, "invalid value for gateway name: %s", vc_q(c, name));
        vc_pop(c, mark);
    }
}

void vc_subset_name(vc *c, const wf_node *at, const char *name)
{
    if (!*name)
        vc_err(c, at, "subset name cannot be empty");
    else if (!vc_is_dns1123_label(name))
        vc_err(c, at, "subset name is invalid: %s", name);
}

void vc_destination(vc *c, const wf_node *dest)
{
    if (!dest)
        return;
    const char *host = vc_str(dest, "host");
    size_t mark = vc_push(c, "host");
    if (strcmp(host, "*") == 0) {
        vc_err(c, vc_get(dest, "host"), "invalid destination host %s", host);
    } else {
        const char *e = vc_check_wildcard_domain(c, host);
        if (e)
            vc_err(c, vc_get(dest, "host") ? vc_get(dest, "host") : dest, "%s", e);
    }
    vc_pop(c, mark);
    const wf_node *subset = vc_get(dest, "subset");
    if (subset && *vc_nstr(subset)) {
        mark = vc_push(c, "subset");
        vc_subset_name(c, subset, vc_nstr(subset));
        vc_pop(c, mark);
    }
    const wf_node *port = vc_get(dest, "port");
    if (port) {
        mark = vc_push(c, "port");
        const char *e = vc_check_port(c, vc_int(port, "number"));
        if (e)
            vc_err(c, port, "%s", e);
        vc_pop(c, mark);
    }
}

/* Go's %v of a float64: the shortest representation that round-trips. */
static const char *go_float(vc *c, double v)
{
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return vc_fmt(c, "%s", buf);
}

void vc_percentage(vc *c, const wf_node *pct)
{
    if (!pct)
        return;
    double v = vc_double(pct, "value");
    if (v < 0.0 || v > 100.0 || (v > 0.0 && v < 0.0001))
        vc_err(c, pct, "percentage %s is neither 0.0, nor in range [0.0001, 100.0]",
               go_float(c, v));
}
