/*
 * envoy_fields.h - Envoy's v3 API field names, so that the bootstrap/xDS loader can tell a
 * real Envoy field that weft-proxy does not implement from a name that is no field at all
 * (weft's rule "never accept silently": such a field is refused as "not supported by
 * weft-proxy (Envoy's <message>.<field>)", a misspelling stays "unknown field").
 *
 * Inputs: the JSON path of the object being decoded as the loader writes it
 * ("static_resources.listeners[0].filter_chains[0].filters[0].typed_config") and, when the
 * object carries one, its "@type" (an Any type URL, "type.googleapis.com/<message>").
 * Outputs: static strings (full protobuf message names, e.g. "envoy.config.listener.v3.Listener");
 * nothing is allocated, no state is kept. The table (envoy_fields.c) names the proto files
 * read and their versions.
 */
#ifndef WEFT_PROXY_ENVOY_FIELDS_H
#define WEFT_PROXY_ENVOY_FIELDS_H

#include <stdbool.h>

/* The Envoy message the object at path is, NULL when the table does not know it. A type URL
 * naming a message of the table wins; otherwise the path decides: its array indexes are
 * dropped and its longest known ending names the message ("routes.route" is a RouteAction,
 * "...clusters" under static_resources a Cluster); "" is the Bootstrap itself. type_url may
 * be NULL. */
const char *wp_envoy_message_at(const char *path, const char *type_url);

/* Whether field (a proto field name, snake_case) is a field of message (a name
 * wp_envoy_message_at returned): oneof members and deprecated fields count; reserved names
 * do not. */
bool wp_envoy_message_has(const char *message, const char *field);

#endif
