/*
 * localmesh_images.c - the inputs of a local-mesh plan besides the workloads: the image map
 * (a `LocalImages` resource, normally DIR/weft-local.yaml), where programs are found, the
 * MeshConfig and ProxyConfig proxyMetadata (docs/local-mesh.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/meshcfg.h"
#include "cli/localmesh_internal.h"
#include "model/parse.h"

#define IMAGES_KIND  "LocalImages"
#define IMAGES_GROUP "weft.dev/"

/* ---- small helpers ------------------------------------------------------------------------ */

int lm_strv_add(wf_arena *a, lm_strv *v, const char *s)
{
    if (v->n + 1 >= v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 8;
        const char **nv = wf_arena_alloc(a, ncap * sizeof *nv);
        if (!nv)
            return -1;
        if (v->n)
            memcpy(nv, v->v, v->n * sizeof *nv);
        v->v = nv;
        v->cap = ncap;
    }
    v->v[v->n++] = s;
    v->v[v->n] = NULL;
    return 0;
}

int lm_strv_setenv(wf_arena *a, lm_strv *v, const char *key, const char *value)
{
    const char *kv = wf_arena_printf(a, "%s=%s", key, value ? value : "");
    if (!kv)
        return -1;
    size_t klen = strlen(key);
    for (size_t i = 0; i < v->n; i++) {
        if (strncmp(v->v[i], key, klen) == 0 && v->v[i][klen] == '=') {
            v->v[i] = kv;
            return 0;
        }
    }
    return lm_strv_add(a, v, kv);
}

bool lm_in_state(const wf_lm_plan *p, const wf_resource *r)
{
    size_t n = strlen(p->state);
    return r->file && strncmp(r->file, p->state, n) == 0 && (r->file[n] == '/' || !r->file[n]);
}

void lm_where(wf_strbuf *b, const wf_resource *r, const wf_node *n)
{
    uint32_t line = n ? wf_node_report_line(n) : r->line;
    uint32_t col = n ? n->col : r->col;
    if (r->json || !line)
        wf_strbuf_printf(b, "%s", r->file);
    else
        wf_strbuf_printf(b, "%s:%u:%u", r->file, line, col);
}

static bool is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

const char *lm_resolve_bin(wf_lm_plan *p, const wf_lm_opts *o, const char *name,
                           const char *env_override)
{
    if (strchr(name, '/')) {
        if (name[0] == '/')
            return name;
        return wf_arena_printf(&p->arena, "%s/%s", p->dir, name);
    }
    if (o->bin_dir) {
        const char *next = wf_arena_printf(&p->arena, "%s/%s", o->bin_dir, name);
        if (!next || is_exec(next))
            return next;
    }
    if (env_override && *env_override)
        return env_override;
    return name;
}

/* ---- the image map ------------------------------------------------------------------------ */

static int images_error(wf_strbuf *err, const wf_resource *r, const wf_node *n, const char *field,
                        const char *msg)
{
    lm_where(err, r, n);
    wf_strbuf_printf(err, ": %s %s: %s: %s", IMAGES_KIND, *r->name ? r->name : "(unnamed)", field,
                     msg);
    return -1;
}

static int parse_env(wf_lm_plan *p, const wf_resource *r, const char *key, const wf_node *env,
                     lm_image *img, wf_strbuf *err)
{
    if (!env)
        return 0;
    char field[512];
    snprintf(field, sizeof field, "images.%s.env", key);
    if (env->type != WF_NODE_MAP)
        return images_error(err, r, env, field, "want a map of NAME: value");
    for (size_t i = 0; i < env->len; i++) {
        const wf_map_entry *e = &env->u.entries[i];
        const char *v = wf_node_str(e->value);
        if (!v && e->value->type != WF_NODE_NULL)
            return images_error(err, r, e->value, field, "want string values");
        if (lm_strv_setenv(&p->arena, &img->env, e->key, v ? v : "") != 0)
            return -1;
    }
    return 0;
}

static int parse_image(wf_lm_plan *p, const wf_resource *r, const wf_map_entry *e, lm_image *img,
                       wf_strbuf *err)
{
    char field[512];
    snprintf(field, sizeof field, "images.%s", e->key);
    img->key = e->key;
    img->node = e->value;
    if (e->value->type != WF_NODE_MAP)
        return images_error(err, r, e->value, field, "want a map with `command`");
    const wf_node *cmd = wf_map_get(e->value, "command");
    snprintf(field, sizeof field, "images.%s.command", e->key);
    if (!cmd)
        return images_error(err, r, e->value, field, "missing (want a list of strings)");
    if (cmd->type != WF_NODE_SEQ || cmd->len == 0)
        return images_error(err, r, cmd, field, "want a non-empty list of strings");
    img->cmd = wf_arena_alloc(&p->arena, (cmd->len + 1) * sizeof *img->cmd);
    if (!img->cmd)
        return -1;
    for (size_t i = 0; i < cmd->len; i++) {
        const char *s = wf_node_str(cmd->u.items[i]);
        if (!s || (i == 0 && !*s))
            return images_error(err, r, cmd->u.items[i], field, "want a non-empty list of strings");
        img->cmd[i] = s;
    }
    img->ncmd = cmd->len;
    img->weft_args = true;
    const wf_node *wa = wf_map_get(e->value, "weftArgs");
    snprintf(field, sizeof field, "images.%s.weftArgs", e->key);
    if (wa && !wf_node_bool(wa, &img->weft_args))
        return images_error(err, r, wa, field,
                            "want true (add --listen and --pod) or false (run as the image: "
                            "nothing added, the container's command and args used)");
    return parse_env(p, r, e->key, wf_map_get(e->value, "env"), img, err);
}

static bool is_images(const wf_resource *r)
{
    return r->kind == WF_KIND_OTHER && r->kind_name && strcmp(r->kind_name, IMAGES_KIND) == 0 &&
           r->api_version && strncmp(r->api_version, IMAGES_GROUP, strlen(IMAGES_GROUP)) == 0;
}

static int default_images(wf_lm_plan *p, lm_images *out)
{
    out->v = wf_arena_alloc(&p->arena, sizeof *out->v);
    const char **cmd = wf_arena_alloc(&p->arena, 2 * sizeof *cmd);
    if (!out->v || !cmd)
        return -1;
    cmd[0] = "weft-app";
    out->v[0] = (lm_image){.key = "*", .cmd = cmd, .ncmd = 1, .weft_args = true};
    out->n = 1;
    return 0;
}

int lm_images_load(wf_lm_plan *p, const wf_store *s, lm_images *out, wf_strbuf *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < wf_store_count(s); i++) {
        const wf_resource *r = wf_store_at(s, i);
        if (!is_images(r) || lm_in_state(p, r))
            continue;
        if (out->res) {
            lm_where(err, r, NULL);
            wf_strbuf_printf(err, ": a second %s (the first is in %s): keep one image map",
                             IMAGES_KIND, out->res->file);
            return -1;
        }
        out->res = r;
    }
    if (!out->res)
        return default_images(p, out);
    p->images_file = out->res->file;
    const wf_node *images = wf_map_get(out->res->root, "images");
    if (!images || images->type != WF_NODE_MAP || images->len == 0)
        return images_error(err, out->res, images, "images",
                            "want a map of image: {command: [...]}");
    out->v = wf_arena_alloc(&p->arena, images->len * sizeof *out->v);
    if (!out->v)
        return -1;
    for (size_t i = 0; i < images->len; i++)
        if (parse_image(p, out->res, &images->u.entries[i], &out->v[out->n++], err) != 0)
            return -1;
    return 0;
}

static const lm_image *find_key(const lm_images *m, const char *key, size_t len)
{
    for (size_t i = 0; i < m->n; i++)
        if (strlen(m->v[i].key) == len && strncmp(m->v[i].key, key, len) == 0)
            return &m->v[i];
    return NULL;
}

const lm_image *lm_images_match(const lm_images *m, const char *image)
{
    const lm_image *hit = image ? find_key(m, image, strlen(image)) : NULL;
    if (hit || !image)
        return hit ? hit : find_key(m, "*", 1);
    /* the repository: without @digest, then without :tag (a ':' after the last '/') */
    size_t len = strcspn(image, "@");
    const char *slash = memrchr(image, '/', len);
    const char *colon = memrchr(image, ':', len);
    if (colon && (!slash || colon > slash))
        len = (size_t)(colon - image);
    if ((hit = find_key(m, image, len)) != NULL)
        return hit;
    static const char *const prefixes[] = {"docker.io/library/", "docker.io/"};
    for (size_t i = 0; i < 2; i++) {
        size_t pl = strlen(prefixes[i]);
        if (len > pl && strncmp(image, prefixes[i], pl) == 0 &&
            (hit = find_key(m, image + pl, len - pl)) != NULL)
            return hit;
    }
    return find_key(m, "*", 1);
}

/* ---- MeshConfig --------------------------------------------------------------------------- */

static int first_doc(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    wf_node **out = arg;
    if (!*out)
        *out = root;
    return 0;
}

/* Parse MeshConfig text (a map, or empty; with allow_configmap also a ConfigMap holding it in
 * data.mesh) as weft-pilot does (wf_meshcfg_parse_text); origin names it in errors. */
/* The indentation (columns) of line `line` (1-based) of file path, 0 when unknown: where a
 * block scalar's text starts. */
static unsigned block_indent(const char *path, unsigned line)
{
    FILE *f = fopen(path, "rb");
    unsigned n = 0, cur = 1;
    int c;
    while (f && cur < line && (c = fgetc(f)) != EOF)
        cur += c == '\n';
    while (f && (c = fgetc(f)) == ' ')
        n++;
    if (f)
        fclose(f);
    return n;
}

static int parse_mesh(wf_lm_plan *p, const char *text, const char *origin, uint32_t line0,
                      bool allow_configmap, const wf_node **out, wf_strbuf *err)
{
    char why[1024];
    int rc = wf_meshcfg_parse_text(&p->arena, text, strlen(text), origin, line0, allow_configmap,
                                   out, why, sizeof why);
    if (rc > 0)
        wf_strbuf_puts(err, why);
    return rc ? -1 : 0;
}

static char *read_text(const char *path, wf_strbuf *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        wf_strbuf_printf(err, "cannot read MeshConfig %s: %s", path, strerror(errno));
        return NULL;
    }
    wf_strbuf b = WF_STRBUF_INIT;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && b.len < WF_LOAD_MAX_FILE_BYTES)
        wf_strbuf_append(&b, buf, n);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || wf_strbuf_failed(&b)) {
        wf_strbuf_printf(err, "cannot read MeshConfig %s", path);
        wf_strbuf_free(&b);
        return NULL;
    }
    wf_strbuf_putc(&b, '\0');
    return wf_strbuf_take(&b);
}

static int mesh_from_file(wf_lm_plan *p, const char *path, const wf_node **mesh, wf_strbuf *err)
{
    char *text = read_text(path, err);
    if (!text)
        return -1;
    int rc = parse_mesh(p, text, path, 0, true, mesh, err);
    free(text);
    p->mesh_file = p->mesh_origin = path;
    return rc;
}

/* A ConfigMap named istio (istio-system preferred) with data.mesh, outside the state folder. */
static const wf_resource *mesh_configmap(const wf_lm_plan *p, const wf_store *s)
{
    size_t n;
    const wf_resource *const *cms = wf_store_kind(s, WF_KIND_CONFIGMAP, &n);
    const wf_resource *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const wf_resource *r = cms[i];
        if (lm_in_state(p, r) || strcmp(r->name, "istio") != 0 ||
            !wf_node_str(wf_node_path(r->root, "data.mesh")))
            continue;
        if (!best || strcmp(r->ns, WF_LM_GATEWAY_NS) == 0)
            best = r;
    }
    return best;
}

int lm_mesh_config(wf_lm_plan *p, const wf_lm_opts *o, const wf_store *s, const wf_node **mesh,
                   wf_strbuf *err)
{
    *mesh = NULL;
    if (o->mesh_config) {
        char *abs = realpath(o->mesh_config, NULL);
        if (!abs) {
            wf_strbuf_printf(err, "cannot read MeshConfig %s: %s", o->mesh_config, strerror(errno));
            return -1;
        }
        const char *path = wf_arena_strdup(&p->arena, abs);
        free(abs);
        return path ? mesh_from_file(p, path, mesh, err) : -1;
    }
    const wf_resource *cm = mesh_configmap(p, s);
    if (cm) {
        const wf_node *text = wf_node_path(cm->root, "data.mesh");
        p->mesh_text = wf_node_str(text);
        p->mesh_cm_file = cm->file;
        p->mesh_file = wf_arena_printf(&p->arena, "%s/meshconfig", p->state);
        p->mesh_origin =
            wf_arena_printf(&p->arena, "ConfigMap %s/istio (data.mesh) in %s", cm->ns, cm->file);
        p->mesh_line0 = cm->json ? 0 : text->line;
        p->mesh_col0 = cm->json ? 0 : block_indent(cm->file, text->line + 1);
        if (!p->mesh_file || !p->mesh_origin)
            return -1;
        /* a block scalar starts on the line after its key */
        return parse_mesh(p, p->mesh_text, cm->file, cm->json ? 0 : text->line, false, mesh, err);
    }
    const char *plain = wf_arena_printf(&p->arena, "%s/mesh.yaml", p->dir);
    if (!plain)
        return -1;
    if (access(plain, R_OK) == 0)
        return mesh_from_file(p, plain, mesh, err);
    return 0;
}

/* ---- ProxyConfig proxyMetadata ------------------------------------------------------------ */

static int add_metadata(wf_lm_plan *p, const wf_node *md, lm_strv *env)
{
    if (!md || md->type != WF_NODE_MAP)
        return 0;
    for (size_t i = 0; i < md->len; i++) {
        const char *v = wf_node_str(md->u.entries[i].value);
        if (lm_strv_setenv(&p->arena, env, md->u.entries[i].key, v ? v : "") != 0)
            return -1;
    }
    return 0;
}

/* "FILE:L:C: Kind ns/name: spec.template.metadata.annotations[proxy.istio.io/config]: why" */
static const char *annotation_error(wf_lm_plan *p, const wf_resource *r, const wf_kvs *annotations,
                                    const char *why)
{
    const wf_node *at = NULL;
    for (size_t i = 0; i < annotations->n; i++)
        if (strcmp(annotations->items[i].key, "proxy.istio.io/config") == 0)
            at = annotations->items[i].node;
    wf_strbuf b = WF_STRBUF_INIT;
    lm_where(&b, r, at);
    wf_strbuf_printf(&b,
                     ": %s %s/%s: spec.template.metadata.annotations[proxy.istio.io/config]: "
                     "%s (Istio's sidecar injector refuses the pod)",
                     r->kind_name, *r->ns ? r->ns : p->default_ns, r->name, why);
    const char *out = wf_strbuf_failed(&b) ? NULL : wf_arena_strdup(&p->arena, wf_strbuf_cstr(&b));
    wf_strbuf_free(&b);
    return out;
}

int lm_proxy_config_doc(wf_lm_plan *p, const wf_resource *r, const wf_kvs *annotations,
                        const wf_node **doc, const char **pod_error)
{
    *doc = NULL;
    *pod_error = NULL;
    const char *pc = wf_kvs_get(annotations, "proxy.istio.io/config");
    if (!pc)
        return 0;
    wf_parse_error pe = {0};
    wf_node *root = NULL;
    int rc = wf_parse_yaml(&p->arena, pc, strlen(pc), first_doc, &root, &pe);
    if (rc < 0)
        return -1;
    char why[640];
    if (rc > 0)
        snprintf(why, sizeof why, "does not parse (line %u, column %u of the value): %s", pe.line,
                 pe.col, pe.message);
    else if (root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL)
        snprintf(why, sizeof why, "want a ProxyConfig map, not %s", wf_node_kind_name(root));
    if (rc > 0 || (root && root->type != WF_NODE_MAP && root->type != WF_NODE_NULL))
        return (*pod_error = annotation_error(p, r, annotations, why)) ? 0 : -1;
    *doc = root && root->type == WF_NODE_MAP ? root : NULL;
    return 0;
}

int lm_proxy_env(wf_lm_plan *p, const wf_node *mesh, const wf_node *pc, lm_strv *env)
{
    if (add_metadata(p, wf_node_path(mesh, "defaultConfig.proxyMetadata"), env) != 0)
        return -1;
    return add_metadata(p, wf_map_get(pc, "proxyMetadata"), env);
}
