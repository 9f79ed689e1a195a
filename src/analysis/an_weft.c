/*
 * an_weft.c - weft's own analyzer: the Istio fields and resources weft accepts but does not
 * implement ("never accept silently").
 *
 * weft.NotImplementedAnalyzer walks every resource through the table of
 * model/unimplemented.h and reports WFT0001 NotImplemented (Warning) for each field that has
 * no effect in weft, and WFT0002 SecurityPolicyNotEnforced (Error) for each security control
 * weft does not enforce (AuthorizationPolicy, a WasmPlugin in the AUTHN phase,
 * RequestAuthentication, DestinationRule tls.credentialName, ...), so that `weftctl analyze` exits
 * non-zero over a mesh the operator believes protected. The message points at the field's
 * line, or the resource's for a whole resource. A resource that fails schema validation
 * (IST0106, which pilot refuses) gets none. weft-pilot reports the same rows as warnings on
 * /debug/config_errors.
 */
#include "analysis/analyzer.h"
#include "core/strbuf.h"
#include "model/unimplemented.h"
#include "model/validate.h"

typedef struct weft_run {
    wf_analysis_ctx *ctx;
    int valid; /* -1 not checked yet, 0 fails schema validation, 1 valid */
} weft_run;

static void ignore_issue(const wf_resource *r, const wf_validation_issue *issue, void *arg)
{
    (void)r, (void)issue, (void)arg;
}

static bool on_hit(const wf_unimpl_hit *h, void *arg)
{
    weft_run *w = arg;
    /* one that fails schema validation (IST0106) is refused by pilot: it enforces nothing
     * either way, and its own error says why (checked at its first hit only: most resources
     * have none) */
    if (w->valid < 0)
        w->valid = !wf_kind_is_istio(h->res->kind) ||
                   wf_validate_resource(h->res, ignore_issue, NULL) == 0;
    if (!w->valid)
        return false;
    wf_strbuf detail = WF_STRBUF_INIT;
    wf_unimpl_detail(h, &detail);
    char buf[600];
    if (!wf_strbuf_failed(&detail)) {
        const char *args[] = {wf_unimpl_subject(h, buf, sizeof buf), wf_strbuf_cstr(&detail)};
        wf_report_line(w->ctx, h->entry->security ? WF_WFT0002 : WF_WFT0001, h->res, h->line, args,
                       2);
    }
    wf_strbuf_free(&detail);
    return true;
}

static void run_not_implemented(wf_analysis_ctx *ctx)
{
    const wf_store *s = wf_ctx_store(ctx);
    for (size_t i = 0; i < wf_store_count(s); i++) {
        const wf_resource *r = wf_store_at(s, i);
        /* not the defaults weftctl adds (the ingress gateway Service, file "<defaults>") */
        if (r->synthetic || !r->file || r->file[0] == '<')
            continue;
        weft_run w = {ctx, -1};
        if (wf_unimpl_scan(r, wf_ctx_kubernetes(ctx) ? WF_UNIMPL_KUBERNETES : WF_UNIMPL_LOCAL_MESH,
                           on_hit, &w) < 0)
            return;
    }
}

const wf_analyzer wf_an_weft_NotImplementedAnalyzer = {
    .name = "weft.NotImplementedAnalyzer",
    .description = "Reports Istio fields and resources weft accepts but does not implement "
                   "(WFT0001), and security controls it does not enforce (WFT0002)",
    .inputs = {WF_KIND_OTHER},
    .codes = {WF_WFT0001, WF_WFT0002, WF_MSG_COUNT},
    .default_on = true,
    .run = run_not_implemented,
};
