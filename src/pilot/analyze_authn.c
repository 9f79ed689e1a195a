/*
 * analyze_authn.c - see analyze_authn.h.
 */
#include "pilot/analyze_authn.h"

#include "analysis/meshcfg.h"
#include "pilot/inbound.h"

static bool on_gap(const wf_inbound_gap *g, void *arg)
{
    wf_analysis_ctx *ctx = arg;
    char field[64], detail[768];
    bool security;
    const wf_node *at =
        wf_inbound_gap_describe(g, field, sizeof field, detail, sizeof detail, &security);
    WF_REPORT(ctx, security ? WF_WFT0002 : WF_WFT0001, g->policy, at, field, detail);
    return true;
}

static void run(wf_analysis_ctx *ctx)
{
    const wf_meshcfg *mesh = wf_ctx_mesh(ctx);
    wf_inbound_authn_gaps(wf_ctx_store(ctx), mesh ? wf_meshcfg_root_ns(mesh) : NULL, on_gap, ctx);
}

const wf_analyzer wf_pilot_authn_port_analyzer = {
    .name = "weft.PeerAuthenticationPortAnalyzer",
    .description = "Checks that every PeerAuthentication mode reaches an inbound filter chain "
                   "(weft builds them for HTTP Service target ports only)",
    .inputs = {WF_KIND_PEERAUTHENTICATION, WF_KIND_POD, WF_KIND_SERVICE, WF_KIND_OTHER},
    .codes = {WF_WFT0001, WF_WFT0002, WF_MSG_COUNT},
    .default_on = true,
    .run = run,
};
