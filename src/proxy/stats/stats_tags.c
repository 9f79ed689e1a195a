/*
 * stats_tags.c - tag extraction for /stats/prometheus (stats.h): Envoy's default extractors
 * and StatsConfig.stats_tags, applied as Envoy's TagProducerImpl does
 * (source/common/stats/tag_producer_impl.cc, tag_extractor_impl.cc).
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/stats/stats_internal.h"

/* ------------------------------------------------------------------ tag extraction */

/* Envoy's default tag extractors (source/common/config/well_known_names.cc, revision with
 * addTokenized): the regex extractors first, then the tokenized ones, each in Envoy's order
 * (Envoy's addDefaultExtractors adds them in that order [verify]). Tokenized patterns
 * ("cluster.$.**") are written here as the equivalent regexes: '*' is one dot-free token, '$'
 * the tag value, removed with its following dot. Left out (weft has no such stats, tag names
 * not verified): ssl curves/sigalgs/versions, listener_local_ratelimit, dns_filter. */
#define ADDR_RE "(?:(?:\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}|\\[[a-fA-F_\\d]+\\])_\\d+)"

typedef struct {
    const char *name;
    const char *regex;
    const char *substr;
    const char *negative;
} default_tag;

static const default_tag default_tags[] = {
    {"envoy.response_code", "_rq(_(\\d{3}))$", "_rq_", NULL},
    {"envoy.response_code_class", "_rq_((\\d))xx$", "_rq_", NULL},
    {"envoy.dynamo_partition_id",
     "^http\\.[^.]+\\.dynamodb\\.table\\.[^.]+\\.capacity\\.[^.]+(\\.__partition_id=(\\w{7}))$",
     ".dynamodb.table.", NULL},
    {"envoy.dynamo_operation",
     "^http\\.[^.]+\\.dynamodb.(?:operation|table\\.[^.]+\\.capacity)(\\.([^.]+))(?:\\.|$)",
     ".dynamodb.", NULL},
    {"envoy.dynamo_table", "^http\\.[^.]+\\.dynamodb.(?:table|error)\\.(([^.]+)\\.)", ".dynamodb.",
     NULL},
    {"envoy.ssl_cipher", "^listener\\..*?\\.ssl\\.ciphers(\\.([\\w-]+))$", ".ssl.ciphers.", NULL},
    {"cipher_suite", "^cluster\\.[^.]+\\.ssl\\.ciphers(\\.([\\w-]+))$", ".ssl.ciphers.", NULL},
    {"envoy.http_conn_manager_prefix", "^listener\\..*?\\.http\\.(([^.]+)\\.)", ".http.", NULL},
    {"envoy.worker_id",
     "^(?:listener\\.(?:" ADDR_RE "|[^.]+)\\.|server\\.|listener_manager\\.)worker_((\\d+)\\.)",
     NULL, NULL},
    {"envoy.listener_address", "^listener\\.((" ADDR_RE "|[^.]+)\\.)", NULL, "admin"},
    {"envoy.rds_route_config", "^http\\.[^.]+\\.rds\\.(([\\w.-]+)\\.)\\w+?$", ".rds.", NULL},
    /* tokenized */
    {"envoy.mongo_callsite",
     "^mongo\\.[^.]+\\.collection\\.[^.]+\\.callsite\\.(([^.]+)\\.)query(?:\\.|$)", NULL, NULL},
    {"envoy.mongo_collection",
     "^mongo\\.[^.]+\\.collection\\.(([^.]+)\\.)(?:[^.]+\\.)*query\\.[^.]+$", NULL, NULL},
    {"envoy.mongo_cmd", "^mongo\\.[^.]+\\.cmd\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.grpc_bridge_method", "^cluster\\.[^.]+\\.grpc\\.[^.]+\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.http_user_agent", "^http\\.[^.]+\\.user_agent\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.virtual_cluster", "^vhost\\.[^.]+\\.vcluster\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.fault_downstream_cluster", "^http\\.[^.]+\\.fault\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.grpc_bridge_service", "^cluster\\.[^.]+\\.grpc\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.tcp_prefix", "^tcp\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.udp_prefix", "^udp\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.clientssl_prefix", "^auth\\.clientssl\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.ratelimit_prefix", "^ratelimit\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.cluster_name", "^cluster\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.ext_authz_prefix", "^cluster\\.[^.]+\\.ext_authz\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.ext_authz_prefix", "^http\\.[^.]+\\.ext_authz\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.http_conn_manager_prefix", "^http\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.virtual_host", "^vhost\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.mongo_prefix", "^mongo\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.route", "^vhost\\.[^.]+\\.route\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.thrift_prefix", "^thrift\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.redis_prefix", "^redis\\.(([^.]+)\\.)", NULL, NULL},
    {"envoy.local_http_ratelimit_prefix", "^(([^.]+)\\.)http_local_rate_limit(?:\\.|$)", NULL,
     NULL},
    {"envoy.local_network_ratelimit_prefix", "^local_rate_limit\\.(([^.]+)\\.)", NULL, NULL},
};
#define N_DEFAULT_TAGS (sizeof default_tags / sizeof default_tags[0])

typedef struct {
    const char *name;
    pcre2_code *re;
    const char *substr;   /* NULL: none */
    const char *negative; /* NULL: none */
    const char *prefix;   /* first token the name must have; "" for any */
    uint32_t ncaps;
} extractor;

typedef struct {
    const char *name;
    const char *value;
} fixed_tag;

struct wp_stats_tags {
    wf_arena arena;
    extractor *ex;
    size_t nex, excap;
    fixed_tag *fixed;
    size_t nfixed;
    uint32_t max_caps;
    pcre2_match_context *mctx;
};

/* Envoy's TagExtractorImplBase::extractRegexPrefix: "^word\." or "^word(?=\.)" gives "word". */
static const char *regex_prefix(wf_arena *a, const char *re)
{
    if (re[0] != '^')
        return "";
    size_t i = 1;
    while ((re[i] >= 'a' && re[i] <= 'z') || (re[i] >= 'A' && re[i] <= 'Z') ||
           (re[i] >= '0' && re[i] <= '9') || re[i] == '_')
        i++;
    if (i == 1 || !re[i])
        return "";
    if (re[i + 1] == '\0' || strncmp(re + i, "\\.", 2) == 0 || strncmp(re + i, "(?=\\.)", 6) == 0)
        return wf_arena_strndup(a, re + 1, i - 1);
    return "";
}

static int add_extractor(wp_stats_tags *t, const char *name, const char *regex, const char *substr,
                         const char *negative, wf_strbuf *err)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        if (err)
            wf_strbuf_printf(err, "tag '%s': invalid regex '%s': %s at offset %zu", name, regex,
                             (const char *)msg, (size_t)eo);
        return -1;
    }
    uint32_t ncaps = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &ncaps);
    if (ncaps == 0 || t->nex == t->excap) {
        if (err && ncaps == 0)
            wf_strbuf_printf(err, "tag '%s': regex '%s' has no capture group", name, regex);
        pcre2_code_free(re);
        return -1;
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional speed-up */
    const char *prefix = regex_prefix(&t->arena, regex);
    extractor *e = &t->ex[t->nex++];
    *e = (extractor){name, re, substr, negative, prefix ? prefix : "", ncaps};
    if (ncaps > t->max_caps)
        t->max_caps = ncaps;
    return 0;
}

static int add_defaults_named(wp_stats_tags *t, const char *only, wf_strbuf *err)
{
    int added = 0;
    for (size_t i = 0; i < N_DEFAULT_TAGS; i++) {
        const default_tag *d = &default_tags[i];
        if (only && strcmp(only, d->name) != 0)
            continue;
        if (add_extractor(t, d->name, d->regex, d->substr, d->negative, err) != 0)
            return -1;
        added++;
    }
    return added;
}

static int add_spec(wp_stats_tags *t, wf_strmap *names, const json_t *spec, size_t i,
                    wf_strbuf *err)
{
    const char *name = json_string_value(json_object_get(spec, "tag_name"));
    const json_t *jre = json_object_get(spec, "regex");
    const json_t *jfixed = json_object_get(spec, "fixed_value");
    if (!json_is_object(spec) || !name || !*name || (jre && !json_is_string(jre)) ||
        (jfixed && !json_is_string(jfixed)) || (jre && jfixed)) {
        if (err)
            wf_strbuf_printf(err,
                             "stats_tags[%zu]: needs a tag_name and at most one of regex, "
                             "fixed_value (strings)",
                             i);
        return -1;
    }
    void **seen = wf_strmap_slot(names, name, true);
    if (!seen || *seen) {
        if (err && seen)
            wf_strbuf_printf(err, "Tag name '%s' specified twice.", name);
        return -1;
    }
    *seen = (void *)1;
    const char *n = wf_arena_strdup(&t->arena, name);
    if (!n)
        return -1;
    if (jfixed) {
        const char *v = wf_arena_strdup(&t->arena, json_string_value(jfixed));
        if (!v)
            return -1;
        t->fixed[t->nfixed++] = (fixed_tag){n, v};
        return 0;
    }
    if (jre)
        return add_extractor(t, n, json_string_value(jre), NULL, NULL, err);
    int added = add_defaults_named(t, n, err);
    if (added == 0 && err)
        wf_strbuf_printf(err,
                         "No regex specified for tag specifier and no default regex for name: "
                         "'%s'",
                         name);
    return added > 0 ? 0 : -1;
}

static int read_config(const json_t *cfg, bool *use_defaults, const json_t **specs, wf_strbuf *err)
{
    *use_defaults = true;
    *specs = NULL;
    if (!cfg)
        return 0;
    const json_t *u = json_object_get(cfg, "use_all_default_tags");
    if (json_is_object(u)) /* BoolValue wrapper spelled as an object */
        u = json_object_get(u, "value");
    *specs = json_object_get(cfg, "stats_tags");
    if (!json_is_object(cfg) || (u && !json_is_boolean(u)) || (*specs && !json_is_array(*specs))) {
        if (err)
            wf_strbuf_puts(err, "stats_config: use_all_default_tags must be a bool and "
                                "stats_tags a list");
        return -1;
    }
    if (u)
        *use_defaults = json_is_true(u);
    return 0;
}

wp_stats_tags *wp_stats_tags_from_config(const json_t *stats_config, wf_strbuf *err)
{
    bool use_defaults;
    const json_t *specs;
    if (read_config(stats_config, &use_defaults, &specs, err) != 0)
        return NULL;
    size_t nspecs = specs ? json_array_size(specs) : 0;
    wp_stats_tags *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    wf_arena_init(&t->arena);
    t->excap = 2 * N_DEFAULT_TAGS + nspecs;
    t->ex = wf_arena_alloc(&t->arena, t->excap * sizeof *t->ex);
    t->fixed = wf_arena_alloc(&t->arena, (nspecs + 1) * sizeof *t->fixed);
    t->mctx = pcre2_match_context_create(NULL);
    wf_strmap *names = wf_strmap_new(&t->arena);
    if (!t->ex || !t->fixed || !t->mctx || !names)
        goto fail;
    pcre2_set_match_limit(t->mctx, WP_STATS_REGEX_MATCH_LIMIT);
    if (use_defaults) {
        if (add_defaults_named(t, NULL, err) < 0)
            goto fail;
        for (size_t i = 0; i < N_DEFAULT_TAGS; i++) {
            void **v = wf_strmap_slot(names, default_tags[i].name, true);
            if (!v)
                goto fail;
            *v = (void *)1;
        }
    }
    for (size_t i = 0; i < nspecs; i++) {
        if (add_spec(t, names, json_array_get(specs, i), i, err) != 0)
            goto fail;
    }
    return t;
fail:
    wp_stats_tags_free(t);
    return NULL;
}

void wp_stats_tags_free(wp_stats_tags *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nex; i++)
        pcre2_code_free(t->ex[i].re);
    pcre2_match_context_free(t->mctx);
    wf_arena_destroy(&t->arena);
    free(t);
}

/* Run one extractor on the original name (Envoy matches every extractor against the full name
 * and removes the union of the first groups at the end). */
static bool run_extractor(const wp_stats_tags *t, const extractor *e, const char *name, size_t len,
                          pcre2_match_data *md, bool *removed, wp_tag_hit *hit)
{
    if (e->substr && !strstr(name, e->substr))
        return false;
    if (pcre2_match(e->re, (PCRE2_SPTR)name, len, 0, 0, md, t->mctx) < 0)
        return false;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    PCRE2_SIZE rs = ov[2], re = ov[3];
    PCRE2_SIZE vs = e->ncaps >= 2 ? ov[4] : rs, ve = e->ncaps >= 2 ? ov[5] : re;
    if (vs == PCRE2_UNSET)
        vs = ve = 0;
    if (e->negative && strlen(e->negative) == ve - vs && !memcmp(name + vs, e->negative, ve - vs))
        return false;
    for (PCRE2_SIZE k = rs; rs != PCRE2_UNSET && k < re; k++)
        removed[k] = true;
    *hit = (wp_tag_hit){e->name, name + vs, ve - vs};
    return true;
}

/* Extract tags of `name`: hits (fixed tags first, then extractors without a prefix, then those
 * whose prefix is the name's first token, as Envoy's TagProducerImpl) and the removed chars.
 * hits must hold nfixed + nex entries. Returns the number of hits. */
static size_t extract(const wp_stats_tags *t, const char *name, pcre2_match_data *md, bool *removed,
                      wp_tag_hit *hits)
{
    size_t len = strlen(name), n = 0;
    memset(removed, 0, len);
    for (size_t i = 0; i < t->nfixed; i++)
        hits[n++] = (wp_tag_hit){t->fixed[i].name, t->fixed[i].value, strlen(t->fixed[i].value)};
    const char *dot = strchr(name, '.');
    size_t tok = dot ? (size_t)(dot - name) : 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < t->nex; i++) {
            const extractor *e = &t->ex[i];
            bool any = e->prefix[0] == '\0';
            if (pass == 0 ? !any
                          : (any || !dot || strlen(e->prefix) != tok ||
                             memcmp(e->prefix, name, tok) != 0))
                continue;
            if (run_extractor(t, e, name, len, md, removed, &hits[n]))
                n++;
        }
    }
    return n;
}

static void put_extracted_name(wf_strbuf *out, const char *name, const bool *removed)
{
    for (size_t i = 0; name[i]; i++) {
        if (!removed[i])
            wf_strbuf_putc(out, name[i]);
    }
}

int wp_stats_tags_extract(const wp_stats_tags *t, const char *name, wf_strbuf *name_out,
                          wf_strbuf *tags_out)
{
    size_t len = strlen(name);
    bool *removed = malloc(len + 1);
    wp_tag_hit *hits = malloc((t->nfixed + t->nex + 1) * sizeof *hits);
    pcre2_match_data *md = pcre2_match_data_create(t->max_caps + 1, NULL);
    int n = -1;
    if (removed && hits && md) {
        n = (int)extract(t, name, md, removed, hits);
        if (name_out)
            put_extracted_name(name_out, name, removed);
        for (int i = 0; tags_out && i < n; i++)
            wf_strbuf_printf(tags_out, "%s%s=%.*s", i ? "," : "", hits[i].name, (int)hits[i].vlen,
                             hits[i].value);
    }
    free(removed);
    free(hits);
    pcre2_match_data_free(md);
    return n;
}

/* ------------------------------------------------------------------ scratch for renderers */

int wp_tag_scratch_init(wp_tag_scratch *s, const wp_stats_tags *t)
{
    memset(s, 0, sizeof *s);
    if (!t)
        return 0;
    s->md = pcre2_match_data_create(t->max_caps + 1, NULL);
    s->hits = malloc((t->nfixed + t->nex + 1) * sizeof *s->hits);
    if (!s->md || !s->hits) {
        wp_tag_scratch_free(s);
        return -1;
    }
    return 0;
}

void wp_tag_scratch_free(wp_tag_scratch *s)
{
    pcre2_match_data_free(s->md);
    free(s->hits);
    free(s->removed);
    memset(s, 0, sizeof *s);
}

int wp_tags_extract_into(const wp_stats_tags *t, const char *name, wp_tag_scratch *s)
{
    size_t len = strlen(name);
    if (len + 1 > s->removed_cap) {
        bool *r = realloc(s->removed, len + 1);
        if (!r)
            return -1;
        s->removed = r;
        s->removed_cap = len + 1;
    }
    return (int)extract(t, name, s->md, s->removed, s->hits);
}
