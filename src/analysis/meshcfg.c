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
#include "model/node_json.h"
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

/* ---- checking ----------------------------------------------------------------------------- */

/* MeshConfig's fields (istio/api mesh/v1alpha1/config.proto), by JSON name. */
static const char *const mesh_fields[] = {"proxyListenPort",
                                          "proxyInboundListenPort",
                                          "proxyHttpPort",
                                          "connectTimeout",
                                          "protocolDetectionTimeout",
                                          "tcpKeepalive",
                                          "ingressClass",
                                          "ingressService",
                                          "ingressControllerMode",
                                          "ingressSelector",
                                          "enableTracing",
                                          "accessLogFile",
                                          "accessLogFormat",
                                          "accessLogEncoding",
                                          "enableEnvoyAccessLogService",
                                          "disableEnvoyListenerLog",
                                          "defaultConfig",
                                          "outboundTrafficPolicy",
                                          "inboundTrafficPolicy",
                                          "configSources",
                                          "enableAutoMtls",
                                          "trustDomain",
                                          "trustDomainAliases",
                                          "caCertificates",
                                          "defaultServiceExportTo",
                                          "defaultVirtualServiceExportTo",
                                          "defaultDestinationRuleExportTo",
                                          "rootNamespace",
                                          "localityLbSetting",
                                          "dnsRefreshRate",
                                          "h2UpgradePolicy",
                                          "inboundClusterStatName",
                                          "outboundClusterStatName",
                                          "certificates",
                                          "serviceSettings",
                                          "enablePrometheusMerge",
                                          "verifyCertificateAtClient",
                                          "ca",
                                          "extensionProviders",
                                          "defaultProviders",
                                          "discoverySelectors",
                                          "pathNormalization",
                                          "defaultHttpRetryPolicy",
                                          "meshMTLS",
                                          "tlsDefaults",
                                          "compliancePolicy",
                                          NULL};

static const char *const psm_fields[] = {"inclusionPrefixes", "inclusionSuffixes",
                                         "inclusionRegexps", NULL};

static bool in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], key) == 0)
            return true;
    return false;
}

/* The JSON name of a proto field name written in snake_case ("access_log_file"), into buf;
 * NULL when key has no '_'. */
static const char *camel(const char *key, char *buf, size_t cap)
{
    size_t n = 0;
    bool up = false;
    if (!strchr(key, '_'))
        return NULL;
    for (const char *c = key; *c && n + 1 < cap; c++) {
        if (*c == '_') {
            up = true;
            continue;
        }
        buf[n++] = up && *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
        up = false;
    }
    buf[n] = '\0';
    return buf;
}

static const char *unknown_field(const char *const *fields, const char *where,
                                 const wf_map_entry *e, char *buf, size_t cap, uint32_t *line,
                                 uint32_t *col)
{
    char alt[128];
    const char *c = camel(e->key, alt, sizeof alt);
    *line = e->key_line;
    *col = e->key_col;
    snprintf(buf, cap, "%s%s%s: unknown field%s%s%s", where, *where ? "." : "", e->key,
             c && in_list(fields, c) ? " (write it as " : "", c && in_list(fields, c) ? c : "",
             c && in_list(fields, c) ? ")" : "");
    return buf;
}

static const char *bad_list(const wf_node *list, const char *where, const char *field, char *buf,
                            size_t cap, uint32_t *line, uint32_t *col)
{
    if (list->type == WF_NODE_NULL)
        return NULL;
    if (list->type != WF_NODE_SEQ) {
        *line = list->line;
        *col = list->col;
        snprintf(buf, cap, "%s.%s: want a list of strings, not %s", where, field,
                 wf_node_kind_name(list));
        return buf;
    }
    for (size_t i = 0; i < list->len; i++) {
        const wf_node *it = list->u.items[i];
        if (wf_node_is_string(it))
            continue;
        *line = it->line;
        *col = it->col;
        snprintf(buf, cap, "%s.%s[%zu]: want a string, not %s (quote it)", where, field, i,
                 wf_node_kind_name(it));
        return buf;
    }
    return NULL;
}

const char *wf_meshcfg_check_stats_matcher(const wf_node *psm, const char *where, char *buf,
                                           size_t cap, uint32_t *line, uint32_t *col)
{
    *line = *col = 0;
    if (!psm || psm->type == WF_NODE_NULL)
        return NULL;
    if (psm->type != WF_NODE_MAP) {
        *line = psm->line;
        *col = psm->col;
        snprintf(buf, cap,
                 "%s: want a ProxyStatsMatcher map (inclusionPrefixes, "
                 "inclusionSuffixes, inclusionRegexps), not %s",
                 where, wf_node_kind_name(psm));
        return buf;
    }
    for (size_t i = 0; i < psm->len; i++) {
        const wf_map_entry *e = &psm->u.entries[i];
        if (!in_list(psm_fields, e->key))
            return unknown_field(psm_fields, where, e, buf, cap, line, col);
        if (bad_list(e->value, where, e->key, buf, cap, line, col))
            return buf;
    }
    return NULL;
}

const char *wf_meshcfg_check(const wf_node *root, char *buf, size_t cap, uint32_t *line,
                             uint32_t *col)
{
    *line = *col = 0;
    for (size_t i = 0; root && root->type == WF_NODE_MAP && i < root->len; i++)
        if (!in_list(mesh_fields, root->u.entries[i].key))
            return unknown_field(mesh_fields, "", &root->u.entries[i], buf, cap, line, col);
    const wf_node *pc = wf_map_get(root, "defaultConfig");
    if (pc && pc->type != WF_NODE_MAP && pc->type != WF_NODE_NULL) {
        *line = pc->line;
        *col = pc->col;
        snprintf(buf, cap, "defaultConfig: want a ProxyConfig map, not %s", wf_node_kind_name(pc));
        return buf;
    }
    return wf_meshcfg_check_stats_matcher(wf_map_get(pc, "proxyStatsMatcher"),
                                          "defaultConfig.proxyStatsMatcher", buf, cap, line, col);
}

/* ---- parsing ------------------------------------------------------------------------------ */

static int take_root(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    wf_node **out = arg;
    if (!*out)
        *out = root;
    return 0;
}

static int fail_at(char *err, size_t cap, const char *origin, uint32_t line, uint32_t col,
                   const char *why)
{
    if (line)
        snprintf(err, cap, "%s:%u:%u: MeshConfig: %s", origin, line, col, why);
    else
        snprintf(err, cap, "%s: MeshConfig: %s", origin, why);
    return 1;
}

/* root is a ConfigMap: its data.mesh parsed in its place. */
static int unwrap_configmap(wf_arena *a, const wf_node *root, const char *origin, uint32_t line0,
                            const wf_node **out, char *err, size_t cap)
{
    const wf_node *kind = wf_map_get(root, "kind");
    const char *k = wf_node_str(kind);
    if (!k || strcmp(k, "ConfigMap") != 0) {
        char why[256];
        snprintf(why, sizeof why,
                 "kind %s: want the MeshConfig fields, or the istio ConfigMap with them in "
                 "data.mesh",
                 k ? k : wf_node_kind_name(kind));
        return fail_at(err, cap, origin, kind->line ? line0 + kind->line : 0, kind->col, why);
    }
    const wf_node *text = wf_node_path(root, "data.mesh");
    if (!text || text->type != WF_NODE_SCALAR) {
        const wf_node *at = text ? text : kind;
        return fail_at(err, cap, origin, at->line ? line0 + at->line : 0, at->col,
                       "ConfigMap: want data.mesh, the MeshConfig YAML (as in Istio's istio "
                       "ConfigMap)");
    }
    /* a block scalar's text starts on the line after its key; JSON has no lines */
    return wf_meshcfg_parse_text(a, text->u.str, text->len, origin,
                                 text->line ? line0 + text->line : 0, false, out, err, cap);
}

int wf_meshcfg_parse_text(wf_arena *a, const char *text, size_t len, const char *origin,
                          uint32_t line0, bool allow_configmap, const wf_node **out, char *err,
                          size_t cap)
{
    wf_parse_error perr = {0};
    wf_node *root = NULL;
    *out = NULL;
    int rc = wf_parse_yaml(a, text, len, take_root, &root, &perr);
    if (rc < 0) {
        snprintf(err, cap, "%s: out of memory", origin);
        return -1;
    }
    if (rc > 0)
        return fail_at(err, cap, origin, perr.line ? line0 + perr.line : 0, perr.col, perr.message);
    if (root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL)
        return fail_at(err, cap, origin, root->line ? line0 + root->line : 0, root->col,
                       "want a map of MeshConfig fields");
    if (!root || root->type == WF_NODE_NULL)
        return 0;
    if (allow_configmap && wf_map_get(root, "kind"))
        return unwrap_configmap(a, root, origin, line0, out, err, cap);
    char why[512];
    uint32_t line, col;
    if (wf_meshcfg_check(root, why, sizeof why, &line, &col))
        return fail_at(err, cap, origin, line ? line0 + line : 0, col, why);
    *out = root;
    return 0;
}

/* MeshNetworks: a map, not checked. */
static int parse_networks(wf_meshcfg *m, const char *name, const char *buf, size_t len,
                          const char **err)
{
    wf_parse_error perr = {0};
    wf_node *root = NULL;
    int rc = wf_parse_yaml(&m->arena, buf, len, take_root, &root, &perr);
    if (rc != 0)
        snprintf(m->err, sizeof(m->err), "%s:%u:%u: %s", name, perr.line, perr.col,
                 rc < 0 ? "out of memory" : perr.message);
    else if (root && root->type != WF_NODE_MAP)
        snprintf(m->err, sizeof(m->err), "%s:%u:%u: mesh networks must be a mapping", name,
                 root->line, root->col);
    else
        m->networks = root;
    if (rc != 0 || (root && root->type != WF_NODE_MAP)) {
        *err = m->err;
        return -1;
    }
    return 0;
}

static int parse_text(wf_meshcfg *m, const char *name, const char *buf, size_t len,
                      const wf_node **out, const char **err)
{
    int rc = wf_meshcfg_parse_text(&m->arena, buf, len, name, 0, true, out, m->err, sizeof m->err);
    if (rc != 0)
        *err = m->err;
    return rc ? -1 : 0;
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

int wf_meshcfg_load_text(wf_meshcfg *m, const char *name, const char *text, size_t len,
                         const char **err)
{
    if (m->nfiles == sizeof(m->files) / sizeof(m->files[0])) {
        *err = "too many mesh config files";
        return -1;
    }
    const wf_node *root = NULL;
    if (parse_text(m, name, text, len, &root, err))
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
    int rc = parse_networks(m, path, buf, len, err);
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

json_t *wf_meshcfg_user_json(const wf_meshcfg *m)
{
    json_t *out = json_object();
    for (size_t i = 0; out && i < m->nfiles; i++) {
        json_t *f = m->files[i] ? wf_node_to_json(m->files[i]) : json_object();
        int rc = f && json_is_object(f) ? json_object_update_recursive(out, f) : f ? 0 : -1;
        json_decref(f);
        if (rc != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
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
