/*
 * test_validate_secret.c - model/validate_secret.c: a Kubernetes Secret as the API server
 * decodes it. data values must be base64 strings (Go's StdEncoding: the offset of the first
 * bad byte is named), stringData values strings, data / stringData maps, keys config keys;
 * a good Secret (PEM in data, newlines in the base64, stringData, empty values) has no issue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/store.h"
#include "model/validate.h"

typedef struct {
    size_t n;
    char path[8][128], msg[8][512];
    unsigned line[8];
} result;

static void on_issue(const wf_resource *r, const wf_validation_issue *is, void *arg)
{
    (void)r;
    result *res = arg;
    if (res->n >= 8)
        return;
    snprintf(res->path[res->n], sizeof res->path[0], "%s", is->path);
    snprintf(res->msg[res->n], sizeof res->msg[0], "%s", is->message);
    res->line[res->n] = is->node ? wf_node_report_line(is->node) : 0;
    res->n++;
}

static result check(const char *body)
{
    char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\n%s", body);
    wf_store *s = wf_store_new();
    assert_non_null(s);
    assert_int_equal(wf_store_load_buffer(s, "t.yaml", yaml, strlen(yaml), false), 0);
    assert_int_equal(wf_store_finalize(s, "default", false), 0);
    result res = {0};
    int errors = wf_validate_secret(wf_store_at(s, 0), on_issue, &res);
    assert_int_equal((size_t)errors, res.n);
    wf_store_free(s);
    return res;
}

static void test_good_secrets(void **state)
{
    (void)state;
    assert_int_equal(check("type: kubernetes.io/tls\ndata:\n  tls.crt: LS0tLS1CRUdJTg==\n"
                           "  tls.key: \"\"\n  ca.crt: |\n    TFMw\n    dExT\n")
                         .n,
                     0);
    assert_int_equal(check("stringData: {password: \"1234\", user: admin}\ndata: {}\n").n, 0);
    assert_int_equal(check("data:\n").n, 0);
}

static void test_bad_base64(void **state)
{
    (void)state;
    result r = check("data:\n  tls.crt: \"%%%notbase64\"\n  ok: YWJj\n");
    assert_int_equal(r.n, 1);
    assert_string_equal(r.path[0], "data[tls.crt]");
    assert_string_equal(r.msg[0], "Secret in version \"v1\" cannot be handled as a Secret: "
                                  "illegal base64 data at input byte 0");
    assert_int_equal(r.line[0], 5);
    r = check("data:\n  a: YWJjZA\n"); /* missing padding: the last quantum */
    assert_int_equal(r.n, 1);
    assert_string_equal(r.msg[0], "Secret in version \"v1\" cannot be handled as a Secret: "
                                  "illegal base64 data at input byte 4");
    r = check("data:\n  a: YW*j\n");
    assert_int_equal(r.n, 1);
    assert_non_null(strstr(r.msg[0], "at input byte 2"));
}

static void test_wrong_types(void **state)
{
    (void)state;
    result r = check("data: [a, b]\n");
    assert_int_equal(r.n, 1);
    assert_string_equal(r.path[0], "data");
    assert_string_equal(r.msg[0],
                        "Secret in version \"v1\" cannot be handled as a Secret: json: cannot "
                        "unmarshal array into Go struct field Secret.data of type "
                        "map[string][]uint8");
    r = check("data:\n  tls.crt: {x: 1}\n  n: 1234\n");
    assert_int_equal(r.n, 2);
    assert_string_equal(r.msg[0],
                        "Secret in version \"v1\" cannot be handled as a Secret: json: cannot "
                        "unmarshal object into Go struct field Secret.data of type []uint8");
    assert_non_null(strstr(r.msg[1], "cannot unmarshal number into Go struct field Secret.data"));
    r = check("stringData:\n  port: 8080\n");
    assert_int_equal(r.n, 1);
    assert_string_equal(r.path[0], "stringData[port]");
    assert_non_null(strstr(r.msg[0], "Secret.stringData of type string"));
}

static void test_bad_keys(void **state)
{
    (void)state;
    result r = check("data:\n  \"a/b\": YWJj\n");
    assert_int_equal(r.n, 1);
    assert_string_equal(r.path[0], "data[a/b]");
    assert_non_null(strstr(r.msg[0], "Invalid value: \"a/b\": a valid config key must consist"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_secrets),
        cmocka_unit_test(test_bad_base64),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
