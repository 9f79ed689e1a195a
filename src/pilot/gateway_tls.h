/*
 * gateway_tls.h - the TLS side of a gateway (pilot/gateway.h): which servers terminate TLS
 * and the filter chain of each, as Istio's buildGatewayListeners / buildGatewayListenerTLSContext
 * (pilot/pkg/networking/core/gateway.go, pilot/pkg/security/model/authentication.go) write it
 * for credentialName servers (reference security.md §2.1, §3.4, §5.1, §5.2):
 *  - a server terminates TLS when its protocol is HTTPS (case-insensitive) and its tls.mode is
 *    SIMPLE, MUTUAL or OPTIONAL_MUTUAL with tls.credentialName set, or ISTIO_MUTUAL. Other TLS
 *    servers (PASSTHROUGH, AUTO_PASSTHROUGH, file certificates, credentialNames) open no
 *    listener; model/unimplemented.c reports them.
 *  - its filter chain: filter_chain_match.server_names = the server's hosts without their
 *    "ns/" part, none when a host is "*" (then the chain takes any SNI, or none); the gateway
 *    HTTP connection manager (pilot/lds.h WF_LDS_GATEWAY) with RDS route_config_name
 *    "https.<port>.<portName>.<gatewayName>.<gatewayNamespace>" (port: the server's port
 *    number); transport_socket envoy.transport_sockets.tls with a DownstreamTlsContext:
 *    common_tls_context {tls_params {tls_minimum_protocol_version, tls_maximum_protocol_version
 *    (from minProtocolVersion / maxProtocolVersion: TLSV1_2 -> TLSv1_2, ...; absent or TLS_AUTO
 *    left out), cipher_suites (cipherSuites)}, alpn_protocols ["http/1.1"],
 *    tls_certificate_sds_secret_configs [{name: "kubernetes://<credentialName>", sds_config
 *    {ads: {}, resource_api_version: V3}}]}; MUTUAL adds require_client_certificate true and
 *    combined_validation_context {default_validation_context {match_subject_alt_names [{exact:
 *    san}] from subjectAltNames}, validation_context_sds_secret_config {name:
 *    "kubernetes://<credentialName>-cacert", sds_config as above}}. OPTIONAL_MUTUAL is MUTUAL
 *    without require_client_certificate (a certificate the client presents is verified, none
 *    is accepted). ISTIO_MUTUAL terminates with the gateway's own workload identity, as
 *    Istio's ApplyToCommonTLSContext: SDS "default" and "ROOTCA" from the agent (pilot/authn.h
 *    wf_authn_sds_secret), exact matchers from subjectAltNames (none: any mesh identity),
 *    require_client_certificate true, alpn_protocols ["istio-peer-exchange", "http/1.1"]
 *    (Istio's ALPNDownstreamWithMxc without h2). tls_params is left out when none of its
 *    fields is set.
 *  - ALPN: Istio offers "h2", "http/1.1" on terminated HTTPS; weft-proxy has no HTTP/2
 *    downstream yet, so it offers "http/1.1" only and never h2 (a client that would speak h2
 *    falls back to HTTP/1.1 instead of failing).
 *  - the listener of a port with TLS servers has the envoy.filters.listener.tls_inspector
 *    listener filter (SNI for the chain match) and one chain per TLS server in server order.
 */
#ifndef WF_PILOT_GATEWAY_TLS_H
#define WF_PILOT_GATEWAY_TLS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "model/store.h"

/* Does srv terminate TLS (HTTPS; SIMPLE, MUTUAL or OPTIONAL_MUTUAL with a credentialName, or
 * ISTIO_MUTUAL)? */
bool wf_gw_tls_server(const wf_gateway_server *srv);

/* "https.<port>.<portName>.<gatewayName>.<gatewayNamespace>" into buf (cap bytes). */
const char *wf_gw_https_route_name(const wf_resource *gw, const wf_gateway_server *srv, char *buf,
                                   size_t cap);

/* The filter chain of TLS server srv of Gateway gw whose listener takes port listen: a new
 * object (caller json_decrefs), NULL on out of memory. */
json_t *wf_gw_tls_chain(const wf_resource *gw, const wf_gateway_server *srv, int32_t listen);

/* The tls_inspector listener filter: a new array [filter], NULL on out of memory. */
json_t *wf_gw_tls_listener_filters(void);

#endif
