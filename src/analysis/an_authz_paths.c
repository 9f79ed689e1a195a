/*
 * an_authz_paths.c - weft.AuthorizationPolicyPathAnalyzer (weft's addition; operator report
 * B038): WFT0005 PathPolicyNotNormalized for an AuthorizationPolicy that decides by request
 * path while MeshConfig pathNormalization.normalization leaves path variants as they are.
 *
 * Istio's "Security best practices" page (Authorization policies: understand path
 * normalization) and its normalization reference: under NONE nothing is normalized; under
 * BASE (DEFAULT, or unset) dot segments, backslashes and escaped unreserved characters are,
 * but `//` is not merged and `%2F`/`%5C` are not decoded, so `//admin/users` and
 * `/admin%2Fusers` do not match a policy on `/admin/...` although many applications serve them
 * as that path. A policy "decides by path" when a rule that denies on a match (action DENY or
 * AUDIT: to[].operation.paths) or allows on a non-match (ALLOW: to[].operation.notPaths)
 * names paths: the bypass then lets a request through. ALLOW with paths and DENY with
 * notPaths fail closed (a variant is denied) and are not reported; MERGE_SLASHES and
 * DECODE_AND_MERGE_SLASHES are not reported (MERGE_SLASHES still keeps %2F; the message's
 * detail says so where it matters). One message per rule field, at the field's line.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/meshcfg.h"

static const char *mode_of(const wf_meshcfg *mesh)
{
    const char *v = mesh ? wf_meshcfg_str(mesh, "pathNormalization.normalization") : NULL;
    return v && *v ? v : "BASE";
}

static bool mode_leaves_variants(const char *mode)
{
    return !strcmp(mode, "BASE") || !strcmp(mode, "DEFAULT") || !strcmp(mode, "NONE");
}

/* The operation field that decides by path for action, or NULL. */
static const char *path_field(const char *action)
{
    if (!action || !strcmp(action, "ALLOW"))
        return "notPaths";
    if (!strcmp(action, "DENY") || !strcmp(action, "AUDIT"))
        return "paths";
    return NULL; /* CUSTOM: the external authorizer decides */
}

static void check_policy(wf_analysis_ctx *ctx, const wf_resource *r, const char *mode)
{
    const char *action = wf_map_str(r->spec, "action");
    const char *field = path_field(action);
    const wf_node *rules = wf_map_get(r->spec, "rules");
    for (size_t i = 0; field && i < wf_seq_len(rules); i++) {
        const wf_node *to = wf_map_get(wf_seq_at(rules, i), "to");
        for (size_t j = 0; j < wf_seq_len(to); j++) {
            const wf_node *op = wf_node_path(wf_seq_at(to, j), "operation");
            const wf_node *paths = wf_map_get(op, field);
            if (!wf_seq_len(paths))
                continue;
            char where[160], detail[400];
            snprintf(where, sizeof where, "%s rule %zu to[%zu].operation.%s",
                     action ? action : "ALLOW", i, j, field);
            snprintf(detail, sizeof detail,
                     "variants such as //%s or a path with %%2F are %s this rule; set "
                     "pathNormalization.normalization to MERGE_SLASHES or "
                     "DECODE_AND_MERGE_SLASHES (also decodes %%2F) if the application treats "
                     "them as the same path",
                     wf_node_str(wf_seq_at(paths, 0)) ? wf_node_str(wf_seq_at(paths, 0)) + 1 : "",
                     strcmp(field, "paths") == 0 ? "not denied by" : "allowed past");
            WF_REPORT(ctx, WF_WFT0005, r, paths, where, mode, detail);
        }
    }
}

static void run(wf_analysis_ctx *ctx)
{
    const char *mode = mode_of(wf_ctx_mesh(ctx));
    if (!mode_leaves_variants(mode))
        return;
    const wf_store *s = wf_ctx_store(ctx);
    for (size_t i = 0; i < wf_store_count(s); i++) {
        const wf_resource *r = wf_store_at(s, i);
        if (r->kind == WF_KIND_AUTHORIZATIONPOLICY && !r->synthetic)
            check_policy(ctx, r, mode);
    }
}

const wf_analyzer wf_an_weft_AuthorizationPolicyPathAnalyzer = {
    .name = "weft.AuthorizationPolicyPathAnalyzer",
    .description = "Warns when an AuthorizationPolicy decides by request path while MeshConfig "
                   "pathNormalization leaves path variants (//, %2F) unnormalized (WFT0005)",
    .inputs = {WF_KIND_AUTHORIZATIONPOLICY, WF_KIND_OTHER},
    .codes = {WF_WFT0005, WF_MSG_COUNT},
    .default_on = true,
    .run = run,
};
