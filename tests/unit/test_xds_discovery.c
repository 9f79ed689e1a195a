/*
 * test_xds_discovery.c - xDS discovery messages: JSON round-trips, lowerCamelCase input, bad
 * input naming the field, type URLs, istiod's ACK/NACK/stale-nonce classification and sync
 * state, Envoy's client ACK/NACK requests; the server's ACK fast path (request scan, names key)
 * and interned name lists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xds/discovery.h"

static json_t *parse(const char *text)
{
    json_t *j = NULL;
    wf_xds_err err;
    assert_int_equal(wf_xds_parse_text(text, strlen(text), &j, &err), WF_XDS_OK);
    return j;
}

/* Decodes text as a DiscoveryRequest; returns the rc, err filled. */
static int req_from(const char *text, wf_xds_request *r, wf_xds_err *err)
{
    json_t *j = parse(text);
    int rc = wf_xds_request_decode(j, r, err);
    json_decref(j);
    return rc;
}

static void expect_req_error(const char *text, const char *field)
{
    wf_xds_request r;
    wf_xds_err err;
    assert_int_equal(req_from(text, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, field);
    assert_non_null(strstr(err.text, field));
    assert_null(r.type_url);
}

static void test_type_urls(void **state)
{
    assert_string_equal(wf_xds_type_url(WF_XDS_CDS),
                        "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    assert_string_equal(wf_xds_type_url(WF_XDS_SDS),
                        "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret");
    assert_string_equal(wf_xds_type_short(WF_XDS_EDS), "EDS");
    assert_string_equal(wf_xds_type_short(WF_XDS_ECDS), "ECDS");
    assert_int_equal(wf_xds_type_from_url(WF_XDS_TYPE_ROUTE), WF_XDS_RDS);
    assert_int_equal(wf_xds_type_from_url(WF_XDS_TYPE_LISTENER), WF_XDS_LDS);
    assert_int_equal(wf_xds_type_from_url("type.googleapis.com/x"), -1);
    assert_int_equal(wf_xds_type_from_url(NULL), -1);
    assert_null(wf_xds_type_url(WF_XDS_NTYPES));
}

static void test_request_round_trip(void **state)
{
    const char *text =
        "{\"version_info\":\"v1\",\"node\":{\"id\":\"sidecar~10.0.0.1~a.ns~ns.svc\",\"cluster\":"
        "\"a.ns\",\"metadata\":{\"NAMESPACE\":\"ns\"}},\"resource_names\":[\"x\",\"y\"],"
        "\"type_url\":\"" WF_XDS_TYPE_ENDPOINT "\",\"response_nonce\":\"n1\","
        "\"error_detail\":{\"code\":13,\"message\":\"bad\"}}";
    wf_xds_request r;
    wf_xds_err err;
    assert_int_equal(req_from(text, &r, &err), WF_XDS_OK);
    assert_string_equal(r.version_info, "v1");
    assert_true(r.has_node);
    assert_string_equal(r.node.cluster, "a.ns");
    assert_string_equal(json_string_value(json_object_get(r.node.metadata, "NAMESPACE")), "ns");
    assert_int_equal(r.resource_names.n, 2);
    assert_string_equal(r.resource_names.v[1], "y");
    assert_true(r.has_error);
    assert_int_equal(r.error_detail.code, 13);
    assert_string_equal(r.error_detail.message, "bad");

    json_t *out = wf_xds_request_encode(&r);
    json_t *want = parse(text);
    assert_non_null(out);
    assert_true(json_equal(out, want));
    json_decref(out);
    json_decref(want);
    wf_xds_request_free(&r);
}

static void test_request_camel_case(void **state)
{
    const char *text =
        "{\"versionInfo\":\"3\",\"resourceNames\":[\"a\"],\"typeUrl\":\"" WF_XDS_TYPE_CLUSTER
        "\",\"responseNonce\":\"9\",\"errorDetail\":{\"code\":\"3\","
        "\"message\":\"m\"},\"node\":null}";
    wf_xds_request r;
    wf_xds_err err;
    assert_int_equal(req_from(text, &r, &err), WF_XDS_OK);
    assert_string_equal(r.version_info, "3");
    assert_string_equal(r.type_url, WF_XDS_TYPE_CLUSTER);
    assert_string_equal(r.response_nonce, "9");
    assert_false(r.has_node);
    assert_int_equal(r.error_detail.code, 3);
    json_t *out = wf_xds_request_encode(&r);
    assert_non_null(json_object_get(out, "response_nonce"));
    assert_non_null(json_object_get(out, "resource_names"));
    assert_null(json_object_get(out, "responseNonce"));
    json_decref(out);
    wf_xds_request_free(&r);
}

static void test_request_bad_input(void **state)
{
    expect_req_error("{\"resource_names\":[]}", "type_url");
    expect_req_error("{\"type_url\":\"\"}", "type_url");
    expect_req_error("{\"type_url\":5}", "type_url");
    expect_req_error("{\"type_url\":\"t\",\"version_info\":1}", "version_info");
    expect_req_error("{\"type_url\":\"t\",\"resource_names\":\"a\"}", "resource_names");
    expect_req_error("{\"type_url\":\"t\",\"resource_names\":[\"a\",2]}", "resource_names[1]");
    expect_req_error("{\"type_url\":\"t\",\"node\":{\"id\":[]}}", "node.id");
    expect_req_error("{\"type_url\":\"t\",\"node\":{\"metadata\":[]}}", "node.metadata");
    expect_req_error("{\"type_url\":\"t\",\"error_detail\":{\"code\":\"x\"}}", "error_detail.code");
    expect_req_error("{\"type_url\":\"t\",\"errorDetail\":7}", "error_detail");
    expect_req_error("{\"type_url\":\"t\",\"typeUrl\":\"t\"}", "type_url");

    wf_xds_err err;
    json_t *j = NULL;
    assert_int_equal(wf_xds_parse_text("[1]", 3, &j, &err), WF_XDS_E_INVALID);
    assert_null(j);
    assert_int_equal(wf_xds_parse_text("{\"a\":1,\"a\":2}", 13, &j, &err), WF_XDS_E_INVALID);
    assert_int_equal(wf_xds_parse_text("{\"a\":\"\xff\"}", 8, &j, &err), WF_XDS_E_INVALID);
}

static void test_response_round_trip(void **state)
{
    const char *text =
        "{\"version_info\":\"2024-01-01/7\",\"resources\":[{\"@type\":\"" WF_XDS_TYPE_CLUSTER
        "\",\"name\":\"outbound|80||a.ns.svc.cluster.local\"}],"
        "\"type_url\":\"" WF_XDS_TYPE_CLUSTER "\",\"nonce\":\"abc\"}";
    json_t *j = parse(text);
    wf_xds_response r;
    wf_xds_err err;
    assert_int_equal(wf_xds_response_decode(j, &r, &err), WF_XDS_OK);
    assert_string_equal(r.nonce, "abc");
    assert_int_equal(json_array_size(r.resources), 1);
    json_t *out = wf_xds_response_encode(&r);
    assert_true(json_equal(out, j));
    json_decref(out);
    json_decref(j);
    wf_xds_response_free(&r);

    j = parse("{\"versionInfo\":\"1\",\"typeUrl\":\"" WF_XDS_TYPE_LISTENER "\"}");
    assert_int_equal(wf_xds_response_decode(j, &r, &err), WF_XDS_OK);
    assert_string_equal(r.version_info, "1");
    assert_null(r.resources);
    json_decref(j);
    wf_xds_response_free(&r);
}

static void expect_resp_error(const char *text, const char *field, const char *reason)
{
    json_t *j = parse(text);
    wf_xds_response r;
    wf_xds_err err;
    assert_int_equal(wf_xds_response_decode(j, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, field);
    assert_non_null(strstr(err.text, reason));
    json_decref(j);
}

static void test_response_bad_input(void **state)
{
    expect_resp_error("{\"resources\":[]}", "type_url", "required");
    expect_resp_error("{\"type_url\":\"t\",\"resources\":{}}", "resources", "an array");
    expect_resp_error("{\"type_url\":\"t\",\"resources\":[{\"@type\":\"t\"},{}]}",
                      "resources[1].@type", "required");
    expect_resp_error("{\"type_url\":\"t\",\"resources\":[{\"@type\":\"u\"}]}",
                      "resources[0].@type", "does not match the message-wide type URL t");
    expect_resp_error("{\"type_url\":\"t\",\"resources\":[3]}", "resources[0]", "an object");
    expect_resp_error("{\"type_url\":\"t\",\"nonce\":false}", "nonce", "a boolean");
}

static void test_delta_request(void **state)
{
    const char *camel = "{\"typeUrl\":\"" WF_XDS_TYPE_ENDPOINT "\",\"resourceNamesSubscribe\":"
                        "[\"a\",\"b\"],\"resourceNamesUnsubscribe\":[\"c\"],"
                        "\"initialResourceVersions\":{\"a\":\"1\"},\"responseNonce\":\"5\","
                        "\"node\":{\"id\":\"p.ns\"}}";
    json_t *j = parse(camel);
    wf_xds_delta_request r;
    wf_xds_err err;
    assert_int_equal(wf_xds_delta_request_decode(j, &r, &err), WF_XDS_OK);
    json_decref(j);
    assert_int_equal(r.subscribe.n, 2);
    assert_string_equal(r.unsubscribe.v[0], "c");
    assert_string_equal(json_string_value(json_object_get(r.initial_resource_versions, "a")), "1");
    assert_string_equal(r.node.id, "p.ns");
    json_t *out = wf_xds_delta_request_encode(&r);
    json_t *want = parse(
        "{\"type_url\":\"" WF_XDS_TYPE_ENDPOINT "\",\"resource_names_subscribe\":[\"a\",\"b\"],"
        "\"resource_names_unsubscribe\":[\"c\"],\"initial_resource_versions\":{\"a\":\"1\"},"
        "\"response_nonce\":\"5\",\"node\":{\"id\":\"p.ns\"}}");
    assert_true(json_equal(out, want));
    json_decref(out);
    json_decref(want);
    wf_xds_delta_request_free(&r);

    j = parse("{\"type_url\":\"t\",\"initial_resource_versions\":{\"a\":1}}");
    assert_int_equal(wf_xds_delta_request_decode(j, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, "initial_resource_versions[a]");
    json_decref(j);
    j = parse("{\"resource_names_subscribe\":[]}");
    assert_int_equal(wf_xds_delta_request_decode(j, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, "type_url");
    json_decref(j);
}

static void test_delta_response(void **state)
{
    const char *text = "{\"systemVersionInfo\":\"s1\",\"typeUrl\":\"" WF_XDS_TYPE_CLUSTER "\","
                       "\"resources\":[{\"name\":\"c1\",\"version\":\"3\",\"resource\":{\"@type\":"
                       "\"" WF_XDS_TYPE_CLUSTER "\",\"name\":\"c1\"}},{\"name\":\"c2\"}],"
                       "\"removedResources\":[\"c0\"],\"nonce\":\"n\"}";
    json_t *j = parse(text);
    wf_xds_delta_response r;
    wf_xds_err err;
    assert_int_equal(wf_xds_delta_response_decode(j, &r, &err), WF_XDS_OK);
    json_decref(j);
    assert_int_equal(r.n_resources, 2);
    assert_string_equal(r.resources[0].version, "3");
    assert_null(r.resources[1].resource);
    assert_string_equal(r.removed_resources.v[0], "c0");
    json_t *out = wf_xds_delta_response_encode(&r);
    assert_string_equal(json_string_value(json_object_get(out, "system_version_info")), "s1");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "resources"), 0), "name")),
                        "c1");
    wf_xds_delta_response r2;
    assert_int_equal(wf_xds_delta_response_decode(out, &r2, &err), WF_XDS_OK);
    assert_string_equal(r2.resources[1].name, "c2");
    json_decref(out);
    wf_xds_delta_response_free(&r2);
    wf_xds_delta_response_free(&r);

    j = parse("{\"type_url\":\"t\"}");
    assert_int_equal(wf_xds_delta_response_decode(j, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, "nonce");
    json_decref(j);
    j = parse("{\"type_url\":\"t\",\"nonce\":\"1\",\"resources\":[{\"resource\":{}}]}");
    assert_int_equal(wf_xds_delta_response_decode(j, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, "resources[0].resource.@type");
    json_decref(j);
    j = parse("{\"type_url\":\"t\",\"nonce\":\"1\",\"resources\":[{\"version\":2}]}");
    assert_int_equal(wf_xds_delta_response_decode(j, &r, &err), WF_XDS_E_INVALID);
    assert_string_equal(err.field, "resources[0].version");
    json_decref(j);
}

/* ---- server bookkeeping ---------------------------------------------------------------------- */

/* A request as Envoy sends it; names is a NULL-terminated list. */
static wf_xds_request mkreq(const char *version, const char *nonce, const char *error,
                            const char **names)
{
    wf_xds_request r = {0};
    r.type_url = strdup(WF_XDS_TYPE_CLUSTER);
    r.version_info = version ? strdup(version) : NULL;
    r.response_nonce = nonce ? strdup(nonce) : NULL;
    if (error) {
        r.has_error = true;
        r.error_detail.code = 13;
        r.error_detail.message = strdup(error);
    }
    while (names && names[r.resource_names.n]) {
        r.resource_names.n++;
    }
    wf_xds_names src = {(char **)names, r.resource_names.n};
    r.resource_names.n = 0;
    assert_int_equal(wf_xds_names_copy(&r.resource_names, &src), WF_XDS_OK);
    return r;
}

static wf_xds_req_kind feed(wf_xds_watch *w, wf_xds_request r, int64_t now)
{
    wf_xds_req_kind k;
    assert_int_equal(wf_xds_watch_on_request(w, &r, now, &k), WF_XDS_OK);
    wf_xds_request_free(&r);
    return k;
}

static void test_server_ack_nack_stale(void **state)
{
    wf_xds_watch w = {0};
    const char *ab[] = {"a", "b", NULL}, *ba[] = {"b", "a", "a", NULL},
               *abc[] = {"a", "b", "c", NULL};
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_NOT_SENT);
    assert_int_equal(feed(&w, mkreq(NULL, NULL, NULL, ab), 10), WF_XDS_REQ_INITIAL);
    assert_true(w.watched);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_NOT_SENT);

    assert_int_equal(wf_xds_watch_on_sent(&w, "v1", "n1", 20), WF_XDS_OK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_STALE);
    assert_int_equal(w.sync_since_ms, 20);
    /* Same names in another order (and repeated): a plain ACK. */
    assert_int_equal(feed(&w, mkreq("v1", "n1", NULL, ba), 30), WF_XDS_REQ_ACK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_SYNCED);
    assert_string_equal(w.version_acked, "v1");
    assert_int_equal(w.sync_since_ms, 30);

    /* Push v2, the proxy rejects it: ERROR with the message, still on v1. */
    assert_int_equal(wf_xds_watch_on_sent(&w, "v2", "n2", 40), WF_XDS_OK);
    assert_int_equal(feed(&w, mkreq("v1", "n2", "bad cluster", ab), 50), WF_XDS_REQ_NACK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_ERROR);
    assert_string_equal(wf_xds_sync_name(wf_xds_watch_sync(&w)), "ERROR");
    assert_string_equal(w.error_message, "bad cluster");
    assert_int_equal(w.error_code, 13);
    assert_string_equal(w.version_acked, "v1");
    assert_string_equal(w.nonce_acked, "n1");

    /* v3 pushed; an ACK of the old nonce n1 is stale and changes nothing. */
    assert_int_equal(wf_xds_watch_on_sent(&w, "v3", "n3", 60), WF_XDS_OK);
    assert_int_equal(feed(&w, mkreq("v1", "n1", NULL, ab), 70), WF_XDS_REQ_STALE_NONCE);
    assert_int_equal(feed(&w, mkreq("v1", "n2", "late", ab), 70), WF_XDS_REQ_STALE_NONCE);
    assert_string_equal(w.error_message, "bad cluster");
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_ERROR);

    /* ACK of n3 clears the error. */
    assert_int_equal(feed(&w, mkreq("v3", "n3", NULL, ab), 80), WF_XDS_REQ_ACK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_SYNCED);
    assert_null(w.error_message);
    assert_int_equal(w.sync_since_ms, 80);

    /* Same nonce, new names: respond. Names are recorded; the ACK counts. */
    assert_int_equal(feed(&w, mkreq("v3", "n3", NULL, abc), 90), WF_XDS_REQ_RESOURCE_CHANGE);
    assert_int_equal(w.names.n, 3);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_SYNCED);
    assert_int_equal(w.sync_since_ms, 80);

    /* A request without a nonce (new stream) starts over. */
    assert_int_equal(feed(&w, mkreq("v3", NULL, NULL, NULL), 100), WF_XDS_REQ_INITIAL);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_NOT_SENT);
    assert_int_equal(w.names.n, 0);
    assert_string_equal(wf_xds_req_kind_name(WF_XDS_REQ_STALE_NONCE), "STALE_NONCE");
    wf_xds_watch_free(&w);
}

static void test_sync_names(void **state)
{
    assert_string_equal(wf_xds_sync_name(WF_XDS_SYNC_NOT_SENT), "NOT SENT");
    assert_string_equal(wf_xds_sync_name(WF_XDS_SYNC_SYNCED), "SYNCED");
    assert_string_equal(wf_xds_sync_name(WF_XDS_SYNC_STALE), "STALE");
    assert_string_equal(wf_xds_sync_name(WF_XDS_SYNC_ERROR), "ERROR");

    /* An unwatched type with a nonce is a reconnect to a server that never saw the type. */
    wf_xds_watch w = {0};
    assert_int_equal(feed(&w, mkreq("v9", "old", NULL, NULL), 1), WF_XDS_REQ_INITIAL);
    assert_int_equal(feed(&w, mkreq("v9", "old", NULL, NULL), 2), WF_XDS_REQ_STALE_NONCE);
    wf_xds_watch_free(&w);
}

/* ---- ACK fast path and interned names ------------------------------------------------------ */

#define EDS_URL "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

static wf_xds_req_peek peek(const char *text)
{
    wf_xds_req_peek p;
    wf_xds_request_peek(text, strlen(text), &p);
    return p;
}

static void test_request_peek(void **state)
{
    const char *ack = "{\"version_info\":\"v1\",\"resource_names\":[\"a\",\"b\\\"]\"],"
                      "\"type_url\":\"" EDS_URL "\",\"response_nonce\":\"n1\"}";
    wf_xds_req_peek p = peek(ack);
    assert_true(p.simple);
    assert_true(p.names_ok);
    assert_int_equal(wf_xds_type_from_url_n(p.type_url, p.type_url_len), WF_XDS_EDS);
    assert_int_equal(p.nonce_len, 2);
    assert_memory_equal(p.nonce, "n1", 2);
    assert_int_equal(p.version_len, 2);
    /* camelCase, other whitespace and member order: the same names bytes, the same key */
    wf_xds_req_peek q =
        peek(" { \"responseNonce\" : \"n1\" ,\n\"resourceNames\":[\"a\",\"b\\\"]\"],"
             "\"typeUrl\":\"" EDS_URL "\"}\n");
    assert_true(q.simple);
    assert_int_equal(q.names_key, p.names_key);
    assert_null(q.version);
    /* other names: another key */
    assert_int_not_equal(peek("{\"resource_names\":[\"a\",\"c\"],\"type_url\":\"x\","
                              "\"response_nonce\":\"n\"}")
                             .names_key,
                         p.names_key);
    /* not for the fast path: a node, an error_detail, an unknown field, an escape, a repeat */
    assert_false(
        peek("{\"node\":{\"id\":\"x\"},\"type_url\":\"t\",\"response_nonce\":\"n\"}").simple);
    wf_xds_req_peek nack = peek("{\"type_url\":\"t\",\"response_nonce\":\"n\","
                                "\"error_detail\":{\"code\":13,\"message\":\"}\"}}");
    assert_false(nack.simple);
    assert_true(nack.names_ok);
    assert_false(peek("{\"type_url\":\"t\",\"response_nonce\":\"n\",\"x\":1}").simple);
    assert_false(peek("{\"type_url\":\"t\\u0041\",\"response_nonce\":\"n\"}").simple);
    assert_false(peek("{\"type_url\":\"t\",\"typeUrl\":\"t\",\"response_nonce\":\"n\"}").simple);
    assert_false(peek("{\"type_url\":\"t\",\"response_nonce\":\"\"}").simple);
    assert_false(peek("{\"type_url\":\"t\",\"response_nonce\":7}").simple);
    /* not scanned: the decoder reports these */
    assert_false(peek("{\"type_url\":\"t\",\"response_nonce\":\"n\",}").names_ok);
    assert_false(peek("{\"type_url\":\"t\" \"response_nonce\":\"n\"}").names_ok);
    assert_false(peek("{\"resource_names\":[\"a\"").names_ok);
    assert_false(peek("{\"type_url\":\"t\"} x").names_ok);
    assert_false(peek("[]").names_ok);
    assert_false(peek("{\"resource_names\":[],\"resourceNames\":[]}").names_ok);
    assert_true(peek("{}").names_ok);
    assert_int_equal(wf_xds_type_from_url_n("type.googleapis.com/x", 21), -1);
}

/* The fast path records an ACK as wf_xds_watch_on_request does, and declines anything else. */
static void test_watch_fast_ack(void **state)
{
    const char *names[] = {"a", "b", NULL};
    const char *first = "{\"resource_names\":[\"a\",\"b\"],\"type_url\":\"" EDS_URL "\"}";
    wf_xds_watch w = {0};
    wf_xds_req_peek p = peek(first);
    assert_false(p.simple); /* no nonce: INITIAL, decoded */
    assert_int_equal(feed(&w, mkreq(NULL, NULL, NULL, names), 10), WF_XDS_REQ_INITIAL);
    wf_xds_watch_set_names_key(&w, p.names_ok, p.names_key);
    assert_int_equal(wf_xds_watch_on_sent(&w, "v1", "n1", 20), WF_XDS_OK);

    /* stale nonce, other names, a NACK: declined, nothing changes */
    wf_xds_req_peek stale = peek("{\"resource_names\":[\"a\",\"b\"],\"type_url\":\"t\","
                                 "\"response_nonce\":\"n0\"}");
    assert_true(stale.simple);
    assert_int_equal(wf_xds_watch_ack_peeked(&w, &stale, 30), 0);
    wf_xds_req_peek other = peek("{\"resource_names\":[\"b\",\"a\"],\"type_url\":\"t\","
                                 "\"response_nonce\":\"n1\"}");
    assert_true(other.simple);
    assert_int_equal(wf_xds_watch_ack_peeked(&w, &other, 30), 0);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_STALE);

    wf_xds_req_peek ack = peek("{\"version_info\":\"v1\",\"resource_names\":[\"a\",\"b\"],"
                               "\"type_url\":\"" EDS_URL "\",\"response_nonce\":\"n1\"}");
    assert_int_equal(wf_xds_watch_ack_peeked(&w, &ack, 40), 1);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_SYNCED);
    assert_string_equal(w.version_acked, "v1");
    assert_string_equal(w.nonce_acked, "n1");
    assert_int_equal(w.sync_since_ms, 40);
    assert_int_equal(w.names.n, 2);

    /* a NACK (decoded) sets ERROR; the next fast ACK clears it */
    assert_int_equal(wf_xds_watch_on_sent(&w, "v2", "n2", 50), WF_XDS_OK);
    assert_int_equal(feed(&w, mkreq("v1", "n2", "bad", names), 60), WF_XDS_REQ_NACK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_ERROR);
    assert_int_equal(wf_xds_watch_on_sent(&w, "v3", "n3", 70), WF_XDS_OK);
    ack = peek("{\"resource_names\":[\"a\",\"b\"],\"type_url\":\"" EDS_URL "\","
               "\"response_nonce\":\"n3\",\"version_info\":\"v3\"}");
    assert_int_equal(wf_xds_watch_ack_peeked(&w, &ack, 80), 1);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_SYNCED);
    assert_null(w.error_message);
    assert_false(w.nacked);

    /* names recorded by a decoded request forget the key until the caller sets it again */
    assert_int_equal(wf_xds_watch_on_sent(&w, "v4", "n4", 90), WF_XDS_OK);
    assert_int_equal(feed(&w, mkreq("v3", "n4", NULL, names), 95), WF_XDS_REQ_ACK);
    assert_false(w.has_names_key);
    assert_int_equal(wf_xds_watch_ack_peeked(&w, &ack, 99), 0);
    wf_xds_watch_free(&w);
}

static void test_name_pool(void **state)
{
    wf_xds_name_pool *pool = wf_xds_name_pool_new();
    assert_non_null(pool);
    const char *ab[] = {"a", "b", NULL}, *abc[] = {"a", "b", "c", NULL};
    wf_xds_watch w1 = {.pool = pool}, w2 = {.pool = pool}, w3 = {0};
    assert_int_equal(feed(&w1, mkreq(NULL, NULL, NULL, ab), 1), WF_XDS_REQ_INITIAL);
    assert_int_equal(feed(&w2, mkreq(NULL, NULL, NULL, ab), 1), WF_XDS_REQ_INITIAL);
    assert_int_equal(feed(&w3, mkreq(NULL, NULL, NULL, ab), 1), WF_XDS_REQ_INITIAL);
    assert_ptr_equal(w1.names.v, w2.names.v); /* one copy */
    assert_ptr_not_equal(w1.names.v, w3.names.v);
    assert_int_equal(wf_xds_name_pool_count(pool), 1);
    assert_string_equal(w2.names.v[1], "b");
    wf_xds_names n = {(char **)ab, 2};
    assert_true(w1.names_hash == wf_xds_names_hash(&n));
    assert_true(w3.names_hash == w1.names_hash);

    /* new names for w2: a second list; the first stays while w1 holds it */
    assert_int_equal(wf_xds_watch_on_sent(&w2, "v1", "n1", 2), WF_XDS_OK);
    assert_int_equal(feed(&w2, mkreq("v1", "n1", NULL, abc), 3), WF_XDS_REQ_RESOURCE_CHANGE);
    assert_int_equal(w2.names.n, 3);
    assert_int_equal(wf_xds_name_pool_count(pool), 2);
    wf_xds_names same = {w2.names.v, w2.names.n};
    assert_int_equal(wf_xds_watch_set_names(&w2, &same), WF_XDS_OK); /* its own: no-op */
    assert_int_equal(wf_xds_watch_set_names(&w1, &same), WF_XDS_OK);
    assert_ptr_equal(w1.names.v, w2.names.v);
    assert_int_equal(wf_xds_name_pool_count(pool), 1);
    wf_xds_names none = {0};
    assert_int_equal(wf_xds_watch_set_names(&w1, &none), WF_XDS_OK);
    assert_int_equal(w1.names.n, 0);

    /* watches may outlive the pool; the pool pointer survives wf_xds_watch_free */
    wf_xds_watch_free(&w1);
    assert_ptr_equal(w1.pool, pool);
    wf_xds_name_pool_free(pool);
    assert_string_equal(w2.names.v[2], "c");
    w2.pool = NULL;
    wf_xds_watch_free(&w2);
    wf_xds_watch_free(&w3);
    wf_xds_name_pool_free(NULL);
}

/* ---- client bookkeeping ------------------------------------------------------------------------
 */

static wf_xds_response mkresp(const char *version, const char *nonce)
{
    wf_xds_response r = {0};
    r.type_url = strdup(WF_XDS_TYPE_CLUSTER);
    r.version_info = strdup(version);
    r.nonce = strdup(nonce);
    return r;
}

static void test_client_ack_nack(void **state)
{
    wf_xds_client_type c;
    wf_xds_request q;
    assert_int_equal(wf_xds_client_init(&c, WF_XDS_TYPE_CLUSTER), WF_XDS_OK);
    wf_xds_node node = {.id = "p.ns", .cluster = "p.ns"};
    assert_int_equal(wf_xds_client_request(&c, &node, &q), WF_XDS_OK);
    json_t *j = wf_xds_request_encode(&q);
    json_t *want = parse("{\"type_url\":\"" WF_XDS_TYPE_CLUSTER
                         "\",\"node\":{\"id\":\"p.ns\",\"cluster\":\"p.ns\"}}");
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    wf_xds_request_free(&q);

    wf_xds_response r1 = mkresp("v1", "n1"), r2 = mkresp("v2", "n2");
    assert_int_equal(wf_xds_client_ack(&c, &r1, &q), WF_XDS_OK);
    assert_string_equal(q.version_info, "v1");
    assert_string_equal(q.response_nonce, "n1");
    assert_false(q.has_error);
    assert_false(q.has_node);
    wf_xds_request_free(&q);

    assert_int_equal(wf_xds_client_nack(&c, &r2, "cluster x: bad lb", &q), WF_XDS_OK);
    assert_string_equal(q.version_info, "v1");
    assert_string_equal(q.response_nonce, "n2");
    assert_true(q.has_error);
    assert_int_equal(q.error_detail.code, 13);
    assert_string_equal(q.error_detail.message, "cluster x: bad lb");
    wf_xds_request_free(&q);
    assert_string_equal(c.version, "v1");

    /* The next request (e.g. a names change) echoes n2 and carries no error. */
    const char *names[] = {"x"};
    wf_xds_names nm = {(char **)names, 1};
    assert_int_equal(wf_xds_client_set_names(&c, &nm), WF_XDS_OK);
    assert_int_equal(wf_xds_client_request(&c, NULL, &q), WF_XDS_OK);
    assert_string_equal(q.response_nonce, "n2");
    assert_false(q.has_error);
    assert_string_equal(q.resource_names.v[0], "x");
    wf_xds_request_free(&q);

    /* New stream: no nonce, accepted version kept. */
    wf_xds_client_stream_reset(&c);
    assert_int_equal(wf_xds_client_request(&c, NULL, &q), WF_XDS_OK);
    assert_null(q.response_nonce);
    assert_string_equal(q.version_info, "v1");
    wf_xds_request_free(&q);
    wf_xds_response_free(&r1);
    wf_xds_response_free(&r2);
    wf_xds_client_free(&c);
}

/* Both ends together: the server's view follows the client's ACK/NACK. */
static void test_client_server_together(void **state)
{
    wf_xds_client_type c;
    wf_xds_watch w = {0};
    wf_xds_request q;
    wf_xds_req_kind k;
    assert_int_equal(wf_xds_client_init(&c, WF_XDS_TYPE_CLUSTER), WF_XDS_OK);
    assert_int_equal(wf_xds_client_request(&c, NULL, &q), WF_XDS_OK);
    assert_int_equal(wf_xds_watch_on_request(&w, &q, 0, &k), WF_XDS_OK);
    assert_int_equal(k, WF_XDS_REQ_INITIAL);
    wf_xds_request_free(&q);

    wf_xds_response r = mkresp("v1", "n1");
    assert_int_equal(wf_xds_watch_on_sent(&w, "v1", "n1", 1), WF_XDS_OK);
    assert_int_equal(wf_xds_client_nack(&c, &r, "boom", &q), WF_XDS_OK);
    assert_int_equal(wf_xds_watch_on_request(&w, &q, 2, &k), WF_XDS_OK);
    assert_int_equal(k, WF_XDS_REQ_NACK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_ERROR);
    assert_null(w.version_acked);
    wf_xds_request_free(&q);
    wf_xds_response_free(&r);

    r = mkresp("v2", "n2");
    assert_int_equal(wf_xds_watch_on_sent(&w, "v2", "n2", 3), WF_XDS_OK);
    assert_int_equal(wf_xds_client_ack(&c, &r, &q), WF_XDS_OK);
    assert_int_equal(wf_xds_watch_on_request(&w, &q, 4, &k), WF_XDS_OK);
    assert_int_equal(k, WF_XDS_REQ_ACK);
    assert_int_equal(wf_xds_watch_sync(&w), WF_XDS_SYNC_SYNCED);
    assert_string_equal(w.version_acked, "v2");
    wf_xds_request_free(&q);
    wf_xds_response_free(&r);
    wf_xds_watch_free(&w);
    wf_xds_client_free(&c);
}

/* ---- delta client (Envoy's DeltaSubscriptionState) ---- */

static wf_xds_names names_of(const char **v, size_t n)
{
    return (wf_xds_names){(char **)v, n};
}

/* Legacy wildcard: an empty subscribe on every stream's first request, with the versions
 * held; ACK / NACK carry the nonce and no subscription change. */
static void test_delta_client_wildcard(void **state)
{
    wf_xds_delta_client_type c;
    wf_xds_delta_request q;
    wf_xds_node node = {.id = "p.ns"};
    assert_int_equal(wf_xds_delta_client_init(&c, WF_XDS_TYPE_CLUSTER, true), WF_XDS_OK);
    assert_true(wf_xds_delta_client_pending(&c));
    assert_int_equal(wf_xds_delta_client_request(&c, &node, NULL, NULL, NULL, &q), WF_XDS_OK);
    assert_string_equal(q.type_url, WF_XDS_TYPE_CLUSTER);
    assert_true(q.has_node);
    assert_string_equal(q.node.id, "p.ns");
    assert_int_equal(q.subscribe.n + q.unsubscribe.n, 0);
    assert_null(q.response_nonce);
    assert_null(q.initial_resource_versions);
    wf_xds_delta_request_free(&q);
    assert_false(wf_xds_delta_client_pending(&c));

    assert_int_equal(wf_xds_delta_client_request(&c, NULL, NULL, "n1", NULL, &q), WF_XDS_OK);
    assert_string_equal(q.response_nonce, "n1");
    assert_false(q.has_error);
    assert_false(q.has_node);
    wf_xds_delta_request_free(&q);
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, NULL, "n2", "bad", &q), WF_XDS_OK);
    assert_true(q.has_error);
    assert_int_equal(q.error_detail.code, 13);
    assert_string_equal(q.error_detail.message, "bad");
    json_t *enc = wf_xds_delta_request_encode(&q);
    assert_string_equal(json_string_value(json_object_get(enc, "response_nonce")), "n2");
    assert_null(json_object_get(enc, "resource_names_subscribe"));
    json_decref(enc);
    wf_xds_delta_request_free(&q);
    assert_int_equal(wf_xds_delta_client_accepted(&c, "sys-1"), WF_XDS_OK);
    assert_string_equal(c.system_version, "sys-1");

    /* a new stream: pending again, versions held sent once */
    wf_xds_delta_client_stream_reset(&c);
    assert_true(wf_xds_delta_client_pending(&c));
    json_t *held = json_pack("{s:s}", "a", "v1");
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, held, NULL, NULL, &q), WF_XDS_OK);
    assert_ptr_equal(q.initial_resource_versions, held);
    assert_int_equal(q.subscribe.n, 0);
    wf_xds_delta_request_free(&q);
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, held, "n3", NULL, &q), WF_XDS_OK);
    assert_null(q.initial_resource_versions); /* only on the first request */
    wf_xds_delta_request_free(&q);
    json_decref(held);
    wf_xds_delta_client_free(&c);
}

/* By name (EDS): nothing due without names; subscribe / unsubscribe carry the differences;
 * a new stream subscribes everything again. */
static void test_delta_client_names(void **state)
{
    wf_xds_delta_client_type c;
    wf_xds_delta_request q;
    assert_int_equal(wf_xds_delta_client_init(&c, WF_XDS_TYPE_ENDPOINT, false), WF_XDS_OK);
    assert_false(wf_xds_delta_client_pending(&c));
    const char *ab[] = {"a", "b"}, *bc[] = {"b", "c", "c"};
    wf_xds_names n1 = names_of(ab, 2), n2 = names_of(bc, 3);
    assert_int_equal(wf_xds_delta_client_set_names(&c, &n1), WF_XDS_OK);
    assert_true(wf_xds_delta_client_pending(&c));
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, NULL, NULL, NULL, &q), WF_XDS_OK);
    assert_int_equal(q.subscribe.n, 2);
    assert_string_equal(q.subscribe.v[0], "a");
    assert_string_equal(q.subscribe.v[1], "b");
    wf_xds_delta_request_free(&q);
    assert_false(wf_xds_delta_client_pending(&c));

    assert_int_equal(wf_xds_delta_client_set_names(&c, &n2), WF_XDS_OK);
    assert_true(wf_xds_delta_client_pending(&c));
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, NULL, NULL, NULL, &q), WF_XDS_OK);
    assert_int_equal(q.subscribe.n, 1);
    assert_string_equal(q.subscribe.v[0], "c");
    assert_int_equal(q.unsubscribe.n, 1);
    assert_string_equal(q.unsubscribe.v[0], "a");
    assert_null(q.response_nonce);
    wf_xds_delta_request_free(&q);
    assert_false(wf_xds_delta_client_pending(&c));

    /* everything unsubscribed: a request with the unsubscriptions, not a wildcard */
    wf_xds_names none = {0};
    assert_int_equal(wf_xds_delta_client_set_names(&c, &none), WF_XDS_OK);
    assert_true(wf_xds_delta_client_pending(&c));
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, NULL, NULL, NULL, &q), WF_XDS_OK);
    assert_int_equal(q.subscribe.n, 0);
    assert_int_equal(q.unsubscribe.n, 2);
    wf_xds_delta_request_free(&q);
    /* and a new stream with no names sends nothing */
    wf_xds_delta_client_stream_reset(&c);
    assert_false(wf_xds_delta_client_pending(&c));
    assert_int_equal(wf_xds_delta_client_set_names(&c, &n1), WF_XDS_OK);
    wf_xds_delta_client_stream_reset(&c);
    assert_int_equal(wf_xds_delta_client_request(&c, NULL, NULL, NULL, NULL, &q), WF_XDS_OK);
    assert_int_equal(q.subscribe.n, 2);
    assert_int_equal(q.unsubscribe.n, 0);
    wf_xds_delta_request_free(&q);
    wf_xds_delta_client_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_urls),
        cmocka_unit_test(test_request_round_trip),
        cmocka_unit_test(test_request_camel_case),
        cmocka_unit_test(test_request_bad_input),
        cmocka_unit_test(test_response_round_trip),
        cmocka_unit_test(test_response_bad_input),
        cmocka_unit_test(test_delta_request),
        cmocka_unit_test(test_delta_response),
        cmocka_unit_test(test_server_ack_nack_stale),
        cmocka_unit_test(test_sync_names),
        cmocka_unit_test(test_request_peek),
        cmocka_unit_test(test_watch_fast_ack),
        cmocka_unit_test(test_name_pool),
        cmocka_unit_test(test_client_ack_nack),
        cmocka_unit_test(test_client_server_together),
        cmocka_unit_test(test_delta_client_wildcard),
        cmocka_unit_test(test_delta_client_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
