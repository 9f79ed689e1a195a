/*
 * xds_client_sotw.c - the state-of-the-world side of the xDS client (xds_client.h): requests
 * with the node, responses turned into resource sets, compose + apply, ACK / NACK, and the
 * EDS / RDS / SDS subscriptions that follow CDS / LDS (Envoy's GrpcMuxImpl and
 * GrpcSubscriptionImpl behaviour). The client's state and the compose / apply / outcome steps
 * it shares with the delta protocol are in xds_client_state.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "proxy/xds/xds_client_state.h"

#define TEST_HOOK_MSG "rejected by test hook WEFT_PROXY_TEST_REJECT_TYPE"

/* ---- requests ---- */

/* Sends req (the node attached, borrowed, on the stream's first request or on every one when
 * set_node_on_first_message_only is false) and frees it. */
static void send_req(wp_xds_client *c, wf_xds_request *req)
{
    bool with_node = !c->node_once || !c->node_sent;
    if (with_node) {
        req->has_node = true;
        req->node = c->node;
    }
    if (xc_send(c, req) == 0 && with_node)
        c->node_sent = true;
    if (with_node)
        memset(&req->node, 0, sizeof(req->node)); /* borrowed */
    wf_xds_request_free(req);
}

static void send_request(wp_xds_client *c, int t)
{
    wf_xds_request req = {0};
    if (wf_xds_client_request(&c->types[t], NULL, &req) != 0) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "xDS request for %s: out of memory",
               c->types[t].type_url);
        return;
    }
    send_req(c, &req);
}

void xc_send_initial(wp_xds_client *c)
{
    if (c->want_cds)
        send_request(c, WF_XDS_CDS);
    if (c->types[WF_XDS_EDS].names.n)
        send_request(c, WF_XDS_EDS);
    if (c->want_lds)
        send_request(c, WF_XDS_LDS);
    if (c->types[WF_XDS_RDS].names.n)
        send_request(c, WF_XDS_RDS);
    if (c->types[WF_XDS_SDS].names.n)
        send_request(c, WF_XDS_SDS);
    if (c->want_nds) { /* pilot-agent asks for NDS when DNS capture is on */
        wf_xds_request req = {0};
        if (wf_xds_client_request(&c->nds, NULL, &req) == 0)
            send_req(c, &req);
    }
}

/* An NDS response: the NameTable (its one resource) goes to the DNS proxy, not into the
 * bootstrap; ACK, or NACK with the callback's reason. */
static void handle_nds(wp_xds_client *c, const json_t *j)
{
    wf_xds_response resp = {0};
    wf_xds_err xe;
    wf_strbuf err = WF_STRBUF_INIT;
    wf_xds_request req = {0};
    if (wf_xds_response_decode(j, &resp, &xe) != 0) {
        resp.type_url = (char *)WF_XDS_TYPE_NAME_TABLE;
        resp.nonce = (char *)json_string_value(json_object_get(j, "nonce"));
        if (wf_xds_client_nack(&c->nds, &resp, xe.text, &req) == 0)
            send_req(c, &req);
        return;
    }
    json_t *empty = json_object(); /* no resource: an empty table */
    const json_t *nt = json_array_get(resp.resources, 0);
    int rc = nt || empty ? c->cb.name_table(c->cb.ud, nt ? nt : empty, &err) : -1;
    if (rc != 0 && err.len == 0)
        wf_strbuf_puts(&err, "out of memory");
    json_decref(empty);
    if (rc == 0 && wf_xds_client_ack(&c->nds, &resp, &req) == 0) {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG,
               "gRPC config for %s accepted with %zu resources with version %s",
               WF_XDS_TYPE_NAME_TABLE, json_array_size(resp.resources),
               resp.version_info ? resp.version_info : "");
        send_req(c, &req);
    } else if (rc != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "gRPC config for %s rejected: %s", WF_XDS_TYPE_NAME_TABLE,
               wf_strbuf_cstr(&err));
        if (wf_xds_client_nack(&c->nds, &resp, wf_strbuf_cstr(&err), &req) == 0)
            send_req(c, &req);
    }
    wf_strbuf_free(&err);
    wf_xds_response_free(&resp);
}

/* ---- NACK ---- */

static void reject(wp_xds_client *c, int t, const wf_xds_response *resp, const char *msg)
{
    xc_note_rejected(c, t, resp->version_info, msg);
    wf_xds_request req = {0};
    if (wf_xds_client_nack(&c->types[t], resp, msg, &req) == 0)
        send_req(c, &req);
}

/* ---- resource sets ---- */

/* The set of type t after resp: CDS/LDS are replaced, RDS/EDS updated by name. A resource
 * equal to the accepted one keeps its entry (version, time). Returns the new set, or NULL
 * with the reason in err. *changed: the set differs from the accepted one. */
static json_t *build_set(wp_xds_client *c, int t, const wf_xds_response *resp, bool *changed,
                         wf_strbuf *err)
{
    json_t *cur = c->sets[t];
    bool full = t == WF_XDS_CDS || t == WF_XDS_LDS;
    json_t *nw = full || !cur ? json_object() : json_copy(cur);
    json_t *seen = json_object();
    char now[40];
    xc_now_text(now, sizeof(now));
    *changed = cur == NULL;
    for (size_t i = 0; nw && seen && i < json_array_size(resp->resources); i++) {
        json_t *r = json_array_get(resp->resources, i);
        const char *name = wp_xds_resource_name(t, r);
        if (!name) {
            wf_strbuf_printf(err, "resources[%zu]: the resource has no name", i);
            break;
        }
        if (json_object_get(seen, name)) {
            wf_strbuf_printf(err, "duplicate resource '%s' found", name);
            break;
        }
        json_t *old = cur ? json_object_get(cur, name) : NULL;
        json_t *e = NULL;
        if (old && json_equal(json_object_get(old, "resource"), r)) {
            e = json_incref(old);
        } else {
            e = json_pack("{s:O,s:s,s:s}", "resource", r, "version_info",
                          resp->version_info ? resp->version_info : "", "last_updated", now);
            *changed = true;
        }
        if (!e || json_object_set_new(nw, name, e) != 0 ||
            json_object_set_new(seen, name, json_true()) != 0) {
            wf_strbuf_puts(err, "out of memory");
            break;
        }
    }
    if (!nw || !seen)
        wf_strbuf_puts(err, "out of memory");
    json_decref(seen);
    if (err->len) {
        json_decref(nw);
        return NULL;
    }
    if (full && cur && json_object_size(cur) != json_object_size(nw))
        *changed = true;
    return nw;
}

/* ---- subscriptions that follow CDS / LDS ---- */

static bool same_names(const wf_xds_names *a, const wf_xds_names *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return false;
    return true;
}

/* The subscription of t (EDS or RDS) becomes names; a request goes out when it changed (none
 * for an empty set: SotW reads empty names as a wildcard). */
static void follow(wp_xds_client *c, int t, const wf_xds_names *names)
{
    if (same_names(&c->types[t].names, names))
        return;
    if (wf_xds_client_set_names(&c->types[t], names) != 0) {
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "xDS subscription for %s: out of memory",
               c->types[t].type_url);
        return;
    }
    xc_prune(c, t, names);
    if (names->n > 0)
        send_request(c, t);
}

/* ---- responses ---- */

static void accepted(wp_xds_client *c, int t, const wf_xds_response *resp, json_t *set,
                     const wp_xds_dynamic *dyn)
{
    json_decref(c->sets[t]);
    c->sets[t] = set;
    bool partial = c->partial != NULL;
    wf_xds_request req = {0};
    if (partial) { /* applied with failures: Envoy rejects the update, keeps what it added */
        reject(c, t, resp, c->partial);
        free(c->partial);
        c->partial = NULL;
    } else {
        if (wf_xds_client_ack(&c->types[t], resp, &req) == 0)
            send_req(c, &req);
        xc_note_accepted(c, t);
        WF_LOG(WF_LC_config, WF_LOG_DEBUG,
               "gRPC config for %s accepted with %zu resources with version %s",
               c->types[t].type_url, json_array_size(resp->resources),
               resp->version_info ? resp->version_info : "");
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
        c->cb.on_update(c->cb.ud, (wf_xds_type)t, resp->version_info ? resp->version_info : "",
                        true);
}

static void handle(wp_xds_client *c, int t, const wf_xds_response *resp)
{
    if (t == c->reject_type) {
        reject(c, t, resp, TEST_HOOK_MSG);
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
        set = xc_compose_new_set(c, t, set, changed, resp->version_info, &dyn, &composed, &err);
    if (set)
        accepted(c, t, resp, set, composed ? &dyn : NULL);
    else
        reject(c, t, resp, wf_strbuf_cstr(&err));
    if (composed)
        wp_xds_dynamic_free(&dyn);
    wf_strbuf_free(&err);
}

void xc_on_response(wp_xds_client *c, const char *text, size_t len)
{
    json_t *j = NULL;
    wf_xds_err xe;
    if (wf_xds_parse_text(text, len, &j, &xe) != 0) {
        WF_LOG(WF_LC_config, WF_LOG_WARN, "malformed DiscoveryResponse ignored: %s", xe.text);
        return;
    }
    wf_xds_response resp = {0};
    int rc = wf_xds_response_decode(j, &resp, &xe);
    const char *url = rc == 0 ? resp.type_url : json_string_value(json_object_get(j, "type_url"));
    int t = wf_xds_type_from_url(url);
    if (t == WF_XDS_NDS && c->want_nds) {
        handle_nds(c, j);
    } else if (t < 0 || t >= XC_NTYPES) {
        WF_LOG(WF_LC_config, WF_LOG_WARN,
               "Ignoring the message for type URL %s as it has no current subscribers",
               url ? url : "(none)");
    } else if (rc != 0) {
        wf_xds_response tmp = {.type_url = (char *)url,
                               .nonce = (char *)json_string_value(json_object_get(j, "nonce"))};
        reject(c, t, &tmp, xe.text);
    } else {
        handle(c, t, &resp);
    }
    wf_xds_response_free(&resp);
    json_decref(j);
}
