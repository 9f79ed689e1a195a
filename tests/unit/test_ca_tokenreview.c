/*
 * test_ca_tokenreview.c - the TokenReview authenticator (src/pilot/ca_tokenreview.h): the
 * username's service account, the request body, istiod's reasons for the answers it refuses,
 * the unverified exp claim, the cache (TTL, exp bound, eviction, keyed by the token), and the
 * reviewer end to end against a one-shot HTTP server: an answer on the loop, then the cache;
 * a review still pending when the reviewer stops is answered "stopped".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base64.h"
#include "kube/client.h"
#include "pilot/ca_tokenreview.h"

static void test_username(void **state)
{
    (void)state;
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX];
    assert_int_equal(wf_tr_parse_username("system:serviceaccount:shop:catalog", ns, sa), 0);
    assert_string_equal(ns, "shop");
    assert_string_equal(sa, "catalog");
    assert_int_equal(wf_tr_parse_username("system:serviceaccount::", ns, sa), 0);
    assert_string_equal(ns, "");
    assert_int_equal(wf_tr_parse_username("system:serviceaccount:a:b:c", ns, sa), -1);
    assert_int_equal(wf_tr_parse_username("system:serviceaccount:shop", ns, sa), -1);
    assert_int_equal(wf_tr_parse_username("system:node:shop:catalog", ns, sa), -1);
    assert_int_equal(wf_tr_parse_username("admin", ns, sa), -1);
    assert_int_equal(wf_tr_parse_username(NULL, ns, sa), -1);
}

static void test_request_body(void **state)
{
    (void)state;
    wf_strbuf b = WF_STRBUF_INIT;
    assert_int_equal(wf_tr_request_body("a.b.c", &b), 0);
    assert_string_equal(wf_strbuf_cstr(&b),
                        "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                        "\"spec\":{\"token\":\"a.b.c\",\"audiences\":[\"istio-ca\"]}}");
    wf_strbuf_free(&b);
}

#define OK_USER                                                                                    \
    "\"user\":{\"username\":\"system:serviceaccount:shop:catalog\",\"groups\":[\"system:"          \
    "serviceaccounts\",\"system:serviceaccounts:shop\",\"system:authenticated\"]}"

static const char *review_why(const char *json)
{
    static char why[512];
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX];
    why[0] = '\0';
    if (wf_tr_parse_review(json, strlen(json), ns, sa, why, sizeof why) == 0) {
        snprintf(why, sizeof why, "ok %s/%s", ns, sa);
    }
    return why;
}

static void test_review_answers(void **state)
{
    (void)state;
    assert_string_equal(
        review_why("{\"status\":{\"authenticated\":true,\"audiences\":[\"istio-ca\"]," OK_USER
                   "}}"),
        "ok shop/catalog");
    /* no status.audiences (an authenticator without audiences): accepted */
    assert_string_equal(review_why("{\"status\":{\"authenticated\":true," OK_USER "}}"),
                        "ok shop/catalog");
    assert_string_equal(
        review_why("{\"status\":{\"user\":{},\"error\":\"[invalid bearer token, service "
                   "account token has expired]\"}}"),
        "the service account authentication returns an error: [invalid bearer token, service "
        "account token has expired]");
    assert_string_equal(review_why("{\"status\":{\"user\":{}}}"), "the token is not authenticated");
    assert_string_equal(
        review_why("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"jane\","
                   "\"groups\":[\"system:authenticated\"]}}}"),
        "the token is not a service account");
    assert_string_equal(
        review_why("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"jane\","
                   "\"groups\":[\"system:serviceaccounts\"]}}}"),
        "invalid username field in the token review result");
    assert_string_equal(
        review_why("{\"status\":{\"authenticated\":true,\"audiences\":[\"a\",\"b\"]," OK_USER "}}"),
        "the token audiences [a b] do not include istio-ca");
    assert_string_equal(
        review_why("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"system:"
                   "serviceaccount:shop:\",\"groups\":[\"system:serviceaccounts\"]}}}"),
        "failed to parse the JWT; service account required");
    assert_string_equal(
        review_why("{\"status\":{\"authenticated\":true,\"user\":{\"username\":\"system:"
                   "serviceaccount::sa\",\"groups\":[\"system:serviceaccounts\"]}}}"),
        "failed to parse the JWT; namespace required");
    assert_string_equal(review_why("[]"), "the TokenReview answer is not a JSON object");
}

static char *jwt_with(const char *claims)
{
    char body[512];
    size_t n = wf_base64_encode((const unsigned char *)claims, strlen(claims), body, sizeof body);
    while (n && body[n - 1] == '=')
        body[--n] = '\0';
    for (char *c = body; *c; c++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
    char *t = malloc(strlen(body) + 32);
    sprintf(t, "eyJhbGciOiJIUzI1NiJ9.%s.c2ln", body);
    return t;
}

static void test_token_exp(void **state)
{
    (void)state;
    char *t = jwt_with("{\"exp\":1900000000,\"sub\":\"x\"}");
    assert_int_equal(wf_tr_token_exp(t), 1900000000);
    free(t);
    t = jwt_with("{\"sub\":\"x\"}");
    assert_int_equal(wf_tr_token_exp(t), 0);
    free(t);
    assert_int_equal(wf_tr_token_exp("not-a-jwt"), 0);
    assert_int_equal(wf_tr_token_exp("a.!!!.c"), 0);
}

static void test_cache(void **state)
{
    (void)state;
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX];
    wf_tr_cache *c = wf_tr_cache_new(2, 60);
    assert_non_null(c);
    assert_int_equal(wf_tr_cache_get(c, "tok-a", 1000, ns, sa), 0);
    wf_tr_cache_put(c, "tok-a", 1000, 0, "shop", "catalog");
    assert_int_equal(wf_tr_cache_get(c, "tok-a", 1059, ns, sa), 1);
    assert_string_equal(ns, "shop");
    assert_string_equal(sa, "catalog");
    assert_int_equal(wf_tr_cache_get(c, "tok-a", 1060, ns, sa), 0); /* the TTL */
    assert_int_equal(wf_tr_cache_get(c, "tok-b", 1000, ns, sa), 0); /* another token */
    /* the token's own exp bounds the entry; an expired one is not kept */
    wf_tr_cache_put(c, "tok-b", 1000, 1010, "shop", "webapp");
    assert_int_equal(wf_tr_cache_get(c, "tok-b", 1009, ns, sa), 1);
    assert_int_equal(wf_tr_cache_get(c, "tok-b", 1010, ns, sa), 0);
    wf_tr_cache_put(c, "tok-c", 1000, 900, "shop", "x");
    assert_int_equal(wf_tr_cache_get(c, "tok-c", 1000, ns, sa), 0);
    /* full: the entry that ends first goes (tok-b, at 1010) */
    assert_int_equal(wf_tr_cache_len(c), 2);
    wf_tr_cache_put(c, "tok-d", 1001, 0, "shop", "d");
    assert_int_equal(wf_tr_cache_len(c), 2);
    assert_int_equal(wf_tr_cache_get(c, "tok-b", 1002, ns, sa), 0);
    assert_int_equal(wf_tr_cache_get(c, "tok-a", 1002, ns, sa), 1);
    assert_int_equal(wf_tr_cache_get(c, "tok-d", 1002, ns, sa), 1);
    /* full with expired entries: they go first */
    wf_tr_cache_put(c, "tok-e", 1070, 0, "shop", "e");
    assert_int_equal(wf_tr_cache_len(c), 1);
    /* the same token again replaces its entry */
    wf_tr_cache_put(c, "tok-e", 1071, 0, "shop", "e2");
    assert_int_equal(wf_tr_cache_len(c), 1);
    assert_int_equal(wf_tr_cache_get(c, "tok-e", 1072, ns, sa), 1);
    assert_string_equal(sa, "e2");
    wf_tr_cache_free(c);
}

/* ---- the reviewer against a tiny HTTP server ------------------------------------------ */

typedef struct srv {
    int fd, port;
    bool answer; /* false: accept and never answer */
    char request[8192];
    pthread_t th;
} srv;

static void *serve_one(void *arg)
{
    srv *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    size_t got = 0;
    for (;;) {
        ssize_t n = read(c, s->request + got, sizeof s->request - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        s->request[got] = '\0';
        char *end = strstr(s->request, "\r\n\r\n");
        const char *cl = strstr(s->request, "Content-Length: ");
        if (end && cl && got >= (size_t)(end + 4 - s->request) + (size_t)atoi(cl + 16))
            break;
    }
    if (s->answer) {
        static const char body[] = "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":true,"
                                   "\"audiences\":[\"istio-ca\"]," OK_USER "}}";
        char resp[1024];
        int n = snprintf(resp, sizeof resp,
                         "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         strlen(body), body);
        assert_true(write(c, resp, (size_t)n) == n);
    } else {
        char b[256];
        while (read(c, b, sizeof b) > 0) {
        } /* until the client goes (its cancel) */
    }
    close(c);
    return NULL;
}

static void srv_start(srv *s, bool answer)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    memset(s, 0, sizeof *s);
    s->answer = answer;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 4), 0);
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->th, NULL, serve_one, s), 0);
}

static void srv_stop(srv *s)
{
    pthread_join(s->th, NULL);
    close(s->fd);
}

static wf_kube_client *client_for(int port)
{
    char text[512];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
             "clusters: [{name: c, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
             "users: [{name: u, user: {token: pilot-token}}]\n"
             "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
             port);
    wf_kube_config *cfg = NULL;
    wf_kube_client *c = NULL;
    wf_strbuf err = WF_STRBUF_INIT;
    assert_int_equal(wf_kubeconfig_parse("kc", text, strlen(text), NULL, &cfg, &err), 0);
    assert_int_equal(wf_kube_client_new(cfg, &c, &err), 0);
    wf_strbuf_free(&err);
    return c;
}

typedef struct answer {
    int calls;
    bool ok;
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX], why[700];
} answer;

static void on_done(void *ud, bool ok, const char *ns, const char *sa, const char *why)
{
    answer *a = ud;
    a->calls++;
    a->ok = ok;
    snprintf(a->ns, sizeof a->ns, "%s", ns);
    snprintf(a->sa, sizeof a->sa, "%s", sa);
    snprintf(a->why, sizeof a->why, "%s", why);
}

static void test_reviewer(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv s;
    srv_start(&s, true);
    wf_kube_client *client = client_for(s.port);
    wf_strbuf why = WF_STRBUF_INIT;
    wf_tokenreview *tr = wf_tokenreview_start(&loop, client, NULL, &why);
    assert_non_null(tr);
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX], err[700];
    answer a = {0};
    wf_tr_pending *p = NULL;
    assert_int_equal(
        wf_tokenreview_check(tr, "tok-1", 1000, ns, sa, on_done, &a, &p, err, sizeof err), 0);
    assert_non_null(p);
    for (int i = 0; i < 500 && !a.calls; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
    assert_int_equal(a.calls, 1);
    assert_true(a.ok);
    assert_string_equal(a.ns, "shop");
    assert_string_equal(a.sa, "catalog");
    srv_stop(&s);
    assert_non_null(strstr(s.request, "POST /apis/authentication.k8s.io/v1/tokenreviews "));
    assert_non_null(
        strstr(s.request, "\"spec\":{\"token\":\"tok-1\",\"audiences\":[\"istio-ca\"]}"));
    assert_non_null(strstr(s.request, "Authorization: Bearer pilot-token"));
    /* the second time from the cache, at once */
    assert_int_equal(
        wf_tokenreview_check(tr, "tok-1", 1001, ns, sa, on_done, &a, &p, err, sizeof err), 1);
    assert_string_equal(sa, "catalog");
    wf_tr_stats st = wf_tokenreview_stats(tr);
    assert_int_equal(st.requests, 1);
    assert_int_equal(st.authenticated, 1);
    assert_int_equal(st.cache_hits, 1);
    wf_tokenreview_stop(tr);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    wf_kube_client_free(client);
    wf_strbuf_free(&why);
}

static void test_reviewer_stops_with_pending(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    srv s;
    srv_start(&s, false); /* never answers */
    wf_kube_client *client = client_for(s.port);
    wf_strbuf why = WF_STRBUF_INIT;
    wf_tokenreview *tr = wf_tokenreview_start(&loop, client, NULL, &why);
    assert_non_null(tr);
    char ns[WF_TR_NAME_MAX], sa[WF_TR_NAME_MAX], err[700];
    answer a = {0}, b = {0};
    wf_tr_pending *p = NULL, *q = NULL;
    assert_int_equal(
        wf_tokenreview_check(tr, "tok-1", 1000, ns, sa, on_done, &a, &p, err, sizeof err), 0);
    assert_int_equal(
        wf_tokenreview_check(tr, "tok-2", 1000, ns, sa, on_done, &b, &q, err, sizeof err), 0);
    wf_tokenreview_cancel(q); /* its caller went: never answered */
    usleep(100000);
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(a.calls, 0);
    wf_tokenreview_stop(tr); /* cancels the request in flight */
    assert_int_equal(a.calls, 1);
    assert_false(a.ok);
    assert_non_null(strstr(a.why, "failed to validate the JWT from cluster \"Kubernetes\": "));
    assert_int_equal(b.calls, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    srv_stop(&s);
    wf_kube_client_free(client);
    wf_strbuf_free(&why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_username),
        cmocka_unit_test(test_request_body),
        cmocka_unit_test(test_review_answers),
        cmocka_unit_test(test_token_exp),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_reviewer),
        cmocka_unit_test(test_reviewer_stops_with_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
