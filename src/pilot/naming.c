/*
 * naming.c - build and parse Istio cluster names (see naming.h).
 */
#include "pilot/naming.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *wf_cluster_name(const char *direction, int32_t port, const char *subset, const char *host)
{
    if (!direction)
        return NULL;
    const char *sub = subset ? subset : "";
    const char *h = host ? host : "";
    int n = snprintf(NULL, 0, "%s|%d|%s|%s", direction, (int)port, sub, h);
    if (n < 0)
        return NULL;
    char *out = malloc((size_t)n + 1);
    if (!out)
        return NULL;
    snprintf(out, (size_t)n + 1, "%s|%d|%s|%s", direction, (int)port, sub, h);
    return out;
}

/* Go's strconv.Atoi restricted to a port; errors give 0 as ParseSubsetKey ignores them. */
static int32_t parse_port(const char *s, size_t len)
{
    if (len == 0 || len > 5)
        return 0;
    int32_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    return v <= 65535 ? v : 0;
}

bool wf_cluster_name_parse(const char *name, wf_cluster_key *out)
{
    if (!name || !out)
        return false;
    const char *part[4];
    size_t len[4];
    const char *p = name;
    for (int i = 0; i < 4; i++) {
        const char *bar = strchr(p, '|');
        part[i] = p;
        len[i] = bar ? (size_t)(bar - p) : strlen(p);
        if (!bar && i < 3)
            return false;
        p = bar ? bar + 1 : p + len[i];
    }
    *out = (wf_cluster_key){.direction = part[0],
                            .direction_len = len[0],
                            .port = parse_port(part[1], len[1]),
                            .subset = part[2],
                            .subset_len = len[2],
                            .host = part[3],
                            .host_len = len[3]};
    return true;
}
