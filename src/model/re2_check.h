/*
 * re2_check.h - is a regular expression one that RE2 accepts?
 *
 * Envoy (safe_regex / google_re2) and Istio (Go's regexp) accept RE2 syntax only. This is a
 * context-free wrapper around the schema validator's checker (validate_regex.c), usable
 * outside a validation run (the proxy's bootstrap loader). Messages use Go's wording,
 * e.g. "error parsing regexp: invalid escape sequence: `\1`".
 */
#ifndef WF_MODEL_RE2_CHECK_H
#define WF_MODEL_RE2_CHECK_H

#include <stddef.h>

/* Check re (NUL-terminated). Returns NULL when RE2 accepts it; otherwise writes the reason
 * into buf (cap bytes, truncated and NUL-terminated) and returns buf (with cap 0, a constant
 * string).
 * Out of memory while checking is reported as an error ("out of memory"). */
const char *wf_re2_check(const char *re, char *buf, size_t cap);

#endif
