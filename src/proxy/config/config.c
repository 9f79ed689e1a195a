/*
 * config.c - snapshot lifetime and compiled regexes (config.h).
 */
#include "core/strmap.h"
#include "proxy/config/config.h"
#include "proxy/sds/sds_ctx.h"
#include "tls/tls.h"

#include "model/re2_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

void wp_config_ref(wp_config *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void wp_config_unref(wp_config *c)
{
    if (!c)
        return;
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < c->nregexes; i++)
        pcre2_code_free(c->regexes[i]);
    free(c->regexes);
    for (size_t i = 0; i < c->ntls_ctxs; i++)
        wf_tls_ctx_free(c->tls_ctxs[i]);
    free(c->tls_ctxs);
    for (size_t i = 0; i < c->nsds_ctxs; i++)
        wp_sds_ctx_free(c->sds_ctxs[i]);
    free(c->sds_ctxs);
    for (size_t i = 0; i < c->nowned; i++)
        c->owned[i].free_fn(c->owned[i].p);
    free(c->owned);
    json_decref(c->bootstrap);
    json_decref(c->node);
    json_decref(c->stats_config);
    json_decref(c->xds_dump);
    wf_arena_destroy(&c->arena);
    free(c);
}

const wp_filter_chain *wp_listener_find_chain(const wp_listener *l, const wp_lf_socket *sock)
{
    wp_fcm_input in;
    wp_lf_match_input(sock, &in);
    int i = wp_fcm_select(l->fcms, l->nchains, &in);
    return i >= 0 ? &l->chains[i] : l->default_chain;
}

/* Same IP and port (families equal). */
static bool same_ip_port(const struct sockaddr *a, const struct sockaddr *b, bool wildcard_a)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port &&
               (wildcard_a ? x->sin_addr.s_addr == htonl(INADDR_ANY)
                           : x->sin_addr.s_addr == y->sin_addr.s_addr);
    }
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, wildcard_a ? &in6addr_any : &y->sin6_addr,
                      sizeof x->sin6_addr) == 0;
    }
    return false;
}

int wp_listener_find_by_address(const wp_config *c, const struct sockaddr *sa)
{
    if (!c || !sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
        return -1;
    for (int pass = 0; pass < 2; pass++) /* exact, then 0.0.0.0:port / [::]:port */
        for (size_t i = 0; i < c->nlisteners; i++) {
            const wp_listener *l = &c->listeners[i];
            if (l->bound && same_ip_port((const struct sockaddr *)&l->addr.sa, sa, pass == 1))
                return (int)i;
        }
    return -1;
}

int wp_config_find_cluster(const wp_config *c, const char *name)
{
    if (!c || !name)
        return -1;
    if (c->cluster_names) {
        void **slot = wf_strmap_slot(c->cluster_names, name, false);
        return slot && *slot ? (int)((intptr_t)*slot - 1) : -1;
    }
    for (size_t i = 0; i < c->nclusters; i++) {
        if (c->clusters[i].name && strcmp(c->clusters[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

bool wp_config_own(wp_config *c, void *p, void (*free_fn)(void *))
{
    if (c->nowned == c->capowned) {
        size_t cap = c->capowned ? c->capowned * 2 : 8;
        wp_config_owned *o = realloc(c->owned, cap * sizeof(*o));
        if (!o) {
            free_fn(p);
            return false;
        }
        c->owned = o;
        c->capowned = cap;
    }
    c->owned[c->nowned++] = (wp_config_owned){p, free_fn};
    return true;
}

static bool remember(wp_config *c, pcre2_code *code)
{
    if (c->nregexes == c->capregexes) {
        size_t cap = c->capregexes ? c->capregexes * 2 : 16;
        pcre2_code **r = realloc(c->regexes, cap * sizeof(*r));
        if (!r)
            return false;
        c->regexes = r;
        c->capregexes = cap;
    }
    c->regexes[c->nregexes++] = code;
    return true;
}

static pcre2_code *add_regex(wp_config *c, const char *re, bool full, wf_strbuf *err)
{
    char why[256];
    if (!re)
        re = "";
    if (wf_re2_check(re, why, sizeof(why))) {
        wf_strbuf_puts(err, why);
        return NULL;
    }
    uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY;
    if (full)
        opts |= PCRE2_ANCHORED | PCRE2_ENDANCHORED;
    int code;
    PCRE2_SIZE off;
    pcre2_code *pc = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL);
    if (!pc) {
        PCRE2_UCHAR msg[200];
        if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
            strcpy((char *)msg, "invalid regular expression");
        wf_strbuf_printf(err, "error parsing regexp: %s: `%s`", (const char *)msg, re);
        return NULL;
    }
    (void)pcre2_jit_compile(pc, PCRE2_JIT_COMPLETE); /* the interpreter is the fallback */
    if (!remember(c, pc)) {
        pcre2_code_free(pc);
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    return pc;
}

pcre2_code *wp_config_add_regex(wp_config *c, const char *re, wf_strbuf *err)
{
    return add_regex(c, re, true, err);
}

pcre2_code *wp_config_add_regex_search(wp_config *c, const char *re, wf_strbuf *err)
{
    return add_regex(c, re, false, err);
}

bool wp_config_add_sds_ctx(wp_config *c, struct wp_sds_ctx *s)
{
    if (c->nsds_ctxs == c->capsds_ctxs) {
        size_t cap = c->capsds_ctxs ? c->capsds_ctxs * 2 : 8;
        struct wp_sds_ctx **r = realloc(c->sds_ctxs, cap * sizeof(*r));
        if (!r) {
            wp_sds_ctx_free(s);
            return false;
        }
        c->sds_ctxs = r;
        c->capsds_ctxs = cap;
    }
    c->sds_ctxs[c->nsds_ctxs++] = s;
    return true;
}

struct wf_tls_ctx *wp_tls_config_acquire(const wp_tls_config *t)
{
    return t->sds ? wp_sds_ctx_acquire(t->sds) : wf_tls_ctx_ref(t->ctx);
}

bool wp_config_add_tls_ctx(wp_config *c, struct wf_tls_ctx *ctx)
{
    if (c->ntls_ctxs == c->captls_ctxs) {
        size_t cap = c->captls_ctxs ? c->captls_ctxs * 2 : 8;
        struct wf_tls_ctx **r = realloc(c->tls_ctxs, cap * sizeof(*r));
        if (!r) {
            wf_tls_ctx_free(ctx);
            return false;
        }
        c->tls_ctxs = r;
        c->captls_ctxs = cap;
    }
    c->tls_ctxs[c->ntls_ctxs++] = ctx;
    return true;
}
