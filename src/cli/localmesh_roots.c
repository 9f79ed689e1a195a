/*
 * localmesh_roots.c - see localmesh_roots.h.
 */
#include "cli/localmesh_roots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli/http_client.h"
#include "cli/localmesh_sys.h"

/* The root pilot publishes for ns, heap text; NULL when pilot did not give one. */
static char *fetch_root(const char *mon_addr, const char *ns, long timeout_ms)
{
    char path[512];
    snprintf(path, sizeof path, "/debug/istio-ca-root-cert?namespace=%s", ns);
    wf_http_resp r = {0};
    wf_strbuf err = WF_STRBUF_INIT;
    char *root = NULL;
    if (wf_http_request("GET", mon_addr, path, timeout_ms, &r, &err) == 0 && r.status == 200) {
        json_t *cm = json_loadb(r.body, r.len, 0, NULL);
        const char *pem =
            json_string_value(json_object_get(json_object_get(cm, "data"), "root-cert.pem"));
        root = pem && *pem ? strdup(pem) : NULL;
        json_decref(cm);
    }
    wf_http_resp_free(&r);
    wf_strbuf_free(&err);
    return root;
}

/* Writes text to dir/root-cert.pem unless it holds text already. 1 written, 0 unchanged, -1. */
static int write_root(const char *dir, const char *text, wf_strbuf *err)
{
    char file[4500];
    snprintf(file, sizeof file, "%s/root-cert.pem", dir);
    FILE *f = fopen(file, "rb");
    if (f) {
        size_t n = strlen(text);
        char *old = malloc(n + 2);
        size_t got = old ? fread(old, 1, n + 1, f) : 0;
        fclose(f);
        bool same = old && got == n && memcmp(old, text, n) == 0;
        free(old);
        if (same)
            return 0;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return wf_strbuf_printf(err, "cannot create %s: %s", dir, strerror(errno)), -1;
    return wf_lm_write_file(file, text, strlen(text), err) == 0 ? 1 : -1;
}

static bool seen_before(const wf_lm_plan *p, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if ((p->pods[j].sidecar || p->pods[j].gateway) && strcmp(p->pods[j].ns, p->pods[i].ns) == 0)
            return true;
    return false;
}

int wf_lm_roots_sync(const wf_lm_plan *p, const char *mon_addr, long timeout_ms, bool *all,
                     wf_strbuf *err)
{
    char base[4200], dir[4400];
    snprintf(base, sizeof base, "%s/%s", p->state, WF_LM_ROOTS_DIR);
    if (mkdir(base, 0755) != 0 && errno != EEXIST)
        return wf_strbuf_printf(err, "cannot create %s: %s", base, strerror(errno)), -1;
    int changed = 0;
    *all = true;
    for (size_t i = 0; i < p->npods; i++) {
        const wf_lm_pod *pod = &p->pods[i];
        if (!(pod->sidecar || pod->gateway) || seen_before(p, i))
            continue;
        char *root = fetch_root(mon_addr, pod->ns, timeout_ms);
        if (!root) {
            *all = false;
            continue;
        }
        snprintf(dir, sizeof dir, "%s/%s", base, pod->ns);
        int rc = write_root(dir, root, err);
        free(root);
        if (rc < 0)
            return -1;
        changed += rc;
    }
    return changed;
}
