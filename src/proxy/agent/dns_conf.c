/*
 * dns_conf.c - the DNS proxy's configuration: resolv.conf (miekg's ClientConfigFromFile as
 * Istio reads it), the upstream test hook, and the proxy's namespace and domain from the
 * bootstrap node. See dns.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/agent/dns_internal.h"
#include "proxy/agent/status.h"

static int add_upstream(wp_dns *d, const char *ip, int port)
{
    if (d->nup >= WP_DNS_MAX_UPSTREAMS)
        return 0;
    struct sockaddr_storage *sa = &d->up[d->nup];
    if (uv_ip4_addr(ip, port, (struct sockaddr_in *)sa) == 0 ||
        uv_ip6_addr(ip, port, (struct sockaddr_in6 *)sa) == 0) {
        d->nup++;
        return 0;
    }
    return -1;
}

int dns_parse_upstreams(wp_dns *d, const char *list, wf_strbuf *err)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return -1;
    for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        struct sockaddr_storage sa;
        if (wp_status_parse_address(t, &sa, NULL) != 0) {
            wf_strbuf_printf(err, "WEFT_DNS_UPSTREAMS: \"%s\" is not IP:PORT", t);
            free(copy);
            return -1;
        }
        if (d->nup < WP_DNS_MAX_UPSTREAMS)
            d->up[d->nup++] = sa;
    }
    free(copy);
    return 0;
}

static void set_search(wp_dns *d, char *rest)
{
    for (size_t i = 0; i < d->nsearch; i++)
        free(d->search[i]);
    d->nsearch = 0;
    char *save = NULL;
    for (char *t = strtok_r(rest, " \t\r\n", &save); t && d->nsearch < MAX_SEARCH;
         t = strtok_r(NULL, " \t\r\n", &save))
        if ((d->search[d->nsearch] = strdup(t)))
            d->nsearch++;
}

/* dns.ClientConfigFromFile: nameserver (port 53), search / domain (the last line wins). */
int dns_read_resolv_conf(wp_dns *d, const char *path, bool servers, bool *v6, wf_strbuf *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        wf_strbuf_printf(err, "resolv.conf %s: cannot read it", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        char *p = line + strspn(line, " \t");
        size_t k = strcspn(p, " \t\r\n");
        char *rest = p + k + strspn(p + k, " \t");
        if (k == 10 && strncmp(p, "nameserver", 10) == 0 && servers) {
            char ip[64];
            snprintf(ip, sizeof ip, "%.*s", (int)strcspn(rest, " \t\r\n%"), rest);
            if (add_upstream(d, ip, 53) == 0 && strchr(ip, ':'))
                *v6 = true;
        } else if ((k == 6 && strncmp(p, "search", 6) == 0) ||
                   (k == 6 && strncmp(p, "domain", 6) == 0)) {
            set_search(d, rest);
        }
    }
    fclose(fp);
    return 0;
}

bool wp_dns_capture_enabled(const json_t *node)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "DNS_CAPTURE"));
    return v && strcasecmp(v, "true") == 0;
}

void wp_dns_scope_from_node(const json_t *node, char *ns, size_t ns_cap, char *domain,
                            size_t domain_cap)
{
    const char *id = json_string_value(json_object_get(node, "id"));
    const char *mns =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "NAMESPACE"));
    snprintf(ns, ns_cap, "%s", "");
    snprintf(domain, domain_cap, "%s", "");
    const char *t1 = id ? strchr(id, '~') : NULL;
    const char *t2 = t1 ? strchr(t1 + 1, '~') : NULL;
    const char *t3 = t2 ? strchr(t2 + 1, '~') : NULL;
    if (t3) { /* Istio's id: the pod part "pod.ns", the domain part */
        const char *dot = memchr(t2 + 1, '.', (size_t)(t3 - t2 - 1));
        if (dot)
            snprintf(ns, ns_cap, "%.*s", (int)(t3 - dot - 1), dot + 1);
        snprintf(domain, domain_cap, "%s", t3 + 1);
    } else if (id && strrchr(id, '.')) {
        snprintf(ns, ns_cap, "%s", strrchr(id, '.') + 1);
    }
    if (mns && *mns)
        snprintf(ns, ns_cap, "%s", mns);
    if (!*domain && *ns)
        snprintf(domain, domain_cap, "%s.svc.cluster.local", ns);
}
