/*
 * discovery_delta.c - the client side of delta xDS: Envoy's DeltaSubscriptionState per type
 * (subscriptions told per stream, initial_resource_versions, ACK / NACK requests). Pure: no
 * I/O. See discovery.h.
 */
#include <stdlib.h>
#include <string.h>

#include "xds/discovery.h"
#include "xds/grpc_frame.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted pointer copy of n's strings (borrowed); NULL when n is empty. *oom on failure. */
static char **sorted(const wf_xds_names *n, bool *oom)
{
    if (n->n == 0)
        return NULL;
    char **v = malloc(n->n * sizeof *v);
    if (!v) {
        *oom = true;
        return NULL;
    }
    memcpy(v, n->v, n->n * sizeof *v);
    qsort(v, n->n, sizeof *v, cmp_str);
    return v;
}

static bool in_sorted(char **v, size_t n, const char *s)
{
    return n && bsearch(&s, v, n, sizeof *v, cmp_str) != NULL;
}

/* out = the names of a not in b, in a's order (deep copies, no duplicates). 0 or NOMEM. */
static int minus(const wf_xds_names *a, const wf_xds_names *b, wf_xds_names *out)
{
    bool oom = false;
    char **vb = sorted(b, &oom);
    memset(out, 0, sizeof *out);
    out->v = !oom && a->n ? calloc(a->n, sizeof *out->v) : NULL;
    if (oom || (a->n && !out->v)) {
        free(vb);
        return WF_XDS_E_NOMEM;
    }
    for (size_t i = 0; i < a->n; i++) {
        const char *s = a->v[i];
        bool dup = false;
        for (size_t k = 0; k < out->n && !dup; k++)
            dup = strcmp(out->v[k], s) == 0;
        if (dup || in_sorted(vb, b->n, s))
            continue;
        if (!(out->v[out->n] = strdup(s))) {
            free(vb);
            wf_xds_names_free(out);
            return WF_XDS_E_NOMEM;
        }
        out->n++;
    }
    free(vb);
    return WF_XDS_OK;
}

/* Whether a and b hold the same names as sets (on allocation failure: "different"). */
static bool same_set(const wf_xds_names *a, const wf_xds_names *b)
{
    wf_xds_names x = {0}, y = {0};
    if (minus(a, b, &x) || minus(b, a, &y)) {
        wf_xds_names_free(&x);
        return false;
    }
    bool same = x.n == 0 && y.n == 0;
    wf_xds_names_free(&x);
    wf_xds_names_free(&y);
    return same;
}

int wf_xds_delta_client_init(wf_xds_delta_client_type *c, const char *type_url, bool wildcard)
{
    memset(c, 0, sizeof *c);
    c->type_url = strdup(type_url ? type_url : "");
    c->wildcard = wildcard;
    return c->type_url ? WF_XDS_OK : WF_XDS_E_NOMEM;
}

int wf_xds_delta_client_set_names(wf_xds_delta_client_type *c, const wf_xds_names *names)
{
    wf_xds_names copy;
    if (wf_xds_names_copy(&copy, names))
        return WF_XDS_E_NOMEM;
    wf_xds_names_free(&c->names);
    c->names = copy;
    return WF_XDS_OK;
}

void wf_xds_delta_client_stream_reset(wf_xds_delta_client_type *c)
{
    wf_xds_names_free(&c->told);
    c->sent_any = false;
}

bool wf_xds_delta_client_pending(const wf_xds_delta_client_type *c)
{
    if (!c->sent_any)
        return c->wildcard || c->names.n > 0;
    return !same_set(&c->names, &c->told);
}

void wf_xds_delta_client_free(wf_xds_delta_client_type *c)
{
    free(c->type_url);
    free(c->system_version);
    wf_xds_names_free(&c->names);
    wf_xds_names_free(&c->told);
    memset(c, 0, sizeof *c);
}

int wf_xds_delta_client_accepted(wf_xds_delta_client_type *c, const char *system_version)
{
    char *v = strdup(system_version ? system_version : "");
    if (!v)
        return WF_XDS_E_NOMEM;
    free(c->system_version);
    c->system_version = v;
    return WF_XDS_OK;
}

static int copy_node(wf_xds_delta_request *out, const wf_xds_node *node)
{
    out->has_node = true;
    out->node.id = node->id ? strdup(node->id) : NULL;
    out->node.cluster = node->cluster ? strdup(node->cluster) : NULL;
    out->node.metadata = node->metadata ? json_incref(node->metadata) : NULL;
    return (node->id && !out->node.id) || (node->cluster && !out->node.cluster) ? WF_XDS_E_NOMEM
                                                                                : WF_XDS_OK;
}

/* The ack/nack part: response_nonce and error_detail. */
static int set_ack(wf_xds_delta_request *out, const char *nonce, const char *error)
{
    if (!nonce)
        return WF_XDS_OK;
    if (!(out->response_nonce = strdup(nonce)))
        return WF_XDS_E_NOMEM;
    if (!error)
        return WF_XDS_OK;
    out->has_error = true;
    out->error_detail.code = WF_GRPC_INTERNAL;
    out->error_detail.message = strdup(error);
    return out->error_detail.message ? WF_XDS_OK : WF_XDS_E_NOMEM;
}

/* subscribe / unsubscribe: everything on a stream's first request (none for a legacy
 * wildcard), the differences with what was told afterwards. */
static int set_names(const wf_xds_delta_client_type *c, wf_xds_delta_request *out)
{
    if (!c->sent_any)
        return wf_xds_names_copy(&out->subscribe, &c->names);
    if (minus(&c->names, &c->told, &out->subscribe))
        return WF_XDS_E_NOMEM;
    return minus(&c->told, &c->names, &out->unsubscribe);
}

int wf_xds_delta_client_request(wf_xds_delta_client_type *c, const wf_xds_node *node,
                                json_t *versions, const char *nonce, const char *error,
                                wf_xds_delta_request *out)
{
    wf_xds_names told = {0};
    memset(out, 0, sizeof *out);
    out->type_url = strdup(c->type_url);
    int rc = out->type_url ? WF_XDS_OK : WF_XDS_E_NOMEM;
    if (rc == WF_XDS_OK && node)
        rc = copy_node(out, node);
    if (rc == WF_XDS_OK)
        rc = set_names(c, out);
    if (rc == WF_XDS_OK)
        rc = set_ack(out, nonce, error);
    if (rc == WF_XDS_OK)
        rc = wf_xds_names_copy(&told, &c->names);
    if (rc != WF_XDS_OK) {
        wf_xds_delta_request_free(out);
        return WF_XDS_E_NOMEM;
    }
    if (!c->sent_any && json_object_size(versions))
        out->initial_resource_versions = json_incref(versions);
    wf_xds_names_free(&c->told);
    c->told = told;
    c->sent_any = true;
    return WF_XDS_OK;
}
