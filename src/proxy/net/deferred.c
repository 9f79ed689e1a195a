/*
 * deferred.c - deferred deletion (deferred.h).
 */
#include "proxy/net/deferred.h"

static void on_check(uv_check_t *h)
{
    wp_deferred_drain(h->data);
}

static void on_idle(uv_idle_t *h)
{
    (void)h; /* only there so that the poll phase does not block while items wait */
}

int wp_deferred_init(wp_deferred *dd, uv_loop_t *loop)
{
    *dd = (wp_deferred){0};
    int r = uv_check_init(loop, &dd->check);
    if (r != 0)
        return r;
    r = uv_idle_init(loop, &dd->idle);
    if (r != 0) {
        uv_close((uv_handle_t *)&dd->check, NULL);
        return r;
    }
    dd->check.data = dd->idle.data = dd;
    dd->ready = true;
    return 0;
}

void wp_deferred_delete(wp_deferred *dd, wp_deferred_item *it, wp_deferred_fn destroy)
{
    if (it->destroy)
        return; /* queued already */
    it->destroy = destroy;
    it->next = NULL;
    if (dd->tail)
        dd->tail->next = it;
    else
        dd->head = it;
    dd->tail = it;
    dd->queued++;
    if (!dd->armed && dd->ready) { /* closed (shutdown): wp_deferred_drain runs it */
        dd->armed = true;
        uv_check_start(&dd->check, on_check);
        uv_idle_start(&dd->idle, on_idle);
    }
}

void wp_deferred_drain(wp_deferred *dd)
{
    wp_deferred_item *it;
    while ((it = dd->head)) {
        dd->head = it->next;
        if (!dd->head)
            dd->tail = NULL;
        dd->queued--;
        wp_deferred_fn destroy = it->destroy;
        it->next = NULL;
        it->destroy = NULL;
        dd->destroyed++;
        destroy(it);
    }
    if (dd->armed) {
        dd->armed = false;
        uv_check_stop(&dd->check);
        uv_idle_stop(&dd->idle);
    }
}

void wp_deferred_close(wp_deferred *dd)
{
    if (!dd->ready)
        return;
    dd->ready = false;
    wp_deferred_drain(dd);
    if (!uv_is_closing((uv_handle_t *)&dd->check))
        uv_close((uv_handle_t *)&dd->check, NULL);
    if (!uv_is_closing((uv_handle_t *)&dd->idle))
        uv_close((uv_handle_t *)&dd->idle, NULL);
}
