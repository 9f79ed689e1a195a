/*
 * dns_refresh.h - the names of STRICT_DNS and LOGICAL_DNS clusters, resolved again while the
 * proxy runs (Envoy: source/extensions/clusters/strict_dns/strict_dns_cluster.cc and
 * logical_dns/logical_dns_cluster.cc; Cluster.dns_refresh_rate, default 5 s).
 *
 * Envoy behaviour followed:
 *  - every dns_refresh_rate a DNS cluster resolves its names again; when an answer differs
 *    from the hosts the cluster has, the cluster's hosts change (here: the owner is told, and
 *    builds the snapshot again with the new addresses, as an EDS update does);
 *  - a failed resolution keeps the hosts of the last one that succeeded (a name that never
 *    resolved has no host: 503 UH until it does);
 *  - lookups run off the workers and never block the main thread's loop (here: libuv's
 *    threadpool, uv_getaddrinfo).
 *  - dns_lookup_family: AUTO takes an IPv6 address when the name has one, else IPv4;
 *    V4_PREFERRED IPv4 first; V4_ONLY only IPv4.
 *  - STRICT_DNS: every address of the answer is a host; LOGICAL_DNS: the first (the caller
 *    takes addrs[0]).
 * Not followed: respect_dns_ttl, dns_failure_refresh_rate and the resolver options are not
 * read; at most WP_DNS_MAX_ADDRS addresses of a name are kept (the refresh timer is the smallest
 * dns_refresh_rate of the snapshot's DNS clusters, also after a failure).
 *
 * Use: a snapshot's names are resolved with wp_dns_refresh_resolve between
 * wp_dns_refresh_begin and wp_dns_refresh_end (which drops the names the snapshot no longer
 * uses and arms the timer). The first answer for a name is a blocking getaddrinfo (at start
 * and when a new snapshot brings a new name, on the main thread, as before); later ones are
 * the cached answers of the refreshes.
 *
 * Ownership: the owner creates one per process and frees it with wp_dns_refresh_close (from
 * the loop: its timer and lookups finish first; the memory goes when they have). Errors:
 * allocation failures make a name uncached (resolved again, blocking, next time) and are
 * logged; nothing here fails the snapshot. Threads: the main thread's loop only.
 */
#ifndef WEFT_PROXY_SERVER_DNS_REFRESH_H
#define WEFT_PROXY_SERVER_DNS_REFRESH_H

#include <stdint.h>

#include <uv.h>

#include "proxy/config/config.h"

typedef struct wp_dns_refresh wp_dns_refresh;

/* Called (from the loop) after a refresh round in which some name's address changed. */
typedef void (*wp_dns_changed_cb)(void *ud);

/* A new cache. loop may be NULL until the loop exists (no refreshes run before
 * wp_dns_refresh_set_loop). NULL when out of memory. */
wp_dns_refresh *wp_dns_refresh_new(wp_dns_changed_cb changed, void *ud);
/* Refreshes run on loop from now on (the timer is armed at the next wp_dns_refresh_end). */
int wp_dns_refresh_set_loop(wp_dns_refresh *r, uv_loop_t *loop);

/* A snapshot's resolutions start. */
void wp_dns_refresh_begin(wp_dns_refresh *r);
#define WP_DNS_MAX_ADDRS 64 /* addresses kept of one name */

/* host:port's addresses of family fam (text set, getaddrinfo's order, no repeats): the cached
 * answer of the last successful resolution, else a blocking getaddrinfo now. Returns how many
 * (0: none, never resolved), *addrs pointing at them (owned here, valid until the next
 * wp_dns_refresh_end or refresh round). The name is marked as used by the snapshot. */
size_t wp_dns_refresh_resolve(wp_dns_refresh *r, const char *host, uint32_t port, wp_dns_family fam,
                              const wp_addr **addrs);

/* The first address of the family dns_lookup_family fam picks in getaddrinfo's answer res
 * (AUTO: IPv6 when res has one, else IPv4; V4_PREFERRED: the reverse; V4_ONLY: IPv4), NULL
 * when it has none of that family. */
const struct addrinfo *wp_dns_pick(const struct addrinfo *res, wp_dns_family fam);
/* The snapshot's resolutions are done: names it did not use are dropped; refreshes run every
 * refresh_ms (0: none, the snapshot has no DNS name). */
void wp_dns_refresh_end(wp_dns_refresh *r, uint64_t refresh_ms);

/* Names cached, lookups completed by refreshes so far, refresh rounds that changed an
 * address (for tests and logs). */
typedef struct {
    size_t names;
    uint64_t lookups, changes;
} wp_dns_refresh_counts;
wp_dns_refresh_counts wp_dns_refresh_stats(const wp_dns_refresh *r);

/* Stops the refreshes; the memory goes once the timer is closed and the lookups in flight
 * have finished (the loop must run on). NULL is a no-op. Without a loop, frees at once. */
void wp_dns_refresh_close(wp_dns_refresh *r);

#endif
