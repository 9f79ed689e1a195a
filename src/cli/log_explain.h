/*
 * log_explain.h - `weftctl log explain`: reading Envoy/Istio access log lines and explaining
 * failed requests in plain words (beyond istioctl; docs/log-explain.md).
 *
 * Knowledge: the explanation of a failed request (its table, the "failed" rule, the items
 * printed under a request) lives below the CLI in src/explain/ (explain.h, explain_table.h),
 * shared with weft-pilot's web view and weft-proxy's failed-request ring; this header adds the
 * reading of access log lines into records (explain_record.h) and includes those headers.
 *
 * Formats (envoy-istio-behaviour.md §5): Istio's default TEXT format, Envoy's default
 * format, any format string of Envoy command operators (`--format`), and JSON lines (Istio's
 * default JSON keys, or the keys of a JSON `--format` whose values are operators). Missing
 * values ("-", null, "") read as absent.
 *
 * Ownership: parsed records own their strings (wf_lx_record_free); table entries are static.
 */
#ifndef WF_CLI_LOG_EXPLAIN_H
#define WF_CLI_LOG_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "explain/explain.h"
#include "explain/explain_record.h"
#include "explain/explain_table.h"

/* ---- access log lines ---- */

typedef struct wf_lx_format wf_lx_format;

/* Compiles a text format of command operators ("[%START_TIME%] \"%REQ(:METHOD)% ..."), or a
 * JSON object whose values are operators. NULL with err when it names no operator or is out
 * of memory. The caller frees with wf_lx_format_free. */
wf_lx_format *wf_lx_format_new(const char *fmt, wf_strbuf *err);
void wf_lx_format_free(wf_lx_format *f);

/* Istio's default TEXT format and Envoy's default format (envoy-istio-behaviour.md §5.1-5.2). */
extern const char WF_LX_ENVOY_DEFAULT_FORMAT[];

/* Parses one line. fmt NULL means auto: a line starting with '{' is JSON (Istio's keys),
 * otherwise Istio's TEXT format, then Envoy's default format. Returns 0 with *out filled
 * (line number not set), or -1 when the line is not an access log line in that format. */
int wf_lx_parse_line(const wf_lx_format *fmt, const char *line, wf_lx_record *out);

#endif
