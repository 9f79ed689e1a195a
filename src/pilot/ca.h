/*
 * ca.h - weft-pilot's certificate authority (istiod's built-in CA, Citadel): the signing
 * material (a self-signed root kept in a directory, or a plug-in CA with an intermediate chain)
 * and workload certificates issued for a CSR.
 *
 * Istio behaviour followed (../shared/reference/security.md §1.2-1.4; istio/istio
 * security/pkg/pki/ca/ca.go, security/pkg/pki/util/generate_cert.go, pilot/pkg/bootstrap/
 * istio_ca.go):
 *  - Material = signing cert + key, root cert, cert chain (signing cert up to, not including,
 *    the root; empty for a self-signed root), in the file names of Istio's istio-ca-secret and
 *    cacerts Secret: ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem. The
 *    kubernetes.io/tls layout (tls.crt = signing cert [+ chain], tls.key, ca.crt = root) is
 *    accepted too; then cert-chain is tls.crt, as istiod does.
 *  - A plug-in bundle is checked as istiod's NewVerifiedKeyCertBundleFromPem does: every PEM
 *    parses, the key matches the signing cert, the signing cert is a CA, and signing cert +
 *    chain verify up to the root.
 *  - Self-signed root (wf_ca_load_dir on an empty directory): RSA 2048 key, subject
 *    O=<trust domain>, 3650 days (CITADEL_SELF_SIGNED_CA_CERT_TTL), CA:TRUE. Created once (log
 *    "CASecret istio-ca-secret not found, will create one") and kept in the directory; ca-key.pem
 *    is written 0600, the other files 0644, each written to a temporary name and renamed, the
 *    whole creation under an flock(2) of DIR/.lock so that two pilots on one directory make one
 *    root. A directory holding a bundle (written by weft, or a plug-in CA copied there) is
 *    loaded as it is ("Using istiod file format for signing ca files" / "Using kubernetes.io/tls
 *    secret type for signing ca files"); a partial bundle is an error: "incomplete signing CA
 *    bundle detected at <dir>". A self-signed root there (empty cert-chain.pem) with less than
 *    20 % of its life left is re-issued with the same key and subject for another 3650 days
 *    and written back (istiod's SelfSignedCARootCertRotator, which also runs every hour; weft
 *    checks when the directory is loaded), so leaves it signed keep verifying.
 *  - Workload certificate (wf_ca_sign), §1.2: empty subject; one URI SAN = the caller's SPIFFE
 *    ID (from authentication, never from the CSR), extension critical; keyUsage critical
 *    digitalSignature + keyEncipherment; extKeyUsage serverAuth + clientAuth; basicConstraints
 *    critical CA:FALSE; authority key id of the signing cert; 128-bit random serial; SHA-256.
 *    NotBefore = now - 2 min (ClockSkewGracePeriod); NotAfter = now + TTL, where TTL <= 0 means
 *    DEFAULT_WORKLOAD_CERT_TTL (24 h), a TTL above MAX_WORKLOAD_CERT_TTL (90 d) is refused with
 *    "requested TTL <x> is greater than the max allowed TTL <y>" (Go durations, "2400h0m0s"),
 *    and NotAfter is clamped to the earliest NotAfter of the signing cert and its chain. An
 *    expired signing cert refuses: "signing certificate has expired at <RFC 3339>". The CSR is
 *    only parsed and its signature checked; RSA and ECDSA keys are both accepted.
 *  - Chain returned: leaf, cert-chain.pem (one element, as the file is, when not empty), root
 *    last.
 *
 * Errors carry Istio's caerror type (wf_ca_err), which decides the gRPC status.
 * Ownership: a wf_ca is immutable once made; wf_ca_free releases it. No global state.
 */
#ifndef WF_PILOT_CA_H
#define WF_PILOT_CA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WF_CA_DEFAULT_TTL_S  (24 * 3600)      /* DEFAULT_WORKLOAD_CERT_TTL */
#define WF_CA_MAX_TTL_S      (90 * 24 * 3600) /* MAX_WORKLOAD_CERT_TTL */
#define WF_CA_ROOT_TTL_S     (3650 * 86400LL) /* CITADEL_SELF_SIGNED_CA_CERT_TTL */
#define WF_CA_ROOT_RSA_BITS  2048             /* CITADEL_SELF_SIGNED_CA_RSA_KEY_SIZE */
#define WF_CA_CLOCK_SKEW_S   120              /* ClockSkewGracePeriod */
#define WF_CA_ROOT_GRACE_PCT 20 /* CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE */
#define WF_CA_MAX_PEM        (256 * 1024) /* bytes per PEM file read */

/* Istio's caerror types (security/pkg/pki/error). */
typedef enum wf_ca_err {
    WF_CA_OK = 0,
    WF_CA_E_NOT_READY, /* CA_NOT_READY: no signing material */
    WF_CA_E_CSR,       /* CSR_ERROR: unparsable CSR or bad signature */
    WF_CA_E_TTL,       /* TTL_ERROR: above the max TTL */
    WF_CA_E_CERT_GEN,  /* CERT_GEN_ERROR: signing failed, signing cert expired */
    WF_CA_E_CONFIG,    /* CA_ILLEGAL_CONFIG: a bad or incomplete bundle */
} wf_ca_err;

/* "CA_NOT_READY", "CSR_ERROR", "TTL_ERROR", "CERT_GEN_ERROR", "CA_ILLEGAL_CONFIG", "" for OK
 * (the error label of citadel_server_csr_sign_err_count). */
const char *wf_ca_err_name(wf_ca_err e);

typedef struct wf_ca wf_ca;

/* One bundle of PEM texts (not necessarily NUL-terminated; len 0 = absent). cert_chain may be
 * absent (a self-signed root). */
typedef struct wf_ca_bundle {
    const char *ca_cert, *ca_key, *root_cert, *cert_chain;
    size_t ca_cert_len, ca_key_len, root_cert_len, cert_chain_len;
} wf_ca_bundle;

/* A CA from a bundle, checked as above. where names the bundle in messages ("Secret
 * istio-system/cacerts", a directory). Returns 0 and *out, or a wf_ca_err with err. */
int wf_ca_from_bundle(const wf_ca_bundle *b, const char *where, wf_ca **out, char *err, size_t cap);

/* The CA kept in dir (created with mode 0700 when missing): loaded when it holds a bundle,
 * else a new self-signed root for trust_domain is made and written there. now_s: the
 * wall clock (seconds since the epoch). Returns 0 and *out, or a wf_ca_err with err naming
 * the file or directory at fault. */
int wf_ca_load_dir(const char *dir, const char *trust_domain, int64_t now_s, wf_ca **out, char *err,
                   size_t cap);

/* mkdir -p dir, creating what is missing with mode 0700. 0, or -1 with err. */
int wf_ca_make_dir(const char *dir, char *err, size_t cap);

/* A new self-signed root (in memory only). For tests and wf_ca_load_dir. not_before_s /
 * not_after_s: validity (seconds since the epoch). */
int wf_ca_new_self_signed(const char *trust_domain, int64_t not_before_s, int64_t not_after_s,
                          wf_ca **out, char *err, size_t cap);

/* A CSR to sign. */
typedef struct wf_ca_sign_req {
    const char *csr_pem; /* PEM "CERTIFICATE REQUEST" */
    size_t csr_len;
    const char *san;       /* the caller's identity (URI SAN), "spiffe://td/ns/N/sa/S" */
    int64_t ttl_s;         /* requested validity_duration; <= 0 = default */
    int64_t now_s;         /* wall clock */
    int64_t default_ttl_s; /* 0 = WF_CA_DEFAULT_TTL_S */
    int64_t max_ttl_s;     /* 0 = WF_CA_MAX_TTL_S */
} wf_ca_sign_req;

/* The chain returned for a CSR: PEM texts, leaf first, root last (heap, wf_ca_chain_free). */
typedef struct wf_ca_chain {
    char *pem[3];
    size_t n;
    /* the leaf's serial number (lowercase hex, as Envoy's certs admin shows it) and validity
     * (seconds since the epoch) */
    char serial[48];
    int64_t not_before_s, not_after_s;
} wf_ca_chain;

/* Issues a workload certificate. Returns WF_CA_OK and *out, or a wf_ca_err with Istio's
 * message in err (the detail of "CSR signing error (<detail>)"). */
int wf_ca_sign(const wf_ca *ca, const wf_ca_sign_req *req, wf_ca_chain *out, char *err, size_t cap);
void wf_ca_chain_free(wf_ca_chain *c);

/* istiod's serving certificate for its secure gRPC port (15012), which proxies verify against
 * the mesh root: a new ECDSA P-256 key and a certificate of the CA with the DNS names dns and
 * the IP addresses ips (text) as SANs, valid ttl_s from now (clamped to the CA's chain). Out:
 * *chain_pem = the leaf then the CA's cert-chain.pem (heap), *key_pem (heap; wipe before free).
 * WF_CA_OK, or a wf_ca_err with err. */
int wf_ca_issue_server(const wf_ca *ca, const char *const *dns, size_t ndns, const char *const *ips,
                       size_t nips, int64_t now_s, int64_t ttl_s, char **chain_pem, char **key_pem,
                       char *err, size_t cap);

/* The root PEM (NUL-terminated, owned by ca), its NotAfter and the signing cert's NotAfter
 * (seconds since the epoch). */
const char *wf_ca_root_pem(const wf_ca *ca);
int64_t wf_ca_root_not_after(const wf_ca *ca);
int64_t wf_ca_signing_not_after(const wf_ca *ca);
/* NotBefore of the root and of the signing cert (seconds since the epoch). */
int64_t wf_ca_root_not_before(const wf_ca *ca);
int64_t wf_ca_signing_not_before(const wf_ca *ca);
/* The cert chain PEM ("" for a self-signed root), owned by ca. */
const char *wf_ca_cert_chain_pem(const wf_ca *ca);
/* True for a self-signed root (no intermediate). */
bool wf_ca_self_signed(const wf_ca *ca);
/* Where the material came from (as given to wf_ca_from_bundle / wf_ca_load_dir). */
const char *wf_ca_where(const wf_ca *ca);

void wf_ca_free(wf_ca *ca);

/* Go's time.Duration.String() of whole seconds: "24h0m0s", "1m30s", "45s", "0s". buf holds
 * at least 32 bytes. */
const char *wf_ca_go_duration(int64_t s, char *buf, size_t cap);

#endif
