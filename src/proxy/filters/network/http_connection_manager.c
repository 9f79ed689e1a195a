#include "proxy/filters/network/http_connection_manager.h"

#include "proxy/http/conn.h"

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    return wp_hcm_on_new_connection(f->self);
}

static wp_nf_status on_data(wp_nf_filter *f, bool end_stream)
{
    return wp_hcm_on_data(f->self, end_stream);
}

const wp_nf_ops wp_hcm_network_filter = {
    "envoy.filters.network.http_connection_manager",
    on_new_connection,
    on_data,
    NULL,
};
