/*
 * re2_check.c - wf_re2_check: vc_regex_error without a validation run (see re2_check.h).
 */
#include "model/re2_check.h"

#include "model/validate_internal.h"

#include <stdio.h>
#include <string.h>

const char *wf_re2_check(const char *re, char *buf, size_t cap)
{
    vc c;
    memset(&c, 0, sizeof(c));
    wf_arena_init(&c.scratch);
    c.err_prefix = "";
    const char *msg = vc_regex_error(&c, re ? re : "");
    const char *out = NULL;
    if (msg) {
        if (cap > 0) {
            snprintf(buf, cap, "%s", *msg ? msg : "out of memory");
            out = buf;
        } else {
            out = "invalid regular expression";
        }
    }
    wf_arena_destroy(&c.scratch);
    return out;
}
