/*
 * xds_client_delta.c - the delta side of the xDS client (xds_client.h, api_type DELTA_GRPC):
 * DeltaDiscoveryRequests per type (xds/discovery.h wf_xds_delta_client_type, Envoy's
 * DeltaSubscriptionState), DeltaDiscoveryResponses applied per resource name, ACK / NACK, and
 * the EDS / RDS / SDS subscriptions that follow CDS / LDS with subscribe / unsubscribe.
 *
 * Envoy behaviour followed (NewGrpcMuxImpl, delta_subscription_state.cc; reference §8.5):
 *  - a response's resources are added or updated by name and removed_resources removed; the
 *    rest of the accepted set stays. A name given twice among resources, or among resources
 *    and removed_resources, rejects the response ("duplicate name <n> found among
 *    added/updated resources", "... in the union of added+removed resources").
 *  - a Resource without a body whose version is the one held is a heartbeat: ignored.
 *  - resources of a non-wildcard type (EDS, RDS) that were not subscribed are ignored.
 *  - the accepted entry of a resource keeps the resource's own version as version_info
 *    (Envoy's delta config dump); the type's version is the response's system_version_info.
 *  - the ACK echoes the nonce; the NACK adds error_detail {13, message} and keeps the state.
 *  - debug log "Delta config for <type_url> accepted with <n> resources added, <m> removed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/xds/xds_client_state.h"

#define TEST_HOOK_MSG "rejected by test hook WEFT_PROXY_TEST_REJECT_TYPE"

/* ---- requests ---- */

/* name -> version of the accepted resources of type t (for initial_resource_versions): a new
 * object, or NULL (none, or out of memory: the server then resends everything). */
static json_t *held_versions(const wp_xds_client *c, int t)
{
    json_t *set = c->sets[t];
    json_t *out = json_object_size(set) ? json_object() : NULL;
    const char *name;
    json_t *e;
    json_object_foreach(set, name, e)
    {
        const char *v = json_string_value(json_object_get(e, "version_info"));
        if (out && v && *v && json_object_set_new(out, name, json_string(v)) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Sends the next request of type t: an ACK / NACK when nonce is non-NULL (error: NACK). The
 * node goes on the stream's first request, or on every one unless node_once. */
static void send_delta(wp_xds_client *c, int t, const char *nonce, const char *error)
{
    wf_xds_delta_client_type *d = &c->dtypes[t];
    bool with_node = !c->node_once || !c->node_sent;
    json_t *versions = d->sent_any ? NULL : held_versions(c, t);
    wf_xds_delta_request req;
    int rc =
        wf_xds_delta_client_request(d, with_node ? &c->node : NULL, versions, nonce, error, &req);
    json_decref(versions);
    if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "xDS delta request for %s: out of memory", d->type_url);
        return;
    }
    if (xc_send_json(c, wf_xds_delta_request_encode(&req), d->type_url) == 0 && with_node)
        c->node_sent = true;
    wf_xds_delta_request_free(&req);
}

void xc_delta_send_initial(wp_xds_client *c)
{
    static const int order[] = {WF_XDS_CDS, WF_XDS_EDS, WF_XDS_LDS, WF_XDS_RDS, WF_XDS_SDS};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int t = order[i];
        bool wanted = t == WF_XDS_CDS ? c->want_cds : t == WF_XDS_LDS ? c->want_lds : true;
        if (wanted && wf_xds_delta_client_pending(&c->dtypes[t]))
            send_delta(c, t, NULL, NULL);
    }
}

/* EDS / RDS follow CDS / LDS: the wanted names change, resources no longer wanted are
 * dropped, and the subscribe / unsubscribe request goes out when the set changed. */
static void follow(wp_xds_client *c, int t, const wf_xds_names *names)
{
    if (wf_xds_delta_client_set_names(&c->dtypes[t], names) != 0) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "xDS subscription for %s: out of memory",
               c->dtypes[t].type_url);
        return;
    }
    xc_prune(c, t, names);
    if (wf_xds_delta_client_pending(&c->dtypes[t]))
        send_delta(c, t, NULL, NULL);
}

/* ---- the new set ---- */

static bool subscribed(const wf_xds_delta_client_type *d, const char *name)
{
    if (d->wildcard)
        return true;
    for (size_t i = 0; i < d->names.n; i++)
        if (strcmp(d->names.v[i], name) == 0)
            return true;
    return false;
}

/* The name of resources[i]: Resource.name, else the name inside the resource. Checks that
 * the two agree. NULL with err set when there is none or they differ. */
static const char *resource_name(int t, const wf_xds_resource *r, size_t i, wf_strbuf *err)
{
    const char *inner = r->resource ? wp_xds_resource_name(t, r->resource) : NULL;
    const char *name = r->name && *r->name ? r->name : inner;
    if (!name)
        wf_strbuf_printf(err, "resources[%zu]: the resource has no name", i);
    else if (inner && strcmp(inner, name) != 0)
        wf_strbuf_printf(err, "resources[%zu]: name '%s' differs from the resource's name '%s'", i,
                         name, inner);
    else
        return name;
    return NULL;
}

/* Adds or updates resources[i] in nw. seen: names met so far (duplicates). */
static void add_one(wp_xds_client *c, int t, const wf_xds_resource *r, size_t i, json_t *nw,
                    json_t *seen, const char *now, bool *changed, wf_strbuf *err)
{
    const char *name = resource_name(t, r, i, err);
    if (!name)
        return;
    if (json_object_get(seen, name)) {
        wf_strbuf_printf(err, "duplicate name %s found among added/updated resources", name);
        return;
    }
    if (json_object_set_new(seen, name, json_true()) != 0) {
        wf_strbuf_puts(err, "out of memory");
        return;
    }
    json_t *old = json_object_get(nw, name);
    const char *version = r->version ? r->version : "";
    const char *had = json_string_value(json_object_get(old, "version_info"));
    bool same_version = had && strcmp(had, version) == 0;
    if (!subscribed(&c->dtypes[t], name) || (!r->resource && same_version))
        return; /* not ours, or a heartbeat */
    if (!r->resource) {
        wf_strbuf_printf(err, "resources[%zu] ('%s'): no resource", i, name);
        return;
    }
    if (old && same_version && json_equal(json_object_get(old, "resource"), r->resource))
        return;
    json_t *e = json_pack("{s:O,s:s,s:s}", "resource", r->resource, "version_info", version,
                          "last_updated", now);
    if (!e || json_object_set_new(nw, name, e) != 0)
        wf_strbuf_puts(err, "out of memory");
    *changed = true;
}

static void remove_all(const wf_xds_delta_response *resp, json_t *nw, json_t *seen, bool *changed,
                       wf_strbuf *err)
{
    for (size_t i = 0; i < resp->removed_resources.n && !err->len; i++) {
        const char *name = resp->removed_resources.v[i];
        if (json_object_get(seen, name)) {
            wf_strbuf_printf(err, "duplicate name %s found in the union of added+removed resources",
                             name);
        } else if (json_object_set_new(seen, name, json_true()) != 0) {
            wf_strbuf_puts(err, "out of memory");
        } else if (json_object_get(nw, name)) {
            json_object_del(nw, name);
            *changed = true;
        }
    }
}

/* The set of type t after resp, or NULL with the reason in err. *changed: it differs from
 * the accepted one. */
static json_t *build_set(wp_xds_client *c, int t, const wf_xds_delta_response *resp, bool *changed,
                         wf_strbuf *err)
{
    json_t *cur = c->sets[t];
    json_t *nw = cur ? json_copy(cur) : json_object();
    json_t *seen = json_object();
    char now[40];
    xc_now_text(now, sizeof now);
    *changed = cur == NULL;
    if (!nw || !seen)
        wf_strbuf_puts(err, "out of memory");
    for (size_t i = 0; !err->len && i < resp->n_resources; i++)
        add_one(c, t, &resp->resources[i], i, nw, seen, now, changed, err);
    if (!err->len)
        remove_all(resp, nw, seen, changed, err);
    json_decref(seen);
    if (err->len) {
        json_decref(nw);
        return NULL;
    }
    return nw;
}

/* ---- outcomes ---- */

static void reject(wp_xds_client *c, int t, const char *version, const char *nonce, const char *msg)
{
    xc_note_rejected(c, t, version, msg);
    send_delta(c, t, nonce ? nonce : "", msg);
}

static void accepted(wp_xds_client *c, int t, const wf_xds_delta_response *resp, json_t *set,
                     const wp_xds_dynamic *dyn)
{
    const char *version = resp->system_version_info ? resp->system_version_info : "";
    json_decref(c->sets[t]);
    c->sets[t] = set;
    if (wf_xds_delta_client_accepted(&c->dtypes[t], version) != 0)
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "xDS version for %s: out of memory",
               c->dtypes[t].type_url);
    bool partial = c->partial != NULL;
    if (partial) { /* applied with failures: Envoy rejects the update, keeps what it added */
        reject(c, t, resp->system_version_info, resp->nonce, c->partial);
        free(c->partial);
        c->partial = NULL;
    } else {
        send_delta(c, t, resp->nonce, NULL);
        xc_note_accepted(c, t);
        WF_LOG(WF_LC_config, WF_LOG_DEBUG,
               "Delta config for %s accepted with %zu resources added, %zu removed",
               c->dtypes[t].type_url, resp->n_resources, resp->removed_resources.n);
    }
    if (dyn && t == WF_XDS_CDS)
        follow(c, WF_XDS_EDS, &dyn->eds_names);
    if (dyn && t == WF_XDS_LDS) {
        follow(c, WF_XDS_RDS, &dyn->rds_names);
        follow(c, WF_XDS_SDS, &dyn->sds_names);
    }
    if (dyn)
        xc_sds_watch(c, dyn);
    if (!partial && c->cb.on_update)
        c->cb.on_update(c->cb.ud, (wf_xds_type)t, version, true);
}

static void handle(wp_xds_client *c, int t, const wf_xds_delta_response *resp)
{
    if (t == c->reject_type) {
        reject(c, t, resp->system_version_info, resp->nonce, TEST_HOOK_MSG);
        return;
    }
    wf_strbuf err = WF_STRBUF_INIT;
    bool changed = false;
    json_t *set = build_set(c, t, resp, &changed, &err);
    if (set && t == WF_XDS_SDS && xc_sds_store(c, set, &err) != 0) {
        json_decref(set); /* a Secret Envoy cannot load: NACK, the previous ones stay */
        set = NULL;
    }
    wp_xds_dynamic dyn = {0};
    bool composed = false;
    if (set)
        set = xc_compose_new_set(c, t, set, changed, resp->system_version_info, &dyn, &composed,
                                 &err);
    if (set)
        accepted(c, t, resp, set, composed ? &dyn : NULL);
    else
        reject(c, t, resp->system_version_info, resp->nonce, wf_strbuf_cstr(&err));
    if (composed)
        wp_xds_dynamic_free(&dyn);
    wf_strbuf_free(&err);
}

void xc_delta_on_response(wp_xds_client *c, const char *text, size_t len)
{
    json_t *j = NULL;
    wf_xds_err xe;
    if (wf_xds_parse_text(text, len, &j, &xe) != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "malformed DeltaDiscoveryResponse ignored: %s", xe.text);
        return;
    }
    wf_xds_delta_response resp;
    int rc = wf_xds_delta_response_decode(j, &resp, &xe);
    const char *url = rc == 0 ? resp.type_url : json_string_value(json_object_get(j, "type_url"));
    int t = wf_xds_type_from_url(url);
    if (t < 0 || t >= XC_NTYPES) {
        WF_LOG(WF_LC_config, WF_LOG_WARN,
               "Ignoring the message for type URL %s as it has no current subscribers",
               url ? url : "(none)");
    } else if (rc != 0) {
        const char *nonce = json_string_value(json_object_get(j, "nonce"));
        const char *sv = json_string_value(json_object_get(j, "system_version_info"));
        reject(c, t, sv, nonce, xe.text);
    } else {
        handle(c, t, &resp);
    }
    wf_xds_delta_response_free(&resp);
    json_decref(j);
}
