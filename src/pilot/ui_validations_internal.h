/*
 * ui_validations_internal.h - what ui_validations.c (the answer kept per snapshot, filtered per
 * request) and ui_validations_run.c (one analysis) share. Not for use elsewhere.
 */
#ifndef WF_PILOT_UI_VALIDATIONS_INTERNAL_H
#define WF_PILOT_UI_VALIDATIONS_INTERNAL_H

#include "pilot/ui_validations.h"

/* Runs the analysis of snapshot s for src (ui_validations.h: the store as `weftctl analyze`
 * loads it) and sets out's "resources" (entries with "messages"), "mesh_messages" and
 * "truncated". 0, or -1 out of memory. */
int wf_ui_val_analyze(const wf_ui_val_source *src, const wf_snapshot *s, json_t *out);

/* strcmp for qsort over const char *. */
int wf_ui_cmp_str(const void *a, const void *b);

#endif
