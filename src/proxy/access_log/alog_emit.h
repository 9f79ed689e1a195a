/*
 * alog_emit.h - writing a finished request's or connection's entry to its configured access
 * logs (an HCM's access_log, a Listener's access_log), applying each log's filter.
 *
 * Filters follow envoy.config.accesslog.v3.AccessLogFilter; supported: response_flag_filter
 * (Envoy's ResponseFlagFilter::evaluate: with no flags listed, an entry passes when any
 * response flag is set; otherwise when one of the listed flags is set). Istio puts
 * {"response_flag_filter": {"flags": ["NR"]}} on its listener access logs
 * (pilot/pkg/networking/core/accesslog.go addNoRouteAccessLogFilter).
 *
 * Inputs: logs compiled by server/gen.c (format and sink set; an entry without either is
 * skipped), the stream info to render, the worker's writer (NULL: nothing is written).
 * Allocates one line buffer per call; an allocation failure drops the line.
 * Thread safety: as the writer's (its loop's thread only).
 */
#ifndef WEFT_PROXY_ALOG_EMIT_H
#define WEFT_PROXY_ALOG_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/access_log/alog_sink.h"
#include "proxy/config/config.h"
#include "proxy/stream_info/stream_info.h"

/* Whether al's filter lets si's entry through (true when al has no filter). */
bool wp_alog_filter_pass(const wp_access_log *al, const wp_stream_info *si);

/* Renders si with every log of logs[0..n) whose filter passes and appends the line to its
 * sink through w. */
void wp_alog_emit(const wp_access_log *logs, size_t n, const wp_stream_info *si, wp_alog_writer *w);

/* The wp_response_flag whose short name ("NR") is name, -1 when none is. */
int wp_alog_flag_by_short_name(const char *name);

#endif
