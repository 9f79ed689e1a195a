/*
 * test_validate.c - Istio schema validation rules (src/model/validate*.c).
 *
 * Each test loads a small manifest, validates every resource and checks the reported
 * problems: severity, field path and Istio's message text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/store.h"
#include "model/validate_ex.h"

#define MAX_ISSUES 128

typedef struct issue {
    bool warning, aware;
    char path[256];
    char msg[1024];
} issue;

typedef struct result {
    size_t n;
    int errors;
    issue v[MAX_ISSUES];
} result;

static void on_issue(const wf_resource *r, const wf_validation_issue *is, void *arg)
{
    result *res = arg;
    if (res->n >= MAX_ISSUES)
        return;
    issue *out = &res->v[res->n++];
    out->warning = is->warning;
    out->aware = false;
    snprintf(out->path, sizeof(out->path), "%s", is->path);
    snprintf(out->msg, sizeof(out->msg), "%s", is->message);
}

static void on_aware(const wf_resource *r, const wf_validation_aware *a, void *arg)
{
    result *res = arg;
    if (res->n >= MAX_ISSUES)
        return;
    issue *out = &res->v[res->n++];
    out->warning = true;
    out->aware = true;
    snprintf(out->path, sizeof(out->path), "%s",
             a->type == WF_VALIDATION_UNREACHABLE_RULE ? "IST0130" : "IST0131");
    snprintf(out->msg, sizeof(out->msg), "%s|%s|%s", a->params[0], a->params[1],
             a->nparams > 2 ? a->params[2] : "");
}

static result *validate(const char *yaml)
{
    wf_store *s = wf_store_new();
    assert_non_null(s);
    assert_int_equal(wf_store_load_buffer(s, "t.yaml", yaml, strlen(yaml), false), 0);
    assert_int_equal(wf_store_finalize(s, "default", false), 0);
    result *res = calloc(1, sizeof(*res));
    assert_non_null(res);
    for (size_t i = 0; i < wf_store_count(s); i++)
        res->errors += wf_validate_resource_ex(wf_store_at(s, i), on_issue, on_aware, res);
    wf_store_free(s);
    return res;
}

static void dump(const result *res)
{
    for (size_t i = 0; i < res->n; i++)
        fprintf(stderr, "  %s %s: %s\n", res->v[i].warning ? "W" : "E", res->v[i].path,
                res->v[i].msg);
}

/* Number of issues of that severity whose path equals `path` (NULL = any) and whose message
 * contains `msg`. */
static size_t count(const result *res, bool warning, const char *path, const char *msg)
{
    size_t n = 0;
    for (size_t i = 0; i < res->n; i++) {
        const issue *is = &res->v[i];
        if (is->warning == warning && (!path || strcmp(is->path, path) == 0) &&
            strstr(is->msg, msg))
            n++;
    }
    return n;
}

#define EXPECT(res, warning, path, msg)                                                            \
    do {                                                                                           \
        if (count((res), (warning), (path), (msg)) == 0) {                                         \
            dump(res);                                                                             \
            fail_msg("missing %s at %s: %s", (warning) ? "warning" : "error", (path), (msg));      \
        }                                                                                          \
    } while (0)

#define EXPECT_CLEAN(res)                                                                          \
    do {                                                                                           \
        if ((res)->n != 0) {                                                                       \
            dump(res);                                                                             \
            fail_msg("expected no issues, got %zu", (res)->n);                                     \
        }                                                                                          \
    } while (0)

#define VS_HEAD                                                                                    \
    "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: vs\n"            \
    "spec:\n"

/* A route with one destination, for building VirtualServices. */
#define ROUTE      "    route:\n    - destination:\n        host: reviews\n"
#define ROUTE_ITEM "  - route:\n    - destination:\n        host: reviews\n"

/* ---- valid configuration ---- */

static void test_valid_virtualservice(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - reviews\n  - \"*.example.com\"\n"
                                 "  - 10.0.0.1\n"
                                 "  http:\n  - name: main\n    match:\n    - uri:\n"
                                 "        prefix: /api\n      headers:\n        end-user:\n"
                                 "          regex: \"(?i)^jason[0-9]{1,3}$\"\n"
                                 "    timeout: 0.5s\n    retries:\n      attempts: 3\n"
                                 "      perTryTimeout: 1m\n      retryOn: 5xx,reset,503\n"
                                 "    route:\n    - destination:\n        host: reviews\n"
                                 "        subset: v1\n        port:\n          number: 9080\n"
                                 "      weight: 90\n    - destination:\n        host: reviews\n"
                                 "        subset: v2\n      weight: \"10\"\n"
                                 "  - route:\n    - destination:\n        host: reviews\n");
    EXPECT_CLEAN(r);
    assert_int_equal(r->errors, 0);
    free(r);
}

static void test_valid_gateway_https_redirect(void **state)
{
    result *r = validate("apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n"
                         "  name: gw\nspec:\n  selector:\n    istio: ingressgateway\n"
                         "  servers:\n  - port:\n      number: 80\n      name: http\n"
                         "      protocol: HTTP\n    hosts:\n    - \"*.example.com\"\n"
                         "    tls:\n      httpsRedirect: true\n"
                         "  - port:\n      number: 443\n      name: https\n"
                         "      protocol: HTTPS\n    hosts:\n    - \"ns1/*.example.com\"\n"
                         "    tls:\n      mode: SIMPLE\n      credentialName: cert\n");
    EXPECT_CLEAN(r);
    free(r);
}

/* ---- hosts ---- */

static void test_hosts(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - \"bad_host\"\n  - \"*\"\n  - \"foo.123\"\n"
                                 "  http:\n" ROUTE_ITEM +
                         0);
    EXPECT(r, false, "spec.hosts[0]",
           "domain name \"bad_host\" invalid (label \"bad_host\" invalid)");
    EXPECT(r, false, "spec.hosts[1]",
           "wildcard host * is not allowed for virtual services bound to the mesh gateway");
    EXPECT(r, false, "spec.hosts[2]",
           "domain name \"123\" invalid (top level domain \"123\" cannot be all-numeric)");
    free(r);

    r = validate(VS_HEAD "  hosts:\n  - \"*.foo.com\"\n  - \"bar.foo.com\"\n  http:\n" ROUTE_ITEM);
    EXPECT(r, false, "spec.hosts[1]",
           "duplicate hosts in virtual service: *.foo.com & bar.foo.com");
    free(r);

    r = validate("apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: gw\n"
                 "spec:\n  servers:\n  - port:\n      number: 80\n      name: http\n"
                 "      protocol: HTTP\n    hosts:\n    - reviews\n    - \"foo*.com\"\n");
    EXPECT(r, false, "spec.servers[0].hosts[0]", "short names (non FQDN) are not allowed");
    EXPECT(r, false, "spec.servers[0].hosts[1]", "partial wildcard \"foo*.com\" not allowed");
    free(r);
}

/* ---- durations ---- */

static void test_durations(void **state)
{
    static const char *const ok[] = {"0.5s", "1m", "1h30m", "10ms", "2.5h", "1000us"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char buf[512];
        snprintf(buf, sizeof(buf), VS_HEAD "  hosts:\n  - r\n  http:\n  - timeout: %s\n" ROUTE,
                 ok[i]);
        result *r = validate(buf);
        EXPECT_CLEAN(r);
        free(r);
    }
    result *r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - timeout: 500us\n" ROUTE);
    EXPECT(r, false, "spec.http[0].timeout", "duration must be greater than 1ms");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - timeout: 1.5ms\n" ROUTE);
    EXPECT(r, false, "spec.http[0].timeout", "only durations to ms precision are supported");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - timeout: 0s\n" ROUTE);
    EXPECT(r, false, "spec.http[0].timeout", "duration must be greater than 1ms");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - timeout: 10\n" ROUTE);
    EXPECT(r, false, "spec.http[0].timeout",
           "spec.http[0].timeout in body must be of type string: \"integer\"");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - timeout: 5 s\n" ROUTE);
    EXPECT(r, false, "spec.http[0].timeout", "bad Duration: time: unknown unit \" s\"");
    free(r);
}

/* ---- ports and weights ---- */

static void test_ports_and_weights(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - route:\n    - destination:\n"
                                 "        host: a\n        port:\n          number: 70000\n"
                                 "      weight: -5\n    - destination:\n        host: b\n"
                                 "      weight: 5\n");
    EXPECT(r, false, "spec.http[0].route[0].destination.port",
           "port number 70000 must be in the range 1..65535");
    EXPECT(r, false, "spec.http[0].route[0].weight", "weight -5 < 0");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - route:\n    - destination:\n"
                         "        host: a\n      weight: 0\n    - destination:\n        host: b\n");
    EXPECT(r, false, "spec.http[0].route", "total destination weight = 0");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  tcp:\n  - match:\n    - port: 0\n"
                         "      destinationSubnets:\n      - 10.0.0.0/33\n" ROUTE);
    EXPECT(r, false, NULL, "10.0.0.0/33 is not a valid CIDR block");
    free(r);
}

/* ---- field types and unknown fields ---- */

static void test_field_types(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - route:\n    - destination:\n"
                                 "        host: a\n      weight: \"abc\"\n");
    EXPECT(r, false, "spec.http[0].route[0].weight",
           "spec.http[0].route[0].weight in body must be of type integer: \"string\"");
    free(r);
    r = validate(VS_HEAD "  hosts: reviews\n  http:\n" ROUTE_ITEM);
    EXPECT(r, false, "spec.hosts", "spec.hosts in body must be of type array: \"string\"");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - ignoreUriCase: true\n"
                         "    match:\n    - ignoreUriCase: \"yes\"\n" ROUTE);
    /* unknown fields are warnings, as kubectl's default field validation */
    EXPECT(r, true, "spec.http[0].ignoreUriCase",
           "strict decoding error: unknown field \"spec.http[0].ignoreUriCase\"");
    EXPECT(r, false, "spec.http[0].match[0].ignoreUriCase", "must be of type boolean");
    free(r);
    r = validate("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n"
                 "  name: dr\nspec:\n  host: r\n  trafficPolicy:\n    tls:\n      mode: STRICT\n");
    EXPECT(r, false, "spec.trafficPolicy.tls.mode",
           "Unsupported value: \"STRICT\": supported values: \"DISABLE\", \"SIMPLE\", \"MUTUAL\", "
           "\"ISTIO_MUTUAL\"");
    free(r);
}

/* ---- string matches and regexes ---- */

static void test_string_matches(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - match:\n    - uri:\n"
                                 "        exact: /a\n        prefix: /b\n" ROUTE);
    EXPECT(r, false, "spec.http[0].match[0].uri",
           "only one of exact, prefix, regex may be set, found exact and prefix");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - match:\n    - uri:\n        prefix: \"\"\n"
                         "      headers:\n        x-a:\n          prefix: \"\"\n"
                         "        \"bad name\":\n          exact: x\n" ROUTE);
    EXPECT(r, false, "spec.http[0].match[0].headers[x-a].prefix",
           "\"headers\": prefix string match should not be empty");
    EXPECT(r, false, "spec.http[0].match[0].headers[bad name]",
           "header name bad name is not a valid header name");
    assert_int_equal(count(r, false, "spec.http[0].match[0].uri", "prefix"), 0);
    free(r);
}

static void test_regexes(void **state)
{
    static const struct {
        const char *re, *msg;
    } bad[] = {
        {"(a)\\\\1", "invalid escape sequence: `\\1`"},
        {"foo(?=bar)", "invalid or unsupported Perl syntax: `(?=`"},
        {"(?<=a)b", "invalid or unsupported Perl syntax: `(?<`"},
        {"(?!a)b", "invalid or unsupported Perl syntax: `(?!`"},
        {"(?>ab)", "invalid or unsupported Perl syntax: `(?>`"},
        {"a++", "invalid nested repetition operator: `++`"},
        {"a**", "invalid nested repetition operator: `**`"},
        {"a\\\\Z", "invalid escape sequence: `\\Z`"},
        {"a{1001}", "invalid repeat count: `{1001}`"},
        {"(abc", "missing closing ): `(abc`"},
        {"abc)", "unexpected ): `abc)`"},
        {"[z-a]", "invalid character class range"},
        {"(?x)a b", "invalid or unsupported Perl syntax: `(?x`"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[512];
        snprintf(buf, sizeof(buf),
                 VS_HEAD
                 "  hosts:\n  - r\n  http:\n  - match:\n    - uri:\n        regex: \"%s\"\n" ROUTE,
                 bad[i].re);
        result *r = validate(buf);
        EXPECT(r, false, "spec.http[0].match[0].uri.regex", bad[i].msg);
        EXPECT(
            r, false, "spec.http[0].match[0].uri.regex",
            "Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)");
        free(r);
    }
    static const char *const good[] = {"^/api/v[0-9]+/.*$",           "(?P<id>[a-z]+)-(?i:x)",
                                       "\\\\d+\\\\.\\\\w*\\\\z",      "[[:alpha:]]{2,5}?",
                                       "\\\\x{41}\\\\pL\\\\Q*+\\\\E", "a{2}b{,3}"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char buf[512];
        snprintf(buf, sizeof(buf),
                 VS_HEAD
                 "  hosts:\n  - r\n  http:\n  - match:\n    - uri:\n        regex: \"%s\"\n" ROUTE,
                 good[i]);
        result *r = validate(buf);
        EXPECT_CLEAN(r);
        free(r);
    }
}

/* ---- subsets and labels ---- */

static void test_subsets_and_labels(void **state)
{
    result *r = validate("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n"
                         "  name: dr\nspec:\n  host: reviews\n  subsets:\n  - name: v_1\n"
                         "    labels:\n      \"bad key!\": v1\n      app: \"bad value!\"\n"
                         "  - name: v2\n  - name: v2\n");
    EXPECT(r, false, "spec.subsets[0].name", "subset name is invalid: v_1");
    EXPECT(r, false, "spec.subsets[0].labels[bad key!]", "invalid tag key: \"bad key!\"");
    EXPECT(r, false, "spec.subsets[0].labels[app]", "invalid tag value: \"bad value!\"");
    EXPECT(r, false, "spec.subsets[2]", "duplicate subset names: v2");
    free(r);
    r = validate("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n"
                 "  name: dr\nspec:\n  host: reviews\n  subsets:\n  - name: v1\n    labels:\n"
                 "      example.com/version: v1.2_3\n");
    EXPECT_CLEAN(r);
    free(r);
}

/* ---- route rules ---- */

static void test_http_route_rules(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - redirect:\n      uri: /x\n"
                                 "      redirectCode: 200\n" ROUTE
                                 "  - fault:\n      abort:\n        httpStatus: 700\n" ROUTE
                                 "  - corsPolicy:\n      allowMethods: [GET, FETCH]\n"
                                 "      maxAge: 1500ms\n" ROUTE
                                 "  - mirrorPercentage:\n      value: 150\n" ROUTE);
    EXPECT(r, false, "spec.http[0]", "HTTP route cannot contain both route and redirect");
    EXPECT(r, false, "spec.http[0].redirect", "200 is not a valid redirect code, must be 3xx");
    EXPECT(r, false, "spec.http[1].fault.abort", "HTTP status 700 is not in range 200-599");
    EXPECT(r, false, "spec.http[2].corsPolicy.allowMethods",
           "\"FETCH\" is not a supported HTTP method");
    EXPECT(r, false, "spec.http[2].corsPolicy.maxAge",
           "max_age duration is accurate only to seconds precision");
    EXPECT(r, false, "spec.http[3].mirrorPercentage",
           "mirror_percentage must have a max value of 100 (it has 150.000000)");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n  http:\n  - match:\n    - headers:\n"
                         "        \"@request.auth.claims.group\":\n          exact: admin\n" ROUTE);
    EXPECT(r, false, "spec",
           "JWT claim based routing (key: @request.auth.claims.group) is only "
           "supported for gateway, found no gateways: []");
    free(r);
    r = validate(VS_HEAD "  hosts:\n  - r\n");
    EXPECT(r, false, "spec", "http, tcp or tls must be provided in virtual service");
    free(r);
}

static void test_tls_routes(void **state)
{
    result *r = validate(VS_HEAD "  hosts:\n  - \"*.example.com\"\n  gateways:\n  - mesh\n"
                                 "  tls:\n  - match:\n    - sniHosts:\n      - a.other.com\n"
                                 "      - 1.2.3.4\n" ROUTE "  - route:\n    - destination:\n"
                                 "        host: x\n");
    EXPECT(r, false, "spec.tls[0].match[0].sniHosts[0]",
           "SNI host \"a.other.com\" is not a compatible subset of any of the virtual service "
           "hosts: [*.example.com]");
    EXPECT(r, true, "spec.tls[0].match[0].sniHosts[1]",
           "using an IP address (\"1.2.3.4\") goes against SNI spec");
    EXPECT(r, false, "spec.tls[1]", "TLS route must have at least one match condition");
    free(r);
}

/* ---- duplicate and overlapping matches (IST0130 / IST0131) ---- */

static void test_unreachable_rules(void **state)
{
    result *r = validate(
        VS_HEAD "  hosts:\n  - r\n  http:\n"
                "  - name: a\n    match:\n    - uri:\n        prefix: /api\n" ROUTE
                "  - name: b\n    match:\n    - name: m\n      uri:\n"
                "        prefix: /api\n" ROUTE
                "  - name: c\n    match:\n    - uri:\n        prefix: /api/v1\n" ROUTE ROUTE_ITEM
                    ROUTE_ITEM);
    EXPECT(r, true, "IST0131", "\"b\"|\"m\"|\"a\"");
    EXPECT(r, true, "IST0130", "\"b\"|all matches used by prior rules|");
    EXPECT(r, true, "IST0131", "\"c\"|#0 of prefix /api/v1|#0 of prefix /api on \"a\"");
    EXPECT(r, true, "IST0130", "#4|only the last rule can have no matches|");
    assert_int_equal(r->errors, 0);
    free(r);
}

/* ---- other kinds ---- */

static void test_gateway(void **state)
{
    result *r = validate("apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n"
                         "  name: my.gw\nspec:\n  servers:\n  - port:\n      number: 443\n"
                         "      name: https\n      protocol: HTTPS\n    hosts:\n    - a.com\n"
                         "  - port:\n      number: 8443\n      name: https\n      protocol: HTTPS\n"
                         "    hosts:\n    - b.com\n    tls:\n      mode: SIMPLE\n");
    EXPECT(r, false, "metadata.name", "invalid gateway name: \"my.gw\"");
    EXPECT(r, false, "spec.servers[0]", "server must have TLS settings for HTTPS/TLS protocols");
    EXPECT(r, false, "spec.servers[1].tls", "SIMPLE TLS requires a server certificate");
    EXPECT(r, false, "spec.servers[1].port",
           "port names in servers must be unique: duplicate name https");
    free(r);
}

static void test_serviceentry(void **state)
{
    result *r = validate("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n"
                         "  name: se\nspec:\n  hosts:\n  - \"*\"\n  - foo\n  ports:\n"
                         "  - number: 0\n    name: Bad_Name\n    protocol: FTP\n"
                         "  resolution: DNS\n");
    EXPECT(r, false, "spec.hosts[0]", "invalid host *");
    EXPECT(r, false, "spec.ports[0]", "invalid port name: Bad_Name");
    EXPECT(r, false, "spec.ports[0]", "unsupported protocol: FTP");
    EXPECT(r, false, "spec.ports[0]", "port number 0 must be in the range 1..65535");
    EXPECT(r, false, NULL, "multiple hosts provided with non-HTTP, non-TLS ports");
    free(r);
    r = validate("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n"
                 "  name: se\nspec:\n  hosts:\n  - db.example.com\n  ports:\n"
                 "  - number: 5432\n    name: tcp\n    protocol: TCP\n  resolution: NONE\n");
    EXPECT(r, true, "spec.ports[0]", "addresses are required for ports serving TCP");
    assert_int_equal(r->errors, 0);
    free(r);
}

static void test_sidecar(void **state)
{
    result *r = validate("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n"
                         "  name: sc\nspec:\n  egress:\n  - hosts:\n    - \"./*\"\n"
                         "    - \"istio-system/*\"\n    - reviews\n");
    EXPECT(r, false, "spec.egress[0].hosts[2]", "host must be of form namespace/dnsName");
    free(r);
    r = validate("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n  name: sc\n"
                 "spec:\n  workloadSelector:\n    labels: {}\n");
    EXPECT(r, false, "spec", "sidecar: empty configuration provided");
    free(r);
}

static void test_security(void **state)
{
    result *r = validate("apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                         "metadata:\n  name: ap\n  namespace: foo\nspec:\n  action: DENY\n"
                         "  rules:\n  - from:\n    - source:\n        ipBlocks: [\"1.2.3\"]\n"
                         "    to:\n    - operation:\n        ports: [\"99999\"]\n"
                         "    when:\n    - key: request.bogus\n      values: [x]\n");
    EXPECT(r, false, NULL, "invalid policy ap.foo: bad IP address (1.2.3)");
    EXPECT(r, false, NULL, "invalid policy ap.foo: bad port (99999): <nil>");
    EXPECT(r, false, NULL,
           "invalid policy ap.foo: invalid `value` for `key` request.bogus: unknown attribute: "
           "request.bogus");
    free(r);
    /* the current API's trustDomains / notTrustDomains and the source.serviceAccount and
     * source.trustDomain keys (reference security.md §6.2) are accepted */
    r = validate("apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                 "metadata:\n  name: ap\n  namespace: foo\nspec:\n  rules:\n  - from:\n"
                 "    - source:\n        trustDomains: [cluster.local]\n"
                 "    - source:\n        notTrustDomains: [\"bad*\"]\n"
                 "    when:\n    - key: source.serviceAccount\n      values: [foo/sa]\n"
                 "    - key: source.trustDomain\n      values: [cluster.local]\n");
    assert_int_equal(r->errors, 0);
    assert_int_equal(r->n, 0);
    free(r);
    r = validate("apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata:\n"
                 "  name: pa\nspec:\n  portLevelMtls:\n    \"8080\":\n      mode: DISABLE\n");
    EXPECT(r, false, "spec.portLevelMtls",
           "mesh/namespace peer authentication cannot have port level mTLS");
    free(r);
    r = validate("apiVersion: security.istio.io/v1\nkind: RequestAuthentication\nmetadata:\n"
                 "  name: ra\nspec:\n  jwtRules:\n  - jwksUri: ftp://x/keys\n");
    EXPECT(r, false, "spec.jwtRules[0]", "issuer must be set");
    EXPECT(r, false, "spec.jwtRules[0].jwksUri", "URI scheme \"ftp\" is not supported");
    free(r);
}

static void test_envoyfilter_warning(void **state)
{
    result *r =
        validate("apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\n"
                 "metadata:\n  name: ef\nspec:\n  configPatches:\n  - applyTo: HTTP_FILTER\n"
                 "    patch:\n      operation: INSERT_BEFORE\n");
    EXPECT(r, true, "spec", "EnvoyFilter exposes internal implementation details");
    EXPECT(r, false, "spec.configPatches[0].patch",
           "Envoy filter: missing patch value for non-remove operation");
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_virtualservice),
        cmocka_unit_test(test_valid_gateway_https_redirect),
        cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_ports_and_weights),
        cmocka_unit_test(test_field_types),
        cmocka_unit_test(test_string_matches),
        cmocka_unit_test(test_regexes),
        cmocka_unit_test(test_subsets_and_labels),
        cmocka_unit_test(test_http_route_rules),
        cmocka_unit_test(test_tls_routes),
        cmocka_unit_test(test_unreachable_rules),
        cmocka_unit_test(test_gateway),
        cmocka_unit_test(test_serviceentry),
        cmocka_unit_test(test_sidecar),
        cmocka_unit_test(test_security),
        cmocka_unit_test(test_envoyfilter_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
