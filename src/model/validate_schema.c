/*
 * validate_schema.c - decode-time checks: field types, unknown fields, oneofs, enums.
 *
 * Istio decodes a spec into its proto with golang/protobuf jsonpb after Kubernetes' YAML to
 * JSON conversion. `istioctl validate` and the admission path decode strictly (unknown
 * fields rejected, pkg/config/model ApplyJSONStrict) and the API server's structural schema
 * rejects them too ("strict decoding error: unknown field"), while `istioctl analyze` decodes
 * leniently and `kubectl apply` only warns (fieldValidation=Warn). weft reports an unknown
 * field as a warning (IST0133): a typo is shown, but it never fails an analysis that
 * istioctl would pass. A value of the wrong type makes decoding
 * fail outright in every Istio path, so a type error stops the semantic checks for that
 * resource. Messages use Kubernetes' wording for these ("spec.http[0].route[0].weight in
 * body must be of type integer: \"string\"").
 */
#include "model/validate_internal.h"
#include "model/validate_schema.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void walk_msg(vc *c, const wf_node *n, const vs_msg *m);

static void type_error(vc *c, const wf_node *n, const char *want)
{
    c->type_errors = true;
    vc_report(c, false, NULL, n,
              vc_fmt(c, "%s in body must be of type %s: %s", c->path, want,
                     vc_q(c, wf_node_kind_name(n))));
}

static void value_error(vc *c, const wf_node *n, const char *detail)
{
    c->type_errors = true;
    vc_report(c, false, NULL, n, vc_fmt(c, "%s: %s", c->path, detail));
}

static bool numeric_string(const wf_node *n)
{
    if (n->type != WF_NODE_SCALAR || !*n->u.str)
        return false;
    char *end;
    errno = 0;
    (void)strtod(n->u.str, &end);
    return *end == '\0';
}

static void check_int(vc *c, const wf_node *n, int64_t lo, int64_t hi, bool unsigned64)
{
    const char *kind = wf_node_kind_name(n);
    int64_t v;
    if (!vc_nint(n, &v)) {
        bool big_unsigned = unsigned64 && n->type == WF_NODE_SCALAR && n->u.str[0] != '-' &&
                            (strcmp(kind, "integer") == 0 || n->quoted);
        if (big_unsigned) {
            char *end;
            errno = 0;
            (void)strtoull(n->u.str, &end, 10);
            if (!errno && !*end && *n->u.str)
                return;
        }
        if (n->type == WF_NODE_SCALAR && (strcmp(kind, "number") == 0 || numeric_string(n))) {
            double d = strtod(n->u.str, NULL);
            if (d == floor(d) && d >= (double)lo && d <= (double)hi)
                return;
        }
        type_error(c, n, "integer");
        return;
    }
    if (v < lo || v > hi)
        value_error(c, n,
                    vc_fmt(c, "Invalid value: %lld: must be in the range %lld..%lld", (long long)v,
                           (long long)lo, (long long)hi));
}

static void check_enum(vc *c, const wf_node *n, const char *const *names)
{
    int64_t v;
    if (!n->quoted && vc_nint(n, &v))
        return;
    if (n->type != WF_NODE_SCALAR || strcmp(wf_node_kind_name(n), "string") != 0) {
        type_error(c, n, "string");
        return;
    }
    size_t total = 0;
    for (size_t i = 0; names[i]; i++) {
        if (strcmp(names[i], n->u.str) == 0)
            return;
        total += strlen(names[i]) + 4;
    }
    char *list = wf_arena_alloc(&c->scratch, total + 1);
    if (!list) {
        value_error(c, n, vc_fmt(c, "Unsupported value: %s", vc_q(c, n->u.str)));
        return;
    }
    list[0] = '\0';
    for (size_t i = 0; names[i]; i++) {
        if (i)
            strcat(list, ", ");
        strcat(list, vc_q(c, names[i]));
    }
    value_error(c, n,
                vc_fmt(c, "Unsupported value: %s: supported values: %s", vc_q(c, n->u.str), list));
}

static void check_value(vc *c, const wf_node *n, const vs_field *f)
{
    const char *kind = wf_node_kind_name(n);
    switch ((vs_type)f->type) {
    case S_STR:
    case S_BYTES:
        if (strcmp(kind, "string") != 0)
            type_error(c, n, "string");
        break;
    case S_BOOL:
        if (strcmp(kind, "boolean") != 0)
            type_error(c, n, "boolean");
        break;
    case S_I32:
        check_int(c, n, INT32_MIN, INT32_MAX, false);
        break;
    case S_U32:
        check_int(c, n, 0, UINT32_MAX, false);
        break;
    case S_I64:
        check_int(c, n, INT64_MIN, INT64_MAX, false);
        break;
    case S_U64:
        check_int(c, n, 0, INT64_MAX, true);
        break;
    case S_DBL:
        if (strcmp(kind, "integer") != 0 && strcmp(kind, "number") != 0 && !numeric_string(n))
            type_error(c, n, "number");
        break;
    case S_DUR: {
        if (strcmp(kind, "string") != 0) {
            type_error(c, n, "string");
            break;
        }
        int64_t ns;
        const char *msg;
        if (!vc_parse_duration(c, n->u.str, &ns, &msg))
            value_error(c, n, vc_fmt(c, "bad Duration: %s", msg));
        break;
    }
    case S_ENUM:
        check_enum(c, n, f->sub);
        break;
    case S_MSG:
        if (n->type != WF_NODE_MAP)
            type_error(c, n, "object");
        else
            walk_msg(c, n, f->sub);
        break;
    case S_STRUCT:
        if (n->type != WF_NODE_MAP)
            type_error(c, n, "object");
        break;
    case S_ANY:
        break;
    }
}

static bool u32_key(const char *k)
{
    if (!*k)
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(k, &end, 10);
    return !errno && !*end && k[0] != '-' && v <= UINT32_MAX;
}

static void check_field(vc *c, const wf_node *n, const vs_field *f)
{
    if (n->type == WF_NODE_NULL)
        return;
    if (f->flags & F_LIST) {
        if (n->type != WF_NODE_SEQ) {
            type_error(c, n, "array");
            return;
        }
        for (size_t i = 0; i < n->len; i++) {
            size_t mark = vc_push_idx(c, i);
            if (n->u.items[i]->type != WF_NODE_NULL)
                check_value(c, n->u.items[i], f);
            vc_pop(c, mark);
        }
        return;
    }
    if (f->flags & F_MAP) {
        if (n->type != WF_NODE_MAP) {
            type_error(c, n, "object");
            return;
        }
        for (size_t i = 0; i < n->len; i++) {
            const wf_map_entry *e = &n->u.entries[i];
            size_t mark = vc_push_key(c, e->key);
            if ((f->flags & F_U32KEY) && !u32_key(e->key))
                value_error(c, e->value,
                            vc_fmt(c, "invalid map key %s: must be an unsigned 32-bit integer",
                                   vc_q(c, e->key)));
            if (e->value->type != WF_NODE_NULL)
                check_value(c, e->value, f);
            vc_pop(c, mark);
        }
        return;
    }
    check_value(c, n, f);
}

static const vs_field *find_field(const vs_msg *m, const char *key)
{
    for (const vs_field *f = m->fields; f->name; f++) {
        if (strcmp(f->name, key) == 0)
            return f;
    }
    return NULL;
}

static void check_oneofs(vc *c, const wf_node *n, const vs_msg *m)
{
    for (uint8_t g = 1; g < 4; g++) {
        const char *first = NULL, *second = NULL;
        const wf_node *at = NULL;
        for (size_t i = 0; i < n->len; i++) {
            const vs_field *f = find_field(m, n->u.entries[i].key);
            if (!f || f->oneof != g || n->u.entries[i].value->type == WF_NODE_NULL)
                continue;
            if (!first) {
                first = f->name;
            } else if (!second) {
                second = f->name;
                at = n->u.entries[i].value;
            }
        }
        if (!second)
            continue;
        const char *names = "";
        for (const vs_field *f = m->fields; f->name; f++) {
            if (f->oneof == g)
                names = *names ? vc_fmt(c, "%s, %s", names, f->name) : f->name;
        }
        value_error(c, at,
                    vc_fmt(c, "only one of %s may be set, found %s and %s", names, first, second));
    }
}

static void walk_msg(vc *c, const wf_node *n, const vs_msg *m)
{
    for (size_t i = 0; i < n->len; i++) {
        const wf_map_entry *e = &n->u.entries[i];
        const vs_field *f = find_field(m, e->key);
        size_t mark = vc_push(c, e->key);
        if (!f) {
            if (!m->open)
                vc_report(c, true, NULL, e->value,
                          vc_fmt(c, "strict decoding error: unknown field %s", vc_q(c, c->path)));
        } else {
            check_field(c, e->value, f);
        }
        vc_pop(c, mark);
    }
    check_oneofs(c, n, m);
}

void vc_schema_walk(vc *c, wf_kind kind, const wf_node *spec)
{
    const vs_msg *m = vs_schema_for_kind(kind);
    if (!m || !spec)
        return;
    size_t mark = vc_push(c, "spec");
    if (spec->type != WF_NODE_MAP)
        type_error(c, spec, "object");
    else
        walk_msg(c, spec, m);
    vc_pop(c, mark);
}
