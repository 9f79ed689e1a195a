/*
 * test_capture_iptables.c - Istio's capture rules (src/capture/iptables.h) against the option
 * sets and golden files of istio/istio tools/istio-iptables/pkg/capture (run_test.go
 * TestIptables, constructTestConfig: uid/gid 1337, owner groups "*", loopback 127.0.0.1/32).
 *
 * The expected texts are Istio's goldens (what DependenciesStub records: iptables-save,
 * ip6tables-save, the restore input, the final saves). Verbatim from the newest goldens:
 * inbound-wildcard-exclude, outbound-ports-exclude, outbound-ports-exclude-single; verbatim
 * apart from the older harness's final newline: inbound-ports-wildcard, kube-virt-interfaces,
 * inbound-ports-wildcard-tproxy. Adapted to the newest run.go: ipv6-ipnets (nat OUTPUT jumps
 * for all protocols, "-A OUTPUT -j ISTIO_OUTPUT", not "-p tcp"); tproxy and dns-uid-gid (no
 * per-uid/gid "-p udp --dport 53 ... -j RETURN" rules in nat ISTIO_OUTPUT_DNS, and the IPv6
 * jump to ISTIO_OUTPUT_DNS only with IPv6 nameservers or --capture-all-dns, as SetupDNSRedir
 * now does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/iptables.h"

static const char INBOUND_PORTS_WILDCARD_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "iptables-save";

static const char INBOUND_WILDCARD_EXCLUDE_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp -m multiport --dports 22,80,443 -j RETURN\n"
    "-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "iptables-save";

static const char KUBE_VIRT_INTERFACES_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-I PREROUTING 1 -i eth1 -j RETURN\n"
    "-I PREROUTING 1 -i eth2 -j RETURN\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -j ISTIO_REDIRECT\n"
    "-I PREROUTING 1 -i eth1 -j ISTIO_REDIRECT\n"
    "-I PREROUTING 1 -i eth2 -j ISTIO_REDIRECT\n"
    "COMMIT\n"
    "iptables-save";

static const char OUTBOUND_PORTS_EXCLUDE_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -p tcp -m multiport --dports 22,80,443 -j RETURN\n"
    "-A ISTIO_OUTPUT -p udp -m multiport --dports 22,80,443 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "iptables-save";

static const char OUTBOUND_PORTS_EXCLUDE_SINGLE_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -p tcp --dport 22 -j RETURN\n"
    "-A ISTIO_OUTPUT -p udp --dport 22 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "iptables-save";

static const char INBOUND_PORTS_WILDCARD_TPROXY_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* mangle\n"
    "-N ISTIO_DIVERT\n"
    "-N ISTIO_TPROXY\n"
    "-N ISTIO_INBOUND\n"
    "-A ISTIO_DIVERT -j MARK --set-mark 1337\n"
    "-A ISTIO_DIVERT -j ACCEPT\n"
    "-A ISTIO_TPROXY ! -d 127.0.0.1/32 -p tcp -j TPROXY --tproxy-mark 1337/0xffffffff --on-port "
    "15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT\n"
    "-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY\n"
    "-A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark\n"
    "-A OUTPUT -p tcp -o lo -m mark --mark 1337 -j RETURN\n"
    "-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --uid-owner 1337 -j MARK --set-mark 1338\n"
    "-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --gid-owner 1337 -j MARK --set-mark 1338\n"
    "-A OUTPUT -p tcp -m connmark --mark 1337 -j CONNMARK --restore-mark\n"
    "-I ISTIO_INBOUND 1 -p tcp -m mark --mark 1337 -j RETURN\n"
    "-I ISTIO_INBOUND 2 -p tcp -s 127.0.0.6/32 -i lo -j RETURN\n"
    "-I ISTIO_INBOUND 3 -p tcp -i lo -m mark ! --mark 1338 -j RETURN\n"
    "COMMIT\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "iptables-save";

static const char IPV6_IPNETS_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-I PREROUTING 1 -i eth0 -j RETURN\n"
    "-I PREROUTING 1 -i eth1 -j RETURN\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp --dport 4000 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_INBOUND -p tcp --dport 5000 -j ISTIO_IN_REDIRECT\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-I PREROUTING 1 -i eth0 -j RETURN\n"
    "-I PREROUTING 1 -i eth1 -j RETURN\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp --dport 4000 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_INBOUND -p tcp --dport 5000 -j ISTIO_IN_REDIRECT\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s ::6/128 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --uid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d ::1/128 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 2001:db8::/32 -j RETURN\n"
    "-I PREROUTING 1 -i eth0 -d 2001:db8::/32 -j ISTIO_REDIRECT\n"
    "-I PREROUTING 1 -i eth1 -d 2001:db8::/32 -j ISTIO_REDIRECT\n"
    "-A ISTIO_OUTPUT -d 2001:db8::/32 -j ISTIO_REDIRECT\n"
    "COMMIT\n"
    "iptables-save\n"
    "ip6tables-save";

static const char TPROXY_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* mangle\n"
    "-N ISTIO_DIVERT\n"
    "-N ISTIO_TPROXY\n"
    "-N ISTIO_INBOUND\n"
    "-A PREROUTING -i not-istio-nic -j RETURN\n"
    "-A OUTPUT -o not-istio-nic -j RETURN\n"
    "-A ISTIO_DIVERT -j MARK --set-mark 1337\n"
    "-A ISTIO_DIVERT -j ACCEPT\n"
    "-A ISTIO_TPROXY ! -d 127.0.0.1/32 -p tcp -j TPROXY --tproxy-mark 1337/0xffffffff --on-port "
    "15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT\n"
    "-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY\n"
    "-A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark\n"
    "-A OUTPUT -p tcp -o lo -m mark --mark 1337 -j RETURN\n"
    "-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --uid-owner 1337 -j MARK --set-mark 1338\n"
    "-A OUTPUT ! -d 127.0.0.1/32 -p tcp -o lo -m owner --gid-owner 1337 -j MARK --set-mark 1338\n"
    "-A OUTPUT -p tcp -m connmark --mark 1337 -j CONNMARK --restore-mark\n"
    "-I ISTIO_INBOUND 1 -p tcp -m mark --mark 1337 -j RETURN\n"
    "-I ISTIO_INBOUND 2 -p tcp -s 127.0.0.6/32 -i lo -j RETURN\n"
    "-I ISTIO_INBOUND 3 -p tcp -i lo -m mark ! --mark 1338 -j RETURN\n"
    "COMMIT\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-A PREROUTING -i not-istio-nic -j RETURN\n"
    "-A OUTPUT -o not-istio-nic -j RETURN\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp -m multiport ! --dports 53,15008 -m owner "
    "--uid-owner 1337 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -d 127.0.0.53/32 -j REDIRECT --to-ports 15053\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 127.0.0.53/32 -j REDIRECT --to-port 15053\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 1.1.0.0/16 -j RETURN\n"
    "-A ISTIO_OUTPUT -d 9.9.0.0/16 -j ISTIO_REDIRECT\n"
    "COMMIT\n"
    "* raw\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-N ISTIO_INBOUND\n"
    "-A OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 1337 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 1337 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 1337 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 1337 -j CT --zone 2\n"
    "-A PREROUTING -j ISTIO_INBOUND\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 127.0.0.53/32 -j CT --zone 2\n"
    "-A ISTIO_INBOUND -p udp --sport 53 -s 127.0.0.53/32 -j CT --zone 1\n"
    "COMMIT\n"
    "* mangle\n"
    "-N ISTIO_DIVERT\n"
    "-N ISTIO_TPROXY\n"
    "-N ISTIO_INBOUND\n"
    "-A PREROUTING -i not-istio-nic -j RETURN\n"
    "-A OUTPUT -o not-istio-nic -j RETURN\n"
    "-A ISTIO_DIVERT -j MARK --set-mark 1337\n"
    "-A ISTIO_DIVERT -j ACCEPT\n"
    "-A ISTIO_TPROXY ! -d ::1/128 -p tcp -j TPROXY --tproxy-mark 1337/0xffffffff --on-port 15006\n"
    "-A PREROUTING -p tcp -j ISTIO_INBOUND\n"
    "-A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT\n"
    "-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY\n"
    "-A PREROUTING -p tcp -m mark --mark 1337 -j CONNMARK --save-mark\n"
    "-A OUTPUT -p tcp -o lo -m mark --mark 1337 -j RETURN\n"
    "-A OUTPUT ! -d ::1/128 -p tcp -o lo -m owner --uid-owner 1337 -j MARK --set-mark 1338\n"
    "-A OUTPUT ! -d ::1/128 -p tcp -o lo -m owner --gid-owner 1337 -j MARK --set-mark 1338\n"
    "-A OUTPUT -p tcp -m connmark --mark 1337 -j CONNMARK --restore-mark\n"
    "-I ISTIO_INBOUND 1 -p tcp -m mark --mark 1337 -j RETURN\n"
    "-I ISTIO_INBOUND 2 -p tcp -s ::6/128 -i lo -j RETURN\n"
    "-I ISTIO_INBOUND 3 -p tcp -i lo -m mark ! --mark 1338 -j RETURN\n"
    "COMMIT\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-A PREROUTING -i not-istio-nic -j RETURN\n"
    "-A OUTPUT -o not-istio-nic -j RETURN\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s ::6/128 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp -m multiport ! --dports 53,15008 -m owner "
    "--uid-owner 1337 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --gid-owner 1337 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1337 -j RETURN\n"
    "-A ISTIO_OUTPUT -d ::1/128 -j RETURN\n"
    "COMMIT\n"
    "* raw\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-A OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 1337 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 1337 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 1337 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 1337 -j CT --zone 2\n"
    "COMMIT\n"
    "iptables-save\n"
    "ip6tables-save";

static const char DNS_UID_GID_golden[] =
    "iptables-save\n"
    "ip6tables-save\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s 127.0.0.6/32 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp -m multiport ! --dports 53,15008 -m owner "
    "--uid-owner 3 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 3 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 3 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp -m multiport ! --dports 53,15008 -m owner "
    "--uid-owner 4 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 4 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 4 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 1 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 1 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 -m owner --gid-owner 2 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 2 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 2 -j RETURN\n"
    "-A ISTIO_OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -d 127.0.0.53/32 -j REDIRECT --to-ports 15053\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 127.0.0.53/32 -j REDIRECT --to-port 15053\n"
    "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n"
    "COMMIT\n"
    "* raw\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-N ISTIO_INBOUND\n"
    "-A OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 3 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 3 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 4 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 4 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 1 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 1 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 2 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 2 -j CT --zone 2\n"
    "-A PREROUTING -j ISTIO_INBOUND\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 127.0.0.53/32 -j CT --zone 2\n"
    "-A ISTIO_INBOUND -p udp --sport 53 -s 127.0.0.53/32 -j CT --zone 1\n"
    "COMMIT\n"
    "* nat\n"
    "-N ISTIO_INBOUND\n"
    "-N ISTIO_REDIRECT\n"
    "-N ISTIO_IN_REDIRECT\n"
    "-N ISTIO_OUTPUT\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_INBOUND -p tcp --dport 15008 -j RETURN\n"
    "-A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001\n"
    "-A ISTIO_IN_REDIRECT -p tcp -j REDIRECT --to-ports 15006\n"
    "-A OUTPUT -j ISTIO_OUTPUT\n"
    "-A ISTIO_OUTPUT -o lo -s ::6/128 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp -m multiport ! --dports 53,15008 -m owner "
    "--uid-owner 3 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 3 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 3 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp -m multiport ! --dports 53,15008 -m owner "
    "--uid-owner 4 -j ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner 4 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --uid-owner 4 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --gid-owner 1 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 1 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 1 -j RETURN\n"
    "-A ISTIO_OUTPUT -o lo ! -d ::1/128 -p tcp ! --dport 15008 -m owner --gid-owner 2 -j "
    "ISTIO_IN_REDIRECT\n"
    "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --gid-owner 2 -j RETURN\n"
    "-A ISTIO_OUTPUT -m owner --gid-owner 2 -j RETURN\n"
    "-A ISTIO_OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -d ::127.0.0.53/128 -j REDIRECT --to-ports 15053\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d ::127.0.0.53/128 -j REDIRECT --to-port 15053\n"
    "-A ISTIO_OUTPUT -d ::1/128 -j RETURN\n"
    "COMMIT\n"
    "* raw\n"
    "-N ISTIO_OUTPUT_DNS\n"
    "-N ISTIO_INBOUND\n"
    "-A OUTPUT -j ISTIO_OUTPUT_DNS\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 3 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 3 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --uid-owner 4 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --uid-owner 4 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 1 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 1 -j CT --zone 2\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -m owner --gid-owner 2 -j CT --zone 1\n"
    "-A ISTIO_OUTPUT_DNS -p udp --sport 15053 -m owner --gid-owner 2 -j CT --zone 2\n"
    "-A PREROUTING -j ISTIO_INBOUND\n"
    "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d ::127.0.0.53/128 -j CT --zone 2\n"
    "-A ISTIO_INBOUND -p udp --sport 53 -s ::127.0.0.53/128 -j CT --zone 1\n"
    "COMMIT\n"
    "iptables-save\n"
    "ip6tables-save";

/* constructTestConfig() */
static wf_ipt_opts test_config(void)
{
    wf_ipt_opts o;
    wf_ipt_opts_default(&o);
    o.proxy_uid = "1337";
    o.proxy_gid = "1337";
    return o;
}

static char *golden(const wf_ipt_opts *o)
{
    wf_ipt_plan p;
    char err[256];
    assert_int_equal(wf_ipt_build(o, &p, err, sizeof err), 0);
    char *g = wf_ipt_golden_text(&p, o->enable_ipv6);
    assert_non_null(g);
    wf_ipt_plan_free(&p);
    return g;
}

static void expect(const wf_ipt_opts *o, const char *want)
{
    char *g = golden(o);
    assert_string_equal(g, want);
    free(g);
}

static void test_inbound_ports_wildcard(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "*";
    expect(&o, INBOUND_PORTS_WILDCARD_golden);
}

static void test_inbound_wildcard_exclude(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "*";
    o.inbound_ports_exclude = "22,80,443";
    expect(&o, INBOUND_WILDCARD_EXCLUDE_golden);
}

static void test_kube_virt_interfaces(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.kube_virt_interfaces = "eth1,eth2";
    o.outbound_ip_ranges_include = "*";
    expect(&o, KUBE_VIRT_INTERFACES_golden);
}

static void test_outbound_ports_exclude(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.outbound_ports_exclude = "22,80,443";
    expect(&o, OUTBOUND_PORTS_EXCLUDE_golden);
    o.outbound_ports_exclude = "22";
    expect(&o, OUTBOUND_PORTS_EXCLUDE_SINGLE_golden);
}

static void test_inbound_ports_wildcard_tproxy(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "*";
    o.interception_mode = "TPROXY";
    expect(&o, INBOUND_PORTS_WILDCARD_TPROXY_golden);
}

/* ipv6-ipnets: dual stack; the trailing comma in -d is dropped (config.Split); the IPv6 CIDRs
 * only reach ip6tables. */
static void test_ipv6_ipnets(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "4000,5000";
    o.inbound_ports_exclude = "6000,7000,";
    o.kube_virt_interfaces = "eth0,eth1";
    o.outbound_ip_ranges_exclude = "2001:db8::/32";
    o.outbound_ip_ranges_include = "2001:db8::/32";
    o.enable_ipv6 = true;
    expect(&o, IPV6_IPNETS_golden);
}

static void test_tproxy_dns(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.interception_mode = "TPROXY";
    o.inbound_ports_include = "*";
    o.outbound_ip_ranges_exclude = "1.1.0.0/16";
    o.outbound_ip_ranges_include = "9.9.0.0/16";
    o.redirect_dns = true;
    o.dns_servers_v4 = "127.0.0.53";
    o.exclude_interfaces = "not-istio-nic";
    o.enable_ipv6 = true;
    expect(&o, TPROXY_golden);
}

static void test_dns_uid_gid(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.redirect_dns = true;
    o.dns_servers_v4 = "127.0.0.53";
    o.dns_servers_v6 = "::127.0.0.53";
    o.proxy_gid = "1,2";
    o.proxy_uid = "3,4";
    o.enable_ipv6 = true;
    expect(&o, DNS_UID_GID_golden);
}

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* --redirect-dns without nameservers and without --capture-all-dns: Istio disables DNS
 * capture; --capture-all-dns redirects every port-53 packet and zones all of them. */
static void test_dns_capture_all(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.redirect_dns = true;
    char *g = golden(&o);
    assert_null(strstr(g, "ISTIO_OUTPUT_DNS"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT -o lo -m owner ! --uid-owner 1337 -j RETURN"));
    free(g);
    o.capture_all_dns = true;
    g = golden(&o);
    assert_true(has_line(g, "-A ISTIO_OUTPUT -j ISTIO_OUTPUT_DNS"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -j REDIRECT --to-ports 15053"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -j REDIRECT --to-port 15053"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT_DNS -p udp --dport 53 -j CT --zone 2"));
    assert_true(has_line(g, "-A ISTIO_INBOUND -p udp --sport 53 -j CT --zone 1"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT -o lo -p tcp ! --dport 53 -m owner ! --uid-owner "
                            "1337 -j RETURN"));
    /* nat before raw (sorted table names) */
    assert_true(strstr(g, "* nat\n") < strstr(g, "* raw\n"));
    free(g);
}

/* The include lists: explicit inbound ports and outbound ports (inbound-ports-include,
 * outbound-ports-include). */
static void test_ports_include(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "32000,31000";
    o.outbound_ports_include = "32000,31000";
    char *g = golden(&o);
    const char *in1 = strstr(g, "-A ISTIO_INBOUND -p tcp --dport 32000 -j ISTIO_IN_REDIRECT\n");
    const char *in2 = strstr(g, "-A ISTIO_INBOUND -p tcp --dport 31000 -j ISTIO_IN_REDIRECT\n");
    const char *o1 = strstr(g, "-A ISTIO_OUTPUT -p tcp --dport 32000 -j ISTIO_REDIRECT\n");
    const char *o2 = strstr(g, "-A ISTIO_OUTPUT -p tcp --dport 31000 -j ISTIO_REDIRECT\n");
    const char *lo = strstr(g, "-A ISTIO_OUTPUT -d 127.0.0.1/32 -j RETURN\n");
    assert_true(in1 && in2 && o1 && o2 && lo);
    assert_true(in1 < in2 && lo < o1 && o1 < o2);
    assert_null(strstr(g, "-A ISTIO_OUTPUT -j ISTIO_REDIRECT")); /* no -i: no catch-all */
    free(g);
}

/* More than 15 ports: multiport takes 15 per rule; a lone remainder is a plain --dport. */
static void test_multiport_chunks(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "*";
    o.inbound_ports_exclude = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16";
    char *g = golden(&o);
    assert_true(has_line(g, "-A ISTIO_INBOUND -p tcp -m multiport --dports "
                            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 -j RETURN"));
    assert_true(has_line(g, "-A ISTIO_INBOUND -p tcp --dport 16 -j RETURN"));
    free(g);
}

/* An included loopback range keeps loopback traffic captured (loopback-outbound-iprange). */
static void test_loopback_include(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.outbound_ip_ranges_include = "127.1.2.3/32";
    char *g = golden(&o);
    assert_null(strstr(g, "-o lo -m owner ! --uid-owner"));
    assert_null(strstr(g, "-o lo -m owner ! --gid-owner"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT -d 127.1.2.3/32 -j ISTIO_REDIRECT"));
    free(g);
}

/* ISTIO_OUTBOUND_OWNER_GROUPS / _EXCLUDE (handleCaptureByOwnerGroup). */
static void test_owner_groups(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.owner_groups_include = "java,202";
    char *g = golden(&o);
    assert_true(has_line(g, "-A ISTIO_OUTPUT -m owner ! --gid-owner java -m owner ! --gid-owner "
                            "202 -j RETURN"));
    free(g);
    o.owner_groups_include = "*";
    o.owner_groups_exclude = "888,ftp";
    g = golden(&o);
    assert_true(has_line(g, "-A ISTIO_OUTPUT -m owner --gid-owner 888 -j RETURN"));
    assert_true(has_line(g, "-A ISTIO_OUTPUT -m owner --gid-owner ftp -j RETURN"));
    free(g);
}

static void test_drop_invalid(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.drop_invalid = true;
    char *g = golden(&o);
    assert_true(strstr(g, "* mangle\n-N ISTIO_DROP\n-A PREROUTING -m conntrack --ctstate "
                          "INVALID -j ISTIO_DROP\n-A ISTIO_DROP -j DROP\nCOMMIT\n* nat\n") != NULL);
    free(g);
}

/* istio-clean-iptables (BuildCleanupV4): reversed, -A/-I as -D without the position, rules
 * inside ISTIO_ chains dropped unless they jump to one, then -F/-X per chain. */
static void test_cleanup_text(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    o.inbound_ports_include = "*";
    o.outbound_ip_ranges_include = "*";
    o.kube_virt_interfaces = "eth1";
    wf_ipt_plan p;
    char err[128];
    assert_int_equal(wf_ipt_build(&o, &p, err, sizeof err), 0);
    char *c = wf_ipt_cleanup_text(&p.v4);
    assert_non_null(c);
    assert_string_equal(c, "-t nat -D PREROUTING -i eth1 -j ISTIO_REDIRECT\n"
                           "-t nat -D ISTIO_OUTPUT -j ISTIO_REDIRECT\n"
                           "-t nat -D ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 "
                           "-m owner --gid-owner 1337 -j ISTIO_IN_REDIRECT\n"
                           "-t nat -D ISTIO_OUTPUT -o lo ! -d 127.0.0.1/32 -p tcp ! --dport 15008 "
                           "-m owner --uid-owner 1337 -j ISTIO_IN_REDIRECT\n"
                           "-t nat -D OUTPUT -j ISTIO_OUTPUT\n"
                           "-t nat -D ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT\n"
                           "-t nat -D PREROUTING -p tcp -j ISTIO_INBOUND\n"
                           "-t nat -D PREROUTING -i eth1 -j RETURN\n"
                           "-t nat -F ISTIO_OUTPUT\n-t nat -X ISTIO_OUTPUT\n"
                           "-t nat -F ISTIO_INBOUND\n-t nat -X ISTIO_INBOUND\n"
                           "-t nat -F ISTIO_IN_REDIRECT\n-t nat -X ISTIO_IN_REDIRECT\n"
                           "-t nat -F ISTIO_REDIRECT\n-t nat -X ISTIO_REDIRECT");
    free(c);
    assert_int_equal(p.v6.n, 0); /* IPv6 off: no ip6tables rules */
    wf_ipt_plan_free(&p);
}

/* Restore text: nothing at all for an empty rule list (the sorted table order is in the
 * goldens above: mangle, nat, raw). */
static void test_restore_text(void **state)
{
    (void)state;
    wf_ipt_rules none = {0};
    char *t = wf_ipt_restore_text(&none);
    assert_string_equal(t, "");
    free(t);
}

static void test_bad_options(void **state)
{
    (void)state;
    wf_ipt_opts o = test_config();
    wf_ipt_plan p;
    char err[256];
    o.outbound_ip_ranges_include = "10.0.0/8";
    assert_int_equal(wf_ipt_build(&o, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "istio-service-cidr (-i)"));
    assert_non_null(strstr(err, "\"10.0.0/8\""));
    assert_int_equal(p.v4.n, 0);
    o.outbound_ip_ranges_include = "10.0.0.0/33";
    assert_int_equal(wf_ipt_build(&o, &p, err, sizeof err), -1);
    o.outbound_ip_ranges_include = "*";
    o.outbound_ip_ranges_exclude = "*";
    assert_int_equal(wf_ipt_build(&o, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "istio-service-exclude-cidr (-x)"));
    o.outbound_ip_ranges_exclude = "1.1.1.1/32,zz::/8";
    assert_int_equal(wf_ipt_build(&o, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"zz::/8\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inbound_ports_wildcard),
        cmocka_unit_test(test_inbound_wildcard_exclude),
        cmocka_unit_test(test_kube_virt_interfaces),
        cmocka_unit_test(test_outbound_ports_exclude),
        cmocka_unit_test(test_inbound_ports_wildcard_tproxy),
        cmocka_unit_test(test_ipv6_ipnets),
        cmocka_unit_test(test_tproxy_dns),
        cmocka_unit_test(test_dns_uid_gid),
        cmocka_unit_test(test_dns_capture_all),
        cmocka_unit_test(test_ports_include),
        cmocka_unit_test(test_multiport_chunks),
        cmocka_unit_test(test_loopback_include),
        cmocka_unit_test(test_owner_groups),
        cmocka_unit_test(test_drop_invalid),
        cmocka_unit_test(test_cleanup_text),
        cmocka_unit_test(test_restore_text),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
