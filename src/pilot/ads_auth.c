/*
 * ads_auth.c - XDS_AUTH on the xDS server's secure port (ads_internal.h): a stream's caller
 * authenticated when it opens and authorized for its node, with istiod's statuses, messages
 * and log lines (xds_auth.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/ca_server.h"
#include "pilot/ca_tokenreview.h"
#include "xds/grpc_frame.h"

void wf_ads_set_secure_auth(wf_ads *a, const struct wf_ca_server *cas)
{
    a->auth = cas;
}

static void authenticated(wf_ads_conn *c)
{
    char ids[1024];
    c->authenticated = true;
    wf_xds_caller_ids_text(&c->caller, ids, sizeof ids);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG, "Authenticated XDS: %s with identity %s (%s)", c->address,
           ids, c->caller.source);
}

static void unauthenticated(wf_ads_conn *c, const char *fail)
{
    WF_LOG(WF_LC_secret, WF_LOG_ERROR, "Failed to authenticate client from %s: %s",
           *c->address ? c->address : "unknown", fail);
    wf_ads_note_rejected(c->ads, "", c->address, WF_XDS_AUTH_FAILURE);
    c->refused = true;
    if (c->call)
        wf_h2_call_finish(c->call, WF_GRPC_UNAUTHENTICATED, WF_XDS_AUTH_FAILURE);
}

/* The first authenticators' (wf_xds_authn) inputs for the stream of c. */
static wf_xds_authn_in authn_in(const wf_ads_conn *c, wf_h2_call *call)
{
    wf_tls_info ti;
    bool tls = call && wf_h2_conn_tls_info(wf_h2_call_conn(call), &ti);
    wf_xds_authn_in in = {.peer_uri_sans = tls ? ti.peer_uri_sans : NULL,
                          .authorization = call ? wf_h2_call_metadata(call, "authorization") : NULL,
                          .key = wf_ca_server_token_key(c->ads->auth),
                          .trust_domain = wf_ca_server_trust_domain(c->ads->auth),
                          .now_s = (int64_t)time(NULL)};
    return in;
}

/* Kubernetes mode: the bearer token through a TokenReview. 1 authenticated from the cache, 0
 * pending (c->review), -1 with the KubeJWTAuthenticator's message in why. */
static int review(wf_ads_conn *c, wf_tokenreview *tr, const char *auth, wf_tr_done cb, char *why,
                  size_t cap)
{
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX];
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !auth[7]) {
        snprintf(why, cap, "target JWT extraction error: %s",
                 !auth ? "no HTTP authorization header exists"
                       : "no bearer token exists in HTTP authorization header");
        return -1;
    }
    int r = wf_tokenreview_check(tr, auth + 7, (int64_t)time(NULL), ns, sa, cb, c, &c->review, why,
                                 cap);
    if (r != 1)
        return r;
    if (wf_xds_caller_set_sa(&c->caller, wf_ca_server_trust_domain(c->ads->auth), ns, sa,
                             WF_TR_AUTHENTICATOR) != 0) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    return 1;
}

int wf_ads_authenticate(wf_ads_conn *c, wf_h2_call *call,
                        void (*on_reviewed)(void *c, bool ok, const char *ns, const char *sa,
                                            const char *why))
{
    wf_ads *a = c->ads;
    wf_tls_info ti;
    if (!wf_h2_conn_tls_info(wf_h2_call_conn(call), &ti) ||
        !a->auth) /* the plaintext port, or XDS_AUTH=false */
        return 0;
    wf_xds_authn_in in = authn_in(c, call);
    char fail[1800], why[700];
    if (wf_xds_authn(&in, &c->caller, fail, sizeof fail) == 0) {
        authenticated(c);
        return 0;
    }
    wf_tokenreview *tr = wf_ca_server_review(a->auth);
    if (tr) {
        c->held_tail = &c->held;
        int r = review(c, tr, in.authorization, on_reviewed, why, sizeof why);
        if (r == 1)
            authenticated(c);
        if (r >= 0)
            return 0;
        size_t n = strlen(fail);
        snprintf(fail + n, sizeof fail - n, "; Authenticator %s: %s", WF_TR_AUTHENTICATOR, why);
    }
    unauthenticated(c, fail);
    return -1;
}

int wf_ads_hold(wf_ads_conn *c, const uint8_t *msg, size_t len)
{
    wf_ads_held *h = c->held_bytes + len <= WF_ADS_HELD_MAX ? malloc(sizeof *h + len) : NULL;
    if (!h) {
        c->refused = true;
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "too many requests before authentication");
        return -1;
    }
    h->next = NULL;
    h->len = len;
    memcpy(h->data, msg, len);
    *c->held_tail = h;
    c->held_tail = &h->next;
    c->held_bytes += len;
    return 0;
}

int wf_ads_reviewed(wf_ads_conn *c, bool ok, const char *ns, const char *sa, const char *why)
{
    char fail[1800];
    c->review = NULL;
    if (ok && wf_xds_caller_set_sa(&c->caller, wf_ca_server_trust_domain(c->ads->auth), ns, sa,
                                   WF_TR_AUTHENTICATOR) == 0) {
        authenticated(c);
        return 0;
    }
    /* the first authenticators' messages again, as wf_xds_authn gave them at the start */
    wf_xds_authn_in in = authn_in(c, c->call);
    wf_xds_caller none = {0};
    if (wf_xds_authn(&in, &none, fail, sizeof fail) == 0)
        wf_xds_caller_free(&none);
    size_t n = strlen(fail);
    snprintf(fail + n, sizeof fail - n, "; Authenticator %s: %s", WF_TR_AUTHENTICATOR,
             ok ? "out of memory" : why);
    unauthenticated(c, fail);
    return -1;
}

int wf_ads_authorize(wf_ads_conn *c)
{
    if (!c->authenticated)
        return 0;
    char err[1400], ids[1024], msg[1500];
    if (wf_xds_authz(&c->caller, c->proxy.ns, c->proxy.service_account, err, sizeof err) == 0)
        return 0;
    wf_xds_caller_ids_text(&c->caller, ids, sizeof ids);
    WF_LOG(WF_LC_config, WF_LOG_WARN, "Unauthorized XDS: %s with identity %s: %s", c->address, ids,
           err);
    snprintf(msg, sizeof msg, "authorization failed: %s", err);
    wf_ads_note_rejected(c->ads, c->proxy.id ? c->proxy.id : "", c->address, msg);
    c->refused = true;
    wf_ads_fail(c, WF_GRPC_PERMISSION_DENIED, msg);
    return -1;
}

int wf_ads_on_node(wf_ads_conn *c, bool has_node, const wf_xds_node *node)
{
    wf_ads *a = c->ads;
    char err[256] = "node is required in the first request of a stream";
    const wf_store *store = a->snap ? a->snap->store : NULL;
    if (!has_node || a->opts.proxy_from_node(node, store, &c->proxy, err, sizeof err) != 0) {
        wf_ads_note_rejected(a, has_node && node->id ? node->id : "", c->address, err);
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err);
        return -1;
    }
    if (wf_ads_authorize(c) != 0) {
        wf_pilot_proxy_free(&c->proxy);
        return -1;
    }
    c->has_proxy = true;
    size_t n = strlen(c->proxy.id) + 24;
    c->id = malloc(n);
    if (!c->id || wf_ads_list_add(a, c)) {
        free(c->id);
        c->id = NULL;
        wf_pilot_proxy_free(&c->proxy);
        c->has_proxy = false;
        wf_ads_fail(c, WF_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return -1;
    }
    snprintf(c->id, n, "%s-%llu", c->proxy.id, (unsigned long long)++a->conn_seq);
    wf_ads_history_inherit(a, c);
    wf_ads_drop_retained(a, c->proxy.id);
    /* drop_retained never removes c: it is connected */
    wf_ads_history_add(c, WF_ADS_EV_CONNECTED, "%s%s%s%s", c->id, c->address[0] ? " from " : "",
                       c->address, c->delta ? " (delta)" : "");
    WF_LOG(WF_LC_config, WF_LOG_INFO, "ADS: new %sconnection for node:%s", c->delta ? "delta " : "",
           c->id);
    return 0;
}
