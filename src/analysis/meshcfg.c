/*
 * meshcfg.c - MeshConfig defaults and file loading (see meshcfg.h).
 *
 * Defaults follow Istio's mesh.DefaultMeshConfig() (pkg/config/mesh/mesh.go) for the
 * fields weft reads.
 */
#include "analysis/meshcfg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/arena.h"
#include "model/parse.h"

static const char default_mesh[] = "rootNamespace: istio-system\n"
                                   "trustDomain: cluster.local\n"
                                   "ingressClass: istio\n"
                                   "ingressService: istio-ingressgateway\n"
                                   "ingressControllerMode: STRICT\n"
                                   "ingressSelector: ingressgateway\n"
                                   "enableAutoMtls: true\n"
                                   "accessLogFile: \"\"\n"
                                   "accessLogEncoding: TEXT\n"
                                   "outboundTrafficPolicy:\n"
                                   "  mode: ALLOW_ANY\n"
                                   "defaultConfig:\n"
                                   "  configPath: ./etc/istio/proxy\n"
                                   "  binaryPath: /usr/local/bin/envoy\n"
                                   "  serviceCluster: istio-proxy\n"
                                   "  drainDuration: 45s\n"
                                   "  discoveryAddress: istiod.istio-system.svc:15012\n"
                                   "  proxyAdminPort: 15000\n"
                                   "  statusPort: 15020\n";

struct wf_meshcfg {
    wf_arena arena;
    const wf_node *defaults;
    const wf_node *files[8]; /* user files, newest last */
    size_t nfiles;
    const wf_node *networks;
    char err[512];
};

static int take_root(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    wf_node **out = arg;
    if (!*out)
        *out = root;
    return 0;
}

static int parse_text(wf_meshcfg *m, const char *name, const char *buf, size_t len,
                      const wf_node **out, const char **err)
{
    wf_parse_error perr = {0};
    wf_node *root = NULL;
    int rc = wf_parse_yaml(&m->arena, buf, len, take_root, &root, &perr);
    if (rc != 0) {
        snprintf(m->err, sizeof(m->err), "%s:%u:%u: %s", name, perr.line, perr.col,
                 rc < 0 ? "out of memory" : perr.message);
        *err = m->err;
        return -1;
    }
    if (root && root->type != WF_NODE_MAP) {
        snprintf(m->err, sizeof(m->err), "%s:%u:%u: mesh config must be a mapping", name,
                 root->line, root->col);
        *err = m->err;
        return -1;
    }
    *out = root;
    return 0;
}

wf_meshcfg *wf_meshcfg_new_default(void)
{
    wf_meshcfg *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    wf_arena_init(&m->arena);
    const char *err;
    if (parse_text(m, "<defaults>", default_mesh, sizeof(default_mesh) - 1, &m->defaults, &err)) {
        wf_meshcfg_free(m);
        return NULL;
    }
    return m;
}

void wf_meshcfg_free(wf_meshcfg *m)
{
    if (!m)
        return;
    wf_arena_destroy(&m->arena);
    free(m);
}

static int read_file(wf_meshcfg *m, const char *path, char **buf, size_t *len, const char **err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        if (f)
            fclose(f);
        snprintf(m->err, sizeof(m->err), "%s: cannot read: %s", path,
                 f ? "not a regular file" : strerror(errno));
        *err = m->err;
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0 || n > WF_LOAD_MAX_FILE_BYTES)
            break;
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!b || n > WF_LOAD_MAX_FILE_BYTES) {
        free(b);
        snprintf(m->err, sizeof(m->err), "%s: %s", path, b ? "file too large" : "out of memory");
        *err = m->err;
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

int wf_meshcfg_load_file(wf_meshcfg *m, const char *path, const char **err)
{
    if (m->nfiles == sizeof(m->files) / sizeof(m->files[0])) {
        *err = "too many mesh config files";
        return -1;
    }
    char *buf;
    size_t len;
    if (read_file(m, path, &buf, &len, err))
        return -1;
    const wf_node *root = NULL;
    int rc = parse_text(m, path, buf, len, &root, err);
    free(buf);
    if (rc)
        return -1;
    if (root)
        m->files[m->nfiles++] = root;
    return 0;
}

int wf_meshcfg_load_networks(wf_meshcfg *m, const char *path, const char **err)
{
    char *buf;
    size_t len;
    if (read_file(m, path, &buf, &len, err))
        return -1;
    int rc = parse_text(m, path, buf, len, &m->networks, err);
    free(buf);
    return rc;
}

const wf_node *wf_meshcfg_get(const wf_meshcfg *m, const char *path)
{
    for (size_t i = m->nfiles; i-- > 0;) {
        const wf_node *n = wf_node_path(m->files[i], path);
        if (n)
            return n;
    }
    return wf_node_path(m->defaults, path);
}

const char *wf_meshcfg_str(const wf_meshcfg *m, const char *path)
{
    return wf_node_str(wf_meshcfg_get(m, path));
}

const char *wf_meshcfg_root_ns(const wf_meshcfg *m)
{
    const char *s = wf_meshcfg_str(m, "rootNamespace");
    return s && s[0] ? s : "istio-system";
}

const wf_node *wf_meshcfg_networks(const wf_meshcfg *m)
{
    return m->networks;
}
