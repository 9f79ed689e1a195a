/*
 * test_pilot_webhook_validate.c - istiod's validating webhook (src/pilot/webhook_validate.h):
 * AdmissionReviews for valid and invalid VirtualServices and DestinationRules (one error, and
 * several in go-multierror's list), warnings, the unknown kinds (an Istio group weft has no
 * rules for: allowed; a group of no Istio schema: "unrecognized type"), DELETE, dry run, an
 * extra top-level field, a v1beta1 review answered in v1beta1, the 400/415 answers and an
 * undecodable body, with the outcome each gives the counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "pilot/webhook_validate.h"

/* An AdmissionReview v1 for obj (JSON text) with operation op. */
static char *review(const char *api_version, const char *op, const char *resource, const char *obj,
                    bool dry_run)
{
    static char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"%s\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\","
             "\"kind\":{\"group\":\"networking.istio.io\",\"version\":\"v1\",\"kind\":\"X\"},"
             "\"resource\":{\"group\":\"networking.istio.io\",\"version\":\"v1\",\"resource\":"
             "\"%s\"},\"namespace\":\"default\",\"operation\":\"%s\",\"dryRun\":%s,"
             "\"object\":%s}}",
             api_version, resource, op, dry_run ? "true" : "false", obj);
    return buf;
}

typedef struct got {
    int status;
    json_t *resp; /* response, NULL for text answers */
    json_t *top;
    char text[4096];
    wf_whv_outcome oc;
} got;

static void run(got *g, const char *ctype, const char *body)
{
    wf_strbuf out = WF_STRBUF_INIT;
    memset(g, 0, sizeof *g);
    g->status = wf_webhook_validate(ctype, body, body ? strlen(body) : 0, &out, &g->oc);
    snprintf(g->text, sizeof g->text, "%s", wf_strbuf_cstr(&out));
    if (g->status == 200) {
        g->top = json_loads(g->text, 0, NULL);
        assert_non_null(g->top);
        g->resp = json_object_get(g->top, "response");
        assert_non_null(g->resp);
        assert_string_equal(json_string_value(json_object_get(g->resp, "uid")), "u-1");
    }
    wf_strbuf_free(&out);
}

static void done(got *g)
{
    json_decref(g->top);
}

static bool allowed(const got *g)
{
    return json_is_true(json_object_get(g->resp, "allowed"));
}

static const char *message(const got *g)
{
    return json_string_value(json_object_get(json_object_get(g->resp, "status"), "message"));
}

#define VS(spec)                                                                                   \
    "{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"VirtualService\",\"metadata\":"         \
    "{\"name\":\"r\",\"namespace\":\"default\"},\"spec\":" spec "}"

#define VS_OK VS("{\"hosts\":[\"r\"],\"http\":[{\"route\":[{\"destination\":{\"host\":\"r\"}}]}]}")
#define VS_BAD                                                                                     \
    VS("{\"hosts\":[\"r\"],\"http\":[{\"route\":[{\"destination\":{\"host\":\"r\"},\"weight\":-"   \
       "15}]}]}")

static void valid_virtualservice_allowed(void **state)
{
    (void)state;
    got g;
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "virtualservices", VS_OK, false));
    assert_int_equal(g.status, 200);
    assert_true(allowed(&g));
    assert_null(json_object_get(g.resp, "status"));
    assert_string_equal(json_string_value(json_object_get(g.top, "apiVersion")),
                        "admission.k8s.io/v1");
    assert_string_equal(json_string_value(json_object_get(g.top, "kind")), "AdmissionReview");
    assert_int_equal(g.oc.result, WF_WHV_PASSED);
    assert_string_equal(g.oc.resource, "virtualservices");
    assert_string_equal(g.oc.group, "networking.istio.io");
    done(&g);
}

static void invalid_virtualservice_refused(void **state)
{
    (void)state;
    got g;
    run(&g, "application/json",
        review("admission.k8s.io/v1", "UPDATE", "virtualservices", VS_BAD, false));
    assert_int_equal(g.status, 200);
    assert_false(allowed(&g));
    assert_string_equal(message(&g), "configuration is invalid: weight -15 < 0");
    assert_int_equal(g.oc.result, WF_WHV_FAILED);
    assert_string_equal(g.oc.reason, "invalid_resource");
    done(&g);
}

static void several_errors_listed(void **state)
{
    (void)state;
    got g;
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "virtualservices",
               VS("{\"hosts\":[\"r\"],\"http\":[{\"route\":[{\"destination\":{\"host\":\"r\"},"
                  "\"weight\":-15}]},{\"route\":[{\"destination\":{\"host\":\"r\",\"subset\":"
                  "\"Bad_Subset\"}}]}]}"),
               false));
    assert_false(allowed(&g));
    const char *m = message(&g);
    assert_non_null(m);
    assert_true(strncmp(m, "configuration is invalid: 2 errors occurred:\n\t* ", 48) == 0);
    assert_non_null(strstr(m, "\n\t* weight -15 < 0"));
    assert_true(strlen(m) > 2 && strcmp(m + strlen(m) - 2, "\n\n") == 0);
    done(&g);
}

static void destinationrule_checked(void **state)
{
    (void)state;
    got g;
    const char *ok =
        "{\"apiVersion\":\"networking.istio.io/v1beta1\",\"kind\":\"DestinationRule\","
        "\"metadata\":{\"name\":\"d\"},\"spec\":{\"host\":\"r\",\"subsets\":[{\"name\":"
        "\"v1\",\"labels\":{\"version\":\"v1\"}}]}}";
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "destinationrules", ok, false));
    assert_true(allowed(&g));
    done(&g);
    const char *bad =
        "{\"apiVersion\":\"networking.istio.io/v1beta1\",\"kind\":\"DestinationRule\","
        "\"metadata\":{\"name\":\"d\"},\"spec\":{\"host\":\"r\",\"subsets\":[{\"name\":"
        "\"Not_A_Label\"}]}}";
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "destinationrules", bad, false));
    assert_false(allowed(&g));
    assert_true(strncmp(message(&g), "configuration is invalid: ", 26) == 0);
    assert_non_null(strstr(message(&g), "Not_A_Label"));
    done(&g);
}

static void unknown_kinds(void **state)
{
    (void)state;
    got g;
    /* Gateway API and built-in kinds: allowed (no rules, as istiod) */
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "tlsroutes",
               "{\"apiVersion\":\"gateway.networking.k8s.io/v1alpha2\",\"kind\":\"TLSRoute\","
               "\"metadata\":{\"name\":\"f\"},\"spec\":{\"x\":1}}",
               false));
    assert_true(allowed(&g));
    assert_int_equal(g.oc.result, WF_WHV_PASSED);
    done(&g);
    /* an Istio group's kind of no Istio schema: refused */
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "foos",
               "{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"Foo\",\"metadata\":{\"name\":"
               "\"f\"},\"spec\":{\"x\":1}}",
               false));
    assert_false(allowed(&g));
    assert_string_equal(message(&g), "unrecognized type networking.istio.io/v1, Kind=Foo");
    done(&g);
    /* a group of no Istio schema: istiod's "unrecognized type" */
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "widgets",
               "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Widget\",\"metadata\":{\"name\":"
               "\"w\"}}",
               false));
    assert_false(allowed(&g));
    assert_string_equal(message(&g), "unrecognized type example.com/v2, Kind=Widget");
    assert_string_equal(g.oc.reason, "unknown_type");
    done(&g);
}

static void delete_allowed(void **state)
{
    (void)state;
    got g;
    run(&g, "application/json",
        review("admission.k8s.io/v1", "DELETE", "virtualservices", VS_BAD, false));
    assert_int_equal(g.status, 200);
    assert_true(allowed(&g));
    assert_int_equal(g.oc.result, WF_WHV_FAILED);
    assert_string_equal(g.oc.reason, "unsupported_operation");
    done(&g);
}

static void dry_run_and_extra_field(void **state)
{
    (void)state;
    got g;
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "virtualservices", VS_BAD, true));
    /* istiod says "(dry run)" in its log only */
    assert_string_equal(message(&g), "configuration is invalid: weight -15 < 0");
    done(&g);
    run(&g, "application/json",
        review("admission.k8s.io/v1", "CREATE", "virtualservices",
               "{\"apiVersion\":\"networking.istio.io/v1\",\"kind\":\"VirtualService\","
               "\"metadata\":{\"name\":\"r\"},\"spec\":{\"hosts\":[\"r\"],\"http\":[{\"route\":[{"
               "\"destination\":{\"host\":\"r\"}}]}]},\"extra\":1}",
               false));
    assert_false(allowed(&g));
    assert_string_equal(message(&g), "unknown field \"extra\" on X resource default/r");
    done(&g);
}

static void v1beta1_answered_in_kind(void **state)
{
    (void)state;
    got g;
    run(&g, "application/json",
        review("admission.k8s.io/v1beta1", "CREATE", "virtualservices", VS_OK, false));
    assert_string_equal(json_string_value(json_object_get(g.top, "apiVersion")),
                        "admission.k8s.io/v1beta1");
    done(&g);
}

static void bad_requests(void **state)
{
    (void)state;
    got g;
    run(&g, "text/plain", review("admission.k8s.io/v1", "CREATE", "virtualservices", VS_OK, false));
    assert_int_equal(g.status, 415);
    assert_string_equal(g.text, "invalid Content-Type, want `application/json`\n");
    assert_int_equal(g.oc.result, WF_WHV_HTTP_ERROR);
    run(&g, NULL, review("admission.k8s.io/v1", "CREATE", "virtualservices", VS_OK, false));
    assert_int_equal(g.status, 415);
    run(&g, "application/json", "");
    assert_int_equal(g.status, 400);
    assert_string_equal(g.text, "no body found\n");
    run(&g, "text/plain", NULL); /* the body is checked first, as istiod */
    assert_int_equal(g.status, 400);
    wf_strbuf out = WF_STRBUF_INIT;
    wf_whv_outcome oc;
    assert_int_equal(wf_webhook_validate("application/json", "{nope", 5, &out, &oc), 200);
    json_t *j = json_loads(wf_strbuf_cstr(&out), 0, NULL);
    const char *m = json_string_value(
        json_object_get(json_object_get(json_object_get(j, "response"), "status"), "message"));
    assert_non_null(m);
    assert_true(strncmp(m, "could not decode body: ", 23) == 0);
    assert_false(json_is_true(json_object_get(json_object_get(j, "response"), "allowed")));
    assert_int_equal(oc.result, WF_WHV_UNDECODED);
    json_decref(j);
    wf_strbuf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_virtualservice_allowed),
        cmocka_unit_test(invalid_virtualservice_refused),
        cmocka_unit_test(several_errors_listed),
        cmocka_unit_test(destinationrule_checked),
        cmocka_unit_test(unknown_kinds),
        cmocka_unit_test(delete_allowed),
        cmocka_unit_test(dry_run_and_extra_field),
        cmocka_unit_test(v1beta1_answered_in_kind),
        cmocka_unit_test(bad_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
