/*
 * istio_peer.h - Istio's workload metadata as its telemetry sees it: the local workload read
 * from the bootstrap's node.metadata, and the peer metadata exchanged over HTTP in the
 * x-envoy-peer-metadata (base64 of a serialized google.protobuf.Struct) and
 * x-envoy-peer-metadata-id (the node id) headers.
 *
 * Followed: istio/proxy extensions/common/metadata_object.{h,cc}
 * (convertWorkloadMetadataToStruct, convertStructToWorkloadMetadata, the field names NAME,
 * NAMESPACE, CLUSTER_ID, OWNER, WORKLOAD_NAME, LABELS and the label keys app, version,
 * service.istio.io/canonical-name, service.istio.io/canonical-revision),
 * source/extensions/filters/http/peer_metadata/filter.cc (MXMethod, MXPropagationMethod:
 * base64 with padding on the way out, with or without padding on the way in; the Struct is
 * serialized deterministically, i.e. map entries sorted by key).
 *
 * The Struct written: {CLUSTER_ID, LABELS {app, service.istio.io/canonical-name,
 * service.istio.io/canonical-revision, version}, NAME, NAMESPACE, OWNER, WORKLOAD_NAME}; empty
 * values are left out, LABELS is always present (possibly empty), as Istio writes it. The
 * reader takes the same keys and ignores everything else (other keys, non-string values,
 * other labels), so the larger node metadata older Istio proxies send is read as well.
 *
 * All functions are pure (no global state, no locks); strings are (pointer, length) views
 * whose lifetime is the caller's buffer.
 */
#ifndef WEFT_PROXY_ISTIO_PEER_H
#define WEFT_PROXY_ISTIO_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/strbuf.h"

#define WP_MX_HEADER    "x-envoy-peer-metadata"
#define WP_MX_HEADER_ID "x-envoy-peer-metadata-id"

/* A string view; p may be NULL when len is 0 (absent or empty). */
typedef struct {
    const char *p;
    size_t len;
} wp_istio_str;

/* The fields of a workload telemetry uses (WorkloadMetadataObject). */
enum {
    WP_WL_NAME,               /* NAME: the pod (instance) name */
    WP_WL_NAMESPACE,          /* NAMESPACE */
    WP_WL_WORKLOAD,           /* WORKLOAD_NAME */
    WP_WL_CLUSTER,            /* CLUSTER_ID */
    WP_WL_OWNER,              /* OWNER */
    WP_WL_APP,                /* LABELS.app */
    WP_WL_VERSION,            /* LABELS.version */
    WP_WL_CANONICAL_NAME,     /* LABELS["service.istio.io/canonical-name"] */
    WP_WL_CANONICAL_REVISION, /* LABELS["service.istio.io/canonical-revision"] */
    WP_WL_COUNT_
};

typedef struct {
    wp_istio_str f[WP_WL_COUNT_];
} wp_istio_workload;

/* Serializes w as Istio's deterministic google.protobuf.Struct (layout above) and appends
 * the bytes to out. Check wf_strbuf_failed(out) for out of memory. */
void wp_istio_struct_encode(const wp_istio_workload *w, wf_strbuf *out);

/* Reads a serialized google.protobuf.Struct: fields of w point into buf (n bytes). Returns 0,
 * or -1 when the bytes are not a well-formed Struct (truncated, bad wire type); w is zeroed
 * first either way. Nesting is read one level deep (LABELS); deeper values are skipped. */
int wp_istio_struct_decode(const uint8_t *buf, size_t n, wp_istio_workload *w);

/* Decodes an x-envoy-peer-metadata value (base64 Struct) using scratch (cap bytes) for the
 * bytes: w points into scratch. Returns 0, or -1 when the value is not valid (bad base64, too
 * long for scratch, not a Struct). */
int wp_istio_peer_decode(const char *value, size_t len, uint8_t *scratch, size_t cap,
                         wp_istio_workload *w);

/* The local workload from a bootstrap node.metadata object (NULL: all empty): w points into
 * the JSON strings (valid while md lives). Non-string values are taken as absent. */
void wp_istio_workload_from_node(const json_t *md, wp_istio_workload *w);

/* The x-envoy-peer-metadata value of w (base64 of wp_istio_struct_encode), appended to out. */
void wp_istio_peer_value(const wp_istio_workload *w, wf_strbuf *out);

#endif
