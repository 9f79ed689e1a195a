/*
 * cds_tls.c - the upstream TLS of an outbound cluster: auto mTLS (transport_socket_matches)
 * and DestinationRule trafficPolicy.tls (transport_socket), following Istio's
 * pilot/pkg/networking/core/cluster_tls.go (buildUpstreamTLSSettings, applyUpstreamTLSSettings,
 * buildUpstreamClusterTLSContext, constructUpstreamTLS); see cds.h for what is written and
 * where weft's shapes differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pilot/authn.h"
#include "pilot/cds_internal.h"

#define TLS_SOCKET   "envoy.transport_sockets.tls"
#define RAW_SOCKET   "envoy.transport_sockets.raw_buffer"
#define TS_PKG       "type.googleapis.com/envoy.extensions.transport_sockets."
#define UTC_TYPE     TS_PKG "tls.v3.UpstreamTlsContext"
#define RAW_TYPE     TS_PKG "raw_buffer.v3.RawBuffer"
#define SDS_CLUSTER  "sds-grpc" /* the agent's SDS server (security.md §2.2) */
#define SYSTEM_ROOTS "/etc/ssl/certs/ca-certificates.crt" /* file-root:system on Debian */
#define DEFAULT_TD   "cluster.local"
#define ANN_KUBE_SA  "alpha.istio.io/kubernetes-serviceaccounts"
#define ANN_CANON_SA "alpha.istio.io/canonical-serviceaccounts"

typedef enum { TLS_DISABLE, TLS_SIMPLE, TLS_MUTUAL, TLS_ISTIO_MUTUAL } tls_mode;

/* ClientTLSSettings.mode; absent (or unknown: validation refuses it) is DISABLE, the enum's
 * zero value. */
static tls_mode mode_of(const wf_node *tls)
{
    const char *m = wf_map_str(tls, "mode");
    if (!m)
        return TLS_DISABLE;
    if (!strcmp(m, "SIMPLE"))
        return TLS_SIMPLE;
    if (!strcmp(m, "MUTUAL"))
        return TLS_MUTUAL;
    if (!strcmp(m, "ISTIO_MUTUAL"))
        return TLS_ISTIO_MUTUAL;
    return TLS_DISABLE;
}

static const char *nonempty(const wf_node *m, const char *key)
{
    const char *v = wf_map_str(m, key);
    return v && *v ? v : NULL;
}

/* ---------- pieces ---------- */

/* Istio's ConstructSdsSecretConfig (pilot/pkg/security/model): the agent's SDS over sds-grpc. */
static json_t *sds_secret(const char *name)
{
    return json_pack("{s:s,s:{s:{s:s,s:[{s:{s:s}}],s:b,s:s},s:s,s:s}}", "name", name, "sds_config",
                     "api_config_source", "api_type", "GRPC", "grpc_services", "envoy_grpc",
                     "cluster_name", SDS_CLUSTER, "set_node_on_first_message_only", 1,
                     "transport_api_version", "V3", "initial_fetch_timeout", "0s",
                     "resource_api_version", "V3");
}

/* util.StringToExactMatch: [{"exact": s}, ...]; NULL on OOM. */
static json_t *exact_matchers(const json_t *names)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)names, i, v)
    {
        if (json_array_append_new(out, json_pack("{s:O}", "exact", v)) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* A CertificateValidationContext with match_subject_alt_names when there are names. */
static json_t *san_context(const json_t *names)
{
    json_t *vc = json_object();
    if (!vc || json_array_size(names) == 0)
        return vc;
    if (json_object_set_new(vc, "match_subject_alt_names", exact_matchers(names)) != 0) {
        json_decref(vc);
        return NULL;
    }
    return vc;
}

/* The strings of a DR subjectAltNames list as a JSON array (empty when absent). */
static json_t *dr_sans(const wf_node *tls)
{
    const wf_node *l = wf_map_get(tls, "subjectAltNames");
    json_t *out = json_array();
    for (size_t i = 0; out && i < wf_seq_len(l); i++) {
        const char *v = wf_node_str(wf_seq_at(l, i));
        if (v && json_array_append_new(out, json_string(v)) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* defaultUpstreamCommonTLSContext: tls_params min TLSv1_2, max TLSv1_3. */
static json_t *common_context(void)
{
    return json_pack("{s:{s:s,s:s}}", "tls_params", "tls_minimum_protocol_version", "TLSv1_2",
                     "tls_maximum_protocol_version", "TLSv1_3");
}

static json_t *tls_socket(json_t *common, const char *sni)
{
    json_t *utc = json_pack("{s:s,s:o}", "@type", UTC_TYPE, "common_tls_context", common);
    if (utc && sni && json_object_set_new(utc, "sni", json_string(sni)) != 0) {
        json_decref(utc);
        return NULL;
    }
    return json_pack("{s:s,s:o}", "name", TLS_SOCKET, "typed_config", utc);
}

/* ---------- ISTIO_MUTUAL ---------- */

/* The ISTIO_MUTUAL socket: SDS `default`, combined validation (exact SANs + ROOTCA), ALPN
 * istio-peer-exchange, istio (Istio's ALPNInMeshWithMxc), plus h2 for an explicit HTTP/2
 * cluster (ALPNInMeshH2WithMxc), sni. */
static json_t *istio_mutual_socket(const json_t *sans, const char *sni, bool h2)
{
    json_t *common = common_context();
    if (!common)
        return NULL;
    json_t *alpn = h2 ? json_pack("[s,s,s]", "istio-peer-exchange", "istio", "h2")
                      : json_pack("[s,s]", "istio-peer-exchange", "istio");
    if (json_object_set_new(common, "alpn_protocols", alpn) != 0 ||
        json_object_set_new(common, "tls_certificate_sds_secret_configs",
                            json_pack("[o]", sds_secret("default"))) != 0 ||
        json_object_set_new(common, "combined_validation_context",
                            json_pack("{s:o,s:o}", "default_validation_context", san_context(sans),
                                      "validation_context_sds_secret_config",
                                      sds_secret("ROOTCA"))) != 0) {
        json_decref(common);
        return NULL;
    }
    return tls_socket(common, sni);
}

/* ---------- SIMPLE / MUTUAL ---------- */

static int add_client_cert(json_t *common, const wf_node *tls)
{
    const char *cert = nonempty(tls, "clientCertificate"), *key = nonempty(tls, "privateKey");
    return json_object_set_new(common, "tls_certificates",
                               json_pack("[{s:{s:s},s:{s:s}}]", "certificate_chain", "filename",
                                         cert, "private_key", "filename", key));
}

/* constructUpstreamTLS: the CA file (caCertificates, else the OS roots Istio's file-root:system
 * means) inline as trusted_ca {filename} with the exact SAN matchers, or an empty validation
 * context for insecureSkipVerify. */
static int add_validation(json_t *common, const wf_node *tls, const json_t *sans)
{
    bool skip = false;
    if (wf_node_bool(wf_map_get(tls, "insecureSkipVerify"), &skip) && skip)
        return json_object_set_new(common, "validation_context", json_object());
    const char *ca = nonempty(tls, "caCertificates");
    json_t *vc = san_context(sans);
    if (!vc || json_object_set_new(vc, "trusted_ca",
                                   json_pack("{s:s}", "filename", ca ? ca : SYSTEM_ROOTS)) != 0) {
        json_decref(vc);
        return -1;
    }
    return json_object_set_new(common, "validation_context", vc);
}

static json_t *user_tls_socket(const cds_tls_in *in, bool mutual)
{
    json_t *sans = dr_sans(in->tls);
    if (sans && json_array_size(sans) == 0 && in->se_registry) {
        json_decref(sans); /* constructUpstreamTLS: a ServiceEntry's accounts */
        sans = json_deep_copy(in->sans);
    }
    json_t *common = sans ? common_context() : NULL;
    if (!common || (mutual && add_client_cert(common, in->tls) != 0) ||
        add_validation(common, in->tls, sans) != 0) {
        json_decref(common);
        json_decref(sans);
        return NULL;
    }
    json_decref(sans);
    /* constructUpstreamTLS: an HTTP/2 cluster advertises h2 (ALPNH2Only) */
    if (in->h2 && json_object_set_new(common, "alpn_protocols", json_pack("[s]", "h2")) != 0) {
        json_decref(common);
        return NULL;
    }
    return tls_socket(common, nonempty(in->tls, "sni"));
}

/* ---------- choosing ---------- */

static int set_matches(json_t *c, json_t *mtls)
{
    json_t *m = json_pack("[{s:s,s:{s:s},s:o},{s:s,s:{},s:{s:s,s:{s:s}}}]", "name", "tlsMode-istio",
                          "match", "tlsMode", "istio", "transport_socket", mtls, "name",
                          "tlsMode-disabled", "match", "transport_socket", "name", RAW_SOCKET,
                          "typed_config", "@type", RAW_TYPE);
    return json_object_set_new(c, "transport_socket_matches", m);
}

/* buildUpstreamTLSSettings + buildUpstreamClusterTLSContext for a DestinationRule tls. */
static int apply_user(json_t *c, const cds_tls_in *in)
{
    tls_mode mode = mode_of(in->tls);
    json_t *ts = NULL;
    switch (mode) {
    case TLS_DISABLE:
        return 0; /* plaintext, even where auto mTLS would apply */
    case TLS_ISTIO_MUTUAL: {
        json_t *sans = dr_sans(in->tls);
        if (!sans)
            return -1;
        const char *sni = nonempty(in->tls, "sni");
        ts = istio_mutual_socket(json_array_size(sans) ? sans : in->sans, sni ? sni : in->sni,
                                 in->h2);
        json_decref(sans);
        break;
    }
    case TLS_SIMPLE:
    case TLS_MUTUAL:
        /* credentialName on a sidecar DestinationRule without workloadSelector: Istio builds
         * no TLS context (plaintext); weft does the same on every proxy, as weft-proxy has no
         * kubernetes:// SDS yet (reported by the unimplemented table). */
        if (nonempty(in->tls, "credentialName"))
            return 0;
        /* Istio: "failed to apply tls setting for <cluster>: client certificate and private
         * key must not be empty" is logged and the cluster gets no TLS; validation refuses
         * such a rule first ("client certificate required for mutual tls"). */
        if (mode == TLS_MUTUAL &&
            (!nonempty(in->tls, "clientCertificate") || !nonempty(in->tls, "privateKey")))
            return 0;
        ts = user_tls_socket(in, mode == TLS_MUTUAL);
        break;
    }
    return ts ? json_object_set_new(c, "transport_socket", ts) : -1;
}

int cds_tls_apply(json_t *c, const cds_tls_in *in)
{
    if (in->tls)
        return apply_user(c, in);
    if (in->mesh_external || !in->auto_mtls || in->mtls_disabled || in->original_dst)
        return 0;
    json_t *mtls = istio_mutual_socket(in->sans, in->sni, in->h2);
    return mtls ? set_matches(c, mtls) : -1;
}

/* ---------- service accounts ---------- */

typedef struct sa_fill {
    json_t *set; /* object used as a set of strings */
    const char *td;
    bool oom;
} sa_fill;

static void sa_add(sa_fill *f, const char *ns, const char *sa)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "spiffe://%s/ns/%s/sa/%s", f->td, ns, sa);
    if (n > 0 && (size_t)n < sizeof buf && json_object_set_new(f->set, buf, json_true()) != 0)
        f->oom = true;
}

static bool sa_of_endpoint(const wf_endpoint *ep, void *arg)
{
    sa_fill *f = arg;
    const wf_resource *r = ep->src;
    if (r && r->kind == WF_KIND_POD && r->t.pod) {
        const char *sa = r->t.pod->spec.service_account;
        sa_add(f, r->ns, sa && *sa ? sa : "default");
    } else if (r && r->kind == WF_KIND_WORKLOADENTRY && r->t.we && r->t.we->service_account &&
               *r->t.we->service_account) {
        sa_add(f, r->ns, r->t.we->service_account);
    }
    return !f->oom;
}

/* Each comma-separated item of list: prefixed as a Kubernetes account of ns, or as written. */
static void sa_list(sa_fill *f, const char *list, const char *ns)
{
    char item[512];
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < sizeof item) {
            memcpy(item, p, n);
            item[n] = '\0';
            if (ns)
                sa_add(f, ns, item);
            else if (json_object_set_new(f->set, item, json_true()) != 0)
                f->oom = true;
        }
        p += n + (p[n] == ',');
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static json_t *sorted_keys(json_t *set)
{
    size_t n = json_object_size(set), i = 0;
    json_t **v = n ? calloc(n, sizeof *v) : NULL;
    json_t *out = json_array();
    if ((n && !v) || !out)
        goto fail;
    const char *k;
    json_t *x;
    json_object_foreach(set, k, x)
    {
        if (!(v[i++] = json_string(k)))
            goto fail;
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_str);
    for (i = 0; i < n; i++) {
        json_t *s = v[i];
        v[i] = NULL;
        if (json_array_append_new(out, s) != 0)
            goto fail;
    }
    free(v);
    return out;
fail:
    for (size_t j = 0; v && j < n; j++)
        json_decref(v[j]);
    free(v);
    json_decref(out);
    return NULL;
}

json_t *cds_service_accounts(const wf_store *s, const wf_svc *svc, const char *trust_domain)
{
    sa_fill f = {.set = json_object(),
                 .td = trust_domain && *trust_domain ? trust_domain : DEFAULT_TD};
    if (!f.set)
        return NULL;
    for (size_t i = 0; i < svc->nports && !f.oom; i++)
        wf_svc_endpoints(s, svc, &svc->ports[i], NULL, sa_of_endpoint, &f);
    if (!svc->is_se && svc->res) {
        sa_list(&f, wf_kvs_get(&svc->res->annotations, ANN_KUBE_SA), svc->ns);
        sa_list(&f, wf_kvs_get(&svc->res->annotations, ANN_CANON_SA), NULL);
    } else if (svc->res) {
        const wf_node *l = wf_map_get(svc->res->spec, "subjectAltNames");
        for (size_t i = 0; i < wf_seq_len(l) && !f.oom; i++) {
            const char *v = wf_node_str(wf_seq_at(l, i));
            if (v && *v && json_object_set_new(f.set, v, json_true()) != 0)
                f.oom = true;
        }
    }
    json_t *out = f.oom ? NULL : sorted_keys(f.set);
    json_decref(f.set);
    return out;
}

bool cds_service_mtls_disabled(const wf_store *s, const char *root_ns, const char *ns)
{
    wf_peer_authn pa; /* no labels: only the mesh and namespace policies (no selector) apply */
    if (wf_peer_authn_compose(s, root_ns, ns, NULL, &pa) != 0)
        return false;
    bool off = pa.mode == WF_MTLS_DISABLE;
    wf_peer_authn_free(&pa);
    return off;
}
