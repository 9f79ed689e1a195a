/*
 * engine.h - the RBAC matcher engine shared by the HTTP and the network RBAC filters: Envoy's
 * envoy.config.rbac.v3.RBAC (action, policies {permissions, principals}) compiled once, when
 * the config is loaded (proxy/bootstrap/bootstrap_rbac.c), into an immutable tree, and
 * evaluated per request or connection.
 *
 * Envoy behaviour followed (source/extensions/filters/common/rbac/engine_impl.cc, matchers.cc;
 * api envoy/config/rbac/v3/rbac.proto):
 *  - a policy matches when one of its permissions and one of its principals match;
 *  - policies are tried in the order of their names (Envoy keeps them in a std::map), the first
 *    that matches is the effective policy;
 *  - action ALLOW: allowed when a policy matched; DENY: allowed when none matched; LOG: always
 *    allowed (should_log tells whether a policy matched);
 *  - permissions: any, and_rules / or_rules / not_rule, header (HeaderUtility::matchHeaders on
 *    the request, pseudo headers :method :path :authority :scheme; no request = no headers),
 *    url_path (the request path without query and fragment, after the connection manager's
 *    normalization; no request = no match), uri_template (envoy.extensions.path.match.
 *    uri_template: `*` one path segment, `**` any run of segments, `{x}` / `{x=*}` / `{x=**}`;
 *    full match of the path without the query), destination_ip (the connection's local
 *    address), destination_port, destination_port_range [start, end), requested_server_name
 *    (the SNI, "" when none), metadata (MetadataMatcher on the dynamic metadata);
 *  - principals: any, and_ids / or_ids / not_id, authenticated (a TLS connection whose peer
 *    certificate's URI SANs, then subject, match principal_name; without principal_name any TLS
 *    connection; DNS SANs, which Envoy tries between the two, are not consulted), source_ip
 *    (deprecated: the connection's peer),
 *    direct_remote_ip (the connection's peer), remote_ip (the downstream remote address, which
 *    x-forwarded-for may set: proxy/http/xff.h), header, url_path, metadata;
 *  - MetadataMatcher {filter, path[].key, value, invert}: the value at path in the filter's
 *    namespace; ValueMatcher null_match (a JSON null), double_match (exact | range
 *    [start, end)), string_match, bool_match, present_match (any value), list_match.one_of
 *    (some element of a list), or_match (any of value_matchers); a missing value matches
 *    nothing (present_match: false never matches, as Envoy's PresentMatcher); invert negates.
 * Not supported (refused when loading): condition / checked_condition (CEL), matcher
 * (the unified matcher API), filter_state, sourced_metadata, custom principals.
 *
 * Cost: evaluation allocates nothing and looks nothing up by name except in the dynamic
 * metadata (a metadata matcher walks its filter's namespace); addresses are parsed from the
 * stream's text form only when a matcher asks for them (once per evaluation input). Regular
 * expressions are matched with PCRE2 under the worker's limits (proxy/config/route.h).
 *
 * Threads: the engine is read-only and shared; an input belongs to one evaluation.
 */
#ifndef WEFT_PROXY_FILTERS_RBAC_ENGINE_H
#define WEFT_PROXY_FILTERS_RBAC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proxy/config/config.h"
#include "proxy/config/route.h"
#include "proxy/net/filter_chain_match.h"
#include "proxy/stream_info/stream_info.h"

typedef enum { WP_RBAC_ALLOW, WP_RBAC_DENY, WP_RBAC_LOG } wp_rbac_action;

typedef enum {
    WP_RBAC_ANY,
    WP_RBAC_AND,
    WP_RBAC_OR,
    WP_RBAC_NOT,
    WP_RBAC_HEADER,
    WP_RBAC_URL_PATH,
    WP_RBAC_URI_TEMPLATE,
    WP_RBAC_DEST_IP,
    WP_RBAC_DEST_PORT,
    WP_RBAC_DEST_PORT_RANGE,
    WP_RBAC_SNI,
    WP_RBAC_METADATA,
    WP_RBAC_AUTHENTICATED,
    WP_RBAC_DIRECT_REMOTE_IP, /* direct_remote_ip and the deprecated source_ip */
    WP_RBAC_REMOTE_IP,
} wp_rbac_kind;

/* ValueMatcher (envoy.type.matcher.v3.ValueMatcher). */
typedef enum {
    WP_VM_NULL,
    WP_VM_DOUBLE_EXACT,
    WP_VM_DOUBLE_RANGE,
    WP_VM_STRING,
    WP_VM_BOOL,
    WP_VM_PRESENT,
    WP_VM_LIST_ONE_OF,
    WP_VM_OR,
} wp_vm_kind;

typedef struct wp_rbac_vm {
    wp_vm_kind kind;
    bool b;           /* bool_match; present_match */
    double d, lo, hi; /* double_match exact / range [lo, hi) */
    wp_string_matcher sm;
    const struct wp_rbac_vm *kids; /* or_match: n; list_match.one_of: 1 */
    size_t n;
} wp_rbac_vm;

/* MetadataMatcher. */
typedef struct {
    const char *filter;      /* namespace, e.g. "envoy.filters.http.jwt_authn" */
    const char *const *path; /* keys */
    size_t npath;            /* >= 1 */
    wp_rbac_vm value;
    bool invert;
} wp_rbac_md;

/* One node of a permission or principal tree. */
/* A HEADER node's name when it is a pseudo-header read straight from the request (no lookup by
 * name on the request path): set when the config is compiled. */
typedef enum {
    WP_RBAC_H_OTHER,
    WP_RBAC_H_METHOD,    /* :method */
    WP_RBAC_H_PATH,      /* :path (query included, as Envoy's header matcher sees it) */
    WP_RBAC_H_AUTHORITY, /* :authority (or host) */
} wp_rbac_hdr;

typedef struct wp_rbac_node {
    wp_rbac_kind kind;
    uint8_t hdr; /* wp_rbac_hdr of a HEADER node */
    union {
        struct {
            const struct wp_rbac_node *kids; /* AND / OR: n children; NOT: one */
            size_t n;
        } set;
        wp_kv_matcher header;
        struct {
            wp_string_matcher sm; /* URL_PATH, SNI, AUTHENTICATED (when has_sm) */
            bool has_sm;
        } str;
        pcre2_code *tpl; /* URI_TEMPLATE: the template as a full-match regex */
        wp_cidr cidr;    /* DEST_IP, *_REMOTE_IP */
        struct {
            uint32_t lo, hi; /* DEST_PORT: lo == port, hi == port + 1; RANGE [lo, hi) */
        } port;
        const wp_rbac_md *md;
    } u;
} wp_rbac_node;

typedef struct {
    const char *name;
    const wp_rbac_node *permissions; /* OR */
    size_t npermissions;
    const wp_rbac_node *principals; /* OR */
    size_t nprincipals;
    /* "rbac_access_denied_matched_policy[<name, white space as '_'>]" (Envoy's responseDetail) */
    const char *details;
} wp_rbac_policy;

/* One RBAC (rules or shadow_rules): policies sorted by name. */
typedef struct wp_rbac_engine {
    wp_rbac_action action;
    const wp_rbac_policy *policies;
    size_t npolicies;
} wp_rbac_engine;

/* What one evaluation sees. Strings are NUL-terminated and owned by the caller; addresses in
 * the stream info's text form ("ip:port", "[v6]:port", or a bare IP). */
typedef struct wp_rbac_input {
    wp_regex_ctx *rx;
    const wp_route_req *req;   /* the request; NULL for a connection (network RBAC) */
    const char *local;         /* destination address */
    const char *direct_remote; /* the connection's peer */
    const char *remote;        /* the downstream remote (x-forwarded-for aware) */
    const char *sni;           /* NULL or "" when none */
    bool tls;                  /* the connection is TLS (Envoy: connection.ssl() is set) */
    const char *peer_uri_sans; /* URI SANs joined by ',' (NULL none) */
    const char *peer_subject;  /* RFC 2253 subject (NULL none) */
    const wp_dyn_md *md;       /* dynamic metadata, NULL none */
    /* parsed on first use: 0 local, 1 direct remote, 2 remote */
    uint8_t parsed, parsed_ok;
    bool path_known; /* path_only holds the length of req->path before '?' or '#' (first use) */
    size_t path_only;
    struct sockaddr_storage sa[3];
} wp_rbac_input;

/* Whether the node matches the input. */
bool wp_rbac_node_match(const wp_rbac_node *n, wp_rbac_input *in);

/* Whether policy p matches (one permission and one principal). */
bool wp_rbac_policy_match(const wp_rbac_policy *p, wp_rbac_input *in);

/* The engine's decision (Envoy's handleAction): true = allowed. *matched (may be NULL)
 * receives the effective policy's index (the first matching policy by name), -1 when none
 * matched. */
bool wp_rbac_allowed(const wp_rbac_engine *e, wp_rbac_input *in, int *matched);

/* A MetadataMatcher over dynamic metadata md (NULL = none). */
bool wp_rbac_md_match(wp_regex_ctx *rx, const wp_rbac_md *m, const wp_dyn_md *md);

/* Envoy's URI template ("/a/" then `*`; `**` then "/b"; "/{x}/c") as an RE2-syntax full-match
 * pattern into out (cap bytes, NUL-terminated). Operators and variables are whole segments;
 * `*` / {x} / {x=*} match one segment, `**` / {x=**} any run of characters and '/'s and must be
 * the last operator. Returns 0, or -1 with a reason in *why (static) when the template is
 * invalid (does not start with '/', an empty segment, a character that is no path literal, an
 * operator after `**`) or does not fit. */
int wp_rbac_uri_template_regex(const char *tpl, char *out, size_t cap, const char **why);

#endif
