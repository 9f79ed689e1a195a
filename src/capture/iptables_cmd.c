/*
 * iptables_cmd.c - `weft-proxy istio-iptables` / `istio-clean-iptables` (see iptables_cmd.h).
 */
#include "capture/iptables_cmd.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "capture/iptables.h"
#include "capture/iptables_apply.h"
#include "core/strbuf.h"

enum {
    F_ENVOY_PORT = 'p',
    F_CAPTURE_PORT = 'z',
    F_TUNNEL_PORT = 'e',
    F_UID = 'u',
    F_GID = 'g',
    F_MODE = 'm',
    F_IN_PORTS = 'b',
    F_IN_EXCLUDE = 'd',
    F_EXCLUDE_IF = 'c',
    F_CIDR = 'i',
    F_EXCLUDE_CIDR = 'x',
    F_OUT_PORTS = 'q',
    F_OUT_EXCLUDE = 'o',
    F_VIRT = 'k',
    F_MARK = 't',
    F_TABLE = 'r',
    F_DRY_RUN = 'n',
    F_HELP = 'h',
    F_REDIRECT_DNS = 256,
    F_CAPTURE_ALL_DNS,
    F_DUAL_STACK,
    F_DROP_INVALID,
    F_RECONCILE,
    F_CLEANUP_ONLY,
    F_PROBE_PORT,
    F_PROBE_TIMEOUT,
};

static const struct option LONGOPTS[] = {
    {"envoy-port", required_argument, NULL, F_ENVOY_PORT},
    {"inbound-capture-port", required_argument, NULL, F_CAPTURE_PORT},
    {"inbound-tunnel-port", required_argument, NULL, F_TUNNEL_PORT},
    {"proxy-uid", required_argument, NULL, F_UID},
    {"proxy-gid", required_argument, NULL, F_GID},
    {"istio-inbound-interception-mode", required_argument, NULL, F_MODE},
    {"istio-inbound-ports", required_argument, NULL, F_IN_PORTS},
    {"istio-local-exclude-ports", required_argument, NULL, F_IN_EXCLUDE},
    {"istio-exclude-interfaces", required_argument, NULL, F_EXCLUDE_IF},
    {"istio-service-cidr", required_argument, NULL, F_CIDR},
    {"istio-service-exclude-cidr", required_argument, NULL, F_EXCLUDE_CIDR},
    {"istio-outbound-ports", required_argument, NULL, F_OUT_PORTS},
    {"istio-local-outbound-ports-exclude", required_argument, NULL, F_OUT_EXCLUDE},
    {"kube-virt-interfaces", required_argument, NULL, F_VIRT},
    {"istio-inbound-tproxy-mark", required_argument, NULL, F_MARK},
    {"istio-inbound-tproxy-route-table", required_argument, NULL, F_TABLE},
    {"dry-run", optional_argument, NULL, F_DRY_RUN},
    {"redirect-dns", optional_argument, NULL, F_REDIRECT_DNS},
    {"capture-all-dns", optional_argument, NULL, F_CAPTURE_ALL_DNS},
    {"dual-stack", optional_argument, NULL, F_DUAL_STACK},
    {"drop-invalid", optional_argument, NULL, F_DROP_INVALID},
    {"reconcile", optional_argument, NULL, F_RECONCILE},
    {"cleanup-only", optional_argument, NULL, F_CLEANUP_ONLY},
    {"iptables-probe-port", required_argument, NULL, F_PROBE_PORT},
    {"probe-timeout", required_argument, NULL, F_PROBE_TIMEOUT},
    {"help", no_argument, NULL, F_HELP},
    {NULL, 0, NULL, 0},
};

/* Environment variables Istio binds (flag.BindEnv: the flag name upper-cased, '-' as '_';
 * flag.AdditionalEnv for the second names). envoy-port has none (flag.Bind). */
static const struct {
    const char *env;
    int id;
} ENVS[] = {
    {"INBOUND_CAPTURE_PORT", F_CAPTURE_PORT},
    {"INBOUND_TUNNEL_PORT", F_TUNNEL_PORT},
    {"PROXY_UID", F_UID},
    {"PROXY_GID", F_GID},
    {"ISTIO_INBOUND_INTERCEPTION_MODE", F_MODE},
    {"ISTIO_INBOUND_PORTS", F_IN_PORTS},
    {"ISTIO_LOCAL_EXCLUDE_PORTS", F_IN_EXCLUDE},
    {"ISTIO_EXCLUDE_INTERFACES", F_EXCLUDE_IF},
    {"ISTIO_SERVICE_CIDR", F_CIDR},
    {"ISTIO_SERVICE_EXCLUDE_CIDR", F_EXCLUDE_CIDR},
    {"ISTIO_OUTBOUND_PORTS", F_OUT_PORTS},
    {"ISTIO_LOCAL_OUTBOUND_PORTS_EXCLUDE", F_OUT_EXCLUDE},
    {"KUBE_VIRT_INTERFACES", F_VIRT},
    {"ISTIO_INBOUND_TPROXY_MARK", F_MARK},
    {"ISTIO_INBOUND_TPROXY_ROUTE_TABLE", F_TABLE},
    {"DRY_RUN", F_DRY_RUN},
    {"REDIRECT_DNS", F_REDIRECT_DNS},
    {"ISTIO_META_DNS_CAPTURE", F_REDIRECT_DNS},
    {"CAPTURE_ALL_DNS", F_CAPTURE_ALL_DNS},
    {"DUAL_STACK", F_DUAL_STACK},
    {"ISTIO_DUAL_STACK", F_DUAL_STACK},
    {"DROP_INVALID", F_DROP_INVALID},
    {"INVALID_DROP", F_DROP_INVALID},
    {"RECONCILE", F_RECONCILE},
    {"CLEANUP_ONLY", F_CLEANUP_ONLY},
};

typedef struct cfg {
    wf_ipt_opts o;
    bool dry_run, dual_stack, reconcile, cleanup_only;
    const char *prog;
    char uid_buf[32];
    wf_strbuf dns4, dns6;
} cfg;

static void usage(FILE *f, const char *prog, bool clean)
{
    fprintf(
        f,
        "Usage: weft-proxy %s [flags]\n"
        "\n"
        "%s\n"
        "\n"
        "Flags (Istio's names; each can also come from the environment variable in []):\n"
        "  -p, --envoy-port PORT                       outbound capture port (default 15001)\n"
        "  -z, --inbound-capture-port PORT             inbound capture port (default 15006)\n"
        "                                              [INBOUND_CAPTURE_PORT]\n"
        "  -e, --inbound-tunnel-port PORT              HBONE tunnel port, never captured\n"
        "                                              (default 15008) [INBOUND_TUNNEL_PORT]\n"
        "  -u, --proxy-uid LIST                        UIDs not captured (default: uid of\n"
        "                                              $ENVOY_USER (istio-proxy), else 1337)\n"
        "  -g, --proxy-gid LIST                        GIDs not captured (default: -u)\n"
        "  -m, --istio-inbound-interception-mode MODE  REDIRECT (default) or TPROXY\n"
        "  -b, --istio-inbound-ports LIST              inbound ports to capture, \"*\" for\n"
        "                                              all; empty: no inbound capture\n"
        "  -d, --istio-local-exclude-ports LIST        inbound ports not captured (with \"*\")\n"
        "  -i, --istio-service-cidr LIST               outbound CIDRs to capture, \"*\" for\n"
        "                                              all; empty: no outbound capture\n"
        "  -x, --istio-service-exclude-cidr LIST       outbound CIDRs not captured\n"
        "  -q, --istio-outbound-ports LIST             outbound ports always captured\n"
        "  -o, --istio-local-outbound-ports-exclude LIST  outbound ports not captured\n"
        "  -k, --kube-virt-interfaces LIST             interfaces whose inbound traffic is\n"
        "                                              treated as outbound\n"
        "  -c, --istio-exclude-interfaces LIST         interfaces never captured\n"
        "  -t, --istio-inbound-tproxy-mark MARK        TPROXY mark (default 1337)\n"
        "  -r, --istio-inbound-tproxy-route-table N    TPROXY route table (default 133)\n"
        "      --redirect-dns                          capture DNS to the agent on 15053\n"
        "                                              [REDIRECT_DNS, ISTIO_META_DNS_CAPTURE]\n"
        "      --capture-all-dns                       all port-53 traffic, not only to the\n"
        "                                              resolv.conf nameservers\n"
        "      --dual-stack                            IPv4 and IPv6 rules when the pod has\n"
        "                                              an IPv6 address [DUAL_STACK,\n"
        "                                              ISTIO_DUAL_STACK]\n"
        "      --drop-invalid                          drop conntrack-INVALID packets\n"
        "                                              [DROP_INVALID, INVALID_DROP]\n"
        "      --reconcile                             replace existing ISTIO_* rules\n"
        "      --cleanup-only                          only remove the rules\n"
        "  -n, --dry-run                               print the rules, change nothing\n"
        "  -h, --help                                  show this help\n"
        "\n"
        "Bool flags take --flag or --flag=true|false. Environment only:\n"
        "ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR (127.0.0.1/32), ISTIO_OUTBOUND_OWNER_GROUPS (*),\n"
        "ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE, ENVOY_USER, DRY_RUN_FILE_PATH (the dry run's\n"
        "commands, as Istio records them). Istio's injector runs: -p 15001 -z 15006 -u 1337\n"
        "-m REDIRECT -i '*' -x \"\" -b '*' -d 15090,15021,15020.\n"
        "\n"
        "Exit codes: 0 done, 1 failed to apply or clean (or ISTIO_* chains already there\n"
        "without --reconcile), 2 bad flags or environment.\n",
        prog,
        clean ? "Removes Istio's sidecar capture rules (istio-clean-iptables): the ISTIO_* "
                "chains and the\njumps to them, in iptables and ip6tables. Running it on "
                "a clean namespace is fine."
              : "Installs Istio's sidecar capture rules (istio-iptables / istio-init) in "
                "this network\nnamespace with iptables-restore --noflush.");
}

/* ---- value checks ---- */

static bool is_port(const char *s)
{
    if (!*s || strlen(s) > 5)
        return false;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    long v = strtol(s, NULL, 10);
    return v >= 1 && v <= 65535 && s[0] != '0';
}

static bool is_number(const char *s)
{
    if (!*s || strlen(s) > 10)
        return false;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

static bool is_name(const char *s, size_t max)
{
    if (!*s || strlen(s) > max)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.-:@+", *p))
            return false;
    return true;
}

/* Every comma item passes check (empty items are dropped, as Istio's config.Split does). */
static const char *bad_item(const char *list, bool (*check)(const char *))
{
    static char item[128];
    const char *s = list;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n) {
            snprintf(item, sizeof item, "%.*s", (int)n, s);
            if (n >= sizeof item || !check(item))
                return item;
        }
        s += n + (s[n] == ',');
    }
    return NULL;
}

static bool is_id(const char *s)
{
    return is_name(s, 32);
}

static bool is_ifname(const char *s)
{
    return is_name(s, IFNAMSIZ - 1);
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(v, t[i]) == 0)
            return *out = true, 0;
        if (strcmp(v, f[i]) == 0)
            return *out = false, 0;
    }
    return -1;
}

static const char *flag_name(int id)
{
    for (const struct option *o = LONGOPTS; o->name; o++)
        if (o->val == id)
            return o->name;
    return "?";
}

/* Sets one option from a flag or an environment variable (src names it for errors). */
static int set(cfg *c, int id, const char *v, const char *src)
{
    const char *bad = NULL;
    const char **str = NULL;
    bool (*check)(const char *) = NULL;
    bool *flag = NULL;
    wf_ipt_opts *o = &c->o;
    switch (id) {
    case F_ENVOY_PORT:
        str = &o->proxy_port, bad = is_port(v) ? NULL : v;
        break;
    case F_CAPTURE_PORT:
        str = &o->inbound_capture_port, bad = is_port(v) ? NULL : v;
        break;
    case F_TUNNEL_PORT:
        str = &o->inbound_tunnel_port, bad = is_port(v) ? NULL : v;
        break;
    case F_UID:
        str = &o->proxy_uid, check = is_id;
        break;
    case F_GID:
        str = &o->proxy_gid, check = is_id;
        break;
    case F_MODE:
        str = &o->interception_mode;
        bad = (!*v || !strcmp(v, "REDIRECT") || !strcmp(v, "TPROXY")) ? NULL : v;
        break;
    case F_IN_PORTS:
        str = &o->inbound_ports_include, check = strcmp(v, "*") ? is_port : NULL;
        break;
    case F_IN_EXCLUDE:
        str = &o->inbound_ports_exclude, check = is_port;
        break;
    case F_OUT_PORTS:
        str = &o->outbound_ports_include, check = is_port;
        break;
    case F_OUT_EXCLUDE:
        str = &o->outbound_ports_exclude, check = is_port;
        break;
    case F_EXCLUDE_IF:
        str = &o->exclude_interfaces, check = is_ifname;
        break;
    case F_VIRT:
        str = &o->kube_virt_interfaces, check = is_ifname;
        break;
    case F_CIDR:
        str = &o->outbound_ip_ranges_include;
        break; /* checked by the builder */
    case F_EXCLUDE_CIDR:
        str = &o->outbound_ip_ranges_exclude;
        break; /* likewise */
    case F_MARK:
        str = &o->tproxy_mark, bad = is_number(v) ? NULL : v;
        break;
    case F_TABLE:
        str = &o->tproxy_route_table, bad = is_number(v) ? NULL : v;
        break;
    case F_DRY_RUN:
        flag = &c->dry_run;
        break;
    case F_REDIRECT_DNS:
        flag = &o->redirect_dns;
        break;
    case F_CAPTURE_ALL_DNS:
        flag = &o->capture_all_dns;
        break;
    case F_DUAL_STACK:
        flag = &c->dual_stack;
        break;
    case F_DROP_INVALID:
        flag = &o->drop_invalid;
        break;
    case F_RECONCILE:
        flag = &c->reconcile;
        break;
    case F_CLEANUP_ONLY:
        flag = &c->cleanup_only;
        break;
    case F_PROBE_PORT:
        bad = is_port(v) ? NULL : v;
        break; /* accepted; no validation probe */
    case F_PROBE_TIMEOUT:
        break;
    default:
        return -1;
    }
    if (flag) {
        if (parse_bool(v, flag) != 0)
            bad = v;
    } else if (check) {
        bad = bad_item(v, check);
    }
    if (bad) {
        fprintf(stderr, "%s: invalid value \"%s\" for %s (%s)\n", c->prog, bad, src,
                flag                 ? "want true or false"
                : id == F_MODE       ? "want REDIRECT or TPROXY"
                : check == is_id     ? "want user or group ids"
                : check == is_ifname ? "want interface names"
                                     : "want a port 1-65535 or a number");
        return -1;
    }
    if (str)
        *str = v;
    return 0;
}

static int from_env(cfg *c)
{
    for (size_t i = 0; i < sizeof ENVS / sizeof *ENVS; i++) {
        const char *v = getenv(ENVS[i].env);
        bool is_bool = ENVS[i].id == F_DRY_RUN || ENVS[i].id >= F_REDIRECT_DNS;
        if (!v || (!*v && is_bool))
            continue;
        char src[96];
        snprintf(src, sizeof src, "environment variable %s", ENVS[i].env);
        if (set(c, ENVS[i].id, v, src) != 0)
            return -1;
    }
    const char *lo = getenv("ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR");
    if (lo && *lo)
        c->o.host_ipv4_loopback_cidr = lo;
    const char *gi = getenv("ISTIO_OUTBOUND_OWNER_GROUPS");
    if (gi && *gi)
        c->o.owner_groups_include = gi;
    const char *ge = getenv("ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE");
    if (ge)
        c->o.owner_groups_exclude = ge;
    return 0;
}

static int from_flags(cfg *c, int argc, char **argv)
{
    optind = 1;
    opterr = 0;
    int ch, idx = 0;
    while ((ch = getopt_long(argc, argv, ":p:z:e:u:g:m:b:d:c:i:x:q:o:k:t:r:nh", LONGOPTS, &idx)) !=
           -1) {
        if (ch == F_HELP)
            return 1;
        if (ch == '?' || ch == ':') {
            char what[64];
            if (optopt > 0 && optopt < 256)
                snprintf(what, sizeof what, "-%c", optopt);
            else
                snprintf(what, sizeof what, "%s", argv[optind - 1]);
            fprintf(stderr, "%s: %s flag %s (see --help)\n", c->prog,
                    ch == ':' ? "missing value for" : "unknown", what);
            return -1;
        }
        bool is_bool = ch == F_DRY_RUN || ch >= F_REDIRECT_DNS;
        const char *v = optarg ? optarg : (is_bool ? "true" : "");
        char src[96];
        snprintf(src, sizeof src, "flag --%s", flag_name(ch));
        if (set(c, ch, v, src) != 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument \"%s\" (see --help)\n", c->prog, argv[optind]);
        return -1;
    }
    return 0;
}

/* ---- config.FillConfigFromEnvironment ---- */

static void default_uid(cfg *c)
{
    if (c->o.proxy_uid && *c->o.proxy_uid)
        goto gid;
    const char *user = getenv("ENVOY_USER");
    struct passwd *pw = getpwnam(user && *user ? user : "istio-proxy");
    if (pw)
        snprintf(c->uid_buf, sizeof c->uid_buf, "%u", (unsigned)pw->pw_uid);
    else
        snprintf(c->uid_buf, sizeof c->uid_buf, "1337");
    c->o.proxy_uid = c->uid_buf;
gid:
    if (!c->o.proxy_gid || !*c->o.proxy_gid)
        c->o.proxy_gid = c->o.proxy_uid;
}

/* getLocalIP: IPv6 when the first usable address is IPv6 (dual stack: when any is). */
static int detect_ipv6(cfg *c, bool report)
{
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) != 0) {
        perror("getifaddrs");
        return -1;
    }
    bool any = false, v6 = false;
    for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
        if (!a->ifa_addr ||
            (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
            continue;
        bool is6 = a->ifa_addr->sa_family == AF_INET6;
        if (is6) {
            const struct in6_addr *x = &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
            if (IN6_IS_ADDR_LOOPBACK(x) || IN6_IS_ADDR_LINKLOCAL(x) || IN6_IS_ADDR_MC_LINKLOCAL(x))
                continue;
            if (IN6_IS_ADDR_V4MAPPED(x))
                is6 = false;
        } else {
            uint32_t x = ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr);
            if ((x >> 24) == 127 || (x >> 16) == 0xa9fe)
                continue;
        }
        if (!any || c->dual_stack)
            v6 = is6;
        any = true;
        if (!c->dual_stack || is6)
            break;
    }
    freeifaddrs(ifa);
    if (!any) {
        if (!report)
            return -1;
        fprintf(stderr,
                "%s: no valid local IP address found (Istio decides IPv6 from the pod's "
                "addresses)\n",
                c->prog);
        return -1;
    }
    c->o.enable_ipv6 = v6;
    return 0;
}

static int read_resolv(cfg *c)
{
    const char *path = "/etc/resolv.conf";
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: failed to load %s: ", c->prog, path);
        perror(NULL);
        return -1;
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char addr[256];
        unsigned char bin[16];
        if (sscanf(line, " nameserver %255s", addr) != 1)
            continue;
        wf_strbuf *b = inet_pton(AF_INET, addr, bin) == 1    ? &c->dns4
                       : inet_pton(AF_INET6, addr, bin) == 1 ? &c->dns6
                                                             : NULL;
        if (!b)
            continue;
        if (b->len)
            wf_strbuf_putc(b, ',');
        wf_strbuf_puts(b, addr);
    }
    fclose(f);
    c->o.dns_servers_v4 = wf_strbuf_cstr(&c->dns4);
    c->o.dns_servers_v6 = wf_strbuf_cstr(&c->dns6);
    return 0;
}

/* config.Validate: owner groups and the loopback CIDR. */
static int validate(cfg *c)
{
    const char *inc = c->o.owner_groups_include, *ex = c->o.owner_groups_exclude;
    if (strcmp(inc ? inc : "*", "*") != 0 && ex && *ex) {
        fprintf(stderr,
                "%s: ISTIO_OUTBOUND_OWNER_GROUPS=\"%s\" and ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE="
                "\"%s\": only one of them may be set\n",
                c->prog, inc, ex);
        return -1;
    }
    const char *lo = c->o.host_ipv4_loopback_cidr;
    char addr[32];
    unsigned char bin[4];
    int bits = -1;
    const char *slash = strchr(lo, '/');
    bool ok = slash && (size_t)(slash - lo) < sizeof addr;
    if (ok) {
        snprintf(addr, sizeof addr, "%.*s", (int)(slash - lo), lo);
        ok = inet_pton(AF_INET, addr, bin) == 1 && bin[0] == 127 && is_number(slash + 1) &&
             (bits = atoi(slash + 1)) >= 8 && bits <= 32;
    }
    if (!ok) {
        fprintf(stderr,
                "%s: invalid value \"%s\" for environment variable "
                "ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR (want an IPv4 CIDR within 127.0.0.0/8)\n",
                c->prog, lo);
        return -1;
    }
    return 0;
}

/* Parses everything; returns 0, 1 (--help shown), or an exit code (1 or 2). */
static int configure(cfg *c, int argc, char **argv, bool clean)
{
    memset(c, 0, sizeof *c);
    wf_ipt_opts_default(&c->o);
    c->prog = clean ? "istio-clean-iptables" : "istio-iptables";
    if (from_env(c) != 0)
        return 2;
    int rc = from_flags(c, argc, argv);
    if (rc == 1) {
        usage(stdout, c->prog, clean);
        return -1;
    }
    if (rc != 0)
        return 2;
    if (validate(c) != 0)
        return 2;
    default_uid(c);
    /* Bad flag values (CIDRs, port lists) are usage errors (2) whatever the pod's addresses:
     * a trial build with both families checks them before the addresses are looked at. */
    bool v6 = c->o.enable_ipv6;
    c->o.enable_ipv6 = true;
    wf_ipt_plan trial;
    char err[1024];
    int b = wf_ipt_build(&c->o, &trial, err, sizeof err);
    c->o.enable_ipv6 = v6;
    if (b == 0)
        wf_ipt_plan_free(&trial);
    else if (b == -1) {
        fprintf(stderr, "%s: %s\n", c->prog, err);
        return 2;
    }
    /* Cleaning needs no pod address: ip6tables is cleaned whenever it has ISTIO_ chains. */
    bool cleaning = clean || c->cleanup_only;
    if (detect_ipv6(c, !cleaning) != 0 && !cleaning)
        return 1;
    if (c->o.redirect_dns && !c->o.capture_all_dns && read_resolv(c) != 0)
        return 1;
    return 0;
}

static void write_dry_run_file(const char *text)
{
    const char *path = getenv("DRY_RUN_FILE_PATH");
    if (!path || !*path || !text)
        return;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "unable to open dry run output file %s\n", path);
        return;
    }
    fputs(text, f);
    fputc('\n', f);
    fclose(f);
}

static int dry_run(const cfg *c, const wf_ipt_plan *p)
{
    char *r4 = wf_ipt_restore_text(&p->v4), *r6 = wf_ipt_restore_text(&p->v6);
    char *g = wf_ipt_golden_text(p, c->o.enable_ipv6);
    int rc = 0;
    if (!r4 || !r6 || !g) {
        fprintf(stderr, "%s: out of memory\n", c->prog);
        rc = 1;
    } else {
        printf("# iptables-restore --noflush\n%s", r4);
        if (c->o.enable_ipv6)
            printf("# ip6tables-restore --noflush\n%s", r6);
        write_dry_run_file(g);
    }
    free(r4);
    free(r6);
    free(g);
    return rc;
}

static int print_cleanup(const cfg *c, const wf_ipt_plan *p)
{
    const wf_ipt_rules *fam[2] = {&p->v4, &p->v6};
    wf_strbuf all = WF_STRBUF_INIT;
    for (int i = 0; i < (c->o.enable_ipv6 ? 2 : 1); i++) {
        char *t = wf_ipt_cleanup_text(fam[i]);
        if (!t) {
            wf_strbuf_free(&all);
            return 1;
        }
        char *save = NULL;
        for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
            wf_strbuf_printf(&all, "%s %s\n", i ? "ip6tables" : "iptables", l);
        free(t);
    }
    fputs(wf_strbuf_cstr(&all), stdout);
    wf_strbuf_free(&all);
    return 0;
}

static int run(int argc, char **argv, bool clean)
{
    cfg c;
    int rc = configure(&c, argc, argv, clean);
    if (rc != 0) {
        wf_strbuf_free(&c.dns4);
        wf_strbuf_free(&c.dns6);
        return rc < 0 ? 0 : rc;
    }
    wf_ipt_plan plan;
    char err[1024];
    int b = wf_ipt_build(&c.o, &plan, err, sizeof err);
    if (b != 0) {
        fprintf(stderr, "%s: %s\n", c.prog, err);
        rc = b == -1 ? 2 : 1;
        goto out;
    }
    if (clean || c.cleanup_only) {
        if (c.dry_run)
            rc = print_cleanup(&c, &plan);
        else if (wf_ipt_clean(&plan, &c.o, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", c.prog, err);
            rc = 1;
        }
    } else if (c.dry_run) {
        rc = dry_run(&c, &plan);
    } else {
        for (int fam = 0; fam < (c.o.enable_ipv6 ? 2 : 1) && rc == 0; fam++) {
            int has = wf_ipt_has_istio_chains(fam == 1, err, sizeof err);
            if (has == 1 && c.reconcile && wf_ipt_clean(&plan, &c.o, err, sizeof err) == 0)
                has = 0;
            if (has != 0) {
                if (has == 1)
                    fprintf(stderr,
                            "%s: %s already has ISTIO_* chains (an earlier run); run "
                            "`weft-proxy istio-clean-iptables` first or pass --reconcile\n",
                            c.prog, fam ? "ip6tables" : "iptables");
                else
                    fprintf(stderr, "%s: %s\n", c.prog, err);
                rc = 1;
            }
        }
        if (rc == 0 && wf_ipt_apply(&plan, &c.o, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", c.prog, err);
            rc = 1;
        }
    }
    wf_ipt_plan_free(&plan);
out:
    wf_strbuf_free(&c.dns4);
    wf_strbuf_free(&c.dns6);
    return rc;
}

int wf_istio_iptables_main(int argc, char **argv)
{
    return run(argc, argv, false);
}

int wf_istio_clean_iptables_main(int argc, char **argv)
{
    return run(argc, argv, true);
}
