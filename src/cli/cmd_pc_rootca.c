/*
 * cmd_pc_rootca.c - `proxy-config rootca-compare POD1 POD2` (alias rc), istioctl's
 * (istioctl/pkg/proxyconfig/proxyconfig.go rootCACompareConfigCmd; reference security.md §2.5,
 * istioctl-troubleshooting.md): each proxy's ROOTCA is the trusted CA bundle of the
 * dynamic_active_secrets entry named "ROOTCA" in its SecretsConfigDump
 * (PrintPodRootCAFromDynamicSecretDump); the pods are "connected" when any certificate of one
 * bundle equals any certificate of the other (checkRootCACertMatchExist, x509 Equal: the same
 * DER). istioctl's texts:
 *   "Both [p1.ns1] and [p2.ns2] have the identical ROOTCA, theoretically the connectivity
 *    between them is available"                                       (stdout, exit 0)
 *   "Both [...] and [...] have the non identical ROOTCA, theoretically the connectivity
 *    between them is unavailable"                                     (an error, exit 1)
 *   "cannot find ROOTCA from secret", "failed to parse certificates: <data>",
 *   "failed to parse certificate: <why>", "sidecar doesn't support secrets: <why>" (a
 *   malformed SecretsConfigDump; a missing one, weft-proxy's while it has no secrets, is no
 *   ROOTCA).
 * weft adds which pod lacks its ROOTCA and why (still WARMING: not supplied by SDS yet), and
 * -o json (istioctl prints only the sentence): {"pods": [..], "identical": bool,
 * "rootCA": [{"pod", "serialNumbers": [..]}], "sharedSerialNumbers": [..]}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cli/cmd_pc.h"
#include "core/base64.h"

static bool has_secret(const wf_envoy_dump *d, const json_t *sec, size_t index, const char *list,
                       const char *name, json_t **found, wf_strbuf *err)
{
    json_t *items = json_array();
    if (!items || wf_envoy_dump_items(d, sec, index, list, NULL, items, err) != 0) {
        json_decref(items);
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(items, i, e)
    {
        const json_t *s = json_object_get(e, "secret");
        if (strcmp(wf_jstr_or(e, "name", wf_jstr_or(s, "name", "")), name) == 0) {
            *found = json_incref(e);
            break;
        }
    }
    json_decref(items);
    return *found != NULL;
}

int pc_rootca_pem(const wf_envoy_dump *d, const char *id, char **pem, wf_strbuf *err)
{
    *pem = NULL;
    size_t index = 0;
    wf_strbuf e2 = WF_STRBUF_INIT;
    json_t *sec = wf_envoy_dump_section(d, WF_DUMP_T_SECRETS, &index, &e2);
    /* weft-proxy dumps no SecretsConfigDump while it has no secrets (pc secret reads that as
     * the empty section, cmd_pc_secret.c): no ROOTCA then; a malformed one is istioctl's error */
    bool missing = !sec && !strstr(wf_strbuf_cstr(&e2), "expected");
    if (!sec && !missing) {
        wf_strbuf_printf(err, "%s: sidecar doesn't support secrets: %s", id, wf_strbuf_cstr(&e2));
        wf_strbuf_free(&e2);
        return -1;
    }
    if (missing)
        wf_strbuf_reset(&e2);
    json_t *entry = NULL;
    if (missing || !has_secret(d, sec, index, "dynamic_active_secrets", "ROOTCA", &entry, &e2)) {
        if (e2.len) {
            wf_strbuf_printf(err, "%s: %s", id, wf_strbuf_cstr(&e2));
        } else if (!missing &&
                   has_secret(d, sec, index, "dynamic_warming_secrets", "ROOTCA", &entry, &e2)) {
            wf_strbuf_printf(err,
                             "%s: cannot find ROOTCA from secret: it is still WARMING (not "
                             "supplied by SDS yet: check `weftctl proxy-config secret %s` and "
                             "the proxy's log for the CA request)",
                             id, id);
        } else {
            wf_strbuf_printf(err,
                             "%s: cannot find ROOTCA from secret (the proxy has no active ROOTCA: "
                             "its configuration uses no mesh TLS, or it is not a mesh proxy)",
                             id);
        }
        json_decref(entry);
        wf_strbuf_free(&e2);
        return -1;
    }
    wf_strbuf_free(&e2);
    const char *b64 = json_string_value(
        wf_jpath(json_object_get(entry, "secret"), "validation_context.trusted_ca.inline_bytes"));
    int rc = -1;
    if (!b64) {
        wf_strbuf_printf(err,
                         "%s: can not dump ROOTCA from secret: can not retrieve trusted CA "
                         "from secret ROOTCA",
                         id);
    } else {
        size_t len = strlen(b64), n = 0;
        unsigned char *raw = malloc(3 * (len / 4 + 1) + 1);
        if (!raw)
            wf_strbuf_puts(err, "out of memory");
        else if (!wf_base64_decode(b64, len, WF_B64_PAD_OPTIONAL, raw, &n))
            wf_strbuf_printf(err, "%s: can not dump ROOTCA from secret: inline_bytes is not base64",
                             id);
        else {
            raw[n] = '\0';
            *pem = (char *)raw;
            raw = NULL;
            rc = 0;
        }
        free(raw);
    }
    json_decref(entry);
    return rc;
}

/* The certificates of PEM text (Go's pem.Decode loop: every PEM block must be a
 * certificate). NULL with err as istioctl's parsePEMCerts. */
static STACK_OF(X509) * parse_pem_certs(const char *pem, wf_strbuf *err)
{
    STACK_OF(X509) *certs = sk_X509_new_null();
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (!certs || !bio) {
        wf_strbuf_puts(err, "out of memory");
        goto fail;
    }
    for (;;) {
        char *name = NULL, *header = NULL;
        unsigned char *data = NULL;
        long len = 0;
        if (PEM_read_bio(bio, &name, &header, &data, &len) != 1)
            break;
        const unsigned char *p = data;
        X509 *x = d2i_X509(NULL, &p, len);
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_free(data);
        if (!x) {
            wf_strbuf_puts(err, "failed to parse certificate: not an X.509 certificate");
            goto fail;
        }
        if (!sk_X509_push(certs, x)) {
            X509_free(x);
            wf_strbuf_puts(err, "out of memory");
            goto fail;
        }
    }
    BIO_free(bio);
    if (sk_X509_num(certs) == 0) {
        wf_strbuf_printf(err, "failed to parse certificates: %s", pem);
        sk_X509_pop_free(certs, X509_free);
        return NULL;
    }
    return certs;
fail:
    BIO_free(bio);
    sk_X509_pop_free(certs, X509_free);
    return NULL;
}

static json_t *serial_json(X509 *x)
{
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    json_t *s = NULL;
    if (hex) {
        for (char *p = hex; *p; p++)
            if (*p >= 'A' && *p <= 'F')
                *p = (char)(*p - 'A' + 'a');
        s = json_string(hex);
    }
    OPENSSL_free(hex);
    BN_free(bn);
    return s ? s : json_null();
}

static json_t *serials_json(STACK_OF(X509) * certs)
{
    json_t *a = json_array();
    for (int i = 0; a && i < sk_X509_num(certs); i++)
        json_array_append_new(a, serial_json(sk_X509_value(certs, i)));
    return a;
}

int pc_rootca_compare(const char *const ids[2], const char *const pems[2], const pc_opts *o,
                      bool *identical, wf_strbuf *out, wf_strbuf *err)
{
    STACK_OF(X509) * c[2] = {NULL, NULL};
    *identical = false;
    for (int i = 0; i < 2; i++)
        if (!(c[i] = parse_pem_certs(pems[i], err))) {
            sk_X509_pop_free(c[0], X509_free);
            return -1;
        }
    json_t *shared = json_array();
    for (int i = 0; i < sk_X509_num(c[0]); i++)
        for (int j = 0; j < sk_X509_num(c[1]); j++)
            if (X509_cmp(sk_X509_value(c[0], i), sk_X509_value(c[1], j)) == 0) {
                *identical = true;
                json_array_append_new(shared, serial_json(sk_X509_value(c[0], i)));
            }
    int rc = 0;
    if (o->out == PC_OUT_SHORT && *identical) {
        wf_strbuf_printf(out,
                         "Both [%s] and [%s] have the identical ROOTCA, theoretically the "
                         "connectivity between them is available\n",
                         ids[0], ids[1]);
    } else if (o->out != PC_OUT_SHORT) {
        json_t *doc =
            json_pack("{s:[s,s],s:b,s:[{s:s,s:o},{s:s,s:o}],s:O}", "pods", ids[0], ids[1],
                      "identical", *identical, "rootCA", "pod", ids[0], "serialNumbers",
                      serials_json(c[0]), "pod", ids[1], "serialNumbers", serials_json(c[1]),
                      "sharedSerialNumbers", shared ? shared : json_null());
        if (!doc) {
            wf_strbuf_puts(err, "out of memory");
            rc = -1;
        } else {
            if (o->out == PC_OUT_YAML)
                pc_yaml_write(out, doc);
            else {
                pc_json_write(out, doc);
                wf_strbuf_putc(out, '\n');
            }
            json_decref(doc);
        }
    }
    if (rc == 0 && !*identical)
        wf_strbuf_printf(err,
                         "Both [%s] and [%s] have the non identical ROOTCA, theoretically the "
                         "connectivity between them is unavailable",
                         ids[0], ids[1]);
    json_decref(shared);
    sk_X509_pop_free(c[0], X509_free);
    sk_X509_pop_free(c[1], X509_free);
    return rc;
}
