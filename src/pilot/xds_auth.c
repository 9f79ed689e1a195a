/*
 * xds_auth.c - istiod's xDS authenticators and authorization (see xds_auth.h).
 */
#include "pilot/xds_auth.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

void wf_xds_caller_free(wf_xds_caller *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->ids[i]);
    *c = (wf_xds_caller){0};
}

static int add_id(wf_xds_caller *c, const char *id, size_t len)
{
    if (c->n == WF_XDS_MAX_IDS)
        return 0; /* more SANs than anyone needs: the first ones are kept */
    char *s = malloc(len + 1);
    if (!s)
        return -1;
    memcpy(s, id, len);
    s[len] = '\0';
    c->ids[c->n++] = s;
    return 0;
}

/* ClientCertAuthenticator: the verified chain's leaf URI SANs. */
static int cert_authn(const char *sans, wf_xds_caller *out, char *why, size_t cap)
{
    if (!sans || !*sans) {
        snprintf(why, cap, "no verified chain is found");
        return -1;
    }
    for (const char *p = sans; *p;) {
        size_t n = strcspn(p, ",");
        if (n && add_id(out, p, n) != 0) {
            wf_xds_caller_free(out);
            snprintf(why, cap, "out of memory");
            return -1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    out->source = WF_XDS_CERT_AUTHENTICATOR;
    return 0;
}

/* The token authenticator (istiod's KubeJWTAuthenticator role): "Bearer <token>". */
static int token_authn(const wf_xds_authn_in *in, wf_xds_caller *out, char *why, size_t cap)
{
    const char *auth = in->authorization;
    if (!auth) {
        snprintf(why, cap, "target JWT extraction error: no HTTP authorization header exists");
        return -1;
    }
    if (strncmp(auth, "Bearer ", 7) != 0) {
        snprintf(why, cap,
                 "target JWT extraction error: no bearer token exists in HTTP authorization "
                 "header");
        return -1;
    }
    char ns[254], sa[254], err[200];
    if (!in->key || wf_ca_token_verify(in->key, auth + 7, strlen(auth + 7), in->now_s, ns, sa, err,
                                       sizeof err) != 0) {
        snprintf(why, cap, "failed to validate the JWT: %s", in->key ? err : "no token key");
        return -1;
    }
    if (wf_xds_caller_set_sa(out, in->trust_domain, ns, sa, WF_XDS_JWT_AUTHENTICATOR) != 0) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    return 0;
}

int wf_xds_caller_set_sa(wf_xds_caller *out, const char *td, const char *ns, const char *sa,
                         const char *source)
{
    char id[600];
    int n = snprintf(id, sizeof id, "spiffe://%s/ns/%s/sa/%s", td && *td ? td : "cluster.local", ns,
                     sa);
    wf_xds_caller_free(out);
    if (n < 0 || (size_t)n >= sizeof id || add_id(out, id, (size_t)n) != 0) {
        wf_xds_caller_free(out);
        return -1;
    }
    out->source = source;
    return 0;
}

int wf_xds_authn(const wf_xds_authn_in *in, wf_xds_caller *out, char *fail, size_t cap)
{
    char why[2][320];
    *out = (wf_xds_caller){0};
    if (cert_authn(in->peer_uri_sans, out, why[0], sizeof why[0]) == 0)
        return 0;
    if (token_authn(in, out, why[1], sizeof why[1]) == 0)
        return 0;
    snprintf(fail, cap, "Authenticator %s: %s; Authenticator %s: %s", WF_XDS_CERT_AUTHENTICATOR,
             why[0], WF_XDS_JWT_AUTHENTICATOR, why[1]);
    return -1;
}

void wf_xds_caller_ids_text(const wf_xds_caller *c, char *buf, size_t cap)
{
    wf_strbuf b = WF_STRBUF_INIT;
    wf_strbuf_putc(&b, '[');
    for (size_t i = 0; i < c->n; i++)
        wf_strbuf_printf(&b, "%s%s", i ? " " : "", c->ids[i]);
    wf_strbuf_putc(&b, ']');
    snprintf(buf, cap, "%s", wf_strbuf_failed(&b) ? "[]" : wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
}

/* spiffe.ParseIdentity: "spiffe://<td>/ns/<ns>/sa/<sa>", exactly five segments. The
 * namespace and service account into ns / sa (cap bytes each). */
static bool parse_spiffe(const char *id, char *ns, char *sa, size_t cap)
{
    static const char prefix[] = "spiffe://";
    if (strncmp(id, prefix, sizeof prefix - 1) != 0)
        return false;
    const char *seg[6];
    size_t len[6], n = 0;
    for (const char *p = id + sizeof prefix - 1;; p++) {
        if (n == 6)
            return false;
        size_t l = strcspn(p, "/");
        seg[n] = p;
        len[n++] = l;
        p += l;
        if (!*p)
            break;
    }
    if (n != 5 || len[1] != 2 || memcmp(seg[1], "ns", 2) != 0 || len[3] != 2 ||
        memcmp(seg[3], "sa", 2) != 0 || len[2] >= cap || len[4] >= cap)
        return false;
    memcpy(ns, seg[2], len[2]);
    ns[len[2]] = '\0';
    memcpy(sa, seg[4], len[4]);
    sa[len[4]] = '\0';
    return true;
}

int wf_xds_authz(const wf_xds_caller *c, const char *ns, const char *sa, char *err, size_t cap)
{
    for (size_t i = 0; i < c->n; i++) {
        char ins[254], isa[254];
        if (!parse_spiffe(c->ids[i], ins, isa, sizeof ins))
            continue;
        if (ns && *ns && strcmp(ins, ns) != 0)
            continue;
        if (sa && *sa && strcmp(isa, sa) != 0)
            continue;
        return 0;
    }
    char ids[1024];
    wf_xds_caller_ids_text(c, ids, sizeof ids);
    snprintf(err, cap, "no identities (%s) matched %s/%s", ids, ns ? ns : "", sa ? sa : "");
    return -1;
}
