/*
 * gateway_secrets.h - weft-pilot's check of the Secrets its gateways' TLS servers name
 * (credentialName), so that a missing or expiring credential is reported by pilot itself and
 * not only as a handshake that fails at the gateway (operator report B030; issue 17 item 6).
 *
 * Istio resolves a Gateway server's credentialName in the namespace of the gateway WORKLOAD
 * (the pod the Gateway's selector picks), not the Gateway's (istiod's SDS authorisation,
 * pilot/pkg/xds/sds.go; gateway.SecretAnalyzer, IST0101). istiod logs only "failed to fetch key
 * and certificate for kubernetes://<name>" when the proxy asks (pilot/sds.h keeps that line);
 * weft adds one report per Gateway server that says where it looked.
 *
 * Input: a finalized store (Gateways, Pods, Secrets) and the wall clock (seconds).
 * For every Gateway server that terminates TLS (pilot/gateway_tls.h wf_gw_tls_server) and every
 * namespace holding a pod its selector picks (each namespace once; no pod: nothing, the
 * analyzer's IST0101 selector message covers it):
 *  - NOT_FOUND: no Secret <credentialName> in that namespace (a "ns/name" credential names
 *    its namespace). `elsewhere` names another namespace holding a Secret of that name.
 *  - EXPIRED / EXPIRING: the Secret's certificate (tls.crt, else cert; data or stringData)
 *    fails Istio's ValidateCertificate (analysis/an_gateway_util.h, the IST0161 check) or its
 *    earliest NotAfter is within WF_GWSEC_EXPIRY_WARN_DAYS days of now (weft's threshold).
 * Output: fn is called for each problem in Gateway and server order; strings point into the
 * store or are valid during the call only. Returns 0, or -1 on out of memory.
 */
#ifndef WF_PILOT_GATEWAY_SECRETS_H
#define WF_PILOT_GATEWAY_SECRETS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/store.h"

#define WF_GWSEC_EXPIRY_WARN_DAYS 30

typedef enum wf_gwsec_kind {
    WF_GWSEC_NOT_FOUND,
    WF_GWSEC_INVALID,  /* not parsable, expired or not yet valid (IST0161's check) */
    WF_GWSEC_EXPIRING, /* valid, expires within WF_GWSEC_EXPIRY_WARN_DAYS */
} wf_gwsec_kind;

typedef struct wf_gwsec_problem {
    wf_gwsec_kind kind;
    const wf_resource *gateway;
    const wf_gateway_server *server;
    const char *secret;    /* the Secret name looked for */
    const char *ns;        /* the namespace it was looked for in (the workload's) */
    const char *workload;  /* the first pod of that namespace the Gateway selects */
    const char *elsewhere; /* NOT_FOUND: a namespace holding a Secret of that name, or NULL */
    int64_t not_after_s;   /* INVALID / EXPIRING: earliest NotAfter (0: unparsable) */
    bool no_material;      /* INVALID: no certificate or no key (absent or empty) */
    int64_t now_s;
} wf_gwsec_problem;

/* false stops the walk. */
typedef bool (*wf_gwsec_fn)(const wf_gwsec_problem *p, void *ud);

int wf_gw_secret_problems(const wf_store *s, int64_t now_s, wf_gwsec_fn fn, void *ud);

/* The problem as one line (no newline) into buf, without the Gateway (the caller names it):
 * "server <portName> (port <n>): credentialName secret \"<name>\" not found in namespace <ns>
 * (the namespace of the gateway workload <ns>/<pod>, where Istio looks for it)[; a Secret
 * <name> exists in namespace <other>, ...]; ...", or "... expired N days ago (NotAfter
 * <RFC 3339>)", or "... expires in N days (NotAfter <RFC 3339>; weft warns 30 days ahead)".
 * Returns buf. */
const char *wf_gwsec_message(const wf_gwsec_problem *p, char *buf, size_t cap);

#endif
