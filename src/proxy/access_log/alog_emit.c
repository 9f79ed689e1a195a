/*
 * alog_emit.c - access log filters and the write of one entry to a list of access logs
 * (see alog_emit.h).
 */
#include "proxy/access_log/alog_emit.h"

#include <string.h>

#include "proxy/access_log/access_log.h"

bool wp_alog_filter_pass(const wp_access_log *al, const wp_stream_info *si)
{
    if (!al->has_flag_filter)
        return true;
    if (al->flag_filter == 0)
        return si->nflags > 0;
    for (size_t i = 0; i < si->nflags && i < WP_MAX_FLAGS; i++) {
        if (si->flags[i] < 32 && (al->flag_filter & (1u << si->flags[i])))
            return true;
    }
    return false;
}

void wp_alog_emit(const wp_access_log *logs, size_t n, const wp_stream_info *si, wp_alog_writer *w)
{
    if (!w)
        return;
    wf_strbuf line = {0};
    for (size_t i = 0; i < n; i++) {
        const wp_access_log *al = &logs[i];
        if (!al->format || al->sink < 0 || !wp_alog_filter_pass(al, si))
            continue;
        wf_strbuf_reset(&line);
        wp_alf_render(al->format, si, &line);
        if (!wf_strbuf_failed(&line))
            wp_alog_write(w, al->sink, line.data, line.len);
    }
    wf_strbuf_free(&line);
}

int wp_alog_flag_by_short_name(const char *name)
{
    for (int f = 0; f < WP_RF_COUNT_; f++) {
        if (strcmp(wp_flag_short((wp_response_flag)f), name) == 0)
            return f;
    }
    return -1;
}
