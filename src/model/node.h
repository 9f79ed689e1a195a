/*
 * node.h - the document tree every loaded YAML or JSON document becomes.
 *
 * Nodes, keys and strings live in the arena of the store that loaded them; nothing here is
 * freed individually. Positions are 1-based; line 0 means "unknown" (JSON input, which
 * istioctl also reports without a line number).
 *
 * Scalars keep their text exactly as written plus whether they were quoted, so that typed
 * decoding can tell `port: 80` (an integer) from `port: "80"` (a string) the way Kubernetes'
 * YAML-to-JSON conversion does.
 */
#ifndef WF_MODEL_NODE_H
#define WF_MODEL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum wf_node_type {
    WF_NODE_NULL = 0, /* `~`, `null`, empty value */
    WF_NODE_SCALAR,
    WF_NODE_MAP,
    WF_NODE_SEQ,
} wf_node_type;

typedef struct wf_node wf_node;

typedef struct wf_map_entry {
    const char *key;   /* NUL-terminated; a non-scalar key is stored as "" */
    uint32_t key_line; /* position of the key (what istioctl reports for a field) */
    uint32_t key_col;
    wf_node *value; /* never NULL: an empty value is a WF_NODE_NULL node */
} wf_map_entry;

struct wf_node {
    uint8_t type; /* wf_node_type */
    bool quoted;  /* scalar written with quotes (or a JSON string): always a string */
    uint32_t line, col;
    uint32_t key_line; /* for a mapping value: the line of its key (0 when none) */
    size_t len;        /* scalar: bytes of str; map: number of entries; seq: number of items */
    union {
        const char *str;       /* WF_NODE_SCALAR (NUL-terminated, may contain no NUL) */
        wf_map_entry *entries; /* WF_NODE_MAP, in document order */
        wf_node **items;       /* WF_NODE_SEQ */
    } u;
};

/* The line a finding about n should name, as Istio's field map does: a scalar's own line;
 * for a map or sequence value, the line of its key (its first child can be lines below). */
uint32_t wf_node_report_line(const wf_node *n);

/* Value of key in a map, or NULL when n is not a map or has no such key. If a key repeats,
 * the last one wins (as in Kubernetes' decoding); the loader reports duplicates. */
wf_node *wf_map_get(const wf_node *n, const char *key);

/* Entry (with key position) of key in a map, or NULL. */
const wf_map_entry *wf_map_entry_get(const wf_node *n, const char *key);

/* Walk a dotted path of map keys ("spec.selector.matchLabels"). NULL when any step is
 * missing. Numeric steps ("http.0.route") index sequences. */
wf_node *wf_node_path(const wf_node *n, const char *path);

/* Scalar text, or NULL when n is NULL or not a scalar. */
const char *wf_node_str(const wf_node *n);

/* wf_node_str() of wf_map_get(n, key). */
const char *wf_map_str(const wf_node *n, const char *key);

/* Number of items when n is a sequence, else 0. */
size_t wf_seq_len(const wf_node *n);

/* Item i of a sequence, or NULL. */
wf_node *wf_seq_at(const wf_node *n, size_t i);

/* Integer value of an unquoted scalar in decimal (also 0x/0o forms); false when n is not an
 * integer or overflows int64. */
bool wf_node_int(const wf_node *n, int64_t *out);

/* Boolean value of an unquoted scalar (true/false, and YAML 1.1's yes/no/on/off). */
bool wf_node_bool(const wf_node *n, bool *out);

/* True when n is a scalar that YAML would type as a string (quoted, or plain text that is not
 * a number, bool or null). */
bool wf_node_is_string(const wf_node *n);

/* Kind of a node for error messages: "string", "integer", "number", "boolean", "null",
 * "object", "array". */
const char *wf_node_kind_name(const wf_node *n);

#endif
