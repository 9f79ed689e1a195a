/*
 * describe_gwsecret.c - what `weftctl describe pod` adds for a gateway pod: the credentialName
 * Secrets of the Gateways it serves that it cannot use, and where they were looked for
 * (pilot/gateway_secrets.h: the pod's own namespace, as Istio reads them; operator report
 * B030). The lines go to stderr, so that stdout stays istioctl's (see describe_unimpl.c).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/describe.h"
#include "pilot/gateway_secrets.h"

typedef struct gws_arg {
    const wf_resource *pod;
    FILE *to;
    size_t n;
} gws_arg;

static const char *code(wf_gwsec_kind k)
{
    return k == WF_GWSEC_NOT_FOUND ? "IST0101" : k == WF_GWSEC_INVALID ? "IST0161" : "WFT0003";
}

static bool on_problem(const wf_gwsec_problem *p, void *ud)
{
    gws_arg *a = ud;
    const wf_gateway *gw = p->gateway->t.gateway;
    if (strcmp(p->ns, a->pod->ns) != 0 || !wf_kvs_subset(&gw->selector, &a->pod->labels))
        return true;
    char msg[1536];
    if (a->n++ == 0)
        fprintf(a->to,
                "weft: gateway credentials of this pod (Secrets are read from the gateway "
                "workload's namespace, %s):\n",
                a->pod->ns);
    fprintf(a->to, "   Gateway %s/%s: %s [%s]\n", p->gateway->ns, p->gateway->name,
            wf_gwsec_message(p, msg, sizeof msg), code(p->kind));
    return true;
}

size_t dsc_print_gateway_secrets(const dsc_ctx *c, const wf_resource *pod, FILE *to)
{
    gws_arg a = {pod, to, 0};
    if (wf_gw_secret_problems(c->store, (int64_t)time(NULL), on_problem, &a) < 0)
        fprintf(to, "weft: gateway credentials: out of memory\n");
    return a.n;
}
