/*
 * test_ui_proxies.c - pilot/ui_proxies and what it reads: the xDS server's per-proxy history
 * ring (bounded to WF_ADS_HISTORY, oldest first, details cut, taken over by a reconnecting
 * proxy), the CA server's table of issued certificates (per identity and IP, bounded, the
 * caller's IP preferred), and the /ui/api/proxies answer for a listed connection (proxy-status
 * columns, identity, certificate, history, namespace filter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pilot/ads_internal.h"
#include "pilot/ca_server.h"
#include "pilot/ui_proxies.h"

static const wf_ca_token_key KEY = {{1}};

static void test_history_ring_bounds(void **state)
{
    (void)state;
    wf_ads_conn *c = calloc(1, sizeof *c);
    assert_non_null(c);
    assert_int_equal(wf_ads_history_count(c), 0);
    assert_null(wf_ads_history_at(c, 0));
    for (int i = 0; i < 100; i++)
        wf_ads_history_add(c, i % 2 ? WF_ADS_EV_NACK : WF_ADS_EV_CONNECTED, "event %d", i);
    assert_int_equal(wf_ads_history_count(c), WF_ADS_HISTORY);
    const wf_ads_event *first = wf_ads_history_at(c, 0);
    const wf_ads_event *last = wf_ads_history_at(c, WF_ADS_HISTORY - 1);
    char want[32];
    snprintf(want, sizeof want, "event %d", 100 - WF_ADS_HISTORY);
    assert_string_equal(first->detail, want);
    assert_string_equal(last->detail, "event 99");
    assert_string_equal(wf_ads_event_name(last->kind), "nack");
    assert_null(wf_ads_history_at(c, WF_ADS_HISTORY));
    for (size_t i = 1; i < WF_ADS_HISTORY; i++) /* oldest first */
        assert_true(wf_ads_history_at(c, i)->t_ms >= wf_ads_history_at(c, i - 1)->t_ms);
    /* a detail is cut at WF_ADS_HISTORY_DETAIL bytes; none is fine */
    char big[4 * WF_ADS_HISTORY_DETAIL];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    wf_ads_history_add(c, WF_ADS_EV_DISCONNECTED, "%s", big);
    wf_ads_history_add(c, WF_ADS_EV_ACK, NULL);
    assert_int_equal(strlen(wf_ads_history_at(c, WF_ADS_HISTORY - 2)->detail),
                     WF_ADS_HISTORY_DETAIL - 1);
    assert_null(wf_ads_history_at(c, WF_ADS_HISTORY - 1)->detail);
    /* the first ACK of a type is noted once per stream */
    wf_ads_note_ack(c, WF_XDS_CDS);
    wf_ads_note_ack(c, WF_XDS_CDS);
    wf_ads_note_ack(c, WF_XDS_LDS);
    size_t n = wf_ads_history_count(c);
    assert_string_equal(wf_ads_history_at(c, n - 2)->detail, "CDS");
    assert_string_equal(wf_ads_history_at(c, n - 1)->detail, "LDS");
    assert_string_equal(wf_ads_event_name(wf_ads_history_at(c, n - 1)->kind), "ack");
    assert_string_equal(wf_ads_history_at(c, n - 3)->detail ? "x" : "none", "none");
    wf_ads_conn_free(c);
}

static void test_issued_table(void **state)
{
    (void)state;
    wf_ca_server *s = wf_ca_server_new(&KEY, NULL);
    assert_non_null(s);
    const char *id = "spiffe://cluster.local/ns/shop/sa/catalog";
    assert_null(wf_ca_server_issued(s, id, NULL));
    wf_ca_chain ch = {.not_before_s = 100, .not_after_s = 200};
    snprintf(ch.serial, sizeof ch.serial, "aa01");
    wf_ca_server_note_issued(s, id, "10.0.0.1:40000", &ch, 150);
    snprintf(ch.serial, sizeof ch.serial, "bb02");
    wf_ca_server_note_issued(s, id, "[fd00::2]:40000", &ch, 160);
    const wf_ca_issued *e = wf_ca_server_issued(s, id, "10.0.0.1");
    assert_non_null(e);
    assert_string_equal(e->serial, "aa01"); /* the one asked for from that IP */
    assert_string_equal(e->ip, "10.0.0.1");
    assert_int_equal(e->not_before_s, 100);
    assert_int_equal(e->not_after_s, 200);
    assert_int_equal(e->issued_s, 150);
    assert_string_equal(wf_ca_server_issued(s, id, "fd00::2")->serial, "bb02");
    assert_string_equal(wf_ca_server_issued(s, id, "10.9.9.9")->serial, "bb02"); /* newest */
    assert_string_equal(wf_ca_server_issued(s, id, NULL)->serial, "bb02");
    /* the same identity and IP again: replaced, not added */
    snprintf(ch.serial, sizeof ch.serial, "cc03");
    wf_ca_server_note_issued(s, id, "10.0.0.1:40001", &ch, 170);
    assert_string_equal(wf_ca_server_issued(s, id, "10.0.0.1")->serial, "cc03");
    /* bounded: the oldest go first */
    char other[128];
    for (int i = 0; i < WF_CA_ISSUED_MAX; i++) {
        snprintf(other, sizeof other, "spiffe://cluster.local/ns/n%d/sa/default", i);
        wf_ca_server_note_issued(s, other, "10.1.0.1:1", &ch, 200 + i);
    }
    assert_null(wf_ca_server_issued(s, id, NULL));
    assert_non_null(wf_ca_server_issued(s, "spiffe://cluster.local/ns/n0/sa/default", NULL));
    wf_ca_server_free(s);
}

/* A connection listed in a (real) xDS server, as ads_auth.c lists one. */
static wf_ads_conn *listed(wf_ads *a, const char *pod, const char *ns, const char *ip)
{
    wf_ads_conn *c = calloc(1, sizeof *c);
    char id[128];
    snprintf(id, sizeof id, "%s.%s", pod, ns);
    c->ads = a;
    for (int t = 0; t < WF_XDS_NTYPES; t++)
        c->types[t].w.pool = a->names;
    c->has_proxy = true;
    c->proxy.id = strdup(id);
    c->proxy.pod = strdup(pod);
    c->proxy.ns = strdup(ns);
    c->proxy.ip = strdup(ip);
    c->proxy.version = strdup("1.24.0");
    c->proxy.labels = json_object();
    snprintf(id + strlen(id), sizeof id - strlen(id), "-%d", 1);
    c->id = strdup(id);
    c->connected = true;
    c->connected_at_ms = wf_ads_now_ms();
    snprintf(c->address, sizeof c->address, "%s:45000", ip);
    assert_int_equal(wf_ads_list_add(a, c), 0);
    return c;
}

static json_t *proxy_of(json_t *ans, const char *id)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(ans, "proxies"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "proxy_id")), id) == 0)
            return p;
    }
    return NULL;
}

static void test_proxies_answer(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wf_ads *a = NULL;
    char err[256];
    wf_ads_opts o = {.port = 0};
    assert_int_equal(wf_ads_start(&loop, &o, &a, err, sizeof err), 0);
    wf_ca_server *cas = wf_ca_server_new(&KEY, "corp.example");
    wf_ads_conn *c = listed(a, "catalog-v1-abc", "shop", "10.0.0.7");
    c->proxy.workload = strdup("catalog-v1");
    c->proxy.service_account = strdup("catalog");
    c->types[WF_XDS_CDS].w.watched = true; /* watched, nothing sent yet */
    wf_ads_history_add(c, WF_ADS_EV_CONNECTED, "%s from %s", c->id, c->address);
    wf_ads_history_add(c, WF_ADS_EV_NACK, "LDS: 13: bad listener");
    wf_ca_chain ch = {.not_before_s = 1000, .not_after_s = 2000};
    snprintf(ch.serial, sizeof ch.serial, "0123ab");
    wf_ca_server_note_issued(cas, "spiffe://corp.example/ns/shop/sa/catalog", "10.0.0.7:5", &ch,
                             1500);
    wf_ads_conn *g = listed(a, "gw", "istio-system", "10.0.0.9");
    g->proxy.kind = WF_PROXY_ROUTER;
    g->connected = false;
    g->disconnected_at_ms = wf_ads_now_ms();

    json_t *ans = wf_ui_proxies_json(a, cas, NULL);
    assert_int_equal(json_array_size(json_object_get(ans, "proxies")), 2);
    json_t *p = proxy_of(ans, "catalog-v1-abc.shop");
    assert_non_null(p);
    assert_string_equal(json_string_value(json_object_get(p, "namespace")), "shop");
    assert_string_equal(json_string_value(json_object_get(p, "pod")), "catalog-v1-abc");
    assert_string_equal(json_string_value(json_object_get(p, "workload")), "catalog-v1");
    assert_string_equal(json_string_value(json_object_get(p, "type")), "sidecar");
    assert_string_equal(json_string_value(json_object_get(p, "ip")), "10.0.0.7");
    assert_string_equal(json_string_value(json_object_get(p, "identity")),
                        "spiffe://corp.example/ns/shop/sa/catalog");
    assert_true(json_is_true(json_object_get(p, "connected")));
    assert_string_equal(json_string_value(json_object_get(p, "istio_version")), "1.24.0");
    json_t *sync = json_object_get(p, "sync");
    assert_string_equal(json_string_value(json_object_get(sync, "CDS")), "NOT SENT");
    assert_string_equal(json_string_value(json_object_get(sync, "LDS")), "IGNORED");
    assert_string_equal(json_string_value(json_object_get(sync, "ECDS")), "IGNORED");
    json_t *cert = json_object_get(p, "certificate");
    assert_string_equal(json_string_value(json_object_get(cert, "serial")), "0123ab");
    assert_int_equal(json_integer_value(json_object_get(cert, "not_before_ms")), 1000000);
    assert_int_equal(json_integer_value(json_object_get(cert, "not_after_ms")), 2000000);
    assert_int_equal(json_integer_value(json_object_get(cert, "issued_ms")), 1500000);
    json_t *h = json_object_get(p, "history");
    assert_int_equal(json_array_size(h), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "event")),
                        "connected");
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 1), "detail")),
                        "LDS: 13: bad listener");
    json_t *gw = proxy_of(ans, "gw.istio-system");
    assert_string_equal(json_string_value(json_object_get(gw, "type")), "router");
    assert_true(json_is_false(json_object_get(gw, "connected")));
    assert_non_null(json_object_get(gw, "disconnected_at_ms"));
    assert_true(json_is_null(json_object_get(gw, "certificate")));
    assert_string_equal(json_string_value(json_object_get(gw, "identity")),
                        "spiffe://corp.example/ns/istio-system/sa/default");
    json_decref(ans);

    ans = wf_ui_proxies_json(a, cas, "istio-system");
    assert_int_equal(json_array_size(json_object_get(ans, "proxies")), 1);
    json_decref(ans);

    /* the proxy reconnects: its new entry takes over the retained one's history */
    c->connected = false;
    wf_ads_history_add(c, WF_ADS_EV_DISCONNECTED, "stream reset");
    wf_ads_conn *c2 = listed(a, "catalog-v1-abc", "shop", "10.0.0.7");
    wf_ads_history_inherit(a, c2);
    wf_ads_drop_retained(a, c2->proxy.id);
    assert_int_equal(wf_ads_history_count(c2), 3);
    assert_string_equal(wf_ads_history_at(c2, 2)->detail, "stream reset");
    assert_int_equal(wf_ads_conn_count(a), 2);

    wf_ca_server_free(cas);
    wf_ads_close(a);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Three catalog pods of one service account all ask the CA from 127.0.0.1 (the local mesh's
 * loopback pods): the CA keeps one record per identity and IP, so pilot cannot tell which
 * certificate each holds: "certificate" is null with a note naming the count, the identity,
 * the IP and the command that shows it; a proxy alone with its identity keeps its record. */
static void test_shared_identity_certificate_is_null_with_note(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    wf_ads *a = NULL;
    char err[256];
    wf_ads_opts o = {.port = 0};
    assert_int_equal(wf_ads_start(&loop, &o, &a, err, sizeof err), 0);
    wf_ca_server *cas = wf_ca_server_new(&KEY, "cluster.local");
    const char *pods[] = {"catalog-a", "catalog-b", "catalog-c"};
    const char *ips[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4"};
    wf_ca_chain ch = {.not_before_s = 1000, .not_after_s = 2000};
    for (int i = 0; i < 3; i++) {
        wf_ads_conn *c = listed(a, pods[i], "istioinaction", ips[i]);
        c->proxy.service_account = strdup("catalog");
        snprintf(c->address, sizeof c->address, "127.0.0.1:%d", 40000 + i);
        snprintf(ch.serial, sizeof ch.serial, "0%d", i + 1);
        wf_ca_server_note_issued(cas, "spiffe://cluster.local/ns/istioinaction/sa/catalog",
                                 "127.0.0.1:5", &ch, 1500 + i);
    }
    wf_ads_conn *w = listed(a, "webapp-a", "istioinaction", "127.0.0.5");
    w->proxy.service_account = strdup("webapp");
    snprintf(w->address, sizeof w->address, "127.0.0.1:40010");
    snprintf(ch.serial, sizeof ch.serial, "aa");
    wf_ca_server_note_issued(cas, "spiffe://cluster.local/ns/istioinaction/sa/webapp",
                             "127.0.0.1:6", &ch, 1600);

    json_t *ans = wf_ui_proxies_json(a, cas, NULL);
    for (int i = 0; i < 3; i++) {
        char id[64];
        snprintf(id, sizeof id, "%s.istioinaction", pods[i]);
        json_t *p = proxy_of(ans, id);
        assert_non_null(p);
        assert_true(json_is_null(json_object_get(p, "certificate")));
        const char *note = json_string_value(json_object_get(p, "certificate_note"));
        assert_non_null(note);
        assert_non_null(strstr(note, "3 proxies share "
                                     "spiffe://cluster.local/ns/istioinaction/sa/catalog from "
                                     "127.0.0.1: pilot cannot tell which certificate each holds"));
        char cmd[80];
        snprintf(cmd, sizeof cmd, "weftctl proxy-config secret %s shows it", pods[i]);
        assert_non_null(strstr(note, cmd));
    }
    json_t *wp = proxy_of(ans, "webapp-a.istioinaction");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(wp, "certificate"), "serial")), "aa");
    assert_null(json_object_get(wp, "certificate_note"));
    json_decref(ans);
    wf_ca_server_free(cas);
    wf_ads_close(a);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_ring_bounds),
        cmocka_unit_test(test_issued_table),
        cmocka_unit_test(test_proxies_answer),
        cmocka_unit_test(test_shared_identity_certificate_is_null_with_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
