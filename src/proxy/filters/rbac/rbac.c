/*
 * rbac.c - the RBAC filters' config, stats and decision (rbac.h).
 */
#include "proxy/filters/rbac/rbac.h"

#include <string.h>

#include "core/log.h"
#include "core/strbuf.h"
#include "proxy/http/filter.h"
#include "proxy/net/network_filter.h"
#include "proxy/stats/stats.h"
#include "proxy/stats/stats.h"

/* Envoy's statPrefixJoin. */
static void prefix_join(wf_strbuf *b, const char *token)
{
    if (b->len && b->data[b->len - 1] != '.')
        wf_strbuf_putc(b, '.');
    wf_strbuf_puts(b, token);
}

static uint32_t reg(struct wp_stats *st, const char *prefix, const char *rules_prefix,
                    const char *name)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_puts(&b, prefix);
    prefix_join(&b, "rbac.");
    if (*rules_prefix)
        prefix_join(&b, rules_prefix);
    prefix_join(&b, name);
    uint32_t slot = wf_strbuf_failed(&b) ? WP_STAT_INVALID : wp_stats_counter(st, b.data);
    wf_strbuf_free(&b);
    return slot;
}

int wp_rbac_register_stats(struct wp_stats *st, wp_rbac_config *c, const char *prefix)
{
    static const char *const names[WP_RBAC_ST_COUNT_] = {"allowed", "denied", "shadow_allowed",
                                                         "shadow_denied"};
    int rc = 0;
    for (int i = 0; i < WP_RBAC_ST_COUNT_; i++) {
        bool shadow = i == WP_RBAC_ST_SHADOW_ALLOWED || i == WP_RBAC_ST_SHADOW_DENIED;
        c->st[i] = reg(st, prefix, shadow ? c->shadow_stat_prefix : c->rules_stat_prefix, names[i]);
        if (c->st[i] == WP_STAT_INVALID)
            rc = -1;
    }
    return rc;
}

int wp_rbac_register_all_stats(struct wp_stats *st, const wp_config *c)
{
    int rc = 0;
    wf_strbuf b = WF_STRBUF_INIT;
    for (size_t i = 0; i < c->nhcms; i++) {
        const wp_hcm *h = c->hcms[i];
        const wp_fchain *fc = h->filter_chain;
        for (uint8_t k = 0; fc && k < fc->n; k++) {
            if (strcmp(fc->e[k].type->name, WP_RBAC_HTTP_NAME) != 0)
                continue;
            wf_strbuf_reset(&b);
            wf_strbuf_printf(&b, "http.%s.", h->stat_prefix);
            if (wf_strbuf_failed(&b) ||
                wp_rbac_register_stats(st, (wp_rbac_config *)(uintptr_t)fc->e[k].config, b.data) !=
                    0)
                rc = -1;
        }
    }
    wf_strbuf_free(&b);
    for (size_t i = 0; i < c->nlisteners; i++) {
        const wp_listener *l = &c->listeners[i];
        for (size_t ch = 0; ch <= l->nchains; ch++) {
            const wp_filter_chain *fc = ch < l->nchains ? &l->chains[ch] : l->default_chain;
            for (size_t k = 0; fc && k < fc->nfilters; k++) {
                if (fc->filters[k].kind != WP_NF_RBAC)
                    continue;
                wp_rbac_config *rc_ = (wp_rbac_config *)(uintptr_t)fc->filters[k].config;
                if (wp_rbac_register_stats(st, rc_, rc_->stat_prefix) != 0)
                    rc = -1;
            }
        }
    }
    return rc;
}

/* The rbac logger's debug line, with the connection and stream when there is one. */
#define RBAC_DEBUG(conn_id, stream_id, ...)                                                        \
    do {                                                                                           \
        if (stream_id)                                                                             \
            WF_STREAM_LOG(WF_LC_rbac, WF_LOG_DEBUG, conn_id, stream_id, __VA_ARGS__);              \
        else                                                                                       \
            WF_CONN_LOG(WF_LC_rbac, WF_LOG_DEBUG, conn_id, __VA_ARGS__);                           \
    } while (0)

/* The shadow rules: counted and published, never enforced. */
static void check_shadow(const wp_rbac_config *c, wp_rbac_input *in, struct wp_stats_shard *sh,
                         wp_stream_info *si, uint64_t conn_id, uint64_t stream_id)
{
    int m = -1;
    bool ok = wp_rbac_allowed(c->shadow, in, &m);
    wp_stat_add(sh, c->st[ok ? WP_RBAC_ST_SHADOW_ALLOWED : WP_RBAC_ST_SHADOW_DENIED], 1);
    RBAC_DEBUG(conn_id, stream_id, "shadow %s, matched policy %s", ok ? "allowed" : "denied",
               m >= 0 ? c->shadow->policies[m].name : "none");
    if (!si)
        return;
    if (m >= 0)
        wp_si_set_metadata(si, c->ns, c->md_policy_key, c->shadow->policies[m].name, NULL);
    wp_si_set_metadata(si, c->ns, c->md_result_key, ok ? "allowed" : "denied", NULL);
}

wp_rbac_verdict wp_rbac_check(const wp_rbac_config *c, wp_rbac_input *in, struct wp_stats_shard *sh,
                              wp_stream_info *si, uint64_t conn_id, uint64_t stream_id)
{
    wp_rbac_verdict v = {true, NULL, -1};
    if (c->shadow)
        check_shadow(c, in, sh, si, conn_id, stream_id);
    if (!c->rules) {
        RBAC_DEBUG(conn_id, stream_id, "no engine, allowed by default");
        return v;
    }
    v.allowed = wp_rbac_allowed(c->rules, in, &v.policy);
    if (c->rules->action == WP_RBAC_LOG && si) /* Envoy's handleAction, enforced mode */
        wp_si_set_metadata(si, "envoy.common", "access_log_hint", v.policy >= 0 ? "true" : "false",
                           NULL);
    wp_stat_add(sh, c->st[v.allowed ? WP_RBAC_ST_ALLOWED : WP_RBAC_ST_DENIED], 1);
    if (v.allowed) {
        RBAC_DEBUG(conn_id, stream_id, "enforced allowed, matched policy %s",
                   v.policy >= 0 ? c->rules->policies[v.policy].name : "none");
        return v;
    }
    v.details = v.policy >= 0 ? c->rules->policies[v.policy].details : WP_RBAC_DENIED_NONE;
    RBAC_DEBUG(conn_id, stream_id, "enforced denied, matched policy %s",
               v.policy >= 0 ? c->rules->policies[v.policy].name : "none");
    return v;
}
