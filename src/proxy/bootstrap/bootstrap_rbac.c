/*
 * bootstrap_rbac.c - the typed_config of envoy.filters.http.rbac
 * (envoy.extensions.filters.http.rbac.v3.RBAC {rules, shadow_rules, rules_stat_prefix,
 * shadow_rules_stat_prefix}) and envoy.filters.network.rbac
 * (envoy.extensions.filters.network.rbac.v3.RBAC {stat_prefix, rules, shadow_rules,
 * shadow_rules_stat_prefix, enforcement_type}) compiled into the engine of
 * filters/rbac/engine.h: envoy.config.rbac.v3.RBAC {action, policies} with Policy
 * {permissions, principals}, every Permission and Principal kind engine.h lists, StringMatcher,
 * HeaderMatcher, CidrRange, MetadataMatcher / ValueMatcher and the uri_template extension
 * (envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig).
 *
 * Errors name the JSON path of the field, as the rest of the loader. Envoy fields weft-proxy does
 * not implement (CEL conditions, the matcher API, filter_state, sourced_metadata, custom
 * principals, audit logging, per-rule stats, delay_deny) are refused as "not supported by
 * weft-proxy (Envoy's <message>.<field>)". Required lists are Envoy's (validate.rules
 * min_items: 1): Policy.permissions, Policy.principals, Permission.Set.rules,
 * Principal.Set.ids, MetadataMatcher.path.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/bootstrap/bootstrap_read.h"
#include "proxy/filters/rbac/rbac.h"
#include "proxy/stats/stats.h"

#define HTTP_RBAC_TYPE "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
#define NET_RBAC_TYPE  "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
#define URI_TPL_TYPE                                                                               \
    "type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig"

/* Fails on the first of the space-separated keys present in o: an Envoy field of message that
 * weft-proxy does not implement. */
static bool refuse(bs *b, json_t *o, const char *keys, const char *message)
{
    char k[64];
    for (const char *p = keys; *p;) {
        size_t n = strcspn(p, " ");
        snprintf(k, sizeof k, "%.*s", (int)n, p);
        if (bs_get(o, k))
            return bs_fail_atf(b, k, "not supported by weft-proxy (Envoy's %s.%s)", message, k);
        p += n;
        while (*p == ' ')
            p++;
    }
    return true;
}

/* Exactly one of the keys (space-separated) is set; its name in which (cap bytes). */
static bool one_of(bs *b, json_t *o, const char *keys, const char *what, char *which, size_t cap)
{
    int n = 0;
    for (const char *p = keys; *p;) {
        size_t len = strcspn(p, " ");
        char cur[64];
        snprintf(cur, sizeof cur, "%.*s", (int)len, p);
        if (bs_get(o, cur)) {
            n++;
            snprintf(which, cap, "%s", cur);
        }
        p += len;
        while (*p == ' ')
            p++;
    }
    if (n != 1)
        return bs_fail(b, "exactly one %s kind is required", what);
    return true;
}

/* ---------- leaves ---------- */

static bool dec_cidr(bs *b, json_t *o, const char *k, wp_cidr *c)
{
    json_t *v = bs_get(o, k);
    size_t m = bs_push(b, k);
    const char *ip = NULL;
    uint32_t len = 0;
    bool ok = json_is_object(v)
                  ? bs_fields(b, v, "address_prefix prefix_len") &&
                        bs_req_str(b, v, "address_prefix", &ip) && bs_u32(b, v, "prefix_len", &len)
                  : bs_fail(b, "wrong type: expected an object");
    if (ok && wp_cidr_parse(ip, 0, c) != 0)
        ok = bs_fail(b, "malformed IP address: %s", ip);
    else if (ok && wp_cidr_parse(ip, len, c) != 0)
        ok = bs_fail(b, "invalid prefix_len %u for %s", len, ip);
    bs_pop(b, m);
    return ok;
}

static bool dec_sm_at(bs *b, json_t *o, const char *k, wp_string_matcher *sm)
{
    json_t *v = bs_get(o, k);
    if (!json_is_object(v))
        return bs_wrong_type(b, k, "an object");
    size_t m = bs_push(b, k);
    bool ok = bs_string_matcher(b, v, sm);
    bs_pop(b, m);
    return ok;
}

/* PathMatcher {path: StringMatcher} */
static bool dec_path_matcher(bs *b, json_t *o, const char *k, wp_rbac_node *n)
{
    json_t *v = bs_get(o, k);
    if (!json_is_object(v))
        return bs_wrong_type(b, k, "an object");
    size_t m = bs_push(b, k);
    bool ok = bs_fields(b, v, "path");
    if (ok && !bs_get(v, "path"))
        ok = bs_fail_at(b, "path", "missing required field");
    ok = ok && dec_sm_at(b, v, "path", &n->u.str.sm);
    n->kind = WP_RBAC_URL_PATH;
    bs_pop(b, m);
    return ok;
}

/* uri_template: TypedExtensionConfig {name, typed_config: UriTemplateMatchConfig} */
static bool dec_uri_template(bs *b, json_t *o, wp_rbac_node *n)
{
    json_t *v = bs_get(o, "uri_template");
    if (!json_is_object(v))
        return bs_wrong_type(b, "uri_template", "an object");
    size_t m = bs_push(b, "uri_template");
    const char *name = NULL, *tpl = NULL;
    json_t *tc = bs_get(v, "typed_config");
    bool ok = bs_fields(b, v, "name typed_config") && bs_str(b, v, "name", &name);
    if (ok && !json_is_object(tc))
        ok = bs_wrong_type(b, "typed_config", "an object");
    if (ok) {
        size_t mt = bs_push(b, "typed_config");
        ok = bs_fields(b, tc, "@type path_template") && bs_type_is(b, tc, URI_TPL_TYPE) &&
             bs_req_str(b, tc, "path_template", &tpl);
        char re[1024];
        const char *why = NULL;
        if (ok && wp_rbac_uri_template_regex(tpl, re, sizeof re, &why) != 0)
            ok = bs_fail_atf(b, "path_template", "%s", why);
        if (ok) {
            wf_strbuf err = WF_STRBUF_INIT;
            n->u.tpl = wp_config_add_regex(b->c, re, &err);
            if (!n->u.tpl)
                ok = bs_fail_atf(b, "path_template", "%s", wf_strbuf_cstr(&err));
            wf_strbuf_free(&err);
        }
        bs_pop(b, mt);
    }
    n->kind = WP_RBAC_URI_TEMPLATE;
    bs_pop(b, m);
    return ok;
}

static bool dec_port(bs *b, json_t *o, wp_rbac_node *n)
{
    uint32_t p = 0;
    if (!bs_u32(b, o, "destination_port", &p))
        return false;
    if (p > 65535)
        return bs_fail_at(b, "destination_port", "value must be less than or equal to 65535");
    n->kind = WP_RBAC_DEST_PORT;
    n->u.port.lo = p;
    n->u.port.hi = p + 1;
    return true;
}

/* Int32Range {start, end} (end exclusive) */
static bool dec_port_range(bs *b, json_t *o, wp_rbac_node *n)
{
    json_t *v = bs_get(o, "destination_port_range");
    if (!json_is_object(v))
        return bs_wrong_type(b, "destination_port_range", "an object");
    size_t m = bs_push(b, "destination_port_range");
    json_t *s = bs_get(v, "start"), *e = bs_get(v, "end");
    bool ok = bs_fields(b, v, "start end");
    if (ok && ((s && !json_is_integer(s)) || (e && !json_is_integer(e))))
        ok = bs_fail(b, "wrong type: start and end must be integers");
    long long lo = s ? json_integer_value(s) : 0, hi = e ? json_integer_value(e) : 0;
    /* Envoy's PortRangeMatcher constructor */
    if (ok && (lo < 0 || lo > 65536))
        ok = bs_fail(b, "range start %lld is out of bounds", lo);
    else if (ok && (hi < 0 || hi > 65536))
        ok = bs_fail(b, "range end %lld is out of bounds", hi);
    else if (ok && lo >= hi)
        ok = bs_fail(b, "range start %lld cannot be greater or equal than range end %lld", lo, hi);
    n->kind = WP_RBAC_DEST_PORT_RANGE;
    n->u.port.lo = lo < 0 ? 0 : (uint32_t)(lo > 65536 ? 65536 : lo);
    n->u.port.hi = hi < 0 ? 0 : (uint32_t)(hi > 65536 ? 65536 : hi);
    bs_pop(b, m);
    return ok;
}

/* ---------- metadata ---------- */

static bool dec_vm(bs *b, json_t *o, wp_rbac_vm *v);

static bool dec_vm_at(bs *b, json_t *o, const char *k, wp_rbac_vm *v)
{
    json_t *x = bs_get(o, k);
    if (!json_is_object(x))
        return bs_wrong_type(b, k, "an object");
    size_t m = bs_push(b, k);
    bool ok = dec_vm(b, x, v);
    bs_pop(b, m);
    return ok;
}

static bool dec_double_match(bs *b, json_t *o, wp_rbac_vm *v)
{
    json_t *d = bs_get(o, "double_match");
    if (!json_is_object(d))
        return bs_wrong_type(b, "double_match", "an object");
    size_t m = bs_push(b, "double_match");
    bool ok = bs_fields(b, d, "exact range");
    json_t *ex = bs_get(d, "exact"), *r = bs_get(d, "range");
    if (ok && !!ex == !!r)
        ok = bs_fail(b, "exactly one of exact, range is required");
    if (ok && ex) {
        ok = json_is_number(ex) || bs_wrong_type(b, "exact", "a number");
        v->kind = WP_VM_DOUBLE_EXACT;
        v->d = ok ? json_number_value(ex) : 0;
    } else if (ok) {
        json_t *s = json_is_object(r) ? bs_get(r, "start") : NULL;
        json_t *e = json_is_object(r) ? bs_get(r, "end") : NULL;
        v->kind = WP_VM_DOUBLE_RANGE;
        ok = json_is_object(r) || bs_wrong_type(b, "range", "an object");
        v->lo = s && json_is_number(s) ? json_number_value(s) : 0;
        v->hi = e && json_is_number(e) ? json_number_value(e) : 0;
    }
    bs_pop(b, m);
    return ok;
}

static bool dec_or_match(bs *b, json_t *o, wp_rbac_vm *v)
{
    json_t *x = bs_get(o, "or_match");
    if (!json_is_object(x))
        return bs_wrong_type(b, "or_match", "an object");
    size_t m = bs_push(b, "or_match");
    json_t *arr = bs_get(x, "value_matchers");
    bool ok = bs_fields(b, x, "value_matchers");
    if (ok && (!json_is_array(arr) || json_array_size(arr) < 2))
        ok = bs_fail_at(b, "value_matchers", "value must contain at least 2 item(s)");
    wp_rbac_vm *kids = ok ? bs_alloc(b, sizeof(*kids) * json_array_size(arr)) : NULL;
    ok = ok && kids;
    size_t ma = bs_push(b, "value_matchers");
    for (size_t i = 0; ok && i < json_array_size(arr); i++) {
        size_t mi = bs_push_i(b, i);
        json_t *e = json_array_get(arr, i);
        ok = json_is_object(e) ? dec_vm(b, e, &kids[i])
                               : bs_fail(b, "wrong type: expected an object");
        bs_pop(b, mi);
    }
    bs_pop(b, ma);
    v->kind = WP_VM_OR;
    v->kids = kids;
    v->n = json_array_size(arr);
    bs_pop(b, m);
    return ok;
}

/* ValueMatcher */
static bool dec_vm(bs *b, json_t *o, wp_rbac_vm *v)
{
    char k[64];
    if (!bs_fields(b, o,
                   "null_match double_match string_match bool_match present_match list_match "
                   "or_match") ||
        !one_of(b, o,
                "null_match double_match string_match bool_match present_match list_match "
                "or_match",
                "match_pattern", k, sizeof k))
        return false;
    if (strcmp(k, "null_match") == 0) {
        v->kind = WP_VM_NULL;
        return true;
    }
    if (strcmp(k, "double_match") == 0)
        return dec_double_match(b, o, v);
    if (strcmp(k, "string_match") == 0) {
        v->kind = WP_VM_STRING;
        return dec_sm_at(b, o, k, &v->sm);
    }
    if (strcmp(k, "bool_match") == 0 || strcmp(k, "present_match") == 0) {
        v->kind = k[0] == 'b' ? WP_VM_BOOL : WP_VM_PRESENT;
        return bs_bool(b, o, k, &v->b);
    }
    if (strcmp(k, "or_match") == 0)
        return dec_or_match(b, o, v);
    /* list_match {one_of: ValueMatcher} */
    json_t *l = bs_get(o, "list_match");
    if (!json_is_object(l))
        return bs_wrong_type(b, "list_match", "an object");
    size_t m = bs_push(b, "list_match");
    wp_rbac_vm *one = bs_alloc(b, sizeof(*one));
    bool ok = one && bs_fields(b, l, "one_of");
    if (ok && !bs_get(l, "one_of"))
        ok = bs_fail_at(b, "one_of", "missing required field");
    ok = ok && dec_vm_at(b, l, "one_of", one);
    v->kind = WP_VM_LIST_ONE_OF;
    v->kids = one;
    v->n = 1;
    bs_pop(b, m);
    return ok;
}

/* MetadataMatcher {filter, path[] {key}, value, invert} */
static bool dec_metadata(bs *b, json_t *o, wp_rbac_node *n)
{
    json_t *x = bs_get(o, "metadata");
    if (!json_is_object(x))
        return bs_wrong_type(b, "metadata", "an object");
    size_t m = bs_push(b, "metadata");
    wp_rbac_md *md = bs_alloc(b, sizeof(*md));
    json_t *path = bs_get(x, "path");
    bool ok = md && bs_fields(b, x, "filter path value invert") &&
              bs_req_str(b, x, "filter", &md->filter) && bs_bool(b, x, "invert", &md->invert);
    if (ok && (!json_is_array(path) || json_array_size(path) < 1))
        ok = bs_fail_at(b, "path", "value must contain at least 1 item(s)");
    const char **keys = ok ? bs_alloc(b, sizeof(*keys) * json_array_size(path)) : NULL;
    ok = ok && keys;
    size_t mp = bs_push(b, "path");
    for (size_t i = 0; ok && i < json_array_size(path); i++) {
        size_t mi = bs_push_i(b, i);
        json_t *seg = json_array_get(path, i);
        ok = json_is_object(seg) ? bs_fields(b, seg, "key") && bs_req_str(b, seg, "key", &keys[i])
                                 : bs_fail(b, "wrong type: expected an object");
        bs_pop(b, mi);
    }
    bs_pop(b, mp);
    if (ok && !bs_get(x, "value"))
        ok = bs_fail_at(b, "value", "missing required field");
    ok = ok && dec_vm_at(b, x, "value", &md->value);
    if (ok) {
        md->path = keys;
        md->npath = json_array_size(path);
        n->kind = WP_RBAC_METADATA;
        n->u.md = md;
    }
    bs_pop(b, m);
    return ok;
}

/* ---------- permissions and principals ---------- */

static bool dec_node(bs *b, json_t *o, wp_rbac_node *n, bool principal);

/* and_* / or_* {rules|ids: [...]} (min 1) or not_* (one node). */
static bool dec_set(bs *b, json_t *o, const char *k, wp_rbac_node *n, bool principal)
{
    json_t *x = bs_get(o, k);
    if (!json_is_object(x))
        return bs_wrong_type(b, k, "an object");
    size_t m = bs_push(b, k);
    bool ok;
    if (strncmp(k, "not_", 4) == 0) {
        wp_rbac_node *kid = bs_alloc(b, sizeof(*kid));
        ok = kid && dec_node(b, x, kid, principal);
        n->kind = WP_RBAC_NOT;
        n->u.set.kids = kid;
        n->u.set.n = 1;
    } else {
        const char *list = principal ? "ids" : "rules";
        json_t *arr = bs_get(x, list);
        ok = bs_fields(b, x, list);
        if (ok && (!json_is_array(arr) || json_array_size(arr) < 1))
            ok = bs_fail_at(b, list, "value must contain at least 1 item(s)");
        size_t cnt = ok ? json_array_size(arr) : 0;
        wp_rbac_node *kids = ok ? bs_alloc(b, sizeof(*kids) * cnt) : NULL;
        ok = ok && kids;
        size_t ml = bs_push(b, list);
        for (size_t i = 0; ok && i < cnt; i++) {
            size_t mi = bs_push_i(b, i);
            json_t *e = json_array_get(arr, i);
            ok = json_is_object(e) ? dec_node(b, e, &kids[i], principal)
                                   : bs_fail(b, "wrong type: expected an object");
            bs_pop(b, mi);
        }
        bs_pop(b, ml);
        n->kind = k[0] == 'a' ? WP_RBAC_AND : WP_RBAC_OR;
        n->u.set.kids = kids;
        n->u.set.n = cnt;
    }
    bs_pop(b, m);
    return ok;
}

static bool dec_any(bs *b, json_t *o, wp_rbac_node *n)
{
    bool any = false;
    if (!bs_bool(b, o, "any", &any))
        return false;
    if (!any) /* Envoy: bool any = 3 [(validate.rules).bool = {const: true}] */
        return bs_fail_at(b, "any", "value must equal true");
    n->kind = WP_RBAC_ANY;
    return true;
}

static bool dec_header(bs *b, json_t *o, wp_rbac_node *n)
{
    json_t *x = bs_get(o, "header");
    if (!json_is_object(x))
        return bs_wrong_type(b, "header", "an object");
    size_t m = bs_push(b, "header");
    bool ok = bs_header_matcher(b, x, &n->u.header);
    n->kind = WP_RBAC_HEADER;
    const char *name = ok ? n->u.header.name : NULL;
    n->hdr = !name                                                      ? WP_RBAC_H_OTHER
             : strcmp(name, ":method") == 0                             ? WP_RBAC_H_METHOD
             : strcmp(name, ":path") == 0                               ? WP_RBAC_H_PATH
             : strcmp(name, ":authority") == 0 || !strcmp(name, "host") ? WP_RBAC_H_AUTHORITY
                                                                        : WP_RBAC_H_OTHER;
    bs_pop(b, m);
    return ok;
}

/* authenticated {principal_name: StringMatcher} */
static bool dec_authenticated(bs *b, json_t *o, wp_rbac_node *n)
{
    json_t *x = bs_get(o, "authenticated");
    if (!json_is_object(x))
        return bs_wrong_type(b, "authenticated", "an object");
    size_t m = bs_push(b, "authenticated");
    bool ok = bs_fields(b, x, "principal_name");
    n->kind = WP_RBAC_AUTHENTICATED;
    n->u.str.has_sm = bs_get(x, "principal_name") != NULL;
    if (ok && n->u.str.has_sm)
        ok = dec_sm_at(b, x, "principal_name", &n->u.str.sm);
    bs_pop(b, m);
    return ok;
}

#define PERMISSION_KINDS                                                                           \
    "and_rules or_rules any header url_path destination_ip destination_port "                      \
    "destination_port_range metadata not_rule requested_server_name matcher uri_template "         \
    "sourced_metadata"
#define PRINCIPAL_KINDS                                                                            \
    "and_ids or_ids any authenticated source_ip direct_remote_ip remote_ip header url_path "       \
    "metadata filter_state not_id sourced_metadata custom"

/* One Permission or Principal (exactly one kind). */
static bool dec_node(bs *b, json_t *o, wp_rbac_node *n, bool principal)
{
    const char *kinds = principal ? PRINCIPAL_KINDS : PERMISSION_KINDS;
    const char *msg =
        principal ? "envoy.config.rbac.v3.Principal" : "envoy.config.rbac.v3.Permission";
    char k[64];
    if (!bs_fields(b, o, kinds) ||
        !refuse(b, o,
                principal ? "filter_state sourced_metadata custom" : "matcher sourced_metadata",
                msg) ||
        !one_of(b, o, kinds, principal ? "principal rule" : "permission rule", k, sizeof k))
        return false;
    if (!strcmp(k, "and_rules") || !strcmp(k, "or_rules") || !strcmp(k, "not_rule") ||
        !strcmp(k, "and_ids") || !strcmp(k, "or_ids") || !strcmp(k, "not_id"))
        return dec_set(b, o, k, n, principal);
    if (!strcmp(k, "any"))
        return dec_any(b, o, n);
    if (!strcmp(k, "header"))
        return dec_header(b, o, n);
    if (!strcmp(k, "url_path"))
        return dec_path_matcher(b, o, k, n);
    if (!strcmp(k, "metadata"))
        return dec_metadata(b, o, n);
    if (!strcmp(k, "uri_template"))
        return dec_uri_template(b, o, n);
    if (!strcmp(k, "destination_ip")) {
        n->kind = WP_RBAC_DEST_IP;
        return dec_cidr(b, o, k, &n->u.cidr);
    }
    if (!strcmp(k, "source_ip") || !strcmp(k, "direct_remote_ip") || !strcmp(k, "remote_ip")) {
        n->kind = k[0] == 'r' ? WP_RBAC_REMOTE_IP : WP_RBAC_DIRECT_REMOTE_IP;
        return dec_cidr(b, o, k, &n->u.cidr);
    }
    if (!strcmp(k, "destination_port"))
        return dec_port(b, o, n);
    if (!strcmp(k, "destination_port_range"))
        return dec_port_range(b, o, n);
    if (!strcmp(k, "requested_server_name")) {
        n->kind = WP_RBAC_SNI;
        n->u.str.has_sm = true;
        return dec_sm_at(b, o, k, &n->u.str.sm);
    }
    return dec_authenticated(b, o, n);
}

/* permissions / principals: a list of at least one node. */
static bool dec_nodes(bs *b, json_t *o, const char *k, bool principal, const wp_rbac_node **out,
                      size_t *n)
{
    json_t *arr = bs_get(o, k);
    if (!arr || (json_is_array(arr) && json_array_size(arr) == 0))
        return bs_fail_at(b, k, "value must contain at least 1 item(s)");
    if (!json_is_array(arr))
        return bs_wrong_type(b, k, "an array");
    size_t cnt = json_array_size(arr);
    wp_rbac_node *nodes = bs_alloc(b, sizeof(*nodes) * cnt);
    if (!nodes)
        return false;
    size_t m = bs_push(b, k);
    bool ok = true;
    for (size_t i = 0; ok && i < cnt; i++) {
        size_t mi = bs_push_i(b, i);
        json_t *e = json_array_get(arr, i);
        ok = json_is_object(e) ? dec_node(b, e, &nodes[i], principal)
                               : bs_fail(b, "wrong type: expected an object");
        bs_pop(b, mi);
    }
    bs_pop(b, m);
    *out = nodes;
    *n = cnt;
    return ok;
}

/* "rbac_access_denied_matched_policy[<name>]", white space as '_' (Envoy's responseDetail) */
static const char *details_of(bs *b, const char *name)
{
    size_t len = strlen(name);
    char *d = bs_alloc(b, len + sizeof("rbac_access_denied_matched_policy[]"));
    if (!d)
        return NULL;
    char *p = d + sprintf(d, "rbac_access_denied_matched_policy[");
    for (size_t i = 0; i < len; i++)
        *p++ = isspace((unsigned char)name[i]) ? '_' : name[i];
    strcpy(p, "]");
    return d;
}

static bool dec_policy(bs *b, json_t *o, wp_rbac_policy *p)
{
    if (!json_is_object(o))
        return bs_fail(b, "wrong type: expected an object");
    p->details = details_of(b, p->name);
    return p->details &&
           bs_fields(b, o, "permissions principals condition checked_condition cel_config") &&
           refuse(b, o, "condition checked_condition cel_config", "envoy.config.rbac.v3.Policy") &&
           dec_nodes(b, o, "permissions", false, &p->permissions, &p->npermissions) &&
           dec_nodes(b, o, "principals", true, &p->principals, &p->nprincipals);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const wp_rbac_policy *)a)->name, ((const wp_rbac_policy *)b)->name);
}

/* envoy.config.rbac.v3.RBAC {action, policies} at o[k] into a new engine. */
static bool dec_engine(bs *b, json_t *o, const char *k, const wp_rbac_engine **out)
{
    static const char *const actions[] = {"ALLOW", "DENY", "LOG", NULL};
    json_t *x = bs_get(o, k);
    if (!x)
        return true;
    if (!json_is_object(x))
        return bs_wrong_type(b, k, "an object");
    size_t m = bs_push(b, k);
    wp_rbac_engine *e = bs_alloc(b, sizeof(*e));
    int action = 0;
    json_t *pol = bs_get(x, "policies");
    bool ok = e && bs_fields(b, x, "action policies audit_logging_options") &&
              refuse(b, x, "audit_logging_options", "envoy.config.rbac.v3.RBAC") &&
              bs_enum(b, x, "action", actions, &action);
    if (ok && pol && !json_is_object(pol))
        ok = bs_wrong_type(b, "policies", "an object");
    size_t cnt = ok && pol ? json_object_size(pol) : 0;
    wp_rbac_policy *ps = cnt ? bs_alloc(b, sizeof(*ps) * cnt) : NULL;
    if (cnt && !ps)
        ok = false;
    size_t i = 0;
    const char *name;
    json_t *v;
    size_t mp = bs_push(b, "policies");
    if (ok && pol) {
        json_object_foreach(pol, name, v)
        {
            size_t mn = bs_push(b, name);
            ps[i].name = name;
            ok = dec_policy(b, v, &ps[i]);
            bs_pop(b, mn);
            if (!ok)
                break;
            i++;
        }
    }
    bs_pop(b, mp);
    if (ok) {
        if (cnt)
            qsort(ps, cnt, sizeof(*ps), by_name); /* Envoy's std::map order */
        e->action = (wp_rbac_action)action;
        e->policies = ps;
        e->npolicies = cnt;
        *out = e;
    }
    bs_pop(b, m);
    return ok;
}

/* The prefixed dynamic-metadata keys of the shadow engine. */
static bool md_keys(bs *b, wp_rbac_config *c)
{
    char key[512];
    snprintf(key, sizeof key, "%sshadow_effective_policy_id", c->shadow_stat_prefix);
    c->md_policy_key = bs_strdup(b, key);
    snprintf(key, sizeof key, "%sshadow_engine_result", c->shadow_stat_prefix);
    c->md_result_key = bs_strdup(b, key);
    return c->md_policy_key && c->md_result_key;
}

static wp_rbac_config *new_config(bs *b, const char *ns)
{
    wp_rbac_config *c = bs_alloc(b, sizeof(*c));
    if (!c)
        return NULL;
    c->ns = ns;
    c->rules_stat_prefix = c->shadow_stat_prefix = c->stat_prefix = "";
    for (int i = 0; i < WP_RBAC_ST_COUNT_; i++)
        c->st[i] = WP_STAT_INVALID;
    return c;
}

bool bs_rbac_http_filter(bs *b, json_t *tc, wp_rbac_config **out)
{
    wp_rbac_config *c = new_config(b, WP_RBAC_HTTP_NAME);
    if (!c)
        return false;
    *out = c;
    if (!tc)
        return md_keys(b, c);
    bool track = false;
    size_t m = bs_push(b, "typed_config");
    bool ok =
        bs_fields(b, tc,
                  "@type rules matcher shadow_rules shadow_matcher shadow_rules_stat_prefix "
                  "rules_stat_prefix track_per_rule_stats") &&
        bs_type_is(b, tc, HTTP_RBAC_TYPE) &&
        refuse(b, tc, "matcher shadow_matcher", "envoy.extensions.filters.http.rbac.v3.RBAC") &&
        bs_bool(b, tc, "track_per_rule_stats", &track);
    if (ok && track)
        ok = bs_fail_at(b, "track_per_rule_stats",
                        "not supported by weft-proxy (Envoy's "
                        "envoy.extensions.filters.http.rbac.v3.RBAC.track_per_rule_stats)");
    ok = ok && bs_str(b, tc, "rules_stat_prefix", &c->rules_stat_prefix) &&
         bs_str(b, tc, "shadow_rules_stat_prefix", &c->shadow_stat_prefix) &&
         dec_engine(b, tc, "rules", &c->rules) && dec_engine(b, tc, "shadow_rules", &c->shadow) &&
         md_keys(b, c);
    bs_pop(b, m);
    return ok;
}

bool bs_rbac_network_filter(bs *b, json_t *tc, wp_rbac_config **out)
{
    static const char *const types[] = {"ONE_TIME_ON_FIRST_BYTE", "CONTINUOUS", NULL};
    wp_rbac_config *c = new_config(b, WP_RBAC_NETWORK_NAME);
    if (!c)
        return false;
    *out = c;
    if (!tc)
        return bs_fail_at(b, "typed_config", "missing required field");
    int et = 0;
    size_t m = bs_push(b, "typed_config");
    bool ok = json_is_object(tc) ? true : bs_fail(b, "wrong type: expected an object");
    ok = ok &&
         bs_fields(b, tc,
                   "@type rules matcher shadow_rules shadow_matcher shadow_rules_stat_prefix "
                   "stat_prefix enforcement_type delay_deny") &&
         bs_type_is(b, tc, NET_RBAC_TYPE) &&
         refuse(b, tc, "matcher shadow_matcher delay_deny",
                "envoy.extensions.filters.network.rbac.v3.RBAC") &&
         bs_req_str(b, tc, "stat_prefix", &c->stat_prefix) &&
         bs_str(b, tc, "shadow_rules_stat_prefix", &c->shadow_stat_prefix) &&
         bs_enum(b, tc, "enforcement_type", types, &et) && dec_engine(b, tc, "rules", &c->rules) &&
         dec_engine(b, tc, "shadow_rules", &c->shadow) && md_keys(b, c);
    c->continuous = et == 1;
    bs_pop(b, m);
    return ok;
}
