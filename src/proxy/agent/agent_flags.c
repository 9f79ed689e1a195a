/*
 * agent_flags.c - pilot-agent's `proxy` command line (agent_config.h).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "proxy/agent/agent_config.h"

void wp_agent_usage(FILE *f)
{
    fprintf(f, "Usage: weft-proxy proxy sidecar|router [flags]\n"
               "\n"
               "pilot-agent's `proxy` command, as Istio's injected istio-proxy container runs it:\n"
               "the bootstrap is built in memory from the pod's environment and files, then the\n"
               "proxy runs with it (docs/proxy.md \"The agent mode\").\n"
               "\n"
               "Flags (pilot-agent's):\n"
               "  --domain D                    node id domain (default "
               "<POD_NAMESPACE>.svc.cluster.local)\n"
               "  --serviceCluster NAME         node cluster (default <app label>.<namespace>)\n"
               "  --proxyLogLevel LEVEL         trace, debug, info, warning, error, critical, off\n"
               "                                (default warning)\n"
               "  --proxyComponentLogLevel SPEC per logger levels (default misc:error)\n"
               "  --log_output_level SPEC       the agent's scopes, e.g. default:info (default,\n"
               "                                cache, sds, dns, ads, xdsproxy are applied)\n"
               "  --concurrency N               worker threads (default: ProxyConfig concurrency,\n"
               "                                else ISTIO_CPU_LIMIT, else 2; 0 = all CPUs)\n"
               "  --print-bootstrap             weft's: print the bootstrap (JSON) and exit\n"
               "  -h, --help                    show this help\n"
               "Accepted and warned about (not implemented): --templateFile, --outlierLogPath,\n"
               "  --stsPort, --tokenManagerPlugin, --meshConfig, --log_target, --log_caller,\n"
               "  --log_stacktrace_level, --log_as_json, --log_rotate*, --vklog\n"
               "\n"
               "Environment (Istio's injector sets it; required: POD_NAME, POD_NAMESPACE,\n"
               "INSTANCE_IP): SERVICE_ACCOUNT, PROXY_CONFIG (ProxyConfig JSON: discoveryAddress,\n"
               "controlPlaneAuthPolicy, proxyAdminPort, statusPort, drainDuration, concurrency,\n"
               "serviceCluster, proxyStatsMatcher, proxyMetadata; other fields are warned about),\n"
               "ISTIO_META_* (node metadata), ISTIOD_SAN, XDS_ROOT_CA, PILOT_CERT_PROVIDER,\n"
               "CA_ADDR, CA_ROOT_CA, TRUST_DOMAIN, ISTIO_CPU_LIMIT, ISTIO_KUBE_APP_PROBERS,\n"
               "ISTIO_PROMETHEUS_ANNOTATIONS, and weft-proxy's (weft-proxy --help).\n"
               "Files (relative to the working directory, / in a pod):\n"
               "  ./var/run/secrets/istio/root-cert.pem    istiod's root (istio-ca-root-cert)\n"
               "  ./var/run/secrets/tokens/istio-token     the service account token\n"
               "  ./etc/istio/pod/labels, annotations      the pod's (downward API)\n"
               "\n"
               "Ports: admin 127.0.0.1:<proxyAdminPort 15000>, status 0.0.0.0:<statusPort 15020>,\n"
               "readiness 0.0.0.0:15021 (/healthz/ready), Prometheus 0.0.0.0:15090.\n"
               "\n"
               "Exit codes: 0 clean shutdown (or --print-bootstrap), 1 missing or invalid\n"
               "environment, file or configuration, or start failure, 2 bad command line.\n");
}

enum {
    F_DOMAIN = 256,
    F_CLUSTER,
    F_LOGLEVEL,
    F_COMPLEVEL,
    F_OUTLEVEL,
    F_CONC,
    F_PRINT,
    F_UNIMPL,      /* takes a value */
    F_UNIMPL_BOOL, /* optional value */
};

static int concurrency(const char *v, int *out, wf_strbuf *err)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 0 || n > 1024) {
        wf_strbuf_printf(err, "invalid --concurrency \"%s\": want an integer 0..1024", v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

static int note_unimplemented(wp_agent_flags *f, const char *arg)
{
    if (f->nunimplemented < WP_AGENT_MAX_WARN)
        f->unimplemented[f->nunimplemented++] = arg;
    return 0;
}

int wp_agent_parse_flags(int argc, char **argv, wp_agent_flags *f, wf_strbuf *err)
{
    static const struct option longs[] = {
        {"domain", required_argument, 0, F_DOMAIN},
        {"serviceCluster", required_argument, 0, F_CLUSTER},
        {"proxyLogLevel", required_argument, 0, F_LOGLEVEL},
        {"proxyComponentLogLevel", required_argument, 0, F_COMPLEVEL},
        {"log_output_level", required_argument, 0, F_OUTLEVEL},
        {"concurrency", required_argument, 0, F_CONC},
        {"print-bootstrap", no_argument, 0, F_PRINT},
        {"help", no_argument, 0, 'h'},
        {"templateFile", required_argument, 0, F_UNIMPL},
        {"outlierLogPath", required_argument, 0, F_UNIMPL},
        {"stsPort", required_argument, 0, F_UNIMPL},
        {"tokenManagerPlugin", required_argument, 0, F_UNIMPL},
        {"meshConfig", required_argument, 0, F_UNIMPL},
        {"log_target", required_argument, 0, F_UNIMPL},
        {"log_caller", required_argument, 0, F_UNIMPL},
        {"log_stacktrace_level", required_argument, 0, F_UNIMPL},
        {"log_rotate", required_argument, 0, F_UNIMPL},
        {"log_rotate_max_age", required_argument, 0, F_UNIMPL},
        {"log_rotate_max_backups", required_argument, 0, F_UNIMPL},
        {"log_rotate_max_size", required_argument, 0, F_UNIMPL},
        {"vklog", required_argument, 0, F_UNIMPL},
        {"log_as_json", optional_argument, 0, F_UNIMPL_BOOL},
        {0, 0, 0, 0},
    };
    *f = (wp_agent_flags){
        .proxy_log_level = "warning", .proxy_component_log_level = "misc:error", .concurrency = -1};
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
            wp_agent_usage(stdout);
            return 1;
        }
        wf_strbuf_puts(err, "proxy: want the proxy type: sidecar or router (see --help)");
        return -1;
    }
    if (!strcmp(argv[1], "sidecar"))
        f->type = WP_AGENT_SIDECAR;
    else if (!strcmp(argv[1], "router"))
        f->type = WP_AGENT_ROUTER;
    else {
        wf_strbuf_printf(err, "proxy: invalid proxy type \"%s\": want sidecar or router", argv[1]);
        return -1;
    }
    optind = 2;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        switch (c) {
        case 'h':
            wp_agent_usage(stdout);
            return 1;
        case F_DOMAIN:
            f->domain = optarg;
            break;
        case F_CLUSTER:
            f->service_cluster = optarg;
            break;
        case F_LOGLEVEL:
            f->proxy_log_level = optarg;
            break;
        case F_COMPLEVEL:
            f->proxy_component_log_level = optarg;
            break;
        case F_OUTLEVEL:
            f->log_output_level = optarg;
            break;
        case F_CONC:
            if (concurrency(optarg, &f->concurrency, err) != 0)
                return -1;
            break;
        case F_PRINT:
            f->print_bootstrap = true;
            break;
        case F_UNIMPL:
        case F_UNIMPL_BOOL:
            note_unimplemented(f, argv[optind - 1]);
            break;
        case ':':
            wf_strbuf_printf(err, "flag %s needs a value", argv[optind - 1]);
            return -1;
        default:
            wf_strbuf_printf(err, "unknown flag %s (see weft-proxy proxy --help)",
                             argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        wf_strbuf_printf(err, "unexpected argument \"%s\" (see weft-proxy proxy --help)",
                         argv[optind]);
        return -1;
    }
    int lvl = wf_log_level_from_name(f->proxy_log_level, strlen(f->proxy_log_level));
    if (lvl < 0) {
        wf_strbuf_printf(err, "invalid --proxyLogLevel \"%s\"", f->proxy_log_level);
        return -1;
    }
    return 0;
}

/* Istio's log level names (pkg/log) as weft's. NULL when unknown. */
static const char *istio_level(const char *l, size_t n)
{
    static const char *const map[][2] = {{"none", "off"},    {"fatal", "critical"},
                                         {"error", "error"}, {"warn", "warning"},
                                         {"info", "info"},   {"debug", "debug"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i][0]) == n && !strncmp(l, map[i][0], n))
            return map[i][1];
    return NULL;
}

static void add_level(wf_strbuf *spec, const char *logger, const char *level)
{
    wf_strbuf_printf(spec, "%s%s:%s", spec->len ? "," : "", logger, level);
}

int wp_agent_log_output_level(const char *v, wf_strbuf *spec, wf_strbuf *unmapped, wf_strbuf *err)
{
    /* pilot-agent's scopes and the weft loggers doing their work */
    static const char *const scopes[][3] = {
        {"default", "secret", "dns"}, {"cache", "secret", NULL}, {"sds", "secret", NULL},
        {"dns", "dns", NULL},         {"ads", "config", NULL},   {"xdsproxy", "config", NULL}};
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *colon = memchr(p, ':', n);
        const char *lvl = colon ? istio_level(colon + 1, n - (size_t)(colon + 1 - p)) : NULL;
        if (!colon || colon == p || !lvl) {
            wf_strbuf_printf(err,
                             "invalid --log_output_level \"%.*s\": want scope:level, level one "
                             "of none, fatal, error, warn, info, debug",
                             (int)n, p);
            return -1;
        }
        size_t sl = (size_t)(colon - p);
        bool mapped = false;
        for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
            if (strlen(scopes[i][0]) != sl || strncmp(p, scopes[i][0], sl) != 0)
                continue;
            mapped = true;
            for (int k = 1; k < 3 && scopes[i][k]; k++)
                add_level(spec, scopes[i][k], lvl);
        }
        if (!mapped)
            wf_strbuf_printf(unmapped, "%s%.*s", unmapped->len ? "," : "", (int)sl, p);
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}
