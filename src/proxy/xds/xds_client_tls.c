/*
 * xds_client_tls.c - the ADS stream over TLS to istiod's secure port (xds_client_state.h):
 * the xds-grpc cluster's static UpstreamTlsContext, its files followed, and the Bearer token
 * the stream carries.
 *
 * weft-proxy plays pilot-agent's part here too (pkg/istio-agent/xds_proxy.go: the agent dials
 * istiod on 15012 with the mounted root, istio-ca-root-cert, and per-RPC credentials from the
 * istio-token file, read for every new stream). So:
 *  - the TLS context's file DataSources (trusted_ca, certificate_chain, private_key by
 *    `filename`) are read again before every connection attempt; when their bytes changed the
 *    context is built again from the bootstrap's cluster (a root that rotated, or a plug-in CA's
 *    new root the kubelet synced into the file, reaches the next connection; a stream already
 *    open keeps its connection). A file that cannot be read or a context that fails to build
 *    keeps the previous context (logged).
 *  - over TLS, the stream's gRPC metadata carries "authorization: Bearer <token>" from the
 *    token file (the --token-path flag, WEFT_TOKEN_PATH, else Istio's
 *    ./var/run/secrets/tokens/istio-token), read for every connection; no token file: no
 *    header (istiod then refuses the stream when XDS_AUTH is on). Never over plaintext.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/log.h"
#include "proxy/bootstrap/bootstrap.h"
#include "proxy/xds/xds_client_state.h"
#include "tls/tls.h"

#define MAX_FILE  (1024u * 1024u)
#define MAX_TOKEN (64u * 1024u)

/* The bootstrap's xds-grpc cluster object (borrowed from c->base), NULL when not found. */
static json_t *xds_cluster_json(const wp_xds_client *c)
{
    json_t *cls = json_object_get(json_object_get(c->base, "static_resources"), "clusters");
    size_t i;
    json_t *cl;
    json_array_foreach(cls, i, cl)
    {
        const char *name = json_string_value(json_object_get(cl, "name"));
        if (name && strcmp(name, c->cluster_name) == 0)
            return cl;
    }
    return NULL;
}

/* FNV-1a over the bytes of every `filename` DataSource under v (1 when a file could not be
 * read: a different value, so the next successful read counts as a change). *any: at least
 * one file is named. */
static uint64_t hash_files(const json_t *v, uint64_t h, bool *any)
{
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) h = hash_files(e, h, any);
        return h;
    }
    if (!json_is_object(v))
        return h;
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)v, k, e)
    {
        if (strcmp(k, "filename") != 0 || !json_is_string(e)) {
            h = hash_files(e, h, any);
            continue;
        }
        *any = true;
        FILE *f = fopen(json_string_value(e), "rb");
        if (!f)
            return 1;
        unsigned char buf[4096];
        size_t n, total = 0;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0 && total < MAX_FILE) {
            total += n;
            for (size_t j = 0; j < n; j++) {
                h ^= buf[j];
                h *= 1099511628211ull;
            }
        }
        fclose(f);
        h ^= 0xff; /* a file boundary */
        h *= 1099511628211ull;
    }
    return h;
}

bool xc_tls_init(wp_xds_client *c, const wp_cluster *cl, wf_strbuf *err)
{
    if (!cl->tls)
        return true;
    if (!cl->tls->ctx) {
        wf_strbuf_printf(err,
                         "xDS client: cluster '%s': an UpstreamTlsContext with SDS secrets on the "
                         "xDS connection is not supported by weft-proxy (give it static "
                         "certificates: trusted_ca, tls_certificates)",
                         cl->name);
        return false;
    }
    c->tls = wf_tls_ctx_ref(cl->tls->ctx);
    if (cl->tls->sni && !(c->tls_sni = strdup(cl->tls->sni))) {
        wf_strbuf_puts(err, "xDS client: out of memory");
        return false;
    }
    bool any = false;
    (void)hash_files(json_object_get(xds_cluster_json(c), "transport_socket"),
                     1469598103934665603ull, &any);
    c->tls_files = any;
    /* 0: not read yet. The first connection builds the context from the files as they are
     * then (they may have changed since the bootstrap was loaded), without a log line. */
    c->tls_files_hash = 0;
    return true;
}

/* The context built again from the bootstrap's cluster (its files read now); NULL with err. */
static wf_tls_ctx *rebuild(const wp_xds_client *c, wf_strbuf *err)
{
    json_t *cl = xds_cluster_json(c);
    json_t *root = cl ? json_pack("{s:{s:[O]}}", "static_resources", "clusters", cl) : NULL;
    if (!root) {
        wf_strbuf_puts(err, "out of memory");
        return NULL;
    }
    wp_config *cfg = wp_bootstrap_load(root, "xds-grpc TLS context", err);
    json_decref(root);
    if (!cfg)
        return NULL;
    int i = wp_config_find_cluster(cfg, c->cluster_name);
    wf_tls_ctx *ctx =
        i >= 0 && cfg->clusters[i].tls ? wf_tls_ctx_ref(cfg->clusters[i].tls->ctx) : NULL;
    wp_config_unref(cfg);
    if (!ctx)
        wf_strbuf_puts(err, "no static TLS context");
    return ctx;
}

void xc_tls_refresh(wp_xds_client *c)
{
    if (!c->tls || !c->tls_files)
        return;
    bool any = false;
    uint64_t h = hash_files(json_object_get(xds_cluster_json(c), "transport_socket"),
                            1469598103934665603ull, &any);
    if (h == c->tls_files_hash)
        return;
    bool first = c->tls_files_hash == 0;
    c->tls_files_hash = h; /* one attempt (and one log line) per change */
    wf_strbuf err = WF_STRBUF_INIT;
    wf_tls_ctx *ctx = h == 1 ? NULL : rebuild(c, &err);
    if (!ctx) {
        WF_LOG(WF_LC_config, WF_LOG_WARN,
               "xDS cluster %s: its TLS files changed but cannot be loaded, the previous TLS "
               "context stays: %s",
               c->cluster_name, h == 1 ? "a file cannot be read" : wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        return;
    }
    wf_strbuf_free(&err);
    wf_tls_ctx_free(c->tls); /* connections made with it hold their own reference */
    c->tls = ctx;
    if (!first)
        WF_LOG(WF_LC_config, WF_LOG_INFO,
               "xDS cluster %s: TLS files changed (trusted_ca, certificates): the next "
               "connection uses them",
               c->cluster_name);
}

/* The token file's text with trailing whitespace dropped, heap; NULL when unreadable or
 * empty. */
static char *read_token(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = malloc(MAX_TOKEN + 8);
    size_t n = s ? fread(s + 7, 1, MAX_TOKEN, f) : 0;
    fclose(f);
    while (n > 0 && (s[7 + n - 1] == '\n' || s[7 + n - 1] == '\r' || s[7 + n - 1] == ' ' ||
                     s[7 + n - 1] == '\t'))
        n--;
    if (!s || n == 0) {
        free(s);
        return NULL;
    }
    memcpy(s, "Bearer ", 7);
    s[7 + n] = '\0';
    return s;
}

const char *const *xc_tls_metadata(wp_xds_client *c)
{
    free(c->auth);
    c->auth = NULL;
    if (!c->tls || !c->token_path)
        return NULL;
    if (!(c->auth = read_token(c->token_path))) {
        if (!c->token_warned)
            WF_LOG(WF_LC_config, WF_LOG_WARN,
                   "xDS cluster %s: no token in %s: the stream carries no authorization",
                   c->cluster_name, c->token_path);
        c->token_warned = true;
        return NULL;
    }
    c->token_warned = false;
    c->md[0] = "authorization";
    c->md[1] = c->auth;
    c->md[2] = NULL;
    return c->md;
}
