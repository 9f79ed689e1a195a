/*
 * main_proxy.c - weft-proxy's command line, with Envoy's flag names (docs operations/cli):
 * -c/--config-path, --concurrency, -l/--log-level, --component-log-level,
 * --drain-time-s, --service-node, --service-cluster, --mode serve|validate,
 * --file-flush-interval-msec. Exit codes: 0 clean exit or valid config, 1 bad config or
 * start failure, 2 bad command line.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/iptables_cmd.h"
#include "core/log.h"
#include "core/strbuf.h"
#include "proxy/agent/agent_cmd.h"
#include "proxy/agent/agent_config.h"
#include "proxy/server/server.h"
#include "proxy/agent/status.h"

extern char **environ;

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: weft-proxy -c BOOTSTRAP.json [flags]\n"
            "       weft-proxy proxy sidecar|router [flags]  pilot-agent's command: the bootstrap\n"
            "                                                from Istio's environment (--help)\n"
            "       weft-proxy istio-iptables|istio-clean-iptables [flags]  (--help: capture "
            "rules)\n"
            "       weft-proxy wait | request METHOD PATH  pilot-agent's lifecycle-hook commands "
            "(--help)\n"
            "\n"
            "weft's data plane: an HTTP/1.1 proxy configured with an Envoy v3 bootstrap (JSON).\n"
            "\n"
            "Flags:\n"
            "  -c, --config-path FILE          Envoy v3 bootstrap in JSON (required)\n"
            "      --mode serve|validate       validate: check the configuration and exit\n"
            "      --concurrency N             worker threads (default: number of CPUs)\n"
            "  -l, --log-level LEVEL           trace, debug, info, warning, error, critical, off\n"
            "                                  (default info)\n"
            "      --component-log-level SPEC  per logger levels, e.g. http:debug,router:debug\n"
            "      --drain-time-s N            seconds to let requests finish on SIGTERM "
            "(default 600)\n"
            "      --service-node NAME         node id (overrides node.id)\n"
            "      --service-cluster NAME      node cluster (overrides node.cluster)\n"
            "      --file-flush-interval-msec N  access log flush interval (default 10000)\n"
            "      --status-address IP:PORT    status server (Istio's 15020): /healthz/ready,\n"
            "                                  /stats/prometheus, /failed_requests (the\n"
            "                                  recent failed requests, weft-pilot's web view\n"
            "                                  reads them); repeatable\n"
            "      --health-address IP:PORT    readiness-only server (Istio's gateway 15021):\n"
            "                                  /healthz/ready; repeatable\n"
            "      --readiness-policy P        istio (default: stay ready without a control\n"
            "                                  plane) or control-plane (docs/readiness.md)\n"
            "      --readiness-grace-s N       control-plane policy: seconds the xDS stream may\n"
            "                                  be down before not ready (default 10)\n"
            "      --readiness-stability-s N   control-plane policy: seconds the stream must stay\n"
            "                                  up before ready again (default 15)\n"
            "      --token-path FILE           the Bearer token for the CA's CreateCertificate\n"
            "                                  (default: env WEFT_TOKEN_PATH, else Istio's\n"
            "                                  ./var/run/secrets/tokens/istio-token)\n"
            "  -h, --help                      show this help\n"
            "      --version                   print the version\n"
            "\n"
            "Exit codes: 0 clean shutdown or valid configuration, 1 invalid configuration or\n"
            "start failure, 2 bad command line.\n"
            "\n"
            "Environment (test hooks, not for production):\n"
            "  WEFT_PROXY_TEST_SEED=N          seed the workers' random generators with N\n"
            "                                  (worker i uses N+i): reproducible fault filter\n"
            "                                  percentages, weighted clusters and request ids\n"
            "  WEFT_READINESS_POLICY, WEFT_READINESS_GRACE_S, WEFT_READINESS_STABILITY_S\n"
            "                                  defaults of the three readiness flags (Istio's\n"
            "                                  proxyMetadata, mesh-wide or per workload, arrive\n"
            "                                  as environment variables)\n"
            "  ISTIO_KUBE_APP_PROBERS=JSON     pilot-agent's rewritten app probes, served on the\n"
            "                                  status address at /app-health/<c>/livez|readyz|\n"
            "                                  startupz (Istio's KubeAppProbers JSON)\n"
            "  INSTANCE_IP=IP                  the pod IP the probes and the app scrape go to\n"
            "                                  (default 127.0.0.1)\n"
            "  ISTIO_PROMETHEUS_ANNOTATIONS=JSON  {\"scrape\",\"path\",\"port\"}: merge the app's\n"
            "                                  metrics into the status address's\n"
            "                                  /stats/prometheus (pilot-agent's merged metrics)\n"
            "  WEFT_PROXY_TEST_BACKOFF_JITTER=max|zero  retry back-offs at the top (interval\n"
            "                                  - 1 ms) or bottom (0) of Envoy's jittered\n"
            "                                  interval instead of a uniform draw\n"
            "\n"
            "pilot-agent's certificate provider (when a TLS context uses SDS `default`/`ROOTCA`):\n"
            "  CA_ADDR=IP:PORT                 the CA (default: the ADS cluster's address)\n"
            "  SECRET_TTL=DURATION             certificate lifetime asked for (default 24h)\n"
            "  SECRET_GRACE_PERIOD_RATIO=R     rotate when R of the life is left (default 0.5)\n"
            "  SECRET_GRACE_PERIOD_RATIO_JITTER=J  +- J on the ratio (default 0.01)\n"
            "  ECC_SIGNATURE_ALGORITHM=ECDSA   ECDSA P-256 key (default RSA 2048)\n"
            "  TRUST_DOMAIN, POD_NAMESPACE, SERVICE_ACCOUNT  the CSR's SPIFFE ID\n"
            "  CLUSTER_ID                      ClusterID metadata (default Kubernetes)\n"
            "\n"
            "pilot-agent's DNS proxy (when the node metadata has DNS_CAPTURE \"true\"):\n"
            "  DNS_PROXY_ADDR=IP:PORT          where it answers, UDP and TCP (default\n"
            "                                  127.0.0.1:15053)\n"
            "  WEFT_DNS_RESOLV_CONF=FILE       upstream nameservers and search domains (default\n"
            "                                  /etc/resolv.conf)\n"
            "  WEFT_DNS_UPSTREAMS=IP:PORT,...  test hook: these upstreams instead\n");
}

static int parse_uint(const char *flag, const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v > max) {
        fprintf(stderr, "weft-proxy: invalid value \"%s\" for %s: want an integer 0..%llu\n", s,
                flag, (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

enum {
    OPT_CONC = 256,
    OPT_CLL,
    OPT_DRAIN,
    OPT_NODE,
    OPT_CLUSTER,
    OPT_MODE,
    OPT_FLUSH,
    OPT_VER,
    OPT_STATUS,
    OPT_HEALTH,
    OPT_RPOLICY,
    OPT_RGRACE,
    OPT_RSTABLE,
    OPT_TOKEN,
};

/* --status-address / --health-address: checked now, kept as given. */
static int add_addr(const char *flag, const char *v, const char **list, size_t *n)
{
    struct sockaddr_storage sa;
    wf_strbuf err = {0};
    if (wp_status_parse_address(v, &sa, &err) != 0) {
        fprintf(stderr, "weft-proxy: invalid value \"%s\" for %s: %s\n", v, flag,
                wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        return -1;
    }
    wf_strbuf_free(&err);
    if (*n >= WP_MAX_STATUS_ADDRS) {
        fprintf(stderr, "weft-proxy: %s given more than %d times\n", flag, WP_MAX_STATUS_ADDRS);
        return -1;
    }
    list[(*n)++] = v;
    return 0;
}

/* The readiness flags (everything but the numbers that parse_uint checks). */
static int parse_readiness(int c, const char *v, wp_server_opts *o)
{
    uint64_t s;
    switch (c) {
    case OPT_RPOLICY:
        if (wp_readiness_mode_parse(v, &o->readiness.mode) != 0) {
            fprintf(stderr,
                    "weft-proxy: invalid --readiness-policy \"%s\": want istio or control-plane\n",
                    v);
            return -1;
        }
        return 0;
    case OPT_RGRACE:
        if (parse_uint("--readiness-grace-s", v, 86400, &s) != 0)
            return -1;
        o->readiness.grace_ms = s * 1000;
        return 0;
    default:
        if (parse_uint("--readiness-stability-s", v, 86400, &s) != 0)
            return -1;
        o->readiness.stability_ms = s * 1000;
        return 0;
    }
}

/* The readiness flags' defaults from the environment: Istio delivers ProxyConfig
 * proxyMetadata (MeshConfig defaultConfig, or a workload's proxy.istio.io/config annotation)
 * to the proxy as environment variables. A bad value is an error like a bad flag. */
static int readiness_env(wp_server_opts *o)
{
    static const struct {
        const char *name;
        int opt;
    } vars[] = {{"WEFT_READINESS_POLICY", OPT_RPOLICY},
                {"WEFT_READINESS_GRACE_S", OPT_RGRACE},
                {"WEFT_READINESS_STABILITY_S", OPT_RSTABLE}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].name);
        if (v && *v && parse_readiness(vars[i].opt, v, o) != 0) {
            fprintf(stderr, "weft-proxy: (from the environment variable %s)\n", vars[i].name);
            return -1;
        }
    }
    return 0;
}

/* pilot-agent's environment (app_probe.h, status_metrics.h). A bad value stops the proxy, as it
 * stops pilot-agent. probers and scrape are the storage o points into. */
static int agent_env(wp_server_opts *o, wp_app_probers *probers, wp_prom_scrape *scrape)
{
    wf_strbuf err = {0};
    const char *ip = getenv("INSTANCE_IP");
    struct sockaddr_storage sa;
    if (ip && *ip) {
        if (uv_ip4_addr(ip, 0, (struct sockaddr_in *)&sa) != 0 &&
            uv_ip6_addr(ip, 0, (struct sockaddr_in6 *)&sa) != 0) {
            fprintf(stderr, "weft-proxy: INSTANCE_IP: \"%s\" is not an IP address\n", ip);
            return -1;
        }
        o->app_ip = ip;
    }
    const char *pr = getenv("ISTIO_KUBE_APP_PROBERS");
    if (pr && *pr) {
        if (wp_app_probers_parse(pr, probers, &err) != 0) {
            fprintf(stderr, "weft-proxy: ISTIO_KUBE_APP_PROBERS: %s\n", wf_strbuf_cstr(&err));
            wf_strbuf_free(&err);
            return -1;
        }
        o->app_probers = probers;
    }
    const char *an = getenv("ISTIO_PROMETHEUS_ANNOTATIONS");
    if (an && *an) {
        int port = 15020; /* the status port, to refuse a scrape of itself */
        if (o->nstatus > 0 && wp_status_parse_address(o->status_addrs[0], &sa, NULL) == 0)
            port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                                  : ((struct sockaddr_in *)&sa)->sin_port);
        int rc = wp_prom_scrape_parse(an, port, scrape, &err);
        if (rc < 0) {
            fprintf(stderr, "weft-proxy: ISTIO_PROMETHEUS_ANNOTATIONS: %s\n", wf_strbuf_cstr(&err));
            wf_strbuf_free(&err);
            return -1;
        }
        o->app_metrics = rc == 1 ? scrape : NULL;
    }
    return 0;
}

static int parse(int argc, char **argv, wp_server_opts *o)
{
    static const struct option longs[] = {
        {"config-path", required_argument, 0, 'c'},
        {"log-level", required_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'},
        {"concurrency", required_argument, 0, OPT_CONC},
        {"component-log-level", required_argument, 0, OPT_CLL},
        {"drain-time-s", required_argument, 0, OPT_DRAIN},
        {"service-node", required_argument, 0, OPT_NODE},
        {"service-cluster", required_argument, 0, OPT_CLUSTER},
        {"mode", required_argument, 0, OPT_MODE},
        {"file-flush-interval-msec", required_argument, 0, OPT_FLUSH},
        {"version", no_argument, 0, OPT_VER},
        {"status-address", required_argument, 0, OPT_STATUS},
        {"health-address", required_argument, 0, OPT_HEALTH},
        {"readiness-policy", required_argument, 0, OPT_RPOLICY},
        {"readiness-grace-s", required_argument, 0, OPT_RGRACE},
        {"readiness-stability-s", required_argument, 0, OPT_RSTABLE},
        {"token-path", required_argument, 0, OPT_TOKEN},
        {0, 0, 0, 0},
    };
    int c;
    uint64_t v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:l:h", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            o->config_path = optarg;
            break;
        case 'l':
            o->log_level = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case OPT_VER:
            printf("weft-proxy version %s\n", WEFT_VERSION);
            exit(0);
        case OPT_CONC:
            if (parse_uint("--concurrency", optarg, 1024, &v) != 0)
                return -1;
            o->concurrency = (unsigned)v;
            break;
        case OPT_CLL:
            o->component_log_level = optarg;
            break;
        case OPT_DRAIN:
            if (parse_uint("--drain-time-s", optarg, 86400, &o->drain_time_s) != 0)
                return -1;
            break;
        case OPT_NODE:
            o->service_node = optarg;
            break;
        case OPT_CLUSTER:
            o->service_cluster = optarg;
            break;
        case OPT_FLUSH:
            if (parse_uint("--file-flush-interval-msec", optarg, 3600000, &o->flush_interval_ms) !=
                0)
                return -1;
            break;
        case OPT_MODE:
            if (strcmp(optarg, "validate") == 0)
                o->validate_only = true;
            else if (strcmp(optarg, "serve") != 0) {
                fprintf(stderr, "weft-proxy: invalid --mode \"%s\": want serve or validate\n",
                        optarg);
                return -1;
            }
            break;
        case OPT_STATUS:
            if (add_addr("--status-address", optarg, o->status_addrs, &o->nstatus) != 0)
                return -1;
            break;
        case OPT_HEALTH:
            if (add_addr("--health-address", optarg, o->health_addrs, &o->nhealth) != 0)
                return -1;
            break;
        case OPT_TOKEN:
            o->token_path = optarg;
            break;
        case OPT_RPOLICY:
        case OPT_RGRACE:
        case OPT_RSTABLE:
            if (parse_readiness(c, optarg, o) != 0)
                return -1;
            break;
        case ':':
            fprintf(stderr, "weft-proxy: flag %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "weft-proxy: unknown flag %s (see --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "weft-proxy: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return -1;
    }
    if (!o->config_path) {
        fprintf(stderr, "weft-proxy: -c/--config-path is required (see --help)\n");
        return -1;
    }
    return 0;
}

/* Log levels of the agent mode: --proxyLogLevel, --proxyComponentLogLevel, then the loggers
 * playing pilot-agent's --log_output_level scopes. 0, or -1 (printed). */
static int agent_logging(const wp_agent_flags *f, wp_agent_config *c)
{
    const char *l = f->proxy_log_level;
    wf_log_init(2, (wf_log_level)wf_log_level_from_name(l, strlen(l)), NULL);
    wf_strbuf spec = {0}, unmapped = {0}, err = {0};
    int rc = wf_log_apply_component_levels(f->proxy_component_log_level, &err);
    if (rc != 0)
        fprintf(stderr, "weft-proxy: --proxyComponentLogLevel: %s\n", wf_strbuf_cstr(&err));
    else if (f->log_output_level &&
             (wp_agent_log_output_level(f->log_output_level, &spec, &unmapped, &err) != 0 ||
              wf_log_apply_component_levels(wf_strbuf_cstr(&spec), &err) != 0)) {
        fprintf(stderr, "weft-proxy: %s\n", wf_strbuf_cstr(&err));
        rc = -1;
    }
    if (rc == 0 && unmapped.len) {
        if (c->warnings.len)
            wf_strbuf_putc(&c->warnings, '\n');
        wf_strbuf_printf(&c->warnings,
                         "--log_output_level: scopes %s: weft-proxy has no logger of theirs, "
                         "not applied",
                         wf_strbuf_cstr(&unmapped));
    }
    wf_strbuf_free(&spec);
    wf_strbuf_free(&unmapped);
    wf_strbuf_free(&err);
    return rc;
}

/* What the agent mode does not implement, one warning each (never silently ignored). */
static void agent_warnings(const wp_agent_config *c, bool print)
{
    const char *p = wf_strbuf_cstr(&c->warnings);
    while (*p) {
        size_t n = strcspn(p, "\n");
        if (print)
            fprintf(stderr, "weft-proxy: warning: %.*s\n", (int)n, p);
        else
            WF_LOG(WF_LC_main, WF_LOG_WARN, "%.*s", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

static int print_bootstrap(const wp_agent_config *c)
{
    agent_warnings(c, true);
    char *text = json_dumps(c->bootstrap, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    if (!text)
        return 1;
    puts(text);
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* `weft-proxy proxy sidecar|router`: pilot-agent (agent_config.h). Exit 2 for a bad command
 * line, 1 for a missing or invalid environment. */
static int agent_main(int argc, char **argv)
{
    wp_agent_flags f;
    wp_agent_config c;
    wf_strbuf err = {0};
    int r = wp_agent_parse_flags(argc, argv, &f, &err);
    if (r != 0 || wp_agent_config_build(&f, environ, &c, &err) != 0) {
        if (r <= 0)
            fprintf(stderr, "weft-proxy proxy: %s\n", wf_strbuf_cstr(&err));
        wf_strbuf_free(&err);
        return r == 1 ? 0 : r < 0 ? 2 : 1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(c.proxy_metadata, k, v)
    {
        setenv(k, json_string_value(v), 1); /* pilot-agent's os.Setenv of proxyMetadata */
    }
    if (f.print_bootstrap) {
        r = print_bootstrap(&c);
        wp_agent_config_free(&c);
        return r;
    }
    wp_server_opts o = {.config_path = "bootstrap (pilot-agent)",
                        .bootstrap = c.bootstrap,
                        .ca_name = c.xds_san,
                        .concurrency = c.concurrency,
                        .drain_time_s = c.drain_s,
                        .flush_interval_ms = 1000, /* pilot-agent's --file-flush-interval-msec */
                        .status_addrs = {c.status_addr},
                        .nstatus = 1,
                        .health_addrs = {c.health_addr},
                        .nhealth = 1,
                        .argc = argc,
                        .argv = argv};
    wp_readiness_policy_default(&o.readiness);
    wp_app_probers probers = {0};
    wp_prom_scrape scrape = {0};
    if (agent_logging(&f, &c) != 0 || readiness_env(&o) != 0 ||
        agent_env(&o, &probers, &scrape) != 0) {
        wp_agent_config_free(&c);
        return 1;
    }
    agent_warnings(&c, false);
    WF_LOG(WF_LC_main, WF_LOG_INFO, "pilot-agent mode: node %s, istiod SAN %s", c.node_id,
           c.xds_san);
    r = wp_server_run(&o);
    wp_app_probers_free(&probers);
    wp_agent_config_free(&c);
    return r;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "proxy") == 0)
        return agent_main(argc - 1, argv + 1);
    /* pilot-agent's lifecycle-hook subcommands (proxy/agent/agent_cmd.h) */
    if (argc > 1 && strcmp(argv[1], "wait") == 0)
        return wp_agent_wait_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "request") == 0)
        return wp_agent_request_main(argc - 1, argv + 1);
    /* pilot-agent's capture subcommands (src/capture/iptables_cmd.h) */
    if (argc > 1 && strcmp(argv[1], "istio-iptables") == 0)
        return wf_istio_iptables_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "istio-clean-iptables") == 0)
        return wf_istio_clean_iptables_main(argc - 1, argv + 1);
    wp_server_opts o = {
        .drain_time_s = 600, .flush_interval_ms = 10000, .argc = argc, .argv = argv};
    wp_readiness_policy_default(&o.readiness);
    if (readiness_env(&o) != 0)
        return 2;
    if (parse(argc, argv, &o) != 0)
        return 2;
    int lvl = WF_LOG_INFO;
    if (o.log_level && (lvl = wf_log_level_from_name(o.log_level, strlen(o.log_level))) < 0) {
        fprintf(stderr, "weft-proxy: invalid --log-level \"%s\"\n", o.log_level);
        return 2;
    }
    wf_log_init(2, (wf_log_level)lvl, NULL);
    if (o.component_log_level) {
        wf_strbuf err = {0};
        if (wf_log_apply_component_levels(o.component_log_level, &err) != 0) {
            fprintf(stderr, "weft-proxy: --component-log-level: %s\n", wf_strbuf_cstr(&err));
            wf_strbuf_free(&err);
            return 2;
        }
    }
    wp_app_probers probers = {0};
    wp_prom_scrape scrape = {0};
    if (agent_env(&o, &probers, &scrape) != 0)
        return 2;
    int rc = wp_server_run(&o);
    wp_app_probers_free(&probers);
    return rc;
}
