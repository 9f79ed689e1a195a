/*
 * fuzz_ca_request.c - libFuzzer target for what the CSR service reads from outside
 * (pilot/ca_server.h): the IstioCertificateRequest protobuf (xds/protowire.h), the Bearer
 * token (pilot/ca_token.h) and the CSR PEM (pilot/ca.h wf_ca_sign).
 *
 * Input: byte 0 bit 0 set: the rest is the authorization metadata value, sent with a fixed
 * valid request; clear: the rest is the request, sent with a valid token. Contract checked:
 * the status is one the service documents (OK, UNAUTHENTICATED, INVALID_ARGUMENT, INTERNAL)
 * and every failure has a message; an OK response is a protobuf of only field 1 strings, two
 * of them (leaf, root), the root the CA's; no token but the fixture's is accepted (one of its
 * length, for base64's ignored low bits); the counters add
 * up (csr = success + authentication failures + sign errors + undecodable requests).
 *
 * The CA (a self-signed root) and a valid CSR are made once, at the first input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "pilot/ca_server.h"
#include "xds/grpc_frame.h"
#include "xds/protowire.h"

typedef struct fixture {
    wf_ca_server *srv;
    char auth[4200];
    wf_strbuf good_req;
    uint64_t undecodable;
} fixture;

static char *csr_pem(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509_REQ *r = X509_REQ_new();
    X509_REQ_set_pubkey(r, k);
    X509_REQ_sign(r, k, EVP_sha256());
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509_REQ(b, r);
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = strndup(data, (size_t)n);
    BIO_free(b);
    X509_REQ_free(r);
    EVP_PKEY_free(k);
    return s;
}

static fixture *setup(void)
{
    static fixture f;
    static int ready;
    if (ready)
        return &f;
    wf_ca_token_key key = {{7}};
    char err[256];
    int64_t now = (int64_t)time(NULL);
    wf_ca *ca = NULL;
    f.srv = wf_ca_server_new(&key, NULL);
    if (!f.srv || wf_ca_new_self_signed("cluster.local", now - 60, now + 86400 * 365, &ca, err,
                                        sizeof err) != WF_CA_OK)
        abort();
    wf_ca_server_set_ca(f.srv, ca);
    char *tok = wf_ca_token_mint(&key, "ns", "sa", now, 3600 * 24 * 30, err, sizeof err);
    char *csr = csr_pem();
    if (!tok || !csr)
        abort();
    snprintf(f.auth, sizeof f.auth, "Bearer %s", tok);
    f.good_req = (wf_strbuf)WF_STRBUF_INIT;
    wf_pb_put_bytes(&f.good_req, 1, csr, strlen(csr));
    free(tok);
    free(csr);
    ready = 1;
    return &f;
}

static void check_ok(fixture *f, const wf_strbuf *resp)
{
    wf_pb_reader r;
    wf_pb_field fl;
    size_t n = 0;
    const uint8_t *last = NULL;
    size_t last_len = 0;
    int rc;
    wf_pb_reader_init(&r, (const uint8_t *)resp->data, resp->len);
    while ((rc = wf_pb_next(&r, &fl)) == 1) {
        if (fl.num != 1 || fl.wire != WF_PB_LEN)
            abort();
        last = fl.p;
        last_len = fl.len;
        n++;
    }
    const char *root = wf_ca_root_pem(wf_ca_server_ca(f->srv));
    if (rc != 0 || n != 2 || last_len != strlen(root) || memcmp(last, root, last_len) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fixture *f = setup();
    bool token_mode = data[0] & 1;
    char *auth = NULL;
    const uint8_t *req = (const uint8_t *)f->good_req.data;
    size_t req_len = f->good_req.len;
    if (token_mode) {
        auth = strndup((const char *)data + 1, size - 1);
        if (!auth)
            return 0;
    } else {
        req = data + 1;
        req_len = size - 1;
    }
    wf_strbuf resp = WF_STRBUF_INIT;
    char msg[768] = "";
    int64_t now = (int64_t)time(NULL);
    int st = wf_ca_server_handle(f->srv, token_mode ? auth : f->auth, "fuzz", req, req_len, now,
                                 &resp, msg, sizeof msg);
    switch (st) {
    case WF_GRPC_OK:
        /* the fixed key's token is the only valid one (up to base64's unused low bits, which
         * decoders ignore): anything else that passes is a forgery */
        if (token_mode && strlen(auth) != strlen(f->auth))
            abort();
        check_ok(f, &resp);
        break;
    case WF_GRPC_UNAUTHENTICATED:
    case WF_GRPC_INVALID_ARGUMENT:
    case WF_GRPC_INTERNAL:
        if (!msg[0])
            abort();
        if (strstr(msg, "grpc: error unmarshalling request"))
            f->undecodable++;
        break;
    default:
        abort();
    }
    const wf_ca_metrics *m = wf_ca_server_metrics(f->srv);
    uint64_t errs = 0;
    for (size_t i = 0; i < sizeof m->sign_err / sizeof m->sign_err[0]; i++)
        errs += m->sign_err[i];
    if (m->csr != m->success + m->authn_fail + errs + f->undecodable)
        abort();
    wf_strbuf_free(&resp);
    free(auth);
    return 0;
}
