/*
 * tabwriter.h - Go's text/tabwriter as istioctl uses it (minwidth 0, pad character ' ',
 * flags 0), copied exactly because the goldens depend on its corner cases
 * (reference istioctl-troubleshooting.md §1.2): cells split on '\t'; the text after the last
 * tab is the trailing cell, written as-is; column k is aligned only within a run of
 * consecutive lines that all have a tab-terminated cell k; width = max(rune count + padding);
 * every tab-terminated cell is padded to the width (so rows may end in spaces).
 *
 * Usage: wf_tw_init(&tw, 5); wf_tw_printf(&tw, "NAME\tCDS\t\n"); ... ; wf_tw_flush(&tw, out);
 * wf_tw_free(&tw). Text is buffered until flush (a blank line does not flush: Go's tabwriter
 * only flushes on Flush).
 */
#ifndef WF_CLI_TABWRITER_H
#define WF_CLI_TABWRITER_H

#include <stddef.h>
#include <stdio.h>

#include "core/strbuf.h"

typedef struct wf_tw {
    size_t padding; /* spaces added to every column width */
    wf_strbuf text; /* buffered input */
} wf_tw;

void wf_tw_init(wf_tw *tw, size_t padding);
/* Appends formatted text (any number of lines, '\t' separates cells). */
void wf_tw_printf(wf_tw *tw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wf_tw_puts(wf_tw *tw, const char *s);
/* Aligns everything buffered and writes it to out (or appends to sb when out is NULL and sb
 * non-NULL); the buffer is emptied. Returns 0, or -1 when out of memory. */
int wf_tw_flush(wf_tw *tw, FILE *out, wf_strbuf *sb);
void wf_tw_free(wf_tw *tw);

#endif
