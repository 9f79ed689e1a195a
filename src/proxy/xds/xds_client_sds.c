/*
 * xds_client_sds.c - the credentialName secrets the xDS client fetches over ADS (SDS type
 * Secret, `kubernetes://...` names, security.md §2.1, §5.3): the secrets handed to the owner
 * (callbacks.secrets), the names the listeners wait for, and Envoy's initial fetch timeout
 * (SdsApi's init_fetch_timeout, default 15 s, sds_config.initial_fetch_timeout): a listener
 * waits (warming, xds_compose.h) until its secrets arrive or the timeout passes; then it
 * serves, and the chains without their secret fail their handshakes (NotReadySslSocket,
 * sds/sds_ctx.h). One timer covers the names missing when it is armed: it is armed when the
 * listeners name a secret not held and it is not running, and on firing every subscribed name
 * still missing times out.
 */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/xds/xds_client_state.h"

/* The names subscribed (SotW or delta state). */
static const wf_xds_names *subscribed(const wp_xds_client *c)
{
    return c->delta ? &c->dtypes[WF_XDS_SDS].names : &c->types[WF_XDS_SDS].names;
}

static bool held(const wp_xds_client *c, const char *name)
{
    return c->sets[WF_XDS_SDS] && json_object_get(c->sets[WF_XDS_SDS], name);
}

static bool expired(const wp_xds_client *c, const char *name)
{
    return json_object_get(c->sds_expired, name) != NULL;
}

/* The state composed again (a secret's fetch timed out): the listeners that waited serve. */
static void recompose(wp_xds_client *c)
{
    wp_xds_dynamic dyn;
    wf_strbuf err = WF_STRBUF_INIT;
    const char *v = xc_version(c, WF_XDS_SDS);
    if (xc_compose_apply(c, WF_XDS_SDS, c->sets[WF_XDS_SDS], v, &dyn, &err) == 0) {
        wp_xds_dynamic_free(&dyn);
        if (c->cb.on_update) /* the owner re-reads the warming state (readiness) */
            c->cb.on_update(c->cb.ud, WF_XDS_SDS, v ? v : "", true);
    } else
        WF_LOG(WF_LC_config, WF_LOG_WARN, "after the SDS initial fetch timeout: %s",
               wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
}

static void on_sds_fetch_timeout(uv_timer_t *t)
{
    wp_xds_client *c = t->data;
    const wf_xds_names *want = subscribed(c);
    size_t n = 0;
    for (size_t i = 0; i < want->n; i++) {
        if (held(c, want->v[i]) || expired(c, want->v[i]))
            continue;
        WF_LOG(WF_LC_config, WF_LOG_WARN,
               "%s: initial fetch timeout of the SDS secret (%llu ms): its listeners serve, "
               "their handshakes fail until it arrives (Secret is not supplied by SDS)",
               want->v[i], (unsigned long long)c->sds_fetch_ms);
        n += json_object_set_new(c->sds_expired, want->v[i], json_true()) == 0;
    }
    if (n)
        recompose(c);
}

void xc_sds_watch(wp_xds_client *c, const wp_xds_dynamic *dyn)
{
    if (c->cb.secrets) {
        wf_strbuf err = WF_STRBUF_INIT;
        c->cb.secrets(c->cb.ud, NULL, &dyn->sds_names, &err);
        wf_strbuf_free(&err);
    }
    bool missing = false;
    for (size_t i = 0; i < dyn->sds_names.n && !missing; i++)
        missing = !held(c, dyn->sds_names.v[i]) && !expired(c, dyn->sds_names.v[i]);
    if (!missing || dyn->sds_fetch_ms == 0 || uv_is_active((uv_handle_t *)&c->sds_fetch))
        return;
    c->sds_fetch_ms = dyn->sds_fetch_ms;
    if (uv_timer_start(&c->sds_fetch, on_sds_fetch_timeout, dyn->sds_fetch_ms, 0) != 0)
        WF_LOG(WF_LC_config, WF_LOG_ERROR, "cannot arm the SDS initial fetch timer");
}

int xc_sds_store(wp_xds_client *c, const json_t *set, wf_strbuf *err)
{
    if (!c->cb.secrets) {
        wf_strbuf_puts(err, "SDS secrets are not supported by this client");
        return -1;
    }
    return c->cb.secrets(c->cb.ud, set, subscribed(c), err);
}
