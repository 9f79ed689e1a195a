/*
 * ca_dir.c - the CA directory: load the bundle kept there (istiod's file format or the
 * kubernetes.io/tls layout, as detectSigningCABundle chooses), or create the self-signed root
 * once and keep it. See ca.h.
 */
#include "pilot/ca_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "core/log.h"
#include "core/timefmt.h"

enum { F_CERT, F_KEY, F_ROOT, F_CHAIN, F_N };

static const char *const istiod_names[F_N] = {"ca-cert.pem", "ca-key.pem", "root-cert.pem",
                                              "cert-chain.pem"};
/* kubernetes.io/tls: tls.crt is both the signing cert and the chain */
static const char *const tls_names[F_N] = {"tls.crt", "tls.key", "ca.crt", "tls.crt"};

typedef struct file_text {
    char *data;
    size_t len;
} file_text;

static bool exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* Reads dir/name (at most WF_CA_MAX_PEM bytes). 0 or -1 with err. */
static int read_text(const char *dir, const char *name, file_text *out, char *err, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    out->data = malloc(WF_CA_MAX_PEM + 1);
    out->len = out->data ? fread(out->data, 1, WF_CA_MAX_PEM + 1, f) : 0;
    bool bad = !out->data || ferror(f) || out->len > WF_CA_MAX_PEM;
    fclose(f);
    if (bad) {
        snprintf(err, cap, "cannot read %s: %s", path,
                 out->data ? "too large or unreadable" : "out of memory");
        free(out->data);
        out->data = NULL;
        return -1;
    }
    out->data[out->len] = '\0';
    return 0;
}

/* Writes dir/name with mode through a temporary file and a rename. 0 or -1 with err. */
static int write_text(const char *dir, const char *name, const char *text, mode_t mode, char *err,
                      size_t cap)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    size_t len = strlen(text);
    bool ok =
        fd >= 0 && fchmod(fd, mode) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        snprintf(err, cap, "cannot write %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int wf_ca_make_dir(const char *dir, char *err, size_t cap)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) {
        snprintf(err, cap, "bad CA directory \"%s\"", dir);
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            snprintf(err, cap, "cannot create %s: %s", path, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int load_files(const char *dir, const char *const names[F_N], wf_ca **out, char *err,
                      size_t cap)
{
    file_text t[F_N] = {{0}};
    int rc = WF_CA_E_CONFIG;
    for (int i = 0; i < F_N; i++)
        if (read_text(dir, names[i], &t[i], err, cap) != 0)
            goto done;
    wf_ca_bundle b = {.ca_cert = t[F_CERT].data,
                      .ca_cert_len = t[F_CERT].len,
                      .ca_key = t[F_KEY].data,
                      .ca_key_len = t[F_KEY].len,
                      .root_cert = t[F_ROOT].data,
                      .root_cert_len = t[F_ROOT].len,
                      .cert_chain = t[F_CHAIN].data,
                      .cert_chain_len = t[F_CHAIN].len};
    rc = wf_ca_from_bundle(&b, dir, out, err, cap);
done:
    for (int i = 0; i < F_N; i++) {
        if (t[i].data)
            OPENSSL_cleanse(t[i].data, t[i].len);
        free(t[i].data);
    }
    return rc;
}

/* Creates the self-signed root and writes it as istio-ca-secret's keys. */
static int create_root(const char *dir, const char *td, int64_t now, char *err, size_t cap)
{
    char *cert, *key;
    WF_LOG(WF_LC_secret, WF_LOG_INFO, "CASecret istio-ca-secret not found, will create one");
    if (wf_ca_root_pems(td, now - WF_CA_CLOCK_SKEW_S, now + WF_CA_ROOT_TTL_S, &cert, &key, err,
                        cap) != 0)
        return -1;
    int rc = write_text(dir, "cert-chain.pem", "", 0644, err, cap) ||
             write_text(dir, "root-cert.pem", cert, 0644, err, cap) ||
             write_text(dir, "ca-key.pem", key, 0600, err, cap) ||
             write_text(dir, "ca-cert.pem", cert, 0644, err, cap);
    OPENSSL_cleanse(key, strlen(key));
    free(key);
    free(cert);
    if (rc == 0)
        WF_LOG(WF_LC_secret, WF_LOG_INFO,
               "self-signed root for trust domain %s written to %s (ca-cert.pem, ca-key.pem, "
               "root-cert.pem, cert-chain.pem)",
               td, dir);
    return rc ? -1 : 0;
}

/* Which layout dir holds: tls_names, istiod_names, NULL for none (create), or sets err for a
 * partial bundle and returns NULL with *partial. */
static const char *const *detect(const char *dir, bool *partial, char *err, size_t cap)
{
    *partial = false;
    if (exists(dir, "tls.crt")) {
        if (exists(dir, "tls.key") && exists(dir, "ca.crt")) {
            WF_LOG(WF_LC_secret, WF_LOG_INFO,
                   "Using kubernetes.io/tls secret type for signing ca files");
            return tls_names;
        }
    } else {
        int have = 0;
        for (int i = 0; i < F_N; i++)
            have += exists(dir, istiod_names[i]);
        if (have == 0)
            return NULL;
        if (have == F_N) {
            WF_LOG(WF_LC_secret, WF_LOG_INFO, "Using istiod file format for signing ca files");
            return istiod_names;
        }
    }
    *partial = true;
    snprintf(err, cap, "incomplete signing CA bundle detected at %s", dir);
    WF_LOG(WF_LC_secret, WF_LOG_ERROR, "%s", err);
    return NULL;
}

/* istiod's SelfSignedCARootCertRotator: a self-signed root of the directory (istiod layout,
 * empty cert-chain.pem) with less than WF_CA_ROOT_GRACE_PCT % of its life left is re-issued
 * with the same key and subject for another WF_CA_ROOT_TTL_S, and written back. 1 rotated, 0
 * not needed, -1 error (err). */
static int rotate_root(const char *dir, const wf_ca *ca, int64_t now, char *err, size_t cap)
{
    int64_t nb = wf_ca_asn1_time(X509_get0_notBefore(ca->root)), na = ca->root_not_after;
    if (!ca->self_signed || ca->chain_pem[0] ||
        (na - now) * 100 >= (na - nb) * WF_CA_ROOT_GRACE_PCT)
        return 0;
    char *pem = wf_ca_reissue_root(ca, now - WF_CA_CLOCK_SKEW_S, now + WF_CA_ROOT_TTL_S);
    if (!pem) {
        wf_ca_ssl_err(err, cap, "cannot re-issue the self-signed root");
        return -1;
    }
    int rc = write_text(dir, "root-cert.pem", pem, 0644, err, cap) ||
             write_text(dir, "ca-cert.pem", pem, 0644, err, cap);
    free(pem);
    if (rc)
        return -1;
    char was[40], until[40];
    wf_timestamp_s(na, was, sizeof was);
    wf_timestamp_s(now + WF_CA_ROOT_TTL_S, until, sizeof until);
    WF_LOG(WF_LC_secret, WF_LOG_INFO,
           "self-signed root in %s expires at %s (less than %d%% of its life left): re-issued "
           "with the same key until %s",
           dir, was, WF_CA_ROOT_GRACE_PCT, until);
    return 1;
}

int wf_ca_load_dir(const char *dir, const char *trust_domain, int64_t now_s, wf_ca **out, char *err,
                   size_t cap)
{
    char lock[4096];
    if (wf_ca_make_dir(dir, err, cap) != 0)
        return WF_CA_E_CONFIG;
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        snprintf(err, cap, "cannot lock %s: %s", lock, strerror(errno));
        if (fd >= 0)
            close(fd);
        return WF_CA_E_CONFIG;
    }
    bool partial;
    const char *const *names = detect(dir, &partial, err, cap);
    int rc = WF_CA_E_CONFIG;
    if (!names && !partial && create_root(dir, trust_domain, now_s, err, cap) == 0)
        names = istiod_names;
    if (names)
        rc = load_files(dir, names, out, err, cap);
    if (rc == WF_CA_OK && names == istiod_names) {
        int rot = rotate_root(dir, *out, now_s, err, cap);
        if (rot != 0) {
            wf_ca_free(*out);
            *out = NULL;
            rc = rot < 0 ? WF_CA_E_CONFIG : load_files(dir, names, out, err, cap);
        }
    }
    close(fd); /* releases the lock */
    return rc;
}
