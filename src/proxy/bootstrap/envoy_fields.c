/*
 * envoy_fields.c - Envoy's v3 API field names per message, and which message an object of the
 * bootstrap/xDS JSON is (envoy_fields.h). Only the messages the loader decodes (bootstrap*.c,
 * and the TLS transport sockets) are listed; an object of any other message keeps
 * "unknown field" for every name it refuses.
 *
 * The names are the proto field names (snake_case) of Envoy's API (envoyproxy/envoy `api/`,
 * v3, package_version_status ACTIVE), copied from these files; each was read at one stored
 * commit (given), so the files are not all of one Envoy release:
 *   envoy/config/bootstrap/v3/bootstrap.proto (001d5f6)   Bootstrap (+StaticResources,
 *                                                          DynamicResources), Admin
 *   envoy/config/core/v3/base.proto (0035e40)             Node, Locality, Metadata, HeaderValue,
 *                                                          HeaderValueOption, DataSource,
 *                                                          RuntimeFractionalPercent,
 *                                                          TransportSocket
 *   envoy/config/core/v3/address.proto (0328155)          Address, SocketAddress, Pipe, CidrRange
 *   envoy/config/core/v3/config_source.proto (185869c)    ConfigSource, ApiConfigSource
 *   envoy/config/core/v3/grpc_service.proto (03f52b2)     GrpcService (+EnvoyGrpc)
 *   envoy/config/core/v3/protocol.proto (001692b)         HttpProtocolOptions,
 *                                                          Http1ProtocolOptions,
 *                                                          Http2ProtocolOptions
 *   envoy/config/core/v3/substitution_format_string.proto (01f8613)  SubstitutionFormatString
 *   envoy/config/listener/v3/listener.proto (00e5a41)     Listener
 *   envoy/config/listener/v3/listener_components.proto (909b9f1)  Filter, FilterChain,
 *                                                          FilterChainMatch, ListenerFilter
 *   envoy/config/route/v3/route.proto (0036e0f)           RouteConfiguration
 *   envoy/config/route/v3/route_components.proto (0035e40)  VirtualHost, Route, RouteMatch,
 *                                                          RouteAction (+RequestMirrorPolicy),
 *                                                          WeightedCluster (+ClusterWeight),
 *                                                          RetryPolicy (+RetryBackOff,
 *                                                          RetryHostPredicate), RedirectAction,
 *                                                          DirectResponseAction, HeaderMatcher,
 *                                                          QueryParameterMatcher
 *   envoy/config/cluster/v3/cluster.proto (0035e40)       Cluster (+CommonLbConfig,
 *                                                          TransportSocketMatch)
 *   envoy/config/cluster/v3/circuit_breaker.proto (01c2c1f)  CircuitBreakers (+Thresholds)
 *   envoy/config/cluster/v3/outlier_detection.proto (1282f87)  OutlierDetection
 *   envoy/config/endpoint/v3/endpoint.proto (051dd55)     ClusterLoadAssignment (+Policy)
 *   envoy/config/endpoint/v3/endpoint_components.proto (051dd55)  LocalityLbEndpoints,
 *                                                          LbEndpoint, Endpoint
 *                                                          (+HealthCheckConfig)
 *   envoy/config/accesslog/v3/accesslog.proto (01f134c)   AccessLog, AccessLogFilter,
 *                                                          ResponseFlagFilter
 *   envoy/config/metrics/v3/stats.proto (04c3be2)         StatsConfig
 *   envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto
 *     (00349d9)                                           HttpConnectionManager, HttpFilter
 *   envoy/extensions/filters/http/router/v3/router.proto (005353c)  Router
 *   envoy/extensions/filters/http/fault/v3/fault.proto (0c3ffb9)    HTTPFault, FaultAbort
 *   envoy/extensions/filters/common/fault/v3/fault.proto (2cf4fc2)  FaultDelay
 *   envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto (119f143)
 *                                                          TlsInspector
 *   envoy/extensions/access_loggers/file/v3/file.proto (1275928)     FileAccessLog
 *   envoy/extensions/access_loggers/stream/v3/stream.proto (170a370) StdoutAccessLog,
 *                                                          StderrAccessLog
 *   envoy/extensions/upstreams/http/v3/http_protocol_options.proto (061b6e5)
 *                                                          HttpProtocolOptions
 *                                                          (+ExplicitHttpConfig,
 *                                                          UseDownstreamHttpConfig)
 *   envoy/extensions/transport_sockets/tls/v3/tls.proto (02faf37), common.proto (015f6f2)
 *                                                          UpstreamTlsContext,
 *                                                          DownstreamTlsContext,
 *                                                          CommonTlsContext (+Combined...),
 *                                                          TlsParameters, TlsCertificate,
 *                                                          CertificateValidationContext,
 *                                                          SubjectAltNameMatcher
 *   envoy/type/v3/percent.proto (39e27d5)                 Percent, FractionalPercent
 *   envoy/type/matcher/v3/string.proto (00ecb00), regex.proto (18595f0)  StringMatcher,
 *                                                          RegexMatcher (+GoogleRE2),
 *                                                          RegexMatchAndSubstitute
 * Oneof members and deprecated fields are listed; reserved names are not. Where a stored file
 * predates a field weft-proxy accepts, that field is listed too (it is an Envoy field: weft
 * accepts Envoy's names only): VirtualHost/Route.request_body_buffer_limit,
 * RouteMatch.path_separated_prefix, RetryPolicy.per_try_idle_timeout,
 * RequestMirrorPolicy.disable_shadow_host_suffix_append, HeaderMatcher.string_match and
 * treat_missing_header_as_empty, HeaderValueOption.append_action,
 * FilterChainMatch.direct_source_prefix_ranges, Metadata.typed_filter_metadata,
 * HTTPFault.filter_metadata, TlsInspector.max_client_hello_size,
 * close_connection_on_client_hello_parsing_errors and enable_ja4_fingerprinting,
 * OutlierDetection.always_eject_one_host, core HttpProtocolOptions.max_requests_per_connection,
 * StatsConfig.histogram_bucket_settings. A field newer than the stored file and not accepted
 * by weft is not listed, so it is still reported as "unknown field".
 */
#include "proxy/bootstrap/envoy_fields.h"

#include <string.h>

#define CORE    "envoy.config.core.v3."
#define ROUTE   "envoy.config.route.v3."
#define LISTENR "envoy.config.listener.v3."
#define CLUSTER "envoy.config.cluster.v3."
#define ENDPT   "envoy.config.endpoint.v3."
#define BOOT    "envoy.config.bootstrap.v3."
#define MATCHER "envoy.type.matcher.v3."
#define HCM     "envoy.extensions.filters.network.http_connection_manager.v3."
#define UPHTTP  "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define TLS     "envoy.extensions.transport_sockets.tls.v3."

typedef struct {
    const char *name;
    const char *fields; /* space-separated */
} envoy_message;

static const envoy_message messages[] = {
    {BOOT "Bootstrap",
     "node node_context_params static_resources dynamic_resources cluster_manager hds_config "
     "flags_path stats_sinks stats_config stats_flush_interval stats_flush_on_admin watchdog "
     "watchdogs tracing layered_runtime admin overload_manager enable_dispatcher_stats "
     "header_prefix stats_server_version_override use_tcp_for_dns_lookups bootstrap_extensions "
     "fatal_actions config_sources default_config_source default_socket_interface "
     "certificate_provider_instances"},
    {BOOT "Bootstrap.StaticResources", "listeners clusters secrets"},
    {BOOT "Bootstrap.DynamicResources",
     "lds_config lds_resources_locator cds_config cds_resources_locator ads_config"},
    {BOOT "Admin", "access_log access_log_path profile_path address socket_options"},
    {CORE "Node",
     "id cluster metadata dynamic_parameters locality user_agent_name user_agent_version "
     "user_agent_build_version extensions client_features listening_addresses"},
    {CORE "Locality", "region zone sub_zone"},
    {CORE "Metadata", "filter_metadata typed_filter_metadata"},
    {CORE "HeaderValue", "key value"},
    {CORE "HeaderValueOption", "header append append_action"},
    {CORE "DataSource", "filename inline_bytes inline_string"},
    {CORE "RuntimeFractionalPercent", "default_value runtime_key"},
    {CORE "TransportSocket", "name typed_config"},
    {CORE "Address", "socket_address pipe envoy_internal_address"},
    {CORE "SocketAddress", "protocol address port_value named_port resolver_name ipv4_compat "
                           "network_namespace_filepath"},
    {CORE "Pipe", "path mode"},
    {CORE "CidrRange", "address_prefix prefix_len"},
    {CORE "ConfigSource", "authorities path api_config_source ads self initial_fetch_timeout "
                          "resource_api_version"},
    {CORE "ApiConfigSource",
     "api_type transport_api_version cluster_names grpc_services refresh_delay request_timeout "
     "rate_limit_settings set_node_on_first_message_only config_validators_typed_configs"},
    {CORE "GrpcService", "envoy_grpc google_grpc timeout initial_metadata"},
    {CORE "GrpcService.EnvoyGrpc", "cluster_name authority retry_policy"},
    {CORE "HttpProtocolOptions",
     "idle_timeout max_connection_duration max_headers_count max_stream_duration "
     "headers_with_underscores_action max_requests_per_connection"},
    {CORE "Http1ProtocolOptions",
     "allow_absolute_url accept_http_10 default_host_for_http_10 header_key_format "
     "enable_trailers allow_chunked_length override_stream_error_on_invalid_http_message"},
    {CORE "Http2ProtocolOptions",
     "hpack_table_size max_concurrent_streams initial_stream_window_size "
     "initial_connection_window_size allow_connect allow_metadata max_outbound_frames "
     "max_outbound_control_frames max_consecutive_inbound_frames_with_empty_payload "
     "max_inbound_priority_frames_per_stream "
     "max_inbound_window_update_frames_per_data_frame_sent "
     "stream_error_on_invalid_http_messaging override_stream_error_on_invalid_http_message "
     "custom_settings_parameters connection_keepalive"},
    {CORE "SubstitutionFormatString",
     "text_format json_format text_format_source omit_empty_values content_type formatters"},
    {LISTENR "Listener",
     "name address additional_addresses stat_prefix filter_chains fcds_config "
     "filter_chain_matcher use_original_dst default_filter_chain "
     "per_connection_buffer_limit_bytes metadata deprecated_v1 drain_type listener_filters "
     "listener_filters_timeout continue_on_listener_filters_timeout transparent freebind "
     "socket_options tcp_fast_open_queue_length traffic_direction udp_listener_config "
     "api_listener connection_balance_config reuse_port enable_reuse_port access_log "
     "tcp_backlog_size max_connections_to_accept_per_socket_event bind_to_port "
     "internal_listener enable_mptcp ignore_global_conn_limit bypass_overload_manager"},
    {LISTENR "Filter", "name typed_config config_discovery"},
    {LISTENR "FilterChainMatch",
     "destination_port prefix_ranges address_suffix suffix_len direct_source_prefix_ranges "
     "source_type source_prefix_ranges source_ports server_names transport_protocol "
     "application_protocols"},
    {LISTENR "FilterChain", "filter_chain_match filters use_proxy_proto metadata transport_socket "
                            "transport_socket_connect_timeout name on_demand_configuration"},
    {LISTENR "ListenerFilter", "name typed_config filter_disabled"},
    {ROUTE "RouteConfiguration",
     "name virtual_hosts vhds internal_only_headers response_headers_to_add "
     "response_headers_to_remove request_headers_to_add request_headers_to_remove "
     "most_specific_header_mutations_wins validate_clusters max_direct_response_body_size_bytes "
     "cluster_specifier_plugins request_mirror_policies ignore_port_in_host_matching "
     "alternate_header_for_host_matching ignore_path_parameters_in_path_matching "
     "typed_per_filter_config metadata"},
    {ROUTE "VirtualHost",
     "name domains routes require_tls virtual_clusters rate_limits request_headers_to_add "
     "request_headers_to_remove response_headers_to_add response_headers_to_remove cors "
     "typed_per_filter_config include_request_attempt_count include_attempt_count_in_response "
     "retry_policy retry_policy_typed_config hedge_policy per_request_buffer_limit_bytes "
     "request_body_buffer_limit"},
    {ROUTE "Route",
     "name match route redirect direct_response filter_action non_forwarding_action metadata "
     "decorator typed_per_filter_config request_headers_to_add request_headers_to_remove "
     "response_headers_to_add response_headers_to_remove tracing per_request_buffer_limit_bytes "
     "request_body_buffer_limit"},
    {ROUTE "WeightedCluster", "clusters total_weight runtime_key_prefix"},
    {ROUTE "WeightedCluster.ClusterWeight",
     "name weight metadata_match request_headers_to_add request_headers_to_remove "
     "response_headers_to_add response_headers_to_remove typed_per_filter_config"},
    {ROUTE "RouteMatch",
     "prefix path safe_regex connect_matcher path_separated_prefix case_sensitive "
     "runtime_fraction headers query_parameters grpc tls_context"},
    {ROUTE "RouteAction",
     "cluster cluster_header weighted_clusters cluster_not_found_response_code metadata_match "
     "prefix_rewrite regex_rewrite host_rewrite_literal auto_host_rewrite host_rewrite_header "
     "host_rewrite_path_regex timeout idle_timeout retry_policy retry_policy_typed_config "
     "request_mirror_policies priority rate_limits include_vh_rate_limits hash_policy cors "
     "max_grpc_timeout grpc_timeout_offset upgrade_configs internal_redirect_policy "
     "internal_redirect_action max_internal_redirects hedge_policy max_stream_duration"},
    {ROUTE "RouteAction.RequestMirrorPolicy",
     "cluster runtime_fraction trace_sampled disable_shadow_host_suffix_append"},
    {ROUTE "RetryPolicy",
     "retry_on num_retries per_try_timeout per_try_idle_timeout retry_priority "
     "retry_host_predicate host_selection_retry_max_attempts retriable_status_codes "
     "retry_back_off rate_limited_retry_back_off retriable_headers retriable_request_headers"},
    {ROUTE "RetryPolicy.RetryBackOff", "base_interval max_interval"},
    {ROUTE "RetryPolicy.RetryHostPredicate", "name typed_config"},
    {ROUTE "RedirectAction",
     "https_redirect scheme_redirect host_redirect port_redirect path_redirect prefix_rewrite "
     "regex_rewrite response_code strip_query"},
    {ROUTE "DirectResponseAction", "status body"},
    {ROUTE "HeaderMatcher",
     "name exact_match safe_regex_match range_match present_match prefix_match suffix_match "
     "contains_match string_match invert_match treat_missing_header_as_empty"},
    {ROUTE "QueryParameterMatcher", "name string_match present_match"},
    {MATCHER "StringMatcher", "exact prefix suffix safe_regex contains ignore_case"},
    {MATCHER "RegexMatcher", "google_re2 regex"},
    {MATCHER "RegexMatcher.GoogleRE2", "max_program_size"},
    {MATCHER "RegexMatchAndSubstitute", "pattern substitution"},
    {"envoy.type.v3.Percent", "value"},
    {"envoy.type.v3.FractionalPercent", "numerator denominator"},
    {CLUSTER "Cluster",
     "transport_socket_matches name alt_stat_name type cluster_type eds_cluster_config "
     "connect_timeout per_connection_buffer_limit_bytes lb_policy load_assignment health_checks "
     "max_requests_per_connection circuit_breakers upstream_http_protocol_options "
     "common_http_protocol_options http_protocol_options http2_protocol_options "
     "typed_extension_protocol_options dns_refresh_rate dns_failure_refresh_rate "
     "respect_dns_ttl dns_lookup_family dns_resolvers use_tcp_for_dns_lookups "
     "dns_resolver_options outlier_detection cleanup_interval upstream_bind_config "
     "lb_subset_config ring_hash_lb_config maglev_lb_config original_dst_lb_config "
     "least_request_lb_config common_lb_config transport_socket metadata protocol_selection "
     "upstream_connection_options close_connections_on_host_health_failure "
     "ignore_health_on_host_removal filters load_balancing_policy lrs_server "
     "track_timeout_budgets upstream_config track_cluster_stats preconnect_policy "
     "connection_pool_per_downstream_connection"},
    {CLUSTER "Cluster.TransportSocketMatch", "name match transport_socket"},
    {CLUSTER "Cluster.CommonLbConfig",
     "healthy_panic_threshold zone_aware_lb_config locality_weighted_lb_config "
     "update_merge_window ignore_new_hosts_until_first_hc close_connections_on_host_set_change "
     "consistent_hashing_lb_config"},
    {CLUSTER "CircuitBreakers", "thresholds per_host_thresholds"},
    {CLUSTER "CircuitBreakers.Thresholds",
     "priority max_connections max_pending_requests max_requests max_retries retry_budget "
     "track_remaining max_connection_pools"},
    {CLUSTER "OutlierDetection",
     "consecutive_5xx interval base_ejection_time max_ejection_percent "
     "enforcing_consecutive_5xx enforcing_success_rate success_rate_minimum_hosts "
     "success_rate_request_volume success_rate_stdev_factor consecutive_gateway_failure "
     "enforcing_consecutive_gateway_failure split_external_local_origin_errors "
     "consecutive_local_origin_failure enforcing_consecutive_local_origin_failure "
     "enforcing_local_origin_success_rate failure_percentage_threshold "
     "enforcing_failure_percentage enforcing_failure_percentage_local_origin "
     "failure_percentage_minimum_hosts failure_percentage_request_volume max_ejection_time "
     "max_ejection_time_jitter successful_active_health_check_uneject_host monitors "
     "always_eject_one_host"},
    {ENDPT "ClusterLoadAssignment", "cluster_name endpoints named_endpoints policy"},
    {ENDPT "ClusterLoadAssignment.Policy",
     "drop_overloads overprovisioning_factor endpoint_stale_after weighted_priority_health"},
    {ENDPT "LocalityLbEndpoints",
     "locality lb_endpoints load_balancer_endpoints leds_cluster_locality_config "
     "load_balancing_weight priority proximity"},
    {ENDPT "LbEndpoint", "endpoint endpoint_name health_status metadata load_balancing_weight"},
    {ENDPT "Endpoint", "address health_check_config hostname"},
    {ENDPT "Endpoint.HealthCheckConfig", "port_value hostname address disable_active_health_check"},
    {"envoy.config.accesslog.v3.AccessLog", "name filter typed_config"},
    {"envoy.config.accesslog.v3.AccessLogFilter",
     "status_code_filter duration_filter not_health_check_filter traceable_filter runtime_filter "
     "and_filter or_filter header_filter response_flag_filter grpc_status_filter "
     "extension_filter metadata_filter log_type_filter"},
    {"envoy.config.accesslog.v3.ResponseFlagFilter", "flags"},
    {"envoy.config.metrics.v3.StatsConfig",
     "stats_tags use_all_default_tags stats_matcher histogram_settings histogram_bucket_settings"},
    {HCM "HttpConnectionManager",
     "codec_type stat_prefix rds route_config scoped_routes http_filters add_user_agent tracing "
     "common_http_protocol_options http1_safe_max_connection_duration http_protocol_options "
     "http2_protocol_options http3_protocol_options server_name server_header_transformation "
     "scheme_header_transformation max_request_headers_kb stream_idle_timeout "
     "stream_flush_timeout request_timeout request_headers_timeout drain_timeout "
     "drain_timeout_jitter delayed_close_timeout access_log access_log_flush_interval "
     "flush_access_log_on_new_request access_log_options use_remote_address "
     "xff_num_trusted_hops original_ip_detection_extensions early_header_mutation_extensions "
     "internal_address_config skip_xff_append via generate_request_id "
     "preserve_external_request_id always_set_request_id_in_response "
     "forward_client_cert_details set_current_client_cert_details forward_client_cert_matcher "
     "proxy_100_continue represent_ipv4_remote_address_as_ipv4_mapped_ipv6 upgrade_configs "
     "normalize_path merge_slashes path_with_escaped_slashes_action request_id_extension "
     "local_reply_config strip_matching_host_port strip_any_host_port "
     "stream_error_on_invalid_http_message path_normalization_options strip_trailing_host_dot "
     "proxy_status_config typed_header_validation_config append_x_forwarded_port "
     "append_local_overload add_proxy_protocol_connection_state forward_proto_config"},
    {HCM "HttpFilter", "name typed_config config_discovery is_optional disabled"},
    {HCM "HttpConnectionManager.SetCurrentClientCertDetails", "subject cert chain dns uri"},
    {"envoy.extensions.filters.http.router.v3.Router",
     "dynamic_stats start_child_span upstream_log suppress_envoy_headers strict_check_headers "
     "respect_expected_rq_timeout suppress_grpc_request_failure_code_stats"},
    {"envoy.extensions.filters.http.fault.v3.HTTPFault",
     "delay abort upstream_cluster headers downstream_nodes max_active_faults "
     "response_rate_limit delay_percent_runtime abort_percent_runtime delay_duration_runtime "
     "abort_http_status_runtime max_active_faults_runtime response_rate_limit_percent_runtime "
     "abort_grpc_status_runtime disable_downstream_cluster_stats filter_metadata"},
    {"envoy.extensions.filters.http.fault.v3.FaultAbort",
     "http_status grpc_status header_abort percentage"},
    {"envoy.extensions.filters.common.fault.v3.FaultDelay", "fixed_delay header_delay percentage"},
    {"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
     "enable_ja3_fingerprinting enable_ja4_fingerprinting initial_read_buffer_size "
     "max_client_hello_size close_connection_on_client_hello_parsing_errors"},
    {"envoy.extensions.access_loggers.file.v3.FileAccessLog",
     "path format json_format typed_json_format log_format udp_proxy"},
    {"envoy.extensions.access_loggers.stream.v3.StdoutAccessLog", "log_format"},
    {"envoy.extensions.access_loggers.stream.v3.StderrAccessLog", "log_format"},
    {UPHTTP, "common_http_protocol_options upstream_http_protocol_options explicit_http_config "
             "use_downstream_protocol_config auto_config http_filters"},
    {TLS "UpstreamTlsContext",
     "common_tls_context sni auto_host_sni auto_sni_san_validation allow_renegotiation "
     "max_session_keys enforce_rsa_key_usage"},
    {TLS "DownstreamTlsContext",
     "common_tls_context require_client_certificate require_sni session_ticket_keys "
     "session_ticket_keys_sds_secret_config disable_stateless_session_resumption "
     "disable_stateful_session_resumption session_timeout ocsp_staple_policy "
     "full_scan_certs_on_sni_mismatch prefer_client_ciphers"},
    {TLS "CommonTlsContext",
     "tls_params tls_certificates tls_certificate_sds_secret_configs "
     "tls_certificate_provider_instance custom_tls_certificate_selector "
     "tls_certificate_certificate_provider tls_certificate_certificate_provider_instance "
     "validation_context validation_context_sds_secret_config combined_validation_context "
     "validation_context_certificate_provider validation_context_certificate_provider_instance "
     "alpn_protocols custom_handshaker key_log read_ahead_buffer_size"},
    {TLS "CommonTlsContext.CombinedCertificateValidationContext",
     "default_validation_context validation_context_sds_secret_config "
     "validation_context_certificate_provider validation_context_certificate_provider_instance"},
    {TLS "TlsParameters",
     "tls_minimum_protocol_version tls_maximum_protocol_version cipher_suites ecdh_curves "
     "signature_algorithms"},
    {TLS "TlsCertificate",
     "certificate_chain private_key pkcs12 watched_directory private_key_provider password "
     "ocsp_staple signed_certificate_timestamp"},
    {TLS "CertificateValidationContext",
     "trusted_ca ca_certificate_provider_instance watched_directory verify_certificate_spki "
     "verify_certificate_hash match_typed_subject_alt_names match_subject_alt_names "
     "require_signed_certificate_timestamp crl allow_expired_certificate "
     "trust_chain_verification custom_validator_config only_verify_leaf_cert_crl "
     "max_verify_depth"},
    {TLS "SubjectAltNameMatcher", "san_type matcher"},
    {UPHTTP ".ExplicitHttpConfig",
     "http_protocol_options http2_protocol_options http3_protocol_options"},
    {UPHTTP ".UseDownstreamHttpConfig",
     "http_protocol_options http2_protocol_options http3_protocol_options"},
};

/* Path endings (array indexes dropped, segments joined by ".") and the message there; the
 * longest ending that matches wins. */
typedef struct {
    const char *ending;
    const char *message;
} envoy_shape;

static const envoy_shape shapes[] = {
    {"node", CORE "Node"},
    {"locality", CORE "Locality"},
    {"admin", BOOT "Admin"},
    {"static_resources", BOOT "Bootstrap.StaticResources"},
    {"dynamic_resources", BOOT "Bootstrap.DynamicResources"},
    {"stats_config", "envoy.config.metrics.v3.StatsConfig"},
    {"cds_config", CORE "ConfigSource"},
    {"lds_config", CORE "ConfigSource"},
    {"ads_config", CORE "ApiConfigSource"},
    {"grpc_services", CORE "GrpcService"},
    {"envoy_grpc", CORE "GrpcService.EnvoyGrpc"},
    {"address", CORE "Address"},
    {"socket_address", CORE "SocketAddress"},
    {"pipe", CORE "Pipe"},
    {"metadata", CORE "Metadata"},
    {"static_resources.listeners", LISTENR "Listener"},
    {"filter_chains", LISTENR "FilterChain"},
    {"default_filter_chain", LISTENR "FilterChain"},
    {"filter_chain_match", LISTENR "FilterChainMatch"},
    {"prefix_ranges", CORE "CidrRange"},
    {"source_prefix_ranges", CORE "CidrRange"},
    {"direct_source_prefix_ranges", CORE "CidrRange"},
    {"filter_chains.filters", LISTENR "Filter"},
    {"default_filter_chain.filters", LISTENR "Filter"},
    {"listener_filters", LISTENR "ListenerFilter"},
    {"http_filters", HCM "HttpFilter"},
    {"access_log", "envoy.config.accesslog.v3.AccessLog"},
    {"access_log.filter", "envoy.config.accesslog.v3.AccessLogFilter"},
    {"response_flag_filter", "envoy.config.accesslog.v3.ResponseFlagFilter"},
    {"log_format", CORE "SubstitutionFormatString"},
    {"text_format_source", CORE "DataSource"},
    {"common_http_protocol_options", CORE "HttpProtocolOptions"},
    {"http_protocol_options", CORE "Http1ProtocolOptions"},
    {"http2_protocol_options", CORE "Http2ProtocolOptions"},
    {"explicit_http_config", UPHTTP ".ExplicitHttpConfig"},
    {"use_downstream_protocol_config", UPHTTP ".UseDownstreamHttpConfig"},
    {"route_config", ROUTE "RouteConfiguration"},
    {"virtual_hosts", ROUTE "VirtualHost"},
    {"routes", ROUTE "Route"},
    {"routes.match", ROUTE "RouteMatch"},
    {"routes.route", ROUTE "RouteAction"},
    {"redirect", ROUTE "RedirectAction"},
    {"direct_response", ROUTE "DirectResponseAction"},
    {"direct_response.body", CORE "DataSource"},
    {"weighted_clusters", ROUTE "WeightedCluster"},
    {"weighted_clusters.clusters", ROUTE "WeightedCluster.ClusterWeight"},
    {"retry_policy", ROUTE "RetryPolicy"},
    {"retry_back_off", ROUTE "RetryPolicy.RetryBackOff"},
    {"retry_host_predicate", ROUTE "RetryPolicy.RetryHostPredicate"},
    {"request_mirror_policies", ROUTE "RouteAction.RequestMirrorPolicy"},
    {"runtime_fraction", CORE "RuntimeFractionalPercent"},
    {"runtime_fraction.default_value", "envoy.type.v3.FractionalPercent"},
    {"percentage", "envoy.type.v3.FractionalPercent"},
    {"headers", ROUTE "HeaderMatcher"},
    {"retriable_headers", ROUTE "HeaderMatcher"},
    {"query_parameters", ROUTE "QueryParameterMatcher"},
    {"string_match", MATCHER "StringMatcher"},
    {"safe_regex", MATCHER "RegexMatcher"},
    {"safe_regex_match", MATCHER "RegexMatcher"},
    {"regex_rewrite.pattern", MATCHER "RegexMatcher"},
    {"google_re2", MATCHER "RegexMatcher.GoogleRE2"},
    {"regex_rewrite", MATCHER "RegexMatchAndSubstitute"},
    {"request_headers_to_add", CORE "HeaderValueOption"},
    {"response_headers_to_add", CORE "HeaderValueOption"},
    {"request_headers_to_add.header", CORE "HeaderValue"},
    {"response_headers_to_add.header", CORE "HeaderValue"},
    {"static_resources.clusters", CLUSTER "Cluster"},
    {"circuit_breakers", CLUSTER "CircuitBreakers"},
    {"circuit_breakers.thresholds", CLUSTER "CircuitBreakers.Thresholds"},
    {"outlier_detection", CLUSTER "OutlierDetection"},
    {"common_lb_config", CLUSTER "Cluster.CommonLbConfig"},
    {"healthy_panic_threshold", "envoy.type.v3.Percent"},
    {"load_assignment", ENDPT "ClusterLoadAssignment"},
    {"load_assignment.policy", ENDPT "ClusterLoadAssignment.Policy"},
    {"load_assignment.endpoints", ENDPT "LocalityLbEndpoints"},
    {"lb_endpoints", ENDPT "LbEndpoint"},
    {"lb_endpoints.endpoint", ENDPT "Endpoint"},
    {"health_check_config", ENDPT "Endpoint.HealthCheckConfig"},
    {"delay", "envoy.extensions.filters.common.fault.v3.FaultDelay"},
    {"transport_socket", CORE "TransportSocket"},
    {"transport_socket_matches", CLUSTER "Cluster.TransportSocketMatch"},
    {"set_current_client_cert_details", HCM "HttpConnectionManager.SetCurrentClientCertDetails"},
    {"common_tls_context", TLS "CommonTlsContext"},
    {"tls_params", TLS "TlsParameters"},
    {"tls_certificates", TLS "TlsCertificate"},
    {"validation_context", TLS "CertificateValidationContext"},
    {"default_validation_context", TLS "CertificateValidationContext"},
    {"combined_validation_context", TLS "CommonTlsContext.CombinedCertificateValidationContext"},
    {"match_typed_subject_alt_names", TLS "SubjectAltNameMatcher"},
    {"match_typed_subject_alt_names.matcher", MATCHER "StringMatcher"},
    {"match_subject_alt_names", MATCHER "StringMatcher"},
    {"certificate_chain", CORE "DataSource"},
    {"private_key", CORE "DataSource"},
    {"trusted_ca", CORE "DataSource"},
    {"crl", CORE "DataSource"},
    {"abort", "envoy.extensions.filters.http.fault.v3.FaultAbort"},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const envoy_message *find_message(const char *name)
{
    for (size_t i = 0; i < NELEM(messages); i++)
        if (strcmp(messages[i].name, name) == 0)
            return &messages[i];
    return NULL;
}

/* path without its "[N]" segments into out (truncated to cap - 1 bytes). */
static void strip_indexes(const char *path, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = path; *p && n + 1 < cap; p++) {
        if (*p == '[') {
            const char *e = strchr(p, ']');
            if (e) {
                p = e;
                continue;
            }
        }
        out[n++] = *p;
    }
    out[n] = '\0';
}

static bool ends_with_segments(const char *s, size_t len, const char *ending)
{
    size_t n = strlen(ending);
    if (n > len || strcmp(s + len - n, ending) != 0)
        return false;
    return n == len || s[len - n - 1] == '.';
}

const char *wp_envoy_message_at(const char *path, const char *type_url)
{
    if (type_url) {
        const char *slash = strrchr(type_url, '/');
        const envoy_message *m = find_message(slash ? slash + 1 : type_url);
        if (m)
            return m->name;
    }
    char s[1024];
    strip_indexes(path ? path : "", s, sizeof(s));
    size_t len = strlen(s);
    if (len == 0)
        return BOOT "Bootstrap";
    const envoy_shape *best = NULL;
    for (size_t i = 0; i < NELEM(shapes); i++)
        if (ends_with_segments(s, len, shapes[i].ending) &&
            (!best || strlen(shapes[i].ending) > strlen(best->ending)))
            best = &shapes[i];
    return best ? best->message : NULL;
}

bool wp_envoy_message_has(const char *message, const char *field)
{
    const envoy_message *m = message ? find_message(message) : NULL;
    size_t n = field ? strlen(field) : 0;
    if (!m || n == 0)
        return false;
    for (const char *p = m->fields; (p = strstr(p, field)) != NULL; p += n)
        if ((p == m->fields || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}
