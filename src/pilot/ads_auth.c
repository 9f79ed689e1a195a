/*
 * ads_auth.c - XDS_AUTH on the xDS server's secure port (ads_internal.h): a stream's caller
 * authenticated when it opens and authorized for its node, with istiod's statuses, messages
 * and log lines (xds_auth.h).
 */
#include <stdio.h>
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
