/*
 * analyze_authn.h - `weftctl analyze`'s check that needs weft-pilot's inbound translation: a
 * PeerAuthentication mode that no inbound filter chain carries (pilot/inbound.h
 * wf_inbound_authn_gaps: a port-level mode on a port that is not a Service target port of the
 * pod; HTTP and TCP target ports have their chains, pilot/inbound.h, pilot/tcp.h). weft-pilot
 * reports the same gaps on
 * /debug/config_errors; analyze reports them as WFT0002 (STRICT: a security control not
 * enforced) or WFT0001, on the policy's mode field, so that a file-based analysis never gives
 * an all-clear over a mode weft ignores ("never accept silently").
 *
 * The analyzer is handed to the analysis framework as an extra analyzer
 * (analysis.h wf_analysis_opts.extra): the analysis layer does not call pilot; weftctl analyze
 * and weft-pilot's web view (ui_validations.h, which reports what analyze prints) do.
 */
#ifndef WF_PILOT_ANALYZE_AUTHN_H
#define WF_PILOT_ANALYZE_AUTHN_H

#include "analysis/analyzer.h"

extern const wf_analyzer wf_pilot_authn_port_analyzer; /* "weft.PeerAuthenticationPortAnalyzer" */

#endif
