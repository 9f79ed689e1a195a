/*
 * authn.c - Istio's ComposePeerAuthentication for one workload (see authn.h).
 */
#include "pilot/authn.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROOT_NS_DEFAULT "istio-system"

const char *wf_mtls_mode_name(wf_mtls_mode m)
{
    switch (m) {
    case WF_MTLS_DISABLE:
        return "DISABLE";
    case WF_MTLS_PERMISSIVE:
        return "PERMISSIVE";
    case WF_MTLS_STRICT:
        return "STRICT";
    default:
        return "UNSET";
    }
}

wf_mtls_mode wf_mtls_mode_of(const wf_node *mtls)
{
    const char *m = wf_map_str(mtls, "mode");
    if (!m)
        return WF_MTLS_UNSET;
    if (strcasecmp(m, "STRICT") == 0)
        return WF_MTLS_STRICT;
    if (strcasecmp(m, "PERMISSIVE") == 0)
        return WF_MTLS_PERMISSIVE;
    if (strcasecmp(m, "DISABLE") == 0)
        return WF_MTLS_DISABLE;
    return WF_MTLS_UNSET;
}

/* ---- creation time ---- */

typedef struct ts {
    int64_t sec;
    int32_t nsec;
} ts;

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* RFC 3339 "2006-01-02T15:04:05[.frac](Z|+hh:mm|-hh:mm)". false when malformed. */
static bool parse_rfc3339(const char *s, ts *out)
{
    int y, mo, d, h, mi, se;
    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &se) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        se > 60)
        return false;
    const char *p = s + 19;
    int32_t ns = 0;
    if (*p == '.') {
        int n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 9)
                ns = ns * 10 + (*p - '0');
        if (n == 0)
            return false;
        for (; n < 9; n++)
            ns *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om))
            return false;
        off = (*p == '-' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    out->sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    out->nsec = ns;
    return true;
}

/* The zero time (Go's time.Time{}) when absent or malformed: older than any real time. */
static ts created(const wf_resource *r)
{
    ts t = {INT64_MIN, 0};
    const char *s = wf_map_str(r->metadata, "creationTimestamp");
    if (s && !parse_rfc3339(s, &t))
        t = (ts){INT64_MIN, 0};
    return t;
}

/* Istio's order: creation time, then name, then namespace. */
static bool older(const wf_resource *a, const wf_resource *b)
{
    ts x = created(a), y = created(b);
    if (x.sec != y.sec)
        return x.sec < y.sec;
    if (x.nsec != y.nsec)
        return x.nsec < y.nsec;
    int c = strcmp(a->name, b->name);
    return c != 0 ? c < 0 : strcmp(a->ns, b->ns) < 0;
}

/* ---- composition ---- */

static bool has_selector(const wf_resource *pa)
{
    return pa->t.policy && pa->t.policy->has_selector && pa->t.policy->selector.n > 0;
}

static int add_applied(wf_peer_authn *pa, size_t *cap, const wf_resource *r)
{
    if (pa->napplied == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        const wf_resource **v = realloc(pa->applied, nc * sizeof *v);
        if (!v)
            return -1;
        pa->applied = v;
        *cap = nc;
    }
    pa->applied[pa->napplied++] = r;
    return 0;
}

static int collect(const wf_store *s, const char *root, const char *ns, const wf_kvs *labels,
                   wf_peer_authn *out)
{
    const char *nss[2] = {root, ns};
    size_t cap = 0;
    for (int k = 0; k < 2; k++) {
        if (!nss[k] || !*nss[k] || (k == 1 && strcmp(nss[1], root) == 0))
            continue;
        size_t n = 0;
        const wf_resource *const *v = wf_store_kind_ns(s, WF_KIND_PEERAUTHENTICATION, nss[k], &n);
        for (size_t i = 0; i < n; i++) {
            if (has_selector(v[i]) && !wf_kvs_subset(&v[i]->t.policy->selector, labels))
                continue;
            if (add_applied(out, &cap, v[i]) != 0)
                return -1;
        }
    }
    return 0;
}

static void pick(const wf_resource **slot, const wf_resource *r)
{
    if (!*slot || older(r, *slot))
        *slot = r;
}

static int port_modes(wf_peer_authn *pa)
{
    const wf_node *plm = pa->wl ? wf_map_get(pa->wl->spec, "portLevelMtls") : NULL;
    if (!plm || plm->type != WF_NODE_MAP || plm->len == 0)
        return 0;
    pa->ports = calloc(plm->len, sizeof *pa->ports);
    if (!pa->ports)
        return -1;
    for (size_t i = 0; i < plm->len; i++) {
        const char *key = plm->u.entries[i].key;
        char *end = NULL;
        long port = key ? strtol(key, &end, 10) : 0;
        if (!key || end == key || *end || port < 1 || port > 65535)
            continue;
        wf_mtls_mode m = wf_mtls_mode_of(plm->u.entries[i].value);
        pa->ports[pa->nports++] =
            (wf_mtls_port){.port = (uint32_t)port, .mode = m == WF_MTLS_UNSET ? pa->mode : m};
    }
    return 0;
}

int wf_peer_authn_compose(const wf_store *store, const char *root_ns, const char *ns,
                          const wf_kvs *labels, wf_peer_authn *out)
{
    static const wf_kvs none = {0};
    if (!out)
        return -1;
    *out = (wf_peer_authn){.mode = WF_MTLS_PERMISSIVE};
    if (!store)
        return -1;
    const char *root = root_ns && *root_ns ? root_ns : ROOT_NS_DEFAULT;
    if (collect(store, root, ns, labels ? labels : &none, out) != 0)
        goto oom;
    for (size_t i = 0; i < out->napplied; i++) {
        const wf_resource *r = out->applied[i];
        bool in_root = strcmp(r->ns, root) == 0;
        if (!has_selector(r))
            pick(in_root ? &out->mesh : &out->ns, r);
        else if (!in_root)
            pick(&out->wl, r);
    }
    const wf_resource *chain[3] = {out->mesh, out->ns, out->wl};
    for (int i = 0; i < 3; i++) {
        wf_mtls_mode m = chain[i] ? wf_mtls_mode_of(wf_map_get(chain[i]->spec, "mtls")) : 0;
        if (m != WF_MTLS_UNSET)
            out->mode = m;
    }
    if (port_modes(out) != 0)
        goto oom;
    return 0;
oom:
    wf_peer_authn_free(out);
    return -1;
}

wf_mtls_mode wf_peer_authn_port_mode(const wf_peer_authn *pa, uint32_t port)
{
    if (!pa)
        return WF_MTLS_PERMISSIVE;
    for (size_t i = 0; i < pa->nports; i++)
        if (pa->ports[i].port == port)
            return pa->ports[i].mode;
    return pa->mode;
}

void wf_peer_authn_free(wf_peer_authn *pa)
{
    if (!pa)
        return;
    free(pa->ports);
    free(pa->applied);
    *pa = (wf_peer_authn){.mode = WF_MTLS_PERMISSIVE};
}

/* ---- the inbound mTLS transport socket ---- */

#define DTC_TYPE                                                                                   \
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"

/* Istio's default cipher suites for ISTIO_MUTUAL servers (security.md §3.4). */
static const char *const istio_ciphers[] = {
    "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",   "AES256-GCM-SHA384",           "AES128-GCM-SHA256",
};

json_t *wf_authn_sds_secret(const char *name)
{
    return json_pack("{s:s,s:{s:{s:s,s:[{s:{s:s}}],s:b,s:s},s:s,s:s}}", "name", name, "sds_config",
                     "api_config_source", "api_type", "GRPC", "grpc_services", "envoy_grpc",
                     "cluster_name", "sds-grpc", "set_node_on_first_message_only", 1,
                     "transport_api_version", "V3", "initial_fetch_timeout", "0s",
                     "resource_api_version", "V3");
}

static const wf_node *mesh_get(const wf_meshcfg *mesh, const char *path)
{
    return mesh ? wf_meshcfg_get(mesh, path) : NULL;
}

static json_t *cipher_suites(const wf_meshcfg *mesh)
{
    const wf_node *cs = mesh_get(mesh, "meshMTLS.cipherSuites");
    json_t *out = json_array();
    size_t n = wf_seq_len(cs);
    for (size_t i = 0; out && i < n; i++)
        if (wf_node_str(wf_seq_at(cs, i)) &&
            json_array_append_new(out, json_string(wf_node_str(wf_seq_at(cs, i)))) != 0) {
            json_decref(out);
            return NULL;
        }
    bool dflt = out && json_array_size(out) == 0;
    for (size_t i = 0; dflt && i < sizeof istio_ciphers / sizeof *istio_ciphers; i++)
        if (json_array_append_new(out, json_string(istio_ciphers[i])) != 0) {
            json_decref(out);
            return NULL;
        }
    return out;
}

/* prefix matchers spiffe://<td>/ for the trust domain and each alias (BuildInboundTLS). */
static json_t *san_matchers(const wf_meshcfg *mesh)
{
    const char *td = mesh ? wf_meshcfg_str(mesh, "trustDomain") : NULL;
    json_t *sans = json_array();
    if (!sans)
        return NULL;
    json_t *m = json_pack("{s:o}", "prefix",
                          json_sprintf("spiffe://%s/", td && *td ? td : "cluster.local"));
    if (json_array_append_new(sans, m) != 0)
        goto fail;
    const wf_node *al = mesh_get(mesh, "trustDomainAliases");
    for (size_t i = 0; i < wf_seq_len(al); i++) {
        const char *a = wf_node_str(wf_seq_at(al, i));
        if (a && *a &&
            json_array_append_new(
                sans, json_pack("{s:o}", "prefix", json_sprintf("spiffe://%s/", a))) != 0)
            goto fail;
    }
    return sans;
fail:
    json_decref(sans);
    return NULL;
}

json_t *wf_authn_inbound_tls(const wf_meshcfg *mesh)
{
    const char *minv = mesh ? wf_meshcfg_str(mesh, "meshMTLS.minProtocolVersion") : NULL;
    const char *min = minv && strcmp(minv, "TLSV1_3") == 0 ? "TLSv1_3" : "TLSv1_2";
    /* ALPN: Istio's util.ALPNHttp (h2, http/1.1) for the inbound HTTP chains */
    json_t *common = json_pack(
        "{s:{s:s,s:s,s:o},s:[s,s],s:[o],s:{s:{s:o},s:o}}", "tls_params",
        "tls_minimum_protocol_version", min, "tls_maximum_protocol_version", "TLSv1_3",
        "cipher_suites", cipher_suites(mesh), "alpn_protocols", "h2", "http/1.1",
        "tls_certificate_sds_secret_configs", wf_authn_sds_secret("default"),
        "combined_validation_context", "default_validation_context", "match_subject_alt_names",
        san_matchers(mesh), "validation_context_sds_secret_config", wf_authn_sds_secret("ROOTCA"));
    return json_pack("{s:s,s:{s:s,s:o,s:b}}", "name", "envoy.transport_sockets.tls", "typed_config",
                     "@type", DTC_TYPE, "common_tls_context", common, "require_client_certificate",
                     1);
}
