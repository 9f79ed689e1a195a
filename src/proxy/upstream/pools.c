/*
 * pools.c - a generation's pools as one (conn_pool.h): a request goes to the HTTP/2 pool of
 * its cluster (pool_h2.h) or to the HTTP/1 pool (upstream.c), and a retired generation closes
 * the idle connections of both. The top of the upstream layer: it chooses between the two
 * pools, which never call it.
 */
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/cluster_manager.h"
#include "proxy/upstream/pool_h2.h"

bool wp_pool_newstream_http(wp_pool *p, int host, wp_pool_req *rq, const wp_pool_callbacks *cb,
                            void *ctx, bool downstream_h2)
{
    if (p->h2) { /* the cluster may speak HTTP/2 (one test per request on HTTP/1 clusters) */
        const wp_cluster *c = &wp_pool_gen(p)->cfg->clusters[p->cluster];
        if (c->proto == WP_UP_HTTP2 || (downstream_h2 && c->h2_allowed))
            return wp_h2pool_newstream(p, host, rq, cb, ctx);
    }
    return wp_pool_newstream(p, host, rq, cb, ctx);
}

bool wp_pool_newstream_http_dst(wp_pool *p, const struct sockaddr *dst, wp_pool_req *rq,
                                const wp_pool_callbacks *cb, void *ctx, bool downstream_h2)
{
    if (p->h2) {
        const wp_cluster *c = &wp_pool_gen(p)->cfg->clusters[p->cluster];
        if (c->proto == WP_UP_HTTP2 || (downstream_h2 && c->h2_allowed))
            return wp_h2pool_newstream_dst(p, dst, rq, cb, ctx);
    }
    return wp_pool_newstream_dst(p, dst, rq, cb, ctx);
}

void wp_pools_close_idle(wp_wgen *wg)
{
    wp_pools_close_idle_h1(wg);
    for (size_t i = 0; wg->pools && i < wg->gen->cfg->nclusters; i++)
        if (wg->pools[i].h2)
            wp_h2pool_close_idle(&wg->pools[i]);
}
