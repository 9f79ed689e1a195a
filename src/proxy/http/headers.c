/*
 * headers.c - header mutations (headers.h).
 */
#include <string.h>
#include <strings.h>

#include "proxy/http/headers.h"

static bool is_overwrite(wp_append_action a)
{
    return a == WP_OVERWRITE_IF_EXISTS_OR_ADD || a == WP_OVERWRITE_IF_EXISTS;
}

static bool same(const h1_str *n, const char *lower, size_t len)
{
    return n->len == len && strncasecmp(n->p, lower, len) == 0;
}

size_t wp_hops_compact(const wp_header_ops **ops, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i]->nadd || ops[i]->nremove)
            ops[k++] = ops[i];
    return k;
}

bool wp_hops_drops(const wp_header_ops *const *ops, size_t n, const h1_str *name)
{
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < ops[k]->nremove; i++)
            if (same(name, ops[k]->remove[i], strlen(ops[k]->remove[i])))
                return true;
        for (size_t i = 0; i < ops[k]->nadd; i++)
            if (is_overwrite(ops[k]->add[i].action) &&
                same(name, ops[k]->add[i].key, ops[k]->add[i].key_len))
                return true;
    }
    return false;
}

/* An overwriting add for key at a level less specific than `level`. */
static bool overwritten_later(const wp_header_ops *const *ops, size_t n, size_t level,
                              const wp_header_add *a)
{
    h1_str key = {a->key, a->key_len};
    for (size_t k = level + 1; k < n; k++)
        for (size_t i = 0; i < ops[k]->nadd; i++)
            if (is_overwrite(ops[k]->add[i].action) &&
                same(&key, ops[k]->add[i].key, ops[k]->add[i].key_len))
                return true;
    return false;
}

/* True when the add a of level k goes out, given the original head's fields. */
static bool emitted(const wp_header_ops *const *ops, size_t n, size_t k, const wp_header_add *a,
                    const h1_header *have, size_t nhave)
{
    bool present = have && h1_find_header(have, nhave, a->key) != NULL;
    return !((a->action == WP_ADD_IF_ABSENT && present) ||
             (a->action == WP_OVERWRITE_IF_EXISTS && !present) || overwritten_later(ops, n, k, a));
}

void wp_hops_add(wp_hdr_list *l, const wp_header_ops *const *ops, size_t n, const h1_header *have,
                 size_t nhave)
{
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < ops[k]->nadd; i++)
            if (emitted(ops, n, k, &ops[k]->add[i], have, nhave))
                wp_hdr_list_add(l, ops[k]->add[i].key, ops[k]->add[i].key_len, ops[k]->add[i].value,
                                ops[k]->add[i].value_len);
}

size_t wp_hops_view(h1_header *hdrs, size_t n, size_t cap, const wp_header_ops *const *ops,
                    size_t nops)
{
    const wp_header_add *adds[WP_HOPS_VIEW_ADDS];
    size_t nadd = 0;
    for (size_t k = 0; k < nops; k++)
        for (size_t i = 0; i < ops[k]->nadd && nadd < WP_HOPS_VIEW_ADDS; i++)
            if (emitted(ops, nops, k, &ops[k]->add[i], hdrs, n))
                adds[nadd++] = &ops[k]->add[i];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!wp_hops_drops(ops, nops, &hdrs[i].name))
            hdrs[m++] = hdrs[i];
    for (size_t j = 0; j < nadd && m < cap; j++)
        hdrs[m++] = (h1_header){.name = {adds[j]->key, adds[j]->key_len},
                                .value = {adds[j]->value, adds[j]->value_len}};
    return m;
}

size_t wp_u64_str(char *out, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t n = sizeof(tmp) - i;
    memcpy(out, tmp + i, n);
    out[n] = 0;
    return n;
}
