/*
 * authz_check.c - policy ids and rows of `weftctl x authz check` (authz_check.h).
 *
 * Working sets are jansson objects used as string sets: one per action (name -> true) and one
 * name -> {rule -> true} map, as istioctl's actionToPolicy / policyToRule maps.
 */
#include "cli/authz_check.h"

#include <stdlib.h>
#include <string.h>

#include "cli/envoy_dump.h"
#include "cli/tabwriter.h"

#define T_HCM                                                                                      \
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."             \
    "HttpConnectionManager"
#define T_RBAC_HTTP      "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
#define T_RBAC_TCP       "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
#define EXT_AUTHZ_PREFIX "istio-ext-authz-"

static const char *const action_names[WF_AUTHZ_NACTIONS] = {"DENY", "ALLOW", "LOG", "CUSTOM"};

const char *wf_authz_action_name(wf_authz_action a)
{
    return (unsigned)a < WF_AUTHZ_NACTIONS ? action_names[a] : "?";
}

/* ---- policy ids ------------------------------------------------------------------------------ */

static bool at(const char *s, size_t end, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    return i + n <= end && memcmp(s + i, lit, n) == 0;
}

/* Greedy `(.+)\]` at the end of the pattern: the last ']' after from (group non-empty). */
static bool last_group(const char *s, size_t from, size_t end, size_t *e)
{
    for (size_t i = end; i > from + 1; i--)
        if (s[i - 1] == ']') {
            *e = i - 1;
            return true;
        }
    return false;
}

/* Greedy `(.+)\]-rule\[(.+)\]` from `from`: the longest group 2 for which the rest matches. */
static bool rule_groups(const char *s, size_t from, size_t end, size_t *e2, size_t *e3)
{
    for (size_t i = end; i > from + 1; i--)
        if (at(s, end, i - 1, "]-rule[") && last_group(s, i - 1 + 7, end, e3)) {
            *e2 = i - 1;
            return true;
        }
    return false;
}

/* The three groups of ns\[(.+)\]-policy\[(.+)\]-rule\[(.+)\] at start (just after "ns["),
 * backtracking like Go's leftmost-first matcher: group 1 as long as possible, then 2, then 3. */
static bool match_at(const char *s, size_t start, size_t end, size_t e[3])
{
    for (size_t i = end; i > start + 1; i--)
        if (at(s, end, i - 1, "]-policy[") && rule_groups(s, i - 1 + 9, end, &e[1], &e[2])) {
            e[0] = i - 1;
            return true;
        }
    return false;
}

int wf_authz_parse_policy_id(const char *id, wf_strbuf *name, wf_strbuf *rule)
{
    wf_strbuf_reset(name);
    wf_strbuf_reset(rule);
    /* The optional "istio-ext-authz-" prefix changes no group: the leftmost match is the
     * first "ns[" from which the rest matches. '.' stops at a newline, so a match lies within
     * one line. */
    for (const char *p = strstr(id, "ns["); p; p = strstr(p + 1, "ns[")) {
        size_t start = (size_t)(p - id) + 3;
        const char *nl = strchr(p, '\n');
        size_t end = nl ? (size_t)(nl - id) : strlen(id);
        size_t e[3];
        if (!match_at(id, start, end, e))
            continue;
        size_t s2 = e[0] + 9, s3 = e[1] + 7;
        wf_strbuf_printf(name, "%.*s.%.*s", (int)(e[1] - s2), id + s2, (int)(e[0] - start),
                         id + start);
        wf_strbuf_append(rule, id + s3, e[2] - s3);
        return 0;
    }
    return -1;
}

/* ---- collecting ------------------------------------------------------------------------------ */

typedef struct collector {
    json_t *by_action[WF_AUTHZ_NACTIONS]; /* name -> true */
    json_t *rules;                        /* name -> {rule -> true} */
    wf_strbuf *warn;
    const char *listener; /* for warnings */
    wf_strbuf name, rule; /* scratch */
    bool oom;
} collector;

static void add_policy(collector *c, wf_authz_action a, const char *name, const char *rule)
{
    json_t *set = json_object_get(c->rules, name);
    if (!set) {
        set = json_object();
        if (!set || json_object_set_new(c->rules, name, set) != 0) {
            c->oom = true;
            return;
        }
    }
    if (json_object_set_new(c->by_action[a], name, json_true()) != 0 ||
        json_object_set_new(set, rule, json_true()) != 0)
        c->oom = true;
}

static void add_id(collector *c, wf_authz_action a, const char *id)
{
    if (wf_authz_parse_policy_id(id, &c->name, &c->rule) != 0)
        wf_strbuf_printf(c->warn, "listener %s: failed to parse policy name: %s\n", c->listener,
                         id);
    if (wf_strbuf_failed(&c->name) || wf_strbuf_failed(&c->rule)) {
        c->oom = true;
        return;
    }
    add_policy(c, a, wf_strbuf_cstr(&c->name), wf_strbuf_cstr(&c->rule));
}

/* rules.action: ALLOW (0, also when absent), DENY (1), LOG (2). -1 when unknown. */
static int rules_action(const json_t *rules)
{
    const json_t *a = json_object_get(rules, "action");
    if (!a)
        return WF_AUTHZ_ALLOW;
    if (json_is_integer(a)) {
        static const int by_num[] = {WF_AUTHZ_ALLOW, WF_AUTHZ_DENY, WF_AUTHZ_LOG};
        json_int_t v = json_integer_value(a);
        return v >= 0 && v < 3 ? by_num[v] : -1;
    }
    const char *s = json_string_value(a);
    for (int i = 0; s && i < WF_AUTHZ_CUSTOM; i++)
        if (strcmp(s, action_names[i]) == 0)
            return i;
    return -1;
}

/* Whether a filter's typed_config (present) holds `type` (an absent "@type" is accepted);
 * warns when not, as istioctl's "found ... filter but failed to parse". */
static bool typed_config_ok(collector *c, const json_t *tc, const char *type, const char *what)
{
    const char *t = wf_jstr(tc, "@type");
    if (json_is_object(tc) && (!t || strcmp(t, type) == 0))
        return true;
    wf_strbuf_printf(
        c->warn, "listener %s: found %s filter but failed to parse: typed_config is %s, not %s\n",
        c->listener, what, t ? t : "not an object", type);
    return false;
}

static void add_rbac(collector *c, const json_t *filter, const char *type, const char *what)
{
    const json_t *tc = json_object_get(filter, "typed_config"); /* absent: an empty RBAC */
    if (tc && !typed_config_ok(c, tc, type, what))
        return;
    const json_t *rules = json_object_get(tc, "rules");
    int a = rules_action(rules);
    if (a < 0) {
        wf_strbuf_printf(c->warn,
                         "listener %s: found %s filter but failed to parse: unknown "
                         "action in rules\n",
                         c->listener, what);
        return;
    }
    const json_t *pols = json_object_get(rules, "policies");
    const char *id;
    const json_t *v;
    json_object_foreach((json_t *)pols, id, v) add_id(c, (wf_authz_action)a, id);
    if (json_object_size(pols) == 0)
        add_policy(c, (wf_authz_action)a, WF_AUTHZ_ANONYMOUS, "0");
    pols = json_object_get(json_object_get(tc, "shadow_rules"), "policies");
    json_object_foreach((json_t *)pols, id,
                        v) if (strncmp(id, EXT_AUTHZ_PREFIX, strlen(EXT_AUTHZ_PREFIX)) == 0)
        add_id(c, WF_AUTHZ_CUSTOM, id);
}

static bool is_hcm(const char *name)
{
    return strcmp(name, "envoy.filters.network.http_connection_manager") == 0 ||
           strcmp(name, "envoy.http_connection_manager") == 0;
}

static void add_hcm(collector *c, const json_t *filter)
{
    const json_t *tc = json_object_get(filter, "typed_config");
    if (tc && !typed_config_ok(c, tc, T_HCM, "HTTP connection manager"))
        return;
    size_t i;
    const json_t *hf;
    json_array_foreach(json_object_get(tc, "http_filters"), i,
                       hf) if (strcmp(wf_jstr_or(hf, "name", ""), "envoy.filters.http.rbac") == 0)
        add_rbac(c, hf, T_RBAC_HTTP, "RBAC HTTP");
}

static void add_listener(collector *c, const json_t *l)
{
    c->listener = wf_jstr_or(l, "name", "(unnamed)");
    size_t i, j;
    const json_t *fc, *f;
    json_array_foreach(json_object_get(l, "filter_chains"), i, fc)
        json_array_foreach(json_object_get(fc, "filters"), j, f)
    {
        const char *name = wf_jstr_or(f, "name", "");
        if (is_hcm(name))
            add_hcm(c, f);
        else if (strcmp(name, "envoy.filters.network.rbac") == 0)
            add_rbac(c, f, T_RBAC_TCP, "RBAC network");
    }
}

/* ---- rows ------------------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends the rows of one action, names sorted. */
static int add_rows(const collector *c, wf_authz_action a, wf_authz_table *t)
{
    size_t n = json_object_size(c->by_action[a]), k = 0;
    if (n == 0)
        return 0;
    const char **names = malloc(n * sizeof *names);
    wf_authz_row *rows = realloc(t->rows, (t->n + n) * sizeof *rows);
    if (!names || !rows) {
        free(names);
        return -1;
    }
    t->rows = rows;
    const char *name;
    const json_t *v;
    json_object_foreach(c->by_action[a], name, v) names[k++] = name;
    qsort(names, n, sizeof *names, cmp_str);
    for (k = 0; k < n; k++) {
        char *copy = strdup(names[k]);
        if (!copy) {
            free(names);
            return -1;
        }
        t->rows[t->n++] =
            (wf_authz_row){a, copy, json_object_size(json_object_get(c->rules, names[k]))};
    }
    free(names);
    return 0;
}

int wf_authz_build(const json_t *listeners, wf_authz_table *out, wf_strbuf *warn, wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_array(listeners)) {
        wf_strbuf_puts(err, "listeners: expected an array");
        return -1;
    }
    collector c = {.warn = warn, .name = WF_STRBUF_INIT, .rule = WF_STRBUF_INIT};
    c.rules = json_object();
    for (int a = 0; a < WF_AUTHZ_NACTIONS; a++)
        c.oom |= !(c.by_action[a] = json_object());
    c.oom |= !c.rules;
    size_t i;
    const json_t *l;
    json_array_foreach(listeners, i, l) if (!c.oom) add_listener(&c, l);
    out->listeners = json_array_size(listeners);
    for (int a = 0; a < WF_AUTHZ_NACTIONS && !c.oom; a++)
        c.oom = add_rows(&c, (wf_authz_action)a, out) != 0;
    for (int a = 0; a < WF_AUTHZ_NACTIONS; a++)
        json_decref(c.by_action[a]);
    json_decref(c.rules);
    wf_strbuf_free(&c.name);
    wf_strbuf_free(&c.rule);
    if (c.oom) {
        wf_authz_table_free(out);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- printing -------------------------------------------------------------------------------- */

int wf_authz_print_table(const wf_authz_table *t, wf_strbuf *out)
{
    if (t->listeners == 0)
        return 0;
    wf_tw tw;
    wf_tw_init(&tw, 3);
    wf_tw_puts(&tw, "ACTION\tAuthorizationPolicy\tRULES\n");
    for (size_t i = 0; i < t->n; i++)
        wf_tw_printf(&tw, "%s\t%s\t%zu\n", wf_authz_action_name(t->rows[i].action), t->rows[i].name,
                     t->rows[i].rules);
    int rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
    return rc == 0 && !wf_strbuf_failed(out) ? 0 : -1;
}

int wf_authz_print_json(const wf_authz_table *t, wf_strbuf *out)
{
    json_t *arr = json_array();
    bool oom = !arr;
    for (size_t i = 0; i < t->n && !oom; i++) {
        json_t *o = json_pack("{s:s, s:s, s:I}", "action", wf_authz_action_name(t->rows[i].action),
                              "authorizationPolicy", t->rows[i].name, "rules",
                              (json_int_t)t->rows[i].rules);
        oom = !o || json_array_append_new(arr, o) != 0;
    }
    char *s = oom ? NULL : json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(arr);
    if (!s)
        return -1;
    wf_strbuf_printf(out, "%s\n", s);
    free(s);
    return wf_strbuf_failed(out) ? -1 : 0;
}

void wf_authz_table_free(wf_authz_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].name);
    free(t->rows);
    memset(t, 0, sizeof *t);
}
