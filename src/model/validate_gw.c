/*
 * validate_gw.c - Gateway and server TLS validation.
 *
 * Follows istio/istio pkg/config/validation/validation.go (ValidateGateway, validateServer,
 * validateServerPort, validateServerBind, validateTLSOptions) and pkg/config/security
 * (IsValidCipherSuite). ServerTLSSettings.mode defaults to PASSTHROUGH (enum value 0), so an
 * HTTP server with only `tls.httpsRedirect` is valid.
 */
#include "model/validate_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const tls_modes[] = {
    "PASSTHROUGH", "SIMPLE", "MUTUAL", "AUTO_PASSTHROUGH", "ISTIO_MUTUAL", "OPTIONAL_MUTUAL", NULL};
static const char *const tls_versions[] = {"TLS_AUTO", "TLSV1_0", "TLSV1_1",
                                           "TLSV1_2",  "TLSV1_3", NULL};

static bool valid_cipher(const char *cs)
{
    static const char *const valid[] = {"ECDHE-ECDSA-AES128-GCM-SHA256",
                                        "ECDHE-RSA-AES128-GCM-SHA256",
                                        "ECDHE-ECDSA-AES256-GCM-SHA384",
                                        "ECDHE-RSA-AES256-GCM-SHA384",
                                        "ECDHE-ECDSA-CHACHA20-POLY1305",
                                        "ECDHE-RSA-CHACHA20-POLY1305",
                                        "ECDHE-ECDSA-AES128-SHA",
                                        "ECDHE-RSA-AES128-SHA",
                                        "ECDHE-ECDSA-AES256-SHA",
                                        "ECDHE-RSA-AES256-SHA",
                                        "AES128-GCM-SHA256",
                                        "AES256-GCM-SHA384",
                                        "AES128-SHA",
                                        "AES256-SHA",
                                        "DES-CBC3-SHA"};
    if (!*cs || strcmp(cs, "ALL") == 0 || !isalnum((unsigned char)cs[0]))
        return true;
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        if (strcmp(cs, valid[i]) == 0)
            return true;
    }
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted, de-duplicated Go %v list of the strings. */
static const char *sorted_set(vc *c, const char **v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_str);
    const char *out = "";
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(v[i], v[i - 1]) == 0)
            continue;
        out = *out ? vc_fmt(c, "%s %s", out, v[i]) : v[i];
    }
    return vc_fmt(c, "[%s]", out);
}

static void cipher_suites(vc *c, const wf_node *tls)
{
    const wf_node *seq = vc_get(tls, "cipherSuites");
    size_t n = wf_seq_len(seq);
    if (n == 0)
        return;
    const char **bad = wf_arena_alloc(&c->scratch, n * sizeof(*bad));
    const char **dup = wf_arena_alloc(&c->scratch, n * sizeof(*dup));
    if (!bad || !dup)
        return;
    size_t nbad = 0, ndup = 0;
    for (size_t i = 0; i < n; i++) {
        const char *cs = vc_nstr(wf_seq_at(seq, i));
        if (!valid_cipher(cs)) {
            bad[nbad++] = cs;
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(vc_nstr(wf_seq_at(seq, j)), cs) == 0) {
                dup[ndup++] = cs;
                break;
            }
        }
    }
    if (nbad)
        vc_warn(c, seq, "ignoring invalid cipher suites: %s", sorted_set(c, bad, nbad));
    if (ndup)
        vc_warn(c, seq, "ignoring duplicate cipher suites: %s", sorted_set(c, dup, ndup));
}

void vc_server_tls(vc *c, const wf_node *tls)
{
    if (!tls)
        return;
    const char *minv = vc_enum(tls, "minProtocolVersion", tls_versions);
    if ((!strcmp(minv, "TLSV1_0") || !strcmp(minv, "TLSV1_1")) && vc_len(tls, "cipherSuites") == 0)
        vc_warn(c, tls,
                "TLS version below TLSV1_2 require setting compatible ciphers as by default they "
                "no longer include compatible ciphers.");
    cipher_suites(c, tls);
    const char *mode = vc_enum(tls, "mode", tls_modes);
    bool sc = *vc_str(tls, "serverCertificate"), pk = *vc_str(tls, "privateKey");
    bool ca = *vc_str(tls, "caCertificates"), crl = *vc_str(tls, "caCrl");
    bool cred = *vc_str(tls, "credentialName");
    if (!strcmp(mode, "ISTIO_MUTUAL")) {
        if (sc)
            vc_err(c, tls, "ISTIO_MUTUAL TLS cannot have associated server certificate");
        if (pk)
            vc_err(c, tls, "ISTIO_MUTUAL TLS cannot have associated private key");
        if (ca)
            vc_err(c, tls, "ISTIO_MUTUAL TLS cannot have associated CA bundle");
        if (cred)
            vc_err(c, tls, "ISTIO_MUTUAL TLS cannot have associated credentialName");
        return;
    }
    if ((!strcmp(mode, "PASSTHROUGH") || !strcmp(mode, "AUTO_PASSTHROUGH")) &&
        (crl || sc || pk || ca || cred))
        vc_warn(c, tls, "%s mode does not use certificates, they will be ignored", mode);
    bool simple = !strcmp(mode, "SIMPLE");
    bool mutual = !strcmp(mode, "MUTUAL") || !strcmp(mode, "OPTIONAL_MUTUAL");
    /* credentialNames / tlsCertificates (newer API) supply the certificates like credentialName */
    bool other_certs = vc_len(tls, "credentialNames") > 0 || vc_len(tls, "tlsCertificates") > 0;
    if ((simple || mutual) && (cred || other_certs))
        return;
    if (simple) {
        if (!sc)
            vc_err(c, tls, "SIMPLE TLS requires a server certificate");
        if (!pk)
            vc_err(c, tls, "SIMPLE TLS requires a private key");
    } else if (mutual) {
        if (!sc)
            vc_err(c, tls, "MUTUAL TLS requires a server certificate");
        if (!pk)
            vc_err(c, tls, "MUTUAL TLS requires a private key");
        if (!ca)
            vc_err(c, tls, "MUTUAL TLS requires a client CA bundle");
    }
    if (crl) {
        if (cred)
            vc_err(c, tls,
                   "CRL is not supported with credentialName. CRL has to be specified in "
                   "the credential");
        if (simple)
            vc_err(c, tls, "CRL is not supported with SIMPLE TLS");
    }
}

/* Go's %v of a Port message (prototext, single line). */
static const char *port_text(vc *c, const wf_node *port)
{
    const char *out = "";
    int64_t num = vc_int(port, "number"), target = vc_int(port, "targetPort");
    if (num)
        out = vc_fmt(c, "number:%lld", (long long)num);
    const char *proto = vc_str(port, "protocol");
    if (*proto)
        out = vc_fmt(c, "%s%sprotocol:%s", out, *out ? " " : "", vc_q(c, proto));
    const char *name = vc_str(port, "name");
    if (*name)
        out = vc_fmt(c, "%s%sname:%s", out, *out ? " " : "", vc_q(c, name));
    if (target)
        out = vc_fmt(c, "%s%starget_port:%lld", out, *out ? " " : "", (long long)target);
    return out;
}

/* validateServerPort; returns true when it found an error. */
static bool server_port(vc *c, const wf_node *server, const char *bind)
{
    const wf_node *port = vc_get(server, "port");
    int before = c->errors;
    size_t mark = vc_push(c, "port");
    if (!port) {
        vc_err(c, server, "port is required");
        vc_pop(c, mark);
        return true;
    }
    const char *proto = vc_str(port, "protocol");
    if (!*vc_protocol(proto))
        vc_err(c, port,
               "invalid protocol %s, supported protocols are HTTP, HTTP2, GRPC, GRPC-WEB, MONGO, "
               "REDIS, MYSQL, TCP",
               vc_q(c, proto));
    int64_t num = vc_int(port, "number");
    if (num > 0 || strncmp(bind, "unix://", 7) != 0) {
        const char *e = vc_check_port(c, num);
        if (e)
            vc_err(c, port, "%s", e);
    }
    if (vc_int(port, "targetPort") > 0)
        vc_err(c, port, "targetPort has no impact on Gateways");
    if (!*vc_str(port, "name"))
        vc_err(c, port, "port name must be set: %s", port_text(c, port));
    vc_pop(c, mark);
    return c->errors != before;
}

static void server_bind(vc *c, const wf_node *server, const char *bind)
{
    const wf_node *at = vc_get(server, "bind") ? vc_get(server, "bind") : server;
    if (strncmp(bind, "unix://", 7) == 0) {
        const char *e = vc_check_unix_address(c, bind + 7);
        if (e)
            vc_err(c, at, "%s", e);
        const wf_node *port = vc_get(server, "port");
        if (port && vc_int(port, "number") != 0)
            vc_err(c, at, "port number must be 0 for unix domain socket: %s", port_text(c, port));
    } else if (*bind && !vc_is_ip(bind)) {
        vc_err(c, at, "%s is not a valid IP", bind);
    }
}

static void server(vc *c, const wf_node *srv)
{
    const wf_node *hosts = vc_get(srv, "hosts");
    if (wf_seq_len(hosts) == 0)
        vc_err(c, srv, "server config must contain at least one host");
    for (size_t i = 0; i < wf_seq_len(hosts); i++) {
        size_t mark = vc_push(c, "hosts");
        vc_push_idx(c, i);
        vc_namespace_slash_host(c, wf_seq_at(hosts, i), vc_nstr(wf_seq_at(hosts, i)), true);
        vc_pop(c, mark);
    }
    const char *bind = vc_str(srv, "bind");
    bool port_err = server_port(c, srv, bind);
    server_bind(c, srv, bind);
    const wf_node *tls = vc_get(srv, "tls");
    size_t mark = vc_push(c, "tls");
    vc_server_tls(c, tls);
    vc_pop(c, mark);
    if (port_err)
        return;
    const char *p = vc_protocol(vc_str(vc_get(srv, "port"), "protocol"));
    if (vc_proto_is_tls(p) && !tls) {
        vc_err(c, srv, "server must have TLS settings for HTTPS/TLS protocols");
    } else if (!vc_proto_is_tls(p) && tls) {
        if (vc_proto_is_http(p)) {
            const char *mode = vc_enum(tls, "mode", tls_modes);
            bool passthrough = !strcmp(mode, "PASSTHROUGH") || !strcmp(mode, "AUTO_PASSTHROUGH");
            if (!passthrough || *vc_str(tls, "caCertificates") || *vc_str(tls, "privateKey") ||
                *vc_str(tls, "serverCertificate"))
                vc_err(c, tls, "server cannot have TLS settings for plain text HTTP ports");
        } else {
            vc_err(c, tls, "server cannot have TLS settings for non HTTPS/TLS ports");
        }
    }
}

void vc_gateway(vc *c, const wf_node *spec)
{
    const char *name = c->r->name ? c->r->name : "";
    if (!vc_is_dns1123_label(name))
        vc_report(c, false, "metadata.name", NULL,
                  vc_fmt(c, "invalid gateway name: %s", vc_q(c, name)));
    const wf_node *servers = vc_get(spec, "servers");
    size_t n = wf_seq_len(servers);
    if (n == 0)
        vc_err(c, spec, "gateway must have at least one server");
    for (size_t i = 0; i < n; i++) {
        const wf_node *srv = wf_seq_at(servers, i);
        size_t mark = vc_push(c, "servers");
        vc_push_idx(c, i);
        if (!srv || srv->type == WF_NODE_NULL)
            vc_err(c, srv, "cannot have nil server");
        else
            server(c, srv);
        vc_pop(c, mark);
    }
    for (size_t i = 0; i < n; i++) {
        size_t mark;
        const wf_node *srv = vc_item(c, servers, "servers", i, "server may not be nil", &mark);
        if (!srv)
            continue;
        const wf_node *port = vc_get(srv, "port");
        if (port) {
            const char *pname = vc_str(port, "name");
            for (size_t j = 0; j < i; j++) {
                const wf_node *prev = vc_get(wf_seq_at(servers, j), "port");
                if (prev && strcmp(vc_str(prev, "name"), pname) == 0) {
                    size_t m2 = vc_push(c, "port");
                    vc_err(c, port, "port names in servers must be unique: duplicate name %s",
                           pname);
                    vc_pop(c, m2);
                    break;
                }
            }
            const char *p = vc_protocol(vc_str(port, "protocol"));
            if (!vc_proto_is_http(p) && vc_bool(vc_get(srv, "tls"), "httpsRedirect"))
                vc_warn(c, srv, "tls.httpsRedirect should only be used with http servers");
        }
        vc_pop(c, mark);
    }
}
