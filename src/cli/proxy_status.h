/*
 * proxy_status.h - the pieces of `weftctl proxy-status` (istioctl proxy-status, reference
 * istioctl-troubleshooting.md §3): a control plane's sync state as rows, the tables of every
 * istioctl era, the -o json|yaml documents, and the `ps <pod>` config comparison.
 *
 * Sources (ps_sources.c):
 *  - weft-pilot's /debug/syncz (an array of entries with weft's `<type>_status`,
 *    `<type>_since_s`, `<type>_error`, `connected`, `disconnected_for_s`, for the prefixes
 *    cluster, listener, endpoint, route, extensionconfig and secret; a type the proxy watches
 *    and pilot never sent is NOT SENT, one it does not watch IGNORED), and istiod's legacy
 *    HTTP /debug/syncz of istioctl <= 1.21 (nonces only: `*_sent`/`*_acked`);
 *  - istiod's xDS `istio.io/debug/syncz` DiscoveryResponse (CSDS ClientConfig resources),
 *    as istioctl >= 1.22 reads it.
 * Ownership: everything in a ps_state is owned by it; free with ps_state_free.
 */
#ifndef WF_CLI_PROXY_STATUS_H
#define WF_CLI_PROXY_STATUS_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "core/strbuf.h"

#define PS_TYPE_CDS      "type.googleapis.com/envoy.config.cluster.v3.Cluster"
#define PS_TYPE_LDS      "type.googleapis.com/envoy.config.listener.v3.Listener"
#define PS_TYPE_EDS      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
#define PS_TYPE_RDS      "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
#define PS_TYPE_ECDS     "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"
#define PS_TYPE_SDS      "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
#define PS_CLIENT_CONFIG "type.googleapis.com/envoy.service.status.v3.ClientConfig"

/* One subscribed xDS type of one proxy. */
typedef struct ps_type {
    char *url;     /* full type URL */
    char *status;  /* CSDS ConfigStatus name: SYNCED, NOT_SENT, STALE, ERROR, UNKNOWN */
    char *display; /* overrides the displayed text (legacy "STALE (Never Acknowledged)"); NULL */
    bool has_age;  /* age_s is known (istiod's last_updated, weft's <type>_since_s) */
    long age_s;
    char *error; /* NACK text, NULL when none */
    /* What the control plane sent and the proxy acknowledged, when the source says (istiod's
     * /debug/syncz `resources` entry: nonces `sent`/`acked`, `sentTime`; weft-pilot adds
     * `versionSent`/`versionAcked`); NULL when unknown. -o json|yaml prints them. */
    char *nonce_sent, *nonce_acked, *sent_time, *version_sent, *version_acked;
} ps_type;

typedef struct ps_row {
    char *name;    /* proxy id "<pod>.<ns>" */
    char *cluster; /* CLUSTER_ID */
    char *istiod;  /* control-plane name (ISTIOD column) */
    char *version; /* proxy's Istio version */
    char *ns;      /* namespace (metadata NAMESPACE, else after the id's last '.') */
    ps_type *types;
    size_t ntypes;
    bool disconnected; /* weft: the proxy's stream is gone */
    long disconnected_for_s;
    bool ztunnel; /* legacy: unsubscribed types show IGNORED */
} ps_row;

/* A raw per-control-plane document for -o json|yaml. */
typedef struct ps_doc {
    char *istiod;
    json_t *resp; /* DiscoveryResponse (owned reference) */
} ps_doc;

typedef struct ps_state {
    ps_row *rows;
    size_t nrows;
    bool legacy_order; /* rows sorted by (cluster, name) as istioctl <= 1.21; else by name */
    ps_doc *docs;
    size_t ndocs;
    time_t now; /* the clock for ages and lastUpdated (set by the caller; $WEFTCTL_NOW) */
} ps_state;

void ps_state_free(ps_state *st);

/* Adds the rows of one control plane named istiod. entries: a /debug/syncz array (weft or
 * legacy istiod; a DiscoveryResponse document is synthesized from it for -o json|yaml);
 * resp: an xDS syncz DiscoveryResponse (kept as-is for -o json|yaml). now: the clock for
 * last_updated ages.
 * Returns 0, or -1 with err (malformed input, naming the control plane). */
int ps_add_syncz(ps_state *st, const char *istiod, const json_t *entries, wf_strbuf *err);
int ps_add_xds(ps_state *st, const char *istiod, const json_t *resp, time_t now, wf_strbuf *err);

/* Reads a --from-file document: an array (one /debug/syncz answer) or an object mapping
 * control-plane name to its answer (xDS DiscoveryResponse object or /debug/syncz array). */
int ps_add_file_doc(ps_state *st, const json_t *doc, time_t now, wf_strbuf *err);

/* Keeps rows (and xDS doc resources) of namespace ns / whose name contains substr. */
void ps_filter_namespace(ps_state *st, const char *ns);
/* Drops weft's DISCONNECTED rows (and their doc resources): istioctl's view, where istiod
 * lists connected proxies only (--hide-disconnected). */
void ps_filter_connected(ps_state *st);
void ps_filter_substring(ps_state *st, const char *substr);
/* Sorts the rows (see legacy_order). */
void ps_sort(ps_state *st);

/* Tables (padding 5). classic: NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION (istioctl
 * 1.22-1.26 and <= 1.21, weftctl's default); types: istioctl >= 1.27's SUBSCRIBED TYPES table;
 * verbose: >= 1.27's -v 1 per-type columns. Return 0 or -1 (write error / no memory). */
int ps_print_classic(const ps_state *st, FILE *out);
int ps_print_types(const ps_state *st, FILE *out);
int ps_print_verbose(const ps_state *st, FILE *out);

/* -o json / -o yaml: each control plane's DiscoveryResponse (legacy jsonpb indent 4, or
 * go-yaml), one after the other; "{\n\n}\n" when there is none. For /debug/syncz sources the
 * document is built from the rows: per type CSDS's typeUrl, configStatus, lastUpdated (when
 * the status last changed), versionInfo (the version the proxy acknowledged), errorState,
 * and istiod's syncz fields sent / acked (nonces), sentTime, plus weft's versionSent. */
int ps_print_json(const ps_state *st, FILE *out);
int ps_print_yaml(const ps_state *st, FILE *out);

/* Kubernetes HumanDuration of a number of seconds ("3m12s", "40m", "5d3h"). */
void ps_human_duration(long seconds, char *buf, size_t cap);

/* Writes v as legacy jsonpb (4-space indent, the Struct quirk on keys named "metadata" under
 * "node") / as go-yaml v2 of the same JSON. ps_json.c. */
void ps_write_jsonpb(FILE *out, const json_t *v);
void ps_write_yaml(FILE *out, const json_t *v);

/* `ps <pod>`: compares pilot's dump (what it would send) with the Envoy dump and prints
 * istioctl's "Clusters Match" / "... Don't Match" + unified diff lines (ps_diff.c). Returns
 * 0, or -1 with err when a dump is unusable. */
int ps_compare_dumps(const json_t *pilot_dump, const json_t *envoy_dump, FILE *out, wf_strbuf *err);

#endif
