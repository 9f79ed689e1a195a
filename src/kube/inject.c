/*
 * inject.c - placeholder until the injector lands (inject.h): every request is answered
 * "sidecar injection is not implemented" (allowed false), never silently allowed.
 */
#include "kube/inject.h"

#include <stdlib.h>

struct wf_inject_config {
    int unused;
};

int wf_inject_config_load(const char *dir, const char *mesh_file, wf_inject_config **out,
                          wf_strbuf *why)
{
    (void)dir;
    (void)mesh_file;
    *out = NULL;
    wf_strbuf_puts(why, "sidecar injection is not implemented");
    return -1;
}

wf_inject_config *wf_inject_config_default(void)
{
    return calloc(1, sizeof(wf_inject_config));
}

void wf_inject_config_free(wf_inject_config *c)
{
    free(c);
}

int wf_inject_review(const wf_inject_config *cfg, const char *path, const char *content_type,
                     const char *body, size_t len, wf_strbuf *out)
{
    (void)cfg;
    (void)path;
    (void)content_type;
    (void)body;
    (void)len;
    wf_strbuf_puts(out, "sidecar injection is not implemented");
    return 500;
}
