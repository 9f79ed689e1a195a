/*
 * cmd_pc.h - internals of `weftctl proxy-config` (istioctl proxy-config, reference
 * istioctl-troubleshooting.md §1 and §2), shared by the cmd_pc_*.c files:
 *
 *   cmd_proxy_config.c  argument parsing, input (-f FILE or a proxy through weft-pilot), dispatch
 *   cmd_pc_output.c     -o json / -o yaml writers (Go json.MarshalIndent, go-yaml v2 rules §1.3)
 *   cmd_pc_cluster.c    cluster names (§1.4), pc cluster (§2.2), pc bootstrap (§2.1)
 *   cmd_pc_listener.c   pc listener (§2.3) and the route MATCH rendering it shares
 *   cmd_pc_route.c      pc route (§2.4)
 *   cmd_pc_endpoint.c   pc endpoint (§2.5, /clusters?format=json) and pc eds (§2.6)
 *   cmd_pc_secret.c     pc secret (§2.7, X.509 through libcrypto) and pc ecds (§2.8)
 *   cmd_pc_log.c        pc log (§2.10): runtime log levels over the admin API
 *   cmd_pc_rootca.c     pc rootca-compare (security.md §2.5): two proxies' ROOTCA bundles
 *
 * Every writer appends its output to `out` and returns 0, or -1 with a message in `err`
 * (no trailing newline, no "Error: " prefix: the caller adds it).
 */
#ifndef WF_CLI_CMD_PC_H
#define WF_CLI_CMD_PC_H

#include <stdbool.h>
#include <time.h>

#include <jansson.h>

#include "cli/envoy_dump.h"
#include "core/strbuf.h"

typedef enum { PC_OUT_SHORT, PC_OUT_JSON, PC_OUT_YAML } pc_out;

typedef struct pc_opts {
    pc_out out;
    /* filters; NULL = not given */
    const char *fqdn, *direction, *subset; /* clusters */
    const char *address, *type;            /* listeners (address also endpoints) */
    const char *name;                      /* routes */
    const char *status, *cluster;          /* endpoints */
    long port;                             /* 0 = not given */
    bool verbose;                          /* listener/route: the long form (default true) */
    bool all;                              /* inside `pc all`: type prefixes on first columns */
    time_t now;                            /* "now" for certificate validity */
    /* A live proxy's /server_info "version" (Envoy's "<commit>/<x.y.z>/<Clean|Modified>/
     * <RELEASE|DEBUG>/<ssl lib>"), fetched for `pc bootstrap -o short` when its bootstrap
     * node has no user_agent_build_version (weft-proxy's does not yet); NULL otherwise. */
    const char *server_version;
    /* weft's notes beside istioctl's table (printed on stderr after it, so stdout stays
     * istioctl's): pc listener --port N on a captured sidecar (cmd_pc_capture.c). NULL: none. */
    wf_strbuf *notes;
} pc_opts;

/* ---- output (cmd_pc_output.c) ---- */

/* Go's json.MarshalIndent(v, "", "    ") of v (no trailing newline). */
void pc_json_write(wf_strbuf *out, const json_t *v);
/* sigs.k8s.io/yaml (go-yaml v2) rendering of v, ending with a newline. */
void pc_yaml_write(wf_strbuf *out, const json_t *v);
/* Prints v (a normalized snake_case value) as istioctl prints the selected resources for
 * -o json/yaml: field names to lowerCamelCase, and when strip_any is set the top-level "@type"
 * of each array item is dropped (the items are typed protos, not Anys). Adds the final
 * newline(s) istioctl's Println adds. An object v with strip_any loses its own "@type". Returns 0,
 * or -1 when out of memory. */
int pc_print_raw(const pc_opts *o, const json_t *v, bool strip_any, wf_strbuf *out, wf_strbuf *err);

/* ---- writers ---- */
int pc_bootstrap(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
int pc_clusters(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
int pc_listeners(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
int pc_routes(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
int pc_eds(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
int pc_secrets(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
int pc_ecds(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);
/* rootca-compare (cmd_pc_rootca.c). pc_rootca_pem: the PEM text of the dump's active ROOTCA
 * secret (validation_context.trusted_ca.inline_bytes, decoded; *pem malloc'd), or -1 with err
 * naming id ("<pod>.<ns>") and why (no secrets section, no ROOTCA, still WARMING).
 * pc_rootca_compare: identical when any certificate of one bundle is one of the other; prints
 * istioctl's sentence when identical (-o json|yaml: the comparison as a document, either
 * way); returns 0 with *identical, and when not identical err holds istioctl's error text
 * (the caller exits 1); -1 with err when a bundle does not parse. */
int pc_rootca_pem(const wf_envoy_dump *d, const char *id, char **pem, wf_strbuf *err);
int pc_rootca_compare(const char *const ids[2], const char *const pems[2], const pc_opts *o,
                      bool *identical, wf_strbuf *out, wf_strbuf *err);
/* d is a /clusters?format=json document here, not a config dump. */
int pc_endpoints(const wf_envoy_dump *d, const pc_opts *o, wf_strbuf *out, wf_strbuf *err);

/* ---- live proxies (cmd_proxy_config.c, cmd_pc_log.c) ---- */

typedef struct wf_mesh wf_mesh;

typedef struct pc_live {
    char id[300];    /* "<pod>.<ns>" */
    char admin[128]; /* the proxy's admin address, "ip:port" (for messages) */
    char pod[256], ns[256];
    wf_mesh *mesh; /* how it is reached (mesh_access.h): directly or through the API server */
    long timeout_ms;
} pc_live;

/* One admin request. Returns 0 with *body (malloc'd, caller frees) for a 200 answer, or -1
 * with err: "proxy <id> (admin <addr>) did not answer: <why>", or for another status
 * "unexpected status code: N" plus the proxy's message. */
int pc_live_fetch(const pc_live *live, const char *method, const char *path, char **body,
                  wf_strbuf *err);
/* pc log (§2.10), cmd_pc_log.c: level_spec is --level (NULL when absent). Returns 0, -1
 * with err, or PC_E_USAGE with err when --level names a logger or level the proxy does not
 * know (a usage error, exit 64). */
#define PC_E_USAGE (-2)
int pc_log(const pc_live *live, const char *level_spec, bool reset, wf_strbuf *out, wf_strbuf *err);
/* Checks the global levels of --level ("debug", "level:debug") before any proxy is asked
 * (a logger's name, checked first, needs the proxy's listing): 0, or -1 with err
 * "unrecognized logging level: X" (a usage error). */
int pc_log_check_levels(const char *spec, wf_strbuf *err);

/* ---- shared helpers ---- */

/* Istio cluster name parts (§1.4): true when splitting on '|' gives more than 3 parts. The
 * out strings point into buf (size bytes). */
typedef struct pc_subset_key {
    bool ok;
    char direction[64], subset[256], host[512];
    long port;
} pc_subset_key;
void pc_parse_subset_key(const char *name, pc_subset_key *k);
/* istioctl's cluster/EDS order (hostname, subset, port, direction) for two cluster names. */
int pc_cmp_cluster_names(const char *a, const char *b);
/* Management metadata column (§1.4) of an object with metadata.filter_metadata.istio.config:
 * "name.ns", "", or "<unknown>". Written into buf. */
void pc_mgmt_metadata(const json_t *obj, char *buf, size_t size);
/* The MATCH text of a listener's filter chain (§2.3), into sb (cmd_pc_listener.c). */
void pc_chain_match(const json_t *chain, wf_strbuf *sb);

/* weft's note for `pc listener --port N` on a sidecar with Istio's capture layout
 * (cmd_pc_capture.c; protocols.md §5.3-5.4, operator report B039): where a captured
 * connection to port N goes. Outbound: virtualOutbound (the listener with use_original_dst)
 * hands it to the listeners of port N (named, with bind_to_port false shown), else it stays
 * in virtualOutbound and takes the chain for destination port N or its catch-all, named with
 * its real cluster (BlackHoleCluster: outboundTrafficPolicy REGISTRY_ONLY; PassthroughCluster:
 * ALLOW_ANY; port 15001: the loop guard). Inbound: virtualInbound's chains for port N, else
 * its catch-all (InboundPassthroughCluster: no Service declares the port). Lines start with
 * "weft: ". listeners: every listener of the dump. Appends nothing when the dump has no
 * capture listener. Returns 0, or -1 when out of memory. */
int pc_capture_port_note(const json_t *listeners, long port, wf_strbuf *note);

/* The route MATCH text (§2.4): "<prefix>*", "PathPrefix:/x", "regex ...", into sb. */
void pc_route_match(const json_t *match, wf_strbuf *sb);
/* A stable sort of an array of json_t* (insertion order kept between equals). */
void pc_stable_sort(json_t **v, size_t n, int (*cmp)(const json_t *, const json_t *));
/* The items of a section's lists, in order: lists is NULL-terminated, each "list:inner"
 * (e.g. "dynamic_listeners:active_state.listener") or "list". Returns a new array holding
 * references (caller json_decref's it), or NULL with err: the section is missing (an empty
 * array instead when missing_ok), or an item has the wrong shape (wf_envoy_dump_items). */
json_t *pc_items(const wf_envoy_dump *d, const char *type_url, const char *const *lists,
                 bool missing_ok, wf_strbuf *err);

/* What a table shows. */
typedef struct pc_sel {
    json_t *all; /* pc_items' array (owned) */
    json_t **v;  /* the kept items, borrowed from all (owned array) */
    size_t m;
} pc_sel;
/* The items of type_url's lists (pc_items; "no <what> found" when there are none) that passes
 * keeps (NULL: all), put in the table's order by sort. With -o json|yaml they are printed raw to
 * out instead — sorted only when sort_raw (istioctl prints listeners in dump order) — and 1 is
 * returned. 0: *s holds the selection for the table (free with pc_sel_free). -1: err set. */
int pc_select(const wf_envoy_dump *d, const char *type_url, const char *const *lists,
              const char *what, bool (*passes)(const json_t *, const pc_opts *),
              void (*sort)(json_t **v, size_t n), bool sort_raw, const pc_opts *o, pc_sel *s,
              wf_strbuf *out, wf_strbuf *err);
void pc_sel_free(pc_sel *s);

#endif
