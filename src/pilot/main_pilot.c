/*
 * main_pilot.c - weft-pilot's command line (istiod's flag names where Istio has one:
 * --meshConfig, --grpcAddr, --secureGRPCAddr, --monitoringAddr, --webhookAddr,
 * --injectConfigDir, --domain, --keepaliveInterval,
 * istiod's XDS_AUTH environment variable and weft's --xds-auth flag for it,
 * --keepaliveTimeout, --revision and istiod's REVISION variable; istiod's POD_NAMESPACE and
 * ISTIOD_CUSTOM_HOST for the serving certificate's DNS names), weft's --ca-dir, the
 * Kubernetes source's --kubeconfig/--context (and the in-cluster configuration: source_kube.h),
 * `create-token` (ca_token.h) and `authz-filters` (authz_cmd.h). Exit codes: 0 clean exit on
 * SIGTERM/SIGINT, 1 start failure (a bind, an unreadable directory or MeshConfig, a bad
 * kubeconfig, an API server not synced in time: the message names it), 2 bad command line.
 */
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "model/validate.h"
#include "pilot/authz_cmd.h"
#include "pilot/ca_token.h"
#include "pilot/pilot.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

#define MAX_DIRS 64

typedef struct cmdline {
    const char *dirs[MAX_DIRS];
    wf_pilot_opts o;
    int level;
    bool from_env; /* the value parse_opt checks came from the environment (its messages) */
} cmdline;

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: weft-pilot --config-dir DIR [--config-dir DIR2 ...] [flags]\n"
        "       weft-pilot --kubeconfig FILE [--context NAME] [flags] (the Kubernetes API)\n"
        "       weft-pilot [flags] (in a Pod: KUBERNETES_SERVICE_HOST set, in-cluster)\n"
        "       weft-pilot create-token SA [-n NS] [--ca-dir DIR] (a CSR token)\n"
        "       weft-pilot authz-filters --config-dir DIR -n NS [-l K=V,...] (the RBAC\n"
        "                 filters built for a workload, as JSON; for conformance tests)\n"
        "\n"
        "weft's control plane (istiod): watches manifests, validates them, translates them\n"
        "per proxy and pushes them over xDS; serves debug and metrics endpoints.\n"
        "\n"
        "Flags:\n"
        "      --config-dir DIR             manifests to watch (repeatable: the user's files,\n"
        "                                   the local mesh's Pod state folder)\n"
        "      --meshConfig FILE            MeshConfig YAML (watched; --config-dir only)\n"
        "      --kubeconfig FILE[:FILE...]  watch the Kubernetes API instead of directories:\n"
        "                                   Namespaces, Services, EndpointSlices, Pods,\n"
        "                                   Nodes, Secrets, the istio ConfigMap of\n"
        "                                   istio-system (MeshConfig) and the Istio kinds\n"
        "                                   (docs/kubernetes.md; state at /debug/kubez);\n"
        "                                   CSR and XDS_AUTH callers' service-account\n"
        "                                   tokens are checked with TokenReviews\n"
        "      --context NAME               kubeconfig context (default current-context)\n"
        "      --in-cluster-root DIR        where the service-account files are read in\n"
        "                                   cluster (default /; for tests)\n"
        "      --kube-sync-timeout-s N      wait at most N s for the first lists (default\n"
        "                                   30), then fail naming what did not list\n"
        "      --revision REV               istiod's revision (default: $REVISION, else\n"
        "                                   default): with the Kubernetes API, the webhook\n"
        "                                   configurations labelled istio.io/rev=REV get\n"
        "                                   the mesh root as caBundle; every discovered\n"
        "                                   namespace gets the istio-ca-root-cert ConfigMap\n"
        "                                   ($PILOT_CA_CERT_CONFIGMAP renames it)\n"
        "      --grpcAddr ADDR              xDS listen address ip:port (default "
        "127.0.0.1:15010;\n"
        "                                   port 0 picks one; unix:PATH: a Unix socket),\n"
        "                                   serving StreamAggregatedResources (SotW) and\n"
        "                                   DeltaAggregatedResources (delta), as istiod\n"
        "      --secureGRPCAddr ADDR        istiod's secure gRPC port over TLS, e.g.\n"
        "                                   127.0.0.1:15012: the xDS methods and the CA's\n"
        "                                   CreateCertificate, with a serving certificate\n"
        "                                   from the mesh CA (default: none)\n"
        "      --xds-auth BOOL              istiod's XDS_AUTH (the environment variable is\n"
        "                                   read too; the flag wins): true (default)\n"
        "                                   authenticates the xDS streams of the secure\n"
        "                                   port (a client certificate of the mesh CA, or\n"
        "                                   'authorization: Bearer <token>') and refuses a\n"
        "                                   proxy whose node names another namespace or\n"
        "                                   service account; false: no authentication. The\n"
        "                                   plaintext --grpcAddr is never authenticated\n"
        "      --monitoringAddr ADDR        debug/metrics address (default 127.0.0.1:15014)\n"
        "      --webhookAddr ADDR           istiod's admission webhook port (HTTPS with a\n"
        "                                   certificate from the mesh CA; default\n"
        "                                   127.0.0.1:15017, skipped with a warning when\n"
        "                                   that port is taken; off = none): POST /inject\n"
        "                                   (sidecar injection), /validate (Istio\n"
        "                                   resources refused as istiod's validating\n"
        "                                   webhook does), GET /httpsReady; counters\n"
        "                                   galley_validation_* and sidecar_injection_*\n"
        "                                   on /metrics (docs/pilot.md)\n"
        "      --injectConfigDir DIR        the injector's config (files config and values\n"
        "                                   of the istio-sidecar-injector ConfigMap; default\n"
        "                                   ./var/lib/istio/inject as istiod; absent: Istio's\n"
        "                                   defaults; a bad file is a start failure)\n"
        "      --uiDir DIR                  the web view's files, served on the monitoring\n"
        "                                   port under /ui/ (default: $WEFT_UI_DIR, else\n"
        "                                   <program dir>/../ui, else <program dir>/../share/\n"
        "                                   weft/ui; scripts/setup installs its libraries\n"
        "                                   into ui/node_modules); its JSON: /ui/api/graph,\n"
        "                                   /ui/api/scrape, /ui/api/failed,\n"
        "                                   /ui/api/validations, /ui/api/proxies\n"
        "      --ca-dir DIR                 the CA's directory: the self-signed root\n"
        "                                   (made once and kept: ca-cert.pem, ca-key.pem,\n"
        "                                   root-cert.pem, cert-chain.pem) and the CSR\n"
        "                                   token key (default $XDG_STATE_HOME/weft-pilot/\n"
        "                                   ca, else ~/.local/state/weft-pilot/ca); a\n"
        "                                   cacerts Secret in pilot's namespace\n"
        "                                   ($POD_NAMESPACE, default istio-system) is a\n"
        "                                   plug-in CA\n"
        "      --domain-suffix S            cluster DNS suffix (default cluster.local;\n"
        "                                   --domain is accepted too)\n"
        "      --default-namespace NS       namespace of resources that name none (default\n"
        "                                   default; as kubectl apply -n NS)\n"
        "      --debounce-after-ms N        quiet time before a push (default 100,\n"
        "                                   PILOT_DEBOUNCE_AFTER)\n"
        "      --debounce-max-ms N          longest delay of a push (default 10000,\n"
        "                                   PILOT_DEBOUNCE_MAX)\n"
        "      --keepaliveInterval D        HTTP/2 PING interval: 30s, 500ms, 5m, 1h, or seconds\n"
        "                                   (default 30s; 0 = off)\n"
        "      --keepaliveTimeout D         PING ACK timeout (default 10s)\n"
        "      --disconnected-retention-s N keep disconnected proxies listed (default 300)\n"
        "      --uiScrapeInterval D         how often the web view's scrape loop reads every\n"
        "                                   connected proxy's http://IP:15020/stats/prometheus\n"
        "                                   (default 15s, Istio's Prometheus interval; 0 = off;\n"
        "                                   else whole seconds, at least 1s: 15s, 2m, 1h)\n"
        "      --uiScrapeAddr IP:PORT       bench only: send every scrape there, the proxy's\n"
        "                                   IP:15020 as Host (weft-xds-load --serve-metrics)\n"
        "      --service-cluster-ip-range CIDR\n"
        "                                   give Services without a clusterIP one from\n"
        "                                   CIDR, as the API server's flag of that name\n"
        "                                   (stable per namespace/name; the local mesh\n"
        "                                   passes 10.96.0.0/12 with --pod-network netns).\n"
        "                                   Default: none, such Services have no address\n"
        "  -l, --log-level LEVEL            trace, debug, info, warning, error, critical, off\n"
        "  -h, --help                       show this help\n"
        "      --version                    print the version\n"
        "\n"
        "Environment (istiod's): REVISION (--revision), XDS_AUTH (--xds-auth),\n"
        "POD_NAMESPACE (istiod's namespace, default istio-system: the istio ConfigMap's\n"
        "namespace and, with the revision, the serving certificate's DNS names\n"
        "istiod[-REV].NS.svc, istiod-remote.NS.svc, istio-pilot.NS.svc), ISTIOD_CUSTOM_HOST\n"
        "(more DNS names, comma-separated), PILOT_CA_CERT_CONFIGMAP; weft's WEFT_UI_DIR "
        "(--uiDir).\n"
        "\n"
        "Exit codes: 0 clean shutdown (SIGTERM/SIGINT), 1 start failure, 2 bad command line.\n");
}

static int parse_uint(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v > 86400000ull) {
        fprintf(stderr, "weft-pilot: invalid value \"%s\" for %s: want an integer\n", s, flag);
        return -1;
    }
    *out = v;
    return 0;
}

/* An ip:port listen address (IPv6 as [ip]:port; unix:PATH when unix_ok): checked now, so a
 * bad one is a command-line error (exit 2), not a start failure. */
static int check_addr(const char *flag, const char *s, bool unix_ok)
{
    char ip[64];
    int port;
    unsigned char buf[sizeof(struct in6_addr)];
    if (unix_ok && strncmp(s, "unix:", 5) == 0 && s[5])
        return 0;
    if (wf_pilot_parse_addr(s, ip, sizeof ip, &port) == 0 &&
        (inet_pton(AF_INET, ip, buf) == 1 || inet_pton(AF_INET6, ip, buf) == 1))
        return 0;
    fprintf(stderr, "weft-pilot: invalid value \"%s\" for %s: want IP:PORT (port 0..65535)%s\n", s,
            flag, unix_ok ? " or unix:PATH" : "");
    return -1;
}

/* Values that are fine one by one but not together, or not names Kubernetes accepts. */
static int check_values(const wf_pilot_opts *o)
{
    if (o->default_ns && !wf_is_dns1123_label(o->default_ns)) {
        fprintf(stderr,
                "weft-pilot: invalid value \"%s\" for --default-namespace: want a namespace "
                "name (lower-case letters, digits, '-')\n",
                o->default_ns);
        return -1;
    }
    if (o->domain_suffix && !*o->domain_suffix) {
        fprintf(stderr, "weft-pilot: --domain-suffix must not be empty\n");
        return -1;
    }
    uint64_t after = o->debounce_after_ms ? o->debounce_after_ms : 100;
    if (o->debounce_max_ms && o->debounce_max_ms < after) {
        fprintf(stderr,
                "weft-pilot: --debounce-max-ms (%llu) is below --debounce-after-ms (%llu)\n",
                (unsigned long long)o->debounce_max_ms, (unsigned long long)after);
        return -1;
    }
    return 0;
}

/* "30s", "500ms", "1m", or plain seconds. */
/* A duration: N, Ns, Nms, Nm or Nh (N may have a fraction), at most 24 h. 0, or -1 (said). */
static int parse_duration_ms(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mul = !strcmp(end, "ms")             ? 1
                 : (!*end || !strcmp(end, "s")) ? 1000
                 : !strcmp(end, "m")            ? 60000
                 : !strcmp(end, "h")            ? 3600000
                                                : -1;
    if (end == s || mul < 0 || !(v >= 0) || v * mul > 86400000.0) {
        fprintf(stderr,
                "weft-pilot: invalid duration \"%s\" for %s: want e.g. 30s, 500ms, 5m or 1h "
                "(at most 24h)\n",
                s, flag);
        return -1;
    }
    *out = (uint64_t)llround(v * mul);
    return 0;
}

/* --uiScrapeInterval: 0 (off), or whole seconds, at least 1 s (a shorter interval would
 * scrape every proxy in a busy loop; the scrape status reports interval_s in seconds). */
static int parse_scrape_interval(const char *s, uint64_t *out)
{
    uint64_t ms;
    if (parse_duration_ms("--uiScrapeInterval", s, &ms) != 0)
        return -1;
    if (ms != 0 && (ms < 1000 || ms % 1000 != 0)) {
        fprintf(stderr,
                "weft-pilot: invalid --uiScrapeInterval \"%s\": 0 (off) or at least 1s, whole "
                "seconds, e.g. 15s\n",
                s);
        return -1;
    }
    *out = ms;
    return 0;
}

enum {
    OPT_DIR = 256,
    OPT_MESH,
    OPT_GRPC,
    OPT_MON,
    OPT_DOMAIN,
    OPT_DEFNS,
    OPT_DAFTER,
    OPT_DMAX,
    OPT_KA,
    OPT_KAT,
    OPT_RET,
    OPT_SVCIPS,
    OPT_VER,
    OPT_CADIR,
    OPT_SECURE,
    OPT_XDSAUTH,
    OPT_KUBECONFIG,
    OPT_CONTEXT,
    OPT_INCLUSTER_ROOT,
    OPT_KUBE_SYNC,
    OPT_WEBHOOK,
    OPT_INJECTDIR,
    OPT_UIDIR,
    OPT_REVISION,
    OPT_UI_SCRAPE,
    OPT_UI_SCRAPE_ADDR
};

/* Go's strconv.ParseBool, as istiod reads XDS_AUTH: 0 / 1 into *out, -1 when not a boolean. */
static int parse_go_bool(const char *s, bool *out)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (strcmp(s, t[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(s, f[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

static int set_xds_auth(cmdline *c, const char *what, const char *v)
{
    bool on;
    if (parse_go_bool(v, &on) != 0) {
        fprintf(stderr, "weft-pilot: invalid value \"%s\" for %s: want true or false\n", v, what);
        return -1;
    }
    c->o.no_xds_auth = !on;
    return 0;
}

static int parse_opt(cmdline *c, int opt, const char *arg)
{
    uint64_t v;
    switch (opt) {
    case OPT_DIR:
        if (c->o.n_dirs == MAX_DIRS) {
            fprintf(stderr, "weft-pilot: at most %d --config-dir\n", MAX_DIRS);
            return -1;
        }
        c->dirs[c->o.n_dirs++] = arg;
        return 0;
    case OPT_MESH:
        c->o.mesh_file = arg;
        return 0;
    case OPT_GRPC:
        c->o.grpc_addr = arg;
        return check_addr("--grpcAddr", arg, true);
    case OPT_SECURE:
        c->o.secure_grpc_addr = arg;
        return check_addr("--secureGRPCAddr", arg, false);
    case OPT_XDSAUTH:
        return set_xds_auth(c, "--xds-auth", arg);
    case OPT_MON:
        c->o.monitoring_addr = arg;
        return check_addr("--monitoringAddr", arg, false);
    case OPT_DOMAIN:
        c->o.domain_suffix = arg;
        return 0;
    case OPT_DEFNS:
        c->o.default_ns = arg;
        return 0;
    case OPT_CADIR:
        if (!*arg) {
            fprintf(stderr, "weft-pilot: --ca-dir must not be empty\n");
            return -1;
        }
        c->o.ca_dir = arg;
        return 0;
    case OPT_DAFTER:
        return parse_uint("--debounce-after-ms", arg, &c->o.debounce_after_ms);
    case OPT_DMAX:
        return parse_uint("--debounce-max-ms", arg, &c->o.debounce_max_ms);
    case OPT_KA:
        return parse_duration_ms("--keepaliveInterval", arg, &c->o.keepalive_interval_ms);
    case OPT_KAT:
        return parse_duration_ms("--keepaliveTimeout", arg, &c->o.keepalive_timeout_ms);
    case OPT_RET:
        if (parse_uint("--disconnected-retention-s", arg, &v)) {
            return -1;
        }
        c->o.retention_ms = v ? v * 1000 : 1;
        return 0;
    case OPT_SVCIPS: {
        const char *why;
        if (wf_ip_range_parse(arg, &c->o.service_ips, &why) != 0) {
            fprintf(stderr, "weft-pilot: invalid value \"%s\" for --service-cluster-ip-range: %s\n",
                    arg, why);
            return -1;
        }
        return 0;
    }
    case OPT_KUBECONFIG:
        c->o.kube = true;
        c->o.kubeconfig = arg;
        return 0;
    case OPT_CONTEXT:
        c->o.kube_context = arg;
        return 0;
    case OPT_INCLUSTER_ROOT:
        c->o.kube_incluster_root = arg;
        return 0;
    case OPT_WEBHOOK:
        c->o.webhook_addr = arg;
        c->o.webhook_addr_given = true;
        return strcmp(arg, "off") == 0 ? 0 : check_addr("--webhookAddr", arg, false);
    case OPT_INJECTDIR:
        if (!*arg) {
            fprintf(stderr, "weft-pilot: --injectConfigDir must not be empty\n");
            return -1;
        }
        c->o.inject_config_dir = arg;
        return 0;
    case OPT_UIDIR:
        if (!*arg) {
            fprintf(stderr, "weft-pilot: --uiDir must not be empty\n");
            return -1;
        }
        c->o.ui_dir = arg;
        return 0;
    case OPT_KUBE_SYNC:
        if (parse_uint("--kube-sync-timeout-s", arg, &v) || v == 0 || v > 86400) {
            if (v == 0 || v > 86400)
                fprintf(stderr, "weft-pilot: --kube-sync-timeout-s must be 1..86400\n");
            return -1;
        }
        c->o.kube_sync_timeout_ms = (int64_t)v * 1000;
        return 0;
    case OPT_UI_SCRAPE: /* the web view's scrape loop (scrape.h) */
        return parse_scrape_interval(arg, &c->o.ui_scrape.interval_ms);
    case OPT_UI_SCRAPE_ADDR:
        c->o.ui_scrape.override_addr = arg;
        return check_addr("--uiScrapeAddr", arg, false);
    case OPT_REVISION:
        if (!wf_is_dns1123_label(arg)) {
            fprintf(stderr,
                    "weft-pilot: invalid value \"%s\" for %s: want a label value "
                    "(lower-case letters, digits, '-')\n",
                    arg, c->from_env ? "REVISION (environment)" : "--revision");
            return -1;
        }
        c->o.revision = arg;
        return 0;
    case 'l':
        c->level = wf_log_level_from_name(arg, strlen(arg));
        if (c->level < 0) {
            fprintf(stderr, "weft-pilot: invalid log level \"%s\"\n", arg);
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

static int check_source(wf_pilot_opts *o);

/* 0 = run, 1 = printed help/version (exit 0), -1 = bad command line. */
static int parse(int argc, char **argv, cmdline *c)
{
    static const struct option longs[] = {
        {"config-dir", required_argument, 0, OPT_DIR},
        {"meshConfig", required_argument, 0, OPT_MESH},
        {"grpcAddr", required_argument, 0, OPT_GRPC},
        {"monitoringAddr", required_argument, 0, OPT_MON},
        {"secureGRPCAddr", required_argument, 0, OPT_SECURE},
        {"xds-auth", required_argument, 0, OPT_XDSAUTH},
        {"domain-suffix", required_argument, 0, OPT_DOMAIN},
        {"default-namespace", required_argument, 0, OPT_DEFNS},
        {"ca-dir", required_argument, 0, OPT_CADIR},
        {"domain", required_argument, 0, OPT_DOMAIN},
        {"debounce-after-ms", required_argument, 0, OPT_DAFTER},
        {"debounce-max-ms", required_argument, 0, OPT_DMAX},
        {"keepaliveInterval", required_argument, 0, OPT_KA},
        {"keepaliveTimeout", required_argument, 0, OPT_KAT},
        {"disconnected-retention-s", required_argument, 0, OPT_RET},
        {"service-cluster-ip-range", required_argument, 0, OPT_SVCIPS},
        {"kubeconfig", required_argument, 0, OPT_KUBECONFIG},
        {"context", required_argument, 0, OPT_CONTEXT},
        {"in-cluster-root", required_argument, 0, OPT_INCLUSTER_ROOT},
        {"kube-sync-timeout-s", required_argument, 0, OPT_KUBE_SYNC},
        {"webhookAddr", required_argument, 0, OPT_WEBHOOK},
        {"injectConfigDir", required_argument, 0, OPT_INJECTDIR},
        {"uiDir", required_argument, 0, OPT_UIDIR},
        {"revision", required_argument, 0, OPT_REVISION},
        {"uiScrapeInterval", required_argument, 0, OPT_UI_SCRAPE},
        {"uiScrapeAddr", required_argument, 0, OPT_UI_SCRAPE_ADDR},
        {"log-level", required_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, OPT_VER},
        {0, 0, 0, 0},
    };
    int opt;
    const char *env = getenv("XDS_AUTH");
    if (env && *env && set_xds_auth(c, "XDS_AUTH", env) != 0)
        return -1;
    env = getenv("REVISION"); /* istiod's deployment sets it; --revision wins */
    c->from_env = true;
    if (env && *env && parse_opt(c, OPT_REVISION, env) != 0)
        return -1;
    c->from_env = false;
    env = getenv("POD_NAMESPACE"); /* istiod's namespace */
    if (env && *env && !wf_is_dns1123_label(env)) {
        fprintf(stderr,
                "weft-pilot: invalid value \"%s\" for POD_NAMESPACE (environment): want a "
                "namespace name (lower-case letters, digits, '-')\n",
                env);
        return -1;
    }
    c->o.system_ns = env && *env ? env : NULL;
    env = getenv("ISTIOD_CUSTOM_HOST");
    c->o.custom_host = env && *env ? env : NULL;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":l:h", longs, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 1;
        }
        if (opt == OPT_VER) {
            printf("weft-pilot %s\n", WEFT_VERSION);
            return 1;
        }
        if (opt == '?' || opt == ':') {
            fprintf(stderr, "weft-pilot: %s: %s\n",
                    opt == ':' ? "missing value for" : "unknown flag", argv[optind - 1]);
            return -1;
        }
        if (parse_opt(c, opt, optarg)) {
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "weft-pilot: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    return check_source(&c->o) ? -1 : check_values(&c->o);
}

/* --config-dir, --kubeconfig, or in cluster (istiod's default: KUBERNETES_SERVICE_HOST set and
 * neither given); the two sources are not combined. */
static int check_source(wf_pilot_opts *o)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    if (o->n_dirs && o->kube) {
        fprintf(stderr, "weft-pilot: --config-dir and --kubeconfig cannot be combined\n");
        return -1;
    }
    if (!o->n_dirs && !o->kube && host && *host)
        o->kube = o->kube_in_cluster = true;
    if (!o->n_dirs && !o->kube) {
        fprintf(stderr, "weft-pilot: --config-dir or --kubeconfig is required (or run in a Pod: "
                        "KUBERNETES_SERVICE_HOST)\n");
        return -1;
    }
    if (o->kube && o->mesh_file) {
        fprintf(stderr, "weft-pilot: --meshConfig is for --config-dir: with the Kubernetes API "
                        "the MeshConfig is the istio ConfigMap's data.mesh in istio-system\n");
        return -1;
    }
    if (!o->kube && (o->kube_context || o->kube_incluster_root)) {
        fprintf(stderr,
                "weft-pilot: --%s needs the Kubernetes API (--kubeconfig, or in "
                "cluster)\n",
                o->kube_context ? "context" : "in-cluster-root");
        return -1;
    }
    return 0;
}

typedef struct run {
    uv_signal_t term, intr;
    wf_pilot *pilot;
    bool starting, stop_pending; /* a signal during wf_pilot_start: stop once it returns */
} run;

static void on_signal(uv_signal_t *s, int signum)
{
    run *r = s->data;
    WF_LOG(WF_LC_main, WF_LOG_INFO, "caught signal %d, shutting down", signum);
    if (r->starting) { /* something in the start ran the loop: stop when it returns */
        r->stop_pending = true;
        return;
    }
    wf_pilot_stop(r->pilot);
    r->pilot = NULL;
    if (!uv_is_closing((uv_handle_t *)&r->term)) {
        uv_close((uv_handle_t *)&r->term, NULL);
        uv_close((uv_handle_t *)&r->intr, NULL);
    }
}

int main(int argc, char **argv)
{
    cmdline c = {.level = WF_LOG_INFO,
                 .o = {.keepalive_interval_ms = 30000,
                       .keepalive_timeout_ms = 10000,
                       .ui_scrape = {.interval_ms = WF_SCRAPE_INTERVAL_MS}}};
    if (argc > 1 && strcmp(argv[1], "create-token") == 0)
        return wf_ca_token_cmd(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "authz-filters") == 0)
        return wf_authz_cmd(argc - 1, argv + 1);
    int rc = parse(argc, argv, &c);
    if (rc) {
        if (rc < 0) {
            fprintf(stderr, "Try 'weft-pilot --help'.\n");
        }
        return rc < 0 ? 2 : 0;
    }
    c.o.config_dirs = c.dirs;
    signal(SIGPIPE, SIG_IGN);
    /* xDS responses are large (MBs) and short-lived: a fixed mmap threshold gives them back to
     * the system when freed, instead of glibc raising the threshold and keeping them in the
     * heap (the pilot's RSS then stays at its peak). */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    wf_log_init(2, (wf_log_level)c.level, NULL);
    uv_loop_t loop;
    run r = {0};
    char err[512];
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "weft-pilot: cannot create the event loop\n");
        return 1;
    }
    /* Signals first: pilot announces its ports before its first snapshot (which may make the
     * CA's root, RSA key generation included), and a SIGTERM sent once the ports are known
     * must end it cleanly (exit 0), not kill it. libuv queues it until the loop runs. */
    uv_signal_init(&loop, &r.term);
    uv_signal_init(&loop, &r.intr);
    r.term.data = r.intr.data = &r;
    uv_signal_start(&r.term, on_signal, SIGTERM);
    uv_signal_start(&r.intr, on_signal, SIGINT);
    c.o.debug_route = wf_debug_route;
    r.starting = true;
    int started = wf_pilot_start(&loop, &c.o, &r.pilot, err, sizeof err);
    r.starting = false;
    if (started == 0 && r.stop_pending)
        on_signal(&r.term, SIGTERM);
    if (started != 0) {
        fprintf(stderr, "weft-pilot: %s\n", err);
        WF_LOG(WF_LC_main, WF_LOG_CRITICAL, "startup failed: %s", err);
        uv_close((uv_handle_t *)&r.term, NULL);
        uv_close((uv_handle_t *)&r.intr, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        return 1;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    WF_LOG(WF_LC_main, WF_LOG_INFO, "weft-pilot exited");
    return 0;
}
