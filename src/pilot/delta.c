/*
 * delta.c - delta xDS (DeltaAggregatedResources) on the xDS server's connections (ads_conn.c):
 * subscriptions, per-resource versions, removed_resources. The delta bookkeeping discovery_state.c
 * does not have. See ads.h for the behaviour followed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "pilot/ads_internal.h"
#include "pilot/eds_update.h"
#include "xds/grpc_frame.h"

static const char *res_name(const json_t *r)
{
    const char *n = json_string_value(json_object_get(r, "name"));
    return n ? n : json_string_value(json_object_get(r, "cluster_name"));
}

/* The watch's names = the explicit subscriptions (for syncz/adsz and ACK classification). */
static int sync_names(wf_ads_type *ty)
{
    wf_xds_names n = {0};
    size_t cnt = json_object_size(ty->subscribed);
    const char *k;
    json_t *v;
    n.v = cnt ? calloc(cnt, sizeof *n.v) : NULL;
    if (cnt && !n.v) {
        return -1;
    }
    json_object_foreach(ty->subscribed, k, v)
    {
        if (!(n.v[n.n] = strdup(k))) {
            wf_xds_names_free(&n);
            return -1;
        }
        n.n++;
    }
    int rc = wf_xds_watch_set_names(&ty->w, &n);
    wf_xds_names_free(&n);
    return rc ? -1 : 0;
}

static int apply_subs(wf_ads_type *ty, wf_xds_type t, const wf_xds_delta_request *req, bool first)
{
    if (!ty->subscribed && !(ty->subscribed = json_object())) {
        return -1;
    }
    if (!ty->versions && !(ty->versions = json_object())) {
        return -1;
    }
    if (first && req->subscribe.n == 0 && (t == WF_XDS_CDS || t == WF_XDS_LDS)) {
        ty->wildcard = true;
    }
    for (size_t i = 0; i < req->subscribe.n; i++) {
        const char *n = req->subscribe.v[i];
        if (strcmp(n, "*") == 0) {
            ty->wildcard = true;
        } else if (json_object_set_new(ty->subscribed, n, json_true())) {
            return -1;
        }
    }
    for (size_t i = 0; i < req->unsubscribe.n; i++) {
        const char *n = req->unsubscribe.v[i];
        if (strcmp(n, "*") == 0) {
            ty->wildcard = false;
        }
        json_object_del(ty->subscribed, n);
        json_object_del(ty->versions, n);
    }
    if (first && req->initial_resource_versions &&
        json_object_update(ty->versions, req->initial_resource_versions)) {
        return -1;
    }
    return sync_names(ty);
}

/* ---- pushing -------------------------------------------------------------------------------- */

typedef struct delta_out {
    json_t *resources; /* [{name, version, resource}] */
    json_t *removed;   /* [name] */
    json_t *now;       /* name -> version of every current resource */
} delta_out;

static bool wanted(const wf_ads_type *ty, const char *name)
{
    return ty->wildcard || json_object_get(ty->subscribed, name) != NULL;
}

static int diff_resources(wf_ads_type *ty, const json_t *arr, delta_out *o, bool partial)
{
    size_t i;
    json_t *r;
    json_array_foreach(arr, i, r)
    {
        const char *name = res_name(r);
        if (!name || !wanted(ty, name)) {
            continue;
        }
        char *txt = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        if (!txt) {
            return -1;
        }
        char ver[17];
        snprintf(ver, sizeof ver, "%016llx", (unsigned long long)wf_ads_hash(txt, strlen(txt)));
        free(txt);
        if (json_object_set_new(o->now, name, json_string(ver))) {
            return -1;
        }
        const char *had = json_string_value(json_object_get(ty->versions, name));
        if (had && strcmp(had, ver) == 0) {
            continue;
        }
        json_t *e = json_pack("{s:s, s:s, s:O}", "name", name, "version", ver, "resource", r);
        if (!e || json_array_append_new(o->resources, e)) {
            return -1;
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(partial ? NULL : ty->versions, k, v)
    {
        if (!json_object_get(o->now, k) && json_array_append_new(o->removed, json_string(k))) {
            return -1;
        }
    }
    return 0;
}

static int send_delta(wf_ads_conn *c, wf_xds_type t, delta_out *o, const char *nonce)
{
    wf_ads *a = c->ads;
    json_t *msg = json_pack("{s:s, s:s, s:s}", "system_version_info", a->version, "type_url",
                            wf_xds_type_url(t), "nonce", nonce);
    if (!msg ||
        (json_array_size(o->resources) && json_object_set(msg, "resources", o->resources)) ||
        (json_array_size(o->removed) && json_object_set(msg, "removed_resources", o->removed))) {
        json_decref(msg);
        return -1;
    }
    char *txt = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    int rc = txt ? wf_ads_send(c, txt, strlen(txt)) : -1;
    free(txt);
    return rc;
}

/* The proxy now has what was sent (as Istio's delta tracking assumes). */
static void commit_versions(wf_ads_type *ty, const delta_out *o)
{
    size_t i;
    json_t *v;
    json_array_foreach(o->resources, i, v)
    {
        json_object_set(ty->versions, json_string_value(json_object_get(v, "name")),
                        json_object_get(v, "version"));
    }
    json_array_foreach(o->removed, i, v)
    {
        json_object_del(ty->versions, json_string_value(v));
    }
}

static json_t *generate(wf_ads_conn *c, wf_xds_type t, wf_ads_type *ty, const json_t *services)
{
    if (!ty->wildcard && ty->w.names.n == 0) {
        return json_array(); /* nothing subscribed; empty names would mean "all" */
    }
    wf_xds_names all = {0};
    if (!services)
        return wf_ads_gen(c, t, ty->wildcard ? &all : &ty->w.names);
    wf_xds_names sub; /* an incremental EDS push: the updated services' clusters */
    int n = wf_eds_names_updated(&ty->w.names, services, &sub);
    json_t *arr = n < 0 ? NULL : n == 0 ? json_array() : wf_ads_gen(c, t, &sub);
    wf_xds_names_free(&sub);
    return arr;
}

int wf_delta_push(wf_ads_conn *c, wf_xds_type t, bool force, const json_t *services)
{
    wf_ads_type *ty = &c->types[t];
    uint64_t t0 = uv_hrtime();
    delta_out o = {json_array(), json_array(), json_object()};
    if (t != WF_XDS_EDS || ty->wildcard)
        services = NULL;
    json_t *arr = generate(c, t, ty, services);
    int rc = -1;
    char nonce[40];
    if (!arr || !o.resources || !o.removed || !o.now ||
        diff_resources(ty, arr, &o, services != NULL)) {
        goto out;
    }
    rc = 0;
    if (!force && !json_array_size(o.resources) && !json_array_size(o.removed)) {
        goto out;
    }
    wf_ads_nonce(c->ads, nonce);
    rc = -1;
    if (send_delta(c, t, &o, nonce) ||
        wf_xds_watch_on_sent(&ty->w, c->ads->version, nonce, wf_ads_now_ms())) {
        goto out;
    }
    commit_versions(ty, &o);
    ty->sent_any = true;
    ty->sent_at_ms = wf_ads_now_ms();
    wf_ads_observe_push(c, t, t0);
    WF_LOG(WF_LC_config, WF_LOG_DEBUG,
           "ADS:%s: DELTA PUSH for node:%s resources:%zu removed:%zu "
           "nonce:%s",
           wf_xds_type_short(t), c->id, json_array_size(o.resources), json_array_size(o.removed),
           nonce);
    rc = 1;
out:
    json_decref(arr);
    json_decref(o.resources);
    json_decref(o.removed);
    json_decref(o.now);
    return rc;
}

/* ---- requests ---------------------------------------------------------------------------------
 */

/* Feeds the SotW watch a request shaped from the delta one (names borrowed). */
static int watch_update(wf_ads_type *ty, const wf_xds_delta_request *req, bool initial,
                        wf_xds_req_kind *kind)
{
    wf_xds_request fake = {
        .type_url = req->type_url,
        .response_nonce = initial ? NULL : req->response_nonce,
        .version_info = ty->w.version_sent,
        .resource_names = initial ? req->subscribe : ty->w.names,
        .has_error = req->has_error,
        .error_detail = req->error_detail,
    };
    return wf_xds_watch_on_request(&ty->w, &fake, wf_ads_now_ms(), kind);
}

static int delta_request(wf_ads_conn *c, wf_xds_type t, const wf_xds_delta_request *req)
{
    wf_ads_type *ty = &c->types[t];
    wf_xds_req_kind kind = WF_XDS_REQ_INITIAL;
    bool subs = req->subscribe.n || req->unsubscribe.n;
    if (!ty->w.watched) {
        if (watch_update(ty, req, true, &kind) || apply_subs(ty, t, req, true)) {
            return -1;
        }
        return wf_delta_push(c, t, true, NULL) < 0 ? -1 : 0;
    }
    if (req->response_nonce && *req->response_nonce) {
        if (watch_update(ty, req, false, &kind)) {
            return -1;
        }
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS:%s: DELTA REQ %s %s nonce:%s", wf_xds_type_short(t),
               c->id, wf_xds_req_kind_name(kind), req->response_nonce);
        if (kind == WF_XDS_REQ_NACK) {
            wf_ads_log_nack(c, t, req->error_detail.code, req->error_detail.message);
        } else if (kind == WF_XDS_REQ_ACK || kind == WF_XDS_REQ_RESOURCE_CHANGE) {
            wf_ads_note_ack(c, t);
        }
        if (kind == WF_XDS_REQ_STALE_NONCE) {
            return 0;
        }
    }
    if (!subs) {
        return 0;
    }
    if (apply_subs(ty, t, req, false)) {
        return -1;
    }
    return wf_delta_push(c, t, false, NULL) < 0 ? -1 : 0;
}

void wf_delta_on_message(wf_ads_conn *c, const json_t *j)
{
    wf_xds_delta_request req;
    wf_xds_err err;
    if (wf_xds_delta_request_decode(j, &req, &err) != 0) {
        wf_ads_fail(c, WF_GRPC_INVALID_ARGUMENT, err.text);
        return;
    }
    if (!c->has_proxy && wf_ads_on_node(c, req.has_node, &req.node) != 0) {
        wf_xds_delta_request_free(&req);
        return;
    }
    int t = wf_xds_type_from_url(req.type_url);
    if (t < 0) {
        WF_LOG(WF_LC_config, WF_LOG_DEBUG, "ADS: %s: ignoring unknown delta type %s", c->id,
               req.type_url);
    } else if (delta_request(c, t, &req) != 0) {
        wf_ads_fail(c, WF_GRPC_INTERNAL, "could not handle the delta request");
    }
    wf_xds_delta_request_free(&req);
}
