/*
 * gateway_tls.c - TLS termination on a gateway: the servers that terminate TLS and their filter
 * chains (see gateway_tls.h).
 */
#include "pilot/gateway_tls.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pilot/authn.h"
#include "pilot/lds.h"

#define TLS_SOCKET "envoy.transport_sockets.tls"
#define DTC_TYPE                                                                                   \
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
#define TLSI_NAME "envoy.filters.listener.tls_inspector"
#define TLSI_TYPE                                                                                  \
    "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"
#define K8S_PREFIX "kubernetes://"

static const char *tls_str(const wf_gateway_server *srv, const char *k)
{
    return wf_map_str(srv->tls, k);
}

/* The server's mode: SIMPLE, MUTUAL and OPTIONAL_MUTUAL with a credentialName, or
 * ISTIO_MUTUAL (the gateway's own workload certificate); NULL for any other. */
static const char *terminating_mode(const wf_gateway_server *srv)
{
    const char *mode = tls_str(srv, "mode");
    const char *cred = tls_str(srv, "credentialName");
    if (!mode)
        return NULL;
    if (!strcmp(mode, "ISTIO_MUTUAL"))
        return mode;
    bool ok =
        !strcmp(mode, "SIMPLE") || !strcmp(mode, "MUTUAL") || !strcmp(mode, "OPTIONAL_MUTUAL");
    return ok && cred && *cred ? mode : NULL;
}

bool wf_gw_tls_server(const wf_gateway_server *srv)
{
    const char *p = srv->protocol ? srv->protocol : "";
    return srv->port > 0 && srv->port <= 65535 && !strcasecmp(p, "HTTPS") &&
           terminating_mode(srv) != NULL;
}

const char *wf_gw_https_route_name(const wf_resource *gw, const wf_gateway_server *srv, char *buf,
                                   size_t cap)
{
    snprintf(buf, cap, "https.%d.%s.%s.%s", (int)srv->port, srv->port_name ? srv->port_name : "",
             gw->name, gw->ns);
    return buf;
}

/* credentials.ToResourceName: a bare name gets kubernetes:// (suffix appended). */
static json_t *sds_secret(const char *cred, const char *suffix)
{
    bool prefixed = !strncmp(cred, K8S_PREFIX, sizeof K8S_PREFIX - 1);
    return json_pack("{s:o,s:{s:{},s:s}}", "name",
                     json_sprintf("%s%s%s", prefixed ? "" : K8S_PREFIX, cred, suffix), "sds_config",
                     "ads", "resource_api_version", "V3");
}

/* TLSV1_2 -> "TLSv1_2"; NULL for absent, TLS_AUTO or unknown (validation reports those). */
static const char *envoy_version(const char *v)
{
    static const char *const in[] = {"TLSV1_0", "TLSV1_1", "TLSV1_2", "TLSV1_3"};
    static const char *const out[] = {"TLSv1_0", "TLSv1_1", "TLSv1_2", "TLSv1_3"};
    for (size_t i = 0; v && i < 4; i++)
        if (!strcmp(v, in[i]))
            return out[i];
    return NULL;
}

static json_t *str_list(const wf_node *seq)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < wf_seq_len(seq); i++) {
        const char *s = wf_node_str(seq->u.items[i]);
        if (s && json_array_append_new(a, json_string(s)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* tls_params, NULL when none of its fields is set (*oom on failure). */
static json_t *tls_params(const wf_gateway_server *srv, bool *oom)
{
    const char *min = envoy_version(tls_str(srv, "minProtocolVersion"));
    const char *max = envoy_version(tls_str(srv, "maxProtocolVersion"));
    const wf_node *cs = wf_map_get(srv->tls, "cipherSuites");
    json_t *p = json_object();
    *oom = p == NULL;
    if (!p)
        return NULL;
    if ((min && json_object_set_new(p, "tls_minimum_protocol_version", json_string(min))) ||
        (max && json_object_set_new(p, "tls_maximum_protocol_version", json_string(max))) ||
        (wf_seq_len(cs) && json_object_set_new(p, "cipher_suites", str_list(cs)))) {
        json_decref(p);
        *oom = true;
        return NULL;
    }
    if (json_object_size(p) == 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

static json_t *san_matchers(const wf_gateway_server *srv)
{
    const wf_node *sans = wf_map_get(srv->tls, "subjectAltNames");
    json_t *a = json_array();
    for (size_t i = 0; a && i < wf_seq_len(sans); i++) {
        const char *s = wf_node_str(sans->u.items[i]);
        if (s && json_array_append_new(a, json_pack("{s:s}", "exact", s)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The certificate and CA secrets: the credentialName's (kubernetes://<cred>, its -cacert) or,
 * for ISTIO_MUTUAL, the gateway's own workload ones (default, ROOTCA) from the agent. */
static json_t *cert_secret(const wf_gateway_server *srv, bool istio)
{
    return istio ? wf_authn_sds_secret("default") : sds_secret(tls_str(srv, "credentialName"), "");
}

static json_t *ca_secret(const wf_gateway_server *srv, bool istio)
{
    return istio ? wf_authn_sds_secret("ROOTCA")
                 : sds_secret(tls_str(srv, "credentialName"), "-cacert");
}

static json_t *common_tls_context(const wf_gateway_server *srv, bool validate, bool istio)
{
    bool oom = false;
    json_t *params = tls_params(srv, &oom);
    json_t *c = oom ? NULL : json_object();
    if (!c) {
        json_decref(params);
        return NULL;
    }
    /* Istio's ALPNDownstreamWithMxc for ISTIO_MUTUAL, else ALPNHttp */
    json_t *alpn = istio ? json_pack("[s,s,s]", "istio-peer-exchange", "h2", "http/1.1")
                         : json_pack("[s,s]", "h2", "http/1.1");
    bool ok = (!params || json_object_set_new(c, "tls_params", params) == 0) &&
              json_object_set_new(c, "alpn_protocols", alpn) == 0 &&
              json_object_set_new(c, "tls_certificate_sds_secret_configs",
                                  json_pack("[o]", cert_secret(srv, istio))) == 0;
    if (ok && validate) {
        json_t *sans = san_matchers(srv);
        json_t *dvc = sans && json_array_size(sans)
                          ? json_pack("{s:o}", "match_subject_alt_names", sans)
                          : (json_decref(sans), json_object());
        ok = json_object_set_new(c, "combined_validation_context",
                                 json_pack("{s:o,s:o}", "default_validation_context", dvc,
                                           "validation_context_sds_secret_config",
                                           ca_secret(srv, istio))) == 0;
    }
    if (!ok) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* SIMPLE: no client certificate; MUTUAL and ISTIO_MUTUAL: one required and verified;
 * OPTIONAL_MUTUAL: verified when the client presents one (Envoy asks, but does not require). */
static json_t *transport_socket(const wf_gateway_server *srv)
{
    const char *mode = terminating_mode(srv);
    bool istio = !strcmp(mode, "ISTIO_MUTUAL");
    bool required = istio || !strcmp(mode, "MUTUAL");
    bool validate = required || !strcmp(mode, "OPTIONAL_MUTUAL");
    json_t *dtc = json_pack("{s:s,s:o}", "@type", DTC_TYPE, "common_tls_context",
                            common_tls_context(srv, validate, istio));
    if (dtc && required && json_object_set_new(dtc, "require_client_certificate", json_true())) {
        json_decref(dtc);
        return NULL;
    }
    return dtc ? json_pack("{s:s,s:o}", "name", TLS_SOCKET, "typed_config", dtc) : NULL;
}

/* server_names: the hosts without "ns/"; NULL (no match on SNI) when one is "*". */
static json_t *server_names(const wf_gateway_server *srv, bool *oom)
{
    json_t *a = json_array();
    *oom = a == NULL;
    for (size_t i = 0; a && i < srv->hosts.n; i++) {
        const char *h = srv->hosts.v[i], *slash = strchr(h, '/');
        h = slash ? slash + 1 : h;
        if (!strcmp(h, "*")) {
            json_decref(a);
            return NULL;
        }
        bool seen = false;
        for (size_t j = 0; j < json_array_size(a) && !seen; j++)
            seen = !strcmp(json_string_value(json_array_get(a, j)), h);
        if (!seen && json_array_append_new(a, json_string(h)) != 0) {
            json_decref(a);
            *oom = true;
            return NULL;
        }
    }
    return a;
}

json_t *wf_gw_tls_chain(const wf_resource *gw, const wf_gateway_server *srv, int32_t listen)
{
    char rds[512];
    wf_gw_https_route_name(gw, srv, rds, sizeof rds);
    json_t *l = wf_lds_port_listener(WF_LDS_GATEWAY, listen, "0.0.0.0", rds);
    json_t *chain = json_array_get(json_object_get(l, "filter_chains"), 0);
    bool oom = false;
    json_t *names = server_names(srv, &oom);
    json_t *out = chain && !oom ? json_object() : NULL;
    bool ok = out != NULL;
    if (ok && names)
        ok = json_object_set_new(out, "filter_chain_match",
                                 json_pack("{s:O}", "server_names", names)) == 0;
    if (ok)
        ok = json_object_set(out, "filters", json_object_get(chain, "filters")) == 0 &&
             json_object_set_new(out, "transport_socket", transport_socket(srv)) == 0;
    json_decref(names);
    json_decref(l);
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *wf_gw_tls_listener_filters(void)
{
    return json_pack("[{s:s,s:{s:s}}]", "name", TLSI_NAME, "typed_config", "@type", TLSI_TYPE);
}
