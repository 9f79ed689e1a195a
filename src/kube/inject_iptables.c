/*
 * inject_iptables.c - istio-init's arguments (kube/inject_iptables.h).
 */
#include "kube/inject_iptables.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int wf_inject_iptables_argv(const wf_inject_capture *c, const char **argv, size_t cap)
{
    const char *v[] = {"istio-iptables",
                       "-p",
                       "15001",
                       "-z",
                       "15006",
                       "-u",
                       "1337",
                       "-m",
                       "REDIRECT",
                       "-i",
                       c->include_out_cidrs ? c->include_out_cidrs : "*",
                       "-x",
                       c->exclude_out_cidrs ? c->exclude_out_cidrs : "",
                       "-b",
                       c->include_in_ports ? c->include_in_ports : "*",
                       "-d",
                       c->exclude_in_ports ? c->exclude_in_ports : "15090,15021,15020",
                       c->include_out_ports && *c->include_out_ports ? "-q" : NULL,
                       c->include_out_ports,
                       c->exclude_out_ports && *c->exclude_out_ports ? "-o" : NULL,
                       c->exclude_out_ports,
                       c->reroute_ifaces ? "-k" : NULL,
                       c->reroute_ifaces,
                       c->exclude_ifaces ? "-c" : NULL,
                       c->exclude_ifaces};
    size_t n = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        if (i > 16 && (i % 2) == 1 && !v[i]) { /* a flag left out: and its value */
            i++;
            continue;
        }
        if (n + 1 >= cap)
            return -1;
        argv[n++] = v[i];
    }
    argv[n] = NULL;
    return (int)n;
}

void wf_inject_exclude_inbound(int status_port, const char *user, char *buf, size_t cap)
{
    char sp[16];
    snprintf(sp, sizeof sp, "%d", status_port);
    if (!user)
        user = "";
    bool listed = false;
    for (const char *p = user; *p;) {
        size_t n = strcspn(p, ",");
        if (n == strlen(sp) && strncmp(p, sp, n) == 0)
            listed = true;
        p += n + (p[n] == ',');
    }
    if (status_port == 0 || listed)
        snprintf(buf, cap, "15090,15021%s%s", *user ? "," : "", user);
    else
        snprintf(buf, cap, "15090,15021,%s%s%s", sp, *user ? "," : "", user);
}
