/*
 * config_dump.h - the admin /config_dump document of a snapshot, shaped like Envoy's
 * (envoy/admin/v3/config_dump.proto, config_dump_shared.proto; handler behaviour from
 * source/server/admin/config_dump_handler.cc; docs: operations/admin#get--config_dump).
 *
 * Without resource: {"configs":[BootstrapConfigDump, ClustersConfigDump,
 * (EndpointsConfigDump with include_eds), ListenersConfigDump, RoutesConfigDump]} in Envoy's
 * order (bootstrap, clusters, endpoints, listeners, routes). Every resource comes from the
 * snapshot's normalized bootstrap (snake_case, as Envoy prints protobuf JSON), wrapped with
 * its "@type"; inline HCM route configurations appear in RoutesConfigDump's
 * static_route_configs as in Envoy. Empty repeated fields are omitted (protobuf JSON).
 * last_updated is RFC 3339 UTC with milliseconds, "2023-12-26T05:57:09.898Z" (always three
 * fractional digits; protobuf would drop ".000").
 *
 * Rejected listeners (Envoy's ListenersConfigDump.DynamicListener.error_state, filled by
 * ListenerManagerImpl; followed: envoy/admin/v3/config_dump_shared.proto and the
 * envoyproxy.io page api-v3/admin/v3/config_dump_shared.proto, UpdateFailureState): while the
 * last LDS update stands rejected, the dynamic listener it failed on carries
 *   "error_state": {"failed_configuration": <the rejected Listener, "@type" first>,
 *                   "last_update_attempt": "<RFC 3339>", "details": "<the error>"}
 * (an entry {name, error_state} is added when no listener of that name serves), and each
 * failure of the update is also an entry of its own, {"error_state": {failed_configuration,
 * details}}, after the others (Envoy's overall_error_state_ from LdsApiImpl). The next
 * accepted LDS update clears them. Envoy fills no error_state for clusters, route
 * configurations or endpoints (those fields are not implemented in Envoy), nor does weft.
 * The states come from the xDS client (xds_dump "listener_errors", xds_client.h), so a dump
 * shows a rejection although the snapshot itself is the last good one.
 *
 * resource = the name of a repeated field of one of those dumps ("static_clusters",
 * "dynamic_active_clusters", "static_listeners", "static_route_configs",
 * "static_endpoint_configs" with include_eds, ...): {"configs":[elements]}, each element with
 * its own "@type" ("type.googleapis.com/envoy.admin.v3.ClustersConfigDump.StaticCluster").
 *
 * mask = a protobuf FieldMask, comma-separated snake_case paths ("cluster.name,last_updated").
 * With resource it trims each element; a path starting with the element's embedded resource
 * field (cluster, listener, route_config, endpoint_config) trims inside the resource. Without
 * resource it trims each dump, and dumps the mask does not fit are left out. Paths inside a
 * bootstrap or an embedded resource are not checked against Envoy's schema (weft has no
 * descriptors): any snake_case path is accepted there and keeps nothing when absent.
 */
#ifndef WEFT_PROXY_CONFIG_DUMP_H
#define WEFT_PROXY_CONFIG_DUMP_H

#include <stdbool.h>

#include <jansson.h>

#include "core/strbuf.h"
#include "proxy/config/config.h"

/* Build the dump of c. resource and mask may be NULL (or "" = absent). last_updated_unix is
 * the time the snapshot was applied, in seconds since the epoch (fractions kept to the
 * millisecond). Returns a new JSON object owned by the caller (json_decref), or NULL with
 * Envoy's error text appended to err:
 *   "<resource> not found in config dump"                                   -> answer 404
 *   "<field> is not a repeated field. Use ?mask=<field> to get only this field" -> 400
 *   "FieldMask paths: \"x\"\n could not be successfully used."              -> 400
 *   "FieldMask <mask> could not be successfully applied to any configs."    -> 400
 *   "out of memory"                                                         -> 500 */
json_t *wp_config_dump(const wp_config *c, const char *resource, const char *mask, bool include_eds,
                       double last_updated_unix, wf_strbuf *err);

/* The same with secrets (a SecretsConfigDump, sds/secrets.h wp_secrets_dump; borrowed, NULL =
 * none) as the last dump, after RoutesConfigDump (Envoy's order); its dynamic_active_secrets
 * and dynamic_warming_secrets work as resources. */
json_t *wp_config_dump_secrets(const wp_config *c, json_t *secrets, const char *resource,
                               const char *mask, bool include_eds, double last_updated_unix,
                               wf_strbuf *err, int *http_status);

/* The same; *http_status (may be NULL) receives 200, 400, 404 or 500 as Envoy answers. */
json_t *wp_config_dump_http(const wp_config *c, const char *resource, const char *mask,
                            bool include_eds, double last_updated_unix, wf_strbuf *err,
                            int *http_status);

#endif
