/*
 * mesh_metrics_text.h - a parser of the Prometheus text exposition format (version 0.0.4,
 * prometheus/docs content/docs/instrumenting/exposition_formats.md), the part weft-pilot needs
 * to read the proxies' GET /stats/prometheus (scrape.h):
 *
 *   line    = comment | blank | sample
 *   comment = "#" anything (HELP and TYPE lines are comments here: the metric kinds are known)
 *   sample  = name [ "{" [ label { "," label } [ "," ] ] "}" ] value [ timestamp ]
 *   label   = label_name "=" '"' value with the escapes \\ \" \n '"'
 *   value   = a Go ParseFloat number, "NaN", "+Inf", "-Inf"; timestamp: an integer (ignored)
 * Spaces and tabs may separate the tokens; lines end in "\n" (a "\r" before it is dropped).
 *
 * Untrusted input (any proxy, or anything answering on its address, may send anything): every
 * line is parsed within fixed bounds (at most WF_PROM_MAX_LABELS labels, WF_PROM_MAX_LINE bytes
 * of names and unescaped values per line); a malformed line stops the parse with an error
 * naming its line number. One allocation per parse (the line buffer), none per line: the
 * strings handed to the callback live in that buffer, valid during the callback only.
 *
 * want(ud, name, len), optional: asked per line before its labels are parsed; a line whose
 * metric name is not wanted is skipped without parsing the rest (it must still be one line).
 */
#ifndef WF_PILOT_MESH_METRICS_TEXT_H
#define WF_PILOT_MESH_METRICS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#define WF_PROM_MAX_LABELS 32
#define WF_PROM_MAX_LINE   8192 /* bytes of name, label names and unescaped values per line */

typedef struct {
    const char *name; /* metric name, NUL-terminated */
    size_t n_labels;
    const char *label_name[WF_PROM_MAX_LABELS];
    const char *label_value[WF_PROM_MAX_LABELS]; /* unescaped, NUL-terminated */
    double value;
} wf_prom_sample;

/* Returns 0 to go on, non-zero to stop the parse (wf_prom_parse then returns that value). */
typedef int (*wf_prom_sample_fn)(void *ud, const wf_prom_sample *s);
typedef bool (*wf_prom_want_fn)(void *ud, const char *name, size_t len);

/* Parses len bytes of text (no NUL needed). Returns 0 when every line was read, the callback's
 * non-zero value when it stopped, or -1 with "line N: why" in err (cap bytes) for a malformed
 * line. */
int wf_prom_parse(const char *text, size_t len, wf_prom_want_fn want, wf_prom_sample_fn fn,
                  void *ud, char *err, size_t cap);

/* The value of label name in s, or NULL. */
const char *wf_prom_label(const wf_prom_sample *s, const char *name);

#endif
