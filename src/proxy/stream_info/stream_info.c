/*
 * stream_info.c - response flag names and header lookups of the per-request record
 * (stream_info.h).
 *
 * Flag names are copied from Envoy's source/common/stream_info/utility.h
 * (ResponseFlagUtils::ALL_RESPONSE_STRINGS_FLAGS, short and PascalCase long strings);
 * %RESPONSE_FLAGS% joins the short names of the flags in the order they were set with ','
 * (utility.cc toString, insertion order since the vector-based StreamInfoImpl), "-" when none.
 * [verify] "DR"/"DownstreamRemoteReset" and "UDO"/"UnconditionalDropOverload" were not in
 * the utility.h revision that could be read; they follow the enum names in stream_info.h
 * and the reference (section 1.2), which marks UDO as unconfirmed.
 */
#include "proxy/stream_info/stream_info.h"

#include <string.h>
#include <strings.h>

static const char *const SHORT_NAMES[WP_RF_COUNT_] = {
    [WP_RF_LH] = "LH",     [WP_RF_UH] = "UH",     [WP_RF_UT] = "UT",   [WP_RF_LR] = "LR",
    [WP_RF_UR] = "UR",     [WP_RF_UF] = "UF",     [WP_RF_UC] = "UC",   [WP_RF_UO] = "UO",
    [WP_RF_NR] = "NR",     [WP_RF_DI] = "DI",     [WP_RF_FI] = "FI",   [WP_RF_RL] = "RL",
    [WP_RF_UAEX] = "UAEX", [WP_RF_RLSE] = "RLSE", [WP_RF_DC] = "DC",   [WP_RF_URX] = "URX",
    [WP_RF_SI] = "SI",     [WP_RF_IH] = "IH",     [WP_RF_DPE] = "DPE", [WP_RF_UMSDR] = "UMSDR",
    [WP_RF_RFCF] = "RFCF", [WP_RF_NFCF] = "NFCF", [WP_RF_DT] = "DT",   [WP_RF_UPE] = "UPE",
    [WP_RF_NC] = "NC",     [WP_RF_OM] = "OM",     [WP_RF_DF] = "DF",   [WP_RF_DO] = "DO",
    [WP_RF_DR] = "DR",     [WP_RF_UDO] = "UDO",
};

static const char *const LONG_NAMES[WP_RF_COUNT_] = {
    [WP_RF_LH] = "FailedLocalHealthCheck",
    [WP_RF_UH] = "NoHealthyUpstream",
    [WP_RF_UT] = "UpstreamRequestTimeout",
    [WP_RF_LR] = "LocalReset",
    [WP_RF_UR] = "UpstreamRemoteReset",
    [WP_RF_UF] = "UpstreamConnectionFailure",
    [WP_RF_UC] = "UpstreamConnectionTermination",
    [WP_RF_UO] = "UpstreamOverflow",
    [WP_RF_NR] = "NoRouteFound",
    [WP_RF_DI] = "DelayInjected",
    [WP_RF_FI] = "FaultInjected",
    [WP_RF_RL] = "RateLimited",
    [WP_RF_UAEX] = "UnauthorizedExternalService",
    [WP_RF_RLSE] = "RateLimitServiceError",
    [WP_RF_DC] = "DownstreamConnectionTermination",
    [WP_RF_URX] = "UpstreamRetryLimitExceeded",
    [WP_RF_SI] = "StreamIdleTimeout",
    [WP_RF_IH] = "InvalidEnvoyRequestHeaders",
    [WP_RF_DPE] = "DownstreamProtocolError",
    [WP_RF_UMSDR] = "UpstreamMaxStreamDurationReached",
    [WP_RF_RFCF] = "ResponseFromCacheFilter",
    [WP_RF_NFCF] = "NoFilterConfigFound",
    [WP_RF_DT] = "DurationTimeout",
    [WP_RF_UPE] = "UpstreamProtocolError",
    [WP_RF_NC] = "NoClusterFound",
    [WP_RF_OM] = "OverloadManagerTerminated",
    [WP_RF_DF] = "DnsResolutionFailed",
    [WP_RF_DO] = "DropOverload",
    [WP_RF_DR] = "DownstreamRemoteReset",
    [WP_RF_UDO] = "UnconditionalDropOverload",
};

const char *wp_flag_short(wp_response_flag f)
{
    return (unsigned)f < WP_RF_COUNT_ ? SHORT_NAMES[f] : "-";
}

const char *wp_flag_long(wp_response_flag f)
{
    return (unsigned)f < WP_RF_COUNT_ ? LONG_NAMES[f] : "-";
}

bool wp_si_has_flag(const wp_stream_info *si, wp_response_flag f)
{
    for (size_t i = 0; i < si->nflags; i++) {
        if (si->flags[i] == (uint8_t)f)
            return true;
    }
    return false;
}

void wp_si_set_flag(wp_stream_info *si, wp_response_flag f)
{
    if ((unsigned)f >= WP_RF_COUNT_ || wp_si_has_flag(si, f))
        return;
    if (si->nflags >= WP_MAX_FLAGS)
        return; /* more distinct flags than Envoy ever sets on one stream; keep the first */
    si->flags[si->nflags++] = (uint8_t)f;
}

size_t wp_si_flags_string(const wp_stream_info *si, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return 0;
    out[0] = '\0';
    for (size_t i = 0; i < si->nflags && i < WP_MAX_FLAGS; i++) {
        const char *name = wp_flag_short((wp_response_flag)si->flags[i]);
        size_t n = strlen(name);
        if (len + (len ? 1 : 0) + n + 1 > cap)
            break;
        if (len)
            out[len++] = ',';
        memcpy(out + len, name, n);
        len += n;
        out[len] = '\0';
    }
    if (len == 0 && cap >= 2) {
        out[0] = '-';
        out[1] = '\0';
        len = 1;
    }
    return len;
}

static const char *str_or_null(const char *p, size_t n, size_t *len)
{
    if (!p)
        return NULL;
    *len = n;
    return p;
}

const char *wp_si_req_header(const wp_stream_info *si, const char *name, size_t *len)
{
    size_t dummy;
    if (!len)
        len = &dummy;
    if (!si->request || !name)
        return NULL;
    const h1_message *m = si->request;
    if (name[0] == ':') {
        if (strcmp(name, ":method") == 0)
            return str_or_null(m->method.p, m->method.len, len);
        if (strcmp(name, ":path") == 0)
            return str_or_null(m->target.p, m->target.len, len);
        if (strcmp(name, ":scheme") == 0)
            return str_or_null("http", 4, len);
        if (strcmp(name, ":authority") == 0)
            name = "host";
        else
            return NULL;
    }
    const h1_header *h = h1_find_header(m->headers, m->nheaders, name);
    return h ? str_or_null(h->value.p ? h->value.p : "", h->value.len, len) : NULL;
}

const char *wp_si_resp_header(const wp_stream_info *si, const char *name, size_t *len)
{
    size_t dummy;
    if (!len)
        len = &dummy;
    if (name && si->server_name && strcasecmp(name, "server") == 0)
        return str_or_null(si->server_name, strlen(si->server_name), len);
    if (!si->response_headers || !name || name[0] == ':')
        return NULL;
    const h1_header *h = h1_find_header(si->response_headers, si->nresponse_headers, name);
    return h ? str_or_null(h->value.p ? h->value.p : "", h->value.len, len) : NULL;
}

const char *wp_si_resp_trailer(const wp_stream_info *si, const char *name, size_t *len)
{
    size_t dummy;
    if (!len)
        len = &dummy;
    if (!si->response_trailers || !name || name[0] == ':')
        return NULL;
    const h1_header *h = h1_find_header(si->response_trailers, si->nresponse_trailers, name);
    return h ? str_or_null(h->value.p ? h->value.p : "", h->value.len, len) : NULL;
}

/* ---------- dynamic metadata ---------- */

static wp_dyn_md_entry *md_find(wp_dyn_md *md, const char *ns, const char *key)
{
    for (uint8_t i = 0; i < md->n; i++)
        if (strcmp(md->e[i].ns, ns) == 0 && strcmp(md->e[i].key, key) == 0)
            return &md->e[i];
    return NULL;
}

bool wp_si_set_metadata(wp_stream_info *si, const char *ns, const char *key, const char *str,
                        const struct json_t *json)
{
    wp_dyn_md_entry *e = md_find(&si->dynamic_metadata, ns, key);
    if (!e) {
        if (si->dynamic_metadata.n >= WP_DYN_MD_MAX)
            return false;
        e = &si->dynamic_metadata.e[si->dynamic_metadata.n++];
    }
    *e = (wp_dyn_md_entry){ns, key, str, json};
    return true;
}

const wp_dyn_md_entry *wp_si_metadata(const wp_stream_info *si, const char *ns, const char *key)
{
    return md_find((wp_dyn_md *)&si->dynamic_metadata, ns, key);
}
