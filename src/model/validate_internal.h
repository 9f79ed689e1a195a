/*
 * validate_internal.h - shared machinery of the schema validators (validate_*.c only).
 *
 * A validation run keeps a context (vc) with the resource, the callbacks, the field path of
 * the node being checked ("spec.http[0].route[1]") and a scratch arena for message pieces.
 * Validators push path steps as they descend, report errors and warnings at the current path
 * and pop on the way out. Messages use Istio's wording (pkg/config/validation); %q-style
 * quoting goes through vc_q().
 *
 * Field reads follow proto3 JSON decoding: an absent field or an explicit null is the zero
 * value, integers may be written as numbers or as quoted decimal strings. Semantic
 * validators only run once the schema walk (validate_schema.c) found the types right, so
 * they may read values without re-checking types.
 */
#ifndef WF_MODEL_VALIDATE_INTERNAL_H
#define WF_MODEL_VALIDATE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "model/validate_ex.h"

#define VC_PATH_MAX 768

typedef struct vc {
    const wf_resource *r;
    wf_validation_cb cb;
    wf_validation_aware_cb aware;
    void *arg;
    int errors;
    bool type_errors;       /* the schema walk found a value of the wrong type */
    const char *err_prefix; /* prepended to error messages ("invalid policy a.b: ") */
    wf_arena scratch;
    size_t plen;
    char path[VC_PATH_MAX];
} vc;

/* ---- path ---- */

/* Append ".key" (or "key" at the root); returns the previous length for vc_pop. */
size_t vc_push(vc *c, const char *key);
/* Append "[i]". */
size_t vc_push_idx(vc *c, size_t i);
/* Append "[key]" (a map key, as Kubernetes prints field paths). */
size_t vc_push_key(vc *c, const char *key);
void vc_pop(vc *c, size_t len);
/* For each non-null item of seq: enter "key[i]", call fn(c, item), leave. */
void vc_each(vc *c, const wf_node *seq, const char *key, void (*fn)(vc *c, const wf_node *item));
/* Enter item i of seq under key (path "key[i]"; *mark restores it with vc_pop) and return
 * it; when the item is null, report null_msg, restore the path and return NULL. */
const wf_node *vc_item(vc *c, const wf_node *seq, const char *key, size_t i, const char *null_msg,
                       size_t *mark);

/* ---- reports ---- */

void vc_err(vc *c, const wf_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vc_warn(vc *c, const wf_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Error or warning at an explicit path (NULL = current path). */
void vc_report(vc *c, bool warning, const char *path, const wf_node *at, const char *msg);
/* IST0130 / IST0131 parameters. */
void vc_aware(vc *c, wf_validation_aware_type type, const wf_node *at, const char *p0,
              const char *p1, const char *p2);

/* ---- formatting (strings live in the run's scratch arena) ---- */

/* Go's %q of s (strconv.Quote). */
const char *vc_q(vc *c, const char *s);
/* printf into the scratch arena ("" on out of memory). */
const char *vc_fmt(vc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Go's %v of the strings of a sequence node: "[a b]". */
const char *vc_slice(vc *c, const wf_node *seq);
/* Go's %f of a double ("%.6f"). */
const char *vc_f(vc *c, double v);

/* ---- reading values (absent or null = zero value) ---- */

/* Value of key in map m, NULL when absent or null. */
const wf_node *vc_get(const wf_node *m, const char *key);
/* True when key is present with a non-null value. */
bool vc_has(const wf_node *m, const char *key);
/* Scalar text of key, "" when absent. */
const char *vc_str(const wf_node *m, const char *key);
/* Text of a scalar node, "" otherwise. */
const char *vc_nstr(const wf_node *n);
/* Integer of key (number or quoted decimal), 0 when absent or not an integer. */
int64_t vc_int(const wf_node *m, const char *key);
/* Integer of a node; false when absent or not an integer. */
bool vc_nint(const wf_node *n, int64_t *out);
bool vc_bool(const wf_node *m, const char *key);
double vc_double(const wf_node *m, const char *key);
/* Number of items of the sequence at key (0 when absent). */
size_t vc_len(const wf_node *m, const char *key);
/* Number of entries of the map at key (0 when absent). */
size_t vc_mlen(const wf_node *m, const char *key);
/* Enum name of key: the string, or the name for a numeric value from names[] (NULL-
 * terminated, in number order); names[0] when absent. */
const char *vc_enum(const wf_node *m, const char *key, const char *const *names);

/* ---- names, addresses, numbers (validate_names.c) ---- */

bool vc_is_dns1123_label(const char *s);
bool vc_is_wildcard_dns1123_label(const char *s);
/* agent.ValidateFQDN / ValidateWildcardDomain / ...: NULL when valid, else Istio's message. */
const char *vc_check_fqdn(vc *c, const char *s);
const char *vc_check_wildcard_domain(vc *c, const char *s);
const char *vc_check_wildcard_domain_gw_vs(vc *c, bool sni, const char *s);
const char *vc_check_partial_wildcard(vc *c, const char *s);
/* ValidateNamespaceSlashWildcardHostname: reports each error itself. */
void vc_namespace_slash_host(vc *c, const wf_node *at, const char *host, bool is_gateway);
bool vc_is_ip(const char *s);
bool vc_is_cidr(const char *s);
/* agent.ValidateIPSubnet: NULL when valid. */
const char *vc_check_ip_subnet(vc *c, const char *s);
/* "port number %d must be in the range 1..65535" or NULL. */
const char *vc_check_port(vc *c, int64_t port);
/* Kubernetes label checks (labels.Instance.Validate): reports each bad key/value. */
void vc_labels(vc *c, const wf_node *map);
/* ValidatePortName. */
void vc_port_name(vc *c, const wf_node *at, const char *name);
/* protocol.Parse: "" when unsupported, else the canonical name ("HTTP", "TCP", ...). */
const char *vc_protocol(const char *s);
bool vc_proto_is_http(const char *p);
bool vc_proto_is_tls(const char *p);
bool vc_proto_is_tcp(const char *p);
/* ValidateProtocol: reports "unsupported protocol: X". */
void vc_validate_protocol(vc *c, const wf_node *at, const char *proto);
/* Unix address (ValidateUnixAddress) or NULL. */
const char *vc_check_unix_address(vc *c, const char *addr);
/* host.Name Matches / SubsetOf. */
bool vc_host_matches(const char *a, const char *b);
bool vc_host_subset_of(const char *a, const char *b);

/* ---- durations, regexes, headers (validate_values.c, validate_regex.c) ---- */

/* Go's time.ParseDuration; on error returns false and sets *msg (scratch). */
bool vc_parse_duration(vc *c, const char *s, int64_t *ns, const char **msg);
/* agent.ValidateDuration of the duration at key (when present). */
void vc_duration(vc *c, const wf_node *m, const char *key);
/* Go regexp.Compile (RE2): NULL when valid, else "error parsing regexp: ...". */
const char *vc_regex_error(vc *c, const char *re);
/* validateStringRegexp(re, where). */
void vc_string_regexp(vc *c, const wf_node *at, const char *re, const char *where);
/* validateStringMatch / validateStringMatchRegexp of a StringMatch node. */
void vc_string_match(vc *c, const wf_node *sm, const char *where, bool check_prefix);
void vc_http_header_name(vc *c, const wf_node *at, const char *name);
void vc_header_operations(vc *c, const wf_node *headers);
/* validateExportTo. */
void vc_export_to(vc *c, const wf_node *spec, bool is_se, bool is_dr_with_selector);
/* validateWorkloadSelector (type v1beta1 WorkloadSelector: matchLabels). */
void vc_workload_selector(vc *c, const wf_node *spec, const char *key);
/* ValidateAlphaWorkloadSelector (networking WorkloadSelector: labels); returns true when a
 * selector without labels was found (the caller words the warning); sets *failed on error. */
bool vc_alpha_workload_selector(vc *c, const wf_node *spec, bool *failed);
/* validateOneOfSelectorType + targetRef/targetRefs checks. */
void vc_policy_targets(vc *c, const wf_node *spec);
/* validateGatewayNames. */
void vc_gateway_names(vc *c, const wf_node *seq, bool gateway_semantics);
/* validateDestination. */
void vc_destination(vc *c, const wf_node *dest);
void vc_subset_name(vc *c, const wf_node *at, const char *name);
/* validatePercentage of a Percent node. */
void vc_percentage(vc *c, const wf_node *pct);

/* ---- per kind ---- */

void vc_schema_walk(vc *c, wf_kind kind, const wf_node *spec);
void vc_virtualservice(vc *c, const wf_node *spec);
void vc_vs_http_route(vc *c, const wf_node *http, bool delegate);
void vc_vs_unreachable(vc *c, const wf_node *spec);
void vc_destinationrule(vc *c, const wf_node *spec);
void vc_traffic_policy(vc *c, const wf_node *tp);
void vc_connection_pool(vc *c, const wf_node *cp);
void vc_gateway(vc *c, const wf_node *spec);
void vc_server_tls(vc *c, const wf_node *tls);
void vc_serviceentry(vc *c, const wf_node *spec);
void vc_workloadentry(vc *c, const wf_node *spec);
void vc_workloadentry_ex(vc *c, const wf_node *we, const wf_node *service_ports, bool allow_fqdn);
void vc_workloadgroup(vc *c, const wf_node *spec);
void vc_sidecar(vc *c, const wf_node *spec);
void vc_peerauthentication(vc *c, const wf_node *spec);
void vc_authorizationpolicy(vc *c, const wf_node *spec);
void vc_requestauthentication(vc *c, const wf_node *spec);
void vc_envoyfilter(vc *c, const wf_node *spec);
void vc_telemetry(vc *c, const wf_node *spec);
void vc_wasmplugin(vc *c, const wf_node *spec);
void vc_proxyconfig(vc *c, const wf_node *spec);

#endif
