/*
 * xds_client_state.c - the xDS client's state and the steps both protocols share
 * (xds_client_state.h): the accepted resource sets, sending a request on the current call,
 * composing the accepted state into a snapshot and applying it (with Envoy's warming and
 * listener error states), pruning, and the outcome of a response (update_success /
 * update_rejected, the NACK text, the listener error states /config_dump shows). The stream
 * (xds_client.c) and the two protocols (xds_client_sotw.c, xds_client_delta.c) stand on it;
 * it calls neither.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "proxy/bootstrap/bootstrap.h"
#include "core/timefmt.h"
#include "proxy/xds/xds_client_state.h"
#include "tls/tls.h"

int xc_send_json(wp_xds_client *c, json_t *j, const char *type_url)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int rv = text && c->call ? wf_h2_call_send(c->call, text, strlen(text)) : -1;
    free(text);
    if (rv != 0)
        WF_LOG(WF_LC_config, WF_LOG_WARN, "xDS request for %s not sent (%d)", type_url, rv);
    return rv;
}

int xc_send(wp_xds_client *c, const wf_xds_request *req)
{
    return xc_send_json(c, wf_xds_request_encode(req), req->type_url);
}

void xc_count_update(wp_xds_client *c, int type, int kind)
{
    int i = type == WF_XDS_CDS ? 0 : type == WF_XDS_LDS ? 1 : -1;
    if (i < 0)
        return;
    wp_stat_add(c->sh, c->s_upd[i][XC_UPD_ATTEMPT], 1);
    wp_stat_add(c->sh, c->s_upd[i][kind], 1);
}

/* ---- state ---- */

bool xc_state_init(wp_xds_client *c, const wp_config *cfg)
{
    const wp_ads_config *ads = cfg->ads;
    c->node_once = ads->set_node_on_first_message_only;
    c->delta = ads->api_type == WP_ADS_DELTA_GRPC;
    c->want_cds = ads->cds;
    c->want_lds = ads->lds;
    c->cluster_name = strdup(ads->cluster_name);
    c->node.id = cfg->node_id ? strdup(cfg->node_id) : NULL;
    c->node.cluster = cfg->node_cluster ? strdup(cfg->node_cluster) : NULL;
    json_t *md = cfg->node ? json_object_get(cfg->node, "metadata") : NULL;
    c->node.metadata = json_is_object(md) ? json_deep_copy(md) : NULL;
    c->base = json_deep_copy(cfg->bootstrap);
    c->lds_errors = json_array();
    c->sds_expired = json_object();
    bool ok = c->cluster_name && c->base && c->lds_errors && c->sds_expired &&
              (!cfg->node_id || c->node.id) && (!cfg->node_cluster || c->node.cluster) &&
              (!json_is_object(md) || c->node.metadata);
    const char *dc = json_string_value(json_object_get(md, "DNS_CAPTURE"));
    c->want_nds = !c->delta && c->cb.name_table && dc && strcasecmp(dc, "true") == 0;
    ok = ok && wf_xds_client_init(&c->nds, WF_XDS_TYPE_NAME_TABLE) == 0;
    for (int t = 0; ok && t < XC_NTYPES; t++) {
        const char *url = wf_xds_type_url((wf_xds_type)t);
        ok = wf_xds_client_init(&c->types[t], url) == 0 &&
             (!c->delta || wf_xds_delta_client_init(&c->dtypes[t], url,
                                                    t == WF_XDS_CDS || t == WF_XDS_LDS) == 0);
    }
    return ok;
}

void xc_state_free(wp_xds_client *c)
{
    for (int t = 0; t < XC_NTYPES; t++) {
        wf_xds_client_free(&c->types[t]);
        wf_xds_delta_client_free(&c->dtypes[t]);
        json_decref(c->sets[t]);
    }
    wf_xds_client_free(&c->nds);
    wf_xds_node_free(&c->node);
    json_decref(c->base);
    json_decref(c->lds_errors);
    json_decref(c->sds_expired);
    json_decref(c->lds_active);
    json_decref(c->lds_failed);
    free(c->pipe_path);
    wf_tls_ctx_free(c->tls);
    free(c->tls_sni);
    free(c->token_path);
    free(c->auth);
    free(c->cluster_name);
    free(c->close_msg);
    free(c->last_nack);
    free(c->partial);
}

/* ---- outcomes (both protocols) ---- */

const char *xc_version(const wp_xds_client *c, int t)
{
    return c->delta ? c->dtypes[t].system_version : c->types[t].version;
}

/* ---- listener error states (Envoy's ListenersConfigDump.DynamicListener.error_state) ---- */

/* Remembers the listener an LDS update (t) failed on, for xc_note_rejected: lt and name are
 * what wp_xds_locate_error / wp_xds_compose named, reason the error without the NACK prefix,
 * set the candidate set of LDS. Only a failure in a listener of an LDS update counts (Envoy
 * tracks the listeners its listener manager could not add or update). */
static void note_failed_listener(wp_xds_client *c, int t, int lt, const char *name,
                                 const char *reason, const json_t *set)
{
    if (t != WF_XDS_LDS || lt != WF_XDS_LDS || !name || !*name)
        return;
    json_t *r = json_object_get(json_object_get(set, name), "resource");
    json_decref(c->lds_failed);
    c->lds_failed = json_pack("{s:s,s:s}", "name", name, "details", reason ? reason : "");
    if (c->lds_failed && r && json_object_set(c->lds_failed, "resource", r) != 0) {
        json_decref(c->lds_failed);
        c->lds_failed = NULL;
    }
}

/* The error states after a rejected LDS update whose text is msg, replacing those of the
 * previous update (Envoy's beginListenerUpdate clears them; each failure then adds the
 * listener's {failed_configuration, last_update_attempt, details} and, from LdsApiImpl, an
 * entry of its own with {failed_configuration, details}). A rejection not tied to a listener
 * (a malformed response, a duplicate name, the test hook) leaves the unnamed entry only, with
 * msg as its details. Out of memory leaves the list empty. */
static void set_lds_errors(wp_xds_client *c, const char *msg)
{
    json_array_clear(c->lds_errors);
    json_t *f = c->lds_failed;
    c->lds_failed = NULL;
    const char *details = f ? json_string_value(json_object_get(f, "details")) : msg;
    if (!details)
        details = "";
    json_t *r = f ? json_object_get(f, "resource") : NULL;
    char now[40];
    xc_now_text(now, sizeof(now));
    json_t *named = f ? json_pack("{s:O,s:{s:s,s:s}}", "name", json_object_get(f, "name"),
                                  "error_state", "last_update_attempt", now, "details", details)
                      : NULL;
    json_t *overall = json_pack("{s:{s:s}}", "error_state", "details", details);
    bool ok = overall && (!f || named);
    if (ok && r) { /* failed_configuration first, as Envoy prints the fields in order */
        json_t *es = json_object_get(named, "error_state");
        json_t *oes = json_object_get(overall, "error_state");
        json_t *t1 = json_pack("{s:O}", "failed_configuration", r);
        json_t *t2 = json_pack("{s:O}", "failed_configuration", r);
        ok = t1 && t2 && json_object_update(t1, es) == 0 && json_object_update(t2, oes) == 0 &&
             json_object_set(named, "error_state", t1) == 0 &&
             json_object_set(overall, "error_state", t2) == 0;
        json_decref(t1);
        json_decref(t2);
    }
    if (ok && named)
        ok = json_array_append(c->lds_errors, named) == 0;
    if (ok)
        ok = json_array_append(c->lds_errors, overall) == 0;
    if (!ok) {
        json_array_clear(c->lds_errors);
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "listener error state: out of memory");
    }
    json_decref(named);
    json_decref(overall);
    json_decref(f);
}

void xc_note_rejected(wp_xds_client *c, int t, const char *version, const char *msg)
{
    WF_LOG(WF_LC_config, WF_LOG_WARN, "gRPC config for %s rejected: %s", c->types[t].type_url, msg);
    if (t == WF_XDS_LDS)
        set_lds_errors(c, msg);
    xc_count_update(c, t, XC_UPD_REJECTED);
    xc_count_rejected(c, t);
    free(c->last_nack);
    c->last_nack = strdup(msg); /* before on_update: the callback may read it (status) */
    if (c->cb.on_update)
        c->cb.on_update(c->cb.ud, (wf_xds_type)t, version ? version : "", false);
}

void xc_note_accepted(wp_xds_client *c, int t)
{
    xc_count_update(c, t, XC_UPD_SUCCESS);
    xc_count_accepted(c, t, xc_version(c, t));
    c->updated = true;
    c->last_update = uv_now(c->loop);
    c->cds_applied |= t == WF_XDS_CDS;
    c->lds_applied |= t == WF_XDS_LDS;
    if (t == WF_XDS_LDS) { /* Envoy clears the error states on the next good update */
        json_array_clear(c->lds_errors);
        json_decref(c->lds_failed);
        c->lds_failed = NULL;
    }
}

void xc_now_text(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    wf_timestamp_ms((double)ts.tv_sec + (double)ts.tv_nsec / 1e9, buf, cap);
}

/* The reason of a compose error ("<kind> '<name>': <reason>"). */
static const char *compose_reason(const char *msg, int bad_type)
{
    const char *p = bad_type >= 0 ? strstr(msg, "': ") : NULL;
    return p ? p + 3 : msg;
}

/* Loads (and drops) the state with empty route configurations in place of the missing ones,
 * so a warming listener is checked when it arrives, as Envoy does. 0, or -1 with the NACK
 * text in err. */
static int validate_warming(wp_xds_client *c, int t, wp_xds_resources *res, wf_strbuf *err)
{
    json_t *eff = NULL;
    wp_xds_dynamic dyn;
    wf_strbuf lerr = WF_STRBUF_INIT;
    res->placeholder_routes = true;
    int rc = wp_xds_compose(c->base, res, &eff, &dyn, &lerr, NULL, NULL);
    res->placeholder_routes = false;
    if (rc != 0) { /* the real compose passed: only memory can fail here */
        wf_strbuf_puts(err, wf_strbuf_cstr(&lerr));
        wf_strbuf_free(&lerr);
        return -1;
    }
    wp_config *cfg = wp_bootstrap_load(eff, "xds", &lerr);
    if (!cfg) {
        char name[256];
        wf_strbuf reason = WF_STRBUF_INIT;
        int lt = wp_xds_locate_error(&dyn, eff, "xds", wf_strbuf_cstr(&lerr), name, sizeof(name),
                                     &reason);
        wp_xds_nack_text(lt, name, wf_strbuf_cstr(&reason), err);
        note_failed_listener(c, t, lt, name, wf_strbuf_cstr(&reason), res->set[WF_XDS_LDS]);
        wf_strbuf_free(&reason);
    }
    wp_config_unref(cfg);
    wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    wf_strbuf_free(&lerr);
    return cfg ? 0 : -1;
}

/* Envoy binds a listener's sockets when an LDS update adds it (ListenerImpl's socket
 * factory), before the listener warms, and keeps them: a listener whose address cannot be
 * bound fails that update, never a later RDS one ("Error adding/updating listener(s) NAME:
 * cannot bind 'ADDR': why", one "NAME: why" line more per other one). The LDS state is
 * loaded with placeholder route configurations (so the warming listeners are among its
 * listeners) and callbacks.hold binds their addresses (*held: it was called). Each listener
 * that cannot be bound is dropped from set, so it is neither added nor tried again by a later
 * RDS/CDS update (a later LDS update that still carries it tries again); its error goes to
 * nack and to the listener error states. Returns 1 when the placeholder state loaded (the
 * warming listeners are then checked), 0 when it did not (the checks that follow NACK the
 * update), -1 when out of memory. */
/* callbacks.hold with the warming listeners that need sockets of their own: not those whose
 * older version keeps serving meanwhile (its sockets stay with the workers). */
static int hold_warming(wp_xds_client *c, const wp_config *cfg, const wp_xds_dynamic *dyn,
                        json_t *failed)
{
    wf_xds_names own = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < dyn->warming_listeners.n; i++) {
        const char *n = dyn->warming_listeners.v[i];
        bool updating = false;
        for (size_t j = 0; j < dyn->updating_listeners.n && !updating; j++)
            updating = strcmp(dyn->updating_listeners.v[j], n) == 0;
        if (updating)
            continue;
        char **v = realloc(own.v, (own.n + 1) * sizeof *v);
        if (!v || !(v[own.n] = strdup(n)))
            rc = -1;
        if (v)
            own.v = v;
        if (rc == 0)
            own.n++;
    }
    if (rc == 0)
        rc = c->cb.hold(c->cb.ud, cfg, dyn->n_static_listeners, &own, failed);
    wf_xds_names_free(&own);
    return rc;
}

static int hold_listeners(wp_xds_client *c, wp_xds_resources *res, json_t *set, wf_strbuf *nack,
                          bool *held)
{
    json_t *eff = NULL;
    wp_xds_dynamic dyn;
    wf_strbuf lerr = WF_STRBUF_INIT;
    res->placeholder_routes = true;
    int rc = wp_xds_compose(c->base, res, &eff, &dyn, &lerr, NULL, NULL);
    res->placeholder_routes = false;
    wp_config *cfg = rc == 0 ? wp_bootstrap_load(eff, "xds", &lerr) : NULL;
    json_t *failed = cfg && c->cb.hold ? json_object() : NULL;
    int out = cfg ? 1 : 0;
    if (cfg && c->cb.hold) {
        *held = true;
        if (!failed || hold_warming(c, cfg, &dyn, failed) != 0)
            out = -1;
    }
    const char *name;
    json_t *why;
    json_object_foreach(failed, name, why)
    {
        const char *reason = json_string_value(why);
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "listener '%s' cannot be added: %s", name, reason);
        wf_strbuf_printf(nack, "%s%s: %s", nack->len ? "\n" : "Error adding/updating listener(s) ",
                         name, reason);
        if (!c->lds_failed) /* the first one gets the named error state */
            note_failed_listener(c, WF_XDS_LDS, WF_XDS_LDS, name, reason, set);
        json_object_del(set, name);
    }
    json_decref(failed);
    wp_config_unref(cfg);
    if (rc == 0)
        wp_xds_dynamic_free(&dyn);
    json_decref(eff);
    wf_strbuf_free(&lerr);
    return out;
}

/* Composes the state with set as type t's and applies it. 0, or -1 with the NACK text in err
 * and, when the failure is a resource's, its type and name in *fail_type and fail_name (256
 * bytes; *fail_type -1 otherwise). */
static int compose_apply(wp_xds_client *c, int t, json_t *set, const char *version,
                         wp_xds_dynamic *dyn, wf_strbuf *err, bool *held, int *fail_type,
                         char *fail_name)
{
    *fail_type = -1;
    wp_xds_resources res = {0};
    for (int i = 0; i < XC_NTYPES; i++) {
        res.set[i] = i == t ? set : c->sets[i];
        res.version[i] = i == t ? version : xc_version(c, i);
    }
    res.sds_expired = c->sds_expired;
    res.lds_active = c->lds_active;
    res.sds_default_fetch_ms = c->sds_default_fetch_ms;
    json_t *eff = NULL;
    int bad_type = -1;
    char bad_name[256];
    wf_strbuf cerr = WF_STRBUF_INIT;
    json_decref(c->lds_failed);
    c->lds_failed = NULL;
    wf_strbuf unbound = WF_STRBUF_INIT; /* NACK text of listeners that cannot bind */
    int loaded = t == WF_XDS_LDS && set ? hold_listeners(c, &res, set, &unbound, held) : 0;
    if (loaded < 0) {
        wf_strbuf_free(&unbound);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    if (wp_xds_compose(c->base, &res, &eff, dyn, &cerr, &bad_type, bad_name) != 0) {
        wf_strbuf_free(&unbound);
        const char *reason = compose_reason(wf_strbuf_cstr(&cerr), bad_type);
        wp_xds_nack_text(bad_type, bad_name, reason, err);
        note_failed_listener(c, t, bad_type, bad_name, reason, res.set[WF_XDS_LDS]);
        if (bad_type >= 0) {
            *fail_type = bad_type;
            snprintf(fail_name, 256, "%s", bad_name);
        }
        wf_strbuf_free(&cerr);
        return -1;
    }
    /* the listener error states, live (xds_compose.h "listener_errors") */
    if (dyn->dump && json_object_set(dyn->dump, "listener_errors", c->lds_errors) != 0) {
        wp_xds_dynamic_free(dyn);
        json_decref(eff);
        wf_strbuf_free(&cerr);
        wf_strbuf_free(&unbound);
        wf_strbuf_puts(err, "out of memory");
        return -1;
    }
    /* an LDS update's warming listeners were loaded by hold_listeners already */
    if (dyn->warming_listeners.n && loaded != 1 && validate_warming(c, t, &res, err) != 0) {
        wp_xds_dynamic_free(dyn);
        json_decref(eff);
        wf_strbuf_free(&unbound);
        return -1;
    }
    int rc = c->cb.apply(c->cb.ud, eff, dyn, &cerr);
    if (rc == 0 && unbound.len) /* applied without the listeners that cannot bind */
        rc = 1;
    if (rc == 1) { /* applied, but parts failed (listeners that cannot bind): NACK the text */
        static const char prefix[] = "Error adding/updating listener(s) ";
        const char *more = wf_strbuf_cstr(&cerr); /* bound by someone else since the test */
        if (unbound.len && cerr.len)
            wf_strbuf_printf(
                &unbound, "\n%s",
                strncmp(more, prefix, sizeof prefix - 1) == 0 ? more + sizeof prefix - 1 : more);
        free(c->partial);
        c->partial = strdup(wf_strbuf_cstr(unbound.len ? &unbound : &cerr));
        rc = 0;
    } else if (rc != 0) {
        char name[256];
        wf_strbuf reason = WF_STRBUF_INIT;
        int lt = wp_xds_locate_error(dyn, eff, "xds", wf_strbuf_cstr(&cerr), name, sizeof(name),
                                     &reason);
        wp_xds_nack_text(lt, name, wf_strbuf_cstr(&reason), err);
        note_failed_listener(c, t, lt, name, wf_strbuf_cstr(&reason), set);
        if (lt >= 0) {
            *fail_type = lt;
            snprintf(fail_name, 256, "%s", name);
        }
        wf_strbuf_free(&reason);
        wp_xds_dynamic_free(dyn);
    }
    wf_strbuf_free(&cerr);
    wf_strbuf_free(&unbound);
    json_decref(eff);
    return rc == 0 ? 0 : -1;
}

/* A CDS update's cluster that cannot be loaded is left out as Envoy's CdsApiHelper leaves it
 * (the others are added or updated; the update is rejected, "Error adding/updating cluster(s)
 * NAME: reason, NAME: reason"): its accepted version, if any, stays in set, else it is
 * dropped from set. 1 when set changed (try again), 0 when the failure is not a cluster of
 * this update's own (or out of memory). */
static int leave_out_cluster(wp_xds_client *c, json_t *set, const char *name, wf_strbuf *failed,
                             const wf_strbuf *err)
{
    json_t *mine = json_object_get(set, name);
    if (!mine)
        return 0;
    json_t *old = c->sets[WF_XDS_CDS] ? json_object_get(c->sets[WF_XDS_CDS], name) : NULL;
    if (old == mine)
        return 0; /* the accepted version itself fails: nothing to fall back to */
    int rc = old ? json_object_set(set, name, old) : json_object_del(set, name);
    if (rc != 0)
        return 0;
    static const char prefix[] = "Error adding/updating cluster(s) ";
    const char *e = wf_strbuf_cstr(err);
    if (strncmp(e, prefix, sizeof prefix - 1) == 0)
        e += sizeof prefix - 1;
    WF_LOG(WF_LC_config, WF_LOG_WARN, "cluster '%s' %s: %s", name,
           old ? "keeps its previous version" : "is not added", e);
    wf_strbuf_printf(failed, "%s%s", failed->len ? ", " : prefix, e);
    return 1;
}

int xc_compose_apply(wp_xds_client *c, int t, json_t *set, const char *version, wp_xds_dynamic *dyn,
                     wf_strbuf *err)
{
    bool held = false;
    int fail_type;
    char fail_name[256];
    wf_strbuf failed = WF_STRBUF_INIT; /* the clusters left out, Envoy's NACK text */
    wf_strbuf one = WF_STRBUF_INIT;
    int rc;
    for (size_t tries = 0;; tries++) {
        wf_strbuf_reset(&one);
        rc = compose_apply(c, t, set, version, dyn, &one, &held, &fail_type, fail_name);
        if (rc == 0 || t != WF_XDS_CDS || !set || fail_type != WF_XDS_CDS || tries >= 1024 ||
            !leave_out_cluster(c, set, fail_name, &failed, &one))
            break;
    }
    if (rc != 0) {
        wf_strbuf_puts(err, wf_strbuf_cstr(&one));
    } else if (failed.len) { /* applied without them: the update is rejected (partial) */
        if (c->partial)
            wf_strbuf_printf(&failed, "\n%s", c->partial);
        free(c->partial);
        c->partial = strdup(wf_strbuf_cstr(&failed));
    }
    wf_strbuf_free(&one);
    wf_strbuf_free(&failed);
    if (held && c->cb.hold_settle) /* the held sockets follow the outcome */
        c->cb.hold_settle(c->cb.ud, rc == 0);
    if (rc == 0) { /* the listener versions now serving (an update warming keeps them) */
        json_decref(c->lds_active);
        c->lds_active = json_incref(dyn->lds_served);
    }
    return rc;
}

json_t *xc_compose_new_set(wp_xds_client *c, int t, json_t *set, bool changed, const char *version,
                           wp_xds_dynamic *dyn, bool *composed, wf_strbuf *err)
{
    *composed = false;
    if (!changed && xc_version(c, t))
        return set;
    *composed = xc_compose_apply(c, t, set, version, dyn, err) == 0;
    if (*composed)
        return set;
    json_decref(set);
    return NULL;
}

void xc_prune(wp_xds_client *c, int t, const wf_xds_names *names)
{
    json_t *set = c->sets[t];
    json_t *keep = json_object();
    if (!set || !keep) {
        json_decref(keep);
        return;
    }
    for (size_t i = 0; i < names->n; i++) {
        json_t *e = json_object_get(set, names->v[i]);
        if (e)
            json_object_set(keep, names->v[i], e);
    }
    json_decref(set);
    c->sets[t] = keep;
}
