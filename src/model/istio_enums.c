/*
 * istio_enums.c - Istio API enum names (see istio_enums.h).
 */
#include "model/istio_enums.h"

const char *const wf_envoyfilter_apply_to[] = {
    "INVALID",      "LISTENER",
    "FILTER_CHAIN", "NETWORK_FILTER",
    "HTTP_FILTER",  "ROUTE_CONFIGURATION",
    "VIRTUAL_HOST", "HTTP_ROUTE",
    "CLUSTER",      "EXTENSION_CONFIG",
    "BOOTSTRAP",    "LISTENER_FILTER",
    NULL,
};

const char *const wf_envoyfilter_patch_op[] = {
    "INVALID",      "MERGE",        "ADD",     "REMOVE", "INSERT_BEFORE",
    "INSERT_AFTER", "INSERT_FIRST", "REPLACE", NULL,
};

size_t wf_enum_count(const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    return n;
}
