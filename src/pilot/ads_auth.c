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
#include "xds/grpc_frame.h"

void wf_ads_set_secure_auth(wf_ads *a, const struct wf_ca_server *cas)
{
    a->auth = cas;
}

int wf_ads_authenticate(wf_ads_conn *c, wf_h2_call *call)
{
    wf_ads *a = c->ads;
    wf_tls_info ti;
    if (!wf_h2_conn_tls_info(wf_h2_call_conn(call), &ti) ||
        !a->auth) /* the plaintext port, or XDS_AUTH=false */
        return 0;
    wf_xds_authn_in in = {.peer_uri_sans = ti.peer_uri_sans,
                          .authorization = wf_h2_call_metadata(call, "authorization"),
                          .key = wf_ca_server_token_key(a->auth),
                          .trust_domain = wf_ca_server_trust_domain(a->auth),
                          .now_s = (int64_t)time(NULL)};
    char fail[1024], ids[1024];
    if (wf_xds_authn(&in, &c->caller, fail, sizeof fail) == 0) {
        c->authenticated = true;
        wf_xds_caller_ids_text(&c->caller, ids, sizeof ids);
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "Authenticated XDS: %s with identity %s (%s)",
               c->address, ids, c->caller.source);
        return 0;
    }
    WF_LOG(WF_LC_secret, WF_LOG_ERROR, "Failed to authenticate client from %s: %s",
           *c->address ? c->address : "unknown", fail);
    wf_ads_note_rejected(a, "", c->address, WF_XDS_AUTH_FAILURE);
    c->refused = true;
    wf_h2_call_finish(call, WF_GRPC_UNAUTHENTICATED, WF_XDS_AUTH_FAILURE);
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
    wf_ads_drop_retained(a, c->proxy.id);
    /* drop_retained never removes c: it is connected */
    WF_LOG(WF_LC_config, WF_LOG_INFO, "ADS: new %sconnection for node:%s", c->delta ? "delta " : "",
           c->id);
    return 0;
}
