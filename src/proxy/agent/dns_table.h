/*
 * dns_table.h - the agent's DNS proxy, pure part: the lookup table built from the NameTable
 * istiod pushes over NDS (pilot/nds.h), and the answer to one query in DNS wire format
 * (parsed and written with NLnet Labs' ldns). No I/O, no clocks, no global state; the server
 * (dns.h) sends the bytes.
 *
 * Follows Istio's pkg/dns/client/dns.go (LocalDNSServer.UpdateLookupTable,
 * BuildAlternateHosts, generateAltHosts, buildDNSAnswers, lookupHost, ServeDNS):
 *  - a "Kubernetes" entry HOST with shortname S and namespace N answers for "HOST.", and, when
 *    HOST ends with the proxy's domain (the node's domain without its namespace, e.g.
 *    "svc.cluster.local"), for "S.N.", "S.N.<first domain label>." ("S.N.svc.") and, when N is
 *    the proxy's namespace, "S."; plus every altHosts entry. Other entries answer for
 *    "HOST." only. Names are compared lower-cased.
 *  - each of those names + the first resolv.conf search domain ("catalog.ns.svc.cluster.local."
 *    + "ns.svc.cluster.local.") is answered with a CNAME to the name, followed by its records,
 *    unless that expanded name is itself one of the entry's names.
 *  - a wildcard entry "*.example.com" answers any name under example.com (records carry the
 *    queried name).
 *  - A and AAAA from the entry's IPv4 / IPv6 ips, TTL 30 s (defaultTTLInSeconds), in the
 *    answer section of an authoritative NOERROR reply (a known host without records of the
 *    asked type: NOERROR with no answers, never NXDOMAIN, Istio issue 31250). Other query
 *    types, and names not in the table, are forwarded upstream as they came.
 *  - before any NameTable arrived (table NULL): SERVFAIL (respondBeforeSync is false on 15053).
 *  - a query with no question: SERVFAIL. A message that does not parse (>= 12 bytes):
 *    FORMERR with its id; shorter, or a response (QR set): dropped. An opcode other than
 *    QUERY: NOTIMP.
 *  - the reply is truncated to the client's size (UDP: the EDNS buffer size, at least 512;
 *    TCP: 65535): the question only, with TC set (miekg's Msg.Truncate keeps what fits; weft
 *    keeps none, the client retries over TCP either way).
 *
 * Ownership: the table owns its JSON; wp_dns_table_name_table returns a borrowed reference.
 * Errors: NULL / -1 on out of memory.
 */
#ifndef WEFT_PROXY_DNS_TABLE_H
#define WEFT_PROXY_DNS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define WP_DNS_TTL     30    /* seconds: Istio's defaultTTLInSeconds */
#define WP_DNS_UDP_MIN 512   /* dns.MinMsgSize */
#define WP_DNS_TCP_MAX 65535 /* dns.MaxMsgSize */

typedef struct wp_dns_table wp_dns_table;

/* Who asks: the proxy's namespace, its domain ("svc.cluster.local"; a leading "<namespace>."
 * is removed as Istio does; NULL or "" = no alternate names) and the resolv.conf search
 * domains (only the first is used). Borrowed for the call. */
typedef struct wp_dns_scope {
    const char *ns;
    const char *domain;
    const char *const *search;
    size_t nsearch;
} wp_dns_scope;

/* Builds the lookup table of name_table (the NameTable JSON: {"table": {host: NameInfo}}, with
 * or without "@type"; the table keeps a reference). NULL on OOM or when name_table is not an
 * object. */
wp_dns_table *wp_dns_table_new(const json_t *name_table, const wp_dns_scope *scope);
void wp_dns_table_free(wp_dns_table *t);
/* The NameTable it was built from (borrowed). */
const json_t *wp_dns_table_name_table(const wp_dns_table *t);
/* Names it answers for (alternate and expanded names included). */
size_t wp_dns_table_size(const wp_dns_table *t);

enum {
    WP_DNS_ANSWER = 0,  /* *out holds the reply */
    WP_DNS_FORWARD = 1, /* not ours: forward the query bytes upstream as they are */
    WP_DNS_DROP = 2,    /* nothing to send */
    WP_DNS_NOMEM = -1,
};

/* Answers the query q (len bytes, a DNS message without the TCP length prefix) from t (NULL =
 * no NameTable yet), for a client over TCP (tcp) or UDP. Returns WP_DNS_ANSWER with *out
 * (malloc'd, *out_len bytes; the caller frees), WP_DNS_FORWARD, WP_DNS_DROP or WP_DNS_NOMEM.
 * qname (may be NULL) receives the lower-cased question name, for logs (at most cap bytes). */
int wp_dns_answer(const wp_dns_table *t, const uint8_t *q, size_t len, bool tcp, uint8_t **out,
                  size_t *out_len, char *qname, size_t cap);

/* A SERVFAIL reply to q (upstreams failed); WP_DNS_ANSWER, WP_DNS_DROP or WP_DNS_NOMEM as
 * above. */
int wp_dns_servfail(const uint8_t *q, size_t len, uint8_t **out, size_t *out_len);

/* The size a reply to q may have (UDP: EDNS size, min 512; TCP: 65535). */
size_t wp_dns_max_size(const uint8_t *q, size_t len, bool tcp);

/* Truncates the reply msg (*len bytes, malloc'd, may be replaced) to max bytes as above.
 * 0, or -1 on OOM / a reply that does not parse (then left as is). */
int wp_dns_truncate(uint8_t **msg, size_t *len, size_t max);

#endif
