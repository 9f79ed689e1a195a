/*
 * validate_ex.h - schema validation with Istio's "analysis-aware" warnings kept apart.
 *
 * Istio's ValidateVirtualService returns two kinds of warnings that the schema analyzer turns
 * into their own messages instead of IST0133 (pkg/config/analysis/analyzers/schema/
 * validation.go, morePreciseMessage): VirtualServiceUnreachableRule (IST0130) and
 * VirtualServiceIneffectiveMatch (IST0131). wf_validate_resource_ex() hands those to aware_cb
 * with their parameters; every other problem goes to cb exactly as wf_validate_resource()
 * does. With aware_cb NULL they go to cb as plain warnings with Istio's text
 * ("virtualService rule #1 not used (all matches used by prior rules)").
 */
#ifndef WF_MODEL_VALIDATE_EX_H
#define WF_MODEL_VALIDATE_EX_H

#include "model/validate.h"

typedef enum wf_validation_aware_type {
    WF_VALIDATION_UNREACHABLE_RULE,  /* params: ruleno, reason */
    WF_VALIDATION_INEFFECTIVE_MATCH, /* params: ruleno, matchno, dupno */
} wf_validation_aware_type;

typedef struct wf_validation_aware {
    wf_validation_aware_type type;
    const char *params[3]; /* valid during the callback only */
    size_t nparams;
    const wf_node *node; /* the route (or match) at fault; may be NULL */
} wf_validation_aware;

typedef void (*wf_validation_aware_cb)(const wf_resource *r, const wf_validation_aware *a,
                                       void *arg);

/* As wf_validate_resource(), routing the analysis-aware warnings to aware_cb (may be NULL).
 * Returns the number of errors. */
int wf_validate_resource_ex(const wf_resource *r, wf_validation_cb cb,
                            wf_validation_aware_cb aware_cb, void *arg);

#endif
