/*
 * cmd_pc_secret.c - `proxy-config secret` (reference istioctl-troubleshooting.md §2.7: the
 * SDS table with X.509 details read through libcrypto) and `proxy-config ecds` (§2.8).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "cli/cmd_pc.h"
#include "cli/tabwriter.h"
#include "core/base64.h"

/* ---- certificates ------------------------------------------------------------------------------
 */

typedef struct cert_info {
    bool ok;
    bool ca, valid;
    char serial[130];
    char not_after[32], not_before[32];
    char trust_domain[256]; /* host of a spiffe:// URI SAN, "" when none */
} cert_info;

static void rfc3339(const ASN1_TIME *t, char *buf, size_t size, time_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) {
        buf[0] = '\0';
        *out = 0;
        return;
    }
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
    *out = timegm(&tm);
}

static void serial_hex(X509 *x, char *buf, size_t size)
{
    buf[0] = '\0';
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    if (hex) {
        for (char *p = hex; *p; p++)
            if (*p >= 'A' && *p <= 'F')
                *p = (char)(*p - 'A' + 'a');
        const char *h = hex;
        while (h[0] == '0' && h[1]) /* BN_bn2hex pads to whole bytes */
            h++;
        size_t n = strlen(h);
        snprintf(buf, size, "%.*s%s", n < 32 ? (int)(32 - n) : 0,
                 "00000000000000000000000000000000", h);
    }
    OPENSSL_free(hex);
    BN_free(bn);
}

static void spiffe_domain(X509 *x, char *buf, size_t size)
{
    buf[0] = '\0';
    GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && !buf[0]; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
        if (g->type != GEN_URI)
            continue;
        const char *uri = (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
        int len = ASN1_STRING_length(g->d.uniformResourceIdentifier);
        if (len > 9 && strncmp(uri, "spiffe://", 9) == 0) {
            const char *host = uri + 9;
            const char *end = memchr(host, '/', (size_t)(len - 9));
            int hl = end ? (int)(end - host) : len - 9;
            snprintf(buf, size, "%.*s", hl, host);
        }
    }
    GENERAL_NAMES_free(sans);
}

/* Parses the first certificate of base64 text holding PEM (or DER). */
static void parse_cert(const char *b64, time_t now, cert_info *ci)
{
    memset(ci, 0, sizeof *ci);
    size_t len = strlen(b64), n = 0;
    unsigned char *der = malloc(3 * (len / 4 + 1) + 1);
    if (!der)
        return;
    if (!wf_base64_decode(b64, len, WF_B64_PAD_OPTIONAL, der, &n)) {
        free(der);
        return;
    }
    BIO *bio = BIO_new_mem_buf(der, (int)n);
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    if (!x) {
        const unsigned char *p = der;
        x = d2i_X509(NULL, &p, (long)n);
    }
    BIO_free(bio);
    free(der);
    if (!x)
        return;
    ci->ok = true;
    ci->ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
    time_t nb, na;
    rfc3339(X509_get0_notBefore(x), ci->not_before, sizeof ci->not_before, &nb);
    rfc3339(X509_get0_notAfter(x), ci->not_after, sizeof ci->not_after, &na);
    ci->valid = nb < now && now < na;
    serial_hex(x, ci->serial, sizeof ci->serial);
    spiffe_domain(x, ci->trust_domain, sizeof ci->trust_domain);
    X509_free(x);
}

/* ---- rows --------------------------------------------------------------------------------------
 */

typedef struct secret_row {
    char name[512];
    const char *status;
    cert_info cert;
    char trust_domain[256];
} secret_row;

typedef struct row_list {
    secret_row *v;
    size_t n, cap;
} row_list;

static secret_row *add_row(row_list *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        secret_row *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = cap;
    }
    secret_row *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static int secret_rows(const json_t *entry, const char *status, const pc_opts *o, row_list *rows)
{
    const json_t *s = json_object_get(entry, "secret");
    const char *name = wf_jstr_or(entry, "name", wf_jstr_or(s, "name", ""));
    const char *b64 =
        json_string_value(wf_jpath(s, "tls_certificate.certificate_chain.inline_bytes"));
    if (!b64)
        b64 = json_string_value(wf_jpath(s, "validation_context.trusted_ca.inline_bytes"));
    const json_t *tds =
        wf_jpath(s, "validation_context.custom_validator_config.typed_config.trust_domains");
    if (!b64 && json_array_size(tds) > 0) {
        size_t i;
        json_t *td;
        json_array_foreach((json_t *)tds, i, td)
        {
            secret_row *r = add_row(rows);
            if (!r)
                return -1;
            snprintf(r->name, sizeof r->name, "%s", name);
            r->status = status;
            const char *tb = json_string_value(wf_jpath(td, "trust_bundle.inline_bytes"));
            if (tb)
                parse_cert(tb, o->now, &r->cert);
            snprintf(r->trust_domain, sizeof r->trust_domain, "%s", wf_jstr_or(td, "name", ""));
        }
        return 0;
    }
    secret_row *r = add_row(rows);
    if (!r)
        return -1;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->status = status;
    if (b64)
        parse_cert(b64, o->now, &r->cert);
    snprintf(r->trust_domain, sizeof r->trust_domain, "%s", r->cert.trust_domain);
    return 0;
}

static int secrets_table(const row_list *rows, const pc_opts *o, wf_strbuf *out)
{
    bool domains = rows->n > 0;
    for (size_t i = 0; i < rows->n; i++)
        if (!rows->v[i].trust_domain[0])
            domains = false;
    wf_tw tw;
    wf_tw_init(&tw, 5);
    wf_tw_printf(
        &tw, "RESOURCE NAME\tTYPE\tSTATUS\tVALID CERT\tSERIAL NUMBER\tNOT AFTER\tNOT BEFORE%s\n",
        domains ? "\tTRUST DOMAIN" : "");
    for (size_t i = 0; i < rows->n; i++) {
        const secret_row *r = &rows->v[i];
        const cert_info *c = &r->cert;
        wf_tw_printf(&tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s", o->all ? "secret/" : "", r->name,
                     c->ok ? (c->ca ? "CA" : "Cert Chain") : "", r->status,
                     c->valid ? "true" : "false", c->serial, c->not_after, c->not_before);
        if (domains)
            wf_tw_printf(&tw, "\t%s", r->trust_domain);
        wf_tw_puts(&tw, "\n");
    }
    int rc = wf_tw_flush(&tw, NULL, out);
    wf_tw_free(&tw);
    return rc;
}

int pc_secrets(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    size_t index = 0;
    json_t *sec = wf_envoy_dump_section(d, WF_DUMP_T_SECRETS, &index, err);
    if (!sec && !strstr(wf_strbuf_cstr(err), "expected")) {
        /* Envoy always dumps a SecretsConfigDump (empty without secrets), for which istioctl
         * prints "No active or warming secrets found." (-o json: {}). weft-proxy before SDS
         * dumps none: read that as the empty section, not as istioctl's "config dump has no
         * configuration type" error. A malformed section stays an error. */
        wf_strbuf_reset(err);
        if (o->out == PC_OUT_SHORT) {
            wf_strbuf_puts(out, "No active or warming secrets found.\n");
            return 0;
        }
        json_t *empty = json_pack("{s:s}", "@type", WF_DUMP_T_SECRETS);
        int rc = empty ? pc_print_raw(o, empty, true, out, err) : -1;
        json_decref(empty);
        return rc;
    }
    if (!sec)
        return -1;
    if (o->out != PC_OUT_SHORT)
        return pc_print_raw(o, sec, true, out, err);
    static const char *const lists[] = {"dynamic_warming_secrets", "dynamic_active_secrets"};
    static const char *const status[] = {"WARMING", "ACTIVE"};
    row_list rows = {0};
    int rc = 0;
    size_t total = 0;
    for (size_t l = 0; l < 2 && rc == 0; l++) {
        json_t *items = json_array();
        rc = items ? wf_envoy_dump_items(d, sec, index, lists[l], NULL, items, err) : -1;
        total += json_array_size(items);
        size_t i;
        json_t *e;
        json_array_foreach(items, i, e) if (rc == 0) rc = secret_rows(e, status[l], o, &rows);
        json_decref(items);
    }
    if (rc == 0 && total == 0)
        wf_strbuf_puts(out, "No active or warming secrets found.\n");
    else if (rc == 0)
        rc = secrets_table(&rows, o, out);
    if (rc != 0 && !err->len)
        wf_strbuf_puts(err, "out of memory");
    free(rows.v);
    return rc;
}

/* ---- pc ecds (§2.8) ----------------------------------------------------------------------------
 */

static const char *ecds_type(const json_t *entry)
{
    const char *t = json_string_value(wf_jpath(entry, "ecds_filter.typed_config.@type"));
    if (!t)
        return "";
    static const char prefix[] = "type.googleapis.com/";
    return strncmp(t, prefix, sizeof prefix - 1) == 0 ? t + sizeof prefix - 1 : t;
}

static int cmp_ecds(const json_t *a, const json_t *b)
{
    /* (type URL, name); the prefix is the same for all, so comparing the stripped type is
     * the same order except for URLs without the prefix */
    const char *ta = json_string_value(wf_jpath(a, "ecds_filter.typed_config.@type"));
    const char *tb = json_string_value(wf_jpath(b, "ecds_filter.typed_config.@type"));
    int c = strcmp(ta ? ta : "", tb ? tb : "");
    if (c)
        return c;
    return strcmp(wf_jstr_or(json_object_get(a, "ecds_filter"), "name", ""),
                  wf_jstr_or(json_object_get(b, "ecds_filter"), "name", ""));
}

/* All ecds_filters entries of every EcdsConfigDump section, as a new array. */
static json_t *ecds_entries(const wf_envoy_dump *d, wf_strbuf *err)
{
    json_t *out = json_array();
    json_t *configs = json_object_get(d->root, "configs");
    size_t i;
    json_t *c;
    if (!out)
        return NULL;
    json_array_foreach(configs, i, c)
    {
        const char *t = wf_jstr(c, "@type");
        if (t && strcmp(t, WF_DUMP_T_ECDS) == 0 &&
            wf_envoy_dump_items(d, c, i, "ecds_filters", NULL, out, err) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

int pc_ecds(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err)
{
    json_t *all = ecds_entries(d, err);
    if (!all)
        return -1;
    int rc = -1;
    if (o->out != PC_OUT_SHORT) {
        json_t *dump = json_pack("{s:O}", "ecds_filters", all);
        rc = dump ? pc_print_raw(o, dump, false, out, err) : -1;
        json_decref(dump);
        json_decref(all);
        return rc;
    }
    size_t n = json_array_size(all);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    if (v) {
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(all, i);
        pc_stable_sort(v, n, cmp_ecds);
        wf_tw tw;
        wf_tw_init(&tw, 5);
        wf_tw_puts(&tw, "ECDS NAME\tTYPE\n");
        for (size_t i = 0; i < n; i++)
            wf_tw_printf(&tw, "%s\t%s\n",
                         wf_jstr_or(json_object_get(v[i], "ecds_filter"), "name", ""),
                         ecds_type(v[i]));
        rc = wf_tw_flush(&tw, NULL, out);
        wf_tw_free(&tw);
    }
    if (rc != 0 && !err->len)
        wf_strbuf_puts(err, "out of memory");
    free(v);
    json_decref(all);
    return rc;
}
