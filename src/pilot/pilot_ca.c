/*
 * pilot_ca.c - the CA following pilot's config: the directory's root or the plug-in cacerts
 * Secret, the trust domain, and the istio-ca-root-cert ConfigMaps. See pilot_ca.h.
 */
#include "pilot/pilot_ca.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/base64.h"
#include "core/log.h"

struct wf_pilot_ca {
    char *dir;
    char ns[64]; /* istiod's namespace: where the plug-in cacerts Secret is read */
    wf_ca_server *srv;
    uint64_t bundle_hash; /* of the plug-in Secret in use; 0 = the directory's CA */
    bool loaded;          /* a CA was made once */
    int64_t warned_na[2]; /* NotAfter of the root / signing cert last warned about (0: none) */
};

const char *wf_pilot_ca_default_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg == '/')
        snprintf(buf, cap, "%s/weft-pilot/ca", xdg);
    else if (home && *home == '/')
        snprintf(buf, cap, "%s/.local/state/weft-pilot/ca", home);
    else
        snprintf(buf, cap, "weft-pilot-ca");
    return buf;
}

int wf_pilot_ca_new(const char *dir, wf_pilot_ca **out, char *err, size_t cap)
{
    wf_ca_token_key key;
    if (wf_ca_make_dir(dir, err, cap) != 0 || wf_ca_token_key_load(dir, 1, &key, err, cap) != 0)
        return -1;
    wf_pilot_ca *pc = calloc(1, sizeof *pc);
    if (pc) {
        pc->dir = strdup(dir);
        snprintf(pc->ns, sizeof pc->ns, "%s", WF_CA_SECRET_NS);
        pc->srv = wf_ca_server_new(&key, NULL);
    }
    OPENSSL_cleanse(&key, sizeof key);
    if (!pc || !pc->dir || !pc->srv) {
        wf_pilot_ca_free(pc);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    *out = pc;
    return 0;
}

void wf_pilot_ca_set_namespace(wf_pilot_ca *pc, const char *ns)
{
    snprintf(pc->ns, sizeof pc->ns, "%s", ns && *ns ? ns : WF_CA_SECRET_NS);
}

void wf_pilot_ca_free(wf_pilot_ca *pc)
{
    if (!pc)
        return;
    wf_ca_server_free(pc->srv);
    free(pc->dir);
    free(pc);
}

wf_ca_server *wf_pilot_ca_server(const wf_pilot_ca *pc)
{
    return pc->srv;
}

const char *wf_pilot_ca_dir(const wf_pilot_ca *pc)
{
    return pc->dir;
}

/* ---- the plug-in Secret --------------------------------------------------------------------- */

typedef struct secret_file {
    char *data; /* heap, NUL-terminated; NULL when the key is absent */
    size_t len;
} secret_file;

/* Secret key k: stringData wins over data (base64), as the API server merges them. */
static int secret_get(const wf_resource *r, const char *k, secret_file *out)
{
    const char *s = wf_node_str(wf_map_get(wf_map_get(r->root, "stringData"), k));
    const char *b = wf_node_str(wf_map_get(wf_map_get(r->root, "data"), k));
    out->data = NULL;
    out->len = 0;
    if (!s && !b)
        return 0;
    if (s) {
        out->data = strdup(s);
        out->len = strlen(s);
        return out->data ? 0 : -1;
    }
    size_t n = strlen(b);
    out->data = malloc(3 * ((n + 3) / 4) + 1);
    if (!out->data ||
        !wf_base64_decode(b, n, WF_B64_SKIP_BLANKS, (unsigned char *)out->data, &out->len)) {
        free(out->data);
        out->data = NULL;
        return -1;
    }
    out->data[out->len] = '\0';
    return 0;
}

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h ^ 0xff; /* so that a key's end counts */
}

enum { K_CERT, K_KEY, K_ROOT, K_CHAIN, K_N };

/* The Secret's bundle into f (istiod format or kubernetes.io/tls). 0, or -1 with err. */
static int secret_bundle(const wf_resource *r, const char *where, secret_file f[K_N], char *err,
                         size_t cap)
{
    static const char *const istiod[K_N] = {"ca-cert.pem", "ca-key.pem", "root-cert.pem",
                                            "cert-chain.pem"};
    static const char *const tls[K_N] = {"tls.crt", "tls.key", "ca.crt", "tls.crt"};
    secret_file probe;
    if (secret_get(r, "tls.crt", &probe) != 0) {
        snprintf(err, cap, "%s: tls.crt is not valid base64", where);
        return -1;
    }
    const char *const *names = probe.data ? tls : istiod;
    free(probe.data);
    for (int i = 0; i < K_N; i++) {
        if (secret_get(r, names[i], &f[i]) != 0) {
            snprintf(err, cap, "%s: %s is not valid base64", where, names[i]);
            return -1;
        }
        if (!f[i].data) {
            snprintf(err, cap, "incomplete signing CA bundle detected at %s", where);
            return -1;
        }
    }
    WF_LOG(WF_LC_secret, WF_LOG_INFO, "%s",
           names == tls ? "Using kubernetes.io/tls secret type for signing ca files"
                        : "Using istiod file format for signing ca files");
    return 0;
}

static int secret_ca(const wf_resource *r, wf_ca **out, char *err, size_t cap)
{
    char where[128];
    snprintf(where, sizeof where, "Secret %s/%s", r->ns, WF_CA_SECRET_NAME);
    secret_file f[K_N] = {{0}};
    int rc = -1;
    if (secret_bundle(r, where, f, err, cap) == 0) {
        wf_ca_bundle b = {.ca_cert = f[K_CERT].data,
                          .ca_cert_len = f[K_CERT].len,
                          .ca_key = f[K_KEY].data,
                          .ca_key_len = f[K_KEY].len,
                          .root_cert = f[K_ROOT].data,
                          .root_cert_len = f[K_ROOT].len,
                          .cert_chain = f[K_CHAIN].data,
                          .cert_chain_len = f[K_CHAIN].len};
        rc = wf_ca_from_bundle(&b, where, out, err, cap) == WF_CA_OK ? 0 : -1;
    }
    for (int i = 0; i < K_N; i++) {
        if (f[i].data)
            OPENSSL_cleanse(f[i].data, f[i].len);
        free(f[i].data);
    }
    return rc;
}

/* The plug-in Secret's hash without building a CA (0 when there is none). */
static uint64_t secret_hash(const wf_resource *r)
{
    static const char *const keys[] = {"ca-cert.pem",    "ca-key.pem", "root-cert.pem",
                                       "cert-chain.pem", "tls.crt",    "tls.key",
                                       "ca.crt"};
    uint64_t h = 0xcbf29ce484222325ull;
    if (!r)
        return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *d = wf_node_str(wf_map_get(wf_map_get(r->root, "data"), keys[i]));
        const char *s = wf_node_str(wf_map_get(wf_map_get(r->root, "stringData"), keys[i]));
        h = fnv(h, d ? d : "", d ? strlen(d) : 0);
        h = fnv(h, s ? s : "", s ? strlen(s) : 0);
    }
    return h ? h : 1;
}

int wf_pilot_ca_update(wf_pilot_ca *pc, const wf_snapshot *snap, int64_t now_s, char *err,
                       size_t cap)
{
    const char *td = wf_meshcfg_str(snap->mesh, "trustDomain");
    if (wf_ca_server_set_trust_domain(pc->srv, td) != 0) {
        snprintf(err, cap, "out of memory");
        return pc->loaded ? 0 : -1;
    }
    const wf_resource *r = wf_store_find(snap->store, WF_KIND_SECRET, pc->ns, WF_CA_SECRET_NAME);
    uint64_t h = secret_hash(r);
    if (pc->loaded && h == pc->bundle_hash)
        return 0;
    wf_ca *ca = NULL;
    int rc = r ? secret_ca(r, &ca, err, cap)
               : (wf_ca_load_dir(pc->dir, wf_ca_server_trust_domain(pc->srv), now_s, &ca, err,
                                 cap) == WF_CA_OK
                      ? 0
                      : -1);
    if (rc != 0) {
        WF_LOG(WF_LC_secret, WF_LOG_ERROR, "%s%s", err,
               pc->loaded ? " (keeping the CA in use)" : "");
        pc->bundle_hash = h; /* not retried until it changes */
        return pc->loaded ? 0 : -1;
    }
    WF_LOG(WF_LC_secret, WF_LOG_INFO, "CA: signing with %s (%s), root expires at %lld",
           wf_ca_where(ca), wf_ca_self_signed(ca) ? "self-signed root" : "plug-in CA",
           (long long)wf_ca_root_not_after(ca));
    wf_ca_server_set_ca(pc->srv, ca);
    pc->bundle_hash = h;
    pc->loaded = true;
    return 0;
}

/* ---- root distribution ---------------------------------------------------------------------- */

static json_t *root_configmap(const char *ns, const char *pem)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", WF_CA_ROOT_CM_NAME, "namespace", ns, "labels",
                     "istio.io/config", "true", "data", "root-cert.pem", pem);
}

/* Every namespace of the store, as the keys of a new object. */
static json_t *namespaces(const wf_store *store, const char *system_ns)
{
    json_t *set = json_object();
    size_t n;
    const wf_resource *const *nss = wf_store_kind(store, WF_KIND_NAMESPACE, &n);
    if (!set)
        return NULL;
    json_object_set_new(set, "default", json_true());
    json_object_set_new(set, system_ns, json_true());
    for (size_t i = 0; i < n; i++)
        if (nss[i]->name[0])
            json_object_set_new(set, nss[i]->name, json_true());
    for (size_t i = 0; i < wf_store_count(store); i++) {
        const wf_resource *r = wf_store_at(store, i);
        if (r->ns && r->ns[0])
            json_object_set_new(set, r->ns, json_true());
    }
    return set;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *wf_pilot_ca_root_configmaps(const wf_pilot_ca *pc, const wf_store *store, const char *ns)
{
    const wf_ca *ca = wf_ca_server_ca(pc->srv);
    json_t *set = ca ? namespaces(store, pc->ns) : NULL;
    if (!set)
        return NULL;
    if (ns) {
        json_t *cm = json_object_get(set, ns) ? root_configmap(ns, wf_ca_root_pem(ca)) : NULL;
        json_decref(set);
        return cm;
    }
    size_t n = json_object_size(set), i = 0;
    const char **names = malloc((n ? n : 1) * sizeof *names);
    json_t *items = json_array(), *v;
    const char *k;
    json_object_foreach(set, k, v)
    {
        if (names)
            names[i++] = k;
    }
    if (names)
        qsort(names, n, sizeof *names, cmp_str);
    for (i = 0; names && items && i < n; i++)
        if (json_array_append_new(items, root_configmap(names[i], wf_ca_root_pem(ca))) != 0)
            break;
    json_t *list = names && items && i == n ? json_pack("{s:s,s:s,s:O}", "apiVersion", "v1", "kind",
                                                        "List", "items", items)
                                            : NULL;
    free(names);
    json_decref(items);
    json_decref(set);
    return list;
}

/* ---- expiry (ca_expiry.h) ------------------------------------------------------------------- */

size_t wf_pilot_ca_expiry(const wf_pilot_ca *pc, int64_t now_s, wf_ca_expiry out[2])
{
    return wf_ca_expiry_check(wf_ca_server_ca(pc->srv), now_s, out);
}

size_t wf_pilot_ca_warn_expiry(wf_pilot_ca *pc, int64_t now_s)
{
    wf_ca_expiry e[2];
    size_t n = wf_pilot_ca_expiry(pc, now_s, e), logged = 0;
    int64_t seen[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        size_t k = e[i].which[0] == 'r' ? 0 : 1;
        seen[k] = e[i].not_after_s;
        if (pc->warned_na[k] == e[i].not_after_s)
            continue;
        WF_LOG(WF_LC_secret, WF_LOG_WARN, "%s", e[i].message);
        logged++;
    }
    pc->warned_na[0] = seen[0];
    pc->warned_na[1] = seen[1];
    return logged;
}
