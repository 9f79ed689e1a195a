/*
 * proxy_stats_config.c - Istio's bootstrap stats_config (proxy_stats_config.h).
 */
#include "proxy/agent/proxy_stats_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "proxy/stats/stats_matcher.h"

const char *const wf_psc_annotation[WF_PSC_NKINDS] = {"sidecar.istio.io/statsInclusionPrefixes",
                                                      "sidecar.istio.io/statsInclusionSuffixes",
                                                      "sidecar.istio.io/statsInclusionRegexps"};
const char *const wf_psc_field[WF_PSC_NKINDS] = {"inclusionPrefixes", "inclusionSuffixes",
                                                 "inclusionRegexps"};

/* envoy_bootstrap.json stats_tags, in order (the place of extraStatTags, after mongo_prefix,
 * stays empty). */
static const char *const istio_tags[][2] = {
    {"cluster_name", "^cluster(\\.(.+);)"},
    {"http_conn_manager_prefix",
     "^http\\.(((?:[_.[:digit:]\\w]*|[_\\[\\]aAbBcCdDeEfF[:digit:]\\w\\:]*));\\.)"},
    {"thread_name", "^server(\\.(.+))\\.watchdog"},
    {"tcp_prefix", "^tcp\\.((.*?)\\.)\\w+?$"},
    {"response_code", "_rq(_(\\d{3}))$"},
    {"response_code_class", "_rq(_(\\dxx))$"},
    {"http_conn_manager_listener_prefix",
     "^listener(?=\\.).*?\\.http\\.(((?:[_.[:digit:]]*|[_\\[\\]aAbBcCdDeEfF[:digit:]]*))\\.)"},
    {"listener_address", "^listener\\.(((?:[_.[:digit:]]*|[_\\[\\]aAbBcCdDeEfF[:digit:]]*))\\.)"},
    {"mongo_prefix", "^mongo\\.(.+?)\\.(collection|cmd|cx_|op_|delays_|decoding_)(.*?)$"},
    {"cache", "(cache\\.(.+?)\\.)"},
    {"component", "(component\\.(.+?)\\.)"},
    {"tag", "(tag\\.(.+?);\\.)"},
    {"wasm_filter", "(wasm_filter\\.(.+?)\\.)"},
    {"authz_enforce_result", "rbac(\\.(allowed|denied))"},
    {"authz_dry_run_action", "(\\.istio_dry_run_(allow|deny)_)"},
    {"authz_dry_run_result", "(\\.shadow_(allowed|denied))"},
};

/* pkg/bootstrap/config.go: requiredEnvoyStatsMatcherInclusionPrefixes,
 * rbacEnvoyStatsMatcherInclusionSuffix (+ ",downstream_cx_active" =
 * requiredEnvoyStatsMatcherInclusionSuffixes), requiredEnvoyStatsMatcherInclusionRegexes. */
static const char *const required_prefixes[] = {
    "cluster_manager", "listener_manager", "server", "cluster.xds-grpc", "wasm", NULL};
static const char *const required_suffixes[] = {"rbac.allowed", "rbac.denied", "shadow_allowed",
                                                "shadow_denied", NULL};
static const char *const required_regexes[] = {"vhost\\..*\\.route\\..*", NULL};
#define DRAIN_SUFFIX "downstream_cx_active"

static const char *const kind_key[WF_PSC_NKINDS] = {"prefix", "suffix", "safe_regex"};

/* ---- walking the user patterns ------------------------------------------------------------ */

/* s with every "{pod_ip}" replaced by ip (malloc'd), or NULL when out of memory. */
static char *substitute(const char *s, const char *ip)
{
    static const char var[] = "{pod_ip}";
    wf_strbuf b = WF_STRBUF_INIT;
    for (const char *hit; (hit = strstr(s, var)) != NULL; s = hit + sizeof var - 1) {
        wf_strbuf_append(&b, s, (size_t)(hit - s));
        wf_strbuf_puts(&b, ip);
    }
    wf_strbuf_puts(&b, s);
    if (wf_strbuf_failed(&b)) {
        wf_strbuf_free(&b);
        return NULL;
    }
    wf_strbuf_putc(&b, '\0');
    return wf_strbuf_take(&b);
}

/* One pattern (len bytes) through the "{pod_ip}" substitution to fn. */
static int emit(const wf_psc_in *in, int kind, bool anno, size_t index, const char *pat, size_t len,
                wf_psc_visit_fn fn, void *arg)
{
    char *s = strndup(pat, len);
    if (!s)
        return -1;
    int rc = 0;
    if (!strstr(s, "{pod_ip}") || in->ips.n == 0) {
        rc = fn(kind, anno, index, s, arg);
        free(s);
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < in->ips.n; i++) {
        char *one = substitute(s, in->ips.v[i]);
        rc = one ? fn(kind, anno, index, one, arg) : -1;
        free(one);
    }
    free(s);
    return rc;
}

int wf_psc_visit(const wf_psc_in *in, int kind, wf_psc_visit_fn fn, void *arg)
{
    const char *a = in->anno[kind];
    if (a && *a) { /* strings.Split(a, ","): every item, empty ones too */
        size_t index = 0;
        for (const char *p = a;; index++) {
            size_t len = strcspn(p, ",");
            int rc = emit(in, kind, true, index, p, len, fn, arg);
            if (rc != 0)
                return rc;
            if (!p[len])
                return 0;
            p += len + 1;
        }
    }
    for (size_t i = 0; i < in->pc[kind].n; i++) {
        const char *s = in->pc[kind].v[i];
        int rc = emit(in, kind, false, i, s, strlen(s), fn, arg);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- building ----------------------------------------------------------------------------- */

/* {"prefix": s}, {"suffix": s} or {"safe_regex": {"regex": s}} appended to patterns. */
static int add_pattern(json_t *patterns, int kind, const char *s)
{
    json_t *p = kind == WF_PSC_REGEX ? json_pack("{s:{s:s}}", "safe_regex", "regex", s)
                                     : json_pack("{s:s}", kind_key[kind], s);
    return p ? json_array_append_new(patterns, p) : -1;
}

static int visit_add(int kind, bool from_annotation, size_t index, const char *pattern, void *arg)
{
    (void)from_annotation;
    (void)index;
    return add_pattern(arg, kind, pattern) != 0 ? -1 : 0;
}

static int add_required(json_t *patterns, int kind, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (add_pattern(patterns, kind, list[i]) != 0)
            return -1;
    return 0;
}

/* The template's inclusion_list.patterns. */
static json_t *inclusion_patterns(const wf_psc_in *in)
{
    static const char *const *const required[WF_PSC_NKINDS] = {required_prefixes, required_suffixes,
                                                               required_regexes};
    json_t *pats = json_array();
    if (!pats || add_pattern(pats, WF_PSC_PREFIX, "reporter=") != 0)
        goto fail;
    for (int k = 0; k < WF_PSC_NKINDS; k++) {
        if (wf_psc_visit(in, k, visit_add, pats) != 0 || add_required(pats, k, required[k]) != 0)
            goto fail;
        if (k == WF_PSC_SUFFIX && in->exit_on_zero_active &&
            add_pattern(pats, k, DRAIN_SUFFIX) != 0)
            goto fail;
    }
    if (add_pattern(pats, WF_PSC_PREFIX, "component") != 0 ||
        add_pattern(pats, WF_PSC_PREFIX, "istio") != 0)
        goto fail;
    return pats;
fail:
    json_decref(pats);
    return NULL;
}

static json_t *stats_tags(void)
{
    json_t *tags = json_array();
    for (size_t i = 0; tags && i < sizeof istio_tags / sizeof istio_tags[0]; i++) {
        json_t *t = json_pack("{s:s,s:s}", "tag_name", istio_tags[i][0], "regex", istio_tags[i][1]);
        if (!t || json_array_append_new(tags, t) != 0) {
            json_decref(tags);
            return NULL;
        }
    }
    return tags;
}

json_t *wf_psc_stats_config(const wf_psc_in *in)
{
    json_t *pats = inclusion_patterns(in), *tags = pats ? stats_tags() : NULL;
    if (!tags) {
        json_decref(pats);
        return NULL;
    }
    return json_pack("{s:b,s:o,s:{s:{s:o}}}", "use_all_default_tags", 0, "stats_tags", tags,
                     "stats_matcher", "inclusion_list", "patterns", pats);
}

/* ---- checking ----------------------------------------------------------------------------- */

const char *wf_psc_check_pattern(int kind, const char *pattern, char *buf, size_t cap)
{
    json_t *pats = json_array();
    json_t *sc =
        pats && add_pattern(pats, kind, pattern) == 0
            ? json_pack("{s:{s:{s:o}}}", "stats_matcher", "inclusion_list", "patterns", pats)
            : (json_decref(pats), NULL);
    if (!sc) {
        snprintf(buf, cap, "out of memory");
        return buf;
    }
    wf_strbuf why = WF_STRBUF_INIT;
    wp_stats_matcher *m = wp_stats_matcher_new(sc, NULL, &why);
    json_decref(sc);
    const char *ret = NULL;
    if (!m) {
        snprintf(buf, cap, "%s", why.len ? wf_strbuf_cstr(&why) : "out of memory");
        ret = buf;
    }
    wp_stats_matcher_free(m);
    wf_strbuf_free(&why);
    return ret;
}
