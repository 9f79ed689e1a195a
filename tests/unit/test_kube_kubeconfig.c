/*
 * test_kube_kubeconfig.c - kube/kubeconfig.h: contexts, merging, -data and file forms, token
 * files re-read, errors naming file, line and field, and the in-cluster configuration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/kubeconfig.h"

/* "hello" in base64 stands for PEM bytes: the loader only decodes, TLS parses later. */
static const char *KC = "apiVersion: v1\n"
                        "kind: Config\n"
                        "current-context: dev\n"
                        "clusters:\n"
                        "- name: c1\n"
                        "  cluster:\n"
                        "    server: https://10.0.0.1:6443/\n"
                        "    certificate-authority-data: aGVsbG8=\n"
                        "- name: c2\n"
                        "  cluster:\n"
                        "    server: http://127.0.0.1:8080\n"
                        "    insecure-skip-tls-verify: true\n"
                        "    tls-server-name: kubernetes\n"
                        "users:\n"
                        "- name: u1\n"
                        "  user:\n"
                        "    token: abc\n"
                        "- name: u2\n"
                        "  user:\n"
                        "    client-certificate-data: Y2VydA==\n"
                        "    client-key-data: a2V5\n"
                        "contexts:\n"
                        "- name: dev\n"
                        "  context: {cluster: c1, user: u1, namespace: team}\n"
                        "- name: other\n"
                        "  context: {cluster: c2, user: u2}\n";

static wf_kube_config *parse_ok(const char *text, const char *ctx)
{
    wf_strbuf err = {0};
    wf_kube_config *c = NULL;
    int rc = wf_kubeconfig_parse("/x/kc", text, strlen(text), ctx, &c, &err);
    if (rc != 0)
        fail_msg("unexpected error: %s", wf_strbuf_cstr(&err));
    wf_strbuf_free(&err);
    return c;
}

static char *parse_err(const char *text, const char *ctx)
{
    wf_strbuf err = {0};
    wf_kube_config *c = NULL;
    assert_int_equal(wf_kubeconfig_parse("/x/kc", text, strlen(text), ctx, &c, &err), -1);
    assert_null(c);
    return wf_strbuf_take(&err);
}

static void current_context(void **state)
{
    wf_kube_config *c = parse_ok(KC, NULL);
    assert_string_equal(c->server, "https://10.0.0.1:6443"); /* trailing '/' dropped */
    assert_int_equal(c->ca_len, 5);
    assert_memory_equal(c->ca_pem, "hello", 5);
    assert_string_equal(c->token, "abc");
    assert_null(c->cert_pem);
    assert_string_equal(c->ns, "team");
    assert_string_equal(c->context, "dev");
    assert_false(c->insecure);
    wf_kube_config_free(c);
}

static void context_override(void **state)
{
    wf_kube_config *c = parse_ok(KC, "other");
    assert_string_equal(c->server, "http://127.0.0.1:8080");
    assert_true(c->insecure);
    assert_string_equal(c->tls_server_name, "kubernetes");
    assert_memory_equal(c->cert_pem, "cert", 4);
    assert_memory_equal(c->key_pem, "key", 3);
    assert_null(c->token);
    assert_string_equal(c->ns, "default");
    wf_kube_config_free(c);
}

static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    assert_non_null(at);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return out;
}

static void errors_name_file_line_and_field(void **state)
{
    char *t = replace(KC, "client-key-data: a2V5", "client-key-data: 'not base64!'");
    char *e = parse_err(t, "other");
    assert_string_equal(e, "kubeconfig /x/kc:21: users[1].user.client-key-data: not base64");
    free(e);
    free(t);

    e = parse_err(KC, "nope");
    assert_string_equal(e, "kubeconfig /x/kc: --context: context \"nope\" not found");
    free(e);

    t = replace(KC, "{cluster: c1,", "{cluster: c9,");
    e = parse_err(t, NULL);
    assert_string_equal(e, "kubeconfig /x/kc:24: contexts[0].context.cluster: cluster \"c9\" "
                           "not found");
    free(e);
    free(t);

    t = replace(KC, "    server: https://10.0.0.1:6443/\n", "");
    e = parse_err(t, NULL);
    assert_string_equal(e, "kubeconfig /x/kc:6: clusters[0].cluster.server: missing");
    free(e);
    free(t);

    t = replace(KC, "    token: abc\n", "    exec: {command: aws}\n");
    e = parse_err(t, NULL);
    assert_non_null(strstr(e, "kubeconfig /x/kc:17: users[0].user.exec: not supported"));
    free(e);
    free(t);

    t = replace(KC, "current-context: dev\n", "");
    e = parse_err(t, NULL);
    assert_string_equal(e, "kubeconfig /x/kc: current-context: not set (and no --context)");
    free(e);
    free(t);

    t = replace(KC, "    insecure-skip-tls-verify: true\n",
                "    insecure-skip-tls-verify: true\n    certificate-authority-data: aGVsbG8=\n");
    e = parse_err(t, "other");
    assert_string_equal(e, "kubeconfig /x/kc:12: clusters[1].cluster.insecure-skip-tls-verify: "
                           "specifying a root certificates file with the insecure flag is not "
                           "allowed");
    free(e);
    free(t);

    e = parse_err("clusters: [\n", NULL);
    assert_non_null(strstr(e, "kubeconfig /x/kc:"));
    free(e);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* KUBECONFIG lists: first file to set a value or a named entry wins; missing files skipped;
 * relative file paths resolve against the naming file's folder; tokenFile is re-read. */
static void merge_files_and_token_file(void **state)
{
    char dir[] = "/tmp/weft-kc-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[256], b[256], list[1024], path[300];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    write_file(a, "current-context: ctx\n"
                  "contexts:\n- name: ctx\n  context: {cluster: shared, user: me}\n"
                  "users:\n- name: me\n  user: {tokenFile: tok}\n");
    write_file(b, "current-context: ignored\n"
                  "clusters:\n- name: shared\n  cluster:\n    server: https://b:1\n"
                  "    certificate-authority: ca.pem\n"
                  "users:\n- name: me\n  user: {token: from-b}\n");
    snprintf(path, sizeof path, "%s/ca.pem", dir);
    write_file(path, "CA");
    snprintf(path, sizeof path, "%s/tok", dir);
    write_file(path, "  t1\n");
    snprintf(list, sizeof list, "%s/missing:%s:%s", dir, a, b);
    wf_strbuf err = {0};
    wf_kube_config *c = NULL;
    assert_int_equal(wf_kubeconfig_load(list, NULL, &c, &err), 0);
    assert_string_equal(c->server, "https://b:1");
    assert_memory_equal(c->ca_pem, "CA", 2);
    assert_null(c->token); /* a's user "me" wins whole: b's token is not merged in */
    char *tok = NULL;
    assert_int_equal(wf_kube_config_token(c, &tok, &err), 0);
    assert_string_equal(tok, "t1");
    free(tok);
    write_file(path, "t2"); /* rotated */
    assert_int_equal(wf_kube_config_token(c, &tok, &err), 0);
    assert_string_equal(tok, "t2");
    free(tok);
    unlink(path);
    assert_int_equal(wf_kube_config_token(c, &tok, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "/tok: No such file"));
    wf_kube_config_free(c);
    wf_strbuf_reset(&err);

    /* the certificate-authority file missing: named with its field */
    snprintf(path, sizeof path, "%s/ca.pem", dir);
    unlink(path);
    assert_int_equal(wf_kubeconfig_load(list, NULL, &c, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "clusters[0].cluster.certificate-authority: "
                                                 "cannot read"));
    snprintf(list, sizeof list, "%s/none", dir);
    assert_int_equal(wf_kubeconfig_load(list, NULL, &c, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "no such file"));
    unlink(a);
    unlink(b);
    snprintf(path, sizeof path, "%s/tok", dir);
    rmdir(dir);
    wf_strbuf_free(&err);
}

static void in_cluster(void **state)
{
    char dir[] = "/tmp/weft-incluster-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sa[300], path[400];
    snprintf(sa, sizeof sa, "%s/var/run/secrets/kubernetes.io/serviceaccount", dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", sa);
    assert_int_equal(system(cmd), 0);
    wf_strbuf err = {0};
    wf_kube_config *c = NULL;
    assert_int_equal(wf_kube_incluster(dir, NULL, "443", &c, &err), -1);
    assert_string_equal(wf_strbuf_cstr(&err),
                        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                        "KUBERNETES_SERVICE_PORT must be defined");
    /* no token file yet */
    assert_int_equal(wf_kube_incluster(dir, "10.96.0.1", "443", &c, &err), -1);
    assert_non_null(strstr(wf_strbuf_cstr(&err), "serviceaccount/token"));
    snprintf(path, sizeof path, "%s/token", sa);
    write_file(path, "sa-token\n");
    snprintf(path, sizeof path, "%s/ca.crt", sa);
    write_file(path, "CA!");
    assert_int_equal(wf_kube_incluster(dir, "fd00::1", "6443", &c, &err), 0);
    assert_string_equal(c->server, "https://[fd00::1]:6443");
    assert_string_equal(c->ns, "default");
    assert_memory_equal(c->ca_pem, "CA!", 3);
    assert_string_equal(c->origin, "in-cluster");
    char *tok = NULL;
    assert_int_equal(wf_kube_config_token(c, &tok, &err), 0);
    assert_string_equal(tok, "sa-token");
    free(tok);
    wf_kube_config_free(c);
    snprintf(path, sizeof path, "%s/namespace", sa);
    write_file(path, "istio-system\n");
    assert_int_equal(wf_kube_incluster(dir, "10.96.0.1", "443", &c, &err), 0);
    assert_string_equal(c->server, "https://10.96.0.1:443");
    assert_string_equal(c->ns, "istio-system");
    wf_kube_config_free(c);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    wf_strbuf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(current_context),
        cmocka_unit_test(context_override),
        cmocka_unit_test(errors_name_file_line_and_field),
        cmocka_unit_test(merge_files_and_token_file),
        cmocka_unit_test(in_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
