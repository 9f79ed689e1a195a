/*
 * deferred.h - deferred deletion, as Envoy's Dispatcher::deferredDelete
 * (envoy/event/dispatcher.h, source/common/event/dispatcher_impl.cc clearDeferredDeleteList):
 * an object that ends during a callback is put on its loop's list and destroyed when the
 * loop iteration's callbacks have run, so no caller up the stack is ever left holding a
 * freed (or already reused) object.
 *
 * Contract:
 *  - wp_deferred_delete(dd, it, destroy): `it` is embedded in the object (no allocation);
 *    destroy(it) runs once, later: in the check phase of this loop iteration, after the
 *    timer and I/O callbacks (queued from a close callback, which libuv runs after the check
 *    phase: in the next iteration's). Until then the object stays valid: callers may read
 *    it after the call that ended it. Queuing an item already queued does nothing.
 *  - Items are destroyed in the order queued; items that a destroy queues are destroyed in
 *    the same pass. destroy may free the object or put it back on a free list (the item is
 *    unlinked and reset before destroy runs, so a reused object can be queued again).
 *  - An idle loop is not woken: the check handle (and an idle handle that keeps the poll
 *    from blocking while items wait) runs only while the list is non-empty; starting and
 *    stopping them makes no system call.
 *  - Objects that own libuv handles (connections, sockets) close those at once and are freed
 *    from their close callbacks, which libuv runs in its close phase, after this list's pass
 *    of the same iteration: their memory, too, stays valid until the iteration ends.
 *
 * Single-threaded: one list per loop (per worker). Errors: wp_deferred_init returns 0 or a
 * libuv error code.
 */
#ifndef WEFT_PROXY_NET_DEFERRED_H
#define WEFT_PROXY_NET_DEFERRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

typedef struct wp_deferred_item wp_deferred_item;
typedef void (*wp_deferred_fn)(wp_deferred_item *it);

/* Embedded in a deletable object; zero = not queued. */
struct wp_deferred_item {
    wp_deferred_item *next;
    wp_deferred_fn destroy; /* set while queued */
};

typedef struct wp_deferred {
    uv_check_t check; /* runs the pass after the poll phase */
    uv_idle_t idle;   /* while items wait: the poll does not block */
    wp_deferred_item *head, *tail;
    size_t queued;      /* items on the list now */
    uint64_t destroyed; /* items destroyed so far */
    bool armed;         /* check and idle started */
    bool ready;         /* initialised (wp_deferred_close does nothing on a zeroed dd) */
} wp_deferred;

/* Initialises dd on loop (handles inactive until something is queued). 0 or UV_E*. */
int wp_deferred_init(wp_deferred *dd, uv_loop_t *loop);
/* Queues it; destroy(it) runs at the end of the iteration (see the contract). */
void wp_deferred_delete(wp_deferred *dd, wp_deferred_item *it, wp_deferred_fn destroy);
/* Destroys everything queued now (what the check phase runs; also for shutdown). */
void wp_deferred_drain(wp_deferred *dd);
/* Drains, then closes the two handles (their close completes in the loop's close phase:
 * run the loop before freeing dd). Nothing on a zeroed (never initialised) dd. */
void wp_deferred_close(wp_deferred *dd);

#endif
