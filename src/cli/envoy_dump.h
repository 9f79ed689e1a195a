/*
 * envoy_dump.h - reading an Envoy admin /config_dump (weft-proxy's or a real Envoy's) and
 * Envoy's /clusters?format=json, the inputs of `weftctl proxy-config`.
 *
 * Follows istioctl (reference istioctl-troubleshooting.md §1.1 "Parsing a dump"):
 *  - field names may be snake_case (Envoy's admin) or lowerCamelCase (protobuf JSON as istiod
 *    and istioctl write it); both are accepted: every message field name is normalized to
 *    snake_case on load. Keys of map and google.protobuf.Struct values (filter_metadata
 *    contents, node metadata, TypedStruct values, ...) are kept verbatim. Unknown fields are
 *    kept and ignored by the readers.
 *  - a section is the entry of "configs" whose "@type" matches exactly; when a type appears
 *    more than once the last one wins (ECDS sections are merged by the caller through
 *    wf_envoy_dump_sections).
 *  - a missing section is the error "config dump has no configuration type <type url>".
 *
 * Errors name the input (file name, or "<proxy> admin <addr>") and, for shape errors, the
 * JSON path: "dump.json: configs[2].dynamic_active_clusters[0].cluster: expected an object".
 *
 * Ownership: a wf_envoy_dump owns its document; json_t pointers returned by the accessors
 * are borrowed and live as long as the dump.
 */
#ifndef WF_CLI_ENVOY_DUMP_H
#define WF_CLI_ENVOY_DUMP_H

#include <stddef.h>

#include <jansson.h>

#include "core/strbuf.h"

#define WF_DUMP_MAX_BYTES (256u * 1024u * 1024u) /* inputs larger than this are refused */

#define WF_DUMP_T_BOOTSTRAP "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"
#define WF_DUMP_T_CLUSTERS  "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"
#define WF_DUMP_T_LISTENERS "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
#define WF_DUMP_T_ROUTES    "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"
#define WF_DUMP_T_SECRETS   "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"
#define WF_DUMP_T_ENDPOINTS "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump"
#define WF_DUMP_T_ECDS      "type.googleapis.com/envoy.admin.v3.EcdsConfigDump"

typedef struct wf_envoy_dump {
    json_t *root; /* the normalized (snake_case) document; owned */
    char *source; /* what it was read from, for messages; owned */
} wf_envoy_dump;

/* Parses len bytes of text (JSON) read from `source` (a file name or a description such as
 * "catalog-x.ns admin 127.0.0.1:15000") and normalizes field names. Returns 0 with *out
 * filled (free with wf_envoy_dump_free), or -1 with err set: "<source>: line L column C: <jansson
 * message>", "<source>: the document is not a JSON object". */
int wf_envoy_dump_parse(const char *text, size_t len, const char *source, wf_envoy_dump *out,
                        wf_strbuf *err);

/* Reads and parses a file ("-" = stdin). Errors as wf_envoy_dump_parse, plus
 * "cannot read <path>: <strerror>" and "<path> is larger than 256 MiB". */
int wf_envoy_dump_load_file(const char *path, wf_envoy_dump *out, wf_strbuf *err);

void wf_envoy_dump_free(wf_envoy_dump *d);

/* The last configs[] entry whose "@type" is type_url. Returns it, or NULL with err set to
 * "config dump has no configuration type <type_url>" (istioctl's text) or, when "configs" is
 * not an array, "<source>: configs: expected an array". *index (may be NULL) receives its
 * position in configs, for error paths. */
json_t *wf_envoy_dump_section(const wf_envoy_dump *d, const char *type_url, size_t *index,
                              wf_strbuf *err);

/* Items of a section's list field `list` (e.g. "dynamic_active_clusters"), each unwrapped by
 * `inner` when non-NULL (e.g. "cluster"; a nested path "active_state.listener" is allowed).
 * Entries whose inner object is absent are skipped (warming listeners without
 * active_state). Items are appended to `out` (a JSON array, borrowed references added with
 * json_array_append). Returns 0, or -1 with err naming the path when the list or an item
 * has the wrong shape ("<source>: configs[1].static_clusters[0].cluster: expected an object").
 * A missing list is not an error. */
int wf_envoy_dump_items(const wf_envoy_dump *d, const json_t *section, size_t index,
                        const char *list, const char *inner, json_t *out, wf_strbuf *err);

/* Normalizes every message field name in v to snake_case, in place (lowerCamelCase key
 * "clusterName" -> "cluster_name"; keys of maps and Struct values untouched). Returns 0, or
 * -1 when out of memory. */
int wf_json_keys_to_snake(json_t *v);

/* A deep copy of v with message field names in lowerCamelCase as protobuf JSON prints them
 * ("cluster_name" -> "clusterName"), map and Struct keys verbatim and sorted. NULL when out of
 * memory. The caller owns the result. */
json_t *wf_json_camel_copy(const json_t *v);

/* Convenience accessors on normalized objects (NULL/0/"" when absent or of another type). */
const char *wf_jstr(const json_t *obj, const char *key); /* string or NULL */
const char *wf_jstr_or(const json_t *obj, const char *key, const char *dflt);
long long wf_jint(const json_t *obj, const char *key);        /* integer, or string integer */
json_t *wf_jpath(const json_t *obj, const char *dotted_path); /* "a.b.c" through objects */

#endif
