/*
 * iptables.h - Istio's sidecar capture rules (istio-iptables / istio-init) as a pure builder.
 *
 * Follows istio/istio tools/istio-iptables/pkg/capture/run.go (IptablesConfigurator.Run,
 * SetupDNSRedir, addDNSConntrackZones, appendMultiportRules), builder/iptables_builder_impl.go
 * (buildRestore, buildCleanupRules) and builder/helper.go (UndoRules), checked against the
 * golden files in tools/istio-iptables/pkg/capture/testdata/ goldens (inbound-ports-wildcard,
 * inbound-wildcard-exclude, kube-virt-interfaces, outbound-ports-exclude[-single], ...).
 * Facts summarised in ../shared/reference/protocols.md §5.1-5.2.
 *
 * Input: a wf_ipt_opts (Istio's config.Config fields, as strings the way Istio keeps them).
 * Output: a wf_ipt_plan: the ordered IPv4 and IPv6 rules, each with its table, chain and
 * iptables parameters ("-A CHAIN ..." / "-I CHAIN N ..."). IPv6 rules exist only when
 * enable_ipv6 (Istio's EnableIPv6 / ENABLE_INBOUND_IPV6) is set. No I/O; the caller owns the
 * plan and frees it with wf_ipt_plan_free(). Renderers return heap strings (free()).
 */
#ifndef WF_CAPTURE_IPTABLES_H
#define WF_CAPTURE_IPTABLES_H

#include <stdbool.h>
#include <stddef.h>

/* Istio's config.Config (tools/common/config/config.go). Lists are comma-separated like
 * Istio's flags; NULL means "" (empty). Ports and marks are decimal strings. */
typedef struct wf_ipt_opts {
    const char *proxy_port;                 /* -p / --envoy-port, default "15001" */
    const char *inbound_capture_port;       /* -z, default "15006" */
    const char *inbound_tunnel_port;        /* -e, default "15008" */
    const char *proxy_uid;                  /* -u, list; the command defaults it to 1337 */
    const char *proxy_gid;                  /* -g, list; the command defaults it to -u */
    const char *interception_mode;          /* -m, "REDIRECT" (or "") or "TPROXY" */
    const char *inbound_ports_include;      /* -b, "*", a list, or "" (no inbound capture) */
    const char *inbound_ports_exclude;      /* -d, list (applies to "*" only) */
    const char *outbound_ip_ranges_include; /* -i, "*", CIDR list, or "" (no outbound) */
    const char *outbound_ip_ranges_exclude; /* -x, CIDR list */
    const char *outbound_ports_include;     /* -q */
    const char *outbound_ports_exclude;     /* -o */
    const char *kube_virt_interfaces;       /* -k */
    const char *exclude_interfaces;         /* -c */
    const char *tproxy_mark;                /* -t, default "1337" */
    const char *tproxy_route_table;         /* -r, default "133" */
    const char *host_ipv4_loopback_cidr;    /* ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR "127.0.0.1/32" */
    const char *owner_groups_include;       /* ISTIO_OUTBOUND_OWNER_GROUPS, default "*" */
    const char *owner_groups_exclude;       /* ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE */
    const char *dns_servers_v4;             /* nameservers from resolv.conf, list */
    const char *dns_servers_v6;
    bool redirect_dns;    /* --redirect-dns */
    bool capture_all_dns; /* --capture-all-dns */
    bool drop_invalid;    /* --drop-invalid */
    bool enable_ipv6;     /* derived by the command from the pod's addresses (+ --dual-stack) */
} wf_ipt_opts;

/* Istio's config.DefaultConfig(): ports 15001/15006/15008, mark 1337, table 133, owner groups
 * "*", loopback CIDR 127.0.0.1/32; everything else empty. */
void wf_ipt_opts_default(wf_ipt_opts *o);

typedef struct wf_ipt_rule {
    char *table;  /* "nat", "mangle", "raw", "filter" */
    char *chain;  /* e.g. "ISTIO_OUTPUT", "PREROUTING" */
    char *params; /* "-A CHAIN ..." or "-I CHAIN N ..." (space-separated tokens) */
} wf_ipt_rule;

typedef struct wf_ipt_rules {
    wf_ipt_rule *v;
    size_t n, cap;
    bool failed; /* an allocation failed */
} wf_ipt_rules;

typedef struct wf_ipt_plan {
    wf_ipt_rules v4, v6;
} wf_ipt_plan;

/* Builds the rules in Istio's order. Returns 0, or -1 with err naming the field and value
 * (a CIDR that does not parse, "*" in the exclude list), or -2 when out of memory. On error
 * the plan is freed and empty. */
int wf_ipt_build(const wf_ipt_opts *o, wf_ipt_plan *plan, char *err, size_t errlen);
void wf_ipt_plan_free(wf_ipt_plan *plan);

/* iptables-restore input for one family (Istio's BuildV4Restore/BuildV6Restore): per table in
 * sorted order ("filter", "mangle", "nat", "raw") "* table", the "-N" lines for new chains,
 * the rules, "COMMIT". "" when there are no rules. NULL when out of memory. */
char *wf_ipt_restore_text(const wf_ipt_rules *r);

/* What Istio's DependenciesStub records for a run on a clean namespace (the golden files):
 * "iptables-save", "ip6tables-save", the v4 and v6 restore lines, "iptables-save" and, with
 * IPv6, "ip6tables-save"; lines joined by "\n" without a final newline. */
char *wf_ipt_golden_text(const wf_ipt_plan *p, bool enable_ipv6);

/* Istio's BuildCleanupV4/V6: the rules reversed and turned into "-D" (skipping non-jump rules
 * inside ISTIO_* chains, which are flushed), then "-F"/"-X" for every ISTIO chain the plan
 * made. One iptables argument line per entry, "-t TABLE ...", joined by "\n". */
char *wf_ipt_cleanup_text(const wf_ipt_rules *r);

/* The chains Istio creates, in any table (for cleaning up whatever flags were used). */
extern const char *const wf_ipt_istio_chains[];
extern const size_t wf_ipt_istio_chain_count;

#endif
