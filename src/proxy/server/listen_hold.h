/*
 * listen_hold.h - the sockets of dynamic listeners that an LDS update added but that do not
 * serve yet (warming: a route configuration has not arrived), held from that update on.
 *
 * Envoy binds a listener's sockets when its listener manager adds the listener
 * (ListenerImpl's ListenSocketFactoryImpl, before the listener warms) and keeps them until
 * the listener serves (listen() then, on the workers' behalf) or goes: an address that cannot
 * be bound fails that LDS update ("Error adding/updating listener(s) NAME: cannot bind 'ADDR':
 * why"), never a later RDS update. weft puts a warming listener into its snapshot only when
 * its route configuration arrives (xds_compose.h), so the server holds its sockets here
 * meanwhile: one per worker (wp_listen_socket's SO_REUSEPORT sockets), bound, not listening,
 * so a connection to a warming listener is refused, as by Envoy.
 *
 * While held, a socket's SO_REUSEADDR is off. Linux then refuses another socket's bind of the
 * address unless both have SO_REUSEPORT and the same user (the proxy's own sockets), whereas a
 * bound, non-listening SO_REUSEADDR socket lets an application's SO_REUSEADDR socket bind and
 * listen on the address first (the listener's listen() then fails once it warms, after its LDS
 * update was accepted). Taking the sockets turns SO_REUSEADDR back on (as wp_listen_socket
 * sets it) before the workers listen.
 *
 * Protocol (main thread only): per LDS update wp_listen_hold_add with the update's
 * listeners, then wp_listen_hold_settle with its outcome; wp_listen_hold_take when a snapshot
 * that serves a listener is applied. Errors: -1 only when out of memory.
 */
#ifndef WEFT_PROXY_LISTEN_HOLD_H
#define WEFT_PROXY_LISTEN_HOLD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "proxy/config/config.h"
#include "xds/discovery.h"

typedef struct wp_listen_hold wp_listen_hold;

/* An empty hold whose listeners get nsockets sockets each (the workers); NULL when out of
 * memory. */
wp_listen_hold *wp_listen_hold_new(unsigned nsockets);
/* Closes every held socket and frees h (NULL: nothing). */
void wp_listen_hold_free(wp_listen_hold *h);

/* a and b have the same name and address. */
bool wp_listener_same(const wp_listener *a, const wp_listener *b);

/* The reason in wp_listen_socket's error text err for listener name: err without its
 * "listener NAME: " prefix ("cannot bind '127.0.0.1:80': Address already in use"). Points
 * into err. */
const char *wp_listen_error_reason(const char *err, const char *name);

/* For an LDS update whose listeners are cfg->listeners[first..) (loaded with placeholder route
 * configurations, so that the warming ones are among them; warming names those). A listener
 * that serving serves (bound there, wp_listener_same) and that does not go warming keeps the
 * workers' sockets; one already held keeps its sockets; every other one is bound now. Each
 * that cannot be bound gets failed[name] = its reason (wp_listen_error_reason), in listener
 * order. serving may be NULL. Returns 0, or -1 when out of memory. */
int wp_listen_hold_add(wp_listen_hold *h, const wp_config *cfg, size_t first,
                       const wf_xds_names *warming, const wp_config *serving, json_t *failed);

/* The outcome of the LDS update of the last wp_listen_hold_add. Accepted: the sockets of the
 * listeners it does not have (removed, or moved to another address, while warming) are
 * closed. Rejected: the sockets it bound are closed, the others kept. */
void wp_listen_hold_settle(wp_listen_hold *h, bool accepted);

/* Moves the held sockets of l (same name and address) into fds[0..nsockets), SO_REUSEADDR on
 * again, and forgets them: true. false (fds untouched) when none are held for l. */
bool wp_listen_hold_take(wp_listen_hold *h, const wp_listener *l, int *fds);

/* Listeners whose sockets are held. */
size_t wp_listen_hold_count(const wp_listen_hold *h);

#endif
