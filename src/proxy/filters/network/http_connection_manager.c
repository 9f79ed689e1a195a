#include "proxy/filters/network/http_connection_manager.h"

#include "proxy/http/conn.h"

static wp_nf_status on_new_connection(void *self)
{
    return wp_hcm_on_new_connection(self);
}

static wp_nf_status on_data(void *self, bool end_stream)
{
    return wp_hcm_on_data(self, end_stream);
}

const wp_nf_ops wp_hcm_network_filter = {
    "envoy.filters.network.http_connection_manager",
    on_new_connection,
    on_data,
};
