/*
 * proxy_find.h - finding a proxy by the names users know (istioctl's conventions,
 * reference istioctl-troubleshooting.md): `POD`, `POD.NAMESPACE`, `POD -n NS`, or
 * `deploy/NAME` (any pod of the Deployment), resolved through weft-pilot's /debug/syncz (the
 * connected proxies, node id "<pod>.<ns>", and each proxy's admin address from its node
 * metadata WEFT_ADMIN).
 *
 * The pilot address is weftctl's --pilot flag; default WF_DEFAULT_PILOT (the local mesh's
 * pilot monitoring address).
 */
#ifndef WF_CLI_PROXY_FIND_H
#define WF_CLI_PROXY_FIND_H

#include <jansson.h>

#include "core/strbuf.h"

#define WF_DEFAULT_PILOT "127.0.0.1:15014"

typedef struct wf_proxy_ref {
    char *id;    /* "<pod>.<ns>" */
    char *pod;   /* pod name */
    char *ns;    /* namespace */
    char *admin; /* "ip:port" of its admin API; NULL when pilot does not know it */
    char *type;  /* "sidecar" / "router" */
} wf_proxy_ref;

/* Resolves name (POD, POD.NS, or deploy/NAME; ns from -n, NULL = "default" unless name has a
 * namespace) against pilot. Returns 0 with *out (caller frees with wf_proxy_ref_free), or -1
 * with err: "cannot reach weft-pilot at 127.0.0.1:15014: ...", "pod catalog-x not found in
 * namespace istioinaction (connected proxies: ...)", "no pod of deploy/catalog in ...",
 * "proxy catalog-x.istioinaction has no admin address (WEFT_ADMIN)". */
int wf_proxy_find(const char *pilot, const char *name, const char *ns, wf_proxy_ref *out,
                  wf_strbuf *err);
void wf_proxy_ref_free(wf_proxy_ref *r);

/* GET path from weft-pilot's monitoring server and parse the 200 answer as JSON (any value).
 * Returns 0 with *out (caller json_decref's), or -1 with err naming the address: "cannot
 * reach weft-pilot at ADDR: ...", "weft-pilot at ADDR answered GET PATH with status N: ...",
 * "weft-pilot at ADDR: GET PATH is not JSON: ...". */
int wf_pilot_get_json(const char *pilot, const char *path, json_t **out, wf_strbuf *err);

#endif
