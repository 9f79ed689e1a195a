#include "proxy/filters/network/filters.h"

#include "proxy/filters/network/http_connection_manager.h"
#include "proxy/filters/network/istio_stats.h"
#include "proxy/filters/network/metadata_exchange.h"
#include "proxy/filters/network/rbac.h"
#include "proxy/filters/network/tcp_proxy.h"

static const wp_nf_ops *const ops[WP_NF_KIND_COUNT_] = {
    [WP_NF_HTTP_CONNECTION_MANAGER] = &wp_hcm_network_filter,
    [WP_NF_RBAC] = &wp_rbac_network_filter,
    [WP_NF_TCP_PROXY] = &wp_tcp_proxy_network_filter,
    [WP_NF_ISTIO_STATS] = &wp_istio_stats_network_filter,
    [WP_NF_METADATA_EXCHANGE] = &wp_tcp_mx_network_filter,
};

const wp_nf_ops *wp_network_filter_ops(wp_nf_kind k)
{
    return (unsigned)k < WP_NF_KIND_COUNT_ ? ops[k] : NULL;
}
