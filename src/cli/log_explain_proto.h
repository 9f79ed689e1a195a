/*
 * log_explain_proto.h - moved below the CLI to explain/explain_proto.h (shared with weft-pilot's
 * web view); this name stays for the CLI's existing includes.
 */
#ifndef WF_CLI_LOG_EXPLAIN_PROTO_H
#define WF_CLI_LOG_EXPLAIN_PROTO_H

#include "explain/explain_proto.h"

#endif
