/*
 * sds.c - credentialName Secrets as SDS resources (istiod's SecretGen, pilot/pkg/xds/sds.go,
 * and the layouts of pilot/pkg/credentials/kube/secrets.go). See sds.h.
 */
#include "pilot/sds.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "core/base64.h"
#include "core/strbuf.h"
#include "xds/discovery.h"

/* ---- reporting ---- */

static void count(const wf_sds_report *rep)
{
    if (rep && rep->errors)
        (*rep->errors)++;
}

static void warn(const wf_sds_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const wf_sds_report *rep, const char *fmt, ...)
{
    if (!rep || !rep->warn)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rep->warn(rep->ud, line);
}

/* ---- Secret data ---- */

/* One value of a Secret, decoded (heap, NUL-terminated); data NULL when the key is absent. */
typedef struct sval {
    unsigned char *data;
    size_t len;
} sval;

static void sval_free(sval *v)
{
    if (v->data) {
        OPENSSL_cleanse(v->data, v->len);
        free(v->data);
    }
    *v = (sval){0};
}

/* Secret key k: stringData wins over data (base64), as the API server merges them. A value
 * that does not decode counts as absent (the API server would have refused it). -1 on OOM. */
static int sval_get(const wf_resource *r, const char *k, sval *out)
{
    const wf_node *sd = wf_map_get(wf_map_get(r->root, "stringData"), k);
    const wf_node *d = wf_map_get(wf_map_get(r->root, "data"), k);
    *out = (sval){0};
    const wf_node *use = sd && sd->type != WF_NODE_MAP && sd->type != WF_NODE_SEQ ? sd : d;
    if (!use || use->type == WF_NODE_MAP || use->type == WF_NODE_SEQ)
        return 0;
    size_t n = use->type == WF_NODE_SCALAR ? use->len : 0;
    out->data = malloc(n + 1);
    if (!out->data)
        return -1;
    if (use == sd) {
        memcpy(out->data, use->type == WF_NODE_SCALAR ? use->u.str : "", n);
        out->len = n;
    } else if (n && !wf_base64_decode(use->u.str, n, 0, out->data, &out->len)) {
        sval_free(out);
        return 0;
    }
    out->data[out->len] = '\0';
    return 0;
}

static bool has_key(const wf_resource *r, const char *k)
{
    return wf_map_get(wf_map_get(r->root, "stringData"), k) ||
           wf_map_get(wf_map_get(r->root, "data"), k);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_keys(const wf_node *m, const char **keys, size_t *n, size_t cap)
{
    if (!m || m->type != WF_NODE_MAP)
        return;
    for (size_t i = 0; i < m->len && *n < cap; i++) {
        bool dup = false;
        for (size_t j = 0; j < *n && !dup; j++)
            dup = strcmp(keys[j], m->u.entries[i].key) == 0;
        if (!dup)
            keys[(*n)++] = m->u.entries[i].key;
    }
}

/* istiod's truncatedKeysMessage: the keys sorted, over three as "a, b, c, and N more...". */
static void keys_message(const wf_resource *r, char *buf, size_t cap)
{
    const char *keys[128];
    size_t n = 0;
    add_keys(wf_map_get(r->root, "data"), keys, &n, 128);
    add_keys(wf_map_get(r->root, "stringData"), keys, &n, 128);
    qsort(keys, n, sizeof keys[0], cmp_str);
    size_t shown = n < 3 ? n : 3, off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < shown && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", keys[i]);
    if (n > 3 && off < cap)
        snprintf(buf + off, cap - off, ", and %zu more...", n - 3);
}

/* ---- validation (istiod's ValidateCertificate) ---- */

/* NULL when the first PEM block is certificates all valid at now, else the reason. */
static const char *cert_problem(const sval *cert, int64_t now_s)
{
    BIO *b = BIO_new_mem_buf(cert->data, (int)cert->len);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    const char *why = NULL;
    if (!x)
        why = "pem decode failed";
    else {
        time_t t = (time_t)now_s;
        if (X509_cmp_time(X509_get0_notBefore(x), &t) > 0 ||
            X509_cmp_time(X509_get0_notAfter(x), &t) < 0)
            why = "certificate is expired or not yet valid";
    }
    X509_free(x);
    BIO_free(b);
    ERR_clear_error();
    return why;
}

/* ---- resources ---- */

static json_t *inline_bytes(const sval *v)
{
    size_t cap = 4 * ((v->len + 2) / 3) + 1;
    char *b64 = malloc(cap);
    if (!b64)
        return NULL;
    wf_base64_encode(v->data, v->len, b64, cap);
    json_t *o = json_pack("{s:s}", "inline_bytes", b64);
    OPENSSL_cleanse(b64, cap);
    free(b64);
    return o;
}

static json_t *tls_secret(const char *name, const sval *cert, const sval *key)
{
    return json_pack("{s:s,s:s,s:{s:o,s:o}}", "@type", WF_XDS_TYPE_SECRET, "name", name,
                     "tls_certificate", "certificate_chain", inline_bytes(cert), "private_key",
                     inline_bytes(key));
}

static json_t *ca_secret(const char *name, const sval *ca, const sval *crl)
{
    json_t *vc = json_pack("{s:o}", "trusted_ca", inline_bytes(ca));
    if (vc && crl->data && crl->len && json_object_set_new(vc, "crl", inline_bytes(crl)) != 0) {
        json_decref(vc);
        vc = NULL;
    }
    return json_pack("{s:s,s:s,s:o}", "@type", WF_XDS_TYPE_SECRET, "name", name,
                     "validation_context", vc);
}

/* A parsed resource name (credentials.ParseResourceName). */
typedef struct sref {
    const char *resource; /* as requested */
    char ns[254];
    char name[254];
} sref;

static bool parse_name(const char *resource, const char *proxy_ns, sref *out)
{
    size_t pl = sizeof WF_SDS_K8S_PREFIX - 1;
    if (strncmp(resource, WF_SDS_K8S_PREFIX, pl) != 0)
        return false;
    const char *rest = resource + pl, *slash = strchr(rest, '/');
    out->resource = resource;
    if (slash) {
        snprintf(out->ns, sizeof out->ns, "%.*s", (int)(slash - rest), rest);
        const char *end = strchr(slash + 1, '/');
        snprintf(out->name, sizeof out->name, "%.*s",
                 (int)(end ? (size_t)(end - slash - 1) : strlen(slash + 1)), slash + 1);
    } else {
        snprintf(out->ns, sizeof out->ns, "%s", proxy_ns ? proxy_ns : "");
        snprintf(out->name, sizeof out->name, "%s", rest);
    }
    return true;
}

static bool is_ca(const char *name)
{
    size_t n = strlen(name), sl = sizeof WF_SDS_CA_SUFFIX - 1;
    return n > sl && strcmp(name + n - sl, WF_SDS_CA_SUFFIX) == 0;
}

/* The first pair of keys with both values non-empty; 1 found, 0 not, -1 OOM. */
static int pick(const wf_resource *r, const char *a, const char *b, sval *va, sval *vb)
{
    if (sval_get(r, a, va) != 0 || (b && sval_get(r, b, vb) != 0)) {
        sval_free(va);
        if (b)
            sval_free(vb);
        return -1;
    }
    if (va->len && (!b || vb->len))
        return 1;
    sval_free(va);
    if (b)
        sval_free(vb);
    return 0;
}

/* GetCertInfo: the key and certificate, or NULL with err (oom set on out of memory). */
static json_t *key_cert(const wf_store *s, const sref *r, int64_t now_s, const wf_sds_report *rep,
                        bool *oom)
{
    char err[1024] = "";
    const wf_resource *sec = wf_store_find(s, WF_KIND_SECRET, r->ns, r->name);
    sval cert = {0}, key = {0};
    int got = 0;
    if (!sec)
        snprintf(err, sizeof err, "secret %s/%s not found", r->ns, r->name);
    else if ((got = pick(sec, "cert", "key", &cert, &key)) == 0 &&
             (got = pick(sec, "tls.crt", "tls.key", &cert, &key)) == 0) {
        char keys[256];
        keys_message(sec, keys, sizeof keys);
        if (has_key(sec, "cert") && has_key(sec, "key"))
            snprintf(err, sizeof err, "found keys \"cert\" and \"key\", but they were empty");
        else if (has_key(sec, "tls.crt") && has_key(sec, "tls.key"))
            snprintf(err, sizeof err,
                     "found keys \"tls.crt\" and \"tls.key\", but they were empty");
        else
            snprintf(err, sizeof err,
                     "found secret, but didn't have expected keys (cert and key) or (tls.crt and "
                     "tls.key); found: %s",
                     keys);
    }
    if (got < 0) {
        *oom = true;
        return NULL;
    }
    if (err[0]) {
        count(rep);
        warn(rep, "failed to fetch key and certificate for %s: %s", r->resource, err);
        return NULL;
    }
    const char *why = cert_problem(&cert, now_s);
    if (why) {
        count(rep);
        warn(rep, "invalid certificates: %s/%s \"%s\": %s", r->ns, r->name, r->resource, why);
    }
    json_t *out = tls_secret(r->resource, &cert, &key);
    sval_free(&cert);
    sval_free(&key);
    *oom = out == NULL;
    return out;
}

/* GetCaCert: the Secret <name>-cacert, else <name>; keys cacert, then ca.crt. */
static json_t *ca_cert(const wf_store *s, const sref *r, int64_t now_s, const wf_sds_report *rep,
                       bool *oom)
{
    char err[1024] = "", base[254];
    const wf_resource *sec = wf_store_find(s, WF_KIND_SECRET, r->ns, r->name);
    snprintf(base, sizeof base, "%.*s", (int)(strlen(r->name) - (sizeof WF_SDS_CA_SUFFIX - 1)),
             r->name);
    if (!sec)
        sec = wf_store_find(s, WF_KIND_SECRET, r->ns, base);
    sval ca = {0}, crl = {0}, none = {0};
    int got = 0;
    if (!sec)
        snprintf(err, sizeof err, "secret %s/%s not found", r->ns, base);
    else if ((got = pick(sec, "cacert", NULL, &ca, &none)) == 1)
        got = sval_get(sec, "crl", &crl) == 0 ? 1 : -1;
    else if (got == 0 && (got = pick(sec, "ca.crt", NULL, &ca, &none)) == 1)
        got = sval_get(sec, "ca.crl", &crl) == 0 ? 1 : -1;
    else if (got == 0) {
        char keys[256];
        keys_message(sec, keys, sizeof keys);
        if (has_key(sec, "cacert"))
            snprintf(err, sizeof err, "found key \"cacert\", but it was empty");
        else if (has_key(sec, "ca.crt"))
            snprintf(err, sizeof err, "found key \"ca.crt\", but it was empty");
        else
            snprintf(err, sizeof err,
                     "found secret, but didn't have expected keys cacert or ca.crt; found: %s",
                     keys);
    }
    if (got < 0) {
        sval_free(&ca);
        sval_free(&crl);
        *oom = true;
        return NULL;
    }
    if (err[0]) {
        count(rep);
        warn(rep, "failed to fetch ca certificate for %s: %s", r->resource, err);
        return NULL;
    }
    const char *why = cert_problem(&ca, now_s);
    if (why) {
        count(rep);
        warn(rep, "invalid certificates: %s/%s \"%s\": %s", r->ns, r->name, r->resource, why);
    }
    json_t *out = ca_secret(r->resource, &ca, &crl);
    sval_free(&ca);
    sval_free(&crl);
    *oom = out == NULL;
    return out;
}

/* filterAuthorizedResources: one line for every denied name (at most 3 shown). */
static void report_denied(const wf_sds_report *rep, const char *proxy_id, const char **denied,
                          size_t n)
{
    if (n == 0)
        return;
    wf_strbuf b = WF_STRBUF_INIT;
    size_t shown = n < 3 ? n : 2; /* atMostNJoin(data, 3) */
    for (size_t i = 0; i < shown; i++)
        wf_strbuf_printf(&b, "%s%s", i ? ", " : "", denied[i]);
    if (n >= 3)
        wf_strbuf_printf(&b, ", and %zu others", n - 2);
    count(rep);
    warn(rep,
         "proxy %s attempted to access unauthorized certificates %s: cross namespace secret "
         "reference requires ReferenceGrant",
         proxy_id ? proxy_id : "", wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
}

json_t *wf_pilot_sds_secrets(const wf_store *s, const char *proxy_id, const char *proxy_ns,
                             const wf_xds_names *names, int64_t now_s, const wf_sds_report *rep)
{
    json_t *out = json_array();
    size_t n = names ? names->n : 0;
    const char **denied = calloc(n ? n : 1, sizeof *denied);
    sref *refs = calloc(n ? n : 1, sizeof *refs);
    bool *ok = calloc(n ? n : 1, sizeof *ok);
    size_t nd = 0;
    if (!out || !denied || !refs || !ok || !s)
        goto fail;
    for (size_t i = 0; i < n; i++) { /* parse and authorize all first, as istiod */
        const char *nm = names->v[i] ? names->v[i] : "";
        if (!parse_name(nm, proxy_ns, &refs[i])) {
            count(rep);
            warn(rep, "error parsing resource name: unknown resource type: %s", nm);
        } else if (!proxy_ns || strcmp(refs[i].ns, proxy_ns) != 0)
            denied[nd++] = refs[i].name;
        else
            ok[i] = true;
    }
    report_denied(rep, proxy_id, denied, nd);
    for (size_t i = 0; i < n; i++) {
        if (!ok[i])
            continue;
        bool oom = false;
        json_t *r = is_ca(refs[i].name) ? ca_cert(s, &refs[i], now_s, rep, &oom)
                                        : key_cert(s, &refs[i], now_s, rep, &oom);
        if (oom || (r && json_array_append_new(out, r) != 0))
            goto fail;
    }
    free(denied);
    free(refs);
    free(ok);
    return out;
fail:
    free(denied);
    free(refs);
    free(ok);
    json_decref(out);
    return NULL;
}
