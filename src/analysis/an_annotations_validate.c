/*
 * an_annotations_validate.c - injection annotation value checks.
 *
 * Port of istio/istio pkg/kube/inject/validate.go (AnnotationValidation and the functions it
 * maps to). proxy.istio.io/config follows validateProxyConfig: the value is YAML applied over
 * the default ProxyConfig (unknown fields allowed) and then checked with the parts of
 * pkg/config/validation/agent ValidateMeshConfigProxyConfig that a user override can break
 * (paths, service cluster, drain duration, discovery/statsd/metrics/access-log addresses,
 * admin and status ports, control plane auth policy).
 */
#include "analysis/an_annotations_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/message.h"
#include "core/strbuf.h"
#include "model/parse.h"

/* ---- Go strconv ---- */

/* strconv.ParseUint(s, 10, bits). On failure appends the *NumError text to err. */
static bool go_parse_uint(const char *s, unsigned bits, uint64_t *out, wf_strbuf *err)
{
    const uint64_t max = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    const uint64_t cutoff = UINT64_MAX / 10 + 1;
    const char *why = NULL;
    uint64_t n = 0;
    if (*s == '\0')
        why = "invalid syntax";
    for (const char *p = s; !why && *p; p++) {
        if (*p < '0' || *p > '9') {
            why = "invalid syntax";
            break;
        }
        if (n >= cutoff) {
            why = "value out of range";
            break;
        }
        uint64_t n1 = n * 10 + (uint64_t)(*p - '0');
        if (n1 < n * 10 || n1 > max) {
            why = "value out of range";
            break;
        }
        n = n1;
    }
    if (!why) {
        *out = n;
        return true;
    }
    wf_strbuf_puts(err, "strconv.ParseUint: parsing ");
    wf_go_quote(err, s);
    wf_strbuf_printf(err, ": %s", why);
    return false;
}

static bool go_parse_bool(const char *s, wf_strbuf *err)
{
    static const char *const ok[] = {"1", "t", "T", "TRUE",  "true",  "True",
                                     "0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (strcmp(s, ok[i]) == 0)
            return true;
    }
    wf_strbuf_puts(err, "strconv.ParseBool: parsing ");
    wf_go_quote(err, s);
    wf_strbuf_puts(err, ": invalid syntax");
    return false;
}

/* strings.TrimSpace (ASCII white space) into a bounded copy. */
static void trim_copy(const char *s, size_t len, char *out, size_t cap)
{
    while (len && isspace((unsigned char)*s)) {
        s++;
        len--;
    }
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

/* ---- validate.go ---- */

/* parsePort: ParseUint(TrimSpace(port), 10, 16). */
static bool parse_port(const char *port, size_t len, wf_strbuf *err)
{
    char raw[512], trimmed[512];
    size_t n = len < sizeof(raw) - 1 ? len : sizeof(raw) - 1;
    memcpy(raw, port, n);
    raw[n] = '\0';
    trim_copy(port, len, trimmed, sizeof(trimmed));
    uint64_t v;
    wf_strbuf inner = WF_STRBUF_INIT;
    bool ok = go_parse_uint(trimmed, 16, &v, &inner);
    if (!ok)
        wf_strbuf_printf(err, "failed parsing port '%s': %s", raw, wf_strbuf_cstr(&inner));
    wf_strbuf_free(&inner);
    return ok;
}

/* validatePortList(name, ports): parsePorts wraps parsePort's error once more. */
static bool port_list_ok(const char *param, const char *ports, wf_strbuf *err)
{
    char trimmed[4096];
    trim_copy(ports, strlen(ports), trimmed, sizeof(trimmed));
    const char *p = trimmed;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        wf_strbuf inner = WF_STRBUF_INIT;
        if (!parse_port(p, len, &inner)) {
            wf_strbuf_printf(err, "%s invalid: failed parsing port '%.*s': %s", param, (int)len, p,
                             wf_strbuf_cstr(&inner));
            wf_strbuf_free(&inner);
            return false;
        }
        wf_strbuf_free(&inner);
        if (!comma)
            break;
        p = comma + 1;
        if (*p == '\0') { /* trailing comma: an empty last element fails */
            wf_strbuf_printf(err,
                             "%s invalid: failed parsing port '': failed parsing port '': "
                             "strconv.ParseUint: parsing \"\": invalid syntax",
                             param);
            return false;
        }
    }
    return true;
}

/* Go's netip.ParsePrefix, with the address parsed by inet_pton (same strict forms). */
static const char *parse_prefix_problem(const char *cidr, wf_strbuf *detail)
{
    const char *slash = strrchr(cidr, '/');
    if (!slash)
        return "no '/'";
    char addr[128];
    size_t alen = (size_t)(slash - cidr);
    if (alen >= sizeof(addr))
        alen = sizeof(addr) - 1;
    memcpy(addr, cidr, alen);
    addr[alen] = '\0';
    unsigned char buf[16];
    bool v6 = strchr(addr, ':') != NULL;
    if (v6 && strchr(addr, '%'))
        return "IPv6 zones cannot be present in a prefix";
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, buf) != 1) {
        wf_strbuf_puts(detail, "ParseAddr(");
        wf_go_quote(detail, addr);
        wf_strbuf_puts(detail, "): unable to parse IP");
        return wf_strbuf_cstr(detail);
    }
    const char *bits = slash + 1;
    size_t blen = strlen(bits);
    bool digits = blen > 0 && blen <= 4 && strspn(bits, "0123456789") == blen;
    if (!digits || (blen > 1 && bits[0] == '0')) {
        wf_strbuf_puts(detail, "bad bits after slash: ");
        wf_go_quote(detail, bits);
        return wf_strbuf_cstr(detail);
    }
    if (atoi(bits) > (v6 ? 128 : 32))
        return "prefix length out of range";
    return NULL;
}

static bool cidr_list_ok(const char *param, const char *cidrs, wf_strbuf *err)
{
    const char *p = cidrs;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char cidr[256];
        size_t n = len < sizeof(cidr) - 1 ? len : sizeof(cidr) - 1;
        memcpy(cidr, p, n);
        cidr[n] = '\0';
        wf_strbuf detail = WF_STRBUF_INIT;
        const char *why = parse_prefix_problem(cidr, &detail);
        if (why) {
            wf_strbuf_printf(err, "%s invalid: failed parsing cidr '%s': netip.ParsePrefix(", param,
                             cidr);
            wf_go_quote(err, cidr);
            wf_strbuf_printf(err, "): %s", why);
            wf_strbuf_free(&detail);
            return false;
        }
        wf_strbuf_free(&detail);
        if (!comma)
            break;
        p = comma + 1;
        if (*p == '\0') {
            wf_strbuf_printf(
                err, "%s invalid: failed parsing cidr '': netip.ParsePrefix(\"\"): no '/'", param);
            return false;
        }
    }
    return true;
}

static bool interception_mode_ok(const char *v, wf_strbuf *err)
{
    if (strcmp(v, "REDIRECT") == 0 || strcmp(v, "TPROXY") == 0 || strcmp(v, "NONE") == 0)
        return true;
    wf_strbuf_printf(err, "interceptionMode invalid, use REDIRECT,TPROXY,NONE: %s", v);
    return false;
}

static bool status_port_ok(const char *v, wf_strbuf *err)
{
    wf_strbuf inner = WF_STRBUF_INIT;
    bool ok = parse_port(v, strlen(v), &inner);
    if (!ok)
        wf_strbuf_printf(err, "excludeInboundPorts invalid: %s", wf_strbuf_cstr(&inner));
    wf_strbuf_free(&inner);
    return ok;
}

static bool uint32_ok(const char *v, wf_strbuf *err)
{
    uint64_t n;
    return go_parse_uint(v, 32, &n, err);
}

static bool include_ip_ranges_ok(const char *v, wf_strbuf *err)
{
    return strcmp(v, "*") == 0 || cidr_list_ok("includeIPRanges", v, err);
}

static bool exclude_ip_ranges_ok(const char *v, wf_strbuf *err)
{
    return cidr_list_ok("excludeIPRanges", v, err);
}

static bool include_inbound_ok(const char *v, wf_strbuf *err)
{
    return strcmp(v, "*") == 0 || port_list_ok("includeInboundPorts", v, err);
}

static bool exclude_inbound_ok(const char *v, wf_strbuf *err)
{
    return port_list_ok("excludeInboundPorts", v, err);
}

static bool exclude_outbound_ok(const char *v, wf_strbuf *err)
{
    return port_list_ok("excludeOutboundPorts", v, err);
}

/* ---- proxy.istio.io/config ---- */

typedef struct first_doc {
    wf_node *root;
} first_doc;

static int take_first(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    first_doc *d = arg;
    if (!d->root)
        d->root = root;
    return 0;
}

/* ValidatePort: 1..65535. */
static bool port_value_ok(const wf_node *n, const char *what, wf_strbuf *err)
{
    int64_t v;
    if (!n || n->type == WF_NODE_NULL)
        return true;
    if (!wf_node_int(n, &v)) {
        wf_strbuf_printf(err, "invalid %s: not a number", what);
        return false;
    }
    if (v < 1 || v > 65535) {
        wf_strbuf_printf(err, "invalid %s: port number %lld must be in the range 1..65535", what,
                         (long long)v);
        return false;
    }
    return true;
}

/* ValidateProxyAddress: host:port with a valid port and a non-empty host. */
static bool proxy_address_ok(const char *addr, wf_strbuf *err)
{
    const char *colon = strrchr(addr, ':');
    if (!colon) {
        wf_strbuf_puts(err, "unable to split ");
        wf_go_quote(err, addr);
        wf_strbuf_puts(err, ": missing port in address");
        return false;
    }
    const char *port = colon + 1;
    size_t plen = strlen(port);
    if (plen == 0 || plen > 5 || strspn(port, "0123456789") != plen) {
        wf_strbuf_printf(err, "port (%s) is not a number", port);
        return false;
    }
    long p = atol(port);
    if (p < 1 || p > 65535) {
        wf_strbuf_printf(err, "port number %ld must be in the range 1..65535", p);
        return false;
    }
    if (colon == addr) {
        wf_strbuf_puts(err, "\"\" is not a valid hostname or an IPv4/IPv6 address");
        return false;
    }
    return true;
}

static bool string_field_set_empty(const wf_node *cfg, const char *key)
{
    const wf_node *n = wf_map_get(cfg, key);
    return n && n->type == WF_NODE_SCALAR && n->len == 0;
}

static bool address_field_ok(const wf_node *n, const char *what, wf_strbuf *err)
{
    const char *s = wf_node_str(n);
    if (!s || !*s)
        return true;
    wf_strbuf inner = WF_STRBUF_INIT;
    bool ok = proxy_address_ok(s, &inner);
    if (!ok) {
        wf_strbuf_printf(err, "invalid %s ", what);
        wf_go_quote(err, s);
        wf_strbuf_printf(err, ": %s", wf_strbuf_cstr(&inner));
    }
    wf_strbuf_free(&inner);
    return ok;
}

/* A protobuf JSON duration ("5s", "0.5s") of at least 1ms with ms precision. */
static bool duration_ok(const wf_node *n, wf_strbuf *err)
{
    const char *s = wf_node_str(n);
    if (!n || n->type == WF_NODE_NULL)
        return true;
    size_t len = s ? strlen(s) : 0;
    if (len < 2 || s[len - 1] != 's') {
        wf_strbuf_puts(err, "bad Duration: ");
        wf_go_quote(err, s ? s : "");
        return false;
    }
    size_t ip = strspn(s, "0123456789");
    size_t fp = 0;
    if (s[ip] == '.')
        fp = strspn(s + ip + 1, "0123456789");
    size_t used = ip + (s[ip] == '.' ? 1 + fp : 0);
    if (ip == 0 || used != len - 1) {
        wf_strbuf_puts(err, "bad Duration: ");
        wf_go_quote(err, s);
        return false;
    }
    bool below_ms = strtod(s, NULL) < 0.001;
    if (fp > 3) {
        for (size_t i = ip + 4; i < len - 1; i++) {
            if (s[i] != '0') {
                wf_strbuf_puts(err, "only durations to ms precision are supported");
                return false;
            }
        }
    }
    if (below_ms) {
        wf_strbuf_puts(err, "duration must be greater than 1ms");
        return false;
    }
    return true;
}

static bool auth_policy_ok(const wf_node *n, wf_strbuf *err)
{
    const char *s = wf_node_str(n);
    if (!n || n->type == WF_NODE_NULL)
        return true;
    if (s && (strcmp(s, "NONE") == 0 || strcmp(s, "MUTUAL_TLS") == 0 || strcmp(s, "0") == 0 ||
              strcmp(s, "1") == 0))
        return true;
    if (s && (strcmp(s, "INHERIT") == 0 || strcmp(s, "1000") == 0))
        wf_strbuf_puts(err, "invalid authentication policy: unrecognized control plane auth "
                            "policy \"INHERIT\"");
    else
        wf_strbuf_printf(err,
                         "failed to convert to apply proxy config: unknown value %s for "
                         "enum istio.mesh.v1alpha1.AuthenticationPolicy",
                         s ? s : "");
    return false;
}

/* ---- ProxyConfig's JSON types (istio/api mesh/v1alpha1/proxy.proto), as jsonpb decodes them:
 * a value of the wrong type fails protomarshal.ApplyYAML, unknown fields do not (it retries
 * with AllowUnknownFields). */

typedef enum pc_type {
    PC_STRING,
    PC_INT32, /* int32 and google.protobuf.Int32Value: a number or a numeric string */
    PC_UINT32,
    PC_BOOL,     /* google.protobuf.BoolValue: true or false */
    PC_DURATION, /* google.protobuf.Duration: "1.5s" */
    PC_ENUM,     /* a value name of enum_values, or its number */
    PC_STRMAP,   /* map<string,string> */
    PC_STRLIST,  /* repeated string */
    PC_MESSAGE,  /* an object */
} pc_type;

static const char *const auth_policy_names[] = {"NONE", "MUTUAL_TLS", "INHERIT", NULL};
static const char *const interception_names[] = {"REDIRECT", "TPROXY", "NONE", NULL};
static const char *const tracing_service_names[] = {
    "APP_LABEL_AND_NAMESPACE", "CANONICAL_NAME_ONLY", "CANONICAL_NAME_AND_NAMESPACE", NULL};

static const struct pc_field {
    const char *name;
    pc_type type;
    const char *const *enum_values;
} pc_fields[] = {
    {"configPath", PC_STRING, NULL},
    {"binaryPath", PC_STRING, NULL},
    {"serviceCluster", PC_STRING, NULL},
    {"tracingServiceName", PC_ENUM, tracing_service_names},
    {"drainDuration", PC_DURATION, NULL},
    {"parentShutdownDuration", PC_DURATION, NULL},
    {"discoveryAddress", PC_STRING, NULL},
    {"discoveryRefreshDelay", PC_DURATION, NULL},
    {"zipkinAddress", PC_STRING, NULL},
    {"statsdUdpAddress", PC_STRING, NULL},
    {"envoyMetricsServiceAddress", PC_STRING, NULL},
    {"proxyAdminPort", PC_INT32, NULL},
    {"availabilityZone", PC_STRING, NULL},
    {"controlPlaneAuthPolicy", PC_ENUM, auth_policy_names},
    {"customConfigFile", PC_STRING, NULL},
    {"statNameLength", PC_INT32, NULL},
    {"concurrency", PC_INT32, NULL},
    {"proxyBootstrapTemplatePath", PC_STRING, NULL},
    {"interceptionMode", PC_ENUM, interception_names},
    {"tracing", PC_MESSAGE, NULL},
    {"sds", PC_MESSAGE, NULL},
    {"envoyAccessLogService", PC_MESSAGE, NULL},
    {"envoyMetricsService", PC_MESSAGE, NULL},
    {"proxyMetadata", PC_STRMAP, NULL},
    {"runtimeValues", PC_STRMAP, NULL},
    {"statusPort", PC_INT32, NULL},
    {"extraStatTags", PC_STRLIST, NULL},
    {"gatewayTopology", PC_MESSAGE, NULL},
    {"terminationDrainDuration", PC_DURATION, NULL},
    {"meshId", PC_STRING, NULL},
    {"readinessProbe", PC_MESSAGE, NULL},
    {"proxyStatsMatcher", PC_MESSAGE, NULL},
    {"holdApplicationUntilProxyStarts", PC_BOOL, NULL},
    {"caCertificatesPem", PC_STRLIST, NULL},
    {"image", PC_MESSAGE, NULL},
    {"privateKeyProvider", PC_MESSAGE, NULL},
    {"proxyHeaders", PC_MESSAGE, NULL},
    {"fileFlushInterval", PC_DURATION, NULL},
    {"fileFlushMinSizeKb", PC_UINT32, NULL},
};

static const struct pc_field *pc_field_def(const char *name)
{
    for (size_t i = 0; i < sizeof pc_fields / sizeof pc_fields[0]; i++)
        if (strcmp(pc_fields[i].name, name) == 0)
            return &pc_fields[i];
    return NULL;
}

bool wf_proxy_config_field_known(const char *name)
{
    return pc_field_def(name) != NULL;
}

static bool scalar_is_string(const wf_node *n)
{
    return n->type == WF_NODE_SCALAR && wf_node_is_string(n);
}

/* An integer in lo..hi, written as a number or a string of one (jsonpb takes both). */
static bool pc_int_ok(const wf_node *n, long long lo, long long hi)
{
    if (n->type != WF_NODE_SCALAR)
        return false;
    const char *s = wf_node_str(n);
    char *end = NULL;
    long long v = s && *s ? strtoll(s, &end, 10) : 0;
    return s && *s && end && !*end && v >= lo && v <= hi;
}

static bool pc_enum_ok(const wf_node *n, const char *const *names)
{
    const char *s = n->type == WF_NODE_SCALAR ? wf_node_str(n) : NULL;
    for (size_t i = 0; s && names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return !n->quoted && pc_int_ok(n, INT32_MIN, INT32_MAX);
}

static bool pc_strings_ok(const wf_node *n, bool map)
{
    if (n->type != (map ? WF_NODE_MAP : WF_NODE_SEQ))
        return false;
    for (size_t i = 0; i < n->len; i++) {
        const wf_node *v = map ? n->u.entries[i].value : wf_seq_at(n, i);
        if (v && v->type != WF_NODE_NULL && !scalar_is_string(v))
            return false;
    }
    return true;
}

static bool pc_value_ok(const struct pc_field *f, const wf_node *n)
{
    if (!n || n->type == WF_NODE_NULL)
        return true;
    switch (f->type) {
    case PC_STRING:
        return scalar_is_string(n);
    case PC_INT32:
        return pc_int_ok(n, INT32_MIN, INT32_MAX);
    case PC_UINT32:
        return pc_int_ok(n, 0, UINT32_MAX);
    case PC_BOOL: {
        bool b;
        return n->type == WF_NODE_SCALAR && !n->quoted && wf_node_bool(n, &b);
    }
    case PC_DURATION: {
        const char *s = n->type == WF_NODE_SCALAR ? wf_node_str(n) : NULL;
        size_t len = s ? strlen(s) : 0;
        if (len < 2 || s[len - 1] != 's')
            return false;
        size_t i = s[0] == '-' ? 1 : 0, ip = strspn(s + i, "0123456789");
        i += ip;
        if (s[i] == '.')
            i += 1 + strspn(s + i + 1, "0123456789");
        return ip > 0 && i == len - 1;
    }
    case PC_ENUM:
        return pc_enum_ok(n, f->enum_values);
    case PC_STRMAP:
        return pc_strings_ok(n, true);
    case PC_STRLIST:
        return pc_strings_ok(n, false);
    case PC_MESSAGE:
        return n->type == WF_NODE_MAP;
    }
    return false;
}

static const char *pc_type_name(const struct pc_field *f)
{
    static const char *const names[] = {
        [PC_STRING] = "a string",
        [PC_INT32] = "an integer (int32)",
        [PC_UINT32] = "an integer (uint32)",
        [PC_BOOL] = "true or false",
        [PC_DURATION] = "a duration in seconds (\"5s\")",
        [PC_ENUM] = "one of the enum's names",
        [PC_STRMAP] = "a map of strings",
        [PC_STRLIST] = "a list of strings",
        [PC_MESSAGE] = "an object",
    };
    return names[f->type];
}

/* Every known field's value has its proto type (ApplyYAML fails otherwise). */
static bool proxy_config_types_ok(const wf_node *cfg, wf_strbuf *err)
{
    for (size_t i = 0; i < cfg->len; i++) {
        const wf_map_entry *e = &cfg->u.entries[i];
        const struct pc_field *f = pc_field_def(e->key);
        if (!f || pc_value_ok(f, e->value))
            continue;
        const char *s = e->value && e->value->type == WF_NODE_SCALAR ? wf_node_str(e->value) : NULL;
        wf_strbuf_printf(err, "failed to convert to apply proxy config: %s: ", e->key);
        if (s)
            wf_go_quote(err, s);
        else
            wf_strbuf_puts(err, e->value && e->value->type == WF_NODE_MAP ? "an object" : "a list");
        wf_strbuf_printf(err, " is not %s", pc_type_name(f));
        return false;
    }
    return true;
}

static bool proxy_config_fields_ok(const wf_node *cfg, wf_strbuf *err)
{
    if (!proxy_config_types_ok(cfg, err))
        return false;
    if (string_field_set_empty(cfg, "configPath")) {
        wf_strbuf_puts(err, "config path must be set");
        return false;
    }
    if (string_field_set_empty(cfg, "binaryPath")) {
        wf_strbuf_puts(err, "binary path must be set");
        return false;
    }
    if (string_field_set_empty(cfg, "serviceCluster")) {
        wf_strbuf_puts(err, "service cluster must be specified");
        return false;
    }
    if (!duration_ok(wf_map_get(cfg, "drainDuration"), err))
        return false;
    if (string_field_set_empty(cfg, "discoveryAddress")) {
        wf_strbuf_puts(err, "discovery address must be set to the proxy discovery service");
        return false;
    }
    return address_field_ok(wf_map_get(cfg, "discoveryAddress"), "discovery address:", err) &&
           address_field_ok(wf_map_get(cfg, "statsdUdpAddress"), "statsd udp address", err) &&
           address_field_ok(wf_node_path(cfg, "envoyMetricsService.address"),
                            "envoy metrics service address", err) &&
           address_field_ok(wf_node_path(cfg, "envoyAccessLogService.address"),
                            "envoy access log service address", err) &&
           port_value_ok(wf_map_get(cfg, "proxyAdminPort"), "proxy admin port", err) &&
           auth_policy_ok(wf_map_get(cfg, "controlPlaneAuthPolicy"), err) &&
           port_value_ok(wf_map_get(cfg, "statusPort"), "status port", err);
}

static bool proxy_config_ok(const char *v, wf_strbuf *err)
{
    wf_arena a;
    wf_arena_init(&a);
    first_doc doc = {NULL};
    wf_parse_error perr;
    memset(&perr, 0, sizeof(perr));
    int rc = wf_parse_yaml(&a, v, strlen(v), take_first, &doc, &perr);
    bool ok = true;
    if (rc != 0) {
        wf_strbuf_printf(err, "failed to convert to apply proxy config: %s",
                         rc < 0 ? "out of memory" : perr.message);
        ok = false;
    } else if (doc.root && doc.root->type != WF_NODE_MAP && doc.root->type != WF_NODE_NULL) {
        wf_strbuf_puts(err, "failed to convert to apply proxy config: json: cannot unmarshal "
                            "non-object into Go value of type map[string]json.RawMessage");
        ok = false;
    } else if (doc.root && doc.root->type == WF_NODE_MAP) {
        ok = proxy_config_fields_ok(doc.root, err);
    }
    wf_arena_destroy(&a);
    return ok;
}

/* ---- AnnotationValidation ---- */

typedef bool (*validate_fn)(const char *value, wf_strbuf *err);

static const struct {
    const char *name;
    validate_fn fn;
} validators[] = {
    {"sidecar.istio.io/interceptionMode", interception_mode_ok},
    {"status.sidecar.istio.io/port", status_port_ok},
    {"readiness.status.sidecar.istio.io/initialDelaySeconds", uint32_ok},
    {"readiness.status.sidecar.istio.io/periodSeconds", uint32_ok},
    {"readiness.status.sidecar.istio.io/failureThreshold", uint32_ok},
    {"traffic.sidecar.istio.io/includeOutboundIPRanges", include_ip_ranges_ok},
    {"traffic.sidecar.istio.io/excludeOutboundIPRanges", exclude_ip_ranges_ok},
    {"traffic.sidecar.istio.io/includeInboundPorts", include_inbound_ok},
    {"traffic.sidecar.istio.io/excludeInboundPorts", exclude_inbound_ok},
    {"traffic.sidecar.istio.io/excludeOutboundPorts", exclude_outbound_ok},
    {"prometheus.istio.io/merge-metrics", go_parse_bool},
    {"proxy.istio.io/config", proxy_config_ok},
};

bool wf_inject_annotation_invalid(wf_arena *a, const char *name, const char *value,
                                  const char **problem)
{
    for (size_t i = 0; i < sizeof(validators) / sizeof(validators[0]); i++) {
        if (strcmp(validators[i].name, name) != 0)
            continue;
        wf_strbuf err = WF_STRBUF_INIT;
        bool ok = validators[i].fn(value ? value : "", &err);
        if (!ok) {
            const char *text = wf_strbuf_failed(&err) ? NULL : wf_strbuf_cstr(&err);
            *problem = text ? wf_arena_strdup(a, text) : NULL;
            if (!*problem)
                *problem = "invalid value";
        }
        wf_strbuf_free(&err);
        return !ok;
    }
    return false;
}
