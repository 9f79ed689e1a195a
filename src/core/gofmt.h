/*
 * gofmt.h - Go standard-library formats that weft's output must reproduce exactly:
 * strconv.Quote (fmt's %q) and time.ParseDuration (Istio durations, CLI flags).
 */
#ifndef WF_CORE_GOFMT_H
#define WF_CORE_GOFMT_H

#include <stdint.h>

#include "core/strbuf.h"

/* Append s Go-quoted (strconv.Quote: \a \b \f \n \r \t \v \" \\ escapes, \x for other
 * control bytes and invalid UTF-8, printable UTF-8 kept). */
void wf_go_quote(wf_strbuf *out, const char *s);

/* time.ParseDuration: "300ms", "-1.5h", "2h45m", "0.5s", "0"; units ns, us (µs), ms, s, m,
 * h. Returns 0 with *ns set (nanoseconds; ns may be NULL), or -1 with Go's error text
 * appended to err when err is non-NULL ("time: invalid duration \"x\"",
 * "time: missing unit in duration \"1\"", "time: unknown unit \"d\" in duration \"1d\""). */
int wf_go_duration(const char *s, int64_t *ns, wf_strbuf *err);

#endif
