/*
 * validate.c - the entry point of schema validation (validate.h): the schema walk
 * (validate_schema.c), then the kind's validator (validate_vs.c, validate_dr.c, ...), all on
 * the shared machinery of validate_common.c.
 *
 * Follows istio/istio pkg/config/validation (RegisterValidateFunc per kind) and the way the
 * analyzer calls it (pkg/config/analysis/analyzers/schema/validation.go): the config handed
 * to the validator carries only name and namespace, so annotation-driven checks (dry-run,
 * gateway semantics) never apply.
 */
#include "model/validate_internal.h"

#include <stdlib.h>

/* ---- dispatch ---- */

static void validate_kind(vc *c, wf_kind kind, const wf_node *spec)
{
    switch (kind) {
    case WF_KIND_VIRTUALSERVICE:
        vc_virtualservice(c, spec);
        break;
    case WF_KIND_DESTINATIONRULE:
        vc_destinationrule(c, spec);
        break;
    case WF_KIND_GATEWAY:
        vc_gateway(c, spec);
        break;
    case WF_KIND_SERVICEENTRY:
        vc_serviceentry(c, spec);
        break;
    case WF_KIND_WORKLOADENTRY:
        vc_workloadentry(c, spec);
        break;
    case WF_KIND_WORKLOADGROUP:
        vc_workloadgroup(c, spec);
        break;
    case WF_KIND_SIDECAR:
        vc_sidecar(c, spec);
        break;
    case WF_KIND_ENVOYFILTER:
        vc_envoyfilter(c, spec);
        break;
    case WF_KIND_PROXYCONFIG:
        vc_proxyconfig(c, spec);
        break;
    case WF_KIND_PEERAUTHENTICATION:
        vc_peerauthentication(c, spec);
        break;
    case WF_KIND_AUTHORIZATIONPOLICY:
        vc_authorizationpolicy(c, spec);
        break;
    case WF_KIND_REQUESTAUTHENTICATION:
        vc_requestauthentication(c, spec);
        break;
    case WF_KIND_TELEMETRY:
        vc_telemetry(c, spec);
        break;
    case WF_KIND_WASMPLUGIN:
        vc_wasmplugin(c, spec);
        break;
    default:
        break;
    }
}

int wf_validate_resource_ex(const wf_resource *r, wf_validation_cb cb,
                            wf_validation_aware_cb aware_cb, void *arg)
{
    if (!r || !wf_kind_is_istio(r->kind))
        return 0;
    vc *c = calloc(1, sizeof(*c));
    if (!c)
        return 0;
    c->r = r;
    c->cb = cb;
    c->aware = aware_cb;
    c->arg = arg;
    wf_arena_init(&c->scratch);

    const wf_node *spec = r->spec;
    if (spec && spec->type == WF_NODE_NULL)
        spec = NULL;
    vc_schema_walk(c, r->kind, spec);
    if (!c->type_errors) {
        vc_pop(c, 0);
        size_t mark = vc_push(c, "spec");
        validate_kind(c, r->kind, spec);
        vc_pop(c, mark);
    }
    int errors = c->errors;
    wf_arena_destroy(&c->scratch);
    free(c);
    return errors;
}

int wf_validate_resource(const wf_resource *r, wf_validation_cb cb, void *arg)
{
    return wf_validate_resource_ex(r, cb, NULL, arg);
}
