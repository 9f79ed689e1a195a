/*
 * log_explain_capture.h - moved below the CLI to explain/explain_capture.h (shared with
 * weft-pilot's web view); this name stays for the CLI's existing includes.
 */
#ifndef WF_CLI_LOG_EXPLAIN_CAPTURE_H
#define WF_CLI_LOG_EXPLAIN_CAPTURE_H

#include "explain/explain_capture.h"

#endif
