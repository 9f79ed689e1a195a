/*
 * test_pilot_sds.c - pilot/sds: credentialName Secrets as SDS resources, as istiod's SecretGen
 * serves them (security.md §2.1, §2.4): names, layouts, the -cacert lookup, the errors logged
 * and counted, the namespace check, expired certificates still sent, and wf_pilot_generate's
 * SDS type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/base64.h"
#include "core/strbuf.h"
#include "harness.h"
#include "pilot/ca.h"
#include "pilot/generate.h"
#include "pilot/sds.h"

#define NOW ((int64_t)1767225600) /* 2026-01-01 */

/* A self-signed certificate PEM valid [nb, na). */
static char *cert_pem(int64_t nb, int64_t na)
{
    wf_ca *ca = NULL;
    char err[256];
    assert_int_equal(wf_ca_new_self_signed("cluster.local", nb, na, &ca, err, sizeof err), 0);
    char *pem = strdup(wf_ca_root_pem(ca));
    wf_ca_free(ca);
    assert_non_null(pem);
    return pem;
}

static char *b64(const char *s)
{
    size_t cap = 4 * ((strlen(s) + 2) / 3) + 1;
    char *o = malloc(cap);
    assert_non_null(o);
    wf_base64_encode((const unsigned char *)s, strlen(s), o, cap);
    return o;
}

typedef struct logcap {
    wf_strbuf lines;
    uint64_t errors;
} logcap;

static void on_warn(void *ud, const char *line)
{
    logcap *c = ud;
    wf_strbuf_printf(&c->lines, "%s\n", line);
}

static json_t *serve(const wf_store *s, const char *ns, const char *const *names, logcap *c)
{
    wf_xds_names n = {0};
    while (names[n.n])
        n.n++;
    n.v = (char **)names;
    wf_sds_report rep = {.warn = on_warn, .ud = c, .errors = &c->errors};
    json_t *out = wf_pilot_sds_secrets(s, "gw-1.istio-system", ns, &n, NOW, &rep);
    assert_non_null(out);
    return out;
}

/* The decoded inline_bytes at path. */
static char *bytes_at(json_t *v, const char *path)
{
    const char *t = json_string_value(wf_test_json_at(v, path));
    assert_non_null(t);
    unsigned char *o = malloc(strlen(t) + 1);
    size_t n;
    assert_non_null(o);
    assert_true(wf_base64_decode(t, strlen(t), 0, o, &n));
    o[n] = '\0';
    return (char *)o;
}

static wf_store *store_of(const char *yaml)
{
    wf_store *s = wf_test_load_store(NULL, yaml, "istio-system");
    assert_non_null(s);
    return s;
}

/* kubernetes.io/tls layout (data, base64), and kubernetes://<ns>/<name> for the own ns. */
static void test_tls_layout(void **state)
{
    (void)state;
    char *pem = cert_pem(NOW - 3600, NOW + 86400), *c64 = b64(pem), *k64 = b64("KEY");
    char yaml[8192];
    snprintf(yaml, sizeof yaml,
             "apiVersion: v1\nkind: Secret\nmetadata: {name: catalog-cred, namespace: "
             "istio-system}\ntype: kubernetes.io/tls\ndata: {tls.crt: %s, tls.key: %s}\n",
             c64, k64);
    wf_store *s = store_of(yaml);
    logcap c = {WF_STRBUF_INIT, 0};
    const char *names[] = {"kubernetes://catalog-cred", "kubernetes://istio-system/catalog-cred",
                           NULL};
    json_t *out = serve(s, "istio-system", names, &c);
    assert_int_equal(json_array_size(out), 2);
    json_t *r = json_array_get(out, 0);
    wf_test_expect_str(r, "@type", WF_XDS_TYPE_SECRET);
    wf_test_expect_str(r, "name", "kubernetes://catalog-cred");
    char *chain = bytes_at(r, "tls_certificate.certificate_chain.inline_bytes");
    char *key = bytes_at(r, "tls_certificate.private_key.inline_bytes");
    assert_string_equal(chain, pem);
    assert_string_equal(key, "KEY");
    wf_test_expect_str(json_array_get(out, 1), "name", "kubernetes://istio-system/catalog-cred");
    assert_int_equal(c.errors, 0);
    assert_string_equal(wf_strbuf_cstr(&c.lines), "");
    free(chain);
    free(key);
    free(pem);
    free(c64);
    free(k64);
    json_decref(out);
    wf_strbuf_free(&c.lines);
    wf_store_free(s);
}

/* cert/key wins over tls.crt/tls.key; stringData is read; cacert wins over ca.crt. */
static void test_generic_layout_and_ca(void **state)
{
    (void)state;
    char *pem = cert_pem(NOW - 3600, NOW + 86400);
    wf_strbuf y = WF_STRBUF_INIT;
    wf_strbuf_puts(&y, "apiVersion: v1\nkind: Secret\nmetadata: {name: cred, namespace: "
                       "istio-system}\nstringData:\n  cert: |\n");
    for (const char *p = pem; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        wf_strbuf_printf(&y, "    %.*s\n", (int)n, p);
        p += n + (nl != NULL);
    }
    wf_strbuf_puts(&y, "  key: GENERIC\n  tls.crt: OTHER\n  tls.key: OTHER\n  cacert: |\n");
    for (const char *p = pem; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        wf_strbuf_printf(&y, "    %.*s\n", (int)n, p);
        p += n + (nl != NULL);
    }
    wf_strbuf_puts(&y, "  ca.crt: NOTTHIS\n");
    wf_store *s = store_of(wf_strbuf_cstr(&y));
    logcap c = {WF_STRBUF_INIT, 0};
    const char *names[] = {"kubernetes://cred", "kubernetes://cred-cacert", NULL};
    json_t *out = serve(s, "istio-system", names, &c);
    assert_int_equal(json_array_size(out), 2);
    char *key = bytes_at(json_array_get(out, 0), "tls_certificate.private_key.inline_bytes");
    assert_string_equal(key, "GENERIC");
    json_t *ca = json_array_get(out, 1);
    wf_test_expect_str(ca, "name", "kubernetes://cred-cacert");
    char *trusted = bytes_at(ca, "validation_context.trusted_ca.inline_bytes");
    assert_string_equal(trusted, pem);
    assert_null(wf_test_json_at(ca, "tls_certificate"));
    assert_int_equal(c.errors, 0);
    free(key);
    free(trusted);
    free(pem);
    json_decref(out);
    wf_strbuf_free(&c.lines);
    wf_strbuf_free(&y);
    wf_store_free(s);
}

/* A separate <name>-cacert Secret is looked up first. */
static void test_separate_cacert_secret(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: v1\nkind: Secret\nmetadata: {name: cred, namespace: "
                       "istio-system}\nstringData: {tls.crt: A, tls.key: B, ca.crt: INLINE}\n"
                       "---\napiVersion: v1\nkind: Secret\nmetadata: {name: cred-cacert, "
                       "namespace: istio-system}\nstringData: {ca.crt: SEPARATE}\n";
    wf_store *s = store_of(yaml);
    logcap c = {WF_STRBUF_INIT, 0};
    const char *names[] = {"kubernetes://cred-cacert", NULL};
    json_t *out = serve(s, "istio-system", names, &c);
    assert_int_equal(json_array_size(out), 1);
    char *trusted = bytes_at(json_array_get(out, 0), "validation_context.trusted_ca.inline_bytes");
    assert_string_equal(trusted, "SEPARATE");
    /* not PEM: still sent, logged and counted (istiod's ValidateCertificate) */
    assert_int_equal(c.errors, 1);
    assert_string_equal(wf_strbuf_cstr(&c.lines),
                        "invalid certificates: istio-system/cred-cacert "
                        "\"kubernetes://cred-cacert\": pem decode failed\n");
    free(trusted);
    json_decref(out);
    wf_strbuf_free(&c.lines);
    wf_store_free(s);
}

/* §2.4 errors: each logged exactly, counted, and the resource omitted. */
static void test_errors(void **state)
{
    (void)state;
    const char *yaml =
        "apiVersion: v1\nkind: Secret\nmetadata: {name: empty, namespace: istio-system}\n"
        "stringData: {cert: '', key: ''}\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: emptytls, namespace: istio-system}\n"
        "stringData: {tls.crt: '', tls.key: ''}\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: wrong, namespace: istio-system}\n"
        "stringData: {foo: a, bar: b, baz: c, qux: d, tls.crt: e}\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: noca, namespace: istio-system}\n"
        "stringData: {tls.crt: a, tls.key: b}\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: emptyca, namespace: istio-system}\n"
        "stringData: {cacert: ''}\n";
    wf_store *s = store_of(yaml);
    logcap c = {WF_STRBUF_INIT, 0};
    const char *names[] = {"kubernetes://missing",     "kubernetes://empty",
                           "kubernetes://emptytls",    "kubernetes://wrong",
                           "kubernetes://noca-cacert", "kubernetes://emptyca-cacert",
                           "kubernetes://gone-cacert", NULL};
    json_t *out = serve(s, "istio-system", names, &c);
    assert_int_equal(json_array_size(out), 0);
    assert_int_equal(c.errors, 7);
    assert_string_equal(
        wf_strbuf_cstr(&c.lines),
        "failed to fetch key and certificate for kubernetes://missing: secret "
        "istio-system/missing not found\n"
        "failed to fetch key and certificate for kubernetes://empty: found keys \"cert\" and "
        "\"key\", but they were empty\n"
        "failed to fetch key and certificate for kubernetes://emptytls: found keys \"tls.crt\" "
        "and \"tls.key\", but they were empty\n"
        "failed to fetch key and certificate for kubernetes://wrong: found secret, but didn't "
        "have expected keys (cert and key) or (tls.crt and tls.key); found: bar, baz, foo, and 2 "
        "more...\n"
        "failed to fetch ca certificate for kubernetes://noca-cacert: found secret, but didn't "
        "have expected keys cacert or ca.crt; found: tls.crt, tls.key\n"
        "failed to fetch ca certificate for kubernetes://emptyca-cacert: found key \"cacert\", "
        "but it was empty\n"
        "failed to fetch ca certificate for kubernetes://gone-cacert: secret istio-system/gone "
        "not found\n");
    json_decref(out);
    wf_strbuf_free(&c.lines);
    wf_store_free(s);
}

/* Other namespaces are denied (one line, counted once), the rest still served; unknown
 * prefixes are refused. */
static void test_namespace_and_names(void **state)
{
    (void)state;
    const char *yaml =
        "apiVersion: v1\nkind: Secret\nmetadata: {name: mine, namespace: istio-system}\n"
        "stringData: {tls.crt: a, tls.key: b}\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: theirs, namespace: other}\n"
        "stringData: {tls.crt: a, tls.key: b}\n";
    wf_store *s = store_of(yaml);
    logcap c = {WF_STRBUF_INIT, 0};
    const char *names[] = {"kubernetes://other/theirs", "kubernetes://x/a",
                           "kubernetes://y/b",          "default",
                           "kubernetes://mine",         NULL};
    json_t *out = serve(s, "istio-system", names, &c);
    assert_int_equal(json_array_size(out), 1);
    wf_test_expect_str(json_array_get(out, 0), "name", "kubernetes://mine");
    assert_int_equal(c.errors, 3); /* unknown type, denied, "a" not PEM */
    assert_string_equal(wf_strbuf_cstr(&c.lines),
                        "error parsing resource name: unknown resource type: default\n"
                        "proxy gw-1.istio-system attempted to access unauthorized certificates "
                        "theirs, a, and 1 others: cross namespace secret reference requires "
                        "ReferenceGrant\n"
                        "invalid certificates: istio-system/mine \"kubernetes://mine\": pem "
                        "decode failed\n");
    json_decref(out);
    wf_strbuf_free(&c.lines);
    wf_store_free(s);
}

/* Expired and not-yet-valid certificates are sent with the warning. */
static void test_expired_still_sent(void **state)
{
    (void)state;
    char *old = cert_pem(NOW - 86400 * 10, NOW - 86400), *c64 = b64(old);
    char yaml[8192];
    snprintf(yaml, sizeof yaml,
             "apiVersion: v1\nkind: Secret\nmetadata: {name: old, namespace: istio-system}\n"
             "data: {tls.crt: %s, tls.key: S0VZ}\n",
             c64);
    wf_store *s = store_of(yaml);
    logcap c = {WF_STRBUF_INIT, 0};
    const char *names[] = {"kubernetes://old", NULL};
    json_t *out = serve(s, "istio-system", names, &c);
    assert_int_equal(json_array_size(out), 1);
    assert_int_equal(c.errors, 1);
    assert_string_equal(wf_strbuf_cstr(&c.lines),
                        "invalid certificates: istio-system/old \"kubernetes://old\": certificate "
                        "is expired or not yet valid\n");
    free(old);
    free(c64);
    json_decref(out);
    wf_strbuf_free(&c.lines);
    wf_store_free(s);
}

/* wf_pilot_generate(SDS): only the names subscribed, none for a wildcard request. */
static void test_generate_sds(void **state)
{
    (void)state;
    const char *yaml =
        "apiVersion: v1\nkind: Secret\nmetadata: {name: a, namespace: istio-system}\n"
        "stringData: {tls.crt: a, tls.key: b}\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: b, namespace: istio-system}\n"
        "stringData: {tls.crt: a, tls.key: b}\n";
    wf_store *s = store_of(yaml);
    wf_pilot_env env = {.store = s};
    json_t *md = json_pack("{s:s}", "PROXY_TYPE", "router");
    wf_xds_node node = {.id = "gw-1.istio-system", .metadata = md};
    wf_pilot_proxy p;
    char err[256];
    assert_int_equal(wf_pilot_proxy_from_node(&node, s, &p, err, sizeof err), 0);
    json_t *all = wf_pilot_generate(&env, &p, WF_XDS_SDS, NULL);
    assert_int_equal(json_array_size(all), 0);
    char *v[] = {"kubernetes://b"};
    wf_xds_names n = {.v = v, .n = 1};
    json_t *one = wf_pilot_generate(&env, &p, WF_XDS_SDS, &n);
    assert_int_equal(json_array_size(one), 1);
    wf_test_expect_str(json_array_get(one, 0), "name", "kubernetes://b");
    json_decref(all);
    json_decref(one);
    json_decref(md);
    wf_pilot_proxy_free(&p);
    wf_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_layout),
        cmocka_unit_test(test_generic_layout_and_ca),
        cmocka_unit_test(test_separate_cacert_secret),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_namespace_and_names),
        cmocka_unit_test(test_expired_still_sent),
        cmocka_unit_test(test_generate_sds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
