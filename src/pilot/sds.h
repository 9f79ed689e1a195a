/*
 * sds.h - the Secret resources weft-pilot serves over ADS for gateway credentials
 * (credentialName): istiod's SecretGen (pilot/pkg/xds/sds.go), the Kubernetes Secret layouts of
 * pilot/pkg/credentials/kube/secrets.go and the resource names of
 * pilot/pkg/model/credentials/resource.go (reference security.md §2.1, §2.3, §2.4, §5.3).
 *
 * Input: the proxy's subscribed resource names (SDS is never wildcard: no names, no resources),
 * the proxy's id and namespace, the config store's Secrets (`data`, base64, and `stringData`,
 * which wins as the API server merges it), and the wall clock.
 *  - `kubernetes://<name>` names the Secret <name> of the proxy's namespace,
 *    `kubernetes://<ns>/<name>` the Secret <name> of <ns>. Another prefix: Istio's "error
 *    parsing resource name: unknown resource type: <name>", counted, left out.
 *  - Only Secrets of the proxy's own namespace are served; the others are dropped with one
 *    line for the request, "proxy <id> attempted to access unauthorized certificates <names>:
 *    cross namespace secret reference requires ReferenceGrant" (names: the Secret names,
 *    at most 3, istiod's atMostNJoin), counted once.
 *  - A name ending in `-cacert` is a CA: the Secret `<name>-cacert` when it exists, else the
 *    Secret `<name>`; keys `cacert`, then `ca.crt`. Answer {"@type": Secret, name,
 *    validation_context {trusted_ca {inline_bytes}}} (plus crl {inline_bytes} from `ca.crl`
 *    or `crl`). Errors (istiod's): "secret <ns>/<name> not found", "found key \"cacert\", but
 *    it was empty", "found secret, but didn't have expected keys cacert or ca.crt; found:
 *    <keys>", logged as "failed to fetch ca certificate for <resource>: <err>".
 *  - Any other name is a key and certificate: keys `cert` + `key`, then `tls.crt` + `tls.key`.
 *    Answer {"@type", name, tls_certificate {certificate_chain {inline_bytes}, private_key
 *    {inline_bytes}}} (inline_bytes: base64, protobuf JSON's bytes). Errors: "secret
 *    <ns>/<name> not found", "found keys \"cert\" and \"key\", but they were empty" (or
 *    tls.crt/tls.key), "found secret, but didn't have expected keys (cert and key) or (tls.crt
 *    and tls.key); found: <keys>", logged as "failed to fetch key and certificate for
 *    <resource>: <err>". <keys>: the Secret's keys sorted, ", "-joined, over three as
 *    "a, b, c, and N more...".
 *  - A failed fetch is counted (pilot_sds_certificate_errors_total) and the resource omitted.
 *  - The served certificate (first PEM block) is checked as istiod's ValidateCertificate: not
 *    PEM ("pem decode failed"), unparsable, or outside its validity ("certificate is expired or
 *    not yet valid"): counted and logged "invalid certificates: <ns>/<name> \"<resource>\":
 *    <err>" (reference §2.4), and still sent (Envoy then NACKs what it cannot load).
 *
 * Output: a new JSON array (caller json_decrefs) in the order of the names, NULL on out of
 * memory. Log lines go to rep->warn (NULL: none) and errors are added to rep->errors (NULL:
 * not counted), so the ADS server logs and counts while debug views and tests stay quiet or
 * collect them.
 */
#ifndef WF_PILOT_SDS_H
#define WF_PILOT_SDS_H

#include <stdint.h>

#include <jansson.h>

#include "model/store.h"
#include "xds/discovery.h"

#define WF_SDS_K8S_PREFIX "kubernetes://"
#define WF_SDS_CA_SUFFIX  "-cacert"

typedef struct wf_sds_report {
    void (*warn)(void *ud, const char *line); /* NULL: no log lines */
    void *ud;
    uint64_t *errors; /* pilot_sds_certificate_errors_total; NULL: not counted */
} wf_sds_report;

json_t *wf_pilot_sds_secrets(const wf_store *s, const char *proxy_id, const char *proxy_ns,
                             const wf_xds_names *names, int64_t now_s, const wf_sds_report *rep);

#endif
