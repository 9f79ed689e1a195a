/*
 * test_kube_writer.c - weft-pilot's Kubernetes write-back decisions (pilot/kube_writer_plan.h)
 * and its reconciler (pilot/kube_writer_sync.h) with a fake request function: which namespaces
 * get the root ConfigMap, create / update / nothing, the webhook JSON patches, one write per
 * change, retries with back-off after a 409 or the API server away, logging once per cause.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/base64.h"
#include "core/log.h"
#include "pilot/kube_writer_plan.h"
#include "pilot/kube_writer_sync.h"

#define ROOT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

/* ---- which namespaces ----------------------------------------------------------------------- */

static wf_store *store_of(const char *yaml)
{
    wf_store *s = wf_store_new();
    assert_non_null(s);
    assert_int_equal(wf_store_load_buffer(s, "ns.yaml", yaml, strlen(yaml), false), 0);
    assert_int_equal(wf_store_finalize(s, "default", false), 0);
    return s;
}

static const char *NAMESPACES =
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n---\n"
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system}\n---\n"
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-public}\n---\n"
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-node-lease}\n---\n"
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: local-path-storage}\n---\n"
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {mesh: weft}}\n---\n"
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: gone}\nstatus: {phase: Terminating}\n---\n"
    "apiVersion: v1\nkind: Namespace\n"
    "metadata: {name: going, deletionTimestamp: '2026-01-01T00:00:00Z'}\n---\n"
    "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: no-such-ns}\n"
    "spec: {ports: [{port: 80}]}\n";

static char *keys(const json_t *o)
{
    static char buf[512];
    buf[0] = '\0';
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        strcat(buf, buf[0] ? "," : "");
        strcat(buf, k);
    }
    return buf;
}

static void wanted_namespaces(void **state)
{
    (void)state;
    wf_store *s = store_of(NAMESPACES);
    wf_meshcfg *m = wf_meshcfg_new_default();
    json_t *ns = wf_kw_wanted_namespaces(s, m);
    /* kube-system kept (istiod: for ztunnel); the three system ones, terminating and deleted
     * namespaces out; a namespace only a Service names is not a Namespace object */
    assert_string_equal(keys(ns), "default,kube-system,team-a");
    json_decref(ns);
    const char *sel = "discoverySelectors:\n- matchLabels: {mesh: weft}\n"
                      "- matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, "
                      "values: [nothing]}]\n";
    const char *err = NULL;
    assert_int_equal(wf_meshcfg_load_text(m, "mesh", sel, strlen(sel), &err), 0);
    ns = wf_kw_wanted_namespaces(s, m);
    assert_string_equal(keys(ns), "team-a");
    json_decref(ns);
    assert_true(wf_kw_ns_ignored("kube-public") && !wf_kw_ns_ignored("kube-system"));
    wf_meshcfg_free(m);
    wf_store_free(s);
}

/* ---- what to write -------------------------------------------------------------------------- */

static json_t *cm(const char *ns, const char *pem, const char *rv)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", WF_KW_CM_NAME, "namespace", ns,
                     "resourceVersion", rv, "labels", "owner", "someone", "data", WF_KW_CM_KEY, pem,
                     "extra", "kept");
}

static void configmap_plans(void **state)
{
    (void)state;
    wf_kw_action a;
    assert_int_equal(wf_kw_plan_configmap(WF_KW_CM_NAME, "team-a", NULL, ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_CREATE);
    assert_string_equal(a.method, "POST");
    assert_string_equal(a.path, "/api/v1/namespaces/team-a/configmaps");
    json_t *b = json_loads(a.body, 0, NULL);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(b, "metadata"), "labels"),
                                          "istio.io/config")),
        "true");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(b, "data"), "root-cert.pem")), ROOT);
    json_decref(b);
    wf_kw_action_clear(&a);

    json_t *same = cm("team-a", ROOT, "7");
    assert_int_equal(wf_kw_plan_configmap(WF_KW_CM_NAME, "team-a", same, ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    assert_string_equal(a.note, "in sync");
    wf_kw_action_clear(&a);

    /* edited by someone (or a new root): PUT with only root-cert.pem changed, at its rv */
    json_t *edited = cm("team-a", "bogus", "8");
    assert_int_equal(wf_kw_plan_configmap(WF_KW_CM_NAME, "team-a", edited, ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_UPDATE);
    assert_string_equal(a.method, "PUT");
    assert_string_equal(a.path, "/api/v1/namespaces/team-a/configmaps/istio-ca-root-cert");
    b = json_loads(a.body, 0, NULL);
    json_t *want = json_deep_copy(edited);
    json_object_set_new(json_object_get(want, "data"), WF_KW_CM_KEY, json_string(ROOT));
    assert_true(json_equal(b, want)); /* labels, other keys and resourceVersion kept */
    json_decref(want);
    json_decref(b);
    wf_kw_action_clear(&a);
    json_decref(same);
    json_decref(edited);
}

static json_t *wh(const char *name, const char *ca, const char *policy)
{
    json_t *w =
        json_pack("{s:s,s:{s:{s:s}}}", "name", name, "clientConfig", "service", "name", "istiod");
    if (ca)
        json_object_set_new(json_object_get(w, "clientConfig"), "caBundle", json_string(ca));
    if (policy)
        json_object_set_new(w, "failurePolicy", json_string(policy));
    return w;
}

static json_t *whc(const char *name, const char *rev, json_t *webhooks)
{
    return json_pack("{s:{s:s,s:{s:s}},s:o}", "metadata", "name", name, "labels", "istio.io/rev",
                     rev, "webhooks", webhooks);
}

static void mutating_patch(void **state)
{
    (void)state;
    char *ca = wf_kw_ca_bundle(ROOT);
    unsigned char dec[256];
    size_t n;
    assert_true(wf_base64_decode(ca, strlen(ca), 0, dec, &n));
    assert_int_equal(n, strlen(ROOT));
    json_t *cfg =
        whc("istio-sidecar-injector", "default",
            json_pack("[o,o,o]", wh("rev.namespace.sidecar-injector.istio.io", NULL, NULL),
                      wh("other.example.com", "eA==", NULL),
                      wh("object.sidecar-injector.istio.io", ca, NULL)));
    wf_kw_action a;
    assert_int_equal(wf_kw_plan_mutating(cfg, "default", ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_PATCH);
    assert_string_equal(a.method, "PATCH");
    assert_string_equal(a.content_type, "application/json-patch+json");
    assert_string_equal(a.path, "/apis/admissionregistration.k8s.io/v1/"
                                "mutatingwebhookconfigurations/istio-sidecar-injector");
    char want[1024];
    snprintf(want, sizeof want,
             "[{\"op\":\"test\",\"path\":\"/webhooks/0/name\",\"value\":\"rev.namespace."
             "sidecar-injector.istio.io\"},{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/"
             "caBundle\",\"value\":\"%s\"}]",
             ca);
    json_t *got = json_loads(a.body, 0, NULL), *exp = json_loads(want, 0, NULL);
    assert_true(json_equal(got, exp)); /* only the injector webhook that differs */
    json_decref(got);
    json_decref(exp);
    wf_kw_action_clear(&a);
    /* another revision's, or no injector webhook: nothing */
    assert_int_equal(wf_kw_plan_mutating(cfg, "canary", ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    assert_string_equal(a.note, "wrong revision");
    json_t *none = whc("x", "default", json_pack("[o]", wh("other.example.com", NULL, NULL)));
    assert_int_equal(wf_kw_plan_mutating(none, "default", ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    assert_string_equal(a.note, "no webhook to patch");
    json_t *ok = whc("x", "default",
                     json_pack("[o]", wh("rev.object.sidecar-injector.istio.io", ca, "Ignore")));
    assert_int_equal(wf_kw_plan_mutating(ok, "default", ROOT, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    assert_string_equal(a.note, "in sync");
    json_decref(none);
    json_decref(ok);
    json_decref(cfg);
    free(ca);
}

static void validating_patch(void **state)
{
    (void)state;
    char *ca = wf_kw_ca_bundle(ROOT);
    json_t *cfg = whc("istio-validator-default-istio-system", "default",
                      json_pack("[o]", wh("rev.validation.istio.io", NULL, "Ignore")));
    wf_kw_action a;
    /* not ready: the caBundle only, failurePolicy left as installed */
    assert_int_equal(wf_kw_plan_validating(cfg, "default", ROOT, false, &a), 0);
    assert_int_equal(a.op, WF_KW_PATCH);
    assert_non_null(strstr(a.body, "/webhooks/0/clientConfig/caBundle"));
    assert_null(strstr(a.body, "failurePolicy"));
    wf_kw_action_clear(&a);
    assert_int_equal(wf_kw_plan_validating(cfg, "default", ROOT, true, &a), 0);
    assert_non_null(strstr(a.body, "{\"op\":\"add\",\"path\":\"/webhooks/0/failurePolicy\","
                                   "\"value\":\"Fail\"}"));
    assert_string_equal(a.path, "/apis/admissionregistration.k8s.io/v1/"
                                "validatingwebhookconfigurations/"
                                "istio-validator-default-istio-system");
    wf_kw_action_clear(&a);
    json_t *done = whc("v", "default", json_pack("[o]", wh("rev.validation.istio.io", ca, "Fail")));
    assert_int_equal(wf_kw_plan_validating(done, "default", ROOT, true, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    json_t *no_cc = whc("v", "default", json_pack("[{s:s}]", "name", "v.istio.io"));
    assert_int_equal(wf_kw_plan_validating(no_cc, "default", ROOT, false, &a), 0);
    assert_non_null(strstr(a.body, "\"path\":\"/webhooks/0/clientConfig\""));
    wf_kw_action_clear(&a);
    json_decref(no_cc);
    json_decref(done);
    json_decref(cfg);
    free(ca);
}

/* ---- analysis status ----------------------------------------------------------------------- */

static void status_plans(void **state)
{
    (void)state;
    const char *vs = "{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"VirtualService\","
                     "\"metadata\":{\"name\":\"reviews\",\"namespace\":\"team-a\"},"
                     "\"spec\":{\"hosts\":[\"reviews\"],\"gateways\":[\"nope\"],\"http\":"
                     "[{\"route\":[{\"destination\":{\"host\":\"reviews\"}}]}]}}";
    const char *ok = "{\"apiVersion\":\"security.istio.io/v1\",\"kind\":\"PeerAuthentication\","
                     "\"metadata\":{\"name\":\"x\",\"namespace\":\"team-a\"},"
                     "\"spec\":{\"mtls\":{\"mode\":\"STRICT\"}}}";
    wf_store *s = wf_store_new();
    assert_int_equal(
        wf_store_load_buffer(s, "kube:VirtualService/team-a/reviews", vs, strlen(vs), true), 0);
    assert_int_equal(
        wf_store_load_buffer(s, "kube:PeerAuthentication/team-a/x", ok, strlen(ok), true), 0);
    /* a file's resource is not the API's: never written */
    const char *file = "{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"DestinationRule\","
                       "\"metadata\":{\"name\":\"y\",\"namespace\":\"team-a\"},"
                       "\"spec\":{\"host\":\"x.example.com\"}}";
    assert_int_equal(wf_store_load_buffer(s, "dr.json", file, strlen(file), true), 0);
    assert_int_equal(wf_store_finalize(s, "default", false), 0);
    wf_meshcfg *m = wf_meshcfg_new_default();
    json_t *want = wf_kw_status_wanted(s, m);
    assert_int_equal(json_object_size(want), 2);
    json_t *e = json_object_get(want, "VirtualService/team-a/reviews");
    assert_string_equal(json_string_value(json_object_get(e, "path")),
                        "/apis/networking.istio.io/v1/namespaces/team-a/virtualservices/reviews/"
                        "status");
    json_t *msg =
        json_pack("{s:s,s:s,s:{s:s,s:s}}", "documentationUrl",
                  "https://istio.io/latest/docs/reference/config/analysis/ist0101/", "level",
                  "ERROR", "type", "code", "IST0101", "name", "ReferencedResourceNotFound");
    size_t i;
    json_t *v;
    bool found = false;
    json_array_foreach(json_object_get(e, "messages"), i, v) found |= json_equal(v, msg);
    assert_true(found);
    json_decref(msg);
    /* never written: a merge patch of /status; written the same: nothing */
    wf_kw_action a;
    assert_int_equal(wf_kw_plan_status(e, NULL, &a), 0);
    assert_int_equal(a.op, WF_KW_PATCH);
    assert_string_equal(a.content_type, "application/merge-patch+json");
    assert_non_null(strstr(a.body, "{\"status\":{\"validationMessages\":[{"));
    char *written = strdup(a.written);
    wf_kw_action_clear(&a);
    assert_int_equal(wf_kw_plan_status(e, written, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    /* no findings: nothing when never written, null (removed) once written */
    json_t *clean = json_object_get(want, "PeerAuthentication/team-a/x");
    assert_int_equal(json_array_size(json_object_get(clean, "messages")), 0);
    assert_int_equal(wf_kw_plan_status(clean, NULL, &a), 0);
    assert_int_equal(a.op, WF_KW_NONE);
    assert_int_equal(wf_kw_plan_status(clean, written, &a), 0);
    assert_int_equal(a.op, WF_KW_PATCH);
    assert_string_equal(a.body, "{\"status\":{\"validationMessages\":null}}");
    wf_kw_action_clear(&a);
    free(written);
    json_decref(want);
    wf_meshcfg_free(m);
    wf_store_free(s);
}

/* ---- the reconciler with a fake API --------------------------------------------------------- */

typedef struct fake {
    int calls;
    char last[1024]; /* "METHOD PATH" */
    int fail_code;   /* answer this HTTP status (0 = success) */
    int fail_net;    /* > 0: that many transport errors first */
} fake;

static int fake_request(void *ud, const char *method, const char *path, const char *ctype,
                        const char *body, wf_kube_status *st, wf_strbuf *why)
{
    fake *f = ud;
    (void)ctype;
    (void)body;
    f->calls++;
    snprintf(f->last, sizeof f->last, "%s %s", method, path);
    memset(st, 0, sizeof *st);
    if (f->fail_net > 0) {
        f->fail_net--;
        wf_strbuf_printf(why, "%s %s: connect: Connection refused", method, path);
        return -1;
    }
    if (f->fail_code) {
        st->code = f->fail_code;
        snprintf(st->reason, sizeof st->reason, "%s",
                 f->fail_code == 409 && !strncmp(method, "POST", 4) ? "AlreadyExists"
                 : f->fail_code == 409                              ? "Conflict"
                                                                    : "");
        wf_strbuf_printf(why, "%s %s: %d %s: the object has been modified", method, path,
                         f->fail_code, st->reason);
        return -1;
    }
    return 0;
}

static json_t *item(wf_kw_sync *s, const char *group, const char *key)
{
    json_t *d = wf_kw_sync_debug(s, 0);
    json_t *it = json_incref(json_object_get(json_object_get(d, group), key));
    json_decref(d);
    return it;
}

/* A create refused because the object already exists (the watch had not shown it yet, e.g.
 * our own earlier create): not an error, no back-off; its watch event then decides. */
static void create_already_exists(void **state)
{
    (void)state;
    wf_kw_sync *s = wf_kw_sync_new(7);
    json_t *nss = json_pack("{s:b}", "team-a", 1);
    json_t *cache = json_object();
    fake f = {.fail_code = 409};
    wf_kw_inputs in = {.namespaces = nss,
                       .root_pem = ROOT,
                       .cm_name = WF_KW_CM_NAME,
                       .revision = "default",
                       .cache = {cache, NULL, NULL},
                       .gen = {1, 0, 0},
                       .now_ms = 1000};
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), INT64_MAX);
    assert_int_equal(f.calls, 1);
    json_t *it = item(s, "configmaps", "team-a");
    assert_string_equal(json_string_value(json_object_get(it, "state")),
                        "exists (waiting for its watch event)");
    assert_int_equal(json_integer_value(json_object_get(it, "errors")), 0);
    json_decref(it);
    /* no second create before its event */
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), INT64_MAX);
    assert_int_equal(f.calls, 1);
    /* the event: someone else's content, so one update */
    f.fail_code = 0;
    json_object_set_new(cache, "team-a/istio-ca-root-cert", cm("team-a", "x", "9"));
    in.gen[WF_KW_CM] = 2;
    wf_kw_sync_pass(s, &in, fake_request, &f);
    assert_int_equal(f.calls, 2);
    assert_string_equal(f.last, "PUT /api/v1/namespaces/team-a/configmaps/istio-ca-root-cert");
    wf_kw_counts k;
    wf_kw_sync_counts(s, &k);
    assert_int_equal(k.errors, 0);
    json_decref(nss);
    json_decref(cache);
    wf_kw_sync_free(s);
}

static void reconcile_configmaps(void **state)
{
    (void)state;
    wf_kw_sync *s = wf_kw_sync_new(7);
    json_t *nss = json_pack("{s:b,s:b}", "default", 1, "team-a", 1);
    json_t *cache = json_pack("{s:o}", "default/istio-ca-root-cert", cm("default", ROOT, "3"));
    fake f = {0};
    wf_kw_inputs in = {.namespaces = nss,
                       .root_pem = ROOT,
                       .cm_name = WF_KW_CM_NAME,
                       .revision = "default",
                       .cache = {cache, NULL, NULL},
                       .gen = {1, 0, 0},
                       .now_ms = 1000};
    /* team-a lacks it: one create; default is in sync */
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), INT64_MAX);
    assert_int_equal(f.calls, 1);
    assert_string_equal(f.last, "POST /api/v1/namespaces/team-a/configmaps");
    /* its watch event has not come back (same generation): no second create */
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), INT64_MAX);
    assert_int_equal(f.calls, 1);
    json_t *it = item(s, "configmaps", "team-a");
    assert_string_equal(json_string_value(json_object_get(it, "state")), "created");
    json_decref(it);
    /* the event came: in sync */
    json_object_set_new(cache, "team-a/istio-ca-root-cert", cm("team-a", ROOT, "4"));
    in.gen[WF_KW_CM] = 2;
    wf_kw_sync_pass(s, &in, fake_request, &f);
    assert_int_equal(f.calls, 1);
    it = item(s, "configmaps", "team-a");
    assert_string_equal(json_string_value(json_object_get(it, "state")), "in sync");
    json_decref(it);
    /* someone edits it: one update, refused with 409: retried after a back-off */
    json_object_set_new(cache, "team-a/istio-ca-root-cert", cm("team-a", "x", "5"));
    in.gen[WF_KW_CM] = 3;
    f.fail_code = 409;
    int64_t next = wf_kw_sync_pass(s, &in, fake_request, &f);
    assert_int_equal(f.calls, 2);
    assert_string_equal(f.last, "PUT /api/v1/namespaces/team-a/configmaps/istio-ca-root-cert");
    assert_true(next >= 1000 + 800 && next < 1000 + 1600);
    in.gen[WF_KW_CM] = 4; /* other events: still waiting for the back-off */
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), next);
    assert_int_equal(f.calls, 2);
    it = item(s, "configmaps", "team-a");
    assert_string_equal(json_string_value(json_object_get(it, "state")), "error");
    assert_int_equal(json_integer_value(json_object_get(it, "conflicts")), 1);
    assert_non_null(strstr(json_string_value(json_object_get(it, "last_error")), "409"));
    json_decref(it);
    /* after it, the retry succeeds */
    f.fail_code = 0;
    in.now_ms = next;
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), INT64_MAX);
    assert_int_equal(f.calls, 3);
    wf_kw_counts k;
    wf_kw_sync_counts(s, &k);
    assert_int_equal(k.creates, 1);
    assert_int_equal(k.updates, 1);
    assert_int_equal(k.errors, 1);
    assert_int_equal(k.conflicts, 1);
    /* a namespace no longer wanted is dropped from the table */
    json_object_del(nss, "team-a");
    in.gen[WF_KW_CM] = 5;
    wf_kw_sync_pass(s, &in, fake_request, &f);
    it = item(s, "configmaps", "team-a");
    assert_null(it);
    /* no root yet, or the cache not listed: nothing */
    json_object_set_new(nss, "team-b", json_true());
    in.root_pem = NULL;
    wf_kw_sync_pass(s, &in, fake_request, &f);
    in.root_pem = ROOT;
    in.cache[WF_KW_CM] = NULL;
    wf_kw_sync_pass(s, &in, fake_request, &f);
    assert_int_equal(f.calls, 3);
    json_decref(nss);
    json_decref(cache);
    wf_kw_sync_free(s);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The API server away: every object retries with growing back-offs; the cause is logged once
 * per group, and the recovery once. */
static void reconcile_api_away(void **state)
{
    (void)state;
    FILE *log = tmpfile();
    assert_non_null(log);
    wf_log_init(fileno(log), WF_LOG_INFO, NULL);
    wf_kw_sync *s = wf_kw_sync_new(9);
    json_t *nss = json_pack("{s:b}", "team-a", 1), *cache = json_object();
    json_t *mwcs = json_pack(
        "{s:o}", "inj",
        whc("inj", "default", json_pack("[o]", wh("a.sidecar-injector.istio.io", NULL, NULL))));
    fake f = {.fail_net = 4};
    wf_kw_inputs in = {.namespaces = nss,
                       .root_pem = ROOT,
                       .cm_name = WF_KW_CM_NAME,
                       .revision = "default",
                       .cache = {cache, mwcs, json_object()},
                       .now_ms = 10000};
    int64_t n1 = wf_kw_sync_pass(s, &in, fake_request, &f);
    assert_int_equal(f.calls, 2); /* the injector patch and the create, both refused */
    assert_true(n1 > 10000 && n1 < 10000 + 1600);
    in.now_ms = 10000 + 1600;
    int64_t n2 = wf_kw_sync_pass(s, &in, fake_request, &f);
    assert_int_equal(f.calls, 4);
    /* the second back-off doubles: [1.6, 3.2) s after now */
    assert_true(n2 >= in.now_ms + 1600 && n2 < in.now_ms + 3200);
    json_t *it = item(s, "mutatingwebhookconfigurations", "inj");
    assert_int_equal(json_integer_value(json_object_get(it, "errors")), 2);
    assert_non_null(
        strstr(json_string_value(json_object_get(it, "last_error")), "Connection refused"));
    json_decref(it);
    in.now_ms = n2 + 3200;
    assert_int_equal(wf_kw_sync_pass(s, &in, fake_request, &f), INT64_MAX);
    assert_int_equal(f.calls, 6); /* both written at their third attempt */
    wf_log_init(2, WF_LOG_INFO, NULL);
    char text[8192];
    size_t got = fread(text, 1, sizeof text - 1, (rewind(log), log));
    text[got] = '\0';
    fclose(log);
    /* two refusals each, one line each; then one "written again" each */
    assert_int_equal(count(text, "cannot patch MutatingWebhookConfiguration inj: PATCH"), 1);
    assert_int_equal(count(text, "cannot create ConfigMap team-a: POST"), 1);
    assert_int_equal(count(text, "Connection refused"), 2);
    assert_int_equal(count(text, "written again"), 2);
    wf_strbuf m = WF_STRBUF_INIT;
    wf_kw_sync_metrics_text(s, &m);
    assert_non_null(strstr(wf_strbuf_cstr(&m), "webhook_patch_attempts_total{name=\"inj\"} 3\n"));
    assert_non_null(strstr(wf_strbuf_cstr(&m), "weft_pilot_kube_write_errors_total 4\n"));
    wf_strbuf_free(&m);
    json_decref((json_t *)in.cache[WF_KW_VWC]);
    json_decref(mwcs);
    json_decref(nss);
    json_decref(cache);
    wf_kw_sync_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wanted_namespaces),     cmocka_unit_test(configmap_plans),
        cmocka_unit_test(mutating_patch),        cmocka_unit_test(validating_patch),
        cmocka_unit_test(status_plans),          cmocka_unit_test(reconcile_configmaps),
        cmocka_unit_test(create_already_exists), cmocka_unit_test(reconcile_api_away),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
