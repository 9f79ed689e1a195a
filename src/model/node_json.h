/*
 * node_json.h - a document tree (model/node.h) as a jansson value.
 *
 * Scalars become JSON as Kubernetes' YAML-to-JSON conversion and protojson write them: a
 * quoted scalar is a string; a plain one is an integer, a boolean (true/false and YAML 1.1's
 * yes/no/on/off), a number, or else a string ("10s", enum names); null stays null. Map keys
 * keep document order; a repeated key keeps its last value.
 */
#ifndef WF_MODEL_NODE_JSON_H
#define WF_MODEL_NODE_JSON_H

#include <jansson.h>

#include "model/node.h"

/* A new reference (the caller decrefs), json null for NULL, or NULL when out of memory. */
json_t *wf_node_to_json(const wf_node *n);
/* The scalars of a sequence node as a new array of strings (anything else left out; an empty
 * array for NULL or a non-sequence), or NULL when out of memory. */
json_t *wf_node_json_strings(const wf_node *seq);

#endif
