/*
 * bootstrap.h - load an Envoy v3 bootstrap (JSON) into a config snapshot (config.h).
 *
 * weft-proxy starts as `weft-proxy -c BOOTSTRAP.json`. The loader decodes the subset of
 * envoy.config.bootstrap.v3.Bootstrap that weft implements (node, admin, static listeners
 * with one HTTP connection manager, inline route configurations, static clusters; see
 * bootstrap.c for the exact field list) and rejects everything else by JSON path: nothing
 * is silently ignored.
 *
 * Decoding follows the protobuf JSON mapping
 * (developers.google.com/protocol-buffers/docs/proto3#json) as Envoy applies it: field names in
 * snake_case or lowerCamelCase; durations as "5s" / "0.250s" strings or {seconds, nanos};
 * uint32/uint64 and wrapper types as numbers or decimal strings; enums by name; null = absent.
 * Defaults are Envoy's (see config.h).
 *
 * Errors: one message in err (appended), of the form
 *   "<source>: <json path>: <message>"
 *   e.g. "b.json: static_resources.clusters[1].name: cluster manager: duplicate cluster 'x'"
 * and for JSON syntax errors "<source>:<line>:<column>: <jansson message>". Paths use the
 * snake_case field names.
 */
#ifndef WEFT_PROXY_BOOTSTRAP_H
#define WEFT_PROXY_BOOTSTRAP_H

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/config/config.h"

/* Largest bootstrap file read, in bytes. */
#define WP_BOOTSTRAP_MAX_BYTES (16u * 1024u * 1024u)

/* Read and decode the bootstrap file at path (at most WP_BOOTSTRAP_MAX_BYTES, UTF-8 JSON,
 * duplicate keys rejected). Returns a new snapshot with one reference (the caller drops it
 * with wp_config_unref), or NULL with the error appended to err. The snapshot's version is
 * 1; a caller that replaces snapshots sets a larger one before publishing. */
wp_config *wp_bootstrap_load_file(const char *path, wf_strbuf *err);

/* Decode an already parsed bootstrap. root is borrowed (not modified, not kept: the
 * snapshot keeps its own normalized copy in `bootstrap`). source names the input in error
 * messages (NULL = "bootstrap"). Same result and errors as wp_bootstrap_load_file. */
wp_config *wp_bootstrap_load(json_t *root, const char *source, wf_strbuf *err);

#endif
