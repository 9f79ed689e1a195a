#include "proxy/event/worker.h"

/* The wall clock in microseconds at millisecond resolution (the loop's clock): the digits
 * below the millisecond are 0, never made up (%START_TIME(%6f)% shows "123000"). */
int64_t wp_wall_us(wp_worker *w)
{
    uint64_t now = uv_now(&w->loop);
    if (!w->wall_base_us || now - w->wall_base_loop >= 1000) { /* re-read every second */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        w->wall_base_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000000 * 1000;
        w->wall_base_loop = now;
    }
    return w->wall_base_us + (int64_t)(now - w->wall_base_loop) * 1000;
}
