/*
 * pilot_ca.h - weft-pilot's CA wired to its config (istiod's pilot/pkg/bootstrap/istio_ca.go
 * and the namespace controller that publishes the root).
 *
 *  - The CA directory (--ca-dir) holds the self-signed root (ca.h wf_ca_load_dir: created once,
 *    kept across restarts) and the token key (ca_token.h). It is used unless the config holds
 *    a plug-in CA: a Secret `cacerts` in istio-system (istiod's namespace) with the keys
 *    ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem (or tls.crt, tls.key, ca.crt), in
 *    `data` (base64) or `stringData`. Such a Secret wins, as a mounted cacerts does in istiod.
 *    A partial one is refused: "incomplete signing CA bundle detected at Secret
 *    istio-system/cacerts". The material is reloaded when the Secret changes (or goes away:
 *    back to the directory's root); a bad new bundle is logged and the CA in use is kept.
 *  - The trust domain of issued identities is MeshConfig trustDomain (default cluster.local),
 *    followed on every snapshot; the self-signed root's subject is O=<trust domain> at creation.
 *  - Root distribution: the ConfigMap istio-ca-root-cert (key root-cert.pem) of every namespace
 *    (the store's Namespace objects, every namespace a resource is in, and default and
 *    istio-system, which always exist), labelled istio.io/config: "true", as a Kubernetes List.
 */
#ifndef WF_PILOT_PILOT_CA_H
#define WF_PILOT_PILOT_CA_H

#include <jansson.h>

#include "pilot/ca_expiry.h"
#include "pilot/ca_server.h"
#include "pilot/source.h"

#define WF_CA_SECRET_NS    "istio-system"
#define WF_CA_SECRET_NAME  "cacerts"
#define WF_CA_ROOT_CM_NAME "istio-ca-root-cert"

typedef struct wf_pilot_ca wf_pilot_ca;

/* Makes dir (0700) and its token key, and a CSR server without CA yet. Returns 0 and *out, or
 * -1 with err naming the path at fault. */
int wf_pilot_ca_new(const char *dir, wf_pilot_ca **out, char *err, size_t cap);
/* Follows a snapshot (trust domain, plug-in Secret). Returns 0, or -1 with err when there is
 * no CA at all afterwards (the first load failed). */
int wf_pilot_ca_update(wf_pilot_ca *pc, const wf_snapshot *snap, int64_t now_s, char *err,
                       size_t cap);
/* istiod's namespace (POD_NAMESPACE; NULL or "" = istio-system): where the plug-in cacerts
 * Secret is read, as istiod reads it from its own namespace. */
void wf_pilot_ca_set_namespace(wf_pilot_ca *pc, const char *ns);
wf_ca_server *wf_pilot_ca_server(const wf_pilot_ca *pc);
const char *wf_pilot_ca_dir(const wf_pilot_ca *pc);
void wf_pilot_ca_free(wf_pilot_ca *pc);

/* The CA's root / signing certificate near their end (ca_expiry.h) at now_s: how many are in
 * out (room for 2); 0 also when there is no CA. */
size_t wf_pilot_ca_expiry(const wf_pilot_ca *pc, int64_t now_s, wf_ca_expiry out[2]);
/* Logs each finding of wf_pilot_ca_expiry as a warning (scope secret) once: again only when
 * that certificate changes (a new NotAfter) and is found again. Returns how many were logged.
 * weft-pilot calls it after every snapshot and every WF_PILOT_CA_CHECK_S seconds. */
size_t wf_pilot_ca_warn_expiry(wf_pilot_ca *pc, int64_t now_s);
#define WF_PILOT_CA_CHECK_S 3600 /* Istio's CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL (1h) */

/* The istio-ca-root-cert ConfigMaps for the namespaces of store (see above), as a List; only
 * namespace ns when ns is non-NULL (then NULL when ns is not a namespace of the store). A new
 * object, or NULL (also when there is no CA or memory ran out). */
json_t *wf_pilot_ca_root_configmaps(const wf_pilot_ca *pc, const wf_store *store, const char *ns);

/* The default CA directory: $XDG_STATE_HOME/weft-pilot/ca, else $HOME/.local/state/weft-pilot/
 * ca, else ./weft-pilot-ca; into buf (cap bytes). */
const char *wf_pilot_ca_default_dir(char *buf, size_t cap);

#endif
