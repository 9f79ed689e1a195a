#include "proxy/filters/network/http_connection_manager.h"

#include "proxy/http/conn.h"
#include "proxy/http/conn_h2.h"

static wp_nf_status on_new_connection(wp_nf_filter *f)
{
    return wp_hcm_on_new_connection(f->self);
}

/* The codec is chosen on the first bytes (Envoy's codec_type; conn.h wp_hcm_choose_codec):
 * HTTP/1 is the connection manager's own path, HTTP/2 plugs in above it (conn_h2.h). */
static wp_nf_status on_data(wp_nf_filter *f, bool end_stream)
{
    wp_dconn *d = f->self;
    if (__builtin_expect(!d->proto_known, 0)) {
        wp_dconn_codec c = wp_hcm_choose_codec(d);
        if (c == WP_DCONN_CODEC_WAIT)
            return WP_NF_STOP_ITERATION;
        if (c == WP_DCONN_CODEC_H2 && wp_h2c_start(d) != 0) {
            wp_dconn_close(d);
            return WP_NF_STOP_ITERATION;
        }
    }
    return wp_hcm_on_data(d, end_stream);
}

const wp_nf_ops wp_hcm_network_filter = {
    "envoy.filters.network.http_connection_manager",
    on_new_connection,
    on_data,
    NULL,
};
