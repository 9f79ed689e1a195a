/*
 * kubeconfig.c - kubeconfig files and the in-cluster configuration (kubeconfig.h).
 */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/arena.h"
#include "core/base64.h"
#include "model/node.h"
#include "model/parse.h"

#define KC_MAX_FILES 16
#define KC_MAX_FILE  (16u << 20)

int wf_kube_read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (size_t)st.st_size > KC_MAX_FILE) {
        fclose(f);
        errno = EFBIG;
        return -1;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *b = malloc(cap);
    if (!b) {
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    size_t r;
    while ((r = fread(b + n, 1, cap - 1 - n, f)) > 0)
        n += r;
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        errno = EIO;
        return -1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/* One parsed kubeconfig file. */
typedef struct kc_file {
    const char *path;
    const char *dir; /* for relative paths */
    wf_node *root;
} kc_file;

typedef struct kc_ctx {
    wf_arena arena;
    kc_file files[KC_MAX_FILES];
    size_t n;
    wf_strbuf *err;
    wf_kube_config *out;
} kc_ctx;

static void fail(kc_ctx *k, const kc_file *f, const wf_node *n, const char *field, const char *why)
{
    wf_strbuf_reset(k->err);
    wf_strbuf_printf(k->err, "kubeconfig %s", f ? f->path : "");
    if (n && n->line)
        wf_strbuf_printf(k->err, ":%u", (unsigned)wf_node_report_line(n));
    wf_strbuf_printf(k->err, ": %s: %s", field, why);
}

static int first_doc(wf_node *root, uint32_t line, uint32_t col, void *arg)
{
    wf_node **slot = arg;
    if (!*slot)
        *slot = root;
    return 0;
}

static int add_file(kc_ctx *k, const char *path, const char *text, size_t len)
{
    if (k->n == KC_MAX_FILES) {
        wf_strbuf_printf(k->err, "kubeconfig %s: more than %d files in the list", path,
                         KC_MAX_FILES);
        return -1;
    }
    kc_file *f = &k->files[k->n];
    f->path = wf_arena_strdup(&k->arena, path);
    const char *slash = strrchr(path, '/');
    f->dir = slash ? wf_arena_strndup(&k->arena, path, (size_t)(slash - path + 1)) : "";
    if (!f->path || !f->dir)
        return -1;
    wf_parse_error pe = {0};
    f->root = NULL;
    int rc = wf_parse_yaml(&k->arena, text, len, first_doc, &f->root, &pe);
    if (rc != 0) {
        wf_strbuf_printf(k->err, "kubeconfig %s:%u:%u: %s", path, (unsigned)pe.line,
                         (unsigned)pe.col, rc < 0 ? "out of memory" : pe.message);
        return -1;
    }
    if (f->root && f->root->type == WF_NODE_NULL)
        f->root = NULL;
    if (f->root && f->root->type != WF_NODE_MAP) {
        fail(k, f, f->root, "(document)", "not a mapping");
        return -1;
    }
    k->n++;
    return 0;
}

/* A named entry ("clusters", "cluster", name): the first file that defines it wins. */
static wf_node *find_named(kc_ctx *k, const char *list, const char *inner, const char *name,
                           const kc_file **ff, char *field, size_t cap)
{
    for (size_t i = 0; i < k->n; i++) {
        wf_node *seq = wf_map_get(k->files[i].root, list);
        for (size_t j = 0; j < wf_seq_len(seq); j++) {
            wf_node *e = wf_seq_at(seq, j);
            const char *nm = wf_map_str(e, "name");
            if (nm && strcmp(nm, name) == 0) {
                *ff = &k->files[i];
                snprintf(field, cap, "%s[%zu].%s", list, j, inner);
                wf_node *v = wf_map_get(e, inner);
                return v ? v : e; /* an entry without its inner map: fields are missing */
            }
        }
    }
    return NULL;
}

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* "-data" (base64) or a file path (relative to the kubeconfig's folder). */
static int load_pem(kc_ctx *k, const kc_file *f, const wf_node *m, const char *base,
                    const char *key, char **out, size_t *outlen)
{
    char field[160], dkey[64];
    snprintf(dkey, sizeof dkey, "%s-data", key);
    const wf_node *d = wf_map_get(m, dkey);
    if (d && d->type != WF_NODE_NULL) {
        snprintf(field, sizeof field, "%s.%s", base, dkey);
        const char *s = wf_node_str(d);
        if (!s) {
            fail(k, f, d, field, "not a string");
            return -1;
        }
        size_t n = strlen(s), cap = n / 4 * 3 + 4;
        unsigned char *b = malloc(cap + 1);
        if (!b)
            return -1;
        size_t blen = cap;
        if (!wf_base64_decode(s, n, WF_B64_SKIP_BLANKS, b, &blen)) {
            free(b);
            fail(k, f, d, field, "not base64");
            return -1;
        }
        b[blen] = '\0';
        *out = (char *)b;
        *outlen = blen;
        return 0;
    }
    const wf_node *p = wf_map_get(m, key);
    if (!p || p->type == WF_NODE_NULL)
        return 0;
    snprintf(field, sizeof field, "%s.%s", base, key);
    const char *s = wf_node_str(p);
    if (!s || !*s) {
        fail(k, f, p, field, "not a file path");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s%s", s[0] == '/' ? "" : f->dir, s);
    if (wf_kube_read_file(path, out, outlen) != 0) {
        char why[4200];
        snprintf(why, sizeof why, "cannot read %s: %s", path, strerror(errno));
        fail(k, f, p, field, why);
        return -1;
    }
    return 0;
}

static int refuse_unsupported(kc_ctx *k, const kc_file *f, const wf_node *m, const char *base,
                              const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++) {
        const wf_node *v = wf_map_get(m, keys[i]);
        if (v && v->type != WF_NODE_NULL) {
            char field[160];
            snprintf(field, sizeof field, "%s.%s", base, keys[i]);
            fail(k, f, v, field,
                 "not supported by weft (use a token, tokenFile or a client "
                 "certificate)");
            return -1;
        }
    }
    return 0;
}

static int load_cluster(kc_ctx *k, const char *name, const kc_file *cf, const wf_node *ctxn,
                        const char *ctxfield)
{
    const kc_file *f = NULL;
    char base[128];
    wf_node *c = find_named(k, "clusters", "cluster", name, &f, base, sizeof base);
    if (!c) {
        char why[300];
        snprintf(why, sizeof why, "cluster \"%s\" not found", name);
        fail(k, cf, ctxn, ctxfield, why);
        return -1;
    }
    static const char *const unsupported[] = {"proxy-url", NULL};
    if (refuse_unsupported(k, f, c, base, unsupported) != 0)
        return -1;
    const wf_node *srv = wf_map_get(c, "server");
    const char *s = wf_node_str(srv);
    char field[160];
    snprintf(field, sizeof field, "%s.server", base);
    if (!s || !*s) {
        fail(k, f, srv ? srv : c, field, "missing");
        return -1;
    }
    if (strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0) {
        fail(k, f, srv, field, "not an http:// or https:// URL");
        return -1;
    }
    wf_kube_config *o = k->out;
    o->server = strdup(s);
    if (!o->server)
        return -1;
    size_t n = strlen(o->server);
    while (n > 0 && o->server[n - 1] == '/')
        o->server[--n] = '\0';
    const wf_node *ins = wf_map_get(c, "insecure-skip-tls-verify");
    if (ins && ins->type != WF_NODE_NULL && !wf_node_bool(ins, &o->insecure)) {
        snprintf(field, sizeof field, "%s.insecure-skip-tls-verify", base);
        fail(k, f, ins, field, "not a boolean");
        return -1;
    }
    o->tls_server_name = dup_str(wf_map_str(c, "tls-server-name"));
    if (load_pem(k, f, c, base, "certificate-authority", &o->ca_pem, &o->ca_len) != 0)
        return -1;
    if (o->insecure && o->ca_pem) { /* client-go's clientcmd validation refuses the pair */
        snprintf(field, sizeof field, "%s.insecure-skip-tls-verify", base);
        fail(k, f, ins, field,
             "specifying a root certificates file with the insecure flag is not allowed");
        return -1;
    }
    return 0;
}

static int load_user(kc_ctx *k, const char *name, const kc_file *cf, const wf_node *ctxn,
                     const char *ctxfield)
{
    const kc_file *f = NULL;
    char base[128];
    wf_node *u = find_named(k, "users", "user", name, &f, base, sizeof base);
    if (!u) {
        char why[300];
        snprintf(why, sizeof why, "user \"%s\" not found", name);
        fail(k, cf, ctxn, ctxfield, why);
        return -1;
    }
    static const char *const unsupported[] = {"exec", "auth-provider", "username", "password",
                                              NULL};
    if (refuse_unsupported(k, f, u, base, unsupported) != 0)
        return -1;
    wf_kube_config *o = k->out;
    const char *tok = wf_map_str(u, "token");
    if (tok && *tok && !(o->token = strdup(tok)))
        return -1;
    const char *tf = wf_map_str(u, "tokenFile");
    if (tf && *tf) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", tf[0] == '/' ? "" : f->dir, tf);
        if (!(o->token_file = strdup(path)))
            return -1;
    }
    if (load_pem(k, f, u, base, "client-certificate", &o->cert_pem, &o->cert_len) != 0 ||
        load_pem(k, f, u, base, "client-key", &o->key_pem, &o->key_len) != 0)
        return -1;
    if (!o->cert_pem != !o->key_pem) {
        char field[160];
        snprintf(field, sizeof field, "%s.%s", base,
                 o->cert_pem ? "client-key" : "client-certificate");
        fail(k, f, u, field, "missing (a client certificate needs both certificate and key)");
        return -1;
    }
    return 0;
}

static int resolve(kc_ctx *k, const char *override)
{
    const kc_file *cf = NULL;
    const char *cur = override && *override ? override : NULL;
    for (size_t i = 0; !cur && i < k->n; i++) {
        const char *s = wf_map_str(k->files[i].root, "current-context");
        if (s && *s)
            cur = s;
    }
    if (!cur) {
        fail(k, k->n ? &k->files[0] : NULL, NULL, "current-context", "not set (and no --context)");
        return -1;
    }
    char base[128];
    wf_node *c = find_named(k, "contexts", "context", cur, &cf, base, sizeof base);
    if (!c) {
        char why[300];
        snprintf(why, sizeof why, "context \"%s\" not found", cur);
        fail(k, k->n ? &k->files[0] : NULL, NULL,
             override && *override ? "--context" : "current-context", why);
        return -1;
    }
    wf_kube_config *o = k->out;
    if (!(o->context = strdup(cur)))
        return -1;
    char field[160];
    const char *cluster = wf_map_str(c, "cluster");
    snprintf(field, sizeof field, "%s.cluster", base);
    if (!cluster || !*cluster) {
        fail(k, cf, c, field, "missing");
        return -1;
    }
    if (load_cluster(k, cluster, cf, wf_map_get(c, "cluster"), field) != 0)
        return -1;
    const char *user = wf_map_str(c, "user");
    snprintf(field, sizeof field, "%s.user", base);
    if (user && *user && load_user(k, user, cf, wf_map_get(c, "user"), field) != 0)
        return -1;
    const char *ns = wf_map_str(c, "namespace");
    return (o->ns = strdup(ns && *ns ? ns : "default")) ? 0 : -1;
}

static int finish(kc_ctx *k, const char *override, const char *origin, wf_kube_config **out)
{
    k->out = calloc(1, sizeof *k->out);
    int rc = -1;
    if (k->out && (k->out->origin = strdup(origin)) && resolve(k, override) == 0)
        rc = 0;
    if (rc != 0 && wf_strbuf_cstr(k->err)[0] == '\0')
        wf_strbuf_puts(k->err, "out of memory");
    if (rc == 0)
        *out = k->out;
    else
        wf_kube_config_free(k->out);
    wf_arena_destroy(&k->arena);
    return rc;
}

int wf_kubeconfig_parse(const char *file, const char *text, size_t len, const char *context,
                        wf_kube_config **out, wf_strbuf *err)
{
    kc_ctx k = {.err = err};
    wf_arena_init(&k.arena);
    wf_strbuf_reset(err);
    if (add_file(&k, file, text, len) != 0) {
        if (wf_strbuf_cstr(err)[0] == '\0')
            wf_strbuf_puts(err, "out of memory");
        wf_arena_destroy(&k.arena);
        return -1;
    }
    return finish(&k, context, file, out);
}

int wf_kubeconfig_load(const char *paths, const char *context, wf_kube_config **out, wf_strbuf *err)
{
    char home[4096];
    if (!paths || !*paths)
        paths = getenv("KUBECONFIG");
    if (!paths || !*paths) {
        const char *h = getenv("HOME");
        snprintf(home, sizeof home, "%s/.kube/config", h && *h ? h : "");
        paths = home;
    }
    kc_ctx k = {.err = err};
    wf_arena_init(&k.arena);
    wf_strbuf_reset(err);
    char *list = strdup(paths);
    int rc = list ? 0 : -1;
    char *save = NULL;
    for (char *p = list ? strtok_r(list, ":", &save) : NULL; p && rc == 0;
         p = strtok_r(NULL, ":", &save)) {
        char *text;
        size_t n;
        if (wf_kube_read_file(p, &text, &n) != 0) {
            if (errno == ENOENT)
                continue; /* clientcmd skips missing files of the list */
            wf_strbuf_printf(err, "kubeconfig %s: %s", p, strerror(errno));
            rc = -1;
            break;
        }
        rc = add_file(&k, p, text, n);
        free(text);
    }
    if (rc == 0 && k.n == 0) {
        wf_strbuf_printf(err, "kubeconfig %s: no such file", paths);
        rc = -1;
    }
    if (rc != 0) {
        if (wf_strbuf_cstr(err)[0] == '\0')
            wf_strbuf_puts(err, "out of memory");
        free(list);
        wf_arena_destroy(&k.arena);
        return -1;
    }
    rc = finish(&k, context, paths, out);
    free(list);
    return rc;
}

/* ---- in cluster --------------------------------------------------------------------------- */

#define SA_DIR "var/run/secrets/kubernetes.io/serviceaccount/"

int wf_kube_incluster(const char *root, const char *host, const char *port, wf_kube_config **out,
                      wf_strbuf *err)
{
    wf_strbuf_reset(err);
    if (!host || !*host || !port || !*port) {
        wf_strbuf_puts(err, "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
                            "and KUBERNETES_SERVICE_PORT must be defined");
        return -1;
    }
    if (!root || !*root)
        root = "/";
    const char *sep = root[strlen(root) - 1] == '/' ? "" : "/";
    wf_kube_config *c = calloc(1, sizeof *c);
    char path[4096];
    if (!c)
        goto oom;
    bool v6 = strchr(host, ':') != NULL;
    char srv[600];
    snprintf(srv, sizeof srv, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    snprintf(path, sizeof path, "%s%s" SA_DIR "token", root, sep);
    if (!(c->server = strdup(srv)) || !(c->token_file = strdup(path)) ||
        !(c->context = strdup("")) || !(c->origin = strdup("in-cluster")))
        goto oom;
    char *tok = NULL;
    if (wf_kube_config_token(c, &tok, err) != 0)
        goto fail;
    free(tok);
    snprintf(path, sizeof path, "%s%s" SA_DIR "ca.crt", root, sep);
    if (wf_kube_read_file(path, &c->ca_pem, &c->ca_len) != 0) {
        wf_strbuf_printf(err, "in-cluster configuration: %s: %s", path, strerror(errno));
        goto fail;
    }
    snprintf(path, sizeof path, "%s%s" SA_DIR "namespace", root, sep);
    char *ns = NULL;
    size_t nlen = 0;
    if (wf_kube_read_file(path, &ns, &nlen) == 0) {
        while (nlen > 0 && (ns[nlen - 1] == '\n' || ns[nlen - 1] == ' ' || ns[nlen - 1] == '\r'))
            ns[--nlen] = '\0';
        if (nlen == 0) {
            free(ns);
            ns = NULL;
        }
    }
    c->ns = ns ? ns : strdup("default");
    if (!c->ns)
        goto oom;
    *out = c;
    return 0;
oom:
    wf_strbuf_puts(err, "out of memory");
fail:
    wf_kube_config_free(c);
    return -1;
}

int wf_kube_incluster_env(const char *root, wf_kube_config **out, wf_strbuf *err)
{
    return wf_kube_incluster(root, getenv("KUBERNETES_SERVICE_HOST"),
                             getenv("KUBERNETES_SERVICE_PORT"), out, err);
}

int wf_kube_config_token(const wf_kube_config *c, char **token, wf_strbuf *err)
{
    *token = NULL;
    if (c->token) {
        *token = strdup(c->token);
        if (!*token) {
            wf_strbuf_puts(err, "out of memory");
            return -1;
        }
        return 0;
    }
    if (!c->token_file)
        return 0;
    char *b;
    size_t n;
    if (wf_kube_read_file(c->token_file, &b, &n) != 0) {
        wf_strbuf_printf(err, "token file %s: %s", c->token_file, strerror(errno));
        return -1;
    }
    size_t s = 0;
    while (s < n && (b[s] == ' ' || b[s] == '\n' || b[s] == '\r' || b[s] == '\t'))
        s++;
    while (n > s && (b[n - 1] == ' ' || b[n - 1] == '\n' || b[n - 1] == '\r' || b[n - 1] == '\t'))
        n--;
    memmove(b, b + s, n - s);
    b[n - s] = '\0';
    *token = b;
    return 0;
}

void wf_kube_config_free(wf_kube_config *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->ca_pem);
    free(c->tls_server_name);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->token);
    free(c->token_file);
    free(c->ns);
    free(c->context);
    free(c->origin);
    free(c);
}
