/*
 * authz_fetch.c - a proxy's AuthorizationPolicy table from its config dump, live or from a
 * file (authz_fetch.h; istioctl/pkg/authz/authz.go reads the dump the same way).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/authz_fetch.h"
#include "cli/envoy_dump.h"
#include "cli/http_client.h"
#include "cli/proxy_find.h"

#define AUTHZ_ADMIN_TIMEOUT_MS 10000

/* The pod's live /config_dump; *id the proxy's "<pod>.<ns>" (new) when id is not NULL. */
static int dump_from_pod(const char *pilot, const char *name, const char *ns, wf_envoy_dump *d,
                         char **id, wf_strbuf *err)
{
    wf_proxy_ref ref;
    if (wf_proxy_find(pilot, name, ns, &ref, err) != 0)
        return -1;
    int rc = -1;
    wf_http_resp r = {0};
    wf_strbuf why = WF_STRBUF_INIT;
    if (!ref.admin) {
        wf_strbuf_printf(&why, "proxy %s has no admin address (WEFT_ADMIN)", ref.id);
    } else if (wf_http_request("GET", ref.admin, "/config_dump", AUTHZ_ADMIN_TIMEOUT_MS, &r,
                               &why) == 0) {
        if (r.status != 200) {
            wf_strbuf_printf(&why, "unexpected status code: %d", r.status);
        } else {
            char src[512];
            snprintf(src, sizeof src, "%s (admin %s/config_dump)", ref.id, ref.admin);
            rc = wf_envoy_dump_parse(r.body, r.len, src, d, &why);
        }
        wf_http_resp_free(&r);
    }
    if (rc != 0)
        wf_strbuf_printf(err, "failed to get config dump from pod %s in %s: %s", ref.pod, ref.ns,
                         wf_strbuf_cstr(&why));
    if (rc == 0 && id && !(*id = strdup(ref.id))) {
        wf_envoy_dump_free(d);
        wf_strbuf_puts(err, "out of memory");
        rc = -1;
    }
    wf_strbuf_free(&why);
    wf_proxy_ref_free(&ref);
    return rc;
}

/* The dynamic listeners' active state (istioctl's GetDynamicListenerDump) as a table. */
static int build(const wf_envoy_dump *d, wf_authz_table *t, wf_strbuf *warn, wf_strbuf *err)
{
    size_t idx;
    wf_strbuf why = WF_STRBUF_INIT;
    json_t *sec = wf_envoy_dump_section(d, WF_DUMP_T_LISTENERS, &idx, &why);
    json_t *ls = json_array();
    int rc = -1;
    if (!ls)
        wf_strbuf_puts(&why, "out of memory");
    else if (sec && wf_envoy_dump_items(d, sec, idx, "dynamic_listeners", "active_state.listener",
                                        ls, &why) == 0)
        rc = wf_authz_build(ls, t, warn, err);
    if (rc != 0 && why.len)
        wf_strbuf_printf(err, "failed to get dynamic listener dump: %s", wf_strbuf_cstr(&why));
    json_decref(ls);
    wf_strbuf_free(&why);
    return rc;
}

int wf_authz_dump_pod(const char *pilot, const char *name, const char *ns, wf_envoy_dump *d,
                      char **pod_id, wf_strbuf *err)
{
    if (pod_id)
        *pod_id = NULL;
    return dump_from_pod(pilot, name, ns, d, pod_id, err);
}

int wf_authz_from_dump(const wf_envoy_dump *d, wf_authz_table *t, wf_strbuf *warn, wf_strbuf *err)
{
    return build(d, t, warn, err);
}

int wf_authz_fetch_pod(const char *pilot, const char *name, const char *ns, wf_authz_table *t,
                       char **pod_id, wf_strbuf *warn, wf_strbuf *err)
{
    wf_envoy_dump d;
    if (pod_id)
        *pod_id = NULL;
    if (dump_from_pod(pilot, name, ns, &d, pod_id, err) != 0)
        return -1;
    int rc = build(&d, t, warn, err);
    wf_envoy_dump_free(&d);
    if (rc != 0 && pod_id) {
        free(*pod_id);
        *pod_id = NULL;
    }
    return rc;
}

int wf_authz_fetch_file(const char *path, wf_authz_table *t, wf_strbuf *warn, wf_strbuf *err)
{
    wf_envoy_dump d;
    wf_strbuf why = WF_STRBUF_INIT;
    if (wf_envoy_dump_load_file(path, &d, &why) != 0) {
        wf_strbuf_printf(err, "failed to get config dump from file %s: %s", path,
                         wf_strbuf_cstr(&why));
        wf_strbuf_free(&why);
        return -1;
    }
    wf_strbuf_free(&why);
    int rc = build(&d, t, warn, err);
    wf_envoy_dump_free(&d);
    return rc;
}
