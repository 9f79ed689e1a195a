/*
 * test_deferred_delete.c - deferred deletion (src/proxy/net/deferred.h) on a real libuv loop:
 * an object ended in a callback stays valid until the iteration's callbacks have run, is
 * destroyed exactly once, many in one pass, deletions queued by a deletion, and an idle loop
 * that nothing keeps busy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "proxy/net/deferred.h"

typedef struct obj {
    wp_deferred_item dd;
    int id;
    int destroyed;   /* times destroy ran */
    int magic;       /* 0x5a while alive */
    struct env *env; /* for destroys that queue more */
    struct obj *then[2];
} obj;

typedef struct env {
    uv_loop_t loop;
    wp_deferred dd;
    int order[2048];
    int norder;
    uv_timer_t long_timer; /* test_idle_loop_not_busy's (closed by teardown if it fails) */
    bool long_timer_open;
} env;

static obj *obj_of(wp_deferred_item *it)
{
    return (obj *)(void *)((char *)it - offsetof(obj, dd));
}

static void destroy(wp_deferred_item *it)
{
    obj *o = obj_of(it);
    assert_int_equal(o->magic, 0x5a); /* not destroyed before */
    o->destroyed++;
    o->magic = 0;
    if (o->env && o->env->norder < 2048)
        o->env->order[o->env->norder++] = o->id;
    for (int i = 0; i < 2; i++)
        if (o->then[i])
            wp_deferred_delete(&o->env->dd, &o->then[i]->dd, destroy);
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    assert_int_equal(uv_loop_init(&e->loop), 0);
    assert_int_equal(wp_deferred_init(&e->dd, &e->loop), 0);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    if (e->long_timer_open)
        uv_close((uv_handle_t *)&e->long_timer, NULL);
    wp_deferred_close(&e->dd);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    free(e);
    return 0;
}

static obj mk(env *e, int id)
{
    return (obj){.id = id, .magic = 0x5a, .env = e};
}

static void never(uv_timer_t *t)
{
    (void)t;
    fail_msg("the long timer fired");
}

/* ---- an object ended in a callback ---- */

typedef struct {
    env *e;
    obj *o;
    int seen_alive; /* the later callback of the same iteration saw it valid */
} cb_ctx;

static void first_cb(uv_timer_t *t)
{
    cb_ctx *c = t->data;
    wp_deferred_delete(&c->e->dd, &c->o->dd, destroy);
    /* the caller may look at the object after the call that ended it */
    assert_int_equal(c->o->magic, 0x5a);
    assert_int_equal(c->o->destroyed, 0);
}

static void second_cb(uv_timer_t *t)
{
    cb_ctx *c = t->data;
    if (c->o->magic == 0x5a && c->o->destroyed == 0)
        c->seen_alive = 1;
}

static void test_valid_until_iteration_ends(void **state)
{
    env *e = *state;
    obj o = mk(e, 1);
    cb_ctx c = {e, &o, 0};
    uv_timer_t t1, t2;
    uv_timer_init(&e->loop, &t1);
    uv_timer_init(&e->loop, &t2);
    t1.data = t2.data = &c;
    uv_timer_start(&t1, first_cb, 0, 0);
    uv_timer_start(&t2, second_cb, 0, 0); /* same due time: runs after t1, same iteration */
    /* a watchdog: were the poll after the timers to block, it would wake only for this */
    uv_timer_t *wd = &e->long_timer;
    uv_timer_init(&e->loop, wd);
    e->long_timer_open = true;
    uv_timer_start(wd, never, 3000, 0);
    uint64_t t0 = uv_hrtime();
    uv_run(&e->loop, UV_RUN_ONCE);
    assert_true(uv_hrtime() - t0 < 1000000000ULL); /* the iteration did not wait */
    assert_int_equal(c.seen_alive, 1);
    assert_int_equal(o.destroyed, 1); /* freed at the end of that iteration */
    assert_int_equal(e->dd.queued, 0);
    uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(o.destroyed, 1); /* exactly once */
    uv_close((uv_handle_t *)&t1, NULL);
    uv_close((uv_handle_t *)&t2, NULL);
    uv_close((uv_handle_t *)wd, NULL);
    e->long_timer_open = false;
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(o.destroyed, 1);
}

/* Ended from an I/O callback (the poll phase): destroyed in the check phase right after. */
static void async_cb(uv_async_t *a)
{
    cb_ctx *c = a->data;
    wp_deferred_delete(&c->e->dd, &c->o->dd, destroy);
    wp_deferred_delete(&c->e->dd, &c->o->dd, destroy); /* twice: queued once */
    assert_int_equal(c->o->destroyed, 0);
    uv_close((uv_handle_t *)a, NULL);
}

static void test_poll_phase_callback(void **state)
{
    env *e = *state;
    obj o = mk(e, 2);
    cb_ctx c = {e, &o, 0};
    uv_async_t a;
    uv_async_init(&e->loop, &a, async_cb);
    a.data = &c;
    uv_async_send(&a);
    uv_run(&e->loop, UV_RUN_DEFAULT); /* returns once the async handle closed */
    assert_int_equal(o.destroyed, 1);
    assert_int_equal(e->dd.destroyed, 1);
}

static void test_many_in_one_iteration(void **state)
{
    env *e = *state;
    enum { N = 1000 };
    obj *v = calloc(N, sizeof(*v));
    assert_non_null(v);
    for (int i = 0; i < N; i++) {
        v[i] = mk(e, i);
        wp_deferred_delete(&e->dd, &v[i].dd, destroy);
    }
    assert_int_equal(e->dd.queued, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(v[i].destroyed, 0);
    uv_run(&e->loop, UV_RUN_NOWAIT); /* one iteration */
    assert_int_equal(e->dd.queued, 0);
    assert_int_equal(e->norder, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(v[i].destroyed, 1);
        assert_int_equal(e->order[i], i); /* in the order queued */
    }
    free(v);
}

static void test_deletion_queues_more(void **state)
{
    env *e = *state;
    obj a = mk(e, 1), b = mk(e, 2), c = mk(e, 3), d = mk(e, 4);
    a.then[0] = &b;
    a.then[1] = &c;
    c.then[0] = &d;
    wp_deferred_delete(&e->dd, &a.dd, destroy);
    uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(a.destroyed, 1);
    assert_int_equal(b.destroyed, 1);
    assert_int_equal(c.destroyed, 1);
    assert_int_equal(d.destroyed, 1);
    assert_int_equal(e->norder, 4);
    assert_int_equal(e->order[3], 4);
    assert_int_equal(e->dd.queued, 0);
    assert_false(e->dd.armed);
}

/* A reused object (back on a free list by its destroy) can be queued again. */
static void test_requeue_after_destroy(void **state)
{
    env *e = *state;
    obj o = mk(e, 7);
    wp_deferred_delete(&e->dd, &o.dd, destroy);
    uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(o.destroyed, 1);
    o.magic = 0x5a; /* reused */
    wp_deferred_delete(&e->dd, &o.dd, destroy);
    uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(o.destroyed, 2);
}

static void test_idle_loop_not_busy(void **state)
{
    env *e = *state;
    /* nothing queued: the list keeps no handle active, the loop has nothing to do */
    assert_int_equal(uv_loop_alive(&e->loop), 0);
    assert_int_equal(uv_run(&e->loop, UV_RUN_DEFAULT), 0);
    /* with a long timer, the poll would block for it: an empty list does not shorten that */
    uv_timer_t *t = &e->long_timer;
    uv_timer_init(&e->loop, t);
    e->long_timer_open = true;
    uv_timer_start(t, never, 60000, 0);
    uv_run(&e->loop, UV_RUN_NOWAIT); /* libuv registers its own watchers on a first poll */
    assert_true(uv_backend_timeout(&e->loop) > 1000);
    obj o = mk(e, 9);
    wp_deferred_delete(&e->dd, &o.dd, destroy);
    assert_int_equal(uv_backend_timeout(&e->loop), 0); /* an item waits: no blocking poll */
    uv_run(&e->loop, UV_RUN_NOWAIT);
    assert_int_equal(o.destroyed, 1);
    assert_false(e->dd.armed);
    assert_true(uv_backend_timeout(&e->loop) > 1000); /* idle again: blocks for the timer */
    uv_timer_stop(t);
    assert_int_equal(uv_loop_alive(&e->loop), 0);
    uv_close((uv_handle_t *)t, NULL);
    e->long_timer_open = false;
    uv_run(&e->loop, UV_RUN_DEFAULT);
}

/* Shutdown: close drains what waits, and an item queued afterwards waits for a drain. */
static void test_close_drains(void **state)
{
    env *e = *state;
    obj o = mk(e, 5), p = mk(e, 6);
    wp_deferred_delete(&e->dd, &o.dd, destroy);
    wp_deferred_close(&e->dd);
    assert_int_equal(o.destroyed, 1);
    wp_deferred_delete(&e->dd, &p.dd, destroy);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    assert_int_equal(p.destroyed, 0);
    wp_deferred_drain(&e->dd);
    assert_int_equal(p.destroyed, 1);
    wp_deferred_close(&e->dd); /* again: nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_valid_until_iteration_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_phase_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_in_one_iteration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deletion_queues_more, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeue_after_destroy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_loop_not_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_drains, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
