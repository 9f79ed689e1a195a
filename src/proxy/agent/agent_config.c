/*
 * agent_config.c - pilot-agent's environment and files -> the proxy's bootstrap and settings
 * (agent_config.h).
 */
#include <arpa/inet.h>
#include <math.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/gofmt.h"
#include "proxy/agent/agent_bootstrap.h"
#include "proxy/agent/agent_config.h"
#include "proxy/agent/proxy_stats_config.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

#define DISCOVERY_DEFAULT "istiod.istio-system.svc:15012"
#define ROOT_ISTIOD       "./var/run/secrets/istio/root-cert.pem"
#define ROOT_KUBERNETES   "./var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
#define LABELS_FILE       "./etc/istio/pod/labels"
#define ANNOTATIONS_FILE  "./etc/istio/pod/annotations"
#define MAX_FILE          (256u * 1024u)

/* What the build reads: the environment with ProxyConfig.proxyMetadata over it. */
typedef struct env {
    char *const *envp;
    const json_t *overlay; /* proxyMetadata, NULL = none */
} env;

static const char *env_get(const env *e, const char *name)
{
    const char *v = json_string_value(json_object_get(e->overlay, name));
    if (v)
        return v;
    size_t n = strlen(name);
    for (char *const *p = e->envp; p && *p; p++)
        if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
            return *p + n + 1;
    return NULL;
}

static const char *env_req(const env *e, const char *name, wf_strbuf *err)
{
    const char *v = env_get(e, name);
    if (!v || !*v)
        wf_strbuf_printf(err, "%s: not set (Istio's injector sets it on istio-proxy)", name);
    return v && *v ? v : NULL;
}

static bool is_ip(const char *s, int *family)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, s, buf) == 1)
        return *family = AF_INET, true;
    if (inet_pton(AF_INET6, s, buf) == 1)
        return *family = AF_INET6, true;
    return false;
}

static void warn(wp_agent_config *c, const char *fmt, const char *a, const char *b)
{
    if (c->warnings.len)
        wf_strbuf_putc(&c->warnings, '\n');
    wf_strbuf_printf(&c->warnings, fmt, a, b);
}

/* ---- files --------------------------------------------------------------------------------- */

static char *read_small(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static int hex(int ch)
{
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

static void put_utf8(wf_strbuf *b, unsigned long cp)
{
    if (cp < 0x80)
        wf_strbuf_putc(b, (char)cp);
    else if (cp < 0x800) {
        wf_strbuf_putc(b, (char)(0xc0 | (cp >> 6)));
        wf_strbuf_putc(b, (char)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        wf_strbuf_putc(b, (char)(0xe0 | (cp >> 12)));
        wf_strbuf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
        wf_strbuf_putc(b, (char)(0x80 | (cp & 0x3f)));
    } else {
        wf_strbuf_putc(b, (char)(0xf0 | (cp >> 18)));
        wf_strbuf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3f)));
        wf_strbuf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
        wf_strbuf_putc(b, (char)(0x80 | (cp & 0x3f)));
    }
}

/* Go's strconv.Unquote of a double-quoted string s[0..n): the escapes Go's %q writes. */
static int unquote(const char *s, size_t n, wf_strbuf *out)
{
    if (n < 2 || s[0] != '"' || s[n - 1] != '"')
        return -1;
    for (size_t i = 1; i + 1 < n; i++) {
        char ch = s[i];
        if (ch == '"')
            return -1;
        if (ch != '\\') {
            wf_strbuf_putc(out, ch);
            continue;
        }
        if (++i + 1 >= n)
            return -1;
        static const char esc[] = "abfnrtv\\\"'", val[] = "\a\b\f\n\r\t\v\\\"'";
        const char *e = strchr(esc, s[i]);
        if (e && *e) {
            wf_strbuf_putc(out, val[e - esc]);
            continue;
        }
        int digits = s[i] == 'x' ? 2 : s[i] == 'u' ? 4 : s[i] == 'U' ? 8 : 0;
        if (!digits || i + (size_t)digits + 1 >= n)
            return -1;
        unsigned long cp = 0;
        for (int k = 1; k <= digits; k++) {
            int h = hex((unsigned char)s[i + (size_t)k]);
            if (h < 0)
                return -1;
            cp = cp * 16 + (unsigned long)h;
        }
        i += (size_t)digits;
        if (digits == 2)
            wf_strbuf_putc(out, (char)cp);
        else if (cp > 0x10ffff)
            return -1;
        else
            put_utf8(out, cp);
    }
    return 0;
}

int wp_agent_parse_downward(const char *text, json_t *obj, wf_strbuf *err)
{
    int line = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        line++;
        const char *eq = memchr(p, '=', n);
        wf_strbuf v = {0};
        if (n > 0 && (!eq || eq == p || unquote(eq + 1, n - (size_t)(eq + 1 - p), &v) != 0)) {
            wf_strbuf_free(&v);
            wf_strbuf_printf(err, "line %d: want key=\"value\" (a Go-quoted string)", line);
            return -1;
        }
        if (n > 0) {
            char key[320];
            snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
            int rc = json_object_set_new(obj, key, json_string(wf_strbuf_cstr(&v)));
            wf_strbuf_free(&v);
            if (rc != 0) {
                wf_strbuf_printf(err, "line %d: not UTF-8, or out of memory", line);
                return -1;
            }
        }
        p += n;
        if (*p == '\n')
            p++;
    }
    return 0;
}

/* ./etc/istio/pod/<name> as an object; NULL when the file is absent (pilot-agent: the
 * labels then come from the Pod istiod watches) or malformed (warned). */
static json_t *pod_info(wp_agent_config *c, const char *path)
{
    char *text = read_small(path);
    if (!text)
        return NULL;
    json_t *o = json_object();
    wf_strbuf why = {0};
    if (o && wp_agent_parse_downward(text, o, &why) != 0) {
        warn(c, "%s: %s: ignored", path, wf_strbuf_cstr(&why));
        json_decref(o);
        o = NULL;
    }
    wf_strbuf_free(&why);
    free(text);
    return o;
}

/* ---- ProxyConfig ----------------------------------------------------------------------------- */

typedef struct pcfg {
    const char *discovery;
    bool tls;
    int admin_port, status_port;
    int64_t drain_ns;
    int concurrency; /* -1 = unset */
    const char *service_cluster;
    const json_t *stats_matcher;
} pcfg;

static int pc_int(const json_t *v, const char *field, int lo, int hi, int *out, wf_strbuf *err)
{
    long long n = 0;
    char *end = NULL;
    if (json_is_integer(v))
        n = json_integer_value(v);
    else if (json_is_string(v) && *json_string_value(v))
        n = strtoll(json_string_value(v), &end, 10);
    if ((!json_is_integer(v) && (!end || *end)) || n < lo || n > hi) {
        wf_strbuf_printf(err, "PROXY_CONFIG: %s: want an integer %d..%d", field, lo, hi);
        return -1;
    }
    *out = (int)n;
    return 0;
}

static int pc_field(const char *k, const json_t *v, pcfg *p, wp_agent_config *c, wf_strbuf *err)
{
    if (!strcmp(k, "discoveryAddress")) {
        if (!json_is_string(v))
            return wf_strbuf_puts(err, "PROXY_CONFIG: discoveryAddress: want a string"), -1;
        p->discovery = json_string_value(v);
    } else if (!strcmp(k, "controlPlaneAuthPolicy")) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "MUTUAL_TLS") && strcmp(s, "NONE")))
            return wf_strbuf_puts(err, "PROXY_CONFIG: controlPlaneAuthPolicy: want MUTUAL_TLS "
                                       "or NONE"),
                   -1;
        p->tls = strcmp(s, "NONE") != 0;
    } else if (!strcmp(k, "proxyAdminPort")) {
        return pc_int(v, "proxyAdminPort", 1, 65535, &p->admin_port, err);
    } else if (!strcmp(k, "statusPort")) {
        return pc_int(v, "statusPort", 1, 65535, &p->status_port, err);
    } else if (!strcmp(k, "concurrency")) {
        return pc_int(v, "concurrency", 0, 1024, &p->concurrency, err);
    } else if (!strcmp(k, "drainDuration")) {
        if (!json_is_string(v) || wf_go_duration(json_string_value(v), &p->drain_ns, NULL) != 0 ||
            p->drain_ns < 0)
            return wf_strbuf_puts(err, "PROXY_CONFIG: drainDuration: want a duration (\"45s\")"),
                   -1;
    } else if (!strcmp(k, "serviceCluster")) {
        if (!json_is_string(v))
            return wf_strbuf_puts(err, "PROXY_CONFIG: serviceCluster: want a string"), -1;
        p->service_cluster = json_string_value(v);
    } else if (!strcmp(k, "tracingServiceName")) {
        const char *s = json_string_value(v);
        if (!s || strcmp(s, "APP_LABEL_AND_NAMESPACE") != 0)
            warn(c,
                 "PROXY_CONFIG: %s%s: not implemented by weft-proxy (node.cluster follows "
                 "APP_LABEL_AND_NAMESPACE)",
                 k, "");
    } else if (!strcmp(k, "proxyStatsMatcher")) {
        if (!json_is_object(v))
            return wf_strbuf_puts(err, "PROXY_CONFIG: proxyStatsMatcher: want an object"), -1;
        p->stats_matcher = v;
    } else if (!strcmp(k, "proxyMetadata")) {
        const char *mk;
        const json_t *mv;
        if (!json_is_object(v))
            return wf_strbuf_puts(err, "PROXY_CONFIG: proxyMetadata: want an object"), -1;
        json_object_foreach((json_t *)v, mk, mv)
        {
            if (!json_is_string(mv)) {
                wf_strbuf_printf(err, "PROXY_CONFIG: proxyMetadata.%s: want a string", mk);
                return -1;
            }
        }
    } else {
        warn(c, "PROXY_CONFIG: %s%s: not implemented by weft-proxy, ignored", k, "");
    }
    return 0;
}

static int proxy_config(const env *e, json_t **pc, pcfg *p, wp_agent_config *c, wf_strbuf *err)
{
    *p = (pcfg){.discovery = DISCOVERY_DEFAULT,
                .tls = true,
                .admin_port = 15000,
                .status_port = WP_AGENT_STATUS_PORT,
                .drain_ns = 45000000000LL,
                .concurrency = -1};
    const char *text = env_get(e, "PROXY_CONFIG");
    json_error_t je;
    *pc = text && *text ? json_loads(text, JSON_REJECT_DUPLICATES, &je) : json_object();
    if (!*pc) {
        wf_strbuf_printf(err, "PROXY_CONFIG: invalid JSON at column %d: %s", je.column, je.text);
        return -1;
    }
    if (!json_is_object(*pc))
        return wf_strbuf_puts(err, "PROXY_CONFIG: want a JSON object (ProxyConfig)"), -1;
    const char *k;
    json_t *v;
    json_object_foreach(*pc, k, v)
    {
        if (pc_field(k, v, p, c, err) != 0)
            return -1;
    }
    return 0;
}

/* ---- discovery address ------------------------------------------------------------------------
 */

typedef struct xds_addr {
    char host[256]; /* as written */
    char ip[256];
    int port;
} xds_addr;

static int resolve(const char *addr, xds_addr *x, wf_strbuf *err)
{
    const char *colon = strrchr(addr, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    size_t hl = colon ? (size_t)(colon - addr) : 0;
    if (!colon || hl == 0 || hl >= sizeof x->host || !end || *end || port <= 0 || port > 65535) {
        wf_strbuf_printf(err, "PROXY_CONFIG: discoveryAddress \"%s\": want HOST:PORT", addr);
        return -1;
    }
    if (addr[0] == '[' && hl > 2 && addr[hl - 1] == ']')
        snprintf(x->host, sizeof x->host, "%.*s", (int)(hl - 2), addr + 1);
    else
        snprintf(x->host, sizeof x->host, "%.*s", (int)hl, addr);
    x->port = (int)port;
    int fam;
    if (is_ip(x->host, &fam)) {
        snprintf(x->ip, sizeof x->ip, "%s", x->host);
        return 0;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(x->host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        wf_strbuf_printf(err, "PROXY_CONFIG: discoveryAddress \"%s\": cannot resolve \"%s\": %s",
                         addr, x->host, gai_strerror(rc));
        return -1;
    }
    const void *a = res->ai_family == AF_INET6
                        ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                        : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    inet_ntop(res->ai_family, a, x->ip, sizeof x->ip);
    freeaddrinfo(res);
    return 0;
}

/* The root the xDS connection verifies istiod with (pilot-agent's FindRootCAForXDS). */
static const char *xds_root(const env *e, wf_strbuf *err)
{
    const char *r = env_get(e, "XDS_ROOT_CA");
    if (!r || !*r) {
        const char *prov = env_get(e, "PILOT_CERT_PROVIDER");
        if (!prov || !*prov || !strcmp(prov, "istiod"))
            r = ROOT_ISTIOD;
        else if (!strcmp(prov, "kubernetes"))
            r = ROOT_KUBERNETES;
        else {
            wf_strbuf_printf(err,
                             "PILOT_CERT_PROVIDER: \"%s\" is not implemented by weft-proxy "
                             "(istiod, kubernetes are; or set XDS_ROOT_CA)",
                             prov);
            return NULL;
        }
    }
    FILE *f = fopen(r, "rb");
    if (!f) {
        wf_strbuf_printf(err, "root CA file for XDS does not exist %s", r);
        return NULL;
    }
    fclose(f);
    return r;
}

/* ---- node
 * ----------------------------------------------------------------------------------------- */

static int set_str(json_t *m, const char *k, const char *v)
{
    return v && *v ? json_object_set_new(m, k, json_string(v)) : 0;
}

/* ISTIO_META_* (from the environment, then proxyMetadata over it), the prefix dropped. */
static int istio_meta(const env *e, json_t *m, wp_agent_config *c)
{
    static const char prefix[] = "ISTIO_META_", jprefix[] = "ISTIO_METAJSON_";
    for (char *const *p = e->envp; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        if (!strncmp(*p, jprefix, sizeof jprefix - 1)) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - *p : 0), *p);
            warn(c, "%s%s: ISTIO_METAJSON_* is not implemented by weft-proxy, ignored", name, "");
        }
        if (!eq || strncmp(*p, prefix, sizeof prefix - 1) != 0 || eq == *p + sizeof prefix - 1)
            continue;
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - *p), *p);
        if (set_str(m, key + sizeof prefix - 1, env_get(e, key)) != 0)
            return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e->overlay, k, v)
    {
        if (!strncmp(k, prefix, sizeof prefix - 1) && k[sizeof prefix - 1] &&
            set_str(m, k + sizeof prefix - 1, json_string_value(v)) != 0)
            return -1;
    }
    return 0;
}

/* Istio's serviceClusterOrDefault (pkg/bootstrap/config.go). Heap. */
static char *service_cluster(const wp_agent_flags *f, const pcfg *p, const json_t *labels,
                             const char *workload, const char *ns)
{
    const char *set = f->service_cluster ? f->service_cluster : p->service_cluster;
    char buf[600];
    const char *app = json_string_value(json_object_get(labels, "app"));
    if (set && *set && strcmp(set, "istio-proxy") != 0)
        snprintf(buf, sizeof buf, "%s", set);
    else if (app && *app)
        snprintf(buf, sizeof buf, "%s.%s", app, ns);
    else if (workload && *workload)
        snprintf(buf, sizeof buf, "%s.%s", workload, ns);
    else
        snprintf(buf, sizeof buf, "istio-proxy.%s", ns);
    return strdup(buf);
}

typedef struct pod {
    const char *name, *ns, *ip, *sa;
    int family;
    json_t *labels, *annotations; /* NULL when no file */
} pod;

static json_t *node_metadata(const env *e, const pod *pd, json_t *pc, const char *san,
                             wp_agent_config *c)
{
    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:O,s:[s],s:i,s:i}", "NAME", pd->name, "NAMESPACE",
                          pd->ns, "INSTANCE_IPS", pd->ip, "ISTIO_VERSION", "weft-" WEFT_VERSION,
                          "PROXY_CONFIG", pc, "PILOT_SAN", san, "ENVOY_STATUS_PORT",
                          WP_AGENT_HEALTH_PORT, "ENVOY_PROMETHEUS_PORT", WP_AGENT_PROMETHEUS_PORT);
    if (!m || set_str(m, "SERVICE_ACCOUNT", pd->sa) != 0 ||
        (pd->labels && json_object_set(m, "LABELS", pd->labels) != 0) ||
        (pd->annotations && json_object_set(m, "ANNOTATIONS", pd->annotations) != 0) ||
        istio_meta(e, m, c) != 0 ||
        (!json_object_get(m, "CLUSTER_ID") &&
         json_object_set_new(m, "CLUSTER_ID", json_string("Kubernetes")) != 0)) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* ---- stats
 * ---------------------------------------------------------------------------------------- */

/* A JSON array of strings as a list (the strings stay owned by the array). */
static int str_list(const json_t *a, const char *field, const char **store, wf_psc_list *out,
                    size_t cap, wf_strbuf *err)
{
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > cap) {
        wf_strbuf_printf(err, "PROXY_CONFIG: proxyStatsMatcher.%s: want a list of strings", field);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!(store[i] = json_string_value(json_array_get(a, i)))) {
            wf_strbuf_printf(err, "PROXY_CONFIG: proxyStatsMatcher.%s[%zu]: want a string", field,
                             i);
            return -1;
        }
    *out = (wf_psc_list){store, json_array_size(a)};
    return 0;
}

#define MAX_PATTERNS 256

static json_t *stats_config(const env *e, const pcfg *p, const pod *pd, wp_agent_config *c,
                            wf_strbuf *err)
{
    const char *ips[] = {pd->ip};
    const char *store[WF_PSC_NKINDS][MAX_PATTERNS];
    wf_psc_in in = {.ips = {ips, 1}};
    const char *ez = env_get(e, "EXIT_ON_ZERO_ACTIVE_CONNECTIONS");
    in.exit_on_zero_active = ez && !strcmp(ez, "true");
    for (int k = 0; k < WF_PSC_NKINDS; k++) {
        in.anno[k] = json_string_value(json_object_get(pd->annotations, wf_psc_annotation[k]));
        if (str_list(json_object_get(p->stats_matcher, wf_psc_field[k]), wf_psc_field[k], store[k],
                     &in.pc[k], MAX_PATTERNS, err) != 0)
            return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)p->stats_matcher, k, v)
    {
        bool known = false;
        for (int f = 0; f < WF_PSC_NKINDS; f++)
            known = known || strcmp(k, wf_psc_field[f]) == 0;
        if (!known)
            warn(c, "PROXY_CONFIG: proxyStatsMatcher.%s%s: not implemented by weft-proxy, ignored",
                 k, "");
    }
    json_t *sc = wf_psc_stats_config(&in);
    if (!sc)
        wf_strbuf_puts(err, "out of memory");
    return sc;
}

/* ---- the whole
 * ------------------------------------------------------------------------------------ */

static unsigned concurrency(const wp_agent_flags *f, const pcfg *p, const env *e)
{
    if (f->concurrency >= 0)
        return (unsigned)f->concurrency;
    if (p->concurrency >= 0)
        return (unsigned)p->concurrency;
    const char *cpu = env_get(e, "ISTIO_CPU_LIMIT");
    long n = cpu ? strtol(cpu, NULL, 10) : 0;
    return n > 0 && n <= 1024 ? (unsigned)n : 2;
}

static int read_pod(const env *e, pod *pd, wp_agent_config *c, wf_strbuf *err)
{
    if (!(pd->name = env_req(e, "POD_NAME", err)) || !(pd->ns = env_req(e, "POD_NAMESPACE", err)) ||
        !(pd->ip = env_req(e, "INSTANCE_IP", err)))
        return -1;
    if (!is_ip(pd->ip, &pd->family)) {
        wf_strbuf_printf(err, "INSTANCE_IP: \"%s\" is not an IP address", pd->ip);
        return -1;
    }
    pd->sa = env_get(e, "SERVICE_ACCOUNT");
    pd->labels = pod_info(c, LABELS_FILE);
    pd->annotations = pod_info(c, ANNOTATIONS_FILE);
    return 0;
}

static int xds_target(const env *e, const pcfg *p, xds_addr *x, const char **root, char **san,
                      wf_strbuf *err)
{
    if (resolve(p->discovery, x, err) != 0)
        return -1;
    const char *s = env_get(e, "ISTIOD_SAN");
    s = s && *s ? s : x->host;
    int fam;
    if (p->tls && is_ip(s, &fam)) {
        wf_strbuf_printf(err,
                         "PROXY_CONFIG: discoveryAddress \"%s\": an IP address needs ISTIOD_SAN "
                         "(the DNS name istiod's certificate carries): weft-proxy checks DNS SANs",
                         p->discovery);
        return -1;
    }
    *root = p->tls ? xds_root(e, err) : NULL;
    if (p->tls && !*root)
        return -1;
    *san = strdup(s);
    return *san ? 0 : (wf_strbuf_puts(err, "out of memory"), -1);
}

static void flag_warnings(const wp_agent_flags *f, wp_agent_config *c)
{
    for (size_t i = 0; i < f->nunimplemented; i++)
        warn(c, "%s%s: not implemented by weft-proxy, ignored", f->unimplemented[i], "");
}

int wp_agent_config_build(const wp_agent_flags *f, char *const *envp, wp_agent_config *c,
                          wf_strbuf *err)
{
    *c = (wp_agent_config){0};
    flag_warnings(f, c);
    env e = {.envp = envp};
    pod pd = {0};
    pcfg p;
    json_t *pc = NULL;
    xds_addr x;
    const char *root = NULL;
    char *cluster = NULL;
    int rc = -1;
    if (proxy_config(&e, &pc, &p, c, err) != 0)
        goto out;
    json_t *md = json_object_get(pc, "proxyMetadata");
    c->proxy_metadata = md ? json_incref(md) : json_object();
    e.overlay = c->proxy_metadata;
    if (read_pod(&e, &pd, c, err) != 0 || xds_target(&e, &p, &x, &root, &c->xds_san, err) != 0)
        goto out;
    const char *domain = f->domain;
    char dbuf[300], id[1200];
    snprintf(dbuf, sizeof dbuf, "%s.svc.cluster.local", pd.ns);
    snprintf(id, sizeof id, "%s~%s~%s.%s~%s", f->type == WP_AGENT_ROUTER ? "router" : "sidecar",
             pd.ip, pd.name, pd.ns, domain ? domain : dbuf);
    bool v6 = pd.family == AF_INET6;
    snprintf(c->admin_ip, sizeof c->admin_ip, "%s", v6 ? "::1" : "127.0.0.1");
    c->admin_port = p.admin_port;
    snprintf(c->status_addr, sizeof c->status_addr, "%s:%d", v6 ? "[::]" : "0.0.0.0",
             p.status_port);
    snprintf(c->health_addr, sizeof c->health_addr, "%s:%d", v6 ? "[::]" : "0.0.0.0",
             WP_AGENT_HEALTH_PORT);
    c->concurrency = concurrency(f, &p, &e);
    c->drain_s = (uint64_t)((p.drain_ns + 999999999) / 1000000000);
    c->node_id = strdup(id);
    cluster = service_cluster(f, &p, pd.labels, env_get(&e, "ISTIO_META_WORKLOAD_NAME"), pd.ns);
    json_t *sc = stats_config(&e, &p, &pd, c, err);
    if (!sc || !c->node_id || !cluster) {
        json_decref(sc);
        if (!err->len)
            wf_strbuf_puts(err, "out of memory");
        goto out;
    }
    wp_agent_bootstrap b = {.node_id = id,
                            .cluster = cluster,
                            .metadata = node_metadata(&e, &pd, pc, c->xds_san, c),
                            .stats_config = sc,
                            .admin_ip = c->admin_ip,
                            .admin_port = p.admin_port,
                            .prom_ip = v6 ? "::" : "0.0.0.0",
                            .xds_ip = x.ip,
                            .xds_port = x.port,
                            .xds_root = root,
                            .xds_san = c->xds_san};
    if (!(c->bootstrap = wp_agent_bootstrap_json(&b))) {
        wf_strbuf_puts(err, "out of memory");
        goto out;
    }
    rc = 0;
out:
    json_decref(pc);
    json_decref(pd.labels);
    json_decref(pd.annotations);
    free(cluster);
    if (rc != 0)
        wp_agent_config_free(c);
    return rc;
}

void wp_agent_config_free(wp_agent_config *c)
{
    json_decref(c->bootstrap);
    json_decref(c->proxy_metadata);
    free(c->node_id);
    free(c->xds_san);
    wf_strbuf_free(&c->warnings);
    *c = (wp_agent_config){0};
}
