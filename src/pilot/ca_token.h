/*
 * ca_token.h - the tokens that authenticate a CSR call of the local mesh (where Istio uses a
 * Kubernetes service-account token, security.md §1.6 step 3-4).
 *
 * A token is a JWT (RFC 7519) signed with HS256 (HMAC-SHA-256) under a 32-byte key that
 * weft-pilot keeps in its CA directory (file "token-signing-key": 64 hex digits and a newline,
 * mode 0600; created once, atomically, next to the CA files). Its claims are those of a
 * Kubernetes projected service-account token, so the Kubernetes source can later authenticate
 * the same way from real tokens:
 *     {"aud":["istio-ca"],"exp":<s>,"iat":<s>,"iss":"weft-pilot",
 *      "kubernetes.io":{"namespace":"<ns>","serviceaccount":{"name":"<sa>"}},
 *      "sub":"system:serviceaccount:<ns>:<sa>"}
 * (compact JSON, keys sorted; header {"alg":"HS256","typ":"JWT"}; base64url without padding.)
 * Whoever can read the key file can mint tokens: it is what the Kubernetes API server's
 * service-account signing key is to kubelet. `weft-pilot create-token` prints one (as
 * `kubectl create token SA -n NS --audience istio-ca --duration 12h`).
 *
 * Verification (wf_ca_token_verify): alg HS256, the MAC (constant-time compare), aud contains
 * "istio-ca" (TOKEN_AUDIENCES), exp in the future, sub "system:serviceaccount:<ns>:<sa>" with
 * ns a DNS-1123 label and sa a DNS-1123 subdomain; kubernetes.io, when present, must agree.
 * The identity is then spiffe://<trust domain>/ns/<ns>/sa/<sa>. Tokens are at most 4 KiB.
 */
#ifndef WF_PILOT_CA_TOKEN_H
#define WF_PILOT_CA_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define WF_CA_TOKEN_KEY_FILE      "token-signing-key"
#define WF_CA_TOKEN_AUDIENCE      "istio-ca"
#define WF_CA_TOKEN_DEFAULT_TTL_S 43200 /* istio-token expirationSeconds */
#define WF_CA_TOKEN_MAX           4096  /* bytes */

typedef struct wf_ca_token_key {
    unsigned char k[32];
} wf_ca_token_key;

/* Reads dir/token-signing-key; when it does not exist and create is set, makes a random one
 * first (the directory must exist). Returns 0, or -1 with err naming the file. */
int wf_ca_token_key_load(const char *dir, int create, wf_ca_token_key *out, char *err, size_t cap);

/* A token for ns/sa valid from now_s for ttl_s seconds: a heap string (caller frees), or NULL
 * when ns or sa is not a valid name (err says which) or memory runs out. */
char *wf_ca_token_mint(const wf_ca_token_key *key, const char *ns, const char *sa, int64_t now_s,
                       int64_t ttl_s, char *err, size_t cap);

/* Checks a token (len bytes) at now_s. Returns 0 with the namespace and service account
 * (NUL-terminated into ns / sa, 254 bytes each), or -1 with the reason in err. */
int wf_ca_token_verify(const wf_ca_token_key *key, const char *tok, size_t len, int64_t now_s,
                       char ns[254], char sa[254], char *err, size_t cap);

/* `weft-pilot create-token` (ca_token_cmd.c): argv[0] is "create-token". Returns the exit
 * code (0, 1 key trouble, 2 bad command line). */
int wf_ca_token_cmd(int argc, char **argv);

#endif
