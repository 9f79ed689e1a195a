/*
 * network_filter.c - a connection's network filter chain (network_filter.h).
 */
#include "proxy/net/network_filter.h"

void wp_nf_chain_init(wp_nf_chain *c)
{
    c->self = NULL;
    c->n = 0;
    c->stopped = 0;
}

int wp_nf_chain_add(wp_nf_chain *c, const wp_nf_ops *ops, void *self, const void *config)
{
    if (c->n >= WP_NF_MAX)
        return -1;
    c->self = self;
    c->ops[c->n] = ops;
    c->config[c->n] = config;
    c->ctx[c->n] = NULL;
    c->state[c->n] = 0;
    c->n++;
    c->stopped = c->n;
    return 0;
}

/* Filter i as its callbacks see it. */
static wp_nf_filter filter_at(wp_nf_chain *c, uint8_t i)
{
    return (wp_nf_filter){c->self, c->config[i], &c->ctx[i], &c->state[i]};
}

wp_nf_status wp_nf_chain_on_new_connection(wp_nf_chain *c)
{
    for (uint8_t i = 0; i < c->n; i++) {
        const wp_nf_ops *o = c->ops[i];
        if (!o->on_new_connection)
            continue;
        wp_nf_filter f = filter_at(c, i);
        wp_nf_status st = o->on_new_connection(&f);
        if (st == WP_NF_STOP_ITERATION)
            return WP_NF_STOP_ITERATION;
    }
    return WP_NF_CONTINUE;
}

static wp_nf_status data_from(wp_nf_chain *c, uint8_t from, bool end_stream)
{
    c->stopped = c->n;
    for (uint8_t i = from; i < c->n; i++) {
        const wp_nf_ops *o = c->ops[i];
        if (!o->on_data)
            continue;
        wp_nf_filter f = filter_at(c, i);
        wp_nf_status st = o->on_data(&f, end_stream);
        if (st == WP_NF_STOP_ITERATION) {
            c->stopped = i;
            return WP_NF_STOP_ITERATION;
        }
    }
    return WP_NF_CONTINUE;
}

wp_nf_status wp_nf_chain_on_data(wp_nf_chain *c, bool end_stream)
{
    return data_from(c, 0, end_stream);
}

wp_nf_status wp_nf_chain_continue(wp_nf_chain *c, bool end_stream)
{
    if (c->stopped >= c->n)
        return WP_NF_CONTINUE;
    return data_from(c, (uint8_t)(c->stopped + 1), end_stream);
}

void wp_nf_chain_on_close(wp_nf_chain *c)
{
    uint8_t n = c->n;
    c->n = 0; /* a filter closing the connection again from on_close finds no filter */
    c->stopped = 0;
    for (uint8_t i = 0; i < n; i++) {
        if (!c->ops[i]->on_close)
            continue;
        wp_nf_filter f = filter_at(c, i);
        c->ops[i]->on_close(&f);
    }
}
